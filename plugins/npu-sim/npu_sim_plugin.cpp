// The NPU-sim plugin: simulated NPUs of a profile's class (docs/npu-sim.md). Tensors live
// in host memory counted against each device's DRAM; the ops the profile supports run
// synchronously on submission with the host kernels; anything else is UNSUPPORTED, for
// the runtime's CPU fallback. f16 ops compute as the host kernels do, as an f16 NPU
// datapath with a wide accumulator does: f16 operands, f32 products and sums, one
// rounding to f16 per output (docs/npu-sim.md, "f16 compute"). Every op is costed by the timing
// model; the figures, and the quantization error when profiling, go to the op's profile record and
// to the device statistics.
#include <phynexus/plugin.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "dram.h"
#include "host_buffers.h"
#include "memory_entries.h"
#include "op_cost.h"
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
  uint64_t ops = 0, macs = 0, dram_bytes = 0, memory_bound_ops = 0;
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

// Whether the device runs op with a first input of dtype: the profile lists it, the
// host kernels compute it, and the device has the MAC array its rate needs.
bool supports(const Plugin& p, phx_op_id op, phx_dtype dtype) {
  // Compared as an int: phx_dtype's range ends at 7, so clang finds ">= 8" always false.
  const int value = dtype;
  if (value <= PHX_DTYPE_INVALID || value >= PHX_DTYPE_COUNT) return false;
  const DeviceFigures& f = p.config.figures;
  if ((supported_dtypes(*f.profile, op) & PHX_DTYPE_BIT(dtype)) == 0) return false;
  if (!kernels::op_supported(op, dtype)) return false;
  const bool mac_op = op == PHX_OP_MATMUL || op == PHX_OP_QMATMUL || op == PHX_OP_QCONV2D ||
                      op == PHX_OP_CONV2D || op == PHX_OP_ATTENTION;
  if (mac_op && dtype == PHX_DTYPE_I16) return f.int16_macs_per_cycle > 0;
  if (mac_op && dtype == PHX_DTYPE_F16) return f.fp16_macs_per_cycle > 0;
  return true;
}

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
  *out_supported = supports(self(plugin), op, dtype) ? 1 : 0;
  return PHX_STATUS_OK;
}

// Costs op, adds it to the device's totals and, when profiling, to its record with the
// quantization error.
void account(Plugin& p, Device& d, const phx_plugin_op& op, const kernels::HostTensor* in,
             const kernels::HostTensor* out) {
  const Estimate e = estimate_op(op, p.machine);
  {
    std::lock_guard lock(d.mutex);
    Totals& t = d.totals;
    ++t.ops;
    t.macs += e.macs;
    t.dram_bytes += e.dram_bytes;
    t.compute_ns += e.compute_ns;
    t.memory_ns += e.memory_ns;
    t.modelled_ns += e.estimated_ns;
    t.memory_bound_ops += e.memory_bound ? 1 : 0;
  }
  if (op.profile == nullptr) return;
  phx_plugin_profile& profile = *op.profile;
  add_metric(profile, "macs", double(e.macs));
  add_metric(profile, "cycles", double(e.cycles));
  add_metric(profile, "dram_bytes", double(e.dram_bytes));
  add_metric(profile, "tiles", double(e.tiles));
  add_metric(profile, "compute_ns", e.compute_ns);
  add_metric(profile, "memory_ns", e.memory_ns);
  add_metric(profile, "estimated_time_ns", e.estimated_ns);
  add_metric(profile, "memory_bound", e.memory_bound ? 1.0 : 0.0);
  if (const auto error =
          quant_error_rel(op.op, op.params, in, op.input_count, out, op.output_count, p.pool))
    add_metric(profile, "quant_error_rel", *error);
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
  if (!supports(p, op->op, first))
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
  };
  return write_device_stats(metrics, out_metrics, capacity, out_count);
}

// ABI 1.1: the host asks about, and submits, the quantized ops.
constexpr phx_plugin_api kApi = simulator_api<Plugin>({
    .name = "npu-sim",
    .version = "0.1.0",
    .abi_minor = 1,
    .initialize = initialize,
    .device_info = device_info,
    .op_supported = op_supported,
    .stream_submit = stream_submit,
    .device_stats = device_stats,
});

}  // namespace
}  // namespace phx::npu_sim

extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host* host,
                                                         const phx_plugin_api** out_api) {
  // The quantized ops need a host of ABI 1.1.
  if (host->abi_major != 1 || host->abi_minor < 1) return PHX_STATUS_UNSUPPORTED;
  *out_api = &phx::npu_sim::kApi;
  return PHX_STATUS_OK;
}
