// The compile cache (LRU order, the keys of ops and graphs) and the executables' model
// (executable.h): what a graph's signature depends on, what a compiled graph costs, and
// how a node is bound to a run's tensors, without any plugin.
#include "executable.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compile_cache.h"
#include "config.h"
#include "op_cost.h"
#include "plugin_graph.h"

namespace phx::tpu_sim {
namespace {

// ---- the compile cache --------------------------------------------------------------------

TEST(CompileCache, EvictsTheLeastRecentlyUsedProgram) {
  CompileCache cache(2);
  EXPECT_FALSE(cache.lookup("a").hit);
  EXPECT_FALSE(cache.lookup("b").hit);
  EXPECT_TRUE(cache.lookup("a").hit);  // recency: a, b
  const CompileCache::Lookup c = cache.lookup("c");
  EXPECT_FALSE(c.hit);
  EXPECT_TRUE(c.evicted);              // b was the least recently used
  EXPECT_TRUE(cache.lookup("a").hit);  // recency: a, c
  EXPECT_FALSE(cache.lookup("b").hit);
  EXPECT_TRUE(cache.lookup("a").hit);  // c went out for b
  const CompileCache::Lookup again = cache.lookup("c");
  EXPECT_FALSE(again.hit);
  EXPECT_TRUE(again.evicted);
}

TEST(CompileCache, AMissIntoRoomEvictsNothing) {
  CompileCache cache(3);
  for (const char* key : {"a", "b", "c"}) EXPECT_FALSE(cache.lookup(key).evicted) << key;
  EXPECT_TRUE(cache.lookup("d").evicted);
}

// ---- graphs -------------------------------------------------------------------------------

using TestGraph = phx_test::PluginGraph;
using phx_test::plugin_tensor;
using phx_test::plugin_value;

// x [m, 256] . w [256, 128] + bias, relu (one fused matmul node) -> h; softmax(h) -> y.
struct DenseSoftmax {
  explicit DenseSoftmax(int64_t m = 64, const char* suffix = "") {
    names = {std::string("x") + suffix, std::string("w") + suffix, std::string("dense") + suffix};
    x = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_BF16, {m, 256}, names[0].c_str()));
    w = g.add(
        plugin_value(PHX_PLUGIN_VALUE_CONSTANT, PHX_DTYPE_BF16, {256, 128}, names[1].c_str()));
    bias = g.add(plugin_value(PHX_PLUGIN_VALUE_CONSTANT, PHX_DTYPE_BF16, {128}, "bias"));
    h = g.add(plugin_value(PHX_PLUGIN_VALUE_INTERMEDIATE, PHX_DTYPE_BF16, {m, 128}, "h"));
    y = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_BF16, {m, 128}, "y"));
    matmul.activation = PHX_ACTIVATION_RELU;
    g.node(PHX_OP_MATMUL, &matmul, {x, w, bias}, h, names[2].c_str());
    g.node(PHX_OP_SOFTMAX, &softmax, {h}, y, "softmax");
  }
  std::vector<std::string> names;
  phx_matmul_params matmul PHX_MATMUL_PARAMS_INIT;
  phx_softmax_params softmax PHX_SOFTMAX_PARAMS_INIT;
  TestGraph g;
  uint32_t x, w, bias, h, y;
};

TEST(GraphSignature, NamesAndConstantBuffersAreNoPartOfIt) {
  DenseSoftmax a(64, ""), b(64, " (renamed)");
  char buffer;
  b.g.value_at(b.w).tensor.buffer = &buffer;
  EXPECT_EQ(graph_signature(a.g.graph()), graph_signature(b.g.graph()));
}

TEST(GraphSignature, ShapesParamsKindsFlagsAndWiringAreParts) {
  const std::string base = graph_signature(DenseSoftmax().g.graph());
  EXPECT_NE(graph_signature(DenseSoftmax(32).g.graph()), base) << "shape";
  {
    DenseSoftmax other;
    other.matmul.transpose_b = 1;  // a real graph would then have w [128, 256]: params alone
    EXPECT_NE(graph_signature(other.g.graph()), base) << "matmul params";
  }
  {
    DenseSoftmax other;
    other.matmul.activation = PHX_ACTIVATION_GELU;
    EXPECT_NE(graph_signature(other.g.graph()), base) << "activation";
  }
  {
    DenseSoftmax other;
    other.g.value_at(other.bias).kind = PHX_PLUGIN_VALUE_INPUT;
    EXPECT_NE(graph_signature(other.g.graph()), base) << "kind";
  }
  {
    DenseSoftmax other;
    other.g.value_at(other.w).flags = PHX_PLUGIN_VALUE_CONTENTS_FIXED;
    EXPECT_NE(graph_signature(other.g.graph()), base) << "flags";
  }
  {
    DenseSoftmax other;  // the same values, the softmax reading the bias's slot instead
    TestGraph rewired;
    for (uint32_t i = 0; i <= other.y; ++i) rewired.add(other.g.value_at(i));
    rewired.node(PHX_OP_MATMUL, &other.matmul, {other.x, other.w, PHX_PLUGIN_NO_VALUE}, other.h,
                 "dense");
    rewired.node(PHX_OP_SOFTMAX, &other.softmax, {other.h}, other.y, "softmax");
    EXPECT_NE(graph_signature(rewired.graph()), base) << "wiring";
  }
}

SimConfig v5e() {
  SimConfig cfg;
  std::string error;
  EXPECT_TRUE(parse_config({}, cfg, error)) << error;
  return cfg;
}

