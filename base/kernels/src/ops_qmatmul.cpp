// qmatmul and qconv2d on the integer GEMM (gemm_s8.h), docs/quantization.md.
//
// qmatmul: a [..., M, K] is one [rows, K] matrix; b (i8) the GEMM's B.
// qconv2d: per image and group, out = col . w^T with col [pixels, patch] built by im2col
//   in the weight's patch order ((c, i, j) for NCHW, (i, j, c) for NHWC) and padded with
//   x's zero point, so that padding contributes exactly 0; the NCHW output is written
//   transposed through the GEMM's column stride. A pointwise NHWC convolution needs no
//   col: x is the matrix.
// Zero points are clamped to their dtype's range first, as for quantize.
#include <cstring>
#include <vector>

#include "ops_common.h"
#include "phx/kernels/conv2d_geometry.h"
#include "phx/kernels/gemm_s8.h"

namespace phx::kernels::ops {
namespace {

enum Input { kA, kB, kAScale, kAZero, kBScale, kBZero, kBias, kYScale, kYZero };

int64_t dtype_min(phx_dtype d) {
  return d == PHX_DTYPE_U8 ? 0 : d == PHX_DTYPE_I16 ? -32768 : -128;
}
int64_t dtype_max(phx_dtype d) {
  return d == PHX_DTYPE_U8 ? 255 : d == PHX_DTYPE_I16 ? 32767 : 127;
}

// Element i of an i32 zero point (0 when absent), clamped to dtype's range.
int32_t zero_point(const HostTensor& t, int64_t i, phx_dtype dtype) {
  if (t.data == nullptr) return 0;
  const int64_t v = static_cast<const int32_t*>(t.data)[element_count(t) == 1 ? 0 : i];
  return static_cast<int32_t>(std::clamp(v, dtype_min(dtype), dtype_max(dtype)));
}

float scale_at(const HostTensor& t, int64_t i) {
  return static_cast<const float*>(t.data)[element_count(t) == 1 ? 0 : i];
}

// The per-channel operands of the GEMM for n output channels, and its output stage.
struct OutputStage {
  std::vector<int32_t> b_zero_point;  // empty: all zero
  std::vector<double> multiplier;
  GemmS8Args args;

  OutputStage(const HostTensor* in, const HostTensor& out, int64_t n, bool relu) {
    args.a_dtype = in[kA].dtype;
    args.a_zero_point = zero_point(in[kAZero], 0, in[kA].dtype);
    if (in[kBZero].data != nullptr) {
      for (int64_t j = 0; j < n; ++j)
        b_zero_point.push_back(zero_point(in[kBZero], j, PHX_DTYPE_I8));
      args.b_zero_point = b_zero_point.data();
    }
    args.bias = static_cast<const int32_t*>(in[kBias].data);
    args.out_dtype = out.dtype;
    args.relu = relu;
    const bool requantized = out.dtype != PHX_DTYPE_I32 && out.dtype != PHX_DTYPE_F32;
    if (out.dtype != PHX_DTYPE_I32) {
      // ONNX's QLinearMatMul rule, the multiplier in double: exact to reproduce.
      const double a_scale = scale_at(in[kAScale], 0);
      const double y_scale = requantized ? scale_at(in[kYScale], 0) : 1.0;
      for (int64_t j = 0; j < n; ++j)
        multiplier.push_back(a_scale * double{scale_at(in[kBScale], j)} / y_scale);
      args.multiplier = multiplier.data();
    }
    if (requantized) args.y_zero_point = zero_point(in[kYZero], 0, out.dtype);
  }
};

// ---- qconv2d ----

// col rows q in [q0, q1): the patch of output pixel p0 + q, in the weight's order; taps
// outside the image hold pad (x's zero point). x is the image, at the group's channel 0.
template <class T>
void im2col(const Conv2dGeometry& g, const T* x, T pad, T* col, int64_t p0, int64_t q0,
            int64_t q1) {
  const int64_t cig = g.c_in_group;
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t oh = (p0 + q) / g.w_out, ow = (p0 + q) % g.w_out;
    T* dst = col + q * g.patch();
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t ih = oh * g.stride_h - g.pad_top + i * g.dil_h;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t iw = ow * g.stride_w - g.pad_left + j * g.dil_w;
        const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
        if (g.nhwc) {  // (i, j, c): Cig contiguous channels per tap
          T* tap = dst + (i * g.kw + j) * cig;
          if (inside)
            std::memcpy(tap, x + (ih * g.w + iw) * g.c_in, size_t(cig) * sizeof(T));
          else
            std::fill(tap, tap + cig, pad);
        } else {  // (c, i, j): one value per channel plane
          const int64_t tap = i * g.kw + j, taps = g.kh * g.kw;
          for (int64_t c = 0; c < cig; ++c)
            dst[c * taps + tap] = inside ? x[(c * g.h + ih) * g.w + iw] : pad;
        }
      }
    }
  }
}

