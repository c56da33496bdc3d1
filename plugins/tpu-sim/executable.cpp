#include "executable.h"

#include <phx/op_table.h>

#include <cmath>
#include <cstring>

#include "compile_cache.h"

namespace phx::tpu_sim {
namespace {

// The size of an op's parameter struct in plugin.h's layout; 0 for an op without
// parameters, SIZE_MAX for an op the plugin does not know or does not claim (the
// quantized ops).
size_t params_size(phx_op_id op) {
  const OpSchema* schema = find_op_schema(op);
  if (schema == nullptr || is_quantized_op(*schema)) return SIZE_MAX;
  return params_struct_size(schema->params);
}

// The cost model reads a tensor's dtype, its shape and whether it is present (buffer not
// null), never its contents: at compile time, before any run binds the values, every
// value is priced through a tensor that points here.
char shape_only_marker;

std::vector<phx_plugin_tensor> shape_only_tensors(const phx_plugin_graph& graph) {
  std::vector<phx_plugin_tensor> tensors(graph.value_count);
  for (size_t i = 0; i < graph.value_count; ++i) {
    const phx_plugin_value& v = graph.values[i];
    phx_plugin_tensor& t = tensors[i];
    t.struct_size = sizeof t;
    t.buffer = &shape_only_marker;
    t.dtype = v.dtype;
    t.rank = v.rank;
    std::memcpy(t.shape, v.shape, sizeof t.shape);
  }
  return tensors;
}

// Copies node into out; false with error when the plugin cannot run it.
bool copy_node(const phx_plugin_node& node, ExecutableNode& out, std::string& error) {
  const size_t size = params_size(node.op);
  if (node.input_count > kMaxNodeInputs || node.output_count < 1 ||
      node.output_count > kMaxNodeOutputs || size == SIZE_MAX) {
    error = "node '" + std::string(node.name) + "': op " + std::to_string(node.op) + " with " +
            std::to_string(node.input_count) + " inputs and " + std::to_string(node.output_count) +
            " outputs is no op tpu-sim compiles";
    return false;
  }
  out.op = node.op;
  out.has_params = node.params != nullptr && size > 0;
  if (out.has_params) std::memcpy(&out.params, node.params, size);
  out.inputs.assign(node.inputs, node.inputs + node.input_count);
  out.outputs.assign(node.outputs, node.outputs + node.output_count);
  out.name = node.name;
  return true;
}

// Copies graph's nodes into a new executable whose costs are still to be set.
std::unique_ptr<Executable> copy_graph(const phx_plugin_graph& graph, uint32_t device,
                                       std::string& error) {
  auto executable = std::make_unique<Executable>();
  executable->device = device;
  executable->value_count = graph.value_count;
  executable->nodes.resize(graph.node_count);
  for (size_t n = 0; n < graph.node_count; ++n)
    if (!copy_node(graph.nodes[n], executable->nodes[n], error)) return nullptr;
  return executable;
}

void add_cost(RunCost& total, const OpCost& cost) {
  total.mxu_nodes += cost.uses_mxu ? 1 : 0;
  total.mxu_cycles += cost.mxu.cycles;
  total.vector_cycles += cost.vector_cycles;
  total.hbm_bytes += cost.hbm_bytes;
  total.modelled_time_ns += cost.estimated_time_ns;
}

}  // namespace

std::unique_ptr<Executable> build_executable(const phx_plugin_graph& graph, uint32_t device,
                                             const SimConfig& config, std::string& error) {
  std::unique_ptr<Executable> executable = copy_graph(graph, device, error);
  if (executable == nullptr) return nullptr;
  const std::vector<phx_plugin_tensor> tensors = shape_only_tensors(graph);
  for (ExecutableNode& node : executable->nodes) {
    const BoundNode bound(node, tensors.data());
    node.cost = cost_op(bound.op(), config);
    add_cost(executable->run_cost, node.cost);
  }
  return executable;
}

std::unique_ptr<Executable> restore_executable(const phx_plugin_graph& graph, uint32_t device,
                                               std::span<const OpCost> costs, std::string& error) {
  if (costs.size() != graph.node_count) {
    error = "the serialized model has " + std::to_string(costs.size()) +
            " node costs for a graph of " + std::to_string(graph.node_count) + " nodes";
    return nullptr;
  }
  std::unique_ptr<Executable> executable = copy_graph(graph, device, error);
  if (executable == nullptr) return nullptr;
  for (size_t n = 0; n < costs.size(); ++n) {
    executable->nodes[n].cost = costs[n];
    add_cost(executable->run_cost, costs[n]);
  }
  executable->loaded_from_serialized = true;
  return executable;
}

std::vector<uint64_t> estimate_nodes(const phx_plugin_graph& graph, const SimConfig& config) {
  const std::vector<phx_plugin_tensor> tensors = shape_only_tensors(graph);
  std::vector<uint64_t> times(graph.node_count, UINT64_MAX);
  std::string error;
  for (size_t n = 0; n < graph.node_count; ++n) {
    ExecutableNode node;
    if (!copy_node(graph.nodes[n], node, error)) continue;
    const BoundNode bound(node, tensors.data());
    times[n] = static_cast<uint64_t>(std::ceil(cost_op(bound.op(), config).estimated_time_ns));
  }
  return times;
}

double modelled_program_compile_time_ns(const Executable& executable) {
  double total = 0;
  for (const ExecutableNode& node : executable.nodes)
    total += modelled_compile_time_ns(node.cost.uses_mxu);
  return total;
}

BoundNode::BoundNode(const ExecutableNode& node, const phx_plugin_tensor* values) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] != PHX_PLUGIN_NO_VALUE) {
      inputs_[i] = values[node.inputs[i]];
    } else {  // absent: a null buffer, as the host passes it to stream_submit
      inputs_[i].struct_size = sizeof(phx_plugin_tensor);
    }
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) outputs_[i] = values[node.outputs[i]];
  op_.struct_size = sizeof op_;
  op_.op = node.op;
  op_.params = node.has_params ? &node.params : nullptr;
  op_.inputs = inputs_;
  op_.input_count = node.inputs.size();
  op_.outputs = outputs_;
  op_.output_count = node.outputs.size();
}

}  // namespace phx::tpu_sim
