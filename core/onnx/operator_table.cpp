#include "operator_table.h"

#include <algorithm>
#include <cstring>

#include "converters.h"

namespace phx::onnx_import {
namespace {

// Sorted by op_type (checked below) for the lookup.
constexpr OperatorEntry kOperators[] = {
    {"Abs", convert_abs},
    {"Add", convert_add},
    {"And", convert_and},
    {"ArgMax", convert_arg_max},
    {"ArgMin", convert_arg_min},
    {"AveragePool", convert_average_pool},
    {"BatchNormalization", convert_batch_normalization},
    {"Cast", convert_cast},
    {"CastLike", convert_cast_like},
    {"Ceil", convert_ceil},
    {"Celu", convert_celu},
    {"Clip", convert_clip},
    {"Concat", convert_concat},
    {"Constant", convert_constant},
    {"ConstantOfShape", convert_constant_of_shape},
    {"Conv", convert_conv},
    {"ConvInteger", convert_conv_integer},
    {"ConvTranspose", convert_conv_transpose},
    {"Cos", convert_cos},
    {"CumSum", convert_cum_sum},
    {"DepthToSpace", convert_depth_to_space},
    {"DequantizeLinear", convert_dequantize_linear},
    {"Div", convert_div},
    {"Dropout", convert_dropout},
    {"DynamicQuantizeLinear", convert_dynamic_quantize_linear},
    {"Einsum", convert_einsum},
    {"Elu", convert_elu},
    {"Equal", convert_equal},
    {"Erf", convert_erf},
    {"Exp", convert_exp},
    {"Expand", convert_expand},
    {"Flatten", convert_flatten},
    {"Floor", convert_floor},
    {"GRU", convert_gru},
    {"Gather", convert_gather},
    {"GatherElements", convert_gather_elements},
    {"GatherND", convert_gather_nd},
    {"Gemm", convert_gemm},
    {"GlobalAveragePool", convert_global_average_pool},
    {"GlobalMaxPool", convert_global_max_pool},
    {"Greater", convert_greater},
    {"GreaterOrEqual", convert_greater_or_equal},
    {"HardSigmoid", convert_hard_sigmoid},
    {"HardSwish", convert_hard_swish},
    {"Hardmax", convert_hardmax},
    {"Identity", convert_identity},
    {"InstanceNormalization", convert_instance_normalization},
    {"IsInf", convert_is_inf},
    {"IsNaN", convert_is_nan},
    {"LRN", convert_lrn},
    {"LSTM", convert_lstm},
    {"LayerNormalization", convert_layer_normalization},
    {"LeakyRelu", convert_leaky_relu},
    {"Less", convert_less},
    {"LessOrEqual", convert_less_or_equal},
    {"Log", convert_log},
    {"LogSoftmax", convert_log_softmax},
    {"MatMul", convert_matmul},
    {"MatMulInteger", convert_matmul_integer},
    {"Max", convert_max},
    {"MaxPool", convert_max_pool},
    {"Mean", convert_mean},
    {"Min", convert_min},
    {"Mod", convert_mod},
    {"Mul", convert_mul},
    {"Neg", convert_neg},
    {"Not", convert_not},
    {"OneHot", convert_one_hot},
    {"Or", convert_or},
    {"PRelu", convert_prelu},
    {"Pad", convert_pad},
    {"Pow", convert_pow},
    {"QLinearConv", convert_qlinear_conv},
    {"QLinearMatMul", convert_qlinear_matmul},
    {"QuantizeLinear", convert_quantize_linear},
    {"RNN", convert_rnn},
    {"Range", convert_range},
    {"Reciprocal", convert_reciprocal},
    {"ReduceL1", convert_reduce_l1},
    {"ReduceL2", convert_reduce_l2},
    {"ReduceLogSum", convert_reduce_log_sum},
    {"ReduceLogSumExp", convert_reduce_log_sum_exp},
    {"ReduceMax", convert_reduce_max},
    {"ReduceMean", convert_reduce_mean},
    {"ReduceMin", convert_reduce_min},
    {"ReduceProd", convert_reduce_prod},
    {"ReduceSum", convert_reduce_sum},
    {"ReduceSumSquare", convert_reduce_sum_square},
    {"Relu", convert_relu},
    {"Reshape", convert_reshape},
    {"Resize", convert_resize},
    {"Round", convert_round},
    {"Scatter", convert_scatter_elements},
    {"ScatterElements", convert_scatter_elements},
    {"ScatterND", convert_scatter_nd},
    {"Selu", convert_selu},
    {"Shape", convert_shape},
    {"Sigmoid", convert_sigmoid},
    {"Sign", convert_sign},
    {"Sin", convert_sin},
    {"Size", convert_size},
    {"Slice", convert_slice},
    {"Softmax", convert_softmax},
    {"Softplus", convert_softplus},
    {"SpaceToDepth", convert_space_to_depth},
    {"Split", convert_split},
    {"Sqrt", convert_sqrt},
    {"Squeeze", convert_squeeze},
    {"Sub", convert_sub},
    {"Sum", convert_sum},
    {"Tanh", convert_tanh},
    {"Tile", convert_tile},
    {"TopK", convert_top_k},
    {"Transpose", convert_transpose},
    {"Trilu", convert_trilu},
    {"Unsqueeze", convert_unsqueeze},
    {"Upsample", convert_upsample},
    {"Where", convert_where},
    {"Xor", convert_xor},
};

constexpr bool sorted() {
  for (size_t i = 1; i < std::size(kOperators); ++i)
    if (std::string_view(kOperators[i - 1].op_type) >= std::string_view(kOperators[i].op_type))
      return false;
  return true;
}
static_assert(sorted(), "kOperators sorted by op_type, each once");

}  // namespace

const OperatorEntry* find_operator(const std::string& op_type) {
  const auto* end = std::end(kOperators);
  const auto* it = std::lower_bound(std::begin(kOperators), end, op_type,
                                    [](const OperatorEntry& e, const std::string& name) {
                                      return std::string_view(e.op_type) < name;
                                    });
  return it != end && op_type == it->op_type ? it : nullptr;
}

std::span<const OperatorEntry> operator_entries() { return kOperators; }

}  // namespace phx::onnx_import
