// The plugin's environment variables (docs/vulkan.md), read once at initialize.
#pragma once

#include <cstdint>
#include <string>

namespace phx::vulkan {

// Every optional path has a kill switch, so that the plain path it replaces stays
// reachable (and tested) on a device that offers the optional one.
struct Settings {
  bool validation = false;                   // PHX_VULKAN_VALIDATION=1
  std::string devices;                       // PHX_VULKAN_DEVICES: "0,2" or "llvmpipe,Radeon"
  bool disable_fp16 = false;                 // PHX_VULKAN_DISABLE_FP16=1: no f16 arithmetic
  bool disable_int8 = false;                 // PHX_VULKAN_DISABLE_INT8=1: no int8 arithmetic
  bool disable_16bit_storage = false;        // PHX_VULKAN_DISABLE_16BIT_STORAGE=1
  bool disable_8bit_storage = false;         // PHX_VULKAN_DISABLE_8BIT_STORAGE=1
  bool disable_subgroup_arithmetic = false;  // PHX_VULKAN_DISABLE_SUBGROUP_ARITHMETIC=1
  bool no_direct_upload = false;    // PHX_VULKAN_NO_DIRECT_UPLOAD=1: always stage transfers
  bool no_push_descriptor = false;  // PHX_VULKAN_NO_PUSH_DESCRIPTOR=1: descriptor pools
  bool no_pipeline_cache = false;   // PHX_VULKAN_NO_PIPELINE_CACHE=1: no cache file
  std::string cache_dir;            // PHX_VULKAN_CACHE_DIR, else $XDG_CACHE_HOME/phynexus, else
                                    // ~/.cache/phynexus; empty when none of them is set
  uint64_t max_binding_bytes = 0;   // PHX_VULKAN_MAX_BINDING_BYTES: a lower binding limit, so
                                    // that tests split tensors of a few MiB; 0: the device's
};

Settings read_settings();

// Whether physical device `index` named `name` is selected by PHX_VULKAN_DEVICES'
// value `selection`: comma-separated indices or name substrings; empty selects all.
bool device_selected(const std::string& selection, unsigned index, const std::string& name);

}  // namespace phx::vulkan
