// Square GEMM, C = A . B at N = 256 ... 2048, in GFLOP/s (2 N^3 flops per product):
// - on the CPU device through the C API, f32, bf16 and f16 (out in the input's dtype):
//   the tensors are created and filled once, outside the timed loop; each iteration is
//   phx_op_run + phx_stream_synchronize, so dispatch is included;
// - OpenBLAS cblas_sgemm on the same sizes, in the same process, with as many threads.
// At the end it prints the ratio of the CPU plugin to OpenBLAS per N.
//
// Threads: PHX_BENCH_THREADS, else one per hardware thread, for both libraries.
// OpenBLAS reads OPENBLAS_NUM_THREADS when it is loaded, before main, so the count is
// set with openblas_set_num_threads instead; the CPU plugin gets it through
// phx_context_options and PHX_NUM_THREADS.
// The benchmarks run size by size, so that the two libraries compared at one N run close
// together in time, under the same load.
#include <cblas.h>

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "bench_common.h"

namespace {

using phx_bench::check;
using phx_bench::CpuDevice;
using phx_bench::Tensor;

constexpr int64_t kSizes[] = {256, 512, 1024, 2048};
// The counter of flops, a rate: the console shows it per second, e.g. "36.6G/s".
constexpr const char* kFlops = "FLOPS";

CpuDevice* g_cpu = nullptr;

std::vector<float> random_values(size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = distribution(generator);
  return values;
}

void set_flops(benchmark::State& state, int64_t n, phx_dtype dtype) {
  const double size = static_cast<double>(n);
  // kIsRate divides by the measured time, the wall clock here (UseRealTime).
  state.counters[kFlops] =
      benchmark::Counter(2.0 * size * size * size * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  phx_bench::set_gemm_intensity(state, n, dtype, dtype);
}

// Fills tensor (n x n, of any float dtype) with random values: uploaded as f32, then
// cast on the device, so that this program needs no 16-bit conversion of its own.
// Returns false when the device cannot cast to dtype.
bool fill_random(const CpuDevice& cpu, const Tensor& tensor, phx_dtype dtype, int64_t n,
                 unsigned seed) {
  auto values = random_values(static_cast<size_t>(n * n), seed);
  if (dtype == PHX_DTYPE_F32) {
    check(phx_tensor_upload(tensor.get(), 0, values.data(), values.size() * sizeof(float)),
          "phx_tensor_upload");
    return true;
  }
  int castable = 0;
  check(phx_device_supports(cpu.context, cpu.device, PHX_OP_CAST, PHX_DTYPE_F32, &castable),
        "phx_device_supports");
  if (!castable) return false;
  Tensor staging(cpu, PHX_DTYPE_F32, {n, n});
  check(phx_tensor_upload(staging.get(), 0, values.data(), values.size() * sizeof(float)),
        "phx_tensor_upload");
  phx_tensor input = staging.get();
  phx_tensor output = tensor.get();
  phx_op_desc cast = phx_bench::op_desc(PHX_OP_CAST, &input, 1, &output);
  check(phx_op_run(cpu.stream, &cast, nullptr), "phx_op_run(cast)");
  check(phx_stream_synchronize(cpu.stream), "phx_stream_synchronize");
  return true;
}

void gemm_phynexus(benchmark::State& state, phx_dtype dtype) {
  const CpuDevice& cpu = *g_cpu;
  const int64_t n = state.range(0);
  int supported = 0;
  check(phx_device_supports(cpu.context, cpu.device, PHX_OP_MATMUL, dtype, &supported),
        "phx_device_supports");
  if (!supported) {
    state.SkipWithError("the CPU device does not support matmul for this dtype");
    return;
  }
  Tensor a(cpu, dtype, {n, n}), b(cpu, dtype, {n, n}), c(cpu, dtype, {n, n});
  if (!fill_random(cpu, a, dtype, n, 1) || !fill_random(cpu, b, dtype, n, 2)) {
    state.SkipWithError("the CPU device cannot cast f32 to this dtype");
    return;
  }
  const phx_tensor inputs[2] = {a.get(), b.get()};
  const phx_tensor output = c.get();
  const phx_op_desc matmul = phx_bench::op_desc(PHX_OP_MATMUL, inputs, 2, &output);

  for (auto _ : state) {
    check(phx_op_run(cpu.stream, &matmul, nullptr), "phx_op_run(matmul)");
    check(phx_stream_synchronize(cpu.stream), "phx_stream_synchronize");
  }
  set_flops(state, n, dtype);
}

void gemm_openblas(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto count = static_cast<size_t>(n * n);
  auto a = random_values(count, 1);
  auto b = random_values(count, 2);
  std::vector<float> c(count);
  const auto dim = static_cast<blasint>(n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dim, dim, dim, 1.0f, a.data(), dim,
                b.data(), dim, 0.0f, c.data(), dim);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, n, PHX_DTYPE_F32);
  // OpenBLAS's threads spin for a while (about 2^28 cycles) after a call before they
  // sleep; let them, untimed, so that they do not take the cores of the next benchmark.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}

// Timed by the wall clock: the work runs on several threads.
void at_size(benchmark::internal::Benchmark* bench, int64_t n) {
  bench->Arg(n)->UseRealTime()->Unit(benchmark::kMillisecond);
}

// "  12.3" or "     -" for a benchmark that did not run.
std::string cell(double value, int width, int precision) {
  char text[32];
  if (value < 0 || !std::isfinite(value))
    std::snprintf(text, sizeof text, "%*s", width, "-");
  else
    std::snprintf(text, sizeof text, "%*.*f", width, precision, value);
  return text;
}

void print_summary(const phx_bench::RecordingReporter& reporter, unsigned threads) {
  // Negative (shown "-") for a benchmark that did not run.
  auto gflops = [&](const std::string& name) { return reporter.counter(name, kFlops) / 1e9; };
  // OPENBLAS_VERSION reads " OpenBLAS 0.3.21 ", spaces included.
  std::printf("\nGEMM, GFLOP/s, %u thread%s; CPU plugin ISA: %s;%s(core %s)\n", threads,
              threads == 1 ? "" : "s", g_cpu->isa.empty() ? "?" : g_cpu->isa.c_str(),
              OPENBLAS_VERSION, openblas_get_corename());
  std::printf("%6s %10s %10s %14s %10s %10s\n", "N", "phx f32", "OpenBLAS", "phx/OpenBLAS",
              "phx bf16", "phx f16");
  for (int64_t n : kSizes) {
    const std::string arg = "/" + std::to_string(n);
    double phx = gflops("gemm_f32_phx" + arg);
    double blas = gflops("gemm_f32_openblas" + arg);
    double ratio = phx > 0 && blas > 0 ? phx / blas : -1;
    std::printf("%6lld %s %s %s %s %s\n", static_cast<long long>(n), cell(phx, 10, 1).c_str(),
                cell(blas, 10, 1).c_str(), cell(ratio, 14, 2).c_str(),
                cell(gflops("gemm_bf16_phx" + arg), 10, 1).c_str(),
                cell(gflops("gemm_f16_phx" + arg), 10, 1).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned threads = phx_bench::bench_threads();
  openblas_set_num_threads(static_cast<int>(threads));
  CpuDevice cpu = phx_bench::open_cpu_device(threads);
  g_cpu = &cpu;

  for (int64_t n : kSizes) {
    at_size(benchmark::RegisterBenchmark("gemm_f32_phx", gemm_phynexus, PHX_DTYPE_F32), n);
    at_size(benchmark::RegisterBenchmark("gemm_f32_openblas", gemm_openblas), n);
    at_size(benchmark::RegisterBenchmark("gemm_bf16_phx", gemm_phynexus, PHX_DTYPE_BF16), n);
    at_size(benchmark::RegisterBenchmark("gemm_f16_phx", gemm_phynexus, PHX_DTYPE_F16), n);
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  phx_bench::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_summary(reporter, threads);
  benchmark::Shutdown();

  g_cpu = nullptr;
  phx_bench::close_cpu_device(cpu);
  return 0;
}
