// Which nodes of a graph's part an executable runs as one dispatch: chains of elementwise
// f32 nodes (add, sub, mul, div, relu, gelu, silu; every operand of the output's shape),
// each node reading the one just before it in the node order, whose intermediates no
// other node reads and no one reads after the run (PHX_PLUGIN_VALUE_INTERMEDIATE). A
// chain runs where its last node did: no other node runs between its nodes, so every
// operand is still in its memory then, whatever the host's memory plan reuses. The output
// may share memory with an operand the chain read last before (the plan reuses it): the
// run then records the chain's nodes one by one unless the two start at the same byte,
// where each element is read before it is written. On lavapipe a
// node costs a dispatch and, in a chain, a barrier (together about 40 us); a fused chain
// costs one of each.
#pragma once

#include <phynexus/plugin.h>

#include <cstdint>
#include <vector>

#include "op_recorder.h"

namespace phx::vulkan {

struct FusedChain {
  std::vector<size_t> nodes;       // in order; the last one's place runs the chain
  ElementwiseProgram program;      // its operands are the values below
  std::vector<uint32_t> operands;  // value indices
  uint32_t output = 0;             // the last node's output
};

struct FusionPlan {
  std::vector<FusedChain> chains;
  // Per node: the chain it belongs to, or -1 when it runs on its own.
  std::vector<int> chain_of_node;
};

// The chains of two nodes or more that fit one dispatch and one binding per tensor on a
// device with caps; none where the device runs no ElementwisePrograms or graph's flags
// say PHX_PLUGIN_GRAPH_NO_FUSION.
FusionPlan plan_fusion(const phx_plugin_graph& graph, const DeviceCaps& caps);

// The nodes of each chain of plan, in order: what a serialized executable keeps of it.
std::vector<std::vector<uint64_t>> chain_nodes(const FusionPlan& plan);

}  // namespace phx::vulkan
