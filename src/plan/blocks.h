/* SPDX-License-Identifier: Apache-2.0 */
/* The block-scaled casts' plan (ew_quantize_blocks, ew_dequantize_blocks): the tensor's shape in
 * vectors, each thread's access, where the scales go, and the grid. C and pure, so the CPU tests check
 * it; the kernels (src/device/blocks.cuh) read the struct as it is declared here. */
#ifndef EW_PLAN_BLOCKS_H
#define EW_PLAN_BLOCKS_H
#if !defined(__CUDACC_RTC__)
#include <stdint.h>
#endif
#include "plan/plan.h"
#ifdef __cplusplus
extern "C" {
#endif
/* Elements one scale covers: 32 in OCP MX, 16 in NVFP4; 0 for a value outside ew_block_format_t. */
#define EW_BLOCKS_BLOCK(format) ((format) == EW_BLOCKS_MX ? 32 : (format) == EW_BLOCKS_NVFP4 ? 16 : 0)
/* Elements a thread takes: 16 bytes of the wider side's (x for quantize, out for dequantize), at most
 * a block's. A block's vectors are consecutive lanes of one warp. */
#define EW_BLOCKS_VECTOR(wide_elem_size, block) ((16 / (wide_elem_size)) < (block) ? 16 / (wide_elem_size) : (block))
typedef struct {
    int64_t vectors;     /* rows * cols / vector: the threads' work in all */
    int64_t row_blocks;  /* blocks a row: cols / block */
    int64_t tile_cols;   /* swizzled: 128 x 4 tiles across, ceil(row_blocks / 4); 0 row-major */
    int vectorized;      /* 1: each thread's elements in one access (x, out and q aligned to it) */
    unsigned blocks;     /* the grid; the kernel strides over the rest */
} ew_blocks_plan_t;
/* The plan of a rows x cols call (rows * cols > 0; cols a multiple of block) whose wider side has
 * elements of wide_elem_size bytes; aligned: every pointer is aligned to its side of one vector. The
 * grid: a vector a thread, at most the policy's blocks_waves full loads of the device. */
ew_blocks_plan_t ew_blocks_plan_make(const ew_policy_t *policy, const ew_device_t *device, int64_t rows,
                                     int64_t cols, int block, int wide_elem_size, int swizzled, int aligned);
/* The scales' shape (ew_block_scales_shape): row-major rows x row_blocks, swizzled padded to 128 x 4. */
void ew_blocks_scales_shape(int64_t rows, int64_t row_blocks, int swizzled, int64_t *scale_rows,
                            int64_t *scale_cols);
#ifdef __cplusplus
}
#endif
#endif
