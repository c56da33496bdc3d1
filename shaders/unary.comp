// relu, gelu, silu: one invocation per element.
// Defines: X_<dtype> (x and y alike), OP_RELU / OP_GELU / OP_SILU.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "activation.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint x_shift;  // moves an element index into the sub-range bindings
  uint y_shift;
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const X_C v = X_LOAD(x[i + p.x_shift]);
#if defined(OP_RELU)
  const X_C r = v < X_C(0) ? X_C(0) : v;
#elif defined(OP_GELU)
  const X_C r = gelu(v);
#elif defined(OP_SILU)
  const X_C r = silu(v);
#endif
  y[i + p.y_shift] = X_STORE(r);
}
