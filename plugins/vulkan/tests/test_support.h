// What the runtime tests share: a context that loads only the tests' plugin (or the real
// one), its Vulkan devices, their properties and statistics.
#pragma once

#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace phx_vulkan_test {

// The environment every test runs in, set before any test (and inherited by the cache
// helper): as tests/CMakeLists.txt's PHX_TEST_ENVIRONMENT, plus the Khronos validation
// layer on, the Vulkan switches cleared (PHX_VULKAN_TEST_PLAIN=1: the plain paths) and a
// pipeline cache folder of the tests' own.
inline const bool kEnvironmentSet = [] {
  for (const char* name :
       {"PHX_PLUGIN_PATH", "PHX_ADD_PLUGIN_PATH", "PHX_LOG_LEVEL", "PHX_NUM_THREADS", "PHX_PROFILE",
        "PHX_VULKAN_DEVICES", "PHX_VULKAN_NO_PIPELINE_CACHE", "PHX_VULKAN_MAX_BINDING_BYTES"})
    unsetenv(name);
  setenv("PHX_VULKAN_VALIDATION", "1", 1);
  setenv("PHX_VULKAN_CACHE_DIR", PHX_VULKAN_TEST_SCRATCH "/pipeline-cache", 1);
  const char* plain = std::getenv("PHX_VULKAN_TEST_PLAIN");
  for (const char* name : {"PHX_VULKAN_NO_DIRECT_UPLOAD", "PHX_VULKAN_NO_PUSH_DESCRIPTOR"}) {
    if (plain != nullptr && std::string(plain) == "1")
      setenv(name, "1", 1);
    else
      unsetenv(name);
  }
  return true;
}();

class Context {
 public:
  explicit Context(uint32_t flags = 0, const char* plugin_dir = PHX_VULKAN_TEST_PLUGIN_DIR) {
    const char* paths[] = {plugin_dir};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 1;
    options.use_default_search_path = 0;
    options.log_level = PHX_LOG_OFF;
    options.flags = flags;
    EXPECT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    phx_device_count(context_, &count);
    for (size_t i = 0; i < count; ++i) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      phx_device_get(context_, i, &info);
      if (std::string(info.plugin) == "vulkan") devices_.push_back(i);
    }
  }
  ~Context() { phx_context_destroy(context_); }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  phx_context get() const { return context_; }
  const std::vector<size_t>& devices() const { return devices_; }

  phx_device_info info(size_t device) const {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    EXPECT_EQ(phx_device_get(context_, device, &info), PHX_STATUS_OK);
    return info;
  }

  std::map<std::string, std::string> properties(size_t device) const {
    const phx_device_info i = info(device);
    std::map<std::string, std::string> named;
    for (size_t k = 0; k < i.property_count; ++k)
      named[i.properties[k].key] = i.properties[k].value;
    return named;
  }

  std::map<std::string, double> stats(size_t device) const {
    size_t count = 0;
    phx_device_stats(context_, device, nullptr, 0, &count);
    std::vector<phx_metric> metrics(count);
    phx_device_stats(context_, device, metrics.data(), count, &count);
    std::map<std::string, double> named;
    for (const phx_metric& m : metrics) named[m.name] = m.value;
    return named;
  }

  phx_memory_stats memory(size_t device) const {
    phx_memory_stats s = PHX_MEMORY_STATS_INIT;
    EXPECT_EQ(phx_memory_stats_get(context_, device, &s), PHX_STATUS_OK) << phx_last_error();
    return s;
  }

 private:
  phx_context context_ = nullptr;
  std::vector<size_t> devices_;
};

// A tensor destroyed with its scope.
class Tensor {
 public:
  Tensor(const Context& c, size_t device, phx_dtype dtype, std::vector<int64_t> shape) {
    status_ = phx_tensor_create(c.get(), device, dtype, uint32_t(shape.size()), shape.data(), &t_);
  }
  ~Tensor() {
    if (t_ != nullptr) phx_tensor_destroy(t_);
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  phx_tensor get() const { return t_; }
  phx_status status() const { return status_; }

 private:
  phx_tensor t_ = nullptr;
  phx_status status_;
};

}  // namespace phx_vulkan_test
