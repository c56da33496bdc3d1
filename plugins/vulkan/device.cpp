#include "device.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "glsl_features.h"
#include "transfers.h"
#include "vk_check.h"

namespace phx::vulkan {
namespace {

// Tensor memory comes in blocks of this size (or maxMemoryAllocationSize, if smaller):
// a few vkAllocateMemory calls serve thousands of tensors.
constexpr uint64_t kBlockBytes = 64ull << 20;
// The staging buffer, used in two halves (transfers.h).
constexpr uint64_t kStagingBytes = 16ull << 20;
constexpr uint32_t kPushConstantBytes = 128;
// The least binding PHX_VULKAN_MAX_BINDING_BYTES may ask for: far above the largest
// offset alignment Vulkan allows (256 bytes), which a split binding may start below its
// first element, so that every binding still holds many elements.
constexpr uint64_t kMinBindingBytes = 64ull << 10;

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string version_text(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
         std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "cpu";
    default:
      return "other";
  }
}

std::string vendor_name(uint32_t id) {
  switch (id) {
    case 0x1002:
      return "AMD";
    case 0x10de:
      return "NVIDIA";
    case 0x8086:
      return "Intel";
    case 0x13b5:
      return "ARM";
    case 0x5143:
      return "Qualcomm";
    case 0x10005:
      return "Mesa";
    default:
      return "vendor " + hex(id);
  }
}

std::string yes_no(bool value) { return value ? "yes" : "no"; }

// An optional path's state: on, switched off by its environment variable, or absent.
std::string path_state(bool supported, bool disabled, const char* variable) {
  if (!supported) return "unsupported";
  return disabled ? std::string("off (") + variable + "=1)" : "on";
}

std::string heap_flags(VkMemoryHeapFlags flags) {
  std::string text;
  if (flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) text += "device_local";
  if (flags & VK_MEMORY_HEAP_MULTI_INSTANCE_BIT)
    text += text.empty() ? "multi_instance" : "|multi_instance";
  return text.empty() ? "host" : text;
}

std::string type_flags(VkMemoryPropertyFlags flags) {
  std::string text;
  const std::pair<VkMemoryPropertyFlags, const char*> names[] = {
      {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, "device_local"},
      {VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, "host_visible"},
      {VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, "host_coherent"},
      {VK_MEMORY_PROPERTY_HOST_CACHED_BIT, "host_cached"}};
  for (const auto& [bit, name] : names)
    if (flags & bit) text += (text.empty() ? "" : "|") + std::string(name);
  return text.empty() ? "none" : text;
}

bool has_extension(const std::vector<VkExtensionProperties>& extensions, const char* name) {
  return std::any_of(extensions.begin(), extensions.end(), [&](const VkExtensionProperties& e) {
    return std::strcmp(e.extensionName, name) == 0;
  });
}

// The Vulkan version both the instance and the device speak, and the device's extensions.
struct DeviceExtensions {
  uint32_t api = 0;
  std::vector<VkExtensionProperties> offered;

  DeviceExtensions(VkPhysicalDevice physical, uint32_t api_version) : api(api_version) {
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
    offered.resize(count);
    vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, offered.data());
  }
  bool core12() const { return api >= VK_API_VERSION_1_2; }
  bool core13() const { return api >= VK_API_VERSION_1_3; }
  bool offers(const char* name) const { return has_extension(offered, name); }
  // An extension is usable when core in the device's version or offered by it.
  bool usable(bool core, const char* name) const { return core || offers(name); }
};

}  // namespace

// The properties the device is set up and described from, read in one chained query.
// Not copyable: the chain points into it.
struct Device::PhysicalProperties {
  VkPhysicalDeviceDriverProperties driver = vk_struct<VkPhysicalDeviceDriverProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  VkPhysicalDeviceSubgroupProperties subgroup = vk_struct<VkPhysicalDeviceSubgroupProperties>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
  VkPhysicalDeviceMaintenance3Properties maintenance3 =
      vk_struct<VkPhysicalDeviceMaintenance3Properties>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
  VkPhysicalDeviceProperties2 props2 =
      vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  bool has_driver = false;  // whether driver was read

