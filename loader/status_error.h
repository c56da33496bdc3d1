// The exception that carries a phx_status through libphynexus: thrown by the loader's
// calls into plugins and by the runtime, turned into a status and a last-error message
// at the C ABI (guard() in core/runtime/errors.h). Here, in the lower of the two layers,
// so that the loader needs nothing of the runtime.
#pragma once

#include <phynexus/phynexus.h>

#include <exception>
#include <string>
#include <utility>

namespace phx {

class Error : public std::exception {
 public:
  Error(phx_status status, std::string message) : status_(status), message_(std::move(message)) {}
  phx_status status() const { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  phx_status status_;
  std::string message_;
};

}  // namespace phx
