/* SPDX-License-Identifier: Apache-2.0 */
/* Launch plan: which kernel, pack width, scalar head and grid for one call, as pure functions of the
 * pointers, n, the device's figures and the architecture's policy (src/plan/policy.h). C, so the CPU tests
 * check it. The macros here fix the kernels' shape at compile time; the kernels and the plan share them. */
#ifndef EW_PLAN_H
#define EW_PLAN_H

#if !defined(__CUDACC_RTC__) /* NVRTC (src/device/direct.cuh's macros): the device header defines the types */
#include <stddef.h>
#include <stdint.h>
#endif

#include "plan/policy.h"
#include "plan/tuning.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    EW_PLAN_MAX_POINTERS = 5, /* out and up to four inputs (two for the catalogue's ops) */
    EW_PLAN_MAX_INPUTS = 4,
    EW_PLAN_MAX_OUTPUTS = 4, /* the arrays a run-time compiled op writes in one pass */
    EW_PLAN_MAX_CALL_POINTERS = EW_PLAN_MAX_OUTPUTS + EW_PLAN_MAX_INPUTS, /* of one flat call */
    EW_PLAN_MAX_PACK_BYTES = 16,                                          /* the widest single access */
    EW_PLAN_BULK_ALIGN = 128, /* bulk copies start at this boundary (the fastest), at most this early */
    EW_PLAN_BULK_MAX_INPUT_BYTES = 32768 /* of all inputs of a tile (bulk_tile_bytes, or 16 KiB at one
                                          * access a thread): four inputs' slots fit the 48 KiB of
                                          * shared memory a launch gets unasked */
};

/* Shared memory of one staged input of the bulk-copy kernel, a tile of `tile` elements of `size`
 * bytes: the tile, its head padding (< EW_PLAN_BULK_ALIGN), its tail rounding (< 16) and one more
 * pack for the splice of the last one, in whole EW_PLAN_BULK_ALIGN blocks. The kernel's slots and
 * the launch's shared bytes (src/launch/launch.c) take it alike. */
#define EW_PLAN_BULK_SLOT_BYTES(tile, size) \
    (((tile) * (size) + 3 * EW_PLAN_BULK_ALIGN - 1) / EW_PLAN_BULK_ALIGN * EW_PLAN_BULK_ALIGN)

/* Packs moved by one vector access: 1-byte types' 8-byte packs go two to a 16-byte access, in the
 * bulk-copy kernel always and in the direct kernel where every pointer sits at one phase of it. */
#define EW_PLAN_ACCESS_PACKS(max_elem_size) ((max_elem_size) == 1 ? 2 : 1)

/* The kernel a plan runs, one slot each (src/launch/kernel_set.h). Zero is the aligned kernel, so that a
 * plan initialized with its pack alone runs it. */
typedef enum {
    EW_PLAN_KERNEL_ALIGNED = 0,     /* the direct kernel at plan.pack, every pointer at one phase */
    EW_PLAN_KERNEL_SHIFTED = 1,     /* the same at the widest pack, inputs read through shifted windows */
    EW_PLAN_KERNEL_OUT_SHIFTED = 2, /* the same, the head aligning the input, out stored element by element */
    EW_PLAN_KERNEL_BULK = 3         /* the bulk-copy kernel: inputs staged in shared memory, a tile a block */
} ew_plan_kernel_t;

typedef struct {
    ew_plan_kernel_t kernel; /* which kernel runs the plan: one value, as the kernels exclude each other */
    int pack;                /* elements per pack: 1, 2, 4 or 8 (a pack is at most 16 bytes) */
    int access_packs; /* packs moved by one vector access: 2 for 1-byte packs where every pointer allows */
    int unroll;       /* packs each thread loads before it computes */
    int64_t head;     /* leading elements done one by one, after which out is aligned (ew_plan_make) */
    int64_t packs;    /* whole packs after the head; the tail after them is done one by one */
    int shift[EW_PLAN_MAX_INPUTS]; /* per input, its phase in elements past pack alignment (0 but for
                                    * shifted windows) */
    unsigned blocks;  /* grid size; the kernel strides over the rest (bulk: tiles, 0 if n == head) */
    int tile_packs;   /* bulk: packs per thread per tile (a tile is EW_PLAN_BLOCK_THREADS * this packs) */
} ew_plan_t;

