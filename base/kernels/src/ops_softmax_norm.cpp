// softmax and log_softmax (any axis), layer_norm and rms_norm (over the last dimension),
// batch_norm (inference) and instance_norm (per channel, dimension 1).
//
// Everything is computed in f32. 16-bit rows are widened block by block into stack
// buffers, once per pass, rather than into a heap row: no allocation inside the
// parallel region, and a row of any length fits.
#include <cmath>
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// ---- vector building blocks (f32, contiguous) ----

PHX_CLONES float row_sum(const float* x, int64_t n) { return sum_f32(x, n); }

// y = exp(x - shift); returns the sum of y. y may be x. Two loops, the exponentials then
// their sum: the loop of exponentials alone vectorizes whole, where one loop doing both in
// lanes took 3 times as long (0.48 ns a value of vit_b_16's softmax rows).
PHX_CLONES float exp_shifted_sum(const float* x, float shift, float* y, int64_t n) {
  map_padded(x, y, n, [shift](float v) { return exp_f32(v - shift); });
  return sum_f32(y, n);
}

PHX_CLONES void scale_row(float* y, float scale, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= scale;
}

// y = exp(x - shift) * scale.
PHX_CLONES void exp_shifted_scaled(const float* x, float shift, float scale, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_f32(x[i] - shift) * scale;
}

// Sum of (x - mean)^2 (mean 0: of x^2).
PHX_CLONES float centered_square_sum(const float* x, float mean, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - mean;
      acc[j] += d * d;
    }
  for (; i < n; ++i) acc[0] += (x[i] - mean) * (x[i] - mean);
  return sum_f32(acc, kLanes);
}

// y = (x - mean) * rstd * gamma + beta; gamma and beta may be null (1 and 0).
PHX_CLONES void normalize(const float* x, float mean, float rstd, const float* gamma,
                          const float* beta, float* y, int64_t n) {
  if (gamma != nullptr && beta != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
  } else if (gamma != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * gamma[i];
  } else if (beta != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd + beta[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd;
  }
}

PHX_CLONES void max_into(const float* x, float* m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) m[i] = max_nan(m[i], x[i]);
}

// s += exp(x - m), elementwise.
PHX_CLONES void add_exp_shifted(const float* x, const float* m, float* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) s[i] += exp_f32(x[i] - m[i]);
}

// y = exp(x - m) * r, elementwise.
PHX_CLONES void exp_shifted_times(const float* x, const float* m, const float* r, float* y,
                                  int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_f32(x[i] - m[i]) * r[i];
}

// ---- rows of a float dtype, seen as f32 ----

// Reads n elements of a row (any float dtype) as f32 blocks: calls f(block, offset, len).
template <class F>
void for_each_block(phx_dtype dtype, const void* row, int64_t n, F&& f) {
  if (dtype == PHX_DTYPE_F32) {
    f(static_cast<const float*>(row), int64_t{0}, n);
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(row);
  float buf[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t len = std::min(kBlock, n - i);
    to_f32(dtype, src + i, buf, len);
    f(static_cast<const float*>(buf), i, len);
  }
}

// y = (x - m) - log_sum: log_softmax's last step, in the order its definition gives.
PHX_CLONES void shifted_log(const float* x, float m, float log_sum, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
}

// y = (x - m) - l, elementwise.
PHX_CLONES void shifted_log_columns(const float* x, const float* m, const float* l, float* y,
                                    int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m[i]) - l[i];
}

// y = (x - mean) * rstd * scale + bias, one channel's four values.
PHX_CLONES void normalize_channel(const float* x, float mean, float rstd, float scale, float bias,
                                  float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * scale + bias;
}

