#include "transfer.h"

#include <algorithm>
#include <future>
#include <mutex>
#include <vector>

namespace phx {

void copy_through_host(const Tensor& dst, const Tensor& src) {
  // Chunks bound the staging memory of a huge tensor; two of them let the write of one
  // run beside the read of the next, on two threads.
  constexpr uint64_t kChunk = 4u << 20;
  std::vector<char> staging[2];
  auto& from = *src.device->plugin;
  auto& to = *dst.device->plugin;
  auto read = [&](uint64_t offset, std::vector<char>& into) {
    into.resize(std::min(kChunk, src.byte_size - offset));
    std::lock_guard lock(src.host_read_mutex);
    from.call("buffer_read", src.device->index, [&] {
      return from.api().buffer_read(from.instance(), src.buffer, src.offset + offset, into.data(),
                                    into.size());
    });
  };
  auto write = [&](uint64_t offset, const std::vector<char>& bytes) {
    to.call("buffer_write", dst.device->index, [&] {
      return to.api().buffer_write(to.instance(), dst.buffer, dst.offset + offset, bytes.data(),
                                   bytes.size());
    });
  };
  read(0, staging[0]);
  for (uint64_t offset = 0, chunk = 0; offset < src.byte_size; offset += kChunk, ++chunk) {
    const std::vector<char>& ready = staging[chunk % 2];
    if (offset + kChunk >= src.byte_size) {
      write(offset, ready);
      break;
    }
    auto written = std::async(std::launch::async, [&, offset] { write(offset, ready); });
    try {
      read(offset + kChunk, staging[(chunk + 1) % 2]);
    } catch (...) {
      written.wait();
      throw;
    }
    written.get();
  }
}

char* host_address(const Tensor& tensor) {
  auto& plugin = *tensor.device->plugin;
  void* data = nullptr;
  if (plugin.api().buffer_host_data == nullptr ||
      plugin.api().buffer_host_data(plugin.instance(), tensor.buffer, &data) != PHX_STATUS_OK ||
      data == nullptr)
    return nullptr;
  return static_cast<char*>(data) + tensor.offset;
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
