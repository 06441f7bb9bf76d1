/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the whole C API of libelementwise, on a machine WITHOUT a GPU.
 *
 * The input is a little program: each action byte picks an API call, the bytes after it its
 * arguments. Handles are valid ones made with the internal ewi_handle_make (no GPU needed), NULL,
 * or destroyed ones; op and dtype values, n, pointers (NULL, misaligned, overlapping, arbitrary
 * fake addresses), alpha and streams are arbitrary. User-defined kernels likewise: live ones made
 * without code by the internal ewi_kernel_make, NULL or destroyed ones, on live or destroyed
 * handles, and ew_kernel_create's arguments. Every call must return one of the ew_status_t values,
 * with a non-empty message on failure, and the status must be the one the rules of
 * include/elementwise.h and docs/semantics.md give for those arguments (a model below). Any
 * violation aborts, which libFuzzer reports as a crash.
 *
 * Safety: a fully valid call reaches cudaGetDevice, which fails without a GPU, so no pointer is ever
 * dereferenced and no kernel source is ever compiled (ew_kernel_create checks the device first).
 * With a GPU present a call with fake pointers would launch a kernel on them, so
 * LLVMFuzzerInitialize refuses to run when any CUDA device is visible.
 *
 * Input format (fuzz/make_seeds.py writes seeds in it): missing bytes read as 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "elementwise.h"
#include "handle.h"
#include "kernel.h"

#define CHECK(condition, ...)                                                                                \
    do {                                                                                                     \
        if (!(condition)) {                                                                                  \
            fprintf(stderr, "fuzz_api: check failed: %s: ", #condition);                                     \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fprintf(stderr, "\n");                                                                           \
            abort();                                                                                         \
        }                                                                                                    \
    } while (0)

/* ---- input reader ---- */

typedef struct {
    const uint8_t *data;
    size_t size, at;
} input_t;

static uint8_t take8(input_t *in) { return in->at < in->size ? in->data[in->at++] : 0; }

static uint64_t take64(input_t *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= (uint64_t)take8(in) << (8 * i);
    return v;
}

static uint32_t take32(input_t *in) { return (uint32_t)take64(in); } /* 8 bytes, so fields stay aligned */

/* ---- state: handle slots and the set of live handles ---- */

enum { SLOTS = 4, MAX_LIVE = 64 };

typedef struct {
    ew_handle_t handle;
    int device, sm_count, threads;
} live_t;

static ew_handle_t slots[SLOTS]; /* NULL, live, or stale (destroyed; the pointer stays readable) */
static live_t live[MAX_LIVE];
static int live_count;

static const live_t *find_live(ew_handle_t h)
{
    for (int i = 0; h != NULL && i < live_count; ++i)
        if (live[i].handle == h)
            return &live[i];
    return NULL;
}

static void forget_live(ew_handle_t h)
{
    for (int i = 0; i < live_count; ++i)
        if (live[i].handle == h) {
            live[i] = live[--live_count];
            return;
        }
}

/* 0..SLOTS-1: that slot's handle (NULL, live or stale); SLOTS: NULL. */
static ew_handle_t take_handle(input_t *in)
{
    unsigned k = take8(in) % (SLOTS + 1);
    return k < SLOTS ? slots[k] : NULL;
}

/* ---- argument generators: mostly near the interesting values, sometimes anything ---- */

static int take_enum_value(input_t *in)
{
    uint8_t b = take8(in);
    if (b < 224)
        return (int)(b % 16) - 1; /* -1 .. 14: every valid value and its neighbours */
    return (int)take32(in);
}

static int64_t take_n(input_t *in)
{
    uint8_t b = take8(in);
    switch (b % 12) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -1;
    case 3: return INT64_MIN;
    case 4: return INT64_MAX;
    case 5: return (int64_t)1 << 32 | 5;
    case 6: return (int64_t)1 << 62;
    case 7: return -(int64_t)take32(in);
    case 8: return (int64_t)take64(in);
    default: return 1 + take8(in) + 256 * (int64_t)take8(in); /* small sizes */
    }
}

/* Fake device addresses in four separate 1 MiB regions, so pointers may overlap, be misaligned or
 * be far apart; plus NULL, the top of the address space and anything at all. Never dereferenced. */
static const void *take_pointer(input_t *in, const void *out)
{
    uint8_t b = take8(in);
    uintptr_t region = (uintptr_t)0x7f0000000000ull + (uintptr_t)(b % 4) * 0x100000u;
    switch ((b >> 2) % 10) {
    case 0: return NULL;
    case 1: return out; /* exactly in place */
    case 2: /* near out: overlaps; integer arithmetic, the addresses are not objects of this program */
        return out == NULL ? NULL : (const void *)((uintptr_t)out + (uintptr_t)(intptr_t)(int16_t)take32(in));
    case 3: return (const void *)(UINTPTR_MAX - take8(in)); /* ranges that would wrap */
    case 4: return (const void *)(uintptr_t)take64(in);
    default: return (const void *)(region + (take32(in) & 0xFFFFu)); /* any alignment */
    }
}

static double take_alpha(input_t *in)
{
    static const double table[] = {0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   2.0,
                                   -0.0,
                                   127.0,
                                   128.0,
                                   -128.0,
                                   255.0,
                                   256.0,
                                   32767.0,
                                   32768.0,
                                   -32769.0,
                                   2147483647.0,
                                   2147483648.0,
                                   -2147483649.0,
                                   9223372036854775807.0 /* 2^63 */,
                                   -9223372036854775808.0,
                                   1e300,
                                   1e-300};
    uint8_t b = take8(in);
    if (b < 200)
        return table[b % (sizeof table / sizeof table[0])];
    uint64_t bits = take64(in); /* NaN, infinities, subnormals, anything */
    double alpha;
    memcpy(&alpha, &bits, sizeof alpha);
    return alpha;
}

