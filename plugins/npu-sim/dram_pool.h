// A simulated NPU's DRAM: the capacity its profile offers tensors (or a lower limit)
// enforced, usage and peak counted; host memory backs only the buffers that exist.
//
// With memory optimization on, freed buffers are not returned: they are kept in pools by
// size class and handed to later allocations of the same class, as an NPU runtime's
// planner reuses activation buffers between layers. Allocations are then counted at
// their class size, and the kept buffers still occupy DRAM (bytes_cached): when an
// allocation needs their room they are evicted, largest first. Off, every allocation
// is a fresh host allocation counted at its 64-byte aligned size, freed at once.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace phx::npu_sim {

// A buffer the plugin hands out: host memory standing for device memory.
struct DramBlock {
  void* data;
  uint64_t dram_bytes;  // what the block counts against DRAM
  uint32_t device;
};

class DramPool {
 public:
  static constexpr uint64_t kAlignment = 64;  // the plugin ABI's minimum

  // What reuse saved: host allocations made, and allocations served from the pools.
  struct ReuseStats {
    uint64_t host_allocations = 0;
    uint64_t buffers_reused = 0;
    uint64_t bytes_reused = 0;
    uint64_t evictions = 0;
  };

  DramPool(uint32_t device, uint64_t capacity, bool reuse);
  ~DramPool();
  DramPool(const DramPool&) = delete;
  DramPool& operator=(const DramPool&) = delete;

  // The size class of size bytes: at least 256, rounded up to a quarter of its power of
  // two (1000 -> 1024, 5000 -> 5120), so that a class wastes under 25%.
  static uint64_t size_class(uint64_t size);

  // A block of at least size bytes, or null with error giving the bytes requested, in
  // use and the capacity (and the limit when one is set) when the DRAM or the host
  // refuses.
  DramBlock* allocate(uint64_t size, std::string& error);
  void free(DramBlock* block);

  phx_memory_stats stats() const;
  ReuseStats reuse_stats() const;
  uint64_t in_use() const;
  uint64_t capacity() const { return capacity_; }
  void set_limit(uint64_t limit);  // 0: back to the capacity; never above it
  void release_cached();

 private:
  using Cache = std::multimap<uint64_t, DramBlock*>;
  void evict_locked(uint64_t needed);
  void drop_locked(Cache::iterator it);

  mutable std::mutex mutex_;
  const uint32_t device_;
  const uint64_t capacity_;
  const bool reuse_;
  uint64_t limit_;
  uint64_t in_use_ = 0, peak_ = 0, cached_bytes_ = 0, live_count_ = 0;
  ReuseStats reuse_stats_;
  Cache cached_;  // class size -> free block
};

}  // namespace phx::npu_sim
