// Executables whose nodes span devices (phx_compile_options.other_devices): each node on
// the first device that runs it, values copied between devices. The oracle is the same
// ops run eagerly, each on the device the executable placed it on, with the same copies:
// the results must be equal bit for bit, since the same kernels see the same bytes.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace {

class GraphPlacement : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = PHX_TEST_DEFAULT_PLUGIN_DIR;
    const std::string files[] = {dir + "/phx_cpu.so", dir + "/phx_tpu_sim.so",
                                 dir + "/phx_npu_sim.so"};
    const char* paths[] = {files[0].c_str(), files[1].c_str(), files[2].c_str()};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 3;
    options.use_default_search_path = 0;
    options.log_callback = [](void* user_data, phx_log_level level, const char* message) {
      if (level == PHX_LOG_WARN)
        static_cast<std::vector<std::string>*>(user_data)->push_back(message);
    };
    options.log_user_data = &warnings_;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    ASSERT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK);
    for (size_t d = 0; d < count; ++d) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      ASSERT_EQ(phx_device_get(context_, d, &info), PHX_STATUS_OK);
      if (std::strcmp(info.plugin, "cpu") == 0) cpu_ = d;
      if (std::strcmp(info.plugin, "tpu-sim") == 0) tpu_ = d;
      if (std::strcmp(info.plugin, "npu-sim") == 0) npu_ = d;
    }
    ASSERT_NE(cpu_, SIZE_MAX);
    ASSERT_NE(tpu_, SIZE_MAX);
    ASSERT_NE(npu_, SIZE_MAX);
  }
  void TearDown() override { EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK); }

  phx_tensor tensor(size_t device, const std::vector<int64_t>& shape) {
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device, PHX_DTYPE_F32, shape.size(), shape.data(), &t),
              PHX_STATUS_OK)
        << phx_last_error();
    return t;
  }

  std::vector<float> download(phx_tensor t, size_t count) {
    std::vector<float> values(count);
    EXPECT_EQ(phx_tensor_download(t, 0, values.data(), count * sizeof(float)), PHX_STATUS_OK);
    return values;
  }

  phx_value node(phx_op_id op, std::vector<phx_value> inputs, const char* name) {
    return phx_test::add_node(graph_, op, inputs, name);
  }

  // x [1, 1, S, D]: q = x W; a = attention(q, q, x); y = a W. Outputs y and a. On tpu-sim
  // attention runs in bf16 only: with f32 values it goes to another device.
  void build() {
    ASSERT_EQ(phx_graph_create(context_, &graph_), PHX_STATUS_OK);
    phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
    input.dtype = PHX_DTYPE_F32;
    input.rank = 4;
    input.shape = kX;
    phx_value x = 0;
    ASSERT_EQ(phx_graph_add_input(graph_, &input, &x), PHX_STATUS_OK);
    for (int i = 0; i < kD * kD; ++i) w_.push_back(0.3f * std::sin(0.7f * i));
    for (int i = 0; i < kS * kD; ++i) x_.push_back(std::cos(0.3f * i));
    const int64_t w_shape[2] = {kD, kD};
    phx_value w = 0;
    ASSERT_EQ(phx_graph_add_constant(graph_, "w", PHX_DTYPE_F32, 2, w_shape, w_.data(),
                                     w_.size() * sizeof(float), &w),
              PHX_STATUS_OK);
    const phx_value q = node(PHX_OP_MATMUL, {x, w}, "q");
    const phx_value a = node(PHX_OP_ATTENTION, {q, q, x}, "attention");
    const phx_value y = node(PHX_OP_MATMUL, {a, w}, "y");
    ASSERT_EQ(phx_graph_add_output(graph_, y, "y"), PHX_STATUS_OK);
    ASSERT_EQ(phx_graph_add_output(graph_, a, "a"), PHX_STATUS_OK);
  }

  // The executable's outputs y and a for x.
  std::vector<std::vector<float>> run_executable(size_t home, size_t other) {
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = home;
    options.other_devices = &other;
    options.other_device_count = 1;
    phx_executable exe = nullptr;
    EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_OK)
        << phx_last_error();
    if (exe == nullptr) return {};
    phx_executable_describe(exe, &info_);
    phx_stream stream = nullptr;
    EXPECT_EQ(phx_stream_create(context_, home, &stream), PHX_STATUS_OK);
    const phx_tensor x = tensor(home, {1, 1, kS, kD});
    EXPECT_EQ(phx_tensor_upload(x, 0, x_.data(), x_.size() * sizeof(float)), PHX_STATUS_OK);
    const phx_tensor outputs[2] = {tensor(home, {1, 1, kS, kD}), tensor(home, {1, 1, kS, kD})};
    std::vector<std::vector<float>> results;
    // Twice: the second run reuses the plan, the streams and the copies' room.
    for (int run = 0; run < 2; ++run) {
      uint64_t ticket = 0;
      EXPECT_EQ(phx_executable_run(stream, exe, &x, 1, outputs, 2, &ticket), PHX_STATUS_OK)
          << phx_last_error();
      EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK) << phx_last_error();
      results = {download(outputs[0], kS * kD), download(outputs[1], kS * kD)};
    }
    for (phx_tensor t : {x, outputs[0], outputs[1]}) phx_tensor_destroy(t);
    EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
    EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
    return results;
  }

  // The same ops eagerly: the matmuls on matmul_device, attention on attention_device.
  std::vector<std::vector<float>> run_eagerly(size_t matmul_device, size_t attention_device) {
    const std::vector<int64_t> shape = {1, 1, kS, kD};
    const int64_t w_shape[2] = {kD, kD};
    auto on = [&](size_t device, const std::vector<float>& values, const std::vector<int64_t>& s) {
      phx_tensor t = tensor(device, s);
      EXPECT_EQ(phx_tensor_upload(t, 0, values.data(), values.size() * sizeof(float)),
                PHX_STATUS_OK);
      return t;
    };
    auto run = [&](size_t device, phx_op_id op, std::vector<phx_tensor> in, phx_tensor out) {
      phx_stream stream = nullptr;
      EXPECT_EQ(phx_stream_create(context_, device, &stream), PHX_STATUS_OK);
      const phx_op_desc desc = {sizeof desc, op, nullptr, in.data(), in.size(), &out, 1};
      EXPECT_EQ(phx_op_run(stream, &desc, nullptr), PHX_STATUS_OK) << phx_last_error();
      EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
    };
    const phx_tensor x = on(matmul_device, x_, shape);
    const phx_tensor w = on(matmul_device, w_, {w_shape[0], w_shape[1]});
    const phx_tensor q = tensor(matmul_device, shape);
    run(matmul_device, PHX_OP_MATMUL, {x, w}, q);
    const phx_tensor q_there = on(attention_device, download(q, kS * kD), shape);
    const phx_tensor x_there = on(attention_device, x_, shape);
    const phx_tensor a_there = tensor(attention_device, shape);
    run(attention_device, PHX_OP_ATTENTION, {q_there, q_there, x_there}, a_there);
    const std::vector<float> a = download(a_there, kS * kD);
    const phx_tensor a_here = on(matmul_device, a, shape);
    const phx_tensor y = tensor(matmul_device, shape);
    run(matmul_device, PHX_OP_MATMUL, {a_here, w}, y);
    std::vector<std::vector<float>> results = {download(y, kS * kD), a};
    for (phx_tensor t : {x, w, q, q_there, x_there, a_there, a_here, y}) phx_tensor_destroy(t);
    return results;
  }

  static constexpr int kS = 8, kD = 16;
  static constexpr int64_t kX[4] = {1, 1, kS, kD};
  phx_context context_ = nullptr;
  phx_graph graph_ = nullptr;
  size_t cpu_ = SIZE_MAX, tpu_ = SIZE_MAX, npu_ = SIZE_MAX;
  std::vector<float> w_, x_;
  phx_executable_info info_ = PHX_EXECUTABLE_INFO_INIT;
  std::vector<std::string> warnings_;  // the context's warnings (compiles log on this thread)
};

