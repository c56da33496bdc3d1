// The op conformance suite: every op of API 0.1, on every device found at run time,
// checked against float64 references computed here from the same (dtype-rounded) inputs.
// A device that does not claim an (op, dtype) (phx_device_supports) must answer
// PHX_STATUS_UNSUPPORTED for it; a claimed one must produce the right numbers.
// The tolerances, derived per op from the dtypes and K: op_suite.h.

#include "op_suite.h"

using namespace phx_test;

namespace {

TEST(Devices, AtLeastOneIsFound) {
  phx_context context = nullptr;
  ASSERT_EQ(phx_context_create(suite_context_options(), &context), PHX_STATUS_OK)
      << phx_last_error();
  size_t count = 0;
  EXPECT_EQ(phx_device_count(context, &count), PHX_STATUS_OK);
  EXPECT_GE(count, 1u) << "no device: the CPU plugin was not found beside the library";
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

// ---- The fixture: one context per device's suite, one stream per test -------------------

// ---- Coverage: what the suite tests and what the devices claim ----------------------------

// The dtypes the op rules allow for each op's (first) input, which is what this suite tests.
uint32_t dtypes_the_rules_allow(phx_op_id op) {
  uint32_t floats = 0;
  for (phx_dtype dt : kFloatDtypes) floats |= PHX_DTYPE_BIT(dt);
  uint32_t all = 0;
  for (phx_dtype dt : kAllDtypes) all |= PHX_DTYPE_BIT(dt);
  switch (op) {
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_TRANSPOSE:
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX:
    case PHX_OP_CAST:
    case PHX_OP_CLIP:
    case PHX_OP_MAX:
    case PHX_OP_MIN:
    case PHX_OP_EQUAL:
    case PHX_OP_LESS:
    case PHX_OP_GREATER:
    case PHX_OP_REDUCE_MIN:
    case PHX_OP_ARGMAX:
    case PHX_OP_RESHAPE:
    case PHX_OP_CONCAT:
    case PHX_OP_SLICE:
    case PHX_OP_GATHER:
    case PHX_OP_EXPAND:
    case PHX_OP_TILE:
    case PHX_OP_PAD:
    case PHX_OP_MAX_POOL:
    case PHX_OP_TOP_K:
      return all;
    case PHX_OP_RELU:
    case PHX_OP_NEG:
    case PHX_OP_ABS:
    case PHX_OP_SIGN:
    case PHX_OP_REDUCE_PROD:
      return floats | PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_I16) |
             PHX_DTYPE_BIT(PHX_DTYPE_I32);
    case PHX_OP_WHERE:  // its first input is the condition
    case PHX_OP_NOT:
      return PHX_DTYPE_BIT(PHX_DTYPE_U8);
    case PHX_OP_QUANTIZE:
    case PHX_OP_DYNAMIC_QUANTIZE:
      return PHX_DTYPE_BIT(PHX_DTYPE_F32);
    case PHX_OP_QMATMUL:
    case PHX_OP_QCONV2D:
      return PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_U8) |
             PHX_DTYPE_BIT(PHX_DTYPE_I16);
    case PHX_OP_DEQUANTIZE:
      return PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_U8) |
             PHX_DTYPE_BIT(PHX_DTYPE_I16) | PHX_DTYPE_BIT(PHX_DTYPE_I32);
    default:
      return floats;
  }
}

TEST_P(OpSuite, ClaimsAreWithinTheRulesAndTheDeviceDtypes) {
  for (int op = PHX_OP_MATMUL; op < PHX_OP_COUNT; ++op) {
    for (phx_dtype dt : kAllDtypes) {
      const auto id = static_cast<phx_op_id>(op);
      if (!claims(id, dt)) continue;
      EXPECT_TRUE(dtypes_the_rules_allow(id) & PHX_DTYPE_BIT(dt))
          << phx_op_name(id) << " claimed for " << phx_dtype_name(dt) << ", which its rules forbid";
      EXPECT_TRUE(holds(dt)) << phx_op_name(id) << " claimed for " << phx_dtype_name(dt)
                             << ", which the device cannot hold";
    }
  }
}

// ---- matmul ----------------------------------------------------------------------------------

struct MatmulCase {
  MatmulCase(Shape a_shape, Shape b_shape, bool ta = false, bool tb = false)
      : a(std::move(a_shape)), b(std::move(b_shape)), transpose_a(ta), transpose_b(tb) {}
  MatmulCase& with_bias(Shape shape) {
    bias = std::move(shape);
    has_bias = true;
    return *this;
  }
  MatmulCase& with_activation(phx_activation act) {
    activation = act;
    return *this;
  }
  // a and b in {-1, 0, 1}, the bias from tail_bias_values(): exact sums that put the
  // activation's input over its tails.
  MatmulCase& with_tail_inputs() {
    tail_inputs = true;
    return *this;
  }

  Shape a;  // as stored (transposed when transpose_a)
  Shape b;
  bool transpose_a;
  bool transpose_b;
  Shape bias;
  bool has_bias = false;
  phx_activation activation = PHX_ACTIVATION_NONE;
  bool tail_inputs = false;
};

// Bias values that move small integer sums over gelu's and silu's tails: [-20, 20] in
// steps of 1/4, [-100, -81] in steps of 1 (silu's results stay normal down to -92.4),
// and +-1e4. Every float dtype holds them, and adding an integer in [-3, 3] to one is
// exact in f32, so the activation sees exactly the reference's input.
std::vector<double> tail_bias_values() {
  std::vector<double> v;
  for (int i = -80; i <= 80; ++i) v.push_back(i / 4.0);
  for (int i = -100; i <= -81; ++i) v.push_back(i);
  v.push_back(1e4);
  v.push_back(-1e4);
  return v;
}

class MatmulTest : public OpSuite {
 protected:
  void check(const MatmulCase& c, phx_dtype dt, phx_dtype out_dt, Random& rng) {
    HostTensor a = rng.tensor(dt, c.a);
    HostTensor b = rng.tensor(dt, c.b);
    if (c.tail_inputs) {
      for (double& v : a.values) v = std::nearbyint(v);
      for (double& v : b.values) v = std::nearbyint(v);
    }
    const size_t ra = c.a.size();
    const size_t rb = c.b.size();
    const int64_t m = c.transpose_a ? c.a[ra - 1] : c.a[ra - 2];
    const int64_t k = c.transpose_a ? c.a[ra - 2] : c.a[ra - 1];
    const int64_t n = c.transpose_b ? c.b[rb - 2] : c.b[rb - 1];
    const Shape batch_a(c.a.begin(), c.a.end() - 2);
    const Shape batch_b(c.b.begin(), c.b.end() - 2);
    Shape out_shape = broadcast_shape(batch_a, batch_b);
    out_shape.push_back(m);
    out_shape.push_back(n);
    HostTensor bias;
    if (c.has_bias) bias = rng.tensor(out_dt, c.bias);
    if (c.tail_inputs) {
      const std::vector<double> tail = tail_bias_values();
      for (size_t i = 0; i < bias.values.size(); ++i)
        bias.values[i] = round_to_float(out_dt, tail[i % tail.size()]);
    }
    const HostTensor a_multiplied = as_multiplied(a);
    const HostTensor b_multiplied = as_multiplied(b);

    Expected expected;
    for_each_index(out_shape, [&](const Index& index, int64_t) {
      const Index batch(index.begin(), index.end() - 2);
      const int64_t i = index[index.size() - 2];
      const int64_t j = index.back();
      const int64_t a_base = broadcast_offset(batch_a, batch) * m * k;
      const int64_t b_base = broadcast_offset(batch_b, batch) * k * n;
      double sum = 0.0;
      double abs_sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = a_multiplied.at(a_base + (c.transpose_a ? p * m + i : i * k + p));
        const double y = b_multiplied.at(b_base + (c.transpose_b ? j * k + p : p * n + j));
        sum += x * y;
        abs_sum += std::fabs(x * y);
      }
      if (c.has_bias) {
        const double bv = bias.at(broadcast_offset(bias.shape, index));
        sum += bv;
        abs_sum += std::fabs(bv);
      }
      const double ref = apply_activation(c.activation, sum);
      expected.add(ref, c.tail_inputs
                            ? activation_tolerance(c.activation, ref, out_dt)
                            : accumulation_tolerance(k, abs_sum, c.activation, ref, out_dt));
    });

