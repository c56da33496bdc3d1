// npu-sim's executables through the host (phx_graph_compile). Without calibration: an f16
// MLP that the NPU runs natively is compiled as one part of its device, its nodes report
// the dtypes they compute in, the part gives its figures, and a run gives the bits of
// the same ops run eagerly on the NPU. With calibration samples (optimize_model): an f32
// MLP whose matmuls the NPU quantizes, whose gelu it runs in f16, and whose node past
// f16's range goes to the CPU device, within its quantization error of float64.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "f16_values.h"
#include "graph_builder.h"
#include "npu_sim_test_context.h"

namespace {

using npu_sim_test::Sim;
using npu_sim_test::Stream;
using phx_test::Tensor;

constexpr int64_t kM = 4, kK = 16, kH = 32, kN = 8;

std::vector<uint16_t> f16_gaussian(size_t n, uint32_t seed, double sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, sigma);
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return npu_sim_test::to_f16(v);
}

// y = cast(matmul(gelu(matmul(cast(x), w1) + b1), w2)) in f16, x and y f32.
struct F16Mlp {
  std::vector<float> x;
  std::vector<uint16_t> w1 = f16_gaussian(kK * kH, 2, 0.25), b1 = f16_gaussian(kH, 3, 0.5),
                        w2 = f16_gaussian(kH * kN, 4, 0.18);
  phx_matmul_params gelu = {sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_GELU};

  F16Mlp() {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < kM * kK; ++i) x.push_back(normal(rng));
  }

  phx_graph build(phx_context context) {
    phx_graph graph = nullptr;
    EXPECT_EQ(phx_graph_create(context, &graph), PHX_STATUS_OK);
    const int64_t x_shape[2] = {kM, kK};
    phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
    input.dtype = PHX_DTYPE_F32;
    input.rank = 2;
    input.shape = x_shape;
    phx_value vx = 0, vw1 = 0, vb1 = 0, vw2 = 0;
    EXPECT_EQ(phx_graph_add_input(graph, &input, &vx), PHX_STATUS_OK);
    const int64_t w1_shape[2] = {kK, kH}, b1_shape[1] = {kH}, w2_shape[2] = {kH, kN};
    EXPECT_EQ(phx_graph_add_constant(graph, "w1", PHX_DTYPE_F16, 2, w1_shape, w1.data(),
                                     w1.size() * 2, &vw1),
              PHX_STATUS_OK);
    EXPECT_EQ(phx_graph_add_constant(graph, "b1", PHX_DTYPE_F16, 1, b1_shape, b1.data(),
                                     b1.size() * 2, &vb1),
              PHX_STATUS_OK);
    EXPECT_EQ(phx_graph_add_constant(graph, "w2", PHX_DTYPE_F16, 2, w2_shape, w2.data(),
                                     w2.size() * 2, &vw2),
              PHX_STATUS_OK);
    const phx_value h = cast(graph, vx, PHX_DTYPE_F16, "in");
    const phx_value a = phx_test::add_node(graph, PHX_OP_MATMUL, {h, vw1, vb1}, "fc1", &gelu);
    const phx_value z = phx_test::add_node(graph, PHX_OP_MATMUL, {a, vw2}, "fc2");
    EXPECT_EQ(phx_graph_add_output(graph, cast(graph, z, PHX_DTYPE_F32, "out"), "y"),
              PHX_STATUS_OK);
    return graph;
  }

  static phx_value cast(phx_graph graph, phx_value v, phx_dtype dtype, const char* name) {
    phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
    desc.name = name;
    desc.op = PHX_OP_CAST;
    desc.inputs = &v;
    desc.input_count = 1;
    desc.output_dtypes = &dtype;
    desc.output_count = 1;
    phx_value out = 0;
    EXPECT_EQ(phx_graph_add_node(graph, &desc, &out), PHX_STATUS_OK) << phx_last_error();
    return out;
  }

  // The same four ops run eagerly on device: y.
  std::vector<float> eagerly(phx_context context, size_t device, phx_stream stream) {
    Tensor tx(context, device, PHX_DTYPE_F32, {kM, kK}),
        th(context, device, PHX_DTYPE_F16, {kM, kK}), tw1(context, device, PHX_DTYPE_F16, {kK, kH}),
        tb1(context, device, PHX_DTYPE_F16, {kH}), ta(context, device, PHX_DTYPE_F16, {kM, kH}),
        tw2(context, device, PHX_DTYPE_F16, {kH, kN}), tz(context, device, PHX_DTYPE_F16, {kM, kN}),
        ty(context, device, PHX_DTYPE_F32, {kM, kN});
    tx.upload(x);
    tw1.upload(w1);
    tb1.upload(b1);
    tw2.upload(w2);
    using npu_sim_test::run;
    EXPECT_EQ(run(stream, PHX_OP_CAST, nullptr, {tx.get()}, {th.get()}), PHX_STATUS_OK);
    EXPECT_EQ(run(stream, PHX_OP_MATMUL, &gelu, {th.get(), tw1.get(), tb1.get()}, {ta.get()}),
              PHX_STATUS_OK);
    EXPECT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta.get(), tw2.get()}, {tz.get()}),
              PHX_STATUS_OK);
    EXPECT_EQ(run(stream, PHX_OP_CAST, nullptr, {tz.get()}, {ty.get()}), PHX_STATUS_OK);
    return ty.download<float>(kM * kN);
  }
};

