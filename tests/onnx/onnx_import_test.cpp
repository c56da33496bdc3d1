// phx_model_load_onnx and the tensor files of onnx.h: a model runs with the results of
// float64 numpy (make_test_models.py), and every broken or refused model gets its status
// and a message naming what is wrong, with *out_graph untouched.
#include <gtest/gtest.h>
#include <phynexus/onnx.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

const std::string kModels = PHX_ONNX_TEST_MODELS;

std::string model_path(const std::string& name) { return kModels + "/" + name + "/model.onnx"; }

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class OnnxImport : public ::testing::Test {
 protected:
  void SetUp() override {
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    const char* paths[] = {PHX_TEST_DEFAULT_PLUGIN_DIR};
    options.plugin_paths = paths;
    options.plugin_path_count = 1;
    options.use_default_search_path = 0;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
  }
  void TearDown() override { phx_context_destroy(context_); }

  // Loads name and expects status, *out_graph untouched and a message containing each
  // of words.
  void expect_refused(const std::string& name, phx_status status,
                      std::initializer_list<const char*> words,
                      const phx_onnx_options* o = nullptr) {
    phx_graph graph = reinterpret_cast<phx_graph>(0x1);
    const std::string path = name.ends_with(".onnx") ? kModels + "/" + name : model_path(name);
    EXPECT_EQ(phx_model_load_onnx(context_, path.c_str(), o, &graph), status) << phx_last_error();
    EXPECT_EQ(graph, reinterpret_cast<phx_graph>(0x1));
    const std::string message = phx_last_error();
    EXPECT_TRUE(message.starts_with("phx_model_load_onnx: ")) << message;
    for (const char* word : words) EXPECT_NE(message.find(word), std::string::npos) << message;
  }

  phx_context context_ = nullptr;
};

phx_onnx_tensor read_tensor(const std::string& path) {
  phx_onnx_tensor t = PHX_ONNX_TENSOR_INIT;
  EXPECT_EQ(phx_onnx_tensor_read(path.c_str(), &t), PHX_STATUS_OK) << phx_last_error();
  return t;
}

// Runs graph on the first device with x and returns output 0's values.
std::vector<float> run(phx_context context, phx_graph graph, const phx_onnx_tensor& x) {
  phx_executable exe = nullptr;
  EXPECT_EQ(phx_graph_compile(context, graph, nullptr, &exe), PHX_STATUS_OK) << phx_last_error();
  phx_stream stream = nullptr;
  EXPECT_EQ(phx_stream_create(context, 0, &stream), PHX_STATUS_OK);
  phx_tensor in = nullptr, out = nullptr;
  EXPECT_EQ(phx_tensor_create(context, 0, x.dtype, x.rank, x.shape, &in), PHX_STATUS_OK);
  EXPECT_EQ(phx_tensor_upload(in, 0, x.data, x.size), PHX_STATUS_OK);
  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  EXPECT_EQ(phx_executable_output_desc(exe, &in, 1, 0, &desc), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_tensor_create(context, 0, desc.dtype, desc.rank, desc.shape, &out), PHX_STATUS_OK);
  EXPECT_EQ(phx_executable_run(stream, exe, &in, 1, &out, 1, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  std::vector<float> values(desc.element_count);
  EXPECT_EQ(phx_tensor_download(out, 0, values.data(), desc.byte_size), PHX_STATUS_OK);
  phx_tensor_destroy(in);
  phx_tensor_destroy(out);
  phx_stream_destroy(stream);
  phx_executable_destroy(exe);
  return values;
}

TEST_F(OnnxImport, MlpMatchesFloat64Reference) {
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, model_path("mlp").c_str(), nullptr, &graph),
            PHX_STATUS_OK)
      << phx_last_error();
  phx_value_info x_info = PHX_VALUE_INFO_INIT;
  ASSERT_EQ(phx_graph_value_info(graph, 0, &x_info), PHX_STATUS_OK);
  EXPECT_STREQ(x_info.name, "x");
  EXPECT_EQ(x_info.shape[0], PHX_DIM_DYNAMIC);  // "batch"
  phx_onnx_tensor x = read_tensor(kModels + "/mlp/test_data_set_0/input_0.pb");
  phx_onnx_tensor y = read_tensor(kModels + "/mlp/test_data_set_0/output_0.pb");
  const std::vector<float> got = run(context_, graph, x);
  ASSERT_EQ(got.size() * 4, y.size);
  // Softmax outputs in [0, 1] after two f32 products of K = 16 and 32 with |values| <= 1:
  // each logit is off by at most about K * 2^-24 * sum|terms| (< 32 * 2^-24 * 40), which
  // moves a probability by at most as much; 1e-5 holds it with room.
  const auto* want = static_cast<const float*>(y.data);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  phx_onnx_tensor_free(&x);
  phx_onnx_tensor_free(&y);
  phx_graph_destroy(graph);
}

