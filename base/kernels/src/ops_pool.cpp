// max_pool and avg_pool over the 1 to 3 spatial dimensions of x [N, C, D1..Dk].
//
// Every shape is taken as 3-D (missing dimensions of size 1, kernel 1); each task takes
// whole (n, c) planes. max_pool reduces rows (below); avg_pool's output elements walk
// their windows directly. Float inputs are converted to f32 first, and the output rounded
// once from f32: the maximum is then exact, and avg_pool sums in f32. Integer max pooling
// compares the integers themselves.
#include <phx/op_geometry.h>

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

// Calls f(input offset in the plane) for every tap of the window of output (o0, o1, o2)
// inside x; returns the taps inside x and, in padded, those inside the padded extent.
template <class F>
int64_t for_each_tap(const PoolGeometry& g, const int64_t* o, int64_t& padded, F&& f) {
  const Taps t0 = taps_of(g.axis[0], o[0]), t1 = taps_of(g.axis[1], o[1]),
             t2 = taps_of(g.axis[2], o[2]);
  padded = t0.padded * t1.padded * t2.padded;
  const PoolAxis *a0 = &g.axis[0], *a1 = &g.axis[1], *a2 = &g.axis[2];
  for (int64_t i = t0.first, p = t0.first_in; i < t0.end; ++i, p += a0->dilation)
    for (int64_t j = t1.first, q = t1.first_in; j < t1.end; ++j, q += a1->dilation)
      for (int64_t k = t2.first, r = t2.first_in; k < t2.end; ++k, r += a2->dilation)
        f((p * a1->in + q) * a2->in + r);
  return (t0.end - t0.first) * (t1.end - t1.first) * (t2.end - t2.first);
}

// Pools planes [begin, end) of in into out (T the computing type: float or the integer);
// reduce(window taps of one output) gives its value.
template <class T, class Reduce>
void pool_planes(const PoolGeometry& g, const T* in, T* out, int64_t begin, int64_t end,
                 Reduce reduce) {
  for (int64_t plane = begin; plane < end; ++plane) {
    const T* x = in + plane * g.in_plane();
    T* y = out + plane * g.out_plane();
    int64_t o[3];
    for (o[0] = 0; o[0] < g.axis[0].out; ++o[0])
      for (o[1] = 0; o[1] < g.axis[1].out; ++o[1])
        for (o[2] = 0; o[2] < g.axis[2].out; ++o[2]) *y++ = reduce(x, o);
  }
}

// ---- max_pool ----
// The maximum is separable: a window's maximum is the maximum, over its taps along the
// innermost axis, of the maxima down its taps along the outer two. Each output row first
// reduces its outer taps to one row of the input's width; the outputs whose windows lie
// inside x then read that row at fixed offsets and a stride, in loops over the row (or
// over the plane's rows at once) that vectorize, where a walk of each window does not.
// The few at the padded edges walk their taps.

// NaN wins, as in reduce_max and NumPy's max.
template <class T>
PHX_INLINE T max_or_nan(T m, T v) {
  return (v > m || v != v) ? v : m;
}

// dst[i] = src[i * stride] (kCopy) or max(dst[i], src[i * stride]) for i in [0, n). The
// common strides get loops of their own: a constant stride vectorizes.
template <bool kCopy, class T>
PHX_INLINE void gather_max(const T* src, int64_t stride, T* dst, int64_t n) {
  auto run = [&](auto step) {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = kCopy ? src[i * step] : max_or_nan(dst[i], src[i * step]);
  };
  if (stride == 1) {
    run(std::integral_constant<int64_t, 1>{});
  } else if (stride == 2) {
    run(std::integral_constant<int64_t, 2>{});
  } else {
    run(stride);
  }
}

