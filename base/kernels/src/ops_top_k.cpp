// top_k: the k largest (or smallest) elements along an axis, in order, with their indices.
// Each row along the axis is a partial sort of its indices (O(n log k)), the rows spread
// over the pool.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// Whether element a comes before element b (their values va and vb): the larger first
// (the smaller with !largest), a NaN larger than every number, equal ones in index order.
template <class V>
bool comes_first(V va, V vb, int32_t a, int32_t b, bool largest) {
  const bool a_nan = va != va, b_nan = vb != vb;
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return a < b;
    return a_nan == largest;
  }
  if (va != vb) return largest ? va > vb : va < vb;
  return a < b;
}

}  // namespace

void run_top_k(const phx_top_k_params& params, const HostTensor& x, const HostTensor& values,
               const HostTensor& indices, ThreadPool& pool) {
  const int rank = static_cast<int>(x.rank);
  const int axis = params.axis < 0 ? params.axis + rank : params.axis;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  const int64_t len = x.shape[axis];
  const int64_t k = params.k;
  const bool largest = params.largest != 0;
  const size_t bytes = dtype_bytes(x.dtype);
  const auto* src = static_cast<const unsigned char*>(x.data);
  auto* dst = static_cast<unsigned char*>(values.data);
  auto* picked = static_cast<int32_t*>(indices.data);
  visit_values(x.dtype, [&](auto value) {
    parallel_for(pool, outer * inner, len, [&](int64_t begin, int64_t end) {
      std::vector<int32_t> order(static_cast<size_t>(len));
      for (int64_t t = begin; t < end; ++t) {
        const int64_t base = (t / inner) * len * inner + t % inner;
        const int64_t out_base = (t / inner) * k * inner + t % inner;
        for (int64_t i = 0; i < len; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
          return comes_first(value(x.data, base + a * inner), value(x.data, base + b * inner), a, b,
                             largest);
        });
        for (int64_t j = 0; j < k; ++j) {
          const int64_t from = base + order[static_cast<size_t>(j)] * inner;
          const int64_t to = out_base + j * inner;
          std::memcpy(dst + to * bytes, src + from * bytes, bytes);
          picked[to] = order[static_cast<size_t>(j)];
        }
      }
    });
  });
}

}  // namespace phx::kernels::ops
