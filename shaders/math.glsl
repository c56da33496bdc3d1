// The math functions of the unary and binary ops of API 0.3 (docs/ops.md), in f32 to
// within a few ulps of the exact result, as the C library's give them on the host.
//
// The driver's own exp, log and pow cannot: the Vulkan spec allows exp 3 + 2|x| ulps,
// log an absolute 2^-21 near 1, and pow whatever exp2(y log2 x) gives, and lavapipe
// computes them that way (exp as exp2(x log2 e), whose rounded argument alone costs
// |x| 2^-24 relative). So the functions here reduce their arguments exactly and evaluate
// polynomials; each states its error bound, which tests/op_suite_api03_test.cpp checks
// against float64 references. u is 2^-24, an ulp is at most 2u of the result.
//
// Lavapipe flushes subnormal results of float arithmetic to zero (Vulkan allows it);
// the functions whose results reach below 2^-126 (exp, sigmoid, softplus, pow) build
// those from integer bits instead, so that they come out as on the host. `precise`
// keeps the compiler from reassociating or fusing the steps that must stay exact.

#ifndef MATH_GLSL
#define MATH_GLSL

#include "activation.glsl"

#define MATH_INF uintBitsToFloat(0x7F800000u)
#define MATH_NAN uintBitsToFloat(0x7FC00000u)

// ---- Exact products (Dekker): the driver's fma may be a product and a sum (Vulkan
// allows it), so the rounding error of a product is taken by splitting instead.

// a = hi + lo, hi with the 12 leading bits of a. |a| below 2^115.
void split_f32(float a, out float hi, out float lo) {
  precise const float c = 4097.0 * a;
  precise const float h = c - (c - a);
  hi = h;
  lo = a - h;
}

// The exact a b - fl(a b), for |a b| in the normal range.
float product_error(float a, float b, float p) {
  float ah, al, bh, bl;
  split_f32(a, ah, al);
  split_f32(b, bh, bl);
  precise const float e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
  return e;
}

// ---- exp


// p 2^n for p in [0.5, 2) and n <= 130, rounded once. Normal results scale by two
// normal powers of two (an overflow gives infinity); results below 2^-126 are rounded in
// units of 2^-149 and made from their bits, so that no flush of subnormal arithmetic
// touches them.
float scale_f32(float p, int n) {
  if (n >= -125) {
    const int n1 = n / 2;
    const int n2 = n - n1;
    precise const float scaled =
        (p * uintBitsToFloat(uint(n1 + 127) << 23)) * uintBitsToFloat(uint(n2 + 127) << 23);
    return scaled;
  }
  if (n < -151) return 0.0;
  // p 2^(n + 149) is a normal number below 2^24: its nearest integer is the bit pattern.
  return uintBitsToFloat(uint(roundEven(p * uintBitsToFloat(uint(n + 149 + 127) << 23))));
}

// e^x within 1.5 ulps: exp_reduced's 1.3u and the rounding of the scaling.
float exp_f32(float x) {
  if (isnan(x)) return x;
  if (x > 89.0) return MATH_INF;  // e^88.73 is past FLT_MAX
  if (x < -104.0) return 0.0;     // e^-103.98 is 2^-150: zero once rounded
  int n;
  const float p = exp_reduced(x, 0.0, n);
  return scale_f32(p, n);
}

