// The CPU device's executables (plugins/cpu/cpu_executable.h): chains of f32 elementwise
// ops run fused, block by block. The oracle is the same nodes run one by one with
// phx_op_run on the CPU device: the fused chain must give the same bits, since each
// element is computed by the same code in the same order. Sizes straddle the 2048-element
// block and the thread split; the chains mix one-value operands, values read twice, a
// graph output inside a chain and a value the memory plan lets a later one overwrite.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace {

class CpuExecutable : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string cpu = std::string(PHX_TEST_DEFAULT_PLUGIN_DIR) + "/phx_cpu.so";
    const char* paths[] = {cpu.c_str()};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 1;
    options.use_default_search_path = 0;
    options.num_threads = 2;
    options.flags |= PHX_CONTEXT_PROFILE;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_stream_create(context_, 0, &stream_), PHX_STATUS_OK);
    ASSERT_EQ(phx_graph_create(context_, &graph_), PHX_STATUS_OK);
  }
  void TearDown() override { EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK); }

  // A graph value and, for the eager oracle, its tensor.
  struct Value {
    phx_value id;
    phx_tensor tensor;
  };

  phx_tensor make(const std::vector<int64_t>& shape, const std::vector<float>& values) {
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, 0, PHX_DTYPE_F32, shape.size(), shape.data(), &t),
              PHX_STATUS_OK);
    if (!values.empty()) {
      EXPECT_EQ(phx_tensor_upload(t, 0, values.data(), values.size() * sizeof(float)),
                PHX_STATUS_OK);
    }
    return t;
  }
  std::vector<float> random(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng_);
    return v;
  }
  Value input(const std::vector<int64_t>& shape, const std::vector<float>& values) {
    phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
    desc.dtype = PHX_DTYPE_F32;
    desc.rank = shape.size();
    desc.shape = shape.data();
    Value v{0, make(shape, values)};
    EXPECT_EQ(phx_graph_add_input(graph_, &desc, &v.id), PHX_STATUS_OK);
    inputs_.push_back(v.tensor);
    return v;
  }
  Value constant(const std::vector<int64_t>& shape, const std::vector<float>& values) {
    Value v{0, make(shape, values)};
    EXPECT_EQ(phx_graph_add_constant(graph_, nullptr, PHX_DTYPE_F32, shape.size(), shape.data(),
                                     values.data(), values.size() * sizeof(float), &v.id),
              PHX_STATUS_OK);
    return v;
  }
  // A constant the executable reads in place: its contents may change between runs.
  Value tensor_constant(const std::vector<int64_t>& shape, const std::vector<float>& values) {
    Value v{0, make(shape, values)};
    EXPECT_EQ(phx_graph_add_constant_tensor(graph_, nullptr, v.tensor, &v.id), PHX_STATUS_OK);
    return v;
  }
  // Adds the node and runs it eagerly on the values' tensors.
  Value node(phx_op_id op, std::vector<Value> in, const std::vector<int64_t>& shape,
             const void* params = nullptr) {
    std::vector<phx_value> ids;
    std::vector<phx_tensor> tensors;
    for (const Value& v : in) {
      ids.push_back(v.id);
      tensors.push_back(v.tensor);
    }
    Value out{phx_test::add_node(graph_, op, ids, nullptr, params), make(shape, {})};
    phx_op_desc run{sizeof(phx_op_desc), op,          params, tensors.data(),
                    tensors.size(),      &out.tensor, 1};
    EXPECT_EQ(phx_op_run(stream_, &run, nullptr), PHX_STATUS_OK) << phx_last_error();
    return out;
  }
  void output(const Value& v) {
    EXPECT_EQ(phx_graph_add_output(graph_, v.id, nullptr), PHX_STATUS_OK);
    expected_.push_back(v.tensor);
  }

  std::vector<float> download(phx_tensor t) {
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    EXPECT_EQ(phx_tensor_describe(t, &desc), PHX_STATUS_OK);
    std::vector<float> values(desc.element_count);
    EXPECT_EQ(phx_tensor_download(t, 0, values.data(), desc.byte_size), PHX_STATUS_OK);
    return values;
  }

  // Compiles and runs the graph; each output must equal the eager one bit for bit.
  phx_executable compile_and_check(uint32_t flags = 0) {
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.flags = flags;
    phx_executable exe = nullptr;
    EXPECT_EQ(phx_graph_compile(context_, graph_, &options, &exe), PHX_STATUS_OK)
        << phx_last_error();
    std::vector<phx_tensor> outputs;
    for (phx_tensor e : expected_) {
      phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
      EXPECT_EQ(phx_tensor_describe(e, &desc), PHX_STATUS_OK);
      outputs.push_back(make(std::vector<int64_t>(desc.shape, desc.shape + desc.rank), {}));
    }
    EXPECT_EQ(phx_executable_run(stream_, exe, inputs_.data(), inputs_.size(), outputs.data(),
                                 outputs.size(), nullptr),
              PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
    for (size_t o = 0; o < outputs.size(); ++o) {
      const std::vector<float> got = download(outputs[o]), want = download(expected_[o]);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << "output " << o << " differs from the nodes run one by one";
    }
    return exe;
  }

  std::map<std::string, double> stats(phx_executable exe) {
    phx_metric metrics[8];
    size_t count = 0;
    EXPECT_EQ(phx_executable_stats(exe, metrics, 8, &count), PHX_STATUS_OK);
    std::map<std::string, double> by_name;
    for (size_t i = 0; i < std::min<size_t>(count, 8); ++i)
      by_name[metrics[i].name] = metrics[i].value;
    return by_name;
  }

  phx_context context_ = nullptr;
  phx_stream stream_ = nullptr;
  phx_graph graph_ = nullptr;
  std::vector<phx_tensor> inputs_, expected_;
  std::mt19937 rng_{20261126};
};