  PhysicalProperties(VkPhysicalDevice physical, const DeviceExtensions& extensions) {
    subgroup.pNext = &maintenance3;
    props2.pNext = &subgroup;
    has_driver = extensions.usable(extensions.core12(), VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    if (has_driver) {
      driver.pNext = props2.pNext;
      props2.pNext = &driver;
    }
    vkGetPhysicalDeviceProperties2(physical, &props2);
  }
  PhysicalProperties(const PhysicalProperties&) = delete;
  PhysicalProperties& operator=(const PhysicalProperties&) = delete;
  const VkPhysicalDeviceProperties& base() const { return props2.properties; }
  const VkPhysicalDeviceLimits& limits() const { return props2.properties.limits; }
};

// The optional features the ops may use, chained for vkGetPhysicalDeviceFeatures2 and
// then for vkCreateDevice, with the extensions that enabling them needs. Not copyable:
// the chain points into it.
struct Device::FeatureChain {
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline =
      vk_struct<VkPhysicalDeviceTimelineSemaphoreFeatures>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES);
  VkPhysicalDeviceShaderFloat16Int8Features float16_int8 =
      vk_struct<VkPhysicalDeviceShaderFloat16Int8Features>(
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES);
  VkPhysicalDevice16BitStorageFeatures storage16 = vk_struct<VkPhysicalDevice16BitStorageFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES);
  VkPhysicalDevice8BitStorageFeatures storage8 = vk_struct<VkPhysicalDevice8BitStorageFeatures>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES);
  VkPhysicalDeviceFeatures2 features2 =
      vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  std::vector<const char*> enabled;  // the extensions vkCreateDevice enables
  // Whether each struct is in the chain (its extension usable), so that what it holds was read.
  bool has_timeline = false, has_float16_int8 = false, has_storage16 = false, has_storage8 = false;

  FeatureChain(VkPhysicalDevice physical, const DeviceExtensions& extensions) {
    void** tail = &features2.pNext;
    auto chain = [&](auto& feature, bool core, const char* extension) {
      if (!extensions.usable(core, extension)) return false;
      if (!core) enabled.push_back(extension);
      *tail = &feature;
      tail = &feature.pNext;
      return true;
    };
    const bool core12 = extensions.core12();
    has_timeline = chain(timeline, core12, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
    has_float16_int8 = chain(float16_int8, core12, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
    has_storage16 = chain(storage16, true, VK_KHR_16BIT_STORAGE_EXTENSION_NAME);
    has_storage8 = chain(storage8, core12, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
    vkGetPhysicalDeviceFeatures2(physical, &features2);
  }
  FeatureChain(const FeatureChain&) = delete;
  FeatureChain& operator=(const FeatureChain&) = delete;

  // Keeps on what the ops may use: offered and not switched off. Features we do not use
  // are switched off in what we enable, so that the device is what DeviceCaps says.
  void keep_used(const OfferedPaths& offered, const Settings& settings);
};

// The optional paths the device offers, before the settings switch any off (phx-devices
// shows both).
struct Device::OfferedPaths {
  bool fp16, int8, storage16, storage8, subgroup_arithmetic, push_descriptor, creation_feedback;

  OfferedPaths(const DeviceExtensions& extensions, const PhysicalProperties& properties,
               const FeatureChain& features) {
    fp16 = features.has_float16_int8 && features.float16_int8.shaderFloat16;
    int8 = features.has_float16_int8 && features.float16_int8.shaderInt8;
    storage16 = features.has_storage16 && features.storage16.storageBuffer16BitAccess;
    storage8 = features.has_storage8 && features.storage8.storageBuffer8BitAccess;
    const VkPhysicalDeviceSubgroupProperties& subgroup = properties.subgroup;
    const VkSubgroupFeatureFlags arithmetic = VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                          (subgroup.supportedOperations & arithmetic) == arithmetic;
    push_descriptor = extensions.offers(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    creation_feedback =
        extensions.usable(extensions.core13(), VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
  }
};

void Device::FeatureChain::keep_used(const OfferedPaths& offered, const Settings& settings) {
  float16_int8.shaderFloat16 = offered.fp16 && !settings.disable_fp16;
  float16_int8.shaderInt8 = offered.int8 && !settings.disable_int8;
  storage16.storageBuffer16BitAccess = offered.storage16 && !settings.disable_16bit_storage;
  storage16.uniformAndStorageBuffer16BitAccess = VK_FALSE;
  storage16.storagePushConstant16 = VK_FALSE;
  storage16.storageInputOutput16 = VK_FALSE;
  storage8.storageBuffer8BitAccess = offered.storage8 && !settings.disable_8bit_storage;
  storage8.uniformAndStorageBuffer8BitAccess = VK_FALSE;
  storage8.storagePushConstant8 = VK_FALSE;
  timeline.timelineSemaphore = VK_TRUE;
  // Of Vulkan 1.0's optional features the ops may use 16- and 64-bit integers (i16
  // arithmetic, 64-bit indices into large tensors).
  VkPhysicalDeviceFeatures wanted{};
  wanted.shaderInt16 = features2.features.shaderInt16;
  wanted.shaderInt64 = features2.features.shaderInt64;
  features2.features = wanted;
}

void Device::add(const std::string& key, const std::string& value) {
  texts_.emplace_back(key, value);
}

Device::Device(const Instance& instance, VkPhysicalDevice physical, uint32_t index,
               const Settings& settings, const Logger& logger)
    : index_(index), logger_(logger) {
  VkPhysicalDeviceProperties base;
  vkGetPhysicalDeviceProperties(physical, &base);
  name_ = base.deviceName;
  const uint32_t api = std::min(base.apiVersion, instance.api_version());
  if (api < VK_API_VERSION_1_1)
    throw Error{PHX_STATUS_UNSUPPORTED,
                name_ + ": Vulkan " + version_text(base.apiVersion) + ", the plugin needs 1.1"};
  const DeviceExtensions extensions(physical, api);
  const PhysicalProperties properties(physical, extensions);
  FeatureChain features(physical, extensions);
  if (!features.has_timeline || !features.timeline.timelineSemaphore)
    throw Error{PHX_STATUS_UNSUPPORTED, name_ + ": no timeline semaphores"};
  if (!extensions.core12() && extensions.offers(VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME))
    features.enabled.push_back(VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);

  const OfferedPaths offered(extensions, properties, features);
  features.keep_used(offered, settings);
  push_descriptor_ = offered.push_descriptor && !settings.no_push_descriptor;
  if (push_descriptor_) features.enabled.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (offered.creation_feedback && !extensions.core13())
    features.enabled.push_back(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);

  choose_queue(physical, properties.limits());
  create_logical_device(physical, features, extensions.core12());
  set_caps(properties, features, offered, settings);
  try {
    create_memory_and_pipelines(physical, properties, offered.creation_feedback, settings);
  } catch (...) {
    transfers_.reset();
    memory_.reset();
    vkDestroyDevice(device_, nullptr);
    throw;
  }
  describe(instance, physical, properties, offered, settings);
}

void Device::choose_queue(VkPhysicalDevice physical, const VkPhysicalDeviceLimits& limits) {
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &family_count, families.data());
  // A compute-only family (an asynchronous compute engine) if there is one.
  int chosen = -1;
  for (uint32_t i = 0; i < family_count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    if (chosen < 0 || !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) chosen = int(i);
    if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
  }
  if (chosen < 0) throw Error{PHX_STATUS_UNSUPPORTED, name_ + ": no compute queue"};
  queue_family_ = uint32_t(chosen);
  timestamp_bits_ = families[queue_family_].timestampValidBits;
  timestamp_period_ = limits.timestampPeriod;
}

void Device::create_logical_device(VkPhysicalDevice physical, const FeatureChain& features,
                                   bool core12) {
  const float priority = 1.0f;
  auto queue_info = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queue_info.queueFamilyIndex = queue_family_;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  auto device_info = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  device_info.pNext = &features.features2;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  device_info.enabledExtensionCount = uint32_t(features.enabled.size());
  device_info.ppEnabledExtensionNames = features.enabled.data();
  check(vkCreateDevice(physical, &device_info, nullptr, &device_),
        (name_ + ": vkCreateDevice").c_str());
  vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
  wait_semaphores_ = reinterpret_cast<PFN_vkWaitSemaphores>(
      vkGetDeviceProcAddr(device_, core12 ? "vkWaitSemaphores" : "vkWaitSemaphoresKHR"));
  get_semaphore_value_ = reinterpret_cast<PFN_vkGetSemaphoreCounterValue>(vkGetDeviceProcAddr(
      device_, core12 ? "vkGetSemaphoreCounterValue" : "vkGetSemaphoreCounterValueKHR"));
  if (push_descriptor_)
    push_descriptor_set_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(device_, "vkCmdPushDescriptorSetKHR"));
  if (wait_semaphores_ == nullptr || get_semaphore_value_ == nullptr ||
      (push_descriptor_ && push_descriptor_set_ == nullptr)) {
    vkDestroyDevice(device_, nullptr);
    throw Error{PHX_STATUS_UNSUPPORTED, name_ + ": the driver lacks entry points it advertises"};
  }
}

void Device::set_caps(const PhysicalProperties& properties, const FeatureChain& features,
                      const OfferedPaths& offered, const Settings& settings) {
  const VkPhysicalDeviceProperties& props = properties.base();
  const VkPhysicalDeviceLimits& limits = props.limits;
  const VkPhysicalDeviceSubgroupProperties& subgroup = properties.subgroup;
  caps_.device_type = props.deviceType;
  caps_.cpu_device = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  caps_.vendor_id = props.vendorID;
  caps_.max_shared_memory_bytes = limits.maxComputeSharedMemorySize;
  caps_.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    caps_.max_workgroup_size[i] = limits.maxComputeWorkGroupSize[i];
    caps_.max_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
  }
  caps_.subgroup_size = subgroup.subgroupSize;
  caps_.max_binding_bytes = limits.maxStorageBufferRange;
  // A testing knob: it lowers the limit, never raises it, so that the ops' split paths
  // run on tensors of a few MiB on any device.
  if (settings.max_binding_bytes != 0)
    caps_.max_binding_bytes =
        std::min(caps_.max_binding_bytes, std::max(settings.max_binding_bytes, kMinBindingBytes));
  caps_.binding_offset_alignment = limits.minStorageBufferOffsetAlignment;
  caps_.max_push_constant_bytes = std::min(limits.maxPushConstantsSize, kPushConstantBytes);
  caps_.shader_float16 = features.float16_int8.shaderFloat16;
  caps_.shader_int8 = features.float16_int8.shaderInt8;
  caps_.storage_16bit = features.storage16.storageBuffer16BitAccess;
  caps_.storage_8bit = features.storage8.storageBuffer8BitAccess;
  caps_.subgroup_arithmetic = offered.subgroup_arithmetic && !settings.disable_subgroup_arithmetic;
  caps_.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                           (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
  caps_.shader_int64 = features.features2.features.shaderInt64;
  dtype_mask_ = PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_I32);
  if (caps_.storage_16bit)
    dtype_mask_ |=
        PHX_DTYPE_BIT(PHX_DTYPE_F16) | PHX_DTYPE_BIT(PHX_DTYPE_BF16) | PHX_DTYPE_BIT(PHX_DTYPE_I16);
  if (caps_.storage_8bit) dtype_mask_ |= PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_U8);
  vendor_ = vendor_name(props.vendorID);
  // Vulkan does not count compute units; a CPU device runs on the host's threads.
  if (caps_.cpu_device) {
    const char* threads = std::getenv("LP_NUM_THREADS");
    compute_units_ = threads != nullptr && std::atoi(threads) > 0
                         ? uint32_t(std::atoi(threads))
                         : std::max(1u, std::thread::hardware_concurrency());
  }
}

