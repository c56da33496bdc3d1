// The binary ops with NumPy broadcasting: one invocation per output element (or per 8,
// EIGHT below). Floats in
// f32 (pow by shaders/math.glsl), integers in int or uint (add, sub and mul wrap around
// as the dtype's store narrows them). The comparisons write u8 0 or 1.
// Defines: X_<dtype> (a and b, and y but for the comparisons), OP_<op>.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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

// How many outputs an invocation takes (ops/binary.cpp sets it on CPU devices, where the
// per-lane loads and the divisions of the indices cost): 0, one; 1, eight moved as vectors
// (shaders/vec8.glsl: an output of x's 4- or 2-byte dtype, the innermost dimension's size,
// the first output and every shift multiples of 8); 2, eight one by one, the operands'
// indices computed for the first and stepped along the innermost dimension.
layout(constant_id = 0) const uint EIGHT = 0u;
#if !defined(Y_U8) && !defined(X_I8) && !defined(X_U8)
#include "vec8.glsl"
layout(set = 0, binding = 0) readonly buffer AVec { X_VEC8 a_vec[]; };
layout(set = 0, binding = 1) readonly buffer BVec { X_VEC8 b_vec[]; };
layout(set = 0, binding = 2) writeonly buffer YVec { X_VEC8 y_vec[]; };
#endif

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

#if defined(Y_U8)
#define R_T bool
#else
#define R_T X_C
#endif

// The op on one pair.
R_T binary(const X_C u, const X_C v) {
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
  return r;
}

void store_result(uint at, R_T r) {
#ifdef Y_U8
  y[at] = uint8_t(r ? 1u : 0u);
#else
  y[at] = Y_STORE(r);
#endif
}

// The elements of a and b that output element i reads (before the shifts).
void operand_indices(uint i, out uint ia, out uint ib) {
  uint sa = 1u, sb = 1u, rest = i;
  ia = 0u;
  ib = 0u;
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
}

void main() {
  if (EIGHT == 2u) {
    const uint first = 8u * flat_invocation();
    if (first >= p.count) return;
    uint i = p.base + first;
    uint ia, ib;
    operand_indices(i, ia, ib);
    const uint inner = p.rank - 1u;
    const uint row = p.rank > 0u ? p.shape[inner] : 1u;
    const uint a_step = p.rank > 0u && (p.mask & (1u << inner)) == 0u ? 1u : 0u;
    const uint b_step = p.rank > 0u && (p.mask & (0x100u << inner)) == 0u ? 1u : 0u;
    uint c = i % row;
    // Not unrolled (see unary.comp): pow's exact steps need their NoContraction.
    for (uint at = first; at < min(first + 8u, p.count); ++at, ++i) {
      store_result(i + p.y_shift, binary(X_LOAD(a[ia + p.a_shift]), X_LOAD(b[ib + p.b_shift])));
      if (++c == row) {  // the next output starts a row: its indices afresh
        c = 0u;
        operand_indices(i + 1u, ia, ib);
      } else {
        ia += a_step;
        ib += b_step;
      }
    }
    return;
  }
  if (EIGHT == 0u) {
    const uint g = flat_invocation();
    if (g >= p.count) return;
    const uint i = p.base + g;
    uint ia, ib;
    operand_indices(i, ia, ib);
    store_result(i + p.y_shift, binary(X_LOAD(a[ia + p.a_shift]), X_LOAD(b[ib + p.b_shift])));
    return;
  }
#if defined(X_VEC8)
  // Eight outputs from 8 g, all in one row of the innermost dimension (its size a
  // multiple of 8): an operand that runs along it loads 8 values, one broadcast along it
  // loads one.
  const uint first = 8u * flat_invocation();
  if (first >= p.count) return;
  const uint i = p.base + first;
  uint ia, ib;
  operand_indices(i, ia, ib);
  const uint inner = p.rank - 1u;
  X_C u[8], v[8];
  if ((p.mask & (1u << inner)) == 0u) {
    X_LOAD8(a_vec, ia + p.a_shift, u);
  } else {
    const X_C one = X_LOAD(a[ia + p.a_shift]);
    [[unroll]] for (uint e = 0u; e < 8u; ++e) u[e] = one;
  }
  if ((p.mask & (0x100u << inner)) == 0u) {
    X_LOAD8(b_vec, ib + p.b_shift, v);
  } else {
    const X_C one = X_LOAD(b[ib + p.b_shift]);
    [[unroll]] for (uint e = 0u; e < 8u; ++e) v[e] = one;
  }
  X_C r[8];
  // Not unrolled here (see unary.comp): pow's exact steps need their NoContraction.
  for (uint e = 0u; e < 8u; ++e) r[e] = binary(u[e], v[e]);
  X_STORE8(y_vec, i + p.y_shift, r);
#endif
}
