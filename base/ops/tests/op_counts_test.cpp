// phx/op_counts.h: the one FLOP and byte count of an op. Before it there were three
// (core/runtime/op_figures.cpp for profiles, core/graph/node_cost.cpp for the cost model,
// plugins/common/roofline.cpp for the plugins' estimates); the figures the three agreed on
// are held here as they were, and each case where one of them changed is named.
#include <gtest/gtest.h>
#include <phx/op_counts.h>

#include <vector>

namespace {

using phx::OpCounts;
using phx::OperandView;

// Shapes that outlive the views made of them.
struct Operands {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<OperandView> in, out;

  Operands(std::initializer_list<std::vector<int64_t>> inputs,
           std::initializer_list<std::vector<int64_t>> outputs, phx_dtype dtype = PHX_DTYPE_F32) {
    shapes.reserve(inputs.size() + outputs.size());
    for (const auto& s : inputs) in.push_back(view(s, dtype));
    for (const auto& s : outputs) out.push_back(view(s, dtype));
  }
  OperandView view(const std::vector<int64_t>& s, phx_dtype dtype) {
    if (s.empty()) return {};  // an optional input left out
    shapes.push_back(s);
    return {dtype, uint32_t(s.size()), shapes.back().data()};
  }
  OpCounts counts(phx_op_id op, const void* params = nullptr) const {
    return phx::op_counts(op, params, in, out);
  }
};

// ---- Held: the figures all three counts gave.

TEST(OpCounts, MatmulIsTwoKPerOutputElement) {
  const phx_matmul_params params PHX_MATMUL_PARAMS_INIT;
  const Operands mm({{2, 8, 32}, {32, 16}, {}}, {{2, 8, 16}});
  const OpCounts c = mm.counts(PHX_OP_MATMUL, &params);
  EXPECT_EQ(c.flops, 2.0 * 32 * (2 * 8 * 16));
  EXPECT_EQ(c.bytes, 4u * (2 * 8 * 32 + 32 * 16 + 2 * 8 * 16));  // the absent bias is no read
}

TEST(OpCounts, ATransposedMatmulTakesKFromTheDimensionBeforeTheLast) {
  phx_matmul_params params PHX_MATMUL_PARAMS_INIT;
  params.transpose_a = 1;
  const Operands mm({{32, 8}, {32, 16}}, {{8, 16}});  // a stored [K, M]
  EXPECT_EQ(mm.counts(PHX_OP_MATMUL, &params).flops, 2.0 * 32 * 8 * 16);
}

TEST(OpCounts, ConvolutionIsTwoWeightElementsPerChannelPerOutputElement) {
  const Operands dense({{1, 4, 5, 5}, {6, 4, 3, 3}}, {{1, 6, 3, 3}});
  EXPECT_EQ(dense.counts(PHX_OP_CONV2D).flops, 2.0 * (6 * 3 * 3) * (4 * 3 * 3));
  const Operands grouped({{1, 4, 5, 5}, {6, 2, 3, 3}}, {{1, 6, 3, 3}});  // groups 2
  EXPECT_EQ(grouped.counts(PHX_OP_CONV2D).flops, 2.0 * (6 * 3 * 3) * (2 * 3 * 3));
  const Operands nhwc({{1, 5, 5, 4}, {6, 3, 3, 4}}, {{1, 3, 3, 6}});  // weight [C_out, KH, KW, C]
  EXPECT_EQ(nhwc.counts(PHX_OP_CONV2D).flops, dense.counts(PHX_OP_CONV2D).flops);
}

TEST(OpCounts, AttentionWithEqualHeadSizesIsFourSkvPerOutputElement) {
  const Operands att({{1, 2, 4, 8}, {1, 2, 6, 8}, {1, 2, 6, 8}}, {{1, 2, 4, 8}});
  EXPECT_EQ(att.counts(PHX_OP_ATTENTION).flops, 4.0 * 6 * (2 * 4 * 8));
}

TEST(OpCounts, AnElementwiseOpIsOnePerElement) {
  const Operands add({{4, 8}, {8}}, {{4, 8}});
  EXPECT_EQ(add.counts(PHX_OP_ADD).flops, 32.0);
  EXPECT_EQ(add.counts(PHX_OP_ADD).bytes, 4u * (32 + 8 + 32));
}

// ---- Changed, each in one of the three counts.

// node_cost took K = 1 for a rank-1 a; profiles and the roofline took its dimension.
TEST(OpCounts, ARankOneMatmulTakesKFromItsOnlyDimension) {
  const Operands mm({{5}, {5, 3}}, {{3}});
  EXPECT_EQ(mm.counts(PHX_OP_MATMUL).flops, 2.0 * 5 * 3);
}

// Profiles and node_cost counted 4 Skv per output element, right only where D = Dv; the
// roofline's 2 Skv (D + Dv) per query row is the product's.
TEST(OpCounts, AttentionCountsBothProductsWhenTheHeadSizesDiffer) {
  const Operands att({{1, 1, 4, 8}, {1, 1, 6, 8}, {1, 1, 6, 16}}, {{1, 1, 4, 16}});
  EXPECT_EQ(att.counts(PHX_OP_ATTENTION).flops, 2.0 * 6 * (4 * 8) + 2.0 * 6 * (4 * 16));
}

// The roofline counted the quantized products and the transposed convolution as one
// FLOP per element of their largest operand; profiles and node_cost as below.
TEST(OpCounts, QuantizedProductsCountAsTheirFloatOnes) {
  const Operands qmm({{2, 32}, {32, 16}}, {{2, 16}}, PHX_DTYPE_I8);
  EXPECT_EQ(qmm.counts(PHX_OP_QMATMUL).flops, 2.0 * 32 * 2 * 16);
  EXPECT_EQ(qmm.counts(PHX_OP_QMATMUL).bytes, 2u * 32 + 32 * 16 + 2 * 16);
  const Operands qconv({{1, 4, 5, 5}, {6, 4, 3, 3}}, {{1, 6, 3, 3}}, PHX_DTYPE_I8);
  EXPECT_EQ(qconv.counts(PHX_OP_QCONV2D).flops, 2.0 * (6 * 3 * 3) * (4 * 3 * 3));
}

TEST(OpCounts, ATransposedConvolutionIsTwoKernelElementsPerInputElement) {
  // weight [C_in 4, C_out 6, 2, 2]: each input element meets 6 x 2 x 2 weights
  const Operands ct({{1, 4, 3, 3}, {4, 6, 2, 2}}, {{1, 6, 4, 4}});
  EXPECT_EQ(ct.counts(PHX_OP_CONV_TRANSPOSE2D).flops, 2.0 * (4 * 3 * 3) * (6 * 2 * 2));
}

// Other ops: profiles counted 1 per output element, node_cost 4, the roofline 1 per
// element of the largest operand, which all three now count: a reduction reads every
// input element once.
TEST(OpCounts, AReductionIsOnePerInputElement) {
  const Operands sum({{4, 8}}, {{4, 1}});
  EXPECT_EQ(sum.counts(PHX_OP_REDUCE_SUM).flops, 32.0);
}

// Pools were "other ops" in all three; a window's compares (max) or adds and the mean's
// multiply (avg) per output element are their work.
TEST(OpCounts, APoolIsItsWindowPerOutputElement) {
  phx_pool_params params PHX_POOL_PARAMS_INIT;
  params.kernel[0] = params.kernel[1] = 3;
  params.stride[0] = params.stride[1] = 2;
  const Operands pool({{1, 2, 7, 7}}, {{1, 2, 3, 3}});
  EXPECT_EQ(pool.counts(PHX_OP_MAX_POOL, &params).flops, 18.0 * 9);
  EXPECT_EQ(pool.counts(PHX_OP_AVG_POOL, &params).flops, 18.0 * 10);
}

}  // namespace
