// One candidate plugin file as the host holds it (not the SDK: that is
// include/phynexus/plugin.h): what the loader found out about it and, when it loaded,
// the live library, its function table and its instance. Every call into the plugin
// goes through call(), so that a throwing or misbehaving plugin becomes a status.
#pragma once

#include <phynexus/plugin.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace phx {

class Plugin {
 public:
  Plugin(std::string path, std::shared_ptr<spdlog::logger> logger, uint32_t num_threads);
  ~Plugin();  // shuts the plugin down and unloads it if it was loaded
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // The record that phx_plugin_get returns.
  std::string path, name, version, reason;
  uint32_t abi_major = 0, abi_minor = 0;
  phx_plugin_state state = PHX_PLUGIN_REJECTED;
  phx_plugin_stage stage = PHX_PLUGIN_STAGE_FOUND;
  uint32_t device_count = 0;

  bool loaded() const { return state == PHX_PLUGIN_LOADED; }
  // The plugin's table, copied into the host's layout: entries past the plugin's
  // struct_size are null. Valid while loaded.
  const phx_plugin_api& api() const { return api_; }
  void* instance() const { return instance_; }
  // Whether its devices compile a graph's part as a whole (plugin ABI 1.3 executables).
  bool compiles_graphs() const { return api_.graph_compile != nullptr; }

  // The type to list a device with, from the value its device_info gave
  // (docs/loader.md, "Device types"). A type this host knows is kept. An unknown one is
  // listed as PHX_DEVICE_ACCELERATOR, with a warning, when the plugin is of a newer minor
  // (a type its ABI added); from any other plugin it is a bug, and throws phx::Error
  // PLUGIN_ERROR. device is the context's index of the device, for the messages.
  phx_device_type device_type(int reported, uint32_t device) const;

  // Calls a plugin entry. An exception escaping it becomes PLUGIN_ERROR; an unknown
  // status value becomes PLUGIN_ERROR. Any failure throws phx::Error with the plugin's
  // own message (set_error) when it gave one.
  template <typename Call>
  void call(const char* entry, Call&& invoke) {
    call_about(kNoDevice, entry, invoke);
  }
  // As call, for an entry that concerns one device: the failure's message names the
  // device as the user knows it, by its index in the context ("device 3 (tpu-sim)"),
  // never by the plugin's own numbering.
  template <typename Call>
  void call(const char* entry, uint32_t context_device, Call&& invoke) {
    call_about(context_device, entry, invoke);
  }

  // Calls an entry that returns nothing; an escaping exception is logged, not raised,
  // since these are the release paths (free, destroy, shutdown).
  template <typename Call>
  void call_void(const char* entry, Call&& invoke) noexcept {
    try {
      invoke();
    } catch (...) {
      logger_->error("plugin '{}': exception escaped {}", name, entry);
    }
  }

  // The loader's steps (plugin_loader.cpp).
  friend class PluginLoader;

 private:
  static constexpr int64_t kNoDevice = -1;
  template <typename Call>
  void call_about(int64_t context_device, const char* entry, Call& invoke) {
    phx_status status;
    forget_message();
    try {
      status = invoke();
    } catch (const std::exception& e) {
      raise(PHX_STATUS_PLUGIN_ERROR, context_device, entry,
            std::string("exception escaped: ") + e.what());
    } catch (...) {
      raise(PHX_STATUS_PLUGIN_ERROR, context_device, entry, "exception escaped");
    }
    if (status != PHX_STATUS_OK) raise(status, context_device, entry, {});
  }
  static void forget_message();
  [[noreturn]] void raise(phx_status status, int64_t context_device, const char* entry,
                          std::string detail);
  static void host_log(void* host_data, phx_log_level level, const char* message);
  static void host_set_error(void* host_data, const char* message);

  std::shared_ptr<spdlog::logger> logger_;
  phx_plugin_host host_{};
  void* library_ = nullptr;
  phx_plugin_api api_{};
  size_t table_size_ = 0;  // the struct_size of the plugin's own table
  void* instance_ = nullptr;
};

}  // namespace phx
