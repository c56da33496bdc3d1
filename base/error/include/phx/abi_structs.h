// Reading and writing the C APIs' size-prefixed structs (phynexus.h, "Conventions"): a
// caller built against an older header passes a smaller struct, a newer one a larger
// struct, and both work. One reading for libphynexus, libphynexus_onnx and
// libphynexus_mpi; a failure is an Error (error.h) with INVALID_ARGUMENT.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "phx/error.h"

namespace phx {
namespace detail {
[[noreturn]] inline void invalid_argument(std::string message) {
  throw Error(PHX_STATUS_INVALID_ARGUMENT, std::move(message));
}
}  // namespace detail

// Bounds on struct_size: at least the size field itself; past 64 KiB it is garbage.
inline void check_struct_size(size_t size, const char* what) {
  if (size < sizeof(size_t) || size > 65536)
    detail::invalid_argument(std::string(what) + ".struct_size " + std::to_string(size) +
                             " is not valid");
}

// Reads the caller's struct over defaults: fields it does not have keep their default.
template <typename Struct>
Struct read_struct(const Struct* in, Struct defaults, const char* what) {
  if (in == nullptr) return defaults;
  check_struct_size(in->struct_size, what);
  std::memcpy(&defaults, in, std::min(in->struct_size, sizeof defaults));
  defaults.struct_size = sizeof defaults;
  return defaults;
}

// Writes value into the caller's struct, as much of it as the caller's struct holds.
template <typename Struct>
void write_struct(Struct* out, const Struct& value, const char* what) {
  if (out == nullptr) detail::invalid_argument(std::string(what) + " is null");
  size_t size = out->struct_size;
  check_struct_size(size, what);
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t),
              reinterpret_cast<const char*>(&value) + sizeof(size_t),
              std::min(size, sizeof value) - sizeof(size_t));
}

// The integer a caller passed where the header declares an enum. A C caller may pass
// any int there; loading it as a C++ enum when it is none of the enum's values is
// undefined behaviour, so every enum that crosses the ABI is read through this first.
template <typename Enum>
int enum_value(const Enum& value) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int));
  int result;
  std::memcpy(&result, &value, sizeof result);
  return result;
}

template <typename T>
void require_out(T* out, const char* what) {
  if (out == nullptr) detail::invalid_argument(std::string(what) + " is null");
}

}  // namespace phx
