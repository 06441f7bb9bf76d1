#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cross-check libelementwise against PyTorch on CUDA, bit for bit.

    python3 tests/torch_crosscheck.py build/libelementwise.so [--seed N] [--random N]

For every catalogue entry (found with ew_is_supported), the library and torch run on the same CUDA
tensors: special values (NaNs with several payloads, both signs, quiet and signalling; +-inf; +-0;
subnormals; min/max/lowest; the fp8 edges 448/464/465/57344/61440; e8m0's bytes 0x00, 0x7F, 0xFE and
its NaN 0xFF, and the ties it rounds (0.75, 1.5, 3, 2^-127, 1.5 * 2^127); integer edges such as 2^24 +- 1;
300.7, 128, -1.5), every pair of special values for binary ops, and random bit patterns (every byte of
the 1-byte dtypes). Results are compared as raw bits. e8m0 (float8_e8m0fnu) is a dtype of the cast
alone: every pair with it, both ways, is compared.

torch's side: add/mul = torch.add/torch.mul, relu = torch.relu, scale_add = torch.add(b, a, alpha=alpha),
cast = x.to(dtype). docs/semantics.md sets the goal "match PyTorch 2.11 on CUDA wherever PyTorch defines
the result", and every entry is held to it, float scale_add included, over alphas that include NaNs
(quiet, negative, signalling), +-0, +-inf, huge and tiny values. NaN results are compared by the rules
of docs/semantics.md: bit for bit wherever it states the bits (section 6), by NaN-ness alone where it
leaves them to the library's own rule (f64 scale_add with a NaN alpha and another NaN operand).

