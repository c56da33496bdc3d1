// Layout operators: Reshape and its kin (Flatten, Squeeze, Unsqueeze), Concat, Split,
// Slice, Gather, Expand, Tile and Pad onto the layout ops, DepthToSpace and SpaceToDepth
// as a reshape, a transpose and a reshape. On values known at import (the shape
// arithmetic of exported models) the importer computes them itself.
#include <algorithm>
#include <limits>

#include "attributes.h"
#include "converters.h"
#include "known_ops.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

std::vector<int64_t> dims_of(const phx_value_info& vi) {
  return std::vector<int64_t>(vi.shape, vi.shape + vi.rank);
}

// The integers of input i, which must be known at import (shapes, axes, pads, starts).
std::vector<int64_t> known_ints_input(Importer& im, const onnx::NodeProto& node, int i,
                                      const char* what) {
  const KnownValue* k = im.known_input(node, i);
  if (k == nullptr) im.unsupported(node, std::string(what) + " computed at run time are not taken");
  return known_int_list(*k);
}

// Axes from input 1 (from opset 13) or the "axes" attribute (before it).
std::vector<int64_t> axes_of(Importer& im, const onnx::NodeProto& node) {
  if (im.opset() >= 13)
    return im.has_input(node, 1) ? known_ints_input(im, node, 1, "axes") : std::vector<int64_t>{};
  return attr_ints(node, "axes");
}

// known with its elements picked per dimension: picks[d] lists the indices of
// dimension d that the result keeps, in order.
KnownValue known_take(const KnownValue& k, const std::vector<std::vector<int64_t>>& picks) {
  KnownValue out;
  out.elem_type = k.elem_type;
  for (const auto& p : picks) out.dims.push_back(static_cast<int64_t>(p.size()));
  const size_t n = static_cast<size_t>(element_count(out.dims, "a result"));
  std::vector<int64_t> index(picks.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    size_t offset = 0;
    for (size_t d = 0; d < picks.size(); ++d) offset = offset * k.dims[d] + picks[d][index[d]];
    if (k.integral())
      out.ints.push_back(k.ints[offset]);
    else
      out.reals.push_back(k.reals[offset]);
    next_index(index, out.dims);
  }
  return out;
}

std::vector<int64_t> all_of(int64_t size) {
  std::vector<int64_t> v(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

// A Reshape's target with 0 (copy) and -1 (infer) resolved against static dims; refused
// when it does not fit.
std::vector<int64_t> resolve_shape(Importer& im, const onnx::NodeProto& node,
                                   const std::vector<int64_t>& in, std::vector<int64_t> shape) {
  int64_t infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && i < in.size()) shape[i] = in[i];
    if (shape[i] == -1) {
      if (infer >= 0) im.invalid(node, "more than one -1 in the shape");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 1) {
      im.unsupported(node, "a dimension of " + std::to_string(shape[i]));
    }
  }
  std::vector<int64_t> fixed = shape;
  if (infer >= 0) fixed[static_cast<size_t>(infer)] = 1;
  const int64_t known = element_count(fixed, im.describe(node));  // refuses an overflow
  const int64_t total = element_count(in, im.describe(node));
  if (infer >= 0) shape[static_cast<size_t>(infer)] = total / known;
  if (element_count(shape, im.describe(node)) != total)
    im.invalid(node, "the shape does not hold the input's element count");
  return shape;
}

}  // namespace

phx_value reshape_to(Importer& im, const onnx::NodeProto& node, phx_value x,
                     const std::vector<int64_t>& shape, const char* suffix) {
  if (shape.size() > PHX_MAX_RANK) im.unsupported(node, "a result of rank above 8");
  phx_reshape_params params{};
  params.struct_size = sizeof params;
  params.rank = static_cast<uint32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), params.shape);
  return im.add_node(node, PHX_OP_RESHAPE, &params, {x}, 1, {}, suffix)[0];
}

