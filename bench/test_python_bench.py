#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""python_bench.py without a GPU: the verdicts on each side of a goal (missing figures read "no data", never
"yes"), the direction of the ratios, the exit status (a failed check or a broken case fails the run, a
missed target does not, a case that cannot run fails only where required), the files main() writes, the
dry run, the arguments, the timing loops' order of poison, calls, drain and check (on fake members), and
that every planned case has its measurement. Standard library only; ctest runs it as bench_python."""

import contextlib
import csv
import io
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import python_bench as pb  # noqa: E402

GOALS = {case.key: [row for row in case.rows if row.goal is not None] for case in pb.CASES}


class Fake:
    """A runner giving each case's rows made-up figures: ours = peer * factor (absolute rows: ours = value; rows
    where higher is better, a bandwidth: ours = peer / factor, so a factor below 1 is faster everywhere);
    raising for the cases in `raises`."""

    def __init__(self, factor=1.0, absolute=10.0, raises=None, per_case=None):
        self.factor, self.absolute, self.raises, self.per_case = factor, absolute, raises or {}, per_case or {}
        self.notes = ["a note from the runner"]
        self.ran = []

    def run(self, case):
        self.ran.append(case.key)
        if case.key in self.raises:
            raise self.raises[case.key]
        factor = self.per_case.get(case.key, self.factor)
        return {k: pb.Measured(self.absolute) if row.absolute else
                pb.Measured(10.0 / factor if row.higher else 10.0 * factor, 10.0)
                for k, row in enumerate(case.rows)}


def run_main(argv, runner=None, env=None):
    """main()'s exit status, its stdout, and the CSV rows it wrote."""
    with tempfile.TemporaryDirectory() as out:
        stdout = io.StringIO()
        with mock.patch.dict(os.environ, env or {}, clear=False), contextlib.redirect_stdout(stdout):
            for name in ("EW_REQUIRE_GPU", "ELEMENTWISE_REQUIRE_GPU"):
                if not env or name not in env:
                    os.environ.pop(name, None)
            status = pb.main(argv + ["--out-dir", out], runner=runner)
        with open(os.path.join(out, "python-bench.csv")) as f:
            rows = list(csv.DictReader(f))
        with open(os.path.join(out, "python-bench.md")) as f:
            md = f.read()
    return status, stdout.getvalue(), rows, md


def met(rows, key, metric, peer=None):
    found = [r for r in rows if r["case"] == key and r["metric"] == metric and (peer is None or r["peer_impl"] == peer)]
    assert len(found) == 1, (key, metric, found)
    return found[0]["met"]


class Verdicts(unittest.TestCase):
    def row(self, goal=1.2, absolute=False):
        return pb.Row(pb.HOST if not absolute else pb.IMPORT, "ours", "peer", goal, absolute)

    def test_ratio_goal_each_side(self):
        self.assertEqual(pb.verdict(self.row(), pb.Measured(11.9, 10.0), "ok"), "yes")
        self.assertEqual(pb.verdict(self.row(), pb.Measured(12.0, 10.0), "ok"), "yes")
        self.assertEqual(pb.verdict(self.row(), pb.Measured(12.1, 10.0), "ok"), "no")
        self.assertEqual(pb.verdict(self.row(0.7), pb.Measured(6.9, 10.0), "ok"), "yes")
        self.assertEqual(pb.verdict(self.row(0.7), pb.Measured(7.1, 10.0), "ok"), "no")

    def test_ratio_is_ours_over_peer(self):
        line = pb.Line(pb.CASES[0], self.row(), pb.Measured(12.0, 10.0), "ok")
        self.assertEqual(line.ratio, "1.20x")
        self.assertAlmostEqual(pb.ratio_of(self.row(), pb.Measured(5.0, 10.0)), 0.5)

    def test_absolute_goal(self):
        self.assertEqual(pb.verdict(self.row(50.0, True), pb.Measured(49.0), "ok"), "yes")
        self.assertEqual(pb.verdict(self.row(50.0, True), pb.Measured(51.0), "ok"), "no")
        self.assertIsNone(pb.ratio_of(self.row(50.0, True), pb.Measured(49.0)))

    def test_missing_figures_are_no_data(self):
        for measured in (None, pb.Measured(), pb.Measured(None, 10.0), pb.Measured(10.0, None),
                         pb.Measured(10.0, 0.0)):
            self.assertEqual(pb.verdict(self.row(), measured, "ok"), "no data")
        self.assertEqual(pb.verdict(self.row(50.0, True), pb.Measured(None), "ok"), "no data")

    def test_higher_is_better_goal_each_side(self):
        row = pb.Row(pb.BANDWIDTH, "ours", "peer", 0.9, higher=True)
        self.assertEqual(pb.verdict(row, pb.Measured(9.1, 10.0), "ok"), "yes")
        self.assertEqual(pb.verdict(row, pb.Measured(9.0, 10.0), "ok"), "yes")
        self.assertEqual(pb.verdict(row, pb.Measured(8.9, 10.0), "ok"), "no")
        self.assertEqual(pb.verdict(row, pb.Measured(30.0, 10.0), "ok"), "yes")
        self.assertEqual(pb.target_text(row), ">= 0.9x")
        self.assertEqual(pb.Line(pb.CASES[0], row, pb.Measured(9.5, 10.0), "ok").ratio, "0.95x")  # ours / peer
        for measured in (None, pb.Measured(), pb.Measured(9.0, None), pb.Measured(9.0, 0.0)):
            self.assertEqual(pb.verdict(row, measured, "ok"), "no data")
        self.assertEqual(pb.verdict(row, pb.Measured(20.0, 10.0), "FAILED: wrong bits"), "FAILED")
        self.assertEqual(pb.UNITS[pb.BANDWIDTH], "GB/s")

    def test_failed_and_information_rows(self):
        self.assertEqual(pb.verdict(self.row(), pb.Measured(1.0, 10.0), "FAILED: wrong bits"), "FAILED")
        self.assertEqual(pb.verdict(self.row(None), pb.Measured(100.0, 1.0), "ok"), "-")


