// npu-sim's executables through the host (phx_graph_compile) without calibration: an f16
// MLP that the NPU runs natively is compiled as one part of its device, its nodes report
// the dtypes they compute in, the part gives its figures, and a run gives the bits of
// the same ops run eagerly on the NPU.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstdint>
#include <map>
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

}  // namespace
