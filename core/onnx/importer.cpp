#include "importer.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>
#include <phx/abi_structs.h>

#include <cmath>
#include <unordered_set>

#include "import_error.h"
#include "operator_table.h"
#include "tensor_proto.h"

namespace phx::onnx_import {

namespace {

// The opsets of the default domain the converters are written for. Older models (1 to 6)
// are brought up to kMinOpset by ONNX's own version converter before the import.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 17;

bool default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// what would have to become an empty graph tensor, which Phynexus does not have.
[[noreturn]] void refuse_empty(const std::string& what) {
  refuse(PHX_STATUS_UNSUPPORTED, what +
                                     ": a dimension of 0 (an empty tensor: only a value known "
                                     "at import may be empty, never a graph tensor)");
}

// The bytes of the initializers as the model stores them: what reading the weights goes
// through.
size_t initializer_bytes(const onnx::GraphProto& graph) {
  size_t bytes = 0;
  for (const auto& tensor : graph.initializer()) bytes += tensor.ByteSizeLong();
  return bytes;
}

// libonnx 1.12's converter and shape inference crash (fuzz_onnx_load found them) on what
// they do not check, instead of throwing: what they would crash on is refused before.
// The converter: a model of ir_version 1 or below (no IR graph) and a graph output that
// nothing defines (which the checker lets through).
void check_for_converter(const onnx::ModelProto& model) {
  if (model.ir_version() <= 1)
    refuse(PHX_STATUS_INVALID_ARGUMENT, "the model's ir_version " +
                                            std::to_string(model.ir_version()) +
                                            " is below 2, the lowest ONNX's converter takes");
  std::unordered_set<std::string> defined;
  for (const auto& input : model.graph().input()) defined.insert(input.name());
  for (const auto& tensor : model.graph().initializer()) defined.insert(tensor.name());
  for (const auto& node : model.graph().node())
    for (const auto& output : node.output()) defined.insert(output);
  for (const auto& output : model.graph().output())
    if (defined.count(output.name()) == 0)
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             "graph output '" + output.name() + "' is defined by no input, initializer or node");
}

// Shape inference of the window operators (Conv, ConvTranspose, the pools): it divides by
// strides, dilations, kernel sizes and group and indexes pads by the kernel's rank
// unchecked, so these must be positive (pads not negative) and of one rank: pads two
// entries per spatial dimension, the others one.
void check_for_shape_inference(const onnx::ModelProto& model) {
  for (const auto& node : model.graph().node()) {
    const auto bad = [&](const std::string& what) {
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             "node '" + node.name() + "' (" + node.op_type() + "): " + what);
    };
    int64_t rank = -1;  // the spatial rank the attributes agree on, once one gives it
    for (const auto& attribute : node.attribute()) {
      const std::string& name = attribute.name();
      const bool pads = name == "pads";
      if (name == "group" && attribute.i() < 1) bad("group must be positive");
      if (!pads && name != "strides" && name != "dilations" && name != "kernel_shape" &&
          name != "output_padding")
        continue;
      const int64_t minimum = pads || name == "output_padding" ? 0 : 1;
      for (int64_t v : attribute.ints())
        if (v < minimum) bad(name + " must be " + (minimum == 0 ? "0 or more" : "positive"));
      const int64_t count = attribute.ints_size();
      if (pads && count % 2 != 0) bad("pads needs two entries per spatial dimension");
      const int64_t its_rank = pads ? count / 2 : count;
      if (rank >= 0 && its_rank != rank)
        bad(name + " gives " + std::to_string(its_rank) + " spatial dimensions, another " +
            std::to_string(rank));
      rank = its_rank;
    }
  }
}

}  // namespace

Importer::Importer(phx_context context, const phx_onnx_options& options)
    : context_(context), options_(options) {}

Importer::~Importer() {
  if (graph_ != nullptr) phx_graph_destroy(graph_);
}

