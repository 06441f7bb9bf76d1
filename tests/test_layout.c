/* SPDX-License-Identifier: Apache-2.0 */
/* Strided layouts (src/layout.c) against the model of the header's rules (tests/layout_model.h, shared
 * with the fuzzer) and its brute force: over random views (ndim 0-8, extents 0-5, permuted, broadcast,
 * flipped and gapped strides, inputs in place or overlapping out),
 * - the library accepts exactly the layouts the model accepts, and its refusals name an argument the
 *   model says is at fault;
 * - a layout accepted has no two out elements at one address, and no input element meeting an out
 *   element but its own index's, exactly in place (enumerated);
 * - the coalesced layout pairs exactly the elements the views pair: the sorted lists of (out, a, b)
 *   addresses over every index agree; its extents are >= 2, out's strides positive and increasing;
 * - the plan: a flat layout is contiguous alike in every operand; the gather plan's packed operands are
 *   contiguous at out's flat index and pack-aligned after the head, its scalar operands all-zero
 *   strides; the tiled plan's tiled inputs contiguous along the tile's second dimension.
 * Then the division the kernels index with, and named layouts with their plans and messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layout.h"
#include "layout_model.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static int64_t random_below(int64_t bound) { return (int64_t)(next_random() % (uint64_t)bound); }

/* ---- the model ---- */

typedef struct {
    int ndim, count;
    int64_t shape[EW_MAX_DIMS];
    int64_t strides[EW_LAYOUT_MAX_OPERANDS][EW_MAX_DIMS];
    uintptr_t address[EW_LAYOUT_MAX_OPERANDS];
    size_t size[EW_LAYOUT_MAX_OPERANDS];
} views_t;

static int64_t elements_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d)
        n *= shape[d];
    return n;
}

static void random_views(views_t *v)
{
    memset(v, 0, sizeof *v);
    v->count = 2 + (int)random_below(2);
    v->ndim = (int)random_below(9);
    if (random_below(2))
        v->ndim = (int)random_below(4);
    for (int d = 0; d < v->ndim; ++d)
        v->shape[d] = random_below(8) == 0 ? 0 : 1 + random_below(random_below(3) == 0 ? 5 : 3);
    static const size_t sizes[] = {1, 2, 4, 8};
    const size_t size = sizes[random_below(4)];
    for (int k = 0; k < v->count; ++k) {
        v->size[k] = v->count == 2 && random_below(2) ? sizes[random_below(4)] : size;
        /* a permutation of the dimensions, contiguous in that order */
        int order[EW_MAX_DIMS];
        for (int d = 0; d < v->ndim; ++d)
            order[d] = d;
        if (random_below(2))
            for (int d = v->ndim - 1; d > 0; --d) {
                int j = (int)random_below(d + 1), t = order[d];
                order[d] = order[j];
                order[j] = t;
            }
        int64_t step = 1 + (random_below(4) == 0);
        for (int j = v->ndim - 1; j >= 0; --j) {
            const int d = order[j];
            v->strides[k][d] = step;
            step *= v->shape[d] > 0 ? v->shape[d] : 1;
            if (random_below(6) == 0)
                step += random_below(3); /* a gap */
        }
        for (int d = 0; d < v->ndim; ++d) {
            if (random_below(6) == 0)
                v->strides[k][d] = -v->strides[k][d];
            if (k > 0 && random_below(5) == 0)
                v->strides[k][d] = 0; /* broadcast */
            if (random_below(25) == 0)
                v->strides[k][d] = random_below(9) - 4;
        }
        v->address[k] = ((uintptr_t)(k + 1) << 36) + (uintptr_t)random_below(64) * v->size[k] * 64;
    }
    if (random_below(6) == 0) { /* an input at out, in place or not */
        int k = 1 + (int)random_below(v->count - 1);
        v->size[k] = v->size[0];
        v->address[k] = v->address[0] + (random_below(3) == 0 ? v->size[0] * (uintptr_t)random_below(3) : 0);
        if (random_below(2))
            memcpy(v->strides[k], v->strides[0], sizeof v->strides[k]);
    }
}

static const char *const names[] = {"out", "a", "b"};
static const char *const stride_names[] = {"out_strides", "a_strides", "b_strides"};

static ew_status_t make(const views_t *v, ew_layout_t *layout)
{
    ew_view_t views[EW_LAYOUT_MAX_OPERANDS];
    for (int k = 0; k < v->count; ++k)
        views[k] = (ew_view_t){names[k], stride_names[k], (const void *)v->address[k], v->strides[k], v->size[k]};
    return ew_layout_make(v->ndim, v->shape, v->count, views, layout);
}

