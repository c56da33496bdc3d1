// phx_executable_save and phx_executable_load: an executable saved and loaded runs as the
// original did (the same steps and kernels on the same bytes: equal bit for bit), a device
// that compiled its part gets back what it saved (the test plugin's GRAPHS build traces
// it) and compiles nothing again, and data that is truncated, damaged or made for another
// device or version is refused with a status, without a crash or a leak.
#include <random>

#include "native_graph_fixture.h"

namespace {

using phx_test::NativeGraph;

class ExecutableSave : public NativeGraph {
 protected:
  std::vector<unsigned char> save(phx_executable exe) {
    size_t size = 0;
    EXPECT_EQ(phx_executable_save(exe, nullptr, 0, &size), PHX_STATUS_OK) << phx_last_error();
    std::vector<unsigned char> bytes(size);
    EXPECT_EQ(phx_executable_save(exe, bytes.data(), bytes.size(), &size), PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(size, bytes.size());
    return bytes;
  }
  // graph compiled for device and saved; the executable is gone again.
  std::vector<unsigned char> compile_and_save(phx_graph graph, size_t device) {
    phx_executable exe = compile(graph, device);
    if (exe == nullptr) return {};
    std::vector<unsigned char> bytes = save(exe);
    EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
    return bytes;
  }
  phx_status load(const std::vector<unsigned char>& bytes, phx_executable* exe,
                  const phx_compile_options* options = nullptr) {
    return phx_executable_load(context_, bytes.data(), bytes.size(), options, exe);
  }

  // x [4] -> relu(x W + b) -> x2 [4] -> x2 - x: a fused matmul and two more nodes on the
  // CPU device, with host-byte constants.
  phx_graph mlp() {
    phx_graph graph = nullptr;
    EXPECT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
    const int64_t row[2] = {1, 4}, square[2] = {4, 4};
    phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
    desc.dtype = PHX_DTYPE_F32;
    desc.rank = 2;
    desc.shape = row;
    phx_value x = 0, w = 0, b = 0;
    EXPECT_EQ(phx_graph_add_input(graph, &desc, &x), PHX_STATUS_OK);
    std::vector<float> weights(16), bias = {0.5f, -0.25f, 0.125f, -1.0f};
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = 0.1f * float(i) - 0.7f;
    EXPECT_EQ(phx_graph_add_constant(graph, "w", PHX_DTYPE_F32, 2, square, weights.data(),
                                     weights.size() * sizeof(float), &w),
              PHX_STATUS_OK);
    EXPECT_EQ(phx_graph_add_constant(graph, "b", PHX_DTYPE_F32, 2, row, bias.data(),
                                     bias.size() * sizeof(float), &b),
              PHX_STATUS_OK);
    const phx_value h = node(graph, PHX_OP_ADD, {node(graph, PHX_OP_MATMUL, {x, w}, "xw"), b}, "h");
    const phx_value y = node(graph, PHX_OP_SUB, {node(graph, PHX_OP_RELU, {h}, "relu"), x}, "y");
    EXPECT_EQ(phx_graph_add_output(graph, y, "y"), PHX_STATUS_OK);
    return graph;
  }

  // A run of exe on a [1, 4] input and output; its status.
  phx_status try_run(phx_executable exe) {
    phx_stream stream = nullptr;
    EXPECT_EQ(phx_stream_create(context_, cpu_, &stream), PHX_STATUS_OK);
    const int64_t row[2] = {1, 4};
    phx_tensor x = nullptr, y = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, cpu_, PHX_DTYPE_F32, 2, row, &x), PHX_STATUS_OK);
    EXPECT_EQ(phx_tensor_create(context_, cpu_, PHX_DTYPE_F32, 2, row, &y), PHX_STATUS_OK);
    phx_status status = phx_executable_run(stream, exe, &x, 1, &y, 1, nullptr);
    if (status == PHX_STATUS_OK) status = phx_stream_synchronize(stream);
    phx_tensor_destroy(x);
    phx_tensor_destroy(y);
    phx_stream_destroy(stream);
    return status;
  }

