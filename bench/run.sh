#!/usr/bin/env bash
# Builds the default preset (Release) and runs the benchmarks: about two minutes on 2
# cores, plus the build. Each benchmark runs 3 times and the summaries use the median,
# which keeps the ratio table steady on a busy machine. Prints Google Benchmark's table
# for each program, then its summary. bench_peak runs first, so that the top of the output
# is the machine's instruction-set extensions and its peaks, per core and on all cores:
# f32 FMA, bf16 dot, int8 dot (whichever the CPU has) and memory bandwidth (the roofs of
# phx-plot roofline). Then for bench_gemm the CPU plugin's GEMM, qmatmul, conv2d and
# attention, each as a fraction of the peak of its kind (timed again in bench_gemm, just
# before them) and GEMM against OpenBLAS per N, for bench_conv ResNet-like conv2d layers
# against im2col + OpenBLAS sgemm, for bench_dispatch the cost of one op, for bench_graph
# an executable's cost per node and its speed against the same ops run eagerly, for
# bench_tpu_sim and bench_npu_sim the simulators' cost against the CPU plugin, for
# bench_tpu_pod a column-split matmul on four simulated TPU chips against one (simulated
# step times, and the wall-clock cost of simulating them), for bench_vulkan the Vulkan
# device's matmul against the CPU plugin, OpenBLAS and a naive shader, a tiny op against a
# bare dispatch, and attention (LP_NUM_THREADS, lavapipe's threads, defaults to the
# machine's cores); for bench_onnx the import of a 100 MB model against reading its file,
# and an imported CNN on the CPU device against the same network with OpenBLAS; and, with
# the Python package built, a tiny op from Python against C (python_overhead.py) and numpy
# sharing memory with CPU tensors against copying (python_host_memory.py), and real models
# exported by torch on the CPU device against ONNX Runtime and on the Vulkan device against
# the CPU device (bench/models/run.sh: optional, python3-torch and onnxruntime-node in
# build/ort); and, with
# libphynexus_mpi built, all_reduce over 4 MPI processes against MPI_Allreduce (bench_mpi,
# under mpirun).
#
# Each program's table goes to OUT/NAME.txt and its Google Benchmark JSON to OUT/NAME.json
# (OUT: --out DIR, default build/bench-results); bench/compare.py OLD_OUT NEW_OUT compares
# two runs benchmark by benchmark. On a terminal (and CI unset) a progress
# line counts the programs while they run, and each table is printed when its program ends.
#   bench/run.sh [--out DIR] [--plots DIR] [ARGS...]
#   --plots DIR  then writes DIR/gemm.png and DIR/roofline.png from this run's JSON, and
#                DIR/timeline.png from a trace of examples/mlp.c (PHX_TRACE), where the
#                build writes traces (docs/plots.md)
#   PHX_BENCH_THREADS=N      threads for the CPU plugin and OpenBLAS alike (default: all)
#   PHX_BENCH_MIN_TIME=S     seconds each repetition runs at least (default 0.5)
#   PHX_BENCH_REPETITIONS=R  repetitions per benchmark (default 3)
# Extra arguments go to every program, e.g. --benchmark_filter=f32.
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/bench-results
plots=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --plots) plots="${2:?--plots needs a folder}"; shift 2 ;;
    *) break ;;
  esac
done
mkdir -p "$out"

cmake --preset default >/dev/null
targets=(bench_peak bench_gemm bench_conv bench_comm bench_dispatch bench_graph bench_tpu_sim bench_tpu_pod
         bench_npu_sim phx_plugin_cpu phx_plugin_tpu_sim phx_plugin_npu_sim)
target_list=$(cmake --build --preset default --target help)
# bench_onnx exists when libphynexus_onnx is built (libonnx-dev found).
have_onnx=$(grep -c '^bench_onnx:' <<<"$target_list" || true)
[ "$have_onnx" -gt 0 ] && targets+=(bench_onnx bench_onnx_models phx-run-onnx)
# bench_vulkan exists when the Vulkan plugin is built (the Vulkan loader and glslang found).
have_vulkan=$(grep -c '^bench_vulkan:' <<<"$target_list" || true)
[ "$have_vulkan" -gt 0 ] && targets+=(bench_vulkan phx_plugin_vulkan)
# bench_mpi exists when libphynexus_mpi is built (MPI found).
have_mpi=$(grep -c '^bench_mpi:' <<<"$target_list" || true)
[ "$have_mpi" -gt 0 ] && targets+=(bench_mpi)
# The traced run for the timeline: an example, when the examples are built.
have_example=$(grep -c '^phx_example_mlp:' <<<"$target_list" || true)
[ -n "$plots" ] && [ "$have_example" -gt 0 ] && targets+=(phx_example_mlp)
cmake --build --preset default -j"$(nproc)" --target "${targets[@]}"

# A tiny op from Python against the same from C (bench/python_overhead.py), when the
# Python package is built; the interpreter is the one the build found.
python=$(sed -n 's/^PHX_PYTHON_EXECUTABLE:INTERNAL=//p' build/CMakeCache.txt)
# The mpirun of the MPI the build found (Open MPI's flags below).
mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' build/CMakeCache.txt)
have_python=0
if [ -d build/python/phynexus ] && [ -n "$python" ]; then
  cmake --build --preset default -j"$(nproc)" --target phx_python_extension
  have_python=1
fi

