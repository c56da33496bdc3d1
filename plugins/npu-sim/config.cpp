#include "config.h"

#include "settings.h"

namespace phx::npu_sim {
namespace {

using plugin_common::Settings;

constexpr uint64_t kMaxBytes = uint64_t{1} << 50;

DeviceFigures figures_of(const Profile& p) {
  DeviceFigures f;
  f.profile = &p;
  f.sram_bytes = p.sram_bytes;
  f.dram_bytes = p.dram_bytes;
  f.dram_bandwidth_gbps = p.dram_bandwidth_gbps;
  f.int8_macs_per_cycle = p.int8_macs_per_cycle;
  f.int16_macs_per_cycle = p.int16_macs_per_cycle;
  f.fp16_macs_per_cycle = p.fp16_macs_per_cycle;
  f.vector_lanes = p.vector_lanes;
  f.clock_ghz = p.clock_ghz;
  f.op_overhead_ns = p.op_overhead_ns;
  return f;
}

// The MAC-array overrides: 0 is allowed for int16 and fp16 ("none"), not for int8.
bool read_macs(const Settings& s, std::string_view key, uint64_t lo, uint32_t& target,
               std::string& error) {
  uint64_t value = target;
  if (!s.read_integer(key, lo, uint64_t{1} << 24, value, error)) return false;
  target = static_cast<uint32_t>(value);
  return true;
}

bool apply(const Settings& s, NpuConfig& cfg, std::string& error) {
  // The profile first: the per-figure overrides apply on top of its figures.
  const Profile* profile = find_profile("mobile");
  if (const Settings::Entry* e = s.find("profile")) {
    profile = find_profile(e->value);
    if (profile == nullptr) {
      error = Settings::bad_value(*e, std::string("a profile: ") + known_profiles());
      return false;
    }
  }
  DeviceFigures& f = cfg.figures;
  f = figures_of(*profile);
  uint64_t devices = cfg.devices;
  const bool ok =
      s.read_integer("devices", 1, 16, devices, error) &&
      s.read_integer("dram_bytes", 1, kMaxBytes, f.dram_bytes, error) &&
      s.read_integer("sram_bytes", 1, kMaxBytes, f.sram_bytes, error) &&
      s.read_integer("memory_limit", 1, kMaxBytes, cfg.memory_limit, error) &&
      s.read_flag("memory_optimization", cfg.memory_optimization, error) &&
      s.read_number("dram_bandwidth_gbps", 0.0, 1e6, false, f.dram_bandwidth_gbps, error) &&
      s.read_number("clock_ghz", 0.0, 100.0, false, f.clock_ghz, error) &&
      s.read_number("op_overhead_ns", 0.0, 1e12, true, f.op_overhead_ns, error) &&
      read_macs(s, "int8_macs_per_cycle", 1, f.int8_macs_per_cycle, error) &&
      read_macs(s, "int16_macs_per_cycle", 0, f.int16_macs_per_cycle, error) &&
      read_macs(s, "fp16_macs_per_cycle", 0, f.fp16_macs_per_cycle, error);
  if (!ok) return false;
  cfg.devices = static_cast<uint32_t>(devices);
  if (cfg.memory_limit > f.dram_bytes) {
    error =
        Settings::bad_value(*s.find("memory_limit"), "at most the DRAM capacity, " +
                                                         std::to_string(f.dram_bytes) + " bytes");
    return false;
  }
  return true;
}

}  // namespace

bool parse_config(const ConfigSources& sources, NpuConfig& out, std::string& error) {
  Settings settings({"profile", "devices", "dram_bytes", "sram_bytes", "memory_limit",
                     "memory_optimization", "dram_bandwidth_gbps", "clock_ghz", "op_overhead_ns",
                     "int8_macs_per_cycle", "int16_macs_per_cycle", "fp16_macs_per_cycle"});
  if (!sources.file_path.empty() && !settings.add_file(sources.file_path, sources.file_text, error))
    return false;
  if (!settings.add_list("PHX_NPU_SIM", sources.env_text, error)) return false;
  NpuConfig cfg;
  if (!apply(settings, cfg, error)) return false;
  out = cfg;
  return true;
}

bool read_config_sources(ConfigSources& out, std::string& error) {
  return plugin_common::read_config_sources({"PHX_NPU_SIM", "PHX_NPU_SIM_CONFIG", "npu-sim.conf"},
                                            out, error);
}

}  // namespace phx::npu_sim
