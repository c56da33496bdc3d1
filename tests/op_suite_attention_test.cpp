// The conformance suite of attention and rope (API 0.2), on every device found at run
// time, through the public C API, against float64 references computed here from the same
// dtype-rounded inputs. A device that does not claim an (op, dtype) must answer
// PHX_STATUS_UNSUPPORTED; a claimed one must produce the right numbers.
//
// Tolerances, for any implementation that computes in f32 (u = 2^-24) and rounds once to
// the output dtype (op_suite.h's final rounding):
// - attention, one output element. p_j are the exact softmax weights of the keys the query
//   sees, A = |scale| * max_j sum_d |q_d k_jd| bounds the magnitude of its scores.
//     Each score is a dot product of D terms, then scaled: error (D + 2) u A. Softmax is
//     invariant to a common shift, so score errors e_j move p_j by at most
//     p_j (|e_j| + max |e|): 2 (D + 2) u A relative; the same again for the f32
//     subtraction of the running maximum inside the exponent: 4 (D + 2) u A.
//     exp (a few ulps), the f32 sum of Skv exponentials and the division:
//     (Skv + 32) u relative to each p_j.
//     The weighted sum of Skv value rows in f32 (also across the rescaled blocks of an
//     online softmax): 2 Skv u sum_j p_j |v_j|.
//   tol = ((3 Skv + 32) + 4 (D + 2) A) u sum_j p_j |v_j| + final rounding.
//   A query that sees no key outputs zeros (docs/ops.md), within half a subnormal.
// - rope, one output a cos - b sin (or a sin + b cos): two products and a sum in f32:
//   3 u (|a cos| + |b sin|) + final rounding. Features past 2R are copied: exact.

#include "op_suite.h"

using namespace phx_test;

namespace {

// ---- attention -----------------------------------------------------------------------------

struct AttentionCase {
  int64_t batch, heads, kv_heads, sq, skv, d, dv;
  phx_attention_mask mask;
  uint32_t window;
  float scale;         // 0: 1 / sqrt(D)
  double range = 1.0;  // q and k uniform in [-range, range]
};

std::string describe(const AttentionCase& c, phx_dtype dt) {
  std::ostringstream s;
  s << phx_dtype_name(dt) << " q" << shape_string({c.batch, c.heads, c.sq, c.d}) << " kv"
    << shape_string({c.batch, c.kv_heads, c.skv, c.dv}) << " mask " << c.mask << " window "
    << c.window << " scale " << c.scale;
  return s.str();
}

class AttentionTest : public OpSuite {
 protected:
  void check(const AttentionCase& c, phx_dtype dt, Random& rng) {
    const HostTensor q = rng.tensor(dt, {c.batch, c.heads, c.sq, c.d}, -c.range, c.range);
    const HostTensor k = rng.tensor(dt, {c.batch, c.kv_heads, c.skv, c.d}, -c.range, c.range);
    const HostTensor v = rng.tensor(dt, {c.batch, c.kv_heads, c.skv, c.dv});
    const double scale =
        c.scale != 0.0f ? static_cast<double>(c.scale) : 1.0 / std::sqrt(static_cast<double>(c.d));
    const int64_t group = c.heads / c.kv_heads;

    Expected expected;
    std::vector<double> weight(static_cast<size_t>(c.skv));
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t h = 0; h < c.heads; ++h) {
        const int64_t kv_head = b * c.kv_heads + h / group;
        for (int64_t i = 0; i < c.sq; ++i) {
          const int64_t position = i + c.skv - c.sq;
          const int64_t q_row = ((b * c.heads + h) * c.sq + i) * c.d;
          double max_score = -INFINITY, max_abs = 0.0;
          for (int64_t j = 0; j < c.skv; ++j) {
            const bool seen =
                c.mask == PHX_ATTENTION_MASK_NONE ||
                (j <= position && (c.mask == PHX_ATTENTION_MASK_CAUSAL || j > position - c.window));
            double dot = 0.0, abs = 0.0;
            for (int64_t p = 0; seen && p < c.d; ++p) {
              const double product = q.at(q_row + p) * k.at((kv_head * c.skv + j) * c.d + p);
              dot += product;
              abs += std::fabs(product);
            }
            weight[static_cast<size_t>(j)] = seen ? scale * dot : -INFINITY;
            if (seen) {
              max_score = std::max(max_score, scale * dot);
              max_abs = std::max(max_abs, std::fabs(scale) * abs);
            }
          }
          if (max_score == -INFINITY) {  // sees no key
            for (int64_t col = 0; col < c.dv; ++col) expected.add(0.0, half_min_subnormal(dt));
            continue;
          }
          double total = 0.0;
          for (double& w : weight) total += w = std::exp(w - max_score);
          for (double& w : weight) w /= total;
          const double relative = (3.0 * static_cast<double>(c.skv) + 32.0) +
                                  4.0 * static_cast<double>(c.d + 2) * max_abs;
          for (int64_t col = 0; col < c.dv; ++col) {
            double ref = 0.0, weighted_abs = 0.0;
            for (int64_t j = 0; j < c.skv; ++j) {
              const double value = v.at((kv_head * c.skv + j) * c.dv + col);
              ref += weight[static_cast<size_t>(j)] * value;
              weighted_abs += weight[static_cast<size_t>(j)] * std::fabs(value);
            }
            expected.add(ref, relative * kF32Epsilon * weighted_abs + final_rounding(dt, ref));
          }
        }
      }
    }

