// Strided copies for reshape, slice, expand and concat (one dispatch per input, each a
// block of the output): one invocation per element (or per 8, VEC8 below) of a box of
// p.extent, which reads x at
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

// 1: an invocation moves 8 consecutive elements as vectors (shaders/vec8.glsl), which
// ops/layout.cpp sets on CPU devices for 4- and 2-byte elements when the innermost
// dimension is contiguous in both and every eight lies at a multiple of 8 in both.
layout(constant_id = 0) const uint VEC8 = 0u;
#if !defined(X_U8)
#include "vec8.glsl"
layout(set = 0, binding = 0) readonly buffer XVec { X_VEC8 x_vec[]; };
layout(set = 0, binding = 1) writeonly buffer YVec { X_VEC8 y_vec[]; };
#endif

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

// Where box element i is read from and written to.
void box_indices(uint i, out int from, out uint to) {
  uint rest = i;
  from = p.src_base;
  to = p.dst_base;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint c = rest % p.extent[d];
    rest /= p.extent[d];
    from += int(c) * p.src_stride[d];
    to += c * p.dst_stride[d];
  }
}

void main() {
  if (VEC8 == 0u) {
    const uint g = flat_invocation();
    if (g >= p.count) return;
    int from;
    uint to;
    box_indices(p.base + g, from, to);
    y[to] = x[from];
    return;
  }
#if defined(X_VEC8)
  // Eight elements from 8 g, consecutive in both x and y (the innermost extent, the bases
  // and the outer strides are multiples of 8, its strides 1).
  const uint first = 8u * flat_invocation();
  if (first >= p.count) return;
  int from;
  uint to;
  box_indices(p.base + first, from, to);
  X_COPY8(y_vec, to, x_vec, uint(from));
#endif
}
