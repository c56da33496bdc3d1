// Where the loader looks for plugins, in order (docs/loader.md).
#pragma once

#include <string>
#include <vector>

namespace phx {

// The folders (or files) to search: explicit ones first; then, when use_default,
// PHX_PLUGIN_PATH (which replaces the default folder) and PHX_ADD_PLUGIN_PATH, and the
// folder phynexus/plugins beside libphynexus. Environment is read with secure_getenv,
// so set-uid programs ignore it.
std::vector<std::string> plugin_search_path(const std::vector<std::string>& explicit_paths,
                                            bool use_default);

// The plugin files of one search-path entry: the entry itself if it is a file, else the
// regular files named *.so in the folder, sorted by name. Empty if it does not exist.
std::vector<std::string> plugin_candidates(const std::string& entry);

}  // namespace phx
