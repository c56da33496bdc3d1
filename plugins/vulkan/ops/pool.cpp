// max_pool and avg_pool over 1 to 3 spatial dimensions (shaders/pool.comp): one
// invocation per output element. The spatial dimensions are taken as the last of three,
// the missing ones of size 1 with a kernel of 1. Tensors larger than one binding are
// UNSUPPORTED.
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_pool(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, count_include_pad;
    uint32_t in_extent[3], out_extent[3], kernel[3], stride[3], pad_begin[3], pad_end[3],
        dilation[3];
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_pool_params*>(op.params);
  const uint32_t k = x.rank - 2;
  Push push = {};
  push.count_include_pad = params.count_include_pad != 0;
  for (uint32_t a = 0; a < 3; ++a) {
    push.in_extent[a] = push.out_extent[a] = push.kernel[a] = push.stride[a] = push.dilation[a] = 1;
  }
  for (uint32_t i = 0; i < k; ++i) {
    const uint32_t a = 3 - k + i;
    push.in_extent[a] = static_cast<uint32_t>(x.shape[2 + i]);
    push.out_extent[a] = static_cast<uint32_t>(y.shape[2 + i]);
    push.kernel[a] = params.kernel[i];
    push.stride[a] = std::max<uint32_t>(params.stride[i], 1);
    push.dilation[a] = std::max<uint32_t>(params.dilation[i], 1);
    push.pad_begin[a] = params.pad_begin[i];
    push.pad_end[a] = params.pad_end[i];
  }
  const std::string kernel = std::string(op.op == PHX_OP_MAX_POOL ? "max_pool_" : "avg_pool_") +
                             std::string(dtype_name(x.dtype));
  dispatch_per_element(recorder, kernel, {recorder.bind(x), recorder.bind(y)}, push,
                       element_count(y));
}

}  // namespace phx::vulkan::ops
