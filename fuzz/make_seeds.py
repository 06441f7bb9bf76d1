#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus fuzz/corpus/ for fuzz/fuzz_api.c: one small file per scenario, in the
harness's input format (an action byte, then its argument bytes; see the take_* readers there).
Run from anywhere: python3 fuzz/make_seeds.py. The files are committed; rerun after a format change."""
import os
import struct

(MAKE, DESTROY, CREATE, GET, UNARY, BINARY, CAST, SCALE_ADD, INFO, STRIDED, BATCHED, KERNEL_CREATE, KERNEL_MAKE,
 KERNEL_LAUNCH, KERNEL_DESTROY) = range(15)
OP = {"add": 1, "mul": 2, "relu": 3, "cast": 4, "scale_add": 5}
DT = {"bool": 1, "i8": 2, "u8": 3, "i16": 4, "i32": 5, "i64": 6, "f16": 7, "bf16": 8, "f32": 9, "f64": 10,
      "f8e4m3": 11, "f8e5m2": 12}
NULL_SLOT = 4  # for handles and kernels alike
ALPHAS = [0.0, 1.0, -1.0, 0.5, 2.0, -0.0, 127.0, 128.0, -128.0, 255.0, 256.0, 32767.0, 32768.0, -32769.0,
          2147483647.0, 2147483648.0, -2147483649.0, 2.0**63, -2.0**63, 1e300, 1e-300]


def u64(v):
    return struct.pack("<Q", v & (2**64 - 1))


def enum(v):  # take_enum_value: -1..14 in one byte, anything else as a 32-bit value
    return bytes([v + 1]) if -1 <= v <= 14 else bytes([255]) + u64(v)


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
SRC_NULL, SRC_IN0, SRC_EMPTY, SRC_SCALE_ADD, SRC_NOT_CODE = range(5)
MAX_INPUTS, MAX_PARAMS = 4, 8


def count(c, maximum):  # take_count: -2 .. maximum + 1 in one byte, anything else as a 32-bit value
    return bytes([c + 2]) if -2 <= c <= maximum + 1 else bytes([255]) + u64(c)


def spec(source=SRC_IN0, out=DT["f32"], n_inputs=1, in_dtypes=(), n_params=0, dtypes_null=False):
    dtypes = list(in_dtypes) + [DT["f32"]] * (MAX_INPUTS - len(in_dtypes))  # always 4 read
    return (bytes([source]) + enum(out) + count(n_inputs, MAX_INPUTS) + bytes([0 if dtypes_null else 128])
            + b"".join(enum(d) for d in dtypes) + count(n_params, MAX_PARAMS))


def kernel_create(handle_slot, output_null=False, **kw):
    return bytes([KERNEL_CREATE, handle_slot]) + spec(**kw) + bytes([0 if output_null else 128])


def kernel_make(kernel_slot, handle_slot, **kw):
    return bytes([KERNEL_MAKE, kernel_slot, handle_slot]) + spec(**kw)


K_OUT, K_INPUTS = R0, [R1, R2, ptr_region(3, 0), ptr_region(1, 0x8000)]


def kernel_launch(kernel_slot, n=n_small(1000), out=K_OUT, inputs=None, inputs_null=False, params_null=False):
    inputs = inputs or K_INPUTS
    return (bytes([KERNEL_LAUNCH, kernel_slot]) + n + out + bytes([0 if inputs_null else 128]) + b"".join(inputs)
            + bytes([0 if params_null else 128]) + stream_default())


def kernel_destroy(kernel_slot):
    return bytes([KERNEL_DESTROY, kernel_slot])

SCALE_ADD_CASES = [("bool", 1.0), ("bool", 2.0), ("i8", 127.0), ("i8", 128.0), ("u8", -1.0), ("u8", 255.0),
                   ("i16", 32768.0), ("i32", -2147483649.0), ("i64", 2.0**63), ("i64", -2.0**63),
                   ("f16", 1e300), ("bf16", 0.5)]
INFO_CASES = [(1, 9, 9), (4, 1, 12), (3, 1, 1), (5, 11, 11), (0, 0, 0), (14, 14, 14), (-1, 5, 5)]

seeds = {
    "valid_binary_f32": [make(0), op_call(BINARY, 0, OP["add"], DT["f32"])],
    "valid_unary_cast_scale_add": [
        make(0), op_call(UNARY, 0, OP["relu"], DT["f16"]), op_call(CAST, 0, out=DT["bf16"], src=DT["f32"]),
        op_call(SCALE_ADD, 0, out=DT["f64"], alpha=alpha(0.5))],
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
        op_call(CAST, 0, out=0, src=DT["f32"]), op_call(CAST, 0, out=DT["f32"], src=13),
        op_call(BINARY, 0, 99999, DT["f32"]), op_call(SCALE_ADD, 0, out=DT["f8e5m2"], alpha=alpha(1.0)),
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
    "kernel_create": [
        make(0), make(1), bytes([DESTROY, 1]),
        kernel_create(0, in_dtypes=[DT["f32"]]),  # valid: stops at the device
        kernel_create(0, source=SRC_SCALE_ADD, out=DT["f16"], n_inputs=2, in_dtypes=[DT["f16"], DT["bf16"]],
                      n_params=1),
        kernel_create(0, output_null=True), kernel_create(NULL_SLOT), kernel_create(1),
        kernel_create(0, source=SRC_NULL), kernel_create(0, n_inputs=0), kernel_create(0, n_inputs=5),
        kernel_create(0, n_inputs=-1), kernel_create(0, n_inputs=2**31 - 1), kernel_create(0, dtypes_null=True),
        kernel_create(0, n_params=-1), kernel_create(0, n_params=9), kernel_create(0, n_params=-2**31),
        kernel_create(0, out=0), kernel_create(0, out=13), kernel_create(0, out=-1),
        kernel_create(0, n_inputs=2, in_dtypes=[DT["i8"], 13]), kernel_create(0, n_inputs=4, in_dtypes=[1, 2, 3, 0]),
        kernel_create(0, n_inputs=3, in_dtypes=[DT["u8"], DT["i64"], DT["f8e5m2"], 0]),  # [3] is not read
        # several problems: the first in the check order is reported
        kernel_create(NULL_SLOT, output_null=True, source=SRC_NULL),
        kernel_create(0, source=SRC_NULL, out=0, n_inputs=9), kernel_create(0, n_inputs=0, dtypes_null=True),
        kernel_create(0, out=13, n_params=9), kernel_create(0, out=13, in_dtypes=[0]),
        kernel_create(0, source=SRC_EMPTY), kernel_create(0, source=SRC_NOT_CODE, n_params=MAX_PARAMS)],
    "kernel_make": [
        make(0), make(1), bytes([DESTROY, 1]),
        kernel_make(0, 0, in_dtypes=[DT["f32"]]), kernel_make(1, NULL_SLOT), kernel_make(1, 1),
        kernel_make(1, 0, source=SRC_NULL), kernel_make(1, 0, n_inputs=5), kernel_make(1, 0, dtypes_null=True),
        kernel_make(1, 0, n_params=9), kernel_make(1, 0, out=13), kernel_make(1, 0, n_inputs=2, in_dtypes=[1, 0]),
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

directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(directory, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(directory, name), "wb") as f:
        f.write(b"".join(data))
print(f"{len(seeds)} seeds in {directory}")