/* The views as the model takes them. */
static void model_operands(const views_t *v, model_operand_t *operands)
{
    for (int k = 0; k < v->count; ++k)
        operands[k] = (model_operand_t){names[k], stride_names[k], v->address[k], v->strides[k], v->size[k]};
}

/* Above this many elements a layout's addresses are not enumerated: sorting the named plans' tens of
 * millions took most of this test's time, and their shapes' coalescing is checked by their numbers. */
#define ELEMENTS_CHECKED (1 << 20)

/* Every element's addresses: out's apart, inputs apart from them but in place, and the coalesced
 * layout pairing the same elements as the views. */
static void check_elements(const views_t *v, const ew_layout_t *l, int64_t n)
{
    /* the views' strides are explicit: the model's enumeration of them, sorted once for both checks */
    model_tuple_t *want = model_enumerate(v->ndim, v->shape, v->count, v->strides, v->address, v->size, n);
    qsort(want, (size_t)n, sizeof *want, model_compare_tuples);
    assert_true(model_tuples_apart(want, n, v->count, v->size));
    /* enumerate's order is outermost-first: hand it the layout's dimensions reversed */
    int64_t shape[EW_MAX_DIMS], strides[EW_LAYOUT_MAX_OPERANDS][EW_MAX_DIMS];
    for (int d = 0; d < l->ndim; ++d) {
        shape[d] = l->shape[l->ndim - 1 - d];
        for (int k = 0; k < v->count; ++k)
            strides[k][d] = l->stride[k][l->ndim - 1 - d];
    }
    model_tuple_t *got = model_enumerate(l->ndim, shape, v->count, strides, l->base, v->size, n);
    qsort(got, (size_t)n, sizeof *got, model_compare_tuples);
    assert_memory_equal(want, got, (size_t)n * sizeof *want);
    free(want);
    free(got);
}

/* Every property of one accepted layout and its plan; returns 1 where it is flat. */

/* rows_whole, element by element: where the plan sets it, every pack of out the rows kernel takes lies
 * in one row of each input read along the row, and that input's elements there are one aligned vector
 * (stride 1) or one element repeated (stride 0). Checked over every pack, or where there are more than
 * ELEMENTS_CHECKED elements over the first pack + 1 rows, within which any layout it refuses fails;
 * so where packs cover those rows the plan must set it exactly when it holds. */
static void check_rows_whole(const views_t *v, const ew_layout_t *l, const ew_strided_plan_t *plan)
{
    const int64_t row = l->shape[0], pack = plan->pack;
    int64_t checked = plan->packs;
    if (plan->head + checked * pack > ELEMENTS_CHECKED && (pack + 1) * row / pack + 1 < checked)
        checked = (pack + 1) * row / pack + 1;
    int whole = 1;
    for (int k = 1; k < v->count && whole; ++k) {
        if (plan->access[k] != EW_ACCESS_INDEXED && plan->access[k] != EW_ACCESS_LINEAR)
            continue;
        const int64_t step = l->stride[k][0], pack_bytes = pack * (int64_t)v->size[k];
        for (int64_t q = 0; q < checked && whole; ++q) {
            const int64_t i = plan->head + q * pack, r = i / row, c = i % row;
            const int64_t offset = c * step + (l->ndim > 1 ? r * l->stride[k][1] : 0);
            const uintptr_t address = l->base[k] + (uintptr_t)offset * v->size[k];
            whole = c + pack <= row &&
                    (step == 0 || (step == 1 && (int64_t)(address % (uintptr_t)pack_bytes) == 0));
        }
    }
    if (plan->rows_whole)
        assert_true(whole);
    else if (checked * pack >= (pack + 1) * row)
        assert_false(whole);
}
/* rows_spliced: the rows kernel splices where rows_whole does not hold, an input read along the row runs
 * along it, and a row holds two packs or more (where most of its packs lie inside it). */
static void check_rows_spliced(const views_t *v, const ew_layout_t *l, const ew_strided_plan_t *plan)
{
    int runs_along = 0;
    for (int k = 1; k < v->count; ++k)
        runs_along |= (plan->access[k] == EW_ACCESS_INDEXED || plan->access[k] == EW_ACCESS_LINEAR) &&
                      l->stride[k][0] == 1;
    assert_int_equal(plan->rows_spliced, !plan->rows_whole && runs_along && l->shape[0] >= 2 * plan->pack);
}

