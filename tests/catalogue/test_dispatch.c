/* SPDX-License-Identifier: Apache-2.0 */
/* Dispatch-table completeness (issue 2, "The catalogue" and "Pack"): for every op, out dtype and in
 * dtype, valid or not, ew_dispatch_find has an entry exactly for the catalogue, written out again
 * here from the text; each entry holds a kernel for every legal pack width and none for an
 * illegal one, the shifted-window kernel exactly where the input's widest pack is whole 32-bit
 * words (src/plan/plan.h, ew_plan_can_shift) but for unary ops narrowing to a quarter or less, which have
 * the out-shifted kernel instead (EW_PLAN_SHIFTS_OUT); ew_is_supported agrees; ew_flat_slot runs each
 * plan.kernel from its own slot, and finds a kernel for every plan of every entry; and the public calls
 * answer EW_ERROR_NOT_SUPPORTED exactly for what the catalogue lacks.
 *
 * The public calls use a handle from ewi_handle_make; with a GPU present it names a device that does
 * not exist, so a supported call stops at the device check instead of launching on fake addresses. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "catalogue/dispatch.h"
#include "catalogue/entries.h"
#include "elementwise.h"
#include "abi/handle.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define ADDR(x)      ((void *)(uintptr_t)(x))

/* Valid values 1..13 (dtypes) and 1..8 (ops), their neighbours and some wild ones. */
static const int dtype_values[] = {INT_MIN, -1000, -1, 0,  1,  2,  3,  4,   5,   6,    7,      8,
                                   9,       10,    11, 12, 13, 14, 16, 255, 256, 1000, INT_MAX};
static const int op_values[] = {INT_MIN, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 255, 1000, INT_MAX};

/* The dtype table: sizes, and which are float8 (e4m3, e5m2), e8m0 or bool. e8m0 (13, a block
 * scale before) is a dtype of the cast alone; f4e2m1 (14) of the block-scaled casts alone. */
static size_t size_of(int dtype)
{
    static const size_t sizes[14] = {0,         /*bool*/ 1, /*i8*/ 1,  /*u8*/ 1,  /*i16*/ 2,  /*i32*/ 4,
                                     /*i64*/ 8,
                                     /*f16*/ 2, /*bf16*/ 2, /*f32*/ 4, /*f64*/ 8, /*e4m3*/ 1, /*e5m2*/ 1,
                                     /*e8m0*/ 1};
    return dtype >= 1 && dtype <= 13 ? sizes[dtype] : 0;
}
static int valid_dtype(int d) { return d >= 1 && d <= 13; }
static int is_fp8(int d) { return d == 11 || d == 12; }
static int is_e8m0(int d) { return d == 13; }
static int is_bool(int d) { return d == 1; }
static int is_float(int d) { return d >= 7 && d <= 10; } /* f16, bf16, f32, f64 */

/* The catalogue, from the issues: add, mul, scale_add on every dtype but fp8 and e8m0; relu on every
 * dtype but bool, fp8 and e8m0; cast on all 169 ordered pairs; quantize from the four floats to the
 * two fp8, dequantize back; amax on the four floats. Ops other than the three between two dtypes need
 * out == in. */
static int in_catalogue(int op, int out, int in)
{
    if (!valid_dtype(out) || !valid_dtype(in))
        return 0;
    switch (op) {
    case 1: /* add */
    case 2: /* mul */
    case 5: /* scale_add */ return out == in && !is_fp8(out) && !is_e8m0(out);
    case 3: /* relu */ return out == in && !is_fp8(out) && !is_e8m0(out) && !is_bool(out);
    case 4: /* cast */ return 1;
    case 6: /* quantize */ return is_fp8(out) && is_float(in);
    case 7: /* dequantize */ return is_float(out) && is_fp8(in);
    case 8: /* amax */ return out == in && is_float(out);
    default: return 0;
    }
}

static void test_catalogue_size(void **state)
{
    (void)state;
    /* the model itself: 10 dtypes for add, mul and scale_add, 9 for relu, 169 casts, 8 quantize and 8
     * dequantize pairs, 4 dtypes for amax */
    int entries = 0;
    for (int op = 0; op <= 9; ++op)
        for (int out = 0; out <= 13; ++out)
            for (int in = 0; in <= 13; ++in)
                entries += in_catalogue(op, out, in);
    assert_int_equal(entries, 3 * 10 + 9 + 169 + 8 + 8 + 4);
}