TEST_F(OnnxImport, FromMemoryAsFromFile) {
  const std::vector<char> bytes = read_bytes(model_path("mlp"));
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx_memory(context_, bytes.data(), bytes.size(), nullptr, &graph),
            PHX_STATUS_OK)
      << phx_last_error();
  phx_onnx_tensor x = read_tensor(kModels + "/mlp/test_data_set_0/input_0.pb");
  phx_graph from_file = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, model_path("mlp").c_str(), nullptr, &from_file),
            PHX_STATUS_OK);
  EXPECT_EQ(run(context_, graph, x), run(context_, from_file, x));
  phx_onnx_tensor_free(&x);
  phx_graph_destroy(graph);
  phx_graph_destroy(from_file);
}

TEST_F(OnnxImport, NamedDimensionTakesTheGivenSize) {
  const char* names[] = {"batch"};
  const int64_t sizes[] = {5};
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.dim_names = names;
  options.dim_sizes = sizes;
  options.dim_count = 1;
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, model_path("mlp").c_str(), &options, &graph),
            PHX_STATUS_OK);
  phx_value_info info = PHX_VALUE_INFO_INIT;
  ASSERT_EQ(phx_graph_value_info(graph, 0, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.shape[0], 5);
  phx_graph_destroy(graph);
  // Sizes below 1 are refused.
  const int64_t zero[] = {0};
  options.dim_sizes = zero;
  expect_refused("mlp", PHX_STATUS_INVALID_ARGUMENT, {"dim_sizes[0]"}, &options);
}

// dynamic_axes (make_test_models.py): x ["batch", ?, 8], its Shape computed at import, so
// refused until the sizes are given; then y is [batch * seq, 8].
TEST_F(OnnxImport, InputShapesFixADynamicAxesExport) {
  expect_refused("dynamic_axes", PHX_STATUS_UNSUPPORTED, {"node 'shape'", "input_shapes"});
  const int64_t shape[] = {2, 3, 8};
  phx_onnx_input_shape x = {"x", 3, shape};
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.input_shapes = &x;
  options.input_shape_count = 1;
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, model_path("dynamic_axes").c_str(), &options, &graph),
            PHX_STATUS_OK)
      << phx_last_error();
  phx_value_info info = PHX_VALUE_INFO_INIT;
  ASSERT_EQ(phx_graph_value_info(graph, 0, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 3);
  phx_onnx_tensor in = read_tensor(kModels + "/dynamic_axes/test_data_set_0/input_0.pb");
  phx_onnx_tensor want = read_tensor(kModels + "/dynamic_axes/test_data_set_0/output_0.pb");
  const std::vector<float> got = run(context_, graph, in);
  ASSERT_EQ(got.size() * sizeof(float), want.size);
  EXPECT_EQ(std::memcmp(got.data(), want.data, want.size), 0);  // a reshape: exact
  phx_onnx_tensor_free(&in);
  phx_onnx_tensor_free(&want);
  phx_graph_destroy(graph);

  // A named size fixes the same dimension wherever it appears: dim_names and the shape
  // must agree.
  const char* names[] = {"batch"};
  const int64_t four[] = {4};
  options.dim_names = names;
  options.dim_sizes = four;
  options.dim_count = 1;
  expect_refused("dynamic_axes", PHX_STATUS_INVALID_ARGUMENT,
                 {"input_shapes[0] ('x')", "dimension 0 ('batch') is 2", "given as 4"}, &options);
  options.dim_count = 0;
  const int64_t wrong_fixed[] = {2, 3, 9};
  x.shape = wrong_fixed;
  expect_refused("dynamic_axes", PHX_STATUS_INVALID_ARGUMENT, {"dimension 2 is 9, the model's 8"},
                 &options);
  x.shape = shape;
  x.rank = 2;
  expect_refused("dynamic_axes", PHX_STATUS_INVALID_ARGUMENT, {"rank 2, the input's is 3"},
                 &options);
  x.rank = 3;
  // A name the model lacks is ignored, as dim_names are: x stays dynamic, and its Shape
  // refused.
  x.name = "nothing";
  expect_refused("dynamic_axes", PHX_STATUS_UNSUPPORTED, {"node 'shape'"}, &options);
  // No name: the input at the entry's position, here x; past the model's inputs, refused.
  x.name = nullptr;
  phx_graph by_position = nullptr;
  EXPECT_EQ(
      phx_model_load_onnx(context_, model_path("dynamic_axes").c_str(), &options, &by_position),
      PHX_STATUS_OK)
      << phx_last_error();
  phx_graph_destroy(by_position);
  phx_onnx_input_shape two[] = {x, x};
  options.input_shapes = two;
  options.input_shape_count = 2;
  expect_refused("dynamic_axes", PHX_STATUS_INVALID_ARGUMENT,
                 {"input_shapes[1] has no name, and the model has 1 inputs"}, &options);
  options.input_shapes = &x;
  options.input_shape_count = 1;
  x.name = "x";
  const int64_t zero[] = {0, 3, 8};
  x.shape = zero;
  expect_refused("dynamic_axes", PHX_STATUS_INVALID_ARGUMENT, {"shape[0] is 0, below 1"}, &options);
  x.shape = nullptr;
  expect_refused("dynamic_axes", PHX_STATUS_INVALID_ARGUMENT, {"null shape"}, &options);
  options.input_shapes = nullptr;
  expect_refused("dynamic_axes", PHX_STATUS_INVALID_ARGUMENT, {"no input_shapes"}, &options);
}

