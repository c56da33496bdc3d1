// The grammar of fuzz_graph's input, shared with the seed writer (make_seeds.cpp). Fields
// are bytes read front to back (fuzz_input.h), each command a byte and then its fields:
//   input:     dtype, rank, per dimension a size code (0 dynamic, else code % 5), per
//              dimension a name code (0 unnamed, 1 "batch", 2 "sequence")
//   constant:  dtype, rank, per dimension code % 5, size code (0: one byte too many)
//   tensor:    size code (elements code % 4 + 1), destroy code (0: destroyed before compile)
//   output:    value code (0xff: PHX_VALUE_NONE, else code % (values + 2))
//   info:      value code
//   compile:   flags (PHX_COMPILE_* of code % 8; bit 3: every other device as
//              other_devices; bit 4: each executable saved, loaded and run again); then
//              per device (twice with bit 4), per dynamic dimension of each input, a size
//              code (code % 4 + 1)
//   node:      op, flags (bit 0 keep the struct_size of the parameter bytes, bit 1 pass the
//              parameters, bit 2 pass output_dtypes), input count, value codes, output
//              count, output dtypes, max(parameter struct size, 8) parameter bytes
#pragma once

#include <cstdint>

namespace phx::fuzz {

enum GraphCommand : uint8_t {
  kGraphInput,
  kGraphConstant,
  kGraphTensor,
  kGraphOutput,
  kGraphInfo,
  kGraphCompile,
  kGraphNode,
  kGraphCommandCount
};

// A dimension's size code that reads as PHX_DIM_DYNAMIC.
constexpr uint8_t kDynamicDim = 0;

}  // namespace phx::fuzz
