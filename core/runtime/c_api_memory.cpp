// The C API of device memory: statistics, limits, cached pools.
#include <phynexus/phynexus.h>

#include "abi_structs.h"
#include "context.h"
#include "errors.h"

using namespace phx;

extern "C" {

PHX_API phx_status phx_memory_stats_get(phx_context handle, size_t device, phx_memory_stats* out_stats) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_stats, "out_stats");
    check_struct_size(out_stats->struct_size, "out_stats");
    Device& d = context.device(device);
    phx_memory_stats stats{};
    stats.struct_size = sizeof stats;
    auto& plugin = *d.plugin;
    plugin.call("memory_stats", [&] {
      return plugin.api().memory_stats(plugin.instance(), d.local_index, &stats);
    });
    write_struct(out_stats, stats, "out_stats");
  });
}

PHX_API phx_status phx_memory_set_limit(phx_context handle, size_t device, uint64_t limit_bytes) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    Device& d = context.device(device);
    auto& plugin = *d.plugin;
    if (plugin.api().memory_set_limit == nullptr)
      fail(PHX_STATUS_UNSUPPORTED, "plugin '" + plugin.name + "' offers no memory limit");
    plugin.call("memory_set_limit", [&] {
      return plugin.api().memory_set_limit(plugin.instance(), d.local_index, limit_bytes);
    });
  });
}

PHX_API phx_status phx_memory_release_cached(phx_context handle, size_t device) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    Device& d = context.device(device);
    auto& plugin = *d.plugin;
    // A plugin without pools has nothing cached to release.
    if (plugin.api().memory_release_cached == nullptr) return;
    plugin.call("memory_release_cached", [&] {
      return plugin.api().memory_release_cached(plugin.instance(), d.local_index);
    });
  });
}

}  // extern "C"
