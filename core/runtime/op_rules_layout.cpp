#include "op_rules_layout.h"

#include <phx/abi_structs.h>
#include <phx/op_geometry.h>

#include <cmath>

namespace phx {
namespace {

// No tensor holds more elements (phx_tensor_create refuses byte sizes past 2^62); the
// bound keeps every product of dimensions below from overflowing.
constexpr int64_t kMaxElements = int64_t{1} << 62;

std::string str(int64_t v) { return std::to_string(v); }

// An output shape the ops below computed, refused when no tensor could hold it.
Shape bounded(phx_op_id op, Shape shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d > kMaxElements / count) broken(op, "the output " + text(shape) + " is too large");
    count *= d;
  }
  return shape;
}

// axis in [-rank, rank) as an index, or the rule broken.
uint32_t axis_index(phx_op_id op, int32_t axis, const Operand& x) {
  const int32_t rank = static_cast<int32_t>(x.rank);
  if (axis < -rank || axis >= rank)
    broken(op, "axis " + std::to_string(axis) + " is out of range for " + text(x));
  return static_cast<uint32_t>(axis < 0 ? axis + rank : axis);
}

Shape check_reshape(const phx_reshape_params& p, const Operand& x) {
  const phx_op_id op = PHX_OP_RESHAPE;
  Shape y(p.shape, p.shape + p.rank);
  int inferred = -1;
  int64_t known = 1;
  const int64_t count = static_cast<int64_t>(element_count(x));
  for (uint32_t i = 0; i < p.rank; ++i) {
    if (y[i] == 0) {
      if (i >= x.rank)
        broken(op, "shape[" + std::to_string(i) + "] is 0 (copy x's dimension) but x " + text(x) +
                       " has no dimension " + std::to_string(i));
      y[i] = x.shape[i];
    }
    if (y[i] == -1) {
      inferred = static_cast<int>(i);
      continue;
    }
    // Every dimension is >= 1, so a product past x's count can only grow: a mismatch.
    if (y[i] > count / known)
      broken(op, "the shape " + text(Shape(p.shape, p.shape + p.rank)) + " holds more than x's " +
                     str(count) + " elements (" + text(x) + ")");
    known *= y[i];
  }
  if (inferred >= 0) {
    if (count % known != 0)
      broken(op, "cannot infer the -1 of " + text(Shape(p.shape, p.shape + p.rank)) + ": " +
                     str(count) + " elements (" + text(x) + ") are not a multiple of " +
                     str(known));
    y[inferred] = count / known;
  } else if (known != count) {
    broken(op, "the shape " + text(Shape(p.shape, p.shape + p.rank)) + " holds " + str(known) +
                   " elements, x " + text(x) + " " + str(count) + ": the counts must match");
  }
  return y;
}

Shape check_concat(const phx_axis_params& p, const Operand* const* in, size_t in_count) {
  const phx_op_id op = PHX_OP_CONCAT;
  const Operand& first = *in[0];
  if (first.rank < 1) broken(op, "the inputs need rank >= 1, got " + text(first));
  const uint32_t axis = axis_index(op, p.axis, first);
  Shape y = shape_of(first);
  for (size_t i = 1; i < in_count && in[i] != nullptr; ++i) {
    const Operand& t = *in[i];
    bool same = t.rank == first.rank;
    for (uint32_t d = 0; same && d < first.rank; ++d)
      same = d == axis || t.shape[d] == first.shape[d];
    if (!same)
      broken(op, "input " + std::to_string(i) + " " + text(t) + " must match x0 " + text(first) +
                     " in every dimension but the axis " + std::to_string(axis));
    y[axis] += t.shape[axis];
  }
  return bounded(op, y);
}

Shape check_slice(const phx_slice_params& p, const Operand& x) {
  Shape y = shape_of(x);
  for (uint32_t d = 0; d < x.rank; ++d) {
    if (p.steps[d] == 0) continue;  // the whole dimension
    const SliceRange r = slice_range(x.shape[d], p.starts[d], p.ends[d], p.steps[d]);
    if (r.count == 0)
      broken(PHX_OP_SLICE, "dimension " + std::to_string(d) + " of x " + text(x) +
                               " would be empty: start " + str(p.starts[d]) + ", end " +
                               str(p.ends[d]) + ", step " + str(p.steps[d]));
    y[d] = r.count;
  }
  return y;
}

Shape check_gather(const phx_axis_params& p, const Operand& data, const Operand& indices) {
  const phx_op_id op = PHX_OP_GATHER;
  if (data.rank < 1) broken(op, "data needs rank >= 1, got " + text(data));
  const uint32_t axis = axis_index(op, p.axis, data);
  if (data.rank - 1 + indices.rank > PHX_MAX_RANK)
    broken(op, "the output of data " + text(data) + " and indices " + text(indices) +
                   " would have rank " + std::to_string(data.rank - 1 + indices.rank) +
                   ", past PHX_MAX_RANK");
  Shape y(data.shape, data.shape + axis);
  y.insert(y.end(), indices.shape, indices.shape + indices.rank);
  y.insert(y.end(), data.shape + axis + 1, data.shape + data.rank);
  return y;
}

