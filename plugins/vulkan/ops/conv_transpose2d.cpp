// conv_transpose2d, NCHW, with stride, padding, output padding, dilation, groups and bias
// (shaders/conv_transpose2d.comp): one invocation per output element. Tensors larger than
// one binding are UNSUPPORTED.
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_conv_transpose2d(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count;
    uint32_t c, h, w;
    uint32_t c_out, kh, kw, h_out, w_out;
    uint32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
    uint32_t groups;
    uint32_t has_bias;
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& weight = op.inputs[1];
  const phx_plugin_tensor* bias = optional_input(op, 2);
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_conv_transpose2d_params*>(op.params);
  const auto dim = [](const phx_plugin_tensor& t, int i) {
    return static_cast<uint32_t>(t.shape[i]);
  };
  Push push = {};
  push.c = dim(x, 1);
  push.h = dim(x, 2);
  push.w = dim(x, 3);
  push.c_out = dim(y, 1);
  push.kh = dim(weight, 2);
  push.kw = dim(weight, 3);
  push.h_out = dim(y, 2);
  push.w_out = dim(y, 3);
  push.stride_h = params.stride[0];
  push.stride_w = params.stride[1];
  push.pad_top = params.padding[0];
  push.pad_left = params.padding[2];
  push.dilation_h = params.dilation[0];
  push.dilation_w = params.dilation[1];
  push.groups = params.groups;
  push.has_bias = bias != nullptr;

  const Binding wb = recorder.bind(weight);
  const Binding bb = bias ? recorder.bind(*bias) : wb;  // unread without a bias
  dispatch_per_element(recorder, "conv_transpose2d_" + std::string(dtype_name(x.dtype)),
                       {recorder.bind(x), wb, bb, recorder.bind(y)}, push, element_count(y));
}

}  // namespace phx::vulkan::ops
