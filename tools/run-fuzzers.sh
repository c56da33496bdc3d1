#!/usr/bin/env bash
# Builds the fuzzers (the fuzz preset), replays every fuzz target's committed corpus and regressions
# (ctest), then fuzzes each target for PHX_FUZZ_SECONDS seconds (default 60) on a copy of
# its corpus in the build folder. Exits non-zero on any crash, naming the input that
# caused it. tests/fuzz/README.md explains the targets and how to keep a crash.
#
# Environment: PHX_FUZZ_SECONDS (per target), PHX_FUZZ_TARGETS (default: all six),
# PHX_FUZZ_JOBS (build jobs, and targets fuzzed at once: each fuzzer is one process on one
# core, so CI's two cores fuzz two targets at a time; default: the number of cores).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
seconds=${PHX_FUZZ_SECONDS:-60}
targets=${PHX_FUZZ_TARGETS:-"fuzz_op_run fuzz_graph fuzz_executable_load fuzz_onnx_load fuzz_sim_config fuzz_pipeline_cache"}

cd "$root"
# shellcheck source=tools/compiler-cache.sh
source tools/compiler-cache.sh
cmake --preset fuzz
jobs=${PHX_FUZZ_JOBS:-$(nproc)}
cmake --build --preset fuzz -j "$jobs" --target phx_fuzzers
ctest --preset fuzz

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# fuzz TARGET: fuzzes one target on a copy of its corpus; its report goes to its folder's
# report.txt (printed once it ends, so that targets fuzzed at once do not interleave).
fuzz() {
  local target=$1 work=$build/fuzzing/$1
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/crashes"
  # A copy, so that what the fuzzer adds never lands in the committed corpus; the
  # regressions seed it too.
  cp "$root/tests/fuzz/corpus/$target/"* "$work/corpus/"
  if [ -d "$root/tests/fuzz/regressions/$target" ]; then
    cp "$root/tests/fuzz/regressions/$target/"* "$work/corpus/"
  fi
  local rc=0
  "$build/bin/$target" "$work/corpus" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -artifact_prefix="$work/crashes/" -print_final_stats=1 \
    >"$work/log.txt" 2>&1 || rc=1
  {
    echo "== $target: ${seconds}s"
    if [ $rc -ne 0 ]; then
      echo "$target CRASHED; the log: $work/log.txt; the input(s):"
      ls -1 "$work/crashes/"* 2>/dev/null || true
      tail -n 40 "$work/log.txt"
    fi
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^Done' "$work/log.txt" || true
    echo "corpus: $(find "$work/corpus" -type f | wc -l) inputs"
  } >"$work/report.txt"
  return $rc
}

failed=0
pids=()
names=()
# finish_one: waits for the oldest running target and prints its report.
finish_one() {
  wait "${pids[0]}" || failed=1
  cat "$build/fuzzing/${names[0]}/report.txt"
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
}
for target in $targets; do
  [ ${#pids[@]} -ge "$jobs" ] && finish_one
  fuzz "$target" &
  pids+=($!)
  names+=("$target")
done
while [ ${#pids[@]} -gt 0 ]; do finish_one; done
exit "$failed"
