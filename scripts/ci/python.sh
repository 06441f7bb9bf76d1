#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package, as a user gets it. With no argument (CI): build the cu13 release wheel with
# scripts/build-wheel (pip, scikit-build-core and CMake, renamed elementwise-cu13, checked and tagged
# manylinux by auditwheel) for the architectures EW_CI_ARCHITECTURES names, else for 90-real alone to
# be quick on two cores (.ci/run names the README build's list, whose device code its compiler cache
# already holds): the packaging is under test, not the kernels. Check that it is the one abi3 wheel
# (cp310-abi3: the compiled module is built for the stable ABI), install it into a fresh virtual
# environment and, with no CUDA toolkit visible (scripts/without-toolkit: no nvcc, no
# /usr/local/cuda), check that `import elementwise` finds its bundled library with no environment
# variable and run the Python CPU tests against the installed package, never the source tree
# (python/tests with ELEMENTWISE_TEST_INSTALLED=1, from another directory).
# Without a GPU the GPU tests skip, each with its reason (-rs). Prints the time of each step.
#
#   scripts/ci/python.sh                              the wheel, as above (needs PyPI and root)
#   scripts/ci/python.sh BUILD_DIR [pytest options]   the source tree's binding against BUILD_DIR's
#                                                     library (gpu-check's python stage): the compiled
#                                                     module is built against BUILD_DIR's header and
#                                                     staged with the package in BUILD_DIR/python;
#                                                     EW_PYTHON_BUILD_ONLY=1 stops there
# In the second form, with EW_REQUIRE_GPU=1 (scripts/gpu-check, where torch and CuPy are installed)
# every GPU test must run: a would-be skip (no GPU, no torch, no CuPy, no compiler for the C-path
# driver) fails instead, and nothing is installed. Elsewhere pytest is installed with pip when missing.
# The block-scaled casts' oracle, torchao 0.18 (python/tests/test_gpu_blocks.py), comes from the wheel in
# .deps/python when there is one (torchao-0.18.0-*.whl; the GPU machine has no index): unpacked into
# BUILD_DIR/python-deps, put first on PYTHONPATH (nothing of the environment changes), and then required
# (ELEMENTWISE_REQUIRE_TORCHAO=1: a failing import fails those tests instead of skipping them).
# The wheel on the GPU machine, offline: scripts/gpu/python-wheel.sh.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${PYTHON:-python3}

