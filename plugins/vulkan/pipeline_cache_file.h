// The on-disk pipeline cache: the driver's VkPipelineCache data inside a header of our
// own, so that a truncated, corrupt or foreign file is recognized before the driver ever
// sees it. Layout (native byte order, no padding):
//   char     magic[8]          "PHXVKPC\0"
//   uint32_t format_version    kPipelineCacheFormat
//   uint32_t vendor_id, device_id, driver_version
//   uint8_t  cache_uuid[16]    VkPhysicalDeviceProperties::pipelineCacheUUID
//   uint64_t payload_size
//   uint64_t payload_hash      FNV-1a 64 of the payload
//   payload                    vkGetPipelineCacheData's bytes
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace phx::vulkan {

constexpr uint32_t kPipelineCacheFormat = 1;
// A file that would be bigger is not written (the cache starts empty next time).
constexpr uint64_t kMaxPipelineCacheBytes = 64ull << 20;

struct PipelineCacheIdentity {
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint8_t cache_uuid[VK_UUID_SIZE] = {};
};

uint64_t fnv1a64(std::span<const uint8_t> bytes);

// The file's bytes for payload.
std::vector<uint8_t> wrap_pipeline_cache(const PipelineCacheIdentity& identity,
                                         std::span<const uint8_t> payload);

// Whether data (vkGetPipelineCacheData's bytes) begins with the driver's header
// (VkPipelineCacheHeaderVersionOne) for identity's device; else false and reason.
bool driver_header_matches(const PipelineCacheIdentity& identity, std::span<const uint8_t> data,
                           std::string& reason);

// The payload of file if it is a whole, intact cache for identity, whose own driver
// header (VkPipelineCacheHeaderVersionOne) names the same device; else false and reason.
bool unwrap_pipeline_cache(const PipelineCacheIdentity& identity, std::span<const uint8_t> file,
                           std::vector<uint8_t>& payload, std::string& reason);

// The whole file; false (and reason) if it cannot be read or exceeds max_bytes.
bool read_file(const std::string& path, uint64_t max_bytes, std::vector<uint8_t>& bytes,
               std::string& reason);

// Writes path through a temporary file in the same folder renamed over it, so that a
// reader sees the old file or the new one, never a part (creates the folder).
bool write_file_atomically(const std::string& path, std::span<const uint8_t> bytes,
                           std::string& reason);

}  // namespace phx::vulkan
