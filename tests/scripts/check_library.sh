#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The shared library as the ABI contract fixes it (README, "ABI policy"), the version read from the
# header it comes with:
#   - files: libelementwise.so -> libelementwise.so.MAJOR -> libelementwise.so.MAJOR.MINOR.PATCH;
#   - SONAME libelementwise.so.MAJOR;
#   - NEEDED: only the system's C and C++ runtimes (libc, libm, libstdc++, libgcc_s, the loader, and
#     the libpthread, libdl, librt of older glibc); never the CUDA runtime or driver library: cudart is
#     linked in statically and the driver is loaded at run time;
#   - exported: exactly the functions the header declares (EW_API), each at version node
#     ELEMENTWISE_1 or at the node of the minor release that added it (ELEMENTWISE_1.1, ...), plus
#     those nodes; no undefined CUDA runtime or driver symbol;
#   - with SYMBOL_LIST (abi/symbols.txt, scripts/ci/abi.sh): the exported symbols with their versions
#     are exactly that list, so a new one is added on purpose.
# Usage: check_library.sh LIBRARY_DIR HEADER [SYMBOL_LIST]
#        check_library.sh --symbols LIBRARY   (prints the exported symbols as SYMBOL_LIST has them)
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
# Defined dynamic symbols with their version: "ew_binary@@ELEMENTWISE_1", and the node "ELEMENTWISE_1".
exported_symbols() {
    readelf --dyn-syms --wide "$1" | awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") { print $8 }' |
        LC_ALL=C sort
}
if [ "${1:-}" = --symbols ]; then
    exported_symbols "${2:?usage: check_library.sh --symbols LIBRARY}"
    exit 0
fi
dir=${1:?usage: check_library.sh LIBRARY_DIR HEADER [SYMBOL_LIST]}
header=${2:?usage: check_library.sh LIBRARY_DIR HEADER [SYMBOL_LIST]}
symbol_list=${3:-}
[ -f "$header" ] || fail "no header at $header"

version_part() { sed -n "s/^#define EW_VERSION_$1 \([0-9][0-9]*\).*/\1/p" "$header"; }
major=$(version_part MAJOR)
version=$major.$(version_part MINOR).$(version_part PATCH)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no EW_VERSION_MAJOR/MINOR/PATCH in $header"
soname=libelementwise.so.$major
real=libelementwise.so.$version

# ---- files and dynamic section ----
[ -f "$dir/$real" ] && [ ! -L "$dir/$real" ] || fail "$dir/$real is missing or not a regular file"
[ "$(readlink "$dir/$soname" || true)" = "$real" ] ||
    fail "$dir/$soname -> '$(readlink "$dir/$soname" || true)', expected a link to $real"
[ "$(readlink "$dir/libelementwise.so" || true)" = "$soname" ] ||
    fail "$dir/libelementwise.so -> '$(readlink "$dir/libelementwise.so" || true)', expected a link to $soname"
library=$dir/$real
dynamic=$(readelf --dynamic --wide "$library")
found=$(sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p' <<<"$dynamic")
[ "$found" = "$soname" ] || fail "SONAME is '$found', expected '$soname'"
needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' <<<"$dynamic")
# The system's C and C++ runtimes only (and, in an EW_SANITIZE build, the sanitizers' runtimes).
allowed='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux-[a-z0-9_-]+\.so\.[0-9]+|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|lib(a|ub|l)san\.so\.[0-9]+)$'
unexpected=$(grep -Ev "$allowed" <<<"$needed" || true)
[ -z "$unexpected" ] || fail "$real needs libraries beyond the system's C and C++ runtimes: $unexpected"
echo "$real: SONAME $found; NEEDED: $(paste -s -d' ' <<<"$needed")"

# ---- exported symbols ----
exported=$(exported_symbols "$library")
# Functions the header declares: every EW_API line names one.
declared=$(grep 'EW_API' "$header" | grep -o 'ew_[a-z0-9_]*[[:space:]]*(' | tr -d '( \t' | LC_ALL=C sort -u)
[ -n "$declared" ] || fail "found no EW_API declaration in $header"
stray=$(grep -Ev '^(ELEMENTWISE_1(\.[0-9]+)?|ew_[a-z0-9_]+@@ELEMENTWISE_1(\.[0-9]+)?)$' <<<"$exported" || true)
[ -z "$stray" ] || fail "exported symbols other than ew_* at ELEMENTWISE_1 or ELEMENTWISE_1.<minor>, and the nodes:
$stray"
grep -qx ELEMENTWISE_1 <<<"$exported" || fail "no version node ELEMENTWISE_1"
functions=$(grep '^ew_' <<<"$exported" | sed 's/@.*//' | LC_ALL=C sort -u)
missing=$(LC_ALL=C comm -23 <(echo "$declared") <(echo "$functions"))
[ -z "$missing" ] || fail "declared in the header but not exported:
$missing"
extra=$(LC_ALL=C comm -13 <(echo "$declared") <(echo "$functions"))
[ -z "$extra" ] || fail "exported but not declared in the header (internal symbols leak):
$extra"
cuda=$(readelf --dyn-syms --wide "$library" | awk '$7 == "UND" { sub(/@.*/, "", $8); print $8 }' |
    grep -E '^_*cuda|^cu[A-Z]' || true)
[ -z "$cuda" ] || fail "undefined CUDA symbols (the runtime should be linked in statically):
$cuda"
if [ -n "$symbol_list" ]; then
    listed=$(cat "$symbol_list")
    diff -u --label "$symbol_list (listed)" --label "$real (exported)" <(echo "$listed") <(echo "$exported") ||
        fail "exported symbols differ from $symbol_list (- listed, + exported); add new ones on purpose"
fi
echo "OK: $real exports exactly the $(wc -l <<<"$declared") functions of the header at ELEMENTWISE_1[.minor]" \
     "${symbol_list:+(as $symbol_list lists them)}"
