// The TPU-sim plugin: simulated TPU chips (docs/tpu-sim.md). Tensors live in host memory
// counted against each chip's HBM; ops run synchronously on submission with the host
// kernels, matmul, conv2d and conv_transpose2d under the MXU's numerics; every op is
// costed by the timing model and goes through the chip's compile cache; the figures go to
// the op's profile record and to the device statistics. A graph is compiled as one
// program (executable.h): one lookup in the compile cache, then runs of its nodes with the
// same code as the ops. The chips form a pod whose interconnect prices the host's
// collectives (ici_model.h).
#include <phx/op_table.h>
#include <phynexus/plugin.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compile_cache.h"
#include "config.h"
#include "executable.h"
#include "hbm.h"
#include "host_buffers.h"
#include "ici_model.h"
#include "memory_entries.h"
#include "mxu_ops.h"
#include "op_cost.h"
#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"
#include "property_list.h"
#include "reporting.h"
#include "serialized_model.h"
#include "simulator_api.h"
#include "simulator_initialize.h"
#include "sync_stream.h"

namespace phx::tpu_sim {
namespace {

using namespace plugin_common;

// The plugin's version: in its table and in every executable it serializes.
constexpr const char* kVersion = "0.1.0";

// HBM holds quantized tensors too (the MXUs of v5e and later multiply int8), so that a
// program's int8 weights can live on the chip; the quantized ops themselves are not
// simulated yet and reach the CPU through the fallback. f16 is no TPU compute type: its
// tensors are stored as f16 and widened to f32 by every op, as XLA does.
constexpr uint32_t kDtypeMask = PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_BF16) |
                                PHX_DTYPE_BIT(PHX_DTYPE_F16) | PHX_DTYPE_BIT(PHX_DTYPE_I32) |
                                PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_U8) |
                                PHX_DTYPE_BIT(PHX_DTYPE_I16);

// An op whose MXU mapping uses less of the arrays than this is logged at compile time.
constexpr double kPoorMappingEfficiency = 0.5;

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kHigh:
      return "high";
    case Precision::kHighest:
      return "highest";
    default:
      return "default";
  }
}

// What f32 matmul, conv2d and conv_transpose2d inputs enter the products as: what a test
// suite must assume.
const char* matmul_precision(Precision precision) {
  switch (precision) {
    case Precision::kHigh:
      return "bf16x3";
    case Precision::kHighest:
      return "f32";
    default:
      return "bf16";
  }
}

// The running totals of phx_device_stats.
struct Totals {
  uint64_t ops = 0, mxu_cycles = 0, vector_cycles = 0, hbm_bytes = 0;
  uint64_t cache_hits = 0, cache_misses = 0, cache_evictions = 0;
  uint64_t graph_cache_hits = 0, graph_cache_misses = 0, executable_runs = 0;
  uint64_t executables_loaded = 0;  // made from a serialized model, not compiled
  double modelled_time_ns = 0, compile_time_ns = 0;

  // A compile cache lookup and the modelled compile time it cost.
  void add_lookup(const CompileCache::Lookup& lookup, double compile_ns) {
    ++(lookup.hit ? cache_hits : cache_misses);
    cache_evictions += lookup.evicted ? 1 : 0;
    compile_time_ns += compile_ns;
  }
  // ops operations whose costs add up to these.
  void add_work(uint64_t op_count, uint64_t mxu, uint64_t vector, uint64_t bytes, double time_ns) {
    ops += op_count;
    mxu_cycles += mxu;
    vector_cycles += vector;
    hbm_bytes += bytes;
    modelled_time_ns += time_ns;
  }
};

// "1,0,1": where chip sits on the pod's torus, x first.
std::string pod_coordinates(const Pod& pod, uint32_t chip) {
  std::string text;
  for (uint32_t c : chip_coordinates(pod, chip))
    text += (text.empty() ? "" : ",") + std::to_string(c);
  return text;
}

