#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus fuzz/corpus/ for fuzz/fuzz_api.c: one small file per scenario, in the
harness's input format (an action byte, then its argument bytes; see the take_* readers there).
The action codes, the enum byte's window, the slots, alphas and kernel sources come from the one table
fuzz/fuzz_table.h, the enums' values and limits from include/elementwise.h.in, both parsed here.
Run from anywhere: python3 fuzz/make_seeds.py writes the files (they are committed; rerun after a
change to the format or the table). --check writes nothing and fails (exit 1) where the committed
seeds differ from these or the header's enums end past the table's last values (the ctest fuzz_seeds;
the ctest fuzz_api_seeds runs each seed once and fails where an action is not reached)."""
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = open(os.path.join(HERE, "fuzz_table.h")).read()
HEADER = open(os.path.join(HERE, "..", "include", "elementwise.h.in")).read()


def table_list(macro):  # the X(...) entries of one of the table's macros, in order
    body = re.search(r"#define %s\(X\)((?:.*\\\n)*.*)" % macro, TABLE).group(1)
    return [entry.split(",")[0].strip() for entry in re.findall(r"X\(([^)]*)\)", body)]


def table_value(name):
    return re.search(r"#define %s\s+\(?([-\w]+)\)?" % name, TABLE).group(1)


def header_enum(type_name):  # {member: value} of one of the header's enums
    body = re.search(r"typedef enum \{([^}]*)\} %s;" % type_name, HEADER).group(1)
    return {name: int(value) for name, value in re.findall(r"(EW_\w+)\s*=\s*(-?\d+)", body)}


def header_define(name):
    return int(re.search(r"#define %s\s+(\d+)" % name, HEADER).group(1))


ACTION = {name: code for code, name in enumerate(table_list("FUZZ_ACTIONS"))}
STATUS, DTYPE, OPS = header_enum("ew_status_t"), header_enum("ew_dtype_t"), header_enum("ew_op_t")
MODES = header_enum("ew_reduce_mode_t")
REDUCE_OPS = header_enum("ew_reduce_op_t")
FORMATS = header_enum("ew_block_format_t")
ENUM_FIRST, ENUM_SPAN = int(table_value("FUZZ_ENUM_FIRST")), int(table_value("FUZZ_ENUM_SPAN"))
ENUM_WIDE, SLOTS = int(table_value("FUZZ_ENUM_WIDE")), int(table_value("FUZZ_SLOTS"))
ALPHAS = [float(a) for a in table_list("FUZZ_ALPHAS")]
SOURCES = table_list("FUZZ_SOURCES")
MAX_DIMS, MAX_INPUTS = header_define("EW_MAX_DIMS"), header_define("EW_KERNEL_MAX_INPUTS")
MAX_PARAMS = header_define("EW_KERNEL_MAX_PARAMS")

OP = {name[len("EW_OP_"):].lower(): value for name, value in OPS.items()}
DT = {name[len("EW_"):].lower(): value for name, value in DTYPE.items()}
PAST_DTYPE, PAST_OP = max(DTYPE.values()) + 1, max(OPS.values()) + 1  # outside the enums, whatever they grow to
NULL_SLOT = SLOTS  # for handles and kernels alike
(MAKE, DESTROY, CREATE, GET, UNARY, BINARY, CAST, SCALE_ADD, INFO, STRIDED, BATCHED, KERNEL_CREATE, KERNEL_MAKE,
 KERNEL_LAUNCH, KERNEL_LAUNCH_STRIDED, KERNEL_DESTROY, QUANTIZE, QUANTIZE_STRIDED, DEQUANTIZE, DEQUANTIZE_STRIDED,
 AMAX, BLOCK_SCALES_SHAPE, QUANTIZE_BLOCKS, DEQUANTIZE_BLOCKS, KERNEL_CACHE_FILL, KERNEL_CREATE_OUTPUTS,
 KERNEL_CACHE_FILL_OUTPUTS, KERNEL_LAUNCH_BATCHED, KERNEL_MAKE_OUTPUTS, KERNEL_LAUNCH_OUTPUTS,
 SCALED_BATCHED) = (ACTION[name] for name in (
     "MAKE", "DESTROY", "CREATE", "GET", "UNARY", "BINARY", "CAST", "SCALE_ADD", "INFO", "STRIDED", "BATCHED",
     "KERNEL_CREATE", "KERNEL_MAKE", "KERNEL_LAUNCH", "KERNEL_LAUNCH_STRIDED", "KERNEL_DESTROY", "QUANTIZE",
     "QUANTIZE_STRIDED", "DEQUANTIZE", "DEQUANTIZE_STRIDED", "AMAX", "BLOCK_SCALES_SHAPE", "QUANTIZE_BLOCKS",
     "DEQUANTIZE_BLOCKS", "KERNEL_CACHE_FILL", "KERNEL_CREATE_OUTPUTS", "KERNEL_CACHE_FILL_OUTPUTS",
     "KERNEL_LAUNCH_BATCHED", "KERNEL_MAKE_OUTPUTS", "KERNEL_LAUNCH_OUTPUTS", "SCALED_BATCHED"))
ARCH = {name: code for code, name in enumerate(table_list("FUZZ_ARCHS"))}
MX, NVFP4 = FORMATS["EW_BLOCKS_MX"], FORMATS["EW_BLOCKS_NVFP4"]
ROUND_UP, SWIZZLED = (int(re.search(r"%s = (\d+)" % name, HEADER).group(1))
                      for name in ("EW_BLOCKS_ROUND_UP", "EW_BLOCKS_SWIZZLED"))
OVERWRITE, ACCUMULATE = MODES["EW_REDUCE_OVERWRITE"], MODES["EW_REDUCE_ACCUMULATE"]
LAST_MODE = max(MODES.values())


def u64(v):
    return struct.pack("<Q", v & (2**64 - 1))


def enum(v):  # take_enum_value: the table's window in one byte, anything else as a 32-bit value
    return bytes([v - ENUM_FIRST]) if ENUM_FIRST <= v < ENUM_FIRST + ENUM_SPAN else bytes([255]) + u64(v)


def n_small(n):  # 1 + lo + 256 * hi
    n -= 1
    return bytes([9, n & 255, n >> 8])


N_ZERO, N_ONE, N_MINUS_ONE, N_INT64_MIN, N_INT64_MAX, N_2_32_PLUS_5, N_2_62 = (bytes([k]) for k in range(7))


def n_any(v):
    return bytes([8]) + u64(v)


def ptr_null():
    return bytes([0])


def ptr_in_place():
    return bytes([1 << 2])


def ptr_near_out(delta):
    return bytes([2 << 2]) + u64(delta & 0xFFFF)


def ptr_top(below):
    return bytes([3 << 2, below])


def ptr_any(v):
    return bytes([4 << 2]) + u64(v)


def ptr_region(region, offset):
    return bytes([(5 << 2) | region]) + u64(offset)


def stream_default():
    return bytes([0])


def make(slot, device=0, sm=132, threads=2048):
    return bytes([MAKE, slot]) + enum(device) + u64(sm) + u64(threads)


def op_call(action, slot, op=None, out=None, src=None, n=n_small(1000), alpha=b"", pointers=None):
    body = bytes([action, slot])
    if action in (UNARY, BINARY):
        body += enum(op)
    body += enum(out)
    if action == CAST:
        body += enum(src)
    body += n + alpha
    pointers = pointers or [ptr_region(0, 0), ptr_region(1, 0), ptr_region(2, 0)]
    return body + b"".join(pointers) + stream_default()


def alpha(value):
    return bytes([ALPHAS.index(value)])


def alpha_bits(value):
    return bytes([255]) + struct.pack("<d", value)


R0, R1, R2 = ptr_region(0, 0), ptr_region(1, 0), ptr_region(2, 0)

# User-defined kernels. Sources by index (take_source): NULL, then short bodies that are never compiled.
SRC_NULL, SRC_IN0, SRC_EMPTY, SRC_SCALE_ADD, SRC_NOT_CODE = (
    SOURCES.index(name) for name in ("NULL_SOURCE", "IN0", "EMPTY", "SCALE_ADD_BODY", "NOT_CODE"))


def count(c, maximum):  # take_count: -2 .. maximum + 1 in one byte, anything else as a 32-bit value
    return bytes([c + 2]) if -2 <= c <= maximum + 1 else bytes([255]) + u64(c)


def spec(source=SRC_IN0, out=DT["f32"], n_inputs=1, in_dtypes=(), n_params=0, dtypes_null=False):
    dtypes = list(in_dtypes) + [DT["f32"]] * (MAX_INPUTS - len(in_dtypes))  # always 4 read
    return (bytes([source]) + enum(out) + count(n_inputs, MAX_INPUTS) + bytes([0 if dtypes_null else 128])
            + b"".join(enum(d) for d in dtypes) + count(n_params, MAX_PARAMS))


def kernel_create(handle_slot, output_null=False, **kw):
    return bytes([KERNEL_CREATE, handle_slot]) + spec(**kw) + bytes([0 if output_null else 128])


def kernel_cache_fill(arch="SM_90", **kw):
    return bytes([KERNEL_CACHE_FILL]) + spec(**kw) + bytes([ARCH[arch]])


NONE, ABS_MAX, SUM = (REDUCE_OPS[name] for name in ("EW_REDUCE_NONE", "EW_REDUCE_ABS_MAX", "EW_REDUCE_SUM"))
CAST_AMAX = ((DT["f32"], NONE), (DT["f32"], ABS_MAX))  # one array, one reduction: the form this release takes


def outputs(entries=CAST_AMAX, n=None, null=False):  # take_outputs: the count, the array's NULL, 4 entries
    entries = list(entries) + [(DT["f32"], NONE)] * (4 - len(entries))
    return (count(len(entries) if n is None else n, 4) + bytes([0 if null else 128])
            + b"".join(enum(d) + enum(op) for d, op in entries))


def kernel_create_outputs(handle_slot, output_null=False, outs=outputs(), **kw):
    return bytes([KERNEL_CREATE_OUTPUTS, handle_slot]) + spec(**kw) + outs + bytes([0 if output_null else 128])


def kernel_cache_fill_outputs(arch="SM_90", outs=outputs(), **kw):
    return bytes([KERNEL_CACHE_FILL_OUTPUTS]) + spec(**kw) + outs + bytes([ARCH[arch]])


def kernel_make(kernel_slot, handle_slot, **kw):
    return bytes([KERNEL_MAKE, kernel_slot, handle_slot]) + spec(**kw)


K_OUT, K_INPUTS = R0, [R1, R2, ptr_region(3, 0), ptr_region(1, 0x8000)]


def kernel_launch(kernel_slot, n=n_small(1000), out=K_OUT, inputs=None, inputs_null=False, params_null=False):
    inputs = inputs or K_INPUTS
    return (bytes([KERNEL_LAUNCH, kernel_slot]) + n + out + bytes([0 if inputs_null else 128]) + b"".join(inputs)
            + bytes([0 if params_null else 128]) + stream_default())


def kernel_destroy(kernel_slot):
    return bytes([KERNEL_DESTROY, kernel_slot])

# Strided views (take_views): ndim, then per dimension (EW_MAX_DIMS + 2 of them) the extent and each
# operand's stride, then whether the shape is NULL (ndim > 0) and which strides are NULL.
def extent(e):
    if 0 <= e <= 5:
        return bytes([e])
    if e == -1:
        return bytes([250, 2])  # take_n: -1
    return bytes([200]) + u64(e)  # a 32-bit value


def stride(v):  # take_stride
    if v in (0, 1, -1):
        return bytes([{0: 0, 1: 1, -1: 2}[v]])
    if -16 <= v <= 15:
        return bytes([((v + 16) << 3) | 3])
    if v == -2**63:
        return bytes([4])
    if v == 2**63 - 1:
        return bytes([5])
    return bytes([6]) + u64(v)


def views(ndim, shape, strides, shape_null=False):
    """strides: one list per operand (missing dimensions 0), None for a NULL strides pointer."""
    body = bytes([ndim + 1])
    for d in range(MAX_DIMS + 2):
        body += extent(shape[d] if d < len(shape) else 1)
        for k in strides:
            body += stride(k[d] if k is not None and d < len(k) else 0)
    if ndim > 0:
        body += bytes([0 if shape_null else 255])
    return body + bytes([sum(1 << k for k, v in enumerate(strides) if v is None)])


# the strided call entries (action_strided, action_batched): unary, binary, cast, scale_add
E_UNARY, E_BINARY, E_CAST, E_SCALE_ADD = range(4)


def entry_head(entry, op=None, dtype=None, src=None, alpha_byte=b""):
    body = bytes([entry]) + (enum(op) if entry in (E_UNARY, E_BINARY) else b"") + enum(dtype)
    return body + (enum(src) if entry == E_CAST else b"") + (alpha_byte if entry == E_SCALE_ADD else b"")


def strided(slot, entry, dtype, ndim, shape, strides=(None, None, None), pointers=(R0, R1, R2), op=None, src=None,
            alpha_byte=b"", shape_null=False):
    strides = list(strides) + [None] * (3 - len(strides))
    return (bytes([STRIDED, slot]) + entry_head(entry, op, dtype, src, alpha_byte)
            + views(ndim, shape, strides, shape_null) + b"".join(pointers))


def list_count(c):  # count: c < 16 reads as -c, else c % 7
    return bytes([-c]) if c <= 0 else bytes([21 + c])


def list_n(v):  # an entry's n: 0, 1..99 in one byte, else take_n
    if v == 0:
        return bytes([0])
    if 64 <= v <= 99:
        return bytes([v])
    if 1 <= v < 64:
        return bytes([v + 100])
    return bytes([200]) + (N_MINUS_ONE if v == -1 else n_any(v))


def batched(slot, entry, dtype, entries, op=None, src=None, alpha_byte=b"", count=None, null_array=None):
    """entries: (n, out, a, b) pointers each; up to six, the rest empty."""
    body = bytes([BATCHED, slot]) + entry_head(entry, op, dtype, src, alpha_byte)
    body += list_count(len(entries) if count is None else count)
    entries = list(entries) + [(0, ptr_null(), ptr_null(), ptr_null())] * (6 - len(entries))
    body += bytes([0 if null_array is None else 224 + null_array])
    return body + b"".join(list_n(n) + o + a + b for n, o, a, b in entries)


def kernel_strided(kernel_slot, ndim, shape, strides=(), out=K_OUT, inputs=None, inputs_null=False,
                   in_strides_null=False, params_null=False):
    strides = list(strides) + [None] * (1 + MAX_INPUTS - len(strides))
    return (bytes([KERNEL_LAUNCH_STRIDED, kernel_slot]) + views(ndim, shape, strides) + out
            + b"".join(inputs or K_INPUTS) + bytes([0 if inputs_null else 128, 0 if in_strides_null else 128,
                                                    0 if params_null else 128]))


# The scaled casts (take_scalar, take_mode): a device float NULL, inside out or x, on the other scalar,
# anything, in region 3 at any alignment, or aligned there past the operands.
def scalar_null():
    return bytes([0])


def scalar_in_out(offset):
    return bytes([1]) + u64(offset)


def scalar_in_x(offset):
    return bytes([2]) + u64(offset)


def scalar_other():
    return bytes([3])


def scalar_any(v):
    return bytes([4]) + u64(v)


def scalar_region(offset):
    return bytes([5]) + u64(offset)


def scalar(k):  # aligned to 4, apart from the operands: k in 0..255
    return bytes([6, k])


def mode(m):  # take_mode: -1 .. LAST_MODE + 1 in one byte, anything else as a 32-bit value
    return bytes([m + 1]) if -1 <= m <= LAST_MODE + 1 else bytes([255]) + u64(m)


S0, S1 = scalar(0), scalar(1)


def quantize(slot, out, src, n=n_small(1000), pointers=(R0, R1), scale=S0, amax=S1, amax_mode=OVERWRITE):
    return (bytes([QUANTIZE, slot]) + enum(out) + enum(src) + n + b"".join(pointers) + scale + amax
            + mode(amax_mode) + stream_default())


def quantize_strided(slot, out, src, ndim, shape, strides=(None, None), pointers=(R0, R1), scale=S0, amax=S1,
                     amax_mode=OVERWRITE, shape_null=False):
    return (bytes([QUANTIZE_STRIDED, slot]) + enum(out) + enum(src) + views(ndim, shape, list(strides), shape_null)
            + b"".join(pointers) + scale + amax + mode(amax_mode))


def dequantize(slot, out, src, n=n_small(1000), pointers=(R0, R1), scale_inv=S0):
    return bytes([DEQUANTIZE, slot]) + enum(out) + enum(src) + n + b"".join(pointers) + scale_inv + stream_default()


def dequantize_strided(slot, out, src, ndim, shape, strides=(None, None), pointers=(R0, R1), scale_inv=S0,
                       shape_null=False):
    return (bytes([DEQUANTIZE_STRIDED, slot]) + enum(out) + enum(src) + views(ndim, shape, list(strides), shape_null)
            + b"".join(pointers) + scale_inv)


def amax(slot, dtype, n=n_small(1000), x=R1, amax_pointer=S1, amax_mode=OVERWRITE):
    return bytes([AMAX, slot]) + enum(dtype) + n + x + amax_pointer + mode(amax_mode) + stream_default()


SCALE_ADD_CASES = [("bool", 1.0), ("bool", 2.0), ("i8", 127.0), ("i8", 128.0), ("u8", -1.0), ("u8", 255.0),
                   ("i16", 32768.0), ("i32", -2147483649.0), ("i64", 2.0**63), ("i64", -2.0**63),
                   ("f16", 1e300), ("bf16", 0.5)]
INFO_CASES = [(1, 9, 9), (4, 1, 12), (3, 1, 1), (5, 11, 11), (0, 0, 0), (PAST_OP, PAST_DTYPE, PAST_DTYPE),
              (-1, 5, 5), (ENUM_FIRST + ENUM_SPAN - 1,) * 3,
              (OP["quantize"], DT["f8e4m3"], DT["f64"]), (OP["quantize"], DT["f16"], DT["f32"]),
              (OP["dequantize"], DT["bf16"], DT["f8e5m2"]), (OP["dequantize"], DT["f8e4m3"], DT["f8e4m3"]),
              (OP["amax"], DT["f32"], DT["f32"]), (OP["amax"], DT["f32"], DT["f16"]), (OP["amax"], DT["i8"], DT["i8"]),
              (OP["cast"], DT["f4e2m1"], DT["f32"]), (OP["quantize"], DT["f4e2m1"], DT["bf16"]),  # e2m1: no op
              (OP["cast"], DT["f8e8m0"], DT["f8e8m0"]), (OP["cast"], DT["bool"], DT["f8e8m0"]),  # e8m0: the cast
              (OP["relu"], DT["f8e8m0"], DT["f8e8m0"]), (OP["dequantize"], DT["f32"], DT["f8e8m0"])]  # alone

seeds = {
    "valid_binary_f32": [make(0), op_call(BINARY, 0, OP["add"], DT["f32"])],
    "valid_unary_cast_scale_add": [
        make(0), op_call(UNARY, 0, OP["relu"], DT["f16"]), op_call(CAST, 0, out=DT["bf16"], src=DT["f32"]),
        op_call(CAST, 0, out=DT["f8e8m0"], src=DT["f64"]), op_call(SCALE_ADD, 0, out=DT["f64"], alpha=alpha(0.5))],
    "n_zero_null_pointers": [
        make(0), op_call(BINARY, 0, OP["mul"], DT["i32"], n=N_ZERO, pointers=[ptr_null()] * 3)],
    "negative_and_huge_n": [
        make(1), op_call(BINARY, 1, OP["add"], DT["u8"], n=N_MINUS_ONE),
        op_call(UNARY, 1, OP["relu"], DT["i64"], n=N_INT64_MIN),
        op_call(CAST, 1, out=DT["f16"], src=DT["i8"], n=N_2_32_PLUS_5),
        op_call(BINARY, 1, OP["add"], DT["f64"], n=N_INT64_MAX),
        op_call(BINARY, 1, OP["add"], DT["f64"], n=N_2_62)],
    "misaligned_pointers": [
        make(0), op_call(BINARY, 0, OP["add"], DT["f32"], pointers=[ptr_region(0, 2), R1, R2]),
        op_call(CAST, 0, out=DT["u8"], src=DT["i64"],
                pointers=[ptr_region(0, 1), ptr_region(1, 4), ptr_null()])],
    "overlap_and_in_place": [
        make(0), op_call(BINARY, 0, OP["add"], DT["f16"], pointers=[R0, ptr_in_place(), ptr_in_place()]),
        op_call(BINARY, 0, OP["add"], DT["f16"], pointers=[R0, ptr_near_out(2), R1]),
        op_call(CAST, 0, out=DT["f32"], src=DT["f16"], pointers=[R0, ptr_in_place(), ptr_null()]),
        op_call(CAST, 0, out=DT["i32"], src=DT["f32"], pointers=[R0, ptr_in_place(), ptr_null()])],
    "end_of_address_space": [
        make(0), op_call(BINARY, 0, OP["add"], DT["u8"], n=n_small(300), pointers=[ptr_top(255), R1, R2]),
        op_call(UNARY, 0, OP["relu"], DT["f64"], n=n_any(2**61 - 1),
                pointers=[R0, ptr_region(1, 8), ptr_null()])],
    "scale_add_alphas": [make(2)]
    + [op_call(SCALE_ADD, 2, out=DT[d], alpha=alpha(a)) for d, a in SCALE_ADD_CASES]
    + [op_call(SCALE_ADD, 2, out=DT["i32"], alpha=alpha_bits(float("nan"))),
       op_call(SCALE_ADD, 2, out=DT["f32"], alpha=alpha_bits(float("inf"))),
       op_call(SCALE_ADD, 2, out=DT["i8"], alpha=alpha(128.0), n=N_ZERO)],
    "unsupported_ops_and_dtypes": [
        make(0), op_call(UNARY, 0, OP["add"], DT["f32"]), op_call(BINARY, 0, OP["relu"], DT["f32"]),
        op_call(UNARY, 0, OP["relu"], DT["bool"]), op_call(BINARY, 0, OP["add"], DT["f8e4m3"]),
        op_call(CAST, 0, out=0, src=DT["f32"]), op_call(CAST, 0, out=DT["f32"], src=PAST_DTYPE),
        op_call(BINARY, 0, PAST_OP, DT["f32"]), op_call(BINARY, 0, 99999, DT["f32"]),
        op_call(SCALE_ADD, 0, out=DT["f8e5m2"], alpha=alpha(1.0)), op_call(BINARY, 0, OP["mul"], DT["f8e8m0"]),
        op_call(UNARY, 0, -1, -1)],
    "destroyed_and_null_handles": [
        make(0), bytes([DESTROY, 0]), op_call(BINARY, 0, OP["add"], DT["f32"]), bytes([DESTROY, 0]),
        op_call(UNARY, NULL_SLOT, OP["relu"], DT["f32"]), bytes([DESTROY, NULL_SLOT]),
        bytes([GET, 0, 0, 255, GET, NULL_SLOT, 1, 255])],
    "handle_reuse": [
        make(0), bytes([DESTROY, 0]), make(1, device=3), op_call(CAST, 0, out=DT["f16"], src=DT["f32"]),
        bytes([DESTROY, 0, DESTROY, 1])],
    "getters": [make(3, device=7, sm=1, threads=64),
                bytes([GET, 3, 0, 255, GET, 3, 1, 255, GET, 3, 2, 255, GET, 3, 2, 0])],
    "create": [bytes([CREATE]) + enum(0) + bytes([0]), bytes([CREATE]) + enum(-1) + bytes([1]),
               bytes([CREATE]) + enum(2**31 - 1) + bytes([0])],
    "info": [bytes([INFO]) + enum(o) + enum(a) + enum(b) for o, a, b in INFO_CASES],
    "kernel_cache_fill": [
        kernel_cache_fill(in_dtypes=[DT["f32"]]),  # valid: stops at the cache, which the harness turns off
        kernel_cache_fill("SM_100", source=SRC_SCALE_ADD, out=DT["f16"], n_inputs=2,
                          in_dtypes=[DT["f16"], DT["bf16"]], n_params=1),
        *(kernel_cache_fill(arch) for arch in ARCH if arch not in ("SM_90", "SM_100")),
        kernel_cache_fill(source=SRC_NULL), kernel_cache_fill(n_inputs=0), kernel_cache_fill(dtypes_null=True),
        kernel_cache_fill(out=PAST_DTYPE), kernel_cache_fill("NULL_ARCH", n_params=9),  # the spec first
    ],
    "kernel_create_outputs": [
        make(0), make(1), bytes([DESTROY, 1]),
        kernel_create_outputs(0, outs=outputs(n=2)),  # valid: stops at the device
        kernel_create_outputs(0, outs=outputs(((DT["f64"], SUM), (DT["bf16"], NONE)), n=2), n_inputs=2,
                              in_dtypes=[DT["f16"], DT["bf16"]], n_params=1),
        kernel_create_outputs(0, output_null=True), kernel_create_outputs(NULL_SLOT, outs=outputs(n=2)),
        kernel_create_outputs(1, outs=outputs(n=2)),
        kernel_create_outputs(0, outs=outputs(n=0)), kernel_create_outputs(0, outs=outputs(n=5)),
        kernel_create_outputs(0, outs=outputs(n=2, null=True)),
        kernel_create_outputs(0, outs=outputs(((DT["f32"], NONE), (DT["f32"], SUM + 1)), n=2)),
        kernel_create_outputs(0, outs=outputs(((DT["f32"], -1), (DT["f32"], ABS_MAX)), n=2)),
        kernel_create_outputs(0, outs=outputs(((DT["f32"], NONE), (DT["f16"], NONE)), n=2)),  # two arrays
        kernel_create_outputs(0, outs=outputs(((DT["f32"], ABS_MAX), (DT["f32"], SUM)), n=2)),
        kernel_create_outputs(0, outs=outputs(n=3)),  # a third: an array (the default entry)
        kernel_create_outputs(0, outs=outputs(((DT["f32"], NONE), (DT["f16"], ABS_MAX)), n=2)),  # the scalar's dtype
        kernel_create_outputs(0, outs=outputs(((PAST_DTYPE, NONE), (DT["f32"], ABS_MAX)), n=2)),
        # the outputs before the handle, the spec before the scalar's dtype
        kernel_create_outputs(NULL_SLOT, outs=outputs(n=0)), kernel_create_outputs(0, outs=outputs(n=2), source=SRC_NULL),
        kernel_create_outputs(0, outs=outputs(((DT["f32"], NONE), (DT["i8"], ABS_MAX)), n=2), n_inputs=0)],
    "kernel_cache_fill_outputs": [
        kernel_cache_fill_outputs(outs=outputs(n=2)),  # valid: stops at the cache, which the harness turns off
        kernel_cache_fill_outputs("SM_100", outs=outputs(((DT["f64"], SUM), (DT["f16"], NONE)), n=2)),
        kernel_cache_fill_outputs("SM_90A", outs=outputs(n=2)), kernel_cache_fill_outputs(outs=outputs(n=1)),
        kernel_cache_fill_outputs(outs=outputs(n=2, null=True)),
        kernel_cache_fill_outputs(outs=outputs(((DT["f32"], NONE), (DT["u8"], ABS_MAX)), n=2)),
        kernel_cache_fill_outputs("NULL_ARCH", outs=outputs(n=2), n_params=9),  # the spec before the arch
        kernel_cache_fill_outputs("NULL_ARCH", outs=outputs(n=9), source=SRC_NULL)],  # the outputs first
    "kernel_create": [
        make(0), make(1), bytes([DESTROY, 1]),
        kernel_create(0, in_dtypes=[DT["f32"]]),  # valid: stops at the device
        kernel_create(0, source=SRC_SCALE_ADD, out=DT["f16"], n_inputs=2, in_dtypes=[DT["f16"], DT["bf16"]],
                      n_params=1),
        kernel_create(0, output_null=True), kernel_create(NULL_SLOT), kernel_create(1),
        kernel_create(0, source=SRC_NULL), kernel_create(0, n_inputs=0), kernel_create(0, n_inputs=5),
        kernel_create(0, n_inputs=-1), kernel_create(0, n_inputs=2**31 - 1), kernel_create(0, dtypes_null=True),
        kernel_create(0, n_params=-1), kernel_create(0, n_params=9), kernel_create(0, n_params=-2**31),
        kernel_create(0, out=0), kernel_create(0, out=PAST_DTYPE), kernel_create(0, out=-1),
        kernel_create(0, n_inputs=2, in_dtypes=[DT["i8"], PAST_DTYPE]), kernel_create(0, n_inputs=4, in_dtypes=[1, 2, 3, 0]),
        kernel_create(0, n_inputs=3, in_dtypes=[DT["u8"], DT["i64"], DT["f8e5m2"], 0]),  # [3] is not read
        # several problems: the first in the check order is reported
        kernel_create(NULL_SLOT, output_null=True, source=SRC_NULL),
        kernel_create(0, source=SRC_NULL, out=0, n_inputs=9), kernel_create(0, n_inputs=0, dtypes_null=True),
        kernel_create(0, out=PAST_DTYPE, n_params=9), kernel_create(0, out=PAST_DTYPE, in_dtypes=[0]),
        kernel_create(0, source=SRC_EMPTY), kernel_create(0, source=SRC_NOT_CODE, n_params=MAX_PARAMS)],
    "kernel_make": [
        make(0), make(1), bytes([DESTROY, 1]),
        kernel_make(0, 0, in_dtypes=[DT["f32"]]), kernel_make(1, NULL_SLOT), kernel_make(1, 1),
        kernel_make(1, 0, source=SRC_NULL), kernel_make(1, 0, n_inputs=5), kernel_make(1, 0, dtypes_null=True),
        kernel_make(1, 0, n_params=9), kernel_make(1, 0, out=PAST_DTYPE), kernel_make(1, 0, n_inputs=2, in_dtypes=[1, 0]),
        kernel_make(1, 0, source=SRC_NOT_CODE, out=DT["bool"], n_inputs=4,
                    in_dtypes=[DT["f8e4m3"], DT["i16"], DT["u8"], DT["f64"]], n_params=MAX_PARAMS),
        kernel_make(0, 0, out=DT["i64"]),  # replaces the slot's live kernel
        kernel_launch(0), kernel_launch(1)],
    "kernel_launch": [
        make(0),
        kernel_make(0, 0, in_dtypes=[DT["f32"]]),
        kernel_make(1, 0, source=SRC_SCALE_ADD, out=DT["f16"], n_inputs=2, in_dtypes=[DT["f16"], DT["f16"]],
                    n_params=1),
        kernel_make(2, 0, out=DT["u8"], n_inputs=3, in_dtypes=[DT["i8"], DT["f64"], DT["bf16"]], n_params=2),
        kernel_make(3, 0, out=DT["f64"], n_inputs=4, in_dtypes=[DT["bool"], DT["i32"], DT["f8e4m3"], DT["i64"]],
                    n_params=MAX_PARAMS),
        kernel_launch(0), kernel_launch(1), kernel_launch(2), kernel_launch(3),  # valid: stop at the device
        kernel_launch(3, n=N_ZERO, out=ptr_null(), inputs=[ptr_null()] * 4, inputs_null=True, params_null=True),
        kernel_launch(2, n=N_MINUS_ONE), kernel_launch(1, n=N_INT64_MIN, inputs_null=True),
        kernel_launch(0, n=N_INT64_MAX), kernel_launch(3, n=N_2_62), kernel_launch(1, n=N_2_32_PLUS_5),
        kernel_launch(0, inputs_null=True), kernel_launch(0, params_null=True),  # no params: NULL is fine
        kernel_launch(1, params_null=True), kernel_launch(3, inputs_null=True, params_null=True)],
    "kernel_launch_pointers": [
        make(0),
        kernel_make(0, 0, in_dtypes=[DT["f32"]]),
        kernel_make(1, 0, out=DT["f16"], n_inputs=2, in_dtypes=[DT["f16"], DT["f32"]]),
        kernel_make(2, 0, out=DT["i8"], n_inputs=4, in_dtypes=[DT["i8"]] * 4),
        kernel_launch(0, out=ptr_null()), kernel_launch(0, out=ptr_region(0, 2)),
        kernel_launch(0, inputs=[ptr_region(1, 2)] + K_INPUTS[1:]),
        kernel_launch(0, inputs=[ptr_null()] + K_INPUTS[1:]),
        kernel_launch(0, inputs=[K_INPUTS[0], ptr_null(), ptr_null(), ptr_null()]),  # unread entries NULL
        kernel_launch(1, inputs=[K_INPUTS[0], ptr_region(2, 2)] + K_INPUTS[2:]),
        kernel_launch(1, inputs=[K_INPUTS[0], ptr_null()] + K_INPUTS[2:]),
        kernel_launch(1, inputs=[ptr_in_place()] + K_INPUTS[1:]),  # f16 in place of f16
        kernel_launch(1, inputs=[K_INPUTS[0], ptr_in_place()] + K_INPUTS[2:]),  # f32 in place of f16
        kernel_launch(1, inputs=[ptr_near_out(2)] + K_INPUTS[1:]),
        kernel_launch(1, inputs=[ptr_near_out(-0x800)] + K_INPUTS[1:]),
        kernel_launch(2, inputs=[ptr_in_place()] * 4),
        kernel_launch(2, inputs=K_INPUTS[:3] + [ptr_near_out(999)]),
        kernel_launch(2, inputs=K_INPUTS[:3] + [ptr_near_out(1000)]),
        kernel_launch(2, inputs=K_INPUTS[:3] + [ptr_region(3, 0x123)]),  # i8: any address is aligned
        kernel_launch(2, inputs=K_INPUTS[:3] + [ptr_null()]),
        kernel_launch(0, n=n_small(300), out=ptr_top(255)),
        kernel_launch(0, n=n_small(64), inputs=[ptr_top(255)] + K_INPUTS[1:]),
        kernel_launch(2, n=n_small(300), inputs=K_INPUTS[:3] + [ptr_top(255)]),
        kernel_launch(1, inputs=[ptr_any(0xDEADBEEF00000000), ptr_any(8)] + K_INPUTS[2:])],
    "kernel_destroy_and_handles": [
        make(0), make(1),
        kernel_make(0, 0, in_dtypes=[DT["f32"]]), kernel_make(1, 1, n_inputs=2, in_dtypes=[DT["i32"], DT["i32"]]),
        kernel_destroy(0), kernel_launch(0), kernel_launch(0, n=N_ZERO), kernel_destroy(0),
        kernel_destroy(NULL_SLOT), kernel_launch(NULL_SLOT), kernel_launch(NULL_SLOT, n=N_ZERO),
        kernel_make(2, 0, in_dtypes=[DT["f32"]]),  # may reuse the destroyed kernel's memory
        kernel_launch(0), kernel_launch(2),
        bytes([DESTROY, 1]), kernel_launch(1), kernel_launch(1, n=N_ZERO),  # its handle is gone
        make(3), kernel_launch(1),  # the handle's memory made live again
        kernel_destroy(1), kernel_destroy(1), kernel_destroy(3),
        bytes([DESTROY, 0]), kernel_launch(2, n=N_MINUS_ONE)],  # left live for the cleanup
    "fake_pointers": [
        make(0), op_call(BINARY, 0, OP["mul"], DT["i64"],
                         pointers=[ptr_any(0xDEADBEEF00000000), ptr_any(8), ptr_any(0x7F0000000000)])],
}



def entries(count, n=50, **changes):
    """count valid entries of n elements (regions 0, 1, 2 for out, a, b; 4 KiB apart); changes[i]
    replaces entry i's (n, out, a, b)."""
    return [changes.get(f"e{i}", (n, ptr_region(0, 0x1000 * i), ptr_region(1, 0x1000 * i), ptr_region(2, 0x1000 * i)))
            for i in range(count)]


