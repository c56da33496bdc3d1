// The op parameter structs of phynexus.h described as data: per ParamsKind the struct's
// name, size and members, and per op the struct a null params pointer stands for.
// phx_op_info_get publishes them, and the code that must handle every struct alike (the
// core's copy of a caller's struct, Python's keyword arguments, tpu-sim's cache keys)
// reads them instead of knowing each struct. A new struct is one entry in op_params.cpp,
// held to the header's layout by static_asserts there.
#pragma once

#include <phx/op_table.h>
#include <phynexus/phynexus.h>

#include <cstddef>
#include <span>

namespace phx {

struct ParamsDescription {
  const char* struct_name = "";             // "phx_matmul_params"; "" for ParamsKind::none
  size_t size = 0;                          // sizeof the struct; 0 for ParamsKind::none
  std::span<const phx_param_field> fields;  // the members after struct_size, in order
  const void* defaults = nullptr;           // the header's INIT, or null where the struct has none
};

const ParamsDescription& params_description(ParamsKind params);

// Bytes of one entry of a member of this type: 8 for INT64, else 4.
size_t param_type_size(phx_param_type type);

// What a null params pointer stands for (phx_op_info.default_params): the op's own
// defaults (schema.default_params) or its struct's; null for an op without parameters,
// one that requires them, and transpose (its default depends on x's rank).
const void* default_params(const OpSchema& schema);

// What a null params pointer means for a first input of input_rank, written whole into
// params: default_params, or transpose's reversed dimensions; zeros for an op without
// defaults. The one place the core's copy of a caller's struct and the host kernels'
// plugin-facing entry take them from.
void fill_default_params(const OpSchema& schema, uint32_t input_rank, OpParams& params);

}  // namespace phx
