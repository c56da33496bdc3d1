// Which ops must wait for earlier ones (hazards.h), without a device: ranges of two blocks
// written and read by ops as the recorders note them.
#include "hazards.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "memory_pool.h"

namespace phx::vulkan {
namespace {

class Hazards : public ::testing::Test {
 protected:
  // A 4-float tensor at byte offset of block b.
  phx_plugin_tensor tensor(int b, uint64_t offset) {
    allocations_.push_back(std::make_unique<Allocation>());
    allocations_.back()->block = &blocks_[b];
    allocations_.back()->offset = offset;
    phx_plugin_tensor t{};
    t.struct_size = sizeof t;
    t.buffer = allocations_.back().get();
    t.dtype = PHX_DTYPE_F32;
    t.rank = 1;
    for (int64_t& s : t.shape) s = 1;
    t.shape[0] = 4;
    return t;
  }
  // x -> y as one op's access.
  Access op(const phx_plugin_tensor& x, const phx_plugin_tensor& y) {
    phx_plugin_op o{};
    o.struct_size = sizeof o;
    o.op = PHX_OP_RELU;
    o.inputs = &x;
    o.input_count = 1;
    o.outputs = &y;
    o.output_count = 1;
    return op_access(o);
  }
  // A tracker past its first barrier, with x -> y noted.
  HazardTracker after(const Access& access) {
    HazardTracker t;
    t.barrier_recorded();
    t.note(access);
    return t;
  }

  MemoryBlock blocks_[2];
  std::vector<std::unique_ptr<Allocation>> allocations_;
};

TEST_F(Hazards, TheFirstOpWaitsForEverything) {
  HazardTracker t;
  EXPECT_TRUE(t.must_wait(op(tensor(0, 0), tensor(0, 16))));
  t.barrier_recorded();
  EXPECT_FALSE(t.must_wait(op(tensor(0, 0), tensor(0, 16))));
  t.wait_for_everything();
  EXPECT_TRUE(t.must_wait(op(tensor(1, 0), tensor(1, 16))));
}

TEST_F(Hazards, IndependentOpsShareNoBarrier) {
  const HazardTracker t = after(op(tensor(0, 0), tensor(0, 16)));
  EXPECT_FALSE(t.must_wait(op(tensor(0, 0), tensor(0, 32))));   // the same input, read again
  EXPECT_FALSE(t.must_wait(op(tensor(0, 48), tensor(0, 64))));  // other bytes, adjacent
  EXPECT_FALSE(t.must_wait(op(tensor(1, 16), tensor(1, 0))));   // the same bytes of another block
}

TEST_F(Hazards, ReadAfterWriteWaits) {
  EXPECT_TRUE(after(op(tensor(0, 0), tensor(0, 16))).must_wait(op(tensor(0, 16), tensor(0, 32))));
  // A partial overlap counts: the last float of the earlier output.
  EXPECT_TRUE(after(op(tensor(0, 0), tensor(0, 16))).must_wait(op(tensor(0, 28), tensor(0, 64))));
}

TEST_F(Hazards, WriteAfterWriteWaits) {
  EXPECT_TRUE(after(op(tensor(0, 0), tensor(0, 16))).must_wait(op(tensor(0, 48), tensor(0, 16))));
}

TEST_F(Hazards, WriteAfterReadWaits) {
  EXPECT_TRUE(after(op(tensor(0, 0), tensor(0, 16))).must_wait(op(tensor(0, 48), tensor(0, 0))));
}

TEST_F(Hazards, AWrittenScratchRangeCountsAsWritten) {
  HazardTracker t = after(op(tensor(0, 0), tensor(0, 16)));
  t.note_write({&blocks_[1], 100, 200});
  EXPECT_TRUE(t.must_wait(op(tensor(1, 192), tensor(0, 64))));
  EXPECT_FALSE(t.must_wait(op(tensor(1, 200), tensor(0, 64))));
}

TEST_F(Hazards, ABarrierOrdersEverythingNotedBeforeIt) {
  HazardTracker t = after(op(tensor(0, 0), tensor(0, 16)));
  t.barrier_recorded();
  EXPECT_FALSE(t.must_wait(op(tensor(0, 16), tensor(0, 0))));
}

TEST_F(Hazards, AbsentAndEmptyTensorsTouchNothing) {
  phx_plugin_tensor empty = tensor(0, 16);
  empty.shape[0] = 0;
  phx_plugin_tensor absent{};
  absent.struct_size = sizeof absent;
  const Access a = op(absent, empty);
  EXPECT_TRUE(a.reads.empty());
  EXPECT_TRUE(a.writes.empty());
  EXPECT_FALSE(after(op(tensor(0, 0), tensor(0, 16))).must_wait(a));
}

// A fused chain whose output shares memory with an operand runs fused only when the two
// start at the same byte (each element read before it is written).
TEST_F(Hazards, ShiftedOverlapsAreToldFromExactOnes) {
  const std::vector<ByteRange> y = {{&blocks_[0], 16, 32}};
  EXPECT_FALSE(overlaps_shifted(y, {{&blocks_[0], 16, 32}}));
  EXPECT_FALSE(overlaps_shifted(y, {{&blocks_[0], 32, 48}, {&blocks_[1], 20, 36}}));
  EXPECT_TRUE(overlaps_shifted(y, {{&blocks_[0], 0, 32}}));
  EXPECT_TRUE(overlaps_shifted(y, {{&blocks_[1], 0, 4}, {&blocks_[0], 28, 44}}));
}

}  // namespace
}  // namespace phx::vulkan
