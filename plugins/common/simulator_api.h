// The entry table of a simulator plugin (tpu-sim, npu-sim). A simulator writes its own
// identity, initialize, device description, op support, op submission and statistics;
// shutdown deletes its Plugin, whose devices it counts; its buffers are MemoryBlocks of each
// device's MemoryPool (memory_entries.h, host_buffers.h), its streams synchronous
// (sync_stream.h), and every variant of an op it claims runs, so it leaves op_variant_supported
// out.
#pragma once

#include <phynexus/plugin.h>

#include "host_buffers.h"
#include "memory_entries.h"
#include "sync_stream.h"

namespace phx::plugin_common {

// What each simulator writes itself; every member is required but the executable
// entries (plugin ABI 1.3), which a simulator fills with what it compiles and models.
struct SimulatorEntries {
  const char* name;
  const char* version;
  uint32_t abi_minor;  // the minor of ABI 1 the plugin implements
  decltype(phx_plugin_api::initialize) initialize;
  decltype(phx_plugin_api::device_info) device_info;
  decltype(phx_plugin_api::op_supported) op_supported;
  decltype(phx_plugin_api::stream_submit) stream_submit;
  decltype(phx_plugin_api::device_stats) device_stats;
  decltype(phx_plugin_api::graph_compile) graph_compile = nullptr;
  decltype(phx_plugin_api::executable_run) executable_run = nullptr;
  decltype(phx_plugin_api::executable_destroy) executable_destroy = nullptr;
  decltype(phx_plugin_api::executable_stats) executable_stats = nullptr;
  decltype(phx_plugin_api::graph_claim) graph_claim = nullptr;
  decltype(phx_plugin_api::graph_estimate) graph_estimate = nullptr;
  decltype(phx_plugin_api::executable_serialize) executable_serialize = nullptr;
  decltype(phx_plugin_api::executable_node_report) executable_node_report = nullptr;
  decltype(phx_plugin_api::collective_estimate) collective_estimate = nullptr;
};

template <class Plugin>
void simulator_shutdown(void* plugin) {
  delete &plugin_of<Plugin>(plugin);
}

// The devices Plugin made from its configuration.
template <class Plugin>
phx_status simulator_device_count(void* plugin, uint32_t* out_count) {
  *out_count = static_cast<uint32_t>(plugin_of<Plugin>(plugin).devices.size());
  return PHX_STATUS_OK;
}

// Plugin: as memory_entries.h asks, with MemoryPool, and devices, one owning pointer
// per device.
template <class Plugin>
constexpr phx_plugin_api simulator_api(const SimulatorEntries& own) {
  return {
      sizeof(phx_plugin_api),
      PHX_PLUGIN_ABI_MAJOR,
      own.abi_minor,
      own.name,
      own.version,
      own.initialize,
      simulator_shutdown<Plugin>,
      simulator_device_count<Plugin>,
      own.device_info,
      own.op_supported,
      pool_buffer_allocate<Plugin>,
      pool_buffer_free<Plugin>,
      host_buffer_write,
      host_buffer_read,
      sync_stream_create,
      sync_stream_destroy,
      own.stream_submit,
      sync_stream_wait,
      sync_stream_completed,
      memory_stats<Plugin>,
      memory_set_limit<Plugin>,
      memory_release_cached<Plugin>,
      host_buffer_copy,
      own.device_stats,
      nullptr,  // op_variant_supported
      own.graph_compile,
      own.executable_run,
      own.executable_destroy,
      own.executable_stats,
      own.graph_claim,
      own.graph_estimate,
      own.executable_serialize,
      own.executable_node_report,
      nullptr,  // buffer_import_host: a simulated device's memory stands apart from the host's
      nullptr,  // buffer_host_data: the same
      own.collective_estimate,
  };
}

}  // namespace phx::plugin_common
