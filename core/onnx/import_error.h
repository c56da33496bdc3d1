// Errors inside libphynexus_onnx: an import step that refuses throws the Error that
// libphynexus and the plugins throw (phx/error.h), and the guard turns it into a status
// and phx_last_error at the C ABI (the error reaches the same place as libphynexus's
// own, through phx_set_last_error).
#pragma once

#include <phx/abi_guard.h>
#include <phx/error.h>
#include <phynexus/phynexus.h>

#include <string>
#include <type_traits>
#include <utility>

namespace phx::onnx_import {

[[noreturn]] inline void refuse(phx_status status, const std::string& message) {
  throw Error(status, message);
}

// A phx_ call the importer makes: its failure becomes the importer's, with the
// library's message after what the importer was doing.
inline void check_call(phx_status status, const std::string& doing) {
  if (status != PHX_STATUS_OK) refuse(status, doing + ": " + phx_last_error());
}

// Records "function: detail" as the last error and returns status; with no memory for
// the message, records a fixed one.
inline phx_status report(phx_status status, const char* function, const char* detail) noexcept {
  try {
    return phx_set_last_error(status, (std::string(function) + ": " + detail).c_str());
  } catch (...) {
    return phx_set_last_error(status, "out of host memory for the error message");
  }
}

// Runs body, the whole of one C API function named function: an exception becomes its
// status (abi_guard) and "function: message" as the last error; nothing escapes.
template <typename Body>
phx_status guard(const char* function, Body&& body) noexcept {
  static_assert(std::is_void_v<std::invoke_result_t<Body&>>, "a C API body returns nothing");
  return abi_guard(std::forward<Body>(body), [function](phx_status status, const char* message) {
    return report(status, function, message);
  });
}

}  // namespace phx::onnx_import
