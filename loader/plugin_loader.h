// Finds, opens, negotiates with and starts the plugins of a context (docs/loader.md).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

#include "loaded_plugin.h"

namespace phx {

struct LoaderOptions {
  std::vector<std::string> explicit_paths;
  bool use_default_search_path = true;
  uint32_t num_threads = 0;
  std::shared_ptr<spdlog::logger> logger;
};

class PluginLoader {
 public:
  // One record per candidate file, in search order; the loaded ones are initialized and
  // have at least one device. Never throws for a bad plugin: that is recorded.
  static std::vector<std::unique_ptr<Plugin>> load_all(const LoaderOptions& options);

 private:
  static void load(Plugin& plugin, const std::vector<std::unique_ptr<Plugin>>& earlier);
  static void open(Plugin& plugin);
  static void negotiate(Plugin& plugin);
  static void validate(Plugin& plugin);
  static void start(Plugin& plugin);
};

}  // namespace phx
