// npu-sim's compiled graphs through the plugin's entries (graph_harness.h): which f32
// nodes graph_claim takes with calibration ranges and how (int8, int16 where the int8
// step is too coarse for the values, f16), graph_estimate, graph_compile and the
// executables' results against float64 within bounds derived from the quantization
// steps and f16's rounding, their node reports and statistics, and hostile ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "f16_values.h"
#include "graph_harness.h"

namespace {

using npu_sim_test::Compiled;
using npu_sim_test::HandGraph;
using npu_sim_test::kF16HalfMinSubnormal;
using npu_sim_test::kF16UnitRoundoff;
using npu_sim_test::kF32UnitRoundoff;
using npu_sim_test::PluginUnderTest;
using npu_sim_test::range_of;
using npu_sim_test::read_f32;

constexpr auto kInput = PHX_PLUGIN_VALUE_INPUT;
constexpr auto kOutput = PHX_PLUGIN_VALUE_OUTPUT;
constexpr auto kIntermediate = PHX_PLUGIN_VALUE_INTERMEDIATE;

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<uint8_t> claims(PluginUnderTest& p, const phx_plugin_graph& g) {
  std::vector<uint8_t> claimed(g.node_count, 2);
  EXPECT_EQ(p.api().graph_claim(p.plugin(), 0, &g, claimed.data()), PHX_STATUS_OK);
  return claimed;
}

std::vector<uint64_t> estimates(PluginUnderTest& p, const phx_plugin_graph& g) {
  std::vector<uint64_t> times(g.node_count, 0);
  EXPECT_EQ(p.api().graph_estimate(p.plugin(), 0, &g, times.data()), PHX_STATUS_OK);
  return times;
}

// y = relu(x w + b): x [M, K] an input, w [K, N] and b [N] fixed constants, y [M, N] the
// output; the ranges are those of the data (y's of the float64 result).
struct Dense {
  static constexpr int64_t M = 16, K = 64, N = 32;
  HandGraph graph;
  std::vector<float> x, w, b;
  std::vector<double> y;  // float64
  uint32_t x_value = 0, y_value = 0;
  phx_matmul_params params = {sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_RELU};

  Dense(PluginUnderTest& p, uint32_t seed)
      : x(gaussian(M * K, seed)),
        w(gaussian(K * N, seed + 1, 1.0f / 8)),  // sigma 1 / sqrt(K): y of unit size
        b(gaussian(N, seed + 2, 0.5f)),
        y(M * N) {
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double sum = b[n];
        for (int64_t k = 0; k < K; ++k) sum += double(x[m * K + k]) * w[k * N + n];
        y[m * N + n] = std::max(sum, 0.0);
      }
    x_value = graph.add_value(kInput, {M, K}, range_of(x));
    const uint32_t w_value = graph.add_constant(p, {K, N}, w);
    const uint32_t b_value = graph.add_constant(p, {N}, b);
    y_value = graph.add_value(kOutput, {M, N}, range_of(std::vector<float>(y.begin(), y.end())));
    graph.add_node(PHX_OP_MATMUL, &params, {x_value, w_value, b_value}, {y_value});
  }

  // Compiles and runs the graph; the output.
  std::vector<float> run(PluginUnderTest& p, Compiled& compiled) const {
    const std::vector<phx_plugin_tensor> values = graph.bind(p, {{x_value, x}});
    EXPECT_EQ(compiled.run(values), PHX_STATUS_OK) << p.error();
    return read_f32(p, values[y_value]);
  }
};

// The steps the quantizer takes (docs/quantization.md): a range widened to 0, int8
// asymmetric over it, int16 symmetric.
double activation_step(const phx_plugin_value_range& r, bool int16) {
  const double lo = std::min(0.0, double(r.min)), hi = std::max(0.0, double(r.max));
  return int16 ? double(float(std::max(-lo, hi) / 32767.0)) : double(float((hi - lo) / 255.0));
}

struct ErrorCheck {
  size_t beyond_bound = 0;  // elements past their worst-case bound
  double rms_error = 0;     // over all elements
  double rms_expected = 0;  // the rounding noise's expected rms
};

// The bound of one element y = relu(p), p = sum_k x_k w_k + b, of a quantized product.
// The NPU computes p^ = sum_k x^_k w^_k + b^ exactly in integers, where x^ is x rounded
// to its step s_x (|x - x^| <= s_x / 2; x's range is its own, so nothing is clipped; a
// convolution's padding is the zero point, exactly 0), w^ is w rounded to its channel's
// step s_w = max|w_n| / 127 (|w - w^| <= s_w / 2) and b^ is b rounded to s_x s_w
// (<= s_x s_w / 2). With x w - x^ w^ = (x - x^) w + x^ (w - w^):
//   |p - p^| <= sum_k (s_x / 2 |w_k| + (|x_k| + s_x / 2) s_w / 2) + s_x s_w / 2.
// relu is 1-Lipschitz. The result is rounded to y's step s_y: s_y / 2, and up to s_y / 2
// more at the top of the range, where the zero point's rounding moved the grid (or where
// p^ passes y's max and is clipped towards it); its dequantization rounds once in f32.
//   |y - got| <= |p - p^| + s_y + 2^-23 |y|.
// The worst case adds every rounding error with one sign; they are independent and
// uniform, so their rms is sqrt(sum_k (w_k^2 s_x^2 + x_k^2 s_w^2) / 12 + s_y^2 / 12):
// the measured rms error over all elements must be within 1.5 times that (a few hundred
// elements estimate an rms within a few percent).
class ElementBound {
 public:
  ElementBound(double s_x, double s_w, double s_y)
      : s_x_(s_x), s_w_(s_w), worst_(s_x * s_w / 2 + s_y), variance_(s_y * s_y / 12) {}
  void add_term(double x, double w) {
    worst_ += s_x_ / 2 * std::fabs(w) + (std::fabs(x) + s_x_ / 2) * s_w_ / 2;
    variance_ += (w * w * s_x_ * s_x_ + x * x * s_w_ * s_w_) / 12;
  }
  double worst(double y) const { return worst_ + 2 * kF32UnitRoundoff * std::fabs(y); }
  double variance() const { return variance_; }

 private:
  double s_x_, s_w_, worst_, variance_;
};

