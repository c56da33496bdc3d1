#include <algorithm>

#include "passes.h"

namespace phx::graph {

void remove_dead_nodes(Program& program) {
  const Graph& graph = program.graph;
  std::vector<bool> needed(graph.values.size(), false);
  for (phx_value output : graph.outputs) needed[output] = true;
  program.live.assign(program.nodes.size(), false);
  // Nodes come after the values they read, so one pass from the last node back suffices.
  for (size_t n = program.nodes.size(); n-- > 0;) {
    const Node& node = program.nodes[n];
    if (std::none_of(node.outputs.begin(), node.outputs.end(),
                     [&](phx_value v) { return needed[v]; }))
      continue;
    program.live[n] = true;
    for (phx_value input : node.inputs)
      if (input != PHX_VALUE_NONE) needed[input] = true;
  }
}

}  // namespace phx::graph