phx_graph Importer::import(onnx::ModelProto& model) {
  // The weights, then the nodes; started before the checker, so that show_after counts
  // the whole import.
  Progress progress(initializer_bytes(model.graph()), "of weights", Amount::bytes);
  check_opsets(model);
  // The version converter assumes a valid model, so an old one is always checked.
  if ((options_.flags & PHX_ONNX_SKIP_CHECKER) == 0 || opset_ < kMinOpset) {
    try {
      onnx::checker::check_model(model);
    } catch (const onnx::checker::ValidationError& e) {
      refuse(PHX_STATUS_INVALID_ARGUMENT,
             std::string("the ONNX checker refuses the model: ") + e.what());
    }
  }
  if (opset_ < kMinOpset) convert_opset(model);
  check_call(phx_graph_create(context_, &graph_), "creating the graph");
  onnx::GraphProto& graph = *model.mutable_graph();
  add_initializers(graph, progress);
  add_inputs(graph);
  for (size_t i = 0; i < options_.input_value_count; ++i) {
    const char* name = options_.input_values[i].name;
    if (name == nullptr || values_.count(name) == 0)
      refuse(PHX_STATUS_INVALID_ARGUMENT, std::string("options->input_values[") +
                                              std::to_string(i) + "] names no input of the model");
  }
  progress.next_stage(static_cast<size_t>(graph.node_size()), "nodes");
  add_nodes(graph, progress);
  if ((options_.flags & PHX_ONNX_OUTPUT_EVERY_VALUE) != 0) add_every_value_as_output(graph);
  add_outputs(graph);
  phx_graph done = graph_;
  graph_ = nullptr;
  return done;
}

void Importer::check_opsets(const onnx::ModelProto& model) {
  for (const auto& opset : model.opset_import())
    if (default_domain(opset.domain())) opset_ = model_opset_ = opset.version();
  if (opset_ < 1 || opset_ > kMaxOpset)
    refuse(PHX_STATUS_UNSUPPORTED, "the model's opset of the default domain is " +
                                       std::to_string(opset_) + "; opsets 1 to " +
                                       std::to_string(kMaxOpset) + " are taken (below " +
                                       std::to_string(kMinOpset) + " through ONNX's converter)");
}

void Importer::convert_opset(onnx::ModelProto& model) {
  const int64_t from = opset_;
  const auto refuse_conversion = [&](const std::exception& e) {
    refuse(PHX_STATUS_UNSUPPORTED, "ONNX's version converter cannot bring the model from opset " +
                                       std::to_string(from) + " to " + std::to_string(kMinOpset) +
                                       ": " + e.what());
  };
  check_for_converter(model);
  try {
    model = onnx::version_conversion::ConvertVersion(model, static_cast<int>(kMinOpset));
  } catch (const std::exception& e) {
    // The adapters of the broadcasting ops read their inputs' shapes, which an exporter may
    // have left to inference: inferred then, and only then (libonnx's shape inference is
    // the part that breaks on hostile models).
    if (std::string(e.what()).find("Shape of input") == std::string::npos) refuse_conversion(e);
    check_for_shape_inference(model);
    try {
      onnx::shape_inference::InferShapes(model);
      model = onnx::version_conversion::ConvertVersion(model, static_cast<int>(kMinOpset));
    } catch (const std::exception& again) {
      refuse_conversion(again);
    }
  }
  opset_ = kMinOpset;
  const std::string note = "ONNX model: opset " + std::to_string(from) + " converted to opset " +
                           std::to_string(kMinOpset) + " by ONNX's version converter";
  check_call(phx_log_message(context_, PHX_LOG_WARN, note.c_str()), "logging");
}

void Importer::add_initializers(onnx::GraphProto& graph, Progress& progress) {
  size_t bytes_read = 0;
  for (auto& tensor : *graph.mutable_initializer()) {
    progress.update(bytes_read, tensor.name());
    // Counted before the copy below empties the model's tensor.
    bytes_read += tensor.ByteSizeLong();
    const std::string what = "initializer '" + tensor.name() + "'";
    Value value;
    value.elem_type = tensor.data_type();
    const int64_t count =
        element_count(std::vector<int64_t>(tensor.dims().begin(), tensor.dims().end()), what);
    if (is_integral(tensor.data_type()) || count <= kMaxKnownElements) {
      value.known = std::make_shared<KnownValue>(read_known(tensor, what));
    } else {
      value.graph = constant_tensor(tensor, tensor.name());
      // The graph holds its own copy now: the model's is freed (a clear keeps the
      // capacity), so that the weights are not held twice.
      std::string().swap(*tensor.mutable_raw_data());
      google::protobuf::RepeatedField<float>().Swap(tensor.mutable_float_data());
    }
    values_[tensor.name()] = std::move(value);
  }
}

