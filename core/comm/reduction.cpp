#include "reduction.h"

#include <phx/kernels/convert.h>

#include <cmath>
#include <cstring>

namespace phx::comm {

namespace {

bool is_float(phx_dtype dtype) {
  return dtype == PHX_DTYPE_F32 || dtype == PHX_DTYPE_F16 || dtype == PHX_DTYPE_BF16;
}

float load_float(phx_dtype dtype, const void* values, size_t i) {
  switch (dtype) {
    case PHX_DTYPE_F16:
      return kernels::f16_to_f32(static_cast<const uint16_t*>(values)[i]);
    case PHX_DTYPE_BF16:
      return kernels::bf16_to_f32(static_cast<const uint16_t*>(values)[i]);
    default:
      return static_cast<const float*>(values)[i];
  }
}

int64_t load_integer(phx_dtype dtype, const void* values, size_t i) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      return static_cast<const int8_t*>(values)[i];
    case PHX_DTYPE_I16:
      return static_cast<const int16_t*>(values)[i];
    case PHX_DTYPE_U8:
      return static_cast<const uint8_t*>(values)[i];
    default:
      return static_cast<const int32_t*>(values)[i];
  }
}

// The value the wrapped integer sum leaves in dtype: two's complement truncation.
template <typename T>
T wrap(int64_t value) {
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(static_cast<uint64_t>(value)));
}

// NaN wins: a NaN in either operand gives NaN, as max and min in comm.h promise.
float combine(phx_reduce_op op, float a, float b) {
  switch (op) {
    case PHX_REDUCE_MAX:
      return (b > a || b != b) ? b : a;
    case PHX_REDUCE_MIN:
      return (b < a || b != b) ? b : a;
    default:
      return a + b;
  }
}

int64_t combine(phx_reduce_op op, int64_t a, int64_t b) {
  switch (op) {
    case PHX_REDUCE_MAX:
      return b > a ? b : a;
    case PHX_REDUCE_MIN:
      return b < a ? b : a;
    default:
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
}

}  // namespace

std::string reduction_refusal(phx_dtype dtype, int op) {
  if (op < PHX_REDUCE_SUM || op > PHX_REDUCE_MEAN) return "unknown reduce op " + std::to_string(op);
  if (op == PHX_REDUCE_MEAN && !is_float(dtype))
    return std::string("mean is defined for f32, f16 and bf16, not ") + phx_dtype_name(dtype) +
           " (use sum)";
  return "";
}

Reduction::Reduction(phx_dtype dtype, phx_reduce_op op, size_t ranks)
    : dtype_(dtype), op_(op), ranks_(ranks) {}

size_t Reduction::accumulator_bytes(size_t count) const {
  return count * (is_float(dtype_) ? sizeof(float) : sizeof(int64_t));
}

void Reduction::start(void* accumulator, const void* values, size_t count) const {
  if (dtype_ == PHX_DTYPE_F32) {
    std::memcpy(accumulator, values, count * sizeof(float));
  } else if (is_float(dtype_)) {
    float* acc = static_cast<float*>(accumulator);
    for (size_t i = 0; i < count; ++i) acc[i] = load_float(dtype_, values, i);
  } else {
    int64_t* acc = static_cast<int64_t*>(accumulator);
    for (size_t i = 0; i < count; ++i) acc[i] = load_integer(dtype_, values, i);
  }
}

void Reduction::start(void* accumulator, const void* first, const void* second,
                      size_t count) const {
  if (dtype_ == PHX_DTYPE_F32 && op_ != PHX_REDUCE_MAX && op_ != PHX_REDUCE_MIN) {
    float* acc = static_cast<float*>(accumulator);
    const float* a = static_cast<const float*>(first);
    const float* b = static_cast<const float*>(second);
    for (size_t i = 0; i < count; ++i) acc[i] = a[i] + b[i];
    return;
  }
  start(accumulator, first, count);
  add(accumulator, second, count);
}

void Reduction::add(void* accumulator, const void* values, size_t count) const {
  if (dtype_ == PHX_DTYPE_F32 && op_ != PHX_REDUCE_MAX && op_ != PHX_REDUCE_MIN) {
    // The common case, kept simple enough for the compiler to vectorize.
    float* acc = static_cast<float*>(accumulator);
    const float* in = static_cast<const float*>(values);
    for (size_t i = 0; i < count; ++i) acc[i] += in[i];
  } else if (is_float(dtype_)) {
    float* acc = static_cast<float*>(accumulator);
    for (size_t i = 0; i < count; ++i) acc[i] = combine(op_, acc[i], load_float(dtype_, values, i));
  } else {
    int64_t* acc = static_cast<int64_t*>(accumulator);
    for (size_t i = 0; i < count; ++i)
      acc[i] = combine(op_, acc[i], load_integer(dtype_, values, i));
  }
}

bool Reduction::accumulator_is_result() const {
  return dtype_ == PHX_DTYPE_F32 && op_ != PHX_REDUCE_MEAN;
}

void Reduction::finish(const void* accumulator, void* result, size_t count) const {
  if (is_float(dtype_)) {
    const float* acc = static_cast<const float*>(accumulator);
    const float scale = op_ == PHX_REDUCE_MEAN ? static_cast<float>(ranks_) : 1.0f;
    for (size_t i = 0; i < count; ++i) {
      const float value = op_ == PHX_REDUCE_MEAN ? acc[i] / scale : acc[i];
      if (dtype_ == PHX_DTYPE_F32)
        static_cast<float*>(result)[i] = value;
      else if (dtype_ == PHX_DTYPE_F16)
        static_cast<uint16_t*>(result)[i] = kernels::f32_to_f16(value);
      else
        static_cast<uint16_t*>(result)[i] = kernels::f32_to_bf16(value);
    }
    return;
  }
  const int64_t* acc = static_cast<const int64_t*>(accumulator);
  for (size_t i = 0; i < count; ++i) {
    switch (dtype_) {
      case PHX_DTYPE_I8:
        static_cast<int8_t*>(result)[i] = wrap<int8_t>(acc[i]);
        break;
      case PHX_DTYPE_I16:
        static_cast<int16_t*>(result)[i] = wrap<int16_t>(acc[i]);
        break;
      case PHX_DTYPE_U8:
        static_cast<uint8_t*>(result)[i] = wrap<uint8_t>(acc[i]);
        break;
      default:
        static_cast<int32_t*>(result)[i] = wrap<int32_t>(acc[i]);
        break;
    }
  }
}

}  // namespace phx::comm