void Device::create_memory_and_pipelines(VkPhysicalDevice physical,
                                         const PhysicalProperties& properties,
                                         bool creation_feedback, const Settings& settings) {
  const VkPhysicalDeviceProperties& props = properties.base();
  choose_memory(physical, props, properties.maintenance3.maxMemoryAllocationSize, settings);
  transfers_ = std::make_unique<Transfers>(*this, staging_memory_type_, kStagingBytes);
  PipelinesConfig pipelines;
  pipelines.device = device_;
  pipelines.push_descriptor = push_descriptor_;
  pipelines.creation_feedback = creation_feedback;
  pipelines.push_constant_bytes = caps_.max_push_constant_bytes;
  pipelines.identity.vendor_id = props.vendorID;
  pipelines.identity.device_id = props.deviceID;
  pipelines.identity.driver_version = props.driverVersion;
  std::memcpy(pipelines.identity.cache_uuid, props.pipelineCacheUUID, VK_UUID_SIZE);
  if (!settings.no_pipeline_cache && !settings.cache_dir.empty()) {
    char file[64];
    std::snprintf(file, sizeof file, "/vulkan-%04x-%04x.pipelines", props.vendorID, props.deviceID);
    pipelines.cache_path = settings.cache_dir + file;
  }
  pipelines_ = std::make_unique<Pipelines>(pipelines, logger_, stats_);
}