    const phx_matmul_params params = {sizeof(phx_matmul_params), c.transpose_a ? 1 : 0,
                                      c.transpose_b ? 1 : 0, c.activation};
    std::vector<const HostTensor*> inputs = {&a, &b};
    if (c.has_bias) inputs.push_back(&bias);
    std::ostringstream what;
    what << phx_dtype_name(dt) << "->" << phx_dtype_name(out_dt) << " a" << shape_string(c.a)
         << (c.transpose_a ? "T" : "") << " b" << shape_string(c.b) << (c.transpose_b ? "T" : "")
         << (c.has_bias ? " bias" + shape_string(c.bias) : "") << " act " << c.activation;
    check_op(what.str(), PHX_OP_MATMUL, &params, inputs, out_dt, out_shape, expected);
  }

  // Runs each case for every float dtype, with the output in the same dtype and in f32.
  void check_all(const std::vector<MatmulCase>& cases, uint64_t seed) {
    Random rng(seed);
    for (phx_dtype dt : kFloatDtypes) {
      for (phx_dtype out_dt : {dt, PHX_DTYPE_F32}) {
        for (const MatmulCase& c : cases) check(c, dt, out_dt, rng);
        if (dt == PHX_DTYPE_F32) break;  // f32 -> f32 once
      }
    }
  }
};

TEST_P(MatmulTest, SizesAndKFrom1To1000) {
  std::vector<MatmulCase> cases;
  for (int64_t k : {1, 2, 7, 127, 129, 1000}) cases.emplace_back(Shape{3, k}, Shape{k, 5});
  cases.emplace_back(Shape{1, 1}, Shape{1, 1});
  cases.emplace_back(Shape{1, 129}, Shape{129, 1});
  cases.emplace_back(Shape{127, 33}, Shape{33, 129});
  cases.emplace_back(Shape{129, 64}, Shape{64, 127});
  cases.emplace_back(Shape{1000, 7}, Shape{7, 3});
  cases.emplace_back(Shape{7, 1000}, Shape{1000, 17});
  check_all(cases, 1);
}

TEST_P(MatmulTest, TransposeFlags) {
  std::vector<MatmulCase> cases;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Shape a = ta ? Shape{129, 7} : Shape{7, 129};      // M 7, K 129
      const Shape b = tb ? Shape{127, 129} : Shape{129, 127};  // N 127
      cases.emplace_back(a, b, ta, tb);
      cases.emplace_back(ta ? Shape{2, 5, 3} : Shape{2, 3, 5}, tb ? Shape{4, 5} : Shape{5, 4}, ta,
                         tb);
    }
  }
  check_all(cases, 2);
}

TEST_P(MatmulTest, BatchedWithBroadcastBatchDims) {
  const std::vector<MatmulCase> cases = {
      {{3, 7, 9}, {3, 9, 5}},                        // same batch
      {{2, 3, 7, 9}, {3, 9, 5}},                     // b has fewer batch dims
      {{7, 9}, {4, 9, 5}},                           // a has none
      {{4, 1, 7, 9}, {1, 5, 9, 5}},                  // both sides broadcast
      {{2, 1, 3, 5, 4}, {6, 1, 4, 3}},               // rank 5 against rank 4
      MatmulCase({5, 9, 7}, {1, 5, 9}, true, true),  // with both transposed
      {{2, 3, 7, 9}, {9, 5}},                        // b one matrix for all
      {{37, 1, 16}, {16, 24}},                       // a Linear over [S, B, E]
      {{1, 5, 3, 16}, {16, 8}},                      // and over [1, H, W, C]
  };
  check_all(cases, 3);
}

TEST_P(MatmulTest, BiasVectorAndGeneralBroadcast) {
  const MatmulCase plain({7, 9}, {9, 5});
  const MatmulCase batched({2, 3, 7, 9}, {9, 5});
  const std::vector<MatmulCase> cases = {
      MatmulCase(plain).with_bias({5}),
      MatmulCase(plain).with_bias({7, 1}),       // a column
      MatmulCase(plain).with_bias({7, 5}),       // full
      MatmulCase(plain).with_bias({1}),          // one value
      MatmulCase(plain).with_bias({}),           // a scalar
      MatmulCase(batched).with_bias({3, 1, 5}),  // middle batch dim
      MatmulCase(batched).with_bias({2, 1, 7, 1}),
      MatmulCase(batched).with_bias({1, 5}),        // one row for every batch
      MatmulCase(batched).with_bias({2, 3, 7, 5}),  // a matrix per batch
      MatmulCase({5, 9, 7}, {9, 5}, true).with_bias({5}),
  };
  check_all(cases, 4);
}

// One row of a (a classifier's, a decoder's token): a device may take it with a kernel of
// its own (Vulkan on CPU devices does), b transposed or not, rows of multiples of 8 or not.
TEST_P(MatmulTest, OneRow) {
  const std::vector<MatmulCase> cases = {
      MatmulCase({1, 64}, {40, 64}, false, true).with_bias({40}),
      MatmulCase({1, 67}, {13, 67}, false, true).with_activation(PHX_ACTIVATION_GELU),
      MatmulCase({1, 64}, {64, 24}).with_bias({1}).with_activation(PHX_ACTIVATION_RELU),
      MatmulCase({1, 37}, {37, 21}).with_bias({1, 21}),
      MatmulCase({1, 1000}, {1000, 16}),
  };
  check_all(cases, 6);
}

TEST_P(MatmulTest, FusedActivations) {
  std::vector<MatmulCase> cases;
  for (phx_activation act : kActivations) {
    cases.push_back(MatmulCase({7, 129}, {129, 13}).with_bias({13}).with_activation(act));
    cases.push_back(MatmulCase({2, 5, 3}, {2, 3, 4}).with_activation(act));
    // The tails: a bias [N] (the GEMM's own epilogue on the CPU) and a full one.
    const auto n = static_cast<int64_t>(tail_bias_values().size());
    cases.push_back(
        MatmulCase({4, 3}, {3, n}).with_bias({n}).with_activation(act).with_tail_inputs());
    cases.push_back(
        MatmulCase({2, 4, 3}, {3, n}).with_bias({4, n}).with_activation(act).with_tail_inputs());
  }
  check_all(cases, 5);
}

// ---- Elementwise binary ------------------------------------------------------------------------

const std::vector<std::pair<Shape, Shape>>& broadcast_cases() {
  static const std::vector<std::pair<Shape, Shape>> cases = {
      {{1000}, {1000}},     // same shape
      {{129, 257}, {257}},  // 33153 elements: split over threads
      {{7, 129}, {7, 129}},
      {{7, 129}, {}},          // a scalar
      {{}, {127, 7}},          // a scalar on the left
      {{}, {}},                // scalars on both sides
      {{127, 7}, {7}},         // a row
      {{127, 7}, {127, 1}},    // a column
      {{3, 5, 7}, {3, 1, 7}},  // a middle dim
      {{5, 1, 7}, {1, 6, 1}},  // both sides broadcast
      {{127, 1}, {1, 129}},
      {{2, 3, 4, 5}, {4, 1}},  // ranks differ
      // Innermost sizes that are multiples of 8 (a device may take 8 outputs at a time):
      {{9, 24}, {24}},         // a row
      {{9, 24}, {9, 1}},       // a column
      {{4, 3, 16}, {}},        // a scalar
      {{}, {5, 8}},            // a scalar on the left
      {{3, 2, 8}, {3, 1, 8}},  // a middle dim
  };
  return cases;
}

class BinaryTest : public OpSuite {
 protected:
  static double float_op(phx_op_id op, double a, double b) {
    switch (op) {
      case PHX_OP_ADD:
        return a + b;
      case PHX_OP_SUB:
        return a - b;
      case PHX_OP_MUL:
        return a * b;
      default:
        return a / b;
    }
  }
  static int64_t int_op(phx_op_id op, int64_t a, int64_t b) {
    switch (op) {
      case PHX_OP_ADD:
        return a + b;
      case PHX_OP_SUB:
        return a - b;
      default:
        return a * b;
    }
  }

  void check_dtype(phx_op_id op, phx_dtype dt, Random& rng) {
    for (const auto& shapes : broadcast_cases()) {
      const Shape& shape_a = shapes.first;
      const Shape& shape_b = shapes.second;
      const HostTensor a = rng.tensor(dt, shape_a, -4.0, 4.0);
      // A divisor away from zero: [0.5, 2] with a random sign.
      HostTensor b =
          rng.tensor(dt, shape_b, op == PHX_OP_DIV ? 0.5 : -4.0, op == PHX_OP_DIV ? 2.0 : 4.0);
      if (op == PHX_OP_DIV) {
        for (double& v : b.values) v = rng.integer(0, 1) ? v : -v;
      }
      const Shape out_shape = broadcast_shape(shape_a, shape_b);
      Expected expected;
      for_each_index(out_shape, [&](const Index& index, int64_t) {
        const double x = a.at(broadcast_offset(shape_a, index));
        const double y = b.at(broadcast_offset(shape_b, index));
        if (is_float(dt)) {
          const double ref = float_op(op, x, y);
          expected.add(ref, 2 * kF32Epsilon * std::fabs(ref) + final_rounding(dt, ref));
        } else {
          expected.add(static_cast<double>(wrap_to(
                           dt, int_op(op, static_cast<int64_t>(x), static_cast<int64_t>(y)))),
                       0.0);
        }
      });
      check_op(std::string(phx_dtype_name(dt)) + " " + shape_string(shape_a) + " " +
                   shape_string(shape_b),
               op, nullptr, {&a, &b}, dt, out_shape, expected);
    }
  }