// The symmetric int8 step of a channel's weights: count of them from w[first], stride apart.
double weight_step(const std::vector<float>& w, size_t first, size_t count, size_t stride) {
  double largest = 0;
  for (size_t i = 0; i < count; ++i)
    largest = std::max(largest, std::fabs(double(w[first + i * stride])));
  return double(float(largest / 127.0));
}

ErrorCheck compare(const std::vector<float>& got, const std::vector<double>& y,
                   const std::vector<ElementBound>& bounds) {
  ErrorCheck check;
  double squares = 0, expected = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double error = std::fabs(double(got[i]) - y[i]);
    if (!(error <= bounds[i].worst(y[i]))) ++check.beyond_bound;
    squares += error * error;
    expected += bounds[i].variance();
  }
  check.rms_error = std::sqrt(squares / double(y.size()));
  check.rms_expected = std::sqrt(expected / double(y.size()));
  return check;
}

ErrorCheck check_dense(const Dense& d, const std::vector<float>& got, bool int16) {
  const double s_x = activation_step(d.graph.graph().value_ranges[d.x_value], int16);
  const double s_y = activation_step(d.graph.graph().value_ranges[d.y_value], int16);
  std::vector<ElementBound> bounds;
  for (int64_t m = 0; m < Dense::M; ++m)
    for (int64_t n = 0; n < Dense::N; ++n) {
      ElementBound& bound = bounds.emplace_back(
          s_x, weight_step(d.w, size_t(n), size_t(Dense::K), size_t(Dense::N)), s_y);
      for (int64_t k = 0; k < Dense::K; ++k)
        bound.add_term(d.x[m * Dense::K + k], d.w[k * Dense::N + n]);
    }
  return compare(got, d.y, bounds);
}

// y = relu(conv2d(x, w) + b), NCHW, 3x3 with padding 1: x [1, C, H, W] an input, w
// [F, C, 3, 3] and b [F] fixed constants; the ranges are the data's.
struct Conv {
  static constexpr int64_t C = 4, H = 6, W = 6, F = 8;
  HandGraph graph;
  std::vector<float> x, w, b;
  std::vector<double> y;
  uint32_t x_value = 0, y_value = 0;
  phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;

  Conv(PluginUnderTest& p, uint32_t seed)
      : x(gaussian(C * H * W, seed)),
        w(gaussian(F * C * 9, seed + 1, 1.0f / 6)),  // sigma 1 / sqrt(C * 9)
        b(gaussian(F, seed + 2, 0.5f)) {
    params.padding[0] = params.padding[1] = params.padding[2] = params.padding[3] = 1;
    params.activation = PHX_ACTIVATION_RELU;
    y.resize(F * H * W);
    for (size_t i = 0; i < y.size(); ++i) y[i] = b[i / (H * W)];
    for_each_term([&](size_t out, double xv, double wv) { y[out] += xv * wv; });
    for (double& v : y) v = std::max(v, 0.0);
    x_value = graph.add_value(kInput, {1, C, H, W}, range_of(x));
    const uint32_t w_value = graph.add_constant(p, {F, C, 3, 3}, w);
    const uint32_t b_value = graph.add_constant(p, {F}, b);
    y_value =
        graph.add_value(kOutput, {1, F, H, W}, range_of(std::vector<float>(y.begin(), y.end())));
    graph.add_node(PHX_OP_CONV2D, &params, {x_value, w_value, b_value}, {y_value});
  }

  // Calls term(output index, x, w) for every product of the convolution inside the
  // image (padded taps are 0).
  template <class Term>
  void for_each_term(Term term) const {
    for (int64_t f = 0; f < F; ++f)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j)
          for (int64_t c = 0; c < C; ++c)
            for (int64_t u = 0; u < 3; ++u)
              for (int64_t v = 0; v < 3; ++v) {
                const int64_t r = i + u - 1, s = j + v - 1;
                if (r < 0 || r >= H || s < 0 || s >= W) continue;
                term(size_t((f * H + i) * W + j), x[(c * H + r) * W + s],
                     w[((f * C + c) * 3 + u) * 3 + v]);
              }
  }
};

ErrorCheck check_conv(const Conv& conv, const std::vector<float>& got, bool int16) {
  const double s_x = activation_step(conv.graph.graph().value_ranges[conv.x_value], int16);
  const double s_y = activation_step(conv.graph.graph().value_ranges[conv.y_value], int16);
  std::vector<ElementBound> bounds;
  for (int64_t f = 0; f < Conv::F; ++f) {
    const double s_w = weight_step(conv.w, size_t(f * Conv::C * 9), size_t(Conv::C * 9), 1);
    for (int64_t i = 0; i < Conv::H * Conv::W; ++i) bounds.emplace_back(s_x, s_w, s_y);
  }
  conv.for_each_term([&](size_t out, double xv, double wv) { bounds[out].add_term(xv, wv); });
  return compare(got, conv.y, bounds);
}

// ---- claims ------------------------------------------------------------------------------

// x -> n0 matmul(w, b, relu) -> n1 gelu -> n2 matmul(a constant that may change) ->
// n3 matmul(fixed w, gelu fused) -> n4 transpose, and with_softmax n5 softmax of values
// past f16's range.
struct Mixed {
  HandGraph graph;
  phx_matmul_params relu = {sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_RELU};
  phx_matmul_params gelu = {sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_GELU};
  phx_transpose_params transpose = {sizeof(phx_transpose_params), {1, 0, 2, 3, 4, 5, 6, 7}};
  phx_softmax_params softmax = {sizeof(phx_softmax_params), -1};
  uint32_t x = 0, out = 0;

