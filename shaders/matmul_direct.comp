// matmul for CPU devices (lavapipe): a 128 x 128 output tile per workgroup of 32
// invocations in subgroups of 8, loading a and b straight from the buffers (the CPU's
// caches do the staging; barriers would cost a thread switch).
//
// lavapipe (Mesa 22.3, gallivm: lp_bld_nir_soa.c) runs a subgroup as the 8 lanes of one
// SIMD vector. A storage-buffer load whose offset is not a constant or push-constant
// expression (emit_load_mem) becomes a run-time loop over the 8 lanes, each lane's load
// behind a branch on the execution mask and, per component, a bounds check and an insert
// at a variable lane index; inside a loop even a subgroup-uniform offset takes that path.
// subgroupBroadcast (emit_read_invocation) is a loop over the lanes too (to find the first
// active one), while subgroupShuffle (emit_shuffle) is one vpermps on AVX2. fma() arrives
// as a separate multiply and add, the accumulators live on the stack: what costs is the
// number of load loops and their components, then the multiply-adds.
//
// So each invocation holds a ROWS x COLS block of f32 accumulators, and every load brings
// 8 consecutive elements of one operand (a vector of four 64-bit integers for f32, one
// uvec4 of 16-bit words for f16 and bf16: a load's cost grows with its components, not its
// bytes, and two vec4s cost twice one u64vec4). Lane l of subgroup s owns ROWS rows of the
// tile (the band s % BANDS, then ROWS l + i); the subgroup's COLS columns (the block s /
// BANDS) are the same for all its lanes. Per 8 steps of k a lane loads a(row, k .. k + 7)
// for each of its rows (its own values: no exchange needed) and b(k + l, COLS columns);
// subgroupShuffle(., kk) hands every lane step kk's row of b. That is ROWS + COLS / 8
// loads for 8 ROWS COLS multiply-adds; 16 x 16 blocks with lanes owning columns (a
// broadcast, b loaded at every step) needed 6 times as many load loops per multiply-add,
// and a lane loop per broadcast.
//
// The multiply-adds go accumulator by accumulator: acc[i][j] is loaded, takes its 8 steps
// of k (a(row i, k + kk) times step kk's shuffled b) and is stored once. acc lives on the
// stack, and every write to it inside the K loop is a masked store (a blend with the
// execution mask, then a store), so this order pays that once per 8 multiply-adds, where
// the step-major order (all of acc per step of k, in a loop over the steps that kept the
// code small) paid it once per two. Measured 1.45x faster than step-major; in this order
// 8 x 32 blocks, or a tree of adds instead of the chain, were no faster (step-major,
// 8 x 64 was 1.2x faster than 8 x 32 and as fast as 16 x 64). The unrolled block is 4,096
// multiply-adds, so the build leaves the unrolling to the driver (DRIVER_UNROLLS in
// shaders.cmake: unrolled by spirv-opt, -O took 62 s and 8 GB per module).
//
// Operands whose layout does not allow the vector loads (transposed, or a row start not a
// multiple of 8 elements: A_VEC, B_VEC below, set by ops/matmul.cpp) load the same values
// element by element (slower, same results). Every loop over a block is unrolled with
// constant bounds, so the accumulators stay SSA values (an array indexed at run time would
// live in memory, every access a gather). Rows and columns past the edge load the last
// valid one (no branch in the K loop); their results are not stored.
// Measured: docs/vulkan.md, "Kernels".
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "matmul.glsl"

#ifndef ROWS
#define ROWS 8u   // rows per lane
#define COLS 64u  // columns per subgroup
#endif
#define LANES 8u
#define BANDS (TILE / (LANES * ROWS))
layout(local_size_x = LANES * BANDS * (TILE / COLS)) in;

// 1: a is not transposed and its rows start at multiples of 8 elements (k and the first
// element multiples of 8); 0: element loads.
layout(constant_id = 0) const uint A_VEC = 0u;
// 1: the same for b (not transposed, its row stride and the first element multiples of 8;
// the row stride may exceed n, conv2d's padded columns: columns up to n rounded up to 8
// are read, their results past n not stored).
layout(constant_id = 1) const uint B_VEC = 0u;
// 1: the output is f32, n and the output's first element multiples of 8: the epilogue
// stores 8 columns at a time, one 32-byte vector each (ops/matmul.cpp sets it).
layout(constant_id = 2) const uint Y_VEC = 0u;

