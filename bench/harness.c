/* SPDX-License-Identifier: Apache-2.0 */
/* The measurement harness shared by ew-bench and the CUB peer (see harness.h; method: docs/design.md). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kernel.h"
#ifndef EWB_NO_REF
#include "ref.h"
#endif

enum { DTYPE_END = EW_F8E5M2 + 1, OP_END = EW_OP_SCALE_ADD + 1, MAX_LOG2 = 31, MAX_POINTERS = 3 };

static const size_t MiB = 1024 * 1024, GiB = 1024 * 1024 * 1024;
static const size_t SLICE_ALIGN = 4096; /* every slice starts 4 KiB-aligned; offsets are added to that */
/* Pools are at least this big (2 GiB: the method); a host-only test of the harness may shrink it. */
#ifndef EWB_MIN_POOL_BYTES
#define EWB_MIN_POOL_BYTES (2 * GiB)
#endif
static const uint64_t FILL_SEED = 0x5EEDBE4C4ull;
static const unsigned char POISON = 0xA5;

/* ---- names ---- */

static const struct {
    const char *name;
    size_t size;
} dtype_info[DTYPE_END] = {
    [EW_BOOL] = {"bool", 1}, [EW_I8] = {"i8", 1},   [EW_U8] = {"u8", 1},         [EW_I16] = {"i16", 2},
    [EW_I32] = {"i32", 4},   [EW_I64] = {"i64", 8}, [EW_F16] = {"f16", 2},       [EW_BF16] = {"bf16", 2},
    [EW_F32] = {"f32", 4},   [EW_F64] = {"f64", 8}, [EW_F8E4M3] = {"f8e4m3", 1}, [EW_F8E5M2] = {"f8e5m2", 1},
};
static const char *const op_names[OP_END] = {"invalid", "add", "mul", "relu", "cast", "scale_add"};
static const char *const offset_names[EWB_OFFSET_MODES] = {"aligned", "same", "mixed"};
/* The two columns every case is timed in (harness.h). */
typedef enum { BACK_TO_BACK = 0, ISOLATED = 1, TIMINGS = 2 } timing_t;
static const char *const timing_names[TIMINGS] = {"back-to-back", "isolated"};
/* Element offsets of out, first input, second input: "same" moves every pointer by one element,
 * "mixed" gives each its own (+1/+2/+0), so no common vector width fits all three. */
static const int offset_elements[EWB_OFFSET_MODES][MAX_POINTERS] = {{0, 0, 0}, {1, 1, 1}, {1, 2, 0}};

static int dtype_valid(ew_dtype_t d) { return (int)d > 0 && (int)d < DTYPE_END; }
const char *ewb_dtype_name(ew_dtype_t d) { return dtype_valid(d) ? dtype_info[d].name : "invalid"; }
size_t ewb_dtype_size(ew_dtype_t d) { return dtype_valid(d) ? dtype_info[d].size : 0; }
const char *ewb_op_name(ew_op_t op) { return (int)op > 0 && (int)op < OP_END ? op_names[op] : "invalid"; }

static int is_fp8(ew_dtype_t d) { return d == EW_F8E4M3 || d == EW_F8E5M2; }
static int is_integer(ew_dtype_t d)
{
    return d == EW_I8 || d == EW_U8 || d == EW_I16 || d == EW_I32 || d == EW_I64;
}

double ewb_alpha(ew_dtype_t dtype)
{
    if (dtype == EW_BOOL)
        return 1.0;
    return is_integer(dtype) ? 3.0 : 0.75;
}

static int arity(ew_op_t op) { return op == EW_OP_RELU || op == EW_OP_CAST ? 1 : 2; }

/* The catalogue of docs/semantics.md, for --all; each implementation still says what it supports. */
static int in_catalogue(ew_op_t op, ew_dtype_t out, ew_dtype_t in)
{
    if (op == EW_OP_CAST)
        return 1;
    if (out != in || is_fp8(out))
        return 0;
    return op != EW_OP_RELU || out != EW_BOOL;
}

/* Default: the target cases plus enough to cover every op and every dtype size (1, 2, 4, 8). */
static const ewb_entry_t default_entries[] = {
    {EW_OP_ADD, EW_F32, EW_F32},       {EW_OP_ADD, EW_F16, EW_F16},       {EW_OP_ADD, EW_BF16, EW_BF16},
    {EW_OP_ADD, EW_F64, EW_F64},       {EW_OP_ADD, EW_I8, EW_I8},         {EW_OP_ADD, EW_U8, EW_U8},
    {EW_OP_ADD, EW_BOOL, EW_BOOL},     {EW_OP_ADD, EW_I32, EW_I32},       {EW_OP_MUL, EW_F32, EW_F32},
    {EW_OP_MUL, EW_BF16, EW_BF16},     {EW_OP_MUL, EW_I64, EW_I64},       {EW_OP_RELU, EW_F32, EW_F32},
    {EW_OP_RELU, EW_F16, EW_F16},      {EW_OP_RELU, EW_BF16, EW_BF16},    {EW_OP_RELU, EW_I8, EW_I8},
    {EW_OP_SCALE_ADD, EW_F32, EW_F32}, {EW_OP_SCALE_ADD, EW_F16, EW_F16}, {EW_OP_SCALE_ADD, EW_BF16, EW_BF16},
    {EW_OP_SCALE_ADD, EW_F64, EW_F64}, {EW_OP_SCALE_ADD, EW_I16, EW_I16}, {EW_OP_CAST, EW_F16, EW_F32},
    {EW_OP_CAST, EW_F32, EW_F16},      {EW_OP_CAST, EW_BF16, EW_F32},     {EW_OP_CAST, EW_F32, EW_BF16},
    {EW_OP_CAST, EW_F32, EW_F64},      {EW_OP_CAST, EW_F32, EW_U8},       {EW_OP_CAST, EW_F64, EW_I32},
    {EW_OP_CAST, EW_F8E4M3, EW_F32},   {EW_OP_CAST, EW_F16, EW_F8E5M2},
};
static const int default_log2[] = {20, 22, 24, 26, 28};

/* ---- options ---- */

typedef struct {
    const char *csv_path;
    int all;
    unsigned op_mask, dtype_mask, offset_mask;
    int log2[MAX_LOG2 + 1];
    int log2_count;
    int batches;
    double batch_ms;
    int list_only;
    int host_overhead;
    int device;
    int no_check;
    unsigned timing_mask; /* bit per timing_t */
} options_t;

