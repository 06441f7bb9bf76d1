# SPDX-License-Identifier: Apache-2.0
"""The binding without a GPU: import and library lookup, the compiled module's reading of arrays (the
CUDA array interface, DLPack capsules), dtypes and streams, broadcasting, outputs made for out=None,
tensor lists, the call shape (inputs first, out=; the deprecated output-first forms), the arguments
that reach each C function (through the module's recorder, which stands in for the library's
operation calls), its refusals, and the error path through the real library."""

import ctypes
import gc
import warnings
import math
import os
import re
import shutil
import subprocess
import sys
import types

import pytest

import elementwise as ew
from conftest import INSTALLED, PACKAGE_DIR, PYTHON_DIR, FakeArray

ROOT = os.path.dirname(PYTHON_DIR)
FLOAT8 = (ew.DType.F8E4M3, ew.DType.F8E5M2)  # quantize's targets
CAST_ONLY = FLOAT8 + (ew.DType.F8E8M0,)  # the 1-byte floats: no op but the cast takes them
BLOCK_DTYPES = (ew.DType.F4E2M1,)  # the block-scaled casts' alone: no catalogue op takes it
CATALOGUE_DTYPES = [dtype for dtype in ew.DType if dtype not in BLOCK_DTYPES]


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as cmake:
        match = re.search(r"project\(elementwise\s+VERSION\s+(\d+)\.(\d+)\.(\d+)", cmake.read())
    return tuple(int(part) for part in match.groups())


def run_python(code, cwd, **env_changes):
    """Run code in a fresh interpreter; cwd matters, since `python -c` imports from it first."""
    env = dict(os.environ) if INSTALLED else dict(os.environ, PYTHONPATH=PACKAGE_DIR)
    for name, value in env_changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True)


# ---- import and lookup ----

def test_import_loads_the_library_of_this_project():
    if "ELEMENTWISE_LIBRARY" in os.environ:
        assert os.path.samefile(ew.library_path, os.environ["ELEMENTWISE_LIBRARY"])
    assert ew.library_version() == project_version()


def test_a_wrong_ELEMENTWISE_LIBRARY_fails_the_import_and_names_the_path(tmp_path):
    missing = "/nonexistent/libelementwise.so.1"
    result = run_python("import elementwise", tmp_path, ELEMENTWISE_LIBRARY=missing)
    assert result.returncode != 0
    assert "ImportError" in result.stderr and missing in result.stderr


