// The Vulkan plugin (docs/vulkan.md): every physical device with a compute queue is a
// device. This file is the plugin's C ABI: each entry turns the Errors (and Vulkan
// results) of the layers below into a status and a message, marks a device lost for
// good when Vulkan says so, and fails a stream call when the validation layer has
// reported something since the last one.
#include <phx/abi_guard.h>
#include <phynexus/plugin.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "device.h"
#include "executable.h"
#include "instance.h"
#include "roofline.h"
#include "serialized_executable.h"
#include "settings.h"
#include "stream.h"
#include "transfers.h"
#include "vk_check.h"

namespace phx::vulkan {
namespace {

using plugin_common::MeasuredThroughput;
using plugin_common::ProbeSizes;
using plugin_common::Throughput;

// The plugin's version: in its table and in every executable it serializes.
constexpr const char* kVersion = "0.1.0";

// What the estimates assume with PHX_PLUGIN_GRAPH_DETERMINISTIC, and where the measurement
// fails: a discrete GPU's f32 throughput and memory bandwidth of the low end, and an op
// submitted and waited for (docs/vulkan.md, "Time estimates").
constexpr Throughput kNominalThroughput = {/*flops_per_ns=*/1000.0, /*bytes_per_ns=*/100.0,
                                           /*op_overhead_ns=*/20000.0};
// A 128^3 f32 GEMM and a relu over 1 MiB, twice each after an untimed run that makes their
// pipelines, and an op on one element: small, for lavapipe.
constexpr ProbeSizes kProbeSizes = {/*gemm_size=*/128, /*copy_elements=*/int64_t{1} << 18,
                                    /*repeats=*/2};

struct Plugin {
  explicit Plugin(const phx_plugin_host* h)
      : host(h), logger(h), settings(read_settings()), instance(settings, logger) {
    const auto& physical = instance.physical_devices();
    for (uint32_t i = 0; i < physical.size(); ++i) {
      VkPhysicalDeviceProperties props;
      vkGetPhysicalDeviceProperties(physical[i], &props);
      if (!device_selected(settings.devices, i, props.deviceName)) {
        logger.log(PHX_LOG_INFO, std::string(props.deviceName) + " left out by PHX_VULKAN_DEVICES");
        continue;
      }
      try {
        devices.push_back(std::make_unique<Device>(instance, physical[i], uint32_t(devices.size()),
                                                   settings, logger));
      } catch (const Error& e) {
        logger.log(PHX_LOG_WARN, "Vulkan device " + std::to_string(i) + " left out: " + e.what());
      }
    }
    for (size_t i = 0; i < devices.size(); ++i)
      throughputs.push_back(std::make_unique<MeasuredThroughput>());
  }

  const phx_plugin_host* host;
  Logger logger;
  Settings settings;
  Instance instance;
  std::vector<std::unique_ptr<Device>> devices;  // destroyed before the instance
  // Per device, measured at its first graph_estimate.
  std::vector<std::unique_ptr<MeasuredThroughput>> throughputs;

