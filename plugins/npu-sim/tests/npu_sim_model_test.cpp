// Models on the NPU, op by op through the C API with CPU fallback on: an MLP (matmul +
// bias, gelu, matmul) and a transformer block (rms_norm, q/k/v projections, rope, causal
// attention, output projection, residual add, a SwiGLU MLP with silu, an output head and
// its softmax), in f16 as an NPU runs them: the input cast from f32 to f16 on the NPU,
// f16 weights, the outputs cast back to f32. Every op runs on the NPU (fallback_ops 0:
// a real NPU lacks none of them). The MLP's output is within its running error bound of
// the float64 MLP (f16_reference.h). A bound carried through the whole block grows by
// sum |w| (about sqrt(K) / 2) per product and exponentially through the softmaxes, past
// any use; so the block is checked op by op instead: each op's output within one f16
// rounding plus its f32 error of the float64 op on the very inputs the NPU gave it.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "f16_reference.h"
#include "f16_values.h"
#include "npu_sim_test_context.h"

namespace {

using npu_sim_test::Ref;

// The NPU of a profile, its stream, and the tensors a model creates on it.
class NpuModel {
 public:
  explicit NpuModel(const char* settings)
      : sim_(settings, PHX_CONTEXT_FALLBACK_CPU), stream_(sim_.context(), sim_.device()) {}

  phx_tensor tensor(phx_dtype dtype, const std::vector<int64_t>& shape) {
    tensors_.push_back(
        std::make_unique<phx_test::Tensor>(sim_.context(), sim_.device(), dtype, shape));
    EXPECT_EQ(tensors_.back()->status(), PHX_STATUS_OK) << phx_last_error();
    return tensors_.back()->get();
  }

  // r's values, which must be f16 values (or f32 ones for an f32 tensor).
  phx_tensor upload(const Ref& r, phx_dtype dtype) {
    phx_tensor t = tensor(dtype, r.shape);
    if (dtype == PHX_DTYPE_F16) {
      tensors_.back()->upload(npu_sim_test::to_f16(r.v));
    } else {
      tensors_.back()->upload(std::vector<float>(r.v.begin(), r.v.end()));
    }
    return t;
  }

  // Runs op into a new tensor of dtype and shape.
  phx_tensor run(phx_op_id op, const void* params, std::vector<phx_tensor> inputs, phx_dtype dtype,
                 const std::vector<int64_t>& shape) {
    phx_tensor out = tensor(dtype, shape);
    EXPECT_EQ(npu_sim_test::run(stream_.get(), op, params, std::move(inputs), {out}), PHX_STATUS_OK)
        << phx_op_name(op) << ": " << phx_last_error();
    ++ops_;
    return out;
  }

  // t's values, as exact inputs of a float64 reference.
  Ref fetch_f16(phx_tensor t, const std::vector<int64_t>& shape) {
    EXPECT_EQ(phx_stream_synchronize(stream_.get()), PHX_STATUS_OK);
    std::vector<uint16_t> bits(static_cast<size_t>(npu_sim_test::count(shape)));
    EXPECT_EQ(phx_tensor_download(t, 0, bits.data(), bits.size() * 2), PHX_STATUS_OK);
    return npu_sim_test::exact(shape, npu_sim_test::from_f16(bits));
  }

  std::vector<double> download_f32(phx_tensor t, size_t n) {
    EXPECT_EQ(phx_stream_synchronize(stream_.get()), PHX_STATUS_OK);
    std::vector<float> values(n);
    EXPECT_EQ(phx_tensor_download(t, 0, values.data(), n * sizeof(float)), PHX_STATUS_OK);
    return {values.begin(), values.end()};
  }

  // Every op ran on the NPU itself, its products on the MAC array.
  void expect_all_on_the_npu(double macs) {
    auto stats = sim_.stats(sim_.device());
    EXPECT_EQ(stats["fallback_ops"], 0.0);
    EXPECT_EQ(stats["ops"], double(ops_));
    EXPECT_EQ(stats["macs_total"], macs);
  }

