// add, sub, mul, div, pow, max, min, prelu with NumPy broadcasting; relu, gelu, silu;
// the unary math functions (sigmoid ... clip) in f32 with the C library's math.
//
// A binary op collapses its iteration space (ops_common.h) so that the innermost
// dimension is one long run in which each operand is either contiguous or a single
// broadcast value; the vector loops below handle such runs ("segments").
#include <cmath>
#include <type_traits>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// One segment: a and b advance by sa and sb (each 0 or 1), out by 1. In-place use
// (out == a or out == b) is fine: each element is read before it is written.
template <class T, class Op>
PHX_INLINE void binary_loop(Op op, const T* a, int64_t sa, const T* b, int64_t sb, T* out,
                            int64_t n) {
  if (sa != 0 && sb != 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
  } else if (sa != 0) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], bv);
  } else if (sb != 0) {
    const T av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = op(av, b[i]);
  } else {
    const T v = op(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

PHX_CLONES void binary_f32(phx_op_id op, const float* a, int64_t sa, const float* b, int64_t sb,
                           float* out, int64_t n) {
  switch (op) {
    case PHX_OP_ADD:
      binary_loop<float>([](float x, float y) { return x + y; }, a, sa, b, sb, out, n);
      break;
    case PHX_OP_SUB:
      binary_loop<float>([](float x, float y) { return x - y; }, a, sa, b, sb, out, n);
      break;
    case PHX_OP_MUL:
      binary_loop<float>([](float x, float y) { return x * y; }, a, sa, b, sb, out, n);
      break;
    case PHX_OP_POW:
      binary_loop<float>([](float x, float y) { return std::pow(x, y); }, a, sa, b, sb, out, n);
      break;
    case PHX_OP_MAX:
      binary_loop<float>([](float x, float y) { return max_nan(x, y); }, a, sa, b, sb, out, n);
      break;
    case PHX_OP_MIN:
      binary_loop<float>([](float x, float y) { return min_nan(x, y); }, a, sa, b, sb, out, n);
      break;
    case PHX_OP_PRELU:
      binary_loop<float>([](float x, float y) { return x < 0.0f ? y * x : x; }, a, sa, b, sb, out,
                         n);
      break;
    default:  // PHX_OP_DIV
      binary_loop<float>([](float x, float y) { return x / y; }, a, sa, b, sb, out, n);
      break;
  }
}

// Integer add, sub and mul wrap: computed in uint32_t (modular, never undefined) and
// truncated to T, which keeps the low bits of the two's complement result.
template <class T>
PHX_INLINE void binary_int_typed(phx_op_id op, const void* a, int64_t sa, const void* b, int64_t sb,
                                 void* out, int64_t n) {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* po = static_cast<T*>(out);
  auto u = [](T v) { return static_cast<uint32_t>(v); };
  switch (op) {
    case PHX_OP_ADD:
      binary_loop<T>([&](T x, T y) { return static_cast<T>(u(x) + u(y)); }, pa, sa, pb, sb, po, n);
      break;
    case PHX_OP_SUB:
      binary_loop<T>([&](T x, T y) { return static_cast<T>(u(x) - u(y)); }, pa, sa, pb, sb, po, n);
      break;
    case PHX_OP_MAX:
      binary_loop<T>([](T x, T y) { return x < y ? y : x; }, pa, sa, pb, sb, po, n);
      break;
    case PHX_OP_MIN:
      binary_loop<T>([](T x, T y) { return y < x ? y : x; }, pa, sa, pb, sb, po, n);
      break;
    default:  // PHX_OP_MUL
      binary_loop<T>([&](T x, T y) { return static_cast<T>(u(x) * u(y)); }, pa, sa, pb, sb, po, n);
      break;
  }
}

PHX_CLONES void binary_int(phx_dtype dtype, phx_op_id op, const void* a, int64_t sa, const void* b,
                           int64_t sb, void* out, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      binary_int_typed<int8_t>(op, a, sa, b, sb, out, n);
      break;
    case PHX_DTYPE_I16:
      binary_int_typed<int16_t>(op, a, sa, b, sb, out, n);
      break;
    case PHX_DTYPE_I32:
      binary_int_typed<int32_t>(op, a, sa, b, sb, out, n);
      break;
    default:
      binary_int_typed<uint8_t>(op, a, sa, b, sb, out, n);
      break;  // PHX_DTYPE_U8
  }
}

// A 16-bit float segment: blocks are widened to f32, computed, and rounded once.
void binary_16bit(phx_dtype dtype, phx_op_id op, const uint16_t* a, int64_t sa, const uint16_t* b,
                  int64_t sb, uint16_t* out, int64_t n) {
  float fa[kBlock], fb[kBlock], fo[kBlock];
  if (sa == 0) to_f32(dtype, a, fa, 1);
  if (sb == 0) to_f32(dtype, b, fb, 1);
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t len = std::min(kBlock, n - i);
    if (sa != 0) to_f32(dtype, a + i, fa, len);
    if (sb != 0) to_f32(dtype, b + i, fb, len);
    binary_f32(op, fa, sa, fb, sb, fo, len);
    from_f32(dtype, fo, out + i, len);
  }
}

