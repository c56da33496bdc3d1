// A tensor of a context, and the consumer's memory one may be made over.
#pragma once

#include <phynexus/plugin.h>

#include <cstdint>
#include <mutex>

namespace phx {

class Context;
struct Device;

struct Tensor {
  Context* context = nullptr;
  Device* device = nullptr;
  uintptr_t handle = 0;
  phx_dtype dtype = PHX_DTYPE_INVALID;
  uint32_t rank = 0;
  int64_t shape[PHX_MAX_RANK] = {};
  uint64_t element_count = 0;
  uint64_t byte_size = 0;
  void* buffer = nullptr;
  uint64_t offset = 0;  // of the first element in buffer: non-zero for a range of an
                        // executable's planned block, which has no handle of its own
  // The plugin ABI promises buffer_read for distinct buffers only, while the C API lets
  // ops on several streams read one tensor at once: reads the host makes of a tensor on
  // its own (the CPU fallback's copies, calibration) take this lock.
  mutable std::mutex host_read_mutex;
  // For a tensor over the consumer's memory (phx_tensor_create_from_host): what to call
  // once the device no longer uses it; null otherwise.
  phx_host_release_fn release = nullptr;
  void* release_data = nullptr;

  phx_plugin_tensor plugin_view() const;
};

// The consumer's memory a tensor is made over (phx_tensor_create_from_host).
struct HostMemory {
  void* data;
  phx_host_release_fn release;
  void* user_data;
};

}  // namespace phx
