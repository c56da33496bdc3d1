#include "config.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "generations.h"

namespace phx::tpu_sim {
namespace {

constexpr const char* kKnownKeys[] = {
    "generation",
    "chips",
    "hbm_bytes",
    "memory_fraction",
    "timing",
    "precision",
    "compile_cache_size",
    "launch_overhead_ns",
    "hbm_bandwidth_gbps",
    "mxu_count",
    "mxu_size",
    "clock_ghz",
};

bool is_known_key(std::string_view key) {
  for (const char* known : kKnownKeys)
    if (key == known) return true;
  return false;
}

std::string known_keys_text() {
  std::string text;
  for (const char* known : kKnownKeys) text += (text.empty() ? "" : ", ") + std::string(known);
  return text;
}

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// A value and where it was set ("PHX_TPU_SIM", "tpu-sim.conf:3"), for messages.
struct Setting {
  std::string value;
  std::string origin;
};
using Settings = std::map<std::string, Setting, std::less<>>;

bool add_setting(Settings& settings, std::string_view key, std::string_view value,
                 const std::string& origin, std::string& error) {
  if (!is_known_key(key)) {
    error = "unknown key '" + std::string(key) + "' in " + origin +
            " (known keys: " + known_keys_text() + ")";
    return false;
  }
  settings[std::string(key)] = {std::string(value), origin};
  return true;
}

bool parse_file(const ConfigSources& src, Settings& settings, std::string& error) {
  std::istringstream lines(src.file_text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::string_view text = line;
    text = trim(text.substr(0, text.find('#')));
    if (text.empty()) continue;
    const std::string origin = src.file_path + ":" + std::to_string(number);
    const auto eq = text.find('=');
    const std::string_view key = eq == std::string_view::npos ? text : trim(text.substr(0, eq));
    if (eq == std::string_view::npos || key.empty()) {
      error = "malformed line " + origin + ": '" + std::string(text) + "' (expected 'key = value')";
      return false;
    }
    if (!add_setting(settings, key, trim(text.substr(eq + 1)), origin, error)) return false;
  }
  return true;
}

bool parse_env(const std::string& env, Settings& settings, std::string& error) {
  std::string_view rest = env;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const std::string_view key = eq == std::string_view::npos ? item : trim(item.substr(0, eq));
    if (eq == std::string_view::npos || key.empty()) {
      error = "malformed entry '" + std::string(item) + "' in PHX_TPU_SIM (expected key=value)";
      return false;
    }
    if (!add_setting(settings, key, trim(item.substr(eq + 1)), "PHX_TPU_SIM", error)) return false;
  }
  return true;
}

// Reads the settings into typed values; each reader names the key when a value is bad.
class Reader {
 public:
  Reader(const Settings& settings, std::string& error) : settings_(settings), error_(error) {}

  // An integer in [lo, hi]; target is left alone when the key is absent.
  template <class T>
  bool integer(const char* key, uint64_t lo, uint64_t hi, const char* range, T& target) {
    auto it = settings_.find(key);
    if (it == settings_.end()) return true;
    const std::string& v = it->second.value;
    uint64_t parsed = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
    if (ec != std::errc{} || end != v.data() + v.size() || parsed < lo || parsed > hi)
      return fail(it, std::string("an integer ") + range);
    target = static_cast<T>(parsed);
    return true;
  }

  // A finite number in (lo, hi] (or [lo, hi] when lo_inclusive).
  bool number(const char* key, double lo, bool lo_inclusive, double hi, const char* range,
              double& target) {
    auto it = settings_.find(key);
    if (it == settings_.end()) return true;
    const std::string& v = it->second.value;
    char* end = nullptr;
    const double parsed = v.empty() ? NAN : std::strtod(v.c_str(), &end);
    const bool above_lo = lo_inclusive ? parsed >= lo : parsed > lo;
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(parsed) || !above_lo ||
        parsed > hi)
      return fail(it, std::string("a number ") + range);
    target = parsed;
    return true;
  }

  // One of two words.
  template <class T>
  bool choice(const char* key, const char* first, T first_value, const char* second, T second_value,
              T& target) {
    auto it = settings_.find(key);
    if (it == settings_.end()) return true;
    if (it->second.value == first) {
      target = first_value;
    } else if (it->second.value == second) {
      target = second_value;
    } else {
      return fail(it, std::string(first) + " or " + second);
    }
    return true;
  }