TEST_F(OnnxImport, InputValueMakesAnInputKnown) {
  expect_refused("axes_input", PHX_STATUS_UNSUPPORTED, {"'sum'", "ReduceSum", "axes"});
  const int32_t axis = 1;
  phx_onnx_tensor axes = PHX_ONNX_TENSOR_INIT;
  axes.name = "axes";
  axes.dtype = PHX_DTYPE_I32;
  axes.rank = 1;
  axes.shape[0] = 1;
  axes.data = const_cast<int32_t*>(&axis);
  axes.size = sizeof axis;
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.input_values = &axes;
  options.input_value_count = 1;
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, model_path("axes_input").c_str(), &options, &graph),
            PHX_STATUS_OK)
      << phx_last_error();
  const float x_values[6] = {1, 2, 3, 4, 5, 6};
  phx_onnx_tensor x = PHX_ONNX_TENSOR_INIT;
  x.dtype = PHX_DTYPE_F32;
  x.rank = 2;
  x.shape[0] = 2;
  x.shape[1] = 3;
  x.data = const_cast<float*>(x_values);
  x.size = sizeof x_values;
  EXPECT_EQ(run(context_, graph, x), (std::vector<float>{6, 15}));
  phx_graph_destroy(graph);
  // A value of another shape, and a name the model lacks, are refused.
  axes.shape[0] = 2;
  expect_refused("axes_input", PHX_STATUS_INVALID_ARGUMENT, {"input 'axes'", "shape"}, &options);
  axes.shape[0] = 1;
  axes.name = "nothing";
  expect_refused("axes_input", PHX_STATUS_INVALID_ARGUMENT, {"input_values[0]"}, &options);
}

