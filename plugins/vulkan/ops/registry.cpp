// Which ops and dtypes the device runs (docs/ops.md's rules, narrowed by what the device
// can hold in storage buffers) and the routing of a recorded op to its family.
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan {

bool op_supported(const DeviceCaps& caps, phx_op_id op, phx_dtype dtype) {
  using ops::is_float;
  if (!ops::device_holds(caps, dtype)) return false;
  switch (op) {
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_TRANSPOSE:
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX:
    case PHX_OP_CAST:
      return true;
    case PHX_OP_RELU:
      return dtype != PHX_DTYPE_U8;
    case PHX_OP_MATMUL:
    case PHX_OP_DIV:
    case PHX_OP_GELU:
    case PHX_OP_SILU:
    case PHX_OP_SOFTMAX:
    case PHX_OP_LAYER_NORM:
    case PHX_OP_RMS_NORM:
    case PHX_OP_CONV2D:
    case PHX_OP_ATTENTION:
    case PHX_OP_ROPE:
      return is_float(dtype);
    default:
      return false;  // the quantized ops are not implemented on Vulkan
  }
}

void record_op(OpRecorder& recorder, const phx_plugin_op& op) {
  const phx_dtype dtype = op.inputs[0].dtype;
  if (!op_supported(recorder.caps(), op.op, dtype)) {
    ops::fail_unsupported("the Vulkan device does not run op " + std::to_string(op.op) + " on " +
                          std::string(ops::dtype_name(dtype)));
  }
  switch (op.op) {
    case PHX_OP_MATMUL:
      return ops::record_matmul(recorder, op);
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_DIV:
      return ops::record_binary(recorder, op);
    case PHX_OP_RELU:
    case PHX_OP_GELU:
    case PHX_OP_SILU:
      return ops::record_unary(recorder, op);
    case PHX_OP_SOFTMAX:
      return ops::record_softmax(recorder, op);
    case PHX_OP_LAYER_NORM:
    case PHX_OP_RMS_NORM:
      return ops::record_norm(recorder, op);
    case PHX_OP_TRANSPOSE:
      return ops::record_transpose(recorder, op);
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX:
      return ops::record_reduce(recorder, op);
    case PHX_OP_CAST:
      return ops::record_cast(recorder, op);
    case PHX_OP_CONV2D:
      return ops::record_conv2d(recorder, op);
    case PHX_OP_ATTENTION:
      return ops::record_attention(recorder, op);
    case PHX_OP_ROPE:
      return ops::record_rope(recorder, op);
    default:
      ops::fail_unsupported("op " + std::to_string(op.op) + " is not implemented on Vulkan");
  }
}

}  // namespace phx::vulkan
