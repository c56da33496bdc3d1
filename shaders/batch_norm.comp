// batch_norm (inference): one invocation per element of x [N, C, ...]:
// (x - mean) * (1 / sqrt(var + epsilon)) * scale + bias with the channel's parameters,
// in f32 as the host computes it. Defines: X_F32, X_F16 or X_BF16.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "math.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer Scale { X_T scale[]; };
layout(set = 0, binding = 2) readonly buffer Bias { X_T bias[]; };
layout(set = 0, binding = 3) readonly buffer Mean { X_T mean[]; };
layout(set = 0, binding = 4) readonly buffer Var { X_T var[]; };
layout(set = 0, binding = 5) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint x_shift;  // moves an element index into the sub-range bindings
  uint y_shift;
  uint channels;
  uint spatial;  // elements per (n, c)
  float epsilon;
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const uint c = (i / p.spatial) % p.channels;
  // sqrt and 1 / x within an ulp each on any device (math.glsl).
  const float inv = reciprocal_f32(sqrt_f32(X_LOAD(var[c]) + p.epsilon));
  const float v = (X_LOAD(x[i + p.x_shift]) - X_LOAD(mean[c])) * inv;
  y[i + p.y_shift] = X_STORE(v * X_LOAD(scale[c]) + X_LOAD(bias[c]));
}
