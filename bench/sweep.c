/* SPDX-License-Identifier: Apache-2.0 */
/* The catalogue sweep shared by ew-bench-catalogue and the CUB peer (sweep.h; method: docs/design.md). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "csv.h"
#include "pool.h"
#include "raw_kernel.h"
#include "sweep.h"

enum {
    MAX_DTYPES = 32 /* bits of a dtype mask */,
    OP_END = EW_OP_SCALE_ADD + 1,
    MAX_LOG2 = 31,
    MAX_POINTERS = 3
};

static const uint64_t FILL_SEED = 0x5EEDBE4C4ull;
static const char *const offset_names[EWB_OFFSET_MODES] = {"aligned", "same", "mixed"};
/* Element offsets of out, first input, second input: "same" moves every pointer by one element,
 * "mixed" gives each its own (+1/+2/+0), so no common vector width fits all three. */
static const int offset_elements[EWB_OFFSET_MODES][MAX_POINTERS] = {{0, 0, 0}, {1, 1, 1}, {1, 2, 0}};

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

/* One past the library's last dtype. */
static int dtype_end(void)
{
    int d = 1;
    while (d < MAX_DTYPES && ew_dtype_size((ew_dtype_t)d) != 0)
        ++d;
    return d;
}

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
    unsigned timing_mask; /* bit per ewb_column_t */
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
        "                    us_isolated,gbps_isolated,vs_memcpy_isolated,check (us..vs_memcpy: "
        "back-to-back)\n"
        "  --timing LIST     back-to-back,isolated (default both): the columns to time\n"
        "  --all             every catalogue entry (all 169 cast pairs) instead of the default set\n"
        "  --ops LIST        only these ops (add,mul,relu,cast,scale_add)\n"
        "  --dtypes LIST     only entries whose dtypes are all in LIST (bool,i8,...,f8e5m2)\n"
        "  --offsets LIST    aligned,same,mixed (default all; same = +1 element on every pointer,\n"
        "                    mixed = out +1, a +2, b +0 elements)\n"
        "  --log2 LIST       n = 2^k for each k in LIST (default 20,22,24,26,28)\n"
        "  --min-log2 A --max-log2 B   every n = 2^k, A <= k <= B (defaults 10 and 28 when one is given)\n"
        "  --batches N       timed batches per case and column, median reported (default 15, at least 5)\n"
        "  --batch-ms T      aim for batches of about T ms of calls (default 2; at least 10 calls; isolated\n"
        "                    batches at most 200 calls, which the launch queue holds while the stream "
        "waits)\n"
        "  --host-overhead   host time per call at n = 1024, batches of 256 calls, against a raw launch\n"
        "  --no-check        skip the bit-exact spot check of each case against the CPU reference\n"
        "  --device D        CUDA device (default 0)\n"
        "  --list            print the cases (op out_dtype in_dtype n offsets) after one '# settings:' line\n"
        "                    (--batches, --batch-ms, --timing, for the PyTorch peer), run nothing, need no "
        "GPU\n",
        program, impl);
}

