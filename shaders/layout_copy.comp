// Strided copies for reshape, slice, expand and concat (one dispatch per input, each a
// block of the output): one invocation per element of a box of p.extent, which reads x at
// src_base + sum(c_d * src_stride_d) (a negative stride walks backwards, as slice's
// negative steps; 0 repeats, as expand) and writes y at dst_base + sum(c_d * dst_stride_d).
// Values are moved, never converted: one module per element size. Defines: X_U8, X_I16
// or X_I32 (1, 2, 4 bytes).
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint rank;
  int src_base;
  uint dst_base;
  uint extent[8];
  int src_stride[8];
  uint dst_stride[8];
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  uint rest = p.base + g;
  int from = p.src_base;
  uint to = p.dst_base;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint c = rest % p.extent[d];
    rest /= p.extent[d];
    from += int(c) * p.src_stride[d];
    to += c * p.dst_stride[d];
  }
  y[to] = x[from];
}
