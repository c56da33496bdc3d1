// The MXU timing model: a GEMM C[M x N] = A[M x K] . B[K x N] tiled onto the chip's
// weight-stationary systolic arrays (shared/reference/systolic.md, docs/tpu-sim.md).
// Pure arithmetic: no plugin, no tensors, so it is tested on its own.
//
// Weight-stationary mapping onto an R x C array: the array rows take K (Sr = K), the
// columns take N (Sc = N), and the M rows of A stream through (T = M). A fold is one
// R x C weight tile: folds = batch * ceil(K / R) * ceil(N / C), spread over the MXUs,
// so the busiest MXU runs f = ceil(folds / MXUs) of them.
//   scalesim: cycles = f * (2R + C + T - 2) - 1   SCALE-Sim's systolic_compute_ws: every
//             fold loads its weights (R), streams T rows, drains (C - 1) skewed by R - 1;
//             the - 1 because SCALE-Sim reports the index of the last cycle. With one
//             MXU this is SCALE-Sim's figure for the whole op; with several, its figure
//             for the busiest MXU's share of the folds.
//   overlap:  cycles = max(f * max(T, R) + 2R + C - 3, ceil(M*N*K*batch / (R*C*MXUs)))
//             the next fold's weights load while the current fold streams, so a fold
//             costs max(T, R); the fill and drain are paid once; never below the bound
//             set by the MACs themselves.
#pragma once

#include <cstdint>

namespace phx::tpu_sim {

enum class TimingMode { kOverlap, kScaleSim };

struct MxuLayout {
  uint64_t rows = 128;  // R
  uint64_t cols = 128;  // C
  uint64_t count = 1;   // MXUs on the chip
};

struct GemmShape {
  uint64_t m = 0, n = 0, k = 0;
  uint64_t batch = 1;  // independent GEMMs of this shape (batch dimensions, groups)
};

struct MxuEstimate {
  uint64_t folds = 0;          // weight tiles over the whole op
  uint64_t folds_per_mxu = 0;  // ceil(folds / MXUs)
  uint64_t cycles = 0;
  double utilization = 0;         // M*N*K*batch / (cycles * R * C * MXUs)
  double mapping_efficiency = 0;  // mean over folds of the array cells used: K*N / (K'*N')
  double padding_waste = 0;       // the share of the folds' cells holding padding: 1 - the above
};

// The estimate for shape; all zero when a dimension is 0.
MxuEstimate estimate_gemm(const GemmShape& shape, const MxuLayout& mxu, TimingMode mode);

}  // namespace phx::tpu_sim
