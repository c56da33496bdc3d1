// Indexing operators through gather, where and integer arithmetic on the flattened data:
// GatherElements and GatherND compute each output element's offset into data and gather
// those; OneHot compares indices with the positions of an axis; ScatterElements and
// ScatterND of indices known at import select, element by element, between data and
// the update that lands there (computed at import when everything is known).
#include <algorithm>
#include <limits>

#include "attributes.h"
#include "converters.h"
#include "known_ops.h"
#include "tensor_proto.h"

namespace phx::onnx_import {
namespace {

// The offsets and masks built here are constants of a data's size: up to 2^24 elements
// (64 MiB of i32 offsets); a model asking more is refused before anything is allocated.
constexpr int64_t kMaxIndexedElements = int64_t{1} << 24;

// The static dims of input i (known or in the graph); a dynamic one asks for sizes.
std::vector<int64_t> static_dims(Importer& im, const onnx::NodeProto& node, int i,
                                 const char* what) {
  const Value& v = im.input(node, i);
  if (v.known != nullptr) return v.known->dims;
  const phx_value_info vi = im.info(v.graph);
  std::vector<int64_t> dims(vi.shape, vi.shape + vi.rank);
  if (std::find(dims.begin(), dims.end(), PHX_DIM_DYNAMIC) != dims.end())
    im.needs_sizes(node, std::string("indexing ") + what + " of a dynamic dimension");
  return dims;
}

// The element count of dims, refused above kMaxIndexedElements.
int64_t indexed_count(Importer& im, const onnx::NodeProto& node, const std::vector<int64_t>& dims,
                      const char* what) {
  const int64_t count = element_count(dims, im.describe(node));
  if (count > kMaxIndexedElements)
    im.unsupported(node, std::string(what) + " of more than 2^24 elements");
  return count;
}

// Row-major strides of dims.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

phx_value op(Importer& im, const onnx::NodeProto& node, phx_op_id id,
             const std::vector<phx_value>& inputs, const char* suffix,
             const void* params = nullptr) {
  return im.add_node(node, id, params, inputs, 1, {}, suffix)[0];
}

// For graph indices (i32) against axis sizes n (a constant broadcast to them): the
// index with a negative one counted from the end, and whether it lies in [-n, n), as u8.
struct CheckedIndex {
  phx_value index;
  phx_value in_range;
};
CheckedIndex checked_index(Importer& im, const onnx::NodeProto& node, phx_value index, phx_value n,
                           phx_value minus_n, phx_value zero) {
  const phx_value negative = op(im, node, PHX_OP_LESS, {index, zero}, "index < 0");
  const phx_value wrapped = op(im, node, PHX_OP_ADD, {index, n}, "index + n");
  const phx_value below = op(im, node, PHX_OP_LESS, {index, minus_n}, "index < -n");
  const phx_value under_n = op(im, node, PHX_OP_LESS, {index, n}, "index < n");
  const phx_value not_below = op(im, node, PHX_OP_NOT, {below}, "index >= -n");
  return {op(im, node, PHX_OP_WHERE, {negative, wrapped, index}, "index from the start"),
          op(im, node, PHX_OP_MIN, {not_below, under_n}, "index in range")};
}

// The elements of data (a graph value of count elements) at offsets into it flattened
// (an i32 graph value), in the offsets' shape; an offset outside data gives 0 (gather's
// rule).
phx_value gather_flat(Importer& im, const onnx::NodeProto& node, phx_value data, int64_t count,
                      phx_value offsets) {
  const phx_value flat = reshape_to(im, node, data, {count}, "flat data");
  phx_axis_params params = PHX_AXIS_PARAMS_INIT;
  return op(im, node, PHX_OP_GATHER, {flat, offsets}, nullptr, &params);
}

// The output of known data at known flat offsets, shaped dims.
KnownValue known_at(const KnownValue& data, const std::vector<int64_t>& offsets,
                    std::vector<int64_t> dims) {
  KnownValue out;
  out.elem_type = data.elem_type;
  out.dims = std::move(dims);
  for (int64_t o : offsets) {
    if (data.integral())
      out.ints.push_back(data.ints[static_cast<size_t>(o)]);
    else
      out.reals.push_back(data.reals[static_cast<size_t>(o)]);
  }
  return out;
}

// An index of a known tensor counted from the start; refused outside [-n, n).
int64_t known_index(Importer& im, const onnx::NodeProto& node, int64_t i, int64_t n) {
  if (i < -n || i >= n) im.invalid(node, "an index out of range");
  return i < 0 ? i + n : i;
}

// Integral graph indices as i32: a float one (OneHot takes any numeric type) truncated.
phx_value integer_indices(Importer& im, const onnx::NodeProto& node, int i) {
  const phx_value v = im.graph_input(node, i);
  if (im.info(v).dtype == PHX_DTYPE_I32) return v;
  return im.add_node(node, PHX_OP_CAST, nullptr, {v}, 1, {PHX_DTYPE_I32}, "indices as i32")[0];
}

// The scatter of updates into data at targets (per update element, in order, its flat
// offset in data): a reduction of "none" keeps the last update of an element, "add" and
// "mul" combine it with data's element (an element written twice is refused for them).
void scatter_at(Importer& im, const onnx::NodeProto& node, const std::vector<int64_t>& data_dims,
                const std::vector<int64_t>& targets) {
  const std::string reduction = attr_string(node, "reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    im.unsupported(node, "reduction '" + reduction + "'");
  const KnownValue* data = im.known_input(node, 0);
  const KnownValue* updates = im.known_input(node, 2);
  if (data != nullptr && updates != nullptr) {
    if (updates->integral() != data->integral()) im.invalid(node, "updates' type is not data's");
    KnownValue out = *data;
    for (size_t from = 0; from < targets.size(); ++from) {
      const size_t to = static_cast<size_t>(targets[from]);
      if (out.integral()) {
        const int64_t u = updates->ints[from];
        int64_t& v = out.ints[to];
        v = reduction == "add" ? wrapping_add(v, u) : reduction == "mul" ? wrapping_mul(v, u) : u;
      } else {
        const double u = updates->reals[from];
        double& v = out.reals[to];
        v = reduction == "add" ? v + u : reduction == "mul" ? v * u : u;
      }
    }
    im.define_known(node, 0, std::move(out));
    return;
  }
  const int64_t count = indexed_count(im, node, data_dims, "scattering into data");
  // source[e]: the update that lands on data element e; written[e]: whether one does.
  std::vector<int64_t> source(static_cast<size_t>(count), 0), written(source.size(), 0);
  for (size_t from = 0; from < targets.size(); ++from) {
    const size_t to = static_cast<size_t>(targets[from]);
    if (written[to] != 0 && reduction != "none")
      im.unsupported(node, "reduction '" + reduction + "' onto an element written twice");
    source[to] = static_cast<int64_t>(from);
    written[to] = 1;
  }
  const phx_value flat_data = reshape_to(im, node, im.graph_input(node, 0), {count}, "flat data");
  const phx_value flat_updates = reshape_to(im, node, im.graph_input(node, 2),
                                            {static_cast<int64_t>(targets.size())}, "flat updates");
  phx_value landed =
      op(im, node, PHX_OP_GATHER,
         {flat_updates, index_constant(im, node, {count}, std::move(source), "update sources")},
         "landed");
  if (reduction != "none")
    landed =
        op(im, node, reduction == "add" ? PHX_OP_ADD : PHX_OP_MUL, {flat_data, landed}, "combined");
  KnownValue mask;
  mask.elem_type = onnx::TensorProto::BOOL;
  mask.dims = {count};
  mask.ints = std::move(written);
  const phx_value scattered =
      op(im, node, PHX_OP_WHERE, {im.constant(mask, node.name() + " written"), landed, flat_data},
         "scattered");
  im.define(node, 0, reshape_to(im, node, scattered, data_dims, nullptr),
            im.input(node, 0).elem_type);
}

// A scatter's indices, which must be known at import, and the dims of data and updates.
struct ScatterOperands {
  const KnownValue* indices;
  std::vector<int64_t> data_dims, update_dims;
};
ScatterOperands scatter_operands(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* indices = im.known_input(node, 1);
  if (indices == nullptr)
    im.unsupported(node, "indices computed at run time (only indices known at import are taken)");
  return {indices, static_dims(im, node, 0, "data"), static_dims(im, node, 2, "updates")};
}

}  // namespace

phx_value index_constant(Importer& im, const onnx::NodeProto& node, std::vector<int64_t> dims,
                         std::vector<int64_t> values, const std::string& what) {
  KnownValue k;
  k.elem_type = onnx::TensorProto::INT32;
  k.dims = std::move(dims);
  k.ints = std::move(values);
  return im.constant(k, node.name() + " " + what);
}

// out[i][j][k] = data[index[i][j][k]][j][k] along axis 0 (and so on): the offset of each
// output element is its coordinates' offset in data with the axis's taken from indices.
void convert_gather_elements(Importer& im, const onnx::NodeProto& node) {
  const std::vector<int64_t> data_dims = static_dims(im, node, 0, "data");
  const std::vector<int64_t> index_dims = static_dims(im, node, 1, "indices");
  const size_t rank = data_dims.size();
  if (rank == 0 || index_dims.size() != rank) im.invalid(node, "indices must have data's rank");
  const uint32_t axis = im.axis(node, attr_int(node, "axis", 0), static_cast<uint32_t>(rank));
  for (size_t d = 0; d < rank; ++d)
    if (d != axis && index_dims[d] > data_dims[d])
      im.invalid(node, "indices are larger than data along a dimension but the axis");
  const int64_t data_count = indexed_count(im, node, data_dims, "data");
  const int64_t count = indexed_count(im, node, index_dims, "indices");
  const std::vector<int64_t> strides = strides_of(data_dims);
  const int64_t n = data_dims[axis];
  // base[e]: the offset of output element e's coordinates but the axis's.
  std::vector<int64_t> base(static_cast<size_t>(count));
  std::vector<int64_t> coords(rank, 0);
  for (auto& b : base) {
    b = 0;
    for (size_t d = 0; d < rank; ++d)
      if (d != axis) b += coords[d] * strides[d];
    next_index(coords, index_dims);
  }
  if (const KnownValue* indices = im.known_input(node, 1)) {
    std::vector<int64_t> offsets(base);
    for (size_t e = 0; e < offsets.size(); ++e)
      offsets[e] += known_index(im, node, indices->int_at(e), n) * strides[axis];
    if (const KnownValue* data = im.known_input(node, 0)) {
      im.define_known(node, 0, known_at(*data, offsets, index_dims));
      return;
    }
    im.define(node, 0,
              gather_flat(im, node, im.graph_input(node, 0), data_count,
                          index_constant(im, node, index_dims, std::move(offsets), "offsets")),
              im.input(node, 0).elem_type);
    return;
  }
  const CheckedIndex index = checked_index(
      im, node, integer_indices(im, node, 1), index_constant(im, node, {1}, {n}, "n"),
      index_constant(im, node, {1}, {-n}, "-n"), index_constant(im, node, {1}, {0}, "0"));
  phx_value offsets = index.index;
  if (strides[axis] != 1)
    offsets =
        op(im, node, PHX_OP_MUL,
           {offsets, index_constant(im, node, {1}, {strides[axis]}, "stride")}, "index offset");
  offsets = op(im, node, PHX_OP_ADD,
               {offsets, index_constant(im, node, index_dims, std::move(base), "base offsets")},
               "offset");
  offsets = op(im, node, PHX_OP_WHERE,
               {index.in_range, offsets, index_constant(im, node, {1}, {data_count}, "outside")},
               "checked offset");
  im.define(node, 0, gather_flat(im, node, im.graph_input(node, 0), data_count, offsets),
            im.input(node, 0).elem_type);
}

// out[b.., i..] = data[b.., indices[b.., i.., 0], .., indices[b.., i.., k - 1], ...]: data
// as rows of its trailing slices, each index tuple (with its batch) one row.
void convert_gather_nd(Importer& im, const onnx::NodeProto& node) {
  const std::vector<int64_t> data_dims = static_dims(im, node, 0, "data");
  const std::vector<int64_t> index_dims = static_dims(im, node, 1, "indices");
  const int64_t batch_dims = attr_int(node, "batch_dims", 0);
  const int64_t r = static_cast<int64_t>(data_dims.size());
  const int64_t q = static_cast<int64_t>(index_dims.size());
  if (q < 1 || r < 1) im.invalid(node, "data and indices need rank >= 1");
  const int64_t k = index_dims.back();
  if (batch_dims < 0 || batch_dims >= std::min(q, r) || k < 1 || batch_dims + k > r)
    im.invalid(node, "batch_dims and indices' last dimension do not fit data's rank");
  for (int64_t d = 0; d < batch_dims; ++d)
    if (data_dims[d] != index_dims[d]) im.invalid(node, "the batch dimensions differ");
  const int64_t data_count = indexed_count(im, node, data_dims, "data");
  indexed_count(im, node, index_dims, "indices");
  // Data as [rows, trailing slice...]: a row per batch and index tuple.
  int64_t tuple_rows = 1, batches = 1;
  for (int64_t d = 0; d < batch_dims; ++d) batches *= data_dims[d];
  for (int64_t d = batch_dims; d < batch_dims + k; ++d) tuple_rows *= data_dims[d];
  const int64_t rows = batches * tuple_rows;
  std::vector<int64_t> row_dims{rows};
  row_dims.insert(row_dims.end(), data_dims.begin() + batch_dims + k, data_dims.end());
  std::vector<int64_t> out_dims(index_dims.begin(), index_dims.end() - 1);
  out_dims.insert(out_dims.end(), data_dims.begin() + batch_dims + k, data_dims.end());
  if (out_dims.size() > PHX_MAX_RANK) im.unsupported(node, "a result of rank above 8");
  std::vector<int64_t> tuple_dims(data_dims.begin() + batch_dims,
                                  data_dims.begin() + batch_dims + k);
  const std::vector<int64_t> tuple_strides = strides_of(tuple_dims);
  // The rows are gathered with indices of the tuples' shape, [1] for a lone tuple (then
  // reshaped to the result, which has no tuple dimension).
  std::vector<int64_t> tuple_index_dims(index_dims.begin(), index_dims.end() - 1);
  const bool lone_tuple = tuple_index_dims.empty();
  if (lone_tuple) tuple_index_dims = {1};
  const int64_t tuples = element_count(tuple_index_dims, "indices");
  // Each tuple's first row: its batch's.
  int64_t per_batch = 1;
  for (int64_t d = batch_dims; d < q - 1; ++d) per_batch *= index_dims[d];
  std::vector<int64_t> base(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) base[static_cast<size_t>(t)] = t / per_batch * tuple_rows;
  auto gather_rows = [&](phx_value rows_index) {
    const phx_value data_rows = reshape_to(im, node, im.graph_input(node, 0), row_dims, "rows");
    phx_axis_params params = PHX_AXIS_PARAMS_INIT;
    const phx_value out = op(im, node, PHX_OP_GATHER, {data_rows, rows_index},
                             lone_tuple ? "gathered" : nullptr, &params);
    im.define(node, 0, lone_tuple ? reshape_to(im, node, out, out_dims, nullptr) : out,
              im.input(node, 0).elem_type);
  };

  if (const KnownValue* indices = im.known_input(node, 1)) {
    std::vector<int64_t> row_of(base);
    for (size_t t = 0; t < row_of.size(); ++t)
      for (int64_t j = 0; j < k; ++j)
        row_of[t] +=
            known_index(im, node, indices->int_at(t * static_cast<size_t>(k) + j), tuple_dims[j]) *
            tuple_strides[j];
    if (const KnownValue* data = im.known_input(node, 0)) {
      const int64_t slice = data_count / rows;
      std::vector<int64_t> offsets;
      for (int64_t row : row_of)
        for (int64_t e = 0; e < slice; ++e) offsets.push_back(row * slice + e);
      im.define_known(node, 0, known_at(*data, offsets, out_dims));
      return;
    }
    gather_rows(index_constant(im, node, tuple_index_dims, std::move(row_of), "rows"));
    return;
  }
  const std::vector<int64_t> minus_dims = [&] {
    std::vector<int64_t> v;
    for (int64_t n : tuple_dims) v.push_back(-n);
    return v;
  }();
  const CheckedIndex index = checked_index(
      im, node, integer_indices(im, node, 1), index_constant(im, node, {k}, tuple_dims, "n"),
      index_constant(im, node, {k}, minus_dims, "-n"), index_constant(im, node, {1}, {0}, "0"));
  const phx_value weighted =
      op(im, node, PHX_OP_MUL,
         {index.index, index_constant(im, node, {k}, tuple_strides, "tuple strides")}, "weighted");
  phx_reduce_params last = PHX_REDUCE_PARAMS_INIT;
  last.axes_mask = 1u << (q - 1);
  last.keep_dims = lone_tuple;  // [1], as tuple_index_dims
  phx_value row = op(im, node, PHX_OP_REDUCE_SUM, {weighted}, "tuple row", &last);
  const phx_value in_range =
      op(im, node, PHX_OP_REDUCE_MIN, {index.in_range}, "tuple in range", &last);
  if (batches > 1)
    row =
        op(im, node, PHX_OP_ADD,
           {row, index_constant(im, node, tuple_index_dims, std::move(base), "batch rows")}, "row");
  gather_rows(op(im, node, PHX_OP_WHERE,
                 {in_range, row, index_constant(im, node, {1}, {rows}, "outside")}, "checked row"));
}

// on where an index equals the position along the new axis, off elsewhere (an index
// outside [-depth, depth) gives off everywhere, as ONNX says).
void convert_one_hot(Importer& im, const onnx::NodeProto& node) {
  const KnownValue* depth_value = im.known_input(node, 1);
  if (depth_value == nullptr || depth_value->size() != 1)
    im.unsupported(node, "a depth that is not one value known at import");
  const int64_t depth = depth_value->int_at(0);
  if (depth < 1 || depth > kMaxIndexedElements) im.unsupported(node, "a depth outside [1, 2^24]");
  const phx_value indices = integer_indices(im, node, 0);
  const phx_value_info vi = im.info(indices);
  const uint32_t rank = vi.rank + 1;
  if (rank > PHX_MAX_RANK) im.unsupported(node, "a result of rank above 8");
  const uint32_t axis = im.axis(node, attr_int(node, "axis", -1), rank);
  // The indices with a 1 inserted at axis, against the positions along it.
  std::vector<int64_t> with_axis(vi.shape, vi.shape + vi.rank);
  if (std::count(with_axis.begin(), with_axis.end(), PHX_DIM_DYNAMIC) > 1)
    im.needs_sizes(node, "indices with two dynamic dimensions");
  with_axis.insert(with_axis.begin() + axis, 1);
  const phx_value zero = index_constant(im, node, {1}, {0}, "0");
  const phx_value negative = op(im, node, PHX_OP_LESS, {indices, zero}, "index < 0");
  const phx_value wrapped =
      op(im, node, PHX_OP_ADD, {indices, index_constant(im, node, {1}, {depth}, "depth")},
         "index + depth");
  const phx_value index = op(im, node, PHX_OP_WHERE, {negative, wrapped, indices}, "index");
  std::vector<int64_t> position_dims(rank, 1), positions(static_cast<size_t>(depth));
  position_dims[axis] = depth;
  for (int64_t p = 0; p < depth; ++p) positions[static_cast<size_t>(p)] = p;
  const phx_value hot =
      op(im, node, PHX_OP_EQUAL,
         {reshape_to(im, node, index, with_axis, "index on axis"),
          index_constant(im, node, position_dims, std::move(positions), "positions")},
         "hot");
  // values: [off, on], each picked as a one-element tensor.
  phx_value off, on;
  if (const KnownValue* values = im.known_input(node, 2)) {
    if (values->size() != 2) im.invalid(node, "values must hold off and on");
    KnownValue off_k = *values, on_k = *values;
    off_k.dims = on_k.dims = {1};
    if (values->integral()) {
      off_k.ints = {values->ints[0]};
      on_k.ints = {values->ints[1]};
    } else {
      off_k.reals = {values->reals[0]};
      on_k.reals = {values->reals[1]};
    }
    off = im.constant(off_k, node.name() + " off");
    on = im.constant(on_k, node.name() + " on");
  } else {
    const phx_value values_graph = im.graph_input(node, 2);
    if (im.info(values_graph).rank != 1 || im.info(values_graph).shape[0] != 2)
      im.invalid(node, "values must hold off and on");
    phx_axis_params params = PHX_AXIS_PARAMS_INIT;
    off = op(im, node, PHX_OP_GATHER,
             {values_graph, index_constant(im, node, {1}, {0}, "off index")}, "off", &params);
    on = op(im, node, PHX_OP_GATHER, {values_graph, index_constant(im, node, {1}, {1}, "on index")},
            "on", &params);
  }
  im.define(node, 0, op(im, node, PHX_OP_WHERE, {hot, on, off}, nullptr),
            im.input(node, 2).elem_type);
}

// ScatterElements (and Scatter, its name before opset 11) with indices known at import:
// update element e lands at its own coordinates with the axis's taken from indices.
void convert_scatter_elements(Importer& im, const onnx::NodeProto& node) {
  const auto [indices, data_dims, update_dims] = scatter_operands(im, node);
  const size_t rank = data_dims.size();
  if (indices->dims != update_dims) im.invalid(node, "updates' shape is not indices'");
  if (rank == 0 || update_dims.size() != rank) im.invalid(node, "indices must have data's rank");
  const uint32_t axis = im.axis(node, attr_int(node, "axis", 0), static_cast<uint32_t>(rank));
  for (size_t d = 0; d < rank; ++d)
    if (d != axis && update_dims[d] > data_dims[d])
      im.invalid(node, "indices are larger than data along a dimension but the axis");
  indexed_count(im, node, update_dims, "updates");
  const std::vector<int64_t> strides = strides_of(data_dims);
  std::vector<int64_t> targets(indices->size());
  std::vector<int64_t> coords(rank, 0);
  for (size_t e = 0; e < targets.size(); ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += (d == axis ? known_index(im, node, indices->int_at(e), data_dims[d]) : coords[d]) *
                strides[d];
    targets[e] = offset;
    next_index(coords, update_dims);
  }
  scatter_at(im, node, data_dims, targets);
}

// ScatterND with indices known at import: each index tuple names a slice of data, which
// the updates of that tuple fill. The masks a model builds from constants (Swin's
// shifted-window attention mask) are computed at import.
void convert_scatter_nd(Importer& im, const onnx::NodeProto& node) {
  const auto [indices, data_dims, update_dims] = scatter_operands(im, node);
  const size_t r = data_dims.size(), q = indices->dims.size();
  const int64_t k = q == 0 ? -1 : indices->dims.back();
  if (q == 0 || k < 1 || static_cast<size_t>(k) > r)
    im.invalid(node, "indices' last dimension must be between 1 and data's rank");
  std::vector<int64_t> expected(indices->dims.begin(), indices->dims.end() - 1);
  expected.insert(expected.end(), data_dims.begin() + k, data_dims.end());
  if (update_dims != expected) im.invalid(node, "updates' shape is not indices' and data's");
  indexed_count(im, node, update_dims, "updates");
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < r; ++d) slice *= data_dims[d];
  std::vector<int64_t> targets;
  const size_t tuples = indices->size() / static_cast<size_t>(k);
  for (size_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d)
      offset = offset * data_dims[d] +
               known_index(im, node, indices->int_at(t * static_cast<size_t>(k) + d), data_dims[d]);
    for (int64_t e = 0; e < slice; ++e) targets.push_back(offset * slice + e);
  }
  scatter_at(im, node, data_dims, targets);
}

}  // namespace phx::onnx_import