void Importer::take_given_sizes(const onnx::GraphProto& graph) {
  for (size_t i = 0; i < options_.dim_count; ++i)
    if (options_.dim_names[i] != nullptr)
      named_sizes_[options_.dim_names[i]] = options_.dim_sizes[i];
  std::vector<const onnx::ValueInfoProto*> inputs;  // initializers left out
  for (const auto& candidate : graph.input())
    if (values_.count(candidate.name()) == 0) inputs.push_back(&candidate);
  for (size_t i = 0; i < options_.input_shape_count; ++i) {
    const phx_onnx_input_shape& given = options_.input_shapes[i];
    std::string what = "options->input_shapes[" + std::to_string(i) + "]";
    const onnx::ValueInfoProto* input = nullptr;
    if (given.name == nullptr) {
      if (i >= inputs.size())
        refuse(PHX_STATUS_INVALID_ARGUMENT, what + " has no name, and the model has " +
                                                std::to_string(inputs.size()) + " inputs");
      input = inputs[i];
    }
    for (const onnx::ValueInfoProto* candidate : inputs)
      if (given.name != nullptr && candidate->name() == given.name) input = candidate;
    if (input == nullptr) continue;  // ignored, as a dim_name the model lacks is
    what += " ('" + input->name() + "')";
    const auto& dims = input->type().tensor_type().shape().dim();
    if (static_cast<size_t>(dims.size()) != given.rank)
      refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": rank " + std::to_string(given.rank) +
                                              ", the input's is " + std::to_string(dims.size()));
    for (int d = 0; d < dims.size(); ++d) {
      const int64_t size = given.shape[d];
      const std::string dim_what = what + ": dimension " + std::to_string(d);
      if (dims[d].has_dim_value() && dims[d].dim_value() != size)
        refuse(PHX_STATUS_INVALID_ARGUMENT, dim_what + " is " + std::to_string(size) +
                                                ", the model's " +
                                                std::to_string(dims[d].dim_value()));
      if (dims[d].has_dim_param()) {
        const auto [at, first] = named_sizes_.emplace(dims[d].dim_param(), size);
        if (!first && at->second != size)
          refuse(PHX_STATUS_INVALID_ARGUMENT, dim_what + " ('" + dims[d].dim_param() + "') is " +
                                                  std::to_string(size) + ", given as " +
                                                  std::to_string(at->second) + " elsewhere");
      }
    }
    input_sizes_[input->name()] = std::vector<int64_t>(given.shape, given.shape + given.rank);
  }
}

void Importer::add_inputs(const onnx::GraphProto& graph) {
  take_given_sizes(graph);
  for (const auto& input : graph.input()) {
    if (values_.count(input.name()) != 0) continue;  // an initializer listed as an input
    const std::string what = "input '" + input.name() + "'";
    if (!input.type().has_tensor_type())
      refuse(PHX_STATUS_UNSUPPORTED, what + ": only tensor inputs are taken");
    const auto& type = input.type().tensor_type();
    const phx_dtype dtype = dtype_of(type.elem_type());
    if (dtype == PHX_DTYPE_INVALID)
      refuse(PHX_STATUS_UNSUPPORTED,
             what + ": the element type " + elem_type_name(type.elem_type()) + " is not taken");
    if (!type.has_shape()) refuse(PHX_STATUS_UNSUPPORTED, what + ": its rank is unknown");
    const auto& dims = type.shape().dim();
    if (dims.size() > PHX_MAX_RANK)
      refuse(PHX_STATUS_UNSUPPORTED, what + ": rank " + std::to_string(dims.size()) + " is above " +
                                         std::to_string(PHX_MAX_RANK));
    const auto given = input_sizes_.find(input.name());
    std::vector<int64_t> shape;
    std::vector<const char*> names;
    for (const auto& dim : dims) {
      int64_t size = PHX_DIM_DYNAMIC;
      const char* name = nullptr;
      if (dim.has_dim_value()) {
        size = dim.dim_value();
      } else if (dim.has_dim_param()) {
        name = dim.dim_param().c_str();
        if (const auto named = named_sizes_.find(dim.dim_param()); named != named_sizes_.end())
          size = named->second;
      } else if (given != input_sizes_.end()) {
        size = given->second[shape.size()];
      }
      shape.push_back(size);
      names.push_back(name);
    }
    if (const phx_onnx_tensor* given = input_value(input.name())) {
      values_[input.name()] = given_input(what, type.elem_type(), dtype, shape, *given);
      continue;
    }
    for (int64_t size : shape)
      if (size == 0) refuse_empty(what);
    phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
    desc.name = input.name().c_str();
    desc.dtype = dtype;
    desc.rank = shape.size();
    desc.shape = shape.data();
    desc.dim_names = names.data();
    Value value;
    value.elem_type = type.elem_type();
    check_call(phx_graph_add_input(graph_, &desc, &value.graph), "adding " + what);
    values_[input.name()] = std::move(value);
  }
}

