// What the op conformance suite shares between its files: the dtypes as the host
// models them, host tensors and float64 references, tensor handles, the devices found
// at run time and the fixture that gives each test a stream on one device.
//
// Tolerances. u(dt) is the unit roundoff of a dtype: f32 2^-24, f16 2^-11, bf16 2^-8.
// Every float result may carry one final rounding to the output dtype:
//   round(out, ref) = u(out) * |ref| + half the smallest subnormal of out (f16: 2^-25).
// On top of that, per op (|.| of the float64 reference; K, n as named):
//   - transpose, relu, reduce_max, cast, integer ops: exact (tolerance 0; a float zero
//     must also keep its sign).
//   - add, sub, mul, div: computed in f32, then stored: 2 * 2^-24 * |ref|.
//   - matmul, conv2d with K products per output and S = sum_k |a_k * b_k| + |bias|:
//       pre = 2 * K * 2^-24 * S + 1e-6;
//     with a fused activation (Lipschitz <= 1.2 for relu, gelu, silu), 1.2 * pre plus
//     the activation's own error below. Where the sums are exact (small integers times
//     small integers plus a bias: the tail cases), pre = 0 and only the activation's
//     error remains.
//   - gelu, silu: relative over the whole input range, tails included, evaluated in f32:
//       c * 2^-24 * |ref| + u(out) * |ref| + floor(out), c = 16 for gelu, 8 for silu.
//     gelu = x erfc(-x / sqrt 2) / 2 as x t e^(-x^2/2 + P(t)) / 2, t = 1 / (1 + |x| / 2^1.5)
//     (erfc's fit is 1.2e-7 = 2 ulps): the fit 2, t 2 (1 + |x| / 2^1.5 and the division;
//     |x| / sqrt 2 one more), P(t) by Horner 4 (ten steps, partial sums below 1.5, its
//     absolute error becomes the result's relative error), e^s 2 (with s reduced
//     exactly), the products by t, x and 1/2, and 1 - tail for x > 0, 3: 14 ulps, c = 16.
//     silu = x / (1 + e^-x) (x e^x / (1 + e^x) for x < 0): e^s 2, the sum 1, x e^x 1, the
//     division 2.5 (GLSL's allowance): 6.5 ulps, c = 8. (Measured: 6.3 and 3.0 ulps.)
//     c does not hide an exponent s rounded to f32 before exp: that costs up to |s| ulps
//     (x^2 / 2, or x log2 e in a driver's exp2), 2 |s| more when x / sqrt 2 is rounded
//     before squaring: 150 ulps at x = -10.
//     floor(out): a device may flush f32 subnormals (Vulkan allows it; lavapipe does),
//     and f32 and bf16 results are computed in f32, so below 2^-126 any result within
//     2^-126 passes; f16's subnormals are normal f32 numbers, so f16 keeps half its
//     smallest subnormal, 2^-25, the final rounding's floor.
//   - softmax over n elements: (n + 32) * 2^-24 * |ref| + 1e-7 (n for the f32 sum, 32
//     for exp and the division).
//   - layer_norm over n: (2n + 32) * 2^-24 * ((|xhat| + 1) * |gamma| + |beta|), where
//     xhat = (x - mean) / sqrt(var + eps): the f32 mean and variance sums each err by
//     up to n ulps, the +1 covers the mean's error seen through 1 / sigma.
//   - rms_norm over n: (n + 32) * 2^-24 * |ref| + 1e-6.
//   - reduce_sum over n: (n + 2) * 2^-24 * sum |x|.
// All random inputs come from a fixed-seed RNG, so any failure reproduces.

#pragma once

#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace phx_test {

using Shape = std::vector<int64_t>;
using Index = std::vector<int64_t>;

