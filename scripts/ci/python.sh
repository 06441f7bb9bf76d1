#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python binding's tests (python/tests) against a built library. Here, without a GPU: import,
# library lookup, dtype and stream handling, and the error path through the real library (creating
# a handle raises EW_ERROR_NO_DEVICE); the GPU tests are skipped, each with its reason (-rs).
# With EW_REQUIRE_GPU=1 (scripts/gpu-check, where torch and CuPy are installed) every GPU test must
# run: a would-be skip (no GPU, no torch, no CuPy, no compiler for the C-path driver) fails instead,
# and nothing is installed. Elsewhere pytest is installed with pip when missing.
#
#   scripts/ci/python.sh [BUILD_DIR [pytest options]]
# BUILD_DIR defaults to build/ (the default preset), where the library is built if it is missing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath -m "${1:-$root/build}")
shift $(($# > 0 ? 1 : 0))
python=${PYTHON:-python3}

if [[ ! -e $build/libelementwise.so.1 ]]; then
    [[ $build == "$root/build" ]] || { echo "no $build/libelementwise.so.1: build it first" >&2; exit 1; }
    echo "== python: building the library with the default preset"
    (cd "$root" && cmake --preset default > /dev/null && cmake --build --preset default --target elementwise)
fi
if [[ ${EW_REQUIRE_GPU:-0} == 1 ]]; then
    export ELEMENTWISE_REQUIRE_GPU=1
elif ! "$python" -c 'import pytest' 2> /dev/null; then
    echo "== python: installing pytest"
    "$python" -m pip install --quiet pytest
fi

export ELEMENTWISE_LIBRARY=$build/libelementwise.so.1
export ELEMENTWISE_INCLUDE_DIR=$build/include
cd "$root/python"
exec "$python" -m pytest -rs -v -p no:cacheprovider "$@" tests