  std::vector<float> run_mlp(phx_executable exe) {
    phx_stream stream = nullptr;
    EXPECT_EQ(phx_stream_create(context_, cpu_, &stream), PHX_STATUS_OK);
    const int64_t row[2] = {1, 4};
    phx_tensor x = nullptr, y = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, cpu_, PHX_DTYPE_F32, 2, row, &x), PHX_STATUS_OK);
    EXPECT_EQ(phx_tensor_create(context_, cpu_, PHX_DTYPE_F32, 2, row, &y), PHX_STATUS_OK);
    const float values[4] = {1.5f, -2.0f, 0.25f, 3.0f};
    EXPECT_EQ(phx_tensor_upload(x, 0, values, sizeof values), PHX_STATUS_OK);
    uint64_t ticket = 0;
    EXPECT_EQ(phx_executable_run(stream, exe, &x, 1, &y, 1, &ticket), PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK);
    std::vector<float> result = download(y, 4);
    phx_tensor_destroy(x);
    phx_tensor_destroy(y);
    phx_stream_destroy(stream);
    return result;
  }
};

TEST_F(ExecutableSave, ALoadedExecutableRunsAsTheOriginalBitForBit) {
  phx_graph graph = mlp();
  phx_executable exe = compile(graph, cpu_);
  ASSERT_NE(exe, nullptr);
  const std::vector<float> expected = run_mlp(exe);
  const std::vector<unsigned char> bytes = save(exe);
  const phx_executable_info original = describe(exe);
  ASSERT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);

  phx_executable loaded = nullptr;
  ASSERT_EQ(load(bytes, &loaded), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(run_mlp(loaded), expected);
  const phx_executable_info info = describe(loaded);
  EXPECT_EQ(info.device, cpu_);
  EXPECT_EQ(info.node_count, original.node_count);
  EXPECT_EQ(info.fused_nodes, original.fused_nodes);
  EXPECT_EQ(info.graph_node_count, original.graph_node_count);
  EXPECT_EQ(info.constant_bytes, original.constant_bytes);
  EXPECT_EQ(info.planned_bytes, original.planned_bytes);
  phx_executable_node_info node_info = PHX_EXECUTABLE_NODE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe_node(loaded, 0, &node_info), PHX_STATUS_OK);
  EXPECT_STREQ(node_info.name, "xw + h + relu");
  EXPECT_EQ(node_info.op, PHX_OP_MATMUL);
  EXPECT_EQ(node_info.compute_dtype, PHX_DTYPE_F32);
  // The loaded executable saves to the same bytes: nothing was lost on the way.
  EXPECT_EQ(save(loaded), bytes);
  EXPECT_EQ(phx_executable_destroy(loaded), PHX_STATUS_OK);
}

