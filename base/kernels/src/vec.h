// Fixed-width float vectors for kernels written once for every instruction set: the
// vectors of GCC's extension, whose arithmetic the instruction set of the function they
// are compiled in carries out (ops_attention.cpp, ops_conv2d_direct.cpp).
#pragma once

#include <cstring>

#include "ops_common.h"

namespace phx::kernels::ops {

// Vectors of `Lanes` floats; unlike local arrays, they stay in registers. (Spelled out per
// width: GCC drops the attribute from an alias template.)
template <int Lanes>
struct VecOf;
template <>
struct VecOf<4> {
  using type = float __attribute__((vector_size(16)));
};
template <>
struct VecOf<8> {
  using type = float __attribute__((vector_size(32)));
};
template <>
struct VecOf<16> {
  using type = float __attribute__((vector_size(64)));
};
template <int Lanes>
using Vec = typename VecOf<Lanes>::type;

// Loads and stores at any address through memcpy, which compiles to one unaligned vector
// move (a pointer cast to an under-aligned vector type is what UBSan rightly reports as a
// misaligned load), and through a local copy: an accumulator whose address is never taken
// is what the compiler keeps in a register. (Through references: a vector passed or
// returned by value would change the ABI of a function compiled without the instruction
// set.)
template <class V>
PHX_INLINE void load(V& v, const float* p) {
  V local;
  std::memcpy(&local, p, sizeof local);
  v = local;
}
template <class V>
PHX_INLINE void store(float* p, const V& v) {
  const V local = v;
  std::memcpy(p, &local, sizeof local);
}

}  // namespace phx::kernels::ops
