// conv_transpose2d, NCHW: each input pixel adds its value times the kernel into the
// output window it maps to (oh = ih * stride - pad_top + kh * dilation, likewise ow), the
// transpose of conv2d's gather. Each task owns whole output planes (n, c_out), so the
// scatter stays within one task. 16-bit floats are converted to f32 first and the
// output rounded once; sums are in f32.
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

struct TransposeGeometry {
  int64_t n, c_in, h, w, c_out, h_out, w_out, kh, kw, groups;
  int64_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;

  int64_t c_in_group() const { return c_in / groups; }
  int64_t c_out_group() const { return c_out / groups; }
};

TransposeGeometry geometry_of(const phx_conv_transpose2d_params& p, const HostTensor& x,
                              const HostTensor& weight, const HostTensor& out) {
  return {x.shape[0],    x.shape[1],      x.shape[2],      x.shape[3],  out.shape[1], out.shape[2],
          out.shape[3],  weight.shape[2], weight.shape[3], p.groups,    p.stride[0],  p.stride[1],
          p.dilation[0], p.dilation[1],   p.padding[0],    p.padding[2]};
}

// Output plane (n, co) = bias + the contributions of the group's input channels.
void transpose_plane(const TransposeGeometry& g, const float* x, const float* w, float bias,
                     int64_t n, int64_t co, float* y) {
  std::fill(y, y + g.h_out * g.w_out, bias);
  const int64_t group = co / g.c_out_group(), co_g = co % g.c_out_group();
  for (int64_t ci = group * g.c_in_group(); ci < (group + 1) * g.c_in_group(); ++ci) {
    const float* plane = x + (n * g.c_in + ci) * g.h * g.w;
    const float* kernel = w + (ci * g.c_out_group() + co_g) * g.kh * g.kw;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float k = kernel[i * g.kw + j];
        const int64_t col0 = j * g.dil_w - g.pad_left;  // ow of iw = 0
        for (int64_t ih = 0; ih < g.h; ++ih) {
          const int64_t oh = ih * g.stride_h - g.pad_top + i * g.dil_h;
          if (oh < 0 || oh >= g.h_out) continue;
          float* row = y + oh * g.w_out;
          const float* in = plane + ih * g.w;
          for (int64_t iw = 0; iw < g.w; ++iw) {
            const int64_t ow = iw * g.stride_w + col0;
            if (ow >= 0 && ow < g.w_out) row[ow] += in[iw] * k;
          }
        }
      }
    }
  }
}

// t's data as f32: t itself when it is f32, else converted into storage.
const float* as_f32(const HostTensor& t, std::vector<float>& storage) {
  if (t.dtype == PHX_DTYPE_F32) return static_cast<const float*>(t.data);
  storage.resize(static_cast<size_t>(element_count(t)));
  copy_to_f32(t, storage.data());
  return storage.data();
}

}  // namespace

void run_conv_transpose2d(const phx_conv_transpose2d_params& params, const HostTensor& x,
                          const HostTensor& weight, const HostTensor& bias, const HostTensor& out,
                          ThreadPool& pool) {
  const TransposeGeometry g = geometry_of(params, x, weight, out);
  std::vector<float> x_storage, w_storage, bias_f32(static_cast<size_t>(g.c_out), 0.0f), y_storage;
  const float* xf = as_f32(x, x_storage);
  const float* wf = as_f32(weight, w_storage);
  if (bias.data != nullptr) copy_to_f32(bias, bias_f32.data());
  float* y = static_cast<float*>(out.data);
  if (out.dtype != PHX_DTYPE_F32) {
    y_storage.resize(static_cast<size_t>(element_count(out)));
    y = y_storage.data();
  }
  const int64_t plane = g.h_out * g.w_out;
  const int64_t work = g.c_in_group() * g.h * g.w * g.kh * g.kw + plane;
  parallel_for(pool, g.n * g.c_out, work, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      transpose_plane(g, xf, wf, bias_f32[static_cast<size_t>(p % g.c_out)], p / g.c_out,
                      p % g.c_out, y + p * plane);
  });
  if (out.dtype != PHX_DTYPE_F32) from_f32(out.dtype, y, out.data, element_count(out));
}

}  // namespace phx::kernels::ops
