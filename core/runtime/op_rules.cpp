#include "op_rules.h"

#include <phx/abi_structs.h>
#include <phx/op_params.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "errors.h"
#include "op_rules_layout.h"

namespace phx {

Shape shape_of(const Operand& t) { return Shape(t.shape, t.shape + t.rank); }

std::string text(const Shape& shape) {
  if (shape.empty()) return "a scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

void append_text(std::string& out, const Operand& t) {
  out += phx_dtype_name(t.dtype);
  out += '[';
  if (t.rank == 0) out += "a scalar";
  for (uint32_t d = 0; d < t.rank; ++d) {
    if (d != 0) out += 'x';
    char digits[24];
    out.append(digits, std::to_chars(digits, digits + sizeof digits, t.shape[d]).ptr);
  }
  out += ']';
}

std::string text(const Operand& t) {
  std::string s;
  append_text(s, t);
  return s;
}

[[noreturn]] void broken(phx_op_id op, const std::string& rule) {
  fail(PHX_STATUS_INVALID_ARGUMENT, std::string(phx_op_name(op)) + ": " + rule);
}

bool broadcast(const Shape& a, const Shape& b, Shape& out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

namespace {

// Whether from broadcasts to exactly to (from's dims are 1 or equal, right-aligned).
bool broadcasts_to(const Shape& from, const Shape& to) {
  Shape joined;
  return from.size() <= to.size() && broadcast(from, to, joined) && joined == to;
}

std::string dtype_list(uint32_t mask) {
  std::string s;
  for (int d = 1; d < PHX_DTYPE_COUNT; ++d) {
    if (!(mask & (1u << d))) continue;
    if (!s.empty()) s += ", ";
    s += phx_dtype_name(static_cast<phx_dtype>(d));
  }
  return s;
}

void same_dtype(phx_op_id op, phx_dtype a, phx_dtype b, const char* what) {
  if (a != b)
    broken(op, std::string(what) + " must have the same dtype, got " + phx_dtype_name(a) + " and " +
                   phx_dtype_name(b));
}

// An optional input's dtype when it is present.
void same_dtype_if_present(phx_op_id op, phx_dtype a, phx_dtype b, const char* what) {
  if (b != PHX_DTYPE_INVALID) same_dtype(op, a, b, what);
}

void dtype_is(phx_op_id op, phx_dtype got, phx_dtype want, const char* name) {
  if (got != want)
    broken(op,
           std::string(name) + " must be " + phx_dtype_name(want) + ", got " + phx_dtype_name(got));
}

void dtype_is_if_present(phx_op_id op, phx_dtype got, phx_dtype want, const char* name) {
  if (got != PHX_DTYPE_INVALID) dtype_is(op, got, want, name);
}

void dtype_in(phx_op_id op, phx_dtype got, uint32_t mask, const char* name) {
  if (!(mask & PHX_DTYPE_BIT(got)))
    broken(op, std::string(name) + " must be " + dtype_list(mask) + ", got " + phx_dtype_name(got));
}

bool relu_or_none(const phx_activation& activation) {
  const int value = enum_value(activation);
  return value == PHX_ACTIVATION_NONE || value == PHX_ACTIVATION_RELU;
}

// What qmatmul and qconv2d take of their parameter structs.
void check_quantized_product_params(phx_op_id op, const void* params) {
  const phx_activation& activation =
      op == PHX_OP_QMATMUL ? static_cast<const phx_matmul_params*>(params)->activation
                           : static_cast<const phx_conv2d_params*>(params)->activation;
  if (op == PHX_OP_QMATMUL && static_cast<const phx_matmul_params*>(params)->transpose_a)
    broken(op, "a cannot be transposed");
  if (!relu_or_none(activation))
    broken(op, "takes no activation but relu, got " + std::to_string(enum_value(activation)));
}

// The variant of qmatmul or qconv2d: the parameters above, then the dtypes of a (or x),
// b (or the weight), their scales and zero points, the bias, and the output with y_scale
// and y_zero_point when it is requantized.
void check_quantized_product_variant(const OpVariant& v) {
  const phx_op_id op = v.op;
  check_quantized_product_params(op, v.params);
  auto in = [&](size_t i) { return i < v.input_count ? v.inputs[i] : PHX_DTYPE_INVALID; };
  const phx_dtype out = v.outputs[0];
  dtype_is(op, in(1), PHX_DTYPE_I8, "the weights (b)");
  dtype_is(op, in(2), PHX_DTYPE_F32, "a_scale");
  dtype_is_if_present(op, in(3), PHX_DTYPE_I32, "a_zero_point");
  dtype_is(op, in(4), PHX_DTYPE_F32, "b_scale");
  dtype_is_if_present(op, in(5), PHX_DTYPE_I32, "b_zero_point");
  dtype_is_if_present(op, in(6), PHX_DTYPE_I32, "bias");
  const bool requantized = (kQuantizedDtypes & PHX_DTYPE_BIT(out)) != 0;
  if (!requantized && out != PHX_DTYPE_I32 && out != PHX_DTYPE_F32)
    broken(op,
           std::string("the output must be i8, u8, i16, i32 or f32, got ") + phx_dtype_name(out));
  if (out == PHX_DTYPE_I32 && v.inputs[0] == PHX_DTYPE_I16)
    broken(op, "an i32 output needs 8-bit inputs: the 16x8 accumulator is 64-bit");
  if (requantized && in(7) == PHX_DTYPE_INVALID)
    broken(op, "a " + std::string(phx_dtype_name(out)) + " output needs y_scale");
  if (!requantized && (in(7) != PHX_DTYPE_INVALID || in(8) != PHX_DTYPE_INVALID))
    broken(op, std::string("y_scale and y_zero_point are for an i8, u8 or i16 output, not ") +
                   phx_dtype_name(out));
  dtype_is_if_present(op, in(7), PHX_DTYPE_F32, "y_scale");
  dtype_is_if_present(op, in(8), PHX_DTYPE_I32, "y_zero_point");
}

// Every operand present, past the first input, has the first input's dtype; messages name
// the operands as the op table does.
void check_same_dtypes(const OpSchema& schema, const OpVariant& v) {
  const phx_dtype x = v.inputs[0];
  auto check = [&](phx_dtype got, const char* name) {
    if (got != PHX_DTYPE_INVALID && got != x)
      broken(v.op, std::string(name) + " must have " + schema.inputs[0] + "'s dtype, " +
                       phx_dtype_name(x) + ", got " + phx_dtype_name(got));
  };
  for (size_t i = 1; i < v.input_count; ++i) check(v.inputs[i], schema.inputs[i]);
  for (size_t i = 0; i < v.output_count; ++i) check(v.outputs[i], schema.outputs[i]);
}

// The dtype rules between an op's inputs and outputs.
void check_dtypes(const OpSchema& schema, const OpVariant& v) {
  const phx_op_id op = v.op;
  auto in = [&](size_t i) { return i < v.input_count ? v.inputs[i] : PHX_DTYPE_INVALID; };
  const phx_dtype x = v.inputs[0], y = v.outputs[0];
  if (!(schema.dtypes & PHX_DTYPE_BIT(x)))
    broken(op, "is defined for " + dtype_list(schema.dtypes) + "; got " + phx_dtype_name(x));
  switch (schema.dtype_rule) {
    case DtypeRule::same:
      check_same_dtypes(schema, v);
      break;
    case DtypeRule::matmul:
      same_dtype(op, x, in(1), "a and b");
      if (y != x && y != PHX_DTYPE_F32)
        broken(op, std::string("the output dtype must be a's or f32, got ") + phx_dtype_name(y));
      same_dtype_if_present(op, y, in(2), "output and bias");
      break;
    case DtypeRule::cast:
      break;
    case DtypeRule::rope:
      dtype_is(op, in(1), PHX_DTYPE_F32, "cos");
      dtype_is(op, in(2), PHX_DTYPE_F32, "sin");
      same_dtype(op, x, y, "x and output");
      break;
    case DtypeRule::quantize:
    case DtypeRule::dequantize:
      dtype_is(op, in(1), PHX_DTYPE_F32, "scale");
      dtype_is_if_present(op, in(2), PHX_DTYPE_I32, "the zero point");
      dtype_in(op, y,
               schema.dtype_rule == DtypeRule::quantize ? kQuantizedDtypes
                                                        : PHX_DTYPE_BIT(PHX_DTYPE_F32),
               "the output");
      break;
    case DtypeRule::quantized_product:
      check_quantized_product_variant(v);
      break;
    case DtypeRule::dynamic_quantize:
      dtype_in(op, y, kQuantizedDtypes, "y");
      dtype_is(op, v.outputs[1], PHX_DTYPE_F32, "the scale output");
      dtype_is(op, v.outputs[2], PHX_DTYPE_I32, "the zero point output");
      break;
    case DtypeRule::compare:
      same_dtype(op, x, in(1), "a and b");
      dtype_is(op, y, PHX_DTYPE_U8, "the output");
      break;
    case DtypeRule::where:
      dtype_in(op, in(1), kAllDtypes, "a");
      same_dtype(op, in(1), in(2), "a and b");
      same_dtype(op, in(1), y, "a and the output");
      break;
    case DtypeRule::index:
      dtype_is(op, y, PHX_DTYPE_I32, "the output");
      break;
    case DtypeRule::gather:
      dtype_is(op, in(1), PHX_DTYPE_I32, "indices");
      same_dtype(op, x, y, "data and output");
      break;
    case DtypeRule::top_k:
      same_dtype(op, x, y, "x and values");
      dtype_is(op, v.outputs[1], PHX_DTYPE_I32, "the indices output");
      break;
  }
  if (schema.shape_rule == ShapeRule::concat) check_no_gaps(schema, v);
}

// What the rules say of a parameter struct's values, whatever the shapes (an enum member
// outside its enum is refused earlier, by normalize_params).
void check_params(phx_op_id op, ParamsKind kind, const void* params) {
  switch (kind) {
    case ParamsKind::attention: {
      auto& p = *static_cast<const phx_attention_params*>(params);
      if (p.mask == PHX_ATTENTION_MASK_SLIDING_WINDOW && p.window < 1)
        broken(op, "a sliding window needs window >= 1");
      if (!std::isfinite(p.scale)) broken(op, "scale must be finite");
      break;
    }
    case ParamsKind::elementwise: {
      auto& p = *static_cast<const phx_elementwise_params*>(params);
      if (std::isnan(p.alpha) || std::isnan(p.beta)) broken(op, "alpha and beta cannot be NaN");
      break;
    }
    default:
      check_layout_params(op, kind, params);
      break;
  }
}

Shape check_elementwise_binary(phx_op_id op, const Operand& a, const Operand& b) {
  Shape joined;
  if (!broadcast(shape_of(a), shape_of(b), joined))
    broken(op, "shapes " + text(shape_of(a)) + " and " + text(shape_of(b)) + " do not broadcast");
  return joined;
}

// prelu's slope: broadcast to x, whose shape the output keeps.
Shape check_broadcast_to_first(phx_op_id op, const OpSchema& schema, const Operand& x,
                               const Operand& other) {
  if (!broadcasts_to(shape_of(other), shape_of(x)))
    broken(op, std::string(schema.inputs[1]) + " " + text(shape_of(other)) +
                   " does not broadcast to " + schema.inputs[0] + "'s shape " + text(shape_of(x)));
  return shape_of(x);
}

Shape check_where(const Operand& cond, const Operand& a, const Operand& b) {
  Shape ab, joined;
  if (!broadcast(shape_of(a), shape_of(b), ab) || !broadcast(shape_of(cond), ab, joined))
    broken(PHX_OP_WHERE, "shapes " + text(shape_of(cond)) + ", " + text(shape_of(a)) + " and " +
                             text(shape_of(b)) + " do not broadcast");
  return joined;
}

// axis in [-rank, rank) (rank >= 1), as a dimension index.
uint32_t check_axis(phx_op_id op, int32_t axis, const Operand& x) {
  const int32_t rank = static_cast<int32_t>(x.rank);
  if (rank < 1 || axis < -rank || axis >= rank)
    broken(op, "axis " + std::to_string(axis) + " is out of range for " + text(x));
  return static_cast<uint32_t>(axis < 0 ? axis + rank : axis);
}

Shape check_softmax(phx_op_id op, const phx_softmax_params& p, const Operand& x) {
  check_axis(op, p.axis, x);
  return shape_of(x);
}

Shape check_argmax(const phx_argmax_params& p, const Operand& x) {
  const uint32_t axis = check_axis(PHX_OP_ARGMAX, p.axis, x);
  Shape expected = shape_of(x);
  if (p.keep_dims)
    expected[axis] = 1;
  else
    expected.erase(expected.begin() + axis);
  return expected;
}

Shape check_top_k(const phx_top_k_params& p, const Operand& x) {
  const uint32_t axis = check_axis(PHX_OP_TOP_K, p.axis, x);
  if (p.k < 1 || p.k > x.shape[axis])
    broken(PHX_OP_TOP_K, "k is " + std::to_string(p.k) + (p.k == 0 ? " (not set)" : "") +
                             "; it must be 1 to " + std::to_string(x.shape[axis]) +
                             ", the size of axis " + std::to_string(axis) + " of " + text(x));
  if (x.shape[axis] > INT32_MAX)
    broken(PHX_OP_TOP_K, "axis " + std::to_string(axis) + " of " + text(x) +
                             " is longer than its i32 indices reach");
  Shape expected = shape_of(x);
  expected[axis] = p.k;
  return expected;
}

// batch_norm and instance_norm: x [N, C, ...] of at least min_rank dimensions, and every
// other input [C].
Shape check_channel_norm(phx_op_id op, const OpSchema& schema, uint32_t min_rank,
                         const Operand* const* in, size_t count) {
  const Operand& x = *in[0];
  if (x.rank < min_rank)
    broken(op, "x needs rank >= " + std::to_string(min_rank) + " [N, C, ...], got " + text(x));
  const Shape channels{x.shape[1]};
  for (size_t i = 1; i < count; ++i)
    if (shape_of(*in[i]) != channels)
      broken(op, std::string(schema.inputs[i]) + " must be " + text(channels) +
                     " (x's channels, dimension 1), got " + text(shape_of(*in[i])));
  return shape_of(x);
}

Shape check_transpose(const phx_transpose_params& p, const Operand& x) {
  const uint32_t rank = x.rank;
  bool seen[PHX_MAX_RANK] = {};
  Shape expected;
  for (uint32_t i = 0; i < rank; ++i) {
    if (p.perm[i] >= rank || seen[p.perm[i]])
      broken(PHX_OP_TRANSPOSE, "perm is not a permutation of 0.." + std::to_string(rank - 1));
    seen[p.perm[i]] = true;
    expected.push_back(x.shape[p.perm[i]]);
  }
  return expected;
}

Shape check_reduce(phx_op_id op, const phx_reduce_params& p, const Operand& x) {
  const uint32_t rank = x.rank;
  if (rank < 32 && (p.axes_mask >> rank) != 0)
    broken(op, "axes_mask names a dimension past the rank of " + text(x));
  const uint32_t mask = p.axes_mask == 0 ? (1u << rank) - 1 : p.axes_mask;
  Shape expected;
  for (uint32_t i = 0; i < rank; ++i) {
    if (!(mask & (1u << i)))
      expected.push_back(x.shape[i]);
    else if (p.keep_dims)
      expected.push_back(1);
  }
  return expected;
}

Shape check_matmul(const phx_matmul_params& p, const Operand* a, const Operand* b,
                   const Operand* bias) {
  const phx_op_id op = PHX_OP_MATMUL;
  if (a->rank < 2 || b->rank < 2)
    broken(op, "a and b need rank >= 2, got " + text(*a) + " and " + text(*b));
  Shape sa = shape_of(*a), sb = shape_of(*b);
  int64_t m = p.transpose_a ? sa[sa.size() - 1] : sa[sa.size() - 2];
  int64_t ka = p.transpose_a ? sa[sa.size() - 2] : sa[sa.size() - 1];
  int64_t kb = p.transpose_b ? sb[sb.size() - 1] : sb[sb.size() - 2];
  int64_t n = p.transpose_b ? sb[sb.size() - 2] : sb[sb.size() - 1];
  if (ka != kb)
    broken(op, "K mismatch: a is " + text(sa) + (p.transpose_a ? " (transposed)" : "") + ", b is " +
                   text(sb) + (p.transpose_b ? " (transposed)" : ""));
  Shape batch;
  if (!broadcast(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2), batch))
    broken(op,
           "the batch dimensions of a " + text(sa) + " and b " + text(sb) + " do not broadcast");
  batch.push_back(m);
  batch.push_back(n);
  if (bias != nullptr) {
    if (!broadcasts_to(shape_of(*bias), batch))
      broken(op,
             "bias " + text(shape_of(*bias)) + " does not broadcast to the output " + text(batch));
  }
  return batch;
}

Shape check_norm(phx_op_id op, const Operand* const* in, size_t count) {
  const Operand& x = *in[0];
  if (x.rank < 1) broken(op, "x needs rank >= 1");
  Shape last{x.shape[x.rank - 1]};
  for (size_t i = 1; i < count; ++i) {
    if (in[i] == nullptr) continue;
    const char* name = i == 1 ? "gamma" : "beta";
    if (shape_of(*in[i]) != last)
      broken(op, std::string(name) + " must be " + text(last) + " (x's last dimension), got " +
                     text(shape_of(*in[i])));
  }
  return shape_of(x);
}

// The output shape of a conv2d of x with weight w (float or quantized alike).
Shape conv2d_output_shape(phx_op_id op, const phx_conv2d_params& p, const Operand& x,
                          const Operand& w) {
  if (x.rank != 4 || w.rank != 4)
    broken(op, "x and weight need rank 4, got " + text(x) + " and " + text(w));
  const bool nchw = p.layout == PHX_LAYOUT_NCHW;
  int64_t n = x.shape[0], c = nchw ? x.shape[1] : x.shape[3];
  int64_t h = nchw ? x.shape[2] : x.shape[1], wd = nchw ? x.shape[3] : x.shape[2];
  int64_t c_out = w.shape[0], kh = nchw ? w.shape[2] : w.shape[1];
  int64_t kw = nchw ? w.shape[3] : w.shape[2], c_per_group = nchw ? w.shape[1] : w.shape[3];
  if (p.groups < 1 || c % p.groups != 0 || c_out % p.groups != 0)
    broken(op, "groups " + std::to_string(p.groups) + " must divide the input channels " +
                   std::to_string(c) + " and the output channels " + std::to_string(c_out));
  if (c_per_group != c / p.groups)
    broken(op, "weight " + text(shape_of(w)) + " must have " + std::to_string(c / p.groups) +
                   " input channels per group");
  for (int i = 0; i < 2; ++i) {
    if (p.stride[i] < 1 || p.dilation[i] < 1) broken(op, "stride and dilation must be >= 1");
    if (p.padding[2 * i] > (1u << 30) || p.padding[2 * i + 1] > (1u << 30))
      broken(op, "padding is absurd");
  }
  auto out_size = [&](int64_t in, int64_t k, uint32_t pad0, uint32_t pad1, uint32_t stride,
                      uint32_t dil) {
    int64_t span = static_cast<int64_t>(dil) * (k - 1) + 1;
    int64_t padded = in + pad0 + pad1;
    return padded < span ? 0 : (padded - span) / stride + 1;
  };
  int64_t ho = out_size(h, kh, p.padding[0], p.padding[1], p.stride[0], p.dilation[0]);
  int64_t wo = out_size(wd, kw, p.padding[2], p.padding[3], p.stride[1], p.dilation[1]);
  if (ho < 1 || wo < 1)
    broken(op, "the output would be empty: input " + text(shape_of(x)) + ", kernel " +
                   std::to_string(kh) + "x" + std::to_string(kw));
  return nchw ? Shape{n, c_out, ho, wo} : Shape{n, ho, wo, c_out};
}

Shape check_conv2d(const phx_conv2d_params& p, const Operand* x, const Operand* w,
                   const Operand* bias) {
  const phx_op_id op = PHX_OP_CONV2D;
  Shape expected = conv2d_output_shape(op, p, *x, *w);
  const int64_t c_out = w->shape[0];
  if (bias != nullptr) {
    if (shape_of(*bias) != Shape{c_out})
      broken(op, "bias must be " + std::to_string(c_out) + " (the output channels), got " +
                     text(shape_of(*bias)));
  }
  return expected;
}

Shape check_attention(const Operand& q, const Operand& k, const Operand& v) {
  const phx_op_id op = PHX_OP_ATTENTION;
  if (q.rank != 4 || k.rank != 4 || v.rank != 4)
    broken(op,
           "q, k and v need rank 4 [B, H, S, D], got " + text(q) + ", " + text(k) + ", " + text(v));
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0])
    broken(op,
           "q, k and v must have the same batch, got " + text(q) + ", " + text(k) + ", " + text(v));
  if (shape_of(k) != Shape{v.shape[0], v.shape[1], v.shape[2], k.shape[3]})
    broken(op, "k and v must have the same heads and sequence, got " + text(k) + " and " + text(v));
  if (q.shape[1] % k.shape[1] != 0)
    broken(op, "the query heads (" + std::to_string(q.shape[1]) +
                   ") must be a multiple of the key/value heads (" + std::to_string(k.shape[1]) +
                   ")");
  if (k.shape[3] != q.shape[3])
    broken(op, "q and k must have the same head size, got " + text(q) + " and " + text(k));
  return Shape{q.shape[0], q.shape[1], q.shape[2], v.shape[3]};
}

Shape check_rope(const Operand& x, const Operand& cos, const Operand& sin) {
  const phx_op_id op = PHX_OP_ROPE;
  if (x.rank < 2) broken(op, "x needs rank >= 2 [..., S, D], got " + text(x));
  if (cos.rank != 2 || shape_of(cos) != shape_of(sin))
    broken(op, "cos and sin must be [S, R] alike, got " + text(cos) + " and " + text(sin));
  const int64_t s = x.shape[x.rank - 2], d = x.shape[x.rank - 1];
  if (cos.shape[0] != s)
    broken(op, "the table " + text(cos) + " must have a row per position of x " + text(x));
  if (2 * cos.shape[1] > d)
    broken(op, "the table rotates " + std::to_string(2 * cos.shape[1]) +
                   " features, more than x's " + std::to_string(d));
  return shape_of(x);
}

bool one_element(const Operand& t) { return element_count(t) == 1; }

// A quantization scale and its optional zero point: one element (per tensor) or [C].
void check_scale(phx_op_id op, const Operand& scale, const Operand* zero_point, int64_t channels,
                 const char* name) {
  if (!one_element(scale) && shape_of(scale) != Shape{channels})
    broken(op, std::string(name) + " must have one element or " + std::to_string(channels) +
                   " (one per channel), got " + text(scale));
  if (zero_point == nullptr) return;
  if (shape_of(*zero_point) != shape_of(scale))
    broken(op, std::string("the zero point of ") + name + " must have its shape, got " +
                   text(*zero_point) + " and " + text(scale));
}

Shape check_quantize(phx_op_id op, const phx_quantize_params& p, const Operand* const* in,
                     size_t in_count) {
  const Operand& x = *in[0];
  const Operand* zero_point = in_count > 2 ? in[2] : nullptr;
  int64_t channels = 1;
  if (!one_element(*in[1])) {
    const int32_t rank = static_cast<int32_t>(x.rank);
    if (p.axis < -rank || p.axis >= rank)
      broken(op, "axis " + std::to_string(p.axis) + " is out of range for " + text(x));
    channels = x.shape[p.axis < 0 ? p.axis + rank : p.axis];
  }
  check_scale(op, *in[1], zero_point, channels, "scale");
  return shape_of(x);
}

// The quantization inputs shared by qmatmul and qconv2d. channels is N (or C_out).
void check_quantized_product(phx_op_id op, const Operand* const* in, size_t in_count,
                             int64_t channels) {
  auto input = [&](size_t i) { return i < in_count ? in[i] : nullptr; };
  check_scale(op, *in[2], input(3), 1, "a_scale");
  check_scale(op, *in[4], input(5), channels, "b_scale");
  if (const Operand* bias = input(6); bias != nullptr && shape_of(*bias) != Shape{channels})
    broken(op, "bias must be [" + std::to_string(channels) + "], got " + text(*bias));
  if (const Operand* y_scale = input(7)) check_scale(op, *y_scale, input(8), 1, "y_scale");
}

Shape check_qmatmul(const phx_matmul_params& p, const Operand* const* in, size_t in_count) {
  const phx_op_id op = PHX_OP_QMATMUL;
  const Operand& a = *in[0];
  const Operand& b = *in[1];
  if (a.rank < 2 || b.rank != 2)
    broken(op, "a needs rank >= 2 and b rank 2, got " + text(a) + " and " + text(b));
  const int64_t k = a.shape[a.rank - 1];
  const int64_t kb = p.transpose_b ? b.shape[1] : b.shape[0];
  const int64_t n = p.transpose_b ? b.shape[0] : b.shape[1];
  if (k != kb)
    broken(op, "K mismatch: a is " + text(a) + ", b is " + text(b) +
                   (p.transpose_b ? " (transposed)" : ""));
  check_quantized_product(op, in, in_count, n);
  Shape expected = shape_of(a);
  expected.back() = n;
  return expected;
}

Shape check_qconv2d(const phx_conv2d_params& p, const Operand* const* in, size_t in_count) {
  const phx_op_id op = PHX_OP_QCONV2D;
  Shape expected = conv2d_output_shape(op, p, *in[0], *in[1]);
  check_quantized_product(op, in, in_count, in[1]->shape[0]);
  return expected;
}

// Every enum member of a normalized struct within its enum (the one rule that holds of
// every struct alike, read from its description).
void check_enum_fields(phx_op_id op, const ParamsDescription& description, const void* params) {
  for (const phx_param_field& f : description.fields) {
    if (f.type != PHX_PARAM_ENUM) continue;
    int32_t value;
    std::memcpy(&value, static_cast<const char*>(params) + f.offset, sizeof value);
    if (value < 0 || size_t(value) >= f.enum_count)
      broken(op, std::string("unknown ") + f.name + " " + std::to_string(value));
  }
}

}  // namespace

