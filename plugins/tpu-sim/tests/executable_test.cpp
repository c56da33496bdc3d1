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

// ---- the keys of ops ----------------------------------------------------------------------

using phx_test::plugin_tensor;
using phx_test::plugin_value;

// The key of op on x f32 [4, 6, 8] (and indices, for gather) into an f32 out of out_shape:
// the parameters alone tell apart two ops of these tensors.
std::string op_key(phx_op_id id, const void* params,
                   std::initializer_list<int64_t> out_shape = {4, 6, 8}) {
  static char buffer;
  const phx_plugin_tensor in[2] = {
      plugin_tensor(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {4, 6, 8}, "x"), &buffer),
      plugin_tensor(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_I32, {2}, "i"), &buffer)};
  const phx_plugin_tensor out =
      plugin_tensor(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_F32, out_shape, "y"), &buffer);
  phx_plugin_op op{};
  op.struct_size = sizeof op;
  op.op = id;
  op.params = params;
  op.inputs = in;
  op.input_count = id == PHX_OP_GATHER ? 2 : 1;
  op.outputs = &out;
  op.output_count = 1;
  return op_signature(op);
}

// Two slices of the same shapes that pick other elements are two programs; the same
// slice again is a hit.
TEST(OpSignature, SlicesApartByStartsEndsAndSteps) {
  phx_slice_params first = PHX_SLICE_PARAMS_INIT;
  first.ends[0] = 2;
  first.steps[0] = 1;  // x[0:2]
  phx_slice_params later = first;
  later.starts[0] = 2;
  later.ends[0] = 4;  // x[2:4]
  phx_slice_params strided = first;
  strided.ends[0] = 4;
  strided.steps[0] = 2;  // x[0:4:2]
  const phx_slice_params same = first;
  const std::string key = op_key(PHX_OP_SLICE, &first, {2, 6, 8});
  EXPECT_NE(op_key(PHX_OP_SLICE, &later, {2, 6, 8}), key);
  EXPECT_NE(op_key(PHX_OP_SLICE, &strided, {2, 6, 8}), key);
  CompileCache cache(4);
  EXPECT_FALSE(cache.lookup(key).hit);
  EXPECT_TRUE(cache.lookup(op_key(PHX_OP_SLICE, &same, {2, 6, 8})).hit);
  EXPECT_FALSE(cache.lookup(op_key(PHX_OP_SLICE, &later, {2, 6, 8})).hit);
}

TEST(OpSignature, PadsApartByModeValueAndSides) {
  phx_pad_params base = PHX_PAD_PARAMS_INIT;
  base.begin[2] = 1;  // [4, 6, 9]
  const std::string key = op_key(PHX_OP_PAD, &base, {4, 6, 9});
  phx_pad_params other = base;
  other.value = 1.0f;
  EXPECT_NE(op_key(PHX_OP_PAD, &other, {4, 6, 9}), key) << "value";
  other = base;
  other.mode = PHX_PAD_EDGE;
  EXPECT_NE(op_key(PHX_OP_PAD, &other, {4, 6, 9}), key) << "mode";
  other = base;
  other.begin[2] = 0;
  other.end[2] = 1;
  EXPECT_NE(op_key(PHX_OP_PAD, &other, {4, 6, 9}), key) << "side";
  other = base;
  EXPECT_EQ(op_key(PHX_OP_PAD, &other, {4, 6, 9}), key);
}

// x read as [N 4, C 6, L 8]: windows of 3 with one of padding, or with the padding at the
// end, give the same 8 outputs.
TEST(OpSignature, PoolsApartByEveryWindowParameter) {
  phx_pool_params base = PHX_POOL_PARAMS_INIT;
  base.kernel[0] = 3;
  base.pad_begin[0] = base.pad_end[0] = 1;
  const std::string key = op_key(PHX_OP_MAX_POOL, &base);
  EXPECT_NE(op_key(PHX_OP_AVG_POOL, &base), key) << "op";
  phx_pool_params other = base;
  other.pad_begin[0] = 0;
  other.pad_end[0] = 2;
  EXPECT_NE(op_key(PHX_OP_MAX_POOL, &other), key) << "padding";
  other = base;
  other.count_include_pad = 1;
  EXPECT_NE(op_key(PHX_OP_AVG_POOL, &other), op_key(PHX_OP_AVG_POOL, &base)) << "count_include_pad";
  other = base;
  other.ceil_mode = 1;
  EXPECT_NE(op_key(PHX_OP_MAX_POOL, &other), key) << "ceil_mode";
  other = base;
  EXPECT_EQ(op_key(PHX_OP_MAX_POOL, &other), key);
}

