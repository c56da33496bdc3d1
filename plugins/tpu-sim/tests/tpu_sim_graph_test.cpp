// Executables on tpu-sim through the C API (docs/tpu-sim.md, "Executables"): a graph is
// one program in the chip's compile cache, keyed by its structure and shapes; a run gives
// the eager ops' results bit for bit as one ticket, and costs the sum of the eager ops'
// modelled times, a fused matmul priced as the eager fused matmul.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "sim_api_fixture.h"

namespace {

const phx_test::SimPluginNames kTpuSim = {"tpu-sim", "phx_tpu_sim", "PHX_TPU_SIM",
                                          "PHX_TPU_SIM_CONFIG"};

class Sim : public phx_test::SimContext {
 public:
  explicit Sim(const char* settings, uint32_t flags = 0)
      : SimContext(kTpuSim, settings, flags, nullptr) {}
};

using phx_test::Tensor;

std::vector<uint16_t> bf16_values(size_t n, float scale, float phase) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float f = scale * std::sin(0.37f * float(i) + phase);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    v[i] = static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);  // to nearest even
  }
  return v;
}

// y = softmax(relu(x . w + bias)) in bf16, x [m, 200], w [200, 96], bias [96]: with fusion
// the host hands tpu-sim two nodes, a matmul carrying the bias and the relu, and the
// softmax. activation: the dense layer's (relu unless a test changes it).
struct DenseSoftmax {
  static constexpr int64_t kK = 200, kN = 96;
  std::vector<uint16_t> w = bf16_values(kK * kN, 0.1f, 0.0f);
  std::vector<uint16_t> bias = bf16_values(kN, 0.5f, 1.0f);
  phx_graph graph = nullptr;

  DenseSoftmax(phx_context context, int64_t m, phx_op_id activation = PHX_OP_RELU,
               const char* prefix = "") {
    EXPECT_EQ(phx_graph_create(context, &graph), PHX_STATUS_OK);
    const int64_t x_shape[2] = {m, kK}, w_shape[2] = {kK, kN}, b_shape[1] = {kN};
    phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
    input.dtype = PHX_DTYPE_BF16;
    input.rank = 2;
    input.shape = x_shape;
    phx_value x = 0, wv = 0, bv = 0;
    EXPECT_EQ(phx_graph_add_input(graph, &input, &x), PHX_STATUS_OK);
    EXPECT_EQ(phx_graph_add_constant(graph, nullptr, PHX_DTYPE_BF16, 2, w_shape, w.data(),
                                     w.size() * 2, &wv),
              PHX_STATUS_OK);
    EXPECT_EQ(phx_graph_add_constant(graph, nullptr, PHX_DTYPE_BF16, 1, b_shape, bias.data(),
                                     bias.size() * 2, &bv),
              PHX_STATUS_OK);
    const std::string p = prefix;
    const phx_value product = node(PHX_OP_MATMUL, {x, wv}, p + "dense");
    const phx_value biased = node(PHX_OP_ADD, {product, bv}, p + "bias");
    const phx_value activated = node(activation, {biased}, p + "act");
    const phx_value y = node(PHX_OP_SOFTMAX, {activated}, p + "softmax");
    EXPECT_EQ(phx_graph_add_output(graph, y, "y"), PHX_STATUS_OK);
  }
  ~DenseSoftmax() { phx_graph_destroy(graph); }

  phx_value node(phx_op_id op, std::vector<phx_value> inputs, const std::string& name) {
    return phx_test::add_node(graph, op, inputs, name.c_str());
  }
};

// An executable that destroys itself.
class Executable {
 public:
  Executable(phx_context context, phx_graph graph, size_t device, uint32_t flags = 0) {
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = device;
    options.flags = flags;
    EXPECT_EQ(phx_graph_compile(context, graph, &options, &exe_), PHX_STATUS_OK)
        << phx_last_error();
  }
  ~Executable() {
    if (exe_ != nullptr) phx_executable_destroy(exe_);
  }
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;
  phx_executable get() const { return exe_; }

  std::map<std::string, double> stats() const {
    size_t count = 0;
    EXPECT_EQ(phx_executable_stats(exe_, nullptr, 0, &count), PHX_STATUS_OK) << phx_last_error();
    std::vector<phx_metric> metrics(count);
    EXPECT_EQ(phx_executable_stats(exe_, metrics.data(), count, &count), PHX_STATUS_OK);
    std::map<std::string, double> named;
    for (const phx_metric& m : metrics) named[m.name] = m.value;
    return named;
  }
  phx_executable_info info() const {
    phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
    EXPECT_EQ(phx_executable_describe(exe_, &info), PHX_STATUS_OK);
    return info;
  }