const void* normalize_params(phx_op_id op, const void* user, uint32_t input_rank,
                             OpParams& params) {
  const OpSchema* schema = find_op_schema(op);
  if (schema == nullptr) broken(op, "unknown op");
  const ParamsDescription& description = params_description(schema->params);
  if (schema->params_required && user == nullptr)
    broken(op, std::string("needs its parameters (") + description.struct_name + "); got null");
  if (description.size == 0) return nullptr;

  // What null stands for, then as much of the caller's struct as it and ours both cover
  // (an older header's smaller struct keeps our defaults for the members it lacks).
  fill_default_params(*schema, input_rank, params);
  if (user != nullptr) {
    size_t size;
    std::memcpy(&size, user, sizeof size);
    check_struct_size(size, (std::string(schema->name) + ": params").c_str());
    std::memcpy(&params, user, std::min(size, description.size));
  }
  std::memcpy(&params, &description.size, sizeof description.size);  // struct_size: ours
  check_enum_fields(op, description, &params);
  return &params;
}

void check_variant(const OpVariant& v) {
  const phx_op_id op = v.op;
  const OpSchema* schema = find_op_schema(op);
  if (schema == nullptr) broken(op, "unknown op");
  const size_t min_inputs = schema->min_input_count(), max_inputs = schema->input_count();
  if (v.input_count < min_inputs || v.input_count > max_inputs)
    broken(op, "takes " + std::to_string(min_inputs) +
                   (max_inputs != min_inputs ? " to " + std::to_string(max_inputs) : "") +
                   " inputs, got " + std::to_string(v.input_count));
  const size_t outputs = schema->output_count();
  if (v.output_count != outputs)
    broken(op, "takes " + std::to_string(outputs) + " output" + (outputs > 1 ? "s" : "") +
                   ", got " + std::to_string(v.output_count));
  for (size_t i = 0; i < v.input_count; ++i)
    if (v.inputs[i] == PHX_DTYPE_INVALID && schema->input_required(i))
      broken(op, std::string("input ") + std::to_string(i) + " (" + schema->inputs[i] +
                     ") is required but null");
  for (size_t i = 0; i < v.output_count; ++i)
    if (v.outputs[i] == PHX_DTYPE_INVALID) broken(op, "output " + std::to_string(i) + " is null");
  check_params(op, schema->params, v.params);
  check_dtypes(*schema, v);
}

