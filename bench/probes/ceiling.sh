#!/usr/bin/env bash
# The ceiling probe's designs and the library on the same cases, each in its own process through the
# benchmark's harness, then one table: GB/s and the ratio to the cudaMemcpy each process measured.
#   bench/probes/ceiling.sh BUILD_DIR OUT_DIR [ew-bench options; default: 2^26 and 2^28]
set -uo pipefail
build=${1:?usage: ceiling.sh BUILD_DIR OUT_DIR [options]}
out=${2:?usage: ceiling.sh BUILD_DIR OUT_DIR [options]}
shift 2
options=("$@")
# shellcheck disable=SC2054 # one option value, a list of sizes
[ ${#options[@]} -gt 0 ] || options=(--log2 26,28)
mkdir -p "$out"
cases=(--offsets aligned "${options[@]}")
status=0
for ops in "--ops relu,add --dtypes f32" "--ops cast --dtypes f32,f16,u8"; do
    tag=${ops//[^a-z0-9]/}
    # shellcheck disable=SC2086
    "$build/bench/ew-bench" $ops "${cases[@]}" --csv "$out/library-$tag.csv" >"$out/library-$tag.txt" || status=1
    for design in pack1 pack2 pack4 pack2-nc pack2-cs pack2-stcs pack2-stride engine; do
        # shellcheck disable=SC2086
        "$build/bench/probes/ceiling-probe" --design $design $ops "${cases[@]}" --csv "$out/$design-$tag.csv" \
            >"$out/$design-$tag.txt" || status=1
    done
done
python3 - "$out" <<'PY'
import csv, glob, os, sys
rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.csv"))):
    for r in csv.DictReader(open(path)):
        if r["impl"].startswith("memcpy"):
            continue
        key = (r["op"], r["out_dtype"], r["in_dtype"], int(r["n"]))
        rows.setdefault(key, []).append((r["impl"], float(r["gbps"]), float(r["vs_memcpy"])))
probed = {k for k, v in rows.items() if any(i.startswith("probe-") for i, _, _ in v)}
for key in sorted(probed):
    op, o, i, n = key
    print(f"{op} {o}<-{i} n=2^{n.bit_length() - 1}")
    for impl, gbps, ratio in sorted(rows[key], key=lambda x: -x[2]):
        print(f"  {impl:22s} {gbps:8.1f} GB/s  {ratio:.3f}x memcpy")
PY
exit $status
