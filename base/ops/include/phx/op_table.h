// The op table: one entry per op saying what it is (name, operands, parameters, the dtypes
// it is defined for, which dtype and shape rules hold, a line for the docs). The core's
// rules (core/runtime/op_rules.cpp), phx_op_name, phx_op_info_get, the generated op list
// in docs/ops.md and the shipped plugins' registries all read it, so a new op is an entry
// here plus a kernel per device.
#pragma once

#include <phynexus/phynexus.h>

#include <cstddef>
#include <cstdint>

namespace phx {

constexpr size_t kMaxOpInputs = PHX_MAX_OP_INPUTS;
constexpr size_t kMaxOpOutputs = PHX_MAX_OP_OUTPUTS;

constexpr uint32_t kFloatDtypes =
    PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_F16) | PHX_DTYPE_BIT(PHX_DTYPE_BF16);
constexpr uint32_t kSignedIntDtypes =
    PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_I16) | PHX_DTYPE_BIT(PHX_DTYPE_I32);
constexpr uint32_t kAllDtypes = kFloatDtypes | kSignedIntDtypes | PHX_DTYPE_BIT(PHX_DTYPE_U8);
// What the quantized ops store their values in.
constexpr uint32_t kQuantizedDtypes =
    PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_U8) | PHX_DTYPE_BIT(PHX_DTYPE_I16);

// The parameter struct an op takes (none: params is ignored and null reaches plugins).
enum class ParamsKind {
  none,
  matmul,
  softmax,
  norm,
  transpose,
  reduce,
  conv2d,
  attention,
  rope,
  quantize,
  elementwise,
  argmax,
  reshape,  // reshape and expand: the target shape
  axis,     // concat and gather
  slice,
  tile,
  pad,
  pool,
  conv_transpose2d,
  resize,
  top_k,
};

// How the dtypes of an op's other operands follow from its first input's (op_rules.cpp).
enum class DtypeRule {
  same,               // every operand present has the first input's dtype
  matmul,             // b as a; the output a's or f32; the bias the output's
  cast,               // the output any dtype
  rope,               // cos and sin f32; the output x's
  quantize,           // scale f32, zero point i32, the output a quantized dtype
  dequantize,         // scale f32, zero point i32, the output f32
  quantized_product,  // qmatmul, qconv2d: i8 weights, f32 scales, i32 zero points and bias
  dynamic_quantize,   // outputs: a quantized dtype, its f32 scale and i32 zero point
  compare,            // b as a; the output u8 (0 or 1)
  where,              // cond u8; a any of kAllDtypes, b and the output a's
  index,              // the output i32 (argmax's indices)
  gather,             // indices i32; the output data's
  top_k,              // values x's, indices i32
};

// Which shapes an op accepts and what its output shape is (op_rules.cpp).
enum class ShapeRule {
  same,  // the output has the first input's shape
  broadcast,
  matmul,
  softmax,
  norm,
  transpose,
  reduce,
  conv2d,
  attention,
  rope,
  quantize,
  qmatmul,
  qconv2d,
  dynamic_quantize,
  broadcast_to_first,  // the second input broadcasts to the first's shape, the output's
  where,               // the three inputs broadcast together
  argmax,
  batch_norm,
  instance_norm,
  reshape,
  concat,
  slice,
  gather,
  expand,
  tile,
  pad,
  pool,  // max and average pooling
  conv_transpose2d,
  resize,
  top_k,  // values and indices: x's shape with k along the axis
};

struct OpSchema {
  phx_op_id op = PHX_OP_INVALID;
  const char* name = nullptr;
  const char* inputs[kMaxOpInputs] = {};  // names, null past the last
  uint32_t optional_inputs = 0;           // bit i: input i may be null (or left off the end)
  const char* outputs[kMaxOpOutputs] = {};
  ParamsKind params = ParamsKind::none;
  // The op has no default parameters: null params are refused (reshape's target shape,
  // resize's output shape).
  bool params_required = false;
  uint32_t dtypes = 0;  // PHX_DTYPE_BIT of each first-input dtype the op is defined for
  DtypeRule dtype_rule = DtypeRule::same;
  ShapeRule shape_rule = ShapeRule::same;
  const char* summary = nullptr;  // one line: what the op computes
  // What null params stand for where the op's defaults are not its struct's (leaky_relu's
  // alpha); null: the struct's (op_params.h, default_params).
  const void* default_params = nullptr;

  size_t input_count() const;      // the most inputs it takes
  size_t min_input_count() const;  // through the last required one
  size_t output_count() const;
  bool input_required(size_t i) const { return !(optional_inputs >> i & 1u); }
};

// The op's entry; null for PHX_OP_INVALID and values outside phx_op_id.
const OpSchema* find_op_schema(int op);

// Whether the op reads or writes quantized values with their scales and zero points
// (quantize, dequantize, qmatmul, qconv2d, dynamic_quantize): a device without a quantized
// model declines them by this rather than by a list of its own.
bool is_quantized_op(const OpSchema& schema);

// "phx_matmul_params", "" for ParamsKind::none (op_params.h describes the struct whole).
const char* params_struct_name(ParamsKind params);

// sizeof that struct; 0 for ParamsKind::none.
size_t params_struct_size(ParamsKind params);

// Any op's parameter struct, in this library's layout (defaults filled in): what the core
// keeps of a node's parameters, and a plugin of what the host hands it.
union OpParams {
  phx_matmul_params matmul;
  phx_softmax_params softmax;
  phx_norm_params norm;
  phx_transpose_params transpose;
  phx_reduce_params reduce;
  phx_conv2d_params conv2d;
  phx_attention_params attention;
  phx_rope_params rope;
  phx_quantize_params quantize;
  phx_elementwise_params elementwise;
  phx_argmax_params argmax;
  phx_reshape_params reshape;
  phx_axis_params axis;
  phx_slice_params slice;
  phx_tile_params tile;
  phx_pad_params pad;
  phx_pool_params pool;
  phx_conv_transpose2d_params conv_transpose2d;
  phx_resize_params resize;
  phx_top_k_params top_k;
};

// Whether a table indexed by op (an entry per op, each with a member op) holds every op
// in phx_op_id order, for a static_assert beside the table.
template <typename Entry, size_t N>
constexpr bool covers_every_op_in_order(const Entry (&entries)[N]) {
  if (N != PHX_OP_COUNT - 1) return false;
  for (size_t i = 0; i < N; ++i)
    if (entries[i].op != static_cast<phx_op_id>(i + 1)) return false;
  return true;
}

}  // namespace phx
