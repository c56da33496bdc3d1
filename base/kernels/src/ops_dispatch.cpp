// run_op and op_supported: which ops and dtypes the host kernels implement, and the
// dispatch of each op to its family (ops_*.cpp), once per op.
#include <phx/op_params.h>
#include <phx/op_table.h>

#include <new>

#include "ops_common.h"

namespace phx::kernels {

int64_t element_count(const HostTensor& t) {
  int64_t n = 1;
  for (uint32_t d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

// The host kernels are the reference device: they run every op on every dtype its rules
// allow (the op table), and dispatch has a case for every op.
bool op_supported(phx_op_id op, phx_dtype dtype) {
  const OpSchema* schema = find_op_schema(op);
  return schema != nullptr && ops::dtype_bytes(dtype) != 0 &&
         (schema->dtypes & PHX_DTYPE_BIT(dtype)) != 0;
}

namespace {

// The input at index, or an absent one (data == nullptr) past input_count.
HostTensor input_or_absent(const HostTensor* inputs, size_t count, size_t index) {
  return index < count ? inputs[index] : HostTensor{};
}

// The parameters the core passed, or the op's defaults when it passed none.
template <class Params>
Params params_or(const void* params, Params defaults) {
  return params != nullptr ? *static_cast<const Params*>(params) : defaults;
}

// alpha and beta of the unary math ops: the core's, the op's defaults, or zeros for an op
// that takes none.
phx_elementwise_params elementwise_params(phx_op_id op, const void* params) {
  const void* given = params != nullptr ? params : default_params(*find_op_schema(op));
  return given != nullptr ? *static_cast<const phx_elementwise_params*>(given)
                          : phx_elementwise_params PHX_ELEMENTWISE_PARAMS_INIT(0.0f, 0.0f);
}

// NumPy's default permutation: the dimensions reversed.
phx_transpose_params reversed_perm(uint32_t rank) {
  phx_transpose_params p{};
  p.struct_size = sizeof p;
  for (uint32_t i = 0; i < rank; ++i) p.perm[i] = rank - 1 - i;
  return p;
}

void dispatch(phx_op_id op, const void* params, const HostTensor* in, size_t in_count,
              const HostTensor* outputs, ThreadPool& pool) {
  const HostTensor& x = in[0];
  const HostTensor& out = outputs[0];
  switch (op) {
    case PHX_OP_MATMUL:
      ops::run_matmul(params_or(params, phx_matmul_params PHX_MATMUL_PARAMS_INIT), x, in[1],
                      input_or_absent(in, in_count, 2), out, pool);
      break;
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_DIV:
      ops::run_binary(op, x, in[1], out, pool);
      break;
    case PHX_OP_RELU:
    case PHX_OP_GELU:
    case PHX_OP_SILU:
      ops::run_unary(op, x, out, pool);
      break;
    case PHX_OP_SOFTMAX:
      ops::run_softmax(params_or(params, phx_softmax_params PHX_SOFTMAX_PARAMS_INIT), x, out, pool);
      break;
    case PHX_OP_LAYER_NORM:
      ops::run_layer_norm(params_or(params, phx_norm_params PHX_NORM_PARAMS_INIT), x,
                          input_or_absent(in, in_count, 1), input_or_absent(in, in_count, 2), out,
                          pool);
      break;
    case PHX_OP_RMS_NORM:
      ops::run_rms_norm(params_or(params, phx_norm_params PHX_NORM_PARAMS_INIT), x,
                        input_or_absent(in, in_count, 1), out, pool);
      break;
    case PHX_OP_TRANSPOSE:
      ops::run_transpose(params_or(params, reversed_perm(x.rank)), x, out, pool);
      break;
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX:
      ops::run_reduce(op, params_or(params, phx_reduce_params PHX_REDUCE_PARAMS_INIT), x, out,
                      pool);
      break;
    case PHX_OP_CAST:
      ops::run_cast(x, out, pool);
      break;
    case PHX_OP_CONV2D:
      ops::run_conv2d(params_or(params, phx_conv2d_params PHX_CONV2D_PARAMS_INIT), x, in[1],
                      input_or_absent(in, in_count, 2), out, pool);
      break;
    case PHX_OP_ATTENTION:
      ops::run_attention(params_or(params, phx_attention_params PHX_ATTENTION_PARAMS_INIT), x,
                         in[1], in[2], out, pool);
      break;
    case PHX_OP_ROPE:
      ops::run_rope(params_or(params, phx_rope_params PHX_ROPE_PARAMS_INIT), x, in[1], in[2], out,
                    pool);
      break;
    case PHX_OP_QUANTIZE:
      ops::run_quantize(params_or(params, phx_quantize_params PHX_QUANTIZE_PARAMS_INIT), x, in[1],
                        input_or_absent(in, in_count, 2), out, pool);
      break;
    case PHX_OP_DEQUANTIZE:
      ops::run_dequantize(params_or(params, phx_quantize_params PHX_QUANTIZE_PARAMS_INIT), x, in[1],
                          input_or_absent(in, in_count, 2), out, pool);
      break;
    case PHX_OP_DYNAMIC_QUANTIZE:
      ops::run_dynamic_quantize(x, outputs, pool);
      break;
    case PHX_OP_QMATMUL:
    case PHX_OP_QCONV2D: {
      HostTensor all[PHX_MAX_OP_INPUTS];
      for (size_t i = 0; i < PHX_MAX_OP_INPUTS; ++i) all[i] = input_or_absent(in, in_count, i);
      if (op == PHX_OP_QMATMUL)
        ops::run_qmatmul(params_or(params, phx_matmul_params PHX_MATMUL_PARAMS_INIT), all, out,
                         pool);
      else
        ops::run_qconv2d(params_or(params, phx_conv2d_params PHX_CONV2D_PARAMS_INIT), all, out,
                         pool);
      break;
    }
    case PHX_OP_SIGMOID:
    case PHX_OP_TANH:
    case PHX_OP_EXP:
    case PHX_OP_LOG:
    case PHX_OP_SQRT:
    case PHX_OP_NEG:
    case PHX_OP_ABS:
    case PHX_OP_ERF:
    case PHX_OP_FLOOR:
    case PHX_OP_CEIL:
    case PHX_OP_RECIPROCAL:
    case PHX_OP_SIGN:
    case PHX_OP_SOFTPLUS:
    case PHX_OP_LEAKY_RELU:
    case PHX_OP_ELU:
    case PHX_OP_SELU:
    case PHX_OP_CLIP:
    case PHX_OP_HARD_SIGMOID:
    case PHX_OP_HARD_SWISH:
      ops::run_unary_math(op, elementwise_params(op, params), x, out, pool);
      break;
    case PHX_OP_POW:
    case PHX_OP_MAX:
    case PHX_OP_MIN:
    case PHX_OP_PRELU:
      ops::run_binary(op, x, in[1], out, pool);
      break;
    case PHX_OP_EQUAL:
    case PHX_OP_LESS:
    case PHX_OP_GREATER:
      ops::run_compare(op, x, in[1], out, pool);
      break;
    case PHX_OP_WHERE:
      ops::run_where(x, in[1], in[2], out, pool);
      break;
    case PHX_OP_NOT:
      ops::run_not(x, out, pool);
      break;
    case PHX_OP_REDUCE_MEAN:
    case PHX_OP_REDUCE_MIN:
    case PHX_OP_REDUCE_PROD:
      ops::run_reduce(op, params_or(params, phx_reduce_params PHX_REDUCE_PARAMS_INIT), x, out,
                      pool);
      break;
    case PHX_OP_ARGMAX:
      ops::run_argmax(params_or(params, phx_argmax_params PHX_ARGMAX_PARAMS_INIT), x, out, pool);
      break;
    case PHX_OP_LOG_SOFTMAX:
      ops::run_log_softmax(params_or(params, phx_softmax_params PHX_SOFTMAX_PARAMS_INIT), x, out,
                           pool);
      break;
    case PHX_OP_BATCH_NORM:
      ops::run_batch_norm(params_or(params, phx_norm_params PHX_NORM_PARAMS_INIT), in, out, pool);
      break;
    case PHX_OP_INSTANCE_NORM:
      ops::run_instance_norm(params_or(params, phx_norm_params PHX_NORM_PARAMS_INIT), x, in[1],
                             in[2], out, pool);
      break;
    case PHX_OP_RESHAPE:  // the output's shape says all that reshape, expand and tile do
      ops::run_reshape(x, out, pool);
      break;
    case PHX_OP_EXPAND:
      ops::run_expand(x, out, pool);
      break;
    case PHX_OP_CONCAT:
      ops::run_concat(params_or(params, phx_axis_params PHX_AXIS_PARAMS_INIT), in, in_count, out,
                      pool);
      break;
    case PHX_OP_SLICE:
      ops::run_slice(params_or(params, phx_slice_params PHX_SLICE_PARAMS_INIT), x, out, pool);
      break;
    case PHX_OP_GATHER:
      ops::run_gather(params_or(params, phx_axis_params PHX_AXIS_PARAMS_INIT), x, in[1], out, pool);
      break;
    case PHX_OP_TILE:
      ops::run_tile(x, out, pool);
      break;
    case PHX_OP_PAD:
      ops::run_pad(params_or(params, phx_pad_params PHX_PAD_PARAMS_INIT), x, out, pool);
      break;
    case PHX_OP_MAX_POOL:
      ops::run_max_pool(params_or(params, phx_pool_params PHX_POOL_PARAMS_INIT), x, out, pool);
      break;
    case PHX_OP_AVG_POOL:
      ops::run_avg_pool(params_or(params, phx_pool_params PHX_POOL_PARAMS_INIT), x, out, pool);
      break;
    case PHX_OP_CONV_TRANSPOSE2D:
      ops::run_conv_transpose2d(
          params_or(params, phx_conv_transpose2d_params PHX_CONV_TRANSPOSE2D_PARAMS_INIT), x, in[1],
          input_or_absent(in, in_count, 2), out, pool);
      break;
    case PHX_OP_RESIZE:  // its parameters are required: run_op refuses null ones
      ops::run_resize(*static_cast<const phx_resize_params*>(params), x, out, pool);
      break;
    case PHX_OP_INVALID:  // refused by op_supported; no default, so a new op needs a case
      break;
  }
}

}  // namespace

phx_status run_op(phx_op_id op, const void* params, const HostTensor* inputs, size_t input_count,
                  const HostTensor* outputs, size_t output_count, ThreadPool& pool) {
  if (input_count == 0 || output_count == 0) return PHX_STATUS_UNSUPPORTED;
  if (!op_supported(op, inputs[0].dtype)) return PHX_STATUS_UNSUPPORTED;
  // The core refuses null parameters for these ops before any device sees them.
  if (params == nullptr && find_op_schema(op)->params_required) return PHX_STATUS_INVALID_ARGUMENT;
  // Outputs of another dtype than the input's (cast, matmul's f32, the quantized ops)
  // are all of dtypes this library computes in when this holds.
  for (size_t i = 0; i < output_count; ++i)
    if (ops::dtype_bytes(outputs[i].dtype) == 0) return PHX_STATUS_UNSUPPORTED;
  try {
    dispatch(op, params, inputs, input_count, outputs, pool);
  } catch (const std::bad_alloc&) {  // scratch buffers of the big ops
    return PHX_STATUS_OUT_OF_MEMORY;
  } catch (...) {
    return PHX_STATUS_INTERNAL;
  }
  return PHX_STATUS_OK;
}

}  // namespace phx::kernels