/* rows_table: where rows_whole does not hold and the rows are shorter than two packs, each input
 * indexed along the row and broadcast over rows (every row the same elements, so a pack depends on
 * its phase in the row alone). Returns the tables' count. */
static int check_rows_table(const views_t *v, const ew_layout_t *l, const ew_strided_plan_t *plan)
{
    const int64_t row = l->shape[0], pack = plan->pack;
    int tables = 0;
    for (int k = 1; k < v->count; ++k) {
        const int table = !plan->rows_whole && plan->access[k] == EW_ACCESS_INDEXED && l->ndim == 2 &&
                          l->stride[k][1] == 0 && row < 2 * pack;
        assert_int_equal(plan->rows_table >> k & 1u, table);
        tables += table;
    }
    return tables;
}

static int check_layout(const views_t *v, const ew_layout_t *l)
{
    const int64_t n = elements_of(v->ndim, v->shape);
    assert_int_equal(l->n, n);
    if (n == 0)
        return 0;
    assert_in_range(l->ndim, 0, v->ndim);
    for (int d = 0; d < l->ndim; ++d) {
        assert_true(l->shape[d] >= 2);
        assert_true(l->stride[0][d] > 0);
        if (d > 0)
            assert_true(l->stride[0][d] > l->stride[0][d - 1]);
    }
    if (n <= ELEMENTS_CHECKED)
        check_elements(v, l, n);

    /* the plan, staging allowed or not, the rows kernel's tile any the policy may have */
    const int stage = (int)(n & 1);
    ew_policy_t policy = ew_policy_for(9, 0);
    policy.bulk = stage ? EW_BULK_AUTO : EW_BULK_OFF;
    policy.rows_tile_packs = 512 << (n >> 1) % 4;
    const ew_strided_plan_t plan = ew_strided_plan_make(l, &policy);
    if (plan.kernel == EW_STRIDED_FLAT) {
        assert_true(ew_layout_is_flat(l));
        for (int k = 0; k < v->count && l->ndim == 1; ++k)
            assert_int_equal(l->stride[k][0], 1);
        return 1;
    }
    assert_false(ew_layout_is_flat(l));
    assert_true(plan.blocks >= 1);
    for (int d = 0; d < l->ndim; ++d)
        assert_int_equal(plan.divider[d].divisor, (uint64_t)l->shape[d]);
    if (plan.kernel == EW_STRIDED_TILED) {
        const int t = plan.tile_dim;
        assert_in_range(t, 1, l->ndim - 1);
        assert_int_equal(l->stride[0][0], 1);
        int tiled = 0;
        for (int k = 1; k < v->count; ++k)
            if (plan.access[k] == EW_ACCESS_TILED) {
                ++tiled;
                assert_true(llabs(l->stride[k][t]) == 1);
            }
        assert_true(tiled >= 1);
        /* a thread's runs: of the widest operand, 16 bytes of 2- and 4-byte elements */
        size_t widest = 0;
        for (int k = 0; k < v->count; ++k)
            widest = l->elem_size[k] > widest ? l->elem_size[k] : widest;
        assert_int_equal(plan.tile_run, widest >= 4 ? 4 : 8);
        const int64_t tile = (int64_t)EW_TILE_THREADS * plan.tile_run;
        assert_int_equal(plan.tile_extent[0], (l->shape[0] + tile - 1) / tile);
        assert_int_equal(plan.tile_extent[1], (l->shape[t] + tile - 1) / tile);
        int64_t tiles = 1;
        for (int e = 0; e < l->ndim; ++e)
            tiles *= plan.tile_extent[e];
        assert_int_equal(plan.tiles, tiles);
        return 0;
    }
    int64_t dense_step = 1, dense = 1;
    for (int d = 0; d < l->ndim; ++d) {
        dense &= l->stride[0][d] == dense_step;
        dense_step *= l->shape[d];
    }
    /* out dense over one or two dimensions: the rows kernel, its edges in one block past the body's */
    assert_int_equal(plan.kernel, dense && l->ndim <= 2 ? EW_STRIDED_ROWS : EW_STRIDED_GATHER);
    unsigned staged = 0, slots = 0;
    if (plan.kernel == EW_STRIDED_ROWS) {
        /* staged: the packed inputs whose packs are 16 bytes, where staging is allowed */
        for (int k = 1; k < v->count && stage && plan.packs > 0; ++k)
            if (plan.access[k] == EW_ACCESS_PACKED && plan.pack * v->size[k] == 16) {
                staged |= 1u << k;
                ++slots;
            }
        /* 2-byte elements, an input read along the row: the policy's tile, or the largest half of it
         * whose slots fit; else EW_ROWS_GROUP */
        size_t widest = 0;
        int along_row = 0;
        for (int k = 0; k < v->count; ++k) {
            widest = v->size[k] > widest ? v->size[k] : widest;
            along_row |= k > 0 && (plan.access[k] == EW_ACCESS_INDEXED || plan.access[k] == EW_ACCESS_LINEAR);
        }
        int64_t per_block = widest == 2 && along_row ? policy.rows_tile_packs : EW_ROWS_GROUP;
        const int64_t table_bytes = check_rows_table(v, l, &plan) * l->shape[0] * 16;
        while (per_block > EW_ROWS_GROUP && slots * per_block * 16 + table_bytes > EW_ROWS_MAX_SHARED)
            per_block /= 2;
        assert_int_equal(plan.block_packs, per_block);
        assert_true(slots * per_block * 16 + table_bytes <= EW_ROWS_MAX_SHARED);
        const int64_t body = (plan.packs + per_block - 1) / per_block;
        assert_int_equal(plan.blocks, body + (plan.packs * plan.pack < n));
        assert_int_equal(plan.shared_bytes, slots * per_block * 16 + table_bytes);
        check_rows_whole(v, l, &plan);
        check_rows_spliced(v, l, &plan);
    } else {
        assert_int_equal(plan.shared_bytes, 0);
    }
    assert_int_equal(plan.staged, staged);
    assert_int_equal(plan.access[0], dense ? EW_ACCESS_PACKED : EW_ACCESS_INDEXED);
    assert_int_equal(plan.head + plan.packs * plan.pack <= n, 1);
    assert_true(n - plan.head - plan.packs * plan.pack < plan.pack);
    if (dense) {
        assert_true(plan.head < plan.pack || plan.head == n);
        if (plan.packs > 0)
            assert_int_equal((l->base[0] + (uintptr_t)plan.head * v->size[0]) % (plan.pack * v->size[0]), 0);
    } else {
        assert_int_equal(plan.head, 0);
    }
    for (int k = 1; k < v->count; ++k) {
        int same = 1, zero = 1;
        for (int d = 0; d < l->ndim; ++d) {
            same &= l->stride[k][d] == l->stride[0][d];
            zero &= l->stride[k][d] == 0;
        }
        switch (plan.access[k]) {
        case EW_ACCESS_PACKED:
            assert_true(dense && same);
            assert_int_equal((l->base[k] + (uintptr_t)plan.head * v->size[k]) % (plan.pack * v->size[k]), 0);
            break;
        case EW_ACCESS_LINEAR: assert_true(dense && same); break;
        case EW_ACCESS_SCALAR: assert_true(zero); break;
        case EW_ACCESS_INDEXED: assert_false(zero); break;
        default: fail_msg("input %d: access %d in a gather or rows plan", k, plan.access[k]);
        }
    }
    return 0;
}

