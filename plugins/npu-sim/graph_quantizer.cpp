#include "graph_quantizer.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "op_support.h"
#include "reporting.h"

namespace phx::npu_sim {
namespace {

const phx_plugin_value* input_value(const phx_plugin_graph& graph, const phx_plugin_node& node,
                                    size_t i) {
  if (i >= node.input_count || node.inputs[i] == PHX_PLUGIN_NO_VALUE) return nullptr;
  return &graph.values[node.inputs[i]];
}

const phx_plugin_value_range& range_of(const phx_plugin_graph& graph, uint32_t value) {
  return graph.value_ranges[value];
}

bool fixed_f32_constant(const phx_plugin_value& v) {
  return v.kind == PHX_PLUGIN_VALUE_CONSTANT && (v.flags & PHX_PLUGIN_VALUE_CONTENTS_FIXED) != 0 &&
         v.dtype == PHX_DTYPE_F32;
}

uint64_t element_count(const phx_plugin_value& v) {
  return phx_plugin_element_count(v.rank, v.shape);
}

// A bias the integer epilogue adds: one value per output channel (or one for all), with
// every dimension but the last of size 1, as qmatmul's and qconv2d's [N] bias.
bool channel_bias(const phx_plugin_value& bias, int64_t channels) {
  for (uint32_t d = 0; d + 1 < bias.rank; ++d)
    if (bias.shape[d] != 1) return false;
  const uint64_t count = element_count(bias);
  return count == 1 || count == uint64_t(channels);
}

std::string range_text(const phx_plugin_value_range& r) {
  using plugin_common::format_number;
  return "[" + format_number(r.min) + ", " + format_number(r.max) + "], rms " +
         format_number(r.rms);
}

// Empty when value's range is usable; else why not.
std::string range_obstacle(const phx_plugin_graph& graph, uint32_t value) {
  const phx_plugin_value_range& r = range_of(graph, value);
  if (usable_range(r)) return {};
  return "value '" + std::string(graph.values[value].name) + "' has no usable calibration range (" +
         range_text(r) + ")";
}

// Empty when node can run as qmatmul or qconv2d; else why not.
std::string quantization_obstacle(const phx_plugin_graph& graph, const phx_plugin_node& node,
                                  const DeviceFigures& figures) {
  const bool conv = node.op == PHX_OP_CONV2D;
  if (node.op != PHX_OP_MATMUL && !conv) return "only matmul and conv2d are quantized";
  if (!device_runs(figures, conv ? PHX_OP_QCONV2D : PHX_OP_QMATMUL, PHX_DTYPE_I8))
    return "the profile has no integer product";
  phx_activation activation = PHX_ACTIVATION_NONE;
  if (node.params != nullptr && conv) {
    activation = static_cast<const phx_conv2d_params*>(node.params)->activation;
  } else if (node.params != nullptr) {
    const auto* p = static_cast<const phx_matmul_params*>(node.params);
    if (p->transpose_a != 0) return "the integer matmul takes no transposed a";
    activation = p->activation;
  }
  if (activation != PHX_ACTIVATION_NONE && activation != PHX_ACTIVATION_RELU)
    return "the integer epilogue applies relu only";
  const phx_plugin_value* a = input_value(graph, node, 0);
  const phx_plugin_value* w = input_value(graph, node, 1);
  const phx_plugin_value& out = graph.values[node.outputs[0]];
  if (a == nullptr || a->dtype != PHX_DTYPE_F32 || out.dtype != PHX_DTYPE_F32)
    return "its activations are not f32";
  if (w == nullptr || !fixed_f32_constant(*w) || (!conv && w->rank != 2))
    return "its weight is no fixed f32 constant of rank 2 (matmul) or 4 (conv2d)";
  const phx_plugin_value* bias = input_value(graph, node, 2);
  if (bias != nullptr &&
      (!fixed_f32_constant(*bias) || !channel_bias(*bias, w->shape[weight_channel_axis(node)])))
    return "its bias is no fixed f32 constant of one value per output channel";
  std::string why = range_obstacle(graph, node.inputs[0]);
  if (why.empty()) why = range_obstacle(graph, node.outputs[0]);
  return why;
}

// Empty when value fits f16 compute; else why not.
std::string f16_value_obstacle(const phx_plugin_graph& graph, uint32_t value) {
  const phx_plugin_value& v = graph.values[value];
  if (v.dtype != PHX_DTYPE_F32) return "value '" + std::string(v.name) + "' is not f32";
  if (std::string why = range_obstacle(graph, value); !why.empty()) return why;
  const phx_plugin_value_range& r = range_of(graph, value);
  if (std::max(std::fabs(double(r.min)), std::fabs(double(r.max))) > kF16Max)
    return "value '" + std::string(v.name) + "' exceeds f16's range (" + range_text(r) + ")";
  return {};
}

// Empty when node can run in f16 compute; else why not.
std::string f16_obstacle(const phx_plugin_graph& graph, const phx_plugin_node& node,
                         const DeviceFigures& figures) {
  if (!device_runs(figures, node.op, PHX_DTYPE_F16))
    return "the profile has no f16 " + std::string(op_name(node.op));
  for (size_t i = 0; i < node.input_count; ++i) {
    const bool rope_table = node.op == PHX_OP_ROPE && i > 0;  // cos and sin stay f32
    if (node.inputs[i] == PHX_PLUGIN_NO_VALUE || rope_table) continue;
    if (std::string why = f16_value_obstacle(graph, node.inputs[i]); !why.empty()) return why;
  }
  for (size_t o = 0; o < node.output_count; ++o)
    if (std::string why = f16_value_obstacle(graph, node.outputs[o]); !why.empty()) return why;
  return {};
}

// int16 where the int8 step is too coarse for the input or the output and the profile
// has 16x8 products; int8 otherwise.
NodeCompute product_width(const phx_plugin_graph& graph, const phx_plugin_node& node,
                          const DeviceFigures& figures) {
  const double noise = std::max(int8_relative_noise(range_of(graph, node.inputs[0])),
                                int8_relative_noise(range_of(graph, node.outputs[0])));
  const phx_op_id product = node.op == PHX_OP_CONV2D ? PHX_OP_QCONV2D : PHX_OP_QMATMUL;
  if (noise > kInt8NoiseLimit && device_runs(figures, product, PHX_DTYPE_I16))
    return NodeCompute::kInt16;
  return NodeCompute::kInt8;
}

// round_half_even(x) saturated to [lo, hi]; NaN is not passed.
double round_clamp(double x, double lo, double hi) { return std::clamp(std::nearbyint(x), lo, hi); }

// A scale of 0, or one that underflows f32's normal range, is no scale (docs/quantization.md).
float usable_scale(double scale) {
  return scale >= double(std::numeric_limits<float>::min()) && std::isfinite(float(scale))
             ? float(scale)
             : 1.0f;
}

}  // namespace

uint32_t weight_channel_axis(const phx_plugin_node& node) {
  if (node.op == PHX_OP_CONV2D) return 0;
  const auto* p = static_cast<const phx_matmul_params*>(node.params);
  return p != nullptr && p->transpose_b != 0 ? 0 : 1;
}

NodeChoice choose_compute(const phx_plugin_graph& graph, size_t n, const DeviceFigures& figures) {
  const phx_plugin_node& node = graph.nodes[n];
  const phx_plugin_value* first = input_value(graph, node, 0);
  const phx_dtype dtype = first != nullptr ? first->dtype : PHX_DTYPE_INVALID;
  NodeChoice choice;
  if (device_runs(figures, node.op, dtype)) {
    choice.runs = true;
    return choice;
  }
  const std::string node_text = "node '" + std::string(node.name) + "' (" + op_name(node.op) +
                                " on " + dtype_name(dtype) + ")";
  if (graph.value_ranges == nullptr || dtype != PHX_DTYPE_F32) {
    choice.reason = node_text + ": the " + std::string(figures.profile->name) +
                    " NPU does not run it" +
                    (dtype == PHX_DTYPE_F32 ? " without calibration ranges" : "");
    return choice;
  }
  const std::string not_quantized = quantization_obstacle(graph, node, figures);
  if (not_quantized.empty()) {
    choice.runs = true;
    choice.compute = product_width(graph, node, figures);
    return choice;
  }
  const std::string not_f16 = f16_obstacle(graph, node, figures);
  if (not_f16.empty()) {
    choice.runs = true;
    choice.compute = NodeCompute::kF16;
    return choice;
  }
  choice.reason =
      node_text + ": not quantized (" + not_quantized + "), not in f16 (" + not_f16 + ")";
  return choice;
}

bool usable_range(const phx_plugin_value_range& r) {
  return std::isfinite(r.min) && std::isfinite(r.max) && r.min <= r.max && std::isfinite(r.rms) &&
         r.rms >= 0;
}

double int8_relative_noise(const phx_plugin_value_range& r) {
  const double lo = std::min(0.0, double(r.min)), hi = std::max(0.0, double(r.max));
  const double noise = (hi - lo) / 255.0 / std::sqrt(12.0);
  if (noise == 0) return 0;
  return r.rms > 0 ? noise / double(r.rms) : std::numeric_limits<double>::infinity();
}

QuantParams activation_params(const phx_plugin_value_range& r, phx_dtype dtype) {
  const double lo = std::min(0.0, double(r.min)), hi = std::max(0.0, double(r.max));
  QuantParams q;
  if (dtype == PHX_DTYPE_I16) {
    q.scale = usable_scale(std::max(-lo, hi) / 32767.0);
    return q;
  }
  q.scale = usable_scale((hi - lo) / 255.0);
  q.zero_point = int32_t(round_clamp(-128.0 - lo / double(q.scale), -128, 127));
  return q;
}

bool quantize_weights(const std::vector<float>& w, const int64_t* shape, uint32_t rank,
                      uint32_t axis, QuantizedWeights& out) {
  const uint64_t channels = uint64_t(shape[axis]);
  uint64_t inner = 1;
  for (uint32_t d = axis + 1; d < rank; ++d) inner *= uint64_t(shape[d]);
  std::vector<double> largest(channels, 0.0);
  for (size_t i = 0; i < w.size(); ++i) {
    if (!std::isfinite(w[i])) return false;
    double& m = largest[i / inner % channels];
    m = std::max(m, std::fabs(double(w[i])));
  }
  out.scales.resize(channels);
  for (uint64_t c = 0; c < channels; ++c) out.scales[c] = usable_scale(largest[c] / 127.0);
  out.values.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    // w / scale in f32, as the quantize op divides (docs/quantization.md).
    const float ratio = w[i] / out.scales[i / inner % channels];
    out.values[i] = int8_t(round_clamp(ratio, -127, 127));
  }
  return true;
}

bool quantize_bias(const std::vector<float>& bias, float a_scale,
                   const std::vector<float>& w_scales, std::vector<int32_t>& out) {
  out.resize(w_scales.size());
  for (size_t c = 0; c < w_scales.size(); ++c) {
    const float b = bias.size() == 1 ? bias[0] : bias[c];
    if (!std::isfinite(b)) return false;
    const double scale = double(a_scale) * double(w_scales[c]);
    out[c] = int32_t(round_clamp(double(b) / scale, std::numeric_limits<int32_t>::min(),
                                 std::numeric_limits<int32_t>::max()));
  }
  return true;
}

}  // namespace phx::npu_sim
