// The Vulkan runtime through the C API, on the tests' plugin (test_ops.cpp): the device
// and its properties, memory (sub-allocation, limit, cache, a tensor past one binding),
// transfers, ops and their errors, profiling, device selection, threads. The suites
// named Runtime* also run with PHX_VULKAN_NO_DIRECT_UPLOAD=1 and
// PHX_VULKAN_NO_PUSH_DESCRIPTOR=1 (ctest's phx_vulkan_test_plain.*), the plain paths.
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"

namespace phx_vulkan_test {
namespace {

bool plain_paths() { return std::getenv("PHX_VULKAN_NO_DIRECT_UPLOAD") != nullptr; }

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (context_.devices().empty()) GTEST_SKIP() << "no Vulkan device on this machine";
    device_ = context_.devices()[0];
  }

  // relu (test_ops.cpp) of x on a fresh stream; the output.
  std::vector<float> relu(const std::vector<float>& x) {
    const int64_t n = int64_t(x.size());
    Tensor in(context_, device_, PHX_DTYPE_F32, {n}), out(context_, device_, PHX_DTYPE_F32, {n});
    EXPECT_EQ(phx_tensor_upload(in.get(), 0, x.data(), x.size() * 4), PHX_STATUS_OK)
        << phx_last_error();
    phx_stream stream;
    EXPECT_EQ(phx_stream_create(context_.get(), device_, &stream), PHX_STATUS_OK);
    const phx_tensor inputs[1] = {in.get()}, outputs[1] = {out.get()};
    const phx_op_desc desc = {sizeof desc, PHX_OP_RELU, nullptr, inputs, 1, outputs, 1};
    uint64_t ticket = 0;
    EXPECT_EQ(phx_op_run(stream, &desc, &ticket), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK) << phx_last_error();
    std::vector<float> y(x.size());
    EXPECT_EQ(phx_tensor_download(out.get(), 0, y.data(), y.size() * 4), PHX_STATUS_OK);
    EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
    return y;
  }

  Context context_;
  size_t device_ = 0;
};

TEST_F(RuntimeTest, ListsTheDeviceWithItsProperties) {
  const phx_device_info info = context_.info(device_);
  EXPECT_EQ(info.type, PHX_DEVICE_GPU);
  EXPECT_GT(info.memory_total_bytes, 0u);
  EXPECT_TRUE(info.dtype_mask & PHX_DTYPE_BIT(PHX_DTYPE_F32));
  auto props = context_.properties(device_);
  for (const char* key : {"driver_name",
                          "driver_info",
                          "driver_version",
                          "api_version",
                          "device_type",
                          "vendor_id",
                          "device_id",
                          "memory_heap_0",
                          "max_workgroup_size",
                          "max_workgroup_count",
                          "max_workgroup_invocations",
                          "max_shared_memory_bytes",
                          "subgroup_size",
                          "max_storage_buffer_range",
                          "max_allocation_bytes",
                          "max_push_constants_bytes",
                          "timestamp_period_ns",
                          "float16",
                          "int8",
                          "storage_16bit",
                          "storage_8bit",
                          "subgroup_arithmetic",
                          "subgroup_shuffle",
                          "int64",
                          "timeline_semaphores",
                          "host_visible_device_local",
                          "direct_upload",
                          "push_descriptor",
                          "pipeline_cache",
                          "validation",
                          "glsl_bfloat16",
                          "glsl_cooperative_matrix"})
    EXPECT_TRUE(props.count(key)) << key;
  EXPECT_EQ(props["glsl_bfloat16"], PHX_GLSL_BF16 ? "yes" : "no");
  EXPECT_EQ(props["validation"], "on") << "ctest runs every test with PHX_VULKAN_VALIDATION=1";
  if (std::string(info.name).find("llvmpipe") == std::string::npos) return;
  // lavapipe (docs/vulkan.md): CPU-backed, honestly so; one heap, host-visible.
  EXPECT_EQ(props["device_type"], "cpu");
  EXPECT_EQ(props["driver_name"], "llvmpipe");
  EXPECT_EQ(props["max_storage_buffer_range"], "134217728");
  EXPECT_EQ(props["host_visible_device_local"], "yes");
  // What the direct matmul kernel needs, which lavapipe runs.
  EXPECT_EQ(props["subgroup_shuffle"], "yes");
  EXPECT_EQ(props["int64"], "yes");
  EXPECT_EQ(props["direct_upload"].rfind(plain_paths() ? "off" : "on", 0), 0u)
      << props["direct_upload"];
  EXPECT_EQ(props["push_descriptor"].rfind(plain_paths() ? "off" : "on", 0), 0u);
  for (phx_dtype d : {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16, PHX_DTYPE_I8, PHX_DTYPE_I16,
                      PHX_DTYPE_I32, PHX_DTYPE_U8})
    EXPECT_TRUE(info.dtype_mask & PHX_DTYPE_BIT(d)) << d;
}

