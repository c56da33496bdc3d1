#include "known_ops.h"

#include "import_error.h"
#include "tensor_proto.h"

namespace phx::onnx_import {

bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                    std::vector<int64_t>& out) {
  const size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

namespace {

// The flat index into an operand of dims (aligned at the end) of the output element
// whose multi-index is index.
size_t operand_offset(const std::vector<int64_t>& dims, const std::vector<int64_t>& index) {
  size_t offset = 0;
  const size_t skip = index.size() - dims.size();
  for (size_t d = 0; d < dims.size(); ++d)
    offset = offset * dims[d] + (dims[d] == 1 ? 0 : index[skip + d]);
  return offset;
}

}  // namespace

void next_index(std::vector<int64_t>& index, const std::vector<int64_t>& dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++index[d] < dims[d]) return;
    index[d] = 0;
  }
}

KnownValue known_binary(const KnownValue& a, const KnownValue& b,
                        const std::function<int64_t(int64_t, int64_t)>& int_op,
                        const std::function<double(double, double)>& real_op, int32_t result_type) {
  KnownValue out;
  out.elem_type = result_type != 0 ? result_type : a.elem_type;
  if (!broadcast_dims(a.dims, b.dims, out.dims))
    refuse(PHX_STATUS_INVALID_ARGUMENT, "the shapes of the operands do not broadcast");
  const size_t n = static_cast<size_t>(element_count(out.dims, "a result"));
  std::vector<int64_t> index(out.dims.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const size_t ia = operand_offset(a.dims, index), ib = operand_offset(b.dims, index);
    if (a.integral()) {
      const int64_t r = int_op(a.ints[ia], b.int_at(ib));
      if (out.integral())
        out.ints.push_back(r);
      else
        out.reals.push_back(static_cast<double>(r));
    } else {
      const double r = real_op(a.reals[ia], b.real_at(ib));
      if (out.integral())
        out.ints.push_back(saturated(r));
      else
        out.reals.push_back(r);
    }
    next_index(index, out.dims);
  }
  return out;
}

KnownValue known_where(const KnownValue& cond, const KnownValue& a, const KnownValue& b) {
  std::vector<int64_t> ab_dims;
  KnownValue out;
  out.elem_type = a.elem_type;
  if (!broadcast_dims(a.dims, b.dims, ab_dims) || !broadcast_dims(cond.dims, ab_dims, out.dims))
    refuse(PHX_STATUS_INVALID_ARGUMENT, "the shapes of the operands do not broadcast");
  const size_t n = static_cast<size_t>(element_count(out.dims, "a result"));
  std::vector<int64_t> index(out.dims.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    const bool take_a = cond.int_at(operand_offset(cond.dims, index)) != 0;
    out.ints.push_back(take_a ? a.ints[operand_offset(a.dims, index)]
                              : b.int_at(operand_offset(b.dims, index)));
    next_index(index, out.dims);
  }
  return out;
}

std::vector<int64_t> known_int_list(const KnownValue& known) {
  std::vector<int64_t> out(known.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = known.int_at(i);
  return out;
}

}  // namespace phx::onnx_import
