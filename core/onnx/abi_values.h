// Values a C caller passes where onnx.h declares an enum: any int may arrive there, and
// loading it as a C++ enum when it is none of the enum's values is undefined behaviour,
// so each is read as its int first.
#pragma once

#include <cstring>
#include <type_traits>

namespace phx::onnx_import {

template <typename Enum>
int enum_value(const Enum& value) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int));
  int result;
  std::memcpy(&result, &value, sizeof result);
  return result;
}

}  // namespace phx::onnx_import
