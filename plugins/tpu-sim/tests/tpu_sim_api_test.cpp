// The TPU-sim plugin through the C API: the chips it lists (and their place in the pod),
// bit-exact MXU numerics, HBM capacity per chip, configuration errors, the compile cache,
// profile records and statistics.
// Every test sets PHX_TPU_SIM before creating its context (the plugin reads it then).
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sim_api_fixture.h"

namespace {

// ---- the context and its tpu-sim devices ---------------------------------------------

const phx_test::SimPluginNames kTpuSim = {"tpu-sim", "phx_tpu_sim", "PHX_TPU_SIM",
                                          "PHX_TPU_SIM_CONFIG"};

class Sim : public phx_test::SimContext {
 public:
  // settings: PHX_TPU_SIM's value; config_file: PHX_TPU_SIM_CONFIG's, or none.
  explicit Sim(const char* settings, uint32_t flags = 0, const char* config_file = nullptr)
      : SimContext(kTpuSim, settings, flags, config_file) {}
};

using phx_test::expect_rejected;
using phx_test::metric;
using phx_test::property;
using phx_test::Tensor;

phx_status run(phx_stream stream, phx_op_id op, const void* params, std::vector<phx_tensor> inputs,
               phx_tensor output) {
  phx_op_desc desc = {sizeof(phx_op_desc), op, params, inputs.data(), inputs.size(), &output, 1};
  return phx_op_run(stream, &desc, nullptr);
}

// ---- the reference: the numerics rule of docs/tpu-sim.md, written plainly ------------

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// f32 -> bf16, round to nearest, ties to even (finite inputs only here).
uint16_t to_bf16(float f) {
  const uint32_t b = bits(f);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
float bf16_value(uint16_t h) { return from_bits(uint32_t(h) << 16); }
float round_bf16(float f) { return bf16_value(to_bf16(f)); }

// sum_k a(k) * b(k) with K cut in passes of depth: each pass summed in f32 from zero in
// k order, the passes added in order.
template <class A, class B>
float mxu_dot(int64_t k_count, int64_t depth, A a, B b) {
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < k_count; k0 += depth) {
    float pass = 0.0f;
    for (int64_t k = k0; k < std::min(k_count, k0 + depth); ++k) pass += a(k) * b(k);
    acc += pass;
  }
  return acc;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

void expect_bit_identical(const std::vector<float>& got, const std::vector<float>& want,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (bits(got[i]) != bits(want[i]) && mismatches++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", the rule gives "
                    << want[i];
  EXPECT_EQ(mismatches, 0u) << what;
}

// ---- tests ---------------------------------------------------------------------------

TEST(TpuSim, ListsEveryChipWithItsFigures) {
  Sim sim("generation=v6e,chips=3,memory_fraction=0.5");
  ASSERT_EQ(sim.devices().size(), 3u);
  for (size_t d : sim.devices()) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(sim.context(), d, &info), PHX_STATUS_OK);
    EXPECT_EQ(info.type, PHX_DEVICE_TPU);
    EXPECT_STREQ(info.name, "TPU v6e (simulated)");
    EXPECT_EQ(info.memory_total_bytes, 16'000'000'000u);  // 32 GB x 0.5
    EXPECT_EQ(info.compute_units, 4u);
    EXPECT_EQ(property(sim.context(), d, "mxu"), "4 x 256x256");
    EXPECT_EQ(property(sim.context(), d, "peak_bf16_tflops"), "918");
    EXPECT_EQ(property(sim.context(), d, "matmul_precision"), "bf16");
  }
  EXPECT_TRUE(sim.has_cpu());
}

// matmul on bf16-rounded inputs, for shapes inside one pass, across several passes (not
// multiples of 128), a matrix-vector and a vector-matrix product, with bias and relu.
TEST(TpuSim, Bf16MatmulIsBitIdenticalToTheRule) {
  Sim sim("generation=v5e");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
  struct Case {
    int64_t m, k, n;
    bool trans_b;
  };
  for (const Case& c : {Case{33, 100, 47, false}, Case{64, 300, 65, true}, Case{130, 129, 1, false},
                        Case{1, 1000, 257, false}, Case{200, 513, 96, false}}) {
    const std::string what =
        std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n);
    const auto a = random_values(size_t(c.m * c.k), 1);
    const auto b = random_values(size_t(c.k * c.n), 2);
    const auto bias = random_values(size_t(c.n), 3);
    Tensor ta(sim.context(), sim.device(), PHX_DTYPE_F32, {c.m, c.k});
    Tensor tb(sim.context(), sim.device(), PHX_DTYPE_F32,
              c.trans_b ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n});
    Tensor tbias(sim.context(), sim.device(), PHX_DTYPE_F32, {c.n});
    Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {c.m, c.n});
    ta.upload(a);
    tb.upload(b);
    tbias.upload(bias);
    phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
    params.transpose_b = c.trans_b;
    params.activation = PHX_ACTIVATION_RELU;
    ASSERT_EQ(run(stream, PHX_OP_MATMUL, &params, {ta.get(), tb.get(), tbias.get()}, out.get()),
              PHX_STATUS_OK)
        << phx_last_error();
    std::vector<float> want(size_t(c.m * c.n));
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const float sum = mxu_dot(
            c.k, 128, [&](int64_t k) { return round_bf16(a[size_t(i * c.k + k)]); },
            [&](int64_t k) {
              return round_bf16(c.trans_b ? b[size_t(j * c.k + k)] : b[size_t(k * c.n + j)]);
            });
        const float biased = sum + bias[size_t(j)];
        want[size_t(i * c.n + j)] = biased < 0.0f ? 0.0f : biased;
      }
    expect_bit_identical(out.download<float>(want.size()), want, what);
  }
  phx_stream_destroy(stream);
}

// bf16 tensors in and out, batched with a broadcast operand, on v6e's 256-deep passes.
TEST(TpuSim, Bf16TensorsBatchedOn256DeepArrays) {
  Sim sim("generation=v6e");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
  const int64_t batch = 3, m = 17, k = 600, n = 40;
  std::vector<uint16_t> a(size_t(batch * m * k)), b(size_t(k * n));
  const auto ra = random_values(a.size(), 4), rb = random_values(b.size(), 5);
  for (size_t i = 0; i < a.size(); ++i) a[i] = to_bf16(ra[i]);
  for (size_t i = 0; i < b.size(); ++i) b[i] = to_bf16(rb[i]);
  Tensor ta(sim.context(), sim.device(), PHX_DTYPE_BF16, {batch, m, k});
  Tensor tb(sim.context(), sim.device(), PHX_DTYPE_BF16, {k, n});
  Tensor out(sim.context(), sim.device(), PHX_DTYPE_BF16, {batch, m, n});
  ta.upload(a);
  tb.upload(b);
  ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta.get(), tb.get()}, out.get()), PHX_STATUS_OK)
      << phx_last_error();
  const auto got = out.download<uint16_t>(size_t(batch * m * n));
  size_t mismatches = 0;
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const float sum = mxu_dot(
            k, 256, [&](int64_t kk) { return bf16_value(a[size_t((s * m + i) * k + kk)]); },
            [&](int64_t kk) { return bf16_value(b[size_t(kk * n + j)]); });
        mismatches += got[size_t((s * m + i) * n + j)] != to_bf16(sum);
      }
  EXPECT_EQ(mismatches, 0u);
  phx_stream_destroy(stream);
}

