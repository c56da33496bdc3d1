// A simulated NPU's DRAM (plugin_common::MemoryPool): the capacity its profile
// offers tensors, or a lower limit.
//
// With memory optimization on, freed buffers are not returned: they are kept by size
// class and handed to later allocations of the same class, as an NPU runtime's planner
// reuses activation buffers between layers; allocations are then counted at their class
// size. Off, every allocation is a fresh host allocation counted at its 64-byte aligned
// size, freed at once.
#pragma once

#include "memory_pool.h"

namespace phx::npu_sim {

constexpr plugin_common::MemoryPool::Options dram_options(bool memory_optimization) {
  return {"DRAM",
          "counted",
          /*alignment=*/64,
          /*size_classes=*/memory_optimization,
          /*keep_freed=*/memory_optimization,
          /*max_kept_bytes=*/0,
          /*simulated=*/true};
}

}  // namespace phx::npu_sim
