// max_pool and avg_pool over the 1 to 3 spatial dimensions of x [N, C, D1..Dk].
//
// Every shape is taken as 3-D (missing dimensions of size 1, kernel 1); each task takes
// whole (n, c) planes, which both ops reduce by rows (below). Float inputs are converted to
// f32 first, and the output rounded once from f32: the maximum is then exact, and avg_pool
// sums in f32. Integer max pooling compares the integers themselves.
#include <phx/op_geometry.h>

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// One spatial dimension of the pooling.
struct PoolAxis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
};

struct PoolGeometry {
  PoolAxis axis[3];
  int64_t planes = 1;  // N * C

  int64_t in_plane() const { return axis[0].in * axis[1].in * axis[2].in; }
  int64_t out_plane() const { return axis[0].out * axis[1].out * axis[2].out; }
  int64_t window() const { return axis[0].kernel * axis[1].kernel * axis[2].kernel; }
};

PoolGeometry geometry_of(const phx_pool_params& p, const HostTensor& x, const HostTensor& out) {
  PoolGeometry g;
  g.planes = x.shape[0] * x.shape[1];
  const int k = static_cast<int>(x.rank) - 2;
  for (int i = 0; i < k; ++i) {
    PoolAxis& a = g.axis[3 - k + i];  // the innermost dimensions are the spatial ones
    a.in = x.shape[2 + i];
    a.out = out.shape[2 + i];
    a.kernel = p.kernel[i];
    a.stride = std::max<uint32_t>(p.stride[i], 1);
    a.dilation = std::max<uint32_t>(p.dilation[i], 1);
    a.pad_begin = p.pad_begin[i];
    a.pad_end = p.pad_end[i];
  }
  return g;
}

// The window's taps along one axis for output index o: t in [first, end) reads input
// first_in + t * dilation, all inside x. padded counts the taps inside the padded extent.
struct Taps {
  int64_t first = 0, end = 0, first_in = 0, padded = 0;
};

Taps taps_of(const PoolAxis& a, int64_t o) {
  Taps t;
  const int64_t start = o * a.stride - a.pad_begin;  // the input index of tap 0
  auto first_at_least = [&](int64_t lo) {            // the first tap whose index is >= lo
    return start >= lo ? 0 : std::min(a.kernel, (lo - start + a.dilation - 1) / a.dilation);
  };
  auto end_below = [&](int64_t hi) {  // one past the last tap whose index is < hi
    return start >= hi ? 0 : std::min(a.kernel, (hi - start + a.dilation - 1) / a.dilation);
  };
  t.first = first_at_least(0);
  t.end = std::max(t.first, end_below(a.in));
  t.first_in = start + t.first * a.dilation;
  t.padded = std::max<int64_t>(0, end_below(a.in + a.pad_end) - first_at_least(-a.pad_begin));
  return t;
}

// ---- Separable pooling: max_pool, and avg_pool's sums ----
// A window's maximum (or sum) is the maximum (sum), over its taps along the innermost
// axis, of the maxima (sums) down its taps along the outer two. Each output row first
// reduces its outer taps to one row of the input's width; the outputs whose windows lie
// inside x then read that row at fixed offsets and a stride, in loops over the row (or
// over the plane's rows at once) that vectorize, where a walk of each window does not.
// The few at the padded edges walk their taps. The f32 planes are computed inside one
// function per instruction set (PHX_CLONES), every loop inlined in it: rows of 7 to 56
// values are too short to pay for a call each.

// NaN wins, as in reduce_max and NumPy's max.
template <class T>
PHX_INLINE T max_or_nan(T m, T v) {
  return (v > m || v != v) ? v : m;
}

struct MaxOf {
  template <class T>
  PHX_INLINE static T combine(T m, T v) {
    return max_or_nan(m, v);
  }
};
struct SumOf {
  template <class T>
  PHX_INLINE static T combine(T m, T v) {
    return m + v;
  }
};

// dst[i] = src[i * stride] (kCopy) or combine(dst[i], src[i * stride]) for i in [0, n).
// The common strides get loops of their own: a constant stride vectorizes.
template <class Op, bool kCopy, class T>
PHX_INLINE void gather(const T* src, int64_t stride, T* dst, int64_t n) {
  auto run = [&](auto step) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = kCopy ? src[i * step] : Op::combine(dst[i], src[i * step]);
  };
  if (stride == 1) {
    run(std::integral_constant<int64_t, 1>{});
  } else if (stride == 2) {
    run(std::integral_constant<int64_t, 2>{});
  } else {
    run(stride);
  }
}

