// ONNX's quantized operators onto quantize, dequantize, dynamic_quantize, qmatmul and
// qconv2d. Phynexus keeps zero points as i32 (docs/ops.md): a model's u8 or i8 zero
// point is widened by a cast (folded at compile when it is a constant).
#include "attributes.h"
#include "converters.h"
#include "known_ops.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

// Input i widened to i32 (zero points), or PHX_VALUE_NONE when left out.
phx_value zero_point_input(Importer& im, const onnx::NodeProto& node, int i) {
  if (!im.has_input(node, i)) return PHX_VALUE_NONE;
  if (const KnownValue* known = im.known_input(node, i)) {
    KnownValue widened = *known;
    widened.elem_type = onnx::TensorProto::INT32;
    return im.constant(widened, node.input(i) + " (i32)");
  }
  const phx_value zp = im.graph_input(node, i);
  if (im.info(zp).dtype == PHX_DTYPE_I32) return zp;
  return im.add_node(node, PHX_OP_CAST, nullptr, {zp}, 1, {PHX_DTYPE_I32}, "zero point")[0];
}

// A scale of 1 for an integer product's operand, of the shape of its zero point (which
// the ops require of a scale's zero point), or [1] without one.
phx_value unit_scale(Importer& im, const onnx::NodeProto& node, phx_value zero_point,
                     const char* what) {
  KnownValue one;
  one.elem_type = onnx::TensorProto::FLOAT;
  one.dims = {1};
  if (zero_point != PHX_VALUE_NONE) {
    const phx_value_info zi = im.info(zero_point);
    one.dims.assign(zi.shape, zi.shape + zi.rank);
  }
  one.reals.assign(static_cast<size_t>(element_count(one.dims, what)), 1.0);
  return im.constant(one, node.name() + " " + what);
}

// qmatmul takes b as a matrix: a batched b is refused.
void require_matrix(Importer& im, const onnx::NodeProto& node, phx_value b) {
  if (im.info(b).rank != 2) im.unsupported(node, "a batched (rank above 2) second operand");
}

// B of an integer product as i8, which qmatmul and qconv2d take: a known u8 B and its
// zero point are both shifted by -128, which leaves every B - zero_point as it was.
void signed_weights(Importer& im, const onnx::NodeProto& node, int b_index, int zp_index,
                    phx_value& b, phx_value& b_zero_point) {
  const Value& in = im.input(node, b_index);
  if (in.elem_type != onnx::TensorProto::UINT8) {
    b = im.graph_input(node, b_index);
    b_zero_point = zero_point_input(im, node, zp_index);
    return;
  }
  const KnownValue* known = im.known_input(node, b_index);
  if (known == nullptr) im.unsupported(node, "a u8 weight operand computed at run time");
  KnownValue shifted = *known;
  shifted.elem_type = onnx::TensorProto::INT8;
  for (auto& v : shifted.ints) v -= 128;
  b = im.constant(shifted, node.input(b_index) + " (i8)");
  KnownValue zp = known_ints(onnx::TensorProto::INT32, {1}, {0});
  if (im.has_input(node, zp_index)) {
    const KnownValue* given = im.known_input(node, zp_index);
    if (given == nullptr) im.unsupported(node, "a u8 weight zero point computed at run time");
    zp = *given;
    zp.elem_type = onnx::TensorProto::INT32;
  }
  for (auto& v : zp.ints) v -= 128;
  b_zero_point = im.constant(zp, node.name() + " weight zero point (i8)");
}

void conv_attributes(Importer& im, const onnx::NodeProto& node, phx_conv2d_params& params) {
  const auto strides = attr_ints(node, "strides"), dilations = attr_ints(node, "dilations");
  const auto pads = attr_ints(node, "pads");
  if (attr_string(node, "auto_pad", "NOTSET") != "NOTSET")
    im.unsupported(node, "auto_pad on an integer convolution");
  if ((!strides.empty() && strides.size() != 2) || (!dilations.empty() && dilations.size() != 2))
    im.invalid(node, "strides and dilations need one entry per spatial dimension");
  for (int d = 0; d < 2; ++d) {
    if (!strides.empty()) params.stride[d] = static_cast<uint32_t>(strides[d]);
    if (!dilations.empty()) params.dilation[d] = static_cast<uint32_t>(dilations[d]);
  }
  if (!pads.empty()) {
    if (pads.size() != 4) im.invalid(node, "pads must have 4 entries for 2 spatial dimensions");
    params.padding[0] = static_cast<uint32_t>(pads[0]);
    params.padding[1] = static_cast<uint32_t>(pads[2]);
    params.padding[2] = static_cast<uint32_t>(pads[1]);
    params.padding[3] = static_cast<uint32_t>(pads[3]);
  }
  params.groups = static_cast<uint32_t>(attr_int(node, "group", 1));
}

