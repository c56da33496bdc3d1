// The activations of docs/ops.md, evaluated in f32. The codes are phx_activation's.

#ifndef ACTIVATION_GLSL
#define ACTIVATION_GLSL

#define ACTIVATION_NONE 0u
#define ACTIVATION_RELU 1u
#define ACTIVATION_GELU 2u
#define ACTIVATION_SILU 3u

// erfc(t) for t >= 0: a rational approximation in s = 1 / (1 + p t) times e^-t^2
// (Abramowitz and Stegun 7.1.26), absolute error below 1.5e-7. gelu's tolerance
// (docs/ops.md, tests/op_suite.h) is 8 ulps relative plus 1e-6 * max(1, |x|) absolute,
// and 0.5 * |x| * 1.5e-7 stays inside it; evaluating erfc directly (not 1 - erf) keeps
// the negative tail's small results accurate too.
float erfc_nonnegative(float t) {
  const float s = 1.0 / (1.0 + 0.3275911 * t);
  const float poly =
      s * (0.254829592 + s * (-0.284496736 + s * (1.421413741 + s * (-1.453152027 + s * 1.061405429))));
  return poly * exp(-t * t);
}

// 0.5 x (1 + erf(x / sqrt 2))
float gelu(float x) {
  const float t = abs(x) * 0.70710678118654752;
  const float e = erfc_nonnegative(t);
  return 0.5 * x * (x >= 0.0 ? 2.0 - e : e);
}

float silu(float x) { return x / (1.0 + exp(-x)); }

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
