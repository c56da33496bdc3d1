// Direct convolution for a short patch (K = Cig*KH*KW <= 32: the first layer of an image
// network, 3 input channels; a depthwise layer). There the gemm fits poorly: K is too short
// to amortize its tiles' loads and stores, C_out too few rows for its 14-row tiles, and
// im2col writes K copies of the image. Each output row is computed from a zero-padded copy
// of the image's group instead (no bounds tests): a block of kOutBlock channels times a tile
// of pixels of accumulators, in registers, takes K multiply-adds, each a broadcast weight
// times the tile's input values at a fixed offset. With a stride s along the width, the
// copy splits each row into s phases (column c at c / s of phase c % s), so that a tap's
// values for consecutive output pixels are consecutive there too: the stride-2 depthwise
// layers of MobileNet and EfficientNet take the same tiles.
//
// The vectors follow the instruction set that gemm_isa() names (PHX_CPU_ISA caps it): a
// tile is 2 zmm per channel (32 pixels) with AVX-512, 2 ymm with AVX2 + FMA, 2 xmm
// otherwise: a block is 8 registers of accumulators on every path.
#include "ops_conv2d_direct.h"

#include <cstring>
#include <string_view>
#include <vector>

#include "ops_common.h"
#include "phx/kernels/gemm.h"
#include "vec.h"

namespace phx::kernels::ops {
namespace {

constexpr int64_t kMaxPatch = 32;
constexpr int kOutBlock = 4;

// Row pixels [0, n) of CB channels: y[c * ldy + t] = bias[c] + sum over k of
// w[c * K + k] * x[off[k] + t], in tiles of 2 vectors per channel. x is read up to a tile
// past n.
template <int Lanes, int CB>
PHX_INLINE void block_row(const float* x, const int64_t* off, int64_t k_count, const float* w,
                          const float* bias, float* y, int64_t ldy, int64_t n) {
  using V = Vec<Lanes>;
  for (int64_t t0 = 0; t0 < n; t0 += 2 * Lanes) {
    V acc[CB][2];
    for (int c = 0; c < CB; ++c) acc[c][0] = acc[c][1] = V{} + (bias != nullptr ? bias[c] : 0.0f);
    for (int64_t k = 0; k < k_count; ++k) {
      const float* xr = x + off[k] + t0;
      V x0, x1;
      load(x0, xr);
      load(x1, xr + Lanes);
      for (int c = 0; c < CB; ++c) {
        const float wv = w[c * k_count + k];
        acc[c][0] += wv * x0;
        acc[c][1] += wv * x1;
      }
    }
    const int64_t len = std::min<int64_t>(2 * Lanes, n - t0);
    for (int c = 0; c < CB; ++c) {
      float* dst = y + c * ldy + t0;
      if (len == 2 * Lanes) {
        store(dst, acc[c][0]);
        store(dst + Lanes, acc[c][1]);
      } else {
        float tail[2 * Lanes];
        store(tail, acc[c][0]);
        store(tail + Lanes, acc[c][1]);
        std::memcpy(dst, tail, static_cast<size_t>(len) * sizeof(float));
      }
    }
  }
}

// block_row for `channels` channels (kOutBlock, or the fewer left at the end), one at a
// time when fewer.
template <int Lanes>
PHX_INLINE void rows(const float* x, const int64_t* off, int64_t k_count, const float* w,
                     const float* bias, float* y, int64_t ldy, int64_t n, int64_t channels) {
  if (channels == kOutBlock) {
    block_row<Lanes, kOutBlock>(x, off, k_count, w, bias, y, ldy, n);
    return;
  }
  for (int64_t c = 0; c < channels; ++c)
    block_row<Lanes, 1>(x, off, k_count, w + c * k_count, bias != nullptr ? bias + c : nullptr,
                        y + c * ldy, ldy, n);
}

using RowsFn = void (*)(const float*, const int64_t*, int64_t, const float*, const float*, float*,
                        int64_t, int64_t, int64_t);

void rows_generic(const float* x, const int64_t* off, int64_t k_count, const float* w,
                  const float* bias, float* y, int64_t ldy, int64_t n, int64_t channels) {
  rows<4>(x, off, k_count, w, bias, y, ldy, n, channels);
}

#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void rows_avx2(const float* x, const int64_t* off, int64_t k_count,
                                           const float* w, const float* bias, float* y, int64_t ldy,
                                           int64_t n, int64_t channels) {
  rows<8>(x, off, k_count, w, bias, y, ldy, n, channels);
}

[[gnu::target("avx512f")]] void rows_avx512(const float* x, const int64_t* off, int64_t k_count,
                                            const float* w, const float* bias, float* y,
                                            int64_t ldy, int64_t n, int64_t channels) {
  rows<16>(x, off, k_count, w, bias, y, ldy, n, channels);
}
#endif

RowsFn rows_for(std::string_view isa) {
#if defined(__x86_64__)
  if (isa.starts_with("avx512")) return rows_avx512;
  if (isa == "avx2") return rows_avx2;
#endif
  return rows_generic;
}

}  // namespace

