// The device that fuzz_pipeline_cache unwraps files for, and make_seeds wraps them for.
#pragma once

#include "pipeline_cache_file.h"

namespace phx::fuzz {

inline phx::vulkan::PipelineCacheIdentity fuzz_cache_identity() {
  phx::vulkan::PipelineCacheIdentity identity;
  identity.vendor_id = 0x10005;  // Mesa's, as lavapipe reports it
  identity.device_id = 0;
  identity.driver_version = 0x5c00007;
  for (uint8_t i = 0; i < VK_UUID_SIZE; ++i) identity.cache_uuid[i] = uint8_t(0xa0 + i);
  return identity;
}

}  // namespace phx::fuzz
