// The plugin's entries called directly (direct_plugin.h): executable_serialize and
// graph_compile with the serialized bytes (serialized_model.h), and graph_estimate.
// A loaded executable must give the original's outputs bit for bit (its nodes run the
// same code); bytes that are not whole are INVALID_ARGUMENT, bytes of another graph,
// plugin version, format or chip INCOMPATIBLE, each with a message that says so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "config.h"
#include "direct_plugin.h"
#include "serialized_model.h"

namespace phx::tpu_sim {
namespace {

using phx_test::DirectPlugin;
using phx_test::plugin_tensor;
using phx_test::plugin_value;
using phx_test::PluginBuffer;
using phx_test::PluginGraph;

class TpuSimSerialize : public ::testing::Test {
 protected:
  void SetUp() override {
    // The defaults (one v5e), whatever the developer's own configuration says.
    setenv("PHX_TPU_SIM", "", 1);
    unsetenv("PHX_TPU_SIM_CONFIG");
    setenv("XDG_CONFIG_HOME", "/nonexistent/phx-tpu-sim-serialize-test", 1);
    plugin_ = std::make_unique<DirectPlugin>(PHX_TPU_SIM_PLUGIN);
    ASSERT_TRUE(plugin_->started());
  }
  const phx_plugin_api& api() const { return plugin_->api(); }
  void* plugin() const { return plugin_->plugin(); }

  // graph_compile's status; *out the executable on OK.
  phx_status compile(const phx_plugin_graph& graph, void** out) {
    *out = nullptr;
    return api().graph_compile(plugin(), 0, &graph, out);
  }
  phx_status load(phx_plugin_graph graph, const std::vector<uint8_t>& bytes, void** out) {
    graph.serialized = bytes.data();
    graph.serialized_size = bytes.size();
    return compile(graph, out);
  }

  std::unique_ptr<DirectPlugin> plugin_;
};

// x [m, 32] . w [32, 16] (relu) -> h; softmax(h) -> y; all f32.
struct DenseSoftmax {
  explicit DenseSoftmax(int64_t m) : m(m) {
    x = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {m, 32}, "x"));
    w = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {32, 16}, "w"));
    h = g.add(plugin_value(PHX_PLUGIN_VALUE_INTERMEDIATE, PHX_DTYPE_F32, {m, 16}, "h"));
    y = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_F32, {m, 16}, "y"));
    matmul.activation = PHX_ACTIVATION_RELU;
    g.node(PHX_OP_MATMUL, &matmul, {x, w, PHX_PLUGIN_NO_VALUE}, h, "dense");
    g.node(PHX_OP_SOFTMAX, &softmax, {h}, y, "softmax");
  }
  int64_t m;
  phx_matmul_params matmul PHX_MATMUL_PARAMS_INIT;
  phx_softmax_params softmax PHX_SOFTMAX_PARAMS_INIT;
  PluginGraph g;
  uint32_t x, w, h, y;
};

// Runs executable of d on fixed inputs; y's buffer starts as fill bytes, so that two runs
// agree only where both wrote every output byte.
std::vector<float> run(DirectPlugin& p, void* executable, DenseSoftmax& d, uint8_t fill) {
  const auto m = static_cast<size_t>(d.m);
  std::vector<float> x(m * 32), w(32 * 16), y(m * 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.11f * float(i)) * 0.5f;
  std::memset(y.data(), fill, y.size() * sizeof(float));
  PluginBuffer bx(p, 0, x.size() * 4), bw(p, 0, w.size() * 4), bh(p, 0, y.size() * 4),
      by(p, 0, y.size() * 4);
  bx.write(x.data(), x.size() * 4);
  bw.write(w.data(), w.size() * 4);
  by.write(y.data(), y.size() * 4);
  const phx_plugin_tensor values[] = {
      plugin_tensor(d.g.value_at(d.x), bx.get()), plugin_tensor(d.g.value_at(d.w), bw.get()),
      plugin_tensor(d.g.value_at(d.h), bh.get()), plugin_tensor(d.g.value_at(d.y), by.get())};
  void* stream = nullptr;
  EXPECT_EQ(p.api().stream_create(p.plugin(), 0, &stream), PHX_STATUS_OK);
  uint64_t ticket = 0;
  EXPECT_EQ(p.api().executable_run(p.plugin(), stream, executable, values, 4, nullptr, &ticket),
            PHX_STATUS_OK)
      << p.take_error();
  EXPECT_EQ(p.api().stream_wait(p.plugin(), stream, ticket), PHX_STATUS_OK);
  p.api().stream_destroy(p.plugin(), stream);
  by.read(y.data(), y.size() * 4);
  return y;
}