Shape check_expand(const phx_reshape_params& p, const Operand& x) {
  const Shape target(p.shape, p.shape + p.rank);
  Shape y;
  if (!broadcast(shape_of(x), target, y))
    broken(PHX_OP_EXPAND,
           "x " + text(x) + " and the target shape " + text(target) + " do not broadcast");
  return bounded(PHX_OP_EXPAND, y);
}

Shape check_tile(const phx_tile_params& p, const Operand& x) {
  Shape y = shape_of(x);
  for (uint32_t d = 0; d < x.rank; ++d) {
    if (p.repeats[d] < 1)
      broken(PHX_OP_TILE, "repeats[" + std::to_string(d) + "] must be >= 1 for x " + text(x));
    if (y[d] > kMaxElements / p.repeats[d]) broken(PHX_OP_TILE, "the output is too large");
    y[d] *= p.repeats[d];
  }
  return bounded(PHX_OP_TILE, y);
}

Shape check_pad(const phx_pad_params& p, const Operand& x) {
  const phx_op_id op = PHX_OP_PAD;
  Shape y = shape_of(x);
  for (uint32_t d = 0; d < x.rank; ++d) {
    if (enum_value(p.mode) == PHX_PAD_REFLECT &&
        (p.begin[d] >= x.shape[d] || p.end[d] >= x.shape[d]))
      broken(op, "a reflection pads dimension " + std::to_string(d) + " of x " + text(x) +
                     " by less than its size, got " + std::to_string(p.begin[d]) + " and " +
                     std::to_string(p.end[d]));
    y[d] += int64_t{p.begin[d]} + p.end[d];
  }
  return bounded(op, y);
}

Shape check_pool(phx_op_id op, const phx_pool_params& p, const Operand& x) {
  if (x.rank < 3 || x.rank > 5) broken(op, "x needs rank 3 to 5 [N, C, D1..Dk], got " + text(x));
  Shape y = shape_of(x);
  for (uint32_t i = 0; i + 2 < x.rank; ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    if (p.kernel[i] < 1) broken(op, "kernel" + at + " must be >= 1 (the kernel is required)");
    if (p.kernel[i] > (1u << 30) || p.stride[i] > (1u << 30) || p.dilation[i] > (1u << 30))
      broken(op, "kernel, stride or dilation" + at + " is absurd");
    const int64_t stride = std::max<uint32_t>(p.stride[i], 1);
    const int64_t extent = int64_t{std::max<uint32_t>(p.dilation[i], 1)} * (p.kernel[i] - 1) + 1;
    y[i + 2] = pool_output_size(x.shape[i + 2], p.pad_begin[i], p.pad_end[i], extent, stride,
                                p.ceil_mode != 0);
    if (y[i + 2] < 1)
      broken(op, "the output would be empty: dimension " + std::to_string(i + 2) + " of x " +
                     text(x) + " is shorter than the window's extent " + str(extent));
  }
  return bounded(op, y);
}

Shape check_conv_transpose2d(const phx_conv_transpose2d_params& p, const Operand& x,
                             const Operand& w, const Operand* bias) {
  const phx_op_id op = PHX_OP_CONV_TRANSPOSE2D;
  if (x.rank != 4 || w.rank != 4)
    broken(op, "x and weight need rank 4, got " + text(x) + " and " + text(w));
  const int64_t c_in = x.shape[1];
  if (w.shape[0] != c_in)
    broken(op, "weight " + text(w) + " must be [C_in, C_out / groups, KH, KW] with C_in " +
                   str(c_in) + " (x " + text(x) + ")");
  if (p.groups < 1 || c_in % p.groups != 0)
    broken(op,
           "groups " + std::to_string(p.groups) + " must divide the input channels " + str(c_in));
  const int64_t c_out = w.shape[1] * p.groups;
  Shape y{x.shape[0], c_out, 0, 0};
  for (int i = 0; i < 2; ++i) {
    if (p.stride[i] < 1 || p.dilation[i] < 1) broken(op, "stride and dilation must be >= 1");
    if (p.padding[2 * i] > (1u << 30) || p.padding[2 * i + 1] > (1u << 30) ||
        p.stride[i] > (1u << 30) || p.dilation[i] > (1u << 30) || p.output_padding[i] > (1u << 30))
      broken(op, "padding, output_padding, stride or dilation is absurd");
    const int64_t in = x.shape[2 + i], k = w.shape[2 + i];
    y[2 + i] = (in - 1) * p.stride[i] - p.padding[2 * i] - p.padding[2 * i + 1] +
               int64_t{p.dilation[i]} * (k - 1) + p.output_padding[i] + 1;
    if (y[2 + i] < 1)
      broken(op, "the output would be empty: the padding takes more than the " +
                     str(y[2 + i] + p.padding[2 * i] + p.padding[2 * i + 1]) +
                     " rows or columns of x " + text(x) + " and weight " + text(w));
  }
  if (bias != nullptr && shape_of(*bias) != Shape{c_out})
    broken(op, "bias must be [" + str(c_out) + "] (the output channels), got " + text(*bias));
  return bounded(op, y);
}

