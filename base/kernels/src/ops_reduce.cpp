// reduce_sum, reduce_max, reduce_mean, reduce_min and reduce_prod over any set of axes;
// argmax along one axis.
//
// The axes are collapsed first: size-1 dimensions go, and neighbours that are both
// reduced or both kept merge. What remains alternates kept and reduced dimensions; the
// innermost one decides the inner loop: reduced -> each contiguous run folds into one
// output element; kept -> each run is added (or max-ed) into a run of outputs.
// Accumulation: f32 for float dtypes (16-bit values are widened exactly, the result is
// rounded once; a mean divides the f32 sum by the count), uint32_t for integer sums and
// products (wrap as the dtype does), int32_t for integer maxima and minima. The order of
// accumulation does not depend on the thread count.
#include <cmath>
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// ---- f32 kernels ----
PHX_CLONES float f32_row_sum(const float* x, int64_t n) { return sum_f32(x, n); }
PHX_CLONES void f32_add_into(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}
PHX_CLONES void f32_max_into(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = max_nan(acc[i], x[i]);
}
PHX_CLONES void f32_min_into(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = min_nan(acc[i], x[i]);
}
// In lanes, as sum_f32: the same order on every instruction set and thread count.
PHX_CLONES float f32_row_prod(const float* x, int64_t n) {
  float acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = 1.0f;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] *= x[i + j];
  for (; i < n; ++i) acc[0] *= x[i];
  float total = 1.0f;
  for (int j = 0; j < kLanes; ++j) total *= acc[j];
  return total;
}
PHX_CLONES void f32_mul_into(const float* x, float* acc, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] *= x[i];
}

enum class Fold { kSum, kMax, kMin, kProd };

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
PHX_INLINE int32_t int_row_min_typed(const void* x, int64_t n) {
  const T* p = static_cast<const T*>(x);
  int32_t m = std::numeric_limits<int32_t>::max();
  for (int64_t i = 0; i < n; ++i) m = std::min<int32_t>(m, p[i]);
  return m;
}

template <class T>
PHX_INLINE uint32_t int_row_prod_typed(const void* x, int64_t n) {
  const T* p = static_cast<const T*>(x);
  uint32_t acc = 1;
  for (int64_t i = 0; i < n; ++i) acc *= static_cast<uint32_t>(p[i]);
  return acc;
}

template <class T>
PHX_INLINE void int_min_into_typed(const void* x, int32_t* acc, int64_t n) {
  const T* p = static_cast<const T*>(x);
  for (int64_t i = 0; i < n; ++i) acc[i] = std::min<int32_t>(acc[i], p[i]);
}

template <class T>
PHX_INLINE void int_mul_into_typed(const void* x, uint32_t* acc, int64_t n) {
  const T* p = static_cast<const T*>(x);
  for (int64_t i = 0; i < n; ++i) acc[i] *= static_cast<uint32_t>(p[i]);
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

// The typed kernels chosen by dtype inside each clone. Modular folds (the sum, or the
// product with !sum) accumulate in uint32_t; ordered ones (the maximum, or the minimum
// with !max) in int32_t.
PHX_CLONES uint32_t int_row_modular(phx_dtype dtype, bool sum, const void* x, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      return sum ? int_row_sum_typed<int8_t>(x, n) : int_row_prod_typed<int8_t>(x, n);
    case PHX_DTYPE_I16:
      return sum ? int_row_sum_typed<int16_t>(x, n) : int_row_prod_typed<int16_t>(x, n);
    case PHX_DTYPE_I32:
      return sum ? int_row_sum_typed<int32_t>(x, n) : int_row_prod_typed<int32_t>(x, n);
    default:  // PHX_DTYPE_U8
      return sum ? int_row_sum_typed<uint8_t>(x, n) : int_row_prod_typed<uint8_t>(x, n);
  }
}

