// The integer GEMM driver (gemm_s8.h): instruction-set dispatch, packing, the split into
// tasks, the zero-point corrections and the output stages. The portable microkernels
// and packing live here too; the vector microkernels in gemm_s8_{avx2,vnni}.cpp, with
// the VNNI path's packers.
//
// The microkernels compute raw dot products of the packed values, sum_k A'(i,k) B(k,j),
// with A' = A + shift (shift 128 for i8 A in the VNNI layout, which needs u8, else 0).
// Expanding (A - za)(B - zb) gives the exact accumulator from them:
//   acc = dot - (shift + za) colsum_B(j) - zb(j) rowsum_A(i) + K za zb(j) + bias(j)
// with the row and column sums taken while packing. For 8-bit A every term is taken
// modulo 2^32, so all paths agree bit for bit even where int32 would overflow.
//
// Both operands are packed whole before the product (the weights B are small next to
// the work, and A is packed once instead of once per column block); tasks are blocks of
// row panels x column panels, each walking its A panels in the outer loop: one A panel
// stays in L1 while the block's B panels (256 columns) come from L2, and consecutive
// tiles fill the same rows of C. (B panels outer, with the A panels from L2 or L3, was
// 1.1x slower for 1024^3 and 2048^3 i8 products on the VNNI path.)
#include "phx/kernels/gemm_s8.h"

#include <phx/env.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "gemm_s8_internal.h"
#include "ops_common.h"

namespace phx::kernels {
namespace gemm_s8_detail {
namespace {

using ops::dtype_bytes;
using ops::parallel_for;

// ---- Portable microkernels (pair layout) ----------------------------------------------

constexpr int kGenericMr = 4;
constexpr int kGenericNr = 16;
constexpr int kMaxNr = 32;  // the widest tile of any kernel
constexpr int kMaxMr = 12;

// Acc: uint32_t (8-bit A: wraps like the vector kernels) or int64_t (16-bit A).
template <class Acc>
PHX_INLINE void ukr_pairs(int64_t groups, const int16_t* a, const int16_t* b, Acc* tile) {
  Acc acc[kGenericMr][kGenericNr] = {};
  for (int64_t g = 0; g < groups; ++g) {
    const int16_t* ap = a + g * kGenericMr * 2;
    const int16_t* bp = b + g * kGenericNr * 2;
    for (int i = 0; i < kGenericMr; ++i)
      for (int j = 0; j < kGenericNr; ++j)  // |a0 b0 + a1 b1| <= 2 * 32768 * 128: int32
        acc[i][j] += static_cast<Acc>(int32_t{ap[2 * i]} * bp[2 * j] +
                                      int32_t{ap[2 * i + 1]} * bp[2 * j + 1]);
  }
  for (int i = 0; i < kGenericMr; ++i)
    for (int j = 0; j < kGenericNr; ++j) tile[i * kGenericNr + j] = acc[i][j];
}

PHX_CLONES void ukr_generic32(int64_t groups, const void* a, const void* b, const int32_t* init,
                              int32_t* c, int64_t ldc) {
  uint32_t acc[kGenericMr * kGenericNr];
  ukr_pairs(groups, static_cast<const int16_t*>(a), static_cast<const int16_t*>(b), acc);
  for (int i = 0; i < kGenericMr; ++i)
    for (int j = 0; j < kGenericNr; ++j)
      c[i * ldc + j] =
          static_cast<int32_t>(acc[i * kGenericNr + j] + static_cast<uint32_t>(init[j]));
}

PHX_CLONES void ukr_generic64(int64_t groups, const int16_t* a, const int16_t* b, int64_t* tile) {
  ukr_pairs(groups, a, b, tile);
}

const Kernels& generic_kernels() {
  static const Kernels kernels{"generic", kGenericMr, kGenericNr, Layout::kPairs, ukr_generic32};
  return kernels;
}

// ---- Instruction-set selection (as gemm.cpp's, PHX_CPU_ISA caps it) ---------------------

enum class Isa { kGeneric = 0, kAvx2 = 1, kVnni = 2 };

bool cpu_has(Isa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kGeneric:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && avx2_kernels() != nullptr;
    case Isa::kVnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
             vnni_kernels() != nullptr;
  }
  return false;
#else
  return isa == Isa::kGeneric;
#endif
}

const Kernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kVnni:
      return *vnni_kernels();
    case Isa::kAvx2:
      return *avx2_kernels();
    default:
      return generic_kernels();
  }
}

