// pad (constant, reflect, edge) and tile (wrap) of x: one invocation per output element.
// Output index o of dimension d reads index o - begin_d of x, mapped back into x by the
// mode when it falls outside (a constant pad writes p.fill, the constant's bits in x's
// dtype, instead). Values are moved, never converted: one module per element size.
// Defines: X_U8, X_I16 or X_I32 (1, 2, 4 bytes).
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { X_T y[]; };

const uint kConstant = 0u, kReflect = 1u, kEdge = 2u, kWrap = 3u;

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint rank;
  uint mode;
  uint fill;
  uint out_extent[8];
  uint in_extent[8];
  int begin[8];
} p;

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  uint rest = i, from = 0u, stride = 1u;
  bool outside = false;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    const int n = int(p.in_extent[d]);
    int s = int(rest % p.out_extent[d]) - p.begin[d];
    rest /= p.out_extent[d];
    if (p.mode == kWrap) {
      s %= n;
    } else if (s < 0 || s >= n) {
      // The rules keep reflected pads shorter than the dimension: one reflection reaches x.
      if (p.mode == kReflect) s = s < 0 ? -s : 2 * (n - 1) - s;
      else if (p.mode == kEdge) s = clamp(s, 0, n - 1);
      else outside = true;
    }
    from += uint(s) * stride;
    stride *= p.in_extent[d];
  }
  y[i] = outside ? X_T(p.fill) : x[from];
}
