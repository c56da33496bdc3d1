#include "settings.h"

#include <phx/env.h>

#include <cstdlib>
#include <sstream>

namespace phx::vulkan {
namespace {

std::string text(const char* name) {
  const char* value = env_value(name);
  return value != nullptr ? value : "";
}

// "1", "true", "yes", "on" switch a flag on; anything else (or unset) leaves it off.
bool flag(const char* name) {
  const std::string value = text(name);
  return value == "1" || value == "true" || value == "yes" || value == "on";
}

// A byte count written in decimal digits; 0 when unset or anything else.
uint64_t byte_count(const char* name) {
  const std::string value = text(name);
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::strtoull(value.c_str(), nullptr, 10);
}

}  // namespace

Settings read_settings() {
  Settings s;
  s.validation = flag("PHX_VULKAN_VALIDATION");
  s.devices = text("PHX_VULKAN_DEVICES");
  s.disable_fp16 = flag("PHX_VULKAN_DISABLE_FP16");
  s.disable_int8 = flag("PHX_VULKAN_DISABLE_INT8");
  s.disable_16bit_storage = flag("PHX_VULKAN_DISABLE_16BIT_STORAGE");
  s.disable_8bit_storage = flag("PHX_VULKAN_DISABLE_8BIT_STORAGE");
  s.disable_subgroup_arithmetic = flag("PHX_VULKAN_DISABLE_SUBGROUP_ARITHMETIC");
  s.no_direct_upload = flag("PHX_VULKAN_NO_DIRECT_UPLOAD");
  s.no_push_descriptor = flag("PHX_VULKAN_NO_PUSH_DESCRIPTOR");
  s.no_pipeline_cache = flag("PHX_VULKAN_NO_PIPELINE_CACHE");
  s.max_binding_bytes = byte_count("PHX_VULKAN_MAX_BINDING_BYTES");
  if (!text("PHX_VULKAN_CACHE_DIR").empty())
    s.cache_dir = text("PHX_VULKAN_CACHE_DIR");
  else if (!text("XDG_CACHE_HOME").empty())
    s.cache_dir = text("XDG_CACHE_HOME") + "/phynexus";
  else if (!text("HOME").empty())
    s.cache_dir = text("HOME") + "/.cache/phynexus";
  return s;
}

bool device_selected(const std::string& selection, unsigned index, const std::string& name) {
  if (selection.empty()) return true;
  std::istringstream items(selection);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    if (item.find_first_not_of("0123456789") == std::string::npos) {
      if (std::strtoul(item.c_str(), nullptr, 10) == index) return true;
    } else if (name.find(item) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace phx::vulkan