typedef struct {
    ewb_entry_t entry;
    int64_t n;
    ewb_offsets_t offsets;
} case_t;

static void usage(FILE *to, const char *program, const char *impl)
{
    fprintf(
        to,
        "usage: %s [options]\n"
        "Times %s on rotating slices of device pools (method: docs/design.md) against cudaMemcpy D2D,\n"
        "each case in two columns: back-to-back calls, and isolated calls (plain stream order, an event\n"
        "between calls, the stream held until the host has queued the batch).\n"
        "  --csv FILE        also write CSV: impl,op,out_dtype,in_dtype,n,offsets,us,gbps,vs_memcpy,\n"
        "                    us_isolated,gbps_isolated,vs_memcpy_isolated,check (us..vs_memcpy: back-to-back)\n"
        "  --timing LIST     back-to-back,isolated (default both): the columns to time\n"
        "  --all             every catalogue entry (all 144 cast pairs) instead of the default set\n"
        "  --ops LIST        only these ops (add,mul,relu,cast,scale_add)\n"
        "  --dtypes LIST     only entries whose dtypes are all in LIST (bool,i8,...,f8e5m2)\n"
        "  --offsets LIST    aligned,same,mixed (default all; same = +1 element on every pointer,\n"
        "                    mixed = out +1, a +2, b +0 elements)\n"
        "  --log2 LIST       n = 2^k for each k in LIST (default 20,22,24,26,28)\n"
        "  --min-log2 A --max-log2 B   every n = 2^k, A <= k <= B (defaults 10 and 28 when one is given)\n"
        "  --batches N       timed batches per case and column, median reported (default 15, at least 5)\n"
        "  --batch-ms T      aim for batches of about T ms of calls (default 2; at least 10 calls; isolated\n"
        "                    batches at most 200 calls, which the launch queue holds while the stream waits)\n"
        "  --host-overhead   host time per call at n = 1024, batches of 256 calls, against a raw launch\n"
        "  --no-check        skip the bit-exact spot check of each case against the CPU reference\n"
        "  --device D        CUDA device (default 0)\n"
        "  --list            print the cases (op out_dtype in_dtype n offsets) after one '# settings:' line\n"
        "                    (--batches, --batch-ms, --timing, for the PyTorch peer), run nothing, need no GPU\n",
        program, impl);
}

static ew_dtype_t dtype_from_name(const char *name, size_t length)
{
    for (int d = 1; d < DTYPE_END; ++d)
        if (strlen(dtype_info[d].name) == length && strncmp(dtype_info[d].name, name, length) == 0)
            return (ew_dtype_t)d;
    return (ew_dtype_t)0;
}

static int index_from_name(const char *const *names, int count, const char *name, size_t length)
{
    for (int i = 0; i < count; ++i)
        if (strlen(names[i]) == length && strncmp(names[i], name, length) == 0)
            return i;
    return -1;
}

/* Parse a comma-separated list into a bit mask; kind selects the name table (ops, dtypes, offsets,
 * timings). */
static int parse_mask(const char *list, int kind, unsigned *mask)
{
    *mask = 0;
    for (const char *p = list; *p;) {
        size_t length = strcspn(p, ",");
        int bit = kind == 0   ? index_from_name(op_names, OP_END, p, length)
                  : kind == 1 ? (int)dtype_from_name(p, length)
                  : kind == 2 ? index_from_name(offset_names, EWB_OFFSET_MODES, p, length)
                              : index_from_name(timing_names, TIMINGS, p, length);
        if (bit <= 0 && !(kind >= 2 && bit == 0)) {
            fprintf(stderr, "unknown name '%.*s' in '%s'\n", (int)length, p, list);
            return -1;
        }
        *mask |= 1u << bit;
        p += length + (p[length] == ',');
    }
    return *mask ? 0 : -1;
}

static int parse_int(const char *text, int low, int high, int *value)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < low || v > high) {
        fprintf(stderr, "'%s' is not an integer in [%d, %d]\n", text, low, high);
        return -1;
    }
    *value = (int)v;
    return 0;
}

/* Options that take a value, each followed by a space. */
#define VALUE_OPTIONS                                                                                        \
    "--csv --ops --dtypes --offsets --log2 --min-log2 --max-log2 --batches --batch-ms --device --timing "

static int parse_options(int argc, char **argv, const char *impl, options_t *o)
{
    *o = (options_t){.op_mask = ~0u,
                     .dtype_mask = ~0u,
                     .offset_mask = ~0u,
                     .batches = 15,
                     .batch_ms = 2.0,
                     .timing_mask = (1u << TIMINGS) - 1};
    int min_log2 = -1, max_log2 = -1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        int takes_value = 1, bad = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout, argv[0], impl);
            exit(0);
        } else if (strcmp(a, "--all") == 0) {
            o->all = 1, takes_value = 0;
        } else if (strcmp(a, "--list") == 0) {
            o->list_only = 1, takes_value = 0;
        } else if (strcmp(a, "--host-overhead") == 0) {
            o->host_overhead = 1, takes_value = 0;
        } else if (strcmp(a, "--no-check") == 0) {
            o->no_check = 1, takes_value = 0;
        } else if (strncmp(a, "--", 2) != 0 || strstr(VALUE_OPTIONS, a) == NULL || strchr(a, ' ')) {
            fprintf(stderr, "unknown option '%s'\n", a);
            bad = 1, takes_value = 0;
        } else if (value == NULL) {
            fprintf(stderr, "option '%s' needs a value\n", a);
            bad = 1;
        } else if (strcmp(a, "--csv") == 0) {
            o->csv_path = value;
        } else if (strcmp(a, "--ops") == 0) {
            bad = parse_mask(value, 0, &o->op_mask);
        } else if (strcmp(a, "--dtypes") == 0) {
            bad = parse_mask(value, 1, &o->dtype_mask);
        } else if (strcmp(a, "--offsets") == 0) {
            bad = parse_mask(value, 2, &o->offset_mask);
        } else if (strcmp(a, "--timing") == 0) {
            bad = parse_mask(value, 3, &o->timing_mask);
        } else if (strcmp(a, "--log2") == 0) {
            char copy[256];
            snprintf(copy, sizeof copy, "%s", value);
            o->log2_count = 0;
            for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && !bad;
                 t = strtok_r(NULL, ",", &save))
                bad = o->log2_count > MAX_LOG2 || parse_int(t, 1, 30, &o->log2[o->log2_count++]);
        } else if (strcmp(a, "--min-log2") == 0) {
            bad = parse_int(value, 1, 30, &min_log2);
        } else if (strcmp(a, "--max-log2") == 0) {
            bad = parse_int(value, 1, 30, &max_log2);
        } else if (strcmp(a, "--batches") == 0) {
            bad = parse_int(value, 5, 1000, &o->batches);
        } else if (strcmp(a, "--batch-ms") == 0) {
            char *end;
            o->batch_ms = strtod(value, &end);
            bad = *end || !(o->batch_ms > 0 && o->batch_ms <= 1000);
        } else if (strcmp(a, "--device") == 0) {
            bad = parse_int(value, 0, 1023, &o->device);
        } else {
            fprintf(stderr, "unknown option '%s'\n", a);
            bad = 1;
        }
        if (bad) {
            fprintf(stderr, "%s --help lists the options\n", argv[0]);
            return -1;
        }
        i += takes_value;
    }
    if (min_log2 >= 0 || max_log2 >= 0) {
        if (min_log2 < 0)
            min_log2 = 10;
        if (max_log2 < 0)
            max_log2 = 28;
        if (min_log2 > max_log2) {
            fprintf(stderr, "--min-log2 %d is above --max-log2 %d\n", min_log2, max_log2);
            return -1;
        }
        o->log2_count = 0;
        for (int k = min_log2; k <= max_log2; ++k)
            o->log2[o->log2_count++] = k;
    }
    if (o->log2_count == 0) {
        o->log2_count = (int)(sizeof default_log2 / sizeof default_log2[0]);
        memcpy(o->log2, default_log2, sizeof default_log2);
    }
    return 0;
}

