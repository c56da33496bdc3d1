// Backward compatibility in earnest: a plugin compiled against the released ABI 1.0
// headers (tests/plugins/previous_minor/), not against the current header with an older
// number in its table, loads in this host and works. It shares no declaration with this
// test, so a host that reads a 1.0 table or struct with the current layout shows up here
// as a crash or a wrong result.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

const std::string kPreviousMinorDir = std::string(PHX_TEST_PLUGIN_DIR) + "/previous_minor";

class PreviousAbiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The old plugin's folder and the CPU plugin's, nothing else.
    const char* paths[] = {kPreviousMinorDir.c_str(), PHX_TEST_DEFAULT_PLUGIN_DIR};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 2;
    options.use_default_search_path = 0;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    ASSERT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK) << phx_last_error();
    for (size_t i = 0; i < count; ++i) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      ASSERT_EQ(phx_device_get(context_, i, &info), PHX_STATUS_OK) << phx_last_error();
      if (std::strcmp(info.plugin, "previous_minor") == 0) old_device_ = i;
      if (std::strcmp(info.plugin, "cpu") == 0) cpu_device_ = i;
    }
    ASSERT_NE(old_device_, kNone) << "the ABI 1.0 plugin has no device";
    ASSERT_NE(cpu_device_, kNone) << "the CPU plugin has no device";
    ASSERT_EQ(phx_stream_create(context_, old_device_, &stream_), PHX_STATUS_OK)
        << phx_last_error();
  }

  void TearDown() override {
    for (phx_tensor t : tensors_) EXPECT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
    if (stream_ != nullptr) {
      EXPECT_EQ(phx_stream_destroy(stream_), PHX_STATUS_OK);
    }
    if (context_ != nullptr) {
      EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
  }

  // An f32 tensor on device holding values (or left unwritten when values is empty).
  phx_tensor tensor(size_t device, std::vector<int64_t> shape, const std::vector<float>& values) {
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device, PHX_DTYPE_F32, shape.size(), shape.data(), &t),
              PHX_STATUS_OK)
        << phx_last_error();
    if (t == nullptr) return nullptr;
    tensors_.push_back(t);
    if (!values.empty()) {
      EXPECT_EQ(phx_tensor_upload(t, 0, values.data(), values.size() * sizeof(float)),
                PHX_STATUS_OK)
          << phx_last_error();
    }
    return t;
  }

  std::vector<float> download(phx_tensor t, size_t count) {
    std::vector<float> values(count, std::nanf(""));
    EXPECT_EQ(phx_tensor_download(t, 0, values.data(), count * sizeof(float)), PHX_STATUS_OK)
        << phx_last_error();
    return values;
  }

  phx_status run(phx_op_id op, const void* params, std::vector<phx_tensor> inputs,
                 phx_tensor output) {
    phx_op_desc desc{sizeof(phx_op_desc), op, params, inputs.data(), inputs.size(), &output, 1};
    uint64_t ticket = 0;
    phx_status status = phx_op_run(stream_, &desc, &ticket);
    if (status != PHX_STATUS_OK) return status;
    return phx_stream_wait(stream_, ticket);
  }

  static std::vector<float> random_values(size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> values(count);
    for (float& v : values) v = dist(rng);
    return values;
  }

  static constexpr size_t kNone = ~size_t{0};
  phx_context context_ = nullptr;
  phx_stream stream_ = nullptr;
  size_t old_device_ = kNone;
  size_t cpu_device_ = kNone;
  std::vector<phx_tensor> tensors_;
};

TEST_F(PreviousAbiTest, IsLoadedAndReportsAbi10) {
  size_t count = 0;
  ASSERT_EQ(phx_plugin_count(context_, &count), PHX_STATUS_OK) << phx_last_error();
  bool found = false;
  for (size_t i = 0; i < count; ++i) {
    phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
    ASSERT_EQ(phx_plugin_get(context_, i, &info), PHX_STATUS_OK) << phx_last_error();
    if (std::strcmp(info.name, "previous_minor") != 0) continue;
    found = true;
    EXPECT_EQ(info.state, PHX_PLUGIN_LOADED) << info.reason;
    EXPECT_EQ(info.stage, PHX_PLUGIN_STAGE_READY);
    EXPECT_STREQ(info.reason, "");
    EXPECT_EQ(info.abi_major, 1u);
    EXPECT_EQ(info.abi_minor, 0u);
    EXPECT_STREQ(info.version, "1.0-snapshot");
    EXPECT_EQ(info.device_count, 1u);
    EXPECT_EQ(std::string(info.path).rfind(kPreviousMinorDir, 0), 0u) << info.path;
  }
  EXPECT_TRUE(found) << "no plugin named previous_minor under " << kPreviousMinorDir;
}

