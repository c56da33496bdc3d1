#include <algorithm>

#include "passes.h"

namespace phx::graph {

void fold_constants(Program& program) {
  const Graph& graph = program.graph;
  program.folded.assign(program.nodes.size(), false);
  if ((program.flags & PHX_COMPILE_NO_CONSTANT_FOLDING) != 0) return;
  std::vector<bool> constant(graph.values.size(), false);
  for (size_t v = 0; v < graph.values.size(); ++v)
    constant[v] = graph.values[v].kind == PHX_VALUE_CONSTANT;
  auto is_output = [&](phx_value v) {
    return std::find(graph.outputs.begin(), graph.outputs.end(), v) != graph.outputs.end();
  };
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    const Node& node = program.nodes[n];
    if (!program.live[n] || program.placed_by_claim[n]) continue;
    const bool inputs_constant =
        std::all_of(node.inputs.begin(), node.inputs.end(),
                    [&](phx_value v) { return v == PHX_VALUE_NONE || constant[v]; });
    // A graph output is written by a run into the program's tensor: its node stays.
    if (!inputs_constant || std::any_of(node.outputs.begin(), node.outputs.end(), is_output))
      continue;
    program.folded[n] = true;
    for (phx_value v : node.outputs) constant[v] = true;
  }
}

}  // namespace phx::graph