  Mixed(PluginUnderTest& p, bool with_softmax) {
    const phx_plugin_value_range unit = {-3.0f, 3.0f, 1.0f}, positive = {0.0f, 3.0f, 0.8f};
    x = graph.add_value(kInput, {8, 16}, unit);
    const uint32_t w1 = graph.add_constant(p, {16, 32}, gaussian(16 * 32, 1, 0.25f));
    const uint32_t b1 = graph.add_constant(p, {32}, gaussian(32, 2));
    const uint32_t h = graph.add_value(kIntermediate, {8, 32}, positive);
    const uint32_t g = graph.add_value(kIntermediate, {8, 32}, positive);
    const uint32_t w2 = graph.add_constant(p, {32, 8}, gaussian(32 * 8, 3, 0.2f), false);
    const uint32_t z = graph.add_value(kIntermediate, {8, 8}, unit);
    const uint32_t w3 = graph.add_constant(p, {8, 8}, gaussian(8 * 8, 4, 0.3f));
    const uint32_t u = graph.add_value(kIntermediate, {8, 8}, unit);
    const uint32_t t =
        graph.add_value(with_softmax ? kIntermediate : kOutput, {8, 8}, {-1e5f, 1e5f, 10.0f});
    graph.add_node(PHX_OP_MATMUL, &relu, {x, w1, b1}, {h});
    graph.add_node(PHX_OP_GELU, nullptr, {h}, {g});
    graph.add_node(PHX_OP_MATMUL, nullptr, {g, w2}, {z});
    graph.add_node(PHX_OP_MATMUL, &gelu, {z, w3}, {u});
    graph.add_node(PHX_OP_TRANSPOSE, &transpose, {u}, {t});
    out = t;
    if (with_softmax) {
      out = graph.add_value(kOutput, {8, 8}, {0.0f, 1.0f, 0.3f});
      graph.add_node(PHX_OP_SOFTMAX, &softmax, {t}, {out});
    }
  }
};

