# SPDX-License-Identifier: Apache-2.0
"""The binding on a GPU: bit-identical to the library's C path (the same calls made from C) and to
PyTorch where the semantics match (docs/semantics.md), on PyTorch tensors and CuPy arrays, with
the arrays' streams honoured and the library's errors raised as exceptions.

Each test is skipped, with its reason, when there is no GPU (or no PyTorch/CuPy);
the GPU script (scripts/ci/python.sh under EW_REQUIRE_GPU=1) sets ELEMENTWISE_REQUIRE_GPU=1 so that on the GPU
machine they fail instead.
"""

import os
import shutil
import subprocess
import warnings

import pytest

import elementwise as ew
from conftest import PYTHON_DIR, FakeArray, unavailable

D = ew.DType
ALL = list(D)
FLOAT8 = (D.F8E4M3, D.F8E5M2)
FLOATS = (D.F16, D.BF16, D.F32, D.F64) + FLOAT8
INTEGERS = (D.I8, D.U8, D.I16, D.I32, D.I64)
# [min, max + 1) of each integer dtype, as exact floats
INTEGER_RANGE = {D.I8: (-2.0**7, 2.0**7), D.U8: (0.0, 2.0**8), D.I16: (-2.0**15, 2.0**15),
                 D.I32: (-2.0**31, 2.0**31), D.I64: (-2.0**63, 2.0**63)}
N = 4099  # not a multiple of any pack width: every call has a tail
SPIN_CYCLES = 200_000_000  # ~0.1 s on the GPU: far longer than a launch, so a wrong stream shows


def names(dtype):
    return dtype.name.lower()


# ---- fixtures: the GPU, PyTorch, CuPy, the C-path driver ----

@pytest.fixture(scope="session")
def handle():
    try:
        created = ew.Handle(0)
    except ew.ElementwiseError as error:
        if error.status == ew.Status.NO_DEVICE:
            unavailable("no GPU: " + error.message)
        raise
    yield created
    created.close()


@pytest.fixture(scope="session")
def torch(handle):
    try:
        import torch
    except ImportError:
        unavailable("PyTorch is not installed")
    if not torch.cuda.is_available():
        unavailable("PyTorch sees no CUDA device")
    return torch


@pytest.fixture(scope="session")
def cupy(handle):
    try:
        import cupy
    except ImportError:
        unavailable("CuPy is not installed")
    return cupy


def torch_dtype(torch, dtype):
    return {D.BOOL: torch.bool, D.I8: torch.int8, D.U8: torch.uint8, D.I16: torch.int16, D.I32: torch.int32,
            D.I64: torch.int64, D.F16: torch.float16, D.BF16: torch.bfloat16, D.F32: torch.float32,
            D.F64: torch.float64, D.F8E4M3: torch.float8_e4m3fn, D.F8E5M2: torch.float8_e5m2}[dtype]


def bits(torch, tensor):
    """The same memory as unsigned-looking integers of the element's size, for bit comparisons."""
    integer = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.view(integer)


