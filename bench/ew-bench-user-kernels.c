/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ew-bench-user-kernels: user-defined kernels (ew_kernel_*) against the library's own calls, each case
 * timed in one group with its yardstick:
 *   target 1  `return ew::add(in0, in1);` at f32, f16, i8, n = 2^20 ... 2^28, aligned and misaligned
 *             (out +2, in0 +1, in1 +3 elements: no common vector width), vs ew_binary(EW_OP_ADD): GB/s;
 *   target 2  `return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));`, f32 in, f16 out,
 *             p0 = 1.5, n = 2^26: time of one launch vs ew_scale_add -> ew_unary(RELU) -> ew_cast through
 *             two f32 temporaries (bench/peers/torch_kernel.py times torch.compile, eager and CuPy);
 *   target 3  `return ew::add(ew::mul(in0, in1), in2);` in f16 at n = 2^26, GB/s on its own 8 bytes an
 *             element vs the flat add f16 on its 6;
 *   target 4  host time to queue one ew_kernel_launch vs one ew_binary, add f32, n = 256; with
 *             --create-only, the time of ew_kernel_create (below) (target 5, the first create in a
 *             fresh process, is --create-only's too: scripts/gpu/bench-kernel.sh);
 *   target 6  `out0 = in0; out1 = in0;`, a cast bf16 -> f32 with an abs max reduction output
 *             (ew_kernel_create_outputs, overwritten), n = 2^28, GB/s on its 6 bytes an element vs
 *             ew_cast bf16 -> f32; its output and scalar must equal ew_cast's and ew_amax's;
 *   target 7  `out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);`, two f32 arrays of f32 inputs
 *             (ew_kernel_create_outputs), n = 2^26, timed in one group with two yardsticks: GB/s on its 16
 *             bytes an element vs the flat add f32 on its 12 (the memory speed), and its time vs the two
 *             catalogue calls, ew_binary add then mul into two outputs (24 bytes: 1.5x the kernel's); both
 *             outputs must equal those two calls'.
 * GB/s = bytes the call must move (each operand element read or written once) / time, 1 GB = 10^9 bytes.
 * Method of bench/lib (docs/design.md): a pool of at least 2 GiB per operand, every call on the next
 * 4 KiB-aligned slice, inputs never zero, an L2 flush per group, warm-up and a probe sizing batches, the
 * median of the batches, CUDA events, the members of a group taking turns batch by batch; both columns of
 * bench/lib/common.h. Each kernel is created on both columns' handles.
 * Checks, in each column: the kernel and the catalogue calls giving the same bits (target 3: ew_binary
 * mul then add; target 7: add and mul) run once on the same inputs into outputs poisoned with different
 * bytes; the outputs (each of them) are compared whole, byte for byte, the poison around each must be
 * intact, and spans at the start, middle and end of the kernel's outputs are compared with the tests' CPU
 * reference.
 *
 *   ew-bench-user-kernels [--csv FILE] [--targets LIST] [--log2 LIST] [--batches N] [--batch-ms T]
 *                         [--timing LIST] [--device D] [--no-check]
 *   ew-bench-user-kernels --create-only compile|disk|floor [--tag TAG] [--sources K] [--csv FILE] [--device
 * D]
 * --create-only compile creates K sources never seen (the chain of target 2 behind a statement naming TAG and
 * a counter), each timed: with EW_KERNEL_CACHE_DIR a fresh empty directory that is a compilation; then one
 * of them again, many times, in the same process (the memory cache). --create-only disk, a new process
 * on the same directory with the same TAG, times the same K sources again: the disk cache. Every kernel
 * so created is launched once and compared with the three catalogue calls. --create-only floor times what
 * NVRTC itself costs a fresh process, no library involved: opening it (dlopen of EW_NVRTC_LIBRARY, else
 * libnvrtc.so.<CUDA major> on the loader's path, else in /usr/local/cuda/lib64) and compiling an empty
 * kernel for the device's architecture, the floor of a process's first create
 * (scripts/gpu/bench-kernel.sh runs both in fresh processes, in turn).
 * CSV: target,case,dtype,n,alignment,timing,metric,library,yardstick_impl,yardstick,ratio,check; one
 * row per case and column (metric gbps, us, or host_us for the host time of a launch; target 7 two:
 * t7-two-outputs, gbps vs ew_binary_add, and t7-two-outputs-calls, us vs ew_binary_add_mul, the pair's
 * time); ratio is the library's advantage (GB/s: library / yardstick; times: yardstick / library).
 * --create-only writes rows of metric create_us, timing host, n the creates the figure is over:
 * t4-create-compile (median), -compile-max, -compile-first (the process's first: NVRTC loaded then),
 * t4-create-memory, and the same three for disk; floor, t5-nvrtc-open and t5-nvrtc-empty (n 1). Exit: 0, also
 * without a GPU (one line says so); 1 a failed call or check; 2 bad options; 3 ew_kernel_create reported
 * EW_ERROR_NOT_SUPPORTED (no NVRTC; floor: none found).
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "common.h"
#include "csv.h"
#include "elementwise.h"
#include "pool.h"
#include "raw_kernel.h"
#include "timing.h"

enum { COL_B2B = EWB_BACK_TO_BACK, COL_ISO = EWB_ISOLATED, COLUMNS = EWB_COLUMNS };
/* Operand pools: 0 out, 1-3 inputs, 3-4 the catalogue chains' temporaries; 3 target 7's second output. */
enum { POOLS = 5, MAX_OFFSET = 3, MAX_CASES = 64, MAX_LOG2 = 8 };
/* The sides of a case: the kernel, its yardstick, the catalogue calls whose bits it must equal (target 7
 * times them too: its second yardstick). */
enum { LIB = 0, YARD = 1, SAME = 2 };
enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_NO_NVRTC = 3 };

static const size_t CHUNK = (size_t)64 << 20;          /* pinned buffers of the whole-output comparison */
static const uint64_t FILL_SEED = 0x5EEDC0DEull;
static const unsigned char POISON[2] = {EWB_POISON, 0x5A}; /* the kernel's output, the catalogue's */
static const double ALPHA = 1.5;                     /* target 2's p0 */
/* Targets 2, 3 and 7's n, 2^26; a host-only test may shrink it. */
#ifndef EWB_N26
#define EWB_N26 ((int64_t)1 << 26)
#endif
static const int64_t N26 = EWB_N26, N28 = EWB_N26 << 2, HOST_N = 256;
/* Misaligned: elements past the slice start of out, in0, in1 (pools 0-2). */
static const int MISALIGNED[POOLS] = {2, 1, 3, 0, 0};

/* ---- the kernels ---- */

typedef enum { K_ADD_F32, K_ADD_F16, K_ADD_I8, K_CHAIN, K_TERNARY, K_CAST_AMAX, K_TWO_OUT, SLOTS } slot_t;

#define CHAIN_SOURCE "return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));"

static const struct {
    const char *source;
    ew_dtype_t out, in; /* every input has the dtype in */
    int inputs, params;
    const char *dtype; /* the CSV's dtype column */
} specs[SLOTS] = {
    [K_ADD_F32] = {"return ew::add(in0, in1);", EW_F32, EW_F32, 2, 0, "f32"},
    [K_ADD_F16] = {"return ew::add(in0, in1);", EW_F16, EW_F16, 2, 0, "f16"},
    [K_ADD_I8] = {"return ew::add(in0, in1);", EW_I8, EW_I8, 2, 0, "i8"},
    [K_CHAIN] = {CHAIN_SOURCE, EW_F16, EW_F32, 2, 1, "f16<-f32"},
    [K_TERNARY] = {"return ew::add(ew::mul(in0, in1), in2);", EW_F16, EW_F16, 3, 0, "f16"},
    [K_CAST_AMAX] = {"out0 = in0; out1 = in0;", EW_F32, EW_BF16, 1, 0, "f32<-bf16"}, /* + an f32 abs max */
    [K_TWO_OUT] = {"out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);", EW_F32, EW_F32, 2, 0, "f32"},
};

/* Whether slot's kernel is one of ew_kernel_create_outputs: out0, then an f32 abs max (K_CAST_AMAX) or a
 * second array of the dtype out (K_TWO_OUT, in pool 3). */
static int of_outputs(slot_t slot) { return slot == K_CAST_AMAX || slot == K_TWO_OUT; }

/* ---- the cases ---- */

typedef struct {
    int target;
    char name[48];
    slot_t slot;
    int64_t n;
    int misaligned;
} kcase_t;

static kcase_t cases[MAX_CASES];
static int case_count;

typedef struct {
    const char *csv_path;
    unsigned targets; /* bit t for target t */
    unsigned timing;  /* bit per column */
    int log2[MAX_LOG2], log2_count;
    int batches, device, no_check;
    double batch_ms;
    const char *create_only; /* "compile", "disk", "floor" or NULL */
    const char *tag;
    int sources;
} options_t;

static void add_case(int target, slot_t slot, int64_t n, int misaligned)
{
    kcase_t *c = &cases[case_count++];
    *c = (kcase_t){.target = target, .slot = slot, .n = n, .misaligned = misaligned};
    char n_text[24];
    ewb_log2_text(n, n_text, sizeof n_text);
    if (target == 1)
        snprintf(c->name, sizeof c->name, "t1-add-%s-%s-%s", specs[slot].dtype, n_text,
                 misaligned ? "misaligned" : "aligned");
    else
        snprintf(c->name, sizeof c->name, "%s",
                 target == 2   ? "t2-chain"
                 : target == 3 ? "t3-ternary-f16"
                 : target == 6 ? "t6-cast-amax"
                               : "t7-two-outputs");
}

static void build_cases(const options_t *o)
{
    static const slot_t adds[] = {K_ADD_F32, K_ADD_F16, K_ADD_I8};
    case_count = 0;
    if (o->targets >> 1 & 1)
        for (size_t d = 0; d < sizeof adds / sizeof adds[0]; ++d)
            for (int k = 0; k < o->log2_count; ++k)
                for (int m = 0; m < 2; ++m)
                    add_case(1, adds[d], (int64_t)1 << o->log2[k], m);
    if (o->targets >> 2 & 1)
        add_case(2, K_CHAIN, N26, 0);
    if (o->targets >> 3 & 1)
        add_case(3, K_TERNARY, N26, 0);
    if (o->targets >> 6 & 1)
        add_case(6, K_CAST_AMAX, N28, 0);
    if (o->targets >> 7 & 1)
        add_case(7, K_TWO_OUT, N26, 0);
}

/* The dtype of each pool a side's call touches (0: untouched). */
static void operands(const kcase_t *c, int side, ew_dtype_t dtype[POOLS])
{
    const ew_dtype_t in = specs[c->slot].in;
    for (int p = 0; p < POOLS; ++p)
        dtype[p] = (ew_dtype_t)0;
    dtype[0] = specs[c->slot].out;
    dtype[1] = in;
    dtype[2] = specs[c->slot].inputs > 1 ? in : (ew_dtype_t)0;
    if (c->slot == K_CHAIN && side != LIB)
        dtype[3] = dtype[4] = EW_F32; /* scale_add -> 3, relu -> 4, cast -> out */
    if (c->slot == K_TERNARY && side != YARD)
        dtype[3] = EW_F16; /* in2; the yardstick is the flat add of in0 and in1 */
    if (c->slot == K_TERNARY && side == SAME)
        dtype[4] = EW_F16; /* mul -> 4, add of 4 and in2 -> out */
    if (c->slot == K_TWO_OUT && side != YARD)
        dtype[3] = EW_F32; /* out1; the yardstick is the flat add into out */
}

/* Whether pool p is an output of case c (the checks give the catalogue's its second slice). */
static int output_pool(const kcase_t *c, int p) { return p == 0 || (c->slot == K_TWO_OUT && p == 3); }

/* Bytes one call moves. */
static double bytes_of(const kcase_t *c, int side)
{
    if (c->slot == K_CHAIN && side == YARD)
        return 26.0 * (double)c->n; /* scale_add 12, relu 8, cast 6 bytes an element */
    if (c->slot == K_TWO_OUT && side == SAME)
        return 24.0 * (double)c->n; /* add 12, mul 12 bytes an element */
    ew_dtype_t d[POOLS];
    operands(c, side, d);
    double size = 0;
    for (int p = 0; p < POOLS; ++p)
        size += d[p] ? (double)ew_dtype_size(d[p]) : 0;
    return size * (double)c->n;
}

/* Target 2 compares times, the others GB/s (target 7 also times, against its SAME side). */
static int timed_in_us(const kcase_t *c) { return c->slot == K_CHAIN; }

/* ---- options ---- */

static void usage(FILE *to, const char *program)
{
    fprintf(
        to,
        "usage: %s [options]\n"
        "Times user-defined kernels (ew_kernel_launch) against the library's calls on the kernel targets.\n"
        "  --csv FILE       write target,case,dtype,n,alignment,timing,metric,library,yardstick_impl,\n"
        "                   yardstick,ratio,check\n"
        "  --targets LIST   only these targets (1-4, 6, 7; default all; 4: the host time of a launch)\n"
        "  --log2 LIST      target 1's n = 2^k for each k (default 20,22,24,26,28)\n"
        "  --batches N      timed batches per member and column, median reported (default 15, >= 5)\n"
        "  --batch-ms T     batches of about T ms of calls (default 2)\n"
        "  --timing LIST    back-to-back,isolated (default both)\n"
        "  --no-check       skip the bit checks\n"
        "  --device D       CUDA device (default 0)\n"
        "  --create-only compile|disk|floor   time ew_kernel_create only (target 4): compile new\n"
        "                   sources and create one again in the process, or (a second process, same\n"
        "                   EW_KERNEL_CACHE_DIR, same --tag) load the same sources from the disk cache;\n"
        "                   floor: NVRTC's own cost to a fresh process (open, an empty kernel)\n"
        "  --tag TAG        makes the sources of --create-only unique (default: pid and clock; disk\n"
        "                   needs the compile run's)\n"
        "  --sources K      sources --create-only creates (default 11)\n",
        program);
}

static int parse_list(const char *text, int low, int high, int *values, int most, int *count)
{
    *count = 0;
    for (const char *p = text; *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || (*end && *end != ',') || v < low || v > high || *count >= most)
            return -1;
        values[(*count)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return *count ? 0 : -1;
}

static int parse_options(int argc, char **argv, options_t *o)
{
    *o = (options_t){.targets = 0xDE,
                     .timing = 3,
                     .log2 = {20, 22, 24, 26, 28},
                     .log2_count = 5,
                     .batches = 15,
                     .batch_ms = 2.0,
                     .sources = 11};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int shared =
            ewb_parse_timing_option(a, v, &o->batches, &o->batch_ms, &o->device, &o->timing, &o->no_check);
        if (shared < 0)
            return -1;
        i += shared > 1;
        if (shared > 0)
            continue;
        char *end = NULL;
        int values[MAX_LOG2], count = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout, argv[0]);
            exit(0);
        } else if (v == NULL) {
            fprintf(stderr, "%s: unknown option or missing value\n", a);
            return -1;
        }
        ++i;
        if (strcmp(a, "--csv") == 0) {
            o->csv_path = v;
        } else if (strcmp(a, "--sources") == 0) {
            long k = strtol(v, &end, 10);
            if (*end || k < 1 || k > 1000)
                return fprintf(stderr, "--sources takes 1-1000\n"), -1;
            o->sources = (int)k;
        } else if (strcmp(a, "--tag") == 0) {
            if (!*v || strlen(v) > 64 || strpbrk(v, "\"\\"))
                return fprintf(stderr, "--tag takes 1-64 characters, no '\"' or '\\'\n"), -1;
            o->tag = v;
        } else if (strcmp(a, "--create-only") == 0) {
            if (strcmp(v, "compile") != 0 && strcmp(v, "disk") != 0 && strcmp(v, "floor") != 0)
                return fprintf(stderr, "--create-only takes compile, disk or floor\n"), -1;
            o->create_only = v;
        } else if (strcmp(a, "--targets") == 0) {
            o->targets = 0;
            for (int k = 0; parse_list(v, 1, 7, values, MAX_LOG2, &count) == 0 && k < count; ++k)
                o->targets |= values[k] != 5 ? 1u << values[k] : 0;
            if (!o->targets || count == 0)
                return fprintf(stderr, "--targets takes numbers 1-4, 6 and 7 separated by commas\n"), -1;
        } else if (strcmp(a, "--log2") == 0) {
            if (parse_list(v, 1, 28, o->log2, MAX_LOG2, &o->log2_count) != 0)
                return fprintf(stderr, "--log2 takes up to %d numbers 1-28 separated by commas\n", MAX_LOG2), -1;
        } else {
            fprintf(stderr, "unknown option '%s'\n", a);
            return -1;
        }
    }
    if (!o->targets || !o->timing)
        return fprintf(stderr, "nothing selected\n"), -1;
    if (o->create_only && strcmp(o->create_only, "disk") == 0 && !o->tag)
        return fprintf(stderr, "--create-only disk needs the --tag of the compile run\n"), -1;
    return 0;
}

/* ---- device state ---- */

static struct {
    ew_handle_t handle[COLUMNS]; /* ewb_create_handles */
    ew_kernel_t kernel[COLUMNS][SLOTS];
    float *scalar; /* target 6's: the kernel's (0) and ew_amax's (1) */
    ewb_pools_t pools;
    unsigned char *host[2]; /* pinned, CHUNK bytes each */
    ewb_timer_t timer;
} dev;

/* A slice holds n elements after the largest offset. */
static size_t stride_of(int64_t n, ew_dtype_t dtype)
{
    return ewb_round_up(((size_t)n + MAX_OFFSET) * ew_dtype_size(dtype), EWB_SLICE_ALIGN);
}

static int fill(int p, ew_dtype_t dtype) { return ewb_pool_fill(&dev.pools, p, dtype, dev.timer.stream); }

/* A side's pointers: on the next slices (fixed = 0), or (fixed = 1, for the checks) at the start of
 * every pool but the outputs', whose second slice is the catalogue's when the kernel's is the first. */
static void pointers(const kcase_t *c, int side, int fixed, void *p[POOLS])
{
    ew_dtype_t d[POOLS];
    operands(c, side, d);
    for (int k = 0; k < POOLS; ++k) {
        if (!d[k]) {
            p[k] = NULL;
            continue;
        }
        const size_t stride = stride_of(c->n, d[k]);
        unsigned char *slice = fixed ? dev.pools.base[k] + (output_pool(c, k) && side != LIB ? stride : 0)
                                     : ewb_pool_next(&dev.pools, k, stride);
        p[k] = slice + (c->misaligned ? (size_t)MISALIGNED[k] * ew_dtype_size(d[k]) : 0);
    }
}

/* Create slot's kernel on handle; 0, -1, or EXIT_NO_NVRTC's negative where NVRTC is missing. */
static int create_kernel(ew_handle_t handle, slot_t slot, const char *source, ew_kernel_t *kernel, double *us)
{
    const ew_dtype_t in[EW_KERNEL_MAX_INPUTS] = {specs[slot].in, specs[slot].in, specs[slot].in, specs[slot].in};
    const int amax = slot == K_CAST_AMAX;
    const ew_kernel_output_t outputs[2] = {
        {specs[slot].out, EW_REDUCE_NONE},
        {amax ? EW_F32 : specs[slot].out, amax ? EW_REDUCE_ABS_MAX : EW_REDUCE_NONE}};
    const double t0 = ewb_now_us();
    const ew_status_t status = of_outputs(slot)
                                   ? ew_kernel_create_outputs(handle, source, 2, outputs, specs[slot].inputs,
                                                              in, specs[slot].params, kernel)
                                   : ew_kernel_create(handle, source, specs[slot].out, specs[slot].inputs, in,
                                                      specs[slot].params, kernel);
    if (us)
        *us = ewb_now_us() - t0;
    if (status == EW_ERROR_NOT_SUPPORTED) {
        fprintf(stderr,
                "ew_kernel_create: EW_ERROR_NOT_SUPPORTED: %s\n"
                "ew-bench-user-kernels: no run-time compilation here (NVRTC missing?): nothing measured\n",
                ew_get_last_error_message());
        return -EXIT_NO_NVRTC;
    }
    return ewb_ew_ok(status, "ew_kernel_create") ? 0 : -1;
}

/* Pools, stream, events, pinned buffers, and each selected case's kernel on both handles. */
static int device_init(const options_t *o)
{
    size_t largest = stride_of(HOST_N, EW_F32);
    int used[SLOTS] = {0};
    used[K_ADD_F32] = (o->targets >> 4 & 1) != 0; /* the host time */
    for (int i = 0; i < case_count; ++i) {
        used[cases[i].slot] = 1;
        for (int side = LIB; side <= SAME; ++side) {
            ew_dtype_t d[POOLS];
            operands(&cases[i], side, d);
            for (int p = 0; p < POOLS; ++p)
                if (d[p] && stride_of(cases[i].n, d[p]) > largest)
                    largest = stride_of(cases[i].n, d[p]);
        }
    }
    if (ewb_timer_init(&dev.timer, o->device) != 0 ||
        ewb_pools_init(&dev.pools, POOLS, ewb_pool_bytes(largest), FILL_SEED) != 0)
        return -1;
    for (int k = 0; k < 2 && !o->no_check; ++k)
        if (!ewb_cuda_ok(cudaMallocHost((void **)&dev.host[k], CHUNK), "cudaMallocHost"))
            return -1;
    if (used[K_CAST_AMAX] && !ewb_cuda_ok(cudaMalloc((void **)&dev.scalar, 2 * sizeof(float)), "cudaMalloc"))
        return -1;
    for (int slot = 0; slot < SLOTS; ++slot)
        for (int col = 0; col < COLUMNS && used[slot]; ++col) {
            double us;
            int status = create_kernel(dev.handle[col], (slot_t)slot, specs[slot].source,
                                       &dev.kernel[col][slot], &us);
            if (status != 0)
                return status;
            printf("# kernel %-38s %-8s created on the %s handle in %.1f ms\n", specs[slot].source,
                   specs[slot].dtype, ewb_column_name(col), us / 1e3);
        }
    return 0;
}

static void device_free(void)
{
    for (int col = 0; col < COLUMNS; ++col)
        for (int slot = 0; slot < SLOTS; ++slot)
            if (dev.kernel[col][slot])
                ew_kernel_destroy(dev.kernel[col][slot]);
    ewb_pools_free(&dev.pools);
    if (dev.scalar)
        cudaFree(dev.scalar);
    for (int k = 0; k < 2; ++k)
        if (dev.host[k])
            cudaFreeHost(dev.host[k]);
    ewb_timer_free(&dev.timer);
    for (int k = 0; k < COLUMNS; ++k)
        if (dev.handle[k])
            ew_handle_destroy(dev.handle[k]);
}

/* ---- the calls ---- */

/* One call of a side on p, in a column, on the bench's stream: 0 or -1. */
static int call(const kcase_t *c, int side, int column, void *const p[POOLS])
{
    const ew_handle_t h = dev.handle[column];
    const int64_t n = c->n;
    const ew_dtype_t in = specs[c->slot].in;
    if (side == LIB && of_outputs(c->slot)) { /* an abs max into the scalar, or a second array */
        void *const outputs[2] = {p[0], c->slot == K_CAST_AMAX ? (void *)&dev.scalar[0] : p[3]};
        const void *const inputs[2] = {p[1], p[2]};
        return ewb_ew_ok(ew_kernel_launch_outputs(dev.kernel[column][c->slot], n, outputs,
                                                  EW_REDUCE_OVERWRITE, inputs, NULL, dev.timer.stream),
                         "ew_kernel_launch_outputs")
                   ? 0
                   : -1;
    }
    if (side == LIB) {
        const void *const inputs[EW_KERNEL_MAX_INPUTS] = {p[1], p[2], p[3], NULL};
        const double params[1] = {ALPHA};
        return ewb_ew_ok(ew_kernel_launch(dev.kernel[column][c->slot], n, p[0], inputs,
                                          specs[c->slot].params ? params : NULL, dev.timer.stream),
                         "ew_kernel_launch")
                   ? 0
                   : -1;
    }
    if (c->slot == K_CHAIN)
        return ewb_ew_ok(ew_scale_add(h, EW_F32, ALPHA, n, p[3], p[1], p[2], dev.timer.stream),
                         "ew_scale_add") &&
                       ewb_ew_ok(ew_unary(h, EW_OP_RELU, EW_F32, n, p[4], p[3], dev.timer.stream),
                                 "ew_unary") &&
                       ewb_ew_ok(ew_cast(h, EW_F16, EW_F32, n, p[0], p[4], dev.timer.stream), "ew_cast")
                   ? 0
                   : -1;
    if (c->slot == K_CAST_AMAX)
        return ewb_ew_ok(ew_cast(h, EW_F32, EW_BF16, n, p[0], p[1], dev.timer.stream), "ew_cast") &&
                       (side == YARD || ewb_ew_ok(ew_amax(h, EW_BF16, n, p[1], &dev.scalar[1],
                                                          EW_REDUCE_OVERWRITE, dev.timer.stream),
                                                  "ew_amax"))
                   ? 0
                   : -1;
    if (c->slot == K_TWO_OUT && side == SAME)
        return ewb_ew_ok(ew_binary(h, EW_OP_ADD, in, n, p[0], p[1], p[2], dev.timer.stream),
                         "ew_binary add") &&
                       ewb_ew_ok(ew_binary(h, EW_OP_MUL, in, n, p[3], p[1], p[2], dev.timer.stream),
                                 "ew_binary mul")
                   ? 0
                   : -1;
    if (c->slot == K_TERNARY && side == SAME)
        return ewb_ew_ok(ew_binary(h, EW_OP_MUL, EW_F16, n, p[4], p[1], p[2], dev.timer.stream),
                         "ew_binary mul") &&
                       ewb_ew_ok(ew_binary(h, EW_OP_ADD, EW_F16, n, p[0], p[4], p[3], dev.timer.stream),
                                 "ew_binary add")
                   ? 0
                   : -1;
    return ewb_ew_ok(ew_binary(h, EW_OP_ADD, in, n, p[0], p[1], p[2], dev.timer.stream), "ew_binary") ? 0
                                                                                                      : -1;
}

/* ---- timing (bench/lib's method) ---- */

typedef struct {
    ewb_member_t member; /* first: enqueue casts it back */
    const kcase_t *c;
    int side, column;
} member_t;

static int enqueue(ewb_member_t *member)
{
    const member_t *m = (const member_t *)member;
    void *p[POOLS];
    pointers(m->c, m->side, 0, p);
    return call(m->c, m->side, m->column, p);
}

/* ---- the checks ---- */

/* Compare `bytes` at x and y on the device, elements of `size` bytes, through the pinned buffers: the
 * differing elements counted, the first one described in why. -1 where a copy failed. */
static int compare_whole(const unsigned char *x, const unsigned char *y, size_t bytes, size_t size,
                         int64_t *differ, char *why, size_t why_size)
{
    *differ = 0;
    for (size_t done = 0; done < bytes; done += CHUNK) { /* CHUNK is a multiple of every size */
        const size_t count = bytes - done < CHUNK ? bytes - done : CHUNK;
        if (!ewb_cuda_ok(cudaMemcpy(dev.host[0], x + done, count, cudaMemcpyDeviceToHost),
                         "cudaMemcpy (check)") ||
            !ewb_cuda_ok(cudaMemcpy(dev.host[1], y + done, count, cudaMemcpyDeviceToHost),
                         "cudaMemcpy (check)"))
            return -1;
        if (memcmp(dev.host[0], dev.host[1], count) == 0)
            continue;
        for (size_t at = 0; at < count; at += size)
            if (memcmp(dev.host[0] + at, dev.host[1] + at, size) != 0) {
                if (*differ == 0) {
                    char got[20], want[20];
                    ewb_hex(got, sizeof got, dev.host[0] + at, size);
                    ewb_hex(want, sizeof want, dev.host[1] + at, size);
                    snprintf(why, why_size, "element %lld: kernel 0x%s, catalogue 0x%s",
                             (long long)((done + at) / size), got, want);
                }
                ++*differ;
            }
    }
    return 0;
}

enum { GUARD_AFTER = 256 };

/* Whether the bytes of a slice before out and up to GUARD_AFTER bytes after its end still hold poison. */
static int guards_intact(const unsigned char *slice, size_t stride, const unsigned char *out, size_t out_bytes,
                         unsigned char poison, int *intact)
{
    unsigned char bytes[GUARD_AFTER];
    const size_t before = (size_t)(out - slice), end = before + out_bytes;
    const size_t after = stride - end < GUARD_AFTER ? stride - end : GUARD_AFTER;
    *intact = 1;
    if ((before &&
         !ewb_cuda_ok(cudaMemcpy(bytes, slice, before, cudaMemcpyDeviceToHost), "cudaMemcpy (guard)")))
        return -1;
    for (size_t k = 0; k < before; ++k)
        *intact &= bytes[k] == poison;
    if (after &&
        !ewb_cuda_ok(cudaMemcpy(bytes, slice + end, after, cudaMemcpyDeviceToHost), "cudaMemcpy (guard)"))
        return -1;
    for (size_t k = 0; k < after; ++k)
        *intact &= bytes[k] == poison;
    return 0;
}

/* The CPU reference of the catalogue calls a case's kernel stands for. */
static int reference(const void *ctx, int64_t count, void *want, const void *const in[])
{
    const kcase_t *c = ctx;
    if (c->slot == K_CHAIN) {
        float scaled[EWB_MAX_SPAN], relu[EWB_MAX_SPAN];
        return ewb_reference(EW_OP_SCALE_ADD, EW_F32, EW_F32, ALPHA, count, scaled, in[0], in[1]) ||
               ewb_reference(EW_OP_RELU, EW_F32, EW_F32, 0, count, relu, scaled, NULL) ||
               ewb_reference(EW_OP_CAST, EW_F16, EW_F32, 0, count, want, relu, NULL);
    }
    if (c->slot == K_TERNARY) {
        uint16_t product[EWB_MAX_SPAN];
        return ewb_reference(EW_OP_MUL, EW_F16, EW_F16, 0, count, product, in[0], in[1]) ||
               ewb_reference(EW_OP_ADD, EW_F16, EW_F16, 0, count, want, product, in[2]);
    }
    if (c->slot == K_CAST_AMAX)
        return ewb_reference(EW_OP_CAST, EW_F32, EW_BF16, 0, count, want, in[0], NULL);
    return ewb_reference(EW_OP_ADD, specs[c->slot].out, specs[c->slot].out, 0, count, want, in[0], in[1]);
}

/* The CPU reference of target 7's second output, ew_binary mul's (its first is the add of reference). */
static int product_reference(const void *ctx, int64_t count, void *want, const void *const in[])
{
    const kcase_t *c = ctx;
    return ewb_reference(EW_OP_MUL, specs[c->slot].out, specs[c->slot].out, 0, count, want, in[0], in[1]);
}

/* The kernel and the catalogue calls of the same bits, once each in the column on the same inputs, into
 * outputs poisoned with different bytes: each whole output equal byte for byte (target 7: both arrays),
 * the poison around all of them intact, and the kernel's outputs equal to the CPU reference where sampled. */
static ewb_check_t check_case(const kcase_t *c, int column, char *why, size_t why_size)
{
    void *lib[POOLS], *same[POOLS];
    pointers(c, LIB, 1, lib);
    pointers(c, SAME, 1, same);
    const ew_dtype_t out = specs[c->slot].out;
    const size_t size = ew_dtype_size(out), stride = stride_of(c->n, out), out_bytes = (size_t)c->n * size;
    const int arrays[2] = {0, 3}, array_count = c->slot == K_TWO_OUT ? 2 : 1; /* the output pools */
    for (int a = 0; a < array_count; ++a)
        for (int k = 0; k < 2; ++k)
            if (!ewb_cuda_ok(cudaMemsetAsync(dev.pools.base[arrays[a]] + k * stride, POISON[k], stride,
                                             dev.timer.stream),
                             "cudaMemsetAsync"))
                return snprintf(why, why_size, "a checked call failed"), EWB_CHECK_FAILED;
    if (call(c, LIB, column, lib) != 0 || call(c, SAME, column, same) != 0 ||
        !ewb_cuda_ok(cudaStreamSynchronize(dev.timer.stream), "cudaStreamSynchronize")) {
        snprintf(why, why_size, "a checked call failed");
        return EWB_CHECK_FAILED;
    }
    for (int a = 0; a < array_count; ++a) {
        const int q = arrays[a];
        unsigned char *slice[2] = {dev.pools.base[q], dev.pools.base[q] + stride};
        unsigned char *outs[2] = {lib[q], same[q]};
        char name[8] = "";
        if (array_count > 1)
            snprintf(name, sizeof name, "out%d: ", a);
        int64_t differ = 0;
        char first[96] = "";
        if (compare_whole(outs[0], outs[1], out_bytes, size, &differ, first, sizeof first) != 0)
            return snprintf(why, why_size, "copy back failed"), EWB_CHECK_FAILED;
        if (differ) {
            snprintf(why, why_size, "%s%lld of %lld elements differ from the catalogue's; %s", name,
                     (long long)differ, (long long)c->n, first);
            return EWB_CHECK_MISMATCH;
        }
        for (int k = 0; k < 2; ++k) {
            int intact;
            if (guards_intact(slice[k], stride, outs[k], out_bytes, POISON[k], &intact) != 0)
                return snprintf(why, why_size, "copy back failed"), EWB_CHECK_FAILED;
            if (!intact) {
                snprintf(why, why_size, "%sthe %s wrote outside its output", name,
                         k ? "catalogue" : "kernel");
                return EWB_CHECK_MISMATCH;
            }
        }
    }
    if (c->slot == K_CAST_AMAX) { /* the kernel's abs max against ew_amax's, bit for bit */
        uint32_t amax[2];
        if (!ewb_cuda_ok(cudaMemcpy(amax, dev.scalar, sizeof amax, cudaMemcpyDeviceToHost), "cudaMemcpy"))
            return snprintf(why, why_size, "copy back failed"), EWB_CHECK_FAILED;
        if (amax[0] != amax[1]) {
            snprintf(why, why_size, "abs max 0x%08X, ew_amax's 0x%08X", amax[0], amax[1]);
            return EWB_CHECK_MISMATCH;
        }
    }
    const void *inputs[3] = {lib[1], lib[2], lib[3]};
    const ewb_check_t verdict = ewb_check_spans(lib[0], out, inputs, specs[c->slot].inputs, specs[c->slot].in,
                                                c->n, EWB_MAX_SPAN, reference, c, why, why_size);
    if (verdict != EWB_CHECK_OK || c->slot != K_TWO_OUT)
        return verdict;
    const size_t named = (size_t)snprintf(why, why_size, "out1: "); /* which output, where it fails */
    const ewb_check_t second =
        ewb_check_spans(lib[3], out, inputs, specs[c->slot].inputs, specs[c->slot].in, c->n, EWB_MAX_SPAN,
                        product_reference, c, why + named, why_size - named);
    if (second == EWB_CHECK_OK)
        snprintf(why, why_size, "ok");
    return second;
}

/* ---- output ---- */

static FILE *csv;

static void csv_row(int target, const char *name, const char *dtype, int64_t n, const char *alignment,
                    const char *timing, const char *metric, double library, const char *yard_impl, double yard,
                    double ratio, const char *check)
{
    if (!csv)
        return;
    fprintf(csv, "%d,%s,%s,", target, name, dtype);
    if (n > 0)
        fprintf(csv, "%lld", (long long)n);
    fprintf(csv, ",%s,%s,%s", alignment, timing, metric);
    ewb_csv_number(csv, "%.4f", library);
    fprintf(csv, ",%s", yard_impl);
    ewb_csv_number(csv, "%.4f", yard);
    ewb_csv_number(csv, "%.4f", ratio);
    fprintf(csv, ",%s\n", check);
    fflush(csv);
}

static const char *yard_name(const kcase_t *c)
{
    return c->slot == K_CHAIN       ? "ew_three_calls"
           : c->slot == K_TERNARY   ? "ew_binary_add_f16"
           : c->slot == K_CAST_AMAX ? "ew_cast_f32_bf16"
                                    : "ew_binary_add";
}

static void print_header(int target)
{
    static const char *const titles[] = {
        "",
        "`return ew::add(in0, in1);` vs ew_binary(EW_OP_ADD); GB/s = 3 n size / time; goal >= 0.98x",
        "`" CHAIN_SOURCE "` f32 -> f16, p0 = 1.5, vs ew_scale_add -> ew_unary(RELU) -> ew_cast through two "
        "temporaries; us per chain, ratio = three calls / kernel; goal >= 2.5x",
        "`return ew::add(ew::mul(in0, in1), in2);` f16 (8 bytes an element) vs the flat add f16 (6); GB/s; "
        "goal >= 0.97x",
        "",
        "",
        "`out0 = in0; out1 = in0;` bf16 -> f32 with an abs max output vs ew_cast bf16 -> f32; GB/s on 6 "
        "bytes "
        "an element; goal >= 0.95x",
        "`out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);` f32 (16 bytes an element) vs the flat add f32 "
        "(12), GB/s, goal >= 0.97x; and vs ew_binary add then mul (24), us, ratio = two calls / kernel, goal "
        ">= 1.4x (the bytes' 1.5x)",
    };
    printf("# target %d: %s\n", target, titles[target]);
    printf("%-30s %10s %10s %10s %10s %8s %8s  %s\n", "case", target == 2 ? "us" : "GB/s", "yardstick",
           target == 2 ? "iso us" : "iso GB/s", "iso yard", "ratio", "iso rat", "check");
}

/* ---- targets 1-3, 6 and 7 ---- */

static int run_case(const kcase_t *c, const options_t *o, int *failures, int *checked, int *behind, int *batches)
{
    ew_dtype_t lib_dtypes[POOLS];
    operands(c, LIB, lib_dtypes);
    /* Inputs are random, never zero; the pools a case writes hold nothing usable afterwards. */
    for (int k = 1; k <= specs[c->slot].inputs; ++k)
        if (fill(k, lib_dtypes[k]) != 0)
            return -1;
    dev.pools.filled[3] = c->slot == K_CHAIN || c->slot == K_TWO_OUT ? (ew_dtype_t)0 : dev.pools.filled[3];
    dev.pools.filled[4] = (ew_dtype_t)0;
    int columns[COLUMNS];
    const int column_count = ewb_timed_columns(o->timing, columns);
    /* Members per column: the kernel and its yardstick; target 7 its two catalogue calls too (SAME). */
    const int sides = c->slot == K_TWO_OUT ? 3 : 2;
    member_t group[3 * COLUMNS];
    ewb_member_t *members[3 * COLUMNS];
    for (int m = 0; m < sides * column_count; ++m) {
        const int column = columns[m / sides];
        group[m] = (member_t){.member = {.enqueue = enqueue, .isolated = column == COL_ISO},
                              .c = c,
                              .side = m % sides,
                              .column = column};
        members[m] = &group[m].member;
    }
    double us[3 * COLUMNS];
    if (ewb_time_group(&dev.timer, members, sides * column_count, o->batches, o->batch_ms, us) != 0) {
        fprintf(stderr, "%s failed\n", c->name);
        ++*failures;
        return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1; /* a sticky error ends the run */
    }
    double lib[COLUMNS] = {NAN, NAN}, yard[COLUMNS] = {NAN, NAN}, ratio[COLUMNS] = {NAN, NAN};
    double lib_us[COLUMNS] = {NAN, NAN}, same_us[COLUMNS] = {NAN, NAN}; /* target 7's time ratio */
    for (int k = 0; k < column_count; ++k) {
        const int col = columns[k];
        const double kernel_us = us[sides * k + LIB], yard_us = us[sides * k + YARD];
        lib_us[col] = kernel_us;
        same_us[col] = sides > SAME ? us[sides * k + SAME] : NAN;
        if (timed_in_us(c)) {
            lib[col] = kernel_us, yard[col] = yard_us, ratio[col] = yard_us / kernel_us;
        } else {
            lib[col] = bytes_of(c, LIB) / kernel_us / 1e3, yard[col] = bytes_of(c, YARD) / yard_us / 1e3;
            ratio[col] = lib[col] / yard[col];
        }
        if (col == COL_ISO) {
            for (int side = 0; side < sides; ++side)
                *behind += group[sides * k + side].member.host_behind;
            *batches += sides * o->batches;
        }
    }
    char why[192] = "skipped";
    ewb_check_t worst = EWB_CHECK_OK;
    if (!o->no_check) {
        for (int k = 0; k < column_count; ++k) {
            char w[160];
            const ewb_check_t v = check_case(c, columns[k], w, sizeof w);
            ewb_check_fold(&worst, why, sizeof why, k == 0, v, ewb_column_name(columns[k]), w);
        }
        ++*checked;
        *failures += ewb_check_fails(worst);
    }
    printf("%-30s", c->name);
    ewb_print_number(" %*.1f", 10, lib[COL_B2B]);
    ewb_print_number(" %*.1f", 10, yard[COL_B2B]);
    ewb_print_number(" %*.1f", 10, lib[COL_ISO]);
    ewb_print_number(" %*.1f", 10, yard[COL_ISO]);
    ewb_print_number(" %*.3f", 8, ratio[COL_B2B]);
    ewb_print_number(" %*.3f", 8, ratio[COL_ISO]);
    printf("  %s\n", why);
    if (timed_in_us(c))
        for (int col = 0; col < COLUMNS; ++col)
            if (!isnan(lib[col]))
                printf("#   %s: the kernel moves %.1f GB/s of its %.0f bytes an element; the three calls %.1f "
                       "GB/s of their 26\n",
                       ewb_column_name(col), bytes_of(c, LIB) / lib[col] / 1e3, bytes_of(c, LIB) / (double)c->n,
                       bytes_of(c, YARD) / yard[col] / 1e3);
    if (sides > SAME)
        for (int col = 0; col < COLUMNS; ++col)
            if (!isnan(lib_us[col]))
                printf("#   %s: the kernel %.1f us, ew_binary add then mul %.1f us (%.1f GB/s of their 24 "
                       "bytes an element): %.3fx; goal >= 1.4x\n",
                       ewb_column_name(col), lib_us[col], same_us[col],
                       bytes_of(c, SAME) / same_us[col] / 1e3, same_us[col] / lib_us[col]);
    fflush(stdout);
    const char *check = o->no_check ? "skipped" : ewb_check_name(worst);
    for (int col = 0; col < COLUMNS; ++col)
        if (o->timing >> col & 1)
            csv_row(c->target, c->name, specs[c->slot].dtype, c->n, c->misaligned ? "misaligned" : "aligned",
                    ewb_column_name(col), timed_in_us(c) ? "us" : "gbps", lib[col], yard_name(c), yard[col],
                    ratio[col], check);
    if (sides > SAME) { /* target 7: the kernel's time against the two catalogue calls' */
        char name[sizeof c->name + 8];
        snprintf(name, sizeof name, "%s-calls", c->name);
        for (int col = 0; col < COLUMNS; ++col)
            if (o->timing >> col & 1)
                csv_row(c->target, name, specs[c->slot].dtype, c->n, c->misaligned ? "misaligned" : "aligned",
                        ewb_column_name(col), "us", lib_us[col], "ew_binary_add_mul", same_us[col],
                        same_us[col] / lib_us[col], check);
    }
    return 0;
}

/* ---- target 4: host time of a launch ---- */

/* Target 4's launchers: slot s is column[s]'s kernel (even s) or ew_binary (odd s). */
typedef struct {
    const kcase_t *c;
    int column[2 * COLUMNS];
    void *p[POOLS];
} host_t;

static int host_call(void *ctx, int s)
{
    const host_t *h = ctx;
    return call(h->c, s & 1 ? YARD : LIB, h->column[s], h->p);
}

/* Host microseconds to queue one call, add f32 at n = 256 (ewb_time_host): the kernel and ew_binary on
 * each timed column's handle. */
static int run_host(const options_t *o, int *failures)
{
    const kcase_t c = {.target = 4, .name = "t4-host-add-f32", .slot = K_ADD_F32, .n = HOST_N};
    host_t h = {.c = &c};
    if (fill(1, EW_F32) != 0 || fill(2, EW_F32) != 0)
        return -1;
    pointers(&c, LIB, 1, h.p);
    int columns[COLUMNS], slots = 0;
    const int column_count = ewb_timed_columns(o->timing, columns);
    for (int k = 0; k < column_count; ++k)
        h.column[slots++] = columns[k], h.column[slots++] = columns[k];
    double t[2 * COLUMNS];
    if (ewb_time_host(host_call, &h, slots, EWB_HOST_CALLS, EWB_HOST_BATCHES, dev.timer.stream, t) != 0) {
        ++*failures;
        return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
    }
    printf("# target 4: host time per call (median of %d batches of %d calls, the stream drained between "
           "batches), `return ew::add(in0, in1);` f32 vs ew_binary add f32, n = %lld; goal <= +0.2 us\n",
           EWB_HOST_BATCHES, EWB_HOST_CALLS, (long long)HOST_N);
    for (int k = 0; k < column_count; ++k) {
        const double kernel = t[2 * k], binary = t[2 * k + 1];
        printf("%-13s kernel %7.3f us  ew_binary %7.3f us  difference %+7.3f us\n", ewb_column_name(columns[k]),
               kernel, binary, kernel - binary);
        csv_row(4, c.name, "f32", c.n, "aligned", ewb_column_name(columns[k]), "host_us", kernel, "ew_binary_add",
                binary, binary / kernel, "");
    }
    fflush(stdout);
    return 0;
}

/* ---- target 4: the time of ew_kernel_create ---- */

/* The chain behind a statement naming tag and i: code, not a comment, since NVRTC 12.9 and later keep
 * their own cache of compiled programs (in the driver's compute cache), which sources differing in
 * comments alone hit. */
static void unique_source(char *text, size_t size, const char *tag, int i)
{
    snprintf(text, size, "(void)\"ew-bench-user-kernels %s %d\"; " CHAIN_SOURCE, tag, i);
}

/* Each kernel launched once on fresh random inputs against the three catalogue calls, bit for bit. */
static ewb_check_t check_created(ew_kernel_t *kernels, int count, char *why, size_t why_size)
{
    enum { N = 4099 }; /* odd: a tail after every pack width */
    unsigned char *base = NULL;
    const size_t f32 = ewb_round_up(N * 4, 256), f16 = ewb_round_up(N * 2, 256);
    ewb_check_t verdict = EWB_CHECK_FAILED;
    snprintf(why, why_size, "a checked call failed");
    if (!ewb_cuda_ok(cudaMalloc((void **)&base, 4 * f32 + 2 * f16), "cudaMalloc"))
        return EWB_CHECK_FAILED;
    unsigned char *a = base, *b = a + f32, *t1 = b + f32, *t2 = t1 + f32, *want = t2 + f32, *got = want + f16;
    const void *inputs[2] = {a, b};
    const ew_handle_t h = dev.handle[COL_B2B];
    uint16_t w[N], g[N];
    if (!ewb_cuda_ok(ewb_fill_random(a, EW_F32, N, FILL_SEED + 1, dev.timer.stream), "fill kernel") ||
        !ewb_cuda_ok(ewb_fill_random(b, EW_F32, N, FILL_SEED + 2, dev.timer.stream), "fill kernel") ||
        !ewb_cuda_ok(cudaMemsetAsync(want, POISON[1], f16, dev.timer.stream), "cudaMemsetAsync") ||
        !ewb_ew_ok(ew_scale_add(h, EW_F32, ALPHA, N, t1, a, b, dev.timer.stream), "ew_scale_add") ||
        !ewb_ew_ok(ew_unary(h, EW_OP_RELU, EW_F32, N, t2, t1, dev.timer.stream), "ew_unary") ||
        !ewb_ew_ok(ew_cast(h, EW_F16, EW_F32, N, want, t2, dev.timer.stream), "ew_cast") ||
        !ewb_cuda_ok(cudaMemcpyAsync(w, want, sizeof w, cudaMemcpyDeviceToHost, dev.timer.stream),
                     "cudaMemcpyAsync"))
        goto done;
    for (int k = 0; k < count; ++k) {
        if (!ewb_cuda_ok(cudaMemsetAsync(got, POISON[0], f16, dev.timer.stream), "cudaMemsetAsync") ||
            !ewb_ew_ok(ew_kernel_launch(kernels[k], N, got, inputs, &ALPHA, dev.timer.stream),
                       "ew_kernel_launch") ||
            !ewb_cuda_ok(cudaMemcpyAsync(g, got, sizeof g, cudaMemcpyDeviceToHost, dev.timer.stream),
                         "cudaMemcpyAsync") ||
            !ewb_cuda_ok(cudaStreamSynchronize(dev.timer.stream), "cudaStreamSynchronize"))
            goto done;
        if (memcmp(g, w, sizeof g) != 0) {
            int j = 0;
            while (g[j] == w[j])
                ++j;
            snprintf(why, why_size, "kernel %d, element %d: 0x%04x, the three calls 0x%04x", k, j, g[j], w[j]);
            verdict = EWB_CHECK_MISMATCH;
            goto done;
        }
    }
    snprintf(why, why_size, "ok");
    verdict = EWB_CHECK_OK;
done:
    cudaFree(base);
    return verdict;
}

/* --create-only: the chain behind `count` unique comments, each created once and timed (compile: new to
 * both caches; disk: in the disk cache, new to this process's memory); compile then creates the first
 * source again and again (the memory cache), each time destroyed again, the first kernel still alive. */
static int run_create(const options_t *o)
{
    enum { MEMORY_REPEATS = 1001, MAX_SOURCES = 1000 };
    static ew_kernel_t kernels[MAX_SOURCES];
    static double t[MAX_SOURCES], repeat[MEMORY_REPEATS];
    const int disk = strcmp(o->create_only, "disk") == 0, count = o->sources;
    char tag[80], source[256];
    if (o->tag)
        snprintf(tag, sizeof tag, "%s", o->tag);
    else {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        snprintf(tag, sizeof tag, "%ld-%lld-%ld", (long)getpid(), (long long)now.tv_sec, now.tv_nsec);
    }
    const char *dir = getenv("EW_KERNEL_CACHE_DIR"), *cache = getenv("EW_KERNEL_CACHE");
    printf("# ew-kernel create: %s, tag %s, %d sources like `(void)\"ew-bench-user-kernels %s 0\"; %s`, "
           "EW_KERNEL_CACHE_DIR=%s, EW_KERNEL_CACHE=%s\n",
           disk ? "from the disk cache (a new process)" : "compiling new sources", tag, count, tag, CHAIN_SOURCE,
           dir ? dir : "(unset)", cache ? cache : "(unset)");
    if (!dir)
        printf("# ew-kernel create: EW_KERNEL_CACHE_DIR is unset: the default cache directory may already hold "
               "these sources\n");
    int status = 0, failures = 0;
    for (int i = 0; i < count && status == 0; ++i) {
        unique_source(source, sizeof source, tag, i);
        status = create_kernel(dev.handle[COL_B2B], K_CHAIN, source, &kernels[i], &t[i]);
    }
    if (status != 0) {
        for (int i = 0; i < count; ++i)
            ew_kernel_destroy(kernels[i]);
        return status == -EXIT_NO_NVRTC ? EXIT_NO_NVRTC : EXIT_FAILED;
    }
    const double first = t[0];
    const double mid = ewb_median(t, count); /* sorts t */
    const double most = t[count - 1];
    const char *what = disk ? "disk" : "compile";
    char name[48], why[128];
    const ewb_check_t verdict = check_created(kernels, count, why, sizeof why);
    failures += verdict != EWB_CHECK_OK;
    printf("create (%s): median %.1f us, max %.1f us, first in the process %.1f us, over %d sources; goal <= %s\n",
           what, mid, most, first, count, disk ? "5 ms" : "150 ms");
    printf("# ew-kernel create: each created kernel launched once against the three catalogue calls: %s\n", why);
    snprintf(name, sizeof name, "t4-create-%s", what);
    csv_row(4, name, "f16<-f32", count, "-", "host", "create_us", mid, "", NAN, NAN, ewb_check_name(verdict));
    snprintf(name, sizeof name, "t4-create-%s-max", what);
    csv_row(4, name, "f16<-f32", count, "-", "host", "create_us", most, "", NAN, NAN, "");
    snprintf(name, sizeof name, "t4-create-%s-first", what);
    csv_row(4, name, "f16<-f32", 1, "-", "host", "create_us", first, "", NAN, NAN, "");
    if (!disk) {
        unique_source(source, sizeof source, tag, 0);
        for (int r = 0; r < MEMORY_REPEATS && status == 0; ++r) {
            ew_kernel_t again = NULL;
            status = create_kernel(dev.handle[COL_B2B], K_CHAIN, source, &again, &repeat[r]);
            ew_kernel_destroy(again);
        }
        if (status != 0) {
            ++failures;
        } else {
            const double hit = ewb_median(repeat, MEMORY_REPEATS);
            printf("create (memory): median %.2f us, max %.2f us, over %d creates of a source this process "
                   "created; goal <= 20 us\n",
                   hit, repeat[MEMORY_REPEATS - 1], MEMORY_REPEATS);
            csv_row(4, "t4-create-memory", "f16<-f32", MEMORY_REPEATS, "-", "host", "create_us", hit, "", NAN, NAN,
                    "ok");
        }
    }
    for (int i = 0; i < count; ++i)
        ew_kernel_destroy(kernels[i]);
    return failures ? EXIT_FAILED : 0;
}

/* --create-only floor: NVRTC opened and an empty kernel compiled for the device, in this fresh process,
 * through NVRTC's own C API (declared here as nvrtc.h declares it, so no header is needed): what any
 * run-time compiler built on it pays before its first kernel. */
typedef int (*nvrtc_create_t)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*nvrtc_compile_t)(void *, int, const char *const *);
typedef int (*nvrtc_destroy_t)(void **);