Isa chosen_isa() {
  static const Isa chosen = [] {
    Isa best = Isa::kGeneric;
    for (Isa isa : {Isa::kVnni, Isa::kAvx2})
      if (cpu_has(isa)) {
        best = isa;
        break;
      }
    const char* env = env_value("PHX_CPU_ISA");
    Isa cap = best;
    if (env != nullptr && std::strcmp(env, "generic") == 0) cap = Isa::kGeneric;
    if (env != nullptr && std::strcmp(env, "avx2") == 0) cap = Isa::kAvx2;
    best = std::min(best, cap);
    while (!cpu_has(best)) best = static_cast<Isa>(static_cast<int>(best) - 1);
    return best;
  }();
  return chosen;
}

// ---- Packing ---------------------------------------------------------------------------

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// One operand seen as rows of K values: element (r, k) at src[r * ld + k] when
// k_contiguous, else at src[k * ld + r].
struct Operand {
  const void* data;
  phx_dtype dtype;
  int64_t ld;
  bool k_contiguous;
};

// Packs rows [r0, r0 + P) (those past `rows` as zeros) into one panel with G ks per group
// (G = 4: quads of u8, the values plus shift; G = 2: pairs of int16), and stores each
// real row's sum of values in sums[r].
// Four rows of B (consecutive ks, P columns of i8 each, row stride ld) interleaved into
// P quads, and each column's sum of the four added to sum[p]: in a loop the compiler
// vectorizes, where the general one below moved a byte at a time (a fifth of a
// 2048^3 qmatmul's time on the VNNI path).
PHX_CLONES void interleave_quads(const int8_t* line, int64_t ld, int P, uint8_t* out,
                                 int64_t* sum) {
  const int8_t *r0 = line, *r1 = line + ld, *r2 = line + 2 * ld, *r3 = line + 3 * ld;
  for (int p = 0; p < P; ++p) {
    const uint32_t quad = uint32_t{uint8_t(r0[p])} | uint32_t{uint8_t(r1[p])} << 8 |
                          uint32_t{uint8_t(r2[p])} << 16 | uint32_t{uint8_t(r3[p])} << 24;
    std::memcpy(out + 4 * p, &quad, 4);
    sum[p] += int32_t{r0[p]} + int32_t{r1[p]} + int32_t{r2[p]} + int32_t{r3[p]};
  }
}

template <class T, int G>
void pack_panel(const T* src, const Operand& op, int64_t rows, int64_t k, int64_t r0, int P,
                int32_t shift, void* dst, int64_t* sums) {
  using D = std::conditional_t<G == 4, uint8_t, int16_t>;
  auto* d = static_cast<D*>(dst);
  const int64_t kpad = round_up(std::max<int64_t>(k, 1), G);  // as run() sizes it
  const int64_t real = std::clamp<int64_t>(rows - r0, 0, P);
  if (op.k_contiguous) {
    for (int p = 0; p < P; ++p) {
      int64_t kk = 0;
      if (p < real) {
        const T* row = src + (r0 + p) * op.ld;
        int64_t sum = 0;
        for (int64_t i = 0; i < k; ++i) sum += row[i];
        sums[r0 + p] = sum;
        if constexpr (G == 4 && sizeof(T) == 1) {               // whole quads: 4 bytes at a time
          const uint32_t flip = shift != 0 ? 0x80808080u : 0u;  // +128 on each i8 byte
          for (; kk + 4 <= k; kk += 4) {
            uint32_t quad;
            std::memcpy(&quad, row + kk, 4);
            quad ^= flip;
            std::memcpy(d + (kk / 4 * P + p) * 4, &quad, 4);
          }
        }
        for (; kk < k; ++kk) d[(kk / G * P + p) * G + kk % G] = static_cast<D>(row[kk] + shift);
      }
      for (; kk < kpad; ++kk) d[(kk / G * P + p) * G + kk % G] = static_cast<D>(shift);
    }
    return;
  }
  // A group of G rows of B (consecutive ks) at a time, interleaved column by column.
  int64_t sum[kMaxNr] = {};
  for (int64_t k0 = 0; k0 < kpad; k0 += G) {
    D* out = d + k0 * P;
    if constexpr (G == 4 && std::is_same_v<T, int8_t>) {
      if (shift == 0 && real == P && k0 + G <= k) {
        interleave_quads(src + k0 * op.ld + r0, op.ld, P, out, sum);
        continue;
      }
    }
    for (int e = 0; e < G; ++e) {
      const bool inside = k0 + e < k;
      const T* line = inside ? src + (k0 + e) * op.ld + r0 : src;
      for (int p = 0; p < P; ++p) {
        const int32_t v = inside && p < real ? int32_t{line[p]} : 0;
        sum[p] += v;
        out[p * G + e] = static_cast<D>(v + shift);
      }
    }
  }
  for (int p = 0; p < real; ++p) sums[r0 + p] = sum[p];
}

