#include "executable.h"

#include <phx/op_table.h>

#include <algorithm>
#include <cstring>

#include "serialized_executable.h"
#include "vk_check.h"

namespace phx::vulkan {
namespace {

// Recordings an executable keeps for reuse: enough for a run in flight while the next
// one records, and a second set of memory (a double-buffered caller).
constexpr size_t kKeptRecordings = 4;

size_t params_bytes(phx_op_id op) {
  const OpSchema* schema = find_op_schema(op);
  return schema != nullptr ? params_struct_size(schema->params) : 0;
}

phx_plugin_tensor value_tensor(const phx_plugin_value& v) {
  phx_plugin_tensor t{};
  t.struct_size = sizeof t;
  t.dtype = v.dtype;
  t.rank = v.rank;
  for (uint32_t i = 0; i < PHX_MAX_RANK; ++i) t.shape[i] = i < v.rank ? v.shape[i] : 1;
  if (v.kind == PHX_PLUGIN_VALUE_CONSTANT) {
    t.buffer = v.tensor.buffer;
    t.offset = v.tensor.offset;
  }
  return t;
}

}  // namespace

Recording::Recording(Device& d) : device(d) {
  auto pool_info = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool_info.queueFamilyIndex = device.queue_family();
  check(vkCreateCommandPool(device.vk(), &pool_info, nullptr, &pool), "vkCreateCommandPool");
  auto info =
      vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  info.commandPool = pool;
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  const VkResult result = vkAllocateCommandBuffers(device.vk(), &info, &commands);
  if (result != VK_SUCCESS) {
    vkDestroyCommandPool(device.vk(), pool, nullptr);
    check(result, "vkAllocateCommandBuffers");
  }
}

Recording::~Recording() {
  resources.destroy(device);
  vkDestroyQueryPool(device.vk(), queries, nullptr);
  vkDestroyCommandPool(device.vk(), pool, nullptr);  // frees the command buffer
}

Executable::Executable(Device& device, const phx_plugin_graph& graph, bool loaded)
    : device_(device), graph_fingerprint_(vulkan::graph_fingerprint(graph)), loaded_(loaded) {
  values_.reserve(graph.value_count);
  for (size_t i = 0; i < graph.value_count; ++i)
    values_.push_back({value_tensor(graph.values[i]), graph.values[i].name});
  nodes_.reserve(graph.node_count);
  for (size_t i = 0; i < graph.node_count; ++i) {
    const phx_plugin_node& n = graph.nodes[i];
    Node node;
    node.op = n.op;
    node.name = n.name;
    node.inputs.assign(n.inputs, n.inputs + n.input_count);
    node.outputs.assign(n.outputs, n.outputs + n.output_count);
    const size_t bytes = params_bytes(n.op);
    if (n.params != nullptr && bytes > 0) {
      std::memcpy(&node.params, n.params, bytes);
      node.has_params = true;
    }
    nodes_.push_back(std::move(node));
  }
  fusion_ = plan_fusion(graph, device.caps());
  prepare();
}

void Executable::make_op(const Node& node, const phx_plugin_tensor* values, NodeOp& out) const {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == PHX_PLUGIN_NO_VALUE) {
      out.inputs[i] = {};
      out.inputs[i].struct_size = sizeof(phx_plugin_tensor);
    } else {
      out.inputs[i] = values[node.inputs[i]];
    }
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) out.outputs[i] = values[node.outputs[i]];
  out.op = {};
  out.op.struct_size = sizeof out.op;
  out.op.op = node.op;
  out.op.params = node.has_params ? &node.params : nullptr;
  out.op.inputs = out.inputs;
  out.op.input_count = node.inputs.size();
  out.op.outputs = out.outputs;
  out.op.output_count = node.outputs.size();
}

bool Executable::node_has_figures(size_t i) const {
  const int c = fusion_.chain_of_node[i];
  return c < 0 || fusion_.chains[c].nodes.back() == i;
}

uint32_t Executable::record_chain(CommandRecorder& recorder, const FusedChain& chain,
                                  const phx_plugin_tensor* values,
                                  const Timestamps* timestamps) const {
  phx_plugin_tensor operands[ElementwiseProgram::kMaxOperands];
  for (size_t k = 0; k < chain.operands.size(); ++k) operands[k] = values[chain.operands[k]];
  const phx_plugin_tensor& y = values[chain.output];
  phx_plugin_op op{};
  op.struct_size = sizeof op;
  op.inputs = operands;
  op.input_count = chain.operands.size();
  op.outputs = &y;
  op.output_count = 1;
  const Access access = op_access(op);
  if (!overlaps_shifted(access.writes, access.reads)) {
    recorder.record(access, timestamps, [&](OpRecorder& r) {
      record_elementwise_program(r, chain.program, operands, y);
    });
    return recorder.op_dispatches();
  }
  // An invocation would write an element that another one has yet to read: node by node.
  uint32_t dispatches = 0;
  NodeOp node_op;
  for (size_t n : chain.nodes) {
    make_op(nodes_[n], values, node_op);
    recorder.record(node_op.op, n == chain.nodes.back() ? timestamps : nullptr);
    dispatches += recorder.op_dispatches();
  }
  return dispatches;
}

