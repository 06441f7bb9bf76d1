# SPDX-License-Identifier: Apache-2.0
"""The binding on a GPU: bit-identical to the library's C path (the same calls made from C) and to
PyTorch where the semantics match (docs/semantics.md), on PyTorch tensors and CuPy arrays, read
through __cuda_array_interface__ and through DLPack, flat, strided and broadcast, one by one and in
lists, with outputs made for out=None, the arrays' streams honoured and the library's errors raised
as exceptions.

Each test is skipped, with its reason, when there is no GPU (or no PyTorch/CuPy);
the GPU script (scripts/ci/python.sh under EW_REQUIRE_GPU=1) sets ELEMENTWISE_REQUIRE_GPU=1 so that on the GPU
machine they fail instead.
"""

import os
import shutil
import subprocess
import sys
import warnings

import pytest

import elementwise as ew
from conftest import INSTALLED, PACKAGE_DIR, PYTHON_DIR, FakeArray, import_or_unavailable, unavailable

D = ew.DType
ALL = [d for d in D if d != D.F4E2M1]  # the catalogue's (the block dtype: test_gpu_blocks.py)
FLOAT8 = (D.F8E4M3, D.F8E5M2)  # quantize's targets
CAST_ONLY = FLOAT8 + (D.F8E8M0,)  # the 1-byte floats: no op but the cast takes them
FLOATS = (D.F16, D.BF16, D.F32, D.F64) + CAST_ONLY
INTEGERS = (D.I8, D.U8, D.I16, D.I32, D.I64)
# [min, max + 1) of each integer dtype, as exact floats
INTEGER_RANGE = {D.I8: (-2.0**7, 2.0**7), D.U8: (0.0, 2.0**8), D.I16: (-2.0**15, 2.0**15),
                 D.I32: (-2.0**31, 2.0**31), D.I64: (-2.0**63, 2.0**63)}
N = 4099  # not a multiple of any pack width: every call has a tail
SPIN_CYCLES = 200_000_000  # ~0.1 s on the GPU: far longer than a launch, so a wrong stream shows


def names(dtype):
    return dtype.name.lower()


# ---- fixtures: CuPy, the C-path driver (the handle and PyTorch: conftest.py) ----

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
            D.F64: torch.float64, D.F8E4M3: torch.float8_e4m3fn, D.F8E5M2: torch.float8_e5m2,
            D.F8E8M0: torch.float8_e8m0fnu}[dtype]


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

@pytest.mark.parametrize("dtype", [d for d in ALL if d not in CAST_ONLY], ids=names)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_add_and_mul_match_torch(torch, handle, op, dtype):
    a = random_tensor(torch, dtype, N, 1, torch_semantics=True)
    b = random_tensor(torch, dtype, N, 2, torch_semantics=True)
    out = torch.empty_like(a)
    getattr(handle, op)(a, b, out=out)
    want = torch.add(a, b) if op == "add" else torch.mul(a, b)
    assert_matches_torch(torch, out, want, [a, b], "%s %s" % (op, dtype.name))


@pytest.mark.parametrize("dtype", [d for d in ALL if d not in CAST_ONLY + (D.BOOL,)], ids=names)
def test_relu_matches_torch(torch, handle, dtype):
    x = random_tensor(torch, dtype, N, 3)
    out = torch.empty_like(x)
    handle.relu(x, out=out)
    assert_matches_torch(torch, out, torch.relu(x), [x], "relu " + dtype.name)


@pytest.mark.parametrize("dtype, alpha", [(D.F16, 0.3), (D.BF16, -1.75), (D.F32, 0.3), (D.F32, -3.0),
                                          (D.F64, 0.3), (D.I8, 3), (D.I8, -2), (D.U8, 3), (D.I16, -2),
                                          (D.I32, 3), (D.I64, -2)])
def test_scale_add_matches_torch(torch, handle, dtype, alpha):
    a, b = random_tensor(torch, dtype, N, 4), random_tensor(torch, dtype, N, 5)
    out = torch.empty_like(a)
    handle.scale_add(alpha, a, b, out=out)
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
    handle.cast(x, out=out)
    assert_matches_torch(torch, out, want, [x], "cast %s -> %s" % (source.name, target.name))


def test_module_functions_use_the_default_handle_of_the_tensors_device(torch, handle):
    a = random_tensor(torch, D.F32, N, 7)
    out = torch.empty_like(a)
    ew.relu(a, out=out)
    assert ew.default_handle(a.device.index).device == a.device.index
    assert_matches_torch(torch, out, torch.relu(a), [a], "module-level relu")


def test_in_place_on_tensors(torch, handle):
    a, b = random_tensor(torch, D.F16, N, 8), random_tensor(torch, D.F16, N, 9)
    want = torch.add(a, b)
    handle.add(a, b, out=a)
    assert_matches_torch(torch, a, want, [b], "in-place add")


def test_a_bfloat16_tensor_seen_through_an_int16_view_needs_dtype(torch, handle):
    a, b = random_tensor(torch, D.BF16, N, 10), random_tensor(torch, D.BF16, N, 11)
    out = torch.empty_like(a)
    handle.add(a.view(torch.int16), b.view(torch.int16), out=out.view(torch.int16), dtype="bf16")
    assert_matches_torch(torch, out, torch.add(a, b), [a, b], "add bf16 via dtype=")


def test_empty_tensors(torch, handle):
    empty = torch.empty(0, device="cuda")
    assert handle.add(empty, empty, out=empty) is empty


def test_library_errors_on_the_gpu_raise_with_their_message(torch, handle):
    a = torch.ones(64, device="cuda")
    cai = a.__cuda_array_interface__
    misaligned = FakeArray(shape=(8,), typestr="<f4", pointer=cai["data"][0] + 2)
    with pytest.raises(ew.ElementwiseError) as caught:
        handle.relu(a[:8], out=misaligned)
    assert caught.value.status == ew.Status.INVALID_VALUE and "out" in caught.value.message

    with pytest.raises(ew.ElementwiseError) as caught:
        handle.relu(a[0:32], out=a[1:33])  # shifted overlap
    assert caught.value.status == ew.Status.INVALID_VALUE
    assert caught.value.message == ew._last_error_message()

    small = torch.ones(8, dtype=torch.int8, device="cuda")
    with pytest.raises(ew.ElementwiseError) as caught:
        handle.scale_add(0.5, small, small, out=small)
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
        ew.add(a, b, out=out)  # torch's current stream: after the fill
    stream.synchronize()
    assert torch.equal(out, b + 3.0)

    other = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        a.fill_(5.0)
    handle.add(a, b, out=out, stream=stream)  # named explicitly, from outside the context
    stream.synchronize()
    assert torch.equal(out, b + 5.0)

    # Control: on an unrelated stream the add overtakes the fill, so the checks above can fail.
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        a.fill_(7.0)
    handle.add(a, b, out=out, stream=other)
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
        ew.add(a, b, out=out)  # the stream comes from the arrays' interface
    stream.synchronize()
    assert bool((out == b + 3.0).all())

    # Control: queued on an unrelated stream, the add reads `a` before the fill.
    with stream:
        spin_then_fill((32,), (256,), (a, cupy.int64(N), cupy.float32(5.0), cupy.int64(SPIN_CYCLES)))
    handle.add(a, b, out=out, stream=other)
    other.synchronize()
    stream.synchronize()
    assert bool((out == b + 3.0).all())


def test_cupy_arrays_match_cupy(cupy, handle):
    a = cupy.random.standard_normal(N, dtype=cupy.float32)
    b = cupy.random.standard_normal(N, dtype=cupy.float32)
    out = cupy.empty_like(a)
    handle.add(a, b, out=out)
    assert bool((out.view(cupy.uint32) == (a + b).view(cupy.uint32)).all())
    half = cupy.empty(N, dtype=cupy.float16)
    handle.cast(a, out=half)
    assert bool((half.view(cupy.uint16) == a.astype(cupy.float16).view(cupy.uint16)).all())
    handle.relu(a[1:], out=out[1:])  # a view one element in: no vector pack fits, same results
    assert bool((out[1:].view(cupy.uint32) == cupy.maximum(a[1:], 0).view(cupy.uint32)).all())


def test_numba_device_arrays(handle):
    cuda = import_or_unavailable("numba.cuda")
    numpy = import_or_unavailable("numpy")
    a = numpy.arange(1, N + 1, dtype=numpy.int32)
    d_a, d_out = cuda.to_device(a), cuda.device_array(N, dtype=numpy.int32)
    handle.mul(d_a, d_a, out=d_out)
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
            handle.cast(inputs[0], out=out)
        elif op == ew.Op.SCALE_ADD:
            handle.scale_add(alpha, *inputs, out=out)
        elif op == ew.Op.RELU:
            handle.relu(inputs[0], out=out)
        else:
            handle.binary(op, *inputs, out=out)
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


# ---- comparing views: element by element, in the output's index order ----

def assert_view_matches(torch, got, want, inputs, what):
    """assert_matches_torch on N-d views: both flattened in index order, the inputs broadcast to
    got's shape first (copies made for the comparison only)."""
    flat = lambda t: t.expand(got.shape).contiguous().reshape(-1)  # noqa: E731
    assert tuple(got.shape) == tuple(want.shape), (what, got.shape, want.shape)
    assert_matches_torch(torch, flat(got), flat(want), [flat(t) for t in inputs], what)


def poisoned_base(torch, dtype, n):
    base = torch.empty(n, dtype=torch_dtype(torch, dtype), device="cuda")
    base.view(torch.uint8).fill_(0x5A)  # every byte, so each element's bits are 0x5A...5A
    return base


ROWS, COLUMNS = 67, 129  # odd extents: tails everywhere


def view_case(torch, dtype, case, seed):
    """(out, a, b) for one layout case: views into poisoned or random storage."""
    n = ROWS * COLUMNS
    new = lambda k, count=n: random_tensor(torch, dtype, count, seed + k, torch_semantics=True)  # noqa: E731
    out = poisoned_base(torch, dtype, n).view(ROWS, COLUMNS)
    if case == "transposed input":
        return out, new(1).view(COLUMNS, ROWS).t(), new(2).view(ROWS, COLUMNS)
    if case == "every other column":
        return out, new(1, 2 * n).view(ROWS, 2 * COLUMNS)[:, ::2], new(2, 2 * n).view(ROWS, 2 * COLUMNS)[:, 1::2]
    if case == "row broadcast":
        return out, new(1).view(ROWS, COLUMNS), new(2, COLUMNS)
    if case == "column broadcast":
        return out, new(1, ROWS).view(ROWS, 1), new(2).view(ROWS, COLUMNS)
    if case == "one element broadcast":
        return out, new(1).view(ROWS, COLUMNS), new(2, 1)
    if case == "transposed out":
        return poisoned_base(torch, dtype, n).view(COLUMNS, ROWS).t(), new(1).view(ROWS, COLUMNS), new(2, COLUMNS)
    if case == "every other out column":
        out = poisoned_base(torch, dtype, 2 * n).view(ROWS, 2 * COLUMNS)[:, 1::2]
        return out, new(1).view(ROWS, COLUMNS), new(2).view(ROWS, COLUMNS)
    if case == "permuted 3-d":
        a = new(1).view(COLUMNS, ROWS, 1).permute(1, 0, 2).expand(ROWS, COLUMNS, 3)
        out = poisoned_base(torch, dtype, 3 * n).view(ROWS, COLUMNS, 3)
        return out, a, new(2, 3 * n).view(3, ROWS, COLUMNS).permute(1, 2, 0)
    raise AssertionError(case)


VIEW_CASES = ["transposed input", "every other column", "row broadcast", "column broadcast",
              "one element broadcast", "transposed out", "every other out column", "permuted 3-d"]
VIEW_DTYPES = [D.BOOL, D.I8, D.U8, D.I32, D.I64, D.F16, D.BF16, D.F32, D.F64]


def assert_gaps_untouched(torch, out, what):
    """The storage around a strided out keeps its poison: nothing was written outside the view."""
    storage = torch.empty(0, dtype=out.dtype, device="cuda").set_(out.untyped_storage())
    mask = torch.ones(storage.numel(), dtype=torch.bool, device="cuda")
    inside = torch.arange(storage.numel(), device="cuda").as_strided(out.shape, out.stride(), out.storage_offset())
    mask[inside.reshape(-1)] = False
    outside = bits(torch, storage)[mask]
    poison = {1: 0x5A, 2: 0x5A5A, 4: 0x5A5A5A5A, 8: 0x5A5A5A5A5A5A5A5A}[out.element_size()]
    assert bool((outside == poison).all()), "%s: written outside the out view" % what


