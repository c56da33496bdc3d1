// The CPU plugin: one device, the host (or several that share it: PHX_CPU_DEVICES).
// Tensors live in a pooled host allocation; ops run synchronously on submission with the host
// kernels (threaded, vectorized), so a stream's work is finished when stream_submit returns. A
// graph's part runs as one executable (cpu_executable.h), its elementwise chains fused.
#include <phx/env.h>
#include <phynexus/plugin.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "cpu_device_info.h"
#include "cpu_executable.h"
#include "host_buffers.h"
#include "memory_entries.h"
#include "memory_pool.h"
#include "phx/kernels/gemm.h"
#include "phx/kernels/ops.h"
#include "phx/kernels/thread_pool.h"
#include "property_list.h"
#include "reporting.h"
#include "roofline.h"
#include "sync_stream.h"

namespace phx::cpu {
namespace {

using namespace plugin_common;

constexpr uint32_t kDtypeMask = PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_F16) |
                                PHX_DTYPE_BIT(PHX_DTYPE_BF16) | PHX_DTYPE_BIT(PHX_DTYPE_I8) |
                                PHX_DTYPE_BIT(PHX_DTYPE_I16) | PHX_DTYPE_BIT(PHX_DTYPE_I32) |
                                PHX_DTYPE_BIT(PHX_DTYPE_U8);

// The machine's memory, under the policy every host-computing device shares
// (memory_pool.h). Sizes round to classes so that a block freed by one tensor serves the
// next of a similar size; at most 1 GiB of freed blocks is kept, so that an idle process
// does not hold on to the machine's memory.
constexpr MemoryPool::Options kHostMemoryOptions = {"memory",
                                                    "counted",
                                                    /*alignment=*/64,
                                                    /*size_classes=*/true,
                                                    /*keep_freed=*/true,
                                                    /*max_kept_bytes=*/uint64_t{1} << 30,
                                                    /*simulated=*/false};

// What the estimates assume with PHX_PLUGIN_GRAPH_DETERMINISTIC, and where the
// measurement fails: a few cores' f32 GEMM, a desktop's memory bandwidth, an op's
// dispatch onto the thread pool (docs/plugin-guide.md, "Time estimates").
constexpr Throughput kNominalThroughput = {/*flops_per_ns=*/100.0, /*bytes_per_ns=*/20.0,
                                           /*op_overhead_ns=*/2000.0};
// A 128^3 f32 GEMM (4 MFLOP) and a relu over 2 MiB, three times each, and an op on one
// element: about 10 ms, most of it the first touch of the probe's 4.5 MiB of buffers.
constexpr ProbeSizes kProbeSizes = {/*gemm_size=*/128, /*copy_elements=*/int64_t{1} << 19,
                                    /*repeats=*/3};

// PHX_CPU_DEVICES: how many devices the host is shown as (docs/loader.md). As XLA's
// forced host device count does, they share the machine's memory pool and threads: a way
// to run multi-device programs (one rank per device, sharding) on one CPU. False, with
// error, for a value that is not a count from 1 to 64.
bool read_device_count(uint32_t& count, std::string& error) {
  count = 1;
  const char* text = env_value("PHX_CPU_DEVICES");
  if (text == nullptr || *text == '\0') return true;
  const char* end = text + std::strlen(text);
  const auto [rest, problem] = std::from_chars(text, end, count);
  if (problem != std::errc() || rest != end || count < 1 || count > 64) {
    error = std::string("PHX_CPU_DEVICES is '") + text + "'; it must be a count from 1 to 64";
    return false;
  }
  return true;
}

struct Plugin {
  explicit Plugin(const phx_plugin_host* h, uint32_t device_count)
      : host(h),
        devices(device_count),
        description(describe_host()),
        pool(h->num_threads),
        host_memory(0, description.memory_total_bytes, kHostMemoryOptions),
        properties({{"isa", kernels::gemm_isa()}, {"threads", std::to_string(pool.size())}}) {}

  const phx_plugin_host* host;
  uint32_t devices;  // PHX_CPU_DEVICES: all of them this machine, sharing what follows
  HostDescription description;
  kernels::ThreadPool pool;
  MemoryPool host_memory;
  PropertyList properties;
  MeasuredThroughput throughput;  // measured at the first graph_estimate

