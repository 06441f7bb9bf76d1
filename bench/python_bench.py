#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python package against its frameworks' own calls, in one process: the targets of issue 48.

    python3 bench/python_bench.py [--out-dir DIR] [--quick] [--cases LIST] [--lib PATH] [--dry-run]
                                  [--require] [--device D]

Each case times our call and the framework's same call, in turn batch by batch (so that a drift of the
host falls on both), on the same device and stream (the framework's current one):
  host        CPU wall time of a batch of back-to-back calls over the number of calls, the median batch;
              the stream is drained between batches, so the queue never fills (fewer calls a batch than
              the launches a stream holds) and no call waits on the GPU: bench/lib/timing.c's host-overhead
              method (256 calls a batch, 51 batches).
  completion  host clock from the call to the stream's synchronize returning, one call at a time, the
              median call.
  gpu         GPU time of one call: CUDA events around each call, every batch queued behind a hold
              (torch.cuda._sleep) so no call waits on Python, each call on fresh tensors rotating over
              pools of at least 2 GiB per operand (L2 never serves an input again): the isolated column of
              bench/peers/torch_strided.py, whose timing this imports. The C call's figure is the library's
              ew_binary_strided on the same tensors through ctypes (bench/peers/torch_peer.py's Library,
              the library of --lib, else the package's own), so a binding that copied or took a slower
              path would show here.
  import      milliseconds of `import elementwise` in a fresh interpreter that has imported torch, the
              median over several processes (after one not counted, which warms the file cache).
  bandwidth   GB/s a call moves over its GPU time (the isolated column above): the one metric where higher
              is better, so its goal is the least ratio that meets the target.
The cases (CASES below) are the issue's "Targets" table: add into out= and allocating at 1,024 f32 against
torch.add, [4096,768] + [768] f16 and [4096,768] + a transposed [768,4096] f16 (host time against
torch.add, GPU time against the C call's), a Kernel of two inputs at 1,024 against torch.add(out=),
add_batched over 1,000 x 4,096 f32 with outputs given against torch._foreach_add_ (in place) and, to
completion, against the C ew_binary_batched on the same lists (its pointer arrays prepared), an AdamW step
as a user Kernel over 1,000 f32 tensors of log-uniform sizes 2^10..2^20 (bench/peers/torch_foreach.py's,
seed 1) in one Kernel.batched call, in place, against torch._fused_adamw_ on copies of the same lists (GPU
time, and host time for information) and, in GB/s on its 28 bytes an element (16 read, 12 written),
against ew.add's on one flat 2^26-element f32 add timed beside it, CuPy arrays against cupy.add(out=), and
the import. Targets are ratios ours / peer of times (lower is better), but the bandwidth's, a ratio of GB/s
(higher is better), and the import's, which is absolute.

Correctness comes first: before any case is timed its call runs into a poisoned output (all bits set)
on random inputs that are never zero (magnitudes in [1, 100), random signs) and is compared bit for bit
with the framework's result; an allocating call runs after a poisoned block of its size was freed, so
the caching allocator hands that block back. Every timed batch of ours is poisoned before and checked
after. The AdamW step, which computes in double where torch computes in float, is checked against a
float64 evaluation instead: ours within 2 ulp of it, torch's within its float arithmetic's reach; being
in place, its timed batches start from the checked state (restored, not poisoned) and end where the
checked batch ended, bit for bit. A wrong result fails the case (its rows read FAILED) and the exit
status; a missed target does not. A case that cannot run here (no CuPy, no library for the C call)
reads "no data", never "met"; with --require (or EW_REQUIRE_GPU=1 / ELEMENTWISE_REQUIRE_GPU=1, as on
the GPU machine) it fails instead, as does a run without torch or a GPU.

Writes DIR/python-bench.csv (COLUMNS) and DIR/python-bench.md (the environment and the table), prints
the table (case, metric, ours, peer, ratio, target, met). --quick takes fewer batches, smaller pools and
three imports (a check of the plumbing, not figures to report). --dry-run imports neither torch nor the
package: it prints the plan and writes both files with every row "not run". Exit status: 0, also for
missed targets; 1 when a check failed, a case raised or a required case could not run; 2 for bad
arguments. bench/test_python_bench.py tests everything here that needs no GPU.
"""

import argparse
import csv
import ctypes
import math
import os
import statistics
import struct
import subprocess
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))
import torch_foreach  # noqa: E402
import torch_kernel  # noqa: E402  (the peers import torch only where they measure)
import torch_peer  # noqa: E402
import torch_strided  # noqa: E402
from torch_strided import HostMember as Member, median_host_us  # noqa: E402  (bench/lib/timing.c's host method)
COLUMNS = ("case", "metric", "ours_impl", "ours", "peer_impl", "peer", "unit", "ratio", "target", "met", "check")


class Row:
    """One line of the table: a metric of a case, ours against a peer. goal: the largest ratio ours / peer
    that meets the target (absolute: the largest value of ours; higher, for a metric where more is better:
    the least ratio); None: shown for information."""

    def __init__(self, metric, ours, peer, goal=None, absolute=False, higher=False):
        self.metric, self.ours, self.peer, self.goal, self.absolute = metric, ours, peer, goal, absolute
        self.higher = higher


class Case:
    def __init__(self, key, label, rows):
        self.key, self.label, self.rows = key, label, rows


HOST, COMPLETION, GPU, IMPORT, BANDWIDTH = "host", "completion", "gpu", "import", "bandwidth"
UNITS = {HOST: "us", COMPLETION: "us", GPU: "us", IMPORT: "ms", BANDWIDTH: "GB/s"}
TORCH_OUT = "torch.add(a, b, out=o)"
# The same kernel on the same tensors: its GPU time should be the C call's; 3% allows for the timing's noise.
AS_THE_C_CALL = 1.03


def timed(key, label, ours, peer, goal, judged=HOST):
    """A case timed on the host and to completion, the goal on one of the two, the other for information."""
    other = COMPLETION if judged == HOST else HOST
    return Case(key, label, [Row(judged, ours, peer, goal), Row(other, ours, peer)])


def strided(key, label, operands):
    """A case of GpuRunner.strided_case: host time against torch, GPU time against the C call and torch."""
    ours, peer = "ew.add(%s, out=o)" % operands, "torch.add(%s, out=o)" % operands
    return Case(key, label, [Row(HOST, ours, peer, 1.2), Row(GPU, ours, "C ew_binary_strided", AS_THE_C_CALL),
                             Row(GPU, ours, peer), Row(COMPLETION, ours, peer)])


# The AdamW case: the body (the header's and docs' example), its list and its hyperparameters.
ADAMW_BODY = """
double g = in1, m = p1 * in2 + (1.0 - p1) * g, v = p2 * in3 + (1.0 - p2) * g * g;
double param = in0 * (1.0 - p0 * p4);
param -= p0 / p5 * m / (sqrt(v) / p6 + p3);
out0 = param; out1 = m; out2 = v;
"""
ADAMW_COUNT, ADAMW_SEED = 1000, 1  # bench/peers/torch_foreach.py's log-uniform sizes 2^10..2^20, as ew-bench-lists'
ADAMW_HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2)
ADAMW_STEP = 10  # t: bias corrections 1 - beta^t well away from 1
ADAMW_BYTES = 28  # an element: p, g, m, v read (16), p, m, v written (12)
ADD_ELEMENTS = 1 << 26  # ew.add's flat f32 yardstick: 12 bytes an element
ADAMW_OURS = "k.batched(ps, gs, ms, vs, out=(ps, ms, vs), params=p)"
ADAMW_TORCH = "torch._fused_adamw_(ps, gs, ms, vs, [], steps, ...)"

CASES = (
    timed("add-out", "ew.add(a, b, out=o), 1,024 f32", "ew.add(a, b, out=o)", TORCH_OUT, 1.2),
    timed("add-alloc", "ew.add(a, b) allocating, 1,024 f32", "ew.add(a, b)", "torch.add(a, b)", 1.3),
    strided("bias-f16", "[4096,768] + [768] f16, out given", "x, bias"),
    strided("transposed-f16", "[4096,768] + [768,4096].T f16, out given", "x, y.T"),
    timed("kernel", "Kernel launch, two inputs, 1,024 f32", "k(a, b, out=o)", TORCH_OUT, 1.3),
    Case("batched", "ew.add_batched, 1,000 x 4,096 f32, outs given", [
        Row(COMPLETION, "ew.add_batched(as_, bs, outs=outs)", "torch._foreach_add_(as_, bs)", 0.7),
        Row(HOST, "ew.add_batched(as_, bs, outs=outs)", "torch._foreach_add_(as_, bs)"),
        # The C call on the same lists, their pointers prepared: what of ours is the binding's.
        Row(COMPLETION, "ew.add_batched(as_, bs, outs=outs)", "C ew_binary_batched")]),
    Case("adamw", "AdamW step, Kernel.batched, 1,000 f32 tensors of 2^10..2^20, in place", [
        Row(GPU, ADAMW_OURS, ADAMW_TORCH, 1.0),
        # Its GB/s on 28 bytes an element against ew.add's on 12: the list call as near memory's speed as a
        # flat one.
        Row(BANDWIDTH, ADAMW_OURS, "ew.add(a, b, out=o), 2^26 f32", 0.90, higher=True),
        Row(HOST, ADAMW_OURS, ADAMW_TORCH)]),
    timed("cupy", "CuPy arrays, ew.add(a, b, out=o), 1,024 f32", "ew.add(a, b, out=o)", "cupy.add(a, b, out=o)",
          1.5),
    Case("import", "import elementwise, torch imported", [
        Row(IMPORT, "import elementwise", "", 50.0, absolute=True)]),
)
CASE_KEYS = tuple(case.key for case in CASES)


class Settings:
    """How much of each measurement: the full run (the figures to report) or --quick."""

    def __init__(self, quick):
        self.host_calls, self.host_batches = torch_strided.HOST_CALLS, 15 if quick else torch_strided.HOST_BATCHES
        self.batched_host_calls = 64  # a list call queues ~16 us of GPU work: 64 stay far from a full queue
        self.adamw_host_calls = 8 if quick else 16  # a step is ~1.3 ms of GPU work and a few launches
        self.completion_calls, self.completion_batches = (16, 7) if quick else (32, 31)
        self.gpu_batches, self.gpu_batch_ms = (5, 1.0) if quick else (15, 2.0)
        self.pool_bytes = (512 << 20) if quick else torch_strided.MIN_POOL_BYTES  # per operand; either >> any L2
        self.imports = 3 if quick else 5  # each a process importing torch: seconds

    def describe(self):
        return ("host: %d batches of %d calls (lists: %d, AdamW: %d); completion: %d batches of %d calls; gpu: "
                "%d batches of about %.1f ms, pools of %.1f GiB an operand; import: %d processes"
                % (self.host_batches, self.host_calls, self.batched_host_calls, self.adamw_host_calls,
                   self.completion_batches, self.completion_calls, self.gpu_batches, self.gpu_batch_ms,
                   self.pool_bytes / (1 << 30), self.imports))


class CheckFailed(Exception):
    """Our result is not the framework's, bit for bit (or the call raised)."""


class Skipped(Exception):
    """The case cannot run here (a framework or the library missing): its rows have no data."""


class Measured:
    """A row's figures: ours and the peer's (None where not measured)."""

    def __init__(self, ours=None, peer=None):
        self.ours, self.peer = ours, peer


# ---- verdicts and the report ----

def judged(row, measured):
    """What a row's goal is judged on: ours (an absolute row) or ours / peer; None where a figure is missing."""
    if measured is None or measured.ours is None:
        return None
    if row.absolute:
        return measured.ours
    return measured.ours / measured.peer if measured.peer else None


def ratio_of(row, measured):
    return None if row.absolute else judged(row, measured)


def verdict(row, measured, status):
    """'yes' / 'no' where the row has a goal and figures; 'FAILED' for a case whose check failed; 'no data'
    where a figure is missing; '-' for a row shown for information."""
    if status.startswith("FAILED"):
        return "FAILED"
    if row.goal is None:
        return "-"
    value = judged(row, measured)
    if value is None:
        return "no data"
    return "yes" if (value >= row.goal if row.higher else value <= row.goal) else "no"


def target_text(row):
    if row.goal is None:
        return "-"
    if row.absolute:
        return "<= %g %s" % (row.goal, UNITS[row.metric])
    if row.higher:
        return ">= %gx" % row.goal
    if row.goal == AS_THE_C_CALL:
        return "<= %.2fx (as the C call's)" % row.goal
    return "<= %gx" % row.goal


def fmt(value, form="%.3f"):
    return "" if value is None else form % value


class Line:
    """A row of the table as text, from a case, its row, its figures and its status."""

    def __init__(self, case, row, measured, status):
        self.case, self.row, self.check = case, row, status
        measured = measured or Measured()
        self.ours, self.peer, self.unit = fmt(measured.ours), fmt(measured.peer), UNITS[row.metric]
        self.ratio = fmt(ratio_of(row, measured), "%.2fx")
        self.target = target_text(row)
        self.met = verdict(row, measured, status)

    def fields(self):
        return {"case": self.case.key, "metric": self.row.metric, "ours_impl": self.row.ours,
                "ours": self.ours, "peer_impl": self.row.peer, "peer": self.peer, "unit": self.unit,
                "ratio": self.ratio, "target": self.target, "met": self.met, "check": self.check}

    def cells(self):
        ours = "%s %s" % (self.ours, self.unit) if self.ours else "-"
        if self.row.peer:
            peer = "%s %s (%s)" % (self.peer, self.unit, self.row.peer) if self.peer else "- (%s)" % self.row.peer
        else:
            peer = "-"
        return ["%s: %s" % (self.case.label, self.row.metric), ours, peer, self.ratio or "-", self.target, self.met]


HEADER = ("case", "ours", "peer", "ratio", "target", "met")


def text_table(lines):
    rows = [list(HEADER)] + [line.cells() for line in lines]
    widths = [max(len(r[k]) for r in rows) for k in range(len(HEADER))]
    out = []
    for r in rows:
        out.append("  ".join(cell.ljust(width) for cell, width in zip(r, widths)).rstrip())
    return "\n".join(out) + "\n"


def markdown(lines, environment, notes):
    out = ["# Python package against the frameworks' calls (bench/python_bench.py)", ""]
    out += ["- %s" % item for item in environment]
    out += ["", "| " + " | ".join(HEADER) + " |", "|---|---:|---:|---:|---|---|"]
    for line in lines:
        cells = line.cells()
        cells[-1] = "**%s**" % cells[-1] if cells[-1] in ("no", "FAILED") else cells[-1]
        out.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    statuses = {}  # case key -> its status, once a case, where it is not "ok"
    for line in lines:
        if line.check != "ok":
            statuses.setdefault(line.case.key, line.check)
    if statuses:
        out += ["", "Cases failed or not run:", ""] + ["- %s: %s" % item for item in statuses.items()]
    if notes:
        out += [""] + ["- %s" % note for note in notes]
    return "\n".join(out) + "\n"


def write_outputs(out_dir, lines, environment, notes):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "python-bench.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for line in lines:
            writer.writerow(line.fields())
    with open(os.path.join(out_dir, "python-bench.md"), "w") as f:
        f.write(markdown(lines, environment, notes))


def run_cases(cases, runner, require):
    """Each case through runner.run(case) -> {row index: Measured}; the table's lines and whether anything
    failed. A failure of one case never stops the others."""
    lines, failed = [], False
    for case in cases:
        figures, status = {}, "ok"
        try:
            figures = runner.run(case)
        except CheckFailed as error:
            status, failed = "FAILED: %s" % error, True
        except Skipped as error:
            status = "not run: %s" % error
            failed = failed or require
        except Exception as error:  # a case that breaks fails alone; the traceback goes to stderr
            traceback.print_exc()
            status, failed = "FAILED: %s: %s" % (type(error).__name__, torch_kernel.first_line(error)), True
        print("# %s: %s" % (case.key, status), flush=True)
        for index, row in enumerate(case.rows):
            lines.append(Line(case, row, figures.get(index), status))
    return lines, failed


# ---- arguments ----

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", default="python-bench-out", help="where the CSV and markdown go")
    parser.add_argument("--quick", action="store_true", help="fewer batches and imports: the plumbing only")
    parser.add_argument("--cases", help="comma-separated subset of: " + ", ".join(CASE_KEYS))
    parser.add_argument("--lib", help="libelementwise.so for the C call's GPU time (default: the package's)")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and write empty files; no GPU")
    parser.add_argument("--require", action="store_true",
                        help="a case that cannot run fails (default from EW_REQUIRE_GPU / ELEMENTWISE_REQUIRE_GPU)")
    args = parser.parse_args(argv)
    if args.cases:
        wanted = [key.strip() for key in args.cases.split(",") if key.strip()]
        unknown = [key for key in wanted if key not in CASE_KEYS]
        if unknown or not wanted:
            parser.error("--cases: unknown %s (cases: %s)" % (", ".join(unknown) or "(none)", ", ".join(CASE_KEYS)))
        args.selected = [case for case in CASES if case.key in wanted]
    else:
        args.selected = list(CASES)
    args.require = args.require or "1" in (os.environ.get("EW_REQUIRE_GPU"), os.environ.get("ELEMENTWISE_REQUIRE_GPU"))
    return args


class Unavailable:
    """The runner of a run that measures nothing (--dry-run, no torch, no GPU): every case not run."""

    def __init__(self, reason):
        self.reason = reason

    def run(self, case):
        raise Skipped(self.reason)


def main(argv=None, runner=None):
    """runner: the measuring object (tests give a fake); None builds the GPU one, or the dry run's."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    settings = Settings(args.quick)
    start = time.perf_counter()
    environment = ["settings: %s%s" % ("--quick: " if args.quick else "", settings.describe())]
    notes = []
    require = args.require and not args.dry_run
    if runner is None and args.dry_run:
        runner = Unavailable("--dry-run")
        environment.append("dry run: nothing measured")
        for case in args.selected:
            for row in case.rows:
                print("plan: %-16s %-10s %s against %s, target %s" % (
                    case.key, row.metric, row.ours, row.peer or "-", target_text(row)))
    elif runner is None:
        try:
            runner = GpuRunner(args, settings)
            environment += runner.environment()
        except Skipped as error:
            print("python_bench: %s: nothing measured%s" % (error, " (required: failing)" if require else ""))
            runner = Unavailable(str(error))
            environment.append("nothing measured: %s" % error)
    lines, failed = run_cases(args.selected, runner, require=require)
    notes += getattr(runner, "notes", [])
    notes.append("Times per call; ratio = ours / peer (lower is faster; of GB/s, higher is). Run took %.1f s."
                 % (time.perf_counter() - start))
    print(text_table(lines), end="")
    for note in notes:
        print("# " + note)
    write_outputs(args.out_dir, lines, environment, notes)
    print("python_bench: %s" % os.path.join(args.out_dir, "python-bench.md"))
    return 1 if failed else 0


# ---- the measurements (torch, the package, CuPy: imported only here) ----

ADAMW_ULPS = 2
ADAMW_DOUBLE_SLACK = 2.0 ** -49  # ours computes in double: a few of its roundings, relative to the terms
ADAMW_FLOAT_SLACK = 2.0 ** -18  # torch computes in float; its weight decay alone (1e-5 relative) would exceed it


def adamw_params(hyper, float_hyper=False):
    """The kernel's seven parameters from the hyperparameters; float_hyper: from them rounded to float32, as
    torch's fused step takes them (1 - beta2 of a float beta2 is 1.3e-5 off 1 - 0.999)."""
    rounded = {k: (struct.unpack("f", struct.pack("f", v))[0] if float_hyper else v) for k, v in hyper.items()}
    return (rounded["lr"], rounded["beta1"], rounded["beta2"], rounded["eps"], rounded["weight_decay"],
            1.0 - rounded["beta1"] ** ADAMW_STEP, math.sqrt(1.0 - rounded["beta2"] ** ADAMW_STEP))


def ulps_apart(torch, got, want):
    """|got - want| in float32 units in the last place, got float32 and want float64 rounded to float32: the
    bits as int32 mapped onto one monotonic integer line (-0 and +0 alike)."""
    def line(t):
        raw = t.contiguous().view(torch.int32).long()
        return torch.where(raw < 0, -(raw & 0x7FFFFFFF), raw)
    return (line(got) - line(want.float())).abs_()


def median_completion_us(members, calls, batches):
    """Microseconds from each call to its stream's synchronize returning, one call at a time, the members
    taking torch_strided.turns; every batch's result checked. The median call."""
    times = [[] for _ in members]
    for batch, i in torch_strided.turns(len(members), batches):
        m = members[i]
        m.reset()
        m.sync()
        call, sync = m.call, m.sync
        for _ in range(calls):
            t0 = time.perf_counter()
            call()
            sync()
            elapsed = time.perf_counter() - t0
            if batch >= 0:
                times[i].append(elapsed * 1e6)
        m.verify()
    return [statistics.median(t) for t in times]


class GpuRunner:
    def __init__(self, args, settings):
        self.args, self.settings, self.notes = args, settings, []
        try:
            import torch
        except ImportError as error:
            raise Skipped("torch not importable (%s)" % error)
        if not torch.cuda.is_available():
            raise Skipped("no CUDA device visible to torch")
        try:
            import elementwise as ew
        except ImportError as error:
            raise Skipped("the elementwise package not importable (%s)" % error)
        self.torch, self.ew = torch, ew
        self.device = torch.device("cuda", args.device)
        torch.cuda.set_device(self.device)
        self.stream = torch.cuda.current_stream()
        self.seed = 0x5EED  # the next draw's: every input tensor differs
        self.timer = None  # the GPU-time machinery, made by the first case that needs it
        self.library = None  # the C call's, likewise

    def environment(self):
        torch, ew = self.torch, self.ew
        props = torch.cuda.get_device_properties(self.device)
        items = ["gpu: %s, %d SMs" % (props.name, props.multi_processor_count),
                 "python: %s" % sys.version.split()[0],
                 "torch: %s (CUDA %s)" % (torch.__version__, torch.version.cuda),
                 "elementwise: %s from %s" % (ew.__version__, os.path.dirname(ew.__file__)),
                 "libelementwise: %s at %s" % (".".join(map(str, ew.library_version())), ew.library_path)]
        try:
            import cupy
            items.append("cupy: %s" % cupy.__version__)
        except ImportError:
            items.append("cupy: not importable")
        items.append("stream: torch's current stream of device %d (the calls' and the peers' alike)"
                     % self.args.device)
        return items

    def run(self, case):
        return getattr(self, "case_" + case.key.replace("-", "_"))(case)

    # -- helpers --

    def random(self, shape, dtype):
        """torch_kernel.random_f32's inputs (never zero, as the C benches'), of this shape and dtype."""
        self.seed += 1
        flat = torch_kernel.random_f32(self.torch, math.prod(shape), 1, self.seed, self.device)[0]
        return flat.view(shape).to(dtype)

    def name(self, tensor):
        return self.ew.dtype_name(tensor.dtype)

    def expect(self, what, got, want):
        if not isinstance(got, self.torch.Tensor):
            raise CheckFailed("%s returned %s, not a torch.Tensor" % (what, type(got).__name__))
        if got.device != want.device:
            raise CheckFailed("%s: result on %s, expected %s" % (what, got.device, want.device))
        same = tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
        bad = torch_kernel.differing(self.torch, got, want) if same else want.numel()
        if bad:
            raise CheckFailed("%s: %d of %d elements differ from torch's (%s %s, expected %s %s)" % (
                what, bad, want.numel(), got.dtype, tuple(got.shape), want.dtype, tuple(want.shape)))

    def poison(self, tensor):
        tensor.view(self.torch.uint8).fill_(0xFF)  # all bits set: NaN in every float dtype

    def ours(self, what, fn):
        """fn() of the package, its exceptions a failed check of the case. A DeprecationWarning is one too:
        the calls here have the new shape, which must never be taken for the out-first one."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)
                return fn()
        except CheckFailed:
            raise
        except Exception as error:  # the package raising on a valid call is the case failing
            raise CheckFailed("%s raised %s: %s" % (what, type(error).__name__, error))

    def checked(self, what, call, sync, reset, verify):
        """Our call as a timed Member, after it was checked once as every batch of it will be: reset()
        (poisons the output), the call, sync(), verify()."""
        reset()
        self.ours(what, call)
        sync()
        verify()
        return Member(call, sync, reset, verify)

    def into(self, what, call, out, want):
        """checked() for a call into the given torch output out, which must be want bit for bit."""
        return self.checked(what, call, self.stream.synchronize, lambda: self.poison(out),
                            lambda: self.expect(what, out, want))

    def out_case(self, what, call, out, peer, want, host_calls=None):
        """Our call into a given output, checked, then timed on the host and to completion against peer()
        (its own output): Measured host and completion."""
        ours = self.into(what, call, out, want)
        return self.host_and_completion(ours, Member(peer, self.stream.synchronize), host_calls)

    def host_and_completion(self, ours, peer, host_calls=None):
        s = self.settings
        host = median_host_us([ours, peer], host_calls or s.host_calls, s.host_batches)
        completion = median_completion_us([ours, peer], s.completion_calls, s.completion_batches)
        return Measured(*host), Measured(*completion)

    # -- the cases --

    def pair_case(self, what, make_call):
        """make_call(a, b, o) -> our call into o on two 1,024 f32 inputs, against torch.add(a, b, out=)."""
        torch = self.torch
        a, b = self.random((1024,), torch.float32), self.random((1024,), torch.float32)
        o, po = torch.empty_like(a), torch.empty_like(a)
        host, completion = self.out_case("%s %s" % (what, self.name(a)), make_call(a, b, o), o,
                                         lambda: torch.add(a, b, out=po), torch.add(a, b))
        return {0: host, 1: completion}

    def case_add_out(self, case):
        ew = self.ew
        return self.pair_case("ew.add(a, b, out=o)", lambda a, b, o: lambda: ew.add(a, b, out=o))

    def case_add_alloc(self, case):
        torch, ew = self.torch, self.ew
        a, b = self.random((1024,), torch.float32), self.random((1024,), torch.float32)
        want = torch.add(a, b)
        what = "ew.add(a, b) %s" % self.name(a)
        last = [None]

        def call():
            last[0] = ew.add(a, b)

        def reset():
            # Poisoned blocks of the result's size, freed: the caching allocator hands them to the next
            # allocations, so a call that wrote nothing would return poison, not an old right answer. Two:
            # the calls alternate between two (a result lives until the next one is made).
            last[0] = None
            for block in (torch.empty_like(a), torch.empty_like(a)):
                self.poison(block)

        def verify():
            self.expect(what, last[0], want)
        ours = self.checked(what, call, self.stream.synchronize, reset, verify)
        host, completion = self.host_and_completion(ours, Member(lambda: torch.add(a, b), self.stream.synchronize))
        return {0: host, 1: completion}

    def strided_case(self, what, make_b):
        """[4096,768] f16 x plus make_b(): host and completion against torch on one set of tensors, then the
        GPU time of ours, the C call and torch on pools of fresh tensors."""
        torch, ew = self.torch, self.ew
        shape = (4096, 768)
        x, b = self.random(shape, torch.float16), make_b(self.random)
        o, po = (torch.empty(shape, dtype=torch.float16, device=self.device) for _ in range(2))
        what = "%s %s" % (what, self.name(x))
        host, completion = self.out_case(what, lambda: ew.add(x, b, out=o), o, lambda: torch.add(x, b, out=po),
                                         torch.add(x, b))
        gpu_c, gpu_torch = self.gpu_times(what, shape, make_b)
        return {0: host, 1: gpu_c, 2: gpu_torch, 3: completion}

    def case_bias_f16(self, case):
        return self.strided_case("ew.add(x[4096,768], bias[768], out=o)",
                                 lambda random: random((768,), self.torch.float16))

    def case_transposed_f16(self, case):
        return self.strided_case("ew.add(x[4096,768], y[768,4096].T, out=o)",
                                 lambda random: random((768, 4096), self.torch.float16).t())

    def c_library(self, what):
        """bench/peers/torch_peer.py's ctypes Library on --lib, else on the package's own library, made once;
        None, with a note on what, where it cannot be loaded."""
        if self.library is None:
            try:
                self.library = torch_peer.Library(self.args.lib or self.ew.library_path, self.args.device)
            except OSError as error:  # --lib names no loadable library
                self.notes.append("%s: the C call not measured: %s" % (what, error))
        return self.library

    def gpu_times(self, what, shape, make_b):
        """GPU microseconds per call of ours, the C call and torch (bench/peers/torch_strided.py's isolated
        column): Measured(ours, C call), Measured(ours, torch). The C call's output is checked first."""
        torch, ew, s = self.torch, self.ew, self.settings
        library = self.c_library(what)
        if self.timer is None:
            self.timer = torch_kernel.Bench(torch, self.device, s.gpu_batches, s.gpu_batch_ms)
            if not self.timer.cycles_per_us:
                self.notes.append("no torch.cuda._sleep: GPU times taken without the hold include the host's")
        count = max(2, math.ceil(s.pool_bytes / (2 * shape[0] * shape[1])))
        xs = [self.random(shape, torch.float16) for _ in range(count)]
        bs = [make_b(self.random) for _ in range(count)]
        outs = [torch.empty(shape, dtype=torch.float16, device=self.device) for _ in range(count)]
        stream = self.stream.cuda_stream

        def ours(x, b, o):
            ew.add(x, b, out=o)
        calls = {"ours": ours}  # timed in this order
        if library is not None:
            expanded = bs[0].expand(shape)
            strides = [(ctypes.c_int64 * 2)(*t.stride()) for t in (outs[0], xs[0], expanded)]  # elements
            dims = (ctypes.c_int64 * 2)(*shape)
            op, dtype = int(ew.Op.ADD), int(ew.DType.F16)

            def c_call(x, b, o):
                status = library.lib.ew_binary_strided(library.handle, op, dtype, 2, dims, o.data_ptr(), strides[0],
                                                       x.data_ptr(), strides[1], b.data_ptr(), strides[2], stream)
                if status != 0:
                    raise CheckFailed("C ew_binary_strided: status %d: %s" % (status, library.error()))
            # The C call checked as ours was: a poisoned output, torch's result bit for bit.
            check_out = torch.empty(shape, dtype=torch.float16, device=self.device)
            self.into("C ew_binary_strided for %s" % what, lambda: c_call(xs[0], bs[0], check_out), check_out,
                             torch.add(xs[0], bs[0]))
            calls["c"] = c_call
        calls["torch"] = lambda x, b, o: torch.add(x, b, out=o)
        members = [torch_strided.Member(fn, torch_kernel.Rotation(xs, bs, outs), "isolated") for fn in calls.values()]
        times = dict(zip(calls, self.timer.time_group(members)))
        # Ours once more on a few of the pools' tensors, into poisoned outputs.
        for k in range(min(count, 4)):
            self.poison(outs[k])
            ours(xs[k], bs[k], outs[k])
        self.stream.synchronize()
        for k in range(min(count, 4)):
            self.expect("%s on the pools' tensors %d" % (what, k), outs[k], torch.add(xs[k], bs[k]))
        if self.timer.host_behind:
            self.notes.append("%s: %d isolated batches had the host still queueing when the GPU reached them"
                              % (what, self.timer.host_behind))
            self.timer.host_behind = 0
        return Measured(times["ours"], times.get("c")), Measured(times["ours"], times["torch"])

    def case_kernel(self, case):
        ew = self.ew
        kernel = self.ours("Kernel(ew::add)", lambda: ew.Kernel("return ew::add(in0, in1);", "f32", ("f32", "f32")))
        return self.pair_case("Kernel(return ew::add(in0, in1);)(a, b, out=o)",
                              lambda a, b, o: lambda: kernel(a, b, out=o))

    def case_batched(self, case):
        torch, ew = self.torch, self.ew
        count, n = 1000, 4096
        flat_a, flat_b = self.random((count * n,), torch.float32), self.random((count * n,), torch.float32)
        flat_out = torch.empty_like(flat_a)
        as_, bs, outs = (list(t.view(count, n).unbind(0)) for t in (flat_a, flat_b, flat_out))
        want = flat_a + flat_b
        peer_a = flat_a.clone()  # torch's in-place add grows its own copy; ours reads the pristine inputs
        peer_as = list(peer_a.view(count, n).unbind(0))
        torch._foreach_add_(peer_as, bs)
        self.stream.synchronize()
        self.expect("torch._foreach_add_ (the peer)", peer_a, want)
        what = "ew.add_batched(as_, bs, outs=outs), %d x %d %s" % (count, n, self.name(flat_a))
        ours = self.into(what, lambda: ew.add_batched(as_, bs, outs=outs), flat_out, want)
        members = [ours, Member(lambda: torch._foreach_add_(peer_as, bs), self.stream.synchronize)]
        library = self.c_library(what)
        if library is not None:  # the C call on the same lists, its pointer arrays prepared
            pointers = [(ctypes.c_void_p * count)(*(t.data_ptr() for t in ts)) for ts in (outs, as_, bs)]
            sizes = (ctypes.c_int64 * count)(*([n] * count))
            op, dtype, stream = int(ew.Op.ADD), int(ew.DType.F32), self.stream.cuda_stream

            def c_call():
                status = library.lib.ew_binary_batched(library.handle, op, dtype, count, sizes, *pointers, stream)
                if status != 0:
                    raise CheckFailed("C ew_binary_batched: status %d: %s" % (status, library.error()))
            members.append(self.into("C ew_binary_batched for %s" % what, c_call, flat_out, want))
        s = self.settings
        host = median_host_us(members[:2], s.batched_host_calls, s.host_batches)
        completion = median_completion_us(members, s.completion_calls, s.completion_batches)
        figures = {0: Measured(*completion[:2]), 1: Measured(*host)}
        if library is not None:
            figures[2] = Measured(completion[0], completion[2])
        return figures

    # -- the AdamW step: a user kernel over a tensor list against torch's fused optimizer --

    def adamw_check(self, what, outputs, start, params, slack):
        """outputs, the lists (params, exp_avgs, exp_avg_sqs) after one step from start (the flat float32 p, g,
        m, v), against that step in float64 (torch): an element is wrong when it is more than ADAMW_ULPS ulp
        from the float64 result rounded to float32 and more than slack times the magnitude of the terms it is
        computed from (where terms cancel, a double evaluation's own roundings may exceed 2 ulp of the result:
        slack 2^-49 allows those; torch's float arithmetic needs more)."""
        torch = self.torch
        lr, beta1, beta2, eps, weight_decay, correction1, correction2_sqrt = params
        p, g, m, v = (t.double() for t in start)
        m_terms = (beta1 * m).abs_() + ((1.0 - beta1) * g).abs_()
        m = beta1 * m + (1.0 - beta1) * g
        v = beta2 * v + (1.0 - beta2) * g * g
        del g
        decayed = p * (1.0 - lr * weight_decay)
        del p
        update = lr / correction1 * m / (v.sqrt() / correction2_sqrt + eps)
        p_terms = decayed.abs() + update.abs()
        p = decayed - update
        del decayed, update
        for name, got, want, terms in (("param", outputs[0], p, p_terms), ("exp_avg", outputs[1], m, m_terms),
                                       ("exp_avg_sq", outputs[2], v, v)):
            flat = torch.cat([t.reshape(-1) for t in got])
            wrong = ulps_apart(torch, flat, want) > ADAMW_ULPS
            wrong &= (flat.double() - want).abs_() > slack * terms
            bad = int(wrong.sum())
            if bad:
                worst = float(((flat.double() - want).abs_() / terms.clamp(min=1e-300)).max())
                raise CheckFailed("%s: %s: %d of %d elements further than %d ulp from a float64 AdamW step "
                                  "(worst: %.3g of its terms, slack %.3g)"
                                  % (what, name, bad, flat.numel(), ADAMW_ULPS, worst, slack))

    def case_adamw(self, case):
        torch, ew, s = self.torch, self.ew, self.settings
        if not hasattr(torch, "_fused_adamw_"):
            raise Skipped("this torch has no torch._fused_adamw_")
        if not hasattr(ew.Kernel, "batched"):
            raise Skipped("this package has no Kernel.batched")
        hyper = ADAMW_HYPER
        params = adamw_params(hyper)
        sizes = torch_foreach.loguniform_sizes(ADAMW_SEED, ADAMW_COUNT)
        total = sum(sizes)
        what = "AdamW Kernel.batched over %d f32 tensors (%d elements)" % (len(sizes), total)
        step = self.ours("Kernel(AdamW)", lambda: ew.Kernel(ADAMW_BODY, ("f32",) * 3, ("f32",) * 4, n_params=7))
        # The start: p, g, m random (never zero), v = |random|; every list's tensors allocated one by one, as
        # a model's parameters and their state are (ours and torch's of the same values).
        start = [self.random((total,), torch.float32) for _ in range(4)]
        start[3].abs_()
        pristine = [list(flat.split(sizes)) for flat in start]
        ps, gs, ms, vs = ([t.clone() for t in ts] for ts in pristine)
        tps, tgs, tms, tvs = ([t.clone() for t in ts] for ts in pristine)
        steps = [torch.tensor(float(ADAMW_STEP), dtype=torch.float32, device=self.device) for _ in sizes]
        state, saved = ps + ms + vs, pristine[0] + pristine[2] + pristine[3]

        def ours():
            step.batched(ps, gs, ms, vs, out=(ps, ms, vs), params=params)

        def peer():
            torch._fused_adamw_(tps, tgs, tms, tvs, [], steps, amsgrad=False, maximize=False, **hyper)

        def restore():
            copy = getattr(torch, "_foreach_copy_", None)
            if copy is not None:
                copy(state, saved)
            else:
                for t, t0 in zip(state, saved):
                    t.copy_(t0)

        def snapshot():
            return [torch.cat([t.reshape(-1) for t in ts]) for ts in (ps, ms, vs)]

        def same_as(wanted, when):
            for name, got, want in zip(("params", "exp_avgs", "exp_avg_sqs"), snapshot(), wanted):
                bad = torch_kernel.differing(torch, got, want)
                if bad:
                    raise CheckFailed("%s: %s %s: %d of %d elements differ from the checked step's"
                                      % (what, name, when, bad, want.numel()))

        # Correctness first: one step of each from the start against float64.
        self.ours(what, ours)
        self.stream.synchronize()
        self.adamw_check(what, (ps, ms, vs), start, params, ADAMW_DOUBLE_SLACK)
        after_one = snapshot()
        peer()
        self.stream.synchronize()
        self.adamw_check("torch._fused_adamw_ (the peer)", (tps, tms, tvs), start, adamw_params(hyper, True),
                         ADAMW_FLOAT_SLACK)
        # Host time: every batch of ours from the start, ending where the same number of checked steps ends.
        calls = s.adamw_host_calls
        restore()
        for _ in range(calls):
            ours()
        self.stream.synchronize()
        after_calls = snapshot()
        ours_host = Member(ours, self.stream.synchronize, restore,
                           lambda: same_as(after_calls, "after %d steps" % calls))
        host = median_host_us([ours_host, Member(peer, self.stream.synchronize)], calls, s.host_batches)
        after_calls = None  # its memory back before the GPU timing
        # GPU time, isolated, and ew.add on a flat 2^26 f32 add beside them (two sets: none is in L2 at its call).
        a, b = ([self.random((ADD_ELEMENTS,), torch.float32) for _ in range(2)] for _ in range(2))
        o = [torch.empty_like(a[0]) for _ in range(2)]
        self.into("ew.add(a, b, out=o), 2^26 f32", lambda: ew.add(a[0], b[0], out=o[0]), o[0], torch.add(a[0], b[0]))
        if self.timer is None:
            self.timer = torch_kernel.Bench(torch, self.device, s.gpu_batches, s.gpu_batch_ms)
            if not self.timer.cycles_per_us:
                self.notes.append("no torch.cuda._sleep: GPU times taken without the hold include the host's")
        same = lambda count: [()] * count  # noqa: E731  (the lists are the call's own)
        members = [torch_strided.Member(ours, same, "isolated"), torch_strided.Member(peer, same, "isolated"),
                   torch_strided.Member(lambda x, y, out: ew.add(x, y, out=out), torch_kernel.Rotation(a, b, o),
                                        "isolated")]
        ours_us, peer_us, add_us = self.timer.time_group(members)
        if self.timer.host_behind:
            self.notes.append("%s: %d isolated batches had the host still queueing when the GPU reached them"
                              % (what, self.timer.host_behind))
            self.timer.host_behind = 0
        # Ours once more from the start, after all that: the checked step's bits.
        restore()
        ours()
        self.stream.synchronize()
        same_as(after_one, "after the timing")
        self.expect("ew.add(a, b, out=o), 2^26 f32, after the timing", o[0], torch.add(a[0], b[0]))
        ours_gbps = torch_peer.gbps_of(ADAMW_BYTES * total, ours_us)
        add_gbps = torch_peer.gbps_of(12 * ADD_ELEMENTS, add_us)
        self.notes.append("%s: %.1f us (%.0f GB/s), torch._fused_adamw_ %.1f us, ew.add 2^26 f32 %.1f us (%.0f GB/s)"
                          % (what, ours_us, ours_gbps or 0, peer_us, add_us, add_gbps or 0))
        return {0: Measured(ours_us, peer_us), 1: Measured(ours_gbps, add_gbps), 2: Measured(*host)}

    def case_cupy(self, case):
        ew = self.ew
        try:
            import cupy
        except ImportError as error:
            raise Skipped("CuPy not importable (%s)" % error)
        # The inputs drawn as every case's, copied through the host into CuPy's own memory.
        a, b = (self.random((1024,), self.torch.float32).cpu().numpy() for _ in range(2))
        with cupy.cuda.Device(self.args.device):
            a, b = cupy.asarray(a), cupy.asarray(b)
            o, po = cupy.empty_like(a), cupy.empty_like(a)
            want = cupy.add(a, b)
            stream = cupy.cuda.get_current_stream()
            what = "ew.add(a, b, out=o) on CuPy %s" % ew.dtype_name(a.dtype)

            def reset():
                o.view(cupy.uint8).fill(0xFF)

            def verify():
                bad = int((o.view(cupy.int32) != want.view(cupy.int32)).sum().item())
                if bad:
                    raise CheckFailed("%s: %d of %d elements differ from cupy.add's" % (what, bad, want.size))
            ours = self.checked(what, lambda: ew.add(a, b, out=o), stream.synchronize, reset, verify)
            peer = Member(lambda: cupy.add(a, b, out=po), stream.synchronize)
            host, completion = self.host_and_completion(ours, peer)
        return {0: host, 1: completion}

    def case_import(self, case):
        """A fresh interpreter (this one, this environment) imports torch, then times `import elementwise`."""
        code = ("import time, torch\n"
                "t0 = time.perf_counter()\n"
                "import elementwise\n"
                "print('%.3f' % ((time.perf_counter() - t0) * 1e3))\n")
        times = []
        for k in range(self.settings.imports + 1):
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                raise CheckFailed("import elementwise after torch failed: %s" % done.stderr.strip()[-500:])
            if k:  # the first warms the file cache
                times.append(float(done.stdout.split()[-1]))
        self.notes.append("import elementwise after torch: %s ms over %d processes"
                          % (", ".join("%.1f" % t for t in times), len(times)))
        return {0: Measured(statistics.median(times))}


if __name__ == "__main__":
    sys.exit(main())