phx_value concat(Importer& im, const onnx::NodeProto& node, std::vector<phx_value> parts,
                 int32_t axis, const char* suffix) {
  phx_axis_params params = PHX_AXIS_PARAMS_INIT;
  params.axis = axis;
  // PHX_MAX_OP_INPUTS at a time: more parts become a chain of concats.
  while (parts.size() > PHX_MAX_OP_INPUTS) {
    std::vector<phx_value> first(parts.begin(), parts.begin() + PHX_MAX_OP_INPUTS);
    const phx_value part = im.add_node(node, PHX_OP_CONCAT, &params, first, 1, {}, "part")[0];
    parts.erase(parts.begin(), parts.begin() + PHX_MAX_OP_INPUTS);
    parts.insert(parts.begin(), part);
  }
  return im.add_node(node, PHX_OP_CONCAT, &params, parts, 1, {}, suffix)[0];
}

// The node's output is input 0 with another shape: computed for a known input, a
// reshape node otherwise. shape may hold 0 (copy) and one -1 (infer).
void define_reshaped(Importer& im, const onnx::NodeProto& node, const std::vector<int64_t>& shape) {
  const Value& in = im.input(node, 0);
  if (in.known != nullptr) {
    KnownValue k = *in.known;
    k.dims = resolve_shape(im, node, in.known->dims, shape);
    im.define_known(node, 0, std::move(k));
    return;
  }
  im.define(node, 0, reshape_to(im, node, in.graph, shape, nullptr), in.elem_type);
}

// The dims of input 0 (known or in the graph).
std::vector<int64_t> input_dims(Importer& im, const onnx::NodeProto& node) {
  const Value& in = im.input(node, 0);
  return in.known != nullptr ? in.known->dims : dims_of(im.info(in.graph));
}

void convert_reshape(Importer& im, const onnx::NodeProto& node) {
  std::vector<int64_t> shape = known_ints_input(im, node, 1, "shapes");
  if (attr_int(node, "allowzero", 0) != 0 &&
      std::find(shape.begin(), shape.end(), 0) != shape.end())
    im.unsupported(node, "a dimension of 0 (an empty tensor)");
  define_reshaped(im, node, shape);
}

// [product of the dims before axis, product of the rest].
void convert_flatten(Importer& im, const onnx::NodeProto& node) {
  const std::vector<int64_t> dims = input_dims(im, node);
  const uint32_t rank = static_cast<uint32_t>(dims.size());
  int64_t axis = attr_int(node, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) im.invalid(node, "axis outside the rank");
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) {
    if (dims[d] == PHX_DIM_DYNAMIC) {
      if (axis != 1) im.needs_sizes(node, "flattening a dynamic dimension with others");
      outer = 0;  // copies the one dynamic dimension
    } else {
      outer *= dims[d];
    }
  }
  if (axis == rank) {
    define_reshaped(im, node, {outer == 0 ? 0 : outer, 1});
    return;
  }
  define_reshaped(im, node, {outer, -1});
}

namespace {

// dims without the axes given (all the 1s when axes is empty).
std::vector<int64_t> squeezed(Importer& im, const onnx::NodeProto& node,
                              const std::vector<int64_t>& dims, const std::vector<int64_t>& axes) {
  std::vector<bool> drop(dims.size(), false);
  for (int64_t a : axes) {
    const uint32_t d = im.axis(node, a, static_cast<uint32_t>(dims.size()));
    if (dims[d] != 1) im.invalid(node, "squeezing a dimension that is not 1");
    drop[d] = true;
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (axes.empty() && dims[d] == PHX_DIM_DYNAMIC)
      im.needs_sizes(node, "squeezing every 1 of a shape with a dynamic dimension");
    if (!(axes.empty() ? dims[d] == 1 : drop[d])) out.push_back(dims[d]);
  }
  return out;
}

// A target shape for reshape from dims that may hold one dynamic dimension (as -1).
std::vector<int64_t> target(Importer& im, const onnx::NodeProto& node, std::vector<int64_t> dims) {
  if (std::count(dims.begin(), dims.end(), PHX_DIM_DYNAMIC) > 1)
    im.needs_sizes(node, "a shape with two dynamic dimensions");
  return dims;  // PHX_DIM_DYNAMIC is -1: reshape infers it
}

}  // namespace

void convert_squeeze(Importer& im, const onnx::NodeProto& node) {
  const std::vector<int64_t> dims = input_dims(im, node);
  define_reshaped(im, node, target(im, node, squeezed(im, node, dims, axes_of(im, node))));
}

