#include "op_cost.h"

#include <algorithm>

#include "op_work.h"

namespace phx::tpu_sim {
namespace {

// A TensorCore's vector unit is 8 sublanes x 128 lanes of 32-bit ALUs (Norrie et al.,
// "The Design Process for Google's Training Chips: TPUv2 and TPUv3", IEEE Micro 2021):
// one elementary operation on 1024 elements per cycle.
constexpr uint64_t kVectorLanes = 8 * 128;

uint64_t elements(const phx_plugin_tensor& t) { return phx_plugin_element_count(t.rank, t.shape); }

uint64_t bytes(const phx_plugin_tensor& t) {
  if (t.buffer == nullptr) return 0;  // an absent optional input
  return elements(t) * phx_plugin_dtype_size(t.dtype);
}

// Elementary vector operations per element, first order: one for arithmetic, compares
// and moves; a divide is a reciprocal plus a Newton step; exp and erf are polynomial
// evaluations; the normalizations and softmax pass over the data more than once.
uint64_t ops_per_element(phx_op_id op) {
  switch (op) {
    case PHX_OP_DIV:
      return 4;
    case PHX_OP_GELU:
    case PHX_OP_SILU:
      return 12;
    case PHX_OP_SOFTMAX:
      return 16;
    case PHX_OP_ATTENTION:  // per score: the softmax's 16, the scale and the mask
      return 18;
    case PHX_OP_ROPE:  // two products and a sum per feature
      return 3;
    case PHX_OP_LAYER_NORM:
    case PHX_OP_RMS_NORM:
      return 8;
    default:
      return 1;
  }
}

// The HBM bytes op reads: every input once, but gather and slice only what they pick
// (op_work.h).
uint64_t read_bytes(const phx_plugin_op& op) {
  if (const auto picked = plugin_common::picked_read_bytes(op)) return *picked;
  uint64_t total = 0;
  for (size_t i = 0; i < op.input_count; ++i) total += bytes(op.inputs[i]);
  return total;
}

// Both products of an attention, one after the other on the arrays: their folds and
// cycles add; the utilization is over both; the mapping efficiency is the mean over
// every fold of both.
MxuEstimate attention_estimate(const AttentionGemms& g, const MxuLayout& mxu, TimingMode mode) {
  const MxuEstimate s = estimate_gemm(g.scores, mxu, mode);
  const MxuEstimate v = estimate_gemm(g.values, mxu, mode);
  MxuEstimate e;
  e.folds = s.folds + v.folds;
  e.folds_per_mxu = s.folds_per_mxu + v.folds_per_mxu;
  e.cycles = s.cycles + v.cycles;
  if (e.cycles == 0) return e;
  const auto macs = [](const GemmShape& m) { return double(m.m) * m.n * m.k * m.batch; };
  e.utilization = (macs(g.scores) + macs(g.values)) /
                  (double(e.cycles) * double(mxu.rows) * double(mxu.cols) * double(mxu.count));
  e.mapping_efficiency =
      (s.mapping_efficiency * double(s.folds) + v.mapping_efficiency * double(v.folds)) /
      double(e.folds);
  e.padding_waste = 1.0 - e.mapping_efficiency;
  return e;
}

}  // namespace

std::optional<GemmShape> lowered_gemm(const phx_plugin_op& op) {
  if (op.op == PHX_OP_MATMUL) {
    const phx_plugin_tensor& a = op.inputs[0];
    const phx_plugin_tensor& out = op.outputs[0];
    const auto* p = static_cast<const phx_matmul_params*>(op.params);
    const bool trans_a = p != nullptr && p->transpose_a != 0;
    GemmShape s;
    s.m = static_cast<uint64_t>(out.shape[out.rank - 2]);
    s.n = static_cast<uint64_t>(out.shape[out.rank - 1]);
    s.k = static_cast<uint64_t>(a.shape[trans_a ? a.rank - 2 : a.rank - 1]);
    s.batch = elements(out) / (s.m * s.n);
    return s;
  }
  if (op.op == PHX_OP_CONV2D) {
    const phx_plugin_tensor& x = op.inputs[0];
    const phx_plugin_tensor& w = op.inputs[1];
    const phx_plugin_tensor& out = op.outputs[0];
    const auto* p = static_cast<const phx_conv2d_params*>(op.params);
    const bool nhwc = p != nullptr && p->layout == PHX_LAYOUT_NHWC;
    const uint64_t groups = p != nullptr ? p->groups : 1;
    const uint64_t c_out = static_cast<uint64_t>(w.shape[0]);
    const uint64_t c_in = static_cast<uint64_t>(nhwc ? x.shape[3] : x.shape[1]);
    const uint64_t kh = static_cast<uint64_t>(nhwc ? w.shape[1] : w.shape[2]);
    const uint64_t kw = static_cast<uint64_t>(nhwc ? w.shape[2] : w.shape[3]);
    const uint64_t pixels =
        nhwc ? uint64_t(out.shape[1] * out.shape[2]) : uint64_t(out.shape[2] * out.shape[3]);
    GemmShape s;
    s.m = static_cast<uint64_t>(out.shape[0]) * pixels;
    s.k = c_in / groups * kh * kw;
    s.n = c_out / groups;
    s.batch = groups;
    return s;
  }
  if (op.op == PHX_OP_CONV_TRANSPOSE2D) {  // the conv2d it is lowered to (mxu_ops.h)
    const phx_plugin_tensor& w = op.inputs[1];
    const phx_plugin_tensor& out = op.outputs[0];
    const auto* p = static_cast<const phx_conv_transpose2d_params*>(op.params);
    const uint64_t groups = p != nullptr ? p->groups : 1;
    GemmShape s;
    s.m = static_cast<uint64_t>(out.shape[0] * out.shape[2] * out.shape[3]);
    s.k =
        static_cast<uint64_t>(w.shape[0]) / groups * static_cast<uint64_t>(w.shape[2] * w.shape[3]);
    s.n = static_cast<uint64_t>(out.shape[1]) / groups;
    s.batch = groups;
    return s;
  }
  return std::nullopt;
}

AttentionGemms attention_gemms(const phx_plugin_op& op) {
  const phx_plugin_tensor& q = op.inputs[0];
  const phx_plugin_tensor& k = op.inputs[1];
  const phx_plugin_tensor& out = op.outputs[0];
  const uint64_t heads = static_cast<uint64_t>(q.shape[0] * q.shape[1]);
  const uint64_t sq = static_cast<uint64_t>(q.shape[2]), d = static_cast<uint64_t>(q.shape[3]);
  const uint64_t skv = static_cast<uint64_t>(k.shape[2]);
  const uint64_t dv = static_cast<uint64_t>(out.shape[3]);
  return {GemmShape{sq, skv, d, heads}, GemmShape{sq, dv, skv, heads}};
}

uint64_t vector_cycles(const phx_plugin_op& op, uint32_t tensor_cores) {
  const uint64_t lanes = kVectorLanes * std::max<uint32_t>(tensor_cores, 1);
  if (op.op == PHX_OP_ATTENTION) {  // the softmax over every score
    const AttentionGemms g = attention_gemms(op);
    const uint64_t scores = g.scores.batch * g.scores.m * g.scores.n;
    return (scores * ops_per_element(op.op) + lanes - 1) / lanes;
  }
  if (const uint64_t per_output = plugin_common::ops_per_output(op))  // pools, resize
    return (elements(op.outputs[0]) * per_output + lanes - 1) / lanes;
  if (plugin_common::picks_elements(op))  // gather, slice
    return (elements(op.outputs[0]) * ops_per_element(op.op) + lanes - 1) / lanes;
  uint64_t touched = 0;
  for (size_t i = 0; i < op.input_count; ++i)
    if (op.inputs[i].buffer != nullptr) touched = std::max(touched, elements(op.inputs[i]));
  for (size_t i = 0; i < op.output_count; ++i) touched = std::max(touched, elements(op.outputs[i]));
  return (touched * ops_per_element(op.op) + lanes - 1) / lanes;
}

OpCost cost_op(const phx_plugin_op& op, const SimConfig& config) {
  const ChipConfig& chip = config.chip;
  OpCost cost;
  cost.hbm_bytes = read_bytes(op);
  for (size_t i = 0; i < op.output_count; ++i) cost.hbm_bytes += bytes(op.outputs[i]);
  uint64_t cycles = 0;
  const MxuLayout layout{chip.mxu_size, chip.mxu_size, chip.mxu_count};
  if (op.op == PHX_OP_ATTENTION) {
    cost.uses_mxu = true;
    cost.mxu_passes = mxu_passes(config.precision, op.inputs[0].dtype);
    AttentionGemms gemms = attention_gemms(op);
    gemms.scores.batch *= cost.mxu_passes;
    gemms.values.batch *= cost.mxu_passes;
    cost.mxu = attention_estimate(gemms, layout, config.timing);
    cost.vector_cycles = vector_cycles(op, chip.tensor_cores);
    cycles = cost.mxu.cycles + cost.vector_cycles;
  } else if (auto gemm = lowered_gemm(op)) {
    cost.uses_mxu = true;
    // The passes are GEMMs of the same shape, one after another on the arrays.
    cost.mxu_passes = mxu_passes(config.precision, op.inputs[0].dtype);
    gemm->batch *= cost.mxu_passes;
    cost.mxu = estimate_gemm(*gemm, layout, config.timing);
    cycles = cost.mxu.cycles;
  } else {
    cost.vector_cycles = vector_cycles(op, chip.tensor_cores);
    cycles = cost.vector_cycles;
  }
  cost.compute_time_ns = double(cycles) / chip.clock_ghz;               // GHz = cycles per ns
  cost.hbm_time_ns = double(cost.hbm_bytes) / chip.hbm_bandwidth_gbps;  // GB/s = bytes per ns
  cost.memory_bound = cost.hbm_time_ns > cost.compute_time_ns;
  cost.estimated_time_ns =
      std::max(cost.compute_time_ns, cost.hbm_time_ns) + config.launch_overhead_ns;
  return cost;
}

}  // namespace phx::tpu_sim
