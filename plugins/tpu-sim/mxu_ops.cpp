#include "mxu_ops.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "mxu_gemm.h"
#include "phx/kernels/conv2d_geometry.h"
#include "phx/kernels/convert.h"

namespace phx::tpu_sim {
namespace {

using kernels::HostTensor;
using kernels::ThreadPool;

// Runs f(begin, end) over [0, n) in chunks on the pool.
template <class F>
void parallel_chunks(ThreadPool& pool, int64_t n, int64_t chunk, F&& f) {
  const int64_t chunks = (n + chunk - 1) / chunk;
  pool.run(static_cast<size_t>(chunks), [&](size_t c) {
    const int64_t begin = static_cast<int64_t>(c) * chunk;
    f(begin, std::min(n, begin + chunk));
  });
}

constexpr int64_t kConvertChunk = 64 * 1024;

// The conversions, cloned per instruction set (they are a few percent of a large matmul).
#define PHX_TPU_SIM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

PHX_TPU_SIM_CLONES void widen_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = kernels::bf16_to_f32(src[i]);
}

PHX_TPU_SIM_CLONES void round_through_bf16(const float* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = kernels::bf16_to_f32(kernels::f32_to_bf16(src[i]));
}

// Subnormal values (magnitude under FLT_MIN, the smallest normal f32 and bf16) become
// zeros of their sign, as the TPU's arithmetic flushes them.
PHX_TPU_SIM_CLONES void flush_subnormals(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = std::fabs(x[i]) < FLT_MIN ? std::copysign(0.0f, x[i]) : x[i];
}

// bf16 shares f32's exponent: a zero exponent field with a non-zero fraction is subnormal.
PHX_TPU_SIM_CLONES void flush_subnormals_bf16(uint16_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = (x[i] & 0x7f80u) == 0 ? x[i] & 0x8000u : x[i];
}

// f16 values are exact in f32 (XLA widens f16 operands to f32 before a TPU dot).
PHX_TPU_SIM_CLONES void widen_f16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = kernels::f16_to_f32(src[i]);
}

// lo = bf16(x - hi): what the bf16 hi part of x leaves out, itself rounded to bf16.
PHX_TPU_SIM_CLONES void low_parts(const float* x, const float* hi, float* lo, int64_t n) {
  for (int64_t i = 0; i < n; ++i) lo[i] = kernels::bf16_to_f32(kernels::f32_to_bf16(x[i] - hi[i]));
}

// A tensor's values as f32 as they enter the MXU. Subnormals are flushed first when
// asked (so that a subnormal never rounds up to a normal bf16). Then f32 values (and f16
// ones, widened exactly) are, by precision: default, rounded to bf16 (hi); high, split
// into hi = bf16(x) and lo = bf16(x - hi), lo flushed too; highest, kept (hi). bf16
// values are kept: their low part is zero. hi() is t's own data when nothing changes it.
class MxuOperand {
 public:
  MxuOperand(const HostTensor& t, const MxuNumerics& numerics, ThreadPool& pool) {
    const bool rounded = t.dtype != PHX_DTYPE_BF16 && numerics.precision != Precision::kHighest;
    const bool split = rounded && numerics.precision == Precision::kHigh;
    if (t.dtype == PHX_DTYPE_F32 && !rounded && !numerics.flush_subnormals) {
      hi_ = static_cast<const float*>(t.data);
      return;
    }
    const int64_t n = kernels::element_count(t);
    // every element is written below
    hi_storage_.reset(new float[static_cast<size_t>(n)]);
    if (split) lo_storage_.reset(new float[static_cast<size_t>(n)]);
    float* hi = hi_storage_.get();
    float* lo = lo_storage_.get();
    parallel_chunks(pool, n, kConvertChunk, [&](int64_t b, int64_t e) {
      const auto* half = static_cast<const uint16_t*>(t.data) + b;
      if (t.dtype == PHX_DTYPE_BF16) {
        widen_bf16(half, hi + b, e - b);
      } else if (t.dtype == PHX_DTYPE_F16) {
        widen_f16(half, hi + b, e - b);
      } else {
        std::memcpy(hi + b, static_cast<const float*>(t.data) + b, size_t(e - b) * sizeof(float));
      }
      if (numerics.flush_subnormals) flush_subnormals(hi + b, e - b);
      if (split) std::memcpy(lo + b, hi + b, size_t(e - b) * sizeof(float));  // x, for now
      if (rounded) round_through_bf16(hi + b, hi + b, e - b);
      if (split) {
        low_parts(lo + b, hi + b, lo + b, e - b);
        if (numerics.flush_subnormals) flush_subnormals(lo + b, e - b);
      }
    });
    hi_ = hi;
  }
  const float* hi() const { return hi_; }
  const float* lo() const { return lo_storage_.get(); }  // null unless split

