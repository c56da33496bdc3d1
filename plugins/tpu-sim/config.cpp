#include "config.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

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

// The most cube-like torus of chips in axes dimensions: the factorisation whose largest
// axis is smallest, then whose smallest is largest, written ascending as Google writes
// slices (8 chips: 2x2x2 in 3D, 2x4 in 2D; 6: 1x2x3; 7: 1x1x7).
std::vector<uint32_t> default_topology(uint32_t chips, size_t axes) {
  std::vector<uint32_t> best;
  auto consider = [&](std::vector<uint32_t> dims) {
    if (best.empty() || dims.back() < best.back() ||
        (dims.back() == best.back() && dims.front() > best.front()))
      best = std::move(dims);
  };
  for (uint32_t a = 1; a * a <= chips; ++a) {
    if (chips % a != 0) continue;
    if (axes == 2) {
      consider({a, chips / a});
      continue;
    }
    for (uint32_t b = a; a * b * b <= chips; ++b)
      if ((chips / a) % b == 0) consider({a, b, chips / a / b});
  }
  return best;
}

// topology: AxB or AxBxC, each axis in [1, 64], their product the chip count, no more
// axes than the generation's torus (fewer are padded with axes of 1); absent, the default
// above.
bool read_topology(const Settings& s, uint32_t chips, const ChipFigures& figures,
                   std::vector<uint32_t>& dims, std::string& error) {
  const Settings::Entry* e = s.find("topology");
  if (e == nullptr) {
    dims = default_topology(chips, figures.torus_dims);
    return true;
  }
  dims.clear();
  for (size_t begin = 0; begin <= e->value.size();) {
    const size_t end = std::min(e->value.find('x', begin), e->value.size());
    const std::string axis = e->value.substr(begin, end - begin);
    const bool digits = !axis.empty() && axis.size() <= 2 &&
                        axis.find_first_not_of("0123456789") == std::string::npos;
    const unsigned long n = digits ? std::stoul(axis) : 0;
    if (n < 1 || n > 64 || dims.size() == 3) {
      error = Settings::bad_value(*e, "AxB or AxBxC, each axis an integer in [1, 64]");
      return false;
    }
    dims.push_back(static_cast<uint32_t>(n));
    begin = end + 1;
  }
  if (dims.size() < 2) {
    error = Settings::bad_value(*e, "AxB or AxBxC, each axis an integer in [1, 64]");
    return false;
  }
  uint64_t product = 1;
  for (uint32_t n : dims) product *= n;
  if (product != chips) {
    error = "bad value for key 'topology' in " + e->origin + ": '" + e->value + "' is " +
            std::to_string(product) + " chips, but key 'chips' is " + std::to_string(chips) +
            " (the topology's product must equal chips)";
    return false;
  }
  if (dims.size() > figures.torus_dims) {
    error = "bad value for key 'topology' in " + e->origin + ": '" + e->value + "' has " +
            std::to_string(dims.size()) + " axes, but " + figures.generation + "'s torus has " +
            std::to_string(figures.torus_dims);
    return false;
  }
  dims.resize(figures.torus_dims, 1);
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
  chip.ici_source = figures->ici_source;
  cfg.pod.link_gbps = figures->ici_link_gbps;
  cfg.pod.hop_latency_ns = figures->ici_latency_ns;

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
      s.read_number("clock_ghz", 0.0, 100.0, false, "of GHz in (0, 100]", chip.clock_ghz, error) &&
      read_topology(s, cfg.chips, *figures, cfg.pod.dims, error) &&
      s.read_number("ici_link_gbps", 0.0, 1e7, false, "of GB/s in (0, 1e7]", cfg.pod.link_gbps,
                    error) &&
      s.read_number("ici_latency_ns", 0.0, 1e12, true, "of ns in [0, 1e12]", cfg.pod.hop_latency_ns,
                    error);
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
                     "mxu_count", "mxu_size", "clock_ghz", "topology", "ici_link_gbps",
                     "ici_latency_ns"});
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
