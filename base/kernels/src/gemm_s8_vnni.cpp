// The AVX512-VNNI microkernel of the integer GEMM: a 12 x 32 int32 tile in 24 zmm
// accumulators; per group of 4 ks, two B vectors (32 columns x 4 i8) and, per row, the
// row's 4 u8 values broadcast, multiplied and summed by VPDPBUSD (u8 x i8, 4 products
// per int32 lane, wrapping, no saturation). And the packers of its operands, in
// shuffles of whole vectors.
//
// Each function carries a target attribute instead of the file being compiled with
// -mavx512vnni, as gemm_avx512.cpp explains.
#include "gemm_s8_internal.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#define PHX_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

namespace phx::kernels::gemm_s8_detail {
namespace {

constexpr int kMr = 12;
constexpr int kNr = 32;

PHX_VNNI void ukr_vnni(int64_t groups, const void* a, const void* b, const int32_t* init,
                       int32_t* c, int64_t ldc) {
  __m512i acc[kMr][2];
  const __m512i init0 = _mm512_loadu_si512(init), init1 = _mm512_loadu_si512(init + 16);
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    acc[i][0] = init0;
    acc[i][1] = init1;
  }
  const auto* ap = static_cast<const unsigned char*>(a);
  const auto* bp = static_cast<const __m512i*>(b);
  for (int64_t g = 0; g < groups; ++g) {
    // B comes from L2 (the task's 256 columns); fetched 8 groups ahead, running on into
    // the next panel at the end, which is the next one the task takes.
    _mm_prefetch(reinterpret_cast<const char*>(bp + 2 * g + 16), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(bp + 2 * g + 17), _MM_HINT_T0);
    const __m512i b0 = _mm512_loadu_si512(bp + 2 * g);
    const __m512i b1 = _mm512_loadu_si512(bp + 2 * g + 1);
    const unsigned char* row = ap + g * kMr * 4;
#pragma GCC unroll 12
    for (int i = 0; i < kMr; ++i) {
      int32_t quad;
      std::memcpy(&quad, row + 4 * i, 4);
      const __m512i av = _mm512_set1_epi32(quad);
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], av, b1);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) {
    _mm512_storeu_si512(c + i * ldc, acc[i][0]);
    _mm512_storeu_si512(c + i * ldc + 16, acc[i][1]);
  }
}

// The int32 lanes of v summed, wrapping.
PHX_VNNI int32_t lane_sum(__m512i v) {
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, v);
  uint32_t sum = 0;
  for (uint32_t lane : lanes) sum += lane;
  return static_cast<int32_t>(sum);
}

// The 512-bit unpacks. GCC 12 warns that the unmasked intrinsics (these and the extracts)
// read an uninitialized vector (their pass-through operand): the masked forms with every lane
// selected compile to the same instructions.
PHX_VNNI __m512i unpack_lo32(__m512i a, __m512i b) {
  return _mm512_mask_unpacklo_epi32(a, 0xffff, a, b);
}
PHX_VNNI __m512i unpack_hi32(__m512i a, __m512i b) {
  return _mm512_mask_unpackhi_epi32(a, 0xffff, a, b);
}
PHX_VNNI __m512i unpack_lo64(__m512i a, __m512i b) {
  return _mm512_mask_unpacklo_epi64(a, 0xff, a, b);
}
PHX_VNNI __m512i unpack_hi64(__m512i a, __m512i b) {
  return _mm512_mask_unpackhi_epi64(a, 0xff, a, b);
}

// Lane L of v (128 bits) at dst; the masked extract for the same reason (the cast to
// __m128i is an unmasked extract in GCC 12).
template <int L>
PHX_VNNI void store_lane(unsigned char* dst, __m512i v) {
  const __m128i lane = _mm512_maskz_extracti32x4_epi32(0xf, v, L);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), lane);
}