def test_a_copy_in_the_package_directory_is_found_without_the_variable(tmp_path):
    package = tmp_path / "elementwise"
    shutil.copytree(os.path.dirname(ew.__file__), package,
                    ignore=shutil.ignore_patterns("__pycache__", "libelementwise.so*"))
    shutil.copy(ew.library_path, package / "libelementwise.so.1")
    result = run_python("import elementwise; print(elementwise.library_path)", tmp_path,
                        ELEMENTWISE_LIBRARY=None, PYTHONPATH=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(package / "libelementwise.so.1")


@pytest.mark.skipif(not INSTALLED, reason="tests this checkout's python/, not an installed wheel")
def test_the_installed_wheel_carries_and_finds_its_own_library():
    package = os.path.dirname(os.path.abspath(ew.__file__))
    assert not package.startswith(PYTHON_DIR + os.sep), "the source tree was imported, not the wheel"
    assert "ELEMENTWISE_LIBRARY" not in os.environ
    assert ew.library_path == os.path.join(package, "libelementwise.so.1")
    assert not os.path.islink(ew.library_path)
    assert os.path.exists(os.path.join(package, "py.typed"))
    # The compiled module, for CPython's stable ABI: one file for every Python 3.10 and later.
    assert os.path.basename(ew._ext.__file__) == "_elementwise.abi3.so"
    assert os.path.dirname(ew._ext.__file__) == package
    # The installed distribution's version: the library's, as an index takes it (no local label).
    assert ew.__version__ == "%d.%d.%d" % project_version(), ew.__version__
    result = run_python("import elementwise as ew; print(ew.library_version())", "/", ELEMENTWISE_LIBRARY=None)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(project_version())


def test_help_shows_the_docstrings():
    assert "DLPack" in ew.__doc__ and "out=None" in ew.add.__doc__
    for function in (ew.add, ew.mul, ew.relu, ew.cast, ew.scale_add, ew.add_batched, ew.cast_batched,
                     ew.Handle.add, ew.Handle.binary, ew.Handle.binary_batched):
        assert function.__doc__ and function.__doc__.strip(), function.__name__


def test_the_calls_are_the_compiled_modules_own():
    # No Python between the caller and the C parsing: the host cost the issue measures.
    for name in ("add", "mul", "relu", "cast", "scale_add", "add_batched"):
        assert getattr(ew, name) is getattr(ew._ext, name)
        assert type(getattr(ew, name)).__name__ == "builtin_function_or_method"


def test_the_ctypes_binding_is_gone():
    import elementwise
    source = open(elementwise.__file__).read()
    assert "ctypes.CDLL(candidate" not in source and "_merge_dimensions" not in source


def test_importing_does_not_load_ctypes(tmp_path):
    result = run_python("import sys, elementwise; print('ctypes' in sys.modules)", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_free_threaded_python_gets_a_clear_import_error(tmp_path):
    # Simulated: the module's file is hidden and the build says Py_GIL_DISABLED, as a 3.13t's would.
    code = ("import sys, sysconfig; sysconfig.get_config_var = lambda name: 1 if name == 'Py_GIL_DISABLED' else None;"
            "sys.modules['elementwise._elementwise'] = None; import elementwise")
    result = run_python(code, tmp_path)
    assert result.returncode != 0 and "free-threaded" in result.stderr and "abi3" in result.stderr


# ---- the error path through the library ----

def test_creating_a_handle_without_a_gpu_raises_no_device_with_the_library_message():
    try:
        handle = ew.Handle(0)
    except ew.ElementwiseError as error:
        assert error.status == ew.Status.NO_DEVICE
        assert error.message and error.message == ew._last_error_message()
        assert "EW_ERROR_NO_DEVICE" in str(error) and error.message in str(error)
    else:
        handle.close()
        pytest.skip("a GPU is present, so the no-device path cannot be reached")


def calls(handle):
    """Every entry point, on fake arrays the library never touches."""
    a, b, out = FakeArray(), FakeArray(pointer=0x20000), FakeArray(pointer=0x30000)
    return {
        "add": lambda: handle.add(a, b, out=out), "mul": lambda: handle.mul(a, b, out=out),
        "relu": lambda: handle.relu(a, out=out), "cast": lambda: handle.cast(a, "f32", out=out),
        "scale_add": lambda: handle.scale_add(2.0, a, b, out=out),
        "unary": lambda: handle.unary(ew.Op.RELU, a, out=out),
        "binary": lambda: handle.binary(ew.Op.ADD, a, b, out=out),
        "add_batched": lambda: handle.add_batched([a], [b], outs=[out]),
        "module add": lambda: ew.add(a, b, out=out, handle=handle),
        "quantize": lambda: handle.quantize(a, "f8e4m3", FakeArray(shape=(), pointer=0x40000),
                                            out=FakeArray(typestr="|u1", pointer=0x30000)),
        "dequantize": lambda: handle.dequantize(FakeArray(typestr="|u1"), "f32", FakeArray(shape=(1,), pointer=0x40000),
                                                in_dtype="f8e5m2", out=out),
        "amax": lambda: handle.amax(a, out=FakeArray(shape=(), pointer=0x40000)),
        "quantize_batched": lambda: handle.quantize_batched([a], "f8e4m3", FakeArray(shape=(1,), pointer=0x40000),
                                                            outs=[FakeArray(typestr="|u1", pointer=0x30000)]),
        "dequantize_batched": lambda: handle.dequantize_batched([FakeArray(typestr="|u1")], "f32",
                                                                FakeArray(shape=(1,), pointer=0x40000),
                                                                in_dtype="f8e5m2", outs=[out]),
        "amax_batched": lambda: handle.amax_batched([a], out=FakeArray(shape=(1,), pointer=0x40000)),
        "quantize_blocks": lambda: handle.quantize_blocks(FakeArray(shape=(2, 32)), "f8e4m3",
                                                          out=FakeArray(shape=(2, 32), typestr="|u1", pointer=0x30000),
                                                          scales=FakeArray(shape=(2, 1), typestr="|u1", pointer=0x40000)),
        "dequantize_blocks": lambda: handle.dequantize_blocks(FakeArray(shape=(2, 8), typestr="|u1"),
                                                              FakeArray(shape=(2, 1), typestr="|u1", pointer=0x40000),
                                                              format="nvfp4", out=FakeArray(shape=(2, 16),
                                                                                            pointer=0x30000)),
    }


@pytest.mark.parametrize("entry", sorted(calls(None)))
def test_a_null_handle_raises_invalid_handle_from_every_entry_point(entry):
    with pytest.raises(ew.ElementwiseError) as caught:
        calls(ew.Handle._from_raw(None))[entry]()
    error = caught.value
    assert error.status == ew.Status.INVALID_HANDLE
    assert error.message and error.message == ew._last_error_message()
    assert "EW_ERROR_INVALID_HANDLE" in str(error)


def test_each_exception_carries_the_message_of_its_own_failure():
    with pytest.raises(ew.ElementwiseError) as null_handle:
        ew.Handle._from_raw(None).add(FakeArray(), FakeArray(), out=FakeArray())
    with pytest.raises(ew.ElementwiseError) as other:
        ew.Handle(-1)  # a different failure, no GPU needed
    assert other.value.message and other.value.message != null_handle.value.message
    with pytest.raises(ew.ElementwiseError) as again:
        ew.Handle._from_raw(None).add(FakeArray(), FakeArray(), out=FakeArray())
    assert again.value.message == null_handle.value.message


def test_a_closed_handle_is_refused_before_the_library():
    handle = ew.Handle._from_raw(None)
    handle.close()
    with pytest.raises(ValueError, match="closed"):
        handle.add(FakeArray(), FakeArray(), out=FakeArray())


# ---- the library's tables, seen through the binding ----

def test_is_supported_follows_the_catalogue():
    dtypes = CATALOGUE_DTYPES
    for dtype in BLOCK_DTYPES:  # the block calls' dtype is no op's
        for op in ew.Op:
            assert not any(ew.is_supported(op, dtype, other) or ew.is_supported(op, other, dtype) for other in ew.DType)
    for dtype in dtypes:
        assert ew.is_supported(ew.Op.ADD, dtype) == (dtype not in CAST_ONLY)
        assert ew.is_supported(ew.Op.MUL, dtype) == (dtype not in CAST_ONLY)
        assert ew.is_supported(ew.Op.SCALE_ADD, dtype) == (dtype not in CAST_ONLY)
        assert ew.is_supported(ew.Op.RELU, dtype) == (dtype not in CAST_ONLY + (ew.DType.BOOL,))
        for source in dtypes:
            assert ew.is_supported(ew.Op.CAST, dtype, source)
            if source != dtype:
                assert not ew.is_supported(ew.Op.ADD, dtype, source)


def test_dtype_sizes_and_names_agree_with_the_library():
    sizes = {1: 1, 2: 1, 3: 1, 4: 2, 5: 4, 6: 8, 7: 2, 8: 2, 9: 4, 10: 8, 11: 1, 12: 1, 13: 1, 14: 0}
    for dtype in ew.DType:
        assert ew.dtype_size(dtype) == sizes[dtype]  # F4E2M1, half a byte: 0 (the library's ew_dtype_size)
        assert ew.dtype_bits(dtype) == (4 if dtype == ew.DType.F4E2M1 else 8 * sizes[dtype])
        assert ew._as_dtype(ew.dtype_name(dtype)) == dtype


@pytest.mark.parametrize("name, dtype", [
    ("f16", ew.DType.F16), ("float16", ew.DType.F16), ("bfloat16", ew.DType.BF16),
    ("torch.bfloat16", ew.DType.BF16),
    ("float8_e4m3fn", ew.DType.F8E4M3), ("float8_e5m2", ew.DType.F8E5M2), ("int64", ew.DType.I64),
    ("f8e8m0", ew.DType.F8E8M0), ("float8_e8m0fnu", ew.DType.F8E8M0), ("torch.float8_e8m0fnu", ew.DType.F8E8M0),
    ("e8m0", ew.DType.F8E8M0), ("f4e2m1", ew.DType.F4E2M1), ("float4_e2m1fn_x2", ew.DType.F4E2M1),
    ("torch.float4_e2m1fn_x2", ew.DType.F4E2M1), ("e2m1", ew.DType.F4E2M1), (14, ew.DType.F4E2M1),
    (ew.DType.U8, ew.DType.U8), (int(ew.DType.F32), ew.DType.F32)])
def test_dtype_names(name, dtype):
    assert ew._as_dtype(name) == dtype


def test_an_unknown_dtype_name_is_a_type_error():
    with pytest.raises(TypeError, match="unknown dtype"):
        ew._as_dtype("complex64")


# ---- reading arrays: the CUDA array interface ----

class Read:
    """How the compiled module reads one array (its describe())."""

    def __init__(self, obj, dtype=None, writable=False, stream=None):
        self.dtype, self.shape, self.strides, self.pointer, self.stream, self.device = ew._ext.describe(
            obj, dtype, writable, stream)


@pytest.mark.parametrize("typestr, dtype", [
    ("|b1", ew.DType.BOOL), ("|i1", ew.DType.I8), ("|u1", ew.DType.U8), ("<i2", ew.DType.I16),
    ("<i4", ew.DType.I32), ("<i8", ew.DType.I64), ("<f2", ew.DType.F16), ("<f4", ew.DType.F32),
    ("<f8", ew.DType.F64)])
def test_dtype_from_typestr(typestr, dtype):
    assert Read(FakeArray(typestr=typestr)).dtype == dtype


class TorchLikeDtype:
    """Prints like torch.bfloat16 and has no .name, as torch dtypes do."""

    def __init__(self, name):
        self._name = name

    def __str__(self):
        return "torch." + self._name


class NumpyLikeDtype:
    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("typestr, declared, dtype", [
    ("<V2", TorchLikeDtype("bfloat16"), ew.DType.BF16),     # PyTorch's bfloat16 interface
    ("<V2", NumpyLikeDtype("bfloat16"), ew.DType.BF16),     # ml_dtypes
    ("|V1", NumpyLikeDtype("float8_e4m3fn"), ew.DType.F8E4M3),
    ("|u1", TorchLikeDtype("float8_e5m2"), ew.DType.F8E5M2),  # a uint8 view that still names its dtype
    ("|u1", TorchLikeDtype("float8_e8m0fnu"), ew.DType.F8E8M0),
    ("|V1", NumpyLikeDtype("float8_e8m0fnu"), ew.DType.F8E8M0),  # ml_dtypes
    ("|u1", TorchLikeDtype("float4_e2m1fn_x2"), ew.DType.F4E2M1),  # a byte of two e2m1 elements
    ("<f2", TorchLikeDtype("float16"), ew.DType.F16)])
def test_bfloat16_and_float8_are_recognised_by_the_arrays_dtype_name(typestr, declared, dtype):
    assert Read(FakeArray(typestr=typestr, dtype=declared)).dtype == dtype


def test_an_ambiguous_typestr_asks_for_dtype():
    with pytest.raises(TypeError, match="dtype="):
        Read(FakeArray(typestr="<V2"))
    assert Read(FakeArray(typestr="<V2"), dtype="bf16").dtype == ew.DType.BF16


def test_dtype_argument_overrides_the_typestr_but_not_the_element_size():
    assert Read(FakeArray(typestr="<f2"), dtype=ew.DType.BF16).dtype == ew.DType.BF16
    assert Read(FakeArray(typestr="|u1"), dtype="f8e4m3").dtype == ew.DType.F8E4M3
    with pytest.raises(TypeError, match="2-byte elements"):
        Read(FakeArray(typestr="<f4"), dtype="f16")


@pytest.mark.parametrize("typestr", ["<c8", "<u4", ">f4", "<f16", "f4"])
def test_element_types_outside_the_library_are_refused(typestr):
    with pytest.raises(TypeError):
        Read(FakeArray(typestr=typestr))


@pytest.mark.parametrize("shape, byte_strides, strides", [
    ((4,), None, (1,)), ((2, 3), None, (3, 1)), ((2, 3), (4, 8), (1, 2)), ((3,), (-4,), (-1,)),
    ((2, 3), (0, 4), (0, 1))])
def test_strides_are_read_in_elements(shape, byte_strides, strides):
    read = Read(FakeArray(shape=shape, strides=byte_strides))
    assert read.shape == shape and read.strides == strides


def test_strides_that_split_an_element_are_refused():
    with pytest.raises(ValueError, match="not multiples"):
        Read(FakeArray(shape=(3,), strides=(6,)))


def test_masked_and_read_only_outputs_are_refused():
    with pytest.raises(ValueError, match="masked"):
        Read(FakeArray(mask=FakeArray(typestr="|b1")))
    with pytest.raises(ValueError, match="out: the output array is read-only"):
        Read(FakeArray(read_only=True), writable=True)
    assert Read(FakeArray(read_only=True)).pointer == 0x10000  # inputs may be read-only


class Exploding:
    """Its interface raises something other than AttributeError: the error comes out as it is."""

    @property
    def __cuda_array_interface__(self):
        raise KeyError("broken interface")


@pytest.mark.parametrize("obj, error, match", [
    (object(), TypeError, "object has neither __cuda_array_interface__ nor __dlpack__"),
    (None, TypeError, "NoneType has neither"),
    (3.5, TypeError, "float has neither"),
    ([1.0, 2.0], TypeError, "list has neither"),
    (Exploding(), KeyError, "broken interface"),
    (FakeArray(shape="ab"), TypeError, "shape must hold integers"),
    (FakeArray(shape=(-1,)), ValueError, "negative extent"),
    (FakeArray(shape=(2,) * 65), ValueError, "at most 64"),
    (FakeArray(pointer="nowhere"), TypeError, None),
    (types.SimpleNamespace(__cuda_array_interface__=[1, 2]), TypeError, "not a dict"),
    (types.SimpleNamespace(__cuda_array_interface__={"shape": (2,)}), TypeError, "lacks typestr"),
    (FakeArray(strides=(4, 4)), ValueError, "do not match shape")])
def test_objects_that_are_not_arrays_raise_and_never_crash(obj, error, match):
    with pytest.raises(error, match=match):
        Read(obj)
    with pytest.raises(error, match=match):
        ew.add(obj, FakeArray(), out=FakeArray(), handle=ew.Handle._from_raw(None))


def test_an_object_without_either_interface_is_a_type_error():
    with pytest.raises(TypeError, match="x: object has neither __cuda_array_interface__ nor __dlpack__"):
        ew.Handle._from_raw(None).relu(object(), out=FakeArray())


def test_shapes_must_broadcast_and_dtypes_agree():
    handle = ew.Handle._from_raw(None)
    with pytest.raises(ValueError, match="shape"):
        handle.add(FakeArray(shape=(4,)), FakeArray(shape=(2, 2)), out=FakeArray(shape=(4,)))
    with pytest.raises(ValueError, match=r"b has shape \(3,\), which does not broadcast to out's shape \(2, 4\)"):
        handle.add(FakeArray(shape=(2, 4)), FakeArray(shape=(3,)), out=FakeArray(shape=(2, 4)))
    with pytest.raises(ValueError, match=r"shapes a \(2, 4\), b \(3,\) do not broadcast together"):
        handle.add(FakeArray(shape=(2, 4)), FakeArray(shape=(3,)))
    with pytest.raises(TypeError, match="a is I32 but out is F32; convert with cast"):
        handle.add(FakeArray(typestr="<i4"), FakeArray(), out=FakeArray())


# ---- streams ----

@pytest.mark.parametrize("streams, chosen", [
    ((None, None), 0), ((1, None), 1), ((2, 2), 2), ((0x7F00DEAD, None), 0x7F00DEAD)])
def test_the_stream_named_by_the_interface_is_used(streams, chosen):
    assert ew._ext.resolve_stream(None, *(FakeArray(stream=stream) for stream in streams)) == chosen


def test_different_streams_in_the_interfaces_are_refused():
    arrays = [FakeArray(stream=stream) for stream in (5, 7)]
    with pytest.raises(ValueError, match="different streams"):
        ew._ext.resolve_stream(None, *arrays)
    assert ew._ext.resolve_stream(9, *arrays) == 9  # unless the caller names one


def test_stream_zero_is_refused_as_the_interface_says():
    with pytest.raises(ValueError, match="stream 0"):
        Read(FakeArray(stream=0))


def test_a_version_2_interface_names_no_stream():
    array = FakeArray(stream=5)
    array.__cuda_array_interface__["version"] = 2
    assert ew._ext.resolve_stream(None, array) == 0


class TorchStream:
    cuda_stream = 0x1234


class CupyStream:
    ptr = 0x2345


class NumbaStream:
    handle = ctypes.c_void_p(0x3456)


class ProtocolStream:
    def __cuda_stream__(self):
        return (0, 0x4567)


@pytest.mark.parametrize("stream, value", [
    (None, 0), (0, 0), (1, 1), (2, 2), (0xABCDEF, 0xABCDEF), (TorchStream(), 0x1234), (CupyStream(), 0x2345),
    (NumbaStream(), 0x3456), (ProtocolStream(), 0x4567)])
def test_stream_objects_of_each_library(stream, value):
    assert ew._ext.resolve_stream(stream) == value


def test_an_unknown_stream_object_is_a_type_error():
    with pytest.raises(TypeError, match="stream"):
        ew._ext.resolve_stream("stream")


# ---- what reaches the C functions ----

class Recorder:
    """Stands in for one C function: records its arguments, returns a status."""

    def __init__(self, status=0):
        self.args = None
        self.status = status

    def __call__(self, *args):
        self.args = args
        return self.status


FAMILIES = ("unary", "binary", "cast", "scale_add")


def install(monkeypatch, recorders):
    """The compiled module calls recorders[name](*args) in the library's place until the test ends."""
    def dispatch(name, args):
        return recorders[name](*args)
    ew._ext.set_recorder(dispatch)
    monkeypatch.setattr(ew, "_recording", recorders, raising=False)  # undone with the test
    return recorders


@pytest.fixture
def recorded(monkeypatch):
    recorders = {}
    for family in FAMILIES:
        for name in ("ew_" + family, "ew_%s_strided" % family, "ew_%s_batched" % family):
            recorders[name] = Recorder()
    yield install(monkeypatch, recorders)
    ew._ext.set_recorder(None)


def called(recorded):
    return sorted(name for name, recorder in recorded.items() if recorder.args is not None)


def test_arguments_reach_the_library_as_the_c_api_orders_them(recorded):
    handle = ew.Handle._from_raw(None)
    out, a, b = (FakeArray(shape=(3, 5), typestr="<f2", pointer=pointer, stream=0x99)
                 for pointer in (0x100, 0x200, 0x300))
    assert handle.add(a, b, out=out) is out
    assert recorded["ew_binary"].args[0] is None  # the raw handle
    assert recorded["ew_binary"].args[1:] == (ew.Op.ADD, ew.DType.F16, 15, 0x100, 0x200, 0x300, 0x99)
    handle.scale_add(3, a, b, out=out, stream=CupyStream())
    assert recorded["ew_scale_add"].args[1:] == (ew.DType.F16, 3.0, 15, 0x100, 0x200, 0x300, 0x2345)
    assert isinstance(recorded["ew_scale_add"].args[2], float)
    handle.relu(a, out=out, dtype="bf16")
    assert recorded["ew_unary"].args[1:] == (ew.Op.RELU, ew.DType.BF16, 15, 0x100, 0x200, 0x99)
    handle.cast(a, "f8e5m2", out=FakeArray(shape=(3, 5), typestr="|u1", pointer=0x400))
    assert recorded["ew_cast"].args[1:] == (ew.DType.F8E5M2, ew.DType.F16, 15, 0x400, 0x200, 0x99)
    handle.cast(a, out=FakeArray(shape=(3, 5), typestr="<f8", pointer=0x500))  # to out's own dtype
    assert recorded["ew_cast"].args[1:3] == (ew.DType.F64, ew.DType.F16)
    handle.cast(FakeArray(shape=(3, 5), typestr="<i2", pointer=0x600), "f32", in_dtype="bf16",
                out=FakeArray(shape=(3, 5), pointer=0x700))  # an int16 view of bfloat16 data
    assert recorded["ew_cast"].args[1:3] == (ew.DType.F32, ew.DType.BF16)
    handle.unary(ew.Op.RELU, a, out=out)
    handle.binary(ew.Op.MUL, a, b, out=out)
    assert recorded["ew_binary"].args[1] == ew.Op.MUL


@pytest.mark.parametrize("arch", ["sm_90a", "compute_90", "90", "", ["sm_90a"], ("sm_9",)])
def test_kernel_cache_fill_refuses_what_names_no_architecture(arch):
    with pytest.raises(ew.ElementwiseError, match="arch") as raised:
        ew.kernel_cache_fill("return in0;", "f32", "f32", arch=arch)
    assert raised.value.status == ew.Status.INVALID_VALUE


def test_kernel_cache_fill_for_two_architectures_without_a_gpu(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("EW_KERNEL_CACHE_DIR", str(cache))
    monkeypatch.delenv("EW_KERNEL_CACHE", raising=False)
    try:
        ew.kernel_cache_fill("return in0 * 2.0f; // fill %d" % os.getpid(), "f32", "f32", arch=["sm_90", "sm_80"])
    except ew.ElementwiseError as error:
        assert error.status == ew.Status.NOT_SUPPORTED and "NVRTC" in str(error), error
        pytest.skip("no NVRTC to compile with: %s" % error)
    # the flat, shifted, bulk, strided and lists' programs, for each
    assert len(list(cache.glob("*.ewk"))) == 10
    ew.kernel_cache_fill("out0 = in0; out1 = in0; // fill %d" % os.getpid(), "f32", "bf16", arch="sm_90",
                         reduce="abs_max")  # a kernel with a reduction output: its five programs
    assert len(list(cache.glob("*.ewk"))) == 15
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.kernel_cache_fill("out0 = in0; out1 = in0;", "f32", "bf16", arch="sm_90", reduce="max", reduce_dtype="f16")
    assert caught.value.function == "ew_kernel_cache_fill_outputs" and caught.value.status == ew.Status.NOT_SUPPORTED


def test_kernel_cache_fill_checks_the_source_first():
    with pytest.raises(ValueError, match="NUL"):
        ew.kernel_cache_fill("return in0;\0", "f32", "f32", arch="sm_90")
    with pytest.raises(TypeError, match="source"):
        ew.kernel_cache_fill(None, "f32", "f32", arch="sm_90")
    assert "kernel_cache_fill" in ew.__all__


def test_kernel_cache_counts_are_the_librarys_counters():
    counts = ew.kernel_cache_counts()
    assert sorted(counts) == ["compiles", "disk_hits", "memory_hits", "store_failures"]
    assert all(isinstance(v, int) and v >= 0 for v in counts.values())
    assert "kernel_cache_counts" in ew.__all__


def test_the_module_functions_and_the_handle_methods_are_one_call(recorded):
    handle = ew.Handle._from_raw(0x5000, device=0)
    ew.mul(FakeArray(), FakeArray(), out=FakeArray(), handle=handle)
    first = recorded["ew_binary"].args
    handle.mul(FakeArray(), FakeArray(), out=FakeArray())
    assert recorded["ew_binary"].args == first and first[0] == 0x5000


def test_empty_arrays_pass_null_pointers(recorded):
    handle = ew.Handle._from_raw(None)
    empty = FakeArray(shape=(0,), pointer=0)
    handle.add(empty, empty, out=empty)
    assert recorded["ew_binary"].args[3:7] == (0, None, None, None)
    handle.add(FakeArray(shape=(0, 3), pointer=0x100), FakeArray(shape=(3,)), out=FakeArray(shape=(0, 3)))
    assert recorded["ew_binary"].args[3] == 0 and called(recorded) == ["ew_binary"]


def test_a_failing_status_becomes_an_exception_with_the_library_text(recorded):
    recorded["ew_binary"].status = int(ew.Status.DEVICE_MISMATCH)
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.Handle._from_raw(None).mul(FakeArray(), FakeArray(), out=FakeArray())
    assert caught.value.status == ew.Status.DEVICE_MISMATCH
    assert caught.value.function == "ew_binary"
    assert "EW_ERROR_DEVICE_MISMATCH" in str(caught.value)
    assert caught.value.message == ew._last_error_message()


# ---- the call shape: inputs first, out=; the output-first forms of 1.x, deprecated ----

def test_out_first_forms_still_work_with_a_deprecation_warning(recorded):
    handle = ew.Handle._from_raw(None)
    out, a, b = FakeArray(pointer=0x100), FakeArray(pointer=0x200), FakeArray(pointer=0x300)
    expected = {
        "add": (lambda: handle.add(out, a, b), "ew_binary", (ew.Op.ADD, ew.DType.F32, 4, 0x100, 0x200, 0x300, 0)),
        "mul": (lambda: ew.mul(out, a, b, handle=handle), "ew_binary",
                (ew.Op.MUL, ew.DType.F32, 4, 0x100, 0x200, 0x300, 0)),
        "relu": (lambda: handle.relu(out, a), "ew_unary", (ew.Op.RELU, ew.DType.F32, 4, 0x100, 0x200, 0)),
        "cast": (lambda: handle.cast(out, a), "ew_cast", (ew.DType.F32, ew.DType.F32, 4, 0x100, 0x200, 0)),
        "cast None": (lambda: handle.cast(FakeArray(typestr="<f2", pointer=0x100), a, out_dtype="f16"),
                      "ew_cast", (ew.DType.F16, ew.DType.F32, 4, 0x100, 0x200, 0)),
        "scale_add": (lambda: handle.scale_add(out, 2, a, b), "ew_scale_add",
                      (ew.DType.F32, 2.0, 4, 0x100, 0x200, 0x300, 0)),
        "unary": (lambda: handle.unary(ew.Op.RELU, out, a), "ew_unary", (ew.Op.RELU, ew.DType.F32, 4, 0x100, 0x200, 0)),
        "binary": (lambda: handle.binary(ew.Op.ADD, out, a, b), "ew_binary",
                   (ew.Op.ADD, ew.DType.F32, 4, 0x100, 0x200, 0x300, 0)),
        "add_batched": (lambda: handle.add_batched([out], [a], [b]), "ew_binary_batched",
                        (ew.Op.ADD, ew.DType.F32, 1, (4,), (0x100,), (0x200,), (0x300,), 0)),
        "relu_batched": (lambda: handle.relu_batched([out], [a]), "ew_unary_batched",
                         (ew.Op.RELU, ew.DType.F32, 1, (4,), (0x100,), (0x200,), 0)),
        "cast_batched": (lambda: handle.cast_batched([out], [a]), "ew_cast_batched",
                         (ew.DType.F32, ew.DType.F32, 1, (4,), (0x100,), (0x200,), 0)),
        "scale_add_batched": (lambda: handle.scale_add_batched([out], 3, [a], [b]), "ew_scale_add_batched",
                              (ew.DType.F32, 3.0, 1, (4,), (0x100,), (0x200,), (0x300,), 0)),
    }
    for name, (call, function, args) in expected.items():
        with pytest.warns(DeprecationWarning, match="the output first, is deprecated"):
            call()
        assert recorded[function].args[1:] == args, name


def test_the_new_forms_warn_nothing(recorded):
    handle = ew.Handle._from_raw(None)
    out, a, b = FakeArray(pointer=0x100), FakeArray(pointer=0x200), FakeArray(pointer=0x300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        handle.add(a, b, out=out)
        handle.relu(a, out=out)
        handle.cast(a, "f32", out=out)
        handle.cast(a, ew.DType.F32, out=out)
        handle.scale_add(2, a, b, out=out)
        handle.add_batched([a], [b], outs=[out])
        handle.cast_batched([a], "f32", outs=[out])
        handle.scale_add_batched(2, [a], [b], outs=[out])


def test_the_deprecated_form_is_told_apart_by_its_arguments_only():
    handle = ew.Handle._from_raw(None)
    with pytest.raises(TypeError, match=r"add\(\) got out both first and as out="):
        handle.add(FakeArray(), FakeArray(), FakeArray(), out=FakeArray())
    with pytest.raises(TypeError, match=r"add\(\) takes 2 positional arguments"):
        handle.add(FakeArray())
    with pytest.raises(TypeError, match=r"takes 3 positional arguments \(scale_add\(alpha, a, b"):
        handle.scale_add(2, FakeArray())
    with pytest.raises(TypeError, match="unexpected keyword argument 'outs'"):
        handle.add(FakeArray(), FakeArray(), outs=FakeArray())
    with pytest.raises(TypeError, match="unknown dtype"):
        handle.cast(FakeArray(), "complex64")
    with pytest.raises(TypeError, match="needs the dtype to convert to"):
        handle.cast(FakeArray())
    with pytest.raises(TypeError, match="both as an argument and as a keyword"):
        handle.cast(FakeArray(), "f16", dtype="f32")
    with pytest.raises(TypeError, match="must be real number|float"):
        handle.scale_add("two", FakeArray(), FakeArray(), out=FakeArray())


# ---- strides and broadcasting: the strided calls, the layout left to the library ----

def test_a_transposed_input_goes_through_the_strided_call_as_it_is(recorded):
    out = FakeArray(shape=(3, 5), pointer=0x100)
    a = FakeArray(shape=(3, 5), pointer=0x200, strides=(4, 12))  # a (5, 3) array, transposed
    b = FakeArray(shape=(3, 5), pointer=0x300)
    ew.Handle._from_raw(None).add(a, b, out=out, stream=7)
    assert called(recorded) == ["ew_binary_strided"]
    assert recorded["ew_binary_strided"].args[1:] == (
        ew.Op.ADD, ew.DType.F32, 2, (3, 5), 0x100, (5, 1), 0x200, (1, 3), 0x300, (5, 1), 7)


def test_a_row_broadcast_against_a_matrix_has_stride_zero(recorded):
    out, a = FakeArray(shape=(4, 6), pointer=0x100), FakeArray(shape=(4, 6), pointer=0x200)
    bias = FakeArray(shape=(6,), pointer=0x300)
    ew.Handle._from_raw(None).add(a, bias, out=out, stream=7)
    assert recorded["ew_binary_strided"].args[3:] == (2, (4, 6), 0x100, (6, 1), 0x200, (6, 1), 0x300, (0, 1), 7)
    column = FakeArray(shape=(4, 1), pointer=0x400)
    ew.Handle._from_raw(None).scale_add(2, column, a, out=out, stream=7)
    assert recorded["ew_scale_add_strided"].args[1:] == (
        ew.DType.F32, 2.0, 2, (4, 6), 0x100, (6, 1), 0x400, (1, 0), 0x200, (6, 1), 7)


def test_an_input_broadcasts_into_a_larger_out_as_numpy_allows(recorded):
    out = FakeArray(shape=(2, 3), pointer=0x100)
    ew.Handle._from_raw(None).relu(FakeArray(shape=(3,), pointer=0x200), out=out, stream=7)
    assert recorded["ew_unary_strided"].args[1:] == (ew.Op.RELU, ew.DType.F32, 2, (2, 3), 0x100, (3, 1), 0x200,
                                                     (0, 1), 7)
    with pytest.raises(ValueError, match=r"x has shape \(1, 3\), more dimensions than out's \(3,\)"):
        ew.Handle._from_raw(None).relu(FakeArray(shape=(1, 3)), out=FakeArray(shape=(3,)))


def test_a_cast_of_a_strided_view_counts_strides_in_each_operands_own_elements(recorded):
    out = FakeArray(shape=(4,), typestr="<f8", pointer=0x100)
    x = FakeArray(shape=(4,), typestr="<f2", pointer=0x200, strides=(6,))  # every third half
    ew.Handle._from_raw(None).cast(x, "f64", out=out, stream=7)
    assert recorded["ew_cast_strided"].args[1:] == (ew.DType.F64, ew.DType.F16, 1, (4,), 0x100, (1,), 0x200,
                                                    (3,), 7)


def test_negative_strides_pass_through(recorded):
    out = FakeArray(shape=(5,), pointer=0x100)
    reversed_x = FakeArray(shape=(5,), pointer=0x210, strides=(-4,))
    ew.Handle._from_raw(None).relu(reversed_x, out=out, stream=7)
    assert recorded["ew_unary_strided"].args[3:] == (1, (5,), 0x100, (1,), 0x210, (-1,), 7)


def test_a_contiguous_call_of_one_shape_is_flat_and_any_other_is_strided_as_it_is(recorded):
    handle = ew.Handle._from_raw(None)
    shape = (2,) * 10  # more dimensions than the strided calls take, but contiguous: one flat call
    handle.add(*(FakeArray(shape=shape, pointer=p) for p in (0x200, 0x300)), out=FakeArray(shape=shape), stream=7)
    assert called(recorded) == ["ew_binary"]
    assert recorded["ew_binary"].args[3] == 1024
    # Extent-1 dimensions, whatever their strides, are contiguous too.
    handle.relu(FakeArray(shape=(3, 1, 4), pointer=0x200, strides=(16, 999, 4)), out=FakeArray(shape=(3, 1, 4)))
    assert called(recorded) == ["ew_binary", "ew_unary"] and recorded["ew_unary"].args[3] == 12
    # Anything else reaches the strided call with the output's own dimensions: merging them is the
    # library's (src/plan/layout.c), not repeated here.
    out = FakeArray(shape=(3, 1, 4), pointer=0x100)
    rows = FakeArray(shape=(3, 1, 4), pointer=0x200, strides=(32, 999, 4))  # every other row of 8
    handle.relu(rows, out=out, stream=7)
    assert recorded["ew_unary_strided"].args[3:] == (3, (3, 1, 4), 0x100, (4, 4, 1), 0x200, (8, 0, 1), 7)


def test_layouts_the_library_judges_reach_it_unchanged(recorded):
    # More dimensions than EW_MAX_DIMS, a broadcast or self-overlapping out: the library refuses them
    # (test_gpu checks its refusal); the binding passes them on as they are.
    handle = ew.Handle._from_raw(None)
    shape = (2,) * 9
    strided = FakeArray(shape=shape, strides=tuple(8 * 4 ** k for k in reversed(range(9))))
    handle.relu(strided, out=FakeArray(shape=shape))
    assert recorded["ew_unary_strided"].args[3] == 9
    handle.relu(FakeArray(shape=(4, 3), pointer=0x9000), out=FakeArray(shape=(4, 3), strides=(0, 4)))
    assert recorded["ew_unary_strided"].args[3:7] == (2, (4, 3), 0x10000, (0, 1))


def test_library_refusals_of_layouts_carry_the_librarys_message():
    # Through the real library: a NULL handle is refused first, with its own message.
    shape = (2,) * 9
    strided = FakeArray(shape=shape, strides=tuple(8 * 4 ** k for k in reversed(range(9))))
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.Handle._from_raw(None).relu(strided, out=FakeArray(shape=shape))
    assert caught.value.function == "ew_unary_strided" and caught.value.message == ew._last_error_message()


# ---- DLPack ----

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

DLPACK_CODES = {ew.DType.I8: (0, 8), ew.DType.I32: (0, 32), ew.DType.U8: (1, 8), ew.DType.F16: (2, 16),
                ew.DType.F32: (2, 32), ew.DType.F64: (2, 64), ew.DType.BF16: (4, 16), ew.DType.BOOL: (6, 8),
                ew.DType.F8E4M3: (10, 8), ew.DType.F8E5M2: (12, 8)}
MAX_VERSION = (1, 3)  # the newest DLPack the module reads (its vendored dlpack.h)


class FakeDLPack:
    """A DLPack producer with no real memory: __dlpack_device__, and __dlpack__ exporting a capsule
    built here (with no destructor: the structures live as long as this object). Records each call's
    keywords. ``accepts`` lists the keywords its __dlpack__ takes beyond stream, as older producers
    take fewer."""

    def __init__(self, shape=(4,), code=(2, 32), pointer=0x10000, strides=None, device=(2, 0), byte_offset=0,
                 read_only=False, accepts=("max_version", "copy"), lanes=1, major=1):
        self.shape, self.code, self.pointer, self.strides = shape, code, pointer, strides
        self.device, self.byte_offset, self.read_only, self.accepts, self.lanes = (
            device, byte_offset, read_only, accepts, lanes)
        self.major = major
        self.calls = []
        self._keep = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **keywords):
        unknown = set(keywords) - set(self.accepts)
        if unknown:
            raise TypeError("__dlpack__() got an unexpected keyword argument %r" % sorted(unknown)[0])
        self.calls.append(dict(stream=stream, **keywords))
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        strides = None if self.strides is None else (ctypes.c_int64 * max(ndim, 1))(*self.strides)
        tensor = DLTensor(data=self.pointer, device=DLDevice(*self.device), ndim=ndim,
                          dtype=DLDataType(self.code[0], self.code[1], self.lanes),
                          shape=ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                          strides=ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)) if strides is not None else None,
                          byte_offset=self.byte_offset)
        if "max_version" in keywords:
            managed = DLManagedTensorVersioned(major=self.major, minor=1, flags=int(self.read_only), dl_tensor=tensor)
            name = b"dltensor_versioned"
        else:
            managed = DLManagedTensor(dl_tensor=tensor)
            name = b"dltensor"
        self._keep += [shape, strides, managed]
        return PyCapsule_New(ctypes.addressof(managed), name, None)


@pytest.mark.parametrize("dtype", sorted(DLPACK_CODES), ids=lambda d: d.name)
def test_dlpack_dtypes(dtype):
    assert Read(FakeDLPack(code=DLPACK_CODES[dtype])).dtype == dtype


def test_a_dlpack_tensor_is_read_in_place(recorded):
    x = FakeDLPack(shape=(3, 4), code=(2, 16), pointer=0x4000, byte_offset=64, strides=(1, 3))
    out = FakeArray(shape=(3, 4), typestr="<f2", pointer=0x100)
    ew.Handle._from_raw(None).relu(x, out=out, stream=0x77)
    assert recorded["ew_unary_strided"].args[1:] == (ew.Op.RELU, ew.DType.F16, 2, (3, 4), 0x100, (4, 1),
                                                     0x4040, (1, 3), 0x77)
    # Asked for the data on the call's stream, as a versioned capsule, never a copy.
    assert x.calls == [dict(stream=0x77, max_version=MAX_VERSION, copy=False)]


def test_dlpack_is_asked_for_the_legacy_default_stream_as_1_not_0(recorded):
    x, y = FakeDLPack(pointer=0x4000), FakeDLPack(pointer=0x5000)
    ew.Handle._from_raw(None).add(x, y, out=FakeArray())
    assert x.calls[0]["stream"] == 1 and y.calls[0]["stream"] == 1
    assert recorded["ew_binary"].args[-1] == 0  # the library's NULL stream: the legacy default
    z = FakeDLPack(pointer=0x6000)
    ew.Handle._from_raw(None).relu(z, out=FakeArray(stream=2))  # the per-thread default stream, named by out
    assert z.calls[0]["stream"] == 2 and recorded["ew_unary"].args[-1] == 2


@pytest.mark.parametrize("accepts, versioned", [(("max_version",), True), ((), False)])
def test_older_dlpack_producers_are_called_the_way_they_understand(recorded, accepts, versioned):
    x = FakeDLPack(accepts=accepts, pointer=0x4000)
    ew.Handle._from_raw(None).relu(x, out=FakeArray(), stream=5)
    assert x.calls[-1] == dict(stream=5, **({"max_version": MAX_VERSION} if versioned else {}))
    assert recorded["ew_unary"].args[4:6] == (0x10000, 0x4000)


def test_a_read_only_dlpack_output_is_refused(recorded):
    with pytest.raises(ValueError, match="read-only"):
        ew.Handle._from_raw(None).relu(FakeArray(), out=FakeDLPack(read_only=True))
    ew.Handle._from_raw(None).relu(FakeDLPack(read_only=True), out=FakeArray())  # inputs may be
    assert called(recorded) == ["ew_unary"]


def test_a_dlpack_capsule_of_another_major_version_is_refused():
    with pytest.raises(TypeError, match="DLPack version 2.1 is not understood"):
        Read(FakeDLPack(major=2))


@pytest.mark.parametrize("device, name", [((1, 0), "CPU"), ((3, 0), "CUDA host"), ((10, 0), "ROCm"),
                                          ((99, 0), "device type 99")])
def test_dlpack_arrays_outside_gpu_memory_are_refused_clearly(recorded, device, name):
    x = FakeDLPack(device=device)
    with pytest.raises(TypeError, match="is a %s.* array.*move it to the GPU" % name):
        ew.Handle._from_raw(None).relu(x, out=FakeArray())
    assert x.calls == [] and called(recorded) == []


def test_numpy_arrays_are_refused_as_host_arrays():
    numpy = pytest.importorskip("numpy")
    host = numpy.ones(4, dtype=numpy.float32)
    if not hasattr(host, "__dlpack_device__"):
        pytest.skip("this NumPy has no DLPack")
    with pytest.raises(TypeError, match="x: ndarray is a CPU array"):
        ew.Handle._from_raw(None).relu(host, out=FakeArray())
    with pytest.raises(TypeError, match="CPU array"):
        ew.add(host, host)  # refused before any handle is needed


def test_cuda_managed_memory_is_accepted(recorded):
    ew.Handle._from_raw(None).relu(FakeDLPack(device=(13, 0), pointer=0x4000), out=FakeArray(), stream=3)
    assert recorded["ew_unary"].args[5] == 0x4000


@pytest.mark.parametrize("code, lanes", [((1, 16), 1), ((5, 64), 1), ((2, 32), 4), ((17, 4), 1)])
def test_dlpack_element_types_outside_the_library_are_refused(code, lanes):
    with pytest.raises(TypeError):
        Read(FakeDLPack(code=code, lanes=lanes))


def test_arrays_on_another_device_than_the_handles_are_refused(recorded):
    with pytest.raises(ValueError, match="x is on device 3 but the call runs on device 0"):
        ew.Handle._from_raw(None).relu(FakeDLPack(device=(2, 3)), out=FakeArray())
    with pytest.raises(ValueError, match="b is on device 1 but the call runs on device 0"):
        ew.add(FakeDLPack(device=(2, 0)), FakeDLPack(device=(2, 1), pointer=0x8000), out=FakeDLPack(pointer=0x9000),
               handle=ew.Handle._from_raw(None))
    assert called(recorded) == []


def test_a_dlpack_array_picks_the_default_handle_of_its_device():
    # Without a GPU, the default handle of device 3 cannot be made: the library says so, for device 3.
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.relu(FakeDLPack(device=(2, 3)), out=FakeDLPack(device=(2, 3), pointer=0x8000))
    assert caught.value.function == "ew_handle_create"
    assert caught.value.status in (ew.Status.NO_DEVICE, ew.Status.INVALID_VALUE)


# ---- out=None: made by the input's own framework ----

class FakeCupyArray(FakeArray):
    pass


FakeCupyArray.__module__ = "cupy"


class FakeCupy(types.ModuleType):
    """Enough of CuPy for _allocate: empty_like and empty, recorded, under the array's device."""

    def __init__(self):
        super().__init__("cupy")
        self.made = []
        self.float32 = "float32"
        self.float16 = "float16"  # no bfloat16, as in CuPy

    def empty_like(self, like, dtype=None):
        self.made.append(("empty_like", like.__cuda_array_interface__["shape"], dtype))
        return FakeCupyArray(shape=like.__cuda_array_interface__["shape"], typestr=TYPESTRS[dtype], pointer=0xA000)

    def empty(self, shape, dtype=None):
        self.made.append(("empty", shape, dtype))
        return FakeCupyArray(shape=shape, typestr=TYPESTRS[dtype], pointer=0xB000)


TYPESTRS = {"float32": "<f4", "float16": "<f2"}


class FakeDevice:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.fixture
def fake_cupy(monkeypatch):
    module = FakeCupy()
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


def cupy_array(**kw):
    array = FakeCupyArray(**kw)
    array.dtype = "float32" if kw.get("typestr", "<f4") == "<f4" else "float16"
    array.shape = kw.get("shape", (4,))
    array.device = FakeDevice()
    return array


def test_out_none_is_made_by_empty_like_and_returned(recorded, fake_cupy):
    a, b = cupy_array(shape=(3, 5), pointer=0x200), cupy_array(shape=(3, 5), pointer=0x300)
    result = ew.Handle._from_raw(None).add(a, b, stream=7)
    assert fake_cupy.made == [("empty_like", (3, 5), "float32")]
    assert recorded["ew_binary"].args[1:] == (ew.Op.ADD, ew.DType.F32, 15, 0xA000, 0x200, 0x300, 7)
    assert result.__cuda_array_interface__["data"][0] == 0xA000


def test_out_none_takes_the_broadcast_shape(recorded, fake_cupy):
    a, bias = cupy_array(shape=(4, 6), pointer=0x200), cupy_array(shape=(6,), pointer=0x300)
    ew.Handle._from_raw(None).add(bias, a, stream=7)
    assert fake_cupy.made == [("empty", (4, 6), "float32")]
    assert recorded["ew_binary_strided"].args[3:6] == (2, (4, 6), 0xB000)


def test_a_cast_with_out_none_needs_and_uses_the_dtype(recorded, fake_cupy):
    x = cupy_array(shape=(4,), pointer=0x200)
    with pytest.raises(TypeError, match="needs the dtype"):
        ew.Handle._from_raw(None).cast(x)
    ew.Handle._from_raw(None).cast(x, "f16", stream=7)
    assert fake_cupy.made == [("empty_like", (4,), "float16")]
    assert recorded["ew_cast"].args[1:] == (ew.DType.F16, ew.DType.F32, 4, 0xA000, 0x200, 7)
    with pytest.raises(TypeError, match="CuPy has no BF16"):
        ew.Handle._from_raw(None).cast(x, "bf16")


def test_out_none_with_an_array_of_no_known_framework_asks_for_out(recorded):
    with pytest.raises(TypeError, match="out=None: cannot allocate.*pass out"):
        ew.Handle._from_raw(None).relu(FakeArray())
    assert called(recorded) == []


def test_out_none_is_refused_before_allocating_when_the_inputs_are_wrong(recorded, fake_cupy):
    with pytest.raises(ValueError, match="do not broadcast together"):
        ew.Handle._from_raw(None).add(cupy_array(shape=(3,)), cupy_array(shape=(4,)))
    assert fake_cupy.made == []


# ---- tensor lists: the batched calls ----

def test_lists_reach_the_batched_call_entry_by_entry(recorded):
    handle = ew.Handle._from_raw(None)
    shapes = [(3,), (2, 5), (0,), (7,)]
    outs = [FakeArray(shape=s, typestr="<f2", pointer=0x1000 * (i + 1)) for i, s in enumerate(shapes)]
    as_ = [FakeArray(shape=s, typestr="<f2", pointer=0x1000 * (i + 1) + 0x100) for i, s in enumerate(shapes)]
    bs = [FakeArray(shape=s, typestr="<f2", pointer=0x1000 * (i + 1) + 0x200) for i, s in enumerate(shapes)]
    assert handle.add_batched(as_, bs, outs=outs, stream=9) == outs
    assert recorded["ew_binary_batched"].args[1:] == (
        ew.Op.ADD, ew.DType.F16, 4, (3, 10, 0, 7), (0x1000, 0x2000, None, 0x4000),
        (0x1100, 0x2100, None, 0x4100), (0x1200, 0x2200, None, 0x4200), 9)
    handle.scale_add_batched(-2, as_, bs, outs=outs, stream=9)
    assert recorded["ew_scale_add_batched"].args[1:4] == (ew.DType.F16, -2.0, 4)
    handle.relu_batched(as_, outs=outs, stream=9)
    assert recorded["ew_unary_batched"].args[1:5] == (ew.Op.RELU, ew.DType.F16, 4, (3, 10, 0, 7))
    wide = [FakeArray(shape=s, typestr="<f8", pointer=0x1000 * (i + 1) + 0x300) for i, s in enumerate(shapes)]
    handle.cast_batched(as_, "f64", outs=wide, stream=9)
    assert recorded["ew_cast_batched"].args[1:4] == (ew.DType.F64, ew.DType.F16, 4)
    handle.mul_batched(tuple(as_), tuple(bs), outs=tuple(outs), stream=9)  # any sequence
    assert recorded["ew_binary_batched"].args[1] == ew.Op.MUL


def test_an_empty_list_is_one_call_of_no_entries(recorded):
    assert ew.Handle._from_raw(None).mul_batched([], [], outs=[], dtype="i32") == []
    assert recorded["ew_binary_batched"].args[1:5] == (ew.Op.MUL, ew.DType.I32, 0, ())


def test_lists_refuse_what_a_flat_call_would_not_take(recorded):
    handle = ew.Handle._from_raw(None)
    with pytest.raises(ValueError, match="bs has 1 entries but as_ has 2"):
        handle.add_batched([FakeArray()] * 2, [FakeArray()], outs=[FakeArray()] * 2)
    with pytest.raises(ValueError, match="outs has 1 entries but as_ has 2"):
        handle.add_batched([FakeArray()] * 2, [FakeArray()] * 2, outs=[FakeArray()])
    with pytest.raises(ValueError, match=r"as_\[0\] has shape \(2,\).*not broadcast"):
        handle.add_batched([FakeArray(shape=(2,))], [FakeArray(shape=(4,))], outs=[FakeArray(shape=(4,))])
    with pytest.raises(ValueError, match=r"xs\[1\] is not contiguous"):
        handle.relu_batched([FakeArray(), FakeArray(strides=(8,))], outs=[FakeArray()] * 2)
    with pytest.raises(TypeError, match=r"outs\[1\] is F64 but the first entry's is F32"):
        handle.cast_batched([FakeArray()] * 2, outs=[FakeArray(), FakeArray(typestr="<f8")])
    with pytest.raises(TypeError, match=r"as_\[0\] is I32 but out is F32"):
        handle.add_batched([FakeArray(typestr="<i4")], [FakeArray()], outs=[FakeArray()])
    with pytest.raises(TypeError, match=r"bs\[0\]: object has neither"):
        handle.add_batched([FakeArray()], [object()], outs=[FakeArray()])
    with pytest.raises(TypeError):
        handle.add_batched(FakeArray(), [FakeArray()])  # not a list
    with pytest.raises(ValueError, match=r"outs\[0\]: the output array is read-only"):
        handle.relu_batched([FakeArray()], outs=[FakeArray(read_only=True)])
    assert called(recorded) == []


def test_lists_out_none_are_made_entry_by_entry(recorded, fake_cupy):
    xs = [cupy_array(shape=(3,), pointer=0x200), cupy_array(shape=(5,), pointer=0x300)]
    results = ew.Handle._from_raw(None).relu_batched(xs, stream=4)
    assert len(results) == 2 and fake_cupy.made == [("empty_like", (3,), "float32"), ("empty_like", (5,), "float32")]
    assert recorded["ew_unary_batched"].args[4:6] == ((3, 5), (0xA000, 0xA000))
    ew.Handle._from_raw(None).cast_batched(xs, "f16", stream=4)
    assert fake_cupy.made[-1] == ("empty_like", (5,), "float16")


def test_later_list_entries_naming_another_stream_are_refused(recorded):
    with pytest.raises(ValueError, match="different streams"):
        ew.Handle._from_raw(None).relu_batched([FakeArray(stream=5), FakeArray(stream=6)], outs=[FakeArray()] * 2)


def test_a_failing_batched_call_raises_with_its_name(recorded):
    recorded["ew_binary_batched"].status = int(ew.Status.INVALID_VALUE)
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.Handle._from_raw(None).add_batched([FakeArray()], [FakeArray()], outs=[FakeArray()])
    assert caught.value.function == "ew_binary_batched" and caught.value.status == ew.Status.INVALID_VALUE


# ---- user-defined kernels: Kernel ----

def test_kernel_is_exported_and_documented():
    assert "Kernel" in ew.__all__ and "Kernel" in ew.__doc__
    for member in (ew.Kernel, ew.Kernel.__call__, ew.Kernel.close):
        assert member.__doc__ and member.__doc__.strip()


def test_creating_a_kernel_without_a_gpu_raises_an_elementwise_error():
    assert ew._current_device() >= 0
    try:
        kernel = ew.Kernel("return in0;", "f32", ["f32"])
    except ew.ElementwiseError as error:
        assert error.status in (ew.Status.NO_DEVICE, ew.Status.CUDA, ew.Status.DEVICE_MISMATCH)
        assert error.message
    else:
        kernel.close()
        pytest.skip("a GPU is present, so the no-device path cannot be reached")


def test_a_null_handle_or_kernel_is_refused_by_the_library():
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.Kernel("return in0;", "f32", ["f32"], handle=ew.Handle._from_raw(None))
    assert caught.value.status == ew.Status.INVALID_HANDLE and caught.value.function == "ew_kernel_create"
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.Kernel._from_raw(None, "f32", ["f32"])(FakeArray(pointer=0x20000), out=FakeArray())
    assert caught.value.status == ew.Status.INVALID_HANDLE and caught.value.function == "ew_kernel_launch"
    assert caught.value.message == ew._last_error_message()
    assert ew._ext.kernel_destroy(None) is None  # NULL: nothing to do


def test_a_null_kernel_is_refused_by_the_strided_launch_too():
    out, bias = FakeArray(shape=(2, 4)), FakeArray(shape=(4,), pointer=0x20000)
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.Kernel._from_raw(None, "f32", ["f32"])(bias, out=out)
    assert caught.value.status == ew.Status.INVALID_HANDLE
    assert caught.value.function == "ew_kernel_launch_strided"
    assert caught.value.message == ew._last_error_message()


KERNEL = 0xC0DE


class FakeCreate(Recorder):
    """ew_kernel_create: records, and on success makes KERNEL."""

    def __call__(self, *args):
        status = super().__call__(*args)
        return (status, KERNEL if status == 0 else 0)


@pytest.fixture
def kernel_calls(monkeypatch):
    recorders = {"ew_kernel_create": FakeCreate(), "ew_kernel_launch": Recorder(),
                 "ew_kernel_launch_strided": Recorder(), "ew_kernel_destroy": Recorder()}
    yield install(monkeypatch, recorders)
    ew._ext.set_recorder(None)


def make_kernel(out_dtype="f32", in_dtypes=("f32", "f32"), n_params=0, source="return ew::add(in0, in1);"):
    return ew.Kernel(source, out_dtype, in_dtypes, n_params, handle=ew.Handle._from_raw(None))


def test_kernel_creation_passes_the_c_api_its_arguments(kernel_calls):
    source = "return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));"
    kernel = ew.Kernel(source, out_dtype=TorchLikeDtype("float16"), in_dtypes=("float32", ew.DType.F32),
                       n_params=1, handle=ew.Handle._from_raw(None, device=2))
    args = kernel_calls["ew_kernel_create"].args
    assert args[0] is None and args[1:6] == (source.encode(), ew.DType.F16, 2, (9, 9), 1)
    assert (kernel.source, kernel.out_dtype, kernel.in_dtypes, kernel.n_inputs, kernel.n_params) == (
        source, ew.DType.F16, (ew.DType.F32, ew.DType.F32), 2, 1)
    assert kernel.handle.device == 2
    for name in ("source", "out_dtype", "in_dtypes", "n_inputs", "n_params", "handle"):
        with pytest.raises(AttributeError):
            setattr(kernel, name, None)
    shown = repr(kernel)
    assert "(f32, f32; 1 param) -> f16" in shown and "device 2" in shown and "return ew::cast" in shown
    assert len(shown) < 140


def test_kernel_counts_are_left_to_the_library(kernel_calls):
    kernel = make_kernel(in_dtypes="f16")  # one dtype alone: one input
    assert kernel.in_dtypes == (ew.DType.F16,)
    make_kernel(in_dtypes=("f32",) * 5, n_params=9)
    assert kernel_calls["ew_kernel_create"].args[3:6] == (5, (9,) * 5, 9)
    kernel_calls["ew_kernel_create"].status = int(ew.Status.INVALID_VALUE)
    with pytest.raises(ew.ElementwiseError) as caught:
        make_kernel(in_dtypes=())
    assert caught.value.status == ew.Status.INVALID_VALUE and caught.value.function == "ew_kernel_create"
    assert kernel_calls["ew_kernel_create"].args[3:5] == (0, ())


def test_kernel_source_must_be_text_without_nul(kernel_calls):
    with pytest.raises(ValueError, match="NUL"):
        make_kernel(source="return in0;\0 garbage")
    with pytest.raises(TypeError, match="source"):
        make_kernel(source=42)
    assert make_kernel(source=b"return in0 + in1;").source == "return in0 + in1;"


def test_a_kernel_without_handle_uses_the_current_devices_default_handle(kernel_calls, monkeypatch):
    chosen = []
    monkeypatch.setattr(ew, "_current_device", lambda: 3)
    monkeypatch.setattr(ew, "default_handle", lambda device=0: chosen.append(device) or ew.Handle._from_raw(None, 3))
    kernel = ew.Kernel("return in0;", "f32", ["f32"])
    assert chosen == [3] and kernel.handle.device == 3


def test_kernel_launch_passes_the_c_api_its_arguments(kernel_calls):
    kernel = make_kernel(out_dtype="f16", n_params=2)
    out = FakeArray(shape=(3, 5), typestr="<f2", pointer=0x100)
    a, b = FakeArray(shape=(3, 5), pointer=0x200), FakeArray(shape=(3, 5), pointer=0x300)
    assert kernel(a, b, out=out, params=(1.5, 2), stream=7) is out
    args = kernel_calls["ew_kernel_launch"].args
    assert args == (KERNEL, 15, 0x100, (0x200, 0x300), (1.5, 2.0), 7)
    assert kernel_calls["ew_kernel_launch_strided"].args is None
    # The stream named by the arrays' interfaces, and no params for a kernel that takes none.
    kernel = make_kernel()
    kernel(FakeArray(pointer=0x200, stream=0x99), FakeArray(pointer=0x300), out=FakeArray(stream=0x99))
    assert kernel_calls["ew_kernel_launch"].args[1:] == (4, 0x10000, (0x200, 0x300), (), 0x99)


def test_the_out_first_kernel_call_still_works_with_a_deprecation_warning(kernel_calls):
    kernel = make_kernel()
    out = FakeArray(pointer=0x100)
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert kernel(out, FakeArray(pointer=0x200), FakeArray(pointer=0x300)) is out
    assert kernel_calls["ew_kernel_launch"].args[1:4] == (4, 0x100, (0x200, 0x300))


def test_kernel_launch_of_no_elements_is_still_a_call(kernel_calls):
    empty = FakeArray(shape=(0,))
    make_kernel()(empty, empty, out=empty)
    assert kernel_calls["ew_kernel_launch"].args[1:] == (0, None, (None, None), (), 0)


def test_kernel_calls_check_their_arguments_before_the_library(kernel_calls):
    kernel = make_kernel(out_dtype="f16", n_params=1)
    out, a, b = FakeArray(typestr="<f2"), FakeArray(pointer=0x200), FakeArray(pointer=0x300)
    with pytest.raises(TypeError, match="takes 2 inputs, 1 given"):
        kernel(a, out=out, params=(1.0,))
    with pytest.raises(TypeError, match="takes 2 inputs, 4 given"):
        kernel(a, b, b, b, out=out, params=(1.0,))
    with pytest.raises(TypeError, match="takes 1 params, 0 given"):
        kernel(a, b, out=out)
    with pytest.raises(TypeError, match="takes 1 params, 2 given"):
        kernel(a, b, out=out, params=(1.0, 2.0))
    with pytest.raises(ValueError, match="in1 is F16 but the kernel takes F32"):
        kernel(a, FakeArray(typestr="<f2"), out=out, params=(1.0,))
    with pytest.raises(ValueError, match="out is F32 but the kernel makes F16"):
        kernel(a, b, out=FakeArray(), params=(1.0,))
    with pytest.raises(ValueError, match=r"in1 has shape \(3,\), which does not broadcast to out's shape \(4,\)"):
        kernel(a, FakeArray(shape=(3,)), out=out, params=(1.0,))
    with pytest.raises(ValueError, match=r"in0 has shape \(4,\), which does not broadcast to out's shape \(8,\)"):
        kernel(a, b, out=FakeArray(shape=(8,), typestr="<f2"), params=(1.0,))  # out does not broadcast
    with pytest.raises(ValueError, match="more dimensions than out's"):
        kernel(FakeArray(shape=(1, 4)), b, out=out, params=(1.0,))
    with pytest.raises(ValueError, match="read-only"):
        kernel(a, b, out=FakeArray(typestr="<f2", read_only=True), params=(1.0,))
    with pytest.raises(TypeError, match="in0: object has neither"):
        kernel(object(), b, out=out, params=(1.0,))
    assert kernel_calls["ew_kernel_launch"].args is None
    assert kernel_calls["ew_kernel_launch_strided"].args is None


def test_kernel_out_none_is_made_like_the_first_input_of_out_dtype(kernel_calls, fake_cupy):
    a, b = cupy_array(shape=(2, 3), pointer=0x200), cupy_array(shape=(2, 3), pointer=0x300)
    result = make_kernel(out_dtype="f16")(a, b, stream=5)
    assert fake_cupy.made == [("empty_like", (2, 3), "float16")]
    assert result.__cuda_array_interface__["typestr"] == "<f2"
    assert kernel_calls["ew_kernel_launch"].args[1:] == (6, 0xA000, (0x200, 0x300), (), 5)
    # Of the inputs' broadcast shape: a column against a row makes a (2, 3) out, launched strided.
    column, row = cupy_array(shape=(2, 1), pointer=0x400), cupy_array(shape=(3,), pointer=0x500)
    make_kernel(out_dtype="f16")(column, row, stream=5)
    assert fake_cupy.made[1] == ("empty", (2, 3), "float16")
    assert kernel_calls["ew_kernel_launch_strided"].args[1:] == (
        2, (2, 3), 0xB000, (3, 1), (0x400, 0x500), ((1, 0), (0, 1)), (), 5)
    with pytest.raises(ValueError, match="do not broadcast together"):
        make_kernel(out_dtype="f16")(a, cupy_array(shape=(2,)))
    with pytest.raises(ValueError, match="in1 is F16"):
        make_kernel(out_dtype="f16")(a, cupy_array(shape=(2, 3), typestr="<f2"))
    assert len(fake_cupy.made) == 2  # refused before allocating


def test_kernel_inputs_through_dlpack_are_read_on_the_calls_stream(kernel_calls):
    x = FakeDLPack(pointer=0x4000)
    make_kernel(in_dtypes=["f32"], source="return in0;")(x, out=FakeArray(), stream=0x77)
    assert x.calls == [dict(stream=0x77, max_version=MAX_VERSION, copy=False)]
    assert kernel_calls["ew_kernel_launch"].args[2:4] == (0x10000, (0x4000,))


def test_a_failing_kernel_launch_raises_with_its_name(kernel_calls):
    kernel_calls["ew_kernel_launch"].status = int(ew.Status.DEVICE_MISMATCH)
    with pytest.raises(ew.ElementwiseError) as caught:
        make_kernel()(FakeArray(), FakeArray(), out=FakeArray())
    assert caught.value.function == "ew_kernel_launch" and caught.value.status == ew.Status.DEVICE_MISMATCH
    kernel_calls["ew_kernel_launch_strided"].status = int(ew.Status.INVALID_VALUE)
    with pytest.raises(ew.ElementwiseError) as caught:
        make_kernel()(FakeArray(shape=(2, 4)), FakeArray(shape=(4,)), out=FakeArray(shape=(2, 4)))
    assert caught.value.function == "ew_kernel_launch_strided" and caught.value.status == ew.Status.INVALID_VALUE


# ---- Kernel with a reduction output: ew_kernel_create_outputs, ew_kernel_launch_outputs ----

@pytest.fixture
def outputs_calls(monkeypatch):
    recorders = {"ew_kernel_create_outputs": FakeCreate(), "ew_kernel_launch_outputs": Recorder(),
                 "ew_kernel_launch_outputs_strided": Recorder(),
                 "ew_kernel_create": FakeCreate(), "ew_kernel_launch": Recorder(),
                 "ew_kernel_launch_strided": Recorder(), "ew_kernel_destroy": Recorder()}
    yield install(monkeypatch, recorders)
    ew._ext.set_recorder(None)


CAST_AMAX = "out0 = in0; out1 = in0;"


def reduce_kernel(reduce="abs_max", reduce_dtype="f32", in_dtypes=("f32",), n_params=0):
    return ew.Kernel(CAST_AMAX, "f16", in_dtypes, n_params, reduce=reduce, reduce_dtype=reduce_dtype,
                     handle=ew.Handle._from_raw(None))


def test_a_reduction_kernel_passes_the_c_api_its_outputs(outputs_calls):
    kernel = reduce_kernel(reduce="max", reduce_dtype="float64", in_dtypes=("f32", "bf16"), n_params=1)
    args = outputs_calls["ew_kernel_create_outputs"].args
    assert args == (None, CAST_AMAX.encode(), ((ew.DType.F16, 0), (ew.DType.F64, ew.ReduceOp.MAX)), 2,
                    (ew.DType.F32, ew.DType.BF16), 1)
    assert outputs_calls["ew_kernel_create"].args is None
    assert (kernel.reduce, kernel.reduce_dtype, kernel.out_dtype) == (ew.ReduceOp.MAX, ew.DType.F64, ew.DType.F16)
    assert "-> f16, max into f64" in repr(kernel)
    assert (make_kernel().reduce, make_kernel().reduce_dtype) == (None, None)
    for name, op in (("abs_max", 1), ("min", 3), ("sum", 4), (ew.ReduceOp.SUM, 4), (2, 2)):
        assert reduce_kernel(reduce=name).reduce == op
    with pytest.raises(ValueError, match="reduce='amax'"):
        reduce_kernel(reduce="amax")
    with pytest.raises(ValueError):
        reduce_kernel(reduce=7)


def test_a_reduction_kernel_launch_passes_the_c_api_its_outputs(outputs_calls):
    kernel = reduce_kernel(n_params=1)
    out, scalar, x = FakeArray(typestr="<f2", pointer=0x100), FakeArray(shape=(), pointer=0x900), FakeArray(pointer=0x200)
    result = kernel(x, out=(out, scalar), params=(0.5,), stream=7)
    assert result[0] is out and result[1] is scalar
    assert outputs_calls["ew_kernel_launch_outputs"].args == (KERNEL, 4, (0x100, 0x900), 0, (0x200,), (0.5,), 7)
    kernel(x, out=[out, FakeArray(shape=(1,), pointer=0x900)], params=(0.5,), accumulate=True, stream=7)
    assert outputs_calls["ew_kernel_launch_outputs"].args[3] == int(ew.ReduceMode.ACCUMULATE)
    f64 = reduce_kernel(reduce="sum", reduce_dtype="f64")
    f64(x, out=(out, FakeArray(shape=(), typestr="<f8", pointer=0x908)))
    assert outputs_calls["ew_kernel_launch_outputs"].args[2] == (0x100, 0x908)
    assert outputs_calls["ew_kernel_launch"].args is None


def test_a_reduction_kernel_makes_the_outputs_it_is_not_given(outputs_calls, fake_cupy):
    x = cupy_array(shape=(2, 3), pointer=0x200)
    out, scalar = reduce_kernel()(x, stream=5)
    assert fake_cupy.made == [("empty_like", (2, 3), "float16"), ("empty", (), "float32")]
    assert outputs_calls["ew_kernel_launch_outputs"].args == (KERNEL, 6, (0xA000, 0xB000), 0, (0x200,), (), 5)
    assert scalar.__cuda_array_interface__["shape"] == ()
    given = cupy_array(shape=(2, 3), typestr="<f2", pointer=0x300)
    assert reduce_kernel()(x, out=(given, None), stream=5)[0] is given
    assert fake_cupy.made[2] == ("empty", (), "float32")


def test_a_reduction_kernel_on_views_takes_the_strided_launch(outputs_calls):
    kernel = reduce_kernel()
    row, out, scalar = FakeArray(shape=(4,), pointer=0x200), FakeArray(shape=(3, 4), typestr="<f2", pointer=0x100), \
        FakeArray(shape=(), pointer=0x900)
    assert kernel(row, out=(out, scalar), accumulate=True, stream=3) == (out, scalar)
    assert outputs_calls["ew_kernel_launch_outputs"].args is None
    assert outputs_calls["ew_kernel_launch_outputs_strided"].args == (
        KERNEL, 2, (3, 4), (0x100, 0x900), ((4, 1), None), 1, (0x200,), ((0, 1),), (), 3)


def test_reduction_kernel_calls_check_their_outputs_before_the_library(outputs_calls):
    kernel = reduce_kernel()
    out, scalar, x = FakeArray(typestr="<f2"), FakeArray(shape=(), pointer=0x900), FakeArray(pointer=0x200)
    with pytest.raises(TypeError, match="a pair"):
        kernel(x, out=out)
    with pytest.raises(TypeError, match="a pair"):
        kernel(x, out=(out,))
    with pytest.raises(TypeError, match="accumulate=True needs"):
        kernel(x, out=(out, None), accumulate=True)
    with pytest.raises(TypeError, match="accumulate= is for a kernel with a reduction output"):
        make_kernel()(x, x, out=FakeArray(), accumulate=True)
    with pytest.raises(TypeError, match="out.1. is F16; it must be a float32 array of one element"):
        kernel(x, out=(out, FakeArray(shape=(), typestr="<f2", pointer=0x900)))
    with pytest.raises(TypeError, match="float64 array of one element"):
        reduce_kernel(reduce_dtype="f64")(x, out=(out, scalar))
    with pytest.raises(ValueError, match="must hold one element"):
        kernel(x, out=(out, FakeArray(shape=(2,), pointer=0x900)))
    with pytest.raises(ValueError, match="out is F32 but the kernel makes F16"):
        kernel(x, out=(FakeArray(), scalar))
    with pytest.raises(TypeError, match="takes 1 inputs, 2 given"):
        kernel(out, x)  # no out-first form
    assert outputs_calls["ew_kernel_launch_outputs"].args is None
    outputs_calls["ew_kernel_launch_outputs"].status = int(ew.Status.INVALID_VALUE)
    with pytest.raises(ew.ElementwiseError) as caught:
        kernel(x, out=(out, scalar))
    assert caught.value.function == "ew_kernel_launch_outputs"


# ---- Kernel of several arrays: out_dtype a sequence, ew_kernel_create_outputs ----

SUM_PRODUCT = "out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);"
F16, F32, F64 = ew.DType.F16, ew.DType.F32, ew.DType.F64


def arrays_kernel(out_dtype=("f32", "f16"), in_dtypes=("f32", "f32"), source=SUM_PRODUCT, **kw):
    return ew.Kernel(source, out_dtype, in_dtypes, handle=ew.Handle._from_raw(None), **kw)


def test_a_kernel_of_several_arrays_passes_the_c_api_its_outputs_in_order(outputs_calls):
    kernel = arrays_kernel(out_dtype=("float32", TorchLikeDtype("float16")))
    assert outputs_calls["ew_kernel_create_outputs"].args == (None, SUM_PRODUCT.encode(), ((F32, 0), (F16, 0)), 2,
                                                               (F32, F32), 0)
    assert outputs_calls["ew_kernel_create"].args is None
    assert (kernel.out_dtype, kernel.reduce, kernel.reduce_dtype) == ((F32, F16), None, None)
    assert "-> (f32, f16)," in repr(kernel)
    # With reduce=: the reduction after the arrays, as out1 follows out0 in the one-array form.
    kernel = arrays_kernel(out_dtype=["bf16", "f32", "f16"], source="out0 = in0; out1 = in0; out2 = in0; out3 = in0;",
                           reduce="abs_max", reduce_dtype="f64")
    assert outputs_calls["ew_kernel_create_outputs"].args[2] == (
        (ew.DType.BF16, 0), (F32, 0), (F16, 0), (F64, ew.ReduceOp.ABS_MAX))
    assert (kernel.out_dtype, kernel.reduce, kernel.reduce_dtype) == (
        (ew.DType.BF16, F32, F16), ew.ReduceOp.ABS_MAX, F64)
    assert "-> (bf16, f32, f16, abs_max into f64)," in repr(kernel)
    # A sequence of one dtype is the outputs form too (the body assigns out0); a single dtype with
    # reduce= is the pair form, unchanged.
    assert arrays_kernel(out_dtype=["f32"], source="out0 = in0;").out_dtype == (F32,)
    assert outputs_calls["ew_kernel_create_outputs"].args[2] == ((F32, 0),)
    arrays_kernel(out_dtype="f16", source=CAST_AMAX, reduce="max")
    assert outputs_calls["ew_kernel_create_outputs"].args[2] == ((F16, 0), (F32, ew.ReduceOp.MAX))
    # Counts and combinations are the library's to refuse: passed on as they are.
    arrays_kernel(out_dtype=("f32",) * 5)
    assert outputs_calls["ew_kernel_create_outputs"].args[2] == ((F32, 0),) * 5
    with pytest.raises(TypeError, match="unknown dtype"):
        arrays_kernel(out_dtype=("f32", "f99"))


def test_a_kernel_of_several_arrays_launches_flat_with_its_outputs_in_order(outputs_calls):
    kernel = arrays_kernel()
    a, b = FakeArray(shape=(3, 5), pointer=0x200), FakeArray(shape=(3, 5), pointer=0x300)
    total, product = FakeArray(shape=(3, 5), pointer=0x100), FakeArray(shape=(3, 5), typestr="<f2", pointer=0x400)
    result = kernel(a, b, out=(total, product), stream=7)
    assert type(result) is tuple and result[0] is total and result[1] is product
    assert outputs_calls["ew_kernel_launch_outputs"].args == (KERNEL, 15, (0x100, 0x400), 0, (0x200, 0x300), (), 7)
    kernel(a, b, out=[total, product], stream=7)  # a list does as well
    assert outputs_calls["ew_kernel_launch_outputs"].args[2] == (0x100, 0x400)
    # Three arrays and a reduction, accumulated: the scalar's pointer last, as the kernel orders it.
    kernel = arrays_kernel(out_dtype=("f32", "f16", "f32"), in_dtypes=("f32",), n_params=1, reduce="abs_max",
                           source="out0 = in0; out1 = in0; out2 = p0 * in0; out3 = in0;")
    x, third, amax = FakeArray(shape=(3, 5), pointer=0x200), FakeArray(shape=(3, 5), pointer=0x500), \
        FakeArray(shape=(), pointer=0x900)
    result = kernel(x, out=(total, product, third, amax), params=(2,), accumulate=True, stream=7)
    assert result == (total, product, third, amax)
    assert outputs_calls["ew_kernel_launch_outputs"].args == (
        KERNEL, 15, (0x100, 0x400, 0x500, 0x900), int(ew.ReduceMode.ACCUMULATE), (0x200,), (2.0,), 7)
    assert outputs_calls["ew_kernel_launch"].args is None
    assert outputs_calls["ew_kernel_launch_outputs_strided"].args is None


def test_a_kernel_of_several_arrays_makes_the_outputs_it_is_not_given(outputs_calls, fake_cupy):
    kernel = arrays_kernel(out_dtype=("f32", "f16", "f16"), source="out0 = in0; out1 = in1; out2 = in0;",
                           reduce="sum")
    a, b = cupy_array(shape=(2, 3), pointer=0x200), cupy_array(shape=(2, 3), pointer=0x300)
    made = kernel(a, b, stream=5)
    assert len(made) == 4 and all(isinstance(array, FakeCupyArray) for array in made)
    assert fake_cupy.made == [("empty_like", (2, 3), "float32"), ("empty_like", (2, 3), "float16"),
                              ("empty_like", (2, 3), "float16"), ("empty", (), "float32")]
    assert [array.__cuda_array_interface__["typestr"] for array in made] == ["<f4", "<f2", "<f2", "<f4"]
    assert made[3].__cuda_array_interface__["shape"] == ()
    assert outputs_calls["ew_kernel_launch_outputs"].args == (
        KERNEL, 6, (0xA000, 0xA000, 0xA000, 0xB000), 0, (0x200, 0x300), (), 5)
    # Some given: the rest made of the given arrays' shape, the given ones returned as they are.
    del fake_cupy.made[:]
    second = cupy_array(shape=(2, 3), typestr="<f2", pointer=0x400)
    result = kernel(a, b, out=(None, second, None, None), stream=5)
    assert result[1] is second and fake_cupy.made[:2] == [("empty_like", (2, 3), "float32"),
                                                          ("empty_like", (2, 3), "float16")]
    assert outputs_calls["ew_kernel_launch_outputs"].args[2] == (0xA000, 0x400, 0xA000, 0xB000)


def test_a_kernel_of_several_arrays_takes_the_first_given_arrays_shape(outputs_calls, fake_cupy):
    kernel = arrays_kernel()
    a, b = FakeArray(shape=(3, 5), pointer=0x200), FakeArray(shape=(3, 5), pointer=0x300)
    with pytest.raises(ValueError, match=r"out\[1\] has shape \(15,\) but out\[0\] has shape \(3, 5\): a kernel's "
                                         r"arrays are of one shape"):
        kernel(a, b, out=(FakeArray(shape=(3, 5)), FakeArray(shape=(15,), typestr="<f2", pointer=0x400)))
    with pytest.raises(ValueError, match=r"in0 has shape \(3, 5\), more dimensions than out\[0\]'s \(4,\)"):
        kernel(a, b, out=(FakeArray(shape=(4,)), None))
    assert outputs_calls["ew_kernel_launch_outputs"].args is None and fake_cupy.made == []
    # out[0] made of out[1]'s shape, not the inputs' broadcast one (a row: the launch is strided).
    row = cupy_array(shape=(5,), pointer=0x200)
    second = cupy_array(shape=(3, 5), typestr="<f2", pointer=0x400)
    first, given = kernel(row, row, out=(None, second), stream=5)
    assert given is second and first.__cuda_array_interface__["shape"] == (3, 5)
    assert fake_cupy.made == [("empty", (3, 5), "float32")]
    assert outputs_calls["ew_kernel_launch_outputs_strided"].args[1:4] == (2, (3, 5), (0xB000, 0x400))


def test_kernel_of_several_arrays_calls_check_their_outputs_before_the_library(outputs_calls, fake_cupy):
    kernel = arrays_kernel()
    a, b = FakeArray(pointer=0x200), FakeArray(pointer=0x300)
    total, product = FakeArray(pointer=0x100), FakeArray(typestr="<f2", pointer=0x400)
    for out in (total, (total,), (total, product, product), "ab"):
        with pytest.raises(TypeError, match=r"out= of this kernel is a pair \(array, array\), either of them None"):
            kernel(a, b, out=out)
    with pytest.raises(ValueError, match="out.1. is F32 but the kernel makes F16"):
        kernel(a, b, out=(total, FakeArray(pointer=0x400)))
    with pytest.raises(ValueError, match="out.0. is F16 but the kernel makes F32"):
        kernel(a, b, out=(product, None))
    with pytest.raises(ValueError, match="out.1.: the output array is read-only"):
        kernel(a, b, out=(total, FakeArray(typestr="<f2", pointer=0x400, read_only=True)))
    with pytest.raises(TypeError, match="out.1.: object has neither"):
        kernel(a, b, out=(total, object()))
    with pytest.raises(TypeError, match="accumulate= is for a kernel with a reduction output"):
        kernel(a, b, out=(total, product), accumulate=True)
    with pytest.raises(TypeError, match="takes 2 inputs, 3 given"):
        kernel(total, a, b)  # no out-first form
    reducing = arrays_kernel(reduce="max")
    with pytest.raises(TypeError, match=r"a tuple \(array, array, scalar\), any of them None"):
        reducing(a, b, out=(total, product))
    with pytest.raises(TypeError, match=r"accumulate=True needs out=\(array, array, scalar\): the scalar"):
        reducing(a, b, out=(total, product, None), accumulate=True)
    with pytest.raises(TypeError, match="out.2. is F16; it must be a float32 array of one element"):
        reducing(a, b, out=(total, product, FakeArray(shape=(), typestr="<f2", pointer=0x900)))
    with pytest.raises(TypeError, match=r"a tuple \(array,\), any of them None"):
        arrays_kernel(out_dtype=["f32"], source="out0 = in0;")(a, b, out=total)
    # Refused before making anything.
    with pytest.raises(ValueError, match="in1 is F16 but the kernel takes F32"):
        kernel(cupy_array(pointer=0x200), cupy_array(typestr="<f2", pointer=0x300))
    assert fake_cupy.made == []
    assert all(outputs_calls[name].args is None for name in ("ew_kernel_launch_outputs",
                                                             "ew_kernel_launch_outputs_strided", "ew_kernel_launch"))


def test_a_kernel_of_several_arrays_on_views_takes_the_strided_launch(outputs_calls):
    kernel = arrays_kernel()
    a = FakeArray(shape=(3, 4), pointer=0x200, strides=(4, 12))  # a (4, 3) array, transposed
    row = FakeArray(shape=(4,), pointer=0x300)
    total, product = FakeArray(shape=(3, 4), pointer=0x100), FakeArray(shape=(3, 4), typestr="<f2", pointer=0x400)
    kernel(a, row, out=(total, product), stream=3)
    assert outputs_calls["ew_kernel_launch_outputs"].args is None
    assert outputs_calls["ew_kernel_launch_outputs_strided"].args == (
        KERNEL, 2, (3, 4), (0x100, 0x400), ((4, 1), (4, 1)), 0, (0x200, 0x300), ((1, 3), (0, 1)), (), 3)
    # A non-contiguous array among the outputs alone makes the launch strided as well, a scalar's strides None.
    x = FakeArray(shape=(3, 4), pointer=0x200)
    reducing = arrays_kernel(in_dtypes=("f32",), reduce="sum", source="out0 = in0; out1 = in0; out2 = in0;")
    strided = FakeArray(shape=(3, 4), typestr="<f2", pointer=0x400, strides=(16, 2))
    reducing(x, out=(total, strided, FakeArray(shape=(), pointer=0x900)), stream=3)
    assert outputs_calls["ew_kernel_launch_outputs_strided"].args == (
        KERNEL, 2, (3, 4), (0x100, 0x400, 0x900), ((4, 1), (8, 1), None), 0, (0x200,), ((4, 1),), (), 3)
    # The library's refusal (INVALID_VALUE, as for arrays whose spans meet) is the call's exception.
    outputs_calls["ew_kernel_launch_outputs_strided"].status = int(ew.Status.INVALID_VALUE)
    with pytest.raises(ew.ElementwiseError) as caught:
        kernel(a, row, out=(total, product))
    assert caught.value.status == ew.Status.INVALID_VALUE
    assert caught.value.function == "ew_kernel_launch_outputs_strided"
    # Empty operands launch flat whatever their strides, as for every kernel.
    outputs_calls["ew_kernel_launch_outputs"].args = None
    empty = FakeArray(shape=(0, 4), pointer=0)
    kernel(empty, empty, out=(empty, FakeArray(shape=(0, 4), typestr="<f2", strides=(2, 64))), stream=3)
    assert outputs_calls["ew_kernel_launch_outputs"].args == (KERNEL, 0, (None, None), 0, (None, None), (), 3)


def test_further_arrays_take_part_in_the_stream_device_and_dlpack(outputs_calls):
    kernel = arrays_kernel(out_dtype=("f32", "f32"))
    a, b, total = FakeArray(pointer=0x200), FakeArray(pointer=0x300), FakeArray(pointer=0x100)
    kernel(a, b, out=(total, FakeArray(pointer=0x400, stream=0x99)))  # the stream out[1]'s interface names
    assert outputs_calls["ew_kernel_launch_outputs"].args[-1] == 0x99
    with pytest.raises(ValueError, match="different streams"):
        kernel(a, b, out=(FakeArray(pointer=0x100, stream=0x98), FakeArray(pointer=0x400, stream=0x99)))
    second = FakeDLPack(pointer=0x4000)
    kernel(a, b, out=(total, second), stream=0x77)
    assert second.calls == [dict(stream=0x77, max_version=MAX_VERSION, copy=False)]
    assert outputs_calls["ew_kernel_launch_outputs"].args[2] == (0x100, 0x4000)
    with pytest.raises(ValueError, match="out.1. is on device 1 but the call runs on device 0"):
        kernel(a, b, out=(total, FakeDLPack(pointer=0x4000, device=(2, 1))))
    with pytest.raises(ValueError, match="out.1.: the output array is read-only"):
        kernel(a, b, out=(total, FakeDLPack(pointer=0x4000, read_only=True)))


def test_the_real_library_refuses_null_kernels_of_several_arrays_by_their_functions():
    # No recorder: what reaches the library, which refuses the NULL handle or kernel first.
    with pytest.raises(ew.ElementwiseError) as caught:
        arrays_kernel()
    assert caught.value.status == ew.Status.INVALID_HANDLE and caught.value.function == "ew_kernel_create_outputs"
    kernel = ew.Kernel._from_raw(None, ("f32", "f16"), ("f32", "f32"))
    total, product = FakeArray(shape=(3, 4), pointer=0x100), FakeArray(shape=(3, 4), typestr="<f2", pointer=0x400)
    for a, function in ((FakeArray(shape=(3, 4), pointer=0x200), "ew_kernel_launch_outputs"),
                        (FakeArray(shape=(4,), pointer=0x200), "ew_kernel_launch_outputs_strided")):
        with pytest.raises(ew.ElementwiseError) as caught:
            kernel(a, a, out=(total, product))
        assert caught.value.status == ew.Status.INVALID_HANDLE and caught.value.function == function
        assert caught.value.message == ew._last_error_message()


def test_kernel_cache_fill_of_several_arrays_without_a_gpu(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("EW_KERNEL_CACHE_DIR", str(cache))
    monkeypatch.delenv("EW_KERNEL_CACHE", raising=False)
    source = SUM_PRODUCT + " // fill %d" % os.getpid()
    try:
        ew.kernel_cache_fill(source, ("f32", "f16"), ("f32", "f32"), arch="sm_90")
    except ew.ElementwiseError as error:
        assert error.status == ew.Status.NOT_SUPPORTED and "NVRTC" in str(error), error
        pytest.skip("no NVRTC to compile with: %s" % error)
    filled = len(list(cache.glob("*.ewk")))
    assert filled >= 1
    ew.kernel_cache_fill("out0 = in0; out1 = in0; out2 = in0; // fill %d" % os.getpid(), ["f16", "bf16"], "f32",
                         arch="sm_90", reduce="abs_max")  # with a reduction: programs of its own
    assert len(list(cache.glob("*.ewk"))) > filled
    # The library's refusals of the outputs, as ElementwiseError with its message.
    refusals = [((), None, ew.Status.INVALID_VALUE, "1 to 4 outputs"),  # no output at all
                (("f32",) * 5, None, ew.Status.INVALID_VALUE, "1 to 4 outputs"),
                (("f32",) * 4, "max", ew.Status.INVALID_VALUE, "1 to 4 outputs"),  # 4 arrays and a reduction
                ((), "max", ew.Status.NOT_SUPPORTED, "at least one array")]
    for out_dtype, reduce, status, message in refusals:
        with pytest.raises(ew.ElementwiseError) as caught:
            ew.kernel_cache_fill("out0 = in0;", out_dtype, "f32", arch="sm_90", reduce=reduce)
        assert caught.value.function == "ew_kernel_cache_fill_outputs"
        assert caught.value.status == status and message in caught.value.message, caught.value


# ---- Kernel over tensor lists: Kernel.batched, ew_kernel_launch_batched ----

@pytest.fixture
def batched_calls(monkeypatch):
    recorders = {"ew_kernel_create": FakeCreate(), "ew_kernel_create_outputs": FakeCreate(),
                 "ew_kernel_launch_batched": Recorder(), "ew_kernel_destroy": Recorder()}
    yield install(monkeypatch, recorders)
    ew._ext.set_recorder(None)


def batched_args(calls):
    """What reached ew_kernel_launch_batched: kernel, count, n, outputs, mode, inputs, params, entry_params,
    stream."""
    args = calls["ew_kernel_launch_batched"].args
    assert args is not None, "ew_kernel_launch_batched was not called"
    return args


def entries(shapes, base, typestr="<f4", **kw):
    """FakeArrays of these shapes at base + 0x1000 * i (an empty one at NULL, as the module passes it)."""
    return [FakeArray(shape=shape, typestr=typestr, pointer=base + 0x1000 * i, **kw) for i, shape in enumerate(shapes)]


LIST_SHAPES = [(3,), (2, 5), (0,), (7,)]


def test_kernel_batched_is_documented():
    assert ew.Kernel.batched.__doc__ and "entry_params" in ew.Kernel.batched.__doc__
    assert "batched" in ew.Kernel.__doc__ and ew._ext.kernel_launch_batched.__doc__


def test_a_kernel_over_lists_passes_the_c_api_its_arguments(batched_calls):
    kernel = make_kernel(out_dtype="f16", n_params=2)
    outs = entries(LIST_SHAPES, 0x10000, "<f2")
    as_, bs = entries(LIST_SHAPES, 0x20000), entries(LIST_SHAPES, 0x30000)
    result = kernel.batched(as_, bs, out=outs, params=(1.5, 2), stream=9)
    assert type(result) is list and result == outs and all(got is want for got, want in zip(result, outs))
    assert batched_args(batched_calls) == (
        KERNEL, 4, (3, 10, 0, 7), ((0x10000, 0x11000, None, 0x13000),), 0,
        ((0x20000, 0x21000, None, 0x23000), (0x30000, 0x31000, None, 0x33000)), (1.5, 2.0), None, 9)
    # Any sequences; the stream the arrays' interfaces name; no params for a kernel that takes none.
    make_kernel().batched(tuple(as_[:2]), (b for b in bs[:2]), out=tuple(entries(LIST_SHAPES[:2], 0x40000, "<f4",
                                                                                  stream=0x99)))
    assert batched_args(batched_calls)[1:] == (2, (3, 10), ((0x40000, 0x41000),), 0,
                                               ((0x20000, 0x21000), (0x30000, 0x31000)), (), None, 0x99)
    # In place: an entry's output its input exactly.
    make_kernel().batched(as_, bs, out=as_, stream=9)
    args = batched_args(batched_calls)
    assert args[3] == (args[5][0],)


def test_a_kernel_of_several_arrays_over_lists_takes_a_list_per_output(batched_calls):
    kernel = arrays_kernel()  # out0 f32, out1 f16
    as_, bs = entries(LIST_SHAPES, 0x20000), entries(LIST_SHAPES, 0x30000)
    totals, products = entries(LIST_SHAPES, 0x10000), entries(LIST_SHAPES, 0x50000, "<f2")
    result = kernel.batched(as_, bs, out=(totals, products), stream=3)
    assert type(result) is tuple and len(result) == 2 and result[0] == totals and result[1] == products
    assert batched_args(batched_calls) == (
        KERNEL, 4, (3, 10, 0, 7), ((0x10000, 0x11000, None, 0x13000), (0x50000, 0x51000, None, 0x53000)), 0,
        ((0x20000, 0x21000, None, 0x23000), (0x30000, 0x31000, None, 0x33000)), (), None, 3)
    kernel.batched(as_, bs, out=[totals, products], stream=3)  # a list of lists does as well
    assert batched_args(batched_calls)[3][1][0] == 0x50000
    # A sequence of one dtype is the outputs form: a tuple of one list.
    one = arrays_kernel(out_dtype=["f32"], source="out0 = in0;", in_dtypes=("f32",))
    assert one.batched(as_, out=(totals,), stream=3) == (totals,)
    assert batched_args(batched_calls)[3:6] == (((0x10000, 0x11000, None, 0x13000),), 0,
                                                ((0x20000, 0x21000, None, 0x23000),))
    # Three arrays in place over four input lists: the AdamW form.
    step = arrays_kernel(out_dtype=("f32",) * 3, in_dtypes=("f32",) * 4, n_params=7,
                         source="out0 = in0; out1 = in2; out2 = in3;")
    ps, gs, ms, vs = (entries(LIST_SHAPES, base) for base in (0x10000, 0x20000, 0x30000, 0x40000))
    assert step.batched(ps, gs, ms, vs, out=(ps, ms, vs), params=range(7), stream=3) == (ps, ms, vs)
    args = batched_args(batched_calls)
    assert args[3] == (args[5][0], args[5][2], args[5][3]) and args[6] == tuple(float(k) for k in range(7))


def test_entry_params_pass_their_pointer_instead_of_params(batched_calls):
    kernel = make_kernel(in_dtypes=("f32",), n_params=2, source="return in0 * p0 + p1;")
    xs, outs = entries(LIST_SHAPES, 0x20000), entries(LIST_SHAPES, 0x10000)
    table = FakeArray(shape=(4, 2), typestr="<f8", pointer=0x9000)  # entry i's two params in row i
    assert kernel.batched(xs, out=outs, entry_params=table, stream=5) == outs
    assert batched_args(batched_calls)[6:] == (None, 0x9000, 5)
    kernel.batched(xs, out=outs, entry_params=FakeArray(shape=(8,), typestr="<f8", pointer=0x9100), params=(),
                   stream=5)  # params=() is no params
    assert batched_args(batched_calls)[6:] == (None, 0x9100, 5)
    # Its stream, when it names one, is the call's; through DLPack it is exported on the call's stream.
    kernel.batched(xs, out=outs, entry_params=FakeArray(shape=(8,), typestr="<f8", pointer=0x9100, stream=0x77))
    assert batched_args(batched_calls)[-1] == 0x77
    dlpack = FakeDLPack(shape=(8,), code=(2, 64), pointer=0x9200)
    kernel.batched(xs, out=outs, entry_params=dlpack, stream=0x55)
    assert dlpack.calls == [dict(stream=0x55, max_version=MAX_VERSION, copy=False)]
    assert batched_args(batched_calls)[6:] == (None, 0x9200, 0x55)


def test_entry_params_are_checked_before_the_library(batched_calls):
    kernel = make_kernel(in_dtypes=("f32",), n_params=2, source="return in0 * p0 + p1;")
    xs, outs = entries(LIST_SHAPES, 0x20000), entries(LIST_SHAPES, 0x10000)
    table = FakeArray(shape=(8,), typestr="<f8", pointer=0x9000)
    with pytest.raises(TypeError, match=r"params= \(every entry's\) or entry_params= \(each entry's own\), not both"):
        kernel.batched(xs, out=outs, params=(1.0, 2.0), entry_params=table)
    with pytest.raises(TypeError, match="entry_params is F32; it must be a float64 array of count \\* n_params = 8"):
        kernel.batched(xs, out=outs, entry_params=FakeArray(shape=(8,), pointer=0x9000))
    with pytest.raises(ValueError, match="entry_params has 6 values but 4 entries of 2 params take 8"):
        kernel.batched(xs, out=outs, entry_params=FakeArray(shape=(6,), typestr="<f8", pointer=0x9000))
    with pytest.raises(ValueError, match=r"entry_params is not contiguous \(strides \(2,\) in elements\)"):
        kernel.batched(xs, out=outs, entry_params=FakeArray(shape=(8,), typestr="<f8", pointer=0x9000, strides=(16,)))
    with pytest.raises(ValueError, match="entry_params is on device 1 but the call runs on device 0"):
        kernel.batched(xs, out=outs, entry_params=FakeDLPack(shape=(8,), code=(2, 64), device=(2, 1)))
    with pytest.raises(TypeError, match="entry_params: object has neither"):
        kernel.batched(xs, out=outs, entry_params=object())
    with pytest.raises(TypeError, match="the kernel takes 2 params, 1 given"):
        kernel.batched(xs, out=outs, params=(1.0,))
    with pytest.raises(TypeError, match="the kernel takes 2 params, 0 given"):
        kernel.batched(xs, out=outs)
    assert batched_calls["ew_kernel_launch_batched"].args is None


def test_an_empty_list_is_one_list_launch_of_no_entries(batched_calls):
    kernel = make_kernel(n_params=1)
    assert kernel.batched([], [], out=[], params=(2,), stream=4) == []
    assert batched_args(batched_calls) == (KERNEL, 0, (), ((),), 0, ((), ()), (2.0,), None, 4)
    assert make_kernel().batched((), ()) == []  # nothing to make
    assert arrays_kernel().batched([], []) == ([], [])
    assert batched_args(batched_calls)[1:6] == (0, (), ((), ()), 0, ((), ()))
    scaled = make_kernel(in_dtypes=("f32",), n_params=3, source="return in0 * p0;")
    assert scaled.batched([], entry_params=FakeArray(shape=(0,), typestr="<f8", pointer=0), stream=4) == []
    assert batched_args(batched_calls)[6:] == (None, None, 4)  # an empty array's pointer is NULL
    with pytest.raises(ValueError, match="entry_params has 3 values but 0 entries of 3 params take 0"):
        scaled.batched([], entry_params=FakeArray(shape=(3,), typestr="<f8", pointer=0x9000))


def test_lists_of_a_kernel_are_checked_before_the_library(batched_calls):
    kernel = make_kernel(out_dtype="f16")
    as_, bs, outs = entries(LIST_SHAPES, 0x20000), entries(LIST_SHAPES, 0x30000), entries(LIST_SHAPES, 0x10000, "<f2")
    refusals = [
        (lambda: kernel.batched(as_, bs[:3], out=outs), ValueError, "in1 has 3 entries but in0 has 4"),
        (lambda: kernel.batched(as_, bs, out=outs[:2]), ValueError, "out has 2 entries but in0 has 4"),
        (lambda: kernel.batched(as_, out=outs), TypeError, "the kernel takes 2 input lists, 1 given"),
        (lambda: kernel.batched(as_, bs, bs, out=outs), TypeError, "the kernel takes 2 input lists, 3 given"),
        (lambda: kernel.batched(as_, bs, out=outs[:3] + [FakeArray(shape=(7,), pointer=0x13000)]), ValueError,
         r"out\[3\] is F32 but the kernel makes F16"),
        (lambda: kernel.batched(as_[:3] + [FakeArray(shape=(7,), typestr="<f2")], bs, out=outs), ValueError,
         r"in0\[3\] is F16 but the kernel takes F32"),
        (lambda: kernel.batched(as_, bs[:1] + [FakeArray(shape=(10,), pointer=0x31000)] + bs[2:], out=outs),
         ValueError, r"in1\[1\] has shape \(10,\) but in0\[1\] has \(2, 5\); list entries are not broadcast"),
        (lambda: kernel.batched(as_, bs, out=[FakeArray(shape=(1, 3), typestr="<f2")] + outs[1:]), ValueError,
         r"out\[0\] has shape \(1, 3\) but in0\[0\] has \(3,\)"),
        (lambda: kernel.batched(as_, bs[:1] + [FakeArray(shape=(2, 5), strides=(40, 8))] + bs[2:], out=outs),
         ValueError, r"in1\[1\] is not contiguous \(strides \(10, 2\) in elements\); the list calls take contiguous"),
        (lambda: kernel.batched(as_, bs, out=outs[:1] + [FakeArray(shape=(2, 5), typestr="<f2", read_only=True)]
                                + outs[2:]), ValueError, r"out\[1\]: the output array is read-only"),
        (lambda: kernel.batched(as_, bs[:3] + [object()], out=outs), TypeError, r"in1\[3\]: object has neither"),
        (lambda: kernel.batched(as_, bs, out=outs[:3] + [FakeDLPack(shape=(7,), code=(2, 16), device=(2, 1))]),
         ValueError, r"out\[3\] is on device 1 but the call runs on device 0"),
        (lambda: kernel.batched(as_, bs[:3] + [FakeArray(shape=(7,), stream=6)], out=outs[:3] +
                                [FakeArray(shape=(7,), typestr="<f2", stream=5)]), ValueError, "different streams"),
        # Not lists: an array (which would iterate over its rows), a number, None, a string.
        (lambda: kernel.batched(FakeArray(), bs, out=outs), TypeError,
         "in0 must be a sequence of arrays, one an entry, not FakeArray"),
        (lambda: kernel.batched(as_, 5, out=outs), TypeError,
         "in1 must be a sequence of arrays, one an entry, not int"),
        (lambda: kernel.batched(None, bs, out=outs), TypeError, "in0 must be a sequence of arrays, one an entry"),
        (lambda: kernel.batched(as_, "ab"), TypeError, "in1 must be a sequence of arrays, one an entry, not str"),
        (lambda: kernel.batched(as_, bs, out=FakeArray()), TypeError, "out must be a sequence of arrays"),
        (lambda: kernel.batched(as_, bs, out=outs, params=5), TypeError, "not iterable"),
        (lambda: kernel.batched(as_, bs, out=outs, dtype="f32"), TypeError, "unexpected keyword argument 'dtype'"),
    ]
    for call, error, match in refusals:
        with pytest.raises(error, match=match):
            call()
    several = arrays_kernel()
    totals, products = entries(LIST_SHAPES, 0x10000), entries(LIST_SHAPES, 0x50000, "<f2")
    for out in (totals, (totals,), (totals, products, products), "ab", FakeArray()):
        with pytest.raises(TypeError, match=r"out= of this kernel is a tuple of 2 lists, one per output in its "
                                            r"order \(a reduction's of scalars\), any of them None"):
            several.batched(as_, bs, out=out)
    with pytest.raises(TypeError, match=r"out\[1\] must be a sequence of arrays, one an entry, not FakeArray"):
        several.batched(as_, bs, out=(totals, FakeArray(typestr="<f2")))
    with pytest.raises(ValueError, match=r"out\[1\] has 3 entries but in0 has 4"):
        several.batched(as_, bs, out=(totals, products[:3]))
    with pytest.raises(ValueError, match=r"out\[1\]\[2\] is F32 but the kernel makes F16"):
        several.batched(as_, bs, out=(totals, products[:2] + [FakeArray(shape=(0,))] + products[3:]))
    with pytest.raises(ValueError, match=r"out\[0\]\[1\] has shape \(10,\) but in0\[1\] has \(2, 5\)"):
        several.batched(as_, bs, out=(totals[:1] + [FakeArray(shape=(10,))] + totals[2:], products))
    assert batched_calls["ew_kernel_launch_batched"].args is None
    # Still whole after all that: a good call goes through.
    kernel.batched(as_, bs, out=outs, stream=9)
    assert batched_args(batched_calls)[1] == 4


def test_a_kernel_over_lists_makes_the_outputs_it_is_not_given(batched_calls, fake_cupy):
    xs = [cupy_array(shape=(3,), pointer=0x200), cupy_array(shape=(2, 5), pointer=0x300)]
    made = make_kernel(out_dtype="f16", in_dtypes=("f32",), source="return in0;").batched(xs, stream=4)
    assert len(made) == 2 and all(isinstance(array, FakeCupyArray) for array in made)
    assert fake_cupy.made == [("empty_like", (3,), "float16"), ("empty_like", (2, 5), "float16")]
    assert batched_args(batched_calls)[1:6] == (2, (3, 10), ((0xA000, 0xA000),), 0, ((0x200, 0x300),))
    # Of several arrays: a list None made whole, another given in part (its None entry made).
    del fake_cupy.made[:]
    kernel = arrays_kernel(out_dtype=("f32", "f16"))
    given = cupy_array(shape=(3,), typestr="<f2", pointer=0x900)
    totals, products = kernel.batched(xs, xs, out=(None, [given, None]), stream=4)
    assert products[0] is given and len(totals) == 2
    assert fake_cupy.made == [("empty_like", (3,), "float32"), ("empty_like", (2, 5), "float32"),
                              ("empty_like", (2, 5), "float16")]
    assert batched_args(batched_calls)[3] == ((0xA000, 0xA000), (0x900, 0xA000))
    # Refused before making anything.
    del fake_cupy.made[:]
    with pytest.raises(ValueError, match=r"in1\[0\] is F16 but the kernel takes F32"):
        kernel.batched(xs, [cupy_array(shape=(3,), typestr="<f2"), xs[1]])
    assert fake_cupy.made == []


def test_a_kernel_with_a_reduction_over_lists_takes_a_scalar_per_entry(batched_calls, fake_cupy):
    kernel = reduce_kernel()  # out0 f16, out1 the f32 abs max
    xs, outs = entries(LIST_SHAPES, 0x20000), entries(LIST_SHAPES, 0x10000, "<f2")
    amaxes = [FakeArray(shape=(), pointer=0x900 + 4 * i) for i in range(4)]
    result = kernel.batched(xs, out=(outs, amaxes), stream=3)
    assert type(result) is tuple and result[0] == outs and all(got is want for got, want in zip(result[1], amaxes))
    assert batched_args(batched_calls) == (
        KERNEL, 4, (3, 10, 0, 7), ((0x10000, 0x11000, None, 0x13000), (0x900, 0x904, 0x908, 0x90C)), 0,
        ((0x20000, 0x21000, None, 0x23000),), (), None, 3)
    # One scalar for every entry (the whole list's reduction), accumulated; a (1,) array is a scalar too.
    norm = FakeArray(shape=(1,), pointer=0x980)
    kernel.batched(xs, out=(outs, [norm] * 4), accumulate=True, stream=3)
    assert batched_args(batched_calls)[3][1] == (0x980,) * 4 and batched_args(batched_calls)[4] == 1
    # Scalars not given are made, one of shape () an entry.
    del fake_cupy.made[:]
    cupy_xs = [cupy_array(shape=(3,), pointer=0x200), cupy_array(shape=(2, 5), pointer=0x300)]
    made_outs, made_scalars = kernel.batched(cupy_xs, stream=4)
    assert len(made_scalars) == 2 and all(s.__cuda_array_interface__["shape"] == () for s in made_scalars)
    assert fake_cupy.made.count(("empty", (), "float32")) == 2
    # Refused before the library: what accumulate needs, a scalar's dtype and size, the list's length.
    refusals = [
        (lambda: kernel.batched(xs, out=(outs, None), accumulate=True), TypeError, "accumulate=True needs out"),
        (lambda: kernel.batched(xs, accumulate=True), TypeError, "accumulate=True needs out="),
        (lambda: make_kernel().batched(xs, xs, accumulate=True), TypeError,
         "accumulate= is for a kernel with a reduction output"),
        (lambda: kernel.batched(xs, out=(outs, amaxes[:3])), ValueError, r"out\[1\] has 3 entries but in0 has 4"),
        (lambda: kernel.batched(xs, out=(outs, amaxes[:3] + [FakeArray(shape=(), typestr="<f8", pointer=0x90C)])),
         TypeError, "float32 array of one element"),
        (lambda: kernel.batched(xs, out=(outs, amaxes[:3] + [FakeArray(shape=(2,), pointer=0x90C)])), ValueError,
         "must hold one element"),
        (lambda: kernel.batched(xs, out=outs), TypeError, "out= of this kernel is a tuple of 2 lists"),
    ]
    for call, error, match in refusals:
        with pytest.raises(error, match=match):
            call()


def test_a_failing_list_launch_raises_with_its_name(batched_calls):
    batched_calls["ew_kernel_launch_batched"].status = int(ew.Status.INVALID_VALUE)
    with pytest.raises(ew.ElementwiseError) as caught:
        make_kernel().batched([FakeArray()], [FakeArray()], out=[FakeArray()])
    assert caught.value.function == "ew_kernel_launch_batched" and caught.value.status == ew.Status.INVALID_VALUE
    kernel = make_kernel()
    kernel.close()
    with pytest.raises(ValueError, match="the kernel is closed"):
        kernel.batched([FakeArray()], [FakeArray()], out=[FakeArray()])


def test_the_real_library_takes_or_names_the_list_launch():
    # No recorder: a library with ew_kernel_launch_batched refuses the NULL kernel; an older one is named.
    kernel = ew.Kernel._from_raw(None, "f32", ["f32"])
    call = lambda: kernel.batched([FakeArray(pointer=0x20000)], out=[FakeArray()])  # noqa: E731
    if hasattr(ctypes.CDLL(ew.library_path), "ew_kernel_launch_batched"):
        with pytest.raises(ew.ElementwiseError) as caught:
            call()
        assert caught.value.status == ew.Status.INVALID_HANDLE
        assert caught.value.function == "ew_kernel_launch_batched"
        assert caught.value.message == ew._last_error_message()
    else:
        with pytest.raises(RuntimeError, match=r"has no ew_kernel_launch_batched: it needs 1.2 or later"):
            call()


# ---- Kernel on strided and broadcast arrays: ew_kernel_launch_strided ----

def strided_args(kernel_calls):
    """What reached ew_kernel_launch_strided after the kernel: ndim, shape, out, out's strides, the
    inputs' pointers, their strides, params, stream."""
    assert kernel_calls["ew_kernel_launch"].args is None, "the flat launch was called"
    args = kernel_calls["ew_kernel_launch_strided"].args
    assert args[0] == KERNEL
    return args[1:]


def test_a_kernel_on_a_transposed_input_launches_strided_as_it_is(kernel_calls):
    out = FakeArray(shape=(3, 5), pointer=0x100)
    a = FakeArray(shape=(3, 5), pointer=0x200, strides=(4, 12))  # a (5, 3) array, transposed
    b = FakeArray(shape=(3, 5), pointer=0x300)
    assert make_kernel()(a, b, out=out, stream=7) is out
    assert strided_args(kernel_calls) == (2, (3, 5), 0x100, (5, 1), (0x200, 0x300), ((1, 3), (5, 1)), (), 7)


def test_a_kernel_broadcasts_a_row_and_a_column_with_stride_zero(kernel_calls):
    kernel = make_kernel(n_params=1)
    out, x = FakeArray(shape=(4, 6), pointer=0x100), FakeArray(shape=(4, 6), pointer=0x200)
    kernel(x, FakeArray(shape=(6,), pointer=0x300), out=out, params=(2,), stream=7)
    assert strided_args(kernel_calls) == (2, (4, 6), 0x100, (6, 1), (0x200, 0x300), ((6, 1), (0, 1)), (2.0,), 7)
    kernel(FakeArray(shape=(4, 1), pointer=0x400), x, out=out, params=(2,), stream=7)
    assert strided_args(kernel_calls) == (2, (4, 6), 0x100, (6, 1), (0x400, 0x200), ((1, 0), (6, 1)), (2.0,), 7)
    kernel(FakeArray(shape=(), pointer=0x500), x, out=out, params=(2,), stream=7)  # a scalar: stride 0 throughout
    assert strided_args(kernel_calls) == (2, (4, 6), 0x100, (6, 1), (0x500, 0x200), ((0, 0), (6, 1)), (2.0,), 7)


def test_a_kernel_takes_negative_strides_and_strided_outs(kernel_calls):
    out = FakeArray(shape=(5,), pointer=0x100)
    make_kernel(in_dtypes=["f32"], source="return in0;")(FakeArray(shape=(5,), pointer=0x210, strides=(-4,)),
                                                         out=out, stream=7)
    assert strided_args(kernel_calls) == (1, (5,), 0x100, (1,), (0x210,), ((-1,),), (), 7)
    transposed_out = FakeArray(shape=(3, 5), pointer=0x100, strides=(4, 12))
    make_kernel()(FakeArray(shape=(3, 5), pointer=0x200), FakeArray(shape=(5,), pointer=0x300), out=transposed_out,
                  stream=7)
    assert strided_args(kernel_calls) == (2, (3, 5), 0x100, (1, 3), (0x200, 0x300), ((5, 1), (0, 1)), (), 7)


def test_a_kernel_counts_strides_in_each_operands_own_elements(kernel_calls):
    # f16 out, an f64 input every other element, an i8 input broadcast along rows, an f32 column.
    kernel = make_kernel(out_dtype="f16", in_dtypes=("f64", "i8", "f32"), source="return in0 + in1 + in2;")
    out = FakeArray(shape=(3, 4), typestr="<f2", pointer=0x100)
    wide = FakeArray(shape=(3, 4), typestr="<f8", pointer=0x200, strides=(64, 16))
    row = FakeArray(shape=(1, 4), typestr="|i1", pointer=0x300)
    column = FakeArray(shape=(3, 1), pointer=0x400)
    kernel(wide, row, column, out=out, stream=7)
    assert strided_args(kernel_calls) == (2, (3, 4), 0x100, (4, 1), (0x200, 0x300, 0x400),
                                          ((8, 2), (0, 1), (1, 0)), (), 7)


def test_a_kernel_with_four_inputs_broadcasts_each_to_outs_shape(kernel_calls):
    kernel = make_kernel(in_dtypes=("f32",) * 4, source="return in0 * in1 + in2 - in3;")
    out = FakeArray(shape=(2, 3, 4), pointer=0x100)
    inputs = [FakeArray(shape=(2, 3, 4), pointer=0x200), FakeArray(shape=(3, 1), pointer=0x300),
              FakeArray(shape=(2, 1, 4), pointer=0x400), FakeArray(shape=(4,), pointer=0x500)]
    kernel(*inputs, out=out, stream=7)
    assert strided_args(kernel_calls) == (3, (2, 3, 4), 0x100, (12, 4, 1), (0x200, 0x300, 0x400, 0x500),
                                          ((12, 4, 1), (0, 1, 0), (4, 0, 1), (0, 0, 1)), (), 7)


def test_a_kernel_launches_flat_when_every_operand_is_contiguous_over_one_shape(kernel_calls):
    shape = (2,) * 10  # more dimensions than the library takes, but contiguous: one flat launch
    make_kernel()(*(FakeArray(shape=shape, pointer=p) for p in (0x200, 0x300)), out=FakeArray(shape=shape, pointer=0x100),
                  stream=7)
    assert kernel_calls["ew_kernel_launch"].args[1:] == (1024, 0x100, (0x200, 0x300), (), 7)
    assert kernel_calls["ew_kernel_launch_strided"].args is None
    # Extent-1 dimensions, whatever their strides, are contiguous too.
    kernel_calls["ew_kernel_launch"].args = None
    make_kernel()(FakeArray(shape=(3, 1, 4), pointer=0x200, strides=(16, 999, 4)),
                  FakeArray(shape=(3, 1, 4), pointer=0x300), out=FakeArray(shape=(3, 1, 4), pointer=0x100), stream=7)
    assert kernel_calls["ew_kernel_launch"].args[1:] == (12, 0x100, (0x200, 0x300), (), 7)


def test_a_kernel_in_place_on_a_strided_view_passes_out_as_the_input(kernel_calls):
    view = FakeArray(shape=(3, 4), pointer=0x100, strides=(32, 4))
    make_kernel()(view, FakeArray(shape=(4,), pointer=0x200), out=view, stream=7)
    assert strided_args(kernel_calls) == (2, (3, 4), 0x100, (8, 1), (0x100, 0x200), ((8, 1), (0, 1)), (), 7)


def test_a_strided_kernel_input_through_dlpack(kernel_calls):
    x = FakeDLPack(shape=(3, 2), strides=(1, 3), pointer=0x4000)  # a (2, 3) tensor, transposed
    make_kernel(in_dtypes=["f32"], source="return in0;")(x, out=FakeArray(shape=(3, 2)), stream=0x77)
    assert x.calls == [dict(stream=0x77, max_version=MAX_VERSION, copy=False)]
    assert strided_args(kernel_calls) == (2, (3, 2), 0x10000, (2, 1), (0x4000,), ((1, 3),), (), 0x77)


def test_closing_a_kernel_destroys_it_once(kernel_calls):
    with make_kernel() as kernel:
        pass
    assert kernel_calls["ew_kernel_destroy"].args == (KERNEL,)
    kernel_calls["ew_kernel_destroy"].args = None
    kernel.close()
    assert kernel_calls["ew_kernel_destroy"].args is None and "closed" in repr(kernel)
    with pytest.raises(ValueError, match="closed"):
        kernel(FakeArray(), FakeArray(), out=FakeArray())
    make_kernel().__del__()  # what garbage collection does
    assert kernel_calls["ew_kernel_destroy"].args == (KERNEL,)


def test_a_kernel_whose_handle_was_closed_first_is_only_forgotten(kernel_calls):
    handle = ew.Handle._from_raw(None)
    kernel = ew.Kernel("return in0;", "f32", ["f32"], handle=handle)
    handle.close()
    kernel.close()
    assert kernel_calls["ew_kernel_destroy"].args is None


def test_a_failed_creation_destroys_nothing(kernel_calls):
    gc.collect()  # kernels of earlier tests, which would be destroyed through this test's recorder
    kernel_calls["ew_kernel_destroy"].args = None
    kernel_calls["ew_kernel_create"].status = int(ew.Status.INVALID_VALUE)
    with pytest.raises(ew.ElementwiseError):
        make_kernel()
    gc.collect()
    assert kernel_calls["ew_kernel_destroy"].args is None


# ---- scaled casts (1.2): quantize, dequantize, amax ----

SCALED_FUNCTIONS = ("ew_quantize", "ew_quantize_strided", "ew_dequantize", "ew_dequantize_strided", "ew_amax")


@pytest.fixture
def scaled_calls(monkeypatch):
    yield install(monkeypatch, {name: Recorder() for name in SCALED_FUNCTIONS})
    ew._ext.set_recorder(None)


def scalar(pointer=0x300, shape=(), **kw):
    """A float32 device scalar, as quantize's scale and amax are."""
    return FakeArray(shape=shape, pointer=pointer, **kw)


def fp8(shape=(3, 5), pointer=0x100, name="float8_e4m3fn", **kw):
    """A uint8 view of float8 data that names its dtype, as PyTorch's float8 tensors do."""
    return FakeArray(shape=shape, typestr="|u1", pointer=pointer, dtype=TorchLikeDtype(name), **kw)


def test_the_enums_have_the_scaled_members():
    assert (ew.Op.QUANTIZE, ew.Op.DEQUANTIZE, ew.Op.AMAX) == (6, 7, 8)
    assert (ew.ReduceMode.OVERWRITE, ew.ReduceMode.ACCUMULATE) == (0, 1)
    for name in ("quantize", "dequantize", "amax", "ReduceMode"):
        assert name in ew.__all__
    for function in (ew.quantize, ew.dequantize, ew.amax, ew.Handle.quantize, ew.Handle.amax):
        assert function.__doc__ and function.__doc__.strip()
    assert ew.quantize is ew._ext.quantize and ew.amax is ew._ext.amax


def header_enums():
    """Every enumerator of the header the binding was built against, by name."""
    directory = os.environ.get("ELEMENTWISE_INCLUDE_DIR")
    if not directory or not os.path.exists(os.path.join(directory, "elementwise.h")):
        pytest.skip("ELEMENTWISE_INCLUDE_DIR names no elementwise.h (scripts/ci/python.sh BUILD_DIR sets it)")
    with open(os.path.join(directory, "elementwise.h")) as header:
        text = header.read()
    return {name: int(value) for name, value in re.findall(r"\b(EW_[A-Z0-9_]+)\s*=\s*(\d+)", text)}


@pytest.mark.parametrize("enum, prefix", [(ew.Op, "EW_OP_"), (ew.ReduceMode, "EW_REDUCE_"), (ew.DType, "EW_"),
                                          (ew.Status, "EW_"), (ew.BlockFormat, "EW_BLOCKS_")])
def test_the_enums_match_the_header(enum, prefix):
    found = header_enums()
    for member in enum:
        name = prefix + ("ERROR_" + member.name if enum is ew.Status and member.name != "SUCCESS" else member.name)
        assert found.get(name) == member.value, (name, found.get(name), member.value)
    if enum is ew.Op:
        assert sorted(value for name, value in found.items() if name.startswith("EW_OP_")) == sorted(ew.Op)
    if enum is ew.DType:  # every dtype of the header is a member
        dtypes = [name for name in found if re.fullmatch(r"EW_(BOOL|[IUF]\d+|BF16|F\dE\dM\d)", name)]
        assert sorted(found[name] for name in dtypes) == sorted(ew.DType), dtypes


def test_is_supported_knows_the_scaled_casts():
    D = ew.DType
    sources = (D.F16, D.BF16, D.F32, D.F64)
    for dtype in ew.DType:
        for source in ew.DType:
            assert ew.is_supported(ew.Op.QUANTIZE, dtype, source) == (dtype in FLOAT8 and source in sources)
            assert ew.is_supported(ew.Op.DEQUANTIZE, dtype, source) == (dtype in sources and source in FLOAT8)
        assert ew.is_supported(ew.Op.AMAX, dtype) == (dtype in sources)


def test_quantize_reaches_ew_quantize_as_the_c_api_orders_it(scaled_calls):
    handle = ew.Handle._from_raw(None)
    x = FakeArray(shape=(3, 5), typestr="<f2", pointer=0x200, stream=0x99)
    out, scale, amax = fp8(), scalar(0x300), scalar(0x400, shape=(1,))
    assert handle.quantize(x, "f8e4m3", scale, out=out) is out
    assert scaled_calls["ew_quantize"].args == (None, ew.DType.F8E4M3, ew.DType.F16, 15, 0x100, 0x200, 0x300, None,
                                                0, 0x99)
    handle.quantize(x, "f8e5m2", scale, amax=amax, out=out)
    assert scaled_calls["ew_quantize"].args[1:] == (ew.DType.F8E5M2, ew.DType.F16, 15, 0x100, 0x200, 0x300, 0x400,
                                                    0, 0x99)
    for mode, value in (("accumulate", 1), (ew.ReduceMode.ACCUMULATE, 1), ("overwrite", 0),
                        (ew.ReduceMode.OVERWRITE, 0), (1, 1)):
        handle.quantize(x, "f8e4m3", scale, amax=amax, amax_mode=mode, out=out)
        assert scaled_calls["ew_quantize"].args[7:9] == (0x400, value), mode
    # The dtype and the scale by keyword; the dtype left to out's own; in_dtype= for a view of bf16 data.
    handle.quantize(x, dtype="float8_e5m2", scale=scale, out=out, stream=5)
    assert scaled_calls["ew_quantize"].args[1:3] == (ew.DType.F8E5M2, ew.DType.F16)
    assert scaled_calls["ew_quantize"].args[-1] == 5
    handle.quantize(x, None, scale, out=fp8(name="float8_e5m2"))
    assert scaled_calls["ew_quantize"].args[1] == ew.DType.F8E5M2
    handle.quantize(FakeArray(shape=(3, 5), typestr="<i2", pointer=0x200), "f8e4m3", scale, in_dtype="bf16", out=out)
    assert scaled_calls["ew_quantize"].args[1:3] == (ew.DType.F8E4M3, ew.DType.BF16)
    ew.quantize(x, "f8e4m3", scale, out=out, handle=handle)  # the module function: the same call
    assert scaled_calls["ew_quantize"].args[0] is None
    assert scaled_calls["ew_quantize_strided"].args is None


def test_dequantize_reaches_ew_dequantize(scaled_calls):
    handle = ew.Handle._from_raw(None)
    q, scale_inv = fp8(pointer=0x200, name="float8_e5m2"), scalar(0x300, shape=(1,))
    out = FakeArray(shape=(3, 5), typestr="<f8", pointer=0x100)
    assert handle.dequantize(q, "f64", scale_inv, out=out, stream=7) is out
    assert scaled_calls["ew_dequantize"].args == (None, ew.DType.F64, ew.DType.F8E5M2, 15, 0x100, 0x200, 0x300, 7)
    # A plain uint8 array (CuPy has no float8) says what it holds with in_dtype=.
    handle.dequantize(FakeArray(shape=(3, 5), typestr="|u1", pointer=0x200), "bf16", scale_inv=scale_inv,
                      in_dtype="f8e4m3", out=FakeArray(shape=(3, 5), typestr="<V2", pointer=0x100), stream=7)
    assert scaled_calls["ew_dequantize"].args[1:4] == (ew.DType.BF16, ew.DType.F8E4M3, 15)


def test_strided_and_broadcast_operands_take_the_strided_calls(scaled_calls):
    handle = ew.Handle._from_raw(None)
    out = fp8()
    transposed = FakeArray(shape=(3, 5), pointer=0x200, strides=(4, 12))  # a (5, 3) array, transposed
    handle.quantize(transposed, "f8e4m3", scalar(0x300), amax=scalar(0x400), amax_mode="accumulate", out=out,
                    stream=7)
    assert scaled_calls["ew_quantize"].args is None
    assert scaled_calls["ew_quantize_strided"].args == (
        None, ew.DType.F8E4M3, ew.DType.F32, 2, (3, 5), 0x100, (5, 1), 0x200, (1, 3), 0x300, 0x400, 1, 7)
    handle.quantize(FakeArray(shape=(5,), pointer=0x200), "f8e4m3", scalar(0x300), out=out, stream=7)  # a row
    assert scaled_calls["ew_quantize_strided"].args[3:] == (2, (3, 5), 0x100, (5, 1), 0x200, (0, 1), 0x300, None,
                                                            0, 7)
    f32_out = FakeArray(shape=(3, 5), pointer=0x500, strides=(4, 12))  # a transposed out
    handle.dequantize(fp8(pointer=0x200), "f32", scalar(0x300), out=f32_out, stream=7)
    assert scaled_calls["ew_dequantize"].args is None
    assert scaled_calls["ew_dequantize_strided"].args == (
        None, ew.DType.F32, ew.DType.F8E4M3, 2, (3, 5), 0x500, (1, 3), 0x200, (5, 1), 0x300, 7)


def test_amax_reaches_ew_amax(scaled_calls):
    handle = ew.Handle._from_raw(None)
    x = FakeArray(shape=(3, 5), typestr="<f2", pointer=0x200, stream=0x99)
    out = scalar(0x300)
    assert handle.amax(x, out=out) is out
    assert scaled_calls["ew_amax"].args == (None, ew.DType.F16, 15, 0x200, 0x300, 0, 0x99)
    handle.amax(x, out=scalar(0x300, shape=(1,)), accumulate=True, stream=3)
    assert scaled_calls["ew_amax"].args == (None, ew.DType.F16, 15, 0x200, 0x300, 1, 3)
    handle.amax(FakeArray(shape=(0,), pointer=0), out=out)  # empty: NULL x, the library zeroes amax
    assert scaled_calls["ew_amax"].args[2:4] == (0, None)


def test_amax_refuses_a_strided_x_and_an_accumulate_without_out(scaled_calls):
    handle = ew.Handle._from_raw(None)
    with pytest.raises(ValueError, match=r"x is not contiguous \(strides \(1, 3\).*no strided amax"):
        handle.amax(FakeArray(shape=(3, 5), strides=(4, 12)), out=scalar())
    with pytest.raises(TypeError, match=r"accumulate=True\) needs out="):
        handle.amax(FakeArray(), accumulate=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'amax_mode'"):
        handle.amax(FakeArray(), out=scalar(), amax_mode="accumulate")
    with pytest.raises(TypeError, match=r"takes 1 positional arguments \(amax\(x\)\)"):
        handle.amax(FakeArray(), scalar())
    assert scaled_calls["ew_amax"].args is None


def test_scaled_casts_with_out_none_are_made_as_cast_makes_them(scaled_calls, fake_cupy):
    x = cupy_array(shape=(4,), pointer=0x200)
    made = ew.Handle._from_raw(None).amax(x, stream=7)
    assert fake_cupy.made == [("empty", (), "float32")]
    assert made.__cuda_array_interface__["shape"] == ()
    assert scaled_calls["ew_amax"].args[1:] == (ew.DType.F32, 4, 0x200, 0xB000, 0, 7)
    half = ew.Handle._from_raw(None).dequantize(cupy_array(shape=(4,), typestr="|u1", pointer=0x200), "f16",
                                                scalar(), in_dtype="f8e4m3", stream=7)
    assert fake_cupy.made[-1] == ("empty_like", (4,), "float16")
    assert half.__cuda_array_interface__["typestr"] == "<f2"
    assert scaled_calls["ew_dequantize"].args[1:] == (ew.DType.F16, ew.DType.F8E4M3, 4, 0xA000, 0x200, 0x300, 7)
    with pytest.raises(TypeError, match="CuPy has no F8E4M3"):
        ew.Handle._from_raw(None).quantize(x, "f8e4m3", scalar())
    with pytest.raises(TypeError, match="needs the dtype"):
        ew.Handle._from_raw(None).quantize(x, None, scalar())
    assert scaled_calls["ew_quantize"].args is None


def test_the_scalars_take_part_in_the_stream_and_device_and_dlpack(scaled_calls):
    handle = ew.Handle._from_raw(None)
    x, out = FakeArray(pointer=0x200), fp8(shape=(4,))
    handle.quantize(x, "f8e4m3", scalar(stream=0x55), out=out)  # the scale's interface names the stream
    assert scaled_calls["ew_quantize"].args[-1] == 0x55
    with pytest.raises(ValueError, match="different streams"):
        handle.quantize(FakeArray(stream=5), "f8e4m3", scalar(stream=6), out=out)
    scale = FakeDLPack(shape=(), pointer=0x4000)
    handle.quantize(x, "f8e4m3", scale, amax=FakeDLPack(shape=(1,), pointer=0x5000), out=out, stream=0x77)
    assert scale.calls == [dict(stream=0x77, max_version=MAX_VERSION, copy=False)]
    assert scaled_calls["ew_quantize"].args[6:9] == (0x4000, 0x5000, 0)
    with pytest.raises(ValueError, match="scale is on device 1 but the call runs on device 0"):
        handle.quantize(x, "f8e4m3", FakeDLPack(shape=(), device=(2, 1)), out=out)
    with pytest.raises(ValueError, match="amax is on device 2 but the call runs on device 0"):
        handle.quantize(x, "f8e4m3", scalar(), amax=FakeDLPack(shape=(), device=(2, 2)), out=out)
    with pytest.raises(ValueError, match="scale_inv is on device 3"):
        handle.dequantize(out, "f32", FakeDLPack(shape=(), device=(2, 3)), out=FakeArray())
    assert scaled_calls["ew_quantize"].args[-1] == 0x77


@pytest.mark.parametrize("call, error, match", [
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(typestr="<f2"), out=o), TypeError,
     "scale is F16; it must be a float32 array of one element"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(typestr="<f8"), out=o), TypeError, "scale is F64"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(shape=(2,)), out=o), ValueError,
     r"scale has shape \(2,\); it must hold one element"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(shape=(0,)), out=o), ValueError, "scale has shape"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), amax=scalar(typestr="<i4"), out=o), TypeError,
     "amax is I32"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), amax=scalar(shape=(2, 2)), out=o), ValueError,
     r"amax has shape \(2, 2\)"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), amax=scalar(read_only=True), out=o), ValueError,
     "amax: the output array is read-only"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", FakeDLPack(shape=(), device=(1, 0)), out=o), TypeError,
     "scale: FakeDLPack is a CPU array"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", object(), out=o), TypeError, "scale: object has neither"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", out=o), TypeError, r"needs scale, a float32 device array"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", None, out=o), TypeError, "needs scale"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), "f8e5m2", out=o), TypeError,
     r"takes 3 positional arguments \(quantize\(x, dtype, scale\)\) but 4"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), dtype="f8e5m2", out=o), TypeError,
     "got the dtype both as an argument and as a keyword"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), scale=scalar(), out=o), TypeError,
     "got the scale both as an argument and as a keyword"),
    (lambda h, x, o: h.quantize(x, "complex64", scalar(), out=o), TypeError, "unknown dtype"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), amax=scalar(), amax_mode="max", out=o), ValueError,
     "amax_mode must be 'overwrite' or 'accumulate'"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), amax=scalar(), amax_mode=2, out=o), ValueError,
     "amax_mode must be"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), amax_mode=True, out=o), ValueError, "amax_mode must be"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), accumulate=True, out=o), TypeError,
     "unexpected keyword argument 'accumulate'"),
    (lambda h, x, o: h.quantize(scalar=1), TypeError, "unexpected keyword argument 'scalar'"),
    (lambda h, x, o: h.quantize(dtype="f8e4m3"), TypeError, r"quantize\(\) takes quantize\(x, dtype, scale\)"),
    (lambda h, x, o: h.quantize(x, "f8e4m3", scalar(), out=FakeArray(shape=(2,), typestr="|u1")), ValueError,
     r"x has shape \(4,\), which does not broadcast to out's shape \(2,\)"),
    (lambda h, x, o: h.dequantize(o, "f32", scalar(shape=(1, 2)), out=x), ValueError, "scale_inv has shape"),
    (lambda h, x, o: h.dequantize(o, "f32", scalar(), amax=scalar(), out=x), TypeError,
     "unexpected keyword argument 'amax'"),
    (lambda h, x, o: h.dequantize(o, "f32", out=x), TypeError, "needs scale_inv"),
    (lambda h, x, o: h.dequantize(o, "f32", scale=scalar(), out=x), TypeError, "unexpected keyword argument 'scale'"),
    (lambda h, x, o: h.amax(x, out=scalar(typestr="<f8")), TypeError, "out is F64; it must be a float32 array"),
    (lambda h, x, o: h.amax(x, out=scalar(shape=(4,))), ValueError, r"out has shape \(4,\)"),
    (lambda h, x, o: h.amax(x, out=scalar(read_only=True)), ValueError, "read-only"),
])
def test_bad_scalars_modes_and_arguments_are_refused_before_the_library(scaled_calls, call, error, match):
    with pytest.raises(error, match=match):
        call(ew.Handle._from_raw(None), FakeArray(pointer=0x200), fp8(shape=(4,)))
    assert all(recorder.args is None for recorder in scaled_calls.values())


