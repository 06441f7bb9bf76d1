/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tensor-list targets of the issue, on this machine's GPU, one CSV row each:
 *   loguniform  1,000 f32 tensors of seeded log-uniform sizes 2^10-2^20, add: ew_binary_batched against
 *               ew_binary over one buffer of the same total (GPU time, CUDA events);
 *   cast        the same sizes, f16 -> f32: ew_cast_batched against the flat ew_cast;
 *   e2e4096     1,000 x 4,096 f32 add from the host call to its completion (host clock around the call
 *               and a stream synchronize): the list call against a C loop of 1,000 ew_binary calls,
 *               and the floors: one ew_binary over the same bytes, and one over one entry's;
 *   gpu4096     the same list call's GPU time alone, against the flat add over its buffers;
 *   host        host time of one ew_binary_batched call (its launches queued, not run) at counts 1,
 *               100, 1,000 and 10,000 entries of 4,096 elements, of one ew_binary of 4,096, and of
 *               one cudaLaunchKernel of a raw add kernel over as many (the floor of any call).
 * Method of bench/lib: warm-up calls, then batches of calls between two events, the median batch divided
 * by its calls. The sizes come from xorshift64 seeded with --seed, which bench/peers/torch_foreach.py
 * repeats, so its lists are these.
 *   ew-bench-lists [--csv FILE] [--seed N] [--batches N]
 * Columns: case,impl,count,elements,us,gbps. Without a GPU it says so and exits 0.
 */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common.h"
#include "csv.h"
#include "elementwise.h"
#include "timing.h"

enum { COUNT = 1000, WARMUP = 3, CALLS_PER_BATCH = 10 };

static int batches = 15;
static FILE *csv;
static ew_handle_t handle;
static ewb_timer_t timer; /* its stream is the one every call is queued on */

/* A failed call ends the program (said on stderr): its figures would be meaningless. */
#define CHECK_CUDA(call) need(ewb_cuda_ok((call), #call))
#define CHECK_EW(call) need(ewb_ew_ok((call), #call))

static void need(int ok)
{
    if (!ok)
        exit(1);
}

/* The sizes: xorshift64 (13, 7, 17), u = top 53 bits / 2^53, n = round(2^(10 + 10 u)). */
static void loguniform_sizes(uint64_t seed, int64_t *n, int count)
{
    uint64_t x = seed ? seed : 1;
    for (int i = 0; i < count; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const double u = (double)(x >> 11) / 9007199254740992.0;
        n[i] = (int64_t)llround(pow(2.0, 10.0 + 10.0 * u));
    }
}

typedef int (*call_fn)(void *ctx); /* queues one call: 0 (a failure exits) */

/* GPU time of one call: the median batch of CALLS_PER_BATCH calls between two events, divided, each batch
 * queued behind a hold of the stream (ewb_time_held): a list can cost the host longer than the GPU.
 * Batches queued past their hold count in *behind. */
static double gpu_us(call_fn call, void *ctx, int *behind)
{
    double call_us = ewb_now_us(); /* the host's time to queue one call */
    for (int w = 0; w < WARMUP; ++w)
        call(ctx);
    call_us = (ewb_now_us() - call_us) / WARMUP;
    CHECK_CUDA(cudaStreamSynchronize(timer.stream));
    double *t = malloc((size_t)batches * sizeof *t);
    for (int b = 0; b < batches; ++b) {
        double ms;
        if (ewb_time_held(timer.stream, timer.start, timer.stop, NULL, call, ctx, CALLS_PER_BATCH, &call_us,
                          behind, &ms) != 0)
            exit(1);
        t[b] = ms * 1e3 / CALLS_PER_BATCH;
    }
    const double result = ewb_median(t, batches);
    free(t);
    return result;
}

/* Host clock from the call to its completion: median of single calls, each followed by a synchronize. */
static double end_to_end_us(call_fn call, void *ctx)
{
    for (int w = 0; w < WARMUP; ++w)
        call(ctx);
    CHECK_CUDA(cudaStreamSynchronize(timer.stream));
    const int runs = batches * CALLS_PER_BATCH;
    double *t = malloc((size_t)runs * sizeof *t);
    for (int r = 0; r < runs; ++r) {
        const double t0 = ewb_now_us();
        call(ctx);
        CHECK_CUDA(cudaStreamSynchronize(timer.stream));
        t[r] = ewb_now_us() - t0;
    }
    const double result = ewb_median(t, runs);
    free(t);
    return result;
}