void Executable::record_nodes(CommandRecorder& recorder, const phx_plugin_tensor* values,
                              const Recording* timed,
                              std::vector<uint32_t>& node_dispatches) const {
  node_dispatches.assign(nodes_.size(), 0);
  NodeOp op;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!node_has_figures(i)) continue;  // a later node runs it
    const Timestamps timestamps{timed != nullptr ? timed->queries : VK_NULL_HANDLE,
                                uint32_t(2 * i)};
    const int chain = fusion_.chain_of_node[i];
    try {
      if (chain >= 0) {
        node_dispatches[i] = record_chain(recorder, fusion_.chains[chain], values,
                                          timed != nullptr ? &timestamps : nullptr);
      } else {
        make_op(nodes_[i], values, op);
        recorder.record(op.op, timed != nullptr ? &timestamps : nullptr);
        node_dispatches[i] = recorder.op_dispatches();
      }
    } catch (const Error& e) {
      const std::string what = chain < 0 ? "node '" + nodes_[i].name + "'"
                                         : "the fused nodes '" +
                                               nodes_[fusion_.chains[chain].nodes.front()].name +
                                               "' to '" + nodes_[i].name + "'";
      throw Error{e.status(), what + ": " + e.what()};
    }
  }
}

// Every node once without a command buffer, on memory of its own for each value that is
// not a constant (blocks that exist only here, so that the hazards between nodes are
// those of their values): the pipelines are made (and their keys kept, for a serialized
// executable), the limits checked, and the kernels and barriers of a run on distinct
// memory counted.
void Executable::prepare() {
  std::vector<MemoryBlock> blocks(values_.size());
  std::vector<Allocation> allocations(values_.size());
  std::vector<phx_plugin_tensor> tensors(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) {
    tensors[i] = values_[i].tensor;
    if (tensors[i].buffer == nullptr) {
      allocations[i].block = &blocks[i];
      tensors[i].buffer = &allocations[i];
    }
  }
  RecordResources resources;
  HazardTracker hazards;
  CommandRecorder recorder(device_, VK_NULL_HANDLE, resources, hazards);
  recorder.collect_kernels(&kernel_keys_);
  std::vector<uint32_t> node_dispatches;
  record_nodes(recorder, tensors.data(), nullptr, node_dispatches);
  std::sort(kernel_keys_.begin(), kernel_keys_.end());
  kernel_keys_.erase(std::unique(kernel_keys_.begin(), kernel_keys_.end()), kernel_keys_.end());
  kernels_per_run_ = 0;
  for (uint32_t d : node_dispatches) kernels_per_run_ += d;
  barriers_per_run_ = recorder.barriers();
}

std::shared_ptr<Recording> Executable::prepare_run(const phx_plugin_tensor* values, bool timed) {
  std::vector<BoundValue> bindings(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) {
    const auto* a = static_cast<const Allocation*>(values[i].buffer);
    if (a != nullptr) bindings[i] = {a->block, a->offset + values[i].offset};
  }
  const uint64_t blocks_destroyed = device_.memory().blocks_destroyed();
  std::lock_guard lock(mutex_);
  ++runs_;
  std::shared_ptr<Recording> chosen;  // the least recently run of those not in flight
  for (const auto& r : recordings_) {
    if (r->in_flight) continue;
    if (r->recorded && r->timed == timed && r->bindings == bindings &&
        r->blocks_destroyed == blocks_destroyed) {
      r->in_flight = true;
      r->last_run = runs_;
      return r;
    }
    if (!chosen || r->last_run < chosen->last_run) chosen = r;
  }
  if (!chosen || recordings_.size() < kKeptRecordings) {
    chosen = std::make_shared<Recording>(device_);
    // Past the kept ones (every one in flight), this one is the submitting batch's only.
    if (recordings_.size() < kKeptRecordings) recordings_.push_back(chosen);
  }
  chosen->in_flight = true;
  try {
    record(*chosen, values, timed);
  } catch (...) {
    chosen->in_flight = false;
    throw;
  }
  chosen->last_run = runs_;
  chosen->bindings = std::move(bindings);
  chosen->blocks_destroyed = blocks_destroyed;
  chosen->recorded = true;
  return chosen;
}

void Executable::record(Recording& r, const phx_plugin_tensor* values, bool timed) {
  r.recorded = false;
  check(vkResetCommandPool(device_.vk(), r.pool, 0), "vkResetCommandPool");
  r.resources.reset(device_);
  const uint32_t queries = uint32_t(2 * nodes_.size());
  if (timed && r.query_count < queries) {
    vkDestroyQueryPool(device_.vk(), r.queries, nullptr);
    r.queries = VK_NULL_HANDLE;
    r.query_count = 0;
    auto info = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = queries;
    check(vkCreateQueryPool(device_.vk(), &info, nullptr, &r.queries), "vkCreateQueryPool");
    r.query_count = queries;
  }
  auto begin = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  check(vkBeginCommandBuffer(r.commands, &begin), "vkBeginCommandBuffer");
  HazardTracker hazards;  // waits for everything before the first node
  CommandRecorder recorder(device_, r.commands, r.resources, hazards);
  record_nodes(recorder, values, timed ? &r : nullptr, r.node_dispatches);
  record_host_barrier(r.commands);
  check(vkEndCommandBuffer(r.commands), "vkEndCommandBuffer");
  r.dispatches = 0;
  for (uint32_t d : r.node_dispatches) r.dispatches += d;
  r.barriers = recorder.barriers();
  r.timed = timed;
  kernels_per_run_ = r.dispatches;
  barriers_per_run_ = r.barriers;
  ++recordings_made_;
}

std::vector<phx_metric> Executable::stats() const {
  size_t fused_nodes = 0;
  for (const FusedChain& chain : fusion_.chains) fused_nodes += chain.nodes.size();
  std::lock_guard lock(mutex_);
  return {
      {"nodes", double(nodes_.size())},
      {"fused_nodes", double(fused_nodes)},
      {"kernels_per_run", double(kernels_per_run_)},
      {"barriers_per_run", double(barriers_per_run_)},
      {"runs", double(runs_)},
      {"recordings", double(recordings_made_)},
      {"loaded_from_serialized", loaded_ ? 1.0 : 0.0},
  };
}

}  // namespace phx::vulkan
