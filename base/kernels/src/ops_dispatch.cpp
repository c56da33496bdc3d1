// run_op and op_supported: which ops and dtypes the host kernels implement, and the
// routing of each op to its family (ops_*.cpp): one table, an entry per op in phx_op_id
// order.
#include <phx/op_params.h>
#include <phx/op_table.h>

#include <array>
#include <new>

#include "ops_common.h"

namespace phx::kernels {

int64_t element_count(const HostTensor& t) {
  int64_t n = 1;
  for (uint32_t d = 0; d < t.rank; ++d) n *= t.shape[d];
  return n;
}

// The host kernels are the reference device: they run every op on every dtype its rules
// allow (the op table), and the table below has a kernel for every op.
bool op_supported(phx_op_id op, phx_dtype dtype) {
  const OpSchema* schema = find_op_schema(op);
  return schema != nullptr && ops::dtype_bytes(dtype) != 0 &&
         (schema->dtypes & PHX_DTYPE_BIT(dtype)) != 0;
}

namespace {

// An op as its family's kernel gets it: params is the op's struct, never null for an op
// that takes one (run_op fills in the defaults), null for the others.
struct OpCall {
  phx_op_id op;
  const void* params;
  const HostTensor* in;
  size_t in_count;
  const HostTensor* out;
  ThreadPool& pool;

