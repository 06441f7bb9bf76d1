/* SPDX-License-Identifier: Apache-2.0 */
/* The timing method (timing.h; docs/design.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pool.h"
#include "raw_kernel.h"
#include "timing.h"

void ewb_timer_free(ewb_timer_t *timer)
{
    if (timer->flush)
        cudaFree(timer->flush);
    if (timer->start)
        cudaEventDestroy(timer->start);
    if (timer->stop)
        cudaEventDestroy(timer->stop);
    if (timer->between)
        cudaEventDestroy(timer->between);
    if (timer->stream)
        cudaStreamDestroy(timer->stream);
    memset(timer, 0, sizeof *timer);
}

int ewb_timer_init(ewb_timer_t *timer, int device)
{
    memset(timer, 0, sizeof *timer);
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    const size_t least = (size_t)64 << 20;
    timer->flush_bytes = ewb_round_up(4 * (size_t)l2 > least ? 4 * (size_t)l2 : least, 4096);
    return ewb_cuda_ok(cudaStreamCreateWithFlags(&timer->stream, cudaStreamNonBlocking),
                       "cudaStreamCreateWithFlags") &&
                   ewb_cuda_ok(cudaEventCreate(&timer->start), "cudaEventCreate") &&
                   ewb_cuda_ok(cudaEventCreate(&timer->stop), "cudaEventCreate") &&
                   ewb_cuda_ok(cudaEventCreateWithFlags(&timer->between, cudaEventDisableTiming),
                               "cudaEventCreateWithFlags") &&
                   ewb_cuda_ok(cudaMalloc((void **)&timer->flush, timer->flush_bytes),
                               "cudaMalloc(L2 flush buffer)")
               ? 0
               : -1;
}

/* Wait for the stop event and read the milliseconds since start. */
static int elapsed_ms(cudaEvent_t start, cudaEvent_t stop, double *ms)
{
    float elapsed = 0;
    if (!ewb_cuda_ok(cudaEventSynchronize(stop), "cudaEventSynchronize (a call failed on the GPU)") ||
        !ewb_cuda_ok(cudaEventElapsedTime(&elapsed, start, stop), "cudaEventElapsedTime"))
        return -1;
    *ms = elapsed;
    return 0;
}

/* Back-to-back: milliseconds of `calls` calls queued one after the other, between two events. */
static int time_batch_back_to_back(const ewb_timer_t *timer, ewb_member_t *m, int calls, double *ms)
{
    if (!ewb_cuda_ok(cudaEventRecord(timer->start, timer->stream), "cudaEventRecord"))
        return -1;
    for (int i = 0; i < calls; ++i)
        if (m->enqueue(m) != 0)
            return -1;
    if (!ewb_cuda_ok(cudaEventRecord(timer->stop, timer->stream), "cudaEventRecord"))
        return -1;
    return elapsed_ms(timer->start, timer->stop, ms);
}

/* The hold: HOLD_FACTOR times the host's last measured time to queue the batch, plus a margin. */
#define HOLD_FACTOR 1.5
enum { HOLD_MARGIN_US = 50, HOLD_MAX_US = 200000 };

/* The hold is 1.5 times the host's last measured time to queue that many calls (the stream is idle when
 * a batch starts: each batch waits for its stop event). The whole batch is then queued before the GPU
 * reaches its first call, so no call waits on the host inside the timed window, and the figure is the
 * GPU's time per call (its launch included) at any n, whatever the implementation's host cost. Where
 * the queueing outlasted the hold (the host was slowed down), the batch is timed once more with a hold
 * sized from that; if that fails too, it counts in *behind and its figure stands. */
int ewb_time_held(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, cudaEvent_t between,
                  int (*enqueue)(void *ctx), void *ctx, int calls, double *host_us, int *behind, double *ms)
{
    for (int attempt = 0;; ++attempt) {
        double hold_us = HOLD_FACTOR * *host_us * calls + HOLD_MARGIN_US;
        hold_us = hold_us < HOLD_MAX_US ? hold_us : HOLD_MAX_US;
        if (!ewb_cuda_ok(ewb_hold_back((uint64_t)(hold_us * 1e3), stream), "hold-back kernel") ||
            !ewb_cuda_ok(cudaEventRecord(start, stream), "cudaEventRecord"))
            return -1;
        double t0 = ewb_now_us();
        for (int i = 0; i < calls; ++i) {
            const cudaEvent_t after = i + 1 < calls ? between : stop;
            if (enqueue(ctx) != 0 ||
                (after != NULL && !ewb_cuda_ok(cudaEventRecord(after, stream), "cudaEventRecord")))
                return -1;
        }
        double queued_us = ewb_now_us() - t0;
        if (elapsed_ms(start, stop, ms) != 0)
            return -1;
        *host_us = queued_us / calls;
        if (queued_us <= hold_us - HOLD_MARGIN_US / 2)
            return 0;
        if (attempt > 0 || hold_us >= HOLD_MAX_US) {
            ++*behind;
            return 0;
        }
    }
}

static int enqueue_member(void *member)
{
    ewb_member_t *m = member;
    return m->enqueue(m);
}

