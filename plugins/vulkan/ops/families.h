// The op families, one file each; registry.cpp routes phx_op_id to them.
#pragma once

#include "../op_recorder.h"

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

}  // namespace phx::vulkan::ops
