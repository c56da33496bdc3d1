// The CPU executable against the memory layouts a host's memory plan may give: a value
// placed over the room of one that is dead by then. Node by node that is safe; block by
// block it is safe only at the same address, so a chain whose values overlap partly runs
// node by node (blockwise_safe). The graphs are built by hand over one arena, as the
// host would bind them, and the oracle is the same nodes run one by one with run_op on a
// copy of the arena: equal bits.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cpu_executable.h"
#include "host_buffers.h"
#include "phx/kernels/ops.h"

namespace {

using phx::cpu::Executable;

constexpr int64_t kCount = 5000;  // two full blocks of 2048 and a part of one

struct Chain {
  // u = x + x; t = u * u; w = t - u; y = relu(w): u is read by two nodes (in memory),
  // t and w by the next node alone (in the block), y is the output.
  std::vector<phx_plugin_value> values;
  std::vector<phx_plugin_node> nodes;
  std::vector<std::vector<uint32_t>> wiring;
};

Chain make_chain() {
  Chain chain;
  const phx_plugin_value_kind kinds[5] = {PHX_PLUGIN_VALUE_INPUT, PHX_PLUGIN_VALUE_INTERMEDIATE,
                                          PHX_PLUGIN_VALUE_INTERMEDIATE,
                                          PHX_PLUGIN_VALUE_INTERMEDIATE, PHX_PLUGIN_VALUE_OUTPUT};
  for (phx_plugin_value_kind kind : kinds) {
    phx_plugin_value v{};
    v.struct_size = sizeof v;
    v.kind = kind;
    v.dtype = PHX_DTYPE_F32;
    v.rank = 1;
    std::fill(v.shape, v.shape + PHX_MAX_RANK, 1);
    v.shape[0] = kCount;
    v.name = "v";
    chain.values.push_back(v);
  }
  chain.wiring = {{0, 0, 1}, {1, 1, 2}, {2, 1, 3}, {3, 4}};
  const phx_op_id ops[4] = {PHX_OP_ADD, PHX_OP_MUL, PHX_OP_SUB, PHX_OP_RELU};
  for (size_t n = 0; n < 4; ++n) {
    phx_plugin_node node{};
    node.struct_size = sizeof node;
    node.op = ops[n];
    node.inputs = chain.wiring[n].data();
    node.input_count = chain.wiring[n].size() - 1;
    node.outputs = chain.wiring[n].data() + node.input_count;
    node.output_count = 1;
    node.name = "n";
    chain.nodes.push_back(node);
  }
  return chain;
}

// Runs the chain with each value at offsets[v] floats into an arena; returns y.
std::vector<float> run(const Chain& chain, const std::vector<int64_t>& offsets, bool fused,
                       uint64_t* unfused_runs) {
  std::vector<float> arena(4 * kCount);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (int64_t i = 0; i < kCount; ++i) arena[size_t(offsets[0] + i)] = dist(rng);
  phx::plugin_common::MemoryBlock block{arena.data(), arena.size() * sizeof(float), 0};
  std::vector<phx_plugin_tensor> bound;
  for (size_t v = 0; v < chain.values.size(); ++v) {
    phx_plugin_tensor t{};
    t.struct_size = sizeof t;
    t.buffer = &block;
    t.offset = uint64_t(offsets[v]) * sizeof(float);
    t.dtype = PHX_DTYPE_F32;
    t.rank = 1;
    std::copy(chain.values[v].shape, chain.values[v].shape + PHX_MAX_RANK, t.shape);
    bound.push_back(t);
  }
  phx::kernels::ThreadPool pool(2);
  if (fused) {
    phx_plugin_graph graph{};
    graph.struct_size = sizeof graph;
    graph.values = chain.values.data();
    graph.value_count = chain.values.size();
    graph.nodes = chain.nodes.data();
    graph.node_count = chain.nodes.size();
    const auto exe = Executable::compile(graph);
    EXPECT_EQ(exe->run(bound.data(), nullptr, pool), PHX_STATUS_OK);
    *unfused_runs = exe->unfused_chain_runs();
  } else {
    for (const phx_plugin_node& node : chain.nodes) {
      phx::kernels::HostTensor in[2], out[1];
      for (size_t i = 0; i < node.input_count; ++i)
        in[i] = phx::plugin_common::host_view(bound[node.inputs[i]]);
      out[0] = phx::plugin_common::host_view(bound[node.outputs[0]]);
      EXPECT_EQ(phx::kernels::run_op(node.op, nullptr, in, node.input_count, out, 1, pool),
                PHX_STATUS_OK);
    }
  }
  return std::vector<float>(arena.begin() + offsets[4], arena.begin() + offsets[4] + kCount);
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(CpuExecutableLayout, ValuesApartRunFused) {
  const Chain chain = make_chain();
  const std::vector<int64_t> offsets = {0, kCount, 2 * kCount, 2 * kCount, 3 * kCount};
  uint64_t unfused = 99;
  expect_same_bits(run(chain, offsets, true, &unfused), run(chain, offsets, false, nullptr));
  EXPECT_EQ(unfused, 0u);
}

TEST(CpuExecutableLayout, AnOutputAtTheAddressOfADeadValueRunsFused) {
  const Chain chain = make_chain();
  // y takes u's room: u's last reader (w) comes before y's writer.
  const std::vector<int64_t> offsets = {0, kCount, 2 * kCount, 2 * kCount, kCount};
  uint64_t unfused = 99;
  expect_same_bits(run(chain, offsets, true, &unfused), run(chain, offsets, false, nullptr));
  EXPECT_EQ(unfused, 0u);
}

TEST(CpuExecutableLayout, AnOutputOverlappingPartOfADeadValueRunsNodeByNode) {
  const Chain chain = make_chain();
  // y starts in the middle of u's room: block by block, the relu of the first blocks
  // would overwrite u's later blocks before the subtraction reads them.
  const std::vector<int64_t> offsets = {0, kCount, 3 * kCount, 3 * kCount, kCount + kCount / 2};
  uint64_t unfused = 0;
  expect_same_bits(run(chain, offsets, true, &unfused), run(chain, offsets, false, nullptr));
  EXPECT_EQ(unfused, 1u);
}

}  // namespace
