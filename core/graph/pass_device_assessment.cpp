// What each device says of the whole program before placement, as ONNX Runtime asks an
// execution provider for its capability: the nodes it takes into its compiled part
// (graph_claim) and, for PHX_PLACEMENT_COST, its predicted time per node (graph_estimate,
// else the host's roofline).
#include <algorithm>
#include <deque>
#include <map>

#include "errors.h"
#include "node_cost.h"
#include "passes.h"

namespace phx::graph {

// Where 1 for every dynamic dimension breaks a node's rule, the stand-ins graph.cpp checked
// the nodes with: one per name from 4099 up.
std::vector<Operand> assessment_operands(const Program& program) {
  const Graph& graph = program.graph;
  auto shapes_with = [&](auto&& dynamic_size) {
    std::vector<Shape> shapes;
    for (phx_value v : graph.inputs) {
      const Value& value = graph.values[v];
      Shape& shape = shapes.emplace_back(value.shape, value.shape + value.rank);
      for (uint32_t d = 0; d < value.rank; ++d)
        if (shape[d] == PHX_DIM_DYNAMIC) shape[d] = dynamic_size(value.dim_names[d]);
    }
    return shapes;
  };
  if (!program.samples.empty()) {
    std::vector<Shape> shapes;
    for (const Tensor* t : program.samples[0]) shapes.emplace_back(t->shape, t->shape + t->rank);
    return concrete_operands(program, shapes);
  }
  try {
    return concrete_operands(program, shapes_with([](const std::string&) { return 1; }));
  } catch (const Error&) {
    std::map<std::string, int64_t> sizes;
    return concrete_operands(
        program, shapes_with([&](const std::string& name) {
          return sizes.emplace(name, 4099 + 64 * int64_t(sizes.size())).first->second;
        }));
  }
}

namespace {

// The live nodes as a plugin's graph (plugin.h): every value they touch, constants
// without their tensors.
class ProgramView {
 public:
  ProgramView(const Program& program, const std::vector<Operand>& operands) {
    const Graph& graph = program.graph;
    index_.assign(graph.values.size(), PHX_PLUGIN_NO_VALUE);
    for (phx_value v : graph.inputs) add_value(program, operands, v);
    for (size_t n = 0; n < program.nodes.size(); ++n) {
      if (!program.live[n]) continue;
      const Node& node = program.nodes[n];
      std::vector<uint32_t>& in = indices_.emplace_back();
      for (phx_value v : node.inputs)
        in.push_back(v == PHX_VALUE_NONE ? PHX_PLUGIN_NO_VALUE : add_value(program, operands, v));
      std::vector<uint32_t>& out = indices_.emplace_back();
      for (phx_value v : node.outputs) out.push_back(add_value(program, operands, v));
      phx_plugin_node plugin_node{};
      plugin_node.struct_size = sizeof plugin_node;
      plugin_node.op = node.op;
      plugin_node.params = node.params_ptr();
      plugin_node.inputs = in.data();
      plugin_node.input_count = in.size();
      plugin_node.outputs = out.data();
      plugin_node.output_count = out.size();
      plugin_node.name = node.name.c_str();
      nodes_.push_back(plugin_node);
      node_of_.push_back(n);
    }
    graph_.struct_size = sizeof graph_;
    graph_.values = values_.data();
    graph_.value_count = values_.size();
    graph_.nodes = nodes_.data();
    graph_.node_count = nodes_.size();
    if (!program.ranges.empty()) {
      for (phx_value v : value_of_) ranges_.push_back(program.ranges[v]);
      graph_.value_ranges = ranges_.data();
    }
  }

  const phx_plugin_graph& graph() const { return graph_; }
  // The program's node of the view's node k.
  size_t node(size_t k) const { return node_of_[k]; }

