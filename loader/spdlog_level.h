// A phx_log_level as spdlog's level: for the context's logger (core/runtime/logging.cpp)
// and for the messages plugins log through the host (the loaded plugin's host_log). Here,
// in the lower of the two layers, so that the loader needs nothing of the runtime.
#pragma once

#include <phynexus/phynexus.h>
#include <spdlog/spdlog.h>

namespace phx {

inline spdlog::level::level_enum to_spdlog(phx_log_level level) {
  switch (level) {
    case PHX_LOG_TRACE:
      return spdlog::level::trace;
    case PHX_LOG_DEBUG:
      return spdlog::level::debug;
    case PHX_LOG_INFO:
      return spdlog::level::info;
    case PHX_LOG_WARN:
      return spdlog::level::warn;
    case PHX_LOG_ERROR:
      return spdlog::level::err;
    default:
      return spdlog::level::off;
  }
}

}  // namespace phx