// conv2d lowered to the MXU: NCHW with padding, stride and bias (K = 32 * 3 * 3 = 288,
// three passes), NHWC with two groups and dilation.
TEST(TpuSim, Bf16Conv2dIsBitIdenticalToTheRule) {
  Sim sim("generation=v5e");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
  struct Case {
    phx_layout layout;
    int64_t n, c_in, h, w, c_out, kh, kw, groups, stride, pad, dil;
    bool bias;
  };
  for (const Case& c : {Case{PHX_LAYOUT_NCHW, 2, 32, 9, 7, 5, 3, 3, 1, 2, 1, 1, true},
                        Case{PHX_LAYOUT_NHWC, 1, 16, 8, 8, 6, 3, 3, 2, 1, 2, 2, false}}) {
    const int64_t ho = (c.h + 2 * c.pad - c.dil * (c.kh - 1) - 1) / c.stride + 1;
    const int64_t wo = (c.w + 2 * c.pad - c.dil * (c.kw - 1) - 1) / c.stride + 1;
    const int64_t cig = c.c_in / c.groups, cog = c.c_out / c.groups;
    const bool nhwc = c.layout == PHX_LAYOUT_NHWC;
    const auto x = random_values(size_t(c.n * c.c_in * c.h * c.w), 6);
    const auto w = random_values(size_t(c.c_out * cig * c.kh * c.kw), 7);
    const auto bias = random_values(size_t(c.c_out), 8);
    Tensor tx(sim.context(), sim.device(), PHX_DTYPE_F32,
              nhwc ? std::vector<int64_t>{c.n, c.h, c.w, c.c_in}
                   : std::vector<int64_t>{c.n, c.c_in, c.h, c.w});
    Tensor tw(sim.context(), sim.device(), PHX_DTYPE_F32,
              nhwc ? std::vector<int64_t>{c.c_out, c.kh, c.kw, cig}
                   : std::vector<int64_t>{c.c_out, cig, c.kh, c.kw});
    Tensor tbias(sim.context(), sim.device(), PHX_DTYPE_F32, {c.c_out});
    Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32,
               nhwc ? std::vector<int64_t>{c.n, ho, wo, c.c_out}
                    : std::vector<int64_t>{c.n, c.c_out, ho, wo});
    tx.upload(x);
    tw.upload(w);
    tbias.upload(bias);
    phx_conv2d_params p = PHX_CONV2D_PARAMS_INIT;
    p.layout = c.layout;
    p.stride[0] = p.stride[1] = uint32_t(c.stride);
    p.padding[0] = p.padding[1] = p.padding[2] = p.padding[3] = uint32_t(c.pad);
    p.dilation[0] = p.dilation[1] = uint32_t(c.dil);
    p.groups = uint32_t(c.groups);
    std::vector<phx_tensor> inputs = {tx.get(), tw.get()};
    if (c.bias) inputs.push_back(tbias.get());
    ASSERT_EQ(run(stream, PHX_OP_CONV2D, &p, inputs, out.get()), PHX_STATUS_OK) << phx_last_error();

    // K in the weight's order: (c, i, j) for NCHW weights, (i, j, c) for NHWC.
    const int64_t patch = cig * c.kh * c.kw;
    std::vector<float> want(size_t(c.n * c.c_out * ho * wo));
    for (int64_t img = 0; img < c.n; ++img)
      for (int64_t co = 0; co < c.c_out; ++co)
        for (int64_t oh = 0; oh < ho; ++oh)
          for (int64_t ow = 0; ow < wo; ++ow) {
            const int64_t grp = co / cog;
            auto x_at = [&](int64_t kk) {
              const int64_t ci = nhwc ? kk % cig : kk / (c.kh * c.kw);
              const int64_t i = nhwc ? kk / (c.kw * cig) : kk / c.kw % c.kh;
              const int64_t j = nhwc ? kk / cig % c.kw : kk % c.kw;
              const int64_t ih = oh * c.stride - c.pad + i * c.dil,
                            iw = ow * c.stride - c.pad + j * c.dil;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) return 0.0f;
              const int64_t ch = grp * cig + ci;
              const size_t at = size_t(nhwc ? ((img * c.h + ih) * c.w + iw) * c.c_in + ch
                                            : ((img * c.c_in + ch) * c.h + ih) * c.w + iw);
              return round_bf16(x[at]);
            };
            auto w_at = [&](int64_t kk) { return round_bf16(w[size_t(co * patch + kk)]); };
            float v = mxu_dot(patch, 128, x_at, w_at);
            if (c.bias) v += bias[size_t(co)];
            const size_t at = size_t(nhwc ? ((img * ho + oh) * wo + ow) * c.c_out + co
                                          : ((img * c.c_out + co) * ho + oh) * wo + ow);
            want[at] = v;
          }
    expect_bit_identical(out.download<float>(want.size()), want, nhwc ? "nhwc" : "nchw");
  }
  phx_stream_destroy(stream);
}

// conv_transpose2d is the conv2d of its spread input (x's pixels stride apart, zeros
// between) with the flipped weight, on the MXU: bit-identical to that rule, with K =
// 32 * 3 * 3 = 288 in three passes, groups, padding, output padding, dilation and bias.
TEST(TpuSim, Bf16ConvTranspose2dIsBitIdenticalToItsConv2d) {
  Sim sim("generation=v5e");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
  const int64_t n = 2, c_in = 64, h = 5, w = 6, groups = 2, cig = c_in / groups, cog = 3;
  const int64_t c_out = cog * groups, kh = 3, kw = 3, stride = 2, dil = 2;
  const int64_t pad_top = 1, pad_left = 5, out_pad = 1;
  const int64_t ho = (h - 1) * stride - 2 * pad_top + dil * (kh - 1) + out_pad + 1;
  const int64_t wo = (w - 1) * stride - 2 * pad_left + dil * (kw - 1) + out_pad + 1;
  const auto x = random_values(size_t(n * c_in * h * w), 9);
  const auto wt = random_values(size_t(c_in * cog * kh * kw), 10);
  const auto bias = random_values(size_t(c_out), 11);
  Tensor tx(sim.context(), sim.device(), PHX_DTYPE_F32, {n, c_in, h, w});
  Tensor tw(sim.context(), sim.device(), PHX_DTYPE_F32, {c_in, cog, kh, kw});
  Tensor tbias(sim.context(), sim.device(), PHX_DTYPE_F32, {c_out});
  Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {n, c_out, ho, wo});
  tx.upload(x);
  tw.upload(wt);
  tbias.upload(bias);
  phx_conv_transpose2d_params p = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  p.stride[0] = p.stride[1] = uint32_t(stride);
  p.padding[0] = p.padding[1] = uint32_t(pad_top);
  p.padding[2] = p.padding[3] = uint32_t(pad_left);
  p.output_padding[0] = p.output_padding[1] = uint32_t(out_pad);
  p.dilation[0] = p.dilation[1] = uint32_t(dil);
  p.groups = uint32_t(groups);
  ASSERT_EQ(run(stream, PHX_OP_CONV_TRANSPOSE2D, &p, {tx.get(), tw.get(), tbias.get()}, out.get()),
            PHX_STATUS_OK)
      << phx_last_error();

  // The conv2d's padding before each dimension: dilation (K - 1) - padding (negative for
  // the columns: cropped). K in the flipped weight's order (c, i, j).
  const int64_t top = dil * (kh - 1) - pad_top, left = dil * (kw - 1) - pad_left;
  const int64_t patch = cig * kh * kw;
  std::vector<float> want(size_t(n * c_out * ho * wo));
  for (int64_t img = 0; img < n; ++img)
    for (int64_t co = 0; co < c_out; ++co)
      for (int64_t oh = 0; oh < ho; ++oh)
        for (int64_t ow = 0; ow < wo; ++ow) {
          const int64_t grp = co / cog, o = co % cog;
          auto x_at = [&](int64_t kk) {
            const int64_t ci = kk / (kh * kw), i = kk / kw % kh, j = kk % kw;
            const int64_t sh = oh - top + i * dil, sw = ow - left + j * dil;  // spread input
            if (sh < 0 || sw < 0 || sh % stride != 0 || sw % stride != 0) return 0.0f;
            const int64_t ih = sh / stride, iw = sw / stride;
            if (ih >= h || iw >= w) return 0.0f;
            return round_bf16(x[size_t(((img * c_in + grp * cig + ci) * h + ih) * w + iw)]);
          };
          auto w_at = [&](int64_t kk) {
            const int64_t ci = kk / (kh * kw), i = kh - 1 - kk / kw % kh, j = kw - 1 - kk % kw;
            return round_bf16(wt[size_t((((grp * cig + ci) * cog + o) * kh + i) * kw + j)]);
          };
          want[size_t(((img * c_out + co) * ho + oh) * wo + ow)] =
              mxu_dot(patch, 128, x_at, w_at) + bias[size_t(co)];
        }
  expect_bit_identical(out.download<float>(want.size()), want, "conv_transpose2d");
  phx_stream_destroy(stream);
}

