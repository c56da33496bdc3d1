// resize: x resampled to another shape as ONNX's Resize, nearest or N-linear.
//
// Both modes are separable: ONNX's N-linear interpolation is a 1-D linear interpolation
// along each dimension in turn, and nearest picks an index per dimension. So the kernel
// resizes one dimension per pass, skipping the dimensions it maps onto themselves, each
// pass threaded over its output rows (the elements after the dimension, contiguous). The
// source coordinates are computed in double as ONNX's reference does, the weights rounded
// to f32; x is converted to f32 once and the result rounded once to its dtype.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// What one output index of a dimension reads: lo alone (nearest, or a weight of 0), or
// w_lo * x[lo] + w_hi * x[hi].
struct Tap {
  int64_t lo = 0, hi = 0;
  float w_lo = 1.0f, w_hi = 0.0f;
};

// ONNX's coordinate transform: the coordinate of x that output index o maps to, for a
// dimension of in elements resized with scale (output / input).
double source_coordinate(phx_resize_coordinates mode, int64_t o, int64_t in, double scale) {
  const double resized = scale * static_cast<double>(in);  // ONNX's length_resized
  const double x = static_cast<double>(o);
  switch (mode) {
    case PHX_RESIZE_ASYMMETRIC:
      return x / scale;
    case PHX_RESIZE_ALIGN_CORNERS:
      return resized == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1.0);
    case PHX_RESIZE_PYTORCH_HALF_PIXEL:
      // ONNX's reference takes -0.5 here; both clamp to index 0.
      if (resized == 1.0) return 0.0;
      return (x + 0.5) / scale - 0.5;
    case PHX_RESIZE_HALF_PIXEL:
      break;
  }
  return (x + 0.5) / scale - 0.5;
}

// The index nearest mode rounds a coordinate to: an integer stays itself, as in ONNX's
// reference; a half goes down or up as the mode says.
double round_nearest(phx_resize_nearest mode, double c) {
  const double below = std::floor(c);
  if (c == below) return c;
  switch (mode) {
    case PHX_RESIZE_ROUND_PREFER_CEIL:
      return c - below >= 0.5 ? below + 1.0 : below;
    case PHX_RESIZE_FLOOR:
      return below;
    case PHX_RESIZE_CEIL:
      return below + 1.0;
    case PHX_RESIZE_ROUND_PREFER_FLOOR:
      break;
  }
  return c - below > 0.5 ? below + 1.0 : below;
}

// The taps of every output index of dimension d; out of x's extent reads its edge.
std::vector<Tap> taps_of(const phx_resize_params& p, int64_t in, int64_t out, uint32_t d) {
  const double scale = p.scales[d] > 0.0f ? static_cast<double>(p.scales[d])
                                          : static_cast<double>(out) / static_cast<double>(in);
  const double last = static_cast<double>(in - 1);
  std::vector<Tap> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double c = source_coordinate(p.coordinates, o, in, scale);
    Tap& t = taps[static_cast<size_t>(o)];
    if (p.mode == PHX_RESIZE_NEAREST) {
      t.lo = t.hi = static_cast<int64_t>(std::clamp(round_nearest(p.nearest, c), 0.0, last));
      continue;
    }
    const double clamped = std::clamp(c, 0.0, last);
    const double below = std::floor(clamped);
    t.lo = static_cast<int64_t>(below);
    t.hi = std::min(t.lo + 1, in - 1);
    t.w_hi = static_cast<float>(clamped - below);
    t.w_lo = static_cast<float>(1.0 - (clamped - below));
  }
  return taps;
}

// Whether the taps map every index onto itself: a pass over the dimension would copy.
bool is_identity(const std::vector<Tap>& taps, int64_t in) {
  if (static_cast<int64_t>(taps.size()) != in) return false;
  for (size_t o = 0; o < taps.size(); ++o)
    if (taps[o].lo != static_cast<int64_t>(o) || taps[o].w_hi != 0.0f) return false;
  return true;
}

PHX_INLINE float tap_value(const Tap& t, float lo, float hi) {
  // A weight of 0 leaves hi out entirely: 0 * inf would make a NaN that x does not hold.
  return t.w_hi == 0.0f ? lo : t.w_lo * lo + t.w_hi * hi;
}

// One pass: src [outer, in, inner] resized along its middle dimension into
// dst [outer, taps.size(), inner].
void resize_dimension(const float* src, float* dst, int64_t outer, int64_t in, int64_t inner,
                      const std::vector<Tap>& taps, ThreadPool& pool) {
  const int64_t out = static_cast<int64_t>(taps.size());
  parallel_for(pool, outer * out, inner, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const Tap& t = taps[static_cast<size_t>(row % out)];
      const float* base = src + row / out * in * inner;
      const float* lo = base + t.lo * inner;
      const float* hi = base + t.hi * inner;
      float* y = dst + row * inner;
      for (int64_t k = 0; k < inner; ++k) y[k] = tap_value(t, lo[k], hi[k]);
    }
  });
}

int64_t product(const int64_t* dims, uint32_t begin, uint32_t end) {
  int64_t n = 1;
  for (uint32_t d = begin; d < end; ++d) n *= dims[d];
  return n;
}

}  // namespace

void run_resize(const phx_resize_params& params, const HostTensor& x, const HostTensor& out,
                ThreadPool& pool) {
  std::vector<uint32_t> dims;  // the dimensions a pass resizes, in order
  std::vector<std::vector<Tap>> taps;
  for (uint32_t d = 0; d < x.rank; ++d) {
    std::vector<Tap> t = taps_of(params, x.shape[d], out.shape[d], d);
    if (is_identity(t, x.shape[d])) continue;
    dims.push_back(d);
    taps.push_back(std::move(t));
  }
  if (dims.empty()) {  // every dimension maps onto itself: the output is x
    std::memcpy(out.data, x.data, static_cast<size_t>(element_count(x)) * dtype_bytes(x.dtype));
    return;
  }
  // Ping-pong f32 buffers; f32 data is read and written in place of the first and last.
  std::vector<float> current, next;
  const float* src = static_cast<const float*>(x.data);
  if (x.dtype != PHX_DTYPE_F32) {
    current.resize(static_cast<size_t>(element_count(x)));
    copy_to_f32(x, current.data());
    src = current.data();
  }
  int64_t shape[PHX_MAX_RANK];
  std::copy(x.shape, x.shape + x.rank, shape);
  for (size_t i = 0; i < dims.size(); ++i) {
    const uint32_t d = dims[i];
    const int64_t outer = product(shape, 0, d), inner = product(shape, d + 1, x.rank);
    const int64_t in = shape[d];
    shape[d] = out.shape[d];
    const bool last = i + 1 == dims.size();
    float* dst = static_cast<float*>(out.data);
    if (!last || x.dtype != PHX_DTYPE_F32) {
      next.resize(static_cast<size_t>(outer * shape[d] * inner));
      dst = next.data();
    }
    resize_dimension(src, dst, outer, in, inner, taps[i], pool);
    current.swap(next);
    src = current.data();
  }
  if (x.dtype != PHX_DTYPE_F32) from_f32(out.dtype, src, out.data, element_count(out));
}

}  // namespace phx::kernels::ops
