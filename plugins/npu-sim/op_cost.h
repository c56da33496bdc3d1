// An op as the timing model sees it: qmatmul, qconv2d, matmul, conv2d and
// conv_transpose2d lowered to a GEMM at their MAC rate (8x8 at the int8 rate, 16x8 at the
// int16 rate, f16 at the f16 rate), attention to its two products and a softmax, every
// other op as a stream through the vector unit.
#pragma once

#include <phynexus/plugin.h>

#include <optional>

#include "config.h"
#include "timing_model.h"

namespace phx::npu_sim {

Machine machine_of(const DeviceFigures& figures);

// The GEMM of a MAC-array op; nullopt for the other ops.
//   qmatmul, matmul: M, N, K of one product; batch = the product of the output's batch dims.
//   qconv2d, conv2d: M = N * H_out * W_out, K = C_in / groups * KH * KW, N = C_out / groups;
//            batch = groups.
//   conv_transpose2d: the conv2d over its input with stride - 1 zeros inserted between
//            the pixels on chip (docs/npu-sim.md), the zeros' MACs counted:
//            M = N * H_out * W_out, K = C_in / groups * KH * KW, N = C_out / groups;
//            batch = groups; the activation bytes are x's as stored.
std::optional<GemmWork> gemm_work(const phx_plugin_op& op);

// The products and softmax of attention: q [B, H, Sq, D], k [B, Hkv, Skv, D],
// v [B, Hkv, Skv, Dv]; every query head reads its key/value head, so B * H products each.
AttentionWork attention_work(const phx_plugin_op& op);

// The vector-unit work of any other op: per element of its largest tensor; per output for
// the pools (their window, +1 for avg_pool's mean) and resize (its taps); gather and
// slice read only the elements they pick.
StreamWork stream_work(const phx_plugin_op& op);

// The rate at which op's MACs run (for the ops gemm_work lowers).
MacRate mac_rate(const phx_plugin_op& op);

Estimate estimate_op(const phx_plugin_op& op, const Machine& machine);

}  // namespace phx::npu_sim