 private:
  std::unique_ptr<float[]> hi_storage_, lo_storage_;
  const float* hi_ = nullptr;
};

PHX_TPU_SIM_CLONES void add_into(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}

// Runs gemms(a values, b values, f32 sums) once per bf16 pass into acc (count values):
// once on the operands' values, or for split operands (high precision) three times,
// the passes' sums added in f32 as (hi.lo + lo.hi) + hi.hi (the small terms first; the
// lo.lo term is left out, as bf16x3 leaves it).
template <class Gemms>
void run_passes(const MxuOperand& a, const MxuOperand& b, float* acc, int64_t count, Gemms&& gemms,
                ThreadPool& pool) {
  if (a.lo() == nullptr || b.lo() == nullptr) {
    gemms(a.hi(), b.hi(), acc);
    return;
  }
  std::unique_ptr<float[]> pass(new float[static_cast<size_t>(count)]);
  const auto accumulate = [&] {
    parallel_chunks(pool, count, kConvertChunk,
                    [&](int64_t s, int64_t e) { add_into(acc + s, pass.get() + s, e - s); });
  };
  gemms(a.hi(), b.lo(), acc);
  gemms(a.lo(), b.hi(), pass.get());
  accumulate();
  gemms(a.hi(), b.hi(), pass.get());
  accumulate();
}

// Where the f32 sums go: out itself when it is f32, else scratch rounded into out later.
class Accumulator {
 public:
  explicit Accumulator(const HostTensor& out) {
    if (out.dtype == PHX_DTYPE_F32) {
      data_ = static_cast<float*>(out.data);
    } else {  // every element is written by the GEMM
      storage_.reset(new float[static_cast<size_t>(kernels::element_count(out))]);
      data_ = storage_.get();
    }
  }
  float* data() const { return data_; }

 private:
  std::unique_ptr<float[]> storage_;
  float* data_ = nullptr;
};

phx_op_id activation_op(phx_activation act) {
  switch (act) {
    case PHX_ACTIVATION_RELU:
      return PHX_OP_RELU;
    case PHX_ACTIVATION_GELU:
      return PHX_OP_GELU;
    case PHX_ACTIVATION_SILU:
      return PHX_OP_SILU;
    default:
      return PHX_OP_INVALID;
  }
}

// out = round(act(acc + bias)), with acc f32 of out's shape. The bias is no MXU input:
// it is added in f32 as it is, and broadcast as bias_view's shape says.
phx_status finish(float* acc, const HostTensor& bias_view, phx_activation act,
                  const HostTensor& out, ThreadPool& pool) {
  HostTensor sums = out;
  sums.data = acc;
  sums.dtype = PHX_DTYPE_F32;
  phx_status status = PHX_STATUS_OK;
  if (bias_view.data != nullptr) {
    const MxuOperand bias(bias_view, MxuNumerics{Precision::kHighest, false, 0}, pool);
    HostTensor inputs[2] = {sums, bias_view};
    inputs[1].data = const_cast<float*>(bias.hi());
    inputs[1].dtype = PHX_DTYPE_F32;
    status = kernels::run_op(PHX_OP_ADD, nullptr, inputs, 2, &sums, 1, pool);
  }
  if (status == PHX_STATUS_OK && act != PHX_ACTIVATION_NONE)
    status = kernels::run_op(activation_op(act), nullptr, &sums, 1, &sums, 1, pool);
  if (status == PHX_STATUS_OK && out.dtype != PHX_DTYPE_F32)
    status = kernels::run_op(PHX_OP_CAST, nullptr, &sums, 1, &out, 1, pool);
  return status;
}

// Flushes the subnormal values of t (f32 or bf16) when numerics asks for it. An f16
// result keeps its f16 subnormals (2^-24 .. 2^-14, normal in f32): f16 is no TPU compute
// type, only the dtype the f32 result is converted to.
void flush_output(const HostTensor& t, const MxuNumerics& numerics, ThreadPool& pool) {
  if (!numerics.flush_subnormals || t.dtype == PHX_DTYPE_F16) return;
  parallel_chunks(pool, kernels::element_count(t), kConvertChunk, [&](int64_t b, int64_t e) {
    if (t.dtype == PHX_DTYPE_BF16)
      flush_subnormals_bf16(static_cast<uint16_t*>(t.data) + b, e - b);
    else
      flush_subnormals(static_cast<float*>(t.data) + b, e - b);
  });
}

