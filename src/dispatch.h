/* SPDX-License-Identifier: Apache-2.0 */
/* Dispatch table: op x dtype (cast: out dtype x in dtype) -> launcher holding one precompiled
 * kernel per legal pack width. Shared by the C ABI layer and the CUDA instantiation files. */
#ifndef EW_DISPATCH_H
#define EW_DISPATCH_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "catalogue.h"
#include "elementwise.h"
#include "params.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { EW_PACK_WIDTHS = 4 };

/* Everything one launch needs; the launcher builds the op's functor from params. */
typedef struct {
    void *out;
    const void *in[2];
    int64_t n;
    ew_plan_t plan;
    cudaStream_t stream;
    int dependent_launch; /* launch as a programmatic dependent of the stream's previous kernel */
    ew_op_params_t params;
} ew_launch_args_t;

typedef cudaError_t (*ew_launch_fn)(const ew_launch_args_t *args);

/* The strided calls' launch (src/strided.h) and the batched calls' (src/batched.h). */
struct ew_strided_args_s;
struct ew_batched_args_s;
typedef cudaError_t (*ew_strided_fn)(const struct ew_strided_args_s *args);
typedef cudaError_t (*ew_batched_fn)(const struct ew_batched_args_s *args);

/* One slot per plan.kernel (ew_launcher_pick). by_pack[k] runs EW_PLAN_KERNEL_ALIGNED at pack width
 * 1 << k; NULL where 1 << k is wider than 16 bytes allow. shifted runs the widest pack with inputs read
 * through shifted windows (EW_PLAN_KERNEL_SHIFTED); NULL where ew_plan_can_shift says no. out_shifted
 * runs it with out written element by element (EW_PLAN_KERNEL_OUT_SHIFTED); NULL but where
 * EW_PLAN_SHIFTS_OUT says so. bulk runs the widest pack through shared memory (EW_PLAN_KERNEL_BULK). */
typedef struct {
    ew_launch_fn by_pack[EW_PACK_WIDTHS];
    ew_launch_fn shifted;
    ew_launch_fn out_shifted;
    ew_launch_fn bulk;
    ew_strided_fn gather; /* strided: out walked in packs, each input loaded whole or by its offsets */
    ew_strided_fn rows;   /* strided: out dense over one or two dimensions, inputs read along the row */
    ew_strided_fn tiled;  /* strided: an input transposed against out, through shared-memory tiles */
    ew_batched_fn batched; /* a list of flat calls in one launch */
    int block_table; /* the functor fills a table per block (the plan's EW_PLAN_BULK_TABLE) */
} ew_launcher_t;

/* The entry for op on (out_dtype, in_dtype), or NULL when the catalogue lacks it. Values outside
 * the enums are answered with NULL, never read out of bounds. */
const ew_launcher_t *ew_dispatch_find(ew_op_t op, ew_dtype_t out_dtype, ew_dtype_t in_dtype);

/* log2 of a pack width, the index into by_pack. */
static inline int ew_pack_index(int pack) { return pack == 8 ? 3 : pack == 4 ? 2 : pack == 2 ? 1 : 0; }

/* The launcher's kernel for a plan: the slot of plan->kernel, by_pack at plan->pack for the aligned one.
 * Inline, so that the CPU tests check the pick the C ABI layer makes. */
static inline ew_launch_fn ew_launcher_pick(const ew_launcher_t *launcher, const ew_plan_t *plan)
{
    switch (plan->kernel) {
    case EW_PLAN_KERNEL_SHIFTED: return launcher->shifted;
    case EW_PLAN_KERNEL_OUT_SHIFTED: return launcher->out_shifted;
    case EW_PLAN_KERNEL_BULK: return launcher->bulk;
    case EW_PLAN_KERNEL_ALIGNED: break;
    }
    return launcher->by_pack[ew_pack_index(plan->pack)];
}

#ifdef __cplusplus
}
#endif

#endif