// Output pixels per col: keeps col near this many bytes, whatever the patch size.
constexpr int64_t kColBytes = 4 << 20;

template <class T>
void qconv(const Conv2dGeometry& g, const HostTensor* in, OutputStage& stage, const HostTensor& out,
           ThreadPool& pool) {
  const int64_t pixels = g.pixels_out(), patch = g.patch();
  const bool direct = g.nhwc && g.is_pointwise();
  const int64_t chunk = std::clamp<int64_t>(kColBytes / std::max<int64_t>(patch * sizeof(T), 1), 1,
                                            std::max<int64_t>(pixels, 1));
  std::vector<T> col(direct ? 0 : size_t(patch * chunk));
  const T pad = static_cast<T>(stage.args.a_zero_point);
  const auto* x = static_cast<const T*>(in[kA].data);
  const auto* w = static_cast<const int8_t*>(in[kB].data);
  const size_t out_bytes = dtype_bytes(out.dtype);
  GemmS8Args args = stage.args;
  args.k = patch;
  args.n = g.c_out_group;
  args.trans_b = true;  // w is [C_out, patch]: its rows are the product's columns
  args.ldb = patch;
  args.ldc_row = g.nhwc ? g.c_out : 1;
  args.ldc_col = g.nhwc ? 1 : pixels;
  for (int64_t n = 0; n < g.batch; ++n) {
    const T* image = x + n * g.c_in * g.h * g.w;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const int64_t c0 = grp * g.c_out_group;
      const T* xg = image + (g.nhwc ? grp * g.c_in_group : grp * g.c_in_group * g.h * g.w);
      args.b = w + c0 * patch;
      if (!stage.b_zero_point.empty()) args.b_zero_point = stage.b_zero_point.data() + c0;
      if (stage.args.bias != nullptr) args.bias = stage.args.bias + c0;
      if (!stage.multiplier.empty()) args.multiplier = stage.multiplier.data() + c0;
      for (int64_t p0 = 0; p0 < pixels; p0 += chunk) {
        const int64_t count = std::min(chunk, pixels - p0);
        if (direct) {
          args.a = xg + p0 * g.c_in;
          args.lda = g.c_in;
        } else {
          parallel_for(pool, count, patch,
                       [&](int64_t q0, int64_t q1) { im2col(g, xg, pad, col.data(), p0, q0, q1); });
          args.a = col.data();
          args.lda = patch;
        }
        args.m = count;
        const int64_t first =
            g.nhwc ? (n * pixels + p0) * g.c_out + c0 : (n * g.c_out + c0) * pixels + p0;
        args.c = static_cast<char*>(out.data) + first * int64_t(out_bytes);
        gemm_s8(args, pool);
      }
    }
  }
}

}  // namespace

void run_qmatmul(const phx_matmul_params& params, const HostTensor* in, const HostTensor& out,
                 ThreadPool& pool) {
  const HostTensor& a = in[kA];
  const int64_t k = a.shape[a.rank - 1];
  const int64_t n = out.shape[out.rank - 1];
  int64_t rows = 1;
  for (uint32_t d = 0; d + 1 < a.rank; ++d) rows *= a.shape[d];
  OutputStage stage(in, out, n, params.activation == PHX_ACTIVATION_RELU);
  GemmS8Args& args = stage.args;
  args.m = rows;
  args.n = n;
  args.k = k;
  args.a = a.data;
  args.lda = k;
  args.b = static_cast<const int8_t*>(in[kB].data);
  args.trans_b = params.transpose_b != 0;
  args.ldb = args.trans_b ? k : n;
  args.c = out.data;
  args.ldc_row = n;
  args.ldc_col = 1;
  gemm_s8(args, pool);
}

void run_qconv2d(const phx_conv2d_params& params, const HostTensor* in, const HostTensor& out,
                 ThreadPool& pool) {
  const Conv2dGeometry g = conv2d_geometry(params, in[kA], in[kB], out);
  OutputStage stage(in, out, g.c_out, params.activation == PHX_ACTIVATION_RELU);
  switch (in[kA].dtype) {
    case PHX_DTYPE_U8:
      qconv<uint8_t>(g, in, stage, out, pool);
      break;
    case PHX_DTYPE_I16:
      qconv<int16_t>(g, in, stage, out, pool);
      break;
    default:
      qconv<int8_t>(g, in, stage, out, pool);
      break;
  }
}

}  // namespace phx::kernels::ops
