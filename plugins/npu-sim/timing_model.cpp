#include "timing_model.h"

#include <algorithm>

namespace phx::npu_sim {
namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

// Fills the times from cycles and bytes.
Estimate finish(Estimate e, const Machine& m) {
  e.compute_ns = double(e.cycles) / m.clock_ghz;
  e.memory_ns = double(e.dram_bytes) / m.dram_bandwidth_gbps;
  e.memory_bound = e.memory_ns > e.compute_ns;
  e.estimated_ns = std::max(e.compute_ns, e.memory_ns) + m.op_overhead_ns;
  return e;
}

}  // namespace

uint32_t Machine::macs_per_cycle(MacRate rate) const {
  switch (rate) {
    case MacRate::kInt8:
      return int8_macs_per_cycle;
    case MacRate::kInt16:
      return int16_macs_per_cycle;
    case MacRate::kFp16:
      return fp16_macs_per_cycle;
  }
  return 0;
}

Estimate estimate_gemm(const GemmWork& w, const Machine& m) {
  Estimate e;
  e.macs = w.m * w.n * w.k * w.batch;
  e.cycles = ceil_div(e.macs, m.macs_per_cycle(w.rate));
  const uint64_t half = m.sram_bytes / 2;
  const uint64_t a = w.activation_bytes, b = w.weight_bytes;
  uint64_t operands = a + b;
  if (std::min(a, b) > half) {
    // Neither fits: tile one operand, re-read the other once per tile.
    const uint64_t weight_tiles = ceil_div(b, half), activation_tiles = ceil_div(a, half);
    const uint64_t tile_weights = b + weight_tiles * a;
    const uint64_t tile_activations = a + activation_tiles * b;
    e.tiles = tile_weights <= tile_activations ? weight_tiles : activation_tiles;
    operands = std::min(tile_weights, tile_activations);
  }
  e.dram_bytes = operands + w.output_bytes + w.other_bytes;
  return finish(e, m);
}

Estimate estimate_stream(const StreamWork& w, const Machine& m) {
  Estimate e;
  e.cycles = ceil_div(w.elements * w.ops_per_element * w.element_bytes, m.vector_lanes);
  const uint64_t reads = w.input_bytes > m.sram_bytes ? w.input_passes : 1;
  e.dram_bytes = w.input_bytes * reads + w.output_bytes;
  return finish(e, m);
}

Estimate estimate_attention(const AttentionWork& w, const Machine& m) {
  const Estimate scores = estimate_gemm(w.scores, m), values = estimate_gemm(w.values, m);
  Estimate e;
  e.macs = scores.macs + values.macs;
  // The softmax needs every score of a row before P . V can use it: the units alternate.
  e.cycles = scores.cycles + values.cycles + estimate_stream(w.softmax, m).cycles;
  e.dram_bytes = w.dram_bytes;
  return finish(e, m);
}

}  // namespace phx::npu_sim