std::vector<Taps> taps_along(const PoolAxis& a) {
  std::vector<Taps> taps(static_cast<size_t>(a.out));
  for (int64_t o = 0; o < a.out; ++o) taps[o] = taps_of(a, o);
  return taps;
}

// The taps of each output along the three axes.
struct AxisTaps {
  std::vector<Taps> outer0, outer1, cols;
  explicit AxisTaps(const PoolGeometry& g)
      : outer0(taps_along(g.axis[0])), outer1(taps_along(g.axis[1])), cols(taps_along(g.axis[2])) {}
};

// Planes [begin, end) of in, pooled with Op into out: a window of padding only gives 0.
template <class Op, class T>
PHX_INLINE void separable_planes(const PoolGeometry& g, const AxisTaps& taps, const T* in, T* out,
                                 int64_t begin, int64_t end) {
  const PoolAxis &a0 = g.axis[0], &a1 = g.axis[1], &a2 = g.axis[2];
  const std::vector<Taps>&taps0 = taps.outer0, &taps1 = taps.outer1, &cols = taps.cols;
  // Windows start further right as o grows: those inside x are one range [lo, hi).
  auto inside = [&](int64_t o) { return cols[o].first == 0 && cols[o].end == a2.kernel; };
  int64_t lo = 0, hi = a2.out;
  while (lo < hi && !inside(lo)) ++lo;
  while (hi > lo && !inside(hi - 1)) --hi;
  // When every window of a row lies inside x and none overlaps the next (the kernel no
  // wider than the stride, as CNNs pool), the rows of outer maxima are stored pitch =
  // out * stride apart: output (row, o) then reads (row * out + o) * stride + k * dilation,
  // and one loop per tap covers the whole plane, however short its rows. Those reads
  // stay within the first `width` values of each row.
  const bool flat = lo == 0 && hi == a2.out && (a2.kernel - 1) * a2.dilation < a2.stride;
  const int64_t rows = a0.out * a1.out, pitch = flat ? a2.out * a2.stride : a2.in;
  const int64_t width = flat ? (a2.out - 1) * a2.stride + (a2.kernel - 1) * a2.dilation + 1 : a2.in;
  std::vector<T> buffer(static_cast<size_t>(flat ? rows * pitch : a2.in));
  for (int64_t plane = begin; plane < end; ++plane) {
    const T* x = in + plane * g.in_plane();
    T* y = out + plane * g.out_plane();
    for (int64_t row = 0; row < rows; ++row) {
      const Taps &t0 = taps0[row / a1.out], &t1 = taps1[row % a1.out];
      T* dst = flat ? buffer.data() + row * pitch : buffer.data();
      if (t0.first == t0.end || t1.first == t1.end) {  // windows of padding only (dilated)
        std::fill(flat ? dst : y + row * a2.out, flat ? dst + pitch : y + (row + 1) * a2.out, T{0});
        continue;
      }
      // The row of the outer taps' combination: with one outer tap the input row itself
      // (copied when the plane's rows are stored), else their combination in dst.
      const T* r = nullptr;
      for (int64_t i = t0.first, p = t0.first_in; i < t0.end; ++i, p += a0.dilation)
        for (int64_t j = t1.first, q = t1.first_in; j < t1.end; ++j, q += a1.dilation) {
          const T* src = x + (p * a1.in + q) * a2.in;
          if (r == nullptr) {
            r = src;
            continue;
          }
          if (r != dst) gather<Op, true>(r, 1, dst, width);
          gather<Op, false>(src, 1, dst, width);
          r = dst;
        }
      if (flat && r != dst) gather<Op, true>(r, 1, dst, width);
      if (flat) continue;
      T* yr = y + row * a2.out;
      auto edge = [&](int64_t o) {
        const Taps& t = cols[o];
        T m = t.first == t.end ? T{0} : r[t.first_in];
        for (int64_t k = t.first + 1, at = t.first_in + a2.dilation; k < t.end;
             ++k, at += a2.dilation)
          m = Op::combine(m, r[at]);
        yr[o] = m;
      };
      for (int64_t o = 0; o < lo; ++o) edge(o);
      for (int64_t o = hi; o < a2.out; ++o) edge(o);
      if (lo < hi) {
        const T* start = r + lo * a2.stride - a2.pad_begin;
        gather<Op, true>(start, a2.stride, yr + lo, hi - lo);
        for (int64_t k = 1; k < a2.kernel; ++k)
          gather<Op, false>(start + k * a2.dilation, a2.stride, yr + lo, hi - lo);
      }
    }
    if (flat) {
      gather<Op, true>(buffer.data(), a2.stride, y, rows * a2.out);
      for (int64_t k = 1; k < a2.kernel; ++k)
        gather<Op, false>(buffer.data() + k * a2.dilation, a2.stride, y, rows * a2.out);
    }
  }
}

