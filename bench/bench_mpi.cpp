// Communicators across processes (comm_mpi.h): all_reduce (sum, f32) of 64 MiB over the
// processes of MPI_COMM_WORLD, each on its CPU device, through phx_all_reduce on a
// communicator of phx_comm_create_mpi, against MPI_Allreduce on the same buffers (the
// tensors' own host memory) in the same run. Run under mpirun, 4 ranks as issue 18 asks:
//   mpirun -np 4 --oversubscribe build/bin/bench_mpi     (as root add --allow-run-as-root)
// Every iteration starts together (MPI_Barrier) and lasts as long as its slowest rank (the
// manual time); the iteration count is fixed, so that every rank runs as many. bus_GBps is
// NCCL's bus bandwidth, 2 (R - 1) / R * bytes / time. Rank 0 prints the tables and the
// ratio of the two bus bandwidths (issue 18 asks MPI_Allreduce's / phx_all_reduce's <= 1.2).
#include <mpi.h>
#include <phynexus/comm_mpi.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"

namespace {

using phx_bench::check;

constexpr int64_t kElements = int64_t{16} << 20;  // 64 MiB of f32
constexpr size_t kBytes = static_cast<size_t>(kElements) * sizeof(float);
constexpr int kIterations = 8;

struct Setup {
  phx_bench::CpuDevice cpu = phx_bench::open_cpu_device(phx_bench::bench_threads());
  size_t rank = 0;
  size_t ranks = 0;
  phx_comm comm = nullptr;
  phx_tensor send = nullptr;
  phx_tensor recv = nullptr;
  float* send_host = nullptr;
  float* recv_host = nullptr;

  Setup() {
    check(phx_comm_create_mpi(cpu.context, cpu.device, nullptr, nullptr, &comm),
          "phx_comm_create_mpi");
    check(phx_comm_ranks(comm, &ranks), "phx_comm_ranks");
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    rank = static_cast<size_t>(world_rank);
    check(phx_tensor_create(cpu.context, cpu.device, PHX_DTYPE_F32, 1, &kElements, &send), "send");
    check(phx_tensor_create(cpu.context, cpu.device, PHX_DTYPE_F32, 1, &kElements, &recv), "recv");
    void* data = nullptr;
    check(phx_tensor_host_data(send, &data), "phx_tensor_host_data");
    send_host = static_cast<float*>(data);
    check(phx_tensor_host_data(recv, &data), "phx_tensor_host_data");
    recv_host = static_cast<float*>(data);
    for (int64_t i = 0; i < kElements; ++i)
      send_host[i] = static_cast<float>((i + static_cast<int64_t>(rank)) % 1000) * 0.25f;
    std::memset(recv_host, 0, kBytes);
  }
  ~Setup() {
    phx_tensor_destroy(send);
    phx_tensor_destroy(recv);
    phx_comm_destroy(comm);
    phx_bench::close_cpu_device(cpu);
  }

  void phx_reduce() {
    check(phx_all_reduce(comm, rank, cpu.stream, send, recv, PHX_REDUCE_SUM, nullptr),
          "phx_all_reduce");
    check(phx_stream_synchronize(cpu.stream), "phx_stream_synchronize");
  }
  void mpi_reduce() {
    if (MPI_Allreduce(send_host, recv_host, static_cast<int>(kElements), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD) != MPI_SUCCESS) {
      std::fprintf(stderr, "bench: MPI_Allreduce failed\n");
      std::exit(1);
    }
  }
};

double bus_factor(size_t ranks) {
  return 2.0 * static_cast<double>(ranks - 1) / static_cast<double>(ranks);
}

// Times reduce as described at the top. MPI calls of the program's own (the barrier, the
// maximum) come only between collectives: MPI_THREAD_SERIALIZED allows no overlap with the
// communicator's, which its stream's thread makes.
template <typename Reduce>
void time_iterations(benchmark::State& state, const Setup& setup, Reduce reduce) {
  for (auto _ : state) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    reduce();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double slowest = 0;
    MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    state.SetIterationTime(slowest);
  }
  state.counters["bus_GBps"] = benchmark::Counter(
      bus_factor(setup.ranks) * kBytes * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

void BM_phx_all_reduce(benchmark::State& state, Setup* setup) {
  time_iterations(state, *setup, [setup] { setup->phx_reduce(); });
}

void BM_MPI_Allreduce(benchmark::State& state, Setup* setup) {
  time_iterations(state, *setup, [setup] { setup->mpi_reduce(); });
}

// The reporter of the ranks other than 0: they run every benchmark with rank 0 and print
// nothing.
class Silent : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Only rank 0 writes --benchmark_out: the others would write the same file at once.
  if (rank != 0) {
    int kept = 1;
    for (int i = 1; i < argc; ++i)
      if (std::strncmp(argv[i], "--benchmark_out", 15) != 0) argv[kept++] = argv[i];
    argc = kept;
  }
  benchmark::Initialize(&argc, argv);
  {
    Setup setup;
    // The first of each touches every page and sets the transport up, outside the timing.
    setup.phx_reduce();
    setup.mpi_reduce();
    const std::string suffix = "/ranks:" + std::to_string(setup.ranks) + "/64MiB";
    for (auto* benchmark : {benchmark::RegisterBenchmark(("phx_all_reduce" + suffix).c_str(),
                                                         BM_phx_all_reduce, &setup),
                            benchmark::RegisterBenchmark(("MPI_Allreduce" + suffix).c_str(),
                                                         BM_MPI_Allreduce, &setup)})
      benchmark->Iterations(kIterations)->UseManualTime()->Unit(benchmark::kMillisecond);
    if (rank == 0) {
      // With repetitions, the medians (as bench/run.sh asks for aggregates only).
      phx_bench::RecordingReporter reporter;
      benchmark::RunSpecifiedBenchmarks(&reporter);
      const auto* phx_run = reporter.find("phx_all_reduce" + suffix + "/");
      const auto* mpi_run = reporter.find("MPI_Allreduce" + suffix + "/");
      if (phx_run != nullptr && mpi_run != nullptr) {
        const double phx_ms = phx_run->GetAdjustedRealTime();
        const double mpi_ms = mpi_run->GetAdjustedRealTime();
        const double to_gbps = bus_factor(setup.ranks) * kBytes / 1e6;  // bytes / ms -> GB/s
        std::printf(
            "bus bandwidth over %zu ranks: phx_all_reduce %.2f GB/s, MPI_Allreduce %.2f GB/s; "
            "MPI_Allreduce / phx_all_reduce = %.2f (issue 18 asks <= 1.2)\n",
            setup.ranks, to_gbps / phx_ms, to_gbps / mpi_ms, phx_ms / mpi_ms);
      }
    } else {
      Silent silent;
      benchmark::RunSpecifiedBenchmarks(&silent);
    }
  }
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
