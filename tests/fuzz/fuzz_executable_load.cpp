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

// One run on zero-filled inputs of the shapes the executable gives, into outputs of the
// shapes it says; any known status.
void run(phx_executable exe, const phx_executable_info& info) {
  std::vector<phx_tensor> inputs, outputs;
  bool made = true;
  for (size_t i = 0; made && i < info.input_count; ++i) {
    phx_value_info input = PHX_VALUE_INFO_INIT;
    made = check("phx_executable_input_info", phx_executable_input_info(exe, i, &input)) ==
           PHX_STATUS_OK;
    for (uint32_t d = 0; made && d < input.rank; ++d)
      if (input.shape[d] == PHX_DIM_DYNAMIC) input.shape[d] = 1;
    phx_tensor t = nullptr;
    made = made && check("phx_tensor_create",
                         phx_tensor_create(state->context, info.device, input.dtype, input.rank,
                                           input.shape, &t)) == PHX_STATUS_OK;
    if (t != nullptr) inputs.push_back(t);
  }
  for (size_t o = 0; made && o < info.output_count; ++o) {
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    made = check("phx_executable_output_desc",
                 phx_executable_output_desc(exe, inputs.data(), inputs.size(), o, &desc)) ==
           PHX_STATUS_OK;
    phx_tensor t = nullptr;
    made =
        made && desc.byte_size <= (1u << 20) &&
        check("phx_tensor_create", phx_tensor_create(state->context, info.device, desc.dtype,
                                                     desc.rank, desc.shape, &t)) == PHX_STATUS_OK;
    if (t != nullptr) outputs.push_back(t);
  }
  if (made) {
    uint64_t ticket = 0;
    phx_stream stream = state->streams[info.device];
    if (check("phx_executable_run", phx_executable_run(stream, exe, inputs.data(), inputs.size(),
                                                       outputs.data(), outputs.size(), &ticket)) ==
        PHX_STATUS_OK)
      check("phx_stream_wait", phx_stream_wait(stream, ticket));
  }
  for (phx_tensor t : inputs) phx_tensor_destroy(t);
  for (phx_tensor t : outputs) phx_tensor_destroy(t);
}

void save_and_load_again(phx_executable exe) {
  size_t size = 0;
  if (check("phx_executable_save", phx_executable_save(exe, nullptr, 0, &size)) != PHX_STATUS_OK)
    return;
  std::vector<uint8_t> bytes(size);
  if (check("phx_executable_save", phx_executable_save(exe, bytes.data(), size, &size)) !=
      PHX_STATUS_OK)
    return;
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
  run(exe, info);
  save_and_load_again(exe);
  if (check("phx_executable_destroy", phx_executable_destroy(exe)) != PHX_STATUS_OK)
    finding("phx_executable_destroy", "a loaded executable could not be destroyed");
  expect_baseline_memory(*state);
  return 0;
}