constexpr phx_dtype kFloatDtypes[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16};
constexpr phx_dtype kIntDtypes[] = {PHX_DTYPE_I8, PHX_DTYPE_I16, PHX_DTYPE_I32, PHX_DTYPE_U8};
constexpr phx_dtype kAllDtypes[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16, PHX_DTYPE_I8,
                                    PHX_DTYPE_I16, PHX_DTYPE_I32, PHX_DTYPE_U8};
constexpr phx_activation kActivations[] = {PHX_ACTIVATION_NONE, PHX_ACTIVATION_RELU,
                                           PHX_ACTIVATION_GELU, PHX_ACTIVATION_SILU};
constexpr double kF32Epsilon = 0x1p-24;  // unit roundoff of f32

inline bool is_float(phx_dtype dt) {
  return dt == PHX_DTYPE_F32 || dt == PHX_DTYPE_F16 || dt == PHX_DTYPE_BF16;
}

inline int64_t element_count(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

inline std::string shape_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---- The dtypes as the host models them ------------------------------------------------

struct FloatFormat {
  int precision;     // significand bits, the implicit one included
  int min_exponent;  // exponent of the smallest normal number
  double max_finite;
};

inline FloatFormat float_format(phx_dtype dt) {
  switch (dt) {
    case PHX_DTYPE_F16:
      return {11, -14, 65504.0};
    case PHX_DTYPE_BF16:
      return {8, -126, 0x1.FEp127};
    default:
      return {24, -126, 0x1.FFFFFEp127};
  }
}

inline double unit_roundoff(phx_dtype dt) { return std::ldexp(1.0, -float_format(dt).precision); }

// Half the smallest subnormal of dt: the largest error of rounding a tiny result.
inline double half_min_subnormal(phx_dtype dt) {
  const FloatFormat f = float_format(dt);
  return std::ldexp(1.0, f.min_exponent - f.precision);
}

// Rounds v to the nearest value of a float dtype, ties to even, overflowing to infinity.
inline double round_to_float(phx_dtype dt, double v) {
  if (!std::isfinite(v) || v == 0) return v;
  const FloatFormat f = float_format(dt);
  int e = 0;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e); subnormals share the smallest quantum
  const int quantum_exponent = std::max(e - 1, f.min_exponent) - (f.precision - 1);
  // nearbyint rounds in the default mode: to nearest, ties to even.
  const double r = std::ldexp(std::nearbyint(std::ldexp(v, -quantum_exponent)), quantum_exponent);
  return std::fabs(r) > f.max_finite ? std::copysign(INFINITY, v) : r;
}

struct IntRange {
  double lo;
  double hi;
};

inline IntRange int_range(phx_dtype dt) {
  switch (dt) {
    case PHX_DTYPE_I8:
      return {-128.0, 127.0};
    case PHX_DTYPE_I16:
      return {-32768.0, 32767.0};
    case PHX_DTYPE_I32:
      return {-2147483648.0, 2147483647.0};
    default:
      return {0.0, 255.0};
  }
}

// The cast rule for a float going to an integer dtype: round to nearest even,
// saturate, NaN -> 0.
inline double round_to_int(phx_dtype dt, double v) {
  if (std::isnan(v)) return 0.0;
  const IntRange range = int_range(dt);
  return std::clamp(std::nearbyint(v), range.lo, range.hi);
}

inline double round_to(phx_dtype dt, double v) {
  return is_float(dt) ? round_to_float(dt, v) : round_to_int(dt, v);
}

// Two's complement wrap-around of an exact integer result to dt.
inline int64_t wrap_to(phx_dtype dt, int64_t v) {
  switch (dt) {
    case PHX_DTYPE_I8:
      return static_cast<int8_t>(v);
    case PHX_DTYPE_I16:
      return static_cast<int16_t>(v);
    case PHX_DTYPE_I32:
      return static_cast<int32_t>(v);
    default:
      return static_cast<uint8_t>(v);
  }
}