static int entry_selected(const options_t *o, const ewb_entry_t *e)
{
    return (o->op_mask >> e->op & 1) && (o->dtype_mask >> e->out & 1) && (o->dtype_mask >> e->in & 1);
}

enum { MAX_ENTRIES = OP_END * DTYPE_END * DTYPE_END };

/* The entries the options select (--all or the default set, --ops, --dtypes), supported or not. */
static int selected_entries(const options_t *o, ewb_entry_t entries[MAX_ENTRIES])
{
    int count = 0;
    if (o->all) {
        for (int op = 1; op < OP_END; ++op)
            for (int in = 1; in < DTYPE_END; ++in)
                for (int out = 1; out < DTYPE_END; ++out) {
                    ewb_entry_t e = {(ew_op_t)op, (ew_dtype_t)out, (ew_dtype_t)in};
                    if (in_catalogue(e.op, e.out, e.in) && entry_selected(o, &e))
                        entries[count++] = e;
                }
    } else {
        for (size_t i = 0; i < sizeof default_entries / sizeof default_entries[0]; ++i)
            if (entry_selected(o, &default_entries[i]))
                entries[count++] = default_entries[i];
    }
    return count;
}

/* The cases of the selected entries impl supports (supported != 0) or those it does not (== 0), in
 * run order: entry, then n, then offsets (pools are refilled per entry). */
static case_t *build_cases(const options_t *o, const ewb_impl_t *impl, int supported, int *count)
{
    ewb_entry_t entries[MAX_ENTRIES];
    int entry_count = selected_entries(o, entries);
    case_t *cases = malloc(sizeof *cases * ((size_t)entry_count * (size_t)o->log2_count * EWB_OFFSET_MODES + 1));
    *count = 0;
    if (cases == NULL)
        return NULL;
    for (int e = 0; e < entry_count; ++e) {
        if (!impl->supports(impl->ctx, &entries[e]) != !supported)
            continue;
        for (int k = 0; k < o->log2_count; ++k)
            for (int m = 0; m < EWB_OFFSET_MODES; ++m)
                if (o->offset_mask >> m & 1)
                    cases[(*count)++] = (case_t){entries[e], (int64_t)1 << o->log2[k], (ewb_offsets_t)m};
    }
    return cases;
}

/* ---- device state: pools, stream, events ---- */

int ewb_cuda_ok(cudaError_t error, const char *what)
{
    if (error == cudaSuccess)
        return 1;
    fprintf(stderr, "%s failed: %s (%s)\n", what, cudaGetErrorName(error), cudaGetErrorString(error));
    return 0;
}

/* Pools of out, a, b. Each call takes the next slice of every pool (a cursor per pool walks the whole
 * pool before it wraps), so no input a call reads was touched in the last pool-length of traffic:
 * L2 never serves a repeated input. */
typedef struct {
    unsigned char *base[MAX_POINTERS];
    size_t bytes;
    size_t cursor[MAX_POINTERS];
    ew_dtype_t filled[MAX_POINTERS]; /* dtype the input pools hold now (0: none) */
    ewb_timer_t timer;
} device_state_t;

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

/* Bytes one slice of a pool takes for n elements of elem_size, room for the offsets included. */
static size_t slice_stride(int64_t n, size_t elem_size)
{
    return round_up((size_t)n * elem_size + 2 * elem_size, SLICE_ALIGN);
}

static size_t case_bytes(const case_t *c)
{
    return (size_t)c->n *
           (ewb_dtype_size(c->entry.out) + (size_t)arity(c->entry.op) * ewb_dtype_size(c->entry.in));
}

/* The cudaMemcpy that moves as many bytes (read + written) as the case: half of them, copied. */
static size_t memcpy_count(const case_t *c) { return case_bytes(c) / 2; }

/* Pools hold at least two of the largest slice, and at least EWB_MIN_POOL_BYTES. */
static size_t pool_bytes_for(const case_t *cases, int count)
{
    size_t largest = 0;
    for (int i = 0; i < count; ++i) {
        size_t s = slice_stride(cases[i].n, 8);
        size_t m = round_up(memcpy_count(&cases[i]), SLICE_ALIGN);
        largest = s > largest ? s : largest;
        largest = m > largest ? m : largest;
    }
    size_t bytes = 2 * largest;
    return bytes > (size_t)EWB_MIN_POOL_BYTES ? bytes : (size_t)EWB_MIN_POOL_BYTES;
}

static void device_state_free(device_state_t *d)
{
    for (int p = 0; p < MAX_POINTERS; ++p)
        if (d->base[p])
            cudaFree(d->base[p]);
    ewb_timer_free(&d->timer);
    memset(d, 0, sizeof *d);
}