// The executable's figures are those of the eager ops: the fused matmul priced as one
// matmul with its bias and activation (no vector work: its epilogue is fused), the
// softmax as vector work.
TEST(Executable, CostsTheSumOfItsNodesOps) {
  DenseSoftmax d;
  const SimConfig config = v5e();
  std::string error;
  const auto executable = build_executable(d.g.graph(), 0, config, error);
  ASSERT_NE(executable, nullptr) << error;
  ASSERT_EQ(executable->nodes.size(), 2u);
  EXPECT_EQ(executable->value_count, 5u);

  char data;  // present, never read
  phx_plugin_tensor t[5];
  for (uint32_t i = 0; i < 5; ++i) t[i] = plugin_tensor(d.g.value_at(i), &data);
  phx_plugin_op matmul{sizeof(phx_plugin_op), PHX_OP_MATMUL, &d.matmul, t, 3, &t[d.h], 1, nullptr};
  phx_plugin_op softmax{
      sizeof(phx_plugin_op), PHX_OP_SOFTMAX, &d.softmax, &t[d.h], 1, &t[d.y], 1, nullptr};
  const OpCost mm = cost_op(matmul, config), sm = cost_op(softmax, config);
  EXPECT_TRUE(mm.uses_mxu);
  EXPECT_EQ(mm.vector_cycles, 0u);
  EXPECT_EQ(mm.hbm_bytes, 64u * 256 * 2 + 256 * 128 * 2 + 128 * 2 + 64 * 128 * 2);
  EXPECT_EQ(executable->nodes[0].cost.estimated_time_ns, mm.estimated_time_ns);
  EXPECT_EQ(executable->nodes[1].cost.estimated_time_ns, sm.estimated_time_ns);

  const RunCost& run = executable->run_cost;
  EXPECT_EQ(run.mxu_nodes, 1u);
  EXPECT_EQ(run.mxu_cycles, mm.mxu.cycles);
  EXPECT_EQ(run.vector_cycles, sm.vector_cycles);
  EXPECT_EQ(run.hbm_bytes, mm.hbm_bytes + sm.hbm_bytes);
  EXPECT_EQ(run.modelled_time_ns, mm.estimated_time_ns + sm.estimated_time_ns);
  // One MXU program and one vector program.
  EXPECT_EQ(modelled_program_compile_time_ns(*executable),
            modelled_compile_time_ns(true) + modelled_compile_time_ns(false));
}

TEST(Executable, BindsANodeToTheRunsTensorsWithItsOwnParams) {
  auto d = std::make_unique<DenseSoftmax>();
  std::string error;
  const auto executable = build_executable(d->g.graph(), 0, v5e(), error);
  ASSERT_NE(executable, nullptr) << error;
  std::vector<phx_plugin_value> values;
  for (uint32_t i = 0; i < 5; ++i) values.push_back(d->g.value_at(i));
  d.reset();  // the graph's params and wiring are gone: the executable copied them

  char buffers[5];
  std::vector<phx_plugin_tensor> run(5);
  for (uint32_t i = 0; i < 5; ++i) run[i] = plugin_tensor(values[i], &buffers[i]);
  const BoundNode dense(executable->nodes[0], run.data());
  const phx_plugin_op& op = dense.op();
  EXPECT_EQ(op.op, PHX_OP_MATMUL);
  ASSERT_EQ(op.input_count, 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(op.inputs[i].buffer, &buffers[i]) << i;
  EXPECT_EQ(op.outputs[0].buffer, &buffers[3]);
  ASSERT_NE(op.params, nullptr);
  EXPECT_EQ(static_cast<const phx_matmul_params*>(op.params)->activation, PHX_ACTIVATION_RELU);
  EXPECT_EQ(op.profile, nullptr);
}

TEST(Executable, AnAbsentInputIsBoundAsANullBuffer) {
  TestGraph g;
  const uint32_t a = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {4, 8}, "a"));
  const uint32_t b = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {8, 2}, "b"));
  const uint32_t c = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_F32, {4, 2}, "c"));
  const phx_matmul_params params PHX_MATMUL_PARAMS_INIT;
  g.node(PHX_OP_MATMUL, &params, {a, b, PHX_PLUGIN_NO_VALUE}, c, "mm");
  std::string error;
  const auto executable = build_executable(g.graph(), 0, v5e(), error);
  ASSERT_NE(executable, nullptr) << error;
  // No bias: the HBM bytes are a's, b's and c's only.
  EXPECT_EQ(executable->run_cost.hbm_bytes, (32u + 16u + 8u) * 4u);
  char buffers[3];
  phx_plugin_tensor run[3];
  for (uint32_t i = 0; i < 3; ++i) run[i] = plugin_tensor(g.value_at(i), &buffers[i]);
  const BoundNode bound(executable->nodes[0], run);
  ASSERT_EQ(bound.op().input_count, 3u);
  EXPECT_EQ(bound.op().inputs[2].buffer, nullptr);
}

TEST(Executable, ANodeNoClaimedOpMatchesIsRefusedByName) {
  TestGraph g;
  const uint32_t a = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {4}, "a"));
  const uint32_t q = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_I8, {4}, "q"));
  const phx_quantize_params params PHX_QUANTIZE_PARAMS_INIT;
  g.node(PHX_OP_QUANTIZE, &params, {a, a, a}, q, "quantize 0");
  std::string error;
  EXPECT_EQ(build_executable(g.graph(), 0, v5e(), error), nullptr);
  EXPECT_NE(error.find("'quantize 0'"), std::string::npos) << error;
}

}  // namespace
}  // namespace phx::tpu_sim
