# SPDX-License-Identifier: Apache-2.0
"""Python binding of libelementwise: elementwise ops on GPU arrays, without copies.

A compiled extension (``elementwise._elementwise``, CPython's stable ABI) over the C library. It
takes PyTorch tensors through the DLPack C exchange API, CuPy and Numba arrays through
``__cuda_array_interface__``, and any other GPU array through DLPack's ``__dlpack__``; it reads
pointer, shape, strides, dtype and stream in C and calls the library on the memory in place::

    import torch, elementwise as ew
    a = torch.randn(1 << 20, device="cuda", dtype=torch.float16)
    b = torch.randn_like(a)
    out = torch.empty_like(a)
    ew.add(a, b, out=out)                # out = a + b, queued on the tensors' current stream
    c = ew.add(a, b)                     # out=None: c allocated by PyTorch, filled and returned
    ew.scale_add(0.5, a, b, out=out)     # out = 0.5 * a + b (the C call's and BLAS axpy's order)
    q = ew.cast(a, "f8e4m3")             # any of the 169 dtype pairs (here f16 -> float8_e4m3fn)
    ew.add(x2d, bias, out=x2d)           # NumPy broadcasting: bias of shape (C,) against (N, C)
    ew.add_batched(as_, bs, outs=outs)   # a list of adds in one launch

Scaled float8 casts (libelementwise 1.2) take their per-tensor scale and amax as float32 device
scalars, read and written on the GPU, so nothing synchronizes::

    amax = ew.amax(x)                    # max |x|, a shape () float32 tensor
    scale = 448.0 / amax                 # current scaling (any device computation)
    q = ew.quantize(x, "f8e4m3", scale)  # saturate(x * scale); amax=, amax_mode= for delayed scaling
    y = ew.dequantize(q, "bf16", 1.0 / scale)

Their list forms take one scale an entry, a float32 device array of len(xs) elements (entry i's at
scale[i]), and give each entry's amax, or one shared by the list, in the few launches of one call::

    amaxes = ew.amax_batched(xs)                          # (len(xs),) float32: entry i's max |x| at [i]
    qs = ew.quantize_batched(xs, "f8e4m3", 448.0 / amaxes)   # outs[i] = saturate(xs[i] * scale[i])
    ew.quantize_batched(xs, "f8e4m3", scales, amax=history, amax_mode="accumulate", outs=qs)
    ys = ew.dequantize_batched(qs, "bf16", amaxes / 448.0)

Block-scaled casts (libelementwise 1.2): MX (blocks of 32, e8m0 scales: MXFP8, MXFP4) and NVFP4
(blocks of 16, e4m3 scales and a global scale) along the last dimension, bit for bit torchao's
reference functions; float4 packs two elements a byte, as torch.float4_e2m1fn_x2::

    q, scales = ew.quantize_blocks(x, torch.float8_e4m3fn)               # MXFP8, OCP floor
    q4, s4 = ew.quantize_blocks(x, format="nvfp4", global_scale=g, swizzled=True)  # q4: (..., cols / 2)
    y = ew.dequantize_blocks(q, scales, torch.bfloat16)

Inputs come first and ``out=`` / ``stream=`` are keywords, as in NumPy, CuPy and PyTorch. The 1.x
forms with the output first (``ew.add(out, a, b)``) still work, with a DeprecationWarning. With
``out=None`` the output is allocated by the first input's own framework (PyTorch, CuPy, Numba) and
returned. Strided views and broadcast inputs go through the library's strided calls: nothing is ever
copied. The exact semantics of each op (rounding, NaN, wrap-around) are those of docs/semantics.md.

:class:`Kernel` compiles an elementwise body of your own at run time (with NVRTC, for the current
GPU) and runs it on the same machinery, one pass over memory for a whole chain::

    k = ew.Kernel("return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));",
                  out_dtype="f16", in_dtypes=("f32", "f32"), n_params=1)
    y = k(a, b, params=(1.5,))           # y = f16(relu(1.5 * a + b)), bit for bit the chain of calls

The library is found through, in order: the ``ELEMENTWISE_LIBRARY`` environment variable (a path
to ``libelementwise.so.1``), the copy next to this file (what ``pip install`` puts there), and the
dynamic loader's own search (``LD_LIBRARY_PATH``, the system's library cache).
"""

from __future__ import annotations