// The device properties of chip index of config.
std::vector<std::pair<std::string, std::string>> describe_chip(const SimConfig& config,
                                                               uint32_t index) {
  const ChipConfig& chip = config.chip;
  const Pod& pod = config.pod;
  return {
      {"generation", chip.generation},
      {"hbm", format_number(double(chip.hbm_bytes) / 1e9) + " GB (" +
                  std::to_string(chip.hbm_bytes) + " bytes; GB = 10^9 bytes)"},
      {"memory_fraction", format_number(config.memory_fraction)},
      {"hbm_bandwidth", format_number(chip.hbm_bandwidth_gbps) + " GB/s"},
      {"peak_bf16_tflops", format_number(chip.peak_bf16_tflops())},
      {"mxu", std::to_string(chip.mxu_count) + " x " + std::to_string(chip.mxu_size) + "x" +
                  std::to_string(chip.mxu_size)},
      {"clock", format_number(chip.clock_ghz) + " GHz"},
      {"timing", config.timing == TimingMode::kOverlap ? "overlap" : "scalesim"},
      {"precision", precision_name(config.precision)},
      {"matmul_precision", matmul_precision(config.precision)},
      {"subnormals", config.flush_subnormals ? "flush" : "keep"},
      {"compile_cache_size", std::to_string(config.compile_cache_size)},
      {"source", chip.source},
      {"topology", pod.topology()},
      {"pod_coordinates", pod_coordinates(pod, index)},
      {"ici_links", std::to_string(2 * pod.dims.size())},
      {"ici_link_bandwidth", format_number(pod.link_gbps) + " GB/s per link each way"},
      {"ici_latency", format_number(pod.hop_latency_ns) + " ns per hop"},
      {"ici_source", chip.ici_source},
  };
}

struct Device {
  Device(uint32_t index, const SimConfig& config)
      : name("TPU " + config.chip.generation + " (simulated)"),
        properties(describe_chip(config, index)),
        hbm(index, config.usable_hbm_bytes(), kHbmOptions),
        cache(config.compile_cache_size) {}

  std::string name;
  PropertyList properties;
  MemoryPool hbm;
  std::mutex mutex;  // guards cache and totals
  CompileCache cache;
  Totals totals;
};

struct Plugin {
  Plugin(const phx_plugin_host* h, const SimConfig& c) : host(h), config(c), pool(h->num_threads) {
    for (uint32_t i = 0; i < config.chips; ++i)
      devices.push_back(std::make_unique<Device>(i, config));
  }

  const phx_plugin_host* host;
  SimConfig config;
  kernels::ThreadPool pool;
  std::vector<std::unique_ptr<Device>> devices;

  MemoryPool& memory(uint32_t device) { return devices[device]->hbm; }
  phx_status error(phx_status status, const std::string& message) const {
    return fail(*host, status, message);
  }
};

Plugin& self(void* plugin) { return plugin_of<Plugin>(plugin); }

phx_status initialize(const phx_plugin_host* host, void** out_plugin) {
  return initialize_simulator<Plugin>(host, read_config_sources, parse_config, out_plugin);
}

phx_status device_info(void* plugin, uint32_t device, phx_plugin_device_info* out) {
  Plugin& p = self(plugin);
  Device& d = *p.devices[device];
  const uint64_t total = p.config.usable_hbm_bytes();
  out->type = PHX_DEVICE_TPU;
  out->name = d.name.c_str();
  out->vendor = "Phynexus (simulated)";
  out->memory_total_bytes = total;
  out->memory_available_bytes = total - d.hbm.in_use();
  out->compute_units = p.config.chip.mxu_count;
  out->dtype_mask = kDtypeMask;
  out->properties = d.properties.data();
  out->property_count = d.properties.size();
  return PHX_STATUS_OK;
}

// The ops the MXU and vector-unit models price and the compile cache keys by their
// parameters (compile_cache.cpp); not the quantized ones, which have no timing model
// here. Attention only on bf16: its f32 or f16 inputs would enter the MXU rounded to bf16
// at the default precision, which the op's contract (f32-accurate scores) does not allow.
bool claims(phx_op_id op, phx_dtype dtype) {
  // The ops of API 0.3 (sigmoid .. top_k, contiguous ids), as the host kernels compute
  // them, but conv_transpose2d, which runs on the MXU: their parameters are in the
  // compile cache's key.
  if (op >= PHX_OP_SIGMOID && op <= PHX_OP_TOP_K) return true;
  switch (op) {
    case PHX_OP_MATMUL:
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_DIV:
    case PHX_OP_RELU:
    case PHX_OP_GELU:
    case PHX_OP_SILU:
    case PHX_OP_SOFTMAX:
    case PHX_OP_LAYER_NORM:
    case PHX_OP_RMS_NORM:
    case PHX_OP_TRANSPOSE:
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX:
    case PHX_OP_CAST:
    case PHX_OP_CONV2D:
    case PHX_OP_ROPE:
      return true;
    case PHX_OP_ATTENTION:
      return dtype == PHX_DTYPE_BF16;
    default:
      return false;
  }
}

