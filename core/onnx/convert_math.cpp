// Elementwise math onto the op table's unary, binary and comparison ops: activations,
// functions, comparisons and selections; several inputs (Max, Min, Sum) become a chain.
// Comparisons and selections of known integers are computed at import (shape logic).
#include <cfloat>
#include <cmath>

#include "attributes.h"
#include "converters.h"
#include "known_ops.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

void unary(Importer& im, const onnx::NodeProto& node, phx_op_id op, const void* params = nullptr) {
  im.define(node, 0, im.add_node(node, op, params, {im.graph_input(node, 0)})[0],
            im.input(node, 0).elem_type);
}

// f of each element of a known integer input 0 (shape arithmetic); false otherwise.
bool fold_integers(Importer& im, const onnx::NodeProto& node, int64_t (*f)(int64_t)) {
  const KnownValue* x = im.known_input(node, 0);
  if (x == nullptr || !x->integral()) return false;
  KnownValue k = *x;
  for (auto& v : k.ints) v = f(v);
  im.define_known(node, 0, std::move(k));
  return true;
}

void with_alpha_beta(Importer& im, const onnx::NodeProto& node, phx_op_id op, float alpha,
                     float beta) {
  const phx_elementwise_params params = PHX_ELEMENTWISE_PARAMS_INIT(alpha, beta);
  unary(im, node, op, &params);
}

// A binary op over inputs 0 and 1; with more inputs (Max, Min, Sum), a chain.
void chain(Importer& im, const onnx::NodeProto& node, phx_op_id op, int32_t elem_type) {
  phx_value acc = im.graph_input(node, 0);
  for (int i = 1; i < node.input_size(); ++i)
    acc = im.add_node(node, op, nullptr, {acc, im.graph_input(node, i)}, 1, {},
                      i + 1 < node.input_size() ? "chain" : nullptr)[0];
  if (node.input_size() == 1) {  // one input: its value
    convert_identity(im, node);
    return;
  }
  im.define(node, 0, acc, elem_type);
}

// A comparison: computed at import for known integers, else an op with a u8 output.
void compare(Importer& im, const onnx::NodeProto& node, phx_op_id op,
             bool (*known_op)(int64_t, int64_t), bool negate = false) {
  const KnownValue* a = im.known_input(node, 0);
  const KnownValue* b = im.known_input(node, 1);
  if (a != nullptr && b != nullptr && a->integral() && b->integral()) {
    KnownValue k = known_binary(
        *a, *b, [&](int64_t x, int64_t y) -> int64_t { return known_op(x, y) != negate; },
        [](double, double) { return 0.0; }, onnx::TensorProto::BOOL);
    im.define_known(node, 0, std::move(k));
    return;
  }
  phx_value y = im.add_node(node, op, nullptr, {im.graph_input(node, 0), im.graph_input(node, 1)},
                            1, {}, negate ? "before not" : nullptr)[0];
  if (negate) y = im.add_node(node, PHX_OP_NOT, nullptr, {y})[0];
  im.define(node, 0, y, onnx::TensorProto::BOOL);
}

}  // namespace

void convert_sigmoid(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_SIGMOID); }
void convert_tanh(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_TANH); }
void convert_exp(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_EXP); }
void convert_log(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_LOG); }
void convert_sqrt(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_SQRT); }
void convert_neg(Importer& im, const onnx::NodeProto& n) {
  if (!fold_integers(im, n, [](int64_t v) { return wrapping_sub(0, v); })) unary(im, n, PHX_OP_NEG);
}
void convert_abs(Importer& im, const onnx::NodeProto& n) {
  if (!fold_integers(im, n, [](int64_t v) { return v < 0 ? wrapping_sub(0, v) : v; }))
    unary(im, n, PHX_OP_ABS);
}
void convert_erf(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_ERF); }
void convert_floor(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_FLOOR); }
void convert_ceil(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_CEIL); }
void convert_reciprocal(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_RECIPROCAL); }
void convert_sign(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_SIGN); }
void convert_softplus(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_SOFTPLUS); }

void convert_not(Importer& im, const onnx::NodeProto& node) {
  if (const KnownValue* x = im.known_input(node, 0)) {
    KnownValue k = *x;
    for (auto& v : k.ints) v = v == 0 ? 1 : 0;
    im.define_known(node, 0, std::move(k));
    return;
  }
  unary(im, node, PHX_OP_NOT);
}

void convert_leaky_relu(Importer& im, const onnx::NodeProto& node) {
  with_alpha_beta(im, node, PHX_OP_LEAKY_RELU, attr_float(node, "alpha", 0.01f), 0.0f);
}

void convert_elu(Importer& im, const onnx::NodeProto& node) {
  with_alpha_beta(im, node, PHX_OP_ELU, attr_float(node, "alpha", 1.0f), 0.0f);
}

