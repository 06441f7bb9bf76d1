/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ew-bench-strided: the strided calls (ew_*_strided) on the layouts of the strided targets, each case
 * timed in one group with its yardstick, the flat call that moves memory at full speed:
 *   target 1  contiguous 4-d views (explicit strides) through the strided calls vs the flat call, every op;
 *   target 2  [N,C] + [C] (b strides {0,1}) and [N,C] + [N,1] (b strides {1,0}), add, mul, scale_add,
 *             f32/f16/bf16, N*C = 2^26 (N rounded down), vs the flat add of the dtype at 2^26;
 *   target 3  a scalar operand (b strides {0,0}), [8192, 8192] add f32/f16, vs the flat relu at 2^26;
 *   target 4  [N,C] + [C,N]^T (b strides {1,N}), N = C = 8192, f32/f16, vs the flat add;
 *   target 5  NCHW f32 -> NHWC f16 cast, (32, 256, 64, 64), vs the flat cast at the same n;
 *   target 6  host time to queue one 4-d strided call on the gather kernel vs one flat call;
 *   target 7  the gather kernel's layouts, f32/f16, vs the flat relu at the same n: [N,1,C] + [1,H,C]
 *             (64, 1024, 1024); a (B,H,S,D) -> (B,S,H,D) permute, (32, 16, 1024, 128), relu; relu into
 *             the first 1024 columns of a [65536, 2048] output (out not dense).
 * With --kernel, each case of targets 1-5 and 7 is also timed in the same group as a user-defined kernel
 * of the op's ew:: function (ew_kernel_launch_strided: the same strided kernels, compiled by NVRTC).
 * GB/s count the bytes the op must move: each distinct input element once, each output element once.
 * Method of bench/lib (docs/design.md): pools of at least 2 GiB per operand, every call on the next
 * 4 KiB-aligned slice, inputs never zero, an L2 flush per group, warm-up and a probe sizing batches, the
 * median of the batches, CUDA events, the members of a group taking turns batch by batch so drift falls on
 * the case and its yardstick alike; both columns of bench/lib/common.h. Each case's first and last output
 * elements are compared bit for bit with the tests' CPU reference, in both columns.
 *   ew-bench-strided [--csv FILE] [--list] [--targets LIST] [--kernel] [--batches N] [--batch-ms T]
 *                    [--timing LIST] [--device D] [--no-check]
 * --list prints the cases' geometry for bench/peers/torch_strided.py and needs no GPU. Without a GPU the
 * program prints one line and exits 0.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "common.h"
#include "csv.h"
#include "elementwise.h"
#include "pool.h"
#include "timing.h"

enum { MAX_NDIM = 4, OPERANDS = 3, MAX_CASES = 160, TARGETS = 7 };
enum { COL_B2B = EWB_BACK_TO_BACK, COL_ISO = EWB_ISOLATED, COLUMNS = EWB_COLUMNS };

static const uint64_t FILL_SEED = 0x5EEDB57Dull;
static const int64_t N26 = (int64_t)1 << 26;

/* ---- the cases ---- */

/* A flat call: the yardstick of a case. */
typedef struct {
    ew_op_t op;
    ew_dtype_t out, in;
    int64_t n;
} flat_t;

typedef struct {
    int target;
    char name[48];      /* unique; the CSV's and the peer's key */
    const char *layout; /* contiguous, row, col, scalar, transposed, nchw-nhwc, host, bcast3, heads, gaps */
    int64_t c;          /* target 2's C, else 0 */
    ew_op_t op;
    ew_dtype_t out, in;
    int ndim;
    int64_t shape[MAX_NDIM];
    int64_t strides[OPERANDS][MAX_NDIM]; /* out, a (x), b; every stride >= 0 here */
    flat_t yard;
} scase_t;

static int operands_of(const scase_t *c) { return 1 + ewb_arity(c->op); }
static size_t elem_size(const scase_t *c, int k) { return ew_dtype_size(k == 0 ? c->out : c->in); }

static int64_t elements(const scase_t *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->ndim; ++d)
        n *= c->shape[d];
    return n;
}

/* Elements operand k's allocation holds: one past its farthest element (strides are >= 0). */
static int64_t alloc_elements(const scase_t *c, int k)
{
    int64_t last = 0;
    for (int d = 0; d < c->ndim; ++d)
        last += (c->shape[d] - 1) * c->strides[k][d];
    return last + 1;
}

/* Distinct elements operand k addresses: a stride of 0 repeats; no other aliasing in these layouts. */
static int64_t distinct_elements(const scase_t *c, int k)
{
    int64_t n = 1;
    for (int d = 0; d < c->ndim; ++d)
        if (c->strides[k][d] != 0)
            n *= c->shape[d];
    return n;
}

static double case_bytes(const scase_t *c)
{
    double bytes = 0;
    for (int k = 0; k < operands_of(c); ++k)
        bytes += (double)distinct_elements(c, k) * (double)elem_size(c, k);
    return bytes;
}

