#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One run of the library and every peer on this machine's GPU, then the report:
#   bench/run-all.sh BUILD_DIR OUT_DIR [sweep options for ew-bench-catalogue and the peers, e.g. --all, --ops add]
# BUILD_DIR is a CMake build of this repository (EW_BUILD_BENCH=ON). Writes OUT_DIR/{ew,cub,torch}.csv,
# the host-overhead CSVs, merged.csv, results.md (targets 1-6 and every ratio) and bench.png, then
# bench/python_bench.py's OUT_DIR/python/python-bench.{md,csv}: the Python package against PyTorch, CuPy
# and the C call (its own settings, not the sweep options) on BUILD_DIR's library, the package imported
# from EWB_PYTHONPATH (default: BUILD_DIR/python, where scripts/ci/python.sh stages it with its
# compiled module, as gpu-check's python and bench stages do).
# Every case, for the library and every peer, is timed in two columns (bench/lib/common.h): back-to-back
# calls, and isolated calls (plain stream order, an event between calls); --timing back-to-back or
# --timing isolated among the options times one. The report judges targets 1-4 and 6 on the isolated
# column, the host-time target 5 on both.
# Without a GPU it says so and exits 0. Exits 1 when a step failed (its log is in OUT_DIR).
# The default sweep takes about 3 minutes on an H200 (94 s before the isolated column, which about
# doubles the timed batches); EWB_STEP_TIMEOUT (seconds, default 300) bounds each sweep (raise it for
# --all).
set -uo pipefail
step_limit=${EWB_STEP_TIMEOUT:-300}

if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR [sweep options]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd) || exit 2
out=$2
shift 2
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)

ew_bench=$build/bench/ew-bench-catalogue
cub_peer=$build/bench/peers/cub-peer
library=$build/src/libelementwise.so # the ctypes cross-check's; older trees built it at the top
[ -e "$library" ] || library=$build/libelementwise.so
for f in "$ew_bench" "$cub_peer" "$library"; do
    [ -e "$f" ] || { echo "run-all: $f is missing: build with -DEW_BUILD_BENCH=ON first" >&2; exit 2; }
done

failed=()
# run NAME TIMEOUT COMMAND...: stdout to OUT/NAME.txt (and here), stderr (progress) to OUT/NAME.log.
run() {
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    echo "== $name: $*"
    timeout "$limit" "$@" > "$out/$name.txt" 2> "$out/$name.log"
    local rc=$?
    case $name in
    *-host | python) cat "$out/$name.txt" ;;
    *) grep -E '^(#|cross-check|no CUDA|torch not)' "$out/$name.txt" | tail -n 20 ;;
    esac
    echo "== $name: exit $rc after $((SECONDS - start)) s"
    if [ $rc -ne 0 ]; then
        failed+=("$name (exit $rc)")
        tail -n 20 "$out/$name.log"
    fi
    return $rc
}

# The cases and their settings (--batches, --batch-ms, --timing), which the torch peer takes from here.
"$ew_bench" --list "$@" > "$out/cases.txt" || exit 2
run ew-host 60 "$ew_bench" --host-overhead --csv "$out/ew-host.csv"
if grep -q '^no CUDA GPU found' "$out/ew-host.txt"; then
    echo "run-all: no GPU here: nothing else to run"
    exit 0
fi

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    if command -v nvidia-smi > /dev/null; then
        echo "gpu: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader -i 0)"
        echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0)"
    fi
    grep -m1 '^# device' "$out/ew-host.txt" | sed 's/^# device [0-9]*: /device: /'
    if command -v nvcc > /dev/null; then
        echo "cuda: $(nvcc --version | grep -o 'release [0-9.]*, V[0-9.]*')"
    fi
    python3 -c 'import torch; print("torch: %s (CUDA %s)" % (torch.__version__, torch.version.cuda))' \
        2> /dev/null
} > "$out/env.txt"
cat "$out/env.txt"

run ew "$step_limit" "$ew_bench" --csv "$out/ew.csv" "$@"
run cub-host 60 "$cub_peer" --host-overhead --csv "$out/cub-host.csv"
run cub "$step_limit" "$cub_peer" --csv "$out/cub.csv" "$@"
csvs=("$out/ew-host.csv" "$out/ew.csv" "$out/cub-host.csv" "$out/cub.csv")
if python3 -c 'import torch' 2> /dev/null; then
    run torch "$step_limit" python3 "$here/peers/torch_peer.py" --cases "$out/cases.txt" \
        --csv "$out/torch.csv" --lib "$library"
    csvs+=("$out/torch.csv")
else
    echo "== torch: python3 cannot import torch: PyTorch peer skipped"
fi

# It runs without torch too: it then says so and passes, but under EW_REQUIRE_GPU=1 (gpu-check).
run python "$step_limit" env PYTHONPATH="${EWB_PYTHONPATH:-$build/python}${PYTHONPATH:+:$PYTHONPATH}" \
    ELEMENTWISE_LIBRARY="$library" python3 "$here/python_bench.py" --out-dir "$out/python" --lib "$library"

present=()
for f in "${csvs[@]}"; do [ -s "$f" ] && present+=("$f"); done
python3 "$here/report.py" --out-dir "$out" --env "$out/env.txt" \
    --log "$out/ew.txt" --log "$out/cub.txt" --log "$out/torch.txt" "${present[@]}" || failed+=("report")

if [ ${#failed[@]} -ne 0 ]; then
    echo "run-all: failed steps: ${failed[*]}"
    exit 1
fi
echo "run-all: done; $out/results.md"