void convert_unsqueeze(Importer& im, const onnx::NodeProto& node) {
  const std::vector<int64_t> dims = input_dims(im, node);
  const std::vector<int64_t> axes = axes_of(im, node);
  const uint32_t rank = static_cast<uint32_t>(dims.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    const uint32_t d = im.axis(node, a, rank);
    if (inserted[d]) im.invalid(node, "an axis given twice");
    inserted[d] = true;
  }
  std::vector<int64_t> out;
  size_t next = 0;
  for (uint32_t d = 0; d < rank; ++d) out.push_back(inserted[d] ? 1 : dims[next++]);
  define_reshaped(im, node, target(im, node, out));
}

void convert_concat(Importer& im, const onnx::NodeProto& node) {
  const int64_t axis_attr = attr_int(node, "axis", 0);
  bool all_known = true;
  for (int i = 0; i < node.input_size(); ++i) all_known = all_known && im.known_input(node, i);
  if (all_known && im.known_input(node, 0)->integral()) {
    // Shape building: 1-D integers, or any rank along axis.
    const KnownValue& first = *im.known_input(node, 0);
    const uint32_t axis = im.axis(node, axis_attr, static_cast<uint32_t>(first.dims.size()));
    KnownValue out = first;
    out.ints.clear();
    out.dims[axis] = 0;
    int64_t outer = 1;
    for (uint32_t d = 0; d < axis; ++d) outer *= first.dims[d];
    for (int i = 0; i < node.input_size(); ++i)
      out.dims[axis] += im.known_input(node, i)->dims[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < node.input_size(); ++i) {
        const KnownValue& k = *im.known_input(node, i);
        const size_t block = k.ints.size() / static_cast<size_t>(outer);
        out.ints.insert(out.ints.end(), k.ints.begin() + o * block,
                        k.ints.begin() + (o + 1) * block);
      }
    im.define_known(node, 0, std::move(out));
    return;
  }
  std::vector<phx_value> parts;
  for (int i = 0; i < node.input_size(); ++i) parts.push_back(im.graph_input(node, i));
  im.define(node, 0, concat(im, node, std::move(parts), static_cast<int32_t>(axis_attr), nullptr),
            im.input(node, 0).elem_type);
}

namespace {

struct SliceRange {
  int64_t start, end, step;  // ONNX's, normalized and clamped; step 0: the whole dimension
};

// Each dimension's range (step 0, the whole of it, for those not named in axes).
std::vector<SliceRange> slice_ranges(Importer& im, const onnx::NodeProto& node,
                                     const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                                     std::vector<int64_t> steps) {
  const uint32_t rank = static_cast<uint32_t>(dims.size());
  if (axes.empty()) axes = all_of(static_cast<int64_t>(starts.size()));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    im.invalid(node, "starts, ends, axes and steps differ in length");
  std::vector<SliceRange> ranges;
  for (uint32_t d = 0; d < rank; ++d) ranges.push_back({0, dims[d], 0});
  for (size_t i = 0; i < starts.size(); ++i) {
    const uint32_t d = im.axis(node, axes[i], rank);
    const int64_t dim = dims[d];
    if (dim == PHX_DIM_DYNAMIC) im.needs_sizes(node, "slicing a dynamic dimension");
    if (steps[i] == 0) im.invalid(node, "a step of 0");
    // Any step beyond the dimension takes one element: a bound keeps the sums exact.
    constexpr int64_t kStepBound = int64_t{1} << 40;
    const int64_t step = std::clamp(steps[i], -kStepBound, kStepBound);
    auto normalized = [dim](int64_t v, int64_t low, int64_t high) {
      return std::clamp(v < 0 ? v + dim : v, low, high);
    };
    ranges[d] = {normalized(starts[i], 0, step > 0 ? dim : dim - 1),
                 normalized(ends[i], step > 0 ? 0 : -1, step > 0 ? dim : dim - 1), step};
  }
  return ranges;
}

int64_t range_size(const SliceRange& r) {
  if (r.step == 0) return r.end;
  if (r.step > 0) return r.end > r.start ? (r.end - r.start + r.step - 1) / r.step : 0;
  return r.start > r.end ? (r.start - r.end - r.step - 1) / -r.step : 0;
}

}  // namespace

