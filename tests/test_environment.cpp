// Linked into every test executable: the tests see none of the caller's Phynexus
// settings, so that a developer's PHX_PLUGIN_PATH or PHX_LOG_LEVEL cannot change what
// they find or print, and they run the Vulkan plugin under the Khronos validation layer,
// whose every message fails the call that caused it (docs/vulkan.md).
//
// This is done here rather than with ctest's ENVIRONMENT_MODIFICATION so that a test
// program run by hand (one test alone, with --gtest_filter) sees what it sees under ctest.
#include <stdlib.h>

#include <initializer_list>

namespace {

struct TestEnvironment {
  TestEnvironment() {
    // A ctest entry that sets the environment itself (ENVIRONMENT_MODIFICATION works for
    // add_test) and needs a variable below says so.
    const char* keep = getenv("PHX_TEST_KEEP_ENVIRONMENT");
    if (keep != nullptr && keep[0] == '1') return;
    for (const char* name :
         {"PHX_PLUGIN_PATH", "PHX_ADD_PLUGIN_PATH", "PHX_LOG_LEVEL", "PHX_NUM_THREADS",
          "PHX_PROFILE", "PHX_TRACE", "PHX_FALLBACK", "PHX_NPU_SIM", "PHX_NPU_SIM_CONFIG",
          "PHX_TPU_SIM", "PHX_TPU_SIM_CONFIG", "PHX_VULKAN_DEVICES", "PHX_CPU_DEVICES",
          "PHX_VULKAN_MAX_BINDING_BYTES"})
      unsetenv(name);
    setenv("PHX_VULKAN_VALIDATION", "1", 0);
  }
};

// Constructed before main, hence before any test creates a context.
const TestEnvironment kTestEnvironment;

}  // namespace
