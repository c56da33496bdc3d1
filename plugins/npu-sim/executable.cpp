#include "executable.h"

#include <algorithm>
#include <cstring>

#include "host_buffers.h"
#include "node_cost.h"
#include "profiles.h"

namespace phx::npu_sim {
namespace {

// A constant's elements, read from its buffer (the plugin's own: host memory).
std::vector<float> read_constant(const phx_plugin_value& v) {
  std::vector<float> values(phx_plugin_element_count(v.rank, v.shape));
  plugin_common::host_buffer_read(nullptr, v.tensor.buffer, v.tensor.offset, values.data(),
                                  values.size() * sizeof(float));
  return values;
}

// Quantizes the weights and bias of node (a quantized matmul or conv2d) with the
// calibration ranges of its input and output. False with error on a non-finite constant.
bool quantize_product(const phx_plugin_graph& graph, const phx_plugin_node& node,
                      QuantizedProduct& q, std::string& error) {
  const phx_plugin_value& w = graph.values[node.inputs[1]];
  q.input = activation_params(graph.value_ranges[node.inputs[0]], q.activations);
  q.output = activation_params(graph.value_ranges[node.outputs[0]], q.activations);
  q.weight_rank = w.rank;
  std::copy(w.shape, w.shape + PHX_MAX_RANK, q.weight_shape);
  auto non_finite = [&](const phx_plugin_value& v) {
    error = "node '" + std::string(node.name) + "': constant '" + v.name +
            "' holds a non-finite value, which cannot be quantized";
    return false;
  };
  if (!quantize_weights(read_constant(w), w.shape, w.rank, weight_channel_axis(node), q.weights))
    return non_finite(w);
  if (node.input_count > 2 && node.inputs[2] != PHX_PLUGIN_NO_VALUE) {
    const phx_plugin_value& bias = graph.values[node.inputs[2]];
    if (!quantize_bias(read_constant(bias), q.input.scale, q.weights.scales, q.bias))
      return non_finite(bias);
  }
  return true;
}

void copy_node(const phx_plugin_graph& graph, const phx_plugin_node& node, ExecutableNode& out) {
  out.op = node.op;
  const OpSchema* schema = find_op_schema(node.op);
  const size_t size = schema != nullptr ? params_struct_size(schema->params) : 0;
  out.has_params = node.params != nullptr && size > 0;
  if (out.has_params) std::memcpy(&out.params, node.params, size);
  out.inputs.assign(node.inputs, node.inputs + node.input_count);
  out.outputs.assign(node.outputs, node.outputs + node.output_count);
  out.name = node.name;
  const bool has_first = node.input_count > 0 && node.inputs[0] != PHX_PLUGIN_NO_VALUE;
  out.own_dtype = has_first ? graph.values[node.inputs[0]].dtype : PHX_DTYPE_INVALID;
}

void add_cost(Estimate& total, const Estimate& e) {
  total.macs += e.macs;
  total.cycles += e.cycles;
  total.dram_bytes += e.dram_bytes;
  total.compute_ns += e.compute_ns;
  total.memory_ns += e.memory_ns;
  total.estimated_ns += e.estimated_ns;
}

}  // namespace

size_t Executable::nodes_computed(NodeCompute compute) const {
  return size_t(std::count_if(nodes.begin(), nodes.end(),
                              [&](const ExecutableNode& n) { return n.compute == compute; }));
}

phx_dtype Executable::compute_dtype(size_t node) const {
  switch (nodes[node].compute) {
    case NodeCompute::kInt8:
      return PHX_DTYPE_I8;
    case NodeCompute::kInt16:
      return PHX_DTYPE_I16;
    case NodeCompute::kF16:
      return PHX_DTYPE_F16;
    default:
      return nodes[node].own_dtype;
  }
}

phx_status compile_executable(const phx_plugin_graph& graph, uint32_t device,
                              const DeviceFigures& figures, const Machine& machine,
                              std::unique_ptr<Executable>& out, std::string& error) {
  auto executable = std::make_unique<Executable>();
  executable->device = device;
  executable->value_count = graph.value_count;
  executable->nodes.resize(graph.node_count);
  for (size_t n = 0; n < graph.node_count; ++n) {
    const NodeChoice choice = choose_compute(graph, n, figures);
    if (!choice.runs) {
      error = choice.reason;
      return PHX_STATUS_UNSUPPORTED;
    }
    ExecutableNode& node = executable->nodes[n];
    copy_node(graph, graph.nodes[n], node);
    node.compute = choice.compute;
    if (node.compute == NodeCompute::kInt8 || node.compute == NodeCompute::kInt16) {
      node.product.activations = node.compute == NodeCompute::kInt16 ? PHX_DTYPE_I16 : PHX_DTYPE_I8;
      if (!quantize_product(graph, graph.nodes[n], node.product, error))
        return PHX_STATUS_INVALID_ARGUMENT;
      executable->quantized_weight_bytes += node.product.weights.values.size();
    }
    node.cost = estimate_node(graph, n, node.compute, machine);
    add_cost(executable->run_cost, node.cost);
  }
  out = std::move(executable);
  return PHX_STATUS_OK;
}

}  // namespace phx::npu_sim
