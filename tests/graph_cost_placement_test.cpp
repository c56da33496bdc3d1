// PHX_PLACEMENT_COST against the test plugin's GRAPHS build, whose graph_estimate gives
// every add node PHX_TEST_GRAPH_ESTIMATE_NS: priced at a second per add it loses every
// node to the CPU device (whatever the copies cost, which are timed in microseconds),
// priced at a nanosecond it keeps them; the first-device policy ignores prices. Which
// device ran each node is read back with phx_executable_describe_node.
#include "native_graph_fixture.h"

namespace {

using phx_test::NativeGraph;

class CostPlacement : public NativeGraph {
 protected:
  phx_executable compile_with(phx_placement_policy policy, uint32_t flags = 0) {
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = native_;
    options.other_devices = &cpu_;
    options.other_device_count = 1;
    options.placement = policy;
    options.flags = flags;
    phx_executable exe = nullptr;
    EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_OK)
        << phx_last_error();
    return exe;
  }
  std::vector<size_t> node_devices(phx_executable exe) {
    std::vector<size_t> devices;
    phx_executable_node_info info = PHX_EXECUTABLE_NODE_INFO_INIT;
    for (size_t n = 0; phx_executable_describe_node(exe, n, &info) == PHX_STATUS_OK; ++n)
      devices.push_back(info.device);
    return devices;
  }
  void SetUp() override {
    NativeGraph::SetUp();
    graph_ = three_adds();
  }
  void TearDown() override {
    phx_graph_destroy(graph_);
    NativeGraph::TearDown();
  }

  phx_graph graph_ = nullptr;
};

TEST_F(CostPlacement, AnExpensiveDeviceLosesItsNodesToACheaperOne) {
  setenv("PHX_TEST_GRAPH_ESTIMATE_NS", "1000000000", 1);
  phx_executable exe = compile_with(PHX_PLACEMENT_COST);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(node_devices(exe), (std::vector<size_t>{cpu_, cpu_, cpu_}));
  EXPECT_EQ(describe(exe).copies_per_run, 2u);  // x to the CPU device, y back
  phx_executable_node_info info = PHX_EXECUTABLE_NODE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe_node(exe, 0, &info), PHX_STATUS_OK);
  EXPECT_GT(info.predicted_time_ns, 0u);  // the CPU device's own estimate
  EXPECT_LT(info.predicted_time_ns, 1000000000u);
  EXPECT_EQ(run(exe, native_, {1, 2, 3, 4}, 4), (std::vector<float>{22, 44, 66, 88}));
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
}

TEST_F(CostPlacement, ACheapDeviceKeepsItsNodes) {
  setenv("PHX_TEST_GRAPH_ESTIMATE_NS", "1", 1);
  phx_executable exe = compile_with(PHX_PLACEMENT_COST);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(node_devices(exe), (std::vector<size_t>{native_, native_, native_}));
  EXPECT_EQ(describe(exe).copies_per_run, 0u);
  phx_executable_node_info info = PHX_EXECUTABLE_NODE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe_node(exe, 2, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.predicted_time_ns, 1u);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
}

TEST_F(CostPlacement, TheFirstDevicePolicyIgnoresPrices) {
  setenv("PHX_TEST_GRAPH_ESTIMATE_NS", "1000000000", 1);
  phx_executable exe = compile_with(PHX_PLACEMENT_FIRST);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(node_devices(exe), (std::vector<size_t>{native_, native_, native_}));
  phx_executable_node_info info = PHX_EXECUTABLE_NODE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe_node(exe, 0, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.predicted_time_ns, 0u);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
}

TEST_F(CostPlacement, DeterministicCompilesPlaceAlike) {
  setenv("PHX_TEST_GRAPH_ESTIMATE_NS", "3000", 1);
  std::vector<size_t> first;
  for (int compile = 0; compile < 3; ++compile) {
    phx_executable exe = compile_with(PHX_PLACEMENT_COST, PHX_COMPILE_DETERMINISTIC);
    ASSERT_NE(exe, nullptr);
    if (compile == 0) first = node_devices(exe);
    EXPECT_EQ(node_devices(exe), first);
    EXPECT_EQ(run(exe, native_, {1, 2, 3, 4}, 4), (std::vector<float>{22, 44, 66, 88}));
    EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  }
}

TEST_F(CostPlacement, UnknownPoliciesAndFlagsAreRefused) {
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = native_;
  int policy = 7;
  std::memcpy(&options.placement, &policy, sizeof policy);
  phx_executable exe = nullptr;
  EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("unknown placement policy 7"), std::string::npos);
  options.placement = PHX_PLACEMENT_FIRST;
  options.flags = 0x100;
  EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(exe, nullptr);
}

}  // namespace
