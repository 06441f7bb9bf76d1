# SPDX-License-Identifier: Apache-2.0
"""The installed wheel on the GPU machine (scripts/gpu/python-wheel.sh): the time from `import
elementwise` to the first add's result, a user kernel checked bit for bit against the catalogue's
scale-add, and the NVRTC that compiled it (read from the process's mappings). The kernel's output goes
to OUTPUT, so that runs with two NVRTCs can be compared byte for byte.

    python3 scripts/gpu/wheel_check.py OUTPUT
"""

import sys
import time

import torch


def main(output):
    generator = torch.Generator(device="cuda").manual_seed(7)
    a = torch.rand(1 << 20, device="cuda", generator=generator) + 0.5
    b = torch.rand(1 << 20, device="cuda", generator=generator) - 0.5
    torch.cuda.synchronize()

    start = time.perf_counter()
    import elementwise as ew
    imported = time.perf_counter()
    first = ew.add(a, b)
    torch.cuda.synchronize()
    done = time.perf_counter()
    if not torch.equal(first, a + b):
        raise SystemExit("wheel_check: the first add differs from torch's")
    print("wheel_check: %s %s from %s" % (ew.__name__, ew.__version__, ew.library_path))
    print("wheel_check: import %.1f ms; first add after import %.1f ms (handle, module load, launch)"
          % ((imported - start) * 1e3, (done - imported) * 1e3))

    with ew.Kernel("return ew::scale_add(p0, in0, in1);", out_dtype="f32", in_dtypes=("f32", "f32"),
                   n_params=1) as kernel:
        made = kernel(a, b, params=(1.5,))
    want = ew.scale_add(1.5, a, b)
    torch.cuda.synchronize()
    if not torch.equal(made.view(torch.int32), want.view(torch.int32)):
        raise SystemExit("wheel_check: the user kernel differs from ew.scale_add")
    with open("/proc/self/maps") as maps:
        nvrtc = sorted({line.split()[-1] for line in maps if "libnvrtc.so" in line})
    print("wheel_check: user kernel bit-identical to ew.scale_add; NVRTC: %s" % (", ".join(nvrtc) or "none mapped"))
    made.cpu().numpy().tofile(output)


if __name__ == "__main__":
    main(sys.argv[1])
