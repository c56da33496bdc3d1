// softmax along an axis: a workgroup per line of n elements (stride `inner` apart): the
// line's max, then the f32 sum of exp(x - max), then the quotients. With LOG,
// log_softmax: (x - max) - log(sum), e^ and log by shaders/math.glsl (within 1.5 and 1
// ulps) so that the result's error is the sum's and the two roundings.
// Defines: X_F32, X_F16 or X_BF16; LOG.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 64u
#include "grid.glsl"
#ifdef LOG
#include "math.glsl"
#endif
#include "dtype.glsl"
#include "reduce_line.glsl"

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;   // the line of workgroup 0
  uint count;  // lines of this dispatch
  uint n;
  uint inner;  // the product of the dimensions after the axis
} p;

void main() {
  if (line_id() >= p.count) return;  // uniform across a workgroup that shares a line
  const uint line = p.base + line_id();
  const uint first = (line / p.inner) * p.n * p.inner + line % p.inner;
  float m = uintBitsToFloat(0xFF800000u);
  for (uint i = line_first(); i < p.n; i += line_step()) {
    const float v = X_LOAD(x[first + i * p.inner]);
    if (isnan(v) || v > m) m = v;
  }
  m = line_max(m);
  float s = 0.0;
#ifdef LOG
  for (uint i = line_first(); i < p.n; i += line_step()) {
    s += exp_f32(X_LOAD(x[first + i * p.inner]) - m);
  }
  const float log_sum = log_f32(line_sum(s));
  for (uint i = line_first(); i < p.n; i += line_step()) {
    y[first + i * p.inner] = X_STORE((X_LOAD(x[first + i * p.inner]) - m) - log_sum);
  }
#else
  for (uint i = line_first(); i < p.n; i += line_step()) {
    s += exp(X_LOAD(x[first + i * p.inner]) - m);
  }
  s = line_sum(s);
  for (uint i = line_first(); i < p.n; i += line_step()) {
    y[first + i * p.inner] = X_STORE(exp(X_LOAD(x[first + i * p.inner]) - m) / s);
  }
#endif
}
