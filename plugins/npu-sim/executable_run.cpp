#include "executable_run.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

#include "host_buffers.h"
#include "phx/kernels/ops.h"

namespace phx::npu_sim {
namespace {

using kernels::HostTensor;

// A tensor of the simulation's own (a quantized or f16 operand) in host memory it owns.
struct Scratch {
  std::vector<char> bytes;
  HostTensor view;
};

// A tensor of like's shape in dtype.
Scratch scratch_like(const HostTensor& like, phx_dtype dtype) {
  Scratch s;
  s.view = like;
  s.view.dtype = dtype;
  s.bytes.resize(size_t(kernels::element_count(like)) * phx_plugin_dtype_size(dtype));
  s.view.data = s.bytes.data();
  return s;
}

// A view of count elements of dtype at data, which the kernels only read.
HostTensor vector_view(const void* data, phx_dtype dtype, int64_t count) {
  HostTensor t;
  t.data = const_cast<void*>(data);
  t.dtype = dtype;
  t.rank = 1;
  std::fill(t.shape, t.shape + PHX_MAX_RANK, 1);
  t.shape[0] = count;
  return t;
}

HostTensor absent() { return HostTensor{}; }

HostTensor value_view(const phx_plugin_tensor* values, uint32_t index) {
  return index == PHX_PLUGIN_NO_VALUE ? absent() : plugin_common::host_view(values[index]);
}

const void* params_of(const ExecutableNode& node) {
  return node.has_params ? &node.params : nullptr;
}

phx_status run_native(const ExecutableNode& node, const phx_plugin_tensor* values,
                      kernels::ThreadPool& pool) {
  HostTensor in[PHX_MAX_OP_INPUTS], out[PHX_MAX_OP_OUTPUTS];
  for (size_t i = 0; i < node.inputs.size(); ++i) in[i] = value_view(values, node.inputs[i]);
  for (size_t o = 0; o < node.outputs.size(); ++o) out[o] = value_view(values, node.outputs[o]);
  return kernels::run_op(node.op, params_of(node), in, node.inputs.size(), out, node.outputs.size(),
                         pool);
}

phx_status run_quantized(const ExecutableNode& node, const phx_plugin_tensor* values,
                         kernels::ThreadPool& pool) {
  const QuantizedProduct& q = node.product;
  const HostTensor x = value_view(values, node.inputs[0]);
  const HostTensor y = value_view(values, node.outputs[0]);
  const int64_t channels = int64_t(q.weights.scales.size());
  const HostTensor x_scale = vector_view(&q.input.scale, PHX_DTYPE_F32, 1);
  const HostTensor x_zero = vector_view(&q.input.zero_point, PHX_DTYPE_I32, 1);
  const HostTensor y_scale = vector_view(&q.output.scale, PHX_DTYPE_F32, 1);
  const HostTensor y_zero = vector_view(&q.output.zero_point, PHX_DTYPE_I32, 1);
  const phx_quantize_params per_tensor = PHX_QUANTIZE_PARAMS_INIT;

  Scratch xq = scratch_like(x, q.activations);
  const HostTensor quantize_in[3] = {x, x_scale, x_zero};
  if (phx_status s =
          kernels::run_op(PHX_OP_QUANTIZE, &per_tensor, quantize_in, 3, &xq.view, 1, pool);
      s != PHX_STATUS_OK)
    return s;

  HostTensor w = vector_view(q.weights.values.data(), PHX_DTYPE_I8, 1);
  w.rank = q.weight_rank;
  std::copy(q.weight_shape, q.weight_shape + PHX_MAX_RANK, w.shape);
  const HostTensor product_in[9] = {
      xq.view,
      w,
      x_scale,
      x_zero,
      vector_view(q.weights.scales.data(), PHX_DTYPE_F32, channels),
      absent(),  // weights are symmetric
      q.bias.empty() ? absent() : vector_view(q.bias.data(), PHX_DTYPE_I32, channels),
      y_scale,
      y_zero};
  Scratch yq = scratch_like(y, q.activations);
  const phx_op_id product = node.op == PHX_OP_CONV2D ? PHX_OP_QCONV2D : PHX_OP_QMATMUL;
  if (phx_status s = kernels::run_op(product, params_of(node), product_in, 9, &yq.view, 1, pool);
      s != PHX_STATUS_OK)
    return s;

  const HostTensor dequantize_in[3] = {yq.view, y_scale, y_zero};
  return kernels::run_op(PHX_OP_DEQUANTIZE, &per_tensor, dequantize_in, 3, &y, 1, pool);
}

// Converts from into to's dtype (f32 to f16 and back), rounding once.
phx_status cast(const HostTensor& from, const HostTensor& to, kernels::ThreadPool& pool) {
  return kernels::run_op(PHX_OP_CAST, nullptr, &from, 1, &to, 1, pool);
}

phx_status run_f16(const ExecutableNode& node, const phx_plugin_tensor* values,
                   kernels::ThreadPool& pool) {
  std::vector<Scratch> halves;  // the f16 operands; reserved so that views stay put
  halves.reserve(node.inputs.size() + node.outputs.size());
  HostTensor in[PHX_MAX_OP_INPUTS], out[PHX_MAX_OP_OUTPUTS];
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    in[i] = value_view(values, node.inputs[i]);
    const bool table = node.op == PHX_OP_ROPE && i > 0;  // cos and sin stay f32
    if (in[i].data == nullptr || table || in[i].dtype != PHX_DTYPE_F32) continue;
    Scratch& half = halves.emplace_back(scratch_like(in[i], PHX_DTYPE_F16));
    if (phx_status s = cast(in[i], half.view, pool); s != PHX_STATUS_OK) return s;
    in[i] = half.view;
  }
  for (size_t o = 0; o < node.outputs.size(); ++o)
    out[o] =
        halves.emplace_back(scratch_like(value_view(values, node.outputs[o]), PHX_DTYPE_F16)).view;
  if (phx_status s = kernels::run_op(node.op, params_of(node), in, node.inputs.size(), out,
                                     node.outputs.size(), pool);
      s != PHX_STATUS_OK)
    return s;
  for (size_t o = 0; o < node.outputs.size(); ++o)
    if (phx_status s = cast(out[o], value_view(values, node.outputs[o]), pool); s != PHX_STATUS_OK)
      return s;
  return PHX_STATUS_OK;
}

}  // namespace

