// What a failed call is, inside libphynexus, its optional libraries (ONNX, MPI) and the
// shipped plugins alike: an Error, carrying the phx_status and the message the caller
// will see. Thrown by the runtime, by the loader's calls into plugins and by a plugin's
// own code, it never crosses an ABI: every entry runs through abi_guard (abi_guard.h),
// and the Error becomes a status and the last-error message at a C API (guard() in
// core/runtime/errors.h and core/onnx/import_error.h, the MPI library's entries), and a
// status and host.set_error() at a plugin's entry (guarded() in
// plugins/common/reporting.h, the Vulkan plugin's entries). Whatever threw it, the call
// it ends changes nothing (docs/guarantees.md).
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