@pytest.mark.parametrize("function, call", [
    ("ew_quantize", lambda h: h.quantize(FakeArray(typestr="<i4"), "f8e4m3", scalar(), out=fp8(shape=(4,)))),
    ("ew_quantize_strided", lambda h: h.quantize(FakeArray(shape=(1,)), "f8e4m3", scalar(), out=fp8(shape=(4,)))),
    ("ew_dequantize", lambda h: h.dequantize(FakeArray(pointer=0x200), "f16", scalar(),
                                             out=FakeArray(typestr="<f2"))),
    ("ew_dequantize_strided", lambda h: h.dequantize(fp8(shape=(1,)), "f32", scalar(), out=FakeArray())),
    ("ew_amax", lambda h: h.amax(FakeArray(typestr="<i4"), out=scalar())),
])
def test_the_librarys_refusals_of_scaled_casts_raise_elementwise_error(scaled_calls, function, call):
    scaled_calls[function].status = int(ew.Status.NOT_SUPPORTED)
    with pytest.raises(ew.ElementwiseError) as caught:
        call(ew.Handle._from_raw(None))
    assert caught.value.function == function and caught.value.status == ew.Status.NOT_SUPPORTED


@pytest.mark.parametrize("call, function", [
    (lambda h: h.quantize(FakeArray(), "f8e4m3", scalar(0x40000), out=fp8(shape=(4,))), "ew_quantize"),
    (lambda h: h.quantize(FakeArray(shape=(4, 1)), "f8e4m3", scalar(0x40000), out=fp8(shape=(4, 4))),
     "ew_quantize_strided"),
    (lambda h: h.dequantize(fp8(shape=(4,)), "f32", scalar(0x40000), out=FakeArray(pointer=0x20000)),
     "ew_dequantize"),
    (lambda h: h.dequantize(fp8(shape=(4,)), "f32", scalar(0x40000), out=FakeArray(shape=(2, 4), pointer=0x20000)),
     "ew_dequantize_strided"),
    (lambda h: h.amax(FakeArray(), out=scalar(0x40000)), "ew_amax"),
])
def test_the_real_library_refuses_a_null_handle_in_every_scaled_call(call, function):
    with pytest.raises(ew.ElementwiseError) as caught:
        call(ew.Handle._from_raw(None))
    assert caught.value.function == function and caught.value.status == ew.Status.INVALID_HANDLE
    assert caught.value.message and caught.value.message == ew._last_error_message()


