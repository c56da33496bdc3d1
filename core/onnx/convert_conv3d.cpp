// 3-D Conv and ConvTranspose as conv2d and conv_transpose2d over depth slices, so that
// they run on every device that runs the 2-D ops, with the FLOPs of a 3-D kernel.
//
// A 3-D convolution is the sum over its kernel's depth taps kd of a 2-D convolution:
// output depth o reads input depth o * stride + kd * dilation (of x padded along depth),
// so tap kd is one conv2d over the strided depth slice of x that its outputs read, with
// the kernel's plane kd, the depths in the batch. A transposed one scatters instead: input
// depth i adds its tap-kd plane into output depth i * stride + kd * dilation, so tap kd is
// one conv_transpose2d over every input depth, spread along depth by the stride (zeros
// between) and shifted by kd * dilation; the taps summed, the padding cut off.
#include <algorithm>
#include <string>
#include <vector>

#include "attributes.h"
#include "converters.h"
#include "window.h"

namespace phx::onnx_import {
namespace {

constexpr uint32_t kDepth = 2;  // x [N, C, D, H, W]

// The graph builder's steps for one ONNX node, each node named after it with a suffix.
struct Steps {
  Importer& im;
  const onnx::NodeProto& node;

  phx_value add(phx_op_id op, const void* params, std::vector<phx_value> inputs,
                const std::string& suffix) {
    return im.add_node(node, op, params, inputs, 1, {}, suffix.c_str())[0];
  }
  // [N, C, D, ...] <-> [N, D, C, ...]
  phx_value swap_channels_and_depth(phx_value x, const std::string& suffix) {
    phx_transpose_params params{};
    params.struct_size = sizeof params;
    const uint32_t perm[5] = {0, 2, 1, 3, 4};
    std::copy(perm, perm + 5, params.perm);
    return add(PHX_OP_TRANSPOSE, &params, {x}, suffix);
  }
  phx_value slice(phx_value x, uint32_t axis, int64_t start, int64_t end, int64_t step,
                  const std::string& suffix) {
    phx_slice_params params = PHX_SLICE_PARAMS_INIT;
    params.starts[axis] = start;
    params.ends[axis] = end;
    params.steps[axis] = step;
    return add(PHX_OP_SLICE, &params, {x}, suffix);
  }
  phx_value pad(phx_value x, uint32_t axis, uint32_t begin, uint32_t end,
                const std::string& suffix) {
    if (begin == 0 && end == 0) return x;
    phx_pad_params params = PHX_PAD_PARAMS_INIT;
    params.begin[axis] = begin;
    params.end[axis] = end;
    return add(PHX_OP_PAD, &params, {x}, suffix);
  }
  phx_value reshape(phx_value x, const std::vector<int64_t>& shape, const std::string& suffix) {
    return reshape_to(im, node, x, shape, suffix.c_str());
  }
  // The kernel's depth plane kd of w [A, B, KD, KH, KW] as [A, B, KH, KW].
  phx_value kernel_plane(phx_value w, int64_t kd, const phx_value_info& wi) {
    const std::string tap = " " + std::to_string(kd);
    const phx_value plane = slice(w, kDepth, kd, kd + 1, 1, "kernel plane" + tap);
    return reshape(plane, {0, 0, wi.shape[3], wi.shape[4]}, "kernel plane" + tap + " as 2-D");
  }
  phx_value sum(phx_value total, phx_value term, int64_t kd) {
    if (total == PHX_VALUE_NONE) return term;
    return add(PHX_OP_ADD, nullptr, {total, term}, "sum of depth taps to " + std::to_string(kd));
  }
};

// x's depth, height and width: the lowering reshapes by them.
void require_static_extent(Importer& im, const onnx::NodeProto& node, const phx_value_info& xi) {
  for (uint32_t d = 2; d < 5; ++d)
    if (xi.shape[d] == PHX_DIM_DYNAMIC)
      im.needs_sizes(node, "a 3-D convolution over a dynamic spatial dimension");
}

}  // namespace

void convert_conv3d(Importer& im, const onnx::NodeProto& node) {
  Steps s{im, node};
  const phx_value x = im.graph_input(node, 0), w = im.graph_input(node, 1);
  const phx_value_info xi = im.info(x), wi = im.info(w);
  require_static_extent(im, node, xi);
  if (wi.rank != 5) im.invalid(node, "the weight of a 3-D convolution must be of rank 5");
  const std::vector<int64_t> kernel(wi.shape + 2, wi.shape + 5);
  const std::vector<int64_t> stride = per_dim(node, "strides", 3, 1);
  const std::vector<int64_t> dilation = per_dim(node, "dilations", 3, 1);
  if (stride.size() != 3 || dilation.size() != 3)
    im.invalid(node, "strides and dilations need one entry per spatial dimension");
  uint32_t begin[3] = {}, end[3] = {};
  window_pads(im, node, xi, 3, kernel, stride, dilation, begin, end);
  const int64_t padded = xi.shape[2] + begin[0] + end[0];
  const int64_t reach = dilation[0] * (kernel[0] - 1) + 1;
  if (padded < reach) im.invalid(node, "the kernel is deeper than the padded input");
  const int64_t depth_out = (padded - reach) / stride[0] + 1;

  phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;
  for (size_t d = 0; d < 2; ++d) {
    params.stride[d] = static_cast<uint32_t>(stride[1 + d]);
    params.dilation[d] = static_cast<uint32_t>(dilation[1 + d]);
    params.padding[2 * d] = begin[1 + d];
    params.padding[2 * d + 1] = end[1 + d];
  }
  params.groups = static_cast<uint32_t>(attr_int(node, "group", 1));

  const phx_value depth_major =
      s.pad(s.swap_channels_and_depth(x, "depth first"), 1, begin[0], end[0], "depth padding");
  phx_value total = PHX_VALUE_NONE;
  for (int64_t kd = 0; kd < kernel[0]; ++kd) {
    const std::string tap = " " + std::to_string(kd);
    const int64_t first = kd * dilation[0];
    const phx_value depths = s.slice(depth_major, 1, first, first + (depth_out - 1) * stride[0] + 1,
                                     stride[0], "depths of tap" + tap);
    const phx_value planes = s.reshape(depths, {-1, xi.shape[1], xi.shape[3], xi.shape[4]},
                                       "depths of tap" + tap + " as a batch");
    std::vector<phx_value> inputs = {planes, s.kernel_plane(w, kd, wi)};
    if (kd == 0 && im.has_input(node, 2)) inputs.push_back(im.graph_input(node, 2));
    total = s.sum(total, s.add(PHX_OP_CONV2D, &params, inputs, "conv2d of tap" + tap), kd);
  }
  const phx_value_info ti = im.info(total);  // [N * depth_out, C_out, H_out, W_out]
  const phx_value y =
      s.reshape(total, {-1, depth_out, ti.shape[1], ti.shape[2], ti.shape[3]}, "depths apart");
  im.define(node, 0, s.swap_channels_and_depth(y, "channels first"), im.input(node, 0).elem_type);
}

void convert_conv_transpose3d(Importer& im, const onnx::NodeProto& node,
                              const TransposedWindow& window) {
  Steps s{im, node};
  const phx_value x = im.graph_input(node, 0), w = im.graph_input(node, 1);
  const phx_value_info xi = im.info(x), wi = im.info(w);
  require_static_extent(im, node, xi);
  if (wi.rank != 5) im.invalid(node, "the weight of a 3-D convolution must be of rank 5");
  const int64_t depth = xi.shape[2], kernel_depth = wi.shape[2], stride = window.stride[0];
  const int64_t spread = (depth - 1) * stride + 1;  // the input depths, stride apart
  const int64_t full = spread + window.dilation[0] * (kernel_depth - 1) + window.output_padding[0];
  const int64_t depth_out = full - window.begin[0] - window.end[0];
  if (depth_out < 1) im.invalid(node, "the padding leaves no output depth");

  phx_conv_transpose2d_params params = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  params.groups = static_cast<uint32_t>(attr_int(node, "group", 1));
  for (size_t d = 0; d < 2; ++d) {
    params.stride[d] = static_cast<uint32_t>(window.stride[1 + d]);
    params.dilation[d] = static_cast<uint32_t>(window.dilation[1 + d]);
    params.output_padding[d] = static_cast<uint32_t>(window.output_padding[1 + d]);
    params.padding[2 * d] = window.begin[1 + d];
    params.padding[2 * d + 1] = window.end[1 + d];
  }

  const phx_value planes =
      s.reshape(s.swap_channels_and_depth(x, "depth first"),
                {-1, xi.shape[1], xi.shape[3], xi.shape[4]}, "depths as a batch");
  phx_value total = PHX_VALUE_NONE;
  phx_value_info zi = PHX_VALUE_INFO_INIT;  // [N * D, C_out, H_out, W_out]
  for (int64_t kd = 0; kd < kernel_depth; ++kd) {
    const std::string tap = "tap " + std::to_string(kd);
    const phx_value z = s.add(PHX_OP_CONV_TRANSPOSE2D, &params, {planes, s.kernel_plane(w, kd, wi)},
                              "conv_transpose2d of " + tap);
    zi = im.info(z);
    const int64_t plane = zi.shape[1] * zi.shape[2] * zi.shape[3];
    // [N, D * stride, plane]: each input depth followed by stride - 1 planes of zeros,
    // the zeros after the last cut off.
    phx_value placed = s.reshape(z, {-1, depth, 1, plane}, tap + " by depth");
    placed = s.pad(placed, 2, 0, static_cast<uint32_t>(stride - 1), tap + " stride apart");
    placed = s.reshape(placed, {-1, depth * stride, plane}, tap + " spread");
    if (stride > 1) placed = s.slice(placed, 1, 0, spread, 1, tap + " to its last depth");
    const int64_t shift = kd * window.dilation[0];
    placed = s.pad(placed, 1, static_cast<uint32_t>(shift),
                   static_cast<uint32_t>(full - spread - shift), tap + " shifted");
    total = s.sum(total, placed, kd);
  }
  if (depth_out != full)
    total = s.slice(total, 1, window.begin[0], full - window.end[0], 1, "depth padding cut off");
  phx_value y =
      s.reshape(total, {-1, depth_out, zi.shape[1], zi.shape[2], zi.shape[3]}, "depths apart");
  y = s.swap_channels_and_depth(y, "channels first");
  if (im.has_input(node, 2)) {
    const phx_value bias =
        s.reshape(im.graph_input(node, 2), {zi.shape[1], 1, 1, 1}, "bias per channel");
    y = s.add(PHX_OP_ADD, nullptr, {y, bias}, "bias");
  }
  im.define(node, 0, y, im.input(node, 0).elem_type);
}

}  // namespace phx::onnx_import
