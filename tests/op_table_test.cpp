// phx_op_info_get: the op table as the C API gives it. Every op is described, coherently
// with the rest of the API; bad questions are refused and write nothing; a caller of an
// older header gets the part of the struct it has. That the table's operands are the
// ones phx_op_run enforces is op_support_test's OpForms.FollowTheOpTable.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kEveryDtypeMask = (1u << PHX_DTYPE_COUNT) - 2;  // all but INVALID

TEST(OpTable, EveryOpIsDescribed) {
  for (int id = PHX_OP_INVALID + 1; id < PHX_OP_COUNT; ++id) {
    const auto op = static_cast<phx_op_id>(id);
    SCOPED_TRACE(phx_op_name(op));
    phx_op_info info = PHX_OP_INFO_INIT;
    ASSERT_EQ(phx_op_info_get(op, &info), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(info.struct_size, sizeof info);
    EXPECT_STREQ(info.name, phx_op_name(op));
    ASSERT_NE(info.summary, nullptr);
    EXPECT_GT(std::strlen(info.summary), 0u);
    ASSERT_NE(info.params_struct, nullptr);
    const std::string params = info.params_struct;
    EXPECT_TRUE(params.empty() || (params.rfind("phx_", 0) == 0 && params.size() > 11 &&
                                   params.compare(params.size() - 7, 7, "_params") == 0))
        << params;

    ASSERT_GE(info.input_count, 1u);
    ASSERT_LE(info.input_count, size_t{PHX_MAX_OP_INPUTS});
    EXPECT_GE(info.min_input_count, 1u);
    EXPECT_LE(info.min_input_count, info.input_count);
    EXPECT_EQ(info.optional_inputs & 1u, 0u) << "the first input is always required";
    EXPECT_EQ(info.optional_inputs >> info.input_count, 0u) << "bits past the inputs";
    // min_input_count runs through the last required input.
    EXPECT_EQ(info.optional_inputs >> (info.min_input_count - 1) & 1u, 0u);
    for (size_t i = info.min_input_count; i < info.input_count; ++i)
      EXPECT_EQ(info.optional_inputs >> i & 1u, 1u) << "input " << i;

    ASSERT_GE(info.output_count, 1u);
    ASSERT_LE(info.output_count, size_t{PHX_MAX_OP_OUTPUTS});
    std::set<std::string> names;
    ASSERT_NE(info.input_names, nullptr);
    ASSERT_NE(info.output_names, nullptr);
    for (size_t i = 0; i < info.input_count; ++i) {
      ASSERT_NE(info.input_names[i], nullptr);
      EXPECT_TRUE(names.insert(info.input_names[i]).second) << info.input_names[i];
    }
    for (size_t i = 0; i < info.output_count; ++i) {
      ASSERT_NE(info.output_names[i], nullptr);
      EXPECT_TRUE(names.insert(info.output_names[i]).second) << info.output_names[i];
    }
    EXPECT_NE(info.dtype_mask, 0u);
    EXPECT_EQ(info.dtype_mask & ~kEveryDtypeMask, 0u);
  }
}

// Some entries, spelled out: what docs/ops.md and phynexus.h say of them.
TEST(OpTable, EntriesSayWhatTheHeaderSays) {
  phx_op_info matmul = PHX_OP_INFO_INIT;
  ASSERT_EQ(phx_op_info_get(PHX_OP_MATMUL, &matmul), PHX_STATUS_OK);
  EXPECT_STREQ(matmul.params_struct, "phx_matmul_params");
  ASSERT_EQ(matmul.input_count, 3u);
  EXPECT_EQ(matmul.min_input_count, 2u);
  EXPECT_STREQ(matmul.input_names[2], "bias");
  EXPECT_EQ(matmul.optional_inputs, 1u << 2);
  EXPECT_EQ(matmul.dtype_mask, PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_F16) |
                                   PHX_DTYPE_BIT(PHX_DTYPE_BF16));

  phx_op_info qmatmul = PHX_OP_INFO_INIT;
  ASSERT_EQ(phx_op_info_get(PHX_OP_QMATMUL, &qmatmul), PHX_STATUS_OK);
  EXPECT_EQ(qmatmul.input_count, 9u);
  EXPECT_EQ(qmatmul.min_input_count, 5u);  // a_zero_point (3) may be null, b_scale (4) not
  EXPECT_STREQ(qmatmul.input_names[4], "b_scale");

  phx_op_info dynamic = PHX_OP_INFO_INIT;
  ASSERT_EQ(phx_op_info_get(PHX_OP_DYNAMIC_QUANTIZE, &dynamic), PHX_STATUS_OK);
  EXPECT_EQ(dynamic.output_count, 3u);
  EXPECT_STREQ(dynamic.params_struct, "");
}