// e^x - 1 for x <= 0 (elu, selu and tanh need no more), within 3u relative. On [-1, 0]
// by Taylor to x^11 (remainder below 1/12! = 2.1e-9 of |x|, 0.05u of the result), as
// x + x^2 P(x): the terms past x are at most 0.58 of the result and err by 3u, the sum
// rounds once. Below -1, e^x - 1 >= 0.63 in magnitude and e^x <= 0.37 errs by 1.5 ulps:
// 0.9u, and the subtraction 0.5u.
float expm1_neg(float x) {
  if (x == 0.0 || isnan(x)) return x;  // -0.0 stays -0.0
  if (x < -1.0) return exp_f32(x) - 1.0;
  float p = 1.0 / 39916800.0;
  p = p * x + 1.0 / 3628800.0;
  p = p * x + 1.0 / 362880.0;
  p = p * x + 1.0 / 40320.0;
  p = p * x + 1.0 / 5040.0;
  p = p * x + 1.0 / 720.0;
  p = p * x + 1.0 / 120.0;
  p = p * x + 1.0 / 24.0;
  p = p * x + 1.0 / 6.0;
  p = p * x + 0.5;
  return x + (x * x) * p;
}

// ---- log

// x = (1 + f) 2^k with 1 + f in [sqrt(1/2), sqrt(2)), for a positive finite x (a
// subnormal x, which lavapipe's arithmetic would read as zero, is normalized in bits).
// f = m - 1 is exact (Sterbenz).
float log_reduce(uint bits, out int k) {
  uint e = bits >> 23;
  uint m = bits & 0x7FFFFFu;
  if (e == 0u) {  // subnormal: shift the leading bit into the implicit position
    const int lead = findMSB(m);
    m = (m << uint(23 - lead)) & 0x7FFFFFu;
    k = lead - 149;
  } else {
    k = int(e) - 127;
  }
  float mant = uintBitsToFloat(m | 0x3F800000u);
  if (mant > 1.41421356) {
    mant *= 0.5;
    k += 1;
  }
  return mant - 1.0;
}

// log(1 + f) - f for f in [-0.293, 0.415]: with s = f / (2 + f), log(1 + f) = 2 atanh s
// = f - s (f - R), R = 2 (s^2 / 3 + s^4 / 5 + ...) to s^12 (remainder below 1e-13 of
// the result). s errs by 1.5u, and |s f| <= 0.2 |log(1 + f)|: the tail errs by
// 0.5u of log(1 + f) at most.
float log1p_tail(float f) {
  const float s = f / (2.0 + f);
  const float z = s * s;
  float r = 2.0 / 13.0;
  r = r * z + 2.0 / 11.0;
  r = r * z + 2.0 / 9.0;
  r = r * z + 2.0 / 7.0;
  r = r * z + 2.0 / 5.0;
  r = r * z + 2.0 / 3.0;
  r = r * z;
  return -s * (f - r);
}

// log x = hi + lo for a positive finite x: k ln2 + log(1 + f)
// with ln2 = 0.693359375 (9 bits: k times it is exact) - 2.1219444e-4, hi = k 0.693359375
// + f with its rounding error kept (Fast2Sum), lo the rest. hi + lo errs by at most 0.2u
// absolute (the tail's error, at most 0.07 times 3u).
void log_parts(uint bits, out float hi, out float lo) {
  int k;
  const float f = log_reduce(bits, k);
  const float kf = float(k);
  precise const float a = kf * 0.693359375;
  precise const float s = a + f;
  precise const float err = f - (s - a);  // exact: |a| >= |f| or a = 0
  precise const float rest = (kf * -2.12194440e-4 + log1p_tail(f)) + err;
  hi = s;
  lo = rest;
}

// The natural logarithm within 1 ulp: log_parts, then one rounding.
float log_f32(float x) {
  const uint bits = floatBitsToUint(x);
  if ((bits & 0x7FFFFFFFu) == 0u) return -MATH_INF;  // log(+-0)
  if (isnan(x) || (bits >> 31) != 0u) return MATH_NAN;
  if (isinf(x)) return x;
  float hi, lo;
  log_parts(bits, hi, lo);
  return hi + lo;
}