void convert_slice(Importer& im, const onnx::NodeProto& node) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (im.opset() < 10) {
    starts = attr_ints(node, "starts");
    ends = attr_ints(node, "ends");
    axes = attr_ints(node, "axes");
  } else {
    starts = known_ints_input(im, node, 1, "starts");
    ends = known_ints_input(im, node, 2, "ends");
    if (im.has_input(node, 3)) axes = known_ints_input(im, node, 3, "axes");
    if (im.has_input(node, 4)) steps = known_ints_input(im, node, 4, "steps");
  }
  const std::vector<int64_t> dims = input_dims(im, node);
  const std::vector<SliceRange> ranges = slice_ranges(im, node, dims, starts, ends, axes, steps);
  const Value& in = im.input(node, 0);
  // A known value may become empty (Swin's mask regions, one of them empty when the
  // window covers the whole map); a graph value may not.
  if (in.known == nullptr)
    for (const SliceRange& r : ranges)
      if (r.step != 0 && range_size(r) == 0)
        im.unsupported(node, "an empty slice (a dimension of 0)");
  if (in.known != nullptr) {
    std::vector<std::vector<int64_t>> picks;
    for (const SliceRange& r : ranges) {
      std::vector<int64_t> p;
      const int64_t step = r.step == 0 ? 1 : r.step;
      for (int64_t i = 0, v = r.start; i < range_size(r); ++i, v += step) p.push_back(v);
      picks.push_back(std::move(p));
    }
    im.define_known(node, 0, known_take(*in.known, picks));
    return;
  }
  phx_slice_params params = PHX_SLICE_PARAMS_INIT;
  for (size_t d = 0; d < ranges.size(); ++d) {
    params.starts[d] = ranges[d].start;
    // A negative step's end clamped to -1 means "past the first element"; the op reads a
    // negative end as counting from the end (-1 is the last element), and says "to the
    // very start" with INT64_MIN (phx_slice_params).
    params.ends[d] = ranges[d].end < 0 ? std::numeric_limits<int64_t>::min() : ranges[d].end;
    params.steps[d] = ranges[d].step;
  }
  im.define(node, 0, im.add_node(node, PHX_OP_SLICE, &params, {in.graph})[0], in.elem_type);
}

