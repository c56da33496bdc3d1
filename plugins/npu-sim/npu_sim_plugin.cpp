// The NPU-sim plugin: simulated NPUs of a profile's class (docs/npu-sim.md). Tensors live
// in host memory counted against each device's DRAM; the ops the profile supports run
// synchronously on submission with the host kernels; anything else is UNSUPPORTED, for
// the runtime's CPU fallback. f16 ops compute as the host kernels do, as an f16 NPU
// datapath with a wide accumulator does: f16 operands, f32 products and sums, one
// rounding to f16 per output (docs/npu-sim.md, "f16 compute"). Every op is costed by the timing
// model; the figures, and the quantization error when profiling, go to the op's profile record and
// to the device statistics. A graph part is compiled (executable.h): with calibration ranges
// its f32 matmuls and convolutions are quantized and its other f32 nodes run in f16
// (graph_quantizer.h), which graph_claim offers the host.
#include <phynexus/plugin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "dram.h"
#include "executable.h"
#include "executable_run.h"
#include "graph_quantizer.h"
#include "host_buffers.h"
#include "memory_entries.h"
#include "node_cost.h"
#include "op_cost.h"
#include "op_support.h"
#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"
#include "property_list.h"
#include "quant_error.h"
#include "reporting.h"
#include "simulator_api.h"
#include "simulator_initialize.h"
#include "sync_stream.h"

namespace phx::npu_sim {
namespace {

using namespace plugin_common;

// "8 MiB (8388608 bytes)", "16 GiB (17179869184 bytes)".
std::string size_text(uint64_t bytes) {
  const bool gib = bytes >= (uint64_t{1} << 30);
  const double unit = gib ? double(uint64_t{1} << 30) : double(1 << 20);
  return format_number(double(bytes) / unit) + (gib ? " GiB (" : " MiB (") + std::to_string(bytes) +
         " bytes)";
}

// The running totals of phx_device_stats.
struct Totals {
  uint64_t ops = 0, macs = 0, dram_bytes = 0, memory_bound_ops = 0, executable_runs = 0;
  double compute_ns = 0, memory_ns = 0, modelled_ns = 0;
};

// The device properties of a device of config, which runs supported_ops.
std::vector<std::pair<std::string, std::string>> describe_device(const NpuConfig& config,
                                                                 const std::string& supported_ops) {
  const DeviceFigures& f = config.figures;
  return {
      {"profile", f.profile->name},
      {"class", f.profile->description},
      {"sram", size_text(f.sram_bytes)},
      {"dram", size_text(f.dram_bytes)},
      {"dram_bandwidth", format_number(f.dram_bandwidth_gbps) + " GB/s"},
      {"int8_macs_per_cycle", std::to_string(f.int8_macs_per_cycle)},
      {"int16_macs_per_cycle", std::to_string(f.int16_macs_per_cycle)},
      {"fp16_macs_per_cycle", std::to_string(f.fp16_macs_per_cycle)},
      {"clock", format_number(f.clock_ghz) + " GHz"},
      {"peak_int8_tops", format_number(f.peak_int8_tops())},
      {"peak_int16_tops", format_number(f.peak_int16_tops())},
      {"peak_fp16_tflops", format_number(f.peak_fp16_tflops())},
      {"op_overhead", format_number(f.op_overhead_ns) + " ns"},
      {"memory_optimization", config.memory_optimization ? "on" : "off"},
      {"supported_ops", supported_ops},
      {"source", f.profile->source},
  };
}

struct Device {
  Device(uint32_t index, const NpuConfig& config)
      : name(std::string("NPU ") + config.figures.profile->name + " (simulated)"),
        supported_ops(describe_ops(*config.figures.profile)),
        properties(describe_device(config, supported_ops)),
        dram(index, config.figures.dram_bytes, dram_options(config.memory_optimization)) {
    if (config.memory_limit != 0) dram.set_limit(config.memory_limit);
  }

  std::string name;
  std::string supported_ops;
  PropertyList properties;
  MemoryPool dram;
  std::mutex mutex;  // guards totals
  Totals totals;
};

struct Plugin {
  Plugin(const phx_plugin_host* h, const NpuConfig& c)
      : host(h), config(c), machine(machine_of(c.figures)), pool(h->num_threads) {
    for (uint32_t i = 0; i < config.devices; ++i)
      devices.push_back(std::make_unique<Device>(i, config));
  }

