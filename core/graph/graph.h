// What a phx_graph handle stands for: the values and op nodes a program recorded, each
// node checked with the op rules and its outputs' dtypes and shapes inferred as it was
// added. A graph only records; compile.h turns it into an executable.
#pragma once

#include <phynexus/graph.h>

#include <string>
#include <vector>

#include "context.h"
#include "op_rules.h"

namespace phx::graph {

struct Value {
  phx_value_kind kind = PHX_VALUE_INPUT;
  std::string name;
  phx_dtype dtype = PHX_DTYPE_INVALID;
  uint32_t rank = 0;
  int64_t shape[PHX_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};  // PHX_DIM_DYNAMIC: from a run
  // The name of each dynamic dimension: dimensions of one name have one size in a run.
  // An unnamed one, and one a node derives from others (a convolution's output height),
  // gets a name of its own that no program can write.
  std::string dim_names[PHX_MAX_RANK];
  // A constant's contents: bytes copied from host memory, or a tensor (its handle).
  std::vector<unsigned char> bytes;
  uintptr_t tensor = 0;
  // A node output: the node.
  size_t node = 0;

  bool dynamic() const;
  Operand operand() const;  // the shape as it is; dynamic dimensions stay -1
};

struct Node {
  std::string name;
  phx_op_id op = PHX_OP_INVALID;
  OpParams params{};
  bool has_params = false;         // false: the op takes no parameters
  std::vector<phx_value> inputs;   // PHX_VALUE_NONE for an optional input left out
  std::vector<phx_value> outputs;  // values of kind PHX_VALUE_NODE_OUTPUT

  const void* params_ptr() const { return has_params ? &params : nullptr; }
};

struct Graph : ContextObject {
  ~Graph() override;

  std::vector<Value> values;  // indexed by phx_value
  std::vector<Node> nodes;
  std::vector<phx_value> inputs;
  std::vector<phx_value> outputs;
  std::vector<std::string> output_names;

  // Each throws INVALID_ARGUMENT and changes nothing when refused.
  phx_value add_input(const phx_graph_input_desc& desc);
  phx_value add_constant(const char* name, const phx_dtype& dtype, size_t rank,
                         const int64_t* shape, const void* data, size_t size);
  phx_value add_constant_tensor(const char* name, const Tensor& tensor);
  std::vector<phx_value> add_node(const phx_graph_node_desc& desc);
  void add_output(phx_value value, const char* name);

  const Value& value(phx_value id) const;  // NOT_FOUND for a value the graph lacks
};

// The byte size of a node's output; INVALID_ARGUMENT past 2^62 bytes.
uint64_t output_byte_size(const Operand& output);

using GraphTable = HandleTable<Graph, 0xc5>;
GraphTable& graph_table();

}  // namespace phx::graph