TEST(NpuSimGraph, ClaimsQuantizedAndF16NodesOnlyWithCalibrationRanges) {
  PluginUnderTest p("profile=mobile");
  Mixed mixed(p, true);
  // n0 quantized, n1 to n3 in f16 (n2's weight may change, n3's gelu is no integer
  // epilogue), n4 runs f32 transposes natively (not claimed: op_supported says yes), n5's
  // input exceeds f16.
  EXPECT_EQ(claims(p, mixed.graph.graph()), (std::vector<uint8_t>{1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(claims(p, mixed.graph.graph(false)), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0}));

  const std::vector<uint64_t> times = estimates(p, mixed.graph.graph());
  for (size_t n = 0; n < 5; ++n) EXPECT_LT(times[n], UINT64_MAX) << n;
  EXPECT_EQ(times[5], UINT64_MAX);
  const std::vector<uint64_t> uncalibrated = estimates(p, mixed.graph.graph(false));
  EXPECT_EQ(uncalibrated[0], UINT64_MAX);
  EXPECT_LT(uncalibrated[4], UINT64_MAX);

  Compiled refused(p, mixed.graph.graph());
  EXPECT_EQ(refused.status(), PHX_STATUS_UNSUPPORTED);
  EXPECT_EQ(p.error(),
            "node 'n5' (softmax on f32): not quantized (only matmul and conv2d are quantized), "
            "not in f16 (value 'v9' exceeds f16's range ([-1e+05, 1e+05], rms 10))");
}

TEST(NpuSimGraph, ReportsEachNodesComputeDtypeAndTheExecutablesFigures) {
  PluginUnderTest p("profile=mobile");
  Mixed mixed(p, false);
  const phx_plugin_graph graph = mixed.graph.graph();
  Compiled compiled(p, graph);
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  const phx_dtype expected[5] = {PHX_DTYPE_I8, PHX_DTYPE_F16, PHX_DTYPE_F16, PHX_DTYPE_F16,
                                 PHX_DTYPE_F32};
  for (size_t n = 0; n < 5; ++n) EXPECT_EQ(compiled.compute_dtype(n), expected[n]) << n;
  phx_plugin_node_report report{sizeof(phx_plugin_node_report), PHX_DTYPE_INVALID};
  EXPECT_EQ(p.api().executable_node_report(p.plugin(), compiled.get(), 5, &report),
            PHX_STATUS_INVALID_ARGUMENT);

  std::map<std::string, double> stats = compiled.stats();
  EXPECT_EQ(stats["nodes"], 5);
  EXPECT_EQ(stats["native_nodes"], 1);
  EXPECT_EQ(stats["quantized_int8_nodes"], 1);
  EXPECT_EQ(stats["quantized_int16_nodes"], 0);
  EXPECT_EQ(stats["f16_nodes"], 3);
  EXPECT_EQ(stats["quantized_weight_bytes"], 16 * 32);
  // The run's modelled time is the sum of the nodes' estimates, which graph_estimate
  // rounds up to whole ns.
  double rounded_sum = 0;
  for (uint64_t t : estimates(p, graph)) rounded_sum += double(t);
  EXPECT_LE(stats["modelled_time_ns"], rounded_sum);
  EXPECT_GT(stats["modelled_time_ns"], rounded_sum - 5);

  // A run with profiling leaves each node's figures; the device counts its nodes.
  std::vector<phx_plugin_profile> profiles(5);
  std::vector<phx_plugin_profile*> pointers;
  for (phx_plugin_profile& profile : profiles) {
    profile.struct_size = sizeof profile;
    pointers.push_back(&profile);
  }
  const std::vector<phx_plugin_tensor> values =
      mixed.graph.bind(p, {{mixed.x, gaussian(8 * 16, 5)}});
  ASSERT_EQ(compiled.run(values, pointers.data()), PHX_STATUS_OK) << p.error();
  double profiled_sum = 0;
  std::vector<double> error(5, -1.0);
  for (size_t n = 0; n < 5; ++n)
    for (size_t i = 0; i < profiles[n].metric_count; ++i) {
      const std::string name = profiles[n].metrics[i].name;
      if (name == "estimated_time_ns") profiled_sum += profiles[n].metrics[i].value;
      if (name == "quant_error_rel") error[n] = profiles[n].metrics[i].value;
    }
  EXPECT_DOUBLE_EQ(profiled_sum, stats["modelled_time_ns"]);
  // Against the f32 op on the same inputs: int8 costs 2.8% here (the steps are 0.7% of
  // the rms, and the declared ranges clip the Gaussian data's tails past 3), f16 about
  // 2^-11 (at most 4 roundings of 2^-11 relative); the native transpose has no figure.
  EXPECT_GT(error[0], 1e-3);
  EXPECT_LT(error[0], 0.05);
  for (size_t n = 1; n < 4; ++n) {
    EXPECT_GT(error[n], 0.0) << n;
    EXPECT_LT(error[n], 4 * kF16UnitRoundoff) << n;
  }
  EXPECT_EQ(error[4], -1.0);
  phx_metric device[16];
  size_t count = 0;
  ASSERT_EQ(p.api().device_stats(p.plugin(), 0, device, 16, &count), PHX_STATUS_OK);
  std::map<std::string, double> totals;
  for (size_t i = 0; i < count && i < 16; ++i) totals[device[i].name] = device[i].value;
  EXPECT_EQ(totals["ops"], 5);
  EXPECT_EQ(totals["executable_runs"], 1);
  EXPECT_DOUBLE_EQ(totals["modelled_time_ns_total"], stats["modelled_time_ns"]);
}

// ---- int8 or int16 --------------------------------------------------------------------

TEST(NpuSimGraph, QuantizedMatmulBiasReluIsWithinItsQuantizationBound) {
  PluginUnderTest p("profile=edge");
  Dense dense(p, 11);
  EXPECT_EQ(claims(p, dense.graph.graph()), std::vector<uint8_t>{1});
  Compiled compiled(p, dense.graph.graph());
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  EXPECT_EQ(compiled.compute_dtype(0), PHX_DTYPE_I8);  // a Gaussian's own range: int8
  const ErrorCheck check = check_dense(dense, dense.run(p, compiled), false);
  EXPECT_EQ(check.beyond_bound, 0u);
  EXPECT_LE(check.rms_error, 1.5 * check.rms_expected);
  EXPECT_GT(check.rms_error, 0.0);  // it did quantize
}

// int8 with the data's own ranges (mobile); 16x8 on edge when x's range was stretched to
// [-40, 40] (int8 noise 9% of x's rms 1, past the 2% limit).
TEST(NpuSimGraph, QuantizedConvolutionIsWithinItsQuantizationBound) {
  for (const bool int16 : {false, true}) {
    PluginUnderTest p(int16 ? "profile=edge" : "profile=mobile");
    Conv conv(p, 111);
    if (int16) conv.graph.range(conv.x_value) = {-40.0f, 40.0f, 1.0f};
    EXPECT_EQ(claims(p, conv.graph.graph()), std::vector<uint8_t>{1});
    Compiled compiled(p, conv.graph.graph());
    ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
    EXPECT_EQ(compiled.compute_dtype(0), int16 ? PHX_DTYPE_I16 : PHX_DTYPE_I8);
    const std::vector<phx_plugin_tensor> values = conv.graph.bind(p, {{conv.x_value, conv.x}});
    ASSERT_EQ(compiled.run(values), PHX_STATUS_OK) << p.error();
    const ErrorCheck check = check_conv(conv, read_f32(p, values[conv.y_value]), int16);
    EXPECT_EQ(check.beyond_bound, 0u) << int16;
    EXPECT_LE(check.rms_error, 1.5 * check.rms_expected) << int16;
    EXPECT_GT(check.rms_error, 0.0) << int16;
    EXPECT_EQ(compiled.stats()["quantized_weight_bytes"], Conv::F * Conv::C * 9);
  }
}

// The same product when the calibration saw an outlier: x's range [-40, 40] for values of
// rms 1 makes int8's noise 80 / 255 / sqrt(12) = 9% of the signal, past the 2% limit:
// int16 where the profile has it (edge), int8 where not (mobile), each within its bound,
// and int16 the more accurate.
TEST(NpuSimGraph, TakesInt16WhereOutliersStretchTheRangeAndTheProfileHasIt) {
  double rms[2] = {};
  for (const bool edge : {true, false}) {
    PluginUnderTest p(edge ? "profile=edge" : "profile=mobile");
    Dense dense(p, 21);
    dense.graph.range(dense.x_value) = {-40.0f, 40.0f, 1.0f};
    Compiled compiled(p, dense.graph.graph());
    ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
    EXPECT_EQ(compiled.compute_dtype(0), edge ? PHX_DTYPE_I16 : PHX_DTYPE_I8);
    const ErrorCheck check = check_dense(dense, dense.run(p, compiled), edge);
    EXPECT_EQ(check.beyond_bound, 0u) << (edge ? "edge" : "mobile");
    EXPECT_LE(check.rms_error, 1.5 * check.rms_expected) << (edge ? "edge" : "mobile");
    rms[edge ? 0 : 1] = check.rms_error;
    EXPECT_EQ(compiled.stats()[edge ? "quantized_int16_nodes" : "quantized_int8_nodes"], 1);
  }
  EXPECT_LT(rms[0], rms[1] / 4);
}

TEST(NpuSimGraph, A16x8ProfileWithoutInt16MacsStaysInt8) {
  PluginUnderTest p("profile=edge,int16_macs_per_cycle=0");
  Dense dense(p, 31);
  dense.graph.range(dense.x_value) = {-40.0f, 40.0f, 1.0f};
  Compiled compiled(p, dense.graph.graph());
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  EXPECT_EQ(compiled.compute_dtype(0), PHX_DTYPE_I8);
}

// ---- f16 compute ----------------------------------------------------------------------

// gelu(a) and a + b of f32 values in f16: each input rounded to f16 (|a^ - a| <= u |a|,
// u = 2^-11), the op in f32 (a few ulp of f32: 8 2^-24 |y| allowed), the result rounded
// to f16 (u |y| plus 2^-25 for a result in f16's subnormals). gelu' lies in [-0.13,
// 1.13], so gelu(a^) is within 1.13 u |a| of gelu(a); the sum within u (|a| + |b|).
TEST(NpuSimGraph, F16NodesAreWithinF16RoundingOfFloat64) {
  PluginUnderTest p("profile=mobile");
  HandGraph graph;
  const std::vector<float> a = gaussian(4 * 64, 41, 3.0f), b = gaussian(4 * 64, 42, 3.0f);
  const uint32_t va = graph.add_value(kInput, {4, 64}, range_of(a));
  const uint32_t vb = graph.add_value(kInput, {4, 64}, range_of(b));
  const uint32_t vg = graph.add_value(kOutput, {4, 64}, {-0.2f, 12.0f, 2.0f});
  const uint32_t vs = graph.add_value(kOutput, {4, 64}, {-15.0f, 15.0f, 4.0f});
  graph.add_node(PHX_OP_GELU, nullptr, {va}, {vg});
  graph.add_node(PHX_OP_ADD, nullptr, {va, vb}, {vs});
  EXPECT_EQ(claims(p, graph.graph()), (std::vector<uint8_t>{1, 1}));
  Compiled compiled(p, graph.graph());
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  EXPECT_EQ(compiled.compute_dtype(0), PHX_DTYPE_F16);
  EXPECT_EQ(compiled.compute_dtype(1), PHX_DTYPE_F16);
  const std::vector<phx_plugin_tensor> values = graph.bind(p, {{va, a}, {vb, b}});
  ASSERT_EQ(compiled.run(values), PHX_STATUS_OK) << p.error();
  const std::vector<float> g = read_f32(p, values[vg]), s = read_f32(p, values[vs]);
  const double u = kF16UnitRoundoff;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i];
    const double gelu = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    const double gelu_bound =
        1.13 * u * std::fabs(x) +
        (u + 8 * kF32UnitRoundoff) * (std::fabs(gelu) + 1.13 * u * std::fabs(x)) +
        kF16HalfMinSubnormal;
    EXPECT_NEAR(g[i], gelu, gelu_bound) << i;
    EXPECT_EQ(double(g[i]), npu_sim_test::round_f16(g[i])) << "an f16 value";
    const double sum_bound = u * (std::fabs(x) + std::fabs(y)) +
                             u * (std::fabs(x + y) + u * (std::fabs(x) + std::fabs(y))) +
                             kF16HalfMinSubnormal;
    EXPECT_NEAR(s[i], x + y, sum_bound) << i;
  }
}

