// Square GEMM, C = A . B at N = 256 ... 2048, in GFLOP/s (2 N^3 flops per product):
// - on the CPU device through the C API, f32, bf16 and f16 (out in the input's dtype),
//   and qmatmul i8 x i8 with the raw i32 out (GOP/s, 2 per multiply-add): the tensors
//   are created and filled once, outside the timed loop; each iteration is
//   phx_op_run + phx_stream_synchronize, so dispatch is included;
// - OpenBLAS cblas_sgemm on the same sizes, in the same process, with as many threads;
// - the machine's peak for each kind (peak_kernels.h: the best f32 FMA, bf16 dot and
//   int8 dot loop this CPU has), on as many threads;
// - non-square f32 products that models run (issue #19): M = 1, 4, 16 and 64 rows against
//   K = N = 4096 (a decoder's token steps: memory-bound, B read once per product), and
//   197 x 768 x 3072 (a ViT-B MLP layer), on the CPU device and with OpenBLAS;
// - on the CPU device, conv2d (f32, a 3 x 3 convolution of a ResNet stage) and causal
//   attention (f32, 8 heads of 64, sequence 1024 and 2048).
// At the end it prints, per N, each rate, its fraction of the peak of its kind (bf16
// against the bf16 dot where the CPU has one, else against f32 FMA) and the ratio of the
// CPU plugin to OpenBLAS; then conv2d and attention likewise. Each peak is timed at the
// start, for the header, and again just before the benchmarks that are fractions of it
// (named "<peak loop>/<what follows>", e.g. peak_fma_f32_avx512/n1024): on a host shared
// with other work the 2-thread f32 peak was seen anywhere from 268 to 353 GFLOP/s within
// minutes, so a fraction compares two rates taken seconds apart, not minutes.
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
#include "peak_kernels.h"

