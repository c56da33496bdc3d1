// The CPU plugin: one device, the host. Tensors live in a pooled host allocation; ops run
// synchronously on submission with the host kernels (threaded, vectorized), so a stream's
// work is finished when stream_submit returns.
#include <phynexus/plugin.h>

#include <chrono>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "cpu_device_info.h"
#include "cpu_memory_pool.h"
#include "phx/kernels/gemm.h"
#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"

namespace phx::cpu {
namespace {

constexpr uint32_t kDtypeMask = PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_F16) |
                                PHX_DTYPE_BIT(PHX_DTYPE_BF16) | PHX_DTYPE_BIT(PHX_DTYPE_I8) |
                                PHX_DTYPE_BIT(PHX_DTYPE_I16) | PHX_DTYPE_BIT(PHX_DTYPE_I32) |
                                PHX_DTYPE_BIT(PHX_DTYPE_U8);

struct Stream {
  uint64_t submitted = 0;
};

struct Plugin {
  explicit Plugin(const phx_plugin_host* h)
      : host(h),
        description(describe_host()),
        pool(h->num_threads),
        memory(description.memory_total_bytes) {
    threads_text = std::to_string(pool.size());
    properties = {{"isa", kernels::gemm_isa()}, {"threads", threads_text.c_str()}};
  }

  const phx_plugin_host* host;
  HostDescription description;
  kernels::ThreadPool pool;
  MemoryPool memory;
  std::string threads_text;
  std::vector<phx_property> properties;

