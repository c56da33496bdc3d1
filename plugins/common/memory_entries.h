// The memory entries of a plugin whose devices each own a MemoryPool of host memory.
// Plugin, the type the plugin's handle points to, has
//   const phx_plugin_host* host;
//   MemoryPool& memory(uint32_t device);
#pragma once

#include <phynexus/plugin.h>

#include <string>

#include "host_buffers.h"
#include "memory_pool.h"
#include "reporting.h"

namespace phx::plugin_common {

template <class Plugin>
Plugin& plugin_of(void* plugin) {
  return *static_cast<Plugin*>(plugin);
}

// A MemoryBlock of the device's memory. Out of host memory when the host refuses what
// the device's memory allowed.
template <class Plugin>
phx_status pool_buffer_allocate(void* plugin, uint32_t device, uint64_t size, void** out_buffer) {
  Plugin& p = plugin_of<Plugin>(plugin);
  return guarded(*p.host, [&] {
    std::string error;
    MemoryBlock* block = p.memory(device).allocate(size, error);
    if (block == nullptr) return fail(*p.host, PHX_STATUS_OUT_OF_MEMORY, error);
    *out_buffer = block;
    return PHX_STATUS_OK;
  });
}

template <class Plugin>
void pool_buffer_free(void* plugin, void* buffer) {
  MemoryBlock& block = block_of(buffer);
  if (block.imported)
    delete &block;
  else
    plugin_of<Plugin>(plugin).memory(block.device).free(&block);
}

template <class Plugin>
phx_status memory_stats(void* plugin, uint32_t device, phx_memory_stats* out_stats) {
  const phx_memory_stats stats = plugin_of<Plugin>(plugin).memory(device).stats();
  phx_plugin_write_struct(out_stats, &stats, sizeof stats);
  return PHX_STATUS_OK;
}

template <class Plugin>
phx_status memory_set_limit(void* plugin, uint32_t device, uint64_t limit_bytes) {
  plugin_of<Plugin>(plugin).memory(device).set_limit(limit_bytes);
  return PHX_STATUS_OK;
}

template <class Plugin>
phx_status memory_release_cached(void* plugin, uint32_t device) {
  plugin_of<Plugin>(plugin).memory(device).release_cached();
  return PHX_STATUS_OK;
}

}  // namespace phx::plugin_common
