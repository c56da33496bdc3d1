// transpose: one invocation per output element; values are moved, never converted, so
// there is one module per element size. Defines: X_U8, X_I16 or X_I32 (1, 2, 4 bytes).
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
  uint shape[8];   // the output's
  uint stride[8];  // the input's stride of each output dimension
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  uint from = 0u, rest = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    from += (rest % p.shape[d]) * p.stride[d];
    rest /= p.shape[d];
  }
  y[i] = x[from];
}
