#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The user-defined kernels' targets in one go on this machine's GPU:
#   scripts/gpu/bench-kernel.sh OUT_DIR [BUILD_DIR]
# BUILD_DIR (default build/gpu) is a CMake build with the bench target ew-bench-user-kernels. Writes to OUT_DIR:
#   ew-kernel-create-compile.csv, .log  ew-bench-user-kernels --create-only compile: new sources compiled, with
#                                       EW_KERNEL_CACHE_DIR a fresh empty directory, then one created again
#                                       in the same process (the memory cache)
#   ew-kernel-create-disk.csv, .log     --create-only disk: a second process creates the same sources from
#                                       that directory (the disk cache), NVRTC unreachable
#                                       (EW_NVRTC_LIBRARY names no library)
#   ew-kernel-cold.csv, .log            $EW_COLD_PROCESSES (default 5) pairs of fresh processes in turn:
#                                       --create-only compile --sources 1 (a process's first create, an
#                                       empty cache of its own) and --create-only floor (NVRTC's own open
#                                       and empty kernel)
#   ew-kernel.csv, .log                 targets 1-3, 6 and 7 and the host time of a launch
#   torch-kernel.csv, .log              bench/peers/torch_kernel.py: torch.compile, PyTorch eager and CuPy
#                                       on target 2's chain
#   kernel.md                           bench/kernel_report.py's table, printed at the end
# Python: $PYTHON, else /opt/torch/.venv/bin/python3 where it exists, else python3 (the one holding PyTorch
# and CuPy). Options for both ew-bench-user-kernels and the peer (--batches N, --batch-ms T, --timing LIST,
# --device D) go in EW_KERNEL_ARGS. Exits 0; 1 when a step failed; 3 when ew-bench-user-kernels found no NVRTC.
set -uo pipefail
# shellcheck source=scripts/gpu/common.sh
. "$(dirname "$0")/common.sh"
bench_setup ew-bench-user-kernels "$@"
python=${PYTHON:-}
if [ -z "$python" ]; then
    python=python3
    [ -x /opt/torch/.venv/bin/python3 ] && python=/opt/torch/.venv/bin/python3
fi
# shellcheck disable=SC2206 # word splitting of the extra options is intended
extra=(${EW_KERNEL_ARGS:-})
cache=$(mktemp -d "${TMPDIR:-/tmp}/ew-kernel-cache.XXXXXX") || exit 2
trap 'rm -rf "$cache"' EXIT
tag=$(date +%s%N)-$$ # the --create-only sources' comment: new to any cache

status=0
# step NAME TIMEOUT COMMAND...: output to the terminal and OUT_DIR/NAME.log; the command's exit status.
step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name"
    timeout "$limit" "$@" 2>&1 | tee "$out/$name.log"
    return "${PIPESTATUS[0]}"
}

device=()
for ((i = 0; i < ${#extra[@]}; ++i)); do
    [ "${extra[i]}" = --device ] && device=(--device "${extra[i + 1]:-0}")
done
EW_KERNEL_CACHE_DIR=$cache step ew-kernel-create-compile 300 "$bench" --create-only compile --tag "$tag" \
    --csv "$out/ew-kernel-create-compile.csv" "${device[@]}"
rc=$?
if grep -q '^no CUDA GPU found' "$out/ew-kernel-create-compile.log"; then
    echo "bench-kernel: no GPU here: nothing else to run"
    exit 0
fi
if [ $rc -eq 3 ]; then
    echo "bench-kernel: ew_kernel_create found no NVRTC (EW_ERROR_NOT_SUPPORTED): nothing measured" >&2
    exit 3
fi
[ $rc -eq 0 ] || status=1
echo "== the cache directory holds $(find "$cache" -type f | wc -l) files after the compile run"
EW_KERNEL_CACHE_DIR=$cache EW_NVRTC_LIBRARY=/nonexistent/libnvrtc.so step ew-kernel-create-disk 300 "$bench" \
    --create-only disk --tag "$tag" --csv "$out/ew-kernel-create-disk.csv" "${device[@]}" || status=1
# The cold series: each figure a process of its own, the two kinds in turn; one CSV header.
: >"$out/ew-kernel-cold.log"
rm -f "$out/ew-kernel-cold.csv"
skip=1 # the line each CSV is copied from: 1 for the first process, past the header for the others
for ((r = 0; r < ${EW_COLD_PROCESSES:-5}; ++r)); do
    mkdir "$cache/cold-$r"
    for kind in compile floor; do
        EW_KERNEL_CACHE_DIR=$cache/cold-$r timeout 120 "$bench" --create-only $kind --sources 1 --tag "$tag-cold-$r" \
            --csv "$cache/cold.csv" "${device[@]}" >>"$out/ew-kernel-cold.log" 2>&1 || status=1
        tail -n +$skip "$cache/cold.csv" >>"$out/ew-kernel-cold.csv" && skip=2
    done
done
grep -E '^(create \(compile\)|floor)' "$out/ew-kernel-cold.log"
EW_KERNEL_CACHE_DIR=$cache step ew-kernel 600 "$bench" --csv "$out/ew-kernel.csv" "${extra[@]}" || status=1
step torch-kernel 600 "$python" "$here/bench/peers/torch_kernel.py" --csv "$out/torch-kernel.csv" \
    "${extra[@]}" || status=1
echo "== kernel_report.py"
"$python" "$here/bench/kernel_report.py" "$out" || status=1
echo "bench-kernel: $out/kernel.md"
exit $status
