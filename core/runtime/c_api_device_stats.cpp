// The C API of a device's statistics: memory (in use, limits, cached pools) and the
// plugin's own running figures.
#include <phx/abi_structs.h>
#include <phynexus/phynexus.h>

#include "context.h"
#include "errors.h"

using namespace phx;

extern "C" {

PHX_API phx_status phx_memory_stats_get(phx_context handle, size_t device,
                                        phx_memory_stats* out_stats) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_stats, "out_stats");
    check_struct_size(out_stats->struct_size, "out_stats");
    Device& d = context.device(device);
    phx_memory_stats stats{};
    stats.struct_size = sizeof stats;
    auto& plugin = *d.plugin;
    plugin.call("memory_stats", d.index, [&] {
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
    plugin.call("memory_set_limit", d.index, [&] {
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
    plugin.call("memory_release_cached", d.index, [&] {
      return plugin.api().memory_release_cached(plugin.instance(), d.local_index);
    });
  });
}

PHX_API phx_status phx_device_stats(phx_context handle, size_t device, phx_metric* out_metrics,
                                    size_t capacity, size_t* out_count) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_count, "out_count");
    require(out_metrics != nullptr || capacity == 0, "out_metrics is null but capacity is not 0");
    Device& d = context.device(device);
    auto& plugin = *d.plugin;
    size_t count = 0;
    if (plugin.api().device_stats != nullptr) {
      plugin.call("device_stats", d.index, [&] {
        return plugin.api().device_stats(plugin.instance(), d.local_index, out_metrics, capacity,
                                         &count);
      });
    }
    // The runtime's own figures follow the plugin's.
    if (count < capacity)
      out_metrics[count] = {"fallback_ops", static_cast<double>(d.fallback_ops.load())};
    *out_count = count + 1;
  });
}

}  // extern "C"