TEST_F(RuntimeTest, ManySmallTensorsShareFewBlocks) {
  const double blocks_before = context_.stats(device_)["memory_blocks"];
  const phx_memory_stats before = context_.memory(device_);
  std::vector<std::unique_ptr<Tensor>> tensors;
  for (int i = 0; i < 200; ++i) {
    tensors.push_back(
        std::make_unique<Tensor>(context_, device_, PHX_DTYPE_F32, std::vector<int64_t>{1000 + i}));
    ASSERT_EQ(tensors.back()->status(), PHX_STATUS_OK) << phx_last_error();
  }
  const phx_memory_stats during = context_.memory(device_);
  EXPECT_EQ(during.allocation_count, before.allocation_count + 200);
  EXPECT_GE(during.bytes_in_use, before.bytes_in_use + 200 * 4000);
  EXPECT_LE(context_.stats(device_)["memory_blocks"], blocks_before + 1)
      << "200 tensors, one block";
  // Distinct ranges: each tensor keeps what was written to it.
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::vector<float> v(1000 + i, float(i));
    ASSERT_EQ(phx_tensor_upload(tensors[i]->get(), 0, v.data(), v.size() * 4), PHX_STATUS_OK);
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<float> v(1000 + i);
    ASSERT_EQ(phx_tensor_download(tensors[i]->get(), 0, v.data(), v.size() * 4), PHX_STATUS_OK);
    EXPECT_EQ(v.front(), float(i));
    EXPECT_EQ(v.back(), float(i));
  }
  tensors.clear();
  EXPECT_EQ(context_.memory(device_).bytes_in_use, before.bytes_in_use);
}

TEST_F(RuntimeTest, LimitIsEnforcedWithTheSizesInTheMessage) {
  const phx_memory_stats before = context_.memory(device_);
  const uint64_t limit = before.bytes_in_use + (1 << 20);
  ASSERT_EQ(phx_memory_set_limit(context_.get(), device_, limit), PHX_STATUS_OK);
  EXPECT_EQ(context_.memory(device_).limit_bytes, limit);
  {
    Tensor big(context_, device_, PHX_DTYPE_F32, {1 << 20});
    EXPECT_EQ(big.status(), PHX_STATUS_OUT_OF_MEMORY);
    EXPECT_NE(std::strstr(phx_last_error(), "limit"), nullptr) << phx_last_error();
    EXPECT_NE(std::strstr(phx_last_error(), std::to_string(limit).c_str()), nullptr);
    Tensor small(context_, device_, PHX_DTYPE_F32, {1000});
    EXPECT_EQ(small.status(), PHX_STATUS_OK);
  }
  ASSERT_EQ(phx_memory_set_limit(context_.get(), device_, 0), PHX_STATUS_OK);
  Tensor now(context_, device_, PHX_DTYPE_F32, {1 << 20});
  EXPECT_EQ(now.status(), PHX_STATUS_OK);
}

