// The ops every profile gained for running models (docs/npu-sim.md, "Op sets" and "f16
// compute") through the C API: integer sub and mul, transpose, cast and the reductions,
// and f16 float ops, each run on the NPU itself (no fallback) against exact or float64
// references, with the timing model's figures in its profile record.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "f16_values.h"
#include "npu_sim_test_context.h"

namespace {

using npu_sim_test::f16_value;
using npu_sim_test::from_f16;
using npu_sim_test::round_f16;
using npu_sim_test::run;
using npu_sim_test::Sim;
using npu_sim_test::Stream;
using npu_sim_test::to_f16;
using phx_test::metric;
using phx_test::Tensor;

constexpr uint32_t kFlags = PHX_CONTEXT_FALLBACK_CPU | PHX_CONTEXT_PROFILE;

// a - b and a * b as the op rules define them for integers: the low bits of the exact
// result (two's complement wrap-around).
template <class T>
void expect_sub_and_mul_wrap(const char* settings, phx_dtype dtype, const std::vector<T>& a,
                             const std::vector<T>& b) {
  Sim sim(settings, kFlags);
  const size_t d = sim.device();
  Stream stream(sim.context(), d);
  const auto n = static_cast<int64_t>(a.size());
  Tensor ta(sim.context(), d, dtype, {n}), tb(sim.context(), d, dtype, {n});
  Tensor diff(sim.context(), d, dtype, {n}), prod(sim.context(), d, dtype, {n});
  ta.upload(a);
  tb.upload(b);
  ASSERT_EQ(run(stream.get(), PHX_OP_SUB, nullptr, {ta.get(), tb.get()}, {diff.get()}),
            PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(run(stream.get(), PHX_OP_MUL, nullptr, {ta.get(), tb.get()}, {prod.get()}),
            PHX_STATUS_OK)
      << phx_last_error();
  const auto got_diff = diff.download<T>(a.size()), got_prod = prod.download<T>(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(got_diff[i], static_cast<T>(int64_t{a[i]} - b[i])) << i;
    EXPECT_EQ(got_prod[i], static_cast<T>(int64_t{a[i]} * b[i])) << i;
  }
  // Both on the NPU's vector unit: n elements of sizeof(T) lanes each, two inputs read
  // and one output written.
  const uint64_t lanes = std::string(settings).find("edge") != std::string::npos ? 128 : 64;
  EXPECT_EQ(metric(stream.get(), 0, "cycles"), std::ceil(double(n * sizeof(T)) / double(lanes)));
  EXPECT_EQ(metric(stream.get(), 1, "dram_bytes"), 3.0 * double(n * sizeof(T)));
  auto stats = sim.stats(d);
  EXPECT_EQ(stats["ops"], 2.0);
  EXPECT_EQ(stats["fallback_ops"], 0.0);
}

TEST(NpuSimOps, IntegerSubAndMulWrapOnTheNpu) {
  expect_sub_and_mul_wrap<int8_t>("profile=mobile", PHX_DTYPE_I8,
                                  {100, -100, 127, -128, 5, 0, 64, -3, 11, -128},
                                  {-100, 100, -1, 1, 7, -128, 2, 3, 12, -1});
  expect_sub_and_mul_wrap<int16_t>("profile=edge", PHX_DTYPE_I16,
                                   {30000, -30000, 32767, -32768, 300, 0, 256, -3},
                                   {-30000, 30000, -1, 1, 200, -32768, 256, 3});
}

TEST(NpuSimOps, TransposeCastAndReductionsRunOnTheNpu) {
  Sim sim("profile=mobile", kFlags);
  const size_t d = sim.device();
  Stream stream(sim.context(), d);
  // transpose f32 [3, 4] -> [4, 3]: values moved, never converted.
  const std::vector<float> x = {0.1f, -2, 3e30f, -0.0f, 5, 6, 7, 8, 9, 10, 11, 1e-40f};
  Tensor tx(sim.context(), d, PHX_DTYPE_F32, {3, 4}), txt(sim.context(), d, PHX_DTYPE_F32, {4, 3});
  tx.upload(x);
  ASSERT_EQ(run(stream.get(), PHX_OP_TRANSPOSE, nullptr, {tx.get()}, {txt.get()}), PHX_STATUS_OK)
      << phx_last_error();
  const auto transposed = txt.download<float>(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(transposed[j * 3 + i], x[i * 4 + j]) << i << "," << j;
  // f32 -> f16 rounds to nearest even (65520 and past overflow); f16 -> f32 is exact.
  const std::vector<float> wide = {1.0f, 0.1f, 65504, 65520, -2.5f, 1e-8f, 3e-5f, -1e5f};
  Tensor tw(sim.context(), d, PHX_DTYPE_F32, {8}), th(sim.context(), d, PHX_DTYPE_F16, {8});
  Tensor back(sim.context(), d, PHX_DTYPE_F32, {8});
  tw.upload(wide);
  ASSERT_EQ(run(stream.get(), PHX_OP_CAST, nullptr, {tw.get()}, {th.get()}), PHX_STATUS_OK);
  ASSERT_EQ(run(stream.get(), PHX_OP_CAST, nullptr, {th.get()}, {back.get()}), PHX_STATUS_OK);
  const auto halves = th.download<uint16_t>(8);
  const auto widened = back.download<float>(8);
  for (size_t i = 0; i < wide.size(); ++i) {
    EXPECT_EQ(f16_value(halves[i]), round_f16(wide[i])) << i;
    EXPECT_EQ(double(widened[i]), round_f16(wide[i])) << i;
  }
  // reduce_sum i8 over the last axis wraps like integer add: 100 + 100 + 100 - 1 = 299 ->
  // 43; reduce_max f16 over everything gives a rank-0 result.
  Tensor ti(sim.context(), d, PHX_DTYPE_I8, {2, 4}), sums(sim.context(), d, PHX_DTYPE_I8, {2});
  ti.upload(std::vector<int8_t>{100, 100, 100, -1, -128, -128, 1, 2});
  phx_reduce_params last = PHX_REDUCE_PARAMS_INIT;
  last.axes_mask = 1u << 1;
  ASSERT_EQ(run(stream.get(), PHX_OP_REDUCE_SUM, &last, {ti.get()}, {sums.get()}), PHX_STATUS_OK);
  EXPECT_EQ(sums.download<int8_t>(2), (std::vector<int8_t>{43, 3}));
  Tensor top(sim.context(), d, PHX_DTYPE_F16, {});
  ASSERT_EQ(run(stream.get(), PHX_OP_REDUCE_MAX, nullptr, {th.get()}, {top.get()}), PHX_STATUS_OK);
  EXPECT_EQ(f16_value(top.download<uint16_t>(1)[0]), INFINITY);  // 65520 rounded up

  // The transpose streams 12 f32 elements (4 lanes each) and moves 2 x 48 bytes; the
  // f32 -> f16 cast reads 32 bytes and writes 16.
  EXPECT_EQ(metric(stream.get(), 0, "cycles"), 1.0);
  EXPECT_EQ(metric(stream.get(), 0, "dram_bytes"), 96.0);
  EXPECT_EQ(metric(stream.get(), 1, "dram_bytes"), 48.0);
  auto stats = sim.stats(d);
  EXPECT_EQ(stats["ops"], 5.0);
  EXPECT_EQ(stats["fallback_ops"], 0.0);
}

std::vector<double> uniform(size_t n, double lo, double hi, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = round_f16(dist(rng));  // f16 values, exact in both
  return v;
}

// f16 in, f16 out: products and sums in f32, one rounding to f16 per output.
TEST(NpuSimOps, F16MatmulAndSoftmaxRoundOnceToF16) {
  Sim sim("profile=mobile", kFlags);
  const size_t d = sim.device();
  Stream stream(sim.context(), d);
  const int64_t m = 32, k = 64, n = 16;
  const auto a = uniform(size_t(m * k), -1, 1, 1), b = uniform(size_t(k * n), -1, 1, 2);
  Tensor ta(sim.context(), d, PHX_DTYPE_F16, {m, k}), tb(sim.context(), d, PHX_DTYPE_F16, {k, n});
  Tensor tc(sim.context(), d, PHX_DTYPE_F16, {m, n});
  ta.upload(to_f16(a));
  tb.upload(to_f16(b));
  ASSERT_EQ(run(stream.get(), PHX_OP_MATMUL, nullptr, {ta.get(), tb.get()}, {tc.get()}),
            PHX_STATUS_OK)
      << phx_last_error();
  const auto c = from_f16(tc.download<uint16_t>(size_t(m * n)));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, abs_sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        ref += a[size_t(i * k + p)] * b[size_t(p * n + j)];
        abs_sum += std::fabs(a[size_t(i * k + p)] * b[size_t(p * n + j)]);
      }
      // The f32 accumulation of K products (2 K 2^-24 S), then one f16 rounding:
      // 2^-11 |ref| + 2^-25 (half the smallest f16 subnormal).
      const double tol = 2.0 * double(k) * 0x1p-24 * abs_sum + 0x1p-11 * std::fabs(ref) + 0x1p-25;
      EXPECT_NEAR(c[size_t(i * n + j)], ref, tol) << i << "," << j;
    }
  }
  const int64_t rows = 8, cols = 128;
  const auto x = uniform(size_t(rows * cols), -8, 8, 3);
  Tensor tx(sim.context(), d, PHX_DTYPE_F16, {rows, cols}),
      ty(sim.context(), d, PHX_DTYPE_F16, {rows, cols});
  tx.upload(to_f16(x));
  ASSERT_EQ(run(stream.get(), PHX_OP_SOFTMAX, nullptr, {tx.get()}, {ty.get()}), PHX_STATUS_OK);
  const auto y = from_f16(ty.download<uint16_t>(size_t(rows * cols)));
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, x[size_t(r * cols + j)]);
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(x[size_t(r * cols + j)] - mx);
    for (int64_t j = 0; j < cols; ++j) {
      const double ref = std::exp(x[size_t(r * cols + j)] - mx) / sum;
      // f32 softmax over n: (n + 32) 2^-24 |ref| + 1e-7; then the f16 rounding.
      const double tol = (cols + 32) * 0x1p-24 * ref + 1e-7 + 0x1p-11 * ref + 0x1p-25;
      EXPECT_NEAR(y[size_t(r * cols + j)], ref, tol) << r << "," << j;
    }
  }
  // matmul: 32 * 16 * 64 = 32768 MACs at the mobile f16 rate of 4096 per cycle; DRAM
  // 4096 + 2048 + 1024 bytes. softmax: 1024 elements * 16 operations * 2 lanes / 64.
  EXPECT_EQ(metric(stream.get(), 0, "macs"), 32768.0);
  EXPECT_EQ(metric(stream.get(), 0, "cycles"), 8.0);
  EXPECT_EQ(metric(stream.get(), 0, "dram_bytes"), 7168.0);
  EXPECT_EQ(metric(stream.get(), 1, "cycles"), 512.0);
  EXPECT_EQ(sim.stats(d)["fallback_ops"], 0.0);
}

}  // namespace