# ---- scaled casts over lists (1.2): quantize_batched, dequantize_batched, amax_batched ----

SCALED_LIST_FUNCTIONS = ("ew_quantize_batched", "ew_dequantize_batched", "ew_amax_batched")


@pytest.fixture
def scaled_list_calls(monkeypatch):
    yield install(monkeypatch, {name: Recorder() for name in SCALED_LIST_FUNCTIONS})
    ew._ext.set_recorder(None)


SCALED_LIST_SHAPES = [(3,), (2, 5), (0,), (7,)]  # n = 3, 10, 0, 7; the empty entry at NULL


def fp8_entries(shapes=SCALED_LIST_SHAPES, base=0x10000, name="float8_e4m3fn"):
    return [fp8(shape=shape, pointer=base + 0x1000 * i if shape != (0,) else 0, name=name)
            for i, shape in enumerate(shapes)]


def float_entries(shapes=SCALED_LIST_SHAPES, base=0x20000, typestr="<f2", **kw):
    return [FakeArray(shape=shape, typestr=typestr, pointer=base + 0x1000 * i if shape != (0,) else 0, **kw)
            for i, shape in enumerate(shapes)]


def column(pointer=0x30000, n=4, **kw):
    """A float32 device array of n elements: a list's scales, or its amax scalars."""
    return FakeArray(shape=(n,), pointer=pointer, **kw)


