// AVX2 + FMA GEMM: a 6 x 16 f32 microkernel (12 ymm accumulators), the vector epilogue
// and packers (16-bit inputs converted with F16C / shifts). Target attributes per
// function, as in gemm_avx512.cpp.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own placeholder
// variables (GCC PR 105593) once inlined; the warning is about the header, not us.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "gemm_internal.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#define PHX_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace phx::kernels::gemm_detail {
namespace {

constexpr int kMr = 6;
constexpr int kNr = 16;

// e^(a + b), as exp512 in gemm_avx512.cpp, with 2^n built in the exponent fields of two
// factors 2^(n/2) and 2^(n - n/2), each normal for n in [-150, 129] (a clamped to
// [-104, 88.3]), so that the product rounds into the subnormals as the true result does.
PHX_AVX2 inline __m256 exp256(__m256 a, __m256 b) {
  a = _mm256_max_ps(_mm256_min_ps(a, _mm256_set1_ps(88.3f)), _mm256_set1_ps(-104.0f));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(_mm256_add_ps(a, b), _mm256_set1_ps(1.44269504088896341f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), a);
  r = _mm256_add_ps(_mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r), b);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// gelu through erfc, the exponent -x^2 / 2 exact (see gelu512).
PHX_AVX2 inline __m256 gelu256(__m256 x) {
  const __m256 ax =
      _mm256_min_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), _mm256_set1_ps(16.0f));
  const __m256 z = _mm256_mul_ps(ax, _mm256_set1_ps(0.70710678118654752f));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(z, _mm256_set1_ps(0.5f), one));
  __m256 p = _mm256_set1_ps(0.17087277f);
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.82215223f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.48851587f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.13520398f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.27886807f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-0.18628806f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.09678418f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(0.37409196f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.00002368f));
  p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(-1.26551223f));
  const __m256 h = _mm256_mul_ps(ax, ax);
  const __m256 l = _mm256_fmsub_ps(ax, ax, h);
  const __m256 e = _mm256_mul_ps(t, exp256(_mm256_mul_ps(h, _mm256_set1_ps(-0.5f)),
                                           _mm256_fnmadd_ps(l, _mm256_set1_ps(0.5f), p)));
  const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 w = _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(2.0f), e), e, neg);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), w);
}