static double flat_bytes(const flat_t *f)
{
    return (double)f->n * (double)(ew_dtype_size(f->out) + (size_t)ewb_arity(f->op) * ew_dtype_size(f->in));
}

static scase_t cases[MAX_CASES];
static int case_count;

static void contiguous(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t step = 1;
    for (int d = ndim - 1; d >= 0; --d)
        strides[d] = step, step *= shape[d];
}

/* A case whose every operand is C-contiguous over shape; the callers then change the strides. */
static scase_t *add_case(int target, const char *layout, int64_t c, ew_op_t op, ew_dtype_t out, ew_dtype_t in,
                         int ndim, const int64_t *shape, flat_t yard)
{
    scase_t *s = &cases[case_count++];
    *s = (scase_t){.target = target,
                   .layout = layout,
                   .c = c,
                   .op = op,
                   .out = out,
                   .in = in,
                   .ndim = ndim,
                   .yard = yard};
    memcpy(s->shape, shape, (size_t)ndim * sizeof *shape);
    for (int k = 0; k < OPERANDS; ++k)
        contiguous(ndim, shape, s->strides[k]);
    return s;
}

static void set_strides(scase_t *s, int k, int64_t s0, int64_t s1)
{
    s->strides[k][0] = s0, s->strides[k][1] = s1;
}

static void build_cases(unsigned target_mask)
{
    static const ew_dtype_t t2_dtypes[] = {EW_F32, EW_F16, EW_BF16};
    static const ew_op_t t2_ops[] = {EW_OP_ADD, EW_OP_MUL, EW_OP_SCALE_ADD};
    static const int64_t t2_c[] = {1, 3, 64, 768, 4096, 4099};
    case_count = 0;
    if (target_mask >> 1 & 1) {
        static const struct {
            ew_op_t op;
            ew_dtype_t out;
        } ops[] = {{EW_OP_ADD, EW_F32},
                   {EW_OP_MUL, EW_F32},
                   {EW_OP_RELU, EW_F32},
                   {EW_OP_CAST, EW_F16},
                   {EW_OP_SCALE_ADD, EW_F32}};
        const int64_t shape[] = {64, 16, 256, 256}; /* 2^26 */
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
            scase_t *s = add_case(1, "contiguous", 0, ops[i].op, ops[i].out, EW_F32, 4, shape,
                                  (flat_t){ops[i].op, ops[i].out, EW_F32, N26});
            if (ops[i].op == EW_OP_CAST)
                snprintf(s->name, sizeof s->name, "t1-cast-f16-f32");
            else
                snprintf(s->name, sizeof s->name, "t1-%s-f32", ewb_op_name(ops[i].op));
        }
    }
    if (target_mask >> 2 & 1)
        for (size_t d = 0; d < sizeof t2_dtypes / sizeof t2_dtypes[0]; ++d)
            for (int row = 1; row >= 0; --row)
                for (size_t o = 0; o < sizeof t2_ops / sizeof t2_ops[0]; ++o)
                    for (size_t i = 0; i < sizeof t2_c / sizeof t2_c[0]; ++i) {
                        const int64_t c = t2_c[i], shape[] = {N26 / c, c};
                        const ew_dtype_t t = t2_dtypes[d];
                        scase_t *s = add_case(2, row ? "row" : "col", c, t2_ops[o], t, t, 2, shape,
                                              (flat_t){EW_OP_ADD, t, t, N26});
                        if (row)
                            set_strides(s, 2, 0, 1); /* [N,C] + [C] */
                        else
                            set_strides(s, 2, 1, 0); /* [N,C] + [N,1] */
                        snprintf(s->name, sizeof s->name, "t2-%s-%s-%s-C%lld", s->layout,
                                 ewb_op_name(t2_ops[o]), ew_dtype_name(t), (long long)c);
                    }
    if (target_mask >> 3 & 1)
        for (int d = 0; d < 2; ++d) {
            const ew_dtype_t t = d ? EW_F16 : EW_F32;
            const int64_t shape[] = {8192, 8192};
            scase_t *s = add_case(3, "scalar", 0, EW_OP_ADD, t, t, 2, shape, (flat_t){EW_OP_RELU, t, t, N26});
            set_strides(s, 2, 0, 0);
            snprintf(s->name, sizeof s->name, "t3-scalar-add-%s", ew_dtype_name(t));
        }
    if (target_mask >> 4 & 1)
        for (int d = 0; d < 2; ++d) {
            const ew_dtype_t t = d ? EW_F16 : EW_F32;
            const int64_t shape[] = {8192, 8192};
            scase_t *s =
                add_case(4, "transposed", 0, EW_OP_ADD, t, t, 2, shape, (flat_t){EW_OP_ADD, t, t, N26});
            set_strides(s, 2, 1, 8192); /* [N,C] + [C,N]^T */
            snprintf(s->name, sizeof s->name, "t4-transposed-add-%s", ew_dtype_name(t));
        }
    if (target_mask >> 5 & 1) {
        /* (N, C, H, W) = (32, 256, 64, 64): out is NHWC, contiguous; x is NCHW addressed as (n, h, w, c). */
        const int64_t N = 32, C = 256, H = 64, W = 64, shape[] = {N, H, W, C};
        scase_t *s = add_case(5, "nchw-nhwc", 0, EW_OP_CAST, EW_F16, EW_F32, 4, shape,
                              (flat_t){EW_OP_CAST, EW_F16, EW_F32, N * C * H * W});
        const int64_t x[] = {C * H * W, W, 1, H * W};
        memcpy(s->strides[1], x, sizeof x);
        snprintf(s->name, sizeof s->name, "t5-nchw-nhwc-cast-f16-f32");
    }
    if (target_mask >> 6 & 1) {
        /* Small, 4-d after coalescing (b's zero strides block every merge), b indexed: the gather kernel. */
        const int64_t shape[] = {2, 4, 8, 16};
        scase_t *s = add_case(6, "host", 0, EW_OP_ADD, EW_F32, EW_F32, 4, shape,
                              (flat_t){EW_OP_ADD, EW_F32, EW_F32, 1024});
        const int64_t b[] = {0, 16, 0, 1};
        memcpy(s->strides[2], b, sizeof b);
        snprintf(s->name, sizeof s->name, "t6-host-add-f32");
    }
    if (target_mask >> 7 & 1)
        for (int d = 0; d < 2; ++d) {
            const ew_dtype_t t = d ? EW_F16 : EW_F32;
            /* [N,1,C] + [1,H,C]: out dense over three dimensions, both inputs indexed */
            const int64_t nhc[] = {64, 1024, 1024}, a[] = {1024, 0, 1}, b[] = {0, 1024, 1};
            scase_t *s = add_case(7, "bcast3", 0, EW_OP_ADD, t, t, 3, nhc, (flat_t){EW_OP_RELU, t, t, N26});
            memcpy(s->strides[1], a, sizeof a);
            memcpy(s->strides[2], b, sizeof b);
            snprintf(s->name, sizeof s->name, "t7-bcast3-add-%s", ew_dtype_name(t));
            /* out (B,S,H,D) from x (B,H,S,D): four dimensions, x indexed with D contiguous */
            const int64_t B = 32, H = 16, S = 1024, D = 128;
            const int64_t bshd[] = {B, S, H, D}, x[] = {H * S * D, D, S * D, 1};
            s = add_case(7, "heads", 0, EW_OP_RELU, t, t, 4, bshd, (flat_t){EW_OP_RELU, t, t, N26});
            memcpy(s->strides[1], x, sizeof x);
            snprintf(s->name, sizeof s->name, "t7-heads-relu-%s", ew_dtype_name(t));
            /* out the first 1024 columns of [65536, 2048]: written element by element at walked offsets */
            const int64_t rows[] = {65536, 1024};
            s = add_case(7, "gaps", 0, EW_OP_RELU, t, t, 2, rows, (flat_t){EW_OP_RELU, t, t, N26});
            set_strides(s, 0, 2048, 1);
            snprintf(s->name, sizeof s->name, "t7-gaps-relu-%s", ew_dtype_name(t));
        }
}

