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

#include "phx/env.h"

namespace phx {

// Under PHX_DISABLE_UNLOAD=1, marks every shared object now mapped never to be unmapped
// (RTLD_NOLOAD promotes the flag of a loaded object and loads nothing); otherwise does
// nothing. Thread-safe.
inline void keep_mapped_libraries_if_asked() {
  if (!env_is_one("PHX_DISABLE_UNLOAD")) return;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void*) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
          dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
        return 0;
      },
      nullptr);
}

}  // namespace phx
