// Tests of the direct convolution (ops_conv2d_direct.cpp) on every instruction set this
// machine runs, against float64 references.
//
// Tolerance: each output is the bias plus K = Cig*KH*KW products summed in f32 in order,
// each product rounded or fused into its addition: at most K + 1 roundings of partial sums
// bounded by |bias| + sum |w x|, so |y - ref| <= (K + 2) eps (|bias| + sum |w x|), with
// eps = 2^-24 (the unit roundoff of f32). relu is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gemm_dispatch.h"
#include "ops_conv2d_direct.h"

namespace phx::kernels::ops {
namespace {

constexpr double kEps = 0x1p-24;

struct Case {
  int64_t n, c_in, h, w, c_out, kh, kw, stride_h, stride_w;
  int64_t pad[4];  // top, bottom, left, right
  int64_t dil_h, dil_w, groups;
  bool bias;
  phx_activation act;
};

Conv2dGeometry geometry(const Case& c) {
  Conv2dGeometry g;
  g.batch = c.n;
  g.c_in = c.c_in;
  g.h = c.h;
  g.w = c.w;
  g.c_out = c.c_out;
  g.kh = c.kh;
  g.kw = c.kw;
  g.h_out = (c.h + c.pad[0] + c.pad[1] - c.dil_h * (c.kh - 1) - 1) / c.stride_h + 1;
  g.w_out = (c.w + c.pad[2] + c.pad[3] - c.dil_w * (c.kw - 1) - 1) / c.stride_w + 1;
  g.groups = c.groups;
  g.c_in_group = c.c_in / c.groups;
  g.c_out_group = c.c_out / c.groups;
  g.stride_h = c.stride_h;
  g.stride_w = c.stride_w;
  g.pad_top = c.pad[0];
  g.pad_left = c.pad[2];
  g.dil_h = c.dil_h;
  g.dil_w = c.dil_w;
  return g;
}

std::vector<float> random_values(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

void check(const Case& c, const char* isa, ThreadPool& pool) {
  const Conv2dGeometry g = geometry(c);
  ASSERT_TRUE(conv2d_direct_fits(g, PHX_DTYPE_F32));
  std::mt19937 rng(7);
  const std::vector<float> x = random_values(c.n * c.c_in * c.h * c.w, rng),
                           w = random_values(c.c_out * g.patch(), rng),
                           b = random_values(c.c_out, rng);
  // 64 values past the output, which the kernel must leave as they are.
  const size_t count = static_cast<size_t>(c.n * c.c_out * g.pixels_out());
  std::vector<float> y(count + 64, NAN);
  std::fill(y.begin() + count, y.end(), 12345.0f);
  conv2d_direct(g, x.data(), w.data(), c.bias ? b.data() : nullptr, c.act, y.data(), pool, isa);
  for (size_t i = count; i < y.size(); ++i)
    ASSERT_EQ(y[i], 12345.0f) << isa << ": written past the output at " << i - count;
  int failures = 0;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.c_out; ++o)
      for (int64_t i = 0; i < g.h_out; ++i)
        for (int64_t j = 0; j < g.w_out && failures < 5; ++j) {
          double sum = c.bias ? b[o] : 0.0, abs = std::fabs(sum);
          const int64_t grp = o / g.c_out_group;
          for (int64_t ch = 0; ch < g.c_in_group; ++ch)
            for (int64_t a = 0; a < c.kh; ++a)
              for (int64_t e = 0; e < c.kw; ++e) {
                const int64_t ih = i * c.stride_h - c.pad[0] + a * c.dil_h;
                const int64_t iw = j * c.stride_w - c.pad[2] + e * c.dil_w;
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
                const double v =
                    double(x[((n * c.c_in + grp * g.c_in_group + ch) * c.h + ih) * c.w + iw]) *
                    w[((o * g.c_in_group + ch) * c.kh + a) * c.kw + e];
                sum += v;
                abs += std::fabs(v);
              }
          const double want = c.act == PHX_ACTIVATION_RELU ? std::max(sum, 0.0) : sum;
          const double got = y[((n * c.c_out + o) * g.h_out + i) * g.w_out + j];
          const double tolerance = double(g.patch() + 2) * kEps * abs;
          if (!(std::fabs(got - want) <= tolerance)) {
            ++failures;
            ADD_FAILURE() << isa << ": image " << n << " channel " << o << " (" << i << ", " << j
                          << ") is " << got << ", want " << want << " (tolerance " << tolerance
                          << ")";
          }
        }
}

TEST(Conv2dDirect, EveryInstructionSetAgainstFloat64) {
  ThreadPool pool(3);
  const std::vector<Case> cases = {
      // n, c_in, h, w, c_out, kh, kw, stride_h, stride_w, pad (t b l r), dil_h, dil_w, groups,
      // bias, act
      {2, 3, 64, 64, 16, 3, 3, 1, 1, {1, 1, 1, 1}, 1, 1, 1, true, PHX_ACTIVATION_RELU},  // the
                                                                                         // CNN's
      // Rows of 38 (tiles and a tail on every path), 6 channels (a block and 2 alone),
      // stride 2 down, dilation, asymmetric padding.
      {1, 2, 9, 37, 6, 3, 3, 2, 1, {2, 1, 0, 3}, 2, 1, 1, false, PHX_ACTIVATION_NONE},
      {2, 5, 13, 10, 5, 3, 3, 1, 1, {1, 1, 1, 1}, 1, 1, 5, true, PHX_ACTIVATION_RELU},  // depthwise
      {1,
       32,
       20,
       20,
       32,
       3,
       3,
       1,
       1,
       {1, 1, 1, 1},
       1,
       1,
       32,
       true,
       PHX_ACTIVATION_NONE},                                                           // threaded
      {1, 2, 5, 4, 3, 2, 2, 1, 1, {3, 3, 3, 3}, 1, 1, 1, true, PHX_ACTIVATION_NONE},   // rows of
                                                                                       // zeros
      {3, 4, 7, 11, 6, 3, 3, 1, 1, {1, 1, 1, 1}, 1, 1, 2, true, PHX_ACTIVATION_NONE},  // groups
      {1, 1, 6, 70, 4, 1, 5, 1, 1, {0, 0, 2, 2}, 1, 1, 1, true, PHX_ACTIVATION_RELU},
      {1, 8, 6, 9, 4, 2, 2, 1, 1, {0, 0, 0, 0}, 1, 1, 1, false, PHX_ACTIVATION_NONE},  // K = 32
      // Stride 2 along the width, as MobileNet's and EfficientNet's downsampling layers:
      // depthwise 3x3 and 5x5, an RGB stem, odd widths and a dilation.
      {1, 16, 15, 15, 16, 3, 3, 2, 2, {1, 1, 1, 1}, 1, 1, 16, true, PHX_ACTIVATION_RELU},
      {2, 6, 14, 37, 6, 5, 5, 2, 2, {2, 2, 2, 2}, 1, 1, 6, true, PHX_ACTIVATION_NONE},
      {1, 3, 33, 65, 8, 3, 3, 2, 2, {0, 1, 0, 1}, 1, 1, 1, true, PHX_ACTIVATION_RELU},
      {1, 4, 9, 40, 4, 3, 3, 1, 3, {1, 1, 2, 0}, 1, 2, 4, false, PHX_ACTIVATION_NONE},
      // Depthwise and grouped at any patch: ConvNeXt's 7x7 on narrow rows (a plane at a
      // time) and on wide ones, RegNet's groups of 8 channels (K = 72, blocks of 4 and a
      // remainder of 2 per group), and a narrow plane at stride 2 (rows at a time).
      {1, 6, 7, 7, 6, 7, 7, 1, 1, {3, 3, 3, 3}, 1, 1, 6, true, PHX_ACTIVATION_NONE},
      {2, 3, 14, 13, 3, 7, 7, 1, 1, {3, 3, 3, 3}, 1, 1, 3, true, PHX_ACTIVATION_RELU},
      {1, 3, 9, 41, 3, 7, 7, 1, 1, {3, 3, 3, 3}, 1, 1, 3, false, PHX_ACTIVATION_NONE},
      {1, 16, 12, 12, 20, 3, 3, 1, 1, {1, 1, 1, 1}, 1, 1, 2, true, PHX_ACTIVATION_RELU},
      {1, 16, 11, 11, 12, 3, 3, 2, 2, {1, 1, 1, 1}, 1, 1, 2, true, PHX_ACTIVATION_NONE},
      {1, 5, 14, 14, 5, 3, 3, 2, 2, {0, 1, 0, 1}, 1, 1, 5, false, PHX_ACTIVATION_NONE},
      // Long patches of ungrouped convolutions: few output channels (K = 180, 6 of them:
      // a block and 2 alone), rows of 7 (a plane at a time, K = 360), and a stem of 3
      // channels of 7x7 at stride 2 (K = 147).
      {1, 20, 9, 11, 6, 3, 3, 1, 1, {1, 1, 1, 1}, 1, 1, 1, true, PHX_ACTIVATION_RELU},
      {2, 40, 7, 7, 40, 3, 3, 1, 1, {1, 1, 1, 1}, 1, 1, 1, true, PHX_ACTIVATION_NONE},
      {1, 3, 40, 38, 64, 7, 7, 2, 2, {3, 3, 3, 3}, 1, 1, 1, true, PHX_ACTIVATION_RELU},
      // Strides along the height, a plane at a time (rows split into phases): MobileNetV3's
      // depthwise 5x5 at stride 2 of 14x14, a stride of 2 down only, a stride of 3 with a
      // dilation, and a block of 4 channels over an odd height.
      {1, 8, 14, 14, 8, 5, 5, 2, 2, {2, 2, 2, 2}, 1, 1, 8, true, PHX_ACTIVATION_RELU},
      {1, 3, 15, 9, 3, 3, 3, 2, 1, {1, 1, 1, 1}, 1, 1, 3, false, PHX_ACTIVATION_NONE},
      {2, 4, 17, 10, 4, 3, 3, 3, 2, {2, 0, 1, 1}, 2, 1, 4, true, PHX_ACTIVATION_NONE},
      {1, 6, 13, 11, 8, 3, 3, 2, 2, {1, 1, 1, 1}, 1, 1, 1, true, PHX_ACTIVATION_RELU},
      // Depthwise rows padded per band (bands of 8 rows and a shorter last one): two
      // output channels per input channel at stride 2, a 5x5 over a batch of 2, and a
      // dilation with padding only below and on the left.
      {1, 4, 50, 60, 8, 3, 3, 2, 2, {1, 1, 1, 1}, 1, 1, 4, true, PHX_ACTIVATION_RELU},
      {2, 3, 40, 30, 3, 5, 5, 1, 1, {2, 2, 2, 2}, 1, 1, 3, false, PHX_ACTIVATION_NONE},
      {1, 2, 19, 33, 2, 3, 3, 2, 1, {0, 2, 1, 0}, 2, 1, 2, true, PHX_ACTIVATION_NONE},
      // Planes of rows of 1 to 3 pixels, whose copy out must stop at the output's end.
      {1, 4, 5, 3, 4, 3, 3, 1, 1, {1, 1, 1, 1}, 1, 1, 4, true, PHX_ACTIVATION_NONE},
      {1, 2, 6, 1, 3, 3, 1, 1, 1, {1, 1, 0, 0}, 1, 1, 1, false, PHX_ACTIVATION_NONE},
      {2, 3, 4, 4, 5, 3, 3, 1, 1, {0, 0, 0, 0}, 1, 1, 1, true, PHX_ACTIVATION_RELU},
  };
  for (const char* isa : gemm_supported_isas())
    for (const Case& c : cases) check(c, isa, pool);
}

TEST(Conv2dDirect, TakesWhatTheGemmFitsPoorlyOfF32NchwOnly) {
  const Case base = {1, 8, 6, 9, 4, 2, 2, 1, 1, {0, 0, 0, 0}, 1, 1, 1, false, PHX_ACTIVATION_NONE};
  Conv2dGeometry g = geometry(base);
  EXPECT_TRUE(conv2d_direct_fits(g, PHX_DTYPE_F32));
  EXPECT_FALSE(conv2d_direct_fits(g, PHX_DTYPE_F16));
  g.nhwc = true;
  EXPECT_FALSE(conv2d_direct_fits(g, PHX_DTYPE_F32));
  g = geometry(base);
  g.stride_w = 2;
  EXPECT_TRUE(conv2d_direct_fits(g, PHX_DTYPE_F32)) << "stride 2 along the width";
  const Case pointwise = {
      1, 8, 6, 9, 4, 1, 1, 1, 1, {0, 0, 0, 0}, 1, 1, 1, false, PHX_ACTIVATION_NONE};
  EXPECT_FALSE(conv2d_direct_fits(geometry(pointwise), PHX_DTYPE_F32));
  // K = 36 (9 channels of 2x2), 64 output channels, rows of 19: the gemm's.
  const Case wide = {
      1, 9, 6, 20, 64, 2, 2, 1, 1, {0, 0, 0, 0}, 1, 1, 1, false, PHX_ACTIVATION_NONE};
  EXPECT_FALSE(conv2d_direct_fits(geometry(wide), PHX_DTYPE_F32)) << "K = 36";
  Case c = wide;
  c.c_in = 18;
  c.c_out = 128;
  c.groups = 2;
  EXPECT_TRUE(conv2d_direct_fits(geometry(c), PHX_DTYPE_F32)) << "groups of 9 channels";
  c.c_in = 34;
  EXPECT_FALSE(conv2d_direct_fits(geometry(c), PHX_DTYPE_F32)) << "groups of 17 channels";
  c = wide;
  c.c_out = 32;
  EXPECT_TRUE(conv2d_direct_fits(geometry(c), PHX_DTYPE_F32)) << "32 output channels";
  c = wide;
  c.w = 9;
  EXPECT_TRUE(conv2d_direct_fits(geometry(c), PHX_DTYPE_F32)) << "rows of 8";
  c.stride_w = 2;
  EXPECT_FALSE(conv2d_direct_fits(geometry(c), PHX_DTYPE_F32)) << "rows of 4 at stride 2";
  c = wide;
  c.c_in = 4;
  c.kh = c.kw = 7;
  c.h = c.w = 30;
  EXPECT_TRUE(conv2d_direct_fits(geometry(c), PHX_DTYPE_F32)) << "a stem of 4 channels";
}

}  // namespace
}  // namespace phx::kernels::ops
