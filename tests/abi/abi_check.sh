#!/usr/bin/env bash
# The ABI check of tests/abi/CMakeLists.txt (CHANGELOG-api.md, "The ABI check").
#
#   abi_check.sh dump  <binary> <headers-dir> <out.abi.xml>
#       Writes the ABI of binary: the functions it exports and the types of headers-dir.
#   abi_check.sh check <binary> <headers-dir> <baseline.abi.xml> <suppressions> <current.abi.xml>
#       Dumps binary to current.abi.xml and compares it with the baseline; fails, with
#       abidiff's report, on any change the suppressions do not declare compatible.
#
# ABIDW and ABIDIFF name the tools; either missing is exit 77, which ctest counts as a skip.
# python3 runs abi_types_check.py beside this script.
set -euo pipefail

mode=$1
binary=$2
headers=$3

for tool in "${ABIDW:-}" "${ABIDIFF:-}"; do
  if [ -z "$tool" ] || [ ! -x "$tool" ] || [[ "$tool" == *-NOTFOUND ]]; then
    echo "abi_check: SKIPPED: abidw or abidiff not found (tools/install-deps.sh installs" \
      "abigail-tools; re-run cmake afterwards)"
    exit 77
  fi
done

# Only what a user of the headers sees: the exported functions and the types they reach
# (not the library's C++ internals), no source locations, build paths, or DT_NEEDED
# entries, which change with a comment, a checkout or a distribution; name-hashed type
# ids, so that a regenerated baseline differs only where the ABI does.
dump() {
  "$ABIDW" --headers-dir "$headers" --drop-private-types --exported-interfaces-only \
    --no-show-locs --no-corpus-path --no-comp-dir-path --no-elf-needed --no-architecture \
    --type-id-style hash --out-file "$2" "$1"
}

case "$mode" in
  dump)
    dump "$binary" "$4"
    ;;
  check)
    baseline=$4
    suppressions=$5
    current=$6
    dump "$binary" "$current"
    # Added functions are a compatible change (--no-added-syms); appended enumerators are
    # harmless to abidiff by default; appended struct fields are declared compatible in
    # the suppressions. abi_types_check.py guards what those suppressions hide too much of.
    status=0
    "$ABIDIFF" --suppressions "$suppressions" --no-added-syms \
      --no-show-locs "$baseline" "$current" || status=$?
    if [ "$status" -eq 0 ] &&
      ! python3 "$(dirname "$0")/abi_types_check.py" "$baseline" "$current" "$suppressions"; then
      echo "abi_check: abidiff's report without the suppressions:"
      "$ABIDIFF" --no-added-syms --no-show-locs "$baseline" "$current" ||
        true
      status=1
    fi
    if [ "$status" -ne 0 ]; then
      echo "abi_check: FAILED: $(basename "$baseline") and this build differ (status" \
        "$status), above. An incompatible change needs a new major; a compatible one the" \
        "check does not know needs a new baseline (tools/abi-baseline.sh) when the minor" \
        "is released."
      exit 1
    fi
    echo "abi_check: $(basename "$baseline"): no incompatible change"
    ;;
  *)
    echo "abi_check: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
