#include "node_cost.h"

#include <algorithm>
#include <cstring>

#include "op_cost.h"

namespace phx::npu_sim {
namespace {

// The cost model reads a tensor's dtype, its shape and whether it is present (buffer not
// null), never its contents: every tensor it prices points here.
char shape_only_marker;

phx_plugin_tensor shaped(phx_dtype dtype, uint32_t rank, const int64_t* shape) {
  phx_plugin_tensor t{};
  t.struct_size = sizeof t;
  t.buffer = &shape_only_marker;
  t.dtype = dtype;
  t.rank = rank;
  std::fill(t.shape, t.shape + PHX_MAX_RANK, 1);
  std::copy(shape, shape + rank, t.shape);
  return t;
}

phx_plugin_tensor shaped(const phx_plugin_value& v, phx_dtype dtype) {
  return shaped(dtype, v.rank, v.shape);
}

phx_plugin_tensor vector_of(phx_dtype dtype, int64_t count) { return shaped(dtype, 1, &count); }

phx_plugin_tensor absent() {
  phx_plugin_tensor t{};
  t.struct_size = sizeof t;
  return t;
}

}  // namespace

Estimate estimate_node(const phx_plugin_graph& graph, size_t n, NodeCompute compute,
                       const Machine& machine) {
  const phx_plugin_node& node = graph.nodes[n];
  phx_plugin_tensor in[PHX_MAX_OP_INPUTS], out[PHX_MAX_OP_OUTPUTS];
  phx_plugin_op op{};
  op.struct_size = sizeof op;
  op.op = node.op;
  op.params = node.params;
  op.inputs = in;
  op.outputs = out;
  op.input_count = node.input_count;
  op.output_count = node.output_count;
  auto value = [&](uint32_t index) -> const phx_plugin_value& { return graph.values[index]; };
  if (compute == NodeCompute::kInt8 || compute == NodeCompute::kInt16) {
    // qmatmul / qconv2d: a, w, a_scale, a_zero_point, w_scale, (no w zero point), bias,
    // y_scale, y_zero_point.
    const phx_dtype activations = compute == NodeCompute::kInt16 ? PHX_DTYPE_I16 : PHX_DTYPE_I8;
    const phx_plugin_value& w = value(node.inputs[1]);
    const int64_t channels = w.shape[weight_channel_axis(node)];
    const bool has_bias = node.input_count > 2 && node.inputs[2] != PHX_PLUGIN_NO_VALUE;
    op.op = node.op == PHX_OP_CONV2D ? PHX_OP_QCONV2D : PHX_OP_QMATMUL;
    in[0] = shaped(value(node.inputs[0]), activations);
    in[1] = shaped(w, PHX_DTYPE_I8);
    in[2] = vector_of(PHX_DTYPE_F32, 1);
    in[3] = vector_of(PHX_DTYPE_I32, 1);
    in[4] = vector_of(PHX_DTYPE_F32, channels);
    in[5] = absent();
    in[6] = has_bias ? vector_of(PHX_DTYPE_I32, channels) : absent();
    in[7] = vector_of(PHX_DTYPE_F32, 1);
    in[8] = vector_of(PHX_DTYPE_I32, 1);
    op.input_count = 9;
    out[0] = shaped(value(node.outputs[0]), activations);
    return estimate_op(op, machine);
  }
  // f16 compute turns every f32 tensor but rope's tables into f16; native keeps them.
  auto dtype_of = [&](const phx_plugin_value& v, bool keep) {
    return compute == NodeCompute::kF16 && !keep && v.dtype == PHX_DTYPE_F32 ? PHX_DTYPE_F16
                                                                             : v.dtype;
  };
  for (size_t i = 0; i < node.input_count; ++i) {
    const bool table = node.op == PHX_OP_ROPE && i > 0;
    in[i] = node.inputs[i] == PHX_PLUGIN_NO_VALUE
                ? absent()
                : shaped(value(node.inputs[i]), dtype_of(value(node.inputs[i]), table));
  }
  for (size_t o = 0; o < node.output_count; ++o)
    out[o] = shaped(value(node.outputs[o]), dtype_of(value(node.outputs[o]), false));
  return estimate_op(op, machine);
}

}  // namespace phx::npu_sim