// 2-D pooling over a copy of each plane padded with `fill` (which no result can come from:
// -inf or the integer minimum for the maximum, 0 for the sum), so that every loop runs over
// whole planes, the rows of 7 to 56 values side by side: the rows a window reaches from
// (h_out - 1) * stride_h + 1 rows down, each of `wp` columns, a multiple of stride_w. The
// outer taps combine into `rows` (h_out rows of wp), the inner taps of output t of the
// plane read rows[t * stride_w + k * dilation_w], and each output row is the first w_out
// of its wp / stride_w results. For geometries where each window holds an input value.
template <class Op, class T>
PHX_INLINE void padded_planes(const PoolGeometry& g, const T* in, T* out, int64_t begin,
                              int64_t end, T fill) {
  const PoolAxis &a1 = g.axis[1], &a2 = g.axis[2];
  const int64_t hp = (a1.out - 1) * a1.stride + (a1.kernel - 1) * a1.dilation + 1;
  const int64_t reach = (a2.out - 1) * a2.stride + (a2.kernel - 1) * a2.dilation + 1;
  const int64_t wp = (reach + a2.stride - 1) / a2.stride * a2.stride, pitch = wp / a2.stride;
  const int64_t flat = a1.out * pitch;  // results per plane, w_out of each pitch valid
  // The last results read (kernel - 1) * dilation values past the rows' end.
  std::vector<T> padded(static_cast<size_t>(hp * wp)),
      rows(static_cast<size_t>(a1.out * wp + (a2.kernel - 1) * a2.dilation), fill),
      results(static_cast<size_t>(flat));
  const int64_t iw0 = std::clamp<int64_t>(a2.pad_begin, 0, wp);
  const int64_t iw1 = std::clamp<int64_t>(a2.pad_begin + a2.in, iw0, wp);
  for (int64_t plane = begin; plane < end; ++plane) {
    const T* x = in + plane * g.in_plane();
    for (int64_t r = 0; r < hp; ++r) {
      T* dst = padded.data() + r * wp;
      const int64_t ih = r - a1.pad_begin;
      if (ih < 0 || ih >= a1.in) {
        std::fill(dst, dst + wp, fill);
        continue;
      }
      const T* src = x + ih * a2.in;  // column c of dst is src[c - pad_begin]
      for (int64_t c = 0; c < wp; ++c) dst[c] = c >= iw0 && c < iw1 ? src[c - a2.pad_begin] : fill;
    }
    const int64_t step = a1.dilation * wp;
    if (a1.stride == 1) {  // every output row at once
      gather<Op, true>(padded.data(), 1, rows.data(), a1.out * wp);
      for (int64_t i = 1; i < a1.kernel; ++i)
        gather<Op, false>(padded.data() + i * step, 1, rows.data(), a1.out * wp);
    } else {
      for (int64_t r = 0; r < a1.out; ++r) {
        const T* src = padded.data() + r * a1.stride * wp;
        gather<Op, true>(src, 1, rows.data() + r * wp, wp);
        for (int64_t i = 1; i < a1.kernel; ++i)
          gather<Op, false>(src + i * step, 1, rows.data() + r * wp, wp);
      }
    }
    gather<Op, true>(rows.data(), a2.stride, results.data(), flat);
    for (int64_t k = 1; k < a2.kernel; ++k)
      gather<Op, false>(rows.data() + k * a2.dilation, a2.stride, results.data(), flat);
    T* y = out + plane * g.out_plane();
    for (int64_t r = 0; r < a1.out; ++r)  // short rows: a loop, not a call of memcpy each
      for (int64_t o = 0; o < a2.out; ++o) y[r * a2.out + o] = results[r * pitch + o];
  }
}

// Whether padded_planes takes g: 2-D, no window of padding only, and windows that overlap
// or reach past x along the rows (else separable_planes covers whole planes at once too).
bool takes_padded(const PoolGeometry& g, const AxisTaps& taps) {
  const PoolAxis &a0 = g.axis[0], &a2 = g.axis[2];
  if (a0.in != 1 || a0.out != 1 || a0.kernel != 1) return false;
  auto holds_input = [](const Taps& t) { return t.first < t.end; };
  auto inside = [&](const Taps& t) { return t.first == 0 && t.end == a2.kernel; };
  const bool separable_flat = (a2.kernel - 1) * a2.dilation < a2.stride &&
                              std::all_of(taps.cols.begin(), taps.cols.end(), inside);
  return !separable_flat && std::all_of(taps.outer1.begin(), taps.outer1.end(), holds_input) &&
         std::all_of(taps.cols.begin(), taps.cols.end(), holds_input);
}

