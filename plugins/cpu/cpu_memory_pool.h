// Host memory for the CPU device's tensors: aligned blocks, freed blocks kept by size for
// reuse (tensors of a model come back in the same sizes every step), a limit, and the
// statistics of phx_memory_stats.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace phx::cpu {

class MemoryPool {
 public:
  // capacity: the default limit (the machine's memory).
  explicit MemoryPool(uint64_t capacity);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // A block of at least size bytes, 64-byte aligned; null with error set when the limit
  // or the host refuses, with the cache and the statistics as they were.
  void* allocate(uint64_t size, std::string& error);
  void free(void* block);

  phx_memory_stats stats() const;
  void set_limit(uint64_t limit);  // 0: back to the capacity
  void release_cached();

 private:
  void trim_cache_locked(uint64_t keep_at_most);

  mutable std::mutex mutex_;
  const uint64_t capacity_;
  uint64_t limit_;
  uint64_t in_use_ = 0, peak_ = 0, cached_bytes_ = 0;
  std::unordered_map<void*, uint64_t> live_;  // block -> size class
  std::multimap<uint64_t, void*> cached_;     // size class -> free block
};

}  // namespace phx::cpu
