// conv2d as im2col + gemm(), per image and group, in both layouts.
//
// NCHW: out[c, p] = sum_r w[c, r] col[r, p], col [Cig*KH*KW, pixels]; the bias is per
//   output row (GemmArgs::bias_rows), fused into gemm with the activation.
// NHWC: out[p, c] = sum_r col[p, r] w[c, r], col [pixels, KH*KW*Cig]; the bias is per
//   output column, fused into gemm with the activation.
// An f32 NCHW convolution with a short patch or small groups is computed directly instead
// (ops_conv2d_direct.cpp). A 1x1 convolution with stride 1 and no padding needs no col: x
// is the matrix (of one pixel: a row, conv_pixel). An NCHW layer of few output channels is computed
// in tasks of blocks of pixels, each building its col and multiplying it on its own thread
// (conv_nchw_blocks). Otherwise col is built for a bounded number of whole images, or of one
// image's output pixels, at a time (Parts); each part is one gemm call, batched over its images.
#include <cstring>
#include <memory>
#include <vector>

#include "ops_common.h"
#include "ops_conv2d_direct.h"
#include "phx/kernels/conv2d_geometry.h"
#include "phx/kernels/gemm.h"

namespace phx::kernels::ops {
namespace {

// NCHW col rows [r0, r1) for output pixels [p0, p0 + count): row r = (c, i, j) holds
// x[c, oh*sh - pt + i*dh, ow*sw - pl + j*dw] (0 outside the image). x is the group's
// first channel of the image. Each output row's run of pixels is split into the columns
// left of the image, those inside (a copy, contiguous at stride 1) and those right of it,
// so that no element tests its bounds.
template <class T>
void im2col_nchw(const Conv2dGeometry& g, const T* x, T* col, int64_t r0, int64_t r1, int64_t p0,
                 int64_t count) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / (g.kh * g.kw), i = r / g.kw % g.kh, j = r % g.kw;
    const T* plane = x + c * g.h * g.w;
    T* d = col + r * count;
    // Output columns [ow_in, ow_out) read inside the row: 0 <= ow*sw + offset < w.
    const int64_t offset = j * g.dil_w - g.pad_left;
    const int64_t ow_in =
        std::min(g.w_out, offset >= 0 ? 0 : (g.stride_w - 1 - offset) / g.stride_w);
    const int64_t ow_out = std::clamp<int64_t>(
        g.w - offset <= 0 ? 0 : (g.w - offset + g.stride_w - 1) / g.stride_w, ow_in, g.w_out);
    // Output row oh from column ow0 to ow1; d[k] is column ow0 + k.
    for (int64_t oh = p0 / g.w_out, ow0 = p0 % g.w_out, left = count; left > 0; ++oh, ow0 = 0) {
      const int64_t ow1 = std::min(g.w_out, ow0 + left);
      const int64_t ih = oh * g.stride_h - g.pad_top + i * g.dil_h;
      if (ih < 0 || ih >= g.h) {
        zero_short(d, ow1 - ow0);
      } else {
        const int64_t a = std::clamp(ow_in, ow0, ow1), b = std::clamp(ow_out, a, ow1);
        zero_short(d, a - ow0);
        const T* src = plane + ih * g.w;
        if (g.stride_w != 1) {
          for (int64_t ow = a; ow < b; ++ow) d[ow - ow0] = src[ow * g.stride_w + offset];
        } else {
          copy_short(src + (a + offset), d + (a - ow0), b - a);
        }
        zero_short(d + (b - ow0), ow1 - b);
      }
      d += ow1 - ow0;
      left -= ow1 - ow0;
    }
  }
}

// NHWC col rows for output pixels [p0 + q0, p0 + q1): row q = the patch (i, j, c) of
// pixel p0 + q, Cig contiguous channels per tap. x is the image, offset to the group.
template <class T>
void im2col_nhwc(const Conv2dGeometry& g, const T* x, T* col, int64_t p0, int64_t q0, int64_t q1) {
  const int64_t cig = g.c_in_group;
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t oh = (p0 + q) / g.w_out, ow = (p0 + q) % g.w_out;
    T* dst = col + q * g.patch();
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t ih = oh * g.stride_h - g.pad_top + i * g.dil_h;
      for (int64_t j = 0; j < g.kw; ++j, dst += cig) {
        const int64_t iw = ow * g.stride_w - g.pad_left + j * g.dil_w;
        if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) {
          std::fill(dst, dst + cig, T{0});
        } else {
          std::memcpy(dst, x + (ih * g.w + iw) * g.c_in, cig * sizeof(T));
        }
      }
    }
  }
}