TEST(NpuSimExecutable, AnF16ModelCompilesAsOnePartWithTheEagerBits) {
  Sim sim("profile=mobile");
  F16Mlp mlp;
  phx_graph graph = mlp.build(sim.context());
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = sim.device();
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(sim.context(), graph, &options, &exe), PHX_STATUS_OK)
      << phx_last_error();

  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.native_parts, 1u);
  EXPECT_EQ(info.native_nodes, 4u);
  EXPECT_EQ(info.quantized_nodes, 0u);
  const phx_dtype computes[4] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_F16, PHX_DTYPE_F16};
  for (size_t n = 0; n < 4; ++n) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    ASSERT_EQ(phx_executable_describe_node(exe, n, &node), PHX_STATUS_OK);
    EXPECT_EQ(node.device, sim.device());
    EXPECT_EQ(node.compute_dtype, computes[n]) << node.name;
  }
  phx_metric metrics[32];
  size_t count = 0;
  ASSERT_EQ(phx_executable_stats(exe, metrics, 32, &count), PHX_STATUS_OK);
  std::map<std::string, double> stats;
  for (size_t i = 0; i < count && i < 32; ++i) stats[metrics[i].name] = metrics[i].value;
  EXPECT_EQ(stats["nodes"], 4);
  EXPECT_EQ(stats["native_nodes"], 4);
  EXPECT_EQ(stats["f16_nodes"], 0);
  EXPECT_GT(stats["modelled_time_ns"], 0);

  Stream stream(sim.context(), sim.device());
  Tensor x(sim.context(), sim.device(), PHX_DTYPE_F32, {kM, kK});
  Tensor y(sim.context(), sim.device(), PHX_DTYPE_F32, {kM, kN});
  x.upload(mlp.x);
  const phx_tensor inputs[1] = {x.get()}, outputs[1] = {y.get()};
  ASSERT_EQ(phx_executable_run(stream.get(), exe, inputs, 1, outputs, 1, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_stream_synchronize(stream.get()), PHX_STATUS_OK);
  EXPECT_EQ(y.download<float>(kM * kN), mlp.eagerly(sim.context(), sim.device(), stream.get()));
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

// ---- with calibration --------------------------------------------------------------------

constexpr int64_t kRows = 8, kIn = 32, kHidden = 64, kOut = 16;
constexpr float kScale = 1e5f;  // puts fc2's output past f16's range

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// y = (gelu(relu(x w1 + b1) w2) * kScale) w3 in f32: fc1, its bias add and relu (which the
// host fuses into one matmul), gelu, fc2, the scale, fc3.
struct F32Mlp {
  std::vector<float> w1 = gaussian(kIn * kHidden, 11, 0.18f), b1 = gaussian(kHidden, 12, 0.5f),
                     w2 = gaussian(kHidden * kOut, 13, 0.125f),
                     w3 = gaussian(kOut * kOut, 14, 0.25f);

  phx_graph build(phx_context context) const {
    phx_graph graph = nullptr;
    EXPECT_EQ(phx_graph_create(context, &graph), PHX_STATUS_OK);
    const int64_t x_shape[2] = {kRows, kIn};
    phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
    input.dtype = PHX_DTYPE_F32;
    input.rank = 2;
    input.shape = x_shape;
    phx_value x = 0;
    EXPECT_EQ(phx_graph_add_input(graph, &input, &x), PHX_STATUS_OK);
    auto constant = [&](const char* name, const std::vector<float>& data,
                        std::vector<int64_t> shape) {
      phx_value v = 0;
      EXPECT_EQ(phx_graph_add_constant(graph, name, PHX_DTYPE_F32, shape.size(), shape.data(),
                                       data.data(), data.size() * sizeof(float), &v),
                PHX_STATUS_OK)
          << phx_last_error();
      return v;
    };
    const phx_value vw1 = constant("w1", w1, {kIn, kHidden}), vb1 = constant("b1", b1, {kHidden});
    const phx_value vw2 = constant("w2", w2, {kHidden, kOut}),
                    vw3 = constant("w3", w3, {kOut, kOut});
    const phx_value scale = constant("scale", {kScale}, {1});
    using phx_test::add_node;
    phx_value h = add_node(graph, PHX_OP_MATMUL, {x, vw1}, "fc1");
    h = add_node(graph, PHX_OP_ADD, {h, vb1}, "bias1");
    h = add_node(graph, PHX_OP_RELU, {h}, "relu1");
    const phx_value g = add_node(graph, PHX_OP_GELU, {h}, "gelu");
    const phx_value z = add_node(graph, PHX_OP_MATMUL, {g, vw2}, "fc2");
    const phx_value big = add_node(graph, PHX_OP_MUL, {z, scale}, "scale");
    const phx_value y = add_node(graph, PHX_OP_MATMUL, {big, vw3}, "fc3");
    EXPECT_EQ(phx_graph_add_output(graph, y, "y"), PHX_STATUS_OK);
    return graph;
  }

  std::vector<double> reference(const std::vector<float>& x) const {
    auto matmul = [](const std::vector<double>& a, const std::vector<float>& w, int64_t k,
                     int64_t n) {
      std::vector<double> out(size_t(kRows * n), 0.0);
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < k; ++i) out[r * n + j] += a[r * k + i] * double(w[i * n + j]);
      return out;
    };
    std::vector<double> h = matmul(std::vector<double>(x.begin(), x.end()), w1, kIn, kHidden);
    for (size_t i = 0; i < h.size(); ++i) {
      const double v = std::max(h[i] + b1[i % kHidden], 0.0);
      h[i] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    }
    std::vector<double> z = matmul(h, w2, kHidden, kOut);
    for (double& v : z) v *= kScale;
    return matmul(z, w3, kOut, kOut);
  }
};

