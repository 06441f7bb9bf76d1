#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch peer of ew-bench-catalogue: the same cases, buffers scheme and timing method, with PyTorch ops.

Cases come from `ew-bench-catalogue --list` (one "op out_dtype in_dtype n offsets" per line, after a
"# settings:" line whose --batches, --batch-ms and --timing this peer takes unless given here), so the
peers run exactly the library's cases. Method (docs/design.md; bench/lib and bench/sweep.c are the reference):
preallocated pools sliced so every call reads fresh slices (a cursor per pool walks the whole pool
before it wraps; L2 never serves a repeated input), an L2 flush between cases, torch.cuda.Event
timing, a warm-up, batches of many calls sized by a short probe, the median of >= 5 batches as
microseconds per call (the offsets of one op, dtypes and n, in each column, taking turns batch by
batch), GB/s counting bytes read + written, and cudaMemcpy D2D (a same-dtype tensor copy_) moving the
same bytes, measured the same way. Two columns, as ew-bench-catalogue's:
  back-to-back  calls queued one after the other;
  isolated      an event recorded between calls, the stream first held by torch.cuda._sleep for 1.5
                times the host's time to queue the batch, so no call waits on Python inside the timed
                window.
Cases this torch cannot run get CSV rows without figures, check "unsupported".

With --lib it also loads libelementwise through ctypes: a few calls are compared bit for bit with
torch in this process, and add f32 at 2^26 is timed by both here, in both columns (the library's
isolated column on a second handle created with EW_DEPENDENT_LAUNCH=0).

  torch_peer.py --cases cases.txt [--csv torch.csv] [--lib build/src/libelementwise.so]