 private:
  npu_sim_test::Sim sim_;
  npu_sim_test::Stream stream_;
  std::vector<std::unique_ptr<phx_test::Tensor>> tensors_;  // destroyed before the context
  int ops_ = 0;
};

// Uniform values in [-scale, scale], rounded to f16 (weights) or f32 (activations).
Ref random_ref(std::vector<int64_t> shape, double scale, bool f16, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(static_cast<size_t>(npu_sim_test::count(shape)));
  for (double& x : v)
    x = f16 ? npu_sim_test::round_f16(dist(rng)) : double(static_cast<float>(dist(rng)));
  return npu_sim_test::exact(std::move(shape), std::move(v));
}

// got within ref's bound everywhere; the bound itself tight enough to mean something:
// its largest entry under max_relative of the largest |value|.
void expect_within(const std::vector<double>& got, const Ref& ref, double max_relative,
                   const char* what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.size(), ref.size());
  double largest_value = 0, largest_bound = 0, worst_use = 0;
  size_t failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    largest_value = std::max(largest_value, std::fabs(ref.v[i]));
    largest_bound = std::max(largest_bound, ref.e[i]);
    worst_use = std::max(worst_use, std::fabs(got[i] - ref.v[i]) / ref.e[i]);
    if (!(std::fabs(got[i] - ref.v[i]) <= ref.e[i]) && ++failures <= 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", float64 " << ref.v[i] << " +- "
                    << ref.e[i];
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_LT(largest_bound, max_relative * largest_value);
  // How much of the bound the worst element used, in the test report (--gtest_output).
  testing::Test::RecordProperty("bound_used", std::to_string(worst_use));
}

TEST(NpuSimModels, MlpRunsOnTheNpuInF16) {
  NpuModel npu("profile=mobile");
  std::mt19937_64 rng(7);
  // x [4, 64] f32 -> matmul W1 [64, 128] + b1, gelu -> matmul W2 [128, 32] -> f32.
  const Ref x = random_ref({4, 64}, 1.0, false, rng);
  const Ref w1 = random_ref({64, 128}, 1.0 / 8, true, rng), b1 = random_ref({128}, 0.1, true, rng);
  const Ref w2 = random_ref({128, 32}, 1.0 / 11, true, rng);

  phx_tensor x16 =
      npu.run(PHX_OP_CAST, nullptr, {npu.upload(x, PHX_DTYPE_F32)}, PHX_DTYPE_F16, {4, 64});
  phx_tensor h = npu.run(PHX_OP_MATMUL, nullptr,
                         {x16, npu.upload(w1, PHX_DTYPE_F16), npu.upload(b1, PHX_DTYPE_F16)},
                         PHX_DTYPE_F16, {4, 128});
  phx_tensor g = npu.run(PHX_OP_GELU, nullptr, {h}, PHX_DTYPE_F16, {4, 128});
  phx_tensor y =
      npu.run(PHX_OP_MATMUL, nullptr, {g, npu.upload(w2, PHX_DTYPE_F16)}, PHX_DTYPE_F16, {4, 32});
  phx_tensor y32 = npu.run(PHX_OP_CAST, nullptr, {y}, PHX_DTYPE_F32, {4, 32});

  using namespace npu_sim_test;
  const Ref ref_h = matmul(stored_f16(x), w1, &b1);
  const Ref ref_y = matmul(activation(ref_h, gelu, 1.13), w2, nullptr);
  // The bound: 2.9% of the largest |y|; the NPU uses 1.3% of it (0.04% of |y|).
  expect_within(npu.download_f32(y32, ref_y.size()), ref_y, 0.05, "y");
  npu.expect_all_on_the_npu(4 * 64 * 128 + 4 * 128 * 32);
}

// The f32 tables of rope: angle s * 10000^(-2i / D) for position s and pair i.
void rope_tables(int64_t s, int64_t d, std::vector<double>& cos, std::vector<double>& sin) {
  for (int64_t p = 0; p < s; ++p) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = double(p) * std::pow(10000.0, -2.0 * double(i) / double(d));
      cos.push_back(double(static_cast<float>(std::cos(angle))));
      sin.push_back(double(static_cast<float>(std::sin(angle))));
    }
  }
}

struct BlockWeights {
  Ref g1, wq, wk, wv, wo, g2, w_up, w_gate, w_down, w_head;
};

