// attention: out = softmax(scale * q k^T + mask) v for every (batch, head), flash style.
//
// The Sq x Skv score matrix is never formed. A task takes a block of kQueryBlock queries
// of one (batch, head) and streams the keys and values in blocks of kKeyBlock. Each query
// keeps a running maximum m of its scores, a running sum l of exp(s - m) and an
// unnormalized output o; when a key block raises m, l and o are rescaled by
// exp(m_old - m_new), so that at the end o / l is the softmax-weighted sum. Memory is a few
// blocks per task, whatever the sequence lengths. Key blocks that the mask hides from the
// whole query block are never visited, which halves a causal attention's work.
//
// A key block's scores are held transposed, a row per key and a column per query: each
// query's m, l and rescaling factor then sit in a vector lane, and the softmax is
// elementwise across the queries, with no horizontal maximum or sum. Both products are
// one register-blocked kernel (product): the scores from the block's keys, read in place,
// and the task's queries, transposed once with the scale folded in; the outputs from those
// probabilities and the block's values. No key block is ever transposed.
//
// Everything is computed in f32; 16-bit operands are widened block by block and the output
// rounded once. A query that sees no key (causal with Sq > Skv: its position is negative)
// has an empty softmax; its output is defined as zeros. The vectors follow the instruction
// set that gemm_isa() names (PHX_CPU_ISA caps it), so that the tests reach every path.
#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "ops_common.h"
#include "phx/kernels/gemm.h"
#include "vec.h"

