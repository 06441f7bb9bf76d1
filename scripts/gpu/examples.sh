#!/usr/bin/env bash
# The examples on the GPU machine: install a built tree into a temporary prefix, build examples/c
# (pkg-config) and examples/cmake (find_package) against it, and run both; each must really run on
# the GPU and find every result equal to the host's (its last line says so).
#
#   scripts/gpu/examples.sh BUILD_DIR    (a configured and built tree, e.g. the one scripts/gpu-check makes)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath "${1:?usage: scripts/gpu/examples.sh BUILD_DIR}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" --component runtime > /dev/null
cmake --install "$build" --prefix "$prefix" --component dev > /dev/null
# Both the pkg-config file and the CMake package find their prefix from their own place.
pc_file=$(find "$prefix" -name elementwise.pc)
cp -r "$root/examples" "$work/examples"
if [[ -z ${CUDA_HOME:-} ]] && command -v nvcc > /dev/null; then
    export CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
fi

expect_success() {
    local output
    output=$("$@")
    printf '%s\n' "$output"
    grep -q '^all [0-9]* elements of add, relu, scale_add and cast f32->f16 match the host$' <<< "$output" ||
        { echo "FAIL: $1 did not run its checks on the GPU" >&2; exit 1; }
}

if command -v pkg-config > /dev/null; then
    echo "== examples: examples/c with pkg-config"
    make -C "$work/examples/c" --no-print-directory PKG_CONFIG_PATH="$(dirname "$pc_file")"
else
    # CI builds this Makefile through pkg-config; here only the program itself is the point.
    echo "== examples: examples/c (no pkg-config on this machine: the flags it would give, by hand)"
    libdir=$(dirname "$(dirname "$pc_file")")
    make -C "$work/examples/c" --no-print-directory EW_CFLAGS="-I$prefix/include" \
        EW_LIBS="-L$libdir -lelementwise" EW_LIBDIR="$libdir"
fi
expect_success "$work/examples/c/elementwise_example"

echo "== examples: examples/cmake with find_package"
cmake -S "$work/examples/cmake" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$work/cmake-build" > /dev/null
expect_success "$work/cmake-build/elementwise_example"
echo "== examples: ok"
