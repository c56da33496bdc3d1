// matmul and conv2d as a TPU computes them: with bf16 precision the inputs are rounded
// to bf16 (to nearest, ties to even), the products summed in f32 as the MXU sums them
// (mxu_gemm.h), then the bias added and the activation applied in f32, and the result
// rounded once to the output's dtype. With highest precision the f32 inputs are kept.
// With flush_subnormals (the hardware's behaviour) subnormal inputs are flushed to zero
// before the rounding, and so are the subnormal f32 sums the MXU returns and the final
// results; the products and partial sums inside one output's accumulation are not.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>

#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"

namespace phx::tpu_sim {

struct MxuNumerics {
  bool round_to_bf16 = true;     // the bf16 precision rule
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

}  // namespace phx::tpu_sim
