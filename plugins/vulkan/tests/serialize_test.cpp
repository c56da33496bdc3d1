// The real plugin's entries called directly (direct_plugin.h): executable_serialize and
// graph_compile with the serialized bytes (serialized_executable.h), and graph_estimate.
// A loaded executable must give the original's outputs bit for bit (the same pipelines
// run the same plan); bytes that are not whole are INVALID_ARGUMENT, bytes of another
// graph, plugin version, device or driver INCOMPATIBLE, each with a message saying so.
// Small graphs: lavapipe compiles every pipeline with LLVM.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "direct_plugin.h"
#include "serialized_executable.h"

namespace phx::vulkan {
namespace {

using phx_test::DirectPlugin;
using phx_test::plugin_tensor;
using phx_test::plugin_value;
using phx_test::PluginBuffer;
using phx_test::PluginGraph;

class VulkanSerialize : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("PHX_VULKAN_VALIDATION", "1", 1);
    setenv("PHX_VULKAN_NO_PIPELINE_CACHE", "1", 1);  // no cache file: this process's alone
    plugin_ = std::make_unique<DirectPlugin>(PHX_VULKAN_PLUGIN);
    ASSERT_TRUE(plugin_->started());
    uint32_t count = 0;
    ASSERT_EQ(api().device_count(plugin(), &count), PHX_STATUS_OK);
    if (count == 0) GTEST_SKIP() << "no Vulkan device";
  }
  const phx_plugin_api& api() const { return plugin_->api(); }
  void* plugin() const { return plugin_->plugin(); }

  phx_status load(phx_plugin_graph graph, const std::vector<uint8_t>& bytes, void** out) {
    graph.serialized = bytes.data();
    graph.serialized_size = bytes.size();
    *out = nullptr;
    return api().graph_compile(plugin(), 0, &graph, out);
  }
  // The bytes of graph compiled: compiles, serializes, destroys.
  std::vector<uint8_t> serialized(const phx_plugin_graph& graph) {
    void* executable = nullptr;
    EXPECT_EQ(api().graph_compile(plugin(), 0, &graph, &executable), PHX_STATUS_OK)
        << plugin_->take_error();
    if (executable == nullptr) return {};
    std::vector<uint8_t> bytes = phx_test::serialize(*plugin_, executable);
    api().executable_destroy(plugin(), executable);
    return bytes;
  }

  std::unique_ptr<DirectPlugin> plugin_;
};

// x [m, 8] . w [8, 4] -> h; h + b -> t; relu(t) -> y: the add and the relu fuse.
struct DenseAddRelu {
  explicit DenseAddRelu(int64_t m) : m(m) {
    x = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {m, 8}, "x"));
    w = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {8, 4}, "w"));
    b = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {m, 4}, "b"));
    h = g.add(plugin_value(PHX_PLUGIN_VALUE_INTERMEDIATE, PHX_DTYPE_F32, {m, 4}, "h"));
    t = g.add(plugin_value(PHX_PLUGIN_VALUE_INTERMEDIATE, PHX_DTYPE_F32, {m, 4}, "t"));
    y = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_F32, {m, 4}, "y"));
    g.node(PHX_OP_MATMUL, &matmul, {x, w, PHX_PLUGIN_NO_VALUE}, h, "dense");
    g.node(PHX_OP_ADD, nullptr, {h, b}, t, "add");
    g.node(PHX_OP_RELU, nullptr, {t}, y, "relu");
  }
  int64_t m;
  phx_matmul_params matmul PHX_MATMUL_PARAMS_INIT;
  PluginGraph g;
  uint32_t x, w, b, h, t, y;
};

std::vector<float> sines(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(seed + 0.73f * float(i)) * 1.7f;
  return v;
}

