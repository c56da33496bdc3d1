// softmax along any axis, layer_norm and rms_norm over the last dimension
// (shaders/softmax.comp, shaders/norm.comp): a workgroup per line. Tensors larger than
// one binding are UNSUPPORTED.
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {
namespace {

// Dispatches one workgroup per line in grids the device allows; Push begins with
// {base, count}.
template <class Push>
void dispatch_lines(OpRecorder& recorder, const std::string& kernel,
                    std::initializer_list<Binding> bindings, Push push, uint64_t lines) {
  const uint64_t chunk = max_grid_groups(recorder.caps());
  for (uint64_t first = 0; first < lines; first += chunk) {
    const uint64_t count = std::min(chunk, lines - first);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    dispatch_grid(recorder, kernel, bindings, &push, sizeof push, count);
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
  dispatch_lines(recorder, "softmax_" + std::string(dtype_name(x.dtype)),
                 {recorder.bind(x), recorder.bind(op.outputs[0])}, push, element_count(x) / n);
}

void record_norm(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, d;
    float epsilon;
    uint32_t flags;
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const auto& params = *static_cast<const phx_norm_params*>(op.params);
  const phx_plugin_tensor* gamma = optional_input(op, 1);
  const phx_plugin_tensor* beta = op.op == PHX_OP_LAYER_NORM ? optional_input(op, 2) : nullptr;
  const auto d = static_cast<uint64_t>(x.rank == 0 ? 1 : x.shape[x.rank - 1]);
  const Binding xb = recorder.bind(x);
  // An absent gamma or beta binds x in its place; the shader does not read it.
  const Binding gb = gamma ? recorder.bind(*gamma) : xb;
  const Binding bb = beta ? recorder.bind(*beta) : xb;
  const Push push = {0, 0, static_cast<uint32_t>(d), params.epsilon,
                     (gamma ? 1u : 0u) | (beta ? 2u : 0u)};
  const std::string kernel =
      (op.op == PHX_OP_LAYER_NORM ? "layer_norm_" : "rms_norm_") + std::string(dtype_name(x.dtype));
  dispatch_lines(recorder, kernel, {xb, gb, bb, recorder.bind(op.outputs[0])}, push,
                 element_count(x) / d);
}

}  // namespace phx::vulkan::ops
