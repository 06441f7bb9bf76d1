# SPDX-License-Identifier: Apache-2.0
"""Python binding of libelementwise: elementwise ops on GPU arrays, without copies.

A thin ctypes layer over the C library (no compiled code). It takes any object exposing
``__cuda_array_interface__`` (CuPy, Numba, PyTorch) or DLPack's ``__dlpack__`` /
``__dlpack_device__`` (JAX and the rest), reads its pointer, shape, strides, dtype and stream, and
calls the library on the memory in place::

    import torch, elementwise as ew
    a = torch.randn(1 << 20, device="cuda", dtype=torch.float16)
    b = torch.randn_like(a)
    out = torch.empty_like(a)
    ew.add(out, a, b)                    # out = a + b, queued on the tensors' stream
    c = ew.add(None, a, b)               # out=None: c = torch.empty_like(a), filled and returned
    ew.scale_add(out, 0.5, a, b)         # out = 0.5 * a + b
    ew.cast(out.view(torch.int16), a)    # any of the 144 dtype pairs (here f16 -> i16)
    ew.add(x2d, x2d, bias)               # NumPy broadcasting: bias of shape (C,) against (N, C)
    ew.add_batched(outs, as_, bs)        # a list of adds in one launch

Outputs come first, as in the C API. ``None`` in their place makes the binding allocate the output
with the input's own framework (PyTorch, CuPy, Numba) and return it. Strided views and broadcast
inputs go through the library's strided calls: nothing is ever copied. The exact semantics of each
op (rounding, NaN, wrap-around) are those of docs/semantics.md.

:class:`Kernel` compiles an elementwise body of your own at run time (with NVRTC, for the current
GPU) and runs it on the same machinery, one pass over memory for a whole chain::

    k = ew.Kernel("return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));",
                  out_dtype="f16", in_dtypes=("f32", "f32"), n_params=1)
    y = k(None, a, b, params=(1.5,))     # y = f16(relu(1.5 * a + b)), bit for bit the chain of calls

The library is found through, in order: the ``ELEMENTWISE_LIBRARY`` environment variable (a path
to ``libelementwise.so.1``), the copy next to this file (what ``pip install`` puts there),
``ctypes.util.find_library("elementwise")`` (an installed system package), and finally the dynamic
loader's own search (``LD_LIBRARY_PATH``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import enum
import math
import os
import re
import sys
import threading
from typing import Any, List, Optional, Sequence, Tuple, TypeVar, Union

__all__ = [
    "DType", "Op", "Status", "ElementwiseError", "Handle", "MAX_DIMS",
    "add", "mul", "relu", "cast", "scale_add", "unary", "binary",
    "add_batched", "mul_batched", "relu_batched", "cast_batched", "scale_add_batched",
    "unary_batched", "binary_batched",
    "default_handle", "is_supported", "dtype_name", "dtype_size", "library_version", "library_path",
    "Kernel",
]

_ABI_MAJOR = 1
MAX_DIMS = 8
"""EW_MAX_DIMS: the most dimensions a strided call takes (after the binding merges what it can)."""

#: Anything with ``__cuda_array_interface__`` or ``__dlpack__``/``__dlpack_device__`` on a GPU.
Array = Any
#: A DType, its integer value, or a name: "f16", "float16", "bfloat16", torch.bfloat16, ...
DTypeLike = Any
#: A cudaStream_t as an int, or a stream object of PyTorch, CuPy, Numba or cuda.core; None: see docs.
StreamLike = Any


class Status(enum.IntEnum):
    """ew_status_t."""
    SUCCESS = 0
    INVALID_VALUE = 1
    INVALID_HANDLE = 2
    NOT_SUPPORTED = 3
    DEVICE_MISMATCH = 4
    NO_DEVICE = 5
    CUDA = 6
    OUT_OF_MEMORY = 7


class DType(enum.IntEnum):
    """ew_dtype_t."""
    BOOL = 1
    I8 = 2
    U8 = 3
    I16 = 4
    I32 = 5
    I64 = 6
    F16 = 7
    BF16 = 8
    F32 = 9
    F64 = 10
    F8E4M3 = 11
    F8E5M2 = 12


class Op(enum.IntEnum):
    """ew_op_t."""
    ADD = 1
    MUL = 2
    RELU = 3
    CAST = 4
    SCALE_ADD = 5


# Names accepted for dtype= arguments: the library's own ("f16") and the usual NumPy/PyTorch names.
_DTYPE_ALIASES = {
    DType.BOOL: ("bool", "bool_"), DType.I8: ("i8", "int8"), DType.U8: ("u8", "uint8"),
    DType.I16: ("i16", "int16", "short"), DType.I32: ("i32", "int32", "int"),
    DType.I64: ("i64", "int64", "long"), DType.F16: ("f16", "float16", "half"),
    DType.BF16: ("bf16", "bfloat16"), DType.F32: ("f32", "float32", "float"),
    DType.F64: ("f64", "float64", "double"),
    DType.F8E4M3: ("f8e4m3", "float8_e4m3fn", "e4m3"), DType.F8E5M2: ("f8e5m2", "float8_e5m2", "e5m2"),
}
_DTYPE_BY_NAME = {name: dtype for dtype, names in _DTYPE_ALIASES.items() for name in names}
# Each dtype's name in PyTorch (torch.<name>) and NumPy/CuPy, for allocating outputs.
_FRAMEWORK_NAME = {
    DType.BOOL: "bool", DType.I8: "int8", DType.U8: "uint8", DType.I16: "int16", DType.I32: "int32",
    DType.I64: "int64", DType.F16: "float16", DType.BF16: "bfloat16", DType.F32: "float32",
    DType.F64: "float64", DType.F8E4M3: "float8_e4m3fn", DType.F8E5M2: "float8_e5m2",
}

# typestr (kind + size, byte order stripped) -> dtype. bfloat16 and the float8 types have no
# typestr of their own (PyTorch exports bfloat16 as "<V2" and no interface at all for float8):
# they are recognised by the object's dtype name, or given with dtype=.
_DTYPE_BY_TYPESTR = {
    "b1": DType.BOOL, "i1": DType.I8, "u1": DType.U8, "i2": DType.I16, "i4": DType.I32, "i8": DType.I64,
    "f2": DType.F16, "f4": DType.F32, "f8": DType.F64,
}
# DLPack's (type code, bits) -> dtype (dlpack.h: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
# kDLBool 6, kDLFloat8_e4m3fn 10, kDLFloat8_e5m2 12).
_DTYPE_BY_DLPACK = {
    (0, 8): DType.I8, (0, 16): DType.I16, (0, 32): DType.I32, (0, 64): DType.I64, (1, 8): DType.U8,
    (2, 16): DType.F16, (2, 32): DType.F32, (2, 64): DType.F64, (4, 16): DType.BF16, (6, 8): DType.BOOL,
    (10, 8): DType.F8E4M3, (12, 8): DType.F8E5M2,
}
_SIZES = {DType.BOOL: 1, DType.I8: 1, DType.U8: 1, DType.I16: 2, DType.I32: 4, DType.I64: 8,
          DType.F16: 2, DType.BF16: 2, DType.F32: 4, DType.F64: 8, DType.F8E4M3: 1, DType.F8E5M2: 1}
_NAMED_ONLY = (DType.BF16, DType.F8E4M3, DType.F8E5M2)


class ElementwiseError(RuntimeError):
    """A call into libelementwise failed.

    ``status`` is the :class:`Status`, ``message`` the library's ew_get_last_error_message() text
    (which argument and why, or which CUDA call failed with which CUDA error), ``function`` the C
    function that failed.
    """

    def __init__(self, status: int, message: str, function: Optional[str] = None) -> None:
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status = status
        self.message = message
        self.function = function
        name = _lib.ew_status_string(int(status)).decode()
        super().__init__("%s%s: %s" % ("%s: " % function if function else "", name, message))


# ---- loading the library ----

def _candidates() -> List[str]:
    explicit = os.environ.get("ELEMENTWISE_LIBRARY")
    if explicit:
        # An explicit choice is the only one tried: silently falling back would hide a mistake.
        return [explicit]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, name) for name in ("libelementwise.so.1", "libelementwise.so")]
    found = [path for path in found if os.path.exists(path)]
    system = ctypes.util.find_library("elementwise")
    if system:
        found.append(system)
    found.append("libelementwise.so.%d" % _ABI_MAJOR)  # the loader's search: LD_LIBRARY_PATH, ld.so.cache
    return found


def _load() -> Tuple[ctypes.CDLL, str]:
    tried = []
    for candidate in _candidates():
        try:
            return ctypes.CDLL(candidate), candidate
        except OSError as error:
            tried.append("%s (%s)" % (candidate, error))
    raise ImportError("libelementwise could not be loaded; set ELEMENTWISE_LIBRARY to the path of "
                      "libelementwise.so.1 or install the package. Tried: " + "; ".join(tried))


_lib, library_path = _load()

_c_handle = ctypes.c_void_p
_c_i64p = ctypes.POINTER(ctypes.c_int64)
_c_ptrs = ctypes.POINTER(ctypes.c_void_p)
_c_int, _c_i64, _c_ptr, _c_double = ctypes.c_int, ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
_SIGNATURES = (
    ("ew_get_version", ctypes.c_uint, []),
    ("ew_handle_create", _c_int, [_c_int, ctypes.POINTER(_c_handle)]),
    ("ew_handle_destroy", _c_int, [_c_handle]),
    ("ew_handle_get_device", _c_int, [_c_handle, ctypes.POINTER(_c_int)]),
    ("ew_handle_get_sm_count", _c_int, [_c_handle, ctypes.POINTER(_c_int)]),
    ("ew_handle_get_max_threads_per_sm", _c_int, [_c_handle, ctypes.POINTER(_c_int)]),
    ("ew_unary", _c_int, [_c_handle, _c_int, _c_int, _c_i64, _c_ptr, _c_ptr, _c_ptr]),
    ("ew_binary", _c_int, [_c_handle, _c_int, _c_int, _c_i64, _c_ptr, _c_ptr, _c_ptr, _c_ptr]),
    ("ew_cast", _c_int, [_c_handle, _c_int, _c_int, _c_i64, _c_ptr, _c_ptr, _c_ptr]),
    ("ew_scale_add", _c_int, [_c_handle, _c_int, _c_double, _c_i64, _c_ptr, _c_ptr, _c_ptr, _c_ptr]),
    ("ew_is_supported", _c_int, [_c_int, _c_int, _c_int]),
    ("ew_status_string", ctypes.c_char_p, [_c_int]),
    ("ew_dtype_name", ctypes.c_char_p, [_c_int]),
    ("ew_dtype_size", ctypes.c_size_t, [_c_int]),
    ("ew_get_last_error_message", ctypes.c_char_p, []),
)
# Added in 1.1: bound when the loaded library has them; calling one it lacks says so (_function).
_SIGNATURES_1_1 = (
    ("ew_unary_strided", _c_int, [_c_handle, _c_int, _c_int, _c_int, _c_i64p, _c_ptr, _c_i64p, _c_ptr,
                                  _c_i64p, _c_ptr]),
    ("ew_binary_strided", _c_int, [_c_handle, _c_int, _c_int, _c_int, _c_i64p, _c_ptr, _c_i64p, _c_ptr,
                                   _c_i64p, _c_ptr, _c_i64p, _c_ptr]),
    ("ew_cast_strided", _c_int, [_c_handle, _c_int, _c_int, _c_int, _c_i64p, _c_ptr, _c_i64p, _c_ptr,
                                 _c_i64p, _c_ptr]),
    ("ew_scale_add_strided", _c_int, [_c_handle, _c_int, _c_double, _c_int, _c_i64p, _c_ptr, _c_i64p,
                                      _c_ptr, _c_i64p, _c_ptr, _c_i64p, _c_ptr]),
    ("ew_unary_batched", _c_int, [_c_handle, _c_int, _c_int, _c_i64, _c_i64p, _c_ptrs, _c_ptrs, _c_ptr]),
    ("ew_binary_batched", _c_int, [_c_handle, _c_int, _c_int, _c_i64, _c_i64p, _c_ptrs, _c_ptrs, _c_ptrs,
                                   _c_ptr]),
    ("ew_cast_batched", _c_int, [_c_handle, _c_int, _c_int, _c_i64, _c_i64p, _c_ptrs, _c_ptrs, _c_ptr]),
    ("ew_scale_add_batched", _c_int, [_c_handle, _c_int, _c_double, _c_i64, _c_i64p, _c_ptrs, _c_ptrs,
                                      _c_ptrs, _c_ptr]),
)
for _name, _restype, _argtypes in _SIGNATURES + _SIGNATURES_1_1:
    try:
        _function = getattr(_lib, _name)
    except AttributeError:
        if (_name, _restype, _argtypes) in _SIGNATURES:
            raise ImportError("%s has no %s: not a libelementwise %d.x" % (library_path, _name, _ABI_MAJOR))
        continue
    _function.restype = _restype
    _function.argtypes = _argtypes

if _lib.ew_get_version() // 10000 != _ABI_MAJOR:
    raise ImportError("%s is version %d; this binding needs %d.x" % (
        library_path, _lib.ew_get_version(), _ABI_MAJOR))


def library_version() -> Tuple[int, int, int]:
    """(major, minor, patch) of the loaded library."""
    version = _lib.ew_get_version()
    return version // 10000, version // 100 % 100, version % 100


def _package_version() -> str:
    # The installed distribution's version (it names the CUDA toolkit: 1.1.0+cu130) when this very
    # file is the one installed; from a source tree, the library's version.
    try:
        from importlib import metadata
        distribution = metadata.distribution("elementwise")
        installed = str(distribution.locate_file(os.path.join("elementwise", "__init__.py")))
        if os.path.exists(installed) and os.path.samefile(installed, __file__):
            return distribution.version
    except Exception:  # no metadata (not installed, Python without importlib.metadata)
        pass
    return "%d.%d.%d" % library_version()


__version__ = _package_version()


def _function(name: str) -> Any:
    """A C function of the library; NotImplementedError if the loaded library is too old for it."""
    try:
        return getattr(_lib, name)
    except AttributeError:
        raise NotImplementedError("%s (version %d.%d.%d) has no %s; it needs libelementwise 1.1 or later"
                                  % ((library_path,) + library_version() + (name,))) from None


def _last_error_message() -> str:
    return _lib.ew_get_last_error_message().decode("utf-8", "replace")


def _check(status: int, function: str) -> None:
    # The message is read right away, on the thread that failed (it is thread-local in the library).
    if status != Status.SUCCESS:
        raise ElementwiseError(status, _last_error_message(), function)


def is_supported(op: Union[Op, int], out_dtype: DTypeLike, in_dtype: DTypeLike = None) -> bool:
    """Whether the catalogue has ``op`` for these dtypes (in_dtype defaults to out_dtype)."""
    out_dtype = _as_dtype(out_dtype)
    in_dtype = out_dtype if in_dtype is None else _as_dtype(in_dtype)
    return bool(_lib.ew_is_supported(int(op), out_dtype, in_dtype))


def dtype_name(dtype: DTypeLike) -> str:
    """The library's short name of a dtype ("f16", "bf16", ...)."""
    return _lib.ew_dtype_name(int(_as_dtype(dtype))).decode()


