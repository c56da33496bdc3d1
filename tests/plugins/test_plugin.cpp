// The test plugin of the loader's suite: one small, correct plugin (one CPU device,
// malloc'd buffers, a synchronous stream that runs PHX_OP_ADD on f32) that CMake builds
// many times, each build with one PHX_TEST_FAULT_<CASE> definition that makes it break
// the plugin contract in one way (tests/plugins/CMakeLists.txt lists them).
//
// Every build also gets PHX_TEST_CASE (its file tag, unique per .so) and
// PHX_TEST_PLUGIN_NAME (the name it reports). When PHX_TEST_TRACE_DIR is set, the
// plugin appends one line per call of entry, initialize and shutdown to
// $PHX_TEST_TRACE_DIR/<PHX_TEST_CASE>.trace, so a test can tell which entries the
// loader called, and how often.
//
// Built against include/phynexus/plugin.h only, as an out-of-tree plugin would be.
#include <dlfcn.h>
#include <phynexus/plugin.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#ifndef PHX_TEST_CASE
#error "PHX_TEST_CASE must name the build (see tests/plugins/CMakeLists.txt)"
#endif
#ifndef PHX_TEST_PLUGIN_NAME
#error "PHX_TEST_PLUGIN_NAME must be set (see tests/plugins/CMakeLists.txt)"
#endif
#ifndef PHX_TEST_PLUGIN_VERSION
#define PHX_TEST_PLUGIN_VERSION "1.2.3"
#endif

namespace {

void trace(const char* event) {
  const char* dir = std::getenv("PHX_TEST_TRACE_DIR");
  if (dir == nullptr || dir[0] == '\0') return;
  char path[4096];
  std::snprintf(path, sizeof path, "%s/%s.trace", dir, PHX_TEST_CASE);
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", event);
    std::fclose(f);
  }
}

struct Plugin {
  const phx_plugin_host* host;
  uint64_t bytes_in_use;
  uint64_t peak_bytes_in_use;
  uint64_t allocation_count;
  uint64_t limit_bytes;
  // DEVICE_LOST: the file whose removal makes the device disappear, and whether it has.
  std::string device_file;
  bool lost;
};

struct Buffer {
  unsigned char* data;
  uint64_t size;
};

struct Stream {
  uint64_t last_ticket;
};

constexpr uint64_t kDeviceMemory = uint64_t{1} << 30;
#if defined(PHX_TEST_FAULT_VARIANTS)
constexpr bool kRunsMatmul = true;  // plain f32 matmul, next to add
#else
constexpr bool kRunsMatmul = false;
#endif

phx_status fail(Plugin* plugin, phx_status status, const char* message) {
  plugin->host->set_error(plugin->host->host_data, message);
  return status;
}

#if defined(PHX_TEST_FAULT_DEVICE_LOST)
// A device that disappears, as a GPU that falls off the bus or an unplugged accelerator:
// it works while the file named by PHX_TEST_DEVICE_FILE (read at initialize) exists.
// Once the file is gone the device is lost for good, even if the file comes back: every
// entry that needs the device (allocation, transfers, new streams, submit, wait, query)
// fails with DEVICE_UNAVAILABLE, while freeing buffers and destroying streams still
// work, so that the host can clean up.
phx_status device_present(Plugin* p) {
  if (!p->lost && !p->device_file.empty() && access(p->device_file.c_str(), F_OK) != 0) {
    p->lost = true;
    p->host->log(p->host->host_data, PHX_LOG_WARN, "the device disappeared");
  }
  if (!p->lost) return PHX_STATUS_OK;
  const std::string message =
      "test plugin: the device is lost (" + p->device_file + " was removed)";
  return fail(p, PHX_STATUS_DEVICE_UNAVAILABLE, message.c_str());
}
#else
phx_status device_present(Plugin*) { return PHX_STATUS_OK; }
#endif

