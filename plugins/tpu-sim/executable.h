// A graph compiled for a chip (plugin.h, "Executables"): its nodes, with their parameters
// copied, and each node's cost from the op cost model, fixed at compile time because the
// shapes are. A run computes the nodes one after another with the eager ops' code, so its
// results are theirs bit for bit, and costs the sum of the nodes' costs (docs/tpu-sim.md,
// "Executables").
#pragma once

#include <phx/op_table.h>
#include <phynexus/plugin.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config.h"
#include "op_cost.h"

namespace phx::tpu_sim {

// Every op the plugin claims has at most this many inputs (concat's) and outputs (top_k's
// values and indices).
constexpr size_t kMaxNodeInputs = PHX_MAX_OP_INPUTS;
constexpr size_t kMaxNodeOutputs = PHX_MAX_OP_OUTPUTS;

struct ExecutableNode {
  phx_op_id op = PHX_OP_INVALID;
  bool has_params = false;
  OpParams params{};
  std::vector<uint32_t> inputs;   // value indices; PHX_PLUGIN_NO_VALUE for an absent input
  std::vector<uint32_t> outputs;  // value indices
  std::string name;               // for messages
  OpCost cost;
};

// What one run costs: the sums of the nodes' costs.
struct RunCost {
  size_t mxu_nodes = 0;
  uint64_t mxu_cycles = 0, vector_cycles = 0, hbm_bytes = 0;
  double modelled_time_ns = 0;
};

struct Executable {
  uint32_t device = 0;
  size_t value_count = 0;
  std::vector<ExecutableNode> nodes;
  RunCost run_cost;
  std::string signature;  // graph_signature() of the graph it was made from
  // Set by the device's compile cache lookup.
  bool cache_hit = false;
  double compile_time_ns = 0;
  // Made from a serialized model (phx_plugin_graph.serialized): nothing was compiled.
  bool loaded_from_serialized = false;
};

// Copies graph and prices its nodes with config's model. Returns null and sets error
// (naming the node) for a node the plugin cannot run: more inputs or outputs than any op
// it claims, or an op with parameters it does not know.
std::unique_ptr<Executable> build_executable(const phx_plugin_graph& graph, uint32_t device,
                                             const SimConfig& config, std::string& error);

// Copies graph and takes its nodes' costs from costs (a serialized model's, made for the
// same graph on a chip of the same configuration) instead of pricing them. Returns null
// and sets error as build_executable does, or when costs has not one cost per node.
std::unique_ptr<Executable> restore_executable(const phx_plugin_graph& graph, uint32_t device,
                                               std::span<const OpCost> costs, std::string& error);

// The cost model's estimated time of each node of graph run alone (the node's
// OpCost::estimated_time_ns, rounded up to whole ns): what graph_estimate answers.
// UINT64_MAX for a node that is no op tpu-sim compiles (as build_executable refuses it).
std::vector<uint64_t> estimate_nodes(const phx_plugin_graph& graph, const SimConfig& config);

// The modelled compile time of the whole program on a cache miss: each node's op program
// time (modelled_compile_time_ns), as if XLA's time grew linearly with the program's ops.
double modelled_program_compile_time_ns(const Executable& executable);

// A node's op with its tensors taken from values (one per value of the graph), as
// stream_submit receives an op. Not copyable: op() points into it.
class BoundNode {
 public:
  BoundNode(const ExecutableNode& node, const phx_plugin_tensor* values);
  BoundNode(const BoundNode&) = delete;
  BoundNode& operator=(const BoundNode&) = delete;
  const phx_plugin_op& op() const { return op_; }

 private:
  phx_plugin_tensor inputs_[kMaxNodeInputs] = {};
  phx_plugin_tensor outputs_[kMaxNodeOutputs] = {};
  phx_plugin_op op_ = {};
};

}  // namespace phx::tpu_sim
