#!/usr/bin/env bash
# Checks phx-devices' contract: exit statuses, valid JSON, the usage errors.
# Usage: test_phx_devices.sh <path to phx-devices> [<folder of the accelerator test plugin>].
# Needs at least one device (the CPU).
set -uo pipefail

tool=$1
accelerator_folder=${2:-}
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
expect 0 --ops
expect 0 --ops --markdown
expect 2 --markdown
expect 2 --ops --json
expect 2 --ops --device 0
expect 2 --plugins --ops
expect 0 --op-list
expect 0 --op-list --markdown
expect 2 --op-list --json
expect 2 --op-list --ops

# --op-list: a row per op, in id order, named as the --ops rows are; with no plugin at
# all it is the same (the op table is the library's).
list_ops=$("$tool" --op-list --markdown | sed '1,2d' | cut -d'|' -f2 | tr -d ' ')
support_ops=$("$tool" --ops --markdown | sed '1,2d' | cut -d'|' -f2 | tr -d ' ')
if [ "$list_ops" != "$support_ops" ] || [ "$(grep -c . <<<"$list_ops")" -lt 23 ]; then
  echo "FAIL: phx-devices --op-list does not list the ops that --ops does"
  failures=$((failures + 1))
fi
if ! PHX_PLUGIN_PATH=/nonexistent "$tool" --op-list --markdown | cmp -s - <("$tool" --op-list --markdown); then
  echo "FAIL: phx-devices --op-list depends on the plugins found"
  failures=$((failures + 1))
fi

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
            "memory_available_bytes", "compute_units", "compiles_graphs", "dtypes", "ops",
            "properties"):
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
  # --ops --markdown: a column per plugin, each cell the union of its devices' dtypes
  # for the op, as --json lists them per device; --ops the same cells as text.
  if ! python3 - "$tool" <<'PY'
import json, subprocess, sys
tool = sys.argv[1]
def run(*args):
    return subprocess.run([tool, *args], capture_output=True, check=True, text=True).stdout
devices = json.loads(run("--json"))["devices"]
expected = {}
for device in devices:
    column = expected.setdefault(device["plugin"], {})
    for op, dtypes in device["ops"].items():
        column.setdefault(op, set()).update(dtypes)
lines = run("--ops", "--markdown").splitlines()
rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
header, separator, body = rows[0], rows[1], rows[2:]
assert header[0] == "op", header
assert header[1:] == sorted(expected), (header, sorted(expected))
assert all(set(cell) == {"-"} for cell in separator), separator
assert [row[0] for row in body] == list(devices[0]["ops"]), "not every op, in order"
for row in body:
    for plugin, cell in zip(header[1:], row[1:]):
        dtypes = set() if cell == "-" else set(cell.split())
        assert dtypes == expected[plugin][row[0]], (plugin, row[0], cell)
# The text form: the same cells after a title and a blank line, two spaces apart.
text = run("--ops").split("\n\n", 1)[1].splitlines()
text_table = [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in text]
assert text_table == [header] + body, "--ops and --ops --markdown differ"
PY
  then
    echo "FAIL: phx-devices --ops does not match the devices' op support in --json"
    failures=$((failures + 1))
  fi
else
  echo "python3 not found: JSON checks skipped"
fi

# A device of type accelerator (tests/plugins, "accelerator") is listed with that type.
if [ -n "$accelerator_folder" ]; then
  table=$(PHX_PLUGIN_PATH=$accelerator_folder "$tool")
  if ! grep -Eq '^  0 +accelerator +testaccelerator device ' <<<"$table"; then
    echo "FAIL: the accelerator test device is not listed as an accelerator:"
    echo "$table"
    failures=$((failures + 1))
  fi
  if command -v python3 >/dev/null &&
    ! PHX_PLUGIN_PATH=$accelerator_folder "$tool" --json | python3 -c '
import json, sys
devices = json.load(sys.stdin)["devices"]
assert [d["type"] for d in devices] == ["accelerator"], devices'; then
    echo "FAIL: phx-devices --json does not give the accelerator test device type accelerator"
    failures=$((failures + 1))
  fi
fi

[ "$failures" -eq 0 ] && echo "phx-devices: all checks passed"
[ "$failures" -eq 0 ]