def dtype_size(dtype: DTypeLike) -> int:
    """Bytes per element of a dtype."""
    return int(_lib.ew_dtype_size(int(_as_dtype(dtype))))


# ---- dtypes ----

def _as_dtype(value: DTypeLike) -> DType:
    """A DType from a DType, its int value, or a name ("f16", "bfloat16", torch.bfloat16, ...)."""
    if isinstance(value, DType):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return DType(value)
    name = getattr(value, "name", None) if not isinstance(value, str) else value
    if not isinstance(name, str):
        name = str(value)
    key = name.lower()
    if key.startswith("torch."):
        key = key[len("torch."):]
    if key in _DTYPE_BY_NAME:
        return _DTYPE_BY_NAME[key]
    raise TypeError("unknown dtype %r; use elementwise.DType or one of %s" % (value, sorted(_DTYPE_BY_NAME)))


def _named_dtype(obj: Any) -> Optional[DType]:
    """bfloat16 / float8 named by the object's own dtype (torch, ml_dtypes), else None."""
    declared = getattr(obj, "dtype", None)
    if declared is None:
        return None
    try:
        dtype = _as_dtype(declared)
    except (TypeError, ValueError):
        return None
    return dtype if dtype in _NAMED_ONLY else None


# ---- arrays: the CUDA array interface and DLPack ----