// The MXU's f32 sums (acc, of out's shape) flushed, then the epilogue, then the result
// flushed again: the bias and the activation can make a subnormal too.
phx_status finish_flushed(float* acc, const HostTensor& bias_view, phx_activation act,
                          const HostTensor& out, const MxuNumerics& numerics, ThreadPool& pool) {
  HostTensor sums = out;
  sums.data = acc;
  sums.dtype = PHX_DTYPE_F32;
  flush_output(sums, numerics, pool);
  const phx_status status = finish(acc, bias_view, act, out, pool);
  if (status == PHX_STATUS_OK) flush_output(out, numerics, pool);
  return status;
}

// The matrix of t (batch dimensions aligned to the right of out's) that out's batch
// index uses: dimensions of size 1 broadcast.
int64_t broadcast_matrix_index(const HostTensor& t, const HostTensor& out, int64_t index) {
  const int out_batch = static_cast<int>(out.rank) - 2, t_batch = static_cast<int>(t.rank) - 2;
  int64_t matrix = 0, stride = 1;
  for (int d = out_batch - 1; d >= 0; --d) {
    const int64_t coord = index % out.shape[d];
    index /= out.shape[d];
    const int td = d - (out_batch - t_batch);
    if (td < 0) break;
    if (t.shape[td] != 1) matrix += coord * stride;
    stride *= t.shape[td];
  }
  return matrix;
}

// The patch of output pixel p of image n for group grp, in the weight's k order:
// (c, i, j) for NCHW weights [C_out, C_in/g, KH, KW], (i, j, c) for NHWC [C_out, KH, KW,
// C_in/g]; taps outside the image are 0.
void gather_patch(const kernels::Conv2dGeometry& g, const float* x, int64_t n, int64_t grp,
                  int64_t p, float* dst) {
  const int64_t oh = p / g.w_out, ow = p % g.w_out;
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.stride_h - g.pad_top + i * g.dil_h;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t iw = ow * g.stride_w - g.pad_left + j * g.dil_w;
      const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
      for (int64_t c = 0; c < g.c_in_group; ++c) {
        const int64_t channel = grp * g.c_in_group + c;
        float v = 0.0f;
        if (inside)
          v = g.nhwc ? x[((n * g.h + ih) * g.w + iw) * g.c_in + channel]
                     : x[((n * g.c_in + channel) * g.h + ih) * g.w + iw];
        const int64_t k = g.nhwc ? (i * g.kw + j) * g.c_in_group + c : (c * g.kh + i) * g.kw + j;
        dst[k] = v;
      }
    }
  }
}

// The patches of every group are gathered for this many output pixels at a time.
constexpr int64_t kPatchFloats = int64_t{1} << 20;  // 4 MiB

// One pass of a convolution: sums (of out's shape) = the GEMMs of the patches of x
// with w, each output pixel's patch gathered from x (f32 values as they enter the MXU).
void conv2d_pass(const kernels::Conv2dGeometry& g, const float* x, const float* weight, float* sums,
                 int64_t depth, ThreadPool& pool) {
  const int64_t pixels = g.pixels_out(), patch = g.patch();
  const int64_t chunk = std::clamp<int64_t>(kPatchFloats / (patch * g.groups), 1, pixels);
  std::vector<float> patches(static_cast<size_t>(g.groups * chunk * patch));
  std::vector<MxuProduct> products(static_cast<size_t>(g.groups));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t p0 = 0; p0 < pixels; p0 += chunk) {
      const int64_t count = std::min(chunk, pixels - p0);
      // patches[grp][q] is the patch of pixel p0 + q for group grp.
      parallel_chunks(pool, g.groups * count, 64, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r)
          gather_patch(g, x, n, r / count, p0 + r % count,
                       patches.data() + (r / count * chunk + r % count) * patch);
      });
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        MxuProduct& p = products[static_cast<size_t>(grp)];
        const float* cols = patches.data() + grp * chunk * patch;
        const float* w = weight + grp * g.c_out_group * patch;
        const int64_t c0 = grp * g.c_out_group;
        p.k = patch;
        if (g.nhwc) {  // out[pixel, c] = patch(pixel) . w[c]
          p.m = count;
          p.n = g.c_out_group;
          p.a = cols;
          p.lda = patch;
          p.trans_a = false;
          p.b = w;
          p.ldb = patch;
          p.trans_b = true;
          p.c = sums + (n * pixels + p0) * g.c_out + c0;
          p.ldc = g.c_out;
        } else {  // out[c, pixel] = w[c] . patch(pixel)
          p.m = g.c_out_group;
          p.n = count;
          p.a = w;
          p.lda = patch;
          p.trans_a = false;
          p.b = cols;
          p.ldb = patch;
          p.trans_b = true;
          p.c = sums + (n * g.c_out + c0) * pixels + p0;
          p.ldc = pixels;
        }
      }
      mxu_gemm(products, depth, pool);
    }
  }
}

