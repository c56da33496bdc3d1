// Whether the GEMM's VDPBF16PS path pays on this CPU: timed once per process, because no
// CPUID bit tells. The instruction does 32 bf16 products where an FMA does 16 f32 ones,
// but CPUs issue it at very different rates: on the Xeon (Emerald Rapids, under KVM) this
// was tuned on it issues once per two cycles, half the FMA rate in flops, and bf16 inputs
// widened to f32 while packing run about 1.5x faster through the f32 kernel; elsewhere
// (issue 20's machine) it runs at 1.85x the FMA rate. The dot path is taken only when its
// rate clears FMA's by kMargin, so that a CPU whose two rates are close (none measured so
// far) would not flip between the paths, whose bf16 results differ in the last bits, from
// one process to the next.
#include <algorithm>
#include <chrono>

#include "gemm_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace phx::kernels::gemm_detail {

#if defined(__x86_64__)
namespace {

constexpr int kChains = 12;   // independent accumulators: more than latency x ports
constexpr int kSteps = 2048;  // per chain and trial: about 10 us of FMAs
constexpr int kTrials = 5;    // the fastest of each counts: a preempted trial is slower
constexpr double kMargin = 1.25;

// Both return a value that depends on every step, so that nothing is left out.
__attribute__((target("avx512f"))) float fma_chains(int steps) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(float(j));
  const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(0.001f);
  for (int i = 0; i < steps; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], x, y);
  for (int j = 1; j < kChains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return _mm512_cvtss_f32(acc[0]);
}

__attribute__((target("avx512f,avx512bf16"))) float dot_chains(int steps) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(float(j));
  const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3a80);  // 2^-10: no overflow, no subnormal
  for (int i = 0; i < steps; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], x, x);
  for (int j = 1; j < kChains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return _mm512_cvtss_f32(acc[0]);
}

template <class Loop>
double fastest_seconds(Loop loop) {
  double best = 1e30;
  volatile float sink = 0;
  for (int t = 0; t < kTrials; ++t) {
    const auto start = std::chrono::steady_clock::now();
    sink = sink + loop(kSteps);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  return best;
}

}  // namespace

bool bf16_dot_outpaces_fma() {
  static const bool outpaces = [] {
    fma_chains(kSteps);  // the first AVX-512 instructions may run while the core ramps up
    const double fma = fastest_seconds(fma_chains);
    const double dot = fastest_seconds(dot_chains);
    // Flops per second: 32 per FMA (16 lanes), 64 per VDPBF16PS (16 lanes of 2 products).
    return 64.0 / dot > kMargin * 32.0 / fma;
  }();
  return outpaces;
}

#else

bool bf16_dot_outpaces_fma() { return false; }

#endif

}  // namespace phx::kernels::gemm_detail
