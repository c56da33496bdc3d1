// Elementwise operators: arithmetic (folded at import when both operands are known
// integers: shape arithmetic), activations, and the ones that pass a value through.
#include <algorithm>
#include <cmath>

#include "attributes.h"
#include "converters.h"
#include "known_ops.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

void binary(Importer& im, const onnx::NodeProto& node, phx_op_id op,
            int64_t (*int_op)(int64_t, int64_t), double (*real_op)(double, double)) {
  const KnownValue* a = im.known_input(node, 0);
  const KnownValue* b = im.known_input(node, 1);
  if (a != nullptr && b != nullptr && a->integral() && b->integral()) {
    if (op == PHX_OP_DIV)
      for (size_t i = 0; i < b->size(); ++i)
        if (b->ints[i] == 0) im.invalid(node, "an integer division by zero");
    im.define_known(node, 0, known_binary(*a, *b, int_op, real_op));
    return;
  }
  const phx_value out =
      im.add_node(node, op, nullptr, {im.graph_input(node, 0), im.graph_input(node, 1)})[0];
  im.define(node, 0, out, im.input(node, 0).elem_type);
}

}  // namespace

void convert_add(Importer& im, const onnx::NodeProto& node) {
  binary(im, node, PHX_OP_ADD, wrapping_add, [](double a, double b) { return a + b; });
}

void convert_sub(Importer& im, const onnx::NodeProto& node) {
  binary(im, node, PHX_OP_SUB, wrapping_sub, [](double a, double b) { return a - b; });
}

void convert_mul(Importer& im, const onnx::NodeProto& node) {
  binary(im, node, PHX_OP_MUL, wrapping_mul, [](double a, double b) { return a * b; });
}

// Integer division truncates, as ONNX's reference (NumPy's division, then astype). The
// div op takes floats: integer operands go through f32 (exact below 2^24), the quotient
// truncated toward zero.
void convert_div(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* a = im.known_input(node, 0);
  const KnownValue* b = im.known_input(node, 1);
  const bool folded = a != nullptr && b != nullptr && a->integral() && b->integral();
  if (!folded && is_integral(im.input(node, 0).elem_type)) {
    const phx_dtype dtype = im.info(im.graph_input(node, 0)).dtype;
    auto f32 = [&](int i, const char* suffix) {
      return im.add_node(node, PHX_OP_CAST, nullptr, {im.graph_input(node, i)}, 1, {PHX_DTYPE_F32},
                         suffix)[0];
    };
    const phx_value q =
        im.add_node(node, PHX_OP_DIV, nullptr, {f32(0, "a f32"), f32(1, "b f32")}, 1, {}, "f32")[0];
    const phx_value down = im.add_node(node, PHX_OP_FLOOR, nullptr, {q}, 1, {}, "floor")[0];
    const phx_value up = im.add_node(node, PHX_OP_CEIL, nullptr, {q}, 1, {}, "ceil")[0];
    KnownValue zero;
    zero.elem_type = onnx::TensorProto::FLOAT;
    zero.reals = {0.0};
    const phx_value negative = im.add_node(
        node, PHX_OP_LESS, nullptr, {q, im.constant(zero, node.name() + " 0")}, 1, {}, "sign")[0];
    const phx_value t =
        im.add_node(node, PHX_OP_WHERE, nullptr, {negative, up, down}, 1, {}, "truncated")[0];
    im.define(node, 0, im.add_node(node, PHX_OP_CAST, nullptr, {t}, 1, {dtype})[0],
              im.input(node, 0).elem_type);
    return;
  }
  binary(im, node, PHX_OP_DIV, wrapping_div, [](double x, double y) { return x / y; });
}

