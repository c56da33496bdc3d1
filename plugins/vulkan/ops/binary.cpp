// add, sub, mul, div with NumPy broadcasting (shaders/binary.comp).
//
// The output shape is collapsed first: size-1 dimensions dropped, and neighbours merged
// while each operand either runs along both or is broadcast in both; most calls end up
// with one or two dimensions. An output larger than one binding is split into chunks of
// output elements; an operand that fits one binding is bound whole for every chunk, a
// larger one must have the output's shape (it is then split like the output): a
// broadcast operand larger than one binding is UNSUPPORTED.
#include <algorithm>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {
namespace {

struct Push {
  uint32_t base, count, a_shift, b_shift, y_shift, rank, mask;
  uint32_t shape[8];
};

// Bit 0: a broadcasts; bit 1: b broadcasts.
struct Collapsed {
  uint32_t rank = 0;
  uint64_t shape[8] = {};
  uint32_t broadcast[8] = {};
};

int64_t aligned_dim(const phx_plugin_tensor& t, uint32_t out_rank, uint32_t d) {
  const int64_t i = static_cast<int64_t>(d) - static_cast<int64_t>(out_rank - t.rank);
  return i < 0 ? 1 : t.shape[i];
}

Collapsed collapse(const phx_plugin_tensor& a, const phx_plugin_tensor& b,
                   const phx_plugin_tensor& y) {
  Collapsed c;
  for (uint32_t d = 0; d < y.rank; ++d) {
    const int64_t size = y.shape[d];
    if (size == 1) continue;
    const uint32_t state =
        (aligned_dim(a, y.rank, d) == 1 ? 1u : 0u) | (aligned_dim(b, y.rank, d) == 1 ? 2u : 0u);
    if (c.rank > 0 && c.broadcast[c.rank - 1] == state) {
      c.shape[c.rank - 1] *= static_cast<uint64_t>(size);
    } else {
      c.shape[c.rank] = static_cast<uint64_t>(size);
      c.broadcast[c.rank] = state;
      ++c.rank;
    }
  }
  return c;
}

// The binding of an operand for output elements [first, first + count).
ElementRange bind_operand(OpRecorder& recorder, const phx_plugin_tensor& t,
                          const phx_plugin_tensor& y, uint64_t first, uint64_t count) {
  const uint64_t size = element_count(t);
  if (size * dtype_bytes(t.dtype) <= recorder.caps().max_binding_bytes) {
    return bind_elements(recorder, t, 0, size);
  }
  if (size != element_count(y)) {
    fail_unsupported("a broadcast operand larger than one binding (" +
                     std::to_string(recorder.caps().max_binding_bytes) + " bytes)");
  }
  return bind_elements(recorder, t, first, count);
}

}  // namespace

void record_binary(OpRecorder& recorder, const phx_plugin_op& op) {
  constexpr uint64_t kWorkgroup = 256;
  const phx_plugin_tensor& a = op.inputs[0];
  const phx_plugin_tensor& b = op.inputs[1];
  const phx_plugin_tensor& y = op.outputs[0];
  const char* name = op.op == PHX_OP_ADD   ? "add_"
                     : op.op == PHX_OP_SUB ? "sub_"
                     : op.op == PHX_OP_MUL ? "mul_"
                                           : "div_";
  const std::string kernel = name + std::string(dtype_name(a.dtype));
  const Collapsed c = collapse(a, b, y);
  const uint64_t total = element_count(y);
  if (total > UINT32_MAX) fail_unsupported(kernel + ": more than 2^32 elements");

  Push push = {};
  push.rank = c.rank;
  for (uint32_t d = 0; d < c.rank; ++d) {
    push.shape[d] = static_cast<uint32_t>(c.shape[d]);
    if (c.broadcast[d] & 1u) push.mask |= 1u << d;
    if (c.broadcast[d] & 2u) push.mask |= 0x100u << d;
  }
  const DeviceCaps& caps = recorder.caps();
  const uint64_t chunk = std::min(elements_per_binding(caps, dtype_bytes(a.dtype)),
                                  max_grid_groups(caps) * kWorkgroup);
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t count = std::min(chunk, total - first);
    const ElementRange ar = bind_operand(recorder, a, y, first, count);
    const ElementRange br = bind_operand(recorder, b, y, first, count);
    const ElementRange yr = bind_elements(recorder, y, first, count);
    push.base = static_cast<uint32_t>(first);
    push.count = static_cast<uint32_t>(count);
    push.a_shift = ar.shift;
    push.b_shift = br.shift;
    push.y_shift = yr.shift;
    dispatch_grid(recorder, kernel, {ar.binding, br.binding, yr.binding}, &push, sizeof push,
                  (count + kWorkgroup - 1) / kWorkgroup);
  }
}

}  // namespace phx::vulkan::ops
