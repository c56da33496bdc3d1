// conv2d, direct: one invocation per output element sums its group's channels and the
// kernel taps in f32, then adds the bias, activates and rounds once.
// Defines: X_F32, X_F16 or X_BF16 (x, weight, bias and out alike).
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "activation.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer W { X_T w[]; };
layout(set = 0, binding = 2) readonly buffer Bias { X_T bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint n, c, h, w;
  uint c_out, kh, kw, h_out, w_out;
  uint stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  uint groups;
  uint flags;  // bit 0: NHWC; bit 1: a bias is bound; bits 8..15: the activation
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const bool nhwc = (p.flags & 1u) != 0u;
  uint o, oy, ox, rest = i;
  if (nhwc) {
    o = rest % p.c_out;
    rest /= p.c_out;
    ox = rest % p.w_out;
    rest /= p.w_out;
    oy = rest % p.h_out;
    rest /= p.h_out;
  } else {
    ox = rest % p.w_out;
    rest /= p.w_out;
    oy = rest % p.h_out;
    rest /= p.h_out;
    o = rest % p.c_out;
    rest /= p.c_out;
  }
  const uint batch = rest;
  const uint cg = p.c / p.groups;
  const uint c0 = (o / (p.c_out / p.groups)) * cg;
  float sum = 0.0;
  for (uint ky = 0u; ky < p.kh; ++ky) {
    // Unsigned wrap-around makes a row above the padding "too large": one test each.
    const uint iy = oy * p.stride_h + ky * p.dilation_h - p.pad_top;
    if (iy >= p.h) continue;
    for (uint kx = 0u; kx < p.kw; ++kx) {
      const uint ix = ox * p.stride_w + kx * p.dilation_w - p.pad_left;
      if (ix >= p.w) continue;
      for (uint ci = 0u; ci < cg; ++ci) {
        const uint ch = c0 + ci;
        const uint xi = nhwc ? ((batch * p.h + iy) * p.w + ix) * p.c + ch
                             : ((batch * p.c + ch) * p.h + iy) * p.w + ix;
        const uint wi = nhwc ? ((o * p.kh + ky) * p.kw + kx) * cg + ci
                             : ((o * cg + ci) * p.kh + ky) * p.kw + kx;
        sum = fma(X_LOAD(x[xi]), X_LOAD(w[wi]), sum);
      }
    }
  }
  if ((p.flags & 2u) != 0u) sum += X_LOAD(bias[o]);
  y[i] = X_STORE(activate((p.flags >> 8) & 0xFFu, sum));
}