const phx_onnx_tensor* Importer::input_value(const std::string& name) const {
  for (size_t i = 0; i < options_.input_value_count; ++i)
    if (options_.input_values[i].name != nullptr && name == options_.input_values[i].name)
      return &options_.input_values[i];
  return nullptr;
}

Value Importer::given_input(const std::string& what, int32_t elem_type, phx_dtype dtype,
                            const std::vector<int64_t>& shape, const phx_onnx_tensor& given) {
  if (enum_value(given.dtype) != dtype)
    refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": the value given is of dtype " +
                                            std::to_string(enum_value(given.dtype)) +
                                            ", the input " + phx_dtype_name(dtype));
  // An empty value (a reduction's empty axes) is taken: it stays known, and refused
  // only where it would have to become a graph tensor (constant).
  bool fits = given.rank == shape.size() && (given.data != nullptr || given.size == 0);
  std::vector<int64_t> dims;
  for (size_t d = 0; fits && d < shape.size(); ++d) {
    fits = given.shape[d] >= 0 && (shape[d] == PHX_DIM_DYNAMIC || shape[d] == given.shape[d]);
    dims.push_back(given.shape[d]);
  }
  if (!fits || static_cast<size_t>(element_count(dims, what)) * phx_dtype_size(dtype) != given.size)
    refuse(PHX_STATUS_INVALID_ARGUMENT, what + ": the value given has another shape or size");
  Value value;
  value.elem_type = elem_type;
  value.known = std::make_shared<KnownValue>(known_from_bytes(elem_type, dtype, dims, given.data));
  return value;
}

void Importer::add_nodes(const onnx::GraphProto& graph, Progress& progress) {
  for (const auto& node : graph.node()) {
    progress.update(node_index_, node.name().empty() ? node.op_type() : node.name());
    ++node_index_;
    if (!default_domain(node.domain()))
      unsupported(node, "the domain '" + node.domain() + "' is not taken");
    const OperatorEntry* entry = find_operator(node.op_type());
    if (entry == nullptr) unsupported(node, "the operator is not taken (docs/onnx.md)");
    entry->convert(*this, node);
    for (int i = 0; i < node.output_size(); ++i)
      if (!node.output(i).empty() && values_.count(node.output(i)) == 0)
        unsupported(node, "output " + std::to_string(i) + " is not taken");
  }
}

