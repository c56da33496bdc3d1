// Private to the integer GEMM: what the driver (gemm_s8.cpp) shares with the
// instruction-set microkernels (gemm_s8_avx2.cpp, gemm_s8_vnni.cpp).
//
// Packed layouts. A is cut into panels of MR rows, B into panels of NR columns; a panel
// holds, for every group of consecutive ks, the P rows (or columns) side by side, each
// with its group of ks contiguous. K is padded to a whole group with zeros in B (so the
// values A is padded with never count), rows and columns past the edge are zeros.
//   quads (VNNI):          [K/4][P][4] bytes; A as u8 (i8 A shifted by +128), B as i8.
//   pairs (AVX2, portable): [K/2][P][2] int16, the values themselves.
#pragma once

#include <cstdint>

namespace phx::kernels::gemm_s8_detail {

enum class Layout { kQuads, kPairs };

// Sums the packed panels over `groups` groups of ks into an MR x NR int32 tile
// (row-major, row stride NR); every sum wraps around modulo 2^32.
using Ukr32 = void (*)(int64_t groups, const void* a, const void* b, int32_t* tile);

struct Kernels {
  const char* name;
  int mr, nr;
  Layout layout;
  Ukr32 ukr;
};

const Kernels* avx2_kernels();  // null when not compiled in (non-x86)
const Kernels* vnni_kernels();  // null when not compiled in

}  // namespace phx::kernels::gemm_s8_detail
