// Errors inside libphynexus_onnx: an import step that refuses throws the Error that
// libphynexus and the plugins throw (phx/error.h), and the guard turns it into a status
// and phx_last_error at the C ABI (the error reaches the same place as libphynexus's
// own, through phx_set_last_error).
#pragma once

#include <phx/error.h>
#include <phynexus/phynexus.h>

#include <new>
#include <stdexcept>
#include <string>

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

// Runs body, the whole of one C API function named function; nothing escapes.
template <typename Body>
phx_status guard(const char* function, Body&& body) noexcept {
  try {
    body();
    return PHX_STATUS_OK;
  } catch (const Error& e) {
    return report(e.status(), function, e.what());
  } catch (const std::bad_alloc&) {
    return report(PHX_STATUS_OUT_OF_MEMORY, function, "out of host memory");
  } catch (const std::exception& e) {
    return report(PHX_STATUS_INTERNAL, function, e.what());
  } catch (...) {
    return report(PHX_STATUS_INTERNAL, function, "internal error");
  }
}

}  // namespace phx::onnx_import
