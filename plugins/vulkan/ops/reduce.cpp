// reduce_sum, reduce_max over an axis mask (shaders/reduce.comp): a workgroup per output
// element. Size-1 dimensions are dropped and neighbours of the same kind (both reduced
// or both kept) merged. Tensors larger than one binding are UNSUPPORTED.
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_reduce(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, reduced, rank, mask;
    uint32_t shape[8];
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_reduce_params*>(op.params);
  const uint32_t axes = params.axes_mask == 0 ? 0xFFu : params.axes_mask;

  Push push = {};
  bool last_reduced = false;
  uint64_t reduced = 1;
  for (uint32_t d = 0; d < x.rank; ++d) {
    const auto size = static_cast<uint32_t>(x.shape[d]);
    if (size == 1) continue;
    const bool is_reduced = (axes >> d) & 1u;
    if (is_reduced) reduced *= size;
    if (push.rank > 0 && last_reduced == is_reduced) {
      push.shape[push.rank - 1] *= size;
    } else {
      push.shape[push.rank] = size;
      if (is_reduced) push.mask |= 1u << push.rank;
      ++push.rank;
    }
    last_reduced = is_reduced;
  }
  push.reduced = static_cast<uint32_t>(reduced);

  const std::string kernel =
      std::string(op.op == PHX_OP_REDUCE_SUM ? "reduce_sum_" : "reduce_max_") +
      std::string(dtype_name(x.dtype));
  const Binding xb = recorder.bind(x);
  const Binding yb = recorder.bind(y);
  const uint64_t outputs = element_count(y);
  const uint64_t chunk = max_grid_groups(recorder.caps());
  for (uint64_t first = 0; first < outputs; first += chunk) {
    const uint64_t count = std::min(chunk, outputs - first);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    dispatch_grid(recorder, kernel, {xb, yb}, &push, sizeof push, count);
  }
}

}  // namespace phx::vulkan::ops
