// Private: run the GEMM on a chosen instruction set (for the tests and benchmarks, which
// exercise every path this machine supports in one process).
#pragma once

#include <vector>

#include "phx/kernels/gemm.h"

namespace phx::kernels {

// The ISA names this machine can run, best first ("avx512-bf16", "avx512", "avx2",
// "generic"), ignoring PHX_CPU_ISA.
std::vector<const char*> gemm_supported_isas();

// Whether the automatic choice takes "avx512-bf16" on this machine (its VDPBF16PS,
// timed once per process, outpaces f32 FMA).
bool gemm_bf16_dot_pays();

// The most rows of C a product without k_pass takes the skinny path with (B streamed
// unpacked; gemm.cpp), on every instruction set.
int64_t gemm_skinny_max_rows();

// gemm() forced onto isa (one of gemm_supported_isas()); returns false (and does
// nothing) when isa is unknown or not supported here.
bool gemm_with_isa(const GemmArgs& args, ThreadPool& pool, const char* isa);

}  // namespace phx::kernels
