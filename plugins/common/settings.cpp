#include "settings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace phx::plugin_common {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// "key" and "value" of "key = value"; false when there is no '=' or no key.
bool split_pair(std::string_view item, std::string_view& key, std::string_view& value) {
  const auto eq = item.find('=');
  if (eq == std::string_view::npos) return false;
  key = trim(item.substr(0, eq));
  value = trim(item.substr(eq + 1));
  return !key.empty();
}

}  // namespace

Settings::Settings(std::vector<std::string> known_keys) : known_keys_(std::move(known_keys)) {}

bool Settings::add(std::string_view key, std::string_view value, const std::string& origin,
                   std::string& error) {
  if (std::find(known_keys_.begin(), known_keys_.end(), key) == known_keys_.end()) {
    std::string known;
    for (const std::string& k : known_keys_) known += (known.empty() ? "" : ", ") + k;
    error = "unknown key '" + std::string(key) + "' in " + origin + " (known keys: " + known + ")";
    return false;
  }
  entries_[std::string(key)] = {std::string(key), std::string(value), origin};
  return true;
}

bool Settings::add_file(const std::string& path, const std::string& text, std::string& error) {
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string_view content = trim(std::string_view(line).substr(0, line.find('#')));
    if (content.empty()) continue;
    const std::string origin = path + ":" + std::to_string(number);
    std::string_view key, value;
    if (!split_pair(content, key, value)) {
      error =
          "malformed line " + origin + ": '" + std::string(content) + "' (expected 'key = value')";
      return false;
    }
    if (!add(key, value, origin, error)) return false;
  }
  return true;
}

bool Settings::add_list(const std::string& origin, const std::string& text, std::string& error) {
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) continue;
    std::string_view key, value;
    if (!split_pair(item, key, value)) {
      error = "malformed entry '" + std::string(item) + "' in " + origin + " (expected key=value)";
      return false;
    }
    if (!add(key, value, origin, error)) return false;
  }
  return true;
}

const Settings::Entry* Settings::find(std::string_view key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::string Settings::bad_value(const Entry& entry, const std::string& expected) {
  return "bad value for key '" + entry.key + "' in " + entry.origin + ": '" + entry.value +
         "' (expected " + expected + ")";
}

bool Settings::read_integer(std::string_view key, uint64_t lo, uint64_t hi, uint64_t& target,
                            std::string& error) const {
  return read_integer(key, lo, hi, "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
                      target, error);
}

bool Settings::read_integer(std::string_view key, uint64_t lo, uint64_t hi,
                            const std::string& range, uint64_t& target, std::string& error) const {
  const Entry* e = find(key);
  if (e == nullptr) return true;
  uint64_t parsed = 0;
  const char* end = e->value.data() + e->value.size();
  const auto [stop, ec] = std::from_chars(e->value.data(), end, parsed);
  if (ec != std::errc{} || stop != end || parsed < lo || parsed > hi) {
    error = bad_value(*e, "an integer " + range);
    return false;
  }
  target = parsed;
  return true;
}

bool Settings::read_number(std::string_view key, double lo, double hi, bool lo_inclusive,
                           double& target, std::string& error) const {
  std::ostringstream range;
  range << "in " << (lo_inclusive ? "[" : "(") << lo << ", " << hi << "]";
  return read_number(key, lo, hi, lo_inclusive, range.str(), target, error);
}

bool Settings::read_number(std::string_view key, double lo, double hi, bool lo_inclusive,
                           const std::string& range, double& target, std::string& error) const {
  const Entry* e = find(key);
  if (e == nullptr) return true;
  char* stop = nullptr;
  const double parsed = e->value.empty() ? NAN : std::strtod(e->value.c_str(), &stop);
  const bool above_lo = lo_inclusive ? parsed >= lo : parsed > lo;
  if (e->value.empty() || stop != e->value.c_str() + e->value.size() || !std::isfinite(parsed) ||
      !above_lo || parsed > hi) {
    error = bad_value(*e, "a number " + range);
    return false;
  }
  target = parsed;
  return true;
}

bool Settings::read_flag(std::string_view key, bool& target, std::string& error) const {
  const Entry* e = find(key);
  if (e == nullptr) return true;
  if (e->value == "1" || e->value == "on" || e->value == "true") {
    target = true;
  } else if (e->value == "0" || e->value == "off" || e->value == "false") {
    target = false;
  } else {
    error = bad_value(*e, "0, 1, off, on, false or true");
    return false;
  }
  return true;
}

}  // namespace phx::plugin_common
