#include "profiles.h"

#include <phx/op_table.h>

namespace phx::npu_sim {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

constexpr uint32_t bit(phx_dtype d) { return PHX_DTYPE_BIT(d); }
constexpr uint32_t kI8 = bit(PHX_DTYPE_I8), kU8 = bit(PHX_DTYPE_U8), kI16 = bit(PHX_DTYPE_I16);
constexpr uint32_t kI32 = bit(PHX_DTYPE_I32), kF32 = bit(PHX_DTYPE_F32), kF16 = bit(PHX_DTYPE_F16);

// Every profile runs a model's float layers in f16, as phone NPUs (Hexagon HTP, Apple's
// Neural Engine) and inference accelerators do: the MAC-array ops (matmul, conv2d,
// conv_transpose2d, attention as its two products) at the f16 MAC rate, the rest on the
// vector unit. Data movement (transpose, cast, and the layout ops reshape .. pad) takes
// every dtype the profile holds; max_pool, as reduce_max, the integer widths the profile
// computes in and f16; integer arithmetic follows the op rules (wrap-around), on the
// integer widths the profile computes in.
//
// The elementwise, comparison, reduction and norm ops of API 0.3 (sigmoid ..
// instance_norm) run on the vector unit, as HVX, the Neural Engine's activation units and
// the Edge TPU's activation functions run them:
// - float math in f16 only: the transcendental functions (sigmoid, tanh, exp, log, erf,
//   softplus, elu, selu, pow), sqrt, reciprocal, floor, ceil, leaky_relu, prelu,
//   hard_sigmoid, hard_swish, sin, cos, round, reduce_mean, log_softmax, batch_norm and
//   instance_norm have no integer form in the op rules;
// - the ops that are exact on integers (neg, abs, sign, clip, max, min, the comparisons,
//   reduce_min, argmax, and reduce_prod, which wraps as mul and reduce_sum do) on the
//   integer widths the profile computes in, and f16. Not u8 or i32: no other integer op
//   of the profiles computes in them (u8 is a quantized tensor's storage for the
//   products, i32 their accumulator);
// - the comparisons give u8 (0 or 1), argmax i32 indices, both held everywhere;
// - where (a select by a u8 condition) and not on u8, the booleans: where's dtype is its
//   condition's, and its a and b may be any dtype the profile holds, as the layout ops
//   move them.
constexpr uint32_t kMobileHeld = kF32 | kF16 | kI32 | kI8 | kU8;
constexpr uint32_t kWideHeld = kMobileHeld | kI16;

// 8x8 integer inference and the f16 float path: the int8 and fp16 paths of a phone's NPU.
constexpr OpDtypes kMobileOps[] = {
    {PHX_OP_QUANTIZE, kF32},
    {PHX_OP_DEQUANTIZE, kI8 | kU8 | kI32},
    {PHX_OP_QMATMUL, kI8 | kU8},
    {PHX_OP_QCONV2D, kI8 | kU8},
    {PHX_OP_RELU, kI8 | kF16},
    {PHX_OP_ADD, kI8 | kF16},
    {PHX_OP_SUB, kI8 | kF16},
    {PHX_OP_MUL, kI8 | kF16},
    {PHX_OP_DIV, kF16},
    {PHX_OP_MATMUL, kF16},
    {PHX_OP_CONV2D, kF16},
    {PHX_OP_GELU, kF16},
    {PHX_OP_SILU, kF16},
    {PHX_OP_SOFTMAX, kF16},
    {PHX_OP_LAYER_NORM, kF16},
    {PHX_OP_RMS_NORM, kF16},
    {PHX_OP_ATTENTION, kF16},
    {PHX_OP_ROPE, kF16},
    {PHX_OP_REDUCE_SUM, kI8 | kF16},
    {PHX_OP_REDUCE_MAX, kI8 | kF16},
    {PHX_OP_TRANSPOSE, kMobileHeld},
    {PHX_OP_CAST, kMobileHeld},
    {PHX_OP_RESHAPE, kMobileHeld},
    {PHX_OP_CONCAT, kMobileHeld},
    {PHX_OP_SLICE, kMobileHeld},
    {PHX_OP_GATHER, kMobileHeld},
    {PHX_OP_EXPAND, kMobileHeld},
    {PHX_OP_TILE, kMobileHeld},
    {PHX_OP_PAD, kMobileHeld},
    {PHX_OP_MAX_POOL, kI8 | kF16},
    {PHX_OP_AVG_POOL, kF16},
    {PHX_OP_CONV_TRANSPOSE2D, kF16},
    {PHX_OP_RESIZE, kF16},
    {PHX_OP_HARD_SIGMOID, kF16},
    {PHX_OP_HARD_SWISH, kF16},
    {PHX_OP_SIN, kF16},
    {PHX_OP_COS, kF16},
    {PHX_OP_ROUND, kF16},
    {PHX_OP_SIGMOID, kF16},
    {PHX_OP_TANH, kF16},
    {PHX_OP_EXP, kF16},
    {PHX_OP_LOG, kF16},
    {PHX_OP_SQRT, kF16},
    {PHX_OP_NEG, kI8 | kF16},
    {PHX_OP_ABS, kI8 | kF16},
    {PHX_OP_ERF, kF16},
    {PHX_OP_FLOOR, kF16},
    {PHX_OP_CEIL, kF16},
    {PHX_OP_RECIPROCAL, kF16},
    {PHX_OP_SIGN, kI8 | kF16},
    {PHX_OP_SOFTPLUS, kF16},
    {PHX_OP_LEAKY_RELU, kF16},
    {PHX_OP_ELU, kF16},
    {PHX_OP_SELU, kF16},
    {PHX_OP_CLIP, kI8 | kF16},
    {PHX_OP_POW, kF16},
    {PHX_OP_MAX, kI8 | kF16},
    {PHX_OP_MIN, kI8 | kF16},
    {PHX_OP_PRELU, kF16},
    {PHX_OP_EQUAL, kI8 | kF16},
    {PHX_OP_LESS, kI8 | kF16},
    {PHX_OP_GREATER, kI8 | kF16},
    {PHX_OP_WHERE, kU8},
    {PHX_OP_NOT, kU8},
    {PHX_OP_REDUCE_MEAN, kF16},
    {PHX_OP_REDUCE_MIN, kI8 | kF16},
    {PHX_OP_REDUCE_PROD, kI8 | kF16},
    {PHX_OP_ARGMAX, kI8 | kF16},
    {PHX_OP_LOG_SOFTMAX, kF16},
    {PHX_OP_BATCH_NORM, kF16},
    {PHX_OP_INSTANCE_NORM, kF16},
};

// The mobile set plus 16x8 (int16 activations), 16-bit integer arithmetic and dynamic
// quantization. The data-center class runs the same set, with more of everything.
constexpr OpDtypes kWideOps[] = {
    {PHX_OP_QUANTIZE, kF32},
    {PHX_OP_DEQUANTIZE, kI8 | kU8 | kI16 | kI32},
    {PHX_OP_QMATMUL, kI8 | kU8 | kI16},
    {PHX_OP_QCONV2D, kI8 | kU8 | kI16},
    {PHX_OP_DYNAMIC_QUANTIZE, kF32},
    {PHX_OP_RELU, kI8 | kI16 | kF16},
    {PHX_OP_ADD, kI8 | kI16 | kF16},
    {PHX_OP_SUB, kI8 | kI16 | kF16},
    {PHX_OP_MUL, kI8 | kI16 | kF16},
    {PHX_OP_DIV, kF16},
    {PHX_OP_MATMUL, kF16},
    {PHX_OP_CONV2D, kF16},
    {PHX_OP_GELU, kF16},
    {PHX_OP_SILU, kF16},
    {PHX_OP_SOFTMAX, kF16},
    {PHX_OP_LAYER_NORM, kF16},
    {PHX_OP_RMS_NORM, kF16},
    {PHX_OP_ATTENTION, kF16},
    {PHX_OP_ROPE, kF16},
    {PHX_OP_REDUCE_SUM, kI8 | kI16 | kF16},
    {PHX_OP_REDUCE_MAX, kI8 | kI16 | kF16},
    {PHX_OP_TRANSPOSE, kWideHeld},
    {PHX_OP_CAST, kWideHeld},
    {PHX_OP_RESHAPE, kWideHeld},
    {PHX_OP_CONCAT, kWideHeld},
    {PHX_OP_SLICE, kWideHeld},
    {PHX_OP_GATHER, kWideHeld},
    {PHX_OP_EXPAND, kWideHeld},
    {PHX_OP_TILE, kWideHeld},
    {PHX_OP_PAD, kWideHeld},
    {PHX_OP_MAX_POOL, kI8 | kI16 | kF16},
    {PHX_OP_AVG_POOL, kF16},
    {PHX_OP_CONV_TRANSPOSE2D, kF16},
    {PHX_OP_RESIZE, kF16},
    {PHX_OP_HARD_SIGMOID, kF16},
    {PHX_OP_HARD_SWISH, kF16},
    {PHX_OP_SIN, kF16},
    {PHX_OP_COS, kF16},
    {PHX_OP_ROUND, kF16},
    {PHX_OP_SIGMOID, kF16},
    {PHX_OP_TANH, kF16},
    {PHX_OP_EXP, kF16},
    {PHX_OP_LOG, kF16},
    {PHX_OP_SQRT, kF16},
    {PHX_OP_NEG, kI8 | kI16 | kF16},
    {PHX_OP_ABS, kI8 | kI16 | kF16},
    {PHX_OP_ERF, kF16},
    {PHX_OP_FLOOR, kF16},
    {PHX_OP_CEIL, kF16},
    {PHX_OP_RECIPROCAL, kF16},
    {PHX_OP_SIGN, kI8 | kI16 | kF16},
    {PHX_OP_SOFTPLUS, kF16},
    {PHX_OP_LEAKY_RELU, kF16},
    {PHX_OP_ELU, kF16},
    {PHX_OP_SELU, kF16},
    {PHX_OP_CLIP, kI8 | kI16 | kF16},
    {PHX_OP_POW, kF16},
    {PHX_OP_MAX, kI8 | kI16 | kF16},
    {PHX_OP_MIN, kI8 | kI16 | kF16},
    {PHX_OP_PRELU, kF16},
    {PHX_OP_EQUAL, kI8 | kI16 | kF16},
    {PHX_OP_LESS, kI8 | kI16 | kF16},
    {PHX_OP_GREATER, kI8 | kI16 | kF16},
    {PHX_OP_WHERE, kU8},
    {PHX_OP_NOT, kU8},
    {PHX_OP_REDUCE_MEAN, kF16},
    {PHX_OP_REDUCE_MIN, kI8 | kI16 | kF16},
    {PHX_OP_REDUCE_PROD, kI8 | kI16 | kF16},
    {PHX_OP_ARGMAX, kI8 | kI16 | kF16},
    {PHX_OP_LOG_SOFTMAX, kF16},
    {PHX_OP_BATCH_NORM, kF16},
    {PHX_OP_INSTANCE_NORM, kF16},
};

template <size_t N>
constexpr size_t count(const OpDtypes (&)[N]) {
  return N;
}

// docs/npu-sim.md, "Profiles", gives the public figures behind each row.
constexpr Profile kProfiles[] = {
    {"mobile", "phone SoC NPU", 4 * kMiB, 2 * kGiB, 51.2, 8192, 0, 4096, 64, 4, 1.0, 2000.0,
     kMobileHeld, kMobileOps, count(kMobileOps),
     "class of phone SoC NPUs (Hexagon, Apple Neural Engine, Google Tensor): 16 int8 TOPS "
     "assumed, f16 at half the int8 MAC rate; LPDDR5-6400 x64 = 51.2 GB/s; 4 MiB SRAM and a "
     "2 GiB carve-out assumed"},
    {"edge", "edge inference accelerator", 8 * kMiB, 1 * kGiB, 12.8, 16384, 8192, 8192, 128, 8, 0.8,
     3000.0, kWideHeld, kWideOps, count(kWideOps),
     "class of Coral Edge TPU / Hailo-8: 26 int8 TOPS (Hailo-8), 8 MiB SRAM (Edge TPU); "
     "16x8 and f16 at half rate assumed; 1 GiB LPDDR4-3200 x32 = 12.8 GB/s"},
    {"datacenter", "data-center inference accelerator", 144 * kMiB, 16 * kGiB, 136.5, 131072, 65536,
     65536, 2048, 16, 1.5, 1000.0, kWideHeld, kWideOps, count(kWideOps),
     "class of Qualcomm Cloud AI 100: ~400 int8 TOPS and ~200 f16 TFLOP/s, 16 cores x 9 MiB "
     "SRAM, 16 GiB LPDDR4x at 136.5 GB/s; MACs per cycle and clock chosen to give its peaks "
     "(assumed)"},
};

}  // namespace

