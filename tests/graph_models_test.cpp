// Models built as graphs (graph.h), compiled and run on every device found at run time,
// against float64 references computed here: a 3-layer MLP and a transformer block
// (RMSNorm, Q/K/V projections, RoPE, causal grouped-query attention, output projection,
// residual, SiLU MLP, residual). The executable must also give what the same nodes give
// when run one by one with phx_op_run: bitwise on the CPU and tpu-sim (the issue's
// promise), within the tolerances below elsewhere.
//
// Dtype. A model runs in f32 where the device runs every node in f32, else in bf16, else
// in f16 (tpu-sim runs attention in bf16 only, npu-sim computes floats in f16). A device
// that runs the model in none is skipped, naming the node f32 lacks; the CPU must run it.
//
// Tolerances: a first-order error bound carried through the model. Each value of the
// reference carries, besides its float64 value, a bound on how far the device's value may
// be from it: the error its inputs carried, propagated through the op's derivative, plus
// the op's own error on exact inputs, which is op_suite.h's (u = 2^-24, the f32 all ops
// compute in; final rounding: one rounding to the model's dtype, u(dt) |ref|):
//   - matmul, K products, S = sum |a b| + |bias|: own 2 K u S + 1e-6, plus 2^-8 S where the
//     device rounds f32 or f16 inputs to bf16 ("matmul_precision" bf16); carried
//     sum_k |b| e_a + |a| e_b + e_bias; then, without activation, the final rounding; with
//     one, 1.2 times the pre-activation error (relu and silu are 1.2-Lipschitz) plus the
//     activation's own (op_suite.h's activation_tolerance).
//   - rms_norm over n, y = g x / r, r = sqrt(mean x^2 + eps): own (n + 32) u |ref| + 1e-6
//     and the final rounding; carried |g_i| (e_i / r + |x_i| sum_j |x_j| e_j / (n r^3))
//     + |x_i| e_g / r (the row of the Jacobian, in absolute values).
//   - rope, a cos - b sin: own 3 u (|a cos| + |b sin|) and the final rounding; carried
//     |cos| e_a + |sin| e_b.
//   - attention: own as op_suite_attention_test.cpp derives it; carried: score errors
//     ds_j = |scale| sum_d |k_jd| e_q_d + |q_d| e_k_jd move each softmax weight p_j by at
//     most p_j 2 max_j ds_j, hence 2 max_j ds_j sum_j p_j |v_j| + sum_j p_j e_v_j.
//   - reduce_sum over n: own (n + 2) u sum |x| and the final rounding; carried sum e.
//   - add, mul: own u |ref| and the final rounding; carried e_a + e_b, |b| e_a + |a| e_b.
//   - silu: own activation_tolerance; carried 1.2 e.
//   - fusion (docs/graphs.md) may give a matmul the bias add or the activation that alone
//     reads its result. A fused activation is bounded as a matmul's own above, within the
//     separate ops' bound; a fused bias enters the sum of the K products, so such an add's
//     own error gains 2 K u |bias|, whether or not the device fuses it.
// A device value passes within 1.1 times its bound plus 2^-126 (a device may flush f32
// subnormals): the 1.1 covers the second-order terms the first-order bound leaves out,
// products of two relative errors, below 1% of the bound even at bf16's 2^-8.
//
// Carried through 17 nodes, worst case on worst case, the bound grows loose (the
// transformer's f32 output: about 0.1 against errors of 3e-7 measured on the CPU), so each
// node is checked on its own too: its value as the device computed it, against float64
// from the device's own values of its inputs, within the op's own error alone (errors
// measured up to about 0.5 of it in f32, and up to 0.998 in bf16 and f16, where the final
// rounding dominates). That is done for the nodes run eagerly and for an executable of
// the same graph with every node an output.

#include "op_suite.h"

using namespace phx_test;

namespace {

// ---- A model, described once: built as a graph, run eagerly, and evaluated here -------

constexpr size_t kAbsent = SIZE_MAX;  // an optional node input left out

enum class EntryKind { kInput, kConstant, kNode };

// One value of the model, in the order it is added to the graph: its index is its value.
struct Entry {
  EntryKind kind = EntryKind::kInput;
  std::string name;
  HostTensor data;  // an input's (the run's) or a constant's values
  phx_op_id op = PHX_OP_INVALID;
  std::vector<unsigned char> params;  // the parameter struct's bytes; empty: defaults
  std::vector<size_t> inputs;         // entries' indices, or kAbsent
};

struct Model {
  std::vector<Entry> entries;
  size_t output = 0;