template <class T>
void pack_panel_as(const Operand& op, int64_t rows, int64_t k, int64_t r0, int panel, Layout layout,
                   int32_t shift, void* dst, int64_t* sums) {
  const T* src = static_cast<const T*>(op.data);
  if (layout == Layout::kQuads)
    pack_panel<T, 4>(src, op, rows, k, r0, panel, shift, dst, sums);
  else
    pack_panel<T, 2>(src, op, rows, k, r0, panel, shift, dst, sums);
}

// Packs panels from the p-th on (at most `count`) with the instruction set's packers, if
// they have one for this operand; returns how many (0: none).
int64_t pack_fast(const Operand& src, int64_t rows, int64_t k, int64_t p, int64_t count, int panel,
                  const Kernels& ks, int32_t shift, size_t panel_bytes, char* dst, int64_t* sums) {
  if (ks.layout != Layout::kQuads || src.dtype == PHX_DTYPE_I16) return 0;
  const int64_t r0 = p * panel;
  void* at = dst + size_t(p) * panel_bytes;
  int32_t sums32[kMaxPackedPanels * kMaxNr];
  int64_t real = 0;
  if (src.k_contiguous && ks.pack_rows != nullptr) {
    count = 1;
    real = std::clamp<int64_t>(rows - r0, 0, panel);
    ks.pack_rows(static_cast<const char*>(src.data) + r0 * src.ld, src.ld, int(real), panel, k,
                 src.dtype == PHX_DTYPE_I8, shift != 0, at, sums32);
  } else if (!src.k_contiguous && ks.pack_columns != nullptr && panel == ks.nr) {
    count = std::min<int64_t>(count, kMaxPackedPanels);
    real = std::clamp<int64_t>(rows - r0, 0, count * panel);
    ks.pack_columns(static_cast<const int8_t*>(src.data) + r0, src.ld, real, k, at, sums32);
  } else {
    return 0;
  }
  std::copy(sums32, sums32 + real, sums + r0);
  return count;
}

// Packs every panel of an operand of `rows` rows, in parallel when it is big.
void pack(const Operand& src, int64_t rows, int64_t k, int panel, const Kernels& ks, int32_t shift,
          size_t panel_bytes, char* dst, int64_t* sums, ThreadPool& pool) {
  const Layout layout = ks.layout;
  const int64_t panels = (rows + panel - 1) / panel;
  parallel_for(pool, panels, panel * k, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1;) {
      const int64_t done =
          pack_fast(src, rows, k, p, p1 - p, panel, ks, shift, panel_bytes, dst, sums);
      if (done > 0) {
        p += done;
        continue;
      }
      void* at = dst + size_t(p) * panel_bytes;
      if (src.dtype == PHX_DTYPE_U8)
        pack_panel_as<uint8_t>(src, rows, k, p * panel, panel, layout, shift, at, sums);
      else if (src.dtype == PHX_DTYPE_I16)
        pack_panel_as<int16_t>(src, rows, k, p * panel, panel, layout, shift, at, sums);
      else
        pack_panel_as<int8_t>(src, rows, k, p * panel, panel, layout, shift, at, sums);
      ++p;
    }
  });
}

// Packing buffers, grown on demand and kept for the thread's next product.
struct PackBuffers {
  std::vector<char> a, b;
};
PackBuffers& pack_buffers() {
  thread_local PackBuffers buffers;
  return buffers;
}

// ---- Output stages ---------------------------------------------------------------------

// 1.5 * 2^52: adding and subtracting it rounds a double of magnitude below 2^51 to an
// integer, ties to even (the default rounding mode), in a form compilers vectorize.
constexpr double kRoundMagic = 6755399441055744.0;

template <class T>
PHX_INLINE void requantize_row(const double* acc, const double* multiplier, int nr, double lo,
                               double hi, double zero_point, T* out) {
  for (int j = 0; j < nr; ++j) {
    // A scale that is not finite (whose result docs/quantization.md leaves unspecified)
    // makes NaN here, which would reach the int conversion below: it goes to the zero
    // point, as NaN does in quantize. Clamping first changes nothing after saturation and
    // keeps the magic rounding exact.
    double v = acc[j] * multiplier[j];
    v = std::clamp(v == v ? v : 0.0, -0x1p40, 0x1p40);
    v = (v + kRoundMagic) - kRoundMagic + zero_point;
    out[j] = static_cast<T>(static_cast<int32_t>(std::clamp(v, lo, hi)));
  }
}

