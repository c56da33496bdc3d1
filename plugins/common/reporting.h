// How an entry reports to the host: a failure as its status plus a message through
// set_error, a note through log, an op's figures in its profile record, a device's figures through
// device_stats. No C++ exception may cross the plugin ABI: guarded() turns every one
// into a status and a message (phx/abi_guard.h), a phx::Error (phx/error.h) into its own.
#pragma once

#include <phx/abi_guard.h>
#include <phynexus/plugin.h>

#include <cstdio>
#include <string>
#include <utility>

namespace phx::plugin_common {

// Describes the failure to the host; returns status, for `return fail(...)`.
inline phx_status fail(const phx_plugin_host& host, phx_status status, const std::string& message) {
  host.set_error(host.host_data, message.c_str());
  return status;
}

// Logs message through the host, which drops it below the user's log level.
inline void host_log(const phx_plugin_host& host, phx_log_level level, const std::string& message) {
  host.log(host.host_data, level, message.c_str());
}

// Runs body (returning a phx_status): a phx::Error is its status and message, out of
// host memory OUT_OF_MEMORY, any other exception (e.g. the system refusing a thread
// pool's threads) INTERNAL; the message goes to the host (abi_guard).
template <class Body>
phx_status guarded(const phx_plugin_host& host, Body&& body) {
  return abi_guard(std::forward<Body>(body), [&host](phx_status status, const char* message) {
    host.set_error(host.host_data, message);
    return status;
  });
}

// Appends a metric to an op's profile record while it has room; name must be a literal.
inline void add_metric(phx_plugin_profile& profile, const char* name, double value) {
  if (profile.metric_count < PHX_PLUGIN_MAX_METRICS)
    profile.metrics[profile.metric_count++] = {name, value};
}

// device_stats' contract: copies what fits of metrics[0, N) and counts them all.
template <size_t N>
phx_status write_device_stats(const phx_metric (&metrics)[N], phx_metric* out_metrics,
                              size_t capacity, size_t* out_count) {
  for (size_t i = 0; i < N && i < capacity; ++i) out_metrics[i] = metrics[i];
  *out_count = N;
  return PHX_STATUS_OK;
}

// A figure for a device property: four significant digits ("1.6e+04", "0.5").
inline std::string format_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

}  // namespace phx::plugin_common