OpVariant variant_of(phx_op_id op, const void* params, const Tensor* const* in, size_t in_count,
                     const Tensor* const* out, size_t out_count) {
  OpVariant v{};
  v.op = op;
  v.params = params;
  v.input_count = in_count;
  v.output_count = out_count;
  for (size_t i = 0; i < in_count; ++i)
    v.inputs[i] = in[i] != nullptr ? in[i]->dtype : PHX_DTYPE_INVALID;
  for (size_t i = 0; i < out_count; ++i)
    v.outputs[i] = out[i] != nullptr ? out[i]->dtype : PHX_DTYPE_INVALID;
  return v;
}

std::string variant_text(const OpVariant& v) {
  std::string s = std::string(phx_op_name(v.op)) + " (";
  for (size_t i = 0; i < v.input_count; ++i) {
    if (i) s += ", ";
    s += v.inputs[i] != PHX_DTYPE_INVALID ? phx_dtype_name(v.inputs[i]) : "none";
  }
  s += " ->";
  for (size_t i = 0; i < v.output_count; ++i) s += std::string(" ") + phx_dtype_name(v.outputs[i]);
  return s + ")";
}

uint64_t element_count(const Operand& operand) {
  uint64_t count = 1;
  for (uint32_t i = 0; i < operand.rank; ++i) count *= static_cast<uint64_t>(operand.shape[i]);
  return count;
}

