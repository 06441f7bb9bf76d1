/* SPDX-License-Identifier: Apache-2.0 */
/* An independent model of the operand rules of include/elementwise.h (the ops, strided and batched
 * groups) and docs/semantics.md section 8, written from their words, not from src/: which calls are
 * valid and which are refused, and the argument a refusal is about. Header-only, so that the CPU test
 * tests/plan/test_layout.c and the fuzzer fuzz/fuzz_api.c judge by the same model; the brute force below
 * (every element's address) checks the model's accepted layouts independently of its rules.
 *
 * Arithmetic is in 128 bits, so nothing here overflows where the library's 64-bit checks must. */
#ifndef EW_LAYOUT_MODEL_H
#define EW_LAYOUT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"

enum {
    MODEL_MAX_OPERANDS = EW_KERNEL_MAX_OUTPUTS + EW_KERNEL_MAX_INPUTS,
    MODEL_MAX_NAMES = 2 * MODEL_MAX_OPERANDS + 2
};

typedef __int128 model_int;

/* One operand of a call: its name and its strides' name as the library's messages give them ("out",
 * "a", "inputs[1]"; "out_strides", ...), its address and element size (a power of two), and for
 * strided calls its strides (NULL: C-contiguous). */
typedef struct {
    const char *name, *strides_name;
    uintptr_t address;
    const int64_t *strides;
    size_t size;
} model_operand_t;

/* A verdict: valid or refused, and the arguments a refusal may name (the message starts with one of
 * them: every rule broken is listed, since which the library reports first is not part of the rules). */
typedef struct {
    int valid;
    int64_t n; /* elements, where the shape is valid */
    int names;
    const char *name[MODEL_MAX_NAMES];
} model_verdict_t;

static inline void model_refuse(model_verdict_t *v, const char *name)
{
    v->valid = 0;
    for (int i = 0; i < v->names; ++i)
        if (strcmp(v->name[i], name) == 0)
            return;
    if (v->names < MODEL_MAX_NAMES)
        v->name[v->names++] = name;
}

/* Whether message starts with one of the verdict's names as a whole word ("a" matches "a = 0x..." and
 * "a: ...", not "alpha"). */
static inline int model_message_names(const model_verdict_t *v, const char *message)
{
    for (int i = 0; i < v->names; ++i) {
        const size_t length = strlen(v->name[i]);
        if (strncmp(message, v->name[i], length) == 0 &&
            (message[length] == ' ' || message[length] == ':' || message[length] == '['))
            return 1;
    }
    return 0;
}

/* ---- flat operands: the ops group's rules, for n >= 0 elements ----
 * n == 0: valid, whatever the pointers. Otherwise each pointer non-NULL and aligned to its element size; its
 * n elements inside the address space (the address one past its last byte below 2^64); out overlapping an
 * input only exactly in place (the same address and element size). */
static inline model_verdict_t model_flat(int64_t n, int count, const model_operand_t *operands)
{
    model_verdict_t v = {.valid = 1, .n = n};
    if (n == 0)
        return v; /* nothing read or written: any pointers */
    model_int begin[MODEL_MAX_OPERANDS], end[MODEL_MAX_OPERANDS];
    int ranges_known = 1;
    for (int k = 0; k < count; ++k) {
        const model_operand_t *p = &operands[k];
        begin[k] = p->address;
        end[k] = (model_int)p->address + (model_int)n * (model_int)p->size;
        if (p->address == 0 || p->address % p->size != 0 || end[k] > (model_int)UINTPTR_MAX) {
            model_refuse(&v, p->name);
            ranges_known = 0;
        }
    }
    for (int k = 1; k < count && ranges_known; ++k) {
        if (begin[0] == begin[k] && operands[0].size == operands[k].size)
            continue;
        if (begin[0] < end[k] && begin[k] < end[0])
            model_refuse(&v, "out");
    }
    return v;
}

/* ---- strided views: the strided group's rules ----
 * - 0 <= ndim <= EW_MAX_DIMS; shape not NULL where ndim > 0; every extent >= 0. An extent of 0: valid,
 *   nothing else checked. The product of the extents fits int64.
 * - Each operand: non-NULL, aligned; its elements' offsets, each stride times (extent - 1) and their
 *   sums below and above its element 0, fit int64; in bytes, its span [lo, hi) fits int64 on either
 *   side of element 0 (-2^63 excluded) and lies in the address space (lo >= 0, hi < 2^64).
 * - out's layout (the rule the header states), and each further output's: for every dimension d of
 *   extent >= 2, |stride[d]| > the sum of |stride[e]| * (extent[e] - 1) over the other dimensions e of
 *   extent >= 2 with |stride[e]| <= |stride[d]|. (So a stride 0 over an extent >= 2 fails, and so do
 *   two such dimensions of equal |stride|.)
 * - An input whose byte span meets an output's is that output exactly: the same address and element
 *   size, and the same strides wherever the extent exceeds 1. Two outputs' spans never meet. */