  bool fail(Settings::const_iterator it, const std::string& expected) {
    error_ = "bad value for key '" + it->first + "' in " + it->second.origin + ": '" +
             it->second.value + "' (expected " + expected + ")";
    return false;
  }

  const Setting* find(const char* key) const {
    auto it = settings_.find(key);
    return it == settings_.end() ? nullptr : &it->second;
  }

 private:
  const Settings& settings_;
  std::string& error_;
};

bool apply_settings(const Settings& settings, SimConfig& cfg, std::string& error) {
  Reader r(settings, error);
  // The generation first: the per-figure overrides apply on top of its figures.
  const ChipFigures* figures = find_generation("v5e");
  if (const Setting* g = r.find("generation")) {
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
      r.integer("chips", 1, 64, "in [1, 64]", cfg.chips) &&
      r.integer("hbm_bytes", 1, uint64_t{1} << 50, "of bytes in [1, 2^50]", chip.hbm_bytes) &&
      r.number("memory_fraction", 0.0, false, 1.0, "in (0, 1]", cfg.memory_fraction) &&
      r.choice("timing", "overlap", TimingMode::kOverlap, "scalesim", TimingMode::kScaleSim,
               cfg.timing) &&
      r.choice("precision", "bf16", Precision::kBf16, "highest", Precision::kHighest,
               cfg.precision) &&
      r.integer("compile_cache_size", 1, 1u << 20, "in [1, 2^20]", cfg.compile_cache_size) &&
      r.number("launch_overhead_ns", 0.0, true, 1e12, "of ns in [0, 1e12]",
               cfg.launch_overhead_ns) &&
      r.number("hbm_bandwidth_gbps", 0.0, false, 1e7, "of GB/s in (0, 1e7]",
               chip.hbm_bandwidth_gbps) &&
      r.integer("mxu_count", 1, 1024, "in [1, 1024]", chip.mxu_count) &&
      r.integer("mxu_size", 8, 256, "in [8, 256]", chip.mxu_size) &&
      r.number("clock_ghz", 0.0, false, 100.0, "of GHz in (0, 100]", chip.clock_ghz);
  if (!ok) return false;
  if (cfg.usable_hbm_bytes() == 0) {
    error = "bad value for key 'memory_fraction': leaves no HBM (" +
            std::to_string(chip.hbm_bytes) + " bytes x " + std::to_string(cfg.memory_fraction) +
            ")";
    return false;
  }
  return true;
}

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream contents;
  contents << in.rdbuf();
  text = contents.str();
  return !in.bad();
}

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

}  // namespace

double ChipConfig::peak_bf16_tflops() const {
  return 2.0 * double(mxu_count) * mxu_size * mxu_size * clock_ghz / 1e3;
}

uint64_t SimConfig::usable_hbm_bytes() const {
  return static_cast<uint64_t>(std::floor(double(chip.hbm_bytes) * memory_fraction));
}

bool parse_config(const ConfigSources& sources, SimConfig& out, std::string& error) {
  Settings settings;
  if (!parse_file(sources, settings, error) || !parse_env(sources.env_text, settings, error))
    return false;
  SimConfig cfg;
  if (!apply_settings(settings, cfg, error)) return false;
  out = cfg;
  return true;
}

bool read_config_sources(ConfigSources& out, std::string& error) {
  ConfigSources src;
  if (const char* env = std::getenv("PHX_TPU_SIM")) src.env_text = env;
  if (const char* named = std::getenv("PHX_TPU_SIM_CONFIG"); named != nullptr && *named != '\0') {
    src.file_path = named;
    if (!read_file(src.file_path, src.file_text)) {
      error = "cannot read the config file PHX_TPU_SIM_CONFIG names: '" + src.file_path + "'";
      return false;
    }
  } else {
    // XDG's default for XDG_CONFIG_HOME is ~/.config.
    std::string path;
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0')
      path = std::string(xdg) + "/phynexus/tpu-sim.conf";
    else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
      path = std::string(home) + "/.config/phynexus/tpu-sim.conf";
    if (!path.empty() && file_exists(path)) {
      src.file_path = path;
      if (!read_file(path, src.file_text)) {
        error = "cannot read the config file '" + path + "'";
        return false;
      }
    }
  }
  out = std::move(src);
  return true;
}

}  // namespace phx::tpu_sim
