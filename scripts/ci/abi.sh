#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ABI check of libelementwise.so as it is packaged: the package preset's build (build/package, which
# carries debug information for libabigail; the packages are stripped), then
#   1. abidiff against the committed baseline abi/libelementwise.abi: fail on an incompatible change
#      (a removed or changed function, a changed or removed enumerator); a compatible one (an appended
#      function; appended enumerators abidiff already treats as harmless) is reported and allowed;
#   2. tests/scripts/check_library.sh with abi/symbols.txt: file names and SONAME from the header's
#      version, only the system's C and C++ runtimes needed, and the exported symbols, with their
#      versions, exactly the list;
#   3. the baseline's SONAME is the library's.
# Usage: scripts/ci/abi.sh [--update]
# `scripts/ci/abi.sh --update` rewrites the baseline and the symbol list from the current build: only
# for a deliberate ABI change, reviewed against the policy in README.md.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build/package
baseline=$root/abi/libelementwise.abi
symbol_list=$root/abi/symbols.txt
check_library=$root/tests/scripts/check_library.sh
update=0
case ${1:-} in
    --update) update=1 ;;
    "") ;;
    *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac
if ! command -v abidw >/dev/null || ! command -v abidiff >/dev/null; then
    echo "== abi: installing abigail-tools"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq abigail-tools >/dev/null
fi

cd "$root"
# EW_CI_ARCHITECTURES, when set, is the architecture list to build for: .ci/run sets the README
# build's (the preset's own), whose device code its compiler cache already holds; a quick run by hand
# may name one GPU (the ABI and the packages' contents do not depend on the list).
cmake --preset package ${EW_CI_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$EW_CI_ARCHITECTURES} >/dev/null
cmake --build --preset package
library=$(readlink -f "$build/libelementwise.so")
headers=$build/include

# Only the exported interface and the public header's types count; locations and build paths would
# make the file churn between machines.
abidw_options=(--headers-dir "$headers" --drop-private-types --exported-interfaces-only --drop-undefined-syms
               --no-corpus-path --no-comp-dir-path --no-show-locs)
write_abi() { # library output
    abidw "${abidw_options[@]}" --out-file "$2" "$1"
    sed -i "s|path='$root/|path='|" "$2"
}
# abidiff sets bit 8 (incompatible) only for removals; for a C ABI a changed enumerator value or
# parameter breaks callers as surely, so any removed or changed item in its summary fails too.
# Returns 0 (same), 1 (compatible additions only) or 2 (incompatible or error); the report in $3.
compare_abi() { # baseline current report
    local status=0
    abidiff --no-show-locs "$1" "$2" >"$3" 2>&1 || status=$?
    if [ $((status & 11)) -ne 0 ] || grep -Eq '\b[1-9][0-9]* (Removed|Changed)\b' "$3"; then
        return 2
    fi
    [ $((status & 4)) -eq 0 ] && return 0
    return 1
}

if [ "$update" = 1 ]; then
    write_abi "$library" "$baseline"
    bash "$check_library" --symbols "$library" >"$symbol_list"
    echo "abi.sh: wrote $baseline ($(grep -c '<elf-symbol ' "$baseline") ELF symbols) and $symbol_list" \
         "($(wc -l <"$symbol_list") symbols); review and commit them with the change that needs them"
    exit 0
fi

failures=0
current=$build/libelementwise.current.abi
write_abi "$library" "$current"

# The check must be able to fail: a copy of the baseline with one enumerator renumbered is refused.
sed "0,/<enumerator name='EW_F16' value='7'\/>/s//<enumerator name='EW_F16' value='77'\/>/" "$baseline" \
    >"$build/mutated.abi"
self_test=0
compare_abi "$build/mutated.abi" "$current" "$build/abidiff-self-test.txt" || self_test=$?
if [ "$self_test" -ne 2 ]; then
    echo "abi.sh: FAIL: self-test: a renumbered EW_F16 was not reported as incompatible ($self_test)"
    failures=$((failures + 1))
fi

# 1. abidiff against the baseline.
result=0
compare_abi "$baseline" "$current" "$build/abidiff.txt" || result=$?
case $result in
    0) echo "abi.sh: abidiff: no ABI change against abi/libelementwise.abi" ;;
    1) echo "abi.sh: compatible ABI change (allowed within 1.x);" \
            "refresh the baseline with --update once reviewed:"
       cat "$build/abidiff.txt" ;;
    *) echo "abi.sh: FAIL: incompatible ABI change (or abidiff error) against abi/libelementwise.abi:"
       cat "$build/abidiff.txt"
       failures=$((failures + 1)) ;;
esac

# 2. The library's files, dynamic section and exported symbols, against abi/symbols.txt.
if ! bash "$check_library" "$(dirname "$library")" "$headers/elementwise.h" "$symbol_list"; then
    echo "abi.sh: FAIL: tests/scripts/check_library.sh (above)"
    failures=$((failures + 1))
fi

# 3. The baseline's SONAME is the library's.
soname=$(readelf --dynamic --wide "$library" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
baseline_soname=$(sed -n "s/.*<abi-corpus.* soname='\([^']*\)'.*/\1/p" "$baseline" | head -n 1)
if [ "$soname" != "$baseline_soname" ]; then
    echo "abi.sh: FAIL: SONAME '$soname', the baseline's '$baseline_soname'"
    failures=$((failures + 1))
else
    echo "abi.sh: SONAME $soname, as the baseline's"
fi

if [ "$failures" -ne 0 ]; then
    echo "abi.sh: $failures check(s) failed"
    exit 1
fi
echo "abi.sh: ABI check passed"