// log(1 + a) for a in [0, 1] (softplus), within 1.5 ulps. Up to 0.414, log1p_tail of
// a itself; above, u = 1 + a rounds, and log(1 + a) = log u + (a - (u - 1)) / u to
// first order (the neglected term is below 2^-49). Below 2^-24, log(1 + a) is a within
// a / 2 < 0.5u relative, returned as it is so that a subnormal a survives.
float log1p_unit(float a) {
  if (a < 5.9604645e-8) return a;
  if (a <= 0.41421356) return a + log1p_tail(a);
  precise const float u = 1.0 + a;
  precise const float c = a - (u - 1.0);  // exact
  return log_f32(u) + c / u;
}

// ---- The unary functions

// 1 / (1 + e^-x), as e / (1 + e) with e = e^x for x < 0: within 4u (e's 1.5 ulps, damped
// by 1 / (1 + e), the sum and the quotient). Below -87, 1 + e is 1 and e itself is the
// result (within e < 2^-125 relative), returned as it is so that a subnormal survives.
float sigmoid_f32(float x) {
  const float e = exp_f32(-abs(x));  // NaN stays NaN
  if (x < -87.0) return e;
  return x < 0.0 ? e / (1.0 + e) : 1.0 / (1.0 + e);
}

// tanh within 4u. Up to 0.55 by its Taylor series to x^19 (remainder below 4e-10, 0.1u
// of the result), as x + x z P(z), z = x^2, whose tail is at most 0.1 of the result.
// Above, (1 - e) / (1 + e) with e = e^-2|x| <= 0.333: e's 1.5 ulps weigh 0.75 in all,
// plus three roundings. e underflows to 0 for large |x|: exactly 1.
float tanh_f32(float x) {
  const float ax = abs(x);
  if (ax < 0.55) {
    if (x == 0.0) return x;  // -0.0 stays -0.0
    const float z = x * x;
    float p = -0.00023912911424355248;
    p = p * z + 0.00059002744094558595;
    p = p * z - 0.0014558343870513183;
    p = p * z + 0.0035921280365724811;
    p = p * z - 0.0088632355299021973;
    p = p * z + 0.021869488536155203;
    p = p * z - 0.053968253968253971;
    p = p * z + 0.13333333333333333;
    p = p * z - 0.33333333333333333;
    return x + x * (z * p);
  }
  const float e = exp_f32(-2.0 * ax);  // NaN stays NaN
  const float t = (1.0 - e) / (1.0 + e);
  return x < 0.0 ? -t : t;
}

// erf within 2.5u. Below 1 by its Taylor series to x^21 (remainder below 1.5e-9 of the
// result), as x + x (k + z Q(z)) with k = 2 / sqrt(pi) - 1: the part past x is at most
// 0.19 of the result. From 1 as 1 - erfc|x|, erfc z = t e^(-z^2 + P(t)), t = 1 / (1 +
// z / 2), the fit of gelu (activation.glsl, relative error below 1.2e-7, 2u), with
// -z^2 taken exactly (z = hi + lo, hi of 12 bits, as gelu does): erfc errs by 5u
// relative at most and weighs at most 0.19 of the result.
float erf_f32(float x) {
  if (isnan(x)) return x;
  const float ax = abs(x);
  if (ax < 1.0) {
    const float z = x * x;
    float q = 1.4807192815879218e-08;
    q = q * z - 1.6365844691234924e-07;
    q = q * z + 1.6462114365889246e-06;
    q = q * z - 1.492565035840625e-05;
    q = q * z + 0.00012055332981789664;
    q = q * z - 0.00085483270234508522;
    q = q * z + 0.0052239776254421879;
    q = q * z - 0.026866170645131252;
    q = q * z + 0.11283791670955126;
    q = q * z - 0.37612638903183754;
    return x + x * (0.12837916709551256 + z * q);  // -0.0 stays -0.0
  }
  // erfc(6) < 2^-53: erf is 1 from there on, and -z^2 stays above EXP_ARGUMENT_MIN.
  const float z = min(ax, 6.0);
  const float t = 1.0 / (1.0 + 0.5 * z);
  precise const float hi = uintBitsToFloat(floatBitsToUint(z) & 0xFFFFF000u);
  precise const float lo = z - hi;
  precise const float a = -(hi * hi);
  const float b = erfc_fit(t) - (2.0 * hi * lo + lo * lo);
  const float r = 1.0 - exp_scaled(a, b, t);
  return x < 0.0 ? -r : r;
}