TEST_F(RuntimeTest, ARequestPastTheDeviceFailsWithTheSizes) {
  const uint64_t total = context_.info(device_).memory_total_bytes;
  Tensor huge(context_, device_, PHX_DTYPE_U8, {int64_t(total) + 1});
  EXPECT_EQ(huge.status(), PHX_STATUS_OUT_OF_MEMORY);
  EXPECT_NE(std::strstr(phx_last_error(), std::to_string(total).c_str()), nullptr)
      << phx_last_error();
}

TEST_F(RuntimeTest, ReleaseCachedReturnsEmptyBlocks) {
  { Tensor t(context_, device_, PHX_DTYPE_F32, {1 << 16}); }
  EXPECT_GT(context_.memory(device_).bytes_cached, 0u) << "the emptied block stays cached";
  ASSERT_EQ(phx_memory_release_cached(context_.get(), device_), PHX_STATUS_OK);
  EXPECT_EQ(context_.memory(device_).bytes_cached, 0u);
  EXPECT_EQ(context_.stats(device_)["memory_blocks"], 0);
  Tensor again(context_, device_, PHX_DTYPE_F32, {1 << 16});
  EXPECT_EQ(again.status(), PHX_STATUS_OK);
}

TEST_F(RuntimeTest, TransfersTakeThePathTheSwitchesSay) {
  Tensor t(context_, device_, PHX_DTYPE_U8, {3 << 20});  // not a multiple of the halves
  std::vector<uint8_t> data(3 << 20), back(3 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + (i >> 12));
  const double staged_before = context_.stats(device_)["staged_transfers"];
  ASSERT_EQ(phx_tensor_upload(t.get(), 0, data.data(), data.size()), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_tensor_download(t.get(), 0, back.data(), back.size()), PHX_STATUS_OK);
  EXPECT_EQ(data, back);
  const double staged = context_.stats(device_)["staged_transfers"] - staged_before;
  const bool direct =
      context_.properties(device_)["direct_upload"].find("no staging") != std::string::npos;
  if (direct)
    EXPECT_EQ(staged, 0) << "direct transfers are plain memcpy";
  else
    EXPECT_GE(staged, 2) << "staged in 8 MiB halves, both ways";
  // A part of a tensor, at an odd offset.
  const uint8_t patch[5] = {1, 2, 3, 4, 5};
  ASSERT_EQ(phx_tensor_upload(t.get(), 1001, patch, 5), PHX_STATUS_OK);
  uint8_t read[7];
  ASSERT_EQ(phx_tensor_download(t.get(), 1000, read, 7), PHX_STATUS_OK);
  EXPECT_EQ(read[0], data[1000]);
  EXPECT_EQ(std::memcmp(read + 1, patch, 5), 0);
  EXPECT_EQ(read[6], data[1006]);
}

// RuntimeTest with one binding lowered to 8 MiB (PHX_VULKAN_MAX_BINDING_BYTES, read when
// the fixture's context loads the plugin), so that a tensor larger than one binding takes
// 40 MiB, not 160 MiB past lavapipe's 128 MiB (a GPU's 4 GiB was never passed).
class RuntimeSmallBindingTest : public RuntimeTest {
 protected:
  static constexpr uint64_t kBindingBytes = 8 << 20;
  static void SetUpTestSuite() {
    setenv("PHX_VULKAN_MAX_BINDING_BYTES", std::to_string(kBindingBytes).c_str(), 1);
  }
  static void TearDownTestSuite() { unsetenv("PHX_VULKAN_MAX_BINDING_BYTES"); }
};

TEST_F(RuntimeSmallBindingTest, TensorLargerThanOneBindingRoundTripsAndRuns) {
  // 40 MiB of f32: five bindings' worth, and past half a 64 MiB block (a dedicated
  // allocation). relu over it uses bind_range in 4 MiB pieces.
  constexpr int64_t kN = 10 << 20;
  const std::string limit = context_.properties(device_)["max_storage_buffer_range"];
  ASSERT_EQ(limit.substr(0, limit.find(' ')), std::to_string(kBindingBytes));
  std::vector<float> x(kN);
  for (int64_t i = 0; i < kN; ++i) x[i] = float((i % 2001) - 1000);
  const std::vector<float> y = relu(x);
  ASSERT_EQ(y.size(), x.size());
  int64_t wrong = 0;
  for (int64_t i = 0; i < kN; ++i) wrong += y[i] != (x[i] > 0 ? x[i] : 0.0f);  // relu is exact
  EXPECT_EQ(wrong, 0);
}