static void test_random_layouts(void **state)
{
    (void)state;
    int accepted = 0, refused = 0, flat = 0;
    for (int trial = 0; trial < 40000; ++trial) {
        views_t v;
        random_views(&v);
        ew_layout_t layout;
        ew_status_t status = make(&v, &layout);
        model_operand_t operands[EW_LAYOUT_MAX_OPERANDS];
        model_operands(&v, operands);
        const model_verdict_t verdict = model_views(v.ndim, v.shape, v.count, operands);
        if (status != (verdict.valid ? EW_SUCCESS : EW_ERROR_INVALID_VALUE))
            fail_msg("trial %d: %s (\"%s\"), the model says %s", trial, ew_status_string(status),
                     ew_get_last_error_message(), verdict.valid ? "valid" : "refused");
        if (status == EW_SUCCESS) {
            ++accepted;
            flat += check_layout(&v, &layout);
        } else {
            ++refused;
            if (!model_message_names(&verdict, ew_get_last_error_message()))
                fail_msg("trial %d: \"%s\" names none of the %d arguments at fault (\"%s\", ...)", trial,
                         ew_get_last_error_message(), verdict.names, verdict.name[0]);
        }
    }
    printf("# %d layouts accepted (%d flat), %d refused\n", accepted, flat, refused);
    assert_true(accepted > 10000 && refused > 1000 && flat > 1000);
}

/* Views that are certainly valid: out a flipped permutation of a contiguous block, inputs anywhere
 * apart from it. All must be accepted. */
