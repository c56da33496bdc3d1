#include "native_part.h"

#include <algorithm>

#include "errors.h"
#include "op_figures.h"

namespace phx::graph {
namespace {

bool same_slot(Slot a, Slot b) { return a.kind == b.kind && a.index == b.index; }

// The index of slot among values, added when it is new.
uint32_t value_index(std::vector<Slot>& values, Slot slot) {
  for (size_t v = 0; v < values.size(); ++v)
    if (same_slot(values[v], slot)) return static_cast<uint32_t>(v);
  values.push_back(slot);
  return static_cast<uint32_t>(values.size() - 1);
}

// What a slot is to the part: an intermediate of the executable that the part reads
// before it writes it is an input, one a step after the part reads is an output.
phx_plugin_value_kind kind_in_part(Slot slot, const std::vector<Step>& steps,
                                   const PartSpan& span) {
  switch (slot.kind) {
    case Slot::input:
      return PHX_PLUGIN_VALUE_INPUT;
    case Slot::output:
      return PHX_PLUGIN_VALUE_OUTPUT;
    case Slot::constant:
      return PHX_PLUGIN_VALUE_CONSTANT;
    case Slot::intermediate:
    case Slot::none:
      break;
  }
  auto touches = [&](const std::vector<Slot>& slots) {
    return std::any_of(slots.begin(), slots.end(), [&](Slot s) { return same_slot(s, slot); });
  };
  const size_t end = span.first + span.count;
  for (size_t k = span.first; k < end; ++k) {
    if (touches(steps[k].outputs)) break;
    if (touches(steps[k].inputs)) return PHX_PLUGIN_VALUE_INPUT;
  }
  for (size_t k = 0; k < steps.size(); ++k)
    if ((k < span.first || k >= end) && touches(steps[k].inputs)) return PHX_PLUGIN_VALUE_OUTPUT;
  return PHX_PLUGIN_VALUE_INTERMEDIATE;
}

phx_plugin_tensor unbound_tensor(const Operand& operand) {
  phx_plugin_tensor tensor{};
  tensor.struct_size = sizeof tensor;
  tensor.dtype = operand.dtype;
  tensor.rank = operand.rank;
  std::copy(operand.shape, operand.shape + PHX_MAX_RANK, tensor.shape);
  return tensor;
}

}  // namespace

std::unique_ptr<NativePart> NativePart::compile(Context& context, Device& device,
                                                const PartSpan& span, const PartContext& part) {
  const std::vector<Step>& steps = *part.steps;
  std::unique_ptr<NativePart> native(new NativePart(context, device, span));
  std::vector<std::vector<uint32_t>> wiring;  // per node: inputs, then outputs
  std::vector<phx_plugin_node> nodes;
  for (size_t k = span.first; k < span.first + span.count; ++k) {
    std::vector<uint32_t>& ids = wiring.emplace_back();
    for (Slot slot : steps[k].inputs)
      ids.push_back(slot.kind == Slot::none ? PHX_PLUGIN_NO_VALUE
                                            : value_index(native->values_, slot));
    for (Slot slot : steps[k].outputs) ids.push_back(value_index(native->values_, slot));
  }
  for (size_t n = 0; n < span.count; ++n) {
    const Step& step = steps[span.first + n];
    phx_plugin_node node{};
    node.struct_size = sizeof node;
    node.op = step.op;
    node.params = step.params_ptr();
    node.inputs = wiring[n].data();
    node.input_count = step.inputs.size();
    node.outputs = wiring[n].data() + step.inputs.size();
    node.output_count = step.outputs.size();
    node.name = step.name.c_str();
    nodes.push_back(node);
  }
  std::vector<std::string> names;
  names.reserve(native->values_.size());  // the values' name pointers stay put
  std::vector<phx_plugin_value> values;
  for (Slot slot : native->values_) {
    phx_plugin_value value{};
    value.struct_size = sizeof value;
    value.kind = kind_in_part(slot, steps, span);
    const Operand operand = part.operand(slot);
    value.dtype = operand.dtype;
    value.rank = operand.rank;
    std::copy(operand.shape, operand.shape + PHX_MAX_RANK, value.shape);
    value.tensor = unbound_tensor(operand);
    if (value.kind == PHX_PLUGIN_VALUE_CONSTANT) {
      value.tensor = part.constant(slot)->plugin_view();
      if (part.fixed_constant(slot)) value.flags |= PHX_PLUGIN_VALUE_CONTENTS_FIXED;
    }
    value.name = names.emplace_back(part.name(slot)).c_str();
    values.push_back(value);
  }

  std::vector<phx_plugin_value_range> ranges;
  if (part.range)
    for (Slot slot : native->values_) ranges.push_back(part.range(slot));

  phx_plugin_graph graph{};
  graph.struct_size = sizeof graph;
  graph.values = values.data();
  graph.value_count = values.size();
  graph.nodes = nodes.data();
  graph.node_count = nodes.size();
  graph.flags = part.flags;
  graph.value_ranges = ranges.empty() ? nullptr : ranges.data();
  graph.serialized = part.serialized;
  graph.serialized_size = part.serialized_size;
  Plugin& plugin = *device.plugin;
  try {
    plugin.call("graph_compile", device.index, [&] {
      return plugin.api().graph_compile(plugin.instance(), device.local_index, &graph,
                                        &native->executable_);
    });
  } catch (const Error& e) {
    native->executable_ = nullptr;
    if (e.status() != PHX_STATUS_UNSUPPORTED) throw;
    for (size_t k = span.first; k < span.first + span.count; ++k)
      if (steps[k].claimed)
        fail(PHX_STATUS_PLUGIN_ERROR, "device " + std::to_string(device.index) +
                                          ": graph_compile declined a part with node '" +
                                          steps[k].name +
                                          "', which it claimed (graph_claim): " + e.what());
    context.logger->debug(
        "device {}: graph_compile declined {} nodes ({}); they run one "
        "by one",
        device.index, span.count, e.what());
    return nullptr;
  }
  return native;
}

NativePart::~NativePart() {
  if (executable_ == nullptr) return;
  try {
    device_.wait_for_streams();
  } catch (const Error& e) {
    // The device failed; its runs are over either way, and the executable is freed.
    context_.logger->warn("device {}: waiting before executable_destroy: {}", device_.index,
                          e.what());
  }
  Plugin& plugin = *device_.plugin;
  plugin.call_void("executable_destroy",
                   [&] { plugin.api().executable_destroy(plugin.instance(), executable_); });
}

uint64_t NativePart::run(Stream& stream, const std::vector<Step>& steps,
                         const std::function<const Tensor*(Slot)>& tensor_at) const {
  std::vector<phx_plugin_tensor> bound;
  bound.reserve(values_.size());
  for (Slot slot : values_) bound.push_back(tensor_at(slot)->plugin_view());
  auto describe_node = [&](size_t n, ProfileEntry& record) {
    const Step& step = steps[span_.first + n];
    const Tensor* in[kMaxOpInputs] = {};
    const Tensor* out[kMaxOpOutputs] = {};
    for (size_t i = 0; i < step.inputs.size(); ++i)
      if (step.inputs[i].kind != Slot::none) in[i] = tensor_at(step.inputs[i]);
    for (size_t o = 0; o < step.outputs.size(); ++o) out[o] = tensor_at(step.outputs[o]);
    record.op = step.op;
    describe_operands(record, in, step.inputs.size(), out, step.outputs.size());
    record.node = step.name;
    const OpCounts figures =
        op_figures(step.op, step.params_ptr(), in, step.inputs.size(), out, step.outputs.size());
    record.flops = figures.flops;
    record.bytes = figures.bytes;
  };
  return stream.run_executable(executable_, bound.data(), bound.size(), span_.count, describe_node);
}

std::vector<phx_metric> NativePart::stats() const {
  Plugin& plugin = *device_.plugin;
  if (plugin.api().executable_stats == nullptr) return {};
  size_t count = 0;
  plugin.call("executable_stats", device_.index, [&] {
    return plugin.api().executable_stats(plugin.instance(), executable_, nullptr, 0, &count);
  });
  std::vector<phx_metric> metrics(count);
  plugin.call("executable_stats", device_.index, [&] {
    return plugin.api().executable_stats(plugin.instance(), executable_, metrics.data(),
                                         metrics.size(), &count);
  });
  metrics.resize(std::min(count, metrics.size()));
  for (phx_metric& metric : metrics)
    if (metric.name == nullptr) metric.name = "(unnamed)";
  return metrics;
}

std::vector<unsigned char> NativePart::serialize() const {
  Plugin& plugin = *device_.plugin;
  if (plugin.api().executable_serialize == nullptr) return {};
  size_t size = 0;
  plugin.call("executable_serialize", device_.index, [&] {
    return plugin.api().executable_serialize(plugin.instance(), executable_, nullptr, 0, &size);
  });
  std::vector<unsigned char> bytes(size);
  plugin.call("executable_serialize", device_.index, [&] {
    return plugin.api().executable_serialize(plugin.instance(), executable_, bytes.data(),
                                             bytes.size(), &size);
  });
  if (size != bytes.size())
    fail(PHX_STATUS_PLUGIN_ERROR,
         "device " + std::to_string(device_.index) + ": executable_serialize gave two sizes (" +
             std::to_string(bytes.size()) + ", then " + std::to_string(size) + ")");
  return bytes;
}

phx_dtype NativePart::compute_dtype(size_t n) const {
  Plugin& plugin = *device_.plugin;
  if (plugin.api().executable_node_report == nullptr) return PHX_DTYPE_INVALID;
  phx_plugin_node_report report{};
  report.struct_size = sizeof report;
  report.compute_dtype = PHX_DTYPE_INVALID;
  plugin.call("executable_node_report", device_.index, [&] {
    return plugin.api().executable_node_report(plugin.instance(), executable_, n, &report);
  });
  return report.compute_dtype;
}

}  // namespace phx::graph
