#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare two builds' benchmark results case by case: new speed over old speed.

    ab-compare.py --old OLD.csv [OLD.csv ...] --new NEW.csv [NEW.csv ...] [--threshold 0.99]

The CSVs are ew-bench-catalogue's (bench/report.py names the columns: impl,op,out_dtype,in_dtype,n,offsets,
us,gbps,vs_memcpy,...), ew-bench-strided's (target,case,impl,...,gbps,...,gbps_isolated,...) or
ew-bench-user-kernels' (target,case,dtype,n,alignment,timing,metric,library,...), ew-bench-scaled's
(case,impl,n,column,unit,value,...) or ew-bench-lists' (case,impl,count,elements,us,gbps); one side's CSVs are all of one kind. The library's rows are compared: ew-bench-catalogue's impl "ew" by bandwidth and its
host-overhead rows (offsets "host", the library's launchers) by host microseconds a call;
ew-bench-strided's impl "ew" and "ew_kernel" (user kernels) by bandwidth, its host target 6 left out;
ew-bench-user-kernels' figures of the library (GB/s, microseconds a chain, host microseconds a launch,
and in a column "create" the microseconds of ew_kernel_create: each round of `--create-only compile
--sources 1` is a fresh process's first create); ew-bench-scaled's value of each case (GB/s, microseconds a call, host microseconds
a call). Yardsticks are left out. Both timing columns are compared where the CSVs have
them: back-to-back and isolated. A time's ratio is old over new, so that above 1 is faster either way. Several CSVs a side are rounds of the
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

BENCH_KEY = ("impl", "op", "out_dtype", "in_dtype", "n", "offsets", "gbps")
STRIDED_KEY = ("case", "impl", "gbps")
USER_KEY = ("target", "case", "dtype", "n", "alignment", "timing", "metric", "library")
SCALED_KEY = ("case", "impl", "n", "column", "unit", "value")
LISTS_KEY = ("case", "impl", "count", "elements", "us")
COLUMNS = ("b2b", "iso", "create", "gpu", "host")
TIMINGS = {"back-to-back": "b2b", "isolated": "iso"}
TIME = "us"  # the unit of figures where less is faster; GB/s otherwise


def row_figures(row, kind):
    """The case a row times and its figures, [(column, unit, value)], or None where it is not compared."""
    if kind == "user":
        if row["metric"] not in ("gbps", "us", "host_us", "create_us") or not row["library"]:
            return None
        unit = "GB/s" if row["metric"] == "gbps" else TIME
        column = "create" if row["metric"] == "create_us" else TIMINGS.get(row["timing"], row["timing"])
        return (row["case"], row["dtype"], row["n"], row["alignment"]), [(column, unit, row["library"])]
    if kind == "lists":
        if not row["impl"].startswith("ew"):
            return None
        return (row["case"], row["impl"], row["count"]), [("host" if row["case"] == "host" else "gpu", TIME, row["us"])]
    if kind == "scaled":
        unit = "GB/s" if row["unit"] == "gbps" else TIME
        return (row["case"], row["impl"], row["n"]), [(TIMINGS.get(row["column"], row["column"]), unit, row["value"])]
    if kind == "strided":
        if row["impl"] not in ("ew", "ew_kernel") or row.get("target") == "6":
            return None
        return (row["case"], row["impl"]), [("b2b", "GB/s", row["gbps"]), ("iso", "GB/s", row.get("gbps_isolated"))]
    entry = tuple(row[k] for k in BENCH_KEY[1:4]) + (int(row["n"]),)
    if row["offsets"] == "host":
        if not row["impl"].startswith("ew"):
            return None
        return entry + ("host " + row["impl"],), [("b2b", TIME, row["us"]), ("iso", TIME, row.get("us_isolated"))]
    if row["impl"] != "ew":
        return None
    return entry + (row["offsets"],), [("b2b", "GB/s", row["gbps"]), ("iso", "GB/s", row.get("gbps_isolated"))]


def read(paths):
    """{(case, column): (unit, [values, one a CSV that has it])}"""
    cases = {}
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                fields = set(reader.fieldnames or [])
                kind = ("user" if "metric" in fields else "scaled" if "unit" in fields
                        else "lists" if "count" in fields else "strided" if "case" in fields else "sweep")
                missing = set({"user": USER_KEY, "scaled": SCALED_KEY, "lists": LISTS_KEY, "strided": STRIDED_KEY,
                               "sweep": BENCH_KEY}[kind]) - fields
                if missing:
                    sys.exit("ab-compare: %s lacks the columns %s" % (path, ", ".join(sorted(missing))))
                for row in reader:
                    found = row_figures(row, kind)
                    if found is None:
                        continue
                    key, figures = found
                    for column, unit, value in figures:
                        if value:
                            cases.setdefault((key, column), (unit, []))[1].append(float(value))
        except OSError as error:
            print("ab-compare: %s" % error, file=sys.stderr)
            sys.exit(2)
    return cases


def case_text(key):
    if len(key) == 3:  # ew-bench-scaled: case, impl, n; ew-bench-lists: case, impl, count
        name, impl, n = key
        return "%s %s %s" % (name, impl, n)
    if len(key) == 2:  # ew-bench-strided: case, impl
        name, impl = key
        return name if impl == "ew" else "%s (%s)" % (name, impl)
    if len(key) == 4:  # ew-bench-user-kernels: case, dtype, n, alignment
        name, dtype, n, alignment = key
        return "%s %s %s %s" % (name, dtype, n, alignment)
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

    print("new speed / old speed (GB/s new/old, times old/new), %d old and %d new CSVs, median of the rounds "
          "per case" % (len(args.old), len(args.new)))
    print("%-44s %-4s %9s %9s %-4s %7s %7s" % ("case", "", "old", "new", "", "ratio", "spread"))
    ratios = {}
    for key, column in common:
        unit, old_values = old[key, column]
        new_values = new[key, column][1]
        a, b = statistics.median(old_values), statistics.median(new_values)
        faster, slower = (a, b) if unit == TIME else (b, a)
        ratio = faster / slower if slower > 0 else float("inf")
        ratios.setdefault(column, []).append((ratio, key))
        mark = " <" if ratio < args.threshold else ""
        noise = max(spread(old_values), spread(new_values))
        print("%-44s %-4s %9.3f %9.3f %-4s %7.3f %6.1f%%%s"
              % (case_text(key), column, a, b, unit, ratio, 100 * noise, mark))
    for name, only in (("old", set(old) - set(new)), ("new", set(new) - set(old))):
        for key in sorted({k for k, _ in only}, key=str):
            print("%-44s only in the %s results" % (case_text(key), name))

    print()
    for column in COLUMNS:
        if column not in ratios:
            continue
        finite = [r for r, _ in ratios[column] if 0 < r < float("inf")]
        lowest, lowest_key = min(ratios[column], key=lambda rk: rk[0])
        below = [(r, k) for r, k in ratios[column] if r < args.threshold]
        geomean = math.exp(sum(math.log(r) for r in finite) / len(finite)) if finite else float("nan")
        print("%s: cases: %d; minimum ratio %.3f (%s); geometric mean %.4f"
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
