#!/usr/bin/env bash
# The model benchmark of bench/run.sh: real architectures exported by torch (export.py,
# once, into FOLDER) timed on the CPU device against ONNX Runtime's CPU provider in the
# same run (compare_ort.py), then on the Vulkan device against the CPU device
# (compare_vulkan.py): tables of medians and ratios, the figures in JSON (JSON, and JSON
# with -vulkan before its extension).
#   bench/models/run.sh PYTHON FOLDER JSON
# Without python3-torch, onnxruntime-node (build/ort: npm install --ignore-scripts
# onnxruntime-node there) or a Vulkan device it says which is missing and skips what
# needs it, as an optional bench does.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$1 folder=$2 json=$3
# optional COMMAND...: runs it; its exit status 77 (something optional is missing, and
# it said what) counts as skipped, not failed.
optional() {
  local status=0
  "$@" || status=$?
  [ "$status" -eq 77 ] && return 77
  [ "$status" -eq 0 ] || exit "$status"
}
if [ ! -f "$folder/resnet50/model.onnx" ]; then
  optional "$python" bench/models/export.py "$folder" || exit 0  # no torch: no models
fi
optional "$python" bench/models/compare_ort.py "$folder" --json "$json" || true
echo
optional "$python" bench/models/compare_vulkan.py "$folder" --json "${json%.json}-vulkan.json" ||
  true
