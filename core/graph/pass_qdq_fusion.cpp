#include <algorithm>
#include <cmath>
#include <cstring>

#include "op_rules.h"
#include "passes.h"

namespace phx::graph {
namespace {

// qmatmul and qconv2d's inputs (phynexus.h, PHX_OP_QMATMUL).
enum QuantizedInput : size_t { kA, kB, kAScale, kAZero, kBScale, kBZero, kBias, kYScale, kYZero };

bool has_input(const Node& node, size_t index) {
  return index < node.inputs.size() && node.inputs[index] != PHX_VALUE_NONE;
}

// The f32 elements of a constant given as host bytes; empty for anything else.
std::vector<float> constant_floats(const Value& v) {
  if (v.kind != PHX_VALUE_CONSTANT || v.dtype != PHX_DTYPE_F32 || v.bytes.empty()) return {};
  std::vector<float> out(v.bytes.size() / sizeof(float));
  std::memcpy(out.data(), v.bytes.data(), out.size() * sizeof(float));
  return out;
}

class QdqFusion {
 public:
  explicit QdqFusion(Program& program) : p_(program), readers_(live_readers(program)) {}

  void run() {
    for (size_t n = 0; n < p_.nodes.size(); ++n)
      if (p_.live[n] && (p_.nodes[n].op == PHX_OP_CONV2D || p_.nodes[n].op == PHX_OP_MATMUL))
        fuse(n);
  }

 private:
  // The live dequantize node that computes value, or null.
  const Node* dequantize_of(phx_value value, size_t& index) const {
    const Value& v = p_.graph.values[value];
    if (v.kind != PHX_VALUE_NODE_OUTPUT || !p_.live[v.node]) return nullptr;
    index = v.node;
    const Node& node = p_.nodes[index];
    return node.op == PHX_OP_DEQUANTIZE ? &node : nullptr;
  }

  // Whether value exists before node n runs: an input, a constant, or an earlier node's.
  bool available_before(phx_value value, size_t n) const {
    if (value == PHX_VALUE_NONE) return true;
    const Value& v = p_.graph.values[value];
    return v.kind != PHX_VALUE_NODE_OUTPUT || v.node < n;
  }

  // An int32 bias dequantized with a_scale * b_scale (elementwise, within f32 rounding)
  // and no zero point, as quantization tools write it: its integers, else PHX_VALUE_NONE.
  phx_value integer_bias(phx_value bias, const Node& a, const Node& b) const {
    size_t index = 0;
    const Node* dq = dequantize_of(bias, index);
    if (dq == nullptr || has_input(*dq, 2)) return PHX_VALUE_NONE;
    const auto& values = p_.graph.values;
    if (values[dq->inputs[0]].dtype != PHX_DTYPE_I32) return PHX_VALUE_NONE;
    const std::vector<float> bias_scale = constant_floats(values[dq->inputs[1]]);
    const std::vector<float> a_scale = constant_floats(values[a.inputs[1]]);
    const std::vector<float> b_scale = constant_floats(values[b.inputs[1]]);
    if (bias_scale.empty() || a_scale.size() != 1 || b_scale.empty()) return PHX_VALUE_NONE;
    for (size_t c = 0; c < bias_scale.size(); ++c) {
      const float want = a_scale[0] * b_scale[b_scale.size() == 1 ? 0 : c];
      if (std::fabs(bias_scale[c] - want) > std::ldexp(std::fabs(want), -20)) return PHX_VALUE_NONE;
    }
    return dq->inputs[0];
  }