  size_t input(std::string name, HostTensor data) {
    entries.push_back(
        {EntryKind::kInput, std::move(name), std::move(data), PHX_OP_INVALID, {}, {}});
    return entries.size() - 1;
  }
  size_t constant(std::string name, HostTensor data) {
    entries.push_back(
        {EntryKind::kConstant, std::move(name), std::move(data), PHX_OP_INVALID, {}, {}});
    return entries.size() - 1;
  }
  template <class Params>
  size_t node(std::string name, phx_op_id op, const Params& params, std::vector<size_t> inputs) {
    std::vector<unsigned char> bytes(sizeof params);
    std::memcpy(bytes.data(), &params, sizeof params);
    entries.push_back(
        {EntryKind::kNode, std::move(name), {}, op, std::move(bytes), std::move(inputs)});
    return entries.size() - 1;
  }
  size_t node(std::string name, phx_op_id op, std::vector<size_t> inputs) {
    entries.push_back({EntryKind::kNode, std::move(name), {}, op, {}, std::move(inputs)});
    return entries.size() - 1;
  }
  std::vector<size_t> inputs() const { return of_kind(EntryKind::kInput); }
  std::vector<size_t> nodes() const { return of_kind(EntryKind::kNode); }
  std::vector<size_t> of_kind(EntryKind kind) const {
    std::vector<size_t> found;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].kind == kind) found.push_back(i);
    }
    return found;
  }
};

template <class Params>
Params params_of(const Entry& e, Params defaults) {
  if (!e.params.empty()) std::memcpy(&defaults, e.params.data(), sizeof defaults);
  return defaults;
}

// Values uniform in [-scale, scale], rounded to dt.
HostTensor weights(Random& rng, phx_dtype dt, Shape shape, double scale) {
  return rng.tensor(dt, std::move(shape), -scale, scale);
}

// x [BATCH, 32] -> relu(x W1 + b1) [BATCH, 64] -> relu(. W2 + b2) [BATCH, 64] -> . W3 + b3
// [BATCH, 16]. Weights scaled by 1 / sqrt(fan in) keep every layer's values near 1.
Model mlp_model(phx_dtype dt) {
  constexpr int64_t kBatch = 8;
  const int64_t widths[] = {32, 64, 64, 16};
  Random rng(1501);
  Model m;
  size_t x = m.input("x", rng.tensor(dt, {kBatch, widths[0]}));
  for (int layer = 0; layer < 3; ++layer) {
    const std::string n = std::to_string(layer + 1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(widths[layer]));
    const size_t w =
        m.constant("W" + n, weights(rng, dt, {widths[layer], widths[layer + 1]}, scale));
    const size_t b = m.constant("b" + n, weights(rng, dt, {widths[layer + 1]}, 0.5));
    phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
    params.activation = layer < 2 ? PHX_ACTIVATION_RELU : PHX_ACTIVATION_NONE;
    x = m.node("layer" + n, PHX_OP_MATMUL, params, {x, w, b});
  }
  m.output = x;
  return m;
}

// The transformer block's sizes: small, so that lavapipe runs it in moments.
constexpr int64_t kSeq = 16, kDim = 64, kHeads = 4, kKvHeads = 2, kHeadDim = 16, kHidden = 128;

// RoPE's tables: position s, pair i at angle s / 10000^(2i / head_dim), in f32.
std::pair<HostTensor, HostTensor> rope_tables() {
  const int64_t pairs = kHeadDim / 2;
  HostTensor cos{PHX_DTYPE_F32, {kSeq, pairs}, {}}, sin{PHX_DTYPE_F32, {kSeq, pairs}, {}};
  for (int64_t s = 0; s < kSeq; ++s) {
    for (int64_t i = 0; i < pairs; ++i) {
      const double angle =
          static_cast<double>(s) * std::pow(10000.0, -2.0 * static_cast<double>(i) / kHeadDim);
      cos.values.push_back(round_to_float(PHX_DTYPE_F32, std::cos(angle)));
      sin.values.push_back(round_to_float(PHX_DTYPE_F32, std::sin(angle)));
    }
  }
  return {cos, sin};
}

