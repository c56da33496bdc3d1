// PHX_CONTEXT_FALLBACK_CPU: an op that a device does not implement runs on the CPU
// plugin's device, with its data copied there and back, counted and logged once.
// The device under test is the loader's "good" test plugin: a CPU-type device that
// implements only f32 add, so that every other op has to fall back.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::atomic<int> fallback_log_lines{0};

void count_fallback_lines(void*, phx_log_level, const char* message) {
  if (std::strstr(message, "does not implement") != nullptr) ++fallback_log_lines;
}

class Fallback : public ::testing::Test {
 protected:
  // A context that finds the test plugin first (device 0) and the CPU plugin after it.
  void open(uint32_t flags) {
    const std::string path = std::string(PHX_TEST_PLUGIN_DIR) + "/good";
    const char* paths[] = {path.c_str()};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 1;
    options.flags = flags;
    options.log_level = PHX_LOG_INFO;
    options.log_callback = count_fallback_lines;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context_, 0, &info), PHX_STATUS_OK);
    ASSERT_STREQ(info.plugin, "testgood");
    ASSERT_EQ(phx_stream_create(context_, 0, &stream_), PHX_STATUS_OK) << phx_last_error();
  }
  void TearDown() override {
    if (context_ != nullptr) {
      EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
  }

  phx_tensor tensor(const std::vector<float>& values) {
    const int64_t shape[] = {static_cast<int64_t>(values.size())};
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, 0, PHX_DTYPE_F32, 1, shape, &t), PHX_STATUS_OK);
    EXPECT_EQ(phx_tensor_upload(t, 0, values.data(), values.size() * sizeof(float)), PHX_STATUS_OK);
    return t;
  }
  std::vector<float> values(phx_tensor t, size_t n) {
    std::vector<float> v(n);
    EXPECT_EQ(phx_tensor_download(t, 0, v.data(), n * sizeof(float)), PHX_STATUS_OK);
    return v;
  }
  phx_status relu(phx_tensor x, phx_tensor y) {
    phx_op_desc desc = {sizeof(phx_op_desc), PHX_OP_RELU, nullptr, &x, 1, &y, 1};
    return phx_op_run(stream_, &desc, nullptr);
  }
  double fallback_ops() {
    phx_metric metrics[64];
    size_t count = 0;
    EXPECT_EQ(phx_device_stats(context_, 0, metrics, 64, &count), PHX_STATUS_OK);
    for (size_t i = 0; i < count && i < 64; ++i)
      if (std::strcmp(metrics[i].name, "fallback_ops") == 0) return metrics[i].value;
    ADD_FAILURE() << "no fallback_ops metric";
    return -1;
  }

  phx_context context_ = nullptr;
  phx_stream stream_ = nullptr;
};

TEST_F(Fallback, OffAnUnsupportedOpIsUnsupported) {
  open(0);
  phx_tensor x = tensor({-1, 2}), y = tensor({0, 0});
  EXPECT_EQ(relu(x, y), PHX_STATUS_UNSUPPORTED);
  EXPECT_EQ(fallback_ops(), 0.0);
}

