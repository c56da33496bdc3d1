#include "errors.h"
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

void place_nodes(Program& program) {
  program.placement.assign(program.nodes.size(), 0);
  for (size_t n = 0; n < program.nodes.size(); ++n) {
    if (!program.live[n]) continue;
    const Node& node = program.nodes[n];
    const size_t d = first_device_running(program, node);
    if (d < program.devices.size()) {
      program.placement[n] = static_cast<uint32_t>(d);
      continue;
    }
    std::string devices;
    for (const Device* device : program.devices)
      devices +=
          (devices.empty() ? "" : ", ") + std::to_string(device->index) + " (" + device->name + ")";
    fail(PHX_STATUS_UNSUPPORTED, "node '" + node.name + "': no device of the executable (" +
                                     devices + ") implements " +
                                     variant_text(variant_of_node(program.graph, node)));
  }
}

}  // namespace phx::graph
