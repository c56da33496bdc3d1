// conv2d, NCHW, for groups too narrow for the matmul (depthwise among them): an
// invocation computes OUTPUTS neighbouring outputs of one output row of one channel.
// For each input channel of its group and each kernel row it loads the window of input
// row those outputs read once (WINDOW values, zeros in the padding) and takes every tap
// from it, where one invocation per output loads each value kw times and pays an index
// computation per tap (on lavapipe every load with a per-lane address is a loop over
// the lanes). The sums are f32; bias, activation and the one rounding follow.
//
// Specialization constants: KW, SW and DW, the kernel's width, stride and dilation along
// the width, so that the window and the loops over it have constant sizes (unrolled by the
// driver, the window held in registers). The host uses this kernel while WINDOW <= 32.
// Defines: X_F32, X_F16 or X_BF16 (x, weight, bias and out alike).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "activation.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(constant_id = 0) const uint KW = 3u;
layout(constant_id = 1) const uint SW = 1u;
layout(constant_id = 2) const uint DW = 1u;
#define OUTPUTS 8u
const uint WINDOW = (OUTPUTS - 1u) * SW + (KW - 1u) * DW + 1u;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer W { X_T w[]; };
layout(set = 0, binding = 2) readonly buffer Bias { X_T bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;  // invocations: n c_out h_out blocks
  uint c, h, w;
  uint c_out, kh, h_out, w_out;
  uint blocks;  // blocks of OUTPUTS outputs per output row
  uint stride_h, pad_top, pad_left, dilation_h;
  uint groups;
  uint flags;  // bit 1: a bias is bound; bits 8..15: the activation
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const uint ox0 = (i % p.blocks) * OUTPUTS;
  const uint oy = (i / p.blocks) % p.h_out;
  const uint o = (i / (p.blocks * p.h_out)) % p.c_out;
  const uint n = i / (p.blocks * p.h_out * p.c_out);
  const uint cg = p.c / p.groups;
  const uint c0 = (o / (p.c_out / p.groups)) * cg;
  // Unsigned wrap-around makes a position left of the padding "too large": one test each.
  const uint ix0 = ox0 * SW - p.pad_left;

  float acc[OUTPUTS];
  [[unroll]] for (uint j = 0u; j < OUTPUTS; ++j) acc[j] = 0.0;
  for (uint ci = 0u; ci < cg; ++ci) {
    for (uint ky = 0u; ky < p.kh; ++ky) {
      const uint iy = oy * p.stride_h + ky * p.dilation_h - p.pad_top;
      if (iy >= p.h) continue;
      const uint row = ((n * p.c + c0 + ci) * p.h + iy) * p.w;
      float window[WINDOW];
      [[unroll]] for (uint t = 0u; t < WINDOW; ++t) {
        window[t] = 0.0;
        if (ix0 + t < p.w) window[t] = X_LOAD(x[row + ix0 + t]);  // a branch: no load outside x
      }
      const uint taps = ((o * cg + ci) * p.kh + ky) * KW;
      [[unroll]] for (uint kx = 0u; kx < KW; ++kx) {
        const float weight = X_LOAD(w[taps + kx]);
        [[unroll]] for (uint j = 0u; j < OUTPUTS; ++j) {
          acc[j] = fma(window[j * SW + kx * DW], weight, acc[j]);
        }
      }
    }
  }
  // The bias added only where bound: + 0.0 would turn a -0.0 sum into 0.0.
  const bool has_bias = (p.flags & 2u) != 0u;
  const float b = has_bias ? X_LOAD(bias[o]) : 0.0;
  const uint out_row = ((n * p.c_out + o) * p.h_out + oy) * p.w_out;
  [[unroll]] for (uint j = 0u; j < OUTPUTS; ++j) {
    if (ox0 + j < p.w_out) {
      const float sum = has_bias ? acc[j] + b : acc[j];
      y[out_row + ox0 + j] = X_STORE(activate((p.flags >> 8) & 0xFFu, sum));
    }
  }
}