phx_status op_supported(void*, uint32_t, phx_op_id op, phx_dtype dtype, int* out_supported) {
  *out_supported = (kDtypeMask & PHX_DTYPE_BIT(dtype)) != 0 && claims(op, dtype) &&
                   kernels::op_supported(op, dtype);
  return PHX_STATUS_OK;
}

// Computes op: matmul, conv2d and conv_transpose2d under the MXU's numerics, the rest
// (attention and rope included) as the host kernels do: in f32, rounded once to the
// output's dtype, and the data-movement ops bit for bit.
phx_status execute(Plugin& p, const phx_plugin_op& op) {
  kernels::HostTensor in[kMaxNodeInputs], outs[kMaxNodeOutputs];
  for (size_t i = 0; i < op.input_count; ++i) in[i] = host_view(op.inputs[i]);
  for (size_t i = 0; i < op.output_count; ++i) outs[i] = host_view(op.outputs[i]);
  const kernels::HostTensor& out = outs[0];
  MxuNumerics numerics;
  numerics.precision = p.config.precision;
  numerics.flush_subnormals = p.config.flush_subnormals;
  numerics.pass_depth = p.config.chip.mxu_size;
  switch (op.op) {
    case PHX_OP_MATMUL:
      return mxu_matmul(*static_cast<const phx_matmul_params*>(op.params), in[0], in[1], in[2], out,
                        numerics, p.pool);
    case PHX_OP_CONV2D:
      return mxu_conv2d(*static_cast<const phx_conv2d_params*>(op.params), in[0], in[1], in[2], out,
                        numerics, p.pool);
    case PHX_OP_CONV_TRANSPOSE2D: {
      const phx_conv_transpose2d_params defaults = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
      const auto* params = static_cast<const phx_conv_transpose2d_params*>(op.params);
      return mxu_conv_transpose2d(params != nullptr ? *params : defaults, in[0], in[1], in[2], out,
                                  numerics, p.pool);
    }
    default:
      return kernels::run_op(op.op, op.params, in, op.input_count, outs, op.output_count, p.pool);
  }
}

// Logs an MXU op that a compilation maps poorly onto the arrays; what names it in the log.
void log_poor_mapping(const Plugin& p, const OpCost& cost, const std::string& what) {
  if (cost.uses_mxu && cost.mxu.mapping_efficiency < kPoorMappingEfficiency)
    host_log(*p.host, PHX_LOG_INFO,
             what + " uses " + format_number(100 * cost.mxu.mapping_efficiency) +
                 "% of the MXU cells it occupies: K and N padded to multiples of " +
                 std::to_string(p.config.chip.mxu_size));
}

// The cost model's figures of one op, for its profile record.
void add_cost_metrics(phx_plugin_profile& profile, const OpCost& cost) {
  add_metric(profile, "mxu_cycles", double(cost.mxu.cycles));
  add_metric(profile, "mxu_passes", double(cost.mxu_passes));
  add_metric(profile, "mxu_folds", double(cost.mxu.folds));
  add_metric(profile, "vector_cycles", double(cost.vector_cycles));
  add_metric(profile, "hbm_bytes", double(cost.hbm_bytes));
  add_metric(profile, "compute_time_ns", cost.compute_time_ns);
  add_metric(profile, "hbm_time_ns", cost.hbm_time_ns);
  add_metric(profile, "estimated_time_ns", cost.estimated_time_ns);
  add_metric(profile, "mxu_utilization", cost.mxu.utilization);
  add_metric(profile, "mapping_efficiency", cost.mxu.mapping_efficiency);
  add_metric(profile, "padding_waste", cost.mxu.padding_waste);
  add_metric(profile, "memory_bound", cost.memory_bound ? 1.0 : 0.0);
}

