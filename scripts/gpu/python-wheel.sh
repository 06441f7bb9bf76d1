#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package on the GPU machine, which has no network: build the wheel from the repository
# root with pip, offline, from the wheels downloaded beforehand into .deps/python/ (scikit-build-core
# and its dependencies, pytest, pip: scripts/README.md has the command), install it into a fresh
# virtual environment that sees the machine's PyTorch and CuPy, and run every Python test against
# the installed package with ELEMENTWISE_REQUIRE_GPU=1 (a GPU test that would skip fails).
#
#   scripts/gpu/python-wheel.sh [pytest options]
# CMAKE_CUDA_ARCHITECTURES defaults to 90-real (H100, H200). Logs and the JUnit file go to $OUT
# (else build/python-wheel/out).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
python=${PYTHON:-python3}
deps=$root/.deps/python
work=$root/build/python-wheel
out=${OUT:-$work/out}
[[ -d $deps ]] || { echo "no $deps: download the wheels the build needs first (scripts/README.md)" >&2; exit 1; }
command -v nvcc > /dev/null || export PATH=$PATH:/usr/local/cuda/bin
rm -rf "$work/venv" "$work/cmake"
mkdir -p "$work" "$out"
unset ELEMENTWISE_LIBRARY
export PIP_NO_INDEX=1 PIP_FIND_LINKS=$deps PIP_DISABLE_PIP_VERSION_CHECK=1
start=$SECONDS

echo "== python-wheel: $("$python" --version), building and installing the wheel offline"
# Without ensurepip (Debian's python3 lacking python3-venv), pip comes from its own wheel in $deps.
if ! "$python" -m venv --system-site-packages "$work/venv" 2> /dev/null; then
    rm -rf "$work/venv"
    "$python" -m venv --system-site-packages --without-pip "$work/venv"
    pip_wheel=$(ls "$deps"/pip-*.whl | sort -V | tail -n1)
    "$work/venv/bin/python" "$pip_wheel/pip" install --quiet "$pip_wheel"
fi
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
CMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES:-90-real} SKBUILD_BUILD_DIR=$work/cmake \
    "$work/venv/bin/python" -m pip install -v "$root" > "$out/python-wheel-build.log" 2>&1 ||
    { tail -n 40 "$out/python-wheel-build.log"; exit 1; }
# The machine's frameworks may live in another environment (the interpreter may be a virtual
# environment itself, which --system-site-packages does not reach): its site directories go in as a
# .pth file, after the build (whose isolated environment must not see them) and after the venv's own
# directories, so the installed wheel wins.
"$python" -c 'import site; print("\n".join([*site.getsitepackages(), site.getusersitepackages()]))' \
    > "$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/zz-base-site.pth"
"$work/venv/bin/python" -c 'import pytest' 2> /dev/null || "$work/venv/bin/python" -m pip install --quiet pytest
echo "== python-wheel: built and installed in $((SECONDS - start)) s"

cd "$work"
"$work/venv/bin/python" -c 'import elementwise as ew; print(ew.__version__, ew.library_version(), ew.library_path)'
"$work/venv/bin/python" -c 'import torch, cupy; print("torch", torch.__version__, "cupy", cupy.__version__)' ||
    echo "== python-wheel: torch or CuPy is missing: their tests will fail (ELEMENTWISE_REQUIRE_GPU=1)"
status=0
ELEMENTWISE_TEST_INSTALLED=1 ELEMENTWISE_REQUIRE_GPU=1 ELEMENTWISE_INCLUDE_DIR=$work/cmake/include \
    "$work/venv/bin/python" -m pytest -rs -p no:cacheprovider --junitxml="$out/python-wheel.xml" "$@" \
    "$root/python/tests" > "$out/python-wheel.log" 2>&1 || status=$?
tail -n 25 "$out/python-wheel.log"
echo "== python-wheel: total $((SECONDS - start)) s, pytest exit $status"
exit $status