Bool inputs hold every byte, not only 0 and 1 (bool tensors made from uint8 with .view(torch.bool)).
torch reads any nonzero byte as true in its elementwise kernels (c10::load, its test
test_non_standard_bool_values), as docs/semantics.md does, so the library is compared with torch's
result on the same inputs read as 0/1; where torch on the raw bytes differs from that, the row says so
(torch's own inconsistency, not a failure). What torch cannot run is listed as SKIP with torch's reason.

Also printed: for NaN inputs, the exact bits torch produces for every cast pair and for add, mul, relu and
scale_add, with the library's bits beside them where they differ; each line is a comparison. This is how
the NaN table of docs/semantics.md (section 6) is confirmed.

The last line is "N passed, M failed". Exit status: 0 if every comparison passed; 1 if any differed or
a library call failed; 2 on a usage or setup error.
"""

import argparse
import ctypes
import math
import struct
import sys

try:
    import torch
except ImportError as error:  # pragma: no cover - depends on the machine
    print(f"torch_crosscheck: cannot import torch: {error}", file=sys.stderr)
    print("0 passed, 1 failed")
    sys.exit(2)

OP_ADD, OP_MUL, OP_RELU, OP_CAST, OP_SCALE_ADD = 1, 2, 3, 4, 5
OP_NAMES = {OP_ADD: "add", OP_MUL: "mul", OP_RELU: "relu", OP_CAST: "cast", OP_SCALE_ADD: "scale_add"}
POISON = 0xA5


class Dtype:
    def __init__(self, ew, name, torch_name, size, kind):
        self.ew, self.name, self.size, self.kind = ew, name, size, kind
        self.torch = getattr(torch, torch_name, None)  # None: this torch lacks it
        self.torch_name = torch_name

    @property
    def mask(self):
        return (1 << (8 * self.size)) - 1

    def __repr__(self):
        return self.name


DTYPES = [
    Dtype(1, "bool", "bool", 1, "bool"),
    Dtype(2, "i8", "int8", 1, "int"),
    Dtype(3, "u8", "uint8", 1, "int"),
    Dtype(4, "i16", "int16", 2, "int"),
    Dtype(5, "i32", "int32", 4, "int"),
    Dtype(6, "i64", "int64", 8, "int"),
    Dtype(7, "f16", "float16", 2, "float"),
    Dtype(8, "bf16", "bfloat16", 2, "float"),
    Dtype(9, "f32", "float32", 4, "float"),
    Dtype(10, "f64", "float64", 8, "float"),
    Dtype(11, "f8e4m3", "float8_e4m3fn", 1, "float"),
    Dtype(12, "f8e5m2", "float8_e5m2", 1, "float"),
    Dtype(13, "f8e8m0", "float8_e8m0fnu", 1, "float"),
]
BY_NAME = {d.name: d for d in DTYPES}
BITS_VIEW = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

# fmt: off
# Raw bit patterns per float dtype: NaNs (quiet, signalling, payloads, both signs), infinities, zeros,
# smallest and largest subnormals, smallest normal, largest finite and lowest.
FLOAT_BIT_SPECIALS = {
    "f64": [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF0000000000001,
            0x7FF4000000000000, 0x7FF80000FFFFFFFF, 0x7FF0000020000000, 0xFFFFFFFFFFFFFFFF,
            0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x0, 0x8000000000000000, 0x1,
            0x8000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF,
            0xFFEFFFFFFFFFFFFF],
    "f32": [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA5A5A5, 0xFFB00001, 0xFFFFFFFF, 0x7FFFFFFF,
            0x7F800000, 0xFF800000, 0x0, 0x80000000, 0x1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
            0xFF7FFFFF,
            # e8m0's ties and their neighbours: 2^-127, 1.5 and 1.5 * 2^127
            0x00400000, 0x003FFFFF, 0x00400001, 0x00600000, 0x3FBFFFFF, 0x3FC00001, 0x7F400000, 0x7F3FFFFF],
    "f16": [0x7E00, 0xFE00, 0x7C01, 0xFC01, 0x7D55, 0xFFFF, 0x7FFF, 0x7C00, 0xFC00, 0x0, 0x8000, 0x1, 0x8001,
            0x03FF, 0x0400, 0x7BFF, 0xFBFF],
    "bf16": [0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x7FA5, 0xFFFF, 0x7FFF, 0x7F80, 0xFF80, 0x0, 0x8000, 0x1, 0x8001,
             0x007F, 0x0080, 0x7F7F, 0xFF7F],
    "f8e4m3": [0x7F, 0xFF, 0x7E, 0xFE, 0x00, 0x80, 0x01, 0x81, 0x07, 0x08, 0x78, 0x77],
    "f8e5m2": [0x7C, 0xFC, 0x7D, 0xFD, 0x7E, 0x7F, 0xFF, 0x7B, 0xFB, 0x00, 0x80, 0x01, 0x81, 0x03, 0x04],
    # no sign, zero or infinity: NaN 0xFF, 2^-127 (0x00), 2^-126, 1 (0x7F), 2, 2^126, 2^127 (0xFE)
    "f8e8m0": [0xFF, 0x00, 0x01, 0x7F, 0x80, 0xFD, 0xFE],
}

# Edge values, rounded into each float dtype (both signs).
FLOAT_VALUE_SPECIALS = [
    1.0, 0.5, 1.5, 2.5, 3.5, 128.0, 129.0, 255.0, 255.5, 256.0, 300.7, 448.0, 449.0, 464.0, 465.0, 480.0,
    57344.0, 61439.0, 61440.0, 65504.0, 65519.0, 65520.0, 65536.0, 16777215.0, 16777216.0, 16777217.0,
    2147483520.0, 2147483647.0, 2147483648.0, 4294967296.0, 9223372036854775808.0, 18446744073709551616.0,
    1e30, 3.4028234663852886e38, 3.4028235677973366e38, 1e300, 2.0 ** -6, 2.0 ** -9, 2.0 ** -10,
    3 * 2.0 ** -10, 2.0 ** -14, 2.0 ** -16, 2.0 ** -17, 3 * 2.0 ** -17, 2.0 ** -24, 2.0 ** -25, 2.0 ** -126,
    2.0 ** -133, 2.0 ** -149, 2.0 ** -150, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, 1 + 2.0 ** -11,
    1 + 3 * 2.0 ** -11, 1 + 2.0 ** -24, 1.0 / 3.0, 0.1,
    0.75, 3.0, 6.0, 2.0 ** -127, 1.5 * 2.0 ** -127, 2.0 ** -128, 2.0 ** 127, 1.5 * 2.0 ** 127,  # e8m0's ties
]

INTEGER_SPECIALS = [
    0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 300, -300, 448, 464, 465, 32767, 32768, -32768, -32769,
    65535, 65536, 57344, 61440, 65504, 65520, 16777215, 16777216, 16777217, -16777217, 16777219, 33554433,
    16842753, -16842753, 2147483647, -2147483648, 2147483520, 4294967295, 9007199254740993,
    -9007199254740993, 2 ** 63 - 1, -(2 ** 63), -(2 ** 63) + 1, 2 ** 62 + 1, 0x7FFFFF8000000000,
]

# NaN inputs whose cast results are printed (section 6 of docs/semantics.md).
NAN_PATTERNS = {
    "f16": [0x7E00, 0xFE00, 0x7C01, 0xFD55, 0x7FFF],
    "bf16": [0x7FC0, 0xFFC0, 0x7F81, 0xFFA5, 0x7FFF],
    "f32": [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFA5A5A5, 0x7FFFFFFF],
    "f64": [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF0000020000000,
            0xFFFFFFFFFFFFFFFF],
    "f8e4m3": [0x7F, 0xFF],
    "f8e5m2": [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF],
    "f8e8m0": [0xFF],
}

# Bool input bytes: 0, 1, and nonzero bytes other than 1 (all read as true).
BOOL_BYTES = [0x00, 0x01, 0x02, 0x40, 0x7F, 0x80, 0xFE, 0xFF]


def double_from_bits(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def double_bits(value):
    return struct.unpack("<Q", struct.pack("<d", value))[0]


# Float scale_add alphas: ordinary ones (1/3 tells fma from multiply-then-add), NaNs (quiet, negative,
# signalling with a payload), zeros, infinities, FLT_MAX, and tiny ones (the f64 subnormals, which are
# 0 as f32; an f32 subnormal; the f32 underflow tie 2^-150 and 1.5 * 2^-150; FLT_MIN). torch converts a
# half, bfloat16 or float alpha to float and refuses one beyond FLT_MAX, so those are f64's alone.
FLOAT_ALPHAS = [1.0 / 3.0, -3.25, 0.5, 1e30, 3.4028234663852886e38, -3.4028234663852886e38,
                double_from_bits(0x7FF8000000000000), double_from_bits(0xFFF8000000000000),
                double_from_bits(0x7FF0000000000001), 0.0, -0.0, math.inf, -math.inf,
                5e-324, -5e-324, 1e-40, 2.0 ** -150, 1.5 * 2.0 ** -150, 2.0 ** -126]
F64_ONLY_ALPHAS = [1e300, 1.7976931348623157e308, -1.7976931348623157e308]
INTEGER_ALPHAS = [-3, 127, 0, 1]
INTEGER_RANGES = {"i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767), "i32": (-2 ** 31, 2 ** 31 - 1),
                  "i64": (-2 ** 63, 2 ** 63 - 1)}
# fmt: on


# ---------------------------------------------------------------------------------------------------
# bits <-> tensors


def signed(value, bits):
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def from_bits(values, dtype):
    """CPU tensor of dtype holding exactly these raw bit patterns."""
    if dtype.size == 1:
        raw = torch.tensor([v & 0xFF for v in values], dtype=torch.uint8)
    else:
        raw = torch.tensor([signed(v, 8 * dtype.size) for v in values], dtype=BITS_VIEW[dtype.size])
    return raw.view(dtype.torch)


def bits_of(tensor):
    """The raw bits as an integer tensor of the same element size."""
    size = tensor.element_size()
    return tensor.contiguous().view(BITS_VIEW[size])


def hex_bits(value, size):
    return f"0x{int(value) & ((1 << (8 * size)) - 1):0{2 * size}x}"


# ---------------------------------------------------------------------------------------------------
# inputs


def unique_by_bits(tensor):
    seen, keep = set(), []
    for i, v in enumerate(bits_of(tensor).tolist()):
        if v not in seen:
            seen.add(v)
            keep.append(i)
    return tensor[torch.tensor(keep, dtype=torch.int64)]


def specials(dtype):
    if dtype.kind == "bool":
        return from_bits(BOOL_BYTES, dtype)
    if dtype.kind == "int":
        return unique_by_bits(from_bits(INTEGER_SPECIALS, dtype))
    by_bits = from_bits(FLOAT_BIT_SPECIALS[dtype.name], dtype)
    values = torch.tensor(FLOAT_VALUE_SPECIALS + [-v for v in FLOAT_VALUE_SPECIALS], dtype=torch.float64)
    return unique_by_bits(torch.cat([by_bits, values.to(dtype.torch)]))


def random_bits(n, dtype, generator):
    """n random raw bit patterns of dtype's size."""
    high = torch.randint(0, 2**32, (n,), dtype=torch.int64, generator=generator)
    low = torch.randint(0, 2**32, (n,), dtype=torch.int64, generator=generator)
    words = (high << 32) | low  # wraps: any 64-bit pattern
    if dtype.size < 8:
        bits = 8 * dtype.size
        words = words & dtype.mask
        if dtype.size > 1:  # into the signed range of the view type, so the conversion is exact
            words = torch.where(words >= 1 << (bits - 1), words - (1 << bits), words)
        words = words.to(BITS_VIEW[dtype.size])
    return words.view(dtype.torch)


def random_values(n, dtype, generator, pool):
    """n inputs: half random bit patterns, a quarter moderate values, a quarter drawn from the specials."""
    if dtype.kind == "bool":  # half 0/1, half any byte; made as uint8 so that no op normalises them
        canonical = torch.randint(0, 2, (n,), generator=generator, dtype=torch.int64)
        any_byte = torch.randint(0, 256, (n,), generator=generator, dtype=torch.int64)
        pick = torch.randint(0, 2, (n,), generator=generator, dtype=torch.int64)
        return torch.where(pick == 1, any_byte, canonical).to(torch.uint8).view(torch.bool)
    quarter = n // 4
    parts = [random_bits(n - 2 * quarter, dtype, generator)]
    if dtype.kind == "int":
        parts.append(torch.randint(-300, 301, (quarter,), generator=generator).to(dtype.torch))
    else:
        moderate = torch.randint(-1000000, 1000001, (quarter,), generator=generator, dtype=torch.int64)
        parts.append((moderate.to(torch.float64) / 1000.0).to(dtype.torch))
    parts.append(pool[torch.randint(0, len(pool), (quarter,), generator=generator)])
    mixed = torch.cat(parts)
    return mixed[torch.randperm(n, generator=generator)]


def make_inputs(dtype, arity, n_random, generator):
    """CPU inputs: every special (every pair of specials for binary ops), then random ones. Bool inputs
    are put together as uint8 and viewed as bool last: torch's own ops on bool may normalise bytes."""
    pool = specials(dtype)
    if len(pool) > 80:
        pool = pool[torch.randperm(len(pool), generator=generator)[:80]]

    def raw(t):
        return t.view(torch.uint8) if dtype.kind == "bool" else t

    def typed(t):
        return t.view(torch.bool) if dtype.kind == "bool" else t

    if arity == 1:
        return [typed(torch.cat([raw(pool), raw(random_values(n_random, dtype, generator, pool))]))]
    s = len(pool)
    a = torch.cat([raw(pool).repeat_interleave(s), raw(random_values(n_random, dtype, generator, pool))])
    b = torch.cat([raw(pool).repeat(s), raw(random_values(n_random, dtype, generator, pool))])
    return [typed(a), typed(b)]


def as_zero_one(tensor):
    """A bool tensor read as torch reads it: any nonzero byte is true; other dtypes unchanged."""
    if tensor.dtype != torch.bool:
        return tensor
    return tensor.view(torch.uint8) != 0


def has_other_bool_bytes(tensor):
    return tensor.dtype == torch.bool and bool((tensor.view(torch.uint8) > 1).any())


# ---------------------------------------------------------------------------------------------------
# the library through ctypes


class Library:
    def __init__(self, path, device_index):
        self.lib = ctypes.CDLL(path)
        lib, vp, i64, c_int = self.lib, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        lib.ew_handle_create.argtypes = [c_int, ctypes.POINTER(vp)]
        lib.ew_handle_create.restype = c_int
        lib.ew_handle_destroy.argtypes = [vp]
        lib.ew_handle_destroy.restype = c_int
        lib.ew_unary.argtypes = [vp, c_int, c_int, i64, vp, vp, vp]
        lib.ew_unary.restype = c_int
        lib.ew_binary.argtypes = [vp, c_int, c_int, i64, vp, vp, vp, vp]
        lib.ew_binary.restype = c_int
        lib.ew_cast.argtypes = [vp, c_int, c_int, i64, vp, vp, vp]
        lib.ew_cast.restype = c_int
        lib.ew_scale_add.argtypes = [vp, c_int, ctypes.c_double, i64, vp, vp, vp, vp]
        lib.ew_scale_add.restype = c_int
        lib.ew_is_supported.argtypes = [c_int, c_int, c_int]
        lib.ew_is_supported.restype = c_int
        lib.ew_status_string.argtypes = [c_int]
        lib.ew_status_string.restype = ctypes.c_char_p
        lib.ew_get_last_error_message.argtypes = []
        lib.ew_get_last_error_message.restype = ctypes.c_char_p
        self.handle = vp()
        status = lib.ew_handle_create(device_index, ctypes.byref(self.handle))
        if status != 0:
            raise RuntimeError(f"ew_handle_create({device_index}) returned {self.error(status)}")
        try:
            lib.ew_get_version.restype = ctypes.c_uint
            self.version = lib.ew_get_version()
        except AttributeError:
            self.version = None

    def error(self, status):
        return (
            f"{self.lib.ew_status_string(status).decode()}: {self.lib.ew_get_last_error_message().decode()}"
        )

    def supported(self, op, out, in_):
        return self.lib.ew_is_supported(op, out.ew, in_.ew) == 1

    def run(self, op, out_dtype, in_dtype, alpha, inputs, device):
        """The library's result (poisoned first, so an unwritten element shows), or raises RuntimeError."""
        n = inputs[0].numel()
        out = torch.empty(n, dtype=out_dtype.torch, device=device)
        out.view(torch.uint8).fill_(POISON)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream if device.type == "cuda" else None)
        pointer = [ctypes.c_void_p(t.data_ptr()) for t in inputs]
        out_pointer = ctypes.c_void_p(out.data_ptr())
        lib, h = self.lib, self.handle
        if op in (OP_ADD, OP_MUL):
            status = lib.ew_binary(h, op, out_dtype.ew, n, out_pointer, pointer[0], pointer[1], stream)
        elif op == OP_RELU:
            status = lib.ew_unary(h, op, out_dtype.ew, n, out_pointer, pointer[0], stream)
        elif op == OP_CAST:
            status = lib.ew_cast(h, out_dtype.ew, in_dtype.ew, n, out_pointer, pointer[0], stream)
        else:
            status = lib.ew_scale_add(
                h, out_dtype.ew, float(alpha), n, out_pointer, pointer[0], pointer[1], stream
            )
        if status != 0:
            raise RuntimeError(self.error(status))
        if device.type == "cuda":
            torch.cuda.synchronize()
        return out


