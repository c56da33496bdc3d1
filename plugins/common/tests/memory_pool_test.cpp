// plugin_common::MemoryPool, the one memory policy of the host-computing plugins, with the
// options each of them uses: a refused allocation changes nothing whichever memory is
// short, and says which; kept blocks are evicted when their room is needed, and a pool
// with a cap keeps no more than it.
#include "memory_pool.h"

#include <gtest/gtest.h>

#include <string>

namespace phx::plugin_common {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
// As the plugins set them: tpu-sim's HBM, npu-sim's DRAM with memory optimization, the
// CPU device's memory.
constexpr MemoryPool::Options kHbm = {"HBM", "aligned", 512, false, true, 0, true};
constexpr MemoryPool::Options kDram = {"DRAM", "counted", 64, true, true, 0, true};
constexpr MemoryPool::Options kCpu = {"memory", "counted", 64, true, true, 64 * kMiB, false};
// No x86-64 or AArch64 host maps this much (user space is 2^47 or 2^48 bytes).
constexpr uint64_t kUnbackable = uint64_t{1} << 49;

struct Snapshot {
  phx_memory_stats stats;
  MemoryPool::ReuseStats reuse;
};

Snapshot snapshot(const MemoryPool& memory) { return {memory.stats(), memory.reuse_stats()}; }

void expect_unchanged(const MemoryPool& memory, const Snapshot& before) {
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

void refused_allocation_changes_nothing(const MemoryPool::Options& options) {
  MemoryPool memory(0, uint64_t{1} << 50, options);
  std::string error;
  MemoryBlock* live = memory.allocate(kMiB, error);
  MemoryBlock* kept = memory.allocate(kMiB, error);
  ASSERT_NE(live, nullptr) << error;
  ASSERT_NE(kept, nullptr) << error;
  memory.free(kept);
  ASSERT_EQ(memory.stats().bytes_cached, kMiB);
  // The limit leaves room for the request only if the kept block were evicted.
  memory.set_limit(kUnbackable + kMiB);
  const Snapshot before = snapshot(memory);

  EXPECT_EQ(memory.allocate(kUnbackable, error), nullptr);
  const std::string host_short = options.simulated
                                     ? "out of host memory backing the simulated "
                                     : std::string("out of ") + options.memory_name + ": the host";
  EXPECT_EQ(error.rfind(host_short, 0), 0u) << error;
  EXPECT_NE(error.find("release_cached"), std::string::npos) << error;
  expect_unchanged(memory, before);

  EXPECT_EQ(memory.allocate(kUnbackable + kMiB, error), nullptr);
  EXPECT_EQ(error.rfind(std::string("out of ") + options.memory_name + ":", 0), 0u) << error;
  EXPECT_EQ(error.find("host"), std::string::npos) << error;
  EXPECT_NE(error.find(std::to_string(kUnbackable + kMiB)), std::string::npos) << error;
  expect_unchanged(memory, before);

  // The kept block survived both: the next request of its size reuses it.
  MemoryBlock* again = memory.allocate(kMiB, error);
  ASSERT_NE(again, nullptr) << error;
  EXPECT_EQ(memory.reuse_stats().buffers_reused, 1u);
  memory.free(again);
  memory.free(live);
}

TEST(MemoryPool, ARefusedAllocationChangesNothingInHbm) {
  refused_allocation_changes_nothing(kHbm);
}

TEST(MemoryPool, ARefusedAllocationChangesNothingWithSizeClasses) {
  refused_allocation_changes_nothing(kDram);
}

TEST(MemoryPool, ARefusedAllocationChangesNothingInTheCpuMemory) {
  refused_allocation_changes_nothing(kCpu);
}

// An allocation that needs the kept blocks' room and that the host can back still
// evicts them, largest first.
TEST(MemoryPool, AnAllocationThatFitsEvictsKeptBlocks) {
  MemoryPool memory(0, 4 * kMiB, kHbm);
  std::string error;
  MemoryBlock* a = memory.allocate(2 * kMiB, error);
  MemoryBlock* b = memory.allocate(kMiB, error);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  memory.free(a);
  memory.free(b);
  MemoryBlock* c = memory.allocate(3 * kMiB, error);
  ASSERT_NE(c, nullptr) << error;
  EXPECT_EQ(memory.reuse_stats().evictions, 1u);  // the 2 MiB block made the room
  EXPECT_EQ(memory.stats().bytes_cached, kMiB);
  memory.free(c);
}

// A pool with a cap keeps at most that much: freeing past it returns the largest kept
// blocks to the host, and what stays is still reused.
TEST(MemoryPool, KeptBlocksStayWithinTheCap) {
  MemoryPool memory(0, uint64_t{1} << 40, kCpu);
  std::string error;
  MemoryBlock* big = memory.allocate(48 * kMiB, error);
  MemoryBlock* middle = memory.allocate(32 * kMiB, error);
  MemoryBlock* small = memory.allocate(kMiB, error);
  ASSERT_NE(big, nullptr) << error;
  ASSERT_NE(middle, nullptr) << error;
  ASSERT_NE(small, nullptr) << error;
  memory.free(small);
  memory.free(middle);
  EXPECT_EQ(memory.stats().bytes_cached, 33 * kMiB);
  memory.free(big);  // 81 MiB kept would pass the 64 MiB cap: the 48 MiB block goes
  EXPECT_EQ(memory.stats().bytes_cached, 33 * kMiB);
  EXPECT_EQ(memory.stats().bytes_in_use, 0u);
  MemoryBlock* again = memory.allocate(32 * kMiB, error);
  ASSERT_NE(again, nullptr) << error;
  EXPECT_EQ(memory.reuse_stats().buffers_reused, 1u);
  EXPECT_EQ(memory.stats().bytes_cached, kMiB);
  memory.free(again);
  memory.release_cached();
  EXPECT_EQ(memory.stats().bytes_cached, 0u);
}

// Without keep_freed (npu-sim with memory optimization off) nothing is kept.
TEST(MemoryPool, WithoutKeepFreedNothingIsKept) {
  MemoryPool memory(0, 16 * kMiB, {"DRAM", "counted", 64, false, false, 0, true});
  std::string error;
  MemoryBlock* block = memory.allocate(1000, error);
  ASSERT_NE(block, nullptr) << error;
  EXPECT_EQ(memory.stats().bytes_in_use, 1024u);  // 1000 aligned to 64
  memory.free(block);
  EXPECT_EQ(memory.stats().bytes_cached, 0u);
  EXPECT_EQ(memory.stats().allocation_count, 0u);
}

}  // namespace
}  // namespace phx::plugin_common