import enum
import os
import sys

try:
    from . import _elementwise as _ext
except ImportError as error:
    import sysconfig
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        raise ImportError(
            "elementwise's compiled module is built for CPython's stable ABI (abi3), which free-threaded "
            "CPython (%s) cannot load; use a CPython build with the GIL" % sys.version.split()[0]) from error
    raise

__all__ = [
    "DType", "Op", "ReduceMode", "ReduceOp", "BlockFormat", "Status", "ElementwiseError", "Handle", "MAX_DIMS",
    "add", "mul", "relu", "cast", "scale_add", "unary", "binary", "quantize", "dequantize", "amax",
    "quantize_blocks", "dequantize_blocks", "block_scales_shape",
    "add_batched", "mul_batched", "relu_batched", "cast_batched", "scale_add_batched",
    "unary_batched", "binary_batched", "quantize_batched", "dequantize_batched", "amax_batched",
    "default_handle", "is_supported", "dtype_name", "dtype_size", "dtype_bits", "library_version", "library_path",
    "Kernel", "kernel_cache_counts", "kernel_cache_fill",
]

MAX_DIMS = _ext.MAX_DIMS
"""EW_MAX_DIMS: the most dimensions a strided call takes (the library merges what it can first)."""


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
    """ew_dtype_t. F8E8M0 (block scales, torch.float8_e8m0fnu) is a dtype of the cast too (every pair, as
    PyTorch's ``.to``), of no other op; F4E2M1 (two elements a byte, as torch.float4_e2m1fn_x2: an array
    element is the byte) is the block-scaled casts' alone."""
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
    F8E8M0 = 13
    F4E2M1 = 14


class Op(enum.IntEnum):
    """ew_op_t."""
    ADD = 1
    MUL = 2
    RELU = 3
    CAST = 4
    SCALE_ADD = 5
    QUANTIZE = 6
    DEQUANTIZE = 7
    AMAX = 8


class ReduceMode(enum.IntEnum):
    """ew_reduce_mode_t: how quantize's amax= is written (``amax_mode=``; the strings "overwrite" and
    "accumulate" name the same)."""
    OVERWRITE = 0
    ACCUMULATE = 1


class ReduceOp(enum.IntEnum):
    """ew_reduce_op_t: a :class:`Kernel`'s reduction output (``reduce=``; the strings "abs_max", "max",
    "min" and "sum" name the same)."""
    ABS_MAX = 1
    MAX = 2
    MIN = 3
    SUM = 4


class BlockFormat(enum.IntEnum):
    """ew_block_format_t: the block-scaled casts' ``format=`` (the strings "mx" and "nvfp4" name the same)."""
    MX = 1
    NVFP4 = 2


class ElementwiseError(RuntimeError):
    """A call into libelementwise failed.

    ``status`` is the :class:`Status`, ``message`` the library's ew_get_last_error_message() text
    (which argument and why, or which CUDA call failed with which CUDA error), ``function`` the C
    function that failed.
    """

    def __init__(self, status: int, message: str, function: str | None = None) -> None:
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status = status
        self.message = message
        self.function = function
        name = _ext.status_string(int(status))
        super().__init__("%s%s: %s" % ("%s: " % function if function else "", name, message))


# ---- loading the library ----


def _candidates() -> list:
    explicit = os.environ.get("ELEMENTWISE_LIBRARY")
    if explicit:
        # An explicit choice is the only one tried: silently falling back would hide a mistake.
        return [explicit]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, name) for name in ("libelementwise.so.1", "libelementwise.so")]
    found = [path for path in found if os.path.exists(path)]
    found.append("libelementwise.so.%d" % _ext.VERSION_MAJOR)  # the loader's search: LD_LIBRARY_PATH, ld.so.cache
    return found


def _load() -> str:
    tried = []
    for candidate in _candidates():
        try:
            _ext.load(candidate)
            return candidate
        except OSError as error:
            tried.append("%s (%s)" % (candidate, error))
    raise ImportError("libelementwise could not be loaded; set ELEMENTWISE_LIBRARY to the path of "
                      "libelementwise.so.1 or install the package. Tried: " + "; ".join(tried))


library_path = _load()


def library_version() -> tuple:
    """(major, minor, patch) of the loaded library."""
    version = _ext.version()
    return version // 10000, version // 100 % 100, version % 100