 private:
  uint32_t add_value(const Program& program, const std::vector<Operand>& operands, phx_value v) {
    if (index_[v] != PHX_PLUGIN_NO_VALUE) return index_[v];
    const Graph& graph = program.graph;
    const Value& value = graph.values[v];
    phx_plugin_value plugin_value{};
    plugin_value.struct_size = sizeof plugin_value;
    const bool output =
        std::find(graph.outputs.begin(), graph.outputs.end(), v) != graph.outputs.end();
    switch (value.kind) {
      case PHX_VALUE_INPUT:
        plugin_value.kind = PHX_PLUGIN_VALUE_INPUT;
        break;
      case PHX_VALUE_CONSTANT:
        plugin_value.kind = PHX_PLUGIN_VALUE_CONSTANT;
        if (value.tensor == 0) plugin_value.flags = PHX_PLUGIN_VALUE_CONTENTS_FIXED;
        break;
      case PHX_VALUE_NODE_OUTPUT:
        plugin_value.kind = output ? PHX_PLUGIN_VALUE_OUTPUT : PHX_PLUGIN_VALUE_INTERMEDIATE;
        break;
    }
    const Operand& operand = operands[v];
    plugin_value.dtype = operand.dtype;
    plugin_value.rank = operand.rank;
    std::copy(operand.shape, operand.shape + PHX_MAX_RANK, plugin_value.shape);
    plugin_value.tensor.struct_size = sizeof plugin_value.tensor;
    plugin_value.tensor.dtype = operand.dtype;
    plugin_value.tensor.rank = operand.rank;
    std::copy(operand.shape, operand.shape + PHX_MAX_RANK, plugin_value.tensor.shape);
    plugin_value.name = value.name.c_str();
    values_.push_back(plugin_value);
    value_of_.push_back(v);
    return index_[v] = static_cast<uint32_t>(values_.size() - 1);
  }

  std::vector<uint32_t> index_;      // per program value: its index in the view
  std::vector<phx_value> value_of_;  // per view value: the program's
  std::vector<phx_plugin_value> values_;
  std::vector<phx_plugin_value_range> ranges_;
  std::deque<std::vector<uint32_t>> indices_;  // the nodes' input and output lists
  std::vector<phx_plugin_node> nodes_;
  std::vector<size_t> node_of_;
  phx_plugin_graph graph_{};
};

void ask_claims(Program& program, const ProgramView& view) {
  const phx_plugin_graph& graph = view.graph();
  std::vector<uint8_t> claimed(graph.node_count);
  for (size_t d = 0; d < program.devices.size(); ++d) {
    Device& device = *program.devices[d];
    Plugin& plugin = *device.plugin;
    if (plugin.api().graph_claim == nullptr || graph.node_count == 0) continue;
    std::fill(claimed.begin(), claimed.end(), 0);
    plugin.call("graph_claim", device.index, [&] {
      return plugin.api().graph_claim(plugin.instance(), device.local_index, &graph,
                                      claimed.data());
    });
    for (size_t k = 0; k < claimed.size(); ++k)
      if (claimed[k] != 0) program.claimed[d][view.node(k)] = true;
  }
}

void ask_estimates(Program& program, const ProgramView& view,
                   const std::vector<Operand>& operands) {
  const phx_plugin_graph& graph = view.graph();
  std::vector<uint64_t> times(graph.node_count);
  for (size_t d = 0; d < program.devices.size(); ++d) {
    Device& device = *program.devices[d];
    Plugin& plugin = *device.plugin;
    if (plugin.api().graph_estimate != nullptr && graph.node_count != 0) {
      std::fill(times.begin(), times.end(), UINT64_MAX);
      plugin.call("graph_estimate", device.index, [&] {
        return plugin.api().graph_estimate(plugin.instance(), device.local_index, &graph,
                                           times.data());
      });
    } else {
      for (size_t k = 0; k < times.size(); ++k)
        times[k] = roofline_ns(program.nodes[view.node(k)], operands);
    }
    for (size_t k = 0; k < times.size(); ++k) program.predicted_ns[d][view.node(k)] = times[k];
  }
}

}  // namespace

void assess_devices(Program& program) {
  const size_t devices = program.devices.size(), nodes = program.nodes.size();
  program.claimed.assign(devices, std::vector<bool>(nodes, false));
  const bool any_claims =
      std::any_of(program.devices.begin(), program.devices.end(),
                  [](Device* d) { return d->plugin->api().graph_claim != nullptr; });
  const bool cost = program.policy == PHX_PLACEMENT_COST;
  if (!any_claims && !cost) return;
  const std::vector<Operand> operands = assessment_operands(program);
  const ProgramView view(program, operands);
  if (any_claims) ask_claims(program, view);
  if (cost) {
    program.predicted_ns.assign(devices, std::vector<uint64_t>(nodes, UINT64_MAX));
    ask_estimates(program, view, operands);
    program.assessed = operands;
  }
}

}  // namespace phx::graph
