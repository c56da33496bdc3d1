// Index arithmetic that the shape rules (core/runtime/op_rules.cpp) and the host kernels
// share, so that a kernel walks exactly the elements the rules sized its output for:
// slice's ranges and pooling's output sizes.
#pragma once

#include <algorithm>
#include <cstdint>

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

}  // namespace phx
