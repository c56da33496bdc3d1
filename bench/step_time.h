// The step time of a sharded op on a simulated chip, from the figures of its profile
// records (docs/tpu-sim.md, "Pods", "Step time of a sharded matmul"). The op runs as
// tiles, one after another on the chip; each tile's result is then sent over the
// interconnect by a collective (say, the all-gather of a column-split matmul's output).
// A tile's op time is what the timing model gives it, estimated_time_ns = max(compute,
// HBM) + launch overhead: compute and memory already overlap within an op. Its collective's
// time is the interconnect model's. Then, with op_i and comm_i the tile's two times:
//
//   without overlap:  step = sum_i (op_i + comm_i)
//   with overlap:     the MXUs and the interconnect are separate engines; tile i's
//                     collective starts once its op and the collective before it have ended:
//                       op_end_i   = op_end_{i-1} + op_i
//                       comm_end_i = max(comm_end_{i-1}, op_end_i) + comm_i
//                     step = comm_end of the last tile.
//
// For T equal tiles of a total C of compute and G of communication, the overlapped step is
// C / T + (T - 1) max(C, G) / T + G / T: the larger of the two, plus one tile of the
// other. Not modelled: the collective's own HBM reads and writes slowing the op beside it.
#pragma once

#include <algorithm>
#include <vector>

namespace phx_bench {

struct TileTimes {
  double op_ns = 0;    // the tile's op: the profile record's estimated_time_ns
  double comm_ns = 0;  // its collective: the record's estimated_time_ns
};

inline double step_time_ns(const std::vector<TileTimes>& tiles, bool overlap) {
  double op_end = 0, comm_end = 0;
  for (const TileTimes& tile : tiles) {
    op_end = (overlap ? op_end : comm_end) + tile.op_ns;
    comm_end = std::max(comm_end, op_end) + tile.comm_ns;
  }
  return comm_end;
}

}  // namespace phx_bench
