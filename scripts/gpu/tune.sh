#!/usr/bin/env bash
# Tuning knobs measured against each other in one run on the GPU (bench/NOTES.md): the same
# ew-bench subset on each variant, one table at the end. A variant is name:flags (a library build of
# its own with those compiler flags), name:env:VAR=value,... (build-gpu's ew-bench, which
# scripts/gpu-check builds, run with those environment variables) or name:tree:DIR (a build of another
# source tree, such as an earlier commit's `git archive`, to measure a change against in the same run).
#   scripts/gpu/tune.sh OUT_DIR [variant ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: tune.sh OUT_DIR [name:flags ...]}
shift
mkdir -p "$out"
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=("base:env:" "direct:env:EW_BULK_COPY=0" "tile4k:env:EW_BULK_TILE_BYTES=4096"
                                       "tile16k:env:EW_BULK_TILE_BYTES=16384")
# EW_TUNE_CASES: other ew-bench option sets, separated by ';'.
cases=(
    "--ops add --dtypes f32,f16,f64,i8,bool --log2 20,22,24,26,28 --offsets aligned,same,mixed"
    "--ops relu,cast --dtypes f32,f16,i8 --log2 22,24,26 --offsets aligned,same,mixed"
)
[ -z "${EW_TUNE_CASES:-}" ] || IFS=';' read -ra cases <<<"$EW_TUNE_CASES"
for variant in "${variants[@]}"; do
    name=${variant%%:*} flags=${variant#*:}
    environment=()
    source_dir=.
    if [[ $flags == tree:* ]]; then
        source_dir=${flags#tree:}
        flags=
    fi
    if [[ $flags == env:* ]]; then
        build=build-gpu
        IFS=, read -ra environment <<<"${flags#env:}"
    else
        build=build-tune-$name
        cmake -S "$source_dir" -B $build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90-real -DEW_BUILD_TESTS=OFF \
            -DCMAKE_C_FLAGS="$flags" -DCMAKE_CUDA_FLAGS="$flags" >"$out/$name-build.log" 2>&1 &&
            cmake --build $build -j 16 --target ew-bench >>"$out/$name-build.log" 2>&1 ||
            { echo "$name: build failed"; continue; }
    fi
    for i in "${!cases[@]}"; do
        # shellcheck disable=SC2086
        env "${environment[@]}" $build/bench/ew-bench ${cases[$i]} --csv "$out/$name-$i.csv" \
            >"$out/$name-$i.txt" 2>/dev/null || echo "$name: case set $i exit $?"
    done
done
python3 - "$out" "${variants[@]}" <<'PY'
import csv, glob, sys, os
out, variants = sys.argv[1], [v.split(":")[0] for v in sys.argv[2:]]
rows = {}
for name in variants:
    for path in sorted(glob.glob(os.path.join(out, f"{name}-*.csv"))):
        for r in csv.DictReader(open(path)):
            if r["impl"] != "ew":
                continue
            key = (r["op"], r["out_dtype"], r["in_dtype"], int(r["n"]), r["offsets"])
            rows.setdefault(key, {})[name] = float(r["gbps"])
print("GB/s per variant (ratio to the first)")
print(f"{'case':44s}" + "".join(f"{v:>14s}" for v in variants))
for key in sorted(rows):
    base = rows[key].get(variants[0])
    cells = []
    for v in variants:
        g = rows[key].get(v)
        cells.append(f"{'-':>14s}" if g is None else f"{g:8.0f} {g / base if base else 0:5.3f}")
    op, o, i, n, off = key
    print(f"{op + ' ' + (o if o == i else i + '->' + o):20s} 2^{n.bit_length() - 1:<3d} {off:18s}" + "".join(cells))
PY
