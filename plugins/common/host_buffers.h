// The entries of a plugin whose buffers are MemoryBlocks of host memory (the CPU's own, or
// host memory standing for a simulated device's), and the views of its tensors that the
// host kernels compute on.
#pragma once

#include <phynexus/plugin.h>

#include <cstring>
#include <new>

#include "memory_pool.h"
#include "phx/kernels/ops.h"

namespace phx::plugin_common {

inline MemoryBlock& block_of(void* buffer) { return *static_cast<MemoryBlock*>(buffer); }
inline void* block_data(void* buffer) { return block_of(buffer).data; }

inline phx_status host_buffer_write(void*, void* buffer, uint64_t offset, const void* src,
                                    uint64_t size) {
  std::memcpy(static_cast<char*>(block_data(buffer)) + offset, src, size);
  return PHX_STATUS_OK;
}

inline phx_status host_buffer_read(void*, void* buffer, uint64_t offset, void* dst, uint64_t size) {
  std::memcpy(dst, static_cast<const char*>(block_data(buffer)) + offset, size);
  return PHX_STATUS_OK;
}

inline phx_status host_buffer_copy(void*, void* dst, uint64_t dst_offset, void* src,
                                   uint64_t src_offset, uint64_t size) {
  std::memcpy(static_cast<char*>(block_data(dst)) + dst_offset,
              static_cast<const char*>(block_data(src)) + src_offset, size);
  return PHX_STATUS_OK;
}

// A buffer over the consumer's host memory, which the host kernels compute on in place at
// any alignment of its dtype; pool_buffer_free forgets it.
inline phx_status host_buffer_import(void*, uint32_t device, void* data, uint64_t,
                                     void** out_buffer) {
  auto* block = new (std::nothrow) MemoryBlock{data, 0, device, true};
  if (block == nullptr) return PHX_STATUS_OUT_OF_MEMORY;
  *out_buffer = block;
  return PHX_STATUS_OK;
}

inline phx_status host_buffer_data(void*, void* buffer, void** out_data) {
  *out_data = block_data(buffer);
  return PHX_STATUS_OK;
}

// The tensor as the host kernels take it; an absent optional input stays null.
inline kernels::HostTensor host_view(const phx_plugin_tensor& t) {
  kernels::HostTensor view;
  view.data = t.buffer != nullptr ? static_cast<char*>(block_data(t.buffer)) + t.offset : nullptr;
  view.dtype = t.dtype;
  view.rank = t.rank;
  for (uint32_t i = 0; i < PHX_MAX_RANK; ++i) view.shape[i] = t.shape[i];
  return view;
}

}  // namespace phx::plugin_common
