#include <phx/op_params.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace phx {
namespace {

template <class Member>
constexpr size_t entries_of() {
  return std::is_array_v<Member> ? std::extent_v<Member> : 1;
}

constexpr size_t type_size(phx_param_type type) { return type == PHX_PARAM_INT64 ? 8 : 4; }

// A member's description; a type whose size is not the member's fails to compile (a
// throw is not a constant expression).
constexpr phx_param_field field(const char* name, phx_param_type type, size_t offset, size_t count,
                                size_t bytes, std::span<const char* const> enum_names = {}) {
  if (bytes != count * type_size(type)) throw "the type's size is not the member's";
  if ((type == PHX_PARAM_ENUM) != !enum_names.empty()) throw "enum names go with ENUM only";
  return {name,
          type,
          offset,
          count,
          enum_names.empty() ? nullptr : enum_names.data(),
          enum_names.size()};
}

#define PHX_FIELD(Struct, member, type)                                                  \
  field(#member, type, offsetof(Struct, member), entries_of<decltype(Struct::member)>(), \
        sizeof(Struct::member))
#define PHX_ENUM_FIELD(Struct, member, names) \
  field(#member, PHX_PARAM_ENUM, offsetof(Struct, member), 1, sizeof(Struct::member), names)

// Whether fields describe every member of Struct after struct_size, in order: each starts
// where the one before ends (or at the next multiple of its alignment), and the last
// ends where the struct does, but for its tail padding.
template <class Struct, size_t N>
constexpr bool describes_whole(const phx_param_field (&fields)[N]) {
  size_t at = sizeof(size_t);
  for (const phx_param_field& f : fields) {
    const size_t align = type_size(f.type);
    at = (at + align - 1) / align * align;
    if (f.offset != at) return false;
    at += f.count * align;
  }
  return (at + alignof(Struct) - 1) / alignof(Struct) * alignof(Struct) == sizeof(Struct);
}

constexpr const char* kActivations[] = {"none", "relu", "gelu", "silu"};
constexpr const char* kLayouts[] = {"nchw", "nhwc"};
constexpr const char* kMasks[] = {"none", "causal", "sliding_window"};
constexpr const char* kPadModes[] = {"constant", "reflect", "edge"};
constexpr const char* kResizeModes[] = {"nearest", "linear"};
constexpr const char* kResizeCoordinates[] = {"half_pixel", "asymmetric", "align_corners",
                                              "pytorch_half_pixel"};
constexpr const char* kResizeNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                          "ceil"};
static_assert(PHX_ACTIVATION_SILU + 1 == std::size(kActivations));
static_assert(PHX_LAYOUT_NHWC + 1 == std::size(kLayouts));
static_assert(PHX_ATTENTION_MASK_SLIDING_WINDOW + 1 == std::size(kMasks));
static_assert(PHX_PAD_EDGE + 1 == std::size(kPadModes));
static_assert(PHX_RESIZE_LINEAR + 1 == std::size(kResizeModes));
static_assert(PHX_RESIZE_PYTORCH_HALF_PIXEL + 1 == std::size(kResizeCoordinates));
static_assert(PHX_RESIZE_CEIL + 1 == std::size(kResizeNearest));

using M = phx_matmul_params;
constexpr phx_param_field kMatmul[] = {PHX_FIELD(M, transpose_a, PHX_PARAM_BOOL),
                                       PHX_FIELD(M, transpose_b, PHX_PARAM_BOOL),
                                       PHX_ENUM_FIELD(M, activation, kActivations)};
constexpr phx_param_field kSoftmax[] = {PHX_FIELD(phx_softmax_params, axis, PHX_PARAM_INT32)};
constexpr phx_param_field kNorm[] = {PHX_FIELD(phx_norm_params, epsilon, PHX_PARAM_FLOAT32)};
constexpr phx_param_field kTranspose[] = {
    PHX_FIELD(phx_transpose_params, perm, PHX_PARAM_DIMENSION)};
constexpr phx_param_field kReduce[] = {PHX_FIELD(phx_reduce_params, axes_mask, PHX_PARAM_AXES),
                                       PHX_FIELD(phx_reduce_params, keep_dims, PHX_PARAM_BOOL)};
using C = phx_conv2d_params;
constexpr phx_param_field kConv2d[] = {
    PHX_ENUM_FIELD(C, layout, kLayouts),     PHX_FIELD(C, stride, PHX_PARAM_UINT32),
    PHX_FIELD(C, padding, PHX_PARAM_UINT32), PHX_FIELD(C, dilation, PHX_PARAM_UINT32),
    PHX_FIELD(C, groups, PHX_PARAM_UINT32),  PHX_ENUM_FIELD(C, activation, kActivations)};
using A = phx_attention_params;
constexpr phx_param_field kAttention[] = {PHX_FIELD(A, scale, PHX_PARAM_FLOAT32),
                                          PHX_ENUM_FIELD(A, mask, kMasks),
                                          PHX_FIELD(A, window, PHX_PARAM_UINT32)};
constexpr phx_param_field kRope[] = {PHX_FIELD(phx_rope_params, interleaved, PHX_PARAM_BOOL)};
constexpr phx_param_field kQuantize[] = {PHX_FIELD(phx_quantize_params, axis, PHX_PARAM_INT32)};
using E = phx_elementwise_params;
constexpr phx_param_field kElementwise[] = {PHX_FIELD(E, alpha, PHX_PARAM_FLOAT32),
                                            PHX_FIELD(E, beta, PHX_PARAM_FLOAT32)};
using G = phx_argmax_params;
constexpr phx_param_field kArgmax[] = {PHX_FIELD(G, axis, PHX_PARAM_INT32),
                                       PHX_FIELD(G, keep_dims, PHX_PARAM_BOOL),
                                       PHX_FIELD(G, select_last_index, PHX_PARAM_BOOL)};
constexpr phx_param_field kReshape[] = {PHX_FIELD(phx_reshape_params, rank, PHX_PARAM_LENGTH),
                                        PHX_FIELD(phx_reshape_params, shape, PHX_PARAM_INT64)};
constexpr phx_param_field kAxis[] = {PHX_FIELD(phx_axis_params, axis, PHX_PARAM_INT32)};
using S = phx_slice_params;
constexpr phx_param_field kSlice[] = {PHX_FIELD(S, starts, PHX_PARAM_INT64),
                                      PHX_FIELD(S, ends, PHX_PARAM_INT64),
                                      PHX_FIELD(S, steps, PHX_PARAM_INT64)};
constexpr phx_param_field kTile[] = {PHX_FIELD(phx_tile_params, repeats, PHX_PARAM_UINT32)};
using P = phx_pad_params;
constexpr phx_param_field kPad[] = {
    PHX_ENUM_FIELD(P, mode, kPadModes), PHX_FIELD(P, value, PHX_PARAM_FLOAT32),
    PHX_FIELD(P, begin, PHX_PARAM_UINT32), PHX_FIELD(P, end, PHX_PARAM_UINT32)};
using O = phx_pool_params;
constexpr phx_param_field kPool[] = {
    PHX_FIELD(O, kernel, PHX_PARAM_UINT32),         PHX_FIELD(O, stride, PHX_PARAM_UINT32),
    PHX_FIELD(O, pad_begin, PHX_PARAM_UINT32),      PHX_FIELD(O, pad_end, PHX_PARAM_UINT32),
    PHX_FIELD(O, dilation, PHX_PARAM_UINT32),       PHX_FIELD(O, ceil_mode, PHX_PARAM_BOOL),
    PHX_FIELD(O, count_include_pad, PHX_PARAM_BOOL)};
using T = phx_conv_transpose2d_params;
constexpr phx_param_field kConvTranspose2d[] = {
    PHX_FIELD(T, stride, PHX_PARAM_UINT32), PHX_FIELD(T, padding, PHX_PARAM_UINT32),
    PHX_FIELD(T, output_padding, PHX_PARAM_UINT32), PHX_FIELD(T, dilation, PHX_PARAM_UINT32),
    PHX_FIELD(T, groups, PHX_PARAM_UINT32)};
using R = phx_resize_params;
constexpr phx_param_field kResize[] = {
    PHX_ENUM_FIELD(R, mode, kResizeModes),      PHX_ENUM_FIELD(R, coordinates, kResizeCoordinates),
    PHX_ENUM_FIELD(R, nearest, kResizeNearest), PHX_FIELD(R, rank, PHX_PARAM_LENGTH),
    PHX_FIELD(R, shape, PHX_PARAM_INT64),       PHX_FIELD(R, scales, PHX_PARAM_FLOAT32)};

using K = phx_top_k_params;
constexpr phx_param_field kTopK[] = {PHX_FIELD(K, axis, PHX_PARAM_INT32),
                                     PHX_FIELD(K, k, PHX_PARAM_UINT32),
                                     PHX_FIELD(K, largest, PHX_PARAM_BOOL)};

#undef PHX_FIELD
#undef PHX_ENUM_FIELD

// The structs' defaults, as the header's INIT macros give them.
constexpr phx_matmul_params kMatmulDefaults PHX_MATMUL_PARAMS_INIT;
constexpr phx_softmax_params kSoftmaxDefaults PHX_SOFTMAX_PARAMS_INIT;
constexpr phx_norm_params kNormDefaults PHX_NORM_PARAMS_INIT;
constexpr phx_reduce_params kReduceDefaults PHX_REDUCE_PARAMS_INIT;
constexpr phx_conv2d_params kConv2dDefaults PHX_CONV2D_PARAMS_INIT;
constexpr phx_attention_params kAttentionDefaults PHX_ATTENTION_PARAMS_INIT;
constexpr phx_rope_params kRopeDefaults PHX_ROPE_PARAMS_INIT;
constexpr phx_quantize_params kQuantizeDefaults PHX_QUANTIZE_PARAMS_INIT;
constexpr phx_elementwise_params kElementwiseDefaults PHX_ELEMENTWISE_PARAMS_INIT(0.0f, 0.0f);
constexpr phx_argmax_params kArgmaxDefaults PHX_ARGMAX_PARAMS_INIT;
constexpr phx_axis_params kAxisDefaults PHX_AXIS_PARAMS_INIT;
constexpr phx_slice_params kSliceDefaults PHX_SLICE_PARAMS_INIT;
constexpr phx_tile_params kTileDefaults PHX_TILE_PARAMS_INIT;
constexpr phx_pad_params kPadDefaults PHX_PAD_PARAMS_INIT;
constexpr phx_pool_params kPoolDefaults PHX_POOL_PARAMS_INIT;
constexpr phx_conv_transpose2d_params kConvTranspose2dDefaults PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
constexpr phx_top_k_params kTopKDefaults PHX_TOP_K_PARAMS_INIT;  // k 0: refused

// A description entry, its fields checked against the struct.
template <class Struct, size_t N>
constexpr ParamsDescription describe(const char* name, const phx_param_field (&fields)[N],
                                     const Struct* defaults) {
  if (!describes_whole<Struct>(fields)) throw "the fields do not cover the struct";
  return {name, sizeof(Struct), fields, defaults};
}

// Indexed by ParamsKind. Transpose has no default struct (x's dimensions reversed),
// reshape and resize none at all (their ops refuse null).
constexpr ParamsDescription kDescriptions[] = {
    {},
    describe("phx_matmul_params", kMatmul, &kMatmulDefaults),
    describe("phx_softmax_params", kSoftmax, &kSoftmaxDefaults),
    describe("phx_norm_params", kNorm, &kNormDefaults),
    describe<phx_transpose_params>("phx_transpose_params", kTranspose, nullptr),
    describe("phx_reduce_params", kReduce, &kReduceDefaults),
    describe("phx_conv2d_params", kConv2d, &kConv2dDefaults),
    describe("phx_attention_params", kAttention, &kAttentionDefaults),
    describe("phx_rope_params", kRope, &kRopeDefaults),
    describe("phx_quantize_params", kQuantize, &kQuantizeDefaults),
    describe("phx_elementwise_params", kElementwise, &kElementwiseDefaults),
    describe("phx_argmax_params", kArgmax, &kArgmaxDefaults),
    describe<phx_reshape_params>("phx_reshape_params", kReshape, nullptr),
    describe("phx_axis_params", kAxis, &kAxisDefaults),
    describe("phx_slice_params", kSlice, &kSliceDefaults),
    describe("phx_tile_params", kTile, &kTileDefaults),
    describe("phx_pad_params", kPad, &kPadDefaults),
    describe("phx_pool_params", kPool, &kPoolDefaults),
    describe("phx_conv_transpose2d_params", kConvTranspose2d, &kConvTranspose2dDefaults),
    describe<phx_resize_params>("phx_resize_params", kResize, nullptr),
    describe("phx_top_k_params", kTopK, &kTopKDefaults),
};
static_assert(std::size(kDescriptions) == size_t(ParamsKind::top_k) + 1,
              "one description per ParamsKind, in its order");

}  // namespace

const ParamsDescription& params_description(ParamsKind params) {
  return kDescriptions[size_t(params)];
}

const char* params_struct_name(ParamsKind params) { return params_description(params).struct_name; }

size_t params_struct_size(ParamsKind params) { return params_description(params).size; }

size_t param_type_size(phx_param_type type) { return type_size(type); }

const void* default_params(const OpSchema& schema) {
  if (schema.params_required) return nullptr;
  return schema.default_params != nullptr ? schema.default_params
                                          : params_description(schema.params).defaults;
}

void fill_default_params(const OpSchema& schema, uint32_t input_rank, OpParams& params) {
  std::memset(&params, 0, sizeof params);
  const ParamsDescription& description = params_description(schema.params);
  if (const void* defaults = default_params(schema))
    std::memcpy(&params, defaults, description.size);
  if (schema.params == ParamsKind::transpose) {  // NumPy's default: the dimensions reversed
    params.transpose.struct_size = sizeof params.transpose;
    for (uint32_t i = 0; i < input_rank && i < PHX_MAX_RANK; ++i)
      params.transpose.perm[i] = input_rank - 1 - i;
  }
}

}  // namespace phx