/* The strides an operand is addressed with: its own, or C-contiguous over shape. */
static inline void model_strides(int ndim, const int64_t *shape, const model_operand_t *p, int64_t *strides)
{
    int64_t step = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        strides[d] = p->strides ? p->strides[d] : step;
        step *= shape[d]; /* the product of the extents fits int64 here */
    }
}

/* out's layout rule above. */
static inline int model_out_nests(int ndim, const int64_t *shape, const int64_t *stride)
{
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 2)
            continue;
        const model_int step = stride[d] < 0 ? -(model_int)stride[d] : stride[d];
        model_int inner = 0;
        for (int e = 0; e < ndim; ++e) {
            const model_int other = stride[e] < 0 ? -(model_int)stride[e] : stride[e];
            if (e != d && shape[e] >= 2 && other <= step)
                inner += other * (shape[e] - 1);
        }
        if (step <= inner)
            return 0;
    }
    return 1;
}

static inline int model_fits_int64(model_int x) { return x >= INT64_MIN && x <= INT64_MAX; }

/* outputs: bit k where operand k is an output (bit 0, out, implied): a kernel's further arrays. */
static inline model_verdict_t model_views(int ndim, const int64_t *shape, int count, unsigned outputs,
                                          const model_operand_t *operands)
{
    model_verdict_t v = {.valid = 1, .n = 0};
    if (ndim < 0 || ndim > EW_MAX_DIMS) {
        model_refuse(&v, "ndim");
        return v;
    }
    if (ndim > 0 && shape == NULL) {
        model_refuse(&v, "shape");
        return v;
    }
    model_int n = 1;
    int empty = 0;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 0)
            model_refuse(&v, "shape");
        empty |= shape[d] == 0;
    }
    if (!v.valid || empty)
        return v;
    for (int d = 0; d < ndim; ++d)
        if ((n *= shape[d]) > INT64_MAX) {
            model_refuse(&v, "shape");
            return v;
        }
    v.n = (int64_t)n;

    int64_t strides[MODEL_MAX_OPERANDS][EW_MAX_DIMS];
    model_int lo[MODEL_MAX_OPERANDS], hi[MODEL_MAX_OPERANDS];
    for (int k = 0; k < count; ++k) {
        const model_operand_t *p = &operands[k];
        model_strides(ndim, shape, p, strides[k]);
        if (p->address == 0 || p->address % p->size != 0) {
            model_refuse(&v, p->name);
            continue;
        }
        model_int below = 0, above = 0;
        int fits = 1;
        for (int d = 0; d < ndim; ++d) {
            const model_int reach = (model_int)strides[k][d] * (shape[d] - 1);
            *(reach < 0 ? &below : &above) += reach;
            fits &= model_fits_int64(reach) && model_fits_int64(below) && model_fits_int64(above);
        }
        const model_int below_bytes = below * (model_int)p->size,
                        above_bytes = (above + 1) * (model_int)p->size;
        fits &= below_bytes > INT64_MIN && above_bytes <= INT64_MAX;
        lo[k] = (model_int)p->address + below_bytes;
        hi[k] = (model_int)p->address + above_bytes;
        if (!fits || lo[k] < 0 || hi[k] > (model_int)UINTPTR_MAX)
            model_refuse(&v, p->name);
    }
    if (!v.valid)
        return v;
    outputs |= 1u;
    for (int o = 0; o < count; ++o) {
        if (!(outputs >> o & 1u))
            continue;
        if (!model_out_nests(ndim, shape, strides[o]))
            model_refuse(&v, operands[o].name);
        for (int k = 0; k < count; ++k) {
            if (k == o || !(lo[o] < hi[k] && lo[k] < hi[o]))
                continue;
            int same = !(outputs >> k & 1u) && operands[k].address == operands[o].address &&
                       operands[k].size == operands[o].size;
            for (int d = 0; d < ndim && same; ++d)
                same = shape[d] < 2 || strides[k][d] == strides[o][d];
            if (!same)
                model_refuse(&v, operands[o].name);
        }
    }
    return v;
}