 private:
  phx_executable exe_ = nullptr;
};

uint64_t run_executable(phx_stream stream, const Executable& exe, const Tensor& x,
                        const Tensor& y) {
  const phx_tensor in = x.get(), out = y.get();
  uint64_t ticket = 0;
  EXPECT_EQ(phx_executable_run(stream, exe.get(), &in, 1, &out, 1, &ticket), PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK);
  return ticket;
}

uint64_t run_op(phx_stream stream, phx_op_id op, const void* params, std::vector<phx_tensor> inputs,
                phx_tensor output) {
  phx_op_desc desc = {sizeof(phx_op_desc), op, params, inputs.data(), inputs.size(), &output, 1};
  uint64_t ticket = 0;
  EXPECT_EQ(phx_op_run(stream, &desc, &ticket), PHX_STATUS_OK) << phx_last_error();
  return ticket;
}

// The metric name of the profile record of the node named node; NaN when absent.
double node_metric(phx_stream stream, const std::string& node, const char* name) {
  size_t count = 0;
  phx_profile_count(stream, &count);
  for (size_t i = 0; i < count; ++i) {
    phx_profile_record record = PHX_PROFILE_RECORD_INIT;
    if (phx_profile_get(stream, i, &record) != PHX_STATUS_OK || record.node == nullptr ||
        node != record.node)
      continue;
    for (size_t m = 0; m < record.metric_count; ++m)
      if (std::strcmp(record.metrics[m].name, name) == 0) return record.metrics[m].value;
  }
  return NAN;
}

// The eager ops the graph stands for, on tensors of the chip: the fused matmul (bias and
// relu in it) and the softmax, or with fused false the four separate ops.
std::vector<uint16_t> run_eagerly(Sim& sim, phx_stream stream, const DenseSoftmax& g,
                                  const Tensor& x, int64_t m, bool fused) {
  const size_t d = sim.device();
  Tensor w(sim.context(), d, PHX_DTYPE_BF16, {DenseSoftmax::kK, DenseSoftmax::kN});
  Tensor bias(sim.context(), d, PHX_DTYPE_BF16, {DenseSoftmax::kN});
  Tensor h(sim.context(), d, PHX_DTYPE_BF16, {m, DenseSoftmax::kN});
  Tensor y(sim.context(), d, PHX_DTYPE_BF16, {m, DenseSoftmax::kN});
  w.upload(g.w);
  bias.upload(g.bias);
  phx_matmul_params params PHX_MATMUL_PARAMS_INIT;
  if (fused) {
    params.activation = PHX_ACTIVATION_RELU;
    run_op(stream, PHX_OP_MATMUL, &params, {x.get(), w.get(), bias.get()}, h.get());
  } else {
    Tensor product(sim.context(), d, PHX_DTYPE_BF16, {m, DenseSoftmax::kN});
    Tensor biased(sim.context(), d, PHX_DTYPE_BF16, {m, DenseSoftmax::kN});
    run_op(stream, PHX_OP_MATMUL, &params, {x.get(), w.get()}, product.get());
    run_op(stream, PHX_OP_ADD, nullptr, {product.get(), bias.get()}, biased.get());
    run_op(stream, PHX_OP_RELU, nullptr, {biased.get()}, h.get());
  }
  const phx_softmax_params softmax PHX_SOFTMAX_PARAMS_INIT;
  run_op(stream, PHX_OP_SOFTMAX, &softmax, {h.get()}, y.get());
  EXPECT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
  return y.download<uint16_t>(size_t(m * DenseSoftmax::kN));
}

constexpr int64_t kM = 48;