void Device::describe(const Instance& instance, VkPhysicalDevice physical,
                      const PhysicalProperties& properties, const OfferedPaths& offered,
                      const Settings& settings) {
  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  describe_hardware(properties, memory);
  describe_paths(instance, offered, settings, memory.memoryTypes[tensor_memory_type_]);
  for (const auto& [key, value] : texts_) properties_.push_back({key.c_str(), value.c_str()});
}

void Device::describe_hardware(const PhysicalProperties& properties,
                               const VkPhysicalDeviceMemoryProperties& memory) {
  const VkPhysicalDeviceProperties& props = properties.base();
  const VkPhysicalDeviceLimits& limits = props.limits;
  const uint64_t max_allocation = properties.maintenance3.maxMemoryAllocationSize;
  add("device_type", type_name(props.deviceType));
  add("api_version", version_text(props.apiVersion));
  add("driver_version", version_text(props.driverVersion) + " (" + hex(props.driverVersion) + ")");
  if (properties.has_driver) {
    add("driver_name", properties.driver.driverName);
    add("driver_info", properties.driver.driverInfo);
  }
  add("vendor_id", hex(props.vendorID));
  add("device_id", hex(props.deviceID));
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    add("memory_heap_" + std::to_string(i), std::to_string(memory.memoryHeaps[i].size) +
                                                " bytes, " +
                                                heap_flags(memory.memoryHeaps[i].flags));
  add("tensor_memory_type", std::to_string(tensor_memory_type_) + ": " +
                                type_flags(memory.memoryTypes[tensor_memory_type_].propertyFlags));
  add("memory_block_bytes", std::to_string(std::min(kBlockBytes, max_allocation)));
  add("max_workgroup_size", std::to_string(caps_.max_workgroup_size[0]) + " x " +
                                std::to_string(caps_.max_workgroup_size[1]) + " x " +
                                std::to_string(caps_.max_workgroup_size[2]));
  add("max_workgroup_count", std::to_string(caps_.max_workgroup_count[0]) + " x " +
                                 std::to_string(caps_.max_workgroup_count[1]) + " x " +
                                 std::to_string(caps_.max_workgroup_count[2]));
  add("max_workgroup_invocations", std::to_string(caps_.max_workgroup_invocations));
  add("max_shared_memory_bytes", std::to_string(caps_.max_shared_memory_bytes));
  add("subgroup_size", std::to_string(caps_.subgroup_size));
  std::string binding_limit = std::to_string(caps_.max_binding_bytes);
  if (caps_.max_binding_bytes < limits.maxStorageBufferRange)
    binding_limit += " (PHX_VULKAN_MAX_BINDING_BYTES; the device's: " +
                     std::to_string(limits.maxStorageBufferRange) + ")";
  add("max_storage_buffer_range", binding_limit);
  add("min_storage_buffer_offset_alignment", std::to_string(caps_.binding_offset_alignment));
  add("max_allocation_bytes", std::to_string(max_allocation));
  add("max_push_constants_bytes", std::to_string(limits.maxPushConstantsSize));
  add("timestamp_period_ns", std::to_string(limits.timestampPeriod));
  add("timestamp_valid_bits", std::to_string(timestamp_bits_));
}