def test_the_scaled_lists_are_exported_and_documented():
    for name in ("quantize_batched", "dequantize_batched", "amax_batched"):
        assert name in ew.__all__
        assert getattr(ew, name) is getattr(ew._ext, name)
        assert getattr(ew, name).__doc__ and getattr(ew.Handle, name).__doc__
        assert name in ew.__doc__
    assert "shared" in ew.quantize_batched.__doc__ and "len(xs)" in ew.amax_batched.__doc__


def test_quantize_batched_reaches_ew_quantize_batched_as_the_c_api_orders_it(scaled_list_calls):
    handle = ew.Handle._from_raw(None)
    xs, outs = float_entries(stream=0x99), fp8_entries()
    n, out_pointers, x_pointers = (3, 10, 0, 7), (0x10000, 0x11000, None, 0x13000), (0x20000, 0x21000, None, 0x23000)
    result = handle.quantize_batched(xs, "f8e4m3", column(), outs=outs)
    assert type(result) is list and all(got is want for got, want in zip(result, outs)) and len(result) == 4
    assert scaled_list_calls["ew_quantize_batched"].args == (
        None, ew.DType.F8E4M3, ew.DType.F16, 4, n, out_pointers, x_pointers, 0x30000, None, 0, 0x99)
    # amax, one an entry: entry i's scalar at amax + 4 i, overwritten or accumulated
    for mode, value in ((None, 0), ("overwrite", 0), ("accumulate", 1), (ew.ReduceMode.ACCUMULATE, 1)):
        keywords = {} if mode is None else {"amax_mode": mode}
        handle.quantize_batched(xs, "f8e5m2", column(), amax=column(0x40000), outs=outs, **keywords)
        assert scaled_list_calls["ew_quantize_batched"].args[1:] == (
            ew.DType.F8E5M2, ew.DType.F16, 4, n, out_pointers, x_pointers, 0x30000,
            (0x40000, 0x40004, 0x40008, 0x4000C), value, 0x99), mode
    # one amax shared by every entry: the same pointer for all, shape () or (1,)
    for shared in (scalar(0x50000), scalar(0x50000, shape=(1,))):
        handle.quantize_batched(xs, "f8e4m3", column(), amax=shared, amax_mode="accumulate", outs=outs)
        assert scaled_list_calls["ew_quantize_batched"].args[8:10] == ((0x50000,) * 4, 1)
    # a column of amax scalars with a stride (a row of a history, say): each entry's own element
    handle.quantize_batched(xs, "f8e4m3", column(), amax=column(0x60000, strides=(12,)), outs=outs)
    assert scaled_list_calls["ew_quantize_batched"].args[8] == (0x60000, 0x6000C, 0x60018, 0x60024)
    # the dtype and the scale by keyword, the stream given, the dtype left to outs, in_dtype= for a view
    handle.quantize_batched(xs, dtype="f8e5m2", scale=column(0x31000), outs=outs, stream=5)
    assert scaled_list_calls["ew_quantize_batched"].args[1:3] == (ew.DType.F8E5M2, ew.DType.F16)
    assert scaled_list_calls["ew_quantize_batched"].args[7] == 0x31000
    assert scaled_list_calls["ew_quantize_batched"].args[-1] == 5
    handle.quantize_batched(xs, None, column(), outs=fp8_entries(name="float8_e5m2"))
    assert scaled_list_calls["ew_quantize_batched"].args[1] == ew.DType.F8E5M2
    handle.quantize_batched(float_entries(typestr="<i2"), "f8e4m3", column(), in_dtype="bf16", outs=outs)
    assert scaled_list_calls["ew_quantize_batched"].args[1:3] == (ew.DType.F8E4M3, ew.DType.BF16)
    ew.quantize_batched(tuple(xs), "f8e4m3", column(), outs=tuple(outs), handle=handle)  # any sequence; the module's
    assert scaled_list_calls["ew_quantize_batched"].args[3:7] == (4, n, out_pointers, x_pointers)
    assert scaled_list_calls["ew_dequantize_batched"].args is None and scaled_list_calls["ew_amax_batched"].args is None