/* ---- brute force: every element's address ---- */

typedef struct {
    uintptr_t a[MODEL_MAX_OPERANDS];
} model_tuple_t;

static inline int model_compare_tuples(const void *x, const void *y)
{
    const model_tuple_t *p = x, *q = y;
    for (int k = 0; k < MODEL_MAX_OPERANDS; ++k)
        if (p->a[k] != q->a[k])
            return p->a[k] < q->a[k] ? -1 : 1;
    return 0;
}

/* The addresses of every index of n elements, index by index (dimension ndim - 1 fastest), from
 * explicit strides; calloc'd, the caller frees it. */
static inline model_tuple_t *model_enumerate(int ndim, const int64_t *shape, int count,
                                             const int64_t strides[][EW_MAX_DIMS], const uintptr_t *base,
                                             const size_t *size, int64_t n)
{
    model_tuple_t *list = calloc((size_t)(n > 0 ? n : 1), sizeof *list);
    int64_t index[EW_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; ++i) {
        for (int k = 0; k < count; ++k) {
            int64_t offset = 0;
            for (int d = 0; d < ndim; ++d)
                offset += index[d] * strides[k][d];
            list[i].a[k] = base[k] + (uintptr_t)(offset * (int64_t)size[k]);
        }
        for (int d = ndim - 1; d >= 0; --d) {
            if (++index[d] < shape[d])
                break;
            index[d] = 0;
        }
    }
    return list;
}

/* model_elements_apart below, on the addresses of every index (model_enumerate's list of n) already
 * sorted by model_compare_tuples (so in the order of out's), of count operands of sizes size[]. */
static inline int model_tuples_apart(const model_tuple_t *list, int64_t n, int count, const size_t *size)
{
    int apart = 1;
    for (int64_t i = 1; i < n && apart; ++i)
        apart = list[i].a[0] - list[i - 1].a[0] >= size[0];
    for (int k = 1; k < count && apart; ++k)
        for (int64_t i = 0; i < n && apart; ++i) {
            const uintptr_t a = list[i].a[k];
            int64_t low = 0, high = n; /* the first out element above a */
            while (low < high) {
                const int64_t mid = low + (high - low) / 2;
                if (list[mid].a[0] <= a)
                    low = mid + 1;
                else
                    high = mid;
            }
            if (low > 0 && list[low - 1].a[0] + size[0] > a) /* the out element at or below a meets it */
                apart = low - 1 == i && list[i].a[0] == a && size[k] == size[0];
            if (low < n && a + size[k] > list[low].a[0]) /* a's bytes reach the next out element */
                apart = 0;
        }
    return apart;
}

/* For an accepted strided call of n elements (shape valid and not empty): 1 where no two elements of
 * an output share a byte and every other operand's element meets no output element's bytes but its own
 * index's, at the same address and size (in place). By enumeration, each output in turn as the first
 * operand; the caller keeps n small. */
static inline int model_elements_apart(int ndim, const int64_t *shape, int count, unsigned outputs,
                                       const model_operand_t *operands, int64_t n)
{
    int64_t strides[MODEL_MAX_OPERANDS][EW_MAX_DIMS];
    uintptr_t base[MODEL_MAX_OPERANDS];
    size_t size[MODEL_MAX_OPERANDS];
    for (int k = 0; k < count; ++k) {
        model_strides(ndim, shape, &operands[k], strides[k]);
        base[k] = operands[k].address;
        size[k] = operands[k].size;
    }
    int apart = 1;
    for (int o = 0; o < count && apart; ++o) {
        if (o > 0 && !(outputs >> o & 1u))
            continue;
        /* output o first: swapped with operand 0 (swapped back after) */
        int64_t t[EW_MAX_DIMS];
        memcpy(t, strides[0], sizeof t);
        memcpy(strides[0], strides[o], sizeof t);
        memcpy(strides[o], t, sizeof t);
        const uintptr_t b = base[0];
        const size_t z = size[0];
        base[0] = base[o], size[0] = size[o], base[o] = b, size[o] = z;
        model_tuple_t *list = model_enumerate(ndim, shape, count, strides, base, size, n);
        qsort(list, (size_t)n, sizeof *list, model_compare_tuples);
        apart = model_tuples_apart(list, n, count, size);
        free(list);
        memcpy(strides[o], strides[0], sizeof t);
        memcpy(strides[0], t, sizeof t);
        base[o] = base[0], size[o] = size[0], base[0] = b, size[0] = z;
    }
    return apart;
}

#endif
