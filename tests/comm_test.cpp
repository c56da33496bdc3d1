// Events, asynchronous transfers and communicators within one process (comm.h), on every
// device the context has, ranks spread over them round robin.
//
// Tolerances. A reduction combines the ranks in rank order in f32 (comm.h), so each
// result must equal, bit for bit, the same order computed here in f32; and against the
// float64 sum it may err by Higham's bound for R - 1 sequential f32 additions,
// (R - 1) * 2^-24 * sum_r |x_r|, plus one final rounding to the dtype (half an ulp,
// 2^-8 relative for bf16). Max, min, integer sums and every copy are exact.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kRanks = 4;

class Comm : public ::testing::Test {
 protected:
  void SetUp() override {
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.flags = PHX_CONTEXT_PROFILE;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_device_count(context_, &device_count_), PHX_STATUS_OK);
    ASSERT_GT(device_count_, 0u);
    place_ranks(PHX_DTYPE_F32);
  }

  // Spreads the ranks round robin over the devices that hold dtype, a stream each.
  void place_ranks(phx_dtype dtype) {
    for (phx_stream stream : streams_) EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
    streams_.clear();
    std::vector<size_t> holding;
    for (size_t d = 0; d < device_count_; ++d) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      ASSERT_EQ(phx_device_get(context_, d, &info), PHX_STATUS_OK);
      if (info.dtype_mask & PHX_DTYPE_BIT(dtype)) holding.push_back(d);
    }
    ASSERT_FALSE(holding.empty());
    rank_devices_.clear();
    for (size_t r = 0; r < kRanks; ++r) rank_devices_.push_back(holding[r % holding.size()]);
    for (size_t r = 0; r < kRanks; ++r) {
      phx_stream stream = nullptr;
      ASSERT_EQ(phx_stream_create(context_, rank_devices_[r], &stream), PHX_STATUS_OK);
      streams_.push_back(stream);
    }
  }
  void TearDown() override { EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK); }

  phx_comm make_comm(uint32_t timeout_ms = 0) {
    phx_comm_options options = PHX_COMM_OPTIONS_INIT;
    options.timeout_ms = timeout_ms;
    phx_comm comm = nullptr;
    EXPECT_EQ(phx_comm_create(context_, rank_devices_.data(), kRanks, &options, &comm),
              PHX_STATUS_OK)
        << phx_last_error();
    return comm;
  }

  phx_tensor tensor(size_t device, phx_dtype dtype, int64_t count, const void* data = nullptr) {
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device, dtype, 1, &count, &t), PHX_STATUS_OK)
        << phx_last_error();
    if (data != nullptr) {
      EXPECT_EQ(phx_tensor_upload(t, 0, data, count * phx_dtype_size(dtype)), PHX_STATUS_OK);
    }
    return t;
  }

  template <typename T>
  std::vector<T> read(phx_tensor t, size_t count) {
    std::vector<T> values(count);
    EXPECT_EQ(phx_tensor_download(t, 0, values.data(), count * sizeof(T)), PHX_STATUS_OK)
        << phx_last_error();
    return values;
  }

  void synchronize_all(phx_status expected = PHX_STATUS_OK) {
    for (phx_stream stream : streams_)
      EXPECT_EQ(phx_stream_synchronize(stream), expected) << phx_last_error();
  }

  phx_context context_ = nullptr;
  size_t device_count_ = 0;
  std::vector<size_t> rank_devices_;
  std::vector<phx_stream> streams_;
};

// Values of rank r: a different mix of magnitudes and signs per rank, so that the order
// of the additions shows in the last bits.
std::vector<float> rank_values(size_t rank, size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i)
    values[i] = std::ldexp(static_cast<float>((i * 7 + rank * 13) % 29) - 14.0f,
                           static_cast<int>((i + rank) % 9) - 4) /
                3.0f;
  return values;
}

TEST_F(Comm, AllReduceSumIsTheRankOrderedF32SumOnEveryMixOfDevices) {
  constexpr size_t kCount = 100003;  // not a multiple of any chunk
  phx_comm comm = make_comm();
  std::vector<std::vector<float>> inputs;
  std::vector<phx_tensor> send, recv;
  for (size_t r = 0; r < kRanks; ++r) {
    inputs.push_back(rank_values(r, kCount));
    send.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, kCount, inputs[r].data()));
    recv.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, kCount));
  }
  for (size_t r = 0; r < kRanks; ++r)
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], send[r], recv[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK)
        << phx_last_error();
  synchronize_all();
  for (size_t r = 0; r < kRanks; ++r) {
    const std::vector<float> got = read<float>(recv[r], kCount);
    for (size_t i = 0; i < kCount; ++i) {
      float ordered = inputs[0][i];
      double exact = inputs[0][i], magnitude = std::fabs(inputs[0][i]);
      for (size_t s = 1; s < kRanks; ++s) {
        ordered += inputs[s][i];
        exact += inputs[s][i];
        magnitude += std::fabs(inputs[s][i]);
      }
      ASSERT_EQ(got[i], ordered) << "rank " << r << " element " << i;
      ASSERT_LE(std::fabs(got[i] - exact), (kRanks - 1) * 0x1p-24 * magnitude);
    }
  }
}

