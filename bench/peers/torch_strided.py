#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch peer of ew-bench-strided: the same cases, on the same views, timed the same way.

Cases come from `ew-bench-strided --list` (a "# settings:" line, then one case a line as key=value
fields: target, case, op, out, in, layout, c, shape, <operand>_strides and <operand>_alloc for out, a
(the unary input too) and b, alpha, bytes). Every operand is torch.as_strided over a slice of a pool
holding <operand>_alloc elements, so torch reads exactly the elements the library does. The calls:
torch.add(a, b, out=o), torch.mul(a, b, out=o), torch.add(b, a, alpha=alpha, out=o) for scale_add
(alpha * a + b), o.copy_(x) for the cast, and relu as torch.clamp_min(x, 0, out=o) (torch.relu takes no
out=; at::relu is clamp_min(x, 0)).

Method as bench/lib and bench/peers/torch_peer.py: pools of at least 2 GiB per operand, every call
on the next 4 KiB-aligned slice, inputs random and never zero, an L2 flush per case, warm-up, a probe
sizing batches to about --batch-ms, the median of the batches, torch.cuda.Event timing, two columns:
  back-to-back  calls queued one after the other;
  isolated      an event after each call, the stream first held by torch.cuda._sleep for 1.5 times the
                host's time to queue the batch, so no call waits on Python inside the timed window.
Target 6 (host) is the host time of one call on the 4-d view against one flat add of 1,024 elements
(time.perf_counter over batches of 256 calls, the stream drained between batches, median batch); torch
has one launch path, so its figure fills both columns.

  torch_strided.py --cases cases.txt [--csv torch-strided.csv] [--batches N] [--batch-ms T] [--timing L]