// The device's type: CPU but for the builds that test how the host lists types.
void set_device_type(phx_plugin_device_info& info) {
#if defined(PHX_TEST_FAULT_DEVICE_TYPE_ACCELERATOR)
  info.type = PHX_DEVICE_ACCELERATOR;
#elif defined(PHX_TEST_FAULT_UNKNOWN_DEVICE_TYPE) || defined(PHX_TEST_FAULT_NEWER_DEVICE_TYPE)
  // A value past the enum, as a C plugin may send: written as an int, since forming such
  // an enum value in C++ is undefined.
  static_assert(sizeof info.type == sizeof(int));
#if defined(PHX_TEST_FAULT_UNKNOWN_DEVICE_TYPE)
  const int type = 99;
#else
  const int type = PHX_DEVICE_ACCELERATOR + 1;  // as a later minor might add
#endif
  std::memcpy(&info.type, &type, sizeof type);
#else
  info.type = PHX_DEVICE_CPU;
#endif
}

#if defined(PHX_TEST_FAULT_OPENS_LIBRARY)
// The library named by PHX_TEST_OPENED_LIBRARY (read at initialize), opened at
// initialize and closed at shutdown, as a driver's loader opens and closes its driver.
void* g_opened_library = nullptr;
#endif

phx_status initialize(const phx_plugin_host* host, void** out_plugin) {
  trace("initialize");
#if defined(PHX_TEST_FAULT_OPENS_LIBRARY)
  if (const char* library = std::getenv("PHX_TEST_OPENED_LIBRARY"))
    g_opened_library = dlopen(library, RTLD_NOW | RTLD_LOCAL);
#endif
#if defined(PHX_TEST_FAULT_INIT_FAILS)
  host->set_error(host->host_data, "simulated init failure");
  (void)out_plugin;
  return PHX_STATUS_DEVICE_UNAVAILABLE;
#elif defined(PHX_TEST_FAULT_THROWS_IN_INIT)
  (void)host;
  (void)out_plugin;
  throw std::runtime_error("simulated exception in initialize");
#else
  Plugin* plugin = new (std::nothrow) Plugin{host, 0, 0, 0, 0, {}, false};
  if (plugin == nullptr) return PHX_STATUS_OUT_OF_MEMORY;
#if defined(PHX_TEST_FAULT_DEVICE_LOST)
  if (const char* file = std::getenv("PHX_TEST_DEVICE_FILE")) plugin->device_file = file;
#endif
  *out_plugin = plugin;
  return PHX_STATUS_OK;
#endif
}

void shutdown(void* plugin) {
  trace("shutdown");
#if defined(PHX_TEST_FAULT_OPENS_LIBRARY)
  if (g_opened_library != nullptr) dlclose(g_opened_library);
  g_opened_library = nullptr;
#endif
  delete static_cast<Plugin*>(plugin);
}

phx_status device_count(void* plugin, uint32_t* out_count) {
  (void)plugin;
#if defined(PHX_TEST_FAULT_THROWS_IN_DEVICE_COUNT)
  (void)out_count;
  throw std::runtime_error("simulated exception in device_count");
#elif defined(PHX_TEST_FAULT_NO_DEVICES)
  *out_count = 0;
  return PHX_STATUS_OK;
#else
  *out_count = 1;
  return PHX_STATUS_OK;
#endif
}

phx_status device_info(void* plugin, uint32_t device, phx_plugin_device_info* out_info) {
  (void)device;
  Plugin* p = static_cast<Plugin*>(plugin);
  phx_plugin_device_info info{};
  info.struct_size = sizeof info;
  set_device_type(info);
  info.name = PHX_TEST_PLUGIN_NAME " device";
  info.vendor = "Phynexus tests";
  info.memory_total_bytes = kDeviceMemory;
  info.memory_available_bytes = kDeviceMemory - p->bytes_in_use;
  info.compute_units = 1;
  info.dtype_mask = PHX_DTYPE_BIT(PHX_DTYPE_F32);
  // The host may know a shorter struct (an older host): fill only what it has room for.
  size_t size = out_info->struct_size < sizeof info ? out_info->struct_size : sizeof info;
  std::memcpy(out_info, &info, size);
  out_info->struct_size = size;
  return PHX_STATUS_OK;
}

