// A graph compiled for an NPU (plugin.h, "Executables"; docs/npu-sim.md, "Compiling a
// float model (optimize_model)"): each node with its parameters copied, the way it
// computes (graph_quantizer.h), the quantized weights, bias and activation parameters of
// a quantized node, and its cost on the timing model, fixed at compile time because the
// shapes are. executable_run.h runs it node by node.
#pragma once

#include <phx/op_table.h>
#include <phynexus/plugin.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "graph_quantizer.h"
#include "timing_model.h"

namespace phx::npu_sim {

// What a quantized matmul or conv2d holds: its weights quantized once at compile time,
// and the parameters of its input and output activations from their calibration ranges.
struct QuantizedProduct {
  phx_dtype activations = PHX_DTYPE_I8;  // or PHX_DTYPE_I16 (16x8)
  QuantParams input, output;
  QuantizedWeights weights;
  uint32_t weight_rank = 0;
  int64_t weight_shape[PHX_MAX_RANK] = {};
  std::vector<int32_t> bias;  // empty: none
};

struct ExecutableNode {
  phx_op_id op = PHX_OP_INVALID;
  bool has_params = false;
  OpParams params{};
  std::vector<uint32_t> inputs;  // value indices; PHX_PLUGIN_NO_VALUE for an absent input
  std::vector<uint32_t> outputs;
  std::string name;  // for messages
  NodeCompute compute = NodeCompute::kNative;
  phx_dtype own_dtype = PHX_DTYPE_INVALID;  // its first input's
  QuantizedProduct product;                 // kInt8 and kInt16 only
  Estimate cost;
};

struct Executable {
  uint32_t device = 0;
  size_t value_count = 0;
  std::vector<ExecutableNode> nodes;
  // The sums of the nodes' costs: what one run costs.
  Estimate run_cost;
  uint64_t quantized_weight_bytes = 0;  // the int8 weights it holds

  size_t nodes_computed(NodeCompute compute) const;
  // The dtype node's arithmetic is done in (plugin.h, phx_plugin_node_report).
  phx_dtype compute_dtype(size_t node) const;
};

// Compiles graph for a device of figures, priced on machine. Returns OK, or UNSUPPORTED
// with error naming a node the device runs in no way (graph_quantizer.h's reason), or
// INVALID_ARGUMENT with error naming a quantized node's constant that holds a non-finite
// value. Reads the constants of quantized nodes (host memory: the simulator's buffers).
phx_status compile_executable(const phx_plugin_graph& graph, uint32_t device,
                              const DeviceFigures& figures, const Machine& machine,
                              std::unique_ptr<Executable>& out, std::string& error);

}  // namespace phx::npu_sim
