// AVX-512 GEMM: a 14 x 32 f32 microkernel (28 zmm accumulators, FMA with the A value
// broadcast from memory), a 14 x 32 bf16 microkernel on VDPBF16PS (AVX512_BF16), the
// vector epilogue, and packers that transpose 16 x 16 blocks in registers.
//
// Every function here carries a target attribute instead of the file being compiled
// with -mavx512f: inline functions from shared headers are then never emitted with
// AVX-512 code that the linker could pick for callers on other paths.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own placeholder
// variables (GCC PR 105593) once inlined; the warning is about the header, not us.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "gemm_internal.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>

#define PHX_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
#define PHX_AVX512_BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c,avx512bf16")))

namespace phx::kernels::gemm_detail {
namespace {

constexpr int kMr = 14;
constexpr int kNr = 32;

// ---------------------------------------------------------------------------------------
// Vector math for the epilogue.

// e^(a + b), a taken as exact, b small (|b| <= 2): a + b = n ln2 + r with |r| <= ln2/2,
// r reduced from a exactly (Cody-Waite split of ln2, as exp_sum_f32 in ops_common.h, so
// the error does not grow with |a|), e^r by its Taylor series to r^7 (truncation < 3e-9
// relative), then scaled by 2^n with VSCALEFPS, which rounds into the subnormals and gives
// inf / 0 on overflow / underflow.
PHX_AVX512 inline __m512 exp512(__m512 a, __m512 b) {
  a = _mm512_max_ps(_mm512_min_ps(a, _mm512_set1_ps(100.0f)), _mm512_set1_ps(-110.0f));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(_mm512_add_ps(a, b), _mm512_set1_ps(1.44269504088896341f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), a);
  r = _mm512_add_ps(_mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r), b);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2). erfc(z), z >= 0, by the
// Chebyshev fit t exp(-z^2 + P(t)), t = 1 / (1 + z/2) (Numerical Recipes' erfcc; relative
// error < 1.2e-7 for every z >= 0), and erfc(-z) = 2 - erfc(z). The exponent -z^2 =
// -x^2 / 2 is taken exactly, as x^2 = h + l with l = fma(x, x, -h) (a rounded z squared
// would err by z^2 2^-23 relative in the result). |x| is clamped at 16, past which
// erfc(|x| / sqrt 2) < 2^-184, so x^2 stays finite; a NaN x becomes 16 there (MINPS
// returns its second operand) and stays NaN through the final product.
PHX_AVX512 inline __m512 gelu512(__m512 x) {
  const __m512 ax = _mm512_min_ps(_mm512_abs_ps(x), _mm512_set1_ps(16.0f));
  const __m512 z = _mm512_mul_ps(ax, _mm512_set1_ps(0.70710678118654752f));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(z, _mm512_set1_ps(0.5f), one));
  __m512 p = _mm512_set1_ps(0.17087277f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.82215223f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.48851587f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.13520398f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.27886807f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.18628806f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.09678418f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.37409196f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.00002368f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.26551223f));
  const __m512 h = _mm512_mul_ps(ax, ax);
  const __m512 l = _mm512_fmsub_ps(ax, ax, h);
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 e = _mm512_mul_ps(  // erfc(|x| / sqrt 2)
      t, exp512(_mm512_mul_ps(h, _mm512_set1_ps(-0.5f)), _mm512_fnmadd_ps(l, half, p)));
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 w = _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(2.0f), e), e);
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), w);
}

// x / (1 + e^-x); for x < 0 as x e^x / (1 + e^x), since e^-x overflows from x = -88.7
// while silu(x) stays a normal number down to x = -92.4.
PHX_AVX512 inline __m512 silu512(__m512 x) {
  const __m512 e =
      exp512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(x)), _mm512_setzero_ps());
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 num = _mm512_mask_mul_ps(x, neg, x, e);
  return _mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

PHX_AVX512 inline __m512 act512(__m512 x, phx_activation act) {
  switch (act) {
    case PHX_ACTIVATION_RELU:
      return _mm512_max_ps(_mm512_setzero_ps(), x);  // NaN x gives x
    case PHX_ACTIVATION_GELU:
      return gelu512(x);
    case PHX_ACTIVATION_SILU:
      return silu512(x);
    default:
      return x;
  }
}