@pytest.mark.parametrize("case", VIEW_CASES)
@pytest.mark.parametrize("dtype", VIEW_DTYPES, ids=names)
@pytest.mark.parametrize("op", ["add", "mul"])
def test_strided_and_broadcast_views_match_torch(torch, handle, op, dtype, case):
    out, a, b = view_case(torch, dtype, case, 40)
    assert getattr(handle, op)(a, b, out=out) is out
    want = torch.add(a, b) if op == "add" else torch.mul(a, b)
    what = "%s %s, %s" % (op, dtype.name, case)
    assert_view_matches(torch, out, want, [a, b], what)
    assert_gaps_untouched(torch, out, what)


@pytest.mark.parametrize("case", VIEW_CASES)
@pytest.mark.parametrize("dtype, alpha", [(D.F16, 0.3), (D.BF16, -1.75), (D.F32, 0.3), (D.I32, 3)],
                         ids=lambda value: value.name.lower() if isinstance(value, D) else str(value))
def test_strided_scale_add_and_relu_match_torch(torch, handle, dtype, alpha, case):
    out, a, b = view_case(torch, dtype, case, 50)
    handle.scale_add(alpha, a, b, out=out)
    assert_view_matches(torch, out, torch.add(b, a, alpha=alpha), [a, b], "scale_add %s, %s" % (dtype.name, case))
    handle.relu(a, out=out)
    assert_view_matches(torch, out, torch.relu(a).expand(out.shape), [a], "relu %s, %s" % (dtype.name, case))
    assert_gaps_untouched(torch, out, "%s %s" % (dtype.name, case))


@pytest.mark.parametrize("case", ["transposed input", "every other column", "row broadcast", "transposed out"])
@pytest.mark.parametrize("source, target", [(D.F32, D.F16), (D.F16, D.BF16), (D.BF16, D.F64), (D.I32, D.F32),
                                            (D.U8, D.I64), (D.F32, D.F8E4M3), (D.F8E5M2, D.F32)], ids=names)
def test_strided_casts_match_torch(torch, handle, source, target, case):
    _, a, b = view_case(torch, source, case, 60)
    x = b if case == "row broadcast" else a  # the strided or broadcast input of the case
    shape = (ROWS, COLUMNS)
    out = poisoned_base(torch, target, ROWS * COLUMNS).view(COLUMNS, ROWS).t() if case == "transposed out" \
        else poisoned_base(torch, target, ROWS * COLUMNS).view(shape)
    handle.cast(x, out=out)
    assert_view_matches(torch, out, x.to(torch_dtype(torch, target)).expand(shape), [x],
                        "cast %s -> %s, %s" % (source.name, target.name, case))


def test_out_none_allocates_with_torch_and_broadcasts(torch, handle):
    a = random_tensor(torch, D.F16, ROWS * COLUMNS, 70).view(ROWS, COLUMNS)
    bias = random_tensor(torch, D.F16, COLUMNS, 71)
    result = ew.add(a, bias)
    assert isinstance(result, torch.Tensor) and result.shape == a.shape and result.dtype == torch.float16
    assert_view_matches(torch, result, a + bias, [a, bias], "add(a, bias)")
    transposed = a.t()
    result = ew.relu(transposed)  # of the input's shape: its layout, as empty_like gives
    assert result.shape == transposed.shape and result.stride() == transposed.stride()
    assert_view_matches(torch, result, torch.relu(transposed), [transposed], "relu(a.t())")
    for target in (D.BF16, D.F8E4M3, D.I32):
        x = random_tensor(torch, D.F32, 4099, 72)
        if target == D.I32:
            x = x.nan_to_num(0.0, 0.0, 0.0).clamp(-1e9, 1e9)
        converted = ew.cast(x, target)
        assert converted.dtype == torch_dtype(torch, target)
        assert_matches_torch(torch, converted, x.to(torch_dtype(torch, target)), [x], "cast(None) -> " + target.name)
    result = ew.scale_add(2.0, a, bias)
    assert_view_matches(torch, result, torch.add(bias, a, alpha=2.0), [a, bias], "scale_add(None)")


def test_out_none_allocates_with_cupy(cupy, handle):
    a = cupy.random.standard_normal((ROWS, COLUMNS), dtype=cupy.float32)
    bias = cupy.random.standard_normal(COLUMNS, dtype=cupy.float32)
    result = ew.add(a, bias)
    assert isinstance(result, cupy.ndarray) and result.shape == a.shape
    assert bool((result.view(cupy.uint32) == (a + bias).view(cupy.uint32)).all())
    reversed_a = a[::-1, ::-1]  # negative strides
    result = ew.mul(reversed_a, reversed_a)
    assert bool((result.view(cupy.uint32) == (reversed_a * reversed_a).view(cupy.uint32)).all())
    half = ew.cast(a, "f16")
    assert half.dtype == cupy.float16
    assert bool((half.view(cupy.uint16) == a.astype(cupy.float16).view(cupy.uint16)).all())


def test_an_out_that_would_be_written_twice_is_refused_by_the_library(torch, handle):
    # The binding passes such layouts on; the library's own check (src/plan/layout.c) refuses them.
    a = torch.ones(ROWS, COLUMNS, device="cuda")
    with pytest.raises(ew.ElementwiseError, match="would share an address") as caught:
        ew.add(a, a, out=torch.empty(1, COLUMNS, device="cuda").expand(ROWS, COLUMNS))
    assert caught.value.status == ew.Status.INVALID_VALUE and caught.value.function == "ew_binary_strided"
    with pytest.raises(ew.ElementwiseError, match="strides must nest"):
        ew.relu(a[:8, :8], out=torch.empty(64, device="cuda").as_strided((8, 8), (1, 1)))
    # More dimensions than EW_MAX_DIMS that do not merge: the library says so.
    nine = torch.empty((3,) * 9, device="cuda")[(slice(0, 2),) * 9]  # no two dimensions merge
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.relu(nine, out=torch.empty((2,) * 9, device="cuda"))
    assert caught.value.status == ew.Status.INVALID_VALUE and caught.value.message


def test_an_out_overlapping_a_strided_input_is_refused_by_the_library(torch, handle):
    base = torch.zeros(2 * 4099, device="cuda")
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.relu(base[0:8198:2], out=base[1:4100])
    assert caught.value.status == ew.Status.INVALID_VALUE and caught.value.function == "ew_unary_strided"


# ---- DLPack: objects that speak only the DLPack protocol ----

class DLPackOnly:
    """Only the DLPack protocol of a tensor or array, so the binding must read it through __dlpack__."""

    def __init__(self, array):
        self.array = array
        self.streams = []

    def __dlpack__(self, **keywords):
        capsule = self.array.__dlpack__(**keywords)  # an older producer refuses newer keywords first
        self.streams.append(keywords.get("stream"))
        return capsule

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.mark.parametrize("dtype", [D.I8, D.I32, D.F16, D.BF16, D.F32, D.F64], ids=names)
def test_dlpack_tensors_match_torch(torch, handle, dtype):
    a = random_tensor(torch, dtype, N, 80, torch_semantics=True)
    b = random_tensor(torch, dtype, N, 81, torch_semantics=True)
    out = torch.empty_like(a)
    bits(torch, out).fill_(0x5A)
    wrapped = [DLPackOnly(t) for t in (out, a, b)]
    handle.add(*wrapped[1:], out=wrapped[0])
    assert_matches_torch(torch, out, torch.add(a, b), [a, b], "add %s through DLPack" % dtype.name)
    assert all(w.streams == [1] for w in wrapped)  # the legacy default stream, as the protocol writes it


def test_dlpack_strided_views(torch, handle):
    a = random_tensor(torch, D.F32, ROWS * COLUMNS, 82).view(COLUMNS, ROWS).t()
    bias = random_tensor(torch, D.F32, COLUMNS, 83)
    out = torch.empty(ROWS, COLUMNS, device="cuda")
    ew.add(DLPackOnly(a), DLPackOnly(bias), out=DLPackOnly(out))
    assert_view_matches(torch, out, a + bias, [a, bias], "strided add through DLPack")