// With precision=highest the f32 inputs are not rounded: the result is the f32 product
// (within 2 K u sum |a b|, u = 2^-24) and differs from the bf16 rule's.
TEST(TpuSim, HighestPrecisionKeepsF32Inputs) {
  Sim sim("precision=highest");
  EXPECT_EQ(property(sim.context(), sim.device(), "matmul_precision"), "f32");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
  const int64_t m = 8, k = 200, n = 8;
  const auto a = random_values(size_t(m * k), 9), b = random_values(size_t(k * n), 10);
  Tensor ta(sim.context(), sim.device(), PHX_DTYPE_F32, {m, k});
  Tensor tb(sim.context(), sim.device(), PHX_DTYPE_F32, {k, n});
  Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {m, n});
  ta.upload(a);
  tb.upload(b);
  ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta.get(), tb.get()}, out.get()), PHX_STATUS_OK);
  const auto got = out.download<float>(size_t(m * n));
  size_t differs_from_bf16 = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0, magnitude = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double p = double(a[size_t(i * k + kk)]) * b[size_t(kk * n + j)];
        exact += p;
        magnitude += std::abs(p);
      }
      const float g = got[size_t(i * n + j)];
      EXPECT_NEAR(g, exact, 2.0 * k * 0x1p-24 * magnitude);
      const float rule = mxu_dot(
          k, 128, [&](int64_t kk) { return round_bf16(a[size_t(i * k + kk)]); },
          [&](int64_t kk) { return round_bf16(b[size_t(kk * n + j)]); });
      differs_from_bf16 += bits(g) != bits(rule);
    }
  EXPECT_GT(differs_from_bf16, size_t(m * n / 2));
  phx_stream_destroy(stream);
}

// One [1 x 2] . [2 x 1] matmul per case, f32 in and out, under subnormals=flush (the
// default) and subnormals=keep. FLT_MIN = 2^-126 and every value here are exact in bf16,
// so the bf16 rounding changes none of them and the expected results are exact.
TEST(TpuSim, SubnormalsAreFlushedByDefaultAndKeptOnRequest) {
  const float tiny = 0x1p-130f;  // subnormal in f32 and in bf16
  struct Case {
    const char* what;
    float a0, a1, b0, b1, flushed, kept;
  };
  const Case cases[] = {
      // a subnormal input: flushed it contributes nothing; kept, 2^-130 * 2^10 = 2^-120
      {"subnormal input", tiny, 0.0f, 0x1p10f, 0.0f, 0.0f, 0x1p-120f},
      // normal inputs whose sum is subnormal: 2^-125 - 1.5 * 2^-126 = 2^-127
      {"subnormal result", 0x1p-125f, 0x1p-126f, 1.0f, -1.5f, 0.0f, 0x1p-127f},
      // a negative subnormal result is flushed to -0
      {"negative subnormal result", -0x1p-125f, 0x1p-126f, 1.0f, 1.5f, -0.0f, -0x1p-127f},
  };
  for (const char* mode : {"subnormals=flush", "", "subnormals=keep"}) {
    const bool keep = std::string(mode) == "subnormals=keep";
    Sim sim(mode);
    EXPECT_EQ(property(sim.context(), sim.device(), "subnormals"), keep ? "keep" : "flush");
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
    Tensor ta(sim.context(), sim.device(), PHX_DTYPE_F32, {1, 2});
    Tensor tb(sim.context(), sim.device(), PHX_DTYPE_F32, {2, 1});
    Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {1, 1});
    Tensor ta_bf16(sim.context(), sim.device(), PHX_DTYPE_BF16, {1, 2});
    Tensor tb_bf16(sim.context(), sim.device(), PHX_DTYPE_BF16, {2, 1});
    Tensor out_bf16(sim.context(), sim.device(), PHX_DTYPE_BF16, {1, 1});
    for (const Case& c : cases) {
      ta.upload(std::vector<float>{c.a0, c.a1});
      tb.upload(std::vector<float>{c.b0, c.b1});
      const float want = keep ? c.kept : c.flushed;
      ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta.get(), tb.get()}, out.get()),
                PHX_STATUS_OK);
      const float got = out.download<float>(1)[0];
      EXPECT_EQ(bits(got), bits(want)) << mode << ", " << c.what << ": " << got;
      // bf16 in and out: the output rounded from the f32 sums as the GEMM stores them.
      ta_bf16.upload(std::vector<uint16_t>{to_bf16(c.a0), to_bf16(c.a1)});
      tb_bf16.upload(std::vector<uint16_t>{to_bf16(c.b0), to_bf16(c.b1)});
      ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta_bf16.get(), tb_bf16.get()}, out_bf16.get()),
                PHX_STATUS_OK);
      EXPECT_EQ(out_bf16.download<uint16_t>(1)[0], to_bf16(want)) << mode << ", " << c.what;
    }
    // A normal sum plus a bias that leaves a subnormal: flushed after the epilogue.
    Tensor bias(sim.context(), sim.device(), PHX_DTYPE_F32, {1});
    ta.upload(std::vector<float>{0x1p-125f, 0.0f});
    tb.upload(std::vector<float>{1.0f, 0.0f});
    bias.upload(std::vector<float>{-1.5f * 0x1p-126f});
    ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta.get(), tb.get(), bias.get()}, out.get()),
              PHX_STATUS_OK);
    EXPECT_EQ(out.download<float>(1)[0], keep ? 0x1p-127f : 0.0f) << mode << ", bias";
    phx_stream_destroy(stream);
  }
}

