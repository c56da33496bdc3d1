// Private to the GEMM: what the driver (gemm.cpp) shares with the per-ISA microkernels
// and packers (gemm_generic.cpp, gemm_avx2.cpp, gemm_avx512.cpp).
//
// Layout of the packed operands. Both operands are packed the same way: an operand is
// seen as R "rows" by K, where the rows are the rows of A (panel height MR) or the
// columns of B (panel width NR). A panel of width P holds, for every k, the P values
// of column k side by side ([k][P], "f32" layout), or, in the bf16-pair layout used with
// AVX512_BF16, for every pair of ks the P pairs side by side ([k/2][P][2] uint16, the
// odd K padded with a zero). Rows past the edge are zero, so the microkernel always
// computes full MR x NR tiles; only the write of C is clipped.
#pragma once

#include <phynexus/phynexus.h>

#include <cmath>
#include <cstdint>

#include "phx/kernels/convert.h"

namespace phx::kernels::gemm_detail {

enum class Isa { kGeneric = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };

// One operand as the packer sees it: element (r, k) is at
//   src[r * ld + k] when k_contiguous, else src[k * ld + r].
struct PackSrc {
  const void* src;
  int64_t ld;
  bool k_contiguous;
  phx_dtype dtype;
};

// Packs rows [r0, r0 + rows) and ks [k0, k0 + kc) into ceil(rows / P) panels of width
// P, each panel kc_pad * P elements (kc_pad = kc, or kc rounded up to even for pairs).
using PackFn = void (*)(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                        int panel, void* dst);

// Where and how a microkernel writes its MR x NR tile of results.
struct Tile {
  float* c32;  // f32 partial sums, or the f32 output when out_dtype is f32
  int64_t ldc32;
  void* c16;  // 16-bit output (final tile only, when out_dtype is 16-bit)
  int64_t ldc16;
  int mr, nr;              // valid rows and columns of the tile
  bool accumulate;         // add to the values already at c32
  bool final;              // the last K block: apply bias + activation, write the output
  const float* bias;       // nr values for the tile's columns, or null
  const float* bias_rows;  // mr values for the tile's rows, or null
  phx_activation act;
  phx_dtype out;  // f32, f16 or bf16
};

// Computes (sum over ksteps of the packed panels) and writes it per tile. For the f32
// layout a k step is one k; for the bf16-pair layout it is one pair of ks.
using UkrFn = void (*)(int64_t ksteps, const void* a, const void* b, const Tile& t);

// A B packed beforehand (gemm_pack_b): the K block that starts at k (run_block's blocks
// of an f32 product) at data + k * n_padded, in it the panel of columns [j, j + NR) at
// j * klen floats (klen the block's ks): the layout run_block packs columns [jc, jc + NC)
// of that block into, for every jc a multiple of NR.
struct PrepackedB {
  const float* data;
  int64_t n_padded;  // N rounded up to NR
};

// The skinny path (products of few rows; gemm.cpp says which): B is read where it lies, or
// from a PackedB's panels, never packed, and every element of C is one f32 chain over k in
// order from zero, acc = acc + a(i, k) * b(k, j) (one FMA where the instruction set has
// it), then act(acc + bias): the same bits whatever B's layout and whether it was packed
// beforehand, so that a product on a PackedB matches the same product on B itself.

// Continues the chain of acc[i * ldacc + j], i < m, j < w, over ks [0, kn) (from zero when
// first) with a(i, k) = a[i * a_row + k * a_k] and b(k, j) = b[k * ldb + j], all f32.
using SkinnyUpdateFn = void (*)(int64_t m, int64_t kn, const float* a, int64_t a_row, int64_t a_k,
                                const float* b, int64_t ldb, int64_t w, float* acc, int64_t ldacc,
                                bool first);

// C(i, j) = act(acc[i * ldacc + j] + bias[j]) (bias may be null) for i < m, j < w, written
// as out (f32, f16 or bf16) at c + (i * ldc + j) elements; c may be acc itself.
using SkinnyEpilogueFn = void (*)(int64_t m, int64_t w, const float* acc, int64_t ldacc,
                                  const float* bias, const float* bias_rows, phx_activation act,
                                  phx_dtype out, void* c, int64_t ldc);

struct IsaKernels {
  const char* name;
  int mr, nr;       // microkernel tile
  int kc;           // K block for the f32 layout (even)
  int kc_pairs;     // K block for the bf16-pair layout (even)
  int nc;           // columns of the packed B block (L2), a multiple of nr
  int mc;           // rows of the packed A block, a multiple of mr
  bool bf16_pairs;  // bf16 inputs use the pair layout and ukr_bf16
  UkrFn ukr_f32;
  UkrFn ukr_bf16;     // null unless bf16_pairs
  PackFn pack_f32;    // packs any dtype into the f32 layout
  PackFn pack_pairs;  // packs bf16 into the pair layout (null unless bf16_pairs)
  SkinnyUpdateFn skinny_update;
  SkinnyEpilogueFn skinny_epilogue;
};

const IsaKernels& generic_kernels();
const IsaKernels* avx2_kernels();    // null when not compiled in (non-x86)
const IsaKernels* avx512_kernels();  // null when not compiled in
const IsaKernels* avx512_bf16_kernels();

// True where VDPBF16PS, timed once per process, multiplies bf16 at a rate that clears f32
// FMA's by a margin (gemm_bf16_probe.cpp): the automatic choice then takes the
// avx512-bf16 path. Call only where the CPU has AVX512_BF16.
bool bf16_dot_outpaces_fma();

// Portable packers (any dtype, any panel width).
void pack_f32_generic(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc, int panel,
                      void* dst);
void pack_pairs_generic(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                        int panel, void* dst);

// Scalar epilogue, shared by the generic path and by the tests' expectations.
inline float apply_activation(float x, phx_activation act) {
  switch (act) {
    case PHX_ACTIVATION_RELU:
      return x < 0.0f ? 0.0f : x;  // NaN stays NaN
    // In double, rounded once: erfc (not 1 + erf) keeps gelu's negative tail, and
    // neither argument is rounded to f32 before erfc or exp amplifies its error.
    case PHX_ACTIVATION_GELU:
      return static_cast<float>(0.5 * x *
                                std::erfc(-static_cast<double>(x) * 0.70710678118654752440));
    case PHX_ACTIVATION_SILU:
      return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(x))));
    default:
      return x;
  }
}

inline void store_out(float v, phx_dtype out, float* c32, void* c16) {
  if (out == PHX_DTYPE_F32)
    *c32 = v;
  else if (out == PHX_DTYPE_BF16)
    *static_cast<uint16_t*>(c16) = f32_to_bf16(v);
  else
    *static_cast<uint16_t*>(c16) = f32_to_f16(v);
}

// Writes a tile from an MR x NR row-major f32 array (row stride ld_acc) the scalar way:
// used by the generic kernel and for nothing else on the hot paths.
void write_tile_scalar(const float* acc, int ld_acc, const Tile& t);

}  // namespace phx::kernels::gemm_detail
