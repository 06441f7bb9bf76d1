/* SPDX-License-Identifier: Apache-2.0 */
/* Dispatch table: op x dtype (cast: out dtype x in dtype) -> the kernel set of the catalogue's entry
 * (src/launch/kernel_set.h), its kernels compiled in. Shared by the C ABI layer and the CUDA instantiation
 * files. */
#ifndef EW_DISPATCH_H
#define EW_DISPATCH_H

#include "catalogue/catalogue.h"
#include "elementwise.h"
#include "launch/kernel_set.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel set of op on (out_dtype, in_dtype), or NULL when the catalogue lacks it. Values outside
 * the enums are answered with NULL, never read out of bounds. */
const ew_kernel_set_t *ew_dispatch_find(ew_op_t op, ew_dtype_t out_dtype, ew_dtype_t in_dtype);

/* The kernel set of a block-scaled cast (ew_quantize_blocks: quantize 1; ew_dequantize_blocks: 0) of
 * format, between the element dtype and the other side's, or NULL where there is none
 * (src/catalogue/blocks.cu). */
const ew_kernel_set_t *ew_dispatch_find_blocks(int quantize, ew_block_format_t format, ew_dtype_t elem,
                                               ew_dtype_t other);

/* The reset kernel of a list's overwriting reduction (src/plan/batched.h: ew_batched_reset_t, one
 * argument), compiled in (src/catalogue/reset.cu); launched by src/launch/launch.c's
 * ew_launch_batched_reset. */
const ew_gpu_kernel_t *ew_dispatch_reset_kernel(void);

#ifdef __cplusplus
}
#endif

#endif