  template <class Params>
  const Params& params_as() const {
    return *static_cast<const Params*>(params);
  }
  // Input i, or an absent one (data == nullptr) past in_count: an optional input left off.
  HostTensor input_or_absent(size_t i) const { return i < in_count ? in[i] : HostTensor{}; }
  // Every input slot, those left off absent, for the kernels that take them as an array.
  std::array<HostTensor, PHX_MAX_OP_INPUTS> all_inputs() const {
    std::array<HostTensor, PHX_MAX_OP_INPUTS> all;
    for (size_t i = 0; i < all.size(); ++i) all[i] = input_or_absent(i);
    return all;
  }
};

// One function per family: the operands and parameters in the order its kernel takes them.
void matmul(const OpCall& c) {
  ops::run_matmul(c.params_as<phx_matmul_params>(), c.in[0], c.in[1], c.input_or_absent(2),
                  c.out[0], c.pool);
}
void binary(const OpCall& c) { ops::run_binary(c.op, c.in[0], c.in[1], c.out[0], c.pool); }
void unary(const OpCall& c) { ops::run_unary(c.op, c.in[0], c.out[0], c.pool); }
// sigmoid ... softplus, hard_swish, sin, cos, round: no parameters, and their kernel reads
// none.
void unary_math(const OpCall& c) {
  ops::run_unary_math(c.op, phx_elementwise_params{}, c.in[0], c.out[0], c.pool);
}
// leaky_relu, elu, selu, clip, hard_sigmoid: alpha and beta.
void unary_math_with_params(const OpCall& c) {
  ops::run_unary_math(c.op, c.params_as<phx_elementwise_params>(), c.in[0], c.out[0], c.pool);
}
void compare(const OpCall& c) { ops::run_compare(c.op, c.in[0], c.in[1], c.out[0], c.pool); }
void where(const OpCall& c) { ops::run_where(c.in[0], c.in[1], c.in[2], c.out[0], c.pool); }
void logical_not(const OpCall& c) { ops::run_not(c.in[0], c.out[0], c.pool); }
void softmax(const OpCall& c) {
  ops::run_softmax(c.params_as<phx_softmax_params>(), c.in[0], c.out[0], c.pool);
}
void log_softmax(const OpCall& c) {
  ops::run_log_softmax(c.params_as<phx_softmax_params>(), c.in[0], c.out[0], c.pool);
}
void layer_norm(const OpCall& c) {
  ops::run_layer_norm(c.params_as<phx_norm_params>(), c.in[0], c.input_or_absent(1),
                      c.input_or_absent(2), c.out[0], c.pool);
}
void rms_norm(const OpCall& c) {
  ops::run_rms_norm(c.params_as<phx_norm_params>(), c.in[0], c.input_or_absent(1), c.out[0],
                    c.pool);
}
void batch_norm(const OpCall& c) {
  ops::run_batch_norm(c.params_as<phx_norm_params>(), c.in, c.out[0], c.pool);
}
void instance_norm(const OpCall& c) {
  ops::run_instance_norm(c.params_as<phx_norm_params>(), c.in[0], c.in[1], c.in[2], c.out[0],
                         c.pool);
}
void transpose(const OpCall& c) {
  ops::run_transpose(c.params_as<phx_transpose_params>(), c.in[0], c.out[0], c.pool);
}
void reduce(const OpCall& c) {
  ops::run_reduce(c.op, c.params_as<phx_reduce_params>(), c.in[0], c.out[0], c.pool);
}
void argmax(const OpCall& c) {
  ops::run_argmax(c.params_as<phx_argmax_params>(), c.in[0], c.out[0], c.pool);
}
void top_k(const OpCall& c) {
  ops::run_top_k(c.params_as<phx_top_k_params>(), c.in[0], c.out[0], c.out[1], c.pool);
}
void cast(const OpCall& c) { ops::run_cast(c.in[0], c.out[0], c.pool); }
void conv2d(const OpCall& c) {
  ops::run_conv2d(c.params_as<phx_conv2d_params>(), c.in[0], c.in[1], c.input_or_absent(2),
                  c.out[0], c.pool);
}
void attention(const OpCall& c) {
  ops::run_attention(c.params_as<phx_attention_params>(), c.in[0], c.in[1], c.in[2], c.out[0],
                     c.pool);
}
void rope(const OpCall& c) {
  ops::run_rope(c.params_as<phx_rope_params>(), c.in[0], c.in[1], c.in[2], c.out[0], c.pool);
}
void quantize(const OpCall& c) {
  ops::run_quantize(c.params_as<phx_quantize_params>(), c.in[0], c.in[1], c.input_or_absent(2),
                    c.out[0], c.pool);
}
void dequantize(const OpCall& c) {
  ops::run_dequantize(c.params_as<phx_quantize_params>(), c.in[0], c.in[1], c.input_or_absent(2),
                      c.out[0], c.pool);
}
void dynamic_quantize(const OpCall& c) { ops::run_dynamic_quantize(c.in[0], c.out, c.pool); }
void qmatmul(const OpCall& c) {
  ops::run_qmatmul(c.params_as<phx_matmul_params>(), c.all_inputs().data(), c.out[0], c.pool);
}
void qconv2d(const OpCall& c) {
  ops::run_qconv2d(c.params_as<phx_conv2d_params>(), c.all_inputs().data(), c.out[0], c.pool);
}
// reshape, expand and tile: the output's shape says all they do.
void reshape(const OpCall& c) { ops::run_reshape(c.in[0], c.out[0], c.pool); }
void expand(const OpCall& c) { ops::run_expand(c.in[0], c.out[0], c.pool); }
void tile(const OpCall& c) { ops::run_tile(c.in[0], c.out[0], c.pool); }
void concat(const OpCall& c) {
  ops::run_concat(c.params_as<phx_axis_params>(), c.in, c.in_count, c.out[0], c.pool);
}
void slice(const OpCall& c) {
  ops::run_slice(c.params_as<phx_slice_params>(), c.in[0], c.out[0], c.pool);
}
void gather(const OpCall& c) {
  ops::run_gather(c.params_as<phx_axis_params>(), c.in[0], c.in[1], c.out[0], c.pool);
}
void pad(const OpCall& c) {
  ops::run_pad(c.params_as<phx_pad_params>(), c.in[0], c.out[0], c.pool);
}
void max_pool(const OpCall& c) {
  ops::run_max_pool(c.params_as<phx_pool_params>(), c.in[0], c.out[0], c.pool);
}
void avg_pool(const OpCall& c) {
  ops::run_avg_pool(c.params_as<phx_pool_params>(), c.in[0], c.out[0], c.pool);
}
void conv_transpose2d(const OpCall& c) {
  ops::run_conv_transpose2d(c.params_as<phx_conv_transpose2d_params>(), c.in[0], c.in[1],
                            c.input_or_absent(2), c.out[0], c.pool);
}
void resize(const OpCall& c) {
  ops::run_resize(c.params_as<phx_resize_params>(), c.in[0], c.out[0], c.pool);
}

struct OpKernel {
  phx_op_id op;
  void (*run)(const OpCall&);
};

constexpr OpKernel kKernels[] = {
    {PHX_OP_MATMUL, matmul},
    {PHX_OP_ADD, binary},
    {PHX_OP_SUB, binary},
    {PHX_OP_MUL, binary},
    {PHX_OP_DIV, binary},
    {PHX_OP_RELU, unary},
    {PHX_OP_GELU, unary},
    {PHX_OP_SILU, unary},
    {PHX_OP_SOFTMAX, softmax},
    {PHX_OP_LAYER_NORM, layer_norm},
    {PHX_OP_RMS_NORM, rms_norm},
    {PHX_OP_TRANSPOSE, transpose},
    {PHX_OP_REDUCE_SUM, reduce},
    {PHX_OP_REDUCE_MAX, reduce},
    {PHX_OP_CAST, cast},
    {PHX_OP_CONV2D, conv2d},
    {PHX_OP_ATTENTION, attention},
    {PHX_OP_ROPE, rope},
    {PHX_OP_QUANTIZE, quantize},
    {PHX_OP_DEQUANTIZE, dequantize},
    {PHX_OP_QMATMUL, qmatmul},
    {PHX_OP_QCONV2D, qconv2d},
    {PHX_OP_DYNAMIC_QUANTIZE, dynamic_quantize},
    {PHX_OP_SIGMOID, unary_math},
    {PHX_OP_TANH, unary_math},
    {PHX_OP_EXP, unary_math},
    {PHX_OP_LOG, unary_math},
    {PHX_OP_SQRT, unary_math},
    {PHX_OP_NEG, unary_math},
    {PHX_OP_ABS, unary_math},
    {PHX_OP_ERF, unary_math},
    {PHX_OP_FLOOR, unary_math},
    {PHX_OP_CEIL, unary_math},
    {PHX_OP_RECIPROCAL, unary_math},
    {PHX_OP_SIGN, unary_math},
    {PHX_OP_SOFTPLUS, unary_math},
    {PHX_OP_LEAKY_RELU, unary_math_with_params},
    {PHX_OP_ELU, unary_math_with_params},
    {PHX_OP_SELU, unary_math_with_params},
    {PHX_OP_CLIP, unary_math_with_params},
    {PHX_OP_POW, binary},
    {PHX_OP_MAX, binary},
    {PHX_OP_MIN, binary},
    {PHX_OP_PRELU, binary},
    {PHX_OP_EQUAL, compare},
    {PHX_OP_LESS, compare},
    {PHX_OP_GREATER, compare},
    {PHX_OP_WHERE, where},
    {PHX_OP_NOT, logical_not},
    {PHX_OP_REDUCE_MEAN, reduce},
    {PHX_OP_REDUCE_MIN, reduce},
    {PHX_OP_REDUCE_PROD, reduce},
    {PHX_OP_ARGMAX, argmax},
    {PHX_OP_LOG_SOFTMAX, log_softmax},
    {PHX_OP_BATCH_NORM, batch_norm},
    {PHX_OP_INSTANCE_NORM, instance_norm},
    {PHX_OP_RESHAPE, reshape},
    {PHX_OP_CONCAT, concat},
    {PHX_OP_SLICE, slice},
    {PHX_OP_GATHER, gather},
    {PHX_OP_EXPAND, expand},
    {PHX_OP_TILE, tile},
    {PHX_OP_PAD, pad},
    {PHX_OP_MAX_POOL, max_pool},
    {PHX_OP_AVG_POOL, avg_pool},
    {PHX_OP_CONV_TRANSPOSE2D, conv_transpose2d},
    {PHX_OP_RESIZE, resize},
    {PHX_OP_HARD_SIGMOID, unary_math_with_params},
    {PHX_OP_HARD_SWISH, unary_math},
    {PHX_OP_SIN, unary_math},
    {PHX_OP_COS, unary_math},
    {PHX_OP_ROUND, unary_math},
    {PHX_OP_TOP_K, top_k},
};

static_assert(covers_every_op_in_order(kKernels), "a kernel for every op, in phx_op_id order");

}  // namespace

phx_status run_op(phx_op_id op, const void* params, const HostTensor* inputs, size_t input_count,
                  const HostTensor* outputs, size_t output_count, ThreadPool& pool) {
  if (input_count == 0 || output_count == 0) return PHX_STATUS_UNSUPPORTED;
  if (!op_supported(op, inputs[0].dtype)) return PHX_STATUS_UNSUPPORTED;
  const OpSchema& schema = *find_op_schema(op);
  // The core refuses null parameters for these ops before any device sees them.
  if (params == nullptr && schema.params_required) return PHX_STATUS_INVALID_ARGUMENT;
  // Outputs of another dtype than the input's (cast, matmul's f32, the quantized ops)
  // are all of dtypes this library computes in when this holds.
  for (size_t i = 0; i < output_count; ++i)
    if (ops::dtype_bytes(outputs[i].dtype) == 0) return PHX_STATUS_UNSUPPORTED;
  // The core passes every op that takes parameters its struct, defaults filled in; the
  // plugins' tests that drive a plugin without a host pass null (npu-sim's matmul nodes),
  // and the plugins hand that on. Ops whose parameters are required never get here.
  OpParams defaults;
  if (params == nullptr && schema.params != ParamsKind::none) {
    fill_default_params(schema, inputs[0].rank, defaults);
    params = &defaults;
  }
  try {
    kKernels[op - 1].run(OpCall{op, params, inputs, input_count, outputs, pool});
  } catch (const std::bad_alloc&) {  // scratch buffers of the big ops
    return PHX_STATUS_OUT_OF_MEMORY;
  } catch (...) {
    return PHX_STATUS_INTERNAL;
  }
  return PHX_STATUS_OK;
}

}  // namespace phx::kernels
