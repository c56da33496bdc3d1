// Executables whose parts a device compiles as a whole (plugin ABI 1.3), against the
// test plugin's GRAPHS build: a device that compiles graphs of add nodes, beside the CPU
// plugin (which compiles its parts too) and the test plugin's plain build (which does not). What
// the host hands over (the values' kinds, one compile per set of shapes), what it takes back (one
// ticket per run, the outputs, the plugin's figures, a record per node) and the faults it must
// survive (a declined compile, a failed one, a failed run, a wrong ticket). The adds are exact in
// f32 for these small integers, so results are compared for equality.
#include "native_graph_fixture.h"

namespace {

using phx_test::NativeGraph;

TEST_F(NativeGraph, DevicesSayWhetherTheyCompileGraphs) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  ASSERT_EQ(phx_device_get(context_, native_, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.compiles_graphs, 1u);
  ASSERT_EQ(phx_device_get(context_, cpu_, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.compiles_graphs, 1u);
  ASSERT_NE(by_node_, SIZE_MAX) << "the good test plugin did not load";
  ASSERT_EQ(phx_device_get(context_, by_node_, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.compiles_graphs, 0u);
}

TEST_F(NativeGraph, ThePartIsCompiledOnceAndEachRunIsOneTicket) {
  phx_graph graph = three_adds();
  phx_executable exe = compile(graph, native_);
  ASSERT_NE(exe, nullptr);
  // x, c, a, b, y in the order the nodes name them: y is the only output.
  EXPECT_EQ(trace(), std::vector<std::string>{"graph_compile ICiiO"});
  const phx_executable_info info = describe(exe);
  EXPECT_EQ(info.native_parts, 1u);
  EXPECT_EQ(info.native_nodes, 3u);
  EXPECT_EQ(info.node_count, 3u);

  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, native_, &stream), PHX_STATUS_OK);
  phx_tensor x = tensor(native_, {1, 2, 3, 4});
  phx_tensor y = tensor(native_, {0, 0, 0, 0});
  for (uint64_t run = 1; run <= 3; ++run) {
    uint64_t ticket = 0;
    ASSERT_EQ(phx_executable_run(stream, exe, &x, 1, &y, 1, &ticket), PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(ticket, run);
  }
  ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
  EXPECT_EQ(download(y, 4), (std::vector<float>{22, 44, 66, 88}));
  EXPECT_EQ(traced("executable_run"), 3u);
  EXPECT_EQ(traced("graph_compile"), 1u);

  size_t count = 0;
  phx_metric metric{};
  ASSERT_EQ(phx_executable_stats(exe, &metric, 1, &count), PHX_STATUS_OK);
  ASSERT_EQ(count, 1u);
  EXPECT_STREQ(metric.name, "nodes");
  EXPECT_EQ(metric.value, 3.0);

  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  EXPECT_EQ(traced("executable_destroy"), 1u);
  phx_tensor_destroy(x);
  phx_tensor_destroy(y);
  phx_stream_destroy(stream);
  phx_graph_destroy(graph);
}

TEST_F(NativeGraph, APartBetweenDevicesSeesWhatCrossesItsEdgesAsInputsAndOutputs) {
  // On the test device: x + x, then (x + x) + x. The matmul it cannot run goes to the
  // CPU, and reads the first add's result: an output of the part, copied to the CPU,
  // whose plugin compiles its part too.
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
  const int64_t shape[2] = {2, 2};
  phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
  desc.dtype = PHX_DTYPE_F32;
  desc.rank = 2;
  desc.shape = shape;
  phx_value x = 0;
  ASSERT_EQ(phx_graph_add_input(graph, &desc, &x), PHX_STATUS_OK);
  const phx_value twice = node(graph, PHX_OP_ADD, {x, x}, "twice");
  const phx_value thrice = node(graph, PHX_OP_ADD, {twice, x}, "thrice");
  const phx_value square = node(graph, PHX_OP_MATMUL, {twice, twice}, "square");
  ASSERT_EQ(phx_graph_add_output(graph, thrice, "thrice"), PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_add_output(graph, square, "square"), PHX_STATUS_OK);
  phx_executable exe = compile(graph, native_, {cpu_});
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(trace(), std::vector<std::string>{"graph_compile IOO"});
  const phx_executable_info info = describe(exe);
  EXPECT_EQ(info.native_parts, 2u);
  EXPECT_EQ(info.native_nodes, 3u);
  EXPECT_EQ(info.device_count, 2u);

  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, native_, &stream), PHX_STATUS_OK);
  const int64_t count = 4;
  phx_tensor in = nullptr, outs[2] = {};
  ASSERT_EQ(phx_tensor_create(context_, native_, PHX_DTYPE_F32, 2, shape, &in), PHX_STATUS_OK);
  const float values[4] = {1, 2, 3, 4};
  ASSERT_EQ(phx_tensor_upload(in, 0, values, sizeof values), PHX_STATUS_OK);
  for (phx_tensor& out : outs)
    ASSERT_EQ(phx_tensor_create(context_, native_, PHX_DTYPE_F32, 2, shape, &out), PHX_STATUS_OK);
  ASSERT_EQ(phx_executable_run(stream, exe, &in, 1, outs, 2, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
  EXPECT_EQ(download(outs[0], count), (std::vector<float>{3, 6, 9, 12}));
  // [2 4; 6 8]^2 = [28 40; 60 88]
  EXPECT_EQ(download(outs[1], count), (std::vector<float>{28, 40, 60, 88}));
  phx_executable_destroy(exe);
  phx_tensor_destroy(in);
  for (phx_tensor out : outs) phx_tensor_destroy(out);
  phx_stream_destroy(stream);
  phx_graph_destroy(graph);
}

TEST_F(NativeGraph, EachNewSizeOfADynamicDimensionCompilesAgain) {
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
  const phx_value x = input(graph, PHX_DIM_DYNAMIC);
  const phx_value doubled = node(graph, PHX_OP_ADD, {x, x}, "double");
  ASSERT_EQ(phx_graph_add_output(graph, node(graph, PHX_OP_ADD, {doubled, x}, "y"), "y"),
            PHX_STATUS_OK);
  phx_executable exe = compile(graph, native_);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(traced("graph_compile"), 0u);  // no sizes yet
  EXPECT_EQ(describe(exe).native_parts, 0u);

  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, native_, &stream), PHX_STATUS_OK);
  for (const std::vector<float>& values :
       {std::vector<float>{1, 2}, std::vector<float>{3, 4}, std::vector<float>{5, 6, 7}}) {
    phx_tensor in = tensor(native_, values);
    phx_tensor out = tensor(native_, std::vector<float>(values.size(), 0));
    ASSERT_EQ(phx_executable_run(stream, exe, &in, 1, &out, 1, nullptr), PHX_STATUS_OK)
        << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
    std::vector<float> expected;
    for (float v : values) expected.push_back(3 * v);
    EXPECT_EQ(download(out, values.size()), expected);
    phx_tensor_destroy(in);
    phx_tensor_destroy(out);
  }
  // Sizes 2, 2, 3: two compiles; the first plan's executable freed with its plan.
  EXPECT_EQ(traced("graph_compile"), 2u);
  EXPECT_EQ(traced("executable_destroy"), 1u);
  EXPECT_EQ(describe(exe).native_parts, 1u);
  phx_executable_destroy(exe);
  EXPECT_EQ(traced("executable_destroy"), 2u);
  phx_stream_destroy(stream);
  phx_graph_destroy(graph);
}