  void check(phx_op_id op, uint64_t seed) {
    Random rng(seed);
    for (phx_dtype dt : kFloatDtypes) check_dtype(op, dt, rng);
    if (op == PHX_OP_DIV) return;  // div is for floats only
    for (phx_dtype dt : kIntDtypes) check_dtype(op, dt, rng);
  }
};

TEST_P(BinaryTest, Add) { check(PHX_OP_ADD, 10); }
TEST_P(BinaryTest, Sub) { check(PHX_OP_SUB, 11); }
TEST_P(BinaryTest, Mul) { check(PHX_OP_MUL, 12); }
TEST_P(BinaryTest, Div) { check(PHX_OP_DIV, 13); }

TEST_P(BinaryTest, IntegersWrapAround) {
  // Full-range operands make add, sub and mul overflow for most elements.
  Random rng(14);
  for (phx_dtype dt : kIntDtypes) {
    const IntRange range = int_range(dt);
    const HostTensor a = rng.tensor(dt, {129}, range.lo, range.hi);
    const HostTensor b = rng.tensor(dt, {129}, range.lo, range.hi);
    for (phx_op_id op : {PHX_OP_ADD, PHX_OP_SUB, PHX_OP_MUL}) {
      Expected expected;
      for (size_t i = 0; i < a.values.size(); ++i) {
        expected.add(static_cast<double>(wrap_to(dt, int_op(op, static_cast<int64_t>(a.values[i]),
                                                            static_cast<int64_t>(b.values[i])))),
                     0.0);
      }
      check_op(std::string(phx_dtype_name(dt)) + " full range", op, nullptr, {&a, &b}, dt, {129},
               expected);
    }
  }
}

// ---- Elementwise unary
// ----------------------------------------------------------------------------

class UnaryTest : public OpSuite {
 protected:
  // Random values in [-6, 6] in shapes that exercise the split and threaded paths, then
  // every value of whole_range_inputs (op_suite.h) in one tensor.
  void check(phx_op_id op, phx_dtype dt, Random& rng) {
    for (const Shape& shape : {Shape{}, Shape{1}, Shape{7}, Shape{1000}, Shape{3, 127},
                               Shape{2, 3, 129}, Shape{129, 257}}) {
      check_values(op, rng.tensor(dt, shape, -6.0, 6.0));
    }
    if (!is_float(dt)) return;
    std::vector<double> values = whole_range_inputs(dt);
    const Shape shape = {static_cast<int64_t>(values.size())};
    check_values(op, HostTensor{dt, shape, std::move(values)});
  }

  void check_values(phx_op_id op, const HostTensor& x) {
    const phx_activation act = op == PHX_OP_RELU   ? PHX_ACTIVATION_RELU
                               : op == PHX_OP_GELU ? PHX_ACTIVATION_GELU
                                                   : PHX_ACTIVATION_SILU;
    Expected expected;
    for (double v : x.values) {
      const double ref = apply_activation(act, v);
      if (act != PHX_ACTIVATION_RELU) {
        expected.add(ref, activation_tolerance(act, ref, x.dtype));
      } else if (ref == 0.0) {
        // relu(-0) may be -0 or +0 (docs/ops.md): a tolerance of the least double takes
        // either zero and nothing else.
        expected.add(0.0, std::numeric_limits<double>::denorm_min());
      } else {
        expected.add(ref, 0.0);  // relu is exact
      }
    }
    check_op(std::string(phx_dtype_name(x.dtype)) + shape_string(x.shape), op, nullptr, {&x},
             x.dtype, x.shape, expected);
  }
};

TEST_P(UnaryTest, Relu) {
  Random rng(20);
  for (phx_dtype dt : kFloatDtypes) check(PHX_OP_RELU, dt, rng);
  for (phx_dtype dt : {PHX_DTYPE_I8, PHX_DTYPE_I16, PHX_DTYPE_I32}) check(PHX_OP_RELU, dt, rng);
}

TEST_P(UnaryTest, Gelu) {
  Random rng(21);
  for (phx_dtype dt : kFloatDtypes) check(PHX_OP_GELU, dt, rng);
}

TEST_P(UnaryTest, Silu) {
  Random rng(22);
  for (phx_dtype dt : kFloatDtypes) check(PHX_OP_SILU, dt, rng);
}

// ---- softmax
// --------------------------------------------------------------------------------------

TEST_P(OpSuite, SoftmaxOnSeveralAxes) {
  struct Case {
    Shape shape;
    int32_t axis;
    double range;  // inputs in [-range, range]
  };
  const std::vector<Case> cases = {
      {{1000}, -1, 8.0},     {{7, 129}, -1, 8.0},  {{7, 129}, 0, 8.0},   {{7, 129}, 1, 8.0},
      {{3, 5, 7}, 1, 8.0},   {{3, 5, 7}, -3, 8.0}, {{3, 5, 7}, -2, 8.0}, {{1, 1}, -1, 8.0},
      {{4, 127}, -1, 100.0},  // exp(100) overflows f32: the max must be subtracted
      {{257, 129}, -1, 8.0}, {{257, 129}, 0, 8.0},  // split over threads
      {{1030, 65}, -1, 8.0},                        // many lines (a line per invocation)
  };
  Random rng(30);
  for (phx_dtype dt : kFloatDtypes) {
    for (const Case& c : cases) {
      const HostTensor x = rng.tensor(dt, c.shape, -c.range, c.range);
      const auto rank = static_cast<int32_t>(c.shape.size());
      const auto axis = static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis);
      const int64_t n = c.shape[axis];
      int64_t inner = 1;
      for (size_t d = axis + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
      const int64_t outer = element_count(c.shape) / (n * inner);
      Expected expected;
      expected.values.resize(x.values.size());
      expected.tolerances.resize(x.values.size());
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t in = 0; in < inner; ++in) {
          auto at = [&](int64_t i) { return static_cast<size_t>((o * n + i) * inner + in); };
          double max = -INFINITY;
          for (int64_t i = 0; i < n; ++i) max = std::max(max, x.values[at(i)]);
          double sum = 0.0;
          for (int64_t i = 0; i < n; ++i) sum += std::exp(x.values[at(i)] - max);
          for (int64_t i = 0; i < n; ++i) {
            const double ref = std::exp(x.values[at(i)] - max) / sum;
            expected.values[at(i)] = ref;
            expected.tolerances[at(i)] =
                static_cast<double>(n + 32) * kF32Epsilon * ref + 1e-7 + final_rounding(dt, ref);
          }
        }
      }
      const phx_softmax_params params = {sizeof(phx_softmax_params), c.axis};
      check_op(std::string(phx_dtype_name(dt)) + shape_string(c.shape) + " axis " +
                   std::to_string(c.axis),
               PHX_OP_SOFTMAX, &params, {&x}, dt, c.shape, expected);
    }
  }
}

// ---- layer_norm and rms_norm ------------------------------------------------------------------

struct NormCase {
  Shape shape;
  bool gamma;
  bool beta;  // layer_norm only
  float epsilon;
  bool constant_rows = false;  // every row one value: the variance is 0, eps alone divides
};