phx_status op_supported(void* plugin, uint32_t device, phx_op_id op, phx_dtype dtype,
                        int* out_supported) {
  (void)plugin;
  (void)device;
#if defined(PHX_TEST_FAULT_ABI_1_0)
  // A plugin of ABI 1.0 has never heard of the ops of 1.1: being asked is a host bug.
  if (op > PHX_OP_CONV2D) return PHX_STATUS_INTERNAL;
#endif
  *out_supported = (op == PHX_OP_ADD && dtype == PHX_DTYPE_F32) ||
                   (kRunsMatmul && op == PHX_OP_MATMUL && dtype == PHX_DTYPE_F32);
  return PHX_STATUS_OK;
}

phx_status buffer_allocate(void* plugin, uint32_t device, uint64_t size, void** out_buffer) {
  (void)device;
  Plugin* p = static_cast<Plugin*>(plugin);
  if (phx_status status = device_present(p); status != PHX_STATUS_OK) return status;
  uint64_t limit = p->limit_bytes != 0 ? p->limit_bytes : kDeviceMemory;
  if (size > limit || p->bytes_in_use > limit - size) {
    return fail(p, PHX_STATUS_OUT_OF_MEMORY, "test plugin: past the device's memory");
  }
  uint64_t rounded = (size + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, rounded);
  Buffer* buffer = data != nullptr ? new (std::nothrow)
                                         Buffer{static_cast<unsigned char*>(data), size}
                                   : nullptr;
  if (buffer == nullptr) {
    std::free(data);
    return fail(p, PHX_STATUS_OUT_OF_MEMORY, "test plugin: malloc failed");
  }
  p->bytes_in_use += size;
  if (p->bytes_in_use > p->peak_bytes_in_use) p->peak_bytes_in_use = p->bytes_in_use;
  ++p->allocation_count;
  *out_buffer = buffer;
  return PHX_STATUS_OK;
}

void buffer_free(void* plugin, void* buffer) {
  Plugin* p = static_cast<Plugin*>(plugin);
  Buffer* b = static_cast<Buffer*>(buffer);
  p->bytes_in_use -= b->size;
  --p->allocation_count;
  std::free(b->data);
  delete b;
}

phx_status buffer_write(void* plugin, void* buffer, uint64_t offset, const void* src,
                        uint64_t size) {
  if (phx_status status = device_present(static_cast<Plugin*>(plugin)); status != PHX_STATUS_OK)
    return status;
  std::memcpy(static_cast<Buffer*>(buffer)->data + offset, src, size);
  return PHX_STATUS_OK;
}

phx_status buffer_read(void* plugin, void* buffer, uint64_t offset, void* dst, uint64_t size) {
  if (phx_status status = device_present(static_cast<Plugin*>(plugin)); status != PHX_STATUS_OK)
    return status;
  std::memcpy(dst, static_cast<Buffer*>(buffer)->data + offset, size);
  return PHX_STATUS_OK;
}

phx_status stream_create(void* plugin, uint32_t device, void** out_stream) {
  (void)device;
  if (phx_status status = device_present(static_cast<Plugin*>(plugin)); status != PHX_STATUS_OK)
    return status;
  Stream* stream = new (std::nothrow) Stream{0};
  if (stream == nullptr) {
    return fail(static_cast<Plugin*>(plugin), PHX_STATUS_OUT_OF_MEMORY, "test plugin: no memory");
  }
  *out_stream = stream;
  return PHX_STATUS_OK;
}

void stream_destroy(void* plugin, void* stream) {
  (void)plugin;
  delete static_cast<Stream*>(stream);
}

const float* f32_data(const phx_plugin_tensor& t) {
  return reinterpret_cast<const float*>(static_cast<Buffer*>(t.buffer)->data + t.offset);
}

// The element of input `in` that output element `index` (row-major in `out`) reads
// under NumPy broadcasting: shapes are aligned at their last dimension.
uint64_t broadcast_index(const phx_plugin_tensor& in, const phx_plugin_tensor& out,
                         uint64_t index) {
  uint64_t result = 0;
  uint64_t in_stride = 1;
  for (uint32_t d = 0; d < out.rank; ++d) {
    uint32_t out_dim = out.rank - 1 - d;
    int64_t coord = static_cast<int64_t>(index % static_cast<uint64_t>(out.shape[out_dim]));
    index /= static_cast<uint64_t>(out.shape[out_dim]);
    if (d < in.rank) {
      int64_t extent = in.shape[in.rank - 1 - d];
      if (extent != 1) result += static_cast<uint64_t>(coord) * in_stride;
      in_stride *= static_cast<uint64_t>(extent);
    }
  }
  return result;
}