phx_quantize_params quantize_params(const onnx::NodeProto& node) {
  phx_quantize_params params = PHX_QUANTIZE_PARAMS_INIT;
  params.axis = static_cast<int32_t>(attr_int(node, "axis", 1));
  return params;
}

}  // namespace

void convert_quantize_linear(Importer& im, const onnx::NodeProto& node) {
  const int32_t out_type =
      im.has_input(node, 2) ? im.input(node, 2).elem_type : onnx::TensorProto::UINT8;
  const phx_dtype dtype = dtype_of(out_type);
  const phx_quantize_params params = quantize_params(node);
  std::vector<phx_value> inputs = {im.graph_input(node, 0), im.graph_input(node, 1)};
  if (im.has_input(node, 2)) inputs.push_back(zero_point_input(im, node, 2));
  im.define(node, 0, im.add_node(node, PHX_OP_QUANTIZE, &params, inputs, 1, {dtype})[0], out_type);
}

void convert_dequantize_linear(Importer& im, const onnx::NodeProto& node) {
  const phx_quantize_params params = quantize_params(node);
  std::vector<phx_value> inputs = {im.graph_input(node, 0), im.graph_input(node, 1)};
  if (im.has_input(node, 2)) inputs.push_back(zero_point_input(im, node, 2));
  im.define(node, 0, im.add_node(node, PHX_OP_DEQUANTIZE, &params, inputs)[0],
            onnx::TensorProto::FLOAT);
}

void convert_dynamic_quantize_linear(Importer& im, const onnx::NodeProto& node) {
  const auto out = im.add_node(node, PHX_OP_DYNAMIC_QUANTIZE, nullptr, {im.graph_input(node, 0)}, 3,
                               {PHX_DTYPE_U8, PHX_DTYPE_F32, PHX_DTYPE_I32});
  // ONNX's scale and zero point are scalars (rank 0); the op gives them as [1].
  const phx_value zero_point =
      im.add_node(node, PHX_OP_CAST, nullptr, {out[2]}, 1, {PHX_DTYPE_U8}, "zero point")[0];
  im.define(node, 0, out[0], onnx::TensorProto::UINT8);
  im.define(node, 1, reshape_to(im, node, out[1], {}, "scale as a scalar"),
            onnx::TensorProto::FLOAT);
  im.define(node, 2, reshape_to(im, node, zero_point, {}, "zero point as a scalar"),
            onnx::TensorProto::UINT8);
}

// The raw i32 product: qmatmul with unit scales and an i32 output.
void convert_matmul_integer(Importer& im, const onnx::NodeProto& node) {
  phx_value b = PHX_VALUE_NONE, b_zp = PHX_VALUE_NONE;
  signed_weights(im, node, 1, 3, b, b_zp);
  require_matrix(im, node, b);
  const phx_value a_zp = zero_point_input(im, node, 2);
  const std::vector<phx_value> inputs = {im.graph_input(node, 0),
                                         b,
                                         unit_scale(im, node, a_zp, "a scale"),
                                         a_zp,
                                         unit_scale(im, node, b_zp, "b scale"),
                                         b_zp};
  im.define(node, 0, im.add_node(node, PHX_OP_QMATMUL, nullptr, inputs, 1, {PHX_DTYPE_I32})[0],
            onnx::TensorProto::INT32);
}

void convert_qlinear_matmul(Importer& im, const onnx::NodeProto& node) {
  phx_value b = PHX_VALUE_NONE, b_zp = PHX_VALUE_NONE;
  signed_weights(im, node, 3, 5, b, b_zp);
  require_matrix(im, node, b);
  const int32_t out_type = im.input(node, 7).elem_type;
  const std::vector<phx_value> inputs = {
      im.graph_input(node, 0),      b,    im.graph_input(node, 1), zero_point_input(im, node, 2),
      im.graph_input(node, 4),      b_zp, PHX_VALUE_NONE,          im.graph_input(node, 6),
      zero_point_input(im, node, 7)};
  im.define(node, 0, im.add_node(node, PHX_OP_QMATMUL, nullptr, inputs, 1, {dtype_of(out_type)})[0],
            out_type);
}

void convert_conv_integer(Importer& im, const onnx::NodeProto& node) {
  phx_value w = PHX_VALUE_NONE, w_zp = PHX_VALUE_NONE;
  signed_weights(im, node, 1, 3, w, w_zp);
  const phx_value x = im.graph_input(node, 0);
  if (im.info(x).rank != 4) im.unsupported(node, "an integer convolution that is not 2-D");
  phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;
  conv_attributes(im, node, params);
  const phx_value x_zp = zero_point_input(im, node, 2);
  const std::vector<phx_value> inputs = {
      x,   w, unit_scale(im, node, x_zp, "x scale"), x_zp, unit_scale(im, node, w_zp, "w scale"),
      w_zp};
  im.define(node, 0, im.add_node(node, PHX_OP_QCONV2D, &params, inputs, 1, {PHX_DTYPE_I32})[0],
            onnx::TensorProto::INT32);
}

}  // namespace phx::onnx_import
