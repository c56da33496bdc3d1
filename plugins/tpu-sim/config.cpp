#include "config.h"

#include <cmath>

#include "generations.h"
#include "settings.h"

namespace phx::tpu_sim {
namespace {

using plugin_common::Settings;

// An integer in [lo, hi]; target is left alone when the key is absent. range says so in
// the error ("in [1, 64]").
template <class T>
bool read_integer(const Settings& s, const char* key, uint64_t lo, uint64_t hi, const char* range,
                  T& target, std::string& error) {
  uint64_t value = target;
  if (!s.read_integer(key, lo, hi, range, value, error)) return false;
  target = static_cast<T>(value);
  return true;
}

// One of two words.
template <class T>
bool read_choice(const Settings& s, const char* key, const char* first, T first_value,
                 const char* second, T second_value, T& target, std::string& error) {
  const Settings::Entry* e = s.find(key);
  if (e == nullptr) return true;
  if (e->value == first) {
    target = first_value;
  } else if (e->value == second) {
    target = second_value;
  } else {
    error = Settings::bad_value(*e, std::string(first) + " or " + second);
    return false;
  }
  return true;
}

// default, high or highest; bf16 (the name before 0.2) is default.
bool read_precision(const Settings& s, Precision& target, std::string& error) {
  const Settings::Entry* e = s.find("precision");
  if (e == nullptr) return true;
  if (e->value == "default" || e->value == "bf16") {
    target = Precision::kDefault;
  } else if (e->value == "high") {
    target = Precision::kHigh;
  } else if (e->value == "highest") {
    target = Precision::kHighest;
  } else {
    error = Settings::bad_value(*e, "default, high or highest");
    return false;
  }
  return true;
}

bool apply_settings(const Settings& s, SimConfig& cfg, std::string& error) {
  // The generation first: the per-figure overrides apply on top of its figures.
  const ChipFigures* figures = find_generation("v5e");
  if (const Settings::Entry* g = s.find("generation")) {
    figures = find_generation(g->value);
    if (figures == nullptr) {
      error = "bad value for key 'generation' in " + g->origin + ": unknown generation '" +
              g->value + "' (known: " + known_generations() + ")";
      return false;
    }
  }
  ChipConfig& chip = cfg.chip;
  chip.generation = figures->generation;
  chip.hbm_bytes = figures->hbm_bytes;
  chip.hbm_bandwidth_gbps = figures->hbm_bandwidth_gbps;
  chip.mxu_count = figures->mxu_count;
  chip.mxu_size = figures->mxu_size;
  chip.tensor_cores = figures->tensor_cores;
  chip.clock_ghz = derived_clock_ghz(*figures);
  chip.source = figures->source;

  const bool ok =
      read_integer(s, "chips", 1, 64, "in [1, 64]", cfg.chips, error) &&
      s.read_integer("hbm_bytes", 1, uint64_t{1} << 50, "of bytes in [1, 2^50]", chip.hbm_bytes,
                     error) &&
      s.read_number("memory_fraction", 0.0, 1.0, false, "in (0, 1]", cfg.memory_fraction, error) &&
      read_choice(s, "timing", "overlap", TimingMode::kOverlap, "scalesim", TimingMode::kScaleSim,
                  cfg.timing, error) &&
      read_precision(s, cfg.precision, error) &&
      read_choice(s, "subnormals", "flush", true, "keep", false, cfg.flush_subnormals, error) &&
      read_integer(s, "compile_cache_size", 1, 1u << 20, "in [1, 2^20]", cfg.compile_cache_size,
                   error) &&
      s.read_number("launch_overhead_ns", 0.0, 1e12, true, "of ns in [0, 1e12]",
                    cfg.launch_overhead_ns, error) &&
      s.read_number("hbm_bandwidth_gbps", 0.0, 1e7, false, "of GB/s in (0, 1e7]",
                    chip.hbm_bandwidth_gbps, error) &&
      read_integer(s, "mxu_count", 1, 1024, "in [1, 1024]", chip.mxu_count, error) &&
      read_integer(s, "mxu_size", 8, 256, "in [8, 256]", chip.mxu_size, error) &&
      s.read_number("clock_ghz", 0.0, 100.0, false, "of GHz in (0, 100]", chip.clock_ghz, error);
  if (!ok) return false;
  if (cfg.usable_hbm_bytes() == 0) {
    error = "bad value for key 'memory_fraction': leaves no HBM (" +
            std::to_string(chip.hbm_bytes) + " bytes x " + std::to_string(cfg.memory_fraction) +
            ")";
    return false;
  }
  return true;
}

}  // namespace

uint32_t mxu_passes(Precision precision, phx_dtype dtype) {
  if (dtype == PHX_DTYPE_BF16) return 1;
  switch (precision) {
    case Precision::kHigh:
      return 3;
    case Precision::kHighest:
      return 6;
    default:
      return 1;
  }
}

double ChipConfig::peak_bf16_tflops() const {
  return 2.0 * double(mxu_count) * mxu_size * mxu_size * clock_ghz / 1e3;
}

uint64_t SimConfig::usable_hbm_bytes() const {
  return static_cast<uint64_t>(std::floor(double(chip.hbm_bytes) * memory_fraction));
}

bool parse_config(const ConfigSources& sources, SimConfig& out, std::string& error) {
  Settings settings({"generation", "chips", "hbm_bytes", "memory_fraction", "timing", "precision",
                     "subnormals", "compile_cache_size", "launch_overhead_ns", "hbm_bandwidth_gbps",
                     "mxu_count", "mxu_size", "clock_ghz"});
  if (!settings.add_file(sources.file_path, sources.file_text, error) ||
      !settings.add_list("PHX_TPU_SIM", sources.env_text, error))
    return false;
  SimConfig cfg;
  if (!apply_settings(settings, cfg, error)) return false;
  out = cfg;
  return true;
}

bool read_config_sources(ConfigSources& out, std::string& error) {
  return plugin_common::read_config_sources({"PHX_TPU_SIM", "PHX_TPU_SIM_CONFIG", "tpu-sim.conf"},
                                            out, error);
}

}  // namespace phx::tpu_sim
