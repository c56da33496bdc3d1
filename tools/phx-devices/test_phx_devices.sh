#!/usr/bin/env bash
# Checks phx-devices' contract: exit statuses, valid JSON, the usage errors.
# Usage: test_phx_devices.sh <path to phx-devices>. Needs at least one device (the CPU).
set -uo pipefail

tool=$1
failures=0

# expect <status> <args...>: runs the tool, output discarded, and checks its exit status.
expect() {
  local want=$1
  shift
  "$tool" "$@" >/dev/null 2>&1
  local got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: phx-devices $* exited $got, expected $want"
    failures=$((failures + 1))
  fi
}

# expect_json <args...>: the output must parse as JSON and the tool must exit 0.
expect_json() {
  if ! "$tool" "$@" | python3 -m json.tool >/dev/null; then
    echo "FAIL: phx-devices $* did not print valid JSON or failed"
    failures=$((failures + 1))
  fi
}

expect 0
expect 0 --plugins
expect 0 --device 0
expect 0 --help
expect 2 --no-such-option
expect 2 --device
expect 2 --device -1
expect 2 --device 1x
expect 2 --device 4294967296
expect 2 --device 99999999999999999999999
expect 2 --plugins --device 0

if command -v python3 >/dev/null; then
  expect_json --json
  expect_json --json --device 0
  # The device object alone must equal the first entry of the full document.
  if ! python3 - "$tool" <<'PY'
import json, subprocess, sys
tool = sys.argv[1]
full = json.loads(subprocess.run([tool, "--json"], capture_output=True, check=True).stdout)
one = json.loads(subprocess.run([tool, "--json", "--device", "0"], capture_output=True,
                                check=True).stdout)
assert full["schema_version"] == 1, full["schema_version"]
assert full["devices"], "no device"
for key in ("index", "plugin", "type", "name", "vendor", "memory_total_bytes",
            "memory_available_bytes", "compute_units", "dtypes", "ops", "properties"):
    assert key in one, key
# The live memory figures may change between the two runs; everything else must not.
for device in (full["devices"][0], one):
    device.pop("memory_stats")
    device.pop("memory_available_bytes")
assert full["devices"][0] == one, "device 0 differs between --json and --json --device 0"
PY
  then
    echo "FAIL: the JSON documents do not match the schema"
    failures=$((failures + 1))
  fi
else
  echo "python3 not found: JSON checks skipped"
fi

[ "$failures" -eq 0 ] && echo "phx-devices: all checks passed"
[ "$failures" -eq 0 ]
