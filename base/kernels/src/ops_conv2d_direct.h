// Private: conv2d computed directly, without im2col or gemm (ops_conv2d_direct.cpp), for
// the convolutions whose patch or groups are too small for the gemm to fit them well.
#pragma once

#include <phynexus/phynexus.h>

#include "phx/kernels/conv2d_geometry.h"
#include "phx/kernels/thread_pool.h"

namespace phx::kernels::ops {

// Whether conv2d_direct computes this convolution: f32, NCHW, not pointwise
// (Conv2dGeometry::is_pointwise), and a patch (Cig * KH * KW) of at most 32 values, groups
// of at most 16 input channels, at most 32 output channels per group, output rows of at
// most 8 pixels at stride 1, or at most 4 input channels per group.
bool conv2d_direct_fits(const Conv2dGeometry& g, phx_dtype dtype);

// out = act(conv2d(x, w) + bias) for a convolution conv2d_direct_fits takes; bias may be
// null. Each output is summed in f32 in patch order, from the bias (or 0). isa: one of
// gemm_supported_isas(), for the tests, which run each; null for the one gemm_isa() names.
void conv2d_direct(const Conv2dGeometry& g, const float* x, const float* w, const float* bias,
                   phx_activation act, float* out, ThreadPool& pool, const char* isa = nullptr);

}  // namespace phx::kernels::ops
