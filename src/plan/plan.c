/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/plan.h"

int ew_plan_max_pack(size_t max_elem_size) { return EW_PLAN_MAX_PACK(max_elem_size); }

int ew_plan_unroll(int pack, size_t max_elem_size, int shifted)
{
    return EW_PLAN_UNROLL((size_t)pack * max_elem_size, shifted);
}

int ew_plan_can_shift(int pack, int count, const size_t elem_size[])
{
    if (pack < 2)
        return 0;
    for (int i = 1; i < count; ++i)
        if (!EW_PLAN_WHOLE_WORDS(pack, elem_size[i]))
            return 0;
    return 1;
}

/* Element phase of address modulo pack (the address is element-aligned). Sizes and packs are
 * powers of two, so this is a mask: no division on the call path. */
static int64_t phase_of(uintptr_t address, size_t elem_size, int pack)
{
    return (int64_t)((address & ((uintptr_t)pack * elem_size - 1)) / elem_size);
}

/* Bytes out is aligned to after the head: the access, or the policy's out_align if more (both powers
 * of two, so the larger is a multiple of the other). */
static int64_t out_alignment(const ew_policy_t *policy, int64_t access_bytes)
{
    return access_bytes > policy->out_align ? access_bytes : (int64_t)policy->out_align;
}

/* Elements to peel so that out (element-aligned) reaches a multiple of alignment bytes. */
static int64_t out_head(uintptr_t address, size_t elem_size, int64_t alignment)
{
    return (int64_t)(((uintptr_t)alignment - (address & (uintptr_t)(alignment - 1))) &
                     (uintptr_t)(alignment - 1)) /
           (int64_t)elem_size;
}

static size_t widest(int count, const size_t elem_size[])
{
    size_t max_size = 1;
    for (int i = 0; i < count; ++i)
        if (elem_size[i] > max_size)
            max_size = elem_size[i];
    return max_size;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Blocks to give each thread one unrolled step; shifted windows are capped at the policy's waves (full
 * loads of the device), measured faster; past a cap the grid-stride loop takes over. */
static unsigned grid_blocks(const ew_policy_t *policy, const ew_device_t *device, int64_t packs, int unroll,
                            int shifted)
{
    int64_t wanted = ceil_div(ceil_div(packs, unroll), EW_PLAN_BLOCK_THREADS);
    int64_t resident = (int64_t)device->sm_count * device->max_threads_per_sm / EW_PLAN_BLOCK_THREADS *
                       policy->shifted_waves;
    int64_t blocks = min64(shifted ? min64(wanted, resident) : wanted, INT32_MAX);
    return (unsigned)(blocks < 1 ? 1 : blocks);
}

static int phases_agree(int count, const uintptr_t address[], const size_t elem_size[], int pack)
{
    for (int i = 1; i < count; ++i)
        if (phase_of(address[i], elem_size[i], pack) != phase_of(address[0], elem_size[0], pack))
            return 0;
    return 1;
}

/* ew_plan_can_shift over the call's inputs alone: outputs are never read through windows. */
static int inputs_can_shift(int pack, const ew_call_t *call)
{
    const int skipped = ew_call_outputs(call) - 1; /* ew_plan_can_shift passes over its first size */
    return ew_plan_can_shift(pack, call->count - skipped, call->elem_size + skipped);
}

/* Where the body starts: the pack (the largest at which the phases agree, unless shifted), the
 * packs per access and the head that aligns out, and each shifted input's phase after it. agree:
 * the phases agree at the widest pack, which plan->pack holds on entry. */
static void place_body(const ew_policy_t *policy, ew_plan_t *plan, int outputs, int count,
                       const uintptr_t address[], const size_t elem_size[], size_t max_size, int agree)
{
    const int shifted = plan->kernel == EW_PLAN_KERNEL_SHIFTED;
    int pack = plan->pack;
    if (!shifted && !agree)
        do
            pack /= 2;
        while (!phases_agree(count, address, elem_size, pack));
    plan->pack = pack;
    /* Whole packs two to a 16-byte access (1-byte types) where every pointer sits at one phase of it. */
    const int access = EW_PLAN_ACCESS_PACKS(max_size);
    plan->access_packs = !shifted && access > 1 && pack == ew_plan_max_pack(max_size) &&
                                 phases_agree(count, address, elem_size, pack * access)
                             ? access
                             : 1;
    const int64_t alignment = out_alignment(policy, (int64_t)pack * plan->access_packs * (int64_t)elem_size[0]);
    plan->head = out_head(address[0], elem_size[0], alignment);
    if (!shifted)
        return;
    int widest_shift = 0;
    for (int i = outputs; i < count; ++i) {
        int *shift = &plan->shift[i - outputs];
        *shift = (int)((phase_of(address[i], elem_size[i], pack) + plan->head) % pack);
        if (*shift > widest_shift)
            widest_shift = *shift;
    }
    if (plan->head < widest_shift) /* a shifted input's first aligned pack starts before it */
        plan->head += alignment / (int64_t)elem_size[0];
}