TEST_F(PreviousAbiTest, AddMatchesFloat64Reference) {
  const int64_t rows = 5, cols = 13;
  const size_t n = static_cast<size_t>(rows * cols);
  std::vector<float> a = random_values(n, 1), b = random_values(n, 2);
  phx_tensor ta = tensor(old_device_, {rows, cols}, a);
  phx_tensor tb = tensor(old_device_, {rows, cols}, b);
  phx_tensor out = tensor(old_device_, {rows, cols}, {});
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(run(PHX_OP_ADD, nullptr, {ta, tb}, out), PHX_STATUS_OK) << phx_last_error();
  std::vector<float> got = download(out, n);
  for (size_t i = 0; i < n; ++i) {
    double want = static_cast<double>(a[i]) + static_cast<double>(b[i]);
    // One f32 rounding of the exact sum.
    EXPECT_NEAR(got[i], want, std::fabs(want) * 1e-7 + 1e-7) << "element " << i;
  }
}

TEST_F(PreviousAbiTest, MatmulMatchesFloat64Reference) {
  const int64_t m = 7, k = 33, n = 9;
  std::vector<float> a = random_values(static_cast<size_t>(m * k), 3);
  std::vector<float> b = random_values(static_cast<size_t>(k * n), 4);
  phx_tensor ta = tensor(old_device_, {m, k}, a);
  phx_tensor tb = tensor(old_device_, {k, n}, b);
  phx_tensor out = tensor(old_device_, {m, n}, {});
  ASSERT_NE(out, nullptr);
  phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
  ASSERT_EQ(run(PHX_OP_MATMUL, &params, {ta, tb}, out), PHX_STATUS_OK) << phx_last_error();
  std::vector<float> got = download(out, static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0.0, magnitude = 0.0;
      for (int64_t l = 0; l < k; ++l) {
        double term = static_cast<double>(a[i * k + l]) * static_cast<double>(b[l * n + j]);
        want += term;
        magnitude += std::fabs(term);
      }
      // f32 accumulation over k terms: each step may round by half an ulp of the sum.
      EXPECT_NEAR(got[i * n + j], want, magnitude * k * 6e-8) << "element " << i << "," << j;
    }
  }
}

TEST_F(PreviousAbiTest, OpsOfAbi11AreUnsupported) {
  // The plugin answers for the ops of 1.0 it knows...
  int supported = -1;
  ASSERT_EQ(phx_device_supports(context_, old_device_, PHX_OP_MATMUL, PHX_DTYPE_F32, &supported),
            PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_EQ(supported, 1);
  ASSERT_EQ(phx_device_supports(context_, old_device_, PHX_OP_RELU, PHX_DTYPE_F32, &supported),
            PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_EQ(supported, 0);
  // ...and is never asked about those of 1.1: it would answer INTERNAL.
  for (phx_op_id op : {PHX_OP_ATTENTION, PHX_OP_ROPE, PHX_OP_QUANTIZE, PHX_OP_DEQUANTIZE,
                       PHX_OP_QMATMUL, PHX_OP_QCONV2D, PHX_OP_DYNAMIC_QUANTIZE}) {
    supported = -1;
    EXPECT_EQ(phx_device_supports(context_, old_device_, op, PHX_DTYPE_F32, &supported),
              PHX_STATUS_OK)
        << phx_op_name(op) << ": " << phx_last_error();
    EXPECT_EQ(supported, 0) << phx_op_name(op);
  }
  // Nor handed one to run.
  const int64_t shape[] = {1, 1, 2, 4};
  std::vector<float> values(8, 1.0f);
  phx_tensor q = tensor(old_device_, {shape, shape + 4}, values);
  phx_tensor out = tensor(old_device_, {shape, shape + 4}, {});
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(run(PHX_OP_ATTENTION, nullptr, {q, q, q}, out), PHX_STATUS_UNSUPPORTED);
}

TEST_F(PreviousAbiTest, CopiesToAndFromTheCpuDevice) {
  const int64_t shape[] = {4, 6};
  std::vector<float> values = random_values(24, 5);
  phx_tensor on_cpu = tensor(cpu_device_, {shape, shape + 2}, values);
  phx_tensor on_old = tensor(old_device_, {shape, shape + 2}, {});
  phx_tensor back_on_cpu = tensor(cpu_device_, {shape, shape + 2}, {});
  ASSERT_NE(back_on_cpu, nullptr);
  ASSERT_EQ(phx_tensor_copy(on_old, on_cpu), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(download(on_old, values.size()), values);
  ASSERT_EQ(phx_tensor_copy(back_on_cpu, on_old), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(download(back_on_cpu, values.size()), values);
}

}  // namespace
