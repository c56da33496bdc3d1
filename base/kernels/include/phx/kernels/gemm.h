// General matrix multiply for the host: blocked, packed, threaded, vectorized with
// run-time dispatch (AVX-512, AVX2, portable); products of a few rows (a decoder's token
// steps) stream B once without packing it. Every plugin that computes on the host calls
// this one.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <memory>
#include <new>

#include "phx/kernels/thread_pool.h"

namespace phx::kernels {

// C[b] = act(A[b] . B[b] + bias) for b in [0, batch), element (i, j) of each:
//   A is M x K (K x M when trans_a) and B is K x N (N x K when trans_b), row-major with
//   leading dimensions lda, ldb (in elements); C is M x N with leading dimension ldc.
//   Matrix b of each operand starts batch_stride_* elements after matrix b - 1
//   (0 repeats one matrix for every b: broadcasting).
// a and b are of in_dtype (f32, f16 or bf16); c is f32 or in_dtype. Products are
// accumulated in f32; a 16-bit c is rounded to nearest even once, at the end.
// bias, when not null, is N f32 values added to every row before the activation;
// bias_rows, when not null, M f32 values, value i added to every value of row i (a
// convolution's bias in the NCHW product, whose rows are the output channels).
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  phx_dtype in_dtype = PHX_DTYPE_F32;
  const void* a = nullptr;
  int64_t lda = 0;
  int64_t batch_stride_a = 0;
  bool trans_a = false;
  const void* b = nullptr;
  int64_t ldb = 0;
  int64_t batch_stride_b = 0;
  bool trans_b = false;
  phx_dtype out_dtype = PHX_DTYPE_F32;
  void* c = nullptr;
  int64_t ldc = 0;
  int64_t batch_stride_c = 0;
  const float* bias = nullptr;
  const float* bias_rows = nullptr;
  phx_activation activation = PHX_ACTIVATION_NONE;
  // 0: the kernel blocks K as it likes (results may differ in the last bits between
  // instruction sets). > 0: K is summed in passes of k_pass values, as a systolic
  // array's passes are: each pass in f32 in k order from zero, the passes added in
  // order, (acc + pass) + ... , then the bias; the same bits on every instruction set.
  // f32 microkernels only (bf16 is widened while packing).
  int64_t k_pass = 0;
};

// Runs the product on pool. The caller has checked the arguments (dtypes supported,
// sizes positive, buffers large enough). With K == 0 the result is act(bias) or act(0).
// Throws std::bad_alloc, on the calling thread whichever thread's allocation failed, when
// a packing buffer cannot be allocated; C is then partly written.
void gemm(const GemmArgs& args, ThreadPool& pool);

// An f32 B (K x N, one matrix) packed once into the panels gemm packs it into at every
// call, for the instruction set gemm dispatches to: a constant weight packed at compile
// time, so that a product with it packs only A. Holds no pointer to B. Move-only.
class PackedB {
 public:
  uint64_t bytes() const { return uint64_t(n_padded_) * uint64_t(k_) * sizeof(float); }

 private:
  friend PackedB gemm_pack_b(const GemmArgs& args);
  friend void gemm(const GemmArgs& args, const PackedB& b, ThreadPool& pool);
  struct AlignedDelete {
    void operator()(float* p) const { ::operator delete(p, std::align_val_t(64)); }
  };

  int64_t k_ = 0;
  int64_t n_padded_ = 0;                          // N rounded up to the panel width
  const void* isa_ = nullptr;                     // the instruction set's kernels
  std::unique_ptr<float, AlignedDelete> panels_;  // 64-byte aligned, as gemm's own
};

// Packs args' B (in_dtype f32, b, ldb, trans_b, k and n, both > 0) as gemm would for a
// product of these K and N. Throws std::bad_alloc.
PackedB gemm_pack_b(const GemmArgs& args);

// gemm with B taken from b instead of args.b, ldb, trans_b and batch_stride_b (every
// matrix of the batch multiplies that one B): the same bits as gemm on the B that was
// packed. args has in_dtype f32, k_pass 0, and b's K and N.
void gemm(const GemmArgs& args, const PackedB& b, ThreadPool& pool);

// The instruction set gemm dispatches to on this machine: "avx512-bf16", "avx512",
// "avx2" or "generic": the best this machine has, "avx512-bf16" (VDPBF16PS for bf16
// inputs) only where that instruction, timed once per process, outpaces f32 FMA.
// PHX_CPU_ISA=avx512|avx2|generic caps it, avx512-bf16 selects that path where the CPU
// has it (to test the other paths).
const char* gemm_isa();

}  // namespace phx::kernels