// Views of a and b in which one load brings 8 elements: for f32 32-byte vectors of 64-bit
// integers (4 components where two vec4s would be 8), for 16-bit dtypes 16-byte vectors.
#if defined(X_F32)
#extension GL_ARB_gpu_shader_int64 : require
#define X_VEC u64vec4
#else
#define X_VEC uvec4
#endif
layout(set = 0, binding = 0) readonly buffer AVec { X_VEC a_vec[]; };
layout(set = 0, binding = 1) readonly buffer BVec { X_VEC b_vec[]; };
#if defined(Y_F32)
#extension GL_ARB_gpu_shader_int64 : require
layout(set = 0, binding = 2) writeonly buffer OutVec { u64vec4 y_vec[]; };
#endif

// v = the 8 elements from element `at` (a multiple of 8) of a view.
#if defined(X_F32)
#define LOAD8(view, at, v)                                 \
  {                                                        \
    const u64vec4 w_ = view[(at) >> 3];                    \
    [[unroll]] for (uint c_ = 0u; c_ < 4u; ++c_) {         \
      const uvec2 h_ = unpackUint2x32(w_[c_]);             \
      v[2u * c_] = uintBitsToFloat(h_.x);                  \
      v[2u * c_ + 1u] = uintBitsToFloat(h_.y);             \
    }                                                      \
  }
#else
#define LOAD8(view, at, v)                                                        \
  {                                                                               \
    const uvec4 w_ = view[(at) >> 3];                                             \
    [[unroll]] for (uint c_ = 0u; c_ < 4u; ++c_) {                                \
      v[2u * c_] = X_LOAD(uint16_t(w_[c_] & 0xFFFFu));                            \
      v[2u * c_ + 1u] = X_LOAD(uint16_t(w_[c_] >> 16));                           \
    }                                                                             \
  }
#endif

