// The cost of the TPU simulator itself: a 1024 x 1024 x 1024 bf16 matmul on tpu-sim (bf16
// inputs rounded and summed as the MXU does, f32 or bf16 out) against the same f32 matmul
// on the CPU device, both through the C API in one context, one run. Prints the ratio
// tpu-sim / cpu at the end; the goal is at most 1.5.
//   bench_tpu_sim [--benchmark_repetitions=5 ...]
#include <benchmark/benchmark.h>
#include <phynexus/phynexus.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_common.h"

namespace {

constexpr int64_t kSize = 1024;

using phx_bench::check;

// Opened on first use, destroyed at the end of main.
phx_bench::CpuAndDevice& setup() {
  static phx_bench::CpuAndDevice s = phx_bench::open_cpu_and_device("tpu-sim");
  return s;
}

phx_tensor square(size_t device, phx_dtype dtype, float value) {
  const int64_t shape[2] = {kSize, kSize};
  phx_tensor t = nullptr;
  check(phx_tensor_create(setup().context, device, dtype, 2, shape, &t), "phx_tensor_create");
  const size_t n = size_t(kSize * kSize);
  if (dtype == PHX_DTYPE_F32) {
    std::vector<float> data(n, value);
    check(phx_tensor_upload(t, 0, data.data(), n * 4), "phx_tensor_upload");
  } else {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    std::vector<uint16_t> data(n, uint16_t(bits >> 16));  // value is exact in bf16
    check(phx_tensor_upload(t, 0, data.data(), n * 2), "phx_tensor_upload");
  }
  return t;
}

void run_matmul(benchmark::State& state, size_t device, phx_stream stream, phx_dtype in,
                phx_dtype out) {
  phx_tensor a = square(device, in, 0.5f), b = square(device, in, 0.25f);
  phx_tensor c = square(device, out, 0.0f);
  const phx_tensor inputs[2] = {a, b};
  const phx_op_desc desc = {sizeof(phx_op_desc), PHX_OP_MATMUL, nullptr, inputs, 2, &c, 1};
  for (auto _ : state) {
    check(phx_op_run(stream, &desc, nullptr), "phx_op_run");
    check(phx_stream_synchronize(stream), "phx_stream_synchronize");
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kSize * kSize * kSize,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  phx_tensor_destroy(a);
  phx_tensor_destroy(b);
  phx_tensor_destroy(c);
}

void BM_CpuF32(benchmark::State& state) {
  run_matmul(state, setup().cpu, setup().cpu_stream, PHX_DTYPE_F32, PHX_DTYPE_F32);
}
void BM_TpuSimBf16ToF32(benchmark::State& state) {
  run_matmul(state, setup().device, setup().device_stream, PHX_DTYPE_BF16, PHX_DTYPE_F32);
}
void BM_TpuSimBf16ToBf16(benchmark::State& state) {
  run_matmul(state, setup().device, setup().device_stream, PHX_DTYPE_BF16, PHX_DTYPE_BF16);
}
BENCHMARK(BM_CpuF32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TpuSimBf16ToF32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TpuSimBf16ToBf16)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  const auto best = phx_bench::run_keeping_best_times(&argc, argv);
  if (best.count("BM_CpuF32") != 0) {
    for (const char* sim : {"BM_TpuSimBf16ToF32", "BM_TpuSimBf16ToBf16"})
      if (best.count(sim) != 0)
        std::printf("ratio %s / BM_CpuF32 (best real time): %.3f (goal <= 1.5)\n", sim,
                    best.at(sim) / best.at("BM_CpuF32"));
  }
  phx_bench::close_cpu_and_device(setup());
  return 0;
}
