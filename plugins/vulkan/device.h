// One Vulkan physical device with a compute queue, as a Phynexus device: the logical
// device and its queue, what it can do (DeviceCaps, properties for phx-devices), its
// memory, its transfers and its pipelines. A lost device stays lost: every later call
// on it fails fast with DEVICE_UNAVAILABLE.
#pragma once

#include <phynexus/plugin.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "device_stats.h"
#include "instance.h"
#include "memory_pool.h"
#include "op_recorder.h"
#include "pipelines.h"
#include "settings.h"

namespace phx::vulkan {

class Transfers;

class Device {
 public:
  // Throws Error when the device cannot serve (no timeline semaphores, Vulkan < 1.1, a
  // failed vkCreateDevice); the plugin then leaves it out.
  Device(const Instance& instance, VkPhysicalDevice physical, uint32_t index,
         const Settings& settings, const Logger& logger);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  uint32_t index() const { return index_; }
  const std::string& name() const { return name_; }
  const std::string& vendor() const { return vendor_; }
  const DeviceCaps& caps() const { return caps_; }
  uint32_t dtype_mask() const { return dtype_mask_; }
  uint32_t compute_units() const { return compute_units_; }
  const std::vector<phx_property>& properties() const { return properties_; }

  VkDevice vk() const { return device_; }
  uint32_t queue_family() const { return queue_family_; }
  bool push_descriptor() const { return push_descriptor_; }
  bool direct_io() const { return direct_io_; }
  // Timestamps on the queue: valid bits (0: none) and nanoseconds per tick.
  uint32_t timestamp_bits() const { return timestamp_bits_; }
  double timestamp_period() const { return timestamp_period_; }

  MemoryPool& memory() { return *memory_; }
  Transfers& transfers() { return *transfers_; }
  Pipelines& pipelines() { return *pipelines_; }
  DeviceStats& stats() { return stats_; }
  const Logger& logger() const { return logger_; }

  // vkQueueSubmit, serialized (the queue is externally synchronized); notes the timeline
  // values it signals (VkTimelineSemaphoreSubmitInfo). Throws Error.
  void submit(const VkSubmitInfo& info, VkFence fence);
  // vkWaitSemaphores until a timeline semaphore reaches value; false on timeout. The wait
  // is for the first value at or above it that a submission signals: the same moment, as
  // timelines only grow, but a value some submission names. (The validation layer of
  // Vulkan SDK 1.3.239, Debian 12's, never sees a wait for a value in between two signals
  // complete: it reports UNASSIGNED-VkSemaphore-state-timeout.) Throws Error.
  bool wait_semaphore(VkSemaphore semaphore, uint64_t value, uint64_t timeout_ns);
  // vkGetSemaphoreCounterValue: never blocks. Throws Error.
  uint64_t semaphore_value(VkSemaphore semaphore);
  PFN_vkCmdPushDescriptorSetKHR cmd_push_descriptor_set() const { return push_descriptor_set_; }

  bool lost() const { return lost_; }
  void mark_lost() { lost_ = true; }

 private:
  // What the constructor reads from the physical device and builds on (device.cpp).
  struct PhysicalProperties;
  struct FeatureChain;
  struct OfferedPaths;

  // The constructor's steps, in order; each throws Error. Sets queue_family_ and the
  // timestamp fields.
  void choose_queue(VkPhysicalDevice physical, const VkPhysicalDeviceLimits& limits);
  // vkCreateDevice and the entry points the plugin calls through pointers.
  void create_logical_device(VkPhysicalDevice physical, const FeatureChain& features, bool core12);
  // caps_, dtype_mask_, vendor_ and compute_units_ from what was enabled.
  void set_caps(const PhysicalProperties& properties, const FeatureChain& features,
                const OfferedPaths& offered, const Settings& settings);
  // memory_, transfers_ and pipelines_; the caller destroys the device if this throws.
  void create_memory_and_pipelines(VkPhysicalDevice physical, const PhysicalProperties& properties,
                                   bool creation_feedback, const Settings& settings);
  // The properties phx-devices shows: what the hardware is, then which paths are on.
  void describe(const Instance& instance, VkPhysicalDevice physical,
                const PhysicalProperties& properties, const OfferedPaths& offered,
                const Settings& settings);
  void describe_hardware(const PhysicalProperties& properties,
                         const VkPhysicalDeviceMemoryProperties& memory);
  void describe_paths(const Instance& instance, const OfferedPaths& offered,
                      const Settings& settings, const VkMemoryType& tensor_memory);
  void choose_memory(VkPhysicalDevice physical, const VkPhysicalDeviceProperties& props,
                     uint64_t max_allocation, const Settings& settings);
  void add(const std::string& key, const std::string& value);
  // Notes that semaphore has reached a value: drops the signals up to it.
  void reached(VkSemaphore semaphore, uint64_t value);

  uint32_t index_;
  const Logger& logger_;
  std::string name_, vendor_;
  DeviceCaps caps_;
  uint32_t dtype_mask_ = 0;
  uint32_t compute_units_ = 1;
  std::vector<std::pair<std::string, std::string>> texts_;  // what properties_ points into
  std::vector<phx_property> properties_;

  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  std::mutex queue_mutex_;
  // Per timeline semaphore with submitted signals not yet seen reached: the highest value
  // a wait or query has seen, and the signalled values above it, ascending. Guarded by
  // queue_mutex_.
  struct Timeline {
    uint64_t reached = 0;
    std::deque<uint64_t> signals;
  };
  std::unordered_map<VkSemaphore, Timeline> timelines_;
  bool push_descriptor_ = false;
  bool direct_io_ = false;
  uint32_t timestamp_bits_ = 0;
  double timestamp_period_ = 1;
  uint32_t tensor_memory_type_ = 0, staging_memory_type_ = 0;
  uint64_t heap_size_ = 0;
  PFN_vkWaitSemaphores wait_semaphores_ = nullptr;
  PFN_vkGetSemaphoreCounterValue get_semaphore_value_ = nullptr;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set_ = nullptr;
  std::atomic<bool> lost_{false};

  DeviceStats stats_;
  std::unique_ptr<MemoryPool> memory_;
  std::unique_ptr<Transfers> transfers_;
  std::unique_ptr<Pipelines> pipelines_;
};

}  // namespace phx::vulkan
