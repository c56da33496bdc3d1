// The interconnect model: chip coordinates, hop distances on the torus, and the
// collectives' times against the formulas of docs/tpu-sim.md ("Pods"), written out here
// for each topology rather than computed the model's way.
//
// Tolerance: the model and the formulas add and divide the same figures in other orders,
// which moves a double by a few units in the last place (about 1e-16 relative each); a
// relative 1e-12 is far above that and far below any modelling error worth catching (a
// step of latency or a share of a buffer is 1e-6 relative or more here).
#include "ici_model.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace phx::tpu_sim {
namespace {

constexpr double kRelative = 1e-12;
constexpr double kLatency = 1000.0;  // ns per hop
constexpr double kBytes = 1e9;       // 1 GB: far into the bandwidth-bound regime

Pod pod(std::vector<uint32_t> dims, double link_gbps, double latency_ns = kLatency) {
  Pod p;
  p.dims = std::move(dims);
  p.link_gbps = link_gbps;
  p.hop_latency_ns = latency_ns;
  return p;
}

double time_ns(const Pod& p, phx_plugin_collective c, const std::vector<uint32_t>& devices,
               double bytes = kBytes) {
  const std::optional<double> t = collective_time_ns(p, c, devices, uint64_t(bytes));
  EXPECT_TRUE(t.has_value());
  return t.value_or(0.0);
}

std::vector<uint32_t> every_chip(const Pod& p) {
  std::vector<uint32_t> chips(p.chip_count());
  for (uint32_t i = 0; i < chips.size(); ++i) chips[i] = i;
  return chips;
}

TEST(IciModel, ChipCoordinatesRunXFirst) {
  EXPECT_EQ(chip_coordinates(pod({2, 2, 2}, 100), 5), (std::vector<uint32_t>{1, 0, 1}));
  EXPECT_EQ(chip_coordinates(pod({2, 2, 2}, 100), 6), (std::vector<uint32_t>{0, 1, 1}));
  EXPECT_EQ(chip_coordinates(pod({4, 4}, 50), 6), (std::vector<uint32_t>{2, 1}));
  EXPECT_EQ(chip_coordinates(pod({4, 4}, 50), 15), (std::vector<uint32_t>{3, 3}));
  EXPECT_EQ(pod({2, 4, 8}, 1).topology(), "2x4x8");
}

// Axes of 3 chips or more wrap; an axis of 2 is one link, never two hops.
TEST(IciModel, HopDistanceTakesTheShorterWayRoundARing) {
  const Pod torus = pod({4, 4}, 50);
  EXPECT_EQ(hop_distance(torus, 0, 1), 1u);
  EXPECT_EQ(hop_distance(torus, 0, 3), 1u);   // (0,0) - (3,0) by the wraparound
  EXPECT_EQ(hop_distance(torus, 0, 10), 4u);  // (2,2): the torus's diameter
  EXPECT_EQ(hop_distance(torus, 4, 15), 3u);  // (0,1) - (3,3): x by the wraparound
  const Pod cube = pod({2, 2, 2}, 100);
  EXPECT_EQ(hop_distance(cube, 0, 7), 3u);
  EXPECT_EQ(hop_distance(cube, 3, 4), 3u);
  EXPECT_EQ(hop_distance(cube, 2, 6), 1u);
  const Pod ring = pod({8, 1, 1}, 100);
  EXPECT_EQ(hop_distance(ring, 0, 7), 1u);
  EXPECT_EQ(hop_distance(ring, 1, 5), 4u);
}

// The published ring all-reduce: 2 (n - 1) / n * bytes / bandwidth on a 1-D ring of n,
// plus one hop's latency per step. The bandwidth is what a chip sends along the ring: both
// directions of a ring (n >= 3, wrapped), the one link of n = 2. A bidirectional ring
// phase takes floor(n / 2) steps, the single link's one.
TEST(IciModel, RingAllReduceIsThePublishedFormula) {
  const double link = 100.0;  // v5p's GB/s per link each way
  for (uint32_t n : {2u, 4u, 8u}) {
    const Pod ring = pod({n, 1, 1}, link);
    const double bandwidth = n >= 3 ? 2 * link : link;
    const double steps = n >= 3 ? n / 2 : 1;
    const double want = 2.0 * (n - 1) / n * kBytes / bandwidth + 2 * steps * kLatency;
    EXPECT_NEAR(time_ns(ring, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, every_chip(ring)), want,
                want * kRelative)
        << n;
    // Latency aside: exactly the formula.
    const Pod instant = pod({n, 1, 1}, link, 0.0);
    const double bandwidth_term = 2.0 * (n - 1) / n * kBytes / bandwidth;
    EXPECT_NEAR(time_ns(instant, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, every_chip(instant)),
                bandwidth_term, bandwidth_term * kRelative)
        << n;
  }
}

// 2x2x2 (v5p: 100 GB/s per link each way): three axes of one link each. The buffer V is
// cut in three parts, each reduce-scattered along x, y, z in a rotated order, so every
// axis carries, summed over the parts, (1/2) (V/3) (1 + 1/2 + 1/4) bytes per direction at
// the link's bandwidth W: 7 V / 24 W per phase. Latency: one step per axis, three per
// phase. All-reduce: two phases.
TEST(IciModel, CubeAllReduceIsTheMultiAxisFormula) {
  const double w = 100.0;
  const Pod cube = pod({2, 2, 2}, w);
  const double want = 2 * (7.0 * kBytes / (24.0 * w)) + 2 * 3 * kLatency;
  EXPECT_NEAR(time_ns(cube, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, every_chip(cube)), want,
              want * kRelative);
}

// 4x4 (v5e: 50 GB/s per link each way): two wrapped axes of 4, both directions used, 2W
// per axis. Two parts of V/2: each axis carries (3/4) (V/2) (1 + 1/4) = 15 V / 32 per
// phase at 2W. Latency: two steps per axis (floor(4/2)), four per phase.
TEST(IciModel, TorusAllReduceIsTheMultiAxisFormula) {
  const double w = 50.0;
  const Pod torus = pod({4, 4}, w);
  const double phase_bytes = 15.0 * kBytes / 32.0;
  const double want = 2 * (phase_bytes / (2 * w)) + 2 * 4 * kLatency;
  EXPECT_NEAR(time_ns(torus, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, every_chip(torus)), want,
              want * kRelative);
  // The scaling book's all-gather over two axes, V / (bidirectional bandwidth * 2 axes),
  // leaves out the factor (N - 1) / N of the N = 16 chips, which the model keeps.
  const Pod instant = pod({4, 4}, w, 0.0);
  const double book = kBytes / (2 * w * 2);
  EXPECT_NEAR(time_ns(instant, PHX_PLUGIN_COLLECTIVE_ALL_GATHER, every_chip(instant)),
              book * 15.0 / 16.0, book * kRelative);
}

// All-gather and reduce-scatter are one phase each, all-reduce two: half its bandwidth
// term (and half its latency), whatever the topology. A broadcast, a scatter and an
// all-gather, costs an all-reduce.
TEST(IciModel, GatherAndScatterAreHalfAnAllReduce) {
  for (const Pod& p : {pod({8, 1}, 50), pod({4, 4}, 50), pod({2, 2, 2}, 100), pod({2, 4, 4}, 45),
                       pod({3, 1, 1}, 100)}) {
    const std::vector<uint32_t> all = every_chip(p);
    const double reduce = time_ns(p, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, all);
    const double latency = time_ns(p, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, all, 0);
    for (phx_plugin_collective half :
         {PHX_PLUGIN_COLLECTIVE_ALL_GATHER, PHX_PLUGIN_COLLECTIVE_REDUCE_SCATTER}) {
      const double bandwidth_term = time_ns(p, half, all) - time_ns(p, half, all, 0);
      EXPECT_NEAR(bandwidth_term, (reduce - latency) / 2, reduce * kRelative) << p.topology();
    }
    EXPECT_EQ(time_ns(p, PHX_PLUGIN_COLLECTIVE_BROADCAST, all), reduce) << p.topology();
  }
}

// A send crosses the hops between the two chips, then streams at one link's bandwidth.
TEST(IciModel, SendPaysItsHops) {
  const double w = 50.0;
  const Pod torus = pod({4, 4}, w);
  const double stream = kBytes / w;
  EXPECT_NEAR(time_ns(torus, PHX_PLUGIN_COLLECTIVE_SEND, {0, 1}), kLatency + stream,
              stream * kRelative);
  EXPECT_NEAR(time_ns(torus, PHX_PLUGIN_COLLECTIVE_SEND, {0, 10}), 4 * kLatency + stream,
              stream * kRelative);
  EXPECT_NEAR(time_ns(torus, PHX_PLUGIN_COLLECTIVE_SEND, {10, 0}), 4 * kLatency + stream,
              stream * kRelative);
  const Pod cube = pod({2, 2, 2}, 100);
  EXPECT_EQ(time_ns(cube, PHX_PLUGIN_COLLECTIVE_SEND, {0, 7}, 0), 3 * kLatency);
  EXPECT_LT(time_ns(cube, PHX_PLUGIN_COLLECTIVE_SEND, {0, 1}),
            time_ns(cube, PHX_PLUGIN_COLLECTIVE_SEND, {0, 7}));
}

// Chips that are a whole axis or plane of the pod, in any rank order, run its rings; any
// other set runs one ring through the chips in rank order, each step as slow as the
// farthest pair.
TEST(IciModel, SubsetsRunTheirAxesOrARankOrderRing) {
  const double w = 50.0;
  const Pod torus = pod({4, 4}, w);
  const double row = 2.0 * 3 / 4 * kBytes / (2 * w) + 2 * 2 * kLatency;  // the x ring of 4
  EXPECT_NEAR(time_ns(torus, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, {4, 5, 6, 7}), row, row * kRelative);
  EXPECT_NEAR(time_ns(torus, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, {7, 5, 4, 6}), row, row * kRelative);
  EXPECT_NEAR(time_ns(torus, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, {1, 5, 9, 13}), row,
              row * kRelative);  // a y column

  // A plane of the cube: two axes of one link. Parts of V/2: (1/2) (V/2) (1 + 1/2).
  const Pod cube = pod({2, 2, 2}, 100);
  const double plane = 2 * (0.75 * kBytes / 2 / 100) + 2 * 2 * kLatency;
  EXPECT_NEAR(time_ns(cube, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, {4, 5, 6, 7}), plane,
              plane * kRelative);

  // Three chips of the cube: (0,0,0) -> (1,0,0) -> (0,1,0) -> back, the middle pair two
  // hops apart. A unidirectional ring: 2 (m - 1) steps of V / m at one link's bandwidth.
  const double step = 2 * kLatency + kBytes / 3 / 100;
  EXPECT_NEAR(time_ns(cube, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, {0, 1, 2}), 2 * 2 * step,
              step * kRelative);
  EXPECT_NEAR(time_ns(cube, PHX_PLUGIN_COLLECTIVE_ALL_GATHER, {0, 1, 2}), 2 * step,
              step * kRelative);
  // Half a row of the torus is no whole axis: neighbours, but no wraparound among them.
  const double half_row = 2 * (kLatency + kBytes / 2 / w);
  EXPECT_NEAR(time_ns(torus, PHX_PLUGIN_COLLECTIVE_ALL_REDUCE, {0, 1}), half_row,
              half_row * kRelative);
}

TEST(IciModel, AnUnknownCollectiveHasNoModel) {
  const Pod cube = pod({2, 2, 2}, 100);
  const std::vector<uint32_t> all = every_chip(cube);
  EXPECT_FALSE(collective_time_ns(cube, static_cast<phx_plugin_collective>(99), all, 1024));
}

}  // namespace
}  // namespace phx::tpu_sim
