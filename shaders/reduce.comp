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

// 1 (CPU devices, ops/reduce.cpp): an invocation per output, no barriers (lavapipe runs a
// barrier as a switch through the whole workgroup; see reduce_line.glsl).
layout(constant_id = 0) const uint PER_INVOCATION = 0u;

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

#ifndef OP_ARGMAX
#define NONE 0u  // no index to keep
#endif

// Writes output out_index from the reduction s (argmax: its index si).
void store(uint out_index, X_C s, uint si) {
#if defined(OP_ARGMAX)
  y[out_index] = int(si);
#elif defined(OP_MEAN)
  y[out_index] = X_STORE(s / float(p.reduced));
#else
  y[out_index] = X_STORE(s);
#endif
}

void main() {
  const bool own = PER_INVOCATION != 0u;
  const uint slot = own ? flat_invocation() : flat_workgroup();
  if (slot >= p.count) return;  // uniform across a workgroup that shares an output
  const uint out_index = p.base + slot;
  const uint lid = own ? 0u : gl_LocalInvocationID.x;
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
#else
  X_C s = IDENTITY;
#endif
  uint si = NONE;
  // Reduced only along the (collapsed) last dimension, an output's elements are
  // consecutive: no division per element (a global average pool's).
  const bool consecutive = p.rank > 0u && p.mask == (1u << (p.rank - 1u));
  for (uint r = lid; r < p.reduced; r += own ? 1u : WORKGROUP) {
    uint offset = first + r;
    if (!consecutive) {
      offset = first;
      uint st = 1u, rr = r;
      for (int d = int(p.rank) - 1; d >= 0; --d) {
        if ((p.mask & (1u << d)) != 0u) {
          offset += (rr % p.shape[d]) * st;
          rr /= p.shape[d];
        }
        st *= p.shape[d];
      }
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
  if (own) {
    store(out_index, s, si);
    return;
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
#ifdef OP_ARGMAX
  if (lid == 0u) store(out_index, partial[0], partial_index[0]);
#else
  if (lid == 0u) store(out_index, partial[0], NONE);
#endif
}
