#include "roofline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace phx::plugin_common {
namespace {

// What fills the probe's buffers, a chunk at a time: no staging memory to touch first.
constexpr uint8_t kZeros[64 << 10] = {};

// The probe's buffers and stream, freed by the destructor whatever failed.
class Probe {
 public:
  Probe(const phx_plugin_api& api, void* plugin, uint32_t device)
      : api_(api), plugin_(plugin), device_(device) {}
  ~Probe() {
    if (stream_ != nullptr) api_.stream_destroy(plugin_, stream_);
    for (void* buffer : buffers_) api_.buffer_free(plugin_, buffer);
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  // An f32 tensor of shape in a new buffer, zero-filled (a buffer never written may read
  // faster than memory: pages the system has not backed yet).
  phx_plugin_tensor tensor(std::initializer_list<int64_t> shape) {
    phx_plugin_tensor t{};
    t.struct_size = sizeof t;
    t.dtype = PHX_DTYPE_F32;
    for (int64_t& d : t.shape) d = 1;
    for (int64_t d : shape) t.shape[t.rank++] = d;
    const uint64_t bytes = phx_plugin_element_count(t.rank, t.shape) * 4;
    check(api_.buffer_allocate(plugin_, device_, bytes, &t.buffer));
    if (t.buffer != nullptr) buffers_.push_back(t.buffer);
    for (uint64_t at = 0; at < bytes && ok_; at += sizeof kZeros)
      check(api_.buffer_write(plugin_, t.buffer, at, kZeros,
                              std::min<uint64_t>(sizeof kZeros, bytes - at)));
    return t;
  }
  // The fastest of repeats runs of op, after one untimed run, in ns.
  double time(const phx_plugin_op& op, int repeats) {
    if (ok_ && stream_ == nullptr) check(api_.stream_create(plugin_, device_, &stream_));
    double best = INFINITY;
    for (int i = 0; i <= repeats && ok_; ++i) {
      const auto start = std::chrono::steady_clock::now();
      uint64_t ticket = 0;
      check(api_.stream_submit(plugin_, stream_, &op, &ticket));
      if (ok_) check(api_.stream_wait(plugin_, stream_, ticket));
      const std::chrono::duration<double, std::nano> elapsed =
          std::chrono::steady_clock::now() - start;
      if (i > 0) best = std::min(best, elapsed.count());
    }
    return best;
  }
  bool ok() const { return ok_; }
  phx_status status() const { return status_; }

 private:
  void check(phx_status status) {
    if (status != PHX_STATUS_OK && ok_) {
      ok_ = false;
      status_ = status;
    }
  }
  const phx_plugin_api& api_;
  void* plugin_;
  uint32_t device_;
  void* stream_ = nullptr;
  std::vector<void*> buffers_;
  bool ok_ = true;
  phx_status status_ = PHX_STATUS_OK;
};

phx_plugin_op make_op(phx_op_id id, const void* params, const phx_plugin_tensor* inputs,
                      size_t input_count, const phx_plugin_tensor* output) {
  phx_plugin_op op{};
  op.struct_size = sizeof op;
  op.op = id;
  op.params = params;
  op.inputs = inputs;
  op.input_count = input_count;
  op.outputs = output;
  op.output_count = 1;
  return op;
}

}  // namespace

OpCounts node_work(const phx_plugin_graph& graph, const phx_plugin_node& node) {
  auto view = [&](uint32_t index) {
    if (index == PHX_PLUGIN_NO_VALUE) return OperandView{};
    const phx_plugin_value& v = graph.values[index];
    return OperandView{v.dtype, v.rank, v.shape};
  };
  std::vector<OperandView> in, out;
  for (size_t i = 0; i < node.input_count; ++i) in.push_back(view(node.inputs[i]));
  for (size_t i = 0; i < node.output_count; ++i) out.push_back(view(node.outputs[i]));
  return op_counts(node.op, node.params, in, out);
}

uint64_t roofline_time_ns(const OpCounts& work, const Throughput& t) {
  const double time =
      t.op_overhead_ns + std::max(work.flops / t.flops_per_ns, double(work.bytes) / t.bytes_per_ns);
  return time >= double(UINT64_MAX) ? UINT64_MAX - 1 : uint64_t(std::ceil(time));
}

bool measure_throughput(const phx_plugin_api& api, void* plugin, uint32_t device,
                        const ProbeSizes& sizes, Throughput& out, std::string& error) {
  Probe probe(api, plugin, device);
  const int64_t n = sizes.gemm_size;
  phx_plugin_tensor no_bias{};
  no_bias.struct_size = sizeof no_bias;
  const phx_plugin_tensor gemm[3] = {probe.tensor({n, n}), probe.tensor({n, n}), no_bias};
  const phx_plugin_tensor product = probe.tensor({n, n});
  const phx_plugin_tensor large = probe.tensor({sizes.copy_elements});
  const phx_plugin_tensor large_out = probe.tensor({sizes.copy_elements});
  const phx_plugin_tensor one = probe.tensor({1});
  const phx_plugin_tensor one_out = probe.tensor({1});
  const phx_matmul_params params PHX_MATMUL_PARAMS_INIT;
  const double overhead =
      probe.time(make_op(PHX_OP_RELU, nullptr, &one, 1, &one_out), sizes.repeats);
  const double gemm_ns =
      probe.time(make_op(PHX_OP_MATMUL, &params, gemm, 3, &product), sizes.repeats);
  const double copy_ns =
      probe.time(make_op(PHX_OP_RELU, nullptr, &large, 1, &large_out), sizes.repeats);
  if (!probe.ok()) {
    error = "an op of the measurement failed with status " + std::to_string(probe.status());
    return false;
  }
  // At least a tenth of the run is the work's: a device whose probe ops cost no more
  // than an empty op is timed by the whole run instead.
  out.op_overhead_ns = overhead;
  out.flops_per_ns = 2.0 * double(n * n * n) / std::max(gemm_ns - overhead, gemm_ns / 10);
  out.bytes_per_ns = 8.0 * double(sizes.copy_elements) / std::max(copy_ns - overhead, copy_ns / 10);
  return true;
}

const Throughput& MeasuredThroughput::get(const phx_plugin_api& api, void* plugin, uint32_t device,
                                          const ProbeSizes& sizes, const Throughput& fallback) {
  std::call_once(once_, [&] {
    if (!measure_throughput(api, plugin, device, sizes, value_, error_)) value_ = fallback;
  });
  return value_;
}

phx_status estimate_graph(const phx_plugin_api& api, void* plugin, uint32_t device,
                          const phx_plugin_graph& graph, const Throughput& throughput,
                          uint64_t* out_time_ns) {
  for (size_t n = 0; n < graph.node_count; ++n) {
    const phx_plugin_node& node = graph.nodes[n];
    int supported = 0;
    if (node.input_count > 0 && node.inputs[0] != PHX_PLUGIN_NO_VALUE && node.output_count > 0) {
      const phx_status status =
          api.op_supported(plugin, device, node.op, graph.values[node.inputs[0]].dtype, &supported);
      if (status != PHX_STATUS_OK) return status;
    }
    out_time_ns[n] = supported ? roofline_time_ns(node_work(graph, node), throughput) : UINT64_MAX;
  }
  return PHX_STATUS_OK;
}

}  // namespace phx::plugin_common
