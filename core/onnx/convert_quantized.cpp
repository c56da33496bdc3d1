// ONNX's quantized operators onto quantize, dequantize, dynamic_quantize, qmatmul and
// qconv2d. Phynexus keeps zero points as i32 (docs/ops.md): a model's u8 or i8 zero
// point is widened by a cast (folded at compile when it is a constant).
#include <algorithm>
#include <string>

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

// Matrix i of x [count, rows, columns]: a gather at a scalar index.
phx_value matrix(Importer& im, const onnx::NodeProto& node, phx_value x, int64_t i,
                 const std::string& what) {
  const phx_value index = im.constant(known_ints(onnx::TensorProto::INT32, {}, {i}),
                                      node.name() + " " + what + " index");
  phx_axis_params params = PHX_AXIS_PARAMS_INIT;
  return im.add_node(node, PHX_OP_GATHER, &params, {x, index}, 1, {}, what.c_str())[0];
}

// qmatmul of inputs (a, b, then qmatmul's others) as NumPy's matmul. qmatmul takes b as
// a matrix: a batched b [..., K, N] is multiplied one matrix at a time, by a's matrix
// of the same batch index where a is batched too (the batch dimensions broadcast), and
// the products [M, N] concatenated into [batch * M, N], the output's row-major order.
phx_value broadcast_qmatmul(Importer& im, const onnx::NodeProto& node,
                            std::vector<phx_value> inputs, phx_dtype out_dtype) {
  const phx_value_info ai = im.info(inputs[0]), bi = im.info(inputs[1]);
  if (bi.rank < 2) im.unsupported(node, "a 1-D second operand");
  if (bi.rank == 2) return im.add_node(node, PHX_OP_QMATMUL, nullptr, inputs, 1, {out_dtype})[0];
  if (ai.rank < 2) im.unsupported(node, "a 1-D first operand against a batched second");
  for (const phx_value_info* vi : {&ai, &bi})
    for (uint32_t d = 0; d < vi->rank; ++d)
      if (vi->shape[d] == PHX_DIM_DYNAMIC)
        im.needs_sizes(node, "a batched second operand with a dynamic dimension");
  const int64_t m = ai.shape[ai.rank - 2], k = ai.shape[ai.rank - 1], n = bi.shape[bi.rank - 1];
  // The batch dimensions, aligned at the end: a's and b's (1 where one has fewer) and
  // the output's.
  const uint32_t rank = std::max(ai.rank, bi.rank) - 2;
  std::vector<int64_t> a_batch(rank, 1), b_batch(rank, 1), shape(rank);
  std::copy(ai.shape, ai.shape + ai.rank - 2, a_batch.end() - (ai.rank - 2));
  std::copy(bi.shape, bi.shape + bi.rank - 2, b_batch.end() - (bi.rank - 2));
  int64_t a_count = 1, b_count = 1, count = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    if (a_batch[d] != b_batch[d] && a_batch[d] != 1 && b_batch[d] != 1)
      im.invalid(node, "batch dimensions that do not broadcast");
    shape[d] = std::max(a_batch[d], b_batch[d]);
    a_count *= a_batch[d];
    b_count *= b_batch[d];
    count *= shape[d];
  }
  shape.insert(shape.end(), {m, n});
  if (b_count == 1) {  // one matrix: qmatmul takes a's batch itself
    inputs[1] = reshape_to(im, node, inputs[1], {k, n}, "b's matrix");
    return reshape_to(im, node,
                      im.add_node(node, PHX_OP_QMATMUL, nullptr, inputs, 1, {out_dtype})[0], shape,
                      "batches");
  }
  const phx_value a = reshape_to(im, node, inputs[0], {a_count, m, k}, "a's matrices");
  const phx_value b = reshape_to(im, node, inputs[1], {b_count, k, n}, "b's matrices");
  std::vector<phx_value> a_matrices(static_cast<size_t>(a_count), PHX_VALUE_NONE);
  std::vector<phx_value> b_matrices(static_cast<size_t>(b_count), PHX_VALUE_NONE);
  std::vector<phx_value> products;
  for (int64_t i = 0; i < count; ++i) {
    // Output matrix i's batch index, dimension by dimension from the last, as a's and b's
    // (0 along a dimension of 1).
    int64_t a_index = 0, b_index = 0, a_stride = 1, b_stride = 1, rest = i;
    for (uint32_t d = rank; d-- > 0;) {
      const int64_t at = rest % shape[d];
      rest /= shape[d];
      if (a_batch[d] != 1) a_index += at * a_stride;
      if (b_batch[d] != 1) b_index += at * b_stride;
      a_stride *= a_batch[d];
      b_stride *= b_batch[d];
    }
    if (a_matrices[a_index] == PHX_VALUE_NONE)
      a_matrices[a_index] = matrix(im, node, a, a_index, "a " + std::to_string(a_index));
    if (b_matrices[b_index] == PHX_VALUE_NONE)
      b_matrices[b_index] = matrix(im, node, b, b_index, "b " + std::to_string(b_index));
    inputs[0] = a_matrices[a_index];
    inputs[1] = b_matrices[b_index];
    const std::string suffix = "product " + std::to_string(i);
    products.push_back(
        im.add_node(node, PHX_OP_QMATMUL, nullptr, inputs, 1, {out_dtype}, suffix.c_str())[0]);
  }
  return reshape_to(im, node, concat(im, node, std::move(products), 0, "products"), shape,
                    "batches");
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
  const phx_value a_zp = zero_point_input(im, node, 2);
  std::vector<phx_value> inputs = {im.graph_input(node, 0),
                                   b,
                                   unit_scale(im, node, a_zp, "a scale"),
                                   a_zp,
                                   unit_scale(im, node, b_zp, "b scale"),
                                   b_zp};
  im.define(node, 0, broadcast_qmatmul(im, node, std::move(inputs), PHX_DTYPE_I32),
            onnx::TensorProto::INT32);
}

