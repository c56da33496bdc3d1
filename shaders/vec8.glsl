// Eight consecutive elements of a 4- or 2-byte dtype in one or two loads or stores, for
// CPU devices: lavapipe runs a load or store whose address differs between lanes as a
// loop over the lanes, paying per component, so two uvec4s (4-byte elements) or one uvec4
// (2-byte elements) move eight elements for a fraction of eight scalar accesses. 32-bit
// words only: a u64vec4 (fewer components) would make every module that includes this
// declare the Int64 capability, which a device without shaderInt64 cannot take, and it
// was no faster here (MobileNetV2's clips, 12.4 against 12.1 ms). The element index must
// be a multiple of 8. Include after dtype.glsl; declare the views with X_VEC8 at the
// bindings of x and y.
//   X_LOAD8(view, at, c)           c[e] = X_LOAD(element at + e), e < 8 (c: X_C[8])
//   X_STORE8(view, at, c)          element at + e = X_STORE(c[e])
//   X_COPY8(to, at, from, from_at)  the 8 elements from from_at of view from, unconverted

#ifndef VEC8_GLSL
#define VEC8_GLSL

#if defined(X_F32) || defined(X_I32)
#define X_VEC8 uvec4  // two per eight
#if defined(X_F32)
#define X_FROM_BITS(b) uintBitsToFloat(b)
#define X_TO_BITS(t) floatBitsToUint(t)
#else
#define X_FROM_BITS(b) int(b)
#define X_TO_BITS(t) uint(t)
#endif
#define X_LOAD8(view, at, c)                       \
  {                                                \
    const uvec4 lo_ = view[(at) >> 2];             \
    const uvec4 hi_ = view[((at) >> 2) + 1u];      \
    [[unroll]] for (uint q_ = 0u; q_ < 4u; ++q_) { \
      c[q_] = X_LOAD(X_FROM_BITS(lo_[q_]));        \
      c[4u + q_] = X_LOAD(X_FROM_BITS(hi_[q_]));   \
    }                                              \
  }
#define X_STORE8(view, at, c)                      \
  {                                                \
    uvec4 lo_, hi_;                                \
    [[unroll]] for (uint q_ = 0u; q_ < 4u; ++q_) { \
      lo_[q_] = X_TO_BITS(X_STORE(c[q_]));         \
      hi_[q_] = X_TO_BITS(X_STORE(c[4u + q_]));    \
    }                                              \
    view[(at) >> 2] = lo_;                         \
    view[((at) >> 2) + 1u] = hi_;                  \
  }
#define X_COPY8(to, at, from, from_at)                       \
  {                                                          \
    to[(at) >> 2] = from[(from_at) >> 2];                    \
    to[((at) >> 2) + 1u] = from[((from_at) >> 2) + 1u];      \
  }
#else  // 2-byte elements: the dtype's T is a 16-bit integer type
#define X_VEC8 uvec4
#define X_LOAD8(view, at, c)                                 \
  {                                                          \
    const uvec4 w_ = view[(at) >> 3];                        \
    [[unroll]] for (uint q_ = 0u; q_ < 4u; ++q_) {           \
      c[2u * q_] = X_LOAD(X_T(w_[q_] & 0xFFFFu));            \
      c[2u * q_ + 1u] = X_LOAD(X_T(w_[q_] >> 16));           \
    }                                                        \
  }
#define X_STORE8(view, at, c)                                                       \
  {                                                                                 \
    uvec4 w_;                                                                       \
    [[unroll]] for (uint q_ = 0u; q_ < 4u; ++q_) {                                  \
      w_[q_] = (uint(X_STORE(c[2u * q_])) & 0xFFFFu) |                              \
               (uint(X_STORE(c[2u * q_ + 1u])) << 16);                              \
    }                                                                               \
    view[(at) >> 3] = w_;                                                           \
  }
#define X_COPY8(to, at, from, from_at) to[(at) >> 3] = from[(from_at) >> 3];
#endif

#endif  // VEC8_GLSL
