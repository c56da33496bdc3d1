// The rules of every op (docs/ops.md), as the op table (op_table.h) states them, checked
// before a plugin sees the op, so that plugins may trust what they are given and users
// get one message per broken rule.
#pragma once

#include <phx/op_table.h>
#include <phynexus/phynexus.h>

#include <string>
#include <vector>

#include "profile_entry.h"
#include "tensor.h"

namespace phx {

// Copies the caller's parameter struct (or the defaults, when user_params is null) into
// params. input_rank is the rank of the first input (the default transpose reverses its
// dimensions). Returns the pointer to pass to the plugin: into params, or null for ops
// without parameters. Throws INVALID_ARGUMENT for a bad struct_size or enum value.
const void* normalize_params(phx_op_id op, const void* user_params, uint32_t input_rank,
                             OpParams& params);

// An op without its tensors: its parameters and the dtypes of its inputs and outputs.
// This is what decides whether a device runs an op (phx_device_supports_op); the shapes
// only decide whether the op is well formed.
struct OpVariant {
  phx_op_id op = PHX_OP_INVALID;
  const void* params = nullptr;         // normalized (normalize_params)
  phx_dtype inputs[kMaxOpInputs] = {};  // PHX_DTYPE_INVALID: an absent optional input
  size_t input_count = 0;
  phx_dtype outputs[kMaxOpOutputs] = {};
  size_t output_count = 0;
};

OpVariant variant_of(phx_op_id op, const void* params, const Tensor* const* inputs,
                     size_t input_count, const Tensor* const* outputs, size_t output_count);

// Checks the variant against the op's rules that do not depend on shapes: the counts,
// the required inputs, the parameters and the dtypes. Throws INVALID_ARGUMENT naming the
// op and the rule.
void check_variant(const OpVariant& variant);

// "qmatmul (u8, i8, f32, none, f32 -> f32)", for messages.
std::string variant_text(const OpVariant& variant);

// An operand as the shape rules see it: a tensor's dtype and shape, or a graph value's.
struct Operand {
  phx_dtype dtype = PHX_DTYPE_INVALID;
  uint32_t rank = 0;
  int64_t shape[PHX_MAX_RANK] = {};
};
using Shape = std::vector<int64_t>;

Operand operand_of(const Tensor& tensor);
uint64_t element_count(const Operand& operand);

// The shapes of the op's outputs for inputs of these shapes (in may hold null for absent
// optional inputs; out has out_count entries). The dtypes are check_variant's. Throws
// INVALID_ARGUMENT naming the op and the rule the shapes break.
void infer_output_shapes(phx_op_id op, const void* params, const Operand* const* in,
                         size_t in_count, Shape* out, size_t out_count);

// The output dtypes the op's rules imply for these input dtypes (PHX_DTYPE_INVALID for
// an absent optional input); PHX_DTYPE_INVALID where the caller must choose: cast's
// output, quantize's, a requantized qmatmul's or qconv2d's, dynamic_quantize's first.
void default_output_dtypes(phx_op_id op, const phx_dtype* in, size_t in_count, phx_dtype* out,
                           size_t out_count);

// Checks the op's tensors against its rules (check_variant, then the shapes). inputs may hold null
// for absent optional inputs; outputs may not. Throws INVALID_ARGUMENT naming the op and the
// shapes.
void check_op(phx_op_id op, const void* params, const Tensor* const* inputs, size_t input_count,
              const Tensor* const* outputs, size_t output_count);

// Gives record its signature: the operands' shapes, or their text when they have more
// dimensions than OperandShapes holds. inputs may hold null for absent optional inputs.
void describe_operands(ProfileEntry& record, const Tensor* const* inputs, size_t input_count,
                       const Tensor* const* outputs, size_t output_count);
// Appends record's signature as text: "f32[64x32], f32[32x16] -> f32[64x16]".
void append_signature(std::string& out, const ProfileEntry& record);

}  // namespace phx
