// matmul, batched with broadcast batch dimensions, transposed operands, a bias
// broadcastable to the output and a fused activation (shaders/matmul_*.comp).
//
// Two variants of the 128 x 128 output tile per workgroup: "direct" loads a and b
// straight from the buffers, 8 consecutive elements per load where aligned, into 8 x 32
// register blocks, handing rows of b across 8-lane subgroups (the faster one on CPU
// devices such as lavapipe), "shared" stages K blocks in shared memory (GPUs). The
// environment variable PHX_VULKAN_MATMUL=direct|shared forces one (direct only where
// subgroups are 8 wide).
//
// Large tensors: when an operand does not fit one binding, the work is split per batch
// and per block of output rows, each dispatch binding the sub-ranges it reads: rows of a
// (a whole batch matrix when a is transposed), the batch matrix of b, rows of the output.
// A batch matrix of b (or a transposed a, or the bias) larger than one binding is
// UNSUPPORTED.
#include <phx/env.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

#include "families.h"
#include "op_util.h"

namespace phx::vulkan::ops {
namespace {

constexpr uint32_t kTile = 128;

struct Push {
  uint32_t m, n, k;
  uint32_t a_rs, a_cs, b_rs, b_cs, bias_rs, bias_cs;
  uint32_t a_shift, b_shift, y_shift, bias_shift;
  uint32_t m_base, batch_base, batch_rank, batch_mask, flags;
  uint32_t batch_shape[6];
  uint32_t bias_matrix, m_end;
};

// Dimension d of t's shape aligned right against a shape of rank `rank` (1 if missing).
uint64_t aligned_dim(const phx_plugin_tensor& t, uint32_t rank, uint32_t d) {
  const int64_t i = static_cast<int64_t>(d) - static_cast<int64_t>(rank - t.rank);
  return i < 0 ? 1 : static_cast<uint64_t>(t.shape[i]);
}

// The direct kernel hands rows of b across a subgroup of exactly 8 lanes with
// subgroupShuffle and loads f32 operands as 64-bit integers (shaders/matmul_direct.comp):
// on a device without those it cannot run, forced or not.
bool use_shared_memory(const DeviceCaps& caps) {
  if (caps.subgroup_size != 8 || !caps.subgroup_shuffle || !caps.shader_int64) return true;
  const char* forced = env_value("PHX_VULKAN_MATMUL");
  if (forced && std::string(forced) == "shared") return true;
  if (forced && std::string(forced) == "direct") return false;
  return !caps.cpu_device;
}

// The K block of the shared variant: the largest whose two f32 slabs of 128 x K_BLOCK
// fit the device's shared memory (32 on lavapipe's 32 KiB), and at most 32, which the
// shader's bank-spreading layout assumes; 0 if none fits.
uint32_t shared_k_block(const DeviceCaps& caps) {
  for (uint32_t k_block : {32u, 16u, 8u}) {
    if (2 * kTile * k_block * sizeof(float) <= caps.max_shared_memory_bytes) return k_block;
  }
  return 0;
}

// The first element of batch `batch`'s matrix in an operand (matrix elements each) whose
// broadcast batch dimensions are the bits of mask.
uint64_t batch_offset(const Push& p, uint64_t batch, uint32_t mask, uint64_t matrix) {
  uint64_t offset = 0, stride = matrix;
  for (uint32_t d = p.batch_rank; d-- > 0;) {
    const uint64_t coord = batch % p.batch_shape[d];
    batch /= p.batch_shape[d];
    if ((mask & (1u << d)) == 0) {
      offset += coord * stride;
      stride *= p.batch_shape[d];
    }
  }
  return offset;
}

// A batch of matrices times one matrix is one matmul of the batches' rows stacked: a not
// transposed and not broadcast, b broadcast over every batch dimension, the bias one row
// for all or a whole matrix per batch. torch exports a Linear applied to [S, B, E] so
// ([197 x 1 x 768] x [768 x 2304] in ViT), and 197 products of one row each leave a
// 128 x 128 tile nearly empty and load b 197 times.
void fold_batches_into_rows(Push& p, bool ta, bool has_bias) {
  if (p.batch_rank == 0 || ta) return;
  // Batch dimensions of size 1 count as neither broadcast nor not (Swin's [1 x 14 x 14 x
  // 384] has one).
  uint32_t all = 0;
  for (uint32_t d = 0; d < p.batch_rank; ++d) {
    if (p.batch_shape[d] > 1) all |= 1u << d;
  }
  const uint32_t a_broadcast = p.batch_mask & all;
  const uint32_t b_broadcast = (p.batch_mask >> 8) & all;
  const uint32_t bias_broadcast = (p.batch_mask >> 16) & all;
  const bool bias_folds = !has_bias || (bias_broadcast == all && p.bias_rs == 0) ||
                          (bias_broadcast == 0 && p.bias_rs == p.n && p.bias_cs == 1);
  if (a_broadcast != 0 || b_broadcast != all || !bias_folds) return;
  uint64_t rows = p.m;
  for (uint32_t d = 0; d < p.batch_rank; ++d) rows *= p.batch_shape[d];
  if (rows > UINT32_MAX) return;
  p.m = static_cast<uint32_t>(rows);
  p.batch_rank = 0;
  p.batch_mask = 0;
  std::fill(std::begin(p.batch_shape), std::end(p.batch_shape), 0u);
}

// The push constants of matmul y = a x b (+ bias): sizes, strides and batch broadcasting.
// The dispatch fields (shifts, bases, m_end) are set per dispatch.
Push matmul_push(const phx_plugin_op& op) {
  const phx_plugin_tensor& a = op.inputs[0];
  const phx_plugin_tensor& b = op.inputs[1];
  const phx_plugin_tensor* bias = optional_input(op, 2);
  const phx_plugin_tensor& y = op.outputs[0];
  const auto& params = *static_cast<const phx_matmul_params*>(op.params);
  const bool ta = params.transpose_a != 0;
  const bool tb = params.transpose_b != 0;
  const uint32_t rank = y.rank;

  Push p = {};
  p.m = static_cast<uint32_t>(y.shape[rank - 2]);
  p.n = static_cast<uint32_t>(y.shape[rank - 1]);
  p.k = static_cast<uint32_t>(ta ? a.shape[a.rank - 2] : a.shape[a.rank - 1]);
  p.a_rs = ta ? 1 : p.k;
  p.a_cs = ta ? p.m : 1;
  p.b_rs = tb ? 1 : p.n;
  p.b_cs = tb ? p.k : 1;
  p.batch_rank = rank - 2;
  for (uint32_t d = 0; d < p.batch_rank; ++d) {
    p.batch_shape[d] = static_cast<uint32_t>(y.shape[d]);
    if (aligned_dim(a, rank, d) == 1) p.batch_mask |= 1u << d;
    if (aligned_dim(b, rank, d) == 1) p.batch_mask |= 0x100u << d;
    if (bias && aligned_dim(*bias, rank, d) == 1) p.batch_mask |= 0x10000u << d;
  }
  if (bias) {
    const uint64_t bias_m = aligned_dim(*bias, rank, rank - 2);
    const uint64_t bias_n = aligned_dim(*bias, rank, rank - 1);
    p.bias_rs = bias_m == 1 ? 0 : static_cast<uint32_t>(bias_n);
    p.bias_cs = bias_n == 1 ? 0 : 1;
    p.bias_matrix = static_cast<uint32_t>(bias_m * bias_n);
  }
  p.flags = static_cast<uint32_t>(params.activation) | (bias ? 0x100u : 0u);
  fold_batches_into_rows(p, ta, bias != nullptr);
  return p;
}

uint64_t batch_count(const Push& p) {
  uint64_t batches = 1;
  for (uint32_t d = 0; d < p.batch_rank; ++d) batches *= p.batch_shape[d];
  return batches;
}

// The kernel one matmul runs and how each of its dispatches is recorded.
struct MatmulKernel {
  OpRecorder& recorder;
  std::string name;
  uint32_t k_block;  // the shared variant's K block; 0 for the direct variant
  bool ta, tb;
  bool f32_out;

