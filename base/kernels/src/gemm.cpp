// The GEMM driver: ISA dispatch, the split into tasks, cache blocking and the K == 0
// case. The microkernels and fast packers live in gemm_{generic,avx2,avx512}.cpp.
//
// Loop nest of one task (rows [i0, i1) x columns [j0, j1) of one matrix of the batch),
// GotoBLAS/BLIS style with the roles chosen so that the broadcast operand (A) is the
// one resident in L1:
//   for ic in rows, step MC          A block MC x KC, packed once per (ic, pc)
//     for pc in K, step KC
//       pack A[ic.., pc..] into MR-row panels
//       for jc in columns, step NC   B block KC x NC, packed, lives in L2
//         pack B[pc.., jc..] into NR-column panels
//         for ir in MC, step MR      one A panel (MR x KC) stays in L1 ...
//           for jr in NC, step NR    ... while the B panels stream from L2
//             microkernel: C tile (+)= A panel . B panel; epilogue on the last pc
// C is the f32 accumulator across K blocks; a 16-bit C accumulates in an f32 scratch
// (MC x columns, per thread) and is written, rounded, by the last K block only.
// Products of at most kSkinnyRows rows (without k_pass) take the skinny path instead
// (run_skinny): B streamed once, unpacked, columns split across the threads.

#include <phx/env.h>
#include <phx/kernels/gemm.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "gemm_dispatch.h"
#include "gemm_internal.h"

namespace phx::kernels {
namespace gemm_detail {
namespace {

// ---------------------------------------------------------------------------------------
// ISA selection.

bool cpu_has(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kGeneric:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             avx2_kernels() != nullptr;
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("fma") && avx512_kernels() != nullptr;
    case Isa::kAvx512Bf16:
      return cpu_has(Isa::kAvx512) && __builtin_cpu_supports("avx512bf16") &&
             avx512_bf16_kernels() != nullptr;
  }
  return false;
#else
  return isa == Isa::kGeneric;
#endif
}

const IsaKernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512Bf16:
      return *avx512_bf16_kernels();
    case Isa::kAvx512:
      return *avx512_kernels();
    case Isa::kAvx2:
      return *avx2_kernels();
    default:
      return generic_kernels();
  }
}

// The automatic choice takes the VDPBF16PS kernel only where it pays: where the
// instruction, timed, multiplies faster than FMA by a margin (gemm_bf16_probe.cpp says
// what was measured where). PHX_CPU_ISA=avx512-bf16 selects it anyway (where the CPU has
// AVX512_BF16), and avx512 or below leaves it out.
Isa best_isa() {
  if (cpu_has(Isa::kAvx512Bf16) && bf16_dot_outpaces_fma()) return Isa::kAvx512Bf16;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2})
    if (cpu_has(isa)) return isa;
  return Isa::kGeneric;
}

Isa chosen_isa() {
  static const Isa chosen = [] {
    Isa best = best_isa();
    const char* env = env_value("PHX_CPU_ISA");
    if (env == nullptr) return best;
    if (std::strcmp(env, "avx512-bf16") == 0)
      return cpu_has(Isa::kAvx512Bf16) ? Isa::kAvx512Bf16 : best;
    Isa cap = best;
    if (std::strcmp(env, "generic") == 0)
      cap = Isa::kGeneric;
    else if (std::strcmp(env, "avx2") == 0)
      cap = Isa::kAvx2;
    else if (std::strcmp(env, "avx512") == 0)
      cap = Isa::kAvx512;
    if (static_cast<int>(cap) < static_cast<int>(best)) {
      best = cap;
      while (!cpu_has(best)) best = static_cast<Isa>(static_cast<int>(best) - 1);
    }
    return best;
  }();
  return chosen;
}

// ---------------------------------------------------------------------------------------
// Per-thread buffers, 64-byte aligned, grown on demand and kept for the next call.

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { ::operator delete(data_, std::align_val_t(64)); }
  void* get(size_t bytes) {
    if (bytes > capacity_) {
      ::operator delete(data_, std::align_val_t(64));
      capacity_ = (bytes + 4095) & ~size_t{4095};
      data_ = ::operator new(capacity_, std::align_val_t(64));
    }
    return data_;
  }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

