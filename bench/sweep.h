/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalogue sweep: op x dtype x n x pointer offsets, each case against cudaMemcpy D2D moving as many
 * bytes, in both columns of lib/common.h, on the pools, timing and checks of bench/lib (method:
 * docs/design.md). ew-bench-catalogue (the library) and the CUB peer plug in through ewb_impl_t; everything
 * else is the same between them, so their numbers differ only by the code that runs the op.
 */
#ifndef EWB_SWEEP_H
#define EWB_SWEEP_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "common.h"
#include "timing.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One op of the catalogue on given dtypes (out == in except for casts). */
typedef struct {
    ew_op_t op;
    ew_dtype_t out;
    ew_dtype_t in;
} ewb_entry_t;

/* Element offsets of (out, first input, second input) from a 4 KiB-aligned slice start. */
typedef enum { EWB_ALIGNED = 0, EWB_SAME = 1, EWB_MIXED = 2, EWB_OFFSET_MODES = 3 } ewb_offsets_t;

/* Queue one call on stream. Return 0, or print why to stderr and return -1. b is NULL for unary ops
 * and casts. For scale_add the alpha is ewb_alpha(entry->out). */
typedef int (*ewb_call_fn)(void *ctx, const ewb_entry_t *entry, int64_t n, void *out, const void *a,
                           const void *b, cudaStream_t stream);

/* Queue one f32 add of n elements for the host-overhead mode. */
typedef int (*ewb_host_call_fn)(void *ctx, int64_t n, float *out, const float *a, const float *b,
                                cudaStream_t stream);

typedef struct {
    const char *name;
    ewb_host_call_fn call; /* launched as the back-to-back column launches */
    /* Launched as the isolated column launches (the library: its plain stream-order handle); NULL where
     * that is the same launch as call (a raw launch, CUB), whose figure then serves both columns. */
    ewb_host_call_fn call_isolated;
} ewb_host_launcher_t;

enum { EWB_MAX_HOST_LAUNCHERS = 4 };

typedef struct {
    const char *name;        /* the CSV's impl column: "ew", "cub" */
    const char *memcpy_name; /* impl column of its cudaMemcpy rows: "memcpy", "memcpy_cub" */
    int (*supports)(void *ctx, const ewb_entry_t *entry);
    /* Called once a GPU is known to be present (device already current); 0 or -1. May be NULL. */
    int (*setup)(void *ctx, int device);
    ewb_call_fn call; /* the back-to-back column's call */
    /* The isolated column's call: one that launches in plain stream order, never overlapping the
     * stream's previous kernel (the library: a handle created with EW_DEPENDENT_LAUNCH=0). NULL where
     * call already launches that way (CUB, PyTorch and cudaMemcpy do). */
    ewb_call_fn call_isolated;
    ewb_host_launcher_t host[EWB_MAX_HOST_LAUNCHERS]; /* host-overhead mode; unused slots are {0} */
    void *ctx;
} ewb_impl_t;

/* Parse options, run the sweep (or the host-overhead mode), print and write the CSV:
 *   impl,op,out_dtype,in_dtype,n,offsets,us,gbps,vs_memcpy,us_isolated,gbps_isolated,vs_memcpy_isolated,check
 * us, gbps and vs_memcpy are the back-to-back column (as before the isolated one existed), the *_isolated
 * fields the isolated one; a column not timed (--timing) is left empty. check is the bit-exact spot check
 * of the case's calls in every timed column: ok, mismatch, failed (the checked call or its copy back),
 * skipped (--no-check), no-reference (a build without tests/ref); unsupported marks the rows, without
 * figures, of the selected cases this implementation does not cover; memcpy and host rows leave it empty.
 * Returns the process exit status: 0 (also when no GPU is present), 1 on a failed call or a
 * failed check, 2 on bad options. */
int ewb_main(int argc, char **argv, const ewb_impl_t *impl);

#ifdef __cplusplus
}
#endif

#endif