void convert_selu(Importer& im, const onnx::NodeProto& node) {
  with_alpha_beta(im, node, PHX_OP_SELU, attr_float(node, "alpha", 1.67326319217681884765625f),
                  attr_float(node, "gamma", 1.05070102214813232421875f));
}

void convert_hard_sigmoid(Importer& im, const onnx::NodeProto& node) {
  with_alpha_beta(im, node, PHX_OP_HARD_SIGMOID, attr_float(node, "alpha", 0.2f),
                  attr_float(node, "beta", 0.5f));
}

void convert_hard_swish(Importer& im, const onnx::NodeProto& node) {
  unary(im, node, PHX_OP_HARD_SWISH);
}

void convert_sin(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_SIN); }
void convert_cos(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_COS); }
void convert_round(Importer& im, const onnx::NodeProto& n) { unary(im, n, PHX_OP_ROUND); }

// Celu: max(0, x) + min(0, alpha (e^(x / alpha) - 1)), ONNX's definition, as elu of
// x / alpha scaled by alpha for the negative side (alpha 1: elu itself). A positive x
// comes out exactly.
void convert_celu(Importer& im, const onnx::NodeProto& node) {
  if (is_integral(im.input(node, 0).elem_type)) im.invalid(node, "the input must be a float");
  const float alpha = attr_float(node, "alpha", 1.0f);
  if (alpha == 0.0f || !std::isfinite(alpha)) im.invalid(node, "alpha must be finite and not 0");
  if (alpha == 1.0f) {
    with_alpha_beta(im, node, PHX_OP_ELU, 1.0f, 0.0f);
    return;
  }
  const phx_value x = im.graph_input(node, 0);
  const phx_value alpha_value = im.scalar_constant(node, alpha, "alpha");
  const phx_value zero_value = im.scalar_constant(node, 0.0, "0");
  auto op = [&](phx_op_id id, std::vector<phx_value> inputs, const void* params,
                const char* suffix) {
    return im.add_node(node, id, params, inputs, 1, {}, suffix)[0];
  };
  const phx_elementwise_params unit = PHX_ELEMENTWISE_PARAMS_INIT(1.0f, 0.0f);
  const phx_value scaled = op(PHX_OP_DIV, {x, alpha_value}, nullptr, "x / alpha");
  const phx_value elu = op(PHX_OP_ELU, {scaled}, &unit, "elu");
  const phx_value negative =
      op(PHX_OP_MIN, {op(PHX_OP_MUL, {elu, alpha_value}, nullptr, "alpha elu"), zero_value},
         nullptr, "negative side");
  const phx_value positive = op(PHX_OP_RELU, {x}, nullptr, "positive side");
  im.define(node, 0, im.add_node(node, PHX_OP_ADD, nullptr, {positive, negative})[0],
            im.input(node, 0).elem_type);
}

// IsNaN: x != x, the one value unequal to itself.
void convert_is_nan(Importer& im, const onnx::NodeProto& node) {
  if (is_integral(im.input(node, 0).elem_type)) im.invalid(node, "the input must be a float");
  const phx_value x = im.graph_input(node, 0);
  const phx_value same = im.add_node(node, PHX_OP_EQUAL, nullptr, {x, x}, 1, {}, "x == x")[0];
  im.define(node, 0, im.add_node(node, PHX_OP_NOT, nullptr, {same})[0], onnx::TensorProto::BOOL);
}

// IsInf: |x| == inf (both signs), x == inf or x == -inf (one), or x < -inf, false
// everywhere (neither).
void convert_is_inf(Importer& im, const onnx::NodeProto& node) {
  const bool negative = attr_int(node, "detect_negative", 1) != 0;
  const bool positive = attr_int(node, "detect_positive", 1) != 0;
  if (is_integral(im.input(node, 0).elem_type)) im.invalid(node, "the input must be a float");
  phx_value x = im.graph_input(node, 0);
  phx_op_id compare_op = PHX_OP_EQUAL;
  if (negative && positive) {
    x = im.add_node(node, PHX_OP_ABS, nullptr, {x}, 1, {}, "abs")[0];
  } else if (!negative && !positive) {
    compare_op = PHX_OP_LESS;
  }
  const phx_value bound = im.scalar_constant(node, positive ? INFINITY : -INFINITY, "infinity");
  im.define(node, 0, im.add_node(node, compare_op, nullptr, {x, bound})[0],
            onnx::TensorProto::BOOL);
}