// Mod: fmod 0 (integers only) takes the divisor's sign, as Python's %; fmod 1 takes the
// dividend's, as C's fmod. Known integers are computed at import (the padding arithmetic
// of Swin's windows); values as a - b q, q the quotient rounded down (fmod 0) or toward
// zero (fmod 1), integers through f32 as Div (exact below 2^24).
void convert_mod(Importer& im, const onnx::NodeProto& node) {
  const int64_t fmod = attr_int(node, "fmod", 0);
  if (fmod != 0 && fmod != 1) im.invalid(node, "fmod is " + std::to_string(fmod) + ", not 0 or 1");
  const bool integral = is_integral(im.input(node, 0).elem_type);
  if (fmod == 0 && !integral) im.invalid(node, "fmod 0 on floats (ONNX asks fmod 1 for them)");
  const KnownValue* a = im.known_input(node, 0);
  const KnownValue* b = im.known_input(node, 1);
  if (a != nullptr && b != nullptr && a->integral() && b->integral()) {
    for (size_t i = 0; i < b->size(); ++i)
      if (b->ints[i] == 0) im.invalid(node, "an integer modulo by zero");
    auto truncated = [](int64_t x, int64_t y) { return y == -1 ? 0 : x % y; };
    auto floored = [truncated](int64_t x, int64_t y) {
      const int64_t r = truncated(x, y);
      return r != 0 && (r < 0) != (y < 0) ? r + y : r;
    };
    im.define_known(node, 0,
                    fmod == 1 ? known_binary(*a, *b, truncated,
                                             [](double x, double y) { return std::fmod(x, y); })
                              : known_binary(*a, *b, floored, [](double x, double y) {
                                  return x - y * std::floor(x / y);
                                }));
    return;
  }
  const phx_value x = im.graph_input(node, 0), y = im.graph_input(node, 1);
  const phx_dtype dtype = im.info(x).dtype;
  auto op = [&](phx_op_id id, std::vector<phx_value> inputs, const char* suffix,
                std::vector<phx_dtype> dtypes = {}) {
    return im.add_node(node, id, nullptr, inputs, 1, dtypes, suffix)[0];
  };
  auto real = [&](phx_value v, const char* suffix) {
    return integral ? op(PHX_OP_CAST, {v}, suffix, {PHX_DTYPE_F32}) : v;
  };
  const phx_value q = op(PHX_OP_DIV, {real(x, "a f32"), real(y, "b f32")}, "quotient");
  phx_value rounded = op(PHX_OP_FLOOR, {q}, "floor");
  if (fmod == 1) {
    KnownValue zero;
    zero.elem_type = integral ? onnx::TensorProto::FLOAT : im.input(node, 0).elem_type;
    zero.reals = {0.0};
    const phx_value negative = op(PHX_OP_LESS, {q, im.constant(zero, node.name() + " 0")}, "sign");
    rounded = op(PHX_OP_WHERE, {negative, op(PHX_OP_CEIL, {q}, "ceil"), rounded}, "truncated");
  }
  if (integral) rounded = op(PHX_OP_CAST, {rounded}, "back", {dtype});
  const phx_value product = op(PHX_OP_MUL, {y, rounded}, "product");
  im.define(node, 0, im.add_node(node, PHX_OP_SUB, nullptr, {x, product})[0],
            im.input(node, 0).elem_type);
}

void convert_relu(Importer& im, const onnx::NodeProto& node) {
  im.define(node, 0, im.add_node(node, PHX_OP_RELU, nullptr, {im.graph_input(node, 0)})[0],
            im.input(node, 0).elem_type);
}

// The output is the input: the same value under another name.
void convert_identity(Importer& im, const onnx::NodeProto& node) {
  const Value& in = im.input(node, 0);
  if (in.known != nullptr)
    im.define_known(node, 0, *in.known);
  else
    im.define(node, 0, in.graph, in.elem_type);
}

