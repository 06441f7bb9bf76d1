#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The strided targets' tables from ew-bench-strided's CSV and its PyTorch peer's.

    strided_report.py OUT_DIR [--ew FILE] [--torch FILE]

Reads OUT_DIR/ew-strided.csv (impl ew: the strided call; ew_flat: its yardstick, timed in the same group)
and, where present, OUT_DIR/torch-strided.csv (impl torch), and writes OUT_DIR/strided.md: a summary, then
one table per target with our GB/s, PyTorch's, the yardstick's, the ratio the target asks for (ours /
yardstick) and a verdict (met / MISSED / no data) per row and per target, for the back-to-back column and
for the isolated one. Target 6 is host microseconds per call: ours strided minus ours flat; target 7
(the gather kernel's own layouts) has no goal: its rows show the ratio and read "no goal". A row whose
bit-exact check failed is MISSED whatever its speed; a row without our figure or the yardstick's is
"no data", never met. The summary also counts, per column, the cases where our GB/s is above
PyTorch's, and names the others. Also OUT_DIR/strided.png where matplotlib imports (else a note says
it was skipped). Standard library only besides the optional plot; bench/test_strided_report.py tests it.
"""

import argparse
import csv
import os
import sys

COLUMNS = ("target,case,impl,op,out_dtype,in_dtype,shape,layout,c,bytes,us,gbps,us_isolated,gbps_isolated,"
           "check").split(",")
B2B, ISO = "back-to-back", "isolated"
TIMINGS = (B2B, ISO)
FIELDS = {B2B: ("us", "gbps"), ISO: ("us_isolated", "gbps_isolated")}
MET, MISSED, NO_DATA, NO_GOAL = "met", "MISSED", "no data", "no goal"

# number: (title, goal in words, threshold, kind); kind "ratio": ours / yardstick GB/s >= threshold,
# "host": ours strided - ours flat host microseconds <= threshold, "info": the ratio, judged by nothing.
TARGETS = {
    1: ("Contiguous layouts through the strided calls, every op, f32, 64x16x256x256",
        ">= 0.99x the flat call", 0.99, "ratio"),
    2: ("Row and column broadcast [N,C] + [C] / [N,C] + [N,1], N*C = 2^26",
        ">= 0.95x the flat add of the dtype", 0.95, "ratio"),
    3: ("A scalar operand (b strides {0,0}), [8192, 8192] add",
        ">= 0.97x the flat relu moving the same bytes", 0.97, "ratio"),
    4: ("A transposed operand [N,C] + [C,N]^T, N = C = 8192", ">= 0.95x the flat add", 0.95, "ratio"),
    5: ("NCHW f32 -> NHWC f16 cast, (32, 256, 64, 64)", ">= 0.95x the flat cast f32 -> f16", 0.95, "ratio"),
    6: ("Host cost of a 4-d strided call (gather kernel)", "<= the flat call + 0.5 us", 0.5, "host"),
    7: ("The gather kernel's layouts: [N,1,C] + [1,H,C], a (B,H,S,D) -> (B,S,H,D) permute, relu into a "
        "gapped output", "none (the flat relu at the same n as the yardstick)", None, "info"),
}


def number(text):
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def read_rows(paths):
    """Every row of the CSVs that exist, as dicts of strings."""
    rows = []
    for path in paths:
        if path and os.path.exists(path):
            with open(path, newline="") as f:
                rows.extend(csv.DictReader(f))
    return rows


class Results:
    """Rows by (case, impl); the cases of each target in the order first seen."""

    def __init__(self, rows):
        self.by = {}
        self.cases = {t: [] for t in TARGETS}
        for r in rows:
            try:
                target = int(r.get("target") or 0)
            except ValueError:
                continue
            if target not in TARGETS:
                continue
            key = (r["case"], r["impl"])
            self.by[key] = r
            if r["impl"] in ("ew", "torch") and r["case"] not in self.cases[target]:
                self.cases[target].append(r["case"])

    def figure(self, case, impl, timing, what):
        """what: 0 us, 1 GB/s."""
        r = self.by.get((case, impl))
        return number(r.get(FIELDS[timing][what])) if r else None

    def check(self, case):
        r = self.by.get((case, "ew"))
        return r.get("check", "") if r else ""

    def row(self, case):
        return self.by.get((case, "ew")) or self.by.get((case, "torch"))


class Line:
    """One case in one column: the figures and the verdict."""

    def __init__(self, ours, torch, yard, ratio, status, why=""):
        self.ours, self.torch, self.yard, self.ratio, self.status, self.why = ours, torch, yard, ratio, status, why


def judge_line(results, target, case, timing):
    _, _, threshold, kind = TARGETS[target]
    check = results.check(case)
    if kind == "host":
        ours, yard = results.figure(case, "ew", timing, 0), results.figure(case, "ew_flat", timing, 0)
        torch = results.figure(case, "torch", timing, 0)
        ratio = ours - yard if ours is not None and yard is not None else None
    else:
        ours, yard = results.figure(case, "ew", timing, 1), results.figure(case, "ew_flat", timing, 1)
        torch = results.figure(case, "torch", timing, 1)
        ratio = ours / yard if ours is not None and yard else None
    if check in ("mismatch", "failed"):
        return Line(ours, torch, yard, ratio, MISSED, "check: " + check)
    if ratio is None:
        return Line(ours, torch, yard, None, NO_DATA, "ours" if ours is None else "yardstick")
    if kind == "info":
        return Line(ours, torch, yard, ratio, NO_GOAL)
    met = ratio <= threshold if kind == "host" else ratio >= threshold
    return Line(ours, torch, yard, ratio, MET if met else MISSED)


def target_verdict(lines):
    """MISSED if any row missed; no data if there is no row or a row lacks data; no goal where every row
    has none; met otherwise."""
    if any(x.status == MISSED for x in lines):
        status = MISSED
    elif not lines or any(x.status == NO_DATA for x in lines):
        status = NO_DATA
    elif all(x.status == NO_GOAL for x in lines):
        status = NO_GOAL
    else:
        status = MET
    if status == NO_GOAL:
        return status, "%d rows" % len(lines)
    met = sum(x.status == MET for x in lines)
    missed = sum(x.status == MISSED for x in lines)
    tally = "%d/%d rows met" % (met, len(lines))
    if missed:
        tally += ", %d missed" % missed
    if len(lines) - met - missed:
        tally += ", %d no data" % (len(lines) - met - missed)
    return status, tally


def judge(results):
    """{target: {timing: (status, tally, worst ratio, [(case, Line)])}}"""
    out = {}
    for target in TARGETS:
        kind = TARGETS[target][3]
        out[target] = {}
        for timing in TIMINGS:
            lines = [(case, judge_line(results, target, case, timing)) for case in results.cases[target]]
            status, tally = target_verdict([x for _, x in lines])
            ratios = [x.ratio for _, x in lines if x.ratio is not None]
            worst = (max(ratios) if kind == "host" else min(ratios)) if ratios else None
            out[target][timing] = (status, tally, worst, lines)
    return out


def against_peer(results, timing):
    """(cases where ours is above PyTorch, cases with both figures, [(case, ours / PyTorch)] of the rest)
    over the GB/s targets."""
    ahead, behind = 0, []
    for target, (_, _, _, kind) in TARGETS.items():
        if kind == "host":
            continue
        for case in results.cases[target]:
            ours, torch = results.figure(case, "ew", timing, 1), results.figure(case, "torch", timing, 1)
            if ours is None or not torch:
                continue
            if ours > torch:
                ahead += 1
            else:
                behind.append((case, ours / torch))
    return ahead, ahead + len(behind), behind


def fmt(value, form="%.1f"):
    return "-" if value is None else form % value


def markdown(results, verdicts, sources, plot_note):
    out = ["# Strided targets", ""]
    out.append("From %s. GB/s count the bytes each op must move (each distinct input element once, each output "
               "element once), 1 GB = 10^9 bytes; the yardstick is the library's flat call timed in the same group "
               "as the case, batch for batch; the ratio is ours / the yardstick's GB/s (target 6: host "
               "microseconds, ours strided minus ours flat). Verdicts from the back-to-back column and from the "
               "isolated one (docs/design.md judges targets on the isolated column). A failed bit-exact check is "
               "MISSED; a missing figure is \"no data\", never met." % ", ".join(sources))
    out += ["", "| target | goal | back-to-back | isolated | worst ratio b2b / iso |", "|---|---|---|---|---|"]
    for target, (title, goal, _, kind) in TARGETS.items():
        v = verdicts[target]
        form = "%+.3f us" if kind == "host" else "%.3f"
        out.append("| %d. %s | %s | %s (%s) | %s (%s) | %s / %s |" % (
            target, title, goal, v[B2B][0], v[B2B][1], v[ISO][0], v[ISO][1], fmt(v[B2B][2], form),
            fmt(v[ISO][2], form)))
    out.append("")
    for timing in TIMINGS:
        ahead, total, behind = against_peer(results, timing)
        text = "Against PyTorch, %s: ours above in %d of %d cases" % (timing, ahead, total)
        if behind:
            text += "; not above in %s" % ", ".join("%s (%.3fx)" % (case, r) for case, r in behind)
        out.append(text + ".  ")
    for target, (title, goal, _, kind) in TARGETS.items():
        v = verdicts[target]
        out += ["", "## Target %d: %s" % (target, title), "",
                "Goal: %s. Back-to-back: **%s** (%s); isolated: **%s** (%s)." % (
                    goal, v[B2B][0], v[B2B][1], v[ISO][0], v[ISO][1]), ""]
        if not results.cases[target]:
            out.append("No rows for this target in the CSVs: no data.")
            continue
        if kind == "host":
            out += ["| case | ours strided us | ours flat us | torch us | strided - flat | verdict "
                    "| iso strided us | iso flat us | iso strided - flat | verdict iso | check |",
                    "|---|---|---|---|---|---|---|---|---|---|---|"]
        else:
            out += ["| case | ours GB/s | torch GB/s | flat GB/s | ratio | verdict "
                    "| ours iso | torch iso | flat iso | ratio iso | verdict iso | check |",
                    "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for (case, b), (_, i) in zip(v[B2B][3], v[ISO][3]):
            def verdict_text(x):
                return x.status + (" (%s)" % x.why if x.why else "")
            if kind == "host":
                out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    case, fmt(b.ours, "%.3f"), fmt(b.yard, "%.3f"), fmt(b.torch, "%.3f"), fmt(b.ratio, "%+.3f"),
                    verdict_text(b), fmt(i.ours, "%.3f"), fmt(i.yard, "%.3f"), fmt(i.ratio, "%+.3f"),
                    verdict_text(i), results.check(case) or "-"))
            else:
                out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    case, fmt(b.ours), fmt(b.torch), fmt(b.yard), fmt(b.ratio, "%.3f"), verdict_text(b),
                    fmt(i.ours), fmt(i.torch), fmt(i.yard), fmt(i.ratio, "%.3f"), verdict_text(i),
                    results.check(case) or "-"))
    out += ["", plot_note, ""]
    return "\n".join(out)


def plot(results, verdicts, path):
    """Ratios to the yardstick (isolated column where timed, else back-to-back), ours and PyTorch's.
    Returns a note for the markdown; never raises for a missing matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "Plot skipped: matplotlib is not importable here."

    def column_of(case):
        return ISO if results.figure(case, "ew", ISO, 1) is not None else B2B

    def ratio(case, impl):
        timing = column_of(case)
        ours, yard = results.figure(case, impl, timing, 1), results.figure(case, "ew_flat", timing, 1)
        return ours / yard if ours is not None and yard else float("nan")

    fig, axes = plt.subplots(2, 4, figsize=(20, 9))
    axes = axes.ravel()
    # targets 1, 3, 4, 5 and 7: a bar per case, ours and torch, each with its goal where it has one
    ax = axes[0]
    cases = [(t, c) for t in (1, 3, 4, 5, 7) for c in results.cases[t]]
    xs = range(len(cases))
    ax.bar([x - 0.2 for x in xs], [ratio(c, "ew") for _, c in cases], 0.4, label="libelementwise")
    ax.bar([x + 0.2 for x in xs], [ratio(c, "torch") for _, c in cases], 0.4, label="PyTorch")
    for x, (t, _) in zip(xs, cases):
        if TARGETS[t][2] is not None:
            ax.plot([x - 0.45, x + 0.45], [TARGETS[t][2]] * 2, color="red", linewidth=1)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([c for _, c in cases], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("GB/s / the flat yardstick's")
    ax.set_title("targets 1, 3, 4, 5, 7 (red: goal; 7 has none)")
    ax.legend(fontsize=8)
    # target 2: a panel per dtype and layout, C along x, a line per op
    panel = 1
    for dtype in ("f32", "f16", "bf16"):
        for layout in ("row", "col"):
            if panel >= len(axes):
                break
            ax = axes[panel]
            panel += 1
            for op, marker in (("add", "o"), ("mul", "s"), ("scale_add", "^")):
                rows = [(int(results.row(c)["c"]), c) for c in results.cases[2]
                        if results.row(c) and results.row(c)["layout"] == layout
                        and results.row(c)["op"] == op and results.row(c)["out_dtype"] == dtype]
                rows.sort()
                labels = [str(cc) for cc, _ in rows]
                ax.plot(labels, [ratio(c, "ew") for _, c in rows], marker=marker, label="ours " + op)
                ax.plot(labels, [ratio(c, "torch") for _, c in rows], marker=marker, linestyle="--",
                        fillstyle="none", label="torch " + op)
            ax.axhline(TARGETS[2][2], color="red", linewidth=1)
            ax.set_title("target 2: %s, %s broadcast" % (dtype, layout))
            ax.set_xlabel("C")
            ax.set_ylim(bottom=0)
            if panel == 2:
                ax.legend(fontsize=7)
    # target 6: host microseconds per call
    ax = axes[-1]
    labels, values = [], []
    for case in results.cases[6]:
        for impl, name in (("ew", "ours strided"), ("ew_flat", "ours flat"), ("torch", "torch strided")):
            for timing in TIMINGS:
                us = results.figure(case, impl, timing, 0)
                if us is not None and not (impl == "torch" and timing == ISO):  # torch: one figure for both
                    labels.append("%s\n%s" % (name, "iso" if timing == ISO else "b2b"))
                    values.append(us)
    ax.bar(range(len(values)), values)
    ax.set_xticks(list(range(len(values))))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("host us per call")
    ax.set_title("target 6: host time, 4-d strided vs flat")
    fig.suptitle("Strided calls against the flat call in the same run (isolated column where timed)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return "![strided targets](%s)" % os.path.basename(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--ew", help="default OUT_DIR/ew-strided.csv")
    parser.add_argument("--torch", help="default OUT_DIR/torch-strided.csv")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    ew = args.ew or os.path.join(args.out_dir, "ew-strided.csv")
    torch = args.torch or os.path.join(args.out_dir, "torch-strided.csv")
    sources = [os.path.basename(p) for p in (ew, torch) if os.path.exists(p)]
    results = Results(read_rows([ew, torch]))
    verdicts = judge(results)
    if args.no_plot:
        note = "Plot skipped (--no-plot)."
    else:
        note = plot(results, verdicts, os.path.join(args.out_dir, "strided.png"))
    text = markdown(results, verdicts, sources or ["no CSV"], note)
    with open(os.path.join(args.out_dir, "strided.md"), "w") as f:
        f.write(text)
    summary = text.split("\n## ")[0]
    print(summary)
    return 0 if sources else 1


if __name__ == "__main__":
    sys.exit(main())
