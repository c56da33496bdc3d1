// The machine's own limits for the arithmetic the CPU kernels use, as loops any program
// could write: many independent accumulators, each updated by one instruction (or, for
// AVX2 int8, by the three that stand in for one) per step, so that the rate is the
// issue rate of the instruction and not its latency. bench_peak times every one this
// CPU has, bench_gemm the best of each kind, to give its lines a fraction of the peak.
//
// Each loop runs only where the CPU has its instructions (chosen at run time with
// __builtin_cpu_supports) and is compiled with a target attribute, so that the programs
// still run on any x86-64; elsewhere there is no loop and the tables print "-".
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace phx_bench::peak {

// The kinds the tables divide by.
enum class Kind { kF32, kBf16, kInt8 };

struct Loop {
  const char* name;  // the benchmark's name
  Kind kind;
  const char* instruction;      // what it times, for the printed ISA line
  double ops_per_step;          // per accumulator per step: 2 per multiply-add
  float (*run)(int64_t steps);  // steps per accumulator; returns a value to keep
};

// Enough independent chains to cover a latency of 5 to 6 cycles on two ports.
constexpr int kAccumulators = 12;

#if defined(__x86_64__)

// Lanes summed through memory: GCC 12 warns falsely inside the _mm512_reduce_* helpers.
template <class Vector>
float sum_lanes(const Vector& v) {
  float total = 0;
  if constexpr (sizeof(Vector) == 32 || sizeof(Vector) == 64) {
    alignas(64) int32_t words[sizeof(Vector) / 4];
    __builtin_memcpy(words, &v, sizeof words);
    for (int32_t w : words) total += static_cast<float>(w & 0xff);  // any bits will do
  }
  return total;
}

// Multiplier and addend that keep the values finite and far from subnormal.
__attribute__((target("avx2,fma"))) inline float fma_f32_avx2(int64_t steps) {
  __m256 acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm256_set1_ps(0.001f * static_cast<float>(j));
  const __m256 multiplier = _mm256_set1_ps(0.999f), addend = _mm256_set1_ps(0.001f);
  for (int64_t i = 0; i < steps; ++i)
    for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm256_fmadd_ps(acc[j], multiplier, addend);
  for (int j = 1; j < kAccumulators; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  return sum_lanes(acc[0]);
}

__attribute__((target("avx512f"))) inline float fma_f32_avx512(int64_t steps) {
  __m512 acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm512_set1_ps(0.001f * static_cast<float>(j));
  const __m512 multiplier = _mm512_set1_ps(0.999f), addend = _mm512_set1_ps(0.001f);
  for (int64_t i = 0; i < steps; ++i)
    for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm512_fmadd_ps(acc[j], multiplier, addend);
  for (int j = 1; j < kAccumulators; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return sum_lanes(acc[0]);
}

// VDPBF16PS: 16 lanes, each adding 2 bf16 products. 2^-10 squared, 2 per step, stays far
// below the accumulators' magnitude for any run this takes: no overflow, no subnormals.
__attribute__((target("avx512f,avx512bf16"))) inline float dot_bf16_avx512(int64_t steps) {
  __m512 acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3a80);  // 2^-10 in bf16
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3a80);
  for (int64_t i = 0; i < steps; ++i)
    for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  for (int j = 1; j < kAccumulators; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return sum_lanes(acc[0]);
}

// VPDPBUSD: 16 (zmm) or 8 (ymm) int32 lanes, each adding 4 u8 x i8 products; the sums
// wrap, which is defined for these instructions.
__attribute__((target("avx512f,avx512vnni"))) inline float dot_i8_avx512vnni(int64_t steps) {
  __m512i acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm512_set1_epi32(j);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-5);
  for (int64_t i = 0; i < steps; ++i)
    for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  for (int j = 1; j < kAccumulators; ++j) acc[0] = _mm512_add_epi32(acc[0], acc[j]);
  return sum_lanes(acc[0]);
}

__attribute__((target("avx2,avxvnni"))) inline float dot_i8_avxvnni(int64_t steps) {
  __m256i acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm256_set1_epi32(j);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-5);
  for (int64_t i = 0; i < steps; ++i)
    for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm256_dpbusd_avx_epi32(acc[j], a, b);
  for (int j = 1; j < kAccumulators; ++j) acc[0] = _mm256_add_epi32(acc[0], acc[j]);
  return sum_lanes(acc[0]);
}

