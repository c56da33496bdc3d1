// The C API of tensors: create (in device memory or over the host's), describe, move
// data in and out, read in place, copy, destroy.
#include <phx/abi_structs.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <vector>

#include "context.h"
#include "errors.h"
#include "transfer.h"

using namespace phx;

namespace {

void check_range(const Tensor& tensor, size_t offset, size_t size) {
  size_t end;
  if (__builtin_add_overflow(offset, size, &end) || end > tensor.byte_size)
    fail(PHX_STATUS_INVALID_ARGUMENT, "bytes [" + std::to_string(offset) + ", +" +
                                          std::to_string(size) + ") are outside the tensor's " +
                                          std::to_string(tensor.byte_size) + " bytes");
}

// What phx_tensor_copy and phx_tensor_copy_async refuse.
void check_copy(const Tensor& dst, const Tensor& src) {
  require(&dst != &src, "dst and src are the same tensor");
  require(dst.context == src.context, "dst and src belong to different contexts");
  if (dst.dtype != src.dtype || dst.byte_size != src.byte_size)
    fail(PHX_STATUS_INVALID_ARGUMENT, std::string("dst (") + phx_dtype_name(dst.dtype) + ", " +
                                          std::to_string(dst.byte_size) + " bytes) and src (" +
                                          phx_dtype_name(src.dtype) + ", " +
                                          std::to_string(src.byte_size) + " bytes) differ");
}

// The stream an asynchronous transfer of tensor is ordered on, checked to be of its device.
Stream& transfer_stream(phx_stream handle, const Tensor& tensor) {
  Stream& stream = lookup(handle);
  if (stream.context != tensor.context)
    fail(PHX_STATUS_INVALID_ARGUMENT, "the stream belongs to another context");
  if (stream.device != tensor.device)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "the stream is on device " + std::to_string(stream.device->index) +
             ", the tensor on device " + std::to_string(tensor.device->index));
  return stream;
}

// The device a tensor of dtype and shape is to be made on, after checking them: what
// phx_tensor_create and phx_tensor_create_from_host refuse alike. dtype by reference, as
// enum_value reads it: a copy of a value outside the enum is undefined behavior.
Device& checked_device(Context& context, size_t device, const phx_dtype& dtype, size_t rank,
                       const int64_t* shape) {
  if (enum_value(dtype) <= PHX_DTYPE_INVALID || enum_value(dtype) >= PHX_DTYPE_COUNT)
    fail(PHX_STATUS_INVALID_ARGUMENT, "unknown dtype " + std::to_string(enum_value(dtype)));
  if (rank > PHX_MAX_RANK)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "rank " + std::to_string(rank) + " is above PHX_MAX_RANK (8)");
  require(shape != nullptr || rank == 0, "shape is null");
  for (size_t i = 0; i < rank; ++i)
    if (shape[i] < 1)
      fail(PHX_STATUS_INVALID_ARGUMENT, "dimension " + std::to_string(i) + " is " +
                                            std::to_string(shape[i]) + "; dimensions must be >= 1");
  Device& d = context.device(device);
  if (!(d.dtype_mask & PHX_DTYPE_BIT(dtype)))
    fail(PHX_STATUS_UNSUPPORTED, "device " + std::to_string(device) + " (" + d.name +
                                     ") cannot hold " + phx_dtype_name(dtype));
  return d;
}

}  // namespace

extern "C" {

PHX_API phx_status phx_tensor_create(phx_context handle, size_t device, phx_dtype dtype,
                                     size_t rank, const int64_t* shape, phx_tensor* out_tensor) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_tensor, "out_tensor");
    Device& d = checked_device(context, device, dtype, rank, shape);
    Tensor& tensor = context.create_tensor(d, dtype, rank, shape);
    *out_tensor = reinterpret_cast<phx_tensor>(tensor.handle);
  });
}

