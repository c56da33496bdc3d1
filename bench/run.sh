#!/usr/bin/env bash
# Builds the default preset (Release) and runs the benchmarks: about a minute on 2 cores,
# plus the build. Each benchmark runs 3 times and the summaries use the median, which
# keeps the ratio table steady on a busy machine. Prints Google Benchmark's table for
# each program, then its summary: for bench_gemm the ratio of the CPU plugin to OpenBLAS
# per N, for bench_dispatch the cost of one op, for bench_graph an executable's cost per
# node and its speed against the same ops run eagerly, for bench_tpu_sim and bench_npu_sim the
# simulators' cost against the CPU plugin, for bench_vulkan the Vulkan device's matmul
# against the CPU plugin, OpenBLAS and a naive shader, a tiny op against a bare dispatch,
# and attention (LP_NUM_THREADS, lavapipe's threads, defaults to the machine's cores); for
# bench_onnx the import of a 100 MB model against reading its file, and an imported CNN
# on the CPU device against the same network with OpenBLAS; and, with the Python package
# built, a tiny op from Python against C (python_overhead.py).
#   PHX_BENCH_THREADS=N      threads for the CPU plugin and OpenBLAS alike (default: all)
#   PHX_BENCH_MIN_TIME=S     seconds each repetition runs at least (default 0.5)
#   PHX_BENCH_REPETITIONS=R  repetitions per benchmark (default 3)
# Extra arguments go to every program, e.g. --benchmark_filter=f32.
set -euo pipefail
cd "$(dirname "$0")/.."

cmake --preset default >/dev/null
targets=(bench_gemm bench_dispatch bench_graph bench_tpu_sim bench_npu_sim phx_plugin_cpu phx_plugin_tpu_sim
         phx_plugin_npu_sim)
# bench_onnx exists when libphynexus_onnx is built (libonnx-dev found).
have_onnx=$(cmake --build --preset default --target help | grep -c '^bench_onnx:' || true)
[ "$have_onnx" -gt 0 ] && targets+=(bench_onnx bench_onnx_models)
# bench_vulkan exists when the Vulkan plugin is built (the Vulkan loader and glslang found).
have_vulkan=$(cmake --build --preset default --target help | grep -c '^bench_vulkan:' || true)
[ "$have_vulkan" -gt 0 ] && targets+=(bench_vulkan phx_plugin_vulkan)
cmake --build --preset default -j"$(nproc)" --target "${targets[@]}"

# Profiling and logging would be measured too; the thread count is the benchmarks' own.
unset PHX_PROFILE PHX_LOG_LEVEL PHX_NUM_THREADS PHX_PLUGIN_PATH PHX_ADD_PLUGIN_PATH
options=(--benchmark_min_time="${PHX_BENCH_MIN_TIME:-0.5}"
         --benchmark_repetitions="${PHX_BENCH_REPETITIONS:-3}"
         --benchmark_report_aggregates_only=true)

build/bin/bench_gemm "${options[@]}" "$@"
echo
build/bin/bench_dispatch "${options[@]}" "$@"
echo
build/bin/bench_graph "${options[@]}" "$@"
echo
build/bin/bench_tpu_sim "${options[@]}" "$@"
echo
build/bin/bench_npu_sim "${options[@]}" "$@"
if [ "$have_onnx" -gt 0 ]; then
  echo
  build/bin/bench_onnx "${options[@]}" "$@"
fi
if [ "$have_vulkan" -gt 0 ]; then
  echo
  build/bin/bench_vulkan "${options[@]}" "$@"
fi
# A tiny op from Python against the same from C (bench/python_overhead.py), when the
# Python package is built; the interpreter is the one the build found.
python=$(sed -n 's/^PHX_PYTHON_EXECUTABLE:INTERNAL=//p' build/CMakeCache.txt)
if [ -d build/python/phynexus ] && [ -n "$python" ]; then
  cmake --build --preset default -j"$(nproc)" --target phx_python_extension
  echo
  PYTHONPATH=build/python "$python" bench/python_overhead.py build
fi