static ew_stream_t take_stream(input_t *in)
{
    uint8_t b = take8(in);
    return b < 128 ? NULL : (ew_stream_t)(uintptr_t)take64(in); /* never used without a device */
}

/* ---- the model: what the rules say a call must return ---- */

static int dtype_valid(int d) { return d >= EW_BOOL && d <= EW_F8E5M2; }
static int is_fp8(int d) { return d == EW_F8E4M3 || d == EW_F8E5M2; }
static size_t spec_size(int d)
{
    static const size_t sizes[] = {0, 1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 1, 1};
    return dtype_valid(d) ? sizes[d] : 0;
}

/* The catalogue of docs/semantics.md, written out independently of the dispatch table. */
static int catalogue_has(int op, int out, int in)
{
    if (!dtype_valid(out) || !dtype_valid(in))
        return 0;
    switch (op) {
    case EW_OP_CAST: return 1;
    case EW_OP_ADD:
    case EW_OP_MUL:
    case EW_OP_SCALE_ADD: return out == in && !is_fp8(out);
    case EW_OP_RELU: return out == in && !is_fp8(out) && out != EW_BOOL;
    default: return 0;
    }
}

/* Integer dtypes take alpha only as an integer: a signed dtype in its range, u8 in [-255, 255] (taken
 * modulo 2^8, as PyTorch takes it), bool 0 or 1. */
static int alpha_fits(int dtype, double alpha)
{
    static const double low[] = {0, 0, -128, -255, -32768, -2147483648.0, -9223372036854775808.0};
    static const double high_exclusive[] = {0, 2, 128, 256, 32768, 2147483648.0, 9223372036854775808.0};
    if (dtype > EW_I64)
        return 1; /* floating dtypes take any alpha */
    return alpha >= low[dtype] && alpha < high_exclusive[dtype] && alpha == floor(alpha);
}

typedef enum { VALID, INVALID, EITHER } verdict_t;

/* out and up to a kernel's inputs. */
enum { MAX_OPERANDS = 1 + EW_KERNEL_MAX_INPUTS };
_Static_assert(EW_KERNEL_MAX_INPUTS == EWI_KERNEL_MAX_INPUTS && EW_KERNEL_MAX_PARAMS == EWI_KERNEL_MAX_PARAMS,
               "the public and internal kernel limits agree");

/* Pointers of a call with n > 0: NULL, misaligned, wrapping past the address space or overlapping
 * out (other than exactly in place with equal sizes) make it invalid. Ranges that end within a few
 * bytes of 2^64 are left to the implementation (EITHER). */
static verdict_t pointers_verdict(int64_t n, int count, const void *const pointers[], const size_t sizes[])
{
    typedef unsigned __int128 u128;
    u128 begin[MAX_OPERANDS], end[MAX_OPERANDS];
    const u128 top = (u128)1 << 64, margin = 64;
    verdict_t verdict = VALID;
    for (int i = 0; i < count; ++i) {
        uintptr_t p = (uintptr_t)pointers[i];
        if (p == 0 || p % sizes[i] != 0)
            return INVALID;
        begin[i] = p;
        end[i] = (u128)p + (u128)n * sizes[i];
        if (end[i] > top)
            return INVALID;
        if (end[i] + margin > top)
            verdict = EITHER;
    }
    for (int i = 1; i < count; ++i) {
        if (begin[0] == begin[i] && sizes[0] == sizes[i])
            continue;
        if (begin[0] < end[i] && begin[i] < end[0])
            return INVALID;
    }
    return verdict;
}

/* Checks one operation call's status against the model. entry: 0 unary, 1 binary, 2 cast, 3 scale_add. */
static void check_operation(int entry, ew_handle_t h, int op, int out_dtype, int in_dtype, int64_t n,
                            double alpha, int count, const void *const pointers[], ew_status_t status)
{
    const char *message = ew_get_last_error_message();
    CHECK(message != NULL, "NULL message");
    CHECK((unsigned)status <= EW_ERROR_OUT_OF_MEMORY, "entry %d returned %d, not an ew_status_t", entry,
          (int)status);
    if (status != EW_SUCCESS)
        CHECK(message[0] != '\0' && strlen(message) < 4096, "entry %d: %s with message \"%s\"", entry,
              ew_status_string(status), message);
    /* Without a device: no mismatch, no allocation, no device to be missing at call time. */
    CHECK(status != EW_ERROR_DEVICE_MISMATCH && status != EW_ERROR_OUT_OF_MEMORY &&
              status != EW_ERROR_NO_DEVICE,
          "entry %d: %s (\"%s\")", entry, ew_status_string(status), message);

    if (find_live(h) == NULL) {
        CHECK(status == EW_ERROR_INVALID_HANDLE, "entry %d on a %s handle %p: %s (\"%s\")", entry,
              h == NULL ? "NULL" : "destroyed", (void *)h, ew_status_string(status), message);
        return;
    }
    CHECK(status != EW_ERROR_INVALID_HANDLE, "entry %d: live handle refused: \"%s\"", entry, message);

    static const int entry_ops[] = {EW_OP_RELU, -1 /* add or mul */, EW_OP_CAST, EW_OP_SCALE_ADD};
    int op_fits_entry = entry == 1 ? (op == EW_OP_ADD || op == EW_OP_MUL) : op == entry_ops[entry];
    if (!op_fits_entry || !catalogue_has(op, out_dtype, in_dtype)) {
        /* Which of two problems is reported first is not fixed by the rules. */
        CHECK(status == EW_ERROR_NOT_SUPPORTED || (status == EW_ERROR_INVALID_VALUE && n < 0),
              "entry %d, op %d, dtypes %d <- %d, n %lld: outside the catalogue but %s (\"%s\")", entry, op,
              out_dtype, in_dtype, (long long)n, ew_status_string(status), message);
        return;
    }
    CHECK(status != EW_ERROR_NOT_SUPPORTED,
          "entry %d, op %d, dtypes %d <- %d: in the catalogue but refused: \"%s\"", entry, op, out_dtype,
          in_dtype, message);

    int alpha_ok = entry != 3 || alpha_fits(out_dtype, alpha);
    if (n < 0) {
        CHECK(status == EW_ERROR_INVALID_VALUE, "n = %lld: %s", (long long)n, ew_status_string(status));
        return;
    }
    if (n == 0) {
        /* Nothing launched; an alpha that does not fit may be refused even then. */
        CHECK(status == EW_SUCCESS || (!alpha_ok && status == EW_ERROR_INVALID_VALUE), "n = 0: %s (\"%s\")",
              ew_status_string(status), message);
        return;
    }
    CHECK(status != EW_SUCCESS, "entry %d with n = %lld succeeded on a machine without a GPU", entry,
          (long long)n);

    size_t sizes[3] = {spec_size(out_dtype), spec_size(in_dtype), spec_size(in_dtype)};
    verdict_t verdict = alpha_ok ? pointers_verdict(n, count, pointers, sizes) : INVALID;
    if (verdict == INVALID)
        CHECK(status == EW_ERROR_INVALID_VALUE,
              "entry %d, n %lld, pointers %p %p %p, alpha %g: invalid but %s (\"%s\")", entry, (long long)n,
              pointers[0], pointers[1], count > 2 ? pointers[2] : NULL, alpha, ew_status_string(status),
              message);
    if (verdict == VALID) {
        /* A fully valid call gets as far as asking CUDA for the current device, which fails here. */
        CHECK(status == EW_ERROR_CUDA, "entry %d, n %lld, pointers %p %p %p: valid but %s (\"%s\")", entry,
              (long long)n, pointers[0], pointers[1], count > 2 ? pointers[2] : NULL,
              ew_status_string(status), message);
    }
    if (status == EW_ERROR_CUDA)
        CHECK(strstr(message, "cuda") != NULL, "EW_ERROR_CUDA without the CUDA error's name: \"%s\"",
              message);
}

