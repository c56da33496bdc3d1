// How much arithmetic an op does and how many bytes it moves, from its operands' shapes:
// the one count behind a profile's and a trace's figures (core/runtime), the graph's cost
// model (core/graph/node_cost.cpp) and the plugins' roofline estimates
// (plugins/common/roofline.cpp).
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <span>

namespace phx {

// An operand's dtype and shape, as whichever layer holds them; shape null: an optional
// input left out.
struct OperandView {
  phx_dtype dtype = PHX_DTYPE_INVALID;
  uint32_t rank = 0;
  const int64_t* shape = nullptr;
};

struct OpCounts {
  double flops = 0;    // a multiply-add counts 2
  uint64_t bytes = 0;  // every present input read once, every output written once
};

// The op's counts. params: its normalized parameters (null where it takes none).
//   matmul, qmatmul: 2 K per output element (K: a's last dimension, or the one before
//     with transpose_a; a rank-1 a's only one);
//   conv2d, qconv2d: 2 C_in / groups KH KW per output element (the weight's elements per
//     output channel, in either layout);
//   conv_transpose2d: 2 C_out / groups KH KW per input element;
//   attention: 2 Skv (D + Dv) per query row and head;
//   max_pool: a compare per element of the window, per output element; avg_pool: an add
//     per element and a multiply;
//   every other op: 1 per element of its largest operand (bound by its bytes; a floor that
//     ignores a transcendental's cost).
OpCounts op_counts(phx_op_id op, const void* params, std::span<const OperandView> inputs,
                   std::span<const OperandView> outputs);

}  // namespace phx
