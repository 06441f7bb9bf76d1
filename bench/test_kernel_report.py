#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kernel_report.py's verdicts on made-up CSVs whose verdicts are known by construction: each kind of target
on both sides of its goal, the two columns judged apart, the direction of each ratio (GB/s, times, peers'
times), a failed check, missing figures (which must read "no data", never "met"), and the file main()
writes. Standard library only, no GPU; ctest runs it as bench_kernel_report."""

import csv
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kernel_report as kr  # noqa: E402

B2B, ISO = kr.B2B, kr.ISO


def row(target, case, timing, metric, library, impl, yardstick, check="", n=67108864, dtype="f32"):
    r = dict.fromkeys(kr.COLUMNS, "")
    r.update(target=str(target), case=case, dtype=dtype, n=str(n), alignment="aligned", timing=timing,
             metric=metric, yardstick_impl=impl, check=check,
             library="" if library is None else "%.4f" % library,
             yardstick="" if yardstick is None else "%.4f" % yardstick)
    return r


def both(target, case, metric, library, impl, yardstick, library_iso=None, yardstick_iso=None, check="ok"):
    """The library's row in each column (iso defaults to the same figures)."""
    library_iso = library if library_iso is None else library_iso
    yardstick_iso = yardstick if yardstick_iso is None else yardstick_iso
    return [row(target, case, B2B, metric, library, impl, yardstick, check),
            row(target, case, ISO, metric, library_iso, impl, yardstick_iso, check)]


def peer(impl, us, us_iso=None, check="differs from eager in 0 of 67108864; from one fma in 0"):
    us_iso = us if us_iso is None else us_iso
    return [row(2, kr.CHAIN, B2B, "us", None, impl, us, check), row(2, kr.CHAIN, ISO, "us", None, impl, us_iso, check)]


def chain(kernel_us, three_us, **kw):
    return both(2, kr.CHAIN, "us", kernel_us, "ew_three_calls", three_us, **kw)


def two_outputs(kernel_gbps, add_gbps, kernel_us, calls_us, check="ok", **kw):
    """Target 7's two rows in each column, as ew-bench-user-kernels writes them: the kernel's GB/s against the
    flat add's, and its microseconds against the two catalogue calls'."""
    return (both(7, kr.T7, "gbps", kernel_gbps, "ew_binary_add", add_gbps, check=check)
            + both(7, kr.T7_CALLS, "us", kernel_us, "ew_binary_add_mul", calls_us, check=check, **kw))


def create(case, us, check="ok"):
    return [row(4, case, "host", "create_us", us, "", None, check, n=11)]


def verdicts(rows):
    """{label: verdict}"""
    lines, _ = kr.judge(kr.Results(rows))
    return {label: verdict for label, _, _, _, verdict in lines}


def measured(rows, label):
    lines, _ = kr.judge(kr.Results(rows))
    return {x[0]: x[3] for x in lines}[label]


