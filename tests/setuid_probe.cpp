// Run by loader_test.cpp as a set-user-ID-root copy: prints its identity and
// PHX_PLUGIN_PATH as phx::env_value (phx/env.h, the helper every part of Phynexus reads
// its variables with) sees it, then creates a context with the default search path and
// prints one line per plugin candidate, so that the test sees whether PHX_PLUGIN_PATH
// was read. Linked with libphynexus by an absolute
// run path: glibc ignores $ORIGIN and LD_LIBRARY_PATH in a set-uid program.
#include <phx/env.h>
#include <phynexus/phynexus.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdio>

int main() {
  std::printf("ruid %u euid %u secure %lu\n", static_cast<unsigned>(getuid()),
              static_cast<unsigned>(geteuid()), getauxval(AT_SECURE));
  const char* plugin_path = phx::env_value("PHX_PLUGIN_PATH");
  std::printf("env_value PHX_PLUGIN_PATH %s\n", plugin_path != nullptr ? plugin_path : "<unset>");
  phx_context context = nullptr;
  if (phx_context_create(nullptr, &context) != PHX_STATUS_OK) {
    std::printf("context failed: %s\n", phx_last_error());
    return 1;
  }
  size_t count = 0;
  phx_plugin_count(context, &count);
  for (size_t i = 0; i < count; ++i) {
    phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
    if (phx_plugin_get(context, i, &info) == PHX_STATUS_OK)
      std::printf("plugin %s %s\n", info.state == PHX_PLUGIN_LOADED ? "loaded" : "not-loaded",
                  info.path);
  }
  phx_context_destroy(context);
  return 0;
}