// rms_norm with an f32 gamma constant and rope with its f32 tables, in f16. rms_norm:
// x and gamma rounded to f16 (u = 2^-11 each) move y_i = x_i gamma_i / r(x) by u for
// x_i, u for gamma_i and u for r (a norm: |r(x^) - r(x)| <= r(x^ - x) <= u r(x)); then
// the f32 evaluation (8 2^-24 allowed) and the output's rounding (u, plus 2^-25 in f16's
// subnormals): (4u + u^2 + 8 2^-24) |y| + 2^-25. rope: a' = a cos - b sin with a and b
// rounded (u (|a cos| + |b sin|)), the tables exact (they stay f32), 3 ulp of f32 of the
// same sum (docs/ops.md), then the output's rounding; unrotated features are x rounded.
TEST(NpuSimGraph, F16NormsAndRopeKeepTheirF32TablesAndMatchFloat64) {
  PluginUnderTest p("profile=mobile");
  constexpr int64_t S = 8, D = 16, R = 4;
  HandGraph graph;
  const std::vector<float> x = gaussian(2 * S * D, 121, 2.0f), gamma = gaussian(D, 122);
  std::vector<float> cos(S * R), sin(S * R);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < R; ++i) {
      cos[s * R + i] = float(std::cos(double(s) * std::pow(100.0, -double(i) / R)));
      sin[s * R + i] = float(std::sin(double(s) * std::pow(100.0, -double(i) / R)));
    }
  const uint32_t vx = graph.add_value(kInput, {2, S, D}, range_of(x));
  const uint32_t vg = graph.add_constant(p, {D}, gamma);
  const uint32_t vc = graph.add_constant(p, {S, R}, cos);
  const uint32_t vs = graph.add_constant(p, {S, R}, sin);
  const uint32_t vn = graph.add_value(kOutput, {2, S, D}, {-8.0f, 8.0f, 1.0f});
  const uint32_t vr = graph.add_value(kOutput, {2, S, D}, {-8.0f, 8.0f, 2.0f});
  const phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  const phx_rope_params rope = PHX_ROPE_PARAMS_INIT;
  graph.add_node(PHX_OP_RMS_NORM, &norm, {vx, vg}, {vn});
  graph.add_node(PHX_OP_ROPE, &rope, {vx, vc, vs}, {vr});
  Compiled compiled(p, graph.graph());
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  EXPECT_EQ(compiled.stats()["f16_nodes"], 2);
  const std::vector<phx_plugin_tensor> values = graph.bind(p, {{vx, x}});
  ASSERT_EQ(compiled.run(values), PHX_STATUS_OK) << p.error();
  const std::vector<float> normed = read_f32(p, values[vn]), rotated = read_f32(p, values[vr]);
  const double u = kF16UnitRoundoff;
  for (int64_t row = 0; row < 2 * S; ++row) {
    const float* xr = &x[size_t(row * D)];
    double squares = 0;
    for (int64_t d = 0; d < D; ++d) squares += double(xr[d]) * xr[d];
    const double r = std::sqrt(squares / D + double(norm.epsilon));
    const int64_t s = row % S;
    for (int64_t d = 0; d < D; ++d) {
      const size_t i = size_t(row * D + d);
      const double y = xr[d] * double(gamma[d]) / r;
      EXPECT_NEAR(normed[i], y,
                  (4 * u + u * u + 8 * kF32UnitRoundoff) * std::fabs(y) + kF16HalfMinSubnormal)
          << i;
      double expected = xr[d], rotation = 0;
      if (d < 2 * R) {
        const int64_t pair = d % R;
        const double c = cos[s * R + pair], sn = sin[s * R + pair];
        const double a = xr[pair], b = xr[pair + R];
        expected = d < R ? a * c - b * sn : a * sn + b * c;
        rotation =
            d < R ? std::fabs(a * c) + std::fabs(b * sn) : std::fabs(a * sn) + std::fabs(b * c);
      }
      const double bound = d < 2 * R ? (u + 3 * kF32UnitRoundoff) * rotation * (1 + u) +
                                           u * std::fabs(expected) + kF16HalfMinSubnormal
                                     : u * std::fabs(expected);
      EXPECT_NEAR(rotated[i], expected, bound) << i;
    }
  }
}