// col is kept near this many bytes, whatever the image and patch sizes.
constexpr int64_t kColBytes = 4 << 20;
// Several images' col: about this many bytes per thread, so that the part of col each
// thread's gemm packs is still in its second-level cache (a col of 4 MiB for one thread
// made the CNN of bench_onnx 10% slower than one of 1 MiB).
constexpr int64_t kThreadColBytes = 1 << 20;
// The col of one NCHW task: with the gemm's packed copy of it, within a second-level cache
// of 1 MiB. Its blocks of pixels are whole panels of the gemm's widest (32 columns).
constexpr int64_t kTaskColBytes = 384 << 10;
constexpr int64_t kBlockUnit = 32;

// The pool of one thread: a task's gemm runs on the task's own thread.
ThreadPool& serial_pool() {
  static ThreadPool pool(1);
  return pool;
}

// What one gemm call computes: `images` whole images (a batched gemm, which gives each
// thread whole images when there are enough: small images then need no split of their
// product, whose every part would pack the other operand again), when one image's col
// fits in kColBytes; else `pixels` output pixels of one image. A pointwise convolution
// reads x itself: every image in one call.
struct Parts {
  int64_t images = 1, pixels = 0;
};

Parts parts_of(const Conv2dGeometry& g, int64_t elem_bytes, int64_t threads) {
  const int64_t pixels = g.pixels_out(), patch_bytes = g.patch() * elem_bytes;
  if (g.is_pointwise()) return {g.batch, pixels};
  if (patch_bytes * pixels > kColBytes)
    return {1, std::clamp<int64_t>(kColBytes / patch_bytes, 1, pixels)};
  // As many images as fit, a multiple of the threads when each gets one, in calls of equal
  // size.
  int64_t fit = std::clamp<int64_t>(threads * kThreadColBytes / (patch_bytes * pixels), 1, g.batch);
  if (fit >= threads) fit -= fit % threads;
  const int64_t calls = (g.batch + fit - 1) / fit;
  return {(g.batch + calls - 1) / calls, pixels};
}

// col is written whole before it is read: left uninitialized.
template <class T>
std::unique_ptr<T[]> scratch(int64_t elements) {
  return std::unique_ptr<T[]>(elements > 0 ? new T[static_cast<size_t>(elements)] : nullptr);
}

// The pixels of one conv_nchw_blocks task.
int64_t block_pixels(const Conv2dGeometry& g, int64_t elem_bytes) {
  return std::clamp<int64_t>(kTaskColBytes / (g.patch() * elem_bytes) / kBlockUnit * kBlockUnit,
                             kBlockUnit, g.pixels_out());
}

// Whether conv_nchw_blocks pays: each of its tasks packs the weights (M x K) again, where
// one gemm over whole images has each thread pack all of col (K x N, N the pixels) and
// moves a col larger than the caches through memory. The tasks' packing is the smaller
// when M < threads * block: the early layers of a CNN (64 channels of 56x56), not the
// deep ones (512 of 7x7, where a block would be the whole image and one task).
bool takes_blocks(const Conv2dGeometry& g, int64_t elem_bytes, int64_t threads) {
  return !g.is_pointwise() && g.c_out_group < threads * block_pixels(g, elem_bytes);
}

// NCHW, not pointwise: tasks of (image, group, block of output pixels), each building the
// col of its block in a buffer of its thread and multiplying it there, on that thread. A
// block's col is about kTaskColBytes: the gemm then packs it from the second-level cache
// where a col of whole images went through memory twice (written, then packed: resnet18's
// 64x56x56 3x3 convolutions, 7 MB each).
template <class T>
void conv_nchw_blocks(const Conv2dGeometry& g, const T* x, const T* wt, const float* bias,
                      phx_activation act, void* out, phx_dtype dtype, ThreadPool& pool) {
  const int64_t pixels = g.pixels_out(), patch = g.patch(), x_image = g.c_in * g.h * g.w;
  const int64_t block = block_pixels(g, sizeof(T));
  const int64_t blocks = (pixels + block - 1) / block;
  const size_t out_bytes = dtype_bytes(dtype);
  parallel_for(pool, g.batch * g.groups * blocks, patch * block * g.c_out_group,
               [&](int64_t t0, int64_t t1) {
                 thread_local std::vector<T> col;
                 for (int64_t t = t0; t < t1; ++t) {
                   const int64_t image = t / (g.groups * blocks), grp = t / blocks % g.groups;
                   const int64_t p0 = t % blocks * block, count = std::min(block, pixels - p0);
                   const int64_t c0 = grp * g.c_out_group;
                   if (col.size() < static_cast<size_t>(patch * count))
                     col.resize(static_cast<size_t>(patch * count));
                   im2col_nchw(g, x + image * x_image + grp * g.c_in_group * g.h * g.w, col.data(),
                               0, patch, p0, count);
                   GemmArgs args;
                   args.in_dtype = dtype;
                   args.m = g.c_out_group;
                   args.n = count;
                   args.k = patch;
                   args.a = wt + c0 * patch;
                   args.lda = patch;
                   args.b = col.data();
                   args.ldb = count;
                   args.c =
                       static_cast<char*>(out) + ((image * g.c_out + c0) * pixels + p0) * out_bytes;
                   args.ldc = pixels;
                   args.out_dtype = dtype;
                   args.bias_rows = bias != nullptr ? bias + c0 : nullptr;
                   args.activation = act;
                   gemm(args, serial_pool());
                 }
               });
}