static int device_state_init(device_state_t *d, size_t pool_bytes, int device)
{
    memset(d, 0, sizeof *d);
    d->bytes = pool_bytes;
    if (ewb_timer_init(&d->timer, device) != 0) {
        device_state_free(d);
        return -1;
    }
    for (int p = 0; p < MAX_POINTERS; ++p) {
        cudaError_t error = cudaMalloc((void **)&d->base[p], pool_bytes);
        if (error != cudaSuccess) {
            fprintf(stderr, "cudaMalloc of a %.2f GiB pool failed: %s; try a smaller --max-log2\n",
                    (double)pool_bytes / GiB, cudaGetErrorName(error));
            d->base[p] = NULL;
            device_state_free(d);
            return -1;
        }
    }
    return 0;
}

int ewb_fill_pool(unsigned char *pool, size_t pool_bytes, ew_dtype_t *filled, ew_dtype_t dtype, uint64_t seed,
                  cudaStream_t stream)
{
    if (*filled == dtype)
        return 0;
    int64_t count = (int64_t)(pool_bytes / ewb_dtype_size(dtype));
    if (!ewb_cuda_ok(ewb_fill_random(pool, (int)dtype, count, seed, stream), "fill kernel"))
        return -1;
    *filled = dtype;
    return 0;
}

static int fill_pool(device_state_t *d, int p, ew_dtype_t dtype)
{
    return ewb_fill_pool(d->base[p], d->bytes, &d->filled[p], dtype, FILL_SEED + (uint64_t)p,
                         d->timer.stream);
}

unsigned char *ewb_next_slice(unsigned char *pool, size_t pool_bytes, size_t *cursor, size_t stride)
{
    if (*cursor + stride > pool_bytes)
        *cursor = 0;
    unsigned char *slice = pool + *cursor;
    *cursor += stride;
    return slice;
}

/* The next slice of pool p, stride bytes long. */
static unsigned char *next_slice(device_state_t *d, int p, size_t stride)
{
    return ewb_next_slice(d->base[p], d->bytes, &d->cursor[p], stride);
}

/* ---- timing ---- */

double ewb_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int compare_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double ewb_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_double);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

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
    timer->flush_bytes = round_up(4 * (size_t)l2 > 64 * MiB ? 4 * (size_t)l2 : 64 * MiB, SLICE_ALIGN);
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
            if (enqueue(ctx) != 0 || (after != NULL && !ewb_cuda_ok(cudaEventRecord(after, stream), "cudaEventRecord")))
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

/* Something to time in one column: member.enqueue queues one call on the next slices. */
typedef struct {
    ewb_member_t member; /* first: enqueue casts it back */
    device_state_t *device;
    timing_t timing;
    /* a case */
    const ewb_impl_t *impl;
    const case_t *c;
    unsigned char *last[MAX_POINTERS]; /* pointers of the last call, for the check */
    /* a memcpy */
    size_t copy_bytes;
} timed_t;

static int enqueue_case(ewb_member_t *member)
{
    timed_t *t = (timed_t *)member;
    const case_t *c = t->c;
    size_t size[MAX_POINTERS] = {ewb_dtype_size(c->entry.out), ewb_dtype_size(c->entry.in),
                                 ewb_dtype_size(c->entry.in)};
    int pointers = 1 + arity(c->entry.op);
    for (int p = 0; p < pointers; ++p)
        t->last[p] = next_slice(t->device, p, slice_stride(c->n, size[p])) +
                     (size_t)offset_elements[c->offsets][p] * size[p];
    ewb_call_fn call =
        t->timing == ISOLATED && t->impl->call_isolated ? t->impl->call_isolated : t->impl->call;
    return call(t->impl->ctx, &c->entry, c->n, t->last[0], t->last[1], pointers > 2 ? t->last[2] : NULL,
                t->device->timer.stream);
}

static int enqueue_memcpy(ewb_member_t *member)
{
    timed_t *t = (timed_t *)member;
    size_t stride = round_up(t->copy_bytes, SLICE_ALIGN);
    unsigned char *dst = next_slice(t->device, 0, stride), *src = next_slice(t->device, 1, stride);
    return ewb_cuda_ok(
               cudaMemcpyAsync(dst, src, t->copy_bytes, cudaMemcpyDeviceToDevice, t->device->timer.stream),
               "cudaMemcpyAsync")
               ? 0
               : -1;
}

enum { MAX_MEMBERS = EWB_OFFSET_MODES * TIMINGS };

/* ewb_time_group on a group of timed_t: the offsets of one op, dtypes and n, in each timed column. */
static int time_calls(timed_t group[], int members, const options_t *o, double us_per_call[])
{
    ewb_member_t *pointers[MAX_MEMBERS];
    if (members > MAX_MEMBERS)
        return -1;
    for (int m = 0; m < members; ++m)
        pointers[m] = &group[m].member;
    return ewb_time_group(&group[0].device->timer, pointers, members, o->batches, o->batch_ms, us_per_call);
}

/* ---- the bit-exact spot check ---- */

#ifndef EWB_NO_REF
static void reference(const ewb_entry_t *e, int64_t count, void *out, const void *a, const void *b)
{
    switch (e->op) {
    case EW_OP_ADD:
    case EW_OP_MUL: ref_binary(e->op, e->out, count, out, a, b); break;
    case EW_OP_RELU: ref_unary(e->op, e->out, count, out, a); break;
    case EW_OP_CAST: ref_cast(e->out, e->in, count, out, a); break;
    case EW_OP_SCALE_ADD: ref_scale_add(e->out, ewb_alpha(e->out), count, out, a, b); break;
    default: break;
    }
}
#endif

/* The spot check's verdicts, as the CSV's check column writes them; a case takes the worst of its
 * columns' (the order below). */
typedef enum { CHECK_OK, CHECK_NO_REFERENCE, CHECK_MISMATCH, CHECK_FAILED } check_t;
static const char *const check_names[] = {"ok", "no-reference", "mismatch", "failed"};

/* One more call (in t's column) on fresh slices with a poisoned output, then elements at the start,
 * the middle and the end (where heads and tails are) compared bit for bit with the CPU reference. */
