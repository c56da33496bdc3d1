// What the op families share: the entry point of each family, threading, the f32
// block conversions, the vectorizable math and the broadcasting iteration space.
#pragma once

#include <phynexus/phynexus.h>
#include <phynexus/plugin.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "phx/kernels/convert.h"
#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"

// The hot loops are written so that the compiler vectorizes them, and compiled three
// times; the dynamic loader picks the widest one this CPU runs (an ifunc). Not under
// ThreadSanitizer: in a program linked with these kernels the loader runs the resolvers
// before TSan's runtime is up, and the program dies before main.
#if defined(__SANITIZE_THREAD__)
#define PHX_CLONES
#else
#define PHX_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
// Math helpers used inside those loops must be inlined into each clone to be
// vectorized with its instruction set.
#define PHX_INLINE [[gnu::always_inline]] inline

namespace phx::kernels::ops {

// ---- Family entry points (ops_*.cpp); the operands are already checked ----
void run_binary(phx_op_id op, const HostTensor& a, const HostTensor& b, const HostTensor& out,
                ThreadPool& pool);
void run_unary(phx_op_id op, const HostTensor& x, const HostTensor& out, ThreadPool& pool);
// sigmoid ... softplus, hard_swish, sin, cos and round (params unused), leaky_relu, elu,
// selu, clip, hard_sigmoid.
void run_unary_math(phx_op_id op, const phx_elementwise_params& params, const HostTensor& x,
                    const HostTensor& out, ThreadPool& pool);
// equal, less, greater: out u8.
void run_compare(phx_op_id op, const HostTensor& a, const HostTensor& b, const HostTensor& out,
                 ThreadPool& pool);
void run_where(const HostTensor& cond, const HostTensor& a, const HostTensor& b,
               const HostTensor& out, ThreadPool& pool);
void run_not(const HostTensor& x, const HostTensor& out, ThreadPool& pool);
void run_argmax(const phx_argmax_params& params, const HostTensor& x, const HostTensor& out,
                ThreadPool& pool);
void run_top_k(const phx_top_k_params& params, const HostTensor& x, const HostTensor& values,
               const HostTensor& indices, ThreadPool& pool);
void run_log_softmax(const phx_softmax_params& params, const HostTensor& x, const HostTensor& out,
                     ThreadPool& pool);
// in: x, scale, bias, mean, var.
void run_batch_norm(const phx_norm_params& params, const HostTensor* in, const HostTensor& out,
                    ThreadPool& pool);
void run_instance_norm(const phx_norm_params& params, const HostTensor& x, const HostTensor& scale,
                       const HostTensor& bias, const HostTensor& out, ThreadPool& pool);
void run_softmax(const phx_softmax_params& params, const HostTensor& x, const HostTensor& out,
                 ThreadPool& pool);
void run_layer_norm(const phx_norm_params& params, const HostTensor& x, const HostTensor& gamma,
                    const HostTensor& beta, const HostTensor& out, ThreadPool& pool);
void run_rms_norm(const phx_norm_params& params, const HostTensor& x, const HostTensor& gamma,
                  const HostTensor& out, ThreadPool& pool);
void run_transpose(const phx_transpose_params& params, const HostTensor& x, const HostTensor& out,
                   ThreadPool& pool);
void run_reduce(phx_op_id op, const phx_reduce_params& params, const HostTensor& x,
                const HostTensor& out, ThreadPool& pool);
void run_cast(const HostTensor& x, const HostTensor& out, ThreadPool& pool);
// packed_b, when not null, is b packed by gemm_pack_b (ops.h, run_matmul_packed).
void run_matmul(const phx_matmul_params& params, const HostTensor& a, const HostTensor& b,
                const HostTensor& bias, const HostTensor& out, ThreadPool& pool,
                const PackedB* packed_b = nullptr);
void run_conv2d(const phx_conv2d_params& params, const HostTensor& x, const HostTensor& weight,
                const HostTensor& bias, const HostTensor& out, ThreadPool& pool);
void run_attention(const phx_attention_params& params, const HostTensor& q, const HostTensor& k,
                   const HostTensor& v, const HostTensor& out, ThreadPool& pool);
void run_rope(const phx_rope_params& params, const HostTensor& x, const HostTensor& cos,
              const HostTensor& sin, const HostTensor& out, ThreadPool& pool);
// Quantize and dequantize: in = {x or q, scale, zero_point (data null when absent)}.
void run_quantize(const phx_quantize_params& params, const HostTensor& x, const HostTensor& scale,
                  const HostTensor& zero_point, const HostTensor& out, ThreadPool& pool);
void run_dequantize(const phx_quantize_params& params, const HostTensor& q, const HostTensor& scale,
                    const HostTensor& zero_point, const HostTensor& out, ThreadPool& pool);
// outputs = {y, scale, zero_point}.
void run_dynamic_quantize(const HostTensor& x, const HostTensor* outputs, ThreadPool& pool);
// in: the 9 inputs of qmatmul / qconv2d in the header's order, absent ones with data null.
void run_qmatmul(const phx_matmul_params& params, const HostTensor* in, const HostTensor& out,
                 ThreadPool& pool);
void run_qconv2d(const phx_conv2d_params& params, const HostTensor* in, const HostTensor& out,
                 ThreadPool& pool);

// Layout (ops_layout.cpp, ops_pad.cpp): in may hold concat's absent inputs (data null)
// after the last one given.
void run_reshape(const HostTensor& x, const HostTensor& out, ThreadPool& pool);
void run_concat(const phx_axis_params& params, const HostTensor* in, size_t in_count,
                const HostTensor& out, ThreadPool& pool);
void run_slice(const phx_slice_params& params, const HostTensor& x, const HostTensor& out,
               ThreadPool& pool);
void run_gather(const phx_axis_params& params, const HostTensor& data, const HostTensor& indices,
                const HostTensor& out, ThreadPool& pool);
void run_expand(const HostTensor& x, const HostTensor& out, ThreadPool& pool);
void run_tile(const HostTensor& x, const HostTensor& out, ThreadPool& pool);
void run_pad(const phx_pad_params& params, const HostTensor& x, const HostTensor& out,
             ThreadPool& pool);
void run_max_pool(const phx_pool_params& params, const HostTensor& x, const HostTensor& out,
                  ThreadPool& pool);
void run_avg_pool(const phx_pool_params& params, const HostTensor& x, const HostTensor& out,
                  ThreadPool& pool);
void run_conv_transpose2d(const phx_conv_transpose2d_params& params, const HostTensor& x,
                          const HostTensor& weight, const HostTensor& bias, const HostTensor& out,
                          ThreadPool& pool);
// ops_resize.cpp
void run_resize(const phx_resize_params& params, const HostTensor& x, const HostTensor& out,
                ThreadPool& pool);

// ---- dtypes ----
inline bool is_float(phx_dtype d) {
  return d == PHX_DTYPE_F32 || d == PHX_DTYPE_F16 || d == PHX_DTYPE_BF16;
}
inline bool is_signed_int(phx_dtype d) {
  return d == PHX_DTYPE_I8 || d == PHX_DTYPE_I16 || d == PHX_DTYPE_I32;
}
inline size_t dtype_bytes(phx_dtype d) { return phx_plugin_dtype_size(d); }

// Calls f(dtype_tag{}) with the C++ type of an integer dtype; false for other dtypes.
template <class F>
bool visit_int(phx_dtype d, F&& f) {
  switch (d) {
    case PHX_DTYPE_I8:
      f(int8_t{});
      return true;
    case PHX_DTYPE_I16:
      f(int16_t{});
      return true;
    case PHX_DTYPE_I32:
      f(int32_t{});
      return true;
    case PHX_DTYPE_U8:
      f(uint8_t{});
      return true;
    default:
      return false;
  }
}

// Calls f(value) with value(data, index) giving an element of a dtype as comparisons see
// it: f32 for float dtypes (16-bit ones widen exactly), the integer itself otherwise.
template <class F>
void visit_values(phx_dtype dtype, F&& f) {
  switch (dtype) {
    case PHX_DTYPE_F32:
      return f([](const void* p, int64_t i) { return static_cast<const float*>(p)[i]; });
    case PHX_DTYPE_F16:
      return f(
          [](const void* p, int64_t i) { return f16_to_f32(static_cast<const uint16_t*>(p)[i]); });
    case PHX_DTYPE_BF16:
      return f(
          [](const void* p, int64_t i) { return bf16_to_f32(static_cast<const uint16_t*>(p)[i]); });
    default:
      visit_int(dtype, [&](auto tag) {
        using T = decltype(tag);
        f([](const void* p, int64_t i) { return static_cast<const T*>(p)[i]; });
      });
  }
}

// ---- f32 blocks: 16-bit float data is converted block by block into a buffer this
// long on the stack, computed on in f32, and rounded back once ----
constexpr int64_t kBlock = 256;

// Converts n elements of a float dtype (f32, f16, bf16) to f32 (exact).
void to_f32(phx_dtype dtype, const void* src, float* dst, int64_t n);
// Rounds n f32 values to a float dtype, to nearest even.
void from_f32(phx_dtype dtype, const float* src, void* dst, int64_t n);
// Converts every element of a float tensor to f32 (small operands: bias, gamma, beta).
void copy_to_f32(const HostTensor& t, float* dst);

// ---- threads ----
// Below this many elements an op runs inline on the caller: waking workers costs more.
constexpr int64_t kParallelMinElements = 32 * 1024;

// Splits [0, n) into chunks of at least min_chunk and calls f(begin, end) for each,
// on the pool when n >= kParallelMinElements (in units of work_per_item), inline otherwise.
template <class F>
void parallel_for(ThreadPool& pool, int64_t n, int64_t work_per_item, F&& f) {
  const int64_t threads = pool.size();
  if (threads <= 1 || n <= 1 || n * work_per_item < kParallelMinElements) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  // A few chunks per thread balance uneven work; each chunk still amortizes its start.
  const int64_t min_items = std::max<int64_t>(1, kParallelMinElements / 4 / work_per_item);
  const int64_t chunks = std::min<int64_t>(threads * 4, std::max<int64_t>(1, n / min_items));
  const int64_t per = (n + chunks - 1) / chunks;
  const int64_t count = (n + per - 1) / per;
  pool.run(static_cast<size_t>(count), [&](size_t c) {
    const int64_t begin = static_cast<int64_t>(c) * per;
    f(begin, std::min(n, begin + per));
  });
}

// ---- vectorizable f32 math (branch-free so that loops over it vectorize) ----

// e^r for |r| <= ln2 / 2 (an argument reduced by n ln2): Taylor to degree 7, whose
// remainder is below 1e-8 relative.
PHX_INLINE float exp_reduced_f32(float r) {
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}

// e^(a + b) within ~2 ulp, for an a taken as exact and a small b (|b| <= 2); 0 below
// e^-104, +inf above ln(FLT_MAX), NaN stays NaN. The reduction a + b = n ln2 + r takes
// r from a exactly (a - n * 0.693359375 is exact: the constant has 9 significant bits,
// n at most 8, and the difference is small), so the error does not grow with |a| as
// exp_f32(a + b) would, whose rounded argument alone costs |a + b| 2^-24 relative.
PHX_INLINE float exp_sum_f32(float a, float b) {
  float ac = a > 89.0f ? 89.0f : a;  // comparisons are false for NaN: it passes through
  ac = ac < -104.0f ? -104.0f : ac;
  // n = round((a + b) / ln2): adding 1.5 * 2^23 rounds to an integer, which the low bits
  // hold.
  const float magic = 12582912.0f;
  const float t = (ac + b) * 1.44269504088896341f + magic;
  const float n = t - magic;
  const int32_t ni = static_cast<int32_t>(std::bit_cast<uint32_t>(t) - 0x4B400000u);
  // r = a + b - n ln2, ln2 in two parts.
  const float r = ((ac - n * 0.693359375f) - n * -2.12194440e-4f) + b;
  const float p = exp_reduced_f32(r);
  // 2^n in two factors keeps each a normal number for n in [-150, 129]; the products
  // then underflow to subnormals or overflow to infinity as the true result would.
  const int32_t n1 = ni / 2;
  const int32_t n2 = ni - n1;
  const float s1 = std::bit_cast<float>(static_cast<uint32_t>(n1 + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<uint32_t>(n2 + 127) << 23);
  return p * s1 * s2;
}

// e^x within ~2 ulp; 0 below e^-104, +inf above ln(FLT_MAX), NaN stays NaN.
PHX_INLINE float exp_f32(float x) { return exp_sum_f32(x, 0.0f); }

// erfc(|x| / sqrt 2) / 2 with a relative error of a few ulps for every x: the Chebyshev
// fit t e^(-z^2 + P(t)), t = 1 / (1 + z / 2), of Press et al., Numerical Recipes, 6.2
// (relative error below 1.2e-7 for every z = |x| / sqrt 2). The exponent -z^2 = -x^2 / 2
// is taken exactly: |x| = hi + lo with hi its 12 leading bits, so hi^2 is exact and
// goes to exp_sum_f32 as the exact part. (z * z from a rounded z would err by z^2 2^-23,
// 200 ulps of the result at x = -10.) Beyond |x| = 16 the result is below 2^-185: |x| is
// clamped there, which keeps infinities out of hi and lo.
PHX_INLINE float half_erfc_of_abs_f32(float x) {
  float ax = x < 0.0f ? -x : x;
  ax = ax < 16.0f ? ax : 16.0f;  // NaN becomes 16 here; gelu_f32 keeps it through x
  const float t = 1.0f / (1.0f + 0.5f * (ax * 0.70710678118654752f));
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float hi = std::bit_cast<float>(std::bit_cast<uint32_t>(ax) & 0xFFFFF000u);
  const float lo = ax - hi;
  return 0.5f * t * exp_sum_f32(-0.5f * (hi * hi), p - (hi * lo + 0.5f * (lo * lo)));
}

// x * Phi(x), Phi the normal CDF. For x < 0, Phi(x) = erfc(-x / sqrt2) / 2 avoids the
// cancellation of 1 + erf(x / sqrt2), so the small negative tail keeps its digits.
PHX_INLINE float gelu_f32(float x) {
  const float tail = half_erfc_of_abs_f32(x);
  return x * (x < 0.0f ? tail : 1.0f - tail);
}

// x / (1 + e^-x); for x < 0 as x e^x / (1 + e^x), since e^-x overflows from x = -88.7
// while silu(x) stays a normal number down to x = -92.4.
PHX_INLINE float silu_f32(float x) {
  const float e = exp_f32(x < 0.0f ? x : -x);
  return (x < 0.0f ? x * e : x) / (1.0f + e);
}

// max(x, 0); NaN stays NaN.
PHX_INLINE float relu_f32(float x) { return x < 0.0f ? 0.0f : x; }

// Sum and maximum of n floats in 16 independent lanes, combined at the end: compilers
// vectorize this form without reassociating (no -ffast-math), so every instruction set
// adds in the same order and gets the same result.
constexpr int kLanes = 16;

PHX_INLINE float sum_f32(const float* x, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += x[i + j];
  for (; i < n; ++i) acc[0] += x[i];
  float total = 0.0f;
  for (int j = 0; j < kLanes; ++j) total += acc[j];
  return total;
}

// The larger of m and v, NaN if either is NaN (as NumPy's max).
PHX_INLINE float max_nan(float m, float v) { return (v > m || v != v) ? v : m; }

// The smaller of m and v, NaN if either is NaN (as NumPy's min).
PHX_INLINE float min_nan(float m, float v) { return (v < m || v != v) ? v : m; }

// The maximum (minimum) of n floats, NaN if any is NaN; -inf (+inf) for n == 0
// (row_extremes.cpp).
float max_row_f32(const float* x, int64_t n);
float min_row_f32(const float* x, int64_t n);

// Copy and zero n values with fixed-size moves, which compile inline: the rows of im2col
// and of padded copies are short (7 to 56 values), and a call of memcpy or memset (which
// GCC makes of a plain loop, too) costs more than the move itself.
template <class T>
PHX_INLINE void copy_short(const T* src, T* dst, int64_t n) {
  const char* s = reinterpret_cast<const char*>(src);
  char* d = reinterpret_cast<char*>(dst);
  int64_t bytes = n * static_cast<int64_t>(sizeof(T));
  for (; bytes >= 32; bytes -= 32, s += 32, d += 32) std::memcpy(d, s, 32);
  if (bytes & 16) std::memcpy(d, s, 16), s += 16, d += 16;
  if (bytes & 8) std::memcpy(d, s, 8), s += 8, d += 8;
  if (bytes & 4) std::memcpy(d, s, 4), s += 4, d += 4;
  if (bytes & 2) std::memcpy(d, s, 2);
}
template <class T>
PHX_INLINE void zero_short(T* dst, int64_t n) {
  char* d = reinterpret_cast<char*>(dst);
  int64_t bytes = n * static_cast<int64_t>(sizeof(T));
  for (; bytes >= 32; bytes -= 32, d += 32) std::memset(d, 0, 32);
  if (bytes & 16) std::memset(d, 0, 16), d += 16;
  if (bytes & 8) std::memset(d, 0, 8), d += 8;
  if (bytes & 4) std::memset(d, 0, 4), d += 4;
  if (bytes & 2) std::memset(d, 0, 2);
}

// y[i] = f(x[i]) for an expensive f (y may be x). The body is a plain loop, which
// compilers vectorize; the tail goes through a padded block of kLanes, so that it is
// vectorized too: a scalar tail of gelu or exp costs more than a whole block.
template <class F>
PHX_INLINE void map_padded(const float* x, float* y, int64_t n, F f) {
  const int64_t body = n - n % kLanes;
  for (int64_t i = 0; i < body; ++i) y[i] = f(x[i]);
  if (body < n) {
    const int64_t rest = n - body;
    float v[kLanes];
    for (int j = 0; j < kLanes; ++j) v[j] = j < rest ? x[body + j] : 0.0f;
    for (int j = 0; j < kLanes; ++j) v[j] = f(v[j]);
    for (int64_t j = 0; j < rest; ++j) y[body + j] = v[j];
  }
}

// Applies act to n f32 values in place (matmul and conv2d epilogues).
void activation_f32(phx_activation act, float* data, int64_t n);

// ---- broadcasting iteration space ----

// A row-major iteration space shared by Count operands: sizes, and each operand's
// element stride per dimension (0 where it is broadcast).
template <int Count>
struct StridedSpace {
  int rank = 0;
  int64_t size[PHX_MAX_RANK] = {};
  int64_t stride[Count][PHX_MAX_RANK] = {};

  // Drops size-1 dimensions and merges neighbours that every operand walks as one, so
  // that the innermost dimension is as long as possible. Keeps at least one dimension.
  void collapse() {
    int r = 0;
    for (int d = 0; d < rank; ++d) {
      if (size[d] == 1) continue;
      bool merge = r > 0;
      for (int o = 0; o < Count && merge; ++o) merge = stride[o][r - 1] == stride[o][d] * size[d];
      if (merge) {
        size[r - 1] *= size[d];
        for (int o = 0; o < Count; ++o) stride[o][r - 1] = stride[o][d];
      } else {
        size[r] = size[d];
        for (int o = 0; o < Count; ++o) stride[o][r] = stride[o][d];
        ++r;
      }
    }
    if (r == 0) {
      size[0] = 1;
      for (int o = 0; o < Count; ++o) stride[o][0] = 0;
      r = 1;
    }
    rank = r;
  }
};

// Row-major strides of t aligned to the right of an output of out_rank dimensions
// (dims): 0 where t has size 1 (or is missing) and the output does not.
inline void broadcast_strides(const HostTensor& t, int out_rank, const int64_t* dims,
                              int64_t* strides) {
  int64_t s = 1;
  for (int d = out_rank - 1; d >= 0; --d) {
    const int td = d - (out_rank - static_cast<int>(t.rank));
    const int64_t size = td >= 0 ? t.shape[td] : 1;
    strides[d] = (size == 1 && dims[d] != 1) ? 0 : s;
    s *= size;
  }
}

// Walks the operand offsets of a StridedSpace's outer dimensions (all but the last)
// in row-major order, starting from any outer row.
template <int Count>
class OuterWalker {
 public:
  OuterWalker(const StridedSpace<Count>& space, int64_t row) : s_(space) {
    for (int o = 0; o < Count; ++o) offset[o] = 0;
    for (int d = s_.rank - 2; d >= 0; --d) {
      idx_[d] = row % s_.size[d];
      row /= s_.size[d];
      for (int o = 0; o < Count; ++o) offset[o] += idx_[d] * s_.stride[o][d];
    }
  }
  void next() {
    for (int d = s_.rank - 2; d >= 0; --d) {
      for (int o = 0; o < Count; ++o) offset[o] += s_.stride[o][d];
      if (++idx_[d] < s_.size[d]) return;
      for (int o = 0; o < Count; ++o) offset[o] -= s_.stride[o][d] * s_.size[d];
      idx_[d] = 0;
    }
  }
  int64_t offset[Count];

 private:
  const StridedSpace<Count>& s_;
  int64_t idx_[PHX_MAX_RANK] = {};
};

}  // namespace phx::kernels::ops
