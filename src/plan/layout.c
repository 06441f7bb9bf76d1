/* SPDX-License-Identifier: Apache-2.0 */
/* Strided layouts: checks and coalescing (src/plan/layout.h); the plan is src/plan/strided_plan.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/error.h"
#include "plan/layout.h"

/* ---- checks ---- */

/* The span of one operand in elements, from its element at index 0: [*lo, *hi], or a failure naming the
 * dimension whose extent times stride leaves int64. */
static ew_status_t element_span(int ndim, const int64_t *shape, const int64_t *stride, const ew_view_t *view,
                                int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int d = 0; d < ndim; ++d) {
        int64_t reach;
        if (__builtin_mul_overflow(stride[d], shape[d] - 1, &reach) ||
            __builtin_add_overflow(reach < 0 ? *lo : *hi, reach, reach < 0 ? lo : hi))
            return ewi_fail(EW_ERROR_INVALID_VALUE,
                            "%s: %s[%d] = %lld over shape[%d] = %lld reaches past int64 elements", view->name,
                            view->strides_name, d, (long long)stride[d], d, (long long)shape[d]);
    }
    return EW_SUCCESS;
}

/* out's layout rule, the one include/elementwise.h states: the dimensions of extent >= 2, sorted by
 * |stride|, nest: each |stride| exceeds the span of those before it, the sum of |stride| * (extent - 1).
 * Sufficient for no two elements of out to share an address (NumPy's test); not necessary (shape {3,2},
 * strides {2,3}: distinct addresses, refused), as an exact test is a subset-sum problem. */
static ew_status_t check_out_disjoint(int ndim, const int64_t *shape, const int64_t *stride,
                                      const ew_view_t *view)
{
    int order[EW_MAX_DIMS], count = 0;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 2)
            continue;
        if (stride[d] == 0)
            return ewi_fail(EW_ERROR_INVALID_VALUE,
                            "%s: %s[%d] = 0 with shape[%d] = %lld: output elements would share an address",
                            view->name, view->strides_name, d, d, (long long)shape[d]);
        int k = count++;
        while (k > 0 && llabs(stride[order[k - 1]]) > llabs(stride[d])) {
            order[k] = order[k - 1];
            --k;
        }
        order[k] = d;
    }
    int64_t span = 0; /* the largest offset reached by the dimensions so far; INT64_MAX past int64 */
    for (int k = 0; k < count; ++k) {
        const int d = order[k];
        if (llabs(stride[d]) <= span) {
            const int e = order[k - 1];
            char reach[32] = "beyond int64";
            if (span < INT64_MAX)
                snprintf(reach, sizeof reach, "%lld", (long long)span);
            return ewi_fail(
                EW_ERROR_INVALID_VALUE,
                "%s: %s[%d] = %lld (shape[%d] = %lld) does not step past the span of the "
                "dimensions before it by |stride| (%s; the last of them: dimension %d, shape %lld, "
                "stride %lld); %s's strides must nest: its dimensions of extent above 1, sorted "
                "by |stride|, each step past the span of those before it",
                view->name, view->strides_name, d, (long long)stride[d], d, (long long)shape[d], reach, e,
                (long long)shape[e], (long long)stride[e], view->name);
        }
        if (__builtin_add_overflow(span, llabs(stride[d]) * (shape[d] - 1), &span)) /* the product fits */
            span = INT64_MAX;
    }
    return EW_SUCCESS;
}

/* Same pointer, same element size and the same strides wherever the extent exceeds 1. */
static int same_view(int ndim, const int64_t *shape, const ew_view_t *a, const int64_t *a_stride,
                     const ew_view_t *b, const int64_t *b_stride)
{
    if (a->address != b->address || a->elem_size != b->elem_size)
        return 0;
    for (int d = 0; d < ndim; ++d)
        if (shape[d] > 1 && a_stride[d] != b_stride[d])
            return 0;
    return 1;
}

/* ---- coalescing ---- */

static void sort_by_out_stride(ew_layout_t *l)
{
    for (int i = 1; i < l->ndim; ++i)
        for (int j = i; j > 0 && l->stride[0][j - 1] > l->stride[0][j]; --j) {
            int64_t t = l->shape[j];
            l->shape[j] = l->shape[j - 1];
            l->shape[j - 1] = t;
            for (int k = 0; k < l->count; ++k) {
                t = l->stride[k][j];
                l->stride[k][j] = l->stride[k][j - 1];
                l->stride[k][j - 1] = t;
            }
        }
}

/* Dimension d + 1 folds into d where, for every operand, stepping d + 1 once is stepping d shape[d]
 * times. */
static void merge_dims(ew_layout_t *l)
{
    int kept = 0;
    for (int d = 1; d < l->ndim; ++d) {
        int mergeable = 1;
        for (int k = 0; k < l->count && mergeable; ++k) {
            int64_t step; /* may leave int64 where the strides are huge: then not mergeable */
            mergeable = !__builtin_mul_overflow(l->stride[k][kept], l->shape[kept], &step) && l->stride[k][d] == step;
        }
        if (mergeable) {
            l->shape[kept] *= l->shape[d];
        } else {
            ++kept;
            l->shape[kept] = l->shape[d];
            for (int k = 0; k < l->count; ++k)
                l->stride[k][kept] = l->stride[k][d];
        }
    }
    l->ndim = l->ndim == 0 ? 0 : kept + 1;
}

