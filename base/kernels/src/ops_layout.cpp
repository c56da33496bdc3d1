// The layout family: transpose, reshape, concat, slice, gather, expand and tile (pad is
// ops_pad.cpp); any dtype, moved as bits.
//
// transpose: output dimension i is input dimension perm[i].
//
// The permutation is collapsed first (dimensions that stay neighbours move as one), so
// a permutation that keeps the innermost dimension becomes row copies, and any other a
// batch of 2-D transposes done in cache-sized tiles.
#include <phx/op_geometry.h>

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

// ---- reshape, concat, slice, gather, expand, tile, pad: bytes moved, any dtype ----
//
// Slice, expand and tile read the input at an affine offset of the output's index: a
// CopyPlan (the output's dimensions and the input's stride along each) says which, and
// one strided copy runs them all. Tile's plan has two dimensions per input dimension:
// the repetition (input stride 0) and the input's own.

namespace phx::kernels::ops {
namespace {

constexpr int kMaxPlanRank = 2 * PHX_MAX_RANK;

struct CopyPlan {
  int rank = 0;
  int64_t size[kMaxPlanRank] = {};
  int64_t in_stride[kMaxPlanRank] = {};  // in elements; 0 repeats, negative walks back
  int64_t in_base = 0;                   // the input offset of output element 0

  void add(int64_t dim_size, int64_t stride) {
    size[rank] = dim_size;
    in_stride[rank] = stride;
    ++rank;
  }

  // Drops size-1 dimensions and merges neighbours the input walks as one, so that rows
  // (the last dimension) are as long as possible. Keeps at least one dimension.
  void collapse() {
    int r = 0;
    for (int d = 0; d < rank; ++d) {
      if (size[d] == 1) continue;
      if (r > 0 && in_stride[r - 1] == in_stride[d] * size[d]) {
        size[r - 1] *= size[d];
        in_stride[r - 1] = in_stride[d];
      } else {
        size[r] = size[d];
        in_stride[r] = in_stride[d];
        ++r;
      }
    }
    if (r == 0) {
      size[0] = 1;
      in_stride[0] = 0;
      r = 1;
    }
    rank = r;
  }
};

// Row-major element strides of t.
void strides_of(const HostTensor& t, int64_t* strides) {
  int64_t s = 1;
  for (int d = static_cast<int>(t.rank) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= t.shape[d];
  }
}

template <class T>
void copy_row(const T* in, int64_t stride, T* out, int64_t n) {
  if (stride == 0) {
    std::fill(out, out + n, *in);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = in[i * stride];
  }
}

// out (row-major over plan.size) = in at the plan's offsets.
void run_plan(CopyPlan plan, const HostTensor& x, const HostTensor& out, ThreadPool& pool) {
  plan.collapse();
  const size_t bytes = dtype_bytes(x.dtype);
  const char* in = static_cast<const char*>(x.data);
  char* o = static_cast<char*>(out.data);
  const int last = plan.rank - 1;
  const int64_t n = plan.size[last], stride = plan.in_stride[last];
  int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= plan.size[d];
  parallel_for(pool, rows, n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t offset = plan.in_base;
      for (int64_t d = last - 1, rest = r; d >= 0; --d) {
        offset += rest % plan.size[d] * plan.in_stride[d];
        rest /= plan.size[d];
      }
      const char* src = in + offset * static_cast<int64_t>(bytes);
      char* dst = o + r * n * static_cast<int64_t>(bytes);
      if (stride == 1) {
        std::memcpy(dst, src, n * bytes);
      } else if (bytes == 1) {
        copy_row(reinterpret_cast<const uint8_t*>(src), stride, reinterpret_cast<uint8_t*>(dst), n);
      } else if (bytes == 2) {
        copy_row(reinterpret_cast<const uint16_t*>(src), stride, reinterpret_cast<uint16_t*>(dst),
                 n);
      } else {
        copy_row(reinterpret_cast<const uint32_t*>(src), stride, reinterpret_cast<uint32_t*>(dst),
                 n);
      }
    }
  });
}

// Copies n bytes in chunks over the pool.
void copy_bytes(const void* src, void* dst, int64_t n, ThreadPool& pool) {
  parallel_for(pool, n, 1, [&](int64_t begin, int64_t end) {
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                end - begin);
  });
}

}  // namespace