TEST_F(NativeGraph, ADeclinedPartRunsNodeByNode) {
  setenv("PHX_TEST_GRAPH_COMPILE", "unsupported", 1);
  phx_graph graph = three_adds();
  phx_executable exe = compile(graph, native_);
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(describe(exe).native_parts, 0u);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, native_, &stream), PHX_STATUS_OK);
  phx_tensor x = tensor(native_, {1, 2, 3, 4});
  phx_tensor y = tensor(native_, {0, 0, 0, 0});
  uint64_t ticket = 0;
  ASSERT_EQ(phx_executable_run(stream, exe, &x, 1, &y, 1, &ticket), PHX_STATUS_OK);
  EXPECT_EQ(ticket, 3u);  // one per node
  ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
  EXPECT_EQ(download(y, 4), (std::vector<float>{22, 44, 66, 88}));
  EXPECT_EQ(traced("executable_run"), 0u);
  size_t count = 99;
  ASSERT_EQ(phx_executable_stats(exe, nullptr, 0, &count), PHX_STATUS_OK);
  EXPECT_EQ(count, 0u);
  phx_executable_destroy(exe);
  EXPECT_EQ(traced("executable_destroy"), 0u);
  phx_tensor_destroy(x);
  phx_tensor_destroy(y);
  phx_stream_destroy(stream);
  phx_graph_destroy(graph);
}

