/* SPDX-License-Identifier: Apache-2.0 */
/* The catalogue, declared once: every dtype and every op of the library. The C ABI layer takes names,
 * sizes and arities from it, the kernels their device types and which entries exist, and CMake the
 * list of dispatch rows to compile (one translation unit per row), so adding an op is a functor and
 * one line here, adding a dtype one line here (docs/design.md, "Adding an op").
 *
 * Entries run in enum order, from 1 without gaps: checked at compile time below and, against the
 * public header's text, by tests/catalogue/test_catalogue.c. src/CMakeLists.txt reads the entries by pattern:
 * keep each X(...) on one line, its fields separated by ", ". */
#ifndef EW_CATALOGUE_H
#define EW_CATALOGUE_H

#include "elementwise.h"

/* What a dtype is, for the ops' lists of the dtypes they take. */
enum {
    EW_KIND_BOOL = 1,
    EW_KIND_INT = 2,   /* two's complement */
    EW_KIND_UINT = 4,  /* unsigned */
    EW_KIND_FLOAT = 8, /* f16, bf16, f32, f64 */
    EW_KIND_FP8 = 16,
    EW_KIND_SCALE = 32, /* f8e8m0, a block scale: powers of two, taken by the cast alone */
    EW_KINDS_INTEGER = EW_KIND_INT | EW_KIND_UINT,
    EW_KINDS_ALL = 2 * EW_KIND_SCALE - 1 /* every kind: one bit each, the last kind the highest */
};

/* X(enum, name, device type, size in bytes, kind) */
#define EW_CATALOGUE_DTYPES(X)                            \
    X(EW_BOOL, bool, Bool8, 1, EW_KIND_BOOL)              \
    X(EW_I8, i8, int8_t, 1, EW_KIND_INT)                  \
    X(EW_U8, u8, uint8_t, 1, EW_KIND_UINT)                \
    X(EW_I16, i16, int16_t, 2, EW_KIND_INT)               \
    X(EW_I32, i32, int32_t, 4, EW_KIND_INT)               \
    X(EW_I64, i64, int64_t, 8, EW_KIND_INT)               \
    X(EW_F16, f16, __half, 2, EW_KIND_FLOAT)              \
    X(EW_BF16, bf16, __nv_bfloat16, 2, EW_KIND_FLOAT)     \
    X(EW_F32, f32, float, 4, EW_KIND_FLOAT)               \
    X(EW_F64, f64, double, 8, EW_KIND_FLOAT)              \
    X(EW_F8E4M3, f8e4m3, F8E4M3, 1, EW_KIND_FP8)          \
    X(EW_F8E5M2, f8e5m2, F8E5M2, 1, EW_KIND_FP8)          \
    X(EW_F8E8M0, f8e8m0, F8E8M0, 1, EW_KIND_SCALE)

/* Dtypes that only the block-scaled casts take (ew_quantize_blocks; no op of the catalogue, no user
 * kernel): X(enum, name, bits of one element). They follow the catalogue's dtypes in the enum. */
#define EW_BLOCK_DTYPES(X)      \
    X(EW_F4E2M1, f4e2m1, 4)
/* How an op is called: through ew_unary or ew_binary by its enum value, or by a call of its own
 * (ew_cast, every ordered pair of dtypes; ew_scale_add, with alpha; ew_quantize and ew_dequantize,
 * with a scale in device memory; ew_amax, into a device scalar). */
enum {
    EW_CALL_UNARY = 1,
    EW_CALL_BINARY = 2,
    EW_CALL_CAST = 3,
    EW_CALL_SCALE_ADD = 4,
    EW_CALL_QUANTIZE = 5,
    EW_CALL_DEQUANTIZE = 6,
    EW_CALL_AMAX = 7
};

/* Ops between two dtypes (out, in): their entries are pairs, their rows indexed by the source dtype.
 * The others take one dtype. src/CMakeLists.txt names the same calls (EW_PAIR_CALLS). */
#define EW_CALL_IS_PAIR(call) ((call) == EW_CALL_CAST || (call) == EW_CALL_QUANTIZE || (call) == EW_CALL_DEQUANTIZE)

/* X(enum, name, call, functor in src/catalogue/functors.cuh, kinds of out dtype, kinds of in dtype);
 * an op of one dtype lists the same kinds twice. */
