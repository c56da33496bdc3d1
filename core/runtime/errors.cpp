#include "errors.h"

namespace phx {
namespace {
thread_local std::string t_last_error;
}

void set_last_error(std::string message) { t_last_error = std::move(message); }

}  // namespace phx

extern "C" PHX_API const char* phx_last_error(void) { return phx::t_last_error.c_str(); }

extern "C" PHX_API phx_status phx_set_last_error(phx_status status, const char* message) {
  try {
    phx::t_last_error = message != nullptr ? message : "";
  } catch (...) {  // no memory for the copy: the message is lost, the status is not
    phx::t_last_error.clear();
  }
  return status;
}