/* ---- actions ---- */

enum {
    ACTION_MAKE,
    ACTION_DESTROY,
    ACTION_CREATE,
    ACTION_GET,
    ACTION_UNARY,
    ACTION_BINARY,
    ACTION_CAST,
    ACTION_SCALE_ADD,
    ACTION_INFO,
    ACTION_STRIDED,
    ACTION_BATCHED,
    ACTION_KERNEL_CREATE,
    ACTION_KERNEL_MAKE,
    ACTION_KERNEL_LAUNCH,
    ACTION_KERNEL_LAUNCH_STRIDED,
    ACTION_KERNEL_DESTROY,
    ACTIONS
};

static void destroy_checked(ew_handle_t h)
{
    int was_live = find_live(h) != NULL;
    ew_status_t status = ew_handle_destroy(h);
    if (h == NULL || was_live)
        CHECK(status == EW_SUCCESS, "destroying a %s handle: %s", h ? "live" : "NULL",
              ew_status_string(status));
    else
        CHECK(status == EW_ERROR_INVALID_HANDLE && ew_get_last_error_message()[0] != '\0',
              "destroying a destroyed handle: %s", ew_status_string(status));
    forget_live(h);
}

static void action_make(input_t *in)
{
    unsigned k = take8(in) % SLOTS;
    if (find_live(slots[k]) != NULL)
        destroy_checked(slots[k]);
    if (live_count == MAX_LIVE)
        return;
    int device = take_enum_value(in), sm_count = (int)take32(in), threads = (int)take32(in);
    ew_handle_t h = NULL;
    ew_status_t status = ewi_handle_make(device, sm_count, threads, &h);
    CHECK(status == EW_SUCCESS && h != NULL, "ewi_handle_make: %s", ew_status_string(status));
    CHECK(find_live(h) == NULL, "ewi_handle_make returned a handle that is still live");
    live[live_count++] = (live_t){h, device, sm_count, threads};
    slots[k] = h;
}

static void action_create(input_t *in)
{
    int device = take_enum_value(in);
    if (take8(in) & 1) {
        CHECK(ew_handle_create(device, NULL) == EW_ERROR_INVALID_VALUE,
              "ew_handle_create with a NULL output");
        return;
    }
    ew_handle_t h = (ew_handle_t)(uintptr_t)0x5A5A;
    ew_status_t status = ew_handle_create(device, &h);
    CHECK(status == EW_ERROR_NO_DEVICE || status == EW_ERROR_INVALID_VALUE,
          "ew_handle_create(%d) without a GPU: %s", device, ew_status_string(status));
    CHECK(h == NULL, "ew_handle_create left the output non-NULL on failure");
    CHECK(ew_get_last_error_message()[0] != '\0', "ew_handle_create failed without a message");
}

static void action_get(input_t *in)
{
    ew_handle_t h = take_handle(in);
    unsigned which = take8(in) % 3;
    int use_null = take8(in) < 32;
    int value = -12345;
    int *target = use_null ? NULL : &value;
    ew_status_t status = which == 0   ? ew_handle_get_device(h, target)
                         : which == 1 ? ew_handle_get_sm_count(h, target)
                                      : ew_handle_get_max_threads_per_sm(h, target);
    const live_t *l = find_live(h);
    if (l == NULL) {
        CHECK(status == EW_ERROR_INVALID_HANDLE, "getter on a dead handle: %s", ew_status_string(status));
        CHECK(value == -12345, "getter on a dead handle wrote its output");
    } else if (use_null) {
        CHECK(status == EW_ERROR_INVALID_VALUE, "getter with a NULL output: %s", ew_status_string(status));
    } else {
        int expected = which == 0 ? l->device : which == 1 ? l->sm_count : l->threads;
        CHECK(status == EW_SUCCESS && value == expected, "getter %u: %s, %d instead of %d", which,
              ew_status_string(status), value, expected);
    }
}