// Rows of consecutive ks into quads, 4 rows x 16 groups at a time: 64 bytes of each row
// loaded (masked past k and zeros past `real`), then a 4 x 4 transpose of int32 within
// each 128-bit lane leaves, for each group, the 4 rows' quads side by side in one lane.
// The sums come from VPDPBUSD against ones, before the bytes are flipped.
PHX_VNNI void pack_rows_vnni(const void* src, int64_t ld, int real, int P, int64_t k,
                             bool is_signed, bool flip, void* dst, int32_t* sums) {
  const auto* s = static_cast<const unsigned char*>(src);
  auto* d = static_cast<unsigned char*>(dst);
  const int64_t groups = (std::max<int64_t>(k, 1) + 3) / 4;
  const int64_t group_bytes = int64_t{P} * 4;
  const __m512i flip_bits = _mm512_set1_epi8(flip ? char(0x80) : 0);
  const __m512i ones = _mm512_set1_epi8(1);
  for (int p0 = 0; p0 < P; p0 += 4) {
    __m512i sum[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                      _mm512_setzero_si512()};
    for (int64_t g0 = 0; g0 < groups; g0 += 16) {
      const int64_t left = k - g0 * 4;
      const __mmask64 mask = left >= 64 ? ~__mmask64{0} : left > 0 ? (__mmask64{1} << left) - 1 : 0;
      __m512i v[4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        v[r] = p0 + r < real ? _mm512_maskz_loadu_epi8(mask, s + (p0 + r) * ld + g0 * 4)
                             : _mm512_setzero_si512();
        sum[r] = is_signed ? _mm512_dpbusd_epi32(sum[r], ones, v[r])
                           : _mm512_dpbusd_epi32(sum[r], v[r], ones);
        v[r] = _mm512_xor_si512(v[r], flip_bits);
      }
      const __m512i t0 = unpack_lo32(v[0], v[1]), t1 = unpack_hi32(v[0], v[1]);
      const __m512i t2 = unpack_lo32(v[2], v[3]), t3 = unpack_hi32(v[2], v[3]);
      // u[j], lane L: group 4 L + j
      const __m512i u[4] = {unpack_lo64(t0, t2), unpack_hi64(t0, t2), unpack_lo64(t1, t3),
                            unpack_hi64(t1, t3)};
      unsigned char* out = d + g0 * group_bytes + p0 * 4;
      if (groups - g0 >= 16) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          store_lane<0>(out + (j + 0) * group_bytes, u[j]);
          store_lane<1>(out + (j + 4) * group_bytes, u[j]);
          store_lane<2>(out + (j + 8) * group_bytes, u[j]);
          store_lane<3>(out + (j + 12) * group_bytes, u[j]);
        }
      } else {
        alignas(64) unsigned char lanes[4][64];
        for (int j = 0; j < 4; ++j) _mm512_store_si512(lanes[j], u[j]);
        for (int64_t g = 0; g < groups - g0; ++g)
          std::memcpy(out + g * group_bytes, lanes[g % 4] + 16 * (g / 4), 16);
      }
    }
    for (int r = 0; r < 4 && p0 + r < real; ++r) sums[p0 + r] = lane_sum(sum[r]);
  }
}

// Four rows of B (consecutive ks) into 32 quads per group and panel: bytes interleaved by
// pairs of rows, then pairs of int16, within 128-bit lanes; the lanes put back in column
// order. The ks outside, the panels inside, so that the rows are read whole lines at a
// time (one panel at a time read 32 bytes of each row, a row stride apart).
PHX_VNNI void pack_columns_vnni(const int8_t* src, int64_t ld, int64_t columns, int64_t k,
                                void* dst, int32_t* sums) {
  static_assert(kNr == 32);
  const int64_t groups = (std::max<int64_t>(k, 1) + 3) / 4;
  const int64_t panels = (columns + kNr - 1) / kNr;
  const __m256i ones = _mm256_set1_epi8(1);
  __m256i sum[kMaxPackedPanels][4];
  for (int64_t q = 0; q < panels; ++q)
    for (int j = 0; j < 4; ++j) sum[q][j] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    const int rows = int(std::clamp<int64_t>(k - g * 4, 0, 4));
    for (int64_t q = 0; q < panels; ++q) {
      const int64_t real = std::min<int64_t>(kNr, columns - q * kNr);
      const __mmask32 mask = real >= 32 ? ~__mmask32{0} : (__mmask32{1} << real) - 1;
      const int8_t* line = src + g * 4 * ld + q * kNr;
      __m256i r[4];
#pragma GCC unroll 4
      for (int e = 0; e < 4; ++e)
        r[e] = e < rows ? _mm256_maskz_loadu_epi8(mask, line + e * ld) : _mm256_setzero_si256();
      const __m256i a = _mm256_unpacklo_epi8(r[0], r[1]), b = _mm256_unpackhi_epi8(r[0], r[1]);
      const __m256i c = _mm256_unpacklo_epi8(r[2], r[3]), e = _mm256_unpackhi_epi8(r[2], r[3]);
      // q0: columns 0-3 | 16-19, q1: 4-7 | 20-23, q2: 8-11 | 24-27, q3: 12-15 | 28-31
      const __m256i q0 = _mm256_unpacklo_epi16(a, c), q1 = _mm256_unpackhi_epi16(a, c);
      const __m256i q2 = _mm256_unpacklo_epi16(b, e), q3 = _mm256_unpackhi_epi16(b, e);
      const __m256i out[4] = {
          _mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q2, q3, 0x20),
          _mm256_permute2x128_si256(q0, q1, 0x31), _mm256_permute2x128_si256(q2, q3, 0x31)};
      auto* d = static_cast<__m256i*>(dst) + (q * groups + g) * 4;
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        _mm256_storeu_si256(d + j, out[j]);
        sum[q][j] = _mm256_dpbusd_epi32(sum[q][j], ones, out[j]);
      }
    }
  }
  for (int64_t q = 0; q < panels; ++q) {
    alignas(32) int32_t lanes[4][8];
    for (int j = 0; j < 4; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(lanes[j]), sum[q][j]);
    for (int64_t p = 0; p < std::min<int64_t>(kNr, columns - q * kNr); ++p)
      sums[q * kNr + p] = lanes[p / 8][p % 8];
  }
}

}  // namespace

const Kernels* vnni_kernels() {
  static const Kernels kernels{"avx512-vnni",    kMr, kNr, Layout::kQuads, ukr_vnni, pack_rows_vnni,
                               pack_columns_vnni};
  return &kernels;
}

}  // namespace phx::kernels::gemm_s8_detail

#else

namespace phx::kernels::gemm_s8_detail {
const Kernels* vnni_kernels() { return nullptr; }
}  // namespace phx::kernels::gemm_s8_detail

#endif