F32, F16 = DT["f32"], DT["f16"]
seeds.update({
    # The strided calls: every rule of the strided group on each side, and out's nesting rule.
    "strided_layouts": [
        make(0),
        strided(0, E_BINARY, F32, 2, [4, 3], (None, None, [0, 1]), op=OP["add"]),  # [N,C] + [C]: valid
        strided(0, E_UNARY, F32, 2, [3, 2], ([2, 3], None), op=OP["relu"]),  # distinct, not nested: refused
        strided(0, E_UNARY, F32, 2, [3, 2], ([1, 3], [1, 3]), op=OP["relu"], pointers=(R0, ptr_in_place(), R2)),
        strided(0, E_UNARY, F32, 2, [3, 2], ([3, 2], None), op=OP["relu"]),  # nested: valid
        strided(0, E_UNARY, F32, 2, [2, 2], ([2, 2], None), op=OP["relu"]),  # equal strides: refused
        strided(0, E_CAST, F16, 2, [4, 3], (None, [1, 4]), src=F32),  # transposed input: valid
        strided(0, E_CAST, DT["f8e4m3"], 2, [4, 3], ([8, -2], None), src=F32,
                pointers=(ptr_region(0, 0x100), R1, R2)),  # padded, reversed out: valid
        strided(0, E_SCALE_ADD, DT["f64"], 2, [2, 3], ([0, 1], None, None), alpha_byte=alpha(0.5)),  # stride 0
        strided(0, E_SCALE_ADD, DT["i8"], 1, [5], alpha_byte=alpha(128.0)),  # alpha
        strided(0, E_SCALE_ADD, DT["i8"], 1, [5], alpha_byte=alpha(127.0)),
        strided(0, E_BINARY, F32, 2, [4, 3], ([-3, -1], [-3, -1], None), op=OP["mul"],
                pointers=(ptr_region(0, 0x100), ptr_in_place(), R2)),  # reversed, in place: valid
        strided(0, E_BINARY, F32, 2, [4, 3], (None, [3, 1], [-3, -1]), op=OP["mul"],
                pointers=(R0, R1, ptr_in_place())),  # in place with other strides: refused
        strided(0, E_BINARY, F32, 2, [4, 3], (None, None, None), op=OP["add"],
                pointers=(R0, ptr_near_out(4), R2)),  # shifted overlap: refused
        strided(0, E_BINARY, F32, 2, [0, 3], op=OP["add"], pointers=(ptr_null(),) * 3),  # empty: nothing to do
        strided(0, E_BINARY, F32, 0, [], op=OP["add"], shape_null=True),  # one element, shape NULL: valid
        strided(0, E_BINARY, F32, 9, [2] * 10, op=OP["add"]),  # ndim
        strided(0, E_BINARY, F32, -1, [], op=OP["add"]),
        strided(0, E_BINARY, F32, 2, [4, 3], op=OP["add"], shape_null=True),
        strided(0, E_BINARY, F32, 2, [4, -1], op=OP["add"]),  # a negative extent
        strided(0, E_BINARY, F32, 2, [2**31, 2**31 + 5], op=OP["add"]),  # past int64 elements
        strided(0, E_BINARY, F32, 2, [4, 3], op=OP["add"], pointers=(ptr_region(0, 2), R1, R2)),  # misaligned
        strided(0, E_BINARY, F32, 2, [4, 3], op=OP["add"], pointers=(R0, ptr_null(), R2)),
        strided(0, E_BINARY, F32, 2, [4, 3], (None, [2**63 - 1, 1], None), op=OP["add"]),  # span past int64
        strided(0, E_BINARY, F32, 2, [4, 3], (None, [-16, 1], None), op=OP["add"]),  # before address 0
        strided(0, E_BINARY, DT["u8"], 1, [300], op=OP["add"], pointers=(ptr_top(255), R1, R2)),  # past 2^64
        strided(0, E_BINARY, F32, 2, [4, 3], op=OP["relu"]),  # not the entry's op
        strided(NULL_SLOT, E_BINARY, F32, 2, [4, 3], op=OP["add"])],
    # The lists: entry by entry.
    "batched_lists": [
        make(1),
        batched(1, E_BINARY, F32, entries(3), op=OP["add"]),  # valid
        batched(1, E_UNARY, F16, entries(2), op=OP["relu"]),
        batched(1, E_CAST, F16, entries(4), src=F32),
        batched(1, E_SCALE_ADD, DT["f64"], entries(2, n=40), alpha_byte=alpha(2.0)),
        batched(1, E_BINARY, F32, entries(3, e1=(50, ptr_region(0, 0x1002), R1, R2)), op=OP["add"]),  # misaligned
        batched(1, E_BINARY, F32, entries(3, e2=(-1, R0, R1, R2)), op=OP["add"]),  # entry 2: n = -1
        batched(1, E_BINARY, F32, entries(3, e0=(50, R0, ptr_near_out(8), R2)), op=OP["mul"]),  # overlap
        batched(1, E_BINARY, F32, entries(3, e1=(50, ptr_region(0, 0x1000), ptr_in_place(), ptr_in_place())),
                op=OP["mul"]),  # in place: valid
        batched(1, E_BINARY, F32, entries(2, e1=(50, ptr_null(), R1, R2)), op=OP["add"]),  # NULL out
        batched(1, E_BINARY, F32, entries(3, e0=(0, ptr_null(), ptr_null(), ptr_null()))
                + [(0, ptr_null(), ptr_null(), ptr_null())], op=OP["add"]),  # an empty entry, NULL pointers
        batched(1, E_BINARY, F32, [(0, ptr_null(), ptr_null(), ptr_null())] * 2, op=OP["add"]),  # no elements
        batched(1, E_BINARY, F32, [], op=OP["add"], null_array=0),  # count 0: arrays may be NULL
        batched(1, E_BINARY, F32, entries(2), op=OP["add"], count=-3),
        batched(1, E_BINARY, F32, entries(2), op=OP["add"], null_array=0),  # n NULL
        batched(1, E_BINARY, F32, entries(2), op=OP["add"], null_array=2),  # a NULL
        batched(1, E_UNARY, F32, entries(2), op=OP["relu"], null_array=3),  # b: not an array of unary
        batched(1, E_SCALE_ADD, DT["i8"], entries(2), alpha_byte=alpha(128.0)),  # alpha, before the list
        batched(1, E_SCALE_ADD, DT["i8"], [], alpha_byte=alpha(128.0)),
        batched(1, E_BINARY, F32, entries(2, e1=(2**62, R0, R1, R2)), op=OP["add"]),  # past 2^64
        batched(1, E_BINARY, DT["f8e5m2"], entries(2), op=OP["add"])],  # outside the catalogue
    # User kernels on views.
    "kernel_launch_strided": [
        make(0), make(1),
        kernel_make(0, 0, in_dtypes=[F32]),
        kernel_make(1, 0, out=F16, n_inputs=2, in_dtypes=[F16, F32], n_params=1),
        kernel_make(2, 1, out=DT["i8"], n_inputs=4, in_dtypes=[DT["i8"]] * 4, n_params=2),
        kernel_strided(0, 2, [4, 3], (None, [0, 1])),  # a broadcast: valid, a strided kernel
        kernel_strided(0, 2, [4, 3]),  # contiguous: the flat launch
        kernel_strided(0, 2, [3, 2], ([2, 3], None)),  # not nested: refused
        kernel_strided(0, 2, [3, 2], ([-1, 3], [-1, 3]), inputs=[ptr_in_place()] + K_INPUTS[1:]),  # in place
        kernel_strided(1, 2, [4, 3], params_null=True),  # params NULL, one taken: refused
        kernel_strided(1, 2, [4, 0], params_null=True),  # ... but not where the shape is empty
        kernel_strided(1, 2, [4, 3], inputs_null=True),  # inputs NULL: refused
        kernel_strided(1, 2, [4, 3], (None, [1, 4], [0, 0]), in_strides_null=True),  # all contiguous
        kernel_strided(1, 2, [4, 3], (None, [1, 4], [0, 0])),
        kernel_strided(2, 3, [2, 3, 4], ([12, 1, 3], None, [0, 0, 1], [4, 0, 1], None)),
        kernel_strided(2, 3, [2, 3, 4], ([12, 1, 3], None, None, None, None),
                       inputs=K_INPUTS[:3] + [ptr_near_out(5)]),  # the last input overlaps out
        kernel_strided(2, 8, [2] * 8, ([2**k for k in range(8)],), params_null=True),
        bytes([DESTROY, 1]), kernel_strided(2, 2, [4, 3]),  # its handle destroyed
        kernel_destroy(0), kernel_strided(0, 2, [4, 3]), kernel_strided(NULL_SLOT, 2, [4, 3])],
})

