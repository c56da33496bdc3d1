// max_pool (OP_MAX) and avg_pool (OP_AVG) over the last three dimensions of planes
// [N * C, D1, D2, D3] (1-D and 2-D pooling run with leading dimensions of size 1): one
// invocation per output element walking its window, as the CPU device computes it:
// padding is never read; max takes the first tap, then a larger value or a NaN, and an
// empty window gives 0; avg sums its taps in f32 and divides by their count, or with
// count_include_pad by the taps inside the padded extent. Defines: X_<dtype>, OP_MAX or
// OP_AVG (floats only).
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
  uint count_include_pad;
  uint in_extent[3];
  uint out_extent[3];
  uint kernel[3];
  uint stride[3];
  uint pad_begin[3];
  uint pad_end[3];
  uint dilation[3];
} p;

// The input index of tap t of output index o along axis a (may fall in the padding).
int tap_index(uint a, uint o, uint t) {
  return int(o * p.stride[a] + t * p.dilation[a]) - int(p.pad_begin[a]);
}

bool inside(uint a, int index) { return index >= 0 && index < int(p.in_extent[a]); }

// The taps of output index o along axis a inside the padded extent.
uint padded_taps(uint a, uint o) {
  uint n = 0u;
  for (uint t = 0u; t < p.kernel[a]; ++t) {
    const int index = tap_index(a, o, t);
    if (index >= -int(p.pad_begin[a]) && index < int(p.in_extent[a] + p.pad_end[a])) ++n;
  }
  return n;
}

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  uint o[3];
  uint rest = i;
  for (int a = 2; a >= 0; --a) {
    o[a] = rest % p.out_extent[a];
    rest /= p.out_extent[a];
  }
  const uint plane = rest * p.in_extent[0] * p.in_extent[1] * p.in_extent[2];
  uint taps = 0u;
#if defined(OP_MAX)
  X_C best = X_C(0);
#else
  float sum = 0.0;
#endif
  for (uint t0 = 0u; t0 < p.kernel[0]; ++t0) {
    const int i0 = tap_index(0u, o[0], t0);
    if (!inside(0u, i0)) continue;
    for (uint t1 = 0u; t1 < p.kernel[1]; ++t1) {
      const int i1 = tap_index(1u, o[1], t1);
      if (!inside(1u, i1)) continue;
      for (uint t2 = 0u; t2 < p.kernel[2]; ++t2) {
        const int i2 = tap_index(2u, o[2], t2);
        if (!inside(2u, i2)) continue;
        const uint at = plane + (uint(i0) * p.in_extent[1] + uint(i1)) * p.in_extent[2] + uint(i2);
        const X_C v = X_LOAD(x[at]);
#if defined(OP_MAX)
        // v != v: a NaN wins, as the CPU device's max_pool and NumPy's max.
        if (taps == 0u || v > best || v != v) best = v;
#else
        sum += v;
#endif
        ++taps;
      }
    }
  }
#if defined(OP_MAX)
  y[i] = X_STORE(best);
#else
  const uint n = p.count_include_pad != 0u
                     ? padded_taps(0u, o[0]) * padded_taps(1u, o[1]) * padded_taps(2u, o[2])
                     : taps;
  y[i] = X_STORE(n == 0u ? 0.0 : sum / float(n));
#endif
}