  phx_status error(phx_status status, const std::string& message) const {
    host->set_error(host->host_data, message.c_str());
    return status;
  }
};

Plugin& self(void* plugin) { return *static_cast<Plugin*>(plugin); }
Allocation& allocation(void* buffer) { return *static_cast<Allocation*>(buffer); }

// The plugin's own table, which the measurement runs its probe ops through.
const phx_plugin_api& api_table();

// Runs body for device d (abi_guard); a lost device fails fast, and a loss seen now
// (DEVICE_UNAVAILABLE, which only an Error of the device's carries) is remembered.
template <typename Body>
phx_status guarded(Plugin& p, Device& d, Body&& body) {
  if (d.lost())
    return p.error(PHX_STATUS_DEVICE_UNAVAILABLE,
                   d.name() + " was lost earlier (VK_ERROR_DEVICE_LOST)");
  return abi_guard(std::forward<Body>(body), [&](phx_status status, const char* message) {
    if (status == PHX_STATUS_DEVICE_UNAVAILABLE) d.mark_lost();
    return p.error(status, message);
  });
}

// What the validation layer reported since the last stream call, as that call's error.
phx_status validation_status(Plugin& p) {
  const std::string errors = p.instance.take_validation_errors();
  if (errors.empty()) return PHX_STATUS_OK;
  return p.error(PHX_STATUS_INTERNAL, "Vulkan validation: " + errors);
}

phx_status initialize(const phx_plugin_host* host, void** out_plugin) {
  try {
    auto* plugin = new Plugin(host);
    plugin->logger.log(PHX_LOG_INFO, std::to_string(plugin->devices.size()) + " Vulkan device(s)");
    *out_plugin = plugin;
    return PHX_STATUS_OK;
  } catch (const std::bad_alloc&) {
    return PHX_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    host->set_error(host->host_data, e.what());
    return PHX_STATUS_INTERNAL;
  }
}

void shutdown(void* plugin) { delete &self(plugin); }

phx_status device_count(void* plugin, uint32_t* out_count) {
  *out_count = uint32_t(self(plugin).devices.size());
  return PHX_STATUS_OK;
}

phx_status device_info(void* plugin, uint32_t device, phx_plugin_device_info* out) {
  Device& d = *self(plugin).devices[device];
  const phx_memory_stats stats = d.memory().stats();
  out->type = PHX_DEVICE_GPU;
  out->name = d.name().c_str();
  out->vendor = d.vendor().c_str();
  out->memory_total_bytes = d.memory().capacity();
  out->memory_available_bytes = d.memory().capacity() - stats.bytes_in_use;
  out->compute_units = d.compute_units();
  out->dtype_mask = d.dtype_mask();
  out->properties = d.properties().data();
  out->property_count = d.properties().size();
  return PHX_STATUS_OK;
}

phx_status op_supported(void* plugin, uint32_t device, phx_op_id op, phx_dtype dtype,
                        int* out_supported) {
  Device& d = *self(plugin).devices[device];
  try {
    *out_supported = (d.dtype_mask() & PHX_DTYPE_BIT(dtype)) != 0 &&
                     phx::vulkan::op_supported(d.caps(), op, dtype);
    return PHX_STATUS_OK;
  } catch (...) {
    return self(plugin).error(PHX_STATUS_INTERNAL, "op_supported threw");
  }
}

phx_status buffer_allocate(void* plugin, uint32_t device, uint64_t size, void** out_buffer) {
  Plugin& p = self(plugin);
  Device& d = *p.devices[device];
  return guarded(p, d, [&] { *out_buffer = d.memory().allocate(size, false); });
}

void buffer_free(void* plugin, void* buffer) {
  Allocation& a = allocation(buffer);
  self(plugin).devices[a.device]->memory().free(&a);
}

phx_status buffer_write(void* plugin, void* buffer, uint64_t offset, const void* src,
                        uint64_t size) {
  Plugin& p = self(plugin);
  Allocation& a = allocation(buffer);
  Device& d = *p.devices[a.device];
  return guarded(p, d, [&] { d.transfers().write(a, offset, src, size); });
}

phx_status buffer_read(void* plugin, void* buffer, uint64_t offset, void* dst, uint64_t size) {
  Plugin& p = self(plugin);
  Allocation& a = allocation(buffer);
  Device& d = *p.devices[a.device];
  return guarded(p, d, [&] { d.transfers().read(a, offset, dst, size); });
}

phx_status buffer_copy(void* plugin, void* dst, uint64_t dst_offset, void* src, uint64_t src_offset,
                       uint64_t size) {
  Plugin& p = self(plugin);
  Allocation& to = allocation(dst);
  Allocation& from = allocation(src);
  Device& d = *p.devices[to.device];
  if (to.device == from.device)
    return guarded(p, d, [&] { d.transfers().copy(to, dst_offset, from, src_offset, size); });
  // Between two devices: through host memory, in bounded pieces.
  Device& s = *p.devices[from.device];
  constexpr uint64_t kPiece = 16ull << 20;
  std::vector<char> bounce;
  phx_status status = guarded(p, s, [&] { bounce.resize(std::min(size, kPiece)); });
  for (uint64_t done = 0; status == PHX_STATUS_OK && done < size; done += kPiece) {
    const uint64_t bytes = std::min(kPiece, size - done);
    status =
        guarded(p, s, [&] { s.transfers().read(from, src_offset + done, bounce.data(), bytes); });
    if (status == PHX_STATUS_OK)
      status =
          guarded(p, d, [&] { d.transfers().write(to, dst_offset + done, bounce.data(), bytes); });
  }
  return status;
}

phx_status stream_create(void* plugin, uint32_t device, void** out_stream) {
  Plugin& p = self(plugin);
  Device& d = *p.devices[device];
  return guarded(p, d, [&] { *out_stream = new Stream(d); });
}

void stream_destroy(void*, void* stream) { delete static_cast<Stream*>(stream); }

phx_status stream_submit(void* plugin, void* stream, const phx_plugin_op* op,
                         uint64_t* out_ticket) {
  Plugin& p = self(plugin);
  Stream& s = *static_cast<Stream*>(stream);
  if (const phx_status status = validation_status(p); status != PHX_STATUS_OK) return status;
  return guarded(p, s.device(), [&] { *out_ticket = s.submit(*op); });
}

phx_status stream_wait(void* plugin, void* stream, uint64_t ticket) {
  Plugin& p = self(plugin);
  Stream& s = *static_cast<Stream*>(stream);
  const phx_status status = guarded(p, s.device(), [&] { s.wait(ticket); });
  return status != PHX_STATUS_OK ? status : validation_status(p);
}

phx_status stream_completed(void* plugin, void* stream, uint64_t* out_ticket) {
  Plugin& p = self(plugin);
  Stream& s = *static_cast<Stream*>(stream);
  return guarded(p, s.device(), [&] { *out_ticket = s.completed(); });
}

phx_status memory_stats(void* plugin, uint32_t device, phx_memory_stats* out_stats) {
  const phx_memory_stats stats = self(plugin).devices[device]->memory().stats();
  phx_plugin_write_struct(out_stats, &stats, sizeof stats);
  return PHX_STATUS_OK;
}

phx_status memory_set_limit(void* plugin, uint32_t device, uint64_t limit_bytes) {
  self(plugin).devices[device]->memory().set_limit(limit_bytes);
  return PHX_STATUS_OK;
}

phx_status memory_release_cached(void* plugin, uint32_t device) {
  self(plugin).devices[device]->memory().release_cached();
  return PHX_STATUS_OK;
}

phx_status device_stats(void* plugin, uint32_t device, phx_metric* out_metrics, size_t capacity,
                        size_t* out_count) {
  Device& d = *self(plugin).devices[device];
  const DeviceStats& s = d.stats();
  const phx_metric metrics[] = {
      {"ops", double(s.ops)},
      {"dispatches", double(s.dispatches)},
      {"submissions", double(s.submissions)},
      {"barriers", double(s.barriers)},
      {"runs", double(s.runs)},
      {"bytes_uploaded", double(s.bytes_uploaded)},
      {"bytes_downloaded", double(s.bytes_downloaded)},
      {"bytes_copied", double(s.bytes_copied)},
      {"staged_transfers", double(s.staged_transfers)},
      {"pipelines_created", double(s.pipelines_created)},
      {"pipeline_cache_hits", double(s.pipeline_cache_hits)},
      {"pipeline_cache_misses", double(s.pipeline_cache_misses)},
      {"pipeline_compile_ns", double(s.pipeline_compile_ns)},
      {"memory_blocks", double(d.memory().block_count())},
      {"scratch_bytes", double(d.memory().scratch_bytes())},
  };
  const size_t count = sizeof metrics / sizeof metrics[0];
  for (size_t i = 0; i < count && i < capacity; ++i) out_metrics[i] = metrics[i];
  *out_count = count;
  return PHX_STATUS_OK;
}

// Makes the executable from serialized bytes (serialized_executable.h): checks that they
// are whole, then that they were made by this plugin version for this device, driver and
// graph, seeds the device's pipeline cache with their data and compiles, which then
// creates the pipelines from the cache.
void load_executable(Device& d, const phx_plugin_graph& graph, void** out_executable) {
  SerializedExecutable saved;
  std::string error;
  const auto* bytes = static_cast<const uint8_t*>(graph.serialized);
  if (!read_serialized_executable({bytes, graph.serialized_size}, saved, error))
    throw Error{PHX_STATUS_INVALID_ARGUMENT, "vulkan: serialized executable " + error};
  bool damaged = false;
  if (!serialized_matches(saved, kVersion, d.pipelines().identity(), graph_fingerprint(graph),
                          chain_nodes(plan_fusion(graph, d.caps())), error, damaged))
    throw Error{damaged ? PHX_STATUS_INVALID_ARGUMENT : PHX_STATUS_INCOMPATIBLE,
                "vulkan: serialized executable " + error + " (" + d.name() + ")"};
  d.pipelines().seed(saved.pipeline_cache);
  *out_executable = new Executable(d, graph, /*loaded=*/true);
}

phx_status graph_compile(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                         void** out_executable) {
  Plugin& p = self(plugin);
  Device& d = *p.devices[device];
  return guarded(p, d, [&] {
    if (graph->serialized != nullptr)
      load_executable(d, *graph, out_executable);
    else
      *out_executable = new Executable(d, *graph);
  });
}

// Writes the pipeline cache data of the executable's pipelines and its plan, keyed by this
// plugin version and the device's identity (serialized_executable.h).
phx_status executable_serialize(void* plugin, void* executable, void* buffer, size_t capacity,
                                size_t* out_size) {
  Plugin& p = self(plugin);
  Executable& e = *static_cast<Executable*>(executable);
  return guarded(p, e.device(), [&] {
    SerializedExecutable saved;
    saved.plugin_version = kVersion;
    saved.identity = e.device().pipelines().identity();
    saved.graph_fingerprint = e.graph_fingerprint();
    saved.chains = chain_nodes(e.fusion());
    saved.pipeline_cache = e.device().pipelines().cache_data(e.kernel_keys());
    const std::vector<uint8_t> bytes = write_serialized_executable(saved);
    *out_size = bytes.size();
    if (capacity >= bytes.size()) std::memcpy(buffer, bytes.data(), bytes.size());
  });
}

// A roofline of each node's FLOPs and bytes (roofline.h) at the device's throughputs and
// per-op cost, measured at the first call by running probe ops on it; the nominal ones
// when the consumer asked for determinism. No kernel is chosen by timing.
phx_status graph_estimate(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                          uint64_t* out_time_ns) {
  Plugin& p = self(plugin);
  phx_status status = PHX_STATUS_OK;
  const phx_status outer = guarded(p, *p.devices[device], [&] {
    const bool deterministic = (graph->flags & PHX_PLUGIN_GRAPH_DETERMINISTIC) != 0;
    const Throughput& throughput =
        deterministic ? kNominalThroughput
                      : p.throughputs[device]->get(api_table(), plugin, device, kProbeSizes,
                                                   kNominalThroughput);
    status = estimate_graph(api_table(), plugin, device, *graph, throughput, out_time_ns);
  });
  return outer != PHX_STATUS_OK ? outer : status;
}

phx_status executable_run(void* plugin, void* stream, void* executable,
                          const phx_plugin_tensor* values, size_t value_count,
                          phx_plugin_profile* const* node_profiles, uint64_t* out_ticket) {
  Plugin& p = self(plugin);
  Stream& s = *static_cast<Stream*>(stream);
  Executable& e = *static_cast<Executable*>(executable);
  if (&e.device() != &s.device())
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "executable_run: the executable was compiled for " +
                                                    e.device().name() + ", the stream is on " +
                                                    s.device().name());
  if (value_count != e.value_count())
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "executable_run: " + std::to_string(value_count) +
                                                    " values, the graph has " +
                                                    std::to_string(e.value_count()));
  if (const phx_status status = validation_status(p); status != PHX_STATUS_OK) return status;
  return guarded(p, s.device(), [&] { *out_ticket = s.run(e, values, node_profiles); });
}