E4, E5, BF16, F64 = DT["f8e4m3"], DT["f8e5m2"], DT["bf16"], DT["f64"]
seeds.update({
    # The scaled casts: every call valid, then each rule of their scalars, dtypes, n and operands broken.
    "scaled_casts": [
        make(0), make(1), bytes([DESTROY, 1]),
        quantize(0, E4, F32),  # valid: stops at the device
        quantize(0, E5, BF16, amax=scalar_null(), amax_mode=7),  # no amax: its mode is not read
        quantize(0, E4, F64, amax_mode=ACCUMULATE),
        quantize(0, E4, F32, n=N_ZERO, pointers=(ptr_null(), ptr_null())),  # resets the amax: reaches the GPU
        quantize(0, E4, F32, n=N_ZERO, pointers=(ptr_null(), ptr_null()), amax_mode=ACCUMULATE),  # nothing to do
        quantize(0, E4, F16, n=N_ZERO, amax=scalar_null()),
        quantize(0, E4, F32, n=N_ZERO, scale=scalar_null()),  # the scale is checked even with nothing to do
        quantize(0, E4, F32, scale=scalar_region(2)), quantize(0, E4, F32, amax=scalar_region(0x101)),
        quantize(0, E4, F32, amax_mode=7), quantize(0, E4, F32, amax_mode=-1), quantize(0, E4, F32, n=N_MINUS_ONE),
        quantize(0, F16, F32), quantize(0, E4, E5), quantize(0, E5, DT["i32"]), quantize(0, E4, PAST_DTYPE),
        quantize(1, E4, F32), quantize(NULL_SLOT, E4, F32, n=N_ZERO),
        quantize(0, E4, F32, scale=scalar_in_out(8)), quantize(0, E4, F32, amax=scalar_in_x(16)),
        quantize(0, E4, F32, amax=scalar_in_out(996)), quantize(0, E4, F32, amax=scalar_other()),
        quantize(0, E4, F32, scale=scalar_in_x(4)),  # the scale may lie inside x: valid
        quantize(0, E4, F32, pointers=(ptr_null(), R1)), quantize(0, E4, F32, pointers=(R0, ptr_region(1, 2))),
        quantize(0, E5, F16, pointers=(R0, ptr_near_out(4))), quantize(0, E4, F32, scale=scalar_any(2**64 - 4)),
        dequantize(0, F32, E4), dequantize(0, BF16, E5), dequantize(0, F64, E4),  # valid
        dequantize(0, F32, E4, n=N_ZERO, pointers=(ptr_null(), ptr_null())),
        dequantize(0, F32, E4, scale_inv=scalar_null()), dequantize(0, F16, E5, n=N_ZERO, scale_inv=scalar_null()),
        dequantize(0, F32, E4, scale_inv=scalar_region(1)), dequantize(0, E4, F32), dequantize(0, F32, F16),
        dequantize(0, F32, E4, scale_inv=scalar_in_out(12)), dequantize(0, F16, E4, pointers=(R0, ptr_in_place())),
        dequantize(1, F32, E4), dequantize(0, F64, E5, n=N_INT64_MIN),
        amax(0, F32), amax(0, F64, amax_mode=ACCUMULATE), amax(0, BF16),  # valid
        amax(0, F32, n=N_ZERO, x=ptr_null()), amax(0, F16, n=N_ZERO, x=ptr_null(), amax_mode=ACCUMULATE),
        amax(0, F32, amax_pointer=scalar_null()), amax(0, F32, n=N_ZERO, amax_pointer=scalar_null()),
        amax(0, F32, amax_pointer=scalar_region(3)), amax(0, F32, amax_pointer=scalar_in_x(40)),
        amax(0, F32, amax_mode=2), amax(0, DT["i32"]), amax(0, E4), amax(0, F32, x=ptr_region(1, 1)),
        amax(0, F32, n=N_MINUS_ONE), amax(NULL_SLOT, F32),
        quantize_strided(0, E4, F32, 2, [4, 3], (None, [0, 1])),  # a broadcast x: valid, a strided kernel
        quantize_strided(0, E5, F16, 2, [4, 3]),  # contiguous: the flat call
        quantize_strided(0, E4, BF16, 2, [3, 2], ([2, 3], None)),  # out not nested: refused
        quantize_strided(0, E4, F32, 2, [4, 0], pointers=(ptr_null(), ptr_null())),  # empty, resets the amax
        quantize_strided(0, E4, F32, 2, [4, 0], amax_mode=ACCUMULATE),  # empty: nothing to do
        quantize_strided(0, E4, F32, 2, [4, 3], scale=scalar_null()), quantize_strided(0, E4, F32, 9, [2] * 10),
        quantize_strided(0, E4, F32, 2, [4, 3], ([-6, -2], None), pointers=(ptr_region(0, 64), R1),
                         scale=scalar_in_out(0)),  # inside out's padded, reversed span
        quantize_strided(0, E4, F32, 2, [4, 3], amax_mode=5), quantize_strided(0, F32, E4, 2, [4, 3]),
        dequantize_strided(0, F16, E4, 2, [4, 3], (None, [1, 4])),  # a transposed q: valid
        dequantize_strided(0, F32, E5, 0, [], shape_null=True),  # one element
        dequantize_strided(0, F32, E4, 2, [4, 3], pointers=(R0, ptr_near_out(3))),  # q inside out: refused
        dequantize_strided(0, F32, E4, 2, [4, 3], scale_inv=scalar_region(6)),
        dequantize_strided(0, F32, E4, 2, [4, -1]), dequantize_strided(0, E5, E4, 2, [4, 3]),
        dequantize_strided(1, F32, E4, 2, [4, 3])],
})

