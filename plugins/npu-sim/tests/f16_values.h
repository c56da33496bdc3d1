// IEEE binary16 values on the host, for the npu-sim tests: rounding a double to f16 (to
// nearest even, overflowing to infinity past 65504), and converting between f16 bits
// and doubles. Every f16 value is exact in a double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace npu_sim_test {

constexpr double kF16UnitRoundoff = 0x1p-11;
constexpr double kF16HalfMinSubnormal = 0x1p-25;  // the largest error of rounding a tiny value
constexpr double kF32UnitRoundoff = 0x1p-24;

inline double round_f16(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e); subnormals share the smallest quantum, 2^-24
  const int quantum = std::max(e - 1, -14) - 10;
  const double r = std::ldexp(std::nearbyint(std::ldexp(v, -quantum)), quantum);
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, v) : r;
}

// The bits of v, which must be an f16 value (or infinity).
inline uint16_t f16_bits(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7C00;
  if (a < 0x1p-14) return sign | static_cast<uint16_t>(a * 0x1p24);  // subnormal or zero
  int e = 0;
  std::frexp(a, &e);
  const auto mantissa = static_cast<uint16_t>((std::ldexp(a, 1 - e) - 1.0) * 1024.0);
  return sign | static_cast<uint16_t>((e - 1 + 15) << 10) | mantissa;
}

inline double f16_value(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

// values rounded to f16, as bits.
inline std::vector<uint16_t> to_f16(const std::vector<double>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = f16_bits(round_f16(values[i]));
  return bits;
}

inline std::vector<double> from_f16(const std::vector<uint16_t>& bits) {
  std::vector<double> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) values[i] = f16_value(bits[i]);
  return values;
}

}  // namespace npu_sim_test
