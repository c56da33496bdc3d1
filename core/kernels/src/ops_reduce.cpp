// reduce_sum and reduce_max over any set of axes.
//
// The axes are collapsed first: size-1 dimensions go, and neighbours that are both
// reduced or both kept merge. What remains alternates kept and reduced dimensions; the
// innermost one decides the inner loop: reduced -> each contiguous run folds into one
// output element; kept -> each run is added (or max-ed) into a run of outputs.
// Accumulation: f32 for float dtypes (16-bit values are widened exactly, the result is
// rounded once), uint32_t for integer sums (wraps as the dtype does), int32_t for
// integer maxima. The order of accumulation does not depend on the thread count.
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// ---- f32 kernels ----
PHX_CLONES float f32_row_sum(const float* x, int64_t n) { return sum_f32(x, n); }
PHX_CLONES float f32_row_max(const float* x, int64_t n) { return max_f32(x, n); }
PHX_CLONES void f32_add_into(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}
PHX_CLONES void f32_max_into(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = max_nan(acc[i], x[i]);
}

// ---- integer kernels ----
template <class T>
PHX_INLINE uint32_t int_row_sum_typed(const void* x, int64_t n) {
  const T* p = static_cast<const T*>(x);
  uint32_t acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += static_cast<uint32_t>(p[i + j]);
  for (; i < n; ++i) acc[0] += static_cast<uint32_t>(p[i]);
  uint32_t total = 0;
  for (int j = 0; j < kLanes; ++j) total += acc[j];
  return total;
}

template <class T>
PHX_INLINE int32_t int_row_max_typed(const void* x, int64_t n) {
  const T* p = static_cast<const T*>(x);
  int32_t m = std::numeric_limits<int32_t>::min();
  for (int64_t i = 0; i < n; ++i) m = std::max<int32_t>(m, p[i]);
  return m;
}

template <class T>
PHX_INLINE void int_add_into_typed(const void* x, uint32_t* acc, int64_t n) {
  const T* p = static_cast<const T*>(x);
  for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<uint32_t>(p[i]);
}

template <class T>
PHX_INLINE void int_max_into_typed(const void* x, int32_t* acc, int64_t n) {
  const T* p = static_cast<const T*>(x);
  for (int64_t i = 0; i < n; ++i) acc[i] = std::max<int32_t>(acc[i], p[i]);
}

PHX_CLONES uint32_t int_row_sum(phx_dtype dtype, const void* x, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      return int_row_sum_typed<int8_t>(x, n);
    case PHX_DTYPE_I16:
      return int_row_sum_typed<int16_t>(x, n);
    case PHX_DTYPE_I32:
      return int_row_sum_typed<int32_t>(x, n);
    default:
      return int_row_sum_typed<uint8_t>(x, n);  // PHX_DTYPE_U8
  }
}

PHX_CLONES int32_t int_row_max(phx_dtype dtype, const void* x, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      return int_row_max_typed<int8_t>(x, n);
    case PHX_DTYPE_I16:
      return int_row_max_typed<int16_t>(x, n);
    case PHX_DTYPE_I32:
      return int_row_max_typed<int32_t>(x, n);
    default:
      return int_row_max_typed<uint8_t>(x, n);  // PHX_DTYPE_U8
  }
}

PHX_CLONES void int_add_into(phx_dtype dtype, const void* x, uint32_t* acc, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      int_add_into_typed<int8_t>(x, acc, n);
      break;
    case PHX_DTYPE_I16:
      int_add_into_typed<int16_t>(x, acc, n);
      break;
    case PHX_DTYPE_I32:
      int_add_into_typed<int32_t>(x, acc, n);
      break;
    default:
      int_add_into_typed<uint8_t>(x, acc, n);
      break;  // PHX_DTYPE_U8
  }
}

