// The ops whose booleans are u8 0 or 1: equal, less and greater (any dtype in, u8 out),
// where (selects by a u8 condition) and not.
//
// Their operands broadcast as in NumPy; the iteration space is collapsed as the binary
// ops' is (ops_common.h), and each innermost run is one loop with a stride per operand.
// Values are compared as they are: floats as f32 (16-bit ones widen exactly), integers
// as integers.
#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// Calls row(offsets, strides, n) for each innermost run of out's elements: offsets and
// strides (in elements) of in[0..Count-2] and of out, last.
template <int Count, class Row>
void for_each_run(const HostTensor* const* in, const HostTensor& out, ThreadPool& pool, Row&& row) {
  const int64_t total = element_count(out);
  if (total == 0) return;
  StridedSpace<Count> s;
  s.rank = static_cast<int>(out.rank);
  std::copy(out.shape, out.shape + out.rank, s.size);
  for (int o = 0; o < Count - 1; ++o) broadcast_strides(*in[o], s.rank, s.size, s.stride[o]);
  broadcast_strides(out, s.rank, s.size, s.stride[Count - 1]);
  s.collapse();
  const int last = s.rank - 1;
  const int64_t n = s.size[last];
  int64_t strides[Count];
  for (int o = 0; o < Count; ++o) strides[o] = s.stride[o][last];
  parallel_for(pool, total / n, n, [&](int64_t begin, int64_t end) {
    OuterWalker<Count> walker(s, begin);
    for (int64_t r = begin; r < end; ++r, walker.next()) row(walker.offset, strides, n);
  });
}

// One run of where: out = cond != 0 ? a : b, element by element (T: the element's size).
template <class T>
void select_run(const uint8_t* cond, const void* a, const void* b, void* out, const int64_t* offset,
                const int64_t* stride, int64_t n) {
  const T* pa = static_cast<const T*>(a) + offset[1];
  const T* pb = static_cast<const T*>(b) + offset[2];
  const uint8_t* pc = cond + offset[0];
  T* po = static_cast<T*>(out) + offset[3];
  for (int64_t i = 0; i < n; ++i)
    po[i * stride[3]] = pc[i * stride[0]] != 0 ? pa[i * stride[1]] : pb[i * stride[2]];
}

}  // namespace

void run_compare(phx_op_id op, const HostTensor& a, const HostTensor& b, const HostTensor& out,
                 ThreadPool& pool) {
  const HostTensor* in[] = {&a, &b};
  uint8_t* y = static_cast<uint8_t*>(out.data);
  visit_values(a.dtype, [&](auto load) {
    auto compare = [&](auto cmp) {
      for_each_run<3>(in, out, pool, [&](const int64_t* offset, const int64_t* stride, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          y[offset[2] + i * stride[2]] =
              cmp(load(a.data, offset[0] + i * stride[0]), load(b.data, offset[1] + i * stride[1]))
                  ? 1
                  : 0;
      });
    };
    // A NaN is unequal to everything, and neither less nor greater: the C++ comparisons.
    if (op == PHX_OP_EQUAL)
      compare([](auto u, auto v) { return u == v; });
    else if (op == PHX_OP_LESS)
      compare([](auto u, auto v) { return u < v; });
    else
      compare([](auto u, auto v) { return u > v; });
  });
}

void run_where(const HostTensor& cond, const HostTensor& a, const HostTensor& b,
               const HostTensor& out, ThreadPool& pool) {
  const HostTensor* in[] = {&cond, &a, &b};
  const uint8_t* pc = static_cast<const uint8_t*>(cond.data);
  // Selection moves bits: only the element size matters.
  const size_t bytes = dtype_bytes(a.dtype);
  for_each_run<4>(in, out, pool, [&](const int64_t* offset, const int64_t* stride, int64_t n) {
    if (bytes == 1)
      select_run<uint8_t>(pc, a.data, b.data, out.data, offset, stride, n);
    else if (bytes == 2)
      select_run<uint16_t>(pc, a.data, b.data, out.data, offset, stride, n);
    else
      select_run<uint32_t>(pc, a.data, b.data, out.data, offset, stride, n);
  });
}

void run_not(const HostTensor& x, const HostTensor& out, ThreadPool& pool) {
  const uint8_t* px = static_cast<const uint8_t*>(x.data);
  uint8_t* py = static_cast<uint8_t*>(out.data);
  parallel_for(pool, element_count(out), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) py[i] = px[i] == 0 ? 1 : 0;
  });
}

}  // namespace phx::kernels::ops