  const phx_plugin_host* host;
  NpuConfig config;
  Machine machine;
  kernels::ThreadPool pool;
  std::vector<std::unique_ptr<Device>> devices;

  MemoryPool& memory(uint32_t device) { return devices[device]->dram; }
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
  const uint64_t total = d.dram.capacity();
  phx_plugin_device_info info{};
  info.struct_size = sizeof info;
  info.type = PHX_DEVICE_NPU;
  info.name = d.name.c_str();
  info.vendor = "Phynexus (simulated)";
  info.memory_total_bytes = total;
  info.memory_available_bytes = total - d.dram.in_use();
  info.compute_units = p.config.figures.profile->cores;
  info.dtype_mask = p.config.figures.profile->tensor_dtypes;
  info.properties = d.properties.data();
  info.property_count = d.properties.size();
  phx_plugin_write_struct(out, &info, sizeof info);
  return PHX_STATUS_OK;
}

phx_status op_supported(void* plugin, uint32_t, phx_op_id op, phx_dtype dtype, int* out_supported) {
  *out_supported = device_runs(self(plugin).config.figures, op, dtype) ? 1 : 0;
  return PHX_STATUS_OK;
}

// The timing model's figures of one op (or node), for its profile record.
void add_estimate_metrics(phx_plugin_profile& profile, const Estimate& e) {
  add_metric(profile, "macs", double(e.macs));
  add_metric(profile, "cycles", double(e.cycles));
  add_metric(profile, "dram_bytes", double(e.dram_bytes));
  add_metric(profile, "tiles", double(e.tiles));
  add_metric(profile, "compute_ns", e.compute_ns);
  add_metric(profile, "memory_ns", e.memory_ns);
  add_metric(profile, "estimated_time_ns", e.estimated_ns);
  add_metric(profile, "memory_bound", e.memory_bound ? 1.0 : 0.0);
}

// Adds ops of the costs e (their sums) to the device's totals.
void add_totals(Device& d, uint64_t ops, const Estimate& e, uint64_t memory_bound_ops) {
  std::lock_guard lock(d.mutex);
  Totals& t = d.totals;
  t.ops += ops;
  t.macs += e.macs;
  t.dram_bytes += e.dram_bytes;
  t.compute_ns += e.compute_ns;
  t.memory_ns += e.memory_ns;
  t.modelled_ns += e.estimated_ns;
  t.memory_bound_ops += memory_bound_ops;
}

// Costs op, adds it to the device's totals and, when profiling, to its record with the
// quantization error.
void account(Plugin& p, Device& d, const phx_plugin_op& op, const kernels::HostTensor* in,
             const kernels::HostTensor* out) {
  const Estimate e = estimate_op(op, p.machine);
  add_totals(d, 1, e, e.memory_bound ? 1 : 0);
  if (op.profile == nullptr) return;
  add_estimate_metrics(*op.profile, e);
  if (const auto error =
          quant_error_rel(op.op, op.params, in, op.input_count, out, op.output_count, p.pool))
    add_metric(*op.profile, "quant_error_rel", *error);
}

phx_status stream_submit(void* plugin, void* stream, const phx_plugin_op* op,
                         uint64_t* out_ticket) {
  Plugin& p = self(plugin);
  Device& d = *p.devices[stream_of(stream).device];
  if (op->input_count == 0 || op->input_count > PHX_MAX_OP_INPUTS || op->output_count == 0 ||
      op->output_count > PHX_MAX_OP_OUTPUTS)
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "unexpected tensor count");
  const phx_dtype first = op->inputs[0].dtype;
  // The host submits only what op_supported allowed; an op past that is refused.
  if (!device_runs(p.config.figures, op->op, first))
    return p.error(PHX_STATUS_UNSUPPORTED, std::string("the ") + p.config.figures.profile->name +
                                               " NPU does not run " + op_name(op->op) + " on " +
                                               dtype_name(first) + " (it runs: " + d.supported_ops +
                                               ")");
  return guarded(*p.host, [&] {
    kernels::HostTensor in[PHX_MAX_OP_INPUTS], out[PHX_MAX_OP_OUTPUTS];
    for (size_t i = 0; i < op->input_count; ++i) in[i] = host_view(op->inputs[i]);
    for (size_t i = 0; i < op->output_count; ++i) out[i] = host_view(op->outputs[i]);
    const phx_status status =
        kernels::run_op(op->op, op->params, in, op->input_count, out, op->output_count, p.pool);
    if (status == PHX_STATUS_OUT_OF_MEMORY)
      return p.error(status, "out of host memory for the simulation's scratch buffers");
    if (status != PHX_STATUS_OK)
      return p.error(status, std::string("the host kernel of ") + op_name(op->op) + " on " +
                                 dtype_name(first) + " failed");
    account(p, d, *op, in, out);
    *out_ticket = next_ticket(stream);
    return PHX_STATUS_OK;
  });
}

phx_status device_stats(void* plugin, uint32_t device, phx_metric* out_metrics, size_t capacity,
                        size_t* out_count) {
  Device& d = *self(plugin).devices[device];
  Totals t;
  {
    std::lock_guard lock(d.mutex);
    t = d.totals;
  }
  const MemoryPool::ReuseStats r = d.dram.reuse_stats();
  const phx_metric metrics[] = {
      {"ops", double(t.ops)},
      {"macs_total", double(t.macs)},
      {"dram_bytes_total", double(t.dram_bytes)},
      {"compute_ns_total", t.compute_ns},
      {"memory_ns_total", t.memory_ns},
      {"modelled_time_ns_total", t.modelled_ns},
      {"memory_bound_ops", double(t.memory_bound_ops)},
      {"host_allocations", double(r.host_allocations)},
      {"buffers_reused", double(r.buffers_reused)},
      {"bytes_reused", double(r.bytes_reused)},
      {"memory_evictions", double(r.evictions)},
      {"executable_runs", double(t.executable_runs)},
  };
  return write_device_stats(metrics, out_metrics, capacity, out_count);
}

// ---- Executables (plugin ABI 1.3; docs/npu-sim.md, "Compiling a float model") ----------

// graph as this plugin reads it: the fields the host's struct_size covers, the others
// zero (no ranges, nothing serialized).
phx_plugin_graph graph_view(const phx_plugin_graph& graph) {
  phx_plugin_graph view{};
  std::memcpy(&view, &graph, std::min(graph.struct_size, sizeof view));
  return view;
}

Executable& executable_of(void* executable) { return *static_cast<Executable*>(executable); }

// Quantizes the weights of the nodes it runs quantized and prices every node; a node the
// device runs in no way is UNSUPPORTED (graph_claim claimed none such).
phx_status graph_compile(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                         void** out_executable) {
  Plugin& p = self(plugin);
  return guarded(*p.host, [&] {
    const phx_plugin_graph view = graph_view(*graph);
    if (view.serialized != nullptr)
      return p.error(PHX_STATUS_INCOMPATIBLE, "npu-sim saves no executables to load again");
    std::unique_ptr<Executable> executable;
    std::string error;
    const phx_status status =
        compile_executable(view, device, p.config.figures, p.machine, executable, error);
    if (status != PHX_STATUS_OK) return p.error(status, error);
    *out_executable = executable.release();
    return PHX_STATUS_OK;
  });
}

// Runs the nodes one after another on the run's tensors, as one ticket, and charges the
// costs fixed at compile time.
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
    uint64_t memory_bound = 0;
    for (size_t n = 0; n < e.nodes.size(); ++n) {
      const ExecutableNode& node = e.nodes[n];
      const phx_status status = run_node(node, values, p.pool);
      if (status == PHX_STATUS_OUT_OF_MEMORY)
        return p.error(status, "node '" + node.name +
                                   "': out of host memory for the simulation's scratch buffers");
      if (status != PHX_STATUS_OK)
        return p.error(
            status, "node '" + node.name + "': the host kernel of " + op_name(node.op) + " failed");
      memory_bound += node.cost.memory_bound ? 1 : 0;
      if (node_profiles != nullptr && node_profiles[n] != nullptr) {
        add_estimate_metrics(*node_profiles[n], node.cost);
        if (const auto error = node_error_rel(node, values, p.pool))
          add_metric(*node_profiles[n], "quant_error_rel", *error);
      }
    }
    Device& d = *p.devices[e.device];
    add_totals(d, e.nodes.size(), e.run_cost, memory_bound);
    {
      std::lock_guard lock(d.mutex);
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
  const Estimate& c = e.run_cost;
  const phx_metric metrics[] = {
      {"nodes", double(e.nodes.size())},
      {"native_nodes", double(e.nodes_computed(NodeCompute::kNative))},
      {"quantized_int8_nodes", double(e.nodes_computed(NodeCompute::kInt8))},
      {"quantized_int16_nodes", double(e.nodes_computed(NodeCompute::kInt16))},
      {"f16_nodes", double(e.nodes_computed(NodeCompute::kF16))},
      {"quantized_weight_bytes", double(e.quantized_weight_bytes)},
      {"modelled_time_ns", c.estimated_ns},
      {"macs", double(c.macs)},
      {"dram_bytes", double(c.dram_bytes)},
      {"compute_ns", c.compute_ns},
      {"memory_ns", c.memory_ns},
  };
  return write_device_stats(metrics, out_metrics, capacity, out_count);
}

// Claims the f32 nodes it runs only in a compiled part: quantized or in f16, which needs
// the calibration ranges (graph_quantizer.h).
phx_status graph_claim(void* plugin, uint32_t, const phx_plugin_graph* graph,
                       uint8_t* out_claimed) {
  Plugin& p = self(plugin);
  return guarded(*p.host, [&] {
    const phx_plugin_graph view = graph_view(*graph);
    for (size_t n = 0; n < view.node_count; ++n) {
      const NodeChoice choice = choose_compute(view, n, p.config.figures);
      out_claimed[n] = choice.runs && choice.compute != NodeCompute::kNative ? 1 : 0;
    }
    return PHX_STATUS_OK;
  });
}

// Each node's modelled time at the dtypes it would compute in; UINT64_MAX where it would
// not run.
phx_status graph_estimate(void* plugin, uint32_t, const phx_plugin_graph* graph,
                          uint64_t* out_time_ns) {
  Plugin& p = self(plugin);
  return guarded(*p.host, [&] {
    const phx_plugin_graph view = graph_view(*graph);
    for (size_t n = 0; n < view.node_count; ++n) {
      const NodeChoice choice = choose_compute(view, n, p.config.figures);
      out_time_ns[n] =
          choice.runs
              ? uint64_t(std::ceil(estimate_node(view, n, choice.compute, p.machine).estimated_ns))
              : UINT64_MAX;
    }
    return PHX_STATUS_OK;
  });
}

phx_status executable_node_report(void* plugin, void* executable, size_t node,
                                  phx_plugin_node_report* out_report) {
  const Executable& e = executable_of(executable);
  if (node >= e.nodes.size())
    return self(plugin).error(PHX_STATUS_INVALID_ARGUMENT, "executable_node_report: node " +
                                                               std::to_string(node) + " of " +
                                                               std::to_string(e.nodes.size()));
  phx_plugin_node_report report{};
  report.struct_size = sizeof report;
  report.compute_dtype = e.compute_dtype(node);
  phx_plugin_write_struct(out_report, &report, sizeof report);
  return PHX_STATUS_OK;
}

// ABI 1.3: the quantized ops (1.1) and the executables.
constexpr phx_plugin_api kApi = simulator_api<Plugin>({
    .name = "npu-sim",
    .version = "0.1.0",
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
    .graph_claim = graph_claim,
    .graph_estimate = graph_estimate,
    .executable_node_report = executable_node_report,
});

}  // namespace
}  // namespace phx::npu_sim

extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host* host,
                                                         const phx_plugin_api** out_api) {
  // The quantized ops need a host of ABI 1.1; a host of 1.1 or 1.2 ignores the
  // executable entries, which it does not know, and submits the ops one by one.
  if (host->abi_major != 1 || host->abi_minor < 1) return PHX_STATUS_UNSUPPORTED;
  *out_api = &phx::npu_sim::kApi;
  return PHX_STATUS_OK;
}