const char* op_name(phx_op_id op) {
  const OpSchema* schema = find_op_schema(op);
  return schema != nullptr ? schema->name : "unknown";
}

const char* dtype_name(phx_dtype dtype) {
  static constexpr const char* kNames[PHX_DTYPE_COUNT] = {"invalid", "f32", "f16", "bf16",
                                                          "i8",      "i16", "i32", "u8"};
  // Compared as an int: phx_dtype's range ends at 7, so clang finds "< 8" always true.
  const int value = dtype;
  return value > PHX_DTYPE_INVALID && value < PHX_DTYPE_COUNT ? kNames[value] : "unknown";
}

const Profile* find_profile(std::string_view name) {
  for (const Profile& p : kProfiles)
    if (name == p.name) return &p;
  return nullptr;
}

const char* known_profiles() { return "mobile, edge, datacenter"; }

uint32_t supported_dtypes(const Profile& profile, phx_op_id op) {
  for (size_t i = 0; i < profile.op_count; ++i)
    if (profile.ops[i].op == op) return profile.ops[i].dtypes;
  return 0;
}

std::string describe_ops(const Profile& profile) {
  std::string text;
  for (size_t i = 0; i < profile.op_count; ++i) {
    const OpDtypes& entry = profile.ops[i];
    text += (text.empty() ? "" : " ") + std::string(op_name(entry.op)) + "(";
    bool first = true;
    for (int d = 1; d < PHX_DTYPE_COUNT; ++d) {
      if ((entry.dtypes & PHX_DTYPE_BIT(d)) == 0) continue;
      text += (first ? "" : ",") + std::string(dtype_name(static_cast<phx_dtype>(d)));
      first = false;
    }
    text += ")";
  }
  return text;
}

}  // namespace phx::npu_sim
