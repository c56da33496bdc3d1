// A device's properties for device_info: the key and value texts, owned here, and the
// phx_property array that points into them, which the host reads for as long as the
// plugin is loaded.
#pragma once

#include <phynexus/plugin.h>

#include <string>
#include <utility>
#include <vector>

namespace phx::plugin_common {

class PropertyList {
 public:
  explicit PropertyList(std::vector<std::pair<std::string, std::string>> texts)
      : texts_(std::move(texts)) {
    for (const auto& [key, value] : texts_) properties_.push_back({key.c_str(), value.c_str()});
  }
  // Neither copied nor moved: properties_ points into texts_' strings, whose short ones
  // live inside the string objects themselves.
  PropertyList(const PropertyList&) = delete;
  PropertyList& operator=(const PropertyList&) = delete;

  const phx_property* data() const { return properties_.data(); }
  size_t size() const { return properties_.size(); }

 private:
  std::vector<std::pair<std::string, std::string>> texts_;
  std::vector<phx_property> properties_;
};

}  // namespace phx::plugin_common
