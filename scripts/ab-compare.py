#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare two builds' benchmark results case by case: new GB/s over old GB/s.

    ab-compare.py --old OLD.csv [OLD.csv ...] --new NEW.csv [NEW.csv ...] [--threshold 0.99]

The CSVs are ew-bench-catalogue's (bench/report.py names the columns: impl,op,out_dtype,in_dtype,n,offsets,
us,gbps,vs_memcpy,...) or ew-bench-strided's (target,case,impl,...,gbps,...,gbps_isolated,...); one
side's CSVs are all of one kind. The library's rows (impl "ew", and ew-bench-strided's user kernels,
impl "ew_kernel") with a bandwidth are compared, host-overhead rows (ew-bench-catalogue's offsets "host",
ew-bench-strided's target 6) and yardsticks left out. Both timing columns are compared where the CSVs
have them: back-to-back (gbps) and isolated (gbps_isolated). Several CSVs a side are rounds of the
same sweep (scripts/gpu-check's ab stage alternates them): each case takes the median of its rounds,
and the spread shows the larger of the two sides' (max - min) / median, the noise against which a
ratio is to be read.

Prints one line per case and column (old and new GB/s, new/old, spread; ratios below the threshold
marked "<"), then per column the minimum ratio, the geometric mean and the cases below the threshold.
Exit status 0, or 2 when the CSVs cannot be read or have no case in common. Python's standard library
only.
"""

import argparse
import csv
import math
import statistics
import sys

BENCH_KEY = ("op", "out_dtype", "in_dtype", "n", "offsets")
STRIDED_KEY = ("case", "impl")
COLUMNS = (("b2b", "gbps"), ("iso", "gbps_isolated"))


def case_key(row, strided):
    """The case a row times, or None where it is not compared."""
    if strided:
        if row["impl"] not in ("ew", "ew_kernel") or row.get("target") == "6":
            return None
        return (row["case"], row["impl"])
    if row["impl"] != "ew" or row["offsets"] == "host":
        return None
    return tuple(row[k] for k in BENCH_KEY[:3]) + (int(row["n"]), row["offsets"])


def read(paths):
    """{(case, column): [GB/s, one value a CSV that has it]}"""
    cases = {}
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                fields = set(reader.fieldnames or [])
                strided = "case" in fields
                missing = set((STRIDED_KEY if strided else BENCH_KEY) + ("impl", "gbps")) - fields
                if missing:
                    sys.exit("ab-compare: %s lacks the columns %s" % (path, ", ".join(sorted(missing))))
                for row in reader:
                    key = case_key(row, strided)
                    if key is None:
                        continue
                    for column, field in COLUMNS:
                        if row.get(field):
                            cases.setdefault((key, column), []).append(float(row[field]))
        except OSError as error:
            print("ab-compare: %s" % error, file=sys.stderr)
            sys.exit(2)
    return cases


def case_text(key):
    if len(key) == 2:  # ew-bench-strided: case, impl
        name, impl = key
        return name if impl == "ew" else "%s (%s)" % (name, impl)
    op, out, inp, n, offsets = key
    entry = "%s %s" % (op, out) if out == inp else "%s %s<-%s" % (op, out, inp)
    k = n.bit_length() - 1
    size = "2^%d" % k if n == 1 << k else str(n)
    return "%-22s %-7s %s" % (entry, size, offsets)


def spread(values):
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle > 0 else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", nargs="+", required=True, metavar="CSV", help="the base build's results")
    parser.add_argument("--new", nargs="+", required=True, metavar="CSV", help="the new build's results")
    parser.add_argument("--threshold", type=float, default=0.99, help="mark ratios below this (0.99)")
    args = parser.parse_args()

    old, new = read(args.old), read(args.new)
    common = sorted(set(old) & set(new), key=lambda kc: (str(kc[0]), kc[1]))
    if not common:
        print("ab-compare: no case in both the old and the new results", file=sys.stderr)
        return 2

    print("new/old GB/s, %d old and %d new CSVs, median of the rounds per case" % (len(args.old), len(args.new)))
    print("%-44s %-4s %9s %9s %7s %7s" % ("case", "", "old GB/s", "new GB/s", "new/old", "spread"))
    ratios = {}
    for key, column in common:
        a, b = statistics.median(old[key, column]), statistics.median(new[key, column])
        ratio = b / a if a > 0 else float("inf")
        ratios.setdefault(column, []).append((ratio, key))
        mark = " <" if ratio < args.threshold else ""
        noise = max(spread(old[key, column]), spread(new[key, column]))
        print("%-44s %-4s %9.1f %9.1f %7.3f %6.1f%%%s" % (case_text(key), column, a, b, ratio, 100 * noise, mark))
    for name, only in (("old", set(old) - set(new)), ("new", set(new) - set(old))):
        for key in sorted({k for k, _ in only}, key=str):
            print("%-44s only in the %s results" % (case_text(key), name))

    print()
    for column, _ in COLUMNS:
        if column not in ratios:
            continue
        finite = [r for r, _ in ratios[column] if 0 < r < float("inf")]
        lowest, lowest_key = min(ratios[column], key=lambda rk: rk[0])
        below = [(r, k) for r, k in ratios[column] if r < args.threshold]
        geomean = math.exp(sum(math.log(r) for r in finite) / len(finite)) if finite else float("nan")
        print("%s: cases: %d; minimum new/old %.3f (%s); geometric mean %.4f"
              % (column, len(ratios[column]), lowest, " ".join(case_text(lowest_key).split()), geomean))
        if below:
            listed = "; ".join("%s %.3f" % (" ".join(case_text(k).split()), r)
                               for r, k in sorted(below, key=lambda rk: rk[0]))
            print("%s: below %.2f: %d cases: %s" % (column, args.threshold, len(below), listed))
        else:
            print("%s: below %.2f: none" % (column, args.threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