#if defined(PHX_TEST_FAULT_VARIANTS)
// Of f32 matmul, only the plain variant: no bias, no activation (plugin ABI 1.2).
bool plain_matmul(const void* params, size_t input_count, bool bias_present) {
  const auto* p = static_cast<const phx_matmul_params*>(params);
  return input_count >= 2 && !bias_present && p != nullptr && p->activation == PHX_ACTIVATION_NONE;
}

phx_status op_variant_supported(void* plugin, uint32_t device, const phx_plugin_op_variant* variant,
                                int* out_supported) {
  (void)plugin;
  (void)device;
  const bool bias = variant->input_count > 2 && variant->input_dtypes[2] != PHX_DTYPE_INVALID;
  *out_supported =
      variant->op == PHX_OP_ADD ||
      (variant->op == PHX_OP_MATMUL && plain_matmul(variant->params, variant->input_count, bias));
  return PHX_STATUS_OK;
}

// a [M, K] x b [K, N], f32.
void run_matmul(const phx_plugin_op& op) {
  const phx_plugin_tensor& a = op.inputs[0];
  const phx_plugin_tensor& b = op.inputs[1];
  const phx_plugin_tensor& out = op.outputs[0];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  float* dst = reinterpret_cast<float*>(static_cast<Buffer*>(out.buffer)->data + out.offset);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t l = 0; l < k; ++l) sum += f32_data(a)[i * k + l] * f32_data(b)[l * n + j];
      dst[i * n + j] = sum;
    }
}
#endif

phx_status stream_submit(void* plugin, void* stream, const phx_plugin_op* op,
                         uint64_t* out_ticket) {
  Plugin* p = static_cast<Plugin*>(plugin);
  if (phx_status status = device_present(p); status != PHX_STATUS_OK) return status;
#if defined(PHX_TEST_FAULT_VARIANTS)
  if (op->op == PHX_OP_MATMUL) {
    const bool bias = op->input_count > 2 && op->inputs[2].buffer != nullptr;
    if (!plain_matmul(op->params, op->input_count, bias) || op->inputs[0].rank != 2 ||
        op->inputs[1].rank != 2)
      return fail(p, PHX_STATUS_INTERNAL, "test plugin: the host submitted a matmul it refused");
    run_matmul(*op);
    *out_ticket = ++static_cast<Stream*>(stream)->last_ticket;
    return PHX_STATUS_OK;
  }
#endif
  if (op->op != PHX_OP_ADD || op->input_count != 2 || op->output_count != 1 ||
      op->inputs[0].dtype != PHX_DTYPE_F32 || op->inputs[1].dtype != PHX_DTYPE_F32 ||
      op->outputs[0].dtype != PHX_DTYPE_F32) {
    return fail(p, PHX_STATUS_UNSUPPORTED, "test plugin: only add on f32");
  }
  const phx_plugin_tensor& a = op->inputs[0];
  const phx_plugin_tensor& b = op->inputs[1];
  const phx_plugin_tensor& out = op->outputs[0];
  uint64_t count = 1;
  for (uint32_t d = 0; d < out.rank; ++d) count *= static_cast<uint64_t>(out.shape[d]);
  float* dst = reinterpret_cast<float*>(static_cast<Buffer*>(out.buffer)->data + out.offset);
  for (uint64_t i = 0; i < count; ++i) {
    dst[i] = f32_data(a)[broadcast_index(a, out, i)] + f32_data(b)[broadcast_index(b, out, i)];
#if defined(PHX_TEST_FAULT_WRONG_RESULT)
    dst[i] += 1.0f;  // what phx-conformance must catch
#endif
  }
  *out_ticket = ++static_cast<Stream*>(stream)->last_ticket;
  return PHX_STATUS_OK;
}

