#!/usr/bin/env bash
# The main job: install what is missing, build (Release) what it runs and nothing more
# (the library, the plugins, the tools, the examples and the Python package: the target
# phx_main; the tests and benchmarks are run-tests.sh's), then run phx-devices and every
# example on every device. Prints each step's seconds at its end.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash tools/install-deps.sh
# shellcheck source=tools/compiler-cache.sh
source tools/compiler-cache.sh
installed=$SECONDS
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)" --target phx_main
built=$SECONDS
bash examples/run_all.sh build
echo "run-main: install $((installed - start)) s, build $((built - installed)) s," \
     "run $((SECONDS - built)) s"
