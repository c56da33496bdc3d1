// attention: out = softmax(scale * q k^T + mask) v for every (batch, head), flash style.
//
// The Sq x Skv score matrix is never formed. A task takes a block of kQueryBlock queries
// of one (batch, head) and streams the keys and values in blocks of kKeyBlock. Each query
// row keeps a running maximum m of its scores, a running sum l of exp(s - m) and an
// unnormalized output o; when a key block raises m, l and o are rescaled by
// exp(m_old - m_new), so that at the end o / l is the softmax-weighted sum. Memory is a few
// blocks per task, whatever the sequence lengths. Key blocks that the mask hides from the
// whole query block are never visited, which halves a causal attention's work.
//
// Everything is computed in f32; 16-bit operands are widened block by block and the output
// rounded once. A query that sees no key (causal with Sq > Skv: its position is negative)
// has an empty softmax; its output is defined as zeros.
#include <atomic>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "ops_common.h"

namespace phx::kernels::ops {
namespace {

// 64 x 64 f32 scores are 16 KiB: with a key and a value block of D = 64 they stay in L1.
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyBlock = 64;

// ---- vector building blocks (f32, contiguous) ----
//
// The two products keep their accumulators in registers: a few rows of a fixed number of
// columns, loaded once and stored once, enough independent sums to hide the latency of
// the multiply-adds. They are written with the compiler's vector type, 16 floats as one
// value (one AVX-512 register, two AVX2 ones): unlike a local array, it stays in
// registers reliably.
typedef float Vec16 __attribute__((vector_size(64)));
constexpr int64_t kVec = 16;

// Unaligned loads and stores through a local copy: an accumulator whose address is never
// taken is what the compiler keeps in a register.
PHX_INLINE void load16(const float* src, Vec16& dst) {
  Vec16 v;
  std::memcpy(&v, src, sizeof v);
  dst = v;
}
PHX_INLINE void store16(float* dst, const Vec16& src) {
  const Vec16 v = src;
  std::memcpy(dst, &v, sizeof v);
}

// Scores of R query rows (q, d apart) against every column of a transposed key block kt
// (d x kKeyBlock) into s (rows kKeyBlock apart). The inner loop runs along the keys, so
// that it vectorizes without a horizontal sum per dot product; the R rows share each load
// of kt.
template <int R>
PHX_INLINE void scores_of_rows(const float* q, int64_t d, const float* kt, float* s) {
  constexpr int kParts = kKeyBlock / kVec;
  Vec16 acc[R][kParts] = {};
  for (int64_t p = 0; p < d; ++p) {
    Vec16 k[kParts];
    for (int t = 0; t < kParts; ++t) load16(kt + p * kKeyBlock + t * kVec, k[t]);
    for (int i = 0; i < R; ++i) {
      const float w = q[i * d + p];
      for (int t = 0; t < kParts; ++t) acc[i][t] += w * k[t];
    }
  }
  for (int i = 0; i < R; ++i)
    for (int t = 0; t < kParts; ++t) store16(s + i * kKeyBlock + t * kVec, acc[i][t]);
}

// s[r * kKeyBlock + j] = q_r . kt[:, j] for rows r < rows, every column j of the block.
PHX_CLONES void block_scores(const float* q, int64_t rows, int64_t d, const float* kt, float* s) {
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) scores_of_rows<2>(q + r * d, d, kt, s + r * kKeyBlock);
  if (r < rows) scores_of_rows<1>(q + r * d, d, kt, s + r * kKeyBlock);
}

// o[i] += sum over j < keys of p[i * kKeyBlock + j] * v[j] for R output rows (dv apart),
// 32 columns of each; the R rows share each load of v.
template <int R>
PHX_INLINE void add_weighted_strip(const float* p, const float* v, int64_t keys, int64_t dv,
                                   float* o) {
  Vec16 acc[R][2];
  for (int i = 0; i < R; ++i) {
    load16(o + i * dv, acc[i][0]);
    load16(o + i * dv + kVec, acc[i][1]);
  }
  for (int64_t j = 0; j < keys; ++j) {
    Vec16 x[2];
    load16(v + j * dv, x[0]);
    load16(v + j * dv + kVec, x[1]);
    for (int i = 0; i < R; ++i) {
      const float w = p[i * kKeyBlock + j];
      acc[i][0] += w * x[0];
      acc[i][1] += w * x[1];
    }
  }
  for (int i = 0; i < R; ++i) {
    store16(o + i * dv, acc[i][0]);
    store16(o + i * dv + kVec, acc[i][1]);
  }
}

// o[r] += sum over j < keys of p[r * kKeyBlock + j] * v[j]: the probability-weighted value
// rows (dv wide) added to each output row r < rows, in strips of 32 columns; the last
// dv % 32 columns go through a plain loop.
PHX_CLONES void add_weighted_values(const float* p, int64_t rows, const float* v, int64_t keys,
                                    int64_t dv, float* o) {
  constexpr int64_t kCols = 2 * kVec;
  int64_t c0 = 0;
  for (; c0 + kCols <= dv; c0 += kCols) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4)
      add_weighted_strip<4>(p + r * kKeyBlock, v + c0, keys, dv, o + r * dv + c0);
    for (; r < rows; ++r)
      add_weighted_strip<1>(p + r * kKeyBlock, v + c0, keys, dv, o + r * dv + c0);
  }
  for (int64_t r = 0; c0 < dv && r < rows; ++r)
    for (int64_t j = 0; j < keys; ++j)
      for (int64_t c = c0; c < dv; ++c) o[r * dv + c] += p[r * kKeyBlock + j] * v[j * dv + c];
}

