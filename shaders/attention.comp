// attention, flash style: a workgroup per (batch, head, block of 64 queries), one query
// per invocation. Keys and values stream in blocks of KEY_BLOCK that the workgroup stages
// in shared memory as f32 (16-bit inputs are widened once, on staging), with an online
// softmax: the running maximum m and sum l rescale the f32 accumulator whenever m grows, so
// the Sq x Skv scores are never stored and memory stays O(sequence).
//
// Per-invocation state (the scaled query, the accumulator, a block's scores) is held in
// arrays of vec4 whose sizes and loops are compile-time constants once specialized, and the
// loops over them are unrolled: a CPU device (lavapipe) then keeps them in registers (or
// its stack) and reads each shared value at a constant offset, the same for every lane,
// instead of indexing a per-lane array. vec4 also gives each dot product four independent
// sums. Head sizes that are not multiples of 4 are padded with zeros.
//
// Defines: X_F32, X_F16 or X_BF16 (q, k, v and out alike). Specialization constants:
// 0 HEAD_DIM (D), 1 VALUE_DIM (Dv), both at most 256, 2 KEY_BLOCK, chosen by the host so
// that the staged blocks fit the device's shared memory (ops/attention.cpp).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "dtype.glsl"

#define QUERY_BLOCK 64u
layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint HEAD_DIM = 64u;
layout(constant_id = 1) const uint VALUE_DIM = 64u;
layout(constant_id = 2) const uint KEY_BLOCK = 16u;
layout(constant_id = 3) const uint INVOCATIONS = 16u;  // QUERY_BLOCK / ROWS
const uint ROWS = QUERY_BLOCK / INVOCATIONS;            // queries per invocation
const uint D4 = (HEAD_DIM + 3u) / 4u;
const uint DV4 = (VALUE_DIM + 3u) / 4u;

layout(set = 0, binding = 0) readonly buffer Q { X_T q[]; };
layout(set = 0, binding = 1) readonly buffer K { X_T k[]; };
layout(set = 0, binding = 2) readonly buffer V { X_T v[]; };
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

shared vec4 k_block[KEY_BLOCK * D4];            // [key][d / 4]
shared vec4 v_block[KEY_BLOCK * DV4];           // [key][dv / 4]
shared float scores[KEY_BLOCK * QUERY_BLOCK];  // [key][query of the block]

// The keys query i sees: [lo, hi], empty when hi < lo. Positions are aligned at the end:
// query i is at position i + Skv - Sq.
ivec2 key_range(uint i) {
  const int pos = int(i) + int(p.skv) - int(p.sq);
  const int hi = p.mask == 0u ? int(p.skv) - 1 : min(int(p.skv) - 1, pos);
  const int lo = p.mask == 2u ? max(0, pos - int(p.window) + 1) : 0;
  return ivec2(lo, hi);
}

