#!/usr/bin/env bash
# Records the ABI of this tree as the new baselines tests/abi/phynexus.abi.xml and
# tests/abi/plugin_sdk.abi.xml, which the ABI check of ctest compares every build with
# (include/phynexus/CHANGELOG-api.md, "The ABI check").
#
# Run it deliberately, once per release of a new minor, after the version numbers and the
# changelogs are updated, and commit the baselines with the release. Running it to silence
# a failing check accepts that failure: review `git diff tests/abi` first.
#
# usage: tools/abi-baseline.sh [build-dir]   (default: the default preset's build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake --preset default -B "$build" >/dev/null
fi
cmake --build "$build" --target phx_abi_baseline
git --no-pager diff --stat -- tests/abi