static check_t check_case(timed_t *t, char *why, size_t why_size)
{
#ifdef EWB_NO_REF
    (void)t;
    snprintf(why, why_size, "no reference");
    return CHECK_NO_REFERENCE;
#else
    enum { SPAN = 8, MAX_BYTES = SPAN * 8 };
    const case_t *c = t->c;
    const size_t out_size = ewb_dtype_size(c->entry.out), in_size = ewb_dtype_size(c->entry.in);
    const int pointers = 1 + arity(c->entry.op);
    device_state_t *d = t->device;
    /* Poison where the next call will write, then make that call. */
    size_t out_stride = slice_stride(c->n, out_size);
    if (d->cursor[0] + out_stride > d->bytes)
        d->cursor[0] = 0;
    if (!ewb_cuda_ok(cudaMemsetAsync(d->base[0] + d->cursor[0], POISON, out_stride, d->timer.stream),
                     "cudaMemsetAsync") ||
        t->member.enqueue(&t->member) != 0 ||
        !ewb_cuda_ok(cudaStreamSynchronize(d->timer.stream), "cudaStreamSynchronize")) {
        snprintf(why, why_size, "the checked call failed");
        return CHECK_FAILED;
    }
    int64_t span = c->n < SPAN ? c->n : SPAN;
    int64_t starts[3] = {0, c->n / 2 - span / 2, c->n - span};
    for (int s = 0; s < 3; ++s) {
        unsigned char got[MAX_BYTES], want[MAX_BYTES], in[2][MAX_BYTES];
        int64_t first = starts[s];
        if (!ewb_cuda_ok(
                cudaMemcpy(got, t->last[0] + first * out_size, span * out_size, cudaMemcpyDeviceToHost),
                "cudaMemcpy"))
            return snprintf(why, why_size, "copy back failed"), CHECK_FAILED;
        for (int p = 1; p < pointers; ++p)
            if (!ewb_cuda_ok(cudaMemcpy(in[p - 1], t->last[p] + first * in_size, span * in_size,
                                        cudaMemcpyDeviceToHost),
                             "cudaMemcpy"))
                return snprintf(why, why_size, "copy back failed"), CHECK_FAILED;
        reference(&c->entry, span, want, in[0], in[1]);
        for (int64_t i = 0; i < span; ++i) {
            if (memcmp(got + i * out_size, want + i * out_size, out_size) != 0) {
                int w = snprintf(why, why_size, "element %lld: got 0x", (long long)(first + i));
                for (size_t k = out_size; k-- > 0 && w < (int)why_size;)
                    w += snprintf(why + w, why_size - (size_t)w, "%02x", got[i * out_size + k]);
                if (w < (int)why_size)
                    w += snprintf(why + w, why_size - (size_t)w, ", reference 0x");
                for (size_t k = out_size; k-- > 0 && w < (int)why_size;)
                    w += snprintf(why + w, why_size - (size_t)w, "%02x", want[i * out_size + k]);
                return CHECK_MISMATCH;
            }
        }
    }
    snprintf(why, why_size, "ok");
    return CHECK_OK;
#endif
}

/* ---- output ---- */

static void print_device(int device)
{
    struct cudaDeviceProp prop;
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess)
        printf("# device %d: %s, %d SMs, %.0f MiB L2, %.1f GiB, cc %d.%d; driver API %d, runtime %d\n",
               device, prop.name, prop.multiProcessorCount, prop.l2CacheSize / (double)MiB,
               (double)prop.totalGlobalMem / GiB, prop.major, prop.minor, driver, runtime);
}

void ewb_log2_text(int64_t n, char *text, size_t size)
{
    int k = 0;
    while (((int64_t)1 << k) < n)
        ++k;
    if (((int64_t)1 << k) == n)
        snprintf(text, size, "2^%d", k);
    else
        snprintf(text, size, "%lld", (long long)n);
}

static const char CSV_HEADER[] =
    "impl,op,out_dtype,in_dtype,n,offsets,us,gbps,vs_memcpy,us_isolated,gbps_isolated,vs_memcpy_isolated,check\n";

/* A column's figures: NAN where it was not timed, which the CSV leaves empty. */
typedef struct {
    double us, gbps, vs_memcpy;
} figures_t;

static const figures_t NOT_TIMED = {NAN, NAN, NAN};

static void csv_field(FILE *csv, const char *format, double value)
{
    fputc(',', csv);
    if (!isnan(value))
        fprintf(csv, format, value);
}

static void write_csv_row(FILE *csv, const char *impl, const case_t *c, const char *offsets,
                          const figures_t column[TIMINGS], const char *check)
{
    if (csv == NULL)
        return;
    fprintf(csv, "%s,%s,%s,%s,%lld,%s", impl, ewb_op_name(c->entry.op), ewb_dtype_name(c->entry.out),
            ewb_dtype_name(c->entry.in), (long long)c->n, offsets ? offsets : offset_names[c->offsets]);
    for (int k = 0; k < TIMINGS; ++k) {
        csv_field(csv, "%.4f", column[k].us);
        csv_field(csv, "%.2f", column[k].gbps);
        csv_field(csv, "%.4f", column[k].vs_memcpy);
    }
    fprintf(csv, ",%s\n", check);
    fflush(csv);
}

static FILE *open_csv(const char *path)
{
    if (path == NULL)
        return NULL;
    FILE *csv = fopen(path, "w");
    if (csv == NULL)
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
    else
        fputs(CSV_HEADER, csv);
    return csv;
}

/* Rows without figures, check "unsupported", for the selected cases impl does not cover: a report can
 * then tell an op a peer lacks from a figure a run lost. */
static int write_unsupported(FILE *csv, const options_t *o, const ewb_impl_t *impl)
{
    int count = 0;
    case_t *cases = csv ? build_cases(o, impl, 0, &count) : NULL;
    const figures_t none[TIMINGS] = {NOT_TIMED, NOT_TIMED};
    for (int i = 0; i < count; ++i)
        write_csv_row(csv, impl->name, &cases[i], NULL, none, "unsupported");
    free(cases);
    return count;
}

/* ---- the sweep ---- */

typedef struct {
    size_t bytes;
    double us[TIMINGS];
} memcpy_result_t;

static void progress(int done, int total, const case_t *c, int tty, const case_t *previous)
{
    if (c == NULL) {
        if (tty)
            fprintf(stderr, "\r\033[K");
        return;
    }
    char n_text[32];
    ewb_log2_text(c->n, n_text, sizeof n_text);
    if (tty)
        fprintf(stderr, "\r[%d/%d] %s %s<-%s n=%s %s\033[K", done + 1, total, ewb_op_name(c->entry.op),
                ewb_dtype_name(c->entry.out), ewb_dtype_name(c->entry.in), n_text, offset_names[c->offsets]);
    else if (previous == NULL || memcmp(&previous->entry, &c->entry, sizeof c->entry) != 0)
        fprintf(stderr, "[%d/%d] %s %s<-%s\n", done + 1, total, ewb_op_name(c->entry.op),
                ewb_dtype_name(c->entry.out), ewb_dtype_name(c->entry.in));
}

