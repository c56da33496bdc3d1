// What the benchmark programs share: the CPU device reached through the C API (alone, or
// beside a device of another plugin to compare with it), tensors that free themselves,
// reporters that print as usual and keep the results for the summary each program prints
// at the end, and the run and close of a program that compares a device with the CPU.
#pragma once

#include <benchmark/benchmark.h>
#include <phynexus/phynexus.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace phx_bench {

// A benchmark that cannot set up has nothing to measure: report and stop.
inline void check(phx_status status, const char* what) {
  if (status != PHX_STATUS_OK) {
    std::fprintf(stderr, "bench: %s: %s: %s\n", what, phx_status_name(status), phx_last_error());
    std::exit(1);
  }
}

// The threads every library computes with: PHX_BENCH_THREADS, else one per hardware
// thread, so that the CPU plugin and OpenBLAS are compared on equal terms.
inline unsigned bench_threads() {
  const char* text = std::getenv("PHX_BENCH_THREADS");
  if (text != nullptr && std::atoi(text) > 0) return static_cast<unsigned>(std::atoi(text));
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? hardware : 1;
}

// One context and one stream on the first CPU device of the default search path.
struct CpuDevice {
  phx_context context = nullptr;
  size_t device = 0;
  phx_stream stream = nullptr;
  std::string name;
  std::string isa;  // the device's "isa" property, when it has one
};

inline CpuDevice open_cpu_device(unsigned threads) {
  // PHX_NUM_THREADS overrides the option: set it too, so that a value inherited from the
  // shell cannot make the comparison uneven.
  setenv("PHX_NUM_THREADS", std::to_string(threads).c_str(), 1);
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.num_threads = threads;
  CpuDevice cpu;
  check(phx_context_create(&options, &cpu.context), "phx_context_create");
  size_t count = 0;
  check(phx_device_count(cpu.context, &count), "phx_device_count");
  for (size_t i = 0; i < count; ++i) {
    // Not PHX_DEVICE_INFO_INIT: -Wextra flags the members it leaves out.
    phx_device_info info{};
    info.struct_size = sizeof info;
    check(phx_device_get(cpu.context, i, &info), "phx_device_get");
    if (info.type != PHX_DEVICE_CPU || std::strcmp(info.plugin, "cpu") != 0) continue;
    cpu.device = i;
    cpu.name = info.name;
    for (size_t p = 0; p < info.property_count; ++p) {
      if (std::strcmp(info.properties[p].key, "isa") == 0) cpu.isa = info.properties[p].value;
    }
    check(phx_stream_create(cpu.context, i, &cpu.stream), "phx_stream_create");
    return cpu;
  }
  std::fprintf(stderr, "bench: the CPU plugin offers no device (try phx-devices --plugins)\n");
  std::exit(1);
}

inline void close_cpu_device(CpuDevice& cpu) {
  check(phx_stream_destroy(cpu.stream), "phx_stream_destroy");
  check(phx_context_destroy(cpu.context), "phx_context_destroy");
}

// One context with a stream on the first device of the cpu plugin and on the first of
// another plugin (a simulator), to time one against the other in one run.
struct CpuAndDevice {
  phx_context context = nullptr;
  size_t cpu = 0, device = 0;
  phx_stream cpu_stream = nullptr, device_stream = nullptr;
};