/* Parse a comma-separated list of names into a bit mask; kind selects the names (ops, dtypes, offsets). */
static int parse_mask(const char *list, int kind, unsigned *mask)
{
    *mask = 0;
    for (const char *p = list; *p;) {
        size_t length = strcspn(p, ",");
        int bit = -1;
        if (kind == 0)
            bit = (int)ewb_op_from_name(p, length);
        else if (kind == 1)
            bit = (int)ewb_dtype_from_name(p, length);
        else
            for (int m = 0; m < EWB_OFFSET_MODES; ++m)
                if (strlen(offset_names[m]) == length && strncmp(offset_names[m], p, length) == 0)
                    bit = m;
        if (bit < 0 || (kind < 2 && bit == 0)) {
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

/* The sweep's own options that take a value (the method's: ewb_parse_timing_option). */
static const char *const VALUE_OPTIONS[] = {"--csv",  "--ops",      "--dtypes",  "--offsets",
                                            "--log2", "--min-log2", "--max-log2"};

static int parse_options(int argc, char **argv, const char *impl, options_t *o)
{
    *o = (options_t){.op_mask = ~0u,
                     .dtype_mask = ~0u,
                     .offset_mask = ~0u,
                     .batches = 15,
                     .batch_ms = 2.0,
                     .timing_mask = (1u << EWB_COLUMNS) - 1};
    int min_log2 = -1, max_log2 = -1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        const int shared = ewb_parse_timing_option(a, value, &o->batches, &o->batch_ms, &o->device,
                                                   &o->timing_mask, &o->no_check);
        int takes_value = 1, bad = shared < 0, valued = 0;
        for (size_t k = 0; k < sizeof VALUE_OPTIONS / sizeof VALUE_OPTIONS[0]; ++k)
            valued |= strcmp(a, VALUE_OPTIONS[k]) == 0;
        if (shared != 0) {
            takes_value = shared > 1;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout, argv[0], impl);
            exit(0);
        } else if (strcmp(a, "--all") == 0) {
            o->all = 1, takes_value = 0;
        } else if (strcmp(a, "--list") == 0) {
            o->list_only = 1, takes_value = 0;
        } else if (strcmp(a, "--host-overhead") == 0) {
            o->host_overhead = 1, takes_value = 0;
        } else if (!valued) {
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
        } else if (strcmp(a, "--log2") == 0) {
            char copy[256];
            snprintf(copy, sizeof copy, "%s", value);
            o->log2_count = 0;
            for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && !bad;
                 t = strtok_r(NULL, ",", &save))
                bad = o->log2_count > MAX_LOG2 || parse_int(t, 1, 30, &o->log2[o->log2_count++]);
        } else if (strcmp(a, "--min-log2") == 0) {
            bad = parse_int(value, 1, 30, &min_log2);
        } else {
            bad = parse_int(value, 1, 30, &max_log2);
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

/* The entries the options select (--all: the library's catalogue; else the default set; --ops, --dtypes),
 * whether impl supports them or not, in a malloc'ed array; NULL where out of memory. */
static ewb_entry_t *selected_entries(const options_t *o, int *count)
{
    const int dtypes = dtype_end();
    ewb_entry_t *entries = malloc(sizeof *entries * (size_t)(OP_END * dtypes * dtypes));
    *count = 0;
    if (entries == NULL)
        return NULL;
    if (o->all) {
        for (int op = 1; op < OP_END; ++op)
            for (int in = 1; in < dtypes; ++in)
                for (int out = 1; out < dtypes; ++out) {
                    ewb_entry_t e = {(ew_op_t)op, (ew_dtype_t)out, (ew_dtype_t)in};
                    if (ew_is_supported(e.op, e.out, e.in) && entry_selected(o, &e))
                        entries[(*count)++] = e;
                }
    } else {
        for (size_t i = 0; i < sizeof default_entries / sizeof default_entries[0]; ++i)
            if (entry_selected(o, &default_entries[i]))
                entries[(*count)++] = default_entries[i];
    }
    return entries;
}

/* The cases of the selected entries impl supports (supported != 0) or those it does not (== 0), in
 * run order: entry, then n, then offsets (pools are refilled per entry). */
static case_t *build_cases(const options_t *o, const ewb_impl_t *impl, int supported, int *count)
{
    int entry_count = 0;
    ewb_entry_t *entries = selected_entries(o, &entry_count);
    case_t *cases =
        entries ? malloc(sizeof *cases * ((size_t)entry_count * (size_t)o->log2_count * EWB_OFFSET_MODES + 1))
                : NULL;
    *count = 0;
    if (cases == NULL) {
        free(entries);
        return NULL;
    }
    for (int e = 0; e < entry_count; ++e) {
        if (!impl->supports(impl->ctx, &entries[e]) != !supported)
            continue;
        for (int k = 0; k < o->log2_count; ++k)
            for (int m = 0; m < EWB_OFFSET_MODES; ++m)
                if (o->offset_mask >> m & 1)
                    cases[(*count)++] = (case_t){entries[e], (int64_t)1 << o->log2[k], (ewb_offsets_t)m};
    }
    free(entries);
    return cases;
}

/* ---- the calls: pools of out, a, b, each call on the next slices ---- */

typedef struct {
    ewb_pools_t pools;
    ewb_timer_t timer;
} device_state_t;

/* Bytes one slice of a pool takes for n elements of elem_size, room for the offsets included. */
static size_t slice_bytes(int64_t n, size_t elem_size) { return (size_t)n * elem_size + 2 * elem_size; }

static size_t case_bytes(const case_t *c)
{
    return (size_t)c->n *
           (ew_dtype_size(c->entry.out) + (size_t)ewb_arity(c->entry.op) * ew_dtype_size(c->entry.in));
}

/* The cudaMemcpy that moves as many bytes (read + written) as the case: half of them, copied. */
static size_t memcpy_count(const case_t *c) { return case_bytes(c) / 2; }

static size_t pool_bytes_for(const case_t *cases, int count)
{
    size_t largest = 0;
    for (int i = 0; i < count; ++i) {
        size_t s = slice_bytes(cases[i].n, 8), m = memcpy_count(&cases[i]);
        largest = s > largest ? s : largest;
        largest = m > largest ? m : largest;
    }
    return ewb_pool_bytes(largest);
}

static void device_state_free(device_state_t *d)
{
    ewb_pools_free(&d->pools);
    ewb_timer_free(&d->timer);
}

static int device_state_init(device_state_t *d, size_t pool_bytes, int device)
{
    memset(d, 0, sizeof *d);
    if (ewb_timer_init(&d->timer, device) != 0) {
        device_state_free(d);
        return -1;
    }
    if (ewb_pools_init(&d->pools, MAX_POINTERS, pool_bytes, FILL_SEED) != 0) {
        fprintf(stderr, "try a smaller --max-log2\n");
        device_state_free(d);
        return -1;
    }
    return 0;
}

/* Something to time in one column: member.enqueue queues one call on the next slices. */
typedef struct {
    ewb_member_t member; /* first: enqueue casts it back */
    device_state_t *device;
    ewb_column_t column;
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
    size_t size[MAX_POINTERS] = {ew_dtype_size(c->entry.out), ew_dtype_size(c->entry.in),
                                 ew_dtype_size(c->entry.in)};
    int pointers = 1 + ewb_arity(c->entry.op);
    for (int p = 0; p < pointers; ++p)
        t->last[p] = ewb_pool_next(&t->device->pools, p, slice_bytes(c->n, size[p])) +
                     (size_t)offset_elements[c->offsets][p] * size[p];
    ewb_call_fn call =
        t->column == EWB_ISOLATED && t->impl->call_isolated ? t->impl->call_isolated : t->impl->call;
    return call(t->impl->ctx, &c->entry, c->n, t->last[0], t->last[1], pointers > 2 ? t->last[2] : NULL,
                t->device->timer.stream);
}

static int enqueue_memcpy(ewb_member_t *member)
{
    timed_t *t = (timed_t *)member;
    unsigned char *dst = ewb_pool_next(&t->device->pools, 0, t->copy_bytes);
    unsigned char *src = ewb_pool_next(&t->device->pools, 1, t->copy_bytes);
    return ewb_cuda_ok(
               cudaMemcpyAsync(dst, src, t->copy_bytes, cudaMemcpyDeviceToDevice, t->device->timer.stream),
               "cudaMemcpyAsync")
               ? 0
               : -1;
}

enum { MAX_MEMBERS = EWB_OFFSET_MODES * EWB_COLUMNS };

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

static int reference(const void *ctx, int64_t count, void *want, const void *const in[])
{
    const ewb_entry_t *e = ctx;
    return ewb_reference(e->op, e->out, e->in, ewb_alpha(e->out), count, want, in[0], in[1]);
}

/* One more call (in t's column) on fresh slices with a poisoned output, then elements at the start,
 * the middle and the end (where heads and tails are) compared bit for bit with the CPU reference. */
static ewb_check_t check_case(timed_t *t, char *why, size_t why_size)
{
    enum { SPAN = 8 };
    const case_t *c = t->c;
    device_state_t *d = t->device;
    if (ewb_pool_poison_next(&d->pools, 0, slice_bytes(c->n, ew_dtype_size(c->entry.out)), EWB_POISON,
                             d->timer.stream) != 0 ||
        t->member.enqueue(&t->member) != 0 ||
        !ewb_cuda_ok(cudaStreamSynchronize(d->timer.stream), "cudaStreamSynchronize")) {
        snprintf(why, why_size, "the checked call failed");
        return EWB_CHECK_FAILED;
    }
    const void *inputs[2] = {t->last[1], t->last[2]};
    return ewb_check_spans(t->last[0], c->entry.out, inputs, ewb_arity(c->entry.op), c->entry.in, c->n, SPAN,
                           reference, &c->entry, why, why_size);
}

/* ---- output ---- */

static const char CSV_HEADER[] = "impl,op,out_dtype,in_dtype,n,offsets,us,gbps,vs_memcpy,us_isolated,gbps_"
                                 "isolated,vs_memcpy_isolated,check\n";

/* A column's figures: NAN where it was not timed, which the CSV leaves empty. */
typedef struct {
    double us, gbps, vs_memcpy;
} figures_t;

static const figures_t NOT_TIMED = {NAN, NAN, NAN};

static void write_csv_row(FILE *csv, const char *impl, const case_t *c, const char *offsets,
                          const figures_t column[EWB_COLUMNS], const char *check)
{
    if (csv == NULL)
        return;
    fprintf(csv, "%s,%s,%s,%s,%lld,%s", impl, ewb_op_name(c->entry.op), ew_dtype_name(c->entry.out),
            ew_dtype_name(c->entry.in), (long long)c->n, offsets ? offsets : offset_names[c->offsets]);
    for (int k = 0; k < EWB_COLUMNS; ++k) {
        ewb_csv_number(csv, "%.4f", column[k].us);
        ewb_csv_number(csv, "%.2f", column[k].gbps);
        ewb_csv_number(csv, "%.4f", column[k].vs_memcpy);
    }
    fprintf(csv, ",%s\n", check);
    fflush(csv);
}

/* Rows without figures, check "unsupported", for the selected cases impl does not cover: a report can
 * then tell an op a peer lacks from a figure a run lost. */
static int write_unsupported(FILE *csv, const options_t *o, const ewb_impl_t *impl)
{
    int count = 0;
    case_t *cases = csv ? build_cases(o, impl, 0, &count) : NULL;
    const figures_t none[EWB_COLUMNS] = {NOT_TIMED, NOT_TIMED};
    for (int i = 0; i < count; ++i)
        write_csv_row(csv, impl->name, &cases[i], NULL, none, "unsupported");
    free(cases);
    return count;
}

/* ---- the sweep ---- */

typedef struct {
    size_t bytes;
    double us[EWB_COLUMNS];
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
                ew_dtype_name(c->entry.out), ew_dtype_name(c->entry.in), n_text, offset_names[c->offsets]);
    else if (previous == NULL || memcmp(&previous->entry, &c->entry, sizeof c->entry) != 0)
        fprintf(stderr, "[%d/%d] %s %s<-%s\n", done + 1, total, ewb_op_name(c->entry.op),
                ew_dtype_name(c->entry.out), ew_dtype_name(c->entry.in));
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

static int run_sweep(const options_t *o, const ewb_impl_t *impl, const case_t *cases, int count)
{
    device_state_t d;
    size_t pool_bytes = pool_bytes_for(cases, count);
    FILE *csv = ewb_csv_open(o->csv_path, CSV_HEADER);
    if (o->csv_path && csv == NULL)
        return 1;
    if (device_state_init(&d, pool_bytes, o->device) != 0) {
        if (csv)
            fclose(csv);
        return 1;
    }
    int columns[EWB_COLUMNS];
    const int column_count = ewb_timed_columns(o->timing_mask, columns);
    memcpy_result_t *copies = calloc((size_t)count, sizeof *copies);
    int copy_count = 0, failures = 0, checked = 0, tty = isatty(2);
    int isolated_batches = 0, host_behind = 0;
    printf(
        "# %s: %d cases, pools 3 x %.2f GiB, median of %d batches, ~%.1f ms per batch, GB/s = (bytes read + "
        "written) / time\n",
        impl->name, count, (double)pool_bytes / (1 << 30), o->batches, o->batch_ms);
    printf("# %s: columns:%s%s\n", impl->name,
           o->timing_mask >> EWB_BACK_TO_BACK & 1 ? " back-to-back (calls queued one after another)" : "",
           o->timing_mask >> EWB_ISOLATED & 1
               ? (impl->call_isolated
                      ? " isolated (plain stream order, an event between calls, the stream held "
                        "until the batch is queued)"
                      : " isolated (an event between calls, the stream held until the batch is "
                        "queued)")
               : "");
    printf("%-5s %-9s %-7s %-7s %-5s %-8s %11s %9s %9s %11s %9s %9s %9s  %s\n", "impl", "op", "out", "in",
           "n", "offsets", "us/call", "GB/s", "vs_memcpy", "iso us/call", "iso GB/s", "iso vs_mc", "memcpy",
           "check");
    for (int i = 0, members = 1; i < count && copies; i += members) {
        const case_t *c = &cases[i];
        members = group_size(cases + i, count - i);
        progress(i, count, c, tty, i ? &cases[i - 1] : NULL);
        if (ewb_pool_fill(&d.pools, 1, c->entry.in, d.timer.stream) != 0 ||
            (ewb_arity(c->entry.op) > 1 && ewb_pool_fill(&d.pools, 2, c->entry.in, d.timer.stream) != 0)) {
            failures++;
            break;
        }
        /* cudaMemcpy D2D moving the same bytes, once per byte count, in each column. */
        size_t copy_bytes = memcpy_count(c);
        int j = 0;
        while (j < copy_count && copies[j].bytes != copy_bytes)
            ++j;
        if (j == copy_count) {
            timed_t m[EWB_COLUMNS];
            double us[EWB_COLUMNS];
            for (int k = 0; k < column_count; ++k)
                m[k] =
                    (timed_t){.member = {.enqueue = enqueue_memcpy, .isolated = columns[k] == EWB_ISOLATED},
                              .device = &d,
                              .column = (ewb_column_t)columns[k],
                              .copy_bytes = copy_bytes};
            if (time_calls(m, column_count, o, us) != 0) {
                failures++;
                break;
            }
            copies[j].bytes = copy_bytes;
            for (int k = 0; k < EWB_COLUMNS; ++k)
                copies[j].us[k] = NAN;
            for (int k = 0; k < column_count; ++k) {
                copies[j].us[columns[k]] = us[k];
                if (columns[k] == EWB_ISOLATED)
                    isolated_batches += o->batches, host_behind += m[k].member.host_behind;
            }
            copy_count++;
        }
        figures_t copy[EWB_COLUMNS];
        for (int k = 0; k < EWB_COLUMNS; ++k) {
            double gbps = 2.0 * (double)copy_bytes / copies[j].us[k] / 1e3;
            copy[k] = (figures_t){copies[j].us[k], gbps, isnan(gbps) ? NAN : 1.0};
        }

        /* Every offset of the case in every column: member m * column_count + k. */
        timed_t group[MAX_MEMBERS];
        double us[MAX_MEMBERS];
        for (int m = 0; m < members; ++m)
            for (int k = 0; k < column_count; ++k)
                group[m * column_count + k] =
                    (timed_t){.member = {.enqueue = enqueue_case, .isolated = columns[k] == EWB_ISOLATED},
                              .device = &d,
                              .column = (ewb_column_t)columns[k],
                              .impl = impl,
                              .c = &cases[i + m]};
        if (time_calls(group, members * column_count, o, us) != 0) {
            progress(i, count, NULL, tty, NULL);
            fprintf(stderr, "%s: %s %s<-%s n=%lld failed\n", impl->name, ewb_op_name(c->entry.op),
                    ew_dtype_name(c->entry.out), ew_dtype_name(c->entry.in), (long long)c->n);
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
            figures_t figures[EWB_COLUMNS] = {NOT_TIMED, NOT_TIMED};
            ewb_check_t worst = EWB_CHECK_OK;
            for (int k = 0; k < column_count; ++k) {
                timed_t *t = &group[m * column_count + k];
                double u = us[m * column_count + k], gbps = (double)case_bytes(member) / u / 1e3;
                figures[columns[k]] = (figures_t){u, gbps, gbps / copy[columns[k]].gbps};
                if (columns[k] == EWB_ISOLATED)
                    isolated_batches += o->batches, host_behind += t->member.host_behind;
                if (o->no_check)
                    continue;
                const ewb_check_t verdict = check_case(t, why, sizeof why);
                ewb_check_fold(&worst, shown, sizeof shown, k == 0, verdict, ewb_column_name(columns[k]),
                               why);
            }
            if (!o->no_check) {
                checked++;
                failures += ewb_check_fails(worst);
                check = ewb_check_name(worst);
            }
            char n_text[32];
            ewb_log2_text(member->n, n_text, sizeof n_text);
            printf("%-5s %-9s %-7s %-7s %-5s %-8s", impl->name, ewb_op_name(member->entry.op),
                   ew_dtype_name(member->entry.out), ew_dtype_name(member->entry.in), n_text,
                   offset_names[member->offsets]);
            ewb_print_number(" %*.3f", 11, figures[EWB_BACK_TO_BACK].us);
            ewb_print_number(" %*.1f", 9, figures[EWB_BACK_TO_BACK].gbps);
            ewb_print_number(" %*.3f", 9, figures[EWB_BACK_TO_BACK].vs_memcpy);
            ewb_print_number(" %*.3f", 11, figures[EWB_ISOLATED].us);
            ewb_print_number(" %*.1f", 9, figures[EWB_ISOLATED].gbps);
            ewb_print_number(" %*.3f", 9, figures[EWB_ISOLATED].vs_memcpy);
            ewb_print_number(" %*.1f", 9, copy[columns[0]].gbps);
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
    if (o->timing_mask >> EWB_ISOLATED & 1)
        printf("# %s: isolated column: %d of %d timed batches had the host still queueing when the GPU "
               "reached them (their figures include some of the host's time)\n",
               impl->name, host_behind, isolated_batches);
    if (unsupported)
        printf("# %s: %d selected cases not covered (CSV rows marked unsupported)\n", impl->name,
               unsupported);
    free(copies);
    if (csv)
        fclose(csv);
    device_state_free(&d);
    return failures ? 1 : 0;
}

/* ---- host overhead ---- */

/* ---- host overhead ---- */

/* What the host-overhead mode times: launcher slot s is impl's host launcher launcher[s], as column[s]
 * launches it. */
typedef struct {
    const ewb_impl_t *impl;
    int count;
    int launcher[EWB_MAX_HOST_LAUNCHERS * EWB_COLUMNS];
    ewb_column_t column[EWB_MAX_HOST_LAUNCHERS * EWB_COLUMNS];
    ewb_host_call_fn call[EWB_MAX_HOST_LAUNCHERS * EWB_COLUMNS];
    int64_t n;
    float *out, *a, *b;
    cudaStream_t stream;
} host_slots_t;

static int host_call(void *ctx, int slot)
{
    const host_slots_t *h = ctx;
    return h->call[slot](h->impl->ctx, h->n, h->out, h->a, h->b, h->stream);
}

/* Host microseconds per call at n = 1024 (ewb_time_host: batches of 256 calls, launchers interleaved batch
 * by batch). Each launcher is timed as the back-to-back column launches it and, where it has one, as the
 * isolated column does (the library's plain stream-order handle); a launcher with one launch for both
 * gives its figure in both CSV columns. */
static int run_host_overhead(const options_t *o, const ewb_impl_t *impl)
{
    enum { N = 1024 };
    host_slots_t h = {.impl = impl, .n = N};
    int launchers = 0;
    while (launchers < EWB_MAX_HOST_LAUNCHERS && impl->host[launchers].call)
        ++launchers;
    if (launchers == 0) {
        fprintf(stderr, "%s has no host-overhead launchers\n", impl->name);
        return 1;
    }
    for (int l = 0; l < launchers; ++l) {
        const ewb_host_launcher_t *launcher = &impl->host[l];
        if ((o->timing_mask >> EWB_BACK_TO_BACK & 1) || !launcher->call_isolated)
            h.launcher[h.count] = l, h.column[h.count] = EWB_BACK_TO_BACK, h.call[h.count++] = launcher->call;
        if ((o->timing_mask >> EWB_ISOLATED & 1) && launcher->call_isolated)
            h.launcher[h.count] = l, h.column[h.count] = EWB_ISOLATED,
            h.call[h.count++] = launcher->call_isolated;
    }
    float *buffer = NULL;
    if (!ewb_cuda_ok(cudaMalloc((void **)&buffer, 3 * N * sizeof(float)), "cudaMalloc") ||
        !ewb_cuda_ok(cudaStreamCreateWithFlags(&h.stream, cudaStreamNonBlocking),
                     "cudaStreamCreateWithFlags") ||
        !ewb_cuda_ok(ewb_fill_random(buffer + N, EW_F32, 2 * N, FILL_SEED, h.stream), "fill kernel")) {
        if (h.stream)
            cudaStreamDestroy(h.stream);
        cudaFree(buffer);
        return 1;
    }
    h.out = buffer, h.a = buffer + N, h.b = buffer + 2 * N;
    const int batches = o->batches > EWB_HOST_BATCHES ? o->batches : EWB_HOST_BATCHES;
    double us[EWB_MAX_HOST_LAUNCHERS * EWB_COLUMNS];
    int failed = ewb_time_host(host_call, &h, h.count, EWB_HOST_CALLS, batches, h.stream, us) != 0;
    if (!failed) {
        FILE *csv = ewb_csv_open(o->csv_path, CSV_HEADER);
        case_t c = {{EW_OP_ADD, EW_F32, EW_F32}, N, EWB_ALIGNED};
        printf("# host time per call, add f32, n = %d, median of %d batches of %d calls\n", N, batches,
               EWB_HOST_CALLS);
        printf("%-12s %14s %14s\n", "launcher", "host us b2b", "host us iso");
        figures_t first[EWB_COLUMNS] = {NOT_TIMED, NOT_TIMED};
        for (int l = 0; l < launchers; ++l) {
            figures_t column[EWB_COLUMNS] = {NOT_TIMED, NOT_TIMED};
            for (int s = 0; s < h.count; ++s)
                if (h.launcher[s] == l)
                    column[h.column[s]] = (figures_t){us[s], 0, 0};
            if (!impl->host[l].call_isolated) { /* one launch for both columns */
                if (o->timing_mask >> EWB_ISOLATED & 1)
                    column[EWB_ISOLATED] = column[EWB_BACK_TO_BACK];
                if (!(o->timing_mask >> EWB_BACK_TO_BACK & 1))
                    column[EWB_BACK_TO_BACK] = NOT_TIMED;
            }
            if (l == 0)
                memcpy(first, column, sizeof first);
            printf("%-12s", impl->host[l].name);
            ewb_print_number(" %*.3f", 14, column[EWB_BACK_TO_BACK].us);
            ewb_print_number(" %*.3f", 14, column[EWB_ISOLATED].us);
            if (l > 0)
                for (int k = 0; k < EWB_COLUMNS; ++k)
                    if (!isnan(first[k].us) && !isnan(column[k].us))
                        printf("   (%s: %s - %s = %+.3f us)", ewb_column_name(k), impl->host[0].name,
                               impl->host[l].name, first[k].us - column[k].us);
            printf("\n");
            write_csv_row(csv, impl->host[l].name, &c, "host", column, "");
        }
        if (csv)
            fclose(csv);
        else if (o->csv_path)
            failed = 1;
    }
    cudaStreamDestroy(h.stream);
    cudaFree(buffer);
    return failed ? 1 : 0;
}

/* ---- main ---- */

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
        for (int k = 0, listed = 0; k < EWB_COLUMNS; ++k)
            if (o.timing_mask >> k & 1)
                printf("%s%s", listed++ ? "," : "", ewb_column_name(k));
        printf("\n");
        for (int i = 0; i < count; ++i)
            printf("%s %s %s %lld %s\n", ewb_op_name(cases[i].entry.op), ew_dtype_name(cases[i].entry.out),
                   ew_dtype_name(cases[i].entry.in), (long long)cases[i].n, offset_names[cases[i].offsets]);
        free(cases);
        return 0;
    }

    if (!o.host_overhead && count == 0) {
        printf("# %s: no case matches the filters: nothing to run\n", impl->name);
        FILE *csv = ewb_csv_open(o.csv_path, CSV_HEADER);
        int unsupported = write_unsupported(csv, &o, impl);
        if (unsupported)
            printf("# %s: %d selected cases not covered (CSV rows marked unsupported)\n", impl->name,
                   unsupported);
        if (csv)
            fclose(csv);
        free(cases);
        return o.csv_path && csv == NULL ? 1 : 0;
    }

    const int found = ewb_use_device(o.device);
    if (found <= 0 || (impl->setup && impl->setup(impl->ctx, o.device) != 0)) {
        free(cases);
        return found == 0 ? 0 : found == -2 ? 2 : 1;
    }
    int status = o.host_overhead ? run_host_overhead(&o, impl) : run_sweep(&o, impl, cases, count);
    free(cases);
    return status;
}
