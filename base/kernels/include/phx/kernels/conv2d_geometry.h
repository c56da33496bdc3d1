// The geometry of a conv2d (docs/ops.md), in elements, read from its checked operands:
// what every host implementation that lowers a convolution to a GEMM starts from.
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>

#include "phx/kernels/ops.h"

namespace phx::kernels {

struct Conv2dGeometry {
  bool nhwc = false;
  int64_t batch = 0, c_in = 0, h = 0, w = 0;
  int64_t c_out = 0, kh = 0, kw = 0;
  int64_t h_out = 0, w_out = 0;
  int64_t groups = 1, c_in_group = 0, c_out_group = 0;
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, dil_h = 1, dil_w = 1;
  int64_t pixels_out() const { return h_out * w_out; }
  int64_t patch() const { return c_in_group * kh * kw; }  // gemm's K
  bool is_pointwise() const {
    return kh == 1 && kw == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 && pad_left == 0 &&
           h_out == h && w_out == w;
  }
};

inline Conv2dGeometry conv2d_geometry(const phx_conv2d_params& p, const HostTensor& x,
                                      const HostTensor& wt, const HostTensor& out) {
  Conv2dGeometry g;
  g.nhwc = p.layout == PHX_LAYOUT_NHWC;
  g.batch = x.shape[0];
  g.c_in = g.nhwc ? x.shape[3] : x.shape[1];
  g.h = g.nhwc ? x.shape[1] : x.shape[2];
  g.w = g.nhwc ? x.shape[2] : x.shape[3];
  g.c_out = wt.shape[0];
  g.kh = g.nhwc ? wt.shape[1] : wt.shape[2];
  g.kw = g.nhwc ? wt.shape[2] : wt.shape[3];
  g.h_out = g.nhwc ? out.shape[1] : out.shape[2];
  g.w_out = g.nhwc ? out.shape[2] : out.shape[3];
  g.groups = p.groups;
  g.c_in_group = g.c_in / g.groups;
  g.c_out_group = g.c_out / g.groups;
  g.stride_h = p.stride[0];
  g.stride_w = p.stride[1];
  g.pad_top = p.padding[0];
  g.pad_left = p.padding[2];
  g.dil_h = p.dilation[0];
  g.dil_w = p.dilation[1];
  return g;
}

}  // namespace phx::kernels