class Ratios(unittest.TestCase):
    def test_target1_threshold_each_side(self):
        above = both(1, "t1-add-f32-2^26-aligned", "gbps", 4000 * 0.985, "ew_binary_add", 4000)
        below = both(1, "t1-add-f32-2^26-aligned", "gbps", 4000 * 0.975, "ew_binary_add", 4000)
        self.assertEqual(verdicts(above)["1"], "met")
        self.assertEqual(verdicts(below)["1"], "MISSED")

    def test_target1_one_case_one_column_misses(self):
        rows = (both(1, "a", "gbps", 4000, "ew_binary_add", 4000)
                + both(1, "b", "gbps", 4000, "ew_binary_add", 4000, library_iso=3800))
        rows = [dict(r, case="t1-" + r["case"]) for r in rows]
        self.assertEqual(verdicts(rows)["1"], "MISSED")
        status, tally, worst, _ = kr.target1(kr.Results(rows), ISO)
        self.assertEqual((status, tally), ("MISSED", "1/2 met, 1 missed"))
        self.assertAlmostEqual(worst, 0.95)
        self.assertEqual(kr.target1(kr.Results(rows), B2B)[0], "met")

    def test_chain_is_a_speedup_of_times(self):
        self.assertEqual(verdicts(chain(100, 260))["2a"], "met")  # 2.6x
        self.assertEqual(verdicts(chain(100, 240))["2a"], "MISSED")
        self.assertIn("2.600x", measured(chain(100, 260), "2a"))

    def test_peers_against_the_kernel_of_the_same_column(self):
        rows = chain(100, 260, library_iso=110, yardstick_iso=280) + peer("torch_compile", 103, 111)
        v = verdicts(rows)
        self.assertEqual(v["2b"], "MISSED")  # b2b 1.03x met, iso 111/110 = 1.009x missed
        text = measured(rows, "2b")
        self.assertIn("back-to-back 1.030x met", text)
        self.assertIn("isolated 1.009x MISSED", text)
        rows = chain(100, 260) + peer("cupy_elementwise", 210) + peer("torch_eager", 330)
        v = verdicts(rows)
        self.assertEqual((v["2c"], v["2d"]), ("met", "information"))
        self.assertEqual(verdicts(chain(100, 260) + peer("cupy_elementwise", 190))["2c"], "MISSED")

    def test_ternary(self):
        self.assertEqual(verdicts(both(3, "t3-ternary-f16", "gbps", 3900, "ew_binary_add_f16", 4000))["3"], "met")
        self.assertEqual(verdicts(both(3, "t3-ternary-f16", "gbps", 3850, "ew_binary_add_f16", 4000))["3"],
                         "MISSED")

    def test_cast_with_amax_after_the_creates(self):
        rows = both(6, "t6-cast-amax", "gbps", 3800, "ew_cast_f32_bf16", 4000)
        self.assertEqual(verdicts(rows)["6"], "met")
        self.assertEqual(verdicts(both(6, "t6-cast-amax", "gbps", 3790, "ew_cast_f32_bf16", 4000))["6"], "MISSED")
        labels = [line[0] for line in kr.judge(kr.Results(rows))[0]]
        self.assertEqual(labels[labels.index("5"):][:2], ["5", "6"])

    def test_two_outputs_against_the_add_and_the_two_calls(self):
        n = 1 << 26
        kernel_us = 16 * n / 3900 / 1e3  # 3900 GB/s on 16 bytes an element
        rows = two_outputs(3900, 4000, kernel_us, 1.45 * kernel_us)
        v = verdicts(rows)
        self.assertEqual((v["7a"], v["7b"]), ("met", "met"))
        self.assertIn("back-to-back 0.975x met", measured(rows, "7a"))
        self.assertIn("isolated 1.450x met", measured(rows, "7b"))  # the pair's time over the kernel's
        v = verdicts(two_outputs(3870, 4000, kernel_us, 1.39 * kernel_us))
        self.assertEqual((v["7a"], v["7b"]), ("MISSED", "MISSED"))  # 0.9675x, 1.39x
        # the columns are judged apart: isolated alone below 1.4x
        v = verdicts(two_outputs(3900, 4000, 100, 150, library_iso=100, yardstick_iso=139))
        self.assertEqual((v["7a"], v["7b"]), ("met", "MISSED"))
        labels = [line[0] for line in kr.judge(kr.Results(rows))[0]]
        self.assertEqual(labels[-4:], ["5", "6", "7a", "7b"])  # after the create targets, in the order
        self.assertEqual(labels[:7], ["1", "2a", "2b", "2c", "2d", "3", "4a"])

    def test_two_outputs_failed_check_misses_both(self):
        for check in ("mismatch", "failed"):
            v = verdicts(two_outputs(5000, 4000, 100, 300, check=check))
            self.assertEqual((v["7a"], v["7b"]), ("MISSED", "MISSED"))
        rows = both(7, kr.T7, "gbps", 3900, "ew_binary_add", 4000)  # no row of the two calls
        v = verdicts(rows)
        self.assertEqual((v["7a"], v["7b"]), ("met", "no data"))

    def test_two_outputs_section(self):
        n = 1 << 26
        rows = two_outputs(4000, 4000, 16 * n / 4000 / 1e3, 24 * n / 3000 / 1e3)
        text = "\n".join(kr.target7(kr.Results(rows)))
        self.assertIn("| the kernel (one launch, two arrays) | 16 | 4000.0 | 268.4 | 4000.0 | 268.4 | ok |", text)
        self.assertIn("| ew_binary add (the memory speed) | 12 | 4000.0 | 201.3 |", text)
        self.assertIn("| ew_binary add then mul | 24 | 3000.0 | 536.9 |", text)
        self.assertIn("no data", "\n".join(kr.target7(kr.Results([]))))

    def test_failed_check_is_missed_whatever_the_speed(self):
        for check in ("mismatch", "failed"):
            rows = chain(100, 500, check=check) + peer("torch_compile", 500)
            v = verdicts(rows)
            self.assertEqual((v["2a"], v["2b"]), ("MISSED", "MISSED"))
            self.assertIn(check, measured(rows, "2a"))
            rows = both(1, "t1-add-i8-2^20-misaligned", "gbps", 5000, "ew_binary_add", 4000, check=check)
            self.assertEqual(verdicts(rows)["1"], "MISSED")

    def test_peer_differences_are_reported_not_judged(self):
        rows = chain(100, 260) + peer("torch_compile", 110, check="differs from eager in 5 of 67108864; from one "
                                      "fma in 5")
        self.assertEqual(verdicts(rows)["2b"], "met")

    def test_missing_figures_are_no_data_never_met(self):
        v = verdicts([])
        for label in ("1", "2a", "2b", "2c", "3", "4a", "4b", "4c", "4d", "6", "7a", "7b"):
            self.assertEqual(v[label], "no data", label)
        self.assertEqual(verdicts(chain(100, 260))["2b"], "no data")  # no torch.compile row
        self.assertEqual(verdicts(peer("torch_compile", 110))["2b"], "no data")  # no kernel row
        not_run = chain(100, 260) + [row(2, kr.CHAIN, t, "us", None, "cupy_elementwise", None,
                                         "not run: CuPy not importable") for t in (B2B, ISO)]
        self.assertEqual(verdicts(not_run)["2c"], "no data")
        only_b2b = [both(3, "t3-ternary-f16", "gbps", 3900, "ew_binary_add_f16", 4000)[0]]
        self.assertEqual(verdicts(only_b2b)["3"], "met")  # a run timed in one column is judged on it
        one_lacking = only_b2b + [row(3, "t3-ternary-f16", ISO, "gbps", None, "ew_binary_add_f16", 4000)]
        self.assertEqual(verdicts(one_lacking)["3"], "no data")


