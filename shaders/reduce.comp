// reduce_sum, reduce_max: a workgroup per output element; its invocations stride over
// the reduced elements and combine in shared memory. Float sums and maxima in f32,
// integer sums wrap in 32 bits (the low bits are those of the exact sum), integer maxima
// exact. Defines: X_<dtype>, OP_SUM or OP_MAX.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 64u
#include "grid.glsl"
#include "dtype.glsl"

#define WORKGROUP 64u
layout(local_size_x = 64) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { X_T y[]; };

layout(push_constant) uniform Push {
  uint base;   // the output element of workgroup 0
  uint count;  // output elements of this dispatch
  uint reduced;  // elements per output
  uint rank;
  uint mask;  // bit d: dimension d is reduced
  uint shape[8];
} p;

#if defined(X_F32) || defined(X_F16) || defined(X_BF16)
#define IS_FLOAT 1
#endif

#if defined(OP_SUM)
#define IDENTITY X_C(0)
X_C combine(X_C s, X_C v) { return s + v; }
#elif defined(IS_FLOAT)
#define IDENTITY uintBitsToFloat(0xFF800000u)
// A NaN wins, as on the host.
float combine(float s, float v) { return (isnan(v) || v > s) ? v : s; }
#elif defined(X_U8)
#define IDENTITY 0u
uint combine(uint s, uint v) { return max(s, v); }
#else
#define IDENTITY int(0x80000000u)
int combine(int s, int v) { return max(s, v); }
#endif

shared X_C partial[WORKGROUP];

void main() {
  const uint out_index = p.base + flat_workgroup();
  if (flat_workgroup() >= p.count) return;  // uniform across the workgroup
  // The offset of the first element of this output: kept coordinates, row-major.
  uint first = 0u, stride = 1u, rest = out_index;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    if ((p.mask & (1u << d)) == 0u) {
      first += (rest % p.shape[d]) * stride;
      rest /= p.shape[d];
    }
    stride *= p.shape[d];
  }
  X_C s = IDENTITY;
  for (uint r = gl_LocalInvocationID.x; r < p.reduced; r += WORKGROUP) {
    uint offset = first, st = 1u, rr = r;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      if ((p.mask & (1u << d)) != 0u) {
        offset += (rr % p.shape[d]) * st;
        rr /= p.shape[d];
      }
      st *= p.shape[d];
    }
    s = combine(s, X_LOAD(x[offset]));
  }
  partial[gl_LocalInvocationID.x] = s;
  barrier();
  for (uint half_size = WORKGROUP / 2u; half_size > 0u; half_size /= 2u) {
    if (gl_LocalInvocationID.x < half_size) {
      partial[gl_LocalInvocationID.x] =
          combine(partial[gl_LocalInvocationID.x], partial[gl_LocalInvocationID.x + half_size]);
    }
    barrier();
  }
  if (gl_LocalInvocationID.x == 0u) y[out_index] = X_STORE(partial[0]);
}
