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

// A device without graph_estimate (the test plugin's plain build) is priced by the host's
// roofline, which must read a quantized convolution's weight where it is (input 1), also
// when the optional inputs after it are left out.
TEST_F(CostPlacement, TheRooflinePricesAQuantizedConvolutionWithoutItsOptionalInputs) {
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
  const int64_t x_shape[4] = {1, 1, 3, 3}, w_shape[4] = {1, 1, 1, 1}, one = 1;
  phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
  desc.dtype = PHX_DTYPE_I8;
  desc.rank = 4;
  desc.shape = x_shape;
  phx_value x = 0, w = 0, a_scale = 0, b_scale = 0;
  ASSERT_EQ(phx_graph_add_input(graph, &desc, &x), PHX_STATUS_OK);
  const int8_t weight = 2;
  const float scale = 0.5f;
  ASSERT_EQ(phx_graph_add_constant(graph, "w", PHX_DTYPE_I8, 4, w_shape, &weight, 1, &w),
            PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_add_constant(graph, "a_scale", PHX_DTYPE_F32, 1, &one, &scale, 4, &a_scale),
            PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_add_constant(graph, "b_scale", PHX_DTYPE_F32, 1, &one, &scale, 4, &b_scale),
            PHX_STATUS_OK);
  const phx_value inputs[5] = {x, w, a_scale, PHX_VALUE_NONE, b_scale};
  const phx_dtype f32 = PHX_DTYPE_F32;
  phx_graph_node_desc node = PHX_GRAPH_NODE_DESC_INIT;
  node.op = PHX_OP_QCONV2D;
  node.inputs = inputs;
  node.input_count = 5;
  node.output_dtypes = &f32;
  node.output_count = 1;
  phx_value y = 0;
  ASSERT_EQ(phx_graph_add_node(graph, &node, &y), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_graph_add_output(graph, y, "y"), PHX_STATUS_OK);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = cpu_;
  options.other_devices = &by_node_;
  options.other_device_count = 1;
  options.placement = PHX_PLACEMENT_COST;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, graph, &options, &exe), PHX_STATUS_OK) << phx_last_error();
  phx_executable_node_info info = PHX_EXECUTABLE_NODE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe_node(exe, 0, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.device, cpu_);  // the plain test plugin does not run it
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
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