void expect_same_bits(const std::vector<std::vector<float>>& got,
                      const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(got[o].size(), want[o].size());
    for (size_t i = 0; i < want[o].size(); ++i)
      ASSERT_EQ(got[o][i], want[o][i]) << "output " << o << " element " << i;
  }
}

TEST_F(GraphPlacement, AloneTheDeviceRefusesTheNodeItLacksByName) {
  ASSERT_NO_FATAL_FAILURE(build());
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = tpu_;
  phx_executable exe = nullptr;
  EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(phx_last_error()).find("node 'attention'"), std::string::npos)
      << phx_last_error();
  EXPECT_EQ(exe, nullptr);
}

// tpu-sim runs the matmuls, the CPU device the f32 attention: q goes to the CPU (and x,
// which attention reads too), the attention's result comes back as output a, which the
// second matmul then reads in place.
TEST_F(GraphPlacement, AttentionTheTpuLacksRunsOnTheCpu) {
  ASSERT_NO_FATAL_FAILURE(build());
  const auto got = run_executable(tpu_, cpu_);
  EXPECT_EQ(info_.device_count, 2u);
  EXPECT_EQ(info_.node_count, 3u);
  EXPECT_EQ(info_.copies_per_run, 3u);
  expect_same_bits(got, run_eagerly(tpu_, cpu_));
}