// f32 -> bf16, round to nearest even, NaN quieted: exactly convert.h's f32_to_bf16.
PHX_AVX512 inline __m256i to_bf16_512(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i hi = _mm512_srli_epi32(bits, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i r = _mm512_mask_or_epi32(rounded, nan, hi, _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(r);
}

PHX_AVX512 inline void store_out16(void* p, __mmask16 m, __m512 v, phx_dtype out) {
  const __m256i h = out == PHX_DTYPE_BF16
                        ? to_bf16_512(v)
                        : _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm256_mask_storeu_epi16(p, m, h);
}

PHX_AVX512 inline __mmask16 lane_mask(int n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u);
}

// The final write of a tile with an activation or a 16-bit output: out of line, from
// accumulators spilled by the caller (the activations are long; keeping them out of
// the microkernel keeps its accumulators in registers).
PHX_AVX512 __attribute__((noinline)) void write_tile_final(const __m512* c0, const __m512* c1,
                                                           const Tile& t) {
  const __mmask16 m0 = lane_mask(t.nr), m1 = lane_mask(t.nr - 16);
  __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
  if (t.bias) {
    bias0 = _mm512_maskz_loadu_ps(m0, t.bias);
    bias1 = _mm512_maskz_loadu_ps(m1, t.bias + 16);
  }
  for (int i = 0; i < t.mr; ++i) {
    __m512 v0 = c0[i], v1 = c1[i];
    if (t.accumulate) {
      const float* c = t.c32 + i * t.ldc32;
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, c));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, c + 16));
    }
    v0 = _mm512_add_ps(v0, bias0);
    v1 = _mm512_add_ps(v1, bias1);
    if (t.bias_rows) {
      const __m512 row = _mm512_set1_ps(t.bias_rows[i]);
      v0 = _mm512_add_ps(v0, row);
      v1 = _mm512_add_ps(v1, row);
    }
    v0 = act512(v0, t.act);
    v1 = act512(v1, t.act);
    if (t.out == PHX_DTYPE_F32) {
      float* c = t.c32 + i * t.ldc32;
      _mm512_mask_storeu_ps(c, m0, v0);
      _mm512_mask_storeu_ps(c + 16, m1, v1);
    } else {
      uint16_t* c = static_cast<uint16_t*>(t.c16) + i * t.ldc16;
      store_out16(c, m0, v0, t.out);
      store_out16(c + 16, m1, v1, t.out);
    }
  }
}

// Writes the accumulators of one tile (see Tile). Partial sums and plain f32 results
// (bias at most) are written here, unrolled, with the accumulators in registers.
PHX_AVX512 inline void write_tile(__m512 (&c0)[kMr], __m512 (&c1)[kMr], const Tile& t) {
  const __mmask16 m0 = lane_mask(t.nr), m1 = lane_mask(t.nr - 16);
  if (t.final && (t.act != PHX_ACTIVATION_NONE || t.out != PHX_DTYPE_F32 || t.bias_rows)) {
    alignas(64) __m512 s0[kMr], s1[kMr];
#pragma GCC unroll 14
    for (int i = 0; i < kMr; ++i) {
      s0[i] = c0[i];
      s1[i] = c1[i];
    }
    write_tile_final(s0, s1, t);
    return;
  }
  __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
  if (t.final && t.bias) {
    bias0 = _mm512_maskz_loadu_ps(m0, t.bias);
    bias1 = _mm512_maskz_loadu_ps(m1, t.bias + 16);
  }
#pragma GCC unroll 14
  for (int i = 0; i < kMr; ++i) {
    if (i >= t.mr) break;
    float* c = t.c32 + i * t.ldc32;
    // The block's sum joins C before the bias: every path rounds (acc + C) + bias.
    __m512 v0 = c0[i], v1 = c1[i];
    if (t.accumulate) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, c));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, c + 16));
    }
    v0 = _mm512_add_ps(v0, bias0);
    v1 = _mm512_add_ps(v1, bias1);
    _mm512_mask_storeu_ps(c, m0, v0);
    _mm512_mask_storeu_ps(c + 16, m1, v1);
  }
}

