// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod and argmax: a workgroup
// per output element; its invocations stride over the reduced elements and combine in
// shared memory. Float sums, products, maxima and minima in f32 (a NaN wins the maxima
// and minima, as on the host); integer sums and products wrap in 32 bits (their low
// bits are those of the exact result), integer maxima and minima exact. argmax keeps
// (value, index) pairs: the host reduces one axis, so a reduced element's rank is its
// index along it. Defines: X_<dtype>, OP_SUM, OP_MEAN, OP_MAX, OP_MIN, OP_PROD or
// OP_ARGMAX (with Y_I32).
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 64u
#include "grid.glsl"
#include "dtype.glsl"

#define WORKGROUP 64u
layout(local_size_x = 64) in;

#ifdef OP_ARGMAX
#define OUT_T int
#else
#define OUT_T X_T
#endif

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { OUT_T y[]; };

layout(push_constant) uniform Push {
  uint base;   // the output element of workgroup 0
  uint count;  // output elements of this dispatch
  uint reduced;  // elements per output
  uint rank;
  uint mask;   // bit d: dimension d is reduced
  uint flags;  // argmax: bit 0, select_last_index
  uint shape[8];
} p;

#if defined(X_F32) || defined(X_F16) || defined(X_BF16)
#define IS_FLOAT 1
#endif

#if defined(OP_SUM) || defined(OP_MEAN)
#define IDENTITY X_C(0)
X_C combine(X_C s, X_C v) { return s + v; }
#elif defined(OP_PROD)
#define IDENTITY X_C(1)
X_C combine(X_C s, X_C v) { return s * v; }
#elif defined(OP_ARGMAX)
// An index of NONE: an invocation that saw no element; it loses to every element.
#define NONE 0xFFFFFFFFu
// Whether (v, i) beats (s, j): the larger value, a NaN above every number; among equals
// (or NaNs) the first index, or the last with select_last_index.
bool beats(X_C v, uint i, X_C s, uint j) {
  if (j == NONE) return true;
  if (i == NONE) return false;
  const bool last = (p.flags & 1u) != 0u;
#ifdef IS_FLOAT
  if (isnan(v) || isnan(s)) {
    if (!isnan(s)) return true;
    if (!isnan(v)) return false;
    return last ? i > j : i < j;
  }
#endif
  if (v != s) return v > s;
  return last ? i > j : i < j;
}
#elif defined(IS_FLOAT) && defined(OP_MAX)
#define IDENTITY uintBitsToFloat(0xFF800000u)
float combine(float s, float v) { return (isnan(v) || v > s) ? v : s; }
#elif defined(IS_FLOAT)
#define IDENTITY uintBitsToFloat(0x7F800000u)
float combine(float s, float v) { return (isnan(v) || v < s) ? v : s; }
#elif defined(X_U8) && defined(OP_MAX)
#define IDENTITY 0u
uint combine(uint s, uint v) { return max(s, v); }
#elif defined(X_U8)
#define IDENTITY 0xFFu
uint combine(uint s, uint v) { return min(s, v); }
#elif defined(OP_MAX)
#define IDENTITY int(0x80000000u)
int combine(int s, int v) { return max(s, v); }
#else
#define IDENTITY 0x7FFFFFFF
int combine(int s, int v) { return min(s, v); }
#endif

shared X_C partial[WORKGROUP];
#ifdef OP_ARGMAX
shared uint partial_index[WORKGROUP];
#endif

void main() {
  const uint out_index = p.base + flat_workgroup();
  if (flat_workgroup() >= p.count) return;  // uniform across the workgroup
  const uint lid = gl_LocalInvocationID.x;
  // The offset of the first element of this output: kept coordinates, row-major.
  uint first = 0u, stride = 1u, rest = out_index;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    if ((p.mask & (1u << d)) == 0u) {
      first += (rest % p.shape[d]) * stride;
      rest /= p.shape[d];
    }
    stride *= p.shape[d];
  }
#ifdef OP_ARGMAX
  X_C s = X_C(0);
  uint si = NONE;
#else
  X_C s = IDENTITY;
#endif
  for (uint r = lid; r < p.reduced; r += WORKGROUP) {
    uint offset = first, st = 1u, rr = r;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      if ((p.mask & (1u << d)) != 0u) {
        offset += (rr % p.shape[d]) * st;
        rr /= p.shape[d];
      }
      st *= p.shape[d];
    }
#ifdef OP_ARGMAX
    const X_C v = X_LOAD(x[offset]);
    if (beats(v, r, s, si)) {
      s = v;
      si = r;
    }
#else
    s = combine(s, X_LOAD(x[offset]));
#endif
  }
  partial[lid] = s;
#ifdef OP_ARGMAX
  partial_index[lid] = si;
#endif
  barrier();
  for (uint half_size = WORKGROUP / 2u; half_size > 0u; half_size /= 2u) {
    if (lid < half_size) {
#ifdef OP_ARGMAX
      if (beats(partial[lid + half_size], partial_index[lid + half_size], partial[lid],
                partial_index[lid])) {
        partial[lid] = partial[lid + half_size];
        partial_index[lid] = partial_index[lid + half_size];
      }
#else
      partial[lid] = combine(partial[lid], partial[lid + half_size]);
#endif
    }
    barrier();
  }
  if (lid != 0u) return;
#if defined(OP_ARGMAX)
  y[out_index] = int(partial_index[0]);
#elif defined(OP_MEAN)
  y[out_index] = X_STORE(partial[0] / float(p.reduced));
#else
  y[out_index] = X_STORE(partial[0]);
#endif
}