// The mobile NPU with the CPU device for what it does not run, calibrated on 4 samples:
// fc1 (with its bias and relu), fc2 and fc3 run int8 on the NPU, gelu in f16 there, and
// the scale, whose result passes f16's range, on the CPU. Each int8 layer adds rounding
// noise of about 1% of its values (the reference's first-order estimate: a step of range
// / 255, noise step / sqrt(12), against Gaussian-like values), three layers about 2% rms;
// the largest element error of a sample, relative to its largest output, stays under 3
// times that: 6%, for calibration_error and for a run on new data against float64.
TEST(NpuSimExecutable, CalibrationQuantizesTheMatmulsAndLeavesWhatPassesF16ToTheCpu) {
  Sim sim("profile=mobile");
  ASSERT_TRUE(sim.has_cpu());
  const F32Mlp mlp;
  phx_graph graph = mlp.build(sim.context());
  std::vector<std::unique_ptr<Tensor>> samples;
  std::vector<phx_tensor> sample_handles;
  for (uint32_t s = 0; s < 4; ++s) {
    samples.push_back(std::make_unique<Tensor>(sim.context(), sim.cpu(), PHX_DTYPE_F32,
                                               std::vector<int64_t>{kRows, kIn}));
    samples.back()->upload(gaussian(kRows * kIn, 100 + s, 1.0f));
    sample_handles.push_back(samples.back()->get());
  }
  const size_t cpu = sim.cpu();
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = sim.device();
  options.other_devices = &cpu;
  options.other_device_count = 1;
  options.calibration_inputs = sample_handles.data();
  options.calibration_sample_count = sample_handles.size();
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(sim.context(), graph, &options, &exe), PHX_STATUS_OK)
      << phx_last_error();

  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
  ASSERT_EQ(info.node_count, 5u);  // fc1 took its bias add and relu in
  EXPECT_EQ(info.quantized_nodes, 3u);
  EXPECT_EQ(info.device_count, 2u);
  EXPECT_GT(info.calibration_error, 0.0);
  EXPECT_LT(info.calibration_error, 0.06);
  const struct {
    phx_op_id op;
    size_t device;
    phx_dtype compute;
  } expected[5] = {{PHX_OP_MATMUL, sim.device(), PHX_DTYPE_I8},
                   {PHX_OP_GELU, sim.device(), PHX_DTYPE_F16},
                   {PHX_OP_MATMUL, sim.device(), PHX_DTYPE_I8},
                   {PHX_OP_MUL, cpu, PHX_DTYPE_F32},
                   {PHX_OP_MATMUL, sim.device(), PHX_DTYPE_I8}};
  for (size_t n = 0; n < 5; ++n) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    ASSERT_EQ(phx_executable_describe_node(exe, n, &node), PHX_STATUS_OK);
    EXPECT_EQ(node.op, expected[n].op) << node.name;
    EXPECT_EQ(node.device, expected[n].device) << node.name;
    EXPECT_EQ(node.compute_dtype, expected[n].compute) << node.name;
  }

  // The NPU's two parts (before and after the CPU's node) give their figures in turn.
  phx_metric metrics[64];
  size_t count = 0;
  ASSERT_EQ(phx_executable_stats(exe, metrics, 64, &count), PHX_STATUS_OK);
  std::map<std::string, double> sums;
  for (size_t i = 0; i < count && i < 64; ++i) sums[metrics[i].name] += metrics[i].value;
  EXPECT_EQ(sums["quantized_int8_nodes"], 3);
  EXPECT_EQ(sums["quantized_int16_nodes"], 0);
  EXPECT_EQ(sums["f16_nodes"], 1);
  EXPECT_EQ(sums["quantized_weight_bytes"], kIn * kHidden + kHidden * kOut + kOut * kOut);

  // New data, which may pass the calibrated ranges (and saturate), against float64:
  // 3.9% of the largest output (calibration_error: 1.8%).
  const std::vector<float> x = gaussian(kRows * kIn, 200, 1.0f);
  Stream stream(sim.context(), sim.device());
  Tensor tx(sim.context(), sim.device(), PHX_DTYPE_F32, {kRows, kIn});
  Tensor ty(sim.context(), sim.device(), PHX_DTYPE_F32, {kRows, kOut});
  tx.upload(x);
  const phx_tensor inputs[1] = {tx.get()}, outputs[1] = {ty.get()};
  ASSERT_EQ(phx_executable_run(stream.get(), exe, inputs, 1, outputs, 1, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_stream_synchronize(stream.get()), PHX_STATUS_OK);
  const std::vector<float> y = ty.download<float>(kRows * kOut);
  const std::vector<double> want = mlp.reference(x);
  double largest = 0, error = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    largest = std::max(largest, std::fabs(want[i]));
    error = std::max(error, std::fabs(double(y[i]) - want[i]));
  }
  EXPECT_LT(error / largest, 0.06);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

