// The compile passes. Each reads the graph and what the passes before it decided, and
// decides one thing; compile.cpp runs them in the order of its list, then lowers what
// they decided into an executable. A new pass is a file here and an entry in that list.
#pragma once

#include <vector>

#include "context.h"
#include "graph.h"

namespace phx::graph {

struct Program {
  const Graph& graph;
  Device& device;
  uint32_t flags;            // PHX_COMPILE_*
  std::vector<bool> live;    // per node: some output of the graph needs it
  std::vector<bool> folded;  // per node: computed once, at compile time
};

using Pass = void (*)(Program&);

// pass_dead_nodes.cpp: a node is live when a graph output is among its outputs or a live
// node reads one of them.
void remove_dead_nodes(Program& program);

// pass_device_support.cpp: every live node runs on the device (phx_device_supports_op's
// answer), else UNSUPPORTED naming the node.
void check_device_support(Program& program);

// pass_constant_folding.cpp: a live node whose inputs are all constants (or folded) and
// none of whose outputs is a graph output is folded, unless PHX_COMPILE_NO_CONSTANT_FOLDING.
void fold_constants(Program& program);

}  // namespace phx::graph
