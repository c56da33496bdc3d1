// The operators of neural networks that map onto one op or a few: products,
// convolution, softmax and the norms (LRN among them). Shapes ONNX sees otherwise (1-D operands, a
// softmax over several dimensions, a norm over several) go through a reshape.
#include <algorithm>
#include <cmath>

#include "attributes.h"
#include "converters.h"
#include "known_ops.h"
#include "tensor_proto.h"
#include "window.h"

namespace phx::onnx_import {
namespace {

// y = x * factor (in input 0's element type), unless factor is 1.
phx_value scaled(Importer& im, const onnx::NodeProto& node, phx_value x, double factor,
                 const char* suffix) {
  if (factor == 1.0) return x;
  const phx_value f = im.scalar_constant(node, factor, suffix);
  return im.add_node(node, PHX_OP_MUL, nullptr, {x, f}, 1, {}, suffix)[0];
}

std::vector<int64_t> dims_of(const phx_value_info& vi) {
  return std::vector<int64_t>(vi.shape, vi.shape + vi.rank);
}

// The product of dims[from, to); -1 (for a reshape to infer) when one of them is dynamic.
int64_t product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) {
    if (dims[d] == PHX_DIM_DYNAMIC) return -1;
    p *= dims[d];
  }
  return p;
}

// x as [outer, inner] with the split at axis: the form in which softmax and the norms
// of opsets that normalize "from axis on" see it. Refused when both parts are dynamic.
phx_value as_rows(Importer& im, const onnx::NodeProto& node, phx_value x, uint32_t axis) {
  const std::vector<int64_t> dims = dims_of(im.info(x));
  const int64_t outer = product(dims, 0, axis), inner = product(dims, axis, dims.size());
  if (outer < 0 && inner < 0) im.needs_sizes(node, "dynamic dimensions on both sides of axis");
  return reshape_to(im, node, x, {outer, inner}, "as rows");
}

// y (the rows of as_rows) back in the shape of x.
phx_value back_from_rows(Importer& im, const onnx::NodeProto& node, phx_value y, phx_value x) {
  std::vector<int64_t> dims = dims_of(im.info(x));
  if (std::count(dims.begin(), dims.end(), PHX_DIM_DYNAMIC) > 1)
    im.needs_sizes(node, "two dynamic dimensions");
  return reshape_to(im, node, y, dims, "back");
}

void softmax_like(Importer& im, const onnx::NodeProto& node, phx_op_id op) {
  const phx_value x = im.graph_input(node, 0);
  const uint32_t rank = im.info(x).rank;
  const uint32_t a =
      im.axis(node, attr_int(node, "axis", im.opset() >= 13 ? -1 : 1), std::max(rank, 1u));
  phx_softmax_params params = PHX_SOFTMAX_PARAMS_INIT;
  // Before opset 13 the input is seen as 2-D [before axis, from axis on]: one softmax
  // per row, over all the dimensions from axis on.
  if (im.opset() >= 13 || a + 1 >= rank) {
    params.axis = static_cast<int32_t>(a);
    im.define(node, 0, im.add_node(node, op, &params, {x})[0], im.input(node, 0).elem_type);
    return;
  }
  const phx_value rows =
      im.add_node(node, op, &params, {as_rows(im, node, x, a)}, 1, {}, "rows")[0];
  im.define(node, 0, back_from_rows(im, node, rows, x), im.input(node, 0).elem_type);
}

// The mean and the inverse standard deviation of LayerNormalization's rows, shaped as
// ONNX gives them: x's dimensions before axis, then 1s.
void layer_norm_statistics(Importer& im, const onnx::NodeProto& node, phx_value rows,
                           const std::vector<int64_t>& dims, uint32_t axis, float epsilon) {
  const int32_t type = im.input(node, 0).elem_type;
  phx_reduce_params mean_params = PHX_REDUCE_PARAMS_INIT;
  mean_params.axes_mask = 2;  // over each row
  mean_params.keep_dims = 1;
  const phx_value mean =
      im.add_node(node, PHX_OP_REDUCE_MEAN, &mean_params, {rows}, 1, {}, "mean")[0];
  const phx_value centred =
      im.add_node(node, PHX_OP_SUB, nullptr, {rows, mean}, 1, {}, "centred")[0];
  const phx_value square =
      im.add_node(node, PHX_OP_MUL, nullptr, {centred, centred}, 1, {}, "square")[0];
  const phx_value variance =
      im.add_node(node, PHX_OP_REDUCE_MEAN, &mean_params, {square}, 1, {}, "variance")[0];
  const phx_value eps = im.scalar_constant(node, epsilon, "epsilon");
  const phx_value shifted =
      im.add_node(node, PHX_OP_ADD, nullptr, {variance, eps}, 1, {}, "+ eps")[0];
  const phx_value std_dev = im.add_node(node, PHX_OP_SQRT, nullptr, {shifted}, 1, {}, "std")[0];
  const phx_value inv =
      im.add_node(node, PHX_OP_RECIPROCAL, nullptr, {std_dev}, 1, {}, "inv std")[0];
  std::vector<int64_t> shape(dims.begin(), dims.begin() + axis);
  shape.resize(dims.size(), 1);
  if (std::count(shape.begin(), shape.end(), PHX_DIM_DYNAMIC) > 1)
    im.needs_sizes(node, "two dynamic dimensions");
  im.define(node, 1, reshape_to(im, node, mean, shape, "mean shaped"), type);
  im.define(node, 2, reshape_to(im, node, inv, shape, "inv std shaped"), type);
}

}  // namespace