PHX_AVX512 inline void prefetch_c(const Tile& t) {
  if (t.accumulate || (t.final && t.out == PHX_DTYPE_F32)) {
    for (int i = 0; i < t.mr; ++i) {
      _mm_prefetch(reinterpret_cast<const char*>(t.c32 + i * t.ldc32), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(t.c32 + i * t.ldc32 + 31), _MM_HINT_T0);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Microkernels.

PHX_AVX512 void ukr_f32(int64_t ksteps, const void* ap, const void* bp, const Tile& t) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  __m512 c0[kMr], c1[kMr];
#pragma GCC unroll 14
  for (int i = 0; i < kMr; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  prefetch_c(t);
  for (int64_t k = 0; k < ksteps; ++k) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
    _mm_prefetch(reinterpret_cast<const char*>(b + 512), _MM_HINT_T0);
#pragma GCC unroll 14
    for (int i = 0; i < kMr; ++i) {
      const __m512 av = _mm512_set1_ps(a[i]);
      c0[i] = _mm512_fmadd_ps(av, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(av, b1, c1[i]);
    }
    a += kMr;
    b += kNr;
  }
  write_tile(c0, c1, t);
}

PHX_AVX512_BF16 void ukr_bf16(int64_t ksteps, const void* ap, const void* bp, const Tile& t) {
  const int32_t* a = static_cast<const int32_t*>(ap);
  const __m512i* b = static_cast<const __m512i*>(bp);
  __m512 c0[kMr], c1[kMr];
#pragma GCC unroll 14
  for (int i = 0; i < kMr; ++i) c0[i] = c1[i] = _mm512_setzero_ps();
  prefetch_c(t);
  for (int64_t k = 0; k < ksteps; ++k) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 1);
    _mm_prefetch(reinterpret_cast<const char*>(b + 16), _MM_HINT_T0);
#pragma GCC unroll 14
    for (int i = 0; i < kMr; ++i) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(a[i]);
      c0[i] = _mm512_dpbf16_ps(c0[i], av, b0);
      c1[i] = _mm512_dpbf16_ps(c1[i], av, b1);
    }
    a += kMr;
    b += 2;
  }
  write_tile(c0, c1, t);
}

// ---------------------------------------------------------------------------------------
// The skinny path (gemm_internal.h).

// Rows [0, R) of acc, ks [0, KU), all w columns: a(i, k) broadcast once into registers and
// kept there while the columns stream by, 16 at a time.
template <int R, int KU>
PHX_AVX512 inline void skinny_step(const float* a, int64_t a_row, int64_t a_k, const float* b,
                                   int64_t ldb, int64_t w, float* acc, int64_t ldacc, bool zero) {
  __m512 av[R][KU];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int u = 0; u < KU; ++u) av[r][u] = _mm512_set1_ps(a[r * a_row + u * a_k]);
  for (int64_t j = 0; j < w; j += 16) {
    const __mmask16 m = lane_mask(int(std::min<int64_t>(16, w - j)));
    __m512 bv[KU];
#pragma GCC unroll 8
    for (int u = 0; u < KU; ++u) bv[u] = _mm512_maskz_loadu_ps(m, b + u * ldb + j);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* c = acc + r * ldacc + j;
      __m512 v = zero ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, c);
#pragma GCC unroll 8
      for (int u = 0; u < KU; ++u) v = _mm512_fmadd_ps(av[r][u], bv[u], v);
      _mm512_mask_storeu_ps(c, m, v);
    }
  }
}