def test_a_list_of_one_takes_a_scale_of_shape_empty_or_one(scaled_list_calls):
    handle = ew.Handle._from_raw(None)
    x, out = float_entries([(5,)]), fp8_entries([(5,)])
    for scale in (scalar(0x30000), scalar(0x30000, shape=(1,))):
        handle.quantize_batched(x, "f8e4m3", scale, amax=scalar(0x40000), outs=out)
        assert scaled_list_calls["ew_quantize_batched"].args[3:9] == (1, (5,), (0x10000,), (0x20000,), 0x30000,
                                                                      (0x40000,))


def test_dequantize_batched_reaches_ew_dequantize_batched(scaled_list_calls):
    handle = ew.Handle._from_raw(None)
    qs, outs = fp8_entries(name="float8_e5m2"), float_entries(typestr="<f8")
    assert handle.dequantize_batched(qs, "f64", column(), outs=outs, stream=7) == outs
    assert scaled_list_calls["ew_dequantize_batched"].args == (
        None, ew.DType.F64, ew.DType.F8E5M2, 4, (3, 10, 0, 7), (0x20000, 0x21000, None, 0x23000),
        (0x10000, 0x11000, None, 0x13000), 0x30000, 7)
    # plain uint8 arrays say what they hold with in_dtype=; scale_inv= by keyword
    handle.dequantize_batched([FakeArray(shape=(3,), typestr="|u1", pointer=0x100)], "bf16",
                              scale_inv=column(n=1), in_dtype="f8e4m3",
                              outs=[FakeArray(shape=(3,), typestr="<V2", pointer=0x200)], stream=7)
    assert scaled_list_calls["ew_dequantize_batched"].args[1:8] == (
        ew.DType.BF16, ew.DType.F8E4M3, 1, (3,), (0x200,), (0x100,), 0x30000)


