// The MXU's arithmetic on the host: f32 GEMMs whose sums are formed the way a
// weight-stationary array forms them, bit for bit (docs/tpu-sim.md, "Numerics").
//
// K is cut into passes of `depth` (the array's rows, R): one pass is one weight tile.
// Within a pass the partial sums flow down the array's rows, each row adding its product
// in f32, k in order, starting from zero; the pass's sums are then added, in f32 and in
// pass order, to the output's accumulator:
//   acc = p_0;  acc = acc + p_1;  ...   with p_j = (((0 + a_k b_k) + a_k+1 b_k+1) + ...)
// For K <= depth that is the plain k-order f32 sum. The host GEMM does exactly this when
// asked for passes of a fixed depth (GemmArgs::k_pass), on every instruction set.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <vector>

#include "phx/kernels/thread_pool.h"

namespace phx::tpu_sim {

// C[M x N] = A . B, row-major: A is M x K (K x M when trans_a), B is K x N (N x K when
// trans_b), both f32; C is f32, or bf16 rounded once from the f32 sums.
struct MxuProduct {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  bool trans_a = false;
  const float* b = nullptr;
  int64_t ldb = 0;
  bool trans_b = false;
  void* c = nullptr;
  phx_dtype c_dtype = PHX_DTYPE_F32;
  int64_t ldc = 0;
};

// Computes every product (their outputs must not overlap) on pool.
void mxu_gemm(const std::vector<MxuProduct>& products, int64_t depth, kernels::ThreadPool& pool);

}  // namespace phx::tpu_sim
