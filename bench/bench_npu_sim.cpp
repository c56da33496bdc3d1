// int8 matmul on the simulated NPU against f32 matmul on the CPU device, N = 1024, both
// through the C API in one context, one run: qmatmul with int32 out (the raw
// accumulators) and with int8 out (requantized), on npu-sim, against the f32 matmul on
// the CPU. Each NPU benchmark carries the counter speedup_vs_cpu_f32 (the CPU's mean
// time over its own, from this run); the end prints the ratio of the best times.
// The goal is a speedup of at least 2. Profiling stays off: with it, qmatmul also
// computes its f32 reference for quant_error_rel.
//   bench_npu_sim [--benchmark_repetitions=5 ...]
#include <benchmark/benchmark.h>
#include <phynexus/phynexus.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "bench_common.h"

namespace {

constexpr int64_t kSize = 1024;

using phx_bench::check;

// Opened on first use, destroyed at the end of main.
phx_bench::CpuAndDevice& setup() {
  static phx_bench::CpuAndDevice s = phx_bench::open_cpu_and_device("npu-sim");
  return s;
}

template <class T>
phx_tensor tensor(size_t device, phx_dtype dtype, std::vector<int64_t> shape,
                  const std::vector<T>& values) {
  phx_tensor t = nullptr;
  check(phx_tensor_create(setup().context, device, dtype, shape.size(), shape.data(), &t),
        "phx_tensor_create");
  if (!values.empty())
    check(phx_tensor_upload(t, 0, values.data(), values.size() * sizeof(T)), "phx_tensor_upload");
  return t;
}

// Small values so that int8 products and sums stay meaningful; the same on both devices.
template <class T>
std::vector<T> pattern(size_t n, int period, T scale) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = T(int(i % size_t(period)) - period / 2) * scale;
  return v;
}

double cpu_mean_ns = 0;  // BM_CpuF32's mean time per matmul in this run

// Runs desc on stream until the state stops; returns the mean time per op in ns.
double time_op(benchmark::State& state, phx_stream stream, const phx_op_desc& desc) {
  double total_ns = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    check(phx_op_run(stream, &desc, nullptr), "phx_op_run");
    check(phx_stream_synchronize(stream), "phx_stream_synchronize");
    total_ns +=
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  }
  state.counters["GOP/s"] = benchmark::Counter(2.0 * kSize * kSize * kSize,
                                               benchmark::Counter::kIsIterationInvariantRate);
  return total_ns / double(state.iterations());
}

void BM_CpuF32(benchmark::State& state) {
  const phx_bench::CpuAndDevice& s = setup();
  const size_t n = size_t(kSize * kSize);
  phx_tensor a = tensor(s.cpu, PHX_DTYPE_F32, {kSize, kSize}, pattern<float>(n, 17, 0.125f));
  phx_tensor b = tensor(s.cpu, PHX_DTYPE_F32, {kSize, kSize}, pattern<float>(n, 13, 0.25f));
  phx_tensor c = tensor(s.cpu, PHX_DTYPE_F32, {kSize, kSize}, std::vector<float>{});
  const phx_tensor inputs[2] = {a, b};
  const phx_op_desc desc = {sizeof(phx_op_desc), PHX_OP_MATMUL, nullptr, inputs, 2, &c, 1};
  cpu_mean_ns = time_op(state, s.cpu_stream, desc);
  for (phx_tensor t : {a, b, c}) phx_tensor_destroy(t);
}

// qmatmul i8 x i8 with per-tensor scales; out i32 (raw) or i8 (requantized).
void run_qmatmul(benchmark::State& state, phx_dtype out_dtype) {
  const phx_bench::CpuAndDevice& s = setup();
  const size_t n = size_t(kSize * kSize);
  phx_tensor a = tensor(s.device, PHX_DTYPE_I8, {kSize, kSize}, pattern<int8_t>(n, 17, 1));
  phx_tensor b = tensor(s.device, PHX_DTYPE_I8, {kSize, kSize}, pattern<int8_t>(n, 13, 1));
  phx_tensor a_scale = tensor(s.device, PHX_DTYPE_F32, {1}, std::vector<float>{0.125f});
  phx_tensor b_scale = tensor(s.device, PHX_DTYPE_F32, {1}, std::vector<float>{0.25f});
  phx_tensor y_scale = tensor(s.device, PHX_DTYPE_F32, {1}, std::vector<float>{8.0f});
  phx_tensor y_zp = tensor(s.device, PHX_DTYPE_I32, {1}, std::vector<int32_t>{0});
  phx_tensor c = tensor(s.device, out_dtype, {kSize, kSize}, std::vector<int8_t>{});
  const bool requantize = out_dtype != PHX_DTYPE_I32;
  const phx_tensor inputs[9] = {a, b, a_scale, nullptr, b_scale, nullptr, nullptr, y_scale, y_zp};
  const phx_op_desc desc = {
      sizeof(phx_op_desc), PHX_OP_QMATMUL, nullptr, inputs, requantize ? 9u : 5u, &c, 1};
  const double mean_ns = time_op(state, s.device_stream, desc);
  if (cpu_mean_ns > 0) state.counters["speedup_vs_cpu_f32"] = cpu_mean_ns / mean_ns;
  for (phx_tensor t : {a, b, a_scale, b_scale, y_scale, y_zp, c}) phx_tensor_destroy(t);
}

void BM_NpuSimQmatmulI8ToI32(benchmark::State& state) { run_qmatmul(state, PHX_DTYPE_I32); }
void BM_NpuSimQmatmulI8ToI8(benchmark::State& state) { run_qmatmul(state, PHX_DTYPE_I8); }

BENCHMARK(BM_CpuF32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NpuSimQmatmulI8ToI32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NpuSimQmatmulI8ToI8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  const auto best = phx_bench::run_keeping_best_times(&argc, argv);
  if (best.count("BM_CpuF32") != 0) {
    for (const char* sim : {"BM_NpuSimQmatmulI8ToI32", "BM_NpuSimQmatmulI8ToI8"})
      if (best.count(sim) != 0)
        std::printf("speedup BM_CpuF32 / %s (best real time): %.2fx (goal >= 2)\n", sim,
                    best.at("BM_CpuF32") / best.at(sim));
  }
  phx_bench::close_cpu_and_device(setup());
  return 0;
}