void run_reshape(const HostTensor& x, const HostTensor& out, ThreadPool& pool) {
  copy_bytes(x.data, out.data, element_count(x) * static_cast<int64_t>(dtype_bytes(x.dtype)), pool);
}

void run_concat(const phx_axis_params& params, const HostTensor* in, size_t in_count,
                const HostTensor& out, ThreadPool& pool) {
  const int rank = static_cast<int>(out.rank);
  const int axis = params.axis < 0 ? params.axis + rank : params.axis;
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(out.dtype));
  int64_t outer = 1, inner = bytes;  // inner: the bytes of one index along the axis
  for (int d = 0; d < axis; ++d) outer *= out.shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= out.shape[d];
  const int64_t out_row = out.shape[axis] * inner;
  int64_t offsets[PHX_MAX_OP_INPUTS] = {};  // each input's place in an output row
  size_t count = 0;
  for (int64_t offset = 0; count < in_count && in[count].data != nullptr; ++count) {
    offsets[count] = offset;
    offset += in[count].shape[axis] * inner;
  }
  parallel_for(pool, outer * static_cast<int64_t>(count), out_row / static_cast<int64_t>(count),
               [&](int64_t begin, int64_t end) {
                 for (int64_t u = begin; u < end; ++u) {
                   const int64_t row = u / static_cast<int64_t>(count);
                   const size_t i = static_cast<size_t>(u % static_cast<int64_t>(count));
                   const int64_t n = in[i].shape[axis] * inner;
                   std::memcpy(static_cast<char*>(out.data) + row * out_row + offsets[i],
                               static_cast<const char*>(in[i].data) + row * n, n);
                 }
               });
}

void run_slice(const phx_slice_params& params, const HostTensor& x, const HostTensor& out,
               ThreadPool& pool) {
  int64_t strides[PHX_MAX_RANK];
  strides_of(x, strides);
  CopyPlan plan;
  for (uint32_t d = 0; d < x.rank; ++d) {
    if (params.steps[d] == 0) {
      plan.add(x.shape[d], strides[d]);
      continue;
    }
    const SliceRange r = slice_range(x.shape[d], params.starts[d], params.ends[d], params.steps[d]);
    plan.in_base += r.start * strides[d];
    plan.add(r.count, r.step * strides[d]);
  }
  run_plan(plan, x, out, pool);
}

void run_expand(const HostTensor& x, const HostTensor& out, ThreadPool& pool) {
  int64_t strides[PHX_MAX_RANK];
  strides_of(x, strides);
  CopyPlan plan;
  const int shift = static_cast<int>(out.rank) - static_cast<int>(x.rank);
  for (int d = 0; d < static_cast<int>(out.rank); ++d) {
    const int xd = d - shift;
    plan.add(out.shape[d], xd < 0 || x.shape[xd] == 1 ? 0 : strides[xd]);
  }
  run_plan(plan, x, out, pool);
}

void run_tile(const HostTensor& x, const HostTensor& out, ThreadPool& pool) {
  int64_t strides[PHX_MAX_RANK];
  strides_of(x, strides);
  CopyPlan plan;
  for (uint32_t d = 0; d < x.rank; ++d) {
    plan.add(out.shape[d] / x.shape[d], 0);
    plan.add(x.shape[d], strides[d]);
  }
  run_plan(plan, x, out, pool);
}

void run_gather(const phx_axis_params& params, const HostTensor& data, const HostTensor& indices,
                const HostTensor& out, ThreadPool& pool) {
  const int rank = static_cast<int>(data.rank);
  const int axis = params.axis < 0 ? params.axis + rank : params.axis;
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(data.dtype));
  int64_t outer = 1, inner = bytes;
  for (int d = 0; d < axis; ++d) outer *= data.shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= data.shape[d];
  const int64_t n = data.shape[axis], count = element_count(indices);
  const int32_t* index = static_cast<const int32_t*>(indices.data);
  parallel_for(pool, outer * count, inner, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t row = u / count;
      int64_t i = index[u % count];
      i = i < 0 ? i + n : i;
      char* dst = static_cast<char*>(out.data) + u * inner;
      if (i < 0 || i >= n) {  // no rule can refuse it before the op runs: zeros
        std::memset(dst, 0, inner);
      } else {
        std::memcpy(dst, static_cast<const char*>(data.data) + (row * n + i) * inner, inner);
      }
    }
  });
}

}  // namespace phx::kernels::ops
