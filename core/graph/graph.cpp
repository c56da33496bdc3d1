#include "graph.h"

#include <phx/abi_structs.h>
#include <phx/op_table.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "errors.h"

namespace phx::graph {
namespace {

// Names of dynamic dimensions: a program's as "=name", the graph's own as "~...", so the
// two never meet.
std::string program_dim_name(const char* name) { return std::string("=") + name; }
std::string own_dim_name(const std::string& where) { return "~" + where; }

// Checks a dtype and shape a program gave; dynamic dimensions only where allowed. The dtype
// by reference: a C caller may pass any int there, read as one (enum_value) until checked.
void check_shape(const phx_dtype& dtype, size_t rank, const int64_t* shape, bool allow_dynamic) {
  const int dtype_value = enum_value(dtype);
  if (dtype_value <= PHX_DTYPE_INVALID || dtype_value >= PHX_DTYPE_COUNT)
    fail(PHX_STATUS_INVALID_ARGUMENT, "unknown dtype " + std::to_string(dtype_value));
  if (rank > PHX_MAX_RANK)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "rank " + std::to_string(rank) + " is above " + std::to_string(PHX_MAX_RANK));
  require(shape != nullptr || rank == 0, "shape is null");
  uint64_t bytes = phx_dtype_size(static_cast<phx_dtype>(dtype_value));
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] == PHX_DIM_DYNAMIC && allow_dynamic) continue;
    if (shape[i] < 1)
      fail(PHX_STATUS_INVALID_ARGUMENT,
           "dimension " + std::to_string(i) + " is " + std::to_string(shape[i]) +
               (allow_dynamic ? "; dimensions are >= 1 or PHX_DIM_DYNAMIC" : "; must be >= 1"));
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(shape[i]), &bytes) ||
        bytes > (UINT64_C(1) << 62))
      fail(PHX_STATUS_INVALID_ARGUMENT, "the byte size overflows");
  }
}

// Sizes that stand for the dynamic dimensions while a node is checked: one per name, from
// base on. Two such assignments are used: a dimension of an output that differs between
// them depends on a dynamic size.
class StandIns {
 public:
  explicit StandIns(int64_t base) : base_(base) {}
  int64_t size_of(const std::string& name) {
    auto [it, added] = sizes_.emplace(name, base_ + 64 * static_cast<int64_t>(sizes_.size()));
    return it->second;
  }
  const std::string* name_of(int64_t size) const {
    for (const auto& [name, value] : sizes_)
      if (value == size) return &name;
    return nullptr;
  }

 private:
  int64_t base_;
  std::map<std::string, int64_t> sizes_;
};

Operand stand_in_operand(const Value& value, StandIns& stand_ins) {
  Operand operand = value.operand();
  for (uint32_t i = 0; i < value.rank; ++i)
    if (operand.shape[i] == PHX_DIM_DYNAMIC)
      operand.shape[i] = stand_ins.size_of(value.dim_names[i]);
  return operand;
}

void infer(const Node& node, const std::vector<Value>& values, StandIns* stand_ins,
           Shape* out_shapes) {
  Operand operands[kMaxOpInputs];
  const Operand* inputs[kMaxOpInputs] = {};
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == PHX_VALUE_NONE) continue;
    const Value& v = values[node.inputs[i]];
    operands[i] = stand_ins != nullptr ? stand_in_operand(v, *stand_ins) : v.operand();
    inputs[i] = &operands[i];
  }
  infer_output_shapes(node.op, node.params_ptr(), inputs, node.inputs.size(), out_shapes,
                      node.outputs.size());
}

std::string node_output_name(const Node& node, size_t output) {
  if (node.outputs.size() == 1) return node.name;
  return node.name + ":" + find_op_schema(node.op)->outputs[output];
}

}  // namespace

uint64_t output_byte_size(const Operand& output) {
  uint64_t bytes = phx_dtype_size(output.dtype);
  for (uint32_t i = 0; i < output.rank; ++i)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(output.shape[i]), &bytes) ||
        bytes > (UINT64_C(1) << 62))
      fail(PHX_STATUS_INVALID_ARGUMENT, "the output's byte size overflows");
  return bytes;
}

GraphTable& graph_table() {
  static GraphTable table;
  return table;
}

Graph::~Graph() { graph_table().remove(handle); }

bool Value::dynamic() const {
  return std::any_of(shape, shape + rank, [](int64_t d) { return d == PHX_DIM_DYNAMIC; });
}

Operand Value::operand() const {
  Operand operand;
  operand.dtype = dtype;
  operand.rank = rank;
  std::copy(shape, shape + PHX_MAX_RANK, operand.shape);
  return operand;
}

const Value& Graph::value(phx_value id) const {
  if (id >= values.size())
    fail(PHX_STATUS_NOT_FOUND, "no value " + std::to_string(id) + " (the graph has " +
                                   std::to_string(values.size()) + ")");
  return values[id];
}

