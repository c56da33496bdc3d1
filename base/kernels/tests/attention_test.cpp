// Tests of the host attention and rope kernels (ops_attention.cpp, ops_rope.cpp): small
// cases worked by hand, which must come out exact, and random cases against a float64
// reference computed from the same dtype-rounded inputs.
//
// Tolerances, u = 2^-24 the unit roundoff of f32 (the kernels compute in f32) and u_out
// that of the output dtype (f32 2^-24, f16 2^-11, bf16 2^-8):
// - attention, one output element, p_j the exact softmax weights, A = max_j |scale| *
//   sum_d |q_d k_jd| a bound on the scores' magnitude:
//     each score is a D-term dot product times scale: its error is (D + 2) u A; softmax is
//     shift-invariant, so an error e_j in score j moves p_j by at most p_j (e_j + max e):
//     2 (D + 2) u A relative, counted twice for the exponent's argument s - max;
//     exp, the running sum of Skv terms and the division: (Skv + 32) u relative to p;
//     the weighted sum of Skv value rows in f32: 2 Skv u sum_j p_j |v_j|;
//   together ((3 Skv + 32) + 4 (D + 2) A) u sum_j p_j |v_j|, plus the final rounding
//   u_out |ref| + half the output's smallest subnormal.
// - rope: a cos - b sin in f32: 3 u (|a cos| + |b sin|), plus the final rounding.
// The hand-worked cases are exact: one key gives weight exactly 1, equal scores give
// weights 1/n with n a power of two, values are small integers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ops_common.h"
#include "phx/kernels/convert.h"
#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"

namespace phx::kernels {
namespace {

constexpr double kEps = 0x1p-24;
constexpr phx_dtype kFloatDtypes[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16};

ThreadPool& pool() {
  static ThreadPool p(4);  // more threads than cores: the split must not matter
  return p;
}

double out_eps(phx_dtype d) {
  return d == PHX_DTYPE_F16 ? 0x1p-11 : d == PHX_DTYPE_BF16 ? 0x1p-8 : kEps;
}

double out_tiny(phx_dtype d) { return d == PHX_DTYPE_F16 ? 0x1p-25 : 0x1p-150; }

// A float tensor in host memory; set() rounds to its dtype, get() reads back what is stored.
struct Tensor {
  std::vector<unsigned char> bytes;
  HostTensor t;

  Tensor(phx_dtype dtype, std::vector<int64_t> shape) {
    t.dtype = dtype;
    t.rank = static_cast<uint32_t>(shape.size());
    std::fill(t.shape, t.shape + PHX_MAX_RANK, 1);
    std::copy(shape.begin(), shape.end(), t.shape);
    bytes.assign(static_cast<size_t>(size()) * ops::dtype_bytes(dtype), 0);
    t.data = bytes.data();
  }
  int64_t size() const { return element_count(t); }

