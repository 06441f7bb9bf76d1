#!/usr/bin/env bash
# The Python binding's tests on the GPU machine, against torch and CuPy (both installed there;
# nothing is installed by this script). Every GPU test must run: ELEMENTWISE_REQUIRE_GPU=1 turns a
# would-be skip (no GPU, no torch, no CuPy, no compiler for the C-path driver) into a failure.
# Only the CPU test of the no-GPU error path is skipped, since a GPU is present.
#
#   scripts/gpu/python.sh BUILD_DIR     (a configured and built tree, e.g. the one scripts/gpu-check makes)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(realpath "${1:?usage: scripts/gpu/python.sh BUILD_DIR}")
[[ -e $build/libelementwise.so.1 ]] || { echo "no $build/libelementwise.so.1: build it first" >&2; exit 1; }

export ELEMENTWISE_LIBRARY=$build/libelementwise.so.1
export ELEMENTWISE_INCLUDE_DIR=$build/include
export ELEMENTWISE_REQUIRE_GPU=1
junit=()
[[ -n ${OUT:-} ]] && junit=(--junitxml="$OUT/python-gpu.xml")
cd "$root/python"
exec python3 -m pytest -rs -v -p no:cacheprovider "${junit[@]}" tests
