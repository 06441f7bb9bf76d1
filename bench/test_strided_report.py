#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""strided_report.py's verdicts on made-up CSVs whose verdicts are known by construction: each kind of
target on both sides of its threshold, the two columns judged apart, a failed check, missing figures
(which must read "no data", never "met"), target 7's rows without a goal, the count against PyTorch,
and the files main() writes. Standard library only (the plot
is tried only where matplotlib imports), no GPU; ctest runs it as bench_strided_report."""

import csv
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import strided_report as sr  # noqa: E402

B2B, ISO = sr.B2B, sr.ISO


def row(target, case, impl, gbps=None, gbps_iso=None, us=None, us_iso=None, check="", layout="row", op="add",
        dtype="f32", c=64):
    r = dict.fromkeys(sr.COLUMNS, "")
    r.update(target=str(target), case=case, impl=impl, op=op, out_dtype=dtype, in_dtype=dtype, layout=layout,
             c=str(c), check=check, shape="1048576x64", bytes="805306368")
    for field, value in (("gbps", gbps), ("gbps_isolated", gbps_iso), ("us", us), ("us_isolated", us_iso)):
        r[field] = "" if value is None else "%.4f" % value
    if us is None and gbps is not None:
        r["us"] = "100.0"
    if us_iso is None and gbps_iso is not None:
        r["us_isolated"] = "100.0"
    return r


def pair(target, case, ours, flat, ours_iso=None, flat_iso=None, check="ok", **kw):
    """Our strided row and its yardstick, GB/s in each column (iso defaults to the same)."""
    ours_iso = ours if ours_iso is None else ours_iso
    flat_iso = flat if flat_iso is None else flat_iso
    return [row(target, case, "ew", ours, ours_iso, check=check, **kw),
            row(target, case, "ew_flat", flat, flat_iso, **dict(kw, layout="flat"))]


def host(strided, flat, strided_iso=None, flat_iso=None):
    strided_iso = strided if strided_iso is None else strided_iso
    flat_iso = flat if flat_iso is None else flat_iso
    return [row(6, "t6-host-add-f32", "ew", us=strided, us_iso=strided_iso, check="ok", layout="host"),
            row(6, "t6-host-add-f32", "ew_flat", us=flat, us_iso=flat_iso, layout="flat")]


def verdicts(rows):
    """{target: (b2b status, iso status)}"""
    v = sr.judge(sr.Results(rows))
    return {t: (v[t][B2B][0], v[t][ISO][0]) for t in v}


def line(rows, target, case, timing):
    v = sr.judge(sr.Results(rows))
    return dict(v[target][timing][3])[case]


class Ratios(unittest.TestCase):
    def test_threshold_each_side_per_target(self):
        # target 1: 0.99; 2 and 4 and 5: 0.95; 3: 0.97
        for target, goal in ((1, 0.99), (2, 0.95), (3, 0.97), (4, 0.95), (5, 0.95)):
            above = pair(target, "case", 4000 * (goal + 0.005), 4000)
            below = pair(target, "case", 4000 * (goal - 0.005), 4000)
            self.assertEqual(verdicts(above)[target], ("met", "met"), target)
            self.assertEqual(verdicts(below)[target], ("MISSED", "MISSED"), target)

    def test_columns_are_judged_apart(self):
        rows = pair(1, "t1-add-f32", 4000, 4000, ours_iso=3900, flat_iso=4000)
        self.assertEqual(verdicts(rows)[1], ("met", "MISSED"))
        self.assertAlmostEqual(line(rows, 1, "t1-add-f32", ISO).ratio, 0.975)

    def test_one_missed_row_misses_the_target(self):
        rows = pair(2, "a", 3900, 4000) + pair(2, "b", 3700, 4000) + pair(2, "c", 4000, 4000)
        status, tally, worst, _ = sr.judge(sr.Results(rows))[2][B2B]
        self.assertEqual(status, "MISSED")
        self.assertIn("2/3 rows met", tally)
        self.assertAlmostEqual(worst, 0.925)

    def test_failed_check_is_missed_whatever_the_speed(self):
        for check in ("mismatch", "failed"):
            rows = pair(4, "t4", 4100, 4000, check=check)
            self.assertEqual(verdicts(rows)[4], ("MISSED", "MISSED"))
            self.assertIn(check, line(rows, 4, "t4", B2B).why)

    def test_missing_figures_are_no_data_never_met(self):
        no_yard = [pair(3, "t3", 4000, 4000)[0]]
        self.assertEqual(verdicts(no_yard)[3], ("no data", "no data"))
        only_b2b = [row(5, "t5", "ew", 4000, None, check="ok"), row(5, "t5", "ew_flat", 4000, None)]
        self.assertEqual(verdicts(only_b2b)[5], ("met", "no data"))
        torch_only = [row(1, "t1", "torch", 3000, 3000)]
        self.assertEqual(verdicts(torch_only)[1], ("no data", "no data"))
        self.assertEqual(verdicts([])[2], ("no data", "no data"))

    def test_no_data_row_beside_met_rows(self):
        rows = pair(2, "a", 4000, 4000) + [pair(2, "b", 4000, 4000)[0]]
        self.assertEqual(verdicts(rows)[2][0], "no data")

    def test_torch_figures_shown_not_judged(self):
        rows = pair(2, "t2", 3900, 4000) + [row(2, "t2", "torch", 2800, 2700)]
        x = line(rows, 2, "t2", ISO)
        self.assertEqual((x.status, x.torch), ("met", 2700))
        slow = pair(2, "t2", 3900, 4000) + [row(2, "t2", "torch", 9000, 9000)]
        self.assertEqual(verdicts(slow)[2], ("met", "met"))


class NoGoal(unittest.TestCase):
    def test_target_7_reads_no_goal_at_any_speed(self):
        for ours in (400, 4000):
            rows = pair(7, "t7-bcast3-add-f32", ours, 4000, layout="bcast3")
            self.assertEqual(verdicts(rows)[7], ("no goal", "no goal"))
            self.assertAlmostEqual(line(rows, 7, "t7-bcast3-add-f32", ISO).ratio, ours / 4000)
        status, tally, worst, _ = sr.judge(sr.Results(pair(7, "a", 400, 4000) + pair(7, "b", 800, 4000)))[7][ISO]
        self.assertEqual((status, tally), ("no goal", "2 rows"))
        self.assertAlmostEqual(worst, 0.1)

    def test_target_7_still_fails_a_check_and_lacks_data(self):
        self.assertEqual(verdicts(pair(7, "t7", 4000, 4000, check="mismatch"))[7], ("MISSED", "MISSED"))
        self.assertEqual(verdicts([pair(7, "t7", 4000, 4000)[0]])[7], ("no data", "no data"))
        self.assertEqual(verdicts([])[7], ("no data", "no data"))


class AgainstPyTorch(unittest.TestCase):
    def test_counts_per_column_and_names_the_rest(self):
        rows = (pair(2, "a", 3000, 4000) + [row(2, "a", "torch", 2000, 3500)]   # above b2b, not iso
                + pair(7, "b", 1000, 4000) + [row(7, "b", "torch", 1500, 500)]  # not b2b, above iso
                + pair(4, "c", 3000, 4000)                                      # no torch: not counted
                + host(2.2, 2.0) + [row(6, "t6-host-add-f32", "torch", us=9.0, us_iso=9.0)])
        results = sr.Results(rows)
        ahead, total, behind = sr.against_peer(results, B2B)
        self.assertEqual((ahead, total), (1, 2))
        self.assertEqual([case for case, _ in behind], ["b"])
        self.assertAlmostEqual(behind[0][1], 1000 / 1500)
        ahead, total, behind = sr.against_peer(results, ISO)
        self.assertEqual((ahead, total, [case for case, _ in behind]), (1, 2, ["a"]))
        text = sr.markdown(results, sr.judge(results), ["x"], "")
        self.assertIn("Against PyTorch, back-to-back: ours above in 1 of 2 cases; not above in b (0.667x).", text)
        self.assertIn("Against PyTorch, isolated: ours above in 1 of 2 cases; not above in a (0.857x).", text)


class Host(unittest.TestCase):
    def test_half_a_microsecond_over_flat(self):
        self.assertEqual(verdicts(host(2.4, 2.0))[6], ("met", "met"))
        self.assertEqual(verdicts(host(2.6, 2.0))[6], ("MISSED", "MISSED"))
        self.assertEqual(verdicts(host(2.4, 2.0, strided_iso=3.0))[6], ("met", "MISSED"))
        self.assertAlmostEqual(line(host(2.4, 2.0), 6, "t6-host-add-f32", B2B).ratio, 0.4)

    def test_missing_flat_is_no_data(self):
        self.assertEqual(verdicts(host(2.4, 2.0)[:1])[6], ("no data", "no data"))


class Files(unittest.TestCase):
    def write(self, directory, name, rows):
        with open(os.path.join(directory, name), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=sr.COLUMNS)
            w.writeheader()
            w.writerows(rows)

    def test_main_writes_every_target(self):
        with tempfile.TemporaryDirectory() as d:
            ew = (pair(1, "t1-add-f32", 4350, 4390) + pair(2, "t2-row-add-f32-C64", 4200, 4390)
                  + pair(2, "t2-col-mul-f16-C4099", 3000, 4300, op="mul", dtype="f16", layout="col", c=4099)
                  + pair(4, "t4-transposed-add-f32", 4200, 4390) + host(2.2, 2.0))
            self.write(d, "ew-strided.csv", ew)
            self.write(d, "torch-strided.csv", [row(2, "t2-row-add-f32-C64", "torch", 2795, 2790)])
            self.assertEqual(sr.main([d, "--no-plot"]), 0)
            with open(os.path.join(d, "strided.md")) as f:
                text = f.read()
            for target in sr.TARGETS:
                self.assertIn("## Target %d:" % target, text)
            self.assertIn("| t2-row-add-f32-C64 | 4200.0 | 2795.0 | 4390.0 | 0.957 | met |", text)
            self.assertIn("MISSED", text)  # C = 4099 f16 at 0.70x
            self.assertIn("No rows for this target in the CSVs: no data.", text)  # targets 3 and 5
            self.assertIn("+0.200", text)

    def test_without_csvs_main_fails(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(sr.main([d, "--no-plot"]), 1)
            with open(os.path.join(d, "strided.md")) as f:
                self.assertIn("no data", f.read())

    def test_plot_where_matplotlib_imports(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib not importable")
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "ew-strided.csv", pair(1, "t1-add-f32", 4350, 4390) + pair(2, "t2", 4200, 4390))
            self.assertEqual(sr.main([d]), 0)
            self.assertTrue(os.path.getsize(os.path.join(d, "strided.png")) > 0)


if __name__ == "__main__":
    unittest.main()
