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
        return from.api().buffer_read(from.instance(), src.buffer, offset, staging.data(), size);
      });
    }
    to.call("buffer_write", dst.device->index, [&] {
      return to.api().buffer_write(to.instance(), dst.buffer, offset, staging.data(), size);
    });
  }
}

}  // namespace phx