  void set(int64_t i, double v) {
    unsigned char* p = bytes.data() + i * static_cast<int64_t>(ops::dtype_bytes(t.dtype));
    const float f = static_cast<float>(v);
    uint16_t h = 0;
    switch (t.dtype) {
      case PHX_DTYPE_F16:
        h = f32_to_f16(f);
        std::memcpy(p, &h, 2);
        break;
      case PHX_DTYPE_BF16:
        h = f32_to_bf16(f);
        std::memcpy(p, &h, 2);
        break;
      default:
        std::memcpy(p, &f, 4);
        break;
    }
  }
  double get(int64_t i) const {
    const unsigned char* p = bytes.data() + i * static_cast<int64_t>(ops::dtype_bytes(t.dtype));
    if (t.dtype == PHX_DTYPE_F32) {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return t.dtype == PHX_DTYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
  void fill_random(std::mt19937& rng, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < size(); ++i) set(i, dist(rng));
  }
};

struct AttentionShape {
  int64_t batch, heads, kv_heads, sq, skv, d, dv;
};

phx_status run_attention(const phx_attention_params& params, const Tensor& q, const Tensor& k,
                         const Tensor& v, Tensor& out) {
  const HostTensor in[3] = {q.t, k.t, v.t};
  return run_op(PHX_OP_ATTENTION, &params, in, 3, &out.t, 1, pool());
}

phx_attention_params attention_params(phx_attention_mask mask, uint32_t window = 0,
                                      float scale = 0.0f) {
  phx_attention_params p = PHX_ATTENTION_PARAMS_INIT;
  p.mask = mask;
  p.window = window;
  p.scale = scale;
  return p;
}

// Runs attention on random inputs and compares every element with a float64 reference.
void check_against_reference(const AttentionShape& s, const phx_attention_params& params,
                             phx_dtype dtype, double lo = -1.0, double hi = 1.0) {
  SCOPED_TRACE("dtype " + std::to_string(dtype) + " B" + std::to_string(s.batch) + " H" +
               std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) + " Sq" +
               std::to_string(s.sq) + " Skv" + std::to_string(s.skv) + " D" + std::to_string(s.d) +
               " Dv" + std::to_string(s.dv) + " mask " + std::to_string(params.mask) + " window " +
               std::to_string(params.window));
  std::mt19937 rng(static_cast<unsigned>(s.sq * 131 + s.skv * 7 + s.d));
  Tensor q(dtype, {s.batch, s.heads, s.sq, s.d}), k(dtype, {s.batch, s.kv_heads, s.skv, s.d});
  Tensor v(dtype, {s.batch, s.kv_heads, s.skv, s.dv}), out(dtype, {s.batch, s.heads, s.sq, s.dv});
  q.fill_random(rng, lo, hi);
  k.fill_random(rng, lo, hi);
  v.fill_random(rng, -1.0, 1.0);
  ASSERT_EQ(run_attention(params, q, k, v, out), PHX_STATUS_OK);

