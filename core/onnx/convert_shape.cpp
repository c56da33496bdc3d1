// Operators whose results the importer computes (onnx.h "Shapes"): constants, the shapes
// and sizes of values whose shapes are known, and the tensors built from them.
#include <cmath>

#include "attributes.h"
#include "converters.h"
#include "known_ops.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

// The dimensions of input 0: from its known contents or its graph shape; refused when
// one is dynamic.
std::vector<int64_t> static_dims(Importer& im, const onnx::NodeProto& node) {
  const Value& in = im.input(node, 0);
  if (in.known != nullptr) return in.known->dims;
  const phx_value_info vi = im.info(in.graph);
  std::vector<int64_t> dims(vi.shape, vi.shape + vi.rank);
  for (int64_t d : dims)
    if (d == PHX_DIM_DYNAMIC) im.needs_sizes(node, "the shape of a value with a dynamic dimension");
  return dims;
}

KnownValue int64_scalar_list(std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return known_ints(onnx::TensorProto::INT64, {n}, std::move(values));
}

}  // namespace

void convert_constant(Importer& im, const onnx::NodeProto& node) {
  if (node.attribute_size() != 1) im.invalid(node, "a Constant has exactly one attribute");
  const onnx::AttributeProto& a = node.attribute(0);
  const std::string what = im.describe(node);
  if (a.name() == "value") {
    const onnx::TensorProto& t = a.t();
    const int64_t count =
        element_count(std::vector<int64_t>(t.dims().begin(), t.dims().end()), what);
    if (!is_integral(t.data_type()) && count > kMaxKnownElements) {
      im.define(node, 0, im.constant_tensor(t, node.output(0)), t.data_type());
      return;
    }
    im.define_known(node, 0, read_known(t, what));
  } else if (a.name() == "value_float") {
    KnownValue k;
    k.elem_type = onnx::TensorProto::FLOAT;
    k.reals = {a.f()};
    im.define_known(node, 0, std::move(k));
  } else if (a.name() == "value_floats") {
    KnownValue k;
    k.elem_type = onnx::TensorProto::FLOAT;
    k.reals.assign(a.floats().begin(), a.floats().end());
    k.dims = {static_cast<int64_t>(k.reals.size())};
    im.define_known(node, 0, std::move(k));
  } else if (a.name() == "value_int") {
    im.define_known(node, 0, known_ints(onnx::TensorProto::INT64, {}, {a.i()}));
  } else if (a.name() == "value_ints") {
    im.define_known(node, 0, int64_scalar_list({a.ints().begin(), a.ints().end()}));
  } else {
    im.unsupported(node, "a constant given as '" + a.name() + "' is not taken");
  }
}

void convert_shape(Importer& im, const onnx::NodeProto& node) {
  std::vector<int64_t> dims = static_dims(im, node);
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [rank](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
  const int64_t start = clamp(attr_int(node, "start", 0));
  const int64_t end = clamp(attr_int(node, "end", rank));
  if (start >= end) im.unsupported(node, "an empty shape slice");
  im.define_known(node, 0, int64_scalar_list({dims.begin() + start, dims.begin() + end}));
}

void convert_size(Importer& im, const onnx::NodeProto& node) {
  im.define_known(node, 0,
                  known_ints(onnx::TensorProto::INT64, {},
                             {element_count(static_dims(im, node), im.describe(node))}));
}

void convert_constant_of_shape(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* shape = im.known_input(node, 0);
  if (shape == nullptr) im.unsupported(node, "a shape computed at run time is not taken");
  KnownValue fill;
  fill.elem_type = onnx::TensorProto::FLOAT;
  fill.reals = {0.0};
  if (const auto* value = find_attribute(node, "value"))
    fill = read_known(value->t(), im.describe(node) + " value");
  if (fill.size() != 1) im.invalid(node, "value must hold one element");
  KnownValue out;
  out.elem_type = fill.elem_type;
  out.dims = known_int_list(*shape);
  const int64_t n = element_count(out.dims, im.describe(node));
  if (n == 0) im.unsupported(node, "a dimension of 0 (an empty tensor)");
  if (n > kMaxKnownElements) im.unsupported(node, "a filled tensor of more than 65536 elements");
  if (fill.integral())
    out.ints.assign(static_cast<size_t>(n), fill.ints[0]);
  else
    out.reals.assign(static_cast<size_t>(n), fill.reals[0]);
  im.define_known(node, 0, std::move(out));
}

void convert_range(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* start = im.known_input(node, 0);
  const KnownValue* limit = im.known_input(node, 1);
  const KnownValue* delta = im.known_input(node, 2);
  if (start == nullptr || limit == nullptr || delta == nullptr)
    im.unsupported(node, "bounds computed at run time are not taken");
  const double s = start->real_at(0), l = limit->real_at(0), d = delta->real_at(0);
  if (d == 0) im.invalid(node, "delta is 0");
  const double count = std::ceil((l - s) / d);
  if (count < 1) im.unsupported(node, "an empty range");
  if (count > kMaxKnownElements) im.unsupported(node, "a range of more than 65536 elements");
  KnownValue out;
  out.elem_type = start->elem_type;
  out.dims = {static_cast<int64_t>(count)};
  for (int64_t i = 0; i < out.dims[0]; ++i) {
    if (out.integral())
      out.ints.push_back(wrapping_add(start->ints[0], wrapping_mul(i, delta->int_at(0))));
    else
      out.reals.push_back(s + static_cast<double>(i) * d);
  }
  im.define_known(node, 0, std::move(out));
}

}  // namespace phx::onnx_import