TEST_F(TpuSimSerialize, ALoadedExecutableGivesTheOriginalsBitsWithoutCompiling) {
  DenseSoftmax d(8);
  void* original = nullptr;
  ASSERT_EQ(compile(d.g.graph(), &original), PHX_STATUS_OK) << plugin_->take_error();
  const std::vector<uint8_t> bytes = phx_test::serialize(*plugin_, original);
  ASSERT_FALSE(bytes.empty());

  void* loaded = nullptr;
  ASSERT_EQ(load(d.g.graph(), bytes, &loaded), PHX_STATUS_OK) << plugin_->take_error();
  EXPECT_EQ(phx_test::executable_stat(*plugin_, loaded, "loaded_from_serialized"), 1.0);
  EXPECT_EQ(phx_test::executable_stat(*plugin_, loaded, "compile_time_ns"), 0.0);
  EXPECT_EQ(phx_test::executable_stat(*plugin_, original, "loaded_from_serialized"), 0.0);
  // The compiled model came back: the same modelled time, the same bytes again.
  EXPECT_EQ(phx_test::executable_stat(*plugin_, loaded, "modelled_time_ns"),
            phx_test::executable_stat(*plugin_, original, "modelled_time_ns"));
  EXPECT_EQ(phx_test::serialize(*plugin_, loaded), bytes);

  const std::vector<float> a = run(*plugin_, original, d, 0xff);
  const std::vector<float> b = run(*plugin_, loaded, d, 0x00);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  // Every row a softmax: positive entries summing to 1 (f32 rounding of 16 terms).
  for (size_t r = 0; r < 8; ++r) {
    double sum = 0;
    for (size_t c = 0; c < 16; ++c) sum += a[r * 16 + c];
    EXPECT_NEAR(sum, 1.0, 16 * 0x1p-23) << r;
  }
  api().executable_destroy(plugin(), loaded);
  api().executable_destroy(plugin(), original);
}

// device_stats' figure name of chip 0; NaN when it has none.
double device_stat(const DirectPlugin& p, const char* name) {
  phx_metric metrics[32];
  size_t count = 0;
  EXPECT_EQ(p.api().device_stats(p.plugin(), 0, metrics, 32, &count), PHX_STATUS_OK);
  for (size_t i = 0; i < count && i < 32; ++i)
    if (std::string(metrics[i].name) == name) return metrics[i].value;
  return NAN;
}

// In another process (here: the plugin started again), the loaded program enters the
// empty compile cache: a compile of the same graph then hits.
TEST_F(TpuSimSerialize, ALoadedProgramIsInTheCompileCacheOfAFreshPlugin) {
  DenseSoftmax d(8);
  void* original = nullptr;
  ASSERT_EQ(compile(d.g.graph(), &original), PHX_STATUS_OK) << plugin_->take_error();
  const std::vector<uint8_t> bytes = phx_test::serialize(*plugin_, original);
  api().executable_destroy(plugin(), original);
  plugin_ = std::make_unique<DirectPlugin>(PHX_TPU_SIM_PLUGIN);
  ASSERT_TRUE(plugin_->started());

  void* loaded = nullptr;
  ASSERT_EQ(load(d.g.graph(), bytes, &loaded), PHX_STATUS_OK) << plugin_->take_error();
  EXPECT_EQ(device_stat(*plugin_, "executables_loaded"), 1.0);
  EXPECT_EQ(device_stat(*plugin_, "graph_compile_cache_misses"), 0.0);
  EXPECT_EQ(device_stat(*plugin_, "compile_time_ns_total"), 0.0);
  void* compiled = nullptr;
  ASSERT_EQ(compile(d.g.graph(), &compiled), PHX_STATUS_OK) << plugin_->take_error();
  EXPECT_EQ(phx_test::executable_stat(*plugin_, compiled, "compile_cache_hit"), 1.0);
  EXPECT_EQ(device_stat(*plugin_, "graph_compile_cache_hits"), 1.0);
  api().executable_destroy(plugin(), compiled);
  api().executable_destroy(plugin(), loaded);
}

TEST_F(TpuSimSerialize, TruncatedOrDamagedBytesAreInvalidArguments) {
  DenseSoftmax d(8);
  void* original = nullptr;
  ASSERT_EQ(compile(d.g.graph(), &original), PHX_STATUS_OK) << plugin_->take_error();
  const std::vector<uint8_t> bytes = phx_test::serialize(*plugin_, original);
  api().executable_destroy(plugin(), original);

  std::vector<std::pair<std::string, std::vector<uint8_t>>> bad;
  bad.push_back({"truncated by one byte", {bytes.begin(), bytes.end() - 1}});
  bad.push_back({"header only", {bytes.begin(), bytes.begin() + 12}});
  bad.push_back({"one byte more", bytes});
  bad.back().second.push_back(0);
  bad.push_back({"bad magic", bytes});
  bad.back().second[0] ^= 0x20;
  bad.push_back({"a byte of the costs flipped", bytes});
  bad.back().second[bytes.size() - 20] ^= 0x01;
  for (const auto& [what, data] : bad) {
    void* executable = nullptr;
    EXPECT_EQ(load(d.g.graph(), data, &executable), PHX_STATUS_INVALID_ARGUMENT) << what;
    EXPECT_EQ(executable, nullptr) << what;
    EXPECT_NE(plugin_->take_error().find("serialized executable"), std::string::npos) << what;
  }
}