class Host(unittest.TestCase):
    def test_creates_against_absolute_goals(self):
        rows = create("t4-create-compile", 149000) + create("t4-create-disk", 1900) + create("t4-create-memory", 19)
        v = verdicts(rows)
        self.assertEqual((v["4a"], v["4b"], v["4c"]), ("met", "met", "met"))
        rows = create("t4-create-compile", 151000) + create("t4-create-disk", 2100) + create("t4-create-memory", 21)
        v = verdicts(rows)
        self.assertEqual((v["4a"], v["4b"], v["4c"]), ("MISSED", "MISSED", "MISSED"))
        self.assertEqual(verdicts(create("t4-create-disk", 100, check="mismatch"))["4b"], "MISSED")

    def test_create_extras_shown(self):
        rows = (create("t4-create-compile", 80000) + create("t4-create-compile-max", 120000)
                + create("t4-create-compile-first", 300000))
        text = measured(rows, "4a")
        self.assertIn("80.0 ms", text)
        self.assertIn("max 120.0 ms", text)
        self.assertIn("first in its process 300.0 ms", text)

    def test_host_time_is_a_difference(self):
        self.assertEqual(verdicts(both(4, "t4-host-add-f32", "host_us", 2.15, "ew_binary_add", 2.0))["4d"], "met")
        self.assertEqual(verdicts(both(4, "t4-host-add-f32", "host_us", 2.25, "ew_binary_add", 2.0))["4d"], "MISSED")
        rows = both(4, "t4-host-add-f32", "host_us", 2.1, "ew_binary_add", 2.0, library_iso=2.5)
        self.assertIn("isolated +0.500 us MISSED", measured(rows, "4d"))


