// reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod over an axis mask, and
// argmax over one axis (shaders/reduce.comp): a workgroup per output element. Size-1 dimensions are
// dropped and neighbours of the same kind (both reduced or both kept) merged. Tensors larger than
// one binding are UNSUPPORTED.
#include <phx/op_table.h>

#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_reduce(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, reduced, rank, mask, flags;
    uint32_t shape[8];
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& y = op.outputs[0];
  Push push = {};
  uint32_t axes = 0;
  if (op.op == PHX_OP_ARGMAX) {
    const auto& params = *static_cast<const phx_argmax_params*>(op.params);
    const int32_t rank = static_cast<int32_t>(x.rank);
    axes = 1u << static_cast<uint32_t>(params.axis < 0 ? params.axis + rank : params.axis);
    push.flags = params.select_last_index != 0 ? 1u : 0u;
  } else {
    const auto& params = *static_cast<const phx_reduce_params*>(op.params);
    axes = params.axes_mask == 0 ? 0xFFu : params.axes_mask;
  }

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

  // The schema's name: reduce_sum, ..., argmax.
  const std::string kernel =
      std::string(find_op_schema(op.op)->name) + "_" + std::string(dtype_name(x.dtype));
  const Binding xb = recorder.bind(x);
  const Binding yb = recorder.bind(y);
  const uint64_t outputs = element_count(y);
  // An output is a line: an invocation each where line_per_invocation says so.
  const bool per_invocation = line_per_invocation(recorder.caps(), outputs, reduced);
  const uint64_t outputs_per_group = per_invocation ? kLineWorkgroup : 1;
  const uint64_t chunk = max_grid_groups(recorder.caps()) * outputs_per_group;
  for (uint64_t first = 0; first < outputs; first += chunk) {
    const uint64_t count = std::min(chunk, outputs - first);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    dispatch_grid(recorder, kernel, {xb, yb}, &push, sizeof push,
                  (count + outputs_per_group - 1) / outputs_per_group,
                  {{0, per_invocation ? 1u : 0u}});
  }
}

}  // namespace phx::vulkan::ops
