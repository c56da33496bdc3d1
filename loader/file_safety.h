// Refuses plugin files that someone other than their owner could have replaced
// (docs/loader.md, "Files the loader refuses").
#pragma once

#include <string>

namespace phx {

struct FileSafety {
  // Empty when the file may be loaded; otherwise why not, naming the file or folder and
  // its mode.
  std::string problem;
  // The file that dlopen should open: path with every symbolic link resolved, so that
  // what was checked is what is opened.
  std::string resolved;
};

// Checks a candidate plugin file before it is opened: it, the file its symbolic links
// lead to, and the folders holding either must not be writable by group or others.
FileSafety check_plugin_file(const std::string& path);

}  // namespace phx
