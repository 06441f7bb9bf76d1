#!/usr/bin/env python3
"""PyTorch peer of ew-bench: the same cases, buffers scheme and timing method, with PyTorch ops.

Cases come from `ew-bench --list` (one "op out_dtype in_dtype n offsets" per line), so the peers run
exactly the library's cases. Method (bench/NOTES.md): preallocated pools sliced so every call reads
fresh slices (a cursor per pool walks the whole pool before it wraps; L2 never serves a repeated
input), an L2 flush between cases, torch.cuda.Event timing, a warm-up, batches of many calls sized by a
short probe, the median of >= 5 batches as microseconds per call (the offsets of one op, dtypes and n
taking turns batch by batch), GB/s counting bytes read + written,
and cudaMemcpy D2D (a same-dtype tensor copy_) moving the same bytes, measured the same way.

With --lib it also loads libelementwise through ctypes: a few calls are compared bit for bit with
torch in this process, and add f32 at 2^26 is timed by both here.

  torch_peer.py --cases cases.txt [--csv torch.csv] [--lib build/libelementwise.so]
"""

import argparse
import ctypes
import itertools
import statistics
import sys

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
EW_DTYPE = {
    "bool": 1,
    "i8": 2,
    "u8": 3,
    "i16": 4,
    "i32": 5,
    "i64": 6,
    "f16": 7,
    "bf16": 8,
    "f32": 9,
    "f64": 10,
    "f8e4m3": 11,
    "f8e5m2": 12,
}
EW_OP = {"add": 1, "mul": 2, "relu": 3, "cast": 4, "scale_add": 5}
ARITY = {"add": 2, "mul": 2, "relu": 1, "cast": 1, "scale_add": 2}
WARMUP_CALLS, PROBE_CALLS, MIN_CALLS, MAX_CALLS = 3, 4, 10, 5000


def round_up(x, to):
    return (x + to - 1) // to * to


def slice_stride(n, elem_size):
    return round_up(n * elem_size + 2 * elem_size, SLICE_ALIGN)


def case_bytes(c):
    return c["n"] * (DTYPE_SIZE[c["out"]] + ARITY[c["op"]] * DTYPE_SIZE[c["in"]])


def alpha_for(dtype):
    """The alpha every implementation uses for scale_add (harness.c: ewb_alpha)."""
    if dtype == "bool":
        return True
    if dtype in ("i8", "u8", "i16", "i32", "i64"):
        return 3
    return 0.75


def read_cases(path):
    cases = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            op, out, inp, n, offsets = fields
            cases.append({"op": op, "out": out, "in": inp, "n": int(n), "offsets": offsets})
    return cases