/* Isolated: milliseconds of `calls` calls, each followed by an event, behind the hold (ewb_time_held). */
static int time_batch_isolated(const ewb_timer_t *timer, ewb_member_t *m, int calls, double *ms)
{
    return ewb_time_held(timer->stream, timer->start, timer->stop, timer->between, enqueue_member, m, calls,
                         &m->host_us, &m->host_behind, ms);
}

static int time_batch(const ewb_timer_t *timer, ewb_member_t *m, int calls, double *ms)
{
    return m->isolated ? time_batch_isolated(timer, m, calls, ms)
                       : time_batch_back_to_back(timer, m, calls, ms);
}

enum { WARMUP_CALLS = 3, PROBE_CALLS = 4, MIN_CALLS = 10, MAX_CALLS = 5000, MAX_ISOLATED_CALLS = 200 };

/* Warm-up calls (isolated: with their events, timed on the host for the first hold), then a short probe
 * that sizes the batches to about batch_ms each: at least MIN_CALLS calls, at most MAX_CALLS, and for
 * isolated batches MAX_ISOLATED_CALLS, fewer than the ~1000 launches a stream queues before the host
 * blocks (a blocked host would outlast the hold). */
static int prepare(const ewb_timer_t *timer, ewb_member_t *m, double batch_ms)
{
    double t0 = ewb_now_us();
    for (int i = 0; i < WARMUP_CALLS; ++i)
        if (m->enqueue(m) != 0 ||
            (m->isolated && !ewb_cuda_ok(cudaEventRecord(timer->between, timer->stream), "cudaEventRecord")))
            return -1;
    m->host_us = (ewb_now_us() - t0) / WARMUP_CALLS;
    double probe_ms;
    if (time_batch(timer, m, PROBE_CALLS, &probe_ms) != 0)
        return -1;
    m->host_behind = 0; /* the warm-up's first calls may have loaded code: the probe does not count */
    double per_call_ms = probe_ms / PROBE_CALLS;
    int most = m->isolated ? MAX_ISOLATED_CALLS : MAX_CALLS;
    int wanted = per_call_ms > 0 ? (int)ceil(batch_ms / per_call_ms) : most;
    m->calls = wanted < MIN_CALLS ? MIN_CALLS : wanted > most ? most : wanted;
    return 0;
}

/* The members take turns so that a drift of the host's launch rate, which decides the back-to-back
 * figures where a call takes a few microseconds, falls on every member alike and their ratios compare
 * like with like. */
int ewb_time_group(const ewb_timer_t *timer, ewb_member_t *const group[], int members, int batches,
                   double batch_ms, double *us)
{
    static double ms[EWB_MAX_MEMBERS][EWB_MAX_BATCHES];
    if (members > EWB_MAX_MEMBERS || batches > EWB_MAX_BATCHES ||
        !ewb_cuda_ok(cudaMemsetAsync(timer->flush, 0x3C, timer->flush_bytes, timer->stream),
                     "cudaMemsetAsync(L2 flush)"))
        return -1;
    for (int m = 0; m < members; ++m)
        group[m]->calls = 0;
    for (int b = 0; b < batches; ++b)
        for (int turn = 0; turn < members; ++turn) {
            const int m = (turn + b) % members;
            if ((group[m]->calls == 0 && prepare(timer, group[m], batch_ms) != 0) ||
                time_batch(timer, group[m], group[m]->calls, &ms[m][b]) != 0)
                return -1;
        }
    for (int m = 0; m < members; ++m)
        us[m] = ewb_median(ms[m], batches) * 1000.0 / group[m]->calls;
    return 0;
}

int ewb_time_host(int (*call)(void *ctx, int launcher), void *ctx, int launchers, int calls, int batches,
                  cudaStream_t stream, double *us)
{
    double *times = malloc(sizeof *times * (size_t)launchers * (size_t)batches);
    int failed = times == NULL;
    for (int l = 0; l < launchers && !failed; ++l)
        for (int i = 0; i < calls && !failed; ++i)
            failed = call(ctx, l) != 0;
    failed = failed || !ewb_cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    for (int b = 0; b < batches && !failed; ++b)
        for (int turn = 0; turn < launchers && !failed; ++turn) {
            const int l = (turn + b) % launchers;
            const double t0 = ewb_now_us();
            for (int i = 0; i < calls && !failed; ++i)
                failed = call(ctx, l) != 0;
            times[(size_t)l * (size_t)batches + (size_t)b] = (ewb_now_us() - t0) / calls;
            failed = failed || !ewb_cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        }
    for (int l = 0; l < launchers && !failed; ++l)
        us[l] = ewb_median(times + (size_t)l * (size_t)batches, batches);
    free(times);
    return failed ? -1 : 0;
}

int ewb_raw_launch_add_f32(void *ctx, int64_t n, float *out, const float *a, const float *b,
                           cudaStream_t stream)
{
    (void)ctx;
    dim3 grid = {(unsigned)((n + 255) / 256), 1, 1}, block = {256, 1, 1};
    void *params[] = {&out, &a, &b, &n};
    return ewb_cuda_ok(cudaLaunchKernel(ewb_raw_add_f32_kernel(), grid, block, params, 0, stream),
                       "cudaLaunchKernel")
               ? 0
               : -1;
}