def torch_run(op, out_dtype, alpha, inputs):
    """torch's result for the same op, or raises (torch cannot do it)."""
    if op == OP_ADD:
        result = torch.add(inputs[0], inputs[1])
    elif op == OP_MUL:
        result = torch.mul(inputs[0], inputs[1])
    elif op == OP_RELU:
        result = torch.relu(inputs[0])
    elif op == OP_CAST:
        result = inputs[0].to(out_dtype.torch)
    else:
        result = torch.add(inputs[1], inputs[0], alpha=alpha)
    if result.dtype != out_dtype.torch:
        raise TypeError(f"torch returned {result.dtype}, not {out_dtype.torch}")
    if result.is_cuda:
        torch.cuda.synchronize()
    return result


# ---------------------------------------------------------------------------------------------------
# the comparison


def alphas_for(op, dtype):
    if op != OP_SCALE_ADD:
        return [None]
    if dtype.kind == "bool":
        return [True, False]
    if dtype.kind == "float":
        return FLOAT_ALPHAS + (F64_ONLY_ALPHAS if dtype.name == "f64" else [])
    low, high = INTEGER_RANGES[dtype.name]
    return [a for a in INTEGER_ALPHAS if low <= a <= high]


def alpha_text(alpha):
    if alpha is None:
        return ""
    if isinstance(alpha, float) and (math.isnan(alpha) or alpha == 0.0):
        return f"{alpha!r} 0x{double_bits(alpha):016x}"  # sign and payload
    return repr(alpha)