def test_amax_batched_reaches_ew_amax_batched(scaled_list_calls):
    handle = ew.Handle._from_raw(None)
    xs = float_entries(stream=0x99)
    out = column(0x40000)
    assert handle.amax_batched(xs, out=out) is out
    assert scaled_list_calls["ew_amax_batched"].args == (
        None, ew.DType.F16, 4, (3, 10, 0, 7), (0x20000, 0x21000, None, 0x23000),
        (0x40000, 0x40004, 0x40008, 0x4000C), 0, 0x99)
    shared = scalar(0x50000)
    assert handle.amax_batched(xs, out=shared, accumulate=True, stream=3) is shared
    assert scaled_list_calls["ew_amax_batched"].args[5:] == ((0x50000,) * 4, 1, 3)
    ew.amax_batched(xs, out=scalar(0x50000, shape=(1,)), handle=handle)
    assert scaled_list_calls["ew_amax_batched"].args[5:7] == ((0x50000,) * 4, 0)


def test_scaled_lists_make_their_outputs_as_the_flat_calls_do(scaled_list_calls, fake_cupy):
    handle = ew.Handle._from_raw(None)
    xs = [cupy_array(shape=(3,), pointer=0x200), cupy_array(shape=(5,), pointer=0x300)]
    made = handle.amax_batched(xs, stream=7)  # one float32 an entry, like xs[0]
    assert fake_cupy.made == [("empty", (2,), "float32")]
    assert made.__cuda_array_interface__["shape"] == (2,) and made.__cuda_array_interface__["typestr"] == "<f4"
    assert scaled_list_calls["ew_amax_batched"].args[1:] == (ew.DType.F32, 2, (3, 5), (0x200, 0x300),
                                                             (0xB000, 0xB004), 0, 7)
    qs = [cupy_array(shape=(3,), typestr="|u1", pointer=0x400), cupy_array(shape=(5,), typestr="|u1", pointer=0x500)]
    halves = handle.dequantize_batched(qs, "f16", column(n=2), in_dtype="f8e4m3", stream=7)
    assert fake_cupy.made[1:] == [("empty_like", (3,), "float16"), ("empty_like", (5,), "float16")]
    assert len(halves) == 2 and all(h.__cuda_array_interface__["typestr"] == "<f2" for h in halves)
    assert scaled_list_calls["ew_dequantize_batched"].args[3:6] == (2, (3, 5), (0xA000, 0xA000))
    with pytest.raises(TypeError, match="CuPy has no F8E4M3"):
        handle.quantize_batched(xs, "f8e4m3", column(n=2))
    with pytest.raises(TypeError, match=r"quantize_batched with outs=None needs the dtype"):
        handle.quantize_batched(xs, None, column(n=2))
    assert scaled_list_calls["ew_quantize_batched"].args is None


def test_empty_scaled_lists_are_one_call_of_no_entries(scaled_list_calls):
    handle = ew.Handle._from_raw(None)
    assert handle.quantize_batched([], "f8e4m3", column(0, n=0), stream=5) == []
    assert scaled_list_calls["ew_quantize_batched"].args == (None, ew.DType.F8E4M3, ew.DType.F32, 0, (), (), (),
                                                             None, None, 0, 5)
    handle.quantize_batched([], "f8e4m3", column(0, n=0), amax=scalar(0x50000), amax_mode="accumulate")
    assert scaled_list_calls["ew_quantize_batched"].args[7:10] == (None, (), 1)
    assert handle.dequantize_batched([], "f32", column(0, n=0)) == []
    assert scaled_list_calls["ew_dequantize_batched"].args[1:4] == (ew.DType.F32, ew.DType.F8E4M3, 0)
    out = scalar(0x50000)
    assert handle.amax_batched([], out=out) is out
    assert scaled_list_calls["ew_amax_batched"].args[1:] == (ew.DType.F32, 0, (), (), (), 0, 0)


def test_the_scaled_lists_scalars_take_part_in_the_stream_device_and_dlpack(scaled_list_calls):
    handle = ew.Handle._from_raw(None)
    xs, outs = float_entries(), fp8_entries()
    handle.quantize_batched(xs, "f8e4m3", column(stream=0x55), outs=outs)  # the scale's interface names the stream
    assert scaled_list_calls["ew_quantize_batched"].args[-1] == 0x55
    with pytest.raises(ValueError, match="different streams"):
        handle.quantize_batched(float_entries(stream=5), "f8e4m3", column(stream=6), outs=outs)
    scale, amax = FakeDLPack(shape=(4,), pointer=0x4000), FakeDLPack(shape=(4,), pointer=0x5000)
    handle.quantize_batched(xs, "f8e4m3", scale, amax=amax, outs=outs, stream=0x77)
    assert scale.calls == [dict(stream=0x77, max_version=MAX_VERSION, copy=False)] and len(amax.calls) == 1
    assert scaled_list_calls["ew_quantize_batched"].args[7:9] == (0x4000, (0x5000, 0x5004, 0x5008, 0x500C))
    with pytest.raises(ValueError, match="scale is on device 1 but the call runs on device 0"):
        handle.quantize_batched(xs, "f8e4m3", FakeDLPack(shape=(4,), device=(2, 1)), outs=outs)
    with pytest.raises(ValueError, match="amax is on device 2 but the call runs on device 0"):
        handle.quantize_batched(xs, "f8e4m3", column(), amax=FakeDLPack(shape=(), device=(2, 2)), outs=outs)
    with pytest.raises(ValueError, match="out is on device 3"):
        handle.amax_batched(xs, out=FakeDLPack(shape=(4,), device=(2, 3)))


@pytest.mark.parametrize("call, error, match", [
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(n=3), outs=outs), ValueError,
     r"scale has shape \(3,\); it must hold 4 elements \(one an entry\), in one dimension"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", scalar(), outs=outs), ValueError,
     r"scale has shape \(\); it must hold 4 elements"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", FakeArray(shape=(2, 2)), outs=outs), ValueError,
     r"scale has shape \(2, 2\).*in one dimension"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(typestr="<f8"), outs=outs), TypeError,
     r"scale is F64; it must be a float32 array of 4 elements \(one an entry\)"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(typestr="<f2"), outs=outs), TypeError,
     "scale is F16"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(strides=(8,)), outs=outs), ValueError,
     r"scale is not contiguous \(strides \(2,\).*scale\[i\]"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", outs=outs), TypeError,
     r"needs scale, a float32 device array of one element an entry"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), amax=column(n=3), outs=outs), ValueError,
     r"amax has shape \(3,\); it must hold 4 elements \(one an entry\) or one \(shared by every entry\)"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), amax=column(n=2), outs=outs), ValueError,
     "amax has shape"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), amax=FakeArray(shape=(4, 1)), outs=outs),
     ValueError, r"amax has shape \(4, 1\)"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), amax=column(typestr="<i4"), outs=outs),
     TypeError, "amax is I32"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), amax=column(read_only=True), outs=outs),
     ValueError, "amax: the output array is read-only"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), amax=column(), amax_mode="max", outs=outs),
     ValueError, "amax_mode must be 'overwrite' or 'accumulate'"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), outs=outs[:3]), ValueError,
     "outs has 3 entries but xs has 4"),
    (lambda h, xs, outs: h.quantize_batched(xs[:3], "f8e4m3", column(n=3), outs=outs), ValueError,
     "outs has 4 entries but xs has 3"),
    (lambda h, xs, outs: h.quantize_batched(xs[:1] + [FakeArray(shape=(2, 5), typestr="<f2", strides=(20, 2))]
                                            + xs[2:], "f8e4m3", column(), outs=outs),
     ValueError, r"xs\[1\] is not contiguous \(strides \(10, 1\).*list calls take contiguous arrays"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), outs=outs[:3] + [fp8(shape=(7,), strides=(2,))]),
     ValueError, r"outs\[3\] is not contiguous"),
    (lambda h, xs, outs: h.quantize_batched(xs[:3] + [FakeArray(shape=(7,))], "f8e4m3", column(), outs=outs),
     TypeError, r"xs\[3\] is F32 but the first entry's is F16; one list call takes one dtype pair"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), outs=outs[:3] + [fp8(shape=(4,))]),
     ValueError, r"xs\[3\] has shape \(7,\) but outs\[3\] has \(4,\); list entries are not broadcast"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), out=outs), TypeError,
     "unexpected keyword argument 'out'"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), accumulate=True, outs=outs), TypeError,
     "unexpected keyword argument 'accumulate'"),
    (lambda h, xs, outs: h.quantize_batched(xs, "f8e4m3", column(), "f8e5m2", outs=outs), TypeError,
     r"takes 3 positional arguments \(quantize_batched\(xs, dtype, scale\)\)"),
    (lambda h, xs, outs: h.quantize_batched(FakeArray(), "f8e4m3", column(), outs=outs), TypeError, "not iterable"),
    (lambda h, xs, outs: h.dequantize_batched(outs, "f16", column(n=5), outs=xs), ValueError,
     r"scale_inv has shape \(5,\); it must hold 4 elements \(one an entry\), in one"),
    (lambda h, xs, outs: h.dequantize_batched(outs, "f16", scalar(), outs=xs), ValueError, "scale_inv has shape"),
    (lambda h, xs, outs: h.dequantize_batched(outs, "f16", column(), amax=column(), outs=xs), TypeError,
     "unexpected keyword argument 'amax'"),
    (lambda h, xs, outs: h.dequantize_batched(outs, "f16", outs=xs), TypeError, "needs scale_inv"),
    (lambda h, xs, outs: h.dequantize_batched(outs, "f16", column(), outs=xs[:2]), ValueError,
     "outs has 2 entries but qs has 4"),
    (lambda h, xs, outs: h.amax_batched(xs, out=column(n=3)), ValueError,
     r"out has shape \(3,\); it must hold 4 elements \(one an entry\) or one \(shared by every entry\)"),
    (lambda h, xs, outs: h.amax_batched(xs, out=column(typestr="<f8")), TypeError, "out is F64"),
    (lambda h, xs, outs: h.amax_batched(xs, out=column(read_only=True)), ValueError, "out: the output array is read-only"),
    (lambda h, xs, outs: h.amax_batched(xs, accumulate=True), TypeError,
     r"amax_batched\(accumulate=True\) needs out="),
    (lambda h, xs, outs: h.amax_batched([], stream=3), TypeError, "empty list with out=None"),
    (lambda h, xs, outs: h.amax_batched(xs[:1] + [FakeArray(shape=(2, 5), typestr="<f2", strides=(4, 40))],
                                        out=scalar()), ValueError, r"xs\[1\] is not contiguous"),
    (lambda h, xs, outs: h.amax_batched(xs[:3] + [FakeArray(shape=(7,))], out=scalar()), TypeError,
     r"xs\[3\] is F32 but the first entry's is F16; one list call takes one dtype$"),
    (lambda h, xs, outs: h.amax_batched(xs, outs=column()), TypeError, "unexpected keyword argument 'outs'"),
    (lambda h, xs, outs: h.amax_batched(xs, column()), TypeError, r"amax_batched\(xs\)"),
])
def test_scaled_lists_refuse_bad_arguments_before_the_library(scaled_list_calls, call, error, match):
    with pytest.raises(error, match=match):
        call(ew.Handle._from_raw(None), float_entries(), fp8_entries())
    assert all(recorder.args is None for recorder in scaled_list_calls.values())


@pytest.mark.parametrize("function, call", [
    ("ew_quantize_batched", lambda h: h.quantize_batched(float_entries(typestr="<i4"), "f8e4m3", column(),
                                                         outs=fp8_entries())),
    ("ew_dequantize_batched", lambda h: h.dequantize_batched(fp8_entries(), "i32", column(),
                                                             outs=float_entries(typestr="<i4"))),
    ("ew_amax_batched", lambda h: h.amax_batched(float_entries(typestr="<i4"), out=column())),
])
def test_the_librarys_refusals_of_scaled_lists_raise_elementwise_error(scaled_list_calls, function, call):
    scaled_list_calls[function].status = int(ew.Status.NOT_SUPPORTED)
    with pytest.raises(ew.ElementwiseError) as caught:
        call(ew.Handle._from_raw(None))
    assert caught.value.function == function and caught.value.status == ew.Status.NOT_SUPPORTED


@pytest.mark.parametrize("function, call", [
    ("ew_quantize_batched", lambda h: h.quantize_batched([FakeArray(pointer=0x20000)], "f8e4m3",
                                                         scalar(0x40000), outs=[fp8(shape=(4,))])),
    ("ew_dequantize_batched", lambda h: h.dequantize_batched([fp8(shape=(4,))], "f32", scalar(0x40000),
                                                             outs=[FakeArray(pointer=0x20000)])),
    ("ew_amax_batched", lambda h: h.amax_batched([FakeArray()], out=scalar(0x40000))),
])
def test_the_real_library_takes_or_names_the_scaled_lists(function, call):
    # No recorder: a library with the lists refuses the NULL handle; an older one is named.
    if hasattr(ctypes.CDLL(ew.library_path), function):
        with pytest.raises(ew.ElementwiseError) as caught:
            call(ew.Handle._from_raw(None))
        assert caught.value.function == function and caught.value.status == ew.Status.INVALID_HANDLE
        assert caught.value.message and caught.value.message == ew._last_error_message()
    else:
        with pytest.raises(RuntimeError, match=r"has no %s: it needs 1.2 or later" % function):
            call(ew.Handle._from_raw(None))


# ---- block-scaled casts (1.2): quantize_blocks, dequantize_blocks, block_scales_shape ----

BLOCK_FUNCTIONS = ("ew_quantize_blocks", "ew_dequantize_blocks")
MX, NVFP4 = ew.BlockFormat.MX, ew.BlockFormat.NVFP4
D = ew.DType


@pytest.fixture
def block_calls(monkeypatch):
    yield install(monkeypatch, {name: Recorder() for name in BLOCK_FUNCTIONS})
    ew._ext.set_recorder(None)


def byte_array(shape, pointer, name=None, **kw):
    """A one-byte array: uint8, or a uint8 view that names its dtype as PyTorch's do (float8_e4m3fn,
    float8_e8m0fnu, float4_e2m1fn_x2: a byte of two elements)."""
    return FakeArray(shape=shape, typestr="|u1", pointer=pointer, dtype=TorchLikeDtype(name) if name else None, **kw)


def test_the_block_calls_are_exported_and_documented():
    assert (D.F8E8M0, D.F4E2M1) == (13, 14)
    assert (MX, NVFP4) == (1, 2)
    for name in ("quantize_blocks", "dequantize_blocks", "block_scales_shape", "BlockFormat", "dtype_bits"):
        assert name in ew.__all__
    for name in ("quantize_blocks", "dequantize_blocks", "block_scales_shape"):
        assert getattr(ew, name) is getattr(ew._ext, name)
        assert getattr(ew, name).__doc__.strip()
    assert ew.Handle.quantize_blocks.__doc__ and ew.Handle.dequantize_blocks.__doc__
    assert not hasattr(ew.Handle, "block_scales_shape")  # no GPU, no handle


