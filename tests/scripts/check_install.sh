#!/bin/sh
# The install tree, used as a consumer would: `cmake --install` into a fresh prefix, then
#   tree          the files (header, library with its SONAME links, pkg-config file, CMake package),
#                 the exported symbols and SONAME of the installed library, and no trace of cudart;
#   pkgconfig     build tests/consumer/consumer.c with `cc $(pkg-config --cflags --libs elementwise)`
#                 and run it;
#   find_package  configure and build tests/consumer/CMakeLists.txt (find_package(elementwise 1)) with
#                 CMAKE_PREFIX_PATH=<prefix> and run it.
# The consumer builds run without any CUDA path in the environment: the library carries cudart.
# Usage: check_install.sh MODE BUILD_DIR SOURCE_DIR LIBDIR C_COMPILER [CMAKE_GENERATOR]
set -eu
mode=$1
build=$2
source=$3
libdir=$4
cc=$5
generator=${6:-}
scripts=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$(mktemp -d "${TMPDIR:-/tmp}/ew-install-$mode.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
if ! cmake --install "$build" --prefix "$prefix" > "$prefix/install.log" 2>&1; then
    cat "$prefix/install.log"
    fail "cmake --install $build --prefix $prefix"
fi
lib="$prefix/$libdir"

# A consumer's environment: no CUDA on any search path.
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -i cuda | paste -s -d: -)
consumer_env() {
    env -u CPATH -u C_INCLUDE_PATH -u CPLUS_INCLUDE_PATH -u LIBRARY_PATH -u LD_LIBRARY_PATH -u CUDA_HOME \
        -u CUDA_PATH -u CUDAToolkit_ROOT -u CMAKE_PREFIX_PATH -u PKG_CONFIG_PATH PATH="$clean_path" "$@"
}

# The consumer binary takes libelementwise from the install tree, and never libcudart.
check_binary() {
    deps=$(ldd "$1") || fail "ldd $1"
    echo "$deps" | grep -q "libelementwise.so.1 => $lib/libelementwise.so.1" ||
        fail "$1 does not load libelementwise.so.1 from $lib:
$deps"
    if echo "$deps" | grep -q -i cudart; then fail "$1 loads the CUDA runtime:
$deps"; fi
}

case $mode in
tree)
    for f in "include/elementwise.h" "$libdir/pkgconfig/elementwise.pc" \
             "$libdir/cmake/elementwise/elementwiseConfig.cmake" \
             "$libdir/cmake/elementwise/elementwiseConfigVersion.cmake" \
             "$libdir/cmake/elementwise/elementwiseTargets.cmake"; do
        [ -f "$prefix/$f" ] || fail "not installed: $f"
    done
    ls "$lib/cmake/elementwise/"elementwiseTargets-*.cmake > /dev/null 2>&1 ||
        fail "not installed: $libdir/cmake/elementwise/elementwiseTargets-<config>.cmake"
    cmp -s "$prefix/include/elementwise.h" "$build/include/elementwise.h" ||
        fail "the installed header differs from the generated one"
    grep -n '@[A-Z_][A-Z_]*@' "$prefix/include/elementwise.h" &&
        fail "unreplaced @VAR@ in the installed header"
    grep -n '@[A-Za-z_]*@' "$lib/pkgconfig/elementwise.pc" && fail "unreplaced @VAR@ in elementwise.pc"
    full_version=$(ls "$lib" | sed -n 's/^libelementwise\.so\.\([0-9]*\.[0-9]*\.[0-9]*\)$/\1/p')
    sh "$scripts/check_soname.sh" "$lib" libelementwise.so.1 "$full_version"
    sh "$scripts/check_symbols.sh" "$lib/libelementwise.so" "$prefix/include/elementwise.h"
    found=$(find "$prefix" -iname '*cudart*' -o -iname '*cuda_runtime*')
    [ -z "$found" ] || fail "CUDA runtime files in the install tree: $found"
    if grep -r -i -l -e cudart -e 'CUDA::' -e CUDAToolkit "$lib/cmake" "$lib/pkgconfig"; then
        fail "the CMake package or pkg-config file refers to the CUDA toolkit"
    fi
    echo "OK: install tree at $prefix:"
    (cd "$prefix" && find . \( -type f -o -type l \) ! -name install.log | sort)
    ;;
pkgconfig)
    export PKG_CONFIG_PATH="$lib/pkgconfig"
    pc_prefix=$(pkg-config --variable=prefix elementwise) || fail "pkg-config does not find elementwise"
    cflags=$(pkg-config --cflags elementwise)
    libs=$(pkg-config --libs elementwise)
    echo "pkg-config: prefix=$pc_prefix cflags=$cflags libs=$libs"
    # The .pc file must describe where it was installed, not where the build was configured for.
    [ "$(cd "$pc_prefix" 2>/dev/null && pwd -P)" = "$(cd "$prefix" && pwd -P)" ] ||
        fail "elementwise.pc installed under $prefix says prefix=$pc_prefix: consumers would get
    $cflags $libs
which do not point into the install tree"
    # shellcheck disable=SC2086 # word splitting of the flags is intended
    consumer_env "$cc" -std=c99 -Wall -Wextra -Werror "$source/tests/consumer/consumer.c" \
        -o "$prefix/consumer" $cflags $libs -ldl "-Wl,-rpath,$lib" ||
        fail "building the consumer through pkg-config"
    check_binary "$prefix/consumer"
    "$prefix/consumer" || fail "the pkg-config consumer failed"
    ;;
find_package)
    consumer_build="$prefix/consumer-build"
    consumer_env cmake -S "$source/tests/consumer" -B "$consumer_build" ${generator:+-G "$generator"} \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release ||
        fail "configuring the find_package consumer"
    found_dir=$(sed -n 's/^elementwise_DIR:PATH=//p' "$consumer_build/CMakeCache.txt")
    [ "$(cd "$found_dir" && pwd -P)" = "$(cd "$lib/cmake/elementwise" && pwd -P)" ] ||
        fail "find_package found elementwise at $found_dir, not in the install tree"
    if grep -q -E '^(CMAKE_CUDA_COMPILER|CUDAToolkit_[A-Za-z_]*):' "$consumer_build/CMakeCache.txt"; then
        fail "the consumer project looked for CUDA"
    fi
    consumer_env cmake --build "$consumer_build" || fail "building the find_package consumer"
    check_binary "$consumer_build/app"
    "$consumer_build/app" || fail "the find_package consumer failed"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
