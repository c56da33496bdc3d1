// Errors inside libphynexus: an exception type that carries a status, the thread's last
// error message, and the guard that turns exceptions into statuses at the C ABI.
#pragma once

#include <phx/abi_guard.h>
#include <phx/error.h>
#include <phynexus/phynexus.h>

#include <string>
#include <type_traits>
#include <utility>

namespace phx {

[[noreturn]] inline void fail(phx_status status, std::string message) {
  throw Error(status, std::move(message));
}

inline void require(bool condition, const char* message) {
  if (!condition) fail(PHX_STATUS_INVALID_ARGUMENT, message);
}

// Sets the calling thread's last error message (see phx_last_error).
void set_last_error(std::string message);

// The contexts that one C API call's handle lookups retained (see lookup() in
// context.h), released when the call returns: phx_context_destroy waits for every
// retained call before it frees anything. Calls may nest; each releases its own.
class CallScope {
 public:
  CallScope() noexcept;
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  size_t outer_retains_;  // the thread's retains from the calls around this one
};

// Runs body, the whole of one C API function named function. An exception becomes
// its status (abi_guard) and "function: message" as the last error; nothing escapes.
template <typename Body>
phx_status guard(const char* function, Body&& body) noexcept {
  static_assert(std::is_void_v<std::invoke_result_t<Body&>>, "a C API body returns nothing");
  const CallScope scope;
  return abi_guard(std::forward<Body>(body), [function](phx_status status, const char* message) {
    set_last_error(std::string(function) + ": " + message);
    return status;
  });
}

}  // namespace phx
