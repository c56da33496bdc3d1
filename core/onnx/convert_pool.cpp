// Pooling (MaxPool, AveragePool over 1 to 3 spatial dimensions) and ConvTranspose (2-D;
// 1-D as 2-D with a height of 1; 3-D in convert_conv3d.cpp).
#include "attributes.h"
#include "converters.h"
#include "window.h"

namespace phx::onnx_import {
namespace {

void pool(Importer& im, const onnx::NodeProto& node, phx_op_id op) {
  if (node.output_size() > 1 && !node.output(1).empty())
    im.unsupported(node, "the Indices output is not taken");
  if (attr_int(node, "storage_order", 0) != 0) im.unsupported(node, "storage_order 1");
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
  im.define(node, 0, im.add_node(node, op, &params, {x})[0], im.input(node, 0).elem_type);
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
