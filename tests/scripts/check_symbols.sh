#!/bin/sh
# Only the public API leaves the library: the dynamic symbols it defines are exactly the functions
# the header declares (each under the version node ELEMENTWISE_1) plus that node itself; and it
# leaves no CUDA runtime symbol for the loader to find elsewhere (cudart is linked in statically).
# Usage: check_symbols.sh LIBRARY HEADER
set -eu
lib=$1
header=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$lib" ] || fail "no library at $lib"
[ -f "$header" ] || fail "no header at $header"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Defined dynamic symbols, version suffix (@@NODE) stripped.
nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u > "$tmp/exported"
# Functions the header declares: every EW_API line names one.
grep 'EW_API' "$header" | grep -o 'ew_[a-z0-9_]*[[:space:]]*(' | tr -d '( \t' | sort -u > "$tmp/declared"

[ -s "$tmp/declared" ] || fail "found no EW_API declaration in $header"
echo "header declares $(wc -l < "$tmp/declared") functions; $lib exports $(wc -l < "$tmp/exported") symbols"

stray=$(grep -v -x -e 'ELEMENTWISE_1' -e 'ew_[a-z0-9_]*' "$tmp/exported" || true)
[ -z "$stray" ] || fail "exported symbols other than ew_* and ELEMENTWISE_1:
$stray"
grep -q -x 'ELEMENTWISE_1' "$tmp/exported" || fail "no version node ELEMENTWISE_1"

grep -v -x 'ELEMENTWISE_1' "$tmp/exported" > "$tmp/exported_functions" || true
missing=$(comm -23 "$tmp/declared" "$tmp/exported_functions")
[ -z "$missing" ] || fail "declared in the header but not exported:
$missing"
extra=$(comm -13 "$tmp/declared" "$tmp/exported_functions")
[ -z "$extra" ] || fail "exported but not declared in the header (internal symbols leak):
$extra"

# Each function carries the version node (objdump -T: version column before the name).
unversioned=$(objdump -T "$lib" | awk '$NF ~ /^ew_/ && $(NF-1) != "ELEMENTWISE_1" { print $NF }')
[ -z "$unversioned" ] || fail "ew_* symbols without version ELEMENTWISE_1:
$unversioned"

cuda=$(nm -D --undefined-only "$lib" | awk '{ print $NF }' | grep -E '^_*cuda|^cu[A-Z]' || true)
[ -z "$cuda" ] || fail "undefined CUDA symbols (cudart should be linked in statically):
$cuda"
echo "OK: exactly the $(wc -l < "$tmp/declared") header functions are exported, all at ELEMENTWISE_1"
