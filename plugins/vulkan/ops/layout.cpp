// The layout ops: reshape, slice, expand and concat as strided copies
// (shaders/layout_copy.comp), pad and tile (shaders/layout_pad.comp), gather
// (shaders/gather.comp). Values are moved, never converted, so each has one module per
// element size. Tensors larger than one binding are UNSUPPORTED.
#include <phx/kernels/convert.h>
#include <phx/op_geometry.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {
namespace {

struct CopyPush {
  uint32_t base, count, rank;
  int32_t src_base;
  uint32_t dst_base;
  uint32_t extent[8];
  int32_t src_stride[8];
  uint32_t dst_stride[8];
};

struct PadPush {
  uint32_t base, count, rank, mode, fill;
  uint32_t out_extent[8];
  uint32_t in_extent[8];
  int32_t begin[8];
};

// layout_pad.comp's modes past phx_pad_mode's: tile wraps around.
constexpr uint32_t kWrap = 3;
static_assert(PHX_PAD_CONSTANT == 0 && PHX_PAD_REFLECT == 1 && PHX_PAD_EDGE == 2);

// The row-major strides of t's elements. The shaders index in 32 bits.
void row_major_strides(const phx_plugin_tensor& t, int64_t* stride) {
  if (element_count(t) > INT32_MAX) fail_unsupported("a layout op of more than 2^31 elements");
  int64_t s = 1;
  for (uint32_t d = t.rank; d-- > 0;) {
    stride[d] = s;
    s *= t.shape[d];
  }
}

// The same box with each dimension that is contiguous with the next in both x and y
// merged into it (DenseNet's concatenations of 32 channels of 14 x 14: one run of 6272).
CopyPush merge_contiguous_dims(const CopyPush& push) {
  CopyPush merged = push;
  merged.rank = 0;
  for (uint32_t d = 0; d < push.rank; ++d) {
    const uint32_t last = merged.rank - 1;
    if (merged.rank > 0 &&
        merged.src_stride[last] == push.src_stride[d] * static_cast<int32_t>(push.extent[d]) &&
        merged.dst_stride[last] == push.dst_stride[d] * push.extent[d]) {
      merged.extent[last] *= push.extent[d];
      merged.src_stride[last] = push.src_stride[d];
      merged.dst_stride[last] = push.dst_stride[d];
      continue;
    }
    merged.extent[merged.rank] = push.extent[d];
    merged.src_stride[merged.rank] = push.src_stride[d];
    merged.dst_stride[merged.rank] = push.dst_stride[d];
    ++merged.rank;
  }
  return merged;
}

// Copies the box push.extent of x, read at src_base with src_stride, into the binding yb
// at dst_base with dst_stride. Where the device moves eights (moves_eights) and they lie
// at multiples of 8 in both x and y, 8 at a time (shaders/layout_copy.comp, VEC8): the
// innermost dimension contiguous in both, its extent, the bases and the outer strides
// multiples of 8.
void record_copy(OpRecorder& recorder, const phx_plugin_tensor& x, const CopyPush& box,
                 Binding yb) {
  constexpr uint64_t kWorkgroup = 256;
  const CopyPush push = merge_contiguous_dims(box);
  uint64_t total = 1;
  for (uint32_t d = 0; d < push.rank; ++d) total *= push.extent[d];
  const DeviceCaps& caps = recorder.caps();
  const uint32_t inner = push.rank - 1;
  bool eight = moves_eights(caps, x.dtype) && push.rank > 0 && push.src_stride[inner] == 1 &&
               push.dst_stride[inner] == 1 && push.extent[inner] % 8 == 0 &&
               push.src_base % 8 == 0 && push.dst_base % 8 == 0 &&
               total <= max_grid_groups(caps) * kWorkgroup;
  for (uint32_t d = 0; eight && d < inner; ++d) {
    eight = push.src_stride[d] % 8 == 0 && push.dst_stride[d] % 8 == 0;
  }
  const std::string kernel = moving_kernel("layout_copy", x.dtype);
  if (!eight) {
    dispatch_per_element(recorder, kernel, {recorder.bind(x), yb}, push, total);
    return;
  }
  CopyPush whole = push;
  whole.base = 0;
  whole.count = static_cast<uint32_t>(total);
  dispatch_grid(recorder, kernel, {recorder.bind(x), yb}, &whole, sizeof whole,
                (total / 8 + kWorkgroup - 1) / kWorkgroup, {{0, 1}});
}

// The constant's bits in x's dtype, converted as cast converts: floats rounded to nearest
// even, integers rounded to nearest even and saturated, NaN to 0.
uint32_t fill_bits(float value, phx_dtype dtype) {
  auto saturated = [&](double lo, double hi) {
    if (std::isnan(value)) return 0u;
    const double v = std::clamp(static_cast<double>(std::nearbyint(value)), lo, hi);
    return static_cast<uint32_t>(static_cast<int64_t>(v));
  };
  switch (dtype) {
    case PHX_DTYPE_F32: {
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return bits;
    }
    case PHX_DTYPE_F16:
      return kernels::f32_to_f16(value);
    case PHX_DTYPE_BF16:
      return kernels::f32_to_bf16(value);
    case PHX_DTYPE_I8:
      return saturated(-128, 127) & 0xFFu;
    case PHX_DTYPE_I16:
      return saturated(-32768, 32767) & 0xFFFFu;
    case PHX_DTYPE_U8:
      return saturated(0, 255);
    default:
      return saturated(INT32_MIN, INT32_MAX);
  }
}

void record_pad_like(OpRecorder& recorder, const phx_plugin_tensor& x, const phx_plugin_tensor& y,
                     uint32_t mode, uint32_t fill, const uint32_t* begin) {
  if (element_count(y) > INT32_MAX) fail_unsupported("a layout op of more than 2^31 elements");
  PadPush push = {};
  push.rank = y.rank;
  push.mode = mode;
  push.fill = fill;
  for (uint32_t d = 0; d < y.rank; ++d) {
    push.out_extent[d] = static_cast<uint32_t>(y.shape[d]);
    push.in_extent[d] = static_cast<uint32_t>(x.shape[d]);
    push.begin[d] = begin == nullptr ? 0 : static_cast<int32_t>(begin[d]);
  }
  dispatch_per_element(recorder, moving_kernel("layout_pad", x.dtype),
                       {recorder.bind(x), recorder.bind(y)}, push, element_count(y));
}

}  // namespace

