#include <cmath>
#include <cstring>

#include "passes.h"

namespace phx::graph {
namespace {

bool plain_matmul(const Node& node, bool transpose_b) {
  const phx_matmul_params& p = node.params.matmul;
  return node.op == PHX_OP_MATMUL && !p.transpose_a && (p.transpose_b != 0) == transpose_b &&
         p.activation == PHX_ACTIVATION_NONE &&
         (node.inputs.size() < 3 || node.inputs[2] == PHX_VALUE_NONE);
}

class AttentionFusion {
 public:
  explicit AttentionFusion(Program& program) : p_(program), readers_(live_readers(program)) {}

  void run() {
    for (size_t n = 0; n < p_.nodes.size(); ++n)
      if (p_.live[n] && p_.nodes[n].op == PHX_OP_SOFTMAX) try_softmax(n);
  }

 private:
  // The live node that writes value, if any.
  size_t writer(phx_value value) const {
    const Value& v = p_.graph.values[value];
    return v.kind == PHX_VALUE_NODE_OUTPUT && p_.live[v.node] ? v.node : SIZE_MAX;
  }

  void try_softmax(size_t s) {
    const Node& softmax = p_.nodes[s];
    const Value& scores = p_.graph.values[softmax.inputs[0]];
    const int32_t axis = softmax.params.softmax.axis;
    if (scores.rank != 4 || (axis != -1 && axis != 3)) return;
    // Between the scores' matmul and the softmax, at most a product with a scalar constant.
    std::vector<size_t> absorbed;
    float scale = 1.0f;
    size_t m1 = writer(softmax.inputs[0]);
    if (m1 != SIZE_MAX && p_.nodes[m1].op == PHX_OP_MUL) {
      const Node& mul = p_.nodes[m1];
      const bool first_scalar = scalar_constant(p_.graph.values[mul.inputs[0]], scale);
      if (!first_scalar && !scalar_constant(p_.graph.values[mul.inputs[1]], scale)) return;
      if (!alone_reads(mul.outputs[0], s)) return;
      absorbed.push_back(m1);
      m1 = writer(mul.inputs[first_scalar ? 1 : 0]);
      if (m1 != SIZE_MAX && !alone_reads(p_.nodes[m1].outputs[0], absorbed.back())) return;
    } else if (m1 != SIZE_MAX && !alone_reads(p_.nodes[m1].outputs[0], s)) {
      return;
    }
    if (m1 == SIZE_MAX || !plain_matmul(p_.nodes[m1], true) || !std::isfinite(scale) ||
        scale == 0.0f)
      return;
    size_t m2 = 0;
    const Node* values_product = only_reader(p_, readers_, softmax.outputs[0], m2);
    if (values_product == nullptr || !plain_matmul(*values_product, false) ||
        values_product->inputs[0] != softmax.outputs[0])
      return;
    absorbed.push_back(s);
    absorbed.push_back(m1);
    fuse(m1, m2, scale, absorbed);
  }

  bool alone_reads(phx_value value, size_t reader) const {
    size_t index = 0;
    return only_reader(p_, readers_, value, index) != nullptr && index == reader;
  }

  void fuse(size_t m1, size_t m2, float scale, const std::vector<size_t>& absorbed) {
    const Node& scores = p_.nodes[m1];
    const Node& values = p_.nodes[m2];
    Node attention;
    attention.op = PHX_OP_ATTENTION;
    attention.has_params = true;
    attention.params.attention = {sizeof(phx_attention_params), scale, PHX_ATTENTION_MASK_NONE, 0};
    attention.inputs = {scores.inputs[0], scores.inputs[1], values.inputs[1]};
    attention.outputs = values.outputs;
    // Only where the shapes say the same as the two products do (no dynamic dimension,
    // no batch the products would broadcast), and where the first product's device runs it.
    Operand q = p_.graph.values[attention.inputs[0]].operand();
    Operand k = p_.graph.values[attention.inputs[1]].operand();
    Operand v = p_.graph.values[attention.inputs[2]].operand();
    const Value& out = p_.graph.values[values.outputs[0]];
    if (out.dynamic() || q.rank != 4 || k.rank != 4 || v.rank != 4) return;
    const Operand* in[3] = {&q, &k, &v};
    Shape shape[1];
    try {
      infer_output_shapes(PHX_OP_ATTENTION, &attention.params, in, 3, shape, 1);
    } catch (const Error&) {
      return;
    }
    if (shape[0] != Shape(out.shape, out.shape + out.rank)) return;
    if (first_device_running(p_, attention) != first_device_running(p_, scores)) return;
    attention.name = scores.name;
    for (auto it = absorbed.rbegin() + 1; it != absorbed.rend(); ++it)
      attention.name += " + " + p_.nodes[*it].name;
    attention.name += " + " + values.name;
    for (size_t n : absorbed) p_.live[n] = false;
    p_.fused_nodes += absorbed.size();
    p_.nodes[m2] = std::move(attention);
  }

  Program& p_;
  std::vector<std::vector<size_t>> readers_;
};

}  // namespace

void fuse_attention(Program& program) {
  if ((program.flags & PHX_COMPILE_NO_FUSION) != 0) return;
  AttentionFusion(program).run();
}

}  // namespace phx::graph
