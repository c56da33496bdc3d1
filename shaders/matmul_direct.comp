// matmul for CPU devices (lavapipe): a 128 x 128 output tile per workgroup of 8 x 8
// invocations, each holding a 16 x 16 block of f32 accumulators in registers and loading
// its a and b values straight from the buffers. On lavapipe this beats staging through
// shared memory (docs/vulkan.md, "Kernels"): the CPU's caches do the staging, and
// barriers cost a thread switch.
//
// Invocation (tx, ty) owns rows ty + 8 i and columns tx + 8 j (i, j < 16) of the tile:
// neighbouring invocations, which a CPU runs as the lanes of one SIMD vector, read
// neighbouring columns of b.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul.glsl"

layout(local_size_x = 64) in;

#define BLOCK 16u

void main() {
  const uint tx = gl_LocalInvocationID.x % 8u;
  const uint ty = gl_LocalInvocationID.x / 8u;
  const uint batch = p.batch_base + gl_WorkGroupID.z;
  const uint row0 = p.m_base + gl_WorkGroupID.y * TILE + ty;
  const uint col0 = gl_WorkGroupID.x * TILE + tx;

  // Rows and columns past the edge load the last valid one (no branch in the K loop);
  // their results are not stored.
  uint a_at[BLOCK];
  uint b_at[BLOCK];
  const uint a_base = p.a_shift + a_batch_offset(batch);
  const uint b_base = p.b_shift + b_batch_offset(batch);
  for (uint i = 0u; i < BLOCK; ++i) {
    a_at[i] = a_base + min(row0 + 8u * i, p.m_end - 1u) * p.a_rs;
    b_at[i] = b_base + min(col0 + 8u * i, p.n - 1u) * p.b_cs;
  }

  float acc[BLOCK][BLOCK];
  for (uint i = 0u; i < BLOCK; ++i) {
    for (uint j = 0u; j < BLOCK; ++j) acc[i][j] = 0.0;
  }
  for (uint kk = 0u; kk < p.k; ++kk) {
    float av[BLOCK];
    float bv[BLOCK];
    for (uint i = 0u; i < BLOCK; ++i) {
      av[i] = X_LOAD(a[a_at[i] + kk * p.a_cs]);
      bv[i] = X_LOAD(b[b_at[i] + kk * p.b_rs]);
    }
    for (uint i = 0u; i < BLOCK; ++i) {
      for (uint j = 0u; j < BLOCK; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
  }

  for (uint i = 0u; i < BLOCK; ++i) {
    const uint row = row0 + 8u * i;
    if (row >= p.m_end) break;
    for (uint j = 0u; j < BLOCK; ++j) {
      const uint col = col0 + 8u * j;
      if (col < p.n) store_output(batch, row, col, acc[i][j]);
    }
  }
}
