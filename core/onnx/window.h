// The windows of convolutions and pools: per-dimension attributes and the padding that
// auto_pad or pads give.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <vector>

#include "importer.h"

namespace phx::onnx_import {

// The begin and end padding of each of the k spatial dimensions of x from the node's
// auto_pad or pads: SAME_UPPER and SAME_LOWER pad so that the output is
// ceil(input / stride), the odd pad at the end (UPPER) or at the beginning (LOWER).
void window_pads(Importer& im, const onnx::NodeProto& node, const phx_value_info& x, size_t k,
                 const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                 const std::vector<int64_t>& dilation, uint32_t* begin, uint32_t* end);

// The window of a transposed convolution over k spatial dimensions (k <= 3): strides,
// dilations and output_padding, and the padding taken off the output, from pads or from
// output_shape or auto_pad (an output_shape longer than the windows reach adds output
// padding).
struct TransposedWindow {
  std::vector<int64_t> stride, dilation, output_padding;
  uint32_t begin[3] = {}, end[3] = {};
};
TransposedWindow transposed_window(Importer& im, const onnx::NodeProto& node,
                                   const phx_value_info& x, size_t k,
                                   const std::vector<int64_t>& kernel);

// The attribute name, or k entries of fallback when the node lacks it.
std::vector<int64_t> per_dim(const onnx::NodeProto& node, const char* name, size_t k,
                             int64_t fallback);

}  // namespace phx::onnx_import
