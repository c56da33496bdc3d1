// The op conformance suite for the ops added in API 0.3 (the unary math functions,
// hard_sigmoid, hard_swish, sin, cos, round, pow, max, min, prelu, the comparisons, where,
// not, reduce_mean, reduce_min, reduce_prod, argmax, top_k, log_softmax, batch_norm,
// instance_norm), on every device found at run time, against float64 references computed
// from the same dtype-rounded inputs. A device that does not claim an (op, dtype) must
// answer PHX_STATUS_UNSUPPORTED.
//
// Tolerances (op_suite.h has the shared ones; final(dt, ref) is the final rounding):
//   - neg, abs, sign, floor, ceil, clip, max, min, the comparisons, where, not,
//     reduce_min, argmax, top_k and every integer result: exact.
//   - sqrt, reciprocal, leaky_relu, prelu: one f32 rounding: 2^-24 |ref| + final.
//   - sigmoid, tanh, exp, log, erf, softplus, elu, selu, pow: c 2^-24 |ref| + final with
//     c = 4: glibc's f32 exp, log, tanh, erf, expm1, log1p and pow err by at most 2 ulps
//     (its manual's table of errors for x86-64), and these ops add at most two f32
//     operations on top (sigmoid: e / (1 + e); softplus: max(x, 0) + log1p(e^-|x|), whose
//     terms have one sign; selu: two products).
//     The Vulkan device does not use the driver's exp, log or pow (Vulkan allows exp
//     3 + 2|x| ulps and pow that of exp2(y log2 x), which fails c = 4 on lavapipe): its
//     own (shaders/math.glsl) are bounded there by exp 1.5 ulps, log 1 ulp, expm1 3u,
//     tanh and sigmoid 4u, erf and softplus 2.5u, pow 2 ulps + 0.2 |b| u (under 4u for
//     |b| <= 3, the range below), and its sqrt and 1 / x by 1 ulp whatever the driver's
//     (one Newton step on an exact residual), so the same tolerances hold.
//   - reduce_mean over n: reduce_sum's (n + 2) 2^-24 sum |x|, divided by n, plus the
//     division's rounding: (n + 3) 2^-24 mean |x| + final.
//   - reduce_prod over n: n f32 products, each one rounding: (n + 1) 2^-24 |ref| + final.
//   - log_softmax over n: softmax's sum (n + 32) 2^-24 relative, which log turns into an
//     absolute error, plus the two subtractions and log's rounding:
//     (n + 32) 2^-24 + 4 2^-24 (|x - max| + |log sum|) + final.
//   - batch_norm: x - mean 1, var + eps 1, sqrt 1, 1 / 1, the three products 3 and the
//     bias 1 ulp: 8 2^-24 (|xhat scale| + |bias|) + final, xhat = (x - mean) / sqrt(var + eps).
//   - instance_norm over n spatial elements: as layer_norm (op_suite.h),
//     (2n + 32) 2^-24 ((|xhat| + 1) |scale| + |bias|) + final.

#include "op_suite.h"

using namespace phx_test;

namespace {

constexpr phx_dtype kSignedIntDtypes[] = {PHX_DTYPE_I8, PHX_DTYPE_I16, PHX_DTYPE_I32};

// Shapes of one operand, exercising the split and threaded paths.
const std::vector<Shape>& unary_shapes() {
  static const std::vector<Shape> shapes = {{}, {1}, {7}, {1000}, {3, 127}, {129, 257}};
  return shapes;
}

// Pairs of shapes that broadcast, as the binary ops' suite has them.
const std::vector<std::pair<Shape, Shape>>& pair_shapes() {
  static const std::vector<std::pair<Shape, Shape>> cases = {
      {{1000}, {1000}}, {{129, 257}, {257}},  {{7, 129}, {}},         {{}, {127, 7}},
      {{127, 7}, {7}},  {{127, 7}, {127, 1}}, {{5, 1, 7}, {1, 6, 1}},
  };
  return cases;
}

// The float values every float unary op also sees: zeros, infinities, NaN and a few
// magnitudes on both sides.
std::vector<double> special_values(phx_dtype dt) {
  std::vector<double> v = {0.0, -0.0, INFINITY, -INFINITY, NAN};
  for (double m : {1e-3, 0.5, 1.0, 2.5, 7.0, 20.0, 100.0}) {
    v.push_back(round_to_float(dt, m));
    v.push_back(round_to_float(dt, -m));
  }
  return v;
}

// The expectation of a float result computed in f32 within ulps of it, then stored as dt.
// A result that overflows dt must be its infinity.
void expect_float(Expected& expected, phx_dtype dt, double exact, double ulps) {
  if (std::isnan(exact) || std::isinf(round_to_float(dt, exact))) {
    expected.add(std::isnan(exact) ? exact : round_to_float(dt, exact), 0.0);
    return;
  }
  expected.add(exact, ulps * kF32Epsilon * std::fabs(exact) + final_rounding(dt, exact));
}

// Two's complement negation of an integer of dt.
double wrapped_neg(phx_dtype dt, double v) {
  return static_cast<double>(wrap_to(dt, -static_cast<int64_t>(v)));
}

using Reference = std::function<double(double)>;

class UnaryMathTest : public OpSuite {
 protected:
  // Runs op (params may be null) on random values in [lo, hi] for each shape, then on
  // the special values, for every dtype; floats within ulps, integers exact.
  void check(phx_op_id op, const void* params, const std::vector<phx_dtype>& dtypes, double lo,
             double hi, double ulps, const Reference& ref, uint64_t seed) {
    Random rng(seed);
    for (phx_dtype dt : dtypes) {
      for (const Shape& shape : unary_shapes())
        check_values(op, params, rng.tensor(dt, shape, lo, hi), ulps, ref);
      if (!is_float(dt)) {
        const IntRange range = int_range(dt);
        HostTensor full = rng.tensor(dt, {257}, range.lo, range.hi);
        full.values[0] = range.lo;
        full.values[1] = range.hi;
        check_values(op, params, full, ulps, ref);
        continue;
      }
      std::vector<double> values = special_values(dt);
      const Shape shape = {static_cast<int64_t>(values.size())};
      check_values(op, params, HostTensor{dt, shape, std::move(values)}, ulps, ref);
    }
  }