phx_status run_node(const ExecutableNode& node, const phx_plugin_tensor* values,
                    kernels::ThreadPool& pool) {
  switch (node.compute) {
    case NodeCompute::kInt8:
    case NodeCompute::kInt16:
      return run_quantized(node, values, pool);
    case NodeCompute::kF16:
      return run_f16(node, values, pool);
    default:
      return run_native(node, values, pool);
  }
}

std::optional<double> node_error_rel(const ExecutableNode& node, const phx_plugin_tensor* values,
                                     kernels::ThreadPool& pool) {
  if (node.compute == NodeCompute::kNative) return std::nullopt;
  try {
    HostTensor in[PHX_MAX_OP_INPUTS], out[PHX_MAX_OP_OUTPUTS];
    std::vector<Scratch> refs;
    refs.reserve(node.outputs.size());
    for (size_t i = 0; i < node.inputs.size(); ++i) in[i] = value_view(values, node.inputs[i]);
    for (size_t o = 0; o < node.outputs.size(); ++o)
      out[o] =
          refs.emplace_back(scratch_like(value_view(values, node.outputs[o]), PHX_DTYPE_F32)).view;
    if (kernels::run_op(node.op, params_of(node), in, node.inputs.size(), out, node.outputs.size(),
                        pool) != PHX_STATUS_OK)
      return std::nullopt;
    const auto* ref = static_cast<const float*>(out[0].data);
    const auto* got = static_cast<const float*>(value_view(values, node.outputs[0]).data);
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < kernels::element_count(out[0]); ++i) {
      const double d = double(got[i]) - double(ref[i]);
      diff += d * d;
      norm += double(ref[i]) * ref[i];
    }
    if (!(norm > 0)) return std::nullopt;
    return std::sqrt(diff / norm);
  } catch (const std::bad_alloc&) {  // the node itself has run
    return std::nullopt;
  }
}

}  // namespace phx::npu_sim
