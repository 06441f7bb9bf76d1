/* SPDX-License-Identifier: Apache-2.0 */
/* The one flat launch (src/launch/launch.c: ew_flat_launch_make) against a model of what the kernels
 * need, for every plan the planner makes (bulk copies off, automatic and always) at every phase of the
 * pointers within 16 bytes, over every catalogue entry's kernel set and over user programs' slots:
 * - the slot is the plan's kernel (in runs at the widest pack where the plan moves two packs an access)
 *   and the set has a kernel there; a user program has every slot its plans pick;
 * - the grid is the plan's blocks and one more exactly where elements are left to do one by one: the
 *   head, and past the body's last whole run the tail; head, body and tail cover [0, n) once;
 * - the bulk kernel's shared memory is its inputs' staged slots, within the 48 KiB a launch gets
 *   unasked; the direct kernel's input phases are the plan's shifts in bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "catalogue/dispatch.h"
#include "catalogue/entries.h"
#include "launch/launch.h"
#include "plan/plan.h"
#include "plan/policy.h"
#include "rtc/rtc.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static const int64_t sizes_n[] = {1, 7, 1000, 4099, (1 << 20) + 3, (int64_t)1 << 26};
static const ew_bulk_mode_t modes[] = {EW_BULK_OFF, EW_BULK_AUTO, EW_BULK_ALWAYS};

/* The model's slot of a plan in a set of widest pack `widest` moving `access` packs an access. */
static ew_slot_t model_slot(const ew_plan_t *plan, int widest, int access)
{
    static const ew_slot_t by_kernel[] = {EW_SLOT_PACK1, EW_SLOT_SHIFTED, EW_SLOT_OUT_SHIFTED, EW_SLOT_BULK};
    if (plan->kernel != EW_PLAN_KERNEL_ALIGNED)
        return by_kernel[plan->kernel];
    if (access > 1 && plan->pack == widest && plan->access_packs == access)
        return EW_SLOT_RUNS;
    int slot = 0;
    while ((1 << slot) < plan->pack)
        ++slot;
    return (ew_slot_t)(EW_SLOT_PACK1 + slot);
}

/* One call's launch against the model; returns the slot. */
static ew_slot_t check_launch(const ew_kernel_set_t *set, const ew_call_t *call, const ew_plan_t *plan)
{
    const ew_flat_launch_t launch = ew_flat_launch_make(set, call, plan);
    const ew_slot_t slot = model_slot(plan, set->widest_pack, set->access_packs);
    const int outputs = call->outputs > 1 ? call->outputs : 1;
    if (launch.slot != slot) {
        print_error("n = %lld, kernel %d at pack %d (%d an access): slot %d, the model's %d\n", (long long)call->n,
                    (int)plan->kernel, plan->pack, plan->access_packs, (int)launch.slot, (int)slot);
        fail();
    }
    int64_t head = plan->head, covered_end;
    if (slot == EW_SLOT_BULK) {
        /* tiles cover [head, n): only the head is left */
        covered_end = call->n;
        assert_int_equal(launch.bulk.n, call->n);
        assert_int_equal(launch.bulk.head, head);
        assert_int_equal(launch.bulk.tile_packs, plan->tile_packs);
        unsigned shared = 0;
        const int64_t tile = (int64_t)EW_PLAN_BLOCK_THREADS * plan->tile_packs * plan->pack;
        for (int i = outputs; i < call->count; ++i) { /* the inputs' slots, after the outputs */
            /* the tile and room for its head padding, tail rounding and one more pack: whole 128 blocks */
            const int64_t bytes = tile * (int64_t)call->elem_size[i];
            shared += (unsigned)((bytes + 3 * 128 - 1) / 128 * 128);
        }
        assert_int_equal(launch.shared_bytes, shared);
        assert_true(launch.shared_bytes <= 48 * 1024);
    } else {
        const int runs = slot == EW_SLOT_RUNS ? set->access_packs : 1;
        covered_end = head + plan->packs / runs * runs * plan->pack;
        assert_int_equal(launch.shared_bytes, 0);
        assert_int_equal(launch.body.n, call->n);
        assert_int_equal(launch.body.head, head);
        assert_int_equal(launch.body.packs, plan->packs);
        for (int i = outputs; i < call->count; ++i)
            assert_int_equal(launch.body.shift_bytes[i - outputs],
                             plan->shift[i - outputs] * (int)call->elem_size[i]);
    }
    /* head, body and tail cover [0, n) once; an edge block exactly where there is a head or a tail */
    assert_true(head >= 0 && head <= covered_end && covered_end <= call->n);
    const unsigned edge = head > 0 || covered_end < call->n;
    const unsigned grid = plan->blocks < INT32_MAX - edge ? plan->blocks + edge : INT32_MAX;
    if (launch.blocks != grid) {
        print_error("n = %lld, slot %d: %u blocks, the model's %u (plan %u, head %lld, body to %lld)\n",
                    (long long)call->n, (int)slot, launch.blocks, grid, plan->blocks, (long long)head,
                    (long long)covered_end);
        fail();
    }
    assert_true(launch.blocks > 0);
    return slot;
}

