// How npu-sim runs each node of a graph it compiles, and the quantization it applies
// (docs/npu-sim.md, "Compiling a float model (optimize_model)"):
//   - a node whose op and first-input dtype the profile runs (op_support.h) runs as the
//     eager op does ("native");
//   - with calibration ranges, an f32 matmul or conv2d whose weights (and bias) are fixed
//     constants and whose activation is none or relu runs quantized: int8 weights per
//     output channel, int8 activations, or int16 ("16x8") where the int8 step is too
//     coarse for the values (kInt8NoiseLimit) and the profile has the int16 MACs;
//   - with calibration ranges, any other f32 node the profile runs in f16 whose values fit
//     in f16 runs in f16 ("f16 compute");
//   - anything else the device does not run: the host places it on another device.
// The quantization follows docs/quantization.md (TFLite's conventions): weights symmetric
// in [-127, 127], activations asymmetric int8 or symmetric int16 per tensor, the bias
// int32 at a_scale * w_scale, rounding half to even with saturation.
#pragma once

#include <phynexus/plugin.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"

namespace phx::npu_sim {

enum class NodeCompute { kNative, kInt8, kInt16, kF16 };

// The largest int8 quantization noise, relative to the value's root mean square, that a
// quantized node's activation (input or output) may have before it takes int16: the
// noise of a step (hi - lo) / 255 is step / sqrt(12) (uniform rounding error). A
// Gaussian's min-max range over a calibration set spans about +-4 to +-5 sigma: 0.9% to
// 1.1%, what int8 is expected to give (shared reference: 1-2%). 2% is passed only by a
// range more than twice as wide as the signal needs: outliers stretched it.
constexpr double kInt8NoiseLimit = 0.02;

// The largest finite f16 value: an f32 value beyond it cannot go through f16 compute.
constexpr double kF16Max = 65504.0;

struct NodeChoice {
  bool runs = false;  // false: the device runs the node in none of the ways above
  NodeCompute compute = NodeCompute::kNative;
  std::string reason;  // when !runs: why, naming the node
};

// How a device of figures runs node n of graph (graph.value_ranges may be null: then
// only native nodes run). Never fails: a hostile range is a reason not to run the node.
NodeChoice choose_compute(const phx_plugin_graph& graph, size_t n, const DeviceFigures& figures);

// Whether the range is one a quantizer can use: finite, min <= max, rms finite and >= 0.
bool usable_range(const phx_plugin_value_range& range);

// The noise of int8's step over range (widened to 0), relative to its rms; 0 for a zero
// range, infinity for a non-zero range of rms 0.
double int8_relative_noise(const phx_plugin_value_range& range);

struct QuantParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// An activation's per-tensor parameters for dtype (PHX_DTYPE_I8: asymmetric over the
// range widened to 0; PHX_DTYPE_I16: symmetric, zero point 0). A zero range, or one
// whose scale underflows f32, gives scale 1. range must be usable.
QuantParams activation_params(const phx_plugin_value_range& range, phx_dtype dtype);

// The axis of a quantized node's weight (input 1) that holds its output channels: N of a
// matmul's b ([K, N], or [N, K] with transpose_b), C_out of a conv2d's weight.
uint32_t weight_channel_axis(const phx_plugin_node& node);

struct QuantizedWeights {
  std::vector<int8_t> values;  // the weight's shape
  std::vector<float> scales;   // one per channel
};

// Quantizes w (of shape[0 .. rank)) symmetrically per channel along axis: scale =
// max |w| / 127 of the channel (1 for an all-zero channel). False when w holds a
// non-finite value.
bool quantize_weights(const std::vector<float>& w, const int64_t* shape, uint32_t rank,
                      uint32_t axis, QuantizedWeights& out);

// The bias in int32 at scale a_scale * w_scales[c], rounded half to even and saturated;
// bias has one value per channel, or one for all. False when it holds a non-finite value.
bool quantize_bias(const std::vector<float>& bias, float a_scale,
                   const std::vector<float>& w_scales, std::vector<int32_t>& out);

}  // namespace phx::npu_sim
