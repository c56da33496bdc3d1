// Copies between host memory and a device's buffers, and between buffers. Where tensor
// memory is host-visible and coherent (lavapipe, integrated GPUs), a plain memcpy into
// the mapped block; otherwise through a host-visible staging buffer split in two halves,
// so that the host fills one while the queue copies the other. Transfers on one device
// are serialized; each waits for its own copies only (never vkQueueWaitIdle).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <mutex>

#include "memory_pool.h"

namespace phx::vulkan {

class Device;

class Transfers {
 public:
  // staging_type: a HOST_VISIBLE | HOST_COHERENT memory type. Throws Error.
  Transfers(Device& device, uint32_t staging_type, uint64_t staging_bytes);
  ~Transfers();
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  // Throw Error.
  void write(Allocation& dst, uint64_t offset, const void* src, uint64_t size);
  void read(Allocation& src, uint64_t offset, void* dst, uint64_t size);
  // Both on this device.
  void copy(Allocation& dst, uint64_t dst_offset, Allocation& src, uint64_t src_offset,
            uint64_t size);

 private:
  struct Slot {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    bool busy = false;
    // A read's bytes to copy out of this half once its copy has finished.
    void* read_to = nullptr;
    uint64_t read_bytes = 0;
  };
  void finish(Slot& slot);  // waits for the slot's copy; copies a read out
  void run_copy(Slot& slot, VkBuffer src, uint64_t src_offset, VkBuffer dst, uint64_t dst_offset,
                uint64_t size);
  uint64_t half() const { return staging_bytes_ / 2; }

  Device& device_;
  std::mutex mutex_;
  uint64_t staging_bytes_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  Slot slots_[2];
  VkBuffer staging_ = VK_NULL_HANDLE;
  VkDeviceMemory staging_memory_ = VK_NULL_HANDLE;
  char* staging_mapped_ = nullptr;
};

}  // namespace phx::vulkan