// The conv2d that computes conv_transpose2d (mxu_ops.h) over x [N, C_in, H, W] with
// weight [C_in, C_out / groups, KH, KW] into out [N, C_out, Ho, Wo]: its input is x with
// its pixels stride apart, its weight the flipped one (flip_weight).
kernels::Conv2dGeometry transposed_geometry(const phx_conv_transpose2d_params& p,
                                            const HostTensor& x, const HostTensor& weight,
                                            const HostTensor& out) {
  kernels::Conv2dGeometry g;
  g.batch = x.shape[0];
  g.c_in = x.shape[1];
  g.h = (x.shape[2] - 1) * p.stride[0] + 1;
  g.w = (x.shape[3] - 1) * p.stride[1] + 1;
  g.c_out = out.shape[1];
  g.kh = weight.shape[2];
  g.kw = weight.shape[3];
  g.h_out = out.shape[2];
  g.w_out = out.shape[3];
  g.groups = p.groups;
  g.c_in_group = g.c_in / g.groups;
  g.c_out_group = g.c_out / g.groups;
  g.dil_h = p.dilation[0];
  g.dil_w = p.dilation[1];
  // The bottom and right padding need no field: taps past the input read zeros, and the
  // output's size already holds output_padding.
  g.pad_top = g.dil_h * (g.kh - 1) - int64_t{p.padding[0]};
  g.pad_left = g.dil_w * (g.kw - 1) - int64_t{p.padding[2]};
  return g;
}

// x's pixels (f32 values as they enter the MXU) stride apart in dst, zeros between them.
void spread_input(const kernels::Conv2dGeometry& g, const HostTensor& x, const float* values,
                  const phx_conv_transpose2d_params& p, float* dst) {
  const int64_t h = x.shape[2], w = x.shape[3];
  std::fill(dst, dst + g.batch * g.c_in * g.h * g.w, 0.0f);
  for (int64_t plane = 0; plane < g.batch * g.c_in; ++plane)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        dst[(plane * g.h + i * p.stride[0]) * g.w + j * p.stride[1]] =
            values[(plane * h + i) * w + j];
}

// weight [C_in, C_out / groups, KH, KW] as conv2d's [C_out, C_in / groups, KH, KW],
// flipped in both spatial dimensions.
void flip_weight(const kernels::Conv2dGeometry& g, const float* weight, float* dst) {
  for (int64_t grp = 0; grp < g.groups; ++grp)
    for (int64_t o = 0; o < g.c_out_group; ++o)
      for (int64_t c = 0; c < g.c_in_group; ++c)
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j)
            dst[(((grp * g.c_out_group + o) * g.c_in_group + c) * g.kh + i) * g.kw + j] =
                weight[(((grp * g.c_in_group + c) * g.c_out_group + o) * g.kh + (g.kh - 1 - i)) *
                           g.kw +
                       (g.kw - 1 - j)];
}

}  // namespace

