// conv2d as a matmul (ops/conv2d.cpp), its first step: the columns of a chunk of NCHW
// images. col(i, g), one matrix per image i of the chunk and group g, has a row per
// (channel ci of the group, kernel tap ky, kx) and a column per output position
// (oy, ox): x's value under that tap, 0 where the tap falls in the padding. Rows past
// cg kh kw and columns past h_out w_out are 0 as well, so that the matmul may load 8 of
// them at a time (k_rows and p_cols are multiples of 8).
//
// An invocation writes the w_out columns of one output row oy in one matrix row: its
// divisions are paid once per row, not per element (lavapipe runs a vector's integer
// divisions lane by lane), and on CPU devices, where w_out is a multiple of 8, stores 8
// columns at a time (VEC8). The invocation of the last output row also writes the columns
// past h_out w_out. Values are moved, never converted: one module per element size.
// Defines: X_I16 or X_I32 (2 or 4 bytes).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Col { X_T col[]; };

// 1 (CPU devices, w_out a multiple of 8; ops/conv2d.cpp): 8 columns stored at a time, as
// vectors (shaders/vec8.glsl).
layout(constant_id = 0) const uint VEC8 = 0u;
#include "vec8.glsl"
layout(set = 0, binding = 0) readonly buffer XVec { X_VEC8 x_vec[]; };
layout(set = 0, binding = 1) writeonly buffer ColVec { X_VEC8 col_vec[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;  // invocations: matrices (images x groups) x k_rows x h_out
  uint image0;  // the chunk's first image
  uint c, h, w;  // x's channels (every group's), height and width
  uint groups;
  uint kh, kw, h_out, w_out;
  uint stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  uint k_rows, p_cols;
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const uint oy = i % p.h_out;
  const uint row = (i / p.h_out) % p.k_rows;
  const uint matrix = i / (p.h_out * p.k_rows);  // image (from image0) x groups + group
  const uint cg = p.c / p.groups;
  const uint taps = p.kh * p.kw;
  const uint ci = row / taps;
  const uint ky = (row % taps) / p.kw;
  const uint kx = row % p.kw;
  // Unsigned wrap-around makes a row above the padding "too large": one test each.
  const uint iy = oy * p.stride_h + ky * p.dilation_h - p.pad_top;
  const bool row_in = ci < cg && iy < p.h;
  const uint x_row = ((p.image0 * p.groups + matrix) * cg + ci) * p.h * p.w + iy * p.w;
  const uint out_row = (matrix * p.k_rows + row) * p.p_cols + oy * p.w_out;
  uint ix = kx * p.dilation_w - p.pad_left;
#if defined(X_VEC8)
  if (VEC8 != 0u) {
    // w_out is a multiple of 8: the output row is whole eights, each stored as vectors;
    // with stride 1 an eight whose inputs all lie in x at a multiple of 8 loads so too.
    for (uint ox = 0u; ox < p.w_out; ox += 8u, ix += 8u * p.stride_w) {
      X_C v[8];
      if (row_in && p.stride_w == 1u && ix + 8u <= p.w && (x_row + ix) % 8u == 0u) {
        X_LOAD8(x_vec, x_row + ix, v);
      } else {
        [[unroll]] for (uint e = 0u; e < 8u; ++e) {
          const uint at = ix + e * p.stride_w;
          v[e] = X_C(0);
          if (row_in && at < p.w) v[e] = X_LOAD(x[x_row + at]);
        }
      }
      X_STORE8(col_vec, out_row + ox, v);
    }
    return;  // no columns past h_out w_out: it is a multiple of 8
  }
#endif
  for (uint ox = 0u; ox < p.w_out; ++ox, ix += p.stride_w) {
    X_T v = X_T(0);
    if (row_in && ix < p.w) v = x[x_row + ix];  // a branch: no load outside x
    col[out_row + ox] = v;
  }
  if (oy == p.h_out - 1u) {
    for (uint pc = p.h_out * p.w_out; pc < p.p_cols; ++pc) {
      col[(matrix * p.k_rows + row) * p.p_cols + pc] = X_T(0);
    }
  }
}