namespace {

using phx_bench::check;
using phx_bench::CpuDevice;
using phx_bench::Tensor;
namespace peak = phx_bench::peak;

constexpr int64_t kSizes[] = {256, 512, 1024, 2048};
struct Shape {
  int64_t m, k, n;
};
constexpr Shape kShapes[] = {
    {1, 4096, 4096}, {4, 4096, 4096}, {16, 4096, 4096}, {64, 4096, 4096}, {197, 768, 3072}};
// The counter of flops, a rate: the console shows it per second, e.g. "36.6G/s".
constexpr const char* kFlops = "FLOPS";
constexpr const char* kOps = "OPS";  // integer: 2 per multiply-add
// The 3 x 3 convolution: x [4, 256, 28, 28], 256 filters, padding 1 (ResNet-50's third
// stage, batch 4): 2 * 4 * 256 * 256 * 9 * 28 * 28 = 3.7 GFLOP.
constexpr int64_t kConvBatch = 4, kConvChannels = 256, kConvSide = 28;
constexpr int64_t kAttentionSizes[] = {1024, 2048};
constexpr int64_t kAttentionHeads = 8, kAttentionDim = 64;

CpuDevice* g_cpu = nullptr;

std::vector<float> random_values(size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = distribution(generator);
  return values;
}

// Times op on stream: each iteration runs it and waits for it.
void time_op(benchmark::State& state, phx_stream stream, const phx_op_desc& op) {
  for (auto _ : state) {
    check(phx_op_run(stream, &op, nullptr), phx_op_name(op.op));
    check(phx_stream_synchronize(stream), "phx_stream_synchronize");
  }
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

  time_op(state, cpu.stream, matmul);
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

// Random f32 values in a tensor of the given shape.
void fill_f32(const Tensor& tensor, int64_t count, unsigned seed) {
  auto values = random_values(static_cast<size_t>(count), seed);
  check(phx_tensor_upload(tensor.get(), 0, values.data(), values.size() * sizeof(float)),
        "phx_tensor_upload");
}

// C [M, N] = A [M, K] . B [K, N], f32: args M, K, N.
void shape_flops(benchmark::State& state) {
  state.counters[kFlops] = benchmark::Counter(
      2.0 * static_cast<double>(state.range(0) * state.range(1) * state.range(2)),
      benchmark::Counter::kIsIterationInvariantRate);
}

void gemm_shape_phynexus(benchmark::State& state) {
  const CpuDevice& cpu = *g_cpu;
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  Tensor a(cpu, PHX_DTYPE_F32, {m, k}), b(cpu, PHX_DTYPE_F32, {k, n}),
      c(cpu, PHX_DTYPE_F32, {m, n});
  fill_f32(a, m * k, 1);
  fill_f32(b, k * n, 2);
  const phx_tensor inputs[2] = {a.get(), b.get()};
  const phx_tensor output = c.get();
  time_op(state, cpu.stream, phx_bench::op_desc(PHX_OP_MATMUL, inputs, 2, &output));
  shape_flops(state);
}

void gemm_shape_openblas(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  auto a = random_values(static_cast<size_t>(m * k), 1);
  auto b = random_values(static_cast<size_t>(k * n), 2);
  std::vector<float> c(static_cast<size_t>(m * n));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
                static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a.data(),
                static_cast<blasint>(k), b.data(), static_cast<blasint>(n), 0.0f, c.data(),
                static_cast<blasint>(n));
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  shape_flops(state);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // as gemm_openblas
}

// qmatmul i8 x i8, per-tensor scales, no zero points, the raw i32 accumulators out.
void qmatmul_phynexus(benchmark::State& state) {
  const CpuDevice& cpu = *g_cpu;
  const int64_t n = state.range(0);
  Tensor a(cpu, PHX_DTYPE_I8, {n, n}), b(cpu, PHX_DTYPE_I8, {n, n}), c(cpu, PHX_DTYPE_I32, {n, n});
  Tensor a_scale(cpu, PHX_DTYPE_F32, {1}), b_scale(cpu, PHX_DTYPE_F32, {1});
  for (const Tensor* t : {&a, &b}) {
    std::vector<int8_t> values(static_cast<size_t>(n * n));
    std::mt19937 generator(t == &a ? 1 : 2);
    for (int8_t& v : values) v = static_cast<int8_t>(generator() % 255 - 127);
    check(phx_tensor_upload(t->get(), 0, values.data(), values.size()), "phx_tensor_upload");
  }
  const float scale = 0.01f;
  for (const Tensor* t : {&a_scale, &b_scale})
    check(phx_tensor_upload(t->get(), 0, &scale, sizeof scale), "phx_tensor_upload");
  const phx_tensor inputs[5] = {a.get(), b.get(), a_scale.get(), nullptr, b_scale.get()};
  const phx_tensor output = c.get();
  const phx_op_desc qmatmul = phx_bench::op_desc(PHX_OP_QMATMUL, inputs, 5, &output);
  time_op(state, cpu.stream, qmatmul);
  // OPS rather than FLOPS: phx-plot draws FLOP rates only, under float roofs.
  const double size = static_cast<double>(n);
  state.counters[kOps] =
      benchmark::Counter(2.0 * size * size * size, benchmark::Counter::kIsIterationInvariantRate);
}

void conv2d_phynexus(benchmark::State& state) {
  const CpuDevice& cpu = *g_cpu;
  const int64_t b = kConvBatch, c = kConvChannels, side = kConvSide;
  Tensor x(cpu, PHX_DTYPE_F32, {b, c, side, side}), w(cpu, PHX_DTYPE_F32, {c, c, 3, 3});
  Tensor y(cpu, PHX_DTYPE_F32, {b, c, side, side});
  fill_f32(x, b * c * side * side, 3);
  fill_f32(w, c * c * 9, 4);
  phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;
  params.padding[0] = params.padding[1] = params.padding[2] = params.padding[3] = 1;
  const phx_tensor inputs[2] = {x.get(), w.get()};
  const phx_tensor output = y.get();
  phx_op_desc conv = phx_bench::op_desc(PHX_OP_CONV2D, inputs, 2, &output);
  conv.params = &params;
  time_op(state, cpu.stream, conv);
  state.counters[kFlops] =
      benchmark::Counter(2.0 * static_cast<double>(b * c * c * 9 * side * side),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void attention_phynexus(benchmark::State& state) {
  const CpuDevice& cpu = *g_cpu;
  const int64_t s = state.range(0), h = kAttentionHeads, d = kAttentionDim;
  Tensor q(cpu, PHX_DTYPE_F32, {1, h, s, d}), k(cpu, PHX_DTYPE_F32, {1, h, s, d});
  Tensor v(cpu, PHX_DTYPE_F32, {1, h, s, d}), o(cpu, PHX_DTYPE_F32, {1, h, s, d});
  fill_f32(q, h * s * d, 5);
  fill_f32(k, h * s * d, 6);
  fill_f32(v, h * s * d, 7);
  phx_attention_params params = PHX_ATTENTION_PARAMS_INIT;
  params.mask = PHX_ATTENTION_MASK_CAUSAL;
  const phx_tensor inputs[3] = {q.get(), k.get(), v.get()};
  const phx_tensor output = o.get();
  phx_op_desc attention = phx_bench::op_desc(PHX_OP_ATTENTION, inputs, 3, &output);
  attention.params = &params;
  time_op(state, cpu.stream, attention);
  // q k^T and p v, 2 flops per multiply-add, over half the scores (causal), as
  // bench_vulkan counts them.
  state.counters[kFlops] =
      benchmark::Counter(4.0 * static_cast<double>(s) * static_cast<double>(s * d * h) / 2,
                         benchmark::Counter::kIsIterationInvariantRate);
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

// The best loop of each kind this CPU has (available_loops lists them best first).
const peak::Loop* best_loop(const std::vector<peak::Loop>& loops, peak::Kind kind) {
  for (const peak::Loop& loop : loops)
    if (loop.kind == kind) return &loop;
  return nullptr;
}

// The name a peak loop is timed under just before the benchmarks tagged `tag` (empty: at
// the start).
std::string peak_name(const peak::Loop& loop, const std::string& tag) {
  return tag.empty() ? loop.name : std::string(loop.name) + "/" + tag;
}

// The tags of the peaks timed before each group of benchmarks.
std::string size_tag(int64_t n) { return "n" + std::to_string(n); }
std::string attention_tag(int64_t s) { return "attention" + std::to_string(s); }
constexpr const char* kShapesTag = "shapes";
constexpr const char* kConvTag = "conv2d";

void print_summary(const phx_bench::RecordingReporter& reporter,
                   const std::vector<peak::Loop>& loops, unsigned threads) {
  // Negative (shown "-") for a benchmark that did not run.
  auto gflops = [&](const std::string& name) { return reporter.counter(name, kFlops) / 1e9; };
  auto ratio = [](double x, double y) { return x > 0 && y > 0 ? x / y : -1; };
  const bool has_bf16_dot = best_loop(loops, peak::Kind::kBf16) != nullptr;
  // The peak of kind timed just before the benchmarks tagged `tag`, else (unless
  // near_only) the one timed at the start; bf16 against f32 FMA where the CPU has no bf16
  // dot.
  auto peak_of = [&](peak::Kind kind, const std::string& tag, bool near_only = false) {
    if (kind == peak::Kind::kBf16 && !has_bf16_dot) kind = peak::Kind::kF32;
    const peak::Loop* loop = best_loop(loops, kind);
    if (loop == nullptr) return -1.0;
    // Recorded as "<name>/": the reporter's key leaves the thread count out.
    auto rate = [&](const std::string& t) {
      return reporter.counter(peak_name(*loop, t) + "/", peak::counter_name(kind)) / 1e9;
    };
    const double near = tag.empty() ? -1.0 : rate(tag);
    return near > 0 || near_only ? near : rate("");
  };

  std::printf("\nISA: %s\n", peak::isa_line().c_str());
  std::printf("Peaks at the start, G/s on %u thread%s:", threads, threads == 1 ? "" : "s");
  for (peak::Kind kind : {peak::Kind::kF32, peak::Kind::kBf16, peak::Kind::kInt8}) {
    const peak::Loop* loop = best_loop(loops, kind);
    if (loop != nullptr)
      std::printf(" %s %s (%s);", peak::kind_name(kind), cell(peak_of(kind, ""), 0, 1).c_str(),
                  loop->instruction);
  }
  std::printf(
      "\nThe same peaks timed again just before each row's benchmarks, G/s:\n%-36s %9s %9s %9s\n",
      "", "f32", "bf16", "int8");
  auto print_peaks = [&](const std::string& label, const std::string& tag) {
    std::printf("%-36s %s %s %s\n", label.c_str(),
                cell(peak_of(peak::Kind::kF32, tag, true), 9, 1).c_str(),
                cell(has_bf16_dot ? peak_of(peak::Kind::kBf16, tag, true) : -1, 9, 1).c_str(),
                cell(peak_of(peak::Kind::kInt8, tag, true), 9, 1).c_str());
  };
  for (int64_t n : kSizes) print_peaks("N " + std::to_string(n), size_tag(n));
  print_peaks("non-square shapes", kShapesTag);
  print_peaks("conv2d", kConvTag);
  for (int64_t s : kAttentionSizes)
    print_peaks("attention S " + std::to_string(s), attention_tag(s));
  // OPENBLAS_VERSION reads " OpenBLAS 0.3.21 ", spaces included.
  std::printf("\nGEMM, GFLOP/s (qmatmul GOP/s), %u thread%s; CPU plugin ISA: %s;%s(core %s)\n",
              threads, threads == 1 ? "" : "s", g_cpu->isa.empty() ? "?" : g_cpu->isa.c_str(),
              OPENBLAS_VERSION, openblas_get_corename());
  std::printf("/pk: the fraction of the peak of its kind timed just before; bf16 against %s\n",
              has_bf16_dot ? "the bf16 dot" : "f32 FMA (no bf16 dot on this CPU)");
  std::printf("%6s %9s %5s %9s %5s %8s %9s %5s %9s %9s %5s %9s %5s\n", "N", "phx f32", "/pk",
              "OpenBLAS", "/pk", "phx/BLAS", "phx bf16", "/pk", "bf16/f32", "phx f16", "/pk",
              "q i8", "/pk");
  for (int64_t n : kSizes) {
    const std::string arg = "/" + std::to_string(n), tag = size_tag(n);
    const double f32_peak = peak_of(peak::Kind::kF32, tag);
    const double bf16_peak = peak_of(peak::Kind::kBf16, tag);
    const double int8_peak = peak_of(peak::Kind::kInt8, tag);
    const double phx = gflops("gemm_f32_phx" + arg), blas = gflops("gemm_f32_openblas" + arg);
    const double bf16 = gflops("gemm_bf16_phx" + arg), f16 = gflops("gemm_f16_phx" + arg);
    const double q8 = reporter.counter("qmatmul_i8_phx" + arg, kOps) / 1e9;
    std::printf("%6lld %s %s %s %s %s %s %s %s %s %s %s %s\n", static_cast<long long>(n),
                cell(phx, 9, 1).c_str(), cell(ratio(phx, f32_peak), 5, 2).c_str(),
                cell(blas, 9, 1).c_str(), cell(ratio(blas, f32_peak), 5, 2).c_str(),
                cell(ratio(phx, blas), 8, 2).c_str(), cell(bf16, 9, 1).c_str(),
                cell(ratio(bf16, bf16_peak), 5, 2).c_str(), cell(ratio(bf16, phx), 9, 2).c_str(),
                cell(f16, 9, 1).c_str(), cell(ratio(f16, f32_peak), 5, 2).c_str(),
                cell(q8, 9, 1).c_str(), cell(ratio(q8, int8_peak), 5, 2).c_str());
  }
  std::printf("\nNon-square f32 GEMM, GFLOP/s\n%-18s %9s %5s %9s %5s %8s\n", "M x K x N", "phx f32",
              "/pk", "OpenBLAS", "/pk", "phx/BLAS");
  const double shapes_peak = peak_of(peak::Kind::kF32, kShapesTag);
  for (const Shape& shape : kShapes) {
    const std::string arg = "/" + std::to_string(shape.m) + "/" + std::to_string(shape.k) + "/" +
                            std::to_string(shape.n);
    const double phx = gflops("gemm_shape_f32_phx" + arg);
    const double blas = gflops("gemm_shape_f32_openblas" + arg);
    const std::string label =
        std::to_string(shape.m) + " x " + std::to_string(shape.k) + " x " + std::to_string(shape.n);
    std::printf("%-18s %s %s %s %s %s\n", label.c_str(), cell(phx, 9, 1).c_str(),
                cell(ratio(phx, shapes_peak), 5, 2).c_str(), cell(blas, 9, 1).c_str(),
                cell(ratio(blas, shapes_peak), 5, 2).c_str(), cell(ratio(phx, blas), 8, 2).c_str());
  }
  std::printf("\nOther ops on the CPU device, f32, GFLOP/s and /pk (of f32 FMA)\n");
  const std::string conv = "conv2d_f32_phx/";
  std::printf("%-36s %9s %5s\n", "conv2d 3x3 [4,256,28,28] x 256", cell(gflops(conv), 9, 1).c_str(),
              cell(ratio(gflops(conv), peak_of(peak::Kind::kF32, kConvTag)), 5, 2).c_str());
  for (int64_t s : kAttentionSizes) {
    const double rate = gflops("attention_f32_phx/" + std::to_string(s));
    const std::string label = "attention causal 8x64, S " + std::to_string(s);
    std::printf("%-36s %9s %5s\n", label.c_str(), cell(rate, 9, 1).c_str(),
                cell(ratio(rate, peak_of(peak::Kind::kF32, attention_tag(s))), 5, 2).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned threads = phx_bench::bench_threads();
  openblas_set_num_threads(static_cast<int>(threads));
  CpuDevice cpu = phx_bench::open_cpu_device(threads);
  g_cpu = &cpu;

  // The peaks first, for the header; then each again just before the benchmarks that are
  // fractions of it (the file's comment says why).
  const std::vector<peak::Loop> loops = peak::available_loops();
  auto time_peak = [&](peak::Kind kind, const std::string& tag) {
    const peak::Loop* loop = best_loop(loops, kind);
    if (loop == nullptr) return;
    benchmark::RegisterBenchmark(peak_name(*loop, tag).c_str(),
                                 [loop](benchmark::State& state) { peak::time_loop(state, *loop); })
        ->Threads(static_cast<int>(threads))
        ->UseRealTime();
  };
  for (peak::Kind kind : {peak::Kind::kF32, peak::Kind::kBf16, peak::Kind::kInt8})
    time_peak(kind, "");
  for (int64_t n : kSizes) {
    time_peak(peak::Kind::kF32, size_tag(n));
    at_size(benchmark::RegisterBenchmark("gemm_f32_phx", gemm_phynexus, PHX_DTYPE_F32), n);
    at_size(benchmark::RegisterBenchmark("gemm_f32_openblas", gemm_openblas), n);
    at_size(benchmark::RegisterBenchmark("gemm_f16_phx", gemm_phynexus, PHX_DTYPE_F16), n);
    time_peak(peak::Kind::kBf16, size_tag(n));
    at_size(benchmark::RegisterBenchmark("gemm_bf16_phx", gemm_phynexus, PHX_DTYPE_BF16), n);
    time_peak(peak::Kind::kInt8, size_tag(n));
    at_size(benchmark::RegisterBenchmark("qmatmul_i8_phx", qmatmul_phynexus), n);
  }
  time_peak(peak::Kind::kF32, kShapesTag);
  for (const Shape& shape : kShapes) {
    for (auto* bench :
         {benchmark::RegisterBenchmark("gemm_shape_f32_phx", gemm_shape_phynexus),
          benchmark::RegisterBenchmark("gemm_shape_f32_openblas", gemm_shape_openblas)})
      bench->Args({shape.m, shape.k, shape.n})->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  time_peak(peak::Kind::kF32, kConvTag);
  benchmark::RegisterBenchmark("conv2d_f32_phx", conv2d_phynexus)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  for (int64_t s : kAttentionSizes) {
    time_peak(peak::Kind::kF32, attention_tag(s));
    at_size(benchmark::RegisterBenchmark("attention_f32_phx", attention_phynexus), s);
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  phx_bench::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_summary(reporter, loops, threads);
  benchmark::Shutdown();

  g_cpu = nullptr;
  phx_bench::close_cpu_device(cpu);
  return 0;
}