// silu as silu512: x e^x / (1 + e^x) for x < 0.
PHX_AVX2 inline __m256 silu256(__m256 x) {
  const __m256 minus_abs = _mm256_or_ps(x, _mm256_set1_ps(-0.0f));
  const __m256 e = exp256(minus_abs, _mm256_setzero_ps());
  const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 num = _mm256_blendv_ps(x, _mm256_mul_ps(x, e), neg);
  return _mm256_div_ps(num, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

PHX_AVX2 inline __m256 act256(__m256 x, phx_activation act) {
  switch (act) {
    case PHX_ACTIVATION_RELU:
      return _mm256_max_ps(_mm256_setzero_ps(), x);
    case PHX_ACTIVATION_GELU:
      return gelu256(x);
    case PHX_ACTIVATION_SILU:
      return silu256(x);
    default:
      return x;
  }
}

PHX_AVX2 inline __m128i to_bf16_256(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i hi = _mm256_srli_epi32(bits, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

PHX_AVX2 inline __m256i lane_mask8(int n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

PHX_AVX2 inline __m256 load8(const float* p, int n) {
  if (n >= 8) return _mm256_loadu_ps(p);
  if (n <= 0) return _mm256_setzero_ps();
  return _mm256_maskload_ps(p, lane_mask8(n));
}

PHX_AVX2 inline void store8(float* p, int n, __m256 v) {
  if (n >= 8)
    _mm256_storeu_ps(p, v);
  else if (n > 0)
    _mm256_maskstore_ps(p, lane_mask8(n), v);
}

PHX_AVX2 inline void store8_16(uint16_t* p, int n, __m256 v, phx_dtype out) {
  if (n <= 0) return;
  const __m128i h = out == PHX_DTYPE_BF16
                        ? to_bf16_256(v)
                        : _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (n >= 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
  } else {
    alignas(16) uint16_t tmp[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), h);
    std::memcpy(p, tmp, size_t(n) * 2);
  }
}

// The final write of a tile with an activation or a 16-bit output, out of line from
// spilled accumulators (see gemm_avx512.cpp).
PHX_AVX2 __attribute__((noinline)) void write_tile_final(const __m256* c0, const __m256* c1,
                                                         const Tile& t) {
  const int n0 = t.nr, n1 = t.nr - 8;
  __m256 bias0 = _mm256_setzero_ps(), bias1 = _mm256_setzero_ps();
  if (t.bias) {
    bias0 = load8(t.bias, n0);
    bias1 = load8(t.bias + 8, n1);
  }
  for (int i = 0; i < t.mr; ++i) {
    __m256 v0 = c0[i], v1 = c1[i];
    if (t.accumulate) {
      const float* c = t.c32 + i * t.ldc32;
      v0 = _mm256_add_ps(v0, load8(c, n0));
      v1 = _mm256_add_ps(v1, load8(c + 8, n1));
    }
    v0 = _mm256_add_ps(v0, bias0);
    v1 = _mm256_add_ps(v1, bias1);
    if (t.bias_rows) {
      const __m256 row = _mm256_set1_ps(t.bias_rows[i]);
      v0 = _mm256_add_ps(v0, row);
      v1 = _mm256_add_ps(v1, row);
    }
    v0 = act256(v0, t.act);
    v1 = act256(v1, t.act);
    if (t.out == PHX_DTYPE_F32) {
      float* c = t.c32 + i * t.ldc32;
      store8(c, n0, v0);
      store8(c + 8, n1, v1);
    } else {
      uint16_t* c = static_cast<uint16_t*>(t.c16) + i * t.ldc16;
      store8_16(c, n0, v0, t.out);
      store8_16(c + 8, n1, v1, t.out);
    }
  }
}

// Partial sums and plain f32 results (bias at most): unrolled, accumulators in registers.
PHX_AVX2 inline void write_tile(__m256 (&c0)[kMr], __m256 (&c1)[kMr], const Tile& t) {
  if (t.final && (t.act != PHX_ACTIVATION_NONE || t.out != PHX_DTYPE_F32 || t.bias_rows)) {
    alignas(32) __m256 s0[kMr], s1[kMr];
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      s0[i] = c0[i];
      s1[i] = c1[i];
    }
    write_tile_final(s0, s1, t);
    return;
  }
  const int n0 = t.nr, n1 = t.nr - 8;
  __m256 bias0 = _mm256_setzero_ps(), bias1 = _mm256_setzero_ps();
  if (t.final && t.bias) {
    bias0 = load8(t.bias, n0);
    bias1 = load8(t.bias + 8, n1);
  }
  if (t.nr == kNr) {
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      if (i >= t.mr) break;
      float* c = t.c32 + i * t.ldc32;
      // The block's sum joins C before the bias: every path rounds (acc + C) + bias.
      __m256 v0 = c0[i], v1 = c1[i];
      if (t.accumulate) {
        v0 = _mm256_add_ps(v0, _mm256_loadu_ps(c));
        v1 = _mm256_add_ps(v1, _mm256_loadu_ps(c + 8));
      }
      v0 = _mm256_add_ps(v0, bias0);
      v1 = _mm256_add_ps(v1, bias1);
      _mm256_storeu_ps(c, v0);
      _mm256_storeu_ps(c + 8, v1);
    }
    return;
  }
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    if (i >= t.mr) break;
    float* c = t.c32 + i * t.ldc32;
    __m256 v0 = c0[i], v1 = c1[i];
    if (t.accumulate) {
      v0 = _mm256_add_ps(v0, load8(c, n0));
      v1 = _mm256_add_ps(v1, load8(c + 8, n1));
    }
    v0 = _mm256_add_ps(v0, bias0);
    v1 = _mm256_add_ps(v1, bias1);
    store8(c, n0, v0);
    store8(c + 8, n1, v1);
  }
}

PHX_AVX2 void ukr_f32(int64_t ksteps, const void* ap, const void* bp, const Tile& t) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  __m256 c0[kMr], c1[kMr];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) c0[i] = c1[i] = _mm256_setzero_ps();
  for (int64_t k = 0; k < ksteps; ++k) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    _mm_prefetch(reinterpret_cast<const char*>(b + 256), _MM_HINT_T0);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const __m256 av = _mm256_broadcast_ss(a + i);
      c0[i] = _mm256_fmadd_ps(av, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(av, b1, c1[i]);
    }
    a += kMr;
    b += kNr;
  }
  write_tile(c0, c1, t);
}

