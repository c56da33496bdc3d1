// QDQ fusion (docs/graphs.md, pass 3): a conv2d or matmul between dequantizes and a
// quantize, as quantization tools write quantized models, compiled into one qconv2d or
// qmatmul on the CPU device and on the NPU. The oracle is the QDQ graph's meaning in
// float64: dequantize, the product, relu, then quantize (round half to even, saturate).
// The integer op sums exactly and rounds once, so it gives the float64 result except
// where that lies within a hair of a rounding tie: each element within one step of it.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace {

constexpr int64_t kC = 2, kH = 6, kW = 6, kCo = 4;  // conv: x [1, C, H, W], w [Co, C, 3, 3]
constexpr float kXScale = 0.05f, kYScale = 0.1f;    // per tensor
constexpr int32_t kXZero = 3, kYZero = -5;
constexpr float kWScale[kCo] = {0.02f, 0.03f, 0.01f, 0.04f};  // per output channel
constexpr int32_t kBias[kCo] = {100, -50, 0, 30};

class GraphQdq : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = PHX_TEST_DEFAULT_PLUGIN_DIR;
    const std::string files[] = {dir + "/phx_cpu.so", dir + "/phx_npu_sim.so"};
    const char* paths[] = {files[0].c_str(), files[1].c_str()};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 2;
    options.use_default_search_path = 0;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    ASSERT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK);
    for (size_t d = 0; d < count; ++d) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      ASSERT_EQ(phx_device_get(context_, d, &info), PHX_STATUS_OK);
      if (std::strcmp(info.plugin, "cpu") == 0) cpu_ = d;
      if (std::strcmp(info.plugin, "npu-sim") == 0) npu_ = d;
    }
    ASSERT_NE(cpu_, SIZE_MAX);
    ASSERT_NE(npu_, SIZE_MAX);
    ASSERT_EQ(phx_graph_create(context_, &graph_), PHX_STATUS_OK);
    for (int64_t i = 0; i < kC * kH * kW; ++i)
      x_.push_back(static_cast<int8_t>((i * 37) % 201 - 100));
    for (int64_t i = 0; i < kCo * kC * 9; ++i)
      w_.push_back(static_cast<int8_t>((i * 53) % 255 - 127));
  }
  void TearDown() override {
    phx_graph_destroy(graph_);
    EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
  }

  phx_value constant(phx_dtype dtype, std::vector<int64_t> shape, const void* data) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    phx_value v = 0;
    EXPECT_EQ(phx_graph_add_constant(graph_, nullptr, dtype, shape.size(), shape.data(), data,
                                     static_cast<size_t>(count) * phx_dtype_size(dtype), &v),
              PHX_STATUS_OK)
        << phx_last_error();
    return v;
  }

  phx_value dequantize(phx_value q, phx_value scale, phx_value zero_point, int32_t axis) {
    phx_quantize_params params = PHX_QUANTIZE_PARAMS_INIT;
    params.axis = axis;
    std::vector<phx_value> inputs = {q, scale};
    if (zero_point != PHX_VALUE_NONE) inputs.push_back(zero_point);
    return phx_test::add_node(graph_, PHX_OP_DEQUANTIZE, inputs, "dequantize", &params);
  }

  // x_q -> dequantize; w -> dequantize (per channel); bias -> dequantize; conv2d (pad 1);
  // relu; quantize to i8. float_bias: the bias as f32 values instead, which the fusion
  // leaves alone (the integer op takes an i32 bias only).
  void build_conv(bool float_bias = false) {
    phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
    input.name = "x_q";
    input.dtype = PHX_DTYPE_I8;
    input.rank = 4;
    const int64_t shape[4] = {1, kC, kH, kW};
    input.shape = shape;
    phx_value xq = 0;
    ASSERT_EQ(phx_graph_add_input(graph_, &input, &xq), PHX_STATUS_OK);
    const phx_value x = dequantize(xq, constant(PHX_DTYPE_F32, {1}, &kXScale),
                                   constant(PHX_DTYPE_I32, {1}, &kXZero), 1);
    const phx_value w = dequantize(constant(PHX_DTYPE_I8, {kCo, kC, 3, 3}, w_.data()),
                                   constant(PHX_DTYPE_F32, {kCo}, kWScale), PHX_VALUE_NONE, 0);
    float bias_scale[kCo], bias_values[kCo];
    for (int c = 0; c < kCo; ++c) {
      bias_scale[c] = kXScale * kWScale[c];
      bias_values[c] = static_cast<float>(kBias[c]) * bias_scale[c];
    }
    const phx_value bias =
        float_bias ? constant(PHX_DTYPE_F32, {kCo}, bias_values)
                   : dequantize(constant(PHX_DTYPE_I32, {kCo}, kBias),
                                constant(PHX_DTYPE_F32, {kCo}, bias_scale), PHX_VALUE_NONE, 0);
    phx_conv2d_params conv = PHX_CONV2D_PARAMS_INIT;
    std::fill(conv.padding, conv.padding + 4, 1u);
    const phx_value c = phx_test::add_node(graph_, PHX_OP_CONV2D, {x, w, bias}, "conv", &conv);
    const phx_value r = phx_test::add_node(graph_, PHX_OP_RELU, {c}, "relu");
    quantize_output(r, kYScale, kYZero, PHX_DTYPE_I8);
  }

  // quantize(x, scale, zero_point) to dtype, named "quantize": the graph's output y_q.
  void quantize_output(phx_value x, float scale, int32_t zero_point, phx_dtype dtype) {
    phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
    desc.name = "quantize";
    desc.op = PHX_OP_QUANTIZE;
    const phx_value inputs[] = {x, constant(PHX_DTYPE_F32, {1}, &scale),
                                constant(PHX_DTYPE_I32, {1}, &zero_point)};
    desc.inputs = inputs;
    desc.input_count = 3;
    desc.output_dtypes = &dtype;
    desc.output_count = 1;
    phx_value y = 0;
    ASSERT_EQ(phx_graph_add_node(graph_, &desc, &y), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_graph_add_output(graph_, y, "y_q"), PHX_STATUS_OK);
  }

  // The QDQ conv's meaning in float64.
  std::vector<int> conv_reference() const {
    std::vector<int> y;
    for (int64_t co = 0; co < kCo; ++co)
      for (int64_t oy = 0; oy < kH; ++oy)
        for (int64_t ox = 0; ox < kW; ++ox) {
          double sum = static_cast<double>(kBias[co]) * kXScale * kWScale[co];
          for (int64_t ci = 0; ci < kC; ++ci)
            for (int64_t ky = 0; ky < 3; ++ky)
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                if (iy < 0 || iy >= kH || ix < 0 || ix >= kW) continue;
                const double xv = (x_[(ci * kH + iy) * kW + ix] - kXZero) * double{kXScale};
                const double wv = w_[((co * kC + ci) * 3 + ky) * 3 + kx] * double{kWScale[co]};
                sum += xv * wv;
              }
          const double q = std::nearbyint(std::max(sum, 0.0) / kYScale) + kYZero;
          y.push_back(static_cast<int>(std::clamp(q, -128.0, 127.0)));
        }
    return y;
  }

  struct Node {
    std::string name;
    phx_op_id op;
    size_t device;
  };
  struct Compiled {
    std::vector<int> y;
    phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
    std::vector<Node> nodes;
  };

  // Compiles the graph for device (the CPU device for what it lacks), runs it on x_ and
  // returns the i8 output with the executable's description.
  Compiled compile_and_run(size_t device, uint32_t flags = 0) {
    Compiled out;
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = device;
    options.flags = flags;
    options.other_devices = &cpu_;
    options.other_device_count = device == cpu_ ? 0 : 1;
    phx_executable exe = nullptr;
    EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_OK)
        << phx_last_error();
    if (exe == nullptr) return out;
    EXPECT_EQ(phx_executable_describe(exe, &out.info), PHX_STATUS_OK);
    for (size_t i = 0; i < out.info.node_count; ++i) {
      phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
      EXPECT_EQ(phx_executable_describe_node(exe, i, &node), PHX_STATUS_OK);
      out.nodes.push_back({node.name, node.op, node.device});
    }
    phx_stream stream = nullptr;
    EXPECT_EQ(phx_stream_create(context_, device, &stream), PHX_STATUS_OK);
    const int64_t x_shape[4] = {1, kC, kH, kW}, y_shape[4] = {1, kCo, kH, kW};
    phx_tensor x = nullptr, y = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device, PHX_DTYPE_I8, 4, x_shape, &x), PHX_STATUS_OK);
    EXPECT_EQ(phx_tensor_upload(x, 0, x_.data(), x_.size()), PHX_STATUS_OK);
    EXPECT_EQ(phx_tensor_create(context_, device, PHX_DTYPE_I8, 4, y_shape, &y), PHX_STATUS_OK);
    EXPECT_EQ(phx_executable_run(stream, exe, &x, 1, &y, 1, nullptr), PHX_STATUS_OK)
        << phx_last_error();
    std::vector<int8_t> bytes(static_cast<size_t>(kCo * kH * kW));
    EXPECT_EQ(phx_tensor_download(y, 0, bytes.data(), bytes.size()), PHX_STATUS_OK);
    out.y.assign(bytes.begin(), bytes.end());
    phx_tensor_destroy(x);
    phx_tensor_destroy(y);
    phx_stream_destroy(stream);
    phx_executable_destroy(exe);
    return out;
  }

  static void expect_within_one_step(const std::vector<int>& got, const std::vector<int>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(std::abs(got[i] - want[i]), 1) << i;
  }

  phx_context context_ = nullptr;
  phx_graph graph_ = nullptr;
  size_t cpu_ = SIZE_MAX, npu_ = SIZE_MAX;
  std::vector<int8_t> x_, w_;
};