// conv2d's MXU path flushes as matmul's does: a 1x1 kernel on one subnormal pixel.
TEST(TpuSim, Conv2dFlushesSubnormals) {
  for (const bool keep : {false, true}) {
    Sim sim(keep ? "subnormals=keep" : "");
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
    Tensor x(sim.context(), sim.device(), PHX_DTYPE_F32, {1, 1, 1, 1});
    Tensor w(sim.context(), sim.device(), PHX_DTYPE_F32, {1, 1, 1, 1});
    Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {1, 1, 1, 1});
    x.upload(std::vector<float>{0x1p-130f});
    w.upload(std::vector<float>{0x1p10f});
    phx_conv2d_params p = PHX_CONV2D_PARAMS_INIT;
    ASSERT_EQ(run(stream, PHX_OP_CONV2D, &p, {x.get(), w.get()}, out.get()), PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(out.download<float>(1)[0], keep ? 0x1p-120f : 0.0f);
    phx_stream_destroy(stream);
  }
}

// The bound on |result - the float64 product| for f32 inputs, in units of sum_k |a b|:
//   default: each input rounded to bf16 (relative 2^-8, 8-bit significand), so a product
//            is off by up to 2 * 2^-8 + 2^-16; the f32 sums add K * 2^-24.
//   high:    a = hi + lo + r with |r| <= 2^-16 |a| (lo rounded to bf16), and the lo.lo
//            term left out: about 3 * 2^-16 per product; three passes of K f32 sums
//            and two additions of passes: (K + 3) * 2^-24.
//   highest: f32 products (2^-24) and K f32 sums.
// Each doubled for the second-order terms.
double precision_bound(const std::string& precision, int64_t k) {
  if (precision == "default") return 2 * (0x1p-7 + 0x1p-16 + double(k) * 0x1p-24);
  if (precision == "high") return 2 * (3 * 0x1p-16 + double(k + 3) * 0x1p-24);
  return 2 * double(k + 1) * 0x1p-24;
}

// f32 matmul under each precision against the float64 product, with the passes each
// takes in the profile record and the modelled cycles growing with them.
TEST(TpuSim, EachPrecisionIsWithinItsBoundOfTheFloat64Product) {
  const int64_t m = 8, k = 1000, n = 8;
  const auto a = random_values(size_t(m * k), 11), b = random_values(size_t(k * n), 12);
  std::map<std::string, double> worst;  // the largest error, in units of sum |a b|
  std::map<std::string, double> cycles;
  struct Precision {
    const char* name;
    double passes;
  };
  for (const auto& [precision, passes] :
       {Precision{"default", 1}, Precision{"high", 3}, Precision{"highest", 6}}) {
    Sim sim((std::string("timing=scalesim,precision=") + precision).c_str(), PHX_CONTEXT_PROFILE);
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
    Tensor ta(sim.context(), sim.device(), PHX_DTYPE_F32, {m, k});
    Tensor tb(sim.context(), sim.device(), PHX_DTYPE_F32, {k, n});
    Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {m, n});
    ta.upload(a);
    tb.upload(b);
    ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta.get(), tb.get()}, out.get()), PHX_STATUS_OK);
    const auto got = out.download<float>(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0, magnitude = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = double(a[size_t(i * k + kk)]) * b[size_t(kk * n + j)];
          exact += p;
          magnitude += std::abs(p);
        }
        const double error = std::abs(got[size_t(i * n + j)] - exact) / magnitude;
        worst[precision] = std::max(worst[precision], error);
      }
    EXPECT_LE(worst[precision], precision_bound(precision, k)) << precision;
    EXPECT_EQ(metric(stream, 0, "mxu_passes"), passes) << precision;
    // 8 x 1000 x 8 on 4 MXUs of 128 x 128, scalesim: folds = 8 * passes, f = 2 * passes,
    // T = 8: f * (2R + C + T - 2) - 1 = 2 * passes * 390 - 1.
    EXPECT_EQ(metric(stream, 0, "mxu_cycles"), 2 * passes * 390 - 1) << precision;
    phx_stream_destroy(stream);
  }
  // Each precision is really more accurate than the one below it.
  EXPECT_GT(worst["default"], precision_bound("high", k));
  EXPECT_GT(worst["default"], 16 * worst["high"]);
  EXPECT_GE(worst["high"], worst["highest"]);
}

// precision=high (bf16x3) computed by its rule, written plainly: hi = bf16(x),
// lo = bf16(x - hi); three passes summed by the MXU rule; (hi.lo + lo.hi) + hi.hi.
TEST(TpuSim, HighPrecisionIsBitIdenticalToTheRule) {
  Sim sim("precision=high");
  EXPECT_EQ(property(sim.context(), sim.device(), "precision"), "high");
  EXPECT_EQ(property(sim.context(), sim.device(), "matmul_precision"), "bf16x3");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
  const int64_t m = 20, k = 300, n = 30;
  const auto a = random_values(size_t(m * k), 13), b = random_values(size_t(k * n), 14);
  Tensor ta(sim.context(), sim.device(), PHX_DTYPE_F32, {m, k});
  Tensor tb(sim.context(), sim.device(), PHX_DTYPE_F32, {k, n});
  Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {m, n});
  ta.upload(a);
  tb.upload(b);
  ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta.get(), tb.get()}, out.get()), PHX_STATUS_OK);
  auto hi = [](float x) { return round_bf16(x); };
  auto lo = [](float x) { return round_bf16(x - round_bf16(x)); };
  std::vector<float> want(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      auto pass = [&](auto part_a, auto part_b) {
        return mxu_dot(
            k, 128, [&](int64_t kk) { return part_a(a[size_t(i * k + kk)]); },
            [&](int64_t kk) { return part_b(b[size_t(kk * n + j)]); });
      };
      want[size_t(i * n + j)] = (pass(hi, lo) + pass(lo, hi)) + pass(hi, hi);
    }
  expect_bit_identical(out.download<float>(want.size()), want, "high");
  phx_stream_destroy(stream);
}