class Plan(unittest.TestCase):
    def test_every_case_has_its_measurement(self):
        for case in pb.CASES:
            self.assertTrue(callable(getattr(pb.GpuRunner, "case_" + case.key.replace("-", "_"), None)), case.key)

    def test_every_case_has_a_goal(self):
        for key, rows in GOALS.items():
            self.assertTrue(rows, key)
            for row in rows:
                self.assertIn(row.metric, pb.UNITS)
                self.assertNotEqual(pb.target_text(row), "-")

    def test_the_issue_targets(self):
        goals = {(key, row.metric, row.peer.split("(")[0]): row.goal for key, rows in GOALS.items() for row in rows}
        self.assertEqual(goals[("add-out", pb.HOST, "torch.add")], 1.2)
        self.assertEqual(goals[("add-alloc", pb.HOST, "torch.add")], 1.3)
        self.assertEqual(goals[("bias-f16", pb.HOST, "torch.add")], 1.2)
        self.assertEqual(goals[("transposed-f16", pb.GPU, "C ew_binary_strided")], pb.AS_THE_C_CALL)
        self.assertEqual(goals[("kernel", pb.HOST, "torch.add")], 1.3)
        self.assertEqual(goals[("batched", pb.COMPLETION, "torch._foreach_add_")], 0.7)
        self.assertEqual(goals[("cupy", pb.HOST, "cupy.add")], 1.5)
        self.assertEqual(goals[("import", pb.IMPORT, "")], 50.0)
        self.assertEqual(goals[("adamw", pb.GPU, "torch._fused_adamw_")], 1.0)
        self.assertEqual(goals[("adamw", pb.BANDWIDTH, "ew.add")], 0.90)

    def test_the_adamw_case(self):
        adamw = {case.key: case for case in pb.CASES}["adamw"]
        self.assertEqual([(row.metric, row.higher) for row in adamw.rows],
                         [(pb.GPU, False), (pb.BANDWIDTH, True), (pb.HOST, False)])
        self.assertIsNone(adamw.rows[2].goal)  # host time: for information
        self.assertEqual(pb.ADAMW_BYTES, 16 + 12)  # p, g, m, v read; p, m, v written, f32 each
        self.assertEqual((pb.ADAMW_COUNT, pb.ADD_ELEMENTS), (1000, 1 << 26))
        sizes = pb.torch_foreach.loguniform_sizes(pb.ADAMW_SEED, pb.ADAMW_COUNT)
        self.assertEqual(len(sizes), 1000)
        self.assertTrue(all(1 << 10 <= n <= 1 << 20 for n in sizes))
        self.assertEqual(sizes, pb.torch_foreach.loguniform_sizes(pb.ADAMW_SEED, pb.ADAMW_COUNT))  # fixed
        for name in ("p0", "p6", "out0 = param", "out1 = m", "out2 = v", "sqrt(v)"):
            self.assertIn(name, pb.ADAMW_BODY)
        self.assertEqual(sorted(pb.ADAMW_HYPER), ["beta1", "beta2", "eps", "lr", "weight_decay"])


