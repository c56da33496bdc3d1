#include "instance.h"

#include <phx/keep_mapped.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "vk_check.h"

namespace phx::vulkan {
namespace {

bool has_layer(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(count);
  if (vkEnumerateInstanceLayerProperties(&count, layers.data()) < 0) return false;
  return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) {
    return std::strcmp(l.layerName, name) == 0;
  });
}

bool has_instance_extension(const char* layer, const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceExtensionProperties(layer, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (vkEnumerateInstanceExtensionProperties(layer, &count, extensions.data()) < 0) return false;
  return std::any_of(extensions.begin(), extensions.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

}  // namespace

Instance::Instance(const Settings& settings, const Logger& logger) : logger_(logger) {
  uint32_t loader_version = VK_API_VERSION_1_0;
  if (vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS ||
      loader_version < VK_API_VERSION_1_1) {
    logger_.log(PHX_LOG_INFO, "the Vulkan loader is older than 1.1: no Vulkan devices");
    return;
  }
  api_version_ = std::min<uint32_t>(loader_version, VK_API_VERSION_1_3);

  std::vector<const char*> layers, extensions;
  bool debug_utils = false;
  if (settings.validation) {
    if (has_layer(kValidationLayer))
      layers.push_back(kValidationLayer);
    else
      logger_.log(PHX_LOG_WARN, std::string("PHX_VULKAN_VALIDATION=1 but ") + kValidationLayer +
                                    " is not installed: running without validation");
    debug_utils = has_instance_extension(nullptr, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                  (!layers.empty() &&
                   has_instance_extension(kValidationLayer, VK_EXT_DEBUG_UTILS_EXTENSION_NAME));
    if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }

  auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "phynexus";
  app.pEngineName = "phynexus";
  app.apiVersion = api_version_;
  auto info = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  info.pApplicationInfo = &app;
  info.enabledLayerCount = uint32_t(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = uint32_t(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  // Also catches what vkCreateInstance and vkDestroyInstance themselves report.
  auto messenger_info = vk_struct<VkDebugUtilsMessengerCreateInfoEXT>(
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = on_message;
  messenger_info.pUserData = this;
  if (debug_utils) info.pNext = &messenger_info;

  const VkResult result = vkCreateInstance(&info, nullptr, &instance_);
  if (result != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    logger_.log(PHX_LOG_INFO,
                "vkCreateInstance failed (" + result_name(result) + "): no Vulkan devices");
    return;
  }
  // The driver is mapped now; vkDestroyInstance would unmap it.
  keep_mapped_libraries_if_asked();
  if (debug_utils) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create == nullptr ||
        create(instance_, &messenger_info, nullptr, &messenger_) != VK_SUCCESS) {
      messenger_ = VK_NULL_HANDLE;
      logger_.log(PHX_LOG_WARN, "no debug-utils messenger: validation messages are not reported");
    }
  }

  uint32_t count = 0;
  VkResult enumerated = vkEnumeratePhysicalDevices(instance_, &count, nullptr);
  if (enumerated == VK_SUCCESS && count > 0) {
    physical_devices_.resize(count);
    enumerated = vkEnumeratePhysicalDevices(instance_, &count, physical_devices_.data());
    physical_devices_.resize(enumerated >= 0 ? count : 0);
  }
  if (enumerated < 0)
    logger_.log(PHX_LOG_WARN, "vkEnumeratePhysicalDevices failed: " + result_name(enumerated));
}

Instance::~Instance() {
  if (instance_ == VK_NULL_HANDLE) return;
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy != nullptr) destroy(instance_, messenger_, nullptr);
  }
  vkDestroyInstance(instance_, nullptr);
}

std::string Instance::take_validation_errors() {
  std::lock_guard lock(mutex_);
  return std::exchange(validation_errors_, std::string());
}

VKAPI_ATTR VkBool32 VKAPI_CALL Instance::on_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user_data) {
  auto& self = *static_cast<Instance*>(user_data);
  const std::string message = data->pMessage != nullptr ? data->pMessage : "(no message)";
  // General messages are not validation findings: the loader's warnings (e.g. about other
  // layers' manifests), and the driver's note of an error it returns (lavapipe reports
  // VK_ERROR_OUT_OF_DEVICE_MEMORY so), which the call that got it reports as its own
  // error. Logged, not held against the next call: a refused allocation changes nothing.
  const bool finding = (types & ~VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT) != 0;
  const bool error = finding || severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  self.logger_.log(error ? PHX_LOG_ERROR : PHX_LOG_WARN, "Vulkan validation: " + message);
  if (finding) {
    std::lock_guard lock(self.mutex_);
    if (!self.validation_errors_.empty()) self.validation_errors_ += "; ";
    self.validation_errors_ += message;
  }
  return VK_FALSE;
}

}  // namespace phx::vulkan