/* Every plan at the phases of count pointers of these sizes within 16 bytes, checked: all of them, or
 * about `most` spread over them. alias: the input is out's own pointer (amax, which passes its input
 * as out). */
static int64_t check_phases(const ew_kernel_set_t *set, int outputs, int count, const size_t size[], int most,
                            int alias, int64_t by_slot[])
{
    int64_t plans = 0;
    const int phases = entry_phases(count, size);
    const int step = phases > most ? phases / most | 1 : 1; /* odd: every pointer's phases come round */
    for (int pc = 0; pc < phases; pc += step) {
        ew_call_t call = {.block_table = set->block_table, .outputs = outputs};
        entry_phase_call(pc, count, size, &call);
        if (alias)
            call.address[1] = call.address[0];
        for (size_t k = 0; k < COUNT(sizes_n); ++k)
            for (size_t m = 0; m < COUNT(modes); ++m) {
                ew_policy_t policy = ew_policy_for(9, 0);
                policy.bulk = modes[m];
                const ew_device_t device = {.sm_count = 132, .max_threads_per_sm = 2048};
                call.n = sizes_n[k];
                const ew_plan_t plan = ew_plan_choose(&policy, &device, &call);
                const ew_slot_t slot = check_launch(set, &call, &plan);
                ++by_slot[slot];
                ++plans;
            }
    }
    return plans;
}

/* Every catalogue entry: its set has the kernel of each plan, launched as the model says. */
static void catalogue_launches(void **state)
{
    (void)state;
    int64_t plans = 0, by_slot[EW_SLOT_COUNT] = {0};
    FOR_EACH_ENTRY (op, out, in, set) {
        const int count = op == EW_OP_ADD || op == EW_OP_MUL || op == EW_OP_SCALE_ADD ? 3 : 2;
        const size_t size[3] = {ew_dtype_size((ew_dtype_t)out), ew_dtype_size((ew_dtype_t)in),
                                ew_dtype_size((ew_dtype_t)in)};
        int64_t entry_slots[EW_SLOT_COUNT] = {0};
        plans += check_phases(set, 1, count, size, 1 << 30, op == EW_OP_AMAX, entry_slots);
        for (int slot = 0; slot < EW_SLOT_COUNT; ++slot) {
            if (entry_slots[slot] > 0 && !ew_kernel_set_has(set, (ew_slot_t)slot)) {
                print_error("op %d (%s <- %s): plans pick slot %d, which its set lacks\n", op,
                            ew_dtype_name((ew_dtype_t)out), ew_dtype_name((ew_dtype_t)in), slot);
                fail();
            }
            by_slot[slot] += entry_slots[slot];
        }
    }
    /* every flat slot is planned somewhere */
    for (int slot = EW_SLOT_PACK1; slot <= EW_SLOT_BULK; ++slot)
        if (by_slot[slot] == 0) {
            print_error("no plan picks slot %d\n", slot);
            fail();
        }
    printf("# %lld catalogue plans launched as the model says\n", (long long)plans);
}

/* User programs of one to four inputs over every dtype pattern below: each plan's slot is one the
 * flat or bulk program compiles (ewi_kernel_flat_slots), which leaves out the narrower packs where a
 * shift exists. */