template <int KU>
PHX_AVX512 inline void skinny_rows(int64_t m, const float* a, int64_t a_row, int64_t a_k,
                                   const float* b, int64_t ldb, int64_t w, float* acc,
                                   int64_t ldacc, bool zero) {
  for (int64_t i = 0; i < m; i += 4) {
    const float* ai = a + i * a_row;
    float* ci = acc + i * ldacc;
    switch (std::min<int64_t>(4, m - i)) {
      case 4:
        skinny_step<4, KU>(ai, a_row, a_k, b, ldb, w, ci, ldacc, zero);
        break;
      case 3:
        skinny_step<3, KU>(ai, a_row, a_k, b, ldb, w, ci, ldacc, zero);
        break;
      case 2:
        skinny_step<2, KU>(ai, a_row, a_k, b, ldb, w, ci, ldacc, zero);
        break;
      default:
        skinny_step<1, KU>(ai, a_row, a_k, b, ldb, w, ci, ldacc, zero);
        break;
    }
  }
}

// At most 32 columns (a panel of a PackedB, a tile of a transposed B): the accumulators of
// R rows stay in registers over all the ks, as in the microkernel.
template <int R>
PHX_AVX512 void skinny_narrow(int64_t kn, const float* a, int64_t a_row, int64_t a_k,
                              const float* b, int64_t ldb, int64_t w, float* acc, int64_t ldacc,
                              bool first) {
  const __mmask16 m0 = lane_mask(int(w)), m1 = lane_mask(int(w) - 16);
  __m512 c0[R], c1[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    c0[r] = c1[r] = _mm512_setzero_ps();
    if (!first) {
      c0[r] = _mm512_maskz_loadu_ps(m0, acc + r * ldacc);
      c1[r] = _mm512_maskz_loadu_ps(m1, acc + r * ldacc + 16);
    }
  }
  for (int64_t k = 0; k < kn; ++k) {
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, b + k * ldb);
    const __m512 b1 = _mm512_maskz_loadu_ps(m1, b + k * ldb + 16);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * a_row + k * a_k]);
      c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(acc + r * ldacc, m0, c0[r]);
    _mm512_mask_storeu_ps(acc + r * ldacc + 16, m1, c1[r]);
  }
}

using SkinnyNarrowFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t,
                                int64_t, float*, int64_t, bool);
constexpr SkinnyNarrowFn kSkinnyNarrow[] = {skinny_narrow<1>, skinny_narrow<2>, skinny_narrow<3>,
                                            skinny_narrow<4>, skinny_narrow<5>, skinny_narrow<6>,
                                            skinny_narrow<7>, skinny_narrow<8>};

// Narrow blocks keep their accumulators in registers; wide ones (a row-major B read in
// place) pass over all the columns 4 ks at a time, the accumulators in L1. Both take each
// element's ks in order, one FMA each: the same bits.
PHX_AVX512 void skinny_update(int64_t m, int64_t kn, const float* a, int64_t a_row, int64_t a_k,
                              const float* b, int64_t ldb, int64_t w, float* acc, int64_t ldacc,
                              bool first) {
  if (w <= 32) {
    for (int64_t i = 0; i < m; i += 8)
      kSkinnyNarrow[std::min<int64_t>(8, m - i) - 1](kn, a + i * a_row, a_row, a_k, b, ldb, w,
                                                     acc + i * ldacc, ldacc, first);
    return;
  }
  int64_t k = 0;
  for (; k + 4 <= kn; k += 4)
    skinny_rows<4>(m, a + k * a_k, a_row, a_k, b + k * ldb, ldb, w, acc, ldacc, first && k == 0);
  for (; k < kn; ++k)
    skinny_rows<1>(m, a + k * a_k, a_row, a_k, b + k * ldb, ldb, w, acc, ldacc, first && k == 0);
}

// As write_tile_final: act(acc + bias + bias_rows), then the store.
PHX_AVX512 void skinny_epilogue(int64_t m, int64_t w, const float* acc, int64_t ldacc,
                                const float* bias, const float* bias_rows, phx_activation act,
                                phx_dtype out, void* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < w; j += 16) {
      const __mmask16 lanes = lane_mask(int(std::min<int64_t>(16, w - j)));
      __m512 v = _mm512_maskz_loadu_ps(lanes, acc + i * ldacc + j);
      if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes, bias + j));
      if (bias_rows) v = _mm512_add_ps(v, _mm512_set1_ps(bias_rows[i]));
      v = act512(v, act);
      if (out == PHX_DTYPE_F32)
        _mm512_mask_storeu_ps(static_cast<float*>(c) + i * ldc + j, lanes, v);
      else
        store_out16(static_cast<uint16_t*>(c) + i * ldc + j, lanes, v, out);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Packing.

