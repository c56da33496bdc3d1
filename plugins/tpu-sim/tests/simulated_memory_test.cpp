// plugin_common::SimulatedMemory's rule for a refused allocation, with the HBM's options
// and with size classes (the NPU's DRAM): whichever memory is short, the call changes
// nothing, and the message says which one.
#include "simulated_memory.h"

#include <gtest/gtest.h>

#include <string>

#include "hbm.h"

namespace phx::tpu_sim {
namespace {

using plugin_common::SimulatedBlock;
using plugin_common::SimulatedMemory;

constexpr uint64_t kMiB = uint64_t{1} << 20;
// No x86-64 or AArch64 host maps this much (user space is 2^47 or 2^48 bytes).
constexpr uint64_t kUnbackable = uint64_t{1} << 49;

struct Snapshot {
  phx_memory_stats stats;
  SimulatedMemory::ReuseStats reuse;
};

Snapshot snapshot(const SimulatedMemory& memory) { return {memory.stats(), memory.reuse_stats()}; }

void expect_unchanged(const SimulatedMemory& memory, const Snapshot& before) {
  const Snapshot now = snapshot(memory);
  EXPECT_EQ(now.stats.bytes_in_use, before.stats.bytes_in_use);
  EXPECT_EQ(now.stats.peak_bytes_in_use, before.stats.peak_bytes_in_use);
  EXPECT_EQ(now.stats.bytes_cached, before.stats.bytes_cached);
  EXPECT_EQ(now.stats.limit_bytes, before.stats.limit_bytes);
  EXPECT_EQ(now.stats.allocation_count, before.stats.allocation_count);
  EXPECT_EQ(now.reuse.host_allocations, before.reuse.host_allocations);
  EXPECT_EQ(now.reuse.buffers_reused, before.reuse.buffers_reused);
  EXPECT_EQ(now.reuse.evictions, before.reuse.evictions);
}

void refused_allocation_changes_nothing(const SimulatedMemory::Options& options) {
  SimulatedMemory memory(0, uint64_t{1} << 50, options);
  std::string error;
  SimulatedBlock* live = memory.allocate(kMiB, error);
  SimulatedBlock* kept = memory.allocate(kMiB, error);
  ASSERT_NE(live, nullptr) << error;
  ASSERT_NE(kept, nullptr) << error;
  memory.free(kept);
  ASSERT_EQ(memory.stats().bytes_cached, kMiB);
  // The limit leaves room for the request only if the kept block were evicted.
  memory.set_limit(kUnbackable + kMiB);
  const Snapshot before = snapshot(memory);

  EXPECT_EQ(memory.allocate(kUnbackable, error), nullptr);
  EXPECT_NE(error.find("out of host memory backing the simulated"), std::string::npos) << error;
  EXPECT_NE(error.find("release_cached"), std::string::npos) << error;
  expect_unchanged(memory, before);

  EXPECT_EQ(memory.allocate(kUnbackable + kMiB, error), nullptr);
  EXPECT_EQ(error.rfind(std::string("out of ") + options.memory_name + ":", 0), 0u) << error;
  EXPECT_EQ(error.find("host"), std::string::npos) << error;
  expect_unchanged(memory, before);

  // The kept block survived both: the next request of its size reuses it.
  SimulatedBlock* again = memory.allocate(kMiB, error);
  ASSERT_NE(again, nullptr) << error;
  EXPECT_EQ(memory.reuse_stats().buffers_reused, 1u);
  memory.free(again);
  memory.free(live);
}

TEST(SimulatedMemory, ARefusedAllocationChangesNothingInHbm) {
  refused_allocation_changes_nothing(kHbmOptions);
}

TEST(SimulatedMemory, ARefusedAllocationChangesNothingWithSizeClasses) {
  refused_allocation_changes_nothing({"DRAM", "counted", 64, true, true});
}

// An allocation that needs the kept blocks' room and that the host can back still
// evicts them, largest first.
TEST(SimulatedMemory, AnAllocationThatFitsEvictsKeptBlocks) {
  SimulatedMemory memory(0, 4 * kMiB, kHbmOptions);
  std::string error;
  SimulatedBlock* a = memory.allocate(2 * kMiB, error);
  SimulatedBlock* b = memory.allocate(kMiB, error);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  memory.free(a);
  memory.free(b);
  SimulatedBlock* c = memory.allocate(3 * kMiB, error);
  ASSERT_NE(c, nullptr) << error;
  EXPECT_EQ(memory.reuse_stats().evictions, 1u);  // the 2 MiB block made the room
  EXPECT_EQ(memory.stats().bytes_cached, kMiB);
  memory.free(c);
}

}  // namespace
}  // namespace phx::tpu_sim
