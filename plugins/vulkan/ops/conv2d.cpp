// conv2d, NCHW or NHWC, with stride, padding, dilation, groups, bias and a fused
// activation. Three kernels:
// - as a matmul (NCHW, groups wide enough: record_conv2d): per image and group,
//   y [c_out/groups x h_out w_out] = w [c_out/groups x cg kh kw] x col [cg kh kw x h_out
//   w_out], col written by shaders/im2col.comp into scratch memory (a 1x1 convolution
//   without stride or padding reads x itself), then the matmul kernel the device runs
//   fastest, with the bias and the activation in its epilogue. Images are taken in chunks
//   whose columns fit kColumnBytes.
// - by windows (NCHW, the depthwise and narrow grouped convolutions that a 128 x 128
//   output tile would mostly waste; shaders/conv2d_window.comp): an invocation computes 8
//   neighbouring outputs of a row from one window of each input row they read.
// - direct (shaders/conv2d.comp), one invocation per output element: NHWC, and windows
//   wider than kMaxWindow.
// Tensors larger than one binding are UNSUPPORTED.
#include <algorithm>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {
namespace {

// Which groups run as a matmul: those of at least kMinGroupK inputs x taps (the matmul's
// k) and kMinGroupOutputs outputs (its m; on lavapipe a band of 64 rows is the least it
// computes), or of fewer outputs down to kMinOutputs when the group has more than
// kWindowChannels input channels: the window kernel loads a window per input channel,
// so its time grows with them, while the matmul's waste does not (measured on lavapipe
// with MobileNetV2's 1x1 convolutions to 16 and 24 channels, and RegNet's groups of 8).
constexpr uint64_t kMinGroupK = 8;
constexpr uint64_t kMinGroupOutputs = 32;
constexpr uint64_t kMinOutputs = 8;
constexpr uint64_t kWindowChannels = 16;
// shaders/conv2d_window.comp: the outputs of an invocation, the most values of its window.
constexpr uint32_t kWindowOutputs = 8;
constexpr uint32_t kMaxWindow = 32;
// The most scratch memory a chunk's columns take (at least one image's).
constexpr uint64_t kColumnBytes = 16ull << 20;

uint32_t round_up8(uint64_t v) { return static_cast<uint32_t>((v + 7) / 8 * 8); }

struct Geometry {
  uint32_t n, c, h, w;
  uint32_t c_out, kh, kw, h_out, w_out;
};

Geometry geometry(const phx_plugin_op& op, bool nhwc) {
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor& weight = op.inputs[1];
  const phx_plugin_tensor& y = op.outputs[0];
  const auto dim = [](const phx_plugin_tensor& t, int i) {
    return static_cast<uint32_t>(t.shape[i]);
  };
  return {dim(x, 0),
          nhwc ? dim(x, 3) : dim(x, 1),
          nhwc ? dim(x, 1) : dim(x, 2),
          nhwc ? dim(x, 2) : dim(x, 3),
          dim(weight, 0),
          nhwc ? dim(weight, 1) : dim(weight, 2),
          nhwc ? dim(weight, 2) : dim(weight, 3),
          nhwc ? dim(y, 1) : dim(y, 2),
          nhwc ? dim(y, 2) : dim(y, 3)};
}

// The words conv2d.comp's and im2col.comp's push constants share, in their order: where
// an output's window lies in x.
struct Window {
  uint32_t kh, kw, h_out, w_out;
  uint32_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
};

Window window(const Geometry& g, const phx_conv2d_params& params) {
  return {g.kh,
          g.kw,
          g.h_out,
          g.w_out,
          params.stride[0],
          params.stride[1],
          params.padding[0],
          params.padding[2],
          params.dilation[0],
          params.dilation[1]};
}

void record_direct(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count;
    uint32_t n, c, h, w, c_out;
    Window window;
    uint32_t groups;
    uint32_t flags;  // bit 0: NHWC; bit 1: a bias is bound; bits 8..15: the activation
  };
  const phx_plugin_tensor* bias = optional_input(op, 2);
  const auto& params = *static_cast<const phx_conv2d_params*>(op.params);
  const bool nhwc = params.layout == PHX_LAYOUT_NHWC;
  const Geometry g = geometry(op, nhwc);
  const uint32_t flags =
      (nhwc ? 1u : 0u) | (bias ? 2u : 0u) | (static_cast<uint32_t>(params.activation) << 8);
  const Push push = {0, 0, g.n, g.c, g.h, g.w, g.c_out, window(g, params), params.groups, flags};
  const Binding wb = recorder.bind(op.inputs[1]);
  const Binding bb = bias ? recorder.bind(*bias) : wb;  // unread without a bias
  dispatch_per_element(recorder, "conv2d_" + std::string(dtype_name(op.inputs[0].dtype)),
                       {recorder.bind(op.inputs[0]), wb, bb, recorder.bind(op.outputs[0])}, push,
                       element_count(op.outputs[0]));
}

