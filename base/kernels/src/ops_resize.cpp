// resize: x resampled to another shape as ONNX's Resize, nearest or N-linear.
//
// Both modes are separable: ONNX's N-linear interpolation is a 1-D linear interpolation
// along each dimension in turn, and nearest picks an index per dimension. So the kernel
// resizes one dimension per pass, skipping the dimensions it maps onto themselves, each
// pass threaded over its output rows (the elements after the dimension, contiguous). The
// source coordinates are computed in double as ONNX's reference does, the weights rounded
// to f32; x is converted to f32 once and the result rounded once to its dtype.
#include <phx/op_geometry.h>

#include <cstring>
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

PHX_INLINE float tap_value(const ResizeTap& t, float lo, float hi) {
  // A weight of 0 leaves hi out entirely: 0 * inf would make a NaN that x does not hold.
  return t.w_hi == 0.0f ? lo : t.w_lo * lo + t.w_hi * hi;
}

// One pass: src [outer, in, inner] resized along its middle dimension into
// dst [outer, taps.size(), inner].
void resize_dimension(const float* src, float* dst, int64_t outer, int64_t in, int64_t inner,
                      const std::vector<ResizeTap>& taps, ThreadPool& pool) {
  const int64_t out = static_cast<int64_t>(taps.size());
  parallel_for(pool, outer * out, inner, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const ResizeTap& t = taps[static_cast<size_t>(row % out)];
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
  const std::vector<ResizePass> passes = resize_passes(params, x.rank, x.shape, out.shape);
  if (passes.empty()) {  // every dimension maps onto itself: the output is x
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
  for (size_t i = 0; i < passes.size(); ++i) {
    const uint32_t d = passes[i].dim;
    const int64_t outer = product(shape, 0, d), inner = product(shape, d + 1, x.rank);
    const int64_t in = shape[d];
    shape[d] = out.shape[d];
    const bool last = i + 1 == passes.size();
    float* dst = static_cast<float*>(out.data);
    if (!last || x.dtype != PHX_DTYPE_F32) {
      next.resize(static_cast<size_t>(outer * shape[d] * inner));
      dst = next.data();
    }
    resize_dimension(src, dst, outer, in, inner, passes[i].taps, pool);
    current.swap(next);
    src = current.data();
  }
  if (x.dtype != PHX_DTYPE_F32) from_f32(out.dtype, src, out.data, element_count(out));
}

}  // namespace phx::kernels::ops
