// Reductions: ReduceSum ... ReduceProd onto the reduce ops, ArgMax, TopK and Hardmax, the
// global pools (a mean or max over the spatial dimensions), the norms of a sum of squares
// or of absolute values, made of an elementwise op and a sum, ReduceLogSumExp, and
// CumSum as a scan of shifted adds.
#include <algorithm>
#include <cmath>
#include <limits>

#include "attributes.h"
#include "converters.h"
#include "known_ops.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

// The reduce params of the node: axes from the attribute, or from input 1. false when the node
// reduces nothing (empty axes with noop_with_empty_axes).
bool reduce_params(Importer& im, const onnx::NodeProto& node, uint32_t rank, bool axes_from_input,
                   phx_reduce_params& params) {
  std::vector<int64_t> axes;
  if (axes_from_input && im.has_input(node, 1)) {
    const KnownValue* known = im.known_input(node, 1);
    if (known == nullptr) im.unsupported(node, "axes computed at run time are not taken");
    axes = known_int_list(*known);
  } else if (!axes_from_input) {
    axes = attr_ints(node, "axes");
  }
  params = PHX_REDUCE_PARAMS_INIT;
  params.keep_dims = attr_int(node, "keepdims", 1) != 0;
  if (axes.empty() && attr_int(node, "noop_with_empty_axes", 0) != 0) return false;
  for (int64_t a : axes) params.axes_mask |= 1u << im.axis(node, a, rank);
  return true;
}

// ONNX moved the axes of ReduceSum to an input in opset 13, those of the others in 18.
constexpr int64_t kSumAxesInputOpset = 13, kAxesInputOpset = 18;

// op over the reduced axes of x, after pre (an elementwise op on x; MUL squares) when
// given, and post (on the result) when given.
void reduce(Importer& im, const onnx::NodeProto& node, phx_op_id op, int64_t axes_input_opset,
            phx_op_id pre = PHX_OP_INVALID, phx_op_id post = PHX_OP_INVALID) {
  phx_value x = im.graph_input(node, 0);
  phx_reduce_params params;
  const bool axes_from_input = im.opset() >= axes_input_opset;
  if (!reduce_params(im, node, im.info(x).rank, axes_from_input, params)) {
    convert_identity(im, node);
    return;
  }
  if (pre == PHX_OP_MUL)
    x = im.add_node(node, PHX_OP_MUL, nullptr, {x, x}, 1, {}, "square")[0];
  else if (pre != PHX_OP_INVALID)
    x = im.add_node(node, pre, nullptr, {x}, 1, {}, "before")[0];
  phx_value y =
      im.add_node(node, op, &params, {x}, 1, {}, post != PHX_OP_INVALID ? "reduce" : nullptr)[0];
  if (post != PHX_OP_INVALID) y = im.add_node(node, post, nullptr, {y})[0];
  im.define(node, 0, y, im.input(node, 0).elem_type);
}

// A mean or max over every dimension after the first two, kept as 1s.
void global_pool(Importer& im, const onnx::NodeProto& node, phx_op_id op) {
  const phx_value x = im.graph_input(node, 0);
  const uint32_t rank = im.info(x).rank;
  if (rank < 3) im.invalid(node, "the input needs a spatial dimension (rank >= 3)");
  phx_reduce_params params = PHX_REDUCE_PARAMS_INIT;
  params.keep_dims = 1;
  for (uint32_t d = 2; d < rank; ++d) params.axes_mask |= 1u << d;
  im.define(node, 0, im.add_node(node, op, &params, {x})[0], im.input(node, 0).elem_type);
}

}  // namespace

void convert_reduce_sum(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_SUM, kSumAxesInputOpset);
}
void convert_reduce_max(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_MAX, kAxesInputOpset);
}
void convert_reduce_min(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_MIN, kAxesInputOpset);
}
void convert_reduce_mean(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_MEAN, kAxesInputOpset);
}
void convert_reduce_prod(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_PROD, kAxesInputOpset);
}
void convert_reduce_sum_square(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_SUM, kAxesInputOpset, PHX_OP_MUL);
}
void convert_reduce_l1(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_SUM, kAxesInputOpset, PHX_OP_ABS);
}
void convert_reduce_l2(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_SUM, kAxesInputOpset, PHX_OP_MUL, PHX_OP_SQRT);
}
void convert_reduce_log_sum(Importer& im, const onnx::NodeProto& n) {
  reduce(im, n, PHX_OP_REDUCE_SUM, kAxesInputOpset, PHX_OP_INVALID, PHX_OP_LOG);
}