// Runs executable of d on fixed inputs into a y that starts as fill bytes, so that two runs
// agree only where both wrote every byte of it.
std::vector<float> run(DirectPlugin& p, void* executable, DenseAddRelu& d, uint8_t fill) {
  const auto m = static_cast<size_t>(d.m);
  const std::vector<float> x = sines(m * 8, 0.1f), w = sines(32, 0.7f), b = sines(m * 4, 1.3f);
  std::vector<float> y(m * 4);
  std::memset(y.data(), fill, y.size() * 4);
  PluginBuffer bx(p, 0, x.size() * 4), bw(p, 0, 32 * 4), bb(p, 0, b.size() * 4),
      bh(p, 0, y.size() * 4), bt(p, 0, y.size() * 4), by(p, 0, y.size() * 4);
  bx.write(x.data(), x.size() * 4);
  bw.write(w.data(), w.size() * 4);
  bb.write(b.data(), b.size() * 4);
  by.write(y.data(), y.size() * 4);
  const phx_plugin_tensor values[] = {
      plugin_tensor(d.g.value_at(d.x), bx.get()), plugin_tensor(d.g.value_at(d.w), bw.get()),
      plugin_tensor(d.g.value_at(d.b), bb.get()), plugin_tensor(d.g.value_at(d.h), bh.get()),
      plugin_tensor(d.g.value_at(d.t), bt.get()), plugin_tensor(d.g.value_at(d.y), by.get())};
  void* stream = nullptr;
  EXPECT_EQ(p.api().stream_create(p.plugin(), 0, &stream), PHX_STATUS_OK);
  uint64_t ticket = 0;
  EXPECT_EQ(p.api().executable_run(p.plugin(), stream, executable, values, 6, nullptr, &ticket),
            PHX_STATUS_OK)
      << p.take_error();
  EXPECT_EQ(p.api().stream_wait(p.plugin(), stream, ticket), PHX_STATUS_OK) << p.take_error();
  p.api().stream_destroy(p.plugin(), stream);
  by.read(y.data(), y.size() * 4);
  // Against float64: K = 8 products rounded and summed in f32 (2 K 2^-24 sum|x w|), the
  // add's two roundings (2^-24 each of the result), relu exact.
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < 4; ++j) {
      double sum = 0, magnitude = 0;
      for (size_t k = 0; k < 8; ++k) {
        sum += double(x[i * 8 + k]) * w[k * 4 + j];
        magnitude += std::fabs(double(x[i * 8 + k]) * w[k * 4 + j]);
      }
      const double expected = std::max(0.0, sum + b[i * 4 + j]);
      const double tolerance =
          2 * 8 * 0x1p-24 * magnitude + 2 * 0x1p-24 * (magnitude + std::fabs(b[i * 4 + j]));
      EXPECT_NEAR(y[i * 4 + j], expected, tolerance) << i << "," << j;
    }
  return y;
}

TEST_F(VulkanSerialize, ALoadedExecutableGivesTheOriginalsBits) {
  DenseAddRelu d(4);
  const phx_plugin_graph graph = d.g.graph();
  void* original = nullptr;
  ASSERT_EQ(api().graph_compile(plugin(), 0, &graph, &original), PHX_STATUS_OK)
      << plugin_->take_error();
  const std::vector<uint8_t> bytes = phx_test::serialize(*plugin_, original);
  void* loaded = nullptr;
  ASSERT_EQ(load(d.g.graph(), bytes, &loaded), PHX_STATUS_OK) << plugin_->take_error();
  EXPECT_EQ(phx_test::executable_stat(*plugin_, loaded, "loaded_from_serialized"), 1.0);
  EXPECT_EQ(phx_test::executable_stat(*plugin_, original, "loaded_from_serialized"), 0.0);
  EXPECT_EQ(phx_test::executable_stat(*plugin_, loaded, "fused_nodes"), 2.0);

  const std::vector<float> a = run(*plugin_, original, d, 0xff);
  const std::vector<float> b = run(*plugin_, loaded, d, 0x00);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  api().executable_destroy(plugin(), loaded);
  api().executable_destroy(plugin(), original);
}

TEST_F(VulkanSerialize, TruncatedOrDamagedBytesAreInvalidArguments) {
  DenseAddRelu d(4);
  const std::vector<uint8_t> bytes = serialized(d.g.graph());
  ASSERT_FALSE(bytes.empty());
  SerializedExecutable saved;
  std::string error;
  ASSERT_TRUE(read_serialized_executable(bytes, saved, error)) << error;

  std::vector<std::pair<std::string, std::vector<uint8_t>>> bad;
  bad.push_back({"truncated by one byte", {bytes.begin(), bytes.end() - 1}});
  bad.push_back({"header only", {bytes.begin(), bytes.begin() + 12}});
  bad.push_back({"bad magic", bytes});
  bad.back().second[1] ^= 0x20;
  bad.push_back({"a byte of the cache data flipped", bytes});
  bad.back().second[bytes.size() - 12] ^= 0x01;
  SerializedExecutable forged = saved;  // whole, but the driver's header is not the device's
  forged.pipeline_cache[8] ^= 0x01;     // the header's deviceID
  bad.push_back({"a forged driver header", write_serialized_executable(forged)});
  for (const auto& [what, data] : bad) {
    void* executable = nullptr;
    EXPECT_EQ(load(d.g.graph(), data, &executable), PHX_STATUS_INVALID_ARGUMENT) << what;
    EXPECT_EQ(executable, nullptr) << what;
    EXPECT_NE(plugin_->take_error().find("serialized executable"), std::string::npos) << what;
  }
}

