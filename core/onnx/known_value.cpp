#include "known_value.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "import_error.h"
#include "tensor_proto.h"

namespace phx::onnx_import {

using onnx::TensorProto;

int64_t saturated(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

bool KnownValue::integral() const { return is_integral(elem_type); }

namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  const uint32_t bits = exponent == 0x1f ? sign | 0x7f800000u | (mantissa << 13)
                                         : sign | ((exponent + 112) << 23) | (mantissa << 13);
  return std::bit_cast<float>(bits);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// Round to nearest even, as the runtime's own conversions do.
uint16_t float_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

uint16_t float_to_half(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const float magnitude = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7e00;
  if (magnitude >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (magnitude < 6.103515625e-05f) {               // subnormal: a multiple of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
  }
  const uint32_t m = std::bit_cast<uint32_t>(magnitude);
  const uint32_t rounded = m + 0xfffu + ((m >> 13) & 1u);
  return sign | static_cast<uint16_t>(((rounded >> 13) - (112u << 10)) & 0x7fffu);
}

template <typename T>
T raw_at(const std::string& raw, size_t i) {
  T v;
  std::memcpy(&v, raw.data() + sizeof(T) * i, sizeof(T));
  return v;
}

template <typename T>
void put(std::vector<uint8_t>& out, size_t i, T v) {
  std::memcpy(out.data() + sizeof(T) * i, &v, sizeof(T));
}

double real_from_raw(int32_t type, const std::string& raw, size_t i) {
  switch (type) {
    case TensorProto::FLOAT:
      return raw_at<float>(raw, i);
    case TensorProto::DOUBLE:
      return raw_at<double>(raw, i);
    case TensorProto::FLOAT16:
      return half_to_float(raw_at<uint16_t>(raw, i));
    default:
      return bf16_to_float(raw_at<uint16_t>(raw, i));
  }
}

int64_t int_from_raw(int32_t type, const std::string& raw, size_t i) {
  switch (type) {
    case TensorProto::INT64:
      return raw_at<int64_t>(raw, i);
    case TensorProto::INT32:
      return raw_at<int32_t>(raw, i);
    case TensorProto::INT16:
      return raw_at<int16_t>(raw, i);
    case TensorProto::INT8:
      return raw_at<int8_t>(raw, i);
    case TensorProto::BOOL:
      return raw_at<uint8_t>(raw, i) != 0 ? 1 : 0;
    default:
      return raw_at<uint8_t>(raw, i);
  }
}

}  // namespace

KnownValue known_ints(int32_t elem_type, std::vector<int64_t> dims, std::vector<int64_t> ints) {
  KnownValue k;
  k.elem_type = elem_type;
  k.dims = std::move(dims);
  k.ints = std::move(ints);
  return k;
}

KnownValue known_from_bytes(int32_t elem_type, phx_dtype dtype, std::vector<int64_t> dims,
                            const void* data) {
  KnownValue k;
  k.elem_type = elem_type;
  k.dims = std::move(dims);
  const size_t n = static_cast<size_t>(element_count(k.dims, "a value"));
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case PHX_DTYPE_F32: {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        k.reals.push_back(v);
        break;
      }
      case PHX_DTYPE_F16:
      case PHX_DTYPE_BF16: {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        k.reals.push_back(dtype == PHX_DTYPE_F16 ? half_to_float(v) : bf16_to_float(v));
        break;
      }
      case PHX_DTYPE_I8:
        k.ints.push_back(static_cast<int8_t>(p[i]));
        break;
      case PHX_DTYPE_U8:
        k.ints.push_back(p[i]);
        break;
      case PHX_DTYPE_I16: {
        int16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        k.ints.push_back(v);
        break;
      }
      case PHX_DTYPE_I32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        k.ints.push_back(v);
        break;
      }
      case PHX_DTYPE_INVALID:
        break;
    }
  }
  return k;
}