// Costs op, looks its program up in the compile cache, adds both to the device's totals
// and to the op's profile record.
void account(Plugin& p, Device& d, const phx_plugin_op& op) {
  const OpCost cost = cost_op(op, p.config);
  const std::string signature = op_signature(op);
  CompileCache::Lookup lookup;
  double compile_ns = 0;
  {
    std::lock_guard lock(d.mutex);
    lookup = d.cache.lookup(signature);
    compile_ns = lookup.hit ? 0.0 : modelled_compile_time_ns(cost.uses_mxu);
    d.totals.add_lookup(lookup, compile_ns);
    d.totals.add_work(1, cost.mxu.cycles, cost.vector_cycles, cost.hbm_bytes,
                      cost.estimated_time_ns);
  }
  if (!lookup.hit) log_poor_mapping(p, cost, find_op_schema(op.op)->name);
  if (op.profile == nullptr) return;
  add_cost_metrics(*op.profile, cost);
  add_metric(*op.profile, "compile_cache_hit", lookup.hit ? 1.0 : 0.0);
  add_metric(*op.profile, "compile_time_ns", compile_ns);
}

phx_status stream_submit(void* plugin, void* stream, const phx_plugin_op* op,
                         uint64_t* out_ticket) {
  Plugin& p = self(plugin);
  if (op->input_count > kMaxNodeInputs || op->output_count < 1 ||
      op->output_count > kMaxNodeOutputs)
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "unexpected tensor count");
  return guarded(*p.host, [&] {
    const phx_status status = execute(p, *op);
    if (status == PHX_STATUS_OUT_OF_MEMORY)
      return p.error(status, "out of host memory for the simulation's scratch buffers");
    if (status != PHX_STATUS_OK)
      return p.error(status, "no host kernel for op " + std::to_string(op->op) + " on dtype " +
                                 std::to_string(op->inputs[0].dtype));
    account(p, *p.devices[stream_of(stream).device], *op);
    *out_ticket = next_ticket(stream);
    return PHX_STATUS_OK;
  });
}

Executable& executable_of(void* executable) { return *static_cast<Executable*>(executable); }

// Makes the executable from a serialized model (serialized_model.h) instead of compiling:
// the bytes must be whole, of this plugin version and chip configuration, and for this
// graph. The program enters the compile cache as compiled (a later compile of the graph
// is a hit), at no modelled compile time.
phx_status load_executable(Plugin& p, uint32_t device, const phx_plugin_graph& graph,
                           void** out_executable) {
  SerializedModel model;
  std::string error;
  const auto* bytes = static_cast<const uint8_t*>(graph.serialized);
  if (!read_serialized_model({bytes, graph.serialized_size}, model, error))
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "tpu-sim: serialized executable " + error);
  const std::string signature = graph_signature(graph);
  if (!model_matches(model, kVersion, chip_key(p.config), signature, error))
    return p.error(PHX_STATUS_INCOMPATIBLE, "tpu-sim: serialized executable " + error);
  std::unique_ptr<Executable> executable = restore_executable(graph, device, model.costs, error);
  if (executable == nullptr)
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "tpu-sim: serialized executable: " + error);
  executable->signature = signature;
  Device& d = *p.devices[device];
  {
    std::lock_guard lock(d.mutex);
    d.totals.cache_evictions += d.cache.lookup(signature).evicted ? 1 : 0;
    ++d.totals.executables_loaded;
  }
  *out_executable = executable.release();
  return PHX_STATUS_OK;
}

// Compiles graph as one program: builds the executable (its nodes and their costs), then
// looks the graph's signature up in the chip's compile cache, where a miss costs the whole
// program's modelled compile time and a hit none. With serialized bytes, loads instead.
phx_status graph_compile(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                         void** out_executable) {
  Plugin& p = self(plugin);
  return guarded(*p.host, [&] {
    if (graph->serialized != nullptr) return load_executable(p, device, *graph, out_executable);
    std::string error;
    std::unique_ptr<Executable> executable = build_executable(*graph, device, p.config, error);
    if (executable == nullptr) return p.error(PHX_STATUS_UNSUPPORTED, error);
    executable->signature = graph_signature(*graph);
    Device& d = *p.devices[device];
    {
      std::lock_guard lock(d.mutex);
      const CompileCache::Lookup lookup = d.cache.lookup(executable->signature);
      executable->cache_hit = lookup.hit;
      executable->compile_time_ns =
          lookup.hit ? 0.0 : modelled_program_compile_time_ns(*executable);
      d.totals.add_lookup(lookup, executable->compile_time_ns);
      ++(lookup.hit ? d.totals.graph_cache_hits : d.totals.graph_cache_misses);
    }
    if (!executable->cache_hit)
      for (const ExecutableNode& node : executable->nodes)
        log_poor_mapping(p, node.cost, "node '" + node.name + "'");
    *out_executable = executable.release();
    return PHX_STATUS_OK;
  });
}