// 1-D operands as NumPy takes them: a [K] is [1, K] and b [K] is [K, 1], the added
// dimension dropped from the result.
void convert_matmul(Importer& im, const onnx::NodeProto& node) {
  phx_value a = im.graph_input(node, 0), b = im.graph_input(node, 1);
  const bool a_vector = im.info(a).rank == 1, b_vector = im.info(b).rank == 1;
  if (a_vector) a = reshape_to(im, node, a, {1, -1}, "a as a row");
  if (b_vector) b = reshape_to(im, node, b, {-1, 1}, "b as a column");
  phx_value y = im.add_node(node, PHX_OP_MATMUL, nullptr, {a, b}, 1, {},
                            a_vector || b_vector ? "2-D" : nullptr)[0];
  if (a_vector || b_vector) {
    std::vector<int64_t> dims = dims_of(im.info(y));
    if (b_vector) dims.pop_back();
    if (a_vector) dims.erase(dims.end() - (b_vector ? 1 : 2));
    y = reshape_to(im, node, y, dims, nullptr);
  }
  im.define(node, 0, y, im.input(node, 0).elem_type);
}

// alpha * A' B' + beta * C, with A' and B' transposed as asked.
void convert_gemm(Importer& im, const onnx::NodeProto& node) {
  const int32_t type = im.input(node, 0).elem_type;
  const double alpha = attr_float(node, "alpha", 1.0f);
  const double beta = attr_float(node, "beta", 1.0f);
  phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
  params.transpose_a = attr_int(node, "transA", 0) != 0;
  params.transpose_b = attr_int(node, "transB", 0) != 0;
  std::vector<phx_value> inputs = {im.graph_input(node, 0), im.graph_input(node, 1)};
  const bool has_c = im.has_input(node, 2) && beta != 0.0;
  phx_value c = PHX_VALUE_NONE;
  if (has_c) c = scaled(im, node, im.graph_input(node, 2), beta, "beta");
  if (has_c && alpha == 1.0) inputs.push_back(c);  // the product's own bias
  phx_value y = im.add_node(node, PHX_OP_MATMUL, &params, inputs)[0];
  if (alpha != 1.0) {
    y = scaled(im, node, y, alpha, "alpha");
    if (has_c) y = im.add_node(node, PHX_OP_ADD, nullptr, {y, c}, 1, {}, "bias")[0];
  }
  im.define(node, 0, y, type);
}

void convert_softmax(Importer& im, const onnx::NodeProto& node) {
  softmax_like(im, node, PHX_OP_SOFTMAX);
}

void convert_log_softmax(Importer& im, const onnx::NodeProto& node) {
  softmax_like(im, node, PHX_OP_LOG_SOFTMAX);
}

