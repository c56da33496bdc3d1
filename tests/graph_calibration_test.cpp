// Calibration (phx_compile_options.calibration_inputs) against the test plugin's GRAPHS
// build, which claims f32 sub nodes when it is given ranges and reports them computed in
// i16, as a quantizing device would: the host runs the graph in float on the samples, hands
// each value's range to the part, places the claimed node, and measures the executable
// against float. The values are small integers, exact in f32, so ranges and results are
// compared for equality, and the calibration error is exactly what the fault injects.
#include "native_graph_fixture.h"

namespace {

using phx_test::NativeGraph;

class GraphCalibration : public NativeGraph {
 protected:
  void SetUp() override {
    NativeGraph::SetUp();
    ASSERT_EQ(phx_graph_create(context_, &graph_), PHX_STATUS_OK);
    const phx_value x = input(graph_, 4);
    const std::vector<float> c = {1, 2, 3, 4};
    const int64_t size = 4;
    phx_value constant = 0;
    ASSERT_EQ(phx_graph_add_constant(graph_, "c", PHX_DTYPE_F32, 1, &size, c.data(),
                                     c.size() * sizeof(float), &constant),
              PHX_STATUS_OK);
    const phx_value s = node(graph_, PHX_OP_SUB, {x, constant}, "s");
    ASSERT_EQ(phx_graph_add_output(graph_, node(graph_, PHX_OP_ADD, {s, x}, "y"), "y"),
              PHX_STATUS_OK);
    samples_ = {tensor(cpu_, {1, 2, 3, 4}), tensor(cpu_, {-2, 0, 5, 8})};
  }
  void TearDown() override {
    for (phx_tensor t : samples_) phx_tensor_destroy(t);
    phx_graph_destroy(graph_);
    NativeGraph::TearDown();
  }

  phx_status compile_calibrated(const phx_tensor* samples, size_t count, phx_executable* exe) {
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = native_;
    options.calibration_inputs = samples;
    options.calibration_sample_count = count;
    return phx_graph_compile(context_, graph_, &options, exe);
  }

