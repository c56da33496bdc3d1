#!/usr/bin/env bash
# Runs phx-conformance on one plugin file and checks how it ends:
#   pass       exit 0, "phx-conformance: passed", and at least one op passed
#   fail-add   exit 1, the add row FAILED for f32, the summary says FAILED
#   fail-load  exit 1, the plugin REJECTED with a reason, nothing checked
# usage: test_phx_conformance.sh pass|fail-add|fail-load PHX_CONFORMANCE PLUGIN_FILE [ARGS...]
# (ARGS go to phx-conformance, e.g. --graphs)
set -uo pipefail
expect="$1" program="$2" plugin="$3"
output="$("$program" --plugin "$plugin" "${@:4}" 2>&1)"
status=$?
fail() {
  printf '%s\n' "$output" | tail -60
  echo "test_phx_conformance: $expect: $1 (exit status $status)" >&2
  exit 1
}
case "$expect" in
  pass)
    [ "$status" -eq 0 ] || fail "expected exit 0"
    grep -q '^phx-conformance: passed$' <<<"$output" || fail "no 'passed' summary"
    grep -qE '^[a-z_0-9]+ +.*\bpassed\b' <<<"$output" || fail "no op passed"
    ! grep -q 'FAILED' <<<"$output" || fail "a FAILED line in a passing run"
    ;;
  fail-add)
    [ "$status" -eq 1 ] || fail "expected exit 1"
    grep -qE '^add +FAILED' <<<"$output" || fail "the add row does not say FAILED for f32"
    grep -q '^phx-conformance: FAILED$' <<<"$output" || fail "no FAILED summary"
    ;;
  fail-load)
    [ "$status" -eq 1 ] || fail "expected exit 1"
    grep -q 'REJECTED' <<<"$output" || fail "the plugin is not reported as rejected"
    grep -q 'reason: ' <<<"$output" || fail "no reason given"
    grep -q 'nothing was checked' <<<"$output" || fail "no 'nothing was checked' summary"
    ;;
  *)
    echo "usage: test_phx_conformance.sh pass|fail-add|fail-load PROGRAM PLUGIN" >&2
    exit 2
    ;;
esac
echo "test_phx_conformance: $expect: as expected"