TEST_F(Fallback, OnTheOpRunsOnTheCpuInStreamOrder) {
  open(PHX_CONTEXT_FALLBACK_CPU);
  int supported = 1;
  ASSERT_EQ(phx_device_supports(context_, 0, PHX_OP_RELU, PHX_DTYPE_F32, &supported),
            PHX_STATUS_OK);
  EXPECT_EQ(supported, 0) << "the device's own answer stays no";
  phx_tensor a = tensor({-3, 4, -5, 6}), b = tensor({1, 1, 1, 1}), sum = tensor({0, 0, 0, 0});
  phx_tensor y = tensor({9, 9, 9, 9});
  // add runs on the device itself, relu reads its result through the fallback.
  const phx_tensor add_in[] = {a, b};
  phx_op_desc add = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, add_in, 2, &sum, 1};
  uint64_t add_ticket = 0;
  ASSERT_EQ(phx_op_run(stream_, &add, &add_ticket), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(relu(sum, y), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(values(y, 4), (std::vector<float>{0, 5, 0, 7}));
  EXPECT_EQ(values(a, 4), (std::vector<float>{-3, 4, -5, 6})) << "inputs are left alone";
  EXPECT_EQ(fallback_ops(), 1.0);
  EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
}

// Every op gets the stream's next ticket, whichever path runs it; each can be waited on
// and queried, and the plugin's own tickets of later native ops still line up.
class FallbackTickets : public Fallback {
 protected:
  uint64_t run(phx_op_id op, phx_tensor a, phx_tensor b, phx_tensor out) {
    const phx_tensor in[] = {a, b};
    phx_op_desc desc = {sizeof(phx_op_desc), op, nullptr, in, op == PHX_OP_ADD ? 2u : 1u, &out, 1};
    uint64_t ticket = 0;
    EXPECT_EQ(phx_op_run(stream_, &desc, &ticket), PHX_STATUS_OK) << phx_last_error();
    return ticket;
  }
  void expect_all_done(const std::vector<uint64_t>& tickets) {
    for (uint64_t ticket : tickets) {
      EXPECT_EQ(phx_stream_wait(stream_, ticket), PHX_STATUS_OK) << ticket << phx_last_error();
      int done = 0;
      EXPECT_EQ(phx_stream_query(stream_, ticket, &done), PHX_STATUS_OK) << phx_last_error();
      EXPECT_EQ(done, 1) << "ticket " << ticket;
    }
    const uint64_t next = tickets.back() + 1;
    EXPECT_EQ(phx_stream_wait(stream_, next), PHX_STATUS_INVALID_ARGUMENT) << "not issued yet";
  }
};

TEST_F(FallbackTickets, FallbackFirstOnAFreshStream) {
  open(PHX_CONTEXT_FALLBACK_CPU);
  phx_tensor x = tensor({-1, 2}), y = tensor({0, 0}), z = tensor({0, 0});
  std::vector<uint64_t> tickets;
  tickets.push_back(run(PHX_OP_RELU, x, nullptr, y));  // fallback
  tickets.push_back(run(PHX_OP_ADD, x, y, z));         // native
  tickets.push_back(run(PHX_OP_RELU, z, nullptr, y));  // fallback
  tickets.push_back(run(PHX_OP_ADD, y, y, z));         // native
  EXPECT_EQ(tickets, (std::vector<uint64_t>{1, 2, 3, 4}));
  expect_all_done(tickets);
  EXPECT_EQ(values(z, 2), (std::vector<float>{0, 8}));  // relu(relu(x) + x) * 2
}

TEST_F(FallbackTickets, NativeFirstThenTwoFallbacksInARow) {
  open(PHX_CONTEXT_FALLBACK_CPU);
  phx_tensor x = tensor({-1, 2}), y = tensor({0, 0}), z = tensor({0, 0});
  std::vector<uint64_t> tickets;
  tickets.push_back(run(PHX_OP_ADD, x, x, y));         // native: y = 2x
  tickets.push_back(run(PHX_OP_RELU, y, nullptr, z));  // fallback
  tickets.push_back(run(PHX_OP_SILU, z, nullptr, y));  // fallback
  tickets.push_back(run(PHX_OP_ADD, y, z, x));         // native
  tickets.push_back(run(PHX_OP_ADD, x, x, y));         // native
  EXPECT_EQ(tickets, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  expect_all_done(tickets);
  EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  const double silu4 = 4.0 / (1.0 + std::exp(-4.0));
  const std::vector<float> got = values(y, 2);
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_NEAR(got[1], 2.0 * (silu4 + 4.0), 1e-5);
}

TEST_F(FallbackTickets, ProfileRecordsCarryTheOpsOwnTickets) {
  open(PHX_CONTEXT_FALLBACK_CPU | PHX_CONTEXT_PROFILE);
  phx_tensor x = tensor({-1, 2}), y = tensor({0, 0}), z = tensor({0, 0});
  const std::vector<uint64_t> tickets = {run(PHX_OP_RELU, x, nullptr, y), run(PHX_OP_ADD, x, y, z)};
  size_t count = 0;
  ASSERT_EQ(phx_profile_count(stream_, &count), PHX_STATUS_OK);
  ASSERT_EQ(count, 2u);
  for (size_t i = 0; i < count; ++i) {
    phx_profile_record record = PHX_PROFILE_RECORD_INIT;
    ASSERT_EQ(phx_profile_get(stream_, i, &record), PHX_STATUS_OK);
    EXPECT_EQ(record.ticket, tickets[i]);
  }
}

TEST_F(Fallback, CountedPerOpAndLoggedOncePerOpAndDtype) {
  fallback_log_lines = 0;
  open(PHX_CONTEXT_FALLBACK_CPU);
  phx_tensor x = tensor({-1, 2}), y = tensor({0, 0});
  for (int i = 0; i < 3; ++i) ASSERT_EQ(relu(x, y), PHX_STATUS_OK) << phx_last_error();
  phx_op_desc gelu = {sizeof(phx_op_desc), PHX_OP_GELU, nullptr, &x, 1, &y, 1};
  ASSERT_EQ(phx_op_run(stream_, &gelu, nullptr), PHX_STATUS_OK) << phx_last_error();
  EXPECT_NEAR(values(y, 2)[1], 2.0 * 0.5 * (1.0 + std::erf(2.0 / std::sqrt(2.0))), 1e-6);
  EXPECT_EQ(fallback_ops(), 4.0);
  EXPECT_EQ(fallback_log_lines.load(), 2) << "relu once, gelu once";
}

TEST_F(Fallback, ProfileRecordsSayTheOpFellBack) {
  open(PHX_CONTEXT_FALLBACK_CPU | PHX_CONTEXT_PROFILE);
  phx_tensor x = tensor({-1, 2}), y = tensor({0, 0});
  ASSERT_EQ(relu(x, y), PHX_STATUS_OK) << phx_last_error();
  size_t count = 0;
  ASSERT_EQ(phx_profile_count(stream_, &count), PHX_STATUS_OK);
  ASSERT_EQ(count, 1u);
  phx_profile_record record = PHX_PROFILE_RECORD_INIT;
  ASSERT_EQ(phx_profile_get(stream_, 0, &record), PHX_STATUS_OK);
  EXPECT_EQ(record.op, PHX_OP_RELU);
  ASSERT_EQ(record.metric_count, 1u);
  EXPECT_STREQ(record.metrics[0].name, "fallback_to_cpu");
}

TEST_F(Fallback, TheEnvironmentTurnsItOn) {
  ASSERT_EQ(setenv("PHX_FALLBACK", "cpu", 1), 0);
  open(0);
  unsetenv("PHX_FALLBACK");
  phx_tensor x = tensor({-1, 2}), y = tensor({0, 0});
  ASSERT_EQ(relu(x, y), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(values(y, 2), (std::vector<float>{0, 2}));
}

TEST_F(Fallback, ABadOpIsStillRefusedBeforeAnythingMoves) {
  open(PHX_CONTEXT_FALLBACK_CPU);
  phx_tensor x = tensor({1, 2}), y = tensor({0, 0, 0});
  EXPECT_EQ(relu(x, y), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(fallback_ops(), 0.0);
}

}  // namespace