// The binary16 bits of v, which must be exactly representable (or inf or NaN).
inline uint16_t f16_bits(double v) {
  if (std::isnan(v)) return 0x7E00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7C00;
  if (a < 0x1p-14) return sign | static_cast<uint16_t>(a * 0x1p24);  // subnormal or zero
  int e = 0;
  std::frexp(a, &e);
  const int exponent = e - 1;
  const auto mantissa = static_cast<uint16_t>((std::ldexp(a, -exponent) - 1.0) * 1024.0);
  return sign | static_cast<uint16_t>((exponent + 15) << 10) | mantissa;
}

inline double f16_value(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1F;
  const int mantissa = bits & 0x3FF;
  if (exponent == 0x1F) return mantissa ? NAN : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

template <class T>
inline void store(unsigned char* dst, T value) {
  std::memcpy(dst, &value, sizeof value);
}

template <class T>
inline T load(const unsigned char* src) {
  T value;
  std::memcpy(&value, src, sizeof value);
  return value;
}

// Writes v, already representable in dt, as dt's bytes.
inline void encode(phx_dtype dt, double v, unsigned char* dst) {
  switch (dt) {
    case PHX_DTYPE_F32:
      store(dst, static_cast<float>(v));
      break;
    case PHX_DTYPE_F16:
      store(dst, f16_bits(v));
      break;
    case PHX_DTYPE_BF16:  // exact: v already has bf16 precision
      store(dst, static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16));
      break;
    case PHX_DTYPE_I8:
      store(dst, static_cast<int8_t>(v));
      break;
    case PHX_DTYPE_I16:
      store(dst, static_cast<int16_t>(v));
      break;
    case PHX_DTYPE_I32:
      store(dst, static_cast<int32_t>(v));
      break;
    default:
      store(dst, static_cast<uint8_t>(v));
      break;
  }
}

inline double decode(phx_dtype dt, const unsigned char* src) {
  switch (dt) {
    case PHX_DTYPE_F32:
      return load<float>(src);
    case PHX_DTYPE_F16:
      return f16_value(load<uint16_t>(src));
    case PHX_DTYPE_BF16:
      return std::bit_cast<float>(static_cast<uint32_t>(load<uint16_t>(src)) << 16);
    case PHX_DTYPE_I8:
      return load<int8_t>(src);
    case PHX_DTYPE_I16:
      return load<int16_t>(src);
    case PHX_DTYPE_I32:
      return load<int32_t>(src);
    default:
      return load<uint8_t>(src);
  }
}

// ---- Host tensors and references ---------------------------------------------------------

// A tensor on the host: its values are exactly representable in its dtype.
struct HostTensor {
  phx_dtype dtype = PHX_DTYPE_F32;
  Shape shape;
  std::vector<double> values;

  double at(int64_t i) const { return values[static_cast<size_t>(i)]; }
};

// What an op must produce: each value within its tolerance.
struct Expected {
  std::vector<double> values;
  std::vector<double> tolerances;

  void add(double value, double tolerance) {
    values.push_back(value);
    tolerances.push_back(tolerance);
  }
};

inline double final_rounding(phx_dtype out, double ref) {
  if (!is_float(out)) return 0.0;
  return unit_roundoff(out) * std::fabs(ref) + half_min_subnormal(out);
}

// When set, the suite runs every op as a one-node graph: the graph-test executables link
// op_suite_as_graphs.cpp, which sets it before main, and phx-conformance --graphs sets it.
inline bool ops_as_graphs = false;

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}

  double uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(engine_); }
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(engine_);
  }

  // Values in [lo, hi] rounded to dt; for an integer dtype, integers in [lo, hi] clamped
  // to its range.
  HostTensor tensor(phx_dtype dt, Shape shape, double lo = -1.0, double hi = 1.0) {
    HostTensor t{dt, std::move(shape), {}};
    const int64_t count = element_count(t.shape);
    t.values.reserve(static_cast<size_t>(count));
    const IntRange range = is_float(dt) ? IntRange{lo, hi} : int_range(dt);
    for (int64_t i = 0; i < count; ++i) {
      t.values.push_back(is_float(dt) ? round_to_float(dt, uniform(lo, hi))
                                      : static_cast<double>(
                                            integer(static_cast<int64_t>(std::max(lo, range.lo)),
                                                    static_cast<int64_t>(std::min(hi, range.hi)))));
    }
    return t;
  }

 private:
  std::mt19937_64 engine_;
};