TEST_F(Comm, AllReduceMaxMinAndMeanAndIntegerSums) {
  constexpr size_t kCount = 1000;
  phx_comm comm = make_comm();
  std::vector<std::vector<float>> inputs;
  std::vector<std::vector<int8_t>> bytes;
  std::vector<phx_tensor> f, fmax, fmin, fmean, i8, i8sum;
  for (size_t r = 0; r < kRanks; ++r) {
    inputs.push_back(rank_values(r, kCount));
    if (r == 2) inputs[r][5] = NAN;
    std::vector<int8_t> b(kCount);
    for (size_t i = 0; i < kCount; ++i) b[i] = static_cast<int8_t>((i * 31 + r * 57) % 256 - 128);
    bytes.push_back(b);
    const size_t d = rank_devices_[r];
    f.push_back(tensor(d, PHX_DTYPE_F32, kCount, inputs[r].data()));
    fmax.push_back(tensor(d, PHX_DTYPE_F32, kCount));
    fmin.push_back(tensor(d, PHX_DTYPE_F32, kCount));
    fmean.push_back(tensor(d, PHX_DTYPE_F32, kCount));
    i8.push_back(tensor(d, PHX_DTYPE_I8, kCount, bytes[r].data()));
    i8sum.push_back(tensor(d, PHX_DTYPE_I8, kCount));
  }
  for (size_t r = 0; r < kRanks; ++r) {
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], f[r], fmax[r], PHX_REDUCE_MAX, nullptr),
              PHX_STATUS_OK);
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], f[r], fmin[r], PHX_REDUCE_MIN, nullptr),
              PHX_STATUS_OK);
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], f[r], fmean[r], PHX_REDUCE_MEAN, nullptr),
              PHX_STATUS_OK);
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], i8[r], i8sum[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
  }
  synchronize_all();
  for (size_t r = 0; r < kRanks; ++r) {
    const auto mx = read<float>(fmax[r], kCount), mn = read<float>(fmin[r], kCount),
               mean = read<float>(fmean[r], kCount);
    const auto sum = read<int8_t>(i8sum[r], kCount);
    for (size_t i = 0; i < kCount; ++i) {
      if (i == 5) {
        EXPECT_TRUE(std::isnan(mx[i]) && std::isnan(mn[i]) && std::isnan(mean[i]));
        continue;
      }
      float hi = inputs[0][i], lo = inputs[0][i], total = inputs[0][i];
      int64_t wrapped = bytes[0][i];
      for (size_t s = 1; s < kRanks; ++s) {
        hi = std::max(hi, inputs[s][i]);
        lo = std::min(lo, inputs[s][i]);
        total += inputs[s][i];
        wrapped += bytes[s][i];
      }
      ASSERT_EQ(mx[i], hi);
      ASSERT_EQ(mn[i], lo);
      ASSERT_EQ(mean[i], total / static_cast<float>(kRanks));
      ASSERT_EQ(sum[i], static_cast<int8_t>(static_cast<uint8_t>(wrapped)));  // wraps in i8
    }
  }
}

TEST_F(Comm, Bf16SumsAccumulateInF32AndRoundOnce) {
  constexpr size_t kCount = 512;
  place_ranks(PHX_DTYPE_BF16);
  phx_comm comm = make_comm();
  // Rank 0 gives 1, the others 1 + 2^-7 (worked out at the end).
  const uint16_t one = 0x3f80, one_and_a_bit = 0x3f81;  // 1 and 1 + 2^-7
  std::vector<phx_tensor> send, recv;
  for (size_t r = 0; r < kRanks; ++r) {
    std::vector<uint16_t> values(kCount, r == 0 ? one : one_and_a_bit);
    send.push_back(tensor(rank_devices_[r], PHX_DTYPE_BF16, kCount, values.data()));
    recv.push_back(tensor(rank_devices_[r], PHX_DTYPE_BF16, kCount));
  }
  for (size_t r = 0; r < kRanks; ++r)
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], send[r], recv[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
  synchronize_all();
  // f32: 1 + 3 * (1 + 2^-7) = 4 + 3 * 2^-7 = 4.0234375; bf16 near 4 has steps of 2^-5,
  // so it rounds to 4 + 2^-5 = 4.03125 (0x4081). Rounding after each addition instead
  // gives 2 + 2^-7 -> 2 (ties to even at 2^-6 steps), then 3.0078125 -> 3, then 4 + 2^-7 -> 4.
  for (size_t r = 0; r < kRanks; ++r)
    for (uint16_t bits : read<uint16_t>(recv[r], kCount)) ASSERT_EQ(bits, 0x4081) << r;
}