// The mobile NPU has no f32 compute: every node goes to the CPU device, the input there
// and both outputs back.
TEST_F(GraphPlacement, EveryNodeTheNpuLacksRunsOnTheCpu) {
  ASSERT_NO_FATAL_FAILURE(build());
  const auto got = run_executable(npu_, cpu_);
  EXPECT_EQ(info_.device_count, 2u);
  EXPECT_EQ(info_.copies_per_run, 3u);
  expect_same_bits(got, run_eagerly(cpu_, cpu_));
}

// A compile that leaves most of the work (FLOPs) off its device says so, with the reason;
// one whose other device takes a third (the f32 attention off tpu-sim: 4096 of 12288
// FLOPs) says nothing.
TEST_F(GraphPlacement, MostWorkOffTheDeviceIsAWarning) {
  ASSERT_NO_FATAL_FAILURE(build());
  run_executable(tpu_, cpu_);
  EXPECT_TRUE(warnings_.empty()) << warnings_[0];
  run_executable(npu_, cpu_);
  ASSERT_EQ(warnings_.size(), 1u);
  for (const char* part : {"3 of 3 nodes, 100% of the work", "no matmul (f32, f32 -> f32) (2)",
                           "no attention (f32, f32, f32 -> f32) (1)"})
    EXPECT_NE(warnings_[0].find(part), std::string::npos) << part << " in " << warnings_[0];
}

// The NPU runs the vector ops of API 0.3 in f16 and its integer widths, not on u8 beyond
// where and not: in an f16 graph it runs the add, the leaky_relu and the greater (f16 in,
// u8 out) it has, and the CPU device the max of two u8 values after them; every value is
// exact, so the result is the op rules' own.
TEST_F(GraphPlacement, AnOpOfApi03TheNpuLacksRunsOnTheCpu) {
  ASSERT_EQ(phx_graph_create(context_, &graph_), PHX_STATUS_OK);
  const int64_t shape[2] = {4, 8};
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.dtype = PHX_DTYPE_F16;
  input.rank = 2;
  input.shape = shape;
  phx_value x = 0, c = 0;
  ASSERT_EQ(phx_graph_add_input(graph_, &input, &x), PHX_STATUS_OK);
  input.dtype = PHX_DTYPE_U8;
  ASSERT_EQ(phx_graph_add_input(graph_, &input, &c), PHX_STATUS_OK);
  const phx_elementwise_params slope = PHX_ELEMENTWISE_PARAMS_INIT(0.25f, 0.0f);
  const phx_value sum = node(PHX_OP_ADD, {x, x}, "sum");
  const phx_value leaky = phx_test::add_node(graph_, PHX_OP_LEAKY_RELU, {sum}, "leaky", &slope);
  const phx_value nonzero = node(PHX_OP_GREATER, {leaky, x}, "nonzero");
  const phx_value y = node(PHX_OP_MAX, {nonzero, c}, "either");
  ASSERT_EQ(phx_graph_add_output(graph_, y, "y"), PHX_STATUS_OK);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = npu_;
  options.other_devices = &cpu_;
  options.other_device_count = 1;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_OK) << phx_last_error();
  for (size_t i = 0; i < 4; ++i) {
    phx_executable_node_info info = PHX_EXECUTABLE_NODE_INFO_INIT;
    ASSERT_EQ(phx_executable_describe_node(exe, i, &info), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(info.device, info.op == PHX_OP_MAX ? cpu_ : npu_) << info.name;
  }

  // x: 0, 0.5 or -0.5, exact in f16 as x + x and leaky_relu of it (1 or -0.25), which is
  // greater than x where x is not 0; c: 0 or 1.
  std::vector<uint16_t> x_bits;
  std::vector<uint8_t> c_values;
  for (int i = 0; i < 32; ++i) {
    x_bits.push_back(i % 3 == 0 ? 0 : i % 3 == 1 ? 0x3800 : 0xB800);
    c_values.push_back(static_cast<uint8_t>(i % 2));
  }
  phx_tensor x_in = nullptr, c_in = nullptr, out = nullptr;
  ASSERT_EQ(phx_tensor_create(context_, npu_, PHX_DTYPE_F16, 2, shape, &x_in), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_create(context_, npu_, PHX_DTYPE_U8, 2, shape, &c_in), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_create(context_, npu_, PHX_DTYPE_U8, 2, shape, &out), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_upload(x_in, 0, x_bits.data(), x_bits.size() * 2), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_upload(c_in, 0, c_values.data(), c_values.size()), PHX_STATUS_OK);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, npu_, &stream), PHX_STATUS_OK);
  uint64_t ticket = 0;
  phx_tensor inputs[2] = {x_in, c_in};
  ASSERT_EQ(phx_executable_run(stream, exe, inputs, 2, &out, 1, &ticket), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK) << phx_last_error();
  std::vector<uint8_t> got(32);
  ASSERT_EQ(phx_tensor_download(out, 0, got.data(), got.size()), PHX_STATUS_OK);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i % 3 != 0 || i % 2 != 0) << i;
  for (phx_tensor t : {x_in, c_in, out}) EXPECT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
}

