// Resize (opsets 10 to 17) and Upsample (opsets 7 to 9) onto the resize op, in their
// nearest and linear modes. The scales or sizes must be known at import: they give the
// output's shape, which the graph needs.
#include <cmath>
#include <limits>

#include "attributes.h"
#include "converters.h"
#include "known_ops.h"

namespace phx::onnx_import {
namespace {

phx_resize_mode mode_of(Importer& im, const onnx::NodeProto& node) {
  const std::string mode = attr_string(node, "mode", "nearest");
  if (mode == "nearest") return PHX_RESIZE_NEAREST;
  if (mode == "linear") return PHX_RESIZE_LINEAR;
  if (mode == "cubic") im.unsupported(node, "the mode 'cubic'");
  im.invalid(node, "unknown mode '" + mode + "'");
}

phx_resize_coordinates coordinates_of(Importer& im, const onnx::NodeProto& node) {
  const std::string mode = attr_string(node, "coordinate_transformation_mode", "half_pixel");
  if (mode == "half_pixel") return PHX_RESIZE_HALF_PIXEL;
  if (mode == "asymmetric") return PHX_RESIZE_ASYMMETRIC;
  if (mode == "align_corners") return PHX_RESIZE_ALIGN_CORNERS;
  if (mode == "pytorch_half_pixel") return PHX_RESIZE_PYTORCH_HALF_PIXEL;
  im.unsupported(node, "the coordinate_transformation_mode '" + mode + "'");
}

phx_resize_nearest nearest_of(Importer& im, const onnx::NodeProto& node) {
  const std::string mode = attr_string(node, "nearest_mode", "round_prefer_floor");
  if (mode == "round_prefer_floor") return PHX_RESIZE_ROUND_PREFER_FLOOR;
  if (mode == "round_prefer_ceil") return PHX_RESIZE_ROUND_PREFER_CEIL;
  if (mode == "floor") return PHX_RESIZE_FLOOR;
  if (mode == "ceil") return PHX_RESIZE_CEIL;
  im.invalid(node, "unknown nearest_mode '" + mode + "'");
}

// The scales of input i if it is given and not empty (opsets 11 and 12 give an empty
// one beside sizes); they must be known at import, positive and finite in f32.
std::vector<float> known_scales(Importer& im, const onnx::NodeProto& node, int i) {
  if (!im.has_input(node, i)) return {};
  const KnownValue* k = im.known_input(node, i);
  if (k == nullptr) im.unsupported(node, "scales computed at run time");
  std::vector<float> scales;
  for (size_t j = 0; j < k->size(); ++j) {
    const double s = k->real_at(j);
    if (!(s > 0.0 && s <= std::numeric_limits<float>::max()))
      im.invalid(node, "scales must be positive and finite");
    scales.push_back(static_cast<float>(s));
  }
  return scales;
}

// The output's shape and the scales the coordinate transform takes (0: output / input),
// from scales (floor(input * scale), as ONNX sizes the output) or from sizes.
void size_output(Importer& im, const onnx::NodeProto& node, const phx_value_info& xi,
                 const std::vector<float>& scales, const std::vector<int64_t>& sizes,
                 phx_resize_params& params) {
  if (scales.empty() == sizes.empty())
    im.invalid(node, "needs exactly one of scales and sizes given and not empty");
  if ((scales.empty() ? sizes.size() : scales.size()) != xi.rank)
    im.invalid(node, "scales or sizes need one entry per dimension of X");
  for (uint32_t d = 0; d < xi.rank; ++d) {
    if (scales.empty()) {
      params.shape[d] = sizes[d];
    } else {
      if (xi.shape[d] == PHX_DIM_DYNAMIC) im.needs_sizes(node, "scales over a dynamic dimension");
      if (!(scales[d] > 0.0f && scales[d] <= std::numeric_limits<float>::max()))
        im.invalid(node, "scales must be positive and finite");
      params.scales[d] = scales[d];
      // Saturated: a huge scale gives a dimension that the op's rules refuse as too large.
      params.shape[d] =
          saturated(std::floor(static_cast<double>(xi.shape[d]) * static_cast<double>(scales[d])));
    }
    if (params.shape[d] < 1) im.unsupported(node, "an empty output (a dimension below 1)");
  }
}

// Upsample and Resize-10: asymmetric coordinates; ONNX's nearest before opset 11 takes
// the index below the coordinate (the upsample tests' repeated elements), which is
// defined for upsampling only.
void resize_before_opset_11(Importer& im, const onnx::NodeProto& node,
                            const std::vector<float>& scales) {
  const phx_value x = im.graph_input(node, 0);
  const phx_value_info xi = im.info(x);
  phx_resize_params params{
      sizeof params, mode_of(im, node), PHX_RESIZE_ASYMMETRIC, PHX_RESIZE_FLOOR, xi.rank, {}, {}};
  size_output(im, node, xi, scales, {}, params);
  for (float s : scales)
    if (params.mode == PHX_RESIZE_NEAREST && s < 1.0f)
      im.unsupported(node, "nearest downsampling before opset 11");
  im.define(node, 0, im.add_node(node, PHX_OP_RESIZE, &params, {x})[0],
            im.input(node, 0).elem_type);
}

}  // namespace

void convert_resize(Importer& im, const onnx::NodeProto& node) {
  if (im.opset() < 11) return resize_before_opset_11(im, node, known_scales(im, node, 1));
  const phx_value x = im.graph_input(node, 0);
  const phx_value_info xi = im.info(x);
  phx_resize_params params{sizeof params,
                           mode_of(im, node),
                           coordinates_of(im, node),
                           nearest_of(im, node),
                           xi.rank,
                           {},
                           {}};
  if (attr_int(node, "exclude_outside", 0) != 0) im.unsupported(node, "exclude_outside 1");
  std::vector<int64_t> sizes;
  if (im.has_input(node, 3)) {
    const KnownValue* k = im.known_input(node, 3);
    if (k == nullptr) im.unsupported(node, "sizes computed at run time");
    sizes = known_int_list(*k);
  }
  size_output(im, node, xi, known_scales(im, node, 2), sizes, params);
  im.define(node, 0, im.add_node(node, PHX_OP_RESIZE, &params, {x})[0],
            im.input(node, 0).elem_type);
}

void convert_upsample(Importer& im, const onnx::NodeProto& node) {
  if (im.opset() >= 9) return resize_before_opset_11(im, node, known_scales(im, node, 1));
  std::vector<float> scales;
  const onnx::AttributeProto* a = find_attribute(node, "scales");
  if (a == nullptr) im.invalid(node, "needs its scales attribute");
  for (float s : a->floats()) scales.push_back(s);
  resize_before_opset_11(im, node, scales);
}

}  // namespace phx::onnx_import
