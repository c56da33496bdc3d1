#include "hbm_pool.h"

#include <cstdlib>
#include <new>

namespace phx::tpu_sim {
namespace {

uint64_t align_up(uint64_t size) {
  return (size + HbmPool::kAlignment - 1) / HbmPool::kAlignment * HbmPool::kAlignment;
}

}  // namespace

HbmPool::HbmPool(uint32_t device, uint64_t capacity)
    : device_(device), capacity_(capacity), limit_(capacity) {}

HbmPool::~HbmPool() { release_cached(); }  // the host frees every live buffer first

HbmBlock* HbmPool::allocate(uint64_t size, std::string& error) {
  if (size > UINT64_MAX - kAlignment) {
    error = "out of HBM: requested " + std::to_string(size) + " bytes";
    return nullptr;
  }
  const uint64_t aligned = align_up(size);
  std::lock_guard lock(mutex_);
  if (aligned > limit_ || in_use_ > limit_ - aligned) {
    error = "out of HBM on device " + std::to_string(device_) + ": requested " +
            std::to_string(size) + " bytes (" + std::to_string(aligned) + " aligned), " +
            std::to_string(in_use_) + " bytes in use, capacity " + std::to_string(capacity_) +
            " bytes" + (limit_ < capacity_ ? ", limit " + std::to_string(limit_) + " bytes" : "");
    return nullptr;
  }
  HbmBlock* block = nullptr;
  if (auto it = cached_.find(aligned); it != cached_.end()) {
    block = it->second;
    cached_.erase(it);
    cached_bytes_ -= aligned;
  } else {
    evict_locked(aligned);
    void* data = std::aligned_alloc(kAlignment, aligned);
    block = data != nullptr ? new (std::nothrow) HbmBlock{data, aligned, device_} : nullptr;
    if (block == nullptr) {
      std::free(data);
      error = "out of host memory backing the simulated HBM: requested " + std::to_string(size) +
              " bytes";
      return nullptr;
    }
  }
  in_use_ += aligned;
  ++live_count_;
  if (in_use_ > peak_) peak_ = in_use_;
  return block;
}

void HbmPool::free(HbmBlock* block) {
  std::lock_guard lock(mutex_);
  in_use_ -= block->hbm_bytes;
  --live_count_;
  cached_.emplace(block->hbm_bytes, block);
  cached_bytes_ += block->hbm_bytes;
}

void HbmPool::drop_cached_locked(std::multimap<uint64_t, HbmBlock*>::iterator it) {
  cached_bytes_ -= it->first;
  std::free(it->second->data);
  delete it->second;
  cached_.erase(it);
}

// Frees cached blocks, largest first, until needed more bytes fit in the HBM with them.
void HbmPool::evict_locked(uint64_t needed) {
  while (!cached_.empty() && in_use_ + cached_bytes_ + needed > limit_) {
    drop_cached_locked(std::prev(cached_.end()));
    ++evictions_;
  }
}

phx_memory_stats HbmPool::stats() const {
  std::lock_guard lock(mutex_);
  phx_memory_stats s{};
  s.struct_size = sizeof s;
  s.bytes_in_use = in_use_;
  s.peak_bytes_in_use = peak_;
  s.bytes_cached = cached_bytes_;
  s.limit_bytes = limit_;
  s.allocation_count = live_count_;
  return s;
}

uint64_t HbmPool::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

uint64_t HbmPool::evictions() const {
  std::lock_guard lock(mutex_);
  return evictions_;
}

void HbmPool::set_limit(uint64_t limit) {
  std::lock_guard lock(mutex_);
  limit_ = limit == 0 || limit > capacity_ ? capacity_ : limit;
}

void HbmPool::release_cached() {
  std::lock_guard lock(mutex_);
  while (!cached_.empty()) drop_cached_locked(cached_.begin());
}

}  // namespace phx::tpu_sim