TEST(OpSignature, LayoutAndResizeOpsApartByTheirParameters) {
  phx_axis_params axis0 = PHX_AXIS_PARAMS_INIT, axis1 = PHX_AXIS_PARAMS_INIT;
  axis1.axis = -3;  // the same axis, spelled from the end: another program, no wrong one
  EXPECT_NE(op_key(PHX_OP_GATHER, &axis0, {2, 6, 8}), op_key(PHX_OP_GATHER, &axis1, {2, 6, 8}));
  phx_reshape_params to_48x4 = {sizeof(phx_reshape_params), 2, {48, 4}};
  phx_reshape_params to_inferred = {sizeof(phx_reshape_params), 2, {-1, 4}};
  EXPECT_NE(op_key(PHX_OP_RESHAPE, &to_48x4, {48, 4}),
            op_key(PHX_OP_RESHAPE, &to_inferred, {48, 4}));
  phx_tile_params twice = PHX_TILE_PARAMS_INIT, once = PHX_TILE_PARAMS_INIT;
  twice.repeats[2] = 2;
  EXPECT_NE(op_key(PHX_OP_TILE, &twice, {4, 6, 16}), op_key(PHX_OP_TILE, &once, {4, 6, 16}));
  phx_resize_params half_pixel = {sizeof(phx_resize_params),
                                  PHX_RESIZE_LINEAR,
                                  PHX_RESIZE_HALF_PIXEL,
                                  PHX_RESIZE_ROUND_PREFER_FLOOR,
                                  3,
                                  {4, 6, 16},
                                  {}};
  phx_resize_params corners = half_pixel;
  corners.coordinates = PHX_RESIZE_ALIGN_CORNERS;
  phx_resize_params scaled = half_pixel;
  scaled.scales[2] = 2.5f;
  const std::string key = op_key(PHX_OP_RESIZE, &half_pixel, {4, 6, 16});
  EXPECT_NE(op_key(PHX_OP_RESIZE, &corners, {4, 6, 16}), key);
  EXPECT_NE(op_key(PHX_OP_RESIZE, &scaled, {4, 6, 16}), key);
}

TEST(OpSignature, TransposedConvolutionsApartByPaddingAndOutputPadding) {
  static char buffer;
  const auto value = [](std::initializer_list<int64_t> shape) {
    return plugin_tensor(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_BF16, shape, "v"), &buffer);
  };
  // x [1, 2, 4, 4], w [2, 3, 3, 3]: stride 2 gives 9 + output_padding - padding rows.
  const phx_plugin_tensor in[2] = {value({1, 2, 4, 4}), value({2, 3, 3, 3})};
  const phx_plugin_tensor out = value({1, 3, 9, 9});
  phx_conv_transpose2d_params plain = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  plain.stride[0] = plain.stride[1] = 2;
  phx_conv_transpose2d_params shifted = plain;  // 9 + 1 - 1 rows, one later
  shifted.output_padding[0] = shifted.output_padding[1] = 1;
  shifted.padding[0] = shifted.padding[2] = 1;
  phx_plugin_op op{};
  op.struct_size = sizeof op;
  op.op = PHX_OP_CONV_TRANSPOSE2D;
  op.inputs = in;
  op.input_count = 2;
  op.outputs = &out;
  op.output_count = 1;
  op.params = &plain;
  const std::string key = op_signature(op);
  op.params = &shifted;
  EXPECT_NE(op_signature(op), key);
}

// ---- graphs -------------------------------------------------------------------------------

using TestGraph = phx_test::PluginGraph;

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
