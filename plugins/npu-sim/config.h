// The simulator's configuration: which NPU class, how many devices, their memory and
// the memory optimization, from a config file and PHX_NPU_SIM (docs/npu-sim.md,
// "Configuration").
#pragma once

#include <cstdint>
#include <string>

#include "config_sources.h"
#include "profiles.h"

namespace phx::npu_sim {

// One device: its profile's figures with the overrides applied.
struct DeviceFigures {
  const Profile* profile = nullptr;  // the op set and the description
  uint64_t sram_bytes = 0;
  uint64_t dram_bytes = 0;
  double dram_bandwidth_gbps = 0;
  uint32_t int8_macs_per_cycle = 0;
  uint32_t int16_macs_per_cycle = 0;
  uint32_t fp16_macs_per_cycle = 0;
  uint32_t vector_lanes = 0;
  double clock_ghz = 0;
  double op_overhead_ns = 0;

  // Peak tera-operations per second: 2 per MAC.
  double peak_int8_tops() const { return 2.0 * int8_macs_per_cycle * clock_ghz / 1e3; }
  double peak_int16_tops() const { return 2.0 * int16_macs_per_cycle * clock_ghz / 1e3; }
  double peak_fp16_tflops() const { return 2.0 * fp16_macs_per_cycle * clock_ghz / 1e3; }
};

struct NpuConfig {
  DeviceFigures figures;
  uint32_t devices = 1;
  uint64_t memory_limit = 0;         // the initial limit of each device; 0: the capacity
  bool memory_optimization = false;  // reuse freed buffers (docs/npu-sim.md, "Memory")
};

// The settings as text. The file's entries come first; PHX_NPU_SIM's win over them.
using plugin_common::ConfigSources;

// Builds the configuration from the defaults (one mobile NPU) and sources. On failure
// returns false with error naming the bad key (or the malformed line and its file).
bool parse_config(const ConfigSources& sources, NpuConfig& out, std::string& error);

// Collects the sources: PHX_NPU_SIM; the file PHX_NPU_SIM_CONFIG names (which must
// exist), else $XDG_CONFIG_HOME/phynexus/npu-sim.conf (XDG's default ~/.config) when
// present. False with error when a named file cannot be read.
bool read_config_sources(ConfigSources& out, std::string& error);

}  // namespace phx::npu_sim
