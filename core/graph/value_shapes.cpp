#include <algorithm>

#include "errors.h"
#include "op_support.h"
#include "passes.h"

namespace phx::graph {

std::vector<Operand> concrete_operands(const Program& program,
                                       const std::vector<Shape>& input_shapes) {
  const Graph& graph = program.graph;
  std::vector<Operand> operands(graph.values.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    Operand& operand = operands[graph.inputs[i]];
    operand.dtype = graph.values[graph.inputs[i]].dtype;
    operand.rank = static_cast<uint32_t>(input_shapes[i].size());
    std::fill(operand.shape, operand.shape + PHX_MAX_RANK, 1);
    std::copy(input_shapes[i].begin(), input_shapes[i].end(), operand.shape);
  }
  for (size_t v = 0; v < graph.values.size(); ++v)
    if (graph.values[v].kind == PHX_VALUE_CONSTANT) operands[v] = graph.values[v].operand();
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    if (!program.live[n]) continue;
    const Node& node = program.nodes[n];
    const Operand* in[kMaxOpInputs] = {};
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] != PHX_VALUE_NONE) in[i] = &operands[node.inputs[i]];
    Shape shapes[kMaxOpOutputs];
    try {
      infer_output_shapes(node.op, node.params_ptr(), in, node.inputs.size(), shapes,
                          node.outputs.size());
    } catch (const Error& e) {
      fail(e.status(), "node '" + node.name + "': " + e.what());
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      Operand& operand = operands[node.outputs[o]];
      operand.dtype = graph.values[node.outputs[o]].dtype;
      operand.rank = static_cast<uint32_t>(shapes[o].size());
      std::fill(operand.shape, operand.shape + PHX_MAX_RANK, 1);
      std::copy(shapes[o].begin(), shapes[o].end(), operand.shape);
    }
  }
  return operands;
}

bool device_takes(const Program& program, size_t d, size_t n) {
  if (!program.claimed.empty() && program.claimed[d][n]) return true;
  return device_runs(*program.devices[d], variant_of_node(program.graph, program.nodes[n]));
}

}  // namespace phx::graph
