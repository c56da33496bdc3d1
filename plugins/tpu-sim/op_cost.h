// What an op costs on the simulated chip: MXU cycles for matmul, conv2d, conv_transpose2d
// and attention's two products (lowered to GEMMs, mxu_model.h; each GEMM run once per
// bf16 pass the precision takes), vector-unit cycles for attention's softmax and for every other
// op, the HBM bytes it moves, and the estimated time: max(compute time, HBM time) + the launch
// overhead, compute time = (MXU + vector cycles) / clock.
#pragma once

#include <phynexus/plugin.h>

#include <cstdint>
#include <optional>

#include "config.h"
#include "mxu_model.h"

namespace phx::tpu_sim {

struct OpCost {
  bool uses_mxu = false;
  uint32_t mxu_passes = 0;     // bf16 passes per product (mxu_passes()); zero unless uses_mxu
  MxuEstimate mxu;             // over every pass; zero unless uses_mxu
  uint64_t vector_cycles = 0;  // MXU ops but attention: zero (the epilogue is fused)
  uint64_t hbm_bytes = 0;      // every input read once (gather and slice: what they pick),
                               // every output written once
  double compute_time_ns = 0;  // cycles / clock
  double hbm_time_ns = 0;      // bytes / bandwidth
  double estimated_time_ns = 0;
  bool memory_bound = false;  // HBM time > compute time
};

// The GEMM an MXU op lowers to; nullopt for other ops.
//   matmul: M, N, K of one product; batch = the product of the output's batch dims.
//   conv2d: M = N * H_out * W_out, K = C_in / groups * KH * KW, N = C_out / groups;
//           batch = groups.
//   conv_transpose2d: the conv2d it is lowered to (mxu_ops.h), zeros of the spread input
//           included: M = N * H_out * W_out, K = C_in / groups * KH * KW,
//           N = C_out / groups; batch = groups.
std::optional<GemmShape> lowered_gemm(const phx_plugin_op& op);

// attention's two GEMMs per (batch, head), over every key whatever the mask:
//   scores = q k^T: M = Sq, K = D, N = Skv;  out = p v: M = Sq, K = Skv, N = Dv;
//   batch = B * H for both.
struct AttentionGemms {
  GemmShape scores, values;
};
AttentionGemms attention_gemms(const phx_plugin_op& op);

// Vector-unit work of a non-MXU op: elements touched times elementary vector operations
// per element (docs/tpu-sim.md), over 8 x 128 lanes per TensorCore per cycle; a pool's
// outputs times its window (plus a multiply for the mean), a resize's outputs times its
// taps.
uint64_t vector_cycles(const phx_plugin_op& op, uint32_t tensor_cores);

OpCost cost_op(const phx_plugin_op& op, const SimConfig& config);

}  // namespace phx::tpu_sim
