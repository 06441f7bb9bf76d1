#!/usr/bin/env bash
# The Python binding's tests on this (GPU-less) machine: import, library lookup, dtype and stream
# handling, and the error path through the real library (creating a handle raises EW_ERROR_NO_DEVICE).
# The GPU tests in the same suite are skipped here, each with its reason (pytest -rs lists them).
#
#   scripts/ci/python.sh [BUILD_DIR]    (default: build; the library is built there if missing)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath -m "${1:-$root/build}")
python=${PYTHON:-python3}

if [[ ! -e $build/libelementwise.so.1 ]]; then
    echo "== python: building the library in $build"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CUDA_ARCHITECTURES="${EW_CUDA_ARCHITECTURES:-90-real}" \
        -DEW_BUILD_TESTS=OFF -DEW_BUILD_BENCH=OFF > /dev/null
    cmake --build "$build" --target elementwise
fi
if ! "$python" -c 'import pytest' 2> /dev/null; then
    echo "== python: installing pytest"
    "$python" -m pip install --quiet pytest
fi

export ELEMENTWISE_LIBRARY=$build/libelementwise.so.1
export ELEMENTWISE_INCLUDE_DIR=$build/include
cd "$root/python"
exec "$python" -m pytest -rs -v -p no:cacheprovider tests