"""

import argparse
import ctypes
import itertools
import math
import os
import statistics
import sys
import time

SLICE_ALIGN = 4096
GIB = 1 << 30
MIN_POOL_BYTES = 2 * GIB
OFFSET_ELEMENTS = {"aligned": (0, 0, 0), "same": (1, 1, 1), "mixed": (1, 2, 0)}
DTYPE_SIZE = {
    "bool": 1,
    "i8": 1,
    "u8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
    "f8e4m3": 1,
    "f8e5m2": 1,
}
# ew_op_t's values: the library exports the dtypes' names (Library.dtypes reads them), not the ops'.
EW_OP = {"add": 1, "mul": 2, "relu": 3, "cast": 4, "scale_add": 5}
ARITY = {"add": 2, "mul": 2, "relu": 1, "cast": 1, "scale_add": 2}
WARMUP_CALLS, PROBE_CALLS, MIN_CALLS, MAX_CALLS = 3, 4, 10, 5000
# Isolated batches: fewer calls than the ~1000 launches a stream queues before the host blocks, which
# would outlast the hold (bench/lib/timing.c has the same figures).
MAX_ISOLATED_CALLS, HOLD_FACTOR, HOLD_MARGIN_US, HOLD_MAX_US = 200, 1.5, 50, 200000
TIMINGS = ("back-to-back", "isolated")
COLUMNS = (
    "impl,op,out_dtype,in_dtype,n,offsets,us,gbps,vs_memcpy,"
    "us_isolated,gbps_isolated,vs_memcpy_isolated,check"
)


def round_up(x, to):
    return (x + to - 1) // to * to


def slice_stride(n, elem_size):
    return round_up(n * elem_size + 2 * elem_size, SLICE_ALIGN)


def case_bytes(c):
    return c["n"] * (DTYPE_SIZE[c["out"]] + ARITY[c["op"]] * DTYPE_SIZE[c["in"]])


def gbps_of(nbytes, us):
    """GB/s of nbytes moved in us microseconds; None for a time the events could not resolve."""
    return nbytes / us / 1e3 if us > 0 else None


def ratio_of(x, y):
    return x / y if x and y else None


def alpha_for(dtype):
    """The alpha every implementation uses for scale_add (bench/lib/common.c: ewb_alpha)."""
    if dtype == "bool":
        return True
    if dtype in ("i8", "u8", "i16", "i32", "i64"):
        return 3
    return 0.75


def read_cases(path):
    """The cases of `ew-bench-catalogue --list`, and the options of its "# settings:" line as a dict."""
    cases, settings = [], {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields[:2] == ["#", "settings:"]:
                settings = dict(zip(fields[2::2], fields[3::2]))
                continue
            if not fields or fields[0].startswith("#"):
                continue
            op, out, inp, n, offsets = fields
            cases.append({"op": op, "out": out, "in": inp, "n": int(n), "offsets": offsets})
    return cases, settings


class Member:
    """One thing timed in one column: fn(*views) for views from make_views(count)."""

    def __init__(self, fn, make_views, timing):
        self.fn = fn
        self.make_views = make_views
        self.timing = timing
        self.calls = 0  # per batch; 0 until the warm-up and probe have run
        self.host_us = 0.0  # isolated: the host's time to queue one call and its event, last measured
        self.host_behind = 0  # isolated batches whose queueing outlasted the hold


class Bench:
    def __init__(self, torch, device, cases, batches, batch_ms, timings):
        self.torch = torch
        self.device = device
        self.batches = batches
        self.batch_ms = batch_ms
        self.timings = timings
        self.dtypes = {
            "bool": torch.bool,
            "i8": torch.int8,
            "u8": torch.uint8,
            "i16": torch.int16,
            "i32": torch.int32,
            "i64": torch.int64,
            "f16": torch.float16,
            "bf16": torch.bfloat16,
            "f32": torch.float32,
            "f64": torch.float64,
            "f8e4m3": getattr(torch, "float8_e4m3fn", None),
            "f8e5m2": getattr(torch, "float8_e5m2", None),
        }
        largest = 0
        for c in cases:
            largest = max(largest, slice_stride(c["n"], 8), round_up(case_bytes(c) // 2, SLICE_ALIGN))
        self.pool_bytes = max(MIN_POOL_BYTES, 2 * largest)
        self.pools = [torch.empty(self.pool_bytes, dtype=torch.uint8, device=device) for _ in range(3)]
        self.cursor = [0, 0, 0]
        self.filled = [None, None, None]
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
        self.flush_buffer = torch.empty(
            round_up(max(4 * l2, 64 << 20), SLICE_ALIGN), dtype=torch.uint8, device=device
        )
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.between = torch.cuda.Event(enable_timing=False)
        self.cycles_per_us = self.calibrate_hold()
        self.isolated_batches = 0
        self.host_behind = 0

    def calibrate_hold(self):
        """GPU clock cycles per microsecond of torch.cuda._sleep, or None where torch lacks it (the
        isolated column is then timed without the hold)."""
        sleep = getattr(self.torch.cuda, "_sleep", None)
        if sleep is None:
            return None
        sleep(1000)
        cycles = 20_000_000  # about 10 ms
        self.start.record()
        sleep(cycles)
        self.stop.record()
        self.stop.synchronize()
        ms = self.start.elapsed_time(self.stop)
        return cycles / (ms * 1000.0) if ms > 0 else None

    def fill(self, p, dtype_name):
        """Random values that are never zero: magnitudes in [1, 100), random signs (as bench/lib/raw_kernel.cu)."""
        if self.filled[p] == dtype_name:
            return
        torch = self.torch
        size = DTYPE_SIZE[dtype_name]
        view = self.pools[p][: self.pool_bytes // size * size].view(self.dtypes[dtype_name])
        generator = torch.Generator(device=self.device)
        generator.manual_seed(0x5EED + p)
        chunk = 1 << 26
        for first in range(0, view.numel(), chunk):
            count = min(chunk, view.numel() - first)
            magnitude = 1 + 99 * torch.rand(
                count, generator=generator, device=self.device, dtype=torch.float64
            )
            sign = torch.randint(0, 2, (count,), generator=generator, device=self.device) * 2 - 1
            value = magnitude * sign
            if dtype_name == "bool":
                view[first : first + count] = True
            elif dtype_name in ("i8", "u8", "i16", "i32", "i64"):
                view[first : first + count] = value.trunc().to(torch.int64).to(self.dtypes[dtype_name])
            else:
                view[first : first + count] = value.to(torch.float32).to(self.dtypes[dtype_name])
        self.filled[p] = dtype_name

    def next_slice(self, p, stride):
        if self.cursor[p] + stride > self.pool_bytes:
            self.cursor[p] = 0
        start = self.cursor[p]
        self.cursor[p] += stride
        return start

    def tensor_at(self, p, start, n, dtype_name):
        size = DTYPE_SIZE[dtype_name]
        return self.pools[p][start : start + n * size].view(self.dtypes[dtype_name])

    def case_views(self, c, count):
        """count tuples (out, a[, b]) on consecutive fresh slices."""
        sizes = (DTYPE_SIZE[c["out"]], DTYPE_SIZE[c["in"]], DTYPE_SIZE[c["in"]])
        dtypes = (c["out"], c["in"], c["in"])
        offsets = OFFSET_ELEMENTS[c["offsets"]]
        pointers = 1 + ARITY[c["op"]]
        views = []
        for _ in range(count):
            views.append(
                tuple(
                    self.tensor_at(
                        p,
                        self.next_slice(p, slice_stride(c["n"], sizes[p])) + offsets[p] * sizes[p],
                        c["n"],
                        dtypes[p],
                    )
                    for p in range(pointers)
                )
            )
        return views

    def memcpy_views(self, count_bytes, count):
        stride = round_up(count_bytes, SLICE_ALIGN)
        views = []
        for _ in range(count):
            dst = self.next_slice(0, stride)
            src = self.next_slice(1, stride)
            views.append((self.pools[0][dst : dst + count_bytes], self.pools[1][src : src + count_bytes]))
        return views

    def time_batch(self, member, count):
        """Milliseconds of count calls on fresh slices, in the member's column."""
        if member.timing == "isolated":
            return self.time_batch_isolated(member, count)
        views = member.make_views(count)
        self.start.record()
        for v in views:
            member.fn(*v)
        self.stop.record()
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop)

    def time_batch_isolated(self, member, count):
        """An event after each call, all queued behind a hold of 1.5 times the host's last time to queue
        that many (the stream is idle when a batch starts), so the GPU reaches the first call only once
        the whole batch is queued. Where the queueing outlasted the hold, timed once more with a hold
        sized from that; if that fails too, it counts in host_behind and its figure stands."""
        for attempt in (0, 1):
            views = member.make_views(count)
            hold_us = min(HOLD_FACTOR * member.host_us * count + HOLD_MARGIN_US, HOLD_MAX_US)
            if self.cycles_per_us:
                self.torch.cuda._sleep(int(hold_us * self.cycles_per_us))
            self.start.record()
            t0 = time.perf_counter()
            for i, v in enumerate(views):
                member.fn(*v)
                (self.between if i + 1 < count else self.stop).record()
            queued_us = (time.perf_counter() - t0) * 1e6
            self.stop.synchronize()
            ms = self.start.elapsed_time(self.stop)
            member.host_us = queued_us / count
            if self.cycles_per_us and queued_us <= hold_us - HOLD_MARGIN_US / 2:
                return ms
            if attempt or hold_us >= HOLD_MAX_US or not self.cycles_per_us:
                member.host_behind += 1
                return ms
        return ms

    def prepare(self, member):
        """Warm-up calls (isolated: with their events, timed on the host for the first hold), then a
        probe that sizes the batches to about batch_ms each."""
        views = member.make_views(WARMUP_CALLS)
        t0 = time.perf_counter()
        for v in views:
            member.fn(*v)
            if member.timing == "isolated":
                self.between.record()
        member.host_us = (time.perf_counter() - t0) * 1e6 / WARMUP_CALLS
        probe_ms = self.time_batch(member, PROBE_CALLS)
        member.host_behind = 0  # the warm-up's first calls may have loaded code: the probe does not count
        per_call = probe_ms / PROBE_CALLS
        most = MAX_ISOLATED_CALLS if member.timing == "isolated" else MAX_CALLS
        wanted = most if per_call <= 0 else math.ceil(self.batch_ms / per_call)
        member.calls = min(most, max(MIN_CALLS, wanted))

    def time_group(self, members):
        """Microseconds per call, the median of the batches, for each Member of a group (the offsets of
        one case, in each column): the L2 flush, then their batches in turn, each first in turn, as
        ew-bench-catalogue does, so that a drift of the host's launch rate falls on every member alike; each
        member's warm-up and probe just before its first batch."""
        self.flush_buffer.fill_(0x3C)
        times = [[] for _ in members]
        for member in members:
            member.calls = 0
        for b in range(self.batches):
            for turn in range(len(members)):
                m = (turn + b) % len(members)
                if members[m].calls == 0:
                    self.prepare(members[m])
                times[m].append(self.time_batch(members[m], members[m].calls))
        for member in members:
            if member.timing == "isolated":
                self.isolated_batches += self.batches
                self.host_behind += member.host_behind
        return [statistics.median(t) * 1000.0 / member.calls for t, member in zip(times, members)]