bool conv2d_direct_fits(const Conv2dGeometry& g, phx_dtype dtype) {
  // A pointwise convolution is left to the gemm, which reads x itself there: faster with
  // many output channels (32 -> 128 of 56x56: 0.40 ms against 0.70 directly).
  return !g.nhwc && dtype == PHX_DTYPE_F32 && g.patch() <= kMaxPatch && !g.is_pointwise();
}

void conv2d_direct(const Conv2dGeometry& g, const float* x, const float* w, const float* bias,
                   phx_activation act, float* out, ThreadPool& pool, const char* isa) {
  const RowsFn run_rows = rows_for(isa != nullptr ? isa : gemm_isa());
  const int64_t patch = g.patch(), pixels = g.pixels_out();
  // The padded image: per channel the rows and columns the windows reach, from -pad_top
  // and -pad_left, each row as stride_w phases of wps columns; 32 more values, which the
  // last row's last tile reads past its end.
  const int64_t s = g.stride_w;
  const int64_t hp = (g.h_out - 1) * g.stride_h + (g.kh - 1) * g.dil_h + 1;
  const int64_t wp = (g.w_out - 1) * s + (g.kw - 1) * g.dil_w + 1, wps = (wp + s - 1) / s;
  const int64_t row = s * wps, plane = hp * row;
  std::vector<float> padded(static_cast<size_t>(g.c_in * plane + 32), 0.0f);
  std::vector<int64_t> off(static_cast<size_t>(patch));  // of each tap (c, i, j) of a group
  for (int64_t r = 0; r < patch; ++r) {
    const int64_t c = r / (g.kh * g.kw), i = r / g.kw % g.kh, column = r % g.kw * g.dil_w;
    off[r] = c * plane + i * g.dil_h * row + column % s * wps + column / s;
  }
  // Input columns [iw0, iw1) land in the padded rows (those right of wp are never read).
  const int64_t iw0 = std::max<int64_t>(0, -g.pad_left), iw1 = std::min(g.w, wp - g.pad_left);
  // Tasks take rows of a block of channels, of any group: a depthwise layer's groups
  // spread over the threads too.
  const int64_t blocks = (g.c_out_group + kOutBlock - 1) / kOutBlock;
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* image = x + n * g.c_in * g.h * g.w;
    parallel_for(pool, g.c_in, plane, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = 0; r < hp; ++r) {
          const int64_t ih = r - g.pad_top;
          if (ih < 0 || ih >= g.h || iw0 >= iw1) continue;  // stays zero
          const float* src = image + (c * g.h + ih) * g.w;
          float* dst = padded.data() + c * plane + r * row;
          if (s == 1) {
            std::copy(src + iw0, src + iw1, dst + iw0 + g.pad_left);
            continue;
          }
          for (int64_t iw = iw0; iw < iw1; ++iw) {
            const int64_t column = iw + g.pad_left;
            dst[column % s * wps + column / s] = src[iw];
          }
        }
    });
    float* y = out + n * g.c_out * pixels;
    parallel_for(pool, g.groups * blocks * g.h_out, kOutBlock * patch * g.w_out,
                 [&](int64_t b0, int64_t b1) {
                   for (int64_t b = b0; b < b1; ++b) {
                     const int64_t oh = b % g.h_out, block = b / g.h_out % blocks,
                                   grp = b / g.h_out / blocks;
                     const int64_t co = grp * g.c_out_group + block * kOutBlock;
                     const int64_t channels =
                         std::min<int64_t>(kOutBlock, g.c_out_group - block * kOutBlock);
                     float* yr = y + co * pixels + oh * g.w_out;
                     run_rows(padded.data() + grp * g.c_in_group * plane + oh * g.stride_h * row,
                              off.data(), patch, w + co * patch,
                              bias != nullptr ? bias + co : nullptr, yr, pixels, g.w_out, channels);
                     for (int64_t c = 0; c < channels; ++c)
                       activation_f32(act, yr + c * pixels, g.w_out);
                   }
                 });
  }
}

}  // namespace phx::kernels::ops