class NormTest : public OpSuite {
 protected:
  void check(phx_op_id op, const NormCase& c, phx_dtype dt, Random& rng, bool short_form) {
    // An offset mean, so that a variance computed as E[x^2] - E[x]^2 loses accuracy.
    HostTensor x = rng.tensor(dt, c.shape, -0.5, 1.5);
    const int64_t n = c.shape.back();
    if (c.constant_rows) {
      for (size_t i = 0; i < x.values.size(); ++i)
        x.values[i] = x.values[i - i % static_cast<size_t>(n)];
    }
    const HostTensor gamma = rng.tensor(dt, {n}, -2.0, 2.0);
    const HostTensor beta = rng.tensor(dt, {n}, -1.0, 1.0);
    Expected expected;
    const double eps = c.epsilon;
    for (int64_t row = 0; row < element_count(c.shape) / n; ++row) {
      const double* v = &x.values[static_cast<size_t>(row * n)];
      double mean = 0.0;
      double mean_square = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        mean += v[i] / static_cast<double>(n);
        mean_square += v[i] * v[i] / static_cast<double>(n);
      }
      double variance = 0.0;
      for (int64_t i = 0; i < n; ++i)
        variance += (v[i] - mean) * (v[i] - mean) / static_cast<double>(n);
      for (int64_t i = 0; i < n; ++i) {
        const double g = c.gamma ? gamma.at(i) : 1.0;
        const double b = c.beta ? beta.at(i) : 0.0;
        const auto growth = static_cast<double>(n);
        if (op == PHX_OP_LAYER_NORM) {
          const double xhat = (v[i] - mean) / std::sqrt(variance + eps);
          const double ref = xhat * g + b;
          expected.add(ref, (2 * growth + 32) * kF32Epsilon *
                                    ((std::fabs(xhat) + 1) * std::fabs(g) + std::fabs(b)) +
                                final_rounding(dt, ref));
        } else {
          const double ref = v[i] / std::sqrt(mean_square + eps) * g;
          expected.add(
              ref, (growth + 32) * kF32Epsilon * std::fabs(ref) + 1e-6 + final_rounding(dt, ref));
        }
      }
    }
    // The long form passes every optional input, null when absent; the short form drops
    // the absent ones at the end.
    std::vector<const HostTensor*> inputs = {&x, c.gamma ? &gamma : nullptr};
    if (op == PHX_OP_LAYER_NORM) inputs.push_back(c.beta ? &beta : nullptr);
    while (short_form && inputs.size() > 1 && inputs.back() == nullptr) inputs.pop_back();
    const phx_norm_params params = {sizeof(phx_norm_params), c.epsilon};
    std::ostringstream what;
    what << phx_dtype_name(dt) << shape_string(c.shape) << (c.gamma ? " gamma" : "")
         << (c.beta ? " beta" : "") << " eps " << c.epsilon << (c.constant_rows ? " constant" : "")
         << (short_form ? " short form" : "");
    check_op(what.str(), op, &params, inputs, dt, c.shape, expected);
  }
};

TEST_P(NormTest, LayerNormWithAndWithoutGammaBeta) {
  Random rng(40);
  for (phx_dtype dt : kFloatDtypes) {
    for (bool gamma : {false, true}) {
      for (bool beta : {false, true}) {
        for (const Shape& shape : {Shape{7, 129}, Shape{2, 3, 1000}, Shape{127, 7}, Shape{3, 1},
                                   Shape{257, 129}, Shape{1030, 65}}) {
          check(PHX_OP_LAYER_NORM, {shape, gamma, beta, 1e-5f}, dt, rng, false);
        }
        check(PHX_OP_LAYER_NORM, {{5, 33}, gamma, beta, 0.5f}, dt, rng, true);
        check(PHX_OP_LAYER_NORM, {{4, 17}, gamma, beta, 0.25f, true}, dt, rng, false);
      }
    }
  }
}

TEST_P(NormTest, RmsNormWithAndWithoutGamma) {
  Random rng(41);
  for (phx_dtype dt : kFloatDtypes) {
    for (bool gamma : {false, true}) {
      for (const Shape& shape :
           {Shape{7, 129}, Shape{2, 3, 1000}, Shape{127, 7}, Shape{3, 1}, Shape{257, 129}}) {
        check(PHX_OP_RMS_NORM, {shape, gamma, false, 1e-5f}, dt, rng, false);
      }
      check(PHX_OP_RMS_NORM, {{5, 33}, gamma, false, 0.5f}, dt, rng, true);
      check(PHX_OP_RMS_NORM, {{4, 17}, gamma, false, 0.25f, true}, dt, rng, false);
    }
  }
}

// ---- transpose
// ------------------------------------------------------------------------------------

TEST_P(OpSuite, TransposePermsOfRanks2To4) {
  struct Case {
    Shape shape;
    std::vector<uint32_t> perm;
  };
  std::vector<Case> cases = {{{7, 129}, {1, 0}},
                             {{129, 127}, {1, 0}},
                             {{1, 1000}, {1, 0}},
                             {{7, 129}, {0, 1}},
                             {{129, 257}, {1, 0}}};
  std::vector<uint32_t> perm3 = {0, 1, 2};
  do {
    cases.push_back({{3, 5, 7}, perm3});
  } while (std::next_permutation(perm3.begin(), perm3.end()));
  for (const auto& perm : std::vector<std::vector<uint32_t>>{
           {0, 2, 1, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}, {0, 1, 3, 2}}) {
    cases.push_back({{2, 3, 4, 5}, perm});
  }
  // The last axis kept, rows of multiples of 8 (attention heads, ShuffleNet's channels).
  cases.push_back({{4, 3, 2, 16}, {2, 0, 1, 3}});
  cases.push_back({{1, 2, 3, 40}, {0, 2, 1, 3}});
  Random rng(50);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      const HostTensor x = rng.tensor(dt, c.shape, -100.0, 100.0);
      Shape out_shape;
      for (uint32_t p : c.perm) out_shape.push_back(c.shape[p]);
      Expected expected;
      for_each_index(out_shape, [&](const Index& out_index, int64_t) {
        Index in_index(c.shape.size());
        for (size_t i = 0; i < c.perm.size(); ++i) in_index[c.perm[i]] = out_index[i];
        int64_t offset = 0;
        for (size_t d = 0; d < c.shape.size(); ++d) offset = offset * c.shape[d] + in_index[d];
        expected.add(x.at(offset), 0.0);
      });
      phx_transpose_params params = {sizeof(phx_transpose_params), {}};
      std::copy(c.perm.begin(), c.perm.end(), params.perm);
      std::string what = std::string(phx_dtype_name(dt)) + shape_string(c.shape) + " perm";
      for (uint32_t p : c.perm) what += " " + std::to_string(p);
      check_op(what, PHX_OP_TRANSPOSE, &params, {&x}, dt, out_shape, expected);
    }
  }
}

// ---- reduce_sum and reduce_max
// --------------------------------------------------------------------

TEST_P(OpSuite, ReductionsOverAxisMasks) {
  struct Case {
    Shape shape;
    std::vector<uint32_t> masks;
  };
  const std::vector<Case> cases = {{{1000}, {0, 1}},
                                   {{7, 129}, {0, 1, 2, 3}},
                                   {{3, 5, 7}, {1, 2, 4, 5, 6, 7}},
                                   {{2, 3, 4, 5}, {0b1010, 0b0101, 0b1000}},
                                   {{129, 257}, {0, 1, 2}}};
  Random rng(60);
  for (phx_op_id op : {PHX_OP_REDUCE_SUM, PHX_OP_REDUCE_MAX}) {
    for (phx_dtype dt : kAllDtypes) {
      for (const Case& c : cases) {
        const HostTensor x = is_float(dt) ? rng.tensor(dt, c.shape, -2.0, 2.0)
                                          : rng.tensor(dt, c.shape, -1e9, 1e9);  // sums wrap
        for (uint32_t mask : c.masks) {
          const uint32_t reduced = mask == 0 ? (1u << c.shape.size()) - 1 : mask;
          for (bool keep_dims : {false, true}) {
            Shape out_shape;
            Shape kept_shape;  // the output shape with the reduced dims kept as 1
            for (size_t d = 0; d < c.shape.size(); ++d) {
              const bool r = (reduced >> d) & 1;
              if (!r || keep_dims) out_shape.push_back(r ? 1 : c.shape[d]);
              kept_shape.push_back(r ? 1 : c.shape[d]);
            }
            std::vector<double> acc(static_cast<size_t>(element_count(kept_shape)),
                                    op == PHX_OP_REDUCE_MAX ? -INFINITY : 0.0);
            std::vector<double> abs_sum(acc.size(), 0.0);
            std::vector<int64_t> int_sum(acc.size(), 0);
            for_each_index(c.shape, [&](const Index& index, int64_t flat) {
              const auto o = static_cast<size_t>(broadcast_offset(kept_shape, index));
              const double v = x.at(flat);
              acc[o] = op == PHX_OP_REDUCE_MAX ? std::max(acc[o], v) : acc[o] + v;
              abs_sum[o] += std::fabs(v);
              int_sum[o] += static_cast<int64_t>(v);
            });
            const double count =
                static_cast<double>(element_count(c.shape)) / static_cast<double>(acc.size());
            Expected expected;
            for (size_t o = 0; o < acc.size(); ++o) {
              if (op == PHX_OP_REDUCE_MAX) {
                expected.add(acc[o], 0.0);
              } else if (is_float(dt)) {
                expected.add(acc[o],
                             (count + 2) * kF32Epsilon * abs_sum[o] + final_rounding(dt, acc[o]));
              } else {
                expected.add(static_cast<double>(wrap_to(dt, int_sum[o])), 0.0);
              }
            }
            const phx_reduce_params params = {sizeof(phx_reduce_params), mask, keep_dims ? 1 : 0};
            check_op(std::string(phx_dtype_name(dt)) + shape_string(c.shape) + " mask " +
                         std::to_string(mask) + (keep_dims ? " keep" : ""),
                     op, &params, {&x}, dt, out_shape, expected);
          }
        }
      }
    }
  }
}

