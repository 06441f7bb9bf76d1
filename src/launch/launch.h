/* SPDX-License-Identifier: Apache-2.0 */
/* The one launch: a kernel of a set (src/launch/kernel_set.h) on a plan's grid, straight through the
 * driver's cuLaunchKernelEx, for the catalogue's kernels and user kernels alike. Each function builds
 * what its kernels take from the plan: the flat kernels' plan argument, edge block and shared
 * memory; the strided kernels' plan; a list's descriptor block. */
#ifndef EW_LAUNCH_H
#define EW_LAUNCH_H

#include <cuda_runtime_api.h>

#include "plan/batched.h"
#include "plan/blocks.h"
#include "elementwise.h"
#include "launch/kernel_set.h"
#include "plan/layout.h"
#include "plan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where and how a launch goes: the stream, whether as a programmatic dependent of the stream's
 * previous kernel (the policy's dependent_launch), and memory to set on the stream before the kernel,
 * or NULL: an overwriting reduction's scalar (src/device/reduce.cuh), reset_bytes 4 or 8, to
 * reset_value's low reset_bytes (its identity's bits), or padded block scales, reset_bytes of them, to
 * zero (reset_value 0). */
typedef struct {
    cudaStream_t stream;
    int dependent;
    void *reset;
    size_t reset_bytes;
    unsigned long long reset_value;
} ew_launch_t;

/* Queues launch->reset's setting alone (a reduction over nothing); EW_SUCCESS where reset is NULL. */
ew_status_t ew_launch_reset(const ew_launch_t *launch);

/* What a flat plan's kernel takes: its slot, the grid with its edge block after it, the shared memory
 * of the bulk kernel's staged inputs, and its plan argument (the bulk kernel's or the direct one's).
 * Pure: the CPU tests check it against a model. */
typedef struct {
    ew_slot_t slot;
    unsigned blocks;
    unsigned shared_bytes;
    union {
        ew_body_plan_t body; /* every slot but EW_SLOT_BULK */
        ew_bulk_plan_t bulk;
    };
} ew_flat_launch_t;
ew_flat_launch_t ew_flat_launch_make(const ew_kernel_set_t *set, const ew_call_t *call, const ew_plan_t *plan);

/* A flat call (call: n, the pointers, out first, and their element sizes) on its plan. */
ew_status_t ew_launch_flat(const ew_kernel_set_t *set, const ew_call_t *call, const ew_plan_t *plan,
                           const ew_functor_t *functor, const ew_launch_t *launch);

/* A strided call on its plan: the outputs and the inputs at their layout's bases (those past the call's
 * NULL). */
ew_status_t ew_launch_strided(const ew_kernel_set_t *set, const ew_strided_plan_t *plan,
                              void *const out[EW_PLAN_MAX_OUTPUTS], const void *const in[EW_PLAN_MAX_INPUTS],
                              const ew_functor_t *functor, const ew_launch_t *launch);

/* One descriptor block of a list (large: of EW_BATCHED_LARGE_BLOCK bytes). */
ew_status_t ew_launch_batched(const ew_kernel_set_t *set, const ew_batched_desc_t *desc, int large,
                              const ew_functor_t *functor, const ew_launch_t *launch);

/* One reset block of a list's overwriting reduction (kernel: the catalogue's reset kernel, src/catalogue/
 * dispatch.h), queued before the list's launches; how->reset is the launch's own. */
ew_status_t ew_launch_batched_reset(const ew_gpu_kernel_t *kernel, const ew_batched_reset_t *reset,
                                    const ew_launch_t *how);

/* A block-scaled cast on its plan: quantize (set's kernels take out, scales, x) or dequantize (out,
 * scales, q). */
ew_status_t ew_launch_blocks(const ew_kernel_set_t *set, const ew_blocks_plan_t *plan, void *out, const void *scales,
                             const void *in, const ew_functor_t *functor, const ew_launch_t *launch);

#ifdef __cplusplus
}
#endif

#endif