template <class Op, class T>
PHX_INLINE void pool_planes(const PoolGeometry& g, const AxisTaps& taps, const T* in, T* out,
                            int64_t begin, int64_t end, T fill) {
  if (takes_padded(g, taps))
    padded_planes<Op>(g, in, out, begin, end, fill);
  else
    separable_planes<Op>(g, taps, in, out, begin, end);
}

PHX_CLONES void max_planes_f32(const PoolGeometry& g, const AxisTaps& taps, const float* in,
                               float* out, int64_t begin, int64_t end) {
  pool_planes<MaxOf>(g, taps, in, out, begin, end, -std::numeric_limits<float>::infinity());
}

// avg_pool: the sums, each then divided by its count, which is separable too: the taps
// (inside x, or inside the padded extent) of its row times those of its column.
PHX_CLONES void avg_planes_f32(const PoolGeometry& g, const AxisTaps& taps, bool count_include_pad,
                               const float* in, float* out, int64_t begin, int64_t end) {
  pool_planes<SumOf>(g, taps, in, out, begin, end, 0.0f);
  auto count = [&](const Taps& t) { return count_include_pad ? t.padded : t.end - t.first; };
  const int64_t out1 = g.axis[1].out, out2 = g.axis[2].out;
  for (int64_t plane = begin; plane < end; ++plane) {
    float* y = out + plane * g.out_plane();
    for (int64_t row = 0; row < g.axis[0].out * out1; ++row, y += out2) {
      const int64_t row_count = count(taps.outer0[row / out1]) * count(taps.outer1[row % out1]);
      for (int64_t o = 0; o < out2; ++o) {
        const int64_t c = row_count * count(taps.cols[o]);
        y[o] = c == 0 ? 0.0f : y[o] / static_cast<float>(c);
      }
    }
  }
}

template <class T>
void max_pool_typed(const PoolGeometry& g, const T* in, T* out, ThreadPool& pool) {
  const AxisTaps taps(g);
  parallel_for(pool, g.planes, g.out_plane() * g.window(), [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>)
      max_planes_f32(g, taps, in, out, begin, end);
    else
      pool_planes<MaxOf>(g, taps, in, out, begin, end, std::numeric_limits<T>::lowest());
  });
}

void avg_pool_f32(const PoolGeometry& g, bool count_include_pad, const float* in, float* out,
                  ThreadPool& pool) {
  const AxisTaps taps(g);
  parallel_for(pool, g.planes, g.out_plane() * g.window(), [&](int64_t begin, int64_t end) {
    avg_planes_f32(g, taps, count_include_pad, in, out, begin, end);
  });
}

// Pools a float x in f32: converted, pooled, rounded once into out.
template <class Pool>
void pool_float(const HostTensor& x, const HostTensor& out, Pool pool_f32) {
  std::vector<float> in_f32, out_f32;
  const float* in = static_cast<const float*>(x.data);
  float* o = static_cast<float*>(out.data);
  if (x.dtype != PHX_DTYPE_F32) {
    in_f32.resize(static_cast<size_t>(element_count(x)));
    out_f32.resize(static_cast<size_t>(element_count(out)));
    copy_to_f32(x, in_f32.data());
    in = in_f32.data();
    o = out_f32.data();
  }
  pool_f32(in, o);
  if (x.dtype != PHX_DTYPE_F32) from_f32(out.dtype, o, out.data, element_count(out));
}

}  // namespace

void run_max_pool(const phx_pool_params& params, const HostTensor& x, const HostTensor& out,
                  ThreadPool& pool) {
  const PoolGeometry g = geometry_of(params, x, out);
  if (is_float(x.dtype)) {
    pool_float(x, out, [&](const float* in, float* o) { max_pool_typed(g, in, o, pool); });
    return;
  }
  visit_int(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    max_pool_typed(g, static_cast<const T*>(x.data), static_cast<T*>(out.data), pool);
  });
}

void run_avg_pool(const phx_pool_params& params, const HostTensor& x, const HostTensor& out,
                  ThreadPool& pool) {
  const PoolGeometry g = geometry_of(params, x, out);
  pool_float(x, out, [&](const float* in, float* o) {
    avg_pool_f32(g, params.count_include_pad != 0, in, o, pool);
  });
}

}  // namespace phx::kernels::ops
