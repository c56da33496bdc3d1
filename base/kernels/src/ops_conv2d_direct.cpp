// Direct convolution for a short patch (K = Cig*KH*KW <= 32: the first layer of an image
// network, 3 input channels) or few channels per group (depthwise and grouped layers, at
// any kernel size). There the gemm fits poorly: K is too short to amortize its tiles' loads
// and stores, a group's C_out too few rows for its 14-row tiles, and im2col writes K copies
// of the image. Each output row is computed from a zero-padded copy of the image's group
// instead (no bounds tests; a depthwise layer pads each band's rows as it computes them):
// a block of kOutBlock channels times a tile of pixels of accumulators, in registers,
// takes K multiply-adds, each a broadcast weight times the tile's input values at a fixed
// offset. With a stride s along the width, the copy splits each row into s phases
// (column c at c / s of phase c % s), so that a tap's values for consecutive output pixels
// are consecutive there too: the stride-2 depthwise layers of MobileNet and EfficientNet
// take the same tiles. A narrow image computed a
// plane at a time has the copy's rows split into phases likewise along the height (row r
// at r / s of phase r % s), so that consecutive output rows read consecutive rows.
//
// The vectors follow the instruction set that gemm_isa() names (PHX_CPU_ISA caps it): a
// tile is 2 zmm per channel (32 pixels) with AVX-512, 2 ymm with AVX2 + FMA, 2 xmm
// otherwise: a block is 8 registers of accumulators on every path; a channel alone takes
// tiles of 4 vectors.
#include "ops_conv2d_direct.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "ops_common.h"
#include "phx/kernels/gemm.h"
#include "vec.h"

