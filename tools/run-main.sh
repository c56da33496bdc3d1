#!/usr/bin/env bash
# The main job: install what is missing, build (Release), then run phx-devices and every
# example on every device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"
bash examples/run_all.sh build