    const phx_attention_params params = {sizeof(phx_attention_params), c.scale, c.mask, c.window};
    check_op(describe(c, dt), PHX_OP_ATTENTION, &params, {&q, &k, &v}, dt,
             {c.batch, c.heads, c.sq, c.dv}, expected);
  }

  void check_all(const std::vector<AttentionCase>& cases, uint64_t seed) {
    Random rng(seed);
    for (phx_dtype dt : kFloatDtypes) {
      for (const AttentionCase& c : cases) check(c, dt, rng);
    }
  }
};

// Every pair of sequence lengths from 1 to 300 (none a multiple of a block size past 64,
// Sq above and below Skv), head sizes from 1 to 128, and every mask.
TEST_P(AttentionTest, SequenceLengthsHeadSizesAndMasks) {
  const int64_t lengths[] = {1, 7, 64, 129, 300};
  const int64_t head_sizes[] = {1, 16, 64, 80, 128};
  std::vector<AttentionCase> cases;
  for (size_t a = 0; a < 5; ++a) {
    for (size_t b = 0; b < 5; ++b) {
      const int64_t d = head_sizes[(a + 2 * b) % 5];
      const AttentionCase base{1, 2,   1, lengths[a], lengths[b], d, d, PHX_ATTENTION_MASK_NONE,
                               0, 0.0f};
      for (auto [mask, window] : {std::pair{PHX_ATTENTION_MASK_NONE, 0u},
                                  {PHX_ATTENTION_MASK_CAUSAL, 0u},
                                  {PHX_ATTENTION_MASK_SLIDING_WINDOW, 1u},
                                  {PHX_ATTENTION_MASK_SLIDING_WINDOW, 17u}}) {
        AttentionCase c = base;
        c.mask = mask;
        c.window = window;
        cases.push_back(c);
      }
    }
  }
  check_all(cases, 11);
}

// Query head h reads key/value head h / (H / Hkv): multi-head, grouped and multi-query,
// over two batches, with Dv != D.
TEST_P(AttentionTest, GroupedQueryHeadsAndValueWidth) {
  std::vector<AttentionCase> cases;
  for (int64_t kv_heads : {6, 3, 2, 1}) {
    cases.push_back({2, 6, kv_heads, 7, 129, 16, 80, PHX_ATTENTION_MASK_CAUSAL, 0, 0.0f});
    cases.push_back({2, 6, kv_heads, 65, 65, 64, 8, PHX_ATTENTION_MASK_NONE, 0, 0.0f});
  }
  // The widest heads (Vulkan's CPU kernel holds 2 queries per lane at Dv 256).
  cases.push_back({1, 2, 1, 70, 70, 200, 256, PHX_ATTENTION_MASK_CAUSAL, 0, 0.0f});
  check_all(cases, 12);
}

