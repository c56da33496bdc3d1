// The timing model against hand-worked numbers, and the lowering of ops to it.
#include "timing_model.h"

#include <gtest/gtest.h>

#include "op_cost.h"

namespace phx::npu_sim {
namespace {

// 1 MiB of SRAM (half: 524288 bytes), 50 GB/s, 4096 int8 and 1024 int16 MACs per cycle,
// 64 vector lanes, 1 GHz (1 cycle = 1 ns), 1000 ns per op.
Machine machine() {
  Machine m;
  m.sram_bytes = 1 << 20;
  m.dram_bandwidth_gbps = 50;
  m.int8_macs_per_cycle = 4096;
  m.int16_macs_per_cycle = 1024;
  m.fp16_macs_per_cycle = 0;
  m.vector_lanes = 64;
  m.clock_ghz = 1.0;
  m.op_overhead_ns = 1000;
  return m;
}

TEST(TimingModel, SmallInt8GemmIsComputeBound) {
  // 256^3 int8, everything on chip: 16777216 MACs / 4096 = 4096 cycles = 4096 ns;
  // DRAM 3 x 65536 bytes / 50 = 3932.16 ns.
  GemmWork w;
  w.m = w.n = w.k = 256;
  w.activation_bytes = w.weight_bytes = w.output_bytes = 65536;
  const Estimate e = estimate_gemm(w, machine());
  EXPECT_EQ(e.macs, 16777216u);
  EXPECT_EQ(e.cycles, 4096u);
  EXPECT_EQ(e.dram_bytes, 196608u);
  EXPECT_EQ(e.tiles, 1u);
  EXPECT_DOUBLE_EQ(e.compute_ns, 4096.0);
  EXPECT_DOUBLE_EQ(e.memory_ns, 3932.16);
  EXPECT_FALSE(e.memory_bound);
  EXPECT_DOUBLE_EQ(e.estimated_ns, 5096.0);
}

TEST(TimingModel, Int16GemmRunsAtTheInt16RateAndTilesTheWeights) {
  // 1024^3 16x8: A 2 MiB (i16), W 1 MiB, out i32 4 MiB. Neither operand fits in 512 KiB:
  // weight tiles 2 -> W + 2A = 5 MiB; activation tiles 4 -> A + 4W = 6 MiB: the weights
  // are tiled. 2^30 MACs / 1024 = 1048576 cycles.
  GemmWork w;
  w.m = w.n = w.k = 1024;
  w.rate = MacRate::kInt16;
  w.activation_bytes = 2 << 20;
  w.weight_bytes = 1 << 20;
  w.output_bytes = 4 << 20;
  w.other_bytes = 12;
  const Estimate e = estimate_gemm(w, machine());
  EXPECT_EQ(e.cycles, 1048576u);
  EXPECT_EQ(e.tiles, 2u);
  EXPECT_EQ(e.dram_bytes, (5u << 20) + (4u << 20) + 12);
  EXPECT_DOUBLE_EQ(e.memory_ns, double((9u << 20) + 12) / 50);
  EXPECT_FALSE(e.memory_bound);
  EXPECT_DOUBLE_EQ(e.estimated_ns, 1048576.0 + 1000);
}

TEST(TimingModel, TilesTheActivationsWhenThatMovesLess) {
  // A 1 MiB, W 3 MiB: weight tiles 6 -> 3 + 6 = 9 MiB; activation tiles 2 -> 1 + 2 * 3 =
  // 7 MiB.
  GemmWork w;
  w.m = w.n = w.k = 64;
  w.activation_bytes = 1 << 20;
  w.weight_bytes = 3 << 20;
  const Estimate e = estimate_gemm(w, machine());
  EXPECT_EQ(e.tiles, 2u);
  EXPECT_EQ(e.dram_bytes, 7u << 20);
}

TEST(TimingModel, MatrixVectorProductIsMemoryBound) {
  // 1 x 4096 x 4096 int8: the 16 MiB of weights stream once (the activations fit):
  // 4096 + 16777216 + 4096 bytes / 50 = 335708.16 ns against 4096 ns of MACs.
  GemmWork w;
  w.m = 1;
  w.n = w.k = 4096;
  w.activation_bytes = 4096;
  w.weight_bytes = 16777216;
  w.output_bytes = 4096;
  const Estimate e = estimate_gemm(w, machine());
  EXPECT_EQ(e.cycles, 4096u);
  EXPECT_EQ(e.tiles, 1u);
  EXPECT_EQ(e.dram_bytes, 16785408u);
  EXPECT_TRUE(e.memory_bound);
  EXPECT_DOUBLE_EQ(e.estimated_ns, 16785408.0 / 50 + 1000);
}

TEST(TimingModel, StreamOps) {
  // relu on 10^6 int8: ceil(10^6 / 64) = 15625 cycles; 2 * 10^6 bytes / 50 = 40000 ns.
  StreamWork relu;
  relu.elements = 1000000;
  relu.input_bytes = relu.output_bytes = 1000000;
  Estimate e = estimate_stream(relu, machine());
  EXPECT_EQ(e.cycles, 15625u);
  EXPECT_EQ(e.dram_bytes, 2000000u);
  EXPECT_TRUE(e.memory_bound);
  EXPECT_DOUBLE_EQ(e.estimated_ns, 41000.0);
  EXPECT_EQ(e.macs, 0u);

  // Dynamic quantization of 2^20 f32 (4 MiB, past the SRAM): the input is read twice.
  StreamWork dq;
  dq.elements = 1 << 20;
  dq.ops_per_element = 3;
  dq.input_bytes = 4 << 20;
  dq.output_bytes = (1 << 20) + 8;
  dq.input_passes = 2;
  e = estimate_stream(dq, machine());
  EXPECT_EQ(e.cycles, 3u * (1 << 20) / 64);
  EXPECT_EQ(e.dram_bytes, (8u << 20) + (1 << 20) + 8);
  dq.input_bytes = 4096;  // on chip: read once
  EXPECT_EQ(estimate_stream(dq, machine()).dram_bytes, 4096u + (1 << 20) + 8);
}

// ---- the lowering of plugin ops ----

char fake;  // gemm_work reads shapes and dtypes only; a present tensor has a buffer

phx_plugin_tensor tensor(phx_dtype dtype, std::initializer_list<int64_t> shape) {
  phx_plugin_tensor t{};
  t.struct_size = sizeof t;
  t.buffer = &fake;
  t.dtype = dtype;
  t.rank = static_cast<uint32_t>(shape.size());
  for (uint32_t i = 0; i < PHX_MAX_RANK; ++i) t.shape[i] = 1;
  uint32_t i = 0;
  for (int64_t d : shape) t.shape[i++] = d;
  return t;
}

TEST(OpCost, QmatmulLowersToABatchedInt8Gemm) {
  // a i8 [2, 64, 128], b i8 [256, 128] transposed (N = 256), per-channel b_scale [256],
  // bias i32 [256], out i8 [2, 64, 256].
  const phx_plugin_tensor in[9] = {
      tensor(PHX_DTYPE_I8, {2, 64, 128}), tensor(PHX_DTYPE_I8, {256, 128}),
      tensor(PHX_DTYPE_F32, {1}),         tensor(PHX_DTYPE_I32, {1}),
      tensor(PHX_DTYPE_F32, {256}),       phx_plugin_tensor{},
      tensor(PHX_DTYPE_I32, {256}),       tensor(PHX_DTYPE_F32, {1}),
      tensor(PHX_DTYPE_I32, {1})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_I8, {2, 64, 256});
  phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
  params.transpose_b = 1;
  const phx_plugin_op op = {sizeof op, PHX_OP_QMATMUL, &params, in, 9, &out, 1, nullptr};
  const auto w = gemm_work(op);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->m, 64u);
  EXPECT_EQ(w->n, 256u);
  EXPECT_EQ(w->k, 128u);
  EXPECT_EQ(w->batch, 2u);
  EXPECT_EQ(w->rate, MacRate::kInt8);
  EXPECT_EQ(w->activation_bytes, 2u * 64 * 128);
  EXPECT_EQ(w->weight_bytes, 256u * 128);
  EXPECT_EQ(w->output_bytes, 2u * 64 * 256);
  EXPECT_EQ(w->other_bytes, 4u + 4 + 256 * 4 + 256 * 4 + 4 + 4);  // the absent zp: 0
  EXPECT_EQ(estimate_op(op, machine()).macs, 2u * 64 * 256 * 128);
}

TEST(OpCost, Qconv2dWithInt16ActivationsRunsAtTheInt16Rate) {
  // NHWC x i16 [1, 8, 8, 16], weight [32, 3, 3, 16], out [1, 6, 6, 32]:
  // M = 36, K = 144, N = 32.
  const phx_plugin_tensor in[5] = {tensor(PHX_DTYPE_I16, {1, 8, 8, 16}),
                                   tensor(PHX_DTYPE_I8, {32, 3, 3, 16}), tensor(PHX_DTYPE_F32, {1}),
                                   phx_plugin_tensor{}, tensor(PHX_DTYPE_F32, {32})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_I32, {1, 6, 6, 32});
  phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;
  params.layout = PHX_LAYOUT_NHWC;
  const phx_plugin_op op = {sizeof op, PHX_OP_QCONV2D, &params, in, 5, &out, 1, nullptr};
  const auto w = gemm_work(op);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->m, 36u);
  EXPECT_EQ(w->k, 144u);
  EXPECT_EQ(w->n, 32u);
  EXPECT_EQ(w->rate, MacRate::kInt16);
  EXPECT_EQ(w->activation_bytes, 8u * 8 * 16 * 2);
  // 36 * 32 * 144 MACs at 1024 per cycle: 162 cycles.
  EXPECT_EQ(estimate_op(op, machine()).cycles, 162u);
}

TEST(OpCost, DynamicQuantizeStreamsWithTwoPasses) {
  const phx_plugin_tensor in = tensor(PHX_DTYPE_F32, {1024, 1024});
  const phx_plugin_tensor out[3] = {tensor(PHX_DTYPE_I8, {1024, 1024}), tensor(PHX_DTYPE_F32, {1}),
                                    tensor(PHX_DTYPE_I32, {1})};
  const phx_plugin_op op = {sizeof op, PHX_OP_DYNAMIC_QUANTIZE, nullptr, &in, 1, out, 3, nullptr};
  EXPECT_FALSE(gemm_work(op).has_value());
  const StreamWork w = stream_work(op);
  EXPECT_EQ(w.elements, 1u << 20);
  EXPECT_EQ(w.input_bytes, 4u << 20);
  EXPECT_EQ(w.output_bytes, (1u << 20) + 8);
  EXPECT_EQ(w.input_passes, 2u);
  EXPECT_EQ(estimate_op(op, machine()).dram_bytes, (8u << 20) + (1 << 20) + 8);
}

}  // namespace
}  // namespace phx::npu_sim