// The simulators run the layout ops: compiled for tpu-sim alone, a graph's reshape,
// concat and slice nodes and the relus around them all stay on the chip; compiled for the
// NPU with the CPU device beside it, the f32 layout nodes stay on the NPU and the f32
// relus (which it runs only in f16, with calibration ranges) go to the CPU. Both give the
// reference's result.
TEST_F(GraphPlacement, LayoutNodesRunOnTheSimulators) {
  ASSERT_EQ(phx_graph_create(context_, &graph_), PHX_STATUS_OK);
  const int64_t shape[2] = {4, 6};
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.dtype = PHX_DTYPE_F32;
  input.rank = 2;
  input.shape = shape;
  phx_value x = 0;
  ASSERT_EQ(phx_graph_add_input(graph_, &input, &x), PHX_STATUS_OK);
  const phx_reshape_params flat = {sizeof(phx_reshape_params), 1, {-1}};
  const phx_axis_params axis0 = PHX_AXIS_PARAMS_INIT;
  phx_slice_params reversed = PHX_SLICE_PARAMS_INIT;
  reversed.starts[0] = -1;
  reversed.ends[0] = INT64_MIN;
  reversed.steps[0] = -1;
  const phx_value a = node(PHX_OP_RELU, {x}, "relu_in");
  const phx_value r = phx_test::add_node(graph_, PHX_OP_RESHAPE, {a}, "reshape", &flat);
  const phx_value c = phx_test::add_node(graph_, PHX_OP_CONCAT, {r, r}, "concat", &axis0);
  const phx_value s = phx_test::add_node(graph_, PHX_OP_SLICE, {c}, "slice", &reversed);
  const phx_value y = node(PHX_OP_RELU, {s}, "relu_out");
  ASSERT_EQ(phx_graph_add_output(graph_, y, "y"), PHX_STATUS_OK);

  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  phx_executable exe = nullptr;
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) - 10.0f;
  std::vector<float> expected;  // relu(x) flattened twice, reversed
  for (int i = 47; i >= 0; --i) expected.push_back(std::max(xs[static_cast<size_t>(i % 24)], 0.0f));
  for (size_t home : {tpu_, npu_}) {
    SCOPED_TRACE(home == tpu_ ? "tpu-sim" : "npu-sim");
    options.device = home;
    options.other_devices = home == npu_ ? &cpu_ : nullptr;
    options.other_device_count = home == npu_ ? 1 : 0;
    ASSERT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_OK)
        << phx_last_error();
    phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
    ASSERT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
    for (size_t n = 0; n < info.node_count; ++n) {
      phx_executable_node_info node_info = PHX_EXECUTABLE_NODE_INFO_INIT;
      ASSERT_EQ(phx_executable_describe_node(exe, n, &node_info), PHX_STATUS_OK);
      const bool relu = std::string(node_info.name).rfind("relu", 0) == 0;
      EXPECT_EQ(node_info.device, home == npu_ && relu ? cpu_ : home) << node_info.name;
    }
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(context_, home, &stream), PHX_STATUS_OK);
    const phx_tensor in = tensor(home, {4, 6}), out = tensor(home, {48});
    ASSERT_EQ(phx_tensor_upload(in, 0, xs.data(), xs.size() * sizeof(float)), PHX_STATUS_OK);
    uint64_t ticket = 0;
    EXPECT_EQ(phx_executable_run(stream, exe, &in, 1, &out, 1, &ticket), PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(download(out, 48), expected);
    for (phx_tensor t : {in, out}) phx_tensor_destroy(t);
    EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
    EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
    exe = nullptr;
  }
}

TEST_F(GraphPlacement, BadDeviceListsAreRefused) {
  ASSERT_NO_FATAL_FAILURE(build());
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = tpu_;
  options.other_device_count = 1;
  phx_executable exe = nullptr;
  EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_INVALID_ARGUMENT);
  const size_t missing = 99;
  options.other_devices = &missing;
  EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_NOT_FOUND);
  EXPECT_EQ(exe, nullptr);
  // The executable's own device again, or twice, is no other device: still refused.
  const size_t same[2] = {tpu_, tpu_};
  options.other_devices = same;
  options.other_device_count = 2;
  EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_UNSUPPORTED);
}

}  // namespace
