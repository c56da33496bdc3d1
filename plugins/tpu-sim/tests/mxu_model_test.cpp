// The timing model against cycle counts worked out by hand from the formulas of
// mxu_model.h (R x C arrays, f = ceil(folds / MXUs), T = M):
//   scalesim: f * (2R + C + T - 2) - 1
//   overlap:  max(f * max(T, R) + 2R + C - 3, ceil(M*N*K*batch / (R*C*MXUs)))
// and the op costs built on it (lowering of conv2d, HBM bytes, time).
#include "mxu_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "config.h"
#include "op_cost.h"

namespace phx::tpu_sim {
namespace {

constexpr MxuLayout kOne128{128, 128, 1};
constexpr MxuLayout kFour128{128, 128, 4};  // v5e
constexpr MxuLayout kFour256{256, 256, 4};  // v6e

TEST(MxuModel, OneFoldIsTheSameInBothModes) {
  // 128^3 on one 128x128 MXU: folds = ceil(128/128) * ceil(128/128) = 1.
  //   scalesim: 1 * (256 + 128 + 128 - 2) - 1 = 509
  //   overlap:  1 * max(128, 128) + 256 + 128 - 3 = 509 (MAC bound 128^3 / 128^2 = 128)
  const GemmShape s{128, 128, 128};
  const MxuEstimate scalesim = estimate_gemm(s, kOne128, TimingMode::kScaleSim);
  const MxuEstimate overlap = estimate_gemm(s, kOne128, TimingMode::kOverlap);
  EXPECT_EQ(scalesim.folds, 1u);
  EXPECT_EQ(scalesim.cycles, 509u);
  EXPECT_EQ(overlap.cycles, 509u);
  EXPECT_DOUBLE_EQ(scalesim.utilization, 128.0 / 509.0);  // 128^3 / (509 * 128^2)
  EXPECT_DOUBLE_EQ(scalesim.mapping_efficiency, 1.0);
  EXPECT_DOUBLE_EQ(scalesim.padding_waste, 0.0);
}

TEST(MxuModel, SquareGemmSpreadOverFourMxus) {
  // 1024^3 on v5e (4 x 128x128): folds = 8 * 8 = 64, f = 64 / 4 = 16, T = 1024.
  //   scalesim: 16 * (256 + 128 + 1024 - 2) - 1 = 16 * 1406 - 1 = 22495
  //   overlap:  16 * 1024 + 256 + 128 - 3 = 16765; MAC bound 2^30 / 2^16 = 16384
  const GemmShape s{1024, 1024, 1024};
  const MxuEstimate scalesim = estimate_gemm(s, kFour128, TimingMode::kScaleSim);
  const MxuEstimate overlap = estimate_gemm(s, kFour128, TimingMode::kOverlap);
  EXPECT_EQ(scalesim.folds, 64u);
  EXPECT_EQ(scalesim.folds_per_mxu, 16u);
  EXPECT_EQ(scalesim.cycles, 22495u);
  EXPECT_EQ(overlap.cycles, 16765u);
  EXPECT_DOUBLE_EQ(overlap.utilization, 16384.0 / 16765.0);
}

TEST(MxuModel, DimensionsThatAreNotMultiplesOfTheArray) {
  // M = 100, K = 200, N = 300 on one 128x128 MXU: folds = ceil(200/128) * ceil(300/128)
  // = 2 * 3 = 6, T = 100.
  //   scalesim: 6 * (256 + 128 + 100 - 2) - 1 = 6 * 482 - 1 = 2891
  //   overlap:  6 * max(100, 128) + 381 = 768 + 381 = 1149; MAC bound
  //             ceil(100 * 300 * 200 / 16384) = ceil(366.2) = 367
  //   mapping efficiency: 200 * 300 / (256 * 384) = 60000 / 98304
  const GemmShape s{100, 300, 200};
  const MxuEstimate scalesim = estimate_gemm(s, kOne128, TimingMode::kScaleSim);
  const MxuEstimate overlap = estimate_gemm(s, kOne128, TimingMode::kOverlap);
  EXPECT_EQ(scalesim.folds, 6u);
  EXPECT_EQ(scalesim.cycles, 2891u);
  EXPECT_EQ(overlap.cycles, 1149u);
  EXPECT_DOUBLE_EQ(overlap.mapping_efficiency, 60000.0 / 98304.0);
  EXPECT_DOUBLE_EQ(overlap.padding_waste, 1.0 - 60000.0 / 98304.0);
  EXPECT_DOUBLE_EQ(overlap.utilization, 6000000.0 / (1149.0 * 16384.0));
}

TEST(MxuModel, MatrixVectorProducts) {
  // x [1 x 4096] . W [4096 x 4096] on v5e: T = 1, folds = 32 * 32 = 1024, f = 256.
  //   scalesim: 256 * (256 + 128 + 1 - 2) - 1 = 256 * 383 - 1 = 98047
  //   overlap:  256 * max(1, 128) + 381 = 32768 + 381 = 33149 (each fold waits for its
  //             128-cycle weight load: one streamed row cannot hide it)
  const GemmShape row{1, 4096, 4096};
  EXPECT_EQ(estimate_gemm(row, kFour128, TimingMode::kScaleSim).cycles, 98047u);
  const MxuEstimate overlap = estimate_gemm(row, kFour128, TimingMode::kOverlap);
  EXPECT_EQ(overlap.cycles, 33149u);
  EXPECT_DOUBLE_EQ(overlap.utilization, 4096.0 * 4096.0 / (33149.0 * 65536.0));

  // A [512 x 256] . v [256 x 1] on one MXU: T = 512, folds = 2 * 1 = 2, one column of
  // 128 used: mapping efficiency 256 * 1 / (256 * 128) = 1/128.
  //   scalesim: 2 * (256 + 128 + 512 - 2) - 1 = 2 * 894 - 1 = 1787
  //   overlap:  2 * 512 + 381 = 1405
  const GemmShape column{512, 1, 256};
  EXPECT_EQ(estimate_gemm(column, kOne128, TimingMode::kScaleSim).cycles, 1787u);
  const MxuEstimate col_overlap = estimate_gemm(column, kOne128, TimingMode::kOverlap);
  EXPECT_EQ(col_overlap.cycles, 1405u);
  EXPECT_DOUBLE_EQ(col_overlap.mapping_efficiency, 1.0 / 128.0);
}

TEST(MxuModel, TwoHundredFiftySixSquareArrays) {
  // 512^3 on v6e (4 x 256x256): folds = 2 * 2 = 4, f = 1, T = 512.
  //   scalesim: 1 * (512 + 256 + 512 - 2) - 1 = 1277
  //   overlap:  1 * 512 + 512 + 256 - 3 = 1277; MAC bound 2^27 / 2^18 = 512
  const GemmShape s{512, 512, 512};
  EXPECT_EQ(estimate_gemm(s, kFour256, TimingMode::kScaleSim).cycles, 1277u);
  EXPECT_EQ(estimate_gemm(s, kFour256, TimingMode::kOverlap).cycles, 1277u);
}

TEST(MxuModel, BatchMultipliesTheFolds) {
  // 3 x (64 x 128 . 128 x 128) on one MXU: folds = 3 * 1 * 1 = 3, T = 64.
  //   scalesim: 3 * (256 + 128 + 64 - 2) - 1 = 3 * 446 - 1 = 1337
  //   overlap:  3 * max(64, 128) + 381 = 765
  const GemmShape s{64, 128, 128, 3};
  EXPECT_EQ(estimate_gemm(s, kOne128, TimingMode::kScaleSim).cycles, 1337u);
  EXPECT_EQ(estimate_gemm(s, kOne128, TimingMode::kOverlap).cycles, 765u);
}

TEST(MxuModel, OverlapNeverBelowTheMacBoundNorAboveScaleSimWhenStreamsAreLong) {
  // overlap - scalesim = (f - 1)(2R + C - 2) >= 0 when T >= R, and f * T >= the MACs
  // per array: both hold for any shape; checked over a sweep.
  for (uint64_t m : {1u, 7u, 128u, 129u, 1000u})
    for (uint64_t n : {1u, 100u, 128u, 513u})
      for (uint64_t k : {1u, 127u, 256u, 999u})
        for (const MxuLayout& mxu : {kOne128, kFour128, kFour256}) {
          const GemmShape s{m, n, k, 2};
          const MxuEstimate o = estimate_gemm(s, mxu, TimingMode::kOverlap);
          const MxuEstimate sc = estimate_gemm(s, mxu, TimingMode::kScaleSim);
          const uint64_t per_array = mxu.rows * mxu.cols * mxu.count;
          EXPECT_GE(o.cycles, (m * n * k * 2 + per_array - 1) / per_array);
          EXPECT_LE(o.utilization, 1.0);
          if (m >= mxu.rows) {
            EXPECT_LE(o.cycles, sc.cycles) << m << "x" << n << "x" << k;
          }
        }
}

TEST(MxuModel, EmptyShapeCostsNothing) {
  EXPECT_EQ(estimate_gemm(GemmShape{0, 4, 4}, kOne128, TimingMode::kOverlap).cycles, 0u);
}

// ---- op costs --------------------------------------------------------------------------

phx_plugin_tensor tensor(phx_dtype dtype, std::initializer_list<int64_t> shape) {
  static char dummy;  // present (non-null), never read
  phx_plugin_tensor t{};
  t.struct_size = sizeof t;
  t.buffer = &dummy;
  t.dtype = dtype;
  t.rank = static_cast<uint32_t>(shape.size());
  for (int64_t& d : t.shape) d = 1;
  int i = 0;
  for (int64_t d : shape) t.shape[i++] = d;
  return t;
}

phx_plugin_op make_op(phx_op_id id, const void* params, const phx_plugin_tensor* in, size_t n,
                      const phx_plugin_tensor* out) {
  phx_plugin_op op{};
  op.struct_size = sizeof op;
  op.op = id;
  op.params = params;
  op.inputs = in;
  op.input_count = n;
  op.outputs = out;
  op.output_count = 1;
  return op;
}

SimConfig v5e() {
  SimConfig cfg;
  std::string error;
  EXPECT_TRUE(parse_config({}, cfg, error)) << error;
  return cfg;
}

TEST(OpCost, MatmulTimeIsTheLargerOfComputeAndHbmPlusOverhead) {
  // bf16 [1024 x 1024] . bf16 [1024 x 1024] -> f32 on v5e:
  //   HBM: 2 * 1024^2 * 2 + 1024^2 * 4 = 8388608 bytes / 819 GB/s = 10242.49 ns
  //   MXU: 16765 cycles (above) / (197e3 / (2 * 4 * 128^2) = 1.50299 GHz) = 11154.4 ns
  //   compute-bound: 11154.4 + 1000 ns launch overhead.
  const phx_plugin_tensor in[2] = {tensor(PHX_DTYPE_BF16, {1024, 1024}),
                                   tensor(PHX_DTYPE_BF16, {1024, 1024})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_F32, {1024, 1024});
  const phx_matmul_params params PHX_MATMUL_PARAMS_INIT;
  const OpCost cost = cost_op(make_op(PHX_OP_MATMUL, &params, in, 2, &out), v5e());
  const double clock_ghz = 197e3 / (2.0 * 4 * 128 * 128);
  EXPECT_TRUE(cost.uses_mxu);
  EXPECT_EQ(cost.mxu.cycles, 16765u);
  EXPECT_EQ(cost.hbm_bytes, 8388608u);
  EXPECT_DOUBLE_EQ(cost.hbm_time_ns, 8388608.0 / 819.0);
  EXPECT_DOUBLE_EQ(cost.compute_time_ns, 16765.0 / clock_ghz);
  EXPECT_FALSE(cost.memory_bound);
  EXPECT_DOUBLE_EQ(cost.estimated_time_ns, 16765.0 / clock_ghz + 1000.0);
}

// The precision's bf16 passes are GEMMs of the same shape run one after another: f32
// [1024 x 1024] . [1024 x 1024] on v5e (overlap) has 64 folds, f = 16 per MXU and
// pass, T = 1024: f * passes * 1024 + 2R + C - 3 = 16384 * passes + 381 cycles (above the
// MAC bound 16384 * passes). bf16 inputs take one pass whatever the precision.
TEST(OpCost, MxuCyclesScaleWithThePrecisionsPasses) {
  const phx_plugin_tensor f32_in[2] = {tensor(PHX_DTYPE_F32, {1024, 1024}),
                                       tensor(PHX_DTYPE_F32, {1024, 1024})};
  const phx_plugin_tensor bf16_in[2] = {tensor(PHX_DTYPE_BF16, {1024, 1024}),
                                        tensor(PHX_DTYPE_BF16, {1024, 1024})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_F32, {1024, 1024});
  const phx_matmul_params params PHX_MATMUL_PARAMS_INIT;
  struct Expected {
    Precision precision;
    uint32_t passes;
  };
  for (const Expected& e : {Expected{Precision::kDefault, 1}, Expected{Precision::kHigh, 3},
                            Expected{Precision::kHighest, 6}}) {
    SimConfig cfg = v5e();
    cfg.precision = e.precision;
    const OpCost cost = cost_op(make_op(PHX_OP_MATMUL, &params, f32_in, 2, &out), cfg);
    EXPECT_EQ(cost.mxu_passes, e.passes);
    EXPECT_EQ(cost.mxu.folds, 64u * e.passes);
    EXPECT_EQ(cost.mxu.cycles, 16384u * e.passes + 381u);
    const OpCost bf16 = cost_op(make_op(PHX_OP_MATMUL, &params, bf16_in, 2, &out), cfg);
    EXPECT_EQ(bf16.mxu_passes, 1u);
    EXPECT_EQ(bf16.mxu.cycles, 16765u);
  }
  EXPECT_EQ(mxu_passes(Precision::kHigh, PHX_DTYPE_F16), 3u);  // f16 is widened to f32
}

TEST(OpCost, BatchedMatmulAndConvolutionsLowerToGemms) {
  // matmul [4, 2, 64, 32] . [32, 16]: M = 64, N = 16, K = 32, batch = 4 * 2.
  const phx_plugin_tensor mm_in[2] = {tensor(PHX_DTYPE_F32, {4, 2, 64, 32}),
                                      tensor(PHX_DTYPE_F32, {32, 16})};
  const phx_plugin_tensor mm_out = tensor(PHX_DTYPE_F32, {4, 2, 64, 16});
  const phx_matmul_params mm PHX_MATMUL_PARAMS_INIT;
  const auto g = lowered_gemm(make_op(PHX_OP_MATMUL, &mm, mm_in, 2, &mm_out));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->m, 64u);
  EXPECT_EQ(g->n, 16u);
  EXPECT_EQ(g->k, 32u);
  EXPECT_EQ(g->batch, 8u);

