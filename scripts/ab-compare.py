#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare two builds' benchmark results case by case: new GB/s over old GB/s.

    ab-compare.py --old OLD.csv [OLD.csv ...] --new NEW.csv [NEW.csv ...] [--threshold 0.99]

The CSVs are ew-bench's (bench/report.py names the columns: impl,op,out_dtype,in_dtype,n,offsets,
us,gbps,vs_memcpy); only the library's rows (impl "ew") with a bandwidth are compared, host-overhead
rows (offsets "host") left out. Several CSVs a side are rounds of the same sweep (scripts/gpu-check's
ab stage alternates them): each case takes the median of its rounds, and the spread column shows the
larger of the two sides' (max - min) / median, the noise against which a ratio is to be read.

Prints one line per case (old and new GB/s, new/old, spread; cases below the threshold marked "<"),
then the minimum ratio, the geometric mean and the cases below the threshold. Exit status 0, or 2
when the CSVs cannot be read or have no case in common. Python's standard library only.
"""

import argparse
import csv
import math
import statistics
import sys

KEY = ("op", "out_dtype", "in_dtype", "n", "offsets")


def read(paths):
    """{case: [GB/s, one value a CSV that has it]}"""
    cases = {}
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                missing = set(KEY + ("impl", "gbps")) - set(reader.fieldnames or [])
                if missing:
                    sys.exit("ab-compare: %s lacks the columns %s" % (path, ", ".join(sorted(missing))))
                for row in reader:
                    if row["impl"] != "ew" or row["offsets"] == "host" or not row["gbps"]:
                        continue
                    key = tuple(row[k] for k in KEY[:3]) + (int(row["n"]), row["offsets"])
                    cases.setdefault(key, []).append(float(row["gbps"]))
        except OSError as error:
            print("ab-compare: %s" % error, file=sys.stderr)
            sys.exit(2)
    return cases


def case_text(key):
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
    common = sorted(set(old) & set(new))
    if not common:
        print("ab-compare: no case in both the old and the new results", file=sys.stderr)
        return 2

    print("new/old GB/s, %d old and %d new CSVs, median of the rounds per case" % (len(args.old), len(args.new)))
    print("%-40s %9s %9s %7s %7s" % ("case", "old GB/s", "new GB/s", "new/old", "spread"))
    ratios = []
    for key in common:
        a, b = statistics.median(old[key]), statistics.median(new[key])
        ratio = b / a if a > 0 else float("inf")
        ratios.append((ratio, key))
        mark = " <" if ratio < args.threshold else ""
        noise = max(spread(old[key]), spread(new[key]))
        print("%-40s %9.1f %9.1f %7.3f %6.1f%%%s" % (case_text(key), a, b, ratio, 100 * noise, mark))
    for name, only in (("old", set(old) - set(new)), ("new", set(new) - set(old))):
        for key in sorted(only):
            print("%-40s only in the %s results" % (case_text(key), name))

    finite = [r for r, _ in ratios if 0 < r < float("inf")]
    lowest, lowest_key = min(ratios)
    below = [(r, k) for r, k in ratios if r < args.threshold]
    print()
    geomean = math.exp(sum(math.log(r) for r in finite) / len(finite)) if finite else float("nan")
    print("cases: %d; minimum new/old %.3f (%s); geometric mean %.4f"
          % (len(ratios), lowest, " ".join(case_text(lowest_key).split()), geomean))
    if below:
        listed = "; ".join("%s %.3f" % (" ".join(case_text(k).split()), r) for r, k in sorted(below))
        print("below %.2f: %d cases: %s" % (args.threshold, len(below), listed))
    else:
        print("below %.2f: none" % args.threshold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