void Importer::add_outputs(const onnx::GraphProto& graph) {
  for (const auto& output : graph.output()) {
    Value& value = value_named(output.name(), "graph output");
    if (marked_outputs_.count(value.graph) != 0) continue;  // add_every_value_as_output's
    // A graph output must be computed by a node: a constant, or an input passed through,
    // is copied by a cast to its own dtype.
    phx_value_info vi = PHX_VALUE_INFO_INIT;
    const bool computed = value.graph != PHX_VALUE_NONE &&
                          phx_graph_value_info(graph_, value.graph, &vi) == PHX_STATUS_OK &&
                          vi.kind == PHX_VALUE_NODE_OUTPUT;
    phx_value out = value.graph;
    if (!computed) {
      if (out == PHX_VALUE_NONE) out = constant(*value.known, output.name());
      check_call(phx_graph_value_info(graph_, out, &vi), "output '" + output.name() + "'");
      phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
      const std::string name = output.name() + " (copy)";
      desc.name = name.c_str();
      desc.op = PHX_OP_CAST;
      desc.inputs = &out;
      desc.input_count = 1;
      desc.output_dtypes = &vi.dtype;
      desc.output_count = 1;
      check_call(phx_graph_add_node(graph_, &desc, &out), "copying output '" + output.name() + "'");
    }
    check_call(phx_graph_add_output(graph_, out, output.name().c_str()),
               "marking output '" + output.name() + "'");
  }
}

void Importer::add_every_value_as_output(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node())
    for (const std::string& name : node.output()) {
      // A value of several names (an Identity's) is marked once, by its first.
      const phx_value value = name.empty() ? PHX_VALUE_NONE : values_.at(name).graph;
      if (value == PHX_VALUE_NONE || info(value).kind != PHX_VALUE_NODE_OUTPUT ||
          !marked_outputs_.insert(value).second)
        continue;
      check_call(phx_graph_add_output(graph_, value, name.c_str()),
                 "marking value '" + name + "' as an output");
    }
}

Value& Importer::value_named(const std::string& name, const std::string& user) {
  auto it = values_.find(name);
  if (it == values_.end())
    refuse(PHX_STATUS_INVALID_ARGUMENT, user + ": no value is named '" + name + "'");
  return it->second;
}

bool Importer::has_input(const onnx::NodeProto& node, int i) const {
  return i < node.input_size() && !node.input(i).empty();
}

const Value& Importer::input(const onnx::NodeProto& node, int i) const {
  if (!has_input(node, i)) invalid(node, "input " + std::to_string(i) + " is missing");
  auto it = values_.find(node.input(i));
  if (it == values_.end())
    invalid(node, "input " + std::to_string(i) + " names '" + node.input(i) +
                      "', which no earlier node, input or initializer defines");
  return it->second;
}

const KnownValue* Importer::known_input(const onnx::NodeProto& node, int i) const {
  return has_input(node, i) ? input(node, i).known.get() : nullptr;
}

phx_value Importer::graph_input(const onnx::NodeProto& node, int i) {
  input(node, i);  // checks it exists
  Value& value = values_[node.input(i)];
  if (value.graph == PHX_VALUE_NONE) value.graph = constant(*value.known, node.input(i));
  return value.graph;
}

phx_value Importer::constant(const KnownValue& known, const std::string& name) {
  const std::string what = "constant '" + name + "'";
  if (known.size() == 0) refuse_empty(what);
  const std::vector<uint8_t> bytes = known_bytes(known, what);
  phx_value v = PHX_VALUE_NONE;
  check_call(
      phx_graph_add_constant(graph_, name.c_str(), dtype_of(known.elem_type), known.dims.size(),
                             known.dims.data(), bytes.data(), bytes.size(), &v),
      "adding " + what);
  return v;
}

phx_value Importer::scalar_constant(const onnx::NodeProto& node, double value,
                                    const std::string& what) {
  KnownValue known;
  known.elem_type = input(node, 0).elem_type;
  if (is_integral(known.elem_type)) {
    // Only a value within int64's range converts (NaN and infinities fail the test).
    if (!(std::fabs(value) < 0x1p63)) unsupported(node, what + " on integers");
    known.ints = {static_cast<int64_t>(value)};
  } else {
    known.reals = {value};
  }
  return constant(known, node.name() + " " + what);
}

phx_value Importer::constant_tensor(const onnx::TensorProto& tensor, const std::string& name) {
  const std::string what = "constant '" + name + "'";
  const TensorBytes bytes = read_tensor(tensor, what);
  phx_value v = PHX_VALUE_NONE;
  check_call(phx_graph_add_constant(graph_, name.c_str(), bytes.dtype, bytes.dims.size(),
                                    bytes.dims.data(), bytes.data, bytes.size, &v),
             "adding " + what);
  return v;
}