/* Cases from cases[0] on with its entry and n: its offsets, which build_cases keeps together and the
 * sweep times as a group. */
static int group_size(const case_t *cases, int count)
{
    int members = 1;
    while (members < count && cases[members].n == cases[0].n &&
           memcmp(&cases[members].entry, &cases[0].entry, sizeof cases[0].entry) == 0)
        ++members;
    return members;
}

/* The timed columns in order, from the --timing mask. */
static int timed_columns(const options_t *o, timing_t columns[TIMINGS])
{
    int count = 0;
    for (int k = 0; k < TIMINGS; ++k)
        if (o->timing_mask >> k & 1)
            columns[count++] = (timing_t)k;
    return count;
}

static void print_figure(const char *format, int width, double value)
{
    if (isnan(value))
        printf(" %*s", width, "-");
    else
        printf(format, width, value);
}

static int run_sweep(const options_t *o, const ewb_impl_t *impl, const case_t *cases, int count)
{
    device_state_t d;
    size_t pool_bytes = pool_bytes_for(cases, count);
    FILE *csv = open_csv(o->csv_path);
    if (o->csv_path && csv == NULL)
        return 1;
    if (device_state_init(&d, pool_bytes, o->device) != 0) {
        if (csv)
            fclose(csv);
        return 1;
    }
    timing_t columns[TIMINGS];
    const int column_count = timed_columns(o, columns);
    memcpy_result_t *copies = calloc((size_t)count, sizeof *copies);
    int copy_count = 0, failures = 0, checked = 0, tty = isatty(2);
    int isolated_batches = 0, host_behind = 0;
    printf("# %s: %d cases, pools 3 x %.2f GiB, median of %d batches, ~%.1f ms per batch, GB/s = (bytes read + "
           "written) / time\n",
           impl->name, count, (double)pool_bytes / GiB, o->batches, o->batch_ms);
    printf("# %s: columns:%s%s\n", impl->name,
           o->timing_mask >> BACK_TO_BACK & 1 ? " back-to-back (calls queued one after another)" : "",
           o->timing_mask >> ISOLATED & 1
               ? (impl->call_isolated ? " isolated (plain stream order, an event between calls, the stream held "
                                        "until the batch is queued)"
                                      : " isolated (an event between calls, the stream held until the batch is "
                                        "queued)")
               : "");
    printf("%-5s %-9s %-7s %-7s %-5s %-8s %11s %9s %9s %11s %9s %9s %9s  %s\n", "impl", "op", "out", "in", "n",
           "offsets", "us/call", "GB/s", "vs_memcpy", "iso us/call", "iso GB/s", "iso vs_mc", "memcpy", "check");
    for (int i = 0, members = 1; i < count && copies; i += members) {
        const case_t *c = &cases[i];
        members = group_size(cases + i, count - i);
        progress(i, count, c, tty, i ? &cases[i - 1] : NULL);
        if (fill_pool(&d, 1, c->entry.in) != 0 ||
            (arity(c->entry.op) > 1 && fill_pool(&d, 2, c->entry.in) != 0)) {
            failures++;
            break;
        }
        /* cudaMemcpy D2D moving the same bytes, once per byte count, in each column. */
        size_t copy_bytes = memcpy_count(c);
        int j = 0;
        while (j < copy_count && copies[j].bytes != copy_bytes)
            ++j;
        if (j == copy_count) {
            timed_t m[TIMINGS];
            double us[TIMINGS];
            for (int k = 0; k < column_count; ++k)
                m[k] = (timed_t){.member = {.enqueue = enqueue_memcpy, .isolated = columns[k] == ISOLATED},
                                 .device = &d,
                                 .timing = columns[k],
                                 .copy_bytes = copy_bytes};
            if (time_calls(m, column_count, o, us) != 0) {
                failures++;
                break;
            }
            copies[j].bytes = copy_bytes;
            for (int k = 0; k < TIMINGS; ++k)
                copies[j].us[k] = NAN;
            for (int k = 0; k < column_count; ++k) {
                copies[j].us[columns[k]] = us[k];
                if (columns[k] == ISOLATED)
                    isolated_batches += o->batches, host_behind += m[k].member.host_behind;
            }
            copy_count++;
        }
        figures_t copy[TIMINGS];
        for (int k = 0; k < TIMINGS; ++k) {
            double gbps = 2.0 * (double)copy_bytes / copies[j].us[k] / 1e3;
            copy[k] = (figures_t){copies[j].us[k], gbps, isnan(gbps) ? NAN : 1.0};
        }

        /* Every offset of the case in every column: member m * column_count + k. */
        timed_t group[MAX_MEMBERS];
        double us[MAX_MEMBERS];
        for (int m = 0; m < members; ++m)
            for (int k = 0; k < column_count; ++k)
                group[m * column_count + k] =
                    (timed_t){.member = {.enqueue = enqueue_case, .isolated = columns[k] == ISOLATED},
                              .device = &d,
                              .timing = columns[k],
                              .impl = impl,
                              .c = &cases[i + m]};
        if (time_calls(group, members * column_count, o, us) != 0) {
            progress(i, count, NULL, tty, NULL);
            fprintf(stderr, "%s: %s %s<-%s n=%lld failed\n", impl->name, ewb_op_name(c->entry.op),
                    ewb_dtype_name(c->entry.out), ewb_dtype_name(c->entry.in), (long long)c->n);
            failures++;
            /* A sticky error poisons the context: nothing after it can be measured. */
            if (cudaDeviceSynchronize() != cudaSuccess)
                break;
            continue;
        }
        progress(i, count, NULL, tty, NULL);
        for (int m = 0; m < members; ++m) {
            const case_t *member = &cases[i + m];
            /* The spot check of the case's call in each column; the row shows the worst. */
            char why[160], shown[180] = "skipped";
            const char *check = "skipped";
            figures_t figures[TIMINGS] = {NOT_TIMED, NOT_TIMED};
            check_t worst = CHECK_OK;
            for (int k = 0; k < column_count; ++k) {
                timed_t *t = &group[m * column_count + k];
                double u = us[m * column_count + k], gbps = (double)case_bytes(member) / u / 1e3;
                figures[columns[k]] = (figures_t){u, gbps, gbps / copy[columns[k]].gbps};
                if (columns[k] == ISOLATED)
                    isolated_batches += o->batches, host_behind += t->member.host_behind;
                if (o->no_check)
                    continue;
                check_t verdict = check_case(t, why, sizeof why);
                if (k == 0 || verdict > worst) {
                    const char *column = column_count > 1 && verdict != CHECK_OK ? timing_names[columns[k]] : NULL;
                    snprintf(shown, sizeof shown, "%s%s%s", column ? column : "", column ? ": " : "", why);
                    worst = verdict > worst ? verdict : worst;
                }
            }
            if (!o->no_check) {
                checked++;
                failures += worst == CHECK_MISMATCH || worst == CHECK_FAILED;
                check = check_names[worst];
            }
            char n_text[32];
            ewb_log2_text(member->n, n_text, sizeof n_text);
            printf("%-5s %-9s %-7s %-7s %-5s %-8s", impl->name, ewb_op_name(member->entry.op),
                   ewb_dtype_name(member->entry.out), ewb_dtype_name(member->entry.in), n_text,
                   offset_names[member->offsets]);
            print_figure(" %*.3f", 11, figures[BACK_TO_BACK].us);
            print_figure(" %*.1f", 9, figures[BACK_TO_BACK].gbps);
            print_figure(" %*.3f", 9, figures[BACK_TO_BACK].vs_memcpy);
            print_figure(" %*.3f", 11, figures[ISOLATED].us);
            print_figure(" %*.1f", 9, figures[ISOLATED].gbps);
            print_figure(" %*.3f", 9, figures[ISOLATED].vs_memcpy);
            print_figure(" %*.1f", 9, copy[columns[0]].gbps);
            printf("  %s\n", shown);
            fflush(stdout);
            write_csv_row(csv, impl->name, member, NULL, figures, check);
            write_csv_row(csv, impl->memcpy_name, member, NULL, copy, "");
        }
    }
    progress(0, 0, NULL, tty, NULL);
    int unsupported = write_unsupported(csv, o, impl);
    printf("# %s: %d cases, %d checked bit-exact against the CPU reference, %d failures\n", impl->name, count,
           checked, failures);
    if (o->timing_mask >> ISOLATED & 1)
        printf("# %s: isolated column: %d of %d timed batches had the host still queueing when the GPU "
               "reached them (their figures include some of the host's time)\n",
               impl->name, host_behind, isolated_batches);
    if (unsupported)
        printf("# %s: %d selected cases not covered (CSV rows marked unsupported)\n", impl->name, unsupported);
    free(copies);
    if (csv)
        fclose(csv);
    device_state_free(&d);
    return failures ? 1 : 0;
}

