// The host implementation of every op (docs/ops.md) on dense row-major tensors in host
// memory: what the CPU plugin runs, and what the simulators compute with. The GEMM
// itself is gemm.h; matmul and conv2d here arrange their operands and call it.
#pragma once

#include <phynexus/phynexus.h>

#include <cstddef>
#include <cstdint>

#include "phx/kernels/thread_pool.h"

namespace phx::kernels {

// A dense row-major tensor in host memory.
struct HostTensor {
  void* data = nullptr;
  phx_dtype dtype = PHX_DTYPE_INVALID;
  uint32_t rank = 0;
  int64_t shape[PHX_MAX_RANK] = {};  // entries past rank are 1
};

// The number of elements of t (1 for rank 0).
int64_t element_count(const HostTensor& t);

// Whether run_op implements op for inputs of dtype (the CPU plugin's op_supported).
bool op_supported(phx_op_id op, phx_dtype dtype);

// Runs op. params is the op's parameter struct (current layout, defaults already filled
// by the core) or null for ops without params; inputs/outputs follow the op's rules (an
// absent optional input has data == nullptr). Returns PHX_STATUS_OK or
// PHX_STATUS_UNSUPPORTED (op/dtype not implemented); also PHX_STATUS_OUT_OF_MEMORY when
// a scratch buffer (im2col, a converted bias) cannot be allocated. Never throws.
// The operands are trusted: the core has checked shapes, dtypes and counts. Outputs
// must not overlap inputs, except that an elementwise op may write over an input of
// its own shape and dtype.
phx_status run_op(phx_op_id op, const void* params, const HostTensor* inputs, size_t input_count,
                  const HostTensor* outputs, size_t output_count, ThreadPool& pool);

}  // namespace phx::kernels