PHX_API phx_status phx_tensor_create_from_host(phx_context handle, size_t device, phx_dtype dtype,
                                               size_t rank, const int64_t* shape, void* data,
                                               phx_host_release_fn release, void* user_data,
                                               phx_tensor* out_tensor) {
  return guard(__func__, [&] {
    Context& context = lookup(handle);
    require_out(out_tensor, "out_tensor");
    Device& d = checked_device(context, device, dtype, rank, shape);
    require(data != nullptr, "data is null");
    const size_t alignment = phx_dtype_size(dtype);
    if (reinterpret_cast<uintptr_t>(data) % alignment != 0)
      fail(PHX_STATUS_INVALID_ARGUMENT, std::string("data is not aligned to the size of ") +
                                            phx_dtype_name(dtype) + " (" +
                                            std::to_string(alignment) + " bytes)");
    const HostMemory host{data, release, user_data};
    Tensor& tensor = context.create_tensor(d, dtype, rank, shape, &host);
    *out_tensor = reinterpret_cast<phx_tensor>(tensor.handle);
  });
}

PHX_API phx_status phx_tensor_host_data(phx_tensor handle, void** out_data) {
  return guard(__func__, [&] {
    Tensor& tensor = lookup(handle);
    require_out(out_data, "out_data");
    Device& device = *tensor.device;
    auto& plugin = *device.plugin;
    if (plugin.api().buffer_host_data == nullptr)
      fail(PHX_STATUS_UNSUPPORTED, "device " + std::to_string(device.index) + " (" + device.name +
                                       ")'s memory is not the host's; download the data instead");
    device.wait_for_streams();
    void* data = nullptr;
    plugin.call("buffer_host_data", device.index, [&] {
      return plugin.api().buffer_host_data(plugin.instance(), tensor.buffer, &data);
    });
    if (data == nullptr)
      fail(PHX_STATUS_PLUGIN_ERROR, plugin.name + ": buffer_host_data returned no address");
    *out_data = static_cast<char*>(data) + tensor.offset;
  });
}

PHX_API phx_status phx_tensor_destroy(phx_tensor handle) {
  return guard(__func__, [&] {
    Tensor& tensor = lookup(handle);
    tensor.context->destroy_tensor(tensor);
  });
}

PHX_API phx_status phx_tensor_describe(phx_tensor handle, phx_tensor_desc* out_desc) {
  return guard(__func__, [&] {
    const Tensor& tensor = lookup(handle);
    require_out(out_desc, "out_desc");
    phx_tensor_desc desc{};
    desc.struct_size = sizeof desc;
    desc.device = tensor.device->index;
    desc.dtype = tensor.dtype;
    desc.rank = tensor.rank;
    std::copy(tensor.shape, tensor.shape + PHX_MAX_RANK, desc.shape);
    desc.element_count = tensor.element_count;
    desc.byte_size = tensor.byte_size;
    write_struct(out_desc, desc, "out_desc");
  });
}

PHX_API phx_status phx_tensor_upload(phx_tensor handle, size_t offset, const void* src,
                                     size_t size) {
  return guard(__func__, [&] {
    Tensor& tensor = lookup(handle);
    require(src != nullptr || size == 0, "src is null");
    check_range(tensor, offset, size);
    if (size == 0) return;
    trace::Writer& tracer = tensor.context->tracer;
    const uint64_t start = tracer.active() ? trace::now_ns() : 0;
    tensor.device->wait_for_streams();
    auto& plugin = *tensor.device->plugin;
    plugin.call("buffer_write", tensor.device->index, [&] {
      return plugin.api().buffer_write(plugin.instance(), tensor.buffer, offset, src, size);
    });
    if (start != 0) tracer.transfer("upload", tensor.device->index, size, start);
  });
}

PHX_API phx_status phx_tensor_download(phx_tensor handle, size_t offset, void* dst, size_t size) {
  return guard(__func__, [&] {
    Tensor& tensor = lookup(handle);
    require(dst != nullptr || size == 0, "dst is null");
    check_range(tensor, offset, size);
    if (size == 0) return;
    trace::Writer& tracer = tensor.context->tracer;
    const uint64_t start = tracer.active() ? trace::now_ns() : 0;
    tensor.device->wait_for_streams();
    auto& plugin = *tensor.device->plugin;
    plugin.call("buffer_read", tensor.device->index, [&] {
      return plugin.api().buffer_read(plugin.instance(), tensor.buffer, offset, dst, size);
    });
    if (start != 0) tracer.transfer("download", tensor.device->index, size, start);
  });
}