static void test_table_matches_catalogue(void **state)
{
    (void)state;
    int checked = 0, entries = 0;
    for (size_t o = 0; o < COUNT(op_values); ++o)
        for (size_t i = 0; i < COUNT(dtype_values); ++i)
            for (size_t k = 0; k < COUNT(dtype_values); ++k) {
                int op = op_values[o], out = dtype_values[i], in = dtype_values[k];
                const ew_kernel_set_t *entry = ew_dispatch_find((ew_op_t)op, (ew_dtype_t)out, (ew_dtype_t)in);
                int supported = ew_is_supported((ew_op_t)op, (ew_dtype_t)out, (ew_dtype_t)in);
                int expected = in_catalogue(op, out, in);
                if ((entry != NULL) != expected || supported != expected) {
                    print_error("op %d, out dtype %d, in dtype %d: catalogue says %d, ew_dispatch_find %s, "
                                "ew_is_supported %d\n",
                                op, out, in, expected, entry ? "an entry" : "NULL", supported);
                    fail();
                }
                ++checked;
                if (!entry)
                    continue;
                ++entries;
                size_t widest = size_of(out) > size_of(in) ? size_of(out) : size_of(in);
                /* the shifted-window kernel runs the widest pack; it splices 32-bit words, so it exists
                 * exactly when the input's pack is whole words */
                int widest_pack = widest == 1 ? 8 : (int)(16 / widest);
                int unary = op != EW_OP_ADD && op != EW_OP_MUL && op != EW_OP_SCALE_ADD;
                /* amax writes no out: it runs on its input alone, flat or in lists, at one phase */
                int writes = op != EW_OP_AMAX;
                int shifts_out = writes && unary && size_of(in) >= 4 * size_of(out);
                int can_shift = writes && (widest_pack * size_of(in)) % 4 == 0 && !shifts_out;
                const int shifted = ew_kernel_set_has(entry, EW_SLOT_SHIFTED);
                const int out_shifted = ew_kernel_set_has(entry, EW_SLOT_OUT_SHIFTED);
                if (shifted != can_shift || out_shifted != shifts_out) {
                    print_error("op %d, out dtype %d, in dtype %d: shifted kernel is %s, expected %s; "
                                "out-shifted kernel is %s, expected %s\n",
                                op, out, in, shifted ? "present" : "missing", can_shift ? "present" : "absent",
                                out_shifted ? "present" : "missing", shifts_out ? "present" : "absent");
                    fail();
                }
                for (int index = 0; index < 4; ++index) {
                    int legal = (size_t)(1 << index) * widest <= 16;
                    const int present = ew_kernel_set_has(entry, ew_pack_slot(1 << index));
                    if (present != legal) {
                        print_error("op %d, out dtype %d, in dtype %d: pack %d (%zu bytes) is %s but its "
                                    "kernel is %s\n",
                                    op, out, in, 1 << index, (size_t)(1 << index) * widest,
                                    legal ? "legal" : "illegal", present ? "present" : "missing");
                        fail();
                    }
                }
                /* runs of two packs an access exactly for 1-byte types; every other kernel in every entry */
                assert_int_equal(entry->widest_pack, widest_pack);
                assert_int_equal(ew_kernel_set_has(entry, EW_SLOT_RUNS), widest == 1);
                for (int slot = EW_SLOT_BULK; slot <= EW_SLOT_BATCHED_LARGE; ++slot)
                    assert_int_equal(ew_kernel_set_has(entry, (ew_slot_t)slot),
                                     writes || slot == EW_SLOT_BULK || slot >= EW_SLOT_BATCHED);
                assert_false(ew_kernel_set_has(entry, EW_SLOT_BLOCKS) || ew_kernel_set_has(entry, EW_SLOT_BLOCKS_ELEMENTS));
                assert_non_null(entry->make_functor);
            }
    assert_int_equal(checked, (int)(COUNT(op_values) * COUNT(dtype_values) * COUNT(dtype_values)));
    assert_int_equal(entries, 3 * 10 + 9 + 169 + 8 + 8 + 4);
    assert_int_equal(ew_pack_slot(1), EW_SLOT_PACK1);
    assert_int_equal(ew_pack_slot(2), EW_SLOT_PACK2);
    assert_int_equal(ew_pack_slot(4), EW_SLOT_PACK4);
    assert_int_equal(ew_pack_slot(8), EW_SLOT_PACK8);
}