  void check_values(phx_op_id op, const void* params, const HostTensor& x, double ulps,
                    const Reference& ref) {
    Expected expected;
    for (double v : x.values) {
      if (is_float(x.dtype))
        expect_float(expected, x.dtype, ref(v), ulps);
      else
        expected.add(ref(v), 0.0);
    }
    check_op(std::string(phx_dtype_name(x.dtype)) + shape_string(x.shape), op, params, {&x},
             x.dtype, x.shape, expected);
  }
};

std::vector<phx_dtype> floats() { return {std::begin(kFloatDtypes), std::end(kFloatDtypes)}; }

TEST_P(UnaryMathTest, TranscendentalFunctions) {
  const auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  const auto softplus = [](double v) {
    return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v)));
  };
  check(PHX_OP_SIGMOID, nullptr, floats(), -20, 20, 4, sigmoid, 100);
  check(
      PHX_OP_TANH, nullptr, floats(), -6, 6, 4, [](double v) { return std::tanh(v); }, 101);
  check(
      PHX_OP_EXP, nullptr, floats(), -10, 10, 4, [](double v) { return std::exp(v); }, 102);
  check(
      PHX_OP_LOG, nullptr, floats(), 1e-3, 100, 4, [](double v) { return std::log(v); }, 103);
  check(
      PHX_OP_ERF, nullptr, floats(), -4, 4, 4, [](double v) { return std::erf(v); }, 104);
  check(PHX_OP_SOFTPLUS, nullptr, floats(), -30, 30, 4, softplus, 105);
}

TEST_P(UnaryMathTest, CorrectlyRoundedFunctions) {
  check(
      PHX_OP_SQRT, nullptr, floats(), 0, 100, 1, [](double v) { return std::sqrt(v); }, 110);
  check(
      PHX_OP_RECIPROCAL, nullptr, floats(), -4, 4, 1, [](double v) { return 1.0 / v; }, 111);
  check(
      PHX_OP_FLOOR, nullptr, floats(), -10, 10, 0, [](double v) { return std::floor(v); }, 112);
  check(
      PHX_OP_CEIL, nullptr, floats(), -10, 10, 0, [](double v) { return std::ceil(v); }, 113);
}

// neg, abs and sign on floats and on integers, where neg and abs wrap around: the full
// range of each integer dtype includes its minimum, whose negation is itself.
TEST_P(UnaryMathTest, NegAbsSignOnFloatsAndIntegers) {
  std::vector<phx_dtype> dtypes = floats();
  dtypes.insert(dtypes.end(), std::begin(kSignedIntDtypes), std::end(kSignedIntDtypes));
  for (phx_dtype dt : dtypes) {
    const bool f = is_float(dt);
    check(
        PHX_OP_NEG, nullptr, {dt}, -8, 8, 0, [&](double v) { return f ? -v : wrapped_neg(dt, v); },
        120);
    check(
        PHX_OP_ABS, nullptr, {dt}, -8, 8, 0,
        [&](double v) { return f       ? std::fabs(v)
                               : v < 0 ? wrapped_neg(dt, v)
                                       : v; }, 121);
    check(
        PHX_OP_SIGN, nullptr, {dt}, -8, 8, 0,
        [](double v) { return v > 0   ? 1.0
                              : v < 0 ? -1.0
                                      : v; }, 122);
  }
}

// sin and cos within 4 ulps, as the transcendental functions: glibc's f32 sin and cos err
// by at most 1 ulp (its manual's table), the Vulkan device's (shaders/math.glsl) by 2u
// below |x| = 2^20 (its reduction by pi/2 in three parts, then Taylor polynomials). On
// [-10, 10], and on [-3e4, 3e4] where rotary embeddings take them of positions. round:
// exact, on random values and on every half from -4.5 to 4.5, which go to the even side.
TEST_P(UnaryMathTest, SinCosAndRound) {
  const auto sin = [](double v) { return std::sin(v); };
  const auto cos = [](double v) { return std::cos(v); };
  const auto round = [](double v) { return std::nearbyint(v); };
  check(PHX_OP_SIN, nullptr, floats(), -10, 10, 4, sin, 160);
  check(PHX_OP_COS, nullptr, floats(), -10, 10, 4, cos, 161);
  check(PHX_OP_SIN, nullptr, floats(), -3e4, 3e4, 4, sin, 162);
  check(PHX_OP_COS, nullptr, floats(), -3e4, 3e4, 4, cos, 163);
  check(PHX_OP_ROUND, nullptr, floats(), -10, 10, 0, round, 164);
  for (phx_dtype dt : floats()) {
    std::vector<double> halves;
    for (double h = -4.5; h <= 4.5; h += 1.0) halves.push_back(h);
    const Shape shape = {static_cast<int64_t>(halves.size())};
    check_values(PHX_OP_ROUND, nullptr, HostTensor{dt, shape, std::move(halves)}, 0, round);
  }
}