// ---------------------------------------------------------------------------------------
// The skinny path (gemm_internal.h), as in gemm_avx512.cpp on 8 columns at a time and at
// most 2 rows per pass: 8 broadcasts, 4 rows of B and the accumulator fill 13 of the 16
// registers.

template <int R, int KU>
PHX_AVX2 inline void skinny_step(const float* a, int64_t a_row, int64_t a_k, const float* b,
                                 int64_t ldb, int64_t w, float* acc, int64_t ldacc, bool zero) {
  __m256 av[R][KU];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 6
    for (int u = 0; u < KU; ++u) av[r][u] = _mm256_broadcast_ss(a + r * a_row + u * a_k);
  for (int64_t j = 0; j < w; j += 8) {
    const int n = int(std::min<int64_t>(8, w - j));
    __m256 bv[KU];
#pragma GCC unroll 6
    for (int u = 0; u < KU; ++u) bv[u] = load8(b + u * ldb + j, n);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      float* c = acc + r * ldacc + j;
      __m256 v = zero ? _mm256_setzero_ps() : load8(c, n);
#pragma GCC unroll 6
      for (int u = 0; u < KU; ++u) v = _mm256_fmadd_ps(av[r][u], bv[u], v);
      store8(c, n, v);
    }
  }
}

template <int KU>
PHX_AVX2 inline void skinny_rows(int64_t m, const float* a, int64_t a_row, int64_t a_k,
                                 const float* b, int64_t ldb, int64_t w, float* acc, int64_t ldacc,
                                 bool zero) {
  int64_t i = 0;
  for (; i + 2 <= m; i += 2)
    skinny_step<2, KU>(a + i * a_row, a_row, a_k, b, ldb, w, acc + i * ldacc, ldacc, zero);
  if (i < m) skinny_step<1, KU>(a + i * a_row, a_row, a_k, b, ldb, w, acc + i * ldacc, ldacc, zero);
}

// At most 16 columns: the accumulators of R rows in registers over all the ks.
template <int R>
PHX_AVX2 void skinny_narrow(int64_t kn, const float* a, int64_t a_row, int64_t a_k, const float* b,
                            int64_t ldb, int64_t w, float* acc, int64_t ldacc, bool first) {
  const int n0 = int(w), n1 = int(w) - 8;
  __m256 c0[R], c1[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    c0[r] = c1[r] = _mm256_setzero_ps();
    if (!first) {
      c0[r] = load8(acc + r * ldacc, n0);
      c1[r] = load8(acc + r * ldacc + 8, n1);
    }
  }
  for (int64_t k = 0; k < kn; ++k) {
    const __m256 b0 = load8(b + k * ldb, n0), b1 = load8(b + k * ldb + 8, n1);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * a_row + k * a_k);
      c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    store8(acc + r * ldacc, n0, c0[r]);
    store8(acc + r * ldacc + 8, n1, c1[r]);
  }
}

using SkinnyNarrowFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t,
                                int64_t, float*, int64_t, bool);
