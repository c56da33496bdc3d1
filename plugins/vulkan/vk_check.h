// Vulkan results as Phynexus statuses. Inside the plugin every failure is thrown as a
// phx::Error (phx/error.h) and turned into a status and a message at the entry.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "op_recorder.h"

namespace phx::vulkan {

// "VK_ERROR_DEVICE_LOST", or the number for a result this file does not name.
std::string result_name(VkResult result);

// OUT_OF_MEMORY for the out-of-memory results, DEVICE_UNAVAILABLE for a lost device,
// INTERNAL for the rest (a result the plugin did not expect is its bug).
phx_status result_status(VkResult result);

// A Vulkan struct with its sType set and every other member zero.
template <typename T>
T vk_struct(VkStructureType type) {
  T value{};
  value.sType = type;
  return value;
}

// Throws Error{result_status(result), "<what>: <result name>"} unless result is
// VK_SUCCESS (or another non-negative result, which is not a failure).
inline void check(VkResult result, const char* what) {
  if (result < 0)
    throw Error{result_status(result), std::string(what) + ": " + result_name(result)};
}

}  // namespace phx::vulkan