// The heads live in the batch dimensions, since no op reshapes: x [1, 1, S, D] times
// Wq [1, H, D, Dh] is q [1, H, S, Dh]; the output projection is per head, attn [1, H, S, Dh]
// times Wo [1, H, Dh, D], and its sum over the heads (reduce_sum over dimension 1).
Model transformer_model(phx_dtype dt) {
  Random rng(1502);
  Model m;
  const double in_scale = 1.0 / std::sqrt(static_cast<double>(kDim));
  const size_t x = m.input("x", rng.tensor(dt, {1, 1, kSeq, kDim}));
  const size_t g1 = m.constant("attention_norm.gamma", rng.tensor(dt, {kDim}, 0.5, 1.5));
  const size_t wq = m.constant("wq", weights(rng, dt, {1, kHeads, kDim, kHeadDim}, in_scale));
  const size_t wk = m.constant("wk", weights(rng, dt, {1, kKvHeads, kDim, kHeadDim}, in_scale));
  const size_t wv = m.constant("wv", weights(rng, dt, {1, kKvHeads, kDim, kHeadDim}, in_scale));
  const double head_scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim * kHeads));
  const size_t wo = m.constant("wo", weights(rng, dt, {1, kHeads, kHeadDim, kDim}, head_scale));
  auto [cos_table, sin_table] = rope_tables();
  const size_t cos = m.constant("rope.cos", std::move(cos_table));
  const size_t sin = m.constant("rope.sin", std::move(sin_table));
  const size_t g2 = m.constant("ffn_norm.gamma", rng.tensor(dt, {kDim}, 0.5, 1.5));
  const size_t w1 = m.constant("w1", weights(rng, dt, {kDim, kHidden}, in_scale));
  const size_t w3 = m.constant("w3", weights(rng, dt, {kDim, kHidden}, in_scale));
  const double hidden_scale = 1.0 / std::sqrt(static_cast<double>(kHidden));
  const size_t w2 = m.constant("w2", weights(rng, dt, {kHidden, kDim}, hidden_scale));

  const phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  const phx_rope_params rope = PHX_ROPE_PARAMS_INIT;
  phx_attention_params causal = PHX_ATTENTION_PARAMS_INIT;
  causal.mask = PHX_ATTENTION_MASK_CAUSAL;
  phx_reduce_params over_heads = PHX_REDUCE_PARAMS_INIT;
  over_heads.axes_mask = 1u << 1;
  over_heads.keep_dims = 1;

  const size_t n1 = m.node("attention_norm", PHX_OP_RMS_NORM, norm, {x, g1});
  // The projections leave their optional bias out explicitly (PHX_VALUE_NONE).
  const size_t q = m.node("q_proj", PHX_OP_MATMUL, {n1, wq, kAbsent});
  const size_t k = m.node("k_proj", PHX_OP_MATMUL, {n1, wk, kAbsent});
  const size_t v = m.node("v_proj", PHX_OP_MATMUL, {n1, wv, kAbsent});
  const size_t q_rotated = m.node("q_rope", PHX_OP_ROPE, rope, {q, cos, sin});
  const size_t k_rotated = m.node("k_rope", PHX_OP_ROPE, rope, {k, cos, sin});
  const size_t attn = m.node("attention", PHX_OP_ATTENTION, causal, {q_rotated, k_rotated, v});
  const size_t per_head = m.node("o_proj", PHX_OP_MATMUL, {attn, wo});
  const size_t o = m.node("o_proj.sum_heads", PHX_OP_REDUCE_SUM, over_heads, {per_head});
  const size_t h = m.node("attention_residual", PHX_OP_ADD, {x, o});
  const size_t n2 = m.node("ffn_norm", PHX_OP_RMS_NORM, norm, {h, g2});
  const size_t gate = m.node("w1_proj", PHX_OP_MATMUL, {n2, w1});
  const size_t gate_silu = m.node("w1_silu", PHX_OP_SILU, {gate});
  const size_t up = m.node("w3_proj", PHX_OP_MATMUL, {n2, w3});
  const size_t gated = m.node("gate_mul", PHX_OP_MUL, {gate_silu, up});
  const size_t down = m.node("w2_proj", PHX_OP_MATMUL, {gated, w2});
  m.output = m.node("ffn_residual", PHX_OP_ADD, {h, down});
  return m;
}

// ---- The float64 reference, with its error bound (the comment at the top) -------------

struct Tracked {
  phx_dtype dtype = PHX_DTYPE_F32;
  Shape shape;
  std::vector<double> value;
  std::vector<double> error;

  Tracked(phx_dtype dt, Shape s)
      : dtype(dt),
        shape(std::move(s)),
        value(static_cast<size_t>(element_count(shape))),
        error(value.size()) {}
  double v(int64_t i) const { return value[static_cast<size_t>(i)]; }
  double e(int64_t i) const { return error[static_cast<size_t>(i)]; }
  void set(int64_t i, double ref, double bound) {
    value[static_cast<size_t>(i)] = ref;
    error[static_cast<size_t>(i)] = bound;
  }
};

constexpr double kU = kF32Epsilon;
constexpr double kLipschitz = 1.2;  // of relu and silu (silu's largest slope is 1.0998)

Tracked exact(const HostTensor& h) {
  Tracked t(h.dtype, h.shape);
  t.value = h.values;
  return t;
}

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

Tracked matmul(const Tracked& a, const Tracked& b, const Tracked* bias, phx_activation act,
               bool bf16_products) {
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  const Shape batch = broadcast_shape(batch_of(a.shape), batch_of(b.shape));
  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tracked out(a.dtype, out_shape);
  const double input_rounding = bf16_products && a.dtype != PHX_DTYPE_BF16 ? 0x1p-8 : 0.0;
  for_each_index(batch, [&](const Index& index, int64_t flat) {
    const int64_t a0 = broadcast_offset(batch_of(a.shape), index) * m * k;
    const int64_t b0 = broadcast_offset(batch_of(b.shape), index) * k * n;
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t col = 0; col < n; ++col) {
        double sum = bias ? bias->v(col) : 0.0, size = bias ? std::fabs(bias->v(col)) : 0.0;
        double carried = bias ? bias->e(col) : 0.0;
        for (int64_t i = 0; i < k; ++i) {
          const int64_t ai = a0 + row * k + i, bi = b0 + i * n + col;
          sum += a.v(ai) * b.v(bi);
          size += std::fabs(a.v(ai) * b.v(bi));
          carried += std::fabs(b.v(bi)) * a.e(ai) + std::fabs(a.v(ai)) * b.e(bi);
        }
        const double pre =
            carried + 2.0 * static_cast<double>(k) * kU * size + 1e-6 + input_rounding * size;
        const double ref = apply_activation(act, sum);
        const double bound = act == PHX_ACTIVATION_NONE
                                 ? pre + final_rounding(a.dtype, ref)
                                 : kLipschitz * pre + activation_tolerance(act, ref, a.dtype);
        out.set((flat * m + row) * n + col, ref, bound);
      }
    }
  });
  return out;
}

