// The AVX512-VNNI microkernel of the integer GEMM: a 12 x 32 int32 tile in 24 zmm
// accumulators; per group of 4 ks, two B vectors (32 columns x 4 i8) and, per row, the
// row's 4 u8 values broadcast, multiplied and summed by VPDPBUSD (u8 x i8, 4 products
// per int32 lane, wrapping, no saturation).
//
// The function carries a target attribute instead of the file being compiled with
// -mavx512vnni, as gemm_avx512.cpp explains.
#include "gemm_s8_internal.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#define PHX_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

namespace phx::kernels::gemm_s8_detail {
namespace {

constexpr int kMr = 12;
constexpr int kNr = 32;

PHX_VNNI void ukr_vnni(int64_t groups, const void* a, const void* b, int32_t* tile) {
  __m512i acc[kMr][2];
#pragma GCC unroll 12
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
  const auto* ap = static_cast<const unsigned char*>(a);
  const auto* bp = static_cast<const __m512i*>(b);
  for (int64_t g = 0; g < groups; ++g) {
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
    _mm512_storeu_si512(tile + i * kNr, acc[i][0]);
    _mm512_storeu_si512(tile + i * kNr + 16, acc[i][1]);
  }
}

}  // namespace

const Kernels* vnni_kernels() {
  static const Kernels kernels{"avx512-vnni", kMr, kNr, Layout::kQuads, ukr_vnni};
  return &kernels;
}

}  // namespace phx::kernels::gemm_s8_detail

#else

namespace phx::kernels::gemm_s8_detail {
const Kernels* vnni_kernels() { return nullptr; }
}  // namespace phx::kernels::gemm_s8_detail

#endif