// ReduceLogSumExp: log(sum(e^(x - m))) + m with m the largest element of each reduced set,
// so that no e^x overflows. An infinite m is taken as 0, as ONNX Runtime does: a set of
// only -inf gives -inf (log 0) and one holding +inf gives +inf, not NaN.
void convert_reduce_log_sum_exp(Importer& im, const onnx::NodeProto& node) {
  if (is_integral(im.input(node, 0).elem_type))
    im.unsupported(node, "ReduceLogSumExp of integers (only of floats)");
  const phx_value x = im.graph_input(node, 0);
  phx_reduce_params params;
  if (!reduce_params(im, node, im.info(x).rank, im.opset() >= kAxesInputOpset, params)) {
    convert_identity(im, node);
    return;
  }
  auto op = [&](phx_op_id id, std::vector<phx_value> inputs, const void* p, const char* suffix) {
    return im.add_node(node, id, p, inputs, 1, {}, suffix)[0];
  };
  const phx_value inf_value = im.scalar_constant(node, INFINITY, "inf");
  const phx_value zero_value = im.scalar_constant(node, 0.0, "0");
  // m twice: kept as 1s for the subtraction, and in the result's shape for the sum.
  auto finite_max = [&](bool keep_dims, const char* suffix) {
    phx_reduce_params p = params;
    p.keep_dims = keep_dims;
    const phx_value m = op(PHX_OP_REDUCE_MAX, {x}, &p, suffix);
    const phx_value infinite =
        op(PHX_OP_EQUAL, {op(PHX_OP_ABS, {m}, nullptr, "|max|"), inf_value}, nullptr, "infinite");
    return op(PHX_OP_WHERE, {infinite, zero_value, m}, nullptr, "finite max");
  };
  const phx_value kept = finite_max(true, "max kept");
  const phx_value shifted = op(PHX_OP_SUB, {x, kept}, nullptr, "x - max");
  const phx_value sum =
      op(PHX_OP_REDUCE_SUM, {op(PHX_OP_EXP, {shifted}, nullptr, "exp")}, &params, "sum");
  const phx_value log_sum = op(PHX_OP_LOG, {sum}, nullptr, "log");
  const phx_value m = params.keep_dims ? kept : finite_max(false, "max");
  im.define(node, 0, im.add_node(node, PHX_OP_ADD, nullptr, {log_sum, m})[0],
            im.input(node, 0).elem_type);
}

void convert_arg_max(Importer& im, const onnx::NodeProto& node) {
  const phx_value x = im.graph_input(node, 0);
  phx_argmax_params params = PHX_ARGMAX_PARAMS_INIT;
  params.axis = static_cast<int32_t>(im.axis(node, attr_int(node, "axis", 0), im.info(x).rank));
  params.keep_dims = attr_int(node, "keepdims", 1) != 0;
  params.select_last_index = attr_int(node, "select_last_index", 0) != 0;
  im.define(node, 0, im.add_node(node, PHX_OP_ARGMAX, &params, {x})[0], onnx::TensorProto::INT64);
}

// argmin(x) is argmax(-x) for floats, ties and NaNs alike.
void convert_arg_min(Importer& im, const onnx::NodeProto& node) {
  if (is_integral(im.input(node, 0).elem_type))
    im.unsupported(node, "ArgMin of integers (only of floats)");
  const phx_value x = im.graph_input(node, 0);
  const phx_value negated = im.add_node(node, PHX_OP_NEG, nullptr, {x}, 1, {}, "negated")[0];
  phx_argmax_params params = PHX_ARGMAX_PARAMS_INIT;
  params.axis = static_cast<int32_t>(im.axis(node, attr_int(node, "axis", 0), im.info(x).rank));
  params.keep_dims = attr_int(node, "keepdims", 1) != 0;
  params.select_last_index = attr_int(node, "select_last_index", 0) != 0;
  im.define(node, 0, im.add_node(node, PHX_OP_ARGMAX, &params, {negated})[0],
            onnx::TensorProto::INT64);
}