TEST_F(CpuExecutable, AnElementwiseChainRunsAsOneKernelWithTheEagerBits) {
  // 5000 elements: two full blocks and a partial one, split over two threads.
  const std::vector<int64_t> shape = {5, 1000};
  const size_t n = 5000;
  Value x = input(shape, random(n, -3, 3));
  Value w = constant(shape, random(n, 0.5f, 2));
  Value half = constant({1}, {0.5f});
  Value a = node(PHX_OP_MUL, {x, w}, shape);
  Value b = node(PHX_OP_GELU, {a}, shape);
  Value c = node(PHX_OP_ADD, {b, half}, shape);  // a one-value operand
  Value d = node(PHX_OP_DIV, {half, c}, shape);  // as the first operand too
  Value e = node(PHX_OP_SILU, {d}, shape);
  Value f = node(PHX_OP_SUB, {e, b}, shape);  // b is read twice: kept in memory
  Value g = node(PHX_OP_RELU, {f}, shape);
  output(g);
  phx_executable exe = compile_and_check();
  const auto figures = stats(exe);
  EXPECT_EQ(figures.at("kernels_per_run"), 1.0);
  EXPECT_EQ(figures.at("fused_elementwise_nodes"), 6.0);
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.native_parts, 1u);
  EXPECT_EQ(info.native_nodes, 7u);
}

TEST_F(CpuExecutable, NoFusionRunsEachNodeAsItsOwnKernel) {
  const std::vector<int64_t> shape = {3000};
  Value x = input(shape, random(3000, -1, 1));
  Value a = node(PHX_OP_SILU, {x}, shape);
  Value b = node(PHX_OP_MUL, {a, x}, shape);
  output(b);
  const auto figures = stats(compile_and_check(PHX_COMPILE_NO_FUSION));
  EXPECT_EQ(figures.at("kernels_per_run"), 2.0);
  EXPECT_EQ(figures.at("fused_elementwise_nodes"), 0.0);
}

TEST_F(CpuExecutable, AChainStopsAtAnotherOpAndAtAnotherSizeAndKeepsItsOutputs) {
  const std::vector<int64_t> rows = {64, 48}, row = {1, 48};
  Value x = input(rows, random(64 * 48, -2, 2));
  Value bias = constant(row, random(48, -1, 1));
  Value w = constant({48, 48}, random(48 * 48, -0.2f, 0.2f));
  Value a = node(PHX_OP_SILU, {x}, rows);
  Value b = node(PHX_OP_ADD, {a, x}, rows);
  output(b);  // a graph output inside a chain
  Value c = node(PHX_OP_MUL, {b, b}, rows);
  Value d = node(PHX_OP_ADD, {c, bias}, rows);  // a broadcast row: a kernel of its own
  Value e = node(PHX_OP_RELU, {d}, rows);
  Value f = node(PHX_OP_MUL, {e, c}, rows);
  Value m = node(PHX_OP_MATMUL, {f, w}, rows);  // ends the chain
  output(m);
  phx_executable exe = compile_and_check();
  const auto figures = stats(exe);
  // [silu, add, mul], add (bias row), [relu, mul], matmul
  EXPECT_EQ(figures.at("kernels_per_run"), 4.0);
  EXPECT_EQ(figures.at("fused_elementwise_nodes"), 3.0);
}