// Each f32 op the mobile profile runs in f16, as a graph of one node: claimed, run, and
// within a few f16 roundings of the f32 op on the same inputs (quant_error_rel, relative
// Frobenius; each result is within a few roundings of 2^-11 of its f32 value, 1e-2 leaves
// room for attention's and the norms' sums).
TEST(NpuSimGraph, EveryF16OpOfTheProfileRunsFromF32) {
  PluginUnderTest p("profile=mobile");
  const phx_attention_params attention = {sizeof(phx_attention_params), 0.0f,
                                          PHX_ATTENTION_MASK_CAUSAL, 0};
  const phx_softmax_params softmax = PHX_SOFTMAX_PARAMS_INIT;
  const phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  const phx_reduce_params rows = {sizeof(phx_reduce_params), 0b10, 0};
  phx_conv2d_params conv = PHX_CONV2D_PARAMS_INIT;
  conv.activation = PHX_ACTIVATION_GELU;  // no integer epilogue: f16
  const phx_matmul_params transposed = {sizeof(phx_matmul_params), 1, 0, PHX_ACTIVATION_NONE};
  phx_pool_params pool = PHX_POOL_PARAMS_INIT;
  pool.kernel[0] = pool.kernel[1] = 2;
  pool.stride[0] = pool.stride[1] = 2;
  phx_conv_transpose2d_params upsample = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  upsample.stride[0] = upsample.stride[1] = 2;
  const phx_resize_params linear = {sizeof(phx_resize_params),
                                    PHX_RESIZE_LINEAR,
                                    PHX_RESIZE_HALF_PIXEL,
                                    PHX_RESIZE_ROUND_PREFER_FLOOR,
                                    4,
                                    {1, 1, 8, 8},
                                    {}};
  const phx_elementwise_params bounds = PHX_ELEMENTWISE_PARAMS_INIT(-0.5f, 0.5f);
  struct Case {
    const char* name;
    phx_op_id op;
    const void* params;
    std::vector<std::vector<int64_t>> inputs;  // shapes; the last entries constants
    size_t constants;
    std::vector<int64_t> output;
  };
  const Case cases[] = {
      {"sub", PHX_OP_SUB, nullptr, {{4, 16}, {4, 16}}, 0, {4, 16}},
      {"mul", PHX_OP_MUL, nullptr, {{4, 16}, {16}}, 1, {4, 16}},
      {"div", PHX_OP_DIV, nullptr, {{4, 16}, {4, 16}}, 0, {4, 16}},
      {"relu", PHX_OP_RELU, nullptr, {{4, 16}}, 0, {4, 16}},
      {"silu", PHX_OP_SILU, nullptr, {{4, 16}}, 0, {4, 16}},
      {"softmax", PHX_OP_SOFTMAX, &softmax, {{4, 16}}, 0, {4, 16}},
      {"layer_norm", PHX_OP_LAYER_NORM, &norm, {{4, 16}, {16}, {16}}, 2, {4, 16}},
      {"reduce_sum", PHX_OP_REDUCE_SUM, &rows, {{4, 16}}, 0, {4}},
      {"reduce_max", PHX_OP_REDUCE_MAX, &rows, {{4, 16}}, 0, {4}},
      {"attention",
       PHX_OP_ATTENTION,
       &attention,
       {{1, 2, 4, 8}, {1, 2, 6, 8}, {1, 2, 6, 8}},
       0,
       {1, 2, 4, 8}},
      {"conv2d+gelu", PHX_OP_CONV2D, &conv, {{1, 2, 5, 5}, {3, 2, 3, 3}}, 1, {1, 3, 3, 3}},
      {"matmul transpose_a", PHX_OP_MATMUL, &transposed, {{8, 4}, {8, 6}}, 1, {4, 6}},
      {"max_pool", PHX_OP_MAX_POOL, &pool, {{1, 2, 4, 4}}, 0, {1, 2, 2, 2}},
      {"avg_pool", PHX_OP_AVG_POOL, &pool, {{1, 2, 4, 4}}, 0, {1, 2, 2, 2}},
      {"conv_transpose2d",
       PHX_OP_CONV_TRANSPOSE2D,
       &upsample,
       {{1, 2, 3, 3}, {2, 3, 2, 2}},
       1,
       {1, 3, 6, 6}},
      {"resize", PHX_OP_RESIZE, &linear, {{1, 1, 4, 4}}, 0, {1, 1, 8, 8}},
      {"sigmoid", PHX_OP_SIGMOID, nullptr, {{4, 16}}, 0, {4, 16}},
      {"tanh", PHX_OP_TANH, nullptr, {{4, 16}}, 0, {4, 16}},
      {"exp", PHX_OP_EXP, nullptr, {{4, 16}}, 0, {4, 16}},
      {"log", PHX_OP_LOG, nullptr, {{4, 16}}, 0, {4, 16}},
      {"sqrt", PHX_OP_SQRT, nullptr, {{4, 16}}, 0, {4, 16}},
      {"neg", PHX_OP_NEG, nullptr, {{4, 16}}, 0, {4, 16}},
      {"abs", PHX_OP_ABS, nullptr, {{4, 16}}, 0, {4, 16}},
      {"erf", PHX_OP_ERF, nullptr, {{4, 16}}, 0, {4, 16}},
      {"floor", PHX_OP_FLOOR, nullptr, {{4, 16}}, 0, {4, 16}},
      {"ceil", PHX_OP_CEIL, nullptr, {{4, 16}}, 0, {4, 16}},
      {"reciprocal", PHX_OP_RECIPROCAL, nullptr, {{4, 16}}, 0, {4, 16}},
      {"sign", PHX_OP_SIGN, nullptr, {{4, 16}}, 0, {4, 16}},
      {"softplus", PHX_OP_SOFTPLUS, nullptr, {{4, 16}}, 0, {4, 16}},
      {"leaky_relu", PHX_OP_LEAKY_RELU, nullptr, {{4, 16}}, 0, {4, 16}},
      {"elu", PHX_OP_ELU, nullptr, {{4, 16}}, 0, {4, 16}},
      {"selu", PHX_OP_SELU, nullptr, {{4, 16}}, 0, {4, 16}},
      {"clip", PHX_OP_CLIP, &bounds, {{4, 16}}, 0, {4, 16}},
      {"pow", PHX_OP_POW, nullptr, {{4, 16}, {16}}, 1, {4, 16}},
      {"max", PHX_OP_MAX, nullptr, {{4, 16}, {4, 16}}, 0, {4, 16}},
      {"min", PHX_OP_MIN, nullptr, {{4, 16}, {16}}, 1, {4, 16}},
      {"prelu", PHX_OP_PRELU, nullptr, {{4, 16}, {16}}, 1, {4, 16}},
      {"reduce_mean", PHX_OP_REDUCE_MEAN, &rows, {{4, 16}}, 0, {4}},
      {"reduce_min", PHX_OP_REDUCE_MIN, &rows, {{4, 16}}, 0, {4}},
      {"reduce_prod", PHX_OP_REDUCE_PROD, &rows, {{4, 16}}, 0, {4}},
      {"log_softmax", PHX_OP_LOG_SOFTMAX, &softmax, {{4, 16}}, 0, {4, 16}},
      {"batch_norm", PHX_OP_BATCH_NORM, &norm, {{2, 4, 3}, {4}, {4}, {4}, {4}}, 4, {2, 4, 3}},
      {"instance_norm", PHX_OP_INSTANCE_NORM, &norm, {{2, 4, 8}, {4}, {4}}, 2, {2, 4, 8}},
  };
  // Inputs the op's domain keeps away from 0 and the negatives: 1 + |v|.
  auto positive = [](phx_op_id op, size_t i) {
    switch (op) {
      case PHX_OP_DIV:
        return i == 1;  // the divisor
      case PHX_OP_LOG:
      case PHX_OP_SQRT:
      case PHX_OP_RECIPROCAL:
      case PHX_OP_POW:
        return i == 0;  // pow's base
      case PHX_OP_BATCH_NORM:
        return i == 4;  // the variance
      default:
        return false;
    }
  };
  uint32_t seed = 131;
  for (const Case& c : cases) {
    HandGraph graph;
    std::vector<uint32_t> inputs;
    std::map<uint32_t, std::vector<float>> data;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const std::vector<int64_t>& shape = c.inputs[i];
      std::vector<float> values = gaussian(size_t(npu_sim_test::element_count(shape)), ++seed);
      if (positive(c.op, i))
        for (float& v : values) v = 1.0f + std::fabs(v);
      if (i + c.constants >= c.inputs.size()) {
        inputs.push_back(graph.add_constant(p, shape, values));
      } else {
        inputs.push_back(graph.add_value(kInput, shape, range_of(values)));
        data[inputs.back()] = values;
      }
    }
    const uint32_t out = graph.add_value(kOutput, c.output, {-100.0f, 100.0f, 1.0f});
    graph.add_node(c.op, c.params, inputs, {out});
    EXPECT_EQ(claims(p, graph.graph()), std::vector<uint8_t>{1}) << c.name;
    Compiled compiled(p, graph.graph());
    ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << c.name << ": " << p.error();
    EXPECT_EQ(compiled.compute_dtype(0), PHX_DTYPE_F16) << c.name;
    phx_plugin_profile profile{};
    profile.struct_size = sizeof profile;
    phx_plugin_profile* profiles[1] = {&profile};
    ASSERT_EQ(compiled.run(graph.bind(p, data), profiles), PHX_STATUS_OK)
        << c.name << ": " << p.error();
    double error = -1;
    for (size_t i = 0; i < profile.metric_count; ++i)
      if (std::string(profile.metrics[i].name) == "quant_error_rel")
        error = profile.metrics[i].value;
    EXPECT_GE(error, 0.0) << c.name;
    EXPECT_LT(error, 1e-2) << c.name;
  }
}

