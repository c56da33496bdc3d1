// A rank that dies: after one all-reduce together, rank 3 ends its process without a
// word (_exit, no MPI_Finalize), and the others' next all-reduce must fail with
// DEVICE_UNAVAILABLE within the communicator's timeout, never hang. ctest runs it with
// `mpirun --mca orte_abort_on_non_zero_status 0`, so that mpirun lets the others go on.
#include <unistd.h>

#include <chrono>
#include <string>

#include "mpi_fixture.h"

namespace phx_mpi_test {
namespace {

using MpiRankDies = MpiFixture;

TEST_F(MpiRankDies, TheOthersFailWithinTheTimeout) {
  constexpr uint32_t kShortMs = 2000;
  phx_comm comm = mpi_comm(kShortMs);
  phx_tensor in = tensor(PHX_DTYPE_F32, 4096);
  phx_tensor out = tensor(PHX_DTYPE_F32, 4096);
  ASSERT_EQ(phx_all_reduce(comm, rank_, stream_, in, out, PHX_REDUCE_SUM, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
  if (rank_ == 3) _exit(3);

  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(phx_all_reduce(comm, rank_, stream_, in, out, PHX_REDUCE_SUM, nullptr), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_DEVICE_UNAVAILABLE);
  const std::string error = phx_last_error();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(kShortMs + 8000));
  EXPECT_NE(error.find("MPI"), std::string::npos) << error;
  EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
}

}  // namespace
}  // namespace phx_mpi_test