namespace phx::kernels::ops {
namespace {

constexpr int64_t kMaxPatch = 32;
// At any patch: grouped convolutions with up to this many input channels per group, those
// of up to this many output channels (per group), those whose output rows are at most this
// wide at stride 1, and those of up to this many input channels (conv2d_direct_fits).
constexpr int64_t kMaxGroupChannels = 16;
constexpr int64_t kMaxOutChannels = 32;
constexpr int64_t kMaxNarrowWidth = 8;
constexpr int64_t kMaxStemChannels = 4;
constexpr int kOutBlock = 4;
// Output rows narrower than this are computed a plane at a time, in a buffer of this
// many floats (16 KiB) for a block's channels.
constexpr int64_t kNarrowRow = 24;
constexpr int64_t kPlaneBuffer = 4096;
// Output pixels of a task's band of rows (per channel of its block).
constexpr int64_t kBandPixels = 256;
// How far past a run's end its last tile reads: 4 vectors of 16 floats.
constexpr int64_t kReadPast = 64;

// Row pixels [0, n) of CB channels: y[c * ldy + t] = bias[c] + sum over k of
// w[c * K + k] * x[off[k] + t], in tiles of T vectors per channel. x is read up to a tile
// past n.
template <int Lanes, int CB, int T>
PHX_INLINE void block_row(const float* x, const int64_t* off, int64_t k_count, const float* w,
                          const float* bias, float* y, int64_t ldy, int64_t n) {
  using V = Vec<Lanes>;
  for (int64_t t0 = 0; t0 < n; t0 += T * Lanes) {
    V acc[CB][T];
    for (int c = 0; c < CB; ++c)
      for (int v = 0; v < T; ++v) acc[c][v] = V{} + (bias != nullptr ? bias[c] : 0.0f);
    for (int64_t k = 0; k < k_count; ++k) {
      const float* xr = x + off[k] + t0;
      V xv[T];
      for (int v = 0; v < T; ++v) load(xv[v], xr + v * Lanes);
      for (int c = 0; c < CB; ++c) {
        const float wv = w[c * k_count + k];
        for (int v = 0; v < T; ++v) acc[c][v] += wv * xv[v];
      }
    }
    const int64_t len = std::min<int64_t>(T * Lanes, n - t0);
    for (int c = 0; c < CB; ++c) {
      float* dst = y + c * ldy + t0;
      if (len == T * Lanes) {
        for (int v = 0; v < T; ++v) store(dst + v * Lanes, acc[c][v]);
      } else {
        float tail[T * Lanes];
        for (int v = 0; v < T; ++v) store(tail + v * Lanes, acc[c][v]);
        std::memcpy(dst, tail, static_cast<size_t>(len) * sizeof(float));
      }
    }
  }
}

// block_row for `channels` channels: a block of kOutBlock, 2 vectors each; fewer one at a
// time, 4 vectors each, so that a lone channel (a depthwise layer's) still has 4
// independent sums in flight rather than waiting on the latency of 2.
template <int Lanes>
PHX_INLINE void rows(const float* x, const int64_t* off, int64_t k_count, const float* w,
                     const float* bias, float* y, int64_t ldy, int64_t n, int64_t channels) {
  if (channels == kOutBlock) {
    block_row<Lanes, kOutBlock, 2>(x, off, k_count, w, bias, y, ldy, n);
    return;
  }
  for (int64_t c = 0; c < channels; ++c)
    block_row<Lanes, 1, 4>(x, off, k_count, w + c * k_count, bias != nullptr ? bias + c : nullptr,
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

// Phase columns [0, wps) of one padded row at dst: column[(k - a) * s] for k in [a, b),
// zero elsewhere.
PHX_INLINE void pad_phase(const float* column, int64_t s, int64_t a, int64_t b, float* dst,
                          int64_t wps) {
  zero_short(dst, a);
  zero_short(dst + b, wps - b);
  if (s == 1) {
    copy_short(column, dst + a, b - a);
    return;
  }
  int64_t k = a;
  if (s == 2) {
    // The even values of 16; k + 8 < b keeps the last, column[2 (k - a) + 15], inside.
    using V = Vec<8>;
    for (; k + 8 < b; k += 8) {
      V lo, hi;
      load(lo, column + 2 * (k - a));
      load(hi, column + 2 * (k - a) + 8);
      store(dst + k, V(__builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14)));
    }
  }
  for (; k < b; ++k) dst[k] = column[(k - a) * s];
}

// The padded copy of `rows` input rows (w values each, ld apart at src) into rows of s
// phases of wps columns (s * wps apart at dst), zero where the window reaches past the row:
// column c of a padded row (input column c - pad_left) goes to c / s of phase c % s. Rows
// here are short (7 to 114 values): the moves are written out, since a call of memcpy or
// memset per piece would cost more.
PHX_CLONES void pad_rows(const float* src, int64_t ld, int64_t rows, int64_t w, int64_t pad_left,
                         int64_t s, float* dst, int64_t wps) {
  // Phase p's column k reads input column k * s + p - pad_left, inside for k in [a, b).
  for (int64_t p = 0; p < s; ++p) {
    const int64_t first = pad_left - p, a = std::clamp<int64_t>((first + s - 1) / s, 0, wps);
    const int64_t b = std::clamp<int64_t>((first + w + s - 1) / s, a, wps);
    for (int64_t r = 0; r < rows; ++r)
      pad_phase(src + r * ld + (a * s - first), s, a, b, dst + (r * s + p) * wps, wps);
  }
}

}  // namespace

bool conv2d_direct_fits(const Conv2dGeometry& g, phx_dtype dtype) {
  // A pointwise convolution is left to the gemm, which reads x itself there: faster with
  // many output channels (32 -> 128 of 56x56: 0.40 ms against 0.70 directly). A grouped
  // one with few channels per group gives the gemm a product of a few rows per group,
  // which fits it worse than a long patch hurts here (ConvNeXt's depthwise 7x7: 79 ms
  // through the gemm, 5 ms directly).
  // At any patch, the gemm also fits poorly a product of at most 32 rows (DenseNet's 32
  // output channels of a 1152 patch: 3 tiles of 14 rows, 76% used; 102 -> 139 GFLOP/s
  // directly at 28x28) and one of 7 or 8 pixels a row at stride 1 (ResNet's 512 of 7x7:
  // 156 -> 205), which the direct kernel takes a plane at a time; and the stem of 3 or 4
  // input channels (7x7 of 224x224: 167 -> 191).
  const bool few_channels = g.groups > 1 && g.c_in_group <= kMaxGroupChannels;
  const bool few_outputs = g.c_out_group <= kMaxOutChannels;
  const bool narrow = g.stride_h == 1 && g.stride_w == 1 && g.w_out <= kMaxNarrowWidth;
  const bool stem = g.c_in_group <= kMaxStemChannels;
  return !g.nhwc && dtype == PHX_DTYPE_F32 && !g.is_pointwise() &&
         (g.patch() <= kMaxPatch || few_channels || few_outputs || narrow || stem);
}

void conv2d_direct(const Conv2dGeometry& g, const float* x, const float* w, const float* bias,
                   phx_activation act, float* out, ThreadPool& pool, const char* isa) {
  const RowsFn run_rows = rows_for(isa != nullptr ? isa : gemm_isa());
  const int64_t patch = g.patch(), pixels = g.pixels_out();
  // The padded image: per channel the rows and columns the windows reach, from -pad_top
  // and -pad_left, each row as stride_w phases of wps columns; kReadPast more values, which
  // the last row's last tile reads past its end.
  const int64_t s = g.stride_w;
  const int64_t hp = (g.h_out - 1) * g.stride_h + (g.kh - 1) * g.dil_h + 1;
  const int64_t wp = (g.w_out - 1) * s + (g.kw - 1) * g.dil_w + 1, wps = (wp + s - 1) / s;
  const int64_t row = s * wps;
  // A narrow image is computed as one run over its padded plane, which steps from an
  // output row to the next by `row` and holds the row's row - w_out extra columns: fewer
  // wasted lanes than tiles of 2 or 4 vectors per output row of 7 or 14 pixels. Each
  // block's run goes to a buffer on the stack, whose valid columns are then copied out.
  // Its rows are split into stride_h phases, so that the next output row's are `row` on.
  // Wider images, computed a row at a time, keep their rows in order.
  const int64_t run = (g.h_out - 1) * row + g.w_out;
  const bool whole_plane =
      g.w_out < kNarrowRow &&
      std::min<int64_t>(kOutBlock, g.c_out_group) * g.h_out * row <= kPlaneBuffer;
  // Padded row r is row r / sh of row phase r % sh, hps rows each; output row oh starts
  // at row oh * row_step of phase 0.
  const int64_t sh = whole_plane ? g.stride_h : 1, row_step = g.stride_h / sh;
  const int64_t hps = (hp + sh - 1) / sh, plane = sh * hps * row;
  auto copy_row = [&](int64_t r) { return r % sh * hps + r / sh; };
  auto ceil_div = [](int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; };
  std::vector<int64_t> off(static_cast<size_t>(patch));  // of each tap (c, i, j) of a group
  for (int64_t r = 0; r < patch; ++r) {
    const int64_t c = r / (g.kh * g.kw), i = r / g.kw % g.kh, column = r % g.kw * g.dil_w;
    off[r] = c * plane + copy_row(i * g.dil_h) * row + column % s * wps + column / s;
  }
  // Tasks take bands of rows (or planes) of a block of channels, of any group: a depthwise
  // layer's groups spread over the threads too.
  const int64_t blocks = (g.c_out_group + kOutBlock - 1) / kOutBlock;
  const int64_t band =
      whole_plane ? g.h_out : std::clamp<int64_t>(kBandPixels / g.w_out, 1, g.h_out);
  const int64_t bands = (g.h_out + band - 1) / band;
  // Padded rows [top, bottom) hold input rows [top - pad_top, bottom - pad_top); the rest,
  // and the rows past hp that fill the last row phase, are zeros.
  const int64_t top = std::clamp<int64_t>(g.pad_top, 0, hp);
  const int64_t bottom = std::clamp<int64_t>(g.pad_top + g.h, top, hp);
  // Padded rows [r0, r1) of one channel (src: its input plane) to dst: each row phase q
  // holds rows r0 + q, r0 + q + sh, ... (r0 is 0 when sh > 1), `rows` each.
  auto pad_channel = [&](const float* src, float* dst, int64_t r0, int64_t r1) {
    const int64_t rows = sh == 1 ? r1 - r0 : hps;
    for (int64_t q = 0; q < sh; ++q) {
      float* phase = dst + q * rows * row;
      const int64_t j0 = std::min(ceil_div(top - r0 - q, sh), rows);
      const int64_t j1 = std::max(j0, std::min(ceil_div(bottom - r0 - q, sh), rows));
      std::fill(phase, phase + j0 * row, 0.0f);
      if (j1 > j0)
        pad_rows(src + (r0 + j0 * sh + q - g.pad_top) * g.w, sh * g.w, j1 - j0, g.w, g.pad_left, s,
                 phase + j0 * row, wps);
      std::fill(phase + j1 * row, phase + rows * row, 0.0f);
    }
  };
  // A layer of one input channel per group (depthwise) pads in each task the rows its band
  // reads, into the task's own buffer, and computes on them while they are in cache: no
  // padded copy of the whole image to write and read back (MobileNetV2's 96 channels of
  // 112x112 at stride 2: 459 -> 294 us). Others share one padded copy, made first.
  const bool local = g.c_in_group == 1;
  const int64_t band_rows = (band - 1) * g.stride_h + (g.kh - 1) * g.dil_h + 1;
  const int64_t local_size = (whole_plane ? plane : band_rows * row) + kReadPast;
  std::unique_ptr<float[]> padded;
  if (!local) {
    // Written whole (rows, then the tail) before it is read: left uninitialized.
    padded.reset(new float[static_cast<size_t>(g.c_in * plane + kReadPast)]);
    std::fill_n(padded.get() + g.c_in * plane, kReadPast, 0.0f);
  }
  for (int64_t n = 0; n < g.batch; ++n) {
    const float* image = x + n * g.c_in * g.h * g.w;
    if (!local)
      parallel_for(pool, g.c_in, plane, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c)
          pad_channel(image + c * g.h * g.w, padded.get() + c * plane, 0, sh * hps);
      });
    float* y = out + n * g.c_out * pixels;
    parallel_for(
        pool, g.groups * blocks * bands, kOutBlock * patch * g.w_out * band,
        [&](int64_t t0, int64_t t1) {
          alignas(64) float buffer[kPlaneBuffer];  // whole_plane only; not initialized
          std::unique_ptr<float[]> rows_of_task;
          if (local) rows_of_task.reset(new float[static_cast<size_t>(local_size)]);
          for (int64_t t = t0; t < t1; ++t) {
            const int64_t oh0 = t % bands * band, oh1 = std::min(g.h_out, oh0 + band);
            const int64_t block = t / bands % blocks, grp = t / bands / blocks;
            const int64_t co = grp * g.c_out_group + block * kOutBlock;
            const int64_t channels =
                std::min<int64_t>(kOutBlock, g.c_out_group - block * kOutBlock);
            // The copy's rows from the band's first: output row oh reads from row
            // (oh - oh0) * row_step on.
            const float* xg = nullptr;
            if (local) {
              const int64_t r0 = whole_plane ? 0 : oh0 * g.stride_h;
              const int64_t r1 =
                  whole_plane ? sh * hps : (oh1 - 1) * g.stride_h + (g.kh - 1) * g.dil_h + 1;
              pad_channel(image + grp * g.h * g.w, rows_of_task.get(), r0, r1);
              // What the last tile reads past the rows written.
              std::fill_n(rows_of_task.get() + (whole_plane ? plane : (r1 - r0) * row), kReadPast,
                          0.0f);
              xg = rows_of_task.get();
            } else {
              xg = padded.get() + grp * g.c_in_group * plane + oh0 * row_step * row;
            }
            const float* wb = w + co * patch;
            const float* bb = bias != nullptr ? bias + co : nullptr;
            float* yb = y + co * pixels + oh0 * g.w_out;
            if (whole_plane) {
              const int64_t ld = g.h_out * row;
              run_rows(xg, off.data(), patch, wb, bb, buffer, ld, run, channels);
              for (int64_t c = 0; c < channels; ++c)
                for (int64_t oh = 0; oh < g.h_out; ++oh)
                  copy_short(buffer + c * ld + oh * row, yb + c * pixels + oh * g.w_out, g.w_out);
            } else {
              for (int64_t oh = oh0; oh < oh1; ++oh)
                run_rows(xg + (oh - oh0) * row_step * row, off.data(), patch, wb, bb,
                         yb + (oh - oh0) * g.w_out, pixels, g.w_out, channels);
            }
            for (int64_t c = 0; c < channels; ++c)
              activation_f32(act, yb + c * pixels, (oh1 - oh0) * g.w_out);
          }
        });
  }
}

}  // namespace phx::kernels::ops
