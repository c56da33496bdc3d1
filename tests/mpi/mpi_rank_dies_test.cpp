// A rank that dies: after one all-reduce together, rank 3 ends its process without a
// word (_exit, no MPI_Finalize), and the others' next all-reduce must fail with
// DEVICE_UNAVAILABLE within the communicator's timeout, never hang. ctest runs it with
// `mpirun --mca orte_abort_on_non_zero_status 0`, so that mpirun lets the others go on.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "mpi_fixture.h"

namespace phx_mpi_test {
namespace {

using MpiRankDies = MpiFixture;

TEST_F(MpiRankDies, TheOthersFailWithinTheTimeout) {
  constexpr uint32_t kShortMs = 2000;
  // The survivors' own communicator, made while every rank lives: their verdict travels
  // on it once rank 3 is gone.
  MPI_Comm survivors = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank_ == 3 ? MPI_UNDEFINED : 0, static_cast<int>(rank_),
                 &survivors);
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
  // MPI_Finalize waits for every process, the dead one too, and Open MPI 4.1 may wait for
  // it forever; mpiexec then fails the job for the ranks that end without it. So rank 0
  // prints the survivors' verdict, which ctest looks for, and they end here.
  int failed = HasFailure() ? 1 : 0, any_failed = 1;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, survivors);
  if (rank_ == 0) std::printf(any_failed ? "some survivor failed\n" : "all 3 survivors passed\n");
  std::fflush(stdout);
  MPI_Barrier(survivors);  // nobody ends, and makes mpiexec stop the job, before that line
  _exit(any_failed);
}

}  // namespace
}  // namespace phx_mpi_test