TEST_F(GraphQdq, AConvBetweenDequantizesAndAQuantizeRunsAsOneQconv2d) {
  build_conv();
  const std::vector<int> want = conv_reference();
  const Compiled fused = compile_and_run(cpu_);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op, PHX_OP_QCONV2D);
  EXPECT_EQ(fused.nodes[0].name, "conv + relu + quantize");
  // relu, quantize and the three dequantizes: what the qconv2d computes from integers.
  EXPECT_EQ(fused.info.fused_nodes, 5u);
  expect_within_one_step(fused.y, want);
  // Without fusion, the float path of the same graph: dequantize x, conv2d, relu,
  // quantize (the weights' and bias's dequantizes are folded at compile).
  const Compiled plain = compile_and_run(cpu_, PHX_COMPILE_NO_FUSION);
  EXPECT_EQ(plain.nodes.size(), 4u);
  expect_within_one_step(plain.y, want);
}

// The NPU runs qconv2d and not a float conv2d: the fused node goes to it.
TEST_F(GraphQdq, OnTheNpuTheFusedConvRunsOnTheNpu) {
  build_conv();
  const Compiled fused = compile_and_run(npu_);
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op, PHX_OP_QCONV2D);
  EXPECT_EQ(fused.nodes[0].device, npu_);
  expect_within_one_step(fused.y, conv_reference());
}