def torch_op(torch, c):
    """The PyTorch call for a case, as fn(out, a[, b]); None where torch has no such op."""
    op = c["op"]
    if op == "add":
        return lambda o, a, b: torch.add(a, b, out=o)
    if op == "mul":
        return lambda o, a, b: torch.mul(a, b, out=o)
    if op == "relu":
        # torch.relu has no out=; at::relu is clamp_min(x, 0), which takes one.
        return lambda o, a: torch.clamp_min(a, 0, out=o)
    if op == "cast":
        return lambda o, a: o.copy_(a)
    if op == "scale_add":
        alpha = alpha_for(c["out"])
        return lambda o, a, b: torch.add(b, a, alpha=alpha, out=o)
    return None


class Library:
    """libelementwise through ctypes: a handle as the environment makes it (the back-to-back column's)
    and one created with EW_DEPENDENT_LAUNCH=0 (the isolated column's: plain stream order)."""

    def __init__(self, path, device):
        self.lib = ctypes.CDLL(path)
        lib = self.lib
        vp, i32, i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
        lib.ew_handle_create.argtypes = [i32, ctypes.POINTER(vp)]
        lib.ew_handle_create.restype = i32
        lib.ew_binary.argtypes = [vp, i32, i32, i64, vp, vp, vp, vp]
        lib.ew_binary.restype = i32
        lib.ew_unary.argtypes = [vp, i32, i32, i64, vp, vp, vp]
        lib.ew_unary.restype = i32
        lib.ew_cast.argtypes = [vp, i32, i32, i64, vp, vp, vp]
        lib.ew_cast.restype = i32
        lib.ew_scale_add.argtypes = [vp, i32, ctypes.c_double, i64, vp, vp, vp, vp]
        lib.ew_scale_add.restype = i32
        i64p = ctypes.POINTER(i64)  # shape and strides (in elements) of ew_binary_strided
        lib.ew_binary_strided.argtypes = [vp, i32, i32, i32, i64p, vp, i64p, vp, i64p, vp, i64p, vp]
        lib.ew_binary_strided.restype = i32
        vpp = ctypes.POINTER(vp)  # the pointer arrays of the list calls
        lib.ew_binary_batched.argtypes = [vp, i32, i32, i64, i64p, vpp, vpp, vpp, vp]
        lib.ew_binary_batched.restype = i32
        lib.ew_get_last_error_message.restype = ctypes.c_char_p
        lib.ew_handle_destroy.argtypes = [vp]
        lib.ew_dtype_name.argtypes = [i32]
        lib.ew_dtype_name.restype = ctypes.c_char_p
        lib.ew_dtype_size.argtypes = [i32]
        lib.ew_dtype_size.restype = ctypes.c_size_t
        # ew_dtype_t's values by the library's names of them: from 1 up, without gaps, to the first of size 0.
        self.dtypes = {}
        while lib.ew_dtype_size(len(self.dtypes) + 1):
            self.dtypes[lib.ew_dtype_name(len(self.dtypes) + 1).decode()] = len(self.dtypes) + 1
        self.handle = self.create(device)
        saved = os.environ.get("EW_DEPENDENT_LAUNCH")
        os.environ["EW_DEPENDENT_LAUNCH"] = "0"  # read by ew_handle_create only
        try:
            self.plain = self.create(device)
        finally:
            if saved is None:
                del os.environ["EW_DEPENDENT_LAUNCH"]
            else:
                os.environ["EW_DEPENDENT_LAUNCH"] = saved

    def create(self, device):
        handle = ctypes.c_void_p()
        status = self.lib.ew_handle_create(device, ctypes.byref(handle))
        if status != 0:
            raise RuntimeError("ew_handle_create: status %d: %s" % (status, self.error()))
        return handle

    def error(self):
        return self.lib.ew_get_last_error_message().decode(errors="replace")

    def call(self, c, stream, o, a, b=None, plain=False):
        lib, op, n = self.lib, c["op"], c["n"]
        handle = self.plain if plain else self.handle
        if op in ("add", "mul"):
            status = lib.ew_binary(
                handle,
                EW_OP[op],
                self.dtypes[c["out"]],
                n,
                o.data_ptr(),
                a.data_ptr(),
                b.data_ptr(),
                stream,
            )
        elif op == "relu":
            status = lib.ew_unary(
                handle, EW_OP[op], self.dtypes[c["out"]], n, o.data_ptr(), a.data_ptr(), stream
            )
        elif op == "cast":
            status = lib.ew_cast(
                handle, self.dtypes[c["out"]], self.dtypes[c["in"]], n, o.data_ptr(), a.data_ptr(), stream
            )
        else:
            status = lib.ew_scale_add(
                handle,
                self.dtypes[c["out"]],
                float(alpha_for(c["out"])),
                n,
                o.data_ptr(),
                a.data_ptr(),
                b.data_ptr(),
                stream,
            )
        if status != 0:
            raise RuntimeError("libelementwise %s: status %d: %s" % (op, status, self.error()))


