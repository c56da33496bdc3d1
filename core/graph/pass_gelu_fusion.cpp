#include <cmath>

#include "passes.h"

namespace phx::graph {
namespace {

constexpr float kSqrt2 = 1.41421356237309505f;

// Whether a scalar constant of dtype holds want, to the precision of that dtype: the
// exporter rounded sqrt(2) (or 1 / sqrt(2)) to it.
bool holds(const Value& value, float want) {
  float v = 0.0f;
  if (!scalar_constant(value, v)) return false;
  const float unit = value.dtype == PHX_DTYPE_BF16 ? 0x1p-8f : 0x1p-24f;
  return std::fabs(v - want) <= 2 * unit * std::fabs(want);
}

class GeluFusion {
 public:
  explicit GeluFusion(Program& program) : p_(program), readers_(live_readers(program)) {}

  void run() {
    for (size_t n = 0; n < p_.nodes.size(); ++n)
      if (p_.live[n] && p_.nodes[n].op == PHX_OP_ERF) try_erf(n);
  }

 private:
  const Value& value(phx_value v) const { return p_.graph.values[v]; }

  // The other input of a binary node one of whose inputs is a scalar constant holding want
  // (in either order); PHX_VALUE_NONE when neither is.
  phx_value other_than(const Node& node, float want) const {
    if (holds(value(node.inputs[1]), want)) return node.inputs[0];
    if (holds(value(node.inputs[0]), want)) return node.inputs[1];
    return PHX_VALUE_NONE;
  }

  // The live node that alone reads value, if it is an op node of op; SIZE_MAX otherwise.
  size_t reader_of(phx_value v, phx_op_id op) const {
    size_t index = 0;
    const Node* node = only_reader(p_, readers_, v, index);
    return node != nullptr && node->op == op ? index : SIZE_MAX;
  }

  // erf(x / sqrt 2) (or erf(x * (1 / sqrt 2))), + 1, * x, * 0.5: each result read by the
  // next node alone, each constant one element.
  void try_erf(size_t e) {
    const Value& scaled = value(p_.nodes[e].inputs[0]);
    if (scaled.kind != PHX_VALUE_NODE_OUTPUT || !p_.live[scaled.node]) return;
    const size_t d = scaled.node;
    const Node& div = p_.nodes[d];
    phx_value x = PHX_VALUE_NONE;
    if (div.op == PHX_OP_DIV && holds(value(div.inputs[1]), kSqrt2))
      x = div.inputs[0];
    else if (div.op == PHX_OP_MUL)
      x = other_than(div, 1.0f / kSqrt2);
    if (x == PHX_VALUE_NONE || reader_of(div.outputs[0], PHX_OP_ERF) != e) return;
    const size_t a = reader_of(p_.nodes[e].outputs[0], PHX_OP_ADD);
    if (a == SIZE_MAX || other_than(p_.nodes[a], 1.0f) == PHX_VALUE_NONE) return;
    const size_t m1 = reader_of(p_.nodes[a].outputs[0], PHX_OP_MUL);
    if (m1 == SIZE_MAX || other_than_value(p_.nodes[m1], p_.nodes[a].outputs[0]) != x) return;
    const size_t m2 = reader_of(p_.nodes[m1].outputs[0], PHX_OP_MUL);
    if (m2 == SIZE_MAX || other_than(p_.nodes[m2], 0.5f) == PHX_VALUE_NONE) return;
    // The constants must not broadcast x to a larger shape.
    const Value &in = value(x), &out = value(p_.nodes[m2].outputs[0]);
    if (!same_operand(in, out)) return;
    Node gelu;
    gelu.op = PHX_OP_GELU;
    gelu.inputs = {x};
    gelu.outputs = p_.nodes[m2].outputs;
    if (first_device_running(p_, gelu) != first_device_running(p_, p_.nodes[e])) return;
    gelu.name = p_.nodes[d].name;
    for (size_t n : {e, a, m1, m2}) gelu.name += " + " + p_.nodes[n].name;
    for (size_t n : {d, e, a, m1}) p_.live[n] = false;
    p_.fused_nodes += 4;
    p_.nodes[m2] = std::move(gelu);
  }

  // The input of a binary node that is not v (v itself when both are).
  static phx_value other_than_value(const Node& node, phx_value v) {
    return node.inputs[0] == v ? node.inputs[1] : node.inputs[0];
  }

  Program& p_;
  std::vector<std::vector<size_t>> readers_;  // per value: the live nodes reading it
};

}  // namespace

void fuse_gelu(Program& program) {
  if ((program.flags & PHX_COMPILE_NO_FUSION) != 0) return;
  GeluFusion(program).run();
}

}  // namespace phx::graph