ew_status_t ew_layout_make(int ndim, const int64_t *shape, int count, unsigned outputs,
                           const ew_view_t views[], ew_layout_t *layout)
{
    memset(layout, 0, sizeof *layout);
    layout->count = count;
    layout->outputs = (outputs | 1u) & ((1u << count) - 1u);
    for (int k = 0; k < count && k < EW_LAYOUT_MAX_OPERANDS; ++k)
        layout->elem_size[k] = views[k].elem_size;
    if (ndim < 0 || ndim > EW_MAX_DIMS)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "ndim = %d is outside [0, %d]", ndim, EW_MAX_DIMS);
    if (ndim > 0 && shape == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "shape is NULL with ndim = %d", ndim);
    int64_t n = 1;
    int empty = 0;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 0)
            return ewi_fail(EW_ERROR_INVALID_VALUE, "shape[%d] = %lld is negative", d, (long long)shape[d]);
        empty |= shape[d] == 0;
    }
    if (empty)
        return EW_SUCCESS; /* n = 0: nothing is read or written, whatever the pointers */
    for (int d = 0; d < ndim; ++d)
        if (__builtin_mul_overflow(n, shape[d], &n))
            return ewi_fail(EW_ERROR_INVALID_VALUE, "shape: the product of the extents up to shape[%d] = %lld "
                            "overflows int64", d, (long long)shape[d]);

    /* Each operand's strides, outermost first as given (C-contiguous where NULL), and its byte span. */
    int64_t strides[EW_LAYOUT_MAX_OPERANDS][EW_MAX_DIMS];
    uintptr_t lo[EW_LAYOUT_MAX_OPERANDS], hi[EW_LAYOUT_MAX_OPERANDS];
    for (int k = 0; k < count; ++k) {
        const ew_view_t *v = &views[k];
        int64_t step = 1;
        for (int d = ndim - 1; d >= 0; --d) {
            strides[k][d] = v->strides ? v->strides[d] : step;
            step *= shape[d]; /* <= n, which fits */
        }
        const uintptr_t address = (uintptr_t)v->address;
        if (v->address == NULL)
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s is NULL with %lld elements", v->name, (long long)n);
        if ((address & (v->elem_size - 1)) != 0) /* element sizes are powers of two */
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s = %p is not aligned to its element size %zu", v->name,
                            v->address, v->elem_size);
        int64_t first, last;
        ew_status_t status = element_span(ndim, shape, strides[k], v, &first, &last);
        if (status != EW_SUCCESS)
            return status;
        int64_t first_bytes, end, end_bytes;
        if (__builtin_mul_overflow(first, (int64_t)v->elem_size, &first_bytes) || __builtin_add_overflow(last, 1, &end) ||
            __builtin_mul_overflow(end, (int64_t)v->elem_size, &end_bytes) || first_bytes == INT64_MIN ||
            (uintptr_t)-first_bytes > address || (uintptr_t)end_bytes > UINTPTR_MAX - address)
            return ewi_fail(EW_ERROR_INVALID_VALUE,
                            "%s: its elements [%lld, %lld] from %p run outside the address space", v->name,
                            (long long)first, (long long)last, v->address);
        lo[k] = address + first_bytes; /* first_bytes <= 0 */
        hi[k] = address + end_bytes;
    }
    for (int o = 0; o < count; ++o) {
        if (!(layout->outputs >> o & 1u))
            continue;
        ew_status_t status = check_out_disjoint(ndim, shape, strides[o], &views[o]);
        if (status != EW_SUCCESS)
            return status;
        for (int k = 0; k < count; ++k) {
            if (k == o || !(lo[o] < hi[k] && lo[k] < hi[o]))
                continue;
            if (layout->outputs >> k & 1u)
                return ewi_fail(EW_ERROR_INVALID_VALUE, "%s overlaps %s: outputs must not share memory",
                                views[o].name, views[k].name);
            if (!same_view(ndim, shape, &views[o], strides[o], &views[k], strides[k]))
                return ewi_fail(
                    EW_ERROR_INVALID_VALUE,
                    "%s overlaps %s; only exactly in place (the same pointer, strides and element "
                    "size) is allowed",
                    views[o].name, views[k].name);
        }
    }

    /* Coalesce: extent-1 dimensions dropped, out's negative strides turned (every operand's with it, so
     * each index still pairs the same elements), innermost first by out's stride, then merged. */
    layout->n = n;
    for (int k = 0; k < count; ++k)
        layout->base[k] = (uintptr_t)views[k].address;
    for (int d = ndim - 1; d >= 0; --d) {
        if (shape[d] == 1)
            continue;
        const int flip = strides[0][d] < 0;
        const int e = layout->ndim++;
        layout->shape[e] = shape[d];
        for (int k = 0; k < count; ++k) {
            int64_t s = strides[k][d];
            if (flip) {
                layout->base[k] += (uintptr_t)(s * (shape[d] - 1) * (int64_t)views[k].elem_size);
                s = -s;
            }
            layout->stride[k][e] = s;
        }
    }
    sort_by_out_stride(layout);
    merge_dims(layout);
    return EW_SUCCESS;
}

int ew_layout_is_flat(const ew_layout_t *l)
{
    if (l->ndim == 0)
        return 1;
    if (l->ndim > 1)
        return 0;
    for (int k = 0; k < l->count; ++k)
        if (l->stride[k][0] != 1)
            return 0;
    return 1;
}

void ew_layout_span(const ew_layout_t *l, int k, uintptr_t *lo, uintptr_t *hi)
{
    const int64_t elem_size = (int64_t)l->elem_size[k];
    int64_t first = 0, last = 0;
    for (int d = 0; d < l->ndim; ++d) {
        const int64_t reach = l->stride[k][d] * (l->shape[d] - 1);
        *(reach < 0 ? &first : &last) += reach;
    }
    *lo = l->base[k] + (uintptr_t)(first * elem_size);
    *hi = l->base[k] + (uintptr_t)((last + 1) * elem_size);
}
