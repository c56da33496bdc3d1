#include "mxu_gemm.h"

#include <algorithm>
#include <numeric>

#include "phx/kernels/gemm.h"

namespace phx::tpu_sim {
namespace {

// Work is split in rows that are multiples of every host microkernel's height (AVX-512
// 14, AVX2 6, portable 4) and columns that are multiples of every width (32, 16, 8),
// so that no task computes a partial tile it could have avoided.
constexpr int64_t kRowUnit = 84;
constexpr int64_t kColUnit = 32;
// A block of the output accumulates pass after pass: one gemm call per pass computes the
// pass's sums for the block into a scratch, which is then added to the block. Each call
// packs that pass's B for all the block's rows, so blocks are tall (a region's rows split
// evenly into blocks of at most 1024) and as wide as 1024 columns: measured on the 1024^3
// benchmark, smaller blocks lose more to packing than they gain in cache for the adds.
constexpr int64_t kBlockRows = 1024;
constexpr int64_t kBlockCols = 1024;
// Below this many MACs the products run on the calling thread only.
constexpr int64_t kParallelMacs = 96 * 96 * 96;

const float* a_at(const MxuProduct& p, int64_t i, int64_t k) {
  return p.trans_a ? p.a + k * p.lda + i : p.a + i * p.lda + k;
}

const float* b_at(const MxuProduct& p, int64_t k, int64_t j) {
  return p.trans_b ? p.b + j * p.ldb + k : p.b + k * p.ldb + j;
}

// c[rows x cols] (leading dimension ldc) = the product's block at (i0, j0) over the ks
// [k0, k0 + depth): one pass, summed in k order from zero.
void gemm_pass(const MxuProduct& p, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
               int64_t k0, int64_t depth, float* c, int64_t ldc, kernels::ThreadPool& pool) {
  kernels::GemmArgs g;
  g.m = rows;
  g.n = cols;
  g.k = depth;
  g.in_dtype = PHX_DTYPE_F32;
  g.out_dtype = PHX_DTYPE_F32;
  g.a = a_at(p, i0, k0);
  g.lda = p.lda;
  g.trans_a = p.trans_a;
  g.b = b_at(p, k0, j0);
  g.ldb = p.ldb;
  g.trans_b = p.trans_b;
  g.c = c;
  g.ldc = ldc;
  kernels::gemm(g, pool);
}

// c[rows x cols] (leading dimension ldc) += partial[rows x cols] (contiguous), in f32.
// Cloned per instruction set: the adds are a tenth of a large product's time.
__attribute__((target_clones("avx512f", "avx2", "default"))) void add_block(
    float* c, int64_t ldc, const float* partial, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict dst = c + r * ldc;
    const float* __restrict src = partial + r * cols;
    for (int64_t j = 0; j < cols; ++j) dst[j] += src[j];
  }
}

// Rows [i0, i1) and columns [j0, j1) of product p, every pass.
void run_region(const MxuProduct& p, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                int64_t depth, kernels::ThreadPool& pool) {
  if (p.k <= depth) {  // one pass: the output is its sums
    gemm_pass(p, i0, i1 - i0, j0, j1 - j0, 0, p.k, p.c + i0 * p.ldc + j0, p.ldc, pool);
    return;
  }
  thread_local std::vector<float> partial;
  const int64_t blocks = (i1 - i0 + kBlockRows - 1) / kBlockRows;
  const int64_t block_rows = (i1 - i0 + blocks - 1) / blocks;
  for (int64_t ib = i0; ib < i1; ib += block_rows) {
    const int64_t rows = std::min(block_rows, i1 - ib);
    for (int64_t jb = j0; jb < j1; jb += kBlockCols) {
      const int64_t cols = std::min(kBlockCols, j1 - jb);
      float* c = p.c + ib * p.ldc + jb;
      gemm_pass(p, ib, rows, jb, cols, 0, depth, c, p.ldc, pool);
      partial.resize(static_cast<size_t>(rows * cols));
      for (int64_t k0 = depth; k0 < p.k; k0 += depth) {
        gemm_pass(p, ib, rows, jb, cols, k0, std::min(depth, p.k - k0), partial.data(), cols,
                  pool);
        add_block(c, p.ldc, partial.data(), rows, cols);
      }
    }
  }
}

struct Region {
  size_t product;
  int64_t i0, i1, j0, j1;
};

// Cuts product index into parts regions along M (or N when M is too short to share).
void split(const MxuProduct& p, size_t index, int64_t parts, std::vector<Region>& out) {
  const bool along_m = p.m >= parts * kRowUnit || p.m >= p.n;
  const int64_t unit = along_m ? kRowUnit : kColUnit;
  const int64_t extent = along_m ? p.m : p.n;
  const int64_t units = (extent + unit - 1) / unit;
  parts = std::clamp<int64_t>(parts, 1, units);
  for (int64_t q = 0; q < parts; ++q) {
    const int64_t lo = std::min(extent, units * q / parts * unit);
    const int64_t hi = std::min(extent, units * (q + 1) / parts * unit);
    if (along_m)
      out.push_back({index, lo, hi, 0, p.n});
    else
      out.push_back({index, 0, p.m, lo, hi});
  }
}

}  // namespace

void mxu_gemm(const std::vector<MxuProduct>& products, int64_t depth,
              kernels::ThreadPool& pool) {
  int64_t macs = 0;
  for (const MxuProduct& p : products) macs += p.m * p.n * p.k;
  const int64_t threads = pool.size();
  if (threads <= 1 || macs < kParallelMacs) {
    for (const MxuProduct& p : products) run_region(p, 0, p.m, 0, p.n, depth, pool);
    return;
  }
  // Every product in parts regions so that products * parts spreads evenly over the
  // threads; inside a task gemm runs on that task's thread (the pool does not nest).
  const int64_t count = static_cast<int64_t>(products.size());
  const int64_t parts = threads / std::gcd(count, threads);
  std::vector<Region> regions;
  for (size_t i = 0; i < products.size(); ++i) split(products[i], i, parts, regions);
  pool.run(regions.size(), [&](size_t t) {
    const Region& r = regions[t];
    run_region(products[r.product], r.i0, r.i1, r.j0, r.j1, depth, pool);
  });
}

}  // namespace phx::tpu_sim