static void action_operation(input_t *in, int action)
{
    ew_handle_t h = take_handle(in);
    int op = action == ACTION_CAST        ? EW_OP_CAST
             : action == ACTION_SCALE_ADD ? EW_OP_SCALE_ADD
                                          : take_enum_value(in);
    int out_dtype = take_enum_value(in);
    int in_dtype = action == ACTION_CAST ? take_enum_value(in) : out_dtype;
    int64_t n = take_n(in);
    double alpha = action == ACTION_SCALE_ADD ? take_alpha(in) : 0.0;
    const void *out = take_pointer(in, NULL);
    const void *a = take_pointer(in, out), *b = take_pointer(in, out);
    ew_stream_t stream = take_stream(in);
    const void *pointers[3] = {out, a, b};
    ew_status_t status;
    switch (action) {
    case ACTION_UNARY:
        status = ew_unary(h, (ew_op_t)op, (ew_dtype_t)out_dtype, n, (void *)out, a, stream);
        check_operation(0, h, op, out_dtype, in_dtype, n, alpha, 2, pointers, status);
        break;
    case ACTION_BINARY:
        status = ew_binary(h, (ew_op_t)op, (ew_dtype_t)out_dtype, n, (void *)out, a, b, stream);
        check_operation(1, h, op, out_dtype, in_dtype, n, alpha, 3, pointers, status);
        break;
    case ACTION_CAST:
        status = ew_cast(h, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype, n, (void *)out, a, stream);
        check_operation(2, h, op, out_dtype, in_dtype, n, alpha, 2, pointers, status);
        break;
    default:
        status = ew_scale_add(h, (ew_dtype_t)out_dtype, alpha, n, (void *)out, a, b, stream);
        check_operation(3, h, op, out_dtype, in_dtype, n, alpha, 3, pointers, status);
    }
}

/* What every call's status must satisfy whatever its arguments, and the handle and catalogue rules the
 * strided and batched calls share with the flat ones. Returns 1 where the call got past them. */
static int check_common(const char *what, ew_handle_t h, int in_catalogue, ew_status_t status)
{
    const char *message = ew_get_last_error_message();
    CHECK((unsigned)status <= EW_ERROR_OUT_OF_MEMORY, "%s returned %d", what, (int)status);
    if (status != EW_SUCCESS)
        CHECK(message[0] != '\0' && strlen(message) < 4096, "%s: %s without a message", what,
              ew_status_string(status));
    CHECK(status != EW_ERROR_DEVICE_MISMATCH && status != EW_ERROR_NO_DEVICE, "%s: %s (\"%s\")", what,
          ew_status_string(status), message);
    if (find_live(h) == NULL) {
        CHECK(status == EW_ERROR_INVALID_HANDLE, "%s on a dead handle: %s", what, ew_status_string(status));
        return 0;
    }
    if (!in_catalogue) {
        CHECK(status == EW_ERROR_NOT_SUPPORTED, "%s outside the catalogue: %s (\"%s\")", what,
              ew_status_string(status), message);
        return 0;
    }
    CHECK(status != EW_ERROR_INVALID_HANDLE && status != EW_ERROR_NOT_SUPPORTED, "%s: %s (\"%s\")", what,
          ew_status_string(status), message);
    return 1;
}

/* A stride: 0, +-1, small, the neighbours of a dimension's span, or anything at all. */
static int64_t take_stride(input_t *in)
{
    uint8_t b = take8(in);
    switch (b % 8) {
    case 0: return 0;
    case 1: return 1;
    case 2: return -1;
    case 3: return (int64_t)(b >> 3) - 16;
    case 4: return INT64_MIN;
    case 5: return INT64_MAX;
    default: return (int64_t)take64(in);
    }
}

/* Fuzzed views: ndim (-1 to EW_MAX_DIMS + 1), the extents (mostly small), each operand's strides or
 * NULL, the shape or NULL; whether an extent within ndim is negative or zero. */
typedef struct {
    int ndim, negative, empty, shape_null;
    int64_t shape[EW_MAX_DIMS + 2], strides[MAX_OPERANDS][EW_MAX_DIMS + 2];
    const int64_t *s[MAX_OPERANDS]; /* strides[k] or NULL */
} views_t;

static void take_views(input_t *in, int count, views_t *v)
{
    memset(v, 0, sizeof *v);
    v->ndim = (int)(take8(in) % (EW_MAX_DIMS + 3)) - 1;
    for (int d = 0; d < EW_MAX_DIMS + 2; ++d) {
        uint8_t b = take8(in);
        v->shape[d] = b < 200 ? b % 6 : b < 250 ? (int64_t)take32(in) : take_n(in);
        if (d < v->ndim) {
            v->negative |= v->shape[d] < 0;
            v->empty |= v->shape[d] == 0;
        }
        for (int k = 0; k < count; ++k)
            v->strides[k][d] = take_stride(in);
    }
    v->shape_null = v->ndim > 0 && take8(in) < 16;
    const uint8_t null_strides = take8(in);
    for (int k = 0; k < count; ++k)
        v->s[k] = (null_strides >> k & 1) ? NULL : v->strides[k];
}

/* The status every strided call must have once its handle (or kernel) and op passed: ndim outside
 * [0, EW_MAX_DIMS], a NULL shape or a negative extent is refused; an empty shape succeeds; anything
 * else fails without a GPU (refused, or stopped at the device). */
static void check_views_status(const char *what, const views_t *v, ew_status_t status)
{
    if (v->ndim < 0 || v->ndim > EW_MAX_DIMS || v->shape_null || v->negative)
        CHECK(status == EW_ERROR_INVALID_VALUE, "%s: ndim %d, invalid but %s", what, v->ndim, ew_status_string(status));
    else if (v->empty)
        CHECK(status == EW_SUCCESS, "%s on an empty shape: %s (\"%s\")", what, ew_status_string(status),
              ew_get_last_error_message());
    else
        CHECK(status == EW_ERROR_INVALID_VALUE || status == EW_ERROR_CUDA, "%s without a GPU: %s (\"%s\")", what,
              ew_status_string(status), ew_get_last_error_message());
}