PHX_CLONES int32_t int_row_ordered(phx_dtype dtype, bool max, const void* x, int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      return max ? int_row_max_typed<int8_t>(x, n) : int_row_min_typed<int8_t>(x, n);
    case PHX_DTYPE_I16:
      return max ? int_row_max_typed<int16_t>(x, n) : int_row_min_typed<int16_t>(x, n);
    case PHX_DTYPE_I32:
      return max ? int_row_max_typed<int32_t>(x, n) : int_row_min_typed<int32_t>(x, n);
    default:  // PHX_DTYPE_U8
      return max ? int_row_max_typed<uint8_t>(x, n) : int_row_min_typed<uint8_t>(x, n);
  }
}

PHX_CLONES void int_into_modular(phx_dtype dtype, bool sum, const void* x, uint32_t* acc,
                                 int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      sum ? int_add_into_typed<int8_t>(x, acc, n) : int_mul_into_typed<int8_t>(x, acc, n);
      break;
    case PHX_DTYPE_I16:
      sum ? int_add_into_typed<int16_t>(x, acc, n) : int_mul_into_typed<int16_t>(x, acc, n);
      break;
    case PHX_DTYPE_I32:
      sum ? int_add_into_typed<int32_t>(x, acc, n) : int_mul_into_typed<int32_t>(x, acc, n);
      break;
    default:  // PHX_DTYPE_U8
      sum ? int_add_into_typed<uint8_t>(x, acc, n) : int_mul_into_typed<uint8_t>(x, acc, n);
      break;
  }
}

PHX_CLONES void int_into_ordered(phx_dtype dtype, bool max, const void* x, int32_t* acc,
                                 int64_t n) {
  switch (dtype) {
    case PHX_DTYPE_I8:
      max ? int_max_into_typed<int8_t>(x, acc, n) : int_min_into_typed<int8_t>(x, acc, n);
      break;
    case PHX_DTYPE_I16:
      max ? int_max_into_typed<int16_t>(x, acc, n) : int_min_into_typed<int16_t>(x, acc, n);
      break;
    case PHX_DTYPE_I32:
      max ? int_max_into_typed<int32_t>(x, acc, n) : int_min_into_typed<int32_t>(x, acc, n);
      break;
    default:  // PHX_DTYPE_U8
      max ? int_max_into_typed<uint8_t>(x, acc, n) : int_min_into_typed<uint8_t>(x, acc, n);
      break;
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

// The fold's f32 functions: its identity, a run into one value, a run into a run of
// accumulators, and two values into one.
struct FloatFold {
  float init;
  float (*row)(const float*, int64_t);
  void (*into)(const float*, float*, int64_t);
  float (*combine)(float, float);
};

FloatFold float_fold(Fold fold) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (fold) {
    case Fold::kSum:
      return {0.0f, f32_row_sum, f32_add_into, [](float a, float b) { return a + b; }};
    case Fold::kMax:
      return {-kInf, max_row_f32, f32_max_into, [](float a, float b) { return max_nan(a, b); }};
    case Fold::kMin:
      return {kInf, min_row_f32, f32_min_into, [](float a, float b) { return min_nan(a, b); }};
    case Fold::kProd:
      break;
  }
  return {1.0f, f32_row_prod, f32_mul_into, [](float a, float b) { return a * b; }};
}

// divisor: the mean's count, 1 otherwise.
void reduce_float(Fold fold, float divisor, const Plan& plan, const HostTensor& x,
                  const HostTensor& out, ThreadPool& pool) {
  const phx_dtype dtype = x.dtype;
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(dtype));
  const FloatFold f = float_fold(fold);
  std::vector<float> acc(static_cast<size_t>(element_count(out)), f.init);
  // 16-bit runs are widened block by block.
  auto row = [&](const char* p, int64_t n) {
    if (dtype == PHX_DTYPE_F32) return f.row(reinterpret_cast<const float*>(p), n);
    float result = f.init, buf[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t len = std::min(kBlock, n - i);
      to_f32(dtype, p + i * bytes, buf, len);
      result = f.combine(result, f.row(buf, len));
    }
    return result;
  };
  auto into = [&](const char* p, float* a, int64_t n) {
    if (dtype == PHX_DTYPE_F32) return f.into(reinterpret_cast<const float*>(p), a, n);
    float buf[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t len = std::min(kBlock, n - i);
      to_f32(dtype, p + i * bytes, buf, len);
      f.into(buf, a + i, len);
    }
  };
  reduce<float>(plan, static_cast<const char*>(x.data), bytes, acc.data(), row, into, f.combine,
                pool);
  if (divisor != 1.0f)
    for (float& v : acc) v /= divisor;
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

// Integer sums and products in uint32_t (modular), maxima and minima in int32_t.
void reduce_int(Fold fold, const Plan& plan, const HostTensor& x, const HostTensor& out,
                ThreadPool& pool) {
  const phx_dtype dtype = x.dtype;
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(dtype));
  const char* px = static_cast<const char*>(x.data);
  const size_t count = static_cast<size_t>(element_count(out));
  if (fold == Fold::kSum || fold == Fold::kProd) {
    const bool sum = fold == Fold::kSum;
    std::vector<uint32_t> acc(count, sum ? 0u : 1u);
    reduce<uint32_t>(
        plan, px, bytes, acc.data(),
        [=](const char* p, int64_t n) { return int_row_modular(dtype, sum, p, n); },
        [=](const char* p, uint32_t* a, int64_t n) { int_into_modular(dtype, sum, p, a, n); },
        [sum](uint32_t a, uint32_t b) { return sum ? a + b : a * b; }, pool);
    store_ints(dtype, acc, out.data);
  } else {
    const bool max = fold == Fold::kMax;
    std::vector<int32_t> acc(
        count, max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max());
    reduce<int32_t>(
        plan, px, bytes, acc.data(),
        [=](const char* p, int64_t n) { return int_row_ordered(dtype, max, p, n); },
        [=](const char* p, int32_t* a, int64_t n) { int_into_ordered(dtype, max, p, a, n); },
        [max](int32_t a, int32_t b) { return max ? std::max(a, b) : std::min(a, b); }, pool);
    store_ints(dtype, acc, out.data);
  }
}