  const double scale = params.scale != 0.0f ? static_cast<double>(params.scale)
                                            : 1.0 / std::sqrt(static_cast<double>(s.d));
  const int64_t group = s.heads / s.kv_heads;
  int failures = 0;
  std::vector<double> score(static_cast<size_t>(s.skv));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t kvh = b * s.kv_heads + h / group;
      for (int64_t i = 0; i < s.sq; ++i) {
        const int64_t position = i + s.skv - s.sq;
        double max_score = -INFINITY, max_abs = 0.0;
        for (int64_t j = 0; j < s.skv; ++j) {
          const bool seen = params.mask == PHX_ATTENTION_MASK_NONE ||
                            (j <= position && (params.mask == PHX_ATTENTION_MASK_CAUSAL ||
                                               j > position - params.window));
          double dot = 0.0, abs = 0.0;
          for (int64_t p = 0; p < s.d; ++p) {
            const double x = q.get(((b * s.heads + h) * s.sq + i) * s.d + p);
            const double y = k.get((kvh * s.skv + j) * s.d + p);
            dot += x * y;
            abs += std::fabs(x * y);
          }
          score[static_cast<size_t>(j)] = seen ? scale * dot : -INFINITY;
          if (seen) {
            max_score = std::max(max_score, scale * dot);
            max_abs = std::max(max_abs, std::fabs(scale) * abs);
          }
        }
        double total = 0.0;
        for (double& sc : score) total += sc = std::exp(sc - max_score);
        for (int64_t c = 0; c < s.dv; ++c) {
          double ref = 0.0, weighted_abs = 0.0;
          if (max_score != -INFINITY) {
            for (int64_t j = 0; j < s.skv; ++j) {
              const double p = score[static_cast<size_t>(j)] / total;
              const double x = v.get((kvh * s.skv + j) * s.dv + c);
              ref += p * x;
              weighted_abs += p * std::fabs(x);
            }
          }
          const double tol = ((3.0 * static_cast<double>(s.skv) + 32.0) +
                              4.0 * static_cast<double>(s.d + 2) * max_abs) *
                                 kEps * weighted_abs +
                             out_eps(dtype) * std::fabs(ref) + out_tiny(dtype);
          const double got = out.get(((b * s.heads + h) * s.sq + i) * s.dv + c);
          if (!(std::fabs(got - ref) <= tol) && ++failures <= 5) {
            ADD_FAILURE() << "b" << b << " h" << h << " i" << i << " c" << c << ": got " << got
                          << ", expected " << ref << " +- " << tol;
          }
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// ---- attention: exact cases ----

TEST(Attention, OneKeyGivesItsValue) {
  for (phx_dtype dtype : kFloatDtypes) {
    std::mt19937 rng(1);
    Tensor q(dtype, {1, 2, 5, 16}), k(dtype, {1, 2, 1, 16}), v(dtype, {1, 2, 1, 7});
    Tensor out(dtype, {1, 2, 5, 7});
    q.fill_random(rng, -3, 3);
    k.fill_random(rng, -3, 3);
    v.fill_random(rng, -1, 1);
    ASSERT_EQ(run_attention(attention_params(PHX_ATTENTION_MASK_NONE), q, k, v, out),
              PHX_STATUS_OK);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t c = 0; c < 7; ++c)
          EXPECT_EQ(out.get((h * 5 + i) * 7 + c), v.get(h * 7 + c)) << dtype;
  }
}

// q = 0 makes every score 0: the output is the mean of the values. 128 keys span two key
// blocks; the sums of small integers and the division by 128 are exact.
TEST(Attention, EqualScoresGiveTheMeanOfTheValues) {
  for (phx_dtype dtype : kFloatDtypes) {
    Tensor q(dtype, {1, 1, 3, 8}), k(dtype, {1, 1, 128, 8}), v(dtype, {1, 1, 128, 2});
    Tensor out(dtype, {1, 1, 3, 2});
    std::mt19937 rng(2);
    k.fill_random(rng, -1, 1);
    for (int64_t j = 0; j < 128; ++j) {
      v.set(j * 2, static_cast<double>(j % 5));
      v.set(j * 2 + 1, -static_cast<double>(j % 3));
    }
    ASSERT_EQ(run_attention(attention_params(PHX_ATTENTION_MASK_NONE), q, k, v, out),
              PHX_STATUS_OK);
    double mean0 = 0, mean1 = 0;
    for (int64_t j = 0; j < 128; ++j) {
      mean0 += static_cast<double>(j % 5) / 128.0;
      mean1 -= static_cast<double>(j % 3) / 128.0;
    }
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(out.get(i * 2), mean0) << dtype;
      EXPECT_EQ(out.get(i * 2 + 1), mean1) << dtype;
    }
  }
}

TEST(Attention, CausalFirstQuerySeesOnlyTheFirstKey) {
  for (phx_dtype dtype : kFloatDtypes) {
    std::mt19937 rng(3);
    Tensor q(dtype, {1, 1, 70, 16}), k(dtype, {1, 1, 70, 16}), v(dtype, {1, 1, 70, 5});
    Tensor out(dtype, {1, 1, 70, 5});
    q.fill_random(rng, -1, 1);
    k.fill_random(rng, -1, 1);
    v.fill_random(rng, -1, 1);
    ASSERT_EQ(run_attention(attention_params(PHX_ATTENTION_MASK_CAUSAL), q, k, v, out),
              PHX_STATUS_OK);
    for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(out.get(c), v.get(c)) << dtype;
  }
}

// A window of one key: query i sees only the key at its own position i + Skv - Sq.
TEST(Attention, SlidingWindowOfOneGivesTheDiagonal) {
  for (phx_dtype dtype : kFloatDtypes) {
    for (int64_t sq : {3, 130}) {
      const int64_t skv = 130;
      std::mt19937 rng(4);
      Tensor q(dtype, {1, 1, sq, 8}), k(dtype, {1, 1, skv, 8}), v(dtype, {1, 1, skv, 3});
      Tensor out(dtype, {1, 1, sq, 3});
      q.fill_random(rng, -1, 1);
      k.fill_random(rng, -1, 1);
      v.fill_random(rng, -1, 1);
      ASSERT_EQ(run_attention(attention_params(PHX_ATTENTION_MASK_SLIDING_WINDOW, 1), q, k, v, out),
                PHX_STATUS_OK);
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t c = 0; c < 3; ++c)
          EXPECT_EQ(out.get(i * 3 + c), v.get((i + skv - sq) * 3 + c)) << dtype << " Sq " << sq;
    }
  }
}

// Query head h reads key/value head h / (H / Hkv): with one key, its value.
TEST(Attention, GroupedQueryHeadsReadTheirKeyValueHead) {
  Tensor q(PHX_DTYPE_F32, {2, 6, 1, 4}), k(PHX_DTYPE_F32, {2, 2, 1, 4});
  Tensor v(PHX_DTYPE_F32, {2, 2, 1, 1}), out(PHX_DTYPE_F32, {2, 6, 1, 1});
  for (int64_t i = 0; i < 4; ++i) v.set(i, static_cast<double>(10 + i));
  ASSERT_EQ(run_attention(attention_params(PHX_ATTENTION_MASK_NONE), q, k, v, out), PHX_STATUS_OK);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 6; ++h) EXPECT_EQ(out.get(b * 6 + h), 10 + b * 2 + h / 3);
}

// Sq > Skv with a causal mask: the first Sq - Skv queries have negative positions and see
// no key; their output is defined as zeros. The next one sees only key 0.
TEST(Attention, QueriesThatSeeNoKeyGiveZeros) {
  for (phx_dtype dtype : kFloatDtypes) {
    std::mt19937 rng(5);
    Tensor q(dtype, {1, 1, 5, 4}), k(dtype, {1, 1, 3, 4}), v(dtype, {1, 1, 3, 2});
    Tensor out(dtype, {1, 1, 5, 2});
    q.fill_random(rng, -1, 1);
    k.fill_random(rng, -1, 1);
    v.fill_random(rng, -1, 1);
    for (int64_t i = 0; i < out.size(); ++i) out.set(i, 7.0);  // must be overwritten
    ASSERT_EQ(run_attention(attention_params(PHX_ATTENTION_MASK_CAUSAL), q, k, v, out),
              PHX_STATUS_OK);
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(out.get(c), 0.0) << dtype;
    for (int64_t c = 0; c < 2; ++c) EXPECT_EQ(out.get(4 + c), v.get(c)) << dtype;
  }
}

TEST(Attention, ZeroScaleMeansOneOverSqrtD) {
  std::mt19937 rng(6);
  Tensor q(PHX_DTYPE_F32, {1, 2, 9, 16}), k(PHX_DTYPE_F32, {1, 2, 9, 16});
  Tensor v(PHX_DTYPE_F32, {1, 2, 9, 16});
  Tensor a(PHX_DTYPE_F32, {1, 2, 9, 16}), b(PHX_DTYPE_F32, {1, 2, 9, 16});
  q.fill_random(rng, -1, 1);
  k.fill_random(rng, -1, 1);
  v.fill_random(rng, -1, 1);
  ASSERT_EQ(run_attention(attention_params(PHX_ATTENTION_MASK_CAUSAL), q, k, v, a), PHX_STATUS_OK);
  ASSERT_EQ(run_attention(attention_params(PHX_ATTENTION_MASK_CAUSAL, 0, 0.25f), q, k, v, b),
            PHX_STATUS_OK);
  EXPECT_EQ(a.bytes, b.bytes);
}

// ---- attention: against the float64 reference ----

// Sizes that are not multiples of the 64-row blocks, Sq != Skv, every mask; sizes past
// the threading threshold so that the tasks run on the pool.
TEST(Attention, MatchesTheReference) {
  const AttentionShape shapes[] = {
      {1, 1, 1, 1, 1, 1, 1},        {1, 2, 2, 7, 7, 16, 16},     {2, 4, 2, 64, 64, 64, 64},
      {1, 2, 1, 129, 129, 80, 80},  {1, 2, 2, 129, 300, 64, 32}, {1, 3, 1, 300, 129, 16, 16},
      {2, 2, 2, 65, 200, 128, 128}, {1, 1, 1, 1, 300, 64, 64},
  };
  for (phx_dtype dtype : kFloatDtypes) {
    for (const AttentionShape& s : shapes) {
      check_against_reference(s, attention_params(PHX_ATTENTION_MASK_NONE), dtype);
      check_against_reference(s, attention_params(PHX_ATTENTION_MASK_CAUSAL), dtype);
      for (uint32_t window : {1u, 17u, 100u})
        check_against_reference(s, attention_params(PHX_ATTENTION_MASK_SLIDING_WINDOW, window),
                                dtype);
    }
  }
}

// Scores in the hundreds: the running maximum rises from block to block and the earlier
// blocks are rescaled; nothing overflows.
TEST(Attention, LargeScoresStayFinite) {
  for (phx_dtype dtype : kFloatDtypes) {
    check_against_reference({1, 2, 1, 100, 257, 16, 16},
                            attention_params(PHX_ATTENTION_MASK_CAUSAL, 0, 1.0f), dtype, -5, 5);
    check_against_reference({1, 2, 1, 100, 257, 16, 16},
                            attention_params(PHX_ATTENTION_MASK_NONE, 0, -1.0f), dtype, -5, 5);
  }
}

// ---- rope ----

struct RopeCase {
  std::vector<int64_t> x_shape;  // [..., S, D]
  int64_t r;
  bool interleaved;
};

phx_status run_rope(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved,
                    HostTensor out) {
  phx_rope_params params = PHX_ROPE_PARAMS_INIT;
  params.interleaved = interleaved ? 1 : 0;
  const HostTensor in[3] = {x.t, cos.t, sin.t};
  return run_op(PHX_OP_ROPE, &params, in, 3, &out, 1, pool());
}

// The features of pair i of a row: (i, i + R), or (2i, 2i + 1) interleaved.
std::pair<int64_t, int64_t> pair_of(int64_t i, int64_t r, bool interleaved) {
  return interleaved ? std::make_pair(2 * i, 2 * i + 1) : std::make_pair(i, i + r);
}

TEST(Rope, ZeroAnglesAreTheIdentity) {
  for (phx_dtype dtype : kFloatDtypes) {
    for (bool interleaved : {false, true}) {
      std::mt19937 rng(7);
      Tensor x(dtype, {3, 5, 10}), cos(PHX_DTYPE_F32, {5, 4}), sin(PHX_DTYPE_F32, {5, 4});
      Tensor out(dtype, {3, 5, 10});
      x.fill_random(rng, -2, 2);
      for (int64_t i = 0; i < cos.size(); ++i) cos.set(i, 1.0);
      ASSERT_EQ(run_rope(x, cos, sin, interleaved, out.t), PHX_STATUS_OK);
      EXPECT_EQ(out.bytes, x.bytes) << dtype;
    }
  }
}

// A quarter turn: (a, b) -> (-b, a), exactly; the features past 2R are copied.
TEST(Rope, QuarterTurnSwapsThePairExactly) {
  for (phx_dtype dtype : kFloatDtypes) {
    for (bool interleaved : {false, true}) {
      const int64_t s = 3, d = 11, r = 4;
      std::mt19937 rng(8);
      Tensor x(dtype, {2, s, d}), cos(PHX_DTYPE_F32, {s, r}), sin(PHX_DTYPE_F32, {s, r});
      Tensor out(dtype, {2, s, d});
      x.fill_random(rng, -2, 2);
      for (int64_t i = 0; i < sin.size(); ++i) sin.set(i, 1.0);
      ASSERT_EQ(run_rope(x, cos, sin, interleaved, out.t), PHX_STATUS_OK);
      for (int64_t row = 0; row < 2 * s; ++row) {
        for (int64_t i = 0; i < r; ++i) {
          const auto [a, b] = pair_of(i, r, interleaved);
          EXPECT_EQ(out.get(row * d + a), -x.get(row * d + b));
          EXPECT_EQ(out.get(row * d + b), x.get(row * d + a));
        }
        for (int64_t f = 2 * r; f < d; ++f) EXPECT_EQ(out.get(row * d + f), x.get(row * d + f));
      }
    }
  }
}

// Random angles against the float64 reference, written into a separate output and over x
// itself (out may alias x). R = 300 spans two of the kernel's 256-pair blocks.
TEST(Rope, MatchesTheReferenceAlsoInPlace) {
  const RopeCase cases[] = {
      {{1, 2}, 1, false},     {{7, 7}, 3, true},          {{2, 3, 5, 64}, 32, false},
      {{2, 9, 80}, 16, true}, {{1, 300, 128}, 64, false}, {{3, 601}, 300, false},
      {{3, 600}, 300, true},
  };
  for (phx_dtype dtype : kFloatDtypes) {
    for (const RopeCase& c : cases) {
      for (bool in_place : {false, true}) {
        const int64_t d = c.x_shape.back(), s = c.x_shape[c.x_shape.size() - 2];
        SCOPED_TRACE("dtype " + std::to_string(dtype) + " D " + std::to_string(d) + " R " +
                     std::to_string(c.r) + (c.interleaved ? " interleaved" : "") +
                     (in_place ? " in place" : ""));
        std::mt19937 rng(static_cast<unsigned>(d * 10 + c.r));
        Tensor x(dtype, c.x_shape), cos(PHX_DTYPE_F32, {s, c.r}), sin(PHX_DTYPE_F32, {s, c.r});
        Tensor out(dtype, c.x_shape);
        x.fill_random(rng, -2, 2);
        std::uniform_real_distribution<double> angle(-4.0, 4.0);
        for (int64_t i = 0; i < cos.size(); ++i) {
          const double t = angle(rng);
          cos.set(i, std::cos(t));
          sin.set(i, std::sin(t));
        }
        const Tensor original = x;
        Tensor& result = in_place ? x : out;
        ASSERT_EQ(run_rope(x, cos, sin, c.interleaved, result.t), PHX_STATUS_OK);
        int failures = 0;
        for (int64_t row = 0; row < x.size() / d; ++row) {
          const int64_t pos = row % s;
          for (int64_t f = 0; f < d; ++f) {
            double ref = original.get(row * d + f), bound = 0.0;
            if (f < 2 * c.r) {
              const int64_t i = c.interleaved ? f / 2 : f % c.r;
              const auto [fa, fb] = pair_of(i, c.r, c.interleaved);
              const double a = original.get(row * d + fa), b = original.get(row * d + fb);
              const double co = cos.get(pos * c.r + i), si = sin.get(pos * c.r + i);
              const double t1 = f == fa ? a * co : a * si, t2 = f == fa ? -b * si : b * co;
              ref = t1 + t2;
              bound = 3 * kEps * (std::fabs(t1) + std::fabs(t2));
            }
            // Copied features are exact; rotated ones round in f32 and to the dtype.
            const double tol =
                f < 2 * c.r ? bound + out_eps(dtype) * std::fabs(ref) + out_tiny(dtype) : 0.0;
            const double got = result.get(row * d + f);
            if (!(std::fabs(got - ref) <= tol) && ++failures <= 5)
              ADD_FAILURE() << "row " << row << " f " << f << ": got " << got << ", expected "
                            << ref << " +- " << tol;
          }
        }
        EXPECT_EQ(failures, 0);
      }
    }
  }
}

}  // namespace
}  // namespace phx::kernels