def random_tensor(torch, dtype, n, seed, torch_semantics=False):
    """Random bit patterns (NaN, inf, subnormals, extremes included). With torch_semantics, bool
    inputs are 0 or 1, as PyTorch defines bool tensors."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    raw = torch.randint(0, 256, (n * ew.dtype_size(dtype),), dtype=torch.uint8, device="cuda",
                        generator=generator)
    if dtype == D.BOOL and torch_semantics:
        raw &= 1
    return raw.view(torch_dtype(torch, dtype))


def describe(torch, index, tensors):
    mask = lambda t: (1 << (8 * t.element_size())) - 1  # noqa: E731
    return ", ".join("0x%x" % (int(bits(torch, t)[index]) & mask(t)) for t in tensors)


def assert_same_bits(torch, got, want, inputs, what, where=None):
    """Bit equality of got and want (at `where`, if given); all indexing is done on integer views,
    which every dtype has (float8 tensors support little else)."""
    differ = bits(torch, got) != bits(torch, want)
    if where is not None:
        differ &= where
    differ = differ.nonzero().flatten()
    if differ.numel():
        shown = ["[%d] in (%s): got %s, want %s" % (i, describe(torch, i, inputs), describe(torch, i, [got]),
                                                    describe(torch, i, [want]))
                 for i in differ[:6].tolist()]
        pytest.fail("%s: %d of %d elements differ\n  %s"
                    % (what, differ.numel(), got.numel(), "\n  ".join(shown)))


def is_nan(torch, tensor):
    return (tensor if tensor.dtype == torch.float64 else tensor.to(torch.float32)).isnan()


def assert_matches_torch(torch, got, want, inputs, what):
    """Bit-identical wherever PyTorch's result is a number; where it is NaN ours must be NaN too.
    NaN payloads, which PyTorch leaves to its implementation, are reported as a warning."""
    if not want.dtype.is_floating_point:
        return assert_same_bits(torch, got, want, inputs, what)
    want_nan, got_nan = is_nan(torch, want), is_nan(torch, got)
    assert_same_bits(torch, got, want, inputs, what, where=~want_nan)
    missing = (want_nan & ~got_nan).nonzero().flatten()
    if missing.numel():
        i = int(missing[0])
        pytest.fail("%s: %d results are NaN in PyTorch but not here, e.g. [%d] in (%s): got %s"
                    % (what, missing.numel(), i, describe(torch, i, inputs), describe(torch, i, [got])))
    payload = (want_nan & (bits(torch, got) != bits(torch, want))).nonzero().flatten()
    if payload.numel():
        i = int(payload[0])
        example = (describe(torch, i, inputs), describe(torch, i, [got]), describe(torch, i, [want]))
        warnings.warn("%s: %d NaN results have other bits than PyTorch's, e.g. in (%s): %s here, %s in "
                      "PyTorch" % ((what, payload.numel()) + example))


# ---- against PyTorch ----

@pytest.mark.parametrize("dtype", [d for d in ALL if d not in FLOAT8], ids=names)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_add_and_mul_match_torch(torch, handle, op, dtype):
    a = random_tensor(torch, dtype, N, 1, torch_semantics=True)
    b = random_tensor(torch, dtype, N, 2, torch_semantics=True)
    out = torch.empty_like(a)
    getattr(handle, op)(out, a, b)
    want = torch.add(a, b) if op == "add" else torch.mul(a, b)
    assert_matches_torch(torch, out, want, [a, b], "%s %s" % (op, dtype.name))


@pytest.mark.parametrize("dtype", [d for d in ALL if d not in FLOAT8 + (D.BOOL,)], ids=names)
def test_relu_matches_torch(torch, handle, dtype):
    x = random_tensor(torch, dtype, N, 3)
    out = torch.empty_like(x)
    handle.relu(out, x)
    assert_matches_torch(torch, out, torch.relu(x), [x], "relu " + dtype.name)


@pytest.mark.parametrize("dtype, alpha", [(D.F16, 0.3), (D.BF16, -1.75), (D.F32, 0.3), (D.F32, -3.0),
                                          (D.F64, 0.3), (D.I8, 3), (D.I8, -2), (D.U8, 3), (D.I16, -2),
                                          (D.I32, 3), (D.I64, -2)])
def test_scale_add_matches_torch(torch, handle, dtype, alpha):
    a, b = random_tensor(torch, dtype, N, 4), random_tensor(torch, dtype, N, 5)
    out = torch.empty_like(a)
    handle.scale_add(out, alpha, a, b)
    # torch.add(b, a, alpha=alpha) is b + alpha * a, fused in float for 16-bit floats (docs/semantics.md §4)
    want = torch.add(b, a, alpha=alpha)
    assert_matches_torch(torch, out, want, [a, b], "scale_add %s alpha=%s" % (dtype.name, alpha))


@pytest.mark.parametrize("source", ALL, ids=names)
@pytest.mark.parametrize("target", ALL, ids=names)
def test_cast_matches_torch(torch, handle, target, source):
    x = random_tensor(torch, source, N, 6, torch_semantics=True)
    if source in FLOATS and target in INTEGERS:
        # Out of range, a float -> integer conversion is undefined in PyTorch: keep the defined inputs.
        low, high = INTEGER_RANGE[target]
        wide = x.to(torch.float64)
        bits(torch, x).masked_fill_(~(wide.isfinite() & (wide > low - 1) & (wide < high)), 0)
    try:
        want = x.to(torch_dtype(torch, target))
    except (RuntimeError, TypeError) as error:
        pytest.skip("PyTorch has no %s -> %s cast: %s" % (source.name, target.name, error))
    out = torch.empty(N, dtype=torch_dtype(torch, target), device="cuda")
    handle.cast(out, x)
    assert_matches_torch(torch, out, want, [x], "cast %s -> %s" % (source.name, target.name))


def test_module_functions_use_the_default_handle_of_the_tensors_device(torch, handle):
    a = random_tensor(torch, D.F32, N, 7)
    out = torch.empty_like(a)
    ew.relu(out, a)
    assert ew.default_handle(a.device.index).device == a.device.index
    assert_matches_torch(torch, out, torch.relu(a), [a], "module-level relu")


def test_in_place_on_tensors(torch, handle):
    a, b = random_tensor(torch, D.F16, N, 8), random_tensor(torch, D.F16, N, 9)
    want = torch.add(a, b)
    handle.add(a, a, b)
    assert_matches_torch(torch, a, want, [b], "in-place add")


def test_a_bfloat16_tensor_seen_through_an_int16_view_needs_dtype(torch, handle):
    a, b = random_tensor(torch, D.BF16, N, 10), random_tensor(torch, D.BF16, N, 11)
    out = torch.empty_like(a)
    handle.add(out.view(torch.int16), a.view(torch.int16), b.view(torch.int16), dtype="bf16")
    assert_matches_torch(torch, out, torch.add(a, b), [a, b], "add bf16 via dtype=")


def test_empty_tensors(torch, handle):
    empty = torch.empty(0, device="cuda")
    assert handle.add(empty, empty, empty) is empty


def test_library_errors_on_the_gpu_raise_with_their_message(torch, handle):
    a = torch.ones(64, device="cuda")
    cai = a.__cuda_array_interface__
    misaligned = FakeArray(shape=(8,), typestr="<f4", pointer=cai["data"][0] + 2)
    with pytest.raises(ew.ElementwiseError) as caught:
        handle.relu(misaligned, a[:8])
    assert caught.value.status == ew.Status.INVALID_VALUE and "out" in caught.value.message

    with pytest.raises(ew.ElementwiseError) as caught:
        handle.relu(a[1:33], a[0:32])  # shifted overlap
    assert caught.value.status == ew.Status.INVALID_VALUE
    assert caught.value.message == ew._last_error_message()

    small = torch.ones(8, dtype=torch.int8, device="cuda")
    with pytest.raises(ew.ElementwiseError) as caught:
        handle.scale_add(small, 0.5, small, small)
    assert caught.value.status == ew.Status.INVALID_VALUE and "alpha" in caught.value.message


# ---- streams: the work lands on the stream the arrays (or the caller) name ----

def test_torch_current_stream_is_honoured(torch, handle):
    stream = torch.cuda.Stream()  # non-blocking: no implicit ordering with the default stream
    a = torch.ones(N, device="cuda")
    b = torch.rand(N, device="cuda")
    out = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        a.fill_(3.0)
        ew.add(out, a, b)  # torch's current stream: after the fill
    stream.synchronize()
    assert torch.equal(out, b + 3.0)

    other = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        a.fill_(5.0)
    handle.add(out, a, b, stream=stream)  # named explicitly, from outside the context
    stream.synchronize()
    assert torch.equal(out, b + 5.0)

    # Control: on an unrelated stream the add overtakes the fill, so the checks above can fail.
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        a.fill_(7.0)
    handle.add(out, a, b, stream=other)
    other.synchronize()
    stream.synchronize()
    assert torch.equal(out, b + 5.0)


SPIN_SOURCE = r"""
extern "C" __global__ void spin_then_fill(float *x, long long n, float value, long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        x[i] = value;
}
"""


def test_cupy_stream_from_the_interface_is_honoured(cupy, handle):
    spin_then_fill = cupy.RawKernel(SPIN_SOURCE, "spin_then_fill")
    stream, other = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    a = cupy.ones(N, dtype=cupy.float32)
    b = cupy.random.rand(N, dtype=cupy.float32)
    out = cupy.zeros(N, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    with stream:
        if a.__cuda_array_interface__.get("stream") != stream.ptr:
            unavailable("this CuPy does not name its stream in __cuda_array_interface__ (v3)")
        spin_then_fill((32,), (256,), (a, cupy.int64(N), cupy.float32(3.0), cupy.int64(SPIN_CYCLES)))
        ew.add(out, a, b)  # the stream comes from the arrays' interface
    stream.synchronize()
    assert bool((out == b + 3.0).all())

    # Control: queued on an unrelated stream, the add reads `a` before the fill.
    with stream:
        spin_then_fill((32,), (256,), (a, cupy.int64(N), cupy.float32(5.0), cupy.int64(SPIN_CYCLES)))
    handle.add(out, a, b, stream=other)
    other.synchronize()
    stream.synchronize()
    assert bool((out == b + 3.0).all())


def test_cupy_arrays_match_cupy(cupy, handle):
    a = cupy.random.standard_normal(N, dtype=cupy.float32)
    b = cupy.random.standard_normal(N, dtype=cupy.float32)
    out = cupy.empty_like(a)
    handle.add(out, a, b)
    assert bool((out.view(cupy.uint32) == (a + b).view(cupy.uint32)).all())
    half = cupy.empty(N, dtype=cupy.float16)
    handle.cast(half, a)
    assert bool((half.view(cupy.uint16) == a.astype(cupy.float16).view(cupy.uint16)).all())
    handle.relu(out[1:], a[1:])  # a view one element in: no vector pack fits, same results
    assert bool((out[1:].view(cupy.uint32) == cupy.maximum(a[1:], 0).view(cupy.uint32)).all())


def test_numba_device_arrays(handle):
    cuda = pytest.importorskip("numba.cuda")
    numpy = pytest.importorskip("numpy")
    a = numpy.arange(1, N + 1, dtype=numpy.int32)
    d_a, d_out = cuda.to_device(a), cuda.device_array(N, dtype=numpy.int32)
    handle.mul(d_out, d_a, d_a)
    cuda.synchronize()
    assert (d_out.copy_to_host() == a * a).all()


# ---- against the library's C path ----

def find_header():
    library_dir = os.path.dirname(os.path.realpath(ew.library_path))
    for directory in (os.environ.get("ELEMENTWISE_INCLUDE_DIR"), os.path.join(library_dir, "include"),
                      os.path.join(library_dir, "..", "include"),
                      os.path.join(library_dir, "..", "..", "include")):
        if directory and os.path.exists(os.path.join(directory, "elementwise.h")):
            return os.path.abspath(directory)
    return None


@pytest.fixture(scope="session")
def c_path(handle, tmp_path_factory):
    """python/tests/c_path.c built against the very library the binding loaded."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    nvcc = shutil.which("nvcc")
    cuda = os.environ.get("CUDA_HOME") or (os.path.dirname(os.path.dirname(nvcc)) if nvcc
                                           else "/usr/local/cuda")
    header = find_header()
    if compiler is None:
        unavailable("no C compiler for the C-path driver")
    if header is None:
        unavailable("elementwise.h not found: set ELEMENTWISE_INCLUDE_DIR")
    if not os.path.exists(os.path.join(cuda, "include", "cuda_runtime_api.h")):
        unavailable("no CUDA toolkit at %s: set CUDA_HOME" % cuda)
    executable = str(tmp_path_factory.mktemp("c_path") / "c_path")
    library_dir = os.path.dirname(os.path.realpath(ew.library_path))
    command = [compiler, "-std=c11", "-O2", "-Wall", "-o", executable,
               os.path.join(PYTHON_DIR, "tests", "c_path.c"), "-I" + header,
               "-I" + os.path.join(cuda, "include"),
               ew.library_path, "-Wl,-rpath," + library_dir, "-L" + os.path.join(cuda, "lib64"),
               "-lcudart_static", "-ldl", "-lpthread", "-lrt"]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode:
        pytest.fail("building the C-path driver failed:\n%s\n%s" % (" ".join(command), built.stderr))
    return executable


