/* SPDX-License-Identifier: Apache-2.0 */
/* The timing method (docs/design.md): CUDA events around batches of calls, the warm-up and a probe that
 * sizes the batches, an L2 flush before each group, the members of a group taking turns batch by batch,
 * the median batch; in the two columns of common.h. And the host's time to queue a call. */
#ifndef EWB_TIMING_H
#define EWB_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

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
    int isolated; /* the column: 0 back-to-back, 1 isolated */
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

/* The host's time to queue a call: batches of EWB_HOST_CALLS calls, EWB_HOST_BATCHES batches at least. */
enum { EWB_HOST_CALLS = 256, EWB_HOST_BATCHES = 51 };

/* Host microseconds per call of each of `launchers` launchers, call(ctx, l) queueing one call of launcher
 * l (0, or -1): after `calls` calls of each as warm-up, batches of `calls` calls timed on the host clock,
 * the launchers taking turns batch by batch (each first in turn) so that drift falls on all alike, the
 * stream drained between batches so that it never fills; us[l], the median batch over its calls. Only
 * the time to queue is counted; no events between calls (they are the bench's cost, not the call's).
 * 0, or -1 where a call failed. */
int ewb_time_host(int (*call)(void *ctx, int launcher), void *ctx, int launchers, int calls, int batches,
                  cudaStream_t stream, double *us);

/* The raw f32 add kernel of raw_kernel.cu launched with cudaLaunchKernel, one element per thread: the
 * host cost of a launch with nothing around it, the floor of any call. 0, or -1 (said on stderr). */
int ewb_raw_launch_add_f32(void *ctx, int64_t n, float *out, const float *a, const float *b,
                           cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