// Writes one row of nr finished accumulators (as doubles, exact: 8-bit accumulators are
// int32, 16-bit ones far below 2^53) through the output stage, at out with col_stride.
PHX_CLONES void finish_row(const GemmS8Args& g, const double* acc, const int32_t* acc32, int64_t j0,
                           int nr, void* out, int64_t col_stride) {
  alignas(64) unsigned char staged[kMaxNr * 4];
  void* row = col_stride == 1 ? out : staged;
  const double* mult = g.multiplier + (g.multiplier ? j0 : 0);
  const double zp = g.y_zero_point;
  switch (g.out_dtype) {
    case PHX_DTYPE_I32: {
      auto* o = static_cast<int32_t*>(row);
      for (int j = 0; j < nr; ++j) o[j] = g.relu ? std::max(acc32[j], 0) : acc32[j];
      break;
    }
    case PHX_DTYPE_F32: {
      auto* o = static_cast<float*>(row);
      for (int j = 0; j < nr; ++j) {
        const auto v = static_cast<float>(acc[j] * mult[j]);
        o[j] = g.relu && v < 0.0f ? 0.0f : v;
      }
      break;
    }
    case PHX_DTYPE_U8:
      requantize_row(acc, mult, nr, std::max(g.relu ? zp : 0.0, 0.0), 255.0, zp,
                     static_cast<uint8_t*>(row));
      break;
    case PHX_DTYPE_I16:
      requantize_row(acc, mult, nr, std::max(g.relu ? zp : -32768.0, -32768.0), 32767.0, zp,
                     static_cast<int16_t*>(row));
      break;
    default:
      requantize_row(acc, mult, nr, std::max(g.relu ? zp : -128.0, -128.0), 127.0, zp,
                     static_cast<int8_t*>(row));
      break;
  }
  if (col_stride != 1) {
    const size_t size = dtype_bytes(g.out_dtype);
    auto* dst = static_cast<unsigned char*>(out);
    for (int j = 0; j < nr; ++j) std::memcpy(dst + j * col_stride * size, staged + j * size, size);
  }
}

// The corrections of the header comment, per column: the constant part and zb(j).
struct Corrections {
  std::vector<int64_t> column;  // -(shift + za) colsum(j) + K za zb(j) + bias(j)
  std::vector<int64_t> b_zero;  // zb(j), empty when B has no zero points
  std::vector<int64_t> rowsum;  // rowsum_A(i)
  // For 8-bit A, modulo 2^32: column, where the microkernels start their sums (zeros past
  // n, up to a whole panel), and b_zero (empty when b_zero is).
  std::vector<int32_t> column32;
  std::vector<uint32_t> b_zero32;
};

// Finishes the tile of rows [i0, i0 + mr) x columns [j0, j0 + nr) of 16-bit A.
void finish_tile64(const GemmS8Args& g, const Corrections& fix, const int64_t* tile, int ld,
                   int64_t i0, int mr, int64_t j0, int nr) {
  const size_t size = dtype_bytes(g.out_dtype);
  double acc[kMaxNr];
  for (int i = 0; i < mr; ++i) {
    const int64_t rowsum = fix.rowsum[size_t(i0 + i)];
    for (int j = 0; j < nr; ++j) {
      int64_t v = tile[i * ld + j] + fix.column[size_t(j0 + j)];
      if (!fix.b_zero.empty()) v -= fix.b_zero[size_t(j0 + j)] * rowsum;
      acc[j] = static_cast<double>(v);
    }
    void* out = static_cast<char*>(g.c) + ((i0 + i) * g.ldc_row + j0 * g.ldc_col) * int64_t(size);
    finish_row(g, acc, nullptr, j0, nr, out, g.ldc_col);
  }
}

