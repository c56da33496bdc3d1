#include "ici_model.h"

#include <algorithm>
#include <set>

namespace phx::tpu_sim {
namespace {

// The axes along which devices form a whole sub-torus of pod: on each of them the devices
// take every coordinate, on every other axis they share one, and together they are every
// combination. Empty when they are no such set (a part of an axis, a scattered subset).
std::vector<size_t> spanned_axes(const Pod& pod, std::span<const uint32_t> devices) {
  std::vector<std::set<uint32_t>> seen(pod.dims.size());
  for (uint32_t device : devices) {
    const std::vector<uint32_t> at = chip_coordinates(pod, device);
    for (size_t a = 0; a < at.size(); ++a) seen[a].insert(at[a]);
  }
  std::vector<size_t> axes;
  uint64_t combinations = 1;
  for (size_t a = 0; a < seen.size(); ++a) {
    if (seen[a].size() == 1) continue;
    if (seen[a].size() != pod.dims[a]) return {};
    axes.push_back(a);
    combinations *= pod.dims[a];
  }
  return combinations == devices.size() ? axes : std::vector<size_t>{};
}

// One reduce-scatter or all-gather phase of bytes over the whole sub-torus of axes. The
// buffer is cut into one part per axis, all in flight at once; part j runs a
// bidirectional ring along the axes in the order j, j+1, ... (round the list), each axis
// reducing (or gathering) what the axes before it left: size / n per chip after an axis
// of n. An axis's links carry the shares of every part, so the slowest axis sets the
// bandwidth term; each part crosses every axis in turn, so the steps' latencies add up.
// One axis of n chips: (n - 1) / n * bytes / bandwidth + steps * latency.
double torus_phase_ns(const Pod& pod, const std::vector<size_t>& axes, double bytes) {
  const size_t k = axes.size();
  std::vector<double> busy_ns(pod.dims.size(), 0.0);
  for (size_t part = 0; part < k; ++part) {
    double size = bytes / double(k);
    for (size_t step = 0; step < k; ++step) {
      const size_t a = axes[(part + step) % k];
      const double n = pod.dims[a];
      busy_ns[a] += (n - 1) / n * size / pod.axis_bandwidth_gbps(a);
      size /= n;
    }
  }
  double latency_ns = 0;
  for (size_t a : axes) latency_ns += pod.axis_steps(a) * pod.hop_latency_ns;
  return *std::max_element(busy_ns.begin(), busy_ns.end()) + latency_ns;
}

// One phase over chips that are no sub-torus: a unidirectional ring through the devices
// in rank order, m - 1 steps of bytes / m each, every chip sending to the next at once.
// A step lasts as long as its farthest pair, whose message crosses that many hops (the
// links it shares with other pairs' messages are not charged).
double rank_ring_phase_ns(const Pod& pod, std::span<const uint32_t> devices, double bytes) {
  const size_t m = devices.size();
  uint32_t hops = 0;
  for (size_t r = 0; r < m; ++r)
    hops = std::max(hops, hop_distance(pod, devices[r], devices[(r + 1) % m]));
  const double step_ns = hops * pod.hop_latency_ns + bytes / double(m) / pod.link_gbps;
  return double(m - 1) * step_ns;
}

}  // namespace

uint32_t Pod::chip_count() const {
  uint32_t count = 1;
  for (uint32_t n : dims) count *= n;
  return count;
}

bool Pod::wraps(size_t axis) const { return dims[axis] >= 3; }

double Pod::axis_bandwidth_gbps(size_t axis) const {
  return wraps(axis) ? 2 * link_gbps : link_gbps;
}

uint32_t Pod::axis_steps(size_t axis) const {
  return wraps(axis) ? dims[axis] / 2 : dims[axis] - 1;
}

std::string Pod::topology() const {
  std::string text;
  for (uint32_t n : dims) text += (text.empty() ? "" : "x") + std::to_string(n);
  return text;
}

std::vector<uint32_t> chip_coordinates(const Pod& pod, uint32_t chip) {
  std::vector<uint32_t> at(pod.dims.size());
  for (size_t a = 0; a < at.size(); ++a) {
    at[a] = chip % pod.dims[a];
    chip /= pod.dims[a];
  }
  return at;
}

uint32_t hop_distance(const Pod& pod, uint32_t a, uint32_t b) {
  const std::vector<uint32_t> from = chip_coordinates(pod, a), to = chip_coordinates(pod, b);
  uint32_t hops = 0;
  for (size_t axis = 0; axis < from.size(); ++axis) {
    const uint32_t straight = from[axis] > to[axis] ? from[axis] - to[axis] : to[axis] - from[axis];
    hops += pod.wraps(axis) ? std::min(straight, pod.dims[axis] - straight) : straight;
  }
  return hops;
}

std::optional<double> collective_time_ns(const Pod& pod, phx_plugin_collective collective,
                                         std::span<const uint32_t> devices, uint64_t bytes) {
  // A reduce-scatter and an all-gather are one phase each; an all-reduce is both; a
  // broadcast is a scatter from the root (the reduce-scatter's traffic without the sums)
  // and an all-gather.
  uint32_t phases = 0;
  switch (collective) {
    case PHX_PLUGIN_COLLECTIVE_ALL_GATHER:
    case PHX_PLUGIN_COLLECTIVE_REDUCE_SCATTER:
      phases = 1;
      break;
    case PHX_PLUGIN_COLLECTIVE_ALL_REDUCE:
    case PHX_PLUGIN_COLLECTIVE_BROADCAST:
      phases = 2;
      break;
    case PHX_PLUGIN_COLLECTIVE_SEND:
      return hop_distance(pod, devices[0], devices[1]) * pod.hop_latency_ns +
             double(bytes) / pod.link_gbps;
    default:
      return std::nullopt;
  }
  const std::vector<size_t> axes = spanned_axes(pod, devices);
  const double phase_ns = axes.empty() ? rank_ring_phase_ns(pod, devices, double(bytes))
                                       : torus_phase_ns(pod, axes, double(bytes));
  return phases * phase_ns;
}

}  // namespace phx::tpu_sim
