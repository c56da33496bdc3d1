// The importer: walks an ONNX ModelProto and builds its phx_graph through the public
// graph API. The operators themselves are converted by the functions of the operator
// table (operator_table.h), which use this class to read a node's inputs and to add
// nodes.
#pragma once

#include <onnx/onnx_pb.h>
#include <phx/progress.h>
#include <phynexus/onnx.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "known_value.h"

namespace phx::onnx_import {

// An ONNX value as the importer holds it: in the graph (graph), known at import (known),
// or both once a graph node has needed a known one.
struct Value {
  phx_value graph = PHX_VALUE_NONE;
  std::shared_ptr<const KnownValue> known;
  int32_t elem_type = 0;  // the model's element type (onnx::TensorProto_DataType)
};

class Importer {
 public:
  Importer(phx_context context, const phx_onnx_options& options);
  ~Importer();
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  // Builds the graph of model (whose big initializers it empties as it copies them
  // into the graph) and hands it to the caller.
  phx_graph import(onnx::ModelProto& model);

  // ---- For the operator converters ----
  int64_t opset() const { return opset_; }
  // The opset the model was written for: below opset() when ONNX's converter brought it up.
  int64_t model_opset() const { return model_opset_; }
  bool has_input(const onnx::NodeProto& node, int i) const;
  const Value& input(const onnx::NodeProto& node, int i) const;
  // The known contents of input i, or null when it is not known at import.
  const KnownValue* known_input(const onnx::NodeProto& node, int i) const;
  // Input i as a graph value (a known one added as a constant the first time).
  phx_value graph_input(const onnx::NodeProto& node, int i);
  // A known value as a new graph constant.
  phx_value constant(const KnownValue& known, const std::string& name);
  // A constant of one element of input 0's element type (value truncated for an integer
  // one; refused beyond int64's range), named after the node and what: the factors and
  // bounds of an operator made of several ops.
  phx_value scalar_constant(const onnx::NodeProto& node, double value, const std::string& what);
  // A tensor of the model as a new graph constant, read without an import-time copy.
  phx_value constant_tensor(const onnx::TensorProto& tensor, const std::string& name);
  phx_value_info info(phx_value value) const;

  // Adds a node of op; output_dtypes empty: the op's rules choose. suffix tells apart
  // the several nodes one ONNX node becomes.
  std::vector<phx_value> add_node(const onnx::NodeProto& node, phx_op_id op, const void* params,
                                  const std::vector<phx_value>& inputs, size_t output_count = 1,
                                  const std::vector<phx_dtype>& output_dtypes = {},
                                  const char* suffix = nullptr);
  // Defines the node's output i.
  void define(const onnx::NodeProto& node, int i, phx_value value, int32_t elem_type);
  void define_known(const onnx::NodeProto& node, int i, KnownValue known);

  // axis in [-rank, rank) as a dimension index; refused outside.
  uint32_t axis(const onnx::NodeProto& node, int64_t axis, uint32_t rank) const;

  [[noreturn]] void unsupported(const onnx::NodeProto& node, const std::string& what) const;
  // unsupported, for what a dynamic dimension's size, given at import, would make
  // possible: the message says how to give the sizes (phynexus.onnx.load reads it).
  [[noreturn]] void needs_sizes(const onnx::NodeProto& node, const std::string& what) const;
  [[noreturn]] void invalid(const onnx::NodeProto& node, const std::string& what) const;
  std::string describe(const onnx::NodeProto& node) const;  // "node 'conv1' (Conv)"

 private:
  void check_opsets(const onnx::ModelProto& model);
  // Brings a model of an opset below the taken ones up to the lowest taken.
  void convert_opset(onnx::ModelProto& model);
  void add_initializers(onnx::GraphProto& graph, Progress& progress);
  // The sizes options_ fixes (dim_names, input_shapes), checked against the model and
  // each other, into named_sizes_ and input_sizes_.
  void take_given_sizes(const onnx::GraphProto& graph);
  void add_inputs(const onnx::GraphProto& graph);
  void add_nodes(const onnx::GraphProto& graph, Progress& progress);
  void add_outputs(const onnx::GraphProto& graph);
  // PHX_ONNX_OUTPUT_EVERY_VALUE: the values the nodes compute as outputs, in their order
  // (before add_outputs, which then marks only what these are not).
  void add_every_value_as_output(const onnx::GraphProto& graph);
  const phx_onnx_tensor* input_value(const std::string& name) const;
  Value given_input(const std::string& what, int32_t elem_type, phx_dtype dtype,
                    const std::vector<int64_t>& shape, const phx_onnx_tensor& given);
  Value& value_named(const std::string& name, const std::string& user);

  phx_context context_;
  phx_onnx_options options_;
  phx_graph graph_ = nullptr;
  int64_t opset_ = 0;
  int64_t model_opset_ = 0;
  std::unordered_map<std::string, int64_t> named_sizes_;               // by dim_param
  std::unordered_map<std::string, std::vector<int64_t>> input_sizes_;  // by input name
  size_t node_index_ = 0;
  std::unordered_map<std::string, Value> values_;
  std::unordered_set<phx_value> marked_outputs_;  // by add_every_value_as_output
};

}  // namespace phx::onnx_import
