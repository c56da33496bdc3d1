#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test with ctest.
# PHX_PRESET=asan (or debug) runs it in that preset instead of the Release build.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${PHX_PRESET:-default}"
bash tools/install-deps.sh
# shellcheck source=tools/compiler-cache.sh
source tools/compiler-cache.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)"
ctest --preset "$preset" -j"$(nproc)"
