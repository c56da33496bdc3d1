// quantize, dequantize and dynamic_quantize (docs/quantization.md):
//   quantize:    q = saturate(round_half_even(x / scale) + zp), x / scale in f32;
//                NaN quantizes as 0 (to zp), +-inf saturate.
//   dequantize:  x = float(q - zp) * scale, q - zp exact, one rounding each step.
//   dynamic:     per-tensor range of the finite values, then quantize.
// Per tensor or per channel along an axis; zero points are clamped to the quantized
// dtype's range. The loops vectorize (PHX_CLONES) and split over the pool.
#include <cmath>
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// The range of a quantized dtype, as floats (exact).
struct QRange {
  float lo, hi;
};

QRange qrange(phx_dtype dtype) {
  switch (dtype) {
    case PHX_DTYPE_U8:
      return {0.0f, 255.0f};
    case PHX_DTYPE_I16:
      return {-32768.0f, 32767.0f};
    case PHX_DTYPE_I32:
      return {-2147483648.0f, 2147483520.0f};  // not used to quantize
    default:
      return {-128.0f, 127.0f};
  }
}

// 1.5 * 2^23: adding and subtracting it rounds a float below 2^22 in magnitude to an
// integer, ties to even, in a form every instruction set vectorizes.
constexpr float kRoundMagic = 12582912.0f;

template <class T>
PHX_INLINE T quantize_one(float x, float scale, float zero_point, QRange r) {
  float v = x / scale;
  v = v == v ? v : 0.0f;
  // Past 2^22 every value saturates anyway (|zero_point| <= 2^16); clamping keeps the
  // magic rounding exact.
  v = std::clamp(v, -0x1p22f, 0x1p22f);
  v = (v + kRoundMagic) - kRoundMagic + zero_point;
  return static_cast<T>(static_cast<int32_t>(std::clamp(v, r.lo, r.hi)));
}

// y[i] = quantize(x[i]) with one scale and zero point.
template <class T>
PHX_INLINE void quantize_span(const float* x, T* y, int64_t n, float scale, float zp, QRange r) {
  for (int64_t i = 0; i < n; ++i) y[i] = quantize_one<T>(x[i], scale, zp, r);
}

// y[c] = quantize(x[c]) with channel c's scale and zero point (the last axis).
template <class T>
PHX_INLINE void quantize_channels(const float* x, T* y, int64_t n, const float* scale,
                                  const float* zp, QRange r) {
  for (int64_t i = 0; i < n; ++i) y[i] = quantize_one<T>(x[i], scale[i], zp[i], r);
}

template <class T>
PHX_INLINE float dequantize_one(T q, int32_t zp, float scale) {
  // q - zp is exact in int64; as a float it is rounded once (only i32 q can need it).
  return static_cast<float>(static_cast<int64_t>(q) - zp) * scale;
}

template <class T>
PHX_INLINE void dequantize_span(const T* q, float* y, int64_t n, float scale, int32_t zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = dequantize_one(q[i], zp, scale);
}

template <class T>
PHX_INLINE void dequantize_channels(const T* q, float* y, int64_t n, const float* scale,
                                    const int32_t* zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = dequantize_one(q[i], zp[i], scale[i]);
}

// The loops above compiled once per dtype and instruction set, and overloads on the
// dtype that pick them.
#define PHX_QUANTIZE_KERNELS(T, name)                                                            \
  PHX_CLONES void quantize_span_##name(const float* x, T* y, int64_t n, float s, float zp,       \
                                       QRange r) {                                               \
    quantize_span(x, y, n, s, zp, r);                                                            \
  }                                                                                              \
  PHX_CLONES void quantize_channels_##name(const float* x, T* y, int64_t n, const float* s,      \
                                           const float* zp, QRange r) {                          \
    quantize_channels(x, y, n, s, zp, r);                                                        \
  }                                                                                              \
  PHX_CLONES void dequantize_span_##name(const T* q, float* y, int64_t n, float s, int32_t zp) { \
    dequantize_span(q, y, n, s, zp);                                                             \
  }                                                                                              \
  PHX_CLONES void dequantize_channels_##name(const T* q, float* y, int64_t n, const float* s,    \
                                             const int32_t* zp) {                                \
    dequantize_channels(q, y, n, s, zp);                                                         \
  }                                                                                              \
  void quantize_span_any(const float* x, T* y, int64_t n, float s, float zp, QRange r) {         \
    quantize_span_##name(x, y, n, s, zp, r);                                                     \
  }                                                                                              \
  void quantize_channels_any(const float* x, T* y, int64_t n, const float* s, const float* zp,   \
                             QRange r) {                                                         \
    quantize_channels_##name(x, y, n, s, zp, r);                                                 \
  }                                                                                              \
  void dequantize_span_any(const T* q, float* y, int64_t n, float s, int32_t zp) {               \
    dequantize_span_##name(q, y, n, s, zp);                                                      \
  }                                                                                              \
  void dequantize_channels_any(const T* q, float* y, int64_t n, const float* s,                  \
                               const int32_t* zp) {                                              \
    dequantize_channels_##name(q, y, n, s, zp);                                                  \
  }