Operand operand_of(const Tensor& tensor) {
  Operand operand;
  operand.dtype = tensor.dtype;
  operand.rank = tensor.rank;
  std::copy(tensor.shape, tensor.shape + PHX_MAX_RANK, operand.shape);
  return operand;
}

void infer_output_shapes(phx_op_id op, const void* params, const Operand* const* in,
                         size_t in_count, Shape* out, size_t out_count) {
  auto input = [&](size_t i) { return i < in_count ? in[i] : nullptr; };
  Shape& y = out[0];
  const OpSchema& schema = *find_op_schema(op);
  switch (schema.shape_rule) {
    case ShapeRule::same:
      y = shape_of(*in[0]);
      break;
    case ShapeRule::broadcast:
      y = check_elementwise_binary(op, *in[0], *in[1]);
      break;
    case ShapeRule::matmul:
      y = check_matmul(*static_cast<const phx_matmul_params*>(params), in[0], in[1], input(2));
      break;
    case ShapeRule::softmax:
      y = check_softmax(op, *static_cast<const phx_softmax_params*>(params), *in[0]);
      break;
    case ShapeRule::norm:
      y = check_norm(op, in, in_count);
      break;
    case ShapeRule::transpose:
      y = check_transpose(*static_cast<const phx_transpose_params*>(params), *in[0]);
      break;
    case ShapeRule::reduce:
      y = check_reduce(op, *static_cast<const phx_reduce_params*>(params), *in[0]);
      break;
    case ShapeRule::conv2d:
      y = check_conv2d(*static_cast<const phx_conv2d_params*>(params), in[0], in[1], input(2));
      break;
    case ShapeRule::attention:
      y = check_attention(*in[0], *in[1], *in[2]);
      break;
    case ShapeRule::rope:
      y = check_rope(*in[0], *in[1], *in[2]);
      break;
    case ShapeRule::quantize:
      y = check_quantize(op, *static_cast<const phx_quantize_params*>(params), in, in_count);
      break;
    case ShapeRule::qmatmul:
      y = check_qmatmul(*static_cast<const phx_matmul_params*>(params), in, in_count);
      break;
    case ShapeRule::qconv2d:
      y = check_qconv2d(*static_cast<const phx_conv2d_params*>(params), in, in_count);
      break;
    case ShapeRule::dynamic_quantize:
      y = shape_of(*in[0]);
      break;
    case ShapeRule::broadcast_to_first:
      y = check_broadcast_to_first(op, schema, *in[0], *in[1]);
      break;
    case ShapeRule::where:
      y = check_where(*in[0], *in[1], *in[2]);
      break;
    case ShapeRule::argmax:
      y = check_argmax(*static_cast<const phx_argmax_params*>(params), *in[0]);
      break;
    case ShapeRule::top_k:
      y = check_top_k(*static_cast<const phx_top_k_params*>(params), *in[0]);
      break;
    case ShapeRule::batch_norm:
      y = check_channel_norm(op, schema, 2, in, in_count);
      break;
    case ShapeRule::instance_norm:
      y = check_channel_norm(op, schema, 3, in, in_count);
      break;
    case ShapeRule::reshape:
    case ShapeRule::concat:
    case ShapeRule::slice:
    case ShapeRule::gather:
    case ShapeRule::expand:
    case ShapeRule::tile:
    case ShapeRule::pad:
    case ShapeRule::pool:
    case ShapeRule::conv_transpose2d:
    case ShapeRule::resize:
      y = check_layout_shapes(op, params, in, in_count);
      break;
  }
  // Outputs past the first: top_k's indices, of its values' shape, or dynamic_quantize's
  // scale and zero point, of one element.
  for (size_t i = 1; i < out_count; ++i)
    out[i] = schema.shape_rule == ShapeRule::top_k ? y : Shape{1};
}