  // conv NCHW x [2, 64, 16, 16], w [128, 64, 3, 3], pad 1 -> [2, 128, 16, 16]:
  //   M = 2 * 16 * 16 = 512, K = 64 * 3 * 3 = 576, N = 128, batch (groups) = 1.
  phx_conv2d_params conv PHX_CONV2D_PARAMS_INIT;
  conv.padding[0] = conv.padding[1] = conv.padding[2] = conv.padding[3] = 1;
  const phx_plugin_tensor c_in[2] = {tensor(PHX_DTYPE_F32, {2, 64, 16, 16}),
                                     tensor(PHX_DTYPE_F32, {128, 64, 3, 3})};
  const phx_plugin_tensor c_out = tensor(PHX_DTYPE_F32, {2, 128, 16, 16});
  const auto cg = lowered_gemm(make_op(PHX_OP_CONV2D, &conv, c_in, 2, &c_out));
  ASSERT_TRUE(cg.has_value());
  EXPECT_EQ(cg->m, 512u);
  EXPECT_EQ(cg->k, 576u);
  EXPECT_EQ(cg->n, 128u);
  EXPECT_EQ(cg->batch, 1u);

  // depthwise NHWC x [1, 8, 8, 32], w [32, 3, 3, 1], groups 32 -> [1, 6, 6, 32]:
  //   M = 36, K = 1 * 3 * 3 = 9, N = 32 / 32 = 1, batch = 32.
  phx_conv2d_params dw PHX_CONV2D_PARAMS_INIT;
  dw.layout = PHX_LAYOUT_NHWC;
  dw.groups = 32;
  const phx_plugin_tensor d_in[2] = {tensor(PHX_DTYPE_F32, {1, 8, 8, 32}),
                                     tensor(PHX_DTYPE_F32, {32, 3, 3, 1})};
  const phx_plugin_tensor d_out = tensor(PHX_DTYPE_F32, {1, 6, 6, 32});
  const auto dg = lowered_gemm(make_op(PHX_OP_CONV2D, &dw, d_in, 2, &d_out));
  ASSERT_TRUE(dg.has_value());
  EXPECT_EQ(dg->m, 36u);
  EXPECT_EQ(dg->k, 9u);
  EXPECT_EQ(dg->n, 1u);
  EXPECT_EQ(dg->batch, 32u);
}

// bf16 attention q [2, 4, 256, 128], k and v [2, 4, 512, 128] on v5e (overlap):
//   scores q k^T: M = 256, N = 512, K = 128, batch 8: folds 8 * 1 * 4 = 32, f = 8,
//     8 * max(256, 128) + 381 = 2429 cycles (MAC bound 256*512*128*8 / 65536 = 2048);
//   values p v: M = 256, N = 128, K = 512, batch 8: folds 8 * 4 * 1 = 32, f = 8: 2429.
//   softmax: 8 * 256 * 512 scores * 18 ops / 1024 lanes = 18432 vector cycles.
//   HBM: q and out 524288 bytes each, k and v 1048576 each.
TEST(OpCost, AttentionIsTwoMxuProductsAndASoftmaxOnTheVectorUnit) {
  const phx_plugin_tensor in[3] = {tensor(PHX_DTYPE_BF16, {2, 4, 256, 128}),
                                   tensor(PHX_DTYPE_BF16, {2, 4, 512, 128}),
                                   tensor(PHX_DTYPE_BF16, {2, 4, 512, 128})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_BF16, {2, 4, 256, 128});
  const phx_attention_params params PHX_ATTENTION_PARAMS_INIT;
  const phx_plugin_op op = make_op(PHX_OP_ATTENTION, &params, in, 3, &out);
  const AttentionGemms g = attention_gemms(op);
  EXPECT_EQ(g.scores.m, 256u);
  EXPECT_EQ(g.scores.n, 512u);
  EXPECT_EQ(g.scores.k, 128u);
  EXPECT_EQ(g.values.n, 128u);
  EXPECT_EQ(g.values.k, 512u);
  EXPECT_EQ(g.values.batch, 8u);
  SimConfig cfg = v5e();
  cfg.precision = Precision::kHigh;  // bf16 inputs: one pass whatever the precision
  const OpCost cost = cost_op(op, cfg);
  EXPECT_TRUE(cost.uses_mxu);
  EXPECT_EQ(cost.mxu_passes, 1u);
  EXPECT_EQ(cost.mxu.folds, 64u);
  EXPECT_EQ(cost.mxu.cycles, 2u * 2429u);
  EXPECT_EQ(cost.vector_cycles, 18432u);
  EXPECT_DOUBLE_EQ(cost.mxu.mapping_efficiency, 1.0);
  EXPECT_DOUBLE_EQ(cost.mxu.utilization, 2.0 * 256 * 512 * 128 * 8 / (2 * 2429.0 * 65536));
  EXPECT_EQ(cost.hbm_bytes, 2u * 524288u + 2u * 1048576u);
  const double clock_ghz = 197e3 / (2.0 * 4 * 128 * 128);
  EXPECT_DOUBLE_EQ(cost.compute_time_ns, (2 * 2429.0 + 18432.0) / clock_ghz);
}

// rope on the vector unit: x bf16 [4, 128, 64]: 32768 elements * 3 ops / 1024 = 96 cycles.
TEST(OpCost, RopeRunsOnTheVectorUnit) {
  const phx_plugin_tensor in[3] = {tensor(PHX_DTYPE_BF16, {4, 128, 64}),
                                   tensor(PHX_DTYPE_F32, {128, 32}),
                                   tensor(PHX_DTYPE_F32, {128, 32})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_BF16, {4, 128, 64});
  const phx_rope_params params PHX_ROPE_PARAMS_INIT;
  const OpCost cost = cost_op(make_op(PHX_OP_ROPE, &params, in, 3, &out), v5e());
  EXPECT_FALSE(cost.uses_mxu);
  EXPECT_EQ(cost.vector_cycles, 96u);
  EXPECT_EQ(cost.hbm_bytes, 2u * 65536u + 2u * 16384u);
}

TEST(OpCost, ElementwiseOpsRunOnTheVectorUnitAndAreMemoryBound) {
  // add of two f32 [1024 x 1024] on v5e (1 TensorCore, 1024 lanes): 2^20 elements * 1
  // op / 1024 = 1024 cycles = 681.3 ns; HBM 3 * 4 MiB = 12582912 bytes / 819 = 15363.7 ns.
  const phx_plugin_tensor in[2] = {tensor(PHX_DTYPE_F32, {1024, 1024}),
                                   tensor(PHX_DTYPE_F32, {1024, 1024})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_F32, {1024, 1024});
  const OpCost cost = cost_op(make_op(PHX_OP_ADD, nullptr, in, 2, &out), v5e());
  EXPECT_FALSE(cost.uses_mxu);
  EXPECT_EQ(cost.mxu.cycles, 0u);
  EXPECT_EQ(cost.vector_cycles, 1024u);
  EXPECT_EQ(cost.hbm_bytes, 12582912u);
  EXPECT_TRUE(cost.memory_bound);
  EXPECT_DOUBLE_EQ(cost.estimated_time_ns, 12582912.0 / 819.0 + 1000.0);
}

// The data-movement ops stream through the vector unit at one operation per element and
// are HBM-bound: a slice of half of f32 [1024 x 1024] reads the 2 MiB it picks and writes
// them: 4194304 bytes / 819 GB/s + the 1000 ns overhead.
TEST(OpCost, DataMovementIsHbmBoundAndPricedByTheBytesItMoves) {
  const phx_plugin_tensor x = tensor(PHX_DTYPE_F32, {1024, 1024});
  const phx_plugin_tensor half = tensor(PHX_DTYPE_F32, {512, 1024});
  phx_slice_params slice = PHX_SLICE_PARAMS_INIT;
  slice.ends[0] = 512;
  slice.steps[0] = 1;
  const OpCost cost = cost_op(make_op(PHX_OP_SLICE, &slice, &x, 1, &half), v5e());
  EXPECT_FALSE(cost.uses_mxu);
  EXPECT_EQ(cost.hbm_bytes, 4194304u);
  EXPECT_EQ(cost.vector_cycles, 512u);  // the 2^19 elements it picks, one operation each
  EXPECT_TRUE(cost.memory_bound);
  EXPECT_DOUBLE_EQ(cost.estimated_time_ns, 4194304.0 / 819.0 + 1000.0);
  // gather: 16 rows of 256 f32 from a 1000-row table read 16 KiB and the indices.
  const phx_plugin_tensor table[2] = {tensor(PHX_DTYPE_F32, {1000, 256}),
                                      tensor(PHX_DTYPE_I32, {16})};
  const phx_plugin_tensor rows = tensor(PHX_DTYPE_F32, {16, 256});
  const phx_axis_params axis = PHX_AXIS_PARAMS_INIT;
  const OpCost gather = cost_op(make_op(PHX_OP_GATHER, &axis, table, 2, &rows), v5e());
  EXPECT_EQ(gather.hbm_bytes, 2u * 16384u + 64u);
  EXPECT_EQ(gather.vector_cycles, 4u);  // its 4096 outputs, not the table's 256000 elements
  // Each more repeat of a tile writes more bytes, and takes longer.
  double previous = 0;
  for (int64_t repeats = 1; repeats <= 8; repeats *= 2) {
    phx_tile_params tile = PHX_TILE_PARAMS_INIT;
    tile.repeats[0] = static_cast<uint32_t>(repeats);
    const phx_plugin_tensor tiled = tensor(PHX_DTYPE_F32, {1024 * repeats, 1024});
    const OpCost t = cost_op(make_op(PHX_OP_TILE, &tile, &x, 1, &tiled), v5e());
    EXPECT_EQ(t.hbm_bytes, uint64_t(4 << 20) * uint64_t(1 + repeats));
    EXPECT_GT(t.estimated_time_ns, previous) << repeats;
    previous = t.estimated_time_ns;
  }
}

// Pools on the vector unit: every output compares (max) or adds (avg, plus the mean's
// multiply) its window. f32 [1, 8, 32, 32], 3x3 windows, padding 1: 8192 outputs * 9 /
// 1024 lanes = 72 cycles; avg 80.
TEST(OpCost, PoolsCostTheirWindowsOnTheVectorUnit) {
  const phx_plugin_tensor x = tensor(PHX_DTYPE_F32, {1, 8, 32, 32});
  phx_pool_params params = PHX_POOL_PARAMS_INIT;
  params.kernel[0] = params.kernel[1] = 3;
  params.pad_begin[0] = params.pad_begin[1] = params.pad_end[0] = params.pad_end[1] = 1;
  const OpCost max = cost_op(make_op(PHX_OP_MAX_POOL, &params, &x, 1, &x), v5e());
  const OpCost avg = cost_op(make_op(PHX_OP_AVG_POOL, &params, &x, 1, &x), v5e());
  EXPECT_FALSE(max.uses_mxu);
  EXPECT_EQ(max.vector_cycles, 72u);
  EXPECT_EQ(avg.vector_cycles, 80u);
  EXPECT_EQ(max.hbm_bytes, 2u * 32768u);
  EXPECT_GT(max.estimated_time_ns, 0.0);
}

// linear resize: a multiply and an add per tap, 2^2 taps for the two dimensions resampled:
// [1, 1, 16, 16] to [1, 1, 32, 32], 1024 outputs * 8 / 1024 = 8 cycles; nearest, 1.
TEST(OpCost, ResizeCostsItsTaps) {
  const phx_plugin_tensor x = tensor(PHX_DTYPE_F32, {1, 1, 16, 16});
  const phx_plugin_tensor out = tensor(PHX_DTYPE_F32, {1, 1, 32, 32});
  phx_resize_params params = {sizeof(phx_resize_params),
                              PHX_RESIZE_LINEAR,
                              PHX_RESIZE_HALF_PIXEL,
                              PHX_RESIZE_ROUND_PREFER_FLOOR,
                              4,
                              {1, 1, 32, 32},
                              {}};
  EXPECT_EQ(cost_op(make_op(PHX_OP_RESIZE, &params, &x, 1, &out), v5e()).vector_cycles, 8u);
  params.mode = PHX_RESIZE_NEAREST;
  EXPECT_EQ(cost_op(make_op(PHX_OP_RESIZE, &params, &x, 1, &out), v5e()).vector_cycles, 1u);
}

// conv_transpose2d is priced as the conv2d it is lowered to: x [2, 6, 5, 5], w [6, 4, 3, 3],
// groups 2, stride 2: out [2, 8, 11, 11]; M = 2 * 121, K = 3 * 9, N = 4, batch 2.
TEST(OpCost, ConvTranspose2dLowersToTheConv2dOfItsSpreadInput) {
  const phx_plugin_tensor in[2] = {tensor(PHX_DTYPE_BF16, {2, 6, 5, 5}),
                                   tensor(PHX_DTYPE_BF16, {6, 4, 3, 3})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_BF16, {2, 8, 11, 11});
  phx_conv_transpose2d_params params = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  params.stride[0] = params.stride[1] = 2;
  params.groups = 2;
  const phx_plugin_op op = make_op(PHX_OP_CONV_TRANSPOSE2D, &params, in, 2, &out);
  const std::optional<GemmShape> gemm = lowered_gemm(op);
  ASSERT_TRUE(gemm.has_value());
  EXPECT_EQ(gemm->m, 242u);
  EXPECT_EQ(gemm->k, 27u);
  EXPECT_EQ(gemm->n, 4u);
  EXPECT_EQ(gemm->batch, 2u);
  const OpCost cost = cost_op(op, v5e());
  EXPECT_TRUE(cost.uses_mxu);
  EXPECT_EQ(cost.mxu_passes, 1u);  // bf16 inputs
  EXPECT_EQ(cost.vector_cycles, 0u);
}

}  // namespace
}  // namespace phx::tpu_sim