/* Host time of the call alone (its work queued), the stream drained between batches so it never fills. */
static double host_us(call_fn call, void *ctx)
{
    for (int w = 0; w < WARMUP; ++w)
        call(ctx);
    const int runs = batches * CALLS_PER_BATCH;
    double *t = malloc((size_t)runs * sizeof *t);
    for (int r = 0; r < runs; ++r) {
        if (r % CALLS_PER_BATCH == 0)
            CHECK_CUDA(cudaStreamSynchronize(timer.stream));
        const double t0 = ewb_now_us();
        call(ctx);
        t[r] = ewb_now_us() - t0;
    }
    CHECK_CUDA(cudaStreamSynchronize(timer.stream));
    const double result = ewb_median(t, runs);
    free(t);
    return result;
}

/* A list over three (two for casts) allocations, each entry 256-byte aligned. */
typedef struct {
    int count;
    int64_t *n, total;
    ew_dtype_t out_dtype, in_dtype;
    void **out;
    const void **a, **b;
    unsigned char *base[3];
} list_t;

static list_t list_new(int count, const int64_t *n, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int inputs)
{
    list_t l = {.count = count, .out_dtype = out_dtype, .in_dtype = in_dtype};
    l.n = malloc((size_t)count * sizeof *l.n);
    l.out = malloc((size_t)count * sizeof *l.out);
    l.a = malloc((size_t)count * sizeof *l.a);
    l.b = malloc((size_t)count * sizeof *l.b);
    memcpy(l.n, n, (size_t)count * sizeof *n);
    size_t bytes[3] = {0, 0, 0};
    const size_t size[3] = {ew_dtype_size(out_dtype), ew_dtype_size(in_dtype), ew_dtype_size(in_dtype)};
    for (int i = 0; i < count; ++i) {
        l.total += n[i];
        for (int j = 0; j < 3; ++j)
            bytes[j] += ((size_t)n[i] * size[j] + 255) / 256 * 256;
    }
    for (int j = 0; j <= inputs; ++j) {
        CHECK_CUDA(cudaMalloc((void **)&l.base[j], bytes[j]));
        CHECK_CUDA(cudaMemset(l.base[j], 0x3C, bytes[j])); /* finite values of every type */
    }
    size_t at[3] = {0, 0, 0};
    for (int i = 0; i < count; ++i) {
        l.out[i] = l.base[0] + at[0];
        l.a[i] = l.base[1] + at[1];
        l.b[i] = inputs == 2 ? l.base[2] + at[2] : NULL;
        for (int j = 0; j < 3; ++j)
            at[j] += ((size_t)n[i] * size[j] + 255) / 256 * 256;
    }
    return l;
}

static void list_free(list_t *l)
{
    for (int j = 0; j < 3; ++j)
        cudaFree(l->base[j]);
    free(l->n), free(l->out), free(l->a), free(l->b);
}

static int add_list(void *ctx)
{
    list_t *l = ctx;
    CHECK_EW(ew_binary_batched(handle, EW_OP_ADD, EW_F32, l->count, l->n, l->out, l->a, l->b, timer.stream));
    return 0;
}
static int add_loop(void *ctx)
{
    list_t *l = ctx;
    for (int i = 0; i < l->count; ++i)
        CHECK_EW(ew_binary(handle, EW_OP_ADD, EW_F32, l->n[i], l->out[i], l->a[i], l->b[i], timer.stream));
    return 0;
}
/* bench/raw_kernel.cu's add over the first entry through cudaLaunchKernel: a launch's own host cost. */
static int raw_launch(void *ctx)
{
    list_t *l = ctx;
    need(ewb_raw_launch_add_f32(NULL, l->n[0], l->out[0], l->a[0], l->b[0], timer.stream) == 0);
    return 0;
}
static int cast_list(void *ctx)
{
    list_t *l = ctx;
    CHECK_EW(ew_cast_batched(handle, l->out_dtype, l->in_dtype, l->count, l->n, l->out, l->a, timer.stream));
    return 0;
}

/* The flat call over one buffer of the list's total. */
typedef struct {
    int64_t n;
    ew_dtype_t out_dtype, in_dtype;
    void *out, *a, *b;
} flat_t;
static int add_flat(void *ctx)
{
    flat_t *f = ctx;
    CHECK_EW(ew_binary(handle, EW_OP_ADD, EW_F32, f->n, f->out, f->a, f->b, timer.stream));
    return 0;
}
static int cast_flat(void *ctx)
{
    flat_t *f = ctx;
    CHECK_EW(ew_cast(handle, f->out_dtype, f->in_dtype, f->n, f->out, f->a, timer.stream));
    return 0;
}

