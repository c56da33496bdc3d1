// The cost of dispatching one tiny op through the C API: out = a + b on two 1x4 f32
// tensors of the CPU device, each iteration phx_op_run + phx_stream_wait on its ticket;
// the same with a trace being written (phx_trace_begin), whose cost is printed as a
// ratio of the two; the same into an output made and freed per op; and, for reference,
// the same four additions as a plain loop. The
// difference is what the API, the op's checks, the plugin call and the stream add per op.
#include <unistd.h>

#include <algorithm>
#include <string>

#include "bench_common.h"

namespace {

using phx_bench::check;
using phx_bench::CpuDevice;
using phx_bench::Tensor;

CpuDevice* g_cpu = nullptr;

// Where the traced run writes: a file of this process's own, removed at the end.
std::string trace_path() {
  const char* dir = getenv("TMPDIR");
  return std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + "/phx_bench_dispatch_" +
         std::to_string(getpid()) + ".json";
}

void add_phynexus(benchmark::State& state, bool traced) {
  const CpuDevice& cpu = *g_cpu;
  const std::string path = trace_path();
  if (traced) check(phx_trace_begin(cpu.context, path.c_str()), "phx_trace_begin");
  const float a_values[4] = {1, 2, 3, 4};
  const float b_values[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
  Tensor a(cpu, PHX_DTYPE_F32, {1, 4}), b(cpu, PHX_DTYPE_F32, {1, 4}),
      c(cpu, PHX_DTYPE_F32, {1, 4});
  check(phx_tensor_upload(a.get(), 0, a_values, sizeof a_values), "phx_tensor_upload");
  check(phx_tensor_upload(b.get(), 0, b_values, sizeof b_values), "phx_tensor_upload");
  const phx_tensor inputs[2] = {a.get(), b.get()};
  const phx_tensor output = c.get();
  const phx_op_desc add = phx_bench::op_desc(PHX_OP_ADD, inputs, 2, &output);

  for (auto _ : state) {
    uint64_t ticket = 0;
    check(phx_op_run(cpu.stream, &add, &ticket), "phx_op_run(add)");
    check(phx_stream_wait(cpu.stream, ticket), "phx_stream_wait");
  }
  if (traced) {
    check(phx_trace_end(cpu.context), "phx_trace_end");
    unlink(path.c_str());
  }
}

// The same add into an output made and freed per op, as a program that keeps no buffers
// does (and as phynexus.add does from Python: bench/python_overhead.py compares the two).
void add_phynexus_new_output(benchmark::State& state) {
  const CpuDevice& cpu = *g_cpu;
  const float a_values[4] = {1, 2, 3, 4};
  Tensor a(cpu, PHX_DTYPE_F32, {1, 4}), b(cpu, PHX_DTYPE_F32, {1, 4});
  check(phx_tensor_upload(a.get(), 0, a_values, sizeof a_values), "phx_tensor_upload");
  check(phx_tensor_upload(b.get(), 0, a_values, sizeof a_values), "phx_tensor_upload");
  const phx_tensor inputs[2] = {a.get(), b.get()};
  for (auto _ : state) {
    Tensor c(cpu, PHX_DTYPE_F32, {1, 4});
    const phx_tensor output = c.get();
    const phx_op_desc add = phx_bench::op_desc(PHX_OP_ADD, inputs, 2, &output);
    uint64_t ticket = 0;
    check(phx_op_run(cpu.stream, &add, &ticket), "phx_op_run(add)");
    check(phx_stream_wait(cpu.stream, ticket), "phx_stream_wait");
  }
}

void add_direct(benchmark::State& state) {
  float a[4] = {1, 2, 3, 4};
  float b[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
  float c[4];
  for (auto _ : state) {
    // Without these the compiler would add once, or not at all.
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
    for (int i = 0; i < 4; ++i) c[i] = a[i] + b[i];
    benchmark::DoNotOptimize(c);
    benchmark::ClobberMemory();
  }
}

}  // namespace

int main(int argc, char** argv) {
  CpuDevice cpu = phx_bench::open_cpu_device(phx_bench::bench_threads());
  g_cpu = &cpu;

  // Wall-clock time: a plugin that runs ops on its own threads waits off the CPU clock.
  benchmark::RegisterBenchmark("add_1x4_phx", add_phynexus, false)->UseRealTime();
  benchmark::RegisterBenchmark("add_1x4_phx_traced", add_phynexus, true)->UseRealTime();
  benchmark::RegisterBenchmark("add_1x4_phx_new_output", add_phynexus_new_output)->UseRealTime();
  benchmark::RegisterBenchmark("add_1x4_direct", add_direct)->UseRealTime();

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  phx_bench::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto* through_api = reporter.find("add_1x4_phx/");
  const auto* direct = reporter.find("add_1x4_direct/");
  if (through_api != nullptr && direct != nullptr) {
    // Both report in nanoseconds, the default unit.
    double api_ns = through_api->GetAdjustedRealTime();
    double direct_ns = direct->GetAdjustedRealTime();
    std::printf(
        "\nadd of two 1x4 f32: %.1f ns/op through the C API, %.1f ns/op direct: "
        "dispatch costs %.1f ns/op\n",
        api_ns, direct_ns, api_ns - direct_ns);
  }
  const auto* traced = reporter.find("add_1x4_phx_traced/");
  if (through_api != nullptr && traced != nullptr) {
    // The target (docs/tracing.md): at most 10% more, or 50 ns, whichever is larger.
    const double off_ns = through_api->GetAdjustedRealTime();
    const double on_ns = traced->GetAdjustedRealTime();
    std::printf(
        "tracing: %.1f ns/op off, %.1f ns/op on: on/off = %.3f, %+.1f ns/op (target: <= "
        "%.1f ns/op more)\n",
        off_ns, on_ns, on_ns / off_ns, on_ns - off_ns, std::max(0.10 * off_ns, 50.0));
  }
  benchmark::Shutdown();

  g_cpu = nullptr;
  phx_bench::close_cpu_device(cpu);
  return 0;
}
