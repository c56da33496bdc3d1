// matmul: batch broadcasting and the bias around gemm().
//
// The batch dimensions are collapsed like an elementwise op's (ops_common.h); the
// innermost becomes gemm's own batch (stride 0 where an operand is broadcast), the
// others a loop of gemm calls. A bias that is one row ([N], or 1s before N) is fused
// into gemm; any other broadcastable bias is added after, in f32, before the activation.
#include <new>
#include <vector>

#include "ops_common.h"
#include "phx/kernels/gemm.h"

namespace phx::kernels::ops {
namespace {

// The batch dimensions of t (all but the last two) as a tensor of their own.
HostTensor batch_view(const HostTensor& t) {
  HostTensor v = t;
  v.rank = t.rank - 2;
  return v;
}

// Whether bias, aligned to the right of out, has size 1 in every dimension but the last.
bool is_row_bias(const HostTensor& bias) {
  for (uint32_t d = 0; d + 1 < bias.rank; ++d)
    if (bias.shape[d] != 1) return false;
  return true;
}

// Runs gemm for every batch of a [.., M, K] . b [.., K, N] -> c [.., M, N] (c of
// c_dtype, contiguous) following the output's batch dimensions.
void batched_gemm(const phx_matmul_params& params, const HostTensor& a, const HostTensor& b,
                  const HostTensor& out, void* c, phx_dtype c_dtype, const float* row_bias,
                  phx_activation act, ThreadPool& pool, const PackedB* packed_b) {
  const int out_rank = static_cast<int>(out.rank);
  const int64_t m = out.shape[out_rank - 2], n = out.shape[out_rank - 1];
  const int64_t k = params.transpose_a ? a.shape[a.rank - 2] : a.shape[a.rank - 1];
  StridedSpace<2> batch;  // operand 0: a, 1: b; strides in matrices
  batch.rank = out_rank - 2;
  std::copy(out.shape, out.shape + batch.rank, batch.size);
  broadcast_strides(batch_view(a), batch.rank, batch.size, batch.stride[0]);
  broadcast_strides(batch_view(b), batch.rank, batch.size, batch.stride[1]);
  batch.collapse();
  const int inner = batch.rank - 1;

  GemmArgs g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.in_dtype = a.dtype;
  g.trans_a = params.transpose_a != 0;
  g.lda = g.trans_a ? m : k;
  g.trans_b = params.transpose_b != 0;
  g.ldb = g.trans_b ? k : n;
  g.out_dtype = c_dtype;
  g.ldc = n;
  g.bias = row_bias;
  g.activation = act;
  g.batch = batch.size[inner];
  g.batch_stride_a = batch.stride[0][inner] * m * k;
  g.batch_stride_b = batch.stride[1][inner] * k * n;
  g.batch_stride_c = m * n;

  const size_t in_bytes = dtype_bytes(a.dtype), c_bytes = dtype_bytes(c_dtype);
  const char* pa = static_cast<const char*>(a.data);
  const char* pb = static_cast<const char*>(b.data);
  char* pc = static_cast<char*>(c);
  // One b for every batch of a contiguous, untransposed a: a is one tall matrix, and
  // one product of M * batch rows uses the machine better than batch small ones.
  if (batch.rank == 1 && g.batch_stride_b == 0 && !g.trans_a && g.batch_stride_a == m * k) {
    g.m = m * g.batch;
    g.batch = 1;
  }
  int64_t outer = 1;
  for (int d = 0; d < inner; ++d) outer *= batch.size[d];
  OuterWalker<2> at(batch, 0);
  for (int64_t i = 0; i < outer; ++i, at.next()) {
    g.a = pa + at.offset[0] * m * k * in_bytes;
    g.b = pb + at.offset[1] * k * n * in_bytes;
    g.c = pc + i * batch.size[inner] * m * n * c_bytes;
    if (packed_b != nullptr)
      gemm(g, *packed_b, pool);
    else
      gemm(g, pool);
  }
}

}  // namespace

void run_matmul(const phx_matmul_params& params, const HostTensor& a, const HostTensor& b,
                const HostTensor& bias, const HostTensor& out, ThreadPool& pool,
                const PackedB* packed_b) {
  const int64_t n = out.shape[out.rank - 1];
  const phx_activation act = params.activation;
  if (bias.data == nullptr) {
    batched_gemm(params, a, b, out, out.data, out.dtype, nullptr, act, pool, packed_b);
    return;
  }
  if (is_row_bias(bias)) {
    // [N] or [1]: gemm adds N f32 values to every row.
    std::vector<float> row(static_cast<size_t>(n));
    const int64_t bias_len = element_count(bias);
    copy_to_f32(bias, row.data());
    if (bias_len == 1) std::fill(row.begin(), row.end(), row[0]);
    batched_gemm(params, a, b, out, out.data, out.dtype, row.data(), act, pool, packed_b);
    return;
  }
  // A general bias: the product in f32 (out itself when it is f32), plus the bias,
  // activated, rounded once into a 16-bit out.
  const int64_t count = element_count(out);
  std::vector<float> scratch;
  float* c = static_cast<float*>(out.data);
  if (out.dtype != PHX_DTYPE_F32) {
    scratch.resize(static_cast<size_t>(count));
    c = scratch.data();
  }
  batched_gemm(params, a, b, out, c, PHX_DTYPE_F32, nullptr, PHX_ACTIVATION_NONE, pool, packed_b);
  std::vector<float> bias_f32(static_cast<size_t>(element_count(bias)));
  copy_to_f32(bias, bias_f32.data());
  HostTensor c_view = out, bias_view = bias;
  c_view.data = c;
  c_view.dtype = PHX_DTYPE_F32;
  bias_view.data = bias_f32.data();
  bias_view.dtype = PHX_DTYPE_F32;
  run_binary(PHX_OP_ADD, c_view, bias_view, c_view, pool);
  parallel_for(pool, count, 4, [&](int64_t begin, int64_t end) {
    activation_f32(act, c + begin, end - begin);
    if (out.dtype != PHX_DTYPE_F32)
      from_f32(out.dtype, c + begin, static_cast<char*>(out.data) + begin * 2, end - begin);
  });
}

}  // namespace phx::kernels::ops

namespace phx::kernels {

bool matmul_packs_b(phx_dtype a_dtype, const HostTensor& b) {
  return a_dtype == PHX_DTYPE_F32 && b.dtype == PHX_DTYPE_F32 && b.rank == 2 && b.shape[0] > 0 &&
         b.shape[1] > 0;
}

PackedB matmul_pack_b(const phx_matmul_params& params, const HostTensor& b) {
  GemmArgs g;
  g.trans_b = params.transpose_b != 0;
  g.k = g.trans_b ? b.shape[1] : b.shape[0];
  g.n = g.trans_b ? b.shape[0] : b.shape[1];
  g.b = b.data;
  g.ldb = b.shape[1];
  return gemm_pack_b(g);
}

phx_status run_matmul_packed(const phx_matmul_params& params, const HostTensor* inputs,
                             size_t input_count, const HostTensor& output, const PackedB& packed,
                             ThreadPool& pool) {
  try {
    ops::run_matmul(params, inputs[0], inputs[1], input_count > 2 ? inputs[2] : HostTensor{},
                    output, pool, &packed);
  } catch (const std::bad_alloc&) {  // the converted bias, the GEMM's packing buffers
    return PHX_STATUS_OUT_OF_MEMORY;
  } catch (...) {
    return PHX_STATUS_INTERNAL;
  }
  return PHX_STATUS_OK;
}

}  // namespace phx::kernels
