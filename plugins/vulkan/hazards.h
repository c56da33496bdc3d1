// Which ops of one command stream must wait for earlier ones. A barrier between two
// dispatches costs about 30 us on lavapipe (docs/vulkan.md), more than a small dispatch,
// so a recorder puts one before an op only when the op touches memory that an op since
// the last barrier touched in a way that conflicts: it reads or writes bytes an earlier
// op wrote (read after write, write after write), or writes bytes an earlier op read
// (write after read). Memory is told apart by its block (one VkBuffer each) and byte
// range; ranges are whole tensors, as an op's bindings are not known before it records.
#pragma once

#include <phynexus/plugin.h>

#include <cstdint>
#include <vector>

namespace phx::vulkan {

struct MemoryBlock;

// Bytes [begin, end) of a block.
struct ByteRange {
  const MemoryBlock* block = nullptr;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// What an op reads and writes.
struct Access {
  std::vector<ByteRange> reads;
  std::vector<ByteRange> writes;
};

// An op's inputs as reads and its outputs as writes (tensor.buffer is an Allocation);
// empty tensors and absent optional inputs touch nothing.
Access op_access(const phx_plugin_op& op);

// Whether a range of a overlaps a range of b without starting at the same byte.
bool overlaps_shifted(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b);

// The accesses recorded since the last barrier of one command stream.
class HazardTracker {
 public:
  // Whether an op with this access must be preceded by a barrier: it conflicts with an
  // access noted since the last barrier, or wait_for_everything() was called since.
  bool must_wait(const Access& access) const;
  // The op was recorded (after a barrier if must_wait said so).
  void note(const Access& access);
  void note_write(const ByteRange& range);
  // A barrier was recorded: everything noted so far is ordered before what follows.
  void barrier_recorded();
  // The next op waits whatever it touches: for work this tracker never saw (transfers,
  // earlier submissions, other streams, another recording in the same submission).
  void wait_for_everything() { wait_for_everything_ = true; }

 private:
  std::vector<ByteRange> reads_, writes_;
  bool wait_for_everything_ = true;
};

}  // namespace phx::vulkan