def _package_version() -> str:
    # The installed distribution's version when this very file is the one installed (elementwise from
    # a source build, elementwise-cu13 or -cu12 from a released wheel); from a source tree, the
    # library's version.
    try:
        import glob
        from importlib import metadata
        site = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for info in glob.glob(os.path.join(site, "elementwise*.dist-info")):
            distribution = metadata.Distribution.at(info)
            installed = str(distribution.locate_file(os.path.join("elementwise", "__init__.py")))
            if os.path.exists(installed) and os.path.samefile(installed, __file__):
                return distribution.version
    except Exception:  # no metadata: not installed
        pass
    return "%d.%d.%d" % library_version()


__version__ = _package_version()

_last_error_message = _ext.last_error_message


def _as_dtype(value) -> DType:
    """A DType from a DType, its int value, or a name ("f16", "bfloat16", torch.bfloat16, ...)."""
    return DType(_ext.as_dtype(value))


def is_supported(op, out_dtype, in_dtype=None) -> bool:
    """Whether the catalogue has ``op`` for these dtypes (in_dtype defaults to out_dtype)."""
    out_dtype = _as_dtype(out_dtype)
    in_dtype = out_dtype if in_dtype is None else _as_dtype(in_dtype)
    return _ext.is_supported(int(op), out_dtype, in_dtype)


def dtype_name(dtype) -> str:
    """The library's short name of a dtype ("f16", "bf16", ...)."""
    return _ext.dtype_name(dtype)


def dtype_size(dtype) -> int:
    """Bytes per element of a dtype (0 for F4E2M1, narrower than a byte: :func:`dtype_bits`)."""
    return _ext.dtype_size(dtype)


def dtype_bits(dtype) -> int:
    """Bits per element of a dtype (4 for F4E2M1)."""
    return _ext.dtype_bits(dtype)


def kernel_cache_counts() -> dict:
    """What the user kernels' caches did since the process started (ew_kernel_cache_get_count):
    ``memory_hits``, ``disk_hits``, ``compiles`` (the misses) and ``store_failures`` (compiled programs
    the disk cache could not keep), over every handle and thread."""
    return _ext.kernel_cache_counts()


# ---- outputs made for out=None, for frameworks without the DLPack exchange API ----

# Each dtype's name in PyTorch (torch.<name>) and NumPy/CuPy.
_FRAMEWORK_NAME = {
    DType.BOOL: "bool", DType.I8: "int8", DType.U8: "uint8", DType.I16: "int16", DType.I32: "int32",
    DType.I64: "int64", DType.F16: "float16", DType.BF16: "bfloat16", DType.F32: "float32",
    DType.F64: "float64", DType.F8E4M3: "float8_e4m3fn", DType.F8E5M2: "float8_e5m2",
    DType.F8E8M0: "float8_e8m0fnu", DType.F4E2M1: "float4_e2m1fn_x2",  # PyTorch's; an F4E2M1 element is a byte of two
}


def _framework_dtype(module, dtype: DType, framework: str):
    value = getattr(module, _FRAMEWORK_NAME[dtype], None)
    if value is None:
        raise TypeError("out=None: %s has no %s dtype to allocate the output with; pass out"
                        % (framework, dtype.name))
    return value


def _allocate(like, shape: tuple, dtype):
    """An uninitialised array of ``shape`` on ``like``'s device, made by ``like``'s own framework:
    ``empty_like`` when the shape is like's (keeping its memory layout), else ``empty``; of like's own
    dtype when ``dtype`` is None. The extension calls it where the exchange API's allocator (which
    PyTorch's tensors have, C-contiguous only) cannot give that layout."""
    dtype = None if dtype is None else DType(dtype)
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


_ext.configure(ElementwiseError, _allocate)


# ---- the calls: the extension's own functions ----

add = _ext.add
mul = _ext.mul
relu = _ext.relu
cast = _ext.cast
scale_add = _ext.scale_add
unary = _ext.unary
binary = _ext.binary
quantize = _ext.quantize
dequantize = _ext.dequantize
amax = _ext.amax
quantize_blocks = _ext.quantize_blocks
dequantize_blocks = _ext.dequantize_blocks
block_scales_shape = _ext.block_scales_shape
add_batched = _ext.add_batched
mul_batched = _ext.mul_batched
relu_batched = _ext.relu_batched
cast_batched = _ext.cast_batched
scale_add_batched = _ext.scale_add_batched
unary_batched = _ext.unary_batched
binary_batched = _ext.binary_batched
quantize_batched = _ext.quantize_batched
dequantize_batched = _ext.dequantize_batched
amax_batched = _ext.amax_batched