// log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), within 2.5u: the terms have one sign.
// For x < 0 the first term is 0 and is not added, so that a subnormal result survives.
float softplus_f32(float x) {
  const float l = log1p_unit(exp_f32(-abs(x)));  // NaN stays NaN
  return x > 0.0 ? x + l : l;
}

// sqrt within 1 ulp on any device: the driver's (Vulkan allows 3 ulps; lavapipe's is
// correctly rounded) corrected by one Newton step on the exact residual x - r^2, which
// leaves 2^-46 relative before the last rounding. Where r^2 could leave the normal range
// (x beyond 2^+-100) the driver's is taken as it is. Zeros, infinities and NaN as IEEE.
float sqrt_f32(float x) {
  if (isnan(x) || x < 0.0) return MATH_NAN;
  const float r = sqrt(x);
  if (!(x > 7.9e-31 && x < 1.2e30)) return r;  // -0.0 stays -0.0, +inf stays +inf
  const float rr = r * r;
  precise const float e = (x - rr) - product_error(r, r, rr);  // x - rr is exact
  precise const float y = r + e * (0.5 / r);
  return y;
}

// 1 / x within 1 ulp on any device: the driver's quotient (Vulkan allows 2.5 ulps;
// lavapipe's is correctly rounded) corrected by one Newton step on the exact residual
// 1 - x r. Where x r could leave the normal range the quotient is taken as it is.
float reciprocal_f32(float x) {
  const float r = 1.0 / x;
  const float ax = abs(x);
  if (!(ax > 7.9e-31 && ax < 1.2e30)) return r;  // zeros, infinities, NaN, beyond 2^+-100
  const float p = x * r;
  precise const float e = (1.0 - p) - product_error(x, r, p);  // 1 - p is exact
  precise const float y = r + r * e;
  return y;
}

// -1, 0 or 1; a zero keeps its sign, NaN stays NaN.
float sign_f32(float x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x; }

// ---- sin and cos
//
// The driver's sin and cos need hold only 2^-11 absolute on [-pi, pi] (Vulkan), and
// rotary embeddings take them of positions in the thousands. Here x = n pi/2 + r, and
// sin or cos of x is +-sin r or +-cos r by n mod 4. pi/2 is P1 + P2 + P3 (three f32
// parts, within 1.1e-23 of it); n P1 is taken exactly (its rounding error from
// product_error), and x - n P1 is exact (Sterbenz: the two lie within a factor of 2 of
// each other once n >= 1). So r errs by 0.5u of itself plus n (2^-48 + 1.1e-23) absolute,
// which for |x| < 2^20 (n < 2^19.4; the rounded n then leaves |r| <= 0.85) is below 2^-28.

// r for x, and n mod 4 in q; x finite, |x| < 2^20 for the bound above.
float sincos_reduce(float x, out int q) {
  const float n = roundEven(x * uintBitsToFloat(0x3F22F983u));  // x 2 / pi
  const float p1 = uintBitsToFloat(0x3FC90FDBu);                 // pi/2 in three parts
  const float p2 = uintBitsToFloat(0xB33BBD2Eu);
  const float p3 = uintBitsToFloat(0xA6F72CEDu);
  q = int(n - 4.0 * floor(n * 0.25));  // n mod 4, exact for n below 2^24
  if (n == 0.0) return x;
  const float t1 = n * p1;
  precise const float r = (((x - t1) - product_error(n, p1, t1)) - n * p2) - n * p3;
  return r;
}