#if defined(PHX_TEST_FAULT_GRAPHS) || defined(PHX_TEST_FAULT_PARTIAL_GRAPH_ENTRIES)
// Executables (plugin ABI 1.3) of add nodes, and of f32 sub nodes, which the device runs
// only inside a part it compiled (graph_claim claims them when the host has calibration
// ranges, and executable_node_report says they compute in i16, as a quantizing device
// would): the wiring is kept and each run computes node by node, as one ticket.
// PHX_TEST_GRAPH_COMPILE ("unsupported", "fail") and PHX_TEST_GRAPH_RUN ("fail",
// "bad_ticket", "off_by_one": each sub's result 1 too large), read at each call, inject
// the faults a host must survive;
// PHX_TEST_GRAPH_ESTIMATE_NS is graph_estimate's time for every node it takes. The trace
// gets "graph_compile <kinds>" (a letter per value: Input, Output, Constant, intermediate)
// with " ranges <min>:<max>..." when the host gave ranges and " serialized" when it gave
// saved data, and "graph_claim <claimed>", "executable_run", "executable_destroy".
struct Executable {
  std::string kinds;
  struct Node {
    phx_op_id op;
    uint32_t a, b, out;
  };
  Node nodes[64];
  size_t node_count;
};

// What executable_serialize writes: this header, then the nodes as they are.
constexpr char kSavedMagic[8] = {'t', 'e', 's', 't', 'e', 'x', 'e', '1'};

bool env_is(const char* name, const char* value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::strcmp(set, value) == 0;
}

phx_status graph_compile(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                         void** out_executable) {
  (void)device;
  Plugin* p = static_cast<Plugin*>(plugin);
  if (env_is("PHX_TEST_GRAPH_COMPILE", "unsupported"))
    return fail(p, PHX_STATUS_UNSUPPORTED, "test plugin: declines every graph");
  if (env_is("PHX_TEST_GRAPH_COMPILE", "fail"))
    return fail(p, PHX_STATUS_OUT_OF_MEMORY, "test plugin: no room for the program");
  if (graph->node_count > 64) return fail(p, PHX_STATUS_UNSUPPORTED, "test plugin: > 64 nodes");
  auto* exe = new (std::nothrow) Executable{};
  if (exe == nullptr) return PHX_STATUS_OUT_OF_MEMORY;
  for (size_t v = 0; v < graph->value_count; ++v) {
    const char kinds[] = "?IOCi";
    const int kind = graph->values[v].kind;
    exe->kinds += kind >= 1 && kind <= 4 ? kinds[kind] : '?';
  }
  for (size_t n = 0; n < graph->node_count; ++n) {
    const phx_plugin_node& node = graph->nodes[n];
    if (node.op != PHX_OP_ADD && node.op != PHX_OP_SUB) {
      delete exe;
      return fail(p, PHX_STATUS_UNSUPPORTED, "test plugin: graphs of add and sub nodes only");
    }
    exe->nodes[n] = {node.op, node.inputs[0], node.inputs[1], node.outputs[0]};
  }
  exe->node_count = graph->node_count;
  std::string line = "graph_compile " + exe->kinds;
  if (graph->value_ranges != nullptr) {
    line += " ranges";
    for (size_t v = 0; v < graph->value_count; ++v)
      line += " " + std::to_string(int(graph->value_ranges[v].min)) + ":" +
              std::to_string(int(graph->value_ranges[v].max));
  }
  if (graph->serialized != nullptr) {
    const bool whole =
        graph->serialized_size == sizeof kSavedMagic + sizeof exe->nodes[0] * exe->node_count &&
        std::memcmp(graph->serialized, kSavedMagic, sizeof kSavedMagic) == 0;
    if (!whole || std::memcmp(static_cast<const char*>(graph->serialized) + sizeof kSavedMagic,
                              exe->nodes, sizeof exe->nodes[0] * exe->node_count) != 0) {
      delete exe;
      return fail(p, PHX_STATUS_INCOMPATIBLE, "test plugin: saved data of another graph");
    }
    line += " serialized";
  }
  trace(line.c_str());
  *out_executable = exe;
  return PHX_STATUS_OK;
}