TEST_F(VulkanSerialize, BytesOfAnotherGraphVersionDeviceOrDriverAreIncompatible) {
  DenseAddRelu d(4);
  const std::vector<uint8_t> bytes = serialized(d.g.graph());
  SerializedExecutable saved;
  std::string error;
  ASSERT_TRUE(read_serialized_executable(bytes, saved, error)) << error;

  struct Case {
    const char* what;
    std::vector<uint8_t> bytes;
    int64_t m;
    const char* message;  // a part of the message
  };
  std::vector<Case> cases;
  cases.push_back({"another shape", bytes, 8, "another graph"});
  SerializedExecutable other = saved;
  other.plugin_version = "0.0.9";
  cases.push_back({"another plugin version", write_serialized_executable(other), 4, "0.0.9"});
  other = saved;
  other.identity.device_id ^= 0x1;
  cases.push_back({"another device", write_serialized_executable(other), 4, "another device"});
  other = saved;
  other.identity.driver_version += 1;
  cases.push_back({"another driver", write_serialized_executable(other), 4, "driver version"});
  other = saved;
  other.identity.cache_uuid[0] ^= 0x1;
  cases.push_back({"another driver build", write_serialized_executable(other), 4, "UUID"});
  other = saved;
  other.format_version = kSerializedExecutableFormat + 1;
  cases.push_back({"another format", write_serialized_executable(other), 4, "format"});
  for (const Case& c : cases) {
    DenseAddRelu graph(c.m);
    void* executable = nullptr;
    EXPECT_EQ(load(graph.g.graph(), c.bytes, &executable), PHX_STATUS_INCOMPATIBLE) << c.what;
    EXPECT_EQ(executable, nullptr) << c.what;
    EXPECT_NE(plugin_->take_error().find(c.message), std::string::npos) << c.what;
  }
}

// f32 matmuls [s, s] . [s, s] of three sizes and a quantize node, which the plugin does
// not run.
struct EstimateGraph {
  EstimateGraph() {
    for (int64_t s : {64, 256, 1024}) {
      const uint32_t a = g.add(plugin_value(PHX_PLUGIN_VALUE_INPUT, PHX_DTYPE_F32, {s, s}, "a"));
      const uint32_t c = g.add(plugin_value(PHX_PLUGIN_VALUE_OUTPUT, PHX_DTYPE_F32, {s, s}, "c"));
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

TEST_F(VulkanSerialize, EstimatesGrowWithTheMatmulAndMissUnsupportedNodes) {
  EstimateGraph e;
  phx_plugin_graph graph = e.g.graph();
  uint64_t measured[4] = {};
  ASSERT_EQ(api().graph_estimate(plugin(), 0, &graph, measured), PHX_STATUS_OK)
      << plugin_->take_error();
  EXPECT_GT(measured[0], 0u);
  EXPECT_LT(measured[0], measured[1]);
  EXPECT_LT(measured[1], measured[2]);
  EXPECT_EQ(measured[3], UINT64_MAX);

  graph.flags = PHX_PLUGIN_GRAPH_DETERMINISTIC;
  uint64_t first[4] = {}, second[4] = {};
  ASSERT_EQ(api().graph_estimate(plugin(), 0, &graph, first), PHX_STATUS_OK);
  ASSERT_EQ(api().graph_estimate(plugin(), 0, &graph, second), PHX_STATUS_OK);
  for (int n = 0; n < 4; ++n) EXPECT_EQ(first[n], second[n]) << n;
  // The nominal roofline: 2 * 1024^3 flops at 1000 flops/ns, plus 20 us.
  EXPECT_EQ(first[2], uint64_t(std::ceil(20000.0 + 2.0 * 1024 * 1024 * 1024 / 1000.0)));
  EXPECT_EQ(first[3], UINT64_MAX);
}

}  // namespace
}  // namespace phx::vulkan
