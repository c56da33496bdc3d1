#include "search_path.h"

#include <dlfcn.h>
#include <phx/env.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace phx {
namespace {

std::vector<std::string> split_colons(const char* text) {
  std::vector<std::string> parts;
  if (text == nullptr) return parts;
  std::string s(text);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    // An empty element would mean the current directory; that is never searched.
    if (end > start) parts.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// The plugin folder beside this library, found from the library's own file so that it
// is right in the build tree and in any install prefix, whatever the working directory.
std::string default_plugin_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_plugin_folder), &info) == 0 ||
      info.dli_fname == nullptr)
    return {};
  std::error_code ec;
  auto library = std::filesystem::canonical(info.dli_fname, ec);
  if (ec) return {};
  return (library.parent_path() / "phynexus" / "plugins").string();
}

}  // namespace

std::vector<SearchPathEntry> plugin_search_path(const std::vector<std::string>& explicit_paths,
                                                bool use_default) {
  std::vector<SearchPathEntry> path;
  for (const auto& p : explicit_paths) path.push_back({p, "plugin_paths"});
  if (!use_default) return path;
  const char* replace = env_value("PHX_PLUGIN_PATH");
  for (auto& p : split_colons(replace)) path.push_back({p, "PHX_PLUGIN_PATH"});
  for (auto& p : split_colons(env_value("PHX_ADD_PLUGIN_PATH")))
    path.push_back({p, "PHX_ADD_PLUGIN_PATH"});
  if (replace == nullptr || *replace == '\0') {
    std::string folder = default_plugin_folder();
    if (!folder.empty()) path.push_back({folder, "default folder"});
  }
  return path;
}

EntryListing list_search_entry(const std::string& entry) {
  namespace fs = std::filesystem;
  EntryListing listing;
  std::error_code ec;
  const fs::file_status status = fs::status(entry, ec);
  if (fs::is_regular_file(status)) {
    listing.candidates.push_back(entry);
    return listing;
  }
  if (!fs::is_directory(status)) {
    if (fs::exists(status))
      listing.problem = "neither a folder nor a regular file";
    else if (ec && ec != std::errc::no_such_file_or_directory)
      listing.problem = "cannot look at it: " + ec.message();
    else
      listing.problem = "does not exist";
    return listing;
  }
  std::vector<fs::path> files;
  fs::directory_iterator it(entry, ec);
  for (fs::directory_iterator end; !ec && it != end; it.increment(ec)) files.push_back(it->path());
  if (ec) {
    listing.problem = "cannot read the folder: " + ec.message();
    return listing;
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    std::error_code file_ec;
    if (file.extension() != ".so")
      listing.skipped.emplace_back(file.string(), "its name does not end in .so");
    else if (fs::is_directory(file, file_ec))
      listing.skipped.emplace_back(file.string(), "a folder (subfolders are not searched)");
    else if (!fs::is_regular_file(file, file_ec))
      listing.skipped.emplace_back(file.string(), "not a regular file, nor a link to one");
    else
      listing.candidates.push_back(file.string());
  }
  return listing;
}

}  // namespace phx