phx_value Graph::add_input(const phx_graph_input_desc& desc) {
  check_shape(desc.dtype, desc.rank, desc.shape, true);
  Value v;
  v.kind = PHX_VALUE_INPUT;
  v.name = desc.name != nullptr ? desc.name : "input " + std::to_string(inputs.size());
  v.dtype = desc.dtype;
  v.rank = static_cast<uint32_t>(desc.rank);
  const auto id = static_cast<phx_value>(values.size());
  for (size_t i = 0; i < desc.rank; ++i) {
    v.shape[i] = desc.shape[i];
    if (v.shape[i] != PHX_DIM_DYNAMIC) continue;
    const char* name = desc.dim_names != nullptr ? desc.dim_names[i] : nullptr;
    v.dim_names[i] = name != nullptr ? program_dim_name(name)
                                     : own_dim_name(std::to_string(id) + "." + std::to_string(i));
  }
  inputs.reserve(inputs.size() + 1);
  values.push_back(std::move(v));
  inputs.push_back(id);
  return id;
}

phx_value Graph::add_constant(const char* name, const phx_dtype& dtype, size_t rank,
                              const int64_t* shape, const void* data, size_t size) {
  check_shape(dtype, rank, shape, false);
  uint64_t bytes = phx_dtype_size(dtype);
  for (size_t i = 0; i < rank; ++i) bytes *= static_cast<uint64_t>(shape[i]);
  if (size != bytes)
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "size is " + std::to_string(size) + " bytes; the shape holds " + std::to_string(bytes));
  require(data != nullptr, "data is null");
  Value v;
  v.kind = PHX_VALUE_CONSTANT;
  v.name = name != nullptr ? name : "constant " + std::to_string(values.size());
  v.dtype = dtype;
  v.rank = static_cast<uint32_t>(rank);
  std::copy(shape, shape + rank, v.shape);
  const auto* first = static_cast<const unsigned char*>(data);
  v.bytes.assign(first, first + size);
  values.push_back(std::move(v));
  return static_cast<phx_value>(values.size() - 1);
}

phx_value Graph::add_constant_tensor(const char* name, const Tensor& tensor) {
  require(tensor.context == context, "the tensor belongs to another context than the graph");
  Value v;
  v.kind = PHX_VALUE_CONSTANT;
  v.name = name != nullptr ? name : "constant " + std::to_string(values.size());
  v.dtype = tensor.dtype;
  v.rank = tensor.rank;
  std::copy(tensor.shape, tensor.shape + PHX_MAX_RANK, v.shape);
  v.tensor = tensor.handle;
  values.push_back(std::move(v));
  return static_cast<phx_value>(values.size() - 1);
}

namespace {

// The node's output values, shapes from the two stand-in assignments: a dimension that
// is the same in both is static; one that follows a named dimension takes its name; any
// other depends on dynamic sizes in a way of its own and gets a name of its own.
void name_dynamic_dims(Value& out, const Shape& a, const Shape& b, const StandIns& stand_ins_a,
                       const StandIns& stand_ins_b, const std::string& where) {
  for (uint32_t d = 0; d < out.rank; ++d) {
    if (a[d] == b[d]) {
      out.shape[d] = a[d];
      continue;
    }
    out.shape[d] = PHX_DIM_DYNAMIC;
    const std::string* name_a = stand_ins_a.name_of(a[d]);
    const std::string* name_b = stand_ins_b.name_of(b[d]);
    out.dim_names[d] = name_a != nullptr && name_b != nullptr && *name_a == *name_b
                           ? *name_a
                           : own_dim_name(where + "." + std::to_string(d));
  }
}

}  // namespace