  // Rows m_base..m_end of the output, for batch_count batches from batch_base.
  void dispatch(const Push& p, std::initializer_list<Binding> bindings,
                uint32_t batch_count) const {
    if (k_block) {
      recorder.dispatch(name, bindings, &p, sizeof p, {{0, k_block}}, (p.n + kTile - 1) / kTile,
                        (p.m_end - p.m_base + kTile - 1) / kTile, batch_count);
    } else {
      // Operands whose rows start at multiples of 8 elements are loaded 8 elements at a
      // time (shaders/matmul_direct.comp): not transposed, the row stride and the first
      // element multiples of 8 (a batch matrix then starts at one too).
      const uint32_t a_vec = !ta && p.a_rs % 8 == 0 && p.a_shift % 8 == 0 ? 1 : 0;
      const uint32_t b_vec = !tb && p.b_rs % 8 == 0 && p.b_shift % 8 == 0 ? 1 : 0;
      // An f32 output whose rows start at multiples of 8 is stored 8 columns at a time.
      const uint32_t y_vec = f32_out && p.n % 8 == 0 && p.y_shift % 8 == 0 ? 1 : 0;
      recorder.dispatch(name, bindings, &p, sizeof p, {{0, a_vec}, {1, b_vec}, {2, y_vec}},
                        (p.n + kTile - 1) / kTile, (p.m_end - p.m_base + kTile - 1) / kTile,
                        batch_count);
    }
  }
};

MatmulKernel matmul_kernel(OpRecorder& recorder, phx_dtype in, phx_dtype out, bool ta, bool tb) {
  const uint32_t k_block = use_shared_memory(recorder.caps()) ? shared_k_block(recorder.caps()) : 0;
  std::string name = std::string(k_block ? "matmul_shared_" : "matmul_direct_") +
                     std::string(dtype_name(in)) + "_" + std::string(dtype_name(out));
  return {recorder, std::move(name), k_block, ta, tb, out == PHX_DTYPE_F32};
}

// Every operand in one binding: dispatches only as the grid's limits on rows and batches
// require.
void record_whole(const MatmulKernel& kernel, Push& p, Binding ab, Binding bb, Binding yb,
                  const Binding* bias) {
  const DeviceCaps& caps = kernel.recorder.caps();
  const uint64_t max_rows = static_cast<uint64_t>(caps.max_workgroup_count[1]) * kTile;
  const uint64_t batches = batch_count(p);
  for (uint64_t batch = 0; batch < batches; batch += caps.max_workgroup_count[2]) {
    for (uint64_t row = 0; row < p.m; row += max_rows) {
      p.batch_base = static_cast<uint32_t>(batch);
      p.m_base = static_cast<uint32_t>(row);
      p.m_end = static_cast<uint32_t>(std::min<uint64_t>(p.m, row + max_rows));
      kernel.dispatch(
          p, {ab, bb, yb, bias ? *bias : yb},
          static_cast<uint32_t>(std::min<uint64_t>(batches - batch, caps.max_workgroup_count[2])));
    }
  }
}

// An operand larger than one binding: one dispatch per batch and block of output rows,
// each binding the sub-ranges it reads (the file's opening comment).
void record_in_row_blocks(const MatmulKernel& kernel, const phx_plugin_op& op, Push& p,
                          const Binding* bias) {
  OpRecorder& recorder = kernel.recorder;
  const DeviceCaps& caps = recorder.caps();
  const phx_plugin_tensor& a = op.inputs[0];
  const phx_plugin_tensor& b = op.inputs[1];
  const phx_plugin_tensor& y = op.outputs[0];
  const uint64_t max_rows = static_cast<uint64_t>(caps.max_workgroup_count[1]) * kTile;
  const uint64_t limit = caps.max_binding_bytes;
  const uint64_t in_bytes = dtype_bytes(a.dtype);
  const uint64_t out_bytes = dtype_bytes(y.dtype);

  // Rows per dispatch: as many whole rows of a and of the output as one binding holds,
  // in whole tiles when there is room for one.
  const uint64_t a_rows = kernel.ta ? max_rows : elements_per_binding(caps, in_bytes) / p.k;
  const uint64_t y_rows = elements_per_binding(caps, out_bytes) / p.n;
  uint64_t rows = std::min({a_rows, y_rows, max_rows});
  if (rows >= kTile) rows -= rows % kTile;
  const uint64_t a_matrix = static_cast<uint64_t>(p.m) * p.k;
  const uint64_t b_matrix = static_cast<uint64_t>(p.k) * p.n;
  if (rows == 0 || b_matrix * in_bytes > limit || (kernel.ta && a_matrix * in_bytes > limit)) {
    fail_unsupported("matmul: a row block or a batch matrix of an operand exceeds one binding (" +
                     std::to_string(limit) + " bytes)");
  }
  const uint64_t batches = batch_count(p);
  for (uint64_t batch = 0; batch < batches; ++batch) {
    const uint64_t a_first = batch_offset(p, batch, p.batch_mask & 0xFFu, a_matrix);
    const uint64_t b_first = batch_offset(p, batch, (p.batch_mask >> 8) & 0xFFu, b_matrix);
    const ElementRange br = bind_elements(recorder, b, b_first, b_matrix);
    for (uint64_t row = 0; row < p.m; row += rows) {
      const uint64_t row_end = std::min<uint64_t>(p.m, row + rows);
      const ElementRange ar =
          kernel.ta ? bind_elements(recorder, a, a_first, a_matrix)
                    : bind_elements(recorder, a, a_first + row * p.k, (row_end - row) * p.k);
      const ElementRange yr =
          bind_elements(recorder, y, batch * p.m * p.n + row * p.n, (row_end - row) * p.n);
      p.a_shift = ar.shift;
      p.b_shift = br.shift;
      p.y_shift = yr.shift;
      p.batch_base = static_cast<uint32_t>(batch);
      p.m_base = static_cast<uint32_t>(row);
      p.m_end = static_cast<uint32_t>(row_end);
      kernel.dispatch(p, {ar.binding, br.binding, yr.binding, bias ? *bias : yr.binding}, 1);
    }
  }
}

// Whether the device runs shaders/matvec.comp: CPU devices, where a 128 x 128 tile
// computes 64 rows for the one.
bool runs_matvec(const DeviceCaps& caps) { return caps.cpu_device; }

// y [1 x n] = a [1 x k] x b (+ bias) by shaders/matvec.comp: an invocation per output (b
// transposed, [n x k]) or per 8 outputs (b [k x n]). Every binding from element 0.
void record_matvec(OpRecorder& recorder, phx_dtype in, phx_dtype out, uint32_t n, uint32_t k,
                   bool tb, std::initializer_list<Binding> bindings, uint32_t bias_cs,
                   uint32_t flags) {
  struct MatvecPush {
    uint32_t n, k;
    uint32_t a_shift, b_shift, y_shift, bias_shift;
    uint32_t bias_cs, flags;
  };
  const MatvecPush push = {n, k, 0, 0, 0, 0, bias_cs, flags};
  const uint32_t vec = (tb ? k : n) % 8 == 0 ? 1 : 0;
  const uint64_t invocations = tb ? n : (n + 7) / 8;
  dispatch_grid(
      recorder, "matvec_" + std::string(dtype_name(in)) + "_" + std::string(dtype_name(out)),
      bindings, &push, sizeof push, (invocations + 63) / 64, {{0, tb ? 1u : 0u}, {1, vec}});
}

}  // namespace

void record_matmul(OpRecorder& recorder, const phx_plugin_op& op) {
  const DeviceCaps& caps = recorder.caps();
  Push p = matmul_push(op);
  const auto& params = *static_cast<const phx_matmul_params*>(op.params);
  const MatmulKernel kernel = matmul_kernel(recorder, op.inputs[0].dtype, op.outputs[0].dtype,
                                            params.transpose_a != 0, params.transpose_b != 0);
  if ((p.n + kTile - 1) / kTile > caps.max_workgroup_count[0]) {
    fail_unsupported("matmul: N = " + std::to_string(p.n) + " exceeds the device's grid");
  }
  const phx_plugin_tensor* bias = optional_input(op, 2);
  const Binding bias_binding = bias ? recorder.bind(*bias) : Binding{};
  const uint64_t limit = caps.max_binding_bytes;
  const uint64_t in_bytes = dtype_bytes(op.inputs[0].dtype);
  const bool fits = element_count(op.inputs[0]) * in_bytes <= limit &&
                    element_count(op.inputs[1]) * in_bytes <= limit &&
                    element_count(op.outputs[0]) * dtype_bytes(op.outputs[0].dtype) <= limit;
  if (fits && p.m == 1 && p.batch_rank == 0 && params.transpose_a == 0 && runs_matvec(caps)) {
    // One row: a 128 x 128 tile would compute 64 rows for it.
    const Binding yb = recorder.bind(op.outputs[0]);
    record_matvec(
        recorder, op.inputs[0].dtype, op.outputs[0].dtype, p.n, p.k, params.transpose_b != 0,
        {recorder.bind(op.inputs[0]), recorder.bind(op.inputs[1]), yb, bias ? bias_binding : yb},
        p.bias_cs, p.flags);
  } else if (fits) {
    record_whole(kernel, p, recorder.bind(op.inputs[0]), recorder.bind(op.inputs[1]),
                 recorder.bind(op.outputs[0]), bias ? &bias_binding : nullptr);
  } else {
    record_in_row_blocks(kernel, op, p, bias ? &bias_binding : nullptr);
  }
}

void record_grouped_matmul(OpRecorder& recorder, const GroupedMatmul& mm) {
  const DeviceCaps& caps = recorder.caps();
  if ((mm.n + kTile - 1) / kTile > caps.max_workgroup_count[0]) {
    fail_unsupported("matmul: N = " + std::to_string(mm.n) + " exceeds the device's grid");
  }
  // Batch dimensions (images, groups): a and the bias broadcast over the images.
  Push p = {};
  p.m = mm.m;
  p.n = mm.n;
  p.k = mm.k;
  p.a_rs = mm.k;
  p.a_cs = 1;
  p.b_rs = mm.b_rs;
  p.b_cs = 1;
  p.bias_rs = 1;
  p.bias_cs = 0;
  p.bias_matrix = mm.m;
  p.a_shift = mm.a.shift;
  p.b_shift = mm.b.shift;
  p.y_shift = mm.y.shift;
  p.bias_shift = mm.bias ? mm.bias->shift : 0;
  p.batch_rank = 2;
  p.batch_shape[0] = mm.images;
  p.batch_shape[1] = mm.groups;
  p.batch_mask = 0x1u | 0x10000u;
  p.flags = mm.activation | (mm.bias ? 0x100u : 0u);
  const MatmulKernel kernel = matmul_kernel(recorder, mm.dtype, mm.dtype, false, false);
  record_whole(kernel, p, mm.a.binding, mm.b.binding, mm.y.binding,
               mm.bias ? &mm.bias->binding : nullptr);
}

bool record_row_times_matrix(OpRecorder& recorder, const RowTimesMatrix& mm) {
  if (!runs_matvec(recorder.caps())) return false;
  record_matvec(recorder, mm.dtype, mm.dtype, mm.n, mm.k, true,
                {mm.a, mm.b, mm.y, mm.bias ? *mm.bias : mm.y}, 1,
                mm.activation | (mm.bias ? 0x100u : 0u));
  return true;
}

}  // namespace phx::vulkan::ops
