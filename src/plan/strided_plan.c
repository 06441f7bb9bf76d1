/* SPDX-License-Identifier: Apache-2.0 */
/* The strided plan: the chooser, then the gather, rows and tiled planners (src/plan/strided_plan.h). */
#include <stdlib.h>
#include <string.h>

#include "plan/strided_plan.h"

/* ---- what the planners share ---- */

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

/* What every plan holds: the layout as the kernels index it. Zeroed first, padding too: the fields a
 * kernel does not read stay 0, and two plans of one layout are the same bytes. */
static void plan_layout(const ew_layout_t *l, ew_strided_kernel_t kernel, ew_strided_plan_t *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->kernel = kernel;
    plan->ndim = l->ndim;
    plan->n = l->n;
    memcpy(plan->shape, l->shape, sizeof plan->shape);
    memcpy(plan->stride, l->stride, sizeof plan->stride);
    for (int d = 0; d < l->ndim; ++d)
        plan->divider[d] = ew_divider_make((uint64_t)l->shape[d]);
    for (int k = 0; k < l->count && l->ndim >= 2; ++k)
        /* in wrapping arithmetic, as the kernels add it: spans of over 2^63 bytes would leave int64 */
        plan->carry[k] =
            (int64_t)((uint64_t)l->stride[k][1] - (uint64_t)(l->shape[0] - 1) * (uint64_t)l->stride[k][0]);
}