TEST_F(Comm, AllGatherReduceScatterBroadcastAndMessagesMoveExactBytes) {
  constexpr size_t kPart = 3000;
  phx_comm comm = make_comm();
  std::vector<std::vector<float>> parts, wholes;
  std::vector<phx_tensor> part_in, gathered, whole_in, scattered, bcast, message;
  for (size_t r = 0; r < kRanks; ++r) {
    const size_t d = rank_devices_[r];
    parts.push_back(rank_values(r, kPart));
    wholes.push_back(rank_values(r + 10, kPart * kRanks));
    part_in.push_back(tensor(d, PHX_DTYPE_F32, kPart, parts[r].data()));
    gathered.push_back(tensor(d, PHX_DTYPE_F32, kPart * kRanks));
    whole_in.push_back(tensor(d, PHX_DTYPE_F32, kPart * kRanks, wholes[r].data()));
    scattered.push_back(tensor(d, PHX_DTYPE_F32, kPart));
    bcast.push_back(tensor(d, PHX_DTYPE_F32, kPart, parts[r].data()));
    message.push_back(tensor(d, PHX_DTYPE_F32, kPart, parts[r].data()));
  }
  for (size_t r = 0; r < kRanks; ++r) {
    ASSERT_EQ(phx_all_gather(comm, r, streams_[r], part_in[r], gathered[r], nullptr), PHX_STATUS_OK)
        << phx_last_error();
    ASSERT_EQ(phx_reduce_scatter(comm, r, streams_[r], whole_in[r], scattered[r], PHX_REDUCE_SUM,
                                 nullptr),
              PHX_STATUS_OK);
    ASSERT_EQ(phx_broadcast(comm, r, streams_[r], bcast[r], 2, nullptr), PHX_STATUS_OK);
  }
  // A ring of messages: rank r sends to r + 1. Every send is queued before its receive,
  // which a single thread driving every rank may do in any order.
  for (size_t r = 0; r < kRanks; ++r)
    ASSERT_EQ(phx_send(comm, r, streams_[r], part_in[r], (r + 1) % kRanks, nullptr), PHX_STATUS_OK);
  for (size_t r = 0; r < kRanks; ++r)
    ASSERT_EQ(phx_recv(comm, r, streams_[r], message[r], (r + kRanks - 1) % kRanks, nullptr),
              PHX_STATUS_OK);
  synchronize_all();
  for (size_t r = 0; r < kRanks; ++r) {
    const auto all = read<float>(gathered[r], kPart * kRanks);
    for (size_t s = 0; s < kRanks; ++s)
      ASSERT_EQ(std::memcmp(all.data() + s * kPart, parts[s].data(), kPart * sizeof(float)), 0);
    const auto mine = read<float>(scattered[r], kPart);
    for (size_t i = 0; i < kPart; ++i) {
      float sum = wholes[0][r * kPart + i];
      for (size_t s = 1; s < kRanks; ++s) sum += wholes[s][r * kPart + i];
      ASSERT_EQ(mine[i], sum);
    }
    EXPECT_EQ(read<float>(bcast[r], kPart), parts[2]);
    EXPECT_EQ(read<float>(message[r], kPart), parts[(r + kRanks - 1) % kRanks]);
  }
}

TEST_F(Comm, ResultsAreTheSameFromRunToRun) {
  constexpr size_t kCount = 70000;
  phx_comm comm = make_comm();
  std::vector<phx_tensor> send, recv;
  for (size_t r = 0; r < kRanks; ++r) {
    const auto values = rank_values(r, kCount);
    send.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, kCount, values.data()));
    recv.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, kCount));
  }
  std::vector<float> first;
  for (int run = 0; run < 3; ++run) {
    for (size_t r = 0; r < kRanks; ++r)
      ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], send[r], recv[r], PHX_REDUCE_SUM, nullptr),
                PHX_STATUS_OK);
    synchronize_all();
    const auto got = read<float>(recv[kRanks - 1], kCount);
    if (run == 0) first = got;
    ASSERT_EQ(std::memcmp(got.data(), first.data(), kCount * sizeof(float)), 0) << run;
  }
}

TEST_F(Comm, RanksThatDisagreeFailTheCollectiveOnEveryRank) {
  phx_comm comm = make_comm();
  std::vector<phx_tensor> send, recv;
  for (size_t r = 0; r < kRanks; ++r) {
    const int64_t count = r == 1 ? 16 : 8;  // rank 1 reduces twice as much
    send.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, count));
    recv.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, count));
  }
  for (size_t r = 0; r < kRanks; ++r)
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], send[r], recv[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
  for (phx_stream stream : streams_) {
    EXPECT_EQ(phx_stream_synchronize(stream), PHX_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(phx_last_error()).find("rank"), std::string::npos) << phx_last_error();
  }
  // The streams go on: the next collective, which agrees, runs.
  for (size_t r = 0; r < kRanks; ++r) {
    phx_tensor agreeing = tensor(rank_devices_[r], PHX_DTYPE_F32, 8);
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], agreeing, agreeing, PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK)
        << phx_last_error();
  }
  synchronize_all();
}