TEST_F(RuntimeTest, OpsRunInOrderOnOneStream) {
  constexpr int64_t kN = 4099;
  Tensor a(context_, device_, PHX_DTYPE_F32, {kN}), b(context_, device_, PHX_DTYPE_F32, {kN});
  std::vector<float> x(kN);
  for (int64_t i = 0; i < kN; ++i) x[i] = float(i % 7) - 3;
  ASSERT_EQ(phx_tensor_upload(a.get(), 0, x.data(), kN * 4), PHX_STATUS_OK);
  phx_stream stream;
  ASSERT_EQ(phx_stream_create(context_.get(), device_, &stream), PHX_STATUS_OK);
  // a -> b -> a -> ... : each op reads what the previous one wrote.
  uint64_t ticket = 0;
  for (int i = 0; i < 70; ++i) {
    const phx_tensor in[1] = {i % 2 ? b.get() : a.get()}, out[1] = {i % 2 ? a.get() : b.get()};
    const phx_op_desc desc = {sizeof desc, PHX_OP_RELU, nullptr, in, 1, out, 1};
    uint64_t t = 0;
    ASSERT_EQ(phx_op_run(stream, &desc, &t), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(t, ticket + 1) << "tickets count the ops from 1";
    ticket = t;
  }
  ASSERT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK) << phx_last_error();
  int done = 0;
  EXPECT_EQ(phx_stream_query(stream, ticket, &done), PHX_STATUS_OK);
  EXPECT_EQ(done, 1);
  std::vector<float> y(kN);
  ASSERT_EQ(phx_tensor_download(a.get(), 0, y.data(), kN * 4), PHX_STATUS_OK);
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f) << i;
  const auto stats = context_.stats(device_);
  // At most one submission per op. How many ops share one depends on timing: an op finds
  // the stream idle, and goes at once, whenever the device finished the previous one
  // before the host recorded this one, which on a busy machine may be every op (CI saw
  // 70 of 70), so fewer than 70 is no promise a test can hold.
  EXPECT_LE(stats.at("submissions"), 70) << "more submissions than ops";
  EXPECT_GE(stats.at("dispatches"), 70);
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
}

