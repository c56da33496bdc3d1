#include "passes.h"

namespace phx::graph {
namespace {

constexpr size_t kGamma = 1, kBeta = 2;

bool norm(phx_op_id op) { return op == PHX_OP_LAYER_NORM || op == PHX_OP_RMS_NORM; }

bool has_input(const Node& node, size_t index) {
  return index < node.inputs.size() && node.inputs[index] != PHX_VALUE_NONE;
}

class NormFusion {
 public:
  explicit NormFusion(Program& program) : p_(program), readers_(live_readers(program)) {}

  void run() {
    for (size_t n = 0; n < p_.nodes.size(); ++n) {
      if (!p_.live[n] || !norm(p_.nodes[n].op)) continue;
      // A layer norm with a shift but no scale would take the scale after the shift.
      if (!has_input(p_.nodes[n], kGamma) && !has_input(p_.nodes[n], kBeta))
        take_operand(n, PHX_OP_MUL, kGamma);
      if (p_.nodes[n].op == PHX_OP_LAYER_NORM && !has_input(p_.nodes[n], kBeta))
        take_operand(n, PHX_OP_ADD, kBeta);
    }
  }

 private:
  // The norm's node n takes, as its input index (gamma or beta), the other operand of the
  // node of op that alone reads its result, when that operand is what the norm's rules
  // take there: the norm's dtype and shape [D], D its last dimension (static), which
  // broadcasts to the norm's result without making it larger. Where the device the norm
  // goes to runs the fused norm.
  void take_operand(size_t n, phx_op_id op, size_t index) {
    const Node& node = p_.nodes[n];
    const phx_value out = node.outputs[0];
    size_t r = 0;
    const Node* reader = only_reader(p_, readers_, out, r);
    if (reader == nullptr || reader->op != op) return;
    const phx_value operand = reader->inputs[0] == out ? reader->inputs[1] : reader->inputs[0];
    // The operand must exist when the norm runs: a constant, an input, or made by a node
    // before the norm's.
    const auto& values = p_.graph.values;
    if (values[operand].kind == PHX_VALUE_NODE_OUTPUT && values[operand].node >= n) return;
    const Value& y = values[out];
    const Value& v = values[operand];
    const int64_t last = y.shape[y.rank - 1];
    if (v.dtype != y.dtype || v.rank != 1 || last == PHX_DIM_DYNAMIC || v.shape[0] != last) return;
    Node candidate = node;
    if (candidate.inputs.size() <= index) candidate.inputs.resize(index + 1, PHX_VALUE_NONE);
    candidate.inputs[index] = operand;
    candidate.outputs = reader->outputs;
    if (first_device_running(p_, candidate) != first_device_running(p_, node)) return;
    candidate.name += " + " + reader->name;
    p_.nodes[n] = std::move(candidate);
    p_.live[r] = false;
    ++p_.fused_nodes;
  }

  Program& p_;
  std::vector<std::vector<size_t>> readers_;  // per value: the live nodes reading it
};

}  // namespace

void fuse_norms(Program& program) {
  if ((program.flags & PHX_COMPILE_NO_FUSION) != 0) return;
  NormFusion(program).run();
}

}  // namespace phx::graph