void Device::describe_paths(const Instance& instance, const OfferedPaths& offered,
                            const Settings& settings, const VkMemoryType& tensor_memory) {
  add("timeline_semaphores", "yes");
  add("float16", path_state(offered.fp16, settings.disable_fp16, "PHX_VULKAN_DISABLE_FP16"));
  add("int8", path_state(offered.int8, settings.disable_int8, "PHX_VULKAN_DISABLE_INT8"));
  add("storage_16bit", path_state(offered.storage16, settings.disable_16bit_storage,
                                  "PHX_VULKAN_DISABLE_16BIT_STORAGE"));
  add("storage_8bit", path_state(offered.storage8, settings.disable_8bit_storage,
                                 "PHX_VULKAN_DISABLE_8BIT_STORAGE"));
  add("subgroup_arithmetic",
      path_state(offered.subgroup_arithmetic, settings.disable_subgroup_arithmetic,
                 "PHX_VULKAN_DISABLE_SUBGROUP_ARITHMETIC"));
  // The direct matmul kernel needs both (ops/matmul.cpp); without them the shared one runs.
  add("subgroup_shuffle", yes_no(caps_.subgroup_shuffle));
  add("int64", yes_no(caps_.shader_int64));
  const VkMemoryPropertyFlags direct_flags = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                             VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                             VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const bool direct_supported = (tensor_memory.propertyFlags & direct_flags) == direct_flags;
  add("host_visible_device_local", yes_no(direct_supported));
  add("direct_upload",
      path_state(direct_supported, settings.no_direct_upload, "PHX_VULKAN_NO_DIRECT_UPLOAD") +
          (direct_io_ ? " (no staging copy)" : ""));
  add("push_descriptor", path_state(offered.push_descriptor, settings.no_push_descriptor,
                                    "PHX_VULKAN_NO_PUSH_DESCRIPTOR"));
  add("pipeline_creation_feedback", yes_no(offered.creation_feedback));
  add("pipeline_cache", settings.no_pipeline_cache ? "off (PHX_VULKAN_NO_PIPELINE_CACHE=1)"
                                                   : pipelines_->cache_state());
  add("validation", instance.validation_enabled() ? "on" : "off");
  add("glsl_float16", yes_no(PHX_GLSL_HAS_FLOAT16));
  add("glsl_subgroup_arithmetic", yes_no(PHX_GLSL_HAS_SUBGROUP_ARITHMETIC));
  add("glsl_bfloat16", yes_no(PHX_GLSL_HAS_BFLOAT16));
  add("glsl_cooperative_matrix", yes_no(PHX_GLSL_HAS_COOPERATIVE_MATRIX));
}

