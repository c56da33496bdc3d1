// Index arithmetic that the shape rules (core/runtime/op_rules.cpp) and the kernels share,
// so that a kernel walks exactly the elements the rules sized its output for: slice's
// ranges and pooling's output sizes; and resize's taps, which the host kernel and the
// Vulkan plugin both take from here, so that they read and weigh the same elements.
#pragma once

#include <phynexus/phynexus.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace phx {

// One dimension of a slice: the elements start, start + step, ... (count of them).
struct SliceRange {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// The elements of a dimension of size dim (>= 1) that slice takes for start, end and a
// non-zero step, as ONNX's Slice: negative start and end count from the end, then are
// clamped to [0, dim] (step > 0) or [-1, dim - 1] (step < 0). count may be 0.
inline SliceRange slice_range(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto clamp = [&](int64_t v) {
    if (v < 0) v += dim;
    return step > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1);
  };
  const int64_t first = clamp(start), last = clamp(end);
  // Any step longer than the range takes one element; bounding it keeps -step and the
  // sums below from overflowing (INT64_MIN).
  const int64_t span = step > 0 ? last - first : first - last;
  const int64_t stride = step > dim || step < -dim ? dim + 1 : (step > 0 ? step : -step);
  SliceRange range;
  range.start = first;
  range.step = step > 0 ? stride : -stride;
  range.count = span <= 0 ? 0 : (span + stride - 1) / stride;
  return range;
}

// The output size of pooling one spatial dimension of size in (ONNX's MaxPool and
// AveragePool): floor((in + pads - extent) / stride) + 1, or ceil with ceil_mode, where
// a last window that would start in the end padding is dropped. 0 when the padded input
// is shorter than the window. stride >= 1, extent = dilation (kernel - 1) + 1.
inline int64_t pool_output_size(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t extent,
                                int64_t stride, bool ceil_mode) {
  const int64_t room = in + pad_begin + pad_end - extent;
  if (room < 0) return 0;
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

// What one output index of a resized dimension reads: lo alone (nearest, or a weight of
// 0), or w_lo * x[lo] + w_hi * x[hi].
struct ResizeTap {
  int64_t lo = 0, hi = 0;
  float w_lo = 1.0f, w_hi = 0.0f;
};

// ONNX's coordinate transform: the coordinate of x that output index o maps to, for a
// dimension of in elements resized with scale (output / input).
inline double resize_source_coordinate(phx_resize_coordinates mode, int64_t o, int64_t in,
                                       double scale) {
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
inline double resize_round_nearest(phx_resize_nearest mode, double c) {
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

// The taps of every output index of dimension d (in elements of x, out of the output);
// out of x's extent reads its edge.
inline std::vector<ResizeTap> resize_taps(const phx_resize_params& p, int64_t in, int64_t out,
                                          uint32_t d) {
  const double scale = p.scales[d] > 0.0f ? static_cast<double>(p.scales[d])
                                          : static_cast<double>(out) / static_cast<double>(in);
  const double last = static_cast<double>(in - 1);
  std::vector<ResizeTap> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    const double c = resize_source_coordinate(p.coordinates, o, in, scale);
    ResizeTap& t = taps[static_cast<size_t>(o)];
    if (p.mode == PHX_RESIZE_NEAREST) {
      t.lo = t.hi = static_cast<int64_t>(std::clamp(resize_round_nearest(p.nearest, c), 0.0, last));
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

// One pass of a resize: the dimension it resizes and the taps of its output indices.
struct ResizePass {
  uint32_t dim = 0;
  std::vector<ResizeTap> taps;
};

// The passes resize makes over x (rank dimensions of in_shape) into out_shape, one per
// dimension in order, leaving out the dimensions whose taps map every index onto itself:
// a pass over them would copy. No pass at all: the output is x.
inline std::vector<ResizePass> resize_passes(const phx_resize_params& p, uint32_t rank,
                                             const int64_t* in_shape, const int64_t* out_shape) {
  std::vector<ResizePass> passes;
  for (uint32_t d = 0; d < rank; ++d) {
    std::vector<ResizeTap> taps = resize_taps(p, in_shape[d], out_shape[d], d);
    bool identity = static_cast<int64_t>(taps.size()) == in_shape[d];
    for (size_t o = 0; identity && o < taps.size(); ++o)
      identity = taps[o].lo == static_cast<int64_t>(o) && taps[o].w_hi == 0.0f;
    if (!identity) passes.push_back({d, std::move(taps)});
  }
  return passes;
}

}  // namespace phx
