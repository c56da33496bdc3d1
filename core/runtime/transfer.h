// Moving tensor bytes between devices when no plugin offers a direct path.
#pragma once

#include "context.h"

namespace phx {

// Copies src's bytes into dst (same byte size, any two devices) through host memory, in
// bounded chunks so that a huge tensor needs no equally huge staging buffer, each chunk's
// write beside the next one's read. The caller has waited for the work queued on both
// devices.
void copy_through_host(const Tensor& dst, const Tensor& src);

// Reads all of src's bytes into host memory at dst (src.byte_size of them), or writes
// them from host memory at src. The caller has waited for the work queued on the device.
void read_to_host(const Tensor& src, void* dst);
void write_from_host(const Tensor& dst, const void* src);

// The host address of the tensor's first byte when its device's memory is the host's (the
// plugin's buffer_host_data), else null: where the host may read and write the tensor in
// place once the work queued on it has finished.
char* host_address(const Tensor& tensor);

// Copies src's bytes into dst (same byte size, any two devices): by the plugin's
// buffer_copy when one plugin holds both and has that entry, else through host memory.
// The caller has waited for the work queued on both devices.
void copy_tensor(const Tensor& dst, const Tensor& src);

}  // namespace phx