/* Every kernel of the table is its own: a row wired twice, or one op's row standing in for
 * another's, would show as two slots holding the same kernel. */
/* The block-scaled casts' sets: MX of e4m3, e5m2 and e2m1 and NVFP4 of e2m1, each way, against f16,
 * bf16 and f32; both block slots and nothing else; nothing for any other format or pair. */
static void test_blocks_table(void **state)
{
    (void)state;
    int found = 0;
    for (int quantize = 0; quantize <= 1; ++quantize)
        for (int format = 0; format <= 3; ++format)
            for (int elem = 0; elem <= EW_ALL_DTYPES_END; ++elem)
                for (int other = 0; other <= EW_ALL_DTYPES_END; ++other) {
                    const ew_kernel_set_t *set =
                        ew_dispatch_find_blocks(quantize, (ew_block_format_t)format, (ew_dtype_t)elem, (ew_dtype_t)other);
                    const int mx = format == EW_BLOCKS_MX && (elem == EW_F8E4M3 || elem == EW_F8E5M2 || elem == EW_F4E2M1);
                    const int nv = format == EW_BLOCKS_NVFP4 && elem == EW_F4E2M1;
                    const int wide = other == EW_F16 || other == EW_BF16 || other == EW_F32;
                    assert_int_equal(set != NULL, (mx || nv) && wide);
                    if (set == NULL)
                        continue;
                    ++found;
                    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
                        assert_int_equal(ew_kernel_set_has(set, (ew_slot_t)slot),
                                         slot == EW_SLOT_BLOCKS || slot == EW_SLOT_BLOCKS_ELEMENTS);
                    assert_non_null(set->make_functor);
                }
    assert_int_equal(found, 2 * 4 * 3);
}

static void test_kernels_distinct(void **state)
{
    (void)state;
    enum { MAX = (3 * 10 + 9 + 169) * EW_SLOT_COUNT };
    static const ew_precompiled_kernel_t *(*seen[MAX])(void);
    static int where[MAX][4];
    int count = 0;
    FOR_EACH_ENTRY (op, out, in, entry) {
        for (int slot = 0; slot < EW_SLOT_COUNT; ++slot) {
            const ew_precompiled_kernel_t *(*kernel)(void) = entry->kernel[slot].precompiled;
            assert_null(entry->kernel[slot].function); /* compiled in, never a module's */
            if (!kernel)
                continue;
            for (int s = 0; s < count; ++s)
                if (seen[s] == kernel) {
                    print_error("op %d (%d <- %d) slot %d shares its kernel with op %d (%d <- %d) slot %d\n", op,
                                out, in, slot, where[s][0], where[s][1], where[s][2], where[s][3]);
                    fail();
                }
            assert_true(count < MAX);
            seen[count] = kernel;
            where[count][0] = op;
            where[count][1] = out;
            where[count][2] = in;
            where[count][3] = slot;
            ++count;
        }
    }
    assert_true(count > 0);
}

/* ew_flat_slot, the pick of the flat launch: each plan.kernel runs its own slot whatever the pack, the
 * aligned kernel the one of plan.pack, in runs where the plan moves two packs an access at the widest. */
static void test_flat_slot(void **state)
{
    (void)state;
    int picks = 0;
    FOR_EACH_ENTRY (op, out, in, entry) {
        for (int index = 0; index < 4; ++index) {
            const ew_slot_t aligned = ew_pack_slot(1 << index);
            if (!ew_kernel_set_has(entry, aligned))
                continue;
            /* the slot of each kernel, in the order of the enum's explicit values */
            const ew_slot_t slot[] = {aligned, EW_SLOT_SHIFTED, EW_SLOT_OUT_SHIFTED, EW_SLOT_BULK};
            for (int kernel = EW_PLAN_KERNEL_ALIGNED; kernel <= EW_PLAN_KERNEL_BULK; ++kernel) {
                ew_plan_t plan = {.kernel = (ew_plan_kernel_t)kernel, .pack = 1 << index, .access_packs = 1};
                if (ew_flat_slot(entry, &plan) != slot[kernel]) {
                    print_error("op %d, out dtype %d, in dtype %d: kernel %d at pack %d picks the "
                                "wrong slot\n",
                                op, out, in, kernel, plan.pack);
                    fail();
                }
                ++picks;
            }
            ew_plan_t runs = {.kernel = EW_PLAN_KERNEL_ALIGNED, .pack = 1 << index, .access_packs = 2};
            const int in_runs = entry->access_packs == 2 && 1 << index == entry->widest_pack;
            assert_int_equal(ew_flat_slot(entry, &runs), in_runs ? EW_SLOT_RUNS : aligned);
        }
    }
    /* every kernel at every legal pack: 34 packs for each binary op, 30 for relu, 540 for the casts (452
     * among the first 12 dtypes, 88 to or from e8m0), 26 for quantize and dequantize each, 13 for amax */
    assert_int_equal(picks, 4 * (3 * 34 + 30 + 540 + 2 * 26 + 13));
}