// Softmax (or, with log, log_softmax) of one contiguous row.
void softmax_row(phx_dtype dtype, bool log, const void* x, void* y, int64_t n) {
  if (dtype == PHX_DTYPE_F32 && !log) {
    const float* px = static_cast<const float*>(x);
    float* py = static_cast<float*>(y);
    const float m = max_row_f32(px, n);
    const float s = exp_shifted_sum(px, m, py, n);
    scale_row(py, 1.0f / s, n);
    return;
  }
  // 16-bit (and log_softmax): no f32 row to keep the exponentials in, so they are
  // computed twice, a stack block at a time (an f32 row comes whole from for_each_block).
  auto in_blocks = [&](auto&& f) {
    for_each_block(dtype, x, n, [&](const float* b, int64_t i, int64_t len) {
      for (int64_t j = 0; j < len; j += kBlock) f(b + j, i + j, std::min(kBlock, len - j));
    });
  };
  float m = -std::numeric_limits<float>::infinity();
  in_blocks([&](const float* b, int64_t, int64_t len) { m = max_nan(m, max_row_f32(b, len)); });
  double s = 0.0;
  float tmp[kBlock];
  in_blocks([&](const float* b, int64_t, int64_t len) { s += exp_shifted_sum(b, m, tmp, len); });
  const float scale = static_cast<float>(1.0 / s);
  const float log_sum = std::log(static_cast<float>(s));
  char* py = static_cast<char*>(y);
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(dtype));
  in_blocks([&](const float* b, int64_t i, int64_t len) {
    if (log)
      shifted_log(b, m, log_sum, tmp, len);
    else
      exp_shifted_scaled(b, m, scale, tmp, len);
    from_f32(dtype, tmp, py + i * bytes, len);
  });
}

// Softmax along a strided axis for columns [c0, c0 + width) of one outer slice: x is
// [len, inner], row k at k * inner. Width is at most kBlock, so that the running
// maximum and sum of each column live on the stack.
void softmax_columns(phx_dtype dtype, bool log, const char* x, char* y, int64_t len, int64_t inner,
                     int64_t c0, int64_t width) {
  const size_t bytes = dtype_bytes(dtype);
  const int64_t row_bytes = inner * static_cast<int64_t>(bytes);
  const char* first = x + c0 * static_cast<int64_t>(bytes);
  float m[kBlock], s[kBlock], buf[kBlock];
  auto load = [&](int64_t k) -> const float* {
    const char* src = first + k * row_bytes;
    if (dtype == PHX_DTYPE_F32) return reinterpret_cast<const float*>(src);
    to_f32(dtype, src, buf, width);
    return buf;
  };
  for (int64_t j = 0; j < width; ++j) {
    m[j] = -std::numeric_limits<float>::infinity();
    s[j] = 0.0f;
  }
  for (int64_t k = 0; k < len; ++k) max_into(load(k), m, width);
  for (int64_t k = 0; k < len; ++k) add_exp_shifted(load(k), m, s, width);
  // softmax multiplies by 1 / s, log_softmax subtracts log s.
  for (int64_t j = 0; j < width; ++j) s[j] = log ? std::log(s[j]) : 1.0f / s[j];
  float out[kBlock];
  for (int64_t k = 0; k < len; ++k) {
    char* dst = y + k * row_bytes + c0 * static_cast<int64_t>(bytes);
    float* result = dtype == PHX_DTYPE_F32 ? reinterpret_cast<float*>(dst) : out;
    if (log)
      shifted_log_columns(load(k), m, s, result, width);
    else
      exp_shifted_times(load(k), m, s, result, width);
    if (dtype != PHX_DTYPE_F32) from_f32(dtype, out, dst, width);
  }
}

