#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Hardware counters (Nsight Compute) of one kernel launch per case, to find what bounds a kernel
# before changing it. A case is name|environment|program and options; the program
# is ew-bench-catalogue or peers/cub-peer under BUILD_DIR/bench, run on one case (--log2 one k, one --offsets); the
# profiled launch is the 8th that the kernel regex matches (after warm-up and probe): the library's
# kernels and CUB's, or KERNEL_REGEX=... among the case's settings.
#   scripts/gpu/profile.sh BUILD_DIR OUT_DIR 'name|VAR=value ...|ew-bench-catalogue --ops add ...' ...
#   scripts/gpu/profile.sh BUILD_DIR OUT_DIR < scripts/gpu/profile-cases.txt   (a case a line)
# Writes OUT_DIR/NAME.csv (ncu's details page) per case and prints one table of the key metrics; a
# case ncu cannot profile is named and left out of the table.
set -euo pipefail
build=$(cd "${1:?usage: profile.sh BUILD_DIR OUT_DIR CASE...}" && pwd)
out=${2:?usage: profile.sh BUILD_DIR OUT_DIR CASE...}
shift 2
if [ $# -eq 0 ]; then
    mapfile -t cases < <(grep -v -e '^#' -e '^[[:space:]]*$' || true)
    set -- "${cases[@]}"
fi
mkdir -p "$out"
export PATH=$PATH:/usr/local/cuda/bin
sections=(SpeedOfLight Occupancy LaunchStats WarpStateStats SchedulerStats MemoryWorkloadAnalysis)
for spec in "$@"; do
    IFS='|' read -r name environment command <<<"$spec"
    regex='elementwise_kernel|bulk_kernel|transform_kernel'
    for setting in $environment; do # KERNEL_REGEX=... picks other kernels (no spaces: '.' for one)
        if [[ $setting == KERNEL_REGEX=* ]]; then regex=${setting#KERNEL_REGEX=}; fi
    done
    # Stall reasons too, where this ncu knows them by that name; without them if it does not.
    for extra in "--metrics=regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio" ""; do
        status=0
        # shellcheck disable=SC2086 # the environment, the extra option and the command are lists
        env $environment timeout 300 ncu --clock-control none --kernel-name-base demangled -k "regex:$regex" \
            --launch-skip 7 --launch-count 1 "${sections[@]/#/--section=}" $extra --csv --page details \
            "$build/bench/"$command --batches 5 --no-check >"$out/$name.csv" 2>"$out/$name.log" || status=$?
        [ "$status" -ne 0 ] || break
        echo "$name: exit $status with '$extra'"
    done
done
python3 - "$out" "$@" <<'PY'
import csv, io, os, sys
out, specs = sys.argv[1], sys.argv[2:]
wanted = [
    ("Duration", "us"), ("DRAM Throughput", "dram%"), ("Memory Throughput", "mem%"),
    ("Achieved Occupancy", "occ%"), ("Registers Per Thread", "regs"), ("Grid Size", "grid"),
    ("Dynamic Shared Memory Per Block", "dsmem"), ("Issue Slots Busy", "issue%"),
    ("Executed Ipc Active", "ipc"), ("No Eligible", "noelig%"),
    ("Warp Cycles Per Issued Instruction", "cpi"),
    ("Block Limit Registers", "lim_reg"), ("Block Limit Shared Mem", "lim_smem"),
]
print("name".ljust(22) + "".join(label.rjust(9) for _, label in wanted) + "  kernel")
for spec in specs:
    name = spec.split("|")[0].strip()
    path = os.path.join(out, name + ".csv")
    text = open(path, errors="replace").read() if os.path.exists(path) else ""
    start = text.find('"ID"')
    rows = list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []
    if not rows:
        print(name.ljust(22) + " no profile (see " + name + ".log)")
        continue
    values = {}
    for r in rows:
        values.setdefault(r["Metric Name"], (r["Metric Value"], r["Metric Unit"]))
    cells = []
    for metric, _ in wanted:
        v, unit = values.get(metric, ("-", ""))
        if metric == "Duration" and unit in ("msecond", "ms"):
            v = str(float(v.replace(",", "")) * 1000)
        elif metric == "Duration" and unit in ("nsecond", "ns"):
            v = str(float(v.replace(",", "")) / 1000)
        cells.append(v.replace(",", "")[:8].rjust(9))
    print(name.ljust(22) + "".join(cells) + "  " + rows[0]["Kernel Name"][:90])
    stalls = sorted(((float(v.replace(",", "")), m.split("stalled_")[1].split("_per_")[0])
                     for m, (v, _) in values.items() if "issue_stalled_" in m and v.replace(",", "").replace(".", "").isdigit()),
                    reverse=True)
    if stalls:
        print(" " * 22 + "stalls per issue: " + ", ".join(f"{s} {v:.2f}" for v, s in stalls[:6]))
PY