TEST_P(UnaryMathTest, LeakyReluEluSeluWithDefaultsAndGivenParameters) {
  const double selu_alpha = 1.67326319217681884765625, selu_beta = 1.05070102214813232421875;
  auto leaky = [](double alpha) { return [alpha](double v) { return v < 0 ? alpha * v : v; }; };
  auto elu = [](double alpha) {
    return [alpha](double v) { return v < 0 ? alpha * std::expm1(v) : v; };
  };
  auto selu = [](double alpha, double beta) {
    return [alpha, beta](double v) { return beta * (v <= 0 ? alpha * std::expm1(v) : v); };
  };
  // leaky_relu's default 0.01 is an f32 constant, the reference takes its f32 value.
  check(PHX_OP_LEAKY_RELU, nullptr, floats(), -8, 8, 1, leaky(double{0.01f}), 130);
  check(PHX_OP_ELU, nullptr, floats(), -8, 8, 4, elu(1.0), 131);
  check(PHX_OP_SELU, nullptr, floats(), -8, 8, 4, selu(selu_alpha, selu_beta), 132);
  const phx_elementwise_params given = PHX_ELEMENTWISE_PARAMS_INIT(0.25f, 2.0f);
  check(PHX_OP_LEAKY_RELU, &given, floats(), -8, 8, 1, leaky(0.25), 133);
  check(PHX_OP_ELU, &given, floats(), -8, 8, 4, elu(0.25), 134);
  check(PHX_OP_SELU, &given, floats(), -8, 8, 4, selu(0.25, 2.0), 135);
}

// hard_sigmoid max(0, min(1, t)), t = alpha x + beta, and hard_swish x max(0, min(1, x / 6
// + 1/2)), in f32 (u = 2^-24), the clamp adding no error (it is 1-Lipschitz):
//   - hard_sigmoid: alpha x and the sum round once each (or once, fused): |t error| <=
//     u (|alpha x| + |t|) <= u (2 |alpha x| + |beta|); tolerance that plus final.
//   - hard_swish: 1/6 rounded to f32, the product by it and the sum: |t error| <=
//     u (|x| / 6 + |x| / 6 + |t|) <= u (|x| / 2 + 1/2); then the product by x, once
//     more: tolerance |x| u (|x| / 2 + 1/2) + u |ref| + final.
// Absolute, not relative to the result: t cancels near the clamp's lower corner.
TEST_P(UnaryMathTest, HardSigmoidAndHardSwish) {
  struct Case {
    phx_op_id op;
    const phx_elementwise_params* params;
    double alpha, beta;
  };
  const phx_elementwise_params given = PHX_ELEMENTWISE_PARAMS_INIT(0.25f, 0.25f);
  const Case cases[] = {{PHX_OP_HARD_SIGMOID, nullptr, double{0.2f}, double{0.5f}},
                        {PHX_OP_HARD_SIGMOID, &given, 0.25, 0.25},
                        {PHX_OP_HARD_SWISH, nullptr, 0, 0}};
  auto clamp01 = [](double t) { return t < 0 ? 0.0 : t > 1 ? 1.0 : t; };
  Random rng(150);
  for (const Case& c : cases) {
    for (phx_dtype dt : floats()) {
      std::vector<HostTensor> inputs;
      for (const Shape& shape : unary_shapes()) inputs.push_back(rng.tensor(dt, shape, -8, 8));
      std::vector<double> special = special_values(dt);
      inputs.push_back(HostTensor{dt, {int64_t(special.size())}, std::move(special)});
      for (const HostTensor& x : inputs) {
        Expected expected;
        for (double v : x.values) {
          double ref, tol;
          if (c.op == PHX_OP_HARD_SIGMOID) {
            ref = std::isnan(v) ? v : clamp01(c.alpha * v + c.beta);
            tol = kF32Epsilon * (2 * std::fabs(c.alpha * v) + std::fabs(c.beta));
          } else {
            ref = v * clamp01(v / 6 + 0.5);  // NaN at -inf: -inf times 0
            tol = std::fabs(v) * kF32Epsilon * (std::fabs(v) / 2 + 0.5) +
                  kF32Epsilon * std::fabs(ref);
          }
          if (!std::isfinite(ref))
            expected.add(ref, 0.0);
          else
            expected.add(ref, tol + final_rounding(dt, ref));
        }
        check_op(std::string(phx_dtype_name(dt)) + shape_string(x.shape), c.op, c.params, {&x}, dt,
                 x.shape, expected);
      }
    }
  }
}