// Elements [col, col + 4) of the row at `at` of `width`, zeros past its end.
#define LOAD4(buf, at, col, width)                                  \
  vec4(X_LOAD(buf[(at) + (col)]),                                   \
       (col) + 1u < (width) ? X_LOAD(buf[(at) + (col) + 1u]) : 0.0, \
       (col) + 2u < (width) ? X_LOAD(buf[(at) + (col) + 2u]) : 0.0, \
       (col) + 3u < (width) ? X_LOAD(buf[(at) + (col) + 3u]) : 0.0)

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint head = gl_WorkGroupID.y;
  const uint batch = gl_WorkGroupID.z;
  const uint first_query = gl_WorkGroupID.x * QUERY_BLOCK;
  const uint kv_head = head / (p.heads / p.kv_heads);
  const uint k_at = (batch * p.kv_heads + kv_head) * p.skv * HEAD_DIM;
  const uint v_at = (batch * p.kv_heads + kv_head) * p.skv * VALUE_DIM;
  const float neg_inf = uintBitsToFloat(0xFF800000u);

  // Row r of this invocation is query first_query + lid + r * INVOCATIONS. Past the end it
  // computes the last query (the barriers need every invocation) and stores nothing.
  vec4 qv[ROWS * D4];
  vec4 acc[ROWS * DV4];
  float m[ROWS];  // running maximum of the row's scores
  float l[ROWS];  // running sum of exp(score - m)
  ivec2 mine[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint qi = min(first_query + lid + r * INVOCATIONS, p.sq - 1u);
    const uint q_at = ((batch * p.heads + head) * p.sq + qi) * HEAD_DIM;
    [[unroll]] for (uint c = 0u; c < D4; ++c) {
      qv[r * D4 + c] = LOAD4(q, q_at, 4u * c, HEAD_DIM) * p.scale;
    }
    [[unroll]] for (uint c = 0u; c < DV4; ++c) acc[r * DV4 + c] = vec4(0.0);
    m[r] = neg_inf;
    l[r] = 0.0;
    mine[r] = key_range(qi);
  }

  // The workgroup walks the union of its queries' ranges (both ends grow with the query),
  // which skips the key blocks that causal and window masks hide from all of them; each
  // query masks the keys outside its own range.
  const int lo = key_range(first_query).x;
  const int hi = key_range(min(first_query + QUERY_BLOCK, p.sq) - 1u).y;
  for (int j0 = lo; j0 <= hi; j0 += int(KEY_BLOCK)) {
    // Keys past Skv are staged as zeros: masked, but a zero value keeps 0 * v finite.
    barrier();  // the previous block has been read
    for (uint e = lid; e < KEY_BLOCK * D4; e += INVOCATIONS) {
      const uint j = uint(j0) + e / D4;
      k_block[e] = j < p.skv ? LOAD4(k, k_at + j * HEAD_DIM, 4u * (e % D4), HEAD_DIM) : vec4(0.0);
    }
    for (uint e = lid; e < KEY_BLOCK * DV4; e += INVOCATIONS) {
      const uint j = uint(j0) + e / DV4;
      v_block[e] =
          j < p.skv ? LOAD4(v, v_at + j * VALUE_DIM, 4u * (e % DV4), VALUE_DIM) : vec4(0.0);
    }
    barrier();

    float block_max[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) block_max[r] = neg_inf;
    for (uint t = 0u; t < KEY_BLOCK; ++t) {
      vec4 dot4[ROWS];
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) dot4[r] = vec4(0.0);
      [[unroll]] for (uint c = 0u; c < D4; ++c) {
        const vec4 kc = k_block[t * D4 + c];  // one load for every row
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) dot4[r] = fma(qv[r * D4 + c], kc, dot4[r]);
      }
      const int j = j0 + int(t);
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        const float score = j >= mine[r].x && j <= mine[r].y
                                ? (dot4[r].x + dot4[r].y) + (dot4[r].z + dot4[r].w)
                                : neg_inf;
        scores[t * QUERY_BLOCK + lid + r * INVOCATIONS] = score;
        block_max[r] = max(block_max[r], score);
      }
    }
    float m_new[ROWS];
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
      m_new[r] = max(m[r], block_max[r]);
      // exp(m - m_new) is 0 on the row's first keys; a row that has seen no key yet keeps
      // its zeros (exp(-inf - -inf) would be NaN).
      const float rescale = m_new[r] != neg_inf ? exp(m[r] - m_new[r]) : 1.0;
      l[r] *= rescale;
      [[unroll]] for (uint c = 0u; c < DV4; ++c) acc[r * DV4 + c] *= rescale;
      m[r] = m_new[r];
    }
    for (uint t = 0u; t < KEY_BLOCK; ++t) {
      float weight[ROWS];
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        // 0 for a masked key, and for every key of a row that has seen none.
        weight[r] = m_new[r] != neg_inf
                        ? exp(scores[t * QUERY_BLOCK + lid + r * INVOCATIONS] - m_new[r])
                        : 0.0;
        l[r] += weight[r];
      }
      [[unroll]] for (uint c = 0u; c < DV4; ++c) {
        const vec4 vc = v_block[t * DV4 + c];  // one load for every row
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          acc[r * DV4 + c] = fma(vec4(weight[r]), vc, acc[r * DV4 + c]);
        }
      }
    }
  }

  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint query = first_query + lid + r * INVOCATIONS;
    if (query >= p.sq) break;
    // A query that sees no key at all (Sq > Skv under a causal mask) gets zeros.
    const float inv = l[r] > 0.0 ? 1.0 / l[r] : 0.0;
    const uint o_at = ((batch * p.heads + head) * p.sq + query) * VALUE_DIM;
    [[unroll]] for (uint c = 0u; c < DV4; ++c) {
      const vec4 x = acc[r * DV4 + c] * inv;
      [[unroll]] for (uint e = 0u; e < 4u; ++e) {
        if (4u * c + e < VALUE_DIM) o[o_at + 4u * c + e] = X_STORE(x[e]);
      }
    }
  }
}
