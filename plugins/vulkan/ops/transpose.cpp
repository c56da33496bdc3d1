// transpose with any permutation up to rank 8 (shaders/transpose.comp, or the layout ops'
// strided copy when the last axis stays): one module per element size, since values are
// only moved. Tensors larger than one binding are UNSUPPORTED.
#include <cstdint>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_transpose(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, rank;
    uint32_t shape[8];
    uint32_t stride[8];
  };
  constexpr uint64_t kWorkgroup = 256;
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_transpose_params*>(op.params);

  uint64_t x_stride[8] = {};
  uint64_t stride = 1;
  for (uint32_t d = x.rank; d-- > 0;) {
    x_stride[d] = stride;
    stride *= static_cast<uint64_t>(x.shape[d]);
  }
  // A permutation that keeps the last axis moves whole rows: the layout ops' strided copy
  // takes it, merging the dimensions contiguous in both and, on CPU devices, moving 8
  // elements at a time (the transposes of attention heads and of ShuffleNet's channels).
  if (y.rank > 0 && params.perm[y.rank - 1] == y.rank - 1 && stride <= INT32_MAX) {
    int64_t src_stride[8] = {};
    for (uint32_t d = 0; d < y.rank; ++d) {
      src_stride[d] = static_cast<int64_t>(x_stride[params.perm[d]]);
    }
    record_gather_view(recorder, x, y, 0, src_stride);
    return;
  }
  Push push = {};
  push.rank = y.rank;
  for (uint32_t d = 0; d < y.rank; ++d) {
    push.shape[d] = static_cast<uint32_t>(y.shape[d]);
    push.stride[d] = static_cast<uint32_t>(x_stride[params.perm[d]]);
  }
  const std::string kernel = moving_kernel("transpose", x.dtype);
  const Binding xb = recorder.bind(x);
  const Binding yb = recorder.bind(y);
  const uint64_t total = element_count(y);
  const uint64_t chunk = max_grid_groups(recorder.caps()) * kWorkgroup;
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t count = std::min(chunk, total - first);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    dispatch_grid(recorder, kernel, {xb, yb}, &push, sizeof push,
                  (count + kWorkgroup - 1) / kWorkgroup);
  }
}

}  // namespace phx::vulkan::ops