TEST_F(RuntimeTest, AnUnsupportedOpIsRefusedAndTheStreamGoesOn) {
  Tensor a(context_, device_, PHX_DTYPE_F32, {8}), b(context_, device_, PHX_DTYPE_F32, {8}),
      c(context_, device_, PHX_DTYPE_F32, {8});
  phx_stream stream;
  ASSERT_EQ(phx_stream_create(context_.get(), device_, &stream), PHX_STATUS_OK);
  const phx_tensor in[2] = {a.get(), b.get()}, out[1] = {c.get()};
  const phx_op_desc add = {sizeof add, PHX_OP_ADD, nullptr, in, 2, out, 1};
  uint64_t ticket = 0;
  EXPECT_EQ(phx_op_run(stream, &add, &ticket), PHX_STATUS_UNSUPPORTED);
  const phx_op_desc relu = {sizeof relu, PHX_OP_RELU, nullptr, in, 1, out, 1};
  ASSERT_EQ(phx_op_run(stream, &relu, &ticket), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(ticket, 1u) << "the refused op took no ticket";
  EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK);
  // Invalid uses answer statuses: a range past the tensor, a ticket never issued.
  const float four[4] = {};
  EXPECT_EQ(phx_tensor_upload(a.get(), 30, four, sizeof four), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_stream_wait(stream, 99), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
}

TEST_F(RuntimeTest, TwoThreadsWithTwoStreams) {
  auto work = [&](float sign, bool& ok) {
    std::vector<float> x(10000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = sign * float(i % 13);
    ok = true;
    for (int round = 0; round < 5 && ok; ++round) {
      const std::vector<float> y = relu(x);
      for (size_t i = 0; i < x.size(); ++i) ok = ok && y[i] == (x[i] > 0 ? x[i] : 0.0f);
    }
  };
  bool ok1 = false, ok2 = false;
  std::thread t1(work, 1.0f, std::ref(ok1)), t2(work, -1.0f, std::ref(ok2));
  t1.join();
  t2.join();
  EXPECT_TRUE(ok1);
  EXPECT_TRUE(ok2);
}

TEST(VulkanProfiling, AnOpRecordHasItsGpuTime) {
  Context context(PHX_CONTEXT_PROFILE);
  if (context.devices().empty()) GTEST_SKIP() << "no Vulkan device";
  const size_t device = context.devices()[0];
  if (context.properties(device)["timestamp_valid_bits"] == "0") GTEST_SKIP() << "no timestamps";
  Tensor in(context, device, PHX_DTYPE_F32, {1 << 20}),
      out(context, device, PHX_DTYPE_F32, {1 << 20});
  phx_stream stream;
  ASSERT_EQ(phx_stream_create(context.get(), device, &stream), PHX_STATUS_OK);
  const phx_tensor inputs[1] = {in.get()}, outputs[1] = {out.get()};
  const phx_op_desc desc = {sizeof desc, PHX_OP_RELU, nullptr, inputs, 1, outputs, 1};
  uint64_t ticket = 0;
  ASSERT_EQ(phx_op_run(stream, &desc, &ticket), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK);
  size_t count = 0;
  ASSERT_EQ(phx_profile_count(stream, &count), PHX_STATUS_OK);
  ASSERT_EQ(count, 1u);
  phx_profile_record record = PHX_PROFILE_RECORD_INIT;
  ASSERT_EQ(phx_profile_get(stream, 0, &record), PHX_STATUS_OK);
  std::map<std::string, double> metrics;
  for (size_t i = 0; i < record.metric_count; ++i)
    metrics[record.metrics[i].name] = record.metrics[i].value;
  ASSERT_TRUE(metrics.count("gpu_time_ns"));
  EXPECT_GT(metrics["gpu_time_ns"], 0);
  EXPECT_LT(metrics["gpu_time_ns"], 10e9);
  EXPECT_EQ(metrics["dispatches"], 1);
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
}

TEST(VulkanSelection, EnvironmentSelectsDevices) {
  size_t all = 0;
  {
    Context context;
    all = context.devices().size();
  }
  if (all == 0) GTEST_SKIP() << "no Vulkan device";
  setenv("PHX_VULKAN_DEVICES", "no-such-device", 1);
  {
    Context context;
    EXPECT_EQ(context.devices().size(), 0u) << "a plugin with no devices is fine";
  }
  setenv("PHX_VULKAN_DEVICES", "0", 1);
  {
    Context context;
    EXPECT_EQ(context.devices().size(), 1u);
  }
  unsetenv("PHX_VULKAN_DEVICES");
}

TEST(VulkanPlugin, TheRealPluginListsTheSameDevices) {
  Context test_plugin;
  Context real(0, PHX_VULKAN_PLUGIN_DIR);
  if (real.devices().empty() && !test_plugin.devices().empty()) {
    size_t count = 0;
    phx_plugin_count(real.get(), &count);
    bool built = false;
    for (size_t i = 0; i < count; ++i) {
      phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
      phx_plugin_get(real.get(), i, &info);
      built = built || std::string(info.path).find("phx_vulkan.so") != std::string::npos;
    }
    if (!built) GTEST_SKIP() << "phx_vulkan.so is not built";
  }
  ASSERT_EQ(real.devices().size(), test_plugin.devices().size());
  for (size_t i = 0; i < real.devices().size(); ++i)
    EXPECT_STREQ(real.info(real.devices()[i]).name,
                 test_plugin.info(test_plugin.devices()[i]).name);
}

}  // namespace
}  // namespace phx_vulkan_test