if [[ $# -gt 0 ]]; then
    build=$(realpath -m "$1")
    shift
    [[ -e $build/libelementwise.so.1 ]] || { echo "no $build/libelementwise.so.1: build it first" >&2; exit 1; }
    if [[ ${EW_REQUIRE_GPU:-0} == 1 ]]; then
        export ELEMENTWISE_REQUIRE_GPU=1
    elif ! "$python" -c 'import pytest' 2> /dev/null; then
        echo "== python: installing pytest"
        "$python" -m pip install --quiet pytest
    fi
    # The compiled module, built against BUILD_DIR's header (python/CMakeLists.txt alone) and staged in
    # BUILD_DIR/python/elementwise with the package's Python files, which the tests import.
    echo "== python: building the compiled module into $build/python"
    cmake -S "$root/python" -B "$build/python" -DEW_INCLUDE_DIR="$build/include" -DCMAKE_BUILD_TYPE=Release \
        -DPython_EXECUTABLE="$(command -v "$python")" > "$build/python-configure.log" 2>&1 ||
        { tail -n 20 "$build/python-configure.log"; echo "(Python's headers: python3-dev on Debian)" >&2; exit 1; }
    cmake --build "$build/python" > "$build/python-build.log" 2>&1 || { tail -n 40 "$build/python-build.log"; exit 1; }
    cp "$root"/python/elementwise/*.py "$root"/python/elementwise/py.typed "$build/python/elementwise/"
    [[ ${EW_PYTHON_BUILD_ONLY:-0} == 1 ]] && exit 0 # the package staged, for bench/run-all.sh
    torchao=$(ls "$root"/.deps/python/torchao-0.18.*.whl 2> /dev/null | sort -V | tail -n1 || true)
    if [[ -n $torchao ]]; then
        echo "== python: $(basename "$torchao") into $build/python-deps (the block casts' oracle)"
        rm -rf "$build/python-deps"
        # pip where the interpreter has it (no index, no dependencies: torch is the environment's), else
        # the wheel unpacked as it is, its .dist-info included (torchao reads its version from there).
        "$python" -m pip install --quiet --no-deps --no-index --target "$build/python-deps" "$torchao" 2> /dev/null ||
            "$python" -m zipfile -e "$torchao" "$build/python-deps"
        export PYTHONPATH=$build/python-deps${PYTHONPATH:+:$PYTHONPATH}
        export ELEMENTWISE_REQUIRE_TORCHAO=1
    fi
    export ELEMENTWISE_PACKAGE_DIR=$build/python
    export ELEMENTWISE_LIBRARY=$build/libelementwise.so.1
    export ELEMENTWISE_INCLUDE_DIR=$build/include
    cd "$root/python"
    exec "$python" -m pytest -rs -v -p no:cacheprovider "$@" tests
fi

work=$root/build/python-ci
rm -rf "$work"
mkdir -p "$work"
unset ELEMENTWISE_LIBRARY ELEMENTWISE_REQUIRE_GPU
start=$SECONDS
step() { echo "== python: $* (at $((SECONDS - start)) s)"; }

architectures=${EW_CI_ARCHITECTURES:-90-real}
step "building the cu13 wheel (CMAKE_CUDA_ARCHITECTURES=$architectures) with scripts/build-wheel"
wheel=$("$root/scripts/build-wheel" --cuda 13 --architectures "$architectures" --out "$work/dist" | tail -n1)
wheel_seconds=$((SECONDS - start))
files=$(python3 -m zipfile -l "$wheel" | awk 'NR > 1 {print $1}')
echo "   $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB: $(grep -v dist-info <<< "$files" | tr '\n' ' ')"
# One wheel for every CPython from 3.10 (the stable-ABI tag, the compiled module inside), named for its
# CUDA major, with the manylinux tag auditwheel granted.
[[ $(basename "$wheel") == elementwise_cu13-*-cp310-abi3-manylinux_*_x86_64*.whl ]] ||
    { echo "not a manylinux abi3 wheel of elementwise-cu13: $(basename "$wheel")" >&2; exit 1; }
for file in elementwise/_elementwise.abi3.so elementwise/libelementwise.so.1; do
    grep -qx "$file" <<< "$files" || { echo "the wheel has no $file" >&2; exit 1; }
done

step "installing it into a fresh virtual environment"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
"$work/venv/bin/python" -m pip install --quiet "$wheel" pytest
install_seconds=$((SECONDS - start - wheel_seconds))

# From here on no CUDA toolkit is visible (scripts/without-toolkit): what the wheel needs, it carries.
hide=("$root/scripts/without-toolkit")
step "importing it from outside the source tree, with no environment variable and no toolkit"
cd "$work"
"${hide[@]}" "$work/venv/bin/python" -c 'import elementwise as ew; print(ew.library_version())'
"${hide[@]}" "$work/venv/bin/python" -c 'import elementwise as ew; print("  ", ew.__version__, ew.library_path)'

step "the Python tests against the installed package, no toolkit visible"
test_start=$SECONDS
status=0
ELEMENTWISE_TEST_INSTALLED=1 "${hide[@]}" "$work/venv/bin/python" -m pytest -rs -p no:cacheprovider "$root/python/tests" ||
    status=$?
echo "== python: wheel ${wheel_seconds} s, install ${install_seconds} s, tests $((SECONDS - test_start)) s, total $((SECONDS - start)) s"
exit $status