PHX_API phx_status phx_tensor_copy(phx_tensor dst_handle, phx_tensor src_handle) {
  return guard(__func__, [&] {
    Tensor& dst = lookup(dst_handle);
    Tensor& src = lookup(src_handle);
    check_copy(dst, src);
    trace::Writer& tracer = dst.context->tracer;
    const uint64_t start = tracer.active() ? trace::now_ns() : 0;
    src.device->wait_for_streams();
    dst.device->wait_for_streams();
    copy_tensor(dst, src);
    if (start != 0) tracer.copy(dst.device->index, src.device->index, src.byte_size, start);
  });
}

PHX_API phx_status phx_tensor_upload_async(phx_stream stream_handle, phx_tensor handle,
                                           size_t offset, const void* src, size_t size,
                                           uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Tensor& tensor = lookup(handle);
    Stream& stream = transfer_stream(stream_handle, tensor);
    require(src != nullptr || size == 0, "src is null");
    check_range(tensor, offset, size);
    const uint64_t ticket = stream.hold_host_work([&tensor, offset, src, size](uint64_t) {
      if (size == 0) return;
      trace::Writer& tracer = tensor.context->tracer;
      const uint64_t start = tracer.active() ? trace::now_ns() : 0;
      auto& plugin = *tensor.device->plugin;
      plugin.call("buffer_write", tensor.device->index, [&] {
        return plugin.api().buffer_write(plugin.instance(), tensor.buffer, offset, src, size);
      });
      if (start != 0) tracer.transfer("upload", tensor.device->index, size, start);
    });
    if (out_ticket != nullptr) *out_ticket = ticket;
  });
}

PHX_API phx_status phx_tensor_download_async(phx_stream stream_handle, phx_tensor handle,
                                             size_t offset, void* dst, size_t size,
                                             uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Tensor& tensor = lookup(handle);
    Stream& stream = transfer_stream(stream_handle, tensor);
    require(dst != nullptr || size == 0, "dst is null");
    check_range(tensor, offset, size);
    const uint64_t ticket = stream.hold_host_work([&tensor, offset, dst, size](uint64_t) {
      if (size == 0) return;
      trace::Writer& tracer = tensor.context->tracer;
      const uint64_t start = tracer.active() ? trace::now_ns() : 0;
      auto& plugin = *tensor.device->plugin;
      std::lock_guard lock(tensor.host_read_mutex);
      plugin.call("buffer_read", tensor.device->index, [&] {
        return plugin.api().buffer_read(plugin.instance(), tensor.buffer, offset, dst, size);
      });
      if (start != 0) tracer.transfer("download", tensor.device->index, size, start);
    });
    if (out_ticket != nullptr) *out_ticket = ticket;
  });
}

PHX_API phx_status phx_tensor_copy_async(phx_stream stream_handle, phx_tensor dst_handle,
                                         phx_tensor src_handle, uint64_t* out_ticket) {
  return guard(__func__, [&] {
    Tensor& dst = lookup(dst_handle);
    Tensor& src = lookup(src_handle);
    check_copy(dst, src);
    Stream& stream = lookup(stream_handle);
    if (stream.context != dst.context)
      fail(PHX_STATUS_INVALID_ARGUMENT, "the stream belongs to another context");
    if (stream.device != dst.device && stream.device != src.device)
      fail(PHX_STATUS_INVALID_ARGUMENT, "the stream is on device " +
                                            std::to_string(stream.device->index) +
                                            ", neither dst's nor src's");
    const uint64_t ticket = stream.hold_host_work([&dst, &src](uint64_t) {
      trace::Writer& tracer = dst.context->tracer;
      const uint64_t start = tracer.active() ? trace::now_ns() : 0;
      copy_tensor(dst, src);
      if (start != 0) tracer.copy(dst.device->index, src.device->index, src.byte_size, start);
    });
    if (out_ticket != nullptr) *out_ticket = ticket;
  });
}

}  // extern "C"
