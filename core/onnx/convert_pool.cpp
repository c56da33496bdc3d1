// Pooling (MaxPool, AveragePool over 1 to 3 spatial dimensions) and ConvTranspose (2-D;
// 1-D as 2-D with a height of 1; 3-D in convert_conv3d.cpp).
#include <cstdint>
#include <limits>

#include "attributes.h"
#include "converters.h"
#include "window.h"

namespace phx::onnx_import {
namespace {

// MaxPool's Indices: the flat index in x of each output's largest element, first in scan
// order on ties. No op gives it, but the windows are known at import: each output's taps
// are gathered from its plane by a table of plane indices, their argmax picks a tap, and
// a second table turns (output, tap) into the index ONNX reports (in storage_order). A
// tap in the padding points at its window's first tap in x, so that it never wins over
// x's elements nor ties with one before it: x needs no padding value.
phx_value max_pool_indices(Importer& im, const onnx::NodeProto& node, phx_value x,
                           const phx_value_info& xi, const phx_pool_params& params,
                           const phx_value_info& yi) {
  for (uint32_t d = 0; d < xi.rank; ++d)
    if (xi.shape[d] == PHX_DIM_DYNAMIC) im.needs_sizes(node, "Indices over a dynamic dimension");
  const size_t k = xi.rank - 2;
  const bool storage_order = attr_int(node, "storage_order", 0) != 0;  // column-major
  int64_t plane = 1, outputs = 1, taps = 1;
  for (size_t d = 0; d < k; ++d) {
    plane *= xi.shape[2 + d];
    outputs *= yi.shape[2 + d];
    taps *= params.kernel[d];
  }
  const int64_t planes = xi.shape[0] * xi.shape[1];
  if (planes * plane > std::numeric_limits<int32_t>::max() ||
      outputs * taps > std::numeric_limits<int32_t>::max())
    im.unsupported(node, "Indices beyond the i32 range");
  // Per output (row-major), per tap of its window (row-major, ONNX's scan order).
  std::vector<int64_t> gathered, reported, at(k);
  gathered.reserve(static_cast<size_t>(outputs * taps));
  reported.reserve(static_cast<size_t>(outputs * taps));
  for (int64_t o = 0; o < outputs; ++o) {
    const size_t window = gathered.size();
    size_t first_in_x = SIZE_MAX;
    for (int64_t t = 0; t < taps; ++t) {
      bool in_x = true;
      for (int64_t d = static_cast<int64_t>(k) - 1, o_rest = o, t_rest = t; d >= 0; --d) {
        at[d] = (o_rest % yi.shape[2 + d]) * params.stride[d] - params.pad_begin[d] +
                (t_rest % params.kernel[d]) * params.dilation[d];
        o_rest /= yi.shape[2 + d];
        t_rest /= params.kernel[d];
        in_x = in_x && at[d] >= 0 && at[d] < xi.shape[2 + d];
      }
      int64_t row = 0, column = 0;
      for (size_t d = 0; d < k; ++d) row = row * xi.shape[2 + d] + at[d];
      for (size_t d = k; d-- > 0;) column = column * xi.shape[2 + d] + at[d];
      if (in_x && first_in_x == SIZE_MAX) first_in_x = gathered.size();
      gathered.push_back(in_x ? row : -1);
      reported.push_back(storage_order ? column : row);
    }
    if (first_in_x == SIZE_MAX) im.unsupported(node, "the Indices of a window over padding only");
    for (size_t i = window; i < gathered.size(); ++i)
      if (gathered[i] < 0) {
        gathered[i] = gathered[first_in_x];
        reported[i] = reported[first_in_x];
      }
  }
  const phx_value flat = reshape_to(im, node, x, {planes, plane}, "planes");
  phx_axis_params axis = PHX_AXIS_PARAMS_INIT;
  axis.axis = 1;
  const phx_value windows =
      im.add_node(node, PHX_OP_GATHER, &axis,
                  {flat, index_constant(im, node, {outputs, taps}, std::move(gathered), "taps")}, 1,
                  {}, "windows")[0];
  phx_argmax_params argmax = PHX_ARGMAX_PARAMS_INIT;
  argmax.axis = 2;
  argmax.keep_dims = 0;
  const phx_value tap = im.add_node(node, PHX_OP_ARGMAX, &argmax, {windows}, 1, {}, "tap")[0];
  std::vector<int64_t> window_starts(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) window_starts[o] = o * taps;
  const phx_value flat_tap = im.add_node(
      node, PHX_OP_ADD, nullptr,
      {tap, index_constant(im, node, {outputs}, std::move(window_starts), "windows' starts")}, 1,
      {}, "tap of all")[0];
  axis.axis = 0;
  const phx_value in_plane = im.add_node(
      node, PHX_OP_GATHER, &axis,
      {index_constant(im, node, {outputs * taps}, std::move(reported), "reported"), flat_tap}, 1,
      {}, "index in plane")[0];
  std::vector<int64_t> plane_starts(static_cast<size_t>(planes));
  for (int64_t p = 0; p < planes; ++p) plane_starts[p] = p * plane;
  const phx_value index = im.add_node(
      node, PHX_OP_ADD, nullptr,
      {in_plane, index_constant(im, node, {planes, 1}, std::move(plane_starts), "planes' starts")},
      1, {}, "index")[0];
  return reshape_to(im, node, index, std::vector<int64_t>(yi.shape, yi.shape + yi.rank), "Indices");
}

void pool(Importer& im, const onnx::NodeProto& node, phx_op_id op) {
  const phx_value x = im.graph_input(node, 0);
  const phx_value_info xi = im.info(x);
  if (xi.rank < 3 || xi.rank > 5) im.unsupported(node, "pooling over other than 1 to 3 dimensions");
  const size_t k = xi.rank - 2;
  const std::vector<int64_t> kernel = attr_ints(node, "kernel_shape");
  const std::vector<int64_t> stride = per_dim(node, "strides", k, 1);
  const std::vector<int64_t> dilation = per_dim(node, "dilations", k, 1);
  if (kernel.size() != k || stride.size() != k || dilation.size() != k)
    im.invalid(node, "kernel_shape, strides and dilations need one entry per spatial dimension");
  phx_pool_params params = PHX_POOL_PARAMS_INIT;
  for (size_t d = 0; d < k; ++d) {
    params.kernel[d] = static_cast<uint32_t>(kernel[d]);
    params.stride[d] = static_cast<uint32_t>(stride[d]);
    params.dilation[d] = static_cast<uint32_t>(dilation[d]);
  }
  window_pads(im, node, xi, k, kernel, stride, dilation, params.pad_begin, params.pad_end);
  params.ceil_mode = attr_int(node, "ceil_mode", 0) != 0;
  params.count_include_pad = attr_int(node, "count_include_pad", 0) != 0;
  const phx_value y = im.add_node(node, op, &params, {x})[0];
  im.define(node, 0, y, im.input(node, 0).elem_type);
  if (node.output_size() > 1 && !node.output(1).empty())
    im.define(node, 1, max_pool_indices(im, node, x, xi, params, im.info(y)),
              onnx::TensorProto::INT64);
}

}  // namespace

void convert_max_pool(Importer& im, const onnx::NodeProto& node) {
  pool(im, node, PHX_OP_MAX_POOL);
}

void convert_average_pool(Importer& im, const onnx::NodeProto& node) {
  pool(im, node, PHX_OP_AVG_POOL);
}

void convert_conv_transpose(Importer& im, const onnx::NodeProto& node) {
  phx_value x = im.graph_input(node, 0), w = im.graph_input(node, 1);
  phx_value_info xi = im.info(x);
  if (xi.rank < 3 || xi.rank > 5)
    im.unsupported(node, "a transposed convolution over other than 1 to 3 dimensions");
  const size_t k = xi.rank - 2;
  const phx_value_info wi = im.info(w);
  if (wi.rank != xi.rank) im.invalid(node, "the weight's rank differs from the input's");
  const std::vector<int64_t> kernel(wi.shape + 2, wi.shape + wi.rank);
  const TransposedWindow window = transposed_window(im, node, xi, k, kernel);
  if (k == 3) return convert_conv_transpose3d(im, node, window);
  const bool one_d = k == 1;
  phx_conv_transpose2d_params params = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  params.groups = static_cast<uint32_t>(attr_int(node, "group", 1));
  // 1-D runs as 2-D over [N, C, 1, L]: the height dimension is the identity.
  const size_t o = one_d ? 1 : 0;
  for (size_t d = 0; d < k; ++d) {
    params.stride[o + d] = static_cast<uint32_t>(window.stride[d]);
    params.dilation[o + d] = static_cast<uint32_t>(window.dilation[d]);
    params.output_padding[o + d] = static_cast<uint32_t>(window.output_padding[d]);
    params.padding[2 * (o + d)] = window.begin[d];
    params.padding[2 * (o + d) + 1] = window.end[d];
  }
  if (one_d) {
    x = reshape_to(im, node, x, {0, 0, 1, -1}, "as 2-D");
    w = reshape_to(im, node, w, {0, 0, 1, -1}, "weight as 2-D");
  }
  std::vector<phx_value> inputs = {x, w};
  if (im.has_input(node, 2)) inputs.push_back(im.graph_input(node, 2));
  phx_value y = im.add_node(node, PHX_OP_CONV_TRANSPOSE2D, &params, inputs, 1, {},
                            one_d ? "2-D" : nullptr)[0];
  if (one_d) {
    y = reshape_to(im, node, y, {0, 0, -1}, nullptr);
  }
  im.define(node, 0, y, im.input(node, 0).elem_type);
}

}  // namespace phx::onnx_import