// ---- cast
// -------------------------------------------------------------------------------------------

// Values that exercise rounding ties, saturation, overflow, subnormals, infinities and NaN.
const std::vector<double>& cast_values() {
  static const std::vector<double> values = {0.0,
                                             -0.0,
                                             1.0,
                                             -1.0,
                                             0.5,
                                             -0.5,
                                             1.5,
                                             2.5,
                                             -2.5,
                                             3.5,
                                             0x1.FFFFFEp-2 /* just below 0.5 */,
                                             100.5,
                                             127.0,
                                             127.5,
                                             128.0,
                                             -128.0,
                                             -128.5,
                                             -129.0,
                                             200.0,
                                             254.5,
                                             255.0,
                                             255.5,
                                             256.0,
                                             300.0,
                                             -300.0,
                                             1000.0,
                                             -1000.0,
                                             2049.0,
                                             2051.0,
                                             257.0,
                                             259.0,
                                             32767.0,
                                             32767.5,
                                             -32768.0,
                                             -32768.5,
                                             40000.0,
                                             -40000.0,
                                             65504.0,
                                             65519.0,
                                             65520.0,
                                             70000.0,
                                             1e5,
                                             -1e5,
                                             16777217.0,
                                             16777219.0,
                                             2147483520.0,
                                             2147483647.0,
                                             2147483648.0,
                                             -2147483648.0,
                                             -2147483904.0,
                                             1e10,
                                             -1e10,
                                             1.0 + 0x1p-8,
                                             1.0 + 3 * 0x1p-8,
                                             1.0 + 0x1p-11,
                                             1.0 + 3 * 0x1p-11,
                                             0x1p-25,
                                             3 * 0x1p-25,
                                             0x1p-24,
                                             1e-8,
                                             6e-5,
                                             0x1.8p-129 /* an f32 subnormal */,
                                             INFINITY,
                                             -INFINITY,
                                             NAN};
  return values;
}

// cast_values() as dt holds them: rounded to a float dtype, or those an integer dtype
// holds exactly.
HostTensor cast_source(phx_dtype dt) {
  HostTensor t{dt, {}, {}};
  for (double v : cast_values()) {
    if (is_float(dt)) {
      t.values.push_back(round_to_float(dt, v));
    } else if (v == std::trunc(v) && v >= int_range(dt).lo && v <= int_range(dt).hi) {
      t.values.push_back(v + 0.0);  // + 0.0 turns -0 into 0
    }
  }
  t.shape = {static_cast<int64_t>(t.values.size())};
  return t;
}

TEST_P(OpSuite, CastBetweenEveryDtypePair) {
  for (phx_dtype from : kAllDtypes) {
    const HostTensor x = cast_source(from);
    for (phx_dtype to : kAllDtypes) {
      Expected expected;
      for (double v : x.values) {
        // Integer to integer keeps the low bits (docs/ops.md: i32 300 -> i8 44).
        const bool int_to_int = !is_float(from) && !is_float(to);
        expected.add(int_to_int ? static_cast<double>(wrap_to(to, static_cast<int64_t>(v)))
                                : round_to(to, v),
                     0.0);
      }
      check_op(std::string(phx_dtype_name(from)) + "->" + phx_dtype_name(to), PHX_OP_CAST, nullptr,
               {&x}, to, x.shape, expected);
    }
  }
}

// ---- conv2d
// -----------------------------------------------------------------------------------------

struct ConvCase {
  ConvCase(int64_t n_, int64_t c_, int64_t h_, int64_t w_, int64_t c_out_, int64_t kh_, int64_t kw_)
      : n(n_), c(c_), h(h_), w(w_), c_out(c_out_), kh(kh_), kw(kw_) {}

  int64_t n, c, h, w, c_out, kh, kw;
  uint32_t stride_h = 1, stride_w = 1;
  uint32_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  uint32_t dilation_h = 1, dilation_w = 1;
  uint32_t groups = 1;
  bool bias = false;
  phx_activation activation = PHX_ACTIVATION_NONE;
};

class Conv2dTest : public OpSuite {
 protected:
  void check(const ConvCase& c, phx_layout layout, phx_dtype dt, Random& rng) {
    const bool nchw = layout == PHX_LAYOUT_NCHW;
    const int64_t cg = c.c / c.groups;  // input channels per group
    const int64_t cout_g = c.c_out / c.groups;
    const int64_t h_out =
        (c.h + c.pad_top + c.pad_bottom - c.dilation_h * (c.kh - 1) - 1) / c.stride_h + 1;
    const int64_t w_out =
        (c.w + c.pad_left + c.pad_right - c.dilation_w * (c.kw - 1) - 1) / c.stride_w + 1;
    const Shape x_shape = nchw ? Shape{c.n, c.c, c.h, c.w} : Shape{c.n, c.h, c.w, c.c};
    const Shape w_shape = nchw ? Shape{c.c_out, cg, c.kh, c.kw} : Shape{c.c_out, c.kh, c.kw, cg};
    const Shape out_shape =
        nchw ? Shape{c.n, c.c_out, h_out, w_out} : Shape{c.n, h_out, w_out, c.c_out};
    const HostTensor x = rng.tensor(dt, x_shape);
    const HostTensor weight = rng.tensor(dt, w_shape);
    const HostTensor bias = rng.tensor(dt, {c.c_out});
    const HostTensor x_multiplied = as_multiplied(x);
    const HostTensor weight_multiplied = as_multiplied(weight);
    auto x_at = [&](int64_t n, int64_t ch, int64_t i, int64_t j) {
      return x_multiplied.at(nchw ? ((n * c.c + ch) * c.h + i) * c.w + j
                                  : ((n * c.h + i) * c.w + j) * c.c + ch);
    };
    auto w_at = [&](int64_t o, int64_t ci, int64_t i, int64_t j) {
      return weight_multiplied.at(nchw ? ((o * cg + ci) * c.kh + i) * c.kw + j
                                       : ((o * c.kh + i) * c.kw + j) * cg + ci);
    };
    std::vector<double> values(static_cast<size_t>(element_count(out_shape)));
    std::vector<double> tolerances(values.size());
    for (int64_t n = 0; n < c.n; ++n) {
      for (int64_t o = 0; o < c.c_out; ++o) {
        const int64_t group = o / cout_g;
        for (int64_t oi = 0; oi < h_out; ++oi) {
          for (int64_t oj = 0; oj < w_out; ++oj) {
            double sum = c.bias ? bias.at(o) : 0.0;
            double abs_sum = std::fabs(sum);
            for (int64_t ci = 0; ci < cg; ++ci) {
              for (int64_t ki = 0; ki < c.kh; ++ki) {
                for (int64_t kj = 0; kj < c.kw; ++kj) {
                  const int64_t i = oi * c.stride_h + ki * c.dilation_h - c.pad_top;
                  const int64_t j = oj * c.stride_w + kj * c.dilation_w - c.pad_left;
                  if (i < 0 || i >= c.h || j < 0 || j >= c.w) continue;  // zero padding
                  const double product = x_at(n, group * cg + ci, i, j) * w_at(o, ci, ki, kj);
                  sum += product;
                  abs_sum += std::fabs(product);
                }
              }
            }
            const double ref = apply_activation(c.activation, sum);
            const auto at =
                static_cast<size_t>(nchw ? ((n * c.c_out + o) * h_out + oi) * w_out + oj
                                         : ((n * h_out + oi) * w_out + oj) * c.c_out + o);
            values[at] = ref;
            tolerances[at] =
                accumulation_tolerance(cg * c.kh * c.kw, abs_sum, c.activation, ref, dt);
          }
        }
      }
    }
    phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;
    params.layout = layout;
    params.stride[0] = c.stride_h;
    params.stride[1] = c.stride_w;
    params.padding[0] = c.pad_top;
    params.padding[1] = c.pad_bottom;
    params.padding[2] = c.pad_left;
    params.padding[3] = c.pad_right;
    params.dilation[0] = c.dilation_h;
    params.dilation[1] = c.dilation_w;
    params.groups = c.groups;
    params.activation = c.activation;
    std::vector<const HostTensor*> inputs = {&x, &weight};
    if (c.bias) inputs.push_back(&bias);
    std::ostringstream what;
    what << phx_dtype_name(dt) << (nchw ? " NCHW x" : " NHWC x") << shape_string(x_shape) << " w"
         << shape_string(w_shape) << " stride " << c.stride_h << "," << c.stride_w << " pad "
         << c.pad_top << "," << c.pad_bottom << "," << c.pad_left << "," << c.pad_right
         << " dilation " << c.dilation_h << "," << c.dilation_w << " groups " << c.groups
         << (c.bias ? " bias" : "") << " act " << c.activation;
    check_op(what.str(), PHX_OP_CONV2D, &params, inputs, dt, out_shape,
             Expected{std::move(values), std::move(tolerances)});
  }

