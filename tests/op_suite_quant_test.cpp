// The op conformance suite of the quantized ops (docs/quantization.md) on every device
// found at run time: quantize, dequantize, dynamic_quantize, qmatmul, qconv2d, each
// bit-exact against a plain float64 / integer reference of the documented rule written
// here. A device that does not claim an (op, dtype) must answer UNSUPPORTED.
#include "op_suite.h"

namespace phx_test {
namespace {

constexpr phx_dtype kQuantized[] = {PHX_DTYPE_I8, PHX_DTYPE_U8, PHX_DTYPE_I16};

double qmin(phx_dtype d) { return int_range(d).lo; }
double qmax(phx_dtype d) { return int_range(d).hi; }

// quantize: x / scale in f32, NaN as 0, ties to even, + zero point, saturated.
double quantize_ref(double x, double scale, double zp, phx_dtype dt) {
  float v = static_cast<float>(x) / static_cast<float>(scale);
  if (std::isnan(v)) v = 0.0f;
  return std::clamp(std::nearbyint(static_cast<double>(v)) + zp, qmin(dt), qmax(dt));
}

// dequantize: (q - zp) exact, to f32, times scale in f32.
double dequantize_ref(double q, double scale, double zp) {
  return static_cast<float>(q - zp) * static_cast<float>(scale);
}

HostTensor values(phx_dtype dt, Shape shape, std::vector<double> v) {
  return HostTensor{dt, std::move(shape), std::move(v)};
}

// The channel of flat element i of shape along axis (0 per tensor).
int64_t channel_of(const Shape& shape, int axis, int64_t i) {
  int64_t inner = 1;
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  return i / inner % shape[size_t(axis)];
}

using QuantSuite = OpSuite;

TEST_P(QuantSuite, QuantizePerTensorTiesSaturationAndSpecials) {
  Random rng(1);
  for (phx_dtype dt : kQuantized) {
    // Scale 0.5: x / scale is exact, so halves are true ties.
    HostTensor x = rng.tensor(PHX_DTYPE_F32, {300}, -80.0, 80.0);
    const std::vector<double> specials = {0.25,  0.75,     -0.25,     -0.75, 1.25,
                                          -1.25, 63.75,    -64.25,    1e9,   -1e9,
                                          NAN,   INFINITY, -INFINITY, 0.0,   -0.0};
    std::copy(specials.begin(), specials.end(), x.values.begin());
    for (bool with_zp : {false, true}) {
      const double zp = with_zp ? (dt == PHX_DTYPE_U8 ? 128 : -3) : 0;
      const HostTensor scale = values(PHX_DTYPE_F32, {1}, {0.5});
      const HostTensor zero = values(PHX_DTYPE_I32, {1}, {zp});
      Expected want;
      for (double v : x.values) want.add(quantize_ref(v, 0.5, zp, dt), 0.0);
      const phx_quantize_params p = PHX_QUANTIZE_PARAMS_INIT;
      check_op(std::string(phx_dtype_name(dt)) + " zp " + std::to_string(zp), PHX_OP_QUANTIZE, &p,
               {&x, &scale, with_zp ? &zero : nullptr}, dt, x.shape, want);
    }
  }
}

TEST_P(QuantSuite, QuantizeAndDequantizePerChannelOnEveryAxis) {
  Random rng(2);
  const Shape shape = {3, 5, 7};
  HostTensor x = rng.tensor(PHX_DTYPE_F32, shape, -4.0, 4.0);
  for (int axis : {0, 1, 2, -1}) {
    const int a = axis < 0 ? axis + 3 : axis;
    const int64_t c = shape[size_t(a)];
    for (phx_dtype dt : kQuantized) {
      HostTensor scale = rng.tensor(PHX_DTYPE_F32, {c}, 0.01, 0.1);
      HostTensor zero = rng.tensor(PHX_DTYPE_I32, {c}, qmin(dt) / 2, qmax(dt) / 2);
      phx_quantize_params p = PHX_QUANTIZE_PARAMS_INIT;
      p.axis = axis;
      Expected want;
      HostTensor q{dt, shape, {}};
      for (int64_t i = 0; i < element_count(shape); ++i) {
        const int64_t ch = channel_of(shape, a, i);
        const double v = quantize_ref(x.at(i), scale.at(ch), zero.at(ch), dt);
        want.add(v, 0.0);
        q.values.push_back(v);
      }
      const std::string what = std::string(phx_dtype_name(dt)) + " axis " + std::to_string(axis);
      check_op(what, PHX_OP_QUANTIZE, &p, {&x, &scale, &zero}, dt, shape, want);
      Expected back;
      for (int64_t i = 0; i < element_count(shape); ++i) {
        const int64_t ch = channel_of(shape, a, i);
        back.add(dequantize_ref(q.at(i), scale.at(ch), zero.at(ch)), 0.0);
      }
      check_op(what, PHX_OP_DEQUANTIZE, &p, {&q, &scale, &zero}, PHX_DTYPE_F32, shape, back);
    }
  }
}

TEST_P(QuantSuite, DequantizeI32AndWithoutZeroPoint) {
  Random rng(3);
  const HostTensor q = rng.tensor(PHX_DTYPE_I32, {2, 129}, -2e9, 2e9);
  const HostTensor scale = values(PHX_DTYPE_F32, {1}, {0.0625});
  const HostTensor zero = values(PHX_DTYPE_I32, {1}, {-7});
  Expected with_zp, without;
  for (double v : q.values) {
    with_zp.add(dequantize_ref(v, 0.0625, -7), 0.0);
    without.add(dequantize_ref(v, 0.0625, 0), 0.0);
  }
  check_op("i32 zp", PHX_OP_DEQUANTIZE, nullptr, {&q, &scale, &zero}, PHX_DTYPE_F32, q.shape,
           with_zp);
  check_op("i32", PHX_OP_DEQUANTIZE, nullptr, {&q, &scale, nullptr}, PHX_DTYPE_F32, q.shape,
           without);
}

TEST_P(QuantSuite, DynamicQuantize) {
  Random rng(4);
  for (phx_dtype dt : kQuantized) {
    // Its three outputs must all fit on the device before there is anything to run.
    if (!holds(dt) || !holds(PHX_DTYPE_F32) || !holds(PHX_DTYPE_I32)) continue;
    for (double shift : {0.0, 3.0, -3.0}) {
      HostTensor x = rng.tensor(PHX_DTYPE_F32, {7, 300}, -2.0 + shift, 2.0 + shift);
      x.values[5] = NAN;  // ignored by the range, then quantized as 0
      x.values[9] = INFINITY;
      SCOPED_TRACE(std::string(phx_dtype_name(dt)) + " shift " + std::to_string(shift));
      // The documented rule: the range of the finite values, widened to hold 0.
      double lo = 0.0, hi = 0.0;
      for (double v : x.values)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      float scale = 0;
      double zp = 0;
      if (dt == PHX_DTYPE_U8) {
        scale = static_cast<float>((hi - lo) / 255.0);
        zp = std::clamp(std::nearbyint(-lo / double{scale}), 0.0, 255.0);
      } else {
        scale = static_cast<float>(std::max(-lo, hi) / qmax(dt));
      }
      const bool claimed = claims(PHX_OP_DYNAMIC_QUANTIZE, PHX_DTYPE_F32);
      const Tensor in = upload(x);
      const Tensor y = make(dt, x.shape), s = make(PHX_DTYPE_F32, {1}),
                   z = make(PHX_DTYPE_I32, {1});
      const phx_status status =
          run(PHX_OP_DYNAMIC_QUANTIZE, nullptr, {in.get()}, {y.get(), s.get(), z.get()});
      if (!claimed) {
        EXPECT_EQ(status, PHX_STATUS_UNSUPPORTED);
        continue;
      }
      ASSERT_EQ(status, PHX_STATUS_OK) << phx_last_error();
      EXPECT_EQ(download(s, PHX_DTYPE_F32, 1)[0], double{scale});
      EXPECT_EQ(download(z, PHX_DTYPE_I32, 1)[0], zp);
      Expected want;
      for (double v : x.values) want.add(quantize_ref(v, scale, zp, dt), 0.0);
      expect_matches(download(y, dt, element_count(x.shape)), want, dt);
    }
  }
}

// ---- qmatmul and qconv2d -----------------------------------------------------------------

// The quantization operands of a product with n output channels.
struct QuantOperands {
  HostTensor a_scale, a_zero, b_scale, b_zero, bias, y_scale, y_zero;
};

QuantOperands make_operands(Random& rng, phx_dtype a_dt, phx_dtype out, int64_t n,
                            bool per_channel) {
  QuantOperands q;
  q.a_scale = values(PHX_DTYPE_F32, {1}, {round_to_float(PHX_DTYPE_F32, rng.uniform(0.01, 0.05))});
  q.a_zero = values(PHX_DTYPE_I32, {1},
                    {a_dt == PHX_DTYPE_U8   ? 131.0
                     : a_dt == PHX_DTYPE_I8 ? -5.0
                                            : 0.0});
  const int64_t c = per_channel ? n : 1;
  q.b_scale = rng.tensor(PHX_DTYPE_F32, {c}, 0.002, 0.02);
  q.b_zero = rng.tensor(PHX_DTYPE_I32, {c}, -3, 3);
  q.bias = rng.tensor(PHX_DTYPE_I32, {n}, -5000, 5000);
  q.y_scale = values(PHX_DTYPE_F32, {1}, {round_to_float(PHX_DTYPE_F32, rng.uniform(0.05, 0.3))});
  q.y_zero = values(PHX_DTYPE_I32, {1},
                    {out == PHX_DTYPE_U8   ? 120.0
                     : out == PHX_DTYPE_I8 ? 4.0
                                           : -10.0});
  return q;
}

// The documented output stage of an exact accumulator of output channel j.
double output_stage(int64_t acc, bool wide, phx_dtype out, bool relu, const QuantOperands& q,
                    int64_t j) {
  if (!wide) acc = static_cast<int32_t>(static_cast<uint32_t>(acc));
  const double a_scale = q.a_scale.at(0);
  const double b_scale = q.b_scale.at(q.b_scale.values.size() == 1 ? 0 : j);
  switch (out) {
    case PHX_DTYPE_I32:
      return double(relu ? std::max<int64_t>(acc, 0) : acc);
    case PHX_DTYPE_F32: {
      const auto v = static_cast<float>(double(acc) * (a_scale * b_scale));
      return relu && v < 0.0f ? 0.0 : double(v);
    }
    default: {
      const double zp = q.y_zero.at(0);
      const double m = a_scale * b_scale / q.y_scale.at(0);
      const double lo = relu ? std::max(qmin(out), zp) : qmin(out);
      return std::clamp(std::nearbyint(double(acc) * m) + zp, lo, qmax(out));
    }
  }
}

// The 9 inputs in the header's order; y_scale and y_zero_point only for requantized outputs.
std::vector<const HostTensor*> product_inputs(const HostTensor& a, const HostTensor& b,
                                              const QuantOperands& q, phx_dtype out, bool bias) {
  const bool requantized = out != PHX_DTYPE_I32 && out != PHX_DTYPE_F32;
  return {&a,
          &b,
          &q.a_scale,
          &q.a_zero,
          &q.b_scale,
          &q.b_zero,
          bias ? &q.bias : nullptr,
          requantized ? &q.y_scale : nullptr,
          requantized ? &q.y_zero : nullptr};
}

std::vector<phx_dtype> outputs_for(phx_dtype a_dt) {
  std::vector<phx_dtype> outs = {PHX_DTYPE_I8, PHX_DTYPE_U8, PHX_DTYPE_F32};
  if (a_dt == PHX_DTYPE_I16)
    outs.push_back(PHX_DTYPE_I16);  // 16x8: i16 in, i16 out
  else
    outs.push_back(PHX_DTYPE_I32);
  return outs;
}

TEST_P(QuantSuite, QMatmulEveryOutputModeAndShape) {
  Random rng(5);
  struct Case {
    Shape batch;
    int64_t m, k, n;
  };
  const Case cases[] = {{{}, 7, 129, 300}, {{}, 1, 300, 7}, {{2, 3}, 129, 7, 1}, {{2}, 7, 1, 129}};
  for (phx_dtype a_dt : {PHX_DTYPE_U8, PHX_DTYPE_I8, PHX_DTYPE_I16}) {
    for (const Case& c : cases) {
      for (int variant = 0; variant < 2; ++variant) {
        const bool per_channel = variant == 1, transpose_b = variant == 1;
        Shape a_shape = c.batch;
        a_shape.push_back(c.m);
        a_shape.push_back(c.k);
        const HostTensor a = rng.tensor(a_dt, a_shape, -300, 300);
        const HostTensor b =
            rng.tensor(PHX_DTYPE_I8, transpose_b ? Shape{c.n, c.k} : Shape{c.k, c.n}, -128, 127);
        Shape out_shape = a_shape;
        out_shape.back() = c.n;
        const int64_t rows = element_count(a_shape) / c.k;
        for (phx_dtype out : outputs_for(a_dt)) {
          const QuantOperands q = make_operands(rng, a_dt, out, c.n, per_channel);
          for (bool relu : {false, true}) {
            const bool bias = relu != per_channel;
            Expected want;
            for (int64_t i = 0; i < rows; ++i)
              for (int64_t j = 0; j < c.n; ++j) {
                const int64_t zb = int64_t(q.b_zero.at(per_channel ? j : 0));
                int64_t acc = bias ? int64_t(q.bias.at(j)) : 0;
                for (int64_t k = 0; k < c.k; ++k) {
                  const double bv = transpose_b ? b.at(j * c.k + k) : b.at(k * c.n + j);
                  acc +=
                      (int64_t(a.at(i * c.k + k)) - int64_t(q.a_zero.at(0))) * (int64_t(bv) - zb);
                }
                want.add(output_stage(acc, a_dt == PHX_DTYPE_I16, out, relu, q, j), 0.0);
              }
            phx_matmul_params p = PHX_MATMUL_PARAMS_INIT;
            p.transpose_b = transpose_b;
            p.activation = relu ? PHX_ACTIVATION_RELU : PHX_ACTIVATION_NONE;
            check_op(std::string(phx_dtype_name(a_dt)) + "->" + phx_dtype_name(out) + " " +
                         shape_string(a_shape) + " n " + std::to_string(c.n) +
                         (per_channel ? " per-channel tb" : "") + (relu ? " relu" : "") +
                         (bias ? " bias" : ""),
                     PHX_OP_QMATMUL, &p, product_inputs(a, b, q, out, bias), out, out_shape, want);
          }
        }
      }
    }
  }
}

TEST_P(QuantSuite, QConv2dLayoutsGroupsStridePaddingDilation) {
  Random rng(6);
  for (phx_layout layout : {PHX_LAYOUT_NCHW, PHX_LAYOUT_NHWC}) {
    for (phx_dtype a_dt : {PHX_DTYPE_U8, PHX_DTYPE_I8, PHX_DTYPE_I16}) {
      for (int variant = 0; variant < 2; ++variant) {
        const bool nhwc = layout == PHX_LAYOUT_NHWC;
        const int64_t n = 2, c_in = 4, h = 7, w = 9, c_out = 6, kh = 3, kw = 2;
        phx_conv2d_params p = PHX_CONV2D_PARAMS_INIT;
        p.layout = layout;
        p.groups = variant == 0 ? 2 : 1;
        p.stride[0] = 2;
        p.padding[0] = 1;
        p.padding[1] = 2;
        p.padding[3] = 1;
        p.dilation[1] = 2;
        p.activation = variant == 1 ? PHX_ACTIVATION_RELU : PHX_ACTIVATION_NONE;
        const int64_t cig = c_in / p.groups, cog = c_out / p.groups;
        const int64_t ho = (h + 1 + 2 - (kh - 1) - 1) / 2 + 1, wo = (w + 1 - 2 * (kw - 1) - 1) + 1;
        const HostTensor x =
            rng.tensor(a_dt, nhwc ? Shape{n, h, w, c_in} : Shape{n, c_in, h, w}, -300, 300);
        const HostTensor wt = rng.tensor(
            PHX_DTYPE_I8, nhwc ? Shape{c_out, kh, kw, cig} : Shape{c_out, cig, kh, kw}, -128, 127);
        const Shape out_shape = nhwc ? Shape{n, ho, wo, c_out} : Shape{n, c_out, ho, wo};
        auto x_at = [&](int64_t b, int64_t c, int64_t i, int64_t j) {
          return int64_t(nhwc ? x.at(((b * h + i) * w + j) * c_in + c)
                              : x.at(((b * c_in + c) * h + i) * w + j));
        };
        auto w_at = [&](int64_t o, int64_t c, int64_t i, int64_t j) {
          return int64_t(nhwc ? wt.at(((o * kh + i) * kw + j) * cig + c)
                              : wt.at(((o * cig + c) * kh + i) * kw + j));
        };
        for (phx_dtype out : outputs_for(a_dt)) {
          const QuantOperands q = make_operands(rng, a_dt, out, c_out, variant == 0);
          std::vector<double> result(size_t(element_count(out_shape)));
          for (int64_t b = 0; b < n; ++b)
            for (int64_t o = 0; o < c_out; ++o)
              for (int64_t oi = 0; oi < ho; ++oi)
                for (int64_t oj = 0; oj < wo; ++oj) {
                  const int64_t g = o / cog, zb = int64_t(q.b_zero.at(variant == 0 ? o : 0));
                  int64_t acc = int64_t(q.bias.at(o));
                  for (int64_t c = 0; c < cig; ++c)
                    for (int64_t i = 0; i < kh; ++i)
                      for (int64_t j = 0; j < kw; ++j) {
                        const int64_t ih = oi * 2 - 1 + i, iw = oj - 0 + j * 2;
                        // Padding holds x's zero point: it contributes exactly 0.
                        if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                        acc += (x_at(b, g * cig + c, ih, iw) - int64_t(q.a_zero.at(0))) *
                               (w_at(o, c, i, j) - zb);
                      }
                  const int64_t at = nhwc ? ((b * ho + oi) * wo + oj) * c_out + o
                                          : ((b * c_out + o) * ho + oi) * wo + oj;
                  result[size_t(at)] =
                      output_stage(acc, a_dt == PHX_DTYPE_I16, out, variant == 1, q, o);
                }
          Expected want;
          for (double v : result) want.add(v, 0.0);
          check_op(std::string(nhwc ? "nhwc " : "nchw ") + phx_dtype_name(a_dt) + "->" +
                       phx_dtype_name(out) + (variant == 0 ? " groups 2 per-channel" : " relu"),
                   PHX_OP_QCONV2D, &p, product_inputs(x, wt, q, out, true), out, out_shape, want);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, QuantSuite, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace phx_test