// x *= scale; returns the largest result, or -inf. Unlike max_f32 it may skip a NaN:
// the NaN still reaches the output through exp(NaN - max), and this form vectorizes.
PHX_INLINE float scale_and_max(float* x, float scale, int64_t n) {
  float acc[kLanes];
  std::fill(acc, acc + kLanes, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j) {
      x[i + j] *= scale;
      acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    }
  for (; i < n; ++i) {
    x[i] *= scale;
    acc[0] = x[i] > acc[0] ? x[i] : acc[0];
  }
  return *std::max_element(acc, acc + kLanes);
}

// The online softmax step of one key block. Row r sees the keys [lo[r], hi[r]] of it
// (none when lo > hi): its scores there become exp(scale * s - m_new), the rest 0, where
// m_new is its running maximum m[r] raised by this block; its sum l[r] and outputs
// o[r * dv ..] are rescaled by exp(m[r] - m_new) before this block's share is added.
PHX_CLONES void online_softmax(float* s, const int64_t* lo, const int64_t* hi, int64_t rows,
                               int64_t keys, float scale, float* m, float* l, float* o,
                               int64_t dv) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * kKeyBlock;
    if (lo[r] > hi[r]) {
      std::fill(row, row + keys, 0.0f);
      continue;
    }
    float* seen = row + lo[r];
    const int64_t n = hi[r] - lo[r] + 1;
    const float m_new = max_nan(m[r], scale_and_max(seen, scale, n));
    const float rescale = exp_f32(m[r] - m_new);  // 0 on the row's first block
    map_padded(seen, seen, n, [m_new](float x) { return exp_f32(x - m_new); });
    m[r] = m_new;
    l[r] = l[r] * rescale + sum_f32(seen, n);
    std::fill(row, seen, 0.0f);
    std::fill(seen + n, row + keys, 0.0f);
    if (rescale != 1.0f)
      for (int64_t c = 0; c < dv; ++c) o[r * dv + c] *= rescale;
  }
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
        kt(static_cast<size_t>(kKeyBlock * g.d)),
        v(static_cast<size_t>(kKeyBlock * g.dv)),
        s(static_cast<size_t>(kQueryBlock * kKeyBlock)),
        o(static_cast<size_t>(kQueryBlock * g.dv)) {}
  std::vector<float> q;     // the query block, 16-bit dtypes only
  std::vector<float> k;     // the key block, 16-bit dtypes only
  std::vector<float> kt;    // the key block transposed: d x kKeyBlock
  std::vector<float> v;     // the value block, 16-bit dtypes only
  std::vector<float> s;     // scores, then probabilities: kQueryBlock x kKeyBlock
  std::vector<float> o;     // the unnormalized outputs: kQueryBlock x dv
  float m[kQueryBlock];     // running maximum of each row's scaled scores
  float l[kQueryBlock];     // running sum of each row's exp(s - m)
  int64_t lo[kQueryBlock];  // the keys of the current block each row sees: [lo, hi]
  int64_t hi[kQueryBlock];
};