/* ---- host overhead ---- */

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

/* Host microseconds per call at n = 1024: batches of 256 calls, launchers interleaved batch by batch
 * (in turn first) so drift hits all alike, median of the batches. Only the time to queue is counted; the
 * GPU is drained between batches. Each launcher is timed as the back-to-back column launches it and, where
 * it has one, as the isolated column does (the library's plain stream-order handle); a launcher with one
 * launch for both gives its figure in both CSV columns. No events between calls here: they are the
 * harness's cost, not the call's. */
static int run_host_overhead(const options_t *o, const ewb_impl_t *impl)
{
    enum { N = 1024, CALLS = 256, BATCHES = 51, MAX_SLOTS = EWB_MAX_HOST_LAUNCHERS * TIMINGS };
    struct {
        int launcher;
        timing_t timing;
        ewb_host_call_fn call;
    } slots[MAX_SLOTS];
    int launchers = 0, slot_count = 0;
    while (launchers < EWB_MAX_HOST_LAUNCHERS && impl->host[launchers].call)
        ++launchers;
    if (launchers == 0) {
        fprintf(stderr, "%s has no host-overhead launchers\n", impl->name);
        return 1;
    }
    for (int l = 0; l < launchers; ++l) {
        const ewb_host_launcher_t *h = &impl->host[l];
        if ((o->timing_mask >> BACK_TO_BACK & 1) || !h->call_isolated)
            slots[slot_count].launcher = l, slots[slot_count].timing = BACK_TO_BACK,
            slots[slot_count++].call = h->call;
        if ((o->timing_mask >> ISOLATED & 1) && h->call_isolated)
            slots[slot_count].launcher = l, slots[slot_count].timing = ISOLATED,
            slots[slot_count++].call = h->call_isolated;
    }
    float *buffer = NULL;
    cudaStream_t stream = NULL;
    if (!ewb_cuda_ok(cudaMalloc((void **)&buffer, 3 * N * sizeof(float)), "cudaMalloc") ||
        !ewb_cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                     "cudaStreamCreateWithFlags") ||
        !ewb_cuda_ok(ewb_fill_random(buffer + N, EW_F32, 2 * N, FILL_SEED, stream), "fill kernel")) {
        cudaFree(buffer);
        return 1;
    }
    float *out = buffer, *a = buffer + N, *b = buffer + 2 * N;
    int batches = o->batches > BATCHES ? o->batches : BATCHES, failed = 0;
    static double times[MAX_SLOTS][1000];
    for (int l = 0; l < slot_count && !failed; ++l)
        for (int i = 0; i < CALLS && !failed; ++i)
            failed = slots[l].call(impl->ctx, N, out, a, b, stream) != 0;
    failed = failed || !ewb_cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    for (int k = 0; k < batches && !failed; ++k) {
        for (int turn = 0; turn < slot_count && !failed; ++turn) {
            int l = (turn + k) % slot_count;
            double t0 = ewb_now_us();
            for (int i = 0; i < CALLS && !failed; ++i)
                failed = slots[l].call(impl->ctx, N, out, a, b, stream) != 0;
            times[l][k] = (ewb_now_us() - t0) / CALLS;
            failed = failed || !ewb_cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        }
    }
    if (!failed) {
        FILE *csv = open_csv(o->csv_path);
        case_t c = {{EW_OP_ADD, EW_F32, EW_F32}, N, EWB_ALIGNED};
        printf("# host time per call, add f32, n = %d, median of %d batches of %d calls\n", N, batches,
               CALLS);
        printf("%-12s %14s %14s\n", "launcher", "host us b2b", "host us iso");
        figures_t first[TIMINGS] = {NOT_TIMED, NOT_TIMED};
        for (int l = 0; l < launchers; ++l) {
            figures_t column[TIMINGS] = {NOT_TIMED, NOT_TIMED};
            for (int s = 0; s < slot_count; ++s)
                if (slots[s].launcher == l)
                    column[slots[s].timing] = (figures_t){ewb_median(times[s], batches), 0, 0};
            if (!impl->host[l].call_isolated) { /* one launch for both columns */
                if (o->timing_mask >> ISOLATED & 1)
                    column[ISOLATED] = column[BACK_TO_BACK];
                if (!(o->timing_mask >> BACK_TO_BACK & 1))
                    column[BACK_TO_BACK] = NOT_TIMED;
            }
            if (l == 0)
                memcpy(first, column, sizeof first);
            printf("%-12s", impl->host[l].name);
            print_figure(" %*.3f", 14, column[BACK_TO_BACK].us);
            print_figure(" %*.3f", 14, column[ISOLATED].us);
            if (l > 0)
                for (int k = 0; k < TIMINGS; ++k)
                    if (!isnan(first[k].us) && !isnan(column[k].us))
                        printf("   (%s: %s - %s = %+.3f us)", timing_names[k], impl->host[0].name,
                               impl->host[l].name, first[k].us - column[k].us);
            printf("\n");
            write_csv_row(csv, impl->host[l].name, &c, "host", column, "");
        }
        if (csv)
            fclose(csv);
        else if (o->csv_path)
            failed = 1;
    }
    cudaStreamDestroy(stream);
    cudaFree(buffer);
    return failed ? 1 : 0;
}