Tracked rms_norm(const Tracked& x, const Tracked* gamma, double epsilon) {
  Tracked out(x.dtype, x.shape);
  const int64_t n = x.shape.back(), rows = element_count(x.shape) / n;
  for (int64_t r = 0; r < rows; ++r) {
    double square_sum = 0.0, weighted_error = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      square_sum += x.v(r * n + j) * x.v(r * n + j);
      weighted_error += std::fabs(x.v(r * n + j)) * x.e(r * n + j);
    }
    const double rms = std::sqrt(square_sum / static_cast<double>(n) + epsilon);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t i = r * n + j;
      const double g = gamma ? gamma->v(j) : 1.0, g_error = gamma ? gamma->e(j) : 0.0;
      const double ref = x.v(i) / rms * g;
      const double carried =
          std::fabs(g) * (x.e(i) / rms + std::fabs(x.v(i)) * weighted_error /
                                             (static_cast<double>(n) * rms * rms * rms)) +
          std::fabs(x.v(i)) * g_error / rms;
      const double own = (static_cast<double>(n) + 32.0) * kU * std::fabs(ref) + 1e-6 +
                         final_rounding(x.dtype, ref);
      out.set(i, ref, carried + own);
    }
  }
  return out;
}

// Non-interleaved pairs (i, i + R), as phx_rope_params' default.
Tracked rope(const Tracked& x, const Tracked& cos, const Tracked& sin) {
  Tracked out(x.dtype, x.shape);
  const int64_t d = x.shape.back(), s = x.shape[x.shape.size() - 2], pairs = cos.shape.back();
  const int64_t rows = element_count(x.shape) / d;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t position = r % s;
    for (int64_t i = 0; i < d; ++i) {
      const int64_t at = r * d + i;
      if (i >= 2 * pairs) {
        out.set(at, x.v(at), x.e(at));
        continue;
      }
      const int64_t pair = i % pairs;
      const double c = cos.v(position * pairs + pair), sn = sin.v(position * pairs + pair);
      const int64_t first = r * d + pair, second = first + pairs;
      const double a = x.v(first), b = x.v(second);
      // The first of a pair is a cos - b sin, the second a sin + b cos.
      const double ref = i < pairs ? a * c - b * sn : a * sn + b * c;
      const double size =
          i < pairs ? std::fabs(a * c) + std::fabs(b * sn) : std::fabs(a * sn) + std::fabs(b * c);
      const double carried = i < pairs ? std::fabs(c) * x.e(first) + std::fabs(sn) * x.e(second)
                                       : std::fabs(sn) * x.e(first) + std::fabs(c) * x.e(second);
      out.set(at, ref, carried + 3.0 * kU * size + final_rounding(x.dtype, ref));
    }
  }
  return out;
}

Tracked attention(const Tracked& q, const Tracked& k, const Tracked& v,
                  const phx_attention_params& params) {
  const int64_t batch = q.shape[0], heads = q.shape[1], sq = q.shape[2], d = q.shape[3];
  const int64_t kv_heads = k.shape[1], skv = k.shape[2], dv = v.shape[3];
  const int64_t group = heads / kv_heads;
  const double scale = params.scale != 0.0f ? static_cast<double>(params.scale)
                                            : 1.0 / std::sqrt(static_cast<double>(d));
  Tracked out(q.dtype, {batch, heads, sq, dv});
  std::vector<double> p(static_cast<size_t>(skv));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kv = b * kv_heads + h / group;
      for (int64_t i = 0; i < sq; ++i) {
        const int64_t position = i + skv - sq;
        const int64_t q_row = ((b * heads + h) * sq + i) * d;
        const bool causal = params.mask == PHX_ATTENTION_MASK_CAUSAL;
        double max_score = -INFINITY, max_abs = 0.0, max_score_error = 0.0;
        for (int64_t j = 0; j < skv; ++j) {
          const bool seen = !causal || j <= position;
          double dot = 0.0, abs = 0.0, score_error = 0.0;
          for (int64_t c = 0; seen && c < d; ++c) {
            const int64_t ki = (kv * skv + j) * d + c;
            dot += q.v(q_row + c) * k.v(ki);
            abs += std::fabs(q.v(q_row + c) * k.v(ki));
            score_error +=
                std::fabs(k.v(ki)) * q.e(q_row + c) + std::fabs(q.v(q_row + c)) * k.e(ki);
          }
          p[static_cast<size_t>(j)] = seen ? scale * dot : -INFINITY;
          if (seen) {
            max_score = std::max(max_score, scale * dot);
            max_abs = std::max(max_abs, std::fabs(scale) * abs);
            max_score_error = std::max(max_score_error, std::fabs(scale) * score_error);
          }
        }
        double total = 0.0;
        for (double& w : p) total += w = std::exp(w - max_score);
        for (double& w : p) w /= total;
        const double relative =
            (3.0 * static_cast<double>(skv) + 32.0) + 4.0 * static_cast<double>(d + 2) * max_abs;
        for (int64_t c = 0; c < dv; ++c) {
          double ref = 0.0, weighted_abs = 0.0, weighted_error = 0.0;
          for (int64_t j = 0; j < skv; ++j) {
            const int64_t vi = (kv * skv + j) * dv + c;
            ref += p[static_cast<size_t>(j)] * v.v(vi);
            weighted_abs += p[static_cast<size_t>(j)] * std::fabs(v.v(vi));
            weighted_error += p[static_cast<size_t>(j)] * v.e(vi);
          }
          const double carried = 2.0 * max_score_error * weighted_abs + weighted_error;
          out.set(((b * heads + h) * sq + i) * dv + c, ref,
                  carried + relative * kU * weighted_abs + final_rounding(q.dtype, ref));
        }
      }
    }
  }
  return out;
}

