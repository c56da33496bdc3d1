// A plugin exactly as one built for plugin ABI 1.0 would be: compiled against the
// released 1.0 headers beside this file (phynexus/plugin.h, phynexus/phynexus.h of API
// 0.1), never the current ones, so that tests/previous_abi_test.cpp proves that the
// current host still loads and drives such a binary. One host-memory device that runs add
// (same shapes) and matmul (2-D, no transposes, no bias) on f32, synchronously.
#include <phynexus/plugin.h>

#include <cstdlib>
#include <cstring>
#include <new>

// The include path must have found the snapshot, not include/phynexus.
static_assert(PHX_PLUGIN_ABI_MAJOR == 1 && PHX_PLUGIN_ABI_MINOR == 0,
              "previous_minor_plugin.cpp must see the ABI 1.0 plugin.h");
static_assert(PHX_API_VERSION_MAJOR == 0 && PHX_API_VERSION_MINOR == 1,
              "previous_minor_plugin.cpp must see the API 0.1 phynexus.h");

namespace {

struct Plugin {
  const phx_plugin_host* host;
  uint64_t bytes_in_use;
  uint64_t peak_bytes_in_use;
  uint64_t allocation_count;
};

struct Buffer {
  unsigned char* data;
  uint64_t size;
};

struct Stream {
  uint64_t last_ticket;
};

constexpr uint64_t kDeviceMemory = uint64_t{1} << 28;

phx_status fail(Plugin* plugin, phx_status status, const char* message) {
  plugin->host->set_error(plugin->host->host_data, message);
  return status;
}

phx_status initialize(const phx_plugin_host* host, void** out_plugin) {
  Plugin* plugin = new (std::nothrow) Plugin{host, 0, 0, 0};
  if (plugin == nullptr) return PHX_STATUS_OUT_OF_MEMORY;
  *out_plugin = plugin;
  return PHX_STATUS_OK;
}

void shutdown(void* plugin) { delete static_cast<Plugin*>(plugin); }

phx_status device_count(void* plugin, uint32_t* out_count) {
  (void)plugin;
  *out_count = 1;
  return PHX_STATUS_OK;
}

phx_status device_info(void* plugin, uint32_t device, phx_plugin_device_info* out_info) {
  (void)device;
  phx_plugin_device_info info{};
  info.struct_size = sizeof info;
  info.type = PHX_DEVICE_CPU;
  info.name = "ABI 1.0 host-memory device";
  info.vendor = "Phynexus tests";
  info.memory_total_bytes = kDeviceMemory;
  info.memory_available_bytes = kDeviceMemory - static_cast<Plugin*>(plugin)->bytes_in_use;
  info.compute_units = 1;
  info.dtype_mask = PHX_DTYPE_BIT(PHX_DTYPE_F32);
  phx_plugin_write_struct(out_info, &info, sizeof info);
  return PHX_STATUS_OK;
}

phx_status op_supported(void* plugin, uint32_t device, phx_op_id op, phx_dtype dtype,
                        int* out_supported) {
  (void)device;
  // The 1.0 header ends its op ids at conv2d: a later id here is a host that broke its
  // promise to ask a 1.0 plugin only about the ops of 1.0.
  if (static_cast<int>(op) >= PHX_OP_COUNT) {
    return fail(static_cast<Plugin*>(plugin), PHX_STATUS_INTERNAL,
                "previous_minor plugin: asked about an op ABI 1.0 does not have");
  }
  *out_supported = (op == PHX_OP_ADD || op == PHX_OP_MATMUL) && dtype == PHX_DTYPE_F32;
  return PHX_STATUS_OK;
}

phx_status buffer_allocate(void* plugin, uint32_t device, uint64_t size, void** out_buffer) {
  (void)device;
  Plugin* p = static_cast<Plugin*>(plugin);
  if (size > kDeviceMemory - p->bytes_in_use) {
    return fail(p, PHX_STATUS_OUT_OF_MEMORY, "previous_minor plugin: past the device's memory");
  }
  void* data = std::aligned_alloc(64, (size + 63) / 64 * 64);
  Buffer* buffer = data != nullptr ? new (std::nothrow)
                                         Buffer{static_cast<unsigned char*>(data), size}
                                   : nullptr;
  if (buffer == nullptr) {
    std::free(data);
    return fail(p, PHX_STATUS_OUT_OF_MEMORY, "previous_minor plugin: malloc failed");
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
  (void)plugin;
  std::memcpy(static_cast<Buffer*>(buffer)->data + offset, src, size);
  return PHX_STATUS_OK;
}

phx_status buffer_read(void* plugin, void* buffer, uint64_t offset, void* dst, uint64_t size) {
  (void)plugin;
  std::memcpy(dst, static_cast<Buffer*>(buffer)->data + offset, size);
  return PHX_STATUS_OK;
}

phx_status stream_create(void* plugin, uint32_t device, void** out_stream) {
  (void)device;
  Stream* stream = new (std::nothrow) Stream{0};
  if (stream == nullptr) {
    return fail(static_cast<Plugin*>(plugin), PHX_STATUS_OUT_OF_MEMORY,
                "previous_minor plugin: no memory");
  }
  *out_stream = stream;
  return PHX_STATUS_OK;
}

void stream_destroy(void* plugin, void* stream) {
  (void)plugin;
  delete static_cast<Stream*>(stream);
}

float* f32_data(const phx_plugin_tensor& t) {
  return reinterpret_cast<float*>(static_cast<Buffer*>(t.buffer)->data + t.offset);
}

uint64_t element_count(const phx_plugin_tensor& t) {
  uint64_t count = 1;
  for (uint32_t d = 0; d < t.rank; ++d) count *= static_cast<uint64_t>(t.shape[d]);
  return count;
}

bool same_shape(const phx_plugin_tensor& a, const phx_plugin_tensor& b) {
  if (a.rank != b.rank) return false;
  for (uint32_t d = 0; d < a.rank; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
  }
  return true;
}

bool all_f32(const phx_plugin_op& op) {
  for (size_t i = 0; i < op.input_count; ++i) {
    if (op.inputs[i].buffer != nullptr && op.inputs[i].dtype != PHX_DTYPE_F32) return false;
  }
  return op.outputs[0].dtype == PHX_DTYPE_F32;
}

phx_status run_add(Plugin* p, const phx_plugin_op& op) {
  const phx_plugin_tensor& a = op.inputs[0];
  const phx_plugin_tensor& b = op.inputs[1];
  const phx_plugin_tensor& out = op.outputs[0];
  if (op.input_count != 2 || !same_shape(a, out) || !same_shape(b, out)) {
    return fail(p, PHX_STATUS_UNSUPPORTED, "previous_minor plugin: add without broadcasting");
  }
  uint64_t count = element_count(out);
  for (uint64_t i = 0; i < count; ++i) f32_data(out)[i] = f32_data(a)[i] + f32_data(b)[i];
  return PHX_STATUS_OK;
}

phx_status run_matmul(Plugin* p, const phx_plugin_op& op) {
  const phx_plugin_tensor& a = op.inputs[0];
  const phx_plugin_tensor& b = op.inputs[1];
  const phx_plugin_tensor& out = op.outputs[0];
  const phx_matmul_params* params = static_cast<const phx_matmul_params*>(op.params);
  bool plain = params == nullptr || (params->transpose_a == 0 && params->transpose_b == 0 &&
                                     params->activation == PHX_ACTIVATION_NONE);
  bool has_bias = op.input_count > 2 && op.inputs[2].buffer != nullptr;
  if (!plain || has_bias || a.rank != 2 || b.rank != 2 || out.rank != 2) {
    return fail(p, PHX_STATUS_UNSUPPORTED,
                "previous_minor plugin: matmul of 2-D f32 without transposes, bias or activation");
  }
  int64_t m = a.shape[0];
  int64_t k = a.shape[1];
  int64_t n = b.shape[1];
  const float* x = f32_data(a);
  const float* y = f32_data(b);
  float* z = f32_data(out);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t l = 0; l < k; ++l) sum += x[i * k + l] * y[l * n + j];
      z[i * n + j] = sum;
    }
  }
  return PHX_STATUS_OK;
}