namespace phx::kernels::ops {
namespace {

// 64 x 64 f32 scores are 16 KiB: at D = 64 each product touches three such blocks (keys,
// queries and scores; probabilities, values and outputs), which about fill an L1 cache.
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyBlock = 64;

// ---- vector building blocks (f32) ----

// One tile of product: for its R rows r and C * L columns x,
//   c[r * ldc + x] = c0 + sum over t < depth of a[r * a_row + t * a_step] * b[t * ldb + x],
// c0 being c's value times rescale[r], or 0 when rescale is null. The R x C accumulators
// stay in registers (16 of them at most: enough independent sums to hide the latency of
// the multiply-adds); each vector of b is loaded once for the R rows, each value of a
// broadcast once for the C vectors, which keeps the loads under the multiply-adds.
template <int L, int R, int C>
PHX_INLINE void tile(const float* a, int64_t a_row, int64_t a_step, const float* b, int64_t ldb,
                     int64_t depth, const float* rescale, float* c, int64_t ldc) {
  using V = Vec<L>;
  V acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < C; ++x) {
      V v{};
      if (rescale != nullptr) load(v, c + r * ldc + x * L);
      acc[r][x] = rescale != nullptr ? v * rescale[r] : v;
    }
  for (int64_t t = 0; t < depth; ++t) {
    V bv[C];
    for (int x = 0; x < C; ++x) load(bv[x], b + t * ldb + x * L);
    for (int r = 0; r < R; ++r) {
      const float w = a[r * a_row + t * a_step];
      for (int x = 0; x < C; ++x) acc[r][x] += w * bv[x];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < C; ++x) store(c + r * ldc + x * L, acc[r][x]);
}

// Columns [x0, x0 + C * L) of product's rows, in tiles of R rows, then one row at a time.
template <int L, int R, int C>
PHX_INLINE void strip(const float* a, int64_t rows, int64_t a_row, int64_t a_step, const float* b,
                      int64_t ldb, int64_t depth, const float* rescale, float* c, int64_t ldc,
                      int64_t x0) {
  int64_t r = 0;
  for (; r + R <= rows; r += R)
    tile<L, R, C>(a + r * a_row, a_row, a_step, b + x0, ldb, depth,
                  rescale != nullptr ? rescale + r : nullptr, c + r * ldc + x0, ldc);
  for (; r < rows; ++r)
    tile<L, 1, C>(a + r * a_row, a_row, a_step, b + x0, ldb, depth,
                  rescale != nullptr ? rescale + r : nullptr, c + r * ldc + x0, ldc);
}

// c = c0 + a b for rows x n of c (rows ldc apart), with a(r, t) = a[r * a_row + t * a_step]
// (t < depth), b depth x n (rows ldb apart) and c0 as in tile: strips of C vectors, then of
// one, and the last n % L columns one at a time.
template <int L, int R, int C>
PHX_INLINE void product(const float* a, int64_t rows, int64_t a_row, int64_t a_step, const float* b,
                        int64_t ldb, int64_t depth, int64_t n, const float* rescale, float* c,
                        int64_t ldc) {
  int64_t x0 = 0;
  for (; x0 + C * L <= n; x0 += C * L)
    strip<L, R, C>(a, rows, a_row, a_step, b, ldb, depth, rescale, c, ldc, x0);
  for (; x0 + L <= n; x0 += L)
    strip<L, R, 1>(a, rows, a_row, a_step, b, ldb, depth, rescale, c, ldc, x0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t x = x0; x < n; ++x) {
      float sum = rescale != nullptr ? c[r * ldc + x] * rescale[r] : 0.0f;
      for (int64_t t = 0; t < depth; ++t) sum += a[r * a_row + t * a_step] * b[t * ldb + x];
      c[r * ldc + x] = sum;
    }
}

// e^x for the x <= 0 of a softmax (scores less their maximum): within ~2 ulp down to
// e^-87, 0 below (and for -inf), NaN stays NaN. exp_f32's reduction and series, without
// what x > 0 or a subnormal result needs (a second clamp, 2^n in two factors): with
// exp_f32 the exponentials took a fifth of the kernel's time, and this form has about
// half its instructions. A weight below e^-87 next to the maximum's 1 is far below an
// ulp of their sum.
PHX_INLINE float exp_nonpositive_f32(float x) {
  const float xc = x < -87.0f ? -87.0f : x;  // false for NaN: it passes through
  // n = round(x / ln2) in [-126, 0]: adding 1.5 * 2^23 rounds to an integer, which the low
  // bits hold.
  const float magic = 12582912.0f;
  const float t = xc * 1.44269504088896341f + magic;
  const float n = t - magic;
  const int32_t ni = static_cast<int32_t>(std::bit_cast<uint32_t>(t) - 0x4B400000u);
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;  // x - n ln2
  const float p = exp_reduced_f32(r);
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(ni + 127) << 23);  // 2^n
  return x < -87.0f ? 0.0f : p * scale;
}

// The online softmax step of one key block. s holds its scores, a row of kQueryBlock per
// key (keys rows); query i sees the keys [lo[i], hi[i]] of the block (none when lo > hi),
// and masked is false when every query sees every key. The scores become exp(s - m_new),
// 0 where hidden, m_new being the running maximum m raised by this block; rescale[i] =
// exp(m_old - m_new) multiplies the sum l here, and the outputs in the next product,
// before this block's share is added. Every inner loop runs across the queries: the
// compiler vectorizes it.
PHX_INLINE void online_softmax(float* s, int64_t keys, const int32_t* lo, const int32_t* hi,
                               bool masked, float* m, float* l, float* rescale) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  if (masked)
    for (int32_t j = 0; j < keys; ++j)
      for (int64_t i = 0; i < kQueryBlock; ++i) {
        float& x = s[j * kQueryBlock + i];
        x = j < lo[i] || j > hi[i] ? kMinusInf : x;
      }
  // Unlike max_nan this may skip a NaN score: the NaN still reaches the output through
  // exp(NaN - m), and this form vectorizes.
  float top[kQueryBlock];
  std::copy(m, m + kQueryBlock, top);
  for (int64_t j = 0; j < keys; ++j)
    for (int64_t i = 0; i < kQueryBlock; ++i) {
      const float x = s[j * kQueryBlock + i];
      top[i] = x > top[i] ? x : top[i];
    }
  // A query that has seen no key yet subtracts 0 instead of -inf: its hidden scores give
  // exp(-inf) = 0 rather than NaN, and so does its rescaling of l = o = 0.
  float shift[kQueryBlock], sum[kQueryBlock] = {};
  for (int64_t i = 0; i < kQueryBlock; ++i) {
    shift[i] = top[i] == kMinusInf ? 0.0f : top[i];
    rescale[i] = exp_nonpositive_f32(m[i] - shift[i]);
    m[i] = top[i];
  }
  for (int64_t j = 0; j < keys; ++j)
    for (int64_t i = 0; i < kQueryBlock; ++i) {
      float& x = s[j * kQueryBlock + i];
      x = exp_nonpositive_f32(x - shift[i]);
      sum[i] += x;
    }
  for (int64_t i = 0; i < kQueryBlock; ++i) l[i] = l[i] * rescale[i] + sum[i];
}

// ---- the iteration space ----

struct Geometry {
  int64_t batch, heads, kv_heads, sq, skv, d, dv;
  float scale;
  phx_attention_mask mask;
  int64_t window;
  phx_dtype dtype;
};

// The keys [first, last] that query i sees; empty when first > last.
struct KeyRange {
  int64_t first;
  int64_t last;
};

