// Tests of the host op kernels (ops.h) against float64 references.
//
// Tolerances, with eps the unit roundoff of f32 (2^-24) and out_eps that of the output
// dtype (f32 2^-24, f16 2^-11, bf16 2^-8: the error bound of the final rounding to
// nearest even):
// - add/sub/mul/div: one f32 rounding plus the output rounding: (2 eps + out_eps)|ref|.
// - relu: exact. silu: a few ulps from exp and the division: 16 eps |ref|. gelu: the
//   exp argument -x^2/2 is computed in f32 (x / sqrt2 rounded, then squared) and
//   carries an absolute error up to about 1.5 eps x^2, which becomes a relative error
//   of the result: (16 + 2 x^2) eps |ref|. Plus out_eps |ref| each.
// - Below the normal range of the output dtype, an absolute half of its smallest
//   subnormal (out_tiny) replaces the relative bounds.
// - softmax: exp(x - max) errs by (|x - max| + 4) eps relative; the sum adds n eps
//   over all terms, and the output rounding out_eps.
// - layer/rms norm: the mean and variance err by about n eps relative; the output
//   (x - mean) * rstd errs by that times |y|, plus 8 eps: (n eps + 8 eps)(1 + |y|),
//   plus out_eps |y|.
// - reduce_sum: accumulated in f32: n eps sum|x| (plus out_eps |ref|). reduce_max,
//   transpose, cast, integer ops: exact.
// - matmul/conv2d (gemm accumulates in f32): 2 K eps sum|a||b| + out_eps |ref|, and the
//   activation's own error as above.
// Shapes avoid multiples of vector widths (1, 7, 127, 129, 1000) and include sizes
// past the threading threshold (32K elements) to exercise the parallel paths.
#include "phx/kernels/ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "phx/kernels/convert.h"
#include "phx/kernels/thread_pool.h"

namespace phx::kernels {
namespace {

constexpr double kEps = 0x1p-24;

ThreadPool& pool() {
  static ThreadPool p(4);  // more threads than cores: the split must not matter
  return p;
}

bool is_float(phx_dtype d) {
  return d == PHX_DTYPE_F32 || d == PHX_DTYPE_F16 || d == PHX_DTYPE_BF16;
}

size_t bytes_of(phx_dtype d) {
  switch (d) {
    case PHX_DTYPE_F32:
    case PHX_DTYPE_I32:
      return 4;
    case PHX_DTYPE_F16:
    case PHX_DTYPE_BF16:
    case PHX_DTYPE_I16:
      return 2;
    default:
      return 1;
  }
}

double out_eps(phx_dtype d) {
  return d == PHX_DTYPE_F16 ? 0x1p-11 : d == PHX_DTYPE_BF16 ? 0x1p-8 : kEps;
}

// The absolute error of rounding to dtype below its normal range: half its smallest
// subnormal (relative bounds do not hold there).
double out_tiny(phx_dtype d) { return d == PHX_DTYPE_F16 ? 0x1p-25 : 0x1p-150; }

const char* name(phx_dtype d) {
  static const char* names[] = {"invalid", "f32", "f16", "bf16", "i8", "i16", "i32", "u8"};
  return names[d];
}

// The value of f16 bits, decoded here independently of convert.h.
double decode_f16(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f)
    v = mant ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (exp == 0)
    v = std::ldexp(mant, -24);
  else
    v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

double decode_bf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// v rounded to nearest even with `digits` significant bits, the smallest exponent
// min_exp (subnormals below), and infinity past max_finite's rounding boundary.
double round_to(double v, int digits, int min_exp, double max_finite) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  int e;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const int ulp_exp = std::max(e - 1, min_exp) - (digits - 1);
  const double r = std::nearbyint(std::ldexp(v, -ulp_exp));
  const double result = std::ldexp(r, ulp_exp);
  const double limit =
      max_finite + std::ldexp(1.0, std::ilogb(max_finite) - digits);  // half an ulp
  if (std::fabs(result) >= limit || std::fabs(v) >= limit) return std::copysign(INFINITY, v);
  return result;
}

// The reference rounding of a real value to dtype (ints: nearest even, saturated).
double round_to_dtype(phx_dtype d, double v) {
  switch (d) {
    case PHX_DTYPE_F32:
      return round_to(v, 24, -126, 3.4028234663852886e38);
    case PHX_DTYPE_F16:
      return round_to(v, 11, -14, 65504.0);
    case PHX_DTYPE_BF16:
      return round_to(v, 8, -126, 3.3895313892515355e38);
    default: {
      if (std::isnan(v)) return 0;
      const double lo = d == PHX_DTYPE_I8    ? -128
                        : d == PHX_DTYPE_I16 ? -32768
                        : d == PHX_DTYPE_I32 ? -2147483648.0
                                             : 0;
      const double hi = d == PHX_DTYPE_I8    ? 127
                        : d == PHX_DTYPE_I16 ? 32767
                        : d == PHX_DTYPE_I32 ? 2147483647.0
                                             : 255;
      return std::clamp(std::nearbyint(v), lo, hi);
    }
  }
}

// A tensor with its storage, read and written as doubles.
struct Tensor {
  std::vector<unsigned char> bytes;
  HostTensor t;

  Tensor() = default;
  Tensor(phx_dtype dtype, std::vector<int64_t> shape) {
    t.dtype = dtype;
    t.rank = static_cast<uint32_t>(shape.size());
    for (int d = 0; d < PHX_MAX_RANK; ++d) t.shape[d] = 1;
    std::copy(shape.begin(), shape.end(), t.shape);
    bytes.assign(static_cast<size_t>(size()) * bytes_of(dtype) + 1, 0);
    t.data = bytes.data();
  }
  int64_t size() const { return element_count(t); }
  phx_dtype dtype() const { return t.dtype; }

  double get(int64_t i) const {
    const unsigned char* p = bytes.data() + i * bytes_of(t.dtype);
    switch (t.dtype) {
      case PHX_DTYPE_F32: {
        float f;
        std::memcpy(&f, p, 4);
        return f;
      }
      case PHX_DTYPE_F16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return decode_f16(h);
      }
      case PHX_DTYPE_BF16: {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return decode_bf16(h);
      }
      case PHX_DTYPE_I8:
        return static_cast<int8_t>(*p);
      case PHX_DTYPE_I16: {
        int16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      case PHX_DTYPE_I32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
      default:
        return *p;
    }
  }
  // Stores v: floats rounded through f32 (inputs only), integers wrapped.
  void set(int64_t i, double v) {
    unsigned char* p = bytes.data() + i * bytes_of(t.dtype);
    const float f = static_cast<float>(v);
    const int64_t w = static_cast<int64_t>(v);
    switch (t.dtype) {
      case PHX_DTYPE_F32:
        std::memcpy(p, &f, 4);
        break;
      case PHX_DTYPE_F16: {
        uint16_t h = f32_to_f16(f);
        std::memcpy(p, &h, 2);
        break;
      }
      case PHX_DTYPE_BF16: {
        uint16_t h = f32_to_bf16(f);
        std::memcpy(p, &h, 2);
        break;
      }
      case PHX_DTYPE_I8:
        *p = static_cast<unsigned char>(w);
        break;
      case PHX_DTYPE_I16: {
        int16_t x = static_cast<int16_t>(w);
        std::memcpy(p, &x, 2);
        break;
      }
      case PHX_DTYPE_I32: {
        int32_t x = static_cast<int32_t>(w);
        std::memcpy(p, &x, 4);
        break;
      }
      default:
        *p = static_cast<unsigned char>(w);
        break;
    }
  }
  std::vector<double> values() const {
    std::vector<double> v(static_cast<size_t>(size()));
    for (int64_t i = 0; i < size(); ++i) v[i] = get(i);
    return v;
  }
};

std::mt19937_64& rng() {
  static std::mt19937_64 r(12345);
  return r;
}

// Random values: floats uniform in [lo, hi]; integers over the dtype's whole range,
// so that sums and products wrap.
Tensor random_tensor(phx_dtype dtype, std::vector<int64_t> shape, double lo = -3, double hi = 3) {
  Tensor t(dtype, std::move(shape));
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> any(-2147483648LL, 2147483647LL);
  for (int64_t i = 0; i < t.size(); ++i) t.set(i, is_float(dtype) ? real(rng()) : any(rng()));
  return t;
}

phx_status run(phx_op_id op, const void* params, std::vector<const Tensor*> in, Tensor& out) {
  std::vector<HostTensor> inputs;
  for (const Tensor* t : in) inputs.push_back(t ? t->t : HostTensor{});
  return run_op(op, params, inputs.data(), inputs.size(), &out.t, 1, pool());
}

// Compares out with ref elementwise: |out - ref| <= tol(i) (NaN must match NaN).
void expect_near(const Tensor& out, const std::vector<double>& ref,
                 const std::function<double(int64_t)>& tol, const std::string& what) {
  ASSERT_EQ(static_cast<size_t>(out.size()), ref.size()) << what;
  int failures = 0;
  for (int64_t i = 0; i < out.size() && failures < 5; ++i) {
    const double got = out.get(i), want = ref[i];
    const bool ok = std::isnan(want)   ? std::isnan(got)
                    : std::isinf(want) ? got == want
                                       : std::fabs(got - want) <= tol(i);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": element " << i << " is " << got << ", want " << want
                    << " (tolerance " << tol(i) << ")";
    }
  }
}