ew_plan_t ew_plan_make(const ew_policy_t *policy, const ew_device_t *device, const ew_call_t *call)
{
    const int64_t n = call->n;
    const int count = call->count;
    const uintptr_t *address = call->address;
    const size_t *elem_size = call->elem_size;
    const int outputs = ew_call_outputs(call), inputs = count - outputs;
    size_t max_size = widest(count, elem_size);
    ew_plan_t plan = {
        .kernel = EW_PLAN_KERNEL_ALIGNED, .pack = ew_plan_max_pack(max_size), .access_packs = 1};
    const int agree = phases_agree(count, address, elem_size, plan.pack);
    /* every output is stored as whole packs from the one head: outputs at other phases narrow the pack */
    if (!agree && EW_PLAN_SHIFTS_OUT(count, elem_size[0], elem_size[1]))
        plan.kernel = EW_PLAN_KERNEL_OUT_SHIFTED;
    else if (!agree && phases_agree(outputs, address, elem_size, plan.pack) &&
             inputs_can_shift(plan.pack, call))
        plan.kernel = EW_PLAN_KERNEL_SHIFTED;
    const int shifted = plan.kernel == EW_PLAN_KERNEL_SHIFTED;
    /* out-shifted: the input aligned to its pack, or to the policy's out_align if more */
    if (plan.kernel == EW_PLAN_KERNEL_OUT_SHIFTED)
        plan.head = out_head(address[1], elem_size[1],
                             out_alignment(policy, (int64_t)plan.pack * (int64_t)elem_size[1]));
    else
        place_body(policy, &plan, outputs, count, address, elem_size, max_size, agree);
    const int pack = plan.pack;
    plan.head = min64(plan.head, n);
    plan.packs = (n - plan.head) / pack;
    for (int i = 0; shifted && i < inputs; ++i)
        if (plan.shift[i] > 0) /* pack j also reads the input's aligned pack j + 1 */
            plan.packs = min64(plan.packs, (n - plan.head + plan.shift[i]) / pack - 1);
    if (plan.packs < 0)
        plan.packs = 0;
    plan.unroll = ew_plan_unroll(pack, max_size, shifted);
    plan.blocks = grid_blocks(policy, device, plan.packs, plan.unroll, shifted);
    return plan;
}

/* Packs per thread for a tile of at most tile_input_bytes of inputs and EW_PLAN_BULK_MAX_TILE_BYTES of
 * the widest type: a power of two, at least one access. */
static int64_t bulk_tile_packs(int pack, size_t max_size, size_t input_bytes, int64_t tile_input_bytes)
{
    int64_t tile_packs = EW_PLAN_ACCESS_PACKS(max_size);
    while (EW_PLAN_BLOCK_THREADS * 2 * tile_packs * pack * (int64_t)input_bytes <= tile_input_bytes &&
           EW_PLAN_BLOCK_THREADS * 2 * tile_packs * pack * (int64_t)max_size <= EW_PLAN_BULK_MAX_TILE_BYTES)
        tile_packs *= 2;
    return tile_packs;
}

static ew_shape_t shape_of(int count, const size_t elem_size[], size_t max_size, int block_table)
{
    if (max_size == 1)
        return block_table ? EW_SHAPE_BYTES_TABLE : EW_SHAPE_BYTES;
    if (count >= 3) /* run-time compiled ops of three or four inputs go by the binary ops' figures */
        return max_size == 2 ? EW_SHAPE_BINARY_2BYTE : EW_SHAPE_BINARY_WIDE;
    const size_t out = elem_size[0], in = elem_size[1];
    return in < out        ? EW_SHAPE_UNARY_WIDENING
           : in == out     ? EW_SHAPE_UNARY_SAME
           : in == 2 * out ? EW_SHAPE_UNARY_HALVING
                           : EW_SHAPE_UNARY_NARROWER;
}

ew_shape_t ew_plan_shape(const ew_call_t *call)
{
    return shape_of(call->count, call->elem_size, widest(call->count, call->elem_size), call->block_table);
}

/* The fewest tiles per SM from which any shape takes the bulk-copy kernel (EW_NEVER: none does). */
static int64_t fewest_bulk_tiles(const ew_policy_t *policy)
{
    int64_t fewest = EW_NEVER;
    for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
        for (int phase = EW_ONE_PHASE; phase <= EW_OTHER_PHASES; ++phase) {
            const int tiles = policy->bulk_min_tiles[shape][phase];
            if (tiles != EW_NEVER && (fewest == EW_NEVER || tiles < fewest))
                fewest = tiles;
        }
    return fewest;
}