/* The strided calls on fuzzed views and pointers. Beyond the common rules: scale_add's alpha as the flat
 * call checks it, then the views' rules. */
static void action_strided(input_t *in)
{
    ew_handle_t h = take_handle(in);
    const unsigned entry = take8(in) % 4;
    int op = entry == 2 ? EW_OP_CAST : entry == 3 ? EW_OP_SCALE_ADD : take_enum_value(in);
    int out_dtype = take_enum_value(in), in_dtype = entry == 2 ? take_enum_value(in) : out_dtype;
    double alpha = entry == 3 ? take_alpha(in) : 0.0;
    views_t v;
    take_views(in, 3, &v);
    const int ndim = v.ndim;
    const int64_t *const *s = v.s;
    const void *out = take_pointer(in, NULL);
    const void *a = take_pointer(in, out), *b = take_pointer(in, out);
    const int64_t *sh = v.shape_null ? NULL : v.shape;
    ew_status_t status;
    int in_catalogue;
    switch (entry) {
    case 0:
        status = ew_unary_strided(h, (ew_op_t)op, (ew_dtype_t)out_dtype, ndim, sh, (void *)out, s[0], a, s[1], NULL);
        in_catalogue = op == EW_OP_RELU && catalogue_has(op, out_dtype, in_dtype);
        break;
    case 1:
        status = ew_binary_strided(h, (ew_op_t)op, (ew_dtype_t)out_dtype, ndim, sh, (void *)out, s[0], a, s[1], b,
                                   s[2], NULL);
        in_catalogue = (op == EW_OP_ADD || op == EW_OP_MUL) && catalogue_has(op, out_dtype, in_dtype);
        break;
    case 2:
        status = ew_cast_strided(h, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype, ndim, sh, (void *)out, s[0], a,
                                 s[1], NULL);
        in_catalogue = catalogue_has(op, out_dtype, in_dtype);
        break;
    default:
        status = ew_scale_add_strided(h, (ew_dtype_t)out_dtype, alpha, ndim, sh, (void *)out, s[0], a, s[1], b,
                                      s[2], NULL);
        in_catalogue = catalogue_has(op, out_dtype, in_dtype);
    }
    if (!check_common("strided call", h, in_catalogue, status))
        return;
    if (entry == 3 && !alpha_fits(out_dtype, alpha))
        CHECK(status == EW_ERROR_INVALID_VALUE, "strided scale_add: alpha %g, invalid but %s", alpha,
              ew_status_string(status));
    else
        check_views_status("strided call", &v, status);
}

/* The batched calls on fuzzed lists (count within the arrays, or negative). Beyond the common rules: a
 * negative count or entry size is refused; an empty list succeeds; a list with elements fails without
 * a GPU. */
static void action_batched(input_t *in)
{
    enum { MAX_ENTRIES = 6 };
    ew_handle_t h = take_handle(in);
    const unsigned entry = take8(in) % 4;
    int op = entry == 2 ? EW_OP_CAST : entry == 3 ? EW_OP_SCALE_ADD : take_enum_value(in);
    int out_dtype = take_enum_value(in), in_dtype = entry == 2 ? take_enum_value(in) : out_dtype;
    double alpha = entry == 3 ? take_alpha(in) : 0.0;
    const uint8_t c = take8(in);
    const int64_t count = c < 16 ? -(int64_t)c : c % (MAX_ENTRIES + 1);
    int64_t n[MAX_ENTRIES];
    const void *out[MAX_ENTRIES], *a[MAX_ENTRIES], *b[MAX_ENTRIES];
    int negative = 0, elements = 0;
    for (int i = 0; i < MAX_ENTRIES; ++i) {
        uint8_t k = take8(in);
        n[i] = k < 64 ? 0 : k < 200 ? k % 100 : take_n(in);
        out[i] = take_pointer(in, NULL);
        a[i] = take_pointer(in, out[i]);
        b[i] = take_pointer(in, out[i]);
        if (i < count) {
            negative |= n[i] < 0;
            elements |= n[i] > 0;
        }
    }
    void *const *outs = (void *const *)out;
    ew_status_t status;
    int in_catalogue;
    switch (entry) {
    case 0:
        status = ew_unary_batched(h, (ew_op_t)op, (ew_dtype_t)out_dtype, count, n, outs, a, NULL);
        in_catalogue = op == EW_OP_RELU && catalogue_has(op, out_dtype, in_dtype);
        break;
    case 1:
        status = ew_binary_batched(h, (ew_op_t)op, (ew_dtype_t)out_dtype, count, n, outs, a, b, NULL);
        in_catalogue = (op == EW_OP_ADD || op == EW_OP_MUL) && catalogue_has(op, out_dtype, in_dtype);
        break;
    case 2:
        status = ew_cast_batched(h, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype, count, n, outs, a, NULL);
        in_catalogue = catalogue_has(op, out_dtype, in_dtype);
        break;
    default:
        status = ew_scale_add_batched(h, (ew_dtype_t)out_dtype, alpha, count, n, outs, a, b, NULL);
        in_catalogue = catalogue_has(op, out_dtype, in_dtype);
    }
    if (!check_common("batched call", h, in_catalogue, status))
        return;
    if ((entry == 3 && !alpha_fits(out_dtype, alpha)) || count < 0 || negative) {
        CHECK(status == EW_ERROR_INVALID_VALUE, "batched call: count %lld, alpha %g, invalid but %s",
              (long long)count, alpha, ew_status_string(status));
        return;
    }
    if (count == 0)
        CHECK(status == EW_SUCCESS, "an empty list: %s (\"%s\")", ew_status_string(status),
              ew_get_last_error_message());
    else if (elements)
        CHECK(status == EW_ERROR_INVALID_VALUE || status == EW_ERROR_CUDA,
              "a list with elements without a GPU: %s (\"%s\")", ew_status_string(status),
              ew_get_last_error_message());
}

