#include "loaded_plugin.h"

#include <dlfcn.h>
#include <phx/env.h>
#include <phx/error.h>
#include <phx/keep_mapped.h>

#include "spdlog_level.h"

namespace phx {
namespace {
// What the plugin said through set_error during the entry now running on this thread.
thread_local std::string t_plugin_message;

bool known_status(phx_status status) {
  return status >= PHX_STATUS_OK && status <= PHX_STATUS_INCOMPATIBLE;
}

// The last value of phx_device_type this host knows.
constexpr int kLastDeviceType = PHX_DEVICE_ACCELERATOR;
}  // namespace

Plugin::Plugin(std::string file, std::shared_ptr<spdlog::logger> logger, uint32_t num_threads)
    : path(std::move(file)), logger_(std::move(logger)) {
  host_.struct_size = sizeof host_;
  host_.abi_major = PHX_PLUGIN_ABI_MAJOR;
  host_.abi_minor = PHX_PLUGIN_ABI_MINOR;
  host_.host_data = this;
  host_.log = &Plugin::host_log;
  host_.set_error = &Plugin::host_set_error;
  host_.num_threads = num_threads;
}

Plugin::~Plugin() {
  // Leak checkers need the libraries mapped to name the frames of what they leaked: the
  // plugin's own, and those it opened, which its shutdown may close.
  keep_mapped_libraries_if_asked();
  if (instance_ != nullptr) call_void("shutdown", [&] { api_.shutdown(instance_); });
  if (library_ != nullptr && !env_is_one("PHX_DISABLE_UNLOAD")) dlclose(library_);
}

phx_device_type Plugin::device_type(int reported, uint32_t device) const {
  if (reported >= PHX_DEVICE_CPU && reported <= kLastDeviceType)
    return static_cast<phx_device_type>(reported);
  const std::string said = name + ": device_info gave device " + std::to_string(device) +
                           " the type " + std::to_string(reported);
  if (abi_minor <= PHX_PLUGIN_ABI_MINOR) {
    throw Error(PHX_STATUS_PLUGIN_ERROR, said + ", which is none of phx_device_type's (0 to " +
                                             std::to_string(kLastDeviceType) + ")");
  }
  logger_->warn("{}, unknown to this host (plugin ABI {}.{}; the plugin's is {}.{}): listed as {}",
                said, PHX_PLUGIN_ABI_MAJOR, PHX_PLUGIN_ABI_MINOR, abi_major, abi_minor,
                phx_device_type_name(PHX_DEVICE_ACCELERATOR));
  return PHX_DEVICE_ACCELERATOR;
}

void Plugin::forget_message() { t_plugin_message.clear(); }

void Plugin::raise(phx_status status, int64_t context_device, const char* entry,
                   std::string detail) {
  std::string said = std::move(t_plugin_message);
  t_plugin_message.clear();
  if (!known_status(status)) {
    detail = "returned an unknown status " + std::to_string(static_cast<int>(status));
    status = PHX_STATUS_PLUGIN_ERROR;
  }
  std::string message = name.empty() ? path : name;
  if (context_device != kNoDevice)
    message = "device " + std::to_string(context_device) + " (" + message + ")";
  if (!said.empty()) {
    message += ": " + said;
  } else {
    message += std::string(": ") + entry + " " +
               (detail.empty() ? std::string("failed with ") + phx_status_name(status) : detail);
  }
  throw Error(status, message);
}

void Plugin::host_log(void* host_data, phx_log_level level, const char* message) {
  auto* self = static_cast<Plugin*>(host_data);
  if (self == nullptr || message == nullptr) return;
  self->logger_->log(to_spdlog(level), "{}: {}", self->name, message);
}

void Plugin::host_set_error(void*, const char* message) {
  t_plugin_message = message != nullptr ? message : "";
}

}  // namespace phx
