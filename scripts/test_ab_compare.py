#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ab-compare.py on made-up CSVs of both benches whose ratios are known by construction: the median
of the rounds, both timing columns, the rows it must leave out (yardsticks, host rows, target 6), the
threshold's marks and summary, and exit status 2 where nothing is in common. Standard library only,
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
STRIDED_FIELDS = ["target", "case", "impl", "op", "out_dtype", "in_dtype", "shape", "layout", "c", "bytes", "us",
                  "gbps", "us_isolated", "gbps_isolated", "check"]


def bench_row(gbps, gbps_iso, impl="ew", n=1 << 20, offsets="aligned"):
    return {"impl": impl, "op": "add", "out_dtype": "f32", "in_dtype": "f32", "n": str(n), "offsets": offsets,
            "us": "1", "gbps": "%g" % gbps, "gbps_isolated": "%g" % gbps_iso}


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
        new = [self.write(BENCH_FIELDS, [bench_row(g, i), bench_row(1, 1, offsets="host")]) for g, i in
               ((200, 99), (190, 99), (210, 99))]
        status, text = self.run_main(old, new)
        self.assertEqual(status, 0)
        self.assertIn("b2b: cases: 1; minimum new/old 2.000", text)
        self.assertIn("iso: cases: 1; minimum new/old 1.100", text)
        self.assertIn("b2b: below 0.99: none", text)
        self.assertNotIn("host", text)  # the host row and CUB's are not compared
        self.assertIn(" 70.0%", text)  # the old b2b rounds' spread: (120 - 50) / 100

    def test_strided_keys_and_exclusions(self):
        rows_old = [strided_row("t2-row", "ew", 100, 100), strided_row("t2-row", "ew_kernel", 100, 100),
                    strided_row("t2-row", "ew_flat", 100, 100), strided_row("t6-host", "ew", 5, 5, target="6")]
        rows_new = [strided_row("t2-row", "ew", 98, 110), strided_row("t2-row", "ew_kernel", 100, 99.5),
                    strided_row("t2-row", "ew_flat", 1, 1), strided_row("t6-host", "ew", 1, 1, target="6")]
        status, text = self.run_main([self.write(STRIDED_FIELDS, rows_old)],
                                     [self.write(STRIDED_FIELDS, rows_new)])
        self.assertEqual(status, 0)
        self.assertIn("b2b: cases: 2; minimum new/old 0.980 (t2-row)", text)
        self.assertIn("b2b: below 0.99: 1 cases: t2-row 0.980", text)
        self.assertIn("iso: cases: 2; minimum new/old 0.995 (t2-row (ew_kernel))", text)
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