// The values of an input row that kWindowOutputs neighbouring outputs read.
uint32_t window_width(const phx_conv2d_params& params, uint32_t kw) {
  return (kWindowOutputs - 1) * params.stride[1] + (kw - 1) * params.dilation[1] + 1;
}

void record_by_windows(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t base, count;
    uint32_t c, h, w;
    uint32_t c_out, kh, h_out, w_out;
    uint32_t blocks;
    uint32_t stride_h, pad_top, pad_left, dilation_h;
    uint32_t groups;
    uint32_t flags;  // bit 1: a bias is bound; bits 8..15: the activation
  };
  const phx_plugin_tensor* bias = optional_input(op, 2);
  const auto& params = *static_cast<const phx_conv2d_params*>(op.params);
  const Geometry g = geometry(op, false);
  const uint32_t blocks = (g.w_out + kWindowOutputs - 1) / kWindowOutputs;
  const Push push = {0,
                     0,
                     g.c,
                     g.h,
                     g.w,
                     g.c_out,
                     g.kh,
                     g.h_out,
                     g.w_out,
                     blocks,
                     params.stride[0],
                     params.padding[0],
                     params.padding[2],
                     params.dilation[0],
                     params.groups,
                     (bias ? 2u : 0u) | (static_cast<uint32_t>(params.activation) << 8)};
  const Binding wb = recorder.bind(op.inputs[1]);
  const Binding bb = bias ? recorder.bind(*bias) : wb;  // unread without a bias
  dispatch_per_element(recorder, "conv2d_window_" + std::string(dtype_name(op.inputs[0].dtype)),
                       {recorder.bind(op.inputs[0]), wb, bb, recorder.bind(op.outputs[0])}, push,
                       static_cast<uint64_t>(g.n) * g.c_out * g.h_out * blocks,
                       {{0, g.kw}, {1, params.stride[1]}, {2, params.dilation[1]}});
}

// Elements [first, first + count) of t in one binding, the shift pointing at the first
// (bind_elements' points at element 0 of t, which the matmul's matrices do not count from).
ElementRange bind_from(OpRecorder& recorder, const phx_plugin_tensor& t, uint64_t first,
                       uint64_t count) {
  ElementRange range = bind_elements(recorder, t, first, count);
  range.shift += static_cast<uint32_t>(first);  // modulo 2^32, as the shift is
  return range;
}

// The weights as the matmul's a: [c_out x cg kh kw] with rows padded to k_rows (zeros),
// so that they load 8 at a time; the weights themselves when no padding is needed.
ElementRange matmul_weights(OpRecorder& recorder, const phx_plugin_tensor& weight,
                            uint32_t k_rows) {
  const auto rows = static_cast<uint32_t>(weight.shape[0]);
  const auto k = static_cast<uint32_t>(element_count(weight) / rows);
  if (k == k_rows) return {recorder.bind(weight), 0};
  const Binding padded =
      recorder.scratch(static_cast<uint64_t>(rows) * k_rows * dtype_bytes(weight.dtype));
  record_zero_padded_rows(recorder, weight, rows, k, k_rows, padded);
  recorder.barrier();
  return {padded, 0};
}

