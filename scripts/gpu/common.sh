# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the bench scripts (scripts/gpu/bench-*.sh). bench_setup PROGRAM "$@" reads the scripts'
# arguments, OUT_DIR [BUILD_DIR], and sets here (the checkout), out (OUT_DIR, made), build (BUILD_DIR,
# default build/gpu) and bench (BUILD_DIR/bench/PROGRAM); it exits 2 where the arguments are wrong,
# OUT_DIR cannot be made or PROGRAM is not built.
bench_setup() {
    local program=$1
    shift
    if [ $# -lt 1 ]; then
        echo "usage: $0 OUT_DIR [BUILD_DIR]" >&2
        exit 2
    fi
    here=$(cd "$(dirname "$0")/../.." && pwd)
    out=$1
    build=${2:-$here/build/gpu}
    mkdir -p "$out" || exit 2
    bench=$build/bench/$program
    if [ ! -x "$bench" ]; then
        echo "$(basename "$0" .sh): $bench is missing: cmake --build $build --target $program" >&2
        exit 2
    fi
}
