// Fuzzes phx_model_load_onnx_memory with hostile bytes: the input is the model file. A
// model refused must come with a known status and a message, never PHX_STATUS_INTERNAL;
// a model taken must compile for the CPU device (or be refused with a known status), run
// on inputs of its own shapes (dynamic dimensions 1) or refuse the run, and be
// destroyed; then every device holds what it held before. Every device is limited to
// 64 MiB. The seeds are the models of tests/onnx/make_test_models.py.
#include <phynexus/onnx.h>

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

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  target_name = "fuzz_onnx_load";
  set_environment();
  state = new FuzzContext;
  open_fuzz_context(*state, 0);
  // A model may declare any shapes, which the compile plans memory for: a limit makes a
  // huge plan OUT_OF_MEMORY rather than a host allocation past libFuzzer's malloc limit.
  for (size_t d = 0; d < state->streams.size(); ++d)
    check("phx_memory_set_limit", phx_memory_set_limit(state->context, d, kDeviceLimit));
  std::atexit(destroy_state);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  phx_graph graph = nullptr;
  if (check("phx_model_load_onnx_memory",
            phx_model_load_onnx_memory(state->context, data, size, nullptr, &graph)) !=
      PHX_STATUS_OK)
    return 0;
  phx_executable exe = nullptr;
  if (check("phx_graph_compile", phx_graph_compile(state->context, graph, nullptr, &exe)) ==
      PHX_STATUS_OK) {
    phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
    if (check("phx_executable_describe", phx_executable_describe(exe, &info)) != PHX_STATUS_OK)
      finding("phx_executable_describe", "a compiled model could not be described");
    run_on_zero_inputs(*state, exe, info);
    if (check("phx_executable_destroy", phx_executable_destroy(exe)) != PHX_STATUS_OK)
      finding("phx_executable_destroy", "a compiled model could not be destroyed");
  }
  if (check("phx_graph_destroy", phx_graph_destroy(graph)) != PHX_STATUS_OK)
    finding("phx_graph_destroy", "an imported graph could not be destroyed");
  expect_baseline_memory(*state);
  return 0;
}
