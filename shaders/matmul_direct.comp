// matmul for CPU devices (lavapipe): a 128 x 128 output tile per workgroup of 64
// invocations in subgroups of 8, loading a and b straight from the buffers (the CPU's
// caches do the staging; barriers would cost a thread switch).
//
// lavapipe runs a subgroup as the 8 lanes of one SIMD vector, and a buffer load whose
// address differs per lane as 8 scalar loads, each with a bounds check: loads, not
// multiply-adds, are the cost. So each invocation holds a ROWS x COLS block of f32
// accumulators, and a, whose values all lanes of a subgroup share, is loaded once per
// LANES steps of k: lane l loads a(row, k + l), and subgroupBroadcast hands each lane the
// value of step kk (a register permute). Only b is loaded at every step, one useful value
// per lane. Per LANES steps of k a subgroup does ROWS + LANES * COLS loads for
// LANES * ROWS * COLS multiply-adds.
//
// Subgroup s owns rows 16 s + i (i < 16) of the tile and lane l the columns
// 4 l + 32 g + c (g, c < 4): with B_VEC4 (f32 b, rows contiguous and 16-byte aligned) a
// lane's 4 adjacent columns are one 16-byte load instead of 4 scalar ones (measured
// 1.2-1.8x faster at N = 1024 and 2048; a barrier per 256 steps of k for cache reuse was
// slower, and 8 x 16 or 16 x 8 blocks over 128 invocations were not faster). (16 x 16 measured faster than
// 32 x 8 and 64 x 4 blocks on lavapipe: the broadcasts cost too.) The kernel needs
// 8-wide subgroups (ops/matmul.cpp chooses it only then). Every loop over a block is
// unrolled with constant bounds, so the accumulators stay SSA values (an array indexed
// at run time would live in memory, every access a gather). Rows and columns past the
// edge load the last valid one (no branch in the K loop); their results are not stored.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "matmul.glsl"

#ifndef ROWS
#define ROWS 16u
#define COLS 16u
#endif
layout(local_size_x = 8 * (128 / ROWS) * (128 / (8 * COLS))) in;

// 1: b is f32, not transposed, n and the first element of b a multiple of 4
// (ops/matmul.cpp): a lane's 4 adjacent columns are one 16-byte load.
layout(constant_id = 0) const uint B_VEC4 = 0u;
#if defined(X_F32)
layout(set = 0, binding = 1) readonly buffer B4 { vec4 b4[]; };
#endif

#define LANES 8u
#ifndef ROWS
#define ROWS 16u
#define COLS 16u
#endif
#define COL_SPAN (LANES * COLS)
#define BANDS (TILE / ROWS)
#define GROUPS (COLS / 4u)

void main() {
  const uint lane = gl_SubgroupInvocationID;
  const uint sg = gl_SubgroupID;
  const uint batch = p.batch_base + gl_WorkGroupID.z;
  const uint row0 = p.m_base + gl_WorkGroupID.y * TILE + (sg % BANDS) * ROWS;
  // Lane l owns columns 4 l + 32 g + c (g < GROUPS, c < 4) of the tile.
  const uint col0 = gl_WorkGroupID.x * TILE + (sg / BANDS) * COL_SPAN + 4u * lane;

  uint a_at[ROWS];  // a(row i, k = 0)
  const uint a_base = p.a_shift + a_batch_offset(batch);
  const uint b_base = p.b_shift + b_batch_offset(batch);
  [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
    a_at[i] = a_base + min(row0 + i, p.m_end - 1u) * p.a_rs;
  }
  uint b_at[COLS];  // b(k = 0, column j); with B_VEC4, b_at[4 g] / 4 is the group's vec4
  [[unroll]] for (uint g = 0u; g < GROUPS; ++g) {
    const uint cg = col0 + 4u * LANES * g;
    if (B_VEC4 != 0u) {
      b_at[4u * g] = b_base + min(cg, p.n - 4u);
    } else {
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        b_at[4u * g + c] = b_base + min(cg + c, p.n - 1u) * p.b_cs;
      }
    }
  }

  float acc[ROWS][COLS];
  [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
    [[unroll]] for (uint j = 0u; j < COLS; ++j) acc[i][j] = 0.0;
  }

  // Whole groups of LANES steps of k, then the rest one step at a time.
  const uint k_main = p.k - p.k % LANES;
  uint k = 0u;
  for (; k < k_main; k += LANES) {
    float av[ROWS];
    const uint a_k = (k + lane) * p.a_cs;
    [[unroll]] for (uint i = 0u; i < ROWS; ++i) av[i] = X_LOAD(a[a_at[i] + a_k]);
    [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) {
      float bv[COLS];
      const uint b_k = (k + kk) * p.b_rs;
#if defined(X_F32)
      if (B_VEC4 != 0u) {
        [[unroll]] for (uint g = 0u; g < GROUPS; ++g) {
          const vec4 v = b4[(b_at[4u * g] + b_k) >> 2];
          bv[4u * g] = v.x;
          bv[4u * g + 1u] = v.y;
          bv[4u * g + 2u] = v.z;
          bv[4u * g + 3u] = v.w;
        }
      } else
#endif
      {
        [[unroll]] for (uint j = 0u; j < COLS; ++j) bv[j] = X_LOAD(b[b_at[j] + b_k]);
      }
      [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
        const float ai = subgroupBroadcast(av[i], kk);
        [[unroll]] for (uint j = 0u; j < COLS; ++j) acc[i][j] = fma(ai, bv[j], acc[i][j]);
      }
    }
  }
  for (; k < p.k; ++k) {
    float bv[COLS];
    [[unroll]] for (uint g = 0u; g < GROUPS; ++g) {
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        const uint col = min(col0 + 4u * LANES * g + c, p.n - 1u);
        bv[4u * g + c] = X_LOAD(b[b_base + col * p.b_cs + k * p.b_rs]);
      }
    }
    [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
      const float ai = X_LOAD(a[a_at[i] + k * p.a_cs]);
      [[unroll]] for (uint j = 0u; j < COLS; ++j) acc[i][j] = fma(ai, bv[j], acc[i][j]);
    }
  }

  // Row by row, in a loop that is not unrolled (the epilogue, unrolled 256 times, would
  // multiply the compile time); the row is picked out of acc with selects, so that every
  // index into acc stays a constant.
  const uint y_base = y_batch_offset(batch);
  const uint bias_base = bias_batch_offset(batch);
  const uint rows = min(ROWS, p.m_end - min(row0, p.m_end));
  for (uint r = 0u; r < rows; ++r) {
    float v[COLS] = acc[0];
    [[unroll]] for (uint i = 1u; i < ROWS; ++i) {
      [[unroll]] for (uint j = 0u; j < COLS; ++j) v[j] = r == i ? acc[i][j] : v[j];
    }
    [[unroll]] for (uint j = 0u; j < COLS; ++j) {
      const uint col = col0 + 4u * LANES * (j / 4u) + j % 4u;
      if (col < p.n) store_output(y_base, bias_base, row0 + r, col, v[j]);
    }
  }
}
