// Eight consecutive elements of a 4- or 2-byte dtype in one load or store, for CPU
// devices: lavapipe runs a load or store whose address differs between lanes as a loop
// over the lanes, paying per component (shaders/matmul_direct.comp), so one 32-byte
// vector of four 64-bit words (4-byte elements) or one uvec4 (2-byte elements) moves
// eight elements for about the price of one. The element index must be a multiple of 8.
// Include after dtype.glsl; declare the views with X_VEC8 at the bindings of x and y.
//   X_LOAD8(view, at, c)   c[e] = X_LOAD(element at + e), e < 8 (c: X_C[8])
//   X_STORE8(view, at, c)  element at + e = X_STORE(c[e])

#ifndef VEC8_GLSL
#define VEC8_GLSL

#if defined(X_F32) || defined(X_I32)
#extension GL_ARB_gpu_shader_int64 : require
#define X_VEC8 u64vec4
#if defined(X_F32)
#define X_FROM_BITS(b) uintBitsToFloat(b)
#define X_TO_BITS(t) floatBitsToUint(t)
#else
#define X_FROM_BITS(b) int(b)
#define X_TO_BITS(t) uint(t)
#endif
#define X_LOAD8(view, at, c)                                 \
  {                                                          \
    const u64vec4 w_ = view[(at) >> 3];                      \
    [[unroll]] for (uint q_ = 0u; q_ < 4u; ++q_) {           \
      const uvec2 h_ = unpackUint2x32(w_[q_]);               \
      c[2u * q_] = X_LOAD(X_FROM_BITS(h_.x));                \
      c[2u * q_ + 1u] = X_LOAD(X_FROM_BITS(h_.y));           \
    }                                                        \
  }
#define X_STORE8(view, at, c)                                                        \
  {                                                                                  \
    u64vec4 w_;                                                                      \
    [[unroll]] for (uint q_ = 0u; q_ < 4u; ++q_) {                                   \
      w_[q_] = packUint2x32(uvec2(X_TO_BITS(X_STORE(c[2u * q_])),                    \
                                  X_TO_BITS(X_STORE(c[2u * q_ + 1u]))));             \
    }                                                                                \
    view[(at) >> 3] = w_;                                                            \
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
#endif

#endif  // VEC8_GLSL