  void check_all(const std::vector<ConvCase>& cases, uint64_t seed) {
    Random rng(seed);
    for (phx_dtype dt : kFloatDtypes) {
      for (phx_layout layout : {PHX_LAYOUT_NCHW, PHX_LAYOUT_NHWC}) {
        for (const ConvCase& c : cases) check(c, layout, dt, rng);
      }
    }
  }
};

TEST_P(Conv2dTest, Plain) {
  check_all({ConvCase(2, 3, 7, 9, 4, 3, 3), ConvCase(1, 1, 1, 1, 1, 1, 1),
             ConvCase(1, 5, 13, 11, 7, 1, 1), ConvCase(1, 64, 6, 5, 3, 3, 3),  // K = 576
             ConvCase(1, 2, 8, 8, 3, 8, 8)},  // the kernel covers the whole input
            70);
}

TEST_P(Conv2dTest, StrideAsymmetricPaddingDilation) {
  ConvCase strided{2, 3, 11, 13, 4, 3, 3};
  strided.stride_h = 2;
  strided.stride_w = 3;
  ConvCase padded{1, 3, 7, 9, 5, 3, 2};
  padded.pad_top = 1;
  padded.pad_bottom = 0;
  padded.pad_left = 2;
  padded.pad_right = 3;
  ConvCase dilated{1, 2, 12, 10, 3, 3, 3};
  dilated.dilation_h = 2;
  dilated.dilation_w = 3;
  ConvCase wide_stride{1, 2, 9, 40, 3, 3, 3};  // 8 outputs span 38 inputs of a row
  wide_stride.stride_w = 5;
  ConvCase all{2, 4, 15, 14, 6, 3, 2};
  all.stride_h = 2;
  all.stride_w = 1;
  all.pad_top = 2;
  all.pad_bottom = 1;
  all.pad_left = 0;
  all.pad_right = 1;
  all.dilation_h = 1;
  all.dilation_w = 2;
  check_all({strided, padded, dilated, wide_stride, all}, 71);
}

TEST_P(Conv2dTest, GroupsAndDepthwise) {
  ConvCase grouped{2, 4, 7, 8, 6, 3, 3};
  grouped.groups = 2;
  ConvCase three_groups{1, 9, 6, 6, 3, 2, 2};
  three_groups.groups = 3;
  ConvCase depthwise{2, 5, 9, 7, 5, 3, 3};
  depthwise.groups = 5;
  depthwise.pad_top = depthwise.pad_bottom = depthwise.pad_left = depthwise.pad_right = 1;
  ConvCase depthwise_multiplier{1, 4, 8, 9, 8, 3, 3};  // two outputs per input channel
  depthwise_multiplier.groups = 4;
  depthwise_multiplier.stride_h = depthwise_multiplier.stride_w = 2;
  ConvCase depthwise_7x7{1, 6, 10, 19, 6, 7, 7};  // ConvNeXt's
  depthwise_7x7.groups = 6;
  depthwise_7x7.pad_top = depthwise_7x7.pad_bottom = 3;
  depthwise_7x7.pad_left = depthwise_7x7.pad_right = 3;
  ConvCase depthwise_5x5{1, 4, 11, 21, 4, 5, 5};
  depthwise_5x5.groups = 4;
  depthwise_5x5.stride_h = depthwise_5x5.stride_w = 2;
  depthwise_5x5.pad_left = depthwise_5x5.pad_top = 2;
  depthwise_5x5.dilation_w = 2;
  ConvCase groups_of_8{1, 16, 6, 11, 16, 3, 3};  // RegNet's group width
  groups_of_8.groups = 2;
  groups_of_8.pad_left = groups_of_8.pad_right = 1;
  check_all({grouped, three_groups, depthwise, depthwise_multiplier, depthwise_7x7, depthwise_5x5,
             groups_of_8},
            72);
}

TEST_P(Conv2dTest, BiasAndFusedActivations) {
  std::vector<ConvCase> cases;
  for (phx_activation act : kActivations) {
    ConvCase c{2, 3, 7, 6, 4, 3, 3};
    c.bias = true;
    c.activation = act;
    c.pad_top = c.pad_left = 1;
    cases.push_back(c);
  }
  ConvCase depthwise_bias{1, 6, 5, 5, 6, 3, 3};
  depthwise_bias.groups = 6;
  depthwise_bias.bias = true;
  cases.push_back(depthwise_bias);
  check_all(cases, 73);
}

// Shapes a device may run as a matmul (Vulkan does, for NCHW groups of 32 outputs or 8
// outputs from more than 16 channels, and 8 inputs x taps or more): K and the output
// positions not multiples of 8 (padded columns), a 1x1 convolution that is a matmul of x
// itself, more than one 128 x 128 tile, groups, the strided 7x7 of a ResNet's stem, every
// activation in the matmul's epilogue.
TEST_P(Conv2dTest, ShapesOfAMatmul) {
  std::vector<ConvCase> cases;
  ConvCase padded_k{2, 3, 9, 10, 32, 3, 3};  // K 27, 90 positions
  padded_k.pad_top = padded_k.pad_bottom = padded_k.pad_left = padded_k.pad_right = 1;
  cases.push_back(padded_k);
  cases.push_back(ConvCase(2, 16, 4, 6, 32, 1, 1));  // K 16, 24 positions: x itself
  cases.push_back(ConvCase(1, 12, 5, 5, 32, 1, 1));  // K 12
  cases.push_back(ConvCase(1, 24, 7, 9, 16, 1, 1));  // 16 outputs from 24 channels
  ConvCase grouped{1, 16, 9, 7, 64, 3, 3};
  grouped.groups = 2;
  grouped.stride_h = 2;
  grouped.dilation_w = 2;
  cases.push_back(grouped);
  ConvCase stem{1, 3, 20, 18, 32, 7, 7};
  stem.stride_h = stem.stride_w = 2;
  stem.pad_top = stem.pad_bottom = stem.pad_left = stem.pad_right = 3;
  cases.push_back(stem);
  ConvCase rows_of_16{1, 8, 6, 16, 32, 3, 3};  // output rows of whole eights
  rows_of_16.pad_top = rows_of_16.pad_bottom = rows_of_16.pad_left = rows_of_16.pad_right = 1;
  cases.push_back(rows_of_16);
  ConvCase strided_rows{1, 4, 9, 32, 32, 3, 3};  // the same, strided
  strided_rows.stride_h = strided_rows.stride_w = 2;
  strided_rows.pad_top = strided_rows.pad_left = strided_rows.pad_right = 1;
  cases.push_back(strided_rows);
  ConvCase squeeze{1, 40, 1, 1, 96, 1, 1};  // a squeeze-excitation's 1x1 of one position
  squeeze.bias = true;
  squeeze.activation = PHX_ACTIVATION_SILU;
  cases.push_back(squeeze);
  cases.push_back(ConvCase(1, 13, 1, 1, 32, 1, 1));  // the same, K 13
  ConvCase tiles{1, 32, 20, 20, 136, 3, 3};          // m 136, 400 positions
  tiles.bias = true;
  cases.push_back(tiles);
  for (phx_activation act : kActivations) {
    ConvCase c{2, 3, 7, 6, 32, 3, 3};
    c.bias = true;
    c.activation = act;
    c.pad_top = c.pad_left = 1;
    cases.push_back(c);
  }
  check_all(cases, 74);
}

// Columns of 6.5 MB per image: a device that writes them in chunks of images (Vulkan's are
// at most 16 MiB) takes three images in two chunks.
TEST_P(Conv2dTest, ImagesInChunks) {
  ConvCase c{3, 8, 150, 150, 32, 3, 3};
  c.pad_top = c.pad_bottom = c.pad_left = c.pad_right = 1;
  c.bias = true;
  Random rng(75);
  check(c, PHX_LAYOUT_NCHW, PHX_DTYPE_F32, rng);
}

// ---- Streams, tickets, profiling, memory, transfers -------------------------------------------

