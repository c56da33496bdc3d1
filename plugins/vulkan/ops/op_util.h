// Helpers the op implementations share: dtypes, shapes, sub-range bindings of large
// tensors and 1-D grids that respect the device's workgroup-count limits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "../op_recorder.h"

namespace phx::vulkan::ops {

// "f32", "f16", "bf16", "i8", "i16", "i32", "u8": the suffix of the modules' names.
std::string_view dtype_name(phx_dtype dtype);
uint32_t dtype_bytes(phx_dtype dtype);
// The module of an op that moves elements of dtype without converting them:
// <shader>_<element size> (shaders.cmake).
std::string moving_kernel(std::string_view shader, phx_dtype dtype);
bool is_float(phx_dtype dtype);
// Whether the device can hold dtype in a storage buffer at all.
bool device_holds(const DeviceCaps& caps, phx_dtype dtype);

uint64_t element_count(const phx_plugin_tensor& tensor);
// An optional input that the caller passed (inputs past input_count count as absent).
const phx_plugin_tensor* optional_input(const phx_plugin_op& op, size_t index);

[[noreturn]] void fail_unsupported(const std::string& message);

// Elements [first, first + count) of tensor bound as one range, and the shift a shader
// adds to an element index of the whole tensor to index the binding (modulo 2^32).
struct ElementRange {
  Binding binding;
  uint32_t shift = 0;
};
ElementRange bind_elements(OpRecorder& recorder, const phx_plugin_tensor& tensor, uint64_t first,
                           uint64_t count);

// The most elements of element_bytes each that one binding holds from any start.
uint64_t elements_per_binding(const DeviceCaps& caps, uint32_t element_bytes);

// The most workgroups of a 1-D grid in one dispatch (x times y of the device's limits).
uint64_t max_grid_groups(const DeviceCaps& caps);

// Dispatches `groups` workgroups as a 1-D grid (shaders/grid.glsl): x first, then y.
void dispatch_grid(OpRecorder& recorder, std::string_view kernel,
                   std::initializer_list<Binding> bindings, const void* push, uint32_t push_size,
                   uint64_t groups,
                   std::initializer_list<OpRecorder::SpecConstant> spec_constants = {});

// One invocation per element of total, over as many dispatches as the device's grid
// needs, in workgroups of 256 (shaders that include grid.glsl with GRID_WORKGROUP 256u).
// Push starts with the words base and count, which each dispatch sets for its share.
template <class Push>
void dispatch_per_element(OpRecorder& recorder, std::string_view kernel,
                          std::initializer_list<Binding> bindings, Push push, uint64_t total,
                          std::initializer_list<OpRecorder::SpecConstant> spec_constants = {}) {
  constexpr uint64_t kWorkgroup = 256;
  if (total > UINT32_MAX) fail_unsupported(std::string(kernel) + ": more than 2^32 elements");
  const uint64_t chunk = max_grid_groups(recorder.caps()) * kWorkgroup;
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t count = std::min(chunk, total - first);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    dispatch_grid(recorder, kernel, bindings, &push, sizeof push,
                  (count + kWorkgroup - 1) / kWorkgroup, spec_constants);
  }
}

// Whether the kernels move 8 elements of dtype per invocation (shaders/vec8.glsl) where
// their indices allow: on CPU devices (lavapipe runs a load or store whose address
// differs between lanes as a loop over the lanes), for 4- and 2-byte elements.
bool moves_eights(const DeviceCaps& caps, phx_dtype dtype);

// Whether a kernel that reduces lines (softmax, the norms, the reductions) takes a line
// per invocation, in workgroups of 64, rather than a workgroup per line: on CPU devices
// (lavapipe runs each barrier as a switch through the whole workgroup), where the lines
// are short (the barriers would cost more than the lanes save) or many (two workgroups of
// 64 or more: a line of 128, GPT's attention softmax, ran 4x faster on its own there).
bool line_per_invocation(const DeviceCaps& caps, uint64_t lines, uint64_t line_length);
constexpr uint64_t kLineWorkgroup = 64;

// One invocation per element, the same index in x and y (unary ops, cast): push
// constants {base, count, x_shift, y_shift} and then the words of `params` (at most 4),
// workgroups of 256, tensors of any size split into dispatches over sub-ranges.
// takes_eight: the kernel has specialization constant 0, VEC8 (shaders/vec8.glsl), which
// is set on CPU devices for 4- and 2-byte dtypes where a dispatch's first element lies at
// a multiple of 8 in both bindings; an invocation then takes 8 elements.
void record_elementwise_map(OpRecorder& recorder, std::string_view kernel,
                            const phx_plugin_tensor& x, const phx_plugin_tensor& y,
                            std::initializer_list<uint32_t> params = {}, bool takes_eight = false);

}  // namespace phx::vulkan::ops
