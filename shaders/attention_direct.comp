// attention for CPU devices (lavapipe), flash style with no shared memory and no barriers:
// a workgroup is one subgroup of 8 lanes, and lane l owns ROWS consecutive queries of the
// workgroup's 8 ROWS, their scores and output accumulators in registers. What costs on
// lavapipe is what shaders/matmul_direct.comp's opening comment measures (a load at a
// non-constant offset is a loop over the lanes, so each brings 8 consecutive elements in
// one vector; subgroupShuffle is one permute; every write to an accumulator inside a loop
// is a masked store, so each takes 8 multiply-adds per write); the two products are laid
// out as that kernel's:
// - scores, S = Q K^T over a block of 8 keys: per 8 elements of the head, lane l loads its
//   rows of q and key j0 + l, and subgroupShuffle(., kk) hands every lane key j0 + kk;
//   each score s[i][kk] takes its 8 multiply-adds at once. q is loaded again per block
//   (cached) rather than held: the loop over the head is not unrolled, and an array indexed
//   in it at run time would live in memory.
// - out += P V: per 8 columns of the value, lane l loads row j0 + l of v, and
//   subgroupShuffle(., kk) hands every lane key j0 + kk's; each accumulator is rescaled by
//   the online softmax and takes its 8 keys' multiply-adds at once.
// Softmax in f32 as the shared kernel (shaders/attention.comp): a running maximum m and
// sum l per query, the accumulators rescaled by exp(m - m_new) once per block of 8 keys.
//
// ops/attention.cpp runs it only where D and Dv are multiples of 8 (every row then starts
// at a multiple of 8 elements) and picks ROWS so that ROWS Dv <= 512: the unrolled loop
// over the accumulators is 8 ROWS Dv multiply-adds, left to the driver to unroll
// (DRIVER_UNROLLS in shaders.cmake). Keys past Skv load the last key and are masked.
//
// Defines: X_F32, X_F16 or X_BF16. Specialization constants: 0 HEAD_DIM (D), 1 VALUE_DIM
// (Dv), 2 ROWS.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "dtype.glsl"

#define LANES 8u
layout(local_size_x = 8) in;
layout(constant_id = 0) const uint HEAD_DIM = 64u;
layout(constant_id = 1) const uint VALUE_DIM = 64u;
layout(constant_id = 2) const uint ROWS = 8u;  // queries per lane

// Views in which one load brings 8 elements (shaders/matmul_direct.comp).
#if defined(X_F32)
#extension GL_ARB_gpu_shader_int64 : require
#define X_VEC u64vec4
#else
#define X_VEC uvec4
#endif
layout(set = 0, binding = 0) readonly buffer Q { X_VEC q_vec[]; };
layout(set = 0, binding = 1) readonly buffer K { X_VEC k_vec[]; };
layout(set = 0, binding = 2) readonly buffer V { X_VEC v_vec[]; };
layout(set = 0, binding = 3) writeonly buffer Out { X_T o[]; };

layout(push_constant) uniform Push {
  uint heads;
  uint kv_heads;
  uint sq;
  uint skv;
  float scale;
  uint mask;  // phx_attention_mask
  uint window;
} p;

// v = the 8 elements from element `at` (a multiple of 8) of a view.
#if defined(X_F32)
#define LOAD8(view, at, v)                         \
  {                                                \
    const u64vec4 w_ = view[(at) >> 3];            \
    [[unroll]] for (uint c_ = 0u; c_ < 4u; ++c_) { \
      const uvec2 h_ = unpackUint2x32(w_[c_]);     \
      v[2u * c_] = uintBitsToFloat(h_.x);          \
      v[2u * c_ + 1u] = uintBitsToFloat(h_.y);     \
    }                                              \
  }
#else
#define LOAD8(view, at, v)                                \
  {                                                       \
    const uvec4 w_ = view[(at) >> 3];                     \
    [[unroll]] for (uint c_ = 0u; c_ < 4u; ++c_) {        \
      v[2u * c_] = X_LOAD(uint16_t(w_[c_] & 0xFFFFu));    \
      v[2u * c_ + 1u] = X_LOAD(uint16_t(w_[c_] >> 16));   \
    }                                                     \
  }
#endif

// The keys query i sees: [lo, hi], empty when hi < lo. Positions are aligned at the end:
// query i is at position i + Skv - Sq.
ivec2 key_range(uint i) {
  const int pos = int(i) + int(p.skv) - int(p.sq);
  const int hi = p.mask == 0u ? int(p.skv) - 1 : min(int(p.skv) - 1, pos);
  const int lo = p.mask == 2u ? max(0, pos - int(p.window) + 1) : 0;
  return ivec2(lo, hi);
}