def nan_bits_unstated(op, out, alpha, inputs):
    """Elements whose NaN bits docs/semantics.md leaves to the library's own rule, so that only
    NaN-ness is compared: f64 scale_add with a NaN alpha and a or b NaN (section 6: "with alpha NaN
    too it is the library's explicit rule"). None when there are none."""
    if op != OP_SCALE_ADD or out.name != "f64" or alpha is None or not math.isnan(alpha):
        return None
    return inputs[0].isnan() | inputs[1].isnan()


def entry_name(op, out, in_):
    return f"cast {in_.name}->{out.name}" if op == OP_CAST else f"{OP_NAMES[op]} {out.name}"


def first_line(error):
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:90]


def compare(library, op, out, in_, alpha, cpu_inputs, device):
    """One row of the summary: (status, elements, mismatches, first mismatch text or note)."""
    inputs = [t.to(device) for t in cpu_inputs]
    if in_.kind == "bool" and not any(has_other_bool_bytes(t) for t in inputs):
        return "ERROR", 0, 0, "the bool inputs hold only 0 and 1 (a bug of this script)"
    torch_inputs = [as_zero_one(t) for t in inputs]
    try:
        expected = torch_run(op, out, alpha, torch_inputs)
    except (RuntimeError, TypeError, NotImplementedError, ValueError) as error:
        return "SKIP", 0, 0, f"torch cannot: {first_line(error)}"
    notes = []
    if in_.kind == "bool":
        try:
            raw = bits_of(torch_run(op, out, alpha, inputs))
            torch_differs = int((raw != bits_of(expected)).sum())
        except (RuntimeError, TypeError, NotImplementedError, ValueError) as error:
            torch_differs = f"all ({first_line(error)})"
        if torch_differs:
            notes.append(f"note: torch on the raw bytes differs from torch on 0/1 in {torch_differs} places")
    try:
        got = library.run(op, out, in_, alpha, inputs, device)
    except RuntimeError as error:
        return "ERROR", 0, 0, f"library call failed: {first_line(error)}"
    expected_bits, got_bits = bits_of(expected), bits_of(got)
    differ = expected_bits != got_bits
    unstated = nan_bits_unstated(op, out, alpha, inputs)
    if unstated is not None:
        nan_only = unstated & expected.isnan() & got.isnan()
        differ &= ~nan_only
        notes.append(f"{int(unstated.sum())} results with a or b NaN compared by NaN-ness (bits unstated)")
    count = int(differ.sum())
    if count == 0:
        return "OK", got.numel(), 0, "; ".join(notes)
    i = int(differ.nonzero()[0])
    names = ["x"] if len(inputs) == 1 else ["a", "b"]
    ins = " ".join(
        f"{name}={hex_bits(bits_of(t)[i], t.element_size())}" for name, t in zip(names, cpu_inputs)
    )
    text = f"[{i}] {ins} torch={hex_bits(expected_bits[i], out.size)} lib={hex_bits(got_bits[i], out.size)}"
    return "FAIL", got.numel(), count, "; ".join([text] + notes)


