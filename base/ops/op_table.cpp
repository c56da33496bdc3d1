#include <phx/op_table.h>

#include <initializer_list>
#include <limits>

namespace phx {
namespace {

constexpr uint32_t optional(std::initializer_list<int> inputs) {
  uint32_t bits = 0;
  for (int i : inputs) bits |= 1u << i;
  return bits;
}

// qmatmul and qconv2d: their two operands, then the quantization of each and of the
// output (docs/ops.md, "Quantized ops").
constexpr OpSchema quantized_product(phx_op_id op, const char* name, const char* first,
                                     const char* second, ParamsKind params, ShapeRule shape_rule,
                                     const char* summary) {
  return {.op = op,
          .name = name,
          .inputs = {first, second, "a_scale", "a_zero_point", "b_scale", "b_zero_point", "bias",
                     "y_scale", "y_zero_point"},
          .optional_inputs = optional({3, 5, 6, 7, 8}),
          .outputs = {"y"},
          .params = params,
          .dtypes = kQuantizedDtypes,
          .dtype_rule = DtypeRule::quantized_product,
          .shape_rule = shape_rule,
          .summary = summary};
}

constexpr OpSchema binary(phx_op_id op, const char* name, uint32_t dtypes, const char* summary) {
  return {.op = op,
          .name = name,
          .inputs = {"a", "b"},
          .outputs = {"y"},
          .dtypes = dtypes,
          .shape_rule = ShapeRule::broadcast,
          .summary = summary};
}

constexpr OpSchema unary(phx_op_id op, const char* name, uint32_t dtypes, const char* summary,
                         ParamsKind params = ParamsKind::none) {
  return {.op = op,
          .name = name,
          .inputs = {"x"},
          .outputs = {"y"},
          .params = params,
          .dtypes = dtypes,
          .summary = summary};
}

// A unary op taking phx_elementwise_params, with its own defaults for null params.
constexpr OpSchema scalar_parameterized(phx_op_id op, const char* name, uint32_t dtypes,
                                        const char* summary,
                                        const phx_elementwise_params* defaults) {
  OpSchema schema = unary(op, name, dtypes, summary, ParamsKind::elementwise);
  schema.default_params = defaults;
  return schema;
}

constexpr float kFloatMax = std::numeric_limits<float>::max();
constexpr phx_elementwise_params kLeakyReluDefaults PHX_ELEMENTWISE_PARAMS_INIT(0.01f, 0.0f);
constexpr phx_elementwise_params kEluDefaults PHX_ELEMENTWISE_PARAMS_INIT(1.0f, 0.0f);
// ONNX's Selu: the constants of Klambauer et al., rounded to f32.
constexpr phx_elementwise_params kSeluDefaults
    PHX_ELEMENTWISE_PARAMS_INIT(1.67326319217681884765625f, 1.05070102214813232421875f);
constexpr phx_elementwise_params kClipDefaults PHX_ELEMENTWISE_PARAMS_INIT(-kFloatMax, kFloatMax);
constexpr phx_elementwise_params kHardSigmoidDefaults PHX_ELEMENTWISE_PARAMS_INIT(0.2f, 0.5f);

// equal, less, greater: a u8 0 or 1 per element of the broadcast shape.
constexpr OpSchema comparison(phx_op_id op, const char* name, const char* summary) {
  OpSchema schema = binary(op, name, kAllDtypes, summary);
  schema.dtype_rule = DtypeRule::compare;
  return schema;
}

constexpr OpSchema reduction(phx_op_id op, const char* name, uint32_t dtypes, const char* summary) {
  return {.op = op,
          .name = name,
          .inputs = {"x"},
          .outputs = {"y"},
          .params = ParamsKind::reduce,
          .dtypes = dtypes,
          .shape_rule = ShapeRule::reduce,
          .summary = summary};
}

constexpr uint32_t kU8 = PHX_DTYPE_BIT(PHX_DTYPE_U8);

constexpr OpSchema kOps[] = {
    {.op = PHX_OP_MATMUL,
     .name = "matmul",
     .inputs = {"a", "b", "bias"},
     .optional_inputs = optional({2}),
     .outputs = {"y"},
     .params = ParamsKind::matmul,
     .dtypes = kFloatDtypes,
     .dtype_rule = DtypeRule::matmul,
     .shape_rule = ShapeRule::matmul,
     .summary = "activation(a @ b + bias), either operand transposed, batch dimensions "
                "broadcast, f32 accumulation"},
    binary(PHX_OP_ADD, "add", kAllDtypes, "a + b, broadcast; integers wrap around"),
    binary(PHX_OP_SUB, "sub", kAllDtypes, "a - b, broadcast; integers wrap around"),
    binary(PHX_OP_MUL, "mul", kAllDtypes, "a * b, broadcast; integers wrap around"),
    binary(PHX_OP_DIV, "div", kFloatDtypes, "a / b, broadcast"),
    unary(PHX_OP_RELU, "relu", kFloatDtypes | kSignedIntDtypes, "max(x, 0)"),
    unary(PHX_OP_GELU, "gelu", kFloatDtypes, "x (1 + erf(x / sqrt 2)) / 2, the exact form"),
    unary(PHX_OP_SILU, "silu", kFloatDtypes, "x / (1 + e^-x)"),
    {.op = PHX_OP_SOFTMAX,
     .name = "softmax",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::softmax,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::softmax,
     .summary = "softmax along one axis, sums in f32"},
    {.op = PHX_OP_LAYER_NORM,
     .name = "layer_norm",
     .inputs = {"x", "gamma", "beta"},
     .optional_inputs = optional({1, 2}),
     .outputs = {"y"},
     .params = ParamsKind::norm,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::norm,
     .summary = "(x - mean) / sqrt(variance + epsilon) * gamma + beta over the last dimension"},
    {.op = PHX_OP_RMS_NORM,
     .name = "rms_norm",
     .inputs = {"x", "gamma"},
     .optional_inputs = optional({1}),
     .outputs = {"y"},
     .params = ParamsKind::norm,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::norm,
     .summary = "x / sqrt(mean(x^2) + epsilon) * gamma over the last dimension"},
    {.op = PHX_OP_TRANSPOSE,
     .name = "transpose",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::transpose,
     .dtypes = kAllDtypes,
     .shape_rule = ShapeRule::transpose,
     .summary = "the dimensions of x permuted (reversed by default)"},
    reduction(PHX_OP_REDUCE_SUM, "reduce_sum", kAllDtypes,
              "the sum over the axes; f32 sums for floats"),
    reduction(PHX_OP_REDUCE_MAX, "reduce_max", kAllDtypes, "the largest value over the axes"),
    {.op = PHX_OP_CAST,
     .name = "cast",
     .inputs = {"x"},
     .outputs = {"y"},
     .dtypes = kAllDtypes,
     .dtype_rule = DtypeRule::cast,
     .summary = "x converted to the output's dtype, rounded once"},
    {.op = PHX_OP_CONV2D,
     .name = "conv2d",
     .inputs = {"x", "weight", "bias"},
     .optional_inputs = optional({2}),
     .outputs = {"y"},
     .params = ParamsKind::conv2d,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::conv2d,
     .summary = "2-D convolution, NCHW or NHWC, with stride, padding, dilation, groups and "
                "a fused activation"},
    {.op = PHX_OP_ATTENTION,
     .name = "attention",
     .inputs = {"q", "k", "v"},
     .outputs = {"y"},
     .params = ParamsKind::attention,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::attention,
     .summary = "softmax(scale q k^T + mask) v per head, grouped-query heads, softmax in f32"},
    {.op = PHX_OP_ROPE,
     .name = "rope",
     .inputs = {"x", "cos", "sin"},
     .outputs = {"y"},
     .params = ParamsKind::rope,
     .dtypes = kFloatDtypes,
     .dtype_rule = DtypeRule::rope,
     .shape_rule = ShapeRule::rope,
     .summary = "rotary position embedding from a table of cosines and sines"},
    {.op = PHX_OP_QUANTIZE,
     .name = "quantize",
     .inputs = {"x", "scale", "zero_point"},
     .optional_inputs = optional({2}),
     .outputs = {"y"},
     .params = ParamsKind::quantize,
     .dtypes = PHX_DTYPE_BIT(PHX_DTYPE_F32),
     .dtype_rule = DtypeRule::quantize,
     .shape_rule = ShapeRule::quantize,
     .summary = "saturate(round_half_even(x / scale) + zero_point), per tensor or channel"},
    {.op = PHX_OP_DEQUANTIZE,
     .name = "dequantize",
     .inputs = {"q", "scale", "zero_point"},
     .optional_inputs = optional({2}),
     .outputs = {"y"},
     .params = ParamsKind::quantize,
     .dtypes = kQuantizedDtypes | PHX_DTYPE_BIT(PHX_DTYPE_I32),
     .dtype_rule = DtypeRule::dequantize,
     .shape_rule = ShapeRule::quantize,
     .summary = "(q - zero_point) * scale, per tensor or channel"},
    quantized_product(PHX_OP_QMATMUL, "qmatmul", "a", "b", ParamsKind::matmul, ShapeRule::qmatmul,
                      "integer matmul with integer accumulation; the output requantized, raw "
                      "i32 or f32"),
    quantized_product(PHX_OP_QCONV2D, "qconv2d", "x", "weight", ParamsKind::conv2d,
                      ShapeRule::qconv2d, "integer conv2d, the inputs and output as for qmatmul"),
    {.op = PHX_OP_DYNAMIC_QUANTIZE,
     .name = "dynamic_quantize",
     .inputs = {"x"},
     .outputs = {"y", "y_scale", "y_zero_point"},
     .dtypes = PHX_DTYPE_BIT(PHX_DTYPE_F32),
     .dtype_rule = DtypeRule::dynamic_quantize,
     .shape_rule = ShapeRule::dynamic_quantize,
     .summary = "quantization per tensor with the scale and zero point taken from x's range"},
    unary(PHX_OP_SIGMOID, "sigmoid", kFloatDtypes, "1 / (1 + e^-x)"),
    unary(PHX_OP_TANH, "tanh", kFloatDtypes, "tanh(x)"),
    unary(PHX_OP_EXP, "exp", kFloatDtypes, "e^x"),
    unary(PHX_OP_LOG, "log", kFloatDtypes, "the natural logarithm of x"),
    unary(PHX_OP_SQRT, "sqrt", kFloatDtypes, "the square root of x"),
    unary(PHX_OP_NEG, "neg", kFloatDtypes | kSignedIntDtypes, "-x; integers wrap around"),
    unary(PHX_OP_ABS, "abs", kFloatDtypes | kSignedIntDtypes,
          "the absolute value of x; integers wrap around"),
    unary(PHX_OP_ERF, "erf", kFloatDtypes, "the error function of x"),
    unary(PHX_OP_FLOOR, "floor", kFloatDtypes, "the largest integer not above x"),
    unary(PHX_OP_CEIL, "ceil", kFloatDtypes, "the smallest integer not below x"),
    unary(PHX_OP_RECIPROCAL, "reciprocal", kFloatDtypes, "1 / x"),
    unary(PHX_OP_SIGN, "sign", kFloatDtypes | kSignedIntDtypes, "-1, 0 or 1 as x's sign"),
    unary(PHX_OP_SOFTPLUS, "softplus", kFloatDtypes, "log(1 + e^x), without overflow"),
    scalar_parameterized(PHX_OP_LEAKY_RELU, "leaky_relu", kFloatDtypes, "x < 0 ? alpha x : x",
                         &kLeakyReluDefaults),
    scalar_parameterized(PHX_OP_ELU, "elu", kFloatDtypes, "x < 0 ? alpha (e^x - 1) : x",
                         &kEluDefaults),
    scalar_parameterized(PHX_OP_SELU, "selu", kFloatDtypes, "beta (x <= 0 ? alpha (e^x - 1) : x)",
                         &kSeluDefaults),
    scalar_parameterized(PHX_OP_CLIP, "clip", kAllDtypes, "min(max(x, alpha), beta)",
                         &kClipDefaults),
    binary(PHX_OP_POW, "pow", kFloatDtypes, "a^b, broadcast"),
    binary(PHX_OP_MAX, "max", kAllDtypes, "the larger of a and b, broadcast; NaN if either is"),
    binary(PHX_OP_MIN, "min", kAllDtypes, "the smaller of a and b, broadcast; NaN if either is"),
    {.op = PHX_OP_PRELU,
     .name = "prelu",
     .inputs = {"x", "slope"},
     .outputs = {"y"},
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::broadcast_to_first,
     .summary = "x < 0 ? slope x : x, slope broadcast to x"},
    comparison(PHX_OP_EQUAL, "equal", "a == b as u8 0 or 1, broadcast"),
    comparison(PHX_OP_LESS, "less", "a < b as u8 0 or 1, broadcast"),
    comparison(PHX_OP_GREATER, "greater", "a > b as u8 0 or 1, broadcast"),
    {.op = PHX_OP_WHERE,
     .name = "where",
     .inputs = {"cond", "a", "b"},
     .outputs = {"y"},
     .dtypes = kU8,
     .dtype_rule = DtypeRule::where,
     .shape_rule = ShapeRule::where,
     .summary = "cond != 0 ? a : b, the three broadcast"},
    unary(PHX_OP_NOT, "not", kU8, "x == 0 ? 1 : 0"),
    reduction(PHX_OP_REDUCE_MEAN, "reduce_mean", kFloatDtypes, "the mean over the axes; f32 sums"),
    reduction(PHX_OP_REDUCE_MIN, "reduce_min", kAllDtypes, "the smallest value over the axes"),
    reduction(PHX_OP_REDUCE_PROD, "reduce_prod", kFloatDtypes | kSignedIntDtypes,
              "the product over the axes; f32 products for floats, integers wrap around"),
    {.op = PHX_OP_ARGMAX,
     .name = "argmax",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::argmax,
     .dtypes = kAllDtypes,
     .dtype_rule = DtypeRule::index,
     .shape_rule = ShapeRule::argmax,
     .summary = "the i32 index of the largest value along an axis; ties give the first"},
    {.op = PHX_OP_LOG_SOFTMAX,
     .name = "log_softmax",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::softmax,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::softmax,
     .summary = "x - max - log(sum e^(x - max)) along one axis, sums in f32"},
    {.op = PHX_OP_BATCH_NORM,
     .name = "batch_norm",
     .inputs = {"x", "scale", "bias", "mean", "var"},
     .outputs = {"y"},
     .params = ParamsKind::norm,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::batch_norm,
     .summary = "(x - mean) / sqrt(var + epsilon) * scale + bias per channel (dimension 1)"},
    {.op = PHX_OP_INSTANCE_NORM,
     .name = "instance_norm",
     .inputs = {"x", "scale", "bias"},
     .outputs = {"y"},
     .params = ParamsKind::norm,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::instance_norm,
     .summary = "each (n, c) normalized over the spatial dimensions, * scale + bias"},
    {.op = PHX_OP_RESHAPE,
     .name = "reshape",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::reshape,
     .params_required = true,
     .dtypes = kAllDtypes,
     .shape_rule = ShapeRule::reshape,
     .summary = "x's elements in another shape (0 copies a dimension, -1 is inferred)"},
    {.op = PHX_OP_CONCAT,
     .name = "concat",
     .inputs = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8"},
     .optional_inputs = optional({1, 2, 3, 4, 5, 6, 7, 8}),
     .outputs = {"y"},
     .params = ParamsKind::axis,
     .dtypes = kAllDtypes,
     .shape_rule = ShapeRule::concat,
     .summary = "1 to 9 tensors joined along an axis"},
    {.op = PHX_OP_SLICE,
     .name = "slice",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::slice,
     .dtypes = kAllDtypes,
     .shape_rule = ShapeRule::slice,
     .summary = "x[start:end:step] per dimension, as ONNX's Slice"},
    {.op = PHX_OP_GATHER,
     .name = "gather",
     .inputs = {"data", "indices"},
     .outputs = {"y"},
     .params = ParamsKind::axis,
     .dtypes = kAllDtypes,
     .dtype_rule = DtypeRule::gather,
     .shape_rule = ShapeRule::gather,
     .summary = "the slices of data along an axis at i32 indices; zeros for an index out of "
                "range"},
    {.op = PHX_OP_EXPAND,
     .name = "expand",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::reshape,
     .params_required = true,
     .dtypes = kAllDtypes,
     .shape_rule = ShapeRule::expand,
     .summary = "x broadcast with a target shape, as ONNX's Expand"},
    {.op = PHX_OP_TILE,
     .name = "tile",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::tile,
     .dtypes = kAllDtypes,
     .shape_rule = ShapeRule::tile,
     .summary = "x repeated along each dimension"},
    {.op = PHX_OP_PAD,
     .name = "pad",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::pad,
     .dtypes = kAllDtypes,
     .shape_rule = ShapeRule::pad,
     .summary = "x padded with a constant, its reflection or its edge"},
    {.op = PHX_OP_MAX_POOL,
     .name = "max_pool",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::pool,
     .dtypes = kAllDtypes,
     .shape_rule = ShapeRule::pool,
     .summary = "the largest value of each window over 1 to 3 spatial dimensions, NC..."},
    {.op = PHX_OP_AVG_POOL,
     .name = "avg_pool",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::pool,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::pool,
     .summary = "the mean of each window over 1 to 3 spatial dimensions, NC..., sums in f32"},
    {.op = PHX_OP_CONV_TRANSPOSE2D,
     .name = "conv_transpose2d",
     .inputs = {"x", "weight", "bias"},
     .optional_inputs = optional({2}),
     .outputs = {"y"},
     .params = ParamsKind::conv_transpose2d,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::conv_transpose2d,
     .summary = "2-D transposed convolution, NCHW, with stride, padding, output padding, "
                "dilation and groups, f32 accumulation"},
    {.op = PHX_OP_RESIZE,
     .name = "resize",
     .inputs = {"x"},
     .outputs = {"y"},
     .params = ParamsKind::resize,
     .params_required = true,
     .dtypes = kFloatDtypes,
     .shape_rule = ShapeRule::resize,
     .summary = "x resampled to another shape, nearest or N-linear, as ONNX's Resize"},
    scalar_parameterized(PHX_OP_HARD_SIGMOID, "hard_sigmoid", kFloatDtypes,
                         "max(0, min(1, alpha x + beta))", &kHardSigmoidDefaults),
    unary(PHX_OP_HARD_SWISH, "hard_swish", kFloatDtypes, "x max(0, min(1, x / 6 + 1 / 2))"),
    unary(PHX_OP_SIN, "sin", kFloatDtypes, "sine of x in radians"),
    unary(PHX_OP_COS, "cos", kFloatDtypes, "cosine of x in radians"),
    unary(PHX_OP_ROUND, "round", kFloatDtypes, "nearest integer, halves to even"),
    {.op = PHX_OP_TOP_K,
     .name = "top_k",
     .inputs = {"x"},
     .outputs = {"values", "indices"},
     .params = ParamsKind::top_k,
     .dtypes = kAllDtypes,
     .dtype_rule = DtypeRule::top_k,
     .shape_rule = ShapeRule::top_k,
     .summary = "the k largest (or smallest) elements along an axis, in order, and their i32 "
                "indices"},
};

static_assert(covers_every_op_in_order(kOps), "an entry for every op, in phx_op_id order");

size_t count_names(const char* const* names, size_t capacity) {
  size_t n = 0;
  while (n < capacity && names[n] != nullptr) ++n;
  return n;
}

}  // namespace

size_t OpSchema::input_count() const { return count_names(inputs, kMaxOpInputs); }

size_t OpSchema::min_input_count() const {
  size_t n = input_count();
  while (n > 0 && !input_required(n - 1)) --n;
  return n;
}

size_t OpSchema::output_count() const { return count_names(outputs, kMaxOpOutputs); }

const OpSchema* find_op_schema(int op) {
  return op > PHX_OP_INVALID && op < PHX_OP_COUNT ? &kOps[op - 1] : nullptr;
}

bool is_quantized_op(const OpSchema& schema) {
  switch (schema.dtype_rule) {
    case DtypeRule::quantize:
    case DtypeRule::dequantize:
    case DtypeRule::quantized_product:
    case DtypeRule::dynamic_quantize:
      return true;
    case DtypeRule::same:
    case DtypeRule::matmul:
    case DtypeRule::cast:
    case DtypeRule::rope:
    case DtypeRule::compare:
    case DtypeRule::where:
    case DtypeRule::index:
    case DtypeRule::gather:
    case DtypeRule::top_k:
      return false;
  }
  return false;
}

}  // namespace phx
