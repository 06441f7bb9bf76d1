/* SPDX-License-Identifier: Apache-2.0 */
/* The catalogue's lookups for the C ABI layer: dtype names and sizes, op names and how each op is
 * called, all read from src/catalogue/catalogue.h. */
#include "catalogue/catalogue.h"

static const struct {
    const char *name;
    size_t bits;
    int kind; /* 0 for the block dtypes */
} dtypes[EW_ALL_DTYPES_END] = {
#define EW_DTYPE_ENTRY(value, name, type, size, kind) [value] = {#name, 8 * (size), kind},
    EW_CATALOGUE_DTYPES(EW_DTYPE_ENTRY)
#undef EW_DTYPE_ENTRY
#define EW_DTYPE_ENTRY(value, name, bits) [value] = {#name, bits, 0},
    EW_BLOCK_DTYPES(EW_DTYPE_ENTRY)
#undef EW_DTYPE_ENTRY
};

static const struct {
    const char *name;
    int call;
} ops[EW_OP_END] = {
#define EW_OP_ENTRY(value, name, call, functor, out_kinds, in_kinds) [value] = {#name, call},
    EW_CATALOGUE_OPS(EW_OP_ENTRY)
#undef EW_OP_ENTRY
};

static int dtype_valid(ew_dtype_t dtype) { return (unsigned)dtype - 1u < (unsigned)(EW_ALL_DTYPES_END - 1); }
static int op_valid(ew_op_t op) { return (unsigned)op - 1u < (unsigned)(EW_OP_END - 1); }

const char *ew_dtype_name(ew_dtype_t dtype) { return dtype_valid(dtype) ? dtypes[dtype].name : "invalid"; }

size_t ew_dtype_size(ew_dtype_t dtype) { return dtype_valid(dtype) ? dtypes[dtype].bits / 8 : 0; }

size_t ew_dtype_bits(ew_dtype_t dtype) { return dtype_valid(dtype) ? dtypes[dtype].bits : 0; }

const char *ewi_op_name(ew_op_t op) { return op_valid(op) ? ops[op].name : "invalid"; }

int ewi_op_call(ew_op_t op) { return op_valid(op) ? ops[op].call : 0; }

int ewi_dtype_kind(ew_dtype_t dtype) { return dtype_valid(dtype) ? dtypes[dtype].kind : 0; }