static void join(char *text, size_t size, const int64_t *v, int count, const char *separator)
{
    size_t used = 0;
    text[0] = 0;
    for (int i = 0; i < count && used < size; ++i)
        used += (size_t)snprintf(text + used, size - used, "%s%lld", i ? separator : "", (long long)v[i]);
}

/* ---- options ---- */

typedef struct {
    const char *csv_path;
    int list_only, no_check, device, batches, kernel;
    double batch_ms;
    unsigned targets; /* bit t for target t */
    unsigned timing;  /* bit per column */
} options_t;

static void usage(FILE *to, const char *program)
{
    fprintf(to,
            "usage: %s [options]\n"
            "Times the strided calls on the strided targets' layouts against their flat yardsticks.\n"
            "  --csv FILE       write target,case,impl,op,out_dtype,in_dtype,shape,layout,c,bytes,us,gbps,\n"
            "                   us_isolated,gbps_isolated,check (impl ew: the strided call, ew_flat: its\n"
            "                   yardstick, ew_kernel: the user kernel; target 6: host microseconds per call)\n"
            "  --list           print the cases' geometry (for bench/peers/torch_strided.py), run nothing\n"
            "  --targets LIST   only these targets (1-7, default all)\n"
            "  --kernel         also time targets 1-5 and 7 as user kernels (ew_kernel_launch_strided)\n"
            "  --batches N      timed batches per member and column, median reported (default 7, >= 5)\n"
            "  --batch-ms T     batches of about T ms of calls (default 2)\n"
            "  --timing LIST    back-to-back,isolated (default both)\n"
            "  --no-check       skip the bit-exact spot check\n"
            "  --device D       CUDA device (default 0)\n",
            program);
}