// With fusion the executable's results are the eager fused matmul's and softmax's, bit for
// bit (the same MXU code on the same bytes); without, the four eager ops'.
TEST(TpuSimGraph, RunsGiveTheEagerOpsResultsBitForBit) {
  Sim sim("generation=v5e");
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  DenseSoftmax g(sim.context(), kM);
  Tensor x(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kK});
  x.upload(bf16_values(size_t(kM * DenseSoftmax::kK), 1.0f, 2.0f));
  for (const bool fused : {true, false}) {
    Executable exe(sim.context(), g.graph, d, fused ? 0 : PHX_COMPILE_NO_FUSION);
    ASSERT_NE(exe.get(), nullptr);
    EXPECT_EQ(exe.info().native_parts, 1u);
    EXPECT_EQ(exe.info().native_nodes, fused ? 2u : 4u);
    Tensor y(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kN});
    run_executable(stream, exe, x, y);
    const auto got = y.download<uint16_t>(size_t(kM * DenseSoftmax::kN));
    const auto want = run_eagerly(sim, stream, g, x, kM, fused);
    size_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) mismatches += got[i] != want[i] ? 1 : 0;
    EXPECT_EQ(mismatches, 0u) << (fused ? "fused" : "not fused");
  }
  phx_stream_destroy(stream);
}

// A run is one ticket: tickets grow by one per run, as per eager op.
TEST(TpuSimGraph, ARunIsOneTicket) {
  Sim sim("generation=v5e");
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  DenseSoftmax g(sim.context(), kM);
  Executable exe(sim.context(), g.graph, d);
  Tensor x(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kK});
  Tensor y(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kN});
  x.upload(bf16_values(size_t(kM * DenseSoftmax::kK), 1.0f, 2.0f));
  const uint64_t first = run_executable(stream, exe, x, y);
  EXPECT_EQ(run_executable(stream, exe, x, y), first + 1);
  EXPECT_EQ(run_op(stream, PHX_OP_RELU, nullptr, {y.get()}, y.get()), first + 2);
  EXPECT_EQ(run_executable(stream, exe, x, y), first + 3);
  phx_stream_destroy(stream);
}

// The same graph compiled again is a hit (built anew with other names too); other shapes
// or another activation are other programs.
TEST(TpuSimGraph, ASecondCompileOfTheSameGraphIsACacheHit) {
  Sim sim("generation=v5e");
  const size_t d = sim.device();
  DenseSoftmax g(sim.context(), kM);
  const auto before = sim.stats(d);
  Executable first(sim.context(), g.graph, d);
  auto s = first.stats();
  EXPECT_EQ(s["compile_cache_hit"], 0.0);
  EXPECT_EQ(s["compile_time_ns"], 5e6 + 1e6);  // an MXU node and a vector node
  EXPECT_EQ(s["nodes"], 2.0);
  EXPECT_EQ(s["mxu_nodes"], 1.0);

  Executable again(sim.context(), g.graph, d);
  s = again.stats();
  EXPECT_EQ(s["compile_cache_hit"], 1.0);
  EXPECT_EQ(s["compile_time_ns"], 0.0);
  DenseSoftmax renamed(sim.context(), kM, PHX_OP_RELU, "other ");
  EXPECT_EQ(Executable(sim.context(), renamed.graph, d).stats()["compile_cache_hit"], 1.0);

  DenseSoftmax taller(sim.context(), kM + 1);
  EXPECT_EQ(Executable(sim.context(), taller.graph, d).stats()["compile_cache_hit"], 0.0);
  DenseSoftmax gelu(sim.context(), kM, PHX_OP_GELU);
  EXPECT_EQ(Executable(sim.context(), gelu.graph, d).stats()["compile_cache_hit"], 0.0);

  const auto after = sim.stats(d);
  EXPECT_EQ(after.at("graph_compile_cache_hits"), 2.0);
  EXPECT_EQ(after.at("graph_compile_cache_misses"), 3.0);
  EXPECT_EQ(after.at("compile_cache_hits") - before.at("compile_cache_hits"), 2.0);
  EXPECT_EQ(after.at("compile_cache_misses") - before.at("compile_cache_misses"), 3.0);
  EXPECT_EQ(after.at("compile_time_ns_total") - before.at("compile_time_ns_total"), 3 * 6e6);
}

