// gather along one axis: y viewed as [outer, indices, inner] reads x [outer, axis_size,
// inner] at the index indices[j] (negative ones count from the end); an index outside
// [-axis_size, axis_size) gives zeros, as the CPU device. One invocation per output
// element; values are moved: one module per element size. Defines: X_U8, X_I16 or X_I32.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer Indices { int indices[]; };
layout(set = 0, binding = 2) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint inner;
  uint axis_size;
  uint index_count;
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const uint k = i % p.inner, rows = i / p.inner;
  const uint j = rows % p.index_count, outer = rows / p.index_count;
  int at = indices[j];
  if (at < 0) at += int(p.axis_size);
  const bool inside = at >= 0 && at < int(p.axis_size);
  y[i] = inside ? x[(outer * p.axis_size + uint(at)) * p.inner + k] : X_T(0);
}