phx_value_info Importer::info(phx_value value) const {
  phx_value_info vi = PHX_VALUE_INFO_INIT;
  check_call(phx_graph_value_info(graph_, value, &vi), "describing a value");
  return vi;
}

std::vector<phx_value> Importer::add_node(const onnx::NodeProto& node, phx_op_id op,
                                          const void* params, const std::vector<phx_value>& inputs,
                                          size_t output_count,
                                          const std::vector<phx_dtype>& output_dtypes,
                                          const char* suffix) {
  if (!inputs.empty() && inputs[0] != PHX_VALUE_NONE) {
    // ONNX takes more dtypes than some ops: such a node is unsupported, not invalid.
    phx_op_info op_info = PHX_OP_INFO_INIT;
    const phx_dtype dtype = info(inputs[0]).dtype;
    if (phx_op_info_get(op, &op_info) == PHX_STATUS_OK &&
        (op_info.dtype_mask & PHX_DTYPE_BIT(dtype)) == 0)
      unsupported(
          node, std::string("the op ") + op_info.name + " does not take " + phx_dtype_name(dtype));
  }
  std::string name =
      node.name().empty() ? node.op_type() + "_" + std::to_string(node_index_) : node.name();
  if (suffix != nullptr) name += std::string(" (") + suffix + ")";
  phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
  desc.name = name.c_str();
  desc.op = op;
  desc.params = params;
  desc.inputs = inputs.data();
  desc.input_count = inputs.size();
  desc.output_dtypes = output_dtypes.empty() ? nullptr : output_dtypes.data();
  desc.output_count = output_count;
  std::vector<phx_value> outputs(output_count, PHX_VALUE_NONE);
  const phx_status status = phx_graph_add_node(graph_, &desc, outputs.data());
  if (status != PHX_STATUS_OK) {
    // The graph's rules refuse what the model asks: the node breaks ONNX's own rules
    // (shapes), or asks what the op does not take.
    refuse(status, describe(node) + ": " + phx_last_error());
  }
  return outputs;
}

void Importer::define(const onnx::NodeProto& node, int i, phx_value value, int32_t elem_type) {
  if (i >= node.output_size() || node.output(i).empty()) return;  // an output left out
  Value v;
  v.graph = value;
  v.elem_type = elem_type;
  values_[node.output(i)] = std::move(v);
}

void Importer::define_known(const onnx::NodeProto& node, int i, KnownValue known) {
  if (i >= node.output_size() || node.output(i).empty()) return;
  Value v;
  v.elem_type = known.elem_type;
  v.known = std::make_shared<KnownValue>(std::move(known));
  values_[node.output(i)] = std::move(v);
}

uint32_t Importer::axis(const onnx::NodeProto& node, int64_t axis, uint32_t rank) const {
  if (axis < -static_cast<int64_t>(rank) || axis >= static_cast<int64_t>(rank))
    invalid(node, "axis " + std::to_string(axis) + " is outside a rank of " + std::to_string(rank));
  return static_cast<uint32_t>(axis < 0 ? axis + rank : axis);
}

std::string Importer::describe(const onnx::NodeProto& node) const {
  const std::string name =
      node.name().empty() ? "#" + std::to_string(node_index_) : "'" + node.name() + "'";
  return "node " + name + " (" + node.op_type() + ")";
}

void Importer::unsupported(const onnx::NodeProto& node, const std::string& what) const {
  refuse(PHX_STATUS_UNSUPPORTED, describe(node) + ": " + what);
}

void Importer::needs_sizes(const onnx::NodeProto& node, const std::string& what) const {
  unsupported(node, what +
                        ": the size is needed at import: give the input sizes (phx_onnx_options "
                        "dim_names or input_shapes; phx-run-onnx --dims or --inputs; "
                        "phynexus.onnx.load dims= or input_shapes=)");
}

void Importer::invalid(const onnx::NodeProto& node, const std::string& what) const {
  refuse(PHX_STATUS_INVALID_ARGUMENT, describe(node) + ": " + what);
}

}  // namespace phx::onnx_import