constexpr SkinnyNarrowFn kSkinnyNarrow[] = {skinny_narrow<1>, skinny_narrow<2>, skinny_narrow<3>,
                                            skinny_narrow<4>, skinny_narrow<5>, skinny_narrow<6>};

// Narrow blocks in registers, wide ones 4 ks per pass (see gemm_avx512.cpp): the same bits.
PHX_AVX2 void skinny_update(int64_t m, int64_t kn, const float* a, int64_t a_row, int64_t a_k,
                            const float* b, int64_t ldb, int64_t w, float* acc, int64_t ldacc,
                            bool first) {
  if (w <= 16) {
    for (int64_t i = 0; i < m; i += 6)
      kSkinnyNarrow[std::min<int64_t>(6, m - i) - 1](kn, a + i * a_row, a_row, a_k, b, ldb, w,
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
PHX_AVX2 void skinny_epilogue(int64_t m, int64_t w, const float* acc, int64_t ldacc,
                              const float* bias, const float* bias_rows, phx_activation act,
                              phx_dtype out, void* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < w; j += 8) {
      const int n = int(std::min<int64_t>(8, w - j));
      __m256 v = load8(acc + i * ldacc + j, n);
      if (bias) v = _mm256_add_ps(v, load8(bias + j, n));
      if (bias_rows) v = _mm256_add_ps(v, _mm256_set1_ps(bias_rows[i]));
      v = act256(v, act);
      if (out == PHX_DTYPE_F32)
        store8(static_cast<float*>(c) + i * ldc + j, n, v);
      else
        store8_16(static_cast<uint16_t*>(c) + i * ldc + j, n, v, out);
    }
  }
}

PHX_AVX2 inline __m256 load8_f32(const void* p, int64_t idx, int n, phx_dtype d) {
  if (d == PHX_DTYPE_F32) return load8(static_cast<const float*>(p) + idx, n);
  alignas(16) uint16_t tmp[8] = {};
  const uint16_t* src = static_cast<const uint16_t*>(p) + idx;
  __m128i h;
  if (n >= 8) {
    h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  } else {
    if (n > 0) std::memcpy(tmp, src, size_t(n) * 2);
    h = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
  }
  if (d == PHX_DTYPE_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// Row-contiguous sources are copied 8 values at a time; k-contiguous ones (a transpose)
// go through the portable packer.
PHX_AVX2 void pack_f32_avx2(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc,
                            int P, void* dst) {
  if (s.k_contiguous || P % 8 != 0) {
    pack_f32_generic(s, r0, rows, k0, kc, P, dst);
    return;
  }
  float* d0 = static_cast<float*>(dst);
  for (int64_t p0 = 0; p0 < rows; p0 += P) {
    const int pr = int(std::min<int64_t>(P, rows - p0));
    float* d = d0 + p0 * kc;
    for (int g = 0; g < P; g += 8) {
      const int valid = std::max(0, std::min(8, pr - g));
      int64_t idx = k0 * s.ld + r0 + p0 + g;
      for (int64_t k = 0; k < kc; ++k, idx += s.ld)
        _mm256_storeu_ps(d + k * P + g, load8_f32(s.src, idx, valid, s.dtype));
    }
  }
}

// Blocking: A panel 6 x 256 f32 = 6 KiB in L1, B block 256 x 1024 = 1 MiB in L2.
const IsaKernels kAvx2 = {
    "avx2",
    kMr,
    kNr,
    /*kc=*/256,
    /*kc_pairs=*/256,
    /*nc=*/1024,
    /*mc=*/kMr * 128,
    /*bf16_pairs=*/false,
    ukr_f32,
    nullptr,
    pack_f32_avx2,
    nullptr,
    skinny_update,
    skinny_epilogue,
};

}  // namespace

const IsaKernels* avx2_kernels() { return &kAvx2; }

}  // namespace phx::kernels::gemm_detail

#else

namespace phx::kernels::gemm_detail {
const IsaKernels* avx2_kernels() { return nullptr; }
}  // namespace phx::kernels::gemm_detail

#endif