TEST_F(NativeGraph, AFailedCompileFailsTheCompileWithThePluginsMessage) {
  setenv("PHX_TEST_GRAPH_COMPILE", "fail", 1);
  phx_graph graph = three_adds();
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = native_;
  phx_executable exe = nullptr;
  EXPECT_EQ(phx_graph_compile(context_, graph, &options, &exe), PHX_STATUS_OUT_OF_MEMORY);
  EXPECT_NE(std::string(phx_last_error()).find("no room for the program"), std::string::npos)
      << phx_last_error();
  EXPECT_EQ(exe, nullptr);
  // The constant it had placed on the device is freed again.
  phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
  ASSERT_EQ(phx_memory_stats_get(context_, native_, &stats), PHX_STATUS_OK);
  EXPECT_EQ(stats.bytes_in_use, 0u);
  phx_graph_destroy(graph);
}

TEST_F(NativeGraph, AFailedRunOrAWrongTicketIsReportedWithThePluginsWords) {
  phx_graph graph = three_adds();
  phx_executable exe = compile(graph, native_);
  ASSERT_NE(exe, nullptr);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, native_, &stream), PHX_STATUS_OK);
  phx_tensor x = tensor(native_, {1, 2, 3, 4});
  phx_tensor y = tensor(native_, {0, 0, 0, 0});

  setenv("PHX_TEST_GRAPH_RUN", "fail", 1);
  uint64_t ticket = 77;
  EXPECT_EQ(phx_executable_run(stream, exe, &x, 1, &y, 1, &ticket), PHX_STATUS_DEVICE_UNAVAILABLE);
  EXPECT_NE(std::string(phx_last_error()).find("the run failed"), std::string::npos);
  EXPECT_EQ(ticket, 77u);  // left alone

  setenv("PHX_TEST_GRAPH_RUN", "bad_ticket", 1);
  EXPECT_EQ(phx_executable_run(stream, exe, &x, 1, &y, 1, &ticket), PHX_STATUS_PLUGIN_ERROR);
  EXPECT_NE(std::string(phx_last_error()).find("executable_run returned ticket 6, expected 1"),
            std::string::npos)
      << phx_last_error();

  unsetenv("PHX_TEST_GRAPH_RUN");
  phx_executable_destroy(exe);
  phx_tensor_destroy(x);
  phx_tensor_destroy(y);
  phx_stream_destroy(stream);
  phx_graph_destroy(graph);
}

TEST_F(NativeGraph, ProfilingKeepsARecordPerNodeWithThePluginsFigures) {
  create_context(true);
  phx_graph graph = three_adds();
  phx_executable exe = compile(graph, native_);
  ASSERT_NE(exe, nullptr);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, native_, &stream), PHX_STATUS_OK);
  phx_tensor x = tensor(native_, {1, 2, 3, 4});
  phx_tensor y = tensor(native_, {0, 0, 0, 0});
  ASSERT_EQ(phx_executable_run(stream, exe, &x, 1, &y, 1, nullptr), PHX_STATUS_OK);
  size_t count = 0;
  ASSERT_EQ(phx_profile_count(stream, &count), PHX_STATUS_OK);
  ASSERT_EQ(count, 3u);
  const char* names[3] = {"a", "b", "y"};
  for (size_t i = 0; i < count; ++i) {
    phx_profile_record record = PHX_PROFILE_RECORD_INIT;
    ASSERT_EQ(phx_profile_get(stream, i, &record), PHX_STATUS_OK);
    EXPECT_EQ(record.ticket, 1u);  // the run's one ticket
    EXPECT_EQ(record.op, PHX_OP_ADD);
    EXPECT_STREQ(record.node, names[i]);
    EXPECT_STREQ(record.signature, "f32[4], f32[4] -> f32[4]");
    ASSERT_EQ(record.metric_count, 1u);
    EXPECT_STREQ(record.metrics[0].name, "node_of_a_graph");
  }
  phx_executable_destroy(exe);
  phx_tensor_destroy(x);
  phx_tensor_destroy(y);
  phx_stream_destroy(stream);
  phx_graph_destroy(graph);
}

TEST_F(NativeGraph, TheContextFreesTheExecutablesAProgramForgot) {
  phx_graph graph = three_adds();
  ASSERT_NE(compile(graph, native_), nullptr);
  ASSERT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
  context_ = nullptr;
  EXPECT_EQ(traced("executable_destroy"), 1u);
}

}  // namespace
