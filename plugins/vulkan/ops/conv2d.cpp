// conv2d, NCHW or NHWC, with stride, padding, dilation, groups, bias and a fused
// activation (shaders/conv2d.comp): one invocation per output element. Tensors larger
// than one binding are UNSUPPORTED.
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_conv2d(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count;
    uint32_t n, c, h, w;
    uint32_t c_out, kh, kw, h_out, w_out;
    uint32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
    uint32_t groups;
    uint32_t flags;
  };
  constexpr uint64_t kWorkgroup = 256;
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& weight = op.inputs[1];
  const phx_plugin_tensor* bias = optional_input(op, 2);
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_conv2d_params*>(op.params);
  const bool nhwc = params.layout == PHX_LAYOUT_NHWC;
  const auto dim = [](const phx_plugin_tensor& t, int i) {
    return static_cast<uint32_t>(t.shape[i]);
  };

  Push push = {};
  push.n = dim(x, 0);
  push.c = nhwc ? dim(x, 3) : dim(x, 1);
  push.h = nhwc ? dim(x, 1) : dim(x, 2);
  push.w = nhwc ? dim(x, 2) : dim(x, 3);
  push.c_out = dim(weight, 0);
  push.kh = nhwc ? dim(weight, 1) : dim(weight, 2);
  push.kw = nhwc ? dim(weight, 2) : dim(weight, 3);
  push.h_out = nhwc ? dim(y, 1) : dim(y, 2);
  push.w_out = nhwc ? dim(y, 2) : dim(y, 3);
  push.stride_h = params.stride[0];
  push.stride_w = params.stride[1];
  push.pad_top = params.padding[0];
  push.pad_left = params.padding[2];
  push.dilation_h = params.dilation[0];
  push.dilation_w = params.dilation[1];
  push.groups = params.groups;
  push.flags =
      (nhwc ? 1u : 0u) | (bias ? 2u : 0u) | (static_cast<uint32_t>(params.activation) << 8);

  const Binding xb = recorder.bind(x);
  const Binding wb = recorder.bind(weight);
  const Binding bb = bias ? recorder.bind(*bias) : wb;  // unread without a bias
  const Binding yb = recorder.bind(y);
  const std::string kernel = "conv2d_" + std::string(dtype_name(x.dtype));
  const uint64_t total = element_count(y);
  const uint64_t chunk = max_grid_groups(recorder.caps()) * kWorkgroup;
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t count = std::min(chunk, total - first);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    dispatch_grid(recorder, kernel, {xb, wb, bb, yb}, &push, sizeof push,
                  (count + kWorkgroup - 1) / kWorkgroup);
  }
}

}  // namespace phx::vulkan::ops
