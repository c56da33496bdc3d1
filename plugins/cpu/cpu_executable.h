// The CPU device's executables (plugin ABI 1.3): the part of a graph placed on the CPU,
// run in one call. Chains of f32 elementwise ops (add, sub, mul, div, relu, gelu, silu)
// of one shape run fused: block by block, each block through every op of the chain while
// it is in cache, the values only the next op of the chain reads never written to memory.
// A matmul whose B is a constant of fixed contents (an f32 matrix) has B packed at compile
// time into the GEMM's panels, which every run reads instead of packing B again. Every
// other node runs its kernel as stream_submit would. Results equal the nodes run one by
// one, bit for bit (kernels::elementwise_f32 computes each element as run_op does, and the
// GEMM computes from the prepacked panels what it computes from the ones it packs).
#pragma once

#include <phx/op_table.h>
#include <phynexus/plugin.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "phx/kernels/gemm.h"
#include "phx/kernels/thread_pool.h"

namespace phx::cpu {

class Executable {
 public:
  // Takes every graph the host hands over. Throws std::bad_alloc.
  static std::unique_ptr<Executable> compile(const phx_plugin_graph& graph);

  // Runs every node on values (one tensor per value of the graph). Returns a status of
  // run_op; profiles, when not null, get each node's figures.
  phx_status run(const phx_plugin_tensor* values, phx_plugin_profile* const* profiles,
                 kernels::ThreadPool& pool) const;

  size_t kernel_count() const { return groups_.size(); }
  size_t fused_node_count() const;
  // Matmuls whose B was packed at compile time.
  size_t prepacked_weight_count() const;
  // Runs of a chain node by node, since the memory plan overlapped its values
  // (blockwise_safe); counted over every run.
  uint64_t unfused_chain_runs() const { return unfused_chain_runs_; }

 private:
  struct Node {
    phx_op_id op = PHX_OP_INVALID;
    bool has_params = false;
    OpParams params{};  // copied by the size its op takes
    std::vector<uint32_t> inputs, outputs;
    std::optional<kernels::PackedB> packed_b;  // a matmul's constant B, packed
  };
  // Nodes [first, first + count) run as one kernel: a fused chain when count > 1.
  struct Group {
    size_t first = 0, count = 0;
    std::vector<bool> in_block;  // per node of a chain: its output lives in the block only
  };

  static phx_status run_node(const Node& node, const phx_plugin_tensor* values,
                             kernels::ThreadPool& pool);
  bool blockwise_safe(const Group& group, const phx_plugin_tensor* values) const;
  void run_chain(const Group& group, const phx_plugin_tensor* values,
                 kernels::ThreadPool& pool) const;

  std::vector<Node> nodes_;
  std::vector<Group> groups_;
  mutable std::atomic<uint64_t> unfused_chain_runs_{0};
};

}  // namespace phx::cpu
