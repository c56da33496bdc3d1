// A device that disappears while in use (the test plugin's DEVICE_LOST case, beside the
// CPU plugin): from then on every call that needs it fails with DEVICE_UNAVAILABLE and a
// message, for good; the CPU device keeps working; and the lost device's tensors and
// streams, and the context, can still be destroyed without leaking (ASan checks).
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

constexpr phx_status kUnavailable = PHX_STATUS_DEVICE_UNAVAILABLE;

// The last call failed with DEVICE_UNAVAILABLE and said that the device is lost.
::testing::AssertionResult Lost(phx_status status) {
  const std::string message = phx_last_error();
  if (status != kUnavailable)
    return ::testing::AssertionFailure()
           << "returned " << phx_status_name(status) << ": " << message;
  if (message.find("the device is lost") == std::string::npos)
    return ::testing::AssertionFailure() << "the message does not say why: " << message;
  return ::testing::AssertionSuccess();
}

class DeviceLost : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "phx_device_lost.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    folder_ = pattern;
    device_file_ = folder_ + "/present";
    std::ofstream(device_file_) << "the device is here\n";
    setenv("PHX_TEST_DEVICE_FILE", device_file_.c_str(), 1);
    const std::string cpu = std::string(PHX_TEST_DEFAULT_PLUGIN_DIR) + "/phx_cpu.so";
    const std::string lost = std::string(PHX_TEST_PLUGIN_DIR) + "/device_lost";
    const char* paths[] = {cpu.c_str(), lost.c_str()};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 2;
    options.use_default_search_path = 0;
    options.log_level = PHX_LOG_OFF;
    options.num_threads = 2;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    ASSERT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK);
    for (size_t i = 0; i < count; ++i) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      ASSERT_EQ(phx_device_get(context_, i, &info), PHX_STATUS_OK);
      if (std::string(info.plugin) == "cpu") cpu_ = i;
      if (std::string(info.plugin) == "testlost") lost_ = i;
    }
    ASSERT_NE(cpu_, SIZE_MAX) << "no CPU device";
    ASSERT_NE(lost_, SIZE_MAX) << "the device_lost test plugin did not load";
  }
  void TearDown() override {
    if (context_ != nullptr) {
      EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
    unsetenv("PHX_TEST_DEVICE_FILE");
    fs::remove_all(folder_);
  }

  void lose_the_device() { ASSERT_TRUE(fs::remove(device_file_)); }

  phx_tensor f32(size_t device, std::vector<float> values) {
    const int64_t shape[1] = {static_cast<int64_t>(values.size())};
    phx_tensor tensor = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device, PHX_DTYPE_F32, 1, shape, &tensor), PHX_STATUS_OK)
        << phx_last_error();
    EXPECT_EQ(phx_tensor_upload(tensor, 0, values.data(), values.size() * sizeof(float)),
              PHX_STATUS_OK)
        << phx_last_error();
    return tensor;
  }

  std::vector<float> values(phx_tensor tensor, size_t count) {
    std::vector<float> result(count, -1.0f);
    EXPECT_EQ(phx_tensor_download(tensor, 0, result.data(), count * sizeof(float)), PHX_STATUS_OK)
        << phx_last_error();
    return result;
  }

  phx_status add(phx_stream stream, phx_tensor a, phx_tensor b, phx_tensor out,
                 uint64_t* ticket = nullptr) {
    const phx_tensor inputs[2] = {a, b};
    const phx_op_desc desc = {sizeof desc, PHX_OP_ADD, nullptr, inputs, 2, &out, 1};
    return phx_op_run(stream, &desc, ticket);
  }

  // a + b on device, checked: the device and its stream work.
  void expect_adds(size_t device, phx_stream stream) {
    phx_tensor a = f32(device, {1, 2, 3, 4});
    phx_tensor b = f32(device, {10, 20, 30, 40});
    phx_tensor out = f32(device, {0, 0, 0, 0});
    ASSERT_EQ(add(stream, a, b, out), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(values(out, 4), (std::vector<float>{11, 22, 33, 44}));
    for (phx_tensor t : {a, b, out}) EXPECT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
  }

  phx_memory_stats memory(size_t device) {
    phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
    EXPECT_EQ(phx_memory_stats_get(context_, device, &stats), PHX_STATUS_OK) << phx_last_error();
    return stats;
  }

  std::string folder_, device_file_;
  phx_context context_ = nullptr;
  size_t cpu_ = SIZE_MAX, lost_ = SIZE_MAX;
};

