// The AVX2 microkernel of the integer GEMM: a 6 x 16 int32 tile in 12 ymm accumulators,
// on the pair layout (int16). Per pair of ks, VPMADDWD multiplies a row's two values,
// broadcast, by 16 columns' two values and adds each pair into an int32 lane: 8-bit
// operands widened to int16 never saturate there (|a0 b0 + a1 b1| <= 2 * 255 * 128),
// unlike VPMADDUBSW's int16 sums of u8 x i8, which can.
#include "gemm_s8_internal.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#define PHX_AVX2 __attribute__((target("avx2")))

namespace phx::kernels::gemm_s8_detail {
namespace {

constexpr int kMr = 6;
constexpr int kNr = 16;

PHX_AVX2 void ukr_avx2(int64_t groups, const void* a, const void* b, const int32_t* init,
                       int32_t* c, int64_t ldc) {
  __m256i acc[kMr][2];
  const __m256i init0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(init));
  const __m256i init1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(init + 8));
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    acc[i][0] = init0;
    acc[i][1] = init1;
  }
  const auto* ap = static_cast<const int16_t*>(a);
  const auto* bp = static_cast<const __m256i*>(b);
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(bp + 2 * g);
    const __m256i b1 = _mm256_loadu_si256(bp + 2 * g + 1);
    const int16_t* row = ap + g * kMr * 2;
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      int32_t pair;
      std::memcpy(&pair, row + 2 * i, 4);
      const __m256i av = _mm256_set1_epi32(pair);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(av, b0));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(av, b1));
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + i * ldc), acc[i][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + i * ldc + 8), acc[i][1]);
  }
}

}  // namespace

const Kernels* avx2_kernels() {
  static const Kernels kernels{"avx2", kMr, kNr, Layout::kPairs, ukr_avx2};
  return &kernels;
}

}  // namespace phx::kernels::gemm_s8_detail

#else

namespace phx::kernels::gemm_s8_detail {
const Kernels* avx2_kernels() { return nullptr; }
}  // namespace phx::kernels::gemm_s8_detail

#endif