# The block-scaled casts (take_rows, take_cols, take_options): rows and cols from their lists in one
# byte, anything else through take_n; options 0-7 in one byte, anything else as a 32-bit value.
BLOCK_ROWS, BLOCK_COLS = [0, 1, 2, 127, 128, 129, 300, -1], [0, 16, 32, 48, 64, 96, 4096, 33, 8, -32]


def rows_(v):
    return bytes([BLOCK_ROWS.index(v)]) if v in BLOCK_ROWS else bytes([200]) + n_any(v)


def cols_(v):
    return bytes([BLOCK_COLS.index(v)]) if v in BLOCK_COLS else bytes([200]) + n_any(v)


def options_(v):
    return bytes([v]) if 0 <= v < 8 else bytes([224]) + u64(v)


def block_scales_shape(fmt, rows, cols, options=0, rows_null=False, cols_null=False):
    nulls = 0 if rows_null else 16 if cols_null else 255
    return bytes([BLOCK_SCALES_SHAPE]) + enum(fmt) + rows_(rows) + cols_(cols) + options_(options) + bytes([nulls])


def blocks(action, slot, fmt, out, src, rows=129, cols=96, pointers=(R0, R2, R1), options=0, g=scalar_null()):
    """pointers: out, scales, x (quantize) or q (dequantize)."""
    return (bytes([action, slot]) + enum(fmt) + enum(out) + enum(src) + rows_(rows) + cols_(cols)
            + b"".join(pointers) + options_(options) + g + stream_default())