// Writes the compiled model (serialized_model.h): the executable's signature and node
// costs, keyed by the plugin's version and the chip's configuration.
phx_status executable_serialize(void* plugin, void* executable, void* buffer, size_t capacity,
                                size_t* out_size) {
  Plugin& p = self(plugin);
  const Executable& e = executable_of(executable);
  return guarded(*p.host, [&] {
    SerializedModel model;
    model.plugin_version = kVersion;
    model.chip_key = chip_key(p.config);
    model.signature = e.signature;
    for (const ExecutableNode& node : e.nodes) model.costs.push_back(node.cost);
    const std::vector<uint8_t> bytes = write_serialized_model(model);
    *out_size = bytes.size();
    if (capacity >= bytes.size()) std::memcpy(buffer, bytes.data(), bytes.size());
    return PHX_STATUS_OK;
  });
}

// Each node's time from the op cost model (executable.h, estimate_nodes); UINT64_MAX for
// a node whose op or dtype the chip does not run. The model is arithmetic on the shapes,
// the same at every call: PHX_PLUGIN_GRAPH_DETERMINISTIC changes nothing.
phx_status graph_estimate(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                          uint64_t* out_time_ns) {
  Plugin& p = self(plugin);
  return guarded(*p.host, [&] {
    const std::vector<uint64_t> times = estimate_nodes(*graph, p.config);
    for (size_t n = 0; n < graph->node_count; ++n) {
      const phx_plugin_node& node = graph->nodes[n];
      const bool has_first = node.input_count > 0 && node.inputs[0] != PHX_PLUGIN_NO_VALUE;
      int runs = 0;
      if (has_first)
        op_supported(plugin, device, node.op, graph->values[node.inputs[0]].dtype, &runs);
      out_time_ns[n] = runs ? times[n] : UINT64_MAX;
    }
    return PHX_STATUS_OK;
  });
}

// Runs every node with the ops' own code (execute), as one ticket. The nodes' costs were
// fixed at compile time and no node looks the compile cache up: the program is compiled.
phx_status executable_run(void* plugin, void* stream, void* executable,
                          const phx_plugin_tensor* values, size_t value_count,
                          phx_plugin_profile* const* node_profiles, uint64_t* out_ticket) {
  Plugin& p = self(plugin);
  const Executable& e = executable_of(executable);
  if (value_count != e.value_count)
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "executable_run: " + std::to_string(value_count) +
                                                    " values for a graph of " +
                                                    std::to_string(e.value_count));
  return guarded(*p.host, [&] {
    for (const ExecutableNode& node : e.nodes) {
      const BoundNode bound(node, values);
      const phx_status status = execute(p, bound.op());
      if (status == PHX_STATUS_OUT_OF_MEMORY)
        return p.error(status, "node '" + node.name +
                                   "': out of host memory for the simulation's scratch buffers");
      if (status != PHX_STATUS_OK)
        return p.error(
            status, "node '" + node.name + "': no host kernel for op " + std::to_string(node.op));
    }
    for (size_t i = 0; node_profiles != nullptr && i < e.nodes.size(); ++i)
      if (node_profiles[i] != nullptr) add_cost_metrics(*node_profiles[i], e.nodes[i].cost);
    Device& d = *p.devices[e.device];
    {
      std::lock_guard lock(d.mutex);
      const RunCost& c = e.run_cost;
      d.totals.add_work(e.nodes.size(), c.mxu_cycles, c.vector_cycles, c.hbm_bytes,
                        c.modelled_time_ns);
      ++d.totals.executable_runs;
    }
    *out_ticket = next_ticket(stream);
    return PHX_STATUS_OK;
  });
}

void executable_destroy(void*, void* executable) { delete &executable_of(executable); }