@pytest.mark.parametrize("shape, format, swizzled, want", [
    ((1, 32), "mx", False, (1, 1)), ((1, 32), "mx", True, (128, 4)),
    ((129, 96), "mx", False, (129, 3)), ((129, 96), MX, True, (256, 4)),
    ((300, 4096), "nvfp4", False, (300, 256)), ((300, 4096), NVFP4, True, (384, 256)),
    ((2, 3, 64), "mx", False, (6, 2)), ((2, 3, 64), 2, True, (128, 4)),  # rows: the leading dimensions' product
    ((64,), "nvfp4", False, (1, 4)), ((0, 32), "mx", False, (0, 1)), ((0, 32), "mx", True, (0, 4)),
    ((5, 0), "mx", True, (128, 0)), ((3, 0, 32), "mx", False, (0, 1))])
def test_block_scales_shape_is_the_librarys(shape, format, swizzled, want):
    # The real library answers: ew_block_scales_shape needs no GPU.
    assert ew.block_scales_shape(shape, format, swizzled=swizzled) == want
    assert ew.block_scales_shape(list(shape), format=format, swizzled=swizzled) == want


def test_block_scales_shape_defaults_to_mx_row_major():
    assert ew.block_scales_shape((4, 64)) == (4, 2)
    assert ew.block_scales_shape((4, 64), swizzled=0) == (4, 2)


@pytest.mark.parametrize("call, error, match", [
    (lambda: ew.block_scales_shape((4, 48)), ew.ElementwiseError, "cols = 48 is not a multiple"),
    (lambda: ew.block_scales_shape((4, 24), "nvfp4"), ew.ElementwiseError, "block of 16"),
    (lambda: ew.block_scales_shape((-1, 32)), ew.ElementwiseError, "negative"),
    (lambda: ew.block_scales_shape(()), ValueError, r"shape \(\) has no last dimension"),
    (lambda: ew.block_scales_shape((4, 32), "nv"), ValueError, "format must be 'mx' or 'nvfp4'"),
    (lambda: ew.block_scales_shape((4, 32), 3), ValueError, "format must be"),
    (lambda: ew.block_scales_shape((4, 32), True), ValueError, "format must be"),
    (lambda: ew.block_scales_shape(32), TypeError, "shape must be a sequence of ints"),
    (lambda: ew.block_scales_shape("ab"), TypeError, "shape must be a sequence"),
    (lambda: ew.block_scales_shape((4.5, 32)), TypeError, None),
    (lambda: ew.block_scales_shape((4, 32), "mx", False), TypeError, r"takes 2 positional arguments"),
    (lambda: ew.block_scales_shape((4, 32), round_up=True), TypeError, "unexpected keyword argument 'round_up'"),
])
def test_block_scales_shape_refusals(call, error, match):
    with pytest.raises(error, match=match) as caught:
        call()
    if error is ew.ElementwiseError:
        assert caught.value.function == "ew_block_scales_shape" and caught.value.status == ew.Status.INVALID_VALUE


def test_packed_float4_and_e8m0_are_read_from_dlpack():
    fp4 = Read(FakeDLPack(shape=(3, 16), code=(17, 4), lanes=2))  # PyTorch's float4_e2m1fn_x2
    assert fp4.dtype == D.F4E2M1 and fp4.shape == (3, 16) and fp4.strides == (16, 1)  # in bytes of two
    assert Read(FakeDLPack(code=(14, 8))).dtype == D.F8E8M0
    with pytest.raises(TypeError, match="has no libelementwise dtype"):  # one e2m1 a byte (ml_dtypes): not ours
        Read(FakeDLPack(code=(17, 8)))
    with pytest.raises(TypeError, match="not a scalar element type"):
        Read(FakeDLPack(code=(17, 4)))


def test_quantize_blocks_reaches_ew_quantize_blocks_as_the_c_api_orders_it(block_calls):
    handle = ew.Handle._from_raw(None)
    x = FakeArray(shape=(4, 64), typestr="<f2", pointer=0x200, stream=0x99)
    out, scales = byte_array((4, 64), 0x100, "float8_e4m3fn"), byte_array((4, 2), 0x300, "float8_e8m0fnu")
    assert handle.quantize_blocks(x, "f8e4m3", out=out, scales=scales) == (out, scales)
    # (handle, format, out_dtype, in_dtype, rows, cols, out, scales, x, global_scale, options, stream)
    assert block_calls["ew_quantize_blocks"].args == (None, MX, D.F8E4M3, D.F16, 4, 64, 0x100, 0x300, 0x200, None, 0,
                                                      0x99)
    for keywords, options in ((dict(round_up=True), 1), (dict(round_up=False), 0), (dict(swizzled=False), 0)):
        handle.quantize_blocks(x, "f8e5m2", out=out, scales=scales, **keywords)
        assert block_calls["ew_quantize_blocks"].args[2] == D.F8E5M2  # dtype= reads out as what it names
        assert block_calls["ew_quantize_blocks"].args[10] == options
    tiles = byte_array((128, 4), 0x300)  # swizzled: 128 x 4 scales, uint8 taken as e8m0
    handle.quantize_blocks(x, "f8e4m3", round_up=True, swizzled=True, out=out, scales=tiles)
    assert block_calls["ew_quantize_blocks"].args[7] == 0x300 and block_calls["ew_quantize_blocks"].args[10] == 3
    # The dtype left to out's own; by keyword; a float4 out holds cols / 2 bytes.
    handle.quantize_blocks(x, out=byte_array((4, 32), 0x100, "float4_e2m1fn_x2"), scales=scales)
    assert block_calls["ew_quantize_blocks"].args[2:6] == (D.F4E2M1, D.F16, 4, 64)
    handle.quantize_blocks(x, dtype="float4_e2m1fn_x2", out=byte_array((4, 32), 0x100), scales=scales, stream=5)
    assert block_calls["ew_quantize_blocks"].args[2] == D.F4E2M1 and block_calls["ew_quantize_blocks"].args[-1] == 5
    # in_dtype= for an int16 view of bfloat16 data
    handle.quantize_blocks(FakeArray(shape=(4, 64), typestr="<i2", pointer=0x200), "f8e4m3", in_dtype="bf16",
                           out=out, scales=scales)
    assert block_calls["ew_quantize_blocks"].args[2:4] == (D.F8E4M3, D.BF16)
    ew.quantize_blocks(x, "f8e4m3", out=out, scales=scales, handle=handle)  # the module function: the same call
    assert block_calls["ew_quantize_blocks"].args[0] is None


def test_nvfp4_takes_uint8_as_float4_and_a_global_scale(block_calls):
    handle = ew.Handle._from_raw(None)
    x = FakeArray(shape=(4, 64), pointer=0x200)
    out, scales, g = byte_array((4, 32), 0x100), byte_array((4, 4), 0x300), FakeArray(shape=(), pointer=0x400)
    for format in ("nvfp4", NVFP4, 2):
        assert handle.quantize_blocks(x, format=format, global_scale=g, out=out, scales=scales, stream=7) == (out, scales)
        assert block_calls["ew_quantize_blocks"].args[1:] == (NVFP4, D.F4E2M1, D.F32, 4, 64, 0x100, 0x300, 0x200, 0x400,
                                                              0, 7)
    handle.quantize_blocks(x, "f4e2m1", format="nvfp4", out=out, scales=byte_array((4, 4), 0x300, "float8_e4m3fn"),
                           global_scale=FakeArray(shape=(1,), pointer=0x400), swizzled=False)
    assert block_calls["ew_quantize_blocks"].args[9] == 0x400
    # round_up and a global scale with MX are the library's to refuse: they reach it.
    handle.quantize_blocks(x, format="nvfp4", round_up=True, out=out, scales=scales)
    assert block_calls["ew_quantize_blocks"].args[1] == NVFP4 and block_calls["ew_quantize_blocks"].args[10] == 1
    handle.quantize_blocks(x, "f8e4m3", global_scale=g, out=byte_array((4, 64), 0x100), scales=byte_array((4, 2), 0x300))
    assert block_calls["ew_quantize_blocks"].args[1] == MX and block_calls["ew_quantize_blocks"].args[9] == 0x400


def test_dequantize_blocks_reaches_ew_dequantize_blocks(block_calls):
    handle = ew.Handle._from_raw(None)
    q, scales = byte_array((4, 32), 0x200, "float4_e2m1fn_x2"), byte_array((4, 2), 0x300, "float8_e8m0fnu")
    out = FakeArray(shape=(4, 64), pointer=0x100)
    assert handle.dequantize_blocks(q, scales, "f32", out=out, stream=9) is out
    # (handle, format, out_dtype, in_dtype, rows, cols, out, q, scales, global_scale, options, stream)
    assert block_calls["ew_dequantize_blocks"].args == (None, MX, D.F32, D.F4E2M1, 4, 64, 0x100, 0x200, 0x300, None, 0,
                                                        9)
    # A plain uint8 q says what it holds with in_dtype= (MX); NVFP4's uint8 q is float4.
    handle.dequantize_blocks(byte_array((4, 64), 0x200), scales, out=FakeArray(shape=(4, 64), typestr="<f2"),
                             in_dtype="f8e5m2", swizzled=False)
    assert block_calls["ew_dequantize_blocks"].args[2:6] == (D.F16, D.F8E5M2, 4, 64)
    handle.dequantize_blocks(byte_array((2, 3, 32), 0x200), byte_array((6, 4), 0x300), format="nvfp4",
                             global_scale=FakeArray(shape=(), pointer=0x400), out=FakeArray(shape=(6, 64)))
    assert block_calls["ew_dequantize_blocks"].args[1:10] == (NVFP4, D.F32, D.F4E2M1, 6, 64, 0x10000, 0x200, 0x300,
                                                              0x400)
    handle.dequantize_blocks(q, scales=byte_array((128, 4), 0x300), dtype="bf16", swizzled=True,
                             out=FakeArray(shape=(4, 64), typestr="<i2", pointer=0x100))  # an int16 view of bf16
    assert block_calls["ew_dequantize_blocks"].args[2] == D.BF16 and block_calls["ew_dequantize_blocks"].args[10] == 2


def test_block_operands_are_rows_by_cols_whatever_their_leading_dimensions(block_calls):
    handle = ew.Handle._from_raw(None)
    x = FakeArray(shape=(2, 3, 64), pointer=0x200)  # rows = 6
    handle.quantize_blocks(x, "f8e4m3", out=byte_array((6, 64), 0x100), scales=byte_array((6, 2), 0x300))
    assert block_calls["ew_quantize_blocks"].args[4:6] == (6, 64)
    # Scales: any contiguous array of the count (torchao's (*leading, cols / 32), a flat swizzled buffer).
    handle.quantize_blocks(x, "f8e4m3", out=byte_array((2, 3, 64), 0x100), scales=byte_array((2, 3, 2), 0x300))
    handle.quantize_blocks(x, "f8e4m3", swizzled=True, out=byte_array((2, 3, 64), 0x100),
                           scales=byte_array((512,), 0x300))
    handle.quantize_blocks(FakeArray(shape=(64,), pointer=0x200), "f4e2m1", out=byte_array((32,), 0x100),
                           scales=byte_array((1, 2), 0x300))  # one dimension: one row
    assert block_calls["ew_quantize_blocks"].args[2:6] == (D.F4E2M1, D.F32, 1, 64)
    empty = FakeArray(shape=(0, 64), pointer=0)  # no rows: NULL pointers, the library's to judge
    handle.quantize_blocks(empty, "f8e4m3", out=byte_array((0, 64), 0), scales=byte_array((0, 2), 0))
    assert block_calls["ew_quantize_blocks"].args[4:9] == (0, 64, None, None, None)


def test_block_outputs_made_for_none_are_made_by_the_arrays_framework(block_calls, fake_cupy):
    handle = ew.Handle._from_raw(None)
    q = cupy_array(shape=(4, 32), typestr="|u1", pointer=0x200)
    out = handle.dequantize_blocks(q, byte_array((4, 4), 0x300), "f32", format="nvfp4", stream=7)
    assert fake_cupy.made == [("empty", (4, 64), "float32")]  # q's shape in elements: two a byte
    assert out.__cuda_array_interface__["shape"] == (4, 64)
    assert block_calls["ew_dequantize_blocks"].args[1:] == (NVFP4, D.F32, D.F4E2M1, 4, 64, 0xB000, 0x200, 0x300,
                                                            None, 0, 7)
    # CuPy has no float8 or float4: quantize_blocks needs out= and scales= there, as quantize needs out=.
    x = cupy_array(shape=(4, 64), pointer=0x200)
    with pytest.raises(TypeError, match="CuPy has no F8E4M3"):
        handle.quantize_blocks(x, "f8e4m3", scales=byte_array((4, 2), 0x300))
    with pytest.raises(TypeError, match="CuPy has no F8E8M0"):
        handle.quantize_blocks(x, "f8e4m3", out=byte_array((4, 64), 0x100))
    with pytest.raises(TypeError, match="CuPy has no F4E2M1"):
        handle.quantize_blocks(x, format="nvfp4", scales=byte_array((4, 4), 0x300))
    assert block_calls["ew_quantize_blocks"].args is None


def test_the_block_operands_take_part_in_the_stream_device_and_dlpack(block_calls):
    handle = ew.Handle._from_raw(None)
    x, out = FakeArray(shape=(4, 64), pointer=0x200), byte_array((4, 64), 0x100)
    scales = FakeDLPack(shape=(4, 2), code=(14, 8), pointer=0x4000)  # float8_e8m0fnu through DLPack
    handle.quantize_blocks(x, "f8e4m3", out=out, scales=scales, stream=0x77)
    assert scales.calls == [dict(stream=0x77, max_version=MAX_VERSION, copy=False)]
    assert block_calls["ew_quantize_blocks"].args[7] == 0x4000
    q = FakeDLPack(shape=(4, 32), code=(17, 4), lanes=2, pointer=0x5000)  # float4_e2m1fn_x2 through DLPack
    handle.dequantize_blocks(q, byte_array((4, 2), 0x300, stream=0x55), out=FakeArray(shape=(4, 64)))
    assert q.calls[0]["stream"] == 0x55  # the stream the scales' interface names
    assert block_calls["ew_dequantize_blocks"].args[3:8] == (D.F4E2M1, 4, 64, 0x10000, 0x5000)
    with pytest.raises(ValueError, match="different streams"):
        handle.quantize_blocks(FakeArray(shape=(4, 64), stream=5), "f8e4m3", out=out,
                               scales=byte_array((4, 2), 0x300, stream=6))
    with pytest.raises(ValueError, match="global_scale is on device 1 but the call runs on device 0"):
        handle.quantize_blocks(x, format="nvfp4", global_scale=FakeDLPack(shape=(), device=(2, 1)),
                               out=byte_array((4, 32), 0x100), scales=byte_array((4, 4), 0x300))
    with pytest.raises(ValueError, match="scales is on device 2"):
        handle.quantize_blocks(x, "f8e4m3", out=out, scales=FakeDLPack(shape=(4, 2), code=(1, 8), device=(2, 2)))


def fp4(shape=(4, 32), pointer=0x100):
    return byte_array(shape, pointer, "float4_e2m1fn_x2")


def e8m0(shape=(4, 2), pointer=0x300, **kw):
    return byte_array(shape, pointer, "float8_e8m0fnu", **kw)


X = dict(shape=(4, 64), pointer=0x200)


@pytest.mark.parametrize("call, error, match", [
    # the data: rows x cols, contiguous, out matching x
    (lambda h: h.quantize_blocks(FakeArray(shape=(4, 64), strides=(4, 16)), "f8e4m3", out=byte_array((4, 64), 0x100),
                                 scales=e8m0()), ValueError, r"x is not contiguous \(strides \(1, 4\)"),
    (lambda h: h.quantize_blocks(FakeArray(shape=()), "f8e4m3", out=byte_array((), 0x100), scales=e8m0()), ValueError,
     r"x has shape \(\); the block calls take arrays"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((4, 32), 0x100), scales=e8m0()), ValueError,
     r"out has shape \(4, 32\) \(F8E4M3\): 4 rows of 32 elements, but x's \(4, 64\) \(F32\) is 4 rows of 64"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f4e2m1", out=byte_array((4, 64), 0x100), scales=e8m0()), ValueError,
     r"out has shape \(4, 64\) \(F4E2M1\): 4 rows of 128 elements"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((2, 128), 0x100), scales=e8m0()), ValueError,
     "2 rows of 128 elements"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((4, 64), 0x100, strides=(128, 2)),
                                 scales=e8m0()), ValueError, "out is not contiguous"),
    (lambda h: h.dequantize_blocks(fp4(), e8m0(), out=FakeArray(shape=(4, 32))), ValueError,
     r"out has shape \(4, 32\) \(F32\): 4 rows of 32 elements, but q's \(4, 32\) \(F4E2M1\) is 4 rows of 64"),
    # the scales: the format's dtype or uint8, contiguous, of block_scales_shape's count
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((4, 64), 0x100), scales=e8m0((4, 3))),
     ValueError, r"scales has shape \(4, 3\), 12 scales, but 4 rows of 64 elements have 4 x 2 MX scales"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", swizzled=True, out=byte_array((4, 64), 0x100),
                                 scales=e8m0()), ValueError, "have 128 x 4 swizzled MX scales"),
    (lambda h: h.quantize_blocks(FakeArray(**X), format="nvfp4", out=fp4(), scales=e8m0((4, 4))), TypeError,
     "scales is F8E8M0; NVFP4 scales are F8E4M3 \\(or uint8\\)"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((4, 64), 0x100),
                                 scales=byte_array((4, 2), 0x300, "float8_e4m3fn")), TypeError,
     "scales is F8E4M3; MX scales are F8E8M0"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((4, 64), 0x100),
                                 scales=FakeArray(shape=(2,), pointer=0x300)), TypeError, "scales is F32"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((4, 64), 0x100),
                                 scales=e8m0((2, 4), strides=(1, 2))), ValueError, "scales is not contiguous"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((4, 64), 0x100),
                                 scales=e8m0(read_only=True)), ValueError, "scales: the output array is read-only"),
    (lambda h: h.dequantize_blocks(fp4(), e8m0((4, 1)), out=FakeArray(shape=(4, 64))), ValueError,
     r"scales has shape \(4, 1\), 4 scales"),
    # the global scale: a float32 device array of one element
    (lambda h: h.quantize_blocks(FakeArray(**X), format="nvfp4", out=fp4(), scales=byte_array((4, 4), 0x300),
                                 global_scale=FakeArray(shape=(), typestr="<f2")), TypeError,
     "global_scale is F16; it must be a float32 array of one element"),
    (lambda h: h.dequantize_blocks(fp4(), byte_array((4, 4), 0x300), format="nvfp4", out=FakeArray(shape=(4, 64)),
                                   global_scale=FakeArray(shape=(2,))), ValueError, r"global_scale has shape \(2,\)"),
    (lambda h: h.quantize_blocks(FakeArray(**X), format="nvfp4", out=fp4(), scales=byte_array((4, 4), 0x300),
                                 global_scale=3.0), TypeError, "global_scale: float has neither"),
    # the format and the flags
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", format="nvf4"), ValueError,
     "format must be 'mx' or 'nvfp4' \\(or elementwise.BlockFormat\\), not 'nvf4'"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", format=0), ValueError, "format must be"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", format="MX"), ValueError, "format must be"),
    # what the elements are
    (lambda h: h.quantize_blocks(FakeArray(**X), out=byte_array((4, 64), 0x100), scales=e8m0()), TypeError,
     "out is a uint8 array: say which elements it receives with dtype="),
    (lambda h: h.dequantize_blocks(byte_array((4, 32), 0x200), e8m0(), out=FakeArray(shape=(4, 64))), TypeError,
     "q is a uint8 array: say which elements it holds with in_dtype="),
    (lambda h: h.quantize_blocks(FakeArray(**X), scales=e8m0()), TypeError,
     r"quantize_blocks with out=None needs the dtype to quantize to"),
    (lambda h: h.dequantize_blocks(fp4(), e8m0()), TypeError, "dequantize_blocks with out=None needs the dtype"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "complex64"), TypeError, "unknown dtype"),
    # the call's shape
    (lambda h: h.dequantize_blocks(fp4(), out=FakeArray(shape=(4, 64))), TypeError, "needs scales"),
    (lambda h: h.dequantize_blocks(fp4(), None, "f32"), TypeError, "needs scales"),
    (lambda h: h.dequantize_blocks(fp4(), e8m0(), "f32", round_up=True), TypeError,
     "unexpected keyword argument 'round_up'"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", e8m0()), TypeError,
     r"takes 2 positional arguments \(quantize_blocks\(x, dtype\)\) but 3"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", dtype="f8e5m2"), TypeError, "got the dtype both"),
    (lambda h: h.dequantize_blocks(fp4(), e8m0(), scales=e8m0()), TypeError, "got the scales both"),
    (lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", scale=FakeArray()), TypeError,
     "unexpected keyword argument 'scale'"),
    (lambda h: h.quantize_blocks(dtype="f8e4m3"), TypeError, r"quantize_blocks\(\) takes quantize_blocks\(x, dtype\)"),
])
def test_block_refusals_before_the_library(block_calls, call, error, match):
    with pytest.raises(error, match=match):
        call(ew.Handle._from_raw(None))
    assert all(recorder.args is None for recorder in block_calls.values())


def test_a_cols_not_of_whole_blocks_is_the_librarys_refusal_before_any_allocation(block_calls, fake_cupy):
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.Handle._from_raw(None).dequantize_blocks(cupy_array(shape=(4, 20), typestr="|u1"), byte_array((4, 2), 0x300),
                                                    "f32", format="nvfp4")
    assert caught.value.function == "ew_block_scales_shape" and "block of 16" in caught.value.message
    assert fake_cupy.made == [] and block_calls["ew_dequantize_blocks"].args is None


@pytest.mark.parametrize("function, call", [
    ("ew_quantize_blocks", lambda h: h.quantize_blocks(FakeArray(**X), "f8e4m3", out=byte_array((4, 64), 0x100),
                                                       scales=e8m0())),
    ("ew_dequantize_blocks", lambda h: h.dequantize_blocks(fp4(), e8m0(), out=FakeArray(shape=(4, 64)))),
])
def test_the_librarys_refusals_of_block_calls_raise_elementwise_error(block_calls, function, call):
    block_calls[function].status = int(ew.Status.NOT_SUPPORTED)
    with pytest.raises(ew.ElementwiseError) as caught:
        call(ew.Handle._from_raw(None))
    assert caught.value.function == function and caught.value.status == ew.Status.NOT_SUPPORTED


def test_the_real_library_refuses_a_null_handle_in_the_block_calls():
    # No recorder: the library itself, before anything else (an empty tensor too).
    for function, call in (
            ("ew_quantize_blocks", lambda h: h.quantize_blocks(FakeArray(**X), format="nvfp4", out=fp4(),
                                                               scales=byte_array((4, 4), 0x300))),
            ("ew_dequantize_blocks", lambda h: h.dequantize_blocks(fp4(), e8m0(), out=FakeArray(shape=(4, 64),
                                                                                                pointer=0x20000))),
            ("ew_quantize_blocks", lambda h: h.quantize_blocks(FakeArray(shape=(0, 32), pointer=0), "f8e4m3",
                                                               out=byte_array((0, 32), 0), scales=e8m0((0, 1))))):
        with pytest.raises(ew.ElementwiseError) as caught:
            call(ew.Handle._from_raw(None))
        assert caught.value.function == function and caught.value.status == ew.Status.INVALID_HANDLE
        assert caught.value.message == ew._last_error_message()