inline CpuAndDevice open_cpu_and_device(const char* plugin) {
  CpuAndDevice made;
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  check(phx_context_create(&options, &made.context), "phx_context_create");
  size_t count = 0;
  check(phx_device_count(made.context, &count), "phx_device_count");
  bool found_cpu = false, found_device = false;
  for (size_t i = 0; i < count; ++i) {
    phx_device_info info{};  // not PHX_DEVICE_INFO_INIT: see open_cpu_device
    info.struct_size = sizeof info;
    check(phx_device_get(made.context, i, &info), "phx_device_get");
    if (!found_cpu && std::strcmp(info.plugin, "cpu") == 0) made.cpu = i, found_cpu = true;
    if (!found_device && std::strcmp(info.plugin, plugin) == 0)
      made.device = i, found_device = true;
  }
  if (!found_cpu || !found_device) {
    std::fprintf(stderr, "bench: needs the cpu and %s plugins (phx-devices --plugins)\n", plugin);
    std::exit(1);
  }
  check(phx_stream_create(made.context, made.cpu, &made.cpu_stream), "phx_stream_create");
  check(phx_stream_create(made.context, made.device, &made.device_stream), "phx_stream_create");
  return made;
}

// A tensor destroyed with its owner.
class Tensor {
 public:
  Tensor(const CpuDevice& cpu, phx_dtype dtype, std::vector<int64_t> shape) {
    check(phx_tensor_create(cpu.context, cpu.device, dtype, shape.size(), shape.data(), &handle_),
          "phx_tensor_create");
  }
  ~Tensor() { phx_tensor_destroy(handle_); }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  phx_tensor get() const { return handle_; }

 private:
  phx_tensor handle_ = nullptr;
};

// The arithmetic intensity of an N x N product as the counter "FLOP/byte", which phx-plot
// roofline places the benchmark by: 2 N^3 FLOP over the least traffic, each input read and
// the output written once.
inline void set_gemm_intensity(benchmark::State& state, int64_t n, phx_dtype input,
                               phx_dtype output) {
  const double bytes = static_cast<double>(n) * static_cast<double>(n) *
                       static_cast<double>(2 * phx_dtype_size(input) + phx_dtype_size(output));
  state.counters["FLOP/byte"] = 2.0 * static_cast<double>(n) * n * n / bytes;
}

inline phx_op_desc op_desc(phx_op_id op, const phx_tensor* inputs, size_t input_count,
                           const phx_tensor* output) {
  phx_op_desc desc{};
  desc.struct_size = sizeof desc;
  desc.op = op;
  desc.inputs = inputs;
  desc.input_count = input_count;
  desc.outputs = output;
  desc.output_count = 1;
  return desc;
}

// Prints like the console reporter and keeps each benchmark's result, by
// "<name>/<argument>" (e.g. "gemm_f32_openblas/512"). With repetitions, the median.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  // Colors only on a terminal, so that a log or a pipe gets plain text.
  RecordingReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_Defaults : OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type != Run::RT_Iteration && !median) continue;
      results_[run.run_name.function_name + "/" + run.run_name.args] = run;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  const Run* find(const std::string& name) const {
    auto it = results_.find(name);
    return it == results_.end() ? nullptr : &it->second;
  }

  // A counter of a result; negative when the benchmark did not run (filtered out, or
  // failed).
  double counter(const std::string& name, const std::string& counter_name) const {
    const Run* run = find(name);
    if (run == nullptr) return -1;
    auto it = run->counters.find(counter_name);
    return it == run->counters.end() ? -1 : it->second.value;
  }

 private:
  std::map<std::string, Run> results_;
};

// Prints like the console reporter and keeps the fastest real time of each benchmark, by
// function name, for the ratios a program prints at the end.
class BestTimeReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.iterations == 0) continue;
      const std::string name = run.run_name.function_name;
      const double t = run.GetAdjustedRealTime();
      if (best.count(name) == 0 || t < best[name]) best[name] = t;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> best;
};

// Runs the benchmarks the command line selects, printed as usual, and returns the fastest
// real time of each, by function name.
inline std::map<std::string, double> run_keeping_best_times(int* argc, char** argv) {
  benchmark::Initialize(argc, argv);
  BestTimeReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  return reporter.best;
}

// Closes what open_cpu_and_device opened, and the benchmark library.
inline void close_cpu_and_device(const CpuAndDevice& opened) {
  phx_context_destroy(opened.context);
  benchmark::Shutdown();
}

}  // namespace phx_bench