static int parse_options(int argc, char **argv, options_t *o)
{
    *o = (options_t){.batches = 7, .batch_ms = 2.0, .targets = 0xFE, .timing = 3};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int shared =
            ewb_parse_timing_option(a, v, &o->batches, &o->batch_ms, &o->device, &o->timing, &o->no_check);
        if (shared < 0)
            return -1;
        i += shared > 1;
        if (shared > 0)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout, argv[0]);
            exit(0);
        } else if (strcmp(a, "--list") == 0) {
            o->list_only = 1;
            continue;
        } else if (strcmp(a, "--kernel") == 0) {
            o->kernel = 1;
            continue;
        } else if (v == NULL) {
            fprintf(stderr, "%s: unknown option or missing value\n", a);
            return -1;
        }
        ++i;
        if (strcmp(a, "--csv") == 0) {
            o->csv_path = v;
        } else if (strcmp(a, "--targets") == 0) {
            o->targets = 0;
            for (const char *p = v; *p; ++p) {
                if (*p >= '1' && *p <= '0' + TARGETS)
                    o->targets |= 1u << (*p - '0');
                else if (*p != ',')
                    return fprintf(stderr, "--targets takes numbers 1-%d separated by commas\n", TARGETS), -1;
            }
        } else {
            fprintf(stderr, "unknown option '%s'\n", a);
            return -1;
        }
    }
    if (!o->targets || !o->timing)
        return fprintf(stderr, "nothing selected\n"), -1;
    return 0;
}

/* One line a case: key=value fields, strides comma-separated, shape 'x'-separated. */
static void print_list(const options_t *o)
{
    printf("# settings: --batches %d --batch-ms %g --timing %s%s%s\n", o->batches, o->batch_ms,
           o->timing & 1 ? ewb_column_name(0) : "", o->timing == 3 ? "," : "",
           o->timing & 2 ? ewb_column_name(1) : "");
    for (int i = 0; i < case_count; ++i) {
        const scase_t *c = &cases[i];
        char shape[96], strides[96];
        join(shape, sizeof shape, c->shape, c->ndim, "x");
        printf("target=%d case=%s op=%s out=%s in=%s layout=%s c=%lld shape=%s", c->target, c->name,
               ewb_op_name(c->op), ew_dtype_name(c->out), ew_dtype_name(c->in), c->layout, (long long)c->c,
               shape);
        static const char *const names[OPERANDS] = {"out", "a", "b"};
        for (int k = 0; k < operands_of(c); ++k) {
            join(strides, sizeof strides, c->strides[k], c->ndim, ",");
            printf(" %s_strides=%s %s_alloc=%lld", names[k], strides, names[k],
                   (long long)alloc_elements(c, k));
        }
        printf(" alpha=%g bytes=%.0f yard=%s:%s:%s:%lld\n",
               c->op == EW_OP_SCALE_ADD ? ewb_alpha(c->out) : 0.0, case_bytes(c), ewb_op_name(c->yard.op),
               ew_dtype_name(c->yard.out), ew_dtype_name(c->yard.in), (long long)c->yard.n);
    }
}

/* ---- device state ---- */

static struct {
    ew_handle_t handle[COLUMNS]; /* ewb_create_handles */
    ewb_pools_t pools;           /* out, a (x), b */
    ewb_timer_t timer;
    ew_kernel_t kernel[COLUMNS]; /* the current case's user kernel on each column's handle (--kernel) */
} dev;

static unsigned char *next_slice(int p, size_t bytes) { return ewb_pool_next(&dev.pools, p, bytes); }

static int fill(int p, ew_dtype_t dtype) { return ewb_pool_fill(&dev.pools, p, dtype, dev.timer.stream); }

/* The handles, pools, stream and events. */
static int device_init(int device)
{
    if (ewb_create_handles(device, 1, "ew-strided", dev.handle) != 0)
        return -1;
    size_t largest = 0;
    for (int i = 0; i < case_count; ++i) {
        for (int k = 0; k < operands_of(&cases[i]); ++k) {
            size_t bytes = (size_t)alloc_elements(&cases[i], k) * elem_size(&cases[i], k);
            largest = bytes > largest ? bytes : largest;
        }
        size_t yard = (size_t)cases[i].yard.n * 8;
        largest = yard > largest ? yard : largest;
    }
    return ewb_timer_init(&dev.timer, device) != 0 ||
                   ewb_pools_init(&dev.pools, OPERANDS, ewb_pool_bytes(largest), FILL_SEED) != 0
               ? -1
               : 0;
}

static void device_free(void)
{
    ewb_pools_free(&dev.pools);
    ewb_timer_free(&dev.timer);
    for (int k = 0; k < COLUMNS; ++k) {
        ew_kernel_destroy(dev.kernel[k]);
        if (dev.handle[k])
            ew_handle_destroy(dev.handle[k]);
    }
}

/* ---- the calls ---- */

