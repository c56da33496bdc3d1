// Pooling (MaxPool, AveragePool over 1 to 3 spatial dimensions) and ConvTranspose (2-D;
// 1-D as 2-D with a height of 1).
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
  const bool one_d = xi.rank == 3;
  if (xi.rank != 4 && !one_d)
    im.unsupported(node, "a transposed convolution that is not 1-D or 2-D");
  const size_t k = xi.rank - 2;
  const phx_value_info wi = im.info(w);
  std::vector<int64_t> kernel(wi.shape + 2, wi.shape + wi.rank);
  const std::vector<int64_t> stride = per_dim(node, "strides", k, 1);
  const std::vector<int64_t> dilation = per_dim(node, "dilations", k, 1);
  std::vector<int64_t> output_padding = per_dim(node, "output_padding", k, 0);
  const std::vector<int64_t> output_shape = attr_ints(node, "output_shape");
  if (!output_shape.empty() && output_shape.size() < k)
    im.invalid(node, "output_shape needs an entry per spatial dimension");
  if (stride.size() != k || dilation.size() != k || output_padding.size() != k)
    im.invalid(node, "strides, dilations and output_padding need one entry per spatial dimension");
  uint32_t begin[2] = {0, 0}, end[2] = {0, 0};
  const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    // The padding that gives output_shape (or input * stride for SAME).
    for (size_t d = 0; d < k; ++d) {
      const int64_t in = xi.shape[2 + d];
      if (in == PHX_DIM_DYNAMIC) im.unsupported(node, "an output shape over a dynamic dimension");
      const int64_t want =
          output_shape.empty() ? in * stride[d] : output_shape[output_shape.size() - k + d];
      const int64_t total =
          stride[d] * (in - 1) + output_padding[d] + (kernel[d] - 1) * dilation[d] + 1 - want;
      if (total < 0) {  // an output longer than the windows reach: output padding
        output_padding[d] -= total;
        continue;
      }
      const bool lower = auto_pad == "SAME_LOWER";
      begin[d] = static_cast<uint32_t>(lower ? total - total / 2 : total / 2);
      end[d] = static_cast<uint32_t>(total - begin[d]);
    }
  } else {
    window_pads(im, node, xi, k, kernel, stride, dilation, begin, end);
  }
  phx_conv_transpose2d_params params = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  params.groups = static_cast<uint32_t>(attr_int(node, "group", 1));
  // 1-D runs as 2-D over [N, C, 1, L]: the height dimension is the identity.
  const size_t o = one_d ? 1 : 0;
  for (size_t d = 0; d < k; ++d) {
    params.stride[o + d] = static_cast<uint32_t>(stride[d]);
    params.dilation[o + d] = static_cast<uint32_t>(dilation[d]);
    params.output_padding[o + d] = static_cast<uint32_t>(output_padding[d]);
    params.padding[2 * (o + d)] = begin[d];
    params.padding[2 * (o + d) + 1] = end[d];
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
