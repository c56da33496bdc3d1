// rope: rotary position embedding. Each row of x (the last dimension, D features, at
// position s of the second to last) has R pairs (a, b) rotated by the angle whose cosine
// and sine are cos[s, i] and sin[s, i]: (a cos - b sin, a sin + b cos). Features past 2R
// are copied.
//
// A row is processed in blocks of kBlock pairs widened to f32 on the stack: every pair is
// read before it is written, so out may be x itself.
#include <cstring>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// Pairs (a[i], b[i]) from two separate runs of features: rotate-half (GPT-NeoX, Llama).
PHX_CLONES void rotate_halves(const float* a, const float* b, const float* c, const float* s,
                              float* ya, float* yb, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    ya[i] = a[i] * c[i] - b[i] * s[i];
    yb[i] = a[i] * s[i] + b[i] * c[i];
  }
}

// Pairs (x[2i], x[2i + 1]): interleaved (GPT-J). y may be x.
PHX_CLONES void rotate_interleaved(const float* x, const float* c, const float* s, float* y,
                                   int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    y[2 * i] = a * c[i] - b * s[i];
    y[2 * i + 1] = a * s[i] + b * c[i];
  }
}

// Rotates one row of d features with the r angles of its position.
void rope_row(phx_dtype dtype, bool interleaved, const char* x, const float* c, const float* s,
              int64_t r, int64_t d, char* y) {
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(dtype));
  float a[2 * kBlock], b[kBlock], ya[2 * kBlock], yb[kBlock];
  for (int64_t i0 = 0; i0 < r; i0 += kBlock) {
    const int64_t n = std::min(kBlock, r - i0);
    if (interleaved) {
      to_f32(dtype, x + 2 * i0 * bytes, a, 2 * n);
      rotate_interleaved(a, c + i0, s + i0, ya, n);
      from_f32(dtype, ya, y + 2 * i0 * bytes, 2 * n);
    } else {
      to_f32(dtype, x + i0 * bytes, a, n);
      to_f32(dtype, x + (r + i0) * bytes, b, n);
      rotate_halves(a, b, c + i0, s + i0, ya, yb, n);
      from_f32(dtype, ya, y + i0 * bytes, n);
      from_f32(dtype, yb, y + (r + i0) * bytes, n);
    }
  }
  if (x != y && 2 * r < d)
    std::memcpy(y + 2 * r * bytes, x + 2 * r * bytes, static_cast<size_t>((d - 2 * r) * bytes));
}

}  // namespace

void run_rope(const phx_rope_params& params, const HostTensor& x, const HostTensor& cos,
              const HostTensor& sin, const HostTensor& out, ThreadPool& pool) {
  const int64_t d = x.shape[x.rank - 1];
  const int64_t positions = x.shape[x.rank - 2];
  const int64_t r = cos.shape[1];
  const int64_t rows = element_count(x) / d;
  const int64_t row_bytes = d * static_cast<int64_t>(dtype_bytes(x.dtype));
  const char* px = static_cast<const char*>(x.data);
  const float* pc = static_cast<const float*>(cos.data);
  const float* ps = static_cast<const float*>(sin.data);
  char* py = static_cast<char*>(out.data);
  const bool interleaved = params.interleaved != 0;
  parallel_for(pool, rows, d, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t angles = (row % positions) * r;
      rope_row(x.dtype, interleaved, px + row * row_bytes, pc + angles, ps + angles, r, d,
               py + row * row_bytes);
    }
  });
}

}  // namespace phx::kernels::ops