static int call_strided(ew_handle_t h, const scase_t *c, void *const p[OPERANDS], cudaStream_t stream)
{
    const int64_t *s0 = c->strides[0], *s1 = c->strides[1], *s2 = c->strides[2];
    switch (c->op) {
    case EW_OP_ADD:
    case EW_OP_MUL:
        return ewb_ew_ok(ew_binary_strided(h, c->op, c->out, c->ndim, c->shape, p[0], s0, p[1], s1, p[2], s2,
                                           stream),
                         "ew_binary_strided")
                   ? 0
                   : -1;
    case EW_OP_RELU:
        return ewb_ew_ok(ew_unary_strided(h, c->op, c->out, c->ndim, c->shape, p[0], s0, p[1], s1, stream),
                         "ew_unary_strided")
                   ? 0
                   : -1;
    case EW_OP_CAST:
        return ewb_ew_ok(ew_cast_strided(h, c->out, c->in, c->ndim, c->shape, p[0], s0, p[1], s1, stream),
                         "ew_cast_strided")
                   ? 0
                   : -1;
    case EW_OP_SCALE_ADD:
        return ewb_ew_ok(ew_scale_add_strided(h, c->out, ewb_alpha(c->out), c->ndim, c->shape, p[0], s0, p[1],
                                              s1, p[2], s2, stream),
                         "ew_scale_add_strided")
                   ? 0
                   : -1;
    default: return -1;
    }
}

static int call_flat(ew_handle_t h, const flat_t *f, void *const p[OPERANDS], cudaStream_t stream)
{
    switch (f->op) {
    case EW_OP_ADD:
    case EW_OP_MUL:
        return ewb_ew_ok(ew_binary(h, f->op, f->out, f->n, p[0], p[1], p[2], stream), "ew_binary") ? 0 : -1;
    case EW_OP_RELU:
        return ewb_ew_ok(ew_unary(h, f->op, f->out, f->n, p[0], p[1], stream), "ew_unary") ? 0 : -1;
    case EW_OP_CAST:
        return ewb_ew_ok(ew_cast(h, f->out, f->in, f->n, p[0], p[1], stream), "ew_cast") ? 0 : -1;
    case EW_OP_SCALE_ADD:
        return ewb_ew_ok(ew_scale_add(h, f->out, ewb_alpha(f->out), f->n, p[0], p[1], p[2], stream),
                         "ew_scale_add")
                   ? 0
                   : -1;
    default: return -1;
    }
}

/* The op's ew:: function as a kernel body, and its launch on the case's views. */
static void kernel_source(const scase_t *c, char *source, size_t size)
{
    static const char *const types[] = {
        [EW_BOOL] = "bool",     [EW_I8] = "int8_t",   [EW_U8] = "uint8_t",          [EW_I16] = "int16_t",
        [EW_I32] = "int32_t",   [EW_I64] = "int64_t", [EW_F16] = "__half",          [EW_BF16] = "__nv_bfloat16",
        [EW_F32] = "float",     [EW_F64] = "double",  [EW_F8E4M3] = "__nv_fp8_e4m3", [EW_F8E5M2] = "__nv_fp8_e5m2",
        [EW_F8E8M0] = "__nv_fp8_e8m0"};
    switch (c->op) {
    case EW_OP_ADD: snprintf(source, size, "return ew::add(in0, in1);"); break;
    case EW_OP_MUL: snprintf(source, size, "return ew::mul(in0, in1);"); break;
    case EW_OP_RELU: snprintf(source, size, "return ew::relu(in0);"); break;
    case EW_OP_CAST: snprintf(source, size, "return ew::cast<%s>(in0);", types[c->out]); break;
    default: snprintf(source, size, "return ew::scale_add(p0, in0, in1);"); break;
    }
}

static int call_kernel(ew_kernel_t kernel, const scase_t *c, void *const p[OPERANDS], cudaStream_t stream)
{
    const double alpha = ewb_alpha(c->out);
    const void *inputs[2] = {p[1], p[2]};
    const int64_t *in_strides[2] = {c->strides[1], c->strides[2]};
    return ewb_ew_ok(ew_kernel_launch_strided(kernel, c->ndim, c->shape, p[0], c->strides[0], inputs, in_strides,
                                              &alpha, stream),
                     "ew_kernel_launch_strided")
               ? 0
               : -1;
}

/* ---- timing (bench/lib's method) ---- */

enum { IMPL_EW, IMPL_FLAT, IMPL_KERNEL, IMPLS }; /* the strided call, its flat yardstick, the user kernel */

typedef struct {
    ewb_member_t member; /* first: enqueue casts it back */
    const scase_t *c;
    int impl; /* IMPL_*: what the member times */
    int column;
    void *last[OPERANDS];
} member_t;

/* One call on the next slices of every pool. */
static int enqueue(ewb_member_t *member)
{
    member_t *m = (member_t *)member;
    const scase_t *c = m->c;
    if (m->impl == IMPL_FLAT) {
        const flat_t *f = &c->yard;
        const size_t size[OPERANDS] = {ew_dtype_size(f->out), ew_dtype_size(f->in), ew_dtype_size(f->in)};
        for (int k = 0; k < OPERANDS; ++k)
            m->last[k] = k <= ewb_arity(f->op) ? next_slice(k, (size_t)f->n * size[k]) : NULL;
        return call_flat(dev.handle[m->column], f, m->last, dev.timer.stream);
    }
    for (int k = 0; k < OPERANDS; ++k)
        m->last[k] =
            k < operands_of(c) ? next_slice(k, (size_t)alloc_elements(c, k) * elem_size(c, k)) : NULL;
    return m->impl == IMPL_KERNEL ? call_kernel(dev.kernel[m->column], c, m->last, dev.timer.stream)
                                  : call_strided(dev.handle[m->column], c, m->last, dev.timer.stream);
}

