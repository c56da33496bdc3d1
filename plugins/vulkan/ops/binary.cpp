// The binary ops with NumPy broadcasting (shaders/binary.comp: add, sub, mul, div, pow,
// max, min, prelu and the comparisons, which write u8), and where with its three inputs
// (shaders/where.comp).
//
// The output shape is collapsed first: size-1 dimensions dropped, and neighbours merged
// while each operand either runs along both or is broadcast in both; most calls end up
// with one or two dimensions. An output larger than one binding is split into chunks of
// output elements; an operand that fits one binding is bound whole for every chunk, a
// larger one must have the output's shape (it is then split like the output): a
// broadcast operand larger than one binding is UNSUPPORTED.
#include <phx/op_table.h>

#include <algorithm>
#include <initializer_list>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {
namespace {

// broadcast[d], bit 8 k: operand k broadcasts dimension d.
struct Collapsed {
  uint32_t rank = 0;
  uint64_t shape[8] = {};
  uint32_t broadcast[8] = {};
};

int64_t aligned_dim(const phx_plugin_tensor& t, uint32_t out_rank, uint32_t d) {
  const int64_t i = static_cast<int64_t>(d) - static_cast<int64_t>(out_rank - t.rank);
  return i < 0 ? 1 : t.shape[i];
}

Collapsed collapse(std::initializer_list<const phx_plugin_tensor*> operands,
                   const phx_plugin_tensor& y) {
  Collapsed c;
  for (uint32_t d = 0; d < y.rank; ++d) {
    const int64_t size = y.shape[d];
    if (size == 1) continue;
    uint32_t state = 0, bit = 1;
    for (const phx_plugin_tensor* t : operands) {
      if (aligned_dim(*t, y.rank, d) == 1) state |= bit;
      bit <<= 8;
    }
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

// Records kernel over the output in chunks, with push constants {base, count, the
// shifts of the operands and of y, rank, mask, shape[8]}. takes_eight: the kernel has
// binary.comp's EIGHT constant, which on CPU devices is set for 8 outputs per invocation.
void record_broadcast(OpRecorder& recorder, const std::string& kernel,
                      std::initializer_list<const phx_plugin_tensor*> operands,
                      const phx_plugin_tensor& y, bool takes_eight = false) {
  constexpr uint64_t kWorkgroup = 256;
  const Collapsed c = collapse(operands, y);
  const uint64_t total = element_count(y);
  if (total > UINT32_MAX) fail_unsupported(kernel + ": more than 2^32 elements");

  // base, count, the shifts (operands, then y), rank, mask, shape.
  uint32_t push[2 + 4 + 2 + 8] = {};
  uint32_t* const shifts = push + 2;
  uint32_t* const tail = shifts + operands.size() + 1;
  tail[0] = c.rank;
  for (uint32_t d = 0; d < c.rank; ++d) {
    tail[2 + d] = static_cast<uint32_t>(c.shape[d]);
    for (uint32_t k = 0; k < operands.size(); ++k) {
      if (c.broadcast[d] & (1u << (8 * k))) tail[1] |= 1u << (8 * k + d);
    }
  }
  const auto push_size = static_cast<uint32_t>((tail + 10 - push) * sizeof(uint32_t));
  const DeviceCaps& caps = recorder.caps();
  uint32_t widest = dtype_bytes(y.dtype);
  for (const phx_plugin_tensor* t : operands) widest = std::max(widest, dtype_bytes(t->dtype));
  // Chunks of whole eights, so that every chunk's first output is a multiple of 8.
  uint64_t chunk = std::min(elements_per_binding(caps, widest), max_grid_groups(caps) * kWorkgroup);
  chunk -= chunk % 8;
  // Eight outputs per invocation on CPU devices; as vectors where the output has the
  // operands' 4- or 2-byte dtype and the innermost rows are whole eights.
  const bool eight = takes_eight && caps.cpu_device;
  const bool vectors_fit = eight && y.dtype == operands.begin()[0]->dtype &&
                           moves_eights(caps, y.dtype) && c.rank > 0 &&
                           c.shape[c.rank - 1] % 8 == 0;
  for (uint64_t first = 0; first < total; first += chunk) {
    const uint64_t count = std::min(chunk, total - first);
    Binding bindings[4];
    size_t k = 0;
    for (const phx_plugin_tensor* t : operands) {
      const ElementRange r = bind_operand(recorder, *t, y, first, count);
      bindings[k] = r.binding;
      shifts[k++] = r.shift;
    }
    const ElementRange yr = bind_elements(recorder, y, first, count);
    bindings[k] = yr.binding;
    shifts[k] = yr.shift;
    push[0] = static_cast<uint32_t>(first);
    push[1] = static_cast<uint32_t>(count);
    // first is a multiple of 8, so aligned shifts put every eight at a vector.
    const bool vectors = vectors_fit && std::all_of(shifts, shifts + operands.size() + 1,
                                                    [](uint32_t s) { return s % 8 == 0; });
    const uint32_t mode = !eight ? 0 : vectors ? 1 : 2;  // binary.comp's EIGHT
    const uint64_t invocations = eight ? (count + 7) / 8 : count;
    const uint64_t groups = (invocations + kWorkgroup - 1) / kWorkgroup;
    if (operands.size() == 2) {
      dispatch_grid(recorder, kernel, {bindings[0], bindings[1], bindings[2]}, push, push_size,
                    groups, {{0, mode}});
    } else {
      dispatch_grid(recorder, kernel, {bindings[0], bindings[1], bindings[2], bindings[3]}, push,
                    push_size, groups);
    }
  }
}

}  // namespace

void record_binary(OpRecorder& recorder, const phx_plugin_op& op) {
  const phx_plugin_tensor& a = op.inputs[0];
  const std::string kernel =
      std::string(find_op_schema(op.op)->name) + "_" + std::string(dtype_name(a.dtype));
  record_broadcast(recorder, kernel, {&a, &op.inputs[1]}, op.outputs[0], true);
}

void record_where(OpRecorder& recorder, const phx_plugin_op& op) {
  const phx_plugin_tensor& a = op.inputs[1];
  const std::string kernel = moving_kernel("where", a.dtype);
  record_broadcast(recorder, kernel, {&op.inputs[0], &a, &op.inputs[2]}, op.outputs[0]);
}

}  // namespace phx::vulkan::ops