/* ---- the public calls ---- */

static int gpu_present;
static ew_handle_t h;

static int group_setup(void **state)
{
    (void)state;
    int count = 0;
    gpu_present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    cudaGetLastError();
    return ewi_handle_make(gpu_present ? count + 7 : 0, 132, 2048, &h) == EW_SUCCESS ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return ew_handle_destroy(h) == EW_SUCCESS ? 0 : -1;
}

/* A supported call with valid arguments fails only at the device (no GPU, or the fake device). */
static int stopped_at_device(ew_status_t status)
{
    return gpu_present ? status == EW_ERROR_DEVICE_MISMATCH
                       : status == EW_ERROR_CUDA || status == EW_ERROR_DEVICE_MISMATCH;
}

static void check_call(const char *entry, int op, int out, int in, int supported, ew_status_t status)
{
    int ok = supported ? stopped_at_device(status) : status == EW_ERROR_NOT_SUPPORTED;
    if (!ok) {
        print_error("%s(op %d, out dtype %d, in dtype %d): %s, expected %s (message: \"%s\")\n", entry, op,
                    out, in, ew_status_string(status),
                    supported ? "to pass validation" : "EW_ERROR_NOT_SUPPORTED", ew_get_last_error_message());
        fail();
    }
}

static void test_public_calls(void **state)
{
    (void)state;
    void *out = ADDR(0x100000000000ull);
    const void *a = ADDR(0x200000000000ull), *b = ADDR(0x300000000000ull);
    const int64_t n = 33;
    for (size_t o = 0; o < COUNT(op_values); ++o)
        for (size_t i = 0; i < COUNT(dtype_values); ++i) {
            int op = op_values[o], d = dtype_values[i];
            ew_op_t eop = (ew_op_t)op;
            ew_dtype_t dt = (ew_dtype_t)d;
            check_call("ew_unary", op, d, d, op == 3 && in_catalogue(op, d, d),
                       ew_unary(h, eop, dt, n, out, a, NULL));
            check_call("ew_binary", op, d, d, (op == 1 || op == 2) && in_catalogue(op, d, d),
                       ew_binary(h, eop, dt, n, out, a, b, NULL));
            /* unsupported stays unsupported with nothing to do */
            if (!(op == 3 && in_catalogue(op, d, d)))
                check_call("ew_unary (n = 0)", op, d, d, 0, ew_unary(h, eop, dt, 0, NULL, NULL, NULL));
            if (!((op == 1 || op == 2) && in_catalogue(op, d, d)))
                check_call("ew_binary (n = 0)", op, d, d, 0,
                           ew_binary(h, eop, dt, 0, NULL, NULL, NULL, NULL));
        }
    for (size_t i = 0; i < COUNT(dtype_values); ++i) {
        int d = dtype_values[i];
        check_call("ew_scale_add", 5, d, d, in_catalogue(5, d, d),
                   ew_scale_add(h, (ew_dtype_t)d, 1.0, n, out, a, b, NULL));
        for (size_t k = 0; k < COUNT(dtype_values); ++k) {
            int s = dtype_values[k];
            check_call("ew_cast", 4, d, s, in_catalogue(4, d, s),
                       ew_cast(h, (ew_dtype_t)d, (ew_dtype_t)s, n, out, a, NULL));
            if (!in_catalogue(4, d, s))
                check_call("ew_cast (n = 0)", 4, d, s, 0,
                           ew_cast(h, (ew_dtype_t)d, (ew_dtype_t)s, 0, NULL, NULL, NULL));
        }
    }
}

int main(void)
{
    /* one test a line, as in the other test files */
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalogue_size),
        cmocka_unit_test(test_table_matches_catalogue),
        cmocka_unit_test(test_blocks_table),
        cmocka_unit_test(test_kernels_distinct),
        cmocka_unit_test(test_flat_slot),
        cmocka_unit_test(test_public_calls),
    };
    /* clang-format on */
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
