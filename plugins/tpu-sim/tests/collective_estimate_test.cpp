// collective_estimate called through the plugin's table (direct_plugin.h), as the host's
// communicator calls it: a pod configured by PHX_TPU_SIM, the model's time rounded up to
// whole ns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "direct_plugin.h"

namespace {

using phx_test::DirectPlugin;

// The plugin started with settings as PHX_TPU_SIM, whatever the developer's own
// configuration says.
std::unique_ptr<DirectPlugin> start(const char* settings) {
  setenv("PHX_TPU_SIM", settings, 1);
  unsetenv("PHX_TPU_SIM_CONFIG");
  setenv("XDG_CONFIG_HOME", "/nonexistent/phx-tpu-sim-collective-test", 1);
  return std::make_unique<DirectPlugin>(PHX_TPU_SIM_PLUGIN);
}

// The entry's answer; its status must be OK.
uint64_t estimate(DirectPlugin& p, phx_plugin_collective collective,
                  const std::vector<uint32_t>& devices, uint64_t bytes) {
  uint64_t time_ns = 0;
  EXPECT_EQ(p.api().collective_estimate(p.plugin(), collective, devices.data(), devices.size(),
                                        bytes, &time_ns),
            PHX_STATUS_OK)
      << p.take_error();
  return time_ns;
}

TEST(TpuSimCollectiveEstimate, ARingOfEightIsThePublishedFormula) {
  auto p = start("generation=v5p,chips=8,topology=8x1x1");
  ASSERT_TRUE(p->started());
  ASSERT_NE(p->api().collective_estimate, nullptr);
  // 2 (n - 1) / n * bytes / (2 x 100 GB/s, both directions of the ring) + 2 phases x 4
  // steps x 1 us, rounded up to whole ns.
  const uint64_t bytes = 1 << 30;
  const double want = 2.0 * 7 / 8 * double(bytes) / 200.0 + 2 * 4 * 1000.0;
  EXPECT_EQ(estimate(*p, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, {0, 1, 2, 3, 4, 5, 6, 7}, bytes),
            uint64_t(std::ceil(want)));
}

TEST(TpuSimCollectiveEstimate, EveryCollectiveOfTheCubeHasATime) {
  auto p = start("generation=v5p,chips=8,ici_link_gbps=50,ici_latency_ns=500");
  ASSERT_TRUE(p->started());
  const std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
  const uint64_t bytes = 3 << 20;
  // The default topology, 2x2x2: (7 V / 24 W + 3 steps x latency) per phase.
  const double phase = 7.0 * bytes / (24 * 50.0) + 3 * 500.0;
  EXPECT_EQ(estimate(*p, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, all, bytes),
            uint64_t(std::ceil(2 * phase)));
  EXPECT_EQ(estimate(*p, PHX_PLUGIN_COLLECTIVE_BROADCAST, all, bytes),
            uint64_t(std::ceil(2 * phase)));
  EXPECT_EQ(estimate(*p, PHX_PLUGIN_COLLECTIVE_ALL_GATHER, all, bytes), uint64_t(std::ceil(phase)));
  EXPECT_EQ(estimate(*p, PHX_PLUGIN_COLLECTIVE_REDUCE_SCATTER, all, bytes),
            uint64_t(std::ceil(phase)));
  // Neighbours, then opposite corners: one hop against three.
  EXPECT_EQ(estimate(*p, PHX_PLUGIN_COLLECTIVE_SEND, {0, 1}, bytes),
            uint64_t(std::ceil(500.0 + bytes / 50.0)));
  EXPECT_EQ(estimate(*p, PHX_PLUGIN_COLLECTIVE_SEND, {0, 7}, bytes),
            uint64_t(std::ceil(3 * 500.0 + bytes / 50.0)));

  uint64_t time_ns = 0;
  EXPECT_EQ(p->api().collective_estimate(p->plugin(), static_cast<phx_plugin_collective>(99),
                                         all.data(), all.size(), bytes, &time_ns),
            PHX_STATUS_UNSUPPORTED);
  EXPECT_NE(p->take_error().find("99"), std::string::npos);
}

}  // namespace