def quantize_blocks(slot, fmt, out, src, **kw):
    return blocks(QUANTIZE_BLOCKS, slot, fmt, out, src, **kw)


def dequantize_blocks(slot, fmt, out, src, **kw):
    return blocks(DEQUANTIZE_BLOCKS, slot, fmt, out, src, **kw)


E2M1, E8M0, F16 = DT["f4e2m1"], DT["f8e8m0"], DT["f16"]
seeds.update({
    # The block-scaled casts: valid calls of each, then each rule of the shape, the options, the format and
    # dtypes, the global scale and the three buffers broken.
    "block_casts": [
        make(0), make(1), bytes([DESTROY, 1]),
        block_scales_shape(MX, 129, 96), block_scales_shape(MX, 129, 96, SWIZZLED),  # valid
        block_scales_shape(NVFP4, 300, 48, SWIZZLED | ROUND_UP), block_scales_shape(MX, 0, 0),
        block_scales_shape(NVFP4, 2**63 - 1, 0),  # no elements, INT64_MAX rows: row-major fits
        block_scales_shape(MX, -1, 32), block_scales_shape(MX, 1, 33), block_scales_shape(NVFP4, 1, 8),
        block_scales_shape(MX, 1, -32), block_scales_shape(MX, 1, 32, options=4),
        block_scales_shape(MX, 1, 32, options=2**31), block_scales_shape(MX, 2**62, 32),  # rows x cols past int64
        block_scales_shape(MX, 2**63 - 5, 0, SWIZZLED),  # swizzled rows round up past int64
        block_scales_shape(MX, 1, 32, rows_null=True), block_scales_shape(NVFP4, 1, 16, cols_null=True),
        block_scales_shape(0, 1, 32), block_scales_shape(3, 1, 32), block_scales_shape(-1, -1, 33, options=4),
        quantize_blocks(0, MX, E4, F32),  # valid: stops at the device
        quantize_blocks(0, MX, E5, BF16, options=ROUND_UP | SWIZZLED),
        quantize_blocks(0, MX, E2M1, F16, rows=1, cols=32, options=SWIZZLED),
        quantize_blocks(0, NVFP4, E2M1, F32, rows=128, cols=64, g=S0),
        quantize_blocks(0, NVFP4, E2M1, BF16, options=SWIZZLED),
        quantize_blocks(0, NVFP4, E2M1, F32, g=scalar_in_x(64)),  # the global scale inside x: read only
        quantize_blocks(0, MX, E4, F32, rows=0, pointers=(ptr_null(),) * 3),  # nothing to do
        quantize_blocks(0, NVFP4, E2M1, F16, cols=0, pointers=(ptr_null(),) * 3, options=SWIZZLED),
        quantize_blocks(0, MX, E8M0, F32), quantize_blocks(0, NVFP4, E4, F32), quantize_blocks(0, MX, E4, F64),
        quantize_blocks(0, MX, E2M1, E2M1), quantize_blocks(0, 0, E4, F32), quantize_blocks(0, 3, E2M1, F32),
        quantize_blocks(0, MX, E4, F32, rows=-1), quantize_blocks(0, MX, E4, F32, cols=48),
        quantize_blocks(0, NVFP4, E2M1, F32, cols=8), quantize_blocks(0, MX, E4, F32, options=4),
        quantize_blocks(0, NVFP4, E2M1, F32, options=ROUND_UP),
        quantize_blocks(0, MX, E4, F32, g=S0),  # MX takes no global scale
        quantize_blocks(0, NVFP4, E2M1, F32, g=scalar_region(2)),  # misaligned
        quantize_blocks(0, MX, E4, F32, pointers=(ptr_null(), R2, R1)),
        quantize_blocks(0, MX, E4, F32, pointers=(R0, ptr_null(), R1)),
        quantize_blocks(0, MX, E4, F32, pointers=(R0, R2, ptr_null())),
        quantize_blocks(0, MX, E4, F32, pointers=(R0, R2, ptr_region(1, 2))),  # x misaligned
        quantize_blocks(0, MX, E4, F32, pointers=(R0, ptr_near_out(8), R1)),  # the scales inside out
        quantize_blocks(0, MX, E4, F32, pointers=(R0, R2, ptr_in_place())),  # x on out
        quantize_blocks(0, MX, E4, F32, pointers=(R0, ptr_region(1, 0x100), R1)),  # the scales inside x
        quantize_blocks(0, NVFP4, E2M1, F32, g=scalar_in_out(8)),
        quantize_blocks(0, NVFP4, E2M1, F32, g=scalar_other()),  # on the scales
        quantize_blocks(0, NVFP4, E2M1, F32, rows=1, cols=64, pointers=(ptr_top(32), R2, R1),
                        g=scalar_any(2**64 - 4)),  # out up to the last byte, the global scale in its last 4
        quantize_blocks(1, MX, E4, F32), quantize_blocks(NULL_SLOT, MX, E4, F32, rows=0),
        dequantize_blocks(0, MX, F32, E4), dequantize_blocks(0, MX, F16, E2M1, options=SWIZZLED),  # valid
        dequantize_blocks(0, NVFP4, BF16, E2M1, g=S0), dequantize_blocks(0, NVFP4, F32, E2M1, g=scalar_in_x(4)),
        dequantize_blocks(0, MX, F32, E4, pointers=(R0, ptr_region(1, 0), ptr_region(1, 8))),  # q on the scales
        dequantize_blocks(0, MX, F32, E4, rows=0, pointers=(ptr_null(),) * 3),
        dequantize_blocks(0, MX, F64, E4), dequantize_blocks(0, NVFP4, F32, E5), dequantize_blocks(0, MX, E4, F32),
        dequantize_blocks(0, MX, F32, E4, pointers=(ptr_region(0, 2), R2, R1)),  # out misaligned
        dequantize_blocks(0, MX, F32, E4, pointers=(R0, R2, ptr_near_out(4))),  # q inside out
        dequantize_blocks(0, MX, F32, E4, pointers=(R0, ptr_near_out(16), R1)),  # the scales inside out
        dequantize_blocks(0, NVFP4, F32, E2M1, g=scalar_in_out(0)), dequantize_blocks(0, NVFP4, F32, E2M1, options=3),
        dequantize_blocks(1, MX, F32, E4)],
})


