// A device's memory: a few large VkDeviceMemory blocks, each with one VkBuffer over all
// of it, carved into aligned ranges; a tensor bigger than half a block gets a block of
// its own. Freed ranges are coalesced and reused; blocks that become empty stay cached
// for the next allocations until release_cached(). An allocation that fails changes
// nothing: no cached block is destroyed to make room. Thread-safe.
#pragma once

#include <phynexus/phynexus.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace phx::vulkan {

struct MemoryBlock {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkBuffer buffer = VK_NULL_HANDLE;
  uint64_t size = 0;
  char* mapped = nullptr;                    // null unless the pool maps its blocks
  bool dedicated = false;                    // one allocation's own block: freed with it
  std::map<uint64_t, uint64_t> free_ranges;  // offset -> bytes, coalesced
  uint64_t used = 0;
};

// What the plugin hands out as a buffer (and what scratch memory is).
struct Allocation {
  MemoryBlock* block = nullptr;
  uint64_t offset = 0;    // in block->buffer; a multiple of the pool's alignment
  uint64_t size = 0;      // as requested
  uint64_t reserved = 0;  // size rounded up to the alignment: what it occupies
  uint32_t device = 0;
  bool scratch = false;
  char* mapped() const { return block->mapped != nullptr ? block->mapped + offset : nullptr; }
};

struct MemoryPoolConfig {
  uint32_t device = 0;  // the device index, recorded in each allocation
  VkDevice vk_device = VK_NULL_HANDLE;
  uint32_t memory_type = 0;
  uint64_t capacity = 0;        // the heap's size: no request may exceed it
  uint64_t block_size = 0;      // at most maxMemoryAllocationSize
  uint64_t max_allocation = 0;  // maxMemoryAllocationSize, capped by maxBufferSize
  uint64_t alignment = 64;      // a power of two
  bool map_blocks = false;      // map every block (the memory type is host-visible)
};

class MemoryPool {
 public:
  explicit MemoryPool(const MemoryPoolConfig& config);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // size bytes (>= 1). Tensors count in bytes_in_use and against the limit; scratch memory
  // (an op's temporaries) counts in scratch_bytes() only. Throws Error OUT_OF_MEMORY
  // with the sizes in its message.
  Allocation* allocate(uint64_t size, bool scratch);
  void free(Allocation* allocation);

  phx_memory_stats stats() const;
  void set_limit(uint64_t limit_bytes);  // 0 removes it
  void release_cached();
  size_t block_count() const;
  uint64_t scratch_bytes() const;
  uint64_t capacity() const { return config_.capacity; }
  // How many blocks (and their VkBuffers) were destroyed so far: commands recorded while
  // it had one value may bind any buffer that still exists, and only those.
  uint64_t blocks_destroyed() const { return blocks_destroyed_; }

 private:
  MemoryBlock* new_block(uint64_t size, bool dedicated);  // under mutex_
  void destroy_block(MemoryBlock* block);
  bool carve(MemoryBlock& block, uint64_t bytes, uint64_t& offset);
  uint64_t cached_bytes_locked() const;  // the empty blocks' bytes, under mutex_

  MemoryPoolConfig config_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<MemoryBlock>> blocks_;
  uint64_t in_use_ = 0, peak_ = 0, limit_ = 0, count_ = 0, scratch_ = 0;
  std::atomic<uint64_t> blocks_destroyed_{0};
};

}  // namespace phx::vulkan
