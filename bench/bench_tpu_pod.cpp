// A sharded matmul on a pod of simulated TPU chips (issue 18): Y = X W, X [M, K], W [K, N],
// bf16 in and out, on one v5p chip and column split over a ring of four
// (PHX_TPU_SIM=generation=v5p,chips=4,topology=4x1x1, set here before the context is made).
// Chip r holds X and W's columns r N/4 .. (r+1) N/4 - 1; it computes its Y_r = X W_r in
// kTiles row tiles, and each tile is all-gathered as soon as it is computed, so that every
// chip ends with all of Y (rank-major: [4, M / kTiles, N / 4] per tile, the bytes a
// gather along the columns moves).
//
// The simulated times come from the profile records: each matmul's and each collective's
// estimated_time_ns (the timing model and the interconnect model, docs/tpu-sim.md). Prints
// the step time on one chip, on four without and with overlapping a tile's gather with the
// next tile's matmul (step_time.h), the speedups, and the wall-clock time the simulator
// takes for each (the benchmarks' real time; the median of repetitions).
//   bench_tpu_pod [--benchmark_repetitions=3 ...]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.h"
#include "step_time.h"

namespace {

using phx_bench::check;

constexpr size_t kChips = 4;
constexpr int64_t kM = 4096, kK = 4096, kN = 4096;
constexpr int64_t kTiles = 8;
constexpr int64_t kTileRows = kM / kTiles, kColumns = kN / static_cast<int64_t>(kChips);

struct Pod {
  phx_context context = nullptr;
  std::vector<size_t> chips;
};

// The context sees the pod only if PHX_TPU_SIM is set when it is made.
Pod open_pod() {
  setenv("PHX_TPU_SIM", "generation=v5p,chips=4,topology=4x1x1", 1);
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.flags = PHX_CONTEXT_PROFILE;  // the records carry the modelled times
  Pod pod;
  check(phx_context_create(&options, &pod.context), "phx_context_create");
  size_t count = 0;
  check(phx_device_count(pod.context, &count), "phx_device_count");
  for (size_t d = 0; d < count; ++d) {
    phx_device_info info{};  // not PHX_DEVICE_INFO_INIT: see open_cpu_device
    info.struct_size = sizeof info;
    check(phx_device_get(pod.context, d, &info), "phx_device_get");
    if (std::strcmp(info.plugin, "tpu-sim") == 0) pod.chips.push_back(d);
  }
  if (pod.chips.size() != kChips) {
    std::fprintf(stderr, "bench: needs the tpu-sim plugin's 4 chips (phx-devices --plugins)\n");
    std::exit(1);
  }
  return pod;
}

// A bf16 tensor of value (exact in bf16) on a chip.
phx_tensor bf16(const Pod& pod, size_t chip, int64_t rows, int64_t columns, float value) {
  const int64_t shape[2] = {rows, columns};
  phx_tensor t = nullptr;
  check(phx_tensor_create(pod.context, chip, PHX_DTYPE_BF16, 2, shape, &t), "phx_tensor_create");
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const std::vector<uint16_t> data(static_cast<size_t>(rows * columns), uint16_t(bits >> 16));
  check(phx_tensor_upload(t, 0, data.data(), data.size() * 2), "phx_tensor_upload");
  return t;
}

void matmul(phx_stream stream, phx_tensor a, phx_tensor b, phx_tensor c) {
  const phx_tensor inputs[2] = {a, b};
  const phx_op_desc desc = phx_bench::op_desc(PHX_OP_MATMUL, inputs, 2, &c);
  check(phx_op_run(stream, &desc, nullptr), "phx_op_run");
}

double estimated_ns(const phx_profile_record& record) {
  for (size_t i = 0; i < record.metric_count; ++i)
    if (std::strcmp(record.metrics[i].name, "estimated_time_ns") == 0)
      return record.metrics[i].value;
  std::fprintf(stderr, "bench: a record without estimated_time_ns: %s\n", record.signature);
  std::exit(1);
}

// The simulated figures of the last run of each benchmark.
struct Simulated {
  double one_chip_ns = 0;
  std::vector<phx_bench::TileTimes> tiles;  // per tile, the slowest chip's
} simulated;

void BM_one_chip(benchmark::State& state, const Pod* pod) {
  const size_t chip = pod->chips[0];
  phx_stream stream = nullptr;
  check(phx_stream_create(pod->context, chip, &stream), "phx_stream_create");
  phx_tensor x = bf16(*pod, chip, kM, kK, 0.5f), w = bf16(*pod, chip, kK, kN, 0.25f);
  phx_tensor y = bf16(*pod, chip, kM, kN, 0.0f);
  for (auto _ : state) {
    check(phx_profile_clear(stream), "phx_profile_clear");
    matmul(stream, x, w, y);
    check(phx_stream_synchronize(stream), "phx_stream_synchronize");
  }
  phx_profile_record record = PHX_PROFILE_RECORD_INIT;
  check(phx_profile_get(stream, 0, &record), "phx_profile_get");
  simulated.one_chip_ns = estimated_ns(record);
  state.counters["simulated_step_us"] = simulated.one_chip_ns / 1e3;
  for (phx_tensor t : {x, w, y}) phx_tensor_destroy(t);
  phx_stream_destroy(stream);
}

void BM_four_chips(benchmark::State& state, const Pod* pod) {
  phx_comm comm = nullptr;
  check(phx_comm_create(pod->context, pod->chips.data(), kChips, nullptr, &comm), "comm_create");
  struct Chip {
    phx_stream stream = nullptr;
    phx_tensor w = nullptr;
    std::vector<phx_tensor> x, y, gathered;  // per tile
  };
  std::vector<Chip> chips(kChips);
  for (size_t r = 0; r < kChips; ++r) {
    const size_t device = pod->chips[r];
    Chip& chip = chips[r];
    check(phx_stream_create(pod->context, device, &chip.stream), "phx_stream_create");
    chip.w = bf16(*pod, device, kK, kColumns, 0.25f);
    for (int64_t t = 0; t < kTiles; ++t) {
      chip.x.push_back(bf16(*pod, device, kTileRows, kK, 0.5f));
      chip.y.push_back(bf16(*pod, device, kTileRows, kColumns, 0.0f));
      chip.gathered.push_back(
          bf16(*pod, device, static_cast<int64_t>(kChips) * kTileRows, kColumns, 0.0f));
    }
  }
  for (auto _ : state) {
    for (Chip& chip : chips) check(phx_profile_clear(chip.stream), "phx_profile_clear");
    // One thread drives every chip: each tile's matmul on every chip, then its gather.
    for (int64_t t = 0; t < kTiles; ++t) {
      for (Chip& chip : chips) matmul(chip.stream, chip.x[size_t(t)], chip.w, chip.y[size_t(t)]);
      for (size_t r = 0; r < kChips; ++r)
        check(phx_all_gather(comm, r, chips[r].stream, chips[r].y[size_t(t)],
                             chips[r].gathered[size_t(t)], nullptr),
              "phx_all_gather");
    }
    for (Chip& chip : chips) check(phx_stream_synchronize(chip.stream), "phx_stream_synchronize");
  }
  // Each stream's records in submission order: the matmuls' (op MATMUL) and the
  // gathers' (op INVALID, a collective).
  simulated.tiles.assign(size_t(kTiles), {});
  for (Chip& chip : chips) {
    size_t count = 0, ops = 0, gathers = 0;
    check(phx_profile_count(chip.stream, &count), "phx_profile_count");
    for (size_t i = 0; i < count; ++i) {
      phx_profile_record record = PHX_PROFILE_RECORD_INIT;
      check(phx_profile_get(chip.stream, i, &record), "phx_profile_get");
      const bool is_op = record.op == PHX_OP_MATMUL;
      phx_bench::TileTimes& tile = simulated.tiles.at(is_op ? ops++ : gathers++);
      double& figure = is_op ? tile.op_ns : tile.comm_ns;
      figure = std::max(figure, estimated_ns(record));
    }
  }
  state.counters["simulated_step_us"] = phx_bench::step_time_ns(simulated.tiles, true) / 1e3;
  for (Chip& chip : chips) {
    phx_tensor_destroy(chip.w);
    for (auto* tiles : {&chip.x, &chip.y, &chip.gathered})
      for (phx_tensor t : *tiles) phx_tensor_destroy(t);
    phx_stream_destroy(chip.stream);
  }
  phx_comm_destroy(comm);
}

}  // namespace

