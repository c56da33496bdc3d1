// What the two matmul variants share: bindings, push constants, batch offsets and the
// epilogue (bias, activation, store). Defines: X_<dtype> for a and b, Y_<dtype> for the
// output and the bias.
//
// A workgroup owns a 128 x 128 tile of one output matrix: the logical unit of the "MXU"
// (gl_WorkGroupID.x: the tile's column, .y: its row, .z: the batch). Element (r, k) of
// a is at a_rs * r + a_cs * k, so transposed operands are only other strides; a row
// stride may exceed the row's length.

#ifndef MATMUL_GLSL
#define MATMUL_GLSL

#include "activation.glsl"
#include "dtype.glsl"

#define TILE 128u

layout(set = 0, binding = 0) readonly buffer A { X_T a[]; };
layout(set = 0, binding = 1) readonly buffer B { X_T b[]; };
layout(set = 0, binding = 2) writeonly buffer Out { Y_T y[]; };
layout(set = 0, binding = 3) readonly buffer Bias { Y_T bias[]; };

layout(push_constant) uniform Push {
  uint m;
  uint n;
  uint k;
  uint a_rs, a_cs;
  uint b_rs, b_cs;
  uint bias_rs, bias_cs;
  // Added to every element index: moves it into a binding of a sub-range (ops/matmul.cpp).
  uint a_shift, b_shift, y_shift, bias_shift;
  uint m_base;  // the first output row of this dispatch: rows [m_base, m_end)
  uint batch_base;
  uint batch_rank;
  // Bit d (a), 8 + d (b), 16 + d (bias): the operand broadcasts batch dimension d.
  uint batch_mask;
  uint flags;  // the activation in bits 0..7; bit 8: a bias is bound
  uint batch_shape[6];
  uint bias_matrix;  // elements per bias matrix (the product of its last two dimensions)
  uint m_end;
} p;

// The first element of the matrix of batch `batch` in an operand whose broadcast batch
// dimensions are the set bits of mask (shifted down to bits 0..7).
uint batch_offset(uint batch, uint mask, uint matrix) {
  uint offset = 0u, stride = matrix, rest = batch;
  for (int d = int(p.batch_rank) - 1; d >= 0; --d) {
    const uint size = p.batch_shape[d];
    const uint c = rest % size;
    rest /= size;
    if ((mask & (1u << d)) == 0u) {
      offset += c * stride;
      stride *= size;
    }
  }
  return offset;
}

// An operand's batch matrix spans its outer dimension times that dimension's stride: rows
// of a b may be padded past n (conv2d's columns, ops/conv2d.cpp), so it is not k n.
uint a_batch_offset(uint batch) {
  return batch_offset(batch, p.batch_mask & 0xFFu, max(p.m * p.a_rs, p.k * p.a_cs));
}
uint b_batch_offset(uint batch) {
  return batch_offset(batch, (p.batch_mask >> 8) & 0xFFu, max(p.k * p.b_rs, p.n * p.b_cs));
}

// The first element of batch `batch`'s output matrix and of its bias matrix, computed once
// per invocation: the epilogue stores many elements.
uint y_batch_offset(uint batch) { return p.y_shift + batch * p.m * p.n; }
uint bias_batch_offset(uint batch) {
  return p.bias_shift + batch_offset(batch, (p.batch_mask >> 16) & 0xFFu, p.bias_matrix);
}

// Bias, activation and the one rounding to the output dtype.
void store_output(uint y_base, uint bias_base, uint row, uint col, float sum) {
  if ((p.flags & 0x100u) != 0u) sum += Y_LOAD(bias[bias_base + row * p.bias_rs + col * p.bias_cs]);
  y[y_base + row * p.n + col] = Y_STORE(activate(p.flags & 0xFFu, sum));
}

#endif  // MATMUL_GLSL
