// A plugin's library opened directly (dlopen) and initialized with a host of the test's
// own, so that a test calls the plugin's entries as the host would, with the arguments
// the host would check, and sees the message each failing entry leaves (set_error).
// Also: plugin buffers that free themselves, and the executable entries' answers.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <phynexus/plugin.h>

#include <string>
#include <utility>
#include <vector>

#include "plugin_graph.h"

namespace phx_test {

class DirectPlugin {
 public:
  explicit DirectPlugin(const char* path) {
    library_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
      ADD_FAILURE() << "cannot open " << path << ": " << dlerror();
      return;
    }
    auto entry = reinterpret_cast<phx_plugin_entry_fn>(dlsym(library_, PHX_PLUGIN_ENTRY_NAME));
    host_.struct_size = sizeof host_;
    host_.abi_major = PHX_PLUGIN_ABI_MAJOR;
    host_.abi_minor = PHX_PLUGIN_ABI_MINOR;
    host_.host_data = this;
    host_.log = [](void*, phx_log_level, const char*) {};
    host_.set_error = [](void* self, const char* message) {
      static_cast<DirectPlugin*>(self)->error_ = message;
    };
    host_.num_threads = 1;
    if (entry == nullptr || entry(&host_, &api_) != PHX_STATUS_OK ||
        api_->initialize(&host_, &plugin_) != PHX_STATUS_OK) {
      ADD_FAILURE() << "cannot start the plugin " << path << ": " << error_;
      api_ = nullptr;
    }
  }
  ~DirectPlugin() {
    if (api_ != nullptr) api_->shutdown(plugin_);
    if (library_ != nullptr) dlclose(library_);
  }
  DirectPlugin(const DirectPlugin&) = delete;
  DirectPlugin& operator=(const DirectPlugin&) = delete;

  bool started() const { return api_ != nullptr; }
  const phx_plugin_api& api() const { return *api_; }
  void* plugin() const { return plugin_; }
  // The message of the last entry that set one; cleared by take_error.
  std::string take_error() { return std::exchange(error_, std::string()); }

 private:
  void* library_ = nullptr;
  phx_plugin_host host_{};
  const phx_plugin_api* api_ = nullptr;
  void* plugin_ = nullptr;
  std::string error_;
};

// A buffer of the plugin's device, freed with the object.
class PluginBuffer {
 public:
  PluginBuffer(const DirectPlugin& p, uint32_t device, uint64_t size) : p_(p) {
    EXPECT_EQ(p.api().buffer_allocate(p.plugin(), device, size, &buffer_), PHX_STATUS_OK);
  }
  ~PluginBuffer() {
    if (buffer_ != nullptr) p_.api().buffer_free(p_.plugin(), buffer_);
  }
  PluginBuffer(const PluginBuffer&) = delete;
  PluginBuffer& operator=(const PluginBuffer&) = delete;
  void* get() const { return buffer_; }
  void write(const void* data, uint64_t size) {
    EXPECT_EQ(p_.api().buffer_write(p_.plugin(), buffer_, 0, data, size), PHX_STATUS_OK);
  }
  void read(void* data, uint64_t size) const {
    EXPECT_EQ(p_.api().buffer_read(p_.plugin(), buffer_, 0, data, size), PHX_STATUS_OK);
  }

 private:
  const DirectPlugin& p_;
  void* buffer_ = nullptr;
};

// The bytes executable_serialize writes of executable: asks the size, then the bytes.
inline std::vector<uint8_t> serialize(const DirectPlugin& p, void* executable) {
  size_t size = 0;
  EXPECT_EQ(p.api().executable_serialize(p.plugin(), executable, nullptr, 0, &size), PHX_STATUS_OK);
  std::vector<uint8_t> bytes(size);
  size_t written = 0;
  EXPECT_EQ(p.api().executable_serialize(p.plugin(), executable, bytes.data(), size, &written),
            PHX_STATUS_OK);
  EXPECT_EQ(written, size);
  return bytes;
}

// executable_stats' figure name; NaN when it has none.
inline double executable_stat(const DirectPlugin& p, void* executable, const char* name) {
  phx_metric metrics[32];
  size_t count = 0;
  EXPECT_EQ(p.api().executable_stats(p.plugin(), executable, metrics, 32, &count), PHX_STATUS_OK);
  for (size_t i = 0; i < count && i < 32; ++i)
    if (std::string(metrics[i].name) == name) return metrics[i].value;
  return __builtin_nan("");
}

}  // namespace phx_test
