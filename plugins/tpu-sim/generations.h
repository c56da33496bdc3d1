// The TPU generations the simulator knows, with the public per-chip figures
// (docs/tpu-sim.md lists the sources and the assumptions where Google publishes none).
// Unit: GB = 10^9 bytes everywhere, as Google writes it.
#pragma once

#include <cstdint>
#include <string_view>

namespace phx::tpu_sim {

struct ChipFigures {
  const char* generation;     // "v5e"
  uint64_t hbm_bytes;         // the default capacity
  double hbm_bandwidth_gbps;  // 10^9 bytes per second
  double peak_bf16_tflops;    // as published; the clock is derived from it
  uint32_t mxu_count;
  uint32_t mxu_size;      // the MXU is mxu_size x mxu_size
  uint32_t tensor_cores;  // each has one vector unit (VPU)
  const char* source;
  // The inter-chip interconnect (docs/tpu-sim.md, "Pods"): a torus of torus_dims axes,
  // each chip linked to its two neighbours along every axis.
  uint32_t torus_dims;    // 2 or 3
  double ici_link_gbps;   // one way, per link, 10^9 bytes per second
  double ici_latency_ns;  // per hop
  const char* ici_source;
};

// The figures of a generation ("v4", "v5e", "v5p", "v6e", "v7"); null when unknown.
const ChipFigures* find_generation(std::string_view name);

// "v4, v5e, v5p, v6e, v7": for error messages.
const char* known_generations();

// The clock at which mxu_count arrays of mxu_size^2 MACs (2 flops each) give the
// published peak: peak / (2 * MXUs * R * C).
double derived_clock_ghz(const ChipFigures& figures);

}  // namespace phx::tpu_sim