// Inference: the identity; the mask output, when asked for, is all true. Training mode
// with a ratio of 0 is the identity too (torchvision's Swin calls dropout so).
void convert_dropout(Importer& im, const onnx::NodeProto& node) {
  if (im.opset() >= 12 && im.has_input(node, 2)) {
    const KnownValue* training = im.known_input(node, 2);
    const KnownValue* ratio = im.has_input(node, 1) ? im.known_input(node, 1) : nullptr;
    const bool identity = training != nullptr && (training->int_at(0) == 0 ||
                                                  (ratio != nullptr && ratio->real_at(0) == 0));
    if (!identity)
      im.unsupported(node, "training mode with a ratio above 0 is not taken (inference only)");
  }
  convert_identity(im, node);
  if (node.output_size() > 1 && !node.output(1).empty()) {
    const Value& in = im.input(node, 0);
    std::vector<int64_t> dims;
    if (in.known != nullptr) {
      dims = in.known->dims;
    } else {
      const phx_value_info vi = im.info(in.graph);
      dims.assign(vi.shape, vi.shape + vi.rank);
    }
    for (int64_t d : dims)
      if (d == PHX_DIM_DYNAMIC) im.needs_sizes(node, "the mask of a dynamic shape");
    const size_t n = static_cast<size_t>(element_count(dims, im.describe(node)));
    if (n <= kMaxKnownElements) {
      im.define_known(node, 1,
                      known_ints(onnx::TensorProto::BOOL, dims, std::vector<int64_t>(n, 1)));
      return;
    }
    // A bigger one: a true expanded by a node, which the compile removes when no output
    // needs it (exporters name the mask that nothing reads).
    phx_reshape_params params{};
    params.struct_size = sizeof params;
    params.rank = static_cast<uint32_t>(dims.size());
    std::copy(dims.begin(), dims.end(), params.shape);
    const phx_value one =
        im.constant(known_ints(onnx::TensorProto::BOOL, {1}, {1}), node.name() + " true");
    im.define(node, 1, im.add_node(node, PHX_OP_EXPAND, &params, {one}, 1, {}, "mask")[0],
              onnx::TensorProto::BOOL);
  }
}

namespace {

void cast_to(Importer& im, const onnx::NodeProto& node, int32_t to) {
  const phx_dtype dtype = dtype_of(to);
  if (dtype == PHX_DTYPE_INVALID)
    im.unsupported(node, "casting to " + elem_type_name(to) + " is not taken");
  const Value& in = im.input(node, 0);
  if (in.known != nullptr && in.known->integral() && is_integral(to)) {
    KnownValue k = *in.known;
    k.elem_type = to;
    if (to == onnx::TensorProto::BOOL)
      for (auto& v : k.ints) v = v != 0 ? 1 : 0;
    im.define_known(node, 0, std::move(k));
    return;
  }
  const phx_value x = im.graph_input(node, 0);
  if (to == onnx::TensorProto::BOOL && in.elem_type != onnx::TensorProto::BOOL) {
    // x != 0, as 0 or 1 (NaN is true, as in ONNX).
    KnownValue zero;
    zero.elem_type = in.elem_type;
    if (is_integral(in.elem_type))
      zero.ints = {0};
    else
      zero.reals = {0.0};
    const phx_value equal = im.add_node(
        node, PHX_OP_EQUAL, nullptr, {x, im.constant(zero, node.name() + " 0")}, 1, {}, "== 0")[0];
    im.define(node, 0, im.add_node(node, PHX_OP_NOT, nullptr, {equal})[0], to);
    return;
  }
  im.define(node, 0, im.add_node(node, PHX_OP_CAST, nullptr, {x}, 1, {dtype})[0], to);
}

}  // namespace

void convert_cast(Importer& im, const onnx::NodeProto& node) {
  cast_to(im, node, static_cast<int32_t>(attr_int(node, "to", 0)));
}

// A cast to the element type of input 1.
void convert_cast_like(Importer& im, const onnx::NodeProto& node) {
  cast_to(im, node, im.input(node, 1).elem_type);
}

}  // namespace phx::onnx_import
