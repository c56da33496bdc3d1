// The memory of a device whose buffers are host memory: the CPU device's own, or a
// simulated device's (a TPU's HBM, an NPU's DRAM), for which host memory backs only the
// blocks that exist, never the capacity. Its capacity, or a lower limit, is enforced;
// usage and peak are counted.
//
// One policy for every such device. Each allocation is counted at a rounded size: its
// aligned size, or with size classes its class size, so that a freed block can serve any
// later request of its class. Freed blocks may be kept for reuse (a model's tensors come
// back in the same sizes every step). Kept blocks still occupy the device's memory, as in
// a device's caching allocator (bytes_cached): when an allocation needs their room they
// are evicted, largest first, and a pool may cap how much it keeps (the CPU device keeps
// at most 1 GiB of the machine's memory idle). Thread-safe.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace phx::plugin_common {

// A buffer the plugin hands out: host memory, the device's own or standing for it.
struct MemoryBlock {
  void* data;
  uint64_t counted_bytes;  // what the block counts against the device's memory
  uint32_t device;
  bool imported = false;  // the consumer's memory (buffer_import_host): neither counted nor freed
};

class MemoryPool {
 public:
  struct Options {
    const char* memory_name;   // "HBM", "DRAM", "memory": what messages call the memory
    const char* counted_name;  // "aligned", "counted": what they call the counted size
    uint64_t alignment;        // of every block (at least the plugin ABI's 64 bytes)
    bool size_classes;         // count at size_class() rather than the aligned size
    bool keep_freed;           // keep freed blocks for reuse, else free them at once
    uint64_t max_kept_bytes;   // kept blocks past this go back to the host; 0: no cap
    bool simulated;            // host memory stands for the device's (messages say so)
  };

  // What reuse saved: host allocations made, and allocations served from kept blocks.
  struct ReuseStats {
    uint64_t host_allocations = 0;
    uint64_t buffers_reused = 0;
    uint64_t bytes_reused = 0;
    uint64_t evictions = 0;
  };

  MemoryPool(uint32_t device, uint64_t capacity, const Options& options);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // The size class of size bytes: at least 256, rounded up to a quarter of its power of
  // two (1000 -> 1024, 5000 -> 5120), so that a class wastes under 25%.
  static uint64_t size_class(uint64_t size);

  // A block of at least size bytes, or null with error giving the bytes requested, in
  // use and the capacity (and the limit when one is set). The error says which memory is
  // short: "out of <memory_name>" when the device's memory (capacity or limit) cannot
  // hold the block; when the host refuses, "out of host memory backing the simulated
  // <memory_name>" for a simulated device, else "out of <memory_name>: the host refused". Both are
  // checked before any kept block is evicted: a refused call changes nothing (kept blocks, stats,
  // usage).
  MemoryBlock* allocate(uint64_t size, std::string& error);
  void free(MemoryBlock* block);

  phx_memory_stats stats() const;
  ReuseStats reuse_stats() const;
  uint64_t in_use() const;
  uint64_t capacity() const { return capacity_; }
  void set_limit(uint64_t limit);  // 0: back to the capacity; never above it
  void release_cached();

 private:
  using Cache = std::multimap<uint64_t, MemoryBlock*>;
  void evict_locked(uint64_t needed);
  void trim_kept_locked();
  void drop_locked(Cache::iterator it);

  mutable std::mutex mutex_;
  const uint32_t device_;
  const uint64_t capacity_;
  const Options options_;
  uint64_t limit_;
  uint64_t in_use_ = 0, peak_ = 0, cached_bytes_ = 0, live_count_ = 0;
  ReuseStats reuse_stats_;
  Cache cached_;  // counted size -> free block
};

}  // namespace phx::plugin_common