void convert_global_average_pool(Importer& im, const onnx::NodeProto& node) {
  global_pool(im, node, PHX_OP_REDUCE_MEAN);
}

void convert_global_max_pool(Importer& im, const onnx::NodeProto& node) {
  global_pool(im, node, PHX_OP_REDUCE_MAX);
}

// The k largest (or smallest) elements along axis and their indices; k known at import
// (an input from opset 10, an attribute before). Unsorted results (sorted 0) may come in
// any order: they come sorted.
void convert_top_k(Importer& im, const onnx::NodeProto& node) {
  int64_t k = attr_int(node, "k", -1);
  if (im.opset() >= 10) {
    const KnownValue* known = im.known_input(node, 1);
    if (known == nullptr || known->size() != 1)
      im.unsupported(node, "a k that is not one value known at import");
    k = known->int_at(0);
  }
  const phx_value x = im.graph_input(node, 0);
  const phx_value_info vi = im.info(x);
  const uint32_t axis = im.axis(node, attr_int(node, "axis", -1), vi.rank);
  if (vi.shape[axis] == PHX_DIM_DYNAMIC) im.needs_sizes(node, "a TopK along a dynamic dimension");
  if (k == 0) im.unsupported(node, "k = 0 (an empty result)");
  if (k < 0 || k > vi.shape[axis])
    im.invalid(node,
               "k is " + std::to_string(k) + " for an axis of " + std::to_string(vi.shape[axis]));
  phx_top_k_params params = PHX_TOP_K_PARAMS_INIT;
  params.axis = static_cast<int32_t>(axis);
  params.k = static_cast<uint32_t>(k);
  params.largest = attr_int(node, "largest", 1) != 0;
  const std::vector<phx_value> outputs = im.add_node(node, PHX_OP_TOP_K, &params, {x}, 2);
  im.define(node, 0, outputs[0], im.input(node, 0).elem_type);
  im.define(node, 1, outputs[1], onnx::TensorProto::INT64);
}

// 1 at the first largest element along axis, 0 elsewhere: the argmax compared with the
// positions of the axis. Before opset 13 over the dimensions from axis on, flattened.
void convert_hardmax(Importer& im, const onnx::NodeProto& node) {
  const phx_value x = im.graph_input(node, 0);
  const phx_value_info vi = im.info(x);
  const bool flattened = im.opset() < 13;
  uint32_t axis = im.axis(node, attr_int(node, "axis", flattened ? 1 : -1), vi.rank);
  const std::vector<int64_t> dims(vi.shape, vi.shape + vi.rank);
  phx_value in = x;
  std::vector<int64_t> in_dims = dims;
  if (flattened) {
    in_dims = {1, 1};
    for (uint32_t d = 0; d < vi.rank; ++d) {
      if (dims[d] == PHX_DIM_DYNAMIC) im.needs_sizes(node, "flattening a dynamic dimension");
      in_dims[d < axis ? 0 : 1] *= dims[d];
    }
    in = reshape_to(im, node, x, in_dims, "as rows");
    axis = 1;
  }
  const int64_t n = in_dims[axis];
  if (n == PHX_DIM_DYNAMIC) im.needs_sizes(node, "a Hardmax along a dynamic dimension");
  if (n > (int64_t{1} << 24)) im.unsupported(node, "a Hardmax along more than 2^24 elements");
  phx_argmax_params params = PHX_ARGMAX_PARAMS_INIT;
  params.axis = static_cast<int32_t>(axis);
  params.keep_dims = 1;
  const phx_value largest = im.add_node(node, PHX_OP_ARGMAX, &params, {in}, 1, {}, "argmax")[0];
  std::vector<int64_t> position_dims(in_dims.size(), 1), positions(static_cast<size_t>(n));
  position_dims[axis] = n;
  for (int64_t p = 0; p < n; ++p) positions[static_cast<size_t>(p)] = p;
  const phx_value positions_constant =
      index_constant(im, node, position_dims, std::move(positions), "positions");
  const phx_value hot =
      im.add_node(node, PHX_OP_EQUAL, nullptr, {largest, positions_constant}, 1, {}, "hot")[0];
  phx_value y = im.add_node(node, PHX_OP_CAST, nullptr, {hot}, 1, {vi.dtype},
                            flattened ? "as rows" : nullptr)[0];
  if (flattened) y = reshape_to(im, node, y, dims, nullptr);
  im.define(node, 0, y, im.input(node, 0).elem_type);
}