// An explicit scale, and scores in the hundreds: a softmax close to one-hot, whose running
// maximum rises along the keys.
TEST_P(AttentionTest, ExplicitScaleAndLargeScores) {
  const std::vector<AttentionCase> cases = {
      {1, 2, 2, 33, 77, 32, 32, PHX_ATTENTION_MASK_NONE, 0, 0.3f},
      {1, 2, 1, 100, 257, 16, 16, PHX_ATTENTION_MASK_CAUSAL, 0, 2.0f, 4.0},
      {1, 2, 1, 100, 257, 16, 16, PHX_ATTENTION_MASK_SLIDING_WINDOW, 50, 1.0f, 4.0},
  };
  check_all(cases, 13);
}

// ---- rope ----------------------------------------------------------------------------------

struct RopeCase {
  Shape x;    // [..., S, D]
  int64_t r;  // pairs rotated per row
  bool interleaved;
};

class RopeTest : public OpSuite {
 protected:
  void check(const RopeCase& c, phx_dtype dt, Random& rng) {
    const int64_t d = c.x.back(), s = c.x[c.x.size() - 2];
    const HostTensor x = rng.tensor(dt, c.x, -2.0, 2.0);
    HostTensor cos{PHX_DTYPE_F32, {s, c.r}, {}}, sin{PHX_DTYPE_F32, {s, c.r}, {}};
    for (int64_t i = 0; i < s * c.r; ++i) {
      const double angle = rng.uniform(-4.0, 4.0);
      cos.values.push_back(round_to_float(PHX_DTYPE_F32, std::cos(angle)));
      sin.values.push_back(round_to_float(PHX_DTYPE_F32, std::sin(angle)));
    }

    Expected expected;
    for (int64_t row = 0; row < element_count(c.x) / d; ++row) {
      const int64_t angles = (row % s) * c.r;
      for (int64_t f = 0; f < d; ++f) {
        if (f >= 2 * c.r) {
          expected.add(x.at(row * d + f), 0.0);
          continue;
        }
        // Pair i is (i, i + R), or (2i, 2i + 1) interleaved; f is its first or second.
        const int64_t i = c.interleaved ? f / 2 : f % c.r;
        const int64_t fa = c.interleaved ? 2 * i : i, fb = c.interleaved ? 2 * i + 1 : i + c.r;
        const double a = x.at(row * d + fa), b = x.at(row * d + fb);
        const double co = cos.at(angles + i), si = sin.at(angles + i);
        const double t1 = f == fa ? a * co : a * si, t2 = f == fa ? -b * si : b * co;
        const double ref = t1 + t2;
        expected.add(ref,
                     3 * kF32Epsilon * (std::fabs(t1) + std::fabs(t2)) + final_rounding(dt, ref));
      }
    }

    const phx_rope_params params = {sizeof(phx_rope_params), c.interleaved ? 1 : 0};
    std::ostringstream what;
    what << phx_dtype_name(dt) << " x" << shape_string(c.x) << " R " << c.r
         << (c.interleaved ? " interleaved" : "");
    check_op(what.str(), PHX_OP_ROPE, &params, {&x, &cos, &sin}, dt, c.x, expected);
  }
};

// Both pairings; R from 1 to D / 2 (features past 2R copied); ranks 2 to 4; odd D.
TEST_P(RopeTest, PairingsSizesAndRanks) {
  const std::vector<RopeCase> cases = {
      {{1, 2}, 1, false},          {{1, 2}, 1, true},          {{7, 7}, 3, false},
      {{7, 7}, 3, true},           {{2, 129, 16}, 8, false},   {{2, 129, 16}, 8, true},
      {{2, 3, 7, 64}, 32, false},  {{2, 3, 7, 64}, 16, true},  {{1, 4, 129, 80}, 16, false},
      {{1, 4, 129, 80}, 40, true}, {{2, 300, 128}, 64, false}, {{2, 300, 128}, 1, true},
  };
  Random rng(21);
  for (phx_dtype dt : kFloatDtypes) {
    for (const RopeCase& c : cases) check(c, dt, rng);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, AttentionTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Devices, RopeTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
// With no device found the suites are empty; phx_op_suite_test reports that.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(AttentionTest);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(RopeTest);

}  // namespace