void convert_split(Importer& im, const onnx::NodeProto& node) {
  const std::vector<int64_t> dims = input_dims(im, node);
  const uint32_t axis =
      im.axis(node, attr_int(node, "axis", 0), static_cast<uint32_t>(dims.size()));
  if (dims[axis] == PHX_DIM_DYNAMIC) im.needs_sizes(node, "splitting a dynamic dimension");
  std::vector<int64_t> sizes = im.opset() >= 13 && im.has_input(node, 1)
                                   ? known_ints_input(im, node, 1, "split sizes")
                                   : attr_ints(node, "split");
  const int64_t parts = node.output_size();
  if (sizes.empty()) {
    if (dims[axis] % parts != 0) im.invalid(node, "the dimension does not split evenly");
    sizes.assign(static_cast<size_t>(parts), dims[axis] / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    im.invalid(node, "split sizes and outputs differ");
  const phx_value x = im.graph_input(node, 0);
  int64_t start = 0;
  for (int64_t i = 0; i < parts; ++i) {
    if (sizes[i] < 1) im.unsupported(node, "an empty part (a dimension of 0)");
    if (sizes[i] > dims[axis] - start) im.invalid(node, "the split sizes exceed the dimension");
    phx_slice_params params = PHX_SLICE_PARAMS_INIT;
    params.starts[axis] = start;
    params.ends[axis] = start + sizes[i];
    params.steps[axis] = 1;
    start += sizes[i];
    const std::string suffix = "part " + std::to_string(i);
    im.define(node, static_cast<int>(i),
              im.add_node(node, PHX_OP_SLICE, &params, {x}, 1, {}, suffix.c_str())[0],
              im.input(node, 0).elem_type);
  }
  if (start != dims[axis]) im.invalid(node, "the split sizes do not add up to the dimension");
}

void convert_gather(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* data = im.known_input(node, 0);
  const KnownValue* indices = im.known_input(node, 1);
  if (data != nullptr && indices != nullptr && indices->dims.size() <= 1) {
    const uint32_t axis =
        im.axis(node, attr_int(node, "axis", 0), static_cast<uint32_t>(data->dims.size()));
    std::vector<std::vector<int64_t>> picks;
    for (size_t d = 0; d < data->dims.size(); ++d) picks.push_back(all_of(data->dims[d]));
    picks[axis].clear();
    for (int64_t i : known_int_list(*indices)) {
      if (i < -data->dims[axis] || i >= data->dims[axis]) im.invalid(node, "an index out of range");
      picks[axis].push_back(i < 0 ? i + data->dims[axis] : i);
    }
    KnownValue out = known_take(*data, picks);
    if (indices->dims.empty()) out.dims.erase(out.dims.begin() + axis);  // a scalar index
    im.define_known(node, 0, std::move(out));
    return;
  }
  phx_axis_params params = PHX_AXIS_PARAMS_INIT;
  params.axis = static_cast<int32_t>(attr_int(node, "axis", 0));
  im.define(node, 0,
            im.add_node(node, PHX_OP_GATHER, &params,
                        {im.graph_input(node, 0), im.graph_input(node, 1)})[0],
            im.input(node, 0).elem_type);
}

void convert_expand(Importer& im, const onnx::NodeProto& node) {
  const std::vector<int64_t> shape = known_ints_input(im, node, 1, "shapes");
  // A known value stays known while it is small (a mask built from constants).
  const KnownValue* known = im.known_input(node, 0);
  std::vector<int64_t> result;
  if (known != nullptr && broadcast_dims(known->dims, shape, result)) {
    int64_t count = 1;
    for (int64_t d : result) count = d < 1 || count > kMaxKnownElements ? 0 : count * d;
    if (count >= 1 && count <= kMaxKnownElements) {
      KnownValue ones;  // of the result's shape: broadcasting known onto it expands it
      ones.elem_type = known->elem_type;
      ones.dims = result;
      if (known->integral())
        ones.ints.assign(static_cast<size_t>(count), 1);
      else
        ones.reals.assign(static_cast<size_t>(count), 1.0);
      im.define_known(node, 0,
                      known_binary(
                          *known, ones, [](int64_t a, int64_t) { return a; },
                          [](double a, double) { return a; }));
      return;
    }
  }
  phx_reshape_params params{};
  params.struct_size = sizeof params;
  if (shape.size() > PHX_MAX_RANK) im.unsupported(node, "a result of rank above 8");
  params.rank = static_cast<uint32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), params.shape);
  im.define(node, 0, im.add_node(node, PHX_OP_EXPAND, &params, {im.graph_input(node, 0)})[0],
            im.input(node, 0).elem_type);
}

void convert_tile(Importer& im, const onnx::NodeProto& node) {
  const std::vector<int64_t> repeats = known_ints_input(im, node, 1, "repeats");
  phx_tile_params params = PHX_TILE_PARAMS_INIT;
  if (repeats.size() > PHX_MAX_RANK) im.invalid(node, "more repeats than dimensions");
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 1) im.unsupported(node, "a repeat of 0 (an empty tensor)");
    params.repeats[d] = static_cast<uint32_t>(repeats[d]);
  }
  im.define(node, 0, im.add_node(node, PHX_OP_TILE, &params, {im.graph_input(node, 0)})[0],
            im.input(node, 0).elem_type);
}

void convert_pad(Importer& im, const onnx::NodeProto& node) {
  const phx_value x = im.graph_input(node, 0);
  const uint32_t rank = im.info(x).rank;
  std::vector<int64_t> pads;
  float value = 0;
  if (im.opset() < 11) {
    pads = attr_ints(node, "pads");
    value = attr_float(node, "value", 0.0f);
  } else {
    pads = known_ints_input(im, node, 1, "pads");
    if (im.has_input(node, 2)) {
      const KnownValue* v = im.known_input(node, 2);
      if (v == nullptr) im.unsupported(node, "a padding value computed at run time");
      value = static_cast<float>(v->real_at(0));
    }
    if (im.has_input(node, 3)) im.unsupported(node, "pads for some axes only");
  }
  if (pads.size() != 2 * rank) im.invalid(node, "pads needs two entries per dimension");
  phx_pad_params params = PHX_PAD_PARAMS_INIT;
  const std::string mode = attr_string(node, "mode", "constant");
  params.mode = mode == "reflect" ? PHX_PAD_REFLECT
                : mode == "edge"  ? PHX_PAD_EDGE
                                  : PHX_PAD_CONSTANT;
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    im.unsupported(node, "the mode '" + mode + "'");
  params.value = value;
  for (uint32_t d = 0; d < rank; ++d) {
    if (pads[d] < 0 || pads[d + rank] < 0) im.unsupported(node, "negative pads (cropping)");
    params.begin[d] = static_cast<uint32_t>(pads[d]);
    params.end[d] = static_cast<uint32_t>(pads[d + rank]);
  }
  im.define(node, 0, im.add_node(node, PHX_OP_PAD, &params, {x})[0], im.input(node, 0).elem_type);
}

