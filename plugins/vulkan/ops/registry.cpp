// Which ops the device runs, and the routing of a recorded op to its family: one table,
// an entry per op in phx_op_id order. An op runs on every dtype its rules allow (the op
// table) that the device can hold in storage buffers.
#include <phx/op_table.h>

#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan {
namespace {

using Recorder = void (*)(OpRecorder&, const phx_plugin_op&);

struct OpFamily {
  phx_op_id op;
  Recorder record;  // null: not implemented on Vulkan
};

constexpr OpFamily kFamilies[] = {
    {PHX_OP_MATMUL, ops::record_matmul},
    {PHX_OP_ADD, ops::record_binary},
    {PHX_OP_SUB, ops::record_binary},
    {PHX_OP_MUL, ops::record_binary},
    {PHX_OP_DIV, ops::record_binary},
    {PHX_OP_RELU, ops::record_unary},
    {PHX_OP_GELU, ops::record_unary},
    {PHX_OP_SILU, ops::record_unary},
    {PHX_OP_SOFTMAX, ops::record_softmax},
    {PHX_OP_LAYER_NORM, ops::record_norm},
    {PHX_OP_RMS_NORM, ops::record_norm},
    {PHX_OP_TRANSPOSE, ops::record_transpose},
    {PHX_OP_REDUCE_SUM, ops::record_reduce},
    {PHX_OP_REDUCE_MAX, ops::record_reduce},
    {PHX_OP_CAST, ops::record_cast},
    {PHX_OP_CONV2D, ops::record_conv2d},
    {PHX_OP_ATTENTION, ops::record_attention},
    {PHX_OP_ROPE, ops::record_rope},
    {PHX_OP_QUANTIZE, nullptr},
    {PHX_OP_DEQUANTIZE, nullptr},
    {PHX_OP_QMATMUL, nullptr},
    {PHX_OP_QCONV2D, nullptr},
    {PHX_OP_DYNAMIC_QUANTIZE, nullptr},
    {PHX_OP_SIGMOID, ops::record_unary},
    {PHX_OP_TANH, ops::record_unary},
    {PHX_OP_EXP, ops::record_unary},
    {PHX_OP_LOG, ops::record_unary},
    {PHX_OP_SQRT, ops::record_unary},
    {PHX_OP_NEG, ops::record_unary},
    {PHX_OP_ABS, ops::record_unary},
    {PHX_OP_ERF, ops::record_unary},
    {PHX_OP_FLOOR, ops::record_unary},
    {PHX_OP_CEIL, ops::record_unary},
    {PHX_OP_RECIPROCAL, ops::record_unary},
    {PHX_OP_SIGN, ops::record_unary},
    {PHX_OP_SOFTPLUS, ops::record_unary},
    {PHX_OP_LEAKY_RELU, ops::record_unary},
    {PHX_OP_ELU, ops::record_unary},
    {PHX_OP_SELU, ops::record_unary},
    {PHX_OP_CLIP, ops::record_unary},
    {PHX_OP_POW, ops::record_binary},
    {PHX_OP_MAX, ops::record_binary},
    {PHX_OP_MIN, ops::record_binary},
    {PHX_OP_PRELU, ops::record_binary},
    {PHX_OP_EQUAL, ops::record_binary},
    {PHX_OP_LESS, ops::record_binary},
    {PHX_OP_GREATER, ops::record_binary},
    {PHX_OP_WHERE, ops::record_where},
    {PHX_OP_NOT, ops::record_unary},
    {PHX_OP_REDUCE_MEAN, ops::record_reduce},
    {PHX_OP_REDUCE_MIN, ops::record_reduce},
    {PHX_OP_REDUCE_PROD, ops::record_reduce},
    {PHX_OP_ARGMAX, ops::record_reduce},
    {PHX_OP_LOG_SOFTMAX, ops::record_softmax},
    {PHX_OP_BATCH_NORM, ops::record_batch_norm},
    {PHX_OP_INSTANCE_NORM, ops::record_norm},
    {PHX_OP_RESHAPE, ops::record_reshape},
    {PHX_OP_CONCAT, ops::record_concat},
    {PHX_OP_SLICE, ops::record_slice},
    {PHX_OP_GATHER, ops::record_gather},
    {PHX_OP_EXPAND, ops::record_expand},
    {PHX_OP_TILE, ops::record_tile},
    {PHX_OP_PAD, ops::record_pad},
    {PHX_OP_MAX_POOL, ops::record_pool},
    {PHX_OP_AVG_POOL, ops::record_pool},
    {PHX_OP_CONV_TRANSPOSE2D, ops::record_conv_transpose2d},
    {PHX_OP_RESIZE, ops::record_resize},
    {PHX_OP_HARD_SIGMOID, ops::record_unary},
    {PHX_OP_HARD_SWISH, ops::record_unary},
    {PHX_OP_SIN, ops::record_unary},
    {PHX_OP_COS, ops::record_unary},
    {PHX_OP_ROUND, ops::record_unary},
    {PHX_OP_TOP_K, nullptr},
};

static_assert(covers_every_op_in_order(kFamilies), "an entry for every op, in phx_op_id order");

Recorder recorder_of(phx_op_id op) {
  return op > PHX_OP_INVALID && op < PHX_OP_COUNT ? kFamilies[op - 1].record : nullptr;
}

}  // namespace

bool op_supported(const DeviceCaps& caps, phx_op_id op, phx_dtype dtype) {
  const OpSchema* schema = find_op_schema(op);
  // The comparisons write u8 whatever their inputs.
  const bool output_held = (op != PHX_OP_EQUAL && op != PHX_OP_LESS && op != PHX_OP_GREATER) ||
                           ops::device_holds(caps, PHX_DTYPE_U8);
  return recorder_of(op) != nullptr && (schema->dtypes & PHX_DTYPE_BIT(dtype)) != 0 &&
         ops::device_holds(caps, dtype) && output_held;
}

void record_op(OpRecorder& recorder, const phx_plugin_op& op) {
  const phx_dtype dtype = op.inputs[0].dtype;
  if (!op_supported(recorder.caps(), op.op, dtype)) {
    const OpSchema* schema = find_op_schema(op.op);
    ops::fail_unsupported(
        "the Vulkan device does not run " +
        (schema != nullptr ? std::string(schema->name) : "op " + std::to_string(op.op)) + " on " +
        std::string(ops::dtype_name(dtype)));
  }
  recorder_of(op.op)(recorder, op);
}

}  // namespace phx::vulkan
