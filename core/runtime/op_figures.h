// The work of one op on these tensors, as a profile and a trace report it beside its
// time: phx/op_counts.h counts it, from the tensors' shapes.
#pragma once

#include <phx/op_counts.h>

#include "tensor.h"

namespace phx {

// inputs may hold null for absent optional inputs.
OpCounts op_figures(phx_op_id op, const void* params, const Tensor* const* inputs,
                    size_t input_count, const Tensor* const* outputs, size_t output_count);

}  // namespace phx