PHX_QUANTIZE_KERNELS(int8_t, i8)
PHX_QUANTIZE_KERNELS(uint8_t, u8)
PHX_QUANTIZE_KERNELS(int16_t, i16)
PHX_QUANTIZE_KERNELS(int32_t, i32)
#undef PHX_QUANTIZE_KERNELS

// Scales and zero points, one per channel (one in all per tensor), zero points clamped.
struct Channels {
  int64_t outer = 1, count = 1, inner = 1;  // x seen as [outer, count, inner]
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
};

Channels channels_of(const phx_quantize_params& params, const HostTensor& x,
                     const HostTensor& scale, const HostTensor& zero_point, phx_dtype qdtype) {
  Channels ch;
  const int64_t n = element_count(scale);
  const auto* s = static_cast<const float*>(scale.data);
  const auto* zp = static_cast<const int32_t*>(zero_point.data);
  const QRange r = qrange(qdtype);
  ch.scale.assign(s, s + n);
  for (int64_t c = 0; c < n; ++c) {
    const int64_t z = zp != nullptr ? zp[c] : 0;
    ch.zero_point.push_back(static_cast<int32_t>(std::clamp<int64_t>(
        z, static_cast<int64_t>(r.lo), qdtype == PHX_DTYPE_I32 ? INT32_MAX : int64_t(r.hi))));
  }
  if (n == 1) {
    ch.inner = element_count(x);
    return ch;
  }
  const int rank = static_cast<int>(x.rank);
  const int axis = params.axis < 0 ? params.axis + rank : params.axis;
  for (int d = 0; d < rank; ++d) {
    if (d < axis) ch.outer *= x.shape[d];
    if (d > axis) ch.inner *= x.shape[d];
  }
  ch.count = n;
  return ch;
}

// Calls span(offset, length, channel) over x's rows of `inner` elements, or, when the
// channel axis is the last one, rows(offset) over its rows of `count` channels.
template <class Span, class Rows>
void for_channels(const Channels& ch, ThreadPool& pool, Span span, Rows rows) {
  if (ch.inner == 1 && ch.count > 1) {
    parallel_for(pool, ch.outer, ch.count, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) rows(r * ch.count);
    });
    return;
  }
  // Per tensor: one long row, split into pieces.
  const int64_t piece =
      ch.count == 1 && ch.outer == 1 ? std::max<int64_t>(ch.inner / 64, 4096) : ch.inner;
  const int64_t pieces_per_row = (ch.inner + piece - 1) / piece;
  parallel_for(pool, ch.outer * ch.count * pieces_per_row, std::min(piece, ch.inner),
               [&](int64_t p0, int64_t p1) {
                 for (int64_t p = p0; p < p1; ++p) {
                   const int64_t row = p / pieces_per_row, part = p % pieces_per_row;
                   const int64_t begin = part * piece;
                   span(row * ch.inner + begin, std::min(piece, ch.inner - begin), row % ch.count);
                 }
               });
}

template <class T>
void quantize_as(const Channels& ch, const float* x, T* y, QRange r, ThreadPool& pool) {
  std::vector<float> zp(ch.zero_point.begin(), ch.zero_point.end());
  for_channels(
      ch, pool,
      [&](int64_t off, int64_t n, int64_t c) {
        quantize_span_any(x + off, y + off, n, ch.scale[size_t(c)], zp[size_t(c)], r);
      },
      [&](int64_t off) {
        quantize_channels_any(x + off, y + off, ch.count, ch.scale.data(), zp.data(), r);
      });
}

