#include "op_figures.h"

#include <phx/op_table.h>

#include <algorithm>

namespace phx {
namespace {

OperandView view_of(const Tensor* t) {
  return t == nullptr ? OperandView{} : OperandView{t->dtype, t->rank, t->shape};
}

}  // namespace

OpCounts op_figures(phx_op_id op, const void* params, const Tensor* const* inputs,
                    size_t input_count, const Tensor* const* outputs, size_t output_count) {
  OperandView in[kMaxOpInputs], out[kMaxOpOutputs];
  for (size_t i = 0; i < input_count && i < kMaxOpInputs; ++i) in[i] = view_of(inputs[i]);
  for (size_t i = 0; i < output_count && i < kMaxOpOutputs; ++i) out[i] = view_of(outputs[i]);
  return op_counts(op, params, {in, std::min(input_count, kMaxOpInputs)},
                   {out, std::min(output_count, kMaxOpOutputs)});
}

}  // namespace phx
