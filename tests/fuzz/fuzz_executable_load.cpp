// Fuzzes phx_executable_load with hostile bytes: the input is the file. A file refused
// must come with a known status and a message, never PHX_STATUS_INTERNAL; a file accepted
// must describe itself (its inputs, its nodes), run on inputs of its own shapes (dynamic
// dimensions 1) or refuse the run with a known status, save to bytes that load again,
// and be destroyed; then every device holds what it held before. Every device is limited
// to 64 MiB. The seeds are saved executables of every device (make_seeds.cpp).
#include <phynexus/phynexus.h>

#include <vector>

#include "api_checks.h"

namespace {

using namespace phx::fuzz;

constexpr uint64_t kDeviceLimit = 64u << 20;

FuzzContext* state = nullptr;

void destroy_state() {
  close_fuzz_context(*state);
  delete state;
  state = nullptr;
}

// Saves exe, destroys it, then loads what was saved: the copy is loaded only after the
// original is gone, because both together may exceed the device limit (an original that
// holds 32 MiB of constants leaves no room for a second 32 MiB).
void save_destroy_and_load_again(phx_executable exe) {
  size_t size = 0;
  std::vector<uint8_t> bytes;
  bool saved =
      check("phx_executable_save", phx_executable_save(exe, nullptr, 0, &size)) == PHX_STATUS_OK;
  if (saved) {
    bytes.resize(size);
    saved = check("phx_executable_save", phx_executable_save(exe, bytes.data(), size, &size)) ==
            PHX_STATUS_OK;
  }
  if (check("phx_executable_destroy", phx_executable_destroy(exe)) != PHX_STATUS_OK)
    finding("phx_executable_destroy", "a loaded executable could not be destroyed");
  if (!saved) return;
  phx_executable again = nullptr;
  if (check("phx_executable_load", phx_executable_load(state->context, bytes.data(), size, nullptr,
                                                       &again)) != PHX_STATUS_OK)
    finding("phx_executable_load", "what a loaded executable saved could not be loaded");
  if (check("phx_executable_destroy", phx_executable_destroy(again)) != PHX_STATUS_OK)
    finding("phx_executable_destroy", "a loaded executable could not be destroyed");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  target_name = "fuzz_executable_load";
  set_environment();
  state = new FuzzContext;
  open_fuzz_context(*state, 0);
  // A file may ask for any shapes, which the load plans memory for: a limit makes a huge
  // plan OUT_OF_MEMORY rather than a host allocation past libFuzzer's malloc limit.
  for (size_t d = 0; d < state->streams.size(); ++d)
    check("phx_memory_set_limit", phx_memory_set_limit(state->context, d, kDeviceLimit));
  std::atexit(destroy_state);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  phx_executable exe = nullptr;
  if (check("phx_executable_load",
            phx_executable_load(state->context, data, size, nullptr, &exe)) != PHX_STATUS_OK)
    return 0;
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  if (check("phx_executable_describe", phx_executable_describe(exe, &info)) != PHX_STATUS_OK)
    finding("phx_executable_describe", "a loaded executable could not be described");
  for (size_t n = 0; n < info.node_count; ++n) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    if (check("phx_executable_describe_node", phx_executable_describe_node(exe, n, &node)) !=
        PHX_STATUS_OK)
      finding("phx_executable_describe_node", "a node it counts could not be described");
  }
  run_on_zero_inputs(*state, exe, info);
  save_destroy_and_load_again(exe);
  expect_baseline_memory(*state);
  return 0;
}