void Device::choose_memory(VkPhysicalDevice physical, const VkPhysicalDeviceProperties& props,
                           uint64_t max_allocation, const Settings& settings) {
  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  // Tensors: a device-local type on the largest device-local heap (a discrete GPU's small
  // host-visible window heap is not where tensors belong).
  int tensor = -1, staging = -1;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const VkMemoryType& type = memory.memoryTypes[i];
    if (!(type.propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) continue;
    if (tensor < 0 || memory.memoryHeaps[type.heapIndex].size >
                          memory.memoryHeaps[memory.memoryTypes[tensor].heapIndex].size)
      tensor = int(i);
  }
  // Staging: host-visible and coherent, cached where possible (reads come back through it).
  const VkMemoryPropertyFlags host =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
    if ((flags & host) != host) continue;
    if (staging < 0 ||
        ((flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) &&
         !(memory.memoryTypes[staging].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)))
      staging = int(i);
  }
  if (tensor < 0 || staging < 0)
    throw Error{PHX_STATUS_UNSUPPORTED, name_ + ": no device-local or no host-visible memory type"};
  tensor_memory_type_ = uint32_t(tensor);
  staging_memory_type_ = uint32_t(staging);
  const VkMemoryPropertyFlags tensor_flags = memory.memoryTypes[tensor].propertyFlags;
  direct_io_ = (tensor_flags & host) == host && !settings.no_direct_upload;
  heap_size_ = memory.memoryHeaps[memory.memoryTypes[tensor].heapIndex].size;

  MemoryPoolConfig config;
  config.device = index_;
  config.vk_device = device_;
  config.memory_type = tensor_memory_type_;
  config.capacity = heap_size_;
  config.block_size = std::min(kBlockBytes, max_allocation);
  // A buffer spans each allocation, so maxBufferSize caps one too where known (1.3).
  config.max_allocation = std::min<uint64_t>(max_allocation, heap_size_);
  config.alignment = std::max<uint64_t>(
      {64, props.limits.minStorageBufferOffsetAlignment, props.limits.nonCoherentAtomSize});
  config.map_blocks = direct_io_;
  memory_ = std::make_unique<MemoryPool>(config);
}

