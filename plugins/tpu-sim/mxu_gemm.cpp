#include "mxu_gemm.h"

#include "phx/kernels/gemm.h"

namespace phx::tpu_sim {
namespace {

// Below this many MACs a product gains nothing from threads of its own; many such
// products (the groups of a convolution) then share the threads instead.
constexpr int64_t kThreadedMacs = 96 * 96 * 96;

void run_product(const MxuProduct& p, int64_t depth, kernels::ThreadPool& pool) {
  kernels::GemmArgs g;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.in_dtype = PHX_DTYPE_F32;
  g.out_dtype = p.c_dtype;
  g.a = p.a;
  g.lda = p.lda;
  g.trans_a = p.trans_a;
  g.b = p.b;
  g.ldb = p.ldb;
  g.trans_b = p.trans_b;
  g.c = p.c;
  g.ldc = p.ldc;
  g.k_pass = depth;
  kernels::gemm(g, pool);
}

}  // namespace

void mxu_gemm(const std::vector<MxuProduct>& products, int64_t depth, kernels::ThreadPool& pool) {
  bool all_small = true;
  for (const MxuProduct& p : products) all_small = all_small && p.m * p.n * p.k < kThreadedMacs;
  if (all_small && products.size() > 1) {
    // Inside a task gemm runs on that task's thread (the pool does not nest).
    pool.run(products.size(), [&](size_t i) { run_product(products[i], depth, pool); });
    return;
  }
  for (const MxuProduct& p : products) run_product(p, depth, pool);
}

}  // namespace phx::tpu_sim
