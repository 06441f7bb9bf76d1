/* SPDX-License-Identifier: Apache-2.0 */
/* One strided launch: what the launcher slots gather and tiled (src/dispatch.h) take. */
#ifndef EW_STRIDED_H
#define EW_STRIDED_H

#include <cuda_runtime_api.h>

#include "layout.h"
#include "params.h"

struct ew_strided_args_s {
    void *out;          /* out's element at index 0 (the layout's base) */
    const void *in[2];  /* the inputs' */
    ew_strided_plan_t plan;
    cudaStream_t stream;
    int dependent_launch;
    ew_op_params_t params;
};
typedef struct ew_strided_args_s ew_strided_args_t;

#endif
