// The CPU's roofs, measured: the peak rate of the arithmetic the CPU kernels use and the
// memory bandwidth. phx-plot roofline draws the CPU's ops under the f32 FMA peak and the
// bandwidth (docs/plots.md); bench_gemm divides its rates by the peaks it times itself.
// - peak_fma_f32_avx2, peak_fma_f32_avx512 (counter FLOPS), peak_dot_bf16_avx512bf16
//   (VDPBF16PS, FLOPS), peak_dot_i8_avx512vnni, peak_dot_i8_avxvnni (VPDPBUSD, zmm and
//   ymm) and peak_dot_i8_avx2 (VPMADDUBSW + VPMADDWD + VPADDD; the three count OPS, 2 per
//   int8 multiply-add): the loops of peak_kernels.h this CPU has, on one core (threads:1)
//   and on every core.
// - peak_stream_copy and peak_stream_triad: STREAM's copy (b = a) and triad
//   (a = b + s * c) over arrays far larger than the caches, on one core and on every core;
//   the counter bytes_per_second counts the bytes read and written (STREAM's convention,
//   not the write-allocate reads).
// It prints the instruction-set extensions it found first, and a table of the peaks, per
// core and for all cores (the median where there are repetitions), last.
//   bench_peak [--benchmark_filter=dot ...]
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "peak_kernels.h"

namespace {

namespace peak = phx_bench::peak;

// Three arrays of 32 Mi floats (128 MiB each): far beyond any last-level cache.
constexpr size_t kStreamFloats = size_t{32} << 20;

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

// Prints as usual and keeps each run's counters by name and thread count: the median
// with repetitions, else the run itself.
class PeakReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type != Run::RT_Iteration && !median) continue;
      counters_[{run.run_name.function_name, run.threads}] = run.counters;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // Negative when it did not run.
  double get(const std::string& name, int threads, const char* counter) const {
    auto it = counters_.find({name, threads});
    if (it == counters_.end()) return -1;
    auto c = it->second.find(counter);
    return c == it->second.end() ? -1 : c->second.value;
  }

 private:
  std::map<std::pair<std::string, int>, benchmark::UserCounters> counters_;
};

void print_cell(double value, double scale) {
  if (value < 0)
    std::printf(" %10s", "-");
  else
    std::printf(" %10.1f", value / scale);
}

void print_summary(const PeakReporter& reporter, const std::vector<peak::Loop>& loops, int cores) {
  std::printf("\nPeaks (G/s: FLOP/s for f32 and bf16, int8 OP/s), 1 core and %d cores\n", cores);
  std::printf("%-26s %-30s %10s %10s\n", "loop", "instruction", "1 core", "all cores");
  for (const peak::Loop& loop : loops) {
    std::printf("%-26s %-30s", loop.name, loop.instruction);
    const char* counter = peak::counter_name(loop.kind);
    print_cell(reporter.get(loop.name, 1, counter), 1e9);
    print_cell(cores > 1 ? reporter.get(loop.name, cores, counter) : -1, 1e9);
    std::printf("\n");
  }
  for (const char* stream : {"peak_stream_copy", "peak_stream_triad"}) {
    std::printf("%-26s %-30s", stream, "GB/s");
    print_cell(reporter.get(stream, 1, "bytes_per_second"), 1e9);
    print_cell(cores > 1 ? reporter.get(stream, cores, "bytes_per_second") : -1, 1e9);
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  // First, so that every figure below reads against it; also in the JSON's context.
  const std::string isa = peak::isa_line();
  std::printf("ISA: %s\n", isa.c_str());
  std::fflush(stdout);
  benchmark::AddCustomContext("isa", isa);

  const std::vector<peak::Loop> loops = peak::available_loops();
  for (const peak::Loop& loop : loops)
    on_one_and_all_cores(benchmark::RegisterBenchmark(
        loop.name, [&loop](benchmark::State& state) { peak::time_loop(state, loop); }));
  g_a.assign(kStreamFloats, 1.0f);
  g_b.assign(kStreamFloats, 2.0f);
  g_c.assign(kStreamFloats, 0.5f);
  on_one_and_all_cores(benchmark::RegisterBenchmark("peak_stream_copy", peak_stream_copy));
  on_one_and_all_cores(benchmark::RegisterBenchmark("peak_stream_triad", peak_stream_triad));

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  PeakReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_summary(reporter, loops, static_cast<int>(std::thread::hardware_concurrency()));
  benchmark::Shutdown();
  return 0;
}