/* ---- user-defined kernels: slots, the set of live kernels, and their calls ---- */

enum { KERNEL_SLOTS = 4 };

/* A live kernel and what its launches check: its handle (which may be destroyed, or destroyed and
 * made again at the same address, while the kernel lives) and its spec. */
typedef struct {
    ew_kernel_t kernel;
    ew_handle_t handle;
    int out_dtype, n_inputs, n_params;
    int in_dtypes[EW_KERNEL_MAX_INPUTS];
} live_kernel_t;

/* NULL, live, or stale (destroyed; kernels' memory is kept for reuse, as handles' is). */
static ew_kernel_t kernel_slots[KERNEL_SLOTS];
static live_kernel_t live_kernels[MAX_LIVE];
static int live_kernel_count;

static const live_kernel_t *find_live_kernel(ew_kernel_t k)
{
    for (int i = 0; k != NULL && i < live_kernel_count; ++i)
        if (live_kernels[i].kernel == k)
            return &live_kernels[i];
    return NULL;
}

static void forget_live_kernel(ew_kernel_t k)
{
    for (int i = 0; i < live_kernel_count; ++i)
        if (live_kernels[i].kernel == k) {
            live_kernels[i] = live_kernels[--live_kernel_count];
            return;
        }
}

/* 0..KERNEL_SLOTS-1: that slot's kernel (NULL, live or stale); KERNEL_SLOTS: NULL. */
static ew_kernel_t take_kernel(input_t *in)
{
    unsigned k = take8(in) % (KERNEL_SLOTS + 1);
    return k < KERNEL_SLOTS ? kernel_slots[k] : NULL;
}

/* A count around [0, max]: -2 .. max + 1 from one byte, sometimes anything. */
static int take_count(input_t *in, int max)
{
    uint8_t b = take8(in);
    if (b < 240)
        return (int)(b % (max + 4)) - 2;
    return (int)take32(in);
}

/* NULL or a short constant body; never compiled here, so whether it would compile does not matter. */
static const char *take_source(input_t *in)
{
    static const char *const sources[] = {NULL, "return in0;", "", "return ew::scale_add(p0, in0, in1);",
                                          "} not code {"};
    return sources[take8(in) % (sizeof sources / sizeof sources[0])];
}

/* A fuzzed spec for ew_kernel_create and ewi_kernel_make. dtypes always has EW_KERNEL_MAX_INPUTS
 * entries, so whatever n_inputs the library accepts, it reads inside the array. */
static void take_spec(input_t *in, ewi_kernel_spec_t *spec, ew_dtype_t dtypes[EW_KERNEL_MAX_INPUTS])
{
    spec->source = take_source(in);
    spec->out_dtype = (ew_dtype_t)take_enum_value(in);
    spec->n_inputs = take_count(in, EW_KERNEL_MAX_INPUTS);
    const int dtypes_null = take8(in) < 32;
    for (int i = 0; i < EW_KERNEL_MAX_INPUTS; ++i)
        dtypes[i] = (ew_dtype_t)take_enum_value(in);
    spec->in_dtypes = dtypes_null ? NULL : dtypes;
    spec->n_params = take_count(in, EW_KERNEL_MAX_PARAMS);
}

/* The spec checks of ew_kernel_create and ewi_kernel_make, in their order: source, n_inputs,
 * in_dtypes, n_params (EW_ERROR_INVALID_VALUE), then out_dtype and in_dtypes[0 .. n_inputs-1]
 * (EW_ERROR_NOT_SUPPORTED). */
static ew_status_t spec_model(const ewi_kernel_spec_t *spec)
{
    if (spec->source == NULL || spec->n_inputs < 1 || spec->n_inputs > EW_KERNEL_MAX_INPUTS ||
        spec->in_dtypes == NULL || spec->n_params < 0 || spec->n_params > EW_KERNEL_MAX_PARAMS)
        return EW_ERROR_INVALID_VALUE;
    if (!dtype_valid((int)spec->out_dtype))
        return EW_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < spec->n_inputs; ++i)
        if (!dtype_valid((int)spec->in_dtypes[i]))
            return EW_ERROR_NOT_SUPPORTED;
    return EW_SUCCESS;
}

/* What every kernel call's status must satisfy: an ew_status_t, a message on failure, and nothing a
 * machine without a GPU cannot produce. */
static void check_kernel_status(const char *what, ew_status_t status)
{
    const char *message = ew_get_last_error_message();
    CHECK(message != NULL, "%s: NULL message", what);
    CHECK((unsigned)status <= EW_ERROR_OUT_OF_MEMORY, "%s returned %d", what, (int)status);
    if (status != EW_SUCCESS)
        CHECK(message[0] != '\0' && strlen(message) < 4096, "%s: %s without a message", what,
              ew_status_string(status));
    CHECK(status != EW_ERROR_DEVICE_MISMATCH && status != EW_ERROR_NO_DEVICE &&
              status != EW_ERROR_OUT_OF_MEMORY,
          "%s: %s (\"%s\")", what, ew_status_string(status), message);
    if (status == EW_ERROR_CUDA)
        CHECK(strstr(message, "cuda") != NULL, "%s: EW_ERROR_CUDA without the CUDA error's name: \"%s\"",
              what, message);
}

static void destroy_kernel_checked(ew_kernel_t k)
{
    int was_live = find_live_kernel(k) != NULL;
    ew_status_t status = ew_kernel_destroy(k);
    if (k == NULL || was_live)
        CHECK(status == EW_SUCCESS, "destroying a %s kernel: %s", k ? "live" : "NULL",
              ew_status_string(status));
    else
        CHECK(status == EW_ERROR_INVALID_HANDLE && ew_get_last_error_message()[0] != '\0',
              "destroying a destroyed kernel: %s", ew_status_string(status));
    forget_live_kernel(k);
}