// Each op reads the previous op's output, so a stream that ran them out of order would
// leave another value.
TEST_P(OpSuite, StreamsRunInOrderAndTicketsCanBeWaitedOn) {
  if (!claims(PHX_OP_ADD, PHX_DTYPE_F32)) GTEST_SKIP() << "add f32 is not claimed";
  const HostTensor one{PHX_DTYPE_F32, {129}, std::vector<double>(129, 1.0)};
  const HostTensor zero{PHX_DTYPE_F32, {129}, std::vector<double>(129, 0.0)};
  const Tensor ones = upload(one);
  const Tensor ping = upload(zero);
  const Tensor pong = make(PHX_DTYPE_F32, {129});
  constexpr int kOps = 6;
  std::vector<uint64_t> tickets;
  for (int i = 0; i < kOps; ++i) {
    const phx_tensor in = i % 2 == 0 ? ping.get() : pong.get();
    const phx_tensor out = i % 2 == 0 ? pong.get() : ping.get();
    const phx_tensor inputs[] = {in, ones.get()};
    const phx_op_desc desc = {sizeof desc, PHX_OP_ADD, nullptr, inputs, 2, &out, 1};
    uint64_t ticket = 0;
    ASSERT_EQ(phx_op_run(stream_, &desc, &ticket), PHX_STATUS_OK) << phx_last_error();
    tickets.push_back(ticket);
  }
  for (int i = 0; i < kOps; ++i) {
    EXPECT_EQ(tickets[static_cast<size_t>(i)], static_cast<uint64_t>(i + 1))
        << "tickets of a new stream go 1, 2, 3...";
  }
  for (uint64_t ticket : tickets) {
    EXPECT_EQ(phx_stream_wait(stream_, ticket), PHX_STATUS_OK) << phx_last_error();
  }
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  for (uint64_t ticket : tickets) {
    int done = -1;
    EXPECT_EQ(phx_stream_query(stream_, ticket, &done), PHX_STATUS_OK);
    EXPECT_EQ(done, 1) << "ticket " << ticket;
  }
  EXPECT_EQ(phx_stream_wait(stream_, tickets.back() + 1), PHX_STATUS_INVALID_ARGUMENT)
      << "a ticket not yet issued";
  // A null out_ticket is allowed.
  const phx_tensor inputs[] = {ping.get(), ones.get()};
  const phx_tensor out = pong.get();
  const phx_op_desc desc = {sizeof desc, PHX_OP_ADD, nullptr, inputs, 2, &out, 1};
  ASSERT_EQ(phx_op_run(stream_, &desc, nullptr), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  for (double v : download(pong, PHX_DTYPE_F32, 129)) ASSERT_EQ(v, kOps + 1.0);
}

TEST_P(OpSuite, ProfileRecordsOneEntryPerOp) {
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  if (suite_context_options() != nullptr) options = *suite_context_options();
  options.flags |= PHX_CONTEXT_PROFILE;
  phx_context context = nullptr;
  ASSERT_EQ(phx_context_create(&options, &context), PHX_STATUS_OK) << phx_last_error();
  // Destroyed however the test ends (a skip or a failed assertion returns early), with
  // the stream and tensors still in it.
  const std::unique_ptr<phx_context_s, phx_status (*)(phx_context)> owner(context,
                                                                          phx_context_destroy);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context, device(), &stream), PHX_STATUS_OK) << phx_last_error();
  {
    Tensor a, b, product, relu_out, sum;
    ASSERT_EQ(create_tensor(context, device(), PHX_DTYPE_F32, {8, 4}, &a), PHX_STATUS_OK);
    ASSERT_EQ(create_tensor(context, device(), PHX_DTYPE_F32, {4, 8}, &b), PHX_STATUS_OK);
    ASSERT_EQ(create_tensor(context, device(), PHX_DTYPE_F32, {8, 8}, &product), PHX_STATUS_OK);
    ASSERT_EQ(create_tensor(context, device(), PHX_DTYPE_F32, {8, 8}, &relu_out), PHX_STATUS_OK);
    ASSERT_EQ(create_tensor(context, device(), PHX_DTYPE_F32, {8, 4}, &sum), PHX_STATUS_OK);
    const std::vector<float> zeros(32, 0.0f);
    ASSERT_EQ(phx_tensor_upload(a.get(), 0, zeros.data(), 128), PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_upload(b.get(), 0, zeros.data(), 128), PHX_STATUS_OK);

    struct Submitted {
      phx_op_id op;
      uint64_t ticket;
      std::string signature;  // in the format of the header's example
    };
    std::vector<Submitted> submitted;
    auto submit = [&](phx_op_id op, std::vector<phx_tensor> inputs, phx_tensor out,
                      const std::string& signature) {
      if (!claims(op, PHX_DTYPE_F32)) return;
      const phx_op_desc desc = {sizeof desc, op, nullptr, inputs.data(), inputs.size(), &out, 1};
      uint64_t ticket = 0;
      EXPECT_EQ(phx_op_run(stream, &desc, &ticket), PHX_STATUS_OK) << phx_last_error();
      submitted.push_back({op, ticket, signature});
    };
    submit(PHX_OP_MATMUL, {a.get(), b.get()}, product.get(), "f32[8x4], f32[4x8] -> f32[8x8]");
    submit(PHX_OP_RELU, {product.get()}, relu_out.get(), "f32[8x8] -> f32[8x8]");
    submit(PHX_OP_ADD, {a.get(), a.get()}, sum.get(), "f32[8x4], f32[8x4] -> f32[8x4]");
    // An absent optional input, and an op with more dimensions than a record keeps as
    // shapes (OperandShapes::kMaxDims, 24), whose text is written at submission instead.
    submit(PHX_OP_MATMUL, {a.get(), b.get(), nullptr}, product.get(),
           "f32[8x4], f32[4x8], none -> f32[8x8]");
    Tensor piece, pieces;
    ASSERT_EQ(create_tensor(context, device(), PHX_DTYPE_F32, {1, 1, 1}, &piece), PHX_STATUS_OK);
    ASSERT_EQ(create_tensor(context, device(), PHX_DTYPE_F32, {9, 1, 1}, &pieces), PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_upload(piece.get(), 0, zeros.data(), 4), PHX_STATUS_OK);
    std::string nine;
    for (int i = 0; i < 9; ++i) nine += i == 0 ? "f32[1x1x1]" : ", f32[1x1x1]";
    submit(PHX_OP_CONCAT, std::vector<phx_tensor>(9, piece.get()), pieces.get(),
           nine + " -> f32[9x1x1]");
    if (submitted.empty()) GTEST_SKIP() << "the device runs none of matmul, relu, add for f32";

    size_t count = 0;
    ASSERT_EQ(phx_profile_count(stream, &count), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(count, submitted.size());
    for (size_t i = 0; i < std::min(count, submitted.size()); ++i) {
      phx_profile_record record = PHX_PROFILE_RECORD_INIT;
      ASSERT_EQ(phx_profile_get(stream, i, &record), PHX_STATUS_OK) << phx_last_error();
      EXPECT_EQ(record.op, submitted[i].op) << "record " << i;
      EXPECT_EQ(record.ticket, submitted[i].ticket) << "record " << i;
      ASSERT_NE(record.signature, nullptr);
      EXPECT_EQ(std::string(record.signature), submitted[i].signature);
      EXPECT_GT(record.host_time_ns, 0u) << "record " << i;
      EXPECT_TRUE(record.metric_count == 0 || record.metrics != nullptr);
      for (size_t m = 0; m < record.metric_count; ++m) EXPECT_NE(record.metrics[m].name, nullptr);
    }
    phx_profile_record past_the_end = PHX_PROFILE_RECORD_INIT;
    EXPECT_EQ(phx_profile_get(stream, count, &past_the_end), PHX_STATUS_NOT_FOUND);
    EXPECT_EQ(phx_profile_clear(stream), PHX_STATUS_OK);
    EXPECT_EQ(phx_profile_count(stream, &count), PHX_STATUS_OK);
    EXPECT_EQ(count, 0u) << "after phx_profile_clear";
  }
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
}

TEST_P(OpSuite, NoProfileRecordsWithoutTheFlag) {
  if (std::getenv("PHX_PROFILE")) GTEST_SKIP() << "PHX_PROFILE is set in the environment";
  const HostTensor x{PHX_DTYPE_F32, {7}, std::vector<double>(7, -1.0)};
  const Tensor in = upload(x);
  const Tensor out = make(PHX_DTYPE_F32, {7});
  if (!claims(PHX_OP_RELU, PHX_DTYPE_F32)) GTEST_SKIP() << "relu f32 is not claimed";
  ASSERT_EQ(run(PHX_OP_RELU, nullptr, {in.get()}, {out.get()}), PHX_STATUS_OK);
  size_t count = 99;
  ASSERT_EQ(phx_profile_count(stream_, &count), PHX_STATUS_OK);
  EXPECT_EQ(count, 0u);
}