BlockWeights block_weights(int64_t dm, int64_t heads, int64_t dh, int64_t ff, int64_t vocab,
                           std::mt19937_64& rng) {
  auto ones = [&](int64_t n) {
    Ref r = random_ref({n}, 0.25, true, rng);
    for (double& v : r.v) v = npu_sim_test::round_f16(1.0 + v);
    return r;
  };
  const double in = 1.0 / std::sqrt(double(dm));
  return {ones(dm),
          random_ref({1, heads, dm, dh}, in, true, rng),
          random_ref({1, heads, dm, dh}, in, true, rng),
          random_ref({1, heads, dm, dh}, in, true, rng),
          random_ref({1, heads, dh, dm}, 1.0 / std::sqrt(double(heads * dh)), true, rng),
          ones(dm),
          random_ref({dm, ff}, in, true, rng),
          random_ref({dm, ff}, in, true, rng),
          random_ref({ff, dm}, 1.0 / std::sqrt(double(ff)), true, rng),
          random_ref({dm, vocab}, in, true, rng)};
}

TEST(NpuSimModels, TransformerBlockRunsOnTheNpuInF16) {
  NpuModel npu("profile=mobile");
  std::mt19937_64 rng(11);
  const int64_t s = 16, dm = 64, heads = 4, dh = 16, ff = 128, vocab = 32;
  const Ref x = random_ref({1, s, dm}, 1.0, false, rng);
  const BlockWeights w = block_weights(dm, heads, dh, ff, vocab, rng);
  std::vector<double> cos, sin;
  rope_tables(s, dh, cos, sin);
  auto f16 = [&](const Ref& r) { return npu.upload(r, PHX_DTYPE_F16); };
  const std::vector<int64_t> rows = {1, s, dm}, per_head = {1, heads, s, dh};
  const phx_tensor cos_t = npu.upload(npu_sim_test::exact({s, dh / 2}, cos), PHX_DTYPE_F32);
  const phx_tensor sin_t = npu.upload(npu_sim_test::exact({s, dh / 2}, sin), PHX_DTYPE_F32);
  phx_attention_params causal = PHX_ATTENTION_PARAMS_INIT;
  causal.mask = PHX_ATTENTION_MASK_CAUSAL;
  phx_reduce_params over_heads = PHX_REDUCE_PARAMS_INIT;
  over_heads.axes_mask = 1u << 1;

  // Attention: h = rms_norm(x); q, k, v per head; rope on q and k; out projection per
  // head summed over the heads; residual.
  phx_tensor x16 =
      npu.run(PHX_OP_CAST, nullptr, {npu.upload(x, PHX_DTYPE_F32)}, PHX_DTYPE_F16, rows);
  phx_tensor h = npu.run(PHX_OP_RMS_NORM, nullptr, {x16, f16(w.g1)}, PHX_DTYPE_F16, rows);
  phx_tensor q = npu.run(PHX_OP_MATMUL, nullptr, {h, f16(w.wq)}, PHX_DTYPE_F16, per_head);
  phx_tensor k = npu.run(PHX_OP_MATMUL, nullptr, {h, f16(w.wk)}, PHX_DTYPE_F16, per_head);
  phx_tensor v = npu.run(PHX_OP_MATMUL, nullptr, {h, f16(w.wv)}, PHX_DTYPE_F16, per_head);
  phx_tensor qr = npu.run(PHX_OP_ROPE, nullptr, {q, cos_t, sin_t}, PHX_DTYPE_F16, per_head);
  phx_tensor kr = npu.run(PHX_OP_ROPE, nullptr, {k, cos_t, sin_t}, PHX_DTYPE_F16, per_head);
  phx_tensor o = npu.run(PHX_OP_ATTENTION, &causal, {qr, kr, v}, PHX_DTYPE_F16, per_head);
  phx_tensor oh = npu.run(PHX_OP_MATMUL, nullptr, {o, f16(w.wo)}, PHX_DTYPE_F16, {1, heads, s, dm});
  phx_tensor a = npu.run(PHX_OP_REDUCE_SUM, &over_heads, {oh}, PHX_DTYPE_F16, rows);
  phx_tensor x1 = npu.run(PHX_OP_ADD, nullptr, {x16, a}, PHX_DTYPE_F16, rows);
  // SwiGLU MLP: down(silu(gate(h2)) * up(h2)); residual; the head's softmax.
  phx_tensor h2 = npu.run(PHX_OP_RMS_NORM, nullptr, {x1, f16(w.g2)}, PHX_DTYPE_F16, rows);
  phx_tensor up = npu.run(PHX_OP_MATMUL, nullptr, {h2, f16(w.w_up)}, PHX_DTYPE_F16, {1, s, ff});
  phx_tensor gate = npu.run(PHX_OP_MATMUL, nullptr, {h2, f16(w.w_gate)}, PHX_DTYPE_F16, {1, s, ff});
  phx_tensor act = npu.run(PHX_OP_SILU, nullptr, {gate}, PHX_DTYPE_F16, {1, s, ff});
  phx_tensor prod = npu.run(PHX_OP_MUL, nullptr, {act, up}, PHX_DTYPE_F16, {1, s, ff});
  phx_tensor down = npu.run(PHX_OP_MATMUL, nullptr, {prod, f16(w.w_down)}, PHX_DTYPE_F16, rows);
  phx_tensor x2 = npu.run(PHX_OP_ADD, nullptr, {x1, down}, PHX_DTYPE_F16, rows);
  phx_tensor logits =
      npu.run(PHX_OP_MATMUL, nullptr, {x2, f16(w.w_head)}, PHX_DTYPE_F16, {1, s, vocab});
  phx_tensor probs = npu.run(PHX_OP_SOFTMAX, nullptr, {logits}, PHX_DTYPE_F16, {1, s, vocab});
  phx_tensor x2_32 = npu.run(PHX_OP_CAST, nullptr, {x2}, PHX_DTYPE_F32, rows);
  phx_tensor probs_32 = npu.run(PHX_OP_CAST, nullptr, {probs}, PHX_DTYPE_F32, {1, s, vocab});

  // Each op against float64 on the inputs the NPU gave it (F: fetched from the NPU).
  using namespace npu_sim_test;
  const double eps = 1e-5;  // rms_norm's default epsilon
  auto F = [&](phx_tensor t, const std::vector<int64_t>& shape) { return npu.fetch_f16(t, shape); };
  auto check = [&](phx_tensor t, const Ref& ref, const char* what) {
    // One f16 rounding and an f32 error: about 2^-11 of the largest value (the NPU uses
    // 83% to 99.7% of each op's bound), the check under 2^-10.
    expect_within(F(t, ref.shape).v, ref, 0x1p-10, what);
  };
  check(x16, stored_f16(x), "cast");
  check(h, rms_norm(F(x16, rows), w.g1, eps), "rms_norm");
  check(q, matmul(F(h, rows), w.wq, nullptr), "q");
  check(k, matmul(F(h, rows), w.wk, nullptr), "k");
  check(v, matmul(F(h, rows), w.wv, nullptr), "v");
  check(qr, rope(F(q, per_head), cos, sin), "rope q");
  check(kr, rope(F(k, per_head), cos, sin), "rope k");
  check(o, causal_attention(F(qr, per_head), F(kr, per_head), F(v, per_head)), "attention");
  check(oh, matmul(F(o, per_head), w.wo, nullptr), "out projection");
  check(a, reduce_sum_dim1(F(oh, {1, heads, s, dm})), "sum over heads");
  check(x1, add(F(x16, rows), F(a, rows)), "residual");
  check(h2, rms_norm(F(x1, rows), w.g2, eps), "rms_norm 2");
  check(up, matmul(F(h2, rows), w.w_up, nullptr), "up");
  check(gate, matmul(F(h2, rows), w.w_gate, nullptr), "gate");
  check(act, activation(F(gate, {1, s, ff}), silu, 1.1), "silu");
  check(prod, mul(F(act, {1, s, ff}), F(up, {1, s, ff})), "mul");
  check(down, matmul(F(prod, {1, s, ff}), w.w_down, nullptr), "down");
  check(x2, add(F(x1, rows), F(down, rows)), "residual 2");
  check(logits, matmul(F(x2, rows), w.w_head, nullptr), "head");
  check(probs, softmax(F(logits, {1, s, vocab})), "softmax");
  // f16 -> f32 is exact.
  EXPECT_EQ(npu.download_f32(x2_32, size_t(s * dm)), F(x2, rows).v);
  EXPECT_EQ(npu.download_f32(probs_32, size_t(s * vocab)), F(probs, {1, s, vocab}).v);
  // q, k, v and the output projection per head; attention's two products per head; up,
  // gate, down; the head.
  npu.expect_all_on_the_npu(double(3 * heads * s * dm * dh + heads * s * dh * dm +
                                   2 * heads * s * s * dh + 2 * s * dm * ff + s * ff * dm +
                                   s * dm * vocab));
}

}  // namespace