// A comparison or an argmax of f32 values is not run in f16 even with ranges: its output is
// no f32 value (rounding the inputs to f16 could change the answer), so it is left to the
// next device, with the reason. A where on f32 values selects them as they are: its
// condition is u8, which the profile runs, so it is native and needs no ranges.
TEST(NpuSimGraph, F32ComparisonsAndArgmaxFallBackWhereSelectsAsItIs) {
  PluginUnderTest p("profile=mobile");
  const std::vector<float> a = gaussian(64, 211), b = gaussian(64, 212);
  phx_argmax_params last_axis = PHX_ARGMAX_PARAMS_INIT;
  last_axis.axis = 1;
  last_axis.keep_dims = 0;
  struct Case {
    phx_op_id op;
    const void* params;
    phx_dtype out_dtype;
    std::vector<int64_t> out_shape;
    const char* name;
  };
  for (const Case& c : {Case{PHX_OP_LESS, nullptr, PHX_DTYPE_U8, {4, 16}, "less"},
                        Case{PHX_OP_ARGMAX, &last_axis, PHX_DTYPE_I32, {4}, "argmax"}}) {
    HandGraph graph;
    std::vector<uint32_t> inputs = {graph.add_value(kInput, {4, 16}, range_of(a))};
    if (c.op == PHX_OP_LESS) inputs.push_back(graph.add_value(kInput, {4, 16}, range_of(b)));
    const uint32_t out = graph.add_value(kOutput, c.out_shape, {0.0f, 1.0f, 1.0f}, c.out_dtype);
    graph.add_node(c.op, c.params, inputs, {out});
    EXPECT_EQ(claims(p, graph.graph()), std::vector<uint8_t>{0}) << c.name;
    Compiled compiled(p, graph.graph());
    EXPECT_EQ(compiled.status(), PHX_STATUS_UNSUPPORTED) << c.name;
    EXPECT_NE(p.error().find(std::string("(") + c.name + " on f32)"), std::string::npos)
        << p.error();
    EXPECT_NE(p.error().find("is not f32"), std::string::npos) << p.error();
  }

  HandGraph graph;
  const uint32_t cond = graph.add_value(kInput, {4, 16}, {}, PHX_DTYPE_U8);
  const uint32_t va = graph.add_value(kInput, {4, 16}), vb = graph.add_value(kInput, {16});
  const uint32_t vy = graph.add_value(kOutput, {4, 16});
  graph.add_node(PHX_OP_WHERE, nullptr, {cond, va, vb}, {vy});
  EXPECT_EQ(claims(p, graph.graph(false)), std::vector<uint8_t>{0});  // op_supported's yes
  Compiled compiled(p, graph.graph(false));
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  EXPECT_EQ(compiled.compute_dtype(0), PHX_DTYPE_U8);
  EXPECT_EQ(compiled.stats()["native_nodes"], 1);
  const std::vector<float> row(b.begin(), b.begin() + 16);
  const std::vector<phx_plugin_tensor> values = graph.bind(p, {{va, a}, {vb, row}});
  std::vector<uint8_t> flags(64);
  for (size_t i = 0; i < flags.size(); ++i) flags[i] = uint8_t(i % 3 == 0);
  ASSERT_EQ(p.api().buffer_write(p.plugin(), values[cond].buffer, values[cond].offset, flags.data(),
                                 flags.size()),
            PHX_STATUS_OK);
  ASSERT_EQ(compiled.run(values), PHX_STATUS_OK) << p.error();
  const std::vector<float> y = read_f32(p, values[vy]);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], flags[i] ? a[i] : row[i % 16]) << i;
}

// ---- without calibration ---------------------------------------------------------------

