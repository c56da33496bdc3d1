// A plugin's op_variant_supported (plugin ABI 1.2) decides, with op_supported, what the host
// submits to it: the "variants" test plugin claims f32 matmul through op_supported but runs
// only its plain variant (no bias, no activation), and fails with INTERNAL if it is ever
// handed another. Device 0 is that plugin's; the CPU plugin comes after it.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

class OpVariants : public ::testing::Test {
 protected:
  void open(uint32_t flags) {
    const std::string path = std::string(PHX_TEST_PLUGIN_DIR) + "/variants";
    const char* paths[] = {path.c_str()};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 1;
    options.flags = flags;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context_, 0, &info), PHX_STATUS_OK);
    ASSERT_STREQ(info.plugin, "testvariants");
    ASSERT_EQ(phx_stream_create(context_, 0, &stream_), PHX_STATUS_OK) << phx_last_error();
  }
  void TearDown() override {
    if (context_ != nullptr) {
      EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
  }

  phx_tensor tensor(std::vector<int64_t> shape, const std::vector<float>& values) {
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, 0, PHX_DTYPE_F32, shape.size(), shape.data(), &t),
              PHX_STATUS_OK);
    EXPECT_EQ(phx_tensor_upload(t, 0, values.data(), values.size() * sizeof(float)), PHX_STATUS_OK);
    return t;
  }
  std::vector<float> values(phx_tensor t, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(phx_tensor_download(t, 0, v.data(), n * sizeof(float)), PHX_STATUS_OK);
    return v;
  }
  int supports(const phx_matmul_params* params, bool bias) {
    const phx_dtype in[] = {PHX_DTYPE_F32, PHX_DTYPE_F32, PHX_DTYPE_F32};
    const phx_dtype out[] = {PHX_DTYPE_F32};
    const phx_op_variant variant = {sizeof variant, PHX_OP_MATMUL, params, in,
                                    bias ? 3u : 2u, out,           1};
    int answer = -1;
    EXPECT_EQ(phx_device_supports_op(context_, 0, &variant, &answer), PHX_STATUS_OK)
        << phx_last_error();
    return answer;
  }
  // [[1, 2], [3, 4]] x [[5, 6], [7, 8]], with bias [1, 1] when asked.
  phx_status matmul(const phx_matmul_params* params, bool bias, phx_tensor* out) {
    phx_tensor a = tensor({2, 2}, {1, 2, 3, 4}), b = tensor({2, 2}, {5, 6, 7, 8});
    phx_tensor c = tensor({2}, {1, 1});
    *out = tensor({2, 2}, {0, 0, 0, 0});
    const phx_tensor in[] = {a, b, c};
    const phx_op_desc desc = {sizeof desc, PHX_OP_MATMUL, params, in, bias ? 3u : 2u, out, 1};
    return phx_op_run(stream_, &desc, nullptr);
  }

  phx_context context_ = nullptr;
  phx_stream stream_ = nullptr;
};

TEST_F(OpVariants, OnlyThePlainMatmulRunsOnTheDevice) {
  open(0);
  int coarse = 0;
  ASSERT_EQ(phx_device_supports(context_, 0, PHX_OP_MATMUL, PHX_DTYPE_F32, &coarse), PHX_STATUS_OK);
  EXPECT_EQ(coarse, 1);
  phx_matmul_params relu = PHX_MATMUL_PARAMS_INIT;
  relu.activation = PHX_ACTIVATION_RELU;
  EXPECT_EQ(supports(nullptr, false), 1);
  EXPECT_EQ(supports(nullptr, true), 0);
  EXPECT_EQ(supports(&relu, false), 0);

  phx_tensor out = nullptr;
  ASSERT_EQ(matmul(nullptr, false, &out), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(values(out, 4), (std::vector<float>{19, 22, 43, 50}));
  EXPECT_EQ(matmul(nullptr, true, &out), PHX_STATUS_UNSUPPORTED);
  const std::string message = phx_last_error();
  EXPECT_NE(message.find("matmul (f32, f32, f32 -> f32)"), std::string::npos) << message;
  EXPECT_EQ(matmul(&relu, false, &out), PHX_STATUS_UNSUPPORTED);
  EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << "nothing refused was submitted";
}

TEST_F(OpVariants, TheRefusedVariantsFallBackToTheCpu) {
  open(PHX_CONTEXT_FALLBACK_CPU);
  phx_tensor out = nullptr;
  ASSERT_EQ(matmul(nullptr, true, &out), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(values(out, 4), (std::vector<float>{20, 23, 44, 51}));
  ASSERT_EQ(matmul(nullptr, false, &out), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(values(out, 4), (std::vector<float>{19, 22, 43, 50}));
  phx_metric metrics[64];
  size_t count = 0;
  ASSERT_EQ(phx_device_stats(context_, 0, metrics, 64, &count), PHX_STATUS_OK);
  double fallback_ops = -1;
  for (size_t i = 0; i < count && i < 64; ++i)
    if (std::strcmp(metrics[i].name, "fallback_ops") == 0) fallback_ops = metrics[i].value;
  EXPECT_EQ(fallback_ops, 1.0) << "the biased matmul only";
}

}  // namespace
