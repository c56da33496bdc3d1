// The compile passes. Each reads the graph and what the passes before it decided, and
// decides one thing; compile.cpp runs them in the order of its list, then lowers what
// they decided into an executable. A new pass is a file here and an entry in that list.
#pragma once

#include <vector>

#include "context.h"
#include "graph.h"

namespace phx::graph {

struct Program {
  const Graph& graph;  // its values; the nodes are the program's own copy
  Device& device;
  uint32_t flags;            // PHX_COMPILE_*
  std::vector<Node> nodes;   // the graph's, as the passes rewrite them
  std::vector<bool> live;    // per node: some output of the graph needs it
  std::vector<bool> folded;  // per node: computed once, at compile time
  size_t fused_nodes = 0;    // nodes absorbed into another (no longer live)
};

using Pass = void (*)(Program&);

// pass_dead_nodes.cpp: a node is live when a graph output is among its outputs or a live
// node reads one of them.
void remove_dead_nodes(Program& program);

// pass_fusion.cpp: a matmul whose only reader adds a bias of its output's shape takes the
// bias, and one whose only reader (after the bias) is relu, gelu or silu takes the
// activation, where the device runs the fused matmul; the absorbed nodes are no longer
// live. Unless PHX_COMPILE_NO_FUSION.
void fuse_matmul_epilogues(Program& program);

// The variant a node asks of a device (phx_device_supports_op's question).
OpVariant variant_of_node(const Graph& graph, const Node& node);

// pass_device_support.cpp: every live node runs on the device (phx_device_supports_op's
// answer), else UNSUPPORTED naming the node.
void check_device_support(Program& program);

// pass_constant_folding.cpp: a live node whose inputs are all constants (or folded) and
// none of whose outputs is a graph output is folded, unless PHX_COMPILE_NO_CONSTANT_FOLDING.
void fold_constants(Program& program);

}  // namespace phx::graph
