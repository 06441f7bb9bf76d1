#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Peers of ew-bench-user-kernels's target 2: the chain relu(1.5 * a + b) -> f16 on f32 inputs, one call each.

  torch_compile  torch.compile(fn, fullgraph=True) (mode default) of fn(a, b) = torch.relu(1.5 * a + b).half(),
                 compiled by warm-up calls before anything is timed;
  torch_eager    the same fn uncompiled (four kernels), for information;
  cupy_elementwise  a CuPy ElementwiseKernel of the chain, t = fmaf(1.5f, a, b), out = (float16)max(t, 0),
                 writing into a given output.
Inputs as ew-bench-user-kernels's: n = 2^--chain-log2 (default 26, ew-bench-user-kernels's target 2), random f32
magnitudes in [1, 100) with random signs, never zero; each call takes the next of its own input tensors,
at least 2 GiB of them per operand, so L2 never serves an input again (separate tensors, not views of one
pool: torch.compile may recompile for a new storage offset).

Timing is bench/peers/torch_strided.py's, imported, not copied: an L2 flush per peer, warm-up, a probe
sizing batches to about --batch-ms, the median of --batches batches, torch.cuda.Event timing, in two
columns: back-to-back, and isolated (an event after each call, the stream first held by torch.cuda._sleep
until the batch is queued). The CuPy kernel runs on torch's current stream.

Checks (reported, never failing the run): each peer's output on fresh inputs no timed call saw (so a stale
output block cannot pass), bit for bit, against the eager result (1.5 * a and + b rounded apart) and against
the library's rounding (one fused multiply-add: 1.5 * a + b in f64, exact for these inputs, rounded once to
f32), as counts of differing elements.

  torch_kernel.py [--csv FILE] [--chain-log2 K] [--batches N] [--batch-ms T] [--timing L] [--device D]