static void user_kernel_launches(void **state)
{
    (void)state;
    static const ew_dtype_t dtypes[] = {EW_BOOL, EW_I8, EW_F16, EW_BF16, EW_F32, EW_I64, EW_F64, EW_F8E4M3};
    int64_t plans = 0, by_slot[EW_SLOT_COUNT] = {0};
    for (int inputs = 1; inputs <= 4; ++inputs)
        for (size_t o = 0; o < COUNT(dtypes); ++o)
            for (size_t a = 0; a < COUNT(dtypes); ++a)
                for (size_t b = 0; b < (inputs > 1 ? COUNT(dtypes) : 1); b += inputs > 2 ? 3 : 1) {
                    const ew_dtype_t in[4] = {dtypes[a], dtypes[b], dtypes[(a + b) % COUNT(dtypes)], dtypes[o]};
                    const ewi_kernel_spec_t spec = {
                        .source = "return in0;", .out_dtype = dtypes[o], .n_inputs = inputs, .in_dtypes = in};
                    const ewi_slots_t slots = ewi_kernel_flat_slots(&spec);
                    ew_kernel_set_t set = {.widest_pack = slots.widest_pack, .access_packs = slots.access_packs};
                    size_t size[5] = {ew_dtype_size(dtypes[o])};
                    for (int i = 0; i < inputs; ++i)
                        size[1 + i] = ew_dtype_size(in[i]);
                    int64_t program_slots[EW_SLOT_COUNT] = {0};
                    plans += check_phases(&set, 1, 1 + inputs, size, 64, 0, program_slots);
                    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot) {
                        if (program_slots[slot] > 0 && !slots.present[slot]) {
                            print_error("%d inputs, out %s, in0 %s: plans pick slot %d, which the program "
                                        "lacks\n",
                                        inputs, ew_dtype_name(dtypes[o]), ew_dtype_name(in[0]), slot);
                            fail();
                        }
                        by_slot[slot] += program_slots[slot];
                    }
                }
    assert_true(by_slot[EW_SLOT_RUNS] > 0 && by_slot[EW_SLOT_SHIFTED] > 0 && by_slot[EW_SLOT_BULK] > 0);
    printf("# %lld user-kernel plans launched as the model says\n", (long long)plans);
}

/* Kernels of two to four arrays over one or two inputs, their dtypes mixed: each plan's slot is one their
 * program compiles, the inputs' shifts and staged slots taken after the outputs. */
static void several_outputs_launches(void **state)
{
    (void)state;
    static const ew_dtype_t dtypes[] = {EW_U8, EW_F16, EW_F32, EW_F64};
    int64_t plans = 0, by_slot[EW_SLOT_COUNT] = {0};
    for (int arrays = 2; arrays <= 4; ++arrays)
        for (int inputs = 1; inputs <= 2; ++inputs)
            for (int mix = 0; mix < 16; ++mix) {
                ewi_kernel_spec_t spec = {.source = "", .n_inputs = inputs, .n_outputs = arrays};
                ew_dtype_t in[2];
                size_t size[6];
                for (int k = 0; k < arrays; ++k) {
                    spec.outputs[k] = (ew_kernel_output_t){dtypes[(mix + k) % 4], EW_REDUCE_NONE};
                    size[k] = ew_dtype_size(spec.outputs[k].dtype);
                }
                for (int i = 0; i < inputs; ++i) {
                    in[i] = dtypes[(mix / 4 + i) % 4];
                    size[arrays + i] = ew_dtype_size(in[i]);
                }
                spec.in_dtypes = in;
                const ewi_slots_t slots = ewi_kernel_flat_slots(&spec);
                ew_kernel_set_t set = {.widest_pack = slots.widest_pack, .access_packs = slots.access_packs};
                int64_t program_slots[EW_SLOT_COUNT] = {0};
                plans += check_phases(&set, arrays, arrays + inputs, size, 48, 0, program_slots);
                for (int slot = 0; slot < EW_SLOT_COUNT; ++slot) {
                    if (program_slots[slot] > 0 && !slots.present[slot]) {
                        print_error(
                            "%d arrays, %d inputs, mix %d: plans pick slot %d, which the program lacks\n",
                            arrays, inputs, mix, slot);
                        fail();
                    }
                    by_slot[slot] += program_slots[slot];
                }
            }
    assert_int_equal(by_slot[EW_SLOT_OUT_SHIFTED], 0);
    assert_true(by_slot[EW_SLOT_PACK1] > 0 && by_slot[EW_SLOT_SHIFTED] > 0 && by_slot[EW_SLOT_BULK] > 0);
    printf("# %lld plans of several outputs launched as the model says\n", (long long)plans);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(catalogue_launches),
        cmocka_unit_test(user_kernel_launches),
        cmocka_unit_test(several_outputs_launches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
