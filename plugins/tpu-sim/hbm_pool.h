// A simulated chip's HBM: capacity enforced, allocations aligned as on the device and
// counted at their aligned size, freed blocks cached for reuse (a model's tensors come
// back in the same sizes every step). Cached blocks still occupy HBM, as in a device's
// caching allocator: when an allocation needs their room they are evicted.
// Host memory backs only the blocks that exist, never the capacity.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace phx::tpu_sim {

// A buffer the plugin hands out: host memory standing for device memory.
struct HbmBlock {
  void* data;
  uint64_t hbm_bytes;  // the aligned size counted against HBM
  uint32_t device;
};

class HbmPool {
 public:
  // Device allocations are aligned to 512 bytes, the HBM access granule of TPUv4i
  // (Jouppi et al., ISCA 2021: "512B native access size").
  static constexpr uint64_t kAlignment = 512;

  HbmPool(uint32_t device, uint64_t capacity);
  ~HbmPool();
  HbmPool(const HbmPool&) = delete;
  HbmPool& operator=(const HbmPool&) = delete;

  // A block of at least size bytes, or null (out of memory) with error giving the bytes
  // requested, in use and the capacity, when the HBM (or its limit) or the host refuses.
  HbmBlock* allocate(uint64_t size, std::string& error);
  void free(HbmBlock* block);

  phx_memory_stats stats() const;
  uint64_t in_use() const;
  uint64_t evictions() const;
  uint64_t capacity() const { return capacity_; }
  void set_limit(uint64_t limit);  // 0: back to the capacity; never above it
  void release_cached();

 private:
  void evict_locked(uint64_t needed);
  void drop_cached_locked(std::multimap<uint64_t, HbmBlock*>::iterator it);

  mutable std::mutex mutex_;
  const uint32_t device_;
  const uint64_t capacity_;
  uint64_t limit_;
  uint64_t in_use_ = 0, peak_ = 0, cached_bytes_ = 0, live_count_ = 0, evictions_ = 0;
  std::multimap<uint64_t, HbmBlock*> cached_;  // aligned size -> free block
};

}  // namespace phx::tpu_sim