void default_output_dtypes(phx_op_id op, const phx_dtype* in, size_t in_count, phx_dtype* out,
                           size_t out_count) {
  std::fill(out, out + out_count, PHX_DTYPE_INVALID);
  if (in_count == 0 || out_count == 0) return;
  switch (find_op_schema(op)->dtype_rule) {
    case DtypeRule::same:
    case DtypeRule::matmul:
    case DtypeRule::rope:
      out[0] = in[0];
      break;
    case DtypeRule::compare:
      out[0] = PHX_DTYPE_U8;
      break;
    case DtypeRule::where:
      if (in_count > 1) out[0] = in[1];
      break;
    case DtypeRule::index:
      out[0] = PHX_DTYPE_I32;
      break;
    case DtypeRule::dequantize:
      out[0] = PHX_DTYPE_F32;
      break;
    case DtypeRule::quantized_product:
      // Requantized (y_scale given): the caller chooses i8, u8 or i16.
      if (in_count <= 7 || in[7] == PHX_DTYPE_INVALID) out[0] = PHX_DTYPE_F32;
      break;
    case DtypeRule::dynamic_quantize:
      if (out_count == 3) {
        out[1] = PHX_DTYPE_F32;
        out[2] = PHX_DTYPE_I32;
      }
      break;
    case DtypeRule::gather:
      out[0] = in[0];
      break;
    case DtypeRule::top_k:
      out[0] = in[0];
      if (out_count == 2) out[1] = PHX_DTYPE_I32;
      break;
    case DtypeRule::cast:
    case DtypeRule::quantize:
      break;
  }
}