// An empty value known at import is taken (empty axes reduce every axis); an empty graph
// tensor is refused, whether an input of the model or a value given that a node needs in
// the graph.
TEST_F(OnnxImport, EmptyValueStaysKnownAtImport) {
  expect_refused("empty_axes_input", PHX_STATUS_UNSUPPORTED, {"input 'axes'", "a dimension of 0"});
  phx_onnx_tensor axes = PHX_ONNX_TENSOR_INIT;
  axes.name = "axes";
  axes.dtype = PHX_DTYPE_I32;
  axes.rank = 1;
  axes.shape[0] = 0;
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.input_values = &axes;
  options.input_value_count = 1;
  const float x_values[6] = {1, 2, 3, 4, 5, 6};
  phx_onnx_tensor x = PHX_ONNX_TENSOR_INIT;
  x.dtype = PHX_DTYPE_F32;
  x.rank = 2;
  x.shape[0] = 2;
  x.shape[1] = 3;
  x.data = const_cast<float*>(x_values);
  x.size = sizeof x_values;
  // data null or not: size 0 holds nothing.
  const int32_t unused = 7;
  for (const void* data : {static_cast<const void*>(nullptr), static_cast<const void*>(&unused)}) {
    axes.data = const_cast<void*>(data);
    phx_graph graph = nullptr;
    ASSERT_EQ(
        phx_model_load_onnx(context_, model_path("empty_axes_input").c_str(), &options, &graph),
        PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(run(context_, graph, x), (std::vector<float>{21}));
    phx_graph_destroy(graph);
  }
  // A size that the empty shape does not hold.
  axes.data = nullptr;
  axes.size = 4;
  expect_refused("empty_axes_input", PHX_STATUS_INVALID_ARGUMENT, {"input 'axes'", "size"},
                 &options);
}

TEST_F(OnnxImport, EmptyGraphTensorIsRefused) {
  expect_refused("empty_input", PHX_STATUS_UNSUPPORTED, {"input 'x'", "a dimension of 0"});
  // Given at import, x is known, but Relu needs it in the graph.
  phx_onnx_tensor x = PHX_ONNX_TENSOR_INIT;
  x.name = "x";
  x.dtype = PHX_DTYPE_F32;
  x.rank = 2;
  x.shape[0] = 0;
  x.shape[1] = 3;
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.input_values = &x;
  options.input_value_count = 1;
  expect_refused("empty_input", PHX_STATUS_UNSUPPORTED, {"'x'", "a dimension of 0", "graph tensor"},
                 &options);
}

// f32 to bf16 rounds to nearest even (make_test_models.py's values hold ties), bit for bit.
TEST_F(OnnxImport, CastToBfloat16RoundsToNearestEven) {
  const std::string test = kModels + "/node/test_cast_float_to_bfloat16";
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, (test + "/model.onnx").c_str(), nullptr, &graph),
            PHX_STATUS_OK)
      << phx_last_error();
  phx_onnx_tensor x = read_tensor(test + "/test_data_set_0/input_0.pb");
  phx_onnx_tensor y = read_tensor(test + "/test_data_set_0/output_0.pb");
  ASSERT_EQ(y.dtype, PHX_DTYPE_BF16);
  const std::vector<float> got = run(context_, graph, x);  // bf16 bits in its first half
  ASSERT_GE(got.size() * sizeof(float), y.size);
  EXPECT_EQ(std::memcmp(got.data(), y.data, y.size), 0);
  phx_onnx_tensor_free(&x);
  phx_onnx_tensor_free(&y);
  phx_graph_destroy(graph);
}

