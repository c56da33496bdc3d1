#include "memory_pool.h"

#include <bit>
#include <cstdlib>
#include <new>

namespace phx::plugin_common {
namespace {

constexpr uint64_t kSmallestClass = 256;
// No device holds more; refusing larger requests first keeps the rounding below exact.
constexpr uint64_t kLargestRequest = uint64_t{1} << 62;

uint64_t align_up(uint64_t size, uint64_t to) { return (size + to - 1) / to * to; }

}  // namespace

MemoryPool::MemoryPool(uint32_t device, uint64_t capacity, const Options& options)
    : device_(device), capacity_(capacity), options_(options), limit_(capacity) {}

// The host frees every live buffer before the plugin shuts down; only kept ones remain.
MemoryPool::~MemoryPool() { release_cached(); }

uint64_t MemoryPool::size_class(uint64_t size) {
  if (size <= kSmallestClass) return kSmallestClass;
  const uint64_t power = std::bit_floor(size);
  return align_up(size, power / 4);
}

MemoryBlock* MemoryPool::allocate(uint64_t size, std::string& error) {
  // No device number: the plugin's own numbering is not the one the user knows, and the
  // host names the device in the message it returns.
  const std::string out_of = std::string("out of ") + options_.memory_name;
  if (size > kLargestRequest) {
    error = out_of + ": requested " + std::to_string(size) + " bytes";
    return nullptr;
  }
  const uint64_t counted =
      options_.size_classes ? size_class(size) : align_up(size, options_.alignment);
  std::lock_guard lock(mutex_);
  const std::string usage =
      std::to_string(in_use_) + " bytes in use, capacity " + std::to_string(capacity_) + " bytes" +
      (limit_ < capacity_ ? ", limit " + std::to_string(limit_) + " bytes" : "");
  if (counted > limit_ || in_use_ > limit_ - counted) {
    error = out_of + ": requested " + std::to_string(size) + " bytes (" + std::to_string(counted) +
            " " + options_.counted_name + "), " + usage;
    return nullptr;
  }
  MemoryBlock* block = nullptr;
  if (auto it = cached_.find(counted); it != cached_.end()) {
    block = it->second;
    cached_.erase(it);
    cached_bytes_ -= counted;
    ++reuse_stats_.buffers_reused;
    reuse_stats_.bytes_reused += counted;
  } else {
    // The host memory is taken before any kept block is evicted, so that a refusal
    // leaves the kept blocks, the statistics and the usage as they were.
    void* data = std::aligned_alloc(options_.alignment, counted);
    block =
        data != nullptr ? new (std::nothrow) MemoryBlock{data, counted, device_, false} : nullptr;
    if (block == nullptr) {
      std::free(data);
      error = (options_.simulated ? std::string("out of host memory backing the simulated ") +
                                        options_.memory_name + ": the host refused "
                                  : out_of + ": the host refused ") +
              std::to_string(counted) + " bytes for a request of " + std::to_string(size) +
              " bytes; the " + options_.memory_name + " has room (" + usage + ")" +
              (cached_bytes_ > 0 ? "; phx_memory_release_cached frees the " +
                                       std::to_string(cached_bytes_) + " bytes of kept blocks"
                                 : "");
      return nullptr;
    }
    evict_locked(counted);
    ++reuse_stats_.host_allocations;
  }
  in_use_ += counted;
  ++live_count_;
  if (in_use_ > peak_) peak_ = in_use_;
  return block;
}

void MemoryPool::free(MemoryBlock* block) {
  std::lock_guard lock(mutex_);
  in_use_ -= block->counted_bytes;
  --live_count_;
  if (options_.keep_freed) {
    cached_.emplace(block->counted_bytes, block);
    cached_bytes_ += block->counted_bytes;
    trim_kept_locked();
  } else {
    std::free(block->data);
    delete block;
  }
}

void MemoryPool::drop_locked(Cache::iterator it) {
  cached_bytes_ -= it->first;
  std::free(it->second->data);
  delete it->second;
  cached_.erase(it);
}

// Frees kept blocks, largest first, until needed more bytes fit beside them.
void MemoryPool::evict_locked(uint64_t needed) {
  while (!cached_.empty() && in_use_ + cached_bytes_ + needed > limit_) {
    drop_locked(std::prev(cached_.end()));
    ++reuse_stats_.evictions;
  }
}

// Frees kept blocks past the cap, largest first: they return the most memory for the
// fewest reuses lost.
void MemoryPool::trim_kept_locked() {
  if (options_.max_kept_bytes == 0) return;
  while (!cached_.empty() && cached_bytes_ > options_.max_kept_bytes)
    drop_locked(std::prev(cached_.end()));
}

phx_memory_stats MemoryPool::stats() const {
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

MemoryPool::ReuseStats MemoryPool::reuse_stats() const {
  std::lock_guard lock(mutex_);
  return reuse_stats_;
}

uint64_t MemoryPool::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

void MemoryPool::set_limit(uint64_t limit) {
  std::lock_guard lock(mutex_);
  limit_ = limit == 0 || limit > capacity_ ? capacity_ : limit;
}

void MemoryPool::release_cached() {
  std::lock_guard lock(mutex_);
  while (!cached_.empty()) drop_locked(cached_.begin());
}

}  // namespace phx::plugin_common