// The ops of API 0.3, as phynexus.h names them: ids, names, parameter structs, inputs and
// the dtypes of the first input (the ONNX importer builds its nodes from these).
TEST(OpTable, TheOpsOfApi03AsTheHeaderSpecifiesThem) {
  constexpr uint32_t f =
      PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_F16) | PHX_DTYPE_BIT(PHX_DTYPE_BF16);
  constexpr uint32_t s =
      PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_I16) | PHX_DTYPE_BIT(PHX_DTYPE_I32);
  constexpr uint32_t u8 = PHX_DTYPE_BIT(PHX_DTYPE_U8);
  constexpr uint32_t all = f | s | u8;
  struct Row {
    phx_op_id op;
    int id;
    const char* name;
    const char* params;
    std::vector<std::string> inputs;
    uint32_t dtypes;
  };
  const Row rows[] = {
      {PHX_OP_SIGMOID, 24, "sigmoid", "", {"x"}, f},
      {PHX_OP_TANH, 25, "tanh", "", {"x"}, f},
      {PHX_OP_EXP, 26, "exp", "", {"x"}, f},
      {PHX_OP_LOG, 27, "log", "", {"x"}, f},
      {PHX_OP_SQRT, 28, "sqrt", "", {"x"}, f},
      {PHX_OP_NEG, 29, "neg", "", {"x"}, f | s},
      {PHX_OP_ABS, 30, "abs", "", {"x"}, f | s},
      {PHX_OP_ERF, 31, "erf", "", {"x"}, f},
      {PHX_OP_FLOOR, 32, "floor", "", {"x"}, f},
      {PHX_OP_CEIL, 33, "ceil", "", {"x"}, f},
      {PHX_OP_RECIPROCAL, 34, "reciprocal", "", {"x"}, f},
      {PHX_OP_SIGN, 35, "sign", "", {"x"}, f | s},
      {PHX_OP_SOFTPLUS, 36, "softplus", "", {"x"}, f},
      {PHX_OP_LEAKY_RELU, 37, "leaky_relu", "phx_elementwise_params", {"x"}, f},
      {PHX_OP_ELU, 38, "elu", "phx_elementwise_params", {"x"}, f},
      {PHX_OP_SELU, 39, "selu", "phx_elementwise_params", {"x"}, f},
      {PHX_OP_CLIP, 40, "clip", "phx_elementwise_params", {"x"}, all},
      {PHX_OP_HARD_SIGMOID, 68, "hard_sigmoid", "phx_elementwise_params", {"x"}, f},
      {PHX_OP_HARD_SWISH, 69, "hard_swish", "", {"x"}, f},
      {PHX_OP_SIN, 70, "sin", "", {"x"}, f},
      {PHX_OP_COS, 71, "cos", "", {"x"}, f},
      {PHX_OP_ROUND, 72, "round", "", {"x"}, f},
      {PHX_OP_POW, 41, "pow", "", {"a", "b"}, f},
      {PHX_OP_MAX, 42, "max", "", {"a", "b"}, all},
      {PHX_OP_MIN, 43, "min", "", {"a", "b"}, all},
      {PHX_OP_PRELU, 44, "prelu", "", {"x", "slope"}, f},
      {PHX_OP_EQUAL, 45, "equal", "", {"a", "b"}, all},
      {PHX_OP_LESS, 46, "less", "", {"a", "b"}, all},
      {PHX_OP_GREATER, 47, "greater", "", {"a", "b"}, all},
      {PHX_OP_WHERE, 48, "where", "", {"cond", "a", "b"}, u8},
      {PHX_OP_NOT, 49, "not", "", {"x"}, u8},
      {PHX_OP_REDUCE_MEAN, 50, "reduce_mean", "phx_reduce_params", {"x"}, f},
      {PHX_OP_REDUCE_MIN, 51, "reduce_min", "phx_reduce_params", {"x"}, all},
      {PHX_OP_REDUCE_PROD, 52, "reduce_prod", "phx_reduce_params", {"x"}, f | s},
      {PHX_OP_ARGMAX, 53, "argmax", "phx_argmax_params", {"x"}, all},
      {PHX_OP_LOG_SOFTMAX, 54, "log_softmax", "phx_softmax_params", {"x"}, f},
      {PHX_OP_BATCH_NORM,
       55,
       "batch_norm",
       "phx_norm_params",
       {"x", "scale", "bias", "mean", "var"},
       f},
      {PHX_OP_INSTANCE_NORM, 56, "instance_norm", "phx_norm_params", {"x", "scale", "bias"}, f},
  };
  EXPECT_EQ(PHX_OP_COUNT, 74);
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(int{row.op}, row.id);
    phx_op_info info = PHX_OP_INFO_INIT;
    ASSERT_EQ(phx_op_info_get(row.op, &info), PHX_STATUS_OK) << phx_last_error();
    EXPECT_STREQ(info.name, row.name);
    EXPECT_STREQ(info.params_struct, row.params);
    ASSERT_EQ(info.input_count, row.inputs.size());
    EXPECT_EQ(info.min_input_count, row.inputs.size()) << "no optional inputs";
    for (size_t i = 0; i < row.inputs.size(); ++i) EXPECT_EQ(info.input_names[i], row.inputs[i]);
    EXPECT_EQ(info.output_count, 1u);
    EXPECT_EQ(info.dtype_mask, row.dtypes);
  }
}