CSV columns as ew-bench-strided's: target,case,impl,op,out_dtype,in_dtype,shape,layout,c,bytes,us,gbps,
us_isolated,gbps_isolated,check (impl torch; torch_flat for target 6's flat add).
Without torch or a GPU it says so and exits 0.
"""

import argparse
import functools
import math
import statistics
import sys
import time

import torch_peer  # the torch and GPU set-up
# The method's figures and the catalogue's tables, as the catalogue's peer has them.
from torch_peer import (ARITY, DTYPE_SIZE, HOLD_FACTOR, HOLD_MARGIN_US, HOLD_MAX_US, MAX_CALLS,  # noqa: F401
                        MAX_ISOLATED_CALLS, MIN_CALLS, MIN_POOL_BYTES, PROBE_CALLS, SLICE_ALIGN, TIMINGS,
                        WARMUP_CALLS, round_up)

HOST_CALLS, HOST_BATCHES = 256, 51  # bench/lib/timing.h: EWB_HOST_CALLS, EWB_HOST_BATCHES
COLUMNS = "target,case,impl,op,out_dtype,in_dtype,shape,layout,c,bytes,us,gbps,us_isolated,gbps_isolated,check"
OPERANDS = ("out", "a", "b")


def parse_case(line):
    """One `--list` line as a dict: shape and strides as tuples, allocations as ints."""
    f = dict(field.split("=", 1) for field in line.split())
    c = {
        "target": int(f["target"]),
        "case": f["case"],
        "op": f["op"],
        "out": f["out"],
        "in": f["in"],
        "layout": f["layout"],
        "c": int(f["c"]),
        "shape": tuple(int(x) for x in f["shape"].split("x")),
        "alpha": float(f.get("alpha", "0")),
        "bytes": float(f["bytes"]),
        "strides": [],
        "alloc": [],
    }
    for name in OPERANDS[: 1 + ARITY[c["op"]]]:
        c["strides"].append(tuple(int(x) for x in f[name + "_strides"].split(",")))
        c["alloc"].append(int(f[name + "_alloc"]))
    return c


def read_cases(path):
    cases, settings = [], {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields[:2] == ["#", "settings:"]:
                settings = dict(zip(fields[2::2], fields[3::2]))
            elif fields and not fields[0].startswith("#"):
                cases.append(parse_case(line))
    return cases, settings


def dtype_of(c, k):
    return c["out"] if k == 0 else c["in"]


class Member:
    """One thing timed in one column: fn(*views) for views from make_views(count)."""

    def __init__(self, fn, make_views, timing):
        self.fn, self.make_views, self.timing = fn, make_views, timing
        self.calls, self.host_us, self.host_behind = 0, 0.0, 0


class Bench:
    def __init__(self, torch, device, cases, batches, batch_ms):
        self.torch, self.device, self.batches, self.batch_ms = torch, device, batches, batch_ms
        self.dtypes = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
                       "i32": torch.int32, "i64": torch.int64, "i16": torch.int16, "i8": torch.int8,
                       "u8": torch.uint8}
        largest = max([round_up(a * DTYPE_SIZE[dtype_of(c, k)], SLICE_ALIGN)
                       for c in cases for k, a in enumerate(c["alloc"])] + [0])
        self.pool_bytes = max(MIN_POOL_BYTES, 2 * largest)
        self.pools = [torch.empty(self.pool_bytes, dtype=torch.uint8, device=device) for _ in OPERANDS]
        self.cursor = [0, 0, 0]
        self.filled = [None, None, None]
        self.init_timing()

    def init_timing(self):
        """The L2 flush buffer, the events, the hold's calibration and the isolated column's counts."""
        torch = self.torch
        l2 = getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 64 << 20)
        self.flush_buffer = torch.empty(round_up(max(4 * l2, 64 << 20), SLICE_ALIGN), dtype=torch.uint8,
                                        device=self.device)
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)
        self.between = torch.cuda.Event(enable_timing=False)
        self.cycles_per_us = self.calibrate_hold()
        self.isolated_batches = 0
        self.host_behind = 0

    def calibrate_hold(self):
        """GPU cycles per microsecond of torch.cuda._sleep; None where torch lacks it (no hold then)."""
        sleep = getattr(self.torch.cuda, "_sleep", None)
        if sleep is None:
            return None
        sleep(1000)
        cycles = 20_000_000
        self.start.record()
        sleep(cycles)
        self.stop.record()
        self.stop.synchronize()
        ms = self.start.elapsed_time(self.stop)
        return cycles / (ms * 1000.0) if ms > 0 else None

    def fill(self, p, dtype_name):
        """Magnitudes in [1, 100) with random signs, never zero (as ewb_fill_random)."""
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
            magnitude = 1 + 99 * torch.rand(count, generator=generator, device=self.device)
            sign = torch.randint(0, 2, (count,), generator=generator, device=self.device) * 2 - 1
            view[first: first + count] = (magnitude * sign).to(self.dtypes[dtype_name])
        self.filled[p] = dtype_name

    def next_slice(self, p, nbytes):
        stride = round_up(nbytes, SLICE_ALIGN)
        if self.cursor[p] + stride > self.pool_bytes:
            self.cursor[p] = 0
        start = self.cursor[p]
        self.cursor[p] += stride
        return start

    def case_views(self, c, count):
        """count tuples (out, a[, b]), each torch.as_strided over a fresh slice of its allocation's size."""
        views = []
        for _ in range(count):
            one = []
            for k, (strides, alloc) in enumerate(zip(c["strides"], c["alloc"])):
                dtype = dtype_of(c, k)
                nbytes = alloc * DTYPE_SIZE[dtype]
                start = self.next_slice(k, nbytes)
                storage = self.pools[k][start: start + nbytes].view(self.dtypes[dtype])
                one.append(self.torch.as_strided(storage, c["shape"], strides))
            views.append(tuple(one))
        return views

    def time_batch(self, member, count):
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
        that many; where the queueing outlasted the hold, once more with a hold sized from that, then
        counted in host_behind."""
        ms = 0.0
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
        views = member.make_views(WARMUP_CALLS)
        t0 = time.perf_counter()
        for v in views:
            member.fn(*v)
            if member.timing == "isolated":
                self.between.record()
        member.host_us = (time.perf_counter() - t0) * 1e6 / WARMUP_CALLS
        probe_ms = self.time_batch(member, PROBE_CALLS)
        member.host_behind = 0
        per_call = probe_ms / PROBE_CALLS
        most = MAX_ISOLATED_CALLS if member.timing == "isolated" else MAX_CALLS
        wanted = most if per_call <= 0 else math.ceil(self.batch_ms / per_call)
        member.calls = min(most, max(MIN_CALLS, wanted))

    def time_group(self, members):
        """Microseconds per call, median batch, for each member (one case in each column), batches in
        turn after one L2 flush, as ew-bench-strided does."""
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

    def host_us(self, fns_views):
        """Host microseconds per call for each (fn, views): median_host_us of HOST_CALLS calls a batch on
        the same views."""
        sync = self.torch.cuda.synchronize
        members = [HostMember(functools.partial(fn, *views), sync) for fn, views in fns_views]
        return median_host_us(members, HOST_CALLS, HOST_BATCHES)


class HostMember:
    """A call timed on the host: call() queues it, sync() drains its stream; reset() before each batch
    (poisons its output) and verify() after it, the stream drained (raises where the output is wrong)."""

    def __init__(self, call, sync, reset=None, verify=None):
        self.call, self.sync = call, sync
        self.reset = reset or (lambda: None)
        self.verify = verify or (lambda: None)


def turns(count, batches):
    """(batch, member index) of each turn: a warm-up batch of every member (batch -1), then `batches`
    batches, the members in turn, each first in turn."""
    for batch in range(-1, batches):
        for turn in range(count):
            yield batch, (turn + max(batch, 0)) % count


def median_host_us(members, calls, batches):
    """Host microseconds per call of each member (bench/lib/timing.c's host method): batches of `calls`
    back-to-back calls, the members in turn batch by batch (each first in turn), each member's stream
    drained after its batch and its result checked; one batch each first as a warm-up. The median batch."""
    times = [[] for _ in members]
    for batch, i in turns(len(members), batches):
        m = members[i]
        m.reset()
        call = m.call
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        elapsed = time.perf_counter() - t0
        m.sync()
        m.verify()
        if batch >= 0:
            times[i].append(elapsed * 1e6 / calls)
    return [statistics.median(t) for t in times]


def torch_op(torch, c):
    op = c["op"]
    if op == "add":
        return lambda o, a, b: torch.add(a, b, out=o)
    if op == "mul":
        return lambda o, a, b: torch.mul(a, b, out=o)
    if op == "relu":
        return lambda o, x: torch.clamp_min(x, 0, out=o)  # torch.relu takes no out=; at::relu is clamp_min
    if op == "cast":
        return lambda o, x: o.copy_(x)
    if op == "scale_add":
        alpha = c["alpha"]
        return lambda o, a, b: torch.add(b, a, alpha=alpha, out=o)
    raise ValueError("unknown op %s" % op)


def fmt(value, form):
    return "" if value is None else form % value


def csv_line(c, impl, figures, check="", op=None, shape=None, layout=None, nbytes=None):
    """figures: {column: (us, gbps)}; a column not there is left empty."""
    fields = [str(c["target"]), c["case"], impl, op or c["op"], c["out"], c["in"],
              shape or "x".join(str(x) for x in c["shape"]), layout or c["layout"], str(c["c"]),
              "" if nbytes is None else "%.0f" % nbytes]
    for timing in TIMINGS:
        us, gbps = figures.get(timing, (None, None))
        fields += [fmt(us, "%.4f"), fmt(gbps, "%.2f")]
    return ",".join(fields + [check]) + "\n"


def finish(path, columns, lines, timings, bench, who, failures):
    """Write the CSV (columns, then lines) where a path is given, say how many isolated batches found the
    host still queueing, and return the exit status."""
    if path:
        with open(path, "w") as f:
            f.write(columns + "\n" + "".join(lines))
    if "isolated" in timings:
        print("# %s: isolated column: %d of %d timed batches had the host still queueing when the GPU "
              "reached them" % (who, bench.host_behind, bench.isolated_batches))
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", required=True, help="case list from `ew-bench-strided --list`")
    parser.add_argument("--csv")
    parser.add_argument("--batches", type=int)
    parser.add_argument("--batch-ms", type=float)
    parser.add_argument("--timing")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    cases, settings = read_cases(args.cases)
    batches = args.batches if args.batches is not None else int(settings.get("--batches", 7))
    batch_ms = args.batch_ms if args.batch_ms is not None else float(settings.get("--batch-ms", 2.0))
    timing_list = (args.timing or settings.get("--timing") or ",".join(TIMINGS)).split(",")
    if batches < 5:
        parser.error("--batches must be at least 5")
    if any(t not in TIMINGS for t in timing_list):
        parser.error("--timing takes back-to-back and/or isolated")
    timings = [t for t in TIMINGS if t in timing_list]
    found = torch_peer.cuda_torch(args.device)
    if found is None:
        return 0
    torch, device = found
    bench = Bench(torch, device, cases, batches, batch_ms)
    props = torch.cuda.get_device_properties(device)
    print("# torch %s, CUDA %s, %s; %d cases, pools 3 x %.2f GiB, median of %d batches; isolated hold: %s"
          % (torch.__version__, torch.version.cuda, props.name, len(cases), bench.pool_bytes / (1 << 30), batches,
             "torch.cuda._sleep" if bench.cycles_per_us else "none (no torch.cuda._sleep)"))
    print("%-28s %9s %9s" % ("case", "GB/s", "iso GB/s"))
    lines, failures = [], 0
    for c in cases:
        fn = torch_op(torch, c)
        try:
            bench.fill(1, c["in"])
            if ARITY[c["op"]] > 1:
                bench.fill(2, c["in"])
            if c["target"] == 6:
                # the same 4-d view against a flat add of 1,024 elements, host time per call
                strided = bench.case_views(c, 1)[0]
                flat = tuple(torch.empty(1024, dtype=bench.dtypes[c["out"]], device=device) for _ in range(3))
                flat[1].fill_(1.5), flat[2].fill_(2.5)
                us_strided, us_flat = bench.host_us([(fn, strided), (lambda o, a, b: torch.add(a, b, out=o), flat)])
                print("%-28s host %.3f us per call, flat add n=1024 %.3f us, difference %+.3f us"
                      % (c["case"], us_strided, us_flat, us_strided - us_flat))
                both = {t: (us_strided, None) for t in TIMINGS}
                lines.append(csv_line(c, "torch", both))
                lines.append(csv_line(c, "torch_flat", {t: (us_flat, None) for t in TIMINGS}, shape="1024",
                                      layout="flat"))
                continue
            members = [Member(fn, lambda k, c=c: bench.case_views(c, k), t) for t in timings]
            times = bench.time_group(members)
        except (RuntimeError, TypeError, ValueError) as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            sys.stderr.write("torch: %s: not run: %s\n" % (c["case"], reason))
            torch.cuda.synchronize()
            lines.append(csv_line(c, "torch", {}, "failed", nbytes=c["bytes"]))
            failures += 1
            continue
        figures = {t: (us, c["bytes"] / us / 1e3 if us > 0 else None) for t, us in zip(timings, times)}
        print("%-28s %9s %9s" % (c["case"], fmt(figures.get("back-to-back", (0, None))[1], "%.1f") or "-",
                                 fmt(figures.get("isolated", (0, None))[1], "%.1f") or "-"), flush=True)
        lines.append(csv_line(c, "torch", figures, nbytes=c["bytes"]))
    return finish(args.csv, COLUMNS, lines, timings, bench, "torch", failures)


if __name__ == "__main__":
    sys.exit(main())
