#include "op_util.h"

#include <algorithm>
#include <cstddef>

namespace phx::vulkan::ops {

std::string_view dtype_name(phx_dtype dtype) {
  switch (dtype) {
    case PHX_DTYPE_F32:
      return "f32";
    case PHX_DTYPE_F16:
      return "f16";
    case PHX_DTYPE_BF16:
      return "bf16";
    case PHX_DTYPE_I8:
      return "i8";
    case PHX_DTYPE_I16:
      return "i16";
    case PHX_DTYPE_I32:
      return "i32";
    case PHX_DTYPE_U8:
      return "u8";
    default:
      return "invalid";
  }
}

uint32_t dtype_bytes(phx_dtype dtype) {
  return static_cast<uint32_t>(phx_plugin_dtype_size(dtype));
}

std::string moving_kernel(std::string_view shader, phx_dtype dtype) {
  return std::string(shader) + "_" + std::to_string(dtype_bytes(dtype));
}

bool is_float(phx_dtype dtype) {
  return dtype == PHX_DTYPE_F32 || dtype == PHX_DTYPE_F16 || dtype == PHX_DTYPE_BF16;
}

bool device_holds(const DeviceCaps& caps, phx_dtype dtype) {
  switch (dtype) {
    case PHX_DTYPE_F32:
    case PHX_DTYPE_I32:
      return true;
    case PHX_DTYPE_F16:
    case PHX_DTYPE_BF16:
    case PHX_DTYPE_I16:
      return caps.storage_16bit;
    case PHX_DTYPE_I8:
    case PHX_DTYPE_U8:
      return caps.storage_8bit;
    default:
      return false;
  }
}

uint64_t element_count(const phx_plugin_tensor& tensor) {
  return phx_plugin_element_count(tensor.rank, tensor.shape);
}

const phx_plugin_tensor* optional_input(const phx_plugin_op& op, size_t index) {
  if (index >= op.input_count || op.inputs[index].buffer == nullptr) return nullptr;
  return &op.inputs[index];
}

void fail_unsupported(const std::string& message) { throw Error{PHX_STATUS_UNSUPPORTED, message}; }

ElementRange bind_elements(OpRecorder& recorder, const phx_plugin_tensor& tensor, uint64_t first,
                           uint64_t count) {
  const uint64_t size = dtype_bytes(tensor.dtype);
  uint64_t skip = 0;
  const Binding binding = recorder.bind_range(tensor, first * size, count * size, &skip);
  return {binding, static_cast<uint32_t>(skip / size - first)};
}

uint64_t elements_per_binding(const DeviceCaps& caps, uint32_t element_bytes) {
  // A range may start up to one alignment below the first element.
  return (caps.max_binding_bytes - caps.binding_offset_alignment) / element_bytes;
}

uint64_t max_grid_groups(const DeviceCaps& caps) {
  return static_cast<uint64_t>(caps.max_workgroup_count[0]) * caps.max_workgroup_count[1];
}

void dispatch_grid(OpRecorder& recorder, std::string_view kernel,
                   std::initializer_list<Binding> bindings, const void* push, uint32_t push_size,
                   uint64_t groups,
                   std::initializer_list<OpRecorder::SpecConstant> spec_constants) {
  if (groups == 0) return;
  const DeviceCaps& caps = recorder.caps();
  if (groups > max_grid_groups(caps)) {
    fail_unsupported(std::string(kernel) + ": " + std::to_string(groups) +
                     " workgroups exceed the device's grid");
  }
  const uint64_t x = std::min<uint64_t>(groups, caps.max_workgroup_count[0]);
  const uint64_t y = (groups + x - 1) / x;
  recorder.dispatch(kernel, bindings, push, push_size, spec_constants, static_cast<uint32_t>(x),
                    static_cast<uint32_t>(y), 1);
}

bool moves_eights(const DeviceCaps& caps, phx_dtype dtype) {
  return caps.cpu_device && (dtype_bytes(dtype) == 2 || dtype_bytes(dtype) == 4);
}

bool line_per_invocation(const DeviceCaps& caps, uint64_t lines, uint64_t line_length) {
  return caps.cpu_device && (line_length < kLineWorkgroup || lines >= 2 * kLineWorkgroup);
}

void record_elementwise_map(OpRecorder& recorder, std::string_view kernel,
                            const phx_plugin_tensor& x, const phx_plugin_tensor& y,
                            std::initializer_list<uint32_t> params, bool takes_eight) {
  struct Push {
    uint32_t base, count, x_shift, y_shift;
    uint32_t params[4];
  };
  if (params.size() > 4) fail_unsupported(std::string(kernel) + ": more than 4 parameters");
  const auto push_size = static_cast<uint32_t>(offsetof(Push, params) + 4 * params.size());
  constexpr uint64_t kWorkgroup = 256;
  const DeviceCaps& caps = recorder.caps();
  const uint64_t total = element_count(x);
  if (total > UINT32_MAX) fail_unsupported(std::string(kernel) + ": more than 2^32 elements");
  const uint64_t chunk =
      std::min({elements_per_binding(caps, std::max(dtype_bytes(x.dtype), dtype_bytes(y.dtype))),
                max_grid_groups(caps) * kWorkgroup});
  const bool eight_fit = takes_eight && moves_eights(caps, x.dtype);
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t count = std::min(chunk, total - first);
    const ElementRange xr = bind_elements(recorder, x, first, count);
    const ElementRange yr = bind_elements(recorder, y, first, count);
    Push push = {
        static_cast<uint32_t>(first), static_cast<uint32_t>(count), xr.shift, yr.shift, {}};
    std::copy(params.begin(), params.end(), push.params);
    const uint32_t at = push.base;  // the binding-relative index is at + shift (mod 2^32)
    const bool eight = eight_fit && (at + xr.shift) % 8 == 0 && (at + yr.shift) % 8 == 0;
    const uint64_t invocations = eight ? (count + 7) / 8 : count;
    dispatch_grid(recorder, kernel, {xr.binding, yr.binding}, &push, push_size,
                  (invocations + kWorkgroup - 1) / kWorkgroup, {{0, eight ? 1u : 0u}});
  }
}

}  // namespace phx::vulkan::ops
