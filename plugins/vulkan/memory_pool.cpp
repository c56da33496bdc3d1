#include "memory_pool.h"

#include <algorithm>
#include <string>

#include "vk_check.h"

namespace phx::vulkan {
namespace {

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace

MemoryPool::MemoryPool(const MemoryPoolConfig& config) : config_(config) {}

MemoryPool::~MemoryPool() {
  for (auto& block : blocks_) destroy_block(block.get());
}

void MemoryPool::destroy_block(MemoryBlock* block) {
  // Unmapping is implicit in vkFreeMemory.
  vkDestroyBuffer(config_.vk_device, block->buffer, nullptr);
  vkFreeMemory(config_.vk_device, block->memory, nullptr);
  ++blocks_destroyed_;
}

MemoryBlock* MemoryPool::new_block(uint64_t size, bool dedicated) {
  auto block = std::make_unique<MemoryBlock>();
  block->size = size;
  block->dedicated = dedicated;
  auto buffer_info = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  buffer_info.size = size;
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(config_.vk_device, &buffer_info, nullptr, &block->buffer), "vkCreateBuffer");
  VkMemoryRequirements requirements;
  vkGetBufferMemoryRequirements(config_.vk_device, block->buffer, &requirements);
  auto allocate_info = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  allocate_info.allocationSize = requirements.size;
  allocate_info.memoryTypeIndex = config_.memory_type;
  VkResult result = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  if (requirements.memoryTypeBits & (1u << config_.memory_type))
    result = vkAllocateMemory(config_.vk_device, &allocate_info, nullptr, &block->memory);
  if (result == VK_SUCCESS)
    result = vkBindBufferMemory(config_.vk_device, block->buffer, block->memory, 0);
  if (result == VK_SUCCESS && config_.map_blocks)
    result = vkMapMemory(config_.vk_device, block->memory, 0, VK_WHOLE_SIZE, 0,
                         reinterpret_cast<void**>(&block->mapped));
  if (result != VK_SUCCESS) {
    vkDestroyBuffer(config_.vk_device, block->buffer, nullptr);
    vkFreeMemory(config_.vk_device, block->memory, nullptr);  // null is ignored
    check(result, ("a device memory block of " + std::to_string(size) + " bytes").c_str());
  }
  block->free_ranges[0] = size;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

bool MemoryPool::carve(MemoryBlock& block, uint64_t bytes, uint64_t& offset) {
  // First fit: offsets and sizes are multiples of the alignment, so any range that is
  // big enough fits at its start.
  for (auto it = block.free_ranges.begin(); it != block.free_ranges.end(); ++it) {
    if (it->second < bytes) continue;
    offset = it->first;
    const uint64_t rest = it->second - bytes;
    block.free_ranges.erase(it);
    if (rest > 0) block.free_ranges[offset + bytes] = rest;
    block.used += bytes;
    return true;
  }
  return false;
}

Allocation* MemoryPool::allocate(uint64_t size, bool scratch) {
  const uint64_t reserved = align_up(size, config_.alignment);
  std::lock_guard lock(mutex_);
  if (reserved > config_.capacity || reserved > config_.max_allocation)
    throw Error{PHX_STATUS_OUT_OF_MEMORY, "cannot allocate " + std::to_string(size) +
                                              " bytes: the device's memory heap has " +
                                              std::to_string(config_.capacity) +
                                              " bytes and one allocation may have at most " +
                                              std::to_string(config_.max_allocation)};
  if (!scratch && limit_ != 0 && in_use_ + reserved > limit_)
    throw Error{PHX_STATUS_OUT_OF_MEMORY,
                "cannot allocate " + std::to_string(size) + " bytes: " + std::to_string(in_use_) +
                    " bytes in use, limit " + std::to_string(limit_) + " bytes"};
  auto allocation = std::make_unique<Allocation>();
  allocation->size = size;
  allocation->reserved = reserved;
  allocation->device = config_.device;
  allocation->scratch = scratch;
  const bool dedicated = reserved > config_.block_size / 2;
  if (!dedicated) {
    for (auto& block : blocks_)
      if (!block->dedicated && carve(*block, reserved, allocation->offset)) {
        allocation->block = block.get();
        break;
      }
  }
  if (allocation->block == nullptr) {
    const uint64_t block_size = dedicated ? reserved : config_.block_size;
    // No cached empty block is destroyed to make room: a refusal leaves the blocks and the
    // statistics as they were, and the caller chooses whether to release the cache.
    try {
      allocation->block = new_block(block_size, dedicated);
    } catch (const Error& e) {
      if (e.status() != PHX_STATUS_OUT_OF_MEMORY) throw;
      const uint64_t cached = cached_bytes_locked();
      throw Error{PHX_STATUS_OUT_OF_MEMORY,
                  "cannot allocate " + std::to_string(size) +
                      " bytes: the device refused a block of " + std::to_string(block_size) +
                      " bytes (" + e.what() + "); " + std::to_string(in_use_) +
                      " bytes in use of " + std::to_string(config_.capacity) +
                      (cached > 0 ? "; phx_memory_release_cached frees the " +
                                        std::to_string(cached) + " bytes of cached blocks"
                                  : "")};
    }
    carve(*allocation->block, reserved, allocation->offset);
  }
  if (scratch) {
    scratch_ += reserved;
  } else {
    in_use_ += reserved;
    peak_ = std::max(peak_, in_use_);
    ++count_;
  }
  return allocation.release();
}

void MemoryPool::free(Allocation* allocation) {
  std::unique_ptr<Allocation> owned(allocation);
  std::lock_guard lock(mutex_);
  if (allocation->scratch) {
    scratch_ -= allocation->reserved;
  } else {
    in_use_ -= allocation->reserved;
    --count_;
  }
  MemoryBlock& block = *allocation->block;
  block.used -= allocation->reserved;
  if (block.dedicated) {
    std::erase_if(blocks_, [&](const std::unique_ptr<MemoryBlock>& b) {
      if (b.get() != &block) return false;
      destroy_block(b.get());
      return true;
    });
    return;
  }
  // Coalesce with the free neighbours on both sides.
  uint64_t offset = allocation->offset, bytes = allocation->reserved;
  auto next = block.free_ranges.lower_bound(offset);
  if (next != block.free_ranges.end() && next->first == offset + bytes) {
    bytes += next->second;
    next = block.free_ranges.erase(next);
  }
  if (next != block.free_ranges.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      bytes += previous->second;
      block.free_ranges.erase(previous);
    }
  }
  block.free_ranges[offset] = bytes;
}

phx_memory_stats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  phx_memory_stats s = PHX_MEMORY_STATS_INIT;
  s.bytes_in_use = in_use_;
  s.peak_bytes_in_use = peak_;
  s.bytes_cached = cached_bytes_locked();
  s.limit_bytes = limit_ != 0 ? limit_ : config_.capacity;
  s.allocation_count = count_;
  return s;
}

uint64_t MemoryPool::cached_bytes_locked() const {
  uint64_t bytes = 0;
  for (const auto& block : blocks_)
    if (block->used == 0) bytes += block->size;
  return bytes;
}

void MemoryPool::set_limit(uint64_t limit_bytes) {
  std::lock_guard lock(mutex_);
  limit_ = limit_bytes;
}

void MemoryPool::release_cached() {
  std::lock_guard lock(mutex_);
  std::erase_if(blocks_, [this](const std::unique_ptr<MemoryBlock>& b) {
    if (b->used != 0) return false;
    destroy_block(b.get());
    return true;
  });
}

size_t MemoryPool::block_count() const {
  std::lock_guard lock(mutex_);
  return blocks_.size();
}

uint64_t MemoryPool::scratch_bytes() const {
  std::lock_guard lock(mutex_);
  return scratch_;
}

}  // namespace phx::vulkan