int ew_plan_make_bulk(const ew_policy_t *policy, const ew_device_t *device, const ew_call_t *call, int force,
                      ew_plan_t *plan)
{
    const int64_t n = call->n;
    const int count = call->count;
    const uintptr_t *address = call->address;
    const size_t *elem_size = call->elem_size;
    const int sm_count = device->sm_count;
    const int outputs = ew_call_outputs(call);
    size_t max_size = widest(count, elem_size), input_bytes = 0;
    for (int i = outputs; i < count; ++i)
        input_bytes += elem_size[i];
    int pack = ew_plan_max_pack(max_size);
    /* Too small for the fewest tiles of any shape even at the smallest tile: done before anything else. */
    const int64_t fewest = fewest_bulk_tiles(policy);
    if (!force && (fewest == EW_NEVER || n < fewest * sm_count * EW_PLAN_BLOCK_THREADS * pack))
        return 0;
    int access = pack * EW_PLAN_ACCESS_PACKS(max_size); /* elements per access */
    if (!phases_agree(outputs, address, elem_size, access)) /* every output's accesses whole */
        return 0;
    int shifted = !phases_agree(count, address, elem_size, access);
    const ew_shape_t shape = shape_of(count, elem_size, max_size, call->block_table);
    int64_t min_tiles_per_sm = policy->bulk_min_tiles[shape][shifted ? EW_OTHER_PHASES : EW_ONE_PHASE];
    if (force)
        min_tiles_per_sm = 0;
    else if (min_tiles_per_sm == EW_NEVER)
        return 0;
    int64_t head = min64(
        out_head(address[0], elem_size[0], out_alignment(policy, (int64_t)access * (int64_t)elem_size[0])), n);

    /* Tiles of the policy's bytes of inputs, smaller for 2-byte inputs widened to 4 bytes, at other
     * phases larger for unary ops from 2 bytes to 2 or fewer, and halved once where the grid would keep
     * fewer than the policy's wave tiles per SM. */
    const int64_t tile_input_bytes = policy->bulk_tile_bytes;
    const int two_byte_unary = count == 2 && elem_size[1] == 2;
    int64_t bytes = two_byte_unary && elem_size[0] == 4 ? tile_input_bytes / policy->bulk_widening_tile_divisor
                    : shifted && two_byte_unary && elem_size[0] <= 2
                        ? tile_input_bytes * policy->bulk_narrowing_tile_factor
                        : tile_input_bytes;
    /* A kernel an SM holds fewer blocks of than its threads allow (a run-time compiled op short of
     * registers) takes tiles as many times larger, to the next power of two and at most
     * EW_PLAN_BULK_MAX_INPUT_BYTES: the SM keeps the bytes in flight the policy's figures were
     * measured with. */
    const int64_t full_sm = device->max_threads_per_sm / EW_PLAN_BLOCK_THREADS;
    if (call->bulk_blocks_per_sm > 0 && call->bulk_blocks_per_sm < full_sm) {
        const int64_t wanted = bytes * full_sm;
        while (bytes * call->bulk_blocks_per_sm < wanted && 2 * bytes <= EW_PLAN_BULK_MAX_INPUT_BYTES)
            bytes *= 2;
    }
    int64_t tile_packs = bulk_tile_packs(pack, max_size, input_bytes, bytes);
    int64_t tile = EW_PLAN_BLOCK_THREADS * tile_packs * pack, tiles = ceil_div(n - head, tile);
    if (shifted && tiles < (int64_t)policy->bulk_wave_tiles * sm_count) {
        tile_packs = bulk_tile_packs(pack, max_size, input_bytes, bytes / 2);
        tile = EW_PLAN_BLOCK_THREADS * tile_packs * pack;
        tiles = ceil_div(n - head, tile);
    }
    if (tiles >= INT32_MAX || tiles < min_tiles_per_sm * sm_count) /* the kernel adds a block for the head */
        return 0;
    *plan = (ew_plan_t){.kernel = EW_PLAN_KERNEL_BULK,
                        .pack = pack,
                        .access_packs = EW_PLAN_ACCESS_PACKS(max_size),
                        .unroll = 1,
                        .head = head,
                        .packs = (n - head) / pack,
                        .blocks = (unsigned)tiles, /* 0 where n == head: the head block alone */
                        .tile_packs = (int)tile_packs};
    return 1;
}

ew_plan_t ew_plan_choose(const ew_policy_t *policy, const ew_device_t *device, const ew_call_t *call)
{
    ew_plan_t plan;
    if (policy->bulk != EW_BULK_OFF &&
        ew_plan_make_bulk(policy, device, call, policy->bulk == EW_BULK_ALWAYS, &plan))
        return plan;
    return ew_plan_make(policy, device, call);
}
