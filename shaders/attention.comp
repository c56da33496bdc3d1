// attention, flash style: a workgroup per (batch, head, block of 64 queries), one query
// per invocation. Keys and values stream in blocks of KEY_BLOCK with an online softmax:
// the running maximum m and sum l rescale the f32 accumulator whenever m grows, so the
// Sq x Skv scores are never stored and memory stays O(sequence).
// Defines: X_F32, X_F16 or X_BF16 (q, k, v and out alike). Specialization constants:
// 0 HEAD_DIM (D), 1 VALUE_DIM (Dv), both at most 256 (ops/attention.cpp).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "dtype.glsl"

#define QUERY_BLOCK 64u
#define KEY_BLOCK 16u
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint HEAD_DIM = 64u;
layout(constant_id = 1) const uint VALUE_DIM = 64u;

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

// The keys query i sees: [lo, hi], empty when hi < lo. Positions are aligned at the end:
// query i is at position i + Skv - Sq.
ivec2 key_range(uint i) {
  const int pos = int(i) + int(p.skv) - int(p.sq);
  const int hi = p.mask == 0u ? int(p.skv) - 1 : min(int(p.skv) - 1, pos);
  const int lo = p.mask == 2u ? max(0, pos - int(p.window) + 1) : 0;
  return ivec2(lo, hi);
}

void main() {
  const uint head = gl_WorkGroupID.y;
  const uint batch = gl_WorkGroupID.z;
  const uint first_query = gl_WorkGroupID.x * QUERY_BLOCK;
  const uint query = first_query + gl_LocalInvocationID.x;
  const uint qi = min(query, p.sq - 1u);  // past the end: compute the last, store nothing
  const uint kv_head = head / (p.heads / p.kv_heads);
  const uint q_at = ((batch * p.heads + head) * p.sq + qi) * HEAD_DIM;
  const uint k_at = (batch * p.kv_heads + kv_head) * p.skv * HEAD_DIM;
  const uint v_at = (batch * p.kv_heads + kv_head) * p.skv * VALUE_DIM;

  float qv[HEAD_DIM];
  for (uint d = 0u; d < HEAD_DIM; ++d) qv[d] = X_LOAD(q[q_at + d]) * p.scale;
  float acc[VALUE_DIM];
  for (uint d = 0u; d < VALUE_DIM; ++d) acc[d] = 0.0;
  const float neg_inf = uintBitsToFloat(0xFF800000u);
  float m = neg_inf;
  float l = 0.0;

  // The workgroup walks the union of its queries' ranges together (uniform loads of k
  // and v); each query masks the keys outside its own range.
  const ivec2 mine = key_range(qi);
  const int lo = key_range(first_query).x;
  const int hi = key_range(min(first_query + QUERY_BLOCK, p.sq) - 1u).y;
  for (int j0 = lo; j0 <= hi; j0 += int(KEY_BLOCK)) {
    float s[KEY_BLOCK];
    float block_max = neg_inf;
    for (uint t = 0u; t < KEY_BLOCK; ++t) {
      const int j = j0 + int(t);
      s[t] = neg_inf;
      if (j < mine.x || j > mine.y) continue;
      float dot_qk = 0.0;
      const uint at = k_at + uint(j) * HEAD_DIM;
      for (uint d = 0u; d < HEAD_DIM; ++d) dot_qk = fma(qv[d], X_LOAD(k[at + d]), dot_qk);
      s[t] = dot_qk;
      block_max = max(block_max, dot_qk);
    }
    if (block_max == neg_inf) continue;  // no key of this block is seen
    const float m_new = max(m, block_max);
    const float rescale = exp(m - m_new);
    l *= rescale;
    for (uint d = 0u; d < VALUE_DIM; ++d) acc[d] *= rescale;
    for (uint t = 0u; t < KEY_BLOCK; ++t) {
      if (s[t] == neg_inf) continue;
      const float weight = exp(s[t] - m_new);
      l += weight;
      const uint at = v_at + uint(j0 + int(t)) * VALUE_DIM;
      for (uint d = 0u; d < VALUE_DIM; ++d) acc[d] = fma(weight, X_LOAD(v[at + d]), acc[d]);
    }
    m = m_new;
  }

  if (query >= p.sq) return;
  // A query that sees no key at all (Sq > Skv under a causal mask) gets zeros.
  const float inv = l > 0.0 ? 1.0 / l : 0.0;
  const uint o_at = ((batch * p.heads + head) * p.sq + query) * VALUE_DIM;
  for (uint d = 0u; d < VALUE_DIM; ++d) o[o_at + d] = X_STORE(acc[d] * inv);
}