_OPERATIONS = ("add", "mul", "relu", "cast", "scale_add", "unary", "binary", "quantize", "dequantize", "amax",
               "quantize_blocks", "dequantize_blocks", "add_batched", "mul_batched", "relu_batched", "cast_batched",
               "scale_add_batched", "unary_batched", "binary_batched", "quantize_batched", "dequantize_batched",
               "amax_batched")


class _Closing:
    # What Handle and Kernel share: close() is idempotent, and ``with`` and the garbage collector call it.
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
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
    ``with ew.Handle(1) as h: h.add(a, b, out=out)``. Its methods are the module's functions on it.
    """

    def __init__(self, device: int = 0) -> None:
        self._ptr = None
        self._owned = False
        self._ptr = _ext.handle_create(int(device))
        self._owned = True
        self.device = int(device)

    @classmethod
    def _from_raw(cls, raw, device: int = 0, owned: bool = False) -> "Handle":
        # A raw ew_handle_t (NULL, for tests, reaches the library's INVALID_HANDLE path with no GPU).
        # Not owned: close() forgets it without destroying it.
        handle = cls.__new__(cls)
        handle._ptr = int(raw or 0)
        handle._owned = owned
        handle.device = device
        return handle

    def _live(self) -> int:
        if self._ptr is None:
            raise ValueError("the handle is closed")
        return self._ptr

    @property
    def sm_count(self) -> int:
        """Multiprocessors of the device, as cached by the handle."""
        return _ext.handle_get(self._live(), 1)

    @property
    def max_threads_per_sm(self) -> int:
        """Resident threads per multiprocessor, as cached by the handle."""
        return _ext.handle_get(self._live(), 2)

    def close(self) -> None:
        """Destroy the handle (queued work is not waited for). Idempotent."""
        raw, self._ptr = getattr(self, "_ptr", None), None
        if raw is not None and getattr(self, "_owned", False):
            _ext.handle_destroy(raw)

    def __repr__(self) -> str:
        return "<elementwise.Handle device=%d%s>" % (self.device, " closed" if self._ptr is None else "")


def _method(name: str):
    function = getattr(_ext, name)

    def method(self, *args, **keywords):
        return function(*args, handle=self, **keywords)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "%s on this handle: %s" % (name, function.__doc__)
    return method


for _name in _OPERATIONS:
    setattr(Handle, _name, _method(_name))

_default_handles = {}


def default_handle(device: int = 0) -> Handle:
    """The module's shared Handle for ``device``, created on first use; it lives as long as the process
    (the calls without handle= use the same one)."""
    device = int(device)
    handle = _default_handles.get(device)
    if handle is None:
        handle = _default_handles[device] = Handle._from_raw(_ext.default_handle(device), device)
    return handle


# ---- user-defined kernels (libelementwise 1.1) ----

def _current_device() -> int:
    """The calling thread's current CUDA device as the library sees it (cudaGetDevice): the device of
    the current context, else 0, the runtime's default. 0 as well without a driver."""
    import ctypes
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    device = ctypes.c_int()
    # Fails (not initialized, no current context) exactly when the runtime would choose device 0.
    if driver.cuCtxGetDevice(ctypes.byref(device)) != 0:
        return 0
    return device.value


def _dtypes(value):
    """One dtype (a DType, its int, a name, a framework's dtype) as a DType, or a sequence of them as a
    tuple of DTypes: the one rule for in_dtypes= and out_dtype=."""
    if isinstance(value, (str, bytes, int)) or not hasattr(value, "__iter__"):
        return _as_dtype(value)
    return tuple(_as_dtype(dtype) for dtype in value)


def _kernel_spec(source, out_dtype, in_dtypes):
    """A kernel's source as the library takes it (UTF-8 bytes, no NUL) and as text, its out dtype (a
    DType, or a tuple of them for several arrays) and its input dtypes (a tuple)."""
    if isinstance(source, str):
        encoded = source.encode("utf-8")
    elif isinstance(source, bytes):
        encoded, source = source, source.decode("utf-8", "replace")
    else:
        raise TypeError("source: the kernel's body as a str, not %s" % type(source).__name__)
    if b"\0" in encoded:
        raise ValueError("source: contains a NUL character, where C would end it")
    ins = _dtypes(in_dtypes)
    return encoded, source, _dtypes(out_dtype), ins if isinstance(ins, tuple) else (ins,)


