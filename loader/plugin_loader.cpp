#include "plugin_loader.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>

#include "errors.h"
#include "file_safety.h"
#include "search_path.h"

namespace phx {
namespace {

// A step of the load that failed: the plugin is rejected with this reason.
struct Rejection {
  std::string reason;
};

struct RequiredEntry {
  const char* name;
  size_t offset;
};

#define PHX_REQUIRED(entry) \
  { #entry, offsetof(phx_plugin_api, entry) }
constexpr RequiredEntry kRequiredEntries[] = {
    PHX_REQUIRED(initialize),    PHX_REQUIRED(shutdown),         PHX_REQUIRED(device_count),
    PHX_REQUIRED(device_info),   PHX_REQUIRED(op_supported),     PHX_REQUIRED(buffer_allocate),
    PHX_REQUIRED(buffer_free),   PHX_REQUIRED(buffer_write),     PHX_REQUIRED(buffer_read),
    PHX_REQUIRED(stream_create), PHX_REQUIRED(stream_destroy),   PHX_REQUIRED(stream_submit),
    PHX_REQUIRED(stream_wait),   PHX_REQUIRED(stream_completed), PHX_REQUIRED(memory_stats),
};
#undef PHX_REQUIRED

std::string version_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

std::vector<std::unique_ptr<Plugin>> PluginLoader::load_all(const LoaderOptions& options) {
  std::vector<std::unique_ptr<Plugin>> plugins;
  for (const auto& entry :
       plugin_search_path(options.explicit_paths, options.use_default_search_path)) {
    auto files = plugin_candidates(entry);
    if (files.empty()) options.logger->debug("loader: nothing in '{}'", entry);
    for (auto& file : files) {
      auto plugin = std::make_unique<Plugin>(file, options.logger, options.num_threads);
      load(*plugin, plugins);
      if (plugin->loaded()) {
        options.logger->debug("loader: {}: loaded '{}' {} (ABI {}), {} device(s)", file,
                              plugin->name, plugin->version,
                              version_text(plugin->abi_major, plugin->abi_minor),
                              plugin->device_count);
      } else {
        options.logger->debug("loader: {}: {} at stage {}: {}", file,
                              plugin->state == PHX_PLUGIN_SHADOWED ? "shadowed" : "rejected",
                              static_cast<int>(plugin->stage), plugin->reason);
      }
      plugins.push_back(std::move(plugin));
    }
  }
  return plugins;
}

void PluginLoader::load(Plugin& plugin, const std::vector<std::unique_ptr<Plugin>>& earlier) {
  try {
    open(plugin);
    negotiate(plugin);
    validate(plugin);
    for (const auto& other : earlier) {
      if (other->loaded() && other->name == plugin.name) {
        plugin.state = PHX_PLUGIN_SHADOWED;
        plugin.reason = "shadowed by " + other->path + ", found earlier with the same name '" +
                        plugin.name + "'";
        return;
      }
    }
    start(plugin);
    plugin.state = PHX_PLUGIN_LOADED;
  } catch (const Rejection& r) {
    plugin.state = PHX_PLUGIN_REJECTED;
    plugin.reason = r.reason;
  }
}

void PluginLoader::open(Plugin& plugin) {
  // Checked before dlopen, which runs the library's constructors: once mapped, a
  // library planted by another user has already run its code in this process.
  FileSafety safety = check_plugin_file(plugin.path);
  if (!safety.problem.empty()) {
    plugin.logger_->warn("loader: refusing {}: {}", plugin.path, safety.problem);
    throw Rejection{"refused: " + safety.problem};
  }
  dlerror();
  plugin.library_ = dlopen(safety.resolved.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin.library_ == nullptr) {
    const char* why = dlerror();
    throw Rejection{std::string("cannot open: ") + (why ? why : "dlopen failed")};
  }
  plugin.stage = PHX_PLUGIN_STAGE_OPENED;
}

void PluginLoader::negotiate(Plugin& plugin) {
  auto entry = reinterpret_cast<phx_plugin_entry_fn>(dlsym(plugin.library_, PHX_PLUGIN_ENTRY_NAME));
  if (entry == nullptr)
    throw Rejection{"no entry symbol '" PHX_PLUGIN_ENTRY_NAME "' (not a Phynexus plugin?)"};
  const phx_plugin_api* table = nullptr;
  try {
    plugin.call(PHX_PLUGIN_ENTRY_NAME, [&] { return entry(&plugin.host_, &table); });
  } catch (const Error& e) {
    throw Rejection{e.what()};
  }
  if (table == nullptr) throw Rejection{PHX_PLUGIN_ENTRY_NAME " returned no function table"};
  plugin.stage = PHX_PLUGIN_STAGE_ENTRY;

  constexpr size_t kVersionEnd = offsetof(phx_plugin_api, abi_minor) + sizeof(uint32_t);
  if (table->struct_size < kVersionEnd)
    throw Rejection{"function table too small to hold its ABI version (struct_size " +
                    std::to_string(table->struct_size) + ")"};
  plugin.abi_major = table->abi_major;
  plugin.abi_minor = table->abi_minor;
  // Signed: with a minimum minor of 0 an unsigned comparison would always be false.
  const int64_t minor = table->abi_minor;
  if (table->abi_major != PHX_PLUGIN_ABI_MAJOR || minor < PHX_PLUGIN_ABI_MIN_MINOR) {
    throw Rejection{"plugin ABI " + version_text(table->abi_major, table->abi_minor) +
                    ", host speaks " + version_text(PHX_PLUGIN_ABI_MAJOR, PHX_PLUGIN_ABI_MINOR) +
                    " and accepts " + version_text(PHX_PLUGIN_ABI_MAJOR, PHX_PLUGIN_ABI_MIN_MINOR) +
                    " or a later minor of the same major"};
  }
  // A newer plugin's table is larger: keep what the host knows. An older one is
  // smaller: what it lacks stays null.
  std::memcpy(&plugin.api_, table, std::min(table->struct_size, sizeof plugin.api_));
  plugin.api_.struct_size = sizeof plugin.api_;
  plugin.stage = PHX_PLUGIN_STAGE_VERSION;
}

void PluginLoader::validate(Plugin& plugin) {
  const auto& api = plugin.api_;
  auto text = [](const char* s) { return s != nullptr ? std::string(s) : std::string(); };
  if (api.name == nullptr || api.name[0] == '\0') throw Rejection{"the plugin has no name"};
  plugin.name = text(api.name);
  plugin.version = text(api.version);
  for (const auto& required : kRequiredEntries) {
    void* pointer = nullptr;
    std::memcpy(&pointer, reinterpret_cast<const char*>(&api) + required.offset, sizeof pointer);
    if (pointer == nullptr)
      throw Rejection{std::string("missing required entry '") + required.name + "'"};
  }
  plugin.stage = PHX_PLUGIN_STAGE_VALIDATED;
}

void PluginLoader::start(Plugin& plugin) {
  try {
    plugin.call("initialize",
                [&] { return plugin.api_.initialize(&plugin.host_, &plugin.instance_); });
  } catch (const Error& e) {
    plugin.instance_ = nullptr;  // a failed initialize is never followed by shutdown
    throw Rejection{std::string("initialize failed (") + phx_status_name(e.status()) +
                    "): " + e.what()};
  }
  plugin.stage = PHX_PLUGIN_STAGE_INITIALIZED;
  uint32_t count = 0;
  try {
    plugin.call("device_count", [&] { return plugin.api_.device_count(plugin.instance_, &count); });
  } catch (const Error& e) {
    throw Rejection{std::string("device_count failed: ") + e.what()};
  }
  if (count == 0) throw Rejection{"no devices"};
  plugin.device_count = count;
  plugin.stage = PHX_PLUGIN_STAGE_READY;
}

}  // namespace phx