class MemoryTest : public OpSuite {
 protected:
  phx_memory_stats stats() {
    phx_memory_stats s = PHX_MEMORY_STATS_INIT;
    EXPECT_EQ(phx_memory_stats_get(context_, device(), &s), PHX_STATUS_OK) << phx_last_error();
    return s;
  }
};

TEST_P(MemoryTest, BytesInUseFollowTensors) {
  const phx_memory_stats before = stats();
  constexpr int64_t kElements = 100003;  // f32: 400012 bytes
  {
    const Tensor t = make(PHX_DTYPE_F32, {kElements});
    const phx_memory_stats during = stats();
    EXPECT_GE(during.bytes_in_use, before.bytes_in_use + 4 * kElements);
    EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    EXPECT_EQ(during.allocation_count, before.allocation_count + 1);
  }
  const phx_memory_stats after = stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.allocation_count, before.allocation_count);
  EXPECT_GE(after.peak_bytes_in_use, before.bytes_in_use + 4 * kElements);
}

TEST_P(MemoryTest, LimitRefusesBigTensorsAndZeroRemovesIt) {
  const phx_memory_stats before = stats();
  const uint64_t limit = before.bytes_in_use + (1u << 20);
  const phx_status set = phx_memory_set_limit(context_, device(), limit);
  if (set == PHX_STATUS_UNSUPPORTED) GTEST_SKIP() << "the plugin offers no limit";
  ASSERT_EQ(set, PHX_STATUS_OK) << phx_last_error();
  // Removes the limit whatever happens below, so that the other tests are not affected.
  struct LimitRemover {
    phx_context context;
    size_t device;
    ~LimitRemover() { phx_memory_set_limit(context, device, 0); }
  } remover{context_, device()};
  EXPECT_EQ(stats().limit_bytes, limit);

  phx_tensor big = nullptr;
  const Shape big_shape = {1 << 20};  // 4 MiB of f32: past the limit
  EXPECT_EQ(phx_tensor_create(context_, device(), PHX_DTYPE_F32, 1, big_shape.data(), &big),
            PHX_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(big, nullptr);
  EXPECT_STRNE(phx_last_error(), "");
  {
    const Tensor small = make(PHX_DTYPE_F32, {1024});
    EXPECT_NE(small.get(), nullptr) << "a tensor under the limit";
  }
  ASSERT_EQ(phx_memory_set_limit(context_, device(), 0), PHX_STATUS_OK);
  EXPECT_NE(stats().limit_bytes, limit);
  const Tensor now_fits = make(PHX_DTYPE_F32, big_shape);
  EXPECT_NE(now_fits.get(), nullptr) << "the limit was removed";
}

TEST_P(MemoryTest, ReleaseCachedEmptiesThePools) {
  { const Tensor t = make(PHX_DTYPE_F32, {1 << 16}); }
  ASSERT_EQ(phx_memory_release_cached(context_, device()), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(stats().bytes_cached, 0u);
  const Tensor t = make(PHX_DTYPE_F32, {1 << 16});
  EXPECT_NE(t.get(), nullptr) << "allocation works after the pools were emptied";
}

// The statistics a plugin keeps: sized with capacity 0, then copied; a short array
// receives what fits and the full count.
TEST_P(OpSuite, DeviceStatsAreSizedThenCopied) {
  size_t count = 0;
  ASSERT_EQ(phx_device_stats(context_, device(), nullptr, 0, &count), PHX_STATUS_OK)
      << phx_last_error();
  std::vector<phx_metric> metrics(count + 1, phx_metric{"untouched", -1.0});
  size_t copied_count = 0;
  ASSERT_EQ(phx_device_stats(context_, device(), metrics.data(), count, &copied_count),
            PHX_STATUS_OK);
  EXPECT_EQ(copied_count, count);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_NE(metrics[i].name, nullptr) << "metric " << i;
    EXPECT_STRNE(metrics[i].name, "") << "metric " << i;
  }
  EXPECT_STREQ(metrics[count].name, "untouched") << "written past capacity";
  if (count == 0) return;
  std::vector<phx_metric> short_array(count, phx_metric{"untouched", -1.0});
  size_t full_count = 0;
  ASSERT_EQ(phx_device_stats(context_, device(), short_array.data(), count - 1, &full_count),
            PHX_STATUS_OK);
  EXPECT_EQ(full_count, count) << "the count may exceed capacity";
  EXPECT_STREQ(short_array[count - 1].name, "untouched") << "written past capacity";
}

TEST_P(OpSuite, UploadAndDownloadByteRanges) {
  const Tensor t = make(PHX_DTYPE_F32, {257});  // 1028 bytes
  ASSERT_NE(t.get(), nullptr);
  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  ASSERT_EQ(phx_tensor_describe(t.get(), &desc), PHX_STATUS_OK);
  EXPECT_EQ(desc.device, device());
  EXPECT_EQ(desc.dtype, PHX_DTYPE_F32);
  EXPECT_EQ(desc.rank, 1u);
  EXPECT_EQ(desc.shape[0], 257);
  EXPECT_EQ(desc.shape[1], 1) << "entries past rank are 1";
  EXPECT_EQ(desc.element_count, 257u);
  ASSERT_EQ(desc.byte_size, 1028u);

  std::vector<unsigned char> expected(1028);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<unsigned char>(i * 7);
  ASSERT_EQ(phx_tensor_upload(t.get(), 0, expected.data(), expected.size()), PHX_STATUS_OK);
  // Overwrite an unaligned middle range.
  std::vector<unsigned char> patch(301);
  for (size_t i = 0; i < patch.size(); ++i) patch[i] = static_cast<unsigned char>(255 - i);
  ASSERT_EQ(phx_tensor_upload(t.get(), 101, patch.data(), patch.size()), PHX_STATUS_OK);
  std::copy(patch.begin(), patch.end(), expected.begin() + 101);
  // The last byte alone, and an empty range.
  const unsigned char last = 0xA5;
  ASSERT_EQ(phx_tensor_upload(t.get(), 1027, &last, 1), PHX_STATUS_OK);
  expected[1027] = last;
  ASSERT_EQ(phx_tensor_upload(t.get(), 1028, nullptr, 0), PHX_STATUS_OK);

  std::vector<unsigned char> whole(1028);
  ASSERT_EQ(phx_tensor_download(t.get(), 0, whole.data(), whole.size()), PHX_STATUS_OK);
  EXPECT_EQ(whole, expected);
  std::vector<unsigned char> part(997, 0);
  ASSERT_EQ(phx_tensor_download(t.get(), 3, part.data(), part.size()), PHX_STATUS_OK);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), expected.begin() + 3));
  unsigned char tail = 0;
  ASSERT_EQ(phx_tensor_download(t.get(), 1027, &tail, 1), PHX_STATUS_OK);
  EXPECT_EQ(tail, 0xA5);
}

// Copies to every device of the context, this one included (a second tensor on it), and
// back, between shapes that differ but hold the same bytes.
TEST_P(OpSuite, CopyBetweenDevices) {
  size_t count = 0;
  ASSERT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK);
  Random rng(80);
  const HostTensor source = rng.tensor(PHX_DTYPE_F32, {6, 7}, -10.0, 10.0);
  const Tensor src = upload(source);
  for (size_t other = 0; other < count; ++other) {
    SCOPED_TRACE("device " + std::to_string(device()) + " <-> device " + std::to_string(other));
    Tensor there;
    ASSERT_EQ(create_tensor(context_, other, PHX_DTYPE_F32, {42}, &there), PHX_STATUS_OK)
        << phx_last_error();
    ASSERT_EQ(phx_tensor_copy(there.get(), src.get()), PHX_STATUS_OK) << phx_last_error();
    const Tensor back = make(PHX_DTYPE_F32, {2, 21});
    ASSERT_EQ(phx_tensor_copy(back.get(), there.get()), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(download(back, PHX_DTYPE_F32, 42), source.values);
    EXPECT_EQ(download(src, PHX_DTYPE_F32, 42), source.values) << "the source is unchanged";
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, OpSuite, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, MatmulTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, BinaryTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, UnaryTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, NormTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, Conv2dTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, MemoryTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
// With no device found the suites are empty; Devices.AtLeastOneIsFound reports that.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpSuite);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MatmulTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BinaryTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(UnaryTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NormTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conv2dTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MemoryTest);

}  // namespace