// The same for 8-bit A, whose tile already holds the column corrections (the microkernel
// starts from them) and whose every term is taken modulo 2^32: the rest in uint32, which
// gives the bits of the int64 sum truncated, in loops the compiler vectorizes (at N = 1024
// a scalar epilogue took about a third of the time the VNNI kernel left).
PHX_CLONES void finish_tile32(const GemmS8Args& g, const Corrections& fix, const int32_t* tile,
                              int ld, int64_t i0, int mr, int64_t j0, int nr) {
  const size_t size = dtype_bytes(g.out_dtype);
  const uint32_t* b_zero = fix.b_zero32.empty() ? nullptr : fix.b_zero32.data() + j0;
  const bool doubles = g.out_dtype != PHX_DTYPE_I32;
  alignas(64) double acc[kMaxNr];
  alignas(64) int32_t acc32[kMaxNr];
  for (int i = 0; i < mr; ++i) {
    const auto rowsum = static_cast<uint32_t>(fix.rowsum[size_t(i0 + i)]);
    const int32_t* row = tile + i * ld;
    if (b_zero != nullptr) {
      for (int j = 0; j < nr; ++j)
        acc32[j] = static_cast<int32_t>(static_cast<uint32_t>(row[j]) - b_zero[j] * rowsum);
    } else {
      std::memcpy(acc32, row, size_t(nr) * sizeof(int32_t));
    }
    if (!doubles && g.ldc_col == 1) {  // the raw accumulators, row-major: no stage to run
      int32_t* out = static_cast<int32_t*>(g.c) + (i0 + i) * g.ldc_row + j0;
      if (g.relu)
        for (int j = 0; j < nr; ++j) out[j] = std::max(acc32[j], 0);
      else
        std::memcpy(out, acc32, size_t(nr) * sizeof(int32_t));
      continue;
    }
    if (doubles)
      for (int j = 0; j < nr; ++j) acc[j] = acc32[j];
    void* out = static_cast<char*>(g.c) + ((i0 + i) * g.ldc_row + j0 * g.ldc_col) * int64_t(size);
    finish_row(g, acc, acc32, j0, nr, out, g.ldc_col);
  }
}

// ---- The product -----------------------------------------------------------------------

// Below this many multiply-adds a product runs on the calling thread alone.
constexpr double kParallelMacs = 64.0 * 64 * 64;
// Columns of a task's block: the B panels each A panel of the block meets, from L2.
constexpr int64_t kBlockColumns = 256;