TEST_F(CpuExecutable, ALongChainWhoseValuesShareMemoryGivesTheEagerBits) {
  // 40 nodes of 9000 elements, every eighth value read again eight nodes later: the memory
  // plan gives the room of the values the chain no longer needs to later ones.
  const std::vector<int64_t> shape = {9000};
  Value x = input(shape, random(9000, -1, 1));
  Value one = input({1}, {1.0f});
  Value s = node(PHX_OP_MUL, {one, one}, {1});  // a one-value intermediate
  Value v = node(PHX_OP_ADD, {x, s}, shape);
  Value keep = v;
  for (int k = 0; k < 38; ++k) {
    const phx_op_id ops[4] = {PHX_OP_MUL, PHX_OP_SILU, PHX_OP_ADD, PHX_OP_SUB};
    const phx_op_id op = ops[k % 4];
    v = op == PHX_OP_SILU ? node(op, {v}, shape) : node(op, {v, k % 8 == 0 ? keep : s}, shape);
    if (k % 8 == 0) keep = v;
  }
  output(v);
  phx_executable exe = compile_and_check();
  EXPECT_EQ(stats(exe).at("fused_elementwise_nodes"), 38.0);
}

TEST_F(CpuExecutable, TheFusedKernelLeavesItsTimeOnTheChainsFirstNode) {
  const std::vector<int64_t> shape = {4096};
  Value x = input(shape, random(4096, -1, 1));
  Value a = node(PHX_OP_RELU, {x}, shape);
  Value b = node(PHX_OP_MUL, {a, a}, shape);
  output(b);
  ASSERT_EQ(phx_profile_clear(stream_), PHX_STATUS_OK);
  compile_and_check();
  size_t count = 0;
  ASSERT_EQ(phx_profile_count(stream_, &count), PHX_STATUS_OK);
  ASSERT_EQ(count, 2u);  // a record per node of the run, both with its one ticket
  phx_profile_record first = PHX_PROFILE_RECORD_INIT, second = PHX_PROFILE_RECORD_INIT;
  ASSERT_EQ(phx_profile_get(stream_, 0, &first), PHX_STATUS_OK);
  ASSERT_EQ(phx_profile_get(stream_, 1, &second), PHX_STATUS_OK);
  EXPECT_EQ(first.ticket, second.ticket);
  std::map<std::string, double> metrics;
  for (size_t i = 0; i < first.metric_count; ++i)
    metrics[first.metrics[i].name] = first.metrics[i].value;
  EXPECT_EQ(metrics.count("kernel_time_ns"), 1u);
  EXPECT_EQ(metrics.at("fused_nodes"), 1.0);
  EXPECT_EQ(second.metric_count, 0u);
}

// A matmul whose B is a constant of fixed contents reads B packed at compile time; the
// GEMM computes from those panels what it computes from the ones it packs at every eager
// call, so the bits are the eager ones. K = 700 is cut into several K blocks, N = 100 ends
// in a partial panel; 67 rows split the rows over the threads, 4 rows and N = 1000 the
// columns. A constant read in place (its contents may change) is packed at every run.
TEST_F(CpuExecutable, AMatmulsConstantWeightIsPackedOnceWithTheEagerBits) {
  phx_matmul_params transposed = PHX_MATMUL_PARAMS_INIT;
  transposed.transpose_b = 1;
  Value x = input({67, 700}, random(67 * 700, -1, 1));
  Value narrow = input({4, 700}, random(4 * 700, -1, 1));
  Value w = constant({700, 100}, random(700 * 100, -0.5f, 0.5f));
  Value wide = constant({1000, 700}, random(1000 * 700, -0.5f, 0.5f));
  Value in_place = tensor_constant({700, 100}, random(700 * 100, -0.5f, 0.5f));
  output(node(PHX_OP_MATMUL, {x, w}, {67, 100}));
  output(node(PHX_OP_MATMUL, {narrow, wide}, {4, 1000}, &transposed));
  output(node(PHX_OP_MATMUL, {x, in_place}, {67, 100}));
  phx_executable exe = compile_and_check();
  EXPECT_EQ(stats(exe).at("prepacked_weights"), 2.0);
}

}  // namespace