/* ew_kernel_create: the output pointer, the handle, the spec, then the device, which is missing here,
 * so no call succeeds; the output is NULL after every failure. */
static void action_kernel_create(input_t *in)
{
    ew_handle_t h = take_handle(in);
    ewi_kernel_spec_t spec;
    ew_dtype_t dtypes[EW_KERNEL_MAX_INPUTS];
    take_spec(in, &spec, dtypes);
    const int output_null = take8(in) < 32;
    ew_kernel_t k = (ew_kernel_t)(uintptr_t)0x5A5A; /* must be overwritten with NULL */
    ew_status_t status = ew_kernel_create(h, spec.source, spec.out_dtype, spec.n_inputs, spec.in_dtypes,
                                          spec.n_params, output_null ? NULL : &k);
    check_kernel_status("ew_kernel_create", status);
    ew_status_t expected;
    if (output_null)
        expected = EW_ERROR_INVALID_VALUE;
    else if (find_live(h) == NULL)
        expected = EW_ERROR_INVALID_HANDLE;
    else if ((expected = spec_model(&spec)) == EW_SUCCESS)
        expected = EW_ERROR_CUDA; /* the device check */
    CHECK(status == expected,
          "ew_kernel_create(%p, source %s, out %d, n_inputs %d, in_dtypes %s, n_params %d, output %s): "
          "%s, not %s (\"%s\")",
          (void *)h, spec.source ? "set" : "NULL", (int)spec.out_dtype, spec.n_inputs,
          spec.in_dtypes ? "set" : "NULL", spec.n_params, output_null ? "NULL" : "set",
          ew_status_string(status), ew_status_string(expected), ew_get_last_error_message());
    if (!output_null)
        CHECK(k == NULL, "ew_kernel_create failed but left the output %p", (void *)k);
}

/* ewi_kernel_make into a slot: the handle and the spec are checked as by ew_kernel_create; otherwise a
 * live kernel without code. */
static void action_kernel_make(input_t *in)
{
    unsigned slot = take8(in) % KERNEL_SLOTS;
    if (find_live_kernel(kernel_slots[slot]) != NULL)
        destroy_kernel_checked(kernel_slots[slot]);
    if (live_kernel_count == MAX_LIVE)
        return;
    ew_handle_t h = take_handle(in);
    ewi_kernel_spec_t spec;
    ew_dtype_t dtypes[EW_KERNEL_MAX_INPUTS];
    take_spec(in, &spec, dtypes);
    ew_kernel_t k = NULL;
    ew_status_t status = ewi_kernel_make(h, &spec, &k);
    check_kernel_status("ewi_kernel_make", status);
    ew_status_t expected = find_live(h) == NULL ? EW_ERROR_INVALID_HANDLE : spec_model(&spec);
    CHECK(status == expected,
          "ewi_kernel_make(%p, source %s, out %d, n_inputs %d, in_dtypes %s, n_params %d): "
          "%s, not %s (\"%s\")",
          (void *)h, spec.source ? "set" : "NULL", (int)spec.out_dtype, spec.n_inputs,
          spec.in_dtypes ? "set" : "NULL", spec.n_params, ew_status_string(status),
          ew_status_string(expected), ew_get_last_error_message());
    if (status != EW_SUCCESS) {
        CHECK(k == NULL, "ewi_kernel_make failed but returned a kernel %p", (void *)k);
        return;
    }
    CHECK(k != NULL && find_live_kernel(k) == NULL, "ewi_kernel_make returned %p, NULL or still live",
          (void *)k);
    live_kernel_t *l = &live_kernels[live_kernel_count++];
    *l = (live_kernel_t){.kernel = k,
                         .handle = h,
                         .out_dtype = (int)spec.out_dtype,
                         .n_inputs = spec.n_inputs,
                         .n_params = spec.n_params};
    for (int i = 0; i < spec.n_inputs; ++i)
        l->in_dtypes[i] = (int)spec.in_dtypes[i];
    kernel_slots[slot] = k;
}

/* The params a launch passes (where not NULL). */
static const double kernel_params[EW_KERNEL_MAX_PARAMS] = {0.5, -1.0, 2.0, 0.0, 1e300, -0.0, 3.0, 4.0};

/* Whether k is live on a live handle; else checks that the launch said EW_ERROR_INVALID_HANDLE. */
static const live_kernel_t *launchable(ew_kernel_t k, const char *what, ew_status_t status)
{
    const live_kernel_t *l = find_live_kernel(k);
    if (l != NULL && find_live(l->handle) != NULL)
        return l;
    CHECK(status == EW_ERROR_INVALID_HANDLE, "%s of a %s: %s (\"%s\")", what,
          k == NULL   ? "NULL kernel"
          : l == NULL ? "destroyed kernel"
                      : "kernel of a destroyed handle",
          ew_status_string(status), ew_get_last_error_message());
    return NULL;
}

/* ew_kernel_launch_strided on fuzzed views: the kernel and its handle, then the views' rules (a NULL
 * inputs array reads as NULL pointers; NULL params are refused where the shape is not empty). */
static void action_kernel_launch_strided(input_t *in)
{
    ew_kernel_t k = take_kernel(in);
    views_t v;
    take_views(in, 1 + EW_KERNEL_MAX_INPUTS, &v);
    const void *out = take_pointer(in, NULL);
    const void *inputs[EW_KERNEL_MAX_INPUTS];
    for (int i = 0; i < EW_KERNEL_MAX_INPUTS; ++i)
        inputs[i] = take_pointer(in, out);
    const int inputs_null = take8(in) < 32, in_strides_null = take8(in) < 32, params_null = take8(in) < 64;
    ew_status_t status = ew_kernel_launch_strided(k, v.ndim, v.shape_null ? NULL : v.shape, (void *)out, v.s[0],
                                                  inputs_null ? NULL : inputs, in_strides_null ? NULL : v.s + 1,
                                                  params_null ? NULL : kernel_params, NULL);
    check_kernel_status("ew_kernel_launch_strided", status);
    const live_kernel_t *l = launchable(k, "ew_kernel_launch_strided", status);
    if (l == NULL)
        return;
    check_views_status("ew_kernel_launch_strided", &v, status); /* NULL params: refused, past an empty shape */
}