// PHX_PLACEMENT_COST prices each node with npu-sim's graph_estimate (the timing model at
// the dtype it would compute in) against the CPU's: every node gets a prediction, and the
// executable, wherever it put the nodes, stays within the quantization error above.
TEST(NpuSimExecutable, TheCostPolicyPricesTheNodesWithTheTimingModel) {
  Sim sim("profile=mobile");
  const F32Mlp mlp;
  phx_graph graph = mlp.build(sim.context());
  Tensor sample(sim.context(), sim.cpu(), PHX_DTYPE_F32, {kRows, kIn});
  sample.upload(gaussian(kRows * kIn, 300, 1.0f));
  const phx_tensor samples[1] = {sample.get()};
  const size_t cpu = sim.cpu();
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = sim.device();
  options.other_devices = &cpu;
  options.other_device_count = 1;
  options.placement = PHX_PLACEMENT_COST;
  options.flags = PHX_COMPILE_DETERMINISTIC;
  options.calibration_inputs = samples;
  options.calibration_sample_count = 1;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(sim.context(), graph, &options, &exe), PHX_STATUS_OK)
      << phx_last_error();
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
  EXPECT_LT(info.calibration_error, 0.06);
  for (size_t n = 0; n < info.node_count; ++n) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    ASSERT_EQ(phx_executable_describe_node(exe, n, &node), PHX_STATUS_OK);
    EXPECT_GT(node.predicted_time_ns, 0u) << node.name;
    EXPECT_LT(node.predicted_time_ns, UINT64_MAX) << node.name;
  }
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

