// transpose: output dimension i is input dimension perm[i]; any dtype (moved as bits).
//
// The permutation is collapsed first (dimensions that stay neighbours move as one), so
// a permutation that keeps the innermost dimension becomes row copies, and any other a
// batch of 2-D transposes done in cache-sized tiles.
#include <cstring>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

constexpr int64_t kTile = 32;

// Operand 0 of the spaces below is the input, operand 1 the output.
using Space = StridedSpace<2>;

// A 2-D transpose of rows [i0, i1) of the output block whose dimension p is contiguous
// in the input: out[i * out_stride_i + j] = in[i + j * in_stride_j], j in [0, cols).
template <class T>
void transpose_rows(const T* in, T* out, int64_t i0, int64_t i1, int64_t cols, int64_t in_stride_j,
                    int64_t out_stride_i) {
  for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
    const int64_t j1 = std::min(cols, j0 + kTile);
    for (int64_t i = i0; i < i1; ++i) {
      T* dst = out + i * out_stride_i;
      for (int64_t j = j0; j < j1; ++j) dst[j] = in[i + j * in_stride_j];
    }
  }
}

template <class T>
void transpose_tiled(const Space& s, int p, const T* in, T* out, ThreadPool& pool) {
  const int last = s.rank - 1;
  const int64_t rows = s.size[p], cols = s.size[last];
  const int64_t in_stride_j = s.stride[0][last], out_stride_i = s.stride[1][p];
  // The dimensions other than p and last, plus a unit innermost one for OuterWalker.
  Space rest;
  for (int d = 0; d < last; ++d) {
    if (d == p) continue;
    rest.size[rest.rank] = s.size[d];
    rest.stride[0][rest.rank] = s.stride[0][d];
    rest.stride[1][rest.rank] = s.stride[1][d];
    ++rest.rank;
  }
  rest.size[rest.rank++] = 1;
  int64_t outer = 1;
  for (int d = 0; d < rest.rank; ++d) outer *= rest.size[d];
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  parallel_for(pool, outer * row_tiles, kTile * cols, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const OuterWalker<2> at(rest, u / row_tiles);
      const int64_t i0 = (u % row_tiles) * kTile;
      transpose_rows(in + at.offset[0], out + at.offset[1], i0, std::min(rows, i0 + kTile), cols,
                     in_stride_j, out_stride_i);
    }
  });
}

}  // namespace

void run_transpose(const phx_transpose_params& params, const HostTensor& x, const HostTensor& out,
                   ThreadPool& pool) {
  const int rank = static_cast<int>(x.rank);
  int64_t in_strides[PHX_MAX_RANK];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= x.shape[d];
  }
  Space s;
  s.rank = rank;
  stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    s.size[i] = x.shape[params.perm[i]];
    s.stride[0][i] = in_strides[params.perm[i]];
    s.stride[1][i] = stride;
    stride *= s.size[i];
  }
  s.collapse();
  const size_t bytes = dtype_bytes(x.dtype);
  const char* in = static_cast<const char*>(x.data);
  char* o = static_cast<char*>(out.data);
  const int last = s.rank - 1;
  if (s.rank == 1 || s.stride[0][last] == 1) {  // rows stay contiguous: copy them
    const int64_t n = s.size[last];
    const int64_t rows = element_count(x) / n;
    parallel_for(pool, rows, n, [&](int64_t begin, int64_t end) {
      OuterWalker<2> at(s, begin);
      for (int64_t r = begin; r < end; ++r, at.next())
        std::memcpy(o + r * n * bytes, in + at.offset[0] * bytes, n * bytes);
    });
    return;
  }
  int p = 0;  // the output dimension that is contiguous in the input
  while (s.stride[0][p] != 1) ++p;
  switch (bytes) {
    case 1:
      transpose_tiled(s, p, reinterpret_cast<const uint8_t*>(in), reinterpret_cast<uint8_t*>(o),
                      pool);
      break;
    case 2:
      transpose_tiled(s, p, reinterpret_cast<const uint16_t*>(in), reinterpret_cast<uint16_t*>(o),
                      pool);
      break;
    default:
      transpose_tiled(s, p, reinterpret_cast<const uint32_t*>(in), reinterpret_cast<uint32_t*>(o),
                      pool);
      break;
  }
}

}  // namespace phx::kernels::ops
