// where: cond != 0 ? a : b with NumPy broadcasting of the three, one invocation per
// output element; elements are moved as bits (X_U8, X_I16 or X_I32 by their width).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer C { uint8_t cond[]; };
layout(set = 0, binding = 1) readonly buffer A { X_T a[]; };
layout(set = 0, binding = 2) readonly buffer B { X_T b[]; };
layout(set = 0, binding = 3) writeonly buffer Y { X_T y[]; };

// As binary.comp's, with three operands: bit d of mask, cond broadcasts dimension d;
// bit 8 + d, a does; bit 16 + d, b does.
layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint c_shift;
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
  uint ic = 0u, ia = 0u, ib = 0u, sc = 1u, sa = 1u, sb = 1u, rest = i;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const uint n = p.shape[d];
    const uint c = rest % n;
    rest /= n;
    if ((p.mask & (1u << d)) == 0u) {
      ic += c * sc;
      sc *= n;
    }
    if ((p.mask & (0x100u << d)) == 0u) {
      ia += c * sa;
      sa *= n;
    }
    if ((p.mask & (0x10000u << d)) == 0u) {
      ib += c * sb;
      sb *= n;
    }
  }
  y[i + p.y_shift] = uint(cond[ic + p.c_shift]) != 0u ? a[ia + p.a_shift] : b[ib + p.b_shift];
}
