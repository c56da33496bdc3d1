// The timing model against hand-worked numbers, and the lowering of ops to it.
#include "timing_model.h"

#include <gtest/gtest.h>

#include "op_cost.h"

namespace phx::npu_sim {
namespace {

// 1 MiB of SRAM (half: 524288 bytes), 50 GB/s, 4096 int8, 1024 int16 and 2048 f16 MACs
// per cycle, 64 vector lanes, 1 GHz (1 cycle = 1 ns), 1000 ns per op.
Machine machine() {
  Machine m;
  m.sram_bytes = 1 << 20;
  m.dram_bandwidth_gbps = 50;
  m.int8_macs_per_cycle = 4096;
  m.int16_macs_per_cycle = 1024;
  m.fp16_macs_per_cycle = 2048;
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

TEST(TimingModel, SixteenBitElementsTakeTwoLanes) {
  // softmax on 2^16 f16: 2^16 * 16 operations * 2 lanes / 64 = 32768 cycles; the same
  // count of i8 elements at one operation each: 1024 cycles.
  StreamWork softmax;
  softmax.elements = 1 << 16;
  softmax.ops_per_element = 16;
  softmax.element_bytes = 2;
  softmax.input_bytes = softmax.output_bytes = 2 << 16;
  const Estimate e = estimate_stream(softmax, machine());
  EXPECT_EQ(e.cycles, 32768u);
  EXPECT_EQ(e.dram_bytes, 4u << 16);
  EXPECT_FALSE(e.memory_bound);  // 262144 bytes / 50 = 5242.88 ns against 32768 ns
  EXPECT_DOUBLE_EQ(e.estimated_ns, 32768.0 + 1000);
  StreamWork add;
  add.elements = 1 << 16;
  EXPECT_EQ(estimate_stream(add, machine()).cycles, 1024u);
}

TEST(TimingModel, AttentionIsTwoProductsAndASoftmaxOnChip) {
  // B = 1, H = 2, Sq = 64, Skv = 128, D = Dv = 64 in f16. Q . K^T: 2 * 64 * 128 * 64 =
  // 1048576 MACs; P . V the same: 2 * 512 cycles at 2048 per cycle. The softmax of the
  // 2 * 64 * 128 = 16384 scores: 16384 * 16 * 2 lanes / 64 = 8192 cycles. 9216 cycles in
  // all at 1 GHz. DRAM: q 16384 + k 32768 + v 32768 + out 16384 = 98304 bytes / 50 =
  // 1966.08 ns: compute-bound.
  AttentionWork w;
  w.scores.m = w.values.m = 64;
  w.scores.n = 128;
  w.scores.k = 64;
  w.values.n = 64;
  w.values.k = 128;
  w.scores.batch = w.values.batch = 2;
  w.scores.rate = w.values.rate = MacRate::kFp16;
  w.softmax.elements = 16384;
  w.softmax.ops_per_element = 16;
  w.softmax.element_bytes = 2;
  w.dram_bytes = 98304;
  const Estimate e = estimate_attention(w, machine());
  EXPECT_EQ(e.macs, 2097152u);
  EXPECT_EQ(e.cycles, 9216u);
  EXPECT_EQ(e.dram_bytes, 98304u);
  EXPECT_DOUBLE_EQ(e.memory_ns, 1966.08);
  EXPECT_FALSE(e.memory_bound);
  EXPECT_DOUBLE_EQ(e.estimated_ns, 9216.0 + 1000);
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

TEST(OpCost, Conv2dInF16RunsAtTheF16Rate) {
  // NCHW x f16 [1, 16, 10, 10], weight [8, 16, 3, 3], bias [8], out [1, 8, 8, 8]:
  // M = 64, K = 144, N = 8: 73728 MACs at 2048 per cycle = 36 cycles.
  const phx_plugin_tensor in[3] = {tensor(PHX_DTYPE_F16, {1, 16, 10, 10}),
                                   tensor(PHX_DTYPE_F16, {8, 16, 3, 3}),
                                   tensor(PHX_DTYPE_F16, {8})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_F16, {1, 8, 8, 8});
  const phx_plugin_op op = {sizeof op, PHX_OP_CONV2D, nullptr, in, 3, &out, 1, nullptr};
  const auto w = gemm_work(op);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->m, 64u);
  EXPECT_EQ(w->k, 144u);
  EXPECT_EQ(w->n, 8u);
  EXPECT_EQ(w->rate, MacRate::kFp16);
  EXPECT_EQ(w->other_bytes, 16u);  // the bias
  EXPECT_EQ(estimate_op(op, machine()).cycles, 36u);
}

TEST(OpCost, AttentionLowersToItsProductsPerQueryHead) {
  // Grouped-query: q [1, 4, 16, 32], k and v [1, 2, 64, 32] f16, out [1, 4, 16, 32]:
  // every one of the 4 query heads does 16 * 64 * 32 MACs twice.
  const phx_plugin_tensor in[3] = {tensor(PHX_DTYPE_F16, {1, 4, 16, 32}),
                                   tensor(PHX_DTYPE_F16, {1, 2, 64, 32}),
                                   tensor(PHX_DTYPE_F16, {1, 2, 64, 32})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_F16, {1, 4, 16, 32});
  const phx_plugin_op op = {sizeof op, PHX_OP_ATTENTION, nullptr, in, 3, &out, 1, nullptr};
  EXPECT_FALSE(gemm_work(op).has_value());
  const AttentionWork w = attention_work(op);
  EXPECT_EQ(w.scores.batch, 4u);
  EXPECT_EQ(w.scores.m, 16u);
  EXPECT_EQ(w.scores.n, 64u);
  EXPECT_EQ(w.scores.k, 32u);
  EXPECT_EQ(w.values.n, 32u);
  EXPECT_EQ(w.values.k, 64u);
  EXPECT_EQ(w.softmax.elements, 4u * 16 * 64);
  EXPECT_EQ(w.dram_bytes, 2u * (4 * 16 * 32 + 2 * 64 * 32) * 2);  // q, out; k, v; 2 bytes
  const Estimate e = estimate_op(op, machine());
  EXPECT_EQ(e.macs, 2u * 4 * 16 * 64 * 32);
  // 64 + 64 cycles of MACs; 4096 scores * 16 * 2 / 64 = 2048 of softmax.
  EXPECT_EQ(e.cycles, 64u + 64 + 2048);
}

TEST(OpCost, VectorOpsCountTheWidthTheyComputeIn) {
  // An i8 sub, an f16 rms_norm and an f32 -> i8 quantize over 4096 elements.
  const phx_plugin_tensor i8[2] = {tensor(PHX_DTYPE_I8, {64, 64}), tensor(PHX_DTYPE_I8, {64, 64})};
  const phx_plugin_op sub = {sizeof sub, PHX_OP_SUB, nullptr, i8, 2, &i8[0], 1, nullptr};
  EXPECT_EQ(stream_work(sub).element_bytes, 1u);
  EXPECT_EQ(estimate_op(sub, machine()).cycles, 4096u / 64);

  const phx_plugin_tensor x = tensor(PHX_DTYPE_F16, {64, 64});
  const phx_plugin_op norm = {sizeof norm, PHX_OP_RMS_NORM, nullptr, &x, 1, &x, 1, nullptr};
  EXPECT_EQ(stream_work(norm).element_bytes, 2u);
  EXPECT_EQ(estimate_op(norm, machine()).cycles, 4096u * 6 * 2 / 64);

  const phx_plugin_tensor q_in[3] = {tensor(PHX_DTYPE_F32, {64, 64}), tensor(PHX_DTYPE_F32, {1}),
                                     tensor(PHX_DTYPE_I32, {1})};
  const phx_plugin_op quantize = {sizeof quantize, PHX_OP_QUANTIZE, nullptr, q_in, 3, &i8[0], 1,
                                  nullptr};
  EXPECT_EQ(stream_work(quantize).element_bytes, 4u);
  EXPECT_EQ(estimate_op(quantize, machine()).cycles, 4096u * 2 * 4 / 64);
}

// conv_transpose2d: the conv2d over its input with the zeros inserted on chip. f16 x
// [1, 8, 6, 6], weight [8, 4, 3, 3], stride 2, padding 1 all round, output padding 1:
// out [1, 4, 12, 12]; M = 144, K = 72, N = 4: 41472 MACs at 2048 per cycle = 21 cycles.
// The activation bytes are x's as stored, not the spread input's.
TEST(OpCost, ConvTranspose2dLowersToTheConv2dOfItsUpscaledInput) {
  const phx_plugin_tensor in[2] = {tensor(PHX_DTYPE_F16, {1, 8, 6, 6}),
                                   tensor(PHX_DTYPE_F16, {8, 4, 3, 3})};
  const phx_plugin_tensor out = tensor(PHX_DTYPE_F16, {1, 4, 12, 12});
  phx_conv_transpose2d_params params = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  params.stride[0] = params.stride[1] = 2;
  params.padding[0] = params.padding[1] = params.padding[2] = params.padding[3] = 1;
  params.output_padding[0] = params.output_padding[1] = 1;
  const phx_plugin_op op = {sizeof op, PHX_OP_CONV_TRANSPOSE2D, &params, in, 2, &out, 1, nullptr};
  const auto w = gemm_work(op);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->m, 144u);
  EXPECT_EQ(w->k, 72u);
  EXPECT_EQ(w->n, 4u);
  EXPECT_EQ(w->batch, 1u);
  EXPECT_EQ(w->rate, MacRate::kFp16);
  EXPECT_EQ(w->activation_bytes, 8u * 6 * 6 * 2);
  EXPECT_EQ(w->weight_bytes, 8u * 4 * 3 * 3 * 2);
  EXPECT_EQ(estimate_op(op, machine()).cycles, 21u);
}

// Pools and resize work per output: max_pool 3x3 over i8 [1, 16, 32, 32] (padding 1):
// 16384 outputs * 9 / 64 lanes = 2304 cycles; avg_pool on f16 adds the mean's multiply
// and takes two lanes an element: 16384 * 10 * 2 / 64 = 5120. Linear resize of f16
// [1, 4, 16, 16] to [1, 4, 32, 32]: 4 taps, a multiply and an add each.
TEST(OpCost, PoolsAndResizeCostTheirWindowsAndTaps) {
  phx_pool_params pool = PHX_POOL_PARAMS_INIT;
  pool.kernel[0] = pool.kernel[1] = 3;
  pool.pad_begin[0] = pool.pad_begin[1] = pool.pad_end[0] = pool.pad_end[1] = 1;
  const phx_plugin_tensor i8 = tensor(PHX_DTYPE_I8, {1, 16, 32, 32});
  const phx_plugin_op max = {sizeof max, PHX_OP_MAX_POOL, &pool, &i8, 1, &i8, 1, nullptr};
  EXPECT_FALSE(gemm_work(max).has_value());
  EXPECT_EQ(stream_work(max).elements, 16384u);
  EXPECT_EQ(estimate_op(max, machine()).cycles, 2304u);
  EXPECT_EQ(estimate_op(max, machine()).dram_bytes, 2u * 16384);
  const phx_plugin_tensor f16 = tensor(PHX_DTYPE_F16, {1, 16, 32, 32});
  const phx_plugin_op avg = {sizeof avg, PHX_OP_AVG_POOL, &pool, &f16, 1, &f16, 1, nullptr};
  EXPECT_EQ(estimate_op(avg, machine()).cycles, 5120u);

  const phx_plugin_tensor small = tensor(PHX_DTYPE_F16, {1, 4, 16, 16});
  const phx_plugin_tensor large = tensor(PHX_DTYPE_F16, {1, 4, 32, 32});
  phx_resize_params resize = {sizeof(phx_resize_params),
                              PHX_RESIZE_LINEAR,
                              PHX_RESIZE_HALF_PIXEL,
                              PHX_RESIZE_ROUND_PREFER_FLOOR,
                              4,
                              {1, 4, 32, 32},
                              {}};
  const phx_plugin_op up = {sizeof up, PHX_OP_RESIZE, &resize, &small, 1, &large, 1, nullptr};
  EXPECT_EQ(estimate_op(up, machine()).cycles, 4096u * 8 * 2 / 64);
  resize.mode = PHX_RESIZE_NEAREST;
  EXPECT_EQ(estimate_op(up, machine()).cycles, 4096u * 2 / 64);
}

// The layout ops move their bytes through the vector unit: a slice or a gather reads only
// what it picks; a tile's time grows with its repeats, memory-bound.
TEST(OpCost, LayoutOpsAreMemoryBoundAndReadWhatTheyPick) {
  const phx_plugin_tensor x = tensor(PHX_DTYPE_F16, {512, 512});
  const phx_plugin_tensor half = tensor(PHX_DTYPE_F16, {256, 512});
  phx_slice_params slice = PHX_SLICE_PARAMS_INIT;
  slice.ends[0] = 256;
  slice.steps[0] = 1;
  const phx_plugin_op sliced = {sizeof sliced, PHX_OP_SLICE, &slice, &x, 1, &half, 1, nullptr};
  EXPECT_EQ(estimate_op(sliced, machine()).dram_bytes, 2u * 256 * 512 * 2);
  const phx_plugin_tensor table[2] = {tensor(PHX_DTYPE_F16, {1000, 64}),
                                      tensor(PHX_DTYPE_I32, {8})};
  const phx_plugin_tensor rows = tensor(PHX_DTYPE_F16, {8, 64});
  const phx_axis_params axis = PHX_AXIS_PARAMS_INIT;
  const phx_plugin_op gather = {sizeof gather, PHX_OP_GATHER, &axis, table, 2, &rows, 1, nullptr};
  EXPECT_EQ(estimate_op(gather, machine()).dram_bytes, 2u * 8 * 64 * 2 + 8 * 4);
  EXPECT_EQ(stream_work(gather).elements, 8u * 64);  // not the table's 64000
  double previous = 0;
  for (int64_t repeats = 1; repeats <= 8; repeats *= 2) {
    phx_tile_params tile = PHX_TILE_PARAMS_INIT;
    tile.repeats[0] = static_cast<uint32_t>(repeats);
    const phx_plugin_tensor tiled = tensor(PHX_DTYPE_F16, {512 * repeats, 512});
    const phx_plugin_op op = {sizeof op, PHX_OP_TILE, &tile, &x, 1, &tiled, 1, nullptr};
    const Estimate e = estimate_op(op, machine());
    EXPECT_EQ(e.dram_bytes, uint64_t(512 * 512 * 2) * uint64_t(1 + repeats));
    EXPECT_TRUE(e.memory_bound);
    EXPECT_GT(e.estimated_ns, previous) << repeats;
    previous = e.estimated_ns;
  }
}

// The vector ops of API 0.3 over 4096 f16 elements (2 lanes each, 64 lanes: 128 cycles
// per operation per element): sigmoid an exp and a division (8), tanh a sigmoid and a
// multiply-add (9), softplus 11, pow e^(b log a) 9, batch_norm 4 with its channel
// vectors read but not counted as elements. A comparison streams its f16 inputs and
// writes u8; an i8 argmax carries i32 indices, 4 lanes an element; where's lanes are its
// values', not its u8 condition's.
TEST(OpCost, VectorOpsOfApi03CountTheirOperationsAndWidths) {
  const phx_plugin_tensor x = tensor(PHX_DTYPE_F16, {64, 64});
  const phx_plugin_tensor pair[2] = {x, x};
  auto cycles = [](phx_op_id id, const phx_plugin_tensor* in, size_t count,
                   const phx_plugin_tensor& out, const void* params = nullptr) {
    const phx_plugin_op op = {sizeof op, id, params, in, count, &out, 1, nullptr};
    return estimate_op(op, machine()).cycles;
  };
  EXPECT_EQ(cycles(PHX_OP_SIGMOID, &x, 1, x), 4096u * 8 * 2 / 64);
  EXPECT_EQ(cycles(PHX_OP_SILU, &x, 1, x), cycles(PHX_OP_SIGMOID, &x, 1, x));
  EXPECT_EQ(cycles(PHX_OP_TANH, &x, 1, x), 4096u * 9 * 2 / 64);
  EXPECT_EQ(cycles(PHX_OP_SOFTPLUS, &x, 1, x), 4096u * 11 * 2 / 64);
  EXPECT_EQ(cycles(PHX_OP_POW, pair, 2, x), 4096u * 9 * 2 / 64);
  EXPECT_EQ(cycles(PHX_OP_NEG, &x, 1, x), 4096u * 2 / 64);

  const phx_plugin_tensor image = tensor(PHX_DTYPE_F16, {4, 16, 8, 8});
  const phx_plugin_tensor channel = tensor(PHX_DTYPE_F16, {16});
  const phx_plugin_tensor norm_in[5] = {image, channel, channel, channel, channel};
  const phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  const phx_plugin_op batch_norm = {
      sizeof batch_norm, PHX_OP_BATCH_NORM, &norm, norm_in, 5, &image, 1, nullptr};
  EXPECT_EQ(stream_work(batch_norm).elements, 4096u);
  EXPECT_EQ(estimate_op(batch_norm, machine()).cycles, 4096u * 4 * 2 / 64);
  EXPECT_EQ(estimate_op(batch_norm, machine()).dram_bytes, 2u * 4096 * 2 + 4 * 16 * 2);

  const phx_plugin_tensor flags = tensor(PHX_DTYPE_U8, {64, 64});
  const phx_plugin_op less = {sizeof less, PHX_OP_LESS, nullptr, pair, 2, &flags, 1, nullptr};
  EXPECT_EQ(stream_work(less).element_bytes, 2u);
  EXPECT_EQ(estimate_op(less, machine()).cycles, 4096u * 2 / 64);
  EXPECT_EQ(estimate_op(less, machine()).dram_bytes, 2u * 4096 * 2 + 4096);

  const phx_plugin_tensor i8 = tensor(PHX_DTYPE_I8, {64, 64});
  const phx_plugin_tensor index = tensor(PHX_DTYPE_I32, {64});
  phx_argmax_params rows = PHX_ARGMAX_PARAMS_INIT;
  rows.axis = 1;
  rows.keep_dims = 0;
  const phx_plugin_op argmax = {sizeof argmax, PHX_OP_ARGMAX, &rows, &i8, 1, &index, 1, nullptr};
  EXPECT_EQ(stream_work(argmax).element_bytes, 4u);
  EXPECT_EQ(estimate_op(argmax, machine()).cycles, 4096u * 2 * 4 / 64);

  const phx_plugin_tensor select_in[3] = {flags, x, x};
  const phx_plugin_op where = {sizeof where, PHX_OP_WHERE, nullptr, select_in, 3, &x, 1, nullptr};
  EXPECT_EQ(stream_work(where).element_bytes, 2u);
  EXPECT_EQ(estimate_op(where, machine()).cycles, 4096u * 2 / 64);
}

}  // namespace
}  // namespace phx::npu_sim
