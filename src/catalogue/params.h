/* SPDX-License-Identifier: Apache-2.0 */
/* The run-time values an op's functor is built from (its make()), and nothing else of the call: no
 * functor sees the plan or the launch. */
#ifndef EW_PARAMS_H
#define EW_PARAMS_H

#include <stdint.h>

typedef struct {
    double alpha;           /* scale_add on floating dtypes */
    uint64_t alpha_integer; /* scale_add on integer dtypes and bool, validated and wrapped to 64 bits */
    const float *scale;     /* quantize's scale, dequantize's scale_inv: a device pointer, read by the kernel */
    float *reduction;       /* the device scalar of a reducing op (quantize's amax, amax), or NULL */
    unsigned options;       /* the block-scaled casts' EW_BLOCKS_* options (scale is their global scale) */
} ew_op_params_t;

#endif
