// What the simulators' timing models (tpu-sim's op_cost, npu-sim's) count alike for the
// ops whose work is not one pass over their largest tensor: the pools and resize work per
// output element, gather and slice touch only part of their input.
#pragma once

#include <phynexus/plugin.h>

#include <cstdint>
#include <optional>

namespace phx::plugin_common {

// Elementary vector operations per output element of max_pool, avg_pool and resize
// (first order): a pool compares (max) or adds (avg) each element of its window, plus the
// mean's multiply for avg_pool; resize moves one element (nearest) or, for linear,
// multiplies and adds each of the 2^r taps of the r dimensions it resamples. 0 for other
// ops. Their parameters are required by the op rules, so op.params is never null here.
inline uint64_t ops_per_output(const phx_plugin_op& op) {
  const phx_plugin_tensor& x = op.inputs[0];
  if (op.op == PHX_OP_MAX_POOL || op.op == PHX_OP_AVG_POOL) {
    const auto* p = static_cast<const phx_pool_params*>(op.params);
    uint64_t window = 1;
    for (uint32_t d = 0; d + 2 < x.rank && d < 3; ++d) window *= p->kernel[d];
    return window + (op.op == PHX_OP_AVG_POOL ? 1 : 0);
  }
  if (op.op == PHX_OP_RESIZE) {
    const auto* p = static_cast<const phx_resize_params*>(op.params);
    if (p->mode == PHX_RESIZE_NEAREST) return 1;
    uint64_t taps = 1;
    for (uint32_t d = 0; d < x.rank; ++d)
      if (x.shape[d] != op.outputs[0].shape[d]) taps *= 2;
    return 2 * taps;
  }
  return 0;
}

// Whether op touches only the elements it picks (gather, slice): its output's, not its
// input's, however large that is.
inline bool picks_elements(const phx_plugin_op& op) {
  return op.op == PHX_OP_GATHER || op.op == PHX_OP_SLICE;
}

// The bytes gather and slice read: only the elements they pick (the output's bytes) and
// gather's indices; nullopt for the other ops, which read every input once.
inline std::optional<uint64_t> picked_read_bytes(const phx_plugin_op& op) {
  if (!picks_elements(op)) return std::nullopt;
  const auto size = [](const phx_plugin_tensor& t) {
    return phx_plugin_element_count(t.rank, t.shape) * phx_plugin_dtype_size(t.dtype);
  };
  return size(op.outputs[0]) + (op.op == PHX_OP_GATHER ? size(op.inputs[1]) : 0);
}

}  // namespace phx::plugin_common