// cast f32 -> f16, relu, cast back: nodes the mobile NPU runs as they are, compiled
// without ranges, with the eager ops' results: relu of x rounded to f16.
TEST(NpuSimGraph, CompilesNativeNodesWithoutRanges) {
  PluginUnderTest p("profile=mobile");
  HandGraph graph;
  const std::vector<float> x = gaussian(64, 51);
  const uint32_t vx = graph.add_value(kInput, {64});
  const uint32_t vh = graph.add_value(kIntermediate, {64}, {}, PHX_DTYPE_F16);
  const uint32_t vr = graph.add_value(kIntermediate, {64}, {}, PHX_DTYPE_F16);
  const uint32_t vy = graph.add_value(kOutput, {64});
  graph.add_node(PHX_OP_CAST, nullptr, {vx}, {vh});
  graph.add_node(PHX_OP_RELU, nullptr, {vh}, {vr});
  graph.add_node(PHX_OP_CAST, nullptr, {vr}, {vy});
  EXPECT_EQ(claims(p, graph.graph(false)), (std::vector<uint8_t>{0, 0, 0}));
  Compiled compiled(p, graph.graph(false));
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  EXPECT_EQ(compiled.compute_dtype(0), PHX_DTYPE_F32);
  EXPECT_EQ(compiled.compute_dtype(1), PHX_DTYPE_F16);
  EXPECT_EQ(compiled.stats()["native_nodes"], 3);
  const std::vector<phx_plugin_tensor> values = graph.bind(p, {{vx, x}});
  ASSERT_EQ(compiled.run(values), PHX_STATUS_OK) << p.error();
  const std::vector<float> y = read_f32(p, values[vy]);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(double(y[i]), std::max(0.0, npu_sim_test::round_f16(x[i]))) << i;
}

TEST(NpuSimGraph, AFloatProductWithoutRangesIsUnsupported) {
  PluginUnderTest p("profile=edge");
  Dense dense(p, 61);
  EXPECT_EQ(claims(p, dense.graph.graph(false)), std::vector<uint8_t>{0});
  Compiled compiled(p, dense.graph.graph(false));
  EXPECT_EQ(compiled.status(), PHX_STATUS_UNSUPPORTED);
  EXPECT_NE(p.error().find("node 'n0' (matmul on f32)"), std::string::npos) << p.error();
  EXPECT_NE(p.error().find("without calibration ranges"), std::string::npos) << p.error();
}

// ---- hostile input -----------------------------------------------------------------------

TEST(NpuSimGraph, UnusableRangesAreNoClaimAndAClearRefusal) {
  const phx_plugin_value_range hostile[] = {
      {NAN, 1.0f, 1.0f},    {-1.0f, INFINITY, 1.0f}, {2.0f, 1.0f, 1.0f},
      {-1.0f, 1.0f, -1.0f}, {-1.0f, 1.0f, NAN},      {-INFINITY, INFINITY, INFINITY},
  };
  PluginUnderTest p("profile=edge");
  for (const phx_plugin_value_range& range : hostile) {
    Dense dense(p, 71);
    dense.graph.range(dense.x_value) = range;
    EXPECT_EQ(claims(p, dense.graph.graph()), std::vector<uint8_t>{0});
    EXPECT_EQ(estimates(p, dense.graph.graph()), std::vector<uint64_t>{UINT64_MAX});
    Compiled compiled(p, dense.graph.graph());
    EXPECT_EQ(compiled.status(), PHX_STATUS_UNSUPPORTED);
    EXPECT_NE(p.error().find("value 'v0' has no usable calibration range"), std::string::npos)
        << p.error();
  }
}

// A host's struct that ends before value_ranges: the plugin reads no ranges past it.
TEST(NpuSimGraph, RangesPastTheHostsStructSizeAreNotRead) {
  PluginUnderTest p("profile=edge");
  Dense dense(p, 75);
  phx_plugin_graph graph = dense.graph.graph();
  graph.struct_size = offsetof(phx_plugin_graph, value_ranges);
  EXPECT_EQ(claims(p, graph), std::vector<uint8_t>{0});
}

// A value that was 0 on every sample: scale 1, the zeros exact.
TEST(NpuSimGraph, AZeroRangeQuantizesZerosExactly) {
  PluginUnderTest p("profile=edge");
  HandGraph graph;
  const uint32_t x = graph.add_value(kInput, {4, 8}, {0.0f, 0.0f, 0.0f});
  const uint32_t w = graph.add_constant(p, {8, 4}, gaussian(32, 81));
  const uint32_t y = graph.add_value(kOutput, {4, 4}, {0.0f, 0.0f, 0.0f});
  graph.add_node(PHX_OP_MATMUL, nullptr, {x, w}, {y});
  Compiled compiled(p, graph.graph());
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  EXPECT_EQ(compiled.compute_dtype(0), PHX_DTYPE_I8);
  const std::vector<phx_plugin_tensor> values = graph.bind(p, {{x, std::vector<float>(32, 0.0f)}});
  ASSERT_EQ(compiled.run(values), PHX_STATUS_OK) << p.error();
  EXPECT_EQ(read_f32(p, values[y]), std::vector<float>(16, 0.0f));
}

TEST(NpuSimGraph, ANonFiniteWeightIsRefusedByName) {
  PluginUnderTest p("profile=edge");
  HandGraph graph;
  std::vector<float> weights = gaussian(32, 91);
  weights[5] = NAN;
  const uint32_t x = graph.add_value(kInput, {4, 8}, {-1.0f, 1.0f, 0.5f});
  const uint32_t w = graph.add_constant(p, {8, 4}, weights);
  const uint32_t y = graph.add_value(kOutput, {4, 4}, {-1.0f, 1.0f, 0.5f});
  graph.add_node(PHX_OP_MATMUL, nullptr, {x, w}, {y});
  EXPECT_EQ(claims(p, graph.graph()), std::vector<uint8_t>{1});  // contents unseen yet
  Compiled compiled(p, graph.graph());
  EXPECT_EQ(compiled.status(), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(p.error().find("constant 'v1' holds a non-finite value"), std::string::npos)
      << p.error();
}

TEST(NpuSimGraph, ARunWithTheWrongValueCountIsRefused) {
  PluginUnderTest p("profile=edge");
  Dense dense(p, 101);
  Compiled compiled(p, dense.graph.graph());
  ASSERT_EQ(compiled.status(), PHX_STATUS_OK) << p.error();
  std::vector<phx_plugin_tensor> values = dense.graph.bind(p, {{dense.x_value, dense.x}});
  values.pop_back();
  EXPECT_EQ(compiled.run(values), PHX_STATUS_INVALID_ARGUMENT);
}

}  // namespace