static void row(const char *name, const char *impl, int count, int64_t elements, double us, double bytes)
{
    const double gbps = bytes > 0 ? bytes / (us * 1e3) : 0;
    printf("%-12s %-16s count %6d  elements %11" PRId64 "  %10.2f us  %8.1f GB/s\n", name, impl, count, elements,
           us, gbps);
    if (csv) {
        fprintf(csv, "%s,%s,%d,%" PRId64, name, impl, count, elements);
        ewb_csv_number(csv, "%.3f", us);
        ewb_csv_number(csv, "%.1f", gbps);
        fputc('\n', csv);
    }
}

int main(int argc, char **argv)
{
    uint64_t seed = 1;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
            csv_path = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc)
            batches = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--csv FILE] [--seed N] [--batches N]\n", argv[0]);
            return 2;
        }
    }
    const int found = ewb_use_device(0);
    if (found <= 0)
        return found == 0 ? 0 : 1;
    CHECK_EW(ew_handle_create(0, &handle));
    need(ewb_timer_init(&timer, 0) == 0);
    csv = ewb_csv_open(csv_path, "case,impl,count,elements,us,gbps\n");
    if (csv_path && !csv)
        return 1;

    int behind = 0; /* GPU-time batches queued past their hold */
    int64_t sizes[COUNT];
    loguniform_sizes(seed, sizes, COUNT);
    /* 1: log-uniform f32 add, list against flat */
    list_t l = list_new(COUNT, sizes, EW_F32, EW_F32, 2);
    const double add_bytes = 12.0 * (double)l.total;
    row("loguniform", "ew_batched", COUNT, l.total, gpu_us(add_list, &l, &behind), add_bytes);
    flat_t flat = {l.total, EW_F32, EW_F32, l.base[0], l.base[1], l.base[2]};
    row("loguniform", "ew_flat", 1, l.total, gpu_us(add_flat, &flat, &behind), add_bytes);
    list_free(&l);

    /* 4: f16 -> f32 casts of the same sizes */
    l = list_new(COUNT, sizes, EW_F32, EW_F16, 1);
    const double cast_bytes = 6.0 * (double)l.total;
    row("cast", "ew_batched", COUNT, l.total, gpu_us(cast_list, &l, &behind), cast_bytes);
    flat = (flat_t){l.total, EW_F32, EW_F16, l.base[0], l.base[1], NULL};
    row("cast", "ew_flat", 1, l.total, gpu_us(cast_flat, &flat, &behind), cast_bytes);
    list_free(&l);

    /* 2: 1,000 x 4,096 end to end, and the C loop */
    int64_t *n4096 = malloc(10000 * sizeof *n4096);
    for (int i = 0; i < 10000; ++i)
        n4096[i] = 4096;
    l = list_new(COUNT, n4096, EW_F32, EW_F32, 2);
    row("e2e4096", "ew_batched", COUNT, l.total, end_to_end_us(add_list, &l), 12.0 * (double)l.total);
    row("e2e4096", "ew_binary_loop", COUNT, l.total, end_to_end_us(add_loop, &l), 12.0 * (double)l.total);
    flat = (flat_t){l.total, EW_F32, EW_F32, l.base[0], l.base[1], l.base[2]};
    row("e2e4096", "ew_flat", 1, l.total, end_to_end_us(add_flat, &flat), 12.0 * (double)l.total);
    flat.n = 4096;
    row("e2e4096", "ew_binary", 1, flat.n, end_to_end_us(add_flat, &flat), 12.0 * (double)flat.n);
    flat.n = l.total;
    row("gpu4096", "ew_batched", COUNT, l.total, gpu_us(add_list, &l, &behind), 12.0 * (double)l.total);
    row("gpu4096", "ew_flat", 1, l.total, gpu_us(add_flat, &flat, &behind), 12.0 * (double)l.total);
    list_free(&l);

    /* 3: host time per call by count, and of one flat call of an entry's size */
    l = list_new(1, n4096, EW_F32, EW_F32, 2);
    row("host", "ew_binary", 1, l.total, host_us(add_loop, &l), 0);
    row("host", "raw_launch", 1, l.total, host_us(raw_launch, &l), 0);
    list_free(&l);
    const int counts[] = {1, 100, 1000, 10000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
        l = list_new(counts[c], n4096, EW_F32, EW_F32, 2);
        row("host", "ew_batched", counts[c], l.total, host_us(add_list, &l), 0);
        list_free(&l);
    }
    free(n4096);
    printf("GPU time: %d of the timed batches were queued past their hold (those include host time)\n", behind);
    const int status = ewb_csv_close(csv) != 0;
    ew_handle_destroy(handle);
    ewb_timer_free(&timer);
    return status;
}