def catalogue():
    """Every (op, out dtype, in dtype, alpha) of the library, as ew_is_supported lists it."""
    entries = []
    for dtype in ALL:
        for op in (ew.Op.ADD, ew.Op.MUL, ew.Op.RELU):
            if ew.is_supported(op, dtype):
                entries.append((op, dtype, dtype, 0.0))
        if ew.is_supported(ew.Op.SCALE_ADD, dtype):
            alpha = 1.0 if dtype == D.BOOL else 3.0 if dtype in INTEGERS else 0.3
            entries.append((ew.Op.SCALE_ADD, dtype, dtype, alpha))
        for source in ALL:
            entries.append((ew.Op.CAST, dtype, source, 0.0))
    return entries


def to_bytes(torch, tensor):
    host = tensor.contiguous().view(torch.uint8).cpu()
    try:
        return host.numpy().tobytes()
    except (RuntimeError, ImportError):  # PyTorch without NumPy
        return bytes(host.tolist())


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "offset-by-one"])
def test_the_binding_matches_the_c_path_on_the_whole_catalogue(torch, handle, c_path, tmp_path, offset):
    """The same random bytes through the binding (tensors `offset` elements into their storage, so
    other pack widths run) and through C (fresh cudaMalloc buffers): the outputs must be identical."""
    jobs, results = [], []
    for number, (op, out_dtype, in_dtype, alpha) in enumerate(catalogue()):
        inputs = [random_tensor(torch, in_dtype, N + offset, 100 + number * 2 + k)[offset:] for k in range(2)]
        arity = 1 if op in (ew.Op.RELU, ew.Op.CAST) else 2
        inputs = inputs[:arity]
        out = torch.empty(N + offset, dtype=torch_dtype(torch, out_dtype), device="cuda")[offset:]
        bits(torch, out).fill_(0x5A)  # poison
        if op == ew.Op.CAST:
            handle.cast(out, inputs[0])
        elif op == ew.Op.SCALE_ADD:
            handle.scale_add(out, alpha, *inputs)
        elif op == ew.Op.RELU:
            handle.relu(out, inputs[0])
        else:
            handle.binary(op, out, *inputs)
        paths = []
        for k, tensor in enumerate(inputs):
            paths.append(str(tmp_path / ("%d_in%d" % (number, k))))
            with open(paths[-1], "wb") as file:
                file.write(to_bytes(torch, tensor))
        out_path = str(tmp_path / ("%d_out" % number))
        jobs.append("%d %d %d %s %d %s %s %s" % (op, out_dtype, in_dtype, float(alpha).hex(), N, paths[0],
                                                 paths[1] if arity == 2 else "-", out_path))
        results.append((op, out_dtype, in_dtype, out, out_path))

    ran = subprocess.run([c_path], input="\n".join(jobs) + "\n", capture_output=True, text=True)
    assert ran.returncode == 0, "C path failed: %s %s" % (ran.stdout[-2000:], ran.stderr[-2000:])
    assert ran.stdout.split() == ["ok"] * len(jobs)

    wrong = []
    for op, out_dtype, in_dtype, out, out_path in results:
        with open(out_path, "rb") as file:
            if to_bytes(torch, out) != file.read():
                wrong.append("%s %s <- %s" % (op.name, out_dtype.name, in_dtype.name))
    assert not wrong, "the binding and the C path differ on: " + ", ".join(wrong)
