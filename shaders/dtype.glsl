// Element types of the storage buffers, chosen by defines so that one shader source
// yields a module per dtype. Slot X is an op's input dtype, slot Y its output dtype:
// define X_F32, X_F16, X_BF16, X_I8, X_I16, X_I32 or X_U8 (and the same for Y).
//
// For each slot S this defines S_T (the buffer element type), S_C (the type the shader
// computes in: float for floats, int or uint for integers), S_LOAD(v) (element -> S_C)
// and S_STORE(c) (S_C -> element; floats narrowed with round-to-nearest-even).
//
// 16-bit floats live in buffers as uint16_t words and are converted with integer code:
// Debian 12's glslang has no bfloat16 type, and converting in bits keeps f16 subnormals
// exact whatever the device's float controls flush.

#ifndef DTYPE_GLSL
#define DTYPE_GLSL

#if defined(X_F16) || defined(X_BF16) || defined(X_I16) || defined(Y_F16) || defined(Y_BF16) || \
    defined(Y_I16)
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#endif
#if defined(X_I8) || defined(X_U8) || defined(Y_I8) || defined(Y_U8)
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#endif

// The f32 value of binary16 bits; exact, subnormals included.
float f16_to_f32(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint e = (h >> 10) & 0x1Fu;
  const uint m = h & 0x3FFu;
  if (e == 0x1Fu) return uintBitsToFloat(sign | 0x7F800000u | (m << 13));
  if (e == 0u) {
    // m * 2^-24 is a normal f32, so no flush can touch it.
    const float v = float(m) * 5.9604644775390625e-8;
    return sign != 0u ? -v : v;
  }
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}

// Binary16 bits of the f32 with bits x, rounded to nearest even; overflows to infinity.
uint f32_bits_to_f16(uint x) {
  const uint sign = (x >> 16) & 0x8000u;
  const uint ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7E00u;   // NaN stays (quiet) NaN
  if (ax >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to infinity
  if (ax >= 0x38800000u) {                       // a normal f16 (>= 2^-14)
    const uint r = ax - 0x38000000u;             // rebias the exponent from 127 to 15
    return sign | ((r + 0xFFFu + ((r >> 13) & 1u)) >> 13);
  }
  const uint e = ax >> 23;
  if (e < 102u) return sign;  // below 2^-25: rounds to zero
  // A subnormal f16: the significand (implicit bit included) in units of 2^-24.
  const uint m = (ax & 0x7FFFFFu) | 0x800000u;
  const uint shift = 126u - e;
  uint q = m >> shift;
  const uint rem = m & ((1u << shift) - 1u);
  const uint half_ulp = 1u << (shift - 1u);
  if (rem > half_ulp || (rem == half_ulp && (q & 1u) == 1u)) q += 1u;
  return sign | q;
}

// bfloat16 bits of the f32 with bits x, rounded to nearest even.
uint f32_bits_to_bf16(uint x) {
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (x >> 16) | 0x40u;  // quiet NaN
  return (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
}

float bf16_to_f32(uint b) { return uintBitsToFloat(b << 16); }

#define DTYPE_F32_T float
#define DTYPE_F32_C float
#define DTYPE_F32_LOAD(v) (v)
#define DTYPE_F32_STORE(c) (c)
#define DTYPE_F16_T uint16_t
#define DTYPE_F16_C float
#define DTYPE_F16_LOAD(v) f16_to_f32(uint(v))
#define DTYPE_F16_STORE(c) uint16_t(f32_bits_to_f16(floatBitsToUint(c)))
#define DTYPE_BF16_T uint16_t
#define DTYPE_BF16_C float
#define DTYPE_BF16_LOAD(v) bf16_to_f32(uint(v))
#define DTYPE_BF16_STORE(c) uint16_t(f32_bits_to_bf16(floatBitsToUint(c)))
// Narrowing integer conversions keep the low bits: the wrap-around of docs/ops.md.
#define DTYPE_I8_T int8_t
#define DTYPE_I8_C int
#define DTYPE_I8_LOAD(v) int(v)
#define DTYPE_I8_STORE(c) int8_t(c)
#define DTYPE_I16_T int16_t
#define DTYPE_I16_C int
#define DTYPE_I16_LOAD(v) int(v)
#define DTYPE_I16_STORE(c) int16_t(c)
#define DTYPE_I32_T int
#define DTYPE_I32_C int
#define DTYPE_I32_LOAD(v) (v)
#define DTYPE_I32_STORE(c) (c)
#define DTYPE_U8_T uint8_t
#define DTYPE_U8_C uint
#define DTYPE_U8_LOAD(v) uint(v)
#define DTYPE_U8_STORE(c) uint8_t(c)

#if defined(X_F32)
#define X_DTYPE F32
#elif defined(X_F16)
#define X_DTYPE F16
#elif defined(X_BF16)
#define X_DTYPE BF16
#elif defined(X_I8)
#define X_DTYPE I8
#elif defined(X_I16)
#define X_DTYPE I16
#elif defined(X_I32)
#define X_DTYPE I32
#elif defined(X_U8)
#define X_DTYPE U8
#endif

#if defined(Y_F32)
#define Y_DTYPE F32
#elif defined(Y_F16)
#define Y_DTYPE F16
#elif defined(Y_BF16)
#define Y_DTYPE BF16
#elif defined(Y_I8)
#define Y_DTYPE I8
#elif defined(Y_I16)
#define Y_DTYPE I16
#elif defined(Y_I32)
#define Y_DTYPE I32
#elif defined(Y_U8)
#define Y_DTYPE U8
#endif

// Two levels so that X_DTYPE is expanded before it is pasted.
#define DTYPE_PASTE(dtype, part) DTYPE_##dtype##part
#define DTYPE_PART(dtype, part) DTYPE_PASTE(dtype, part)

#ifdef X_DTYPE
#define X_T DTYPE_PART(X_DTYPE, _T)
#define X_C DTYPE_PART(X_DTYPE, _C)
#define X_LOAD(v) DTYPE_PART(X_DTYPE, _LOAD)(v)
#define X_STORE(c) DTYPE_PART(X_DTYPE, _STORE)(c)
#endif
#ifdef Y_DTYPE
#define Y_T DTYPE_PART(Y_DTYPE, _T)
#define Y_C DTYPE_PART(Y_DTYPE, _C)
#define Y_LOAD(v) DTYPE_PART(Y_DTYPE, _LOAD)(v)
#define Y_STORE(c) DTYPE_PART(Y_DTYPE, _STORE)(c)
#endif

#endif  // DTYPE_GLSL