// 2-D as conv2d; 1-D as conv2d over [N, C, 1, L]; 3-D in convert_conv3d.cpp.
void convert_conv(Importer& im, const onnx::NodeProto& node) {
  phx_value x = im.graph_input(node, 0), w = im.graph_input(node, 1);
  const phx_value_info xi = im.info(x), wi = im.info(w);
  if (xi.rank == 5) return convert_conv3d(im, node);
  if (xi.rank != 4 && xi.rank != 3)
    im.unsupported(node, std::to_string(static_cast<int>(xi.rank) - 2) + "-D convolution");
  if (wi.rank != xi.rank) im.invalid(node, "the weight's rank differs from the input's");
  const size_t k = xi.rank - 2, o = 2 - k;  // o: the dimensions added in front (1-D)
  const std::vector<int64_t> kernel(wi.shape + 2, wi.shape + wi.rank);
  const std::vector<int64_t> stride = per_dim(node, "strides", k, 1);
  const std::vector<int64_t> dilation = per_dim(node, "dilations", k, 1);
  if (stride.size() != k || dilation.size() != k)
    im.invalid(node, "strides and dilations need one entry per spatial dimension");
  uint32_t begin[2] = {0, 0}, end[2] = {0, 0};
  window_pads(im, node, xi, k, kernel, stride, dilation, begin, end);
  phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;
  for (size_t d = 0; d < k; ++d) {
    params.stride[o + d] = static_cast<uint32_t>(stride[d]);
    params.dilation[o + d] = static_cast<uint32_t>(dilation[d]);
    params.padding[2 * (o + d)] = begin[d];  // top, bottom, left, right
    params.padding[2 * (o + d) + 1] = end[d];
  }
  params.groups = static_cast<uint32_t>(attr_int(node, "group", 1));
  if (k == 1) {
    x = reshape_to(im, node, x, {0, 0, 1, -1}, "as 2-D");
    w = reshape_to(im, node, w, {0, 0, 1, -1}, "weight as 2-D");
  }
  std::vector<phx_value> inputs = {x, w};
  if (im.has_input(node, 2)) inputs.push_back(im.graph_input(node, 2));
  phx_value y =
      im.add_node(node, PHX_OP_CONV2D, &params, inputs, 1, {}, k == 1 ? "2-D" : nullptr)[0];
  if (k == 1) y = reshape_to(im, node, y, {0, 0, -1}, nullptr);
  im.define(node, 0, y, im.input(node, 0).elem_type);
}

// layer_norm over the last dimension; over several (axis before the last) as rows.
void convert_layer_normalization(Importer& im, const onnx::NodeProto& node) {
  const phx_value x = im.graph_input(node, 0);
  const std::vector<int64_t> dims = dims_of(im.info(x));
  const uint32_t rank = static_cast<uint32_t>(dims.size());
  const uint32_t axis = im.axis(node, attr_int(node, "axis", -1), rank);
  phx_norm_params params = PHX_NORM_PARAMS_INIT;
  params.epsilon = attr_float(node, "epsilon", 1e-5f);
  const bool last = axis + 1 == rank;
  const bool statistics = (node.output_size() > 1 && !node.output(1).empty()) ||
                          (node.output_size() > 2 && !node.output(2).empty());
  const phx_value rows = last && !statistics ? x : as_rows(im, node, x, axis);
  std::vector<phx_value> inputs = {rows, im.graph_input(node, 1)};
  if (im.has_input(node, 2)) inputs.push_back(im.graph_input(node, 2));
  if (rows != x)
    for (size_t i = 1; i < inputs.size(); ++i)
      inputs[i] = reshape_to(im, node, inputs[i], {-1}, i == 1 ? "scale flat" : "bias flat");
  phx_value y =
      im.add_node(node, PHX_OP_LAYER_NORM, &params, inputs, 1, {}, rows != x ? "rows" : nullptr)[0];
  if (rows != x) y = back_from_rows(im, node, y, x);
  im.define(node, 0, y, im.input(node, 0).elem_type);
  if (statistics) layer_norm_statistics(im, node, rows, dims, axis, params.epsilon);
}

void convert_batch_normalization(Importer& im, const onnx::NodeProto& node) {
  if (attr_int(node, "training_mode", 0) != 0) im.unsupported(node, "training mode");
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty()) im.unsupported(node, "the running statistics outputs");
  phx_norm_params params = PHX_NORM_PARAMS_INIT;
  params.epsilon = attr_float(node, "epsilon", 1e-5f);
  std::vector<phx_value> inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(im.graph_input(node, i));
  im.define(node, 0, im.add_node(node, PHX_OP_BATCH_NORM, &params, inputs)[0],
            im.input(node, 0).elem_type);
}

void convert_instance_normalization(Importer& im, const onnx::NodeProto& node) {
  phx_norm_params params = PHX_NORM_PARAMS_INIT;
  params.epsilon = attr_float(node, "epsilon", 1e-5f);
  im.define(
      node, 0,
      im.add_node(node, PHX_OP_INSTANCE_NORM, &params,
                  {im.graph_input(node, 0), im.graph_input(node, 1), im.graph_input(node, 2)})[0],
      im.input(node, 0).elem_type);
}

