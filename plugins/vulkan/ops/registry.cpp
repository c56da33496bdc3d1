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
    {PHX_OP_SIGMOID, nullptr},
    {PHX_OP_TANH, nullptr},
    {PHX_OP_EXP, nullptr},
    {PHX_OP_LOG, nullptr},
    {PHX_OP_SQRT, nullptr},
    {PHX_OP_NEG, nullptr},
    {PHX_OP_ABS, nullptr},
    {PHX_OP_ERF, nullptr},
    {PHX_OP_FLOOR, nullptr},
    {PHX_OP_CEIL, nullptr},
    {PHX_OP_RECIPROCAL, nullptr},
    {PHX_OP_SIGN, nullptr},
    {PHX_OP_SOFTPLUS, nullptr},
    {PHX_OP_LEAKY_RELU, nullptr},
    {PHX_OP_ELU, nullptr},
    {PHX_OP_SELU, nullptr},
    {PHX_OP_CLIP, nullptr},
    {PHX_OP_POW, nullptr},
    {PHX_OP_MAX, nullptr},
    {PHX_OP_MIN, nullptr},
    {PHX_OP_PRELU, nullptr},
    {PHX_OP_EQUAL, nullptr},
    {PHX_OP_LESS, nullptr},
    {PHX_OP_GREATER, nullptr},
    {PHX_OP_WHERE, nullptr},
    {PHX_OP_NOT, nullptr},
    {PHX_OP_REDUCE_MEAN, nullptr},
    {PHX_OP_REDUCE_MIN, nullptr},
    {PHX_OP_REDUCE_PROD, nullptr},
    {PHX_OP_ARGMAX, nullptr},
    {PHX_OP_LOG_SOFTMAX, nullptr},
    {PHX_OP_BATCH_NORM, nullptr},
    {PHX_OP_INSTANCE_NORM, nullptr},
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
    {PHX_OP_RESIZE, nullptr},
};

static_assert(covers_every_op_in_order(kFamilies), "an entry for every op, in phx_op_id order");

Recorder recorder_of(phx_op_id op) {
  return op > PHX_OP_INVALID && op < PHX_OP_COUNT ? kFamilies[op - 1].record : nullptr;
}

}  // namespace

bool op_supported(const DeviceCaps& caps, phx_op_id op, phx_dtype dtype) {
  const OpSchema* schema = find_op_schema(op);
  return recorder_of(op) != nullptr && (schema->dtypes & PHX_DTYPE_BIT(dtype)) != 0 &&
         ops::device_holds(caps, dtype);
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
