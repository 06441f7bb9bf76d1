#!/usr/bin/env python3
"""report.py's verdicts on the issue's targets: on rows whose verdict is known by construction, each
on both sides of its threshold, and on the run bench/RESULTS.md shows, whose target table must come
out of its CSV unchanged. Standard library only; ctest runs it as bench_report."""

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import report  # noqa: E402

N26, N22 = 1 << 26, 1 << 22


def row(impl, op, out, inp, n, offsets, us=1.0, gbps=0.0):
    """One CSV row as report.read_rows returns it."""
    keys = ("impl", "op", "out_dtype", "in_dtype", "n", "offsets", "us", "gbps", "vs_memcpy")
    return dict(zip(keys, (impl, op, out, inp, n, offsets, us, float(gbps), "0")))


def case(op, out, inp, n, offsets, ew, memcpy=None, cub=None, torch=None):
    """Rows of one case: the library's GB/s and, where given, memcpy's and the peers'."""
    measured = (("ew", ew), ("memcpy", memcpy), ("cub", cub), ("torch", torch))
    return [row(impl, op, out, inp, n, offsets, gbps=gbps) for impl, gbps in measured if gbps is not None]


def host(ew, raw):
    """Host-overhead rows: µs per call of ew_binary and of a raw launch."""
    return [row(impl, "add", "f32", "f32", 1024, "host", us=us) for impl, us in (("ew", ew), ("raw", raw))]


def add_f32(n, offsets, *gbps):
    return case("add", "f32", "f32", n, offsets, *gbps)


def verdicts(rows, bit_exact=True):
    """{target number: status}"""
    return {t[0]: t[2] for t in report.judge(report.Results(rows), bit_exact)}


class Targets(unittest.TestCase):
    def test_1_needs_the_best_peer_and_two_percent_over_memcpy(self):
        self.assertEqual(verdicts(add_f32(N26, "aligned", 4300, 4200, 4290, 4250))[1], "met")
        # 1.019x memcpy
        self.assertEqual(verdicts(add_f32(N26, "aligned", 4280, 4200, 4270))[1], "missed")
        # 1.0238x memcpy but under CUB
        self.assertEqual(verdicts(add_f32(N26, "aligned", 4300, 4200, 4301))[1], "missed")
        # only n >= 2^26 counts
        self.assertEqual(verdicts(add_f32(N22, "aligned", 1000, 4200, 4301))[1], "not measured")

    def test_2_needs_the_best_peer_from_2_20_to_2_24(self):
        self.assertEqual(verdicts(add_f32(N22, "aligned", 3000, None, 3000, 2900))[2], "met")
        self.assertEqual(verdicts(add_f32(N22, "aligned", 2999, None, 3000))[2], "missed")

    def test_3_compares_1_byte_types_with_pytorch_only(self):
        rows = case("add", "i8", "i8", N26, "aligned", 4000, 3900, cub=4100, torch=3999)
        self.assertEqual(verdicts(rows)[3], "met")
        self.assertEqual(verdicts(rows)[1], "missed")  # CUB is faster: target 1 still misses
        rows = case("add", "i8", "i8", N26, "aligned", 3998, 3900, torch=3999)
        self.assertEqual(verdicts(rows)[3], "missed")

    def test_4_holds_misaligned_calls_to_0_97_of_aligned_and_to_bit_exact(self):
        aligned = add_f32(N26, "aligned", 4000)
        self.assertEqual(verdicts(aligned + add_f32(N26, "mixed", 3880))[4], "met")
        self.assertEqual(verdicts(aligned + add_f32(N26, "mixed", 3879))[4], "missed")
        rows = aligned + add_f32(N26, "same", 4000)
        self.assertEqual(verdicts(rows, bit_exact=False)[4], "missed")

    def test_5_allows_0_15_us_over_a_raw_launch(self):
        self.assertEqual(verdicts(host(3.64, 3.5))[5], "met")
        self.assertEqual(verdicts(host(3.66, 3.5))[5], "missed")
        self.assertEqual(verdicts([])[5], "not measured")

    def test_6_asks_4000_gb_s_of_f16_to_f32(self):
        self.assertEqual(verdicts(case("cast", "f32", "f16", N26, "aligned", 4000.0))[6], "met")
        self.assertEqual(verdicts(case("cast", "f32", "f16", N26, "aligned", 3999.9))[6], "missed")


class StoredRun(unittest.TestCase):
    def test_results_md_shows_the_targets_of_its_csv(self):
        with open(os.path.join(HERE, "RESULTS.md"), encoding="utf-8") as f:
            results_md = f.read()
        found = re.search(r"its CSV `(results/[^`]+\.csv)`", results_md)
        self.assertIsNotNone(found, "RESULTS.md names no CSV")
        results = report.Results(report.read_rows([os.path.join(HERE, found.group(1))]))
        # The CSV does not carry the spot checks' verdict; RESULTS.md's row 4 does.
        bit_exact = "bit-exact: yes" in results_md
        table = report.markdown(results, report.judge(results, bit_exact), {}, [], None)
        rows = [line for line in table.splitlines() if re.match(r"\| [1-6] \|", line)]
        self.assertEqual(len(rows), 6)
        shown = set(results_md.splitlines())
        for line in rows:
            if line not in shown:
                self.fail("RESULTS.md does not show, as its CSV gives it:\n" + line)


if __name__ == "__main__":
    unittest.main(verbosity=2)