void record_as_matmul(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Im2colPush {
    uint32_t base, count, image0;
    uint32_t c, h, w, groups;
    Window window;
    uint32_t k_rows, p_cols;
  };
  const phx_plugin_tensor& x = op.inputs[0];
  const phx_plugin_tensor* bias = optional_input(op, 2);
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_conv2d_params*>(op.params);
  const Geometry g = geometry(op, false);
  const uint32_t groups = params.groups;
  const uint32_t k = g.c / groups * g.kh * g.kw;
  const uint32_t k_rows = round_up8(k);
  const uint64_t positions = static_cast<uint64_t>(g.h_out) * g.w_out;
  const uint32_t p_cols = round_up8(positions);
  // A 1x1 convolution without stride or padding is a matmul of x itself, when its rows
  // need no padding.
  const bool unpadded_1x1 = g.kh == 1 && g.kw == 1 && params.stride[0] == 1 &&
                            params.stride[1] == 1 && params.padding[0] == 0 &&
                            params.padding[1] == 0 && params.padding[2] == 0 &&
                            params.padding[3] == 0;
  const bool pointwise = unpadded_1x1 && k == k_rows && positions == p_cols;

  // One image's 1x1 convolution of one position (a squeeze-excitation's) is a row times
  // the weights, where the device has a kernel for that.
  if (unpadded_1x1 && g.n == 1 && positions == 1 && groups == 1) {
    const Binding yb = recorder.bind(y);
    const Binding bb = bias ? recorder.bind(*bias) : Binding{};
    const RowTimesMatrix mm = {x.dtype,
                               g.c_out,
                               k,
                               recorder.bind(x),
                               recorder.bind(op.inputs[1]),
                               yb,
                               bias ? &bb : nullptr,
                               static_cast<uint32_t>(params.activation)};
    if (record_row_times_matrix(recorder, mm)) return;
  }

  const uint64_t image_columns =
      static_cast<uint64_t>(groups) * k_rows * p_cols * dtype_bytes(x.dtype);
  if (!pointwise && image_columns > recorder.caps().max_binding_bytes) {
    fail_unsupported("conv2d: one image's columns exceed one binding");
  }
  const auto chunk =
      pointwise ? g.n
                : static_cast<uint32_t>(std::clamp<uint64_t>(kColumnBytes / image_columns, 1, g.n));

  // Output rows of whole eights are written 8 columns at a time where the device moves
  // eights.
  const bool eight_columns = moves_eights(recorder.caps(), x.dtype) && g.w_out % 8 == 0;

  const ElementRange a = matmul_weights(recorder, op.inputs[1], k_rows);
  const ElementRange bias_range = bias ? ElementRange{recorder.bind(*bias), 0} : ElementRange{};
  const Binding xb = pointwise ? Binding{} : recorder.bind(x);
  const Binding columns = pointwise ? Binding{} : recorder.scratch(chunk * image_columns);
  const uint64_t x_image = element_count(x) / g.n;
  const uint64_t y_image = element_count(y) / g.n;
  for (uint32_t image0 = 0; image0 < g.n; image0 += chunk) {
    const uint32_t images = std::min(chunk, g.n - image0);
    ElementRange b;
    if (pointwise) {
      b = bind_from(recorder, x, image0 * x_image, images * x_image);
    } else {
      if (image0 > 0) recorder.barrier();  // the last chunk's matmul has read the columns
      const Im2colPush push = {0,      0,     image0, g.c, g.h, g.w, groups, window(g, params),
                               k_rows, p_cols};
      dispatch_per_element(recorder, moving_kernel("im2col", x.dtype), {xb, columns}, push,
                           static_cast<uint64_t>(images) * groups * k_rows * g.h_out,
                           {{0, eight_columns ? 1u : 0u}});
      recorder.barrier();
      b = {columns, 0};
    }
    GroupedMatmul mm = {};
    mm.dtype = x.dtype;
    mm.m = g.c_out / groups;
    mm.n = static_cast<uint32_t>(positions);
    mm.k = k_rows;
    mm.b_rs = pointwise ? mm.n : p_cols;
    mm.images = images;
    mm.groups = groups;
    mm.activation = static_cast<uint32_t>(params.activation);
    mm.a = a;
    mm.b = b;
    mm.y = bind_from(recorder, y, image0 * y_image, images * y_image);
    mm.bias = bias ? &bias_range : nullptr;
    record_grouped_matmul(recorder, mm);
  }
}

}  // namespace

void record_conv2d(OpRecorder& recorder, const phx_plugin_op& op) {
  if (element_count(op.outputs[0]) == 0) return;  // no image or no output channel
  const auto& params = *static_cast<const phx_conv2d_params*>(op.params);
  const phx_plugin_tensor& weight = op.inputs[1];
  const bool nchw = params.layout == PHX_LAYOUT_NCHW;
  const auto group_outputs = static_cast<uint64_t>(weight.shape[0]) / params.groups;
  const auto group_inputs = static_cast<uint64_t>(weight.shape[1]);
  const auto group_k = static_cast<uint64_t>(weight.shape[1] * weight.shape[2] * weight.shape[3]);
  const bool matmul_fits =
      group_k >= kMinGroupK && (group_outputs >= kMinGroupOutputs ||
                                (group_outputs >= kMinOutputs && group_inputs > kWindowChannels));
  if (nchw && matmul_fits)
    record_as_matmul(recorder, op);
  else if (nchw && window_width(params, static_cast<uint32_t>(weight.shape[3])) <= kMaxWindow)
    record_by_windows(recorder, op);
  else
    record_direct(recorder, op);
}

}  // namespace phx::vulkan::ops