// Calls segment(offset_a, stride_a, offset_b, stride_b, offset_out, length) for the
// runs that cover output elements [begin, end) of the collapsed space s.
template <class Segment>
void for_each_segment(const StridedSpace<2>& s, int64_t begin, int64_t end, Segment&& segment) {
  const int inner = s.rank - 1;
  const int64_t n = s.size[inner];
  const int64_t sa = s.stride[0][inner], sb = s.stride[1][inner];
  OuterWalker<2> walker(s, begin / n);
  int64_t col = begin % n;
  for (int64_t pos = begin; pos < end; walker.next()) {
    const int64_t len = std::min(n - col, end - pos);
    segment(walker.offset[0] + col * sa, sa, walker.offset[1] + col * sb, sb, pos, len);
    pos += len;
    col = 0;
  }
}

enum class UnaryOp { kRelu, kGelu, kSilu };

PHX_CLONES void unary_f32(UnaryOp op, const float* x, float* y, int64_t n) {
  switch (op) {
    case UnaryOp::kRelu:
      for (int64_t i = 0; i < n; ++i) y[i] = relu_f32(x[i]);
      break;
    case UnaryOp::kGelu:
      map_padded(x, y, n, [](float v) { return gelu_f32(v); });
      break;
    case UnaryOp::kSilu:
      map_padded(x, y, n, [](float v) { return silu_f32(v); });
      break;
  }
}

template <class T>
PHX_INLINE void relu_int_typed(const void* x, void* y, int64_t n) {
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
  for (int64_t i = 0; i < n; ++i) py[i] = px[i] < 0 ? T{0} : px[i];
}

PHX_CLONES void relu_int(phx_dtype dtype, const void* x, void* y, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      relu_int_typed<int8_t>(x, y, n);
      break;
    case PHX_DTYPE_I16:
      relu_int_typed<int16_t>(x, y, n);
      break;
    default:
      relu_int_typed<int32_t>(x, y, n);
      break;  // PHX_DTYPE_I32
  }
}

UnaryOp unary_of(phx_op_id op) {
  return op == PHX_OP_RELU ? UnaryOp::kRelu : op == PHX_OP_GELU ? UnaryOp::kGelu : UnaryOp::kSilu;
}

template <class F>
PHX_INLINE void map_f32(const float* x, float* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// 1 / (1 + e^-x), through e^x / (1 + e^x) for x < 0, where e^-x would overflow.
float sigmoid(float x) {
  const float e = std::exp(-std::fabs(x));
  return x < 0.0f ? e / (1.0f + e) : 1.0f / (1.0f + e);
}

// log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): e^-|x| <= 1 never overflows, and log1p
// keeps the digits of the small term. NaN stays NaN through both.
float softplus(float x) { return std::fmax(x, 0.0f) + std::log1p(std::exp(-std::fabs(x))); }

// max(0, min(1, alpha x + beta)) with a NaN kept (both comparisons are false).
float hard_sigmoid(float x, float alpha, float beta) {
  const float t = alpha * x + beta;
  return t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
}

// -1, 0 or 1; NaN stays NaN.
float sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; }