void convert_qlinear_matmul(Importer& im, const onnx::NodeProto& node) {
  phx_value b = PHX_VALUE_NONE, b_zp = PHX_VALUE_NONE;
  signed_weights(im, node, 3, 5, b, b_zp);
  const int32_t out_type = im.input(node, 7).elem_type;
  std::vector<phx_value> inputs = {
      im.graph_input(node, 0),      b,    im.graph_input(node, 1), zero_point_input(im, node, 2),
      im.graph_input(node, 4),      b_zp, PHX_VALUE_NONE,          im.graph_input(node, 6),
      zero_point_input(im, node, 7)};
  im.define(node, 0, broadcast_qmatmul(im, node, std::move(inputs), dtype_of(out_type)), out_type);
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

// qconv2d requantized to y's type, B (i32 with the scale x_scale * w_scale) its bias.
void convert_qlinear_conv(Importer& im, const onnx::NodeProto& node) {
  phx_value w = PHX_VALUE_NONE, w_zp = PHX_VALUE_NONE;
  signed_weights(im, node, 3, 5, w, w_zp);
  const phx_value x = im.graph_input(node, 0);
  if (im.info(x).rank != 4) im.unsupported(node, "an integer convolution that is not 2-D");
  phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;
  conv_attributes(im, node, params);
  const int32_t out_type = im.input(node, 7).elem_type;
  const std::vector<phx_value> inputs = {
      x,
      w,
      im.graph_input(node, 1),
      zero_point_input(im, node, 2),
      im.graph_input(node, 4),
      w_zp,
      im.has_input(node, 8) ? im.graph_input(node, 8) : PHX_VALUE_NONE,
      im.graph_input(node, 6),
      zero_point_input(im, node, 7)};
  im.define(node, 0, im.add_node(node, PHX_OP_QCONV2D, &params, inputs, 1, {dtype_of(out_type)})[0],
            out_type);
}

}  // namespace phx::onnx_import
