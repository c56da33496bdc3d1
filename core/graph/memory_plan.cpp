#include "memory_plan.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace phx::graph {
namespace {

// The room a value takes: its size rounded up to the alignment, and one alignment more when
// that is a multiple of 4 KiB. Ranges a power of two apart map rows of one tensor onto the
// same cache sets as another's (a matmul reading one range and writing the next lost 10%
// to it on the CPU device); the extra 256 bytes stagger them.
uint64_t room(uint64_t bytes) {
  const uint64_t room = std::max<uint64_t>(
      (bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment, kPlanAlignment);
  return room % 4096 == 0 ? room + kPlanAlignment : room;
}

// The free ranges of the block below its high-water mark, merged with their neighbours.
class FreeRanges {
 public:
  // The offset of a range of bytes: the smallest free range that holds it (best fit, so
  // large ranges stay whole for large values), else the top of the block, grown.
  uint64_t take(uint64_t bytes, uint64_t& top) {
    auto best = ranges_.end();
    for (auto it = ranges_.begin(); it != ranges_.end(); ++it)
      if (it->second >= bytes && (best == ranges_.end() || it->second < best->second)) best = it;
    if (best != ranges_.end()) {
      const uint64_t offset = best->first, size = best->second;
      ranges_.erase(best);
      if (size > bytes) ranges_.emplace(offset + bytes, size - bytes);
      return offset;
    }
    // A free range at the top grows into the new room rather than leaving a gap.
    if (!ranges_.empty()) {
      auto last = std::prev(ranges_.end());
      if (last->first + last->second == top) {
        const uint64_t offset = last->first;
        ranges_.erase(last);
        top = offset + bytes;
        return offset;
      }
    }
    const uint64_t offset = top;
    top += bytes;
    return offset;
  }

  void give_back(uint64_t offset, uint64_t bytes) {
    auto next = ranges_.lower_bound(offset);
    if (next != ranges_.end() && offset + bytes == next->first) {
      bytes += next->second;
      next = ranges_.erase(next);
    }
    if (next != ranges_.begin()) {
      auto previous = std::prev(next);
      if (previous->first + previous->second == offset) {
        previous->second += bytes;
        return;
      }
    }
    ranges_.emplace(offset, bytes);
  }

 private:
  std::map<uint64_t, uint64_t> ranges_;  // offset -> size
};

}  // namespace

MemoryPlan plan_memory(const std::vector<Lifetime>& lifetimes, size_t node_count, bool reuse) {
  MemoryPlan plan;
  plan.offsets.resize(lifetimes.size());
  std::vector<std::vector<size_t>> written(node_count), last_read(node_count);
  for (size_t v = 0; v < lifetimes.size(); ++v) {
    written[lifetimes[v].first].push_back(v);
    last_read[lifetimes[v].last].push_back(v);
  }
  FreeRanges free_ranges;
  uint64_t alive = 0;
  for (size_t node = 0; node < node_count; ++node) {
    // The largest first: they have the fewest ranges to choose from.
    std::sort(written[node].begin(), written[node].end(),
              [&](size_t a, size_t b) { return lifetimes[a].bytes > lifetimes[b].bytes; });
    for (size_t v : written[node]) {
      const uint64_t bytes = room(lifetimes[v].bytes);
      plan.offsets[v] = reuse ? free_ranges.take(bytes, plan.size) : plan.size;
      if (!reuse) plan.size += bytes;
      alive += bytes;
    }
    plan.lower_bound = std::max(plan.lower_bound, alive);
    // Freed after the node's outputs were placed: an output never shares its inputs' room.
    for (size_t v : last_read[node]) {
      const uint64_t bytes = room(lifetimes[v].bytes);
      if (reuse) free_ranges.give_back(plan.offsets[v], bytes);
      alive -= bytes;
    }
  }
  return plan;
}

}  // namespace phx::graph