// Layer norm (center) or RMS norm (!center) of one row. gamma and beta are f32 or null.
void norm_row(phx_dtype dtype, bool center, float epsilon, const void* x, const float* gamma,
              const float* beta, void* y, int64_t n) {
  double sum = 0.0;
  if (center) {
    for_each_block(dtype, x, n,
                   [&](const float* b, int64_t, int64_t len) { sum += row_sum(b, len); });
  }
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  // Two passes (the squares of x - mean, not mean(x^2) - mean^2): no cancellation.
  double squares = 0.0;
  for_each_block(dtype, x, n, [&](const float* b, int64_t, int64_t len) {
    squares += centered_square_sum(b, mean, len);
  });
  const float variance = static_cast<float>(squares / static_cast<double>(n));
  const float rstd = 1.0f / std::sqrt(variance + epsilon);
  if (dtype == PHX_DTYPE_F32) {
    normalize(static_cast<const float*>(x), mean, rstd, gamma, beta, static_cast<float*>(y), n);
    return;
  }
  float out[kBlock];
  uint16_t* py = static_cast<uint16_t*>(y);
  for_each_block(dtype, x, n, [&](const float* b, int64_t i, int64_t len) {
    normalize(b, mean, rstd, gamma ? gamma + i : nullptr, beta ? beta + i : nullptr, out, len);
    from_f32(dtype, out, py + i, len);
  });
}

// An f32 view of an optional [n] operand: the data itself for f32, else a converted
// copy in storage; null when absent.
const float* f32_view(const HostTensor& t, std::vector<float>& storage) {
  if (t.data == nullptr) return nullptr;
  if (t.dtype == PHX_DTYPE_F32) return static_cast<const float*>(t.data);
  storage.resize(static_cast<size_t>(element_count(t)));
  copy_to_f32(t, storage.data());
  return storage.data();
}

void run_norm(bool center, float epsilon, const HostTensor& x, const HostTensor& gamma,
              const HostTensor& beta, const HostTensor& out, ThreadPool& pool) {
  const int64_t n = x.rank == 0 ? 1 : x.shape[x.rank - 1];
  const int64_t rows = element_count(x) / n;
  std::vector<float> gamma_storage, beta_storage;
  const float* g = f32_view(gamma, gamma_storage);
  const float* b = center ? f32_view(beta, beta_storage) : nullptr;
  const phx_dtype dtype = x.dtype;
  const int64_t row_bytes = n * static_cast<int64_t>(dtype_bytes(dtype));
  const char* px = static_cast<const char*>(x.data);
  char* py = static_cast<char*>(out.data);
  parallel_for(pool, rows, n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      norm_row(dtype, center, epsilon, px + r * row_bytes, g, b, py + r * row_bytes, n);
  });
}

void softmax_any(bool log, const phx_softmax_params& params, const HostTensor& x,
                 const HostTensor& out, ThreadPool& pool) {
  const int rank = static_cast<int>(x.rank);
  const int axis = rank == 0 ? 0 : (params.axis < 0 ? params.axis + rank : params.axis);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  const int64_t len = rank == 0 ? 1 : x.shape[axis];
  const phx_dtype dtype = x.dtype;
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(dtype));
  const char* px = static_cast<const char*>(x.data);
  char* py = static_cast<char*>(out.data);
  if (inner == 1) {
    parallel_for(pool, outer, len, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        softmax_row(dtype, log, px + r * len * bytes, py + r * len * bytes, len);
    });
    return;
  }
  const int64_t column_blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(pool, outer * column_blocks, len * std::min(kBlock, inner),
               [&](int64_t begin, int64_t end) {
                 for (int64_t t = begin; t < end; ++t) {
                   const int64_t o = t / column_blocks, c0 = (t % column_blocks) * kBlock;
                   const int64_t slice = o * len * inner * bytes;
                   softmax_columns(dtype, log, px + slice, py + slice, len, inner, c0,
                                   std::min(kBlock, inner - c0));
                 }
               });
}

// y = (x - mean) * rstd * scale + bias over one channel's n contiguous elements.
void normalize_channel_row(phx_dtype dtype, const void* x, float mean, float rstd, float scale,
                           float bias, void* y, int64_t n) {
  if (dtype == PHX_DTYPE_F32) {
    normalize_channel(static_cast<const float*>(x), mean, rstd, scale, bias, static_cast<float*>(y),
                      n);
    return;
  }
  float out[kBlock];
  uint16_t* py = static_cast<uint16_t*>(y);
  for_each_block(dtype, x, n, [&](const float* b, int64_t i, int64_t len) {
    normalize_channel(b, mean, rstd, scale, bias, out, len);
    from_f32(dtype, out, py + i, len);
  });
}

