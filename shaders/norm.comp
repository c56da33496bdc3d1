// layer_norm and rms_norm over the last dimension: a workgroup per row. layer_norm takes
// two passes (the mean, then the sum of squared deviations), as the host does, so a
// large mean does not cancel. instance_norm is layer_norm over the rows of d spatial
// elements of x [N, C, D1, ...], whose gamma and beta are per channel (row % channels).
// Defines: X_F32, X_F16 or X_BF16; RMS for rms_norm, INSTANCE for instance_norm.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 64u
#include "grid.glsl"
#include "dtype.glsl"
#include "reduce_line.glsl"

layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer Gamma { X_T gamma[]; };
layout(set = 0, binding = 2) readonly buffer Beta { X_T beta[]; };
layout(set = 0, binding = 3) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;   // the row of workgroup 0
  uint count;  // rows of this dispatch
  uint d;
  float epsilon;
  uint flags;  // bit 0: gamma is bound; bit 1: beta is bound
  uint channels;  // instance_norm's C
} p;

void main() {
  if (line_id() >= p.count) return;  // uniform across a workgroup that shares a line
  const uint row = p.base + line_id();
  const uint first = row * p.d;
#ifdef RMS
  const float mean = 0.0;
#else
  float s = 0.0;
  for (uint i = line_first(); i < p.d; i += line_step()) s += X_LOAD(x[first + i]);
  const float mean = line_sum(s) / float(p.d);
#endif
  float q = 0.0;
  for (uint i = line_first(); i < p.d; i += line_step()) {
    const float v = X_LOAD(x[first + i]) - mean;
    q += v * v;
  }
  const float inv = 1.0 / sqrt(line_sum(q) / float(p.d) + p.epsilon);
  for (uint i = line_first(); i < p.d; i += line_step()) {
    float v = (X_LOAD(x[first + i]) - mean) * inv;
#ifdef INSTANCE
    const uint k = row % p.channels;
#else
    const uint k = i;
#endif
    if ((p.flags & 1u) != 0u) v *= X_LOAD(gamma[k]);
    if ((p.flags & 2u) != 0u) v += X_LOAD(beta[k]);
    y[first + i] = X_STORE(v);
  }
}