void check_op(phx_op_id op, const void* params, const Tensor* const* in, size_t in_count,
              const Tensor* const* out, size_t out_count) {
  check_variant(variant_of(op, params, in, in_count, out, out_count));
  Operand operands[kMaxOpInputs];
  const Operand* in_operands[kMaxOpInputs] = {};
  for (size_t i = 0; i < in_count; ++i) {
    if (in[i] == nullptr) continue;
    operands[i] = operand_of(*in[i]);
    in_operands[i] = &operands[i];
  }
  Shape expected[kMaxOpOutputs];
  infer_output_shapes(op, params, in_operands, in_count, expected, out_count);
  const OpSchema& schema = *find_op_schema(op);
  for (size_t i = 0; i < out_count; ++i) {
    const Operand y = operand_of(*out[i]);
    // dynamic_quantize's scale and zero point: any shape of one element.
    const bool one_element_output = i > 0 && schema.shape_rule == ShapeRule::dynamic_quantize;
    if (one_element_output && !one_element(y))
      broken(op, std::string("the ") + schema.outputs[i] + " output must have one element, got " +
                     text(y));
    if (!one_element_output && shape_of(y) != expected[i])
      broken(op, (i == 0 ? std::string("the output") : std::string("the ") + schema.outputs[i]) +
                     " must be " + text(expected[i]) + ", got " + text(shape_of(y)));
  }
}