TEST_F(TpuSimSerialize, BytesOfAnotherGraphVersionOrChipAreIncompatible) {
  DenseSoftmax d(8);
  void* original = nullptr;
  ASSERT_EQ(compile(d.g.graph(), &original), PHX_STATUS_OK) << plugin_->take_error();
  const std::vector<uint8_t> bytes = phx_test::serialize(*plugin_, original);
  api().executable_destroy(plugin(), original);
  SerializedModel model;
  std::string error;
  ASSERT_TRUE(read_serialized_model(bytes, model, error)) << error;

  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
    int64_t m;
    const char* message;  // a part of the message
  };
  std::vector<Case> cases;
  cases.push_back({"another shape", bytes, 16, "another graph"});
  SerializedModel other = model;
  other.plugin_version = "0.0.9";
  cases.push_back({"another plugin version", write_serialized_model(other), 8, "tpu-sim 0.0.9"});
  other = model;
  other.chip_key = "generation=v4";
  cases.push_back({"another chip", write_serialized_model(other), 8, "generation=v4"});
  other = model;
  other.format_version = kSerializedModelFormat + 1;
  cases.push_back({"another format", write_serialized_model(other), 8, "format"});
  for (const Case& c : cases) {
    DenseSoftmax graph(c.m);
    void* executable = nullptr;
    EXPECT_EQ(load(graph.g.graph(), c.bytes, &executable), PHX_STATUS_INCOMPATIBLE) << c.what;
    EXPECT_EQ(executable, nullptr) << c.what;
    EXPECT_NE(plugin_->take_error().find(c.message), std::string::npos) << c.what;
  }
}

// matmul [m, k] . [k, n] nodes of three sizes and a quantize node, which tpu-sim does not
// run.
struct EstimateGraph {
  EstimateGraph() {
    for (int64_t s : {64, 256, 1024}) {
      const uint32_t a = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_BF16, {s, s}, "a"));
      const uint32_t c = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_BF16, {s, s}, "c"));
      g.node(PHX_OP_MATMUL, &matmul, {a, a, PHX_PLUGIN_NO_VALUE}, c, "matmul");
    }
    const uint32_t f = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {4}, "f"));
    const uint32_t q = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_I8, {4}, "q"));
    g.node(PHX_OP_QUANTIZE, &quantize, {f, f, f}, q, "quantize");
  }
  phx_matmul_params matmul PHX_MATMUL_PARAMS_INIT;
  phx_quantize_params quantize PHX_QUANTIZE_PARAMS_INIT;
  PluginGraph g;
};

TEST_F(TpuSimSerialize, EstimatesGrowWithTheMatmulAndMissUnsupportedNodes) {
  EstimateGraph e;
  phx_plugin_graph graph = e.g.graph();
  uint64_t times[4] = {};
  ASSERT_EQ(api().graph_estimate(plugin(), 0, &graph, times), PHX_STATUS_OK);
  EXPECT_GT(times[0], 0u);
  EXPECT_LT(times[0], times[1]);
  EXPECT_LT(times[1], times[2]);
  EXPECT_EQ(times[3], UINT64_MAX);
  // The model's own figure: 2 s^3 flops at the v5e's bf16 peak is a lower bound.
  SimConfig config;
  std::string error;
  ASSERT_TRUE(parse_config({}, config, error)) << error;
  EXPECT_GE(double(times[2]), 2.0 * 1024 * 1024 * 1024 / (config.chip.peak_bf16_tflops() * 1e3));

  graph.flags = PHX_PLUGIN_GRAPH_DETERMINISTIC;
  uint64_t again[4] = {}, third[4] = {};
  ASSERT_EQ(api().graph_estimate(plugin(), 0, &graph, again), PHX_STATUS_OK);
  ASSERT_EQ(api().graph_estimate(plugin(), 0, &graph, third), PHX_STATUS_OK);
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(again[n], third[n]) << n;
    EXPECT_EQ(again[n], times[n]) << n;  // the model never depends on timing
  }
}

}  // namespace
}  // namespace phx::tpu_sim
