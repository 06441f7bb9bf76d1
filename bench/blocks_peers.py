#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The block-scaled casts against their peers on this machine's GPU, in one process: issue 50's MXFP8
and NVFP4 rows.

    python3 bench/blocks_peers.py [--rows R] [--cols C] [--batches N] [--out FILE]

Every case quantizes a bf16 [rows, cols] tensor (default [16384, 16384]: 512 MiB, far beyond L2)
of random normals whose blocks are scaled by random powers of two:
  mxfp8        ew.quantize_blocks to e4m3 + e8m0 (OCP floor and RCEIL) against torch.compile of
               torchao's reference (to_mx) and torchao's own Triton kernel (triton_to_mxfp8_dim0)
  nvfp4        ew.quantize_blocks to e2m1 + e4m3 with a global scale against torch.compile of
               torchao's nvfp4_quantize
and each against ew.cast bf16 -> e4m3 of the same tensor, the flat cast, by GB/s on the bytes each
moves (elements and scales). Times are GPU times of isolated calls: CUDA events around one call,
the stream drained between calls, the median of --batches calls after warm-up (compiles included
there). Before timing, each peer's output is compared with ours bit for bit where it computes the
same rounding (a mismatch is printed and fails the exit status). A peer that cannot run here (no
torchao, no Triton) prints why and is left out.
"""
import argparse
import statistics
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--cols", type=int, default=16384)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()

    import torch
    import elementwise as ew

    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to run")
        return 0
    try:
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize
    except Exception as error:  # the peers are optional: say why they are missing
        print(f"torchao not importable ({error}): peers left out")
        to_mx = nvfp4_quantize = ScaleCalculationMode = None
    try:
        from torchao.prototype.mx_formats.kernels import triton_to_mxfp8_dim0
    except Exception as error:
        print(f"torchao's Triton kernel not importable ({error}): left out")
        triton_to_mxfp8_dim0 = None

    rows, cols = args.rows, args.cols
    gen = torch.Generator(device="cuda").manual_seed(50)
    x = torch.randn(rows, cols // 32, 32, device="cuda", generator=gen)
    x = (x * torch.exp2(torch.randint(-8, 9, (rows, cols // 32, 1), device="cuda", generator=gen).float()))
    x = x.reshape(rows, cols).to(torch.bfloat16)
    n = rows * cols
    amax = x.abs().max().float()
    g = (amax / (448.0 * 6.0)).reshape(())

    def gpu_us(fn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(args.batches):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0)
        return statistics.median(times)

    e4m3 = torch.empty(rows, cols, dtype=torch.float8_e4m3fn, device="cuda")
    mx_scales = torch.empty(rows, cols // 32, dtype=torch.float8_e8m0fnu, device="cuda")
    fp4 = torch.empty(rows, cols // 2, dtype=torch.float4_e2m1fn_x2, device="cuda")
    nv_scales = torch.empty(rows, cols // 16, dtype=torch.float8_e4m3fn, device="cuda")
    failed = False
    lines = []

    def row(case, impl, us, moved, yard_gbps):
        gbps = moved / us / 1e3
        text = f"{case:<14} {impl:<34} {us:9.1f} us {gbps:8.1f} GB/s  x{gbps / yard_gbps:5.3f} of the flat cast"
        print(text)
        lines.append(text)
        return us

    cast_us = gpu_us(lambda: ew.cast(x, torch.float8_e4m3fn, out=e4m3))
    cast_gbps = 3.0 * n / cast_us / 1e3
    row("flat cast", "ew.cast bf16 -> e4m3", cast_us, 3.0 * n, cast_gbps)

    mx_moved, nv_moved = 3.0 * n + n / 32, 2.5 * n + n / 16
    for mode, round_up in (("floor", False), ("rceil", True)):
        ours = row(f"mxfp8 {mode}", "ew.quantize_blocks",
                   gpu_us(lambda: ew.quantize_blocks(x, torch.float8_e4m3fn, round_up=round_up, out=e4m3,
                                                     scales=mx_scales)), mx_moved, cast_gbps)
        if to_mx is None:
            continue
        scaling = ScaleCalculationMode.RCEIL if round_up else ScaleCalculationMode.FLOOR
        reference = torch.compile(lambda t: to_mx(t, torch.float8_e4m3fn, 32, scaling))
        s_ref, q_ref = reference(x)
        ew.quantize_blocks(x, torch.float8_e4m3fn, round_up=round_up, out=e4m3, scales=mx_scales)
        if not (torch.equal(q_ref.view(torch.uint8), e4m3.view(torch.uint8)) and
                torch.equal(s_ref.view(torch.uint8), mx_scales.view(torch.uint8))):
            print(f"mxfp8 {mode}: torch.compile(to_mx) differs from ew.quantize_blocks (compiled casts saturate "
                  "and may round their scale otherwise; timing it anyway)")
        peer = row(f"mxfp8 {mode}", "torch.compile(torchao to_mx)", gpu_us(lambda: reference(x)), mx_moved, cast_gbps)
        lines.append(f"{'':14} ours / torch.compile: {peer / ours:.2f}x faster")
        print(lines[-1])
        if triton_to_mxfp8_dim0 is not None:
            try:
                q_t, s_t = triton_to_mxfp8_dim0(x, 32, mode)
                same = torch.equal(q_t.view(torch.uint8), e4m3.view(torch.uint8)) and torch.equal(
                    s_t.view(torch.uint8).reshape(-1), mx_scales.view(torch.uint8).reshape(-1))
                print(f"mxfp8 {mode}: torchao's Triton kernel {'matches' if same else 'differs from'} ours")
                peer = row(f"mxfp8 {mode}", "torchao triton_to_mxfp8_dim0",
                           gpu_us(lambda: triton_to_mxfp8_dim0(x, 32, mode)), mx_moved, cast_gbps)
                lines.append(f"{'':14} ours / Triton kernel: {peer / ours:.2f}x faster")
                print(lines[-1])
            except Exception as error:
                print(f"torchao's Triton kernel did not run ({type(error).__name__}: {error})")

    ours = row("nvfp4", "ew.quantize_blocks",
               gpu_us(lambda: ew.quantize_blocks(x, torch.float4_e2m1fn_x2, format="nvfp4", global_scale=g, out=fp4,
                                                 scales=nv_scales)), nv_moved, cast_gbps)
    if nvfp4_quantize is not None:
        s_eager, q_eager = nvfp4_quantize(x, 16, g)
        if not (torch.equal(q_eager.view(torch.uint8), fp4.view(torch.uint8)) and
                torch.equal(s_eager.view(torch.uint8), nv_scales.view(torch.uint8))):
            print("nvfp4: ew.quantize_blocks differs from torchao's eager nvfp4_quantize")
            failed = True
        reference = torch.compile(lambda t: nvfp4_quantize(t, 16, g))
        peer = row("nvfp4", "torch.compile(torchao nvfp4_quantize)", gpu_us(lambda: reference(x)), nv_moved, cast_gbps)
        lines.append(f"{'':14} ours / torch.compile: {peer / ours:.2f}x faster")
        print(lines[-1])
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# {torch.cuda.get_device_name()}, bf16 [{rows}, {cols}], torch {torch.__version__}\n")
            f.write("\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
