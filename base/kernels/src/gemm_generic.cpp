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

// Four ks per pass over the columns, so that acc is read and written once per four
// multiply-adds; the chain of each element still takes its ks one by one, in order.
void skinny_update_generic(int64_t m, int64_t kn, const float* a, int64_t a_row, int64_t a_k,
                           const float* b, int64_t ldb, int64_t w, float* acc, int64_t ldacc,
                           bool first) {
  int64_t k = 0;
  for (; k + 4 <= kn; k += 4) {
    const float* b0 = b + k * ldb;
    const float *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
    for (int64_t i = 0; i < m; ++i) {
      const float* ai = a + i * a_row + k * a_k;
      const float a0 = ai[0], a1 = ai[a_k], a2 = ai[2 * a_k], a3 = ai[3 * a_k];
      float* c = acc + i * ldacc;
      const bool zero = first && k == 0;
      for (int64_t j = 0; j < w; ++j) {
        float v = zero ? 0.0f : c[j];
        v += a0 * b0[j];
        v += a1 * b1[j];
        v += a2 * b2[j];
        v += a3 * b3[j];
        c[j] = v;
      }
    }
  }
  for (; k < kn; ++k) {
    const float* bk = b + k * ldb;
    for (int64_t i = 0; i < m; ++i) {
      const float ai = a[i * a_row + k * a_k];
      float* c = acc + i * ldacc;
      const bool zero = first && k == 0;
      for (int64_t j = 0; j < w; ++j) c[j] = (zero ? 0.0f : c[j]) + ai * bk[j];
    }
  }
}

void skinny_epilogue_generic(int64_t m, int64_t w, const float* acc, int64_t ldacc,
                             const float* bias, const float* bias_rows, phx_activation act,
                             phx_dtype out, void* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < w; ++j) {
      float v = acc[i * ldacc + j];
      if (bias) v += bias[j];
      if (bias_rows) v += bias_rows[i];
      const int64_t at = i * ldc + j;
      store_out(apply_activation(v, act), out, static_cast<float*>(c) + at,
                static_cast<uint16_t*>(c) + at);
    }
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
    skinny_update_generic,
    skinny_epilogue_generic,
};

}  // namespace

const IsaKernels& generic_kernels() { return kGenericKernels; }

}  // namespace phx::kernels::gemm_detail
