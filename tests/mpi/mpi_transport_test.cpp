// The MPI transport itself (core/comm/mpi/mpi_transport.h), with its count limit lowered
// to 1000 bytes and its pieces to 256, so that sizes past MPI's int counts take the path
// of derived types with buffers of a few KiB: every entry must move the same bytes as
// with plain counts.
#include "mpi_transport.h"

#include <cstring>

#include "mpi_fixture.h"

namespace phx_mpi_test {
namespace {

constexpr phx::mpi::ByteLimits kSmallLimits{1000, 256};

class MpiTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(world_size(), kRanks) << "run with mpirun -np " << kRanks;
    rank_ = world_rank();
    MPI_Comm comm = MPI_COMM_NULL, control = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &comm), MPI_SUCCESS);
    ASSERT_EQ(MPI_Comm_dup(MPI_COMM_WORLD, &control), MPI_SUCCESS);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    transport_ = std::make_unique<phx::mpi::Transport>(comm, control, std::chrono::seconds(30),
                                                       kSmallLimits);
  }

  // Rank rank's bytes of a given size: a pattern no two ranks or offsets share.
  static std::vector<std::byte> pattern(size_t rank, size_t bytes) {
    std::vector<std::byte> values(bytes);
    for (size_t i = 0; i < bytes; ++i)
      values[i] = static_cast<std::byte>((i * 131 + rank * 71 + i / 251) & 0xff);
    return values;
  }

  size_t rank_ = 0;
  std::unique_ptr<phx::mpi::Transport> transport_;
};

// A size of whole pieces, and one with a rest; both above the count limit.
constexpr size_t kSizes[] = {1024, 2500};

TEST_F(MpiTransport, AllGatherPastTheCountLimit) {
  for (size_t bytes : kSizes) {
    const std::vector<std::byte> send = pattern(rank_, bytes);
    std::vector<std::byte> recv(bytes * kRanks), expected;
    transport_->all_gather(send.data(), recv.data(), bytes);
    for (size_t r = 0; r < kRanks; ++r) {
      const std::vector<std::byte> part = pattern(r, bytes);
      expected.insert(expected.end(), part.begin(), part.end());
    }
    EXPECT_EQ(first_difference(recv, expected), -1) << bytes;
  }
}

TEST_F(MpiTransport, AllToAllPastTheCountLimit) {
  for (size_t bytes : kSizes) {
    // Part p of rank r's send: pattern(r * kRanks + p).
    std::vector<std::byte> send, recv(bytes * kRanks), expected;
    for (size_t p = 0; p < kRanks; ++p) {
      const std::vector<std::byte> part = pattern(rank_ * kRanks + p, bytes);
      send.insert(send.end(), part.begin(), part.end());
      const std::vector<std::byte> incoming = pattern(p * kRanks + rank_, bytes);
      expected.insert(expected.end(), incoming.begin(), incoming.end());
    }
    transport_->all_to_all(send.data(), recv.data(), bytes);
    EXPECT_EQ(first_difference(recv, expected), -1) << bytes;
  }
}

TEST_F(MpiTransport, BroadcastPastTheCountLimit) {
  for (size_t bytes : kSizes) {
    std::vector<std::byte> buffer = rank_ == 1 ? pattern(1, bytes) : std::vector<std::byte>(bytes);
    transport_->broadcast(buffer.data(), bytes, 1);
    EXPECT_EQ(first_difference(buffer, pattern(1, bytes)), -1) << bytes;
  }
}

TEST_F(MpiTransport, MessagesPastTheCountLimit) {
  for (size_t bytes : kSizes) {
    const std::vector<std::byte> send = pattern(rank_, bytes);
    std::vector<std::byte> recv(bytes);
    transport_->send(send.data(), bytes, (rank_ + 1) % kRanks);
    transport_->recv(recv.data(), bytes, (rank_ + kRanks - 1) % kRanks);
    EXPECT_EQ(first_difference(recv, pattern((rank_ + kRanks - 1) % kRanks, bytes)), -1) << bytes;
  }
}

// A message past the limit is still measured in bytes, refused, and taken out of the way.
TEST_F(MpiTransport, AMessageOfAnotherLengthIsRefusedAndDiscarded) {
  const size_t next = (rank_ + 1) % kRanks, previous = (rank_ + kRanks - 1) % kRanks;
  transport_->send(pattern(rank_, 2500).data(), 2500, next);
  transport_->send(pattern(rank_, 1024).data(), 1024, next);
  std::vector<std::byte> recv(1024);
  try {
    transport_->recv(recv.data(), 1024, previous);
    ADD_FAILURE() << "a message of 2500 bytes was received as 1024";
  } catch (const phx::Error& e) {
    EXPECT_EQ(e.status(), PHX_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("2500 bytes"), std::string::npos) << e.what();
  }
  transport_->recv(recv.data(), 1024, previous);
  EXPECT_EQ(first_difference(recv, pattern(previous, 1024)), -1);
}

}  // namespace
}  // namespace phx_mpi_test
