#include "op_cost.h"

#include <algorithm>

#include "op_work.h"

namespace phx::npu_sim {
namespace {

uint64_t elements(const phx_plugin_tensor& t) { return phx_plugin_element_count(t.rank, t.shape); }

uint64_t bytes(const phx_plugin_tensor& t) {
  return t.buffer == nullptr ? 0 : elements(t) * phx_plugin_dtype_size(t.dtype);  // absent: 0
}

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

// Elementary vector operations per element, first order: a quantize or dequantize is a
// multiply and a round-and-clamp; dynamic quantization adds the min/max pass; a division
// is a reciprocal estimate and its Newton steps, a reciprocal the same less the multiply,
// a square root the reciprocal square root's and a multiply by x; a rotation two
// multiplies and an add. exp, log, sin and cos are a range reduction and a short polynomial (f16's
// 11 bits need few terms): silu and sigmoid are an exp and a division; tanh a sigmoid of
// 2x (the 2 folded into exp's range reduction) and a multiply-add; erf a longer
// polynomial (gelu is erf and three multiplies and adds); softplus an exp, a log of
// 1 + e^-|x| and the abs, max and add around them; elu an exp, the multiply-add by alpha
// and the select, selu one more multiply (beta); pow e^(b log a). softmax and the norms
// pass over a row several times: log_softmax is softmax with a subtraction for its
// division, instance_norm layer_norm's passes; batch_norm, with 1 / sqrt(var + epsilon)
// taken once per channel, a subtraction, two multiplies and an add. A compare or multiply
// and a select (leaky_relu, prelu, sign, clip's max and min, argmax's value and index) is
// 2; hard_sigmoid a multiply-add and a clamp's two selects, 3, and hard_swish one more
// multiply, 4. The rest (relu, add, sub, mul, neg, abs, floor, ceil, round, max, min, the
// comparisons, where, not, transpose, cast, the reductions, reduce_mean's mean once per
// output) are one operation per element.
uint32_t ops_per_element(phx_op_id op) {
  switch (op) {
    case PHX_OP_LEAKY_RELU:
    case PHX_OP_PRELU:
    case PHX_OP_SIGN:
    case PHX_OP_CLIP:
    case PHX_OP_ARGMAX:
    case PHX_OP_QUANTIZE:
    case PHX_OP_DEQUANTIZE:
      return 2;
    case PHX_OP_DYNAMIC_QUANTIZE:
    case PHX_OP_ROPE:
    case PHX_OP_RECIPROCAL:
    case PHX_OP_HARD_SIGMOID:
      return 3;
    case PHX_OP_DIV:
    case PHX_OP_SQRT:
    case PHX_OP_EXP:
    case PHX_OP_LOG:
    case PHX_OP_SIN:
    case PHX_OP_COS:
    case PHX_OP_BATCH_NORM:
    case PHX_OP_HARD_SWISH:
      return 4;
    case PHX_OP_RMS_NORM:
    case PHX_OP_ELU:
      return 6;
    case PHX_OP_SELU:
      return 7;
    case PHX_OP_LAYER_NORM:
    case PHX_OP_INSTANCE_NORM:
    case PHX_OP_SILU:
    case PHX_OP_SIGMOID:
      return 8;
    case PHX_OP_TANH:
    case PHX_OP_ERF:
    case PHX_OP_POW:
      return 9;
    case PHX_OP_SOFTPLUS:
      return 11;
    case PHX_OP_GELU:
      return 12;
    case PHX_OP_LOG_SOFTMAX:
      return 13;
    case PHX_OP_SOFTMAX:
      return 16;
    default:
      return 1;
  }
}

// The width an op computes in, in 8-bit lanes: the wider of its first input and output
// (the operands it streams; scales and tables ride along).
uint32_t element_bytes(const phx_plugin_op& op) {
  return static_cast<uint32_t>(std::max(phx_plugin_dtype_size(op.inputs[0].dtype),
                                        phx_plugin_dtype_size(op.outputs[0].dtype)));
}

}  // namespace

Machine machine_of(const DeviceFigures& f) {
  Machine m;
  m.sram_bytes = f.sram_bytes;
  m.dram_bandwidth_gbps = f.dram_bandwidth_gbps;
  m.int8_macs_per_cycle = f.int8_macs_per_cycle;
  m.int16_macs_per_cycle = f.int16_macs_per_cycle;
  m.fp16_macs_per_cycle = f.fp16_macs_per_cycle;
  m.vector_lanes = f.vector_lanes;
  m.clock_ghz = f.clock_ghz;
  m.op_overhead_ns = f.op_overhead_ns;
  return m;
}

MacRate mac_rate(const phx_plugin_op& op) {
  const phx_dtype a = op.inputs[0].dtype;
  if (a == PHX_DTYPE_I16) return MacRate::kInt16;
  if (a == PHX_DTYPE_F16 || a == PHX_DTYPE_BF16 || a == PHX_DTYPE_F32) return MacRate::kFp16;
  return MacRate::kInt8;
}

std::optional<GemmWork> gemm_work(const phx_plugin_op& op) {
  const bool conv = op.op == PHX_OP_CONV2D || op.op == PHX_OP_QCONV2D;
  const bool transposed = op.op == PHX_OP_CONV_TRANSPOSE2D;
  if (op.op != PHX_OP_MATMUL && op.op != PHX_OP_QMATMUL && !conv && !transposed)
    return std::nullopt;
  const phx_plugin_tensor& a = op.inputs[0];
  const phx_plugin_tensor& out = op.outputs[0];
  GemmWork w;
  w.rate = mac_rate(op);
  w.activation_bytes = bytes(a);
  w.weight_bytes = bytes(op.inputs[1]);
  w.output_bytes = bytes(out);
  for (size_t i = 2; i < op.input_count; ++i) w.other_bytes += bytes(op.inputs[i]);
  if (conv) {
    const phx_plugin_tensor& weight = op.inputs[1];
    const auto* p = static_cast<const phx_conv2d_params*>(op.params);
    const bool nhwc = p != nullptr && p->layout == PHX_LAYOUT_NHWC;
    const uint64_t groups = p != nullptr ? p->groups : 1;
    const uint64_t c_in = u(nhwc ? a.shape[3] : a.shape[1]);
    const uint64_t kh = u(nhwc ? weight.shape[1] : weight.shape[2]);
    const uint64_t kw = u(nhwc ? weight.shape[2] : weight.shape[3]);
    const uint64_t pixels = nhwc ? u(out.shape[1] * out.shape[2]) : u(out.shape[2] * out.shape[3]);
    w.m = u(out.shape[0]) * pixels;
    w.k = c_in / groups * kh * kw;
    w.n = u(weight.shape[0]) / groups;
    w.batch = groups;
    return w;
  }
  if (transposed) {  // the conv2d of the input with its zeros inserted on chip
    const phx_plugin_tensor& weight = op.inputs[1];
    const auto* p = static_cast<const phx_conv_transpose2d_params*>(op.params);
    const uint64_t groups = p != nullptr ? p->groups : 1;
    w.m = u(out.shape[0] * out.shape[2] * out.shape[3]);
    w.k = u(weight.shape[0]) / groups * u(weight.shape[2] * weight.shape[3]);
    w.n = u(out.shape[1]) / groups;
    w.batch = groups;
    return w;
  }
  const auto* p = static_cast<const phx_matmul_params*>(op.params);
  const bool trans_a = p != nullptr && p->transpose_a != 0;
  w.m = u(out.shape[out.rank - 2]);
  w.n = u(out.shape[out.rank - 1]);
  w.k = u(a.shape[trans_a ? a.rank - 2 : a.rank - 1]);
  w.batch = elements(out) / (w.m * w.n);
  return w;
}

AttentionWork attention_work(const phx_plugin_op& op) {
  const phx_plugin_tensor &q = op.inputs[0], &v = op.inputs[2], &out = op.outputs[0];
  const uint64_t batch_heads = u(q.shape[0] * q.shape[1]);
  const uint64_t sq = u(q.shape[2]), d = u(q.shape[3]), skv = u(v.shape[2]), dv = u(v.shape[3]);
  AttentionWork w;
  w.scores.m = w.values.m = sq;
  w.scores.n = skv;
  w.scores.k = d;
  w.values.n = dv;
  w.values.k = skv;
  w.scores.batch = w.values.batch = batch_heads;
  w.scores.rate = w.values.rate = mac_rate(op);
  w.softmax.elements = batch_heads * sq * skv;
  w.softmax.ops_per_element = ops_per_element(PHX_OP_SOFTMAX);
  w.softmax.element_bytes = static_cast<uint32_t>(phx_plugin_dtype_size(q.dtype));
  w.dram_bytes = bytes(q) + bytes(op.inputs[1]) + bytes(v) + bytes(out);
  return w;
}

StreamWork stream_work(const phx_plugin_op& op) {
  StreamWork w;
  w.ops_per_element = ops_per_element(op.op);
  w.element_bytes = element_bytes(op);
  w.input_passes = op.op == PHX_OP_DYNAMIC_QUANTIZE ? 2 : 1;
  for (size_t i = 0; i < op.input_count; ++i) {
    w.input_bytes += bytes(op.inputs[i]);
    if (op.inputs[i].buffer != nullptr) w.elements = std::max(w.elements, elements(op.inputs[i]));
  }
  for (size_t i = 0; i < op.output_count; ++i) {
    w.output_bytes += bytes(op.outputs[i]);
    w.elements = std::max(w.elements, elements(op.outputs[i]));
  }
  if (const uint64_t per_output = plugin_common::ops_per_output(op)) {  // pools, resize
    w.elements = elements(op.outputs[0]);
    w.ops_per_element = static_cast<uint32_t>(per_output);
  }
  if (const auto picked = plugin_common::picked_read_bytes(op)) {  // gather, slice
    w.elements = elements(op.outputs[0]);
    w.input_bytes = *picked;
  }
  return w;
}

Estimate estimate_op(const phx_plugin_op& op, const Machine& machine) {
  if (const auto gemm = gemm_work(op)) return estimate_gemm(*gemm, machine);
  if (op.op == PHX_OP_ATTENTION) return estimate_attention(attention_work(op), machine);
  return estimate_stream(stream_work(op), machine);
}

}  // namespace phx::npu_sim