// Float bounds as given; integer bounds rounded toward the inside and saturated; alpha >
// beta gives beta everywhere; no parameters clip to f32's range.
TEST_P(UnaryMathTest, ClipOnEveryDtype) {
  struct Case {
    float alpha, beta;
  };
  const Case cases[] = {
      {-1.5f, 2.25f}, {0.5f, 0.75f}, {-1e10f, 1e10f}, {3.0f, -2.0f}, {2.0f, 2.0f}};
  uint64_t seed = 140;
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      // The bounds as the op applies them to dt's values (floats: exact here; the
      // bounds are f16 and bf16 values or beyond their range).
      double lo = c.alpha, hi = c.beta;
      if (!is_float(dt)) {
        const IntRange range = int_range(dt);
        lo = std::clamp(std::ceil(lo), range.lo, range.hi);
        hi = std::clamp(std::floor(hi), range.lo, range.hi);
      }
      const phx_elementwise_params params = PHX_ELEMENTWISE_PARAMS_INIT(c.alpha, c.beta);
      check(
          PHX_OP_CLIP, &params, {dt}, -8, 8, 0,
          [=](double v) {
            if (std::isnan(v)) return v;
            return std::min(std::max(v, lo), hi);
          },
          seed++);
    }
    // The defaults -FLT_MAX and FLT_MAX: only f32's infinities change.
    const double max = std::numeric_limits<float>::max();
    check(
        PHX_OP_CLIP, nullptr, {dt}, -8, 8, 0,
        [=](double v) { return std::isnan(v) ? v : std::clamp(v, -max, max); }, seed++);
  }
}

// ---- Binary -----------------------------------------------------------------------------------

class BinaryMathTest : public OpSuite {
 protected:
  using Op = std::function<double(double, double)>;

  // a in [lo_a, hi_a], b in [lo_b, hi_b], every pair of shapes; ulps for floats, exact
  // for integers. prelu's slope broadcasts to x: its pairs keep x's shape.
  void check(phx_op_id op, const std::vector<phx_dtype>& dtypes, double lo_a, double hi_a,
             double lo_b, double hi_b, double ulps, const Op& ref, uint64_t seed) {
    Random rng(seed);
    for (phx_dtype dt : dtypes) {
      for (const auto& [shape_a, shape_b] : pair_shapes()) {
        const Shape out_shape = broadcast_shape(shape_a, shape_b);
        if (op == PHX_OP_PRELU && out_shape != shape_a) continue;
        const HostTensor a = rng.tensor(dt, shape_a, lo_a, hi_a);
        const HostTensor b = rng.tensor(dt, shape_b, lo_b, hi_b);
        check_pair(op, a, b, ulps, ref);
      }
    }
  }

  void check_pair(phx_op_id op, const HostTensor& a, const HostTensor& b, double ulps,
                  const Op& ref) {
    const Shape out_shape = broadcast_shape(a.shape, b.shape);
    Expected expected;
    for_each_index(out_shape, [&](const Index& index, int64_t) {
      const double v =
          ref(a.at(broadcast_offset(a.shape, index)), b.at(broadcast_offset(b.shape, index)));
      if (is_float(a.dtype))
        expect_float(expected, a.dtype, v, ulps);
      else
        expected.add(v, 0.0);
    });
    check_op(std::string(phx_dtype_name(a.dtype)) + " " + shape_string(a.shape) + " " +
                 shape_string(b.shape),
             op, nullptr, {&a, &b}, a.dtype, out_shape, expected);
  }
};

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

TEST_P(BinaryMathTest, PowOfPositiveBasesAndIntegerExponents) {
  const auto pow = [](double a, double b) { return std::pow(a, b); };
  check(PHX_OP_POW, floats(), 0.25, 4, -3, 3, 4, pow, 200);
  // Negative bases with integer exponents (and NaN for a fractional one).
  for (phx_dtype dt : kFloatDtypes) {
    const HostTensor a{dt, {6}, {-2.0, -0.5, -3.0, -1.0, 0.0, -2.0}};
    const HostTensor b{dt, {6}, {3.0, 2.0, -1.0, 0.5, -1.0, 0.0}};
    check_pair(PHX_OP_POW, a, b, 4, pow);
  }
}

TEST_P(BinaryMathTest, MaxAndMinOnEveryDtype) {
  const std::vector<phx_dtype> all(std::begin(kAllDtypes), std::end(kAllDtypes));
  check(PHX_OP_MAX, all, -8, 8, -8, 8, 0, nan_max, 210);
  check(PHX_OP_MIN, all, -8, 8, -8, 8, 0, nan_min, 211);
  for (phx_dtype dt : kFloatDtypes) {  // a NaN on either side wins
    const HostTensor a{dt, {4}, {NAN, 1.0, NAN, -INFINITY}};
    const HostTensor b{dt, {4}, {1.0, NAN, NAN, 2.0}};
    check_pair(PHX_OP_MAX, a, b, 0, nan_max);
    check_pair(PHX_OP_MIN, a, b, 0, nan_min);
  }
}