void record_gather_view(OpRecorder& recorder, const phx_plugin_tensor& x,
                        const phx_plugin_tensor& y, int64_t src_base, const int64_t* src_stride) {
  int64_t y_stride[8] = {};
  row_major_strides(y, y_stride);
  CopyPush push = {};
  push.rank = y.rank;
  push.src_base = static_cast<int32_t>(src_base);
  for (uint32_t d = 0; d < y.rank; ++d) {
    push.extent[d] = static_cast<uint32_t>(y.shape[d]);
    push.src_stride[d] = static_cast<int32_t>(src_stride[d]);
    push.dst_stride[d] = static_cast<uint32_t>(y_stride[d]);
  }
  record_copy(recorder, x, push, recorder.bind(y));
}

void record_reshape(OpRecorder& recorder, const phx_plugin_op& op) {
  // The same row-major elements: a flat copy.
  const phx_plugin_tensor& x = op.inputs[0];
  if (element_count(x) > INT32_MAX) fail_unsupported("a layout op of more than 2^31 elements");
  CopyPush push = {};
  push.rank = 1;
  push.extent[0] = static_cast<uint32_t>(element_count(x));
  push.src_stride[0] = 1;
  push.dst_stride[0] = 1;
  record_copy(recorder, x, push, recorder.bind(op.outputs[0]));
}

void record_slice(OpRecorder& recorder, const phx_plugin_op& op) {
  const phx_plugin_tensor& x = op.inputs[0];
  const auto& params = *static_cast<const phx_slice_params*>(op.params);
  int64_t x_stride[8] = {}, src_stride[8] = {};
  row_major_strides(x, x_stride);
  int64_t src_base = 0;
  for (uint32_t d = 0; d < x.rank; ++d) {
    if (params.steps[d] == 0) {  // the whole dimension
      src_stride[d] = x_stride[d];
      continue;
    }
    const SliceRange r = slice_range(x.shape[d], params.starts[d], params.ends[d], params.steps[d]);
    src_base += r.start * x_stride[d];
    src_stride[d] = r.step * x_stride[d];
  }
  record_gather_view(recorder, x, op.outputs[0], src_base, src_stride);
}