// The layout, pooling, transposed-convolution and resize ops of API 0.3, as phynexus.h
// states them.
TEST(OpTable, LayoutAndPoolingEntriesSayWhatTheHeaderSays) {
  constexpr uint32_t kFloats =
      PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_F16) | PHX_DTYPE_BIT(PHX_DTYPE_BF16);
  struct Entry {
    phx_op_id op;
    const char* name;
    const char* params;
    size_t inputs, min_inputs;
    uint32_t dtypes;
  };
  const Entry entries[] = {
      {PHX_OP_RESHAPE, "reshape", "phx_reshape_params", 1, 1, kEveryDtypeMask},
      {PHX_OP_CONCAT, "concat", "phx_axis_params", PHX_MAX_OP_INPUTS, 1, kEveryDtypeMask},
      {PHX_OP_SLICE, "slice", "phx_slice_params", 1, 1, kEveryDtypeMask},
      {PHX_OP_GATHER, "gather", "phx_axis_params", 2, 2, kEveryDtypeMask},
      {PHX_OP_EXPAND, "expand", "phx_reshape_params", 1, 1, kEveryDtypeMask},
      {PHX_OP_TILE, "tile", "phx_tile_params", 1, 1, kEveryDtypeMask},
      {PHX_OP_PAD, "pad", "phx_pad_params", 1, 1, kEveryDtypeMask},
      {PHX_OP_MAX_POOL, "max_pool", "phx_pool_params", 1, 1, kEveryDtypeMask},
      {PHX_OP_AVG_POOL, "avg_pool", "phx_pool_params", 1, 1, kFloats},
      {PHX_OP_CONV_TRANSPOSE2D, "conv_transpose2d", "phx_conv_transpose2d_params", 3, 2, kFloats},
      {PHX_OP_RESIZE, "resize", "phx_resize_params", 1, 1, kFloats},
  };
  for (const Entry& e : entries) {
    SCOPED_TRACE(e.name);
    phx_op_info info = PHX_OP_INFO_INIT;
    ASSERT_EQ(phx_op_info_get(e.op, &info), PHX_STATUS_OK) << phx_last_error();
    EXPECT_STREQ(info.name, e.name);
    EXPECT_STREQ(info.params_struct, e.params);
    EXPECT_EQ(info.input_count, e.inputs);
    EXPECT_EQ(info.min_input_count, e.min_inputs);
    EXPECT_EQ(info.output_count, 1u);
    EXPECT_EQ(info.dtype_mask, e.dtypes);
  }
}

