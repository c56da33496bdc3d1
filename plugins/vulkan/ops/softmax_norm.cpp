// softmax and log_softmax along any axis, layer_norm and rms_norm over the last
// dimension, instance_norm over the spatial dimensions (shaders/softmax.comp,
// shaders/norm.comp): a workgroup per line (an invocation per line on CPU devices,
// dispatch_lines). Tensors larger than one binding are UNSUPPORTED. batch_norm
// (shaders/batch_norm.comp): an invocation per element, or per 8 of one channel on CPU
// devices.
#include <phx/op_table.h>

#include <algorithm>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {
namespace {

// Dispatches one workgroup per line, or one invocation per line where
// line_per_invocation says so (shaders/reduce_line.glsl), in grids the device allows;
// Push begins with {base, count}.
template <class Push>
void dispatch_lines(OpRecorder& recorder, const std::string& kernel,
                    std::initializer_list<Binding> bindings, Push push, uint64_t lines,
                    uint64_t line_length) {
  const bool per_invocation = line_per_invocation(recorder.caps(), lines, line_length);
  const uint64_t lines_per_group = per_invocation ? kLineWorkgroup : 1;
  const uint64_t chunk = max_grid_groups(recorder.caps()) * lines_per_group;
  for (uint64_t first = 0; first < lines; first += chunk) {
    const uint64_t count = std::min(chunk, lines - first);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    dispatch_grid(recorder, kernel, bindings, &push, sizeof push,
                  (count + lines_per_group - 1) / lines_per_group, {{0, per_invocation ? 1u : 0u}});
  }
}

}  // namespace

void record_softmax(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, n, inner;
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const auto& params = *static_cast<const phx_softmax_params*>(op.params);
  const uint32_t rank = x.rank == 0 ? 1 : x.rank;  // a scalar is one line of one
  const auto axis = static_cast<uint32_t>(params.axis < 0 ? params.axis + static_cast<int32_t>(rank)
                                                          : params.axis);
  uint64_t inner = 1;
  for (uint32_t d = axis + 1; d < x.rank; ++d) inner *= static_cast<uint64_t>(x.shape[d]);
  const auto n = static_cast<uint64_t>(x.shape[axis]);
  const Push push = {0, 0, static_cast<uint32_t>(n), static_cast<uint32_t>(inner)};
  const char* name = op.op == PHX_OP_SOFTMAX ? "softmax_" : "log_softmax_";
  dispatch_lines(recorder, name + std::string(dtype_name(x.dtype)),
                 {recorder.bind(x), recorder.bind(op.outputs[0])}, push, element_count(x) / n, n);
}

void record_norm(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, d;
    float epsilon;
    uint32_t flags, channels;
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const auto& params = *static_cast<const phx_norm_params*>(op.params);
  const phx_plugin_tensor* gamma = optional_input(op, 1);
  const phx_plugin_tensor* beta = op.op != PHX_OP_RMS_NORM ? optional_input(op, 2) : nullptr;
  // instance_norm's rows are the (n, c) slices of x [N, C, D1, ...].
  const bool instance = op.op == PHX_OP_INSTANCE_NORM;
  const auto channels = static_cast<uint32_t>(instance ? x.shape[1] : 1);
  const uint64_t d = instance      ? element_count(x) / x.shape[0] / channels
                     : x.rank == 0 ? 1
                                   : static_cast<uint64_t>(x.shape[x.rank - 1]);
  const Binding xb = recorder.bind(x);
  // An absent gamma or beta binds x in its place; the shader does not read it.
  const Binding gb = gamma ? recorder.bind(*gamma) : xb;
  const Binding bb = beta ? recorder.bind(*beta) : xb;
  const Push push = {
      0,       0, static_cast<uint32_t>(d), params.epsilon, (gamma ? 1u : 0u) | (beta ? 2u : 0u),
      channels};
  const std::string kernel =
      std::string(find_op_schema(op.op)->name) + "_" + std::string(dtype_name(x.dtype));
  dispatch_lines(recorder, kernel, {xb, gb, bb, recorder.bind(op.outputs[0])}, push,
                 element_count(x) / d, d);
}

void record_batch_norm(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, x_shift, y_shift, channels, spatial;
    float epsilon;
  };
  constexpr uint64_t kWorkgroup = 256;
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_norm_params*>(op.params);
  const uint64_t total = element_count(x);
  const std::string kernel = "batch_norm_" + std::string(dtype_name(x.dtype));
  if (total > UINT32_MAX) fail_unsupported(kernel + ": more than 2^32 elements");
  const auto channels = static_cast<uint32_t>(x.shape[1]);
  Push push = {
      0, 0, 0, 0, channels, static_cast<uint32_t>(total / x.shape[0] / channels), params.epsilon};
  const Binding scale = recorder.bind(op.inputs[1]);
  const Binding bias = recorder.bind(op.inputs[2]);
  const Binding mean = recorder.bind(op.inputs[3]);
  const Binding var = recorder.bind(op.inputs[4]);
  const DeviceCaps& caps = recorder.caps();
  uint64_t chunk = std::min(elements_per_binding(caps, dtype_bytes(x.dtype)),
                            max_grid_groups(caps) * kWorkgroup);
  chunk -= chunk % 8;  // every chunk's first element a multiple of 8
  // On CPU devices 8 elements of one channel per invocation (batch_norm.comp's VEC8).
  const bool eight_fit = moves_eights(caps, x.dtype) && push.spatial % 8 == 0;
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t count = std::min(chunk, total - first);
    const ElementRange xr = bind_elements(recorder, x, first, count);
    const ElementRange yr = bind_elements(recorder, y, first, count);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    push.x_shift = xr.shift;
    push.y_shift = yr.shift;
    const bool eight = eight_fit && xr.shift % 8 == 0 && yr.shift % 8 == 0;
    const uint64_t invocations = eight ? (count + 7) / 8 : count;
    dispatch_grid(recorder, kernel, {xr.binding, scale, bias, mean, var, yr.binding}, &push,
                  sizeof push, (invocations + kWorkgroup - 1) / kWorkgroup, {{0, eight ? 1u : 0u}});
  }
}

}  // namespace phx::vulkan::ops