KnownValue read_known(const TensorProto& tensor, const std::string& what) {
  const int32_t type = tensor.data_type();
  if (dtype_of(type) == PHX_DTYPE_INVALID && type != TensorProto::DOUBLE)
    refuse(PHX_STATUS_UNSUPPORTED,
           what + ": the element type " + elem_type_name(type) + " is not taken");
  if (tensor.data_location() == TensorProto::EXTERNAL)
    refuse(PHX_STATUS_UNSUPPORTED, what + ": data in an external file is not taken");
  if (tensor.dims_size() > PHX_MAX_RANK)
    refuse(PHX_STATUS_UNSUPPORTED, what + ": rank " + std::to_string(tensor.dims_size()) +
                                       " is above " + std::to_string(PHX_MAX_RANK));
  KnownValue k;
  k.elem_type = type;
  k.dims.assign(tensor.dims().begin(), tensor.dims().end());
  const size_t n = static_cast<size_t>(element_count(k.dims, what));
  if (tensor.has_raw_data()) {
    const std::string& raw = tensor.raw_data();
    if (raw.size() / raw_element_bytes(type) != n || raw.size() % raw_element_bytes(type) != 0)
      refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": raw_data holds " + std::to_string(raw.size()) +
                                              " bytes, not " +
                                              std::to_string(n * raw_element_bytes(type)));
    for (size_t i = 0; i < n; ++i) {
      if (k.integral())
        k.ints.push_back(int_from_raw(type, raw, i));
      else
        k.reals.push_back(real_from_raw(type, raw, i));
    }
    return k;
  }
  auto take = [&](const auto& field, auto convert) {
    if (static_cast<size_t>(field.size()) != n)
      refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": holds " + std::to_string(field.size()) +
                                              " values where its shape has " + std::to_string(n));
    for (const auto v : field) convert(v);
  };
  switch (type) {
    case TensorProto::FLOAT:
      take(tensor.float_data(), [&](float v) { k.reals.push_back(v); });
      break;
    case TensorProto::DOUBLE:
      take(tensor.double_data(), [&](double v) { k.reals.push_back(v); });
      break;
    case TensorProto::INT64:
      take(tensor.int64_data(), [&](int64_t v) { k.ints.push_back(v); });
      break;
    case TensorProto::FLOAT16:
      take(tensor.int32_data(),
           [&](int32_t v) { k.reals.push_back(half_to_float(static_cast<uint16_t>(v))); });
      break;
    case TensorProto::BFLOAT16:
      take(tensor.int32_data(),
           [&](int32_t v) { k.reals.push_back(bf16_to_float(static_cast<uint16_t>(v))); });
      break;
    case TensorProto::BOOL:
      take(tensor.int32_data(), [&](int32_t v) { k.ints.push_back(v != 0 ? 1 : 0); });
      break;
    default:
      take(tensor.int32_data(), [&](int32_t v) { k.ints.push_back(v); });
      break;
  }
  return k;
}

std::vector<uint8_t> known_bytes(const KnownValue& known, const std::string& what) {
  const phx_dtype dtype = dtype_of(known.elem_type);
  if (dtype == PHX_DTYPE_INVALID)
    refuse(PHX_STATUS_UNSUPPORTED,
           what + ": the element type " + elem_type_name(known.elem_type) + " is not taken");
  const size_t n = known.size();
  std::vector<uint8_t> out(n * phx_dtype_size(dtype));
  for (size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case PHX_DTYPE_F32:
        put(out, i, static_cast<float>(known.reals[i]));
        break;
      case PHX_DTYPE_F16:
        put(out, i, float_to_half(static_cast<float>(known.reals[i])));
        break;
      case PHX_DTYPE_BF16:
        put(out, i, float_to_bf16(static_cast<float>(known.reals[i])));
        break;
      case PHX_DTYPE_I8:
        put(out, i, static_cast<int8_t>(known.ints[i]));
        break;
      case PHX_DTYPE_U8:
        put(out, i, static_cast<uint8_t>(known.ints[i]));
        break;
      case PHX_DTYPE_I16:
        put(out, i, static_cast<int16_t>(known.ints[i]));
        break;
      case PHX_DTYPE_I32: {
        const int64_t v = known.ints[i];
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
          refuse(PHX_STATUS_UNSUPPORTED,
                 what + ": the int64 value " + std::to_string(v) + " does not fit in i32");
        put(out, i, static_cast<int32_t>(v));
        break;
      }
      case PHX_DTYPE_INVALID:
        break;
    }
  }
  return out;
}

}  // namespace phx::onnx_import
