// add, sub, mul, div with NumPy broadcasting: one invocation per output element.
// Defines: X_<dtype> (a, b and y alike), OP_ADD / OP_SUB / OP_MUL / OP_DIV.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer A { X_T a[]; };
layout(set = 0, binding = 1) readonly buffer B { X_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Y { X_T y[]; };

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
#endif
  y[i + p.y_shift] = X_STORE(r);
}