# Profiling, tracing and logging would be measured too; the thread count is the benchmarks' own.
unset PHX_PROFILE PHX_TRACE PHX_LOG_LEVEL PHX_NUM_THREADS PHX_PLUGIN_PATH PHX_ADD_PLUGIN_PATH
options=(--benchmark_min_time="${PHX_BENCH_MIN_TIME:-0.5}"
         --benchmark_repetitions="${PHX_BENCH_REPETITIONS:-3}"
         --benchmark_report_aggregates_only=true)

programs=(bench_peak bench_gemm bench_conv bench_comm bench_dispatch bench_graph bench_tpu_sim bench_tpu_pod
          bench_npu_sim)
[ "$have_onnx" -gt 0 ] && programs+=(bench_onnx)
[ "$have_vulkan" -gt 0 ] && programs+=(bench_vulkan)
[ "$have_mpi" -gt 0 ] && programs+=(bench_mpi)
[ "$have_python" -gt 0 ] && programs+=(python_overhead python_host_memory)
# Real models exported by torch, on the CPU device against ONNX Runtime and on the
# Vulkan device against the CPU device (bench/models/).
[ "$have_python" -gt 0 ] && [ "$have_onnx" -gt 0 ] && programs+=(models)

# The progress line, as phx/progress.h (base/progress) draws it for the library and the C++
# tools: on a terminal, without CI, and unless PHX_PROGRESS=0 or PHX_LOG_LEVEL=off.
progress=0
[ -t 2 ] && [ -z "${CI+set}" ] && [ "${PHX_PROGRESS-}" != 0 ] && [ "${PHX_LOG_LEVEL-}" != off ] &&
  progress=1
started=$SECONDS
# draw_progress DONE NAME: "2/8 programs  0.9/min  1:40 left  bench_graph", rewritten in place.
draw_progress() {
  local done=$1 name=$2 elapsed=$((SECONDS - started)) rate="-" left="?"
  if [ "$done" -gt 0 ] && [ "$elapsed" -gt 0 ]; then
    rate=$(awk -v d="$done" -v e="$elapsed" 'BEGIN { printf "%.1f", d * 60 / e }')
    local remaining=$(( elapsed * (${#programs[@]} - done) / done ))
    left=$(printf '%d:%02d' $((remaining / 60)) $((remaining % 60)))
  fi
  printf '\r%d/%d programs  %s/min  %s left  %s (%ds)\033[K' "$done" "${#programs[@]}" \
    "$rate" "$left" "$name" $((elapsed)) >&2
}

# run_program NAME: runs it, its table into $out/NAME.txt (and JSON into $out/NAME.json).
run_program() {
  local name=$1
  local command=("build/bin/$name" "${options[@]}" --benchmark_out="$out/$name.json"
                 --benchmark_out_format=json "${@:2}")
  [ "$name" = python_overhead ] &&
    command=(env PYTHONPATH=build/python "$python" bench/python_overhead.py build)
  [ "$name" = python_host_memory ] &&
    command=(env PYTHONPATH=build/python "$python" bench/python_host_memory.py)
  [ "$name" = models ] &&
    command=(bash bench/models/run.sh "$python" build/bench-models "$out/models.json")
  # 4 ranks whatever the cores (issue 18's figure), as root too (CI), on shared memory.
  [ "$name" = bench_mpi ] &&
    command=("$mpiexec" -np 4 --oversubscribe --allow-run-as-root --bind-to none
             --mca btl self,vader "${command[@]}")
  if [ "$progress" -eq 0 ]; then
    "${command[@]}" | tee "$out/$name.txt"
    return
  fi
  "${command[@]}" >"$out/$name.txt" 2>&1 &
  local pid=$! status=0
  while kill -0 "$pid" 2>/dev/null; do
    draw_progress "$done" "$name"
    sleep 1
  done
  wait "$pid" || status=$?
  printf '\r\033[K' >&2
  cat "$out/$name.txt"
  return "$status"
}

done=0
for program in "${programs[@]}"; do
  [ "$done" -gt 0 ] && echo
  run_program "$program" "$@"
  done=$((done + 1))
done
echo
echo "bench: tables and Google Benchmark JSON in $out/"

[ -z "$plots" ] && exit 0
mkdir -p "$plots"
plot=tools/phx-plot/phx-plot
jsons=()
for program in bench_peak bench_gemm bench_tpu_sim bench_vulkan; do
  [ -s "$out/$program.json" ] && jsons+=("$out/$program.json")  # empty: no benchmark matched
done
"$plot" gemm "${jsons[@]}" -o "$plots/gemm.png"
"$plot" roofline "${jsons[@]}" -o "$plots/roofline.png"
# A trace of a short run, where this build writes traces (PHX_TRACE): none is written
# where it does not, and the timeline is skipped.
rm -f "$plots/mlp-trace.json"
if [ "$have_example" -gt 0 ]; then
  PHX_TRACE="$plots/mlp-trace.json" build/bin/phx_example_mlp >/dev/null ||
    echo "bench: examples/mlp.c failed; its trace, if any, ends where it stopped"
fi
if [ -s "$plots/mlp-trace.json" ]; then
  "$plot" timeline "$plots/mlp-trace.json" -o "$plots/timeline.png"
else
  echo "bench: no timeline: this build wrote no trace for PHX_TRACE (or has no examples)"
fi
echo "bench: plots in $plots/"
