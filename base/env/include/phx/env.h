// Reading the environment variables that steer Phynexus: one rule for libphynexus, the
// loader, the host kernels and the plugins (docs/loader.md, "Environment variables").
//
// secure_getenv, not getenv: in a process that glibc runs in secure mode (set-user-ID,
// set-group-ID, file capabilities: AT_SECURE) every variable reads as unset, so that the
// user who runs such a program cannot make it, with its privileges, load a library of
// theirs, read or write files they choose, or compute differently.
#pragma once

#include <stdlib.h>

namespace phx {

// The variable's value; null when it is unset or the process runs in secure mode.
// The string belongs to the environment. Thread-safe while nothing sets variables.
inline const char* env_value(const char* name) { return secure_getenv(name); }

// Whether the variable is set and its value begins with '1' (PHX_PROFILE=1).
inline bool env_is_one(const char* name) {
  const char* value = env_value(name);
  return value != nullptr && value[0] == '1';
}

}  // namespace phx
