// phx_comm_create_mpi before MPI_Init, at a thread level too low, and after
// MPI_Finalize: refused with INVALID_ARGUMENT and a message saying what is needed. A
// process of its own (no mpirun: MPI starts it as a singleton), as MPI is initialized
// once per process.
#include <gtest/gtest.h>
#include <mpi.h>
#include <phynexus/comm_mpi.h>

#include <string>

namespace {

bool error_says(const char* words) {
  return std::string(phx_last_error()).find(words) != std::string::npos;
}

TEST(MpiArguments, RefusedUnlessMpiRunsAtSerializedOrAbove) {
  const char* plugins[] = {PHX_TEST_CPU_PLUGIN};
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = plugins;
  options.plugin_path_count = 1;
  options.use_default_search_path = 0;
  phx_context context = nullptr;
  ASSERT_EQ(phx_context_create(&options, &context), PHX_STATUS_OK) << phx_last_error();
  phx_comm comm = nullptr;

  EXPECT_EQ(phx_comm_create_mpi(context, 0, nullptr, nullptr, &comm), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_says("MPI is not initialized")) << phx_last_error();

  int provided = 0;
  ASSERT_EQ(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), MPI_SUCCESS);
  if (provided < MPI_THREAD_SERIALIZED) {
    EXPECT_EQ(phx_comm_create_mpi(context, 0, nullptr, nullptr, &comm),
              PHX_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(error_says("MPI_THREAD_SERIALIZED")) << phx_last_error();
  }
  ASSERT_EQ(MPI_Finalize(), MPI_SUCCESS);

  EXPECT_EQ(phx_comm_create_mpi(context, 0, nullptr, nullptr, &comm), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(error_says("finalized")) << phx_last_error();
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

}  // namespace