// conv2d takes the precision's passes too: NHWC, K = 3 * 3 * 40 = 360, against float64.
TEST(TpuSim, Conv2dHighPrecisionIsWithinItsBound) {
  const int64_t h = 6, w = 6, c_in = 40, c_out = 4, kh = 3, kw = 3, ho = 4, wo = 4;
  const int64_t patch = kh * kw * c_in;
  const auto x = random_values(size_t(h * w * c_in), 15);
  const auto wt = random_values(size_t(c_out * patch), 16);
  for (const char* precision : {"high", "default"}) {
    Sim sim((std::string("precision=") + precision).c_str());
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
    Tensor tx(sim.context(), sim.device(), PHX_DTYPE_F32, {1, h, w, c_in});
    Tensor tw(sim.context(), sim.device(), PHX_DTYPE_F32, {c_out, kh, kw, c_in});
    Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {1, ho, wo, c_out});
    tx.upload(x);
    tw.upload(wt);
    phx_conv2d_params p = PHX_CONV2D_PARAMS_INIT;
    p.layout = PHX_LAYOUT_NHWC;
    ASSERT_EQ(run(stream, PHX_OP_CONV2D, &p, {tx.get(), tw.get()}, out.get()), PHX_STATUS_OK)
        << phx_last_error();
    const auto got = out.download<float>(size_t(ho * wo * c_out));
    double worst = 0;
    for (int64_t oh = 0; oh < ho; ++oh)
      for (int64_t ow = 0; ow < wo; ++ow)
        for (int64_t co = 0; co < c_out; ++co) {
          double exact = 0, magnitude = 0;
          for (int64_t i = 0; i < kh; ++i)
            for (int64_t j = 0; j < kw; ++j)
              for (int64_t c = 0; c < c_in; ++c) {
                const double v = double(x[size_t(((oh + i) * w + ow + j) * c_in + c)]) *
                                 wt[size_t(((co * kh + i) * kw + j) * c_in + c)];
                exact += v;
                magnitude += std::abs(v);
              }
          const double error =
              std::abs(got[size_t((oh * wo + ow) * c_out + co)] - exact) / magnitude;
          worst = std::max(worst, error);
        }
    if (std::string(precision) == "high") {
      EXPECT_LE(worst, precision_bound("high", patch));
    } else {  // the default's bf16 inputs are outside high's bound
      EXPECT_LE(worst, precision_bound("default", patch));
      EXPECT_GT(worst, precision_bound("high", patch));
    }
    phx_stream_destroy(stream);
  }
}

bool supports(const Sim& sim, phx_op_id op, phx_dtype dtype) {
  int supported = -1;
  EXPECT_EQ(phx_device_supports(sim.context(), sim.device(), op, dtype, &supported), PHX_STATUS_OK);
  return supported == 1;
}

// attention on bf16 only (f32 or f16 inputs would enter the MXU rounded to bf16); rope
// and the ops of API 0.1 on f16 too, widened to f32 as XLA does.
TEST(TpuSim, ClaimsBf16AttentionAndF16) {
  Sim sim("");
  EXPECT_TRUE(supports(sim, PHX_OP_ATTENTION, PHX_DTYPE_BF16));
  EXPECT_FALSE(supports(sim, PHX_OP_ATTENTION, PHX_DTYPE_F32));
  EXPECT_FALSE(supports(sim, PHX_OP_ATTENTION, PHX_DTYPE_F16));
  for (phx_dtype dtype : {PHX_DTYPE_F32, PHX_DTYPE_BF16, PHX_DTYPE_F16}) {
    EXPECT_TRUE(supports(sim, PHX_OP_ROPE, dtype)) << dtype;
    EXPECT_TRUE(supports(sim, PHX_OP_MATMUL, dtype)) << dtype;
    EXPECT_TRUE(supports(sim, PHX_OP_CONV2D, dtype)) << dtype;
    EXPECT_TRUE(supports(sim, PHX_OP_SOFTMAX, dtype)) << dtype;
  }
  EXPECT_FALSE(supports(sim, PHX_OP_QMATMUL, PHX_DTYPE_I8));
}

// The claims follow the op table: every op on every float dtype the table defines it for
// (attention on bf16 only, above), and the layout ops and max_pool on i8 as the table
// does, but the quantized ones, which have no timing model here, on no dtype.
TEST(TpuSim, ClaimsEveryOpOfTheTableButQuantized) {
  Sim sim("");
  const std::set<phx_op_id> unclaimed = {PHX_OP_QUANTIZE, PHX_OP_DEQUANTIZE, PHX_OP_QMATMUL,
                                         PHX_OP_QCONV2D, PHX_OP_DYNAMIC_QUANTIZE};
  for (int id = PHX_OP_INVALID + 1; id < PHX_OP_COUNT; ++id) {
    const auto op = static_cast<phx_op_id>(id);
    if (op == PHX_OP_ATTENTION) continue;
    for (phx_dtype dtype : {PHX_DTYPE_F32, PHX_DTYPE_BF16, PHX_DTYPE_F16, PHX_DTYPE_I8}) {
      phx_op_info info = PHX_OP_INFO_INIT;
      ASSERT_EQ(phx_op_info_get(op, &info), PHX_STATUS_OK);
      const bool defined = (info.dtype_mask & PHX_DTYPE_BIT(dtype)) != 0;
      // i8 before the layout ops: the plugin answers as the host kernels do, which this
      // test does not restate; from reshape on, the table's i8 is theirs.
      if (dtype == PHX_DTYPE_I8 && !unclaimed.count(op) && id < PHX_OP_RESHAPE) continue;
      EXPECT_EQ(supports(sim, op, dtype), !unclaimed.count(op) && defined)
          << phx_op_name(op) << " on " << phx_dtype_name(dtype);
    }
  }
}

// f16 bits of x, for values exact in f16 (normal, or zero).
uint16_t f16_bits(float x) {
  if (x == 0.0f) return 0;
  int exponent = 0;
  const float mantissa = std::frexp(std::abs(x), &exponent);  // in [0.5, 1)
  const auto fraction = static_cast<uint16_t>((mantissa * 2.0f - 1.0f) * 1024.0f);
  return static_cast<uint16_t>((x < 0 ? 0x8000u : 0u) | uint32_t(exponent - 1 + 15) << 10 |
                               fraction);
}

// f16 matmul: the inputs widened to f32 (exactly), then as f32 inputs under the
// precision: rounded to bf16 by default, kept by highest. Values n / 256 with |n| < 2048
// are exact in f16 (11 bits) and mostly not in bf16 (8 bits); an f32 output shows the
// sums as they are. Bit-identical to the rule.
TEST(TpuSim, F16MatmulIsWidenedThenFollowsThePrecision) {
  const int64_t m = 9, k = 300, n = 7;
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> numerator(-2047, 2047);
  std::vector<float> a(size_t(m * k)), b(size_t(k * n));
  for (float& x : a) x = float(numerator(rng)) / 256.0f;
  for (float& x : b) x = float(numerator(rng)) / 256.0f;
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  for (size_t i = 0; i < a.size(); ++i) a16[i] = f16_bits(a[i]);
  for (size_t i = 0; i < b.size(); ++i) b16[i] = f16_bits(b[i]);
  for (const char* precision : {"default", "highest"}) {
    const bool rounded = std::string(precision) == "default";
    Sim sim((std::string("precision=") + precision).c_str());
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
    Tensor ta(sim.context(), sim.device(), PHX_DTYPE_F16, {m, k});
    Tensor tb(sim.context(), sim.device(), PHX_DTYPE_F16, {k, n});
    Tensor out(sim.context(), sim.device(), PHX_DTYPE_F32, {m, n});
    ta.upload(a16);
    tb.upload(b16);
    ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {ta.get(), tb.get()}, out.get()), PHX_STATUS_OK)
        << phx_last_error();
    auto entering = [&](float x) { return rounded ? round_bf16(x) : x; };
    std::vector<float> want(size_t(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        want[size_t(i * n + j)] = mxu_dot(
            k, 128, [&](int64_t kk) { return entering(a[size_t(i * k + kk)]); },
            [&](int64_t kk) { return entering(b[size_t(kk * n + j)]); });
    expect_bit_identical(out.download<float>(want.size()), want, precision);
    phx_stream_destroy(stream);
  }
}