class Bench:
    def __init__(self, torch, device, cases, batches, batch_ms):
        self.torch = torch
        self.device = device
        self.batches = batches
        self.batch_ms = batch_ms
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

    def fill(self, p, dtype_name):
        """Random values that are never zero: magnitudes in [1, 100), random signs (as the C harness)."""
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

    def time_batch(self, fn, views):
        self.start.record()
        for v in views:
            fn(*v)
        self.stop.record()
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop)

    def time_calls(self, fn, make_views):
        """Warm-up, probe, then the median of the batches: microseconds per call."""
        return self.time_group([(fn, make_views)])[0]

    def time_group(self, members):
        """time_calls for each (fn, make_views) of a group (the offsets of one case), their batches
        taking turns, each first in turn, as ew-bench does: a drift of the host's launch rate falls on
        every member alike."""
        self.flush_buffer.fill_(0x3C)
        calls = []
        for fn, make_views in members:
            for v in make_views(WARMUP_CALLS):
                fn(*v)
            probe_ms = self.time_batch(fn, make_views(PROBE_CALLS))
            per_call = probe_ms / PROBE_CALLS
            wanted = MAX_CALLS if per_call <= 0 else int(-(-self.batch_ms // per_call))
            calls.append(min(MAX_CALLS, max(MIN_CALLS, wanted)))
        times = [[] for _ in members]
        for b in range(self.batches):
            for turn in range(len(members)):
                m = (turn + b) % len(members)
                fn, make_views = members[m]
                times[m].append(self.time_batch(fn, make_views(calls[m])))
        return [statistics.median(t) * 1000.0 / k for t, k in zip(times, calls)]


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
    """libelementwise through ctypes."""

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
        lib.ew_get_last_error_message.restype = ctypes.c_char_p
        lib.ew_handle_destroy.argtypes = [vp]
        self.handle = vp()
        status = lib.ew_handle_create(device, ctypes.byref(self.handle))
        if status != 0:
            raise RuntimeError("ew_handle_create: status %d: %s" % (status, self.error()))

    def error(self):
        return self.lib.ew_get_last_error_message().decode(errors="replace")

    def call(self, c, stream, o, a, b=None):
        lib, op, n = self.lib, c["op"], c["n"]
        if op in ("add", "mul"):
            status = lib.ew_binary(
                self.handle,
                EW_OP[op],
                EW_DTYPE[c["out"]],
                n,
                o.data_ptr(),
                a.data_ptr(),
                b.data_ptr(),
                stream,
            )
        elif op == "relu":
            status = lib.ew_unary(
                self.handle, EW_OP[op], EW_DTYPE[c["out"]], n, o.data_ptr(), a.data_ptr(), stream
            )
        elif op == "cast":
            status = lib.ew_cast(
                self.handle, EW_DTYPE[c["out"]], EW_DTYPE[c["in"]], n, o.data_ptr(), a.data_ptr(), stream
            )
        else:
            status = lib.ew_scale_add(
                self.handle,
                EW_DTYPE[c["out"]],
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
    # One case timed by both in this process, same method.
    c = {"op": "add", "out": "f32", "in": "f32", "n": 1 << 26, "offsets": "aligned"}
    bench.fill(1, "f32")
    bench.fill(2, "f32")
    us_ew = bench.time_calls(
        lambda o, a, b: library.call(c, stream, o, a, b), lambda k: bench.case_views(c, k)
    )
    us_torch = bench.time_calls(torch_op(torch, c), lambda k: bench.case_views(c, k))
    gb = case_bytes(c) / 1e3
    print(
        "cross-check timing add f32 n=2^26 in one process (%s): library via ctypes %.1f GB/s, "
        "torch %.1f GB/s, ratio %.3f" % (batches_note, gb / us_ew, gb / us_torch, us_torch / us_ew)
    )
    csv_rows.append(("ew_ctypes", c, us_ew, gb / us_ew, None))
    return failures


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", required=True, help="case list from `ew-bench --list` (same filters)")
    parser.add_argument("--csv", help="write impl,op,out_dtype,in_dtype,n,offsets,us,gbps,vs_memcpy")
    parser.add_argument("--lib", help="libelementwise.so: cross-check a few calls and time one via ctypes")
    parser.add_argument(
        "--batches", type=int, default=15, help="timed batches per case (>= 5), median reported"
    )
    parser.add_argument("--batch-ms", type=float, default=2.0, help="aim for batches of about this many ms")
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    if args.batches < 5:
        parser.error("--batches must be at least 5")

    try:
        import torch
    except ImportError as error:
        print("torch not importable (%s): nothing to run" % error)
        return 0
    if not torch.cuda.is_available():
        print("no CUDA GPU found (torch.cuda.is_available() is False): nothing to run")
        return 0
    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    cases = read_cases(args.cases)
    bench = Bench(torch, device, cases, args.batches, args.batch_ms)
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
            args.batches,
        )
    )
    print(
        "%-5s %-9s %-7s %-7s %-11s %-8s %11s %9s %11s %9s"
        % ("impl", "op", "out", "in", "n", "offsets", "us/call", "GB/s", "memcpy GB/s", "vs_memcpy")
    )

    rows = []  # (impl, case, us, gbps, vs_memcpy)
    memcpy_us = {}
    failures = 0
    tty = sys.stderr.isatty()
    previous = None
    index = 0
    # The offsets of one op, dtypes and n (ew-bench lists them together) are timed as a group.
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
            continue
        fn = torch_op(torch, c)
        try:
            bench.fill(1, c["in"])
            if ARITY[c["op"]] > 1:
                bench.fill(2, c["in"])
            copy_bytes = case_bytes(c) // 2
            if copy_bytes not in memcpy_us:
                memcpy_us[copy_bytes] = bench.time_calls(
                    lambda d, s: d.copy_(s), lambda k: bench.memcpy_views(copy_bytes, k)
                )
            times = bench.time_group([(fn, lambda k, m=m: bench.case_views(m, k)) for m in group])
        except (RuntimeError, TypeError) as error:
            # An op torch lacks for these dtypes: say so and go on.
            if tty:
                sys.stderr.write("\r\033[K")
            sys.stderr.write("torch: %s %s<-%s: not run: %s\n" % (*entry, str(error).splitlines()[0]))
            torch.cuda.synchronize()
            continue
        if tty:
            sys.stderr.write("\r\033[K")
        memcpy_gbps = 2 * copy_bytes / memcpy_us[copy_bytes] / 1e3
        for member, us in zip(group, times):
            gbps = case_bytes(member) / us / 1e3
            rows.append(("torch", member, us, gbps, gbps / memcpy_gbps))
            rows.append(("memcpy_torch", member, memcpy_us[copy_bytes], memcpy_gbps, 1.0))
            print(
                "%-5s %-9s %-7s %-7s %-11d %-8s %11.3f %9.1f %11.1f %9.3f"
                % (
                    "torch",
                    member["op"],
                    member["out"],
                    member["in"],
                    member["n"],
                    member["offsets"],
                    us,
                    gbps,
                    memcpy_gbps,
                    gbps / memcpy_gbps,
                ),
                flush=True,
            )

    if args.lib:
        try:
            library = Library(args.lib, args.device)
            failures += cross_check(torch, bench, library, rows, "median of %d batches" % args.batches)
        except (OSError, RuntimeError) as error:
            print("cross-check through ctypes failed: %s" % error)
            failures += 1

    if args.csv:
        with open(args.csv, "w") as f:
            f.write("impl,op,out_dtype,in_dtype,n,offsets,us,gbps,vs_memcpy\n")
            for impl, c, us, gbps, ratio in rows:
                f.write(
                    "%s,%s,%s,%s,%d,%s,%.4f,%.2f,%s\n"
                    % (
                        impl,
                        c["op"],
                        c["out"],
                        c["in"],
                        c["n"],
                        c["offsets"],
                        us,
                        gbps,
                        "" if ratio is None else "%.4f" % ratio,
                    )
                )
    print(
        "# torch: %d cases run, %d cross-check failures" % (sum(1 for r in rows if r[0] == "torch"), failures)
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
