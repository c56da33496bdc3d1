// The fixture of the tests of devices that compile their part (plugin ABI 1.3): a context
// of the CPU plugin, the test plugin's GRAPHS build (a device that compiles graphs of add
// nodes, and of sub nodes it claims: tests/plugins/test_plugin.cpp) and its plain build,
// the trace the test plugin leaves, and small graphs of adds.
#pragma once

#include <gtest/gtest.h>
#include <phynexus/phynexus.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace phx_test {

namespace fs = std::filesystem;

class NativeGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "phx_native_graph.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    trace_dir_ = pattern;
    setenv("PHX_TEST_TRACE_DIR", trace_dir_.c_str(), 1);
    create_context(false);
  }
  void TearDown() override {
    if (context_ != nullptr) {
      EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
    unsetenv("PHX_TEST_TRACE_DIR");
    unsetenv("PHX_TEST_GRAPH_COMPILE");
    unsetenv("PHX_TEST_GRAPH_RUN");
    unsetenv("PHX_TEST_GRAPH_ESTIMATE_NS");
    fs::remove_all(trace_dir_);
  }

  void create_context(bool profile) {
    if (context_ != nullptr) {
      ASSERT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
    const std::string cpu = std::string(PHX_TEST_DEFAULT_PLUGIN_DIR) + "/phx_cpu.so";
    const std::string graphs = std::string(PHX_TEST_PLUGIN_DIR) + "/graphs";
    const std::string good = std::string(PHX_TEST_PLUGIN_DIR) + "/good";
    const char* paths[] = {cpu.c_str(), graphs.c_str(), good.c_str()};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 3;
    options.use_default_search_path = 0;
    options.log_level = PHX_LOG_OFF;
    options.num_threads = 2;
    if (profile) options.flags |= PHX_CONTEXT_PROFILE;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    ASSERT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK);
    for (size_t d = 0; d < count; ++d) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      ASSERT_EQ(phx_device_get(context_, d, &info), PHX_STATUS_OK);
      if (std::strcmp(info.plugin, "cpu") == 0) cpu_ = d;
      if (std::strcmp(info.plugin, "testgraphs") == 0) native_ = d;
      if (std::strcmp(info.plugin, "testgood") == 0) by_node_ = d;
    }
    ASSERT_NE(cpu_, SIZE_MAX);
    ASSERT_NE(native_, SIZE_MAX) << "the graphs test plugin did not load";
  }

  // The trace lines of the entries that compile, run and free executables, in order
  // (graph_claim, which every compile asks first, aside).
  std::vector<std::string> trace() const {
    std::vector<std::string> lines;
    for (const std::string& line : all_trace_lines())
      if (line.rfind("graph_compile", 0) == 0 || line.rfind("executable_", 0) == 0)
        lines.push_back(line);
    return lines;
  }
  // How many trace lines, graph_claim's included, begin with prefix.
  size_t traced(const std::string& prefix) const {
    size_t n = 0;
    for (const std::string& line : all_trace_lines()) n += line.rfind(prefix, 0) == 0;
    return n;
  }
  std::vector<std::string> all_trace_lines() const {
    std::vector<std::string> lines;
    std::ifstream file(trace_dir_ + "/graphs.trace");
    for (std::string line; std::getline(file, line);) lines.push_back(line);
    return lines;
  }

  phx_tensor tensor(size_t device, const std::vector<float>& values) {
    const int64_t shape[1] = {static_cast<int64_t>(values.size())};
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device, PHX_DTYPE_F32, 1, shape, &t), PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(phx_tensor_upload(t, 0, values.data(), values.size() * sizeof(float)), PHX_STATUS_OK);
    return t;
  }
  std::vector<float> download(phx_tensor t, size_t count) {
    std::vector<float> values(count);
    EXPECT_EQ(phx_tensor_download(t, 0, values.data(), count * sizeof(float)), PHX_STATUS_OK);
    return values;
  }

  phx_value input(phx_graph graph, int64_t size) {
    phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
    desc.name = "x";
    desc.dtype = PHX_DTYPE_F32;
    desc.rank = 1;
    desc.shape = &size;
    phx_value v = 0;
    EXPECT_EQ(phx_graph_add_input(graph, &desc, &v), PHX_STATUS_OK) << phx_last_error();
    return v;
  }
  static phx_value node(phx_graph graph, phx_op_id op, std::vector<phx_value> inputs,
                        const char* name) {
    return phx_test::add_node(graph, op, inputs, name);
  }

  // y = ((x + c) + c) + x with c = [10, 20, 30, 40]: three adds, one constant.
  phx_graph three_adds(int64_t size = 4) {
    phx_graph graph = nullptr;
    EXPECT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
    const phx_value x = input(graph, size);
    std::vector<float> c(static_cast<size_t>(size));
    for (size_t i = 0; i < c.size(); ++i) c[i] = 10.0f * float(i + 1);
    phx_value constant = 0;
    EXPECT_EQ(phx_graph_add_constant(graph, "c", PHX_DTYPE_F32, 1, &size, c.data(),
                                     c.size() * sizeof(float), &constant),
              PHX_STATUS_OK);
    const phx_value a = node(graph, PHX_OP_ADD, {x, constant}, "a");
    const phx_value b = node(graph, PHX_OP_ADD, {a, constant}, "b");
    EXPECT_EQ(phx_graph_add_output(graph, node(graph, PHX_OP_ADD, {b, x}, "y"), "y"),
              PHX_STATUS_OK);
    return graph;
  }

  phx_executable compile(phx_graph graph, size_t device, std::vector<size_t> others = {}) {
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = device;
    options.other_devices = others.data();
    options.other_device_count = others.size();
    phx_executable exe = nullptr;
    EXPECT_EQ(phx_graph_compile(context_, graph, &options, &exe), PHX_STATUS_OK)
        << phx_last_error();
    return exe;
  }

  // Runs exe once on a stream of device with x and returns its output of count elements.
  std::vector<float> run(phx_executable exe, size_t device, const std::vector<float>& x,
                         size_t count) {
    phx_stream stream = nullptr;
    EXPECT_EQ(phx_stream_create(context_, device, &stream), PHX_STATUS_OK);
    phx_tensor in = tensor(device, x);
    phx_tensor out = tensor(device, std::vector<float>(count, 0.0f));
    uint64_t ticket = 0;
    EXPECT_EQ(phx_executable_run(stream, exe, &in, 1, &out, 1, &ticket), PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK) << phx_last_error();
    std::vector<float> result = download(out, count);
    phx_tensor_destroy(in);
    phx_tensor_destroy(out);
    phx_stream_destroy(stream);
    return result;
  }

  phx_executable_info describe(phx_executable exe) {
    phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
    EXPECT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
    return info;
  }

  phx_context context_ = nullptr;
  size_t cpu_ = SIZE_MAX, native_ = SIZE_MAX, by_node_ = SIZE_MAX;
  std::string trace_dir_;
};

}  // namespace phx_test
