// conv_transpose2d, NCHW, direct: one invocation per output element gathers the inputs
// whose kernel taps land on it (input row iy reaches output row iy * stride + ky *
// dilation - pad_top), sums them in f32, adds the bias and rounds once.
// Defines: X_F32, X_F16 or X_BF16 (x, weight, bias and out alike).
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer W { X_T w[]; };  // [C_in, C_out / groups, KH, KW]
layout(set = 0, binding = 2) readonly buffer Bias { X_T bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint c, h, w;
  uint c_out, kh, kw, h_out, w_out;
  uint stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  uint groups;
  uint has_bias;
} p;

// The input index whose tap k reaches output index o along a dimension of size n, or -1.
int source(uint o, uint k, uint stride, uint dilation, uint pad, uint n) {
  const int at = int(o + pad) - int(k * dilation);
  if (at < 0 || at % int(stride) != 0) return -1;
  const int i = at / int(stride);
  return i < int(n) ? i : -1;
}

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  uint rest = i;
  const uint ox = rest % p.w_out;
  rest /= p.w_out;
  const uint oy = rest % p.h_out;
  rest /= p.h_out;
  const uint o = rest % p.c_out;
  const uint batch = rest / p.c_out;
  const uint cg = p.c / p.groups, og = p.c_out / p.groups;
  const uint c0 = (o / og) * cg, o_local = o % og;
  float sum = 0.0;
  for (uint ky = 0u; ky < p.kh; ++ky) {
    const int iy = source(oy, ky, p.stride_h, p.dilation_h, p.pad_top, p.h);
    if (iy < 0) continue;
    for (uint kx = 0u; kx < p.kw; ++kx) {
      const int ix = source(ox, kx, p.stride_w, p.dilation_w, p.pad_left, p.w);
      if (ix < 0) continue;
      for (uint ci = 0u; ci < cg; ++ci) {
        const uint ch = c0 + ci;
        const uint xi = ((batch * p.c + ch) * p.h + uint(iy)) * p.w + uint(ix);
        const uint wi = ((ch * og + o_local) * p.kh + ky) * p.kw + kx;
        sum = fma(X_LOAD(x[xi]), X_LOAD(w[wi]), sum);
      }
    }
  }
  if (p.has_bias != 0u) sum += X_LOAD(bias[o]);
  y[i] = X_STORE(sum);
}
