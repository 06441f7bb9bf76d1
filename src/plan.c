#include "plan.h"

int ew_plan_max_pack(size_t max_elem_size)
{
    int pack = 8;
    while (pack > 1 && (size_t)pack * max_elem_size > EW_PLAN_MAX_PACK_BYTES)
        pack /= 2;
    return pack;
}

int ew_plan_unroll(int pack, size_t max_elem_size)
{
    size_t pack_bytes = (size_t)pack * max_elem_size;
    return pack_bytes >= EW_PLAN_MAX_PACK_BYTES ? 1 : (int)(EW_PLAN_MAX_PACK_BYTES / pack_bytes);
}

/* Element phase of address modulo pack, or -1 if the address is not element-aligned. */
static int64_t phase_of(uintptr_t address, size_t elem_size, int pack)
{
    if (address % elem_size != 0)
        return -1;
    return (int64_t)((address / elem_size) % (uintptr_t)pack);
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

ew_plan_t ew_plan_make(int64_t n, int count, const uintptr_t address[], const size_t elem_size[],
                       int sm_count, int max_threads_per_sm)
{
    size_t max_size = 1;
    for (int i = 0; i < count; ++i)
        if (elem_size[i] > max_size)
            max_size = elem_size[i];

    ew_plan_t plan = {1, 1, 0, 1};
    for (int pack = ew_plan_max_pack(max_size); pack >= 1; pack /= 2) {
        int64_t phase = phase_of(address[0], elem_size[0], pack);
        int same = phase >= 0;
        for (int i = 1; i < count && same; ++i)
            same = phase_of(address[i], elem_size[i], pack) == phase;
        if (same) {
            plan.pack = pack;
            plan.head = (pack - phase) % pack;
            break;
        }
    }
    if (plan.head > n)
        plan.head = n;
    plan.unroll = ew_plan_unroll(plan.pack, max_size);

    /* Blocks to give each thread one unrolled step, capped at `waves` full loads of the device;
     * past the cap the grid-stride loop takes over. */
    int64_t steps = ceil_div((n - plan.head) / plan.pack, plan.unroll);
    int64_t wanted = ceil_div(steps, EW_PLAN_BLOCK_THREADS);
    int64_t resident = (int64_t)sm_count * max_threads_per_sm / EW_PLAN_BLOCK_THREADS * EW_PLAN_WAVES;
    int64_t blocks = wanted < resident ? wanted : resident;
    if (blocks < 1)
        blocks = 1;
    if (blocks > INT32_MAX)
        blocks = INT32_MAX;
    plan.blocks = (unsigned)blocks;
    return plan;
}