PHX_CLONES void copy_strided_f32(const float* src, int64_t stride, float* dst, int64_t n) {
  gather_max<true>(src, stride, dst, n);
}
PHX_CLONES void max_strided_f32(const float* src, int64_t stride, float* dst, int64_t n) {
  gather_max<false>(src, stride, dst, n);
}
template <class T>
void copy_strided(const T* src, int64_t stride, T* dst, int64_t n) {
  gather_max<true>(src, stride, dst, n);
}
template <class T>
void max_strided(const T* src, int64_t stride, T* dst, int64_t n) {
  gather_max<false>(src, stride, dst, n);
}
void copy_strided(const float* src, int64_t stride, float* dst, int64_t n) {
  copy_strided_f32(src, stride, dst, n);
}
void max_strided(const float* src, int64_t stride, float* dst, int64_t n) {
  max_strided_f32(src, stride, dst, n);
}

std::vector<Taps> taps_along(const PoolAxis& a) {
  std::vector<Taps> taps(static_cast<size_t>(a.out));
  for (int64_t o = 0; o < a.out; ++o) taps[o] = taps_of(a, o);
  return taps;
}

template <class T>
void max_pool_planes(const PoolGeometry& g, const T* in, T* out, int64_t begin, int64_t end) {
  const PoolAxis &a0 = g.axis[0], &a1 = g.axis[1], &a2 = g.axis[2];
  const std::vector<Taps> taps0 = taps_along(a0), taps1 = taps_along(a1), cols = taps_along(a2);
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
      // The row of the outer taps' maxima: with one outer tap the input row itself (copied
      // when the plane's rows are stored), else their maximum in dst.
      const T* r = nullptr;
      for (int64_t i = t0.first, p = t0.first_in; i < t0.end; ++i, p += a0.dilation)
        for (int64_t j = t1.first, q = t1.first_in; j < t1.end; ++j, q += a1.dilation) {
          const T* src = x + (p * a1.in + q) * a2.in;
          if (r == nullptr) {
            r = src;
            continue;
          }
          if (r != dst) copy_strided(r, 1, dst, width);
          max_strided(src, 1, dst, width);
          r = dst;
        }
      if (flat && r != dst) copy_strided(r, 1, dst, width);
      if (flat) continue;
      T* yr = y + row * a2.out;
      auto edge = [&](int64_t o) {
        const Taps& t = cols[o];
        T m = t.first == t.end ? T{0} : r[t.first_in];
        for (int64_t k = t.first + 1, at = t.first_in + a2.dilation; k < t.end;
             ++k, at += a2.dilation)
          m = max_or_nan(m, r[at]);
        yr[o] = m;
      };
      for (int64_t o = 0; o < lo; ++o) edge(o);
      for (int64_t o = hi; o < a2.out; ++o) edge(o);
      if (lo < hi) {
        const T* start = r + lo * a2.stride - a2.pad_begin;
        copy_strided(start, a2.stride, yr + lo, hi - lo);
        for (int64_t k = 1; k < a2.kernel; ++k)
          max_strided(start + k * a2.dilation, a2.stride, yr + lo, hi - lo);
      }
    }
    if (flat) {
      copy_strided(buffer.data(), a2.stride, y, rows * a2.out);
      for (int64_t k = 1; k < a2.kernel; ++k)
        max_strided(buffer.data() + k * a2.dilation, a2.stride, y, rows * a2.out);
    }
  }
}

template <class T>
void max_pool_typed(const PoolGeometry& g, const T* in, T* out, ThreadPool& pool) {
  parallel_for(pool, g.planes, g.out_plane() * g.window(),
               [&](int64_t begin, int64_t end) { max_pool_planes(g, in, out, begin, end); });
}

void avg_pool_f32(const PoolGeometry& g, bool count_include_pad, const float* in, float* out,
                  ThreadPool& pool) {
  parallel_for(pool, g.planes, g.out_plane() * g.window(), [&](int64_t begin, int64_t end) {
    pool_planes(g, in, out, begin, end, [&](const float* x, const int64_t* o) {
      int64_t padded;
      float sum = 0.0f;
      const int64_t taps = for_each_tap(g, o, padded, [&](int64_t at) { sum += x[at]; });
      const int64_t count = count_include_pad ? padded : taps;
      return count == 0 ? 0.0f : sum / static_cast<float>(count);
    });
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