/* ---- the spot check ---- */

/* One more strided call (impl: the library's or the user kernel's) in the column on fresh slices with a
 * poisoned output, then its first and last SPAN output elements compared bit for bit with the CPU
 * reference on the inputs they address. */
static ewb_check_t check_case(const scase_t *c, int impl, int column, char *why, size_t why_size)
{
    enum { SPAN = EWB_MAX_SPAN };
    member_t m = {.c = c, .impl = impl, .column = column};
    const int operands = operands_of(c);
    const size_t out_bytes = (size_t)alloc_elements(c, 0) * elem_size(c, 0);
    if (ewb_pool_poison_next(&dev.pools, 0, out_bytes, EWB_POISON, dev.timer.stream) != 0 ||
        enqueue(&m.member) != 0 ||
        !ewb_cuda_ok(cudaStreamSynchronize(dev.timer.stream), "cudaStreamSynchronize")) {
        snprintf(why, why_size, "the checked call failed");
        return EWB_CHECK_FAILED;
    }
    const int64_t n = elements(c), span = n < SPAN ? n : SPAN;
    const int64_t starts[2] = {0, n - span};
    for (int s = 0; s < 2; ++s) {
        unsigned char got[SPAN * 8], want[SPAN * 8], in[2][SPAN * 8];
        for (int64_t j = 0; j < span; ++j) {
            /* the element's coordinates, last dimension fastest, and each operand's offset */
            int64_t rest = starts[s] + j, offset[OPERANDS] = {0, 0, 0};
            for (int d = c->ndim - 1; d >= 0; --d) {
                const int64_t coordinate = rest % c->shape[d];
                rest /= c->shape[d];
                for (int k = 0; k < operands; ++k)
                    offset[k] += coordinate * c->strides[k][d];
            }
            for (int k = 0; k < operands; ++k) {
                const size_t size = elem_size(c, k);
                unsigned char *to = k == 0 ? got + j * size : in[k - 1] + j * size;
                if (!ewb_cuda_ok(cudaMemcpy(to, (unsigned char *)m.last[k] + offset[k] * (int64_t)size, size,
                                            cudaMemcpyDeviceToHost),
                                 "cudaMemcpy (check)")) {
                    snprintf(why, why_size, "copy back failed");
                    return EWB_CHECK_FAILED;
                }
            }
        }
        if (ewb_reference(c->op, c->out, c->in, ewb_alpha(c->out), span, want, in[0], in[1]) != 0) {
            snprintf(why, why_size, "no reference");
            return EWB_CHECK_NO_REFERENCE;
        }
        const ewb_check_t verdict = ewb_compare(got, want, span, elem_size(c, 0), starts[s], why, why_size);
        if (verdict != EWB_CHECK_OK)
            return verdict;
    }
    return EWB_CHECK_OK;
}

/* ---- output ---- */

static FILE *csv;

/* us[column], gbps[column]: NAN where not timed. */
static void csv_row(const scase_t *c, const char *impl, int yard, const double us[COLUMNS],
                    const double gbps[COLUMNS], const char *check)
{
    if (!csv)
        return;
    char shape[96];
    if (yard)
        snprintf(shape, sizeof shape, "%lld", (long long)c->yard.n);
    else
        join(shape, sizeof shape, c->shape, c->ndim, "x");
    const ew_op_t op = yard ? c->yard.op : c->op;
    const ew_dtype_t out = yard ? c->yard.out : c->out, in = yard ? c->yard.in : c->in;
    const double bytes = c->target == 6 ? NAN : yard ? flat_bytes(&c->yard) : case_bytes(c);
    fprintf(csv, "%d,%s,%s,%s,%s,%s,%s,%s,%lld", c->target, c->name, impl, ewb_op_name(op),
            ew_dtype_name(out), ew_dtype_name(in), shape, yard ? "flat" : c->layout, (long long)c->c);
    ewb_csv_number(csv, "%.0f", bytes);
    for (int k = 0; k < COLUMNS; ++k) {
        ewb_csv_number(csv, "%.4f", us[k]);
        ewb_csv_number(csv, "%.2f", gbps[k]);
    }
    fprintf(csv, ",%s\n", check);
}

/* ---- target 6: host time per call ---- */

/* Target 6's launchers: slot s is column[s]'s strided call (even s) or flat call (odd s). */
typedef struct {
    const scase_t *c;
    int column[2 * COLUMNS];
    void *p[OPERANDS];
} host_t;

static int host_call(void *ctx, int s)
{
    const host_t *h = ctx;
    const ew_handle_t handle = dev.handle[h->column[s]];
    return s & 1 ? call_flat(handle, &h->c->yard, h->p, dev.timer.stream)
                 : call_strided(handle, h->c, h->p, dev.timer.stream);
}

