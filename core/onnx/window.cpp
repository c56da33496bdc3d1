#include "window.h"

#include <algorithm>

#include "attributes.h"

namespace phx::onnx_import {

void window_pads(Importer& im, const onnx::NodeProto& node, const phx_value_info& x, size_t k,
                 const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                 const std::vector<int64_t>& dilation, uint32_t* begin, uint32_t* end) {
  const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = attr_ints(node, "pads");
    if (pads.empty()) pads.assign(2 * k, 0);
    if (pads.size() != 2 * k) im.invalid(node, "pads needs two entries per spatial dimension");
    for (size_t d = 0; d < k; ++d) {
      if (pads[d] < 0 || pads[d + k] < 0) im.unsupported(node, "negative pads");
      begin[d] = static_cast<uint32_t>(pads[d]);
      end[d] = static_cast<uint32_t>(pads[d + k]);
    }
    return;
  }
  if (auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    im.invalid(node, "auto_pad '" + auto_pad + "' is no ONNX value");
  for (size_t d = 0; d < k; ++d) {
    begin[d] = end[d] = 0;
    if (auto_pad == "VALID") continue;
    const int64_t in = x.shape[2 + d];
    if (in == PHX_DIM_DYNAMIC) im.needs_sizes(node, "auto_pad SAME over a dynamic dimension");
    const int64_t out = (in + stride[d] - 1) / stride[d];
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1 - in);
    const auto small = static_cast<uint32_t>(total / 2),
               large = static_cast<uint32_t>(total - total / 2);
    begin[d] = auto_pad == "SAME_UPPER" ? small : large;
    end[d] = auto_pad == "SAME_UPPER" ? large : small;
  }
}

TransposedWindow transposed_window(Importer& im, const onnx::NodeProto& node,
                                   const phx_value_info& x, size_t k,
                                   const std::vector<int64_t>& kernel) {
  TransposedWindow w;
  w.stride = per_dim(node, "strides", k, 1);
  w.dilation = per_dim(node, "dilations", k, 1);
  w.output_padding = per_dim(node, "output_padding", k, 0);
  const std::vector<int64_t> output_shape = attr_ints(node, "output_shape");
  if (!output_shape.empty() && output_shape.size() < k)
    im.invalid(node, "output_shape needs an entry per spatial dimension");
  if (w.stride.size() != k || w.dilation.size() != k || w.output_padding.size() != k)
    im.invalid(node, "strides, dilations and output_padding need one entry per spatial dimension");
  const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  if (output_shape.empty() && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    window_pads(im, node, x, k, kernel, w.stride, w.dilation, w.begin, w.end);
    return w;
  }
  // The padding that gives output_shape (or input * stride for SAME).
  for (size_t d = 0; d < k; ++d) {
    const int64_t in = x.shape[2 + d];
    if (in == PHX_DIM_DYNAMIC) im.needs_sizes(node, "an output shape over a dynamic dimension");
    const int64_t want =
        output_shape.empty() ? in * w.stride[d] : output_shape[output_shape.size() - k + d];
    const int64_t total =
        w.stride[d] * (in - 1) + w.output_padding[d] + (kernel[d] - 1) * w.dilation[d] + 1 - want;
    if (total < 0) {  // an output longer than the windows reach: output padding
      w.output_padding[d] -= total;
      continue;
    }
    const bool lower = auto_pad == "SAME_LOWER";
    w.begin[d] = static_cast<uint32_t>(lower ? total - total / 2 : total / 2);
    w.end[d] = static_cast<uint32_t>(total - w.begin[d]);
  }
  return w;
}

std::vector<int64_t> per_dim(const onnx::NodeProto& node, const char* name, size_t k,
                             int64_t fallback) {
  std::vector<int64_t> v = attr_ints(node, name);
  if (v.empty()) v.assign(k, fallback);
  return v;
}

}  // namespace phx::onnx_import