/* What the direct kernel reads of its plan (src/device/direct.cuh), and the bulk-copy kernel (src/device/bulk.cuh):
 * declared once, here, for the launch (src/launch/launch.c) and the kernels, NVRTC's included. Elements
 * [0, head) and [ew_body_tail, n) are done one by one; shift_bytes: each input's phase past pack
 * alignment, in bytes (0 but for shifted windows). */
typedef struct {
    int64_t n, head, packs;
    int shift_bytes[EW_PLAN_MAX_INPUTS];
} ew_body_plan_t;
typedef struct {
    int64_t n, head;
    int tile_packs;
} ew_bulk_plan_t;

#if defined(__CUDACC__)
#define EW_PLAN_INLINE static __host__ __device__ __forceinline__
#else
#define EW_PLAN_INLINE static inline
#endif

/* The end of the body's last whole run of `runs` packs of `pack` elements: its threads stop there. */
EW_PLAN_INLINE int64_t ew_body_tail(const ew_body_plan_t *body, int pack, int runs)
{
    return body->head + body->packs / runs * runs * pack;
}

/* 1 where a call has elements to do one by one (the head, the tail), 0 else. Both kernels do them in
 * an extra block, the grid's last, which the launch counts into the grid by these same functions. The
 * bulk-copy kernel's tiles end with n: only a head. */
EW_PLAN_INLINE unsigned ew_body_edge_blocks(const ew_body_plan_t *body, int pack, int runs)
{
    return body->head > 0 || body->n > ew_body_tail(body, pack, runs);
}
EW_PLAN_INLINE unsigned ew_bulk_edge_blocks(const ew_bulk_plan_t *plan) { return plan->head > 0; }

/* The device's figures a plan sizes its grid by, read once per handle. */
typedef struct {
    int sm_count;
    int max_threads_per_sm;
} ew_device_t;

/* One call as the planner sees it: n > 0 elements, count pointers (the outputs first, then the
 * inputs), each aligned to its element size. */
typedef struct {
    int64_t n;
    int count;
    int outputs; /* arrays written, 1 to EW_PLAN_MAX_OUTPUTS (0 reads as 1: the catalogue's out) */
    uintptr_t address[EW_PLAN_MAX_CALL_POINTERS];
    size_t elem_size[EW_PLAN_MAX_CALL_POINTERS];
    int block_table; /* the op fills a table per block, which the bulk kernel's tiles amortize */
    int bulk_blocks_per_sm; /* blocks of the bulk kernel an SM holds by its registers; 0: as many as its
                               threads allow (the catalogue's, tuned at that) */
} ew_call_t;

/* The arrays a call writes: its outputs, 1 where it leaves the count at 0. */
EW_PLAN_INLINE int ew_call_outputs(const ew_call_t *call) { return call->outputs > 1 ? call->outputs : 1; }

/* Largest legal pack for elements of max_elem_size bytes (a power of two): P * size <= 16 and
 * P <= 8. The macro is the rule, shared with the kernels, which take it at compile time. */
#define EW_PLAN_MAX_PACK(max_elem_size)              \
    ((max_elem_size)*8 <= EW_PLAN_MAX_PACK_BYTES ? 8 \
     : (max_elem_size) >= EW_PLAN_MAX_PACK_BYTES ? 1 \
                                                 : (int)(EW_PLAN_MAX_PACK_BYTES / (max_elem_size)))
int ew_plan_max_pack(size_t max_elem_size);

/* Packs per thread per step: EW_PLAN_THREAD_BYTES (shifted: EW_PLAN_SHIFTED_THREAD_BYTES) of the
 * widest type in flight per thread, at most EW_PLAN_MAX_UNROLL. The macro is the rule, shared with
 * the kernels, which take it at compile time. */