static int run_floor(const options_t *o)
{
    char soname[32], toolkit[64], arch[48];
    snprintf(soname, sizeof soname, "libnvrtc.so.%d", CUDART_VERSION / 1000);
    snprintf(toolkit, sizeof toolkit, "/usr/local/cuda/lib64/%s", soname);
    const char *named = getenv("EW_NVRTC_LIBRARY");
    const char *tried[] = {named && *named ? named : soname, toolkit};
    int major = 0, minor = 0;
    if (!ewb_cuda_ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, o->device),
                     "cudaDeviceGetAttribute") ||
        !ewb_cuda_ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, o->device),
                     "cudaDeviceGetAttribute"))
        return EXIT_FAILED;
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
    const double t0 = ewb_now_us();
    void *library = NULL;
    const char *path = NULL;
    for (size_t i = 0; i < 2 && library == NULL; ++i)
        if ((library = dlopen(tried[i], RTLD_NOW | RTLD_LOCAL)) != NULL)
            path = tried[i];
    const double t1 = ewb_now_us();
    if (library == NULL) {
        fprintf(stderr, "floor: no NVRTC (%s, %s): %s\n", tried[0], tried[1], dlerror());
        return EXIT_NO_NVRTC;
    }
    nvrtc_create_t create;
    nvrtc_compile_t compile;
    nvrtc_destroy_t destroy;
    *(void **)&create = dlsym(library, "nvrtcCreateProgram");
    *(void **)&compile = dlsym(library, "nvrtcCompileProgram");
    *(void **)&destroy = dlsym(library, "nvrtcDestroyProgram");
    void *program = NULL;
    const char *options[] = {arch};
    const double t2 = ewb_now_us();
    const int failed = !create || !compile || !destroy ||
                       create(&program, "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = 1.0f; }",
                              "floor.cu", 0, NULL, NULL) != 0 ||
                       compile(program, 1, options) != 0;
    const double t3 = ewb_now_us();
    if (program)
        destroy(&program);
    if (failed) {
        fprintf(stderr, "floor: %s could not compile an empty kernel (%s)\n", path, arch + 19);
        return EXIT_FAILED;
    }
    printf("floor: NVRTC (%s) opened in %.1f ms, an empty kernel for %s compiled in %.1f ms: %.1f ms\n", path,
           (t1 - t0) / 1e3, arch + 19, (t3 - t2) / 1e3, (t1 - t0 + t3 - t2) / 1e3);
    csv_row(5, "t5-nvrtc-open", "-", 1, "-", "host", "create_us", t1 - t0, "", NAN, NAN, "ok");
    csv_row(5, "t5-nvrtc-empty", "-", 1, "-", "host", "create_us", t3 - t2, "", NAN, NAN, "ok");
    return 0;
}

