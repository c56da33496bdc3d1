// conv_transpose2d, NCHW, as a GEMM and a col2im, per image and group:
//   col[(co, i, j), p] = sum_ci w[ci, co, i, j] x[ci, p]   (gemm: w^T [Cout_g*KH*KW, Cin_g]
//                                                         times x [Cin_g, pixels])
// then each col entry is added to the output pixel its input pixel p = (ih, iw) and tap
// (i, j) map to: oh = ih * stride_h - pad_top + i * dilation_h, likewise ow (col2im, the
// transpose of conv2d's im2col); what falls outside the output is dropped. col is built
// for a bounded number of input rows at a time. col2im gives each task whole output
// channels, so no two tasks add into one element. Sums are in f32 (gemm's, then col2im's,
// from the bias); a 16-bit output is rounded once.
#include <vector>

#include "ops_common.h"
#include "phx/kernels/gemm.h"

namespace phx::kernels::ops {
namespace {

// col's size bound, in floats, unless one input row needs more.
constexpr int64_t kMaxColFloats = int64_t{1} << 22;

struct TransposeGeometry {
  int64_t n, c_in, h, w, c_out, h_out, w_out, kh, kw, groups;
  int64_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;

  int64_t c_in_group() const { return c_in / groups; }
  int64_t c_out_group() const { return c_out / groups; }
  int64_t taps() const { return kh * kw; }
};

TransposeGeometry geometry_of(const phx_conv_transpose2d_params& p, const HostTensor& x,
                              const HostTensor& weight, const HostTensor& out) {
  return {x.shape[0],    x.shape[1],      x.shape[2],      x.shape[3],  out.shape[1], out.shape[2],
          out.shape[3],  weight.shape[2], weight.shape[3], p.groups,    p.stride[0],  p.stride[1],
          p.dilation[0], p.dilation[1],   p.padding[0],    p.padding[2]};
}

// Adds col (output channels [co0, co0 + Cout_g) of one group, input rows [ih0, ih1)) into
// the image's f32 output planes y, channels [c_begin, c_end) of the group.
void col2im(const TransposeGeometry& g, const float* col, int64_t ih0, int64_t ih1, int64_t c_begin,
            int64_t c_end, float* y) {
  const int64_t pixels = (ih1 - ih0) * g.w;
  for (int64_t c = c_begin; c < c_end; ++c) {
    float* plane = y + c * g.h_out * g.w_out;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = col + ((c % g.c_out_group()) * g.taps() + i * g.kw + j) * pixels;
        const int64_t col0 = j * g.dil_w - g.pad_left;  // ow of iw = 0
        for (int64_t ih = ih0; ih < ih1; ++ih) {
          const int64_t oh = ih * g.stride_h - g.pad_top + i * g.dil_h;
          if (oh < 0 || oh >= g.h_out) continue;
          float* out_row = plane + oh * g.w_out;
          const float* in = row + (ih - ih0) * g.w;
          for (int64_t iw = 0; iw < g.w; ++iw) {
            const int64_t ow = iw * g.stride_w + col0;
            if (ow >= 0 && ow < g.w_out) out_row[ow] += in[iw];
          }
        }
      }
    }
  }
}

}  // namespace

void run_conv_transpose2d(const phx_conv_transpose2d_params& params, const HostTensor& x,
                          const HostTensor& weight, const HostTensor& bias, const HostTensor& out,
                          ThreadPool& pool) {
  const TransposeGeometry g = geometry_of(params, x, weight, out);
  const int64_t m = g.c_out_group() * g.taps(), plane = g.h_out * g.w_out;
  const int64_t rows = std::clamp<int64_t>(kMaxColFloats / (m * g.w), 1, g.h);
  std::vector<float> col(static_cast<size_t>(m * rows * g.w));
  std::vector<float> bias_f32(static_cast<size_t>(g.c_out), 0.0f), y_storage;
  if (bias.data != nullptr) copy_to_f32(bias, bias_f32.data());
  float* y = static_cast<float*>(out.data);
  if (out.dtype != PHX_DTYPE_F32) {
    y_storage.resize(static_cast<size_t>(element_count(out)));
    y = y_storage.data();
  }
  for (int64_t c = 0; c < g.n * g.c_out; ++c)
    std::fill(y + c * plane, y + (c + 1) * plane, bias_f32[static_cast<size_t>(c % g.c_out)]);
  const size_t bytes = dtype_bytes(x.dtype);
  for (int64_t n = 0; n < g.n; ++n) {
    float* image = y + n * g.c_out * plane;
    for (int64_t group = 0; group < g.groups; ++group) {
      const char* x_group = static_cast<const char*>(x.data) +
                            ((n * g.c_in + group * g.c_in_group()) * g.h * g.w) * bytes;
      for (int64_t ih0 = 0; ih0 < g.h; ih0 += rows) {
        const int64_t ih1 = std::min(g.h, ih0 + rows);
        GemmArgs args;
        args.m = m;
        args.n = (ih1 - ih0) * g.w;
        args.k = g.c_in_group();
        args.in_dtype = x.dtype;
        args.a = static_cast<const char*>(weight.data) + group * g.c_in_group() * m * bytes;
        args.lda = m;
        args.trans_a = true;
        args.b = x_group + ih0 * g.w * bytes;
        args.ldb = g.h * g.w;
        args.c = col.data();
        args.ldc = args.n;
        gemm(args, pool);
        const int64_t c0 = group * g.c_out_group();
        parallel_for(pool, g.c_out_group(), g.taps() * args.n, [&](int64_t begin, int64_t end) {
          col2im(g, col.data(), ih0, ih1, c0 + begin, c0 + end, image);
        });
      }
    }
  }
  if (out.dtype != PHX_DTYPE_F32) from_f32(out.dtype, y, out.data, element_count(out));
}

}  // namespace phx::kernels::ops
