// attention, flash style, in two variants: "direct" (shaders/attention_direct.comp; CPU
// devices, D and Dv multiples of 8) keeps a block of queries per lane in registers and
// hands keys and values across 8-lane subgroups, with no shared memory and no barriers;
// "shared" (shaders/attention.comp; elsewhere) runs a workgroup per (batch, head, block of
// 64 queries), keys and values staged in shared memory in blocks of KEY_BLOCK. The head
// dimensions are specialization constants, so each (D, Dv) gets a pipeline whose
// per-query arrays have exactly their size. Tensors larger than one binding are
// UNSUPPORTED.
#include <cmath>
#include <string>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {

namespace {
// The per-query q and accumulator arrays live in registers (or a CPU's stack): 256
// floats each is the most the shader is built for.
constexpr int64_t kMaxHeadDim = 256;
constexpr uint32_t kQueryBlock = 64;

// The direct variant loads 8 elements at a time from rows that start at multiples of 8,
// shuffles across subgroups of exactly 8 lanes and loads f32 as 64-bit integers.
bool use_direct(const DeviceCaps& caps, int64_t d, int64_t dv) {
  return caps.cpu_device && caps.subgroup_size == 8 && caps.subgroup_shuffle && caps.shader_int64 &&
         d % 8 == 0 && dv % 8 == 0;
}

// The direct variant's queries per lane: as many as keep its unrolled accumulator block
// (8 ROWS Dv multiply-adds per block of 8 keys) within 4,096, the size of the direct
// matmul's: the pipeline's compile time grows with it.
uint32_t direct_rows(int64_t dv) { return dv <= 64 ? 8 : dv <= 128 ? 4 : 2; }

// Queries per invocation: on a CPU device each value staged in shared memory is read by
// every lane in turn, so an invocation that holds 4 queries in registers reads it once for
// 4 of them; a GPU broadcasts the read and wants more invocations instead.
uint32_t rows_per_invocation(const DeviceCaps& caps) { return caps.cpu_device ? 2 : 1; }

// The largest key block of 16, 8 or 4 whose staged keys and values (f32, each row padded
// to a multiple of 4) and scores (one per query of the block) fit the device's shared
// memory; 0 if none does. Larger blocks only grow the shader: the per-block overhead (two
// barriers and a rescale) is already small.
uint32_t key_block(const DeviceCaps& caps, int64_t d, int64_t dv) {
  const uint64_t key_bytes =
      static_cast<uint64_t>((d + 3) / 4 + (dv + 3) / 4) * 16 + 4 * kQueryBlock;
  for (uint32_t keys = 16; keys >= 4; keys /= 2) {
    if (keys * key_bytes <= caps.max_shared_memory_bytes) return keys;
  }
  return 0;
}
}  // namespace

void record_attention(OpRecorder& recorder, const phx_plugin_op& op) {
  struct Push {
    uint32_t heads, kv_heads, sq, skv;
    float scale;
    uint32_t mask, window;
  };
  const phx_plugin_tensor& q = op.inputs[0];
  const phx_plugin_tensor& k = op.inputs[1];
  const phx_plugin_tensor& v = op.inputs[2];
  const auto& params = *static_cast<const phx_attention_params*>(op.params);
  const int64_t d = q.shape[3];
  const int64_t dv = v.shape[3];
  if (d > kMaxHeadDim || dv > kMaxHeadDim) {
    fail_unsupported("attention: head dimensions above " + std::to_string(kMaxHeadDim) +
                     " are not supported on Vulkan (D " + std::to_string(d) + ", Dv " +
                     std::to_string(dv) + ")");
  }
  const DeviceCaps& caps = recorder.caps();
  const bool direct = use_direct(caps, d, dv);
  const uint32_t keys = key_block(caps, d, dv);
  if (!direct && keys == 0) {
    fail_unsupported("attention: a block of 4 keys and values of D " + std::to_string(d) + ", Dv " +
                     std::to_string(dv) + " exceeds the device's " +
                     std::to_string(caps.max_shared_memory_bytes) + " bytes of shared memory");
  }
  const Push push = {static_cast<uint32_t>(q.shape[1]),
                     static_cast<uint32_t>(k.shape[1]),
                     static_cast<uint32_t>(q.shape[2]),
                     static_cast<uint32_t>(k.shape[2]),
                     params.scale != 0.0f
                         ? params.scale
                         : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))),
                     static_cast<uint32_t>(params.mask),
                     params.window};
  const uint32_t block = direct ? 8 * direct_rows(dv) : kQueryBlock;
  const uint64_t query_blocks = (push.sq + block - 1) / block;
  if (query_blocks > caps.max_workgroup_count[0] || push.heads > caps.max_workgroup_count[1] ||
      static_cast<uint64_t>(q.shape[0]) > caps.max_workgroup_count[2]) {
    fail_unsupported("attention: the grid exceeds the device's workgroup counts");
  }
  if (direct) {
    recorder.dispatch(
        "attention_direct_" + std::string(dtype_name(q.dtype)),
        {recorder.bind(q), recorder.bind(k), recorder.bind(v), recorder.bind(op.outputs[0])}, &push,
        sizeof push,
        {{0, static_cast<uint32_t>(d)}, {1, static_cast<uint32_t>(dv)}, {2, direct_rows(dv)}},
        static_cast<uint32_t>(query_blocks), push.heads, static_cast<uint32_t>(q.shape[0]));
    return;
  }
  recorder.dispatch(
      "attention_" + std::string(dtype_name(q.dtype)),
      {recorder.bind(q), recorder.bind(k), recorder.bind(v), recorder.bind(op.outputs[0])}, &push,
      sizeof push,
      {{0, static_cast<uint32_t>(d)},
       {1, static_cast<uint32_t>(dv)},
       {2, keys},
       {3, kQueryBlock / rows_per_invocation(caps)}},
      static_cast<uint32_t>(query_blocks), push.heads, static_cast<uint32_t>(q.shape[0]));
}

}  // namespace phx::vulkan::ops