  MemoryPool& memory(uint32_t) { return host_memory; }
  phx_status error(phx_status status, const std::string& message) const {
    return fail(*host, status, message);
  }
};

Plugin* self(void* plugin) { return static_cast<Plugin*>(plugin); }

// The plugin's own table, which the measurement runs its probe ops through.
const phx_plugin_api& api_table();

phx_status initialize(const phx_plugin_host* host, void** out_plugin) {
  return guarded(*host, [&] {
    uint32_t devices = 1;
    std::string error;
    if (!read_device_count(devices, error)) return fail(*host, PHX_STATUS_INVALID_ARGUMENT, error);
    *out_plugin = new Plugin(host, devices);
    return PHX_STATUS_OK;
  });
}

void shutdown(void* plugin) { delete self(plugin); }

phx_status device_count(void* plugin, uint32_t* out_count) {
  *out_count = self(plugin)->devices;
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

phx_status stream_submit(void* plugin, void* stream, const phx_plugin_op* op,
                         uint64_t* out_ticket) {
  Plugin& p = *self(plugin);
  kernels::HostTensor inputs[PHX_MAX_OP_INPUTS], outputs[PHX_MAX_OP_OUTPUTS];
  if (op->input_count > PHX_MAX_OP_INPUTS || op->output_count > PHX_MAX_OP_OUTPUTS)
    return p.error(PHX_STATUS_INVALID_ARGUMENT, "unexpected tensor count");
  for (size_t i = 0; i < op->input_count; ++i) inputs[i] = host_view(op->inputs[i]);
  for (size_t i = 0; i < op->output_count; ++i) outputs[i] = host_view(op->outputs[i]);
  // The clock only for a record: a reading costs 5% of a tiny op's dispatch.
  const auto start = op->profile != nullptr ? std::chrono::steady_clock::now()
                                            : std::chrono::steady_clock::time_point{};
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
  *out_ticket = next_ticket(stream);
  return PHX_STATUS_OK;
}

phx_status graph_compile(void* plugin, uint32_t, const phx_plugin_graph* graph,
                         void** out_executable) {
  return guarded(*self(plugin)->host, [&] {
    *out_executable = Executable::compile(*graph).release();
    return PHX_STATUS_OK;
  });
}

phx_status executable_run(void* plugin, void* stream, void* executable,
                          const phx_plugin_tensor* values, size_t,
                          phx_plugin_profile* const* node_profiles, uint64_t* out_ticket) {
  Plugin& p = *self(plugin);
  const phx_status status =
      static_cast<const Executable*>(executable)->run(values, node_profiles, p.pool);
  if (status != PHX_STATUS_OK) return p.error(status, "a kernel of the executable failed");
  *out_ticket = next_ticket(stream);
  return PHX_STATUS_OK;
}

void executable_destroy(void*, void* executable) { delete static_cast<Executable*>(executable); }

// A roofline of each node's FLOPs and bytes (roofline.h) at the throughputs measured on the
// first call, or at the nominal ones when the consumer asked for determinism.
phx_status graph_estimate(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                          uint64_t* out_time_ns) {
  Plugin& p = *self(plugin);
  return guarded(*p.host, [&] {
    const bool deterministic = (graph->flags & PHX_PLUGIN_GRAPH_DETERMINISTIC) != 0;
    const Throughput& throughput =
        deterministic
            ? kNominalThroughput
            : p.throughput.get(api_table(), plugin, device, kProbeSizes, kNominalThroughput);
    return estimate_graph(api_table(), plugin, device, *graph, throughput, out_time_ns);
  });
}

phx_status executable_stats(void*, void* executable, phx_metric* out_metrics, size_t capacity,
                            size_t* out_count) {
  const auto& exe = *static_cast<const Executable*>(executable);
  const phx_metric metrics[] = {{"kernels_per_run", double(exe.kernel_count())},
                                {"fused_elementwise_nodes", double(exe.fused_node_count())},
                                {"unfused_chain_runs", double(exe.unfused_chain_runs())},
                                {"prepacked_weights", double(exe.prepacked_weight_count())}};
  std::copy_n(metrics, std::min(capacity, std::size(metrics)), out_metrics);
  *out_count = std::size(metrics);
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
    pool_buffer_allocate<Plugin>,
    pool_buffer_free<Plugin>,
    host_buffer_write,
    host_buffer_read,
    sync_stream_create,
    sync_stream_destroy,
    stream_submit,
    sync_stream_wait,
    sync_stream_completed,
    memory_stats<Plugin>,
    memory_set_limit<Plugin>,
    memory_release_cached<Plugin>,
    host_buffer_copy,
    nullptr,  // device_stats: the CPU device keeps none beyond its memory statistics
    nullptr,  // op_variant_supported: the host kernels run every variant of an op they claim
    graph_compile,
    executable_run,
    executable_destroy,
    executable_stats,
    nullptr,  // graph_claim: it runs alone every node it runs in a graph
    graph_estimate,
    nullptr,  // executable_serialize
    nullptr,  // executable_node_report: every node computes in its own dtype
    host_buffer_import,
    host_buffer_data,
    nullptr,  // collective_estimate: one device, no interconnect to model
};

const phx_plugin_api& api_table() { return kApi; }

}  // namespace
}  // namespace phx::cpu

extern "C" PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host*,
                                                         const phx_plugin_api** out_api) {
  *out_api = &phx::cpu::kApi;
  return PHX_STATUS_OK;
}