def cross_check(torch, bench, library, csv_rows, batches_note):
    """Bit-for-bit comparison of library and torch on a few cases, and one timing by both here."""
    stream = torch.cuda.current_stream().cuda_stream
    n = (1 << 20) + 3  # odd: heads and tails are exercised
    checks = [
        ("add", "f32", "f32", "aligned"),
        ("add", "f32", "f32", "same"),
        ("add", "f32", "f32", "mixed"),
        ("add", "f16", "f16", "mixed"),
        ("add", "bf16", "bf16", "aligned"),
        ("relu", "f32", "f32", "mixed"),
        ("scale_add", "f32", "f32", "aligned"),
        ("cast", "f16", "f32", "same"),
        ("cast", "f32", "f16", "aligned"),
    ]
    failures = 0
    for op, out, inp, offsets in checks:
        c = {"op": op, "out": out, "in": inp, "n": n, "offsets": offsets}
        if bench.dtypes[out] is None or bench.dtypes[inp] is None:
            continue
        try:
            bench.fill(1, inp)
            bench.fill(2, inp)
            views = bench.case_views(c, 2)  # two fresh output slices: one for torch, one for the library
            ours, theirs = views[0], views[1]
            theirs = (theirs[0],) + tuple(ours[1:])  # the same inputs
            ours[0].view(torch.uint8).fill_(0xA5)
            theirs[0].view(torch.uint8).fill_(0x5A)
            library.call(c, stream, *ours)
            torch_op(torch, c)(*theirs)
            torch.cuda.synchronize()
            result = (
                "bit-identical"
                if torch.equal(ours[0].view(torch.uint8), theirs[0].view(torch.uint8))
                else "DIFFER"
            )
        except RuntimeError as error:
            result = "FAILED: %s" % str(error).splitlines()[0]
        failures += result != "bit-identical"
        print(
            "cross-check %-9s %-4s<-%-4s n=%d %-7s: library and torch %s" % (op, out, inp, n, offsets, result)
        )
    # One case timed by both in this process, same method, in each column.
    c = {"op": "add", "out": "f32", "in": "f32", "n": 1 << 26, "offsets": "aligned"}
    bench.fill(1, "f32")
    bench.fill(2, "f32")
    members = []
    for timing in bench.timings:
        plain = timing == "isolated"
        members.append(
            Member(
                lambda o, a, b, plain=plain: library.call(c, stream, o, a, b, plain=plain),
                lambda k: bench.case_views(c, k),
                timing,
            )
        )
        members.append(Member(torch_op(torch, c), lambda k: bench.case_views(c, k), timing))
    times = bench.time_group(members)
    figures = {}
    parts = []
    for i, timing in enumerate(bench.timings):
        us_ew, us_torch = times[2 * i], times[2 * i + 1]
        ew, theirs = gbps_of(case_bytes(c), us_ew), gbps_of(case_bytes(c), us_torch)
        figures[timing] = (us_ew, ew, None)
        parts.append(
            "%s: library via ctypes %s GB/s, torch %s GB/s, ratio %s"
            % (timing, fmt(ew, "%.1f"), fmt(theirs, "%.1f"), fmt(ratio_of(ew, theirs), "%.3f"))
        )
    print("cross-check timing add f32 n=2^26 in one process (%s): %s" % (batches_note, "; ".join(parts)))
    csv_rows.append(("ew_ctypes", c, figures, ""))
    return failures