/* Host microseconds to queue one call (ewb_time_host): the strided and the flat call on each timed
 * column's handle. */
static int run_host(const scase_t *c, const options_t *o, int *failures)
{
    host_t h = {.c = c};
    for (int k = 0; k < OPERANDS; ++k)
        h.p[k] = next_slice(k, 4096); /* 1024 f32 each: room for the strided views and the flat n */
    int columns[COLUMNS], slots = 0;
    const int column_count = ewb_timed_columns(o->timing, columns);
    for (int k = 0; k < column_count; ++k)
        h.column[slots++] = columns[k], h.column[slots++] = columns[k];
    double t[2 * COLUMNS];
    if (ewb_time_host(host_call, &h, slots, EWB_HOST_CALLS, EWB_HOST_BATCHES, dev.timer.stream, t) != 0) {
        ++*failures;
        return -1;
    }
    double strided[COLUMNS] = {NAN, NAN}, flat[COLUMNS] = {NAN, NAN}, none[COLUMNS] = {NAN, NAN};
    for (int k = 0; k < column_count; ++k)
        strided[columns[k]] = t[2 * k], flat[columns[k]] = t[2 * k + 1];
    char why[96] = "skipped";
    ewb_check_t worst = EWB_CHECK_OK;
    if (!o->no_check)
        for (int k = 0; k < column_count; ++k) {
            char w[96];
            const ewb_check_t v = check_case(c, IMPL_EW, columns[k], w, sizeof w);
            ewb_check_fold(&worst, why, sizeof why, k == 0, v, ewb_column_name(columns[k]), w);
        }
    const char *check = o->no_check ? "skipped" : ewb_check_name(worst);
    *failures += !o->no_check && ewb_check_fails(worst);
    printf("# target 6: host time per call (median of %d batches of %d calls), 4-d strided add f32 %s over "
           "shape 2x4x8x16 (gather kernel) vs flat add f32 n=1024\n",
           EWB_HOST_BATCHES, EWB_HOST_CALLS, "with b strides {0,16,0,1}");
    for (int k = 0; k < column_count; ++k)
        printf("%-13s strided %7.3f us  flat %7.3f us  difference %+7.3f us (target <= +0.5)\n",
               ewb_column_name(columns[k]), strided[columns[k]], flat[columns[k]],
               strided[columns[k]] - flat[columns[k]]);
    printf("# target 6 check: %s\n", why);
    csv_row(c, "ew", 0, strided, none, check);
    csv_row(c, "ew_flat", 1, flat, none, "");
    return 0;
}

/* ---- main ---- */

/* The case's op as a user kernel on each column's handle (the caches make repeats a lookup). */
static int create_kernels(const scase_t *c)
{
    char source[64];
    kernel_source(c, source, sizeof source);
    const ew_dtype_t in[2] = {c->in, c->in};
    for (int k = 0; k < COLUMNS; ++k) {
        ew_kernel_destroy(dev.kernel[k]);
        dev.kernel[k] = NULL;
        if (!ewb_ew_ok(ew_kernel_create(dev.handle[k], source, c->out, ewb_arity(c->op), in,
                                        c->op == EW_OP_SCALE_ADD ? 1 : 0, &dev.kernel[k]),
                       "ew_kernel_create"))
            return -1;
    }
    return 0;
}