// bf16 attention against float64, with the causal mask and grouped heads (B 1, H 2,
// Hkv 1, Sq 5, Skv 9, D 16, Dv 8), and its cost in the profile record. The bound is
// the op suite's for an f32 computation (u = 2^-24, p_j the exact weights,
// A = |scale| max_j sum_d |q_d k_jd|): ((3 Skv + 32) + 4 (D + 2) A) u sum_j p_j |v_j|,
// plus the bf16 output's rounding, 2^-8 |ref|.
TEST(TpuSim, Bf16AttentionIsWithinItsBoundAndCostsTwoMxuProducts) {
  Sim sim("timing=scalesim", PHX_CONTEXT_PROFILE);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
  const int64_t heads = 2, sq = 5, skv = 9, d = 16, dv = 8;
  std::vector<uint16_t> q(size_t(heads * sq * d)), k(size_t(skv * d)), v(size_t(skv * dv));
  const auto rq = random_values(q.size(), 18), rk = random_values(k.size(), 19),
             rv = random_values(v.size(), 20);
  for (size_t i = 0; i < q.size(); ++i) q[i] = to_bf16(rq[i]);
  for (size_t i = 0; i < k.size(); ++i) k[i] = to_bf16(rk[i]);
  for (size_t i = 0; i < v.size(); ++i) v[i] = to_bf16(rv[i]);
  Tensor tq(sim.context(), sim.device(), PHX_DTYPE_BF16, {1, heads, sq, d});
  Tensor tk(sim.context(), sim.device(), PHX_DTYPE_BF16, {1, 1, skv, d});
  Tensor tv(sim.context(), sim.device(), PHX_DTYPE_BF16, {1, 1, skv, dv});
  Tensor out(sim.context(), sim.device(), PHX_DTYPE_BF16, {1, heads, sq, dv});
  tq.upload(q);
  tk.upload(k);
  tv.upload(v);
  phx_attention_params params = PHX_ATTENTION_PARAMS_INIT;
  params.mask = PHX_ATTENTION_MASK_CAUSAL;
  ASSERT_EQ(run(stream, PHX_OP_ATTENTION, &params, {tq.get(), tk.get(), tv.get()}, out.get()),
            PHX_STATUS_OK)
      << phx_last_error();
  const auto got = out.download<uint16_t>(size_t(heads * sq * dv));
  const double scale = 1.0 / std::sqrt(double(d));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < sq; ++i) {
      const int64_t seen = i + skv - sq + 1;  // causal: keys 0 .. i + Skv - Sq
      std::vector<double> p(static_cast<size_t>(seen));
      double top = -INFINITY, magnitude = 0, total = 0;
      for (int64_t j = 0; j < seen; ++j) {
        double dot = 0, abs = 0;
        for (int64_t c = 0; c < d; ++c) {
          const double x = double(bf16_value(q[size_t((h * sq + i) * d + c)])) *
                           bf16_value(k[size_t(j * d + c)]);
          dot += x;
          abs += std::abs(x);
        }
        p[size_t(j)] = scale * dot;
        top = std::max(top, scale * dot);
        magnitude = std::max(magnitude, scale * abs);
      }
      for (double& w : p) total += w = std::exp(w - top);
      for (int64_t col = 0; col < dv; ++col) {
        double ref = 0, weighted = 0;
        for (int64_t j = 0; j < seen; ++j) {
          const double value = bf16_value(v[size_t(j * dv + col)]);
          ref += p[size_t(j)] / total * value;
          weighted += p[size_t(j)] / total * std::abs(value);
        }
        const double bound =
            (3.0 * double(skv) + 32 + 4.0 * double(d + 2) * magnitude) * 0x1p-24 * weighted +
            0x1p-8 * std::abs(ref);
        EXPECT_NEAR(bf16_value(got[size_t((h * sq + i) * dv + col)]), ref, bound)
            << "head " << h << " query " << i << " column " << col;
      }
    }
  // scores: M 5, N 9, K 16, batch 2: folds 2, f = 1 on 4 MXUs: 256 + 128 + 5 - 2 - 1 = 386;
  // values: M 5, N 8, K 9, batch 2: the same, 386. softmax: ceil(2 * 5 * 9 scores * 18
  // ops / 1024 lanes) = ceil(1620 / 1024) = 2 cycles.
  EXPECT_EQ(metric(stream, 0, "mxu_passes"), 1.0);
  EXPECT_EQ(metric(stream, 0, "mxu_folds"), 4.0);
  EXPECT_EQ(metric(stream, 0, "mxu_cycles"), 2 * 386.0);
  EXPECT_EQ(metric(stream, 0, "vector_cycles"), 2.0);
  phx_stream_destroy(stream);
}