namespace {

// A known value transposed stays known (a mask built from constants, as Swin's).
KnownValue known_transpose(const KnownValue& x, const std::vector<int64_t>& perm) {
  KnownValue out;
  out.elem_type = x.elem_type;
  for (int64_t p : perm) out.dims.push_back(x.dims[static_cast<size_t>(p)]);
  std::vector<int64_t> strides(x.dims.size(), 1);
  for (size_t d = x.dims.size(); d-- > 1;) strides[d - 1] = strides[d] * x.dims[d];
  std::vector<int64_t> index(out.dims.size(), 0);
  for (size_t i = 0; i < x.size(); ++i, next_index(index, out.dims)) {
    int64_t from = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      from += index[d] * strides[static_cast<size_t>(perm[d])];
    if (x.integral())
      out.ints.push_back(x.ints[static_cast<size_t>(from)]);
    else
      out.reals.push_back(x.reals[static_cast<size_t>(from)]);
  }
  return out;
}

}  // namespace

void convert_transpose(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* known = im.known_input(node, 0);
  const uint32_t rank = known != nullptr ? static_cast<uint32_t>(known->dims.size())
                                         : im.info(im.graph_input(node, 0)).rank;
  std::vector<int64_t> perm = attr_ints(node, "perm");
  if (!perm.empty() && perm.size() != rank)
    im.invalid(node, "perm has " + std::to_string(perm.size()) + " entries for rank " +
                         std::to_string(rank));
  if (known != nullptr) {
    if (perm.empty())
      for (uint32_t i = 0; i < rank; ++i) perm.push_back(rank - 1 - i);
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
        im.invalid(node, "perm is not a permutation of the dimensions");
      seen[static_cast<size_t>(p)] = true;
    }
    im.define_known(node, 0, known_transpose(*known, perm));
    return;
  }
  const phx_value x = im.graph_input(node, 0);
  phx_transpose_params params{};
  params.struct_size = sizeof params;
  for (uint32_t i = 0; i < rank; ++i)
    params.perm[i] = perm.empty() ? rank - 1 - i : static_cast<uint32_t>(perm[i]);
  im.define(node, 0, im.add_node(node, PHX_OP_TRANSPOSE, &params, {x})[0],
            im.input(node, 0).elem_type);
}

// Local response normalization across channels: x / (bias + alpha / size * s)^beta, s
// the sum of squares over the size channels around each one. The squares, as
// [N, 1, C, rest], are averaged by an avg_pool of a size x 1 window padded with zeros
// (counted in: the mean is s / size).
void convert_lrn(Importer& im, const onnx::NodeProto& node) {
  const int64_t size = attr_int(node, "size", 0);
  if (size < 1) im.invalid(node, "size must be at least 1");
  if (size > 4096) im.unsupported(node, "a window of more than 4096 channels");
  const phx_value x = im.graph_input(node, 0);
  const phx_value_info vi = im.info(x);
  if (vi.rank < 2) im.invalid(node, "x needs rank >= 2");
  std::vector<int64_t> dims(vi.shape, vi.shape + vi.rank);
  int64_t rest = 1;
  for (uint32_t d = 1; d < vi.rank; ++d) {
    if (dims[d] == PHX_DIM_DYNAMIC) im.needs_sizes(node, "an LRN over a dynamic dimension");
    if (d >= 2) rest *= dims[d];
  }
  const phx_value squares = im.add_node(node, PHX_OP_MUL, nullptr, {x, x}, 1, {}, "squares")[0];
  const phx_value columns = reshape_to(im, node, squares, {dims[0], 1, dims[1], rest}, "columns");
  phx_pool_params pool = PHX_POOL_PARAMS_INIT;
  pool.kernel[0] = static_cast<uint32_t>(size);
  pool.kernel[1] = 1;
  pool.pad_begin[0] = static_cast<uint32_t>((size - 1) / 2);
  pool.pad_end[0] = static_cast<uint32_t>(size - 1 - (size - 1) / 2);
  pool.count_include_pad = 1;
  const phx_value mean = im.add_node(node, PHX_OP_AVG_POOL, &pool, {columns}, 1, {}, "mean")[0];
  const phx_value scaled_mean = scaled(im, node, reshape_to(im, node, mean, dims, "mean"),
                                       attr_float(node, "alpha", 1e-4f), "alpha");
  const phx_value base =
      im.add_node(node, PHX_OP_ADD, nullptr,
                  {scaled_mean, im.scalar_constant(node, attr_float(node, "bias", 1.0f), "bias")},
                  1, {}, "base")[0];
  const phx_value divisor =
      im.add_node(node, PHX_OP_POW, nullptr,
                  {base, im.scalar_constant(node, attr_float(node, "beta", 0.75f), "beta")}, 1, {},
                  "divisor")[0];
  im.define(node, 0, im.add_node(node, PHX_OP_DIV, nullptr, {x, divisor})[0],
            im.input(node, 0).elem_type);
}

}  // namespace phx::onnx_import
