#include "search_path.h"

#include <dlfcn.h>
#include <stdlib.h>

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

std::vector<std::string> plugin_search_path(const std::vector<std::string>& explicit_paths,
                                            bool use_default) {
  std::vector<std::string> path = explicit_paths;
  if (!use_default) return path;
  const char* replace = secure_getenv("PHX_PLUGIN_PATH");
  for (auto& p : split_colons(replace)) path.push_back(p);
  for (auto& p : split_colons(secure_getenv("PHX_ADD_PLUGIN_PATH"))) path.push_back(p);
  if (replace == nullptr || *replace == '\0') {
    std::string folder = default_plugin_folder();
    if (!folder.empty()) path.push_back(folder);
  }
  return path;
}

std::vector<std::string> plugin_candidates(const std::string& entry) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(entry, ec)) return {entry};
  std::vector<std::string> files;
  for (fs::directory_iterator it(entry, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".so" && it->is_regular_file(ec))
      files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace phx
