// The converter of each ONNX operator (operator_table.cpp lists them), by family.
#pragma once

#include "importer.h"
#include "window.h"

namespace phx::onnx_import {

// convert_elementwise.cpp
void convert_add(Importer&, const onnx::NodeProto&);
void convert_sub(Importer&, const onnx::NodeProto&);
void convert_mul(Importer&, const onnx::NodeProto&);
void convert_div(Importer&, const onnx::NodeProto&);
void convert_mod(Importer&, const onnx::NodeProto&);
void convert_relu(Importer&, const onnx::NodeProto&);
void convert_identity(Importer&, const onnx::NodeProto&);
void convert_dropout(Importer&, const onnx::NodeProto&);
void convert_cast(Importer&, const onnx::NodeProto&);
void convert_cast_like(Importer&, const onnx::NodeProto&);

// convert_math.cpp
void convert_sigmoid(Importer&, const onnx::NodeProto&);
void convert_tanh(Importer&, const onnx::NodeProto&);
void convert_exp(Importer&, const onnx::NodeProto&);
void convert_log(Importer&, const onnx::NodeProto&);
void convert_sqrt(Importer&, const onnx::NodeProto&);
void convert_neg(Importer&, const onnx::NodeProto&);
void convert_abs(Importer&, const onnx::NodeProto&);
void convert_erf(Importer&, const onnx::NodeProto&);
void convert_floor(Importer&, const onnx::NodeProto&);
void convert_ceil(Importer&, const onnx::NodeProto&);
void convert_reciprocal(Importer&, const onnx::NodeProto&);
void convert_sign(Importer&, const onnx::NodeProto&);
void convert_softplus(Importer&, const onnx::NodeProto&);
void convert_not(Importer&, const onnx::NodeProto&);
void convert_leaky_relu(Importer&, const onnx::NodeProto&);
void convert_elu(Importer&, const onnx::NodeProto&);
void convert_selu(Importer&, const onnx::NodeProto&);
void convert_hard_sigmoid(Importer&, const onnx::NodeProto&);
void convert_hard_swish(Importer&, const onnx::NodeProto&);
void convert_sin(Importer&, const onnx::NodeProto&);
void convert_cos(Importer&, const onnx::NodeProto&);
void convert_round(Importer&, const onnx::NodeProto&);
void convert_celu(Importer&, const onnx::NodeProto&);
void convert_is_nan(Importer&, const onnx::NodeProto&);
void convert_is_inf(Importer&, const onnx::NodeProto&);
void convert_clip(Importer&, const onnx::NodeProto&);
void convert_pow(Importer&, const onnx::NodeProto&);
void convert_max(Importer&, const onnx::NodeProto&);
void convert_min(Importer&, const onnx::NodeProto&);
void convert_sum(Importer&, const onnx::NodeProto&);
void convert_prelu(Importer&, const onnx::NodeProto&);
void convert_equal(Importer&, const onnx::NodeProto&);
void convert_less(Importer&, const onnx::NodeProto&);
void convert_greater(Importer&, const onnx::NodeProto&);
void convert_less_or_equal(Importer&, const onnx::NodeProto&);
void convert_greater_or_equal(Importer&, const onnx::NodeProto&);
void convert_where(Importer&, const onnx::NodeProto&);
void convert_trilu(Importer&, const onnx::NodeProto&);
void convert_and(Importer&, const onnx::NodeProto&);
void convert_or(Importer&, const onnx::NodeProto&);
void convert_xor(Importer&, const onnx::NodeProto&);
void convert_mean(Importer&, const onnx::NodeProto&);

// convert_nn.cpp
void convert_matmul(Importer&, const onnx::NodeProto&);
void convert_gemm(Importer&, const onnx::NodeProto&);
void convert_softmax(Importer&, const onnx::NodeProto&);
void convert_log_softmax(Importer&, const onnx::NodeProto&);
void convert_conv(Importer&, const onnx::NodeProto&);
void convert_layer_normalization(Importer&, const onnx::NodeProto&);
void convert_batch_normalization(Importer&, const onnx::NodeProto&);
void convert_instance_normalization(Importer&, const onnx::NodeProto&);
void convert_transpose(Importer&, const onnx::NodeProto&);
void convert_lrn(Importer&, const onnx::NodeProto&);

// convert_einsum.cpp
void convert_einsum(Importer&, const onnx::NodeProto&);

// convert_reduce.cpp
void convert_reduce_sum(Importer&, const onnx::NodeProto&);
void convert_reduce_max(Importer&, const onnx::NodeProto&);
void convert_reduce_min(Importer&, const onnx::NodeProto&);
void convert_reduce_mean(Importer&, const onnx::NodeProto&);
void convert_reduce_prod(Importer&, const onnx::NodeProto&);
void convert_reduce_sum_square(Importer&, const onnx::NodeProto&);
void convert_reduce_l1(Importer&, const onnx::NodeProto&);
void convert_reduce_l2(Importer&, const onnx::NodeProto&);
void convert_reduce_log_sum(Importer&, const onnx::NodeProto&);
void convert_reduce_log_sum_exp(Importer&, const onnx::NodeProto&);
void convert_arg_max(Importer&, const onnx::NodeProto&);
void convert_arg_min(Importer&, const onnx::NodeProto&);
void convert_global_average_pool(Importer&, const onnx::NodeProto&);
void convert_global_max_pool(Importer&, const onnx::NodeProto&);
void convert_hardmax(Importer&, const onnx::NodeProto&);
void convert_top_k(Importer&, const onnx::NodeProto&);
void convert_cum_sum(Importer&, const onnx::NodeProto&);

// convert_layout.cpp
void convert_reshape(Importer&, const onnx::NodeProto&);
void convert_flatten(Importer&, const onnx::NodeProto&);
void convert_squeeze(Importer&, const onnx::NodeProto&);
void convert_unsqueeze(Importer&, const onnx::NodeProto&);
void convert_concat(Importer&, const onnx::NodeProto&);
void convert_slice(Importer&, const onnx::NodeProto&);
void convert_split(Importer&, const onnx::NodeProto&);
void convert_gather(Importer&, const onnx::NodeProto&);
void convert_expand(Importer&, const onnx::NodeProto&);
void convert_tile(Importer&, const onnx::NodeProto&);
void convert_pad(Importer&, const onnx::NodeProto&);
void convert_depth_to_space(Importer&, const onnx::NodeProto&);
void convert_space_to_depth(Importer&, const onnx::NodeProto&);
// x reshaped to shape (0 copies x's dimension, one -1 is inferred): a reshape node named
// after node with suffix.
phx_value reshape_to(Importer& im, const onnx::NodeProto& node, phx_value x,
                     const std::vector<int64_t>& shape, const char* suffix);
// parts concatenated along axis: a concat node named after node with suffix, or a chain
// of them for more than PHX_MAX_OP_INPUTS parts.
phx_value concat(Importer& im, const onnx::NodeProto& node, std::vector<phx_value> parts,
                 int32_t axis, const char* suffix);

// convert_rnn.cpp: recurrences unrolled over their steps
void convert_lstm(Importer&, const onnx::NodeProto&);
void convert_gru(Importer&, const onnx::NodeProto&);
void convert_rnn(Importer&, const onnx::NodeProto&);

// convert_index.cpp: gathers and scatters through offsets into the flattened data
// An i32 graph constant of these dims and values (indices, offsets, positions), named
// after node with what.
phx_value index_constant(Importer& im, const onnx::NodeProto& node, std::vector<int64_t> dims,
                         std::vector<int64_t> values, const std::string& what);
void convert_gather_elements(Importer&, const onnx::NodeProto&);
void convert_gather_nd(Importer&, const onnx::NodeProto&);
void convert_one_hot(Importer&, const onnx::NodeProto&);
void convert_scatter_elements(Importer&, const onnx::NodeProto&);
void convert_scatter_nd(Importer&, const onnx::NodeProto&);

// convert_pool.cpp
void convert_max_pool(Importer&, const onnx::NodeProto&);
void convert_average_pool(Importer&, const onnx::NodeProto&);
void convert_conv_transpose(Importer&, const onnx::NodeProto&);

// convert_conv3d.cpp: 3-D Conv and ConvTranspose through the 2-D ops
void convert_conv3d(Importer&, const onnx::NodeProto&);
void convert_conv_transpose3d(Importer&, const onnx::NodeProto&, const TransposedWindow& window);

// convert_resize.cpp
void convert_resize(Importer&, const onnx::NodeProto&);
void convert_upsample(Importer&, const onnx::NodeProto&);

// convert_shape.cpp: values known at import
void convert_constant(Importer&, const onnx::NodeProto&);
void convert_shape(Importer&, const onnx::NodeProto&);
void convert_size(Importer&, const onnx::NodeProto&);
void convert_constant_of_shape(Importer&, const onnx::NodeProto&);
void convert_range(Importer&, const onnx::NodeProto&);

// convert_quantized.cpp
void convert_quantize_linear(Importer&, const onnx::NodeProto&);
void convert_dequantize_linear(Importer&, const onnx::NodeProto&);
void convert_dynamic_quantize_linear(Importer&, const onnx::NodeProto&);
void convert_matmul_integer(Importer&, const onnx::NodeProto&);
void convert_qlinear_conv(Importer&, const onnx::NodeProto&);
void convert_qlinear_matmul(Importer&, const onnx::NodeProto&);
void convert_conv_integer(Importer&, const onnx::NodeProto&);

}  // namespace phx::onnx_import
