#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "passes.h"

namespace phx::graph {
namespace {

phx_activation activation_of(phx_op_id op) {
  switch (op) {
    case PHX_OP_RELU:
      return PHX_ACTIVATION_RELU;
    case PHX_OP_GELU:
      return PHX_ACTIVATION_GELU;
    case PHX_OP_SILU:
      return PHX_ACTIVATION_SILU;
    default:
      return PHX_ACTIVATION_NONE;
  }
}

class Fusion {
 public:
  explicit Fusion(Program& program) : p_(program), readers_(live_readers(program)) {}

  void run() {
    for (size_t n = 0; n < p_.nodes.size(); ++n) {
      if (!p_.live[n]) continue;
      if (p_.nodes[n].op == PHX_OP_MATMUL) {
        take_bias(n);
        take_activation(n);
      } else if (p_.nodes[n].op == PHX_OP_CONV2D) {
        take_activation(n);  // conv2d's bias is its own third input already
      }
    }
  }

 private:
  const Node* only_reader(phx_value value, size_t& index) const {
    return graph::only_reader(p_, readers_, value, index);
  }

  // Replaces node n with candidate, which absorbed the nodes absorbed (in their order),
  // if the device node n would go to runs it.
  void absorb(size_t n, Node candidate, std::initializer_list<size_t> absorbed) {
    if (first_device_running(p_, candidate) != first_device_running(p_, p_.nodes[n])) return;
    for (size_t a : absorbed) {
      candidate.name += " + " + p_.nodes[a].name;
      p_.live[a] = false;
      ++p_.fused_nodes;
    }
    p_.nodes[n] = std::move(candidate);
  }

  void take_bias(size_t n) {
    const Node& matmul = p_.nodes[n];
    if (matmul.inputs.size() > 2 && matmul.inputs[2] != PHX_VALUE_NONE) return;
    const phx_value out = matmul.outputs[0];
    size_t a = 0;
    const Node* add = only_reader(out, a);
    if (add == nullptr || add->op != PHX_OP_ADD) return;
    const phx_value bias = add->inputs[0] == out ? add->inputs[1] : add->inputs[0];
    // The bias must exist when the matmul runs (a constant, an input, or made by a node
    // before it), and the add must not broadcast the product to a larger shape.
    const auto& values = p_.graph.values;
    if (bias == out || (values[bias].kind == PHX_VALUE_NODE_OUTPUT && values[bias].node >= n))
      return;
    if (!same_operand(values[add->outputs[0]], values[out])) return;
    Node candidate = matmul;
    candidate.inputs.resize(3, PHX_VALUE_NONE);
    candidate.inputs[2] = bias;
    candidate.outputs = add->outputs;
    absorb(n, std::move(candidate), {a});
  }

  // The activation parameter of a matmul or conv2d node.
  static phx_activation& activation_param(Node& node) {
    return node.op == PHX_OP_MATMUL ? node.params.matmul.activation : node.params.conv2d.activation;
  }

  void take_activation(size_t n) {
    Node candidate = p_.nodes[n];
    if (activation_param(candidate) != PHX_ACTIVATION_NONE) return;
    const phx_value out = candidate.outputs[0];
    size_t r = 0;
    const Node* unary = only_reader(out, r);
    if (unary == nullptr) {
      take_silu_as_written(n);
      return;
    }
    if (activation_of(unary->op) == PHX_ACTIVATION_NONE) return;
    activation_param(candidate) = activation_of(unary->op);
    candidate.outputs = unary->outputs;
    absorb(n, std::move(candidate), {r});
  }

  // silu as exporters write it, x * sigmoid(x) (EfficientNet's activation): node n's result
  // read by a sigmoid and by a mul of it with that sigmoid's result, which nothing else
  // reads, becomes node n with the activation silu.
  void take_silu_as_written(size_t n) {
    const phx_value out = p_.nodes[n].outputs[0];
    const std::vector<size_t>& r = readers_[out];
    if (r.size() != 2 || r[0] == SIZE_MAX || r[1] == SIZE_MAX) return;
    for (int first = 0; first < 2; ++first) {
      const size_t s = r[first], m = r[1 - first];
      const Node& sigmoid = p_.nodes[s];
      const Node& mul = p_.nodes[m];
      if (sigmoid.op != PHX_OP_SIGMOID || mul.op != PHX_OP_MUL) continue;
      size_t only = 0;
      if (only_reader(sigmoid.outputs[0], only) == nullptr || only != m) continue;
      const bool pair = (mul.inputs[0] == out && mul.inputs[1] == sigmoid.outputs[0]) ||
                        (mul.inputs[1] == out && mul.inputs[0] == sigmoid.outputs[0]);
      if (!pair) continue;
      Node candidate = p_.nodes[n];
      activation_param(candidate) = PHX_ACTIVATION_SILU;
      candidate.outputs = mul.outputs;
      absorb(n, std::move(candidate), {s, m});
      return;
    }
  }

  Program& p_;
  std::vector<std::vector<size_t>> readers_;  // per value: the live nodes reading it
};

}  // namespace

bool same_operand(const Value& a, const Value& b) {
  if (a.dtype != b.dtype || a.rank != b.rank) return false;
  for (uint32_t d = 0; d < a.rank; ++d)
    if (a.shape[d] != b.shape[d] || a.dim_names[d] != b.dim_names[d]) return false;
  return true;
}

bool scalar_constant(const Value& value, float& out) {
  if (value.kind != PHX_VALUE_CONSTANT || value.tensor != 0) return false;
  if (value.dtype == PHX_DTYPE_F32 && value.bytes.size() == 4) {
    std::memcpy(&out, value.bytes.data(), 4);
    return true;
  }
  if (value.dtype == PHX_DTYPE_BF16 && value.bytes.size() == 2) {
    const uint32_t bits = uint32_t{value.bytes[0]} << 16 | uint32_t{value.bytes[1]} << 24;
    std::memcpy(&out, &bits, 4);
    return true;
  }
  return false;
}

std::vector<std::vector<size_t>> live_readers(const Program& program) {
  std::vector<std::vector<size_t>> readers(program.graph.values.size());
  for (size_t n = 0; n < program.nodes.size(); ++n)
    if (program.live[n])
      for (phx_value v : program.nodes[n].inputs)
        if (v != PHX_VALUE_NONE) readers[v].push_back(n);
  for (phx_value v : program.graph.outputs) readers[v].push_back(SIZE_MAX);
  return readers;
}

const Node* only_reader(const Program& program, const std::vector<std::vector<size_t>>& readers,
                        phx_value value, size_t& index) {
  const std::vector<size_t>& r = readers[value];
  if (r.size() != 1 || r[0] == SIZE_MAX) return nullptr;
  index = r[0];
  return &program.nodes[index];
}

void fuse_matmul_epilogues(Program& program) {
  if ((program.flags & PHX_COMPILE_NO_FUSION) != 0) return;
  Fusion(program).run();
}

}  // namespace phx::graph