void record_expand(OpRecorder& recorder, const phx_plugin_op& op) {
  // x's dimensions align with y's last ones; a dimension of 1 repeats (stride 0).
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& y = op.outputs[0];
  int64_t x_stride[8] = {}, src_stride[8] = {};
  row_major_strides(x, x_stride);
  const uint32_t lead = y.rank - x.rank;
  for (uint32_t d = 0; d < x.rank; ++d) src_stride[lead + d] = x.shape[d] == 1 ? 0 : x_stride[d];
  record_gather_view(recorder, x, y, 0, src_stride);
}

void record_concat(OpRecorder& recorder, const phx_plugin_op& op) {
  // Each input is the block of y from its offset along the axis: a copy per input, into
  // disjoint elements.
  const phx_plugin_tensor& y = op.outputs[0];
  const int32_t axis_param = static_cast<const phx_axis_params*>(op.params)->axis;
  const uint32_t axis = static_cast<uint32_t>(axis_param < 0 ? axis_param + y.rank : axis_param);
  int64_t y_stride[8] = {};
  row_major_strides(y, y_stride);
  const Binding yb = recorder.bind(y);
  int64_t offset = 0;
  // The inputs end at the first absent one.
  for (size_t i = 0; optional_input(op, i) != nullptr; ++i) {
    const phx_plugin_tensor& x = op.inputs[i];
    int64_t x_stride[8] = {};
    row_major_strides(x, x_stride);
    CopyPush push = {};
    push.rank = x.rank;
    push.dst_base = static_cast<uint32_t>(offset * y_stride[axis]);
    for (uint32_t d = 0; d < x.rank; ++d) {
      push.extent[d] = static_cast<uint32_t>(x.shape[d]);
      push.src_stride[d] = static_cast<int32_t>(x_stride[d]);
      push.dst_stride[d] = static_cast<uint32_t>(y_stride[d]);
    }
    record_copy(recorder, x, push, yb);
    offset += x.shape[axis];
  }
}

void record_pad(OpRecorder& recorder, const phx_plugin_op& op) {
  const phx_plugin_tensor& x = op.inputs[0];
  const auto& params = *static_cast<const phx_pad_params*>(op.params);
  record_pad_like(recorder, x, op.outputs[0], static_cast<uint32_t>(params.mode),
                  fill_bits(params.value, x.dtype), params.begin);
}

void record_zero_padded_rows(OpRecorder& recorder, const phx_plugin_tensor& x, uint32_t rows,
                             uint32_t cols, uint32_t padded_cols, Binding y) {
  PadPush push = {};
  push.rank = 2;
  push.mode = PHX_PAD_CONSTANT;
  push.out_extent[0] = push.in_extent[0] = rows;
  push.out_extent[1] = padded_cols;
  push.in_extent[1] = cols;
  dispatch_per_element(recorder, moving_kernel("layout_pad", x.dtype), {recorder.bind(x), y}, push,
                       static_cast<uint64_t>(rows) * padded_cols);
}

void record_tile(OpRecorder& recorder, const phx_plugin_op& op) {
  record_pad_like(recorder, op.inputs[0], op.outputs[0], kWrap, 0, nullptr);
}

void record_gather(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, inner, axis_size, index_count;
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& indices = op.inputs[1];
  const phx_plugin_tensor& y = op.outputs[0];
  const int32_t axis_param = static_cast<const phx_axis_params*>(op.params)->axis;
  const uint32_t axis = static_cast<uint32_t>(axis_param < 0 ? axis_param + x.rank : axis_param);
  if (element_count(x) > INT32_MAX || element_count(y) > INT32_MAX)
    fail_unsupported("a layout op of more than 2^31 elements");
  Push push = {};
  push.inner = 1;
  for (uint32_t d = axis + 1; d < x.rank; ++d) push.inner *= static_cast<uint32_t>(x.shape[d]);
  push.axis_size = static_cast<uint32_t>(x.shape[axis]);
  push.index_count = static_cast<uint32_t>(element_count(indices));
  dispatch_per_element(recorder, moving_kernel("gather", x.dtype),
                       {recorder.bind(x), recorder.bind(indices), recorder.bind(y)}, push,
                       element_count(y));
}

}  // namespace phx::vulkan::ops
