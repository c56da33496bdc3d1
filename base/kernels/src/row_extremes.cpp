// The maximum and minimum of a row of floats, NaN if any value is NaN (as NumPy's): the
// first pass of every softmax row and of reduce_max and reduce_min.
//
// Written with intrinsics, once per instruction set, chosen as gemm_isa() names it
// (PHX_CPU_ISA caps it): GCC 12 leaves a comparison-and-select over float lanes scalar in
// a target_clones function, with a branch per value (the softmax rows of vit_b_16: 1.2 ns
// a value), and lowers a comparison of GCC's vector types to scalars too when it is
// written in a function without the instruction set, even one inlined into a function
// with it. The vectors take max (min) instructions, which drop a NaN; a NaN seen sets a
// flag instead, and the row is then searched for it.
#include <limits>
#include <string_view>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ops_common.h"
#include "phx/kernels/gemm.h"

namespace phx::kernels::ops {
namespace {

template <bool kMax>
constexpr float kStart = kMax ? -std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::infinity();

// The first NaN of the row (there is one).
float first_nan(const float* x) {
  while (*x == *x) ++x;
  return *x;
}

// Folds values into m.
template <bool kMax>
float fold(float m, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) m = kMax ? max_nan(m, x[i]) : min_nan(m, x[i]);
  return m;
}

template <bool kMax>
float extreme_generic(const float* x, int64_t n) {
  return fold<kMax>(kStart<kMax>, x, n);
}

#if defined(__x86_64__)
template <bool kMax>
[[gnu::target("avx2")]] float extreme_avx2(const float* x, int64_t n) {
  __m256 acc = _mm256_set1_ps(kStart<kMax>);
  int nan = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    nan |= _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    acc = kMax ? _mm256_max_ps(acc, v) : _mm256_min_ps(acc, v);
  }
  if (nan != 0) return first_nan(x);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  return fold<kMax>(fold<kMax>(kStart<kMax>, lanes, 8), x + i, n - i);
}

template <bool kMax>
[[gnu::target("avx512f")]] float extreme_avx512(const float* x, int64_t n) {
  __m512 acc = _mm512_set1_ps(kStart<kMax>);
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    // The masked forms: GCC 12 warns of the undefined source the plain ones pass.
    acc = kMax ? _mm512_mask_max_ps(acc, 0xFFFF, acc, v) : _mm512_mask_min_ps(acc, 0xFFFF, acc, v);
  }
  if (nan != 0) return first_nan(x);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  return fold<kMax>(fold<kMax>(kStart<kMax>, lanes, 16), x + i, n - i);
}
#endif

using RowFn = float (*)(const float*, int64_t);

template <bool kMax>
RowFn extreme_for_isa() {
  static const RowFn chosen = [] {
    [[maybe_unused]] const std::string_view isa = gemm_isa();
#if defined(__x86_64__)
    if (isa.starts_with("avx512")) return &extreme_avx512<kMax>;
    if (isa == "avx2") return &extreme_avx2<kMax>;
#endif
    return &extreme_generic<kMax>;
  }();
  return chosen;
}

}  // namespace

float max_row_f32(const float* x, int64_t n) { return extreme_for_isa<true>()(x, n); }

float min_row_f32(const float* x, int64_t n) { return extreme_for_isa<false>()(x, n); }

}  // namespace phx::kernels::ops
