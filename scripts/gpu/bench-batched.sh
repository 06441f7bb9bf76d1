#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tensor-list targets in one go on this machine's GPU:
#   scripts/gpu/bench-batched.sh OUT_DIR [BUILD_DIR]
# BUILD_DIR (default build/gpu) is a CMake build with the bench (bench/ew-bench-lists). Runs the bench
# and bench/peers/torch_foreach.py alternately, EW_BENCH_RUNS processes each (default 3): the host-bound
# rows (end to end, host time) vary between processes on a shared host, so each row is judged on its
# median over the runs, its range beside it. Writes OUT_DIR/ew-batched-R.csv and
# OUT_DIR/torch-foreach-R.csv (when PyTorch is there) for R = 1..runs, and OUT_DIR/batched.md, the
# targets' table of the issue: list/flat GB/s, list/torch, end to end against the C loop, torch and the
# flat call's floors, the list's GPU time, host cost per call. Exits 1 when a step failed.
set -uo pipefail
# shellcheck source=scripts/gpu/common.sh
. "$(dirname "$0")/common.sh"
bench_setup ew-bench-lists "$@"
runs=${EW_BENCH_RUNS:-3}

status=0
for run in $(seq 1 "$runs"); do
    echo "== ew-bench-lists, run $run of $runs"
    timeout 600 "$bench" --csv "$out/ew-batched-$run.csv" || status=1
    echo "== torch_foreach.py, run $run of $runs"
    timeout 600 python3 "$here/bench/peers/torch_foreach.py" --csv "$out/torch-foreach-$run.csv" || status=1
done

python3 - "$out" "$runs" <<'PY' || status=1
import csv, os, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = {}  # (case, impl, count) -> the runs' rows
for run in range(1, runs + 1):
    for name in (f"ew-batched-{run}.csv", f"torch-foreach-{run}.csv"):
        path = os.path.join(out, name)
        if os.path.exists(path):
            for r in csv.DictReader(open(path)):
                rows.setdefault((r["case"], r["impl"], int(r["count"])), []).append(r)
def values(case, impl, count, field):
    return [float(r[field]) for r in rows.get((case, impl, count), [])]
def get(case, impl, count=1000, field="us"):
    v = values(case, impl, count, field)
    return statistics.median(v) if v else None
def ratio(x, y):
    return f"{x / y:.2f}x" if x is not None and y else "no data"
def fmt(x, unit):
    return f"{x:.1f} {unit}" if x is not None else "no data"
def fmt_range(case, impl, count=1000, unit="us"):
    """The median, and the range over the runs where there are several."""
    v = values(case, impl, count, "us")
    text = fmt(get(case, impl, count), unit)
    return text if len(v) < 2 else f"{text} ({min(v):.1f}-{max(v):.1f} over {len(v)} runs)"
lines = ["| target | measured | goal | verdict |", "|---|---|---|---|"]
def add(target, measured, goal, ok):
    lines.append(f"| {target} | {measured} | {goal} | {'met' if ok else ('no data' if ok is None else 'missed')} |")
for case, what in (("loguniform", "add f32"), ("cast", "cast f16->f32")):
    lst, flat = get(case, "ew_batched", field="gbps"), get(case, "ew_flat", 1, "gbps")
    peer = get(case, "torch_foreach_add" if case == "loguniform" else "torch_foreach_copy", field="gbps")
    add(f"1,000 log-uniform {what}: list / flat GB/s", f"{fmt(lst, 'GB/s')} / {fmt(flat, 'GB/s')} = {ratio(lst, flat)}",
        ">= 0.90x", None if lst is None or not flat else lst / flat >= 0.90)
    add(f"1,000 log-uniform {what}: list / torch foreach", ratio(lst, peer), ">= 5x",
        None if lst is None or not peer else lst / peer >= 5)
e2e = get("e2e4096", "ew_batched")
loop, tf, tl = get("e2e4096", "ew_binary_loop"), get("e2e4096", "torch_foreach_add"), get("e2e4096", "torch_add_loop")
add("1,000 x 4,096 add f32, host call to completion", fmt_range("e2e4096", "ew_batched"), "<= 40 us",
    None if e2e is None else e2e <= 40)
lines.append(f"| (same run) C loop of ew_binary / torch._foreach_add / torch.add loop | {fmt(loop, 'us')} / {fmt(tf, 'us')} / {fmt(tl, 'us')} | | |")
lines.append(f"| (same run) one ew_binary over the same bytes / over one entry, call to completion | {fmt_range('e2e4096', 'ew_flat', 1)} / {fmt_range('e2e4096', 'ew_binary', 1)} | | |")
gl, gf = get("gpu4096", "ew_batched"), get("gpu4096", "ew_flat", 1)
lines.append(f"| (same run) the list's GPU time / the flat add's on its bytes | {fmt(gl, 'us')} / {fmt(gf, 'us')} = {ratio(gf, gl)} of the flat speed | | |")
for count in (1, 100, 1000, 10000):
    h = get("host", "ew_batched", count)
    goal = 2 + 0.02 * count
    add(f"host time of one call, {count} entries", fmt_range("host", "ew_batched", count), f"<= {goal:.2f} us",
        None if h is None else h <= goal)
lines.append(f"| (same run) host time of one ew_binary of 4,096 / of one raw cudaLaunchKernel | {fmt_range('host', 'ew_binary', 1)} / {fmt_range('host', 'raw_launch', 1)} | | |")
lines.append("")
lines.append(f"Medians over the runs ({runs} processes of each program, alternately).")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "batched.md"), "w").write(text)
print(text)
PY
exit $status
