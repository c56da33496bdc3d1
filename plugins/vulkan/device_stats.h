// A device's running counters, reported by device_stats (docs/vulkan.md lists them).
#pragma once

#include <atomic>
#include <cstdint>

namespace phx::vulkan {

struct DeviceStats {
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> dispatches{0};
  std::atomic<uint64_t> submissions{0};  // vkQueueSubmit calls of the streams
  std::atomic<uint64_t> barriers{0};     // between the dispatches of ops and nodes
  std::atomic<uint64_t> runs{0};         // executables run (each also counts its nodes as ops)
  std::atomic<uint64_t> bytes_uploaded{0};
  std::atomic<uint64_t> bytes_downloaded{0};
  std::atomic<uint64_t> bytes_copied{0};      // buffer_copy on the device
  std::atomic<uint64_t> staged_transfers{0};  // staging-buffer chunks copied by the queue
  std::atomic<uint64_t> pipelines_created{0};
  std::atomic<uint64_t> pipeline_cache_hits{0};
  std::atomic<uint64_t> pipeline_cache_misses{0};
  std::atomic<uint64_t> pipeline_compile_ns{0};
};

}  // namespace phx::vulkan