[[maybe_unused]] phx_status graph_claim(void* plugin, uint32_t device,
                                        const phx_plugin_graph* graph, uint8_t* out_claimed) {
  (void)plugin;
  (void)device;
  size_t claimed = 0;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const phx_plugin_node& node = graph->nodes[n];
    out_claimed[n] = graph->value_ranges != nullptr && node.op == PHX_OP_SUB &&
                     graph->values[node.inputs[0]].dtype == PHX_DTYPE_F32;
    claimed += out_claimed[n];
  }
  trace(("graph_claim " + std::to_string(claimed)).c_str());
  return PHX_STATUS_OK;
}

[[maybe_unused]] phx_status graph_estimate(void* plugin, uint32_t device,
                                           const phx_plugin_graph* graph, uint64_t* out_time_ns) {
  (void)plugin;
  (void)device;
  const char* set = std::getenv("PHX_TEST_GRAPH_ESTIMATE_NS");
  for (size_t n = 0; n < graph->node_count; ++n)
    out_time_ns[n] = set != nullptr && graph->nodes[n].op == PHX_OP_ADD
                         ? std::strtoull(set, nullptr, 10)
                         : UINT64_MAX;
  return PHX_STATUS_OK;
}

[[maybe_unused]] phx_status executable_serialize(void* plugin, void* executable, void* buffer,
                                                 size_t capacity, size_t* out_size) {
  (void)plugin;
  const auto* exe = static_cast<const Executable*>(executable);
  const size_t nodes = sizeof exe->nodes[0] * exe->node_count;
  *out_size = sizeof kSavedMagic + nodes;
  if (capacity >= *out_size) {
    std::memcpy(buffer, kSavedMagic, sizeof kSavedMagic);
    std::memcpy(static_cast<char*>(buffer) + sizeof kSavedMagic, exe->nodes, nodes);
  }
  return PHX_STATUS_OK;
}

[[maybe_unused]] phx_status executable_node_report(void* plugin, void* executable, size_t node,
                                                   phx_plugin_node_report* out_report) {
  (void)plugin;
  const auto* exe = static_cast<const Executable*>(executable);
  if (node >= exe->node_count) return PHX_STATUS_INVALID_ARGUMENT;
  out_report->compute_dtype = exe->nodes[node].op == PHX_OP_SUB ? PHX_DTYPE_I16 : PHX_DTYPE_F32;
  return PHX_STATUS_OK;
}

// a - b (broadcast) into out, all f32: a sub node of an executable.
void subtract(const phx_plugin_tensor& a, const phx_plugin_tensor& b,
              const phx_plugin_tensor& out) {
  uint64_t count = 1;
  for (uint32_t d = 0; d < out.rank; ++d) count *= static_cast<uint64_t>(out.shape[d]);
  float* dst = reinterpret_cast<float*>(static_cast<Buffer*>(out.buffer)->data + out.offset);
  // "off_by_one": the error a quantized node makes, which calibration must measure.
  const float error = env_is("PHX_TEST_GRAPH_RUN", "off_by_one") ? 1.0f : 0.0f;
  for (uint64_t i = 0; i < count; ++i)
    dst[i] =
        f32_data(a)[broadcast_index(a, out, i)] - f32_data(b)[broadcast_index(b, out, i)] + error;
}

