#include "file_safety.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <utility>

namespace phx {
namespace {

// Group-writable counts as well as world-writable: a group is other users, and careful
// loaders (sudo for its plugins, OpenSSH's StrictModes) refuse both.
constexpr mode_t kWritableByOthers = S_IWGRP | S_IWOTH;

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Not strerror, which is not thread-safe: contexts may be created on several threads at
// once. The GNU strerror_r, which returns the text.
std::string error_text(int error) {
  char buffer[256];
  return strerror_r(error, buffer, sizeof buffer);
}

std::string parent_folder(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// What is wrong with the file or folder at path, empty if nothing. stat, not lstat: a
// folder named through a symbolic link is judged by the folder itself (a link's own mode
// is always 0777 and means nothing).
std::string writable_problem(const std::string& path, const char* what) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0)
    return std::string("cannot stat ") + what + " " + path + ": " + error_text(errno);
  if ((info.st_mode & kWritableByOthers) != 0)
    return std::string(what) + " " + path + " is writable by " +
           ((info.st_mode & S_IWOTH) != 0 ? "others" : "its group") + " (mode " +
           octal_mode(info.st_mode) + ")";
  return {};
}

}  // namespace

FileSafety check_plugin_file(const std::string& path) {
  FileSafety result;
  std::unique_ptr<char, decltype(&free)> real(realpath(path.c_str(), nullptr), &free);
  if (real == nullptr) {
    result.problem = "cannot resolve " + path + ": " + error_text(errno);
    return result;
  }
  result.resolved = real.get();
  // The folder the search found the file in: whoever can write it can put a link or
  // another file there. Then the file dlopen will map, and the folder holding it.
  for (const auto& [candidate, what] :
       {std::pair{parent_folder(path), "folder"}, std::pair{result.resolved, "file"},
        std::pair{parent_folder(result.resolved), "folder"}}) {
    result.problem = writable_problem(candidate, what);
    if (!result.problem.empty()) return result;
  }
  return result;
}

}  // namespace phx
