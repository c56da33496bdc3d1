// matmul, conv2d and conv_transpose2d as a TPU computes them (docs/tpu-sim.md,
// "Numerics"). The inputs
// enter the MXU as the precision says: default, f32 inputs rounded to bf16; high, split
// into bf16 hi and lo parts for three passes (hi.lo + lo.hi + hi.hi); highest, f32 kept.
// bf16 inputs are kept whatever the precision; f16 inputs are widened to f32 exactly
// first, as XLA does. Each pass's products are summed in f32 as the MXU sums them
// (mxu_gemm.h), the passes added in f32, then the bias added and the activation applied
// in f32, and the result rounded once to the output's dtype. With flush_subnormals (the
// hardware's behaviour) subnormal inputs are flushed to zero before the rounding, and so
// are the subnormal f32 sums the MXU returns and the final results; the products and
// partial sums inside one output's accumulation are not.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>

#include "config.h"
#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"

namespace phx::tpu_sim {

struct MxuNumerics {
  Precision precision = Precision::kDefault;
  bool flush_subnormals = true;  // inputs and results: subnormals become zeros of their sign
  int64_t pass_depth = 128;      // the MXU's rows: K values per pass
};

// The operands follow docs/ops.md (the host checked them). Returns OK, or
// OUT_OF_MEMORY when host scratch memory runs out.
phx_status mxu_matmul(const phx_matmul_params& params, const kernels::HostTensor& a,
                      const kernels::HostTensor& b, const kernels::HostTensor& bias,
                      const kernels::HostTensor& out, const MxuNumerics& numerics,
                      kernels::ThreadPool& pool);

phx_status mxu_conv2d(const phx_conv2d_params& params, const kernels::HostTensor& x,
                      const kernels::HostTensor& weight, const kernels::HostTensor& bias,
                      const kernels::HostTensor& out, const MxuNumerics& numerics,
                      kernels::ThreadPool& pool);

// As XLA lowers it to the MXU: the conv2d of stride 1 over x with stride - 1 zeros
// inserted between its pixels, padded by dilation (K - 1) - padding before each spatial
// dimension (cropped where negative), with the weight flipped in both spatial dimensions
// and its two channel dimensions swapped per group; so the same numerics as conv2d.
phx_status mxu_conv_transpose2d(const phx_conv_transpose2d_params& params,
                                const kernels::HostTensor& x, const kernels::HostTensor& weight,
                                const kernels::HostTensor& bias, const kernels::HostTensor& out,
                                const MxuNumerics& numerics, kernels::ThreadPool& pool);

}  // namespace phx::tpu_sim
