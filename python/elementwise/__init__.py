# SPDX-License-Identifier: Apache-2.0
"""Python binding of libelementwise: elementwise ops on GPU arrays, without copies.

A thin ctypes layer over the C library (no compiled code). It takes any object exposing
``__cuda_array_interface__`` (CuPy, Numba, PyTorch tensors), reads its pointer, shape, dtype and
stream, and calls the library on the memory in place::

    import torch, elementwise as ew
    a = torch.randn(1 << 20, device="cuda", dtype=torch.float16)
    b = torch.randn_like(a)
    out = torch.empty_like(a)
    ew.add(out, a, b)                    # out = a + b, queued on the tensors' stream
    ew.scale_add(out, 0.5, a, b)         # out = 0.5 * a + b
    ew.cast(out.view(torch.int16), a)    # any of the 144 dtype pairs (here f16 -> i16)

Outputs come first, as in the C API, and are never allocated here: pass an array to write into.
The exact semantics of each op (rounding, NaN, wrap-around) are those of docs/semantics.md.

The library is found through, in order: the ``ELEMENTWISE_LIBRARY`` environment variable (a path
to ``libelementwise.so.1``), a copy next to this file, ``ctypes.util.find_library("elementwise")``
(an installed package), and finally the dynamic loader's own search (``LD_LIBRARY_PATH``).
"""

import ctypes
import ctypes.util
import enum
import math
import os
import re
import sys
import threading

__version__ = "1.0.0"

__all__ = [
    "DType", "Op", "Status", "ElementwiseError", "Handle",
    "add", "mul", "relu", "cast", "scale_add", "unary", "binary",
    "default_handle", "is_supported", "dtype_name", "dtype_size", "library_version", "library_path",
]

_ABI_MAJOR = 1


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

# typestr (kind + size, byte order stripped) -> dtype. bfloat16 and the float8 types have no
# typestr of their own (PyTorch exports bfloat16 as "<V2" and no interface at all for float8):
# they are recognised by the object's dtype name, or given with dtype=.
_DTYPE_BY_TYPESTR = {
    "b1": DType.BOOL, "i1": DType.I8, "u1": DType.U8, "i2": DType.I16, "i4": DType.I32, "i8": DType.I64,
    "f2": DType.F16, "f4": DType.F32, "f8": DType.F64,
}
_SIZES = {DType.BOOL: 1, DType.I8: 1, DType.U8: 1, DType.I16: 2, DType.I32: 4, DType.I64: 8,
          DType.F16: 2, DType.BF16: 2, DType.F32: 4, DType.F64: 8, DType.F8E4M3: 1, DType.F8E5M2: 1}
_NAMED_ONLY = (DType.BF16, DType.F8E4M3, DType.F8E5M2)


class ElementwiseError(RuntimeError):
    """A call into libelementwise failed.

    ``status`` is the :class:`Status`, ``message`` the library's ew_get_last_error_message() text
    (which argument and why, or which CUDA call failed with which CUDA error).
    """

    def __init__(self, status, message, function=None):
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

def _candidates():
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


