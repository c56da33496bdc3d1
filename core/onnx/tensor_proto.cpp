#include "tensor_proto.h"

#include <cstring>
#include <limits>
#include <type_traits>

#include "import_error.h"

namespace phx::onnx_import {

using onnx::TensorProto;

phx_dtype dtype_of(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT:
      return PHX_DTYPE_F32;
    case TensorProto::FLOAT16:
      return PHX_DTYPE_F16;
    case TensorProto::BFLOAT16:
      return PHX_DTYPE_BF16;
    case TensorProto::INT8:
      return PHX_DTYPE_I8;
    case TensorProto::INT16:
      return PHX_DTYPE_I16;
    case TensorProto::INT32:
    case TensorProto::INT64:  // narrowed: indices and shapes fit
      return PHX_DTYPE_I32;
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return PHX_DTYPE_U8;
    default:
      return PHX_DTYPE_INVALID;
  }
}

std::string elem_type_name(int32_t elem_type) {
  return TensorProto::DataType_IsValid(elem_type)
             ? TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type))
             : "type " + std::to_string(elem_type);
}

bool is_integral(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::DOUBLE:
      return false;
    default:
      return true;
  }
}

size_t raw_element_bytes(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::INT64:
    case TensorProto::DOUBLE:
      return 8;
    case TensorProto::FLOAT:
    case TensorProto::INT32:
      return 4;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::INT16:
      return 2;
    default:
      return 1;
  }
}

int64_t element_count(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": the element count overflows");
    n *= d;
  }
  return n;
}

namespace {

// Stores n values from typed field values (int32_data, int64_data, float_data) as
// dtype's elements.
template <typename Field>
void store_field(const Field& values, size_t n, phx_dtype dtype, uint8_t* out,
                 const std::string& what) {
  if (static_cast<size_t>(values.size()) != n)
    refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": holds " + std::to_string(values.size()) +
                                            " values where its shape has " + std::to_string(n));
  for (size_t i = 0; i < n; ++i) {
    const auto v = values.Get(static_cast<int>(i));
    switch (dtype) {
      case PHX_DTYPE_F32: {
        const float f = static_cast<float>(v);
        std::memcpy(out + 4 * i, &f, 4);
        break;
      }
      case PHX_DTYPE_F16:
      case PHX_DTYPE_BF16: {  // int32_data holds the 16-bit patterns
        const uint16_t bits = static_cast<uint16_t>(v);
        std::memcpy(out + 2 * i, &bits, 2);
        break;
      }
      case PHX_DTYPE_I8:
        out[i] = static_cast<uint8_t>(static_cast<int8_t>(v));
        break;
      case PHX_DTYPE_U8:
        out[i] = static_cast<uint8_t>(v);
        break;
      case PHX_DTYPE_I16: {
        const int16_t s = static_cast<int16_t>(v);
        std::memcpy(out + 2 * i, &s, 2);
        break;
      }
      case PHX_DTYPE_I32: {
        if constexpr (std::is_integral_v<decltype(v)>) {  // float_data never becomes i32
          if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
            refuse(PHX_STATUS_INVALID_ARGUMENT,
                   what + ": the int64 value " + std::to_string(v) + " does not fit in i32");
          const int32_t s = static_cast<int32_t>(v);
          std::memcpy(out + 4 * i, &s, 4);
        }
        break;
      }
      case PHX_DTYPE_INVALID:
        break;
    }
  }
}

// raw_data of int64 narrowed to i32, every value checked.
void narrow_raw_int64(const std::string& raw, size_t n, uint8_t* out, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    int64_t v;
    std::memcpy(&v, raw.data() + 8 * i, 8);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             what + ": the int64 value " + std::to_string(v) + " does not fit in i32");
    const int32_t s = static_cast<int32_t>(v);
    std::memcpy(out + 4 * i, &s, 4);
  }
}

}  // namespace

TensorBytes read_tensor(const TensorProto& tensor, const std::string& what) {
  TensorBytes out;
  out.dtype = dtype_of(tensor.data_type());
  if (out.dtype == PHX_DTYPE_INVALID)
    refuse(PHX_STATUS_UNSUPPORTED,
           what + ": the element type " + elem_type_name(tensor.data_type()) + " is not taken");
  if (tensor.data_location() == TensorProto::EXTERNAL)
    refuse(PHX_STATUS_UNSUPPORTED, what + ": data in an external file is not taken");
  if (tensor.dims_size() > PHX_MAX_RANK)
    refuse(PHX_STATUS_UNSUPPORTED, what + ": rank " + std::to_string(tensor.dims_size()) +
                                       " is above " + std::to_string(PHX_MAX_RANK));
  out.dims.assign(tensor.dims().begin(), tensor.dims().end());
  const size_t n = static_cast<size_t>(element_count(out.dims, what));
  const size_t bytes = n * phx_dtype_size(out.dtype);
  const int32_t type = tensor.data_type();
  if (tensor.has_raw_data()) {
    const std::string& raw = tensor.raw_data();
    if (n > raw.size() / raw_element_bytes(type) || raw.size() != n * raw_element_bytes(type))
      refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": raw_data holds " + std::to_string(raw.size()) +
                                              " bytes, not " +
                                              std::to_string(n * raw_element_bytes(type)));
    if (type == TensorProto::INT64) {
      out.owned.resize(bytes);
      narrow_raw_int64(raw, n, out.owned.data(), what);
    } else if (type == TensorProto::BOOL) {
      out.owned.resize(bytes);
      for (size_t i = 0; i < n; ++i) out.owned[i] = raw[i] != 0 ? 1 : 0;
    } else {
      out.data = reinterpret_cast<const uint8_t*>(raw.data());
      out.size = bytes;
      return out;
    }
  } else {
    // Checked before anything is allocated: a hostile file may claim any shape.
    const int values = type == TensorProto::FLOAT   ? tensor.float_data_size()
                       : type == TensorProto::INT64 ? tensor.int64_data_size()
                                                    : tensor.int32_data_size();
    if (static_cast<size_t>(values) != n)
      refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": holds " + std::to_string(values) +
                                              " values where its shape has " + std::to_string(n));
    out.owned.resize(bytes);
    if (type == TensorProto::FLOAT)
      store_field(tensor.float_data(), n, out.dtype, out.owned.data(), what);
    else if (type == TensorProto::INT64)
      store_field(tensor.int64_data(), n, out.dtype, out.owned.data(), what);
    else
      store_field(tensor.int32_data(), n, out.dtype, out.owned.data(), what);
    if (type == TensorProto::BOOL)
      for (auto& b : out.owned) b = b != 0 ? 1 : 0;
  }
  out.data = out.owned.data();
  out.size = out.owned.size();
  return out;
}

}  // namespace phx::onnx_import
