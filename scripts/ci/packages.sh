#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packages end to end, as a user gets them: the package preset's workflow (build/package: prefix
# /usr, every supported GPU, CPack's .debs and .tar.gz), what each package holds, then the .debs
# installed with apt-get on this machine (root) and the .tar.gz unpacked elsewhere, each consumed
# through pkg-config and find_package, the README's quick start and the examples among the consumers
# (tests/scripts/check_install.sh; no GPU here: the programs say so and exit 0). The packages are
# removed again at the end (EW_KEEP_PACKAGES=1 keeps them).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build/package
work=$(mktemp -d)
installed=0
say() { printf '== packages: %s\n' "$*"; }
cleanup() {
    if [[ $installed == 1 && ${EW_KEEP_PACKAGES:-0} != 1 ]]; then
        say "removing the packages again"
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq libelementwise-dev libelementwise1 > /dev/null
    fi
    rm -rf "$work"
}
trap cleanup EXIT

if [[ $(id -u) -ne 0 ]]; then
    echo "packages.sh installs .deb files with apt-get and must run as root" >&2
    exit 1
fi

# ---- tools ----
missing=()
for tool in cmake:cmake ninja:ninja-build pkg-config:pkg-config dpkg-shlibdeps:dpkg-dev file:file \
            make:make; do
    command -v "${tool%%:*}" > /dev/null || missing+=("${tool#*:}")
done
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# ---- build and package ----
cd "$root"
rm -f "$build"/*.deb "$build"/*.tar.gz
cmake --workflow --preset package > "$work/workflow.log" 2>&1 || { cat "$work/workflow.log"; exit 1; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
runtime_deb=$(ls "$build"/libelementwise1_*.deb)
dev_deb=$(ls "$build"/libelementwise-dev_*.deb)
tarball=$(ls "$build"/libelementwise-*.tar.gz)
say "built $(basename "$runtime_deb") $(basename "$dev_deb") $(basename "$tarball") (version $version)"

# ---- what each package holds ----
fail() { echo "FAIL: $*" >&2; exit 1; }
contents() { dpkg-deb -c "$1" | awk '{print $6 $7 $8}' | sed 's|^\./|/|'; }
runtime_files=$(contents "$runtime_deb")
dev_files=$(contents "$dev_deb")
printf '%s\n' "-- $(basename "$runtime_deb")" "$runtime_files" "-- $(basename "$dev_deb")" "$dev_files"
grep -q "/libelementwise.so.$version\$" <<< "$runtime_files" || fail "runtime lacks the .so.$version"
grep -q '/libelementwise.so.1->libelementwise.so' <<< "$runtime_files" || fail "runtime lacks the SONAME link"
grep -vE '/$|/libelementwise\.so\.[0-9]' <<< "$runtime_files" && fail "runtime holds more than the library"
dpkg-deb -I "$runtime_deb" shlibs | grep -q "^libelementwise 1 libelementwise1 (>= $version" ||
    fail "runtime has no shlibs file"
grep -q '/libelementwise.so->libelementwise.so.1' <<< "$dev_files" || fail "dev lacks the .so namelink"
for want in /usr/include/elementwise.h /pkgconfig/elementwise.pc /cmake/elementwise/elementwiseConfig.cmake \
            /cmake/elementwise/elementwiseConfigVersion.cmake /cmake/elementwise/elementwiseTargets.cmake; do
    grep -q -- "$want\$" <<< "$dev_files" || fail "dev lacks $want"
done
grep -qE '/libelementwise\.so\.[0-9]' <<< "$dev_files" && fail "the library itself belongs in libelementwise1"
dev_depends=$(dpkg-deb -f "$dev_deb" Depends)
say "libelementwise-dev Depends: $dev_depends"
grep -q "libelementwise1 (= $version" <<< "$dev_depends" || fail "dev must depend on libelementwise1"
say "libelementwise1 Depends: $(dpkg-deb -f "$runtime_deb" Depends)"

# ---- install as a user would, and consume ----
say "apt-get install ./$(basename "$runtime_deb") ./$(basename "$dev_deb")"
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall "$runtime_deb" "$dev_deb"
pc_version=$(pkg-config --modversion elementwise)
[[ $pc_version == "$version" ]] || fail "pkg-config reports version $pc_version"
bash "$root/tests/scripts/check_install.sh" /usr pkgconfig find_package examples

# ---- the .tar.gz: unpacked anywhere, found through CMAKE_PREFIX_PATH and PKG_CONFIG_PATH ----
say "the unpacked $(basename "$tarball")"
mkdir "$work/tgz"
tar -xzf "$tarball" -C "$work/tgz"
header=$(find "$work/tgz" -path '*/include/elementwise.h')
[[ -n $header ]] || fail "the tarball lacks include/elementwise.h"
bash "$root/tests/scripts/check_install.sh" "$(dirname "$(dirname "$header")")" pkgconfig find_package examples

say "ok: packages built, installed and consumed through pkg-config and find_package"
