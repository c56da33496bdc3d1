#!/usr/bin/env bash
# Runs phx-devices, then every example, from a build folder (default: build), and stops
# at the first failure. Usage: examples/run_all.sh [build-folder]
set -euo pipefail

build_dir=${1:-build}
bin_dir="$build_dir/bin"
# Listed, not globbed, so that a missing example is an error instead of a silent skip.
programs=(phx-devices phx_example_device_available phx_example_tensors phx_example_matmul
          phx_example_mlp phx_example_mlp_graph phx_example_attention
          phx_example_quantized_linear phx_example_tpu_timing phx_example_npu_optimize
          phx_example_onnx_run)
# Arguments of the examples that take some.
declare -A arguments=([phx_example_onnx_run]="$build_dir/examples/onnx/mlp $build_dir/examples/onnx/cnn")

for program in "${programs[@]}"; do
  if [ ! -x "$bin_dir/$program" ]; then
    echo "run_all: $bin_dir/$program not found; build first (cmake --build --preset default)" >&2
    exit 1
  fi
done

for program in "${programs[@]}"; do
  echo "==> $program"
  status=0
  # shellcheck disable=SC2086 # the arguments are words
  "$bin_dir/$program" ${arguments[$program]:-} || status=$?
  if [ "$status" -ne 0 ]; then
    echo "run_all: $program failed with exit status $status" >&2
    exit "$status"
  fi
  echo
done
echo "run_all: phx-devices and $(( ${#programs[@]} - 1 )) examples passed"