TEST_P(BinaryMathTest, PreluWithSlopesBroadcastToX) {
  check(
      PHX_OP_PRELU, floats(), -8, 8, -2, 2, 1, [](double x, double s) { return x < 0 ? s * x : x; },
      220);
}

// ---- Booleans: comparisons, where, not
// ------------------------------------------------------------

class BooleanTest : public OpSuite {};

TEST_P(BooleanTest, ComparisonsOnEveryDtype) {
  const std::pair<phx_op_id, std::function<bool(double, double)>> ops[] = {
      {PHX_OP_EQUAL, [](double a, double b) { return a == b; }},
      {PHX_OP_LESS, [](double a, double b) { return a < b; }},
      {PHX_OP_GREATER, [](double a, double b) { return a > b; }},
  };
  Random rng(300);
  // No structured bindings: clang 14 (the fuzz preset's compiler) cannot capture them in
  // the lambda below.
  for (const auto& op_and_compare : ops) {
    const phx_op_id op = op_and_compare.first;
    const auto& cmp = op_and_compare.second;
    for (phx_dtype dt : kAllDtypes) {
      for (const auto& shapes : pair_shapes()) {
        const Shape& shape_a = shapes.first;
        const Shape& shape_b = shapes.second;
        // Few distinct values, so that equal pairs are common.
        const HostTensor a = rng.tensor(dt, shape_a, -3, 3);
        const HostTensor b = rng.tensor(dt, shape_b, -3, 3);
        HostTensor ra = a, rb = b;
        for (double& v : ra.values) v = std::nearbyint(v);
        for (double& v : rb.values) v = std::nearbyint(v);
        const Shape out_shape = broadcast_shape(shape_a, shape_b);
        Expected expected;
        for_each_index(out_shape, [&](const Index& index, int64_t) {
          const double x = ra.at(broadcast_offset(shape_a, index));
          const double y = rb.at(broadcast_offset(shape_b, index));
          expected.add(cmp(x, y) ? 1.0 : 0.0, 0.0);
        });
        check_op(std::string(phx_dtype_name(dt)) + " " + shape_string(shape_a) + " " +
                     shape_string(shape_b),
                 op, nullptr, {&ra, &rb}, PHX_DTYPE_U8, out_shape, expected);
      }
    }
    for (phx_dtype dt : kFloatDtypes) {  // NaN is unequal, neither less nor greater
      const HostTensor a{dt, {4}, {NAN, 1.0, NAN, -0.0}};
      const HostTensor b{dt, {4}, {NAN, NAN, 1.0, 0.0}};
      Expected expected;
      for (size_t i = 0; i < 4; ++i) expected.add(cmp(a.values[i], b.values[i]) ? 1.0 : 0.0, 0.0);
      check_op(std::string(phx_dtype_name(dt)) + " NaN", op, nullptr, {&a, &b}, PHX_DTYPE_U8, {4},
               expected);
    }
  }
}

TEST_P(BooleanTest, WhereBroadcastsItsThreeInputs) {
  struct Case {
    Shape cond, a, b;
  };
  const Case cases[] = {{{1000}, {1000}, {1000}},
                        {{129, 257}, {257}, {129, 1}},
                        {{7, 1}, {}, {1, 9}},
                        {{}, {3, 4}, {4}},
                        {{2, 1, 5}, {1, 3, 1}, {2, 3, 5}}};
  Random rng(310);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      HostTensor cond = rng.tensor(PHX_DTYPE_U8, c.cond, 0, 3);  // any non-zero is true
      const HostTensor a = rng.tensor(dt, c.a, -8, 8);
      const HostTensor b = rng.tensor(dt, c.b, -8, 8);
      const Shape out_shape = broadcast_shape(broadcast_shape(c.cond, c.a), c.b);
      Expected expected;
      for_each_index(out_shape, [&](const Index& index, int64_t) {
        expected.add(cond.at(broadcast_offset(c.cond, index)) != 0
                         ? a.at(broadcast_offset(c.a, index))
                         : b.at(broadcast_offset(c.b, index)),
                     0.0);
      });
      check_op(std::string(phx_dtype_name(dt)) + " " + shape_string(c.cond) + shape_string(c.a) +
                   shape_string(c.b),
               PHX_OP_WHERE, nullptr, {&cond, &a, &b}, dt, out_shape, expected);
    }
  }
}

TEST_P(BooleanTest, NotOfEveryByte) {
  HostTensor x{PHX_DTYPE_U8, {256}, {}};
  Expected expected;
  for (int v = 0; v < 256; ++v) {
    x.values.push_back(v);
    expected.add(v == 0 ? 1.0 : 0.0, 0.0);
  }
  check_op("u8[256]", PHX_OP_NOT, nullptr, {&x}, PHX_DTYPE_U8, {256}, expected);
}

// ---- Reductions, argmax
// ---------------------------------------------------------------------------

class ReductionTest : public OpSuite {};

