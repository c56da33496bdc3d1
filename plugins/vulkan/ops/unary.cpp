// The unary ops (shaders/unary.comp): relu, gelu, silu, the math functions of API 0.3,
// leaky_relu, elu, selu, clip and hard_sigmoid (their phx_elementwise_params as push
// constants), hard_swish, sin, cos, round and not. The module of an op is <op name>_<dtype>.
#include <phx/op_table.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {
namespace {

// A clip bound for an integer dtype, as the host kernel takes it: rounded toward the
// inside of [alpha, beta] (up for the lower bound), then saturated to the dtype.
int32_t int_bound(phx_dtype dtype, float bound, bool lower) {
  const double rounded = lower ? std::ceil(double{bound}) : std::floor(double{bound});
  double low = 0.0, high = 255.0;  // u8
  if (dtype == PHX_DTYPE_I8) low = -128.0, high = 127.0;
  if (dtype == PHX_DTYPE_I16) low = -32768.0, high = 32767.0;
  if (dtype == PHX_DTYPE_I32) low = -2147483648.0, high = 2147483647.0;
  return static_cast<int32_t>(std::clamp(rounded, low, high));
}

}  // namespace

void record_unary(OpRecorder& recorder, const phx_plugin_op& op) {
  const phx_plugin_tensor& x = op.inputs[0];
  const std::string kernel =
      std::string(find_op_schema(op.op)->name) + "_" + std::string(dtype_name(x.dtype));
  const auto* params = static_cast<const phx_elementwise_params*>(op.params);
  if (params == nullptr) {
    record_elementwise_map(recorder, kernel, x, op.outputs[0], {}, true);
  } else if (op.op == PHX_OP_CLIP && !is_float(x.dtype)) {
    record_elementwise_map(recorder, kernel, x, op.outputs[0],
                           {static_cast<uint32_t>(int_bound(x.dtype, params->alpha, true)),
                            static_cast<uint32_t>(int_bound(x.dtype, params->beta, false))},
                           true);
  } else {
    record_elementwise_map(
        recorder, kernel, x, op.outputs[0],
        {std::bit_cast<uint32_t>(params->alpha), std::bit_cast<uint32_t>(params->beta)}, true);
  }
}

}  // namespace phx::vulkan::ops