static void test_valid_layouts_are_accepted(void **state)
{
    (void)state;
    for (int trial = 0; trial < 10000; ++trial) {
        views_t v;
        do
            random_views(&v);
        while (0);
        /* out: contiguous in a permuted order with flips, no gaps or zeros */
        int64_t step = 1;
        for (int d = v.ndim - 1; d >= 0; --d) {
            v.strides[0][d] = random_below(2) ? step : -step;
            step *= v.shape[d] > 0 ? v.shape[d] : 1;
        }
        for (int k = 1; k < v.count; ++k)
            v.address[k] = ((uintptr_t)(k + 1) << 36);
        ew_layout_t layout;
        ew_status_t status = make(&v, &layout);
        if (status != EW_SUCCESS)
            fail_msg("trial %d refused: %s", trial, ew_get_last_error_message());
        check_layout(&v, &layout);
    }
}

/* ---- the division ---- */

static void check_division(uint64_t d, uint64_t n)
{
    const ew_divider_t divider = ew_divider_make(d);
    const uint64_t q = ew_divider_div(&divider, n);
    if (q != n / d)
        fail_msg("%llu / %llu: %llu, expected %llu", (unsigned long long)n, (unsigned long long)d,
                 (unsigned long long)q, (unsigned long long)(n / d));
}

static void test_divider(void **state)
{
    (void)state;
    const uint64_t top = ((uint64_t)1 << 63) - 1;
    for (int s = 0; s < 63; ++s) {
        const uint64_t p = (uint64_t)1 << s;
        const uint64_t divisors[] = {p, p + 1, p > 1 ? p - 1 : 1, p * 3 / 2 + 1};
        for (size_t i = 0; i < COUNT(divisors); ++i) {
            const uint64_t d = divisors[i] > top ? top : divisors[i];
            const uint64_t dividends[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, top, top - 1, top / d * d,
                                          top / d * d - 1, next_random() >> 1};
            for (size_t j = 0; j < COUNT(dividends); ++j)
                check_division(d, dividends[j] > top ? top : dividends[j]);
        }
    }
    for (int i = 0; i < 2000000; ++i) {
        uint64_t d = next_random() >> (1 + next_random() % 63);
        check_division(d ? d : 1, next_random() >> (1 + next_random() % 63));
    }
}

/* ---- named layouts ---- */

static ew_strided_plan_t plan_of(int ndim, const int64_t *shape, int count, const int64_t *const *strides,
                                 const size_t *size, ew_layout_t *layout)
{
    views_t v = {.ndim = ndim, .count = count};
    memcpy(v.shape, shape, (size_t)ndim * sizeof *shape);
    for (int k = 0; k < count; ++k) {
        v.address[k] = ((uintptr_t)(k + 1) << 36);
        v.size[k] = size[k];
        int64_t step = 1;
        for (int d = ndim - 1; d >= 0; --d) {
            v.strides[k][d] = strides[k] ? strides[k][d] : step;
            step *= shape[d];
        }
    }
    if (make(&v, layout) != EW_SUCCESS)
        fail_msg("refused: %s", ew_get_last_error_message());
    check_layout(&v, layout);
    const ew_policy_t policy = ew_policy_for(9, 0); /* 1,024 packs a 2-byte rows block along its row */
    return ew_strided_plan_make(layout, &policy);
}