// sin r and cos r for |r| <= 0.85 by their Taylor series to r^11 and r^12 (remainders
// below 3e-10 of the result, 0.01u): sin as r + r z S(z), whose tail is at most 0.12 of
// the result; cos as 1 - z/2 + z^2 C(z), z = r^2, at least 0.66 with the terms past 1 at
// most 0.34 of it. Within 2u each with the reduction's error, so 4u holds below 2^20.
float sin_reduced(float r) {
  const float z = r * r;
  float s = -1.0 / 39916800.0;
  s = s * z + 1.0 / 362880.0;
  s = s * z - 1.0 / 5040.0;
  s = s * z + 1.0 / 120.0;
  s = s * z - 1.0 / 6.0;
  return r + r * z * s;
}

float cos_reduced(float r) {
  const float z = r * r;
  float c = 1.0 / 479001600.0;
  c = c * z - 1.0 / 3628800.0;
  c = c * z + 1.0 / 40320.0;
  c = c * z - 1.0 / 720.0;
  c = c * z + 1.0 / 24.0;
  return (1.0 - 0.5 * z) + (z * z) * c;
}

// sin x; a zero keeps its sign, infinities and NaN give NaN.
float sin_f32(float x) {
  if (x == 0.0) return x;
  if (isnan(x) || isinf(x)) return MATH_NAN;
  int q;
  const float r = sincos_reduce(x, q);
  const float v = (q & 1) == 0 ? sin_reduced(r) : cos_reduced(r);
  return q >= 2 ? -v : v;
}

// cos x; infinities and NaN give NaN.
float cos_f32(float x) {
  if (isnan(x) || isinf(x)) return MATH_NAN;
  int q;
  const float r = sincos_reduce(x, q);
  const float v = (q & 1) == 0 ? cos_reduced(r) : sin_reduced(r);
  return q == 1 || q == 2 ? -v : v;
}

// ---- pow

// Whether an f32 is an integer (infinities count as even integers, as in C's pow).
bool is_integer_f32(float y) { return isinf(y) || floor(y) == y; }
bool is_odd_integer_f32(float y) {
  return !isinf(y) && abs(y) < 16777216.0 && floor(y) == y && (int(y) & 1) != 0;
}

// C's powf (C99 Annex F's special cases) within 2 ulps + 0.2 |y| u: e^(y log|x|) with
// log|x| = hi + lo (0.2u absolute, log_parts) and the product y hi split exactly
// (Dekker), so that the argument of e^ errs by 0.2 |y| u absolute and only exp_reduced's
// 1.3u adds to it, then one rounding.
float pow_f32(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;  // even for a NaN on the other side
  if (isnan(x) || isnan(y)) return MATH_NAN;
  const uint bits = floatBitsToUint(x);
  const bool negative = (bits >> 31) != 0u;
  const uint abits = bits & 0x7FFFFFFFu;
  if (negative && abits != 0u && !isinf(x) && !is_integer_f32(y)) return MATH_NAN;
  const float sign = negative && is_odd_integer_f32(y) ? -1.0 : 1.0;
  const float ax = uintBitsToFloat(abits);
  float magnitude;
  if (abits == 0u) {
    magnitude = y < 0.0 ? MATH_INF : 0.0;
  } else if (isinf(x)) {
    magnitude = y < 0.0 ? 0.0 : MATH_INF;
  } else if (isinf(y)) {
    magnitude = ax == 1.0 ? 1.0 : (ax < 1.0) == (y < 0.0) ? MATH_INF : 0.0;
  } else {
    float hi, lo;
    log_parts(abits, hi, lo);
    const float p = y * hi;
    if (p > 89.0) {
      magnitude = MATH_INF;
    } else if (p < -104.0) {
      magnitude = 0.0;
    } else {
      precise const float rest = product_error(y, hi, p) + y * lo;
      int n;
      const float e = exp_reduced(p, rest, n);
      magnitude = scale_f32(e, n);
    }
  }
  return sign < 0.0 ? -magnitude : magnitude;
}

#endif  // MATH_GLSL