/* ---- main ---- */

static int run(const options_t *o)
{
    int failures = 0, checked = 0, behind = 0, batches = 0, status = 0;
    printf("# ew-kernel: %d cases, pools %d x %.2f GiB, median of %d batches of about %g ms; GB/s = bytes the "
           "call moves (each operand element once) / time\n",
           case_count, POOLS, (double)dev.pools.bytes / (1 << 30), o->batches, o->batch_ms);
    for (int i = 0; i < case_count && status == 0; ++i) {
        if (i == 0 || cases[i].target != cases[i - 1].target)
            print_header(cases[i].target);
        status = run_case(&cases[i], o, &failures, &checked, &behind, &batches);
    }
    if (status == 0 && (o->targets >> 4 & 1))
        status = run_host(o, &failures);
    if (status != 0)
        ++failures;
    printf("# ew-kernel: %d cases checked (whole outputs against the catalogue's, spans against the CPU "
           "reference), %d failures\n",
           checked, failures);
    if (o->timing >> COL_ISO & 1)
        printf("# ew-kernel: isolated column: %d of %d timed batches had the host still queueing when the GPU "
               "reached them\n",
               behind, batches);
    return failures ? EXIT_FAILED : 0;
}

int main(int argc, char **argv)
{
    options_t o;
    if (parse_options(argc, argv, &o) != 0) {
        fprintf(stderr, "%s --help lists the options\n", argv[0]);
        return EXIT_USAGE;
    }
    build_cases(&o);
    const int found = ewb_use_device(o.device);
    if (found <= 0)
        return found == 0 ? 0 : found == -2 ? EXIT_USAGE : EXIT_FAILED;
    csv = ewb_csv_open(o.csv_path,
                       "target,case,dtype,n,alignment,timing,metric,library,yardstick_impl,yardstick,ratio,check\n");
    if (o.csv_path && !csv)
        return EXIT_FAILED;
    int status;
    if (ewb_create_handles(o.device, !o.create_only, "ew-kernel", dev.handle) != 0) {
        status = EXIT_FAILED;
    } else if (o.create_only && strcmp(o.create_only, "floor") == 0) {
        status = run_floor(&o);
    } else if (o.create_only) {
        status = ewb_cuda_ok(cudaStreamCreateWithFlags(&dev.timer.stream, cudaStreamNonBlocking),
                             "cudaStreamCreateWithFlags")
                     ? run_create(&o)
                     : EXIT_FAILED;
    } else {
        status = device_init(&o);
        status = status == -EXIT_NO_NVRTC ? EXIT_NO_NVRTC : status != 0 ? EXIT_FAILED : run(&o);
    }
    device_free();
    if (ewb_csv_close(csv) != 0)
        status = EXIT_FAILED;
    return status;
}
