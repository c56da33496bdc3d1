// cast, and the block conversions between f32 and the 16-bit floats that every family
// uses to compute f16 and bf16 in f32.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "ops_common.h"
#include "phx/kernels/convert.h"

namespace phx::kernels::ops {
namespace {

// ---- f32 <-> 16-bit floats ----

PHX_CLONES void bf16_to_f32_block(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = std::bit_cast<float>(static_cast<uint32_t>(src[i]) << 16);
}

// convert.h's f32_to_bf16 without branches, so that it vectorizes.
PHX_CLONES void f32_to_bf16_block(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(src[i]);
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (bits >> 16) | 0x40u;
    dst[i] = static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

// F16C converts 8 values per instruction with the same rounding (nearest even),
// infinities and NaNs as convert.h, which handles the tails and CPUs without it.
__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* src, float* dst,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

__attribute__((target("avx2,f16c"))) void f32_to_f16_f16c(const float* src, uint16_t* dst,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

bool has_f16c() {
  // Every CPU with AVX2 has F16C, and AVX2 is a feature the builtin knows by name.
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return supported;
}

void f16_to_f32_block(const uint16_t* src, float* dst, int64_t n) {
  if (has_f16c()) {
    f16_to_f32_f16c(src, dst, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
  }
}

void f32_to_f16_block(const float* src, uint16_t* dst, int64_t n) {
  if (has_f16c()) {
    f32_to_f16_f16c(src, dst, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
  }
}

// ---- integers ----

// Nearest integer (ties to even), saturated to T's range; NaN becomes 0.
template <class T>
PHX_INLINE T f32_to_int_saturated(float x) {
  constexpr float lowest = static_cast<float>(std::numeric_limits<T>::min());
  // max + 1 is a power of two, exact in f32 (for i32, 2^31 absorbs the + 1).
  constexpr float past_max = static_cast<float>(std::numeric_limits<T>::max()) + 1.0f;
  float r = std::rint(x);  // the default rounding mode: nearest even
  r = r != r ? 0.0f : r;
  r = r < lowest ? lowest : r;
  const bool over = r >= past_max;
  // Converting an out-of-range float is undefined: keep r in range and fix up after.
  const T v = static_cast<T>(static_cast<int32_t>(over ? 0.0f : r));
  return over ? std::numeric_limits<T>::max() : v;
}

template <class T>
PHX_INLINE void f32_to_int_typed(const float* src, void* dst, int64_t n) {
  T* d = static_cast<T*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_int_saturated<T>(src[i]);
}

PHX_CLONES void f32_to_int(phx_dtype to, const float* src, void* dst, int64_t n) {
  switch (to) {
    case PHX_DTYPE_I8:
      f32_to_int_typed<int8_t>(src, dst, n);
      break;
    case PHX_DTYPE_I16:
      f32_to_int_typed<int16_t>(src, dst, n);
      break;
    case PHX_DTYPE_I32:
      f32_to_int_typed<int32_t>(src, dst, n);
      break;
    default:
      f32_to_int_typed<uint8_t>(src, dst, n);
      break;  // PHX_DTYPE_U8
  }
}

template <class T>
PHX_INLINE void int_to_f32_typed(const void* src, float* dst, int64_t n) {
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
}

// Exact for i8, i16, u8; i32 rounds to nearest even.
PHX_CLONES void int_to_f32(phx_dtype from, const void* src, float* dst, int64_t n) {
  switch (from) {
    case PHX_DTYPE_I8:
      int_to_f32_typed<int8_t>(src, dst, n);
      break;
    case PHX_DTYPE_I16:
      int_to_f32_typed<int16_t>(src, dst, n);
      break;
    case PHX_DTYPE_I32:
      int_to_f32_typed<int32_t>(src, dst, n);
      break;
    default:
      int_to_f32_typed<uint8_t>(src, dst, n);
      break;  // PHX_DTYPE_U8
  }
}

// i32 -> bf16 through f32 would round twice (to 24 bits, then to 8) and can miss the
// nearest bf16. Rounding to f32 "to odd" (truncate, and set the last bit when inexact)
// keeps the information the second rounding needs, so that one is then correct.
void i32_to_f32_round_to_odd(const int32_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = src[i];
    float f = static_cast<float>(v);
    const double error = static_cast<double>(v) - static_cast<double>(f);  // exact
    if (error != 0.0) {
      uint32_t bits = std::bit_cast<uint32_t>(f);
      if ((error < 0.0) == (v > 0)) bits -= 1;  // f was rounded away from zero: truncate
      f = std::bit_cast<float>(bits | 1u);
    }
    dst[i] = f;
  }
}

// Integer to integer keeps the low bits (two's complement wrap), as C++ and NumPy do.
template <class S, class D>
PHX_INLINE void int_to_int_typed(const void* src, void* dst, int64_t n) {
  const S* s = static_cast<const S*>(src);
  D* d = static_cast<D*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(s[i]);
}

template <class S>
PHX_INLINE void int_to_int_from(phx_dtype to, const void* src, void* dst, int64_t n) {
  switch (to) {
    case PHX_DTYPE_I8:
      int_to_int_typed<S, int8_t>(src, dst, n);
      break;
    case PHX_DTYPE_I16:
      int_to_int_typed<S, int16_t>(src, dst, n);
      break;
    case PHX_DTYPE_I32:
      int_to_int_typed<S, int32_t>(src, dst, n);
      break;
    default:
      int_to_int_typed<S, uint8_t>(src, dst, n);
      break;  // PHX_DTYPE_U8
  }
}

PHX_CLONES void int_to_int(phx_dtype from, phx_dtype to, const void* src, void* dst, int64_t n) {
  switch (from) {
    case PHX_DTYPE_I8:
      int_to_int_from<int8_t>(to, src, dst, n);
      break;
    case PHX_DTYPE_I16:
      int_to_int_from<int16_t>(to, src, dst, n);
      break;
    case PHX_DTYPE_I32:
      int_to_int_from<int32_t>(to, src, dst, n);
      break;
    default:
      int_to_int_from<uint8_t>(to, src, dst, n);
      break;  // PHX_DTYPE_U8
  }
}

// Casts n elements; src and dst point at the first.
void cast_block(phx_dtype from, phx_dtype to, const char* src, char* dst, int64_t n) {
  const bool float_from = is_float(from), float_to = is_float(to);
  if (from == to) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dtype_bytes(from));
  } else if (!float_from && !float_to) {
    int_to_int(from, to, src, dst, n);
  } else if (from == PHX_DTYPE_F32 && float_to) {
    from_f32(to, reinterpret_cast<const float*>(src), dst, n);
  } else if (to == PHX_DTYPE_F32 && float_from) {
    to_f32(from, src, reinterpret_cast<float*>(dst), n);
  } else if (from == PHX_DTYPE_F32) {
    f32_to_int(to, reinterpret_cast<const float*>(src), dst, n);
  } else if (to == PHX_DTYPE_F32) {
    int_to_f32(from, src, reinterpret_cast<float*>(dst), n);
  } else {  // through an f32 buffer
    const size_t from_bytes = dtype_bytes(from), to_bytes = dtype_bytes(to);
    float buf[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t len = std::min(kBlock, n - i);
      const char* s = src + i * from_bytes;
      if (float_from) {
        to_f32(from, s, buf, len);
      } else if (from == PHX_DTYPE_I32 && to == PHX_DTYPE_BF16) {
        i32_to_f32_round_to_odd(reinterpret_cast<const int32_t*>(s), buf, len);
      } else {
        int_to_f32(from, s, buf, len);
      }
      char* d = dst + i * to_bytes;
      if (float_to) {
        from_f32(to, buf, d, len);
      } else {
        f32_to_int(to, buf, d, len);
      }
    }
  }
}

}  // namespace

void to_f32(phx_dtype dtype, const void* src, float* dst, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_F16:
      f16_to_f32_block(static_cast<const uint16_t*>(src), dst, n);
      break;
    case PHX_DTYPE_BF16:
      bf16_to_f32_block(static_cast<const uint16_t*>(src), dst, n);
      break;
    default:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
  }
}

void from_f32(phx_dtype dtype, const float* src, void* dst, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_F16:
      f32_to_f16_block(src, static_cast<uint16_t*>(dst), n);
      break;
    case PHX_DTYPE_BF16:
      f32_to_bf16_block(src, static_cast<uint16_t*>(dst), n);
      break;
    default:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
  }
}

void copy_to_f32(const HostTensor& t, float* dst) {
  to_f32(t.dtype, t.data, dst, element_count(t));
}

void run_cast(const HostTensor& x, const HostTensor& out, ThreadPool& pool) {
  const phx_dtype from = x.dtype, to = out.dtype;
  const size_t from_bytes = dtype_bytes(from), to_bytes = dtype_bytes(to);
  const char* src = static_cast<const char*>(x.data);
  char* dst = static_cast<char*>(out.data);
  parallel_for(pool, element_count(x), 1, [&](int64_t begin, int64_t end) {
    cast_block(from, to, src + begin * from_bytes, dst + begin * to_bytes, end - begin);
  });
}

}  // namespace phx::kernels::ops