static size_t widest_element(const ew_layout_t *l)
{
    size_t widest = 0;
    for (int k = 0; k < l->count; ++k)
        widest = l->elem_size[k] > widest ? l->elem_size[k] : widest;
    return widest;
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

/* One pass: every block takes its share once (the kernels' grid-stride loops cover the rest only past
 * INT32_MAX blocks). A grid capped at the resident blocks left a second, mostly empty wave where not
 * every block fits at once. */
static unsigned grid_blocks(int64_t work_per_block, int64_t work)
{
    const int64_t blocks = (work + work_per_block - 1) / work_per_block;
    return (unsigned)(blocks < 1 ? 1 : blocks < INT32_MAX ? blocks : INT32_MAX);
}

/* ---- the chooser ---- */

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

/* The first input's transposed dimension: the one the tiled kernel tiles with dimension 0. 0 if none. */
static int tile_dim(const ew_layout_t *l)
{
    for (int k = 1; k < l->count; ++k) {
        const int t = transposed_dim(l, k);
        if (t)
            return t;
    }
    return 0;
}

ew_strided_kernel_t ew_strided_plan_kernel(const ew_layout_t *l)
{
    if (ew_layout_is_flat(l))
        return EW_STRIDED_FLAT;
    if (l->outputs != 1u) /* several outputs: the gather kernel alone stores them */
        return EW_STRIDED_GATHER;
    if (tile_dim(l))
        return EW_STRIDED_TILED;
    return out_dense(l) && l->ndim <= 2 ? EW_STRIDED_ROWS : EW_STRIDED_GATHER;
}

ew_strided_plan_t ew_strided_plan_make(const ew_layout_t *l, const ew_policy_t *policy)
{
    switch (ew_strided_plan_kernel(l)) {
    case EW_STRIDED_GATHER: return ew_strided_plan_gather(l);
    case EW_STRIDED_ROWS: return ew_strided_plan_rows(l, policy);
    case EW_STRIDED_TILED: return ew_strided_plan_tiled(l);
    case EW_STRIDED_FLAT: break;
    }
    ew_strided_plan_t plan; /* the flat call's: the layout alone */
    plan_layout(l, EW_STRIDED_FLAT, &plan);
    return plan;
}

/* ---- out in packs: the gather and rows planners ---- */

/* Input k beside out's packs: scalar where every stride is 0; where out is dense and the input
 * contiguous as out, packed if its packs from out's head are aligned, else linear; else indexed. */
static ew_access_t packed_access(const ew_layout_t *l, const ew_strided_plan_t *plan, int k)
{
    if (all_zero(l, k))
        return EW_ACCESS_SCALAR;
    if (plan->access[0] != EW_ACCESS_PACKED || !contiguous_as_out(l, k))
        return EW_ACCESS_INDEXED;
    const uintptr_t pack_bytes = (uintptr_t)plan->pack * l->elem_size[k];
    const uintptr_t first = l->base[k] + (uintptr_t)plan->head * l->elem_size[k];
    return (first & (pack_bytes - 1)) == 0 ? EW_ACCESS_PACKED : EW_ACCESS_LINEAR;
}

/* Out walked in packs of the widest operand's pack: where out is dense, after a head (at most n
 * elements) that aligns it to its pack; else indexed, no head. Then each input's access. */
static void plan_packs(const ew_layout_t *l, ew_strided_plan_t *plan)
{
    plan->pack = EW_PLAN_MAX_PACK(widest_element(l));
    const int dense = out_dense(l);
    plan->access[0] = dense ? EW_ACCESS_PACKED : EW_ACCESS_INDEXED;
    if (dense) {
        const uintptr_t pack_bytes = (uintptr_t)plan->pack * l->elem_size[0];
        const int64_t misaligned =
            (int64_t)((pack_bytes - (l->base[0] & (pack_bytes - 1))) & (pack_bytes - 1));
        plan->head = misaligned / (int64_t)l->elem_size[0];
        if (plan->head > l->n)
            plan->head = l->n;
    }
    plan->packs = (l->n - plan->head) / plan->pack;
    for (int k = 1; k < l->count; ++k)
        plan->access[k] = packed_access(l, plan, k);
}

/* ---- the gather planner ---- */

ew_strided_plan_t ew_strided_plan_gather(const ew_layout_t *l)
{
    ew_strided_plan_t plan;
    plan_layout(l, EW_STRIDED_GATHER, &plan);
    plan_packs(l, &plan);
    const int64_t packs_per_block = (int64_t)EW_PLAN_BLOCK_THREADS * EW_GATHER_UNROLL;
    plan.blocks = grid_blocks(packs_per_block, plan.packs > 0 ? plan.packs : 1);
    return plan;
}

/* ---- the rows planner ----
 * Out dense over one or two dimensions: packs of out, its head and tail in one block past the body's.
 * Packed inputs in 16-byte packs come by bulk copies, a slot of the block's packs each; the other
 * inputs are scalar or read along the row (a broadcast row or column). */

static int read_along_row(const ew_strided_plan_t *plan, int k)
{
    return plan->access[k] == EW_ACCESS_LINEAR || plan->access[k] == EW_ACCESS_INDEXED;
}

/* Of an input read along the row: whether it runs along it (stride 1), at out's phase or another. */
static int runs_along_row(const ew_layout_t *l, const ew_strided_plan_t *plan, int k)
{
    return plan->access[k] == EW_ACCESS_LINEAR || l->stride[k][0] == 1;
}

/* Of an input read along the row: whether it takes its packs whole. Every pack of out lies in one row
 * (out's head none, rows of whole packs) and the input either runs along the row, every row's start
 * aligned to its pack (one vector access), or repeats one element along it. */
static int whole_packs_along_row(const ew_layout_t *l, const ew_strided_plan_t *plan, int k)
{
    if (plan->access[k] != EW_ACCESS_INDEXED || plan->head != 0 || l->shape[0] % plan->pack != 0)
        return 0;
    const int64_t *stride = l->stride[k], pack_bytes = (int64_t)plan->pack * (int64_t)l->elem_size[k];
    return stride[0] == 0 || (stride[0] == 1 && (int64_t)(l->base[k] % (uintptr_t)pack_bytes) == 0 &&
                              (l->ndim < 2 || stride[1] * (int64_t)l->elem_size[k] % pack_bytes == 0));
}

/* The packed inputs in 16-byte packs, where bulk copies are on: every tile of them starts and ends
 * 16-byte aligned. */
static unsigned rows_staged(const ew_layout_t *l, const ew_strided_plan_t *plan, const ew_policy_t *policy)
{
    unsigned staged = 0;
    for (int k = 1; k < l->count; ++k)
        if (plan->access[k] == EW_ACCESS_PACKED && (int64_t)plan->pack * (int64_t)l->elem_size[k] == 16 &&
            policy->bulk != EW_BULK_OFF && plan->packs > 0)
            staged |= 1u << k;
    return staged;
}

/* Where the packs are not whole and the rows shorter than two packs, an input broadcast over them has
 * one pack for each phase of the row: C of them, built into a table in shared memory as a block
 * starts. */
static unsigned rows_tables(const ew_layout_t *l, const ew_strided_plan_t *plan)
{
    unsigned tables = 0;
    for (int k = 1; k < l->count && !plan->rows_whole; ++k)
        if (plan->access[k] == EW_ACCESS_INDEXED && l->ndim == 2 && l->stride[k][1] == 0 &&
            l->shape[0] < 2 * (int64_t)plan->pack)
            tables |= 1u << k;
    return tables;
}

/* A block's packs: EW_ROWS_GROUP, or the policy's tile where the kernel reads it from the plan (2-byte
 * elements, EW_ROWS_TILE_FROM_PLAN) and an input is read along the row; halved while the staged slots
 * and the tables overflow EW_ROWS_MAX_SHARED. */
static int rows_block_packs(const ew_layout_t *l, const ew_policy_t *policy, int along_row, int slots,
                            int64_t table_bytes)
{
    int block_packs =
        EW_ROWS_TILE_FROM_PLAN(widest_element(l)) && along_row ? policy->rows_tile_packs : EW_ROWS_GROUP;
    while (block_packs > EW_ROWS_GROUP && slots * block_packs * 16 + table_bytes > EW_ROWS_MAX_SHARED)
        block_packs /= 2;
    return block_packs;
}

ew_strided_plan_t ew_strided_plan_rows(const ew_layout_t *l, const ew_policy_t *policy)
{
    ew_strided_plan_t plan;
    plan_layout(l, EW_STRIDED_ROWS, &plan);
    plan_packs(l, &plan);
    int along_row = 0, runs_along = 0;
    plan.rows_whole = 1;
    for (int k = 1; k < l->count; ++k)
        if (read_along_row(&plan, k)) {
            along_row = 1;
            runs_along |= runs_along_row(l, &plan, k);
            plan.rows_whole &= whole_packs_along_row(l, &plan, k);
        }
    /* Where the row holds two packs or more, most of its packs lie inside it: those of an input running
     * along it at another phase are spliced from the two aligned packs around them. */
    plan.rows_spliced = !plan.rows_whole && runs_along && l->shape[0] >= 2 * (int64_t)plan.pack;
    plan.rows_table = rows_tables(l, &plan);
    plan.staged = rows_staged(l, &plan, policy);
    const int slots = __builtin_popcount(plan.staged);
    const int64_t table_bytes = __builtin_popcount(plan.rows_table) * l->shape[0] * 16;
    plan.block_packs = rows_block_packs(l, policy, along_row, slots, table_bytes);
    plan.shared_bytes = (unsigned)(slots * plan.block_packs * 16 + table_bytes);
    plan.blocks = plan.packs > 0 ? grid_blocks(plan.block_packs, plan.packs) : 0;
    if (plan.packs * plan.pack < l->n && plan.blocks < INT32_MAX)
        ++plan.blocks; /* the edge block: out's head and tail */
    return plan;
}

/* ---- the tiled planner ----
 * Tiles of dimensions 0 and tile_dim, a block each: out and every input not transposed read along 0,
 * the transposed inputs along tile_dim, through shared memory. */

/* Input k in the tiled kernel: scalar where every stride is 0; tiled where it runs along tile dimension
 * t and not along 0 (nor is broadcast there); else indexed. */
static ew_access_t tiled_access(const ew_layout_t *l, int k, int t)
{
    if (all_zero(l, k))
        return EW_ACCESS_SCALAR;
    const int64_t *stride = l->stride[k];
    return llabs(stride[t]) == 1 && stride[0] != 0 && llabs(stride[0]) != 1 ? EW_ACCESS_TILED
                                                                            : EW_ACCESS_INDEXED;
}

/* The tile index, fastest first: tiles along 0, along tile_dim, then the other dimensions' extents;
 * each with its divider, and the tiles in all. */
static void tile_index(const ew_layout_t *l, ew_strided_plan_t *plan)
{
    const int t = plan->tile_dim;
    const int64_t tile = (int64_t)EW_TILE_THREADS * plan->tile_run;
    int e = 0;
    plan->tile_order[e] = 0;
    plan->tile_extent[e++] = (l->shape[0] + tile - 1) / tile;
    plan->tile_order[e] = t;
    plan->tile_extent[e++] = (l->shape[t] + tile - 1) / tile;
    for (int d = 1; d < l->ndim; ++d)
        if (d != t) {
            plan->tile_order[e] = d;
            plan->tile_extent[e++] = l->shape[d];
        }
    plan->tiles = 1;
    for (int i = 0; i < l->ndim; ++i) {
        plan->tile_divider[i] = ew_divider_make((uint64_t)plan->tile_extent[i]);
        plan->tiles *= plan->tile_extent[i];
    }
}

/* Whether operand k's runs in the tiled kernel (`run` elements along dimension d from a multiple of run)
 * are whole aligned vectors of up to 16 bytes in every tile: contiguous along d, the base and every
 * other stride a multiple of the vector. */
static int tile_runs_aligned(const ew_layout_t *l, int k, int d, int run)
{
    const size_t elem_size = l->elem_size[k];
    const size_t vector = (size_t)run * elem_size < 16 ? (size_t)run * elem_size : 16;
    if (l->stride[k][d] != 1 || (l->base[k] & (vector - 1)) != 0)
        return 0;
    for (int e = 0; e < l->ndim; ++e)
        if (e != d && l->stride[k][e] % (int64_t)(vector / elem_size) != 0)
            return 0;
    return 1;
}

ew_strided_plan_t ew_strided_plan_tiled(const ew_layout_t *l)
{
    ew_strided_plan_t plan;
    plan_layout(l, EW_STRIDED_TILED, &plan);
    const int t = plan.tile_dim = tile_dim(l);
    plan.tile_run = EW_TILE_RUN(widest_element(l)); /* the kernel's kTileRun */
    plan.access[0] = EW_ACCESS_INDEXED;
    for (int k = 1; k < l->count; ++k)
        plan.access[k] = tiled_access(l, k, t);
    tile_index(l, &plan);
    for (int k = 0; k < l->count; ++k) {
        const int along = plan.access[k] == EW_ACCESS_TILED ? t : 0;
        if (plan.access[k] != EW_ACCESS_SCALAR && tile_runs_aligned(l, k, along, plan.tile_run))
            plan.tile_vector |= 1u << k;
    }
    plan.blocks = grid_blocks(1, plan.tiles);
    return plan;
}
