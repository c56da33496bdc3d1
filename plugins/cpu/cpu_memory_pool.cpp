#include "cpu_memory_pool.h"

#include <cstdlib>

namespace phx::cpu {
namespace {

constexpr uint64_t kAlignment = 64;
// The pool keeps at most this much freed memory; past it, blocks go back to the system.
constexpr uint64_t kMaxCachedBytes = uint64_t{1} << 30;

// Sizes round up to a class so that a block freed by one tensor serves the next of a
// similar size: 64-byte steps below 4 KiB, then four classes per power of two (at most
// 25% waste).
uint64_t size_class(uint64_t size) {
  if (size <= 4096) return (size + kAlignment - 1) / kAlignment * kAlignment;
  int top = 63 - __builtin_clzll(size);
  uint64_t step = uint64_t{1} << (top - 2);
  return (size + step - 1) / step * step;
}

std::string bytes_text(uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

MemoryPool::MemoryPool(uint64_t capacity) : capacity_(capacity), limit_(capacity) {}

MemoryPool::~MemoryPool() {
  for (auto& [block, size] : live_) std::free(block);
  for (auto& [size, block] : cached_) std::free(block);
}

void* MemoryPool::allocate(uint64_t size, std::string& error) {
  uint64_t cls = size_class(size);
  std::lock_guard lock(mutex_);
  if (cls > limit_ || in_use_ > limit_ - cls) {
    error = "out of memory: requested " + bytes_text(size) + " with " + bytes_text(in_use_) +
            " in use, limit " + bytes_text(limit_);
    return nullptr;
  }
  void* block = nullptr;
  if (auto it = cached_.find(cls); it != cached_.end()) {
    block = it->second;
    cached_.erase(it);
    cached_bytes_ -= cls;
  } else {
    // No cached block is freed to make host room: a refusal leaves the cache and the
    // statistics as they were, and the caller chooses whether to release the cache.
    block = std::aligned_alloc(kAlignment, cls);
    if (block == nullptr) {
      error = "out of memory: the host refused " + bytes_text(size) +
              (cached_bytes_ > 0 ? "; phx_memory_release_cached frees the " +
                                       bytes_text(cached_bytes_) + " of cached blocks"
                                 : "");
      return nullptr;
    }
  }
  live_.emplace(block, cls);
  in_use_ += cls;
  if (in_use_ > peak_) peak_ = in_use_;
  return block;
}

void MemoryPool::free(void* block) {
  std::lock_guard lock(mutex_);
  auto it = live_.find(block);
  if (it == live_.end()) return;
  uint64_t cls = it->second;
  live_.erase(it);
  in_use_ -= cls;
  cached_.emplace(cls, block);
  cached_bytes_ += cls;
  trim_cache_locked(kMaxCachedBytes);
}

void MemoryPool::trim_cache_locked(uint64_t keep_at_most) {
  // The largest blocks go first: they return the most memory for the fewest reuses lost.
  while (cached_bytes_ > keep_at_most && !cached_.empty()) {
    auto it = std::prev(cached_.end());
    cached_bytes_ -= it->first;
    std::free(it->second);
    cached_.erase(it);
  }
}

phx_memory_stats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  phx_memory_stats s{};
  s.struct_size = sizeof s;
  s.bytes_in_use = in_use_;
  s.peak_bytes_in_use = peak_;
  s.bytes_cached = cached_bytes_;
  s.limit_bytes = limit_;
  s.allocation_count = live_.size();
  return s;
}

void MemoryPool::set_limit(uint64_t limit) {
  std::lock_guard lock(mutex_);
  limit_ = limit == 0 ? capacity_ : limit;
}

void MemoryPool::release_cached() {
  std::lock_guard lock(mutex_);
  trim_cache_locked(0);
}

}  // namespace phx::cpu