// A graph with a dynamic dimension is compiled again for each new size: each size is a
// program of its own in the cache, and a size seen before is a hit.
TEST(TpuSimGraph, EachSizeOfADynamicDimensionIsAProgramOfItsOwn) {
  Sim sim("generation=v5e");
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  DenseSoftmax g(sim.context(), PHX_DIM_DYNAMIC);
  Executable exe(sim.context(), g.graph, d);
  const double hits[] = {0, 0, 1};
  const int64_t rows[] = {4, 8, 4};
  for (size_t i = 0; i < 3; ++i) {
    Tensor x(sim.context(), d, PHX_DTYPE_BF16, {rows[i], DenseSoftmax::kK});
    Tensor y(sim.context(), d, PHX_DTYPE_BF16, {rows[i], DenseSoftmax::kN});
    x.upload(bf16_values(size_t(rows[i] * DenseSoftmax::kK), 1.0f, 0.0f));
    run_executable(stream, exe, x, y);
    EXPECT_EQ(exe.stats()["compile_cache_hit"], hits[i]) << rows[i] << " rows, run " << i;
  }
  const auto stats = sim.stats(d);
  EXPECT_EQ(stats.at("graph_compile_cache_misses"), 2.0);
  EXPECT_EQ(stats.at("graph_compile_cache_hits"), 1.0);
  phx_stream_destroy(stream);
}

// compile_cache_size=1: a second graph evicts the first, which then misses again.
TEST(TpuSimGraph, TheLeastRecentlyUsedGraphIsEvicted) {
  Sim sim("generation=v5e,compile_cache_size=1");
  const size_t d = sim.device();
  DenseSoftmax a(sim.context(), kM), b(sim.context(), 2 * kM);
  const double hits[] = {0, 1, 0, 0};  // a, a, b (evicts a), a (evicts b)
  phx_graph order[] = {a.graph, a.graph, b.graph, a.graph};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(Executable(sim.context(), order[i], d).stats()["compile_cache_hit"], hits[i]) << i;
  const auto stats = sim.stats(d);
  EXPECT_EQ(stats.at("compile_cache_evictions"), 2.0);
  EXPECT_EQ(stats.at("graph_compile_cache_misses"), 3.0);
  EXPECT_EQ(stats.at("graph_compile_cache_hits"), 1.0);
}

// The executable's modelled time is the sum of the eager ops' (the fused matmul priced as
// the eager fused matmul), in both timing modes; the runs' node records carry the eager
// records' cost figures; a run looks nothing up in the compile cache.
TEST(TpuSimGraph, TheModelledCostIsTheSumOfTheEagerOps) {
  for (const char* settings : {"generation=v5e,timing=overlap", "generation=v6e,timing=scalesim"}) {
    Sim sim(settings, PHX_CONTEXT_PROFILE);
    const size_t d = sim.device();
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
    DenseSoftmax g(sim.context(), kM);
    Tensor x(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kK});
    x.upload(bf16_values(size_t(kM * DenseSoftmax::kK), 1.0f, 2.0f));
    run_eagerly(sim, stream, g, x, kM, true);
    // The eager records: the fused matmul, then the softmax.
    const double eager_mm = phx_test::metric(stream, 0, "estimated_time_ns");
    const double eager_sm = phx_test::metric(stream, 1, "estimated_time_ns");
    const double eager_mxu = phx_test::metric(stream, 0, "mxu_cycles");
    const double eager_bytes =
        phx_test::metric(stream, 0, "hbm_bytes") + phx_test::metric(stream, 1, "hbm_bytes");
    EXPECT_EQ(phx_test::metric(stream, 0, "vector_cycles"), 0.0) << "the epilogue is fused";
    ASSERT_EQ(phx_profile_clear(stream), PHX_STATUS_OK);

    Executable exe(sim.context(), g.graph, d);
    auto s = exe.stats();
    EXPECT_DOUBLE_EQ(s["modelled_time_ns"], eager_mm + eager_sm) << settings;
    EXPECT_EQ(s["mxu_cycles"], eager_mxu) << settings;
    EXPECT_EQ(s["hbm_bytes"], eager_bytes) << settings;

    const auto before = sim.stats(d);
    Tensor y(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kN});
    run_executable(stream, exe, x, y);
    run_executable(stream, exe, x, y);
    const auto after = sim.stats(d);
    EXPECT_EQ(after.at("compile_cache_hits"), before.at("compile_cache_hits"));
    EXPECT_EQ(after.at("compile_cache_misses"), before.at("compile_cache_misses"));
    EXPECT_EQ(after.at("executable_runs") - before.at("executable_runs"), 2.0);
    EXPECT_EQ(after.at("ops") - before.at("ops"), 4.0);
    EXPECT_DOUBLE_EQ(after.at("modelled_time_ns_total") - before.at("modelled_time_ns_total"),
                     2 * (eager_mm + eager_sm));

    EXPECT_EQ(node_metric(stream, "dense + bias + act", "estimated_time_ns"), eager_mm);
    EXPECT_EQ(node_metric(stream, "softmax", "estimated_time_ns"), eager_sm);
    EXPECT_EQ(node_metric(stream, "dense + bias + act", "mxu_cycles"), eager_mxu);
    phx_stream_destroy(stream);
  }
}