// Up to 16 consecutive elements (count of them valid, the rest 0) as f32.
PHX_AVX512 inline __m512 load16_f32(const void* p, int64_t idx, int count, phx_dtype d) {
  const __mmask16 m = lane_mask(count);
  if (d == PHX_DTYPE_F32) return _mm512_maskz_loadu_ps(m, static_cast<const float*>(p) + idx);
  const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(p) + idx);
  if (d == PHX_DTYPE_F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Up to 16 pairs of consecutive bf16 (count bf16 valid, the rest 0) as 16 dwords.
PHX_AVX512 inline __m512 load16_pairs(const uint16_t* p, int count) {
  const __mmask32 m = count >= 32  ? __mmask32(0xffffffffu)
                      : count <= 0 ? __mmask32(0)
                                   : __mmask32((1u << count) - 1u);
  return _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(m, p));
}

// Transposes r[0..15] (rows) into out columns, in place.
PHX_AVX512 inline void transpose16(__m512 (&r)[16]) {
  __m512 a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512d x0 = _mm512_castps_pd(a[4 * j]), x1 = _mm512_castps_pd(a[4 * j + 1]);
    const __m512d x2 = _mm512_castps_pd(a[4 * j + 2]), x3 = _mm512_castps_pd(a[4 * j + 3]);
    b[4 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(x0, x2));
    b[4 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x0, x2));
    b[4 * j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(x1, x3));
    b[4 * j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(x1, x3));
  }
  // b[4j + c] holds, in 128-bit lane l, column 4l + c of rows 4j..4j+3.
  for (int c = 0; c < 4; ++c) {
    const __m512 s0 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0x44);
    const __m512 s1 = _mm512_shuffle_f32x4(b[c], b[4 + c], 0xee);
    const __m512 s2 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0x44);
    const __m512 s3 = _mm512_shuffle_f32x4(b[8 + c], b[12 + c], 0xee);
    r[c] = _mm512_shuffle_f32x4(s0, s2, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(s0, s2, 0xdd);
    r[8 + c] = _mm512_shuffle_f32x4(s1, s3, 0x88);
    r[12 + c] = _mm512_shuffle_f32x4(s1, s3, 0xdd);
  }
}

// k-contiguous source (A not transposed, B transposed): 16 x 16 blocks transposed in
// registers. Works on 32-bit units: f32 values, or bf16 pairs when pairs.
PHX_AVX512 void pack_kcontig(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                             int P, void* dst, bool pairs) {
  const int64_t units = pairs ? (kc + 1) / 2 : kc;  // 32-bit units per row
  float* d0 = static_cast<float*>(dst);
  for (int64_t p0 = 0; p0 < rows; p0 += P) {
    const int pr = int(std::min<int64_t>(P, rows - p0));
    float* d = d0 + p0 * units;
    for (int g = 0; g < P; g += 16) {  // 16-row groups of the panel
      const int gw = std::min(16, P - g);
      const __mmask16 sm = lane_mask(gw);
      for (int64_t u = 0; u < units; u += 16) {
        const int un = int(std::min<int64_t>(16, units - u));
        __m512 r[16];
        for (int i = 0; i < 16; ++i) {
          const int row = g + i;
          if (row >= pr) {
            r[i] = _mm512_setzero_ps();
          } else if (pairs) {
            const int64_t k = 2 * u;
            r[i] =
                load16_pairs(static_cast<const uint16_t*>(s.src) + (r0 + p0 + row) * s.ld + k0 + k,
                             int(std::min<int64_t>(32, kc - k)));
          } else {
            r[i] = load16_f32(s.src, (r0 + p0 + row) * s.ld + k0 + u, un, s.dtype);
          }
        }
        transpose16(r);
        for (int j = 0; j < un; ++j) _mm512_mask_storeu_ps(d + (u + j) * P + g, sm, r[j]);
      }
    }
  }
}