// The running sum along an axis in ceil(log2 n) steps, each adding the partial sums
// shifted by 1, 2, 4, ... (a Hillis-Steele scan): exact for integers, and of floats
// within log2(n) roundings of each sum, on every device. exclusive shifts x by one
// first; reverse scans the reversed axis.
void convert_cum_sum(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* axis_value = im.known_input(node, 1);
  if (axis_value == nullptr || axis_value->size() != 1)
    im.unsupported(node, "an axis that is not one value known at import");
  phx_value y = im.graph_input(node, 0);
  const phx_value_info vi = im.info(y);
  if (vi.rank == 0) im.invalid(node, "x needs rank >= 1");
  const uint32_t axis = im.axis(node, axis_value->int_at(0), vi.rank);
  const int64_t n = vi.shape[axis];
  if (n == PHX_DIM_DYNAMIC) im.needs_sizes(node, "a CumSum along a dynamic dimension");
  auto reversed = [&](phx_value v, const char* suffix) {
    phx_slice_params params = PHX_SLICE_PARAMS_INIT;
    params.starts[axis] = n - 1;
    params.ends[axis] = std::numeric_limits<int64_t>::min();
    params.steps[axis] = -1;
    return im.add_node(node, PHX_OP_SLICE, &params, {v}, 1, {}, suffix)[0];
  };
  // v shifted along the axis by s, zeros coming in (s < n).
  auto shifted = [&](phx_value v, int64_t s, const char* suffix) {
    phx_slice_params head = PHX_SLICE_PARAMS_INIT;
    head.ends[axis] = n - s;
    head.steps[axis] = 1;
    const phx_value kept = im.add_node(node, PHX_OP_SLICE, &head, {v}, 1, {}, suffix)[0];
    phx_pad_params pad = PHX_PAD_PARAMS_INIT;
    pad.begin[axis] = static_cast<uint32_t>(s);
    return im.add_node(node, PHX_OP_PAD, &pad, {kept}, 1, {}, suffix)[0];
  };
  const bool reverse = attr_int(node, "reverse", 0) != 0;
  const bool exclusive = attr_int(node, "exclusive", 0) != 0;
  if (reverse) y = reversed(y, "reversed");
  if (exclusive) {
    if (n == 1) {  // nothing comes before the only element: zeros
      phx_pad_params pad = PHX_PAD_PARAMS_INIT;
      pad.begin[axis] = 1;
      phx_slice_params tail = PHX_SLICE_PARAMS_INIT;
      tail.starts[axis] = 0;
      tail.ends[axis] = 1;
      tail.steps[axis] = 1;
      y = im.add_node(node, PHX_OP_SLICE, &tail,
                      {im.add_node(node, PHX_OP_PAD, &pad, {y}, 1, {}, "zeros")[0]}, 1, {},
                      "zeros")[0];
    } else {
      y = shifted(y, 1, "exclusive");
    }
  }
  for (int64_t s = 1; s < n; s *= 2)
    y = im.add_node(node, PHX_OP_ADD, nullptr, {y, shifted(y, s, "shifted")}, 1, {},
                    "partial sums")[0];
  if (reverse) y = reversed(y, "reversed back");
  if (y == im.graph_input(node, 0)) {
    convert_identity(im, node);
    return;
  }
  im.define(node, 0, y, im.input(node, 0).elem_type);
}

}  // namespace phx::onnx_import