# User kernels over lists (action_kernel_launch_batched): the kernel, count (list_count), which array is
# NULL, params and entry_params, then six entries of n (list_n) and eight pointers each: the outputs'
# columns 0-3, then the inputs' 4-7. An input's ptr_in_place() is on the kernel's array output i % arrays,
# an output's on outputs[0]. Kernels of outputs come from ewi_user_kernel_make (kernel_make_outputs).
def kernel_make_outputs(kernel_slot, handle_slot, outs=outputs(n=2), **kw):
    return bytes([KERNEL_MAKE_OUTPUTS, kernel_slot, handle_slot]) + spec(**kw) + outs


COLUMNS = 8
NULL_N, NULL_OUTPUTS, NULL_INPUTS = 0, 1, 2


def null_outputs_column(j):
    return 3 + j


def null_inputs_column(i):
    return 7 + i


def column(j, entry, offset=0):  # column j of entry: apart from every other column and entry, aligned
    return ptr_region(j % 4, 0x2000 * (j // 4) + 0x400 * entry + offset)


def k_entries(count, n=50, **changes):
    """count valid entries of n elements; changes[f"e{i}"] = (n, {column: pointer}) replaces entry i's."""
    result = []
    for i in range(count):
        entry_n, replaced = changes.get(f"e{i}", (n, {}))
        result.append((entry_n, [replaced.get(j, column(j, i)) for j in range(COLUMNS)]))
    return result


def entry_params_(form):  # None: NULL; "array"; ("misaligned", 1-7); ("top", k doubles below); ("any", v)
    if form is None:
        return 0, b""
    if form == "array":
        return 2, b""
    kind, value = form
    if kind == "misaligned":  # 1 + byte % 7 bytes past the array
        return 3, bytes([value - 1])
    return (4, bytes([value])) if kind == "top" else (5, u64(value))


def kernel_batched(kernel_slot, entries, count=None, null_array=None, params=False, entry_params=None,
                   reduce_mode=OVERWRITE):
    form, extra = entry_params_(entry_params)
    body = bytes([KERNEL_LAUNCH_BATCHED, kernel_slot]) + list_count(len(entries) if count is None else count)
    body += bytes([0 if null_array is None else 224 + null_array, (form << 1) | int(params)]) + extra
    entries = list(entries) + [(0, [ptr_null()] * COLUMNS)] * (6 - len(entries))
    return (body + b"".join(list_n(n) + b"".join(pointers) for n, pointers in entries) + stream_default()
            + mode(reduce_mode))


I8, I32 = DT["i8"], DT["i32"]
THREE_ARRAYS = outputs(((F32, NONE), (BF16, NONE), (I8, NONE)), n=3)
seeds.update({
    "kernel_make_outputs": [
        make(0), make(1), bytes([DESTROY, 1]),
        kernel_make_outputs(0, 0, outs=THREE_ARRAYS, n_inputs=2, in_dtypes=[F32, BF16]),  # valid
        kernel_make_outputs(1, 0, outs=outputs(((F64, SUM), (F16, NONE)), n=2), n_params=3),  # a reduction
        kernel_make_outputs(2, 0, outs=outputs(n=0), out=I32),  # no outputs: a kernel of one output
        kernel_make_outputs(3, NULL_SLOT), kernel_make_outputs(3, 1),  # the handle
        kernel_make_outputs(3, 0, outs=outputs(n=5)), kernel_make_outputs(3, 0, outs=outputs(n=-1)),
        kernel_make_outputs(3, 0, outs=outputs(((F32, NONE), (F32, SUM + 1)), n=2)),
        kernel_make_outputs(3, 0, outs=outputs(((F32, ABS_MAX), (F32, SUM)), n=2)),  # two reductions
        kernel_make_outputs(3, 0, outs=outputs(((F32, SUM),), n=1)),  # no array
        kernel_make_outputs(3, 0, outs=outputs(((F32, NONE), (F16, ABS_MAX)), n=2)),  # the scalar's dtype
        kernel_make_outputs(3, 0, outs=outputs(((F32, NONE), (PAST_DTYPE, NONE)), n=2)),
        kernel_make_outputs(3, 0, outs=outputs(n=2), out=PAST_DTYPE),  # out_dtype is not read
        kernel_make_outputs(3, 0, outs=outputs(n=2), n_inputs=2, in_dtypes=[F32, PAST_DTYPE]),
        # the spec's INVALID_VALUE rules before the outputs', the outputs' before the dtypes'
        kernel_make_outputs(3, 0, outs=outputs(((F32, ABS_MAX), (F32, SUM)), n=2), n_params=9),
        kernel_make_outputs(3, 0, outs=outputs(((F32, -1),), n=1), n_inputs=1, in_dtypes=[PAST_DTYPE]),
        kernel_make_outputs(0, 0, outs=outputs(n=2), source=SRC_NULL),  # fails: the slot's kernel destroyed
        kernel_launch(1), kernel_launch(2), kernel_strided(1, 2, [4, 3]),  # kernels of outputs: refused
        kernel_batched(2, k_entries(2))],
    "kernel_launch_batched": [
        make(0), make(1),
        kernel_make(0, 0, in_dtypes=[F32]),
        kernel_make(1, 0, out=F16, n_inputs=2, in_dtypes=[F16, F32], n_params=2),
        kernel_make_outputs(2, 0, outs=THREE_ARRAYS, n_inputs=2, in_dtypes=[F32, BF16], n_params=1),
        kernel_make_outputs(3, 0, outs=outputs(n=2), in_dtypes=[F32]),  # an array and a reduction
        kernel_batched(0, k_entries(3)),  # valid: stops at the device
        kernel_batched(1, k_entries(2), entry_params="array"), kernel_batched(1, k_entries(2), params=True),
        kernel_batched(2, k_entries(3), params=True), kernel_batched(2, k_entries(6, n=99), entry_params="array"),
        # a reduction over a list: column 1 the entries' scalars
        kernel_batched(3, k_entries(2)), kernel_batched(3, [], count=0),  # valid; nothing to do
        kernel_batched(3, k_entries(2), reduce_mode=ACCUMULATE),
        kernel_batched(3, k_entries(2), reduce_mode=LAST_MODE + 1),  # the mode
        kernel_batched(3, k_entries(2, e0=(50, {1: column(1, 1)}))),  # one scalar shared: valid
        kernel_batched(3, k_entries(2), null_array=null_outputs_column(1)),  # the scalars' array NULL
        kernel_batched(3, k_entries(2, e1=(50, {1: ptr_null()}))),  # entry 1's scalar NULL
        kernel_batched(3, k_entries(2, e0=(50, {1: column(1, 0, 2)}))),  # misaligned
        kernel_batched(3, k_entries(2, e1=(50, {1: column(4, 1, 8)}))),  # inside its input
        kernel_batched(3, k_entries(2, e1=(50, {1: column(0, 1, 4)}))),  # inside its array
        kernel_batched(3, k_entries(2, e1=(0, {1: ptr_null()}))),  # an empty entry's scalar is checked
        kernel_batched(3, k_entries(2, n=0)),  # no elements, overwritten: the resets reach the device
        kernel_batched(3, k_entries(2, n=0), reduce_mode=ACCUMULATE),  # no elements, accumulated: nothing
        kernel_batched(1, k_entries(2), params=True, entry_params="array"),  # both
        kernel_batched(1, [], params=True, entry_params="array"),  # both, even for an empty list
        kernel_batched(1, k_entries(2)), kernel_batched(1, []),  # no params: refused, but where the list is empty
        kernel_batched(0, k_entries(2), entry_params="array"),  # entry_params of no params: valid
        kernel_batched(0, [], null_array=NULL_N), kernel_batched(0, [], null_array=NULL_OUTPUTS),
        kernel_batched(0, [(0, [ptr_null()] * COLUMNS)] * 3),  # no elements: nothing to do
        kernel_batched(0, k_entries(2), count=-2), kernel_batched(0, k_entries(2), null_array=NULL_N),
        kernel_batched(0, k_entries(2), null_array=NULL_OUTPUTS),
        kernel_batched(0, k_entries(2), null_array=NULL_INPUTS),
        kernel_batched(0, k_entries(2), null_array=null_outputs_column(0)),  # "out"
        kernel_batched(0, k_entries(2), null_array=null_outputs_column(1)),  # a column the kernel does not read
        kernel_batched(0, k_entries(2), null_array=null_inputs_column(0)),
        kernel_batched(0, k_entries(2), null_array=null_inputs_column(1)),
        kernel_batched(2, k_entries(2), params=True, null_array=null_outputs_column(2)),
        kernel_batched(2, k_entries(2), params=True, null_array=null_outputs_column(3)),
        kernel_batched(2, k_entries(2), params=True, null_array=null_inputs_column(1)),
        kernel_batched(1, k_entries(2), count=-1, params=True, entry_params="array"),  # both, before count
        kernel_batched(1, k_entries(2), null_array=NULL_INPUTS),  # inputs before params
        # entry_params: aligned to a double, its count x n_params doubles inside the address space
        kernel_batched(2, k_entries(3), entry_params=("misaligned", 4)),
        kernel_batched(2, k_entries(3), entry_params=("top", 2)),  # 24 bytes, 23 left: refused
        kernel_batched(2, k_entries(3), entry_params=("top", 3)),  # 31 left: valid
        kernel_batched(0, k_entries(3), entry_params=("top", 0)),  # no params: no bytes
        kernel_batched(2, k_entries(3), entry_params=("any", 0x10)),
        kernel_batched(2, [], entry_params=("misaligned", 1)),  # empty: not checked
        # the entries: each as the flat launch checks it, the arrays apart from each other
        kernel_batched(0, k_entries(3, e1=(50, {4: ptr_in_place()}))),  # in place: valid
        kernel_batched(0, k_entries(3, e2=(50, {4: ptr_near_out(4)}))),  # overlaps out
        kernel_batched(0, k_entries(3, e1=(-1, {}))),  # entry 1: n = -1
        kernel_batched(0, k_entries(3, e0=(0, {j: ptr_null() for j in range(COLUMNS)}))),  # empty entry: any pointers
        kernel_batched(0, k_entries(2, e1=(50, {0: column(0, 1, 2)}))),  # misaligned out
        kernel_batched(0, k_entries(2, e1=(2**62, {}))),  # past 2^64
        kernel_batched(1, k_entries(2, e0=(50, {5: ptr_null()})), params=True),
        kernel_batched(2, k_entries(2, e1=(50, {4: ptr_in_place(), 5: ptr_in_place()})), params=True),  # valid
        kernel_batched(2, k_entries(2, e1=(50, {1: ptr_in_place()})), params=True),  # outputs[1] on outputs[0]
        kernel_batched(2, k_entries(2, e0=(50, {2: ptr_near_out(100)})), params=True),  # outputs[2] in outputs[0]
        kernel_batched(2, k_entries(2, e0=(50, {1: column(1, 0, 1)})), params=True),  # bf16 misaligned
        kernel_batched(2, k_entries(2, e0=(50, {2: column(2, 0, 1)})), params=True),  # i8: any address
        kernel_batched(2, k_entries(2, e0=(50, {5: ptr_near_out(2)})), params=True),  # inputs[1] in outputs[1]
        kernel_batched(2, k_entries(2, e1=(50, {3: ptr_null(), 6: ptr_null(), 7: ptr_null()})), params=True),
        kernel_batched(0, k_entries(3), null_array=null_inputs_column(0), count=0),  # count 0: nothing read
        # the kernel and its handle
        kernel_destroy(0), kernel_batched(0, k_entries(2)), kernel_batched(NULL_SLOT, []),
        kernel_make(0, 1, in_dtypes=[F32]), bytes([DESTROY, 1]), kernel_batched(0, k_entries(2))],
})


# Launches of kernels of outputs (action_kernel_launch_outputs): the kernel, the form byte (bit 0 the
# strided form; bits 1-4 all clear: outputs NULL; bits 5-7 all clear: inputs NULL), the NULLs byte (below
# 4 modulo 4: out_strides NULL; its next two bits clear: in_strides NULL; 192 and up: params NULL), n or
# the views (columns 0-3 the outputs' strides by output index, 4-7 the inputs'), the mode, four output
# pointers (ptr_in_place: on outputs[0]), four inputs (ptr_in_place: on outputs[i]), the stream.
O_REGIONS = [ptr_region(k, 0) for k in range(4)]  # apart from each other (regions 1 MiB apart)
I_REGIONS = [ptr_region(k, 0x8000) for k in range(4)]


def kernel_launch_outputs(kernel_slot, n=n_small(100), view=None, m=OVERWRITE, outs=None, ins=None,
                          outputs_null=False, inputs_null=False, out_strides_null=False, in_strides_null=False,
                          params_null=False):
    form = (0 if view is None else 1) | (0 if outputs_null else 2) | (0 if inputs_null else 32)
    nulls = (0 if out_strides_null else 1) | (0 if in_strides_null else 4) | (192 if params_null else 0)
    body = bytes([KERNEL_LAUNCH_OUTPUTS, kernel_slot, form, nulls]) + (n if view is None else view) + mode(m)
    return body + b"".join(outs or O_REGIONS) + b"".join(ins or I_REGIONS) + stream_default()


def k_views(ndim, shape, strides=()):  # eight columns, missing ones contiguous (None)
    return views(ndim, shape, list(strides) + [None] * (8 - len(strides)))


def with_(regions, **at):  # regions with some replaced: with_(O_REGIONS, o1=ptr_null()), with_(I_REGIONS, i0=...)
    result = list(regions)
    for key, value in at.items():
        result[int(key[1:])] = value
    return result


seeds.update({
    "kernel_launch_outputs": [
        make(0), make(1),
        kernel_make(0, 0, in_dtypes=[F32]),  # one output: refused about "kernel"
        kernel_make_outputs(1, 0, outs=THREE_ARRAYS, n_inputs=2, in_dtypes=[F32, BF16], n_params=1),
        kernel_make_outputs(2, 0, outs=outputs(n=2), in_dtypes=[F32]),  # an array and an abs max
        kernel_launch_outputs(1), kernel_launch_outputs(2),  # valid: stop at the device
        kernel_launch_outputs(0), kernel_launch_outputs(1, outputs_null=True), kernel_launch_outputs(1, m=-1),
        kernel_launch_outputs(1, n=N_MINUS_ONE), kernel_launch_outputs(1, n=N_ZERO),
        kernel_launch_outputs(2, n=N_ZERO), kernel_launch_outputs(2, n=N_ZERO, m=ACCUMULATE),  # the reset
        kernel_launch_outputs(1, inputs_null=True), kernel_launch_outputs(1, params_null=True),
        kernel_launch_outputs(1, outs=with_(O_REGIONS, o1=ptr_in_place())),  # two arrays on one
        kernel_launch_outputs(1, ins=with_(I_REGIONS, i0=ptr_in_place())),  # an input in place: valid
        kernel_launch_outputs(2, outs=with_(O_REGIONS, o1=ptr_null())),  # the scalar NULL
        kernel_launch_outputs(2, outs=with_(O_REGIONS, o1=ptr_near_out(8))),  # the scalar inside the array
        kernel_launch_outputs(2, outs=with_(O_REGIONS, o1=ptr_region(1, 2))),  # misaligned
        # an array running past the end of the address space, the scalar after it: the array refused
        kernel_launch_outputs(2, outs=with_(O_REGIONS, o0=ptr_any(2**64 - 256), o1=ptr_any(2**64 - 128))),
        # on views: each array as out, the others after the inputs
        kernel_launch_outputs(1, view=k_views(2, [3, 5], [[5, 1], [1, 3], [10, 2]])),  # valid
        kernel_launch_outputs(1, view=k_views(2, [3, 5], [[5, 1], [0, 1]])),  # outputs[1] broadcast
        kernel_launch_outputs(1, view=k_views(2, [3, 5], [[5, 1], [-5, -1]])),  # reversed: valid
        kernel_launch_outputs(1, view=k_views(2, [3, 5]), outs=with_(O_REGIONS, o2=ptr_near_out(4))),
        kernel_launch_outputs(1, view=k_views(2, [3, 5], [[5, 1]] * 4 + [[0, 1], [1, 0]])),  # broadcast inputs
        kernel_launch_outputs(1, view=k_views(2, [3, 5]), inputs_null=True),
        kernel_launch_outputs(1, view=k_views(2, [0, 5]), inputs_null=True),  # empty: valid
        kernel_launch_outputs(1, view=k_views(2, [3, 5]), params_null=True),
        kernel_launch_outputs(2, view=k_views(2, [3, 5], [[1, 3]])),  # one array transposed, a reduction
        kernel_launch_outputs(2, view=k_views(2, [3, 5]), outs=with_(O_REGIONS, o1=ptr_near_out(8))),
        kernel_launch_outputs(2, view=k_views(2, [0, 5]), outs=with_(O_REGIONS, o1=ptr_null())),
        kernel_launch_outputs(1, view=k_views(2, [3, 5]), out_strides_null=True, in_strides_null=True),
        kernel_destroy(1), kernel_launch_outputs(1), kernel_launch_outputs(NULL_SLOT)],
})


SCALED_KINDS = {"quantize": 0, "dequantize": 1, "amax": 2}


def scaled_batched(slot, kind, out, src, entries, scale=S0, sharing=0, amaxes=None, amax_mode=OVERWRITE, count=None,
                   null_array=None):
    """A list of a scaled cast (action_scaled_batched): entries (n, out, x), up to six, the rest empty;
    sharing 0: each entry's own amax (amaxes, else scalars 8, 9, ...), 1: one shared, 2: none."""
    body = bytes([SCALED_BATCHED, slot, SCALED_KINDS[kind]]) + enum(out) + (b"" if kind == "amax" else enum(src))
    body += list_count(len(entries) if count is None else count)
    body += bytes([0 if null_array is None else 224 + null_array])
    entries = list(entries) + [(0, ptr_null(), ptr_null())] * (6 - len(entries))
    body += b"".join(list_n(n) + o + x for n, o, x in entries) + scale + bytes([sharing])
    amaxes = list(amaxes or []) + [scalar(8 + i) for i in range(len(amaxes or []), 6)]
    return body + b"".join(amaxes[:1] if sharing == 1 else amaxes) + mode(amax_mode)


def scaled_entries(count, n=50, **changes):
    """entries() of a scaled list: (n, out, x)."""
    return [(n_, o, a) for n_, o, a, _ in entries(count, n, **changes)]


seeds.update({
    # The scaled casts' lists: every form valid, then the scales' array, the amax scalars and the list's rules.
    "scaled_lists": [
        make(0),
        scaled_batched(0, "quantize", E4, BF16, scaled_entries(3)),  # valid: stops at the device
        scaled_batched(0, "quantize", E5, F32, scaled_entries(4), sharing=1, amax_mode=ACCUMULATE),  # one amax
        scaled_batched(0, "quantize", E4, F16, scaled_entries(2), sharing=2, amax_mode=7),  # none: mode unread
        scaled_batched(0, "dequantize", F32, E4, scaled_entries(3)),
        scaled_batched(0, "amax", F64, None, scaled_entries(3), sharing=1),
        scaled_batched(0, "quantize", E4, F32, [], null_array=0, scale=scalar_null()),  # count 0: nothing
        scaled_batched(0, "quantize", E4, F32, scaled_entries(2, n=0)),  # no elements: resets the amax
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3), scale=scalar_null()),
        scaled_batched(0, "dequantize", F16, E5, scaled_entries(3), scale=scalar_region(2)),  # misaligned
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3), scale=scalar_any(2**64 - 8)),  # past the end
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3), scale=scalar_in_out(8)),  # inside entry 0's out
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3), amaxes=[S1, scalar_null()]),  # entry 1's NULL
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3), amaxes=[S1, S1, scalar_in_x(8)]),
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3), amaxes=[scalar_other()]),  # on its scale
        scaled_batched(0, "amax", F32, None, scaled_entries(3), amaxes=[scalar_region(1)]),
        scaled_batched(0, "amax", F32, None, scaled_entries(3), sharing=2),  # amax's scalars: required
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3), amax_mode=5),
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3, e1=(-1, R0, R1, R2))),
        scaled_batched(0, "quantize", E4, F32, scaled_entries(3), count=-3),
        scaled_batched(0, "dequantize", F32, E4, scaled_entries(3), null_array=2),
        scaled_batched(0, "quantize", F16, F32, scaled_entries(2)), scaled_batched(0, "amax", DT["i8"], None, []),
        scaled_batched(NULL_SLOT, "quantize", E4, F32, scaled_entries(2))],
})