def nan_report(library, device):
    """The exact bits torch gives for NaN inputs: every cast pair, and arithmetic on each float dtype.
    Returns (lines that matched, lines that differed or whose library call failed)."""
    print("\nNaN inputs: cast results as torch produces them (lib shown where it differs)")
    passed = failed = 0
    for src_name, patterns in NAN_PATTERNS.items():
        src = BY_NAME[src_name]
        if src.torch is None:
            continue
        x = from_bits(patterns, src).to(device)
        for dst in DTYPES:
            if dst.torch is None or not library.supported(OP_CAST, dst, src):
                continue
            try:
                want = bits_of(torch_run(OP_CAST, dst, None, [x])).tolist()
            except (RuntimeError, TypeError, NotImplementedError, ValueError) as error:
                print(f"  cast {src.name}->{dst.name}: torch cannot: {first_line(error)}")
                continue
            try:
                got = bits_of(library.run(OP_CAST, dst, src, None, [x], device)).tolist()
            except RuntimeError as error:
                print(f"  cast {src.name}->{dst.name}: FAIL: library call failed: {first_line(error)}")
                failed += 1
                continue
            cells, differs = [], False
            for p, w, g in zip(patterns, want, got):
                cell = f"{hex_bits(p, src.size)}->{hex_bits(w, dst.size)}"
                if (g & dst.mask) != (w & dst.mask):
                    cell += f" (lib {hex_bits(g, dst.size)})"
                    differs = True
                cells.append(cell)
            print(f"  cast {src.name:>6}->{dst.name:<6} " + ", ".join(cells) + ("  FAIL" if differs else ""))
            failed += differs
            passed += not differs

    print("\nNaN results of arithmetic as torch produces them (lib shown where it differs)")
    for name in ("f16", "bf16", "f32", "f64"):
        dtype = BY_NAME[name]
        nan = NAN_PATTERNS[name]
        one = torch.ones(1, dtype=dtype.torch)
        inf = torch.tensor([float("inf")], dtype=torch.float64).to(dtype.torch)
        a = torch.cat([from_bits(nan, dtype), inf, inf])
        b = torch.cat([one.repeat(len(nan)), -inf, torch.zeros(1, dtype=dtype.torch)])
        labels = [f"{hex_bits(p, dtype.size)} op 1" for p in nan] + ["inf op -inf", "inf op 0"]
        for op in (OP_ADD, OP_MUL, OP_RELU, OP_SCALE_ADD):
            alpha = 1.0 if op == OP_SCALE_ADD else None
            inputs = [a.to(device)] if op == OP_RELU else [a.to(device), b.to(device)]
            try:
                want = bits_of(torch_run(op, dtype, alpha, inputs)).tolist()
            except (RuntimeError, TypeError, NotImplementedError, ValueError) as error:
                print(f"  {OP_NAMES[op]} {name}: torch cannot: {first_line(error)}")
                continue
            try:
                got = bits_of(library.run(op, dtype, dtype, alpha, inputs, device)).tolist()
            except RuntimeError as error:
                print(f"  {OP_NAMES[op]} {name}: FAIL: library call failed: {first_line(error)}")
                failed += 1
                continue
            cells, differs = [], False
            for label, w, g in zip(labels, want, got):
                if op == OP_RELU:
                    label = label.split(" op ")[0]
                cell = f"{label}={hex_bits(w, dtype.size)}"
                if (g & dtype.mask) != (w & dtype.mask):
                    cell += f" (lib {hex_bits(g, dtype.size)})"
                    differs = True
                cells.append(cell)
            print(f"  {OP_NAMES[op]:>9} {name:<5} " + ", ".join(cells) + ("  FAIL" if differs else ""))
            failed += differs
            passed += not differs
    return passed, failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("library", help="path to libelementwise.so (e.g. build/libelementwise.so)")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument(
        "--random", type=int, default=1 << 16, help="random elements per entry (default 65536)"
    )
    parser.add_argument(
        "--device",
        default="cuda",
        help="cuda (default), or cpu to test this script against a host stand-in of the library",
    )
    args = parser.parse_args()

    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("torch_crosscheck: torch sees no CUDA device", file=sys.stderr)
            print("0 passed, 1 failed")
            return 2
        torch.zeros(1, device=device)  # the context exists before the library looks for it
        device = torch.device("cuda", torch.cuda.current_device())
    try:
        library = Library(args.library, device.index if device.index is not None else 0)
    except (OSError, RuntimeError) as error:
        print(f"torch_crosscheck: {error}", file=sys.stderr)
        print("0 passed, 1 failed")
        return 2
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(
        f"torch {torch.__version__}, device {device_name}, "
        f"library {args.library} (EW_VERSION {library.version}), seed {args.seed}"
    )
    missing = [d.torch_name for d in DTYPES if d.torch is None]
    if missing:
        print(f"this torch lacks {', '.join(missing)}: entries using them are skipped")

    generator = torch.Generator().manual_seed(args.seed)
    input_cache = {}
    rows = []
    entries = [(op, d, d) for op in (OP_ADD, OP_MUL, OP_RELU, OP_SCALE_ADD) for d in DTYPES]
    entries += [(OP_CAST, out, in_) for in_ in DTYPES for out in DTYPES]
    for op, out, in_ in entries:
        if not library.supported(op, out, in_):
            continue
        name = entry_name(op, out, in_)
        if out.torch is None or in_.torch is None:
            rows.append((name, "", "SKIP", 0, 0, "torch lacks the dtype", True))
            continue
        arity = 1 if op in (OP_RELU, OP_CAST) else 2
        key = (in_.name, arity)
        if key not in input_cache:
            input_cache[key] = make_inputs(in_, arity, args.random, generator)
        for alpha in alphas_for(op, out):
            status, elements, mismatches, text = compare(
                library, op, out, in_, alpha, input_cache[key], device
            )
            rows.append((name, alpha_text(alpha), status, elements, mismatches, text))

    print(
        f"\n{'entry':<22} {'alpha':<32} {'status':<6} {'elements':>9} {'mismatch':>9}  first mismatch / note"
    )
    for name, alpha, status, elements, mismatches, text in rows:
        print(f"{name:<22} {alpha:<32} {status:<6} {elements:>9} {mismatches:>9}  {text}")

    nan_passed, nan_failed = nan_report(library, device)

    counts = {}
    for row in rows:
        counts[row[2]] = counts.get(row[2], 0) + 1
    passed = counts.get("OK", 0) + nan_passed
    failed = counts.get("FAIL", 0) + counts.get("ERROR", 0) + nan_failed
    print(f"\nsummary: {len(rows)} comparisons: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(
        "  OK: same bits (NaN-ness alone where docs/semantics.md leaves NaN bits to the library); FAIL: "
        "differs; SKIP: torch cannot (not counted); ERROR: the library call failed (counted as failed)"
    )
    print(f"  NaN report: {nan_passed} lines matched, {nan_failed} differed")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # an unforeseen error must still end on the summary line, as a failure
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        print("0 passed, 1 failed")
        sys.exit(2)
