#include <algorithm>
#include <map>
#include <optional>

#include "errors.h"
#include "node_cost.h"
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

size_t first_device_running(const Program& program, const Node& node) {
  const OpVariant variant = variant_of_node(program.graph, node);
  for (size_t d = 0; d < program.devices.size(); ++d)
    if (device_runs(*program.devices[d], variant)) return d;
  return program.devices.size();
}

namespace {

[[noreturn]] void fail_unplaced(const Program& program, const Node& node) {
  std::string devices;
  for (const Device* device : program.devices)
    devices +=
        (devices.empty() ? "" : ", ") + std::to_string(device->index) + " (" + device->name + ")";
  fail(PHX_STATUS_UNSUPPORTED, "node '" + node.name + "': no device of the executable (" + devices +
                                   ") implements " +
                                   variant_text(variant_of_node(program.graph, node)));
}

// PHX_PLACEMENT_COST: node by node, the device of least predicted time plus the copies
// the choice makes (its inputs from where they were computed, its graph outputs back to
// the executable's device); the first such device on a tie.
class CostPlacement {
 public:
  explicit CostPlacement(Program& program) : p_(program), home_(program.graph.values.size(), 0) {}

  size_t choose(size_t n) {
    const Node& node = p_.nodes[n];
    size_t best = p_.devices.size();
    double best_ns = 0;
    for (size_t d = 0; d < p_.devices.size(); ++d) {
      if (!device_takes(p_, d, n)) continue;
      const uint64_t predicted = p_.predicted_ns[d][n];
      double ns = predicted == UINT64_MAX ? 1e300 : double(predicted);
      for (phx_value v : unique_inputs(node))
        if (p_.graph.values[v].kind != PHX_VALUE_CONSTANT && home_[v] != d)
          ns += copy(home_[v], d).time_ns(bytes(v));
      for (phx_value v : node.outputs)
        if (d != 0 && is_graph_output(v)) ns += copy(d, 0).time_ns(bytes(v));
      if (best == p_.devices.size() || ns < best_ns) {
        best = d;
        best_ns = ns;
      }
    }
    if (best < p_.devices.size())
      for (phx_value v : node.outputs) home_[v] = static_cast<uint32_t>(best);
    return best;
  }

 private:
  std::vector<phx_value> unique_inputs(const Node& node) const {
    std::vector<phx_value> inputs;
    for (phx_value v : node.inputs)
      if (v != PHX_VALUE_NONE && std::find(inputs.begin(), inputs.end(), v) == inputs.end())
        inputs.push_back(v);
    return inputs;
  }
  uint64_t bytes(phx_value v) const {
    return element_count(p_.assessed[v]) * phx_dtype_size(p_.assessed[v].dtype);
  }
  bool is_graph_output(phx_value v) const {
    return std::find(p_.graph.outputs.begin(), p_.graph.outputs.end(), v) != p_.graph.outputs.end();
  }
  const CopyCost& copy(size_t from, size_t to) {
    auto [it, added] = copies_.try_emplace({from, to});
    if (added)
      it->second = copy_cost(*p_.graph.context, *p_.devices[from], *p_.devices[to],
                             (p_.flags & PHX_COMPILE_DETERMINISTIC) != 0);
    return it->second;
  }

  Program& p_;
  std::vector<uint32_t> home_;  // per value: the device that computes or holds it
  std::map<std::pair<size_t, size_t>, CopyCost> copies_;
};

size_t first_device_taking(const Program& program, size_t n) {
  for (size_t d = 0; d < program.devices.size(); ++d)
    if (device_takes(program, d, n)) return d;
  return program.devices.size();
}

}  // namespace

void place_nodes(Program& program) {
  const size_t nodes = program.nodes.size();
  program.placement.assign(nodes, 0);
  program.placed_time_ns.assign(nodes, 0);
  program.placed_by_claim.assign(nodes, false);
  std::optional<CostPlacement> cost;
  if (program.policy == PHX_PLACEMENT_COST) cost.emplace(program);
  for (size_t n = 0; n < nodes; ++n) {
    if (!program.live[n]) continue;
    const Node& node = program.nodes[n];
    const size_t d = cost ? cost->choose(n) : first_device_taking(program, n);
    if (d == program.devices.size()) fail_unplaced(program, node);
    program.placement[n] = static_cast<uint32_t>(d);
    if (cost && program.predicted_ns[d][n] != UINT64_MAX)
      program.placed_time_ns[n] = program.predicted_ns[d][n];
    program.placed_by_claim[n] =
        !device_runs(*program.devices[d], variant_of_node(program.graph, node));
  }
}

}  // namespace phx::graph
