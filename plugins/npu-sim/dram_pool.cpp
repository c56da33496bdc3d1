#include "dram_pool.h"

#include <bit>
#include <cstdlib>
#include <new>

namespace phx::npu_sim {
namespace {

constexpr uint64_t kSmallestClass = 256;

uint64_t align_up(uint64_t size, uint64_t to) { return (size + to - 1) / to * to; }

}  // namespace

DramPool::DramPool(uint32_t device, uint64_t capacity, bool reuse)
    : device_(device), capacity_(capacity), reuse_(reuse), limit_(capacity) {}

DramPool::~DramPool() { release_cached(); }  // the host frees every live buffer first

uint64_t DramPool::size_class(uint64_t size) {
  if (size <= kSmallestClass) return kSmallestClass;
  const uint64_t power = std::bit_floor(size);
  return align_up(size, power / 4);
}

DramBlock* DramPool::allocate(uint64_t size, std::string& error) {
  if (size > (uint64_t{1} << 62)) {  // no device holds it; keeps the rounding below exact
    error = "out of DRAM on device " + std::to_string(device_) + ": requested " +
            std::to_string(size) + " bytes";
    return nullptr;
  }
  const uint64_t counted = reuse_ ? size_class(size) : align_up(size, kAlignment);
  std::lock_guard lock(mutex_);
  if (counted > limit_ || in_use_ > limit_ - counted) {
    error = "out of DRAM on device " + std::to_string(device_) + ": requested " +
            std::to_string(size) + " bytes (" + std::to_string(counted) + " counted), " +
            std::to_string(in_use_) + " bytes in use, capacity " + std::to_string(capacity_) +
            " bytes" + (limit_ < capacity_ ? ", limit " + std::to_string(limit_) + " bytes" : "");
    return nullptr;
  }
  DramBlock* block = nullptr;
  if (auto it = cached_.find(counted); it != cached_.end()) {
    block = it->second;
    cached_.erase(it);
    cached_bytes_ -= counted;
    ++reuse_stats_.buffers_reused;
    reuse_stats_.bytes_reused += counted;
  } else {
    evict_locked(counted);
    void* data = std::aligned_alloc(kAlignment, counted);
    block = data != nullptr ? new (std::nothrow) DramBlock{data, counted, device_} : nullptr;
    if (block == nullptr) {
      std::free(data);
      error = "out of host memory backing the simulated DRAM: requested " + std::to_string(size) +
              " bytes";
      return nullptr;
    }
    ++reuse_stats_.host_allocations;
  }
  in_use_ += counted;
  ++live_count_;
  if (in_use_ > peak_) peak_ = in_use_;
  return block;
}

void DramPool::free(DramBlock* block) {
  std::lock_guard lock(mutex_);
  in_use_ -= block->dram_bytes;
  --live_count_;
  if (reuse_) {
    cached_.emplace(block->dram_bytes, block);
    cached_bytes_ += block->dram_bytes;
  } else {
    std::free(block->data);
    delete block;
  }
}

void DramPool::drop_locked(Cache::iterator it) {
  cached_bytes_ -= it->first;
  std::free(it->second->data);
  delete it->second;
  cached_.erase(it);
}

// Frees kept blocks, largest first, until needed more bytes fit beside them.
void DramPool::evict_locked(uint64_t needed) {
  while (!cached_.empty() && in_use_ + cached_bytes_ + needed > limit_) {
    drop_locked(std::prev(cached_.end()));
    ++reuse_stats_.evictions;
  }
}

phx_memory_stats DramPool::stats() const {
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

DramPool::ReuseStats DramPool::reuse_stats() const {
  std::lock_guard lock(mutex_);
  return reuse_stats_;
}

uint64_t DramPool::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

void DramPool::set_limit(uint64_t limit) {
  std::lock_guard lock(mutex_);
  limit_ = limit == 0 || limit > capacity_ ? capacity_ : limit;
}

void DramPool::release_cached() {
  std::lock_guard lock(mutex_);
  while (!cached_.empty()) drop_locked(cached_.begin());
}

}  // namespace phx::npu_sim
