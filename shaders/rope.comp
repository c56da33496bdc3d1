// rope with a precomputed table: one invocation per pair of a row [..., S, D]; the
// features past 2R are copied by the invocations of pairs i < D - 2R.
// Defines: X_F32, X_F16 or X_BF16.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) readonly buffer Cos { float cos_table[]; };
layout(set = 0, binding = 2) readonly buffer Sin { float sin_table[]; };
layout(set = 0, binding = 3) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;  // rows * lanes of this dispatch
  uint s;
  uint d;
  uint r;
  uint lanes;  // per row: max(R, D - 2R)
  uint interleaved;
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const uint row = i / p.lanes;
  const uint lane = i % p.lanes;
  const uint first = row * p.d;
  if (lane < p.r) {
    const uint at = (row % p.s) * p.r + lane;
    const float c = cos_table[at];
    const float sn = sin_table[at];
    const uint i0 = first + (p.interleaved != 0u ? 2u * lane : lane);
    const uint i1 = i0 + (p.interleaved != 0u ? 1u : p.r);
    const float x0 = X_LOAD(x[i0]);
    const float x1 = X_LOAD(x[i1]);
    y[i0] = X_STORE(x0 * c - x1 * sn);
    y[i1] = X_STORE(x1 * c + x0 * sn);
  }
  const uint tail = 2u * p.r + lane;
  if (tail < p.d) y[first + tail] = x[first + tail];
}