def test_dlpack_producers_make_their_data_ready_on_the_callers_stream(torch, handle):
    """The add is queued on the legacy default stream; torch, asked for its tensors on that stream,
    makes it wait for the fill pending on torch's current stream (a non-blocking one)."""
    stream = torch.cuda.Stream()
    a, b = torch.ones(N, device="cuda"), torch.rand(N, device="cuda")
    out = torch.zeros(N, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        a.fill_(3.0)
        ew.add(DLPackOnly(a), DLPackOnly(b), out=DLPackOnly(out))
    torch.cuda.synchronize()
    assert torch.equal(out, b + 3.0)
    # With stream= the producer is asked for that stream instead, and makes it wait.
    other = torch.cuda.Stream()
    wrapped = DLPackOnly(a)
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        a.fill_(5.0)
        handle.add(wrapped, DLPackOnly(b), out=DLPackOnly(out), stream=other)
    assert wrapped.streams == [other.cuda_stream]
    torch.cuda.synchronize()
    assert torch.equal(out, b + 5.0)


def test_cupy_arrays_through_dlpack(cupy, handle):
    a = cupy.random.standard_normal(N, dtype=cupy.float32)
    b = cupy.random.standard_normal(N, dtype=cupy.float32)
    out = cupy.empty_like(a)
    handle.mul(DLPackOnly(a), DLPackOnly(b), out=DLPackOnly(out))
    cupy.cuda.Device().synchronize()
    assert bool((out.view(cupy.uint32) == (a * b).view(cupy.uint32)).all())


def test_host_tensors_are_refused_clearly(torch, handle):
    host = torch.ones(8)
    with pytest.raises(TypeError, match="CPU array"):
        ew.relu(host, out=torch.empty(8, device="cuda"))
    with pytest.raises(TypeError, match="CPU array"):
        ew.relu(DLPackOnly(host), out=torch.empty(8, device="cuda"))


def test_refusals_on_the_gpu_name_the_operand(torch, handle):
    a = torch.ones(64, device="cuda")
    with pytest.raises(TypeError, match="b is I32 but out is F32"):
        ew.add(a, a.int(), out=torch.empty_like(a))
    with pytest.raises(ValueError, match=r"shapes a \(64,\), b \(32,\) do not broadcast together"):
        ew.add(a, a[:32])
    with pytest.raises(TypeError, match="has neither"):
        ew.add(a, [1.0] * 64)
    with pytest.raises(TypeError, match="CPU array"):
        ew.add(a, a, out=torch.empty(64))
    # The device check, with one GPU: a handle object claiming device 1 for device 0's handle.
    elsewhere = ew.Handle._from_raw(handle._ptr, device=1)
    with pytest.raises(ValueError, match="out is on device 0 but the call runs on device 1"):
        ew.add(a, a, out=torch.empty_like(a), handle=elsewhere)


def test_torch_tensors_come_through_the_dlpack_exchange_api(torch, handle):
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        unavailable("this PyTorch (%s) has no DLPack C exchange API (2.10 and later)" % torch.__version__)
    a = torch.ones(N, device="cuda")
    assert ew._ext.describe(a)[5] == a.device.index  # read through the API: its device known
    made = ew.add(a, a)
    assert isinstance(made, torch.Tensor) and made.device == a.device and made.dtype == torch.float32
    assert torch.equal(made, a + a)
    parameter = torch.nn.Parameter(a.clone())  # a subclass: the API found on its type too
    assert torch.equal(ew.relu(parameter.detach()), a)


def test_the_out_first_forms_still_work_on_the_gpu(torch, handle):
    a, b = random_tensor(torch, D.F32, N, 12), random_tensor(torch, D.F32, N, 13)
    out, want = torch.empty_like(a), torch.empty_like(a)
    ew.scale_add(0.5, a, b, out=want)
    with pytest.warns(DeprecationWarning):
        assert ew.scale_add(out, 0.5, a, b) is out
    assert_same_bits(torch, out, want, [a, b], "scale_add, the output first")
    with pytest.warns(DeprecationWarning):
        half = ew.cast(None, a, out_dtype="f16")
    assert_same_bits(torch, half, ew.cast(a, "f16"), [a], "cast, the output first")


# ---- tensor lists ----

LIST_SIZES = [4099, 0, 1, 33, 100_003, 257]


@pytest.mark.parametrize("dtype", [D.F16, D.BF16, D.F32, D.I32, D.U8], ids=names)
def test_batched_lists_match_torch(torch, handle, dtype):
    as_ = [random_tensor(torch, dtype, n, 90 + i, torch_semantics=True) for i, n in enumerate(LIST_SIZES)]
    bs = [random_tensor(torch, dtype, n, 100 + i, torch_semantics=True) for i, n in enumerate(LIST_SIZES)]

    def poisoned():
        outs = [torch.empty_like(a) for a in as_]
        for out in outs:
            out.view(torch.uint8).fill_(0x5A)
        return outs

    outs = poisoned()
    assert ew.add_batched(as_, bs, outs=outs) == outs
    for i, (out, a, b) in enumerate(zip(outs, as_, bs)):
        assert_matches_torch(torch, out, torch.add(a, b), [a, b], "add_batched %s [%d]" % (dtype.name, i))
    outs = poisoned()
    handle.mul_batched(as_, bs, outs=outs)
    for i, (out, a, b) in enumerate(zip(outs, as_, bs)):
        assert_matches_torch(torch, out, torch.mul(a, b), [a, b], "mul_batched %s [%d]" % (dtype.name, i))
    alpha = 3 if dtype in INTEGERS else 0.3
    outs = poisoned()
    handle.scale_add_batched(alpha, as_, bs, outs=outs)
    for i, (out, a, b) in enumerate(zip(outs, as_, bs)):
        assert_matches_torch(torch, out, torch.add(b, a, alpha=alpha), [a, b], "scale_add_batched [%d]" % i)
    outs = poisoned()
    handle.relu_batched(as_, outs=outs)
    for i, (out, a) in enumerate(zip(outs, as_)):
        assert_matches_torch(torch, out, torch.relu(a), [a], "relu_batched %s [%d]" % (dtype.name, i))
    made = ew.cast_batched(as_, "f64")
    for i, (out, a) in enumerate(zip(made, as_)):
        assert out.dtype == torch.float64
        assert_matches_torch(torch, out, a.to(torch.float64), [a], "cast_batched %s [%d]" % (dtype.name, i))
    made = ew.add_batched(as_, bs)
    assert [tuple(m.shape) for m in made] == [(n,) for n in LIST_SIZES]
    assert_matches_torch(torch, made[0], torch.add(as_[0], bs[0]), [as_[0], bs[0]], "add_batched(None)")


def test_batched_lists_refuse_strided_entries(torch, handle):
    a = torch.ones(64, device="cuda")
    with pytest.raises(ValueError, match="not contiguous"):
        ew.relu_batched([a[::2]], outs=[torch.empty(32, device="cuda")])
    assert ew.relu_batched([], outs=[]) == []


# ---- user-defined kernels: Kernel ----

ADD_SOURCE = "return ew::add(in0, in1);"
CHAIN_SOURCE = "return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));"


@pytest.fixture(scope="session")
def kernels(handle):
    """make(source, out_dtype, in_dtypes, n_params): a Kernel on the session's handle, compiled once
    per session. Without NVRTC (EW_ERROR_NOT_SUPPORTED) the kernel tests give up as GPU tests do."""
    made = {}

    def make(source, out_dtype, in_dtypes, n_params=0):
        key = (source, out_dtype, tuple(in_dtypes), n_params)
        if key not in made:
            try:
                made[key] = ew.Kernel(source, out_dtype, in_dtypes, n_params, handle=handle)
            except ew.ElementwiseError as error:
                if error.status == ew.Status.NOT_SUPPORTED:
                    unavailable("kernels cannot be compiled here: " + error.message)
                raise
        return made[key]

    yield make
    for kernel in made.values():
        kernel.close()


def poisoned_view(torch, dtype, n, before=0, after=0):
    """n elements `before` elements into storage poisoned with 0x5A bytes, `after` more past them."""
    return poisoned_base(torch, dtype, before + n + after)[before:before + n]


KERNEL_SIZES = [1, 7, 1000, (1 << 20) + 3]


@pytest.mark.parametrize("layout", ["aligned", "misaligned"])
@pytest.mark.parametrize("n", KERNEL_SIZES)
@pytest.mark.parametrize("dtype", [D.F32, D.F16, D.BF16, D.I8], ids=names)
def test_an_add_kernel_matches_ew_add_bit_for_bit(torch, kernels, dtype, n, layout):
    kernel = kernels(ADD_SOURCE, dtype, (dtype, dtype))
    # Misaligned: views 1, 3 and 2 elements into larger buffers, so the three differ in alignment.
    a_skip, b_skip, out_skip = (1, 3, 2) if layout == "misaligned" else (0, 0, 0)
    a = random_tensor(torch, dtype, n + a_skip, 200)[a_skip:]
    b = random_tensor(torch, dtype, n + b_skip, 201)[b_skip:]
    out = poisoned_view(torch, dtype, n, before=out_skip, after=5)
    assert kernel(a, b, out=out) is out
    want = ew.add(a, b)
    what = "kernel %s %s n=%d %s" % (ADD_SOURCE, dtype.name, n, layout)
    assert_same_bits(torch, out, want, [a, b], what)
    assert_gaps_untouched(torch, out, what)


@pytest.mark.parametrize("skip", [0, 1])
def test_a_fused_chain_matches_the_chain_of_calls_bit_for_bit(torch, kernels, skip):
    kernel = kernels(CHAIN_SOURCE, D.F16, (D.F32, D.F32), 1)
    a = random_tensor(torch, D.F32, N + skip, 210)[skip:]
    b = random_tensor(torch, D.F32, N + skip, 211)[skip:]
    out = torch.empty(N, dtype=torch.float16, device="cuda")
    kernel(a, b, out=out, params=(1.5,))
    step = ew.scale_add(1.5, a, b)
    ew.relu(step, out=step)
    want = ew.cast(step, "f16")
    assert_same_bits(torch, out, want, [a, b], "fused scale_add -> relu -> cast, offset %d" % skip)


def test_a_user_expression_matches_torch(torch, kernels):
    kernel = kernels("return in0 > 0.f ? in0 : 0.01f * in0;", D.F32, (D.F32,))
    x = random_tensor(torch, D.F32, N, 220)
    out = torch.empty_like(x)
    kernel(x, out=out)
    want = torch.where(x > 0, x, x * 0.01)  # float32 throughout: 0.01 rounds to 0.01f
    assert_matches_torch(torch, out, want, [x], "leaky relu kernel")


def test_a_ternary_kernel_matches_mul_then_add(torch, kernels):
    kernel = kernels("return ew::add(ew::mul(in0, in1), in2);", D.F16, (D.F16, D.F16, D.F16))
    a, b, c = (random_tensor(torch, D.F16, N, seed) for seed in (230, 231, 232))
    out = torch.empty_like(a)
    kernel(a, b, c, out=out)
    want = ew.mul(a, b)
    ew.add(want, c, out=want)
    assert_same_bits(torch, out, want, [a, b, c], "add(mul(a, b), c) kernel")


def test_a_kernel_allocates_out_and_runs_in_place(torch, kernels, handle):
    kernel = kernels(CHAIN_SOURCE, D.F16, (D.F32, D.F32), 1)
    a = random_tensor(torch, D.F32, ROWS * COLUMNS, 240).view(ROWS, COLUMNS)
    b = random_tensor(torch, D.F32, ROWS * COLUMNS, 241).view(ROWS, COLUMNS)
    made = kernel(a, b, params=(1.5,))
    assert isinstance(made, torch.Tensor) and made.dtype == torch.float16 and made.shape == a.shape
    want = torch.empty_like(made)
    kernel(a, b, out=want, params=(1.5,))
    assert_same_bits(torch, made, want, [a, b], "kernel(..., out=None)")

    add = kernels(ADD_SOURCE, D.F32, (D.F32, D.F32))
    want = ew.add(a, b)
    assert add(a, b, out=a) is a  # out is in0
    assert_same_bits(torch, a, want, [b], "in-place add kernel")

    # handle=None: the default handle of the current device, created then.
    with ew.Kernel("return in0;", "f32", ["f32"]) as copy:
        assert copy.handle is ew.default_handle(torch.cuda.current_device())
        x = torch.randn(N, device="cuda")
        assert torch.equal(copy(x), x)


def test_kernel_errors(torch, kernels):
    with pytest.raises(ew.ElementwiseError) as caught:
        kernels("float t = in0;\nreturn undefined_name(t);", D.F32, (D.F32,))
    message = caught.value.message
    assert caught.value.function == "ew_kernel_create" and caught.value.status == ew.Status.INVALID_VALUE
    assert "error" in message and "source(2)" in message and "undefined_name" in message, message

    add = kernels(ADD_SOURCE, D.F32, (D.F32, D.F32))
    a = torch.ones(64, device="cuda")
    with pytest.raises(ValueError, match="in1 is F16"):
        add(a, a.half(), out=torch.empty_like(a))
    with pytest.raises(ValueError, match="out is F16"):
        add(a, a, out=a.half())
    with pytest.raises(ValueError, match="does not broadcast to out's shape"):
        add(a[::2], a[:16], out=torch.empty(32, device="cuda"))
    with pytest.raises(ValueError, match="do not broadcast together"):
        add(a, a[:16])
    with pytest.raises(ew.ElementwiseError, match="would share an address"):
        add(a, a, out=torch.empty(1, 64, device="cuda").expand(4, 64))
    with pytest.raises(TypeError, match="takes 2 inputs"):
        add(a)


def test_a_kernel_on_cupy_arrays(cupy, kernels):
    add = kernels(ADD_SOURCE, D.F32, (D.F32, D.F32))
    a = cupy.random.standard_normal(N + 1, dtype=cupy.float32)[1:]
    b = cupy.random.standard_normal(N, dtype=cupy.float32)
    out = cupy.empty_like(b)
    assert add(a, b, out=out) is out
    want = ew.add(a, b)
    assert bool((out.view(cupy.uint32) == want.view(cupy.uint32)).all())
    chain = kernels(CHAIN_SOURCE, D.F16, (D.F32, D.F32), 1)
    made = chain(a, b, params=(1.5,))
    assert isinstance(made, cupy.ndarray) and made.dtype == cupy.float16 and made.shape == b.shape
    step = ew.scale_add(1.5, a, b)
    want = ew.cast(ew.relu(step, out=step), "f16")
    assert bool((made.view(cupy.uint16) == want.view(cupy.uint16)).all())


# ---- Kernel on strided and broadcast views: ew_kernel_launch_strided ----

REDUCTIONS = {"abs_max": lambda x: x.abs().max(), "max": lambda x: x.max(), "min": lambda x: x.min(),
              "sum": lambda x: x.sum()}


def reduction_kernel(handle, source, reduce, reduce_dtype, out_dtype=D.F32, in_dtypes=(D.BF16,)):
    try:
        return ew.Kernel(source, out_dtype, in_dtypes, reduce=reduce, reduce_dtype=reduce_dtype, handle=handle)
    except ew.ElementwiseError as error:
        if error.status == ew.Status.NOT_SUPPORTED:
            unavailable("kernels cannot be compiled here: " + error.message)
        raise


@pytest.mark.parametrize("reduce", sorted(REDUCTIONS))
@pytest.mark.parametrize("reduce_dtype", [D.F32, D.F64], ids=names)
def test_a_cast_with_a_reduction_output_matches_torch(torch, handle, reduce, reduce_dtype):
    x = scaled_input(torch, D.BF16, 230, finite=True)[1:]  # misaligned against out
    wide = torch.float64 if reduce_dtype == D.F64 else torch.float32
    want = REDUCTIONS[reduce](x.double()).to(wide)
    with reduction_kernel(handle, "out0 = in0; out1 = in0;", reduce, reduce_dtype) as kernel:
        out, scalar = kernel(x)
        assert scalar.dtype == wide and scalar.shape == ()
        assert_same_bits(torch, out, ew.cast(x, "f32"), [x], "cast with %s" % reduce)
        if reduce == "sum":  # blocks add in an order of their own: within rounding of the exact sum
            tolerance = 1e-12 if reduce_dtype == D.F64 else 1e-5
            assert abs(float(scalar) - float(want)) <= tolerance * float(x.double().abs().sum())
        else:  # exact and deterministic
            assert_same_bits(torch, scalar.reshape(1), want.reshape(1), [], "%s into %s" % (reduce, wide))
        # Accumulating the same values again: max, min and abs max stay; the sum doubles.
        again = kernel(x, out=(out, scalar), accumulate=True)
        assert again[0] is out and again[1] is scalar
        if reduce != "sum":
            assert_same_bits(torch, scalar.reshape(1), want.reshape(1), [], "%s accumulated" % reduce)
        else:
            assert abs(float(scalar) - 2 * float(want)) <= 1e-4 * float(x.double().abs().sum())


def test_a_reduction_over_what_the_body_assigns(torch, handle):
    x = scaled_input(torch, D.F32, 231, finite=True)
    with reduction_kernel(handle, "out0 = ew::relu(in0); if (in0 > 0) out1 = in0;", "min", D.F32,
                          in_dtypes=(D.F32,)) as kernel:
        out, scalar = kernel(x)
        assert_same_bits(torch, out, ew.relu(x), [x], "relu with the min of the positive elements")
        assert float(scalar) == float(x[x > 0].min())
        out, scalar = kernel(-x.abs())  # no element assigns out1: the min over nothing
        assert float(scalar) == float("inf")
        empty = torch.empty(0, dtype=torch.float32, device="cuda")
        scalar.fill_(7.0)
        kernel(empty, out=(empty, scalar))
        assert float(scalar) == float("inf")  # overwritten with the value over nothing
        # on views: a transposed matrix, and a row broadcast over rows, each element reduced once
        m = x[:64 * 60].reshape(64, 60)
        out, scalar = kernel(m.t())
        assert_same_bits(torch, out, ew.relu(m.t().contiguous()), [m], "relu of a transposed input")
        assert float(scalar) == float(m[m > 0].min())
        with reduction_kernel(handle, "out0 = in0; out1 = in0;", "sum", D.F64, in_dtypes=(D.F32,)) as total:
            row = m[0]
            out = torch.empty(64, 60, dtype=torch.float32, device="cuda")
            _, scalar = total(row, out=(out, None))
            want = 64 * row.double().sum()
            assert abs(float(scalar) - float(want)) <= 1e-12 * 64 * float(row.double().abs().sum())


# ---- Kernel of several arrays: out_dtype a sequence, ew_kernel_launch_outputs ----

SUM_PRODUCT = "out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);"


def outputs_kernel(handle, source, out_dtype, in_dtypes, **kw):
    try:
        return ew.Kernel(source, out_dtype, in_dtypes, handle=handle, **kw)
    except ew.ElementwiseError as error:
        if error.status == ew.Status.NOT_SUPPORTED and "NVRTC" in error.message:
            unavailable("kernels cannot be compiled here: " + error.message)
        raise


@pytest.mark.parametrize("layout", ["aligned", "misaligned"])
@pytest.mark.parametrize("n", KERNEL_SIZES)
def test_a_sum_and_a_product_in_one_pass_match_torch_bit_for_bit(torch, handle, n, layout):
    a_skip, b_skip, s_skip, p_skip = (1, 3, 2, 1) if layout == "misaligned" else (0, 0, 0, 0)
    a = random_tensor(torch, D.F32, n + a_skip, 250)[a_skip:]
    b = random_tensor(torch, D.F32, n + b_skip, 251)[b_skip:]
    with outputs_kernel(handle, SUM_PRODUCT, ("f32", "f32"), ("f32", "f32")) as kernel:
        total, product = kernel(a, b)  # both made, by PyTorch
        for made in (total, product):
            assert isinstance(made, torch.Tensor) and made.dtype == torch.float32 and made.shape == a.shape
        what = "sum and product n=%d %s" % (n, layout)
        assert_matches_torch(torch, total, a + b, [a, b], what + ": the sum against torch")
        assert_matches_torch(torch, product, a * b, [a, b], what + ": the product against torch")
        assert_same_bits(torch, total, ew.add(a, b), [a, b], what + ": the sum against ew.add")
        assert_same_bits(torch, product, ew.mul(a, b), [a, b], what + ": the product against ew.mul")
        # Given outputs, at other alignments than the inputs' and each other's: the same bits, and
        # nothing written around them.
        given = (poisoned_view(torch, D.F32, n, before=s_skip, after=3),
                 poisoned_view(torch, D.F32, n, before=p_skip, after=5))
        result = kernel(a, b, out=given)
        assert type(result) is tuple and result[0] is given[0] and result[1] is given[1]
        assert_same_bits(torch, given[0], total, [a, b], what + ": given sum")
        assert_same_bits(torch, given[1], product, [a, b], what + ": given product")
        for out in given:
            assert_gaps_untouched(torch, out, what)
        # One given, one made.
        made, same = kernel(a, b, out=(None, given[1]))
        assert same is given[1]
        assert_same_bits(torch, made, total, [a, b], what + ": made beside a given one")


def test_outputs_of_mixed_dtypes_match_torch(torch, handle):
    a = random_tensor(torch, D.F32, N + 1, 260)[1:]
    b = random_tensor(torch, D.F32, N, 261)
    with outputs_kernel(handle, SUM_PRODUCT, ("f16", "f32"), ("f32", "f32")) as kernel:
        total, product = kernel(a, b)
        assert total.dtype == torch.float16 and product.dtype == torch.float32
        assert_matches_torch(torch, total, (a + b).half(), [a, b], "f16 sum of f32 inputs")
        assert_matches_torch(torch, product, a * b, [a, b], "f32 product")
        assert_same_bits(torch, total, ew.cast(ew.add(a, b), "f16"), [a, b], "f16 sum against add then cast")
        with pytest.raises(ValueError, match=r"out\[0\] is F32 but the kernel makes F16"):
            kernel(a, b, out=(product, total))


def test_three_arrays_and_an_abs_max_in_one_pass(torch, handle):
    x = scaled_input(torch, D.F32, 262, finite=True)[1:]
    source = "out0 = in0; out1 = ew::relu(in0); out2 = ew::mul(in0, in0); out3 = in0;"
    with outputs_kernel(handle, source, ("bf16", "f32", "f32"), ["f32"], reduce="abs_max") as kernel:
        low, relu, square, amax = kernel(x)
        assert (low.dtype, relu.dtype, square.dtype) == (torch.bfloat16, torch.float32, torch.float32)
        assert amax.dtype == torch.float32 and amax.shape == ()
        assert_matches_torch(torch, low, x.to(torch.bfloat16), [x], "bf16 cast")
        assert_same_bits(torch, relu, ew.relu(x), [x], "relu")
        assert_matches_torch(torch, square, x * x, [x], "square")
        assert_same_bits(torch, amax.reshape(1), x.abs().max().reshape(1), [], "abs max")
        # Given outputs, accumulating a smaller input: the abs max stays, the arrays are the new ones.
        half = x * 0.5
        result = kernel(half, out=(low, relu, square, amax), accumulate=True)
        assert all(got is want for got, want in zip(result, (low, relu, square, amax)))
        assert_same_bits(torch, relu, ew.relu(half), [half], "relu, accumulated call")
        assert_same_bits(torch, amax.reshape(1), x.abs().max().reshape(1), [], "abs max accumulated")
        kernel(half, out=(low, relu, square, amax))  # overwritten
        assert_same_bits(torch, amax.reshape(1), half.abs().max().reshape(1), [], "abs max overwritten")
        # The scalar may lie inside no array: the library's refusal, with its message.
        with pytest.raises(ew.ElementwiseError) as caught:
            kernel(x, out=(low, relu, square, relu[5:6]))
        assert caught.value.status == ew.Status.INVALID_VALUE and "lies inside" in caught.value.message


def test_outputs_in_place_on_their_inputs(torch, handle):
    a = random_tensor(torch, D.F32, N, 270)
    b = random_tensor(torch, D.F32, N, 271)
    want = (ew.add(a, b), ew.mul(a, b))
    with outputs_kernel(handle, SUM_PRODUCT, ("f32", "f32"), ("f32", "f32")) as kernel:
        result = kernel(a, b, out=(a, b))  # each array exactly on an input: in place
        assert result[0] is a and result[1] is b
        assert_same_bits(torch, a, want[0], [], "the sum in place of a")
        assert_same_bits(torch, b, want[1], [], "the product in place of b")


def test_several_arrays_on_views_and_the_library_refusing_overlaps(torch, handle):
    a = random_tensor(torch, D.F32, N, 280)
    b = random_tensor(torch, D.F32, N, 281)
    buffer = torch.empty(2 * N, device="cuda")
    with outputs_kernel(handle, SUM_PRODUCT, ("f32", "f32"), ("f32", "f32")) as kernel:
        for outs in ((buffer[:N], buffer[N // 2:N // 2 + N]), (buffer[:N], buffer[:N])):
            with pytest.raises(ew.ElementwiseError) as caught:
                kernel(a, b, out=outs)
            assert caught.value.status == ew.Status.INVALID_VALUE
            assert caught.value.function == "ew_kernel_launch_outputs" and caught.value.message
        # Views (transposed inputs, a broadcast row, a strided and a transposed array): the strided launch,
        # each array through its own strides, the same bits as the catalogue's strided add and mul.
        m = random_tensor(torch, D.F32, ROWS * COLUMNS, 282).view(COLUMNS, ROWS)
        row = b[:ROWS]
        out = (torch.empty(ROWS, COLUMNS, device="cuda"), torch.empty(ROWS, COLUMNS, device="cuda"))
        strided = torch.empty(ROWS, 2 * COLUMNS, device="cuda")[:, ::2]
        transposed = torch.empty(COLUMNS, ROWS, device="cuda").t()
        for inputs, outs in (((m.t(), m.t()), out), ((m, row), None), ((m.t().contiguous(), m.t()),
                                                                       (strided, transposed))):
            for array in outs or ():
                array.fill_(float("nan"))
            total, product = kernel(*inputs, out=outs)
            if outs is not None:
                assert total is outs[0] and product is outs[1]
            what = "views %s" % ([tuple(x.stride()) for x in inputs],)
            assert_same_bits(torch, total, ew.add(*inputs), list(inputs), what + ": the sum")
            assert_same_bits(torch, product, ew.mul(*inputs), list(inputs), what + ": the product")
        # Two arrays interleaved in one buffer: their spans meet, which the strided launch refuses.
        both = torch.empty(ROWS, 2 * COLUMNS, device="cuda")
        with pytest.raises(ew.ElementwiseError) as caught:
            kernel(m.t(), m.t(), out=(both[:, ::2], both[:, 1::2]))
        assert caught.value.status == ew.Status.INVALID_VALUE
        assert caught.value.function == "ew_kernel_launch_outputs_strided"
        assert "outputs must not share memory" in caught.value.message, caught.value.message


def test_several_arrays_on_cupy_arrays(cupy, handle):
    a = cupy.random.standard_normal(N + 1, dtype=cupy.float32)[1:]
    b = cupy.random.standard_normal(N, dtype=cupy.float32)
    source = SUM_PRODUCT + " out2 = ew::mul(in0, in1);"  # the max of the f32 products
    with outputs_kernel(handle, source, ("f32", "f16"), ("f32", "f32"), reduce="max") as kernel:
        total, product, largest = kernel(a, b)  # made by CuPy
        assert isinstance(total, cupy.ndarray) and total.dtype == cupy.float32 and product.dtype == cupy.float16
        assert largest.shape == () and largest.dtype == cupy.float32
        assert bool((total.view(cupy.uint32) == ew.add(a, b).view(cupy.uint32)).all())
        want = ew.cast(ew.mul(a, b), "f16")
        assert bool((product.view(cupy.uint16) == want.view(cupy.uint16)).all())
        assert float(largest) == float(ew.mul(a, b).max())


def filled(torch, dtype, shape, byte):
    """A contiguous tensor of ``shape`` whose every byte is ``byte``."""
    tensor = torch.empty(shape, dtype=torch_dtype(torch, dtype), device="cuda")
    tensor.view(torch.uint8).fill_(byte)
    return tensor


def assert_same_view_bits(torch, got, want, inputs, what):
    """assert_same_bits on N-d views: all flattened in got's index order, the inputs broadcast to
    got's shape first (copies made for the comparison only)."""
    flat = lambda t: t.expand(got.shape).contiguous().reshape(-1)  # noqa: E731
    assert tuple(got.shape) == tuple(want.shape), (what, got.shape, want.shape)
    assert_same_bits(torch, flat(got), flat(want), [flat(t) for t in inputs], what)


def assert_kernel_matches_flat_launch(torch, kernel, out, inputs, what, params=()):
    """out, written by a strided launch, bit for bit the same kernel's flat launch on contiguous
    copies of the inputs broadcast to out's shape. The flat launch's out is poisoned with other
    bytes (0xA5) than out's (0x5A), so an element neither launch wrote differs too."""
    copies = [t.expand(out.shape).contiguous() for t in inputs]
    want = filled(torch, kernel.out_dtype, tuple(out.shape), 0xA5)
    kernel(*copies, out=want, params=params)
    assert_same_view_bits(torch, out, want, copies, what)


@pytest.mark.parametrize("case", VIEW_CASES)
@pytest.mark.parametrize("dtype", [D.F32, D.F16, D.BF16, D.I8], ids=names)
def test_an_add_kernel_on_views_matches_the_strided_add_bit_for_bit(torch, kernels, dtype, case):
    add = kernels(ADD_SOURCE, dtype, (dtype, dtype))
    out, a, b = view_case(torch, dtype, case, 300)
    assert add(a, b, out=out) is out
    what = "kernel %s %s, %s" % (ADD_SOURCE, dtype.name, case)
    assert_kernel_matches_flat_launch(torch, add, out, [a, b], what)
    want = poisoned_base(torch, dtype, out.numel()).view(out.shape)
    ew.add(a, b, out=want)  # the catalogue's strided call
    assert_same_view_bits(torch, out, want, [a, b], what + " against ew.add")
    assert_gaps_untouched(torch, out, what)


def test_a_chain_kernel_on_a_transposed_input_and_a_broadcast_row(torch, kernels):
    chain = kernels(CHAIN_SOURCE, D.F16, (D.F32, D.F32), 1)
    a = random_tensor(torch, D.F32, ROWS * COLUMNS, 310).view(COLUMNS, ROWS).t()
    bias = random_tensor(torch, D.F32, COLUMNS, 311)
    out = poisoned_base(torch, D.F16, ROWS * COLUMNS).view(COLUMNS, ROWS).t()  # a transposed out as well
    chain(a, bias, out=out, params=(1.5,))
    assert_kernel_matches_flat_launch(torch, chain, out, [a, bias], "chain on a.t() and a row", params=(1.5,))
    assert_gaps_untouched(torch, out, "chain on a.t() and a row")
    column = random_tensor(torch, D.F32, ROWS, 312).view(ROWS, 1)
    made = chain(column, bias, params=(-0.5,))  # the inputs' broadcast shape
    assert made.shape == (ROWS, COLUMNS) and made.dtype == torch.float16
    assert_kernel_matches_flat_launch(torch, chain, made, [column, bias], "chain(column, row)",
                                      params=(-0.5,))


def test_a_ternary_kernel_with_mixed_broadcasting(torch, kernels):
    kernel = kernels("return ew::add(ew::mul(in0, in1), in2);", D.F16, (D.F16, D.F16, D.F16))
    a = random_tensor(torch, D.F16, 2 * ROWS * COLUMNS, 320).view(ROWS, 2 * COLUMNS)[:, 1::2]
    row = random_tensor(torch, D.F16, COLUMNS, 321)
    column = random_tensor(torch, D.F16, ROWS, 322).view(ROWS, 1)
    out = poisoned_base(torch, D.F16, ROWS * COLUMNS).view(ROWS, COLUMNS)
    kernel(a, row, column, out=out)
    assert_kernel_matches_flat_launch(torch, kernel, out, [a, row, column], "mul(a[:, 1::2], row) + column")
    want = ew.mul(a, row)
    ew.add(want, column, out=want)
    assert_same_view_bits(torch, out, want, [a, row, column], "mul then add, broadcast")


def test_a_four_input_kernel_with_mixed_broadcasting_in_three_dimensions(torch, kernels):
    source = "return ew::add(ew::mul(in0, in1), ew::scale_add(p0, in2, in3));"
    kernel = kernels(source, D.F32, (D.F32,) * 4, 1)
    shape = (3, ROWS, COLUMNS)
    permuted = random_tensor(torch, D.F32, 3 * ROWS * COLUMNS, 330).view(COLUMNS, 3, ROWS).permute(1, 2, 0)
    row = random_tensor(torch, D.F32, COLUMNS, 331)
    column = random_tensor(torch, D.F32, 3 * ROWS, 332).view(3, ROWS, 1)
    plane = random_tensor(torch, D.F32, 3, 333).view(3, 1, 1)
    out = poisoned_base(torch, D.F32, 3 * ROWS * COLUMNS).view(shape)
    kernel(permuted, row, column, plane, out=out, params=(0.75,))
    assert_kernel_matches_flat_launch(torch, kernel, out, [permuted, row, column, plane], "four inputs, 3-d",
                                      params=(0.75,))


def test_a_kernel_in_place_on_a_strided_view(torch, kernels):
    add = kernels(ADD_SOURCE, D.F32, (D.F32, D.F32))
    base = random_tensor(torch, D.F32, 2 * ROWS * COLUMNS, 340)
    x = base.view(ROWS, 2 * COLUMNS)[:, ::2]
    untouched = base.view(ROWS, 2 * COLUMNS)[:, 1::2].clone()
    bias = random_tensor(torch, D.F32, COLUMNS, 341)
    want = ew.add(x, bias)
    assert add(x, bias, out=x) is x  # out is in0
    assert_same_view_bits(torch, x, want, [bias], "in-place kernel on every other column")
    assert_same_view_bits(torch, base.view(ROWS, 2 * COLUMNS)[:, 1::2], untouched, [], "the columns between")


def test_a_kernel_out_overlapping_a_strided_input_is_refused_by_the_library(torch, kernels):
    add = kernels(ADD_SOURCE, D.F32, (D.F32, D.F32))
    base = torch.zeros(2 * 4099, device="cuda")
    with pytest.raises(ew.ElementwiseError) as caught:
        add(base[0:8198:2], base[0:8198:2], out=base[1:4100])
    assert caught.value.status == ew.Status.INVALID_VALUE and caught.value.function == "ew_kernel_launch_strided"


def cupy_filled(cupy, shape, byte):
    array = cupy.empty(shape, dtype=cupy.float32)
    array.view(cupy.uint8).fill(byte)
    return array


def test_a_kernel_on_negative_stride_views(cupy, kernels):
    add = kernels(ADD_SOURCE, D.F32, (D.F32, D.F32))
    a = cupy.random.standard_normal((ROWS, COLUMNS), dtype=cupy.float32)
    b = cupy.random.standard_normal((ROWS, 2 * COLUMNS), dtype=cupy.float32)
    bias = cupy.random.standard_normal(COLUMNS, dtype=cupy.float32)
    cases = {"both reversed, out rows reversed": (cupy_filled(cupy, (ROWS, COLUMNS), 0x5A)[::-1], a[::-1, ::-1],
                                                  b[:, ::-2]),
             "reversed row broadcast": (cupy_filled(cupy, (ROWS, COLUMNS), 0x5A), a, bias[::-1])}
    for what, (out, x, y) in cases.items():
        assert add(x, y, out=out) is out
        got = cupy.ascontiguousarray(out).view(cupy.uint32)
        want = cupy_filled(cupy, (ROWS, COLUMNS), 0xA5)
        add(cupy.ascontiguousarray(x), cupy.ascontiguousarray(cupy.broadcast_to(y, (ROWS, COLUMNS))), out=want)
        assert bool((got == want.view(cupy.uint32)).all()), what + ": the strided and the flat launch differ"
        catalogue = cupy.ascontiguousarray(ew.add(x, y))
        assert bool((got == catalogue.view(cupy.uint32)).all()), what + ": the kernel and ew.add differ"


def test_compiled_kernels_are_cached_on_disk(handle, kernels, tmp_path):
    kernels(ADD_SOURCE, D.F32, (D.F32, D.F32))  # gives up here, as the others do, without NVRTC
    cache = tmp_path / "cache"
    code = ("import elementwise as ew\n"
            "with ew.Kernel('return ew::mul(in0, in1);', 'f32', ('f32', 'f32')):\n"
            "    pass\n"
            "counts = ew.kernel_cache_counts()\n"
            "print(counts['disk_hits'], counts['compiles'], counts['memory_hits'], counts['store_failures'])\n")
    env = dict(os.environ, EW_KERNEL_CACHE_DIR=str(cache))
    env.pop("EW_KERNEL_CACHE", None)
    if not INSTALLED:
        env["PYTHONPATH"] = PACKAGE_DIR

    def run(counts, **more):
        ran = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=dict(env, **more),
                             capture_output=True, text=True)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.split() == counts.split(), "disk hits, compiles, memory hits, store failures"
        return sorted(str(path.relative_to(cache)) for path in cache.rglob("*.ewk")) if cache.exists() else []

    first = run("0 1 0 0")
    assert first, "the first process left no .ewk file in %s" % cache
    assert run("1 0 0 0") == first  # the second found it: nothing new written
    # and so does a process that cannot open NVRTC, as on a machine the cache was copied to
    assert run("1 0 0 0", EW_NVRTC_LIBRARY="/nonexistent/libnvrtc.so.99") == first


def test_a_filled_cache_serves_a_process_without_nvrtc(cupy, kernels, tmp_path, monkeypatch):
    kernels(ADD_SOURCE, D.F32, (D.F32, D.F32))  # gives up here, as the others do, without NVRTC
    cache = tmp_path / "cache"
    source = "return ew::mul(in0, in1); // filled %d" % os.getpid()
    monkeypatch.setenv("EW_KERNEL_CACHE_DIR", str(cache))
    monkeypatch.delenv("EW_KERNEL_CACHE", raising=False)
    # the architecture as the library names the device: "sm_" and the compute capability's digits
    ew.kernel_cache_fill(source, "f32", ("f32", "f32"), arch="sm_" + cupy.cuda.Device().compute_capability)
    filled = sorted(path.name for path in cache.glob("*.ewk"))
    assert len(filled) == 5  # the flat, shifted, bulk, strided and lists' programs
    code = ("import elementwise as ew\n"
            "with ew.Kernel(%r, 'f32', ('f32', 'f32')):\n"
            "    pass\n"
            "counts = ew.kernel_cache_counts()\n"
            "print(counts['disk_hits'], counts['compiles'])\n" % source)
    env = dict(os.environ, EW_NVRTC_LIBRARY="/nonexistent/libnvrtc.so.99")
    if not INSTALLED:
        env["PYTHONPATH"] = PACKAGE_DIR
    ran = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["1", "0"]  # the flat program from disk; nothing compiled
    assert sorted(path.name for path in cache.glob("*.ewk")) == filled


# ---- Kernel over tensor lists: Kernel.batched, ew_kernel_launch_batched ----

BATCHED_SIZES = [4099, 0, 1, 33, 100_003, 257, (1 << 16) + 7]


def batched_inputs(torch, sizes, seed):
    """A list of f32 tensors of random bits, of these sizes; every third one, from the third, a view starting
    one element into its storage (t[1:]), so the entries start at several alignments."""
    skips = [int(i % 3 == 2) for i in range(len(sizes))]
    return [random_tensor(torch, D.F32, n + skip, seed + i)[skip:] for i, (n, skip) in enumerate(zip(sizes, skips))]


def test_a_sum_and_a_product_over_a_list_match_torch_per_tensor_bit_for_bit(torch, handle):
    as_, bs = batched_inputs(torch, BATCHED_SIZES, 400), batched_inputs(torch, BATCHED_SIZES, 420)
    with outputs_kernel(handle, SUM_PRODUCT, ("f32", "f32"), ("f32", "f32")) as kernel:
        totals, products = kernel.batched(as_, bs)  # every output made, by PyTorch
        assert len(totals) == len(products) == len(BATCHED_SIZES)
        for i, (total, product, a, b) in enumerate(zip(totals, products, as_, bs)):
            assert total.shape == a.shape and total.dtype == torch.float32 and product.shape == a.shape
            assert_matches_torch(torch, total, torch.add(a, b), [a, b], "batched sum [%d] n=%d" % (i, a.numel()))
            assert_matches_torch(torch, product, torch.mul(a, b), [a, b], "batched product [%d]" % i)
        # Given outputs at other alignments than the inputs' and each other's: the same bits, nothing written
        # around them; the lists returned are of the given tensors.
        given = ([poisoned_view(torch, D.F32, a.numel(), before=i % 3, after=2) for i, a in enumerate(as_)],
                 [poisoned_view(torch, D.F32, a.numel(), before=(i + 1) % 4, after=3) for i, a in enumerate(as_)])
        result = kernel.batched(as_, bs, out=given)
        assert type(result) is tuple and all(r is g for r, g in zip(result[0] + result[1], given[0] + given[1]))
        for i in range(len(as_)):
            assert_same_bits(torch, given[0][i], totals[i], [as_[i], bs[i]], "given sum [%d]" % i)
            assert_same_bits(torch, given[1][i], products[i], [as_[i], bs[i]], "given product [%d]" % i)
            assert_gaps_untouched(torch, given[0][i], "given sum [%d]" % i)
            assert_gaps_untouched(torch, given[1][i], "given product [%d]" % i)
        # In place, each output exactly its entry's input.
        a_copies, b_copies = [a.clone() for a in as_], [b.clone() for b in bs]
        kernel.batched(a_copies, b_copies, out=(a_copies, b_copies))
        for i in range(len(as_)):
            assert_same_bits(torch, a_copies[i], totals[i], [], "the sum in place [%d]" % i)
            assert_same_bits(torch, b_copies[i], products[i], [], "the product in place [%d]" % i)
    # A kernel of one output takes and returns a list.
    with outputs_kernel(handle, "return ew::add(in0, in1);", "f32", ("f32", "f32")) as add:
        outs = [torch.empty_like(a) for a in as_]
        assert add.batched(as_, bs, out=outs) == outs
        for i in range(len(as_)):
            assert_same_bits(torch, outs[i], totals[i], [as_[i], bs[i]], "one output [%d]" % i)
        assert add.batched([], []) == []


def test_entry_params_give_each_entry_its_own_parameters(torch, handle):
    generator = torch.Generator(device="cuda").manual_seed(440)
    xs = [torch.randn(n, device="cuda", generator=generator) for n in BATCHED_SIZES]
    xs[2] = torch.randn(BATCHED_SIZES[2] + 1, device="cuda", generator=generator)[1:]
    with outputs_kernel(handle, "return in0 * p0;", "f32", ("f32",), n_params=1) as scale:
        # Computed on the stream just before the call: the launch reads them on the GPU, in stream order.
        factors = torch.arange(len(xs), dtype=torch.float64, device="cuda") * 0.37 - 1.1
        made = scale.batched(xs, entry_params=factors)
        for i, (out, x) in enumerate(zip(made, xs)):
            want = (x.double() * factors[i]).float()
            assert_same_bits(torch, out, want, [x], "entry %d times its own p0" % i)
        # A (count, n_params) table does as well; params= gives every entry the same.
        scale.batched(xs, out=made, entry_params=factors.view(-1, 1) * 2)
        for i, (out, x) in enumerate(zip(made, xs)):
            assert_same_bits(torch, out, (x.double() * (factors[i] * 2)).float(), [x], "entry %d, table" % i)
        scale.batched(xs, out=made, params=(0.3,))
        for i, (out, x) in enumerate(zip(made, xs)):
            assert_same_bits(torch, out, (x.double() * 0.3).float(), [x], "entry %d, params" % i)
        with pytest.raises(TypeError, match="not both"):
            scale.batched(xs, params=(0.3,), entry_params=factors)
        with pytest.raises(TypeError, match="must be a float64 array"):
            scale.batched(xs, entry_params=factors.float())
        with pytest.raises(ValueError, match="has 3 values but 7 entries of 1 params take 7"):
            scale.batched(xs, entry_params=factors[:3])


ADAMW_SOURCE = """
double g = in1, m = p1 * in2 + (1.0 - p1) * g, v = p2 * in3 + (1.0 - p2) * g * g;
double param = in0 * (1.0 - p0 * p4);
param -= p0 / p5 * m / (sqrt(v) / p6 + p3);
out0 = param; out1 = m; out2 = v;
"""


def adamw_params(lr, beta1, beta2, eps, weight_decay, step):
    """The AdamW body's p0 ... p6: lr, beta1, beta2, eps, weight_decay, 1 - beta1^t, sqrt(1 - beta2^t)."""
    return (lr, beta1, beta2, eps, weight_decay, 1 - beta1 ** step, (1 - beta2 ** step) ** 0.5)


def adamw_reference(torch, p, g, m, v, params):
    """One AdamW step in float64 (torch), from float32 tensors: (param, exp_avg, exp_avg_sq)."""
    lr, beta1, beta2, eps, weight_decay, correction1, correction2_sqrt = params
    p, g, m, v = (t.double() for t in (p, g, m, v))
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    param = p * (1.0 - lr * weight_decay)
    param = param - lr / correction1 * m / (v.sqrt() / correction2_sqrt + eps)
    return param, m, v


def ulp_distance(torch, got, want):
    """|got - want| in units in the last place of float32, got float32, want float64 rounded to float32:
    the bits as int32, mapped onto one monotonic integer line (-0 and +0 alike)."""
    def line(t):
        raw = t.contiguous().view(torch.int32).long()
        return torch.where(raw < 0, -(raw & 0x7FFFFFFF), raw)
    return (line(got) - line(want.float())).abs()


def test_an_adamw_step_over_a_list_is_within_2_ulp_of_float64(torch, handle):
    generator = torch.Generator(device="cuda").manual_seed(460)
    sizes = [1, 7, 1000, 4099, 0, 100_003, (1 << 16) + 1]
    draw = lambda n, scale=1.0: torch.randn(n, device="cuda", generator=generator) * scale  # noqa: E731
    ps = [draw(n) for n in sizes]
    ps[2] = draw(sizes[2] + 1)[1:]  # a view one element into its storage
    gs = [draw(n, 0.1) for n in sizes]
    ms = [draw(n, 0.01) for n in sizes]
    vs = [draw(n, 0.001).abs() for n in sizes]
    before = [tuple(t.clone() for t in entry) for entry in zip(ps, gs, ms, vs)]
    params = adamw_params(1e-3, 0.9, 0.999, 1e-8, 0.01, 10)
    with outputs_kernel(handle, ADAMW_SOURCE, ("f32",) * 3, ("f32",) * 4, n_params=7) as step:
        result = step.batched(ps, gs, ms, vs, out=(ps, ms, vs), params=params)  # in place
        assert all(got is want for got, want in zip(result[0] + result[1] + result[2], ps + ms + vs))
        for i, (p, g, m, v) in enumerate(before):
            for name, got, want in zip(("param", "exp_avg", "exp_avg_sq"), (ps[i], ms[i], vs[i]),
                                       adamw_reference(torch, p, g, m, v, params)):
                if got.numel():
                    worst = int(ulp_distance(torch, got, want).max())
                    assert worst <= 2, "AdamW %s [%d] n=%d: %d ulp from float64" % (name, i, got.numel(), worst)
        # Each entry its own learning rate and step, from a (count, 7) float64 table on the device.
        table = [adamw_params(1e-3 * (i + 1), 0.9, 0.999, 1e-8, 0.01, 3 + i) for i in range(len(sizes))]
        for i, entry in enumerate(before):
            for t, saved in zip((ps[i], gs[i], ms[i], vs[i]), entry):
                t.copy_(saved)
        step.batched(ps, gs, ms, vs, out=(ps, ms, vs),
                     entry_params=torch.tensor(table, dtype=torch.float64, device="cuda"))
        for i, (p, g, m, v) in enumerate(before):
            for name, got, want in zip(("param", "exp_avg", "exp_avg_sq"), (ps[i], ms[i], vs[i]),
                                       adamw_reference(torch, p, g, m, v, table[i])):
                if got.numel():
                    worst = int(ulp_distance(torch, got, want).max())
                    assert worst <= 2, "AdamW (entry_params) %s [%d]: %d ulp from float64" % (name, i, worst)


def test_list_launches_refuse_views(torch, handle):
    a = torch.ones(64, device="cuda")
    with outputs_kernel(handle, SUM_PRODUCT, ("f32", "f32"), ("f32", "f32")) as kernel:
        with pytest.raises(ValueError, match=r"in0\[1\] is not contiguous"):
            kernel.batched([a, a[::2]], [a, a[:32]])
        with pytest.raises(ValueError, match=r"in1\[0\] has shape \(32,\) but in0\[0\] has \(64,\); list entries "
                                             r"are not broadcast"):
            kernel.batched([a], [a[:32]])


def test_a_reduction_over_a_list_gives_each_entry_its_scalar_or_one_for_all(torch, handle):
    xs = batched_inputs(torch, BATCHED_SIZES, 440)
    xs = [torch.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0).clamp(-1e30, 1e30) for x in xs]
    with reduction_kernel(handle, "out0 = in0; out1 = in0;", "abs_max", D.F32, in_dtypes=(D.F32,)) as amax:
        outs, scalars = amax.batched(xs)  # per-tensor amax, each made, overwritten
        torch.cuda.synchronize()
        for i, (x, out, scalar) in enumerate(zip(xs, outs, scalars)):
            assert torch.equal(out, x), "entry %d's array" % i
            want = x.abs().max() if x.numel() else torch.zeros((), device="cuda")
            assert scalar.reshape(()).item() == want.item(), "entry %d's amax" % i
        poisoned = [torch.full((), float("nan"), device="cuda") for _ in xs]
        amax.batched(xs, out=(None, poisoned))  # overwrite: the empty entry's scalar is 0 too
        amax.batched(xs, out=(None, poisoned), accumulate=True)  # onto itself: unchanged
        torch.cuda.synchronize()
        for i, (x, scalar) in enumerate(zip(xs, poisoned)):
            assert scalar.item() == (x.abs().max().item() if x.numel() else 0.0), "entry %d, accumulated" % i
    with reduction_kernel(handle, "out0 = in0; out1 = double(in0) * double(in0);", "sum", D.F64, in_dtypes=(D.F32,)) as squares:
        total = torch.full((), float("nan"), dtype=torch.float64, device="cuda")
        squares.batched(xs, out=(None, [total] * len(xs)))  # one scalar for the list: a global norm's square
        want = sum(float((x.double() ** 2).sum()) for x in xs)
        assert abs(total.item() - want) <= 1e-9 * want  # the order of a sum's adds is not fixed
        squares.batched(xs, out=(None, [total] * len(xs)), accumulate=True)
        assert abs(total.item() - 2 * want) <= 2e-9 * want
    for reduce, combine in (("max", torch.max), ("min", torch.min)):
        with reduction_kernel(handle, "out0 = in0; out1 = in0;", reduce, D.F32, in_dtypes=(D.F32,)) as kernel:
            one = torch.full((), float("nan"), device="cuda")
            kernel.batched(xs, out=(None, [one] * len(xs)))
            want = combine(torch.cat([x.flatten() for x in xs]))
            assert one.item() == want.item(), reduce


# ---- scaled casts (1.2): quantize, dequantize, amax against PyTorch ----

SCALED_SOURCES = (D.F16, D.BF16, D.F32, D.F64)


def special_values(torch, dtype):
    """inf, nan, signed zeros, values that saturate in either float8 and values near their limits."""
    values = [float("inf"), float("-inf"), float("nan"), -0.0, 0.0, 1e30, -1e30, 65504.0, -65504.0, 448.0, 449.0,
              464.0, -480.0, 57344.0, 61439.0, 61440.0, -1e5, 1.0, -1.5, 2.0 ** -9, 2.0 ** -17, 2.0 ** -20, 1e-30]
    return torch.tensor(values, dtype=torch.float64, device="cuda").to(torch_dtype(torch, dtype))


def scaled_input(torch, dtype, seed, finite=False):
    """Random bit patterns (NaN, inf, subnormals, extremes) then the special values; finite: normal
    samples of several magnitudes and the finite special values instead."""
    if finite:
        generator = torch.Generator(device="cuda").manual_seed(seed)
        wide = torch.randn(N, device="cuda", generator=generator, dtype=torch.float64)
        top = 11 if dtype == D.F16 else 20  # f16 stays finite: |randn| < 8, times 2^10 < 65504
        wide *= torch.exp2(torch.randint(-20, top, (N,), device="cuda", generator=generator).double())
        x = wide.to(torch_dtype(torch, dtype))
        special = special_values(torch, dtype)
        return torch.cat([x, special[special.double().isfinite()]])
    return torch.cat([random_tensor(torch, dtype, N, seed), special_values(torch, dtype)])


def device_scalar(torch, value, shape=()):
    return torch.full(shape, value, dtype=torch.float32, device="cuda")


def quantize_reference(torch, x, target, scale):
    fp8 = torch_dtype(torch, target)
    limit = torch.finfo(fp8).max
    return (x.to(torch.float32) * scale).clamp(-limit, limit).to(fp8)


def amax_reference(torch, x):
    return x.abs().max().float()


def assert_same_scalar(torch, got, want, what):
    """One float32 element each (any shape): NaN where want is NaN, else the same bits."""
    got, want = got.reshape(1), want.reshape(1).to(torch.float32)
    if bool(want.isnan()):
        assert bool(got.isnan()), "%s: got %r, want NaN" % (what, float(got))
    else:
        assert_same_bits(torch, got, want, [], what)


@pytest.mark.parametrize("scale_value", [1.0, 0.3, 1024.0, 2.0 ** -12])
@pytest.mark.parametrize("source", SCALED_SOURCES, ids=names)
@pytest.mark.parametrize("target", FLOAT8, ids=names)
def test_quantize_matches_torch(torch, handle, target, source, scale_value):
    x = scaled_input(torch, source, 400)
    scale = device_scalar(torch, scale_value)
    out = torch.empty(x.shape, dtype=torch_dtype(torch, target), device="cuda")
    bits(torch, out).fill_(0x5A)
    assert handle.quantize(x, target, scale, out=out) is out
    assert_matches_torch(torch, out, quantize_reference(torch, x, target, scale), [x],
                         "quantize %s -> %s, scale %r" % (source.name, target.name, scale_value))
    made = ew.quantize(x, torch_dtype(torch, target), device_scalar(torch, scale_value, (1,)))  # out=None, (1,)
    assert made.dtype == torch_dtype(torch, target) and made.shape == x.shape
    assert_same_bits(torch, made, out, [x], "quantize(out=None)")


@pytest.mark.parametrize("source", SCALED_SOURCES, ids=names)
def test_quantize_writes_amax_in_the_same_pass(torch, handle, source):
    x = scaled_input(torch, source, 410, finite=True)
    scale = device_scalar(torch, 0.5)
    amax = device_scalar(torch, -1.0)
    q = ew.quantize(x, "f8e4m3", scale, amax=amax)
    assert_matches_torch(torch, q, quantize_reference(torch, x, D.F8E4M3, scale), [x], "quantize with amax")
    want = amax_reference(torch, x)
    assert_same_scalar(torch, amax, want, "quantize's amax, %s" % source.name)
    # accumulate: the max with the old value, which wins when larger.
    big = device_scalar(torch, 3e38, (1,))
    ew.quantize(x, "f8e5m2", scale, amax=big, amax_mode="accumulate", out=torch.empty_like(q, dtype=torch.float8_e5m2))
    assert_same_scalar(torch, big, device_scalar(torch, 3e38), "amax accumulated below the old value")
    small = device_scalar(torch, 0.25)
    ew.quantize(x, "f8e4m3", scale, amax=small, amax_mode=ew.ReduceMode.ACCUMULATE, out=q)
    assert_same_scalar(torch, small, torch.maximum(want, device_scalar(torch, 0.25)), "accumulated amax")
    # a NaN anywhere makes amax NaN; the overwriting mode forgets the old value
    nan = torch.cat([x, torch.tensor([float("nan")], device="cuda").to(x.dtype)])
    ew.quantize(nan, "f8e4m3", scale, amax=amax)
    assert bool(amax.isnan())
    ew.quantize(x, "f8e4m3", scale, amax=amax, amax_mode="overwrite")
    assert_same_scalar(torch, amax, want, "overwritten amax")


@pytest.mark.parametrize("scale_value", [1.0, 0.3, 2.0 ** 20])
@pytest.mark.parametrize("target", SCALED_SOURCES, ids=names)
@pytest.mark.parametrize("source", FLOAT8, ids=names)
def test_dequantize_matches_torch(torch, handle, source, target, scale_value):
    q = random_tensor(torch, source, N, 420)  # every bit pattern, NaN included
    scale_inv = device_scalar(torch, scale_value)
    out = torch.empty(N, dtype=torch_dtype(torch, target), device="cuda")
    assert handle.dequantize(q, target, scale_inv, out=out) is out
    want = (q.to(torch.float32) * scale_inv).to(torch_dtype(torch, target))
    assert_matches_torch(torch, out, want, [q], "dequantize %s -> %s, scale_inv %r" % (source.name, target.name,
                                                                                      scale_value))
    made = ew.dequantize(q, torch_dtype(torch, target), device_scalar(torch, scale_value, (1,)))
    assert made.dtype == torch_dtype(torch, target)
    assert_same_bits(torch, made, out, [q], "dequantize(out=None)")


@pytest.mark.parametrize("source", SCALED_SOURCES, ids=names)
def test_amax_matches_torch(torch, handle, source):
    x = scaled_input(torch, source, 430, finite=True)
    made = ew.amax(x)
    assert made.shape == () and made.dtype == torch.float32 and made.device == x.device
    assert_same_scalar(torch, made, amax_reference(torch, x), "amax %s" % source.name)
    out = device_scalar(torch, 7.0, (1,))
    assert handle.amax(x, out=out) is out
    assert_same_scalar(torch, out, amax_reference(torch, x), "amax into a (1,) out")
    # accumulate onto an old value: the larger wins; a negative old value counts as below every result.
    for old in (1e38, 0.5, -5.0, 0.0):
        running = device_scalar(torch, old)
        ew.amax(x, out=running, accumulate=True)
        want = amax_reference(torch, x) if old < 0 else torch.maximum(amax_reference(torch, x),
                                                                      device_scalar(torch, old))
        assert_same_scalar(torch, running, want, "amax accumulated onto %r" % old)
    # specials: NaN gives NaN, -0.0 alone gives +0.0, inf gives inf, nothing gives 0
    with_nan = scaled_input(torch, source, 431)
    assert bool(amax_reference(torch, with_nan).isnan())
    assert_same_scalar(torch, ew.amax(with_nan), amax_reference(torch, with_nan), "amax with NaN")
    zeros = torch.full((33,), -0.0, device="cuda").to(torch_dtype(torch, source))
    assert_same_scalar(torch, ew.amax(zeros), amax_reference(torch, zeros), "amax of -0.0")
    assert bits(torch, ew.amax(zeros).reshape(1)).item() == 0
    infinite = torch.tensor([1.0, float("-inf")], device="cuda").to(torch_dtype(torch, source))
    assert_same_scalar(torch, ew.amax(infinite), amax_reference(torch, infinite), "amax with -inf")
    empty = device_scalar(torch, 5.0)
    ew.amax(torch.empty(0, device="cuda", dtype=torch_dtype(torch, source)), out=empty)
    assert bits(torch, empty.reshape(1)).item() == 0


@pytest.mark.parametrize("source", [D.F32, D.BF16], ids=names)
def test_scaled_casts_on_transposed_and_broadcast_views(torch, handle, source):
    scale = device_scalar(torch, 0.75)
    x = random_tensor(torch, source, ROWS * COLUMNS, 440).view(COLUMNS, ROWS).t()
    assert not x.is_contiguous()
    want = quantize_reference(torch, x, D.F8E5M2, scale)
    out = poisoned_base(torch, D.F8E5M2, ROWS * COLUMNS).view(ROWS, COLUMNS)  # contiguous out, transposed x
    amax = device_scalar(torch, 0.0)
    handle.quantize(x, "f8e5m2", scale, amax=amax, out=out)
    assert_view_matches(torch, out, want, [x], "quantize of a transposed %s" % source.name)
    assert_same_scalar(torch, amax, amax_reference(torch, x), "amax of the view")
    finite = x.nan_to_num(0.0)
    handle.quantize(finite, "f8e5m2", scale, amax=amax, out=out)
    assert_same_scalar(torch, amax, amax_reference(torch, finite), "amax of a finite view")
    made = ew.quantize(x, "f8e5m2", scale)  # out=None: x's layout
    assert made.stride() == x.stride()
    assert_view_matches(torch, made, want, [x], "quantize(out=None) of a transposed view")
    row = random_tensor(torch, source, COLUMNS, 441)
    out = poisoned_base(torch, D.F8E4M3, ROWS * COLUMNS).view(COLUMNS, ROWS).t()  # broadcast x, transposed out
    handle.quantize(row, "f8e4m3", scale, out=out)
    assert_view_matches(torch, out, quantize_reference(torch, row, D.F8E4M3, scale).expand(ROWS, COLUMNS), [row],
                        "quantize of a broadcast row")
    assert_gaps_untouched(torch, out, "quantize of a broadcast row")
    q = quantize_reference(torch, random_tensor(torch, source, ROWS * COLUMNS, 442), D.F8E4M3, scale)
    q = q.view(COLUMNS, ROWS).t()
    got = ew.dequantize(q, source, scale, out=torch.empty(ROWS, COLUMNS, dtype=torch_dtype(torch, source),
                                                          device="cuda"))
    want = (q.to(torch.float32) * scale).to(torch_dtype(torch, source))
    assert_view_matches(torch, got, want, [q], "dequantize of a transposed view")
    with pytest.raises(ValueError, match="not contiguous"):
        ew.amax(x)


def test_scaled_casts_refuse_bad_scalars_and_dtypes(torch, handle):
    x = torch.randn(64, device="cuda")
    scale = device_scalar(torch, 1.0)
    with pytest.raises(TypeError, match="scale is F64"):
        ew.quantize(x, "f8e4m3", scale.double())
    with pytest.raises(ValueError, match=r"scale has shape \(2,\)"):
        ew.quantize(x, "f8e4m3", torch.ones(2, device="cuda"))
    with pytest.raises(TypeError, match="scale: Tensor is a CPU array"):
        ew.quantize(x, "f8e4m3", torch.ones(()))
    with pytest.raises(TypeError, match="amax is F16"):
        ew.quantize(x, "f8e4m3", scale, amax=torch.zeros((), device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match="amax_mode"):
        ew.quantize(x, "f8e4m3", scale, amax=device_scalar(torch, 0.0), amax_mode="sum")
    elsewhere = ew.Handle._from_raw(handle._ptr, device=1)  # one GPU: a handle claiming device 1
    with pytest.raises(ValueError, match="is on device 0 but the call runs on device 1"):
        ew.quantize(x, "f8e4m3", scale, out=torch.empty(64, dtype=torch.float8_e4m3fn, device="cuda"),
                    handle=elsewhere)
    for call, function in ((lambda: ew.quantize(x, "f16", scale), "ew_quantize"),
                           (lambda: ew.quantize(x.int(), "f8e4m3", scale), "ew_quantize"),
                           (lambda: ew.dequantize(x, "f16", scale), "ew_dequantize"),
                           (lambda: ew.dequantize(x[::2], "f16", scale), "ew_dequantize_strided"),
                           (lambda: ew.amax(x.int()), "ew_amax")):
        with pytest.raises(ew.ElementwiseError) as caught:
            call()
        assert caught.value.status == ew.Status.NOT_SUPPORTED and caught.value.function == function
        assert caught.value.message == ew._last_error_message()
    with pytest.raises(ew.ElementwiseError) as caught:  # amax inside out: the library's overlap check
        out = torch.empty(64, dtype=torch.float8_e4m3fn, device="cuda")
        ew.quantize(x, "f8e4m3", scale, amax=out[:4].view(torch.float32), out=out)
    assert caught.value.status == ew.Status.INVALID_VALUE


def test_scaled_casts_on_cupy_arrays(cupy, torch, handle):
    x = cupy.random.standard_normal(N, dtype=cupy.float32) * 300
    scale = cupy.array([1.5], dtype=cupy.float32)
    amax = cupy.zeros((), dtype=cupy.float32)
    q = cupy.empty(N, dtype=cupy.uint8)  # CuPy has no float8: the dtype says what q holds
    assert ew.quantize(x, "f8e4m3", scale, amax=amax, out=q) is q
    made_amax = ew.amax(x)
    assert isinstance(made_amax, cupy.ndarray) and made_amax.shape == () and made_amax.dtype == cupy.float32
    back = ew.dequantize(q, "f32", scale, in_dtype="f8e4m3")
    assert isinstance(back, cupy.ndarray) and back.dtype == cupy.float32
    cupy.cuda.Device().synchronize()
    tx, tscale = torch.as_tensor(x, device="cuda"), torch.as_tensor(scale, device="cuda")
    tq = torch.as_tensor(q, device="cuda").view(torch.float8_e4m3fn)
    assert_same_bits(torch, tq, quantize_reference(torch, tx, D.F8E4M3, tscale), [tx], "quantize on CuPy")
    want_amax = amax_reference(torch, tx)
    assert_same_scalar(torch, torch.as_tensor(amax, device="cuda"), want_amax, "quantize's amax on CuPy")
    assert_same_scalar(torch, torch.as_tensor(made_amax, device="cuda"), want_amax, "amax on CuPy")
    assert_same_bits(torch, torch.as_tensor(back, device="cuda"), tq.to(torch.float32) * tscale, [tq],
                     "dequantize on CuPy")


# ---- scaled casts over lists (1.2): quantize_batched, dequantize_batched, amax_batched against the flat calls ----

LIST_SCALES = [1.0, 0.3, 1024.0, 2.0 ** -12, 0.75, 3.0]  # one per entry of LIST_SIZES
LIST_OLD_AMAXES = [1e38, 0.5, -5.0, 0.0, 3.0, 1e-3]  # above and below every entry's amax, and negative


def finite_list(torch, dtype, sizes, seed):
    """Normal samples of several magnitudes, a tensor a size, finite in every source dtype."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    top = 11 if dtype == D.F16 else 20  # f16 stays finite, as in scaled_input
    tensors = []
    for n in sizes:
        wide = torch.randn(n, device="cuda", generator=generator, dtype=torch.float64)
        wide *= torch.exp2(torch.randint(-20, top, (n,), device="cuda", generator=generator).double())
        tensors.append(wide.to(torch_dtype(torch, dtype)))
    return tensors


def list_column(torch, values):
    return torch.tensor(values, dtype=torch.float32, device="cuda")


@pytest.mark.parametrize("source", SCALED_SOURCES, ids=names)
@pytest.mark.parametrize("target", FLOAT8, ids=names)
def test_quantize_batched_matches_quantize_entry_by_entry(torch, handle, target, source):
    fp8 = torch_dtype(torch, target)
    scale = list_column(torch, LIST_SCALES)
    xs = [random_tensor(torch, source, n, 500 + i) for i, n in enumerate(LIST_SIZES)]  # NaN, inf, extremes
    outs = [torch.empty(x.shape, dtype=fp8, device="cuda") for x in xs]
    for out in outs:
        bits(torch, out).fill_(0x5A)
    amax = device_scalar(torch, -1.0, (len(xs),))
    result = handle.quantize_batched(xs, target, scale, amax=amax, outs=outs)
    assert type(result) is list and all(got is want for got, want in zip(result, outs))
    for i, x in enumerate(xs):
        want_amax = device_scalar(torch, 5.0)
        want = ew.quantize(x, target, scale[i:i + 1], amax=want_amax)
        what = "quantize_batched %s -> %s [%d]" % (source.name, target.name, i)
        assert_same_bits(torch, outs[i], want, [x], what)
        assert_same_bits(torch, amax[i:i + 1], want_amax.reshape(1), [], what + "'s amax")
    # finite inputs: made outs, one amax shared by the list, accumulated amaxes (a strided column too)
    xs = finite_list(torch, source, LIST_SIZES, 510)
    shared = device_scalar(torch, -1.0)
    made = ew.quantize_batched(xs, fp8, scale, amax=shared)
    assert [(m.dtype, m.shape) for m in made] == [(fp8, x.shape) for x in xs]
    for i, x in enumerate(xs):
        assert_same_bits(torch, made[i], ew.quantize(x, target, scale[i:i + 1]), [x], "made [%d]" % i)
    want_shared = torch.stack([ew.amax(x) for x in xs]).max()
    assert_same_scalar(torch, shared, want_shared, "the list's shared amax")
    assert_same_scalar(torch, shared, amax_reference(torch, torch.cat(xs)), "the list's amax against torch")
    history = torch.full((len(xs), 3), -7.0, device="cuda")
    history[:, 0] = list_column(torch, LIST_OLD_AMAXES)
    running = history[:, 0]  # a strided column: entry i's scalar 3 floats after entry i - 1's
    assert not running.is_contiguous()
    ew.quantize_batched(xs, target, scale, amax=running, amax_mode="accumulate", outs=made)
    for i, x in enumerate(xs):
        want = list_column(torch, LIST_OLD_AMAXES[i:i + 1])
        ew.quantize(x, target, scale[i:i + 1], amax=want, amax_mode="accumulate")
        assert_same_bits(torch, history[i, 0].reshape(1), want, [], "accumulated amax [%d]" % i)
    assert bool((history[:, 1:] == -7.0).all()), "the column's neighbours were written"
    for old in (3e38, 0.25):
        one = device_scalar(torch, old, (1,))
        handle.quantize_batched(xs, target, scale, amax=one, amax_mode=ew.ReduceMode.ACCUMULATE, outs=made)
        assert_same_scalar(torch, one, torch.maximum(want_shared, device_scalar(torch, old)),
                           "shared amax accumulated onto %r" % old)


@pytest.mark.parametrize("target", SCALED_SOURCES, ids=names)
@pytest.mark.parametrize("source", FLOAT8, ids=names)
def test_dequantize_batched_matches_dequantize_entry_by_entry(torch, handle, source, target):
    wide = torch_dtype(torch, target)
    scale_inv = list_column(torch, [1.0, 0.3, 2.0 ** 20, 2.0 ** -12, 0.75, 3.0])
    qs = [random_tensor(torch, source, n, 520 + i) for i, n in enumerate(LIST_SIZES)]  # every bit pattern
    outs = [torch.empty(q.shape, dtype=wide, device="cuda") for q in qs]
    for out in outs:
        bits(torch, out).fill_(0x5A)
    result = handle.dequantize_batched(qs, target, scale_inv, outs=outs)
    assert type(result) is list and all(got is want for got, want in zip(result, outs))
    for i, q in enumerate(qs):
        want = ew.dequantize(q, target, scale_inv[i:i + 1])
        assert_same_bits(torch, outs[i], want, [q], "dequantize_batched %s -> %s [%d]" % (source.name, target.name, i))
    made = ew.dequantize_batched(qs, wide, scale_inv)
    assert [(m.dtype, m.shape) for m in made] == [(wide, q.shape) for q in qs]
    for i, q in enumerate(qs):
        assert_same_bits(torch, made[i], outs[i], [q], "dequantize_batched(outs=None) [%d]" % i)


@pytest.mark.parametrize("source", SCALED_SOURCES, ids=names)
def test_amax_batched_matches_amax_entry_by_entry(torch, handle, source):
    xs = finite_list(torch, source, LIST_SIZES, 530)
    with_nan = torch.tensor([float("nan")], device="cuda").to(xs[3].dtype)
    xs[3] = torch.cat([xs[3][:-1], with_nan])  # one entry's amax NaN, the others' not
    made = ew.amax_batched(xs)
    assert made.shape == (len(xs),) and made.dtype == torch.float32 and made.device == xs[0].device
    for i, x in enumerate(xs):
        assert_same_bits(torch, made[i:i + 1], ew.amax(x).reshape(1), [], "amax_batched %s [%d]" % (source.name, i))
    assert bool(made[3].isnan()) and bits(torch, made[1:2]).item() == 0  # the NaN entry; the empty entry's 0
    out = device_scalar(torch, 7.0, (len(xs),))
    assert handle.amax_batched(xs, out=out) is out
    assert_same_bits(torch, out, made, [], "amax_batched into out")
    running = list_column(torch, LIST_OLD_AMAXES)
    ew.amax_batched(xs, out=running, accumulate=True)
    for i, x in enumerate(xs):
        want = list_column(torch, LIST_OLD_AMAXES[i:i + 1])
        ew.amax(x, out=want, accumulate=True)
        assert_same_bits(torch, running[i:i + 1], want, [], "amax_batched accumulated [%d]" % i)
    # one scalar shared by the list: the whole list's amax, overwritten (even from a poisoned value) or folded
    finite = [x.nan_to_num(0.0) for x in xs]
    want = amax_reference(torch, torch.cat(finite))
    shared = device_scalar(torch, float("nan"))
    assert ew.amax_batched(finite, out=shared) is shared
    assert_same_scalar(torch, shared, want, "the list's amax")
    assert_same_scalar(torch, shared, torch.stack([ew.amax(x) for x in finite]).max(), "the entries' max")
    for old in (3e38, 0.5, -5.0):
        one = device_scalar(torch, old, (1,))
        handle.amax_batched(finite, out=one, accumulate=True)
        expected = want if old < 0 else torch.maximum(want, device_scalar(torch, old))
        assert_same_scalar(torch, one, expected, "the list's amax accumulated onto %r" % old)
    shared = device_scalar(torch, 0.0)
    ew.amax_batched(xs, out=shared)
    assert bool(shared.isnan()), "a NaN in one entry makes the shared amax NaN"


def test_scaled_lists_refusals_on_the_gpu(torch, handle):
    xs = [torch.randn(64, device="cuda"), torch.randn(32, device="cuda")]
    scale = device_scalar(torch, 1.0, (2,))
    with pytest.raises(ValueError, match=r"xs\[1\] is not contiguous"):
        ew.quantize_batched([xs[0], xs[0][::2]], "f8e4m3", scale)
    with pytest.raises(ValueError, match=r"xs\[1\] is not contiguous"):
        ew.amax_batched([xs[0], xs[0][::2]])
    with pytest.raises(ValueError, match=r"scale has shape \(3,\)"):
        ew.quantize_batched(xs, "f8e4m3", device_scalar(torch, 1.0, (3,)))
    with pytest.raises(TypeError, match="scale is F64"):
        ew.quantize_batched(xs, "f8e4m3", scale.double())
    with pytest.raises(ValueError, match="scale is not contiguous"):
        ew.quantize_batched(xs, "f8e4m3", device_scalar(torch, 1.0, (4,))[::2])
    with pytest.raises(TypeError, match="scale: Tensor is a CPU array"):
        ew.quantize_batched(xs, "f8e4m3", torch.ones(2))
    with pytest.raises(ValueError, match=r"amax has shape \(3,\)"):
        ew.quantize_batched(xs, "f8e4m3", scale, amax=device_scalar(torch, 0.0, (3,)))
    with pytest.raises(ValueError, match=r"scale_inv has shape \(1,\)"):
        ew.dequantize_batched([q.to(torch.float8_e4m3fn) for q in xs], "f32", scale[:1])
    with pytest.raises(ValueError, match=r"out has shape \(3,\)"):
        ew.amax_batched(xs, out=device_scalar(torch, 0.0, (3,)))
    for call, function in ((lambda: ew.quantize_batched(xs, "f16", scale), "ew_quantize_batched"),
                           (lambda: ew.quantize_batched([x.int() for x in xs], "f8e4m3", scale), "ew_quantize_batched"),
                           (lambda: ew.dequantize_batched(xs, "f16", scale), "ew_dequantize_batched"),
                           (lambda: ew.amax_batched([x.int() for x in xs]), "ew_amax_batched")):
        with pytest.raises(ew.ElementwiseError) as caught:
            call()
        assert caught.value.status == ew.Status.NOT_SUPPORTED and caught.value.function == function
        assert caught.value.message == ew._last_error_message()
    assert ew.quantize_batched([], "f8e4m3", device_scalar(torch, 1.0, (0,))) == []
    kept = device_scalar(torch, 5.0)
    assert ew.amax_batched([], out=kept) is kept
