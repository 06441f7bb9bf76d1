/* SPDX-License-Identifier: Apache-2.0 */
/* The kernels an op has on the GPU, one structure for all of them: a catalogue entry's, instantiated
 * from the kernel templates at build time (src/catalogue/sets.cuh), and a user kernel's, loaded from
 * its compiled programs (src/rtc/modules.c). A plan picks a slot; src/launch/launch.c builds that
 * kernel's arguments, grid and shared memory from the plan and launches it through the driver,
 * whichever the source. */
#ifndef EW_KERNEL_SET_H
#define EW_KERNEL_SET_H

#include <stddef.h>

#include "catalogue/params.h"
#include "plan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One slot per kernel a plan can pick. The flat plans' (ew_plan_t.kernel): the direct kernel aligned
 * at each pack width, aligned in runs of two packs an access (1-byte types), with inputs read through
 * shifted windows, with out stored element by element; the bulk-copy kernel. The strided plans'
 * (ew_strided_plan_t.kernel): the gather, rows and tiled kernels. The lists' (src/plan/batched.h): a
 * descriptor block of 4 KiB and of 32 KiB. The block-scaled casts' (src/plan/blocks.h): a vector a
 * thread in one access, and element by element where a pointer is not aligned to it. Every kernel
 * but PACK1 to PACK8 runs the widest pack. */
typedef enum {
    EW_SLOT_PACK1,
    EW_SLOT_PACK2,
    EW_SLOT_PACK4,
    EW_SLOT_PACK8,
    EW_SLOT_RUNS,
    EW_SLOT_SHIFTED,
    EW_SLOT_OUT_SHIFTED,
    EW_SLOT_BULK,
    EW_SLOT_GATHER,
    EW_SLOT_ROWS,
    EW_SLOT_TILED,
    EW_SLOT_BATCHED,
    EW_SLOT_BATCHED_LARGE,
    EW_SLOT_BLOCKS,
    EW_SLOT_BLOCKS_ELEMENTS,
    EW_SLOT_COUNT
} ew_slot_t;

/* The kernel template of each slot, for functor F at pack P (every slot's but PACK1 to PACK8 is the
 * widest), A packs an access: the catalogue instantiates them at build time (src/catalogue/sets.cuh),
 * NVRTC by these names for user kernels (src/rtc/rtc.c), so that both run the same kernels. */
#define EW_KERNEL_ALIGNED(F, P) \
    ew::elementwise_kernel<F, P, ew::kDirectUnroll<F, P, ew::Window::Aligned>, ew::Window::Aligned>
#define EW_KERNEL_RUNS(F, P, A) ew::elementwise_kernel<F, P, ew::kRunsUnroll<F, P, A>, ew::Window::Aligned, A>
#define EW_KERNEL_SHIFTED(F, P) \
    ew::elementwise_kernel<F, P, ew::kDirectUnroll<F, P, ew::Window::Shifted>, ew::Window::Shifted>
#define EW_KERNEL_OUT_SHIFTED(F, P) \
    ew::elementwise_kernel<F, P, ew::kDirectUnroll<F, P, ew::Window::OutShifted>, ew::Window::OutShifted>
#define EW_KERNEL_BULK(F, P) ew::bulk_kernel<F, P>
#define EW_KERNEL_GATHER(F, P) ew::gather_kernel<F, P, EW_GATHER_UNROLL>
#define EW_KERNEL_ROWS(F, P) ew::rows_kernel<F, P>
#define EW_KERNEL_TILED(F, P) ew::tiled_kernel<F>
#define EW_KERNEL_BATCHED(F, P) ew::batched_kernel<F, P, EW_BATCHED_SMALL_BLOCK>
#define EW_KERNEL_BATCHED_LARGE(F, P) ew::batched_kernel<F, P, EW_BATCHED_LARGE_BLOCK>
#define EW_KERNEL_BLOCKS(F, VECTORIZED) ew::blocks_kernel<F, VECTORIZED>

/* A kernel compiled into the library: its context-independent handle (a CUkernel; NULL where the
 * runtime would not give one) and the runtime's symbol for it, through which a launch the driver
 * refuses is retried, so that its error reads as the runtime's. */
typedef struct {
    void *handle;
    const void *symbol;
} ew_precompiled_kernel_t;

/* One slot's kernel: a loaded module's function (user kernels), or the function that finds a
 * compiled-in kernel once per process (the catalogue's). Both NULL: the op has no such kernel. */
typedef struct {
    void *function; /* CUfunction */
    const ew_precompiled_kernel_t *(*precompiled)(void);
} ew_gpu_kernel_t;

/* The functor's bytes, the kernels' first argument: a catalogue functor built from the call's values,
 * or a user kernel's parameters (then, past them, its reduction: src/rtc/rtc.c). */
enum { EW_FUNCTOR_MAX_BYTES = 80 };
typedef union {
    double params[EW_FUNCTOR_MAX_BYTES / sizeof(double)];
    unsigned char bytes[EW_FUNCTOR_MAX_BYTES];
} ew_functor_t;

typedef struct {
    ew_gpu_kernel_t kernel[EW_SLOT_COUNT];
    int widest_pack;        /* EW_PLAN_MAX_PACK of the widest operand */
    int access_packs;       /* EW_PLAN_ACCESS_PACKS of it: the runs slot's packs an access */
    int block_table;        /* the functor fills a table per block (ew_call_t's) */
    int bulk_blocks_per_sm; /* the bulk kernel's blocks an SM holds by its registers; 0: by its threads */
    void (*make_functor)(const ew_op_params_t *params, ew_functor_t *functor); /* the catalogue's */
} ew_kernel_set_t;

/* 1 where set has a kernel in slot. */
static inline int ew_kernel_set_has(const ew_kernel_set_t *set, ew_slot_t slot)
{
    return set->kernel[slot].function != NULL || set->kernel[slot].precompiled != NULL;
}

/* log2 of a pack width: its aligned slot. */
static inline ew_slot_t ew_pack_slot(int pack)
{
    return pack == 8 ? EW_SLOT_PACK8 : pack == 4 ? EW_SLOT_PACK4 : pack == 2 ? EW_SLOT_PACK2 : EW_SLOT_PACK1;
}

/* The slot of a flat plan: plan->kernel's, the aligned one by pack, in runs of access_packs where the
 * plan moves that many packs an access at the widest pack. */
static inline ew_slot_t ew_flat_slot(const ew_kernel_set_t *set, const ew_plan_t *plan)
{
    switch (plan->kernel) {
    case EW_PLAN_KERNEL_SHIFTED: return EW_SLOT_SHIFTED;
    case EW_PLAN_KERNEL_OUT_SHIFTED: return EW_SLOT_OUT_SHIFTED;
    case EW_PLAN_KERNEL_BULK: return EW_SLOT_BULK;
    case EW_PLAN_KERNEL_ALIGNED: break;
    }
    if (set->access_packs > 1 && plan->pack == set->widest_pack && plan->access_packs == set->access_packs)
        return EW_SLOT_RUNS;
    return ew_pack_slot(plan->pack);
}

#ifdef __cplusplus
}
#endif

#endif
