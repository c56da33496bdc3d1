// The simulator's configuration: which chip, how many, and the model's modes, from a
// config file and PHX_TPU_SIM (docs/tpu-sim.md, "Configuration").
#pragma once

#include <phynexus/phynexus.h>

#include <cstdint>
#include <string>

#include "config_sources.h"
#include "ici_model.h"
#include "mxu_model.h"

namespace phx::tpu_sim {

// The precision of matmul, conv2d and conv_transpose2d on f32 inputs, as JAX names it
// (jax.lax.Precision). bf16 inputs take one bf16 pass whatever the precision: their low
// parts are zero.
enum class Precision {
  kDefault,  // one bf16 pass: the inputs rounded to bf16, products accumulated in f32
  kHigh,     // three bf16 passes (bf16x3): a = a_hi + a_lo, hi*lo + lo*hi + hi*hi
  kHighest,  // f32 products; charged six bf16 passes, as XLA computes it on a TPU
};

// The MXU passes one product of inputs of dtype takes under precision: 1, 3 or 6.
uint32_t mxu_passes(Precision precision, phx_dtype dtype);

// One chip: its generation's figures with the overrides applied.
struct ChipConfig {
  std::string generation;
  uint64_t hbm_bytes = 0;
  double hbm_bandwidth_gbps = 0;  // 10^9 bytes per second
  uint32_t mxu_count = 0;
  uint32_t mxu_size = 0;
  uint32_t tensor_cores = 0;
  double clock_ghz = 0;
  std::string source;
  std::string ici_source;  // where the interconnect's figures come from

  // 2 flops per MAC, MXUs * R * C MACs per cycle.
  double peak_bf16_tflops() const;
};

struct SimConfig {
  ChipConfig chip;
  uint32_t chips = 1;
  Pod pod;  // the chips' torus (topology) and its links
  double memory_fraction = 1.0;
  TimingMode timing = TimingMode::kOverlap;
  Precision precision = Precision::kDefault;
  bool flush_subnormals = true;  // as the hardware does; false keeps them (subnormals=keep)
  uint32_t compile_cache_size = 256;
  double launch_overhead_ns = 1000.0;

  // The HBM tensors may use: capacity * memory_fraction.
  uint64_t usable_hbm_bytes() const;
};

// The settings as text. The file's entries come first; PHX_TPU_SIM's win over them.
using plugin_common::ConfigSources;

// Builds the configuration from the defaults (v5e, 1 chip) and sources. On failure
// returns false with error naming the bad key (or the malformed line and its file).
bool parse_config(const ConfigSources& sources, SimConfig& out, std::string& error);

// Collects the sources: PHX_TPU_SIM; the file PHX_TPU_SIM_CONFIG names (which must
// exist), else $XDG_CONFIG_HOME/phynexus/tpu-sim.conf or ~/.config/phynexus/tpu-sim.conf
// when present. False with error when a named file cannot be read.
bool read_config_sources(ConfigSources& out, std::string& error);

}  // namespace phx::tpu_sim