def _load():
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
for _name, _restype, _argtypes in (
        ("ew_get_version", ctypes.c_uint, []),
        ("ew_handle_create", ctypes.c_int, [ctypes.c_int, ctypes.POINTER(_c_handle)]),
        ("ew_handle_destroy", ctypes.c_int, [_c_handle]),
        ("ew_handle_get_device", ctypes.c_int, [_c_handle, ctypes.POINTER(ctypes.c_int)]),
        ("ew_handle_get_sm_count", ctypes.c_int, [_c_handle, ctypes.POINTER(ctypes.c_int)]),
        ("ew_handle_get_max_threads_per_sm", ctypes.c_int, [_c_handle, ctypes.POINTER(ctypes.c_int)]),
        ("ew_unary", ctypes.c_int, [_c_handle, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
        ("ew_binary", ctypes.c_int, [_c_handle, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                                     ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
        ("ew_cast", ctypes.c_int, [_c_handle, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
        ("ew_scale_add", ctypes.c_int, [_c_handle, ctypes.c_int, ctypes.c_double, ctypes.c_int64,
                                        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
        ("ew_is_supported", ctypes.c_int, [ctypes.c_int, ctypes.c_int, ctypes.c_int]),
        ("ew_status_string", ctypes.c_char_p, [ctypes.c_int]),
        ("ew_dtype_name", ctypes.c_char_p, [ctypes.c_int]),
        ("ew_dtype_size", ctypes.c_size_t, [ctypes.c_int]),
        ("ew_get_last_error_message", ctypes.c_char_p, [])):
    _function = getattr(_lib, _name)
    _function.restype = _restype
    _function.argtypes = _argtypes

if _lib.ew_get_version() // 10000 != _ABI_MAJOR:
    raise ImportError("%s is version %d; this binding needs %d.x" % (
        library_path, _lib.ew_get_version(), _ABI_MAJOR))


def library_version():
    """(major, minor, patch) of the loaded library."""
    version = _lib.ew_get_version()
    return version // 10000, version // 100 % 100, version % 100


def _last_error_message():
    return _lib.ew_get_last_error_message().decode("utf-8", "replace")


def _check(status, function):
    # The message is read right away, on the thread that failed (it is thread-local in the library).
    if status != Status.SUCCESS:
        raise ElementwiseError(status, _last_error_message(), function)


def is_supported(op, out_dtype, in_dtype=None):
    """Whether the catalogue has ``op`` for these dtypes (in_dtype defaults to out_dtype)."""
    out_dtype = _as_dtype(out_dtype)
    in_dtype = out_dtype if in_dtype is None else _as_dtype(in_dtype)
    return bool(_lib.ew_is_supported(int(op), out_dtype, in_dtype))


def dtype_name(dtype):
    """The library's short name of a dtype ("f16", "bf16", ...)."""
    return _lib.ew_dtype_name(int(_as_dtype(dtype))).decode()


def dtype_size(dtype):
    """Bytes per element of a dtype."""
    return int(_lib.ew_dtype_size(int(_as_dtype(dtype))))


# ---- arrays: the CUDA array interface ----

def _as_dtype(value):
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


def _named_dtype(obj):
    """bfloat16 / float8 named by the object's own dtype (torch, ml_dtypes), else None."""
    declared = getattr(obj, "dtype", None)
    if declared is None:
        return None
    try:
        dtype = _as_dtype(declared)
    except (TypeError, ValueError):
        return None
    return dtype if dtype in _NAMED_ONLY else None


def _interface(obj, what):
    try:
        return obj.__cuda_array_interface__
    except AttributeError:
        raise TypeError("%s: %s has no __cuda_array_interface__ (is it a GPU array?)"
                        % (what, type(obj).__name__)) from None
    except (KeyError, TypeError):
        # PyTorch exports no interface for float8 tensors (nor, in old versions, for bfloat16); an
        # integer view of the same memory, with elements of the same size, does.
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor) and _named_dtype(obj) is not None:
            return obj.view(torch.int16 if obj.element_size() == 2 else torch.uint8).__cuda_array_interface__
        raise


class _Operand:
    """What the library needs of one array: pointer, element count, dtype, stream."""
    __slots__ = ("what", "pointer", "shape", "count", "dtype", "stream", "is_torch", "device")

    def __init__(self, obj, what, dtype=None, writable=False):
        cai = _interface(obj, what)
        self.what = what
        self.shape = tuple(int(extent) for extent in cai["shape"])
        self.count = math.prod(self.shape)
        typestr = cai["typestr"]
        parsed = re.match(r"[<|=]([a-zA-Z])([0-9]+)$", typestr)
        if parsed is None:
            raise TypeError("%s: typestr %r is not a little-endian element type" % (what, typestr))
        itemsize = int(parsed.group(2))

        if dtype is not None:
            self.dtype = _as_dtype(dtype)
        else:
            self.dtype = _named_dtype(obj) or _DTYPE_BY_TYPESTR.get(typestr[1:])
            if self.dtype is None:
                raise TypeError("%s: typestr %r has no libelementwise dtype; if it holds bfloat16 or "
                                "float8 data, say which with dtype=" % (what, typestr))
        if _SIZES[self.dtype] != itemsize:
            raise TypeError("%s: dtype %s has %d-byte elements but the array's typestr %r has %d" % (
                what, self.dtype.name, _SIZES[self.dtype], typestr, itemsize))

        strides = cai.get("strides")
        if strides is not None and not _c_contiguous(self.shape, strides, itemsize):
            raise ValueError("%s: the array is not C-contiguous (strides %s); elementwise works on "
                             "contiguous memory and never copies" % (what, tuple(strides)))
        if cai.get("mask") is not None:
            raise ValueError("%s: masked arrays are not supported" % what)
        pointer, read_only = cai["data"]
        if writable and read_only:
            raise ValueError("%s: the output array is read-only" % what)
        self.pointer = int(pointer) if self.count else None

        self.stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
        if self.stream == 0:
            raise ValueError("%s: __cuda_array_interface__ gives stream 0, which the interface forbids "
                             "(it would be ambiguous)" % what)
        torch = sys.modules.get("torch")
        self.is_torch = torch is not None and isinstance(obj, torch.Tensor)
        self.device = obj.device if self.is_torch else None


def _c_contiguous(shape, strides, itemsize):
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(tuple(strides))):
        if extent == 0:
            return True
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


def _stream_handle(stream):
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


def _resolve_stream(stream, operands):
    """The stream to queue on: stream= if given, else the one the arrays' interfaces name (CAI v3:
    1 = legacy default, 2 = per-thread default, other ints = cudaStream_t), else for PyTorch tensors
    torch's current stream, else the default stream (0)."""
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


def _same_shape(out, inputs):
    for operand in inputs:
        if operand.shape != out.shape:
            raise ValueError("%s has shape %s but out has shape %s"
                             % (operand.what, operand.shape, out.shape))


def _same_dtype(out, inputs):
    for operand in inputs:
        if operand.dtype != out.dtype:
            raise TypeError("%s is %s but out is %s; convert with cast() first (or give dtype=)"
                            % (operand.what, operand.dtype.name, out.dtype.name))


# ---- handles and calls ----

class Handle:
    """A libelementwise handle for one GPU (ew_handle_t). Create once and reuse; thread-safe.

    Raises ElementwiseError (status NO_DEVICE) when no GPU or driver is present.
    """

    def __init__(self, device=0):
        raw = _c_handle()
        _check(_lib.ew_handle_create(int(device), ctypes.byref(raw)), "ew_handle_create")
        self._raw = raw
        self._owned = True
        self.device = int(device)

    @classmethod
    def _from_raw(cls, raw, device=0):
        # For tests: wrap a raw ew_handle_t without creating one (NULL reaches the library's
        # INVALID_HANDLE path with no GPU). close() forgets it without destroying it.
        handle = cls.__new__(cls)
        handle._raw = _c_handle(raw)
        handle._owned = False
        handle.device = device
        return handle

    def _live(self):
        if self._raw is None:
            raise ValueError("the handle is closed")
        return self._raw

    def _get_int(self, function):
        value = ctypes.c_int()
        _check(getattr(_lib, function)(self._live(), ctypes.byref(value)), function)
        return value.value

    @property
    def sm_count(self):
        """Multiprocessors of the device, as cached by the handle."""
        return self._get_int("ew_handle_get_sm_count")

    @property
    def max_threads_per_sm(self):
        """Resident threads per multiprocessor, as cached by the handle."""
        return self._get_int("ew_handle_get_max_threads_per_sm")

    def close(self):
        """Destroy the handle (queued work is not waited for). Idempotent."""
        raw, self._raw = getattr(self, "_raw", None), None
        if raw is not None and getattr(self, "_owned", False) and _lib is not None:
            _check(_lib.ew_handle_destroy(raw), "ew_handle_destroy")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing sensible to do
            pass

    def __repr__(self):
        return "<elementwise.Handle device=%d%s>" % (self.device, " closed" if self._raw is None else "")

    # Each call: read the interfaces, check shapes/dtypes, pick the stream, call the library.
    # Errors the library finds (alignment, overlap, alpha, device) come back as ElementwiseError.

    def unary(self, op, out, x, *, dtype=None, stream=None):
        """out = op(x) for a unary op (Op.RELU)."""
        out_ = _Operand(out, "out", dtype, writable=True)
        x_ = _Operand(x, "x", dtype)
        _same_shape(out_, [x_])
        _same_dtype(out_, [x_])
        _check(_lib.ew_unary(self._live(), int(op), out_.dtype, out_.count, out_.pointer, x_.pointer,
                             _resolve_stream(stream, [out_, x_])), "ew_unary")
        return out

    def binary(self, op, out, a, b, *, dtype=None, stream=None):
        """out = op(a, b) for a binary op (Op.ADD, Op.MUL)."""
        out_ = _Operand(out, "out", dtype, writable=True)
        a_, b_ = _Operand(a, "a", dtype), _Operand(b, "b", dtype)
        _same_shape(out_, [a_, b_])
        _same_dtype(out_, [a_, b_])
        _check(_lib.ew_binary(self._live(), int(op), out_.dtype, out_.count, out_.pointer, a_.pointer,
                              b_.pointer, _resolve_stream(stream, [out_, a_, b_])), "ew_binary")
        return out

    def add(self, out, a, b, *, dtype=None, stream=None):
        """out = a + b (integers wrap; bool: OR)."""
        return self.binary(Op.ADD, out, a, b, dtype=dtype, stream=stream)

    def mul(self, out, a, b, *, dtype=None, stream=None):
        """out = a * b (integers wrap; bool: AND)."""
        return self.binary(Op.MUL, out, a, b, dtype=dtype, stream=stream)

    def relu(self, out, x, *, dtype=None, stream=None):
        """out = max(x, 0); NaN kept, relu(-0.0) = +0.0."""
        return self.unary(Op.RELU, out, x, dtype=dtype, stream=stream)

    def cast(self, out, x, *, out_dtype=None, in_dtype=None, stream=None):
        """out = x converted to out's dtype (any of the 144 pairs)."""
        out_ = _Operand(out, "out", out_dtype, writable=True)
        x_ = _Operand(x, "x", in_dtype)
        _same_shape(out_, [x_])
        _check(_lib.ew_cast(self._live(), out_.dtype, x_.dtype, out_.count, out_.pointer, x_.pointer,
                            _resolve_stream(stream, [out_, x_])), "ew_cast")
        return out

    def scale_add(self, out, alpha, a, b, *, dtype=None, stream=None):
        """out = alpha * a + b (floats: one fused multiply-add; integer dtypes: integral alpha)."""
        out_ = _Operand(out, "out", dtype, writable=True)
        a_, b_ = _Operand(a, "a", dtype), _Operand(b, "b", dtype)
        _same_shape(out_, [a_, b_])
        _same_dtype(out_, [a_, b_])
        _check(_lib.ew_scale_add(self._live(), out_.dtype, float(alpha), out_.count, out_.pointer, a_.pointer,
                                 b_.pointer, _resolve_stream(stream, [out_, a_, b_])), "ew_scale_add")
        return out


_default_handles = {}
_default_lock = threading.Lock()


def default_handle(device=0):
    """The module's shared Handle for ``device``, created on first use."""
    device = int(device)
    with _default_lock:
        handle = _default_handles.get(device)
        if handle is None:
            handle = _default_handles[device] = Handle(device)
        return handle


def _device_of(array):
    """The CUDA device ordinal of a PyTorch tensor or CuPy array; 0 when the object does not say."""
    device = getattr(array, "device", None)
    for attribute in ("index", "id"):  # torch.device.index, cupy.cuda.Device.id
        value = getattr(device, attribute, None)
        if isinstance(value, int):
            return value
    return 0


def _handle_for(handle, out):
    return handle if handle is not None else default_handle(_device_of(out))


def unary(op, out, x, *, dtype=None, stream=None, handle=None):
    """Module-level Handle.unary on the default handle of out's device (or ``handle``)."""
    return _handle_for(handle, out).unary(op, out, x, dtype=dtype, stream=stream)


def binary(op, out, a, b, *, dtype=None, stream=None, handle=None):
    """Module-level Handle.binary on the default handle of out's device (or ``handle``)."""
    return _handle_for(handle, out).binary(op, out, a, b, dtype=dtype, stream=stream)


def add(out, a, b, *, dtype=None, stream=None, handle=None):
    """out = a + b. See Handle.add."""
    return _handle_for(handle, out).add(out, a, b, dtype=dtype, stream=stream)


def mul(out, a, b, *, dtype=None, stream=None, handle=None):
    """out = a * b. See Handle.mul."""
    return _handle_for(handle, out).mul(out, a, b, dtype=dtype, stream=stream)


def relu(out, x, *, dtype=None, stream=None, handle=None):
    """out = max(x, 0). See Handle.relu."""
    return _handle_for(handle, out).relu(out, x, dtype=dtype, stream=stream)


def cast(out, x, *, out_dtype=None, in_dtype=None, stream=None, handle=None):
    """out = x converted. See Handle.cast."""
    return _handle_for(handle, out).cast(out, x, out_dtype=out_dtype, in_dtype=in_dtype, stream=stream)


def scale_add(out, alpha, a, b, *, dtype=None, stream=None, handle=None):
    """out = alpha * a + b. See Handle.scale_add."""
    return _handle_for(handle, out).scale_add(out, alpha, a, b, dtype=dtype, stream=stream)
