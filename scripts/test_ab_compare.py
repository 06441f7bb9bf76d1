#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ab-compare.py on made-up CSVs of the four benches whose ratios are known by construction: the median
of the rounds, both timing columns, times compared as old over new, the rows it must leave out
(yardsticks, other launchers' host rows, target 6, creation times), the threshold's marks and summary,
and exit status 2 where nothing is in common. Standard library only,
no GPU; ctest runs it as scripts_ab_compare."""

import contextlib
import csv
import importlib.util
import io
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("ab_compare", os.path.join(HERE, "ab-compare.py"))
ab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ab)

BENCH_FIELDS = ["impl", "op", "out_dtype", "in_dtype", "n", "offsets", "us", "gbps", "vs_memcpy", "us_isolated",
                "gbps_isolated", "vs_memcpy_isolated", "check"]
USER_FIELDS = ["target", "case", "dtype", "n", "alignment", "timing", "metric", "library", "yardstick_impl",
               "yardstick", "ratio", "check"]
SCALED_FIELDS = ["case", "impl", "n", "column", "unit", "value", "yardstick", "yardstick_value", "ratio"]
LISTS_FIELDS = ["case", "impl", "count", "elements", "us", "gbps"]
STRIDED_FIELDS = ["target", "case", "impl", "op", "out_dtype", "in_dtype", "shape", "layout", "c", "bytes", "us",
                  "gbps", "us_isolated", "gbps_isolated", "check"]


def bench_row(gbps, gbps_iso, impl="ew", n=1 << 20, offsets="aligned"):
    return {"impl": impl, "op": "add", "out_dtype": "f32", "in_dtype": "f32", "n": str(n), "offsets": offsets,
            "us": "1", "gbps": "%g" % gbps, "gbps_isolated": "%g" % gbps_iso}


def host_row(us, us_iso, impl="ew"):
    return {"impl": impl, "op": "add", "out_dtype": "f32", "in_dtype": "f32", "n": "1024", "offsets": "host",
            "us": "%g" % us, "us_isolated": "%g" % us_iso}


def user_row(case, timing, metric, library):
    return {"target": "1", "case": case, "dtype": "f32", "n": "1024", "alignment": "aligned", "timing": timing,
            "metric": metric, "library": "%g" % library}


def scaled_row(case, column, unit, value, impl="quantize"):
    return {"case": case, "impl": impl, "n": "268435456", "column": column, "unit": unit, "value": "%g" % value,
            "yardstick": "cast", "yardstick_value": "1", "ratio": "1"}


def strided_row(case, impl, gbps, gbps_iso, target="2"):
    return {"target": target, "case": case, "impl": impl, "gbps": "%g" % gbps, "gbps_isolated": "%g" % gbps_iso}


class AbCompareTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.count = 0

    def write(self, fields, rows):
        self.count += 1
        path = os.path.join(self.dir.name, "r%d.csv" % self.count)
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields, restval="")
            writer.writeheader()
            writer.writerows(rows)
        return path

    def run_main(self, old, new, *extra):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            argv, sys.argv = sys.argv, ["ab-compare.py", "--old", *old, "--new", *new, *extra]
            try:
                status = ab.main()
            finally:
                sys.argv = argv
        return status, out.getvalue()

    def test_bench_medians_and_columns(self):
        # three rounds a side: the medians are 100 / 200 (b2b) and 90 / 99 (iso)
        old = [self.write(BENCH_FIELDS, [bench_row(g, i), bench_row(1, 1, impl="cub")]) for g, i in
               ((100, 90), (50, 91), (120, 89))]
        new = [self.write(BENCH_FIELDS, [bench_row(g, i), bench_row(1, 1, impl="cub")]) for g, i in
               ((200, 99), (190, 99), (210, 99))]
        status, text = self.run_main(old, new)
        self.assertEqual(status, 0)
        self.assertIn("b2b: cases: 1; minimum ratio 2.000", text)
        self.assertIn("iso: cases: 1; minimum ratio 1.100", text)
        self.assertIn("b2b: below 0.99: none", text)
        self.assertNotIn("cub", text)  # CUB's rows are not compared
        self.assertIn(" 70.0%", text)  # the old b2b rounds' spread: (120 - 50) / 100

    def test_host_rows_are_times(self):
        # the library's launcher: 2.0 -> 2.5 us back to back is 0.8 as fast; 4.0 -> 2.0 us isolated 2x
        old = self.write(BENCH_FIELDS, [host_row(2.0, 4.0), host_row(1.0, 1.0, impl="raw")])
        new = self.write(BENCH_FIELDS, [host_row(2.5, 2.0), host_row(9.0, 9.0, impl="raw")])
        status, text = self.run_main([old], [new])
        self.assertEqual(status, 0)
        self.assertIn("b2b: cases: 1; minimum ratio 0.800 (add f32 2^10 host ew)", text)
        self.assertIn("iso: cases: 1; minimum ratio 2.000", text)
        self.assertNotIn("raw", text)  # the raw launch is a yardstick

    def test_user_kernel_figures(self):
        rows_old = [user_row("t1-add", "back-to-back", "gbps", 100), user_row("t2-chain", "isolated", "us", 10),
                    user_row("t4-launch", "back-to-back", "host_us", 3), user_row("t4-create", "host", "create_us", 9)]
        rows_new = [user_row("t1-add", "back-to-back", "gbps", 97), user_row("t2-chain", "isolated", "us", 8),
                    user_row("t4-launch", "back-to-back", "host_us", 3), user_row("t4-create", "host", "create_us", 1)]
        status, text = self.run_main([self.write(USER_FIELDS, rows_old)], [self.write(USER_FIELDS, rows_new)])
        self.assertEqual(status, 0)
        self.assertIn("b2b: cases: 2; minimum ratio 0.970 (t1-add f32 1024 aligned)", text)
        self.assertIn("iso: cases: 1; minimum ratio 1.250", text)  # 10 us -> 8 us
        self.assertIn("create: cases: 1; minimum ratio 9.000 (t4-create", text)  # 9 us -> 1 us, its own column

    def test_scaled_values(self):
        # GB/s: 100 -> 120 is 1.2x; microseconds: 10 -> 8 is 1.25x; host microseconds: 1.0 -> 1.1 is 0.909x
        rows_old = [scaled_row("quantize", "back-to-back", "gbps", 100), scaled_row("amax", "isolated", "us", 10),
                    scaled_row("host", "back-to-back", "host_us", 1.0)]
        rows_new = [scaled_row("quantize", "back-to-back", "gbps", 120), scaled_row("amax", "isolated", "us", 8),
                    scaled_row("host", "back-to-back", "host_us", 1.1)]
        status, text = self.run_main([self.write(SCALED_FIELDS, rows_old)], [self.write(SCALED_FIELDS, rows_new)])
        self.assertEqual(status, 0)
        self.assertIn("b2b: cases: 2; minimum ratio 0.909 (host quantize 268435456)", text)
        self.assertIn("iso: cases: 1; minimum ratio 1.250", text)
        self.assertNotIn("cast", text)  # the yardstick's figures are not compared

    def test_lists_times(self):
        # GPU time 100 -> 80 us is 1.25x; host time 2.0 -> 2.5 us is 0.8x; a peer's row is not compared
        def row(case, impl, count, us):
            return {"case": case, "impl": impl, "count": str(count), "elements": "1000", "us": "%g" % us,
                    "gbps": "1"}
        rows_old = [row("loguniform", "ew_batched", 1000, 100), row("host", "ew_batched", 1000, 2.0),
                    row("loguniform", "torch", 1000, 50)]
        rows_new = [row("loguniform", "ew_batched", 1000, 80), row("host", "ew_batched", 1000, 2.5),
                    row("loguniform", "torch", 1000, 10)]
        status, text = self.run_main([self.write(LISTS_FIELDS, rows_old)], [self.write(LISTS_FIELDS, rows_new)])
        self.assertEqual(status, 0)
        self.assertIn("gpu: cases: 1; minimum ratio 1.250 (loguniform ew_batched 1000)", text)
        self.assertIn("host: cases: 1; minimum ratio 0.800 (host ew_batched 1000)", text)
        self.assertNotIn("torch", text)

    def test_strided_keys_and_exclusions(self):
        rows_old = [strided_row("t2-row", "ew", 100, 100), strided_row("t2-row", "ew_kernel", 100, 100),
                    strided_row("t2-row", "ew_flat", 100, 100), strided_row("t6-host", "ew", 5, 5, target="6")]
        rows_new = [strided_row("t2-row", "ew", 98, 110), strided_row("t2-row", "ew_kernel", 100, 99.5),
                    strided_row("t2-row", "ew_flat", 1, 1), strided_row("t6-host", "ew", 1, 1, target="6")]
        status, text = self.run_main([self.write(STRIDED_FIELDS, rows_old)],
                                     [self.write(STRIDED_FIELDS, rows_new)])
        self.assertEqual(status, 0)
        self.assertIn("b2b: cases: 2; minimum ratio 0.980 (t2-row)", text)
        self.assertIn("b2b: below 0.99: 1 cases: t2-row 0.980", text)
        self.assertIn("iso: cases: 2; minimum ratio 0.995 (t2-row (ew_kernel))", text)
        self.assertIn("iso: below 0.99: none", text)
        self.assertNotIn("t6-host", text)
        self.assertNotIn("ew_flat", text)
        marked = [line for line in text.splitlines() if line.endswith(" <")]
        self.assertEqual(len(marked), 1)
        self.assertTrue(marked[0].startswith("t2-row ") and " b2b " in marked[0])

    def test_a_column_missing_on_one_side(self):
        old = self.write(STRIDED_FIELDS, [strided_row("t3", "ew", 100, 100)])
        new = self.write(STRIDED_FIELDS, [dict(strided_row("t3", "ew", 101, 0), gbps_isolated="")])
        status, text = self.run_main([old], [new])
        self.assertEqual(status, 0)
        self.assertIn("b2b: cases: 1", text)
        self.assertNotIn("iso: cases", text)
        self.assertIn("only in the old results", text)

    def test_nothing_in_common(self):
        old = self.write(STRIDED_FIELDS, [strided_row("t2-a", "ew", 1, 1)])
        new = self.write(STRIDED_FIELDS, [strided_row("t2-b", "ew", 1, 1)])
        status, _ = self.run_main([old], [new])
        self.assertEqual(status, 2)


if __name__ == "__main__":
    unittest.main()
