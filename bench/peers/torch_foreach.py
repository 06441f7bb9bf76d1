# SPDX-License-Identifier: Apache-2.0
"""PyTorch's tensor-list ops on the lists of bench/ew-bench-lists.c, same method, same CSV columns.

    python3 bench/peers/torch_foreach.py [--csv FILE] [--seed N] [--batches N]

loguniform: torch._foreach_add over 1,000 f32 tensors of the seeded log-uniform sizes 2^10-2^20 (GPU time,
CUDA events, median batch); cast: torch._foreach_copy_ of f16 tensors into f32 ones of the same sizes;
e2e4096: 1,000 x 4,096 f32 _foreach_add from the call to a stream synchronize (host clock), and the same
as a Python loop of torch.add. Without torch or a GPU it says so and exits 0.
"""
import argparse
import statistics
import sys
import time

WARMUP, CALLS_PER_BATCH, COUNT = 3, 10, 1000


def loguniform_sizes(seed, count):
    """xorshift64 (13, 7, 17); u = top 53 bits / 2^53; n = round(2^(10 + 10 u)), as the C bench."""
    x, mask, sizes = seed or 1, (1 << 64) - 1, []
    for _ in range(count):
        x ^= (x << 13) & mask
        x ^= x >> 7
        x ^= (x << 17) & mask
        u = (x >> 11) / 9007199254740992.0
        sizes.append(int(round(2.0 ** (10.0 + 10.0 * u))))  # round-half-even vs llround: never a tie here
    return sizes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--csv")
    parser.add_argument("--seed", type=lambda s: int(s, 0), default=1)
    parser.add_argument("--batches", type=int, default=15)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch not installed: nothing to measure")
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure")
        return 0
    stream = torch.cuda.Stream()
    rows = []

    def row(case, impl, count, elements, us, nbytes):
        gbps = nbytes / (us * 1e3) if nbytes else 0.0
        print(f"{case:<12} {impl:<18} count {count:6d}  elements {elements:11d}  {us:10.2f} us  {gbps:8.1f} GB/s")
        rows.append(f"{case},{impl},{count},{elements},{us:.3f},{gbps:.1f}")

    def gpu_us(call):
        for _ in range(WARMUP):
            call()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(args.batches):
            start.record(stream)
            for _ in range(CALLS_PER_BATCH):
                call()
            stop.record(stream)
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1e3 / CALLS_PER_BATCH)
        return statistics.median(times)

    def end_to_end_us(call):
        for _ in range(WARMUP):
            call()
        stream.synchronize()
        times = []
        for _ in range(args.batches * CALLS_PER_BATCH):
            t0 = time.perf_counter()
            call()
            stream.synchronize()
            times.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(times)

    with torch.cuda.stream(stream):
        sizes = loguniform_sizes(args.seed, COUNT)
        total = sum(sizes)
        a = [torch.full((n,), 0.5, device="cuda") for n in sizes]
        b = [torch.full((n,), 0.25, device="cuda") for n in sizes]
        row("loguniform", "torch_foreach_add", COUNT, total, gpu_us(lambda: torch._foreach_add(a, b)), 12.0 * total)
        flat_a, flat_b = torch.cat(a), torch.cat(b)
        flat_out = torch.empty_like(flat_a)
        row("loguniform", "torch_add_flat", 1, total, gpu_us(lambda: torch.add(flat_a, flat_b, out=flat_out)),
            12.0 * total)
        del a, b, flat_a, flat_b, flat_out
        src = [torch.full((n,), 0.5, device="cuda", dtype=torch.float16) for n in sizes]
        dst = [torch.empty(n, device="cuda") for n in sizes]
        row("cast", "torch_foreach_copy", COUNT, total, gpu_us(lambda: torch._foreach_copy_(dst, src)), 6.0 * total)
        del src, dst
        a = [torch.full((4096,), 0.5, device="cuda") for _ in range(COUNT)]
        b = [torch.full((4096,), 0.25, device="cuda") for _ in range(COUNT)]
        total = 4096 * COUNT
        row("e2e4096", "torch_foreach_add", COUNT, total, end_to_end_us(lambda: torch._foreach_add(a, b)),
            12.0 * total)
        row("e2e4096", "torch_add_loop", COUNT, total,
            end_to_end_us(lambda: [torch.add(x, y) for x, y in zip(a, b)]), 12.0 * total)
        row("gpu4096", "torch_foreach_add", COUNT, total, gpu_us(lambda: torch._foreach_add(a, b)), 12.0 * total)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("case,impl,count,elements,us,gbps\n" + "\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
