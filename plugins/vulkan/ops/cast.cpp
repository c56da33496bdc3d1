// cast between any two dtypes (shaders/cast.comp): a module per pair.
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_cast(OpRecorder& recorder, const phx_plugin_op& op) {
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& y = op.outputs[0];
  if (!device_holds(recorder.caps(), y.dtype)) {
    fail_unsupported("cast: the device cannot hold " + std::string(dtype_name(y.dtype)));
  }
  const std::string kernel =
      "cast_" + std::string(dtype_name(x.dtype)) + "_" + std::string(dtype_name(y.dtype));
  record_elementwise_map(recorder, kernel, x, y);
}

}  // namespace phx::vulkan::ops