// Positions are aligned at the end: query i is at i + Skv - Sq. Both ends grow with i,
// which is what lets a query block bound its keys by its first and last rows.
KeyRange visible_keys(const Geometry& g, int64_t i) {
  const int64_t position = i + g.skv - g.sq;
  KeyRange r{0, g.skv - 1};
  if (g.mask != PHX_ATTENTION_MASK_NONE) r.last = std::min(r.last, position);
  if (g.mask == PHX_ATTENTION_MASK_SLIDING_WINDOW)
    r.first = std::max<int64_t>(0, position - g.window + 1);
  return r;
}

// An f32 view of n contiguous elements: the data itself for f32, else widened into buf.
const float* as_f32(phx_dtype dtype, const void* src, int64_t n, float* buf) {
  if (dtype == PHX_DTYPE_F32) return static_cast<const float*>(src);
  to_f32(dtype, src, buf, n);
  return buf;
}

// One task's buffers, allocated once per chunk of tasks.
struct Scratch {
  explicit Scratch(const Geometry& g)
      : q(static_cast<size_t>(kQueryBlock * g.d)),
        k(static_cast<size_t>(kKeyBlock * g.d)),
        qt(static_cast<size_t>(g.d * kQueryBlock)),
        v(static_cast<size_t>(kKeyBlock * g.dv)),
        s(static_cast<size_t>(kQueryBlock * kKeyBlock)),
        o(static_cast<size_t>(kQueryBlock * g.dv)) {}
  std::vector<float> q;        // the query block, 16-bit dtypes only
  std::vector<float> k;        // the key block, 16-bit dtypes only
  std::vector<float> qt;       // the query block transposed and scaled: d x kQueryBlock
  std::vector<float> v;        // the value block, 16-bit dtypes only
  std::vector<float> s;        // scores, then probabilities: kKeyBlock x kQueryBlock
  std::vector<float> o;        // the unnormalized outputs: kQueryBlock x dv
  float m[kQueryBlock];        // running maximum of each query's scaled scores
  float l[kQueryBlock];        // running sum of each query's exp(s - m)
  float rescale[kQueryBlock];  // exp(m_old - m_new) of the current key block
  int32_t lo[kQueryBlock];     // the keys of the current block each query sees: [lo, hi]
  int32_t hi[kQueryBlock];
};

// Queries [i0, i0 + rows) of head h of batch b, with vectors of L floats and product
// tiles of R x C vectors.
template <int L, int R, int C>
PHX_INLINE void query_block(const Geometry& g, const HostTensor& q, const HostTensor& k,
                            const HostTensor& v, const HostTensor& out, int64_t b, int64_t h,
                            int64_t i0, int64_t rows, Scratch& w) {
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(g.dtype));
  const int64_t kv_head = b * g.kv_heads + h / (g.heads / g.kv_heads);
  const int64_t head = b * g.heads + h;
  const char* k_head = static_cast<const char*>(k.data) + kv_head * g.skv * g.d * bytes;
  const char* v_head = static_cast<const char*>(v.data) + kv_head * g.skv * g.dv * bytes;
  const float* qb =
      as_f32(g.dtype, static_cast<const char*>(q.data) + (head * g.sq + i0) * g.d * bytes,
             rows * g.d, w.q.data());
  // Queries past `rows` are zeros: their scores are 0, finite, and never read out.
  for (int64_t p = 0; p < g.d; ++p)
    for (int64_t i = 0; i < kQueryBlock; ++i)
      w.qt[p * kQueryBlock + i] = i < rows ? qb[i * g.d + p] * g.scale : 0.0f;
  std::fill(w.o.begin(), w.o.begin() + rows * g.dv, 0.0f);
  std::fill(w.m, w.m + kQueryBlock, -std::numeric_limits<float>::infinity());
  std::fill(w.l, w.l + kQueryBlock, 0.0f);

  const int64_t first = visible_keys(g, i0).first;
  const int64_t last = visible_keys(g, i0 + rows - 1).last;
  for (int64_t j0 = first - first % kKeyBlock; j0 <= last; j0 += kKeyBlock) {
    const int64_t keys = std::min(kKeyBlock, g.skv - j0);
    const float* kb = as_f32(g.dtype, k_head + j0 * g.d * bytes, keys * g.d, w.k.data());
    const float* vb = as_f32(g.dtype, v_head + j0 * g.dv * bytes, keys * g.dv, w.v.data());
    // s[j][i] = k_j . (scale q_i).
    product<L, R, C>(kb, keys, g.d, 1, w.qt.data(), kQueryBlock, g.d, kQueryBlock, nullptr,
                     w.s.data(), kQueryBlock);
    // The keys of this block that each query sees, relative to j0, clamped to [-1, keys].
    bool masked = false;
    for (int64_t i = 0; i < kQueryBlock; ++i) {
      const KeyRange seen = i < rows ? visible_keys(g, i0 + i) : KeyRange{j0, j0 + keys - 1};
      w.lo[i] = static_cast<int32_t>(std::min(std::max(seen.first, j0), j0 + keys) - j0);
      w.hi[i] = static_cast<int32_t>(std::max(std::min(seen.last, j0 + keys - 1), j0 - 1) - j0);
      masked |= w.lo[i] > 0 || w.hi[i] < keys - 1;
    }
    online_softmax(w.s.data(), keys, w.lo, w.hi, masked, w.m, w.l, w.rescale);
    // o_i = o_i rescale_i + sum over j of s[j][i] v_j.
    product<L, R, C>(w.s.data(), rows, 1, kQueryBlock, vb, g.dv, keys, g.dv, w.rescale, w.o.data(),
                     g.dv);
  }

  for (int64_t r = 0; r < rows; ++r) {
    float* o = w.o.data() + r * g.dv;
    // l is 0 only for a query that saw no key: o is still 0, the documented output.
    const float inverse = w.l[r] != 0.0f ? 1.0f / w.l[r] : 0.0f;
    for (int64_t c = 0; c < g.dv; ++c) o[c] *= inverse;
  }
  from_f32(g.dtype, w.o.data(), static_cast<char*>(out.data) + (head * g.sq + i0) * g.dv * bytes,
           rows * g.dv);
}