// Calls fn(index, flat) for every index of shape, in row-major order.
template <class Fn>
inline void for_each_index(const Shape& shape, Fn fn) {
  Index index(shape.size(), 0);
  const int64_t count = element_count(shape);
  for (int64_t flat = 0; flat < count; ++flat) {
    fn(index, flat);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

// The row-major offset, in a tensor of `shape` broadcast against a bigger shape (aligned
// right, size-1 dims stretched), of the element at `index` of that bigger shape.
inline int64_t broadcast_offset(const Shape& shape, const Index& index) {
  const size_t skip = index.size() - shape.size();
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    offset = offset * shape[d] + (shape[d] == 1 ? 0 : index[skip + d]);
  }
  return offset;
}

inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = std::max(da, db);
  }
  return out;
}

inline double apply_activation(phx_activation act, double x) {
  switch (act) {
    case PHX_ACTIVATION_RELU:
      return std::max(x, 0.0);
    case PHX_ACTIVATION_GELU:  // erfc, not 1 + erf, which cancels to 0 from x = -8.3
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case PHX_ACTIVATION_SILU:
      return x / (1.0 + std::exp(-x));
    default:
      return x;
  }
}

// The ulps of f32 (c above) that gelu and silu may err by; relu and none are exact.
inline double activation_ulps(phx_activation act) {
  switch (act) {
    case PHX_ACTIVATION_GELU:
      return 16.0;
    case PHX_ACTIVATION_SILU:
      return 8.0;
    default:
      return 0.0;
  }
}

// Below it a result computed in f32 and stored as out may have been flushed (floor above).
inline double activation_floor(phx_dtype out) {
  return out == PHX_DTYPE_F16 ? half_min_subnormal(out) : 0x1p-126;
}

// The tolerance of an activation evaluated in f32 on an exact input, stored as out.
inline double activation_tolerance(phx_activation act, double ref, phx_dtype out) {
  return (activation_ulps(act) * kF32Epsilon + unit_roundoff(out)) * std::fabs(ref) +
         activation_floor(out);
}

// The tolerance of a sum of K products (matmul, conv2d) through a fused activation.
inline double accumulation_tolerance(int64_t k, double abs_sum, phx_activation act, double ref,
                                     phx_dtype out) {
  const double pre = 2.0 * static_cast<double>(k) * kF32Epsilon * abs_sum + 1e-6;
  if (act == PHX_ACTIVATION_NONE) return pre + final_rounding(out, ref);
  return 1.2 * pre + activation_tolerance(act, ref, out);
}

// Inputs for gelu and silu over their whole range, as dt holds them: a dense sweep of
// [-20, 20] (step 1/16), the negative tails where the results are tiny but normal
// (silu's down to x = -92.4, in steps of 1/4 from -100; gelu's end at -13.2, inside the
// sweep), magnitudes growing by 1.7 from 20 to dt's largest finite value on both sides,
// that value itself, and a few near 0.
inline std::vector<double> whole_range_inputs(phx_dtype dt) {
  std::vector<double> v;
  for (int i = -320; i <= 320; ++i) v.push_back(i / 16.0);
  for (int i = -400; i < -80; ++i) v.push_back(i / 4.0);
  const double max = float_format(dt).max_finite;
  for (double m = 20.0 * 1.7; m < max; m *= 1.7) {
    v.push_back(m);
    v.push_back(-m);
  }
  for (double m : {max, 1e-3, 1e-20}) {
    v.push_back(m);
    v.push_back(-m);
  }
  for (double& x : v) x = round_to_float(dt, x);
  return v;
}

// ---- Handles -------------------------------------------------------------------------------

