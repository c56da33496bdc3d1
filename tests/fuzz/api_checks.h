// What the fuzz targets of the C API share: the oracles on a call's status, the way to pass
// any int where the header declares an enum, the sizes of the API's dtypes and parameter
// structs, the environment the targets run in, and their context on every device.
#pragma once

#include <phynexus/phynexus.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace phx::fuzz {

// The target's name, for its findings; each target sets it before its first call.
inline const char* target_name = "fuzz";

[[noreturn]] inline void finding(const char* call, const std::string& what) {
  std::fprintf(stderr, "%s: %s: %s (phx_last_error: \"%s\")\n", target_name, call, what.c_str(),
               phx_last_error());
  std::abort();
}

// A status every call may return; a failure must come with a message, and INTERNAL,
// which the API reserves for its own bugs, is a finding too.
inline phx_status check(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return status;
  if (static_cast<int>(status) < 0 || status > PHX_STATUS_INCOMPATIBLE)
    finding(call, "unknown status " + std::to_string(static_cast<int>(status)));
  if (phx_last_error()[0] == '\0') finding(call, "failed without a message");
  if (status == PHX_STATUS_INTERNAL) finding(call, "PHX_STATUS_INTERNAL");
  return status;
}

// An enum that crosses the C ABI may hold any int; a C++ caller only gets one there
// through memory, and passing it on loads it, which UBSan's enum check would report
// against the fuzzer itself rather than the library.
template <typename Enum>
__attribute__((no_sanitize("enum"))) Enum raw_enum(int value) {
  Enum result;
  static_assert(sizeof result == sizeof value);
  std::memcpy(&result, &value, sizeof result);
  return result;
}

// Bytes per element of dtype; 0 for one the API does not know.
inline size_t dtype_bytes(int dtype) {
  constexpr size_t kBytes[PHX_DTYPE_COUNT] = {0, 4, 2, 2, 1, 2, 4, 1};
  return dtype > 0 && dtype < PHX_DTYPE_COUNT ? kBytes[dtype] : 0;
}

// sizeof the op's parameter struct, as the library's op table describes it; 0 for an op
// without one, or an id that is no op.
inline size_t params_size(int op) {
  phx_op_info info = PHX_OP_INFO_INIT;
  return phx_op_info_get(raw_enum<phx_op_id>(op), &info) == PHX_STATUS_OK ? info.params_size : 0;
}

// The environment a fuzzer runs in, whatever the caller's: no PHX_* setting of theirs,
// no config file of theirs, one lavapipe thread, and no pipeline cache written to their
// cache folder. The Vulkan validation layer stays off: it multiplies the cost of every
// call, and the fuzzer's oracles are the API's statuses and the sanitizers, which see
// what the plugin does, not what the layer checks (the Vulkan tests run under it).
inline void set_environment() {
  std::vector<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    if (text.rfind("PHX_", 0) == 0) names.push_back(text.substr(0, text.find('=')));
  }
  for (const std::string& name : names) unsetenv(name.c_str());
  setenv("XDG_CONFIG_HOME", "/nonexistent", 1);
  setenv("LP_NUM_THREADS", "1", 1);
  setenv("PHX_VULKAN_NO_PIPELINE_CACHE", "1", 1);
  // Plugins stay mapped after the context is destroyed at exit, so that a leak report
  // can still name their functions.
  setenv("PHX_DISABLE_UNLOAD", "1", 1);
}

// One context with every device the build offers, a stream on each, and the bytes each
// device holds once they exist: what it must hold again once a program's objects are gone.
struct FuzzContext {
  phx_context context = nullptr;
  std::vector<phx_stream> streams;  // one per device
  std::vector<uint64_t> baseline_in_use;
};

inline uint64_t bytes_in_use(phx_context context, size_t device) {
  phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
  if (check("phx_memory_stats_get", phx_memory_stats_get(context, device, &stats)) != PHX_STATUS_OK)
    finding("phx_memory_stats_get", "no statistics for device " + std::to_string(device));
  return stats.bytes_in_use;
}

inline void open_fuzz_context(FuzzContext& fuzz, uint32_t flags) {
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.log_level = PHX_LOG_OFF;
  options.flags = flags;
  options.num_threads = 1;
  size_t devices = 0;
  if (check("phx_context_create", phx_context_create(&options, &fuzz.context)) != PHX_STATUS_OK ||
      check("phx_device_count", phx_device_count(fuzz.context, &devices)) != PHX_STATUS_OK ||
      devices == 0)
    finding("LLVMFuzzerInitialize", "no context with devices");
  for (size_t d = 0; d < devices; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    phx_stream stream = nullptr;
    if (check("phx_device_get", phx_device_get(fuzz.context, d, &info)) != PHX_STATUS_OK ||
        check("phx_stream_create", phx_stream_create(fuzz.context, d, &stream)) != PHX_STATUS_OK)
      finding("LLVMFuzzerInitialize", "device " + std::to_string(d) + " is unusable");
    std::fprintf(stderr, "%s: device %zu: %s (%s)\n", target_name, d, info.name, info.plugin);
    fuzz.streams.push_back(stream);
  }
  for (size_t d = 0; d < devices; ++d)
    fuzz.baseline_in_use.push_back(bytes_in_use(fuzz.context, d));
}

inline void close_fuzz_context(FuzzContext& fuzz) {
  for (phx_stream stream : fuzz.streams) phx_stream_destroy(stream);
  phx_context_destroy(fuzz.context);
}

// Every device holds what it held before the program, whose objects are all gone now.
inline void expect_baseline_memory(const FuzzContext& fuzz) {
  for (size_t d = 0; d < fuzz.streams.size(); ++d) {
    const uint64_t now = bytes_in_use(fuzz.context, d);
    if (now != fuzz.baseline_in_use[d])
      finding("phx_memory_stats_get", "device " + std::to_string(d) + " holds " +
                                          std::to_string(now) + " bytes with nothing alive, " +
                                          std::to_string(fuzz.baseline_in_use[d]) + " before");
  }
}

// One run of exe on zero-filled inputs of the shapes it gives (dynamic dimensions 1), into
// outputs of the shapes it says (at most 1 MiB each); any known status.
inline void run_on_zero_inputs(FuzzContext& state, phx_executable exe,
                               const phx_executable_info& info) {
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
                         phx_tensor_create(state.context, info.device, input.dtype, input.rank,
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
        check("phx_tensor_create", phx_tensor_create(state.context, info.device, desc.dtype,
                                                     desc.rank, desc.shape, &t)) == PHX_STATUS_OK;
    if (t != nullptr) outputs.push_back(t);
  }
  if (made) {
    uint64_t ticket = 0;
    phx_stream stream = state.streams[info.device];
    if (check("phx_executable_run", phx_executable_run(stream, exe, inputs.data(), inputs.size(),
                                                       outputs.data(), outputs.size(), &ticket)) ==
        PHX_STATUS_OK)
      check("phx_stream_wait", phx_stream_wait(stream, ticket));
  }
  for (phx_tensor t : inputs) phx_tensor_destroy(t);
  for (phx_tensor t : outputs) phx_tensor_destroy(t);
}

}  // namespace phx::fuzz