TEST_F(ExecutableSave, ADeviceThatCompiledItsPartGetsItsSavedDataBack) {
  phx_graph graph = three_adds();
  const std::vector<unsigned char> bytes = compile_and_save(graph, native_);
  ASSERT_FALSE(bytes.empty());

  phx_executable loaded = nullptr;
  ASSERT_EQ(load(bytes, &loaded), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(traced("graph_compile ICiiO serialized"), 1u);
  EXPECT_EQ(describe(loaded).native_parts, 1u);
  EXPECT_EQ(run(loaded, native_, {1, 2, 3, 4}, 4), (std::vector<float>{22, 44, 66, 88}));
  EXPECT_EQ(phx_executable_destroy(loaded), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

TEST_F(ExecutableSave, AConstantTensorReadInPlaceIsSavedAsACopy) {
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
  const phx_value x = input(graph, 4);
  phx_tensor weights = tensor(cpu_, {1, 2, 3, 4});
  phx_value c = 0;
  ASSERT_EQ(phx_graph_add_constant_tensor(graph, "c", weights, &c), PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_add_output(graph, node(graph, PHX_OP_ADD, {x, c}, "y"), "y"), PHX_STATUS_OK);
  const std::vector<unsigned char> bytes = compile_and_save(graph, cpu_);
  ASSERT_FALSE(bytes.empty());
  ASSERT_EQ(phx_tensor_destroy(weights), PHX_STATUS_OK);

  phx_executable loaded = nullptr;
  ASSERT_EQ(load(bytes, &loaded), PHX_STATUS_OK) << phx_last_error();
  // Without dynamic inputs, the output's sizes are known before any run.
  phx_value_info output = PHX_VALUE_INFO_INIT;
  ASSERT_EQ(phx_executable_output_info(loaded, 0, &output), PHX_STATUS_OK) << phx_last_error();
  EXPECT_STREQ(output.name, "y");
  EXPECT_EQ(output.rank, 1u);
  EXPECT_EQ(output.shape[0], 4);
  EXPECT_EQ(run(loaded, cpu_, {10, 20, 30, 40}, 4), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(phx_executable_destroy(loaded), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

TEST_F(ExecutableSave, ADynamicExecutableKeepsItsDynamicDimensions) {
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
  const phx_value x = input(graph, PHX_DIM_DYNAMIC);
  ASSERT_EQ(phx_graph_add_output(graph, node(graph, PHX_OP_ADD, {x, x}, "y"), "y"), PHX_STATUS_OK);
  const std::vector<unsigned char> bytes = compile_and_save(graph, cpu_);
  ASSERT_FALSE(bytes.empty());
  phx_executable loaded = nullptr;
  ASSERT_EQ(load(bytes, &loaded), PHX_STATUS_OK) << phx_last_error();
  phx_value_info input = PHX_VALUE_INFO_INIT;
  ASSERT_EQ(phx_executable_input_info(loaded, 0, &input), PHX_STATUS_OK) << phx_last_error();
  EXPECT_STREQ(input.name, "x");
  EXPECT_EQ(input.kind, PHX_VALUE_INPUT);
  EXPECT_EQ(input.dtype, PHX_DTYPE_F32);
  EXPECT_EQ(input.rank, 1u);
  EXPECT_EQ(input.shape[0], PHX_DIM_DYNAMIC);
  EXPECT_EQ(phx_executable_input_info(loaded, 1, &input), PHX_STATUS_NOT_FOUND);
  // The output's sizes are those last planned: none before the first run.
  phx_value_info output = PHX_VALUE_INFO_INIT;
  ASSERT_EQ(phx_executable_output_info(loaded, 0, &output), PHX_STATUS_OK) << phx_last_error();
  EXPECT_STREQ(output.name, "y");
  EXPECT_EQ(output.kind, PHX_VALUE_NODE_OUTPUT);
  EXPECT_EQ(output.dtype, PHX_DTYPE_F32);
  EXPECT_EQ(output.rank, 0u);
  EXPECT_EQ(phx_executable_output_info(loaded, 1, &output), PHX_STATUS_NOT_FOUND);
  EXPECT_EQ(run(loaded, cpu_, {1, 2, 3}, 3), (std::vector<float>{2, 4, 6}));
  ASSERT_EQ(phx_executable_output_info(loaded, 0, &output), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(output.rank, 1u);
  EXPECT_EQ(output.shape[0], 3);
  EXPECT_EQ(run(loaded, cpu_, {1, 2, 3, 4, 5}, 5), (std::vector<float>{2, 4, 6, 8, 10}));
  EXPECT_EQ(phx_executable_destroy(loaded), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

TEST_F(ExecutableSave, ASmallBufferIsRefusedAndNothingIsWritten) {
  phx_graph graph = three_adds();
  phx_executable exe = compile(graph, cpu_);
  ASSERT_NE(exe, nullptr);
  size_t size = 0;
  ASSERT_EQ(phx_executable_save(exe, nullptr, 0, &size), PHX_STATUS_OK);
  std::vector<unsigned char> small(size - 1, 0xab);
  EXPECT_EQ(phx_executable_save(exe, small.data(), small.size(), &size),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(small, std::vector<unsigned char>(small.size(), 0xab));
  EXPECT_EQ(phx_executable_save(exe, nullptr, 4, &size), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_executable_save(exe, small.data(), small.size(), nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

TEST_F(ExecutableSave, TruncatedOrDamagedDataIsRefused) {
  phx_graph graph = mlp();
  const std::vector<unsigned char> bytes = compile_and_save(graph, cpu_);
  ASSERT_FALSE(bytes.empty());
  phx_executable loaded = nullptr;
  for (size_t size = 0; size < bytes.size(); ++size) {
    const std::vector<unsigned char> cut(bytes.begin(), bytes.begin() + ptrdiff_t(size));
    ASSERT_EQ(phx_executable_load(context_, cut.data(), cut.size(), nullptr, &loaded),
              PHX_STATUS_INVALID_ARGUMENT)
        << "cut at " << size;
    EXPECT_EQ(loaded, nullptr);
    EXPECT_NE(std::strlen(phx_last_error()), 0u);
  }
  std::vector<unsigned char> longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(load(longer, &loaded), PHX_STATUS_INVALID_ARGUMENT);
  // Any byte changed: refused, or (a byte of a constant's contents, a name) loaded and
  // runnable. Never a crash: the sanitizer builds run this too.
  std::mt19937 random(7);
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<unsigned char> damaged = bytes;
    damaged[random() % damaged.size()] ^= static_cast<unsigned char>(1 + random() % 255);
    const phx_status status = load(damaged, &loaded);
    if (status == PHX_STATUS_OK) {
      // It may have other shapes now, which a run refuses: any status but INTERNAL.
      EXPECT_NE(try_run(loaded), PHX_STATUS_INTERNAL) << phx_last_error();
      EXPECT_EQ(phx_executable_destroy(loaded), PHX_STATUS_OK);
    } else {
      EXPECT_TRUE(status == PHX_STATUS_INVALID_ARGUMENT || status == PHX_STATUS_INCOMPATIBLE ||
                  status == PHX_STATUS_NOT_FOUND || status == PHX_STATUS_OUT_OF_MEMORY)
          << phx_status_name(status) << ": " << phx_last_error();
    }
    loaded = nullptr;
  }
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

TEST_F(ExecutableSave, AnotherVersionOrDeviceIsIncompatible) {
  phx_graph graph = three_adds();
  const std::vector<unsigned char> bytes = compile_and_save(graph, native_);
  ASSERT_FALSE(bytes.empty());
  phx_executable loaded = nullptr;

  std::vector<unsigned char> other_version = bytes;
  other_version[12] ^= 1;  // after the 8-byte magic and the format: the Phynexus version
  EXPECT_EQ(load(other_version, &loaded), PHX_STATUS_INCOMPATIBLE);
  EXPECT_NE(std::string(phx_last_error()).find("saved by Phynexus"), std::string::npos);

  // Saved for the test plugin's device; options name the CPU device.
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = cpu_;
  EXPECT_EQ(load(bytes, &loaded, &options), PHX_STATUS_INCOMPATIBLE);
  EXPECT_NE(std::string(phx_last_error()).find("options.device is"), std::string::npos);
  options.device = 999;
  EXPECT_EQ(load(bytes, &loaded, &options), PHX_STATUS_NOT_FOUND);
  EXPECT_EQ(loaded, nullptr);

  // A context without that plugin.
  phx_context cpu_only = nullptr;
  const std::string cpu = std::string(PHX_TEST_DEFAULT_PLUGIN_DIR) + "/phx_cpu.so";
  const char* paths[] = {cpu.c_str()};
  phx_context_options context_options = PHX_CONTEXT_OPTIONS_INIT;
  context_options.plugin_paths = paths;
  context_options.plugin_path_count = 1;
  context_options.use_default_search_path = 0;
  ASSERT_EQ(phx_context_create(&context_options, &cpu_only), PHX_STATUS_OK);
  EXPECT_EQ(phx_executable_load(cpu_only, bytes.data(), bytes.size(), nullptr, &loaded),
            PHX_STATUS_INCOMPATIBLE);
  EXPECT_NE(std::string(phx_last_error()).find("which the context does not have"),
            std::string::npos);
  EXPECT_EQ(phx_context_destroy(cpu_only), PHX_STATUS_OK);

  // Saved data the plugin finds of another graph: its own check.
  std::vector<unsigned char> other_graph = bytes;
  other_graph[other_graph.size() - 4] ^= 1;  // the last node's output index
  EXPECT_EQ(load(other_graph, &loaded), PHX_STATUS_INCOMPATIBLE);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

TEST_F(ExecutableSave, BadArgumentsAreRefused) {
  phx_executable loaded = nullptr;
  const unsigned char junk[32] = {1, 2, 3};
  EXPECT_EQ(phx_executable_load(context_, nullptr, 8, nullptr, &loaded),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_executable_load(context_, junk, sizeof junk, nullptr, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_executable_load(context_, junk, sizeof junk, nullptr, &loaded),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("not a saved executable"), std::string::npos);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.struct_size = 3;
  EXPECT_EQ(phx_executable_load(context_, junk, sizeof junk, &options, &loaded),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(loaded, nullptr);
}

}  // namespace
