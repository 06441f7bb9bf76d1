/* SPDX-License-Identifier: Apache-2.0 */
/* The block-scaled casts' plan (src/plan/blocks.h). */
#include "plan/blocks.h"

ew_blocks_plan_t ew_blocks_plan_make(const ew_policy_t *policy, const ew_device_t *device, int64_t rows,
                                     int64_t cols, int block, int wide_elem_size, int swizzled, int aligned)
{
    const int vector = EW_BLOCKS_VECTOR(wide_elem_size, block);
    ew_blocks_plan_t plan = {.vectors = rows * (cols / vector),
                             .row_blocks = cols / block,
                             .tile_cols = swizzled ? (cols / block + 3) / 4 : 0,
                             .vectorized = aligned};
    const int64_t needed = (plan.vectors + EW_PLAN_BLOCK_THREADS - 1) / EW_PLAN_BLOCK_THREADS;
    const int64_t resident =
        (int64_t)device->sm_count * (device->max_threads_per_sm / EW_PLAN_BLOCK_THREADS) * policy->blocks_waves;
    plan.blocks = (unsigned)(needed < resident ? needed : resident);
    return plan;
}

void ew_blocks_scales_shape(int64_t rows, int64_t row_blocks, int swizzled, int64_t *scale_rows,
                            int64_t *scale_cols)
{
    *scale_rows = swizzled ? (rows + 127) / 128 * 128 : rows;
    *scale_cols = swizzled ? (row_blocks + 3) / 4 * 4 : row_blocks;
}