TEST(TpuSim, HbmCapacityIsEnforced) {
  Sim sim("hbm_bytes=1048576");
  const size_t d = sim.device();
  {
    Tensor fits(sim.context(), d, PHX_DTYPE_F32, {131072});  // 512 KiB
    ASSERT_EQ(fits.status(), PHX_STATUS_OK);
    Tensor too_big(sim.context(), d, PHX_DTYPE_F32, {196608});  // 768 KiB
    EXPECT_EQ(too_big.status(), PHX_STATUS_OUT_OF_MEMORY);
    const std::string message = phx_last_error();
    EXPECT_NE(message.find("requested 786432 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("524288 bytes in use"), std::string::npos) << message;
    EXPECT_NE(message.find("capacity 1048576 bytes"), std::string::npos) << message;
  }
  // The 512 KiB block is cached now; the 768 KiB tensor needs its room: it is evicted.
  phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
  ASSERT_EQ(phx_memory_stats_get(sim.context(), d, &stats), PHX_STATUS_OK);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  EXPECT_EQ(stats.bytes_cached, 524288u);
  EXPECT_EQ(stats.peak_bytes_in_use, 524288u);
  EXPECT_EQ(stats.limit_bytes, 1048576u);
  {
    Tensor now_fits(sim.context(), d, PHX_DTYPE_F32, {196608});
    EXPECT_EQ(now_fits.status(), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(sim.stats(d)["memory_evictions"], 1.0);
    // Allocations are counted at the device's 512-byte granule: 1 byte takes 512.
    Tensor one_byte(sim.context(), d, PHX_DTYPE_BF16, {1});
    ASSERT_EQ(phx_memory_stats_get(sim.context(), d, &stats), PHX_STATUS_OK);
    EXPECT_EQ(stats.bytes_in_use, 786432u + 512u);
    EXPECT_EQ(stats.allocation_count, 2u);
  }
  ASSERT_EQ(phx_memory_release_cached(sim.context(), d), PHX_STATUS_OK);
  ASSERT_EQ(phx_memory_stats_get(sim.context(), d, &stats), PHX_STATUS_OK);
  EXPECT_EQ(stats.bytes_cached, 0u);

  ASSERT_EQ(phx_memory_set_limit(sim.context(), d, 262144), PHX_STATUS_OK);
  Tensor over_limit(sim.context(), d, PHX_DTYPE_F32, {131072});
  EXPECT_EQ(over_limit.status(), PHX_STATUS_OUT_OF_MEMORY);
  ASSERT_EQ(phx_memory_set_limit(sim.context(), d, 0), PHX_STATUS_OK);
  Tensor back(sim.context(), d, PHX_DTYPE_F32, {131072});
  EXPECT_EQ(back.status(), PHX_STATUS_OK);
}

// HBM is per chip: a pod of two 1 MiB chips does not hold a 1.5 MiB tensor, and what one
// chip refuses or holds leaves the other's memory untouched.
TEST(TpuSim, EachChipOfAPodHasItsOwnHbm) {
  Sim sim("chips=2,hbm_bytes=1048576");
  ASSERT_EQ(sim.devices().size(), 2u);
  const size_t first = sim.devices()[0], second = sim.devices()[1];
  Tensor pod_sized(sim.context(), first, PHX_DTYPE_F32, {393216});  // 1.5 MiB
  EXPECT_EQ(pod_sized.status(), PHX_STATUS_OUT_OF_MEMORY);
  Tensor fits(sim.context(), first, PHX_DTYPE_F32, {196608});  // 768 KiB
  ASSERT_EQ(fits.status(), PHX_STATUS_OK);
  Tensor past_first(sim.context(), first, PHX_DTYPE_F32, {131072});  // 512 KiB more
  EXPECT_EQ(past_first.status(), PHX_STATUS_OUT_OF_MEMORY);
  const std::string message = phx_last_error();
  EXPECT_NE(message.find("device " + std::to_string(first) + " (tpu-sim): out of HBM"),
            std::string::npos)
      << message;
  phx_memory_stats other = PHX_MEMORY_STATS_INIT;
  ASSERT_EQ(phx_memory_stats_get(sim.context(), second, &other), PHX_STATUS_OK);
  EXPECT_EQ(other.bytes_in_use, 0u);
  EXPECT_EQ(other.peak_bytes_in_use, 0u);
  EXPECT_EQ(other.allocation_count, 0u);
  Tensor on_second(sim.context(), second, PHX_DTYPE_F32, {131072});
  EXPECT_EQ(on_second.status(), PHX_STATUS_OK) << phx_last_error();
}

// Every chip reports the pod's topology and links, and its own coordinates (x fastest).
TEST(TpuSim, ChipsReportTheirPlaceInThePod) {
  Sim sim("generation=v5p,chips=8,topology=2x2x2");
  ASSERT_EQ(sim.devices().size(), 8u);
  const char* coordinates[] = {"0,0,0", "1,0,0", "0,1,0", "1,1,0",
                               "0,0,1", "1,0,1", "0,1,1", "1,1,1"};
  for (size_t i = 0; i < 8; ++i) {
    const size_t d = sim.devices()[i];
    EXPECT_EQ(property(sim.context(), d, "topology"), "2x2x2");
    EXPECT_EQ(property(sim.context(), d, "pod_coordinates"), coordinates[i]);
    EXPECT_EQ(property(sim.context(), d, "ici_links"), "6");
    EXPECT_EQ(property(sim.context(), d, "ici_link_bandwidth"), "100 GB/s per link each way");
    EXPECT_EQ(property(sim.context(), d, "ici_latency"), "1000 ns per hop");
  }
  Sim one("generation=v6e");
  EXPECT_EQ(property(one.context(), one.device(), "topology"), "1x1");
  EXPECT_EQ(property(one.context(), one.device(), "ici_links"), "4");
}

void expect_same_memory_stats(const phx_memory_stats& got, const phx_memory_stats& want) {
  EXPECT_EQ(got.bytes_in_use, want.bytes_in_use);
  EXPECT_EQ(got.peak_bytes_in_use, want.peak_bytes_in_use);
  EXPECT_EQ(got.bytes_cached, want.bytes_cached);
  EXPECT_EQ(got.limit_bytes, want.limit_bytes);
  EXPECT_EQ(got.allocation_count, want.allocation_count);
}

// A refused allocation changes nothing, whichever memory is short: the kept blocks stay
// (no eviction), and the memory statistics, bytes in use and the compile cache's
// figures are as before. The message says which memory is short.
TEST(TpuSim, ARefusedAllocationChangesNothing) {
  Sim sim("hbm_bytes=1125899906842624");  // 2^50 bytes: the HBM never refuses first below
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  {
    Tensor x(sim.context(), d, PHX_DTYPE_F32, {262144}),
        y(sim.context(), d, PHX_DTYPE_F32, {262144});
    ASSERT_EQ(run(stream, PHX_OP_RELU, nullptr, {x.get()}, y.get()), PHX_STATUS_OK);
  }  // two 1 MiB blocks kept for reuse, one program in the compile cache
  // With the limit at 2^49 bytes a 2^49-byte tensor needs the kept blocks' room, and
  // no host can back it (x86-64 user space is 2^47 bytes): the host refuses.
  ASSERT_EQ(phx_memory_set_limit(sim.context(), d, uint64_t{1} << 49), PHX_STATUS_OK);
  phx_memory_stats before = PHX_MEMORY_STATS_INIT;
  ASSERT_EQ(phx_memory_stats_get(sim.context(), d, &before), PHX_STATUS_OK);
  ASSERT_EQ(before.bytes_cached, 2u << 20);
  const auto stats_before = sim.stats(d);

  Tensor host_short(sim.context(), d, PHX_DTYPE_F32, {int64_t{1} << 47});
  EXPECT_EQ(host_short.status(), PHX_STATUS_OUT_OF_MEMORY);
  std::string message = phx_last_error();
  EXPECT_NE(message.find("out of host memory backing the simulated HBM"), std::string::npos)
      << message;
  EXPECT_NE(message.find("the HBM has room"), std::string::npos) << message;
  phx_memory_stats after = PHX_MEMORY_STATS_INIT;
  ASSERT_EQ(phx_memory_stats_get(sim.context(), d, &after), PHX_STATUS_OK);
  expect_same_memory_stats(after, before);
  EXPECT_EQ(sim.stats(d), stats_before);  // memory_evictions and the compile cache's

  Tensor device_short(sim.context(), d, PHX_DTYPE_F32, {(int64_t{1} << 47) + 1});
  EXPECT_EQ(device_short.status(), PHX_STATUS_OUT_OF_MEMORY);
  message = phx_last_error();
  EXPECT_NE(message.find("device " + std::to_string(d) + " (tpu-sim): out of HBM:"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("host"), std::string::npos) << message;
  ASSERT_EQ(phx_memory_stats_get(sim.context(), d, &after), PHX_STATUS_OK);
  expect_same_memory_stats(after, before);
  EXPECT_EQ(sim.stats(d), stats_before);
  phx_stream_destroy(stream);
}

// Resident set size of this process, in bytes.
uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096;
}

TEST(TpuSim, AHugeChipReservesNoHostMemory) {
  // A first context loads every plugin and the libraries they pull in (a Vulkan driver
  // costs tens of MiB), so that only what the second one adds is measured.
  Sim loaded("generation=v5p,chips=4");
  const uint64_t before = resident_bytes();
  Sim sim("generation=v5p,chips=4,hbm_bytes=1125899906842624");  // 4 chips of 2^50 bytes
  ASSERT_EQ(sim.devices().size(), 4u);
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  phx_device_get(sim.context(), sim.device(), &info);
  EXPECT_EQ(info.memory_total_bytes, uint64_t{1} << 50);
  Tensor t(sim.context(), sim.device(), PHX_DTYPE_F32, {1024});
  EXPECT_EQ(t.status(), PHX_STATUS_OK);
  // Another context's thread pools cost a few MiB; 4 PiB would not fit.
  EXPECT_LT(resident_bytes() - before, uint64_t{64} << 20);
}

TEST(TpuSim, BadConfigurationRejectsThePluginNamingTheKey) {
  expect_rejected(Sim("generation=v9"), "'generation'");
  expect_rejected(Sim("hbm_bytes=-1"), "'hbm_bytes'");
  expect_rejected(Sim("memory_fraction=2"), "'memory_fraction'");
  expect_rejected(Sim("chips=2,turbo=1"), "'turbo'");
  expect_rejected(Sim("chips=4,topology=2x4"), "'topology'");
}

TEST(TpuSim, BadConfigFileRejectsThePlugin) {
  phx_test::expect_config_file_read(kTpuSim, "generation", "v4", "chips");
}

TEST(TpuSim, CompileCacheMissesHitsAndEvicts) {
  Sim sim("compile_cache_size=1", PHX_CONTEXT_PROFILE);
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  Tensor a(sim.context(), d, PHX_DTYPE_F32, {4, 4}), b(sim.context(), d, PHX_DTYPE_F32, {4, 4});
  Tensor c(sim.context(), d, PHX_DTYPE_F32, {4, 4});
  Tensor x(sim.context(), d, PHX_DTYPE_F32, {8}), y(sim.context(), d, PHX_DTYPE_F32, {8});
  a.upload(std::vector<float>(16, 1.0f));
  b.upload(std::vector<float>(16, 1.0f));
  x.upload(std::vector<float>(8, 1.0f));
  // matmul (miss), matmul (hit), relu (miss: evicts matmul), matmul (miss: evicts relu).
  ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {a.get(), b.get()}, c.get()), PHX_STATUS_OK);
  ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {a.get(), b.get()}, c.get()), PHX_STATUS_OK);
  ASSERT_EQ(run(stream, PHX_OP_RELU, nullptr, {x.get()}, y.get()), PHX_STATUS_OK);
  ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {a.get(), b.get()}, c.get()), PHX_STATUS_OK);
  const double hits[] = {0, 1, 0, 0};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(metric(stream, i, "compile_cache_hit"), hits[i]) << i;
    if (hits[i] == 1.0) {
      EXPECT_EQ(metric(stream, i, "compile_time_ns"), 0.0) << i;
    } else {
      EXPECT_GT(metric(stream, i, "compile_time_ns"), 0.0) << i;
    }
  }
  auto stats = sim.stats(d);
  EXPECT_EQ(stats["compile_cache_hits"], 1.0);
  EXPECT_EQ(stats["compile_cache_misses"], 3.0);
  EXPECT_EQ(stats["compile_cache_evictions"], 2.0);
  EXPECT_EQ(stats["compile_time_ns_total"], metric(stream, 0, "compile_time_ns") +
                                                metric(stream, 2, "compile_time_ns") +
                                                metric(stream, 3, "compile_time_ns"));
  phx_stream_destroy(stream);
}

