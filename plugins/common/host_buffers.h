// The entries of a plugin whose buffers are host memory (the CPU's own, or host memory
// standing for a simulated device's), and the views of its tensors that the host kernels
// compute on. DataOf maps a buffer the plugin handed out to its first byte.
#pragma once

#include <phynexus/plugin.h>

#include <cstring>

#include "phx/kernels/ops.h"
#include "simulated_memory.h"

namespace phx::plugin_common {

// DataOf of a plugin whose buffers are their own first byte.
inline void* buffer_is_data(void* buffer) { return buffer; }

// DataOf of a plugin whose buffers are SimulatedBlocks.
inline SimulatedBlock& block_of(void* buffer) { return *static_cast<SimulatedBlock*>(buffer); }
inline void* simulated_block_data(void* buffer) { return block_of(buffer).data; }

template <void* (*DataOf)(void*)>
phx_status host_buffer_write(void*, void* buffer, uint64_t offset, const void* src, uint64_t size) {
  std::memcpy(static_cast<char*>(DataOf(buffer)) + offset, src, size);
  return PHX_STATUS_OK;
}

template <void* (*DataOf)(void*)>
phx_status host_buffer_read(void*, void* buffer, uint64_t offset, void* dst, uint64_t size) {
  std::memcpy(dst, static_cast<const char*>(DataOf(buffer)) + offset, size);
  return PHX_STATUS_OK;
}

template <void* (*DataOf)(void*)>
phx_status host_buffer_copy(void*, void* dst, uint64_t dst_offset, void* src, uint64_t src_offset,
                            uint64_t size) {
  std::memcpy(static_cast<char*>(DataOf(dst)) + dst_offset,
              static_cast<const char*>(DataOf(src)) + src_offset, size);
  return PHX_STATUS_OK;
}

// The tensor as the host kernels take it; an absent optional input stays null.
template <void* (*DataOf)(void*)>
kernels::HostTensor host_view(const phx_plugin_tensor& t) {
  kernels::HostTensor view;
  view.data = t.buffer != nullptr ? static_cast<char*>(DataOf(t.buffer)) + t.offset : nullptr;
  view.dtype = t.dtype;
  view.rank = t.rank;
  for (uint32_t i = 0; i < PHX_MAX_RANK; ++i) view.shape[i] = t.shape[i];
  return view;
}

}  // namespace phx::plugin_common