class Main(unittest.TestCase):
    def test_all_met(self):
        status, out, rows, md = run_main([], Fake(factor=0.5, absolute=10.0))
        self.assertEqual(status, 0)
        self.assertEqual(len(rows), sum(len(case.rows) for case in pb.CASES))
        self.assertEqual({r["met"] for r in rows if r["target"] != "-"}, {"yes"})
        self.assertEqual(met(rows, "add-out", pb.HOST), "yes")
        self.assertEqual(met(rows, "add-out", pb.COMPLETION), "-")
        self.assertIn("a note from the runner", out)
        self.assertIn("a note from the runner", md)
        table = [line for line in md.splitlines() if line.startswith("| ")]
        self.assertEqual(len(table), 1 + len(rows))

    def test_missed_target_does_not_fail_the_run(self):
        status, out, rows, md = run_main([], Fake(factor=1.0, per_case={"batched": 0.9, "adamw": 1.2},
                                              absolute=80.0))
        self.assertEqual(status, 0)
        self.assertEqual(met(rows, "adamw", pb.GPU), "no")  # 1.2x torch's time
        self.assertEqual(met(rows, "adamw", pb.BANDWIDTH), "no")  # 1 / 1.2 = 0.83x ew.add's GB/s
        self.assertEqual(met(rows, "adamw", pb.HOST), "-")
        self.assertEqual([r["target"] for r in rows if r["case"] == "adamw"], ["<= 1x", ">= 0.9x", "-"])
        self.assertEqual(met(rows, "add-out", pb.HOST), "yes")
        foreach = "torch._foreach_add_(as_, bs)"
        self.assertEqual(met(rows, "batched", pb.COMPLETION, foreach), "no")
        self.assertEqual(met(rows, "batched", pb.COMPLETION, "C ew_binary_batched"), "-")  # for information
        self.assertEqual(met(rows, "import", pb.IMPORT), "no")
        self.assertIn("| **no** |", md)
        ratio = [r["ratio"] for r in rows if r["case"] == "batched" and r["metric"] == pb.COMPLETION]
        self.assertEqual(ratio, ["0.90x", "0.90x"])

    def test_failed_check_fails_the_run_and_only_its_case(self):
        fake = Fake(factor=0.5, raises={"add-alloc": pb.CheckFailed("3 of 1024 elements differ")})
        status, out, rows, md = run_main([], fake)
        self.assertEqual(status, 1)
        self.assertEqual(fake.ran, list(pb.CASE_KEYS))
        self.assertEqual(met(rows, "add-alloc", pb.HOST), "FAILED")
        self.assertEqual(met(rows, "add-alloc", pb.COMPLETION), "FAILED")
        self.assertEqual(met(rows, "kernel", pb.HOST), "yes")
        self.assertIn("3 of 1024 elements differ", md)

    def test_broken_case_fails_the_run(self):
        fake = Fake(factor=0.5, raises={"kernel": TypeError("add() got an unexpected keyword argument 'out'")})
        with contextlib.redirect_stderr(io.StringIO()) as stderr:
            status, out, rows, md = run_main([], fake)
        self.assertEqual(status, 1)
        self.assertEqual(met(rows, "kernel", pb.HOST), "FAILED")
        self.assertIn("TypeError", rows[[r["case"] for r in rows].index("kernel")]["check"])
        self.assertIn("Traceback", stderr.getvalue())

    def test_skipped_case_is_no_data_unless_required(self):
        fake = Fake(factor=0.5, raises={"cupy": pb.Skipped("CuPy not importable")})
        status, _, rows, _ = run_main([], fake)
        self.assertEqual(status, 0)
        self.assertEqual(met(rows, "cupy", pb.HOST), "no data")
        self.assertEqual(run_main(["--require"], Fake(raises={"cupy": pb.Skipped("no CuPy")}))[0], 1)
        for name in ("EW_REQUIRE_GPU", "ELEMENTWISE_REQUIRE_GPU"):
            self.assertEqual(run_main([], Fake(raises={"cupy": pb.Skipped("no CuPy")}), env={name: "1"})[0], 1)

    def test_cases_subset(self):
        fake = Fake(factor=0.5)
        status, _, rows, _ = run_main(["--cases", "import,add-out"], fake)
        self.assertEqual(status, 0)
        self.assertEqual(fake.ran, ["add-out", "import"])  # the plan's order
        self.assertEqual({r["case"] for r in rows}, {"add-out", "import"})

    def test_bad_arguments(self):
        for argv in (["--cases", "nope"], ["--cases", ","], ["--frobnicate"]):
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as raised:
                pb.parse_args(argv)
            self.assertEqual(raised.exception.code, 2)

    def test_quick_is_smaller(self):
        full, quick = pb.Settings(False), pb.Settings(True)
        self.assertEqual((full.host_calls, full.host_batches), (256, 51))  # bench/lib/timing.c's host method
        for field in ("host_batches", "completion_batches", "gpu_batches", "pool_bytes", "imports",
                      "adamw_host_calls"):
            self.assertLess(getattr(quick, field), getattr(full, field), field)
        self.assertGreaterEqual(quick.pool_bytes, 256 << 20)  # still far beyond any L2