phx_status stream_submit(void* plugin, void* stream, const phx_plugin_op* op,
                         uint64_t* out_ticket) {
  Plugin* p = static_cast<Plugin*>(plugin);
  if (op->output_count != 1 || !all_f32(*op)) {
    return fail(p, PHX_STATUS_UNSUPPORTED, "previous_minor plugin: f32 ops of one output only");
  }
  if (op->op != PHX_OP_ADD && op->op != PHX_OP_MATMUL) {
    return fail(p, PHX_STATUS_UNSUPPORTED, "previous_minor plugin: only add and matmul");
  }
  phx_status status = op->op == PHX_OP_ADD ? run_add(p, *op) : run_matmul(p, *op);
  if (status != PHX_STATUS_OK) return status;
  *out_ticket = ++static_cast<Stream*>(stream)->last_ticket;
  return PHX_STATUS_OK;
}

phx_status stream_wait(void* plugin, void* stream, uint64_t ticket) {
  (void)plugin;
  (void)stream;
  (void)ticket;
  return PHX_STATUS_OK;
}

phx_status stream_completed(void* plugin, void* stream, uint64_t* out_ticket) {
  (void)plugin;
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
  stats.limit_bytes = kDeviceMemory;
  stats.allocation_count = p->allocation_count;
  phx_plugin_write_struct(out_stats, &stats, sizeof stats);
  return PHX_STATUS_OK;
}

// The table of ABI 1.0: its struct_size is the 1.0 sizeof, and the optional entries are
// left out, so the host must fall back for each of them.
constexpr phx_plugin_api make_api() {
  phx_plugin_api api{};
  api.struct_size = sizeof(phx_plugin_api);
  api.abi_major = PHX_PLUGIN_ABI_MAJOR;
  api.abi_minor = PHX_PLUGIN_ABI_MINOR;
  api.name = "previous_minor";
  api.version = "1.0-snapshot";
  api.initialize = initialize;
  api.shutdown = shutdown;
  api.device_count = device_count;
  api.device_info = device_info;
  api.op_supported = op_supported;
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
  return api;
}

constexpr phx_plugin_api kApi = make_api();

}  // namespace

extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host* host,
                                                         const phx_plugin_api** out_api) {
  if (host == nullptr || out_api == nullptr) return PHX_STATUS_INVALID_ARGUMENT;
  *out_api = &kApi;
  return PHX_STATUS_OK;
}
