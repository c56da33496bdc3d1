// Many devices in one process (comm.h), each against a reference in the same run:
// - all_reduce (sum, f32) of 64 MiB over 4 ranks on the CPU device, whose memory the
//   collective reads and writes in place, over 4 CPU devices (PHX_CPU_DEVICES=4, the same
//   memory, a device per rank) and over 4 simulated TPU chips (host memory
//   behind the plugin's buffer_read and buffer_write), against one memcpy of the same
//   64 MiB. The counter bus_GBps is NCCL's bus bandwidth, 2 (R - 1) / R * bytes / time,
//   the figure issue 18 compares with memcpy's bytes / time (memcpy_GBps).
// - an upload of 64 MiB to the simulated TPU while the CPU device runs matmuls: the
//   upload blocking after the matmuls (sequential), and asynchronous on a stream of its
//   own while the caller drives the matmuls (overlapped). overlap is sequential time over
//   overlapped time: 1 without overlap, up to 2 when both halves take as long.
// - a copy of 64 MiB from the CPU device to the simulated TPU (two plugins: through host
//   memory, a chunk's write beside the next one's read), against memcpy (copy_GBps).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_common.h"

namespace {

using phx_bench::check;

constexpr size_t kRanks = 4;
constexpr int64_t kElements = int64_t{16} << 20;  // 64 MiB of f32
constexpr size_t kBytes = static_cast<size_t>(kElements) * sizeof(float);

void BM_memcpy(benchmark::State& state) {
  std::vector<char> src(kBytes, 1), dst(kBytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.counters["memcpy_GBps"] = benchmark::Counter(
      static_cast<double>(kBytes) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
}

// Four ranks on devices (the CPU device four times, or four simulated TPU chips).
void BM_all_reduce(benchmark::State& state, phx_context context, std::vector<size_t> devices) {
  phx_comm comm = nullptr;
  check(phx_comm_create(context, devices.data(), kRanks, nullptr, &comm), "phx_comm_create");
  std::vector<phx_stream> streams(kRanks);
  std::vector<phx_tensor> tensors(kRanks);
  const std::vector<float> ones(static_cast<size_t>(kElements), 1.0f);
  for (size_t r = 0; r < kRanks; ++r) {
    check(phx_stream_create(context, devices[r], &streams[r]), "phx_stream_create");
    check(phx_tensor_create(context, devices[r], PHX_DTYPE_F32, 1, &kElements, &tensors[r]),
          "phx_tensor_create");
    check(phx_tensor_upload(tensors[r], 0, ones.data(), kBytes), "phx_tensor_upload");
  }
  for (auto _ : state) {
    for (size_t r = 0; r < kRanks; ++r)
      check(phx_all_reduce(comm, r, streams[r], tensors[r], tensors[r], PHX_REDUCE_SUM, nullptr),
            "phx_all_reduce");
    for (phx_stream stream : streams) check(phx_stream_synchronize(stream), "synchronize");
  }
  state.counters["bus_GBps"] =
      benchmark::Counter(2.0 * (kRanks - 1) / kRanks * static_cast<double>(kBytes) *
                             static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
  for (size_t r = 0; r < kRanks; ++r) {
    phx_tensor_destroy(tensors[r]);
    phx_stream_destroy(streams[r]);
  }
  phx_comm_destroy(comm);
}

// The matmuls the CPU device runs beside the upload: about as long as the upload.
struct Overlap {
  phx_bench::CpuAndDevice devices = phx_bench::open_cpu_and_device("tpu-sim");
  phx_stream upload_stream = nullptr;
  phx_tensor a = nullptr, c = nullptr, target = nullptr;
  std::vector<float> host = std::vector<float>(static_cast<size_t>(kElements), 0.5f);
  int matmuls = 4;

  Overlap() {
    const int64_t square[2] = {512, 512};
    check(phx_tensor_create(devices.context, devices.cpu, PHX_DTYPE_F32, 2, square, &a), "a");
    check(phx_tensor_create(devices.context, devices.cpu, PHX_DTYPE_F32, 2, square, &c), "c");
    check(phx_tensor_create(devices.context, devices.device, PHX_DTYPE_F32, 1, &kElements, &target),
          "target");
    check(phx_stream_create(devices.context, devices.device, &upload_stream), "stream");
  }
  void run_matmuls() {
    const phx_tensor inputs[2] = {a, a};
    const phx_op_desc desc = phx_bench::op_desc(PHX_OP_MATMUL, inputs, 2, &c);
    for (int i = 0; i < matmuls; ++i) check(phx_op_run(devices.cpu_stream, &desc, nullptr), "mm");
    check(phx_stream_synchronize(devices.cpu_stream), "synchronize");
  }
};

void BM_upload_sequential(benchmark::State& state, Overlap* o) {
  for (auto _ : state) {
    o->run_matmuls();
    check(phx_tensor_upload(o->target, 0, o->host.data(), kBytes), "upload");
  }
}

void BM_upload_overlapped(benchmark::State& state, Overlap* o) {
  for (auto _ : state) {
    uint64_t ticket = 0;
    check(phx_tensor_upload_async(o->upload_stream, o->target, 0, o->host.data(), kBytes, &ticket),
          "upload_async");
    o->run_matmuls();
    check(phx_stream_wait(o->upload_stream, ticket), "wait");
  }
}

void BM_copy_cpu_to_tpu(benchmark::State& state, Overlap* o) {
  phx_tensor source = nullptr;
  check(
      phx_tensor_create(o->devices.context, o->devices.cpu, PHX_DTYPE_F32, 1, &kElements, &source),
      "source");
  check(phx_tensor_upload(source, 0, o->host.data(), kBytes), "upload");
  for (auto _ : state) check(phx_tensor_copy(o->target, source), "copy");
  state.counters["copy_GBps"] = benchmark::Counter(
      static_cast<double>(kBytes) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
  phx_tensor_destroy(source);
}

// A context made with variable set to value, and the devices of plugin in it.
phx_context context_with(const char* variable, const char* value, const char* plugin,
                         std::vector<size_t>& devices) {
  setenv(variable, value, 1);
  phx_context context = nullptr;
  check(phx_context_create(nullptr, &context), "phx_context_create");
  unsetenv(variable);
  size_t count = 0;
  check(phx_device_count(context, &count), "phx_device_count");
  for (size_t d = 0; d < count; ++d) {
    phx_device_info info{};  // not PHX_DEVICE_INFO_INIT: see bench_common.h
    info.struct_size = sizeof info;
    check(phx_device_get(context, d, &info), "phx_device_get");
    if (std::strcmp(info.plugin, plugin) == 0) devices.push_back(d);
  }
  return context;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  phx_bench::CpuDevice cpu = phx_bench::open_cpu_device(phx_bench::bench_threads());
  Overlap overlap;
  benchmark::RegisterBenchmark("memcpy/64MiB", BM_memcpy)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("all_reduce/cpu_x4/64MiB", BM_all_reduce, cpu.context,
                               std::vector<size_t>(kRanks, cpu.device))
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  // Four CPU devices (PHX_CPU_DEVICES=4: the host shown as four devices, read and written
  // in place), and four simulated TPU chips (memory of the host's, but reached through the
  // plugin's buffer_read and buffer_write: a simulated device lends no host address).
  std::vector<size_t> cpus, chips;
  phx_context four_cpus = context_with("PHX_CPU_DEVICES", "4", "cpu", cpus);
  phx_context pod = context_with("PHX_TPU_SIM", "chips=4", "tpu-sim", chips);
  if (cpus.size() == kRanks)
    benchmark::RegisterBenchmark("all_reduce/cpu_devices_x4/64MiB", BM_all_reduce, four_cpus, cpus)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  if (chips.size() == kRanks)
    benchmark::RegisterBenchmark("all_reduce/tpu_sim_chips_x4/64MiB", BM_all_reduce, pod, chips)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  benchmark::RegisterBenchmark("upload_64MiB_and_matmuls/sequential", BM_upload_sequential,
                               &overlap)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("upload_64MiB_and_matmuls/overlapped", BM_upload_overlapped,
                               &overlap)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("copy_64MiB/cpu_to_tpu_sim", BM_copy_cpu_to_tpu, &overlap)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  phx_bench::BestTimeReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  // Every benchmark reports in milliseconds; only ratios are printed.
  auto best = [&](const char* name) { return reporter.best.count(name) ? reporter.best[name] : 0; };
  const double memcpy_s = best("memcpy/64MiB");
  const double reduce_s = best("all_reduce/cpu_x4/64MiB");
  const double chips_s = best("all_reduce/tpu_sim_chips_x4/64MiB");
  const double cpus_s = best("all_reduce/cpu_devices_x4/64MiB");
  const double sequential_s = best("upload_64MiB_and_matmuls/sequential");
  const double overlapped_s = best("upload_64MiB_and_matmuls/overlapped");
  const double copy_s = best("copy_64MiB/cpu_to_tpu_sim");
  if (memcpy_s > 0 && reduce_s > 0)
    std::printf("all_reduce bus bandwidth / memcpy bandwidth: %.2f (issue 18 asks >= 0.5)\n",
                (2.0 * (kRanks - 1) / kRanks / reduce_s) / (1.0 / memcpy_s));
  if (memcpy_s > 0 && cpus_s > 0)
    std::printf(
        "all_reduce over 4 CPU devices (PHX_CPU_DEVICES=4), bus bandwidth / memcpy: "
        "%.2f (issue 18 asks >= 0.5)\n",
        (2.0 * (kRanks - 1) / kRanks / cpus_s) / (1.0 / memcpy_s));
  if (memcpy_s > 0 && chips_s > 0)
    std::printf("all_reduce over 4 simulated TPU chips, bus bandwidth / memcpy: %.2f\n",
                (2.0 * (kRanks - 1) / kRanks / chips_s) / (1.0 / memcpy_s));
  if (sequential_s > 0 && overlapped_s > 0)
    std::printf("upload overlap: sequential / overlapped = %.2f\n", sequential_s / overlapped_s);
  if (memcpy_s > 0 && copy_s > 0)
    std::printf("copy between plugins / memcpy bandwidth: %.2f\n", memcpy_s / copy_s);
  check(phx_context_destroy(pod), "phx_context_destroy");
  check(phx_context_destroy(four_cpus), "phx_context_destroy");
  phx_bench::close_cpu_device(cpu);
  return 0;
}
