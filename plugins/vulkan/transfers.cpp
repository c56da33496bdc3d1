#include "transfers.h"

#include <algorithm>
#include <cstring>

#include "device.h"
#include "vk_check.h"

namespace phx::vulkan {

Transfers::Transfers(Device& device, uint32_t staging_type, uint64_t staging_bytes)
    : device_(device), staging_bytes_(staging_bytes) {
  VkDevice vk = device_.vk();
  auto pool_info = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = device_.queue_family();
  check(vkCreateCommandPool(vk, &pool_info, nullptr, &pool_), "vkCreateCommandPool");
  try {
    for (Slot& slot : slots_) {
      auto info =
          vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
      info.commandPool = pool_;
      info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      info.commandBufferCount = 1;
      check(vkAllocateCommandBuffers(vk, &info, &slot.commands), "vkAllocateCommandBuffers");
      auto fence_info = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
      check(vkCreateFence(vk, &fence_info, nullptr, &slot.fence), "vkCreateFence");
    }
    if (device_.direct_io()) return;  // no staging needed
    auto buffer_info = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    buffer_info.size = staging_bytes_;
    buffer_info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    check(vkCreateBuffer(vk, &buffer_info, nullptr, &staging_), "vkCreateBuffer (staging)");
    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(vk, staging_, &requirements);
    auto allocate = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = staging_type;
    check(vkAllocateMemory(vk, &allocate, nullptr, &staging_memory_), "vkAllocateMemory (staging)");
    check(vkBindBufferMemory(vk, staging_, staging_memory_, 0), "vkBindBufferMemory (staging)");
    check(vkMapMemory(vk, staging_memory_, 0, VK_WHOLE_SIZE, 0,
                      reinterpret_cast<void**>(&staging_mapped_)),
          "vkMapMemory (staging)");
  } catch (...) {
    this->~Transfers();
    throw;
  }
}

Transfers::~Transfers() {
  VkDevice vk = device_.vk();
  for (Slot& slot : slots_) {
    if (slot.busy) vkWaitForFences(vk, 1, &slot.fence, VK_TRUE, UINT64_MAX);
    vkDestroyFence(vk, slot.fence, nullptr);
    slot.fence = VK_NULL_HANDLE;
  }
  vkDestroyBuffer(vk, staging_, nullptr);
  vkFreeMemory(vk, staging_memory_, nullptr);
  vkDestroyCommandPool(vk, pool_, nullptr);  // frees the command buffers
  staging_ = VK_NULL_HANDLE;
  staging_memory_ = VK_NULL_HANDLE;
  pool_ = VK_NULL_HANDLE;
}

void Transfers::finish(Slot& slot) {
  if (!slot.busy) return;
  slot.busy = false;
  check(vkWaitForFences(device_.vk(), 1, &slot.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  check(vkResetFences(device_.vk(), 1, &slot.fence), "vkResetFences");
  if (slot.read_to != nullptr) {
    const uint64_t at = &slot == &slots_[0] ? 0 : half();
    std::memcpy(slot.read_to, staging_mapped_ + at, slot.read_bytes);
    slot.read_to = nullptr;
  }
}

void Transfers::run_copy(Slot& slot, VkBuffer src, uint64_t src_offset, VkBuffer dst,
                         uint64_t dst_offset, uint64_t size) {
  auto begin = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(slot.commands, &begin), "vkBeginCommandBuffer");
  // Earlier work on the queue (ops of any stream) wrote what this copy reads, and may
  // read what it overwrites; the host made its own writes visible by submitting.
  auto before = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  before.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(slot.commands, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
  const VkBufferCopy region{src_offset, dst_offset, size};
  vkCmdCopyBuffer(slot.commands, src, dst, 1, &region);
  auto after = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  after.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(slot.commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                       1, &after, 0, nullptr, 0, nullptr);
  check(vkEndCommandBuffer(slot.commands), "vkEndCommandBuffer");
  auto submit = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &slot.commands;
  device_.submit(submit, slot.fence);
  slot.busy = true;
  ++device_.stats().staged_transfers;
}

void Transfers::write(Allocation& dst, uint64_t offset, const void* src, uint64_t size) {
  device_.stats().bytes_uploaded += size;
  if (device_.direct_io()) {
    std::memcpy(dst.mapped() + offset, src, size);
    return;
  }
  std::lock_guard lock(mutex_);
  const char* from = static_cast<const char*>(src);
  for (uint64_t done = 0, chunk = 0; done < size; done += half(), ++chunk) {
    Slot& slot = slots_[chunk % 2];
    finish(slot);  // its previous chunk is out of the half we are about to fill
    const uint64_t bytes = std::min(half(), size - done);
    const uint64_t at = chunk % 2 == 0 ? 0 : half();
    std::memcpy(staging_mapped_ + at, from + done, bytes);
    run_copy(slot, staging_, at, dst.block->buffer, dst.offset + offset + done, bytes);
  }
  for (Slot& slot : slots_) finish(slot);
}

void Transfers::read(Allocation& src, uint64_t offset, void* dst, uint64_t size) {
  device_.stats().bytes_downloaded += size;
  if (device_.direct_io()) {
    std::memcpy(dst, src.mapped() + offset, size);
    return;
  }
  std::lock_guard lock(mutex_);
  char* to = static_cast<char*>(dst);
  for (uint64_t done = 0, chunk = 0; done < size; done += half(), ++chunk) {
    Slot& slot = slots_[chunk % 2];
    finish(slot);  // copies out the chunk before last, freeing its half
    const uint64_t bytes = std::min(half(), size - done);
    const uint64_t at = chunk % 2 == 0 ? 0 : half();
    run_copy(slot, src.block->buffer, src.offset + offset + done, staging_, at, bytes);
    slot.read_to = to + done;
    slot.read_bytes = bytes;
  }
  finish(slots_[0]);
  finish(slots_[1]);
}

void Transfers::copy(Allocation& dst, uint64_t dst_offset, Allocation& src, uint64_t src_offset,
                     uint64_t size) {
  device_.stats().bytes_copied += size;
  if (device_.direct_io()) {
    std::memmove(dst.mapped() + dst_offset, src.mapped() + src_offset, size);
    return;
  }
  std::lock_guard lock(mutex_);
  run_copy(slots_[0], src.block->buffer, src.offset + src_offset, dst.block->buffer,
           dst.offset + dst_offset, size);
  finish(slots_[0]);
}

}  // namespace phx::vulkan