TEST_F(OnnxImport, RefusedModelsSayWhy) {
  expect_refused("unsupported_op", PHX_STATUS_UNSUPPORTED, {"node 'det'", "Det"});
  expect_refused("future_opset", PHX_STATUS_UNSUPPORTED, {"opset", "18", "1 to 17"});
  expect_refused("double_input", PHX_STATUS_UNSUPPORTED, {"input 'x'", "DOUBLE"});
  expect_refused("shape_mismatch", PHX_STATUS_INVALID_ARGUMENT, {"node 'mm'", "MatMul", "K"});
  expect_refused("int64_overflow", PHX_STATUS_UNSUPPORTED, {"'big'", "1099511627776", "i32"});
  expect_refused("dangling_input", PHX_STATUS_INVALID_ARGUMENT, {"checker"});
  expect_refused("resize_runtime_scales", PHX_STATUS_UNSUPPORTED,
                 {"node 'rs'", "Resize", "scales computed at run time"});
  expect_refused("resize_negative_scale", PHX_STATUS_INVALID_ARGUMENT,
                 {"node 'rs'", "positive and finite"});
  expect_refused("upsample_nearest_down", PHX_STATUS_UNSUPPORTED,
                 {"node 'up'", "Upsample", "nearest downsampling"});
  expect_refused("conv3d_dynamic_depth", PHX_STATUS_UNSUPPORTED,
                 {"node 'c3'", "Conv", "dynamic spatial dimension"});
  expect_refused("convtranspose3d_no_output", PHX_STATUS_INVALID_ARGUMENT,
                 {"node 't3'", "ConvTranspose", "no output depth"});
  expect_refused("depth_to_space_dynamic_height", PHX_STATUS_UNSUPPORTED,
                 {"node 'd2s'", "DepthToSpace", "dynamic C, H or W", "give the input sizes"});
  expect_refused("depth_to_space_channels", PHX_STATUS_INVALID_ARGUMENT,
                 {"node 'd2s'", "C = 8", "blocksize^2"});
  expect_refused("scatter_nd_runtime_indices", PHX_STATUS_UNSUPPORTED,
                 {"node 'sc'", "ScatterND", "indices computed at run time"});
  expect_refused("einsum_integers", PHX_STATUS_UNSUPPORTED, {"node 'es'", "Einsum of integers"});
  expect_refused("einsum_operand_count", PHX_STATUS_INVALID_ARGUMENT,
                 {"node 'es'", "1 operands for 2 inputs"});
  expect_refused("lstm_dynamic_sequence", PHX_STATUS_UNSUPPORTED,
                 {"node 'lstm'", "LSTM", "dynamic sequence", "give the input sizes"});
  expect_refused("gru_weights_shape", PHX_STATUS_INVALID_ARGUMENT, {"node 'gru'", "W's shape"});
  expect_refused("gather_elements_rank", PHX_STATUS_INVALID_ARGUMENT,
                 {"node 'ge'", "indices must have data's rank"});
  expect_refused("truncated.onnx", PHX_STATUS_INVALID_ARGUMENT, {"not a valid ONNX model"});
  expect_refused("no_such_model", PHX_STATUS_NOT_FOUND, {"no_such_model"});
}

// A model of opset 6 goes through ONNX's version converter, and the context's log says so
// (its numerics: the own node test add_opset_6_legacy_broadcast on every device).
TEST(OnnxOldOpset, IsConvertedAndTheLogSaysSo) {
  std::vector<std::string> warnings;
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  const char* paths[] = {PHX_TEST_DEFAULT_PLUGIN_DIR};
  options.plugin_paths = paths;
  options.plugin_path_count = 1;
  options.use_default_search_path = 0;
  options.log_callback = [](void* user_data, phx_log_level level, const char* message) {
    if (level == PHX_LOG_WARN)
      static_cast<std::vector<std::string>*>(user_data)->push_back(message);
  };
  options.log_user_data = &warnings;
  phx_context context = nullptr;
  ASSERT_EQ(phx_context_create(&options, &context), PHX_STATUS_OK) << phx_last_error();
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context, model_path("old_opset").c_str(), nullptr, &graph),
            PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("opset 6 converted to opset 7"), std::string::npos) << warnings[0];
  phx_graph_destroy(graph);
  phx_context_destroy(context);
}