phx_status executable_stats(void*, void* executable, phx_metric* out_metrics, size_t capacity,
                            size_t* out_count) {
  const Executable& e = executable_of(executable);
  const RunCost& c = e.run_cost;
  const phx_metric metrics[] = {
      {"nodes", double(e.nodes.size())},
      {"mxu_nodes", double(c.mxu_nodes)},
      {"modelled_time_ns", c.modelled_time_ns},
      {"mxu_cycles", double(c.mxu_cycles)},
      {"vector_cycles", double(c.vector_cycles)},
      {"hbm_bytes", double(c.hbm_bytes)},
      {"compile_cache_hit", e.cache_hit ? 1.0 : 0.0},
      {"compile_time_ns", e.compile_time_ns},
      {"loaded_from_serialized", e.loaded_from_serialized ? 1.0 : 0.0},
  };
  return write_device_stats(metrics, out_metrics, capacity, out_count);
}

phx_status device_stats(void* plugin, uint32_t device, phx_metric* out_metrics, size_t capacity,
                        size_t* out_count) {
  Device& d = *self(plugin).devices[device];
  Totals t;
  {
    std::lock_guard lock(d.mutex);
    t = d.totals;
  }
  const phx_metric metrics[] = {
      {"ops", double(t.ops)},
      {"modelled_cycles_total", double(t.mxu_cycles + t.vector_cycles)},
      {"mxu_cycles_total", double(t.mxu_cycles)},
      {"vector_cycles_total", double(t.vector_cycles)},
      {"modelled_time_ns_total", t.modelled_time_ns},
      {"hbm_bytes_total", double(t.hbm_bytes)},
      {"compile_cache_hits", double(t.cache_hits)},
      {"compile_cache_misses", double(t.cache_misses)},
      {"compile_cache_evictions", double(t.cache_evictions)},
      {"compile_time_ns_total", t.compile_time_ns},
      {"graph_compile_cache_hits", double(t.graph_cache_hits)},
      {"graph_compile_cache_misses", double(t.graph_cache_misses)},
      {"executable_runs", double(t.executable_runs)},
      {"executables_loaded", double(t.executables_loaded)},
      {"memory_evictions", double(d.hbm.reuse_stats().evictions)},
  };
  return write_device_stats(metrics, out_metrics, capacity, out_count);
}

// The interconnect model's time (ici_model.h), rounded up to whole ns. The host checked
// the devices: at least two, distinct, of this plugin.
phx_status collective_estimate(void* plugin, phx_plugin_collective collective,
                               const uint32_t* devices, size_t device_count, uint64_t bytes,
                               uint64_t* out_time_ns) {
  Plugin& p = self(plugin);
  return guarded(*p.host, [&] {
    // Read as an int first: a value outside the enum (a newer host's collective) must not
    // be loaded as one.
    int kind;
    std::memcpy(&kind, &collective, sizeof kind);
    const std::optional<double> time_ns =
        kind < PHX_PLUGIN_COLLECTIVE_ALL_REDUCE || kind > PHX_PLUGIN_COLLECTIVE_SEND
            ? std::nullopt
            : collective_time_ns(p.config.pod, static_cast<phx_plugin_collective>(kind),
                                 {devices, device_count}, bytes);
    if (!time_ns)
      return p.error(PHX_STATUS_UNSUPPORTED,
                     "tpu-sim: no interconnect model for collective " + std::to_string(kind));
    *out_time_ns = static_cast<uint64_t>(std::ceil(*time_ns));
    return PHX_STATUS_OK;
  });
}

constexpr phx_plugin_api kApi = simulator_api<Plugin>({
    .name = "tpu-sim",
    .version = kVersion,
    .abi_minor = PHX_PLUGIN_ABI_MINOR,
    .initialize = initialize,
    .device_info = device_info,
    .op_supported = op_supported,
    .stream_submit = stream_submit,
    .device_stats = device_stats,
    .graph_compile = graph_compile,
    .executable_run = executable_run,
    .executable_destroy = executable_destroy,
    .executable_stats = executable_stats,
    .graph_estimate = graph_estimate,
    .executable_serialize = executable_serialize,
    .collective_estimate = collective_estimate,
});

}  // namespace
}  // namespace phx::tpu_sim

extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host*,
                                                         const phx_plugin_api** out_api) {
  *out_api = &phx::tpu_sim::kApi;
  return PHX_STATUS_OK;
}