static int run(const options_t *o)
{
    int failures = 0, checked = 0, behind = 0, isolated_batches = 0;
    int columns[COLUMNS];
    const int column_count = ewb_timed_columns(o->timing, columns);
    printf("# ew-strided: %d cases, pools 3 x %.2f GiB, median of %d batches of about %g ms, GB/s = bytes "
           "the op must move (each distinct input element once, each output element once) / time\n",
           case_count, (double)dev.pools.bytes / (1 << 30), o->batches, o->batch_ms);
    printf("%-28s %9s %9s %9s %9s %7s %7s  %s%s\n", "case", "GB/s", "flat", "iso GB/s", "iso flat", "ratio",
           "iso rat", "check",
           o->kernel ? "  | kernel GB/s, iso GB/s, ratios to the strided call, check" : "");
    for (int i = 0; i < case_count; ++i) {
        const scase_t *c = &cases[i];
        /* a case and its yardstick read inputs of one dtype */
        if (fill(1, c->in) != 0 || (ewb_arity(c->op) > 1 && fill(2, c->in) != 0)) {
            ++failures;
            break;
        }
        if (c->target == 6) {
            run_host(c, o, &failures);
            continue;
        }
        /* the members: per column, the strided call, its yardstick and (--kernel) the user kernel */
        const int impls = o->kernel ? IMPLS : IMPL_KERNEL;
        if (o->kernel && create_kernels(c) != 0) {
            ++failures;
            continue;
        }
        member_t group[IMPLS * COLUMNS];
        ewb_member_t *members[IMPLS * COLUMNS];
        const int count = impls * column_count;
        for (int m = 0; m < count; ++m) {
            const int column = columns[m / impls];
            group[m] = (member_t){.member = {.enqueue = enqueue, .isolated = column == COL_ISO},
                                  .c = c,
                                  .impl = m % impls,
                                  .column = column};
            members[m] = &group[m].member;
        }
        double us[IMPLS * COLUMNS];
        if (ewb_time_group(&dev.timer, members, count, o->batches, o->batch_ms, us) != 0) {
            fprintf(stderr, "%s failed\n", c->name);
            ++failures;
            if (cudaDeviceSynchronize() != cudaSuccess)
                break; /* a sticky error: nothing after it can be measured */
            continue;
        }
        /* figure[impl]: us and GB/s per column, NAN where not timed */
        double f_us[IMPLS][COLUMNS], f_gbps[IMPLS][COLUMNS];
        for (int i = 0; i < IMPLS; ++i)
            for (int k = 0; k < COLUMNS; ++k)
                f_us[i][k] = f_gbps[i][k] = NAN;
        for (int k = 0; k < column_count; ++k) {
            const int col = columns[k];
            for (int i = 0; i < impls; ++i) {
                f_us[i][col] = us[impls * k + i];
                f_gbps[i][col] = (i == IMPL_FLAT ? flat_bytes(&c->yard) : case_bytes(c)) / f_us[i][col] / 1e3;
                if (col == COL_ISO) {
                    behind += group[impls * k + i].member.host_behind;
                    isolated_batches += o->batches;
                }
            }
        }
        char why[IMPLS][128];
        ewb_check_t worst[IMPLS] = {EWB_CHECK_OK, EWB_CHECK_OK, EWB_CHECK_OK};
        for (int i = 0; i < impls; i += i == IMPL_EW ? 2 : 1) { /* the yardstick is not checked */
            snprintf(why[i], sizeof why[i], "skipped");
            if (o->no_check)
                continue;
            for (int k = 0; k < column_count; ++k) {
                char w[96];
                const ewb_check_t v = check_case(c, i, columns[k], w, sizeof w);
                ewb_check_fold(&worst[i], why[i], sizeof why[i], k == 0, v, ewb_column_name(columns[k]), w);
            }
            ++checked;
            failures += ewb_check_fails(worst[i]);
        }
        printf("%-28s %9.1f %9.1f %9.1f %9.1f %7.3f %7.3f  %s", c->name, f_gbps[IMPL_EW][COL_B2B],
               f_gbps[IMPL_FLAT][COL_B2B], f_gbps[IMPL_EW][COL_ISO], f_gbps[IMPL_FLAT][COL_ISO],
               f_gbps[IMPL_EW][COL_B2B] / f_gbps[IMPL_FLAT][COL_B2B], f_gbps[IMPL_EW][COL_ISO] / f_gbps[IMPL_FLAT][COL_ISO],
               why[IMPL_EW]);
        if (o->kernel)
            printf("  | kernel %9.1f %9.1f %7.3f %7.3f  %s", f_gbps[IMPL_KERNEL][COL_B2B], f_gbps[IMPL_KERNEL][COL_ISO],
                   f_gbps[IMPL_KERNEL][COL_B2B] / f_gbps[IMPL_EW][COL_B2B],
                   f_gbps[IMPL_KERNEL][COL_ISO] / f_gbps[IMPL_EW][COL_ISO], why[IMPL_KERNEL]);
        printf("\n");
        fflush(stdout);
        const char *const check = o->no_check ? "skipped" : ewb_check_name(worst[IMPL_EW]);
        csv_row(c, "ew", 0, f_us[IMPL_EW], f_gbps[IMPL_EW], check);
        csv_row(c, "ew_flat", 1, f_us[IMPL_FLAT], f_gbps[IMPL_FLAT], "");
        if (o->kernel)
            csv_row(c, "ew_kernel", 0, f_us[IMPL_KERNEL], f_gbps[IMPL_KERNEL],
                    o->no_check ? "skipped" : ewb_check_name(worst[IMPL_KERNEL]));
    }
    printf("# ew-strided: %d cases checked bit-exact against the CPU reference, %d failures\n", checked,
           failures);
    if ((o->timing >> COL_ISO) & 1)
        printf(
            "# ew-strided: isolated column: %d of %d timed batches had the host still queueing when the GPU "
            "reached them\n",
            behind, isolated_batches);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    options_t o;
    if (parse_options(argc, argv, &o) != 0) {
        fprintf(stderr, "%s --help lists the options\n", argv[0]);
        return 2;
    }
    build_cases(o.targets);
    if (o.list_only) {
        print_list(&o);
        return 0;
    }
    const int found = ewb_use_device(o.device);
    if (found <= 0)
        return found == 0 ? 0 : found == -2 ? 2 : 1;
    csv = ewb_csv_open(o.csv_path, "target,case,impl,op,out_dtype,in_dtype,shape,layout,c,bytes,us,gbps,"
                                   "us_isolated,gbps_isolated,check\n");
    if (o.csv_path && !csv)
        return 1;
    int status = device_init(o.device) != 0 ? 1 : run(&o);
    device_free();
    if (ewb_csv_close(csv) != 0)
        status = 1;
    return status;
}