template <class T>
void dequantize_as(const Channels& ch, const T* q, float* y, ThreadPool& pool) {
  for_channels(
      ch, pool,
      [&](int64_t off, int64_t n, int64_t c) {
        dequantize_span_any(q + off, y + off, n, ch.scale[size_t(c)], ch.zero_point[size_t(c)]);
      },
      [&](int64_t off) {
        dequantize_channels_any(q + off, y + off, ch.count, ch.scale.data(), ch.zero_point.data());
      });
}

void quantize_into(const Channels& ch, const float* x, const HostTensor& out, ThreadPool& pool) {
  const QRange r = qrange(out.dtype);
  visit_int(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    quantize_as(ch, x, static_cast<T*>(out.data), r, pool);
  });
}

// The smallest and largest finite value of x (+inf and -inf when there is none).
PHX_CLONES void finite_range(const float* x, int64_t n, float* out_min, float* out_max) {
  float lo[kLanes], hi[kLanes];
  for (int j = 0; j < kLanes; ++j) {
    lo[j] = std::numeric_limits<float>::infinity();
    hi[j] = -std::numeric_limits<float>::infinity();
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float v = x[i + j];
      const bool finite = v - v == 0.0f;  // false for inf and NaN
      lo[j] = finite && v < lo[j] ? v : lo[j];
      hi[j] = finite && v > hi[j] ? v : hi[j];
    }
  for (; i < n; ++i) {
    const float v = x[i];
    if (v - v == 0.0f) {
      lo[0] = std::min(lo[0], v);
      hi[0] = std::max(hi[0], v);
    }
  }
  *out_min = lo[0];
  *out_max = hi[0];
  for (int j = 1; j < kLanes; ++j) {
    *out_min = std::min(*out_min, lo[j]);
    *out_max = std::max(*out_max, hi[j]);
  }
}

}  // namespace

void run_quantize(const phx_quantize_params& params, const HostTensor& x, const HostTensor& scale,
                  const HostTensor& zero_point, const HostTensor& out, ThreadPool& pool) {
  const Channels ch = channels_of(params, x, scale, zero_point, out.dtype);
  quantize_into(ch, static_cast<const float*>(x.data), out, pool);
}

void run_dequantize(const phx_quantize_params& params, const HostTensor& q, const HostTensor& scale,
                    const HostTensor& zero_point, const HostTensor& out, ThreadPool& pool) {
  const Channels ch = channels_of(params, q, scale, zero_point, q.dtype);
  visit_int(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    dequantize_as(ch, static_cast<const T*>(q.data), static_cast<float*>(out.data), pool);
  });
}

void run_dynamic_quantize(const HostTensor& x, const HostTensor* outputs, ThreadPool& pool) {
  const auto* data = static_cast<const float*>(x.data);
  const int64_t n = element_count(x);
  // The range in pieces, combined in a fixed order: the same result however it is split.
  constexpr int64_t kPiece = 64 * 1024;
  const int64_t pieces = std::max<int64_t>(1, (n + kPiece - 1) / kPiece);
  std::vector<float> lo(static_cast<size_t>(pieces)), hi(static_cast<size_t>(pieces));
  parallel_for(pool, pieces, kPiece, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t begin = p * kPiece;
      finite_range(data + begin, std::min(kPiece, n - begin), &lo[size_t(p)], &hi[size_t(p)]);
    }
  });
  // The range always holds 0 (so that 0 is exact); an empty one counts as [0, 0].
  double min = 0.0, max = 0.0;
  for (int64_t p = 0; p < pieces; ++p) {
    min = std::min(min, double{lo[size_t(p)]});
    max = std::max(max, double{hi[size_t(p)]});
  }
  const phx_dtype qdtype = outputs[0].dtype;
  float scale = 1.0f;
  int32_t zero_point = 0;
  if (qdtype == PHX_DTYPE_U8) {
    const auto s = static_cast<float>((max - min) / 255.0);
    scale = s > 0.0f ? s : 1.0f;
    zero_point = static_cast<int32_t>(std::clamp(std::nearbyint(-min / double{scale}), 0.0, 255.0));
  } else {
    const double qmax = qdtype == PHX_DTYPE_I16 ? 32767.0 : 127.0;
    const auto s = static_cast<float>(std::max(-min, max) / qmax);
    scale = s > 0.0f ? s : 1.0f;
  }
  Channels ch;
  ch.inner = n;
  ch.scale = {scale};
  ch.zero_point = {zero_point};
  quantize_into(ch, data, outputs[0], pool);
  *static_cast<float*>(outputs[1].data) = scale;
  *static_cast<int32_t*>(outputs[2].data) = zero_point;
}

}  // namespace phx::kernels::ops