namespace {

// x [N, C, H, W] (N may be dynamic) reshaped to from, permuted by perm and reshaped to to:
// DepthToSpace and SpaceToDepth, which move blocks between channels and positions.
void rearrange_blocks(Importer& im, const onnx::NodeProto& node, const std::vector<int64_t>& from,
                      const std::vector<uint32_t>& perm, const std::vector<int64_t>& to) {
  const phx_value blocks = reshape_to(im, node, im.graph_input(node, 0), from, "blocks");
  phx_transpose_params params{};
  params.struct_size = sizeof params;
  std::copy(perm.begin(), perm.end(), params.perm);
  const phx_value moved = im.add_node(node, PHX_OP_TRANSPOSE, &params, {blocks}, 1, {}, "moved")[0];
  im.define(node, 0, reshape_to(im, node, moved, to, nullptr), im.input(node, 0).elem_type);
}

// The node's blocksize and its input's C, H and W, which must be known at import.
struct BlockGeometry {
  int64_t block, c, h, w;
};

BlockGeometry block_geometry(Importer& im, const onnx::NodeProto& node) {
  if (im.known_input(node, 0) != nullptr) im.unsupported(node, "an input known at import");
  const std::vector<int64_t> dims = input_dims(im, node);
  if (dims.size() != 4) im.invalid(node, "the input must be [N, C, H, W]");
  for (size_t d = 1; d < 4; ++d)
    if (dims[d] == PHX_DIM_DYNAMIC) im.needs_sizes(node, "moving blocks of a dynamic C, H or W");
  const int64_t block = attr_int(node, "blocksize", 0);
  if (block < 1 || block > (int64_t{1} << 20))
    im.invalid(node, "blocksize " + std::to_string(block) + " is outside 1 to 2^20");
  return {block, dims[1], dims[2], dims[3]};
}

}  // namespace

// DepthToSpace: channel c of output position (h b + i, w b + j) is input channel
// (i b + j) C/b^2 + c (DCR, the default) or c b^2 + i b + j (CRD).
void convert_depth_to_space(Importer& im, const onnx::NodeProto& node) {
  const BlockGeometry g = block_geometry(im, node);
  const int64_t b = g.block;
  if (g.c % (b * b) != 0)
    im.invalid(node, "C = " + std::to_string(g.c) + " is not a multiple of blocksize^2");
  const int64_t c = g.c / (b * b);
  const std::string mode = attr_string(node, "mode", "DCR");
  const std::vector<int64_t> to = {0, c, g.h * b, g.w * b};
  if (mode == "DCR")
    rearrange_blocks(im, node, {0, b, b, c, g.h, g.w}, {0, 3, 4, 1, 5, 2}, to);
  else if (mode == "CRD")
    rearrange_blocks(im, node, {0, c, b, b, g.h, g.w}, {0, 1, 4, 2, 5, 3}, to);
  else
    im.invalid(node, "mode '" + mode + "' is neither DCR nor CRD");
}

// SpaceToDepth: DepthToSpace's DCR inverse.
void convert_space_to_depth(Importer& im, const onnx::NodeProto& node) {
  const BlockGeometry g = block_geometry(im, node);
  const int64_t b = g.block;
  if (g.h % b != 0 || g.w % b != 0)
    im.invalid(node, "H and W must be multiples of blocksize " + std::to_string(b));
  rearrange_blocks(im, node, {0, g.c, g.h / b, b, g.w / b, b}, {0, 3, 5, 1, 2, 4},
                   {0, g.c * b * b, g.h / b, g.w / b});
}

}  // namespace phx::onnx_import