  // Node n, a conv2d or matmul of dequantized operands whose result (after a relu) only a
  // quantize reads, becomes qconv2d or qmatmul from the integers to the quantize's
  // output, where its device is the conv's or one the program prefers.
  void fuse(size_t n) {
    const Node& node = p_.nodes[n];
    size_t ai = 0, bi = 0;
    const Node* a = dequantize_of(node.inputs[0], ai);
    const Node* b = dequantize_of(node.inputs[1], bi);
    if (a == nullptr || b == nullptr) return;
    const auto& values = p_.graph.values;
    // a per tensor; b per tensor or per output channel, and 8-bit signed.
    if (element_count(values[a->inputs[1]].operand()) != 1) return;
    if (values[b->inputs[0]].dtype != PHX_DTYPE_I8) return;
    if (element_count(values[b->inputs[1]].operand()) != 1) {
      const bool transposed = node.op == PHX_OP_MATMUL && node.params.matmul.transpose_b;
      const int32_t channel_axis = node.op == PHX_OP_CONV2D || transposed ? 0 : 1;
      const int32_t rank = static_cast<int32_t>(values[b->inputs[0]].rank);
      const int32_t axis =
          b->params.quantize.axis < 0 ? b->params.quantize.axis + rank : b->params.quantize.axis;
      if (axis != channel_axis) return;
    }
    if (node.op == PHX_OP_MATMUL && node.params.matmul.transpose_a) return;

    Node candidate = node;
    candidate.op = node.op == PHX_OP_CONV2D ? PHX_OP_QCONV2D : PHX_OP_QMATMUL;
    candidate.inputs.assign(kYZero + 1, PHX_VALUE_NONE);
    candidate.inputs[kA] = a->inputs[0];
    candidate.inputs[kB] = b->inputs[0];
    candidate.inputs[kAScale] = a->inputs[1];
    candidate.inputs[kAZero] = has_input(*a, 2) ? a->inputs[2] : PHX_VALUE_NONE;
    candidate.inputs[kBScale] = b->inputs[1];
    candidate.inputs[kBZero] = has_input(*b, 2) ? b->inputs[2] : PHX_VALUE_NONE;
    std::vector<size_t> dequantizes = {ai, bi};
    if (has_input(node, 2)) {
      candidate.inputs[kBias] = integer_bias(node.inputs[2], *a, *b);
      if (candidate.inputs[kBias] == PHX_VALUE_NONE) return;
      dequantizes.push_back(p_.graph.values[node.inputs[2]].node);
    }

    // The result, after a relu, read by a quantize alone.
    std::vector<size_t> absorbed;
    phx_value out = node.outputs[0];
    size_t r = 0;
    const Node* reader = only_reader(p_, readers_, out, r);
    phx_activation& activation = candidate.op == PHX_OP_QCONV2D
                                     ? candidate.params.conv2d.activation
                                     : candidate.params.matmul.activation;
    if (reader != nullptr && reader->op == PHX_OP_RELU && activation == PHX_ACTIVATION_NONE) {
      activation = PHX_ACTIVATION_RELU;
      absorbed.push_back(r);
      out = reader->outputs[0];
      reader = only_reader(p_, readers_, out, r);
    }
    if (activation != PHX_ACTIVATION_NONE && activation != PHX_ACTIVATION_RELU) return;
    if (reader == nullptr || reader->op != PHX_OP_QUANTIZE) return;
    if (element_count(values[reader->inputs[1]].operand()) != 1) return;  // y per tensor
    absorbed.push_back(r);
    candidate.inputs[kYScale] = reader->inputs[1];
    candidate.inputs[kYZero] = has_input(*reader, 2) ? reader->inputs[2] : PHX_VALUE_NONE;
    candidate.outputs = reader->outputs;

    for (phx_value v : candidate.inputs)
      if (!available_before(v, n)) return;
    if (!follows_the_rules(candidate)) return;
    if (first_device_running(p_, candidate) > first_device_running(p_, node)) return;

    for (size_t i : absorbed) {
      candidate.name += " + " + p_.nodes[i].name;
      p_.live[i] = false;
      ++p_.fused_nodes;
    }
    p_.nodes[n] = std::move(candidate);
    // A dequantize nothing else reads goes too.
    for (size_t dq : dequantizes) drop_if_unread(dq);
  }

  bool follows_the_rules(const Node& candidate) const {
    Operand operands[kMaxOpInputs];
    const Operand* inputs[kMaxOpInputs] = {};
    for (size_t i = 0; i < candidate.inputs.size(); ++i) {
      if (candidate.inputs[i] == PHX_VALUE_NONE) continue;
      const Value& v = p_.graph.values[candidate.inputs[i]];
      if (v.dynamic()) return false;  // only static shapes are checked here
      operands[i] = v.operand();
      inputs[i] = &operands[i];
    }
    Shape shape;
    try {
      infer_output_shapes(candidate.op, candidate.params_ptr(), inputs, candidate.inputs.size(),
                          &shape, 1);
    } catch (const Error&) {
      return false;
    }
    const Value& y = p_.graph.values[candidate.outputs[0]];
    return shape == Shape(y.shape, y.shape + y.rank);
  }

  // Node dq is no longer live when no live node reads its output any more (the fused
  // nodes read the integers) and no graph output is it.
  void drop_if_unread(size_t dq) {
    const phx_value out = p_.nodes[dq].outputs[0];
    for (size_t reader : readers_[out]) {
      if (reader == SIZE_MAX) return;
      const std::vector<phx_value>& in = p_.nodes[reader].inputs;
      if (p_.live[reader] && std::find(in.begin(), in.end(), out) != in.end()) return;
    }
    p_.live[dq] = false;
    ++p_.fused_nodes;
  }

  Program& p_;
  std::vector<std::vector<size_t>> readers_;  // per value: the live nodes reading it
};

}  // namespace

void fuse_qdq(Program& program) {
  if ((program.flags & PHX_COMPILE_NO_FUSION) != 0) return;
  QdqFusion(program).run();
}

}  // namespace phx::graph