namespace {
// Appends the signature of count operands, the first input_count of them inputs:
// "f32[64x32], f32[32x16] -> f32[64x16]". operand_at(i) gives operand i (called in order),
// with dtype PHX_DTYPE_INVALID for an absent optional input.
template <class OperandAt>
void append_operands(std::string& out, size_t count, size_t input_count, OperandAt&& operand_at) {
  for (size_t i = 0; i < count; ++i) {
    if (i == input_count) out += " ->";
    if (i >= input_count)
      out += ' ';
    else if (i > 0)
      out += ", ";
    const Operand operand = operand_at(i);
    if (operand.dtype == PHX_DTYPE_INVALID)
      out += "none";
    else
      append_text(out, operand);
  }
}
}  // namespace

void describe_operands(ProfileEntry& record, const Tensor* const* inputs, size_t input_count,
                       const Tensor* const* outputs, size_t output_count) {
  auto tensor_at = [&](size_t i) { return i < input_count ? inputs[i] : outputs[i - input_count]; };
  const size_t count = input_count + output_count;
  size_t dims = 0;
  for (size_t i = 0; i < count; ++i) dims += tensor_at(i) != nullptr ? tensor_at(i)->rank : 0;
  if (dims > OperandShapes::kMaxDims) {
    // Too many to keep: the text now (which append_signature prefers).
    append_operands(record.signature, count, input_count, [&](size_t i) {
      return tensor_at(i) != nullptr ? operand_of(*tensor_at(i)) : Operand{};
    });
    return;
  }
  OperandShapes& shapes = record.shapes;
  shapes.input_count = static_cast<uint8_t>(input_count);
  shapes.output_count = static_cast<uint8_t>(output_count);
  int64_t* next = shapes.dims;
  for (size_t i = 0; i < count; ++i) {
    const Tensor* tensor = tensor_at(i);
    shapes.dtypes[i] = static_cast<uint8_t>(tensor != nullptr ? tensor->dtype : PHX_DTYPE_INVALID);
    shapes.ranks[i] = static_cast<uint8_t>(tensor != nullptr ? tensor->rank : 0);
    if (tensor != nullptr) next = std::copy_n(tensor->shape, tensor->rank, next);
  }
}

void append_signature(std::string& out, const ProfileEntry& record) {
  if (!record.signature.empty()) {
    out += record.signature;
    return;
  }
  const OperandShapes& shapes = record.shapes;
  const int64_t* next = shapes.dims;
  append_operands(out, size_t{shapes.input_count} + shapes.output_count, shapes.input_count,
                  [&](size_t i) {
                    Operand operand;
                    operand.dtype = static_cast<phx_dtype>(shapes.dtypes[i]);
                    operand.rank = shapes.ranks[i];
                    std::copy_n(next, operand.rank, operand.shape);
                    next += operand.rank;
                    return operand;
                  });
}

}  // namespace phx