def _interface(obj: Any, what: str) -> Optional[dict]:
    """The object's __cuda_array_interface__, or None when it has none (DLPack is tried next)."""
    try:
        return obj.__cuda_array_interface__
    except AttributeError:
        return None
    except (KeyError, TypeError):
        # PyTorch exports no interface for float8 tensors (nor, in old versions, for bfloat16); an
        # integer view of the same memory, with elements of the same size, does.
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor) and _named_dtype(obj) is not None:
            return obj.view(torch.int16 if obj.element_size() == 2 else torch.uint8).__cuda_array_interface__
        raise


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", _c_i64p), ("strides", _c_i64p),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_DLPACK_READ_ONLY = 1
_DLPACK_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host (pinned)", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                        10: "ROCm", 11: "ROCm host", 13: "CUDA managed", 14: "oneAPI"}
_DLPACK_GPU = (2, 13)  # kDLCUDA, kDLCUDAManaged: memory the kernels can address
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype, _capsule_is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _dlpack_device(obj: Any, what: str) -> Tuple[int, int]:
    """(device type, device id) of a DLPack producer, refusing memory the GPU cannot address."""
    device_type, device_id = (int(value) for value in obj.__dlpack_device__())
    if device_type not in _DLPACK_GPU:
        name = _DLPACK_DEVICE_NAMES.get(device_type, "device type %d" % device_type)
        raise TypeError("%s: %s is a %s array (DLPack); elementwise works on CUDA device memory: move it "
                        "to the GPU first" % (what, type(obj).__name__, name))
    return device_type, device_id


def _dlpack_export(obj: Any, stream: int) -> Any:
    """obj.__dlpack__ for a consumer on ``stream``: the producer makes the data ready on that stream.
    The newest form of the call the producer takes: max_version (1.x, versioned capsules) and copy=False
    (refuse rather than copy), then the plain 2021 form."""
    # DLPack's stream values: 1 is the legacy default stream, which the library's NULL stream is; 0 is
    # forbidden by the protocol.
    protocol_stream = 1 if stream == 0 else stream
    attempts = ({"max_version": (1, 0), "copy": False}, {"max_version": (1, 0)}, {})
    for number, extra in enumerate(attempts):
        try:
            return obj.__dlpack__(stream=protocol_stream, **extra)
        except TypeError:
            if number == len(attempts) - 1:
                raise


