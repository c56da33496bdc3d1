// The unary ops: one invocation per element (or per 8, VEC8 below), computed in X_C (f32
// for the floats, shaders/math.glsl; int or uint for the integers, where neg and abs wrap
// around as the dtype's store narrows them). Defines: X_<dtype> (x and y alike), OP_<op>.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "math.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { X_T y[]; };

// 1: an invocation takes 8 consecutive elements (shaders/vec8.glsl; ops/op_util.h,
// record_elementwise_map, sets it on CPU devices for 4- and 2-byte dtypes whose element
// indices and shifts allow).
layout(constant_id = 0) const uint VEC8 = 0u;
#if !defined(X_I8) && !defined(X_U8)  // 1-byte dtypes: one element per invocation only
#include "vec8.glsl"
layout(set = 0, binding = 0) readonly buffer XVec { X_VEC8 x_vec[]; };
layout(set = 0, binding = 1) writeonly buffer YVec { X_VEC8 y_vec[]; };
#endif

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint x_shift;  // moves an element index into the sub-range bindings
  uint y_shift;
  // The op's parameters as bits: f32 alpha and beta, or for clip on integers the bounds
  // as the host rounded and saturated them (int, or uint for u8).
  uint alpha;
  uint beta;
} p;

#if defined(X_F32) || defined(X_F16) || defined(X_BF16)
#define IS_FLOAT 1
#define ALPHA uintBitsToFloat(p.alpha)
#define BETA uintBitsToFloat(p.beta)
#elif defined(X_U8)
#define ALPHA p.alpha
#define BETA p.beta
#else
#define ALPHA int(p.alpha)
#define BETA int(p.beta)
#endif

// The op on one value.
X_C unary(const X_C v) {
#if defined(OP_RELU)
  const X_C r = v < X_C(0) ? X_C(0) : v;
#elif defined(OP_GELU)
  const X_C r = gelu(v);
#elif defined(OP_SILU)
  const X_C r = silu(v);
#elif defined(OP_SIGMOID)
  const X_C r = sigmoid_f32(v);
#elif defined(OP_TANH)
  const X_C r = tanh_f32(v);
#elif defined(OP_EXP)
  const X_C r = exp_f32(v);
#elif defined(OP_LOG)
  const X_C r = log_f32(v);
#elif defined(OP_SQRT)
  const X_C r = sqrt_f32(v);
#elif defined(OP_NEG)
  const X_C r = -v;
#elif defined(OP_ABS) && defined(IS_FLOAT)
  const X_C r = abs(v);  // clears the sign of -0.0 too
#elif defined(OP_ABS)
  const X_C r = v < 0 ? -v : v;
#elif defined(OP_ERF)
  const X_C r = erf_f32(v);
#elif defined(OP_FLOOR)
  const X_C r = floor(v);
#elif defined(OP_CEIL)
  const X_C r = ceil(v);
#elif defined(OP_RECIPROCAL)
  const X_C r = reciprocal_f32(v);
#elif defined(OP_SIGN)
  const X_C r = v > X_C(0) ? X_C(1) : v < X_C(0) ? X_C(-1) : v;  // keeps -0.0 and NaN
#elif defined(OP_SOFTPLUS)
  const X_C r = softplus_f32(v);
#elif defined(OP_LEAKY_RELU)
  const X_C r = v < 0.0 ? ALPHA * v : v;
#elif defined(OP_ELU)
  const X_C r = v < 0.0 ? ALPHA * expm1_neg(v) : v;
#elif defined(OP_SELU)
  const X_C r = BETA * (v <= 0.0 ? ALPHA * expm1_neg(v) : v);
#elif defined(OP_CLIP)
  // A NaN stays NaN (both comparisons are false); alpha > beta gives beta.
  const X_C low = v < ALPHA ? ALPHA : v;
  const X_C r = low > BETA ? BETA : low;
#elif defined(OP_HARD_SIGMOID)
  // A NaN stays NaN (both comparisons are false).
  const X_C t = ALPHA * v + BETA;
  const X_C r = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
#elif defined(OP_HARD_SWISH)
  const X_C t = v * (1.0 / 6.0) + 0.5;
  const X_C r = v * (t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t);
#elif defined(OP_SIN)
  const X_C r = sin_f32(v);
#elif defined(OP_COS)
  const X_C r = cos_f32(v);
#elif defined(OP_ROUND)
  const X_C r = roundEven(v);
#elif defined(OP_NOT)
  const X_C r = v == 0u ? 1u : 0u;
#endif
  return r;
}

void main() {
  if (VEC8 == 0u) {
    const uint g = flat_invocation();
    if (g >= p.count) return;
    const uint i = p.base + g;
    y[i + p.y_shift] = X_STORE(unary(X_LOAD(x[i + p.x_shift])));
    return;
  }
#if defined(X_VEC8)
  // Eight elements from 8 g; past the last whole eight, one at a time.
  const uint first = 8u * flat_invocation();
  if (first >= p.count) return;
  const uint i = p.base + first;
  if (first + 8u <= p.count) {
    X_C c[8];
    X_LOAD8(x_vec, i + p.x_shift, c);
    // Not unrolled here: Debian 12's spirv-opt drops the NoContraction (precise) of the
    // instructions it copies when unrolling, and the math functions' exact steps need it
    // (their results then moved by ulps); the driver unrolls the loop, keeping it.
    for (uint e = 0u; e < 8u; ++e) c[e] = unary(c[e]);
    X_STORE8(y_vec, i + p.y_shift, c);
  } else {
    for (uint e = 0u; e < p.count - first; ++e) {
      y[i + e + p.y_shift] = X_STORE(unary(X_LOAD(x[i + e + p.x_shift])));
    }
  }
#endif
}