// query_block compiled for each instruction set. R x C: 16 accumulators of the 32 AVX-512
// registers; 8 of the 16 AVX2 or SSE ones.
using QueryBlockFn = void (*)(const Geometry&, const HostTensor&, const HostTensor&,
                              const HostTensor&, const HostTensor&, int64_t, int64_t, int64_t,
                              int64_t, Scratch&);

void query_block_generic(const Geometry& g, const HostTensor& q, const HostTensor& k,
                         const HostTensor& v, const HostTensor& out, int64_t b, int64_t h,
                         int64_t i0, int64_t rows, Scratch& w) {
  query_block<4, 4, 2>(g, q, k, v, out, b, h, i0, rows, w);
}

#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void query_block_avx2(const Geometry& g, const HostTensor& q,
                                                  const HostTensor& k, const HostTensor& v,
                                                  const HostTensor& out, int64_t b, int64_t h,
                                                  int64_t i0, int64_t rows, Scratch& w) {
  query_block<8, 4, 2>(g, q, k, v, out, b, h, i0, rows, w);
}

[[gnu::target("avx512f")]] void query_block_avx512(const Geometry& g, const HostTensor& q,
                                                   const HostTensor& k, const HostTensor& v,
                                                   const HostTensor& out, int64_t b, int64_t h,
                                                   int64_t i0, int64_t rows, Scratch& w) {
  query_block<16, 4, 4>(g, q, k, v, out, b, h, i0, rows, w);
}
#endif

QueryBlockFn query_block_for(std::string_view isa) {
#if defined(__x86_64__)
  if (isa.starts_with("avx512")) return query_block_avx512;
  if (isa == "avx2") return query_block_avx2;
#endif
  return query_block_generic;
}

}  // namespace

void run_attention(const phx_attention_params& params, const HostTensor& q, const HostTensor& k,
                   const HostTensor& v, const HostTensor& out, ThreadPool& pool) {
  Geometry g{};
  g.batch = q.shape[0];
  g.heads = q.shape[1];
  g.kv_heads = k.shape[1];
  g.sq = q.shape[2];
  g.skv = k.shape[2];
  g.d = q.shape[3];
  g.dv = v.shape[3];
  g.scale = params.scale != 0.0f ? params.scale
                                 : static_cast<float>(1.0 / std::sqrt(static_cast<double>(g.d)));
  g.mask = params.mask;
  g.window = params.window;
  g.dtype = q.dtype;

  const QueryBlockFn run_query_block = query_block_for(gemm_isa());
  const int64_t query_blocks = (g.sq + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = g.batch * g.heads * query_blocks;
  const int64_t work_per_task = std::min(kQueryBlock, g.sq) * g.skv * (g.d + g.dv);
  parallel_for(pool, tasks, work_per_task, [&](int64_t begin, int64_t end) {
    Scratch scratch(g);  // its std::bad_alloc reaches the caller through the pool
    for (int64_t t = begin; t < end; ++t) {
      const int64_t qb = t % query_blocks, bh = t / query_blocks;
      const int64_t i0 = qb * kQueryBlock;
      run_query_block(g, q, k, v, out, bh / g.heads, bh % g.heads, i0,
                      std::min(kQueryBlock, g.sq - i0), scratch);
    }
  });
}

}  // namespace phx::kernels::ops