def fmt(value, form):
    return "-" if value is None else form % value


def csv_line(impl, c, figures, check):
    """One CSV row: figures maps a column ("back-to-back", "isolated") to (us, gbps, vs_memcpy); a
    column not there, or a None in it, is left empty."""
    fields = [impl, c["op"], c["out"], c["in"], "%d" % c["n"], c["offsets"]]
    for timing in TIMINGS:
        us, gbps, ratio = figures.get(timing, (None, None, None))
        fields += [
            "" if us is None else "%.4f" % us,
            "" if gbps is None else "%.2f" % gbps,
            "" if ratio is None else "%.4f" % ratio,
        ]
    return ",".join(fields + [check]) + "\n"


def unsupported(error):
    """Whether an error says torch has no such op for these dtypes (rather than that a call failed)."""
    return isinstance(error, (NotImplementedError, TypeError)) or "not implemented for" in str(error)


def cuda_torch(index):
    """(torch, its device for GPU index), made current; None where torch does not import or sees no GPU
    (said on stdout: the caller has nothing to run)."""
    try:
        import torch
    except ImportError as error:
        print("torch not importable (%s): nothing to run" % error)
        return None
    if not torch.cuda.is_available():
        print("no CUDA GPU found (torch.cuda.is_available() is False): nothing to run")
        return None
    torch.cuda.set_device(index)
    return torch, torch.device("cuda", index)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", required=True, help="case list from `ew-bench-catalogue --list` (same filters)")
    parser.add_argument("--csv", help="write " + COLUMNS)
    parser.add_argument("--lib", help="libelementwise.so: cross-check a few calls and time one via ctypes")
    parser.add_argument(
        "--batches", type=int, help="timed batches per case and column (>= 5), median reported (default: "
        "the case list's settings, else 15)"
    )
    parser.add_argument(
        "--batch-ms",
        type=float,
        help="aim for batches of about this many ms (default: the case list's, else 2)",
    )
    parser.add_argument(
        "--timing", help="back-to-back,isolated: the columns to time (default: the case list's, else both)"
    )
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    cases, settings = read_cases(args.cases)
    batches = args.batches if args.batches is not None else int(settings.get("--batches", 15))
    batch_ms = args.batch_ms if args.batch_ms is not None else float(settings.get("--batch-ms", 2.0))
    timing_list = (args.timing or settings.get("--timing") or ",".join(TIMINGS)).split(",")
    if batches < 5:
        parser.error("--batches must be at least 5")
    if not timing_list or any(t not in TIMINGS for t in timing_list):
        parser.error("--timing takes back-to-back and/or isolated")
    timings = [t for t in TIMINGS if t in timing_list]

    found = cuda_torch(args.device)
    if found is None:
        return 0
    torch, device = found
    bench = Bench(torch, device, cases, batches, batch_ms, timings)
    props = torch.cuda.get_device_properties(device)
    print(
        "# torch %s, CUDA %s, %s, %d SMs; %d cases, pools 3 x %.2f GiB, median of %d batches"
        % (
            torch.__version__,
            torch.version.cuda,
            props.name,
            props.multi_processor_count,
            len(cases),
            bench.pool_bytes / GIB,
            batches,
        )
    )
    print(
        "# torch: columns: %s; isolated hold: %s"
        % (
            ", ".join(timings),
            "torch.cuda._sleep, %.0f cycles a microsecond" % bench.cycles_per_us
            if bench.cycles_per_us
            else "none (no torch.cuda._sleep): isolated batches may wait on the host",
        )
    )
    print(
        "%-5s %-9s %-7s %-7s %-11s %-8s %11s %9s %9s"
        % ("impl", "op", "out", "in", "n", "offsets", "us/call", "GB/s", "vs_memcpy")
        + (" %11s %9s %9s" % ("iso us/call", "iso GB/s", "iso vs_mc"))
    )

    rows = []  # (impl, case, {column: (us, gbps, vs_memcpy)}, check)
    memcpy_us = {}  # copy bytes -> {column: us}
    failures = 0
    tty = sys.stderr.isatty()
    previous = None
    index = 0

    def skip(group, check):
        for member in group:
            rows.append(("torch", member, {}, check))

    # The offsets of one op, dtypes and n (ew-bench-catalogue lists them together) are timed as a group.
    for key, group in itertools.groupby(cases, key=lambda c: (c["op"], c["out"], c["in"], c["n"])):
        group = list(group)
        c = group[0]
        entry = key[:3]
        if tty:
            sys.stderr.write("\r[%d/%d] %s %s<-%s n=%d\033[K" % (index + 1, len(cases), *entry, c["n"]))
        elif entry != previous:
            sys.stderr.write("[%d/%d] %s %s<-%s\n" % (index + 1, len(cases), *entry))
        previous = entry
        index += len(group)
        if bench.dtypes[c["out"]] is None or bench.dtypes[c["in"]] is None:
            skip(group, "unsupported")
            continue
        fn = torch_op(torch, c)
        try:
            bench.fill(1, c["in"])
            if ARITY[c["op"]] > 1:
                bench.fill(2, c["in"])
            copy_bytes = case_bytes(c) // 2
            if copy_bytes not in memcpy_us:
                copies = [
                    Member(lambda d, s: d.copy_(s), lambda k: bench.memcpy_views(copy_bytes, k), timing)
                    for timing in timings
                ]
                memcpy_us[copy_bytes] = dict(zip(timings, bench.time_group(copies)))
            members = [
                Member(fn, lambda k, m=m: bench.case_views(m, k), timing) for m in group for timing in timings
            ]
            times = bench.time_group(members)
        except (RuntimeError, TypeError, NotImplementedError) as error:
            # An op torch lacks for these dtypes, or a call that failed: say so and go on.
            if tty:
                sys.stderr.write("\r\033[K")
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            sys.stderr.write("torch: %s %s<-%s: not run: %s\n" % (*entry, reason))
            torch.cuda.synchronize()
            skip(group, "unsupported" if unsupported(error) else "failed")
            continue
        if tty:
            sys.stderr.write("\r\033[K")
        copy = {}
        for timing in timings:
            us = memcpy_us[copy_bytes][timing]
            gbps = gbps_of(2 * copy_bytes, us)
            copy[timing] = (us, gbps, 1.0 if gbps else None)
        for g, member in enumerate(group):
            figures = {}
            for t, timing in enumerate(timings):
                us = times[g * len(timings) + t]
                gbps = gbps_of(case_bytes(member), us)
                figures[timing] = (us, gbps, ratio_of(gbps, copy[timing][1]))
            rows.append(("torch", member, figures, ""))
            rows.append(("memcpy_torch", member, copy, ""))
            cells = []
            for timing in TIMINGS:
                us, gbps, ratio = figures.get(timing, (None, None, None))
                cells += ["%11s" % fmt(us, "%.3f"), "%9s" % fmt(gbps, "%.1f"), "%9s" % fmt(ratio, "%.3f")]
            print(
                "%-5s %-9s %-7s %-7s %-11d %-8s %s"
                % ("torch", member["op"], member["out"], member["in"], member["n"], member["offsets"],
                   " ".join(cells)),
                flush=True,
            )

    if args.lib:
        try:
            library = Library(args.lib, args.device)
            failures += cross_check(torch, bench, library, rows, "median of %d batches" % batches)
        except (OSError, RuntimeError) as error:
            print("cross-check through ctypes failed: %s" % error)
            failures += 1

    if args.csv:
        with open(args.csv, "w") as f:
            f.write(COLUMNS + "\n")
            for impl, c, figures, check in rows:
                f.write(csv_line(impl, c, figures, check))
    run = sum(1 for r in rows if r[0] == "torch" and r[2])
    print("# torch: %d cases run, %d cross-check failures" % (run, failures))
    if len(cases) > run:
        print("# torch: %d cases not run (CSV rows marked unsupported or failed)" % (len(cases) - run))
    if "isolated" in timings:
        print(
            "# torch: isolated column: %d of %d timed batches had the host still queueing when the GPU "
            "reached them (their figures include some of the host's time)"
            % (bench.host_behind, bench.isolated_batches)
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
