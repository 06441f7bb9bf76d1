/* SPDX-License-Identifier: Apache-2.0 */
/* Device pools, one per operand, far larger than L2. Every call takes the next slice of each pool it
 * touches (a cursor per pool walks the whole pool before it wraps), so no input a call reads was touched in
 * the last pool-length of traffic: L2 never serves a repeated input. Inputs hold random values that are
 * never zero (ewb_fill_random); an output a check reads is first poisoned (EWB_POISON), never zeroed. */
#ifndef EWB_POOL_H
#define EWB_POOL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { EWB_MAX_POOLS = 5, EWB_SLICE_ALIGN = 4096 /* every slice starts 4 KiB-aligned */ };

/* The byte an output is filled with before a checked call writes it. */
enum { EWB_POISON = 0xA5 };

typedef struct {
    unsigned char *base[EWB_MAX_POOLS];
    size_t bytes; /* of each pool */
    size_t cursor[EWB_MAX_POOLS];
    ew_dtype_t filled[EWB_MAX_POOLS]; /* what the pool holds: random values of this dtype, or 0 */
    int count;
    uint64_t seed; /* pool p is filled from seed + p */
} ewb_pools_t;

/* The size of each pool: two of the largest slice, and at least 2 GiB (the method's: every input slice
 * far out of L2). */
size_t ewb_pool_bytes(size_t largest_slice);

/* count pools of bytes each, filled on demand from seed: 0, or -1 (said on stderr; nothing is left
 * allocated). */
int ewb_pools_init(ewb_pools_t *pools, int count, size_t bytes, uint64_t seed);
void ewb_pools_free(ewb_pools_t *pools);

/* The next slice of pool p, bytes long rounded up to EWB_SLICE_ALIGN. */
unsigned char *ewb_pool_next(ewb_pools_t *pools, int p, size_t bytes);

/* Poison the slice the next ewb_pool_next(pools, p, bytes) returns, with byte, on stream: 0, or -1. */
int ewb_pool_poison_next(ewb_pools_t *pools, int p, size_t bytes, unsigned char byte, cudaStream_t stream);

/* Fill pool p with random values of dtype on stream, unless it holds them already: 0, or -1. */
int ewb_pool_fill(ewb_pools_t *pools, int p, ew_dtype_t dtype, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