// A float bias is not the integer op's: the graph runs as written.
TEST_F(GraphQdq, AFloatBiasKeepsTheFloatPath) {
  build_conv(/*float_bias=*/true);
  const Compiled plain = compile_and_run(cpu_);
  EXPECT_TRUE(std::none_of(plain.nodes.begin(), plain.nodes.end(),
                           [](const auto& n) { return n.op == PHX_OP_QCONV2D; }));
  expect_within_one_step(plain.y, conv_reference());
}

// qmatmul: u8 activations with a zero point of 128 and i8 weights [K, N] per output
// column (axis 1), quantized back to u8, with no bias and no relu.
TEST_F(GraphQdq, AMatmulOfU8ActivationsRunsAsOneQmatmul) {
  constexpr int64_t kM = 3, kK = 8, kN = 5;
  const float a_scale = 0.02f, y_scale = 0.05f;
  const int32_t a_zero = 128, y_zero = 128;
  const float w_scale[kN] = {0.01f, 0.02f, 0.03f, 0.015f, 0.025f};
  std::vector<uint8_t> a(kM * kK);
  std::vector<int8_t> w(kK * kN);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>((i * 71) % 256);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>((i * 29) % 255 - 127);
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.dtype = PHX_DTYPE_U8;
  input.rank = 2;
  const int64_t a_shape[2] = {kM, kK};
  input.shape = a_shape;
  phx_value aq = 0;
  ASSERT_EQ(phx_graph_add_input(graph_, &input, &aq), PHX_STATUS_OK);
  const phx_value af = dequantize(aq, constant(PHX_DTYPE_F32, {1}, &a_scale),
                                  constant(PHX_DTYPE_I32, {1}, &a_zero), 1);
  const phx_value wf = dequantize(constant(PHX_DTYPE_I8, {kK, kN}, w.data()),
                                  constant(PHX_DTYPE_F32, {kN}, w_scale), PHX_VALUE_NONE, 1);
  const phx_value m = phx_test::add_node(graph_, PHX_OP_MATMUL, {af, wf}, "fc");
  quantize_output(m, y_scale, y_zero, PHX_DTYPE_U8);

  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = cpu_;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_OK) << phx_last_error();
  phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe_node(exe, 0, &node), PHX_STATUS_OK);
  EXPECT_EQ(node.op, PHX_OP_QMATMUL);
  EXPECT_STREQ(node.name, "fc + quantize");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, cpu_, &stream), PHX_STATUS_OK);
  const int64_t y_shape[2] = {kM, kN};
  phx_tensor at = nullptr, yt = nullptr;
  ASSERT_EQ(phx_tensor_create(context_, cpu_, PHX_DTYPE_U8, 2, a_shape, &at), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_upload(at, 0, a.data(), a.size()), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_create(context_, cpu_, PHX_DTYPE_U8, 2, y_shape, &yt), PHX_STATUS_OK);
  ASSERT_EQ(phx_executable_run(stream, exe, &at, 1, &yt, 1, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  std::vector<uint8_t> got(kM * kN);
  ASSERT_EQ(phx_tensor_download(yt, 0, got.data(), got.size()), PHX_STATUS_OK);
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < kK; ++k)
        sum += (a[i * kK + k] - a_zero) * double{a_scale} * w[k * kN + j] * double{w_scale[j]};
      const double want = std::clamp(std::nearbyint(sum / y_scale) + y_zero, 0.0, 255.0);
      EXPECT_LE(std::abs(got[i * kN + j] - want), 1) << i << "," << j;
    }
  phx_tensor_destroy(at);
  phx_tensor_destroy(yt);
  phx_stream_destroy(stream);
  phx_executable_destroy(exe);
}

}  // namespace
