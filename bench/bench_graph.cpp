// Executables against the same ops run one by one through phx_op_run, on the CPU device
// and, where the Vulkan plugin offers one, the Vulkan device:
// - chain64: 64 adds of a constant to a 1x16 f32 tensor, one after the other: what a
//   node costs beyond its kernel, the executable's per-node overhead against an eager op's.
// - mlp4: four layers of matmul + bias + relu, batch 64, width 1024 (f32): eagerly as 12
//   ops, as an executable without fusion (12 steps), and with fusion (4 fused matmuls).
// - ew8: eight cheap f32 elementwise ops (mul, add, sub, relu, twice) on 4M elements
//   (16 MiB per value, past the caches), with constants of that size: what fusing a
//   chain saves in memory traffic (the CPU device runs it block by block, docs/graphs.md).
// - mlp4 at batch 1 and 64 on the CPU device with its weights given as host bytes
//   (phx_graph_add_constant: constants of fixed contents, which the CPU device packs for
//   its GEMM at compile time) against the same executable with its weights read in place
//   from tensors (packed again at every run), and the eager ops: what packing a weight
//   once saves.
// Each iteration runs the whole workload and waits for it, after one run that is not
// timed (it compiles the device's kernels). The summary prints the
// per-node cost of chain64 and the speed of each mlp4 form against the eager one.
#include <cmath>
#include <iterator>
#include <memory>

#include "bench_common.h"

namespace {

using phx_bench::check;

constexpr int kChain = 64;
constexpr int64_t kChainWidth = 16;
constexpr int kLayers = 4;
constexpr int64_t kBatch = 64, kWidth = 1024;
constexpr int64_t kElementwiseSize = int64_t{1} << 22;

struct Device {
  phx_context context = nullptr;
  size_t index = 0;
  phx_stream stream = nullptr;
};

phx_tensor make_tensor(const Device& d, std::vector<int64_t> shape, float seed) {
  phx_tensor t = nullptr;
  check(phx_tensor_create(d.context, d.index, PHX_DTYPE_F32, shape.size(), shape.data(), &t),
        "phx_tensor_create");
  size_t n = 1;
  for (int64_t s : shape) n *= static_cast<size_t>(s);
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = 0.01f * std::sin(seed + 0.37f * static_cast<float>(i));
  check(phx_tensor_upload(t, 0, values.data(), n * sizeof(float)), "phx_tensor_upload");
  return t;
}

phx_value add_node(phx_graph g, phx_op_id op, std::vector<phx_value> inputs,
                   const void* params = nullptr) {
  phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
  desc.op = op;
  desc.params = params;
  desc.inputs = inputs.data();
  desc.input_count = inputs.size();
  desc.output_count = 1;
  phx_value out = 0;
  check(phx_graph_add_node(g, &desc, &out), "phx_graph_add_node");
  return out;
}

phx_value add_input(phx_graph g, std::vector<int64_t> shape) {
  phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
  desc.dtype = PHX_DTYPE_F32;
  desc.rank = shape.size();
  desc.shape = shape.data();
  phx_value v = 0;
  check(phx_graph_add_input(g, &desc, &v), "phx_graph_add_input");
  return v;
}

phx_value add_constant(phx_graph g, phx_tensor t) {
  phx_value v = 0;
  check(phx_graph_add_constant_tensor(g, nullptr, t, &v), "phx_graph_add_constant_tensor");
  return v;
}

phx_executable compile(const Device& d, phx_graph g, uint32_t flags) {
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = d.index;
  options.flags = flags;
  phx_executable exe = nullptr;
  check(phx_graph_compile(d.context, g, &options, &exe), "phx_graph_compile");
  return exe;
}

void run_eager(const Device& d, const std::vector<phx_op_desc>& ops) {
  uint64_t ticket = 0;
  for (const phx_op_desc& op : ops) check(phx_op_run(d.stream, &op, &ticket), "phx_op_run");
  check(phx_stream_wait(d.stream, ticket), "phx_stream_wait");
}

void run_executable(const Device& d, phx_executable exe, phx_tensor in, phx_tensor out) {
  uint64_t ticket = 0;
  check(phx_executable_run(d.stream, exe, &in, 1, &out, 1, &ticket), "phx_executable_run");
  check(phx_stream_wait(d.stream, ticket), "phx_stream_wait");
}

// The tensors and ops of one workload, eager and as a graph.
struct Workload {
  std::vector<phx_tensor> tensors;  // destroyed with the workload
  std::vector<phx_tensor> op_inputs;
  std::vector<phx_op_desc> eager;
  phx_graph graph = nullptr;
  phx_tensor input = nullptr, output = nullptr;

