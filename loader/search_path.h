// Where the loader looks for plugins, in order, and what each place holds (docs/loader.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace phx {

// One folder (or file) to search, and what put it in the search path, for the log.
struct SearchPathEntry {
  std::string path;
  const char* origin;  // "plugin_paths", "PHX_PLUGIN_PATH", "PHX_ADD_PLUGIN_PATH", "default folder"
};

// The entries to search: explicit ones first; then, when use_default, PHX_PLUGIN_PATH
// (which replaces the default folder) and PHX_ADD_PLUGIN_PATH, and the folder
// phynexus/plugins beside libphynexus. The environment is read with phx::env_value, so
// set-uid programs ignore it.
std::vector<SearchPathEntry> plugin_search_path(const std::vector<std::string>& explicit_paths,
                                                bool use_default);

// What one search-path entry holds: the entry itself if it is a file, else the regular
// files named *.so in the folder, sorted by name; and every other file of the folder,
// with why it is no candidate, so that PHX_LOADER_DEBUG can name them all.
struct EntryListing {
  std::vector<std::string> candidates;
  std::vector<std::pair<std::string, std::string>> skipped;  // file, why
  std::string problem;  // why the entry itself gives nothing (missing, unreadable); "" if none
};
EntryListing list_search_entry(const std::string& entry);

}  // namespace phx
