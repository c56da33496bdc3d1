// Fuzzes the simulators' configuration parsers and the settings reader under them. The
// input is the config file's text, a NUL byte, then PHX_*_SIM's text (no NUL: all file).
// A parser that fails must say why; one that succeeds must hand back a configuration
// inside the ranges docs/tpu-sim.md and docs/npu-sim.md give.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/settings.h"
#include "npu-sim/config.h"
#include "tpu-sim/config.h"

namespace {

[[noreturn]] void finding(const char* parser, const std::string& what) {
  std::fprintf(stderr, "fuzz_sim_config: %s: %s\n", parser, what.c_str());
  std::abort();
}

void fuzz_tpu_sim(const phx::plugin_common::ConfigSources& sources) {
  phx::tpu_sim::SimConfig config;
  std::string error;
  if (!phx::tpu_sim::parse_config(sources, config, error)) {
    if (error.empty()) finding("tpu_sim::parse_config", "failed without an error");
    return;
  }
  if (config.chips < 1 || config.chips > 64 || config.usable_hbm_bytes() == 0 ||
      config.chip.mxu_count < 1 || config.chip.mxu_size < 8 || !(config.chip.clock_ghz > 0))
    finding("tpu_sim::parse_config", "accepted a configuration out of range");
}

void fuzz_npu_sim(const phx::plugin_common::ConfigSources& sources) {
  phx::npu_sim::NpuConfig config;
  std::string error;
  if (!phx::npu_sim::parse_config(sources, config, error)) {
    if (error.empty()) finding("npu_sim::parse_config", "failed without an error");
    return;
  }
  const phx::npu_sim::DeviceFigures& f = config.figures;
  if (f.profile == nullptr || config.devices < 1 || config.devices > 16 ||
      config.memory_limit > f.dram_bytes || f.int8_macs_per_cycle < 1 || !(f.clock_ghz > 0))
    finding("npu_sim::parse_config", "accepted a configuration out of range");
}

// The typed readers on whatever keys the sources set, each within a range of its own.
void fuzz_settings(const phx::plugin_common::ConfigSources& sources) {
  phx::plugin_common::Settings settings({"i", "n", "f"});
  std::string error;
  if (!settings.add_file(sources.file_path, sources.file_text, error) ||
      !settings.add_list("PHX_FUZZ", sources.env_text, error)) {
    if (error.empty()) finding("Settings::add_*", "failed without an error");
    return;
  }
  uint64_t integer = 0;
  if (settings.read_integer("i", 1, 1000, integer, error)) {
    if (settings.find("i") != nullptr && (integer < 1 || integer > 1000))
      finding("Settings::read_integer", "accepted " + std::to_string(integer));
  } else if (error.empty()) {
    finding("Settings::read_integer", "failed without an error");
  }
  error.clear();
  double number = 0;
  if (!settings.read_number("n", 0.0, 1e6, false, number, error) && error.empty())
    finding("Settings::read_number", "failed without an error");
  error.clear();
  bool flag = false;
  if (!settings.read_flag("f", flag, error) && error.empty())
    finding("Settings::read_flag", "failed without an error");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  phx::plugin_common::ConfigSources sources;
  sources.file_path = "fuzz.conf";
  sources.file_text = input.substr(0, split);
  if (split != std::string::npos) sources.env_text = input.substr(split + 1);
  fuzz_tpu_sim(sources);
  fuzz_npu_sim(sources);
  fuzz_settings(sources);
  return 0;
}