static void test_named_plans(void **state)
{
    (void)state;
    ew_layout_t l;
    const size_t f32[] = {4, 4, 4}, f16[] = {2, 2, 2}, cast[] = {2, 4};

    /* contiguous: the flat call, one dimension of n */
    const int64_t shape4[] = {2, 3, 4, 5};
    ew_strided_plan_t p = plan_of(4, shape4, 3, (const int64_t *const[]){NULL, NULL, NULL}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_FLAT);
    assert_int_equal(l.n, 120);

    /* [N,C] + [C]: rows, a packed, b indexed along the row */
    const int64_t nc[] = {1000, 768};
    p = plan_of(2, nc, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){0, 1}}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_ROWS);
    assert_int_equal(p.blocks, 1000 * 768 / 4 / 512); /* no head, no tail: no edge block */
    assert_int_equal(l.ndim, 2);
    assert_int_equal(p.access[0], EW_ACCESS_PACKED);
    assert_int_equal(p.access[1], EW_ACCESS_PACKED);
    assert_int_equal(p.access[2], EW_ACCESS_INDEXED);
    assert_int_equal(p.pack, 4);
    assert_int_equal(p.staged, 1u << 1); /* a by bulk copies, one 8 KiB slot a block */
    assert_int_equal(p.block_packs, 512);
    assert_int_equal(p.shared_bytes, 8192);

    /* the same in f16: the policy's tile of 1,024 packs, a 16 KiB slot */
    p = plan_of(2, nc, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){0, 1}}, f16, &l);
    assert_int_equal(p.kernel, EW_STRIDED_ROWS);
    assert_int_equal(p.block_packs, 1024);
    assert_int_equal(p.blocks, (1000 * 768 / 8 + 1023) / 1024);
    assert_int_equal(p.shared_bytes, 16384);
    assert_int_equal(p.rows_whole, 1); /* rows of whole packs, b one vector a pack */
    assert_int_equal(p.rows_spliced, 0);

    /* rows of 4,099 in f16: b at another phase in 7 rows of 8, spliced */
    const int64_t odd_rows[] = {1000, 4099};
    p = plan_of(2, odd_rows, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){0, 1}}, f16, &l);
    assert_int_equal(p.kernel, EW_STRIDED_ROWS);
    assert_int_equal(p.rows_whole, 0);
    assert_int_equal(p.rows_spliced, 1);
    /* the same with b a column: one element repeated, nothing to splice */
    p = plan_of(2, odd_rows, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){1, 0}}, f16, &l);
    assert_int_equal(p.rows_spliced, 0);

    /* f16 with a scalar operand: nothing read along the row, 512 packs */
    p = plan_of(2, nc, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){0, 0}}, f16, &l);
    assert_int_equal(p.kernel, EW_STRIDED_ROWS);
    assert_int_equal(p.access[2], EW_ACCESS_SCALAR);
    assert_int_equal(p.block_packs, 512);

    /* [N,C] + [N,1] in f16: b steps once a row */
    p = plan_of(2, nc, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){1, 0}}, f16, &l);
    assert_int_equal(p.kernel, EW_STRIDED_ROWS);
    assert_int_equal(l.stride[2][0], 0);
    assert_int_equal(l.stride[2][1], 1);
    assert_int_equal(p.pack, 8);
    assert_int_equal(p.rows_whole, 1); /* b one element repeated a pack */

    /* a tail past the last pack: one more block for the edges */
    const int64_t short_rows[] = {999, 3};
    p = plan_of(2, short_rows, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){0, 1}}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_ROWS);
    assert_int_equal(p.packs, 749);
    assert_int_equal(p.blocks, 2 + 1);
    assert_int_equal(p.rows_whole, 0); /* rows of 3: packs across them */
    assert_int_equal(p.rows_spliced, 0); /* none inside a row */
    assert_int_equal(p.rows_table, 1u << 2); /* b's 3 packs, one a phase */
    assert_int_equal(p.shared_bytes, 512 * 16 + 3 * 16); /* a's slot, then b's table */

    /* [A,B,C] + [A,1,C]: out dense over three dimensions, the gather kernel */
    const int64_t abc[] = {4, 5, 6};
    p = plan_of(3, abc, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){6, 0, 1}}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_GATHER);
    assert_int_equal(l.ndim, 3);
    assert_int_equal(p.access[2], EW_ACCESS_INDEXED);

    /* a scalar operand */
    p = plan_of(2, nc, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){0, 0}}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_ROWS);
    assert_int_equal(l.ndim, 1);
    assert_int_equal(p.access[2], EW_ACCESS_SCALAR);

    /* [N,C] + [C,N]^T: tiled along the input's rows */
    const int64_t square[] = {8192, 8192};
    p = plan_of(2, square, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){1, 8192}}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_TILED);
    assert_int_equal(p.tile_dim, 1);
    assert_int_equal(p.access[1], EW_ACCESS_INDEXED);
    assert_int_equal(p.access[2], EW_ACCESS_TILED);
    assert_int_equal(p.tile_run, 4);
    assert_int_equal(p.tiles, 128 * 128); /* tiles of 64 x 64 elements */
    assert_int_equal(p.tile_vector, 0x7); /* every operand's runs are aligned 16-byte vectors */
    /* rows of 102 elements: out's and a's runs start at every other 8 bytes, b's stay aligned */
    const int64_t odd[] = {100, 102};
    p = plan_of(2, odd, 3, (const int64_t *const[]){NULL, NULL, (const int64_t[]){1, 100}}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_TILED);
    assert_int_equal(p.tile_vector, 0x4);

    /* NCHW f32 -> NHWC f16: out (n, h, w, c) contiguous, x strided as NCHW */
    const int64_t nhwc[] = {32, 64, 64, 256};
    const int64_t nchw_strides[] = {256 * 64 * 64, 64, 1, 64 * 64};
    p = plan_of(4, nhwc, 2, (const int64_t *const[]){NULL, nchw_strides}, cast, &l);
    assert_int_equal(p.kernel, EW_STRIDED_TILED);
    assert_int_equal(l.ndim, 3); /* h and w merge */
    assert_int_equal(l.shape[0], 256);
    assert_int_equal(l.shape[1], 64 * 64);
    assert_int_equal(l.shape[2], 32);
    assert_int_equal(p.access[1], EW_ACCESS_TILED);
    assert_int_equal(p.tile_run, 4); /* 16 bytes of f32 x, 8 of f16 out */
    assert_int_equal(p.tile_vector, 0x3);

    /* every other column of out: out indexed */
    const int64_t gapped[] = {2 * 768, 1};
    p = plan_of(2, nc, 3, (const int64_t *const[]){(const int64_t[]){2 * 768, 2}, gapped, NULL}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_GATHER);
    assert_int_equal(p.access[0], EW_ACCESS_INDEXED);

    /* reversed alike in every operand: the flat call over the reversed memory */
    const int64_t reversed[] = {-1};
    const int64_t n[] = {100};
    p = plan_of(1, n, 2, (const int64_t *const[]){reversed, reversed}, f32, &l);
    assert_int_equal(p.kernel, EW_STRIDED_FLAT);
    assert_int_equal(l.base[0], ((uintptr_t)1 << 36) - 99 * 4);
}