std::vector<phx_value> Graph::add_node(const phx_graph_node_desc& desc) {
  const int op_value = enum_value(desc.op);
  if (op_value <= PHX_OP_INVALID || op_value >= PHX_OP_COUNT)
    fail(PHX_STATUS_INVALID_ARGUMENT, "unknown op id " + std::to_string(op_value));
  Node node;
  node.op = desc.op;
  node.name = desc.name != nullptr
                  ? desc.name
                  : std::string(phx_op_name(desc.op)) + " " + std::to_string(nodes.size());
  try {
    if (desc.input_count > kMaxOpInputs || desc.output_count < 1 ||
        desc.output_count > kMaxOpOutputs)
      fail(PHX_STATUS_INVALID_ARGUMENT, std::to_string(desc.input_count) + " inputs and " +
                                            std::to_string(desc.output_count) +
                                            " outputs is not a valid count");
    require(desc.inputs != nullptr || desc.input_count == 0, "inputs is null");
    OpVariant variant;
    variant.op = desc.op;
    variant.input_count = desc.input_count;
    variant.output_count = desc.output_count;
    for (size_t i = 0; i < desc.input_count; ++i) {
      const phx_value id = desc.inputs[i];
      if (id != PHX_VALUE_NONE && id >= values.size())
        fail(PHX_STATUS_INVALID_ARGUMENT, "input " + std::to_string(i) + " is value " +
                                              std::to_string(id) + ", which the graph lacks");
      node.inputs.push_back(id);
      variant.inputs[i] = id != PHX_VALUE_NONE ? values[id].dtype : PHX_DTYPE_INVALID;
    }
    const uint32_t first_rank =
        !node.inputs.empty() && node.inputs[0] != PHX_VALUE_NONE ? values[node.inputs[0]].rank : 0;
    node.has_params = normalize_params(node.op, desc.params, first_rank, node.params) != nullptr;
    variant.params = node.params_ptr();
    default_output_dtypes(node.op, variant.inputs, variant.input_count, variant.outputs,
                          variant.output_count);
    for (size_t i = 0; i < desc.output_count; ++i) {
      if (desc.output_dtypes != nullptr) {
        // Read as an int until it is known to be a dtype (enum_value).
        const int value = enum_value(desc.output_dtypes[i]);
        if (value < PHX_DTYPE_INVALID || value >= PHX_DTYPE_COUNT)
          fail(PHX_STATUS_INVALID_ARGUMENT,
               "output " + std::to_string(i) + " has an unknown dtype " + std::to_string(value));
        variant.outputs[i] = static_cast<phx_dtype>(value);
      }
      if (variant.outputs[i] == PHX_DTYPE_INVALID)
        fail(PHX_STATUS_INVALID_ARGUMENT, std::string("output ") + std::to_string(i) +
                                              "'s dtype is the program's choice for " +
                                              phx_op_name(node.op) + ": give output_dtypes");
    }
    check_variant(variant);

    node.outputs.resize(desc.output_count);
    Shape shapes[kMaxOpOutputs];
    const bool dynamic = std::any_of(node.inputs.begin(), node.inputs.end(), [&](phx_value id) {
      return id != PHX_VALUE_NONE && values[id].dynamic();
    });
    Shape shapes_b[kMaxOpOutputs];
    StandIns stand_ins_a(4099), stand_ins_b(8209);
    if (!dynamic) {
      infer(node, values, nullptr, shapes);
    } else {
      try {
        infer(node, values, &stand_ins_a, shapes);
        infer(node, values, &stand_ins_b, shapes_b);
      } catch (const Error& e) {
        fail(e.status(), std::string(e.what()) +
                             " (checked with stand-in sizes from 4099 up for the dynamic "
                             "dimensions: the rule must hold for every size; dimensions that "
                             "are equal in every run need one name)");
      }
    }
    std::vector<Value> outputs(desc.output_count);
    const auto first_id = static_cast<phx_value>(values.size());
    for (size_t o = 0; o < desc.output_count; ++o) {
      Value& v = outputs[o];
      v.kind = PHX_VALUE_NODE_OUTPUT;
      v.name = node_output_name(node, o);
      v.dtype = variant.outputs[o];
      v.rank = static_cast<uint32_t>(shapes[o].size());
      v.node = nodes.size();
      if (dynamic)
        name_dynamic_dims(v, shapes[o], shapes_b[o], stand_ins_a, stand_ins_b,
                          std::to_string(nodes.size()) + "." + std::to_string(o));
      else
        std::copy(shapes[o].begin(), shapes[o].end(), v.shape);
      if (!dynamic) output_byte_size(v.operand());
      node.outputs[o] = first_id + static_cast<phx_value>(o);
    }
    std::vector<phx_value> ids = node.outputs;
    values.reserve(values.size() + outputs.size());
    nodes.reserve(nodes.size() + 1);
    // Nothing past this point throws: a refused node leaves the graph as it was.
    for (Value& v : outputs) values.push_back(std::move(v));
    nodes.push_back(std::move(node));
    return ids;
  } catch (const Error& e) {
    fail(e.status(), "node '" + node.name + "': " + e.what());
  }
}

void Graph::add_output(phx_value id, const char* name) {
  if (id >= values.size())
    fail(PHX_STATUS_INVALID_ARGUMENT, "value " + std::to_string(id) +
                                          " is no value of the graph (it has " +
                                          std::to_string(values.size()) + ")");
  const Value& v = values[id];
  if (v.kind != PHX_VALUE_NODE_OUTPUT)
    fail(PHX_STATUS_INVALID_ARGUMENT, "value " + std::to_string(id) + " ('" + v.name +
                                          "') is an input or a constant; an output is a node's");
  if (std::find(outputs.begin(), outputs.end(), id) != outputs.end())
    fail(PHX_STATUS_INVALID_ARGUMENT,
         "value " + std::to_string(id) + " ('" + v.name + "') is an output already");
  std::string output_name = name != nullptr ? name : v.name;
  output_names.reserve(output_names.size() + 1);
  outputs.push_back(id);
  output_names.push_back(std::move(output_name));
}

}  // namespace phx::graph