PHX_CLONES void int_max_into(phx_dtype dtype, const void* x, int32_t* acc, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      int_max_into_typed<int8_t>(x, acc, n);
      break;
    case PHX_DTYPE_I16:
      int_max_into_typed<int16_t>(x, acc, n);
      break;
    case PHX_DTYPE_I32:
      int_max_into_typed<int32_t>(x, acc, n);
      break;
    default:
      int_max_into_typed<uint8_t>(x, acc, n);
      break;  // PHX_DTYPE_U8
  }
}

// ---- the iteration ----

// The collapsed reduction: operand 0 is the input, operand 1 the output (stride 0
// along reduced dimensions).
struct Plan {
  StridedSpace<2> space;
  bool reduced[PHX_MAX_RANK] = {};
  int64_t total = 1;
};

Plan make_plan(const HostTensor& x, uint32_t axes_mask) {
  Plan plan;
  const int rank = static_cast<int>(x.rank);
  // Collapsed dimensions, outermost first.
  int64_t sizes[PHX_MAX_RANK];
  bool reduced[PHX_MAX_RANK];
  int count = 0;
  for (int d = 0; d < rank; ++d) {
    plan.total *= x.shape[d];
    if (x.shape[d] == 1) continue;
    const bool r = axes_mask == 0 || (axes_mask >> d & 1u) != 0;
    if (count > 0 && reduced[count - 1] == r) {
      sizes[count - 1] *= x.shape[d];
    } else {
      sizes[count] = x.shape[d];
      reduced[count] = r;
      ++count;
    }
  }
  if (count == 0) {  // a single element
    sizes[0] = 1;
    reduced[0] = false;
    count = 1;
  }
  StridedSpace<2>& s = plan.space;
  s.rank = count;
  int64_t in_stride = 1, out_stride = 1;
  for (int d = count - 1; d >= 0; --d) {
    s.size[d] = sizes[d];
    plan.reduced[d] = reduced[d];
    s.stride[0][d] = in_stride;
    s.stride[1][d] = reduced[d] ? 0 : out_stride;
    in_stride *= sizes[d];
    if (!reduced[d]) out_stride *= sizes[d];
  }
  return plan;
}

// Folds x into acc (out_count accumulators, initialized) following plan.
//   row(ptr, n) -> Acc folds a contiguous run; into(ptr, acc, n) folds a run into a
//   run of accumulators; combine(Acc, Acc) -> Acc.
template <class Acc, class Row, class Into, class Combine>
void reduce(const Plan& plan, const char* x, int64_t bytes, Acc* acc, Row&& row, Into&& into,
            Combine&& combine, ThreadPool& pool) {
  const StridedSpace<2>& s = plan.space;
  const int last = s.rank - 1;
  int split = -1;  // the largest kept dimension: tasks split it and never share outputs
  for (int d = 0; d < s.rank; ++d)
    if (!plan.reduced[d] && (split < 0 || s.size[d] > s.size[split])) split = d;
  if (split < 0) {
    // Everything reduces into acc[0]: fixed-size chunks give partial results, folded
    // in order afterwards.
    constexpr int64_t kChunk = 16 * 1024;
    const int64_t chunks = (plan.total + kChunk - 1) / kChunk;
    std::vector<Acc> partial(static_cast<size_t>(chunks));
    parallel_for(pool, chunks, kChunk, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c)
        partial[c] = row(x + c * kChunk * bytes, std::min(kChunk, plan.total - c * kChunk));
    });
    for (const Acc& p : partial) acc[0] = combine(acc[0], p);
    return;
  }
  const int64_t work_per_index = plan.total / s.size[split];
  parallel_for(pool, s.size[split], work_per_index, [&](int64_t lo, int64_t hi) {
    StridedSpace<2> part = s;
    part.size[split] = hi - lo;
    const int64_t in_base = lo * s.stride[0][split], out_base = lo * s.stride[1][split];
    const int64_t n = part.size[last];
    int64_t rows = 1;
    for (int d = 0; d < last; ++d) rows *= part.size[d];
    OuterWalker<2> at(part, 0);
    for (int64_t r = 0; r < rows; ++r, at.next()) {
      const char* src = x + (in_base + at.offset[0]) * bytes;
      Acc* dst = acc + out_base + at.offset[1];
      if (plan.reduced[last]) {
        *dst = combine(*dst, row(src, n));
      } else {
        into(src, dst, n);
      }
    }
  });
}

