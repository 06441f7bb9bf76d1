/* SPDX-License-Identifier: Apache-2.0 */
/* The catalogue's lookups for the C ABI layer: dtype names and sizes, op names and how each op is
 * called, all read from src/catalogue/catalogue.h. */
#include "catalogue/catalogue.h"

static const struct {
    const char *name;
    size_t size;
    int kind;
} dtypes[EW_DTYPE_END] = {
#define EW_DTYPE_ENTRY(value, name, type, size, kind) [value] = {#name, size, kind},
    EW_CATALOGUE_DTYPES(EW_DTYPE_ENTRY)
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

static int dtype_valid(ew_dtype_t dtype) { return (unsigned)dtype - 1u < (unsigned)(EW_DTYPE_END - 1); }
static int op_valid(ew_op_t op) { return (unsigned)op - 1u < (unsigned)(EW_OP_END - 1); }

const char *ew_dtype_name(ew_dtype_t dtype) { return dtype_valid(dtype) ? dtypes[dtype].name : "invalid"; }

size_t ew_dtype_size(ew_dtype_t dtype) { return dtype_valid(dtype) ? dtypes[dtype].size : 0; }

const char *ewi_op_name(ew_op_t op) { return op_valid(op) ? ops[op].name : "invalid"; }

int ewi_op_call(ew_op_t op) { return op_valid(op) ? ops[op].call : 0; }

int ewi_dtype_kind(ew_dtype_t dtype) { return dtype_valid(dtype) ? dtypes[dtype].kind : 0; }
