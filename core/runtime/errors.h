// Errors inside libphynexus: an exception type that carries a status, the thread's last
// error message, and the guard that turns exceptions into statuses at the C ABI.
#pragma once

#include <phx/error.h>
#include <phynexus/phynexus.h>

#include <exception>
#include <new>
#include <string>
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
// its status and "function: message" as the last error; nothing escapes.
template <typename Body>
phx_status guard(const char* function, Body&& body) noexcept {
  const CallScope scope;
  try {
    body();
    return PHX_STATUS_OK;
  } catch (const Error& e) {
    set_last_error(std::string(function) + ": " + e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    set_last_error(std::string(function) + ": out of host memory");
    return PHX_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(std::string(function) + ": internal error: " + e.what());
    return PHX_STATUS_INTERNAL;
  } catch (...) {
    set_last_error(std::string(function) + ": internal error: unknown exception");
    return PHX_STATUS_INTERNAL;
  }
}

}  // namespace phx