Tracked reduce_sum(const Tracked& x, const phx_reduce_params& params) {
  auto reduced = [&](size_t d) { return params.axes_mask == 0 || (params.axes_mask >> d) & 1u; };
  Shape kept = x.shape;
  for (size_t d = 0; d < kept.size(); ++d) {
    if (reduced(d)) kept[d] = 1;
  }
  Shape out_shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!reduced(d) || params.keep_dims) out_shape.push_back(kept[d]);
  }
  const size_t count = static_cast<size_t>(element_count(kept));
  std::vector<double> sum(count), size(count), carried(count);
  for_each_index(x.shape, [&](const Index& index, int64_t flat) {
    const auto o = static_cast<size_t>(broadcast_offset(kept, index));
    sum[o] += x.v(flat);
    size[o] += std::fabs(x.v(flat));
    carried[o] += x.e(flat);
  });
  const double n = static_cast<double>(element_count(x.shape)) / static_cast<double>(count);
  Tracked out(x.dtype, out_shape);
  for (size_t o = 0; o < count; ++o) {
    out.set(static_cast<int64_t>(o), sum[o],
            carried[o] + (n + 2.0) * kU * size[o] + final_rounding(x.dtype, sum[o]));
  }
  return out;
}

// add and mul of two tensors of one shape (all this file's models need).
Tracked elementwise(phx_op_id op, const Tracked& a, const Tracked& b) {
  EXPECT_EQ(a.shape, b.shape);
  Tracked out(a.dtype, a.shape);
  for (int64_t i = 0; i < element_count(a.shape); ++i) {
    const bool is_add = op == PHX_OP_ADD;
    const double ref = is_add ? a.v(i) + b.v(i) : a.v(i) * b.v(i);
    const double carried =
        is_add ? a.e(i) + b.e(i) : std::fabs(b.v(i)) * a.e(i) + std::fabs(a.v(i)) * b.e(i);
    out.set(i, ref, carried + kU * std::fabs(ref) + final_rounding(a.dtype, ref));
  }
  return out;
}

Tracked silu(const Tracked& x) {
  Tracked out(x.dtype, x.shape);
  for (int64_t i = 0; i < element_count(x.shape); ++i) {
    const double ref = apply_activation(PHX_ACTIVATION_SILU, x.v(i));
    out.set(i, ref, kLipschitz * x.e(i) + activation_tolerance(PHX_ACTIVATION_SILU, ref, x.dtype));
  }
  return out;
}

Tracked evaluate_node(const Entry& e, const std::vector<Tracked>& values, bool bf16_products) {
  auto in = [&](size_t i) -> const Tracked* {
    return i < e.inputs.size() && e.inputs[i] != kAbsent ? &values[e.inputs[i]] : nullptr;
  };
  switch (e.op) {
    case PHX_OP_MATMUL: {
      const phx_matmul_params p = params_of(e, phx_matmul_params PHX_MATMUL_PARAMS_INIT);
      EXPECT_FALSE(p.transpose_a || p.transpose_b) << "the reference multiplies untransposed";
      return matmul(*in(0), *in(1), in(2), p.activation, bf16_products);
    }
    case PHX_OP_RMS_NORM:
      return rms_norm(*in(0), in(1), params_of(e, phx_norm_params PHX_NORM_PARAMS_INIT).epsilon);
    case PHX_OP_ROPE:
      EXPECT_FALSE(params_of(e, phx_rope_params PHX_ROPE_PARAMS_INIT).interleaved);
      return rope(*in(0), *in(1), *in(2));
    case PHX_OP_ATTENTION:
      return attention(*in(0), *in(1), *in(2),
                       params_of(e, phx_attention_params PHX_ATTENTION_PARAMS_INIT));
    case PHX_OP_REDUCE_SUM:
      return reduce_sum(*in(0), params_of(e, phx_reduce_params PHX_REDUCE_PARAMS_INIT));
    case PHX_OP_ADD:
    case PHX_OP_MUL:
      return elementwise(e.op, *in(0), *in(1));
    case PHX_OP_SILU:
      return silu(*in(0));
    default:
      ADD_FAILURE() << "the reference has no " << phx_op_name(e.op);
      return Tracked(PHX_DTYPE_F32, {1});
  }
}

// Whether value is a matmul's result that one node alone reads and no output is: fusion
// may then give that node, a bias add or an activation, to the matmul (docs/graphs.md).
bool is_fusable_matmul(const Model& m, size_t value) {
  const Entry& e = m.entries[value];
  if (e.kind != EntryKind::kNode || e.op != PHX_OP_MATMUL || value == m.output) return false;
  size_t readers = 0;
  for (const Entry& reader : m.entries) {
    readers += static_cast<size_t>(std::count(reader.inputs.begin(), reader.inputs.end(), value));
  }
  return readers == 1;
}

