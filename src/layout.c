/* SPDX-License-Identifier: Apache-2.0 */
/* Strided layouts: checks, coalescing and the strided plan (src/layout.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "layout.h"

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
static ew_status_t check_out_disjoint(int ndim, const int64_t *shape, const int64_t *stride)
{
    int order[EW_MAX_DIMS], count = 0;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 2)
            continue;
        if (stride[d] == 0)
            return ewi_fail(EW_ERROR_INVALID_VALUE,
                            "out: out_strides[%d] = 0 with shape[%d] = %lld: output elements would share an address",
                            d, d, (long long)shape[d]);
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
            return ewi_fail(EW_ERROR_INVALID_VALUE,
                            "out: out_strides[%d] = %lld (shape[%d] = %lld) does not step past the span of the "
                            "dimensions before it by |stride| (%s; the last of them: dimension %d, shape %lld, "
                            "stride %lld); out's strides must nest: its dimensions of extent above 1, sorted by "
                            "|stride|, each step past the span of those before it",
                            d, (long long)stride[d], d, (long long)shape[d], reach, e, (long long)shape[e],
                            (long long)stride[e]);
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

ew_status_t ew_layout_make(int ndim, const int64_t *shape, int count, const ew_view_t views[], ew_layout_t *layout)
{
    memset(layout, 0, sizeof *layout);
    layout->count = count;
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
    ew_status_t status = check_out_disjoint(ndim, shape, strides[0]);
    if (status != EW_SUCCESS)
        return status;
    for (int k = 1; k < count; ++k)
        if (lo[0] < hi[k] && lo[k] < hi[0] && !same_view(ndim, shape, &views[0], strides[0], &views[k], strides[k]))
            return ewi_fail(EW_ERROR_INVALID_VALUE,
                            "out overlaps %s; only exactly in place (the same pointer, strides and element size) "
                            "is allowed",
                            views[k].name);

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

/* ---- the plan ---- */

ew_divider_t ew_divider_make(uint64_t divisor)
{
    ew_divider_t d = {.divisor = divisor, .magic = 0, .shift = 0};
    while (d.shift < 64 && ((uint64_t)1 << d.shift) < divisor)
        ++d.shift;
    /* magic = floor(2^64 (2^shift - divisor) / divisor) + 1, below 2^64 as 2^shift < 2 divisor */
    const unsigned __int128 excess = ((unsigned __int128)1 << d.shift) - divisor;
    d.magic = (uint64_t)((excess << 64) / divisor) + 1;
    return d;
}

static int contiguous_as_out(const ew_layout_t *l, int k)
{
    for (int d = 0; d < l->ndim; ++d)
        if (l->stride[k][d] != l->stride[0][d])
            return 0;
    return 1;
}

static int out_dense(const ew_layout_t *l)
{
    int64_t step = 1;
    for (int d = 0; d < l->ndim; ++d) {
        if (l->stride[0][d] != step)
            return 0;
        step *= l->shape[d];
    }
    return 1;
}

static int all_zero(const ew_layout_t *l, int k)
{
    for (int d = 0; d < l->ndim; ++d)
        if (l->stride[k][d] != 0)
            return 0;
    return 1;
}

/* The dimension t >= 1 along which input k is contiguous while out is contiguous along 0 and the input
 * is not (nor broadcast) there: tiles of dimensions 0 and t read both coalesced. 0 if none. */
static int transposed_dim(const ew_layout_t *l, int k)
{
    if (l->stride[0][0] != 1 || l->stride[k][0] == 0 || llabs(l->stride[k][0]) == 1 ||
        l->shape[0] < EW_TILE_MIN_EXTENT)
        return 0;
    for (int d = 1; d < l->ndim; ++d)
        if (llabs(l->stride[k][d]) == 1 && l->shape[d] >= EW_TILE_MIN_EXTENT)
            return d;
    return 0;
}

/* Whether operand k's runs in the tiled kernel (`run` elements along dimension d from a multiple of run)
 * are whole aligned vectors of up to 16 bytes in every tile: contiguous along d, the base and every
 * other stride a multiple of the vector. */
static int tile_runs_aligned(const ew_layout_t *l, int k, int d, size_t elem_size, int run)
{
    const size_t vector = (size_t)run * elem_size < 16 ? (size_t)run * elem_size : 16;
    if (l->stride[k][d] != 1 || (l->base[k] & (vector - 1)) != 0)
        return 0;
    for (int e = 0; e < l->ndim; ++e)
        if (e != d && l->stride[k][e] % (int64_t)(vector / elem_size) != 0)
            return 0;
    return 1;
}

