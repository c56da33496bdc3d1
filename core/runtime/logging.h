// The context's logger: spdlog underneath, quiet by default (warnings and errors),
// PHX_LOG_LEVEL to change that, and an optional callback instead of standard error.
#pragma once

#include <phynexus/phynexus.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "spdlog_level.h"

namespace phx {

std::shared_ptr<spdlog::logger> make_logger(phx_log_level level, phx_log_callback callback,
                                            void* user_data);

// Parses "trace", "debug", "info", "warn", "error", "off"; fallback for anything else.
phx_log_level parse_log_level(const char* text, phx_log_level fallback);

}  // namespace phx
