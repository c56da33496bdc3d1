// The op families, one file each; registry.cpp routes phx_op_id to them.
#pragma once

#include "../op_recorder.h"
#include "op_util.h"

namespace phx::vulkan::ops {

void record_matmul(OpRecorder& recorder, const phx_plugin_op& op);
void record_binary(OpRecorder& recorder, const phx_plugin_op& op);
void record_where(OpRecorder& recorder, const phx_plugin_op& op);
void record_unary(OpRecorder& recorder, const phx_plugin_op& op);
void record_softmax(OpRecorder& recorder, const phx_plugin_op& op);
void record_norm(OpRecorder& recorder, const phx_plugin_op& op);
void record_batch_norm(OpRecorder& recorder, const phx_plugin_op& op);
void record_transpose(OpRecorder& recorder, const phx_plugin_op& op);
void record_reduce(OpRecorder& recorder, const phx_plugin_op& op);
void record_cast(OpRecorder& recorder, const phx_plugin_op& op);
void record_conv2d(OpRecorder& recorder, const phx_plugin_op& op);
void record_attention(OpRecorder& recorder, const phx_plugin_op& op);
void record_rope(OpRecorder& recorder, const phx_plugin_op& op);
void record_reshape(OpRecorder& recorder, const phx_plugin_op& op);
void record_concat(OpRecorder& recorder, const phx_plugin_op& op);
void record_slice(OpRecorder& recorder, const phx_plugin_op& op);
void record_gather(OpRecorder& recorder, const phx_plugin_op& op);
void record_expand(OpRecorder& recorder, const phx_plugin_op& op);
void record_tile(OpRecorder& recorder, const phx_plugin_op& op);
void record_pad(OpRecorder& recorder, const phx_plugin_op& op);
void record_pool(OpRecorder& recorder, const phx_plugin_op& op);
void record_conv_transpose2d(OpRecorder& recorder, const phx_plugin_op& op);
void record_resize(OpRecorder& recorder, const phx_plugin_op& op);

// All of y copied from x, read at src_base and src_stride (elements, per dimension of y)
// by shaders/layout_copy.comp: slice and expand, and a transpose that keeps the last axis.
// Tensors of more than 2^31 elements are UNSUPPORTED.
void record_gather_view(OpRecorder& recorder, const phx_plugin_tensor& x,
                        const phx_plugin_tensor& y, int64_t src_base, const int64_t* src_stride);

// x's elements as rows x cols, each row padded with zeros to padded_cols, into y
// (shaders/layout_pad.comp): conv2d's weights as its matmul loads them.
void record_zero_padded_rows(OpRecorder& recorder, const phx_plugin_tensor& x, uint32_t rows,
                             uint32_t cols, uint32_t padded_cols, Binding y);

// The matmul of ops built on it (conv2d, ops/conv2d.cpp) over memory they bound
// themselves: for each image i < images and group g < groups,
//   y(i, g) [m x n] = a(g) [m x k] x b(i, g) [k x n] + bias(g) [m, one per row],
// activated. The matrices lie one after another in their bindings from their shifts (in
// elements): a(g) at g m k, b(i, g) at (i groups + g) k b_rs (b's rows are b_rs >= n
// apart), y(i, g) at (i groups + g) m n, bias(g) at g m. a, b, y and the bias are of
// dtype; the sums are f32, rounded once.
struct GroupedMatmul {
  phx_dtype dtype;
  uint32_t m, n, k, b_rs;
  uint32_t images, groups;
  uint32_t activation;  // phx_activation
  ElementRange a, b, y;
  const ElementRange* bias;  // null: none
};
void record_grouped_matmul(OpRecorder& recorder, const GroupedMatmul& mm);

// y [1 x n] = a [1 x k] x b^T, b stored [n x k], + bias (one per column), activated, by
// the matmul's one-row kernel (shaders/matvec.comp): conv2d's 1x1 convolutions of one
// position. Every binding from element 0, of dtype. Runs on CPU devices only; false
// (nothing recorded) elsewhere.
struct RowTimesMatrix {
  phx_dtype dtype;
  uint32_t n, k;
  Binding a, b, y;
  const Binding* bias;  // null: none
  uint32_t activation;  // phx_activation
};
bool record_row_times_matrix(OpRecorder& recorder, const RowTimesMatrix& mm);

}  // namespace phx::vulkan::ops