Shape check_resize(const phx_resize_params& p, const Operand& x) {
  const phx_op_id op = PHX_OP_RESIZE;
  if (x.rank < 1)
    broken(op, "x needs rank 1 to " + std::to_string(PHX_MAX_RANK) + ", got a scalar");
  if (p.rank != x.rank)
    broken(op, "params.rank " + std::to_string(p.rank) + " must be x's rank (x " + text(x) + ")");
  return bounded(op, Shape(p.shape, p.shape + p.rank));
}

// Resize's output dimensions and scales, whatever x is (its enums: normalize_params).
void check_resize_params(const phx_resize_params& p) {
  const phx_op_id op = PHX_OP_RESIZE;
  if (p.rank < 1 || p.rank > PHX_MAX_RANK)
    broken(op, "rank " + std::to_string(p.rank) + " must be 1 to PHX_MAX_RANK");
  for (uint32_t d = 0; d < p.rank; ++d) {
    const std::string at = "[" + std::to_string(d) + "]";
    if (p.shape[d] < 1) broken(op, "shape" + at + " is " + str(p.shape[d]) + "; it must be >= 1");
    // A scale of 0 stands for output / input; a negative, infinite or NaN one maps no
    // output index into x.
    if (!(p.scales[d] >= 0.0f) || !std::isfinite(p.scales[d]))
      broken(op, "scales" + at + " is " + std::to_string(p.scales[d]) +
                     "; it must be > 0, or 0 for output / input");
  }
}

}  // namespace

void check_no_gaps(const OpSchema& schema, const OpVariant& v) {
  for (size_t i = 1; i + 1 < v.input_count; ++i)
    if (v.inputs[i] == PHX_DTYPE_INVALID)
      broken(v.op, std::string("input ") + std::to_string(i) + " (" + schema.inputs[i] +
                       ") is null but a later input is not: the inputs take no gap");
}

void check_layout_params(phx_op_id op, ParamsKind kind, const void* params) {
  switch (kind) {
    case ParamsKind::reshape: {
      auto& p = *static_cast<const phx_reshape_params*>(params);
      if (p.rank > PHX_MAX_RANK)
        broken(op, "rank " + std::to_string(p.rank) + " is past PHX_MAX_RANK");
      int inferred = 0;
      for (uint32_t i = 0; i < p.rank; ++i) {
        const int64_t d = p.shape[i];
        if (op == PHX_OP_EXPAND ? d < 1 : d < -1)
          broken(op, "shape[" + std::to_string(i) + "] is " + str(d) +
                         "; it must be >= " + (op == PHX_OP_EXPAND ? "1" : "-1"));
        if (d == -1 && ++inferred > 1) broken(op, "the shape has more than one -1");
      }
      break;
    }
    case ParamsKind::resize:
      check_resize_params(*static_cast<const phx_resize_params*>(params));
      break;
    default:
      break;
  }
}

Shape check_layout_shapes(phx_op_id op, const void* params, const Operand* const* in,
                          size_t in_count) {
  const Operand& x = *in[0];
  switch (find_op_schema(op)->shape_rule) {
    case ShapeRule::reshape:
      return check_reshape(*static_cast<const phx_reshape_params*>(params), x);
    case ShapeRule::concat:
      return check_concat(*static_cast<const phx_axis_params*>(params), in, in_count);
    case ShapeRule::slice:
      return check_slice(*static_cast<const phx_slice_params*>(params), x);
    case ShapeRule::gather:
      return check_gather(*static_cast<const phx_axis_params*>(params), x, *in[1]);
    case ShapeRule::expand:
      return check_expand(*static_cast<const phx_reshape_params*>(params), x);
    case ShapeRule::tile:
      return check_tile(*static_cast<const phx_tile_params*>(params), x);
    case ShapeRule::pad:
      return check_pad(*static_cast<const phx_pad_params*>(params), x);
    case ShapeRule::pool:
      return check_pool(op, *static_cast<const phx_pool_params*>(params), x);
    case ShapeRule::conv_transpose2d:
      return check_conv_transpose2d(*static_cast<const phx_conv_transpose2d_params*>(params), x,
                                    *in[1], in_count > 2 ? in[2] : nullptr);
    case ShapeRule::resize:
      return check_resize(*static_cast<const phx_resize_params*>(params), x);
    default:
      broken(op, "has no layout rule");
  }
}

}  // namespace phx
