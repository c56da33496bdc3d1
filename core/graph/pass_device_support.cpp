#include "errors.h"
#include "op_support.h"
#include "passes.h"

namespace phx::graph {

OpVariant variant_of_node(const Graph& graph, const Node& node) {
  OpVariant variant;
  variant.op = node.op;
  variant.params = node.params_ptr();
  variant.input_count = node.inputs.size();
  variant.output_count = node.outputs.size();
  for (size_t i = 0; i < node.inputs.size(); ++i)
    variant.inputs[i] =
        node.inputs[i] != PHX_VALUE_NONE ? graph.values[node.inputs[i]].dtype : PHX_DTYPE_INVALID;
  for (size_t o = 0; o < node.outputs.size(); ++o)
    variant.outputs[o] = graph.values[node.outputs[o]].dtype;
  return variant;
}

void check_device_support(Program& program) {
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    if (!program.live[n]) continue;
    const Node& node = program.nodes[n];
    const OpVariant variant = variant_of_node(program.graph, node);
    if (!device_runs(program.device, variant))
      fail(PHX_STATUS_UNSUPPORTED,
           "node '" + node.name + "': device " + std::to_string(program.device.index) + " (" +
               program.device.name + ") does not implement " + variant_text(variant));
  }
}

}  // namespace phx::graph
