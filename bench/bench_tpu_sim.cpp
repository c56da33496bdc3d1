// The cost of the TPU simulator itself: a 1024 x 1024 x 1024 bf16 matmul on tpu-sim (bf16
// inputs rounded and summed as the MXU does, f32 or bf16 out) against the same f32 matmul
// on the CPU device, both through the C API in one context, one run. Prints the ratio
// tpu-sim / cpu at the end; the goal is at most 1.5. And what the simulator spends per op
// beyond its kernel: 64 adds of a constant to a [1, 16] f32 tensor, eagerly (each op
// checked by the host, costed and looked up in the chip's compile cache) and as an
// executable (one run of a compiled program); prints the time per node of each. The
// matmuls' rates are also printed as fractions of the machine's f32 FMA peak
// (peak_kernels.h, timed here on every core): the simulator's bf16 products are widened
// to f32 and summed by the f32 GEMM kernels in fixed passes, which VDPBF16PS cannot do
// with the same bits. Each tpu-sim matmul also reports the simulated chip's roofs and the
// rate its timing model gives the matmul (the model_* counters, for phx-plot roofline).
//   bench_tpu_sim [--benchmark_repetitions=5 ...]
#include <benchmark/benchmark.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "peak_kernels.h"

namespace {

constexpr int64_t kSize = 1024;

using phx_bench::check;

// Opened on first use, destroyed at the end of main.
phx_bench::CpuAndDevice& setup() {
  static phx_bench::CpuAndDevice s = phx_bench::open_cpu_and_device("tpu-sim");
  return s;
}

phx_tensor square(phx_context context, size_t device, phx_dtype dtype, float value) {
  const int64_t shape[2] = {kSize, kSize};
  phx_tensor t = nullptr;
  check(phx_tensor_create(context, device, dtype, 2, shape, &t), "phx_tensor_create");
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

constexpr double kMatmulFlops = 2.0 * kSize * kSize * kSize;

// Runs the matmul out = a b on the device's stream, once or for every iteration of state.
void matmul(phx_context context, size_t device, phx_stream stream, phx_dtype in, phx_dtype out,
            benchmark::State* state) {
  phx_tensor a = square(context, device, in, 0.5f), b = square(context, device, in, 0.25f);
  phx_tensor c = square(context, device, out, 0.0f);
  const phx_tensor inputs[2] = {a, b};
  const phx_op_desc desc = {sizeof(phx_op_desc), PHX_OP_MATMUL, nullptr, inputs, 2, &c, 1};
  auto run = [&] {
    check(phx_op_run(stream, &desc, nullptr), "phx_op_run");
    check(phx_stream_synchronize(stream), "phx_stream_synchronize");
  };
  if (state == nullptr) {
    run();
  } else {
    for (auto _ : *state) run();
  }
  phx_tensor_destroy(a);
  phx_tensor_destroy(b);
  phx_tensor_destroy(c);
}

// The number a property's value starts with ("819 GB/s": 819), 0 when absent.
double property_number(const phx_device_info& info, const char* key) {
  for (size_t i = 0; i < info.property_count; ++i)
    if (std::strcmp(info.properties[i].key, key) == 0)
      return std::strtod(info.properties[i].value, nullptr);
  return 0;
}

// The simulated chip as its timing model sees it, for phx-plot roofline (docs/plots.md):
// the roofs from the device's properties (peak_bf16_tflops, hbm_bandwidth) and the
// matmul's rate from the time the model gives it (the profile record's estimated_time_ns).
// The record comes from a profiling context of its own, so that the timed runs pay no
// profiling.
void set_model_counters(benchmark::State& state, phx_dtype in, phx_dtype out) {
  phx_device_info info{};  // not PHX_DEVICE_INFO_INIT: see open_cpu_device
  info.struct_size = sizeof info;
  check(phx_device_get(setup().context, setup().device, &info), "phx_device_get");
  state.counters["model_peak_FLOPS"] = property_number(info, "peak_bf16_tflops") * 1e12;
  state.counters["model_bytes_per_second"] = property_number(info, "hbm_bandwidth") * 1e9;

  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.flags = PHX_CONTEXT_PROFILE;
  phx_context context = nullptr;
  check(phx_context_create(&options, &context), "phx_context_create");
  phx_stream stream = nullptr;
  // The same plugins in the same order: the same device index.
  check(phx_stream_create(context, setup().device, &stream), "phx_stream_create");
  matmul(context, setup().device, stream, in, out, nullptr);
  phx_profile_record record = PHX_PROFILE_RECORD_INIT;
  check(phx_profile_get(stream, 0, &record), "phx_profile_get");
  for (size_t i = 0; i < record.metric_count; ++i)
    if (std::strcmp(record.metrics[i].name, "estimated_time_ns") == 0)
      state.counters["model_FLOPS"] = kMatmulFlops / (record.metrics[i].value * 1e-9);
  phx_stream_destroy(stream);
  phx_context_destroy(context);
}

void run_matmul(benchmark::State& state, size_t device, phx_stream stream, phx_dtype in,
                phx_dtype out) {
  matmul(setup().context, device, stream, in, out, &state);
  state.counters["GFLOP/s"] =
      benchmark::Counter(kMatmulFlops, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["N"] = kSize;  // for phx-plot gemm, which reads N from the name elsewhere
  phx_bench::set_gemm_intensity(state, kSize, in, out);
  if (device == setup().device) set_model_counters(state, in, out);
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
constexpr int kChain = 64;
constexpr int64_t kChainWidth = 16;

// The chain's tensors on tpu-sim: the input, the constant, an output per op.
struct Chain {
  std::vector<phx_tensor> tensors;
  Chain() {
    const int64_t shape[2] = {1, kChainWidth};
    const std::vector<float> values(kChainWidth, 0.5f);
    tensors.resize(kChain + 2);
    for (phx_tensor& t : tensors) {
      check(phx_tensor_create(setup().context, setup().device, PHX_DTYPE_F32, 2, shape, &t),
            "phx_tensor_create");
      check(phx_tensor_upload(t, 0, values.data(), values.size() * 4), "phx_tensor_upload");
    }
  }
  ~Chain() {
    for (phx_tensor t : tensors) phx_tensor_destroy(t);
  }
  phx_tensor constant() const { return tensors[1]; }
};

void BM_TpuSimChainEager(benchmark::State& state) {
  const Chain chain;
  std::vector<phx_tensor> inputs;
  for (int i = 0; i < kChain; ++i) {
    inputs.push_back(i == 0 ? chain.tensors[0] : chain.tensors[size_t(i) + 1]);
    inputs.push_back(chain.constant());
  }
  std::vector<phx_op_desc> ops;
  for (int i = 0; i < kChain; ++i)
    ops.push_back(
        phx_bench::op_desc(PHX_OP_ADD, &inputs[2 * size_t(i)], 2, &chain.tensors[size_t(i) + 2]));
  for (auto _ : state) {
    for (const phx_op_desc& op : ops) check(phx_op_run(setup().device_stream, &op, nullptr), "run");
    check(phx_stream_synchronize(setup().device_stream), "phx_stream_synchronize");
  }
}

void BM_TpuSimChainExecutable(benchmark::State& state) {
  const Chain chain;
  phx_graph graph = nullptr;
  check(phx_graph_create(setup().context, &graph), "phx_graph_create");
  const int64_t shape[2] = {1, kChainWidth};
  phx_graph_input_desc input{};  // not PHX_GRAPH_INPUT_DESC_INIT: -Wextra, as PHX_DEVICE_INFO_INIT
  input.struct_size = sizeof input;
  input.dtype = PHX_DTYPE_F32;
  input.rank = 2;
  input.shape = shape;
  phx_value v = 0, c = 0;
  check(phx_graph_add_input(graph, &input, &v), "phx_graph_add_input");
  check(phx_graph_add_constant_tensor(graph, nullptr, chain.constant(), &c), "add_constant");
  for (int i = 0; i < kChain; ++i) {
    const phx_value operands[2] = {v, c};
    phx_graph_node_desc node{};
    node.struct_size = sizeof node;
    node.op = PHX_OP_ADD;
    node.inputs = operands;
    node.input_count = 2;
    node.output_count = 1;
    check(phx_graph_add_node(graph, &node, &v), "phx_graph_add_node");
  }
  check(phx_graph_add_output(graph, v, nullptr), "phx_graph_add_output");
  phx_compile_options options{};
  options.struct_size = sizeof options;
  options.device = setup().device;
  phx_executable exe = nullptr;
  check(phx_graph_compile(setup().context, graph, &options, &exe), "phx_graph_compile");
  const phx_tensor in = chain.tensors[0], out = chain.tensors[2];
  for (auto _ : state) {
    check(phx_executable_run(setup().device_stream, exe, &in, 1, &out, 1, nullptr), "run");
    check(phx_stream_synchronize(setup().device_stream), "phx_stream_synchronize");
  }
  phx_executable_destroy(exe);
  phx_graph_destroy(graph);
}

BENCHMARK(BM_CpuF32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TpuSimBf16ToF32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TpuSimBf16ToBf16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TpuSimChainEager)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_TpuSimChainExecutable)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The best f32 loop this CPU has (available_loops lists the best first), or null.
const phx_bench::peak::Loop* f32_peak_loop() {
  static const std::vector<phx_bench::peak::Loop> loops = phx_bench::peak::available_loops();
  for (const auto& loop : loops)
    if (loop.kind == phx_bench::peak::Kind::kF32) return &loop;
  return nullptr;
}

// The matmuls' GFLOP/s (best time) and their fraction of the f32 peak timed in this run.
void print_fractions(const std::map<std::string, double>& best, int threads) {
  const phx_bench::peak::Loop* loop = f32_peak_loop();
  if (loop == nullptr || best.count(loop->name) == 0) return;
  // GFLOP/s from the best times, which are in each benchmark's unit: ns for the loop
  // (every thread runs it once per iteration, timed by the wall clock), ms for a matmul.
  const double peak = threads * loop->ops_per_step * phx_bench::peak::kAccumulators *
                      phx_bench::peak::kStepsPerIteration / best.at(loop->name);
  std::printf("f32 peak (%s, %d threads): %.1f GFLOP/s\n", loop->instruction, threads, peak);
  for (const char* matmul : {"BM_CpuF32", "BM_TpuSimBf16ToF32", "BM_TpuSimBf16ToBf16"}) {
    if (best.count(matmul) == 0) continue;
    const double rate = kMatmulFlops / (best.at(matmul) * 1e6);
    std::printf("%s: %.1f GFLOP/s, %.2f of the f32 peak\n", matmul, rate, rate / peak);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const phx_bench::peak::Loop* loop = f32_peak_loop())
    benchmark::RegisterBenchmark(
        loop->name, [loop](benchmark::State& state) { phx_bench::peak::time_loop(state, *loop); })
        ->Threads(threads)
        ->UseRealTime();
  const auto best = phx_bench::run_keeping_best_times(&argc, argv);
  if (best.count("BM_CpuF32") != 0) {
    for (const char* sim : {"BM_TpuSimBf16ToF32", "BM_TpuSimBf16ToBf16"})
      if (best.count(sim) != 0)
        std::printf("ratio %s / BM_CpuF32 (best real time): %.3f (goal <= 1.5)\n", sim,
                    best.at(sim) / best.at("BM_CpuF32"));
  }
  for (const char* chain : {"BM_TpuSimChainEager", "BM_TpuSimChainExecutable"})
    if (best.count(chain) != 0)
      std::printf("%s: %.0f ns per node (best real time)\n", chain, 1e3 * best.at(chain) / kChain);
  print_fractions(best, threads);
  phx_bench::close_cpu_and_device(setup());
  return 0;
}