// [[maybe_unused]]: the PARTIAL_GRAPH_ENTRIES build leaves these out of its table.
[[maybe_unused]] phx_status executable_run(void* plugin, void* stream, void* executable,
                                           const phx_plugin_tensor* values, size_t value_count,
                                           phx_plugin_profile* const* node_profiles,
                                           uint64_t* out_ticket) {
  (void)value_count;
  Plugin* p = static_cast<Plugin*>(plugin);
  trace("executable_run");
  if (env_is("PHX_TEST_GRAPH_RUN", "fail"))
    return fail(p, PHX_STATUS_DEVICE_UNAVAILABLE, "test plugin: the run failed");
  const auto* exe = static_cast<const Executable*>(executable);
  for (size_t n = 0; n < exe->node_count; ++n) {
    if (exe->nodes[n].op == PHX_OP_SUB) {
      subtract(values[exe->nodes[n].a], values[exe->nodes[n].b], values[exe->nodes[n].out]);
      continue;
    }
    phx_plugin_tensor in[2] = {values[exe->nodes[n].a], values[exe->nodes[n].b]};
    phx_plugin_op op{};
    op.struct_size = sizeof op;
    op.op = PHX_OP_ADD;
    op.inputs = in;
    op.input_count = 2;
    op.outputs = &values[exe->nodes[n].out];
    op.output_count = 1;
    uint64_t ignored = 0;
    Stream scratch{0};
    if (phx_status status = stream_submit(plugin, &scratch, &op, &ignored); status != PHX_STATUS_OK)
      return status;
    if (node_profiles != nullptr && node_profiles[n]->metric_count < PHX_PLUGIN_MAX_METRICS)
      node_profiles[n]->metrics[node_profiles[n]->metric_count++] = {"node_of_a_graph", 1.0};
  }
  *out_ticket = ++static_cast<Stream*>(stream)->last_ticket;
  if (env_is("PHX_TEST_GRAPH_RUN", "bad_ticket")) *out_ticket += 5;
  return PHX_STATUS_OK;
}

[[maybe_unused]] void executable_destroy(void* plugin, void* executable) {
  (void)plugin;
  trace("executable_destroy");
  delete static_cast<Executable*>(executable);
}

[[maybe_unused]] phx_status executable_stats(void* plugin, void* executable,
                                             phx_metric* out_metrics, size_t capacity,
                                             size_t* out_count) {
  (void)plugin;
  if (capacity > 0)
    out_metrics[0] = {"nodes", double(static_cast<Executable*>(executable)->node_count)};
  *out_count = 1;
  return PHX_STATUS_OK;
}
#endif

phx_status stream_wait(void* plugin, void* stream, uint64_t ticket) {
  (void)stream;
  (void)ticket;
  return device_present(static_cast<Plugin*>(plugin));
}

phx_status stream_completed(void* plugin, void* stream, uint64_t* out_ticket) {
  if (phx_status status = device_present(static_cast<Plugin*>(plugin)); status != PHX_STATUS_OK)
    return status;
  *out_ticket = static_cast<Stream*>(stream)->last_ticket;
  return PHX_STATUS_OK;
}

phx_status memory_stats(void* plugin, uint32_t device, phx_memory_stats* out_stats) {
  (void)device;
  Plugin* p = static_cast<Plugin*>(plugin);
  phx_memory_stats stats{};
  stats.struct_size = sizeof stats;
  stats.bytes_in_use = p->bytes_in_use;
  stats.peak_bytes_in_use = p->peak_bytes_in_use;
  stats.bytes_cached = 0;
  stats.limit_bytes = p->limit_bytes != 0 ? p->limit_bytes : kDeviceMemory;
  stats.allocation_count = p->allocation_count;
  size_t size = out_stats->struct_size < sizeof stats ? out_stats->struct_size : sizeof stats;
  std::memcpy(out_stats, &stats, size);
  out_stats->struct_size = size;
  return PHX_STATUS_OK;
}

phx_status memory_set_limit(void* plugin, uint32_t device, uint64_t limit_bytes) {
  (void)device;
  trace("memory_set_limit");
  static_cast<Plugin*>(plugin)->limit_bytes = limit_bytes;
  return PHX_STATUS_OK;
}

