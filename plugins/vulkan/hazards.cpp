#include "hazards.h"

#include "memory_pool.h"

namespace phx::vulkan {
namespace {

bool overlap(const ByteRange& a, const ByteRange& b) {
  return a.block == b.block && a.begin < b.end && b.begin < a.end;
}

bool overlaps_any(const std::vector<ByteRange>& ranges, const std::vector<ByteRange>& noted) {
  for (const ByteRange& r : ranges)
    for (const ByteRange& n : noted)
      if (overlap(r, n)) return true;
  return false;
}

void add_tensor(std::vector<ByteRange>& ranges, const phx_plugin_tensor& t) {
  if (t.buffer == nullptr) return;
  const uint64_t bytes = phx_plugin_element_count(t.rank, t.shape) * phx_plugin_dtype_size(t.dtype);
  if (bytes == 0) return;
  const Allocation& a = *static_cast<const Allocation*>(t.buffer);
  const uint64_t begin = a.offset + t.offset;
  ranges.push_back({a.block, begin, begin + bytes});
}

}  // namespace

Access op_access(const phx_plugin_op& op) {
  Access access;
  for (size_t i = 0; i < op.input_count; ++i) add_tensor(access.reads, op.inputs[i]);
  for (size_t i = 0; i < op.output_count; ++i) add_tensor(access.writes, op.outputs[i]);
  return access;
}

bool overlaps_shifted(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a)
    for (const ByteRange& y : b)
      if (overlap(x, y) && x.begin != y.begin) return true;
  return false;
}

bool HazardTracker::must_wait(const Access& access) const {
  return wait_for_everything_ || overlaps_any(access.reads, writes_) ||
         overlaps_any(access.writes, writes_) || overlaps_any(access.writes, reads_);
}

void HazardTracker::note(const Access& access) {
  reads_.insert(reads_.end(), access.reads.begin(), access.reads.end());
  writes_.insert(writes_.end(), access.writes.begin(), access.writes.end());
}

void HazardTracker::note_write(const ByteRange& range) { writes_.push_back(range); }

void HazardTracker::barrier_recorded() {
  reads_.clear();
  writes_.clear();
  wait_for_everything_ = false;
}

}  // namespace phx::vulkan