// The unary math ops on f32 values (y may be x). alpha and beta are the op's parameters.
// One clone per instruction set: the ops of comparisons and arithmetic (clip, hard_swish,
// leaky_relu: MobileNet's activations) vectorize as wide as the CPU allows.
PHX_CLONES void unary_math_f32(phx_op_id op, float alpha, float beta, const float* x, float* y,
                               int64_t n) {
  switch (op) {
    case PHX_OP_SIGMOID:
      return map_f32(x, y, n, sigmoid);
    case PHX_OP_TANH:
      return map_f32(x, y, n, [](float v) { return std::tanh(v); });
    case PHX_OP_EXP:
      return map_f32(x, y, n, [](float v) { return std::exp(v); });
    case PHX_OP_LOG:
      return map_f32(x, y, n, [](float v) { return std::log(v); });
    case PHX_OP_SQRT:
      return map_f32(x, y, n, [](float v) { return std::sqrt(v); });
    case PHX_OP_NEG:
      return map_f32(x, y, n, [](float v) { return -v; });
    case PHX_OP_ABS:
      return map_f32(x, y, n, [](float v) { return std::fabs(v); });
    case PHX_OP_ERF:
      return map_f32(x, y, n, [](float v) { return std::erf(v); });
    case PHX_OP_FLOOR:
      return map_f32(x, y, n, [](float v) { return std::floor(v); });
    case PHX_OP_CEIL:
      return map_f32(x, y, n, [](float v) { return std::ceil(v); });
    case PHX_OP_RECIPROCAL:
      return map_f32(x, y, n, [](float v) { return 1.0f / v; });
    case PHX_OP_SIGN:
      return map_f32(x, y, n, sign);
    case PHX_OP_SOFTPLUS:
      return map_f32(x, y, n, softplus);
    case PHX_OP_LEAKY_RELU:
      return map_f32(x, y, n, [alpha](float v) { return v < 0.0f ? alpha * v : v; });
    case PHX_OP_ELU:
      return map_f32(x, y, n, [alpha](float v) { return v < 0.0f ? alpha * std::expm1(v) : v; });
    case PHX_OP_SELU:
      return map_f32(x, y, n, [alpha, beta](float v) {
        return beta * (v <= 0.0f ? alpha * std::expm1(v) : v);
      });
    case PHX_OP_HARD_SIGMOID:
      return map_f32(x, y, n, [alpha, beta](float v) { return hard_sigmoid(v, alpha, beta); });
    case PHX_OP_HARD_SWISH:
      return map_f32(x, y, n, [](float v) { return v * hard_sigmoid(v, 1.0f / 6.0f, 0.5f); });
    case PHX_OP_SIN:
      return map_f32(x, y, n, [](float v) { return std::sin(v); });
    case PHX_OP_COS:
      return map_f32(x, y, n, [](float v) { return std::cos(v); });
    case PHX_OP_ROUND:
      // The default rounding mode, which no code here changes, rounds halves to even.
      return map_f32(x, y, n, [](float v) { return std::nearbyint(v); });
    default:  // PHX_OP_CLIP; a NaN x stays NaN (both comparisons are false)
      return map_f32(x, y, n, [alpha, beta](float v) {
        const float low = v < alpha ? alpha : v;
        return low > beta ? beta : low;
      });
  }
}

// A clip bound for an integer dtype: rounded toward the inside of [alpha, beta] (up for
// the lower bound, down for the upper one), then saturated to the dtype.
template <class T>
T int_bound(float bound, bool lower) {
  const double rounded = lower ? std::ceil(double{bound}) : std::floor(double{bound});
  const double low = std::numeric_limits<T>::min(), high = std::numeric_limits<T>::max();
  return static_cast<T>(std::clamp(rounded, low, high));
}