void main() {
  const uint lane = gl_SubgroupInvocationID;
  const uint sg = gl_SubgroupID;
  const uint batch = p.batch_base + gl_WorkGroupID.z;
  // The lane's rows row0 + i (i < ROWS); the subgroup's columns col0 + j (j < COLS).
  const uint band0 = p.m_base + gl_WorkGroupID.y * TILE + (sg % BANDS) * LANES * ROWS;
  const uint row0 = band0 + lane * ROWS;
  const uint col0 = gl_WorkGroupID.x * TILE + (sg / BANDS) * COLS;
  // A subgroup whose rows or columns all lie past the edge of a partial tile has nothing
  // to store: it leaves (no barrier waits for it), rather than computing copies of the
  // last row or column. On lavapipe a loop whose lanes have all left is not run, so a
  // product of 64 rows no longer pays for the tile's other 64.
  if (band0 >= p.m_end || col0 >= p.n) return;

  const uint a_base = p.a_shift + a_batch_offset(batch);
  const uint b_base = p.b_shift + b_batch_offset(batch);
  uint a_at[ROWS];  // a(row i, k = 0)
  [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
    a_at[i] = a_base + min(row0 + i, p.m_end - 1u) * p.a_rs;
  }
  uint b_at[COLS];  // b(k = 0, column j); with B_VEC, b_at[8 g] starts 8 columns
  [[unroll]] for (uint j = 0u; j < COLS; ++j) {
    b_at[j] = b_base + (B_VEC != 0u ? min(col0 + j - j % 8u, ((p.n + 7u) & ~7u) - 8u) + j % 8u
                                    : min(col0 + j, p.n - 1u) * p.b_cs);
  }

  float acc[ROWS][COLS];
  [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
    [[unroll]] for (uint j = 0u; j < COLS; ++j) acc[i][j] = 0.0;
  }

  // Whole groups of LANES steps of k, then the rest one step at a time.
  const uint k_main = p.k - p.k % LANES;
  uint k = 0u;
  for (; k < k_main; k += LANES) {
    float av[ROWS][LANES];  // a(row i, k + kk)
    [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
      if (A_VEC != 0u) {
        LOAD8(a_vec, a_at[i] + k, av[i]);
      } else {
        [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) {
          av[i][kk] = X_LOAD(a[a_at[i] + (k + kk) * p.a_cs]);
        }
      }
    }
    float bl[COLS];  // b(k + lane, column j)
    const uint b_k = (k + lane) * p.b_rs;
    [[unroll]] for (uint g = 0u; g < COLS / 8u; ++g) {
      if (B_VEC != 0u) {
        float v[8];
        LOAD8(b_vec, b_at[8u * g] + b_k, v);
        [[unroll]] for (uint c = 0u; c < 8u; ++c) bl[8u * g + c] = v[c];
      } else {
        [[unroll]] for (uint c = 0u; c < 8u; ++c) bl[8u * g + c] = X_LOAD(b[b_at[8u * g + c] + b_k]);
      }
    }
    // Accumulator by accumulator, each taking its LANES steps at once (see the top).
    [[unroll]] for (uint j = 0u; j < COLS; ++j) {
      float bk[LANES];
      [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) bk[kk] = subgroupShuffle(bl[j], kk);
      [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
        float s = acc[i][j];
        [[unroll]] for (uint kk = 0u; kk < LANES; ++kk) s = fma(av[i][kk], bk[kk], s);
        acc[i][j] = s;
      }
    }
  }
  for (; k < p.k; ++k) {
    float bv[COLS];
    [[unroll]] for (uint j = 0u; j < COLS; ++j) bv[j] = X_LOAD(b[b_at[j] + k * p.b_rs]);
    [[unroll]] for (uint i = 0u; i < ROWS; ++i) {
      const float ai = X_LOAD(a[a_at[i] + k * p.a_cs]);
      [[unroll]] for (uint j = 0u; j < COLS; ++j) acc[i][j] = fma(ai, bv[j], acc[i][j]);
    }
  }

  // Row by row, in a loop that is not unrolled (the epilogue, unrolled ROWS times, would
  // multiply the compile time); the row is picked out of acc with selects, so that every
  // index into acc stays a constant.
  const uint y_base = y_batch_offset(batch);
  const uint bias_base = bias_batch_offset(batch);
  const uint rows = min(ROWS, p.m_end - min(row0, p.m_end));
#if defined(Y_F32)
  if (Y_VEC != 0u) {
    // A bias of one row (a Linear's) is loaded once for all rows, a bias of one column
    // (a convolution's) once per row, any other per element; stores of 8 columns.
    const bool has_bias = (p.flags & 0x100u) != 0u;
    float bias_col[COLS];
    [[unroll]] for (uint j = 0u; j < COLS; ++j) {
      bias_col[j] = 0.0;
      if (has_bias && p.bias_rs == 0u) {
        bias_col[j] = Y_LOAD(bias[bias_base + min(col0 + j, p.n - 1u) * p.bias_cs]);
      }
    }
    for (uint r = 0u; r < rows; ++r) {
      const uint row = row0 + r;
      float v[COLS] = acc[0];
      [[unroll]] for (uint i = 1u; i < ROWS; ++i) {
        [[unroll]] for (uint j = 0u; j < COLS; ++j) v[j] = r == i ? acc[i][j] : v[j];
      }
      float bias_row = 0.0;
      if (has_bias && p.bias_cs == 0u) bias_row = Y_LOAD(bias[bias_base + row * p.bias_rs]);
      [[unroll]] for (uint g = 0u; g < COLS / 8u; ++g) {
        if (col0 + 8u * g >= p.n) break;
        u64vec4 w;
        [[unroll]] for (uint q = 0u; q < 4u; ++q) {
          float pair[2];
          [[unroll]] for (uint h = 0u; h < 2u; ++h) {
            const uint j = 8u * g + 2u * q + h;
            float sum = v[j];
            if (has_bias) {  // as store_output adds it (no + 0.0 that would turn -0.0 to 0.0)
              if (p.bias_rs == 0u) sum += bias_col[j];
              else if (p.bias_cs == 0u) sum += bias_row;
              else sum += Y_LOAD(bias[bias_base + row * p.bias_rs + (col0 + j) * p.bias_cs]);
            }
            pair[h] = activate(p.flags & 0xFFu, sum);
          }
          w[q] = packUint2x32(uvec2(floatBitsToUint(pair[0]), floatBitsToUint(pair[1])));
        }
        y_vec[(y_base + row * p.n + col0 + 8u * g) >> 3] = w;
      }
    }
    return;
  }
#endif
  for (uint r = 0u; r < rows; ++r) {
    float v[COLS] = acc[0];
    [[unroll]] for (uint i = 1u; i < ROWS; ++i) {
      [[unroll]] for (uint j = 0u; j < COLS; ++j) v[j] = r == i ? acc[i][j] : v[j];
    }
    [[unroll]] for (uint j = 0u; j < COLS; ++j) {
      if (col0 + j < p.n) store_output(y_base, bias_base, row0 + r, col0 + j, v[j]);
    }
  }
}
