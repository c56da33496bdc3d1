// A part of a consumer's graph compiled for one Vulkan device (plugin.h, "Executables").
// The compile copies the graph, fuses its chains of elementwise nodes (fusion.h) and
// prepares every node once (command_recorder.h without a command buffer), which makes
// each pipeline it needs and fails with UNSUPPORTED for a node the device cannot record;
// the host then runs the nodes one by one. A run records
// every node into one command buffer, with barriers only where a node depends on an
// earlier one (hazards.h), which the stream submits as one ticket; a later run whose
// values are in the same memory submits the same command buffer again, unless that one
// is still in flight.
#pragma once

#include <phx/op_table.h>
#include <phynexus/plugin.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "command_recorder.h"
#include "device.h"
#include "fusion.h"

namespace phx::vulkan {

// Where a value's tensor lies: what a recorded command buffer binds.
struct BoundValue {
  const MemoryBlock* block = nullptr;
  uint64_t offset = 0;
  bool operator==(const BoundValue&) const = default;
};

// One command buffer with every node of an executable recorded for some memory, and
// what it uses while it runs. Shared by the executable and the batches that submit it,
// so that it outlives whichever lets go last.
struct Recording {
  explicit Recording(Device& device);  // throws Error
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  Device& device;
  VkCommandPool pool = VK_NULL_HANDLE;  // its own: recorded and freed on any thread
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkQueryPool queries = VK_NULL_HANDLE;  // two timestamps per node, when timed
  uint32_t query_count = 0;
  RecordResources resources;
  bool recorded = false;  // commands hold a complete recording of the fields below
  bool timed = false;
  std::vector<BoundValue> bindings;  // per value
  uint64_t blocks_destroyed = 0;     // the memory pool's count when it was recorded
  std::vector<uint32_t> node_dispatches;
  uint32_t dispatches = 0;
  uint32_t barriers = 0;
  uint64_t last_run = 0;  // the executable's run count when it was last taken
  // Submitted (or about to be) and not yet seen finished by the stream that did.
  std::atomic<bool> in_flight{false};
};

class Executable {
 public:
  // Copies graph and prepares its nodes. Throws Error: UNSUPPORTED for a node the device
  // cannot record (with the node's name), others as the pipelines' creation fails.
  // loaded: made from a serialized executable (reported by stats).
  Executable(Device& device, const phx_plugin_graph& graph, bool loaded = false);
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  Device& device() { return device_; }
  size_t node_count() const { return nodes_.size(); }
  size_t value_count() const { return values_.size(); }
  const FusionPlan& fusion() const { return fusion_; }
  // graph_fingerprint() of the graph it was compiled from (serialized_executable.h).
  uint64_t graph_fingerprint() const { return graph_fingerprint_; }
  // The Kernel::key of every pipeline its runs use, each once.
  const std::vector<std::string>& kernel_keys() const { return kernel_keys_; }
  // Whether node i's figures are its own: false for a node fused into a later one, whose
  // dispatch and time are the later one's.
  bool node_has_figures(size_t i) const;

  // A recording of every node on values (values[i] for value i; value_count of them),
  // with two timestamps around each node when timed, marked in flight: the caller
  // submits it, or clears in_flight if it cannot. One recorded earlier on the same memory
  // and not in flight is taken again; else a new one is recorded, into the least recently
  // run of the kept ones once there are kKeptRecordings. Throws Error (the recording's).
  // Thread-safe.
  std::shared_ptr<Recording> prepare_run(const phx_plugin_tensor* values, bool timed);

  // "nodes", "fused_nodes", "kernels_per_run", "barriers_per_run", "runs", "recordings",
  // "loaded_from_serialized" (docs/vulkan.md).
  // Thread-safe.
  std::vector<phx_metric> stats() const;

 private:
  struct Node {
    phx_op_id op = PHX_OP_INVALID;
    bool has_params = false;
    OpParams params{};                      // copied by the size its op takes
    std::vector<uint32_t> inputs, outputs;  // value indices; PHX_PLUGIN_NO_VALUE: absent
    std::string name;
  };
  struct Value {
    phx_plugin_tensor tensor{};  // the constant's; dtype and shape for the others
    std::string name;
  };
  // The tensors of node i's op on values, in storage that lives while the op is recorded.
  struct NodeOp {
    phx_plugin_tensor inputs[PHX_MAX_OP_INPUTS] = {};
    phx_plugin_tensor outputs[PHX_MAX_OP_OUTPUTS] = {};
    phx_plugin_op op{};
  };
  void make_op(const Node& node, const phx_plugin_tensor* values, NodeOp& out) const;
  // Records chain as one dispatch, or its nodes one by one where its output overlaps an
  // operand other than exactly (fusion.h); returns the dispatches recorded.
  uint32_t record_chain(CommandRecorder& recorder, const FusedChain& chain,
                        const phx_plugin_tensor* values, const Timestamps* timestamps) const;
  // Records node after node into recorder; fills node_dispatches. Throws Error naming the
  // node that failed.
  void record_nodes(CommandRecorder& recorder, const phx_plugin_tensor* values,
                    const Recording* timed, std::vector<uint32_t>& node_dispatches) const;
  void prepare();
  // Records every node into recording's command buffer; the caller sets what it was
  // recorded for and marks it recorded.
  void record(Recording& recording, const phx_plugin_tensor* values, bool timed);

  Device& device_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  FusionPlan fusion_;
  uint64_t graph_fingerprint_ = 0;
  bool loaded_ = false;
  std::vector<std::string> kernel_keys_;

  mutable std::mutex mutex_;  // guards what follows
  std::vector<std::shared_ptr<Recording>> recordings_;
  uint32_t kernels_per_run_ = 0, barriers_per_run_ = 0;
  uint64_t runs_ = 0, recordings_made_ = 0;
};

}  // namespace phx::vulkan
