// A roofline time model for the devices that have no cycle model of their own (cpu,
// vulkan): what graph_estimate answers (plugin.h). A node takes
//   overhead + max(flops / flops_per_ns, bytes / bytes_per_ns)
// where flops and bytes come from its shapes (node_work) and the three throughputs are
// measured once on the device through the plugin's own entries (measure_throughput), or
// fixed nominal figures where the consumer asked for determinism.
#pragma once

#include <phx/op_counts.h>
#include <phynexus/plugin.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace phx::plugin_common {

// What a node does: its arithmetic and the bytes it moves, as phx/op_counts.h counts
// every op (profiles and the core's cost model count alike). node is one of graph's,
// with its first input present and at least one output.
OpCounts node_work(const phx_plugin_graph& graph, const phx_plugin_node& node);

struct Throughput {
  double flops_per_ns = 0;    // an f32 GEMM's
  double bytes_per_ns = 0;    // read and written, by an elementwise op over a large tensor
  double op_overhead_ns = 0;  // an op on one element, submitted and waited for
};

// The node's time on a device of these throughputs, rounded up to whole ns.
uint64_t roofline_time_ns(const OpCounts& work, const Throughput& throughput);

// How big the measuring ops are: an f32 GEMM of gemm_size^3, a relu over copy_elements
// f32 values, each run repeats times after one untimed run (which makes a device's
// pipelines).
struct ProbeSizes {
  int64_t gemm_size = 256;
  int64_t copy_elements = int64_t{1} << 22;
  int repeats = 3;
};

// Measures device's throughputs by running the probe ops through api's own entries
// (buffer_allocate, stream_submit, stream_wait...): the fastest of the repeats, less the
// overhead of an op. False with error when an entry fails; the plugin's buffers and
// stream are freed either way.
bool measure_throughput(const phx_plugin_api& api, void* plugin, uint32_t device,
                        const ProbeSizes& sizes, Throughput& out, std::string& error);

// A device's throughputs, measured on the first get and kept. Thread-safe.
class MeasuredThroughput {
 public:
  // The measured figures, or fallback when the measurement failed (error says why).
  const Throughput& get(const phx_plugin_api& api, void* plugin, uint32_t device,
                        const ProbeSizes& sizes, const Throughput& fallback);
  const std::string& error() const { return error_; }

 private:
  std::once_flag once_;
  Throughput value_;
  std::string error_;
};

// graph_estimate's answer (plugin.h) for a device of throughput: each node's roofline
// time; UINT64_MAX for a node whose op and first input's dtype api.op_supported rejects.
phx_status estimate_graph(const phx_plugin_api& api, void* plugin, uint32_t device,
                          const phx_plugin_graph& graph, const Throughput& throughput,
                          uint64_t* out_time_ns);

}  // namespace phx::plugin_common
