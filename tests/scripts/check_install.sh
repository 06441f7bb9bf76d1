#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The installed library used as a consumer uses it, every program built from a copy outside the tree:
#   tree          the installed files (header, library and its links, pkg-config file, CMake package),
#                 the library itself (check_library.sh), and no trace of the CUDA runtime;
#   pkgconfig     the README's quick start and tests/consumer/consumer.c, built with what
#                 `pkg-config --cflags`, `--libs` and `--variable=libdir` (the rpath) give, as the
#                 README says;
#   find_package  tests/consumer/CMakeLists.txt (find_package(elementwise 1)), CMAKE_PREFIX_PATH=PREFIX;
#   examples      examples/c (its Makefile, through pkg-config) and examples/cmake (find_package).
# The consumers build and run with no CUDA in their environment (the library carries its runtime);
# the examples use the CUDA runtime themselves, from CUDA_HOME (default /usr/local/cuda).
# Every program must load libelementwise.so.1 from PREFIX and exit 0: without a GPU they say so;
# with EW_REQUIRE_GPU=1 each must also have run its work on the GPU and found it right.
#
# Usage: check_install.sh BUILD_DIR|PREFIX MODE...
#   BUILD_DIR (it holds CMakeCache.txt) is installed into a fresh temporary prefix first (ctest);
#   PREFIX is an installed library: /usr from the .debs, an unpacked .tar.gz (scripts/ci/packages.sh).
# CC (default cc) and CMAKE_GENERATOR are taken from the environment.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
from=${1:?usage: check_install.sh BUILD_DIR|PREFIX MODE...}
shift
[ $# -gt 0 ] || { echo "usage: check_install.sh BUILD_DIR|PREFIX MODE..." >&2; exit 2; }
cc=${CC:-cc}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
fail() { echo "FAIL: $*" >&2; exit 1; }
say() { echo "== install: $*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ew-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -e "$from/CMakeCache.txt" ]; then
    prefix=$work/prefix
    cmake --install "$from" --prefix "$prefix" >"$work/install.log" 2>&1 ||
        { cat "$work/install.log"; fail "cmake --install $from --prefix $prefix"; }
else
    prefix=$(cd "$from" && pwd)
fi
libdir=
for candidate in "$prefix"/lib*/libelementwise.so.1 "$prefix"/lib/*/libelementwise.so.1; do
    [ -e "$candidate" ] && { libdir=$(dirname "$candidate"); break; }
done
[ -n "$libdir" ] || fail "no lib*/libelementwise.so.1 under $prefix"

# A consumer's environment: no CUDA on any search path, nothing pointing at another install.
clean_path=$(tr ':' '\n' <<<"$PATH" | grep -v -i cuda | paste -s -d: -)
consumer_env() {
    env -u CPATH -u C_INCLUDE_PATH -u CPLUS_INCLUDE_PATH -u LIBRARY_PATH -u LD_LIBRARY_PATH -u CUDA_HOME \
        -u CUDA_PATH -u CUDAToolkit_ROOT -u CMAKE_PREFIX_PATH PKG_CONFIG_PATH="$libdir/pkgconfig" \
        PATH="$clean_path" "$@"
}
# The examples' environment: the CUDA runtime of CUDA_HOME, libelementwise from PREFIX alone.
examples_env() {
    env -u LD_LIBRARY_PATH -u CMAKE_PREFIX_PATH PKG_CONFIG_PATH="$libdir/pkgconfig" "$@"
}
# CMake must find the package in PREFIX, never through a registry or another prefix.
cmake_consumer() { # ENVIRONMENT SOURCE BUILD [cmake options]
    local environment=$1 source=$2 build=$3
    shift 3
    "$environment" cmake -S "$source" -B "$build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
        -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF "$@" >"$build.log" 2>&1 ||
        { cat "$build.log"; fail "configuring $source against $prefix"; }
    local found
    found=$(sed -n 's/^elementwise_DIR:PATH=//p' "$build/CMakeCache.txt")
    [ "$(cd "$found" && pwd -P)" = "$(cd "$libdir/cmake/elementwise" && pwd -P)" ] ||
        fail "find_package found elementwise at $found, not in $libdir/cmake/elementwise"
    "$environment" cmake --build "$build" >>"$build.log" 2>&1 || { cat "$build.log"; fail "building $source"; }
}
# run ENVIRONMENT PROGRAM GPU_LINE: in that environment the program loads libelementwise.so.1 from
# PREFIX (and never libcudart), exits 0, and with EW_REQUIRE_GPU=1 prints GPU_LINE (a regex).
run() {
    local environment=$1 program=$2 gpu_line=$3 deps loaded output
    deps=$("$environment" ldd "$program") || fail "ldd $program"
    loaded=$(awk '$1 == "libelementwise.so.1" { print $3 }' <<<"$deps")
    [ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$libdir/libelementwise.so.1")" ] ||
        fail "$program does not load libelementwise.so.1 from $libdir:
$deps"
    if grep -qi cudart <<<"$deps"; then fail "$program loads the CUDA runtime:
$deps"; fi
    output=$("$environment" "$program") || fail "$program exited with status $?"
    printf '%s\n' "$output"
    if [ "${EW_REQUIRE_GPU:-0}" = 1 ] && [ -n "$gpu_line" ] && ! grep -Eq "$gpu_line" <<<"$output"; then
        fail "$program did not run its work on the GPU (EW_REQUIRE_GPU=1)"
    fi
}
consumer_line='^consumer: one f32 add of [0-9]+ elements on the GPU: correct$'
example_line='^all [0-9]+ elements of add, relu, scale_add and cast f32->f16 match the host$'
kernel_example_line='^all [0-9]+ elements of the kernel match scale_add, relu and cast f32->f16 bit for bit$'

for mode in "$@"; do
    case $mode in
    tree)
        say "the files under $prefix"
        for f in include/elementwise.h "${libdir#"$prefix"/}/pkgconfig/elementwise.pc" \
                 "${libdir#"$prefix"/}/cmake/elementwise/elementwiseConfig.cmake" \
                 "${libdir#"$prefix"/}/cmake/elementwise/elementwiseConfigVersion.cmake" \
                 "${libdir#"$prefix"/}/cmake/elementwise/elementwiseTargets.cmake"; do
            [ -f "$prefix/$f" ] || fail "not installed: $f"
        done
        compgen -G "$libdir/cmake/elementwise/elementwiseTargets-*.cmake" >/dev/null ||
            fail "not installed: elementwiseTargets-<config>.cmake"
        if [ -e "$from/CMakeCache.txt" ]; then
            cmp -s "$prefix/include/elementwise.h" "$from/include/elementwise.h" ||
                fail "the installed header differs from the generated one"
        fi
        ! grep -n '@[A-Za-z_]*@' "$prefix/include/elementwise.h" "$libdir/pkgconfig/elementwise.pc" ||
            fail "unreplaced @VAR@ in the installed header or pkg-config file"
        bash "$root/tests/scripts/check_library.sh" "$libdir" "$prefix/include/elementwise.h"
        found=$(find "$prefix" -iname '*cudart*' -o -iname '*cuda_runtime*')
        [ -z "$found" ] || fail "CUDA runtime files in the install tree: $found"
        ! grep -r -i -l -e cudart -e 'CUDA::' -e CUDAToolkit "$libdir/cmake" "$libdir/pkgconfig" ||
            fail "the CMake package or pkg-config file refers to the CUDA toolkit"
        (cd "$prefix" && find . \( -type f -o -type l \) | sort)
        ;;
    pkgconfig)
        pc_prefix=$(consumer_env pkg-config --variable=prefix elementwise) || fail "pkg-config finds no elementwise"
        cflags=$(consumer_env pkg-config --cflags elementwise)
        libs=$(consumer_env pkg-config --libs elementwise)
        rpath=$(consumer_env pkg-config --variable=libdir elementwise)
        say "pkg-config: prefix=$pc_prefix cflags=$cflags libs=$libs libdir=$rpath"
        # The .pc file must describe where it is installed, not where the build was configured for.
        [ "$(cd "$pc_prefix" && pwd -P)" = "$(cd "$prefix" && pwd -P)" ] ||
            fail "elementwise.pc under $prefix says prefix=$pc_prefix"
        say "the README's quick start: cc -c app.c \$(pkg-config --cflags elementwise), then --libs"
        awk '/^## / { section = $0; next }
             section == "## Quick start" && /^```c$/ { inside = 1; next }
             inside && /^```$/ { exit }
             inside { print }' "$root/README.md" >"$work/quickstart.c"
        [ -s "$work/quickstart.c" ] || fail "no \`\`\`c block under '## Quick start' in README.md"
        echo 'int main(void) { return 0; }' >>"$work/quickstart.c"
        # shellcheck disable=SC2086 # the flags are lists
        consumer_env "$cc" -std=c99 -pedantic -Wall -Wextra -Werror -c "$work/quickstart.c" \
            -o "$work/quickstart.o" $cflags || fail "the README's quick start does not compile"
        # shellcheck disable=SC2086
        consumer_env "$cc" "$work/quickstart.o" -o "$work/quickstart" $libs "-Wl,-rpath,$rpath" ||
            fail "the README's quick start does not link"
        run consumer_env "$work/quickstart" ""
        say "tests/consumer/consumer.c"
        # shellcheck disable=SC2086
        consumer_env "$cc" -std=c99 -Wall -Wextra -Werror "$root/tests/consumer/consumer.c" \
            -o "$work/consumer" $cflags $libs -ldl "-Wl,-rpath,$rpath" || fail "building the consumer"
        run consumer_env "$work/consumer" "$consumer_line"
        ;;
    find_package)
        say "tests/consumer with find_package"
        cmake_consumer consumer_env "$root/tests/consumer" "$work/consumer-build"
        if grep -Eq '^(CMAKE_CUDA_COMPILER|CUDAToolkit_[A-Za-z_]*):' "$work/consumer-build/CMakeCache.txt"; then
            fail "the consumer project looked for CUDA"
        fi
        run consumer_env "$work/consumer-build/app" "$consumer_line"
        ;;
    examples)
        cp -r "$root/examples" "$work/examples"
        say "examples/c with pkg-config"
        examples_env make -C "$work/examples/c" --no-print-directory CC="$cc" CUDA_HOME="$cuda_home" \
            >"$work/examples-c.log" 2>&1 || { cat "$work/examples-c.log"; fail "building examples/c"; }
        run examples_env "$work/examples/c/elementwise_example" "$example_line"
        run examples_env "$work/examples/c/kernel_example" "$kernel_example_line"
        say "examples/cmake with find_package"
        cmake_consumer examples_env "$work/examples/cmake" "$work/examples-build" -DCUDAToolkit_ROOT="$cuda_home"
        run examples_env "$work/examples-build/elementwise_example" "$example_line"
        run examples_env "$work/examples-build/kernel_example" "$kernel_example_line"
        ;;
    *)
        fail "unknown mode $mode (tree, pkgconfig, find_package, examples)"
        ;;
    esac
done
say "ok: $* against $prefix"
