// resize, one pass along one dimension (ops/resize.cpp runs a pass per resized dimension,
// as the CPU device does, from the same taps: phx/op_geometry.h): src [outer, in, inner]
// into dst [outer, out, inner]. Output index o of the dimension takes its tap's
// w_lo * src[lo] + w_hi * src[hi], or src[lo] alone where w_hi is 0, in f32 with the two
// products rounded before the sum (precise: no fused multiply-add), as on the host, so
// that both devices give the same bits. Defines: X_<dtype> (src), Y_<dtype> (dst): x's
// dtype or f32 between passes.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

struct Tap {
  int lo;
  int hi;
  float w_lo;
  float w_hi;
};

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer Taps { Tap taps[]; };
layout(set = 0, binding = 2) writeonly buffer Y { Y_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint inner;
  uint in_extent;
  uint out_extent;
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const uint k = i % p.inner, rows = i / p.inner;
  const Tap t = taps[rows % p.out_extent];
  const uint at = (rows / p.out_extent) * p.in_extent * p.inner + k;
  const float lo = X_LOAD(x[at + uint(t.lo) * p.inner]);
  float v = lo;
  if (t.w_hi != 0.0) {
    const float hi = X_LOAD(x[at + uint(t.hi) * p.inner]);
    precise const float sum = t.w_lo * lo + t.w_hi * hi;
    v = sum;
  }
  y[i] = Y_STORE(v);
}