// NCHW, pointwise or with few pixels per weight: one gemm over whole images (x itself is
// the matrix of a pointwise convolution), threaded inside the gemm.
template <class T>
void conv_nchw(const Conv2dGeometry& g, const T* x, const T* wt, const float* bias,
               phx_activation act, void* out, phx_dtype dtype, ThreadPool& pool) {
  const int64_t pixels = g.pixels_out(), patch = g.patch(), x_image = g.c_in * g.h * g.w;
  const bool pointwise = g.is_pointwise();
  const Parts parts = parts_of(g, sizeof(T), pool.size());
  const std::unique_ptr<T[]> col = scratch<T>(pointwise ? 0 : parts.images * patch * parts.pixels);
  const size_t out_bytes = dtype_bytes(dtype);

  GemmArgs args;
  args.in_dtype = dtype;
  args.out_dtype = dtype;
  args.activation = act;
  args.k = patch;
  args.m = g.c_out_group;
  args.lda = patch;  // every image multiplies the same weights: batch_stride_a 0
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const int64_t c0 = grp * g.c_out_group;
    args.a = wt + c0 * patch;
    args.bias_rows = bias != nullptr ? bias + c0 : nullptr;
    for (int64_t n0 = 0; n0 < g.batch; n0 += parts.images) {
      const int64_t images = std::min(parts.images, g.batch - n0);
      const T* xg = x + n0 * x_image + grp * g.c_in_group * g.h * g.w;
      args.batch = images;
      for (int64_t p0 = 0; p0 < pixels; p0 += parts.pixels) {
        const int64_t count = std::min(parts.pixels, pixels - p0);
        if (pointwise) {
          args.b = xg;
          args.ldb = pixels;
          args.batch_stride_b = x_image;
        } else {
          parallel_for(pool, images * patch, count, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1;) {  // rows of image i, then of the next
              const int64_t i = r / patch, end = std::min(r1, (i + 1) * patch);
              im2col_nchw(g, xg + i * x_image, col.get() + i * patch * count, r - i * patch,
                          end - i * patch, p0, count);
              r = end;
            }
          });
          args.b = col.get();
          args.ldb = count;
          args.batch_stride_b = patch * count;
        }
        args.n = count;
        args.c = static_cast<char*>(out) + ((n0 * g.c_out + c0) * pixels + p0) * out_bytes;
        args.ldc = pixels;
        args.batch_stride_c = g.c_out * pixels;
        gemm(args, pool);
      }
    }
  }
}

// NCHW of one pixel, pointwise: a squeeze-and-excitation block's convolutions of a pooled
// [C, 1, 1]. An image's channels are then a row, as in NHWC, and its output is that row
// times the weights transposed: a product of one row, which the gemm's skinny path
// computes streaming the weights once, where the NCHW product's one column filled a panel
// of 32 (MobileNetV3's 576 -> 144: 3 GFLOP/s). Its bias is per column: fused.
template <class T>
void conv_pixel(const Conv2dGeometry& g, const T* x, const T* wt, const float* bias,
                phx_activation act, void* out, phx_dtype dtype, ThreadPool& pool) {
  GemmArgs args;
  args.in_dtype = dtype;
  args.out_dtype = dtype;
  args.activation = act;
  args.m = 1;
  args.k = g.c_in_group;
  args.n = g.c_out_group;
  args.batch = g.batch;
  args.lda = g.c_in_group;
  args.batch_stride_a = g.c_in;
  args.trans_b = true;  // w is [C_out, C_in / groups]: its rows are the columns of the product
  args.ldb = g.c_in_group;
  args.ldc = g.c_out_group;
  args.batch_stride_c = g.c_out;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const int64_t c0 = grp * g.c_out_group;
    args.a = x + grp * g.c_in_group;
    args.b = wt + c0 * g.c_in_group;
    args.c = static_cast<char*>(out) + c0 * dtype_bytes(dtype);
    args.bias = bias != nullptr ? bias + c0 : nullptr;
    gemm(args, pool);
  }
}

