#include "fusion.h"

#include <algorithm>
#include <cstddef>

namespace phx::vulkan {
namespace {

bool same_shape(const phx_plugin_value& a, const phx_plugin_value& b) {
  return a.rank == b.rank && std::equal(a.shape, a.shape + a.rank, b.shape);
}

bool is_elementwise_op(phx_op_id op) {
  switch (op) {
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_DIV:
    case PHX_OP_RELU:
    case PHX_OP_GELU:
    case PHX_OP_SILU:
      return true;
    default:
      return false;
  }
}

// An elementwise f32 node whose operands all have its output's shape, small enough for
// one dispatch (256 invocations per workgroup) with every tensor in one binding.
bool fusable(const phx_plugin_graph& graph, const phx_plugin_node& node, const DeviceCaps& caps) {
  if (!is_elementwise_op(node.op) || node.output_count != 1 || node.input_count == 0) return false;
  const phx_plugin_value& y = graph.values[node.outputs[0]];
  if (y.dtype != PHX_DTYPE_F32) return false;
  for (size_t i = 0; i < node.input_count; ++i) {
    if (node.inputs[i] == PHX_PLUGIN_NO_VALUE) return false;
    const phx_plugin_value& x = graph.values[node.inputs[i]];
    if (x.dtype != PHX_DTYPE_F32 || !same_shape(x, y)) return false;
  }
  const uint64_t elements = phx_plugin_element_count(y.rank, y.shape);
  const uint64_t grid = uint64_t(caps.max_workgroup_count[0]) * caps.max_workgroup_count[1] * 256;
  return elements <= grid && elements <= UINT32_MAX &&
         elements * 4 + caps.binding_offset_alignment <= caps.max_binding_bytes;
}

// The node reading value when exactly one node reads it (maybe in both operands), else -1.
std::vector<int> sole_readers(const phx_plugin_graph& graph) {
  std::vector<int> reader(graph.value_count, -1);  // -1 none yet, -2 several
  for (size_t n = 0; n < graph.node_count; ++n) {
    const phx_plugin_node& node = graph.nodes[n];
    for (size_t i = 0; i < node.input_count; ++i) {
      const uint32_t v = node.inputs[i];
      if (v == PHX_PLUGIN_NO_VALUE) continue;
      reader[v] = reader[v] == -1 || reader[v] == int(n) ? int(n) : -2;
    }
  }
  for (int& r : reader) r = std::max(r, -1);
  return reader;
}

// Appends node's step to chain, its inputs other than `from` (the accumulator) as
// operands; false (chain unchanged) when they do not fit.
bool append_step(FusedChain& chain, const phx_plugin_node& node, uint32_t from) {
  uint8_t sources[2] = {};
  std::vector<uint32_t> operands = chain.operands;
  for (size_t i = 0; i < node.input_count; ++i) {
    if (node.inputs[i] == from) {
      sources[i] = ElementwiseProgram::kAccumulator;
      continue;
    }
    auto it = std::find(operands.begin(), operands.end(), node.inputs[i]);
    if (it == operands.end()) it = operands.insert(operands.end(), node.inputs[i]);
    sources[i] = uint8_t(it - operands.begin());
  }
  if (operands.size() > ElementwiseProgram::kMaxOperands ||
      chain.program.steps.size() >= ElementwiseProgram::kMaxSteps)
    return false;
  chain.operands = std::move(operands);
  chain.program.steps.push_back(
      {node.op, sources[0], node.input_count > 1 ? sources[1] : sources[0]});
  chain.program.operand_count = uint32_t(chain.operands.size());
  chain.output = node.outputs[0];
  return true;
}

}  // namespace

FusionPlan plan_fusion(const phx_plugin_graph& graph, const DeviceCaps& caps) {
  FusionPlan plan;
  plan.chain_of_node.assign(graph.node_count, -1);
  const bool no_fusion =
      graph.struct_size >= offsetof(phx_plugin_graph, flags) + sizeof graph.flags &&
      (graph.flags & PHX_PLUGIN_GRAPH_NO_FUSION) != 0;
  if (no_fusion || !runs_elementwise_programs(caps)) return plan;
  const std::vector<int> reader = sole_readers(graph);
  for (size_t first = 0; first < graph.node_count; ++first) {
    if (plan.chain_of_node[first] != -1 || !fusable(graph, graph.nodes[first], caps)) continue;
    FusedChain chain;
    if (!append_step(chain, graph.nodes[first], PHX_PLUGIN_NO_VALUE)) continue;
    chain.nodes.push_back(first);
    for (;;) {
      const uint32_t v = chain.output;
      const int next = reader[v];
      // The next node in order only: the host's memory plan may give an operand's memory,
      // once its last reader has run, to a value that a node in between writes.
      if (graph.values[v].kind != PHX_PLUGIN_VALUE_INTERMEDIATE ||
          next != int(chain.nodes.back()) + 1 || !fusable(graph, graph.nodes[next], caps) ||
          !append_step(chain, graph.nodes[next], v))
        break;
      chain.nodes.push_back(size_t(next));
    }
    if (chain.nodes.size() < 2) continue;
    for (size_t n : chain.nodes) plan.chain_of_node[n] = int(plan.chains.size());
    plan.chains.push_back(std::move(chain));
  }
  return plan;
}

std::vector<std::vector<uint64_t>> chain_nodes(const FusionPlan& plan) {
  std::vector<std::vector<uint64_t>> chains;
  for (const FusedChain& chain : plan.chains)
    chains.emplace_back(chain.nodes.begin(), chain.nodes.end());
  return chains;
}

}  // namespace phx::vulkan