// Owns a phx_tensor.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(phx_tensor tensor) : tensor_(tensor) {}
  Tensor(Tensor&& other) noexcept : tensor_(std::exchange(other.tensor_, nullptr)) {}
  Tensor& operator=(Tensor&& other) noexcept {
    std::swap(tensor_, other.tensor_);
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() {
    if (tensor_) phx_tensor_destroy(tensor_);
  }
  phx_tensor get() const { return tensor_; }

 private:
  phx_tensor tensor_ = nullptr;
};

inline phx_status create_tensor(phx_context context, size_t device, phx_dtype dt,
                                const Shape& shape, Tensor* out) {
  phx_tensor t = nullptr;
  const phx_status status = phx_tensor_create(context, device, dt, shape.size(),
                                              shape.empty() ? nullptr : shape.data(), &t);
  if (status == PHX_STATUS_OK) *out = Tensor(t);
  return status;
}

inline std::vector<unsigned char> to_bytes(const HostTensor& h) {
  const size_t size = phx_dtype_size(h.dtype);
  std::vector<unsigned char> bytes(h.values.size() * size);
  for (size_t i = 0; i < h.values.size(); ++i) encode(h.dtype, h.values[i], &bytes[i * size]);
  return bytes;
}

// ---- The devices found at run time ---------------------------------------------------------

// ---- What phx-conformance changes ------------------------------------------------------
// The suite runs in two programs: the test executables, on every device a default
// context finds, and phx-conformance, on the devices of one plugin file. The latter sets
// these before the tests are registered.

// The options of every context the suite creates; null: the defaults.
inline const phx_context_options*& suite_context_options() {
  static const phx_context_options* options = nullptr;
  return options;
}

// Told of every op the suite runs through OpSuite::run, so that failures can be laid at
// an op and dtype's door. Null in the test executables.
class OpRunObserver {
 public:
  virtual ~OpRunObserver() = default;
  virtual void ran(size_t device, phx_op_id op, phx_dtype first_input, phx_status status) = 0;
};
inline OpRunObserver*& op_run_observer() {
  static OpRunObserver* observer = nullptr;
  return observer;
}

// Whether device's plugin may refuse, from stream_submit, a variant of an op it claims
// (another dtype of a later input, a parameter, a shape it does not take): a plugin of
// plugin ABI 1.0 or 1.1 may, having no op_variant_supported to say so beforehand. From
// 1.2 on, phx_device_supports_op answers for every variant and a claimed op must run.
inline bool plugin_may_decline_variants(phx_context context, size_t device) {
  phx_device_info device_info = PHX_DEVICE_INFO_INIT;
  if (phx_device_get(context, device, &device_info) != PHX_STATUS_OK) return false;
  size_t count = 0;
  phx_plugin_count(context, &count);
  for (size_t i = 0; i < count; ++i) {
    phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
    if (phx_plugin_get(context, i, &info) == PHX_STATUS_OK && info.state == PHX_PLUGIN_LOADED &&
        std::string(info.name) == device_info.plugin)
      return info.abi_major == 1 && info.abi_minor < 2;
  }
  return false;
}

struct DeviceParam {
  size_t index;
  std::string name;  // "<plugin>_<index>_<device name>", for the test names
};

inline void PrintTo(const DeviceParam& p, std::ostream* os) { *os << p.name; }

inline std::string identifier(const std::string& s) {
  std::string id;
  for (char c : s) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return id;
}

// Runs when the tests are instantiated: a context made only to list the devices, so that
// each plugin's devices get the whole suite the day the plugin loads. Once per process:
// GoogleTest evaluates an instantiation's generator for every test of the suite, and a
// context loads every plugin (lavapipe and its validation layer included), which made
// the start of each test process cost seconds.
inline std::vector<DeviceParam> list_devices() {
  std::vector<DeviceParam> devices;
  phx_context context = nullptr;
  if (phx_context_create(suite_context_options(), &context) != PHX_STATUS_OK) return devices;
  size_t count = 0;
  phx_device_count(context, &count);
  for (size_t i = 0; i < count; ++i) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    if (phx_device_get(context, i, &info) != PHX_STATUS_OK) continue;
    devices.push_back({i, identifier(std::string(info.plugin) + "_" + std::to_string(i) + "_" +
                                     std::string(info.name))});
  }
  phx_context_destroy(context);
  return devices;
}