Fold fold_of(phx_op_id op) {
  switch (op) {
    case PHX_OP_REDUCE_MAX:
      return Fold::kMax;
    case PHX_OP_REDUCE_MIN:
      return Fold::kMin;
    case PHX_OP_REDUCE_PROD:
      return Fold::kProd;
    default:  // PHX_OP_REDUCE_SUM, PHX_OP_REDUCE_MEAN
      return Fold::kSum;
  }
}

// Whether v replaces best as the argmax: larger, or equal when the last index is wanted.
// A NaN is larger than every number and equal to another NaN.
template <class V>
bool replaces(V v, V best, bool last) {
  if (v != v) return best == best || last;
  if (best != best) return false;
  return last ? v >= best : v > best;
}

}  // namespace

void run_reduce(phx_op_id op, const phx_reduce_params& params, const HostTensor& x,
                const HostTensor& out, ThreadPool& pool) {
  const Plan plan = make_plan(x, params.axes_mask);
  const Fold fold = fold_of(op);
  if (is_float(x.dtype)) {
    const int64_t outputs = element_count(out);
    const float divisor =
        op == PHX_OP_REDUCE_MEAN && outputs > 0 ? static_cast<float>(plan.total / outputs) : 1.0f;
    reduce_float(fold, divisor, plan, x, out, pool);
  } else {
    reduce_int(fold, plan, x, out, pool);
  }
}

void run_argmax(const phx_argmax_params& params, const HostTensor& x, const HostTensor& out,
                ThreadPool& pool) {
  const int rank = static_cast<int>(x.rank);
  const int axis = params.axis < 0 ? params.axis + rank : params.axis;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  const int64_t len = x.shape[axis];
  const bool last = params.select_last_index != 0;
  int32_t* y = static_cast<int32_t*>(out.data);
  visit_values(x.dtype, [&](auto value) {
    parallel_for(pool, outer * inner, len, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t base = (t / inner) * len * inner + t % inner;
        auto best = value(x.data, base);
        int32_t index = 0;
        for (int64_t k = 1; k < len; ++k) {
          const auto v = value(x.data, base + k * inner);
          if (replaces(v, best, last)) {
            best = v;
            index = static_cast<int32_t>(k);
          }
        }
        y[t] = index;
      }
    });
  });
}

}  // namespace phx::kernels::ops