TEST(TpuSim, ProfileRecordsAndStatisticsCarryTheModel) {
  Sim sim("generation=v5e,timing=scalesim", PHX_CONTEXT_PROFILE);
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  // matmul bf16 [200 x 300] . [300 x 100] -> f32 on 4 x 128x128: folds = 3 * 1 = 3,
  // f = ceil(3 / 4) = 1, T = 200; scalesim 1 * (256 + 128 + 200 - 2) - 1 = 581 cycles,
  // at 197e3 / (2 * 4 * 128^2) = 1.503 GHz: 386.6 ns. Mapping efficiency 300 * 100 /
  // (384 * 128). HBM: 200*300*2 + 300*100*2 + 200*100*4 = 260000 bytes / 819 GB/s =
  // 317.5 ns: compute-bound.
  Tensor a(sim.context(), d, PHX_DTYPE_BF16, {200, 300}),
      b(sim.context(), d, PHX_DTYPE_BF16, {300, 100});
  Tensor c(sim.context(), d, PHX_DTYPE_F32, {200, 100});
  a.upload(std::vector<uint16_t>(200 * 300, 0x3f80));  // 1.0
  b.upload(std::vector<uint16_t>(300 * 100, 0x3f80));
  ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {a.get(), b.get()}, c.get()), PHX_STATUS_OK);
  EXPECT_EQ(c.download<float>(1)[0], 300.0f);
  // add f32 [200 x 100] + itself: vector unit, ceil(20000 / 1024) = 20 cycles.
  Tensor e(sim.context(), d, PHX_DTYPE_F32, {200, 100});
  ASSERT_EQ(run(stream, PHX_OP_ADD, nullptr, {c.get(), c.get()}, e.get()), PHX_STATUS_OK);

  EXPECT_EQ(metric(stream, 0, "mxu_cycles"), 581.0);
  EXPECT_EQ(metric(stream, 0, "mxu_folds"), 3.0);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "mapping_efficiency"), 30000.0 / (384.0 * 128.0));
  EXPECT_DOUBLE_EQ(metric(stream, 0, "padding_waste"), 1.0 - 30000.0 / (384.0 * 128.0));
  EXPECT_DOUBLE_EQ(metric(stream, 0, "mxu_utilization"), 6e6 / (581.0 * 128 * 128 * 4));
  const double mm_bytes = 200 * 300 * 2 + 300 * 100 * 2 + 200 * 100 * 4;
  EXPECT_EQ(metric(stream, 0, "hbm_bytes"), mm_bytes);
  const double clock_ghz = 197e3 / (2.0 * 4 * 128 * 128);
  EXPECT_EQ(metric(stream, 0, "memory_bound"), 0.0);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "compute_time_ns"), 581.0 / clock_ghz);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "hbm_time_ns"), mm_bytes / 819.0);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "estimated_time_ns"), 581.0 / clock_ghz + 1000.0);
  EXPECT_EQ(metric(stream, 1, "mxu_cycles"), 0.0);
  EXPECT_EQ(metric(stream, 1, "vector_cycles"), 20.0);
  EXPECT_EQ(metric(stream, 1, "hbm_bytes"), 3 * 80000.0);
  EXPECT_EQ(metric(stream, 1, "memory_bound"), 1.0);  // 240 KB for 20 cycles

  auto stats = sim.stats(d);
  EXPECT_EQ(stats["ops"], 2.0);
  EXPECT_EQ(stats["modelled_cycles_total"], 601.0);
  EXPECT_EQ(stats["mxu_cycles_total"], 581.0);
  EXPECT_EQ(stats["hbm_bytes_total"], mm_bytes + 240000.0);
  EXPECT_DOUBLE_EQ(stats["modelled_time_ns_total"],
                   metric(stream, 0, "estimated_time_ns") + metric(stream, 1, "estimated_time_ns"));
  EXPECT_EQ(stats["compile_cache_misses"], 2.0);
  phx_stream_destroy(stream);
}

}  // namespace
