// relu, gelu, silu (shaders/unary.comp).
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_unary(OpRecorder& recorder, const phx_plugin_op& op) {
  const char* name = op.op == PHX_OP_RELU ? "relu_" : op.op == PHX_OP_GELU ? "gelu_" : "silu_";
  const std::string kernel = name + std::string(dtype_name(op.inputs[0].dtype));
  record_elementwise_map(recorder, kernel, op.inputs[0], op.outputs[0]);
}

}  // namespace phx::vulkan::ops
