// pad: x with elements added before and after each dimension: a constant (converted to
// x's dtype as cast converts it), x's reflection, or its edge; any dtype, moved as bits.
//
// Each output row (its last dimension) comes from one input row, found by mapping the
// row's index in every other dimension back into x, or from none (a constant pad): then
// the row is the constant. Within a row, the middle is the input row, the sides are
// filled per mode.
#include <cstring>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// The index of x that output index i - begin (here i) reads along a dimension of size n;
// -1 for a constant pad.
int64_t source_index(phx_pad_mode mode, int64_t i, int64_t n) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PHX_PAD_REFLECT:
      return i < 0 ? -i : 2 * (n - 1) - i;
    case PHX_PAD_EDGE:
      return i < 0 ? 0 : n - 1;
    default:
      return -1;
  }
}

template <class T>
void pad_rows(const phx_pad_params& p, const HostTensor& x, const HostTensor& out, T value,
              ThreadPool& pool) {
  const int last = static_cast<int>(x.rank) - 1;
  const int64_t n_in = x.shape[last], n_out = out.shape[last], begin = p.begin[last];
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= out.shape[d];
  const T* in = static_cast<const T*>(x.data);
  T* o = static_cast<T*>(out.data);
  parallel_for(pool, rows, n_out, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t r = row_begin; r < row_end; ++r) {
      T* dst = o + r * n_out;
      int64_t src_row = 0, scale = 1;
      bool constant = false;
      for (int64_t d = last - 1, rest = r; d >= 0; --d) {
        const int64_t i = source_index(p.mode, rest % out.shape[d] - p.begin[d], x.shape[d]);
        rest /= out.shape[d];
        constant = constant || i < 0;
        src_row += i * scale;
        scale *= x.shape[d];
      }
      if (constant) {
        std::fill(dst, dst + n_out, value);
        continue;
      }
      const T* src = in + src_row * n_in;
      std::memcpy(dst + begin, src, n_in * sizeof(T));
      for (int64_t j = 0; j < n_out; ++j) {
        if (j == begin) j += n_in;  // the middle is copied
        if (j >= n_out) break;
        const int64_t i = source_index(p.mode, j - begin, n_in);
        dst[j] = i < 0 ? value : src[i];
      }
    }
  });
}

}  // namespace

void run_pad(const phx_pad_params& params, const HostTensor& x, const HostTensor& out,
             ThreadPool& pool) {
  const size_t bytes = dtype_bytes(x.dtype);
  if (x.rank == 0) {  // nothing to pad
    std::memcpy(out.data, x.data, bytes);
    return;
  }
  uint32_t value = 0;  // the constant's bits in x's dtype, in the low bytes
  float constant = params.value;
  run_cast(HostTensor{&constant, PHX_DTYPE_F32, 0, {}}, HostTensor{&value, x.dtype, 0, {}}, pool);
  switch (bytes) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, &value, 1);
      pad_rows<uint8_t>(params, x, out, v, pool);
      break;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, &value, 2);
      pad_rows<uint16_t>(params, x, out, v, pool);
      break;
    }
    default:
      pad_rows<uint32_t>(params, x, out, value, pool);
      break;
  }
}

}  // namespace phx::kernels::ops