  phx_graph graph_ = nullptr;
  std::vector<phx_tensor> samples_;
};

TEST_F(GraphCalibration, WithoutSamplesTheDeviceClaimsNothing) {
  phx_executable exe = nullptr;
  EXPECT_EQ(compile_calibrated(nullptr, 0, &exe), PHX_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(phx_last_error()).find("node 's'"), std::string::npos);
  EXPECT_EQ(traced("graph_claim 0"), 1u);
}

TEST_F(GraphCalibration, ClaimedNodesRunInThePartWithTheRangesOfTheirValues) {
  phx_executable exe = nullptr;
  ASSERT_EQ(compile_calibrated(samples_.data(), samples_.size(), &exe), PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_EQ(traced("graph_claim 1"), 1u);
  // x in [-2, 8], c in [1, 4], s = x - c in [-3, 4], y = s + x in [-5, 12].
  EXPECT_EQ(traced("graph_compile ICiO ranges -2:8 1:4 -3:4 -5:12"), 1u) << trace().back();
  const phx_executable_info info = describe(exe);
  EXPECT_EQ(info.native_nodes, 2u);
  EXPECT_EQ(info.quantized_nodes, 1u);
  EXPECT_EQ(info.calibration_error, 0.0);
  EXPECT_EQ(info.run_count, 0u);  // calibration's own runs are not the program's

  phx_executable_node_info node_info = PHX_EXECUTABLE_NODE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe_node(exe, 0, &node_info), PHX_STATUS_OK);
  EXPECT_STREQ(node_info.name, "s");
  EXPECT_EQ(node_info.op, PHX_OP_SUB);
  EXPECT_EQ(node_info.device, native_);
  EXPECT_EQ(node_info.compute_dtype, PHX_DTYPE_I16);
  EXPECT_EQ(node_info.predicted_time_ns, 0u);  // placed by PHX_PLACEMENT_FIRST
  ASSERT_EQ(phx_executable_describe_node(exe, 1, &node_info), PHX_STATUS_OK);
  EXPECT_EQ(node_info.compute_dtype, PHX_DTYPE_F32);
  EXPECT_EQ(phx_executable_describe_node(exe, 2, &node_info), PHX_STATUS_NOT_FOUND);

  EXPECT_EQ(run(exe, native_, {10, 20, 30, 40}, 4), (std::vector<float>{19, 38, 57, 76}));
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
}

TEST_F(GraphCalibration, TheErrorAgainstFloatIsMeasuredOnTheSamples) {
  setenv("PHX_TEST_GRAPH_RUN", "off_by_one", 1);
  phx_executable exe = nullptr;
  ASSERT_EQ(compile_calibrated(samples_.data(), samples_.size(), &exe), PHX_STATUS_OK)
      << phx_last_error();
  // y is 1 too large everywhere: 1 / max|y| is 1/4 on the first sample, 1/12 on the
  // second; the largest is reported.
  EXPECT_EQ(describe(exe).calibration_error, 0.25);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
}

TEST_F(GraphCalibration, BadSamplesAreRefusedAndNothingIsMade) {
  phx_executable exe = nullptr;
  EXPECT_EQ(compile_calibrated(nullptr, 1, &exe), PHX_STATUS_INVALID_ARGUMENT);
  const phx_tensor null_sample[1] = {nullptr};
  EXPECT_EQ(compile_calibrated(null_sample, 1, &exe), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("calibration sample 0, input 0 is null"),
            std::string::npos);
  const phx_tensor wrong_size[1] = {tensor(cpu_, {1, 2, 3})};
  EXPECT_EQ(compile_calibrated(wrong_size, 1, &exe), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("of another shape"), std::string::npos);
  const int64_t size = 4;
  phx_tensor integers = nullptr;
  ASSERT_EQ(phx_tensor_create(context_, cpu_, PHX_DTYPE_I32, 1, &size, &integers), PHX_STATUS_OK);
  EXPECT_EQ(compile_calibrated(&integers, 1, &exe), PHX_STATUS_INVALID_ARGUMENT);
  phx_tensor destroyed = tensor(cpu_, {1, 2, 3, 4});
  ASSERT_EQ(phx_tensor_destroy(destroyed), PHX_STATUS_OK);
  EXPECT_EQ(compile_calibrated(&destroyed, 1, &exe), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("not a live tensor"), std::string::npos);
  EXPECT_EQ(exe, nullptr);
  for (phx_tensor t : {wrong_size[0], integers}) phx_tensor_destroy(t);
}

TEST_F(GraphCalibration, ASavedCalibratedExecutableKeepsItsRangesAndClaims) {
  phx_executable exe = nullptr;
  ASSERT_EQ(compile_calibrated(samples_.data(), samples_.size(), &exe), PHX_STATUS_OK)
      << phx_last_error();
  size_t size = 0;
  ASSERT_EQ(phx_executable_save(exe, nullptr, 0, &size), PHX_STATUS_OK);
  std::vector<unsigned char> bytes(size);
  ASSERT_EQ(phx_executable_save(exe, bytes.data(), size, &size), PHX_STATUS_OK);
  ASSERT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  phx_executable loaded = nullptr;
  ASSERT_EQ(phx_executable_load(context_, bytes.data(), size, nullptr, &loaded), PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_EQ(traced("graph_compile ICiO ranges -2:8 1:4 -3:4 -5:12 serialized"), 1u);
  EXPECT_EQ(describe(loaded).quantized_nodes, 1u);
  EXPECT_EQ(run(loaded, native_, {10, 20, 30, 40}, 4), (std::vector<float>{19, 38, 57, 76}));
  EXPECT_EQ(phx_executable_destroy(loaded), PHX_STATUS_OK);
}

}  // namespace