// Calls f(n, c, offset) for each (n, c) slice of x [N, C, ...] of `spatial` elements,
// offset in elements, on the pool.
template <class F>
void for_each_channel_slice(const HostTensor& x, ThreadPool& pool, F&& f) {
  const int64_t channels = x.shape[1];
  int64_t spatial = 1;
  for (uint32_t d = 2; d < x.rank; ++d) spatial *= x.shape[d];
  parallel_for(pool, x.shape[0] * channels, spatial, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) f(t % channels, t * spatial, spatial);
  });
}

}  // namespace

void run_softmax(const phx_softmax_params& params, const HostTensor& x, const HostTensor& out,
                 ThreadPool& pool) {
  softmax_any(false, params, x, out, pool);
}

void run_log_softmax(const phx_softmax_params& params, const HostTensor& x, const HostTensor& out,
                     ThreadPool& pool) {
  softmax_any(true, params, x, out, pool);
}

void run_batch_norm(const phx_norm_params& params, const HostTensor* in, const HostTensor& out,
                    ThreadPool& pool) {
  const HostTensor& x = in[0];
  // scale, bias, mean and var as f32, each [C].
  std::vector<float> storage[4];
  const float* channel[4];
  for (int i = 0; i < 4; ++i) channel[i] = f32_view(in[i + 1], storage[i]);
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(x.dtype));
  const char* px = static_cast<const char*>(x.data);
  char* py = static_cast<char*>(out.data);
  for_each_channel_slice(x, pool, [&](int64_t c, int64_t offset, int64_t n) {
    const float rstd = 1.0f / std::sqrt(channel[3][c] + params.epsilon);
    normalize_channel_row(x.dtype, px + offset * bytes, channel[2][c], rstd, channel[0][c],
                          channel[1][c], py + offset * bytes, n);
  });
}

void run_instance_norm(const phx_norm_params& params, const HostTensor& x, const HostTensor& scale,
                       const HostTensor& bias, const HostTensor& out, ThreadPool& pool) {
  std::vector<float> scale_storage, bias_storage;
  const float* s = f32_view(scale, scale_storage);
  const float* b = f32_view(bias, bias_storage);
  const phx_dtype dtype = x.dtype;
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(dtype));
  const char* px = static_cast<const char*>(x.data);
  char* py = static_cast<char*>(out.data);
  for_each_channel_slice(x, pool, [&](int64_t c, int64_t offset, int64_t n) {
    const char* row = px + offset * bytes;
    // The mean, then the squares of x - mean (as layer_norm: no cancellation).
    double sum = 0.0, squares = 0.0;
    for_each_block(dtype, row, n,
                   [&](const float* blk, int64_t, int64_t len) { sum += row_sum(blk, len); });
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    for_each_block(dtype, row, n, [&](const float* blk, int64_t, int64_t len) {
      squares += centered_square_sum(blk, mean, len);
    });
    const float variance = static_cast<float>(squares / static_cast<double>(n));
    const float rstd = 1.0f / std::sqrt(variance + params.epsilon);
    normalize_channel_row(dtype, row, mean, rstd, s[c], b[c], py + offset * bytes, n);
  });
}

void run_layer_norm(const phx_norm_params& params, const HostTensor& x, const HostTensor& gamma,
                    const HostTensor& beta, const HostTensor& out, ThreadPool& pool) {
  run_norm(true, params.epsilon, x, gamma, beta, out, pool);
}

void run_rms_norm(const phx_norm_params& params, const HostTensor& x, const HostTensor& gamma,
                  const HostTensor& out, ThreadPool& pool) {
  run_norm(false, params.epsilon, x, gamma, HostTensor{}, out, pool);
}

}  // namespace phx::kernels::ops