void run(const GemmS8Args& g, ThreadPool& pool, const Kernels& isa) {
  if (g.m <= 0 || g.n <= 0) return;
  const bool wide = g.a_dtype == PHX_DTYPE_I16;
  // 16-bit A needs int64 sums: the portable pair kernel.
  const Kernels ks =
      wide ? Kernels{"generic", kGenericMr, kGenericNr, Layout::kPairs, nullptr} : isa;
  const int group = ks.layout == Layout::kQuads ? 4 : 2;
  const size_t elem = ks.layout == Layout::kQuads ? 1 : 2;
  const int64_t kpad = round_up(std::max<int64_t>(g.k, 1), group), groups = kpad / group;
  const int64_t a_panels = (g.m + ks.mr - 1) / ks.mr, b_panels = (g.n + ks.nr - 1) / ks.nr;
  const size_t a_panel_bytes = size_t(ks.mr) * size_t(kpad) * elem;
  const size_t b_panel_bytes = size_t(ks.nr) * size_t(kpad) * elem;
  const int32_t shift = ks.layout == Layout::kQuads && g.a_dtype == PHX_DTYPE_I8 ? 128 : 0;

  PackBuffers& buffers = pack_buffers();
  std::vector<char>& apack = buffers.a;
  std::vector<char>& bpack = buffers.b;
  apack.resize(std::max(apack.size(), size_t(a_panels) * a_panel_bytes));
  bpack.resize(std::max(bpack.size(), size_t(b_panels) * b_panel_bytes));
  Corrections fix;
  fix.rowsum.resize(size_t(g.m));
  std::vector<int64_t> colsum(size_t(g.n));
  pack({g.a, g.a_dtype, g.lda, true}, g.m, g.k, ks.mr, ks, shift, a_panel_bytes, apack.data(),
       fix.rowsum.data(), pool);
  pack({g.b, PHX_DTYPE_I8, g.ldb, g.trans_b}, g.n, g.k, ks.nr, ks, 0, b_panel_bytes, bpack.data(),
       colsum.data(), pool);
  fix.column.resize(size_t(g.n));
  if (g.b_zero_point != nullptr) fix.b_zero.assign(g.b_zero_point, g.b_zero_point + g.n);
  for (int64_t j = 0; j < g.n; ++j) {
    const int64_t zb = g.b_zero_point ? g.b_zero_point[j] : 0;
    fix.column[size_t(j)] = -(shift + int64_t{g.a_zero_point}) * colsum[size_t(j)] +
                            g.k * int64_t{g.a_zero_point} * zb + (g.bias ? g.bias[j] : 0);
  }
  if (!wide) {
    fix.column32.assign(size_t(b_panels * ks.nr), 0);
    std::copy(fix.column.begin(), fix.column.end(), fix.column32.begin());
    fix.b_zero32.assign(fix.b_zero.begin(), fix.b_zero.end());
  }

  // Tasks: row blocks x column blocks, in panels.
  const int64_t col_block = std::max<int64_t>(1, kBlockColumns / ks.nr);
  const int64_t col_blocks = (b_panels + col_block - 1) / col_block;
  const double macs = double(g.m) * double(g.n) * double(g.k);
  const int64_t threads = macs < kParallelMacs ? 1 : pool.size();
  const int64_t row_blocks =
      std::clamp<int64_t>((threads * 4 + col_blocks - 1) / col_blocks, 1, a_panels);
  // Whole tiles of raw row-major accumulators need no output stage: the microkernel
  // stores them in C.
  const bool direct =
      g.out_dtype == PHX_DTYPE_I32 && !g.relu && g.ldc_col == 1 && g.b_zero_point == nullptr;
  auto task = [&](size_t t) {
    const int64_t rb = int64_t(t) / col_blocks, cb = int64_t(t) % col_blocks;
    const int64_t ip0 = a_panels * rb / row_blocks, ip1 = a_panels * (rb + 1) / row_blocks;
    const int64_t jp0 = cb * col_block, jp1 = std::min(b_panels, jp0 + col_block);
    alignas(64) int32_t tile32[kMaxMr * kMaxNr];
    int64_t tile64[kGenericMr * kGenericNr];
    for (int64_t ip = ip0; ip < ip1; ++ip) {
      const char* ap = apack.data() + size_t(ip) * a_panel_bytes;
      const int64_t i0 = ip * ks.mr;
      const int mr = int(std::min<int64_t>(ks.mr, g.m - i0));
      for (int64_t jp = jp0; jp < jp1; ++jp) {
        const char* bp = bpack.data() + size_t(jp) * b_panel_bytes;
        const int64_t j0 = jp * ks.nr;
        const int nr = int(std::min<int64_t>(ks.nr, g.n - j0));
        if (wide) {
          ukr_generic64(groups, reinterpret_cast<const int16_t*>(ap),
                        reinterpret_cast<const int16_t*>(bp), tile64);
          finish_tile64(g, fix, tile64, ks.nr, i0, mr, j0, nr);
        } else if (direct && mr == ks.mr && nr == ks.nr) {
          ks.ukr(groups, ap, bp, fix.column32.data() + j0,
                 static_cast<int32_t*>(g.c) + i0 * g.ldc_row + j0, g.ldc_row);
        } else {
          ks.ukr(groups, ap, bp, fix.column32.data() + j0, tile32, ks.nr);
          finish_tile32(g, fix, tile32, ks.nr, i0, mr, j0, nr);
        }
      }
    }
  };
  const int64_t tasks = row_blocks * col_blocks;
  if (threads <= 1) {
    for (int64_t t = 0; t < tasks; ++t) task(size_t(t));
  } else {
    pool.run(size_t(tasks), task);
  }
}

}  // namespace
}  // namespace gemm_s8_detail

void gemm_s8(const GemmS8Args& args, ThreadPool& pool) {
  using namespace gemm_s8_detail;
  run(args, pool, kernels_for(chosen_isa()));
}

const char* gemm_s8_isa() { return gemm_s8_detail::kernels_for(gemm_s8_detail::chosen_isa()).name; }

std::vector<const char*> gemm_s8_supported_isas() {
  using namespace gemm_s8_detail;
  std::vector<const char*> names;
  for (Isa isa : {Isa::kVnni, Isa::kAvx2, Isa::kGeneric})
    if (cpu_has(isa)) names.push_back(kernels_for(isa).name);
  return names;
}

bool gemm_s8_with_isa(const GemmS8Args& args, ThreadPool& pool, const char* isa) {
  using namespace gemm_s8_detail;
  for (Isa candidate : {Isa::kVnni, Isa::kAvx2, Isa::kGeneric}) {
    if (!cpu_has(candidate) || std::strcmp(isa, kernels_for(candidate).name) != 0) continue;
    run(args, pool, kernels_for(candidate));
    return true;
  }
  return false;
}

}  // namespace phx::kernels
