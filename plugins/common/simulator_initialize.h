// The initialize entry of a simulator plugin: its configuration read from its sources
// (config_sources.h) and parsed, then the plugin made from it, and one line logged that
// says what is simulated and from which file. A configuration error rejects the plugin
// with a message that names the key and where it was set.
#pragma once

#include <phynexus/plugin.h>

#include <string>

#include "config_sources.h"
#include "reporting.h"

namespace phx::plugin_common {

// Plugin is made as Plugin(host, config) and has devices, a non-empty sequence of
// pointers to devices with a name.
template <class Plugin, class Config>
phx_status initialize_simulator(const phx_plugin_host* host,
                                bool (*read_sources)(ConfigSources&, std::string&),
                                bool (*parse)(const ConfigSources&, Config&, std::string&),
                                void** out_plugin) {
  return guarded(*host, [&] {
    ConfigSources sources;
    Config config;
    std::string error;
    if (!read_sources(sources, error) || !parse(sources, config, error))
      return fail(*host, PHX_STATUS_INVALID_ARGUMENT, "configuration: " + error);
    auto* plugin = new Plugin(host, config);
    host_log(*host, PHX_LOG_INFO,
             std::to_string(plugin->devices.size()) + " x " + plugin->devices[0]->name +
                 (sources.file_path.empty() ? "" : ", config " + sources.file_path));
    *out_plugin = plugin;
    return PHX_STATUS_OK;
  });
}

}  // namespace phx::plugin_common