  ~Workload() {
    phx_graph_destroy(graph);
    for (phx_tensor t : tensors) phx_tensor_destroy(t);
  }

  phx_tensor keep(phx_tensor t) {
    tensors.push_back(t);
    return t;
  }

  // Reserves the input-pair storage eager descriptors point into.
  void reserve(size_t ops) { op_inputs.reserve(3 * ops); }

  void eager_op(phx_op_id op, std::vector<phx_tensor> inputs, phx_tensor* out,
                const void* params = nullptr) {
    const size_t first = op_inputs.size();
    for (phx_tensor t : inputs) op_inputs.push_back(t);
    phx_op_desc desc = phx_bench::op_desc(op, &op_inputs[first], inputs.size(), out);
    desc.params = params;
    eager.push_back(desc);
  }
};

std::unique_ptr<Workload> chain(const Device& d) {
  auto w = std::make_unique<Workload>();
  w->reserve(kChain);
  w->tensors.reserve(kChain + 3);  // eager descriptors point at the tensors' handles
  check(phx_graph_create(d.context, &w->graph), "phx_graph_create");
  w->input = w->keep(make_tensor(d, {1, kChainWidth}, 1));
  const phx_tensor one = w->keep(make_tensor(d, {1, kChainWidth}, 2));
  phx_value v = add_input(w->graph, {1, kChainWidth});
  const phx_value c = add_constant(w->graph, one);
  phx_tensor previous = w->input;
  for (int i = 0; i < kChain; ++i) {
    v = add_node(w->graph, PHX_OP_ADD, {v, c});
    phx_tensor* out = &w->tensors.emplace_back(make_tensor(d, {1, kChainWidth}, 0));
    w->eager_op(PHX_OP_ADD, {previous, one}, out);
    previous = *out;
  }
  check(phx_graph_add_output(w->graph, v, nullptr), "phx_graph_add_output");
  w->output = w->keep(make_tensor(d, {1, kChainWidth}, 0));
  return w;
}

// A constant holding a copy of t's contents, given as host bytes.
phx_value add_host_constant(phx_graph g, phx_tensor t) {
  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  check(phx_tensor_describe(t, &desc), "phx_tensor_describe");
  std::vector<unsigned char> bytes(desc.byte_size);
  check(phx_tensor_download(t, 0, bytes.data(), bytes.size()), "phx_tensor_download");
  phx_value v = 0;
  check(phx_graph_add_constant(g, nullptr, desc.dtype, desc.rank, desc.shape, bytes.data(),
                               bytes.size(), &v),
        "phx_graph_add_constant");
  return v;
}

// Four layers of matmul + bias + relu; the graph's weights and biases are the tensors
// read in place, or copies given as host bytes.
std::unique_ptr<Workload> mlp_of(const Device& d, int64_t batch, bool host_constants) {
  static const phx_matmul_params plain = PHX_MATMUL_PARAMS_INIT;
  auto w = std::make_unique<Workload>();
  w->reserve(3 * kLayers);
  w->tensors.reserve(8 * kLayers + 2);  // eager descriptors point at the tensors' handles
  check(phx_graph_create(d.context, &w->graph), "phx_graph_create");
  w->input = w->keep(make_tensor(d, {batch, kWidth}, 1));
  phx_value v = add_input(w->graph, {batch, kWidth});
  phx_tensor previous = w->input;
  const auto constant = host_constants ? add_host_constant : add_constant;
  for (int layer = 0; layer < kLayers; ++layer) {
    const phx_tensor weight = w->keep(make_tensor(d, {kWidth, kWidth}, 3.0f + layer));
    const phx_tensor bias = w->keep(make_tensor(d, {kWidth}, 7.0f + layer));
    v = add_node(w->graph, PHX_OP_MATMUL, {v, constant(w->graph, weight)}, &plain);
    v = add_node(w->graph, PHX_OP_ADD, {v, constant(w->graph, bias)});
    v = add_node(w->graph, PHX_OP_RELU, {v});
    phx_tensor* product = &w->tensors.emplace_back(make_tensor(d, {batch, kWidth}, 0));
    phx_tensor* biased = &w->tensors.emplace_back(make_tensor(d, {batch, kWidth}, 0));
    phx_tensor* activated = &w->tensors.emplace_back(make_tensor(d, {batch, kWidth}, 0));
    w->eager_op(PHX_OP_MATMUL, {previous, weight}, product, &plain);
    w->eager_op(PHX_OP_ADD, {*product, bias}, biased);
    w->eager_op(PHX_OP_RELU, {*biased}, activated);
    previous = *activated;
  }
  check(phx_graph_add_output(w->graph, v, nullptr), "phx_graph_add_output");
  w->output = w->keep(make_tensor(d, {batch, kWidth}, 0));
  return w;
}

std::unique_ptr<Workload> mlp(const Device& d) { return mlp_of(d, kBatch, false); }

std::unique_ptr<Workload> elementwise(const Device& d) {
  constexpr phx_op_id kOps[] = {PHX_OP_MUL, PHX_OP_ADD, PHX_OP_SUB, PHX_OP_RELU,
                                PHX_OP_MUL, PHX_OP_ADD, PHX_OP_SUB, PHX_OP_RELU};
  constexpr size_t kCount = std::size(kOps);
  auto w = std::make_unique<Workload>();
  w->reserve(kCount);
  w->tensors.reserve(2 * kCount + 3);  // eager descriptors point at the tensors' handles
  check(phx_graph_create(d.context, &w->graph), "phx_graph_create");
  const std::vector<int64_t> shape = {kElementwiseSize};
  w->input = w->keep(make_tensor(d, shape, 1));
  phx_value v = add_input(w->graph, shape);
  phx_tensor previous = w->input;
  for (size_t i = 0; i < kCount; ++i) {
    phx_tensor* out = &w->tensors.emplace_back(make_tensor(d, shape, 0));
    if (kOps[i] == PHX_OP_SILU || kOps[i] == PHX_OP_GELU || kOps[i] == PHX_OP_RELU) {
      v = add_node(w->graph, kOps[i], {v});
      w->eager_op(kOps[i], {previous}, out);
    } else {
      const phx_tensor operand = w->keep(make_tensor(d, shape, 2.0f + float(i)));
      v = add_node(w->graph, kOps[i], {v, add_constant(w->graph, operand)});
      w->eager_op(kOps[i], {previous, operand}, out);
    }
    previous = *out;
  }
  check(phx_graph_add_output(w->graph, v, nullptr), "phx_graph_add_output");
  w->output = w->keep(make_tensor(d, shape, 0));
  return w;
}

using Maker = std::unique_ptr<Workload> (*)(const Device&);

void register_workload(const std::string& prefix, const Device* d, Maker make) {
  benchmark::RegisterBenchmark((prefix + "_eager").c_str(), [d, make](benchmark::State& state) {
    auto w = make(*d);
    run_eager(*d, w->eager);  // the first run compiles the device's kernels
    for (auto _ : state) run_eager(*d, w->eager);
  })->UseRealTime();
  const std::pair<const char*, uint32_t> forms[] = {{"_executable_unfused", PHX_COMPILE_NO_FUSION},
                                                    {"_executable", 0}};
  for (const auto& [suffix, flags] : forms)
    benchmark::RegisterBenchmark((prefix + suffix).c_str(), [d, make, flags = flags](
                                                                benchmark::State& state) {
      auto w = make(*d);
      const phx_executable exe = compile(*d, w->graph, flags);
      run_executable(*d, exe, w->input, w->output);
      for (auto _ : state) run_executable(*d, exe, w->input, w->output);
      phx_executable_destroy(exe);
    })->UseRealTime();
}

// mlp4 at batch 1 and 64 on device: eager, and fused executables with the weights read in place
// (mlp4_bN_DEVICE_in_place) and given as host bytes (mlp4_bN_DEVICE_host_bytes).
void register_weight_forms(const std::string& device, const Device* d) {
  for (const int64_t batch : {int64_t{1}, kBatch}) {
    const std::string prefix = "mlp4_b" + std::to_string(batch) + "_" + device;
    benchmark::RegisterBenchmark((prefix + "_eager").c_str(), [d, batch](benchmark::State& state) {
      auto w = mlp_of(*d, batch, false);
      run_eager(*d, w->eager);
      for (auto _ : state) run_eager(*d, w->eager);
    })->UseRealTime();
    for (const bool host : {false, true})
      benchmark::RegisterBenchmark((prefix + (host ? "_host_bytes" : "_in_place")).c_str(),
                                   [d, batch, host](benchmark::State& state) {
                                     auto w = mlp_of(*d, batch, host);
                                     const phx_executable exe = compile(*d, w->graph, 0);
                                     run_executable(*d, exe, w->input, w->output);
                                     for (auto _ : state)
                                       run_executable(*d, exe, w->input, w->output);
                                     phx_executable_destroy(exe);
                                   })
          ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  setenv("PHX_NUM_THREADS", std::to_string(phx_bench::bench_threads()).c_str(), 1);
  phx_context context = nullptr;
  check(phx_context_create(nullptr, &context), "phx_context_create");
  size_t count = 0;
  check(phx_device_count(context, &count), "phx_device_count");
  std::vector<std::pair<std::string, Device>> devices;
  for (const char* plugin : {"cpu", "vulkan"}) {
    for (size_t i = 0; i < count; ++i) {
      phx_device_info info{};
      info.struct_size = sizeof info;
      check(phx_device_get(context, i, &info), "phx_device_get");
      if (std::strcmp(info.plugin, plugin) != 0) continue;
      Device d{context, i, nullptr};
      check(phx_stream_create(context, i, &d.stream), "phx_stream_create");
      devices.emplace_back(plugin, d);
      break;
    }
  }
  for (const auto& [name, d] : devices) {
    register_workload("chain64_" + name, &d, chain);
    register_workload("mlp4_" + name, &d, mlp);
    register_workload("ew8_" + name, &d, elementwise);
    if (name == "cpu") register_weight_forms(name, &d);
  }
  const std::map<std::string, double> best = phx_bench::run_keeping_best_times(&argc, argv);
  std::printf("\n");
  for (const auto& [name, d] : devices) {
    auto time = [&](const std::string& key) {
      auto it = best.find(key);
      return it == best.end() ? -1.0 : it->second;
    };
    const double eager = time("chain64_" + name + "_eager");
    const double exe = time("chain64_" + name + "_executable");
    if (eager > 0 && exe > 0)
      std::printf("chain64 on %s: %.0f ns per node eager, %.0f ns per node as an executable\n",
                  name.c_str(), eager / kChain, exe / kChain);
    const double mlp_eager = time("mlp4_" + name + "_eager");
    const double unfused = time("mlp4_" + name + "_executable_unfused");
    const double fused = time("mlp4_" + name + "_executable");
    if (mlp_eager > 0 && unfused > 0 && fused > 0)
      std::printf("mlp4 on %s: executable %.2fx, fused executable %.2fx the speed of eager ops\n",
                  name.c_str(), mlp_eager / unfused, mlp_eager / fused);
    const double ew_eager = time("ew8_" + name + "_eager");
    const double ew_unfused = time("ew8_" + name + "_executable_unfused");
    const double ew_fused = time("ew8_" + name + "_executable");
    if (ew_eager > 0 && ew_unfused > 0 && ew_fused > 0)
      std::printf("ew8 on %s: executable %.2fx, fused executable %.2fx the speed of eager ops\n",
                  name.c_str(), ew_eager / ew_unfused, ew_eager / ew_fused);
    for (const int64_t batch : {int64_t{1}, kBatch}) {
      const std::string prefix = "mlp4_b" + std::to_string(batch) + "_" + name;
      const double b_eager = time(prefix + "_eager");
      const double in_place = time(prefix + "_in_place");
      const double host_bytes = time(prefix + "_host_bytes");
      if (b_eager > 0 && in_place > 0 && host_bytes > 0)
        std::printf(
            "mlp4 batch %lld on %s: %.0f ns eager; executable with weights read in place %.0f "
            "ns (%.2fx), given as host bytes %.0f ns (%.2fx)\n",
            static_cast<long long>(batch), name.c_str(), b_eager, in_place, b_eager / in_place,
            host_bytes, b_eager / host_bytes);
    }
  }
  for (auto& [name, d] : devices) phx_stream_destroy(d.stream);
  phx_context_destroy(context);
  benchmark::Shutdown();
  return 0;
}
