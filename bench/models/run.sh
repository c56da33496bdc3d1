#!/usr/bin/env bash
# The model benchmark of bench/run.sh: real architectures exported by torch (export.py,
# once, into FOLDER) timed on the CPU device against ONNX Runtime's CPU provider in the
# same run (compare_ort.py): a table of medians and ratios, the figures in JSON.
#   bench/models/run.sh PYTHON FOLDER JSON
# Without python3-torch or onnxruntime-node (build/ort: npm install --ignore-scripts
# onnxruntime-node there) it says which is missing and skips, as an optional bench does.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=$1 folder=$2 json=$3
# skipped_on_77 COMMAND...: runs it; its exit status 77 (something optional is missing,
# and it said what) ends the benchmark as skipped, not failed.
skipped_on_77() {
  local status=0
  "$@" || status=$?
  [ "$status" -eq 77 ] && exit 0
  return "$status"
}
if [ ! -f "$folder/resnet50/model.onnx" ]; then
  skipped_on_77 "$python" bench/models/export.py "$folder"
fi
skipped_on_77 "$python" bench/models/compare_ort.py "$folder" --json "$json"