// The bounds: attributes before opset 11, optional inputs known at import from it on.
void convert_clip(Importer& im, const onnx::NodeProto& node) {
  float low = -FLT_MAX, high = FLT_MAX;
  if (im.opset() < 11) {
    low = attr_float(node, "min", low);
    high = attr_float(node, "max", high);
  } else {
    for (int i : {1, 2}) {
      if (!im.has_input(node, i)) continue;
      const KnownValue* bound = im.known_input(node, i);
      if (bound == nullptr) im.unsupported(node, "bounds computed at run time are not taken");
      (i == 1 ? low : high) = static_cast<float>(bound->real_at(0));
    }
  }
  with_alpha_beta(im, node, PHX_OP_CLIP, low, high);
}

// pow computes in floats: integer operands go through f32 (exact while the powers stay
// below 2^24), and an exponent of another type than the base is cast to the base's.
void convert_pow(Importer& im, const onnx::NodeProto& node) {
  phx_value base = im.graph_input(node, 0), exponent = im.graph_input(node, 1);
  const phx_dtype base_dtype = im.info(base).dtype;
  const bool integral = is_integral(im.input(node, 0).elem_type);
  const phx_dtype compute = integral ? PHX_DTYPE_F32 : base_dtype;
  if (integral) base = im.add_node(node, PHX_OP_CAST, nullptr, {base}, 1, {compute}, "base")[0];
  if (im.info(exponent).dtype != compute)
    exponent = im.add_node(node, PHX_OP_CAST, nullptr, {exponent}, 1, {compute}, "exponent")[0];
  phx_value y = im.add_node(node, PHX_OP_POW, nullptr, {base, exponent}, 1, {},
                            integral ? "f32" : nullptr)[0];
  if (integral) y = im.add_node(node, PHX_OP_CAST, nullptr, {y}, 1, {base_dtype})[0];
  im.define(node, 0, y, im.input(node, 0).elem_type);
}

void convert_max(Importer& im, const onnx::NodeProto& node) {
  chain(im, node, PHX_OP_MAX, im.input(node, 0).elem_type);
}

void convert_min(Importer& im, const onnx::NodeProto& node) {
  chain(im, node, PHX_OP_MIN, im.input(node, 0).elem_type);
}

void convert_sum(Importer& im, const onnx::NodeProto& node) {
  chain(im, node, PHX_OP_ADD, im.input(node, 0).elem_type);
}

void convert_prelu(Importer& im, const onnx::NodeProto& node) {
  const phx_value x = im.graph_input(node, 0);
  phx_value slope = im.graph_input(node, 1);
  // Before opset 7 a slope of one dimension held one value per channel (dimension 1),
  // where numpy broadcasting, taken since, lines it up with the last dimension.
  const phx_value_info x_info = im.info(x), slope_info = im.info(slope);
  if (im.model_opset() < 7 && slope_info.rank == 1 && x_info.rank >= 2 &&
      slope_info.shape[0] == x_info.shape[1] && slope_info.shape[0] != 1) {
    std::vector<int64_t> per_channel(x_info.rank - 1, 1);
    per_channel[0] = slope_info.shape[0];
    slope = reshape_to(im, node, slope, per_channel, "slope");
  }
  im.define(node, 0, im.add_node(node, PHX_OP_PRELU, nullptr, {x, slope})[0],
            im.input(node, 0).elem_type);
}

void convert_equal(Importer& im, const onnx::NodeProto& node) {
  compare(im, node, PHX_OP_EQUAL, [](int64_t a, int64_t b) { return a == b; });
}

void convert_less(Importer& im, const onnx::NodeProto& node) {
  compare(im, node, PHX_OP_LESS, [](int64_t a, int64_t b) { return a < b; });
}

void convert_greater(Importer& im, const onnx::NodeProto& node) {
  compare(im, node, PHX_OP_GREATER, [](int64_t a, int64_t b) { return a > b; });
}

// a <= b is not a > b (no NaN among integers; for floats NaN compares false both ways,
// which ONNX's reference also gives as false for <=: the negation differs only there).
void convert_less_or_equal(Importer& im, const onnx::NodeProto& node) {
  compare(
      im, node, PHX_OP_GREATER, [](int64_t a, int64_t b) { return a > b; }, true);
}

void convert_greater_or_equal(Importer& im, const onnx::NodeProto& node) {
  compare(
      im, node, PHX_OP_LESS, [](int64_t a, int64_t b) { return a < b; }, true);
}

void convert_where(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* c = im.known_input(node, 0);
  const KnownValue* a = im.known_input(node, 1);
  const KnownValue* b = im.known_input(node, 2);
  if (c != nullptr && a != nullptr && b != nullptr && a->integral() && b->integral()) {
    im.define_known(node, 0, known_where(*c, *a, *b));
    return;
  }
  im.define(
      node, 0,
      im.add_node(node, PHX_OP_WHERE, nullptr,
                  {im.graph_input(node, 0), im.graph_input(node, 1), im.graph_input(node, 2)})[0],
      im.input(node, 1).elem_type);
}

