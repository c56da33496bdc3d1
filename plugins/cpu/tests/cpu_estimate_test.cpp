// graph_estimate of the CPU plugin, its entry called directly (direct_plugin.h): a roofline
// at throughputs measured once (roofline.h), or at the nominal ones with
// PHX_PLUGIN_GRAPH_DETERMINISTIC. No timing is asserted: only what any throughputs give
// (more work takes longer) and, for the nominal figures, the exact roofline.
#include <gtest/gtest.h>

#include <cmath>

#include "direct_plugin.h"
#include "roofline.h"

namespace {

using phx_test::DirectPlugin;
using phx_test::plugin_value;
using phx_test::PluginGraph;

// f32 matmuls [s, s] . [s, s] of three sizes, then a matmul of i32, which has no kernel.
struct EstimateGraph {
  EstimateGraph() {
    for (int64_t s : {64, 256, 1024}) {
      const uint32_t a = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {s, s}, "a"));
      const uint32_t c = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_F32, {s, s}, "c"));
      g.node(PHX_OP_MATMUL, &matmul, {a, a, PHX_PLUGIN_NO_VALUE}, c, "matmul");
    }
    const uint32_t i = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_I32, {4, 4}, "i"));
    const uint32_t o = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_I32, {4, 4}, "o"));
    g.node(PHX_OP_MATMUL, &matmul, {i, i, PHX_PLUGIN_NO_VALUE}, o, "integer matmul");
  }
  phx_matmul_params matmul PHX_MATMUL_PARAMS_INIT;
  PluginGraph g;
};

TEST(CpuEstimate, BiggerMatmulsTakeLongerAndUnsupportedNodesNever) {
  DirectPlugin p(PHX_CPU_PLUGIN);
  ASSERT_TRUE(p.started());
  EstimateGraph e;
  const phx_plugin_graph graph = e.g.graph();
  uint64_t times[4] = {};
  ASSERT_EQ(p.api().graph_estimate(p.plugin(), 0, &graph, times), PHX_STATUS_OK) << p.take_error();
  EXPECT_GT(times[0], 0u);
  EXPECT_LT(times[0], times[1]);
  EXPECT_LT(times[1], times[2]);
  EXPECT_EQ(times[3], UINT64_MAX);
}

TEST(CpuEstimate, DeterministicEstimatesAreTheNominalRoofline) {
  DirectPlugin p(PHX_CPU_PLUGIN);
  ASSERT_TRUE(p.started());
  EstimateGraph e;
  phx_plugin_graph graph = e.g.graph();
  graph.flags = PHX_PLUGIN_GRAPH_DETERMINISTIC;
  uint64_t first[4] = {}, second[4] = {};
  ASSERT_EQ(p.api().graph_estimate(p.plugin(), 0, &graph, first), PHX_STATUS_OK);
  ASSERT_EQ(p.api().graph_estimate(p.plugin(), 0, &graph, second), PHX_STATUS_OK);
  for (int n = 0; n < 4; ++n) EXPECT_EQ(first[n], second[n]) << n;
  // 1024^3 * 2 flops at 100 flops/ns, 3 * 4 MiB at 20 bytes/ns, plus 2 us: compute-bound.
  EXPECT_EQ(first[2], uint64_t(std::ceil(2000.0 + 2.0 * 1024 * 1024 * 1024 / 100.0)));
  EXPECT_EQ(first[3], UINT64_MAX);
}

// The roofline's arithmetic on its own: the larger of the two times, plus the overhead.
TEST(Roofline, TakesTheBoundThatDominates) {
  const phx::plugin_common::Throughput t = {10.0, 2.0, 100.0};
  EXPECT_EQ(phx::plugin_common::roofline_time_ns({1000.0, 10}, t), 200u);  // compute
  EXPECT_EQ(phx::plugin_common::roofline_time_ns({10.0, 1000}, t), 600u);  // memory
}

TEST(Roofline, CountsAMatmulsFlopsAndBytes) {
  PluginGraph g;
  const uint32_t a = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_BF16, {2, 8, 32}, "a"));
  const uint32_t b = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_BF16, {32, 16}, "b"));
  const uint32_t c = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_F32, {2, 8, 16}, "c"));
  const phx_matmul_params params PHX_MATMUL_PARAMS_INIT;
  g.node(PHX_OP_MATMUL, &params, {a, b, PHX_PLUGIN_NO_VALUE}, c, "mm");
  const phx_plugin_graph graph = g.graph();
  const phx::OpCounts work = phx::plugin_common::node_work(graph, graph.nodes[0]);
  EXPECT_EQ(work.flops, 2.0 * 32 * (2 * 8 * 16));
  EXPECT_EQ(work.bytes, 2u * (2 * 8 * 32) + 2u * (32 * 16) + 4u * (2 * 8 * 16));
}

}  // namespace