// top_k, the one op of two outputs of different dtypes, as phynexus.h states it.
TEST(OpTable, TopKEntrySaysWhatTheHeaderSays) {
  phx_op_info info = PHX_OP_INFO_INIT;
  ASSERT_EQ(phx_op_info_get(PHX_OP_TOP_K, &info), PHX_STATUS_OK) << phx_last_error();
  EXPECT_STREQ(info.name, "top_k");
  EXPECT_STREQ(info.params_struct, "phx_top_k_params");
  EXPECT_EQ(info.input_count, 1u);
  ASSERT_EQ(info.output_count, 2u);
  EXPECT_STREQ(info.output_names[0], "values");
  EXPECT_STREQ(info.output_names[1], "indices");
  EXPECT_EQ(info.dtype_mask, kEveryDtypeMask);
  ASSERT_NE(info.default_params, nullptr);
  const auto& defaults = *static_cast<const phx_top_k_params*>(info.default_params);
  EXPECT_EQ(defaults.axis, -1);
  EXPECT_EQ(defaults.k, 0u) << "k must be given: 0 is refused";
  EXPECT_EQ(defaults.largest, 1);
}

TEST(OpTable, BadQuestionsAreRefusedAndWriteNothing) {
  EXPECT_EQ(phx_op_info_get(PHX_OP_ADD, nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("out_info"), std::string::npos);

  phx_op_info info = PHX_OP_INFO_INIT;
  std::memset(&info, 0x5A, sizeof info);
  info.struct_size = sizeof info;
  const phx_op_info before = info;
  for (int id : {int{PHX_OP_INVALID}, int{PHX_OP_COUNT}, -1, 1 << 20}) {
    SCOPED_TRACE(id);
    phx_op_id op;
    std::memcpy(&op, &id, sizeof op);  // a caller's value need not be an enumerator
    EXPECT_EQ(phx_op_info_get(op, &info), PHX_STATUS_NOT_FOUND);
    EXPECT_NE(std::string(phx_last_error()).find(std::to_string(id)), std::string::npos);
    EXPECT_EQ(std::memcmp(&info, &before, sizeof info), 0);
  }
  for (size_t size : {size_t{0}, size_t{4}, size_t{1} << 20}) {
    SCOPED_TRACE(size);
    info.struct_size = size;
    EXPECT_EQ(phx_op_info_get(PHX_OP_ADD, &info), PHX_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(std::memcmp(reinterpret_cast<const char*>(&info) + sizeof(size_t),
                          reinterpret_cast<const char*>(&before) + sizeof(size_t),
                          sizeof info - sizeof(size_t)),
              0);
  }
}

// The parameter struct as data: each member where the header puts it, with its type and
// entry count; the defaults a null pointer stands for.
TEST(OpTable, ParameterStructsAreDescribedMemberByMember) {
  phx_op_info conv = PHX_OP_INFO_INIT;
  ASSERT_EQ(phx_op_info_get(PHX_OP_CONV2D, &conv), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(conv.params_size, sizeof(phx_conv2d_params));
  ASSERT_EQ(conv.param_field_count, 6u);
  struct Expected {
    const char* name;
    phx_param_type type;
    size_t offset, count;
  };
  const Expected expected[] = {
      {"layout", PHX_PARAM_ENUM, offsetof(phx_conv2d_params, layout), 1},
      {"stride", PHX_PARAM_UINT32, offsetof(phx_conv2d_params, stride), 2},
      {"padding", PHX_PARAM_UINT32, offsetof(phx_conv2d_params, padding), 4},
      {"dilation", PHX_PARAM_UINT32, offsetof(phx_conv2d_params, dilation), 2},
      {"groups", PHX_PARAM_UINT32, offsetof(phx_conv2d_params, groups), 1},
      {"activation", PHX_PARAM_ENUM, offsetof(phx_conv2d_params, activation), 1}};
  for (size_t i = 0; i < 6; ++i) {
    SCOPED_TRACE(expected[i].name);
    const phx_param_field& f = conv.param_fields[i];
    EXPECT_STREQ(f.name, expected[i].name);
    EXPECT_EQ(f.type, expected[i].type);
    EXPECT_EQ(f.offset, expected[i].offset);
    EXPECT_EQ(f.count, expected[i].count);
  }
  ASSERT_EQ(conv.param_fields[5].enum_count, 4u);
  EXPECT_STREQ(conv.param_fields[5].enum_names[PHX_ACTIVATION_GELU], "gelu");
  EXPECT_EQ(conv.param_fields[1].enum_names, nullptr);
  const phx_conv2d_params init PHX_CONV2D_PARAMS_INIT;
  ASSERT_NE(conv.default_params, nullptr);
  // Its members, not the tail padding, which a local struct leaves undefined.
  const size_t members = offsetof(phx_conv2d_params, activation) + sizeof init.activation;
  EXPECT_EQ(std::memcmp(conv.default_params, &init, members), 0);

  // An op's own defaults, and the ops that have none to give.
  phx_op_info info = PHX_OP_INFO_INIT;
  ASSERT_EQ(phx_op_info_get(PHX_OP_LEAKY_RELU, &info), PHX_STATUS_OK);
  EXPECT_EQ(static_cast<const phx_elementwise_params*>(info.default_params)->alpha, 0.01f);
  for (phx_op_id op : {PHX_OP_TRANSPOSE, PHX_OP_RESHAPE, PHX_OP_RESIZE}) {
    ASSERT_EQ(phx_op_info_get(op, &info), PHX_STATUS_OK);
    EXPECT_GT(info.params_size, 0u) << phx_op_name(op);
    EXPECT_EQ(info.default_params, nullptr) << phx_op_name(op);
  }
  ASSERT_EQ(phx_op_info_get(PHX_OP_RELU, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.params_size, 0u);
  EXPECT_EQ(info.param_field_count, 0u);
  EXPECT_EQ(info.param_fields, nullptr);
  EXPECT_EQ(info.default_params, nullptr);
}

// A caller of an older header passes a smaller struct: it gets its fields, and the
// memory past them is left alone.
TEST(OpTable, ASmallerStructGetsItsPart) {
  phx_op_info info;
  std::memset(&info, 0x5A, sizeof info);
  info.struct_size = offsetof(phx_op_info, summary);
  const phx_op_info before = info;
  ASSERT_EQ(phx_op_info_get(PHX_OP_SOFTMAX, &info), PHX_STATUS_OK) << phx_last_error();
  EXPECT_STREQ(info.name, "softmax");
  EXPECT_EQ(std::memcmp(&info.summary, &before.summary, sizeof info - info.struct_size), 0);

  // The struct as the first 0.3 header had it, before the parameter members.
  std::memset(&info, 0x5A, sizeof info);
  info.struct_size = offsetof(phx_op_info, params_size);
  const phx_op_info older = info;
  ASSERT_EQ(phx_op_info_get(PHX_OP_SOFTMAX, &info), PHX_STATUS_OK) << phx_last_error();
  EXPECT_STREQ(info.params_struct, "phx_softmax_params");
  EXPECT_EQ(std::memcmp(&info.params_size, &older.params_size,
                        sizeof info - offsetof(phx_op_info, params_size)),
            0);
}

}  // namespace
