// The activations of docs/ops.md, evaluated in f32. The codes are phx_activation's.
//
// gelu and silu keep a relative error of a few ulps over the whole f32 range, tails
// included (tests/op_suite.h derives the bound). The driver's exp() cannot give that:
// GLSL allows it 3 + 2|x| ulps, and lavapipe computes exp2(x log2 e), whose rounded
// argument costs |x| 2^-24 relative (3e-6 at x = 50). So e^s is computed here with
// its argument reduced exactly, and the results that leave the normal range are
// scaled into it last: a device that flushes subnormals (lavapipe does) then flushes
// only what is truly below 2^-126. `precise` keeps the compiler from reassociating or
// fusing the steps whose exactness the error bound relies on.

#ifndef ACTIVATION_GLSL
#define ACTIVATION_GLSL

#define ACTIVATION_NONE 0u
#define ACTIVATION_RELU 1u
#define ACTIVATION_GELU 2u
#define ACTIVATION_SILU 3u

// Below this exponent every result of exp_scaled with |factor| <= 128 is below 2^-165,
// zero in f32; clamping there keeps 2^n a product of two normal floats.
#define EXP_ARGUMENT_MIN -128.0

// e^(a + b) = p 2^n, p in [0.7, 1.42], n returned apart, for an exact a with |a| <= 131
// and a small b (|b| <= 2). a + b = n ln2 + r: ln2 is split in a head with 9 significant
// bits, whose products with n (|n| <= 190) are exact, and a tail; a - n * head is then
// exact too (both are multiples of 2^-16 and the difference is below 256), so r errs by
// about an ulp of r, not of a. e^r for |r| <= ln2 / 2 by Taylor to r^7 (remainder below
// 3e-9, Horner about 1u).
float exp_reduced(float a, float b, out int n) {
  const float nf = roundEven((a + b) * 1.44269504088896341);
  precise const float r = ((a - nf * 0.693359375) - nf * -2.12194440e-4) + b;
  float p = 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  n = int(nf);
  return p;
}

// factor * e^(a + b), for an exact a >= EXP_ARGUMENT_MIN and a small b (|b| <= 2):
// exp_reduced's p scaled by 2^n in two normal factors, so that it underflows (or
// overflows) once, as the true result does.
float exp_scaled(float a, float b, float factor) {
  int n;
  const float p = exp_reduced(a, b, n);
  const int n1 = n / 2;
  const int n2 = n - n1;
  precise const float scaled = ((factor * p) * uintBitsToFloat(uint(n1 + 127) << 23)) *
                               uintBitsToFloat(uint(n2 + 127) << 23);
  return scaled;
}

// P(t) of erfc z = t e^(-z^2 + P(t)), t = 1 / (1 + z / 2), z >= 0: the Chebyshev fit of
// Numerical Recipes (erfcc, 6.2), relative error below 1.2e-7 for every z.
float erfc_fit(float t) {
  float p = 0.17087277;
  p = p * t - 0.82215223;
  p = p * t + 1.48851587;
  p = p * t - 1.13520398;
  p = p * t + 0.27886807;
  p = p * t - 0.18628806;
  p = p * t + 0.09678418;
  p = p * t + 0.37409196;
  p = p * t + 1.00002368;
  return p * t - 1.26551223;
}

// x Phi(x), Phi the normal CDF, as x erfc(-x / sqrt 2) / 2, erfc by erfc_fit. -z^2 =
// -x^2 / 2 is taken exactly: |x| = hi + lo with hi its 12 leading bits, so hi^2 is
// exact and goes to exp_scaled as a, the small rest (hi lo + lo^2 / 2, beside P(t)) as
// b. Computing erfc (not 1 + erf) keeps the negative tail's digits.
float gelu(float x) {
  // Beyond 16, erfc(|x| / sqrt 2) / 2 < 2^-185: zero in f32, and x^2 / 2 stays above
  // EXP_ARGUMENT_MIN.
  const float ax = min(abs(x), 16.0);
  const float t = 1.0 / (1.0 + 0.5 * (ax * 0.70710678118654752));
  const float p = erfc_fit(t);
  precise const float hi = uintBitsToFloat(floatBitsToUint(ax) & 0xFFFFF000u);
  precise const float lo = ax - hi;
  precise const float a = -0.5 * (hi * hi);
  const float b = p - (hi * lo + 0.5 * (lo * lo));
  // x < 0: -|x| erfc(|x| / sqrt 2) / 2, scaled last (it is below 2^-126 from x = -13.2).
  if (x < 0.0) return -exp_scaled(a, b, 0.5 * t * ax);
  return x * (1.0 - exp_scaled(a, b, 0.5 * t));  // NaN and +inf pass through x
}

// x / (1 + e^-x). For x < 0 as x e^x / (1 + e^x): e^-x would overflow from x = -88.7
// while x e^x stays normal down to x = -92.4.
float silu(float x) {
  const float a = max(-abs(x), EXP_ARGUMENT_MIN);  // below, x e^x < 2^-165: zero
  const float e = exp_scaled(a, 0.0, 1.0);          // e^-|x|; only 1 + e uses it
  if (x < 0.0) return exp_scaled(a, 0.0, a) / (1.0 + e);
  return x / (1.0 + e);  // NaN and +inf pass through x
}

// max(x, 0) that keeps NaN (and -0.0, as max(x, 0) does on the host).
float relu(float x) { return x < 0.0 ? 0.0 : x; }

float activate(uint activation, float x) {
  switch (activation) {
    case ACTIVATION_RELU:
      return relu(x);
    case ACTIVATION_GELU:
      return gelu(x);
    case ACTIVATION_SILU:
      return silu(x);
    default:
      return x;
  }
}

#endif  // ACTIVATION_GLSL
