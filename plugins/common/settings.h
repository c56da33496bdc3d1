// Settings as "key = value" text, from a config file and from an environment variable
// ("key=value,key=value"), later sources winning. Every value remembers where it was set
// (a file and line, or the variable's name), so that an error names the key and its
// origin. Only keys the owner lists are accepted: a typo is an error, not a default.
// Free of plugin types: the configuration tests use it directly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace phx::plugin_common {

class Settings {
 public:
  struct Entry {
    std::string key;
    std::string value;
    std::string origin;  // "npu-sim.conf:3" or "PHX_NPU_SIM"
  };

  explicit Settings(std::vector<std::string> known_keys);

  // Adds the "key = value" lines of a file; '#' starts a comment. False with error
  // naming the file and line when a line is malformed or its key unknown.
  bool add_file(const std::string& path, const std::string& text, std::string& error);

  // Adds comma-separated "key=value" items; origin names where they came from.
  bool add_list(const std::string& origin, const std::string& text, std::string& error);

  // The entry of key, or null when no source set it.
  const Entry* find(std::string_view key) const;

  // The typed readers leave target alone when the key is absent; on a bad value they
  // return false with error naming the key, its origin, the value and what was expected:
  // "an integer " or "a number " followed by range, by default "in [lo, hi]" (a caller
  // passes its own to name the unit or write a bound readably: "of bytes in [1, 2^50]").
  bool read_integer(std::string_view key, uint64_t lo, uint64_t hi, uint64_t& target,
                    std::string& error) const;
  bool read_integer(std::string_view key, uint64_t lo, uint64_t hi, const std::string& range,
                    uint64_t& target, std::string& error) const;
  bool read_number(std::string_view key, double lo, double hi, bool lo_inclusive, double& target,
                   std::string& error) const;
  bool read_number(std::string_view key, double lo, double hi, bool lo_inclusive,
                   const std::string& range, double& target, std::string& error) const;
  // "0", "1", "off", "on", "false", "true".
  bool read_flag(std::string_view key, bool& target, std::string& error) const;

  static std::string bad_value(const Entry& entry, const std::string& expected);

 private:
  bool add(std::string_view key, std::string_view value, const std::string& origin,
           std::string& error);

  std::vector<std::string> known_keys_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace phx::plugin_common
