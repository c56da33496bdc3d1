// The host implementation of every op (docs/ops.md) on dense row-major tensors in host
// memory: what the CPU plugin runs, and what the simulators compute with. The GEMM
// itself is gemm.h; matmul and conv2d here arrange their operands and call it.
#pragma once

#include <phynexus/phynexus.h>

#include <cstddef>
#include <cstdint>

#include "phx/kernels/gemm.h"
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

// Runs op. params is the op's parameter struct (current layout, defaults filled in, as the
// core passes it) or null: an op with parameters then takes its defaults (docs/ops.md); one
// whose parameters are required is refused (PHX_STATUS_INVALID_ARGUMENT). inputs/outputs
// follow the op's rules (an absent optional input has data == nullptr). Returns PHX_STATUS_OK
// or PHX_STATUS_UNSUPPORTED (op/dtype not implemented); PHX_STATUS_OUT_OF_MEMORY when a
// scratch buffer (im2col, the GEMM's packing) fails, on any pool thread. Never throws.
// The operands are trusted: the core has checked shapes, dtypes and counts. Outputs
// must not overlap inputs, except that an elementwise op may write over an input of
// its own shape and dtype.
phx_status run_op(phx_op_id op, const void* params, const HostTensor* inputs, size_t input_count,
                  const HostTensor* outputs, size_t output_count, ThreadPool& pool);

// Whether a matmul whose first input is of a_dtype can take b as its second input packed
// by matmul_pack_b: f32 a and b, b a matrix (rank 2) with no dimension of 0.
bool matmul_packs_b(phx_dtype a_dtype, const HostTensor& b);

// b packed for every matmul of params whose second input is b (matmul_packs_b). Throws
// std::bad_alloc.
PackedB matmul_pack_b(const phx_matmul_params& params, const HostTensor& b);

// A matmul as run_op runs it (inputs x, b, optional bias) with its b read from packed
// (matmul_pack_b of inputs[1]'s contents) instead of packed again: the same bits.
// Statuses as run_op's. Never throws.
phx_status run_matmul_packed(const phx_matmul_params& params, const HostTensor* inputs,
                             size_t input_count, const HostTensor& output, const PackedB& packed,
                             ThreadPool& pool);

// An f32 elementwise op (add, sub, mul, div, relu, gelu, silu) over n contiguous output
// elements, on the calling thread. a_step and b_step are 1 where the operand is a run of
// n values and 0 where it is one value used n times; b is null for relu, gelu and silu.
// Each element is computed as run_op computes it, bit for bit, wherever a range starts:
// a fused chain of such ops runs them on one block after another with it.
void elementwise_f32(phx_op_id op, const float* a, int64_t a_step, const float* b, int64_t b_step,
                     float* out, int64_t n);

}  // namespace phx::kernels
