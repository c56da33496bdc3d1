#!/usr/bin/env bash
# What to run whenever a GPU is at hand (issue 35), in at most 8 minutes, on whatever
# Vulkan device the machine has (on lavapipe it runs too, slower). On a Release build:
#   bash bench/gpu-check.sh [BUILD (default build)] [MODELS (default build/bench-models)]
# 1. phx-devices: what the Vulkan device says of itself.
# 2. The op suites on the Vulkan device, with the validation layer on.
# 3. bench_vulkan: the matmul (f32, bf16) and attention rates, and the f32 matmul as a
#    fraction of the device's f32 peak where that is known: PHX_GPU_PEAK_F32_TFLOPS, or
#    the vendor's figure for the GPU nvidia-smi names (the table below).
# 4. Three models of bench/models/export.py (resnet50, vit_b_16, gpt_like_decoder, from
#    MODELS; exported there first when python3-torch is installed) on the Vulkan device
#    against the CPU device, phx-run-onnx --bench 10.
# Each step has its own time limit; a step that fails or runs out of time is reported and
# the next one runs. The output goes into docs/vulkan.md, "Figures".
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
models=${2:-build/bench-models}
bin=$build/bin
failed=0

step() { printf '\n== %s\n' "$*"; }
# run SECONDS COMMAND...: runs it under a time limit, noting a failure or a timeout.
run() {
  local limit=$1 status=0
  shift
  timeout "$limit" "$@" || status=$?
  if [ "$status" -eq 124 ]; then
    echo "gpu-check: out of time after ${limit} s: $*"
    failed=1
  elif [ "$status" -ne 0 ]; then
    echo "gpu-check: exit status $status: $*"
    failed=1
  fi
  return 0
}

if [ ! -x "$bin/phx-devices" ] || [ ! -x "$bin/bench_vulkan" ]; then
  echo "gpu-check: no Release build in $build" \
    "(cmake --preset default && cmake --build --preset default)"
  exit 2
fi

step "devices"
# The first device of the Vulkan plugin: the row of the device table that names it.
index=$("$bin/phx-devices" | awk '$1 ~ /^[0-9]+$/ && / vulkan / { print $1; exit }')
if [ -z "$index" ]; then
  echo "gpu-check: no Vulkan device; nothing more to check"
  exit 1
fi
run 30 "$bin/phx-devices" --device "$index"

step "op suites on the Vulkan device (validation layer on)"
# NVIDIA's driver and the validation layer need more static TLS than glibc keeps for
# libraries loaded late (docs/vulkan.md, "NVIDIA H100").
export GLIBC_TUNABLES=glibc.rtld.optional_static_tls=1048576
for suite in phx_op_suite_test phx_op_suite_api03_test phx_op_suite_layout_test \
             phx_op_suite_attention_test phx_op_suite_resize_test; do
  [ -x "$bin/$suite" ] || continue
  PHX_VULKAN_VALIDATION=1 run 120 "$bin/$suite" --gtest_filter='*vulkan*' --gtest_brief=1
done
unset GLIBC_TUNABLES

step "matmul and attention rates (bench_vulkan)"
peak=${PHX_GPU_PEAK_F32_TFLOPS:-}
if [ -z "$peak" ] && command -v nvidia-smi >/dev/null; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  echo "nvidia-smi: $gpu"
  # FP32 peaks (dense, TFLOP/s) of the vendor's datasheets, at boost clock.
  case "$gpu" in
    *H200*) peak=67 ;;
    *H100*PCIe*) peak=51 ;;
    *H100*) peak=67 ;;
    *A100*) peak=19.5 ;;
    *L40S*) peak=91.6 ;;
    *L4*) peak=30.3 ;;
  esac
fi
summary=$(mktemp)
# OpenBLAS (the CPU anchor of the summary) with its own choice of core: some machines set
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for old builds.
run 240 env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$bin/bench_vulkan" \
  --benchmark_filter='matmul_vulkan|matmul_cpu_f32|matmul_openblas|attention_vulkan' \
  --benchmark_min_time=0.3 | tee "$summary"
if [ -n "$peak" ]; then
  echo "f32 matmul as a fraction of the f32 peak ($peak TFLOP/s):"
  awk -v peak="$peak" '/vulkan f32/ {
      for (i = 1; i <= NF; ++i) if ($i == "f32" && $(i - 1) == "vulkan") {
        v = $(i + 1); sub(",", "", v); printf "  %s %s: %.1f%%\n", $1, $2, 100 * v / (peak * 1000)
      }
    }' "$summary"
else
  echo "f32 peak unknown: set PHX_GPU_PEAK_F32_TFLOPS for the fraction"
fi
rm -f "$summary"

step "three models, Vulkan against the CPU device"
if [ ! -f "$models/resnet50/model.onnx" ] &&
  python3 -c 'import torch, torchvision' 2>/dev/null; then
  run 180 python3 bench/models/export.py "$models"
fi
for model in resnet50 vit_b_16 gpt_like_decoder; do
  file=$models/$model/model.onnx
  if [ ! -f "$file" ]; then
    echo "$model: not in $models (bench/models/export.py writes it; it needs python3-torch)"
    continue
  fi
  for device in cpu vulkan; do
    printf '%s on %s: ' "$model" "$device"
    run 90 "$bin/phx-run-onnx" "$file" --inputs "$models/$model/data" --device "$device" \
      --bench 10 | grep -o 'median [0-9.]* ms.*' || true
  done
done

[ "$failed" -eq 0 ] && echo && echo "gpu-check: every step ran"
exit "$failed"
