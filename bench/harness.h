/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The measurement harness shared by ew-bench (the library) and the CUB peer: the sweep of cases,
 * the rotating-slice pools, the timing method, the cudaMemcpy reference, the host-overhead mode,
 * the bit-exact spot check against the CPU reference, and the table and CSV output. ew-bench-strided
 * and ew-bench-kernel, which have cases of their own, time them with the same method through the pieces
 * at the end of this file.
 *
 * An implementation plugs in through ewb_impl_t; everything else is identical between them, so
 * their numbers differ only by the code that runs the op. Method: docs/design.md.
 *
 * Each case is timed in two columns:
 *   back-to-back  calls queued one after the other as fast as the host can, through impl->call: what a
 *                 stream of calls sees, including any overlap of a call with the one before it (the
 *                 library's programmatic dependent launches);
 *   isolated      each call alone: through impl->call_isolated where given (plain stream order), with an
 *                 event recorded between calls, and the stream held by a short kernel until the host
 *                 has queued the whole batch, so that neither the previous call nor the host's launch
 *                 rate is part of any call's time.
 */
#ifndef EWB_HARNESS_H
#define EWB_HARNESS_H

#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "elementwise.h"

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

/* The alpha every implementation uses for scale_add on dtype: 0.75 for floats, 3 for integers, 1 for bool. */
double ewb_alpha(ew_dtype_t dtype);

/* Short names ("f16", "scale_add") independent of the library, so peers need not link it. */
const char *ewb_dtype_name(ew_dtype_t dtype);
size_t ewb_dtype_size(ew_dtype_t dtype);
const char *ewb_op_name(ew_op_t op);

/* The raw f32 add kernel of raw_kernel.cu launched with cudaLaunchKernel, one element per thread:
 * the host cost of a launch with nothing around it. */
int ewb_raw_launch_add_f32(void *ctx, int64_t n, float *out, const float *a, const float *b,
                           cudaStream_t stream);

/* ---- the method's pieces, for benches with cases of their own (ew-bench-strided, ew-bench-kernel) ---- */

/* 1 where error is cudaSuccess; else 0, with what and the error on stderr. */
int ewb_cuda_ok(cudaError_t error, const char *what);

/* 1 where status is EW_SUCCESS; else 0, with what, the status and the library's last message on stderr.
 * Inline, so that only the programs that call it link the library (the CUB peer does not). */
static inline int ewb_ew_ok(ew_status_t status, const char *what)
{
    if (status == EW_SUCCESS)
        return 1;
    fprintf(stderr, "%s: %s: %s\n", what, ew_status_string(status), ew_get_last_error_message());
    return 0;
}

/* The options of the timing method, a being the option and v the next argument or NULL: --batches N
 * (5-1000), --batch-ms T ((0, 1000]), --device D (0-1023), --timing LIST (back-to-back,isolated; bit 0
 * back-to-back, bit 1 isolated), --no-check. The count of arguments taken (1 or 2) where a is one of
 * them, its value stored; 0 where it is none; -1 where its value is missing or wrong (said on stderr). */
int ewb_parse_timing_option(const char *a, const char *v, int *batches, double *batch_ms, int *device,
                            unsigned *timing, int *no_check);

/* The next slice, stride bytes, of a pool of pool_bytes: each pool walked by its own cursor, wrapping at
 * the end, so that no input a call reads was touched in the last pool-length of traffic. */
unsigned char *ewb_next_slice(unsigned char *pool, size_t pool_bytes, size_t *cursor, size_t stride);

/* Fill a pool with random values of dtype (ewb_fill_random, seed) on stream, unless *filled says it holds
 * them already; *filled is then dtype. 0, or -1 (said on stderr). */
int ewb_fill_pool(unsigned char *pool, size_t pool_bytes, ew_dtype_t *filled, ew_dtype_t dtype, uint64_t seed,
                  cudaStream_t stream);

/* CLOCK_MONOTONIC in microseconds. */
double ewb_now_us(void);

/* The median of count values; sorts them. */
double ewb_median(double *values, int count);

/* n as "2^k" where it is a power of two, else in decimal. */
void ewb_log2_text(int64_t n, char *text, size_t size);

/* Make device current: 1; 0 where no GPU is present (a line on stdout says so: the caller has nothing to
 * run); -2 where device is not one of the GPUs, -1 where it cannot be made current (both said on stderr). */
int ewb_use_device(int device);

/* The stream a bench queues its calls on, the events that time them, and the buffer written before each
 * group so that nothing of the previous group is left in L2. */
typedef struct {
    cudaStream_t stream;
    cudaEvent_t start, stop;
    cudaEvent_t between; /* recorded between the calls of an isolated batch (no timing) */
    unsigned char *flush;
    size_t flush_bytes;
} ewb_timer_t;

/* Zero *timer, then create its stream and events and a flush buffer of 4 times device's L2 (at least
 * 64 MiB): 0, or -1 (said on stderr; ewb_timer_free frees what was made). */
int ewb_timer_init(ewb_timer_t *timer, int device);
void ewb_timer_free(ewb_timer_t *timer);

/* Something timed in one column. A bench embeds it as the first field of its own struct, which enqueue
 * casts back to. */
typedef struct ewb_member ewb_member_t;
struct ewb_member {
    /* Queue one call on the timer's stream, on the next slices of its pools: 0, or -1 (said on stderr). */
    int (*enqueue)(ewb_member_t *member);
    int isolated; /* the column: 0 back-to-back, 1 isolated (see the top of this file) */
    /* set by ewb_time_group */
    int calls;       /* per batch; 0 until the warm-up and probe have run */
    double host_us;  /* isolated: the host's time to queue one call and its event, last measured */
    int host_behind; /* isolated batches whose queueing outlasted the hold */
};

enum { EWB_MAX_MEMBERS = 8, EWB_MAX_BATCHES = 1000 };

/* Milliseconds of `calls` calls of enqueue(ctx) (0, or -1) queued on stream between start and stop, behind
 * a kernel that holds the stream (ewb_hold_back) until the whole batch is queued: the GPU's time, however
 * long the host takes to queue. `between`, where not NULL, is recorded after every call but the last.
 * *host_us: the host's time to queue one call, last measured (sizes the hold; updated); *behind counts
 * batches queued past their hold even when timed again (their figures include some host time). 0, or -1
 * (said on stderr). */
int ewb_time_held(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, cudaEvent_t between,
                  int (*enqueue)(void *ctx), void *ctx, int calls, double *host_us, int *behind, double *ms);

/* Microseconds per call, the median of `batches` batches of about batch_ms each, for each of `members`
 * members: the L2 flush, then batches in turn, each member first in turn, so that a drift of the host's
 * launch rate falls on every member alike; each member's warm-up and probe just before its first batch.
 * 0, or -1 where a call failed or the group is larger than EWB_MAX_MEMBERS, batches than EWB_MAX_BATCHES. */
int ewb_time_group(const ewb_timer_t *timer, ewb_member_t *const group[], int members, int batches,
                   double batch_ms, double *us);

#ifdef __cplusplus
}
#endif

#endif