TEST_P(ReductionTest, MeanMinProdOverAxisMasks) {
  struct Case {
    Shape shape;
    std::vector<uint32_t> masks;
  };
  const std::vector<Case> cases = {{{1000}, {0}},
                                   {{7, 129}, {0, 1, 2}},
                                   {{3, 5, 7}, {2, 5, 6}},
                                   {{2, 3, 4, 5}, {0b1010, 0b0101}},
                                   {{129, 257}, {0, 1, 2}}};
  Random rng(400);
  for (phx_op_id op : {PHX_OP_REDUCE_MEAN, PHX_OP_REDUCE_MIN, PHX_OP_REDUCE_PROD}) {
    for (phx_dtype dt : kAllDtypes) {
      if (op == PHX_OP_REDUCE_MEAN && !is_float(dt)) continue;
      if (op == PHX_OP_REDUCE_PROD && dt == PHX_DTYPE_U8) continue;
      for (const Case& c : cases) {
        // Float products of values near 1 stay in range; integers span their dtype, so
        // that their products wrap.
        const double lo = !is_float(dt) ? -2e9 : op == PHX_OP_REDUCE_PROD ? 0.9 : -2.0;
        const double hi = !is_float(dt) ? 2e9 : op == PHX_OP_REDUCE_PROD ? 1.1 : 2.0;
        const HostTensor x = rng.tensor(dt, c.shape, lo, hi);
        for (uint32_t mask : c.masks) {
          const uint32_t reduced = mask == 0 ? (1u << c.shape.size()) - 1 : mask;
          for (bool keep_dims : {false, true}) {
            Shape out_shape, kept_shape;
            for (size_t d = 0; d < c.shape.size(); ++d) {
              const bool r = (reduced >> d) & 1;
              if (!r || keep_dims) out_shape.push_back(r ? 1 : c.shape[d]);
              kept_shape.push_back(r ? 1 : c.shape[d]);
            }
            const auto outputs = static_cast<size_t>(element_count(kept_shape));
            std::vector<double> sum(outputs, 0.0), abs_sum(outputs, 0.0), prod(outputs, 1.0);
            std::vector<double> min(outputs, INFINITY);
            std::vector<uint64_t> int_prod(outputs, 1);
            for_each_index(c.shape, [&](const Index& index, int64_t flat) {
              const auto o = static_cast<size_t>(broadcast_offset(kept_shape, index));
              const double v = x.at(flat);
              sum[o] += v;
              abs_sum[o] += std::fabs(v);
              prod[o] *= v;
              min[o] = std::min(min[o], v);
              int_prod[o] *= static_cast<uint64_t>(static_cast<int64_t>(v));  // modular
            });
            const double n = static_cast<double>(element_count(c.shape)) / outputs;
            Expected expected;
            for (size_t o = 0; o < outputs; ++o) {
              if (op == PHX_OP_REDUCE_MIN) {
                expected.add(min[o], 0.0);
              } else if (op == PHX_OP_REDUCE_MEAN) {
                const double mean = sum[o] / n;
                expected.add(mean,
                             (n + 3) * kF32Epsilon * abs_sum[o] / n + final_rounding(dt, mean));
              } else if (is_float(dt)) {
                expected.add(prod[o], (n + 1) * kF32Epsilon * std::fabs(prod[o]) +
                                          final_rounding(dt, prod[o]));
              } else {
                expected.add(static_cast<double>(wrap_to(dt, static_cast<int64_t>(int_prod[o]))),
                             0.0);
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

// Ties (few distinct values) give the first index, or the last with select_last_index; a
// NaN counts as the largest value.
TEST_P(ReductionTest, ArgmaxAlongEachAxisWithTiesAndNaN) {
  struct Case {
    Shape shape;
    int32_t axis;
  };
  const Case cases[] = {{{1000}, 0},    {{7, 129}, 1},   {{7, 129}, -2},
                        {{3, 5, 7}, 1}, {{129, 257}, 0}, {{1, 1}, -1}};
  Random rng(410);
  for (phx_dtype dt : kAllDtypes) {
    for (const Case& c : cases) {
      HostTensor x = rng.tensor(dt, c.shape, -3, 3);
      for (double& v : x.values) v = std::nearbyint(v);
      if (is_float(dt) && x.values.size() > 10) {
        x.values[3] = NAN;
        x.values[9] = NAN;
      }
      const auto rank = static_cast<int32_t>(c.shape.size());
      const auto axis = static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis);
      const int64_t len = c.shape[axis];
      int64_t inner = 1;
      for (size_t d = axis + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
      const int64_t outer = element_count(c.shape) / (len * inner);
      for (bool last : {false, true}) {
        for (bool keep_dims : {false, true}) {
          Expected expected;
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t i = 0; i < inner; ++i) {
              int64_t best = 0;
              for (int64_t k = 1; k < len; ++k) {
                const double v = x.at((o * len + k) * inner + i);
                const double b = x.at((o * len + best) * inner + i);
                const bool take = std::isnan(v)   ? (!std::isnan(b) || last)
                                  : std::isnan(b) ? false
                                  : last          ? v >= b
                                                  : v > b;
                if (take) best = k;
              }
              expected.add(static_cast<double>(best), 0.0);
            }
          }
          Shape out_shape = c.shape;
          if (keep_dims)
            out_shape[axis] = 1;
          else
            out_shape.erase(out_shape.begin() + static_cast<int64_t>(axis));
          const phx_argmax_params params = {sizeof(phx_argmax_params), c.axis, keep_dims ? 1 : 0,
                                            last ? 1 : 0};
          check_op(std::string(phx_dtype_name(dt)) + shape_string(c.shape) + " axis " +
                       std::to_string(c.axis) + (last ? " last" : "") + (keep_dims ? " keep" : ""),
                   PHX_OP_ARGMAX, &params, {&x}, PHX_DTYPE_I32, out_shape, expected);
        }
      }
    }
  }
}

// top_k along several axes, the largest and the smallest, k of 1, some and all: values
// and indices exactly as a stable sort of the row by value gives them (ties from few
// distinct values keep index order; a NaN counts as the largest value).
TEST_P(ReductionTest, TopKLargestAndSmallestWithTiesAndNaN) {
  struct Case {
    Shape shape;
    int32_t axis;
    uint32_t k;
  };
  const Case cases[] = {{{1000}, 0, 5},    {{7, 129}, 1, 129}, {{7, 129}, -2, 1},
                        {{3, 5, 7}, 1, 3}, {{129, 257}, 0, 4}, {{1, 1}, -1, 1}};
  Random rng(411);
  for (phx_dtype dt : kAllDtypes) {
    // A device that cannot hold x or the indices cannot claim the op.
    if (!holds(dt) || !holds(PHX_DTYPE_I32)) {
      EXPECT_FALSE(claims(PHX_OP_TOP_K, dt)) << phx_dtype_name(dt);
      continue;
    }
    for (const Case& c : cases) {
      HostTensor x = rng.tensor(dt, c.shape, -3, 3);
      for (double& v : x.values) v = std::nearbyint(v);
      if (is_float(dt) && x.values.size() > 10) {
        x.values[3] = NAN;
        x.values[9] = NAN;
      }
      const auto rank = static_cast<int32_t>(c.shape.size());
      const auto axis = static_cast<size_t>(c.axis < 0 ? c.axis + rank : c.axis);
      const int64_t len = c.shape[axis];
      int64_t inner = 1;
      for (size_t d = axis + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
      const int64_t outer = element_count(c.shape) / (len * inner);
      Shape out_shape = c.shape;
      out_shape[axis] = c.k;
      for (bool largest : {true, false}) {
        SCOPED_TRACE(std::string(phx_dtype_name(dt)) + shape_string(c.shape) + " axis " +
                     std::to_string(c.axis) + " k " + std::to_string(c.k) +
                     (largest ? " largest" : " smallest"));
        // The reference, output element by output element in row-major order.
        std::vector<double> values(static_cast<size_t>(element_count(out_shape)));
        std::vector<double> indices(values.size());
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            std::vector<int64_t> order(static_cast<size_t>(len));
            for (int64_t j = 0; j < len; ++j) order[static_cast<size_t>(j)] = j;
            auto at = [&](int64_t j) { return x.at((o * len + j) * inner + i); };
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
              const double va = at(a), vb = at(b);
              if (std::isnan(va) || std::isnan(vb))  // two NaNs keep their order
                return !(std::isnan(va) && std::isnan(vb)) && std::isnan(va) == largest;
              return largest ? va > vb : va < vb;
            });
            for (uint32_t j = 0; j < c.k; ++j) {
              const auto to = static_cast<size_t>((o * c.k + j) * inner + i);
              values[to] = at(order[j]);
              indices[to] = static_cast<double>(order[j]);
            }
          }
        }
        const phx_top_k_params params = {sizeof(phx_top_k_params), c.axis, c.k, largest ? 1 : 0};
        const Tensor in = upload(x);
        const Tensor got_values = make(dt, out_shape);
        const Tensor got_indices = make(PHX_DTYPE_I32, out_shape);
        const phx_status status =
            run(PHX_OP_TOP_K, &params, {in.get()}, {got_values.get(), got_indices.get()});
        if (!claims(PHX_OP_TOP_K, dt)) {
          EXPECT_EQ(status, PHX_STATUS_UNSUPPORTED) << phx_last_error();
          continue;
        }
        ASSERT_EQ(status, PHX_STATUS_OK) << phx_last_error();
        Expected expected_values, expected_indices;
        for (size_t e = 0; e < values.size(); ++e) {
          expected_values.add(values[e], 0.0);
          expected_indices.add(indices[e], 0.0);
        }
        expect_matches(download(got_values, dt, element_count(out_shape)), expected_values, dt);
        expect_matches(download(got_indices, PHX_DTYPE_I32, element_count(out_shape)),
                       expected_indices, PHX_DTYPE_I32);
      }
    }
  }
}

// ---- log_softmax, batch_norm, instance_norm
// --------------------------------------------------------

class NormalizationTest : public OpSuite {};

TEST_P(NormalizationTest, LogSoftmaxOnSeveralAxes) {
  struct Case {
    Shape shape;
    int32_t axis;
    double range;
  };
  const Case cases[] = {{{1000}, -1, 8.0},     {{7, 129}, -1, 8.0}, {{7, 129}, 0, 8.0},
                        {{3, 5, 7}, 1, 8.0},   {{1, 1}, -1, 8.0},   {{4, 127}, -1, 100.0},
                        {{257, 129}, -1, 8.0}, {{257, 129}, 0, 8.0}};
  Random rng(500);
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
          double max = -INFINITY, sum = 0.0;
          for (int64_t i = 0; i < n; ++i) max = std::max(max, x.values[at(i)]);
          for (int64_t i = 0; i < n; ++i) sum += std::exp(x.values[at(i)] - max);
          const double log_sum = std::log(sum);
          for (int64_t i = 0; i < n; ++i) {
            const double shifted = x.values[at(i)] - max;
            const double ref = shifted - log_sum;
            expected.values[at(i)] = ref;
            expected.tolerances[at(i)] =
                static_cast<double>(n + 32) * kF32Epsilon +
                4 * kF32Epsilon * (std::fabs(shifted) + std::fabs(log_sum)) +
                final_rounding(dt, ref);
          }
        }
      }
      const phx_softmax_params params = {sizeof(phx_softmax_params), c.axis};
      check_op(std::string(phx_dtype_name(dt)) + shape_string(c.shape) + " axis " +
                   std::to_string(c.axis),
               PHX_OP_LOG_SOFTMAX, &params, {&x}, dt, c.shape, expected);
    }
  }
}