inline const std::vector<DeviceParam>& devices_found_at_run_time() {
  static const std::vector<DeviceParam> devices = list_devices();
  return devices;
}

class OpSuite : public ::testing::TestWithParam<DeviceParam> {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(phx_context_create(suite_context_options(), &context_), PHX_STATUS_OK)
        << phx_last_error();
  }
  static void TearDownTestSuite() {
    if (context_) {
      EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
    context_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(context_, nullptr);
    ASSERT_EQ(phx_stream_create(context_, device(), &stream_), PHX_STATUS_OK) << phx_last_error();
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context_, device(), &info), PHX_STATUS_OK);
    dtype_mask_ = info.dtype_mask;
    may_decline_variants_ = plugin_may_decline_variants(context_, device());
    for (size_t i = 0; i < info.property_count; ++i) {
      const phx_property& property = info.properties[i];
      if (std::string(property.key) == "matmul_precision") {
        bf16_products_ = std::string(property.value) == "bf16";
      }
    }
  }
  void TearDown() override {
    if (stream_) {
      EXPECT_EQ(phx_stream_destroy(stream_), PHX_STATUS_OK);
    }
  }

  size_t device() const { return GetParam().index; }
  bool holds(phx_dtype dt) const { return (dtype_mask_ & PHX_DTYPE_BIT(dt)) != 0; }

  // The values a matmul or conv2d input enters the products with. A device whose
  // "matmul_precision" property is "bf16" (the TPU simulator, as a TPU does) rounds them to
  // bf16 first, then multiplies and accumulates in f32 (docs/tpu-sim.md).
  HostTensor as_multiplied(const HostTensor& h) const {
    HostTensor rounded = h;
    if (bf16_products_) {
      for (double& v : rounded.values) v = round_to_float(PHX_DTYPE_BF16, v);
    }
    return rounded;
  }

  bool claims(phx_op_id op, phx_dtype dt) const {
    int supported = -1;
    EXPECT_EQ(phx_device_supports(context_, device(), op, dt, &supported), PHX_STATUS_OK);
    EXPECT_TRUE(supported == 0 || supported == 1) << supported;
    return supported == 1;
  }

  Tensor make(phx_dtype dt, const Shape& shape) {
    Tensor t;
    EXPECT_EQ(create_tensor(context_, device(), dt, shape, &t), PHX_STATUS_OK)
        << phx_dtype_name(dt) << shape_string(shape) << ": " << phx_last_error();
    return t;
  }

  Tensor upload(const HostTensor& h) {
    Tensor t = make(h.dtype, h.shape);
    if (!t.get()) return t;
    const std::vector<unsigned char> bytes = to_bytes(h);
    EXPECT_EQ(phx_tensor_upload(t.get(), 0, bytes.data(), bytes.size()), PHX_STATUS_OK)
        << phx_last_error();
    return t;
  }

  std::vector<double> download(const Tensor& t, phx_dtype dt, int64_t count) {
    const size_t size = phx_dtype_size(dt);
    std::vector<unsigned char> bytes(static_cast<size_t>(count) * size);
    EXPECT_EQ(phx_tensor_download(t.get(), 0, bytes.data(), bytes.size()), PHX_STATUS_OK)
        << phx_last_error();
    std::vector<double> values(static_cast<size_t>(count));
    for (size_t i = 0; i < values.size(); ++i) values[i] = decode(dt, &bytes[i * size]);
    return values;
  }

  // Submits the op and waits for it; returns the first status that is not OK. With
  // ops_as_graphs (phx_op_suite_graph_test), the op runs as a one-node graph compiled for
  // the device instead: the graph path must answer as phx_op_run does.
  phx_status run(phx_op_id op, const void* params, const std::vector<phx_tensor>& inputs,
                 const std::vector<phx_tensor>& outputs, uint64_t* ticket = nullptr) {
    const phx_op_desc desc = {
        sizeof(phx_op_desc), op, params, inputs.data(), inputs.size(), outputs.data(),
        outputs.size()};
    phx_status status = ops_as_graphs ? run_as_graph(op, params, inputs, outputs, ticket)
                                      : phx_op_run(stream_, &desc, ticket);
    if (status == PHX_STATUS_OK) status = phx_stream_synchronize(stream_);
    if (OpRunObserver* observer = op_run_observer(); observer != nullptr && !inputs.empty()) {
      phx_tensor_desc first = PHX_TENSOR_DESC_INIT;
      if (inputs[0] != nullptr) phx_tensor_describe(inputs[0], &first);
      observer->ran(device(), op, first.dtype, status);
    }
    return status;
  }

  // The op as a graph: an input per tensor (null: PHX_VALUE_NONE), the node with the output
  // tensors' dtypes, an output per output tensor; compiled for the device, saved and
  // loaded back (so that every op's executable, and what a device keeps of its compiled
  // part, crosses phx_executable_save and _load), run once.
  phx_status run_as_graph(phx_op_id op, const void* params, const std::vector<phx_tensor>& inputs,
                          const std::vector<phx_tensor>& outputs, uint64_t* ticket) {
    phx_graph graph = nullptr;
    phx_status status = phx_graph_create(context_, &graph);
    std::vector<phx_value> values;
    std::vector<phx_tensor> graph_inputs;
    for (phx_tensor t : inputs) {
      if (t == nullptr) {
        values.push_back(PHX_VALUE_NONE);
        continue;
      }
      phx_tensor_desc d = PHX_TENSOR_DESC_INIT;
      phx_tensor_describe(t, &d);
      phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
      input.dtype = d.dtype;
      input.rank = d.rank;
      input.shape = d.shape;
      phx_value v = PHX_VALUE_NONE;
      if (status == PHX_STATUS_OK) status = phx_graph_add_input(graph, &input, &v);
      values.push_back(v);
      graph_inputs.push_back(t);
    }
    std::vector<phx_dtype> output_dtypes;
    for (phx_tensor t : outputs) {
      phx_tensor_desc d = PHX_TENSOR_DESC_INIT;
      phx_tensor_describe(t, &d);
      output_dtypes.push_back(d.dtype);
    }
    phx_graph_node_desc node = PHX_GRAPH_NODE_DESC_INIT;
    node.op = op;
    node.params = params;
    node.inputs = values.data();
    node.input_count = values.size();
    node.output_dtypes = output_dtypes.data();
    node.output_count = outputs.size();
    std::vector<phx_value> results(outputs.size());
    if (status == PHX_STATUS_OK) status = phx_graph_add_node(graph, &node, results.data());
    for (size_t o = 0; o < results.size() && status == PHX_STATUS_OK; ++o)
      status = phx_graph_add_output(graph, results[o], nullptr);
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = device();
    phx_executable exe = nullptr;
    if (status == PHX_STATUS_OK) status = phx_graph_compile(context_, graph, &options, &exe);
    if (status == PHX_STATUS_OK) status = reload(exe);
    if (status == PHX_STATUS_OK)
      status = phx_executable_run(stream_, exe, graph_inputs.data(), graph_inputs.size(),
                                  outputs.data(), outputs.size(), ticket);
    // A call that succeeds leaves the last error as it was: the test still reads the failure's.
    if (exe != nullptr) {
      EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
    }
    if (graph != nullptr) {
      EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
    }
    return status;
  }

  // Replaces exe with what phx_executable_load makes of its saved bytes, on the same device.
  phx_status reload(phx_executable& exe) {
    size_t size = 0;
    phx_status status = phx_executable_save(exe, nullptr, 0, &size);
    std::vector<unsigned char> bytes(size);
    if (status == PHX_STATUS_OK) status = phx_executable_save(exe, bytes.data(), size, &size);
    EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
    exe = nullptr;
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = device();
    if (status == PHX_STATUS_OK)
      status = phx_executable_load(context_, bytes.data(), bytes.size(), &options, &exe);
    EXPECT_EQ(status, PHX_STATUS_OK) << "saving and loading: " << phx_last_error();
    return status;
  }

  // Runs op on inputs (null: an absent optional input) into a new output of out_dtype and
  // out_shape, and compares with expected. When the device does not claim the op for the
  // first input's dtype, checks instead that it answers UNSUPPORTED.
  void check_op(const std::string& what, phx_op_id op, const void* params,
                const std::vector<const HostTensor*>& inputs, phx_dtype out_dtype,
                const Shape& out_shape, const Expected& expected) {
    SCOPED_TRACE(std::string(phx_op_name(op)) + " " + what);
    const phx_dtype dt = inputs.front()->dtype;
    const bool claimed = claims(op, dt);
    // The first dtype among the tensors that the device cannot hold, if any.
    std::optional<phx_dtype> unheld;
    for (const HostTensor* in : inputs)
      if (in != nullptr && !holds(in->dtype) && !unheld) unheld = in->dtype;
    if (!unheld && !holds(out_dtype)) unheld = out_dtype;
    if (unheld) {
      // A device that cannot hold a dtype cannot claim an op on it.
      EXPECT_FALSE(claimed && !holds(dt));
      Tensor t;
      EXPECT_EQ(create_tensor(context_, device(), *unheld, {1}, &t), PHX_STATUS_UNSUPPORTED);
      return;
    }
    std::vector<Tensor> owned;
    std::vector<phx_tensor> handles;
    for (const HostTensor* in : inputs) {
      owned.push_back(in ? upload(*in) : Tensor());
      handles.push_back(owned.back().get());
    }
    const Tensor out = make(out_dtype, out_shape);
    ASSERT_NE(out.get(), nullptr);
    const phx_status status = run(op, params, handles, {out.get()});
    if (!claimed) {
      EXPECT_EQ(status, PHX_STATUS_UNSUPPORTED)
          << "not claimed by phx_device_supports: " << phx_last_error();
      return;
    }
    if (status == PHX_STATUS_UNSUPPORTED && may_decline_variants_) return;
    ASSERT_EQ(status, PHX_STATUS_OK) << phx_last_error();
    expect_matches(download(out, out_dtype, element_count(out_shape)), expected, out_dtype);
  }

  static void expect_matches(const std::vector<double>& got, const Expected& expected,
                             phx_dtype out_dtype) {
    ASSERT_EQ(got.size(), expected.values.size());
    size_t failures = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double ref = expected.values[i];
      const double tol = expected.tolerances[i];
      bool ok = false;
      if (std::isnan(ref)) {
        ok = std::isnan(got[i]);
      } else if (std::isinf(ref) || tol == 0.0) {
        ok = got[i] == ref &&
             !(is_float(out_dtype) && ref == 0.0 && std::signbit(got[i]) != std::signbit(ref));
      } else {
        ok = std::fabs(got[i] - ref) <= tol;
      }
      if (!ok && ++failures <= 5) {
        ADD_FAILURE() << "element " << i << ": got " << std::setprecision(10) << got[i]
                      << ", expected " << ref << " +- " << tol;
      }
    }
    EXPECT_EQ(failures, 0u) << "of " << got.size() << " elements";
  }

  static inline phx_context context_ = nullptr;
  phx_stream stream_ = nullptr;
  uint32_t dtype_mask_ = 0;
  bool may_decline_variants_ = false;
  bool bf16_products_ = false;
};

}  // namespace phx_test
