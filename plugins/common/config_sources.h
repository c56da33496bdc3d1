// Where a simulator plugin's settings come from: an environment variable of
// "key=value,key=value" items, and a config file of "key = value" lines, the one a second
// variable names or else the user's default one. Read here as text; Settings parses it.
#pragma once

#include <string>

namespace phx::plugin_common {

// The settings as text. The file's entries come first; the variable's win over them.
struct ConfigSources {
  std::string file_path;  // "" when there is no file
  std::string file_text;  // "key = value" lines, # comments
  std::string env_text;   // "key=value,key=value"
};

// The names a plugin reads its sources under.
struct ConfigLocation {
  const char* settings_variable;  // "PHX_NPU_SIM": the items
  const char* file_variable;      // "PHX_NPU_SIM_CONFIG": names a file, which must exist
  const char* file_name;          // "npu-sim.conf": the default file, in phynexus/ of
                                  // $XDG_CONFIG_HOME (XDG's default ~/.config)
};

// Collects the sources: the settings variable; the file the file variable names, else
// the default file when present. False with error when a named file cannot be read.
bool read_config_sources(const ConfigLocation& location, ConfigSources& out, std::string& error);

}  // namespace phx::plugin_common
