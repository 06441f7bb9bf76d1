#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The library and its CPU tests built with CUDA 12.9 (the oldest drivers' build, README: "What each
# build needs"): the toolchain that scripts/install-cuda12 lays out from PyPI's wheels in
# build/cuda-12.9, the default preset's options for sm_90 alone without the bench (to keep CI short)
# in build/cuda12, then every CPU test. No device code of this build runs here, so it is optimised
# less (cicc -O1, ptxas -O0), which halves its compile: the check is that CUDA 12.9's headers,
# runtime and ptxas take the sources, not the machine code's speed. The old-driver test must name
# the 12.9 runtime: the build really carries it. The NVRTC tests compile with the layout's NVRTC 12.9
# (its lib64, which the library searches first after the loader's path).
# Exit status: 0 only when the build and every CPU test passed, none skipped but those
# tests/scripts/check_skips.py allows.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build/cuda12
cd "$root"
start=$SECONDS

nvcc=$(scripts/install-cuda12 "$root/build/cuda-12.9" | tail -n1)
echo "== cuda12: toolchain $nvcc ($((SECONDS - start)) s)"
cmake --preset default -B "$build" -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90-real \
    -DCMAKE_CUDA_FLAGS="-Xcicc -O1 -Xptxas -O0" \
    -DEW_BUILD_BENCH=OFF >"$root/build/cuda12-configure.log" ||
    { cat "$root/build/cuda12-configure.log"; exit 1; }
grep -F -- '-- CUDA ' "$root/build/cuda12-configure.log"
cmake --build "$build"
echo "== cuda12: built ($((SECONDS - start)) s)"
ctest --test-dir "$build" -L cpu --output-on-failure --no-tests=error -j "$(nproc)" \
    --output-junit "$build/Testing/ctest.xml"
python3 tests/scripts/check_skips.py cpu "$build"
echo "== cuda12: test_nvrtc compiled with $(grep -o -m1 'NVRTC [0-9.]* from [^<]*' "$build/Testing/ctest.xml")"

# The message of the old-driver test names the runtime linked in.
message=$(LD_LIBRARY_PATH="$build/tests/stub_driver" "$build/tests/test_driver_version" 2>&1 |
    sed -n 's/.*ew_handle_create: //p')
echo "== cuda12: $message"
grep -q "carries the CUDA 12.9 runtime" <<<"$message" || { echo "cuda12.sh: the build does not carry CUDA 12.9's runtime" >&2; exit 1; }
echo "== cuda12: ok in $((SECONDS - start)) s"
