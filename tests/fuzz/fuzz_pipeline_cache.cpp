// Fuzzes the pipeline cache file's reader: the input is the file. A file refused must
// come with a reason; a file accepted must be exactly what wrap_pipeline_cache writes for
// the payload it gave back, and that payload must start with a driver header naming the
// device, which is all the driver is ever handed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "cache_identity.h"

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_pipeline_cache: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const phx::vulkan::PipelineCacheIdentity identity = phx::fuzz::fuzz_cache_identity();
  const std::span<const uint8_t> file(data, size);
  std::vector<uint8_t> payload;
  std::string reason;
  if (!phx::vulkan::unwrap_pipeline_cache(identity, file, payload, reason)) {
    if (reason.empty()) finding("refused a file without a reason");
    return 0;
  }
  const std::vector<uint8_t> rewrapped = phx::vulkan::wrap_pipeline_cache(identity, payload);
  if (rewrapped.size() != size || std::memcmp(rewrapped.data(), data, size) != 0)
    finding("accepted a file that is not the wrapping of the payload it returned");
  VkPipelineCacheHeaderVersionOne header;
  if (payload.size() < sizeof header) finding("accepted a payload without a driver header");
  std::memcpy(&header, payload.data(), sizeof header);
  if (header.headerSize < sizeof header || header.headerSize > payload.size() ||
      header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
      header.vendorID != identity.vendor_id || header.deviceID != identity.device_id ||
      std::memcmp(header.pipelineCacheUUID, identity.cache_uuid, VK_UUID_SIZE) != 0)
    finding("accepted a payload whose driver header names another device");
  return 0;
}
