// The compile passes. Each reads the graph and what the passes before it decided, and
// decides one thing; compile.cpp runs them in the order of its list, then lowers what
// they decided into an executable. A new pass is a file here and an entry in that list.
#pragma once

#include <phynexus/plugin.h>

#include <vector>

#include "context.h"
#include "graph.h"

namespace phx::graph {

// The consumer's calibration samples (phx_compile_options), checked: per sample a tensor
// per graph input.
using Samples = std::vector<std::vector<const Tensor*>>;

struct Program {
  Program(const Graph& g, Device& device, uint32_t compile_flags)
      : graph(g), devices{&device}, flags(compile_flags), nodes(g.nodes) {}

  const Graph& graph;               // its values; the nodes are the program's own copy
  std::vector<Device*> devices;     // the executable's device, then the options' others
  uint32_t flags;                   // PHX_COMPILE_*
  std::vector<Node> nodes;          // the graph's, as the passes rewrite them
  std::vector<bool> live;           // per node: some output of the graph needs it
  std::vector<bool> folded;         // per node: computed once, at compile time
  std::vector<uint32_t> placement;  // per node: the index of its device in devices
  size_t fused_nodes = 0;           // nodes absorbed into another (no longer live)
  phx_placement_policy policy = PHX_PLACEMENT_FIRST;
  Samples samples;
  // Per value, its range over the samples (calibration.cpp); empty without samples.
  std::vector<phx_plugin_value_range> ranges;
  // Per sample, the graph outputs' elements as the float graph computed them, as f32
  // (empty for an output of another dtype): what calibration_error compares with.
  std::vector<std::vector<std::vector<float>>> float_outputs;
  // Per device, per node: the device runs it in a compiled part (graph_claim), and its
  // predicted time (graph_estimate or the host's roofline; PHX_PLACEMENT_COST only).
  std::vector<std::vector<bool>> claimed;
  std::vector<std::vector<uint64_t>> predicted_ns;
  std::vector<Operand> assessed;         // per value, the sizes the devices were asked at
  std::vector<uint64_t> placed_time_ns;  // per node: the prediction for its device
  std::vector<bool> placed_by_claim;     // per node: its device runs it only in a part
};

// The dtype and shape of every value for these input shapes (the graph's, in order):
// inputs as given, constants as they are, the outputs of live nodes inferred with the op
// rules (INVALID_ARGUMENT naming the node when a size breaks one); other values are left
// with dtype PHX_DTYPE_INVALID (value_shapes.cpp).
std::vector<Operand> concrete_operands(const Program& program,
                                       const std::vector<Shape>& input_shapes);

// Whether device d of the program runs live node n: alone (phx_device_supports_op's
// answer) or inside its compiled part (claimed).
bool device_takes(const Program& program, size_t d, size_t n);

// The variant a node asks of a device (phx_device_supports_op's question).
OpVariant variant_of_node(const Graph& graph, const Node& node);

// The index of the first of the program's devices that runs node; devices.size() when
// none does.
size_t first_device_running(const Program& program, const Node& node);

// Per value, the live nodes that read it, and SIZE_MAX once for a graph output.
std::vector<std::vector<size_t>> live_readers(const Program& program);

// The live node that alone reads value (a graph output is a reader of its own), with its
// index; null when there is none or more than one.
const Node* only_reader(const Program& program, const std::vector<std::vector<size_t>>& readers,
                        phx_value value, size_t& index);

// Equal dtypes and shapes, dynamic dimensions of one name alike.
bool same_operand(const Value& a, const Value& b);

// The value of a constant of one element given in host memory, f32 or bf16 (a bf16 is the
// top half of an f32); false for anything else.
bool scalar_constant(const Value& value, float& out);

using Pass = void (*)(Program&);

// pass_dead_nodes.cpp: a node is live when a graph output is among its outputs or a live
// node reads one of them.
void remove_dead_nodes(Program& program);

// pass_attention_fusion.cpp: matmul(q, k, transpose_b) -> [mul by a constant of one
// element] -> softmax over the last axis -> matmul(., v), each result read by the next
// alone, becomes one attention node (q, k, v of rank 4, the scale 1 or the constant),
// where the device the first matmul goes to runs it. Unless PHX_COMPILE_NO_FUSION.
void fuse_attention(Program& program);

// pass_qdq_fusion.cpp: a conv2d or matmul of two dequantized operands (a per tensor; b i8,
// per tensor or per output channel; a bias, if any, an i32 dequantized with a_scale *
// b_scale) whose result, after a relu, a quantize alone reads (per tensor), as QDQ models
// are written, becomes qconv2d or qmatmul from the integers to the quantize's output, where
// the device it goes to is the float node's or one the program lists before it (the NPU
// runs the integer op, not the float one); the dequantizes no other node reads go too.
// Unless PHX_COMPILE_NO_FUSION.
void fuse_qdq(Program& program);

// pass_gelu_fusion.cpp: GELU as torch.onnx writes it, x / sqrt(2) (or x * (1 / sqrt(2))),
// erf, + 1, * x, * 0.5, each result read by the next node alone and each constant one
// element (sqrt(2) to the precision of its dtype), becomes one gelu node of x where the
// device the erf goes to runs it; the four other nodes are no longer live. Before
// fuse_matmul_epilogues, which then gives the gelu to the matmul before it. Unless
// PHX_COMPILE_NO_FUSION.
void fuse_gelu(Program& program);

// pass_matmul_epilogues.cpp: a matmul whose only reader adds a bias (a constant, an input or
// made by a node before it) that leaves its output's shape as it is takes the bias, and a matmul or
// conv2d whose only reader (after the bias) is relu, gelu or silu takes the activation, as does one
// read by x * sigmoid(x) alone (silu as exporters write it), where the device the node goes to runs
// the fused node; the absorbed nodes are no longer live. Unless PHX_COMPILE_NO_FUSION.
void fuse_matmul_epilogues(Program& program);

// pass_norm_fusion.cpp: a layer_norm or rms_norm without gamma (nor beta) whose only reader
// multiplies it by a value [D] of its dtype (D its last dimension, static; either operand
// order) takes that value as gamma, and a layer_norm without beta whose only reader (after
// the gamma) adds such a value takes it as beta, where the device the norm goes to runs
// the fused norm; the absorbed nodes are no longer live. Unless PHX_COMPILE_NO_FUSION.
void fuse_norms(Program& program);

// pass_device_assessment.cpp: asks each device that has graph_claim which nodes it takes
// into its compiled part and, for PHX_PLACEMENT_COST, each device its predicted time per
// node (graph_estimate, else the host's roofline).
void assess_devices(Program& program);

// pass_placement.cpp: every live node goes to a device that takes it (device_takes): the
// first of them, or with PHX_PLACEMENT_COST the one whose predicted time plus the copies
// of its inputs there (and of a graph output back to the executable's device) costs
// least; UNSUPPORTED naming the node when none does.
void place_nodes(Program& program);

// pass_constant_folding.cpp: a live node whose inputs are all constants (or folded) and
// none of whose outputs is a graph output is folded, unless PHX_COMPILE_NO_CONSTANT_FOLDING
// or its device runs it only inside its compiled part (placed_by_claim).
void fold_constants(Program& program);

// pass_placement_report.cpp: when most of the work (FLOPs, at the sizes assessment_operands
// gives; nodes where no FLOP is counted) of the live nodes not folded runs on other devices
// than the executable's, a warning in the context's log names how many nodes and what
// share, and the most frequent reasons (the op and dtypes the device does not implement,
// or the cost placement's choice). Changes nothing.
void report_placement(Program& program);

// The sizes a device judges the program at (pass_device_assessment.cpp): the first
// calibration sample's, else 1 for every dynamic dimension, else stand-ins.
std::vector<Operand> assessment_operands(const Program& program);

}  // namespace phx::graph