def check_table():
    """The header's enums end at the table's last values; the enum byte's window holds them."""
    problems = []
    if max(FORMATS, key=FORMATS.get) != table_value("FUZZ_LAST_BLOCK_FORMAT"):
        problems.append(f"include/elementwise.h.in's ew_block_format_t ends at {max(FORMATS, key=FORMATS.get)}, "
                        f"fuzz/fuzz_table.h's FUZZ_LAST_BLOCK_FORMAT is {table_value('FUZZ_LAST_BLOCK_FORMAT')}: add "
                        "the new value to the table and the harness's model")
    if not ENUM_FIRST < min(FORMATS.values()) - 1 or not max(FORMATS.values()) < ENUM_FIRST + ENUM_SPAN - 1:
        problems.append("ew_block_format_t's values and their neighbours do not fit the enum byte's window")
    if max(REDUCE_OPS, key=REDUCE_OPS.get) != table_value("FUZZ_LAST_REDUCE_OP"):
        problems.append(f"include/elementwise.h.in's ew_reduce_op_t ends at {max(REDUCE_OPS, key=REDUCE_OPS.get)}, "
                        f"fuzz/fuzz_table.h's FUZZ_LAST_REDUCE_OP is {table_value('FUZZ_LAST_REDUCE_OP')}: add "
                        "the new value to the table and the harness's model")
    if max(MODES, key=MODES.get) != table_value("FUZZ_LAST_REDUCE_MODE"):
        problems.append(f"include/elementwise.h.in's ew_reduce_mode_t ends at {max(MODES, key=MODES.get)}, "
                        f"fuzz/fuzz_table.h's FUZZ_LAST_REDUCE_MODE is {table_value('FUZZ_LAST_REDUCE_MODE')}: add "
                        "the new value to the table and the harness's model")
    for enum_name, values, last in (("ew_status_t", STATUS, "FUZZ_LAST_STATUS"), ("ew_dtype_t", DTYPE, "FUZZ_LAST_DTYPE"),
                                    ("ew_op_t", OPS, "FUZZ_LAST_OP")):
        header_last = max(values, key=values.get)
        if header_last != table_value(last):
            problems.append(f"include/elementwise.h.in's {enum_name} ends at {header_last}, fuzz/fuzz_table.h's "
                            f"{last} is {table_value(last)}: add the new value to the table and the harness's model")
        if not ENUM_FIRST < min(values.values()) or not max(values.values()) < ENUM_FIRST + ENUM_SPAN - 1:
            problems.append(f"{enum_name}'s values and their neighbours do not fit the enum byte's window")
    return problems


