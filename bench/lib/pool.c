/* SPDX-License-Identifier: Apache-2.0 */
/* The benches' device pools (pool.h). */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "pool.h"
#include "raw_kernel.h"

/* A host-only test of the benches may shrink it. */
#ifndef EWB_MIN_POOL_BYTES
#define EWB_MIN_POOL_BYTES ((size_t)2 << 30)
#endif

size_t ewb_pool_bytes(size_t largest_slice)
{
    const size_t bytes = 2 * ewb_round_up(largest_slice, EWB_SLICE_ALIGN);
    return bytes > (size_t)EWB_MIN_POOL_BYTES ? bytes : (size_t)EWB_MIN_POOL_BYTES;
}

void ewb_pools_free(ewb_pools_t *pools)
{
    for (int p = 0; p < EWB_MAX_POOLS; ++p)
        if (pools->base[p])
            cudaFree(pools->base[p]);
    memset(pools, 0, sizeof *pools);
}

int ewb_pools_init(ewb_pools_t *pools, int count, size_t bytes, uint64_t seed)
{
    memset(pools, 0, sizeof *pools);
    if (count > EWB_MAX_POOLS) {
        fprintf(stderr, "%d pools: at most %d\n", count, EWB_MAX_POOLS);
        return -1;
    }
    pools->count = count, pools->bytes = bytes, pools->seed = seed;
    for (int p = 0; p < count; ++p) {
        const cudaError_t error = cudaMalloc((void **)&pools->base[p], bytes);
        if (error != cudaSuccess) {
            fprintf(stderr, "cudaMalloc of a %.2f GiB pool failed: %s\n", (double)bytes / (1 << 30),
                    cudaGetErrorName(error));
            pools->base[p] = NULL;
            ewb_pools_free(pools);
            return -1;
        }
    }
    return 0;
}

unsigned char *ewb_pool_next(ewb_pools_t *pools, int p, size_t bytes)
{
    const size_t stride = ewb_round_up(bytes, EWB_SLICE_ALIGN);
    if (pools->cursor[p] + stride > pools->bytes)
        pools->cursor[p] = 0;
    unsigned char *slice = pools->base[p] + pools->cursor[p];
    pools->cursor[p] += stride;
    return slice;
}

int ewb_pool_poison_next(ewb_pools_t *pools, int p, size_t bytes, unsigned char byte, cudaStream_t stream)
{
    const size_t stride = ewb_round_up(bytes, EWB_SLICE_ALIGN);
    if (pools->cursor[p] + stride > pools->bytes)
        pools->cursor[p] = 0;
    return ewb_cuda_ok(cudaMemsetAsync(pools->base[p] + pools->cursor[p], byte, stride, stream),
                       "cudaMemsetAsync")
               ? 0
               : -1;
}

int ewb_pool_fill(ewb_pools_t *pools, int p, ew_dtype_t dtype, cudaStream_t stream)
{
    if (pools->filled[p] == dtype)
        return 0;
    const int64_t count = (int64_t)(pools->bytes / ew_dtype_size(dtype));
    if (!ewb_cuda_ok(ewb_fill_random(pools->base[p], (int)dtype, count, pools->seed + (uint64_t)p, stream),
                     "fill kernel"))
        return -1;
    pools->filled[p] = dtype;
    return 0;
}