// The model's output as float64, with its error bound, for the nodes as written or fused.
Tracked evaluate(const Model& m, bool bf16_products) {
  std::vector<Tracked> values;
  for (const Entry& e : m.entries) {
    values.push_back(e.kind == EntryKind::kNode ? evaluate_node(e, values, bf16_products)
                                                : exact(e.data));
    if (e.op != PHX_OP_ADD) continue;
    for (size_t side = 0; side < 2; ++side) {
      if (!is_fusable_matmul(m, e.inputs[side])) continue;
      // Taken as the matmul's bias, the other side enters its sum of K products.
      const Tracked& a = values[m.entries[e.inputs[side]].inputs[0]];
      const double k = static_cast<double>(a.shape.back());
      const Tracked& bias = values[e.inputs[1 - side]];
      for (size_t j = 0; j < values.back().error.size(); ++j) {
        values.back().error[j] += 2.0 * k * kU * std::fabs(bias.value[j]);
      }
    }
  }
  return values[m.output];
}

// ---- Graph and executable handles ----------------------------------------------------------

struct GraphDeleter {
  void operator()(phx_graph_s* g) const { phx_graph_destroy(g); }
};
struct ExecutableDeleter {
  void operator()(phx_executable_s* e) const { phx_executable_destroy(e); }
};
using Graph = std::unique_ptr<phx_graph_s, GraphDeleter>;
using Executable = std::unique_ptr<phx_executable_s, ExecutableDeleter>;

// The model as a graph; its values are the entries' indices (values are numbered in the
// order they are added, which the graph must keep). Its outputs: the model's output, or,
// with every_node_an_output, each node's value in the order of the nodes.
Graph build_graph(phx_context context, const Model& m, bool every_node_an_output = false) {
  phx_graph raw = nullptr;
  EXPECT_EQ(phx_graph_create(context, &raw), PHX_STATUS_OK) << phx_last_error();
  Graph graph(raw);
  for (size_t i = 0; graph && i < m.entries.size(); ++i) {
    const Entry& e = m.entries[i];
    phx_value value = PHX_VALUE_NONE;
    phx_status status = PHX_STATUS_OK;
    if (e.kind == EntryKind::kInput) {
      phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
      desc.name = e.name.c_str();
      desc.dtype = e.data.dtype;
      desc.rank = e.data.shape.size();
      desc.shape = e.data.shape.data();
      status = phx_graph_add_input(graph.get(), &desc, &value);
    } else if (e.kind == EntryKind::kConstant) {
      const std::vector<unsigned char> bytes = to_bytes(e.data);
      status =
          phx_graph_add_constant(graph.get(), e.name.c_str(), e.data.dtype, e.data.shape.size(),
                                 e.data.shape.data(), bytes.data(), bytes.size(), &value);
    } else {
      std::vector<phx_value> inputs;
      for (size_t in : e.inputs) {
        inputs.push_back(in == kAbsent ? PHX_VALUE_NONE : static_cast<phx_value>(in));
      }
      phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
      desc.name = e.name.c_str();
      desc.op = e.op;
      desc.params = e.params.empty() ? nullptr : e.params.data();
      desc.inputs = inputs.data();
      desc.input_count = inputs.size();
      desc.output_count = 1;
      status = phx_graph_add_node(graph.get(), &desc, &value);
    }
    EXPECT_EQ(status, PHX_STATUS_OK) << e.name << ": " << phx_last_error();
    EXPECT_EQ(value, i) << e.name;
    if (status != PHX_STATUS_OK) graph.reset();
  }
  for (size_t value : every_node_an_output ? m.nodes() : std::vector<size_t>{m.output}) {
    if (!graph) break;
    EXPECT_EQ(phx_graph_add_output(graph.get(), static_cast<phx_value>(value), nullptr),
              PHX_STATUS_OK)
        << m.entries[value].name << ": " << phx_last_error();
  }
  return graph;
}

phx_value_info value_info(phx_graph graph, size_t value) {
  phx_value_info info = PHX_VALUE_INFO_INIT;
  EXPECT_EQ(phx_graph_value_info(graph, static_cast<phx_value>(value), &info), PHX_STATUS_OK)
      << phx_last_error();
  return info;
}

Shape shape_of(const phx_value_info& info) { return Shape(info.shape, info.shape + info.rank); }

// ---- The test ------------------------------------------------------------------------------

// The bytes of some values of a model as a device computed them, by entry index.
using DeviceValues = std::vector<std::vector<unsigned char>>;