_REDUCE_NAMES = {"abs_max": ReduceOp.ABS_MAX, "max": ReduceOp.MAX, "min": ReduceOp.MIN, "sum": ReduceOp.SUM}


def _reduction(reduce, reduce_dtype):
    """reduce= and reduce_dtype= of a Kernel as (the ew_reduce_op_t, 0 for none; the scalar's DType)."""
    if reduce is None:
        return 0, DType.F32
    if isinstance(reduce, str):
        if reduce not in _REDUCE_NAMES:
            raise ValueError("reduce=%r: one of %s, or a ReduceOp" % (reduce, ", ".join(map(repr, _REDUCE_NAMES))))
        reduce = _REDUCE_NAMES[reduce]
    return int(ReduceOp(reduce)), _as_dtype(reduce_dtype)


def _kernel_outputs(out, reduce, reduce_dtype):
    """A Kernel's outputs as (outputs, reduce op, scalar dtype). outputs is None for a kernel of one
    array and no reduction (ew_kernel_create: its body returns), else the ew_kernel_output_t list of
    ew_kernel_create_outputs as ((dtype, op), ...): the arrays in out's order (op 0), then the reduction,
    so that the body assigns out0 ... and the reduction's value last, as out= and the result order them."""
    op, scalar = _reduction(reduce, reduce_dtype)
    if isinstance(out, DType) and not op:
        return None, op, scalar
    arrays = (out,) if isinstance(out, DType) else out
    return tuple((int(dtype), 0) for dtype in arrays) + (((int(scalar), op),) if op else ()), op, scalar