TEST_P(NormalizationTest, BatchNormPerChannel) {
  const Shape shapes[] = {{2, 3},          {2, 3, 129},     {1, 4, 5, 7},
                          {3, 2, 2, 2, 2}, {2, 16, 33, 65}, {2, 5, 4, 6}};  // last: 24 per channel
  Random rng(510);
  for (phx_dtype dt : kFloatDtypes) {
    for (const Shape& shape : shapes) {
      for (float eps : {1e-5f, 0.5f}) {
        const int64_t c = shape[1];
        const HostTensor x = rng.tensor(dt, shape, -2, 2);
        const HostTensor scale = rng.tensor(dt, {c}, -2, 2);
        const HostTensor bias = rng.tensor(dt, {c}, -1, 1);
        const HostTensor mean = rng.tensor(dt, {c}, -1, 1);
        const HostTensor var = rng.tensor(dt, {c}, 0, 3);
        int64_t spatial = 1;
        for (size_t d = 2; d < shape.size(); ++d) spatial *= shape[d];
        Expected expected;
        for (int64_t i = 0; i < element_count(shape); ++i) {
          const int64_t ch = i / spatial % c;
          const double xhat = (x.at(i) - mean.at(ch)) / std::sqrt(var.at(ch) + double{eps});
          const double ref = xhat * scale.at(ch) + bias.at(ch);
          expected.add(ref,
                       8 * kF32Epsilon * (std::fabs(xhat * scale.at(ch)) + std::fabs(bias.at(ch))) +
                           final_rounding(dt, ref));
        }
        const phx_norm_params params = {sizeof(phx_norm_params), eps};
        check_op(
            std::string(phx_dtype_name(dt)) + shape_string(shape) + " eps " + std::to_string(eps),
            PHX_OP_BATCH_NORM, &params, {&x, &scale, &bias, &mean, &var}, dt, shape, expected);
      }
    }
  }
}