template <class T>
void conv_nhwc(const Conv2dGeometry& g, const T* x, const T* wt, const float* bias,
               phx_activation act, void* out, phx_dtype dtype, ThreadPool& pool) {
  const int64_t pixels = g.pixels_out(), patch = g.patch(), x_image = g.h * g.w * g.c_in;
  const bool pointwise = g.is_pointwise();
  const Parts parts = parts_of(g, sizeof(T), pool.size());
  const std::unique_ptr<T[]> col = scratch<T>(pointwise ? 0 : parts.images * patch * parts.pixels);
  const size_t out_bytes = dtype_bytes(dtype);

  GemmArgs args;
  args.in_dtype = dtype;
  args.out_dtype = dtype;
  args.k = patch;
  args.n = g.c_out_group;
  args.trans_b = true;  // w is [C_out, patch]: its rows are the columns of the product
  args.ldb = patch;     // every image multiplies the same weights: batch_stride_b 0
  args.ldc = g.c_out;
  args.batch_stride_c = pixels * g.c_out;
  args.activation = act;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    const int64_t c0 = grp * g.c_out_group;
    args.b = wt + c0 * patch;
    args.bias = bias != nullptr ? bias + c0 : nullptr;
    for (int64_t n0 = 0; n0 < g.batch; n0 += parts.images) {
      const int64_t images = std::min(parts.images, g.batch - n0);
      const T* xg = x + n0 * x_image + grp * g.c_in_group;
      args.batch = images;
      for (int64_t p0 = 0; p0 < pixels; p0 += parts.pixels) {
        const int64_t count = std::min(parts.pixels, pixels - p0);
        if (pointwise) {
          args.a = xg + p0 * g.c_in;
          args.lda = g.c_in;
          args.batch_stride_a = x_image;
        } else {
          parallel_for(pool, images * count, patch, [&](int64_t q0, int64_t q1) {
            for (int64_t q = q0; q < q1;) {  // pixels of image i, then of the next
              const int64_t i = q / count, end = std::min(q1, (i + 1) * count);
              im2col_nhwc(g, xg + i * x_image, col.get() + i * count * patch, p0, q - i * count,
                          end - i * count);
              q = end;
            }
          });
          args.a = col.get();
          args.lda = patch;
          args.batch_stride_a = count * patch;
        }
        args.m = count;
        args.c = static_cast<char*>(out) + ((n0 * pixels + p0) * g.c_out + c0) * out_bytes;
        gemm(args, pool);
      }
    }
  }
}

template <class T>
void conv(const Conv2dGeometry& g, const HostTensor& x, const HostTensor& wt, const float* bias,
          phx_activation act, const HostTensor& out, ThreadPool& pool) {
  const T* px = static_cast<const T*>(x.data);
  const T* pw = static_cast<const T*>(wt.data);
  if (g.nhwc) {
    conv_nhwc(g, px, pw, bias, act, out.data, out.dtype, pool);
  } else if (g.is_pointwise() && g.pixels_out() == 1) {
    conv_pixel(g, px, pw, bias, act, out.data, out.dtype, pool);
  } else if (conv2d_direct_fits(g, out.dtype)) {
    conv2d_direct(g, reinterpret_cast<const float*>(px), reinterpret_cast<const float*>(pw), bias,
                  act, static_cast<float*>(out.data), pool);
  } else if (takes_blocks(g, sizeof(T), pool.size())) {
    conv_nchw_blocks(g, px, pw, bias, act, out.data, out.dtype, pool);
  } else {
    conv_nchw(g, px, pw, bias, act, out.data, out.dtype, pool);
  }
}

}  // namespace

void run_conv2d(const phx_conv2d_params& params, const HostTensor& x, const HostTensor& weight,
                const HostTensor& bias, const HostTensor& out, ThreadPool& pool) {
  const Conv2dGeometry g = conv2d_geometry(params, x, weight, out);
  std::vector<float> bias_f32;
  if (bias.data != nullptr) {
    bias_f32.resize(static_cast<size_t>(g.c_out));
    copy_to_f32(bias, bias_f32.data());
  }
  const float* b = bias.data != nullptr ? bias_f32.data() : nullptr;
  if (x.dtype == PHX_DTYPE_F32) {
    conv<uint32_t>(g, x, weight, b, params.activation, out, pool);
  } else {  // f16, bf16: im2col moves their bits; gemm reads them as in_dtype
    conv<uint16_t>(g, x, weight, b, params.activation, out, pool);
  }
}

}  // namespace phx::kernels::ops