def cold(firsts, opens, empties, check="ok"):
    """Fresh processes in turn, as scripts/gpu/bench-kernel.sh writes ew-kernel-cold.csv."""
    rows = []
    for first, opened, empty in zip(firsts, opens, empties):
        rows += [row(4, "t4-create-compile", "host", "create_us", first, "", None, check, n=1),
                 row(4, "t4-create-compile-first", "host", "create_us", first, "", None, n=1),
                 row(5, "t5-nvrtc-open", "host", "create_us", opened, "", None, "ok", n=1),
                 row(5, "t5-nvrtc-empty", "host", "create_us", empty, "", None, "ok", n=1)]
    return rows


def cold_verdict(rows):
    lines, _ = kr.judge(kr.Results([]), rows)
    line = {x[0]: x for x in lines}["5"]
    return line[4], line[3]


class Cold(unittest.TestCase):
    def test_a_low_floor_leaves_150_ms(self):
        verdict, text = cold_verdict(cold([140000, 149000, 500000], [5000] * 3, [20000] * 3))
        self.assertEqual(verdict, "met")  # the median, not the slowest
        self.assertIn("149.0 ms over 3 processes", text)
        self.assertIn("floor 25.0 ms", text)
        self.assertEqual(cold_verdict(cold([151000] * 3, [5000] * 3, [20000] * 3))[0], "MISSED")

    def test_a_high_floor_moves_the_limit(self):
        # floor 300 ms: the limit is 350 ms
        self.assertEqual(cold_verdict(cold([349000] * 3, [100000] * 3, [200000] * 3))[0], "met")
        verdict, text = cold_verdict(cold([351000] * 3, [100000] * 3, [200000] * 3))
        self.assertEqual(verdict, "MISSED")
        self.assertIn("limit 350.0 ms", text)

    def test_a_failed_check_or_no_floor(self):
        self.assertEqual(cold_verdict(cold([1000] * 3, [1] * 3, [1] * 3, check="mismatch"))[0], "MISSED")
        self.assertEqual(cold_verdict(cold([1000] * 3, [None] * 3, [None] * 3))[0], "no data")
        self.assertEqual(cold_verdict([])[0], "no data")


class Files(unittest.TestCase):
    def write(self, directory, name, rows):
        with open(os.path.join(directory, name), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=kr.COLUMNS)
            w.writeheader()
            w.writerows(rows)

    def test_main_writes_the_table(self):
        with tempfile.TemporaryDirectory() as d:
            self.write(d, "ew-kernel.csv", both(1, "t1-add-f16-2^28-misaligned", "gbps", 4300, "ew_binary_add", 4310)
                       + chain(160, 420) + both(4, "t4-host-add-f32", "host_us", 2.1, "ew_binary_add", 2.0)
                       + two_outputs(3950, 4000, 270, 410))
            self.write(d, "ew-kernel-create-compile.csv", create("t4-create-compile", 90000)
                       + create("t4-create-memory", 3))
            self.write(d, "torch-kernel.csv", peer("torch_compile", 170) + peer("torch_eager", 600))
            self.assertEqual(kr.main([d]), 0)
            with open(os.path.join(d, "kernel.md")) as f:
                text = f.read()
            self.assertIn("| 2b | the chain vs torch.compile", text)
            self.assertIn("| t1-add-f16-2^28-misaligned | 4300.0 | 4310.0 | 0.998 | met |", text)
            self.assertIn("| torch_compile | 170.0 | 170.0 |", text)
            self.assertIn("| 4b | ew_kernel_create from the disk cache (a new process, NVRTC unreachable) "
                          "| <= 2 ms | - | no data |", text)
            self.assertIn("| 5 | ew_kernel_create in a fresh process", text)
            self.assertIn("| 4d |", text)
            self.assertIn("| 7a | `out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);` f32", text)
            self.assertIn("| >= 1.4x faster | back-to-back 1.519x met; isolated 1.519x met | met |", text)
            self.assertIn("## Target 7: two outputs", text)

    def test_without_csvs_main_fails(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(kr.main([d]), 1)
            with open(os.path.join(d, "kernel.md")) as f:
                self.assertIn("no data", f.read())


if __name__ == "__main__":
    unittest.main()
