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

// Sums the packed panels over `groups` groups of ks, each row of sums starting from the
// NR values at init, into an MR x NR int32 tile at c (row-major, row stride ldc); every
// sum wraps around modulo 2^32.
using Ukr32 = void (*)(int64_t groups, const void* a, const void* b, const int32_t* init,
                       int32_t* c, int64_t ldc);

// Optional packers in the quads layout, the same bytes as the portable packing, which
// also give the sums of each real row's (or column's) values modulo 2^32: all that the
// 8-bit corrections use.
// Rows: one panel of P rows (P a multiple of 4, at most 32), value (p, k) at
// src[p * ld + k] for p < real; u8 (!is_signed) or i8, flipped to u8 (+128) when flip.
using PackRows = void (*)(const void* src, int64_t ld, int real, int P, int64_t k, bool is_signed,
                          bool flip, void* dst, int32_t* sums);
// Columns: up to kMaxPackedPanels panels of nr columns of i8 B, one after the other in dst,
// value (k, p) at src[k * ld + p] for p < columns.
constexpr int kMaxPackedPanels = 8;
using PackColumns = void (*)(const int8_t* src, int64_t ld, int64_t columns, int64_t k, void* dst,
                             int32_t* sums);

struct Kernels {
  const char* name;
  int mr, nr;
  Layout layout;
  Ukr32 ukr;
  PackRows pack_rows = nullptr;
  PackColumns pack_columns = nullptr;
};

const Kernels* avx2_kernels();  // null when not compiled in (non-x86)
const Kernels* vnni_kernels();  // null when not compiled in

}  // namespace phx::kernels::gemm_s8_detail