void executable_destroy(void*, void* executable) { delete static_cast<Executable*>(executable); }

phx_status executable_stats(void* plugin, void* executable, phx_metric* out_metrics,
                            size_t capacity, size_t* out_count) {
  try {
    const std::vector<phx_metric> metrics = static_cast<Executable*>(executable)->stats();
    for (size_t i = 0; i < metrics.size() && i < capacity; ++i) out_metrics[i] = metrics[i];
    *out_count = metrics.size();
    return PHX_STATUS_OK;
  } catch (const std::bad_alloc&) {
    return self(plugin).error(PHX_STATUS_OUT_OF_MEMORY, "out of host memory");
  }
}

constexpr phx_plugin_api kApi = {
    sizeof(phx_plugin_api),
    PHX_PLUGIN_ABI_MAJOR,
    PHX_PLUGIN_ABI_MINOR,
    "vulkan",
    kVersion,
    initialize,
    shutdown,
    device_count,
    device_info,
    op_supported,
    buffer_allocate,
    buffer_free,
    buffer_write,
    buffer_read,
    stream_create,
    stream_destroy,
    stream_submit,
    stream_wait,
    stream_completed,
    memory_stats,
    memory_set_limit,
    memory_release_cached,
    buffer_copy,
    device_stats,
    nullptr,  // op_variant_supported: every variant of a claimed op runs
    graph_compile,
    executable_run,
    executable_destroy,
    executable_stats,
    nullptr,  // graph_claim: it runs alone every node it runs in a graph
    graph_estimate,
    executable_serialize,
    nullptr,  // executable_node_report: every node computes in its own dtype
    nullptr,  // buffer_import_host: device memory (host memory needs a driver extension)
    nullptr,  // buffer_host_data: device memory, not the host's
    nullptr,  // collective_estimate: no model of a link between GPUs
};

const phx_plugin_api& api_table() { return kApi; }

}  // namespace
}  // namespace phx::vulkan

extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host*,
                                                         const phx_plugin_api** out_api) {
  *out_api = &phx::vulkan::kApi;
  return PHX_STATUS_OK;
}