TEST_P(NormalizationTest, InstanceNormOverSpatialDimensions) {
  const Shape shapes[] = {{2, 3, 1}, {2, 3, 129}, {1, 4, 5, 7}, {3, 2, 2, 2, 2}, {2, 16, 33, 65}};
  Random rng(520);
  for (phx_dtype dt : kFloatDtypes) {
    for (const Shape& shape : shapes) {
      const int64_t c = shape[1];
      // An offset mean, so that a variance computed as E[x^2] - E[x]^2 loses accuracy.
      const HostTensor x = rng.tensor(dt, shape, -0.5, 1.5);
      const HostTensor scale = rng.tensor(dt, {c}, -2, 2);
      const HostTensor bias = rng.tensor(dt, {c}, -1, 1);
      const int64_t n = element_count(shape) / (shape[0] * c);
      const double eps = double{1e-5f};
      Expected expected;
      for (int64_t slice = 0; slice < shape[0] * c; ++slice) {
        const int64_t ch = slice % c;
        double mean = 0.0, variance = 0.0;
        for (int64_t i = 0; i < n; ++i) mean += x.at(slice * n + i) / static_cast<double>(n);
        for (int64_t i = 0; i < n; ++i) {
          const double d = x.at(slice * n + i) - mean;
          variance += d * d / static_cast<double>(n);
        }
        for (int64_t i = 0; i < n; ++i) {
          const double xhat = (x.at(slice * n + i) - mean) / std::sqrt(variance + eps);
          const double ref = xhat * scale.at(ch) + bias.at(ch);
          expected.add(ref, (2 * static_cast<double>(n) + 32) * kF32Epsilon *
                                    ((std::fabs(xhat) + 1) * std::fabs(scale.at(ch)) +
                                     std::fabs(bias.at(ch))) +
                                final_rounding(dt, ref));
        }
      }
      const phx_norm_params params = PHX_NORM_PARAMS_INIT;
      check_op(std::string(phx_dtype_name(dt)) + shape_string(shape), PHX_OP_INSTANCE_NORM, &params,
               {&x, &scale, &bias}, dt, shape, expected);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, UnaryMathTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, BinaryMathTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, BooleanTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, ReductionTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, NormalizationTest,
                         ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(UnaryMathTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BinaryMathTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BooleanTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ReductionTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(NormalizationTest);

}  // namespace