class _Operand:
    """One array as the library needs it: pointer, shape, strides in elements, dtype, stream."""
    __slots__ = ("what", "obj", "pointer", "shape", "strides", "count", "dtype", "stream", "is_torch",
                 "device", "read_only", "writable", "requested", "_pending", "_capsule")

    def __init__(self, obj: Array, what: str, dtype: DTypeLike = None, writable: bool = False) -> None:
        self.what = what
        self.obj = obj
        self.writable = writable
        self.requested = None if dtype is None else _as_dtype(dtype)
        self.stream = None
        self._pending = False
        self._capsule = None
        torch = sys.modules.get("torch")
        self.is_torch = torch is not None and isinstance(obj, torch.Tensor)
        self.device = obj.device if self.is_torch else None
        cai = _interface(obj, what)
        if cai is not None:
            self._read_interface(cai)
        elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            _dlpack_device(obj, what)
            self._pending = True  # read once the stream is known: __dlpack__ takes the consumer's stream
        else:
            raise TypeError("%s: %s has neither __cuda_array_interface__ nor __dlpack__ (is it a GPU array?)"
                            % (what, type(obj).__name__))

    def _set_dtype(self, found: Optional[DType], itemsize: int, described: str) -> None:
        if self.requested is not None:
            self.dtype = self.requested
        elif found is None:
            raise TypeError("%s: %s has no libelementwise dtype; if it holds bfloat16 or float8 data, say "
                            "which with dtype=" % (self.what, described))
        else:
            self.dtype = found
        if _SIZES[self.dtype] != itemsize:
            raise TypeError("%s: dtype %s has %d-byte elements but the array's %s has %d" % (
                self.what, self.dtype.name, _SIZES[self.dtype], described, itemsize))

    def _set_layout(self, shape: Sequence[int], strides: Optional[Sequence[int]]) -> None:
        self.shape = tuple(int(extent) for extent in shape)
        self.count = math.prod(self.shape)
        self.strides = _contiguous_strides(self.shape) if strides is None else tuple(int(s) for s in strides)
        if self.writable and self.read_only:
            raise ValueError("%s: the output array is read-only" % self.what)

    def _read_interface(self, cai: dict) -> None:
        typestr = cai["typestr"]
        parsed = re.match(r"[<|=]([a-zA-Z])([0-9]+)$", typestr)
        if parsed is None:
            raise TypeError("%s: typestr %r is not a little-endian element type" % (self.what, typestr))
        itemsize = int(parsed.group(2))
        self._set_dtype(_named_dtype(self.obj) or _DTYPE_BY_TYPESTR.get(typestr[1:]), itemsize,
                        "typestr %r" % typestr)
        if cai.get("mask") is not None:
            raise ValueError("%s: masked arrays are not supported" % self.what)
        byte_strides = cai.get("strides")
        strides = None
        if byte_strides is not None:
            # An extent-1 dimension's stride addresses nothing, so any value is allowed there.
            if any(int(stride) % itemsize for stride, extent in zip(byte_strides, cai["shape"]) if extent > 1):
                raise ValueError("%s: strides %s (bytes) are not multiples of the %d-byte element"
                                 % (self.what, tuple(byte_strides), itemsize))
            strides = [int(stride) // itemsize for stride in byte_strides]
        pointer, self.read_only = cai["data"]
        self._set_layout(cai["shape"], strides)
        self.pointer = int(pointer) if self.count else None
        self.stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
        if self.stream == 0:
            raise ValueError("%s: __cuda_array_interface__ gives stream 0, which the interface forbids "
                             "(it would be ambiguous)" % self.what)

    def materialize(self, stream: int) -> None:
        """For a DLPack producer: export on the consumer's ``stream`` and read the tensor it describes.
        The capsule is kept, and not consumed, for as long as this operand lives: its destructor, the
        producer's, releases the export afterwards."""
        if not self._pending:
            return
        capsule = _dlpack_export(self.obj, stream)
        if _capsule_is_valid(capsule, b"dltensor_versioned"):
            managed = _DLManagedTensorVersioned.from_address(_capsule_pointer(capsule, b"dltensor_versioned"))
            if managed.major != 1:
                raise TypeError("%s: DLPack version %d.%d is not understood (1.x is)"
                                % (self.what, managed.major, managed.minor))
            self.read_only = bool(managed.flags & _DLPACK_READ_ONLY)
            tensor = managed.dl_tensor
        elif _capsule_is_valid(capsule, b"dltensor"):
            tensor = _DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor")).dl_tensor
            self.read_only = False
        else:
            raise TypeError("%s: __dlpack__ returned %r, not an unconsumed DLPack capsule"
                            % (self.what, type(capsule).__name__))
        self._capsule = capsule
        self._pending = False
        if tensor.device.device_type not in _DLPACK_GPU:
            raise TypeError("%s: __dlpack__ exported %s memory, not CUDA device memory" % (
                self.what, _DLPACK_DEVICE_NAMES.get(tensor.device.device_type, tensor.device.device_type)))
        code, bits, lanes = tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes
        described = "DLPack dtype (code %d, %d bits, %d lanes)" % (code, bits, lanes)
        if lanes != 1 or bits % 8:
            raise TypeError("%s: %s is not a scalar element type" % (self.what, described))
        self._set_dtype(_DTYPE_BY_DLPACK.get((code, bits)), bits // 8, described)
        ndim = tensor.ndim
        shape = [tensor.shape[i] for i in range(ndim)]
        strides = [tensor.strides[i] for i in range(ndim)] if tensor.strides else None
        self._set_layout(shape, strides)
        self.pointer = (tensor.data or 0) + tensor.byte_offset if self.count else None


def _contiguous_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _stream_handle(stream: StreamLike) -> int:
    """A cudaStream_t value (int) from an int or a stream object of CuPy, PyTorch, Numba or cuda.core."""
    if stream is None:
        return 0
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    if hasattr(stream, "__cuda_stream__"):  # the CUDA stream protocol: (version, handle)
        return int(stream.__cuda_stream__()[1])
    for attribute in ("cuda_stream", "ptr", "handle"):  # PyTorch, CuPy, Numba
        if hasattr(stream, attribute):
            value = getattr(stream, attribute)
            value = getattr(value, "value", value)  # ctypes.c_void_p
            return int(value or 0)
    raise TypeError("stream: %r is not an int or a known CUDA stream object" % (stream,))


def _resolve_stream(stream: StreamLike, operands: Sequence[_Operand]) -> int:
    """The stream to queue on: stream= if given, else the one the arrays' interfaces name (CAI v3:
    1 = legacy default, 2 = per-thread default, other ints = cudaStream_t), else for PyTorch tensors
    torch's current stream, else the default stream (0). DLPack producers are then asked for their
    data on that stream."""
    if stream is not None:
        return _stream_handle(stream)
    named = {op.stream for op in operands if op.stream is not None}
    if len(named) > 1:
        raise ValueError("the arrays name different streams %s in __cuda_array_interface__; "
                         "synchronize them and pass stream= explicitly" % sorted(named))
    if named:
        return named.pop()
    torch_operand = next((op for op in operands if op.is_torch), None)
    if torch_operand is not None:
        import torch
        return int(torch.cuda.current_stream(torch_operand.device).cuda_stream)
    return 0


def _prepare(stream: StreamLike, operands: Sequence[_Operand]) -> int:
    """Pick the stream, then read the DLPack operands on it."""
    resolved = _resolve_stream(stream, operands)
    for operand in operands:
        operand.materialize(resolved)
    return resolved


def _same_dtype(out: _Operand, inputs: Sequence[_Operand]) -> None:
    for operand in inputs:
        if operand.dtype != out.dtype:
            raise TypeError("%s is %s but out is %s; convert with cast() first (or give dtype=)"
                            % (operand.what, operand.dtype.name, out.dtype.name))


# ---- shapes: broadcasting, the output's layout, merging dimensions ----

def _broadcast_shape(operands: Sequence[_Operand]) -> Tuple[int, ...]:
    """NumPy's broadcast of the operands' shapes."""
    ndim = max(len(operand.shape) for operand in operands)
    shape = [1] * ndim
    for operand in operands:
        for axis, extent in enumerate(operand.shape, ndim - len(operand.shape)):
            if extent != 1:
                if shape[axis] not in (1, extent):
                    raise ValueError("shapes %s do not broadcast together (NumPy's rules)"
                                     % ", ".join("%s %s" % (op.what, op.shape) for op in operands))
                shape[axis] = extent
    return tuple(shape)


def _broadcast_strides(operand: _Operand, shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """The operand's strides over ``shape`` (the output's): 0 along broadcast dimensions."""
    if len(operand.shape) > len(shape):
        raise ValueError("%s has shape %s, more dimensions than out's %s" % (operand.what, operand.shape, shape))
    lead = len(shape) - len(operand.shape)
    strides = [0] * lead
    for axis, (extent, stride) in enumerate(zip(operand.shape, operand.strides)):
        if extent == shape[lead + axis]:
            strides.append(stride if extent != 1 else 0)
        elif extent == 1:
            strides.append(0)
        else:
            raise ValueError("%s has shape %s, which does not broadcast to out's shape %s"
                             % (operand.what, operand.shape, shape))
    return tuple(strides)


def _check_output_layout(out: _Operand) -> None:
    """Refuse an output with repeated elements: broadcast (stride 0) or overlapping itself. Sorted by
    stride, each dimension must step past everything the smaller ones reach (the test is exact for
    every layout PyTorch, NumPy and CuPy make; a rare exotic one it cannot prove is refused)."""
    dims = [(abs(stride), extent, axis) for axis, (extent, stride) in enumerate(zip(out.shape, out.strides))
            if extent > 1]
    for stride, extent, axis in dims:
        if stride == 0:
            raise ValueError("out is broadcast (stride 0 along dimension %d of shape %s): its elements "
                             "would be written more than once; pass an out with distinct elements"
                             % (axis, out.shape))
    reach = 0
    for stride, extent, axis in sorted(dims):
        if stride <= reach:
            raise ValueError("out overlaps itself (shape %s, strides %s in elements): its elements would "
                             "be written more than once; pass an out with distinct elements"
                             % (out.shape, out.strides))
        reach += stride * (extent - 1)


def _merge_dimensions(shape: Sequence[int], strides: Sequence[Sequence[int]]):
    """Drop extent-1 dimensions and merge neighbours that are contiguous in every operand: the same
    elements, in fewer dimensions (a C-contiguous call ends with one)."""
    kept = [axis for axis, extent in enumerate(shape) if extent != 1]
    new_shape = [shape[axis] for axis in kept]
    new_strides = [[s[axis] for axis in kept] for s in strides]
    axis = len(new_shape) - 1
    while axis > 0:
        if all(s[axis - 1] == s[axis] * new_shape[axis] for s in new_strides):
            new_shape[axis - 1] *= new_shape[axis]
            del new_shape[axis]
            for s in new_strides:
                s[axis - 1] = s[axis]
                del s[axis]
        axis -= 1
    return new_shape, new_strides


class _Layout:
    """How a call reaches the library: flat (count elements, contiguous) or strided (shape, strides)."""
    __slots__ = ("count", "shape", "strides")

    def __init__(self, out: _Operand, inputs: Sequence[_Operand]) -> None:
        _check_output_layout(out)
        strides = [out.strides] + [_broadcast_strides(operand, out.shape) for operand in inputs]
        self.count = out.count
        shape, merged = _merge_dimensions(out.shape, strides)
        if self.count == 0 or (len(shape) <= 1 and all(s == [1] * len(shape) for s in merged)):
            self.shape = self.strides = None  # the flat call
            return
        if len(shape) > MAX_DIMS:
            raise ValueError("shape %s needs %d dimensions after merging the contiguous ones; the library "
                             "takes at most %d" % (out.shape, len(shape), MAX_DIMS))
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.strides = [(ctypes.c_int64 * len(s))(*s) for s in merged]

    @property
    def flat(self) -> bool:
        return self.shape is None

    @property
    def ndim(self) -> int:
        return len(self.shape)


def _is_contiguous(operand: _Operand) -> bool:
    """C-contiguous, extent-1 dimensions aside (their strides address nothing)."""
    expected = 1
    for extent, stride in zip(reversed(operand.shape), reversed(operand.strides)):
        if extent == 0:
            return True
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


# ---- outputs made for out=None ----

def _framework_dtype(module: Any, dtype: DType, framework: str) -> Any:
    value = getattr(module, _FRAMEWORK_NAME[dtype], None)
    if value is None:
        raise TypeError("out=None: %s has no %s dtype to allocate the output with; pass out"
                        % (framework, dtype.name))
    return value


def _allocate(like: Any, shape: Tuple[int, ...], dtype: Optional[DType]) -> Any:
    """An uninitialised array of ``shape`` on ``like``'s device, made by ``like``'s own framework:
    ``empty_like`` when the shape is like's (keeping its memory layout), else ``empty``; of like's own
    dtype when ``dtype`` is None."""
    module = type(like).__module__.split(".")[0]
    same = tuple(getattr(like, "shape", ())) == shape
    if module == "torch":
        import torch
        target = like.dtype if dtype is None else _framework_dtype(torch, dtype, "PyTorch")
        if same:
            return torch.empty_like(like, dtype=target)
        return torch.empty(shape, dtype=target, device=like.device)
    if module == "cupy":
        import cupy
        target = like.dtype if dtype is None else _framework_dtype(cupy, dtype, "CuPy")
        with like.device:
            return cupy.empty_like(like, dtype=target) if same else cupy.empty(shape, dtype=target)
    if module == "numba":
        import numba.cuda
        import numpy
        target = like.dtype if dtype is None else _framework_dtype(numpy, dtype, "NumPy")
        return numba.cuda.device_array(shape, dtype=target)
    raise TypeError("out=None: cannot allocate an output like a %s.%s (PyTorch, CuPy and Numba arrays "
                    "can be); pass out" % (type(like).__module__, type(like).__name__))


def _output(out: Optional[Array], inputs: Sequence[_Operand], dtype: Optional[DType],
            allocate_as: Optional[DType], what: str = "out") -> Tuple[Array, _Operand]:
    """out and its operand (read as ``dtype`` when given). out None: allocated like the first input,
    of the inputs' broadcast shape and of dtype ``allocate_as`` (None: the input's own)."""
    if out is None:
        out = _allocate(inputs[0].obj, _broadcast_shape(inputs), allocate_as)
    return out, _Operand(out, what, dtype, writable=True)


# ---- the calls ----

# The arguments between the handle and the element count, by call family, from the output's and the
# input's dtype (and the op or alpha): the C signatures' order.
def _head_op(op: int) -> Any:
    return lambda out_dtype, in_dtype: [op, out_dtype]


def _head_cast(out_dtype: DType, in_dtype: DType) -> List[Any]:
    return [out_dtype, in_dtype]


def _head_alpha(alpha: float) -> Any:
    return lambda out_dtype, in_dtype: [out_dtype, alpha]


_Self = TypeVar("_Self", bound="_Closing")


class _Closing:
    # What Handle and Kernel share: close() is idempotent, and ``with`` and the garbage collector call it.
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing sensible to do
            pass


class Handle(_Closing):
    """A libelementwise handle for one GPU (ew_handle_t). Create once and reuse; thread-safe.

    Raises ElementwiseError (status NO_DEVICE) when no GPU or driver is present. The module-level
    functions use one shared handle per device (:func:`default_handle`); make your own for control:
    ``with ew.Handle(1) as h: h.add(out, a, b)``.
    """

    def __init__(self, device: int = 0) -> None:
        raw = _c_handle()
        _check(_lib.ew_handle_create(int(device), ctypes.byref(raw)), "ew_handle_create")
        self._raw: Optional[ctypes.c_void_p] = raw
        self._owned = True
        self.device = int(device)

    @classmethod
    def _from_raw(cls, raw: Optional[int], device: int = 0) -> "Handle":
        # For tests: wrap a raw ew_handle_t without creating one (NULL reaches the library's
        # INVALID_HANDLE path with no GPU). close() forgets it without destroying it.
        handle = cls.__new__(cls)
        handle._raw = _c_handle(raw)
        handle._owned = False
        handle.device = device
        return handle

    def _live(self) -> ctypes.c_void_p:
        if self._raw is None:
            raise ValueError("the handle is closed")
        return self._raw

    def _get_int(self, function: str) -> int:
        value = ctypes.c_int()
        _check(getattr(_lib, function)(self._live(), ctypes.byref(value)), function)
        return value.value

    @property
    def sm_count(self) -> int:
        """Multiprocessors of the device, as cached by the handle."""
        return self._get_int("ew_handle_get_sm_count")

    @property
    def max_threads_per_sm(self) -> int:
        """Resident threads per multiprocessor, as cached by the handle."""
        return self._get_int("ew_handle_get_max_threads_per_sm")

    def close(self) -> None:
        """Destroy the handle (queued work is not waited for). Idempotent."""
        raw, self._raw = getattr(self, "_raw", None), None
        if raw is not None and getattr(self, "_owned", False) and _lib is not None:
            _check(_lib.ew_handle_destroy(raw), "ew_handle_destroy")

    def __repr__(self) -> str:
        return "<elementwise.Handle device=%d%s>" % (self.device, " closed" if self._raw is None else "")

    # One call: read the inputs, make out if None, pick the stream and read DLPack operands on it,
    # check dtypes and shapes, then the flat call when every operand is contiguous over one shape,
    # else the strided one. Errors the library finds (alignment, overlap between operands, alpha,
    # device) come back as ElementwiseError.
    def _call(self, family: str, head: Any, out: Optional[Array], inputs: Sequence[Tuple[Array, str]],
              out_dtype: DTypeLike, in_dtype: DTypeLike, allocate_as: Optional[DType],
              stream: StreamLike) -> Array:
        live = self._live()
        operands = [_Operand(obj, what, in_dtype) for obj, what in inputs]
        if out is None:
            # A DLPack input's shape is known once it is read, on the stream the call then keeps.
            stream = _prepare(stream, operands)
        out, out_ = _output(out, operands, out_dtype, allocate_as)
        chosen = _prepare(stream, [out_] + operands)
        if family != "cast":
            _same_dtype(out_, operands)
        layout = _Layout(out_, operands)
        args = head(out_.dtype, operands[0].dtype)
        if layout.flat:
            name = "ew_" + family
            args += [layout.count, out_.pointer] + [operand.pointer for operand in operands]
        else:
            name = "ew_%s_strided" % family
            args += [layout.ndim, layout.shape]
            for operand, strides in zip([out_] + operands, layout.strides):
                args += [operand.pointer, strides]
        _check(_function(name)(live, *args, chosen), name)
        return out

    def unary(self, op: Union[Op, int], out: Optional[Array], x: Array, *, dtype: DTypeLike = None,
              stream: StreamLike = None) -> Array:
        """out = op(x) for a unary op (Op.RELU), x broadcast to out's shape (NumPy's rules).
        out None: allocated like x. Returns out."""
        return self._call("unary", _head_op(int(op)), out, [(x, "x")], dtype, dtype, None, stream)

    def binary(self, op: Union[Op, int], out: Optional[Array], a: Array, b: Array, *,
               dtype: DTypeLike = None, stream: StreamLike = None) -> Array:
        """out = op(a, b) for a binary op (Op.ADD, Op.MUL), a and b broadcast to out's shape (NumPy's
        rules). out None: allocated like a, of the broadcast shape. Returns out."""
        return self._call("binary", _head_op(int(op)), out, [(a, "a"), (b, "b")], dtype, dtype, None, stream)

    def add(self, out: Optional[Array], a: Array, b: Array, *, dtype: DTypeLike = None,
            stream: StreamLike = None) -> Array:
        """out = a + b (integers wrap; bool: OR). See :meth:`binary`."""
        return self.binary(Op.ADD, out, a, b, dtype=dtype, stream=stream)

    def mul(self, out: Optional[Array], a: Array, b: Array, *, dtype: DTypeLike = None,
            stream: StreamLike = None) -> Array:
        """out = a * b (integers wrap; bool: AND). See :meth:`binary`."""
        return self.binary(Op.MUL, out, a, b, dtype=dtype, stream=stream)

    def relu(self, out: Optional[Array], x: Array, *, dtype: DTypeLike = None,
             stream: StreamLike = None) -> Array:
        """out = max(x, 0); NaN kept, relu(-0.0) = +0.0. See :meth:`unary`."""
        return self.unary(Op.RELU, out, x, dtype=dtype, stream=stream)

    def cast(self, out: Optional[Array], x: Array, *, out_dtype: DTypeLike = None,
             in_dtype: DTypeLike = None, stream: StreamLike = None) -> Array:
        """out = x converted to out's dtype (any of the 144 pairs), x broadcast to out's shape.
        out None: allocated like x, of dtype ``out_dtype``, which is then required. Returns out."""
        target = None if out_dtype is None else _as_dtype(out_dtype)
        if out is None and target is None:
            raise TypeError("cast with out=None needs out_dtype= (the dtype to convert to)")
        return self._call("cast", _head_cast, out, [(x, "x")], target, in_dtype, target, stream)

    def scale_add(self, out: Optional[Array], alpha: float, a: Array, b: Array, *, dtype: DTypeLike = None,
                  stream: StreamLike = None) -> Array:
        """out = alpha * a + b (floats: one fused multiply-add; integer dtypes: integral alpha), a and b
        broadcast to out's shape. out None: allocated like a. Returns out."""
        return self._call("scale_add", _head_alpha(float(alpha)), out, [(a, "a"), (b, "b")], dtype, dtype,
                          None, stream)

    # Lists: entry i is exactly the flat call on outs[i] and the inputs' i-th arrays, all in one launch.
    def _batched(self, family: str, head: Any, outs: Optional[Sequence[Optional[Array]]],
                 lists: Sequence[Tuple[Sequence[Array], str]], out_dtype: DTypeLike, in_dtype: DTypeLike,
                 allocate_as: Optional[DType], stream: StreamLike) -> List[Array]:
        live = self._live()
        count = len(lists[0][0])
        for items, name in list(lists[1:]) + ([] if outs is None else [(outs, "outs")]):
            if len(items) != count:
                raise ValueError("%s has %d entries but %s has %d" % (name, len(items), lists[0][1], count))
        entries = [[_Operand(items[i], "%s[%d]" % (name, i), in_dtype) for items, name in lists]
                   for i in range(count)]
        inputs = [operand for entry in entries for operand in entry]
        if outs is None or any(given is None for given in outs):
            stream = _prepare(stream, inputs)
        results, out_operands = [], []
        for i, entry in enumerate(entries):
            given = None if outs is None else outs[i]
            result, out_ = _output(given, entry, out_dtype, allocate_as, "outs[%d]" % i)
            results.append(result)
            out_operands.append(out_)
        chosen = _prepare(stream, out_operands + inputs)
        for out_, entry in zip(out_operands, entries):
            for operand in [out_] + entry:
                if operand.shape != out_.shape:
                    raise ValueError("%s has shape %s but %s has %s; list entries are not broadcast"
                                     % (operand.what, operand.shape, out_.what, out_.shape))
                if not _is_contiguous(operand):
                    raise ValueError("%s is not contiguous (strides %s in elements); the list calls take "
                                     "contiguous arrays: make a call per strided view instead"
                                     % (operand.what, operand.strides))
            if family != "cast":
                _same_dtype(out_, entry)
        if count:
            dtypes = out_operands[0].dtype, entries[0][0].dtype
        else:  # nothing runs; the library still checks the handle
            first = DType.F32 if out_dtype is None else _as_dtype(out_dtype)
            dtypes = first, first if in_dtype is None else _as_dtype(in_dtype)
        for operand in out_operands + inputs:
            expected = dtypes[0] if operand in out_operands else dtypes[1]
            if operand.dtype != expected:
                raise TypeError("%s is %s but the first entry's is %s; one list call takes one dtype%s"
                                % (operand.what, operand.dtype.name, expected.name,
                                   " pair" if family == "cast" else ""))
        pointers = ctypes.c_void_p * count
        args = head(*dtypes) + [count, (ctypes.c_int64 * count)(*[out_.count for out_ in out_operands]),
                                pointers(*[out_.pointer for out_ in out_operands])]
        for k in range(len(lists)):
            args.append(pointers(*[entry[k].pointer for entry in entries]))
        name = "ew_%s_batched" % family
        _check(_function(name)(live, *args, chosen), name)
        return results if outs is None else list(outs)

    def unary_batched(self, op: Union[Op, int], outs: Optional[Sequence[Array]], xs: Sequence[Array], *,
                      dtype: DTypeLike = None, stream: StreamLike = None) -> List[Array]:
        """outs[i] = op(xs[i]) for every i, in one launch (ew_unary_batched). Entries are contiguous,
        out and input of one shape, and all of one dtype. outs None: allocated like each x. Returns
        the outputs as a list."""
        return self._batched("unary", _head_op(int(op)), outs, [(xs, "xs")], dtype, dtype, None, stream)

    def binary_batched(self, op: Union[Op, int], outs: Optional[Sequence[Array]], as_: Sequence[Array],
                       bs: Sequence[Array], *, dtype: DTypeLike = None, stream: StreamLike = None) -> List[Array]:
        """outs[i] = op(as_[i], bs[i]) for every i, in one launch (ew_binary_batched). Entries are
        contiguous, of one shape each (no broadcasting), all of one dtype. outs None: allocated like
        each a. Returns the outputs as a list."""
        return self._batched("binary", _head_op(int(op)), outs, [(as_, "as_"), (bs, "bs")], dtype, dtype, None,
                             stream)

    def add_batched(self, outs: Optional[Sequence[Array]], as_: Sequence[Array], bs: Sequence[Array], *,
                    dtype: DTypeLike = None, stream: StreamLike = None) -> List[Array]:
        """outs[i] = as_[i] + bs[i]. See :meth:`binary_batched`."""
        return self.binary_batched(Op.ADD, outs, as_, bs, dtype=dtype, stream=stream)

    def mul_batched(self, outs: Optional[Sequence[Array]], as_: Sequence[Array], bs: Sequence[Array], *,
                    dtype: DTypeLike = None, stream: StreamLike = None) -> List[Array]:
        """outs[i] = as_[i] * bs[i]. See :meth:`binary_batched`."""
        return self.binary_batched(Op.MUL, outs, as_, bs, dtype=dtype, stream=stream)

    def relu_batched(self, outs: Optional[Sequence[Array]], xs: Sequence[Array], *, dtype: DTypeLike = None,
                     stream: StreamLike = None) -> List[Array]:
        """outs[i] = max(xs[i], 0). See :meth:`unary_batched`."""
        return self.unary_batched(Op.RELU, outs, xs, dtype=dtype, stream=stream)

    def cast_batched(self, outs: Optional[Sequence[Array]], xs: Sequence[Array], *, out_dtype: DTypeLike = None,
                     in_dtype: DTypeLike = None, stream: StreamLike = None) -> List[Array]:
        """outs[i] = xs[i] converted, in one launch (ew_cast_batched), one dtype pair for the list.
        outs None: allocated like each x, of dtype ``out_dtype``, which is then required."""
        target = None if out_dtype is None else _as_dtype(out_dtype)
        if outs is None and target is None:
            raise TypeError("cast_batched with outs=None needs out_dtype= (the dtype to convert to)")
        return self._batched("cast", _head_cast, outs, [(xs, "xs")], target, in_dtype, target, stream)

    def scale_add_batched(self, outs: Optional[Sequence[Array]], alpha: float, as_: Sequence[Array],
                          bs: Sequence[Array], *, dtype: DTypeLike = None, stream: StreamLike = None) -> List[Array]:
        """outs[i] = alpha * as_[i] + bs[i], one alpha for the list. See :meth:`binary_batched`."""
        return self._batched("scale_add", _head_alpha(float(alpha)), outs, [(as_, "as_"), (bs, "bs")], dtype,
                             dtype, None, stream)


_default_handles = {}
_default_lock = threading.Lock()


def default_handle(device: int = 0) -> Handle:
    """The module's shared Handle for ``device``, created on first use."""
    device = int(device)
    with _default_lock:
        handle = _default_handles.get(device)
        if handle is None:
            handle = _default_handles[device] = Handle(device)
        return handle


def _device_of(array: Any) -> int:
    """The CUDA device ordinal of an array: PyTorch's and CuPy's say, a DLPack producer's
    __dlpack_device__ says; 0 when the object does not say."""
    device = getattr(array, "device", None)
    for attribute in ("index", "id"):  # torch.device.index, cupy.cuda.Device.id
        value = getattr(device, attribute, None)
        if isinstance(value, int):
            return value
    if hasattr(array, "__dlpack_device__") and not hasattr(array, "__cuda_array_interface__"):
        try:
            return int(array.__dlpack_device__()[1])
        except Exception:  # the call itself reports a bad array
            pass
    return 0


def _handle_for(handle: Optional[Handle], *arrays: Any) -> Handle:
    """``handle``, else the default handle of the first given array's device (out's, when given)."""
    if handle is not None:
        return handle
    for array in arrays:
        if isinstance(array, (list, tuple)):
            array = next((item for item in array if item is not None), None)
        if array is not None:
            return default_handle(_device_of(array))
    return default_handle(0)


def unary(op: Union[Op, int], out: Optional[Array], x: Array, *, dtype: DTypeLike = None,
          stream: StreamLike = None, handle: Optional[Handle] = None) -> Array:
    """Handle.unary on the default handle of out's device (x's when out is None), or ``handle``."""
    return _handle_for(handle, out, x).unary(op, out, x, dtype=dtype, stream=stream)


def binary(op: Union[Op, int], out: Optional[Array], a: Array, b: Array, *, dtype: DTypeLike = None,
           stream: StreamLike = None, handle: Optional[Handle] = None) -> Array:
    """Handle.binary on the default handle of out's device (a's when out is None), or ``handle``."""
    return _handle_for(handle, out, a).binary(op, out, a, b, dtype=dtype, stream=stream)


def add(out: Optional[Array], a: Array, b: Array, *, dtype: DTypeLike = None, stream: StreamLike = None,
        handle: Optional[Handle] = None) -> Array:
    """out = a + b, broadcast as NumPy does; out None: allocated and returned. See Handle.binary."""
    return _handle_for(handle, out, a).add(out, a, b, dtype=dtype, stream=stream)


def mul(out: Optional[Array], a: Array, b: Array, *, dtype: DTypeLike = None, stream: StreamLike = None,
        handle: Optional[Handle] = None) -> Array:
    """out = a * b, broadcast as NumPy does; out None: allocated and returned. See Handle.binary."""
    return _handle_for(handle, out, a).mul(out, a, b, dtype=dtype, stream=stream)


def relu(out: Optional[Array], x: Array, *, dtype: DTypeLike = None, stream: StreamLike = None,
         handle: Optional[Handle] = None) -> Array:
    """out = max(x, 0); out None: allocated and returned. See Handle.relu."""
    return _handle_for(handle, out, x).relu(out, x, dtype=dtype, stream=stream)


def cast(out: Optional[Array], x: Array, *, out_dtype: DTypeLike = None, in_dtype: DTypeLike = None,
         stream: StreamLike = None, handle: Optional[Handle] = None) -> Array:
    """out = x converted; out None: allocated as out_dtype and returned. See Handle.cast."""
    return _handle_for(handle, out, x).cast(out, x, out_dtype=out_dtype, in_dtype=in_dtype, stream=stream)


def scale_add(out: Optional[Array], alpha: float, a: Array, b: Array, *, dtype: DTypeLike = None,
              stream: StreamLike = None, handle: Optional[Handle] = None) -> Array:
    """out = alpha * a + b; out None: allocated and returned. See Handle.scale_add."""
    return _handle_for(handle, out, a).scale_add(out, alpha, a, b, dtype=dtype, stream=stream)


def unary_batched(op: Union[Op, int], outs: Optional[Sequence[Array]], xs: Sequence[Array], *,
                  dtype: DTypeLike = None, stream: StreamLike = None, handle: Optional[Handle] = None) -> List[Array]:
    """Handle.unary_batched on the default handle of the first entry's device, or ``handle``."""
    return _handle_for(handle, outs, xs).unary_batched(op, outs, xs, dtype=dtype, stream=stream)


def binary_batched(op: Union[Op, int], outs: Optional[Sequence[Array]], as_: Sequence[Array],
                   bs: Sequence[Array], *, dtype: DTypeLike = None, stream: StreamLike = None,
                   handle: Optional[Handle] = None) -> List[Array]:
    """Handle.binary_batched on the default handle of the first entry's device, or ``handle``."""
    return _handle_for(handle, outs, as_).binary_batched(op, outs, as_, bs, dtype=dtype, stream=stream)


def add_batched(outs: Optional[Sequence[Array]], as_: Sequence[Array], bs: Sequence[Array], *,
                dtype: DTypeLike = None, stream: StreamLike = None, handle: Optional[Handle] = None) -> List[Array]:
    """outs[i] = as_[i] + bs[i] in one launch. See Handle.binary_batched."""
    return _handle_for(handle, outs, as_).add_batched(outs, as_, bs, dtype=dtype, stream=stream)


def mul_batched(outs: Optional[Sequence[Array]], as_: Sequence[Array], bs: Sequence[Array], *,
                dtype: DTypeLike = None, stream: StreamLike = None, handle: Optional[Handle] = None) -> List[Array]:
    """outs[i] = as_[i] * bs[i] in one launch. See Handle.binary_batched."""
    return _handle_for(handle, outs, as_).mul_batched(outs, as_, bs, dtype=dtype, stream=stream)


def relu_batched(outs: Optional[Sequence[Array]], xs: Sequence[Array], *, dtype: DTypeLike = None,
                 stream: StreamLike = None, handle: Optional[Handle] = None) -> List[Array]:
    """outs[i] = max(xs[i], 0) in one launch. See Handle.unary_batched."""
    return _handle_for(handle, outs, xs).relu_batched(outs, xs, dtype=dtype, stream=stream)


def cast_batched(outs: Optional[Sequence[Array]], xs: Sequence[Array], *, out_dtype: DTypeLike = None,
                 in_dtype: DTypeLike = None, stream: StreamLike = None,
                 handle: Optional[Handle] = None) -> List[Array]:
    """outs[i] = xs[i] converted in one launch. See Handle.cast_batched."""
    return _handle_for(handle, outs, xs).cast_batched(outs, xs, out_dtype=out_dtype, in_dtype=in_dtype,
                                                      stream=stream)


def scale_add_batched(outs: Optional[Sequence[Array]], alpha: float, as_: Sequence[Array], bs: Sequence[Array],
                      *, dtype: DTypeLike = None, stream: StreamLike = None,
                      handle: Optional[Handle] = None) -> List[Array]:
    """outs[i] = alpha * as_[i] + bs[i] in one launch. See Handle.scale_add_batched."""
    return _handle_for(handle, outs, as_).scale_add_batched(outs, alpha, as_, bs, dtype=dtype, stream=stream)


# ---- user-defined kernels (libelementwise 1.1) ----

# Bound on first use, not at import: the package must still import against a library without them.
_KERNEL_SIGNATURES = {
    "ew_kernel_create": (_c_int, [_c_handle, ctypes.c_char_p, _c_int, _c_int, ctypes.POINTER(_c_int), _c_int,
                                  ctypes.POINTER(_c_ptr)]),
    "ew_kernel_launch": (_c_int, [_c_ptr, _c_i64, _c_ptr, _c_ptrs, ctypes.POINTER(_c_double), _c_ptr]),
    "ew_kernel_launch_strided": (_c_int, [_c_ptr, _c_int, _c_i64p, _c_ptr, _c_i64p, _c_ptrs, ctypes.POINTER(_c_i64p),
                                          ctypes.POINTER(_c_double), _c_ptr]),
    "ew_kernel_destroy": (_c_int, [_c_ptr]),
}


def _kernel_function(name: str) -> Any:
    """An ew_kernel_* function of the loaded library, its signature set; NotImplementedError when the
    library predates user-defined kernels."""
    try:
        function = getattr(_lib, name)
    except AttributeError:
        raise NotImplementedError("%s (version %d.%d.%d) has no %s; user-defined kernels (Kernel) need "
                                  "libelementwise 1.1 or later" % ((library_path,) + library_version() + (name,))
                                  ) from None
    if getattr(function, "argtypes", None) is None:  # CDLL keeps one function object per name
        function.restype, function.argtypes = _KERNEL_SIGNATURES[name]
    return function


_cuda_driver = None


def _current_device() -> int:
    """The calling thread's current CUDA device as the library sees it (cudaGetDevice): the device of
    the current context, else 0, the runtime's default. 0 as well without a driver."""
    global _cuda_driver
    if _cuda_driver is None:
        try:
            _cuda_driver = ctypes.CDLL("libcuda.so.1")
        except OSError:
            _cuda_driver = False
    if not _cuda_driver:
        return 0
    device = ctypes.c_int()
    # Fails (not initialized, no current context) exactly when the runtime would choose device 0.
    if _cuda_driver.cuCtxGetDevice(ctypes.byref(device)) != 0:
        return 0
    return device.value


class Kernel(_Closing):
    """A user-defined elementwise kernel (ew_kernel_t): ``out[i] = body(in0[i], ..., p0, ...)``.

    ``source`` is the body of a device function: the inputs are ``in0`` ... ``in{n-1}`` of their
    dtypes' device types (``float``, ``__half``, ``__nv_bfloat16``, ``int8_t``, ...), the parameters
    ``double p0`` ... ``p{n_params-1}``; it returns any of those types, converted to ``out_dtype`` as
    :func:`cast` converts. ``ew::add``, ``ew::mul``, ``ew::relu``, ``ew::scale_add(alpha, a, b)`` and
    ``ew::cast<T>(x)`` are the catalogue's own functions, so a chain of them gives the same bits as the
    same chain of calls. The source is code run with your rights: pass only trusted text.

    It is compiled when created (NVRTC, found at run time; compiled kernels are cached in memory and
    on disk) for the device of ``handle``, by default the default handle of the current device, and
    it runs on that device only. Compile errors raise :class:`ElementwiseError` with the compiler's
    first lines. 1 to 4 inputs, 0 to 8 parameters (the library checks). Close it (or use ``with``)
    before closing its handle.

    Calls take ``out`` first, then the inputs: ``k(out, a, b, params=(1.5,))``. As for the other
    calls, the inputs broadcast to out's shape (NumPy's rules) and any operand may be a strided view,
    negative strides included: such calls go through ew_kernel_launch_strided, without copies.
    """

    def __init__(self, source: Union[str, bytes], out_dtype: DTypeLike, in_dtypes: Any, n_params: int = 0, *,
                 handle: Optional[Handle] = None) -> None:
        self._raw: Optional[ctypes.c_void_p] = None
        self._owned = False
        create = _kernel_function("ew_kernel_create")
        if isinstance(source, str):
            encoded = source.encode("utf-8")
        elif isinstance(source, bytes):
            encoded, source = source, source.decode("utf-8", "replace")
        else:
            raise TypeError("source: the kernel's body as a str, not %s" % type(source).__name__)
        if b"\0" in encoded:
            raise ValueError("source: contains a NUL character, where C would end it")
        if isinstance(in_dtypes, (str, bytes, int)) or not hasattr(in_dtypes, "__iter__"):
            in_dtypes = (in_dtypes,)  # one dtype, not a sequence of them
        self._source = source
        self._out_dtype = _as_dtype(out_dtype)
        self._in_dtypes = tuple(_as_dtype(dtype) for dtype in in_dtypes)
        self._n_params = int(n_params)
        # The library requires the handle's device to be current when compiling: by default, the
        # current device's default handle.
        self._handle = default_handle(_current_device()) if handle is None else handle
        raw = _c_ptr()
        count = len(self._in_dtypes)
        status = create(self._handle._live(), encoded, int(self._out_dtype), count,
                        (_c_int * count)(*[int(dtype) for dtype in self._in_dtypes]), self._n_params,
                        ctypes.byref(raw))
        _check(status, "ew_kernel_create")
        self._raw, self._owned = raw, True

    @classmethod
    def _from_raw(cls, raw: Optional[int], out_dtype: DTypeLike, in_dtypes: Sequence[DTypeLike], n_params: int = 0,
                  handle: Optional[Handle] = None, source: str = "") -> "Kernel":
        # For tests: wrap a raw ew_kernel_t without compiling (NULL reaches the library's
        # INVALID_HANDLE path with no GPU). close() forgets it without destroying it.
        kernel = cls.__new__(cls)
        kernel._raw, kernel._owned = _c_ptr(raw), False
        kernel._source, kernel._out_dtype = source, _as_dtype(out_dtype)
        kernel._in_dtypes = tuple(_as_dtype(dtype) for dtype in in_dtypes)
        kernel._n_params = int(n_params)
        kernel._handle = handle if handle is not None else Handle._from_raw(None)
        return kernel

    @property
    def source(self) -> str:
        """The body it was compiled from."""
        return self._source

    @property
    def out_dtype(self) -> DType:
        """The output's dtype."""
        return self._out_dtype

    @property
    def in_dtypes(self) -> Tuple[DType, ...]:
        """The inputs' dtypes, in0 first."""
        return self._in_dtypes

    @property
    def n_inputs(self) -> int:
        """How many inputs a call takes."""
        return len(self._in_dtypes)

    @property
    def n_params(self) -> int:
        """How many parameters (p0 ...) a call takes."""
        return self._n_params

    @property
    def handle(self) -> Handle:
        """The handle it was compiled for; it runs on that handle's device."""
        return self._handle

    def _live(self) -> ctypes.c_void_p:
        if self._raw is None:
            raise ValueError("the kernel is closed")
        return self._raw

    @staticmethod
    def _check_dtype(operand: _Operand, expected: DType) -> None:
        if operand.dtype != expected:
            raise ValueError("%s is %s but the kernel %s %s" % (
                operand.what, operand.dtype.name, "makes" if operand.what == "out" else "takes", expected.name))

    def __call__(self, out: Optional[Array], *inputs: Array, params: Sequence[float] = (),
                 stream: StreamLike = None) -> Array:
        """out[i] = body(inputs[0][i], ..., params) for every index i of out, the inputs broadcast to
        out's shape (NumPy's rules), queued on the stream (resolved as for the other calls: stream=,
        else the arrays' own). Operands contiguous alike over one shape take ew_kernel_launch, any
        other layout (strided views, negative strides, broadcast inputs) ew_kernel_launch_strided; an
        input may be out itself (in place). out None: allocated like the first input, of the inputs'
        broadcast shape and dtype out_dtype. Returns out."""
        if len(inputs) != self.n_inputs:
            raise TypeError("the kernel takes %d inputs, %d given" % (self.n_inputs, len(inputs)))
        params = tuple(float(value) for value in params)
        if len(params) != self._n_params:
            raise TypeError("the kernel takes %d params, %d given" % (self._n_params, len(params)))
        raw = self._live()
        operands = [_Operand(obj, "in%d" % i) for i, obj in enumerate(inputs)]
        if out is None:
            # A DLPack input's shape is known once it is read, on the stream the call then keeps.
            stream = _prepare(stream, operands)
            for operand, expected in zip(operands, self._in_dtypes):
                self._check_dtype(operand, expected)
        out, out_ = _output(out, operands, None, self._out_dtype)
        chosen = _prepare(stream, [out_] + operands)
        for operand, expected in zip(operands, self._in_dtypes):
            self._check_dtype(operand, expected)
        self._check_dtype(out_, self._out_dtype)
        layout = _Layout(out_, operands)
        pointers = (_c_ptr * len(operands))(*[operand.pointer for operand in operands])
        values = (_c_double * len(params))(*params) if params else None
        if layout.flat:
            # n = 0 is still a call, as for the flat ops: the library checks the kernel and takes NULLs.
            launch = _kernel_function("ew_kernel_launch")
            _check(launch(raw, layout.count, out_.pointer, pointers, values, chosen), "ew_kernel_launch")
            return out
        launch = _kernel_function("ew_kernel_launch_strided")
        # The layout's arrays, which these point into, live until the call returns.
        in_strides = (_c_i64p * len(operands))(*[ctypes.cast(strides, _c_i64p) for strides in layout.strides[1:]])
        _check(launch(raw, layout.ndim, layout.shape, out_.pointer, layout.strides[0], pointers, in_strides, values,
                      chosen), "ew_kernel_launch_strided")
        return out

    def close(self) -> None:
        """Destroy the kernel (launches already queued complete). Idempotent. A kernel whose handle
        was closed first is only forgotten: the library destroys kernels before their handle."""
        raw, self._raw = getattr(self, "_raw", None), None
        if raw is None or not getattr(self, "_owned", False) or _lib is None:
            return
        if self._handle._raw is None:
            return
        _check(_kernel_function("ew_kernel_destroy")(raw), "ew_kernel_destroy")

    def __repr__(self) -> str:
        text = " ".join(self._source.split())
        if len(text) > 48:
            text = text[:45] + "..."
        inputs = ", ".join(dtype.name.lower() for dtype in self._in_dtypes)
        return "<elementwise.Kernel (%s; %d param%s) -> %s, device %d%s: %r>" % (
            inputs, self._n_params, "" if self._n_params == 1 else "s", self._out_dtype.name.lower(),
            self._handle.device, " closed" if self._raw is None else "", text)


# ---- PyTorch: torch.compile support registers itself when torch._dynamo loads (_torch_hook.py) ----
from . import _torch_hook  # noqa: E402 -- last: it may import elementwise.torch, which needs the above
_torch_hook.install()
