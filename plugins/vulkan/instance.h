// The plugin's VkInstance: API 1.2 or newer where the loader has it (1.1 at least), the
// Khronos validation layer and a debug-utils messenger when PHX_VULKAN_VALIDATION=1.
// Validation messages are logged at ERROR level and kept until the next stream_submit or
// stream_wait, which fails with them, so that the test that caused one fails.
#pragma once

#include <phynexus/plugin.h>
#include <vulkan/vulkan.h>

#include <mutex>
#include <string>
#include <vector>

#include "settings.h"

namespace phx::vulkan {

// The host's log service; thread-safe.
class Logger {
 public:
  explicit Logger(const phx_plugin_host* host) : host_(host) {}
  void log(phx_log_level level, const std::string& message) const {
    host_->log(host_->host_data, level, message.c_str());
  }

 private:
  const phx_plugin_host* host_;
};

class Instance {
 public:
  // Never throws: without a loader or a driver, handle() is null and there are no
  // physical devices (the reason is logged at INFO).
  Instance(const Settings& settings, const Logger& logger);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  uint32_t api_version() const { return api_version_; }
  const std::vector<VkPhysicalDevice>& physical_devices() const { return physical_devices_; }
  bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }

  // The validation messages since the last call, "" if none; clears them. Thread-safe.
  std::string take_validation_errors();

 private:
  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT types,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void* user_data);

  const Logger& logger_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  uint32_t api_version_ = 0;
  std::vector<VkPhysicalDevice> physical_devices_;
  std::mutex mutex_;  // guards validation_errors_
  std::string validation_errors_;
};

}  // namespace phx::vulkan