Device::~Device() {
  vkDeviceWaitIdle(device_);
  pipelines_.reset();  // saves the pipeline cache
  transfers_.reset();
  memory_.reset();
  vkDestroyDevice(device_, nullptr);
}

void Device::submit(const VkSubmitInfo& info, VkFence fence) {
  std::lock_guard lock(queue_mutex_);
  check(vkQueueSubmit(queue_, 1, &info, fence), "vkQueueSubmit");
  const VkTimelineSemaphoreSubmitInfo* values = nullptr;
  for (auto* s = static_cast<const VkBaseInStructure*>(info.pNext); s != nullptr; s = s->pNext) {
    if (s->sType == VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO)
      values = reinterpret_cast<const VkTimelineSemaphoreSubmitInfo*>(s);
  }
  if (values == nullptr) return;
  for (uint32_t i = 0; i < info.signalSemaphoreCount && i < values->signalSemaphoreValueCount;
       ++i) {
    const uint64_t value = values->pSignalSemaphoreValues[i];
    Timeline& timeline = timelines_[info.pSignalSemaphores[i]];
    // A value that does not grow is a new semaphore's that got a destroyed one's handle.
    if (value <= timeline.reached ||
        (!timeline.signals.empty() && value <= timeline.signals.back())) {
      timeline = Timeline{};
    }
    timeline.signals.push_back(value);
  }
}

void Device::reached(VkSemaphore semaphore, uint64_t value) {
  std::lock_guard lock(queue_mutex_);
  const auto it = timelines_.find(semaphore);
  if (it == timelines_.end()) return;
  Timeline& timeline = it->second;
  timeline.reached = std::max(timeline.reached, value);
  while (!timeline.signals.empty() && timeline.signals.front() <= timeline.reached)
    timeline.signals.pop_front();
  // Nothing pending: a later wait is for a value reached already (or never signalled).
  if (timeline.signals.empty()) timelines_.erase(it);
}

bool Device::wait_semaphore(VkSemaphore semaphore, uint64_t value, uint64_t timeout_ns) {
  {
    std::lock_guard lock(queue_mutex_);
    const auto it = timelines_.find(semaphore);
    if (it != timelines_.end()) {
      const Timeline& timeline = it->second;
      if (value <= timeline.reached) return true;
      const auto signal = std::lower_bound(timeline.signals.begin(), timeline.signals.end(), value);
      if (signal != timeline.signals.end()) value = *signal;
    }
  }
  auto info = vk_struct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
  info.semaphoreCount = 1;
  info.pSemaphores = &semaphore;
  info.pValues = &value;
  const VkResult result = wait_semaphores_(device_, &info, timeout_ns);
  check(result, "vkWaitSemaphores");
  if (result != VK_SUCCESS) return false;
  reached(semaphore, value);
  return true;
}

uint64_t Device::semaphore_value(VkSemaphore semaphore) {
  uint64_t value = 0;
  check(get_semaphore_value_(device_, semaphore, &value), "vkGetSemaphoreCounterValue");
  reached(semaphore, value);
  return value;
}

}  // namespace phx::vulkan
