// cast from X_<dtype> to Y_<dtype> with the rules of docs/ops.md: one invocation per
// element. Floats travel as f32 bits (exact for every float dtype, and immune to a
// device's subnormal flushing); each conversion rounds once.
#version 450
#extension GL_GOOGLE_include_directive : require
#define GRID_WORKGROUP 256u
#include "grid.glsl"
#include "dtype.glsl"

layout(local_size_x = GRID_WORKGROUP) in;

layout(set = 0, binding = 0) readonly buffer X { X_T x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { Y_T y[]; };

layout(push_constant) uniform Push {
  uint base;
  uint count;
  uint x_shift;  // moves an element index into the sub-range bindings
  uint y_shift;
} p;

#if defined(X_F32) || defined(X_F16) || defined(X_BF16)
#define X_FLOAT 1
#endif
#if defined(Y_F32) || defined(Y_F16) || defined(Y_BF16)
#define Y_FLOAT 1
#endif

#if defined(Y_F32)
#define Y_PRECISION 24u
#elif defined(Y_F16)
#define Y_PRECISION 11u
#elif defined(Y_BF16)
#define Y_PRECISION 8u
#endif

// The integer range of Y: its smallest value and one past its largest, both exact in f32.
#if defined(Y_I8)
#define Y_LO -128.0
#define Y_HI_EXCLUSIVE 128.0
#elif defined(Y_I16)
#define Y_LO -32768.0
#define Y_HI_EXCLUSIVE 32768.0
#elif defined(Y_I32)
#define Y_LO -2147483648.0
#define Y_HI_EXCLUSIVE 2147483648.0
#elif defined(Y_U8)
#define Y_LO 0.0
#define Y_HI_EXCLUSIVE 256.0
#endif

#ifdef X_FLOAT
// The f32 bits of a float element.
uint float_bits(X_T v) {
#if defined(X_F32)
  return floatBitsToUint(v);
#elif defined(X_F16)
  return floatBitsToUint(f16_to_f32(uint(v)));
#else
  return uint(v) << 16;
#endif
}
#endif

#ifdef Y_FLOAT
// An f32 (bits) stored as Y: narrowed to nearest even, or a copy.
Y_T store_float_bits(uint bits) {
#if defined(Y_F32)
  return uintBitsToFloat(bits);
#elif defined(Y_F16)
  return uint16_t(f32_bits_to_f16(bits));
#else
  return uint16_t(f32_bits_to_bf16(bits));
#endif
}

// mag rounded to `significant_bits` significant bits, to nearest even, in integer arithmetic so
// that an integer reaches a 16-bit float with one rounding, not two through f32.
uint round_significand(uint mag, uint significant_bits) {
  const int top = findMSB(mag);
  if (top < int(significant_bits)) return mag;
  const uint shift = uint(top) + 1u - significant_bits;
  uint q = mag >> shift;
  const uint rem = mag & ((1u << shift) - 1u);
  const uint half_ulp = 1u << (shift - 1u);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u) == 1u)) q += 1u;
  return q << shift;
}
#endif

void main() {
  const uint g = flat_invocation();
  if (g >= p.count) return;
  const uint i = p.base + g;
  const X_T v = x[i + p.x_shift];
  Y_T r;
#if defined(X_FLOAT) && defined(Y_FLOAT)
  r = store_float_bits(float_bits(v));
#elif defined(X_FLOAT)
  // Round to nearest even, saturate, NaN -> 0.
  const float f = roundEven(uintBitsToFloat(float_bits(v)));
  if (isnan(f)) {
    r = Y_STORE(Y_C(0));
  } else if (f < Y_LO) {
    r = Y_STORE(Y_C(int(Y_LO)));
  } else if (f >= Y_HI_EXCLUSIVE) {
    r = Y_STORE(Y_C(uint(Y_HI_EXCLUSIVE - 1.0)));
  } else {
    r = Y_STORE(Y_C(f));
  }
#elif defined(Y_FLOAT)
  const int n = int(X_LOAD(v));
  const uint mag = n < 0 ? uint(-n) : uint(n);  // -INT_MIN wraps to 2^31: right as uint
  const float rounded = float(round_significand(mag, Y_PRECISION));  // exact
  r = store_float_bits(floatBitsToUint(n < 0 ? -rounded : rounded));
#else
  // Integer to integer keeps the low bits.
  r = Y_STORE(Y_C(int(X_LOAD(v))));
#endif
  y[i + p.y_shift] = r;
}