#define EW_PLAN_STEP_BYTES(shifted) ((shifted) ? EW_PLAN_SHIFTED_THREAD_BYTES : EW_PLAN_THREAD_BYTES)
#define EW_PLAN_UNROLL(pack_bytes, shifted)                                                     \
    (EW_PLAN_STEP_BYTES(shifted) / (pack_bytes) >= EW_PLAN_MAX_UNROLL ? (int)EW_PLAN_MAX_UNROLL \
     : EW_PLAN_STEP_BYTES(shifted) / (pack_bytes) < 1                 ? 1                       \
                                                      : (int)(EW_PLAN_STEP_BYTES(shifted) / (pack_bytes)))
int ew_plan_unroll(int pack, size_t max_elem_size, int shifted);

/* 1 where a unary op narrows its input to a quarter of its size or less (f32 -> fp8, f64 -> f16): at
 * other phases than out, such a call aligns the input instead of out and writes out element by element
 * (EW_PLAN_KERNEL_OUT_SHIFTED), since out is the small part of its bytes. The rule, shared with the
 * kernels, which take it at compile time. */
#define EW_PLAN_SHIFTS_OUT(count, out_size, in_size) ((count) == 2 && (in_size) >= 4 * (out_size))

/* 1 if a shifted-window kernel exists for this pack: every input's pack is whole 32-bit words
 * (EW_PLAN_WHOLE_WORDS, the rule the kernels take at compile time). */
#define EW_PLAN_WHOLE_WORDS(pack, elem_size) ((pack) * (elem_size) % 4 == 0)
int ew_plan_can_shift(int pack, int count, const size_t elem_size[]);

/* The direct kernel's plan. The pack is always the largest legal one when possible:
 * - all pointers at the same element phase modulo P: the head peels that phase and every access
 *   of the body is a whole aligned pack (EW_PLAN_KERNEL_ALIGNED);
 * - different phases: the head aligns out, and each input is read as aligned packs shifted into
 *   place (ew_plan_can_shift), so every access is still a whole aligned pack (EW_PLAN_KERNEL_SHIFTED);
 * - otherwise the largest P at which the phases agree (EW_PLAN_KERNEL_ALIGNED);
 * - unary ops that narrow to a quarter or less (EW_PLAN_SHIFTS_OUT) at different phases: the head
 *   aligns the input, and out is written element by element (EW_PLAN_KERNEL_OUT_SHIFTED).
 * Several outputs are stored as whole packs from one head: inputs shift only where the outputs' phases
 * agree at the widest pack, and else the pack narrows until every phase agrees.
 * The head runs on in whole packs until out (out-shifted: the input) is policy->out_align-aligned too. */
ew_plan_t ew_plan_make(const ew_policy_t *policy, const ew_device_t *device, const ew_call_t *call);

/* The bulk-copy kernel's plan (GPUs with cp.async.bulk), for calls whose outputs' phases agree at one
 * access: out's head is peeled to one access
 * (EW_PLAN_ACCESS_PACKS packs of the widest pack) or policy->out_align if more, each block stages its
 * tile of every input in shared memory with bulk copies from EW_PLAN_BULK_ALIGN-aligned addresses,
 * whatever the inputs' phases, and writes whole packs. A tile is the most packs per thread (a power of
 * two, at least one access) whose inputs fit its bytes and whose widest type fits
 * EW_PLAN_BULK_MAX_TILE_BYTES; its bytes are the policy's but for the shapes plan.c names.
 * Returns 0, leaving *plan alone, below the tiles per SM that the policy gives the call's shape
 * (EW_NEVER: always), unless force (tests: whenever the grid allows). */
int ew_plan_make_bulk(const ew_policy_t *policy, const ew_device_t *device, const ew_call_t *call, int force,
                      ew_plan_t *plan);

/* The call's shape for the policy's bulk rules. */
ew_shape_t ew_plan_shape(const ew_call_t *call);

/* The plan of one call: the bulk-copy kernel's (EW_PLAN_KERNEL_BULK) where the policy's bulk mode
 * allows it and ew_plan_make_bulk takes the call, else the direct kernel's (ew_plan_make). */
ew_plan_t ew_plan_choose(const ew_policy_t *policy, const ew_device_t *device, const ew_call_t *call);

#ifdef __cplusplus
}
#endif

#endif
