// matmul of one row (M = 1) on CPU devices: y [1 x n] = a [1 x k] x b (+ bias),
// activated, summed in f32 and rounded once, as the matmul kernels do. A 128 x 128 tile
// computes 64 rows for the one (and, with b transposed, loads b element by element):
// a classifier's [1 x 1280] x [1000 x 1280]^T ran at 0.6 GFLOP/s on lavapipe.
// - b transposed ([n x k], TB): an invocation per output, a dot product of a with a row
//   of b, 8 elements per load where the rows allow (VEC).
// - b as is ([k x n]): an invocation per 8 outputs, each step of k loading 8 columns of
//   b's row (VEC) and one value of a.
// Defines: X_<dtype> for a and b, Y_<dtype> for the output and the bias.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define GRID_WORKGROUP 64u
#include "grid.glsl"
#include "activation.glsl"
#include "dtype.glsl"
#include "vec8.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

// 1: b is stored [n x k].
layout(constant_id = 0) const uint TB = 0u;
// 1: the loads take 8 elements (shaders/vec8.glsl): TB, k and the shifts of a and b
// multiples of 8; not TB, n and b's shift multiples of 8.
layout(constant_id = 1) const uint VEC = 0u;

layout(set = 0, binding = 0) readonly buffer A { X_T a[]; };
layout(set = 0, binding = 1) readonly buffer B { X_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { Y_T y[]; };
layout(set = 0, binding = 3) readonly buffer Bias { Y_T bias[]; };
layout(set = 0, binding = 0) readonly buffer AVec { X_VEC8 a_vec[]; };
layout(set = 0, binding = 1) readonly buffer BVec { X_VEC8 b_vec[]; };

layout(push_constant) uniform Push {
  uint n;
  uint k;
  uint a_shift, b_shift, y_shift, bias_shift;  // as the matmul's (ops/matmul.cpp)
  uint bias_cs;                                // 1: a bias per column; 0: one value
  uint flags;                                  // the activation in bits 0..7; bit 8: a bias
} p;

void store(uint col, float sum) {
  if ((p.flags & 0x100u) != 0u) sum += Y_LOAD(bias[p.bias_shift + col * p.bias_cs]);
  y[p.y_shift + col] = Y_STORE(activate(p.flags & 0xFFu, sum));
}

void main() {
  if (TB != 0u) {
    const uint col = flat_invocation();
    if (col >= p.n) return;
    const uint row = p.b_shift + col * p.k;
    float sum = 0.0;
    if (VEC != 0u) {
      for (uint kk = 0u; kk < p.k; kk += 8u) {
        X_C av[8], bv[8];
        X_LOAD8(a_vec, p.a_shift + kk, av);
        X_LOAD8(b_vec, row + kk, bv);
        [[unroll]] for (uint e = 0u; e < 8u; ++e) sum = fma(av[e], bv[e], sum);
      }
    } else {
      for (uint kk = 0u; kk < p.k; ++kk) {
        sum = fma(X_LOAD(a[p.a_shift + kk]), X_LOAD(b[row + kk]), sum);
      }
    }
    store(col, sum);
    return;
  }
  const uint col0 = 8u * flat_invocation();
  if (col0 >= p.n) return;
  float acc[8];
  [[unroll]] for (uint e = 0u; e < 8u; ++e) acc[e] = 0.0;
  for (uint kk = 0u; kk < p.k; ++kk) {
    const float av = X_LOAD(a[p.a_shift + kk]);
    X_C bv[8];
    if (VEC != 0u) {
      X_LOAD8(b_vec, p.b_shift + kk * p.n + col0, bv);
    } else {
      // Columns past n read the last one; their sums are not stored.
      [[unroll]] for (uint e = 0u; e < 8u; ++e) {
        bv[e] = X_LOAD(b[p.b_shift + kk * p.n + min(col0 + e, p.n - 1u)]);
      }
    }
    [[unroll]] for (uint e = 0u; e < 8u; ++e) acc[e] = fma(av, bv[e], acc[e]);
  }
  [[unroll]] for (uint e = 0u; e < 8u; ++e) {
    if (col0 + e < p.n) store(col0 + e, acc[e]);
  }
}
