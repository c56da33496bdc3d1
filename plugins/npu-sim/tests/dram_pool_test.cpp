// The DRAM (plugin_common::MemoryPool with the DRAM's options): size classes, the
// capacity and the limit, and what buffer reuse saves.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dram.h"

namespace phx::npu_sim {
namespace {

using plugin_common::MemoryBlock;
using plugin_common::MemoryPool;

TEST(DramPool, SizeClassesWasteUnderAQuarter) {
  EXPECT_EQ(MemoryPool::size_class(1), 256u);
  EXPECT_EQ(MemoryPool::size_class(256), 256u);
  EXPECT_EQ(MemoryPool::size_class(257), 320u);  // 256 + 256 / 4
  EXPECT_EQ(MemoryPool::size_class(1000), 1024u);
  EXPECT_EQ(MemoryPool::size_class(4096), 4096u);
  EXPECT_EQ(MemoryPool::size_class(5000), 5120u);
  for (uint64_t size = 257; size < 100000; size += 37) {
    const uint64_t c = MemoryPool::size_class(size);
    EXPECT_GE(c, size);
    EXPECT_LT(c - size, size / 4 + 1) << size;
    EXPECT_EQ(c % 64, 0u) << size;  // every class keeps the 64-byte alignment
  }
}

TEST(DramPool, CapacityAndLimitAreEnforced) {
  MemoryPool pool(0, 4096, dram_options(false));
  std::string error;
  MemoryBlock* a = pool.allocate(3000, error);
  ASSERT_NE(a, nullptr) << error;
  EXPECT_EQ(a->counted_bytes, 3008u);  // 64-byte aligned
  EXPECT_EQ(pool.allocate(2000, error), nullptr);
  EXPECT_NE(error.find("requested 2000 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("3008 bytes in use"), std::string::npos) << error;
  EXPECT_NE(error.find("capacity 4096 bytes"), std::string::npos) << error;
  pool.free(a);
  EXPECT_EQ(pool.stats().bytes_cached, 0u);  // without reuse nothing is kept

  pool.set_limit(1024);
  EXPECT_EQ(pool.allocate(2000, error), nullptr);
  EXPECT_NE(error.find("limit 1024 bytes"), std::string::npos) << error;
  pool.set_limit(0);
  EXPECT_EQ(pool.stats().limit_bytes, 4096u);
  MemoryBlock* b = pool.allocate(4096, error);
  ASSERT_NE(b, nullptr) << error;
  const phx_memory_stats s = pool.stats();
  EXPECT_EQ(s.bytes_in_use, 4096u);
  EXPECT_EQ(s.peak_bytes_in_use, 4096u);
  EXPECT_EQ(s.allocation_count, 1u);
  pool.free(b);
}

// A model's steps allocate the same sizes again and again.
MemoryPool::ReuseStats run_steps(MemoryPool& pool, int steps) {
  std::string error;
  for (int step = 0; step < steps; ++step) {
    std::vector<MemoryBlock*> live;
    for (uint64_t size : {1000u, 40000u, 1000u, 250000u})
      live.push_back(pool.allocate(size, error));
    for (MemoryBlock* b : live) {
      EXPECT_NE(b, nullptr) << error;
      if (b != nullptr) pool.free(b);
    }
  }
  return pool.reuse_stats();
}

TEST(DramPool, ReuseServesRepeatedAllocationsFromThePools) {
  MemoryPool plain(0, uint64_t{1} << 30, dram_options(false));
  MemoryPool reusing(0, uint64_t{1} << 30, dram_options(true));
  const MemoryPool::ReuseStats without = run_steps(plain, 10);
  const MemoryPool::ReuseStats with = run_steps(reusing, 10);
  EXPECT_EQ(without.host_allocations, 40u);
  EXPECT_EQ(without.buffers_reused, 0u);
  EXPECT_EQ(with.host_allocations, 4u);  // the first step's
  EXPECT_EQ(with.buffers_reused, 36u);
  // Classes: 1000 -> 1024, 40000 -> 40960, 250000 -> 262144; nine steps of them.
  EXPECT_EQ(with.bytes_reused, 9u * (1024 + 40960 + 1024 + 262144));
  EXPECT_EQ(reusing.stats().bytes_cached, 1024u + 40960 + 1024 + 262144);
  EXPECT_EQ(plain.stats().bytes_cached, 0u);
  reusing.release_cached();
  EXPECT_EQ(reusing.stats().bytes_cached, 0u);
}

TEST(DramPool, KeptBuffersAreEvictedWhenTheirRoomIsNeeded) {
  MemoryPool pool(0, 8192, dram_options(true));
  std::string error;
  MemoryBlock* a = pool.allocate(5000, error);  // class 5120
  ASSERT_NE(a, nullptr);
  pool.free(a);
  EXPECT_EQ(pool.stats().bytes_cached, 5120u);
  MemoryBlock* b = pool.allocate(4000, error);  // class 4096: 5120 + 4096 > 8192
  ASSERT_NE(b, nullptr) << error;
  EXPECT_EQ(pool.reuse_stats().evictions, 1u);
  EXPECT_EQ(pool.stats().bytes_cached, 0u);
  pool.free(b);
}

}  // namespace
}  // namespace phx::npu_sim