/* One pass: every block takes its share once (the kernels' grid-stride loops cover the rest only past
 * INT32_MAX blocks). A grid capped at the resident blocks left a second, mostly empty wave where not
 * every block fits at once. */
static unsigned grid_blocks(int64_t work_per_block, int64_t work)
{
    const int64_t blocks = (work + work_per_block - 1) / work_per_block;
    return (unsigned)(blocks < 1 ? 1 : blocks < INT32_MAX ? blocks : INT32_MAX);
}

ew_strided_plan_t ew_strided_plan_make(const ew_layout_t *l, const ew_policy_t *policy)
{
    const size_t *elem_size = l->elem_size;
    ew_strided_plan_t plan;
    memset(&plan, 0, sizeof plan);
    plan.ndim = l->ndim;
    plan.n = l->n;
    memcpy(plan.shape, l->shape, sizeof plan.shape);
    memcpy(plan.stride, l->stride, sizeof plan.stride);
    for (int d = 0; d < l->ndim; ++d)
        plan.divider[d] = ew_divider_make((uint64_t)l->shape[d]);
    for (int k = 0; k < l->count && l->ndim >= 2; ++k)
        /* in wrapping arithmetic, as the kernels add it: spans of over 2^63 bytes would leave int64 */
        plan.carry[k] = (int64_t)((uint64_t)l->stride[k][1] - (uint64_t)(l->shape[0] - 1) * (uint64_t)l->stride[k][0]);
    if (ew_layout_is_flat(l)) {
        plan.kernel = EW_STRIDED_FLAT;
        return plan;
    }

    size_t widest = 0; /* the widest operand's element */
    for (int k = 0; k < l->count; ++k)
        widest = elem_size[k] > widest ? elem_size[k] : widest;
    for (int k = 1; k < l->count && !plan.tile_dim; ++k)
        plan.tile_dim = transposed_dim(l, k);
    if (plan.tile_dim) {
        plan.kernel = EW_STRIDED_TILED;
        const int t = plan.tile_dim;
        plan.access[0] = EW_ACCESS_INDEXED;
        for (int k = 1; k < l->count; ++k)
            plan.access[k] = all_zero(l, k)                ? EW_ACCESS_SCALAR
                             : llabs(l->stride[k][t]) == 1 &&
                                     l->stride[k][0] != 0 && llabs(l->stride[k][0]) != 1 ? EW_ACCESS_TILED
                                                                                         : EW_ACCESS_INDEXED;
        plan.tile_run = EW_TILE_RUN(widest); /* the kernel's kTileRun */
        /* the tile index, fastest first: tiles along 0, along t, then the other dimensions */
        const int64_t tile = (int64_t)EW_TILE_THREADS * plan.tile_run;
        int e = 0;
        plan.tile_order[e] = 0;
        plan.tile_extent[e++] = (l->shape[0] + tile - 1) / tile;
        plan.tile_order[e] = t;
        plan.tile_extent[e++] = (l->shape[t] + tile - 1) / tile;
        for (int d = 1; d < l->ndim; ++d)
            if (d != t) {
                plan.tile_order[e] = d;
                plan.tile_extent[e++] = l->shape[d];
            }
        plan.tiles = 1;
        for (int i = 0; i < l->ndim; ++i) {
            plan.tile_divider[i] = ew_divider_make((uint64_t)plan.tile_extent[i]);
            plan.tiles *= plan.tile_extent[i];
        }
        for (int k = 0; k < l->count; ++k) {
            const int tiled = plan.access[k] == EW_ACCESS_TILED;
            if (plan.access[k] != EW_ACCESS_SCALAR &&
                tile_runs_aligned(l, k, tiled ? t : 0, elem_size[k], plan.tile_run))
                plan.tile_vector |= 1u << k;
        }
        plan.blocks = grid_blocks(1, plan.tiles);
        return plan;
    }

    plan.kernel = EW_STRIDED_GATHER;
    plan.pack = EW_PLAN_MAX_PACK(widest);
    const int dense = out_dense(l);
    plan.access[0] = dense ? EW_ACCESS_PACKED : EW_ACCESS_INDEXED;
    if (dense) {
        /* the head aligns out to its pack */
        const uintptr_t pack_bytes = (uintptr_t)plan.pack * elem_size[0];
        const int64_t misaligned = (int64_t)((pack_bytes - (l->base[0] & (pack_bytes - 1))) & (pack_bytes - 1));
        plan.head = misaligned / (int64_t)elem_size[0];
        if (plan.head > l->n)
            plan.head = l->n;
    }
    plan.packs = (l->n - plan.head) / plan.pack;
    for (int k = 1; k < l->count; ++k) {
        if (all_zero(l, k)) {
            plan.access[k] = EW_ACCESS_SCALAR;
        } else if (dense && contiguous_as_out(l, k)) {
            const uintptr_t pack_bytes = (uintptr_t)plan.pack * elem_size[k];
            const uintptr_t first = l->base[k] + (uintptr_t)plan.head * elem_size[k];
            plan.access[k] = (first & (pack_bytes - 1)) == 0 ? EW_ACCESS_PACKED : EW_ACCESS_LINEAR;
        } else {
            plan.access[k] = EW_ACCESS_INDEXED;
        }
    }
    const int64_t packs_per_block = (int64_t)EW_PLAN_BLOCK_THREADS * EW_GATHER_UNROLL;
    if (!dense || l->ndim > 2) {
        plan.blocks = grid_blocks(packs_per_block, plan.packs > 0 ? plan.packs : 1);
        return plan;
    }
    /* out dense over one or two dimensions: the rows kernel, its head and tail in one block past the body's.
     * Packed inputs in 16-byte packs come by bulk copies (every tile of them starts and ends 16-byte
     * aligned), a slot of the block's packs each. A block takes EW_ROWS_GROUP packs, or the policy's
     * tile where the kernel reads it from the plan (2-byte elements, EW_ROWS_TILE_FROM_PLAN) and an input
     * is read along the row; halved while the slots overflow. */
    plan.kernel = EW_STRIDED_ROWS;
    /* An input read along the row takes its packs whole where every pack of out lies in one row (out's
     * head none, rows of whole packs) and the input either runs along the row, every row's start
     * aligned to its pack (one vector access), or repeats one element along it. */
    const int packs_in_rows = plan.head == 0 && l->shape[0] % plan.pack == 0;
    int staged_count = 0, along_row = 0, runs_along = 0;
    plan.rows_whole = 1;
    for (int k = 1; k < l->count; ++k) {
        const int64_t pack_bytes = (int64_t)plan.pack * (int64_t)elem_size[k];
        if (plan.access[k] == EW_ACCESS_PACKED && pack_bytes == 16 && policy->bulk != EW_BULK_OFF &&
            plan.packs > 0) {
            plan.staged |= 1u << k;
            ++staged_count;
        } else if (plan.access[k] == EW_ACCESS_LINEAR) {
            along_row = 1;
            runs_along = 1;
            plan.rows_whole = 0;
        } else if (plan.access[k] == EW_ACCESS_INDEXED) {
            along_row = 1;
            runs_along |= l->stride[k][0] == 1;
            plan.rows_whole &= packs_in_rows &&
                               (l->stride[k][0] == 0 ||
                                (l->stride[k][0] == 1 && (int64_t)(l->base[k] % (uintptr_t)pack_bytes) == 0 &&
                                 (l->ndim < 2 || l->stride[k][1] * (int64_t)elem_size[k] % pack_bytes == 0)));
        }
    }
    /* Where the row holds two packs or more, most of its packs lie inside it: those of an input running
     * along it at another phase are spliced from the two aligned packs around them. */
    plan.rows_spliced = !plan.rows_whole && runs_along && l->shape[0] >= 2 * (int64_t)plan.pack;
    /* Where the rows are shorter than that, an input broadcast over them has one pack for each phase of
     * the row: C of them, built into a table in shared memory as a block starts. */
    int table_count = 0;
    for (int k = 1; k < l->count && !plan.rows_whole; ++k)
        if (plan.access[k] == EW_ACCESS_INDEXED && l->ndim == 2 && l->stride[k][1] == 0 &&
            l->shape[0] < 2 * (int64_t)plan.pack) {
            plan.rows_table |= 1u << k;
            ++table_count;
        }
    const int64_t table_bytes = table_count * l->shape[0] * 16;
    plan.block_packs = EW_ROWS_TILE_FROM_PLAN(widest) && along_row ? policy->rows_tile_packs : EW_ROWS_GROUP;
    while (plan.block_packs > EW_ROWS_GROUP &&
           staged_count * plan.block_packs * 16 + table_bytes > EW_ROWS_MAX_SHARED)
        plan.block_packs /= 2;
    plan.shared_bytes = (unsigned)(staged_count * plan.block_packs * 16 + table_bytes);
    plan.blocks = plan.packs > 0 ? grid_blocks(plan.block_packs, plan.packs) : 0;
    if (plan.packs * plan.pack < l->n && plan.blocks < INT32_MAX)
        ++plan.blocks;
    return plan;
}