TEST_F(Comm, AMissingRankFailsTheOthersWithinTheTimeout) {
  phx_comm comm = make_comm(200);
  std::vector<phx_tensor> t;
  for (size_t r = 0; r < kRanks; ++r) t.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, 8));
  for (size_t r = 0; r + 1 < kRanks; ++r)  // the last rank never calls
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], t[r], t[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
  const auto start = std::chrono::steady_clock::now();
  for (size_t r = 0; r + 1 < kRanks; ++r) {
    EXPECT_EQ(phx_stream_synchronize(streams_[r]), PHX_STATUS_DEVICE_UNAVAILABLE);
    EXPECT_NE(std::string(phx_last_error()).find("rank(s) 3 did not reach"), std::string::npos)
        << phx_last_error();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(Comm, BadCallsAreRefusedAndQueueNothing) {
  phx_comm comm = make_comm();
  std::vector<phx_tensor> t;
  for (size_t r = 0; r < kRanks; ++r) t.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, 8));
  phx_tensor ints = tensor(rank_devices_[0], PHX_DTYPE_I32, 8);
  phx_tensor big = tensor(rank_devices_[0], PHX_DTYPE_F32, 9);
  EXPECT_EQ(phx_all_reduce(nullptr, 0, streams_[0], t[0], t[0], PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_all_reduce(comm, kRanks, streams_[0], t[0], t[0], PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_all_reduce(comm, 0, streams_[0], nullptr, t[0], PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_all_reduce(comm, 0, streams_[0], t[0], big, PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_all_reduce(comm, 0, streams_[0], ints, ints, PHX_REDUCE_MEAN, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(
      phx_all_reduce(comm, 0, streams_[0], t[0], t[0], static_cast<phx_reduce_op>(99), nullptr),
      PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_all_gather(comm, 0, streams_[0], t[0], t[0], nullptr),
            PHX_STATUS_INVALID_ARGUMENT);  // recv must hold every rank's part
  EXPECT_EQ(phx_broadcast(comm, 0, streams_[0], t[0], kRanks, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_send(comm, 0, streams_[0], t[0], 0, nullptr), PHX_STATUS_INVALID_ARGUMENT);
  if (device_count_ > 1) {  // rank 1's tensor on rank 0's part
    EXPECT_EQ(phx_all_reduce(comm, 0, streams_[0], t[1], t[0], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(phx_all_reduce(comm, 0, streams_[1], t[0], t[0], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_INVALID_ARGUMENT);
  }
  // Two ranks of one collective on one stream would wait for each other: refused.
  phx_comm same_device = nullptr;
  const size_t twice[2] = {rank_devices_[0], rank_devices_[0]};
  ASSERT_EQ(phx_comm_create(context_, twice, 2, nullptr, &same_device), PHX_STATUS_OK);
  ASSERT_EQ(phx_all_reduce(same_device, 0, streams_[0], t[0], t[0], PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_OK);
  EXPECT_EQ(phx_all_reduce(same_device, 1, streams_[0], t[0], t[0], PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("stream"), std::string::npos);
  // Destroying the communicator fails the collective that misses rank 1, at once.
  EXPECT_EQ(phx_comm_destroy(same_device), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_synchronize(streams_[0]), PHX_STATUS_DEVICE_UNAVAILABLE);
  // Nothing was queued by the refused calls: a whole collective still runs and agrees.
  std::vector<float> ones(8, 1.0f);
  for (size_t r = 0; r < kRanks; ++r)
    ASSERT_EQ(phx_tensor_upload(t[r], 0, ones.data(), sizeof(float) * 8), PHX_STATUS_OK);
  for (size_t r = 0; r < kRanks; ++r)
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], t[r], t[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
  synchronize_all();
  EXPECT_EQ(read<float>(t[kRanks - 1], 8), std::vector<float>(8, float(kRanks)));
  size_t ranks = 0;
  EXPECT_EQ(phx_comm_ranks(comm, &ranks), PHX_STATUS_OK);
  EXPECT_EQ(ranks, kRanks);
  const size_t no_such_device[1] = {device_count_};
  phx_comm none = nullptr;
  EXPECT_EQ(phx_comm_create(context_, no_such_device, 1, nullptr, &none), PHX_STATUS_NOT_FOUND);
  EXPECT_EQ(phx_comm_create(context_, no_such_device, 0, nullptr, &none),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(none, nullptr);
}

// A stream that waits for an event holds its later work back without blocking the
// host: here the event's stream is itself held, behind a collective whose last rank the
// host has not called yet.
TEST_F(Comm, StreamsWaitForEventsOfOtherDevicesWithoutBlockingTheHost) {
  phx_comm comm = make_comm();
  const size_t last = device_count_ - 1;
  phx_stream other = nullptr;
  ASSERT_EQ(phx_stream_create(context_, last, &other), PHX_STATUS_OK);
  std::vector<phx_tensor> t;
  std::vector<float> ones(64, 1.0f);
  for (size_t r = 0; r < kRanks; ++r)
    t.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, 64, ones.data()));
  for (size_t r = 0; r + 1 < kRanks; ++r)
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], t[r], t[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
  phx_event reduced = nullptr;
  ASSERT_EQ(phx_event_record(streams_[0], 0, &reduced), PHX_STATUS_OK);
  // other copies rank 0's result once it is there, onto the last device.
  phx_tensor copy = tensor(last, PHX_DTYPE_F32, 64);
  ASSERT_EQ(phx_stream_wait_event(other, reduced), PHX_STATUS_OK);
  uint64_t copied = 0;
  ASSERT_EQ(phx_tensor_copy_async(other, copy, t[0], &copied), PHX_STATUS_OK);
  phx_tensor doubled = tensor(last, PHX_DTYPE_F32, 64);
  phx_tensor inputs[2] = {copy, copy};
  phx_op_desc add = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, inputs, 2, &doubled, 1};
  uint64_t added = 0;
  ASSERT_EQ(phx_op_run(other, &add, &added), PHX_STATUS_OK) << phx_last_error();
  int done = 1;
  ASSERT_EQ(phx_event_query(reduced, &done), PHX_STATUS_OK);
  EXPECT_EQ(done, 0);
  ASSERT_EQ(phx_stream_query(other, added, &done), PHX_STATUS_OK);
  EXPECT_EQ(done, 0);
  ASSERT_EQ(phx_all_reduce(comm, kRanks - 1, streams_[kRanks - 1], t[kRanks - 1], t[kRanks - 1],
                           PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_OK);
  ASSERT_EQ(phx_event_synchronize(reduced), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_wait(other, added), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(read<float>(doubled, 64), std::vector<float>(64, 2.0f * kRanks));
  EXPECT_EQ(phx_event_destroy(reduced), PHX_STATUS_OK);
  EXPECT_EQ(phx_event_destroy(reduced), PHX_STATUS_INVALID_ARGUMENT);
  synchronize_all();
}

TEST_F(Comm, AsynchronousTransfersAreOrderedWithTheStreamsOps) {
  constexpr int64_t kCount = 4096;
  std::vector<float> in(kCount), out(kCount, 0.0f);
  for (int64_t i = 0; i < kCount; ++i) in[i] = static_cast<float>(i % 17) - 8.0f;
  for (size_t device = 0; device < device_count_; ++device) {
    int runs_relu = 0;
    ASSERT_EQ(phx_device_supports(context_, device, PHX_OP_RELU, PHX_DTYPE_F32, &runs_relu),
              PHX_STATUS_OK);
    if (!runs_relu) continue;  // the NPU runs integers
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(context_, device, &stream), PHX_STATUS_OK);
    phx_tensor x = tensor(device, PHX_DTYPE_F32, kCount), y = tensor(device, PHX_DTYPE_F32, kCount);
    uint64_t uploaded = 0, downloaded = 0;
    ASSERT_EQ(phx_tensor_upload_async(stream, x, 0, in.data(), kCount * 4, &uploaded),
              PHX_STATUS_OK);
    phx_op_desc relu = {sizeof(phx_op_desc), PHX_OP_RELU, nullptr, &x, 1, &y, 1};
    uint64_t ran = 0;
    ASSERT_EQ(phx_op_run(stream, &relu, &ran), PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_download_async(stream, y, 0, out.data(), kCount * 4, &downloaded),
              PHX_STATUS_OK);
    EXPECT_LT(uploaded, ran);
    EXPECT_LT(ran, downloaded);
    ASSERT_EQ(phx_stream_wait(stream, downloaded), PHX_STATUS_OK) << phx_last_error();
    for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(out[i], std::max(in[i], 0.0f)) << device;
    EXPECT_EQ(phx_tensor_upload_async(stream, x, 1, in.data(), kCount * 4, nullptr),
              PHX_STATUS_INVALID_ARGUMENT);  // one byte past the end
    EXPECT_EQ(phx_tensor_download_async(stream, x, 0, nullptr, 4, nullptr),
              PHX_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
  }
}

TEST_F(Comm, EventsOfDestroyedStreamsAreCompleteAndBadEventsAreRefused) {
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, 0, &stream), PHX_STATUS_OK);
  phx_event event = nullptr;
  EXPECT_EQ(phx_event_record(stream, 1, &event), PHX_STATUS_INVALID_ARGUMENT);  // not issued
  ASSERT_EQ(phx_event_record(stream, 0, &event), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
  int done = 0;
  EXPECT_EQ(phx_event_query(event, &done), PHX_STATUS_OK);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(phx_event_synchronize(event), PHX_STATUS_OK);
  EXPECT_EQ(phx_event_query(event, nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_stream_wait_event(streams_[0], nullptr), PHX_STATUS_INVALID_ARGUMENT);
  phx_context other = nullptr;
  ASSERT_EQ(phx_context_create(nullptr, &other), PHX_STATUS_OK);
  phx_stream foreign = nullptr;
  ASSERT_EQ(phx_stream_create(other, 0, &foreign), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_wait_event(foreign, event), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_context_destroy(other), PHX_STATUS_OK);
  // The context frees the events the program forgot.
}

TEST_F(Comm, CollectivesKeepProfileRecords) {
  phx_comm comm = make_comm();
  std::vector<phx_tensor> t;
  for (size_t r = 0; r < kRanks; ++r) t.push_back(tensor(rank_devices_[r], PHX_DTYPE_F32, 256));
  uint64_t ticket = 0;
  for (size_t r = 0; r < kRanks; ++r)
    ASSERT_EQ(phx_all_reduce(comm, r, streams_[r], t[r], t[r], PHX_REDUCE_SUM, &ticket),
              PHX_STATUS_OK);
  synchronize_all();
  size_t count = 0;
  ASSERT_EQ(phx_profile_count(streams_[kRanks - 1], &count), PHX_STATUS_OK);
  ASSERT_EQ(count, 1u);
  phx_profile_record record{};
  record.struct_size = sizeof record;
  ASSERT_EQ(phx_profile_get(streams_[kRanks - 1], 0, &record), PHX_STATUS_OK);
  EXPECT_EQ(record.ticket, ticket);
  EXPECT_EQ(record.op, PHX_OP_INVALID);
  EXPECT_EQ(std::string(record.signature), "all_reduce sum of f32, 1024 bytes over 4 ranks");
}

}  // namespace

namespace {

// A profiling context made with variable set to value (unset again after), and the
// devices of plugin in it; null when the context cannot be made.
phx_context context_with(const char* variable, const char* value, const char* plugin,
                         std::vector<size_t>& devices) {
  setenv(variable, value, 1);
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.flags = PHX_CONTEXT_PROFILE;
  phx_context context = nullptr;
  const phx_status status = phx_context_create(&options, &context);
  unsetenv(variable);
  if (status != PHX_STATUS_OK) return nullptr;
  devices.clear();
  size_t count = 0;
  phx_device_count(context, &count);
  for (size_t d = 0; d < count; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    if (phx_device_get(context, d, &info) == PHX_STATUS_OK && std::string(info.plugin) == plugin)
      devices.push_back(d);
  }
  return context;
}

// A collective among the chips of a simulated TPU pod carries the interconnect model's
// time in its profile records: here a ring of four v5p chips, whose all-reduce the model
// prices as the published ring formula, 2 (n - 1) / n * V / B, with B twice a link's
// one-way 100 GB/s (a ring sends both ways), plus 2 * floor(n / 2) hops of 1 us
// (docs/tpu-sim.md, "Pods"), rounded up to whole ns.
TEST(CommPod, CollectivesOnAPodCarryTheInterconnectModelsTime) {
  std::vector<size_t> chips;
  phx_context context =
      context_with("PHX_TPU_SIM", "generation=v5p,chips=4,topology=4x1x1", "tpu-sim", chips);
  ASSERT_NE(context, nullptr) << phx_last_error();
  if (chips.size() != 4) {
    phx_context_destroy(context);
    GTEST_SKIP() << "the tpu-sim plugin is not built";
  }
  constexpr int64_t kElements = 1 << 18;  // V = 1 MiB of f32
  phx_comm comm = nullptr;
  ASSERT_EQ(phx_comm_create(context, chips.data(), chips.size(), nullptr, &comm), PHX_STATUS_OK);
  std::vector<phx_stream> streams(4);
  std::vector<phx_tensor> tensors(4);
  for (size_t r = 0; r < 4; ++r) {
    ASSERT_EQ(phx_stream_create(context, chips[r], &streams[r]), PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_create(context, chips[r], PHX_DTYPE_F32, 1, &kElements, &tensors[r]),
              PHX_STATUS_OK);
  }
  for (size_t r = 0; r < 4; ++r)
    ASSERT_EQ(phx_all_reduce(comm, r, streams[r], tensors[r], tensors[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
  const double bytes = kElements * 4.0, ring_bandwidth = 2 * 100e9;
  const double expected_ns = std::ceil(2.0 * 3 / 4 * bytes / ring_bandwidth * 1e9 + 2 * 2 * 1000);
  for (size_t r = 0; r < 4; ++r) {
    ASSERT_EQ(phx_stream_synchronize(streams[r]), PHX_STATUS_OK) << phx_last_error();
    phx_profile_record record{};
    record.struct_size = sizeof record;
    ASSERT_EQ(phx_profile_get(streams[r], 0, &record), PHX_STATUS_OK);
    ASSERT_EQ(record.metric_count, 1u);
    EXPECT_STREQ(record.metrics[0].name, "estimated_time_ns");
    EXPECT_NEAR(record.metrics[0].value, expected_ns, 1.0);
  }
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

}  // namespace

namespace {

// Tensors split along each axis: a [4, 8, 8] f32 tensor whose elements are their own
// index, scattered from rank 1 along axis a and gathered back along it. Part r along axis
// a holds the indices whose coordinate a lies in [r * n / R, (r + 1) * n / R).
TEST_F(Comm, ShardsScatterAndGatherAlongEveryAxis) {
  phx_comm comm = make_comm();
  const int64_t whole_shape[3] = {4, 8, 8};
  const int64_t count = 4 * 8 * 8;
  std::vector<float> indices(count);
  for (int64_t i = 0; i < count; ++i) indices[i] = static_cast<float>(i);
  for (size_t axis = 0; axis < 3; ++axis) {
    int64_t part_shape[3] = {whole_shape[0], whole_shape[1], whole_shape[2]};
    part_shape[axis] /= static_cast<int64_t>(kRanks);
    std::vector<phx_tensor> parts, gathered;
    phx_tensor full = nullptr;
    for (size_t r = 0; r < kRanks; ++r) {
      phx_tensor part = nullptr, back = nullptr;
      ASSERT_EQ(phx_tensor_create(context_, rank_devices_[r], PHX_DTYPE_F32, 3, part_shape, &part),
                PHX_STATUS_OK);
      ASSERT_EQ(phx_tensor_create(context_, rank_devices_[r], PHX_DTYPE_F32, 3, whole_shape, &back),
                PHX_STATUS_OK);
      parts.push_back(part);
      gathered.push_back(back);
    }
    ASSERT_EQ(phx_tensor_create(context_, rank_devices_[1], PHX_DTYPE_F32, 3, whole_shape, &full),
              PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_upload(full, 0, indices.data(), count * sizeof(float)), PHX_STATUS_OK);
    for (size_t r = 0; r < kRanks; ++r) {
      ASSERT_EQ(phx_shard_scatter(comm, r, streams_[r], r == 1 ? full : nullptr, 1, axis, parts[r],
                                  nullptr),
                PHX_STATUS_OK)
          << phx_last_error();
      ASSERT_EQ(phx_shard_gather(comm, r, streams_[r], parts[r], axis, gathered[r], nullptr),
                PHX_STATUS_OK)
          << phx_last_error();
    }
    synchronize_all();
    for (size_t r = 0; r < kRanks; ++r) {
      const auto part = read<float>(parts[r], count / kRanks);
      size_t at = 0;
      for (int64_t i = 0; i < whole_shape[0]; ++i)
        for (int64_t j = 0; j < whole_shape[1]; ++j)
          for (int64_t k = 0; k < whole_shape[2]; ++k) {
            const int64_t coordinate[3] = {i, j, k};
            if (coordinate[axis] / part_shape[axis] != static_cast<int64_t>(r)) continue;
            ASSERT_EQ(part[at++], static_cast<float>((i * 8 + j) * 8 + k))
                << "axis " << axis << " rank " << r;
          }
      EXPECT_EQ(read<float>(gathered[r], count), indices) << "axis " << axis;
    }
  }
  // Shapes that do not split, and an axis past the rank, are refused.
  phx_tensor a = tensor(rank_devices_[0], PHX_DTYPE_F32, 8),
             b = tensor(rank_devices_[0], PHX_DTYPE_F32, 12);
  EXPECT_EQ(phx_shard_gather(comm, 0, streams_[0], a, 0, b, nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_shard_gather(comm, 0, streams_[0], a, 1, b, nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_shard_scatter(comm, 0, streams_[0], nullptr, 0, 0, a, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);  // the root's full is null
}

// A transport of one process holding the only rank: every exchange is a copy. It runs the
// transport path of the host (the exchange of each call's description, the all-to-all
// reduction, the reordering of sharded gathers) without a second process; libphynexus_mpi's
// tests run it across processes.
struct SingleRank {
  int destroyed = 0;

  static phx_status copy(void*, const void* send, void* recv, size_t bytes) {
    std::memcpy(recv, send, bytes);
    return PHX_STATUS_OK;
  }
  static phx_status broadcast(void*, void*, size_t, size_t) { return PHX_STATUS_OK; }
  static phx_status message(void*, const void*, size_t, size_t) {
    return phx_set_last_error(PHX_STATUS_INTERNAL, "a single rank has no peer");
  }
  static phx_status receive(void*, void*, size_t, size_t) {
    return phx_set_last_error(PHX_STATUS_INTERNAL, "a single rank has no peer");
  }
  static void destroy(void* self) { ++static_cast<SingleRank*>(self)->destroyed; }

  phx_comm_transport transport() {
    phx_comm_transport t{};
    t.struct_size = sizeof t;
    t.rank = 0;
    t.ranks = 1;
    t.user_data = this;
    t.all_gather = copy;
    t.all_to_all = copy;
    t.broadcast = broadcast;
    t.send = message;
    t.recv = receive;
    t.destroy = destroy;
    return t;
  }
};

TEST_F(Comm, ATransportCommunicatorRunsEveryCollectiveThroughItsTransport) {
  SingleRank single;
  const phx_comm_transport transport = single.transport();
  phx_comm comm = nullptr;
  ASSERT_EQ(phx_comm_create_transport(context_, rank_devices_[0], &transport, &comm), PHX_STATUS_OK)
      << phx_last_error();
  const auto values = rank_values(0, 999);
  phx_tensor x = tensor(rank_devices_[0], PHX_DTYPE_F32, 999, values.data());
  phx_tensor y = tensor(rank_devices_[0], PHX_DTYPE_F32, 999);
  phx_tensor z = tensor(rank_devices_[0], PHX_DTYPE_F32, 999);
  ASSERT_EQ(phx_all_reduce(comm, 0, streams_[0], x, y, PHX_REDUCE_MAX, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_reduce_scatter(comm, 0, streams_[0], y, z, PHX_REDUCE_SUM, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_broadcast(comm, 0, streams_[0], z, 0, nullptr), PHX_STATUS_OK);
  phx_tensor w = tensor(rank_devices_[0], PHX_DTYPE_F32, 999);
  ASSERT_EQ(phx_shard_scatter(comm, 0, streams_[0], z, 0, 0, w, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_shard_gather(comm, 0, streams_[0], w, 0, x, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_synchronize(streams_[0]), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(read<float>(z, 999), values);
  EXPECT_EQ(read<float>(x, 999), values);
  EXPECT_EQ(phx_all_reduce(comm, 1, streams_[0], x, y, PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);  // no rank 1
  // A failing transport entry fails the collective with its message.
  phx_tensor one = tensor(rank_devices_[0], PHX_DTYPE_F32, 4);
  phx_comm pair = nullptr;
  phx_comm_transport two = transport;
  two.ranks = 2;
  two.destroy = nullptr;
  ASSERT_EQ(phx_comm_create_transport(context_, rank_devices_[0], &two, &pair), PHX_STATUS_OK);
  ASSERT_EQ(phx_send(pair, 0, streams_[0], one, 1, nullptr), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_synchronize(streams_[0]), PHX_STATUS_INTERNAL);
  EXPECT_NE(std::string(phx_last_error()).find("a single rank has no peer"), std::string::npos)
      << phx_last_error();
  // The transport is destroyed once, with its communicator; never on a refused create.
  EXPECT_EQ(single.destroyed, 0);
  EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
  EXPECT_EQ(single.destroyed, 1);
  phx_comm_transport broken = transport;
  broken.all_to_all = nullptr;
  phx_comm refused = nullptr;
  EXPECT_EQ(phx_comm_create_transport(context_, rank_devices_[0], &broken, &refused),
            PHX_STATUS_INVALID_ARGUMENT);
  broken = transport;
  broken.rank = 1;
  EXPECT_EQ(phx_comm_create_transport(context_, rank_devices_[0], &broken, &refused),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_comm_create_transport(context_, device_count_, &transport, &refused),
            PHX_STATUS_NOT_FOUND);
  EXPECT_EQ(phx_comm_create_transport(context_, 0, nullptr, &refused), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(single.destroyed, 1);
}

}  // namespace

namespace {

// PHX_CPU_DEVICES=4 shows the host as four CPU devices sharing its memory: a
// communicator's ranks each on a device of its own, read and written in place. A value
// that is not a count rejects the CPU plugin with a message naming the variable.
TEST(CommCpuDevices, FourHostDevicesRunACollectiveInPlace) {
  std::vector<size_t> cpus;
  phx_context context = context_with("PHX_CPU_DEVICES", "4", "cpu", cpus);
  ASSERT_NE(context, nullptr) << phx_last_error();
  ASSERT_EQ(cpus.size(), 4u);
  phx_comm comm = nullptr;
  ASSERT_EQ(phx_comm_create(context, cpus.data(), 4, nullptr, &comm), PHX_STATUS_OK);
  constexpr int64_t kCount = 5000;
  std::vector<phx_stream> streams(4);
  std::vector<phx_tensor> tensors(4);
  for (size_t r = 0; r < 4; ++r) {
    const std::vector<float> values(kCount, static_cast<float>(r + 1));
    ASSERT_EQ(phx_stream_create(context, cpus[r], &streams[r]), PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_create(context, cpus[r], PHX_DTYPE_F32, 1, &kCount, &tensors[r]),
              PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_upload(tensors[r], 0, values.data(), kCount * sizeof(float)),
              PHX_STATUS_OK);
  }
  for (size_t r = 0; r < 4; ++r)
    ASSERT_EQ(phx_all_reduce(comm, r, streams[r], tensors[r], tensors[r], PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
  for (size_t r = 0; r < 4; ++r) {
    ASSERT_EQ(phx_stream_synchronize(streams[r]), PHX_STATUS_OK) << phx_last_error();
    void* data = nullptr;  // each device's tensors are host memory, read in place
    ASSERT_EQ(phx_tensor_host_data(tensors[r], &data), PHX_STATUS_OK);
    const float* sums = static_cast<const float*>(data);
    for (int64_t i = 0; i < kCount; ++i) ASSERT_EQ(sums[i], 10.0f) << "rank " << r;
  }
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);

  context = context_with("PHX_CPU_DEVICES", "0", "cpu", cpus);
  ASSERT_NE(context, nullptr) << phx_last_error();
  size_t plugins = 0;
  ASSERT_EQ(phx_plugin_count(context, &plugins), PHX_STATUS_OK);
  bool rejected = false;
  for (size_t i = 0; i < plugins; ++i) {
    phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
    ASSERT_EQ(phx_plugin_get(context, i, &info), PHX_STATUS_OK);
    if (std::string(info.name) == "cpu" && info.state == PHX_PLUGIN_REJECTED) {
      rejected = true;
      EXPECT_NE(std::string(info.reason).find("PHX_CPU_DEVICES"), std::string::npos) << info.reason;
    }
  }
  EXPECT_TRUE(rejected);
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

}  // namespace
