// What PHX_DISABLE_UNLOAD=1 asks of the code that maps libraries: the loader, and a plugin
// whose driver opens libraries of its own (the Vulkan loader opens its driver at
// vkCreateInstance and closes it at vkDestroyInstance).
//
// A leak checker (LeakSanitizer, Valgrind) looks at exit for the memory no live pointer
// reaches, and names the frames of where it was allocated. Once a library is unmapped,
// what it allocated once and still pointed to from its globals is reported as leaked
// (Mesa's lavapipe does so from Debian's 22.3.6-1+deb12u2 on), with frames of an unknown
// module that no suppression can match.
#pragma once

#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>

#include "phx/env.h"

namespace phx {

// Under PHX_DISABLE_UNLOAD=1, marks every shared object now mapped never to be unmapped
// (RTLD_NOLOAD promotes the flag of a loaded object and loads nothing); otherwise does
// nothing. Thread-safe.
inline void keep_mapped_libraries_if_asked() {
  if (!env_is_one("PHX_DISABLE_UNLOAD")) return;
  // The names first, dlopen after: dl_iterate_phdr holds the dynamic linker's lock
  // while it calls back, and a dlopen there deadlocks (under ThreadSanitizer it did).
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* found) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
          static_cast<std::vector<std::string>*>(found)->emplace_back(info->dlpi_name);
        return 0;
      },
      &names);
  for (const std::string& name : names)
    dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

}  // namespace phx