// npu-sim keeps nothing of its compile in a saved executable (no executable_serialize):
// a load compiles its parts again from the saved nodes and ranges, and, the quantization
// being deterministic, the loaded executable gives the same bits.
TEST(NpuSimExecutable, ASavedCalibratedExecutableLoadsWithTheSameBits) {
  Sim sim("profile=mobile");
  const F32Mlp mlp;
  phx_graph graph = mlp.build(sim.context());
  Tensor sample(sim.context(), sim.cpu(), PHX_DTYPE_F32, {kRows, kIn});
  sample.upload(gaussian(kRows * kIn, 400, 1.0f));
  const phx_tensor samples[1] = {sample.get()};
  const size_t cpu = sim.cpu();
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = sim.device();
  options.other_devices = &cpu;
  options.other_device_count = 1;
  options.calibration_inputs = samples;
  options.calibration_sample_count = 1;
  phx_executable compiled = nullptr, loaded = nullptr;
  ASSERT_EQ(phx_graph_compile(sim.context(), graph, &options, &compiled), PHX_STATUS_OK)
      << phx_last_error();
  size_t size = 0;
  ASSERT_EQ(phx_executable_save(compiled, nullptr, 0, &size), PHX_STATUS_OK) << phx_last_error();
  std::vector<unsigned char> bytes(size);
  ASSERT_EQ(phx_executable_save(compiled, bytes.data(), bytes.size(), &size), PHX_STATUS_OK);
  ASSERT_EQ(phx_executable_load(sim.context(), bytes.data(), bytes.size(), nullptr, &loaded),
            PHX_STATUS_OK)
      << phx_last_error();
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe(loaded, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.quantized_nodes, 3u);

  Stream stream(sim.context(), sim.device());
  Tensor x(sim.context(), sim.device(), PHX_DTYPE_F32, {kRows, kIn});
  x.upload(gaussian(kRows * kIn, 401, 1.0f));
  std::vector<float> results[2];
  for (int i = 0; i < 2; ++i) {
    Tensor y(sim.context(), sim.device(), PHX_DTYPE_F32, {kRows, kOut});
    const phx_tensor inputs[1] = {x.get()}, outputs[1] = {y.get()};
    ASSERT_EQ(phx_executable_run(stream.get(), i == 0 ? compiled : loaded, inputs, 1, outputs, 1,
                                 nullptr),
              PHX_STATUS_OK)
        << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream.get()), PHX_STATUS_OK);
    results[i] = y.download<float>(kRows * kOut);
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(phx_executable_destroy(loaded), PHX_STATUS_OK);
  EXPECT_EQ(phx_executable_destroy(compiled), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

}  // namespace