CSV columns as ew-bench-user-kernels's: target,case,dtype,n,alignment,timing,metric,library,yardstick_impl,
yardstick,ratio,check; one row per peer and column, case t2-chain, the peer in yardstick_impl and its
microseconds per call in yardstick; library and ratio empty (bench/kernel_report.py takes the library's
figure from ew-bench-user-kernels's CSV). Without torch or a GPU it says so and exits 0; without CuPy it skips
that peer with a note. Exits 1 when a peer failed to run.
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer  # noqa: E402  (the torch and GPU set-up)
import torch_strided  # noqa: E402  (the timing method)

COLUMNS = "target,case,dtype,n,alignment,timing,metric,library,yardstick_impl,yardstick,ratio,check"
TIMINGS = torch_strided.TIMINGS
ALPHA = 1.5
MIN_POOL_BYTES = torch_strided.MIN_POOL_BYTES
CUPY_BODY = "float t = fmaf(alpha, a, b); y = (float16)(t > 0.0f ? t : 0.0f);"


class Bench(torch_strided.Bench):
    """torch_strided.Bench's timing (time_group, prepare, the isolated hold) without its pools of views, so its
    __init__ is not called."""

    def __init__(self, torch, device, batches, batch_ms):
        self.torch, self.device, self.batches, self.batch_ms = torch, device, batches, batch_ms
        self.init_timing()


def random_f32(torch, n, count, seed, device):
    """count tensors of n f32: magnitudes in [1, 100) with random signs, never zero (as ewb_fill_random)."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    out = []
    for _ in range(count):
        magnitude = 1 + 99 * torch.rand(n, generator=generator, device=device)
        sign = torch.randint(0, 2, (n,), generator=generator, device=device, dtype=torch.int8) * 2 - 1
        out.append(magnitude * sign)
        del magnitude, sign
    return out


class Rotation:
    """make_views for torch_strided.Member: the next `count` argument tuples, round the lists."""

    def __init__(self, *lists):
        self.lists, self.cursor = lists, 0

    def __call__(self, count):
        views = []
        for _ in range(count):
            views.append(tuple(x[self.cursor % len(x)] for x in self.lists))
            self.cursor += 1
        return views


class Peer:
    """fn(*args) for args from views(count); once(x, y) its f16 result on inputs no timed call saw; why it
    did not run, where it did not."""

    def __init__(self, name, fn=None, views=None, once=None, why="", context=None):
        self.name, self.fn, self.views, self.once, self.why = name, fn, views, once, why
        self.context = context  # entered around every call of fn (CuPy: torch's stream)


def differing(torch, x, y):
    """Elements whose bits differ, of x and y of one shape and dtype."""
    as_int = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    return int((x.view(as_int) != y.view(as_int)).sum().item())


def first_line(error):
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def csv_line(n, timing, impl, us, check):
    fields = ["2", "t2-chain", "f16<-f32", str(n), "aligned", timing, "us", "", impl,
              "" if us is None else "%.4f" % us, "", check.replace(",", ";")]
    return ",".join(fields) + "\n"


def make_peers(torch, device, n, a, b):
    """torch_compile (compiled here by warm-up calls), torch_eager and cupy_elementwise."""

    def chain(x, y):
        return torch.relu(ALPHA * x + y).half()

    peers = []
    try:
        compiled = torch.compile(chain, fullgraph=True)
        t0 = time.perf_counter()
        for k in range(3):  # compiles, then runs on other tensors of the same layout
            compiled(a[k % len(a)], b[k % len(b)])
        torch.cuda.synchronize()
        print("# torch_compile: compiled and warmed up in %.1f s" % (time.perf_counter() - t0))
        peers.append(Peer("torch_compile", compiled, Rotation(a, b), compiled))
    except Exception as error:  # a compiler missing or failing is a result to report, not a crash
        peers.append(Peer("torch_compile", why="torch.compile failed: " + first_line(error)))
    peers.append(Peer("torch_eager", chain, Rotation(a, b), chain))
    try:
        import cupy
    except ImportError as error:
        peers.append(Peer("cupy_elementwise", why="CuPy not importable: %s" % error))
        return peers
    try:
        kernel = cupy.ElementwiseKernel("float32 a, float32 b, float32 alpha", "float16 y", CUPY_BODY,
                                        "ew_bench_kernel_chain")
        alpha = cupy.float32(ALPHA)
        pointer = torch.cuda.current_stream().cuda_stream
        stream = cupy.cuda.ExternalStream(pointer) if pointer else cupy.cuda.Stream.null
        outputs = [torch.empty(n, dtype=torch.float16, device=device) for _ in a]
        args = [[cupy.asarray(x) for x in tensors] for tensors in (a, b, outputs)]

        def cupy_chain(x, y, out):
            kernel(x, y, alpha, out)

        def once(x, y):
            out = torch.full((n,), float("nan"), dtype=torch.float16, device=device)  # poison
            with stream:
                cupy_chain(cupy.asarray(x), cupy.asarray(y), cupy.asarray(out))
            return out

        with stream:
            cupy_chain(*[arg[0] for arg in args])  # compiles the kernel
        torch.cuda.synchronize()
        print("# cupy %s: ElementwiseKernel `%s`" % (cupy.__version__, CUPY_BODY))
        peers.append(Peer("cupy_elementwise", cupy_chain, Rotation(*args), once, context=stream))
    except Exception as error:  # CuPy present but unable to build or run the kernel
        peers.append(Peer("cupy_elementwise", why="CuPy failed: " + first_line(error)))
    return peers


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv")
    parser.add_argument("--chain-log2", type=int, default=26)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--batch-ms", type=float, default=2.0)
    parser.add_argument("--timing", default=",".join(TIMINGS))
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    if args.batches < 5:
        parser.error("--batches must be at least 5")
    if not 10 <= args.chain_log2 <= 30:
        parser.error("--chain-log2 takes 10-30")
    if any(t not in TIMINGS for t in args.timing.split(",")):
        parser.error("--timing takes back-to-back and/or isolated")
    timings = [t for t in TIMINGS if t in args.timing.split(",")]
    found = torch_peer.cuda_torch(args.device)
    if found is None:
        return 0
    torch, device = found
    n = 1 << args.chain_log2
    count = max(2, math.ceil(MIN_POOL_BYTES / (4 * n)))
    bench = Bench(torch, device, args.batches, args.batch_ms)
    a = random_f32(torch, n, count, 0x5EED + 1, device)
    b = random_f32(torch, n, count, 0x5EED + 2, device)
    props = torch.cuda.get_device_properties(device)
    print("# torch %s, CUDA %s, %s; chain relu(1.5 * a + b) -> f16, f32 inputs, n = 2^%d; %d input tensors per "
          "operand (%.2f GiB); median of %d batches; isolated hold: %s"
          % (torch.__version__, torch.version.cuda, props.name, args.chain_log2, count, count * 4 * n / (1 << 30),
             args.batches, "torch.cuda._sleep" if bench.cycles_per_us else "none (no torch.cuda._sleep)"))
    peers = make_peers(torch, device, n, a, b)

    # The checks' inputs, which no timed call saw (a stale output block cannot pass), and their references.
    x, y = random_f32(torch, n, 1, 0x5EED + 3, device)[0], random_f32(torch, n, 1, 0x5EED + 4, device)[0]
    eager_ref = torch.relu(ALPHA * x + y).half()
    fused_ref = torch.relu((ALPHA * x.double() + y.double()).float()).half()
    print("# references: eager (1.5 * a rounded, then + b rounded) and the library's (one fma) differ in %d of %d "
          "elements" % (differing(torch, eager_ref, fused_ref), n))

    print("%-18s %10s %10s %10s %10s  %s" % ("peer", "us", "GB/s", "iso us", "iso GB/s", "check"))
    lines, failures = [], 0
    for peer in peers:
        if peer.fn is None:
            print("%-18s not run: %s" % (peer.name, peer.why))
            lines += [csv_line(n, t, peer.name, None, "not run: " + peer.why) for t in timings]
            failures += peer.name == "torch_compile"  # CuPy may be absent; torch.compile must run
            continue
        try:
            members = [torch_strided.Member(peer.fn, peer.views, t) for t in timings]
            if peer.context is not None:
                with peer.context:
                    times = bench.time_group(members)
            else:
                times = bench.time_group(members)
            out = peer.once(x, y)
            check = "differs from eager in %d of %d; from one fma in %d" % (
                differing(torch, out, eager_ref), n, differing(torch, out, fused_ref))
        except Exception as error:  # report the peer as failed and go on with the others
            sys.stderr.write("%s: not run: %s\n" % (peer.name, first_line(error)))
            torch.cuda.synchronize()
            lines += [csv_line(n, t, peer.name, None, "failed: " + first_line(error)) for t in timings]
            failures += 1
            continue
        figures = dict(zip(timings, times))

        def shown(timing, gbps=False):
            us = figures.get(timing)
            return "-" if us is None else "%.1f" % (10.0 * n / us / 1e3 if gbps else us)

        print("%-18s %10s %10s %10s %10s  %s" % (peer.name, shown(TIMINGS[0]), shown(TIMINGS[0], True),
                                                 shown(TIMINGS[1]), shown(TIMINGS[1], True), check), flush=True)
        lines += [csv_line(n, t, peer.name, us, check) for t, us in zip(timings, times)]
    return torch_strided.finish(args.csv, COLUMNS, lines, timings, bench, "peers", failures)


if __name__ == "__main__":
    sys.exit(main())
