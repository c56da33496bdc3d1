// The binary ops with NumPy broadcasting: one invocation per output element. Floats in
// f32 (pow by shaders/math.glsl), integers in int or uint (add, sub and mul wrap around
// as the dtype's store narrows them). The comparisons write u8 0 or 1.
// Defines: X_<dtype> (a and b, and y but for the comparisons), OP_<op>.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "math.glsl"

#if defined(OP_EQUAL) || defined(OP_LESS) || defined(OP_GREATER)
#define Y_U8
#endif
#include "dtype.glsl"
#ifndef Y_DTYPE
#define Y_T X_T
#define Y_STORE(c) X_STORE(c)
#endif

#if defined(X_F32) || defined(X_F16) || defined(X_BF16)
#define IS_FLOAT 1
#endif

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer A { X_T a[]; };
layout(set = 0, binding = 1) readonly buffer B { X_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { Y_T y[]; };

// The host collapses the output shape to at most 8 dimensions in which each operand
// either runs along or is broadcast (bit d of mask: a broadcasts dimension d, bit 8 + d:
// b does). The *_shift terms move an element index into a sub-range binding.
layout(push_constant) uniform Push {
  uint base;  // the output element of invocation 0
  uint count;
  uint a_shift;
  uint b_shift;
  uint y_shift;
  uint rank;
  uint mask;
  uint shape[8];
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  uint ia = 0u, ib = 0u, sa = 1u, sb = 1u, rest = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint n = p.shape[d];
    const uint c = rest % n;
    rest /= n;
    if ((p.mask & (1u << d)) == 0u) {
      ia += c * sa;
      sa *= n;
    }
    if ((p.mask & (0x100u << d)) == 0u) {
      ib += c * sb;
      sb *= n;
    }
  }
  const X_C u = X_LOAD(a[ia + p.a_shift]);
  const X_C v = X_LOAD(b[ib + p.b_shift]);
#if defined(OP_ADD)
  const X_C r = u + v;
#elif defined(OP_SUB)
  const X_C r = u - v;
#elif defined(OP_MUL)
  const X_C r = u * v;
#elif defined(OP_DIV)
  const X_C r = u / v;
#elif defined(OP_POW)
  const X_C r = pow_f32(u, v);
#elif defined(OP_MAX) && defined(IS_FLOAT)
  const X_C r = (v > u || isnan(v)) ? v : u;  // a NaN on either side wins, as on the host
#elif defined(OP_MIN) && defined(IS_FLOAT)
  const X_C r = (v < u || isnan(v)) ? v : u;
#elif defined(OP_MAX)
  const X_C r = max(u, v);
#elif defined(OP_MIN)
  const X_C r = min(u, v);
#elif defined(OP_PRELU)
  const X_C r = u < 0.0 ? v * u : u;
#elif defined(OP_EQUAL)
  const bool r = u == v;  // ordered: a NaN is unequal, neither less nor greater
#elif defined(OP_LESS)
  const bool r = u < v;
#elif defined(OP_GREATER)
  const bool r = u > v;
#endif
#ifdef Y_U8
  y[i + p.y_shift] = uint8_t(r ? 1u : 0u);
#else
  y[i + p.y_shift] = Y_STORE(r);
#endif
}
