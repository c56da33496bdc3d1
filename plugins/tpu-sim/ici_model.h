// The simulated pod's inter-chip interconnect (ICI): where a chip sits on the torus, how
// many hops apart two chips are, and the modelled time of a collective among chips
// (docs/tpu-sim.md, "Pods"). Pure arithmetic on the topology, free of the plugin's state.
#pragma once

#include <phynexus/plugin.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace phx::tpu_sim {

// The pod: a torus of dims[0] x dims[1] (x dims[2]) chips. Chip i sits at
// x = i % dims[0], y = (i / dims[0]) % dims[1], z = i / (dims[0] * dims[1]): x varies
// fastest, as chip indices run along a tray first.
struct Pod {
  std::vector<uint32_t> dims;  // one per axis of the generation's torus, x first
  double link_gbps = 0;        // one way, per link: 10^9 bytes per second, i.e. bytes per ns
  double hop_latency_ns = 0;

  uint32_t chip_count() const;
  // An axis of 3 chips or more is a ring: its two ends are linked (wraparound). An axis
  // of 2 is one link between them.
  bool wraps(size_t axis) const;
  // The bytes per ns one phase of a ring algorithm moves along axis per chip: both
  // directions of a ring, one direction of a line (whose end links carry all but one
  // chip's share of it in one direction).
  double axis_bandwidth_gbps(size_t axis) const;
  // The sequential neighbour steps one phase takes along axis: floor(n / 2) on a ring,
  // whose two directions each cover half of it; n - 1 on a line.
  uint32_t axis_steps(size_t axis) const;
  // "2x2x2".
  std::string topology() const;
};

// The chip's coordinate on every axis of pod.
std::vector<uint32_t> chip_coordinates(const Pod& pod, uint32_t chip);

// The fewest links between chips a and b: per axis the shorter way round a ring, the
// straight way along a line, summed over the axes.
uint32_t hop_distance(const Pod& pod, uint32_t a, uint32_t b);

// The modelled time in ns of collective among devices: distinct chips of pod (at least
// two) in rank order; bytes as phx_plugin_api's collective_estimate says (each rank's
// buffer for all_reduce and broadcast, the gathered result for all_gather, each rank's
// input for reduce_scatter, the message for send). Empty for a collective the model does
// not know.
std::optional<double> collective_time_ns(const Pod& pod, phx_plugin_collective collective,
                                         std::span<const uint32_t> devices, uint64_t bytes);

}  // namespace phx::tpu_sim