// PHX_ONNX_OUTPUT_EVERY_VALUE: the mlp's four values as outputs in the order of its nodes,
// named as the model names them, the model's own output 'y' among them, and each holds
// what the node computes.
TEST_F(OnnxImport, EveryValueAnOutputInTheOrderOfTheNodes) {
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.flags = PHX_ONNX_OUTPUT_EVERY_VALUE;
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, model_path("mlp").c_str(), &options, &graph),
            PHX_STATUS_OK)
      << phx_last_error();
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, graph, nullptr, &exe), PHX_STATUS_OK) << phx_last_error();
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
  ASSERT_EQ(info.output_count, 4u);
  const char* names[] = {"h", "r", "z", "y"};
  for (size_t i = 0; i < 4; ++i) {
    phx_value_info vi = PHX_VALUE_INFO_INIT;
    ASSERT_EQ(phx_executable_output_info(exe, i, &vi), PHX_STATUS_OK) << phx_last_error();
    EXPECT_STREQ(vi.name, names[i]);
  }
  phx_onnx_tensor x = read_tensor(kModels + "/mlp/test_data_set_0/input_0.pb");
  phx_onnx_tensor y = read_tensor(kModels + "/mlp/test_data_set_0/output_0.pb");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, 0, &stream), PHX_STATUS_OK);
  phx_tensor in = nullptr;
  ASSERT_EQ(phx_tensor_create(context_, 0, x.dtype, x.rank, x.shape, &in), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_upload(in, 0, x.data, x.size), PHX_STATUS_OK);
  std::vector<phx_tensor> out(4, nullptr);
  std::vector<std::vector<float>> values(4);
  for (size_t i = 0; i < 4; ++i) {
    phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
    ASSERT_EQ(phx_executable_output_desc(exe, &in, 1, i, &desc), PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_create(context_, 0, desc.dtype, desc.rank, desc.shape, &out[i]),
              PHX_STATUS_OK);
    values[i].resize(desc.element_count);
  }
  ASSERT_EQ(phx_executable_run(stream, exe, &in, 1, out.data(), 4, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  for (size_t i = 0; i < 4; ++i)
    ASSERT_EQ(phx_tensor_download(out[i], 0, values[i].data(), values[i].size() * 4),
              PHX_STATUS_OK);
  // r = relu(h) exactly; y within MlpMatchesFloat64Reference's 1e-5.
  ASSERT_EQ(values[0].size(), values[1].size());
  for (size_t i = 0; i < values[0].size(); ++i)
    EXPECT_EQ(values[1][i], std::max(values[0][i], 0.f));
  ASSERT_EQ(values[3].size() * 4, y.size);
  const auto* want = static_cast<const float*>(y.data);
  for (size_t i = 0; i < values[3].size(); ++i) EXPECT_NEAR(values[3][i], want[i], 1e-5) << i;
  for (phx_tensor t : out) phx_tensor_destroy(t);
  phx_tensor_destroy(in);
  phx_stream_destroy(stream);
  phx_executable_destroy(exe);
  phx_onnx_tensor_free(&x);
  phx_onnx_tensor_free(&y);
  phx_graph_destroy(graph);
}

TEST_F(OnnxImport, UnknownFlagsAreRefused) {
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.flags = UINT32_C(0x80);
  expect_refused("mlp", PHX_STATUS_INVALID_ARGUMENT, {"unknown bits 0x80"}, &options);
}

TEST_F(OnnxImport, SkippingTheCheckerStillRefusesADanglingInput) {
  phx_onnx_options options = PHX_ONNX_OPTIONS_INIT;
  options.flags = PHX_ONNX_SKIP_CHECKER;
  expect_refused("dangling_input", PHX_STATUS_INVALID_ARGUMENT, {"node 'r'", "nowhere"}, &options);
}

TEST_F(OnnxImport, BadArguments) {
  phx_graph graph = nullptr;
  const std::string path = model_path("mlp");
  EXPECT_EQ(phx_model_load_onnx(nullptr, path.c_str(), nullptr, &graph),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_model_load_onnx(context_, nullptr, nullptr, &graph), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_model_load_onnx(context_, path.c_str(), nullptr, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_model_load_onnx_memory(context_, nullptr, 4, nullptr, &graph),
            PHX_STATUS_INVALID_ARGUMENT);
  phx_onnx_options small = PHX_ONNX_OPTIONS_INIT;
  small.struct_size = 4;
  EXPECT_EQ(phx_model_load_onnx(context_, path.c_str(), &small, &graph),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("struct_size"), std::string::npos);
  const char garbage[] = "\xff\xff\xff\xff not a model";
  EXPECT_EQ(phx_model_load_onnx_memory(context_, garbage, sizeof garbage, nullptr, &graph),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(graph, nullptr);
}

// phynexus.h's rule for size-prefixed structs: the library reads the first struct_size
// bytes, so that programs built against an older or a newer onnx.h keep working.
TEST_F(OnnxImport, OptionsOfAnOlderOrNewerHeaderAreReadAsFarAsTheyGo) {
  const std::string path = model_path("mlp");
  // An older header's struct, ending after flags: what lies past it is never read (a
  // dim_count there without names would be refused).
  phx_onnx_options older = PHX_ONNX_OPTIONS_INIT;
  older.struct_size = offsetof(phx_onnx_options, dim_names);
  older.dim_count = 5;
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, path.c_str(), &older, &graph), PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_NE(graph, nullptr);
  phx_graph_destroy(graph);
  // A struct that ends before input_shapes: the count past it is never read.
  phx_onnx_options before_shapes = PHX_ONNX_OPTIONS_INIT;
  before_shapes.struct_size = offsetof(phx_onnx_options, input_shapes);
  before_shapes.input_shape_count = 3;
  graph = nullptr;
  ASSERT_EQ(phx_model_load_onnx(context_, path.c_str(), &before_shapes, &graph), PHX_STATUS_OK)
      << phx_last_error();
  phx_graph_destroy(graph);
  // A newer header's larger struct: the fields this library knows are read, the rest not.
  struct {
    phx_onnx_options options;
    uint64_t later_field;
  } newer = {PHX_ONNX_OPTIONS_INIT, ~uint64_t{0}};
  newer.options.struct_size = sizeof newer;
  newer.options.dim_count = 1;  // read, and refused without names
  graph = nullptr;
  EXPECT_EQ(phx_model_load_onnx(context_, path.c_str(), &newer.options, &graph),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("dim_count"), std::string::npos);
  EXPECT_EQ(graph, nullptr);
  newer.options.dim_count = 0;
  ASSERT_EQ(phx_model_load_onnx(context_, path.c_str(), &newer.options, &graph), PHX_STATUS_OK)
      << phx_last_error();
  phx_graph_destroy(graph);
}

TEST(OnnxTensorFile, WriteThenReadGivesTheSameTensor) {
  const std::string path = ::testing::TempDir() + "/phx_onnx_tensor.pb";
  const int16_t values[6] = {1, -2, 3, -4, 5, 32767};
  const int64_t shape[2] = {3, 2};
  ASSERT_EQ(
      phx_onnx_tensor_write(path.c_str(), "t", PHX_DTYPE_I16, 2, shape, values, sizeof values),
      PHX_STATUS_OK)
      << phx_last_error();
  phx_onnx_tensor t = read_tensor(path);
  EXPECT_STREQ(t.name, "t");
  EXPECT_EQ(t.dtype, PHX_DTYPE_I16);
  ASSERT_EQ(t.rank, 2u);
  EXPECT_EQ(t.shape[0], 3);
  EXPECT_EQ(t.shape[1], 2);
  ASSERT_EQ(t.size, sizeof values);
  EXPECT_EQ(std::memcmp(t.data, values, sizeof values), 0);
  phx_onnx_tensor_free(&t);
  EXPECT_EQ(t.data, nullptr);
  phx_onnx_tensor_free(&t);  // twice, and null: no-ops
  phx_onnx_tensor_free(nullptr);
  // The wrong byte size, an unknown dtype: refused, nothing written.
  EXPECT_EQ(phx_onnx_tensor_write(path.c_str(), nullptr, PHX_DTYPE_I16, 2, shape, values, 4),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_onnx_tensor_write(path.c_str(), nullptr, static_cast<phx_dtype>(99), 2, shape,
                                  values, sizeof values),
            PHX_STATUS_INVALID_ARGUMENT);
}

TEST(OnnxTensorFile, EmptyTensorHasNoData) {
  const std::string path = ::testing::TempDir() + "/phx_onnx_empty.pb";
  const int64_t shape[2] = {0, 3};
  ASSERT_EQ(phx_onnx_tensor_write(path.c_str(), "e", PHX_DTYPE_I32, 2, shape, nullptr, 0),
            PHX_STATUS_OK)
      << phx_last_error();
  phx_onnx_tensor t = read_tensor(path);
  EXPECT_STREQ(t.name, "e");
  EXPECT_EQ(t.dtype, PHX_DTYPE_I32);
  ASSERT_EQ(t.rank, 2u);
  EXPECT_EQ(t.shape[0], 0);
  EXPECT_EQ(t.shape[1], 3);
  EXPECT_EQ(t.size, 0u);
  EXPECT_EQ(t.data, nullptr);
  phx_onnx_tensor_free(&t);
  EXPECT_EQ(t.name, nullptr);
  // Null data with a size, or a size the empty shape does not hold: refused.
  EXPECT_EQ(phx_onnx_tensor_write(path.c_str(), "e", PHX_DTYPE_I32, 2, shape, nullptr, 4),
            PHX_STATUS_INVALID_ARGUMENT);
  const int32_t value = 1;
  EXPECT_EQ(phx_onnx_tensor_write(path.c_str(), "e", PHX_DTYPE_I32, 2, shape, &value, 4),
            PHX_STATUS_INVALID_ARGUMENT);
}

TEST(OnnxTensorFile, Bfloat16StoredAsUint16IsTakenWhenAsked) {
  const std::string path = ::testing::TempDir() + "/phx_onnx_uint16.pb";
  // dims [2] (field 1), data_type UINT16 (field 2 = 4), raw_data (field 9) 1.0 and -2.0 as
  // bfloat16 bits: as ONNX 1.12's test data stores bfloat16.
  const unsigned char file[] = {0x08, 0x02, 0x10, 0x04, 0x4a, 0x04, 0x80, 0x3f, 0x00, 0xc0};
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(file), sizeof file);
  phx_onnx_tensor t = PHX_ONNX_TENSOR_INIT;
  EXPECT_EQ(phx_onnx_tensor_read(path.c_str(), &t), PHX_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(phx_last_error()).find("UINT16"), std::string::npos) << phx_last_error();
  EXPECT_EQ(t.data, nullptr);
  t.dtype = PHX_DTYPE_F32;  // asks nothing
  EXPECT_EQ(phx_onnx_tensor_read(path.c_str(), &t), PHX_STATUS_UNSUPPORTED);
  t.dtype = PHX_DTYPE_BF16;
  ASSERT_EQ(phx_onnx_tensor_read(path.c_str(), &t), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(t.dtype, PHX_DTYPE_BF16);
  ASSERT_EQ(t.size, 4u);
  const uint16_t bits[2] = {0x3f80, 0xc000};
  EXPECT_EQ(std::memcmp(t.data, bits, sizeof bits), 0);
  // Freed, the tensor asks nothing again.
  phx_onnx_tensor_free(&t);
  EXPECT_EQ(t.dtype, PHX_DTYPE_INVALID);
  EXPECT_EQ(phx_onnx_tensor_read(path.c_str(), &t), PHX_STATUS_UNSUPPORTED);
}

TEST(OnnxTensorFile, HostileFilesAreRefusedWithoutAllocating) {
  const std::string path = ::testing::TempDir() + "/phx_onnx_hostile.pb";
  // A TensorProto claiming dims [2^31, 2^31] of float and holding no data: field 1 (dims,
  // varint) twice, field 2 (data_type) = 1.
  const unsigned char claim[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x08, 0x08,
                                 0x80, 0x80, 0x80, 0x80, 0x08, 0x10, 0x01};
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(claim), sizeof claim);
  phx_onnx_tensor t = PHX_ONNX_TENSOR_INIT;
  EXPECT_EQ(phx_onnx_tensor_read(path.c_str(), &t), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("holds 0 values"), std::string::npos)
      << phx_last_error();
  EXPECT_EQ(t.data, nullptr);
  // dims [0, 2^31]: empty, whatever the other dimension claims, so nothing to allocate; with
  // a value in int32_data (field 5), refused.
  const unsigned char empty[] = {0x08, 0x00, 0x08, 0x80, 0x80, 0x80, 0x80, 0x08, 0x10, 0x06};
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(empty), sizeof empty);
  ASSERT_EQ(phx_onnx_tensor_read(path.c_str(), &t), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(t.size, 0u);
  EXPECT_EQ(t.data, nullptr);
  phx_onnx_tensor_free(&t);
  std::ofstream(path, std::ios::binary | std::ios::app).write("\x28\x01", 2);
  EXPECT_EQ(phx_onnx_tensor_read(path.c_str(), &t), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("holds 1 values"), std::string::npos)
      << phx_last_error();
  EXPECT_EQ(t.name, nullptr);
  EXPECT_EQ(phx_onnx_tensor_read("/nonexistent/t.pb", &t), PHX_STATUS_NOT_FOUND);
  EXPECT_EQ(phx_onnx_tensor_read(path.c_str(), nullptr), PHX_STATUS_INVALID_ARGUMENT);
}

}  // namespace