/* Refusals name the operand and the dimension. */
static void expect_refusal(int ndim, const int64_t *shape, const int64_t *out_strides, const int64_t *a_strides,
                           uintptr_t a_address, const char *const *words)
{
    ew_view_t views[] = {{"out", "out_strides", (const void *)((uintptr_t)1 << 36), out_strides, 4},
                         {"a", "a_strides", (const void *)a_address, a_strides, 4}};
    ew_layout_t layout;
    ew_status_t status = ew_layout_make(ndim, shape, 2, views, &layout);
    assert_int_equal(status, EW_ERROR_INVALID_VALUE);
    for (; *words; ++words)
        if (strstr(ew_get_last_error_message(), *words) == NULL)
            fail_msg("message \"%s\" lacks \"%s\"", ew_get_last_error_message(), *words);
}

static void test_refusals(void **state)
{
    (void)state;
    const uintptr_t apart = (uintptr_t)2 << 36, out = (uintptr_t)1 << 36;
    const int64_t shape[] = {4, 5};
    expect_refusal(9, shape, NULL, NULL, apart, (const char *const[]){"ndim = 9", NULL});
    expect_refusal(-1, shape, NULL, NULL, apart, (const char *const[]){"ndim = -1", NULL});
    expect_refusal(2, (const int64_t[]){4, -5}, NULL, NULL, apart, (const char *const[]){"shape[1] = -5", NULL});
    expect_refusal(2, shape, (const int64_t[]){5, 0}, NULL, apart,
                   (const char *const[]){"out_strides[1] = 0", "share an address", NULL});
    expect_refusal(2, shape, (const int64_t[]){2, 1}, NULL, apart,
                   (const char *const[]){"out: out_strides[0] = 2", "(4; the last of them: dimension 1", NULL});
    expect_refusal(2, shape, NULL, (const int64_t[]){1, 4}, out,
                   (const char *const[]){"out overlaps a", NULL});
    expect_refusal(2, shape, NULL, NULL, out + 4, (const char *const[]){"out overlaps a", NULL});
    expect_refusal(2, shape, NULL, NULL, apart + 2, (const char *const[]){"a = ", "aligned", NULL});
    expect_refusal(2, (const int64_t[]){(int64_t)1 << 40, (int64_t)1 << 40}, NULL, NULL, apart,
                   (const char *const[]){"overflows int64", NULL});
    expect_refusal(2, shape, NULL, (const int64_t[]){INT64_MAX / 2, 1}, apart,
                   (const char *const[]){"a:", "a_strides[0]", NULL});
    expect_refusal(2, shape, NULL, (const int64_t[]){-((int64_t)1 << 40), 1}, apart,
                   (const char *const[]){"a:", "address space", NULL});
    /* a span of exactly -2^63 bytes (negating it would overflow) */
    ew_view_t bytes[] = {{"out", "out_strides", (const void *)out, NULL, 1},
                         {"a", "a_strides", (const void *)apart, (const int64_t[]){INT64_MIN}, 1}};
    ew_layout_t refused;
    assert_int_equal(ew_layout_make(1, (const int64_t[]){2}, 2, bytes, &refused), EW_ERROR_INVALID_VALUE);
    /* the last element at 2^63 - 1: one past it leaves int64 */
    bytes[1].strides = (const int64_t[]){INT64_MAX};
    assert_int_equal(ew_layout_make(1, (const int64_t[]){2}, 2, bytes, &refused), EW_ERROR_INVALID_VALUE);
    /* accepted: in place, a broadcast input over out, an empty shape with NULL pointers */
    ew_layout_t layout;
    ew_view_t in_place[] = {{"out", "out_strides", (const void *)out, NULL, 4},
                            {"a", "a_strides", (const void *)out, NULL, 4}};
    assert_int_equal(ew_layout_make(2, shape, 2, in_place, &layout), EW_SUCCESS);
    ew_view_t empty[] = {{"out", "out_strides", NULL, NULL, 4}, {"a", "a_strides", NULL, NULL, 4}};
    assert_int_equal(ew_layout_make(2, (const int64_t[]){0, 5}, 2, empty, &layout), EW_SUCCESS);
    assert_int_equal(layout.n, 0);
    ew_view_t scalar[] = {{"out", "out_strides", (const void *)out, NULL, 4},
                          {"a", "a_strides", (const void *)apart, NULL, 4}};
    assert_int_equal(ew_layout_make(0, NULL, 2, scalar, &layout), EW_SUCCESS);
    assert_int_equal(layout.n, 1);
    assert_true(ew_layout_is_flat(&layout));
}