// What AVX2 has instead: VPMADDUBSW (u8 x i8 pairs into saturated int16), VPMADDWD by
// ones (int16 pairs into int32), VPADDD; 32 products per step, as gemm_s8_avx2 computes.
// The accumulator is the i8 operand, so that the compiler cannot hoist the products out
// of the loop as it could with constant operands; that chain (11 cycles on Intel cores)
// over 12 accumulators still issues the two multiplies of a step every cycle.
__attribute__((target("avx2"))) inline float dot_i8_avx2(int64_t steps) {
  __m256i acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm256_set1_epi32(j);
  const __m256i a = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < steps; ++i)
    for (int j = 0; j < kAccumulators; ++j)
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(_mm256_maddubs_epi16(a, acc[j]), ones));
  for (int j = 1; j < kAccumulators; ++j) acc[0] = _mm256_add_epi32(acc[0], acc[j]);
  return sum_lanes(acc[0]);
}

#endif  // __x86_64__

// The loops this CPU can run, best of each kind first.
inline std::vector<Loop> available_loops() {
  std::vector<Loop> loops;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512)
    loops.push_back(
        {"peak_fma_f32_avx512", Kind::kF32, "vfmadd231ps zmm", 2.0 * 16, fma_f32_avx512});
  if (avx2)
    loops.push_back({"peak_fma_f32_avx2", Kind::kF32, "vfmadd231ps ymm", 2.0 * 8, fma_f32_avx2});
  if (avx512 && __builtin_cpu_supports("avx512bf16"))
    loops.push_back(
        {"peak_dot_bf16_avx512bf16", Kind::kBf16, "vdpbf16ps zmm", 2.0 * 32, dot_bf16_avx512});
  if (avx512 && __builtin_cpu_supports("avx512vnni"))
    loops.push_back(
        {"peak_dot_i8_avx512vnni", Kind::kInt8, "vpdpbusd zmm", 2.0 * 64, dot_i8_avx512vnni});
  if (avx2 && __builtin_cpu_supports("avxvnni"))
    loops.push_back({"peak_dot_i8_avxvnni", Kind::kInt8, "vpdpbusd ymm", 2.0 * 32, dot_i8_avxvnni});
  if (avx2)
    loops.push_back(
        {"peak_dot_i8_avx2", Kind::kInt8, "vpmaddubsw+vpmaddwd+vpaddd ymm", 2.0 * 32, dot_i8_avx2});
#endif
  return loops;
}

// The extensions the loops and the CPU kernels choose between, as the CPU reports them:
// "avx2 fma avx512f avx512bf16 avx512vnni avxvnni", or "none of ..." on a plain x86-64.
inline std::string isa_line() {
  std::string found;
#if defined(__x86_64__)
  __builtin_cpu_init();
  auto add = [&](bool has, const char* name) {
    if (has) found += found.empty() ? name : std::string(" ") + name;
  };
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bw"), "avx512bw");
  add(__builtin_cpu_supports("avx512bf16"), "avx512bf16");
  add(__builtin_cpu_supports("avx512vnni"), "avx512vnni");
  add(__builtin_cpu_supports("avxvnni"), "avxvnni");
#endif
  return found.empty() ? "none of avx2, avx512f, avx512bf16, avx512vnni, avxvnni" : found;
}

inline const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kF32:
      return "f32";
    case Kind::kBf16:
      return "bf16";
    default:
      return "int8";
  }
}

// The counter a loop's rate is in: "FLOPS" for the float kinds, "OPS" for int8 (2 per
// multiply-add); phx-plot roofline draws the best of each kind as its precision's roof.
inline const char* counter_name(Kind kind) { return kind == Kind::kInt8 ? "OPS" : "FLOPS"; }

constexpr int64_t kStepsPerIteration = 4096;

// The benchmark's body: the rate, summed over the threads and divided by the wall-clock
// time (UseRealTime), is that of all the cores that ran it together.
inline void time_loop(benchmark::State& state, const Loop& loop) {
  int64_t steps = kStepsPerIteration;
  for (auto _ : state) {
    benchmark::DoNotOptimize(steps);  // "changed" each time: no call is hoisted or folded
    benchmark::DoNotOptimize(loop.run(steps));
  }
  state.counters[counter_name(loop.kind)] =
      benchmark::Counter(loop.ops_per_step * kAccumulators * kStepsPerIteration *
                             static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

}  // namespace phx_bench::peak
