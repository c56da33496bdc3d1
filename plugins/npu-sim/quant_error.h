// How far a quantized op's result is from f32 on the same inputs (docs/npu-sim.md,
// "Quantization error"): the relative Frobenius error
//   quant_error_rel = ||dequant(out) - ref||_F / ||ref||_F
// qmatmul, qconv2d: ref = matmul or conv2d in f32 of the dequantized a (x) and b
//                   (weight), plus the bias dequantized at a_scale * b_scale, with the
//                   op's activation; out dequantized with y_scale and y_zero_point (i8,
//                   u8, i16 out), at a_scale * b_scale (i32 out), or as it is (f32 out).
// quantize, dynamic_quantize: ref = x; out = dequantize(y) with the op's scale and zero
//                   point: the rounding and clipping error of the quantization itself.
// Computed with the host kernels on host copies; the simulated device is not charged.
#pragma once

#include <optional>

#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"

namespace phx::npu_sim {

// The error of op, which has run: inputs and outputs hold its operands and results
// (absent optional inputs have data null). nullopt for another op, when ||ref||_F is 0,
// or when a reference kernel fails (out of host memory).
std::optional<double> quant_error_rel(phx_op_id op, const void* params,
                                      const kernels::HostTensor* inputs, size_t input_count,
                                      const kernels::HostTensor* outputs, size_t output_count,
                                      kernels::ThreadPool& pool);

}  // namespace phx::npu_sim
