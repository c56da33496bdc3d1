// The work of one op, as a trace reports it beside its time: FLOPs and bytes moved.
#pragma once

#include <cstdint>

#include "context.h"

namespace phx {

struct OpFigures {
  double flops = 0;    // a multiply-add counts 2; an elementwise op 1 per output element
  uint64_t bytes = 0;  // the byte sizes of its inputs and outputs, each read or written once
};

// The op's figures from its tensors' shapes (inputs may hold null for absent optional
// inputs). Matmul, convolutions and attention count their multiply-adds; every other op
// one FLOP per output element, a floor that ignores a transcendental's cost.
OpFigures op_figures(phx_op_id op, const void* params, const Tensor* const* inputs,
                     size_t input_count, const Tensor* const* outputs, size_t output_count);

}  // namespace phx
