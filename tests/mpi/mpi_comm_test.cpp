// Communicators over MPI (comm_mpi.h), run by ctest as `mpirun -np 4`: each process runs
// every collective for its own rank through phx_comm_create_mpi, then the same collective
// for all four ranks through an in-process communicator (phx_comm_create) from the same
// inputs, and its rank's results must be equal bit for bit. Then the faults: ranks that
// disagree, a message of the wrong length, a rank that does not come, bad arguments.
#include <chrono>
#include <functional>
#include <string>

#include "mpi_fixture.h"

namespace phx_mpi_test {
namespace {

// One collective: its dtype, the element counts of its input and output tensors, and the
// call(s) that queue rank's part (in and out are one tensor when in_place).
struct Collective {
  phx_dtype dtype;
  size_t in_count;
  size_t out_count;
  bool in_place;
  std::function<phx_status(phx_comm, size_t rank, phx_stream, phx_tensor in, phx_tensor out)> queue;
};

class MpiComm : public MpiFixture {
 protected:
  // This rank's output of collective through MPI, from rank_input(rank, ..., seed).
  std::vector<std::byte> over_mpi(const Collective& collective, uint64_t seed) {
    phx_comm comm = mpi_comm();
    const std::vector<std::byte> input =
        rank_input(rank_, collective.dtype, collective.in_count, seed);
    phx_tensor in = tensor(collective.dtype, collective.in_count, &input);
    phx_tensor out = collective.in_place ? in : tensor(collective.dtype, collective.out_count);
    EXPECT_EQ(collective.queue(comm, rank_, stream_, in, out), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
    std::vector<std::byte> result = download(out, collective.dtype, collective.out_count);
    EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
    return result;
  }

  // The same in this process: all four ranks on the CPU device, one stream each; rank_'s
  // output.
  std::vector<std::byte> in_process(const Collective& collective, uint64_t seed) {
    const std::vector<size_t> devices(kRanks, cpu_);
    phx_comm comm = nullptr;
    EXPECT_EQ(phx_comm_create(context_, devices.data(), kRanks, nullptr, &comm), PHX_STATUS_OK)
        << phx_last_error();
    std::vector<phx_stream> streams(kRanks);
    std::vector<phx_tensor> ins, outs;
    // Every tensor first: an upload waits for the device's streams, which would hold
    // the collectives of the ranks queued before it.
    for (size_t r = 0; r < kRanks; ++r) {
      EXPECT_EQ(phx_stream_create(context_, cpu_, &streams[r]), PHX_STATUS_OK);
      const std::vector<std::byte> input =
          rank_input(r, collective.dtype, collective.in_count, seed);
      ins.push_back(tensor(collective.dtype, collective.in_count, &input));
      outs.push_back(collective.in_place ? ins[r] : tensor(collective.dtype, collective.out_count));
    }
    for (size_t r = 0; r < kRanks; ++r)
      EXPECT_EQ(collective.queue(comm, r, streams[r], ins[r], outs[r]), PHX_STATUS_OK)
          << phx_last_error();
    for (phx_stream stream : streams) EXPECT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
    std::vector<std::byte> result = download(outs[rank_], collective.dtype, collective.out_count);
    for (phx_stream stream : streams) EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
    EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
    return result;
  }

  void expect_same_as_in_process(const Collective& collective, uint64_t seed) {
    const std::vector<std::byte> mpi = over_mpi(collective, seed);
    const std::vector<std::byte> local = in_process(collective, seed);
    ASSERT_EQ(mpi.size(), local.size());
    EXPECT_EQ(first_difference(mpi, local), -1)
        << "rank " << rank_ << ": MPI and in-process differ";
  }
};

Collective all_reduce(phx_dtype dtype, size_t count, phx_reduce_op op) {
  return {dtype, count, count, false,
          [op](phx_comm comm, size_t rank, phx_stream stream, phx_tensor in, phx_tensor out) {
            return phx_all_reduce(comm, rank, stream, in, out, op, nullptr);
          }};
}

// Not a multiple of the ranks, nor of any chunk.
constexpr size_t kCount = 100003;

TEST_F(MpiComm, AllReduceF32SumMaxAndMeanEqualInProcess) {
  expect_same_as_in_process(all_reduce(PHX_DTYPE_F32, kCount, PHX_REDUCE_SUM), 1);
  expect_same_as_in_process(all_reduce(PHX_DTYPE_F32, kCount, PHX_REDUCE_MAX), 2);
  expect_same_as_in_process(all_reduce(PHX_DTYPE_F32, kCount, PHX_REDUCE_MEAN), 3);
}

TEST_F(MpiComm, AllReduceI32SumWrapsAsInProcess) {
  expect_same_as_in_process(all_reduce(PHX_DTYPE_I32, kCount, PHX_REDUCE_SUM), 4);
}

TEST_F(MpiComm, AllReduceBf16SumEqualsInProcess) {
  expect_same_as_in_process(all_reduce(PHX_DTYPE_BF16, kCount, PHX_REDUCE_SUM), 5);
}

TEST_F(MpiComm, AllGatherEqualsInProcess) {
  expect_same_as_in_process(
      {PHX_DTYPE_F32, kCount, kCount * kRanks, false,
       [](phx_comm comm, size_t rank, phx_stream stream, phx_tensor in, phx_tensor out) {
         return phx_all_gather(comm, rank, stream, in, out, nullptr);
       }},
      6);
}

TEST_F(MpiComm, ReduceScatterEqualsInProcess) {
  expect_same_as_in_process(
      {PHX_DTYPE_F32, kCount * kRanks, kCount, false,
       [](phx_comm comm, size_t rank, phx_stream stream, phx_tensor in, phx_tensor out) {
         return phx_reduce_scatter(comm, rank, stream, in, out, PHX_REDUCE_SUM, nullptr);
       }},
      7);
}

TEST_F(MpiComm, BroadcastEqualsInProcess) {
  expect_same_as_in_process(
      {PHX_DTYPE_F32, kCount, kCount, true,
       [](phx_comm comm, size_t rank, phx_stream stream, phx_tensor in, phx_tensor) {
         return phx_broadcast(comm, rank, stream, in, 2, nullptr);
       }},
      8);
}

// Every rank sends to the next and receives from the one before: sends are buffered, so
// the ring does not wait in a circle.
TEST_F(MpiComm, SendRecvRingEqualsInProcess) {
  expect_same_as_in_process(
      {PHX_DTYPE_F32, kCount, kCount, false,
       [](phx_comm comm, size_t rank, phx_stream stream, phx_tensor in, phx_tensor out) {
         const phx_status sent = phx_send(comm, rank, stream, in, (rank + 1) % kRanks, nullptr);
         if (sent != PHX_STATUS_OK) return sent;
         return phx_recv(comm, rank, stream, out, (rank + kRanks - 1) % kRanks, nullptr);
       }},
      9);
}

// Several collectives and messages queued before one wait run in call order.
TEST_F(MpiComm, QueuedCollectivesRunInCallOrder) {
  phx_comm comm = mpi_comm();
  size_t ranks = 0;
  ASSERT_EQ(phx_comm_ranks(comm, &ranks), PHX_STATUS_OK);
  EXPECT_EQ(ranks, kRanks);
  const std::vector<std::byte> input = rank_input(rank_, PHX_DTYPE_I32, 1000, 10);
  phx_tensor a = tensor(PHX_DTYPE_I32, 1000, &input);
  phx_tensor b = tensor(PHX_DTYPE_I32, 1000);
  phx_tensor gathered = tensor(PHX_DTYPE_I32, 1000 * kRanks);
  ASSERT_EQ(phx_all_reduce(comm, rank_, stream_, a, b, PHX_REDUCE_MAX, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_broadcast(comm, rank_, stream_, b, 1, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_send(comm, rank_, stream_, a, (rank_ + 3) % kRanks, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_recv(comm, rank_, stream_, a, (rank_ + 1) % kRanks, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_all_gather(comm, rank_, stream_, a, gathered, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
  std::vector<int32_t> inputs[kRanks];
  for (size_t r = 0; r < kRanks; ++r) {
    inputs[r].resize(1000);
    std::memcpy(inputs[r].data(), rank_input(r, PHX_DTYPE_I32, 1000, 10).data(), 4000);
  }
  std::vector<int32_t> max(1000), all(1000 * kRanks);
  ASSERT_EQ(phx_tensor_download(b, 0, max.data(), 4000), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_download(gathered, 0, all.data(), all.size() * 4), PHX_STATUS_OK);
  for (size_t i = 0; i < 1000; ++i) {
    int32_t expected = inputs[0][i];
    for (size_t r = 1; r < kRanks; ++r) expected = std::max(expected, inputs[r][i]);
    ASSERT_EQ(max[i], expected) << i;
    // Rank r's a held, after the ring, rank r + 1's input.
    for (size_t r = 0; r < kRanks; ++r)
      ASSERT_EQ(all[r * 1000 + i], inputs[(r + 1) % kRanks][i]) << r << " " << i;
  }
  EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
}

TEST_F(MpiComm, MismatchedSizesFailEveryRankWithInvalidArgument) {
  phx_comm comm = mpi_comm();
  const size_t count = rank_ == 3 ? 1001 : 1000;
  phx_tensor in = tensor(PHX_DTYPE_F32, count);
  phx_tensor out = tensor(PHX_DTYPE_F32, count);
  ASSERT_EQ(phx_all_reduce(comm, rank_, stream_, in, out, PHX_REDUCE_SUM, nullptr), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_INVALID_ARGUMENT);
  const std::string error = phx_last_error();
  EXPECT_NE(error.find("rank"), std::string::npos) << error;
  // The ranks agreed on the failure, so the communicator still works.
  phx_tensor same_in = tensor(PHX_DTYPE_F32, 1000);
  phx_tensor same_out = tensor(PHX_DTYPE_F32, 1000);
  ASSERT_EQ(phx_all_reduce(comm, rank_, stream_, same_in, same_out, PHX_REDUCE_SUM, nullptr),
            PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
}

TEST_F(MpiComm, AMessageOfAnotherLengthFailsTheReceive) {
  phx_comm comm = mpi_comm();
  if (rank_ == 0) {
    phx_tensor ten = tensor(PHX_DTYPE_F32, 10);
    ASSERT_EQ(phx_send(comm, 0, stream_, ten, 1, nullptr), PHX_STATUS_OK);
    EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
  } else if (rank_ == 1) {
    phx_tensor twelve = tensor(PHX_DTYPE_F32, 12);
    ASSERT_EQ(phx_recv(comm, 1, stream_, twelve, 0, nullptr), PHX_STATUS_OK);
    EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_INVALID_ARGUMENT);
    const std::string error = phx_last_error();
    EXPECT_NE(error.find("40 bytes"), std::string::npos) << error;
  }
  EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
}

// Rank 3 never calls the all-reduce: the others fail with DEVICE_UNAVAILABLE after the
// timeout, not later, and the communicator then fails at once.
TEST_F(MpiComm, ARankThatDoesNotComeFailsTheOthersWithinTheTimeout) {
  constexpr uint32_t kShortMs = 2000;
  phx_comm comm = mpi_comm(kShortMs);
  if (rank_ != 3) {
    phx_tensor in = tensor(PHX_DTYPE_F32, 1000);
    phx_tensor out = tensor(PHX_DTYPE_F32, 1000);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(phx_all_reduce(comm, rank_, stream_, in, out, PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
    EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_DEVICE_UNAVAILABLE);
    const std::string error = phx_last_error();
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, std::chrono::milliseconds(kShortMs));
    EXPECT_LT(waited, std::chrono::milliseconds(kShortMs + 8000));
    EXPECT_NE(error.find("2000 ms"), std::string::npos) << error;
    EXPECT_NE(error.find("3"), std::string::npos) << error;

    const auto again = std::chrono::steady_clock::now();
    ASSERT_EQ(phx_all_reduce(comm, rank_, stream_, in, out, PHX_REDUCE_SUM, nullptr),
              PHX_STATUS_OK);
    EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_DEVICE_UNAVAILABLE);
    EXPECT_LT(std::chrono::steady_clock::now() - again, std::chrono::milliseconds(kShortMs));
  }
  EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
}

// MPI_COMM_SELF: a communicator of this process alone.
TEST_F(MpiComm, AnyIntracommunicatorServes) {
  MPI_Comm self = MPI_COMM_SELF;
  phx_comm comm = nullptr;
  ASSERT_EQ(phx_comm_create_mpi(context_, cpu_, &self, nullptr, &comm), PHX_STATUS_OK)
      << phx_last_error();
  size_t ranks = 0;
  ASSERT_EQ(phx_comm_ranks(comm, &ranks), PHX_STATUS_OK);
  EXPECT_EQ(ranks, 1u);
  const std::vector<std::byte> input = rank_input(rank_, PHX_DTYPE_F32, 1000, 11);
  phx_tensor in = tensor(PHX_DTYPE_F32, 1000, &input);
  phx_tensor out = tensor(PHX_DTYPE_F32, 1000);
  ASSERT_EQ(phx_all_reduce(comm, 0, stream_, in, out, PHX_REDUCE_SUM, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(first_difference(download(out, PHX_DTYPE_F32, 1000), input), -1);
  EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
}

// Refused before any MPI traffic, so that each process may be refused alone.
TEST_F(MpiComm, BadArgumentsAreRefused) {
  phx_comm comm = nullptr;
  EXPECT_EQ(phx_comm_create_mpi(nullptr, cpu_, nullptr, nullptr, &comm),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_comm_create_mpi(context_, cpu_, nullptr, nullptr, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_comm_create_mpi(context_, 99, nullptr, nullptr, &comm), PHX_STATUS_NOT_FOUND);
  EXPECT_NE(std::string(phx_last_error()).find("no device 99"), std::string::npos)
      << phx_last_error();
  phx_comm_options options = PHX_COMM_OPTIONS_INIT;
  options.struct_size = 0;
  EXPECT_EQ(phx_comm_create_mpi(context_, cpu_, nullptr, &options, &comm),
            PHX_STATUS_INVALID_ARGUMENT);
  MPI_Comm null = MPI_COMM_NULL;
  EXPECT_EQ(phx_comm_create_mpi(context_, cpu_, &null, nullptr, &comm),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
}

}  // namespace
}  // namespace phx_mpi_test