phx_status mxu_matmul(const phx_matmul_params& params, const HostTensor& a, const HostTensor& b,
                      const HostTensor& bias, const HostTensor& out, const MxuNumerics& numerics,
                      ThreadPool& pool) {
  try {
    const bool trans_a = params.transpose_a != 0, trans_b = params.transpose_b != 0;
    const int64_t m = out.shape[out.rank - 2], n = out.shape[out.rank - 1];
    const int64_t k = trans_a ? a.shape[a.rank - 2] : a.shape[a.rank - 1];
    const MxuOperand av(a, numerics, pool), bv(b, numerics, pool);
    // In one pass without bias or activation a bf16 output is the f32 sums rounded once,
    // which the GEMM does as it stores them: no f32 accumulator, no separate rounding.
    const bool direct = out.dtype == PHX_DTYPE_BF16 && bias.data == nullptr &&
                        params.activation == PHX_ACTIVATION_NONE && av.lo() == nullptr;
    std::unique_ptr<Accumulator> acc;
    if (!direct) acc = std::make_unique<Accumulator>(out);
    const int64_t batch = kernels::element_count(out) / (m * n);
    std::vector<MxuProduct> products(static_cast<size_t>(batch));
    const auto gemms = [&](const float* a_values, const float* b_values, float* sums) {
      for (int64_t i = 0; i < batch; ++i) {
        MxuProduct& p = products[static_cast<size_t>(i)];
        p.m = m;
        p.n = n;
        p.k = k;
        p.a = a_values + broadcast_matrix_index(a, out, i) * m * k;
        p.lda = trans_a ? m : k;
        p.trans_a = trans_a;
        p.b = b_values + broadcast_matrix_index(b, out, i) * k * n;
        p.ldb = trans_b ? k : n;
        p.trans_b = trans_b;
        p.c = direct ? static_cast<void*>(static_cast<uint16_t*>(out.data) + i * m * n)
                     : static_cast<void*>(sums + i * m * n);
        p.c_dtype = direct ? PHX_DTYPE_BF16 : PHX_DTYPE_F32;
        p.ldc = n;
      }
      mxu_gemm(products, numerics.pass_depth, pool);
    };
    run_passes(av, bv, direct ? nullptr : acc->data(), batch * m * n, gemms, pool);
    if (direct) {
      flush_output(out, numerics, pool);
      return PHX_STATUS_OK;
    }
    return finish_flushed(acc->data(), bias, params.activation, out, numerics, pool);
  } catch (const std::bad_alloc&) {
    return PHX_STATUS_OUT_OF_MEMORY;
  }
}

phx_status mxu_conv2d(const phx_conv2d_params& params, const HostTensor& x,
                      const HostTensor& weight, const HostTensor& bias, const HostTensor& out,
                      const MxuNumerics& numerics, ThreadPool& pool) {
  try {
    const kernels::Conv2dGeometry g = kernels::conv2d_geometry(params, x, weight, out);
    const MxuOperand xv(x, numerics, pool), wv(weight, numerics, pool);
    const Accumulator acc(out);
    run_passes(
        xv, wv, acc.data(), kernels::element_count(out),
        [&](const float* x_values, const float* w_values, float* sums) {
          conv2d_pass(g, x_values, w_values, sums, numerics.pass_depth, pool);
        },
        pool);
    // The bias is per output channel: [C_out] broadcasts over NHWC's last dimension,
    // [C_out, 1, 1] over NCHW's channels.
    HostTensor bias_view = bias;
    if (bias.data != nullptr && !g.nhwc) {
      bias_view.rank = 3;
      bias_view.shape[0] = g.c_out;
      bias_view.shape[1] = bias_view.shape[2] = 1;
    }
    return finish_flushed(acc.data(), bias_view, params.activation, out, numerics, pool);
  } catch (const std::bad_alloc&) {
    return PHX_STATUS_OUT_OF_MEMORY;
  }
}

phx_status mxu_conv_transpose2d(const phx_conv_transpose2d_params& params, const HostTensor& x,
                                const HostTensor& weight, const HostTensor& bias,
                                const HostTensor& out, const MxuNumerics& numerics,
                                ThreadPool& pool) {
  try {
    const kernels::Conv2dGeometry g = transposed_geometry(params, x, weight, out);
    const MxuOperand xv(x, numerics, pool), wv(weight, numerics, pool);
    const Accumulator acc(out);
    std::vector<float> spread(static_cast<size_t>(g.batch * g.c_in * g.h * g.w));
    std::vector<float> flipped(static_cast<size_t>(kernels::element_count(weight)));
    run_passes(
        xv, wv, acc.data(), kernels::element_count(out),
        [&](const float* x_values, const float* w_values, float* sums) {
          spread_input(g, x, x_values, params, spread.data());
          flip_weight(g, w_values, flipped.data());
          conv2d_pass(g, spread.data(), flipped.data(), sums, numerics.pass_depth, pool);
        },
        pool);
    HostTensor bias_view = bias;  // [C_out] as [C_out, 1, 1], over NCHW's channels
    if (bias.data != nullptr) {
      bias_view.rank = 3;
      bias_view.shape[0] = g.c_out;
      bias_view.shape[1] = bias_view.shape[2] = 1;
    }
    return finish_flushed(acc.data(), bias_view, PHX_ACTIVATION_NONE, out, numerics, pool);
  } catch (const std::bad_alloc&) {
    return PHX_STATUS_OUT_OF_MEMORY;
  }
}

}  // namespace phx::tpu_sim