class WithoutGpu(unittest.TestCase):
    def test_dry_run(self):
        with mock.patch.dict(sys.modules, {"torch": None}):
            status, out, rows, md = run_main(["--dry-run"], env={"EW_REQUIRE_GPU": "1"})
        self.assertEqual(status, 0)
        self.assertIn("plan: add-out", out)
        self.assertEqual(len(rows), sum(len(case.rows) for case in pb.CASES))
        self.assertEqual({r["check"] for r in rows}, {"not run: --dry-run"})
        self.assertEqual({r["ours"] for r in rows} | {r["peer"] for r in rows}, {""})
        self.assertNotIn("yes", {r["met"] for r in rows})

    def test_no_torch(self):
        with mock.patch.dict(sys.modules, {"torch": None}):
            status, out, rows, md = run_main(["--quick"])
            self.assertEqual(status, 0)
            self.assertIn("torch not importable", out)
            self.assertTrue(all(r["check"].startswith("not run: torch not importable") for r in rows))
            self.assertIn("nothing measured: torch not importable", md)
            self.assertEqual(run_main(["--quick", "--require"])[0], 1)


class Member:
    """Records what the timing loops do to it, in order."""

    def __init__(self, name, log, bad_after=None):
        self.name, self.log, self.calls, self.bad_after = name, log, 0, bad_after

    def member(self):
        return pb.Member(self.call, lambda: self.log.append((self.name, "sync")),
                         lambda: self.log.append((self.name, "reset")), self.verify)

    def call(self):
        self.calls += 1
        if not self.log or self.log[-1] != (self.name, "call"):
            self.log.append((self.name, "call"))

    def verify(self):
        self.log.append((self.name, "verify"))
        if self.bad_after is not None and self.calls > self.bad_after:
            raise pb.CheckFailed("%s went wrong" % self.name)


class Loops(unittest.TestCase):
    def test_host_loop_order_and_counts(self):
        log = []
        a, b = Member("a", log), Member("b", log)
        times = pb.median_host_us([a.member(), b.member()], calls=7, batches=4)
        self.assertEqual(len(times), 2)
        self.assertTrue(all(t >= 0 for t in times))
        self.assertEqual((a.calls, b.calls), (7 * 5, 7 * 5))  # a warm-up batch, then 4
        # Each batch: poison, the calls, drain, check; the members take turns, each first in turn.
        batches = [log[k: k + 4] for k in range(0, len(log), 4)]
        self.assertTrue(all([step for _, step in batch] == ["reset", "call", "sync", "verify"] for batch in batches))
        self.assertEqual([batch[0][0] for batch in batches], ["a", "b", "a", "b", "b", "a", "a", "b", "b", "a"])

    def test_completion_loop_drains_every_call(self):
        log = []
        a = Member("a", log)
        pb.median_completion_us([a.member()], calls=3, batches=2)
        self.assertEqual(a.calls, 9)
        self.assertEqual(log.count(("a", "sync")), 3 * (3 + 1))  # one before each batch, one after each call
        self.assertEqual(log.count(("a", "verify")), 3)

    def test_a_wrong_result_stops_the_loop(self):
        log = []
        a, b = Member("a", log, bad_after=14), Member("b", log)
        with self.assertRaises(pb.CheckFailed):
            pb.median_host_us([a.member(), b.member()], calls=7, batches=4)


if __name__ == "__main__":
    unittest.main()