/* ew_kernel_launch: the kernel and its handle, n (0 succeeds with anything), the inputs and params
 * arrays, the operands as the flat calls check them, then the device, which is missing here. */
static void action_kernel_launch(input_t *in)
{
    ew_kernel_t k = take_kernel(in);
    int64_t n = take_n(in);
    const void *out = take_pointer(in, NULL);
    const int inputs_null = take8(in) < 32;
    const void *inputs[EW_KERNEL_MAX_INPUTS];
    for (int i = 0; i < EW_KERNEL_MAX_INPUTS; ++i)
        inputs[i] = take_pointer(in, out);
    const int params_null = take8(in) < 64;
    ew_stream_t stream = take_stream(in);
    ew_status_t status =
        ew_kernel_launch(k, n, (void *)out, inputs_null ? NULL : inputs, params_null ? NULL : kernel_params, stream);
    check_kernel_status("ew_kernel_launch", status);
    const char *message = ew_get_last_error_message();

    const live_kernel_t *l = launchable(k, "ew_kernel_launch", status);
    if (l == NULL)
        return;
    if (n < 0) {
        CHECK(status == EW_ERROR_INVALID_VALUE, "launch with n = %lld: %s", (long long)n,
              ew_status_string(status));
        return;
    }
    if (n == 0) {
        CHECK(status == EW_SUCCESS, "launch with n = 0: %s (\"%s\")", ew_status_string(status), message);
        return;
    }
    if (inputs_null || (params_null && l->n_params > 0)) {
        CHECK(status == EW_ERROR_INVALID_VALUE, "launch with inputs %s, params %s (n_params %d): %s",
              inputs_null ? "NULL" : "set", params_null ? "NULL" : "set", l->n_params,
              ew_status_string(status));
        return;
    }
    const void *pointers[MAX_OPERANDS] = {out};
    size_t sizes[MAX_OPERANDS] = {spec_size(l->out_dtype)};
    for (int i = 0; i < l->n_inputs; ++i) {
        pointers[1 + i] = inputs[i];
        sizes[1 + i] = spec_size(l->in_dtypes[i]);
    }
    verdict_t verdict = pointers_verdict(n, 1 + l->n_inputs, pointers, sizes);
    ew_status_t expected = verdict == INVALID ? EW_ERROR_INVALID_VALUE : EW_ERROR_CUDA; /* the device check */
    CHECK(status == expected || (verdict == EITHER && status == EW_ERROR_INVALID_VALUE),
          "launch, n %lld, out %p (dtype %d), inputs %p %p %p %p (%d of them): %s (\"%s\")", (long long)n,
          out, l->out_dtype, inputs[0], inputs[1], inputs[2], inputs[3], l->n_inputs,
          ew_status_string(status), message);
}

static void action_info(input_t *in)
{
    int op = take_enum_value(in), out = take_enum_value(in), dtype_in = take_enum_value(in);
    int supported = ew_is_supported((ew_op_t)op, (ew_dtype_t)out, (ew_dtype_t)dtype_in);
    CHECK(supported == catalogue_has(op, out, dtype_in), "ew_is_supported(%d, %d, %d) = %d", op, out,
          dtype_in, supported);
    const char *name = ew_dtype_name((ew_dtype_t)out);
    CHECK(name != NULL && name[0] != '\0', "ew_dtype_name(%d)", out);
    CHECK(ew_dtype_size((ew_dtype_t)out) == spec_size(out), "ew_dtype_size(%d) = %zu", out,
          ew_dtype_size((ew_dtype_t)out));
    const char *status_name = ew_status_string((ew_status_t)op);
    CHECK(status_name != NULL && status_name[0] != '\0', "ew_status_string(%d)", op);
    CHECK(ew_get_version() == EW_VERSION, "ew_get_version");
    CHECK(ew_get_last_error_message() != NULL, "ew_get_last_error_message");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error == cudaSuccess && count > 0) {
        fprintf(stderr,
                "fuzz_api: refusing to run: %d CUDA device(s) visible. The fuzzer passes fake pointers, "
                "which a GPU would dereference; run it on a machine without one.\n",
                count);
        exit(1);
    }
    (void)cudaGetLastError();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input_t in = {data, size, 0};
    for (int steps = 0; in.at < in.size && steps < 256; ++steps) {
        int action = take8(&in) % ACTIONS;
        switch (action) {
        case ACTION_MAKE: action_make(&in); break;
        case ACTION_DESTROY: destroy_checked(take_handle(&in)); break;
        case ACTION_CREATE: action_create(&in); break;
        case ACTION_GET: action_get(&in); break;
        case ACTION_INFO: action_info(&in); break;
        case ACTION_STRIDED: action_strided(&in); break;
        case ACTION_BATCHED: action_batched(&in); break;
        case ACTION_KERNEL_CREATE: action_kernel_create(&in); break;
        case ACTION_KERNEL_MAKE: action_kernel_make(&in); break;
        case ACTION_KERNEL_LAUNCH: action_kernel_launch(&in); break;
        case ACTION_KERNEL_LAUNCH_STRIDED: action_kernel_launch_strided(&in); break;
        case ACTION_KERNEL_DESTROY: destroy_kernel_checked(take_kernel(&in)); break;
        default: action_operation(&in, action);
        }
    }
    /* Leave no live kernel or handle behind: each input starts from the same state. */
    while (live_kernel_count > 0)
        destroy_kernel_checked(live_kernels[0].kernel);
    while (live_count > 0)
        destroy_checked(live[0].handle);
    memset(kernel_slots, 0, sizeof kernel_slots);
    memset(slots, 0, sizeof slots);
    return 0;
}
