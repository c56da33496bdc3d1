#!/usr/bin/env bash
# Runs phx-devices, then every example (examples/python too when the package was built),
# from a build folder (default: build), and stops at the first failure.
# Usage: examples/run_all.sh [build-folder]
set -euo pipefail

build_dir=${1:-build}
bin_dir="$build_dir/bin"
# Listed, not globbed, so that a missing example is an error instead of a silent skip.
programs=(phx-devices phx_example_device_available phx_example_tensors phx_example_matmul
          phx_example_mlp phx_example_mlp_graph phx_example_attention
          phx_example_quantized_linear phx_example_tpu_timing phx_example_npu_optimize
          phx_example_tensor_parallel phx_example_data_parallel_mlp
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
# The Python example, with the interpreter the build found, when the package was built.
python_examples=0
python=$(sed -n 's/^PHX_PYTHON_EXECUTABLE:INTERNAL=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
if [ -d "$build_dir/python/phynexus" ] && [ -n "$python" ]; then
  echo "==> examples/python/mlp.py"
  PYTHONPATH="$build_dir/python" "$python" "$(dirname "$0")/python/mlp.py"
  python_examples=1
  echo
else
  echo "run_all: the Python package was not built (PHX_BUILD_PYTHON): examples/python skipped"
fi
echo "run_all: phx-devices, $(( ${#programs[@]} - 1 )) C examples and $python_examples Python example passed"