// Trilu: the upper (upper 1, the default) or lower triangle of the last two dimensions
// from diagonal k (input 1, known; 0 when left out), the rest zero. A known value stays
// known (the causal mask a decoder builds with torch.triu); a graph value with static last
// two dimensions becomes where(the triangle, known, x, 0).
void convert_trilu(Importer& im, const onnx::NodeProto& node) {
  const bool upper = attr_int(node, "upper", 1) != 0;
  int64_t k = 0;
  if (im.has_input(node, 1)) {
    const KnownValue* diagonal = im.known_input(node, 1);
    if (diagonal == nullptr || diagonal->size() != 1)
      im.unsupported(node, "k must be one value known at import");
    k = diagonal->int_at(0);
  }
  const KnownValue* known = im.known_input(node, 0);
  std::vector<int64_t> dims;
  if (known != nullptr) {
    dims = known->dims;
  } else {
    const phx_value_info vi = im.info(im.graph_input(node, 0));
    dims.assign(vi.shape, vi.shape + vi.rank);
  }
  if (dims.size() < 2) im.invalid(node, "x needs rank >= 2");
  const int64_t rows = dims[dims.size() - 2], columns = dims.back();
  if (rows == PHX_DIM_DYNAMIC || columns == PHX_DIM_DYNAMIC)
    im.needs_sizes(node, "a triangle of a dynamic dimension");
  // k is the model's: compared, never computed with, so any value is safe.
  auto kept = [&](int64_t e) {
    const int64_t i = e / columns % rows, j = e % columns;
    return upper ? j - i >= k : j - i <= k;
  };
  if (known != nullptr) {
    KnownValue out = *known;
    for (size_t e = 0; e < out.size(); ++e)
      if (!kept(static_cast<int64_t>(e))) (out.integral() ? out.ints[e] = 0 : out.reals[e] = 0);
    im.define_known(node, 0, std::move(out));
    return;
  }
  // The mask is built as int64 at import, then kept as a constant of a byte per element:
  // up to 2^22 elements (a causal mask of 2,048 positions: 32 MiB while importing);
  // a model asking more is refused before anything is allocated.
  const int64_t count = element_count({rows, columns}, im.describe(node));
  if (count > (int64_t{1} << 22)) im.unsupported(node, "a triangle of more than 2^22 elements");
  std::vector<int64_t> triangle(static_cast<size_t>(count));
  for (size_t e = 0; e < triangle.size(); ++e) triangle[e] = kept(static_cast<int64_t>(e)) ? 1 : 0;
  KnownValue zero;
  zero.elem_type = im.input(node, 0).elem_type;
  zero.dims = {1};
  if (is_integral(zero.elem_type))
    zero.ints = {0};
  else
    zero.reals = {0.0};
  const phx_value mask =
      im.constant(known_ints(onnx::TensorProto::BOOL, {rows, columns}, std::move(triangle)),
                  node.name() + " triangle");
  im.define(node, 0,
            im.add_node(node, PHX_OP_WHERE, nullptr,
                        {mask, im.graph_input(node, 0), im.constant(zero, node.name() + " 0")})[0],
            im.input(node, 0).elem_type);
}

// Booleans are u8 0 or 1: and is their min, or their max, xor their inequality.
void convert_and(Importer& im, const onnx::NodeProto& node) {
  chain(im, node, PHX_OP_MIN, onnx::TensorProto::BOOL);
}

void convert_or(Importer& im, const onnx::NodeProto& node) {
  chain(im, node, PHX_OP_MAX, onnx::TensorProto::BOOL);
}

void convert_xor(Importer& im, const onnx::NodeProto& node) {
  compare(
      im, node, PHX_OP_EQUAL, [](int64_t a, int64_t b) { return a == b; }, true);
}

// The sum of the inputs times 1/n.
void convert_mean(Importer& im, const onnx::NodeProto& node) {
  if (node.input_size() == 1) {
    convert_identity(im, node);
    return;
  }
  phx_value sum = im.graph_input(node, 0);
  for (int i = 1; i < node.input_size(); ++i)
    sum = im.add_node(node, PHX_OP_ADD, nullptr, {sum, im.graph_input(node, i)}, 1, {}, "sum")[0];
  KnownValue share;
  share.elem_type = im.input(node, 0).elem_type;
  share.reals = {1.0 / node.input_size()};
  const phx_value factor = im.constant(share, node.name() + " 1/n");
  im.define(node, 0, im.add_node(node, PHX_OP_MUL, nullptr, {sum, factor})[0],
            im.input(node, 0).elem_type);
}

}  // namespace phx::onnx_import
