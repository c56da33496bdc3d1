// resize, nearest and N-linear (shaders/resize.comp): as the CPU device computes it, a
// pass per resized dimension in f32 (x converted by the first, the result rounded by the
// last), from the taps the host kernel takes (phx/op_geometry.h), computed here in double
// and written into the command buffer: the same bits as the CPU device. Dimensions mapped
// onto themselves take no pass. Tensors larger than one binding are UNSUPPORTED.
#include <phx/op_geometry.h>

#include <string>
#include <vector>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_resize(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count, inner, in_extent, out_extent;
  };
  struct GpuTap {  // resize.comp's Tap
    int32_t lo, hi;
    float w_lo, w_hi;
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_resize_params*>(op.params);
  if (element_count(y) > INT32_MAX || element_count(x) > INT32_MAX)
    fail_unsupported("resize of more than 2^31 elements");

  const std::vector<ResizePass> passes = resize_passes(params, x.rank, x.shape, y.shape);
  if (passes.empty()) {  // every dimension maps onto itself: a flat copy, as reshape's
    record_reshape(recorder, op);
    return;
  }

  int64_t shape[PHX_MAX_RANK];
  std::copy(x.shape, x.shape + x.rank, shape);
  Binding src = recorder.bind(x);
  phx_dtype src_dtype = x.dtype;
  for (size_t i = 0; i < passes.size(); ++i) {
    const uint32_t d = passes[i].dim;
    Push push = {};
    push.inner = static_cast<uint32_t>(phx_plugin_element_count(x.rank - d - 1, shape + d + 1));
    push.in_extent = static_cast<uint32_t>(shape[d]);
    push.out_extent = static_cast<uint32_t>(y.shape[d]);
    shape[d] = y.shape[d];
    const bool last = i + 1 == passes.size();
    const uint64_t count = phx_plugin_element_count(x.rank, shape);
    const phx_dtype dst_dtype = last ? y.dtype : PHX_DTYPE_F32;
    const Binding dst = last ? recorder.bind(y) : recorder.scratch(count * sizeof(float));
    std::vector<GpuTap> table;
    for (const ResizeTap& t : passes[i].taps)
      table.push_back({static_cast<int32_t>(t.lo), static_cast<int32_t>(t.hi), t.w_lo, t.w_hi});
    const Binding tb = recorder.upload(table.data(), table.size() * sizeof(GpuTap));
    const std::string kernel =
        "resize_" + std::string(dtype_name(src_dtype)) + "_" + std::string(dtype_name(dst_dtype));
    dispatch_per_element(recorder, kernel, {src, tb, dst}, push, count);
    if (!last) recorder.barrier();  // the next pass reads what this one wrote
    src = dst;
    src_dtype = dst_dtype;
  }
}

}  // namespace phx::vulkan::ops
