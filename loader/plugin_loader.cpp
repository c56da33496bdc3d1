#include "plugin_loader.h"

#include <dlfcn.h>
#include <phx/error.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>

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

// The smallest struct_size whose table holds every required entry.
constexpr size_t required_table_size() {
  size_t end = 0;
  for (const auto& required : kRequiredEntries)
    end = std::max(end, required.offset + sizeof(void (*)()));
  return end;
}

std::string version_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// The debug line that says what became of a candidate file.
void log_outcome(spdlog::logger& logger, const Plugin& plugin) {
  if (plugin.loaded()) {
    logger.debug("loader: {}: loaded '{}' {} (plugin ABI {}), {} device(s)", plugin.path,
                 plugin.name, plugin.version, version_text(plugin.abi_major, plugin.abi_minor),
                 plugin.device_count);
  } else if (plugin.state == PHX_PLUGIN_SHADOWED) {
    logger.debug("loader: {}: shadowed: {}", plugin.path, plugin.reason);
  } else {
    logger.debug("loader: {}: rejected at stage '{}': {}", plugin.path,
                 phx_plugin_stage_name(plugin.stage), plugin.reason);
  }
}

}  // namespace

std::vector<std::unique_ptr<Plugin>> PluginLoader::load_all(const LoaderOptions& options) {
  std::vector<std::unique_ptr<Plugin>> plugins;
  spdlog::logger& logger = *options.logger;
  for (const auto& entry :
       plugin_search_path(options.explicit_paths, options.use_default_search_path)) {
    EntryListing listing = list_search_entry(entry.path);
    if (!listing.problem.empty()) {
      logger.debug("loader: searching {} (from {}): {}", entry.path, entry.origin, listing.problem);
      continue;
    }
    logger.debug("loader: searching {} (from {}): {} candidate(s), {} other file(s)", entry.path,
                 entry.origin, listing.candidates.size(), listing.skipped.size());
    for (const auto& [file, why] : listing.skipped)
      logger.debug("loader: {}: skipped: {}", file, why);
    for (auto& file : listing.candidates) {
      auto plugin = std::make_unique<Plugin>(file, options.logger, options.num_threads);
      load(*plugin, plugins);
      log_outcome(logger, *plugin);
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
    if (plugin.abi_minor > PHX_PLUGIN_ABI_MINOR) {
      plugin.logger_->warn(
          "loader: {}: plugin '{}' was built for plugin ABI {}, newer than this host's {}: "
          "loaded, using only what {} offers",
          plugin.path, plugin.name, version_text(plugin.abi_major, plugin.abi_minor),
          version_text(PHX_PLUGIN_ABI_MAJOR, PHX_PLUGIN_ABI_MINOR),
          version_text(PHX_PLUGIN_ABI_MAJOR, PHX_PLUGIN_ABI_MINOR));
    }
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
    throw Rejection{"function table too small to hold its ABI version: struct_size " +
                    std::to_string(table->struct_size) + ", needs at least " +
                    std::to_string(kVersionEnd)};
  plugin.table_size_ = table->struct_size;
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
  plugin.name = text(api.name);
  plugin.version = text(api.version);
  // Said as such, not as a missing entry: the plugin was built against a header whose
  // table ended earlier, or set struct_size wrongly.
  constexpr size_t kNeeded = required_table_size();
  if (plugin.table_size_ < kNeeded) {
    const RequiredEntry* first_cut = std::find_if(
        std::begin(kRequiredEntries), std::end(kRequiredEntries),
        [&](const RequiredEntry& r) { return r.offset + sizeof(void (*)()) > plugin.table_size_; });
    throw Rejection{"function table too small: struct_size " + std::to_string(plugin.table_size_) +
                    " ends before the required entry '" + first_cut->name +
                    "'; the required entries need struct_size " + std::to_string(kNeeded)};
  }
  if (plugin.name.empty()) throw Rejection{"the plugin has no name"};
  for (const auto& required : kRequiredEntries) {
    void* pointer = nullptr;
    std::memcpy(&pointer, reinterpret_cast<const char*>(&api) + required.offset, sizeof pointer);
    if (pointer == nullptr)
      throw Rejection{std::string("missing required entry '") + required.name + "'"};
  }
  // A host that found graph_compile alone could compile and never run or free what it
  // made: the three come together (plugin.h, "Executables").
  const int executable_entries = (api.graph_compile != nullptr) + (api.executable_run != nullptr) +
                                 (api.executable_destroy != nullptr);
  if (executable_entries != 0 && executable_entries != 3)
    throw Rejection{
        "graph_compile, executable_run and executable_destroy come together; the "
        "plugin sets " +
        std::to_string(executable_entries) + " of them"};
  // A claimed node runs only inside a compiled part: claims without parts could not run.
  if (executable_entries == 0 &&
      (api.graph_claim != nullptr || api.executable_serialize != nullptr ||
       api.executable_node_report != nullptr || api.executable_stats != nullptr))
    throw Rejection{
        "graph_claim, executable_serialize, executable_node_report and executable_stats need "
        "graph_compile, executable_run and executable_destroy"};
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
