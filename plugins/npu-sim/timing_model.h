// The NPU timing model: what an op costs in MAC-array cycles, in DRAM traffic, and in
// time (docs/npu-sim.md, "Timing model"). Pure arithmetic: no plugin, no tensors, so it
// is tested on its own against hand-worked numbers.
//
// GEMM-like ops (qmatmul, qconv2d, f16 matmul, conv2d and conv_transpose2d) are
// C[M x N] = A[M x K] . W[K x N]:
//   compute: cycles = ceil(M*N*K*batch / MACs per cycle at the op's rate)
//   DRAM:    half the on-chip SRAM holds the stationary operand, the other half the
//            streamed tiles and the accumulators. When A or W fits in half the SRAM, every
//            tensor crosses DRAM once. Otherwise the op is tiled: W in ceil(W / (S/2))
//            tiles with A re-read for each, or A in tiles with W re-read for each,
//            whichever moves fewer bytes. The output is written once (the accumulators
//            stay on chip until a tile is done); scales, zero points and bias read once.
// Attention is its two products (scores = Q . K^T, out = P . V) on the MAC array and the
// softmax of the scores on the vector unit, one after the other; the scores stay on chip
// (the compiler tiles them, as flash attention does), so DRAM sees q, k, v and out once.
// Other ops stream through the vector unit, whose lanes are 8 bits wide (a 16-bit
// element takes two, a 32-bit one four, as in a SIMD register of fixed width):
//   compute: cycles = ceil(elements * operations per element * lanes per element / lanes)
//   DRAM:    inputs read once (passes times when the input does not fit in the SRAM and
//            the op must see all of it first, as dynamic quantization's min/max) plus
//            outputs written once.
// Both: time = cycles / clock and bytes / bandwidth; estimated time = max(compute time,
// memory time) + the per-op overhead; memory-bound when memory time > compute time.
#pragma once

#include <cstdint>

namespace phx::npu_sim {

enum class MacRate { kInt8, kInt16, kFp16 };

struct Machine {
  uint64_t sram_bytes = 0;
  double dram_bandwidth_gbps = 0;  // 10^9 bytes per second: bytes per ns
  uint32_t int8_macs_per_cycle = 0;
  uint32_t int16_macs_per_cycle = 0;
  uint32_t fp16_macs_per_cycle = 0;
  uint32_t vector_lanes = 0;
  double clock_ghz = 0;  // cycles per ns
  double op_overhead_ns = 0;

  // MACs per cycle at rate; 0 when the machine has no such array.
  uint32_t macs_per_cycle(MacRate rate) const;
};

struct GemmWork {
  uint64_t m = 0, n = 0, k = 0;
  uint64_t batch = 1;  // independent products of this shape (batch dims, conv groups)
  MacRate rate = MacRate::kInt8;
  uint64_t activation_bytes = 0;  // A as stored (conv2d: the input image, not im2col'd)
  uint64_t weight_bytes = 0;      // W
  uint64_t output_bytes = 0;
  uint64_t other_bytes = 0;  // scales, zero points, bias
};

struct StreamWork {
  uint64_t elements = 0;  // of the op's largest tensor
  uint32_t ops_per_element = 1;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
  uint32_t input_passes = 1;   // reads of the input when it does not fit in the SRAM
  uint32_t element_bytes = 1;  // 8-bit lanes per element: the width the op computes in
};

struct AttentionWork {
  GemmWork scores;          // Q . K^T: M = Sq, N = Skv, K = D; batch = B * H
  GemmWork values;          // P . V: M = Sq, N = Dv, K = Skv; batch = B * H
  StreamWork softmax;       // over the B * H * Sq * Skv scores (its bytes unused: on chip)
  uint64_t dram_bytes = 0;  // q, k, v read and out written, once each
};

struct Estimate {
  uint64_t macs = 0;
  uint64_t cycles = 0;
  uint64_t dram_bytes = 0;
  uint64_t tiles = 1;  // tiles of the tiled operand (1: nothing re-read)
  double compute_ns = 0;
  double memory_ns = 0;
  double estimated_ns = 0;
  bool memory_bound = false;
};

Estimate estimate_gemm(const GemmWork& work, const Machine& machine);
Estimate estimate_stream(const StreamWork& work, const Machine& machine);
Estimate estimate_attention(const AttentionWork& work, const Machine& machine);

}  // namespace phx::npu_sim