  phx_status error(phx_status status, const std::string& message) const {
    host->set_error(host->host_data, message.c_str());
    return status;
  }
};

Plugin* self(void* plugin) { return static_cast<Plugin*>(plugin); }

phx_status initialize(const phx_plugin_host* host, void** out_plugin) {
  try {
    *out_plugin = new Plugin(host);
    return PHX_STATUS_OK;
  } catch (const std::bad_alloc&) {
    return PHX_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {  // e.g. the system refused the pool's threads
    host->set_error(host->host_data, e.what());
    return PHX_STATUS_INTERNAL;
  }
}

void shutdown(void* plugin) { delete self(plugin); }

phx_status device_count(void*, uint32_t* out_count) {
  *out_count = 1;
  return PHX_STATUS_OK;
}

phx_status device_info(void* plugin, uint32_t, phx_plugin_device_info* out) {
  Plugin& p = *self(plugin);
  out->type = PHX_DEVICE_CPU;
  out->name = p.description.model.c_str();
  out->vendor = p.description.vendor.c_str();
  out->memory_total_bytes = p.description.memory_total_bytes;
  out->memory_available_bytes = host_memory_available();
  out->compute_units = p.pool.size();
  out->dtype_mask = kDtypeMask;
  out->properties = p.properties.data();
  out->property_count = p.properties.size();
  return PHX_STATUS_OK;
}

phx_status op_supported(void*, uint32_t, phx_op_id op, phx_dtype dtype, int* out_supported) {
  *out_supported = (kDtypeMask & PHX_DTYPE_BIT(dtype)) && kernels::op_supported(op, dtype);
  return PHX_STATUS_OK;
}

phx_status buffer_allocate(void* plugin, uint32_t, uint64_t size, void** out_buffer) {
  Plugin& p = *self(plugin);
  std::string error;
  void* block = p.memory.allocate(size, error);
  if (block == nullptr) return p.error(PHX_STATUS_OUT_OF_MEMORY, error);
  *out_buffer = block;
  return PHX_STATUS_OK;
}

void buffer_free(void* plugin, void* buffer) { self(plugin)->memory.free(buffer); }

phx_status buffer_write(void*, void* buffer, uint64_t offset, const void* src, uint64_t size) {
  std::memcpy(static_cast<char*>(buffer) + offset, src, size);
  return PHX_STATUS_OK;
}

phx_status buffer_read(void*, void* buffer, uint64_t offset, void* dst, uint64_t size) {
  std::memcpy(dst, static_cast<const char*>(buffer) + offset, size);
  return PHX_STATUS_OK;
}

phx_status buffer_copy(void*, void* dst, uint64_t dst_offset, void* src, uint64_t src_offset,
                       uint64_t size) {
  std::memcpy(static_cast<char*>(dst) + dst_offset, static_cast<const char*>(src) + src_offset,
              size);
  return PHX_STATUS_OK;
}

phx_status stream_create(void*, uint32_t, void** out_stream) {
  *out_stream = new (std::nothrow) Stream;
  return *out_stream != nullptr ? PHX_STATUS_OK : PHX_STATUS_OUT_OF_MEMORY;
}

void stream_destroy(void*, void* stream) { delete static_cast<Stream*>(stream); }

kernels::HostTensor host_view(const phx_plugin_tensor& t) {
  kernels::HostTensor view;
  view.data = t.buffer != nullptr ? static_cast<char*>(t.buffer) + t.offset : nullptr;
  view.dtype = t.dtype;
  view.rank = t.rank;
  for (uint32_t i = 0; i < PHX_MAX_RANK; ++i) view.shape[i] = t.shape[i];
  return view;
}

phx_status stream_submit(void* plugin, void* stream, const phx_plugin_op* op,
                         uint64_t* out_ticket) {
  Plugin& p = *self(plugin);
  kernels::HostTensor inputs[PHX_MAX_OP_INPUTS], outputs[PHX_MAX_OP_OUTPUTS];
  if (op->input_count > PHX_MAX_OP_INPUTS || op->output_count > PHX_MAX_OP_OUTPUTS)
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "unexpected tensor count");
  for (size_t i = 0; i < op->input_count; ++i) inputs[i] = host_view(op->inputs[i]);
  for (size_t i = 0; i < op->output_count; ++i) outputs[i] = host_view(op->outputs[i]);
  auto start = std::chrono::steady_clock::now();
  phx_status status = kernels::run_op(op->op, op->params, inputs, op->input_count, outputs,
                                      op->output_count, p.pool);
  if (status != PHX_STATUS_OK) return p.error(status, "no kernel for these dtypes");
  if (op->profile != nullptr && op->profile->metric_count + 2 <= PHX_PLUGIN_MAX_METRICS) {
    auto ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    op->profile->metrics[op->profile->metric_count++] = {"kernel_time_ns", ns};
    op->profile->metrics[op->profile->metric_count++] = {"threads",
                                                         static_cast<double>(p.pool.size())};
  }
  *out_ticket = ++static_cast<Stream*>(stream)->submitted;
  return PHX_STATUS_OK;
}

phx_status stream_wait(void*, void*, uint64_t) { return PHX_STATUS_OK; }

phx_status stream_completed(void*, void* stream, uint64_t* out_ticket) {
  *out_ticket = static_cast<Stream*>(stream)->submitted;
  return PHX_STATUS_OK;
}

phx_status memory_stats(void* plugin, uint32_t, phx_memory_stats* out_stats) {
  const phx_memory_stats stats = self(plugin)->memory.stats();
  phx_plugin_write_struct(out_stats, &stats, sizeof stats);
  return PHX_STATUS_OK;
}

phx_status memory_set_limit(void* plugin, uint32_t, uint64_t limit_bytes) {
  self(plugin)->memory.set_limit(limit_bytes);
  return PHX_STATUS_OK;
}

phx_status memory_release_cached(void* plugin, uint32_t) {
  self(plugin)->memory.release_cached();
  return PHX_STATUS_OK;
}

constexpr phx_plugin_api kApi = {
    sizeof(phx_plugin_api),
    PHX_PLUGIN_ABI_MAJOR,
    PHX_PLUGIN_ABI_MINOR,
    "cpu",
    "0.1.0",
    initialize,
    shutdown,
    device_count,
    device_info,
    op_supported,
    buffer_allocate,
    buffer_free,
    buffer_write,
    buffer_read,
    stream_create,
    stream_destroy,
    stream_submit,
    stream_wait,
    stream_completed,
    memory_stats,
    memory_set_limit,
    memory_release_cached,
    buffer_copy,
    nullptr,  // device_stats: the CPU device keeps none beyond its memory statistics
};

}  // namespace
}  // namespace phx::cpu

extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host*,
                                                         const phx_plugin_api** out_api) {
  *out_api = &phx::cpu::kApi;
  return PHX_STATUS_OK;
}
