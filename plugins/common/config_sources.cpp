#include "config_sources.h"

#include <phx/env.h>

#include <fstream>
#include <sstream>

namespace phx::plugin_common {
namespace {

bool read_file(const std::string& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream contents;
  contents << in.rdbuf();
  text = contents.str();
  return !in.bad();
}

}  // namespace

bool read_config_sources(const ConfigLocation& location, ConfigSources& out, std::string& error) {
  ConfigSources src;
  if (const char* env = env_value(location.settings_variable)) src.env_text = env;
  const std::string default_file = std::string("/phynexus/") + location.file_name;
  std::string path;
  bool named = false;
  if (const char* p = env_value(location.file_variable); p != nullptr && *p != '\0') {
    path = p;
    named = true;
  } else if (const char* xdg = env_value("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
    path = std::string(xdg) + default_file;
  } else if (const char* home = env_value("HOME"); home != nullptr && *home != '\0') {
    path = std::string(home) + "/.config" + default_file;
  }
  // A named file must exist; the default one is optional.
  if (!path.empty() && (named || std::ifstream(path).good())) {
    src.file_path = path;
    if (!read_file(path, src.file_text)) {
      error = std::string("cannot read the config file") +
              (named ? " " + std::string(location.file_variable) + " names" : "") + ": '" + path +
              "'";
      return false;
    }
  }
  out = std::move(src);
  return true;
}

}  // namespace phx::plugin_common