class GraphModelTest : public OpSuite {
 protected:
  // Runs the model on this device in the first dtype that the device runs every node of
  // in, and checks it; skips (naming the node) where there is none, but never on the CPU.
  void check_model(const std::function<Model(phx_dtype)>& make_model) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context_, device(), &info), PHX_STATUS_OK);
    std::string f32_lacks;
    for (phx_dtype dt : {PHX_DTYPE_F32, PHX_DTYPE_BF16, PHX_DTYPE_F16}) {
      if (!holds(dt)) {
        if (dt == PHX_DTYPE_F32) f32_lacks = "f32 tensors";
        continue;
      }
      const Model m = make_model(dt);
      const Graph graph = build_graph(context_, m);
      ASSERT_TRUE(graph);
      const std::string lacking = unsupported_node(m, graph.get());
      if (lacking.empty()) {
        SCOPED_TRACE(std::string("in ") + phx_dtype_name(dt));
        const std::string plugin = info.plugin;
        check_on_device(m, graph.get(), plugin == "cpu" || plugin == "tpu-sim", plugin == "cpu");
        return;
      }
      if (dt == PHX_DTYPE_F32) f32_lacks = lacking;
    }
    ASSERT_NE(info.type, PHX_DEVICE_CPU)
        << "the CPU device must run the model; f32 lacks " << f32_lacks;
    GTEST_SKIP() << info.name << " runs the model in no float dtype; in f32 it lacks " << f32_lacks;
  }

  // The name of the first node the device does not run in the dtypes of m, or "".
  std::string unsupported_node(const Model& m, phx_graph graph) {
    for (size_t i : m.nodes()) {
      const Entry& e = m.entries[i];
      std::vector<phx_dtype> in_dtypes;
      for (size_t in : e.inputs) {
        in_dtypes.push_back(in == kAbsent ? PHX_DTYPE_INVALID : value_info(graph, in).dtype);
      }
      const phx_dtype out_dtype = value_info(graph, i).dtype;
      const phx_op_variant variant = {sizeof(phx_op_variant),
                                      e.op,
                                      e.params.empty() ? nullptr : e.params.data(),
                                      in_dtypes.data(),
                                      in_dtypes.size(),
                                      &out_dtype,
                                      1};
      int supported = 0;
      EXPECT_EQ(phx_device_supports_op(context_, device(), &variant, &supported), PHX_STATUS_OK)
          << phx_last_error();
      if (!supported) {
        return e.name + " (" + phx_op_name(e.op) + ", " + phx_dtype_name(in_dtypes[0]) + ")";
      }
    }
    return "";
  }

  Executable compile(phx_graph graph, uint32_t flags = 0) {
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = device();
    options.flags = flags;
    phx_executable raw = nullptr;
    // phx_device_supports_op claimed every node: compiling must not refuse one.
    EXPECT_EQ(phx_graph_compile(context_, graph, &options, &raw), PHX_STATUS_OK)
        << phx_last_error();
    return Executable(raw);
  }

  std::vector<unsigned char> download_bytes(phx_tensor t) {
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    EXPECT_EQ(phx_tensor_describe(t, &desc), PHX_STATUS_OK);
    std::vector<unsigned char> bytes(desc.byte_size);
    EXPECT_EQ(phx_tensor_download(t, 0, bytes.data(), bytes.size()), PHX_STATUS_OK)
        << phx_last_error();
    return bytes;
  }

  // Runs the executable, whose outputs are the values `outputs`, on the model's inputs.
  DeviceValues run_executable(const Model& m, phx_graph graph, phx_executable exe,
                              const std::vector<size_t>& outputs) {
    std::vector<Tensor> owned;
    std::vector<phx_tensor> inputs, output_handles;
    for (size_t i : m.inputs()) {
      owned.push_back(upload(m.entries[i].data));
      inputs.push_back(owned.back().get());
    }
    for (size_t i : outputs) {
      const phx_value_info info = value_info(graph, i);
      owned.push_back(make(info.dtype, shape_of(info)));
      output_handles.push_back(owned.back().get());
    }
    uint64_t ticket = 0;
    EXPECT_EQ(phx_executable_run(stream_, exe, inputs.data(), inputs.size(), output_handles.data(),
                                 output_handles.size(), &ticket),
              PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(phx_stream_wait(stream_, ticket), PHX_STATUS_OK) << phx_last_error();
    DeviceValues values(m.entries.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      values[outputs[k]] = download_bytes(output_handles[k]);
    }
    return values;
  }

  // Runs the model's nodes one by one with phx_op_run; returns every node's value.
  DeviceValues run_eagerly(const Model& m, phx_graph graph) {
    std::vector<Tensor> tensors;
    for (size_t i = 0; i < m.entries.size(); ++i) {
      const Entry& e = m.entries[i];
      if (e.kind != EntryKind::kNode) {
        tensors.push_back(upload(e.data));
        continue;
      }
      const phx_value_info info = value_info(graph, i);
      tensors.push_back(make(info.dtype, shape_of(info)));
      std::vector<phx_tensor> inputs;
      for (size_t in : e.inputs) inputs.push_back(in == kAbsent ? nullptr : tensors[in].get());
      const phx_tensor outputs[] = {tensors.back().get()};
      const phx_op_desc desc = {sizeof(phx_op_desc),
                                e.op,
                                e.params.empty() ? nullptr : e.params.data(),
                                inputs.data(),
                                inputs.size(),
                                outputs,
                                1};
      EXPECT_EQ(phx_op_run(stream_, &desc, nullptr), PHX_STATUS_OK)
          << e.name << ": " << phx_last_error();
    }
    EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
    DeviceValues values(m.entries.size());
    for (size_t i : m.nodes()) values[i] = download_bytes(tensors[i].get());
    return values;
  }

  static std::vector<double> decoded(const std::vector<unsigned char>& bytes, phx_dtype dt) {
    const size_t size = phx_dtype_size(dt);
    std::vector<double> values(bytes.size() / size);
    for (size_t i = 0; i < values.size(); ++i) values[i] = decode(dt, &bytes[i * size]);
    return values;
  }

  // Each node's value as the device computed it, against float64 computed from the
  // device's own values of its inputs: the op's own error alone, as tight as the op suite
  // (the top comment's "own" terms).
  void expect_each_node_right(const Model& m, phx_graph graph, const DeviceValues& device) {
    std::vector<Tracked> values;
    for (size_t i = 0; i < m.entries.size(); ++i) {
      const Entry& e = m.entries[i];
      if (e.kind != EntryKind::kNode) {
        values.push_back(exact(e.data));
        continue;
      }
      const phx_value_info info = value_info(graph, i);
      Tracked got(info.dtype, shape_of(info));
      got.value = decoded(device[i], info.dtype);
      ASSERT_EQ(got.value.size(), got.error.size()) << e.name;
      const Tracked reference = evaluate_node(e, values, bf16_products_);
      Expected expected;
      for (size_t k = 0; k < reference.value.size(); ++k) {
        expected.add(reference.value[k], reference.error[k] + 0x1p-126);
      }
      SCOPED_TRACE("node " + e.name);
      expect_matches(got.value, expected, info.dtype);
      values.push_back(std::move(got));
    }
  }

  // The model's executable against float64 end to end; compiled without fusion, against
  // the nodes run eagerly; then an executable of the same nodes with every node an output
  // (which leaves nothing to fuse), node by node.
  void check_on_device(const Model& m, phx_graph graph, bool bitwise_as_eager,
                       bool bitwise_run_to_run) {
    const Tracked reference = evaluate(m, bf16_products_);
    Expected expected;
    for (size_t i = 0; i < reference.value.size(); ++i) {
      expected.add(reference.value[i], 1.1 * reference.error[i] + 0x1p-126);
    }
    const phx_value_info out_info = value_info(graph, m.output);
    ASSERT_EQ(shape_of(out_info), reference.shape);

    const Executable exe = compile(graph);
    ASSERT_TRUE(exe);
    const DeviceValues first = run_executable(m, graph, exe.get(), {m.output});
    {
      SCOPED_TRACE("the executable's output against float64");
      expect_matches(decoded(first[m.output], out_info.dtype), expected, out_info.dtype);
    }
    if (bitwise_run_to_run) {
      EXPECT_TRUE(first == run_executable(m, graph, exe.get(), {m.output}))
          << "a second run of one executable differs";
    }
    phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
    ASSERT_EQ(phx_executable_describe(exe.get(), &info), PHX_STATUS_OK);
    RecordProperty("fused_nodes", std::to_string(info.fused_nodes));

    const DeviceValues eager = run_eagerly(m, graph);
    {
      SCOPED_TRACE("the nodes run eagerly");
      expect_each_node_right(m, graph, eager);
    }
    const Executable unfused = compile(graph, PHX_COMPILE_NO_FUSION);
    ASSERT_TRUE(unfused);
    const DeviceValues unfused_out = run_executable(m, graph, unfused.get(), {m.output});
    if (bitwise_as_eager) {
      EXPECT_TRUE(unfused_out[m.output] == eager[m.output])
          << "the unfused executable's output differs from the nodes run eagerly";
    } else {
      SCOPED_TRACE("the unfused executable's output against float64");
      expect_matches(decoded(unfused_out[m.output], out_info.dtype), expected, out_info.dtype);
    }

    const Graph observed = build_graph(context_, m, true);
    ASSERT_TRUE(observed);
    const Executable observed_exe = compile(observed.get());
    ASSERT_TRUE(observed_exe);
    const DeviceValues every_node =
        run_executable(m, observed.get(), observed_exe.get(), m.nodes());
    SCOPED_TRACE("the executable with every node an output");
    expect_each_node_right(m, observed.get(), every_node);
    if (bitwise_as_eager) {
      for (size_t i : m.nodes()) {
        EXPECT_TRUE(every_node[i] == eager[i]) << m.entries[i].name << " differs from eager";
      }
    }
  }
};

TEST_P(GraphModelTest, ThreeLayerMlp) { check_model(mlp_model); }

TEST_P(GraphModelTest, TransformerBlock) { check_model(transformer_model); }

INSTANTIATE_TEST_SUITE_P(Devices, GraphModelTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
// With no device found the suite is empty; CpuDeviceFound fails then.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GraphModelTest);

// The models must run somewhere for sure: on the CPU device, which every build has.
TEST(GraphModels, CpuDeviceFound) {
  phx_context context = nullptr;
  ASSERT_EQ(phx_context_create(suite_context_options(), &context), PHX_STATUS_OK);
  size_t count = 0;
  EXPECT_EQ(phx_device_count(context, &count), PHX_STATUS_OK);
  bool found = false;
  for (size_t i = 0; i < count; ++i) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    found = found || (phx_device_get(context, i, &info) == PHX_STATUS_OK &&
                      info.type == PHX_DEVICE_CPU && std::string(info.plugin) == "cpu");
  }
  EXPECT_TRUE(found) << "no device of the CPU plugin: the models ran on no CPU";
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

}  // namespace