#define EW_CATALOGUE_OPS(X)                                                                                        \
    X(EW_OP_ADD, add, EW_CALL_BINARY, Add, EW_KIND_BOOL | EW_KINDS_INTEGER | EW_KIND_FLOAT, EW_KIND_BOOL | EW_KINDS_INTEGER | EW_KIND_FLOAT) \
    X(EW_OP_MUL, mul, EW_CALL_BINARY, Mul, EW_KIND_BOOL | EW_KINDS_INTEGER | EW_KIND_FLOAT, EW_KIND_BOOL | EW_KINDS_INTEGER | EW_KIND_FLOAT) \
    X(EW_OP_RELU, relu, EW_CALL_UNARY, Relu, EW_KINDS_INTEGER | EW_KIND_FLOAT, EW_KINDS_INTEGER | EW_KIND_FLOAT) \
    X(EW_OP_CAST, cast, EW_CALL_CAST, Cast, EW_KINDS_ALL, EW_KINDS_ALL)                                           \
    X(EW_OP_SCALE_ADD, scale_add, EW_CALL_SCALE_ADD, ScaleAdd, EW_KIND_BOOL | EW_KINDS_INTEGER | EW_KIND_FLOAT, EW_KIND_BOOL | EW_KINDS_INTEGER | EW_KIND_FLOAT) \
    X(EW_OP_QUANTIZE, quantize, EW_CALL_QUANTIZE, Quantize, EW_KIND_FP8, EW_KIND_FLOAT)                          \
    X(EW_OP_DEQUANTIZE, dequantize, EW_CALL_DEQUANTIZE, Dequantize, EW_KIND_FLOAT, EW_KIND_FP8)                  \
    X(EW_OP_AMAX, amax, EW_CALL_AMAX, Amax, EW_KIND_FLOAT, EW_KIND_FLOAT)

/* One past the last value of each enum (of the catalogue's dtypes; of every dtype). */
#define EW_CATALOGUE_COUNT(...) +1
enum {
    EW_DTYPE_END = 1 EW_CATALOGUE_DTYPES(EW_CATALOGUE_COUNT),
    EW_ALL_DTYPES_END = EW_DTYPE_END EW_BLOCK_DTYPES(EW_CATALOGUE_COUNT),
    EW_OP_END = 1 EW_CATALOGUE_OPS(EW_CATALOGUE_COUNT)
};
#undef EW_CATALOGUE_COUNT

/* Each line's position is its enum value: the lines are in enum order, without gaps. */
#define EW_CATALOGUE_POSITION(value, ...) EW_CATALOGUE_AT_##value,
enum { EW_CATALOGUE_DTYPE_BEFORE = 0, EW_CATALOGUE_DTYPES(EW_CATALOGUE_POSITION) };
enum { EW_BLOCK_DTYPE_BEFORE = EW_DTYPE_END - 1, EW_BLOCK_DTYPES(EW_CATALOGUE_POSITION) };
enum { EW_CATALOGUE_OP_BEFORE = 0, EW_CATALOGUE_OPS(EW_CATALOGUE_POSITION) };
#undef EW_CATALOGUE_POSITION
#ifdef __cplusplus
#define EW_CATALOGUE_ASSERT static_assert
#else
#define EW_CATALOGUE_ASSERT _Static_assert
#endif
#define EW_CATALOGUE_IN_ORDER(value, ...)                                       \
    EW_CATALOGUE_ASSERT((int)EW_CATALOGUE_AT_##value == (int)(value),            \
                        #value " is not at its enum value's line of the catalogue");
EW_CATALOGUE_DTYPES(EW_CATALOGUE_IN_ORDER)
EW_BLOCK_DTYPES(EW_CATALOGUE_IN_ORDER)
EW_CATALOGUE_OPS(EW_CATALOGUE_IN_ORDER)
#undef EW_CATALOGUE_IN_ORDER

/* Lookups of the C ABI layer beside the public ew_dtype_name and ew_dtype_size (src/catalogue/catalogue.c). */
#ifdef __cplusplus
extern "C" {
#endif

/* The op's name ("add"), or "invalid" outside the enum. */
const char *ewi_op_name(ew_op_t op);

/* How the op is called (EW_CALL_*), or 0 outside the enum. */
int ewi_op_call(ew_op_t op);

/* The dtype's kind (EW_KIND_*), or 0 outside the enum. */
int ewi_dtype_kind(ew_dtype_t dtype);

#ifdef __cplusplus
}
#endif

#endif