// q k^T, softmax, times v in bf16: the host fuses them into one attention node (scale 1,
// no mask), which tpu-sim prices as the eager attention (two MXU products and the softmax
// on the vector unit) and computes with the eager attention's code.
TEST(TpuSimGraph, AFusedAttentionIsPricedAndComputedAsTheEagerAttention) {
  Sim sim("generation=v5e", PHX_CONTEXT_PROFILE);
  const size_t d = sim.device();
  const std::vector<int64_t> shape = {1, 2, 64, 32};
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(sim.context(), &graph), PHX_STATUS_OK);
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.dtype = PHX_DTYPE_BF16;
  input.rank = 4;
  input.shape = shape.data();
  phx_value q = 0, k = 0, v = 0;
  for (phx_value* value : {&q, &k, &v})
    ASSERT_EQ(phx_graph_add_input(graph, &input, value), PHX_STATUS_OK);
  const auto node = [&](phx_op_id op, const void* params, std::vector<phx_value> inputs) {
    return phx_test::add_node(graph, op, inputs, nullptr, params);
  };
  phx_matmul_params transposed PHX_MATMUL_PARAMS_INIT;
  transposed.transpose_b = 1;
  const phx_softmax_params last_axis PHX_SOFTMAX_PARAMS_INIT;
  const phx_value scores = node(PHX_OP_MATMUL, &transposed, {q, k});
  const phx_value weights = node(PHX_OP_SOFTMAX, &last_axis, {scores});
  const phx_value out = node(PHX_OP_MATMUL, nullptr, {weights, v});
  ASSERT_EQ(phx_graph_add_output(graph, out, "out"), PHX_STATUS_OK);

  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  Tensor tq(sim.context(), d, PHX_DTYPE_BF16, shape), tk(sim.context(), d, PHX_DTYPE_BF16, shape),
      tv(sim.context(), d, PHX_DTYPE_BF16, shape);
  const size_t count = 2 * 64 * 32;
  tq.upload(bf16_values(count, 0.5f, 0.0f));
  tk.upload(bf16_values(count, 0.5f, 1.0f));
  tv.upload(bf16_values(count, 1.0f, 2.0f));
  Tensor eager(sim.context(), d, PHX_DTYPE_BF16, shape);
  phx_attention_params params PHX_ATTENTION_PARAMS_INIT;
  params.scale = 1.0f;
  run_op(stream, PHX_OP_ATTENTION, &params, {tq.get(), tk.get(), tv.get()}, eager.get());
  const double eager_time = phx_test::metric(stream, 0, "estimated_time_ns");

  {
    Executable exe(sim.context(), graph, d);
    ASSERT_NE(exe.get(), nullptr);
    EXPECT_EQ(exe.info().fused_nodes, 2u);
    auto s = exe.stats();
    EXPECT_EQ(s["nodes"], 1.0);
    EXPECT_EQ(s["mxu_nodes"], 1.0);
    EXPECT_EQ(s["modelled_time_ns"], eager_time);
    Tensor got(sim.context(), d, PHX_DTYPE_BF16, shape);
    const phx_tensor inputs[3] = {tq.get(), tk.get(), tv.get()}, output = got.get();
    uint64_t ticket = 0;
    ASSERT_EQ(phx_executable_run(stream, exe.get(), inputs, 3, &output, 1, &ticket), PHX_STATUS_OK)
        << phx_last_error();
    ASSERT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK);
    EXPECT_EQ(got.download<uint16_t>(count), eager.download<uint16_t>(count));
  }
  phx_stream_destroy(stream);
  phx_graph_destroy(graph);
}

// phx_executable_stats of exe by name.
std::map<std::string, double> executable_stats(phx_executable exe) {
  size_t count = 0;
  EXPECT_EQ(phx_executable_stats(exe, nullptr, 0, &count), PHX_STATUS_OK) << phx_last_error();
  std::vector<phx_metric> metrics(count);
  EXPECT_EQ(phx_executable_stats(exe, metrics.data(), count, &count), PHX_STATUS_OK);
  std::map<std::string, double> named;
  for (const phx_metric& m : metrics) named[m.name] = m.value;
  return named;
}