std::vector<int64_t> broadcast_shape(std::vector<int64_t> a, std::vector<int64_t> b) {
  const size_t r = std::max(a.size(), b.size());
  a.insert(a.begin(), r - a.size(), 1);
  b.insert(b.begin(), r - b.size(), 1);
  std::vector<int64_t> o(r);
  for (size_t i = 0; i < r; ++i) o[i] = std::max(a[i], b[i]);
  return o;
}

// The flat index into t (right-aligned, broadcast) of output multi-index idx.
int64_t broadcast_index(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t flat = 0;
  const size_t off = idx.size() - t.t.rank;
  for (size_t d = 0; d < t.t.rank; ++d) {
    const int64_t size = t.t.shape[d];
    flat = flat * size + (size == 1 ? 0 : idx[off + d]);
  }
  return flat;
}

std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t wrap(phx_dtype d, int64_t v) {
  switch (d) {
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

const phx_dtype kFloats[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16};
const phx_dtype kAll[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16, PHX_DTYPE_I8,
                          PHX_DTYPE_I16, PHX_DTYPE_I32, PHX_DTYPE_U8};

// ---- support ----

// A task that throws (a scratch buffer's std::bad_alloc) ends the region: run rethrows it
// on the caller, whichever thread ran it, and the pool then runs the next region whole.
// One task throwing, or all of them (only one exception comes out).
TEST(ThreadPool, ATaskThatThrowsReachesTheCallerAndThePoolGoesOn) {
  ThreadPool p(3);
  for (int round = 0; round < 20; ++round) {
    const bool all = round % 2 == 1;
    EXPECT_THROW(p.run(64,
                       [&](size_t i) {
                         if (all || i == size_t(round)) throw std::bad_alloc();
                       }),
                 std::bad_alloc);
    std::vector<std::atomic<int>> ran(100);
    p.run(ran.size(), [&](size_t i) { ++ran[i]; });
    for (const auto& r : ran) EXPECT_EQ(r.load(), 1);
  }
}

// Regions back to back (the workers still spinning from the last), after a pause longer
// than the spin (the workers asleep, woken), and from two threads at once (one region at
// a time; the other runs its tasks inline): every task runs exactly once each time. A
// region of 3 tasks that wait for each other (up to 10 s) shows that both workers join it,
// whether they were spinning or asleep, however loaded the machine is.
TEST(ThreadPool, RegionsBackToBackAfterSleepAndFromTwoThreads) {
  ThreadPool p(3);
  auto check_round = [&](size_t tasks) {
    std::vector<std::atomic<int>> ran(tasks);
    p.run(tasks, [&](size_t i) { ++ran[i]; });
    for (const auto& r : ran) ASSERT_EQ(r.load(), 1);
  };
  auto all_three_meet = [&] {
    std::atomic<int> started{0};
    std::atomic<bool> met{true};
    p.run(3, [&](size_t) {
      ++started;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (started.load() < 3)
        if (std::chrono::steady_clock::now() > until) {
          met = false;
          return;
        }
    });
    return met.load();
  };
  for (int round = 0; round < 200; ++round) check_round(1 + round % 37);
  EXPECT_TRUE(all_three_meet()) << "spinning workers";
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_TRUE(all_three_meet()) << "workers woken from sleep";
  }
  std::atomic<int> total{0};
  auto hammer = [&] {
    for (int round = 0; round < 100; ++round) p.run(16, [&](size_t) { ++total; });
  };
  std::thread other(hammer);
  hammer();
  other.join();
  EXPECT_EQ(total.load(), 2 * 100 * 16);
}

TEST(OpsSupport, MatchesThePluginsClaims) {
  // Every float op of API 0.1, attention and rope, for every float dtype.
  for (phx_dtype d : kFloats) {
    for (int op = 1; op <= PHX_OP_CONV2D; ++op) EXPECT_TRUE(op_supported(phx_op_id(op), d));
    EXPECT_TRUE(op_supported(PHX_OP_ATTENTION, d));
    EXPECT_TRUE(op_supported(PHX_OP_ROPE, d));
  }
  // The quantized ops, for the dtypes their rules define.
  EXPECT_TRUE(op_supported(PHX_OP_QUANTIZE, PHX_DTYPE_F32));
  EXPECT_TRUE(op_supported(PHX_OP_DYNAMIC_QUANTIZE, PHX_DTYPE_F32));
  EXPECT_FALSE(op_supported(PHX_OP_QUANTIZE, PHX_DTYPE_F16));
  EXPECT_FALSE(op_supported(PHX_OP_QMATMUL, PHX_DTYPE_F32));
  for (phx_dtype d : {PHX_DTYPE_I8, PHX_DTYPE_U8, PHX_DTYPE_I16}) {
    EXPECT_TRUE(op_supported(PHX_OP_QMATMUL, d));
    EXPECT_TRUE(op_supported(PHX_OP_QCONV2D, d));
    EXPECT_TRUE(op_supported(PHX_OP_DEQUANTIZE, d));
  }
  EXPECT_TRUE(op_supported(PHX_OP_DEQUANTIZE, PHX_DTYPE_I32));
  EXPECT_FALSE(op_supported(PHX_OP_QMATMUL, PHX_DTYPE_I32));
  for (phx_dtype d : {PHX_DTYPE_I8, PHX_DTYPE_I16, PHX_DTYPE_I32, PHX_DTYPE_U8}) {
    for (phx_op_id op : {PHX_OP_ADD, PHX_OP_SUB, PHX_OP_MUL, PHX_OP_TRANSPOSE, PHX_OP_REDUCE_SUM,
                         PHX_OP_REDUCE_MAX, PHX_OP_CAST})
      EXPECT_TRUE(op_supported(op, d)) << op;
    for (phx_op_id op : {PHX_OP_MATMUL, PHX_OP_DIV, PHX_OP_GELU, PHX_OP_SILU, PHX_OP_SOFTMAX,
                         PHX_OP_LAYER_NORM, PHX_OP_RMS_NORM, PHX_OP_CONV2D})
      EXPECT_FALSE(op_supported(op, d));
    EXPECT_EQ(op_supported(PHX_OP_RELU, d), d != PHX_DTYPE_U8);
  }
  // The layout ops and max_pool move or pick values of every dtype; avg_pool,
  // conv_transpose2d and resize compute on floats only.
  for (phx_dtype d : kAll) {
    for (phx_op_id op : {PHX_OP_RESHAPE, PHX_OP_CONCAT, PHX_OP_SLICE, PHX_OP_GATHER, PHX_OP_EXPAND,
                         PHX_OP_TILE, PHX_OP_PAD, PHX_OP_MAX_POOL})
      EXPECT_TRUE(op_supported(op, d)) << op;
    for (phx_op_id op : {PHX_OP_AVG_POOL, PHX_OP_CONV_TRANSPOSE2D, PHX_OP_RESIZE})
      EXPECT_EQ(op_supported(op, d), is_float(d)) << op;
  }
  EXPECT_FALSE(op_supported(PHX_OP_INVALID, PHX_DTYPE_F32));
  EXPECT_FALSE(op_supported(PHX_OP_ADD, PHX_DTYPE_INVALID));
  Tensor x(PHX_DTYPE_I32, {3}), y(PHX_DTYPE_I32, {3});
  EXPECT_EQ(run(PHX_OP_GELU, nullptr, {&x}, y), PHX_STATUS_UNSUPPORTED);
}

// ---- null parameters ----

// A caller without a host (a plugin's own tests) may pass null parameters: the op runs with
// the defaults docs/ops.md gives, the bits of a run with them spelled out. Required
// parameters (reshape's, resize's) are refused, as the core refuses them.
TEST(OpsParams, NullTakesTheOpsDefaults) {
  const Tensor x = random_tensor(PHX_DTYPE_F32, {3, 4, 5});
  const Tensor b = random_tensor(PHX_DTYPE_F32, {5, 6});
  const Tensor image = random_tensor(PHX_DTYPE_F32, {1, 2, 5, 5});
  const Tensor weight = random_tensor(PHX_DTYPE_F32, {3, 2, 3, 3});
  const phx_matmul_params matmul PHX_MATMUL_PARAMS_INIT;
  const phx_softmax_params softmax PHX_SOFTMAX_PARAMS_INIT;
  const phx_norm_params norm PHX_NORM_PARAMS_INIT;
  const phx_transpose_params reversed = {sizeof(phx_transpose_params), {2, 1, 0}};
  const phx_reduce_params reduce PHX_REDUCE_PARAMS_INIT;
  const phx_conv2d_params conv2d PHX_CONV2D_PARAMS_INIT;
  const phx_elementwise_params leaky_relu PHX_ELEMENTWISE_PARAMS_INIT(0.01f, 0.0f);
  const phx_elementwise_params elu PHX_ELEMENTWISE_PARAMS_INIT(1.0f, 0.0f);
  const phx_elementwise_params selu PHX_ELEMENTWISE_PARAMS_INIT(1.67326319217681884765625f,
                                                                1.05070102214813232421875f);
  const float max = std::numeric_limits<float>::max();
  const phx_elementwise_params clip PHX_ELEMENTWISE_PARAMS_INIT(-max, max);
  const phx_argmax_params argmax PHX_ARGMAX_PARAMS_INIT;
  const phx_axis_params axis PHX_AXIS_PARAMS_INIT;
  const phx_slice_params slice PHX_SLICE_PARAMS_INIT;
  const phx_tile_params tile PHX_TILE_PARAMS_INIT;
  const phx_pad_params pad PHX_PAD_PARAMS_INIT;
  struct Case {
    phx_op_id op;
    const void* params;
    std::vector<const Tensor*> in;
    phx_dtype out_dtype;
    std::vector<int64_t> out_shape;
  };
  const Case cases[] = {
      {PHX_OP_MATMUL, &matmul, {&x, &b}, PHX_DTYPE_F32, {3, 4, 6}},
      {PHX_OP_SOFTMAX, &softmax, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
      {PHX_OP_LAYER_NORM, &norm, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
      {PHX_OP_TRANSPOSE, &reversed, {&x}, PHX_DTYPE_F32, {5, 4, 3}},
      {PHX_OP_REDUCE_SUM, &reduce, {&x}, PHX_DTYPE_F32, {}},
      {PHX_OP_CONV2D, &conv2d, {&image, &weight}, PHX_DTYPE_F32, {1, 3, 3, 3}},
      {PHX_OP_LEAKY_RELU, &leaky_relu, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
      {PHX_OP_ELU, &elu, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
      {PHX_OP_SELU, &selu, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
      {PHX_OP_CLIP, &clip, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
      {PHX_OP_ARGMAX, &argmax, {&x}, PHX_DTYPE_I32, {1, 4, 5}},
      {PHX_OP_CONCAT, &axis, {&x, &x}, PHX_DTYPE_F32, {6, 4, 5}},
      {PHX_OP_SLICE, &slice, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
      {PHX_OP_TILE, &tile, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
      {PHX_OP_PAD, &pad, {&x}, PHX_DTYPE_F32, {3, 4, 5}},
  };
  for (const Case& c : cases) {
    Tensor spelled_out(c.out_dtype, c.out_shape), defaulted(c.out_dtype, c.out_shape);
    ASSERT_EQ(run(c.op, c.params, c.in, spelled_out), PHX_STATUS_OK) << c.op;
    ASSERT_EQ(run(c.op, nullptr, c.in, defaulted), PHX_STATUS_OK) << c.op;
    EXPECT_EQ(defaulted.bytes, spelled_out.bytes) << c.op;
  }
  Tensor same(PHX_DTYPE_F32, {3, 4, 5});
  EXPECT_EQ(run(PHX_OP_RESHAPE, nullptr, {&x}, same), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(run(PHX_OP_RESIZE, nullptr, {&x}, same), PHX_STATUS_INVALID_ARGUMENT);
}

// ---- add, sub, mul, div ----

double binary_ref(phx_op_id op, phx_dtype d, double a, double b) {
  if (!is_float(d)) {
    const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    const uint64_t r = op == PHX_OP_ADD ? ux + uy : op == PHX_OP_SUB ? ux - uy : ux * uy;
    return static_cast<double>(wrap(d, static_cast<int64_t>(r)));
  }
  switch (op) {
    case PHX_OP_ADD:
      return a + b;
    case PHX_OP_SUB:
      return a - b;
    case PHX_OP_MUL:
      return a * b;
    default:
      return a / b;
  }
}

void check_binary(phx_op_id op, phx_dtype d, std::vector<int64_t> sa, std::vector<int64_t> sb) {
  const Tensor a = random_tensor(d, sa), b = random_tensor(d, sb, op == PHX_OP_DIV ? 0.5 : -3, 3);
  const std::vector<int64_t> so = broadcast_shape(sa, sb);
  Tensor out(d, so);
  ASSERT_EQ(run(op, nullptr, {&a, &b}, out), PHX_STATUS_OK);
  std::vector<double> ref(static_cast<size_t>(out.size()));
  for (int64_t i = 0; i < out.size(); ++i) {
    const auto idx = unravel(i, so);
    ref[i] = binary_ref(op, d, a.get(broadcast_index(a, idx)), b.get(broadcast_index(b, idx)));
  }
  const double rel = is_float(d) ? 2 * kEps + out_eps(d) : 0;
  expect_near(
      out, ref, [&](int64_t i) { return rel * std::fabs(ref[i]) + out_tiny(d); },
      std::string(name(d)) + " op " + std::to_string(op) + " shapes " + std::to_string(a.size()) +
          "/" + std::to_string(b.size()));
}

TEST(OpsBinary, EveryDtypeAndBroadcast) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{1}, {1}},
      {{1000}, {1000}},
      {{7, 129}, {7, 129}},
      {{}, {127}},
      {{127}, {}},
      {{7, 129}, {129}},
      {{7, 129}, {7, 1}},
      {{7, 1}, {1, 129}},
      {{2, 1, 7}, {1, 5, 1}},
      {{3, 4, 5}, {3, 1, 5}},
      {{2, 3, 1, 7}, {3, 127, 1}},
      {{300, 127}, {300, 127}},
      {{257, 129}, {129}},
      {{1, 40000}, {1}}};
  for (phx_dtype d : kAll)
    for (phx_op_id op : {PHX_OP_ADD, PHX_OP_SUB, PHX_OP_MUL, PHX_OP_DIV}) {
      if (op == PHX_OP_DIV && !is_float(d)) continue;
      for (const auto& [sa, sb] : shapes) check_binary(op, d, sa, sb);
    }
}

TEST(OpsBinary, InPlaceOverAnInput) {
  Tensor a = random_tensor(PHX_DTYPE_F32, {50000});
  const Tensor b = random_tensor(PHX_DTYPE_F32, {50000});
  const std::vector<double> va = a.values();
  HostTensor in[] = {a.t, b.t};
  ASSERT_EQ(run_op(PHX_OP_MUL, nullptr, in, 2, &a.t, 1, pool()), PHX_STATUS_OK);
  for (int64_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(a.get(i), static_cast<float>(va[i] * b.get(i))) << i;
}

// ---- relu, gelu, silu ----

double gelu_ref(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double silu_ref(double x) { return x / (1 + std::exp(-x)); }

TEST(OpsUnary, FloatsAgainstFloat64) {
  for (phx_dtype d : kFloats)
    for (int64_t n : {1, 7, 127, 129, 1000, 40000})
      for (phx_op_id op : {PHX_OP_RELU, PHX_OP_GELU, PHX_OP_SILU}) {
        Tensor x = random_tensor(d, {n}, -12, 12);
        if (n >= 7) {  // the special values
          const double special[] = {0.0, -0.0, INFINITY, -30.0, 30.0, -100.0, NAN};
          for (int i = 0; i < 7; ++i) x.set(i, special[i]);
        }
        Tensor y(d, {n});
        ASSERT_EQ(run(op, nullptr, {&x}, y), PHX_STATUS_OK);
        std::vector<double> ref(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          const double v = x.get(i);
          ref[i] = op == PHX_OP_RELU   ? (v < 0 ? 0 : v)
                   : op == PHX_OP_GELU ? (std::isinf(v) ? v : gelu_ref(v))
                                       : silu_ref(v);
        }
        expect_near(
            y, ref,
            [&](int64_t i) {
              const double v = x.get(i);
              const double rel = op == PHX_OP_RELU   ? 0
                                 : op == PHX_OP_GELU ? (16 + 2 * v * v) * kEps
                                                     : 16 * kEps;
              // f32 results below the normal range (|x| > 12 for gelu) lose relative digits
              return (rel + out_eps(d)) * std::fabs(ref[i]) + out_tiny(d) + 0x1p-126;
            },
            std::string(name(d)) + " unary op " + std::to_string(op));
      }
}

TEST(OpsUnary, ReluSignedInts) {
  for (phx_dtype d : {PHX_DTYPE_I8, PHX_DTYPE_I16, PHX_DTYPE_I32}) {
    const Tensor x = random_tensor(d, {1000});
    Tensor y(d, {1000});
    ASSERT_EQ(run(PHX_OP_RELU, nullptr, {&x}, y), PHX_STATUS_OK);
    std::vector<double> ref = x.values();
    for (double& v : ref) v = std::max(v, 0.0);
    expect_near(
        y, ref, [](int64_t) { return 0.0; }, name(d));
  }
}

// ---- softmax ----

void check_softmax(phx_dtype d, std::vector<int64_t> shape, int axis) {
  const Tensor x = random_tensor(d, shape, -8, 8);
  Tensor y(d, shape);
  phx_softmax_params p = PHX_SOFTMAX_PARAMS_INIT;
  p.axis = axis;
  ASSERT_EQ(run(PHX_OP_SOFTMAX, &p, {&x}, y), PHX_STATUS_OK);
  const int rank = static_cast<int>(shape.size());
  const int ax = axis < 0 ? axis + rank : axis;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < ax; ++i) outer *= shape[i];
  for (int i = ax + 1; i < rank; ++i) inner *= shape[i];
  const int64_t len = shape[ax];
  std::vector<double> ref(static_cast<size_t>(x.size())), spread(ref.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + j; };
      double m = -INFINITY, s = 0;
      for (int64_t k = 0; k < len; ++k) m = std::max(m, x.get(at(k)));
      for (int64_t k = 0; k < len; ++k) s += std::exp(x.get(at(k)) - m);
      for (int64_t k = 0; k < len; ++k) {
        ref[at(k)] = std::exp(x.get(at(k)) - m) / s;
        spread[at(k)] = m - x.get(at(k));
      }
    }
  expect_near(
      y, ref,
      [&](int64_t i) {
        return ((spread[i] + 8 + static_cast<double>(len)) * kEps + out_eps(d)) * ref[i] +
               out_tiny(d) + 0x1p-126;
      },
      std::string("softmax ") + name(d) + " axis " + std::to_string(axis));
}

TEST(OpsSoftmax, RowsAndStridedAxes) {
  for (phx_dtype d : kFloats) {
    check_softmax(d, {1}, -1);
    check_softmax(d, {7, 129}, -1);
    check_softmax(d, {3, 1000}, 1);
    check_softmax(d, {129, 7}, 0);
    check_softmax(d, {3, 127, 5}, 1);
    check_softmax(d, {2, 7, 300}, -2);  // columns wider than one block
    check_softmax(d, {64, 1000}, -1);   // threaded
  }
}

TEST(OpsSoftmax, LargeValuesDoNotOverflow) {
  Tensor x(PHX_DTYPE_F32, {3}), y(PHX_DTYPE_F32, {3});
  x.set(0, 1000);
  x.set(1, 1000);
  x.set(2, -1000);
  phx_softmax_params p = PHX_SOFTMAX_PARAMS_INIT;
  ASSERT_EQ(run(PHX_OP_SOFTMAX, &p, {&x}, y), PHX_STATUS_OK);
  EXPECT_FLOAT_EQ(y.get(0), 0.5);
  EXPECT_FLOAT_EQ(y.get(1), 0.5);
  EXPECT_EQ(y.get(2), 0.0);
}

// ---- layer_norm, rms_norm ----

void check_norm(phx_op_id op, phx_dtype d, std::vector<int64_t> shape, bool with_gamma,
                bool with_beta) {
  const Tensor x = random_tensor(d, shape, -2, 6);  // an offset mean tests the centering
  const int64_t n = shape.back();
  const Tensor gamma = random_tensor(d, {n}, 0.5, 2), beta = random_tensor(d, {n});
  Tensor y(d, shape);
  phx_norm_params p = PHX_NORM_PARAMS_INIT;
  p.epsilon = 1e-3f;
  std::vector<const Tensor*> in = {&x, with_gamma ? &gamma : nullptr};
  if (op == PHX_OP_LAYER_NORM) in.push_back(with_beta ? &beta : nullptr);
  ASSERT_EQ(run(op, &p, in, y), PHX_STATUS_OK);
  std::vector<double> ref(static_cast<size_t>(x.size()));
  for (int64_t r = 0; r < x.size() / n; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x.get(r * n + i);
    mean = op == PHX_OP_LAYER_NORM ? mean / n : 0;
    for (int64_t i = 0; i < n; ++i) var += (x.get(r * n + i) - mean) * (x.get(r * n + i) - mean);
    const double rstd = 1 / std::sqrt(var / n + static_cast<double>(p.epsilon));
    for (int64_t i = 0; i < n; ++i) {
      double v = (x.get(r * n + i) - mean) * rstd;
      if (with_gamma) v *= gamma.get(i);
      if (with_beta && op == PHX_OP_LAYER_NORM) v += beta.get(i);
      ref[r * n + i] = v;
    }
  }
  expect_near(
      y, ref,
      [&](int64_t i) {
        return (static_cast<double>(n) + 8) * kEps * 4 * (1 + std::fabs(ref[i])) +
               out_eps(d) * std::fabs(ref[i]);
      },
      std::string(op == PHX_OP_LAYER_NORM ? "layer_norm " : "rms_norm ") + name(d));
}

TEST(OpsNorm, LayerAndRms) {
  for (phx_dtype d : kFloats)
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{1}, {7, 129}, {1, 1000}, {300, 127}, {2, 3, 7}})
      for (int affine = 0; affine < 4; ++affine) {
        check_norm(PHX_OP_LAYER_NORM, d, shape, affine & 1, affine & 2);
        if (!(affine & 2)) check_norm(PHX_OP_RMS_NORM, d, shape, affine & 1, false);
      }
}

// ---- transpose ----

void check_transpose(phx_dtype d, std::vector<int64_t> shape, std::vector<uint32_t> perm) {
  const Tensor x = random_tensor(d, shape);
  std::vector<int64_t> so(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) so[i] = shape[perm[i]];
  Tensor y(d, so);
  phx_transpose_params p{};
  p.struct_size = sizeof p;
  std::copy(perm.begin(), perm.end(), p.perm);
  ASSERT_EQ(run(PHX_OP_TRANSPOSE, &p, {&x}, y), PHX_STATUS_OK);
  std::vector<double> ref(static_cast<size_t>(y.size()));
  for (int64_t i = 0; i < y.size(); ++i) {
    const auto out_idx = unravel(i, so);
    std::vector<int64_t> in_idx(shape.size());
    for (size_t k = 0; k < perm.size(); ++k) in_idx[perm[k]] = out_idx[k];
    int64_t flat = 0;
    for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + in_idx[k];
    ref[i] = x.get(flat);
  }
  std::string what = std::string("transpose ") + name(d) + " perm";
  for (uint32_t q : perm) what.append(1, ' ').append(std::to_string(q));
  expect_near(
      y, ref, [](int64_t) { return 0.0; }, what);
}

TEST(OpsTranspose, PermutationsAndDtypes) {
  for (phx_dtype d : {PHX_DTYPE_F32, PHX_DTYPE_BF16, PHX_DTYPE_U8}) {
    check_transpose(d, {127, 129}, {1, 0});
    check_transpose(d, {1000, 7}, {1, 0});
    check_transpose(d, {1, 7, 1, 129}, {3, 1, 0, 2});
    check_transpose(d, {300, 257}, {1, 0});  // threaded
    check_transpose(d, {5}, {0});
    std::vector<uint32_t> perm = {0, 1, 2, 3};
    do {
      check_transpose(d, {2, 3, 5, 7}, perm);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  for (phx_dtype d : kAll) check_transpose(d, {3, 4, 5}, {2, 0, 1});
}

// ---- reduce_sum, reduce_max ----

void check_reduce(phx_op_id op, phx_dtype d, std::vector<int64_t> shape, uint32_t mask, bool keep) {
  const Tensor x = random_tensor(d, shape);
  const int rank = static_cast<int>(shape.size());
  auto reduced = [&](int k) { return mask == 0 || (mask >> k & 1u); };
  std::vector<int64_t> so, so_keep;
  for (int k = 0; k < rank; ++k) {
    so_keep.push_back(reduced(k) ? 1 : shape[k]);
    if (!reduced(k) || keep) so.push_back(so_keep.back());
  }
  Tensor y(d, so);
  phx_reduce_params p = PHX_REDUCE_PARAMS_INIT;
  p.axes_mask = mask;
  p.keep_dims = keep;
  ASSERT_EQ(run(op, &p, {&x}, y), PHX_STATUS_OK);
  const bool sum = op == PHX_OP_REDUCE_SUM;
  std::vector<double> ref(static_cast<size_t>(y.size()), sum ? 0.0 : -INFINITY);
  std::vector<double> abs_sum(ref.size(), 0.0), count(ref.size(), 0.0);
  for (int64_t i = 0; i < x.size(); ++i) {
    const auto idx = unravel(i, shape);
    int64_t o = 0;
    for (int k = 0; k < rank; ++k) o = o * so_keep[k] + (reduced(k) ? 0 : idx[k]);
    const double v = x.get(i);
    ref[o] = sum ? ref[o] + v : std::max(ref[o], v);
    abs_sum[o] += std::fabs(v);
    count[o] += 1;
  }
  if (!is_float(d) && sum)
    for (double& v : ref) v = static_cast<double>(wrap(d, static_cast<int64_t>(v)));
  expect_near(
      y, ref,
      [&](int64_t i) {
        return is_float(d) && sum ? count[i] * kEps * abs_sum[i] + out_eps(d) * std::fabs(ref[i])
                                  : 0;
      },
      std::string(sum ? "reduce_sum " : "reduce_max ") + name(d) + " mask " + std::to_string(mask) +
          (keep ? " keep" : ""));
}

TEST(OpsReduce, EveryAxisSet) {
  for (phx_dtype d : kAll)
    for (phx_op_id op : {PHX_OP_REDUCE_SUM, PHX_OP_REDUCE_MAX}) {
      for (uint32_t mask = 0; mask < 8; ++mask) check_reduce(op, d, {7, 129, 5}, mask, mask & 1);
      check_reduce(op, d, {1, 7, 1}, 2, false);
      check_reduce(op, d, {1000, 127}, 1, false);  // threaded: columns
      check_reduce(op, d, {1000, 127}, 2, true);   // threaded: rows
      check_reduce(op, d, {300001}, 0, false);     // threaded: everything
      check_reduce(op, d, {2, 3, 5, 7}, 0b1010, false);
      check_reduce(op, d, {2, 3, 5, 7}, 0b0101, true);
    }
}

// A NaN anywhere in a row (in a vector of the instruction set's width or in the tail
// after the last one) makes its maximum and minimum NaN, and its softmax all NaN; rows of
// +-inf keep their extremes. The forced_isa ctest entries run this on every path.
TEST(OpsReduce, MaxAndMinPropagateNaNAnywhere) {
  phx_reduce_params p = PHX_REDUCE_PARAMS_INIT;
  for (int64_t n : {5, 16, 37, 100})
    for (int64_t at : {int64_t{0}, n / 2, n - 1})
      for (phx_op_id op : {PHX_OP_REDUCE_MAX, PHX_OP_REDUCE_MIN}) {
        Tensor x = random_tensor(PHX_DTYPE_F32, {n});
        x.set(at, NAN);
        Tensor y(PHX_DTYPE_F32, {});
        ASSERT_EQ(run(op, &p, {&x}, y), PHX_STATUS_OK);
        EXPECT_TRUE(std::isnan(y.get(0))) << "n " << n << ", NaN at " << at;
      }
  for (int64_t n : {5, 37}) {
    Tensor x = random_tensor(PHX_DTYPE_F32, {n});
    x.set(n - 1, INFINITY);
    x.set(1, -INFINITY);
    Tensor y(PHX_DTYPE_F32, {});
    ASSERT_EQ(run(PHX_OP_REDUCE_MAX, &p, {&x}, y), PHX_STATUS_OK);
    EXPECT_EQ(y.get(0), INFINITY);
    ASSERT_EQ(run(PHX_OP_REDUCE_MIN, &p, {&x}, y), PHX_STATUS_OK);
    EXPECT_EQ(y.get(0), -INFINITY);
  }
  Tensor x = random_tensor(PHX_DTYPE_F32, {2, 37}), y(PHX_DTYPE_F32, {2, 37});
  x.set(37 + 20, NAN);
  phx_softmax_params sp = PHX_SOFTMAX_PARAMS_INIT;
  ASSERT_EQ(run(PHX_OP_SOFTMAX, &sp, {&x}, y), PHX_STATUS_OK);
  for (int64_t i = 0; i < 37; ++i) {
    EXPECT_FALSE(std::isnan(y.get(i))) << i;
    EXPECT_TRUE(std::isnan(y.get(37 + i))) << i;
  }
}

// ---- cast ----

TEST(OpsCast, EveryPairOfDtypes) {
  // Values at the edges of every dtype: halfway cases, saturation, NaN, subnormals.
  const double special[] = {
      0.0,       -0.0,         0.5,          1.5,           2.5,     -2.5,     -0.5,    127.5,
      128.0,     -129.0,       255.5,        256.0,         32767.5, -32768.5, 65504.0, 65520.0,
      70000.0,   2147483520.0, 2147483648.0, -2147483904.0, 1e10,    -1e10,    3e38,    INFINITY,
      -INFINITY, NAN,          1e-5,         6e-8,          1e-40,   0.1,      1.0 / 3};
  for (phx_dtype from : kAll)
    for (phx_dtype to : kAll) {
      Tensor x = random_tensor(from, {1000}, -300, 300);
      if (is_float(from))
        for (size_t i = 0; i < std::size(special); ++i) x.set(static_cast<int64_t>(i), special[i]);
      if (from == PHX_DTYPE_I32) {  // i32 -> bf16 needs one rounding, not two
        x.set(0, (1 << 30) + (1 << 22) + 1);
        x.set(1, 16777217);
        x.set(2, -((1 << 30) + (1 << 22) + 1));
      }
      Tensor y(to, {1000});
      ASSERT_EQ(run(PHX_OP_CAST, nullptr, {&x}, y), PHX_STATUS_OK);
      std::vector<double> ref = x.values();
      for (double& v : ref)
        v = !is_float(from) && !is_float(to)
                ? static_cast<double>(wrap(to, static_cast<int64_t>(v)))
                : round_to_dtype(to, v);
      expect_near(
          y, ref, [](int64_t) { return 0.0; },
          std::string("cast ") + name(from) + " -> " + name(to));
    }
}

TEST(OpsCast, ThreadedConversion) {
  const Tensor x = random_tensor(PHX_DTYPE_F32, {100003}, -1e5, 1e5);
  for (phx_dtype to : {PHX_DTYPE_F16, PHX_DTYPE_BF16, PHX_DTYPE_I16}) {
    Tensor y(to, {100003});
    ASSERT_EQ(run(PHX_OP_CAST, nullptr, {&x}, y), PHX_STATUS_OK);
    std::vector<double> ref = x.values();
    for (double& v : ref) v = round_to_dtype(to, v);
    expect_near(
        y, ref, [](int64_t) { return 0.0; }, name(to));
  }
}

// ---- matmul ----

double activate(phx_activation act, double v) {
  switch (act) {
    case PHX_ACTIVATION_RELU:
      return std::max(v, 0.0);
    case PHX_ACTIVATION_GELU:
      return gelu_ref(v);
    case PHX_ACTIVATION_SILU:
      return silu_ref(v);
    default:
      return v;
  }
}

struct MatmulCase {
  std::vector<int64_t> a = {}, b = {};  // as stored
  bool ta = false, tb = false;
  std::vector<int64_t> bias = {};
  bool bias_present = false;
  phx_activation act = PHX_ACTIVATION_NONE;
};

void check_matmul(phx_dtype in, phx_dtype out_dtype, const MatmulCase& c) {
  const Tensor a = random_tensor(in, c.a, -1, 1), b = random_tensor(in, c.b, -1, 1);
  const size_t ra = c.a.size(), rb = c.b.size();
  const int64_t m = c.ta ? c.a[ra - 1] : c.a[ra - 2], k = c.ta ? c.a[ra - 2] : c.a[ra - 1];
  const int64_t n = c.tb ? c.b[rb - 2] : c.b[rb - 1];
  std::vector<int64_t> batch = broadcast_shape(std::vector<int64_t>(c.a.begin(), c.a.end() - 2),
                                               std::vector<int64_t>(c.b.begin(), c.b.end() - 2));
  std::vector<int64_t> so = batch;
  so.push_back(m);
  so.push_back(n);
  const Tensor bias = random_tensor(out_dtype, c.bias, -1, 1);
  Tensor y(out_dtype, so);
  phx_matmul_params p = PHX_MATMUL_PARAMS_INIT;
  p.transpose_a = c.ta;
  p.transpose_b = c.tb;
  p.activation = c.act;
  ASSERT_EQ(run(PHX_OP_MATMUL, &p, {&a, &b, c.bias_present ? &bias : nullptr}, y), PHX_STATUS_OK);
  std::vector<double> ref(static_cast<size_t>(y.size())), bound(ref.size());
  // a and b matrices of a batch index, as views with the batch dims broadcast.
  Tensor a_batch(in, std::vector<int64_t>(c.a.begin(), c.a.end() - 2));
  Tensor b_batch(in, std::vector<int64_t>(c.b.begin(), c.b.end() - 2));
  int64_t batches = 1;
  for (int64_t s : batch) batches *= s;
  for (int64_t bi = 0; bi < batches; ++bi) {
    const auto idx = unravel(bi, batch);
    const int64_t ia = (batch.empty() ? 0 : broadcast_index(a_batch, idx)) * m * k;
    const int64_t ib = (batch.empty() ? 0 : broadcast_index(b_batch, idx)) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, abs = 0;
        for (int64_t q = 0; q < k; ++q) {
          const double av = a.get(ia + (c.ta ? q * m + i : i * k + q));
          const double bv = b.get(ib + (c.tb ? j * k + q : q * n + j));
          s += av * bv;
          abs += std::fabs(av * bv);
        }
        const int64_t o = (bi * m + i) * n + j;
        if (c.bias_present) {
          std::vector<int64_t> full = idx;
          full.push_back(i);
          full.push_back(j);
          s += bias.get(broadcast_index(bias, full));
        }
        ref[o] = activate(c.act, s);
        bound[o] = 2 * static_cast<double>(k + 2) * kEps * (abs + 1) *
                       (c.act == PHX_ACTIVATION_NONE ? 1 : 2) +
                   (out_eps(out_dtype) + 32 * kEps) * std::fabs(ref[o]);
      }
  }
  expect_near(
      y, ref, [&](int64_t i) { return bound[i]; },
      std::string("matmul ") + name(in) + " -> " + name(out_dtype));
}

TEST(OpsMatmul, ShapesBroadcastBiasAndDtypes) {
  using A = phx_activation;
  const std::vector<MatmulCase> cases = {
      {.a = {1, 1}, .b = {1, 1}},
      {.a = {7, 127}, .b = {127, 129}},
      {.a = {129, 7}, .b = {127, 129}, .ta = true, .tb = true},
      {.a = {2, 1, 7, 5}, .b = {3, 5, 9}},        // batch broadcast both ways
      {.a = {4, 7, 5}, .b = {5, 9}},              // one b for all: folded into M
      {.a = {7, 5}, .b = {3, 9, 5}, .tb = true},  // one a for all
      {.a = {3, 7, 5},
       .b = {3, 5, 9},
       .bias = {9},
       .bias_present = true,
       .act = A::PHX_ACTIVATION_RELU},
      {.a = {3, 7, 5},
       .b = {3, 5, 9},
       .bias = {1},
       .bias_present = true,
       .act = A::PHX_ACTIVATION_SILU},
      {.a = {3, 7, 5},
       .b = {3, 5, 9},
       .bias = {7, 1},
       .bias_present = true,
       .act = A::PHX_ACTIVATION_GELU},
      {.a = {2, 5, 7}, .b = {5, 9}, .ta = true, .bias = {2, 1, 9}, .bias_present = true},
      {.a = {7, 1000}, .b = {1000, 3}, .act = A::PHX_ACTIVATION_GELU},
  };
  for (phx_dtype in : kFloats)
    for (const MatmulCase& c : cases) {
      check_matmul(in, in, c);
      if (in != PHX_DTYPE_F32) check_matmul(in, PHX_DTYPE_F32, c);
    }
}

// ---- conv2d ----

struct ConvCase {
  phx_layout layout;
  int64_t n, c_in, h, w, c_out, kh, kw;
  uint32_t stride[2], pad[4], dilation[2], groups;
  bool bias;
  phx_activation act;
};

void check_conv(phx_dtype d, const ConvCase& c) {
  const bool nhwc = c.layout == PHX_LAYOUT_NHWC;
  const int64_t cig = c.c_in / c.groups, cog = c.c_out / c.groups;
  const int64_t ho = (c.h + c.pad[0] + c.pad[1] - c.dilation[0] * (c.kh - 1) - 1) / c.stride[0] + 1;
  const int64_t wo = (c.w + c.pad[2] + c.pad[3] - c.dilation[1] * (c.kw - 1) - 1) / c.stride[1] + 1;
  const Tensor x = random_tensor(d,
                                 nhwc ? std::vector<int64_t>{c.n, c.h, c.w, c.c_in}
                                      : std::vector<int64_t>{c.n, c.c_in, c.h, c.w},
                                 -1, 1);
  const Tensor wt = random_tensor(d,
                                  nhwc ? std::vector<int64_t>{c.c_out, c.kh, c.kw, cig}
                                       : std::vector<int64_t>{c.c_out, cig, c.kh, c.kw},
                                  -1, 1);
  const Tensor bias = random_tensor(d, {c.c_out}, -1, 1);
  Tensor y(d, nhwc ? std::vector<int64_t>{c.n, ho, wo, c.c_out}
                   : std::vector<int64_t>{c.n, c.c_out, ho, wo});
  phx_conv2d_params p = PHX_CONV2D_PARAMS_INIT;
  p.layout = c.layout;
  std::copy(c.stride, c.stride + 2, p.stride);
  std::copy(c.pad, c.pad + 4, p.padding);
  std::copy(c.dilation, c.dilation + 2, p.dilation);
  p.groups = c.groups;
  p.activation = c.act;
  ASSERT_EQ(run(PHX_OP_CONV2D, &p, {&x, &wt, c.bias ? &bias : nullptr}, y), PHX_STATUS_OK);
  auto xi = [&](int64_t n, int64_t ch, int64_t i, int64_t j) {
    return nhwc ? ((n * c.h + i) * c.w + j) * c.c_in + ch : ((n * c.c_in + ch) * c.h + i) * c.w + j;
  };
  auto wi = [&](int64_t o, int64_t ch, int64_t i, int64_t j) {
    return nhwc ? ((o * c.kh + i) * c.kw + j) * cig + ch : ((o * cig + ch) * c.kh + i) * c.kw + j;
  };
  auto yi = [&](int64_t n, int64_t o, int64_t i, int64_t j) {
    return nhwc ? ((n * ho + i) * wo + j) * c.c_out + o : ((n * c.c_out + o) * ho + i) * wo + j;
  };
  std::vector<double> ref(static_cast<size_t>(y.size())), bound(ref.size());
  const int64_t k = cig * c.kh * c.kw;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.c_out; ++o)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          double s = c.bias ? bias.get(o) : 0, abs = std::fabs(s);
          const int64_t g = o / cog;
          for (int64_t ch = 0; ch < cig; ++ch)
            for (int64_t a = 0; a < c.kh; ++a)
              for (int64_t b = 0; b < c.kw; ++b) {
                const int64_t ih = i * c.stride[0] - c.pad[0] + a * c.dilation[0];
                const int64_t iw = j * c.stride[1] - c.pad[2] + b * c.dilation[1];
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
                const double v = x.get(xi(n, g * cig + ch, ih, iw)) * wt.get(wi(o, ch, a, b));
                s += v;
                abs += std::fabs(v);
              }
          const int64_t at = yi(n, o, i, j);
          ref[at] = activate(c.act, s);
          bound[at] = 2 * static_cast<double>(k + 2) * kEps * (abs + 1) * 2 +
                      (out_eps(d) + 32 * kEps) * std::fabs(ref[at]);
        }
  expect_near(
      y, ref, [&](int64_t i) { return bound[i]; },
      std::string("conv2d ") + name(d) + (nhwc ? " nhwc" : " nchw"));
}

TEST(OpsConv2d, LayoutsGroupsPaddingBias) {
  const std::vector<ConvCase> cases = {
      // layout, n, c_in, h, w, c_out, kh, kw, stride, pad (t b l r), dilation, groups, bias, act
      {PHX_LAYOUT_NCHW,
       1,
       1,
       1,
       1,
       1,
       1,
       1,
       {1, 1},
       {0, 0, 0, 0},
       {1, 1},
       1,
       false,
       PHX_ACTIVATION_NONE},
      {PHX_LAYOUT_NCHW,
       2,
       3,
       7,
       9,
       5,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       true,
       PHX_ACTIVATION_RELU},
      {PHX_LAYOUT_NCHW,
       1,
       4,
       13,
       11,
       6,
       3,
       2,
       {2, 3},
       {2, 0, 1, 3},
       {2, 1},
       2,
       true,
       PHX_ACTIVATION_GELU},
      {PHX_LAYOUT_NCHW,
       2,
       6,
       5,
       7,
       6,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       6,
       false,
       PHX_ACTIVATION_SILU},
      {PHX_LAYOUT_NCHW,
       2,
       8,
       9,
       7,
       4,
       1,
       1,
       {1, 1},
       {0, 0, 0, 0},
       {1, 1},
       2,
       true,
       PHX_ACTIVATION_NONE},
      {PHX_LAYOUT_NHWC,
       2,
       3,
       7,
       9,
       5,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       true,
       PHX_ACTIVATION_RELU},
      {PHX_LAYOUT_NHWC,
       1,
       4,
       13,
       11,
       6,
       3,
       2,
       {2, 3},
       {2, 0, 1, 3},
       {2, 1},
       2,
       true,
       PHX_ACTIVATION_GELU},
      {PHX_LAYOUT_NHWC,
       2,
       6,
       5,
       7,
       6,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       6,
       false,
       PHX_ACTIVATION_SILU},
      {PHX_LAYOUT_NHWC,
       2,
       8,
       9,
       7,
       4,
       1,
       1,
       {1, 1},
       {0, 0, 0, 0},
       {1, 1},
       2,
       true,
       PHX_ACTIVATION_NONE},
      {PHX_LAYOUT_NHWC,
       1,
       16,
       40,
       40,
       8,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       false,
       PHX_ACTIVATION_NONE},
      {PHX_LAYOUT_NCHW,
       1,
       16,
       40,
       40,
       8,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       true,
       PHX_ACTIVATION_NONE},
      // im2col's edges: padding wider than the kernel reaches (whole rows and columns of
      // zeros), stride 2 with dilation, and a patch (K = 4608) large enough that col holds
      // fewer pixels than the image, a part starting inside an output row.
      {PHX_LAYOUT_NCHW,
       1,
       2,
       5,
       4,
       3,
       2,
       2,
       {1, 1},
       {3, 2, 3, 4},
       {1, 1},
       1,
       true,
       PHX_ACTIVATION_NONE},
      {PHX_LAYOUT_NCHW,
       2,
       3,
       11,
       12,
       4,
       3,
       3,
       {2, 2},
       {2, 1, 2, 3},
       {2, 2},
       1,
       true,
       PHX_ACTIVATION_RELU},
      {PHX_LAYOUT_NCHW,
       1,
       512,
       20,
       23,
       3,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       true,
       PHX_ACTIVATION_NONE},
      {PHX_LAYOUT_NHWC,
       1,
       512,
       20,
       23,
       3,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       false,
       PHX_ACTIVATION_NONE},
      // Whole images per gemm call: five images whose col (K = 144, 46x46 pixels) fit three
      // at a time run as calls of three and two.
      {PHX_LAYOUT_NCHW,
       5,
       16,
       46,
       46,
       4,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       true,
       PHX_ACTIVATION_RELU},
      {PHX_LAYOUT_NHWC,
       5,
       16,
       46,
       46,
       4,
       3,
       3,
       {1, 1},
       {1, 1, 1, 1},
       {1, 1},
       1,
       true,
       PHX_ACTIVATION_RELU},
  };
  for (phx_dtype d : kFloats)
    for (const ConvCase& c : cases) check_conv(d, c);
}

// Pointwise convolutions of one pixel (squeeze-and-excitation blocks), which the kernel
// computes as a row times the weights transposed: batched, grouped, with and without a
// bias, large enough to thread (576 -> 144, MobileNetV3's), both layouts.
TEST(OpsConv2d, OnePixelPointwise) {
  const ConvCase one = {
      PHX_LAYOUT_NCHW,    3, 576, 1, 1, 144, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true,
      PHX_ACTIVATION_RELU};
  std::vector<ConvCase> cases(4, one);
  cases[1].groups = 4;
  cases[1].bias = false;
  cases[1].act = PHX_ACTIVATION_NONE;
  cases[2].n = 1;
  cases[2].c_in = 5;
  cases[2].c_out = 3;
  cases[3].layout = PHX_LAYOUT_NHWC;
  for (phx_dtype d : kFloats)
    for (const ConvCase& c : cases) check_conv(d, c);
}

// ---- max_pool ----
// Exact (it picks values). The kernel reduces the outer taps of a row first, then reads the
// windows inside x at a stride (1, 2 and others take different loops) and walks those at
// the padded edges; windows all inside and apart are read over the whole plane at once.
// The cases put windows in each place, some of padding only, and NaNs (which win) at the
// first, a middle and the last tap of windows.

struct PoolCase2d {
  int64_t n, c, h, w;
  uint32_t kernel[2], stride[2], pad[4], dilation[2];  // pad: top, left, bottom, right
};

void check_max_pool(phx_dtype d, const PoolCase2d& c, bool nans) {
  const int64_t ho = (c.h + c.pad[0] + c.pad[2] - c.dilation[0] * (c.kernel[0] - 1) - 1) /
                         c.stride[0] +
                     1,
                wo = (c.w + c.pad[1] + c.pad[3] - c.dilation[1] * (c.kernel[1] - 1) - 1) /
                         c.stride[1] +
                     1;
  Tensor x = random_tensor(d, {c.n, c.c, c.h, c.w});
  if (nans)
    for (int64_t i = 0; i < x.size(); i += 37) x.set(i, std::numeric_limits<double>::quiet_NaN());
  Tensor y(d, {c.n, c.c, ho, wo});
  phx_pool_params p = PHX_POOL_PARAMS_INIT;
  for (int a = 0; a < 2; ++a) {
    p.kernel[a] = c.kernel[a];
    p.stride[a] = c.stride[a];
    p.pad_begin[a] = c.pad[a];
    p.pad_end[a] = c.pad[2 + a];
    p.dilation[a] = c.dilation[a];
  }
  ASSERT_EQ(run(PHX_OP_MAX_POOL, &p, {&x}, y), PHX_STATUS_OK);
  std::vector<double> ref(static_cast<size_t>(y.size()));
  for (int64_t plane = 0; plane < c.n * c.c; ++plane)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j) {
        double m = -INFINITY;
        bool any = false;
        for (uint32_t a = 0; a < c.kernel[0]; ++a)
          for (uint32_t b = 0; b < c.kernel[1]; ++b) {
            const int64_t ih = i * c.stride[0] - c.pad[0] + a * c.dilation[0];
            const int64_t iw = j * c.stride[1] - c.pad[1] + b * c.dilation[1];
            if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
            const double v = x.get((plane * c.h + ih) * c.w + iw);
            m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
            any = true;
          }
        ref[(plane * ho + i) * wo + j] = any ? m : 0.0;
      }
  expect_near(
      y, ref, [](int64_t) { return 0.0; },
      std::string("max_pool ") + name(d) + " " + std::to_string(c.h) + "x" + std::to_string(c.w));
}

TEST(OpsMaxPool, InteriorEdgesStridesAndNaN) {
  const std::vector<PoolCase2d> cases = {
      // n, c, h, w, kernel, stride, pad (t l b r), dilation
      {8, 16, 64, 64, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},  // the CNN's pools; threaded
      {2, 3, 9, 11, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},    // an odd last row and column
      {1, 2, 7, 19, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {1, 2, 10, 23, {2, 3}, {3, 3}, {1, 2, 0, 2}, {1, 1}},
      {2, 2, 9, 17, {3, 2}, {2, 2}, {2, 1, 2, 1}, {2, 3}},
      {1, 1, 1, 13, {1, 4}, {1, 1}, {0, 0, 0, 0}, {1, 1}},  // one row, one outer tap
      {1, 2, 3, 4, {2, 2}, {2, 2}, {3, 3, 3, 3}, {1, 1}},   // windows of padding only: 0
      {1, 3, 6, 5, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {2, 3, 5, 9, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}},  // windows short of the stride
      {1, 2, 8, 12, {3, 3}, {3, 3}, {0, 0, 0, 0}, {1, 1}},
      {1, 2, 9, 14, {2, 2}, {3, 3}, {0, 0, 0, 0}, {2, 2}},  // dilated, still apart
  };
  for (const PoolCase2d& c : cases) {
    check_max_pool(PHX_DTYPE_F32, c, false);
    check_max_pool(PHX_DTYPE_F32, c, true);
    check_max_pool(PHX_DTYPE_BF16, c, true);
    check_max_pool(PHX_DTYPE_I8, c, false);
    check_max_pool(PHX_DTYPE_I32, c, false);
  }
}

}  // namespace
}  // namespace phx::kernels