void reduce_float(bool is_sum, const Plan& plan, const HostTensor& x, const HostTensor& out,
                  ThreadPool& pool) {
  const phx_dtype dtype = x.dtype;
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(dtype));
  auto combine = [is_sum](float a, float b) { return is_sum ? a + b : max_nan(a, b); };
  auto fold_row = [is_sum](const float* p, int64_t n) {
    return is_sum ? f32_row_sum(p, n) : f32_row_max(p, n);
  };
  auto fold_into = [is_sum](const float* p, float* acc, int64_t n) {
    is_sum ? f32_add_into(p, acc, n) : f32_max_into(p, acc, n);
  };
  const float init = is_sum ? 0.0f : -std::numeric_limits<float>::infinity();
  std::vector<float> acc(static_cast<size_t>(element_count(out)), init);
  // 16-bit runs are widened block by block.
  auto row = [&](const char* p, int64_t n) {
    if (dtype == PHX_DTYPE_F32) return fold_row(reinterpret_cast<const float*>(p), n);
    float result = init, buf[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t len = std::min(kBlock, n - i);
      to_f32(dtype, p + i * bytes, buf, len);
      result = combine(result, fold_row(buf, len));
    }
    return result;
  };
  auto into = [&](const char* p, float* a, int64_t n) {
    if (dtype == PHX_DTYPE_F32) return fold_into(reinterpret_cast<const float*>(p), a, n);
    float buf[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t len = std::min(kBlock, n - i);
      to_f32(dtype, p + i * bytes, buf, len);
      fold_into(buf, a + i, len);
    }
  };
  reduce<float>(plan, static_cast<const char*>(x.data), bytes, acc.data(), row, into, combine,
                pool);
  from_f32(dtype, acc.data(), out.data, static_cast<int64_t>(acc.size()));
}

template <class Acc>
void store_ints(phx_dtype dtype, const std::vector<Acc>& acc, void* out) {
  visit_int(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out);
    for (size_t i = 0; i < acc.size(); ++i) o[i] = static_cast<T>(acc[i]);
  });
}

void reduce_int(bool is_sum, const Plan& plan, const HostTensor& x, const HostTensor& out,
                ThreadPool& pool) {
  const phx_dtype dtype = x.dtype;
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(dtype));
  const char* px = static_cast<const char*>(x.data);
  const size_t count = static_cast<size_t>(element_count(out));
  if (is_sum) {
    std::vector<uint32_t> acc(count, 0);
    reduce<uint32_t>(
        plan, px, bytes, acc.data(),
        [dtype](const char* p, int64_t n) { return int_row_sum(dtype, p, n); },
        [dtype](const char* p, uint32_t* a, int64_t n) { int_add_into(dtype, p, a, n); },
        [](uint32_t a, uint32_t b) { return a + b; }, pool);
    store_ints(dtype, acc, out.data);
  } else {
    std::vector<int32_t> acc(count, std::numeric_limits<int32_t>::min());
    reduce<int32_t>(
        plan, px, bytes, acc.data(),
        [dtype](const char* p, int64_t n) { return int_row_max(dtype, p, n); },
        [dtype](const char* p, int32_t* a, int64_t n) { int_max_into(dtype, p, a, n); },
        [](int32_t a, int32_t b) { return std::max(a, b); }, pool);
    store_ints(dtype, acc, out.data);
  }
}

}  // namespace

void run_reduce(phx_op_id op, const phx_reduce_params& params, const HostTensor& x,
                const HostTensor& out, ThreadPool& pool) {
  const Plan plan = make_plan(x, params.axes_mask);
  const bool is_sum = op == PHX_OP_REDUCE_SUM;
  if (is_float(x.dtype)) {
    reduce_float(is_sum, plan, x, out, pool);
  } else {
    reduce_int(is_sum, plan, x, out, pool);
  }
}

}  // namespace phx::kernels::ops