/* ---- main ---- */

int ewb_parse_timing_option(const char *a, const char *v, int *batches, double *batch_ms, int *device,
                            unsigned *timing, int *no_check)
{
    static const char *const valued[] = {"--batches", "--batch-ms", "--device", "--timing"};
    char *end = NULL;
    if (strcmp(a, "--no-check") == 0) {
        *no_check = 1;
        return 1;
    }
    int known = 0;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; ++k)
        known |= strcmp(a, valued[k]) == 0;
    if (!known)
        return 0;
    if (v == NULL) {
        fprintf(stderr, "%s: unknown option or missing value\n", a);
        return -1;
    }
    if (strcmp(a, "--batches") == 0) {
        long b = strtol(v, &end, 10);
        if (*end || b < 5 || b > 1000)
            return fprintf(stderr, "--batches takes 5-1000\n"), -1;
        *batches = (int)b;
    } else if (strcmp(a, "--batch-ms") == 0) {
        *batch_ms = strtod(v, &end);
        if (*end || !(*batch_ms > 0 && *batch_ms <= 1000))
            return fprintf(stderr, "--batch-ms takes (0, 1000]\n"), -1;
    } else if (strcmp(a, "--device") == 0) {
        long d = strtol(v, &end, 10);
        if (*end || d < 0 || d > 1023)
            return fprintf(stderr, "--device takes 0-1023\n"), -1;
        *device = (int)d;
    } else if (strcmp(a, "--timing") == 0) {
        *timing = 0;
        for (const char *p = v; *p;) {
            size_t length = strcspn(p, ",");
            int found = 0;
            for (int k = 0; k < TIMINGS; ++k)
                if (strlen(timing_names[k]) == length && strncmp(timing_names[k], p, length) == 0)
                    *timing |= 1u << k, found = 1;
            if (!found)
                return fprintf(stderr, "--timing takes back-to-back,isolated\n"), -1;
            p += length + (p[length] == ',');
        }
    }
    return 2;
}

int ewb_use_device(int device)
{
    int devices = 0;
    cudaError_t error = cudaGetDeviceCount(&devices);
    if (error != cudaSuccess || devices == 0) {
        printf("no CUDA GPU found (%s): nothing to run\n",
               error == cudaSuccess ? "the driver reports 0 devices" : cudaGetErrorName(error));
        return 0;
    }
    if (device >= devices) {
        fprintf(stderr, "--device %d: only %d CUDA devices\n", device, devices);
        return -2;
    }
    return ewb_cuda_ok(cudaSetDevice(device), "cudaSetDevice") ? 1 : -1;
}

/* Why there is no GPU, in words: cudart's text for a missing driver talks of versions. */
static const char *no_gpu_reason(cudaError_t error)
{
    if (error == cudaSuccess)
        return "the driver reports 0 devices";
    if (error == cudaErrorInsufficientDriver)
        return "cudaErrorInsufficientDriver: no NVIDIA driver, or one older than the CUDA runtime";
    return cudaGetErrorName(error);
}

int ewb_main(int argc, char **argv, const ewb_impl_t *impl)
{
    options_t o;
    if (parse_options(argc, argv, impl->name, &o) != 0)
        return 2;
    int count = 0;
    case_t *cases = o.host_overhead ? NULL : build_cases(&o, impl, 1, &count);
    if (!o.host_overhead && cases == NULL) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    if (o.list_only) {
        /* The settings a peer that reads this list (peers/torch_peer.py) times the cases with. */
        printf("# settings: --batches %d --batch-ms %g --timing ", o.batches, o.batch_ms);
        for (int k = 0, listed = 0; k < TIMINGS; ++k)
            if (o.timing_mask >> k & 1)
                printf("%s%s", listed++ ? "," : "", timing_names[k]);
        printf("\n");
        for (int i = 0; i < count; ++i)
            printf("%s %s %s %lld %s\n", ewb_op_name(cases[i].entry.op), ewb_dtype_name(cases[i].entry.out),
                   ewb_dtype_name(cases[i].entry.in), (long long)cases[i].n, offset_names[cases[i].offsets]);
        free(cases);
        return 0;
    }

    if (!o.host_overhead && count == 0) {
        printf("# %s: no case matches the filters: nothing to run\n", impl->name);
        FILE *csv = open_csv(o.csv_path);
        int unsupported = write_unsupported(csv, &o, impl);
        if (unsupported)
            printf("# %s: %d selected cases not covered (CSV rows marked unsupported)\n", impl->name, unsupported);
        if (csv)
            fclose(csv);
        free(cases);
        return o.csv_path && csv == NULL ? 1 : 0;
    }

    int devices = 0;
    cudaError_t error = cudaGetDeviceCount(&devices);
    if (error != cudaSuccess || devices == 0) {
        printf("no CUDA GPU found (%s): nothing to run\n", no_gpu_reason(error));
        free(cases);
        return 0;
    }
    if (o.device >= devices) {
        fprintf(stderr, "--device %d: only %d CUDA devices\n", o.device, devices);
        free(cases);
        return 2;
    }
    if (!ewb_cuda_ok(cudaSetDevice(o.device), "cudaSetDevice") ||
        (impl->setup && impl->setup(impl->ctx, o.device) != 0)) {
        free(cases);
        return 1;
    }
    print_device(o.device);
    int status = o.host_overhead ? run_host_overhead(&o, impl) : run_sweep(&o, impl, cases, count);
    free(cases);
    return status;
}