constexpr phx_plugin_api make_api() {
  phx_plugin_api api{};
  api.struct_size = sizeof(phx_plugin_api);
  api.abi_major = PHX_PLUGIN_ABI_MAJOR;
#if defined(PHX_TEST_FAULT_ABI_1_0)
  api.abi_minor = 0;
#elif defined(PHX_TEST_FAULT_ABI_1_99)
  api.abi_minor = 99;
#elif defined(PHX_TEST_FAULT_NEWER_DEVICE_TYPE)
  api.abi_minor = PHX_PLUGIN_ABI_MINOR + 1;
#else
  api.abi_minor = PHX_PLUGIN_ABI_MINOR;
#endif
  api.name = PHX_TEST_PLUGIN_NAME;
  api.version = PHX_TEST_PLUGIN_VERSION;
  api.initialize = initialize;
  api.shutdown = shutdown;
  api.device_count = device_count;
  api.device_info = device_info;
  api.op_supported = op_supported;
#if defined(PHX_TEST_FAULT_VARIANTS)
  api.op_variant_supported = op_variant_supported;
#endif
  api.buffer_allocate = buffer_allocate;
  api.buffer_free = buffer_free;
  api.buffer_write = buffer_write;
  api.buffer_read = buffer_read;
  api.stream_create = stream_create;
  api.stream_destroy = stream_destroy;
  api.stream_submit = stream_submit;
  api.stream_wait = stream_wait;
  api.stream_completed = stream_completed;
  api.memory_stats = memory_stats;
  api.memory_set_limit = memory_set_limit;
  api.memory_release_cached = nullptr;
  api.buffer_copy = nullptr;
#if defined(PHX_TEST_FAULT_GRAPHS)
  api.graph_compile = graph_compile;
  api.executable_run = executable_run;
  api.executable_destroy = executable_destroy;
  api.executable_stats = executable_stats;
  api.graph_claim = graph_claim;
  api.graph_estimate = graph_estimate;
  api.executable_serialize = executable_serialize;
  api.executable_node_report = executable_node_report;
#elif defined(PHX_TEST_FAULT_PARTIAL_GRAPH_ENTRIES)
  api.graph_compile = graph_compile;  // without executable_run and executable_destroy
#endif
#if defined(PHX_TEST_FAULT_WRONG_MAJOR)
  api.abi_major = PHX_PLUGIN_ABI_MAJOR + 1;
#elif defined(PHX_TEST_FAULT_MISSING_REQUIRED_ENTRY)
  api.stream_submit = nullptr;
#elif defined(PHX_TEST_FAULT_TABLE_TOO_SMALL)
  api.struct_size = offsetof(phx_plugin_api, initialize);
#elif defined(PHX_TEST_FAULT_SHORT_REQUIRED)
  // Ends just before the last required entry, although the memory behind holds it.
  api.struct_size = offsetof(phx_plugin_api, memory_stats);
#elif defined(PHX_TEST_FAULT_SHORT_OPTIONAL)
  // A plugin built against a header that ended before the optional entries: the host
  // must treat them as absent although the memory behind the table holds them.
  api.struct_size = offsetof(phx_plugin_api, memory_set_limit);
#endif
  return api;
}

#if defined(PHX_TEST_FAULT_NEWER_MINOR)
// A plugin built against a newer minor: one more entry at the end of the table, which
// this host does not know and must ignore.
phx_status future_entry(void* plugin) {
  (void)plugin;
  return PHX_STATUS_OK;
}

struct NewerApi {
  phx_plugin_api base;
  phx_status (*future_entry)(void* plugin);
};

constexpr NewerApi make_newer_api() {
  NewerApi api{make_api(), future_entry};
  api.base.struct_size = sizeof(NewerApi);
  api.base.abi_minor = PHX_PLUGIN_ABI_MINOR + 1;
  return api;
}

constexpr NewerApi kNewerApi = make_newer_api();
const phx_plugin_api* const kApi = &kNewerApi.base;
#else
constexpr phx_plugin_api kApiTable = make_api();
const phx_plugin_api* const kApi = &kApiTable;
#endif

}  // namespace

#if !defined(PHX_TEST_FAULT_NO_ENTRY_SYMBOL)
extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host* host,
                                                         const phx_plugin_api** out_api) {
  trace("entry");
  if (host == nullptr || out_api == nullptr) return PHX_STATUS_INVALID_ARGUMENT;
#if defined(PHX_TEST_FAULT_ENTRY_FAILS)
  (void)kApi;
  return PHX_STATUS_UNSUPPORTED;
#elif defined(PHX_TEST_FAULT_THROWS_IN_ENTRY)
  (void)kApi;
  throw std::runtime_error("simulated exception in entry");
#else
  *out_api = kApi;
  return PHX_STATUS_OK;
#endif
}
#else
// Exports a misspelt entry, as a plugin built against the wrong header might.
extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry_v2(const phx_plugin_host* host,
                                                            const phx_plugin_api** out_api) {
  trace("entry");
  (void)host;
  *out_api = kApi;
  return PHX_STATUS_OK;
}
#endif