// Row-contiguous source (A transposed, B not): per k a run of P values to copy into
// each panel. k is the outer loop so that the source is read row by row, sequentially.
PHX_AVX512 void pack_rcontig_f32(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                                 int P, float* d0) {
  for (int64_t k = 0; k < kc; ++k) {
    const int64_t idx = (k0 + k) * s.ld + r0;
    for (int64_t p0 = 0; p0 < rows; p0 += P) {
      const int pr = int(std::min<int64_t>(P, rows - p0));
      float* d = d0 + p0 * kc + k * P;
      for (int g = 0; g < P; g += 16) {
        const int gw = std::min(16, P - g);
        _mm512_mask_storeu_ps(d + g, lane_mask(gw),
                              load16_f32(s.src, idx + p0 + g, std::min(gw, pr - g), s.dtype));
      }
    }
  }
}

PHX_AVX512 void pack_rcontig_pairs(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0,
                                   int64_t kc, int P, uint32_t* d0) {
  const auto* src = static_cast<const uint16_t*>(s.src);
  const int64_t kp = (kc + 1) / 2;
  for (int64_t q = 0; q < kp; ++q) {
    const uint16_t* lo_row = src + (k0 + 2 * q) * s.ld + r0;
    const bool has_hi = 2 * q + 1 < kc;
    for (int64_t p0 = 0; p0 < rows; p0 += P) {
      const int pr = int(std::min<int64_t>(P, rows - p0));
      uint32_t* d = d0 + p0 * kp + q * P;
      for (int g = 0; g < P; g += 16) {
        const int gw = std::min(16, P - g);
        const __mmask16 lm = lane_mask(std::min(gw, pr - g));
        const uint16_t* lo_p = lo_row + p0 + g;
        const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lm, lo_p));
        __m512i hi = _mm512_setzero_si512();
        if (has_hi) hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lm, lo_p + s.ld));
        _mm512_mask_storeu_epi32(d + g, lane_mask(gw),
                                 _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
      }
    }
  }
}

PHX_AVX512 void pack_f32_avx512(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                                int P, void* dst) {
  if (s.k_contiguous)
    pack_kcontig(s, r0, rows, k0, kc, P, dst, false);
  else
    pack_rcontig_f32(s, r0, rows, k0, kc, P, static_cast<float*>(dst));
}

PHX_AVX512 void pack_pairs_avx512(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0,
                                  int64_t kc, int P, void* dst) {
  if (s.k_contiguous)
    pack_kcontig(s, r0, rows, k0, kc, P, dst, true);
  else
    pack_rcontig_pairs(s, r0, rows, k0, kc, P, static_cast<uint32_t*>(dst));
}

// Blocking: an A panel (14 x 384 f32 = 21 KiB) stays in the 48 KiB L1 while the B block
// (384 x 768 f32 = 1.1 MiB) streams from the 2 MiB L2.
const IsaKernels kAvx512 = {
    "avx512",
    kMr,
    kNr,
    /*kc=*/384,
    /*kc_pairs=*/768,
    /*nc=*/768,
    /*mc=*/kMr * 256,
    /*bf16_pairs=*/false,
    ukr_f32,
    nullptr,
    pack_f32_avx512,
    nullptr,
    skinny_update,
    skinny_epilogue,
};

const IsaKernels kAvx512Bf16 = {
    "avx512-bf16",       kMr,     kNr,
    /*kc=*/384,
    /*kc_pairs=*/768,
    /*nc=*/768,
    /*mc=*/kMr * 256,
    /*bf16_pairs=*/true, ukr_f32, ukr_bf16, pack_f32_avx512, pack_pairs_avx512, skinny_update,
    skinny_epilogue,
};

}  // namespace

const IsaKernels* avx512_kernels() { return &kAvx512; }
const IsaKernels* avx512_bf16_kernels() { return &kAvx512Bf16; }

}  // namespace phx::kernels::gemm_detail

#else  // not x86-64

namespace phx::kernels::gemm_detail {
const IsaKernels* avx512_kernels() { return nullptr; }
const IsaKernels* avx512_bf16_kernels() { return nullptr; }
}  // namespace phx::kernels::gemm_detail

#endif
