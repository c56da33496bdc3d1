// Where an executable's intermediates live: ranges of one block of device memory, a range
// reused once the value in it is no longer needed (ggml-alloc and TFLite's arena planner
// work alike). Values are numbered; each lives from the node that writes it to the last
// node that reads it, in the order the nodes run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace phx::graph {

struct Lifetime {
  uint64_t bytes = 0;
  size_t first = 0;  // the node that writes it
  size_t last = 0;   // the last node that reads it (first, when none does)
};

struct MemoryPlan {
  std::vector<uint64_t> offsets;  // per lifetime, aligned to kPlanAlignment
  uint64_t size = 0;              // the block's size
  // The least any plan could use: the most room (memory_plan.cpp, room()) of the values
  // alive at one node.
  uint64_t lower_bound = 0;
};

// Offsets into the block are multiples of this: Vulkan's storage-buffer offset alignment
// is at most 256 on every device, and the host kernels want 64.
constexpr uint64_t kPlanAlignment = 256;

// reuse false: every value its own range, the block their sum.
MemoryPlan plan_memory(const std::vector<Lifetime>& lifetimes, size_t node_count, bool reuse);

}  // namespace phx::graph
