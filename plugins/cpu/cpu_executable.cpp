#include "cpu_executable.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "host_buffers.h"
#include "phx/kernels/ops.h"

namespace phx::cpu {
namespace {

// Elements of one block of a chain: 8 KiB per value, so that a chain's operands of one
// block stay in the first or second level cache while every op of the chain runs.
constexpr int64_t kBlock = 2048;

bool elementwise(phx_op_id op) {
  switch (op) {
    case PHX_OP_ADD:
    case PHX_OP_SUB:
    case PHX_OP_MUL:
    case PHX_OP_DIV:
    case PHX_OP_RELU:
    case PHX_OP_GELU:
    case PHX_OP_SILU:
      return true;
    default:
      return false;
  }
}

uint64_t count_of(const phx_plugin_value& v) { return phx_plugin_element_count(v.rank, v.shape); }

float* f32_data(const phx_plugin_tensor& t) {
  return reinterpret_cast<float*>(static_cast<char*>(plugin_common::block_data(t.buffer)) +
                                  t.offset);
}

// A matmul's B that every run binds with the same contents, packed now for the GEMM.
std::optional<kernels::PackedB> packed_weight(const phx_plugin_graph& graph,
                                              const phx_plugin_node& node,
                                              const phx_matmul_params& params) {
  if (node.op != PHX_OP_MATMUL) return std::nullopt;
  const phx_plugin_value& b = graph.values[node.inputs[1]];
  if (b.kind != PHX_PLUGIN_VALUE_CONSTANT || (b.flags & PHX_PLUGIN_VALUE_CONTENTS_FIXED) == 0)
    return std::nullopt;
  const kernels::HostTensor weight = plugin_common::host_view(b.tensor);
  if (!kernels::matmul_packs_b(graph.values[node.inputs[0]].dtype, weight)) return std::nullopt;
  return kernels::matmul_pack_b(params, weight);
}

void add_metric(phx_plugin_profile* profile, const char* name, double value) {
  if (profile != nullptr && profile->metric_count < PHX_PLUGIN_MAX_METRICS)
    profile->metrics[profile->metric_count++] = {name, value};
}

}  // namespace

std::unique_ptr<Executable> Executable::compile(const phx_plugin_graph& graph) {
  auto exe = std::unique_ptr<Executable>(new Executable);
  std::vector<std::vector<size_t>> readers(graph.value_count);
  for (size_t n = 0; n < graph.node_count; ++n) {
    const phx_plugin_node& source = graph.nodes[n];
    Node node;
    node.op = source.op;
    const OpSchema* schema = find_op_schema(source.op);
    const size_t bytes = schema != nullptr ? params_struct_size(schema->params) : 0;
    node.has_params = source.params != nullptr && bytes > 0;
    if (node.has_params) std::memcpy(&node.params, source.params, bytes);
    node.inputs.assign(source.inputs, source.inputs + source.input_count);
    node.outputs.assign(source.outputs, source.outputs + source.output_count);
    for (uint32_t v : node.inputs)
      if (v != PHX_PLUGIN_NO_VALUE) readers[v].push_back(n);
    node.packed_b = packed_weight(
        graph, source,
        node.has_params ? node.params.matmul : phx_matmul_params PHX_MATMUL_PARAMS_INIT);
    exe->nodes_.push_back(std::move(node));
  }

  // A node joins the chain before it when both are f32 elementwise ops of one output size
  // and each of its operands has that size or is one value (the op rules then map output
  // element i to operand element i, or to the one value).
  auto fusable = [&](size_t n, uint64_t size) {
    const phx_plugin_node& node = graph.nodes[n];
    if (!elementwise(node.op) || count_of(graph.values[node.outputs[0]]) != size) return false;
    for (size_t i = 0; i < node.input_count; ++i) {
      const phx_plugin_value& in = graph.values[node.inputs[i]];
      if (in.dtype != PHX_DTYPE_F32 || (count_of(in) != size && count_of(in) != 1)) return false;
    }
    return graph.values[node.outputs[0]].dtype == PHX_DTYPE_F32;
  };
  for (size_t n = 0; n < graph.node_count;) {
    Group group{n, 1, {}};
    const uint64_t size = count_of(graph.values[graph.nodes[n].outputs[0]]);
    const bool fuse = (graph.flags & PHX_PLUGIN_GRAPH_NO_FUSION) == 0;
    if (fuse && fusable(n, size) && size > 1)
      while (n + group.count < graph.node_count && fusable(n + group.count, size)) ++group.count;
    // A value stays in the block when only the next node of the chain reads it.
    for (size_t k = 0; k + 1 < group.count; ++k) {
      const uint32_t v = graph.nodes[n + k].outputs[0];
      group.in_block.push_back(graph.values[v].kind == PHX_PLUGIN_VALUE_INTERMEDIATE &&
                               std::all_of(readers[v].begin(), readers[v].end(),
                                           [&](size_t r) { return r == n + k + 1; }));
    }
    group.in_block.push_back(false);
    n += group.count;
    exe->groups_.push_back(std::move(group));
  }
  return exe;
}

phx_status Executable::run_node(const Node& node, const phx_plugin_tensor* values,
                                kernels::ThreadPool& pool) {
  kernels::HostTensor in[PHX_MAX_OP_INPUTS], out[PHX_MAX_OP_OUTPUTS];
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (node.inputs[i] != PHX_PLUGIN_NO_VALUE)
      in[i] = plugin_common::host_view(values[node.inputs[i]]);
  for (size_t o = 0; o < node.outputs.size(); ++o)
    out[o] = plugin_common::host_view(values[node.outputs[o]]);
  if (node.packed_b)
    return kernels::run_matmul_packed(
        node.has_params ? node.params.matmul : phx_matmul_params PHX_MATMUL_PARAMS_INIT, in,
        node.inputs.size(), out[0], *node.packed_b, pool);
  return kernels::run_op(node.op, node.has_params ? &node.params : nullptr, in, node.inputs.size(),
                         out, node.outputs.size(), pool);
}

size_t Executable::prepacked_weight_count() const {
  return size_t(std::count_if(nodes_.begin(), nodes_.end(),
                              [](const Node& node) { return node.packed_b.has_value(); }));
}

size_t Executable::fused_node_count() const {
  size_t fused = 0;
  for (const Group& group : groups_) fused += group.count - 1;
  return fused;
}

phx_status Executable::run(const phx_plugin_tensor* values, phx_plugin_profile* const* profiles,
                           kernels::ThreadPool& pool) const {
  for (const Group& group : groups_) {
    const auto start = std::chrono::steady_clock::now();
    if (group.count > 1 && blockwise_safe(group, values)) {
      run_chain(group, values, pool);
    } else {
      if (group.count > 1) ++unfused_chain_runs_;
      for (size_t k = 0; k < group.count; ++k)
        if (phx_status status = run_node(nodes_[group.first + k], values, pool);
            status != PHX_STATUS_OK)
          return status;
    }
    if (profiles != nullptr) {
      const double ns =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
              .count();
      add_metric(profiles[group.first], "kernel_time_ns", ns);
      add_metric(profiles[group.first], "fused_nodes", double(group.count - 1));
    }
  }
  return PHX_STATUS_OK;
}

// Whether the chain's values in memory may be run block by block. The memory plan gives
// the room of a value nobody reads any more to a later one, which is safe node by node;
// block by block a node still reads the dead value's next blocks after a later node
// wrote the new one's first. Two values at one address are safe (element i of both is
// byte range i of both), a partial overlap is not.
bool Executable::blockwise_safe(const Group& group, const phx_plugin_tensor* values) const {
  std::vector<std::pair<const char*, const char*>> ranges;
  for (size_t k = 0; k < group.count; ++k) {
    const Node& node = nodes_[group.first + k];
    std::vector<uint32_t> touched(node.inputs);
    if (!group.in_block[k]) touched.push_back(node.outputs[0]);
    for (uint32_t v : touched) {
      const uint64_t count = phx_plugin_element_count(values[v].rank, values[v].shape);
      if (count == 1) continue;  // read before any block runs
      const char* start = reinterpret_cast<const char*>(f32_data(values[v]));
      ranges.emplace_back(start, start + count * sizeof(float));
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t r = 1; r < ranges.size(); ++r)
    if (ranges[r].first != ranges[r - 1].first && ranges[r].first < ranges[r - 1].second)
      return false;
  return true;
}

// Each task takes whole blocks through every node of the chain. One-value operands are
// read before any block is written, for the reason blockwise_safe gives.
void Executable::run_chain(const Group& group, const phx_plugin_tensor* values,
                           kernels::ThreadPool& pool) const {
  const phx_plugin_tensor& first_out = values[nodes_[group.first].outputs[0]];
  const int64_t size = int64_t(phx_plugin_element_count(first_out.rank, first_out.shape));
  std::vector<float> scalars;  // per node and input: the one value, when it is one
  for (size_t k = 0; k < group.count; ++k)
    for (uint32_t v : nodes_[group.first + k].inputs) {
      const phx_plugin_tensor& t = values[v];
      scalars.push_back(phx_plugin_element_count(t.rank, t.shape) == 1 ? *f32_data(t) : 0.0f);
    }
  const int64_t blocks = (size + kBlock - 1) / kBlock;
  const size_t tasks = std::min<size_t>(size_t(blocks), pool.size());
  pool.run(tasks, [&](size_t task) {
    float scratch[2][kBlock];
    for (int64_t b = int64_t(task) * blocks / int64_t(tasks);
         b < int64_t(task + 1) * blocks / int64_t(tasks); ++b) {
      const int64_t begin = b * kBlock, len = std::min(kBlock, size - begin);
      size_t scalar = 0;
      for (size_t k = 0; k < group.count; ++k) {
        const Node& node = nodes_[group.first + k];
        const float* in[2] = {};
        int64_t step[2] = {1, 1};
        for (size_t i = 0; i < node.inputs.size(); ++i, ++scalar) {
          const uint32_t v = node.inputs[i];
          if (k > 0 && group.in_block[k - 1] && v == nodes_[group.first + k - 1].outputs[0]) {
            in[i] = scratch[(k - 1) % 2];
          } else if (phx_plugin_element_count(values[v].rank, values[v].shape) == 1) {
            in[i] = &scalars[scalar];
            step[i] = 0;
          } else {
            in[i] = f32_data(values[v]) + begin;
          }
        }
        float* out = group.in_block[k] ? scratch[k % 2] : f32_data(values[node.outputs[0]]) + begin;
        kernels::elementwise_f32(node.op, in[0], step[0], in[1], step[1], out, len);
      }
    }
  });
}

}  // namespace phx::cpu
