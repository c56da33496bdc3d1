#include "transfer.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace phx {

void copy_through_host(const Tensor& dst, const Tensor& src) {
  constexpr uint64_t kChunk = 16u << 20;
  std::vector<char> staging(static_cast<size_t>(std::min(kChunk, src.byte_size)));
  auto& from = *src.device->plugin;
  auto& to = *dst.device->plugin;
  for (uint64_t offset = 0; offset < src.byte_size; offset += kChunk) {
    uint64_t size = std::min(kChunk, src.byte_size - offset);
    {
      std::lock_guard lock(src.host_read_mutex);
      from.call("buffer_read", src.device->index, [&] {
        return from.api().buffer_read(from.instance(), src.buffer, src.offset + offset,
                                      staging.data(), size);
      });
    }
    to.call("buffer_write", dst.device->index, [&] {
      return to.api().buffer_write(to.instance(), dst.buffer, dst.offset + offset, staging.data(),
                                   size);
    });
  }
}

void read_to_host(const Tensor& src, void* dst) {
  auto& plugin = *src.device->plugin;
  std::lock_guard lock(src.host_read_mutex);
  plugin.call("buffer_read", src.device->index, [&] {
    return plugin.api().buffer_read(plugin.instance(), src.buffer, src.offset, dst, src.byte_size);
  });
}

void write_from_host(const Tensor& dst, const void* src) {
  auto& plugin = *dst.device->plugin;
  plugin.call("buffer_write", dst.device->index, [&] {
    return plugin.api().buffer_write(plugin.instance(), dst.buffer, dst.offset, src, dst.byte_size);
  });
}

void copy_tensor(const Tensor& dst, const Tensor& src) {
  auto& plugin = *src.device->plugin;
  if (dst.device->plugin != &plugin || plugin.api().buffer_copy == nullptr) {
    copy_through_host(dst, src);
    return;
  }
  plugin.call("buffer_copy", dst.device->index, [&] {
    return plugin.api().buffer_copy(plugin.instance(), dst.buffer, dst.offset, src.buffer,
                                    src.offset, src.byte_size);
  });
}

}  // namespace phx