void main() {
  const uint lane = gl_SubgroupInvocationID;
  const uint head = gl_WorkGroupID.y;
  const uint batch = gl_WorkGroupID.z;
  const uint first_query = gl_WorkGroupID.x * LANES * ROWS;
  const uint row0 = first_query + lane * ROWS;
  const uint kv_head = head / (p.heads / p.kv_heads);
  const uint k_at = (batch * p.kv_heads + kv_head) * p.skv * HEAD_DIM;
  const uint v_at = (batch * p.kv_heads + kv_head) * p.skv * VALUE_DIM;
  const float neg_inf = uintBitsToFloat(0xFF800000u);

  // Rows past Sq compute the last query and store nothing.
  uint q_at[ROWS];
  ivec2 mine[ROWS];
  float m[ROWS];  // running maximum of the row's scores
  float l[ROWS];  // running sum of exp(score - m)
  float acc[ROWS][VALUE_DIM];
  [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
    const uint qi = min(row0 + i, p.sq - 1u);
    q_at[i] = ((batch * p.heads + head) * p.sq + qi) * HEAD_DIM;
    mine[i] = key_range(qi);
    m[i] = neg_inf;
    l[i] = 0.0;
    [[unroll]] for (uint c = 0u; c < VALUE_DIM; ++c) acc[i][c] = 0.0;
  }

  // The union of the workgroup's ranges (both ends grow with the query): key blocks that
  // causal and window masks hide from all its queries are skipped.
  const int lo = key_range(first_query).x;
  const int hi = key_range(min(first_query + LANES * ROWS, p.sq) - 1u).y;
  for (int j0 = lo; j0 <= hi; j0 += int(LANES)) {
    const uint key = min(uint(j0) + lane, p.skv - 1u);  // the key this lane loads

    float s[ROWS][LANES];
    [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
      [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) s[i][kk] = 0.0;
    }
    [[dont_unroll]] for (uint d = 0u; d < HEAD_DIM; d += 8u) {
      float kl[8];
      LOAD8(k_vec, k_at + key * HEAD_DIM + d, kl);
      float qv[ROWS][8];
      [[unroll]] for (uint i = 0u; i < ROWS; ++i) LOAD8(q_vec, q_at[i] + d, qv[i]);
      [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) {
        float kb[8];  // key j0 + kk, elements d .. d + 7
        [[unroll]] for (uint e = 0u; e < 8u; ++e) kb[e] = subgroupShuffle(kl[e], kk);
        [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
          float t = s[i][kk];
          [[unroll]] for (uint e = 0u; e < 8u; ++e) t = fma(qv[i][e], kb[e], t);
          s[i][kk] = t;
        }
      }
    }

    // The block's weights exp(score - m_new), 0 for a masked key and for every key of a
    // row that has seen none (exp(-inf - -inf) would be NaN); exp(m - m_new) rescales.
    float w[ROWS][LANES];
    float rescale[ROWS];
    [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
      float block_max = neg_inf;
      [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) {
        const int j = j0 + int(kk);
        s[i][kk] = j >= mine[i].x && j <= mine[i].y ? s[i][kk] * p.scale : neg_inf;
        block_max = max(block_max, s[i][kk]);
      }
      const float m_new = max(m[i], block_max);
      rescale[i] = m_new != neg_inf ? exp(m[i] - m_new) : 1.0;
      float sum = 0.0;
      [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) {
        w[i][kk] = m_new != neg_inf ? exp(s[i][kk] - m_new) : 0.0;
        sum += w[i][kk];
      }
      l[i] = l[i] * rescale[i] + sum;
      m[i] = m_new;
    }

    [[unroll]] for (uint g = 0u; g < VALUE_DIM; g += 8u) {
      float vl[8];
      LOAD8(v_vec, v_at + key * VALUE_DIM + g, vl);
      [[unroll]] for (uint e = 0u; e < 8u; ++e) {
        float vb[LANES];  // column g + e of keys j0 .. j0 + 7
        [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) vb[kk] = subgroupShuffle(vl[e], kk);
        [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
          float t = acc[i][g + e] * rescale[i];
          [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) t = fma(w[i][kk], vb[kk], t);
          acc[i][g + e] = t;
        }
      }
    }
  }

  [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
    const uint query = row0 + i;
    if (query >= p.sq) break;
    // A query that sees no key at all (Sq > Skv under a causal mask) gets zeros.
    const float inv = l[i] > 0.0 ? 1.0 / l[i] : 0.0;
    const uint o_at = ((batch * p.heads + head) * p.sq + query) * VALUE_DIM;
    [[unroll]] for (uint c = 0u; c < VALUE_DIM; ++c) o[o_at + c] = X_STORE(acc[i][c] * inv);
  }
}