// phx_executable_save and phx_executable_load end to end (docs/tpu-sim.md, "Saved
// executables"): in a fresh context, whose chip's compile cache is empty, the loaded
// executable's part is made from the saved model, at no modelled compile, and its runs
// give the original's bits; a chip of another configuration but the same name refuses it.
TEST(TpuSimGraph, ASavedExecutableLoadsWithoutCompilingAndGivesTheSameBits) {
  const auto input = bf16_values(size_t(kM * DenseSoftmax::kK), 1.0f, 2.0f);
  std::vector<unsigned char> bytes;
  std::vector<uint16_t> want;
  {
    Sim sim("generation=v5e");
    const size_t d = sim.device();
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
    DenseSoftmax g(sim.context(), kM);
    Executable exe(sim.context(), g.graph, d);
    Tensor x(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kK});
    Tensor y(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kN});
    x.upload(input);
    run_executable(stream, exe, x, y);
    want = y.download<uint16_t>(size_t(kM * DenseSoftmax::kN));
    size_t size = 0;
    ASSERT_EQ(phx_executable_save(exe.get(), nullptr, 0, &size), PHX_STATUS_OK) << phx_last_error();
    bytes.resize(size);
    ASSERT_EQ(phx_executable_save(exe.get(), bytes.data(), size, &size), PHX_STATUS_OK)
        << phx_last_error();
    phx_stream_destroy(stream);
  }
  {
    Sim sim("generation=v5e");
    const size_t d = sim.device();
    phx_executable loaded = nullptr;
    ASSERT_EQ(phx_executable_load(sim.context(), bytes.data(), bytes.size(), nullptr, &loaded),
              PHX_STATUS_OK)
        << phx_last_error();
    const auto stats = executable_stats(loaded);
    EXPECT_EQ(stats.at("loaded_from_serialized"), 1.0);
    EXPECT_EQ(stats.at("compile_time_ns"), 0.0);
    const auto device = sim.stats(d);
    EXPECT_EQ(device.at("executables_loaded"), 1.0);
    EXPECT_EQ(device.at("graph_compile_cache_misses"), 0.0);
    EXPECT_EQ(device.at("compile_time_ns_total"), 0.0);

    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
    Tensor x(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kK});
    Tensor y(sim.context(), d, PHX_DTYPE_BF16, {kM, DenseSoftmax::kN});
    x.upload(input);
    const phx_tensor in = x.get(), out = y.get();
    ASSERT_EQ(phx_executable_run(stream, loaded, &in, 1, &out, 1, nullptr), PHX_STATUS_OK)
        << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
    EXPECT_EQ(y.download<uint16_t>(want.size()), want);
    phx_stream_destroy(stream);
    phx_executable_destroy(loaded);
  }
  {
    Sim sim("generation=v5e,precision=highest");  // the same device name, other numerics
    phx_executable loaded = nullptr;
    EXPECT_EQ(phx_executable_load(sim.context(), bytes.data(), bytes.size(), nullptr, &loaded),
              PHX_STATUS_INCOMPATIBLE);
    EXPECT_EQ(loaded, nullptr);
    EXPECT_NE(std::string(phx_last_error()).find("precision="), std::string::npos)
        << phx_last_error();
  }
}

// PHX_PLACEMENT_COST asks tpu-sim's graph_estimate (docs/tpu-sim.md, "Time estimates"):
// the input lives on the chip and the chip's model prices both nodes far below the CPU's
// nominal roofline (a 1.8 MFLOP matmul: about 20 us there), so both stay on the chip, each
// predicted at its modelled time rounded up; under PHX_COMPILE_DETERMINISTIC two compiles
// place and price the nodes alike.
TEST(TpuSimGraph, CostPlacementPricesTheNodesWithTheModel) {
  Sim sim("generation=v5e");
  ASSERT_TRUE(sim.has_cpu());
  DenseSoftmax g(sim.context(), kM);
  std::vector<std::vector<std::pair<size_t, uint64_t>>> placements;
  for (int compile = 0; compile < 2; ++compile) {
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = sim.device();
    const size_t cpu = sim.cpu();
    options.other_devices = &cpu;
    options.other_device_count = 1;
    options.placement = PHX_PLACEMENT_COST;
    options.flags = PHX_COMPILE_DETERMINISTIC;
    phx_executable exe = nullptr;
    ASSERT_EQ(phx_graph_compile(sim.context(), g.graph, &options, &exe), PHX_STATUS_OK)
        << phx_last_error();
    phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
    ASSERT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
    auto& nodes = placements.emplace_back();
    for (size_t n = 0; n < info.node_count; ++n) {
      phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
      ASSERT_EQ(phx_executable_describe_node(exe, n, &node), PHX_STATUS_OK);
      EXPECT_GT(node.predicted_time_ns, 0u) << node.name;
      EXPECT_LT(node.predicted_time_ns, UINT64_MAX) << node.name;
      EXPECT_EQ(node.device, sim.device()) << node.name;
      nodes.emplace_back(node.device, node.predicted_time_ns);
    }
    ASSERT_EQ(nodes.size(), 2u);
    // The sum of the two estimates, each rounded up, is the part's modelled time.
    const double modelled = executable_stats(exe).at("modelled_time_ns");
    const double predicted = double(nodes[0].second + nodes[1].second);
    EXPECT_GE(predicted, modelled);
    EXPECT_LT(predicted, modelled + 2.0);
    phx_executable_destroy(exe);
  }
  EXPECT_EQ(placements[0], placements[1]);
}