directory = os.path.join(HERE, "corpus")
written = {name: b"".join(data) for name, data in seeds.items()}
if sys.argv[1:] == ["--check"]:
    problems = check_table()
    committed = set(os.listdir(directory)) if os.path.isdir(directory) else set()
    for name in sorted(committed - set(written)):
        problems.append(f"fuzz/corpus/{name} is not a seed of this script")
    for name, data in sorted(written.items()):
        path = os.path.join(directory, name)
        if not os.path.exists(path) or open(path, "rb").read() != data:
            problems.append(f"fuzz/corpus/{name} is not what this script writes")
    for problem in problems:
        print(f"make_seeds.py --check: {problem}", file=sys.stderr)
    if problems:
        print("make_seeds.py --check: FAIL; fix the table, then rerun python3 fuzz/make_seeds.py and commit "
              "fuzz/corpus", file=sys.stderr)
        sys.exit(1)
    print(f"make_seeds.py --check: the {len(written)} committed seeds are this script's, "
          f"{len(ACTION)} actions in the table")
    sys.exit(0)
if sys.argv[1:]:
    sys.exit("usage: make_seeds.py [--check]")
problems = check_table()
if problems:
    sys.exit("\n".join(problems))
os.makedirs(directory, exist_ok=True)
for name in set(os.listdir(directory)) - set(written):
    os.remove(os.path.join(directory, name))
for name, data in written.items():
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {directory}")
