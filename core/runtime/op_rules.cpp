#include "op_rules.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "abi_structs.h"
#include "errors.h"

namespace phx {
namespace {

using Shape = std::vector<int64_t>;

Shape shape_of(const Tensor& t) { return Shape(t.shape, t.shape + t.rank); }

std::string text(const Shape& shape) {
  if (shape.empty()) return "a scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

std::string text(const Tensor& t) {
  return std::string(phx_dtype_name(t.dtype)) + "[" + text(shape_of(t)) + "]";
}

[[noreturn]] void broken(phx_op_id op, const std::string& rule) {
  fail(PHX_STATUS_INVALID_ARGUMENT, std::string(phx_op_name(op)) + ": " + rule);
}

// NumPy broadcasting of two shapes; false if they do not broadcast.
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

// Whether from broadcasts to exactly to (from's dims are 1 or equal, right-aligned).
bool broadcasts_to(const Shape& from, const Shape& to) {
  Shape joined;
  return from.size() <= to.size() && broadcast(from, to, joined) && joined == to;
}

struct Arity {
  size_t min_inputs, max_inputs;
};

Arity arity(phx_op_id op) {
  switch (op) {
    case PHX_OP_MATMUL:
      return {2, 3};
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_DIV:
      return {2, 2};
    case PHX_OP_LAYER_NORM:
      return {1, 3};
    case PHX_OP_RMS_NORM:
      return {1, 2};
    case PHX_OP_CONV2D:
      return {2, 3};
    default:
      return {1, 1};
  }
}

constexpr uint32_t kFloats =
    PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_F16) | PHX_DTYPE_BIT(PHX_DTYPE_BF16);
constexpr uint32_t kSignedInts =
    PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_I16) | PHX_DTYPE_BIT(PHX_DTYPE_I32);
constexpr uint32_t kAll = kFloats | kSignedInts | PHX_DTYPE_BIT(PHX_DTYPE_U8);

// The dtypes an op is defined for (its first input's). A dtype outside is a wrong
// argument; one inside that a device does not implement is UNSUPPORTED, later.
uint32_t defined_dtypes(phx_op_id op) {
  switch (op) {
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_TRANSPOSE:
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX:
    case PHX_OP_CAST:
      return kAll;
    case PHX_OP_RELU:
      return kFloats | kSignedInts;
    default:
      return kFloats;
  }
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

void check_activation(phx_op_id op, const phx_activation& activation) {
  if (enum_value(activation) < PHX_ACTIVATION_NONE || enum_value(activation) > PHX_ACTIVATION_SILU)
    broken(op, "unknown activation " + std::to_string(enum_value(activation)));
}

void same_dtype(phx_op_id op, const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype != b.dtype)
    broken(op, std::string(what) + " must have the same dtype, got " + text(a) + " and " + text(b));
}

void check_output_shape(phx_op_id op, const Shape& expected, const Tensor& out) {
  if (shape_of(out) != expected)
    broken(op, "the output must be " + text(expected) + ", got " + text(shape_of(out)));
}

void check_matmul(const phx_matmul_params& p, const Tensor* a, const Tensor* b, const Tensor* bias,
                  const Tensor& out) {
  const phx_op_id op = PHX_OP_MATMUL;
  if (a->rank < 2 || b->rank < 2)
    broken(op, "a and b need rank >= 2, got " + text(*a) + " and " + text(*b));
  same_dtype(op, *a, *b, "a and b");
  if (out.dtype != a->dtype && out.dtype != PHX_DTYPE_F32)
    broken(op, "the output dtype must be a's or f32, got " + text(out));
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
  check_output_shape(op, batch, out);
  if (bias != nullptr) {
    same_dtype(op, *bias, out, "bias and output");
    if (!broadcasts_to(shape_of(*bias), batch))
      broken(op,
             "bias " + text(shape_of(*bias)) + " does not broadcast to the output " + text(batch));
  }
}

void check_norm(phx_op_id op, const Tensor* const* in, size_t count, const Tensor& out) {
  const Tensor& x = *in[0];
  if (x.rank < 1) broken(op, "x needs rank >= 1");
  Shape last{x.shape[x.rank - 1]};
  for (size_t i = 1; i < count; ++i) {
    if (in[i] == nullptr) continue;
    const char* name = i == 1 ? "gamma" : "beta";
    same_dtype(op, x, *in[i], name);
    if (shape_of(*in[i]) != last)
      broken(op, std::string(name) + " must be " + text(last) + " (x's last dimension), got " +
                     text(shape_of(*in[i])));
  }
  same_dtype(op, x, out, "x and output");
  check_output_shape(op, shape_of(x), out);
}

void check_conv2d(const phx_conv2d_params& p, const Tensor* x, const Tensor* w, const Tensor* bias,
                  const Tensor& out) {
  const phx_op_id op = PHX_OP_CONV2D;
  if (enum_value(p.layout) != PHX_LAYOUT_NCHW && enum_value(p.layout) != PHX_LAYOUT_NHWC)
    broken(op, "unknown layout " + std::to_string(enum_value(p.layout)));
  if (x->rank != 4 || w->rank != 4)
    broken(op, "x and weight need rank 4, got " + text(*x) + " and " + text(*w));
  same_dtype(op, *x, *w, "x and weight");
  same_dtype(op, *x, out, "x and output");
  const bool nchw = p.layout == PHX_LAYOUT_NCHW;
  int64_t n = x->shape[0], c = nchw ? x->shape[1] : x->shape[3];
  int64_t h = nchw ? x->shape[2] : x->shape[1], wd = nchw ? x->shape[3] : x->shape[2];
  int64_t c_out = w->shape[0], kh = nchw ? w->shape[2] : w->shape[1];
  int64_t kw = nchw ? w->shape[3] : w->shape[2], c_per_group = nchw ? w->shape[1] : w->shape[3];
  if (p.groups < 1 || c % p.groups != 0 || c_out % p.groups != 0)
    broken(op, "groups " + std::to_string(p.groups) + " must divide the input channels " +
                   std::to_string(c) + " and the output channels " + std::to_string(c_out));
  if (c_per_group != c / p.groups)
    broken(op, "weight " + text(shape_of(*w)) + " must have " + std::to_string(c / p.groups) +
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
    broken(op, "the output would be empty: input " + text(shape_of(*x)) + ", kernel " +
                   std::to_string(kh) + "x" + std::to_string(kw));
  Shape expected = nchw ? Shape{n, c_out, ho, wo} : Shape{n, ho, wo, c_out};
  check_output_shape(op, expected, out);
  if (bias != nullptr) {
    same_dtype(op, *x, *bias, "x and bias");
    if (shape_of(*bias) != Shape{c_out})
      broken(op, "bias must be " + std::to_string(c_out) + " (the output channels), got " +
                     text(shape_of(*bias)));
  }
}

template <typename Params>
const void* copy_params(const void* user, Params& params, const Params& defaults, phx_op_id op) {
  params = defaults;
  if (user == nullptr) return &params;
  size_t size;
  std::memcpy(&size, user, sizeof size);
  // Smaller than its size field, or absurdly large: not a parameter struct at all.
  if (size < sizeof(size_t) || size > 65536)
    broken(op, "the parameter struct's struct_size " + std::to_string(size) + " is not valid");
  std::memcpy(&params, user, std::min(size, sizeof params));
  params.struct_size = sizeof params;
  return &params;
}

}  // namespace

const void* normalize_params(phx_op_id op, const void* user, uint32_t input_rank,
                             OpParams& params) {
  switch (op) {
    case PHX_OP_MATMUL: {
      auto* p = copy_params(user, params.matmul, phx_matmul_params PHX_MATMUL_PARAMS_INIT, op);
      check_activation(op, params.matmul.activation);
      return p;
    }
    case PHX_OP_SOFTMAX:
      return copy_params(user, params.softmax, phx_softmax_params PHX_SOFTMAX_PARAMS_INIT, op);
    case PHX_OP_LAYER_NORM:
    case PHX_OP_RMS_NORM:
      return copy_params(user, params.norm, phx_norm_params PHX_NORM_PARAMS_INIT, op);
    case PHX_OP_TRANSPOSE: {
      // The default reverses the dimensions, as NumPy's transpose does.
      phx_transpose_params reverse{sizeof(phx_transpose_params), {}};
      for (uint32_t i = 0; i < input_rank && i < PHX_MAX_RANK; ++i)
        reverse.perm[i] = input_rank - 1 - i;
      return copy_params(user, params.transpose, reverse, op);
    }
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX:
      return copy_params(user, params.reduce, phx_reduce_params PHX_REDUCE_PARAMS_INIT, op);
    case PHX_OP_CONV2D: {
      auto* p = copy_params(user, params.conv2d, phx_conv2d_params PHX_CONV2D_PARAMS_INIT, op);
      check_activation(op, params.conv2d.activation);
      return p;
    }
    default:
      return nullptr;
  }
}

void check_op(phx_op_id op, const void* params, const Tensor* const* in, size_t in_count,
              const Tensor* const* out, size_t out_count) {
  Arity a = arity(op);
  if (in_count < a.min_inputs || in_count > a.max_inputs)
    broken(op, "takes " + std::to_string(a.min_inputs) +
                   (a.max_inputs != a.min_inputs ? " to " + std::to_string(a.max_inputs) : "") +
                   " inputs, got " + std::to_string(in_count));
  if (out_count != 1) broken(op, "takes 1 output, got " + std::to_string(out_count));
  for (size_t i = 0; i < a.min_inputs; ++i)
    if (in[i] == nullptr) broken(op, "input " + std::to_string(i) + " is required but null");
  if (out[0] == nullptr) broken(op, "the output is null");
  const Tensor& y = *out[0];
  if (!(defined_dtypes(op) & PHX_DTYPE_BIT(in[0]->dtype)))
    broken(op, "is defined for " + dtype_list(defined_dtypes(op)) + "; got " + text(*in[0]));

  switch (op) {
    case PHX_OP_MATMUL:
      check_matmul(*static_cast<const phx_matmul_params*>(params), in[0], in[1],
                   in_count > 2 ? in[2] : nullptr, y);
      break;
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_DIV: {
      same_dtype(op, *in[0], *in[1], "a and b");
      same_dtype(op, *in[0], y, "inputs and output");
      Shape joined;
      if (!broadcast(shape_of(*in[0]), shape_of(*in[1]), joined))
        broken(op, "shapes " + text(shape_of(*in[0])) + " and " + text(shape_of(*in[1])) +
                       " do not broadcast");
      check_output_shape(op, joined, y);
      break;
    }
    case PHX_OP_RELU:
    case PHX_OP_GELU:
    case PHX_OP_SILU:
      same_dtype(op, *in[0], y, "input and output");
      check_output_shape(op, shape_of(*in[0]), y);
      break;
    case PHX_OP_SOFTMAX: {
      int32_t axis = static_cast<const phx_softmax_params*>(params)->axis;
      int32_t rank = static_cast<int32_t>(in[0]->rank);
      if (rank < 1 || axis < -rank || axis >= rank)
        broken(op, "axis " + std::to_string(axis) + " is out of range for " + text(*in[0]));
      same_dtype(op, *in[0], y, "input and output");
      check_output_shape(op, shape_of(*in[0]), y);
      break;
    }
    case PHX_OP_LAYER_NORM:
    case PHX_OP_RMS_NORM:
      check_norm(op, in, in_count, y);
      break;
    case PHX_OP_TRANSPOSE: {
      auto& p = *static_cast<const phx_transpose_params*>(params);
      uint32_t rank = in[0]->rank;
      bool seen[PHX_MAX_RANK] = {};
      Shape expected;
      for (uint32_t i = 0; i < rank; ++i) {
        if (p.perm[i] >= rank || seen[p.perm[i]])
          broken(op, "perm is not a permutation of 0.." + std::to_string(rank - 1));
        seen[p.perm[i]] = true;
        expected.push_back(in[0]->shape[p.perm[i]]);
      }
      same_dtype(op, *in[0], y, "input and output");
      check_output_shape(op, expected, y);
      break;
    }
    case PHX_OP_REDUCE_SUM:
    case PHX_OP_REDUCE_MAX: {
      auto& p = *static_cast<const phx_reduce_params*>(params);
      uint32_t rank = in[0]->rank;
      if (rank < 32 && (p.axes_mask >> rank) != 0)
        broken(op, "axes_mask names a dimension past the rank of " + text(*in[0]));
      uint32_t mask = p.axes_mask == 0 ? (1u << rank) - 1 : p.axes_mask;
      Shape expected;
      for (uint32_t i = 0; i < rank; ++i) {
        if (!(mask & (1u << i)))
          expected.push_back(in[0]->shape[i]);
        else if (p.keep_dims)
          expected.push_back(1);
      }
      same_dtype(op, *in[0], y, "input and output");
      check_output_shape(op, expected, y);
      break;
    }
    case PHX_OP_CAST:
      check_output_shape(op, shape_of(*in[0]), y);
      break;
    case PHX_OP_CONV2D:
      check_conv2d(*static_cast<const phx_conv2d_params*>(params), in[0], in[1],
                   in_count > 2 ? in[2] : nullptr, y);
      break;
    default:
      broken(op, "unknown op");
  }
}

std::string op_signature(const Tensor* const* in, size_t in_count, const Tensor* const* out,
                         size_t out_count) {
  std::string s;
  for (size_t i = 0; i < in_count; ++i) {
    if (i) s += ", ";
    s += in[i] ? text(*in[i]) : std::string("none");
  }
  s += " ->";
  for (size_t i = 0; i < out_count; ++i) s += " " + text(*out[i]);
  return s;
}

}  // namespace phx
