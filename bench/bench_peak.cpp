// The CPU's roofs, measured: the peak f32 FMA rate and the memory bandwidth, which
// phx-plot roofline draws the CPU's ops under (docs/plots.md).
// - peak_fma_f32_avx2 and peak_fma_f32_avx512: fused multiply-adds on many independent
//   vector accumulators, on one core (threads:1) and on every core; the counter FLOPS
//   (2 per lane per FMA). Each variant runs only where the CPU has its instructions,
//   chosen at run time (__builtin_cpu_supports), compiled with target attributes so that
//   the program itself still runs on any x86-64.
// - peak_stream_copy and peak_stream_triad: STREAM's copy (b = a) and triad
//   (a = b + s * c) over arrays far larger than the caches, on one core and on every core;
//   the counter bytes_per_second counts the bytes read and written (STREAM's convention,
//   not the write-allocate reads).
//   bench_peak [--benchmark_filter=fma ...]
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstddef>
#include <thread>
#include <vector>

namespace {

// Enough independent chains to cover the FMA latency (4 to 5 cycles) on two FMA ports.
constexpr int kAccumulators = 12;
constexpr int kFmasPerPass = 1024;  // per accumulator, between checks of the loop state
// Three arrays of 32 Mi floats (128 MiB each): far beyond any last-level cache.
constexpr size_t kStreamFloats = size_t{32} << 20;

__attribute__((target("avx2,fma"))) float fma_pass_avx2(int passes) {
  __m256 acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm256_set1_ps(0.001f * static_cast<float>(j));
  // Multiplier and addend that keep the values finite and far from subnormal.
  const __m256 multiplier = _mm256_set1_ps(0.999f), addend = _mm256_set1_ps(0.001f);
  for (int p = 0; p < passes; ++p) {
    for (int i = 0; i < kFmasPerPass; ++i) {
      for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm256_fmadd_ps(acc[j], multiplier, addend);
    }
  }
  __m256 sum = acc[0];
  for (int j = 1; j < kAccumulators; ++j) sum = _mm256_add_ps(sum, acc[j]);
  return _mm256_cvtss_f32(sum);
}

__attribute__((target("avx512f"))) float fma_pass_avx512(int passes) {
  __m512 acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm512_set1_ps(0.001f * static_cast<float>(j));
  const __m512 multiplier = _mm512_set1_ps(0.999f), addend = _mm512_set1_ps(0.001f);
  for (int p = 0; p < passes; ++p) {
    for (int i = 0; i < kFmasPerPass; ++i) {
      for (int j = 0; j < kAccumulators; ++j) acc[j] = _mm512_fmadd_ps(acc[j], multiplier, addend);
    }
  }
  __m512 sum = acc[0];
  for (int j = 1; j < kAccumulators; ++j) sum = _mm512_add_ps(sum, acc[j]);
  // Through memory: GCC 12 warns falsely inside _mm512_reduce_add_ps.
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

template <float (*kernel)(int), int kLanes>
void peak_fma(benchmark::State& state) {
  int passes = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(passes);  // "changed" each time: no call is hoisted or folded
    benchmark::DoNotOptimize(kernel(passes));
  }
  // Summed over the threads, divided by the wall-clock time: the rate of all cores together.
  state.counters["FLOPS"] = benchmark::Counter(
      2.0 * kLanes * kAccumulators * kFmasPerPass * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

// The arrays every stream benchmark shares, first touched in main before any timing.
std::vector<float> g_a, g_b, g_c;

// This thread's part of the arrays: [begin, end).
std::pair<size_t, size_t> slice(const benchmark::State& state) {
  const size_t per_thread = kStreamFloats / static_cast<size_t>(state.threads());
  const size_t begin = per_thread * static_cast<size_t>(state.thread_index());
  return {begin, begin + per_thread};
}

void peak_stream_copy(benchmark::State& state) {
  const auto [begin, end] = slice(state);
  for (auto _ : state) {
    for (size_t i = begin; i < end; ++i) g_b[i] = g_a[i];
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * (end - begin) * 4));
}

void peak_stream_triad(benchmark::State& state) {
  const auto [begin, end] = slice(state);
  const float scalar = 3.0f;
  for (auto _ : state) {
    for (size_t i = begin; i < end; ++i) g_a[i] = g_b[i] + scalar * g_c[i];
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 3 * (end - begin) * 4));
}

// On one core, then on every core; timed by the wall clock, which the threads share.
void on_one_and_all_cores(benchmark::internal::Benchmark* bench) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  bench->Threads(1)->UseRealTime();
  if (cores > 1) bench->Threads(cores);
}

}  // namespace

int main(int argc, char** argv) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    on_one_and_all_cores(
        benchmark::RegisterBenchmark("peak_fma_f32_avx2", peak_fma<fma_pass_avx2, 8>));
  if (__builtin_cpu_supports("avx512f"))
    on_one_and_all_cores(
        benchmark::RegisterBenchmark("peak_fma_f32_avx512", peak_fma<fma_pass_avx512, 16>));
  g_a.assign(kStreamFloats, 1.0f);
  g_b.assign(kStreamFloats, 2.0f);
  g_c.assign(kStreamFloats, 0.5f);
  on_one_and_all_cores(benchmark::RegisterBenchmark("peak_stream_copy", peak_stream_copy));
  on_one_and_all_cores(benchmark::RegisterBenchmark("peak_stream_triad", peak_stream_triad));

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
