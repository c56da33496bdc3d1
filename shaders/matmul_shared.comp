// matmul for GPUs: a 128 x 128 output tile per workgroup of 16 x 16 invocations, each
// holding an 8 x 8 block of f32 accumulators; K is streamed in blocks of K_BLOCK that the
// workgroup stages in shared memory as f32 (16-bit inputs are widened once, on staging).
// K_BLOCK (specialization constant 0) is chosen by the host from the device's shared
// memory: the two slabs take 2 * 128 * K_BLOCK * 4 bytes.
//
// Invocation (tx, ty) owns rows ty + 16 i and columns tx + 16 j (i, j < 8) of the tile,
// so that neighbouring invocations read neighbouring shared-memory words.
//
// A slab's row k holds its 128 values at positions XORed with k (k < K_BLOCK <= 32): when
// an operand is staged along k (a row-major a, a transposed b), the 32 invocations of a
// subgroup store one value of 32 ks each, 128 words apart, which without the XOR would
// all fall in one of the 32 shared-memory banks; with it they fall in 32. A row's values
// stay in their 32-word groups, so that the reads keep their banks too.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "matmul.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint K_BLOCK = 16u;

#define BLOCK 8u

shared float a_slab[K_BLOCK * TILE];  // [k][row]
shared float b_slab[K_BLOCK * TILE];  // [k][col]

void main() {
  const uint lid = gl_LocalInvocationID.x;
  const uint tx = lid % 16u;
  const uint ty = lid / 16u;
  const uint batch = p.batch_base + gl_WorkGroupID.z;
  const uint tile_row = p.m_base + gl_WorkGroupID.y * TILE;
  const uint tile_col = gl_WorkGroupID.x * TILE;
  const uint a_base = p.a_shift + a_batch_offset(batch);
  const uint b_base = p.b_shift + b_batch_offset(batch);

  float acc[BLOCK][BLOCK];
  for (uint i = 0u; i < BLOCK; ++i) {
    for (uint j = 0u; j < BLOCK; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0u; k0 < p.k; k0 += K_BLOCK) {
    // Each invocation stages K_BLOCK * 128 / 256 values of each operand; rows, columns
    // and k past the edge stage zeros. Neighbouring invocations read along the operand's
    // contiguous dimension (k for a row-major a and a transposed b).
    for (uint e = lid; e < K_BLOCK * TILE; e += 256u) {
      const uint ka = p.a_cs == 1u ? e % K_BLOCK : e / TILE;
      const uint row = p.a_cs == 1u ? e / K_BLOCK : e % TILE;
      const uint kb = p.b_rs == 1u ? e % K_BLOCK : e / TILE;
      const uint col = p.b_rs == 1u ? e / K_BLOCK : e % TILE;
      const bool a_in = k0 + ka < p.k && tile_row + row < p.m_end;
      const bool b_in = k0 + kb < p.k && tile_col + col < p.n;
      a_slab[ka * TILE + (row ^ ka)] =
          a_in ? X_LOAD(a[a_base + (tile_row + row) * p.a_rs + (k0 + ka) * p.a_cs]) : 0.0;
      b_slab[kb * TILE + (col ^ kb)] =
          b_in ? X_LOAD(b[b_base + (k0 + kb) * p.b_rs + (tile_col + col) * p.b_cs]) : 0.0;
    }
    barrier();
    for (uint kk = 0u; kk < K_BLOCK; ++kk) {
      float av[BLOCK];
      float bv[BLOCK];
      for (uint i = 0u; i < BLOCK; ++i) {
        av[i] = a_slab[kk * TILE + ((ty + 16u * i) ^ kk)];
        bv[i] = b_slab[kk * TILE + ((tx + 16u * i) ^ kk)];
      }
      for (uint i = 0u; i < BLOCK; ++i) {
        for (uint j = 0u; j < BLOCK; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
      }
    }
    barrier();
  }

  const uint y_base = y_batch_offset(batch);
  const uint bias_base = bias_batch_offset(batch);
  for (uint i = 0u; i < BLOCK; ++i) {
    const uint row = tile_row + ty + 16u * i;
    if (row >= p.m_end) break;
    for (uint j = 0u; j < BLOCK; ++j) {
      const uint col = tile_col + tx + 16u * j;
      if (col < p.n) store_output(y_base, bias_base, row, col, acc[i][j]);
    }
  }
}
