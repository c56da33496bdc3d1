// Integer matrix multiply for the host, with the output stages of the quantized ops
// (docs/quantization.md): 8-bit activations (u8 or i8) or 16-bit ones ("16x8") times i8
// weights, exact integer accumulation, zero points, an i32 bias, then a raw i32, an f32
// dequantized or an i8 / u8 / i16 requantized output. Packed, threaded, vectorized with
// run-time dispatch (AVX512-VNNI, AVX2, portable); every path gives the same bits. What
// qmatmul and qconv2d run, and what any plugin computing on the host can call directly.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <vector>

#include "phx/kernels/thread_pool.h"

namespace phx::kernels {

// For i in [0, m), j in [0, n):
//   acc(i, j) = sum_k (A(i, k) - a_zero_point) * (B(k, j) - b_zero_point[j]) + bias[j]
// in int32 for 8-bit A (two's complement wrap-around past the int32 range, which no
// product with K <= 33025 reaches) and in int64 for i16 A. Then C(i, j) =
//   i32:          acc, relu: max(acc, 0)                         (8-bit A only)
//   f32:          float(double(acc) * multiplier[j]), relu: max(., 0)
//   i8, u8, i16:  saturate(round_half_even(double(acc) * multiplier[j]) + y_zero_point),
//                 relu: at least y_zero_point
// the double product rounded once (the same bits on every instruction set).
struct GemmS8Args {
  int64_t m = 0, n = 0, k = 0;
  phx_dtype a_dtype = PHX_DTYPE_U8;  // u8, i8 or i16
  const void* a = nullptr;           // A(i, k) at a[i * lda + k]
  int64_t lda = 0;
  int32_t a_zero_point = 0;
  const int8_t* b = nullptr;  // B(k, j) at b[k * ldb + j], or b[j * ldb + k] with trans_b
  int64_t ldb = 0;
  bool trans_b = false;
  const int32_t* b_zero_point = nullptr;  // n values, or null for zeros
  const int32_t* bias = nullptr;          // n values, or null
  phx_dtype out_dtype = PHX_DTYPE_I32;    // i32, f32, i8, u8 or i16
  void* c = nullptr;                      // C(i, j) at c[i * ldc_row + j * ldc_col]
  int64_t ldc_row = 0, ldc_col = 1;
  const double* multiplier = nullptr;  // n values for f32 and requantized outputs
  int32_t y_zero_point = 0;
  bool relu = false;
};

// Runs the product on pool. The caller has checked the arguments (dtypes as above,
// sizes non-negative, buffers large enough). Throws std::bad_alloc when the packed
// operands cannot be allocated.
void gemm_s8(const GemmS8Args& args, ThreadPool& pool);

// The instruction set gemm_s8 dispatches to: "avx512-vnni", "avx2" or "generic" (16-bit
// A always runs the portable kernel, compiled for this CPU's vector width).
// PHX_CPU_ISA=avx512|avx2|generic caps it, as for gemm().
const char* gemm_s8_isa();

// For the tests and benchmarks: the paths this machine can run, best first, ignoring
// PHX_CPU_ISA; and gemm_s8 forced onto one of them (false, nothing done, when isa is
// unknown or not supported here).
std::vector<const char*> gemm_s8_supported_isas();
bool gemm_s8_with_isa(const GemmS8Args& args, ThreadPool& pool, const char* isa);

}  // namespace phx::kernels
