# SPDX-License-Identifier: Apache-2.0
"""The binding without a GPU: import and library lookup, dtype and stream resolution from the CUDA
array interface, argument marshalling, and the error path through the real library."""

import ctypes
import math
import os
import re
import shutil
import subprocess
import sys

import pytest

import elementwise as ew
from conftest import PYTHON_DIR, FakeArray

ROOT = os.path.dirname(PYTHON_DIR)
FLOAT8 = (ew.DType.F8E4M3, ew.DType.F8E5M2)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as cmake:
        match = re.search(r"project\(elementwise\s+VERSION\s+(\d+)\.(\d+)\.(\d+)", cmake.read())
    return tuple(int(part) for part in match.groups())


def run_python(code, cwd, **env_changes):
    """Run code in a fresh interpreter; cwd matters, since `python -c` imports from it first."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
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
    shutil.copytree(os.path.join(PYTHON_DIR, "elementwise"), package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ew.library_path, package / "libelementwise.so.1")
    result = run_python("import elementwise; print(elementwise.library_path)", tmp_path,
                        ELEMENTWISE_LIBRARY=None, PYTHONPATH=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(package / "libelementwise.so.1")


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
        "add": lambda: handle.add(out, a, b), "mul": lambda: handle.mul(out, a, b),
        "relu": lambda: handle.relu(out, a), "cast": lambda: handle.cast(out, a),
        "scale_add": lambda: handle.scale_add(out, 2.0, a, b),
        "unary": lambda: handle.unary(ew.Op.RELU, out, a),
        "binary": lambda: handle.binary(ew.Op.ADD, out, a, b),
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
        ew.Handle._from_raw(None).add(FakeArray(), FakeArray(), FakeArray())
    assert ew._lib.ew_handle_create(0, None) == ew.Status.INVALID_VALUE  # a different failure, no GPU needed
    other = ew._last_error_message()
    assert other and other != null_handle.value.message
    with pytest.raises(ew.ElementwiseError) as again:
        ew.Handle._from_raw(None).add(FakeArray(), FakeArray(), FakeArray())
    assert again.value.message == null_handle.value.message


def test_a_closed_handle_is_refused_before_the_library():
    handle = ew.Handle._from_raw(None)
    handle.close()
    with pytest.raises(ValueError, match="closed"):
        handle.add(FakeArray(), FakeArray(), FakeArray())


# ---- the library's tables, seen through the binding ----

def test_is_supported_follows_the_catalogue():
    dtypes = list(ew.DType)
    for dtype in dtypes:
        assert ew.is_supported(ew.Op.ADD, dtype) == (dtype not in FLOAT8)
        assert ew.is_supported(ew.Op.MUL, dtype) == (dtype not in FLOAT8)
        assert ew.is_supported(ew.Op.SCALE_ADD, dtype) == (dtype not in FLOAT8)
        assert ew.is_supported(ew.Op.RELU, dtype) == (dtype not in FLOAT8 + (ew.DType.BOOL,))
        for source in dtypes:
            assert ew.is_supported(ew.Op.CAST, dtype, source)
            if source != dtype:
                assert not ew.is_supported(ew.Op.ADD, dtype, source)


def test_dtype_sizes_and_names_agree_with_the_library():
    for dtype in ew.DType:
        assert ew.dtype_size(dtype) == ew._SIZES[dtype]
        assert ew._as_dtype(ew.dtype_name(dtype)) == dtype


@pytest.mark.parametrize("name, dtype", [
    ("f16", ew.DType.F16), ("float16", ew.DType.F16), ("bfloat16", ew.DType.BF16),
    ("torch.bfloat16", ew.DType.BF16),
    ("float8_e4m3fn", ew.DType.F8E4M3), ("float8_e5m2", ew.DType.F8E5M2), ("int64", ew.DType.I64),
    (ew.DType.U8, ew.DType.U8), (int(ew.DType.F32), ew.DType.F32)])
def test_dtype_names(name, dtype):
    assert ew._as_dtype(name) == dtype


def test_an_unknown_dtype_name_is_a_type_error():
    with pytest.raises(TypeError, match="unknown dtype"):
        ew._as_dtype("complex64")


# ---- the CUDA array interface ----

@pytest.mark.parametrize("typestr, dtype", [
    ("|b1", ew.DType.BOOL), ("|i1", ew.DType.I8), ("|u1", ew.DType.U8), ("<i2", ew.DType.I16),
    ("<i4", ew.DType.I32), ("<i8", ew.DType.I64), ("<f2", ew.DType.F16), ("<f4", ew.DType.F32),
    ("<f8", ew.DType.F64)])
def test_dtype_from_typestr(typestr, dtype):
    assert ew._Operand(FakeArray(typestr=typestr), "x").dtype == dtype


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
    ("<f2", TorchLikeDtype("float16"), ew.DType.F16)])
def test_bfloat16_and_float8_are_recognised_by_the_arrays_dtype_name(typestr, declared, dtype):
    assert ew._Operand(FakeArray(typestr=typestr, dtype=declared), "x").dtype == dtype


def test_an_ambiguous_typestr_asks_for_dtype():
    with pytest.raises(TypeError, match="dtype="):
        ew._Operand(FakeArray(typestr="<V2"), "x")
    assert ew._Operand(FakeArray(typestr="<V2"), "x", dtype="bf16").dtype == ew.DType.BF16


def test_dtype_argument_overrides_the_typestr_but_not_the_element_size():
    assert ew._Operand(FakeArray(typestr="<f2"), "x", dtype=ew.DType.BF16).dtype == ew.DType.BF16
    assert ew._Operand(FakeArray(typestr="|u1"), "x", dtype="f8e4m3").dtype == ew.DType.F8E4M3
    with pytest.raises(TypeError, match="2-byte"):
        ew._Operand(FakeArray(typestr="<f4"), "x", dtype="f16")


@pytest.mark.parametrize("typestr", ["<u2", "<u4", "<c8", ">f4", "<M8[ns]", "O", "<V"])
def test_element_types_outside_the_library_are_refused(typestr):
    with pytest.raises(TypeError):
        ew._Operand(FakeArray(typestr=typestr), "x")


@pytest.mark.parametrize("shape, strides, contiguous", [
    ((2, 3), None, True), ((2, 3), (12, 4), True), ((2, 3), (4, 8), False), ((3, 1), (4, 999), True),
    ((6,), (8,), False), ((0, 5), (4, 4), True), ((), None, True)])
def test_only_c_contiguous_arrays_are_accepted(shape, strides, contiguous):
    array = FakeArray(shape=shape, strides=strides)
    if contiguous:
        assert ew._Operand(array, "x").count == math.prod(shape)
    else:
        with pytest.raises(ValueError, match="contiguous"):
            ew._Operand(array, "x")


def test_masked_and_read_only_outputs_are_refused():
    with pytest.raises(ValueError, match="masked"):
        ew._Operand(FakeArray(mask=FakeArray(typestr="|b1")), "x")
    with pytest.raises(ValueError, match="read-only"):
        ew._Operand(FakeArray(read_only=True), "out", writable=True)
    assert ew._Operand(FakeArray(read_only=True), "a").pointer == 0x10000  # inputs may be read-only


def test_an_object_without_the_interface_is_a_type_error():
    with pytest.raises(TypeError, match="__cuda_array_interface__"):
        ew.Handle._from_raw(None).relu(FakeArray(), object())


def test_shapes_and_dtypes_must_agree():
    handle = ew.Handle._from_raw(None)
    with pytest.raises(ValueError, match="shape"):
        handle.add(FakeArray(shape=(4,)), FakeArray(shape=(4,)), FakeArray(shape=(2, 2)))
    with pytest.raises(TypeError, match="cast"):
        handle.add(FakeArray(), FakeArray(typestr="<i4"), FakeArray())


# ---- streams ----

@pytest.mark.parametrize("streams, chosen", [
    ((None, None), 0), ((1, None), 1), ((2, 2), 2), ((0x7F00DEAD, None), 0x7F00DEAD)])
def test_the_stream_named_by_the_interface_is_used(streams, chosen):
    operands = [ew._Operand(FakeArray(stream=stream), "x") for stream in streams]
    assert ew._resolve_stream(None, operands) == chosen


def test_different_streams_in_the_interfaces_are_refused():
    operands = [ew._Operand(FakeArray(stream=stream), "x") for stream in (5, 7)]
    with pytest.raises(ValueError, match="different streams"):
        ew._resolve_stream(None, operands)
    assert ew._resolve_stream(9, operands) == 9  # unless the caller names one


def test_stream_zero_is_refused_as_the_interface_says():
    with pytest.raises(ValueError, match="stream 0"):
        ew._Operand(FakeArray(stream=0), "x")


def test_a_version_2_interface_names_no_stream():
    array = FakeArray(stream=5)
    array.__cuda_array_interface__["version"] = 2
    assert ew._resolve_stream(None, [ew._Operand(array, "x")]) == 0


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
    assert ew._stream_handle(stream) == value


def test_an_unknown_stream_object_is_a_type_error():
    with pytest.raises(TypeError):
        ew._stream_handle("stream")


# ---- what reaches the C functions ----

class Recorder:
    """Stands in for one C function: records its arguments, returns a status."""

    def __init__(self, status=0):
        self.args = None
        self.status = status

    def __call__(self, *args):
        self.args = args
        return self.status


@pytest.fixture
def recorded(monkeypatch):
    recorders = {}
    for name in ("ew_unary", "ew_binary", "ew_cast", "ew_scale_add"):
        recorders[name] = Recorder()
        monkeypatch.setattr(ew._lib, name, recorders[name])
    return recorders


def test_arguments_reach_the_library_as_the_c_api_orders_them(recorded):
    handle = ew.Handle._from_raw(None)
    out, a, b = (FakeArray(shape=(3, 5), typestr="<f2", pointer=pointer, stream=0x99)
                 for pointer in (0x100, 0x200, 0x300))
    handle.add(out, a, b)
    assert recorded["ew_binary"].args[0].value is None  # the raw handle
    assert recorded["ew_binary"].args[1:] == (ew.Op.ADD, ew.DType.F16, 15, 0x100, 0x200, 0x300, 0x99)
    handle.scale_add(out, 3, a, b, stream=CupyStream())
    assert recorded["ew_scale_add"].args[1:] == (ew.DType.F16, 3.0, 15, 0x100, 0x200, 0x300, 0x2345)
    assert isinstance(recorded["ew_scale_add"].args[2], float)
    handle.relu(out, a, dtype="bf16")
    assert recorded["ew_unary"].args[1:] == (ew.Op.RELU, ew.DType.BF16, 15, 0x100, 0x200, 0x99)
    handle.cast(FakeArray(shape=(3, 5), typestr="|u1", pointer=0x400), a, out_dtype="f8e5m2")
    assert recorded["ew_cast"].args[1:] == (ew.DType.F8E5M2, ew.DType.F16, 15, 0x400, 0x200, 0x99)


def test_empty_arrays_pass_null_pointers(recorded):
    handle = ew.Handle._from_raw(None)
    empty = FakeArray(shape=(0,), pointer=0)
    handle.add(empty, empty, empty)
    assert recorded["ew_binary"].args[3:7] == (0, None, None, None)


def test_a_failing_status_becomes_an_exception_with_the_library_text(recorded):
    recorded["ew_binary"].status = int(ew.Status.DEVICE_MISMATCH)
    with pytest.raises(ew.ElementwiseError) as caught:
        ew.Handle._from_raw(None).mul(FakeArray(), FakeArray(), FakeArray())
    assert caught.value.status == ew.Status.DEVICE_MISMATCH
    assert caught.value.function == "ew_binary"
    assert "EW_ERROR_DEVICE_MISMATCH" in str(caught.value)
    assert caught.value.message == ew._last_error_message()