// Queries [i0, i0 + rows) of head h of batch b.
void query_block(const Geometry& g, const HostTensor& q, const HostTensor& k, const HostTensor& v,
                 const HostTensor& out, int64_t b, int64_t h, int64_t i0, int64_t rows,
                 Scratch& w) {
  const int64_t bytes = static_cast<int64_t>(dtype_bytes(g.dtype));
  const int64_t kv_head = b * g.kv_heads + h / (g.heads / g.kv_heads);
  const int64_t head = b * g.heads + h;
  const char* k_head = static_cast<const char*>(k.data) + kv_head * g.skv * g.d * bytes;
  const char* v_head = static_cast<const char*>(v.data) + kv_head * g.skv * g.dv * bytes;
  const float* qb =
      as_f32(g.dtype, static_cast<const char*>(q.data) + (head * g.sq + i0) * g.d * bytes,
             rows * g.d, w.q.data());
  std::fill(w.o.begin(), w.o.begin() + rows * g.dv, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    w.m[r] = -std::numeric_limits<float>::infinity();
    w.l[r] = 0.0f;
  }

  const int64_t first = visible_keys(g, i0).first;
  const int64_t last = visible_keys(g, i0 + rows - 1).last;
  for (int64_t j0 = first - first % kKeyBlock; j0 <= last; j0 += kKeyBlock) {
    const int64_t keys = std::min(kKeyBlock, g.skv - j0);
    const float* kb = as_f32(g.dtype, k_head + j0 * g.d * bytes, keys * g.d, w.k.data());
    for (int64_t j = 0; j < keys; ++j)
      for (int64_t p = 0; p < g.d; ++p) w.kt[p * kKeyBlock + j] = kb[j * g.d + p];
    const float* vb = as_f32(g.dtype, v_head + j0 * g.dv * bytes, keys * g.dv, w.v.data());
    block_scores(qb, rows, g.d, w.kt.data(), w.s.data());
    // The keys of this block that each row sees, relative to j0. The score columns past
    // `keys` are stale and never in range.
    for (int64_t r = 0; r < rows; ++r) {
      const KeyRange seen = visible_keys(g, i0 + r);
      w.lo[r] = std::max(seen.first, j0) - j0;
      w.hi[r] = std::min(seen.last, j0 + keys - 1) - j0;
    }
    online_softmax(w.s.data(), w.lo, w.hi, rows, keys, g.scale, w.m, w.l, w.o.data(), g.dv);
    add_weighted_values(w.s.data(), rows, vb, keys, g.dv, w.o.data());
  }

  for (int64_t r = 0; r < rows; ++r) {
    float* o = w.o.data() + r * g.dv;
    // l is 0 only for a row that saw no key: o is still 0, the documented output.
    const float inverse = w.l[r] != 0.0f ? 1.0f / w.l[r] : 0.0f;
    for (int64_t c = 0; c < g.dv; ++c) o[c] *= inverse;
  }
  from_f32(g.dtype, w.o.data(), static_cast<char*>(out.data) + (head * g.sq + i0) * g.dv * bytes,
           rows * g.dv);
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

  const int64_t query_blocks = (g.sq + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = g.batch * g.heads * query_blocks;
  const int64_t work_per_task = std::min(kQueryBlock, g.sq) * g.skv * (g.d + g.dv);
  // A task must not throw (ThreadPool::run): a failed allocation is reported after.
  std::atomic<bool> out_of_memory{false};
  parallel_for(pool, tasks, work_per_task, [&](int64_t begin, int64_t end) {
    try {
      Scratch scratch(g);
      for (int64_t t = begin; t < end; ++t) {
        const int64_t qb = t % query_blocks, bh = t / query_blocks;
        const int64_t i0 = qb * kQueryBlock;
        query_block(g, q, k, v, out, bh / g.heads, bh % g.heads, i0,
                    std::min(kQueryBlock, g.sq - i0), scratch);
      }
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
  });
  if (out_of_memory) throw std::bad_alloc();
}

}  // namespace phx::kernels::ops