struct ThreadBuffers {
  AlignedBuffer a, b, scratch;
};

ThreadBuffers& thread_buffers() {
  thread_local ThreadBuffers buffers;
  return buffers;
}

// Scratch budget for a 16-bit C accumulated over several K blocks (floats).
constexpr int64_t kScratchFloats = int64_t{1} << 20;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The block size, a multiple of unit and at most max_block (itself a multiple of unit),
// that splits extent into the fewest blocks of nearly equal size.
int64_t balanced_block(int64_t extent, int64_t max_block, int64_t unit) {
  const int64_t blocks = (extent + max_block - 1) / max_block;
  return std::min(max_block, round_up((extent + blocks - 1) / blocks, unit));
}

size_t dtype_bytes(phx_dtype d) { return d == PHX_DTYPE_F32 ? 4 : 2; }

// The K block run_block cuts a product of K into, in the f32 layout without k_pass: blocks
// of equal size rather than full blocks and a short tail.
int64_t f32_k_block(int64_t k, const IsaKernels& ks) { return balanced_block(k, ks.kc, 4); }

// ---------------------------------------------------------------------------------------
// One task: rows [i0, i1) and columns [j0, j1) of matrix bi.

void run_block(const GemmArgs& g, const IsaKernels& ks, const PrepackedB* prepacked, int64_t bi,
               int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const size_t in_sz = dtype_bytes(g.in_dtype), out_sz = dtype_bytes(g.out_dtype);
  const auto* a_base = static_cast<const char*>(g.a) + bi * g.batch_stride_a * int64_t(in_sz);
  const auto* b_base = static_cast<const char*>(g.b) + bi * g.batch_stride_b * int64_t(in_sz);
  char* c_base = static_cast<char*>(g.c) + bi * g.batch_stride_c * int64_t(out_sz);

  const PackSrc asrc{a_base, g.lda, !g.trans_a, g.in_dtype};
  const PackSrc bsrc{b_base, g.ldb, g.trans_b, g.in_dtype};
  // Fixed passes need each k's product added on its own, which vdpbf16ps does not do.
  const bool pairs = ks.bf16_pairs && g.in_dtype == PHX_DTYPE_BF16 && g.k_pass == 0;
  const PackFn pack = pairs ? ks.pack_pairs : ks.pack_f32;
  const UkrFn ukr = pairs ? ks.ukr_bf16 : ks.ukr_f32;
  const int mr = ks.mr, nr = ks.nr;
  const int64_t K = g.k;
  const bool out16 = g.out_dtype != PHX_DTYPE_F32;
  // A prepacked B (f32, without k_pass) was cut as f32_k_block cuts it.
  const int64_t kc_blk = g.k_pass > 0 ? std::min(g.k_pass, K)
                         : pairs      ? balanced_block(K, ks.kc_pairs, 4)
                                      : f32_k_block(K, ks);
  const bool multi_k = K > kc_blk;
  const int64_t ncols = j1 - j0;

  int64_t mc = ks.mc;
  float* scratch = nullptr;
  int64_t lds = 0;
  ThreadBuffers& buf = thread_buffers();
  if (out16 && multi_k) {
    lds = round_up(ncols, 16);
    mc = std::max<int64_t>(mr, std::min<int64_t>(mc, kScratchFloats / lds / mr * mr));
    scratch = static_cast<float*>(buf.scratch.get(size_t(std::min(mc, i1 - i0)) * lds * 4));
  }
  mc = balanced_block(i1 - i0, mc, mr);
  const int64_t nc = balanced_block(ncols, ks.nc, nr);
  const int64_t kc_alloc = round_up(kc_blk, 2);
  char* apack =
      static_cast<char*>(buf.a.get(size_t(round_up(std::min(mc, i1 - i0), mr) * kc_alloc * 4)));
  char* bpack = prepacked != nullptr
                    ? nullptr
                    : static_cast<char*>(buf.b.get(size_t(round_up(nc, nr) * kc_alloc * 4)));

  for (int64_t ic = i0; ic < i1; ic += mc) {
    const int64_t mlen = std::min(mc, i1 - ic);
    for (int64_t pc = 0; pc < K; pc += kc_blk) {
      const int64_t klen = std::min(kc_blk, K - pc);
      const int64_t kpad = pairs ? round_up(klen, 2) : klen;
      const int64_t ksteps = pairs ? kpad / 2 : klen;
      const size_t elem = pairs ? 2 : 4;
      const size_t a_panel_bytes = size_t(mr) * size_t(kpad) * elem;
      const size_t b_panel_bytes = size_t(nr) * size_t(kpad) * elem;
      const bool first = pc == 0, last = pc + klen == K;
      pack(asrc, ic, mlen, pc, klen, mr, apack);
      for (int64_t jc = j0; jc < j1; jc += nc) {
        const int64_t nlen = std::min(nc, j1 - jc);
        const char* bpanels = bpack;
        if (prepacked != nullptr)
          bpanels =
              reinterpret_cast<const char*>(prepacked->data + pc * prepacked->n_padded + jc * klen);
        else
          pack(bsrc, jc, nlen, pc, klen, nr, bpack);
        for (int64_t ir = 0; ir < mlen; ir += mr) {
          const char* ap = apack + size_t(ir / mr) * a_panel_bytes;
          const int64_t row = ic + ir;
          Tile t;
          t.mr = int(std::min<int64_t>(mr, mlen - ir));
          t.accumulate = !first;
          t.final = last;
          t.act = g.activation;
          t.out = g.out_dtype;
          for (int64_t jr = 0; jr < nlen; jr += nr) {
            const int64_t col = jc + jr;
            t.nr = int(std::min<int64_t>(nr, nlen - jr));
            t.bias = g.bias ? g.bias + col : nullptr;
            t.bias_rows = g.bias_rows ? g.bias_rows + row : nullptr;
            if (!out16) {
              t.c32 = reinterpret_cast<float*>(c_base) + row * g.ldc + col;
              t.ldc32 = g.ldc;
              t.c16 = nullptr;
              t.ldc16 = 0;
            } else {
              t.c16 = reinterpret_cast<uint16_t*>(c_base) + row * g.ldc + col;
              t.ldc16 = g.ldc;
              t.c32 = scratch ? scratch + (row - ic) * lds + (col - j0) : nullptr;
              t.ldc32 = lds;
            }
            ukr(ksteps, ap, bpanels + size_t(jr / nr) * b_panel_bytes, t);
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// The skinny path: columns [j0, j1) of matrix bi, B streamed once (gemm_internal.h).

// Up to this many rows of C a product takes the skinny path, whatever K, N, the layouts and
// dtypes, and whether B was packed beforehand (a PackedB must give the bits of B itself).
// Measured on the 2-core AVX-512 machine (loaded, so ranges), M x 4096 x 4096 f32, both
// paths timed interleaved in one process on 2 threads (ms, packed -> skinny):
//   B K x N:          M = 1: 34 -> 11-16, 4: 27-31 -> 14-16, 8: 31-32 -> 22-23,
//                     16: 39-55 -> 36-44, 24: 35-43 -> 41-56 (the packed path wins from here)
//   B N x K:          M = 1: 30-31 -> 17-20, 16: 33-41 -> 25-26, 32: 42 -> 32
//   PackedB (K x N):  M = 1: 18-22 -> 12-15, 4: 17 -> 15-16, 8: 20 -> 20-22,
//                     16: 31-47 -> 23-24
// bench_gemm (same run, phx/OpenBLAS, packed -> skinny): M = 1: 0.68 -> 2.64, 2: 0.59 ->
// 1.72, 4: 0.87 -> 2.96, 8: 0.87 -> 1.87, 16: 1.30 -> 2.20; 32 and 64 stay packed (2.0).
constexpr int64_t kSkinnyRows = 16;

bool takes_skinny(const GemmArgs& g) { return g.k_pass == 0 && g.m <= kSkinnyRows; }

// What the skinny path keeps in L1 at once (floats): the accumulators and the 4 rows of B
// of a pass of the update, or a tile of B made f32 and k-major.
constexpr int64_t kSkinnyL1Floats = 8192;

void run_skinny(const GemmArgs& g, const IsaKernels& ks, const PrepackedB* prepacked, int64_t bi,
                int64_t j0, int64_t j1) {
  const size_t in_sz = dtype_bytes(g.in_dtype), out_sz = dtype_bytes(g.out_dtype);
  const auto* a_base = static_cast<const char*>(g.a) + bi * g.batch_stride_a * int64_t(in_sz);
  const auto* b_base = static_cast<const char*>(g.b) + bi * g.batch_stride_b * int64_t(in_sz);
  char* c_base = static_cast<char*>(g.c) + bi * g.batch_stride_c * int64_t(out_sz);
  const int64_t m = g.m, k = g.k;
  ThreadBuffers& buf = thread_buffers();

  // A in f32, k-major (one panel of m rows): the m values of a k side by side, where the
  // update broadcasts them from, rather than m rows lda apart (4K-aliased in L1 when lda
  // is a multiple of 1024). A is small: m K values against the K (j1 - j0) of B.
  float* a = static_cast<float*>(buf.a.get(size_t(m * k) * 4));
  ks.pack_f32(PackSrc{a_base, g.lda, !g.trans_a, g.in_dtype}, 0, m, 0, k, int(m), a);
  const int64_t a_row = 1, a_k = m;

  const bool out32 = g.out_dtype == PHX_DTYPE_F32;
  const bool in_place = prepacked == nullptr && g.in_dtype == PHX_DTYPE_F32 && !g.trans_b;
  const int64_t nb =
      std::max<int64_t>(ks.nr, kSkinnyL1Floats / (m + 4) / ks.nr * ks.nr);  // columns per block
  float* scratch = out32 ? nullptr : static_cast<float*>(buf.scratch.get(size_t(m * nb) * 4));
  const PackSrc bsrc{b_base, g.ldb, g.trans_b, g.in_dtype};

  for (int64_t jb = j0; jb < j1; jb += nb) {
    const int64_t w = std::min(nb, j1 - jb);
    // The f32 C is its own accumulator; a 16-bit one takes them in scratch.
    float* acc = out32 ? reinterpret_cast<float*>(c_base) + jb : scratch;
    const int64_t ldacc = out32 ? g.ldc : nb;
    if (prepacked != nullptr) {
      const int64_t kb = f32_k_block(k, ks), nr = ks.nr;
      for (int64_t pc = 0; pc < k; pc += kb) {
        const int64_t klen = std::min(kb, k - pc);
        const float* block = prepacked->data + pc * prepacked->n_padded;
        for (int64_t col = jb; col < jb + w;) {
          const int64_t panel = col / nr * nr, cw = std::min(panel + nr, jb + w) - col;
          ks.skinny_update(m, klen, a + pc * a_k, a_row, a_k, block + panel * klen + col - panel,
                           nr, cw, acc + col - jb, ldacc, pc == 0);
          col += cw;
        }
      }
    } else if (in_place) {
      ks.skinny_update(m, k, a, a_row, a_k, reinterpret_cast<const float*>(b_base) + jb, g.ldb, w,
                       acc, ldacc, true);
    } else {
      // A transposed B in tiles one panel wide (nr of its rows, read in runs of ks; the
      // update keeps their sums in registers), a row-major one in tiles of whole rows.
      const int64_t tn = g.trans_b ? ks.nr : round_up(w, 16);
      const int64_t tk = std::max<int64_t>(4, kSkinnyL1Floats / tn / 4 * 4);
      float* tile = static_cast<float*>(buf.b.get(size_t(tn * tk) * 4));
      for (int64_t jt = jb; jt < jb + w; jt += tn) {
        const int64_t tw = std::min(tn, jb + w - jt);
        for (int64_t pc = 0; pc < k; pc += tk) {
          const int64_t klen = std::min(tk, k - pc);
          ks.pack_f32(bsrc, jt, tw, pc, klen, int(tn), tile);
          ks.skinny_update(m, klen, a + pc * a_k, a_row, a_k, tile, tn, tw, acc + jt - jb, ldacc,
                           pc == 0);
        }
      }
    }
    if (!out32 || g.bias != nullptr || g.bias_rows != nullptr ||
        g.activation != PHX_ACTIVATION_NONE)
      ks.skinny_epilogue(m, w, acc, ldacc, g.bias ? g.bias + jb : nullptr, g.bias_rows,
                         g.activation, g.out_dtype, c_base + jb * int64_t(out_sz), g.ldc);
  }
}

void run_k0(const GemmArgs& g) {
  const size_t out_sz = dtype_bytes(g.out_dtype);
  for (int64_t bi = 0; bi < g.batch; ++bi) {
    char* c_base = static_cast<char*>(g.c) + bi * g.batch_stride_c * int64_t(out_sz);
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float v = apply_activation(g.bias ? g.bias[j] : 0.0f, g.activation);
        int64_t off = i * g.ldc + j;
        store_out(v, g.out_dtype, reinterpret_cast<float*>(c_base) + off,
                  reinterpret_cast<uint16_t*>(c_base) + off);
      }
  }
}

int64_t gcd64(int64_t a, int64_t b) {
  while (b != 0) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Below this many flops (a 128^3 product, ~40 us on one core) a call runs on the
// calling thread only: waking a sleeping worker (futex, 5-20 us here) would cost more
// than it saves.
constexpr double kParallelFlops = 2.0 * 128 * 128 * 128;
// A product of a few rows (skinny) streams B once and does little else: with B this large
// it is bound by memory, not by its flops, and each thread's share of B adds bandwidth
// (a classifier's 1280 x 1000 f32 layer, 5 MB: 2.6 MFLOP, 0.4 ms on one thread).
constexpr double kParallelSkinnyBytes = 256 * 1024;

void run(const GemmArgs& g, ThreadPool& pool, const IsaKernels& ks,
         const PrepackedB* prepacked = nullptr) {
  if (g.m <= 0 || g.n <= 0 || g.batch <= 0) return;
  if (g.k == 0) {
    run_k0(g);
    return;
  }
  const bool skinny = takes_skinny(g);
  auto task = [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (skinny)
      run_skinny(g, ks, prepacked, bi, j0, j1);
    else
      run_block(g, ks, prepacked, bi, i0, i1, j0, j1);
  };
  const double flops = 2.0 * double(g.m) * double(g.n) * double(g.k) * double(g.batch);
  const int64_t threads = pool.size();
  const double b_bytes =
      double(g.k) * double(g.n) * double(g.batch) * double(dtype_bytes(g.in_dtype));
  const bool worth_threads = flops >= kParallelFlops || (skinny && b_bytes >= kParallelSkinnyBytes);
  if (threads <= 1 || !worth_threads) {
    for (int64_t bi = 0; bi < g.batch; ++bi) task(bi, 0, g.m, 0, g.n);
    return;
  }
  // Split every matrix into `parts` pieces so that batch * parts spreads evenly over
  // the threads. Each piece packs the whole of the operand its split does not cut: B
  // when the split is along M, A along N. So the split is along M when B is the cheaper
  // to pack again (N <= M, or B packed beforehand: nothing to pack) and M has a tile per
  // piece, else along N (a convolution's product: 64 rows of weights times 3136 pixels
  // of a K of 576, whose B packed once per thread cost more than its whole product), and
  // along N when B is streamed (skinny).
  int64_t parts = threads / gcd64(g.batch, threads);
  const bool m_cheaper = prepacked != nullptr || g.n <= g.m;
  const bool split_m = !skinny && (m_cheaper ? g.m >= parts * ks.mr : g.n < parts * ks.nr);
  const int64_t unit = split_m ? ks.mr : ks.nr;
  const int64_t extent = split_m ? g.m : g.n;
  parts = std::max<int64_t>(1, std::min(parts, (extent + unit - 1) / unit));
  const int64_t units = (extent + unit - 1) / unit;
  auto bounds = [&](int64_t p) { return std::min(extent, units * p / parts * unit); };
  const int64_t tasks = g.batch * parts;
  pool.run(size_t(tasks), [&](size_t t) {
    const int64_t bi = int64_t(t) / parts, p = int64_t(t) % parts;
    const int64_t lo = bounds(p), hi = bounds(p + 1);
    if (lo >= hi) return;
    if (split_m)
      task(bi, lo, hi, 0, g.n);
    else
      task(bi, 0, g.m, lo, hi);
  });
}

Isa isa_from_name(const char* name, bool* ok) {
  *ok = true;
  if (std::strcmp(name, "avx512-bf16") == 0) return Isa::kAvx512Bf16;
  if (std::strcmp(name, "avx512") == 0) return Isa::kAvx512;
  if (std::strcmp(name, "avx2") == 0) return Isa::kAvx2;
  if (std::strcmp(name, "generic") == 0) return Isa::kGeneric;
  *ok = false;
  return Isa::kGeneric;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Portable packers.

namespace {

template <phx_dtype D>
inline float load_elem(const void* p, int64_t idx) {
  if constexpr (D == PHX_DTYPE_F32) {
    return static_cast<const float*>(p)[idx];
  } else if constexpr (D == PHX_DTYPE_BF16) {
    return bf16_to_f32(static_cast<const uint16_t*>(p)[idx]);
  } else {
    return f16_to_f32(static_cast<const uint16_t*>(p)[idx]);
  }
}

template <phx_dtype D>
void pack_f32_t(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc, int P,
                float* dst) {
  for (int64_t p0 = 0; p0 < rows; p0 += P) {
    const int64_t pr = std::min<int64_t>(P, rows - p0);
    float* d = dst + p0 * kc;
    if (s.k_contiguous) {
      for (int64_t r = 0; r < pr; ++r) {
        const int64_t base = (r0 + p0 + r) * s.ld + k0;
        for (int64_t k = 0; k < kc; ++k) d[k * P + r] = load_elem<D>(s.src, base + k);
      }
    } else {
      for (int64_t k = 0; k < kc; ++k) {
        const int64_t base = (k0 + k) * s.ld + r0 + p0;
        for (int64_t r = 0; r < pr; ++r) d[k * P + r] = load_elem<D>(s.src, base + r);
      }
    }
    if (pr < P)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t r = pr; r < P; ++r) d[k * P + r] = 0.0f;
  }
}

}  // namespace

void pack_f32_generic(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc, int panel,
                      void* dst) {
  float* d = static_cast<float*>(dst);
  switch (s.dtype) {
    case PHX_DTYPE_BF16:
      pack_f32_t<PHX_DTYPE_BF16>(s, r0, rows, k0, kc, panel, d);
      break;
    case PHX_DTYPE_F16:
      pack_f32_t<PHX_DTYPE_F16>(s, r0, rows, k0, kc, panel, d);
      break;
    default:
      pack_f32_t<PHX_DTYPE_F32>(s, r0, rows, k0, kc, panel, d);
      break;
  }
}

void pack_pairs_generic(const PackSrc& s, int64_t r0, int64_t rows, int64_t k0, int64_t kc, int P,
                        void* dst) {
  const auto* src = static_cast<const uint16_t*>(s.src);
  auto* d0 = static_cast<uint16_t*>(dst);
  const int64_t kp = (kc + 1) / 2;
  for (int64_t p0 = 0; p0 < rows; p0 += P) {
    const int64_t pr = std::min<int64_t>(P, rows - p0);
    uint16_t* d = d0 + p0 * kp * 2;
    for (int64_t q = 0; q < kp; ++q) {
      for (int64_t r = 0; r < P; ++r) {
        uint16_t lo = 0, hi = 0;
        if (r < pr) {
          const int64_t row = r0 + p0 + r, k = k0 + 2 * q;
          const bool has_hi = 2 * q + 1 < kc;
          if (s.k_contiguous) {
            lo = src[row * s.ld + k];
            if (has_hi) hi = src[row * s.ld + k + 1];
          } else {
            lo = src[k * s.ld + row];
            if (has_hi) hi = src[(k + 1) * s.ld + row];
          }
        }
        d[(q * P + r) * 2] = lo;
        d[(q * P + r) * 2 + 1] = hi;
      }
    }
  }
}

void write_tile_scalar(const float* acc, int ld_acc, const Tile& t) {
  for (int i = 0; i < t.mr; ++i) {
    for (int j = 0; j < t.nr; ++j) {
      float v = acc[i * ld_acc + j];
      if (t.accumulate) v += t.c32[i * t.ldc32 + j];
      if (!t.final) {
        t.c32[i * t.ldc32 + j] = v;
        continue;
      }
      if (t.bias) v += t.bias[j];
      if (t.bias_rows) v += t.bias_rows[i];
      v = apply_activation(v, t.act);
      if (t.out == PHX_DTYPE_F32)
        t.c32[i * t.ldc32 + j] = v;
      else
        store_out(v, t.out, nullptr, static_cast<uint16_t*>(t.c16) + i * t.ldc16 + j);
    }
  }
}

}  // namespace gemm_detail

void gemm(const GemmArgs& args, ThreadPool& pool) {
  using namespace gemm_detail;
  run(args, pool, kernels_for(chosen_isa()));
}

PackedB gemm_pack_b(const GemmArgs& args) {
  using namespace gemm_detail;
  const IsaKernels& ks = kernels_for(chosen_isa());
  PackedB packed;
  packed.k_ = args.k;
  packed.n_padded_ = round_up(args.n, ks.nr);
  packed.isa_ = &ks;
  packed.panels_.reset(
      static_cast<float*>(::operator new(size_t(packed.bytes()), std::align_val_t(64))));
  const PackSrc source{args.b, args.ldb, args.trans_b, PHX_DTYPE_F32};
  float* panels = packed.panels_.get();
  const int64_t k_block = f32_k_block(args.k, ks);
  for (int64_t pc = 0; pc < args.k; pc += k_block) {
    const int64_t klen = std::min(k_block, args.k - pc);
    ks.pack_f32(source, 0, args.n, pc, klen, ks.nr, panels + pc * packed.n_padded_);
  }
  return packed;
}

void gemm(const GemmArgs& args, const PackedB& b, ThreadPool& pool) {
  using namespace gemm_detail;
  const PrepackedB prepacked{b.panels_.get(), b.n_padded_};
  run(args, pool, *static_cast<const IsaKernels*>(b.isa_), &prepacked);
}

const char* gemm_isa() {
  using namespace gemm_detail;
  return kernels_for(chosen_isa()).name;
}

bool gemm_bf16_dot_pays() {
  using namespace gemm_detail;
  return cpu_has(Isa::kAvx512Bf16) && bf16_dot_outpaces_fma();
}

std::vector<const char*> gemm_supported_isas() {
  using namespace gemm_detail;
  std::vector<const char*> names;
  for (Isa isa : {Isa::kAvx512Bf16, Isa::kAvx512, Isa::kAvx2, Isa::kGeneric})
    if (cpu_has(isa)) names.push_back(kernels_for(isa).name);
  return names;
}

int64_t gemm_skinny_max_rows() { return gemm_detail::kSkinnyRows; }

bool gemm_with_isa(const GemmArgs& args, ThreadPool& pool, const char* isa) {
  using namespace gemm_detail;
  bool ok = false;
  Isa which = isa_from_name(isa, &ok);
  if (!ok || !cpu_has(which)) return false;
  run(args, pool, kernels_for(which));
  return true;
}

}  // namespace phx::kernels