// clip on integers: the bounds as int_bound gives them; with alpha > beta every element
// becomes beta, as ONNX's Clip.
template <class T>
void clip_int_typed(float alpha, float beta, const void* x, void* y, int64_t n) {
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
  const T low = int_bound<T>(alpha, true), high = int_bound<T>(beta, false);
  for (int64_t i = 0; i < n; ++i) {
    const T v = px[i] < low ? low : px[i];
    py[i] = v > high ? high : v;
  }
}

// neg, abs and sign on signed integers. neg and abs wrap around as the dtype does
// (computed in uint32_t, whose arithmetic is modular, then truncated).
template <class T>
void signed_unary_typed(phx_op_id op, const void* x, void* y, int64_t n) {
  const T* px = static_cast<const T*>(x);
  T* py = static_cast<T*>(y);
  auto negate = [](T v) { return static_cast<T>(0u - static_cast<uint32_t>(v)); };
  switch (op) {
    case PHX_OP_NEG:
      for (int64_t i = 0; i < n; ++i) py[i] = negate(px[i]);
      break;
    case PHX_OP_ABS:
      for (int64_t i = 0; i < n; ++i) py[i] = px[i] < 0 ? negate(px[i]) : px[i];
      break;
    default:  // PHX_OP_SIGN
      for (int64_t i = 0; i < n; ++i) py[i] = static_cast<T>((px[i] > 0) - (px[i] < 0));
      break;
  }
}

}  // namespace

void run_unary_math(phx_op_id op, const phx_elementwise_params& params, const HostTensor& x,
                    const HostTensor& out, ThreadPool& pool) {
  const int64_t total = element_count(out);
  const phx_dtype dtype = out.dtype;
  const float alpha = params.alpha, beta = params.beta;
  // The C library's functions cost tens of cycles an element: worth threads sooner.
  constexpr int64_t kWork = 8;
  if (dtype == PHX_DTYPE_F32) {
    const float* px = static_cast<const float*>(x.data);
    float* py = static_cast<float*>(out.data);
    parallel_for(pool, total, kWork, [&](int64_t begin, int64_t end) {
      unary_math_f32(op, alpha, beta, px + begin, py + begin, end - begin);
    });
  } else if (is_float(dtype)) {
    const uint16_t* px = static_cast<const uint16_t*>(x.data);
    uint16_t* py = static_cast<uint16_t*>(out.data);
    parallel_for(pool, total, kWork, [&](int64_t begin, int64_t end) {
      float buf[kBlock];
      for (int64_t i = begin; i < end; i += kBlock) {
        const int64_t len = std::min(kBlock, end - i);
        to_f32(dtype, px + i, buf, len);
        unary_math_f32(op, alpha, beta, buf, buf, len);
        from_f32(dtype, buf, py + i, len);
      }
    });
  } else {
    const size_t bytes = dtype_bytes(dtype);
    const char* px = static_cast<const char*>(x.data);
    char* py = static_cast<char*>(out.data);
    parallel_for(pool, total, 1, [&](int64_t begin, int64_t end) {
      visit_int(dtype, [&](auto tag) {
        using T = decltype(tag);
        const char* from = px + begin * bytes;
        char* to = py + begin * bytes;
        if (op == PHX_OP_CLIP) {
          clip_int_typed<T>(alpha, beta, from, to, end - begin);
        } else if constexpr (std::is_signed_v<T>) {  // u8 has clip only
          signed_unary_typed<T>(op, from, to, end - begin);
        }
      });
    });
  }
}