def kernel_cache_fill(source, out_dtype, in_dtypes, n_params: int = 0, *, arch, reduce=None,
                      reduce_dtype="f32") -> None:
    """Compile a :class:`Kernel`'s programs for GPUs of architecture ``arch`` ("sm_90" for compute
    capability 9.0, or a list of such names) into the disk cache, with no GPU (ew_kernel_cache_fill,
    or ew_kernel_cache_fill_outputs for a kernel of several outputs: ``out_dtype`` a sequence of
    dtypes, or ``reduce=``, as :class:`Kernel` takes them): fill a cache where NVRTC is, copy it to
    machines of those architectures, and ``Kernel`` of the same arguments loads from it there without
    NVRTC."""
    encoded, _, out, ins = _kernel_spec(source, out_dtype, in_dtypes)
    outputs = _kernel_outputs(out, reduce, reduce_dtype)[0]
    for name in (arch,) if isinstance(arch, str) else arch:
        _ext.kernel_cache_fill(encoded, int(out) if outputs is None else outputs, ins, int(n_params),
                               str(name).encode("utf-8"))


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

    Calls take the inputs, then ``out=``: ``k(a, b, out=out, params=(1.5,))`` (``k(out, a, b)``, the
    output first, is deprecated). As for the other calls, the inputs broadcast to out's shape (NumPy's
    rules) and any operand may be a strided view, negative strides included: such calls go through
    ew_kernel_launch_strided, without copies.

    ``reduce=`` ("abs_max", "max", "min", "sum" or :class:`ReduceOp`) adds a reduction output computed
    in the same pass (ew_kernel_create_outputs): the body then assigns ``out0`` (the array's value) and
    ``out1`` (the value folded into the reduction, converted to ``reduce_dtype``, float32 or float64)
    instead of returning, e.g. ``Kernel("out0 = in0; out1 = in0;", "f32", ["bf16"], reduce="abs_max")``
    is a cast that also gives its input's amax; an element whose body leaves ``out1`` unassigned adds
    nothing. Such a kernel takes ``out=(array, scalar)`` (either None: made, the scalar of shape ()),
    returns ``(array, scalar)``, and with ``accumulate=True`` folds into the scalar's old value instead
    of overwriting it (docs/semantics.md §12.1). As for the other calls, its inputs
    broadcast and any operand may be a strided view; each element of out is reduced once.

    ``out_dtype`` a sequence of dtypes (up to 4) makes a kernel of several array outputs, each of its
    own dtype, written in one pass: the body assigns ``out0``, ``out1``, ... in that order (and the
    reduction's value after them, with ``reduce=``), e.g.
    ``Kernel("out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);", ("f32", "f32"), ("f32", "f32"))``.
    A call takes ``out=`` as a tuple in the same order (arrays, then the scalar; any of them None:
    made, of the launch's shape) and returns that tuple. The arrays are of one shape, the first given
    one's, else the inputs' broadcast shape, and may not overlap one another (an input may be one of
    them exactly, in place). On views (a strided or broadcast operand) each array is written through
    its own strides (ew_kernel_launch_outputs_strided); arrays whose spans interleave are refused.

    :meth:`batched` runs a kernel over tensor lists in one call (libelementwise 1.2), a reduction's
    scalar per entry or one for the list: ``k.batched(as_, bs, out=outs, params=(1.5,))``, every entry a flat call, its parameters
    the same for all or each entry's own (``entry_params=``, a float64 device array).
    """

    def __init__(self, source, out_dtype, in_dtypes, n_params: int = 0, *, reduce=None, reduce_dtype="f32",
                 handle: Handle | None = None) -> None:
        self._ptr = None
        self._owned = False
        encoded, self._source, self._out_dtype, self._in_dtypes = _kernel_spec(source, out_dtype, in_dtypes)
        self._n_params = int(n_params)
        # _outputs: None (ew_kernel_create), else ((dtype, op), ...) in the library's order, which calls read.
        self._outputs, self._reduce, self._reduce_dtype = _kernel_outputs(self._out_dtype, reduce, reduce_dtype)
        # The library requires the handle's device to be current when compiling: by default, the
        # current device's default handle.
        self._handle = default_handle(_current_device()) if handle is None else handle
        self._ptr = _ext.kernel_create(self._handle, encoded,
                                       int(self._out_dtype) if self._outputs is None else self._outputs,
                                       self._in_dtypes, self._n_params)
        self._owned = True

    @classmethod
    def _from_raw(cls, raw, out_dtype, in_dtypes, n_params: int = 0, handle: Handle | None = None,
                  source: str = "", reduce=None, reduce_dtype="f32") -> "Kernel":
        # For tests: wrap a raw ew_kernel_t without compiling (NULL reaches the library's
        # INVALID_HANDLE path with no GPU). close() forgets it without destroying it.
        kernel = cls.__new__(cls)
        kernel._ptr, kernel._owned = int(raw or 0), False
        kernel._source, kernel._out_dtype = source, _dtypes(out_dtype)
        kernel._in_dtypes = tuple(_as_dtype(dtype) for dtype in in_dtypes)
        kernel._n_params = int(n_params)
        kernel._outputs, kernel._reduce, kernel._reduce_dtype = _kernel_outputs(kernel._out_dtype, reduce,
                                                                                reduce_dtype)
        kernel._handle = handle if handle is not None else Handle._from_raw(None)
        return kernel

    @property
    def source(self) -> str:
        """The body it was compiled from."""
        return self._source

    @property
    def out_dtype(self) -> DType | tuple:
        """The output's dtype; for a kernel of several arrays (out_dtype given as a sequence), the
        tuple of their dtypes, out0's first."""
        return self._out_dtype

    @property
    def in_dtypes(self) -> tuple:
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
    def reduce(self) -> ReduceOp | None:
        """Its reduction output's operation, or None."""
        return ReduceOp(self._reduce) if self._reduce else None

    @property
    def reduce_dtype(self) -> DType | None:
        """Its reduction output's dtype (F32 or F64), or None."""
        return self._reduce_dtype if self._reduce else None

    @property
    def handle(self) -> Handle:
        """The handle it was compiled for; it runs on that handle's device."""
        return self._handle

    def __call__(self, *inputs, out=None, params=(), stream=None, accumulate=False):
        """out[i] = body(inputs[0][i], ..., params) for every index i of out, the inputs broadcast to
        out's shape (NumPy's rules), queued on the stream (stream=, else the arrays' own). Operands
        contiguous alike over one shape take ew_kernel_launch, any other layout
        ew_kernel_launch_strided; an input may be out itself (in place). out None: allocated like the
        first input, of the inputs' broadcast shape and dtype out_dtype. Returns out. With a reduction
        output: out=(array, scalar), returns (array, scalar) (ew_kernel_launch_outputs, or its _strided
        form). With several arrays (out_dtype a sequence): out=(array0, array1, ...[, scalar]), each
        None to have it made, all of one shape (each a view of its own strides, or contiguous), returns
        that tuple."""
        return _ext.kernel_launch(self, *inputs, out=out, params=params, stream=stream,
                                  accumulate=accumulate or None)

    def batched(self, *input_lists, out=None, params=(), entry_params=None, stream=None, accumulate=False):
        """The kernel over tensor lists (the foreach form), in the few launches of one library call
        (ew_kernel_launch_batched, libelementwise 1.2): for each entry i, the flat call
        ``self(input_lists[0][i], ..., out=out[i])``.

        ``input_lists``: one sequence of arrays per input, all of one length (the entries); entry i's
        arrays, its outputs' too, are contiguous and of one shape (no broadcasting, no strided views:
        make a call per view instead), of the kernel's dtypes, on its device. ``out``: for a kernel of
        one output (``out_dtype`` a single dtype) a list of arrays, one an entry; for a kernel of
        arrays (``out_dtype`` a sequence) or of a reduction a tuple of such lists, one per output in
        order, the reduction's a list of scalars, one an entry, as the flat call takes its scalar:
        each entry's own (per-tensor amax) or one object repeated (one reduction over the whole list,
        a global norm), overwritten first, or folded into with ``accumulate=True``; abs max, max and
        min are exact, a sum's order is not fixed. None, for ``out``, one of its lists or one of their
        arrays, is allocated like the entry's first input (its shape, the output's dtype), a scalar of
        shape (). An output may be its entry's input exactly (in place);
        no entry may overlap another entry's output. Returns ``out`` in the same form: a list, or a
        tuple of lists.

        ``params``: the kernel's n_params values, the same for every entry. ``entry_params`` instead
        (not both): each entry's own, a contiguous float64 device array of ``count * n_params``
        values, entry i's at ``[i * n_params]``, read by the launch on the GPU (so an earlier kernel
        on the stream may compute them). The stream: ``stream=``, else the first entry's arrays' (as
        for a single call). An AdamW step over a model's parameters, in place::

            step = ew.Kernel(ADAMW_BODY, ("f32", "f32", "f32"), ("f32",) * 4, n_params=7)
            step.batched(params, grads, exp_avgs, exp_avg_sqs, out=(params, exp_avgs, exp_avg_sqs),
                         params=(lr, beta1, beta2, eps, weight_decay, 1 - beta1 ** t, (1 - beta2 ** t) ** 0.5))
        """
        return _ext.kernel_launch_batched(self, *input_lists, out=out, params=params, entry_params=entry_params,
                                          stream=stream, accumulate=accumulate or None)

    def close(self) -> None:
        """Destroy the kernel (launches already queued complete). Idempotent. A kernel whose handle
        was closed first is only forgotten: the library destroys kernels before their handle."""
        raw, self._ptr = getattr(self, "_ptr", None), None
        if raw is None or not getattr(self, "_owned", False):
            return
        if self._handle._ptr is None:
            return
        _ext.kernel_destroy(raw)

    def __repr__(self) -> str:
        text = " ".join(self._source.split())
        if len(text) > 48:
            text = text[:45] + "..."
        inputs = ", ".join(dtype.name.lower() for dtype in self._in_dtypes)
        arrays = self._out_dtype if isinstance(self._out_dtype, tuple) else (self._out_dtype,)
        outputs = ", ".join(dtype.name.lower() for dtype in arrays)
        if self._reduce:
            outputs += ", %s into %s" % (ReduceOp(self._reduce).name.lower(), self._reduce_dtype.name.lower())
        if isinstance(self._out_dtype, tuple):
            outputs = "(%s)" % outputs
        return "<elementwise.Kernel (%s; %d param%s) -> %s, device %d%s: %r>" % (
            inputs, self._n_params, "" if self._n_params == 1 else "s", outputs,
            self._handle.device, " closed" if self._ptr is None else "", text)


# ---- PyTorch: torch.compile support registers itself when torch._dynamo loads (_torch_hook.py) ----
from . import _torch_hook  # noqa: E402 -- last: it may import elementwise.torch, which needs the above
_torch_hook.install()
