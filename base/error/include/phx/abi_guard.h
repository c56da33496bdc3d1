// The guard of an ABI edge: an entry of a C API (libphynexus, libphynexus_onnx,
// libphynexus_mpi, the MPI transport's table) or of the plugin ABI runs its body through
// abi_guard, so that no C++ exception crosses the ABI, and every edge turns the same
// exception into the same status and message. Where the message goes stays the edge's
// own (the thread's last error in libphynexus, host.set_error in a plugin, ...): the
// report callback it passes.
#pragma once

#include <phynexus/phynexus.h>

#include <exception>
#include <new>
#include <string>
#include <type_traits>

#include "phx/error.h"

namespace phx {
namespace detail {
// "internal error: what" to report; without memory for that text, "internal error".
template <class Report>
phx_status report_internal(Report& report, const char* what) noexcept {
  std::string message;
  try {
    message = std::string("internal error: ") + what;
  } catch (...) {
    return report(PHX_STATUS_INTERNAL, "internal error");
  }
  return report(PHX_STATUS_INTERNAL, message.c_str());
}
}  // namespace detail

// Runs body and returns its status: PHX_STATUS_OK once a body returning void returns, or
// what a body returning phx_status returns. An exception body throws is handed to
// report(phx_status status, const char* message), whose return the guard returns:
//   phx::Error              its status and what()
//   std::bad_alloc          OUT_OF_MEMORY, "out of host memory"
//   any other std::exception  INTERNAL, "internal error: " and its what()
//   anything else           INTERNAL, "internal error: unknown exception"
// message lives for the call only. report must not throw: the guard is noexcept.
template <class Body, class Report>
phx_status abi_guard(Body&& body, Report&& report) noexcept {
  using Result = std::invoke_result_t<Body&>;
  static_assert(std::is_void_v<Result> || std::is_same_v<Result, phx_status>,
                "an ABI edge's body returns void or a phx_status");
  try {
    if constexpr (std::is_void_v<Result>) {
      body();
      return PHX_STATUS_OK;
    } else {
      return body();
    }
  } catch (const Error& e) {
    return report(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return report(PHX_STATUS_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return detail::report_internal(report, e.what());
  } catch (...) {
    return report(PHX_STATUS_INTERNAL, "internal error: unknown exception");
  }
}

}  // namespace phx
