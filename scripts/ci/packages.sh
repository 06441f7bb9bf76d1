#!/usr/bin/env bash
# Packages end to end, as a user gets them: build the .deb and .tar.gz with CPack, install the .debs
# with apt-get on this machine (root), build the C example against the installed package through
# pkg-config and the CMake example through find_package, run both (no GPU here: they say so and
# exit 0), then consume the .tar.gz through find_package too. The packages are removed again at
# the end (EW_KEEP_PACKAGES=1 keeps them).
#
#   scripts/ci/packages.sh [BUILD_DIR]
# An existing, built BUILD_DIR (as .ci/run passes) is packaged as it is, with its architectures: it is
# only reconfigured for the Debian prefix /usr, and its previous prefix is put back at the end. Without
# one, build-packages is configured and built (EW_CUDA_ARCHITECTURES=90-real for a quick build; by
# default the project's full list, about 7 minutes on two cores).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath -m "${1:-$root/build-packages}")
work=$(mktemp -d)
installed=0
say() { printf '== packages: %s\n' "$*"; }
cleanup() {
    if [[ $installed == 1 && ${EW_KEEP_PACKAGES:-0} != 1 ]]; then
        say "removing the packages again"
        DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq libelementwise-dev libelementwise1 > /dev/null
    fi
    if [[ -n ${previous_prefix:-} ]]; then
        cmake -DCMAKE_INSTALL_PREFIX="$previous_prefix" -UCMAKE_PROJECT_elementwise_INCLUDE "$build" \
            > /dev/null
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
# The top-level CMakeLists.txt includes cmake/packaging.cmake; until it does, inject it right after
# project() (the file has an include guard, so both together are harmless too).
inject=()
grep -q 'cmake/packaging.cmake' "$root/CMakeLists.txt" ||
    inject=(-DCMAKE_PROJECT_elementwise_INCLUDE="$root/cmake/packaging.cmake")
if [[ -e $build/CMakeCache.txt ]]; then
    # The pkg-config file records the configured prefix: /usr while packaging, then back as it was.
    say "reconfiguring $build for prefix /usr"
    previous_prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
    cmake -DCMAKE_INSTALL_PREFIX=/usr "${inject[@]}" "$build" > "$work/configure.log" ||
        { cat "$work/configure.log"; exit 1; }
else
    arch=()
    [[ -n ${EW_CUDA_ARCHITECTURES:-} ]] && arch=(-DCMAKE_CUDA_ARCHITECTURES="$EW_CUDA_ARCHITECTURES")
    say "configuring $build (prefix /usr)"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
        -DEW_BUILD_TESTS=OFF -DEW_BUILD_BENCH=OFF "${arch[@]}" "${inject[@]}" > "$work/configure.log" ||
        { cat "$work/configure.log"; exit 1; }
fi
cmake --build "$build"
rm -f "$build"/*.deb "$build"/*.tar.gz
(cd "$build" && cpack -G "DEB;TGZ" > "$work/cpack.log") || { cat "$work/cpack.log"; exit 1; }

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

# ---- install as a user would ----
say "apt-get install ./$(basename "$runtime_deb") ./$(basename "$dev_deb")"
installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall "$runtime_deb" "$dev_deb"
pc_version=$(pkg-config --modversion elementwise)
[[ $pc_version == "$version" ]] || fail "pkg-config reports version $pc_version"
say "pkg-config: $(pkg-config --cflags --libs elementwise)"

# ---- the examples, against the installed package, from a copy outside the tree ----
cp -r "$root/examples" "$work/examples"
say "examples/c with pkg-config"
make -C "$work/examples/c" --no-print-directory
ldd "$work/examples/c/elementwise_example" | grep -q 'libelementwise.so.1 => /usr/lib' ||
    fail "the C example does not load the installed library: $(ldd "$work/examples/c/elementwise_example")"
"$work/examples/c/elementwise_example"

say "examples/cmake with find_package"
cmake -S "$work/examples/cmake" -B "$work/cmake-build" -G Ninja > "$work/example-configure.log" ||
    { cat "$work/example-configure.log"; exit 1; }
grep -q 'elementwise_DIR:PATH=/usr/lib' "$work/cmake-build/CMakeCache.txt" || fail "find_package missed /usr"
cmake --build "$work/cmake-build"
"$work/cmake-build/elementwise_example"

# ---- the .tar.gz: unpacked anywhere, found through CMAKE_PREFIX_PATH and PKG_CONFIG_PATH ----
say "examples/cmake against the unpacked $(basename "$tarball")"
mkdir "$work/tgz"
tar -xzf "$tarball" -C "$work/tgz"
header=$(find "$work/tgz" -path '*/include/elementwise.h')
[[ -n $header ]] || fail "the tarball lacks include/elementwise.h"
tgz_prefix=$(dirname "$(dirname "$header")")
cmake -S "$work/examples/cmake" -B "$work/tgz-build" -G Ninja -DCMAKE_PREFIX_PATH="$tgz_prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
    -Delementwise_ROOT="$tgz_prefix" > "$work/tgz-configure.log" || { cat "$work/tgz-configure.log"; exit 1; }
grep -q "elementwise_DIR:PATH=$tgz_prefix" "$work/tgz-build/CMakeCache.txt" || fail "find_package missed it"
cmake --build "$work/tgz-build"
ldd "$work/tgz-build/elementwise_example" | grep -q "libelementwise.so.1 => $tgz_prefix" ||
    fail "the example does not load the unpacked library: $(ldd "$work/tgz-build/elementwise_example")"
"$work/tgz-build/elementwise_example"

say "examples/c with pkg-config against the unpacked $(basename "$tarball")"
cp -r "$root/examples/c" "$work/tgz-c"
tgz_pc_dir=$(dirname "$(find "$work/tgz" -name elementwise.pc)")
make -C "$work/tgz-c" --no-print-directory PKG_CONFIG_PATH="$tgz_pc_dir"
ldd "$work/tgz-c/elementwise_example" | grep -q "libelementwise.so.1 => $tgz_prefix" ||
    fail "the example does not load the unpacked library: $(ldd "$work/tgz-c/elementwise_example")"
"$work/tgz-c/elementwise_example"

say "ok: packages built, installed and consumed through pkg-config and find_package"
