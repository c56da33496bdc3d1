#include "mxu_model.h"

#include <algorithm>

namespace phx::tpu_sim {
namespace {

using u128 = unsigned __int128;  // M*N*K of a large batch can pass 2^64

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

MxuEstimate estimate_gemm(const GemmShape& s, const MxuLayout& mxu, TimingMode mode) {
  MxuEstimate e;
  if (s.m == 0 || s.n == 0 || s.k == 0 || s.batch == 0) return e;
  const uint64_t R = mxu.rows, C = mxu.cols, T = s.m;
  const uint64_t row_folds = ceil_div(s.k, R), col_folds = ceil_div(s.n, C);
  e.folds = s.batch * row_folds * col_folds;
  e.folds_per_mxu = ceil_div(e.folds, mxu.count);
  const u128 macs = u128(s.m) * s.n * s.k * s.batch;
  if (mode == TimingMode::kScaleSim) {
    e.cycles = e.folds_per_mxu * (2 * R + C + T - 2) - 1;
  } else {
    const uint64_t pipelined = e.folds_per_mxu * std::max(T, R) + 2 * R + C - 3;
    const u128 array_macs = u128(R) * C * mxu.count;
    const uint64_t mac_bound = uint64_t((macs + array_macs - 1) / array_macs);
    e.cycles = std::max(pipelined, mac_bound);
  }
  e.utilization = double(macs) / (double(e.cycles) * double(R) * double(C) * double(mxu.count));
  e.mapping_efficiency =
      double(s.k) * double(s.n) / (double(row_folds * R) * double(col_folds * C));
  e.padding_waste = 1.0 - e.mapping_efficiency;
  return e;
}

}  // namespace phx::tpu_sim