/* The output layout rule the header states, on the layout of the issue that found it unstated: shape
 * {3,2}, out strides {2,3}. Its addresses 0,3,2,5,4,7 are all distinct, but its dimensions do not nest
 * (sorted by |stride|, 3 does not pass the span 2 * (3 - 1) = 4 of the dimension before it), so it is
 * refused, by a message stating that rule, not a shared address. The model and its brute force agree;
 * strides {1,3} and {3,2} nest and are accepted. */
static void test_out_layout_rule(void **state)
{
    (void)state;
    const int64_t shape[] = {3, 2};
    const struct {
        int64_t strides[2];
        int nests;
    } cases[] = {{{2, 3}, 0}, {{3, 2}, 1}, {{1, 3}, 1}, {{-2, 3}, 0}, {{2, -5}, 1}, {{2, 2}, 0}};
    for (size_t i = 0; i < COUNT(cases); ++i) {
        views_t v = {.ndim = 2, .count = 2, .shape = {3, 2}};
        memcpy(v.strides[0], cases[i].strides, sizeof cases[i].strides);
        v.strides[1][0] = 2, v.strides[1][1] = 1;
        v.address[0] = (uintptr_t)1 << 36, v.address[1] = (uintptr_t)2 << 36;
        v.size[0] = v.size[1] = 4;
        model_operand_t operands[2];
        model_operands(&v, operands);
        assert_true(model_elements_apart(2, shape, 2, operands, 6) || cases[i].strides[0] == cases[i].strides[1]);
        assert_int_equal(model_views(2, shape, 2, operands).valid, cases[i].nests);
        ew_layout_t layout;
        const ew_status_t status = make(&v, &layout);
        if (cases[i].nests) {
            assert_int_equal(status, EW_SUCCESS);
            check_layout(&v, &layout);
            continue;
        }
        assert_int_equal(status, EW_ERROR_INVALID_VALUE);
        const char *message = ew_get_last_error_message();
        if (strstr(message, "share an address") != NULL || strstr(message, "must nest") == NULL)
            fail_msg("{%lld, %lld}: \"%s\" does not state the nesting rule", (long long)cases[i].strides[0],
                     (long long)cases[i].strides[1], message);
        if (i == 0)
            assert_string_equal(message,
                                "out: out_strides[1] = 3 (shape[1] = 2) does not step past the span of the "
                                "dimensions before it by |stride| (4; the last of them: dimension 0, shape 3, "
                                "stride 2); out's strides must nest: its dimensions of extent above 1, sorted "
                                "by |stride|, each step past the span of those before it");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_divider),
        cmocka_unit_test(test_named_plans),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_out_layout_rule),
        cmocka_unit_test(test_valid_layouts_are_accepted),
        cmocka_unit_test(test_random_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
