#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The user-defined kernels' targets table from ew-bench-user-kernels's CSVs and its peers'.

    kernel_report.py OUT_DIR

Reads, where present, OUT_DIR/ew-kernel.csv (targets 1-3, 6, 7 and the host time of a launch),
ew-kernel-create-compile.csv and ew-kernel-create-disk.csv (ew-bench-user-kernels --create-only),
ew-kernel-cold.csv (fresh processes in turn: --create-only compile --sources 1, the first create, and
--create-only floor, NVRTC's own open and empty kernel) and torch-kernel.csv
(bench/peers/torch_kernel.py), all with the columns
target,case,dtype,n,alignment,timing,metric,library,yardstick_impl,yardstick,ratio,check, and writes
OUT_DIR/kernel.md: one line per target (goal, measured ratio or time in each timed column, verdict), then
target 1's cases, target 2's peers and target 7's three calls. Ratios are recomputed from the values: GB/s
library / yardstick, times yardstick / library (a peer's time over the kernel's from ew-kernel.csv; target
7b: the two catalogue calls' over the kernel's), so above 1 is the library ahead; target 4's host time is
the kernel's launch minus ew_binary's. A failed bit check makes its target MISSED whatever the speed; a
missing figure is "no data", never met. Standard library only; bench/test_kernel_report.py tests it.
"""

import argparse
import os
import sys
from statistics import median

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from strided_report import MET, MISSED, NO_DATA, fmt, number, read_rows  # noqa: E402

COLUMNS = "target,case,dtype,n,alignment,timing,metric,library,yardstick_impl,yardstick,ratio,check".split(",")
FILES = ("ew-kernel.csv", "ew-kernel-create-compile.csv", "ew-kernel-create-disk.csv", "torch-kernel.csv")
B2B, ISO = "back-to-back", "isolated"
TIMINGS = (B2B, ISO)
INFO = "information"
CHAIN = "t2-chain"
T7, T7_CALLS = "t7-two-outputs", "t7-two-outputs-calls"  # GB/s vs the flat add; us vs add then mul
BAD_CHECKS = ("mismatch", "failed")

# Ratio targets: (label, what, goal text, case, peer impl or None for the case's own yardstick, threshold;
# None: shown for information).
RATIOS = (
    ("2a", "the chain `ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)))`, f32 -> f16, n = 2^26, one "
           "launch vs ew_scale_add -> ew_unary(RELU) -> ew_cast through temporaries", ">= 2.5x faster", CHAIN, None,
     2.5),
    ("2b", "the chain vs torch.compile of `torch.relu(1.5 * a + b).half()`", ">= 1.02x faster", CHAIN,
     "torch_compile", 1.02),
    ("2c", "the chain vs a CuPy ElementwiseKernel", ">= 2x faster", CHAIN, "cupy_elementwise", 2.0),
    ("2d", "the chain vs PyTorch eager", INFO, CHAIN, "torch_eager", None),
    ("3", "`ew::add(ew::mul(in0, in1), in2)` f16, n = 2^26, GB/s on its 8 bytes an element vs the flat add "
          "f16 on its 6", ">= 0.97x", "t3-ternary-f16", None, 0.97),
    ("6", "`out0 = in0; out1 = in0;` bf16 -> f32 with an abs max output (ew_kernel_create_outputs), n = 2^28, "
          "GB/s on its 6 bytes an element vs ew_cast bf16 -> f32; output and abs max equal ew_cast's and "
          "ew_amax's", ">= 0.95x", "t6-cast-amax", None, 0.95),
    ("7a", "`out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);` f32, two arrays (ew_kernel_create_outputs), "
           "n = 2^26, GB/s on its 16 bytes an element vs the flat add f32 on its 12 (the memory speed); both "
           "outputs equal ew_binary add's and mul's", ">= 0.97x", T7, None, 0.97),
    ("7b", "the same kernel's time vs two catalogue calls, ew_binary add then mul into two outputs (24 bytes an "
           "element, 1.5x the kernel's)", ">= 1.4x faster", T7_CALLS, None, 1.4),
)
# Create times (microseconds, at most the threshold): label, what, goal text, case, threshold.
CREATES = (
    ("4a", "ew_kernel_create of a new source (compiled; a fresh EW_KERNEL_CACHE_DIR)", "<= 150 ms",
     "t4-create-compile", 150000.0),
    ("4b", "ew_kernel_create from the disk cache (a new process, NVRTC unreachable)", "<= 2 ms", "t4-create-disk",
     2000.0),
    ("4c", "ew_kernel_create from the memory cache (same process)", "<= 20 us", "t4-create-memory", 20.0),
)
COLD = "ew-kernel-cold.csv"
COLD_WHAT = ("ew_kernel_create in a fresh process whose handle exists, NVRTC not yet open, empty cache: median "
             "over the processes, against NVRTC's own floor (open + an empty kernel, median over as many)")
COLD_BASE, COLD_MARGIN = 150000.0, 50000.0
HOST = ("4d", "host time of one ew_kernel_launch vs one ew_binary, add f32, n = 256", "<= ew_binary + 0.2 us",
        "t4-host-add-f32", 0.2)
T1_GOAL = 0.98


class Results:
    """Rows by (case, timing, yardstick_impl); the timings the library's rows were timed in."""

    def __init__(self, rows):
        self.by = {}
        self.t1_cases = []
        self.timings = []
        for r in rows:
            case, timing, impl = r.get("case") or "", r.get("timing") or "", r.get("yardstick_impl") or ""
            self.by[(case, timing, impl)] = r
            if case.startswith("t1-") and case not in self.t1_cases:
                self.t1_cases.append(case)
            if timing in TIMINGS and timing not in self.timings and not impl.startswith(("torch", "cupy")):
                self.timings.append(timing)
        self.timings = [t for t in TIMINGS if t in self.timings]

    def library(self, case, timing):
        """The library's row of a case in a column (its yardstick is one of ours, or none)."""
        for (c, t, impl), r in self.by.items():
            if c == case and t == timing and not impl.startswith(("torch", "cupy")):
                return r
        return None

    def peer(self, case, timing, impl):
        return self.by.get((case, timing, impl))


class Figure:
    """One target in one column: the measured value (a ratio, microseconds), its status and why."""

    def __init__(self, value, status, why=""):
        self.value, self.status, self.why = value, status, why


def check_of(row):
    return (row.get("check") or "") if row else ""


def ratio_figure(results, case, timing, peer, threshold):
    """The library's advantage over the case's yardstick (peer None) or a peer, in one column."""
    lib = results.library(case, timing)
    check = check_of(lib)
    value = None
    if lib is not None:
        mine, theirs = number(lib.get("library")), number(lib.get("yardstick"))
        if peer is not None:
            row = results.peer(case, timing, peer)
            theirs = number(row.get("yardstick")) if row else None
        if mine and theirs:
            value = mine / theirs if lib.get("metric") == "gbps" else theirs / mine
    if check in BAD_CHECKS:
        return Figure(value, MISSED, "the kernel's check: " + check)
    if value is None:
        if lib is None or not number(lib.get("library")):
            return Figure(None, NO_DATA, "no library figure")
        return Figure(None, NO_DATA, "no %s figure" % (peer or "yardstick"))
    if threshold is None:
        return Figure(value, INFO)
    return Figure(value, MET if value >= threshold else MISSED)


def host_figure(results, timing):
    _, _, _, case, threshold = HOST
    row = results.library(case, timing)
    mine, theirs = (number(row.get("library")), number(row.get("yardstick"))) if row else (None, None)
    if mine is None or theirs is None:
        return Figure(None, NO_DATA, "no figure")
    difference = mine - theirs
    return Figure(difference, MET if difference <= threshold else MISSED)


def create_figure(results, case, threshold):
    row = results.library(case, "host")
    value = number(row.get("library")) if row else None
    if check_of(row) in BAD_CHECKS:
        return Figure(value, MISSED, "the created kernels' check: " + check_of(row))
    if value is None:
        return Figure(None, NO_DATA, "no figure")
    return Figure(value, MET if value <= threshold else MISSED)


def cold_line(rows):
    """Target 5: the first create of fresh processes against max(150 ms, NVRTC's floor + 50 ms)."""
    firsts = [number(r.get("library")) for r in rows if r.get("case") == "t4-create-compile-first"]
    opens = [number(r.get("library")) for r in rows if r.get("case") == "t5-nvrtc-open"]
    empties = [number(r.get("library")) for r in rows if r.get("case") == "t5-nvrtc-empty"]
    checks = [check_of(r) for r in rows if r.get("case") == "t4-create-compile"]
    goal = "<= max(150 ms, floor + 50 ms)"
    firsts = [v for v in firsts if v is not None]
    floors = [a + b for a, b in zip(opens, empties) if a is not None and b is not None]
    if not firsts or not floors:
        return ("5", COLD_WHAT, goal, "-", NO_DATA)
    value, floor = median(firsts), median(floors)
    limit = max(COLD_BASE, floor + COLD_MARGIN)
    text = "%s over %d processes (%s to %s); floor %s (open %s, empty kernel %s); limit %s" % (
        microseconds(value), len(firsts), microseconds(min(firsts)), microseconds(max(firsts)),
        microseconds(floor), microseconds(median([v for v in opens if v is not None])),
        microseconds(median([v for v in empties if v is not None])), microseconds(limit))
    if any(c in BAD_CHECKS for c in checks):
        return ("5", COLD_WHAT, goal, text + "; the created kernels' check failed", MISSED)
    return ("5", COLD_WHAT, goal, text, MET if value <= limit else MISSED)


def overall(figures):
    """MISSED if any column missed; no data if none or one lacks data; information; met."""
    statuses = [f.status for f in figures]
    if MISSED in statuses:
        return MISSED
    if not statuses or NO_DATA in statuses:
        return NO_DATA
    return INFO if INFO in statuses else MET


def target1(results, timing):
    """Every t1 case in one column: (status, tally, worst ratio, [(case, Figure)])."""
    lines = [(case, ratio_figure(results, case, timing, None, T1_GOAL)) for case in results.t1_cases]
    figures = [f for _, f in lines]
    met = sum(f.status == MET for f in figures)
    missed = sum(f.status == MISSED for f in figures)
    tally = "%d/%d met" % (met, len(figures))
    if missed:
        tally += ", %d missed" % missed
    if len(figures) - met - missed:
        tally += ", %d no data" % (len(figures) - met - missed)
    ratios = [f.value for f in figures if f.value is not None]
    return overall(figures), tally, (min(ratios) if ratios else None), lines


def target_of(label):
    """The target a table label belongs to: "2b" -> 2."""
    return int(label.rstrip("abcdefghijklmnopqrstuvwxyz"))


def judge(results, cold=()):
    """[(label, what, goal, measured text, verdict)] in table order, and target 1's columns."""
    out = []
    t1 = {t: target1(results, t) for t in results.timings}
    measured = "; ".join("%s worst %s, %s" % (t, fmt(t1[t][2], "%.3f"), t1[t][1]) for t in results.timings)
    t1_verdict = overall([] if not results.t1_cases else
                         [Figure(None, t1[t][0]) for t in results.timings])
    out.append(("1", "`ew::add(in0, in1)` f32/f16/i8, n = 2^20-2^28, aligned and misaligned: kernel GB/s vs "
                     "ew_binary(EW_OP_ADD)'s, outputs bit-identical", ">= 0.98x", measured or "-", t1_verdict))
    ratios = []
    for label, what, goal, case, peer, threshold in RATIOS:
        figures = {t: ratio_figure(results, case, t, peer, threshold) for t in results.timings}
        ratios.append((label, what, goal, columns_text(figures, "%.3fx"), overall(list(figures.values()))))
    out += [r for r in ratios if target_of(r[0]) < 4]
    for label, what, goal, case, threshold in CREATES:
        f = create_figure(results, case, threshold)
        text = "-" if f.value is None else microseconds(f.value)
        extra = []
        for suffix, name in (("-max", "max"), ("-first", "first in its process")):
            row = results.library(case + suffix, "host")
            if row and number(row.get("library")) is not None:
                extra.append("%s %s" % (name, microseconds(number(row.get("library")))))
        row = results.library(case, "host")
        if row and row.get("n"):
            extra.append("median of %s" % row["n"])
        if extra:
            text += " (%s)" % ", ".join(extra)
        if f.why and f.status != NO_DATA:
            text += "; " + f.why
        out.append((label, what, goal, text, f.status))
    label, what, goal, _, _ = HOST
    figures = {t: host_figure(results, t) for t in results.timings}
    out.append((label, what, goal, columns_text(figures, "%+.3f us"), overall(list(figures.values()))))
    out.append(cold_line(cold))
    out += [r for r in ratios if target_of(r[0]) > 5]  # 6 and 7 after the create targets, in the order
    return out, t1


def microseconds(us):
    return "%.1f ms" % (us / 1e3) if us >= 1000 else "%.2f us" % us


def columns_text(figures, form):
    if not figures:
        return "-"
    parts = []
    for timing, f in figures.items():
        text = "%s %s %s" % (timing, fmt(f.value, form), f.status)
        parts.append(text + (" (%s)" % f.why if f.why else ""))
    return "; ".join(parts)


def markdown(results, lines, t1, sources):
    out = ["# User-defined kernels: targets", ""]
    out.append("From %s. Ratios are the library's advantage: GB/s kernel / yardstick; times yardstick / kernel "
               "(above 1: the kernel ahead). Back-to-back: calls queued one after another; isolated: each call "
               "alone (docs/design.md judges on the isolated column). A failed bit check is MISSED; a missing figure "
               "is \"no data\", never met." % ", ".join(sources))
    out += ["", "| target | what | goal | measured | verdict |", "|---|---|---|---|---|"]
    for label, what, goal, measured, verdict in lines:
        out.append("| %s | %s | %s | %s | %s |" % (label, what, goal, measured, verdict))
    out += ["", "## Target 1: `return ew::add(in0, in1);` vs ew_binary(EW_OP_ADD)", ""]
    if not results.t1_cases:
        out.append("No rows for this target in the CSVs: no data.")
    else:
        head, rule = "| case |", "|---|"
        for t in results.timings:
            head += " %s kernel GB/s | ew_binary GB/s | ratio | verdict |" % t
            rule += "---|---|---|---|"
        out += [head + " check |", rule + "---|"]
        for i, case in enumerate(results.t1_cases):
            cells = []
            for t in results.timings:
                row = results.library(case, t)
                f = t1[t][3][i][1]
                cells += [fmt(number(row.get("library")) if row else None),
                          fmt(number(row.get("yardstick")) if row else None), fmt(f.value, "%.3f"),
                          f.status + (" (%s)" % f.why if f.why else "")]
            row = results.library(case, results.timings[0]) if results.timings else None
            out.append("| %s | %s | %s |" % (case, " | ".join(cells), check_of(row) or "-"))
    out += ["", "## Target 2: the chain, microseconds per call", ""]
    impls = [("ew_kernel", "the kernel (one launch)", None), ("ew_three_calls", "ew_scale_add -> ew_unary -> ew_cast",
                                                              None)]
    impls += [(p, p, p) for p in ("torch_compile", "cupy_elementwise", "torch_eager")]
    out += ["| impl | " + " | ".join("%s us" % t for t in results.timings) + " | check |",
            "|---|" + "---|" * len(results.timings) + "---|"]
    for impl, name, peer in impls:
        cells, check = [], ""
        for t in results.timings:
            lib = results.library(CHAIN, t)
            if peer is None:
                value = number(lib.get("library" if impl == "ew_kernel" else "yardstick")) if lib else None
                check = check or (check_of(lib) if impl == "ew_kernel" else "")
            else:
                row = results.peer(CHAIN, t, peer)
                value = number(row.get("yardstick")) if row else None
                check = check or check_of(row)
            cells.append(fmt(value))
        out.append("| %s | %s | %s |" % (name, " | ".join(cells), check or "-"))
    out += [""] + target7(results) + [""]
    return "\n".join(out)


def target7(results):
    """Target 7's three calls in each column, GB/s on their own bytes and microseconds: the kernel and the
    flat add from t7-two-outputs' GB/s, the pair from t7-two-outputs-calls' microseconds."""
    out = ["## Target 7: two outputs (a + b, a * b) f32 against the flat add and against add then mul", ""]
    rows = {t: (results.library(T7, t), results.library(T7_CALLS, t)) for t in results.timings}
    if not any(a or b for a, b in rows.values()):
        return out + ["No rows for this target in the CSVs: no data."]
    out += ["| impl | bytes an element | " + " | ".join("%s GB/s | %s us" % (t, t) for t in results.timings)
            + " | check |", "|---|---|" + "---|---|" * len(results.timings) + "---|"]
    impls = (("the kernel (one launch, two arrays)", 16, "gbps", T7, "library"),
             ("ew_binary add (the memory speed)", 12, "gbps", T7, "yardstick"),
             ("ew_binary add then mul", 24, "us", T7_CALLS, "yardstick"))
    for name, size, metric, case, column in impls:
        cells, check = [], ""
        for t in results.timings:
            row = results.library(case, t)
            value, n = (number(row.get(column)), number(row.get("n"))) if row else (None, None)
            gbps = us = None
            if value and n:
                gbps, us = (value, size * n / value / 1e3) if metric == "gbps" else (size * n / value / 1e3, value)
            cells += [fmt(gbps), fmt(us)]
            check = check or check_of(row)
        out.append("| %s | %d | %s | %s |" % (name, size, " | ".join(cells), check or "-"))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    args = parser.parse_args(argv)
    paths = [os.path.join(args.out_dir, name) for name in FILES]
    cold = os.path.join(args.out_dir, COLD)
    sources = [os.path.basename(p) for p in paths + [cold] if os.path.exists(p)]
    results = Results(read_rows(paths))
    lines, t1 = judge(results, read_rows([cold]) if os.path.exists(cold) else [])
    text = markdown(results, lines, t1, sources or ["no CSV"])
    with open(os.path.join(args.out_dir, "kernel.md"), "w") as f:
        f.write(text)
    print(text.split("\n## ")[0])
    return 0 if sources else 1


if __name__ == "__main__":
    sys.exit(main())
