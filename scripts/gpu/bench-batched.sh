#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tensor-list targets in one go on this machine's GPU:
#   scripts/gpu/bench-batched.sh OUT_DIR [BUILD_DIR]
# BUILD_DIR (default build/gpu) is a CMake build with the bench (bench/ew-bench-batched). Writes
# OUT_DIR/ew-batched.csv, OUT_DIR/torch-foreach.csv (when PyTorch is there) and OUT_DIR/batched.md, the
# targets' table of the issue: list/flat GB/s, list/torch, end to end against the C loop and torch, host
# cost per call. Exits 1 when a step failed.
set -uo pipefail
# shellcheck source=scripts/gpu/common.sh
. "$(dirname "$0")/common.sh"
bench_setup ew-bench-batched "$@"

status=0
echo "== ew-bench-batched"
timeout 600 "$bench" --csv "$out/ew-batched.csv" || status=1
echo "== torch_foreach.py"
timeout 600 python3 "$here/bench/peers/torch_foreach.py" --csv "$out/torch-foreach.csv" || status=1

python3 - "$out" <<'PY' || status=1
import csv, os, sys
out = sys.argv[1]
rows = {}
for name in ("ew-batched.csv", "torch-foreach.csv"):
    path = os.path.join(out, name)
    if os.path.exists(path):
        for r in csv.DictReader(open(path)):
            rows[(r["case"], r["impl"], int(r["count"]))] = r
def get(case, impl, count=1000, field="us"):
    r = rows.get((case, impl, count))
    return float(r[field]) if r else None
def ratio(x, y):
    return f"{x / y:.2f}x" if x is not None and y else "no data"
def fmt(x, unit):
    return f"{x:.1f} {unit}" if x is not None else "no data"
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
add("1,000 x 4,096 add f32, host call to completion", fmt(e2e, "us"), "<= 40 us", None if e2e is None else e2e <= 40)
lines.append(f"| (same run) C loop of ew_binary / torch._foreach_add / torch.add loop | {fmt(loop, 'us')} / {fmt(tf, 'us')} / {fmt(tl, 'us')} | | |")
for count in (1, 100, 1000, 10000):
    h = get("host", "ew_batched", count)
    goal = 2 + 0.02 * count
    add(f"host time of one call, {count} entries", fmt(h, "us"), f"<= {goal:.2f} us", None if h is None else h <= goal)
lines.append(f"| (same run) host time of one ew_binary of 4,096 | {fmt(get('host', 'ew_binary', 1), 'us')} | | |")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "batched.md"), "w").write(text)
print(text)
PY
exit $status
