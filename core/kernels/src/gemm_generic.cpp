// Portable GEMM microkernel: plain C++ the compiler vectorizes for the baseline ISA.
#include <algorithm>

#include "gemm_internal.h"

namespace phx::kernels::gemm_detail {
namespace {

constexpr int kMr = 4;
constexpr int kNr = 8;

void ukr_generic(int64_t ksteps, const void* ap, const void* bp, const Tile& t) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  float acc[kMr][kNr] = {};
  for (int64_t k = 0; k < ksteps; ++k) {
    for (int i = 0; i < kMr; ++i) {
      const float av = a[i];
      for (int j = 0; j < kNr; ++j) acc[i][j] += av * b[j];
    }
    a += kMr;
    b += kNr;
  }
  write_tile_scalar(&acc[0][0], kNr, t);
}

const IsaKernels kGenericKernels = {
    "generic",
    kMr,
    kNr,
    /*kc=*/256,
    /*kc_pairs=*/256,
    /*nc=*/1024,
    /*mc=*/256,
    /*bf16_pairs=*/false,
    ukr_generic,
    nullptr,
    pack_f32_generic,
    nullptr,
};

}  // namespace

const IsaKernels& generic_kernels() { return kGenericKernels; }

}  // namespace phx::kernels::gemm_detail