// layer_norm, times gamma, plus beta (beta the add's first operand) in f32: the host fuses
// them into one layer_norm node taking gamma and beta, which tpu-sim computes with the eager
// layer_norm's code: the bits of the eager layer_norm(x, gamma, beta).
TEST(TpuSimGraph, ANormTakesItsScaleAndShift) {
  Sim sim("generation=v5e");
  const size_t d = sim.device();
  constexpr int64_t kRows = 8, kD = 64;
  std::vector<float> xs(kRows * kD), gammas(kD), betas(kD);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 2.0f * std::sin(0.37f * float(i));
  for (size_t i = 0; i < gammas.size(); ++i) {
    gammas[i] = 1.0f + 0.5f * std::cos(0.21f * float(i));
    betas[i] = 0.25f * std::sin(0.13f * float(i));
  }
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(sim.context(), &graph), PHX_STATUS_OK);
  const int64_t x_shape[2] = {kRows, kD}, row[1] = {kD};
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.dtype = PHX_DTYPE_F32;
  input.rank = 2;
  input.shape = x_shape;
  phx_value x = 0, gamma = 0, beta = 0;
  ASSERT_EQ(phx_graph_add_input(graph, &input, &x), PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_add_constant(graph, "gamma", PHX_DTYPE_F32, 1, row, gammas.data(),
                                   gammas.size() * 4, &gamma),
            PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_add_constant(graph, "beta", PHX_DTYPE_F32, 1, row, betas.data(),
                                   betas.size() * 4, &beta),
            PHX_STATUS_OK);
  const phx_value normalized = phx_test::add_node(graph, PHX_OP_LAYER_NORM, {x}, "norm");
  const phx_value scaled = phx_test::add_node(graph, PHX_OP_MUL, {normalized, gamma}, "scale");
  const phx_value y = phx_test::add_node(graph, PHX_OP_ADD, {beta, scaled}, "shift");
  ASSERT_EQ(phx_graph_add_output(graph, y, "y"), PHX_STATUS_OK);

  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  Tensor tx(sim.context(), d, PHX_DTYPE_F32, {kRows, kD}),
      tg(sim.context(), d, PHX_DTYPE_F32, {kD}), tb(sim.context(), d, PHX_DTYPE_F32, {kD}),
      eager(sim.context(), d, PHX_DTYPE_F32, {kRows, kD});
  tx.upload(xs);
  tg.upload(gammas);
  tb.upload(betas);
  const phx_norm_params params PHX_NORM_PARAMS_INIT;
  run_op(stream, PHX_OP_LAYER_NORM, &params, {tx.get(), tg.get(), tb.get()}, eager.get());
  ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
  {
    Executable exe(sim.context(), graph, d);
    ASSERT_NE(exe.get(), nullptr);
    EXPECT_EQ(exe.info().fused_nodes, 2u);
    EXPECT_EQ(exe.stats()["nodes"], 1.0);
    Tensor got(sim.context(), d, PHX_DTYPE_F32, {kRows, kD});
    run_executable(stream, exe, tx, got);
    EXPECT_EQ(got.download<float>(size_t(kRows * kD)), eager.download<float>(size_t(kRows * kD)));
  }
  phx_stream_destroy(stream);
  phx_graph_destroy(graph);
}

}  // namespace
