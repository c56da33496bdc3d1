// batch_norm (inference): one invocation per element of x [N, C, ...]:
// (x - mean) * (1 / sqrt(var + epsilon)) * scale + bias with the channel's parameters,
// in f32 as the host computes it. Defines: X_F32, X_F16 or X_BF16.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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

// 1: an invocation takes 8 consecutive elements of one channel (shaders/vec8.glsl), which
// ops/softmax_norm.cpp sets on CPU devices when the spatial size, a dispatch's first
// element and the shifts are multiples of 8.
layout(constant_id = 0) const uint VEC8 = 0u;
#include "vec8.glsl"
layout(set = 0, binding = 0) readonly buffer XVec { X_VEC8 x_vec[]; };
layout(set = 0, binding = 5) writeonly buffer YVec { X_VEC8 y_vec[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint x_shift;  // moves an element index into the sub-range bindings
  uint y_shift;
  uint channels;
  uint spatial;  // elements per (n, c)
  float epsilon;
} p;

// Channel c's normalization of one value.
struct Channel {
  float mean, inv, scale, bias;
};

Channel channel(uint c) {
  // sqrt and 1 / x within an ulp each on any device (math.glsl).
  const float inv = reciprocal_f32(sqrt_f32(X_LOAD(var[c]) + p.epsilon));
  return Channel(X_LOAD(mean[c]), inv, X_LOAD(scale[c]), X_LOAD(bias[c]));
}

float normalized(Channel ch, float x) { return ((x - ch.mean) * ch.inv) * ch.scale + ch.bias; }

void main() {
  if (VEC8 == 0u) {
    const uint g = flat_invocation();
    if (g >= p.count) return;
    const uint i = p.base + g;
    const Channel ch = channel((i / p.spatial) % p.channels);
    y[i + p.y_shift] = X_STORE(normalized(ch, X_LOAD(x[i + p.x_shift])));
    return;
  }
#if defined(X_VEC8)
  // Eight elements from 8 g, all of one channel (spatial is a multiple of 8): its
  // parameters loaded once, the values as vectors.
  const uint first = 8u * flat_invocation();
  if (first >= p.count) return;
  const uint i = p.base + first;
  const Channel ch = channel((i / p.spatial) % p.channels);
  X_C v[8];
  X_LOAD8(x_vec, i + p.x_shift, v);
  [[unroll]] for (uint e = 0u; e < 8u; ++e) v[e] = normalized(ch, v[e]);
  X_STORE8(y_vec, i + p.y_shift, v);
#endif
}