int main(int argc, char** argv) {
  const Pod pod = open_pod();
  benchmark::RegisterBenchmark("sharded_matmul/one_chip", BM_one_chip, &pod)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("sharded_matmul/four_chips", BM_four_chips, &pod)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::Initialize(&argc, argv);
  // It keeps the medians of repetitions, which bench/run.sh reports alone.
  phx_bench::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  if (simulated.one_chip_ns > 0 && !simulated.tiles.empty()) {
    double op = 0, comm = 0;
    for (const phx_bench::TileTimes& tile : simulated.tiles) op += tile.op_ns, comm += tile.comm_ns;
    const double sequential = phx_bench::step_time_ns(simulated.tiles, false);
    const double overlapped = phx_bench::step_time_ns(simulated.tiles, true);
    std::printf("simulated v5p, %lldx%lldx%lld bf16 matmul, %lld tiles of %lld rows per chip:\n",
                static_cast<long long>(kM), static_cast<long long>(kK), static_cast<long long>(kN),
                static_cast<long long>(kTiles), static_cast<long long>(kTileRows));
    std::printf("  one chip: %.1f us\n", simulated.one_chip_ns / 1e3);
    std::printf("  four chips: matmuls %.1f us per chip, all-gathers %.1f us\n", op / 1e3,
                comm / 1e3);
    std::printf("  four chips, no overlap: %.1f us (speedup %.2f)\n", sequential / 1e3,
                simulated.one_chip_ns / sequential);
    std::printf("  four chips, gather overlapped with the next tile: %.1f us (speedup %.2f)\n",
                overlapped / 1e3, simulated.one_chip_ns / overlapped);
  }
  for (const char* name : {"sharded_matmul/one_chip", "sharded_matmul/four_chips"}) {
    // RecordingReporter's key: the name, "/", the arguments (none here).
    if (const auto* run = reporter.find(std::string(name) + "/"))
      std::printf("wall-clock time to simulate %s: %.0f ms\n", name, run->GetAdjustedRealTime());
  }
  phx_context_destroy(pod.context);
  benchmark::Shutdown();
  return 0;
}
