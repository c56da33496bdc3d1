#include "errors.h"

namespace phx {
namespace {
thread_local std::string t_last_error;
}

void set_last_error(std::string message) { t_last_error = std::move(message); }

}  // namespace phx

extern "C" PHX_API const char* phx_last_error(void) { return phx::t_last_error.c_str(); }