TEST_F(DeviceLost, EveryCallThatNeedsTheDeviceFailsForGood) {
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, lost_, &stream), PHX_STATUS_OK) << phx_last_error();
  expect_adds(lost_, stream);  // it works until it disappears
  phx_tensor a = f32(lost_, {1, 2});
  phx_tensor b = f32(lost_, {3, 4});
  phx_tensor out = f32(lost_, {0, 0});
  uint64_t ticket = 0;
  ASSERT_EQ(add(stream, a, b, out, &ticket), PHX_STATUS_OK) << phx_last_error();

  lose_the_device();
  uint64_t no_ticket = 77;
  EXPECT_TRUE(Lost(add(stream, a, b, out, &no_ticket)));
  EXPECT_EQ(no_ticket, 77u);
  EXPECT_TRUE(Lost(phx_stream_synchronize(stream)));
  EXPECT_TRUE(Lost(phx_stream_wait(stream, ticket)));
  int done = 7;
  EXPECT_TRUE(Lost(phx_stream_query(stream, ticket, &done)));
  EXPECT_EQ(done, 7);
  float data[2] = {5, 6};
  EXPECT_TRUE(Lost(phx_tensor_upload(a, 0, data, sizeof data)));
  EXPECT_TRUE(Lost(phx_tensor_download(a, 0, data, sizeof data)));
  EXPECT_EQ(data[0], 5.0f);
  const int64_t shape[1] = {2};
  phx_tensor none = nullptr;
  EXPECT_TRUE(Lost(phx_tensor_create(context_, lost_, PHX_DTYPE_F32, 1, shape, &none)));
  EXPECT_EQ(none, nullptr);
  phx_stream no_stream = nullptr;
  EXPECT_TRUE(Lost(phx_stream_create(context_, lost_, &no_stream)));
  EXPECT_EQ(no_stream, nullptr);

  // Lost for good: the device does not come back with its file.
  std::ofstream(device_file_) << "back?\n";
  EXPECT_TRUE(Lost(add(stream, a, b, out)));
  EXPECT_TRUE(Lost(phx_stream_synchronize(stream)));

  // What the host knows without the device still answers.
  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  EXPECT_EQ(phx_tensor_describe(a, &desc), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(desc.element_count, 2u);
  EXPECT_EQ(memory(lost_).allocation_count, 3u);

  // Cleaning up works: the buffers are freed although the device cannot be waited on.
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK) << phx_last_error();
  for (phx_tensor t : {a, b, out}) EXPECT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
  EXPECT_EQ(memory(lost_).allocation_count, 0u);
  EXPECT_EQ(memory(lost_).bytes_in_use, 0u);
}

TEST_F(DeviceLost, TheOtherDeviceKeepsWorking) {
  phx_stream lost_stream = nullptr, cpu_stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, lost_, &lost_stream), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_stream_create(context_, cpu_, &cpu_stream), PHX_STATUS_OK) << phx_last_error();
  phx_tensor on_lost = f32(lost_, {1, 2, 3, 4});
  phx_tensor on_cpu = f32(cpu_, {9, 9, 9, 9});
  lose_the_device();
  EXPECT_TRUE(Lost(phx_stream_synchronize(lost_stream)));

  expect_adds(cpu_, cpu_stream);
  expect_adds(cpu_, cpu_stream);

  // Copies in either direction fail cleanly: the CPU tensor keeps its values.
  EXPECT_TRUE(Lost(phx_tensor_copy(on_cpu, on_lost)));
  EXPECT_EQ(values(on_cpu, 4), (std::vector<float>{9, 9, 9, 9}));
  EXPECT_TRUE(Lost(phx_tensor_copy(on_lost, on_cpu)));
  expect_adds(cpu_, cpu_stream);
  EXPECT_EQ(phx_tensor_destroy(on_cpu), PHX_STATUS_OK);
  // The lost device's tensor and streams are left for the context's destruction.
}

// A tensor on the lost device is destroyed while a stream of that device, which can no
// longer be waited on, still exists: it is freed, not leaked.
TEST_F(DeviceLost, ATensorCanBeDestroyedWhileALostStreamLives) {
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, lost_, &stream), PHX_STATUS_OK) << phx_last_error();
  phx_tensor tensor = f32(lost_, {1, 2});
  lose_the_device();
  EXPECT_EQ(phx_tensor_destroy(tensor), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(memory(lost_).allocation_count, 0u);
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK) << phx_last_error();
}

TEST_F(DeviceLost, TheContextIsDestroyedWithEverythingOnTheLostDevice) {
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, lost_, &stream), PHX_STATUS_OK) << phx_last_error();
  phx_tensor a = f32(lost_, {1, 2});
  phx_tensor b = f32(lost_, {3, 4});
  phx_tensor out = f32(lost_, {0, 0});
  ASSERT_EQ(add(stream, a, b, out), PHX_STATUS_OK) << phx_last_error();
  lose_the_device();
  EXPECT_TRUE(Lost(phx_stream_synchronize(stream)));
  EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK) << phx_last_error();
  context_ = nullptr;
  // Its handles died with it.
  EXPECT_EQ(phx_tensor_destroy(a), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_INVALID_ARGUMENT);
}

}  // namespace
