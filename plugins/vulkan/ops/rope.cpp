// rope with a precomputed cos/sin table (shaders/rope.comp). Tensors larger than one
// binding are UNSUPPORTED.
#include <algorithm>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_rope(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, s, d, r, lanes, interleaved;
  };
  constexpr uint64_t kWorkgroup = 256;
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& cos = op.inputs[1];
  const phx_plugin_tensor& sin = op.inputs[2];
  const auto& params = *static_cast<const phx_rope_params*>(op.params);
  const auto d = static_cast<uint32_t>(x.shape[x.rank - 1]);
  const auto s = static_cast<uint32_t>(x.shape[x.rank - 2]);
  const auto r = static_cast<uint32_t>(cos.shape[1]);
  // Each lane rotates one pair and copies one feature past 2R, whichever it has.
  const uint32_t lanes = std::max(r, d - 2 * r);
  const uint64_t rows = element_count(x) / d;
  const uint64_t total = rows * lanes;
  if (total > UINT32_MAX) fail_unsupported("rope: more than 2^32 pairs");

  Push push = {0, 0, s, d, r, lanes, params.interleaved != 0 ? 1u : 0u};
  const Binding xb = recorder.bind(x);
  const Binding cb = recorder.bind(cos);
  const Binding sb = recorder.bind(sin);
  const Binding yb = recorder.bind(op.outputs[0]);
  const std::string kernel = "rope_" + std::string(dtype_name(x.dtype));
  const uint64_t chunk = max_grid_groups(recorder.caps()) * kWorkgroup;
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t count = std::min(chunk, total - first);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    dispatch_grid(recorder, kernel, {xb, cb, sb, yb}, &push, sizeof push,
                  (count + kWorkgroup - 1) / kWorkgroup);
  }
}

}  // namespace phx::vulkan::ops