void run_binary(phx_op_id op, const HostTensor& a, const HostTensor& b, const HostTensor& out,
                ThreadPool& pool) {
  StridedSpace<2> s;
  s.rank = static_cast<int>(out.rank);
  std::copy(out.shape, out.shape + out.rank, s.size);
  broadcast_strides(a, s.rank, s.size, s.stride[0]);
  broadcast_strides(b, s.rank, s.size, s.stride[1]);
  s.collapse();
  const int64_t total = element_count(out);
  const phx_dtype dtype = out.dtype;
  if (dtype == PHX_DTYPE_F32) {
    const float* pa = static_cast<const float*>(a.data);
    const float* pb = static_cast<const float*>(b.data);
    float* po = static_cast<float*>(out.data);
    parallel_for(pool, total, 1, [&](int64_t begin, int64_t end) {
      for_each_segment(
          s, begin, end,
          [&](int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oo, int64_t len) {
            binary_f32(op, pa + oa, sa, pb + ob, sb, po + oo, len);
          });
    });
  } else if (is_float(dtype)) {
    const uint16_t* pa = static_cast<const uint16_t*>(a.data);
    const uint16_t* pb = static_cast<const uint16_t*>(b.data);
    uint16_t* po = static_cast<uint16_t*>(out.data);
    parallel_for(pool, total, 2, [&](int64_t begin, int64_t end) {
      for_each_segment(
          s, begin, end,
          [&](int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oo, int64_t len) {
            binary_16bit(dtype, op, pa + oa, sa, pb + ob, sb, po + oo, len);
          });
    });
  } else {
    const size_t bytes = dtype_bytes(dtype);
    const char* pa = static_cast<const char*>(a.data);
    const char* pb = static_cast<const char*>(b.data);
    char* po = static_cast<char*>(out.data);
    parallel_for(pool, total, 1, [&](int64_t begin, int64_t end) {
      for_each_segment(
          s, begin, end,
          [&](int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oo, int64_t len) {
            binary_int(dtype, op, pa + oa * bytes, sa, pb + ob * bytes, sb, po + oo * bytes, len);
          });
    });
  }
}

void run_unary(phx_op_id op, const HostTensor& x, const HostTensor& out, ThreadPool& pool) {
  const int64_t total = element_count(out);
  const phx_dtype dtype = out.dtype;
  const UnaryOp uop = unary_of(op);
  // gelu and silu cost an exp and a division per element: worth threads sooner.
  const int64_t work = uop == UnaryOp::kRelu ? 1 : 8;
  if (dtype == PHX_DTYPE_F32) {
    const float* px = static_cast<const float*>(x.data);
    float* py = static_cast<float*>(out.data);
    parallel_for(pool, total, work, [&](int64_t begin, int64_t end) {
      unary_f32(uop, px + begin, py + begin, end - begin);
    });
  } else if (is_float(dtype)) {
    const uint16_t* px = static_cast<const uint16_t*>(x.data);
    uint16_t* py = static_cast<uint16_t*>(out.data);
    parallel_for(pool, total, work, [&](int64_t begin, int64_t end) {
      float buf[kBlock];
      for (int64_t i = begin; i < end; i += kBlock) {
        const int64_t len = std::min(kBlock, end - i);
        to_f32(dtype, px + i, buf, len);
        unary_f32(uop, buf, buf, len);
        from_f32(dtype, buf, py + i, len);
      }
    });
  } else {
    const size_t bytes = dtype_bytes(dtype);
    const char* px = static_cast<const char*>(x.data);
    char* py = static_cast<char*>(out.data);
    parallel_for(pool, total, 1, [&](int64_t begin, int64_t end) {
      relu_int(dtype, px + begin * bytes, py + begin * bytes, end - begin);
    });
  }
}

}  // namespace phx::kernels::ops

namespace phx::kernels {

void elementwise_f32(phx_op_id op, const float* a, int64_t a_step, const float* b, int64_t b_step,
                     float* out, int64_t n) {
  if (op == PHX_OP_RELU || op == PHX_OP_GELU || op == PHX_OP_SILU)
    ops::unary_f32(ops::unary_of(op), a, out, n);
  else
    ops::binary_f32(op, a, a_step, b, b_step, out, n);
}

}  // namespace phx::kernels

namespace phx::kernels::ops {

void activation_f32(phx_activation act, float* data, int64_t n) {
  switch (act) {
    case PHX_ACTIVATION_RELU:
      unary_f32(UnaryOp::kRelu, data, data, n);
      break;
    case PHX_ACTIVATION_GELU:
      unary_f32(UnaryOp::kGelu, data, data, n);
      break;
    case PHX_ACTIVATION_SILU:
      unary_f32(UnaryOp::kSilu, data, data, n);
      break;
    default:
      break;
  }
}

}  // namespace phx::kernels::ops
