/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the whole C API of libelementwise, on a machine WITHOUT a GPU.
 *
 * The input is a little program: each action byte picks an API call, the bytes after it its
 * arguments. Handles are valid ones made with the internal ewi_handle_make (no GPU needed), NULL,
 * or destroyed ones; op and dtype values, n, pointers (NULL, misaligned, overlapping, arbitrary
 * fake addresses), alpha and streams are arbitrary. User-defined kernels likewise: live ones made
 * without code by the internal ewi_user_kernel_make (of one output, or of outputs: several arrays, a
 * reduction), NULL or destroyed ones, on live or destroyed handles, and ew_kernel_create's arguments;
 * their flat, strided and list launches (ew_kernel_launch_batched). Every call must return one of the
 * ew_status_t values, with a non-empty message on failure, and the status must be the one the rules of
 * include/elementwise.h and docs/semantics.md give for those arguments: the operand rules of the
 * flat, strided and batched calls by the model tests/plan/layout_model.h (shared with
 * tests/plan/test_layout.c), the rest by the model below, the scaled casts' device scalars (scale, scale_inv,
 * amax and its mode) included, and the block-scaled casts (ew_block_scales_shape, ew_quantize_blocks,
 * ew_dequantize_blocks: judge_blocks). A refusal's message must name an argument the model finds at fault (a list's,
 * the entry and its argument). Any violation aborts, which libFuzzer reports as a crash.
 *
 * Validation and launch without a GPU: every call validates its arguments before it asks CUDA for
 * anything; a call that passes reaches the device check (ewi_handle_check_device: cudaGetDevice), which
 * fails here, so a valid call with elements returns EW_ERROR_CUDA with "cudaGetDevice failed" and a
 * refused one EW_ERROR_INVALID_VALUE: the verdict is exact. Two exceptions, both of the scaled casts: a
 * call without elements that overwrites an amax queues the amax's reset, so it too stops at CUDA; and
 * the scalars' overlaps with the operands are checked after the device, so they stop there
 * (judge_scaled). No pointer is ever dereferenced and no kernel source is ever compiled
 * (ew_kernel_create checks the device first; ew_kernel_cache_fill finds the disk cache off). With a GPU
 * present a call with fake pointers would launch a kernel on them, so LLVMFuzzerInitialize refuses to
 * run when any CUDA device is visible.
 *
 * At exit it prints each action's executions and the calls the models judged valid and refused; with
 * EW_FUZZ_EVERY_ACTION=1 (the ctest) it fails where an action never ran, or a judged action never had
 * a valid or never a refused call.
 *
 * Input format (fuzz/make_seeds.py writes seeds in it; the actions and enum ranges from the one table
 * fuzz/fuzz_table.h): missing bytes read as 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "elementwise.h"
#include "fuzz_table.h"
#include "abi/handle.h"
#include "abi/user_kernel.h"
#include "plan/layout_model.h"

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

enum { SLOTS = FUZZ_SLOTS, MAX_LIVE = 64 };

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

_Static_assert(FUZZ_ENUM_FIRST < EW_SUCCESS && FUZZ_ENUM_FIRST < EW_BOOL && FUZZ_ENUM_FIRST < EW_OP_ADD &&
                   FUZZ_ENUM_FIRST + FUZZ_ENUM_SPAN - 1 > FUZZ_LAST_STATUS &&
                   FUZZ_ENUM_FIRST + FUZZ_ENUM_SPAN - 1 > FUZZ_LAST_DTYPE &&
                   FUZZ_ENUM_FIRST + FUZZ_ENUM_SPAN - 1 > FUZZ_LAST_OP &&
                   FUZZ_ENUM_FIRST + FUZZ_ENUM_SPAN - 1 > FUZZ_LAST_BLOCK_FORMAT,
               "one enum byte reaches every value of the enums and a neighbour on each side");

static int take_enum_value(input_t *in)
{
    uint8_t b = take8(in);
    if (b < FUZZ_ENUM_WIDE)
        return FUZZ_ENUM_FIRST + b % FUZZ_ENUM_SPAN;
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
#define ALPHA_ENTRY(value) value,
    static const double table[] = {FUZZ_ALPHAS(ALPHA_ENTRY)};
#undef ALPHA_ENTRY
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

/* ---- the actions, their executions and the calls judged ---- */

enum {
#define ACTION_ENUM(name) ACTION_##name,
    FUZZ_ACTIONS(ACTION_ENUM)
#undef ACTION_ENUM
        ACTIONS
};

static const char *const action_names[ACTIONS] = {
#define ACTION_NAME(name) #name,
    FUZZ_ACTIONS(ACTION_NAME)
#undef ACTION_NAME
};

/* The actions whose calls a model judges valid or refused: each must see both in a run. */
static const unsigned judged_actions =
    1u << ACTION_UNARY | 1u << ACTION_BINARY | 1u << ACTION_CAST | 1u << ACTION_SCALE_ADD |
    1u << ACTION_STRIDED | 1u << ACTION_BATCHED | 1u << ACTION_KERNEL_LAUNCH |
    1u << ACTION_KERNEL_LAUNCH_STRIDED | 1u << ACTION_QUANTIZE | 1u << ACTION_QUANTIZE_STRIDED |
    1u << ACTION_DEQUANTIZE | 1u << ACTION_DEQUANTIZE_STRIDED | 1u << ACTION_AMAX |
    1u << ACTION_BLOCK_SCALES_SHAPE | 1u << ACTION_QUANTIZE_BLOCKS | 1u << ACTION_DEQUANTIZE_BLOCKS |
    1u << ACTION_KERNEL_LAUNCH_BATCHED | 1u << ACTION_KERNEL_LAUNCH_OUTPUTS | 1u << ACTION_SCALED_BATCHED;
_Static_assert(ACTIONS <= 32, "judged_actions has a bit for every action");

static unsigned long long runs[ACTIONS], judged_valid[ACTIONS], judged_refused[ACTIONS];
static int current_action;

/* ---- the model: what the rules say a call must return ---- */

static int dtype_valid(int d) { return d >= EW_BOOL && d <= FUZZ_LAST_DTYPE; }
static int is_fp8(int d) { return d == EW_F8E4M3 || d == EW_F8E5M2; }
static int is_float(int d) { return d == EW_F16 || d == EW_BF16 || d == EW_F32 || d == EW_F64; } /* not fp8 */
/* The block dtype e2m1 (since 1.2) belongs to the block-scaled casts alone: no op, no user kernel takes
 * it. e8m0, their scales, is a dtype of the cast and of user kernels too. */
static int is_block_dtype(int d) { return d == EW_F4E2M1; }
/* The 1-byte floats: the cast takes them, add, mul, relu and scale_add do not. */
static int cast_only(int d) { return is_fp8(d) || d == EW_F8E8M0; }
static int op_dtype_valid(int d) { return dtype_valid(d) && !is_block_dtype(d); }
static size_t spec_size(int d)
{
    static const size_t sizes[] = {0, 1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 1, 1, 1, 0}; /* e2m1: under a byte */
    _Static_assert(sizeof sizes / sizeof sizes[0] == FUZZ_LAST_DTYPE + 1, "a size for every dtype");
    return dtype_valid(d) ? sizes[d] : 0;
}
static size_t spec_bits(int d) { return d == EW_F4E2M1 ? 4 : 8 * spec_size(d); }

/* The catalogue of docs/semantics.md, written out independently of the dispatch table. */
static int catalogue_has(int op, int out, int in)
{
    if (!op_dtype_valid(out) || !op_dtype_valid(in))
        return 0;
    switch (op) {
    case EW_OP_CAST: return 1;
    case EW_OP_ADD:
    case EW_OP_MUL:
    case EW_OP_SCALE_ADD: return out == in && !cast_only(out);
    case EW_OP_RELU: return out == in && !cast_only(out) && out != EW_BOOL;
    case EW_OP_QUANTIZE: return is_fp8(out) && is_float(in);
    case EW_OP_DEQUANTIZE: return is_float(out) && is_fp8(in);
    case EW_OP_AMAX: return out == in && is_float(out);
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

/* The operands of a call: a kernel's arrays and inputs at most. */
enum { MAX_OPERANDS = EW_KERNEL_MAX_OUTPUTS + EW_KERNEL_MAX_INPUTS };
_Static_assert(EW_KERNEL_MAX_INPUTS == EWI_KERNEL_MAX_INPUTS && EW_KERNEL_MAX_PARAMS == EWI_KERNEL_MAX_PARAMS,
               "the public and internal kernel limits agree");
_Static_assert(MAX_OPERANDS <= MODEL_MAX_OPERANDS, "the model takes every operand of a kernel");

/* The names a verdict allows a message to start with, for failure reports. */
static const char *verdict_names(const model_verdict_t *v)
{
    static char text[256];
    text[0] = '\0';
    for (int i = 0; i < v->names; ++i)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", i ? ", " : "", v->name[i]);
    return text;
}

/* A call the model judged, past the handle and op checks: a valid one with nothing to do succeeds, a
 * valid one with elements stops at the device check (EW_ERROR_CUDA from cudaGetDevice, as no GPU is
 * here), a refused one is EW_ERROR_INVALID_VALUE with a message naming an argument at fault. */
static void expect_verdict(const char *what, const model_verdict_t *v, int nothing_to_do, ew_status_t status)
{
    const char *message = ew_get_last_error_message();
    if (v->valid && nothing_to_do) {
        CHECK(status == EW_SUCCESS, "%s with nothing to do: %s (\"%s\")", what, ew_status_string(status), message);
    } else if (v->valid) {
        CHECK(status == EW_ERROR_CUDA && strncmp(message, "cudaGetDevice failed", 20) == 0,
              "%s: valid, so stopped at the device check, but %s (\"%s\")", what, ew_status_string(status), message);
    } else {
        CHECK(status == EW_ERROR_INVALID_VALUE, "%s: refused by the model (%s) but %s (\"%s\")", what,
              verdict_names(v), ew_status_string(status), message);
        CHECK(model_message_names(v, message), "%s: the message \"%s\" names none of the arguments at fault: %s",
              what, message, verdict_names(v));
    }
    ++(v->valid ? judged_valid : judged_refused)[current_action];
}

/* A refusal the harness knows without the operand model (n, alpha, count, ...): the status, and the
 * message starting with the argument's name. */
static void expect_refusal(const char *what, const char *argument, ew_status_t status)
{
    model_verdict_t v = {.valid = 1};
    model_refuse(&v, argument);
    expect_verdict(what, &v, 0, status);
}

/* Flat operands as the model takes them. */
static model_verdict_t flat_verdict(int64_t n, int count, const char *const names[], const void *const pointers[],
                                    const size_t sizes[])
{
    model_operand_t operands[MAX_OPERANDS];
    for (int i = 0; i < count; ++i)
        operands[i] = (model_operand_t){names[i], NULL, (uintptr_t)pointers[i], NULL, sizes[i]};
    return model_flat(n, count, operands);
}

/* Whether a message names CUDA: a runtime call or error ("cudaGetDevice", "cudaError..."), a driver error
 * ("CUDA_ERROR_...") or a driver entry point ("cuMemsetD32Async", which a call without elements reaches
 * first when it resets an amax). */
static int names_cuda(const char *message)
{
    if (strstr(message, "cuda") != NULL || strstr(message, "CUDA_") != NULL)
        return 1;
    for (const char *p = strstr(message, "cu"); p != NULL; p = strstr(p + 1, "cu"))
        if ((p == message || p[-1] == ' ') && p[2] >= 'A' && p[2] <= 'Z')
            return 1;
    return 0;
}

/* What every call's status must satisfy whatever its arguments: an ew_status_t, a message on failure,
 * and nothing a machine without a GPU cannot produce (no device mismatch, no device to be missing at
 * call time, no allocation; EW_ERROR_CUDA names CUDA's call or error). */
static void check_status(const char *what, ew_status_t status)
{
    const char *message = ew_get_last_error_message();
    CHECK(message != NULL, "%s: NULL message", what);
    CHECK((unsigned)status <= FUZZ_LAST_STATUS, "%s returned %d, not an ew_status_t", what, (int)status);
    if (status != EW_SUCCESS)
        CHECK(message[0] != '\0' && strlen(message) < 4096, "%s: %s with message \"%s\"", what,
              ew_status_string(status), message);
    CHECK(status != EW_ERROR_DEVICE_MISMATCH && status != EW_ERROR_NO_DEVICE &&
              status != EW_ERROR_OUT_OF_MEMORY,
          "%s: %s (\"%s\")", what, ew_status_string(status), message);
    if (status == EW_ERROR_CUDA)
        CHECK(names_cuda(message), "%s: EW_ERROR_CUDA without the CUDA call's or error's name: \"%s\"", what,
              message);
}

/* Checks one operation call's status against the model. entry: 0 unary, 1 binary, 2 cast, 3 scale_add. */
static void check_operation(int entry, ew_handle_t h, int op, int out_dtype, int in_dtype, int64_t n,
                            double alpha, int count, const void *const pointers[], ew_status_t status)
{
    static const char *const entry_names[] = {"ew_unary", "ew_binary", "ew_cast", "ew_scale_add"};
    check_status(entry_names[entry], status);
    const char *message = ew_get_last_error_message();

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

    /* then n, then alpha (checked even at n == 0), then the operands */
    if (n < 0) {
        expect_refusal("a flat call", "n", status);
        return;
    }
    if (entry == 3 && !alpha_fits(out_dtype, alpha)) {
        expect_refusal("flat scale_add", "alpha", status);
        return;
    }
    static const char *const names[][3] = {{"out", "x"}, {"out", "a", "b"}, {"out", "x"}, {"out", "a", "b"}};
    const size_t sizes[3] = {spec_size(out_dtype), spec_size(in_dtype), spec_size(in_dtype)};
    const model_verdict_t verdict = flat_verdict(n, count, names[entry], pointers, sizes);
    expect_verdict("a flat call", &verdict, n == 0, status);
}

/* ---- actions ---- */

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

/* check_status, and the handle and catalogue rules the strided and batched calls share with the flat
 * ones. Returns 1 where the call got past them. */
static int check_common(const char *what, ew_handle_t h, int in_catalogue, ew_status_t status)
{
    check_status(what, status);
    const char *message = ew_get_last_error_message();
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
 * NULL, the shape or NULL. */
typedef struct {
    int ndim, shape_null;
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
        for (int k = 0; k < count; ++k)
            v->strides[k][d] = take_stride(in);
    }
    v->shape_null = v->ndim > 0 && take8(in) < 16;
    const uint8_t null_strides = take8(in);
    for (int k = 0; k < count; ++k)
        v->s[k] = (null_strides >> k & 1) ? NULL : v->strides[k];
}

/* Accepted layouts of at most this many elements are enumerated (model_elements_apart). */
enum { BRUTE_FORCE_ELEMENTS = 4096 };

/* A strided call past its handle (or kernel), op and alpha: the views by the model, exactly; where
 * they are valid and not empty, then NULL params of a kernel that takes some (params_missing). An
 * accepted layout's elements are enumerated where they are few: no two of out's share a byte, no
 * input's meets one of out's but in place. */
static model_verdict_t views_verdict(const views_t *v, int count, unsigned outputs, const model_operand_t *operands,
                                     int params_missing)
{
    const int64_t *shape = v->shape_null ? NULL : v->shape;
    model_verdict_t verdict = model_views(v->ndim, shape, count, outputs, operands);
    if (verdict.valid && verdict.n > 0 && params_missing)
        model_refuse(&verdict, "params");
    return verdict;
}

static void judge_views(const char *what, const views_t *v, int count, const model_operand_t *operands,
                        int params_missing, ew_status_t status)
{
    const int64_t *shape = v->shape_null ? NULL : v->shape;
    model_verdict_t verdict = views_verdict(v, count, 1u, operands, params_missing);
    expect_verdict(what, &verdict, verdict.valid && verdict.n == 0, status);
    if (verdict.valid && verdict.n > 0 && verdict.n <= BRUTE_FORCE_ELEMENTS)
        CHECK(model_elements_apart(v->ndim, shape, count, 1u, operands, verdict.n),
              "%s: accepted a layout (ndim %d) in which an out element meets another or an input's", what,
              v->ndim);
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
    if (entry == 3 && !alpha_fits(out_dtype, alpha)) {
        expect_refusal("strided scale_add", "alpha", status);
        return;
    }
    static const char *const names[][2][3] = {{{"out", "x"}, {"out_strides", "x_strides"}},
                                              {{"out", "a", "b"}, {"out_strides", "a_strides", "b_strides"}},
                                              {{"out", "x"}, {"out_strides", "x_strides"}},
                                              {{"out", "a", "b"}, {"out_strides", "a_strides", "b_strides"}}};
    const void *const pointers[3] = {out, a, b};
    const size_t sizes[3] = {spec_size(out_dtype), spec_size(in_dtype), spec_size(in_dtype)};
    const int count = entry == 0 || entry == 2 ? 2 : 3;
    model_operand_t operands[3];
    for (int k = 0; k < count; ++k)
        operands[k] = (model_operand_t){names[entry][0][k], names[entry][1][k], (uintptr_t)pointers[k], s[k], sizes[k]};
    judge_views("a strided call", &v, count, operands, 0, status);
}

/* A list of count >= 0 entries past its arrays' checks, each entry's verdict by the flat rules (n[i] < 0:
 * refused, about "n"): a list of valid entries succeeds where none has elements and nothing is reset
 * (resets: a user kernel's overwritten scalars, an empty entry's too), and stops at the device check
 * where one has or something is; a list with a bad entry is refused with a message "entry i: " naming a
 * bad entry and an argument at fault in it. */
static void judge_entries(const char *what, int64_t count, const int64_t n[], const model_verdict_t entries[],
                          int resets, ew_status_t status)
{
    int valid = 1, elements = resets && count > 0;
    for (int64_t i = 0; i < count; ++i) {
        valid &= entries[i].valid;
        elements |= entries[i].valid && n[i] > 0;
    }
    const char *message = ew_get_last_error_message();
    if (valid) {
        const model_verdict_t list = {.valid = 1};
        expect_verdict(what, &list, !elements, status);
        return;
    }
    long long bad = -1;
    int at = 0;
    CHECK(status == EW_ERROR_INVALID_VALUE && sscanf(message, "entry %lld: %n", &bad, &at) == 1 && at > 0,
          "%s: a list with a bad entry: %s (\"%s\")", what, ew_status_string(status), message);
    CHECK(bad >= 0 && bad < count && !entries[bad].valid,
          "%s: a list's refusal names entry %lld, not a bad one: \"%s\"", what, bad, message);
    CHECK(model_message_names(&entries[bad], message + at),
          "%s: a list's refusal of entry %lld names none of its arguments at fault (%s): \"%s\"", what, bad,
          verdict_names(&entries[bad]), message);
    ++judged_refused[current_action];
}

/* The batched calls on fuzzed lists: count within the arrays, or negative; sometimes one array NULL.
 * Beyond the common rules, in the library's order: scale_add's alpha (even for an empty list), count,
 * the arrays, then entry by entry the flat call's rules (the model), a bad entry refused with a message
 * "entry i: " and an argument at fault in that entry; an empty list, or one without elements,
 * succeeds; a list of valid entries with elements stops at the device check. */
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
    const uint8_t array_byte = take8(in);
    const int null_array = array_byte >= 224 ? array_byte % 4 : -1; /* n, out, then the inputs' arrays */
    int64_t n[MAX_ENTRIES];
    const void *out[MAX_ENTRIES], *a[MAX_ENTRIES], *b[MAX_ENTRIES];
    for (int i = 0; i < MAX_ENTRIES; ++i) {
        uint8_t k = take8(in);
        n[i] = k < 64 ? 0 : k < 200 ? k % 100 : take_n(in);
        out[i] = take_pointer(in, NULL);
        a[i] = take_pointer(in, out[i]);
        b[i] = take_pointer(in, out[i]);
    }
    const int64_t *ns = null_array == 0 ? NULL : n;
    void *const *outs = null_array == 1 ? NULL : (void *const *)out;
    const void *const *as = null_array == 2 ? NULL : a, *const *bs = null_array == 3 ? NULL : b;
    ew_status_t status;
    int in_catalogue;
    switch (entry) {
    case 0:
        status = ew_unary_batched(h, (ew_op_t)op, (ew_dtype_t)out_dtype, count, ns, outs, as, NULL);
        in_catalogue = op == EW_OP_RELU && catalogue_has(op, out_dtype, in_dtype);
        break;
    case 1:
        status = ew_binary_batched(h, (ew_op_t)op, (ew_dtype_t)out_dtype, count, ns, outs, as, bs, NULL);
        in_catalogue = (op == EW_OP_ADD || op == EW_OP_MUL) && catalogue_has(op, out_dtype, in_dtype);
        break;
    case 2:
        status = ew_cast_batched(h, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype, count, ns, outs, as, NULL);
        in_catalogue = catalogue_has(op, out_dtype, in_dtype);
        break;
    default:
        status = ew_scale_add_batched(h, (ew_dtype_t)out_dtype, alpha, count, ns, outs, as, bs, NULL);
        in_catalogue = catalogue_has(op, out_dtype, in_dtype);
    }
    if (!check_common("batched call", h, in_catalogue, status))
        return;
    static const char *const names[][3] = {{"out", "x"}, {"out", "a", "b"}, {"out", "x"}, {"out", "a", "b"}};
    const int pointers = entry == 0 || entry == 2 ? 2 : 3;
    if (entry == 3 && !alpha_fits(out_dtype, alpha)) {
        expect_refusal("batched scale_add", "alpha", status);
        return;
    }
    if (count < 0) {
        expect_refusal("a batched call", "count", status);
        return;
    }
    if (count > 0 && null_array >= 0 && null_array <= pointers) {
        expect_refusal("a batched call", null_array == 0 ? "n" : names[entry][null_array - 1], status);
        return;
    }

    /* entry by entry */
    const size_t sizes[3] = {spec_size(out_dtype), spec_size(in_dtype), spec_size(in_dtype)};
    model_verdict_t entries[MAX_ENTRIES];
    for (int64_t i = 0; i < count; ++i) {
        if (n[i] < 0) {
            entries[i] = (model_verdict_t){.valid = 1};
            model_refuse(&entries[i], "n");
        } else {
            const void *const entry_pointers[3] = {out[i], a[i], b[i]};
            entries[i] = flat_verdict(n[i], pointers, names[entry], entry_pointers, sizes);
        }
    }
    judge_entries("a batched call", count, n, entries, 0, status);
}

/* ---- the scaled casts: quantize, dequantize, amax ---- */

enum { SCALED_QUANTIZE, SCALED_DEQUANTIZE, SCALED_AMAX };

/* A device float of the scaled calls: NULL, inside out or x (any alignment), another scalar (the amax
 * on the scale), anything at all, or in region 3 of take_pointer, at any alignment or aligned to 4 past
 * the operands' first 64 KiB there. */
static const float *take_scalar(input_t *in, const void *out, const void *x, const float *other)
{
    const uintptr_t region = (uintptr_t)0x7f0000000000ull + 3 * 0x100000u;
    const uint8_t b = take8(in);
    switch (b % 8) {
    case 0: return NULL;
    case 1: return out == NULL ? NULL : (const float *)((uintptr_t)out + (take32(in) & 0xFFFu));
    case 2: return x == NULL ? NULL : (const float *)((uintptr_t)x + (take32(in) & 0xFFFu));
    case 3: return other;
    case 4: return (const float *)(uintptr_t)take64(in);
    case 5: return (const float *)(region + (take32(in) & 0xFFFFu));
    default: return (const float *)(region + 0x10000u + 4u * take8(in));
    }
}

/* An ew_reduce_mode_t: its values and a neighbour on each side from one byte, sometimes anything. */
static int take_mode(input_t *in)
{
    const uint8_t b = take8(in);
    return b < 240 ? (int)(b % (FUZZ_LAST_REDUCE_MODE + 3)) - 1 : (int)take32(in);
}

/* One scaled call: its kind, dtypes, elements (n, or the views of a _strided form), operands (ew_amax: x
 * alone) and scalars. */
typedef struct {
    int kind, out_dtype, in_dtype;
    const views_t *views; /* NULL: the flat form, of n elements */
    int64_t n;
    const void *out, *x;
    const float *scale, *amax;
    int mode;
} scaled_call_t;

/* Whether the 4 bytes at p meet [lo, hi), in 128 bits (no wrap at the top of the address space). */
static int scalar_meets(const float *p, model_int lo, model_int hi)
{
    const model_int at = (uintptr_t)p;
    return p != NULL && at < hi && lo < at + 4;
}

/* The bytes an operand spans: n elements from its address, or its view's [lo, hi) over a valid,
 * non-empty shape. */
static void span_of(const views_t *views, const model_operand_t *p, int64_t n, model_int *lo, model_int *hi)
{
    if (views == NULL) {
        *lo = p->address;
        *hi = (model_int)p->address + (model_int)n * (model_int)p->size;
        return;
    }
    int64_t strides[EW_MAX_DIMS];
    model_strides(views->ndim, views->shape, p, strides);
    model_int below = 0, above = 0;
    for (int d = 0; d < views->ndim; ++d) {
        const model_int reach = (model_int)strides[d] * (views->shape[d] - 1);
        *(reach < 0 ? &below : &above) += reach;
    }
    *lo = (model_int)p->address + below * (model_int)p->size;
    *hi = (model_int)p->address + (above + 1) * (model_int)p->size;
}

/* The message names `word` as a whole word. */
static int message_has_word(const char *message, const char *word)
{
    const size_t length = strlen(word);
    for (const char *p = strstr(message, word); p; p = strstr(p + 1, word)) {
        const char before = p == message ? ' ' : p[-1], after = p[length];
        if (!(before == '_' || (before >= 'a' && before <= 'z')) &&
            !(after == '_' || (after >= 'a' && after <= 'z')))
            return 1;
    }
    return 0;
}

/* A scaled call's status by the rules of include/elementwise.h ("Scaled low-precision casts"): the handle,
 * the dtype pair, then every refusal the model finds (amax_mode where amax is given; the scale non-NULL and
 * aligned to 4; amax aligned to 4, and non-NULL for ew_amax; n or the views; the operands), a message
 * naming one of them. A valid call without elements succeeds, but for an overwritten amax, which is set
 * to 0 on the stream and so stops at the GPU (none here) with EW_ERROR_CUDA; a valid call with elements
 * stops at the device check. The scalars' overlaps come last (see below). */
static void judge_scaled(const char *what, const scaled_call_t *c, ew_handle_t h, ew_status_t status)
{
    static const int ops[] = {EW_OP_QUANTIZE, EW_OP_DEQUANTIZE, EW_OP_AMAX};
    if (!check_common(what, h, catalogue_has(ops[c->kind], c->out_dtype, c->in_dtype), status))
        return;
    const char *message = ew_get_last_error_message();
    const char *scale_name = c->kind == SCALED_DEQUANTIZE ? "scale_inv" : "scale";
    model_verdict_t verdict = {.valid = 1};
    if (c->amax != NULL && c->mode != EW_REDUCE_OVERWRITE && c->mode != EW_REDUCE_ACCUMULATE)
        model_refuse(&verdict, "amax_mode");
    if (c->kind != SCALED_AMAX && (c->scale == NULL || (uintptr_t)c->scale % 4 != 0))
        model_refuse(&verdict, scale_name);
    if ((c->kind == SCALED_AMAX && c->amax == NULL) || (uintptr_t)c->amax % 4 != 0)
        model_refuse(&verdict, "amax");

    /* ew_amax takes x in out's place (the same pointer and size: in place); its views are never used */
    const int amax_only = c->kind == SCALED_AMAX;
    const views_t *v = c->views;
    const model_operand_t operands[2] = {
        {amax_only ? "x" : "out", "out_strides", (uintptr_t)(amax_only ? c->x : c->out), v ? v->s[0] : NULL,
         spec_size(amax_only ? c->in_dtype : c->out_dtype)},
        {c->kind == SCALED_DEQUANTIZE ? "q" : "x", c->kind == SCALED_DEQUANTIZE ? "q_strides" : "x_strides",
         (uintptr_t)c->x, v ? v->s[1] : NULL, spec_size(c->in_dtype)}};
    model_verdict_t layout = {.valid = 1, .n = c->n};
    if (v != NULL)
        layout = model_views(v->ndim, v->shape_null ? NULL : v->shape, 2, 1u, operands);
    else if (c->n < 0)
        model_refuse(&layout, "n");
    else
        layout = model_flat(c->n, 2, operands);
    for (int i = 0; i < layout.names; ++i)
        model_refuse(&verdict, layout.name[i]);
    if (!verdict.valid) {
        expect_verdict(what, &verdict, 0, status);
        return;
    }
    if (layout.n == 0) {
        if (c->amax != NULL && c->mode == EW_REDUCE_OVERWRITE) {
            CHECK(status == EW_ERROR_CUDA,
                  "%s: nothing to run but the amax's reset, which stops at the GPU: %s (\"%s\")", what,
                  ew_status_string(status), message);
            ++judged_valid[current_action];
        } else {
            expect_verdict(what, &verdict, 1, status);
        }
        return;
    }

    /* Neither scalar inside out, the amax inside no input and not on the scale: refused before the
     * device check, the message naming the scale or the amax. */
    model_int lo[2], hi[2];
    for (int k = 0; k < 2; ++k)
        span_of(c->views, &operands[k], layout.n, &lo[k], &hi[k]);
    int overlap = !amax_only && scalar_meets(c->scale, lo[0], hi[0]);
    for (int k = 0; k < 2; ++k)
        overlap |= scalar_meets(c->amax, lo[k], hi[k]);
    overlap |= c->amax != NULL && c->amax == c->scale;
    if (overlap) {
        CHECK(status == EW_ERROR_INVALID_VALUE &&
                  (message_has_word(message, "scale") || message_has_word(message, scale_name) ||
                   message_has_word(message, "amax")),
              "%s: a scalar overlaps an operand: %s (\"%s\"), not a refusal naming the scalar", what,
              ew_status_string(status), message);
        ++judged_refused[current_action];
        return;
    }
    expect_verdict(what, &verdict, 0, status);
}

/* ew_quantize or ew_quantize_strided on fuzzed dtypes, n or views, operands, scalars and mode. */
static void action_quantize(input_t *in, int strided)
{
    ew_handle_t h = take_handle(in);
    scaled_call_t c = {
        .kind = SCALED_QUANTIZE, .out_dtype = take_enum_value(in), .in_dtype = take_enum_value(in)};
    views_t v;
    if (strided) {
        take_views(in, 2, &v);
        c.views = &v;
    } else {
        c.n = take_n(in);
    }
    c.out = take_pointer(in, NULL);
    c.x = take_pointer(in, c.out);
    c.scale = take_scalar(in, c.out, c.x, NULL);
    c.amax = take_scalar(in, c.out, c.x, c.scale);
    c.mode = take_mode(in);
    ew_status_t status;
    if (strided)
        status = ew_quantize_strided(h, (ew_dtype_t)c.out_dtype, (ew_dtype_t)c.in_dtype, v.ndim,
                                     v.shape_null ? NULL : v.shape, (void *)c.out, v.s[0], c.x, v.s[1],
                                     c.scale, (float *)c.amax, (ew_reduce_mode_t)c.mode, NULL);
    else
        status = ew_quantize(h, (ew_dtype_t)c.out_dtype, (ew_dtype_t)c.in_dtype, c.n, (void *)c.out, c.x,
                             c.scale, (float *)c.amax, (ew_reduce_mode_t)c.mode, take_stream(in));
    judge_scaled(strided ? "ew_quantize_strided" : "ew_quantize", &c, h, status);
}

/* ew_dequantize or ew_dequantize_strided. */
static void action_dequantize(input_t *in, int strided)
{
    ew_handle_t h = take_handle(in);
    scaled_call_t c = {
        .kind = SCALED_DEQUANTIZE, .out_dtype = take_enum_value(in), .in_dtype = take_enum_value(in)};
    views_t v;
    if (strided) {
        take_views(in, 2, &v);
        c.views = &v;
    } else {
        c.n = take_n(in);
    }
    c.out = take_pointer(in, NULL);
    c.x = take_pointer(in, c.out);
    c.scale = take_scalar(in, c.out, c.x, NULL);
    ew_status_t status;
    if (strided)
        status = ew_dequantize_strided(h, (ew_dtype_t)c.out_dtype, (ew_dtype_t)c.in_dtype, v.ndim,
                                       v.shape_null ? NULL : v.shape, (void *)c.out, v.s[0], c.x, v.s[1],
                                       c.scale, NULL);
    else
        status = ew_dequantize(h, (ew_dtype_t)c.out_dtype, (ew_dtype_t)c.in_dtype, c.n, (void *)c.out, c.x,
                               c.scale, take_stream(in));
    judge_scaled(strided ? "ew_dequantize_strided" : "ew_dequantize", &c, h, status);
}

/* ew_amax: x, its amax (on or inside x at times) and the mode. */
static void action_amax(input_t *in)
{
    ew_handle_t h = take_handle(in);
    const int dtype = take_enum_value(in);
    scaled_call_t c = {.kind = SCALED_AMAX, .out_dtype = dtype, .in_dtype = dtype, .n = take_n(in)};
    c.x = take_pointer(in, NULL);
    c.amax = take_scalar(in, c.x, c.x, NULL);
    c.mode = take_mode(in);
    const ew_status_t status =
        ew_amax(h, (ew_dtype_t)dtype, c.n, c.x, (float *)c.amax, (ew_reduce_mode_t)c.mode, take_stream(in));
    judge_scaled("ew_amax", &c, h, status);
}

/* The scaled casts' lists (ew_quantize_batched, ew_dequantize_batched, ew_amax_batched): fuzzed dtypes,
 * count, arrays and entries as action_batched's, the scales' array (count floats: NULL, misaligned, inside
 * entry 0's operands, past the address space's end) and the amax scalars (none, each entry's own, one
 * shared; NULL, misaligned or on an operand at times). In the library's order: the handle and the pair,
 * the mode (where an amax is given), the scales' NULL, count, the arrays, the scales' alignment and
 * span, then entry by entry (judge_entries): the flat rules, its scale outside its out, its amax
 * non-NULL, aligned, and outside its operands and its scale. */
static void action_scaled_batched(input_t *in)
{
    enum { MAX_ENTRIES = 6 };
    static const int ops[] = {EW_OP_QUANTIZE, EW_OP_DEQUANTIZE, EW_OP_AMAX};
    static const char *const whats[] = {"ew_quantize_batched", "ew_dequantize_batched", "ew_amax_batched"};
    ew_handle_t h = take_handle(in);
    const int kind = take8(in) % 3, amax_only = kind == SCALED_AMAX;
    const int out_dtype = take_enum_value(in), in_dtype = amax_only ? out_dtype : take_enum_value(in);
    const uint8_t c = take8(in);
    const int64_t count = c < 16 ? -(int64_t)c : c % (MAX_ENTRIES + 1);
    const uint8_t array_byte = take8(in);
    const int null_array = array_byte >= 224 ? array_byte % 4 : -1; /* n, out, x, amax */
    int64_t n[MAX_ENTRIES];
    const void *out[MAX_ENTRIES], *x[MAX_ENTRIES];
    const float *amax[MAX_ENTRIES];
    for (int i = 0; i < MAX_ENTRIES; ++i) {
        const uint8_t k = take8(in);
        n[i] = k < 64 ? 0 : k < 200 ? k % 100 : take_n(in);
        out[i] = take_pointer(in, NULL);
        x[i] = take_pointer(in, out[i]);
    }
    const float *scale = take_scalar(in, out[0], x[0], NULL);
    const int sharing = take8(in) % 3; /* each entry's own amax, one shared, none */
    for (int i = 0; i < MAX_ENTRIES; ++i)
        amax[i] = sharing == 1 && i > 0
                      ? amax[0]
                      : take_scalar(in, out[i], x[i], (const float *)((uintptr_t)scale + 4u * i));
    const int mode = take_mode(in);
    const int64_t *ns = null_array == 0 ? NULL : n;
    void *const *outs = null_array == 1 ? NULL : (void *const *)out;
    const void *const *xs = null_array == 2 ? NULL : x;
    float *const *amaxs = sharing == 2 || null_array == 3 ? NULL : (float *const *)amax;
    ew_status_t status;
    switch (kind) {
    case SCALED_QUANTIZE:
        status = ew_quantize_batched(h, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype, count, ns, outs, xs,
                                     scale, amaxs, (ew_reduce_mode_t)mode, NULL);
        break;
    case SCALED_DEQUANTIZE:
        amaxs = NULL;
        status = ew_dequantize_batched(h, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype, count, ns, outs, xs,
                                       scale, NULL);
        break;
    default:
        status = ew_amax_batched(h, (ew_dtype_t)in_dtype, count, ns, xs, amaxs, (ew_reduce_mode_t)mode, NULL);
    }
    const char *what = whats[kind];
    if (!check_common(what, h, catalogue_has(ops[kind], out_dtype, in_dtype), status))
        return;
    const char *scale_name = kind == SCALED_DEQUANTIZE ? "scale_inv" : "scale";
    if ((amaxs != NULL || amax_only) && mode != EW_REDUCE_OVERWRITE && mode != EW_REDUCE_ACCUMULATE) {
        expect_refusal(what, amax_only ? "mode" : "amax_mode", status);
        return;
    }
    if (!amax_only && count > 0 && scale == NULL) {
        expect_refusal(what, scale_name, status);
        return;
    }
    if (count < 0) {
        expect_refusal(what, "count", status);
        return;
    }
    const char *null_name = null_array == 0                 ? "n"
                            : null_array == 1 && !amax_only ? "out"
                            : null_array == 2               ? (kind == SCALED_DEQUANTIZE ? "q" : "x")
                            : amax_only && amaxs == NULL    ? "amax"
                                                            : NULL;
    if (count > 0 && null_name != NULL) {
        expect_refusal(what, null_name, status);
        return;
    }
    if (!amax_only && count > 0 &&
        ((uintptr_t)scale % 4 != 0 ||
         (model_int)(uintptr_t)scale + 4 * (model_int)count > (model_int)UINTPTR_MAX)) {
        expect_refusal(what, scale_name, status);
        return;
    }

    /* entry by entry: amax takes x in out's place (in place) */
    const char *const names[2] = {amax_only ? "x" : "out", kind == SCALED_DEQUANTIZE ? "q" : "x"};
    const size_t sizes[2] = {spec_size(amax_only ? in_dtype : out_dtype), spec_size(in_dtype)};
    model_verdict_t entries[MAX_ENTRIES];
    for (int64_t i = 0; i < count; ++i) {
        entries[i] = (model_verdict_t){.valid = 1};
        if (n[i] < 0) {
            model_refuse(&entries[i], "n");
            continue;
        }
        const model_int scale_at = (uintptr_t)scale + 4 * (model_int)i;
        model_int lo[2] = {0, 0}, hi[2] = {0, 0};
        if (n[i] > 0) {
            const void *const pointers[2] = {amax_only ? x[i] : out[i], x[i]};
            entries[i] = flat_verdict(n[i], 2, names, pointers, sizes);
            for (int k = 0; k < 2; ++k) {
                lo[k] = (uintptr_t)pointers[k];
                hi[k] = lo[k] + (model_int)n[i] * sizes[k];
            }
            if (!amax_only && scale_at < hi[0] && lo[0] < scale_at + 4)
                model_refuse(&entries[i], scale_name);
        }
        if (amaxs == NULL)
            continue;
        const float *a = amax[i];
        int bad = a == NULL || (uintptr_t)a % 4 != 0 || scalar_meets(a, lo[0], hi[0]) ||
                  scalar_meets(a, lo[1], hi[1]);
        bad |= !amax_only && scalar_meets(a, scale_at, scale_at + 4);
        if (bad)
            model_refuse(&entries[i], "amax");
    }
    judge_entries(what, count, n, entries, amaxs != NULL && mode == EW_REDUCE_OVERWRITE, status);
}

/* ---- the block-scaled casts: ew_block_scales_shape, ew_quantize_blocks, ew_dequantize_blocks ---- */

/* Rows: mostly small, around the swizzled tiles' 128; sometimes anything (take_n). */
static int64_t take_rows(input_t *in)
{
    static const int64_t rows[] = {0, 1, 2, 127, 128, 129, 300, -1};
    const uint8_t b = take8(in);
    return b < 200 ? rows[b % 8] : take_n(in);
}

/* Cols: multiples of 16 and 32 and their neighbours; sometimes anything. */
static int64_t take_cols(input_t *in)
{
    static const int64_t cols[] = {0, 16, 32, 48, 64, 96, 4096, 33, 8, -32};
    const uint8_t b = take8(in);
    return b < 200 ? cols[b % 10] : take_n(in);
}

/* Options: the two bits and a bit past them from one byte, sometimes anything. */
static unsigned take_options(input_t *in)
{
    const uint8_t b = take8(in);
    return b < 224 ? (unsigned)(b % 8) : take32(in);
}

static int block_of(int format) { return format == EW_BLOCKS_MX ? 32 : format == EW_BLOCKS_NVFP4 ? 16 : 0; }

/* The arguments every block call has: the format, the shape, the options. The INVALID_VALUE rules of
 * these alone (a size, an option) go into v; returns the elements (rows x cols) where the shape is
 * valid, -1 otherwise. The format's validity is the caller's (NOT_SUPPORTED). */
static int64_t blocks_shape_rules(int format, int64_t rows, int64_t cols, unsigned options, model_verdict_t *v)
{
    const int block = block_of(format);
    if ((options & ~(unsigned)(EW_BLOCKS_ROUND_UP | EW_BLOCKS_SWIZZLED)) != 0)
        model_refuse(v, "options");
    int shape_valid = 1;
    if (rows < 0) {
        model_refuse(v, "rows");
        shape_valid = 0;
    }
    if (cols < 0 || (block != 0 && cols % block != 0)) {
        model_refuse(v, "cols");
        shape_valid = 0;
    }
    if (!shape_valid)
        return -1;
    if ((model_int)rows * cols > INT64_MAX) { /* rows x cols past int64 */
        model_refuse(v, "rows");
        model_refuse(v, "cols");
        return -1;
    }
    if ((options & EW_BLOCKS_SWIZZLED) != 0 && ((model_int)rows + 127) / 128 * 128 > INT64_MAX) {
        model_refuse(v, "rows"); /* the swizzled scales' rows past int64 */
        return -1;
    }
    return rows * cols;
}

/* The scales' shape of a valid call (docs/semantics.md §11.5), in 128 bits. */
static void blocks_scales_shape(int format, int64_t rows, int64_t cols, unsigned options, model_int *scale_rows,
                                model_int *scale_cols)
{
    const int64_t row_blocks = cols / block_of(format);
    const int swizzled = (options & EW_BLOCKS_SWIZZLED) != 0;
    *scale_rows = swizzled ? ((model_int)rows + 127) / 128 * 128 : rows;
    *scale_cols = swizzled ? ((model_int)row_blocks + 3) / 4 * 4 : row_blocks;
}

/* Whether the message names any of the verdict's arguments as a whole word. */
static int message_names_any(const model_verdict_t *v, const char *message)
{
    for (int i = 0; i < v->names; ++i)
        if (message_has_word(message, v->name[i]))
            return 1;
    return 0;
}

/* A refusal the model found: INVALID_VALUE, its message naming an argument at fault. */
static void expect_blocks_refusal(const char *what, const model_verdict_t *v, ew_status_t status)
{
    const char *message = ew_get_last_error_message();
    CHECK(status == EW_ERROR_INVALID_VALUE, "%s: refused by the model (%s) but %s (\"%s\")", what, verdict_names(v),
          ew_status_string(status), message);
    CHECK(message_names_any(v, message), "%s: the message \"%s\" names none of the arguments at fault: %s", what,
          message, verdict_names(v));
    ++judged_refused[current_action];
}

/* NOT_SUPPORTED (the format, or the dtypes), unless the call also breaks an INVALID_VALUE rule, which
 * the rules do not order before or after it: then either, the refusal naming an argument at fault. */
static void expect_blocks_unsupported(const char *what, const model_verdict_t *v, ew_status_t status)
{
    const char *message = ew_get_last_error_message();
    if (v->valid || status == EW_ERROR_NOT_SUPPORTED) {
        CHECK(status == EW_ERROR_NOT_SUPPORTED, "%s: format or dtypes outside the lists, but %s (\"%s\")", what,
              ew_status_string(status), message);
        ++judged_refused[current_action];
        return;
    }
    expect_blocks_refusal(what, v, status);
}

/* ew_block_scales_shape: no handle, no device; the format (NOT_SUPPORTED), the shape, the options and the
 * outputs (INVALID_VALUE); on success both outputs exact, including swizzled rows that fit int64 only
 * if rounded up within it. */
static void action_block_scales_shape(input_t *in)
{
    const int format = take_enum_value(in);
    const int64_t rows = take_rows(in), cols = take_cols(in);
    const unsigned options = take_options(in);
    const uint8_t nulls = take8(in);
    int64_t r = -12345, c = -12345;
    int64_t *rp = nulls < 16 ? NULL : &r, *cp = nulls >= 16 && nulls < 32 ? NULL : &c;
    const ew_status_t status = ew_block_scales_shape((ew_block_format_t)format, rows, cols, options, rp, cp);
    check_status("ew_block_scales_shape", status);
    model_verdict_t v = {.valid = 1};
    const int format_valid = block_of(format) != 0;
    const int64_t elements = blocks_shape_rules(format, rows, cols, options, &v);
    if (!format_valid) {
        expect_blocks_unsupported("ew_block_scales_shape", &v, status);
        return;
    }
    model_int scale_rows = 0, scale_cols = 0;
    if (elements >= 0)
        blocks_scales_shape(format, rows, cols, options, &scale_rows, &scale_cols);
    if (rp == NULL)
        model_refuse(&v, "scale_rows");
    if (cp == NULL)
        model_refuse(&v, "scale_cols");
    if (!v.valid) {
        expect_blocks_refusal("ew_block_scales_shape", &v, status);
        return;
    }
    CHECK(status == EW_SUCCESS && r == (int64_t)scale_rows && c == (int64_t)scale_cols,
          "ew_block_scales_shape(%d, %lld, %lld, 0x%x): %s, %lld x %lld, not %lld x %lld", format, (long long)rows,
          (long long)cols, options, ew_status_string(status), (long long)r, (long long)c, (long long)scale_rows,
          (long long)scale_cols);
    ++judged_valid[current_action];
}

/* One span of a block call: its name, where it starts and its bytes. */
typedef struct {
    const char *name;
    uintptr_t address;
    model_int bytes;
} block_span_t;

static int spans_meet(const block_span_t *a, const block_span_t *b)
{
    return (model_int)a->address < (model_int)b->address + b->bytes &&
           (model_int)b->address < (model_int)a->address + a->bytes;
}

/* ew_quantize_blocks or ew_dequantize_blocks on fuzzed arguments, judged by the rules of
 * include/elementwise.h ("Block-scaled low-precision casts"): the handle; the format and the dtypes
 * (NOT_SUPPORTED; see expect_blocks_unsupported); the shape and the options; EW_BLOCKS_ROUND_UP for MX's
 * quantize only; global_scale NULL for MX, aligned to 4; then, with elements, the three buffers non-NULL, inside
 * the address space, the f16/bf16/f32 side aligned to its element; what the call writes (out; quantize's
 * scales, over their padded span where swizzled) meeting nothing else of it, what it only reads free to
 * overlap; global_scale not inside what it writes. A valid call without elements succeeds; with
 * elements it stops at the device check. */
static void action_blocks(input_t *in, int quantize)
{
    const char *what = quantize ? "ew_quantize_blocks" : "ew_dequantize_blocks";
    ew_handle_t h = take_handle(in);
    const int format = take_enum_value(in), out_dtype = take_enum_value(in), in_dtype = take_enum_value(in);
    const int64_t rows = take_rows(in), cols = take_cols(in);
    const void *out = take_pointer(in, NULL);
    const void *scales = take_pointer(in, out), *x = take_pointer(in, out);
    const unsigned options = take_options(in);
    const float *g = take_scalar(in, out, x, (const float *)scales);
    const ew_stream_t stream = take_stream(in);
    const ew_status_t status =
        quantize ? ew_quantize_blocks(h, (ew_block_format_t)format, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype, rows,
                                      cols, (void *)out, (void *)scales, x, g, options, stream)
                 : ew_dequantize_blocks(h, (ew_block_format_t)format, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype,
                                        rows, cols, (void *)out, x, scales, g, options, stream);
    check_status(what, status);
    const char *message = ew_get_last_error_message();
    if (find_live(h) == NULL) {
        CHECK(status == EW_ERROR_INVALID_HANDLE, "%s on a dead handle: %s", what, ew_status_string(status));
        return;
    }
    CHECK(status != EW_ERROR_INVALID_HANDLE, "%s: a live handle refused: \"%s\"", what, message);

    const int element = quantize ? out_dtype : in_dtype, wide = quantize ? in_dtype : out_dtype;
    const int element_valid = format == EW_BLOCKS_MX      ? is_fp8(element) || element == EW_F4E2M1
                              : format == EW_BLOCKS_NVFP4 ? element == EW_F4E2M1
                                                          : 0;
    const int supported = element_valid && (wide == EW_F16 || wide == EW_BF16 || wide == EW_F32);
    model_verdict_t v = {.valid = 1};
    const int64_t elements = blocks_shape_rules(format, rows, cols, options, &v);
    if (!supported) {
        expect_blocks_unsupported(what, &v, status);
        return;
    }
    CHECK(status != EW_ERROR_NOT_SUPPORTED, "%s: a supported format and dtypes refused: \"%s\"", what, message);
    if ((format == EW_BLOCKS_NVFP4 || !quantize) && (options & EW_BLOCKS_ROUND_UP) != 0) {
        model_refuse(&v, "options");
        model_refuse(&v, "EW_BLOCKS_ROUND_UP");
    }
    if (g != NULL && (format == EW_BLOCKS_MX || (uintptr_t)g % 4 != 0))
        model_refuse(&v, "global_scale");
    if (!v.valid) {
        expect_blocks_refusal(what, &v, status);
        return;
    }
    if (elements == 0) {
        CHECK(status == EW_SUCCESS, "%s with nothing to do: %s (\"%s\")", what, ew_status_string(status), message);
        ++judged_valid[current_action];
        return;
    }
    model_int scale_rows, scale_cols;
    blocks_scales_shape(format, rows, cols, options, &scale_rows, &scale_cols);
    const model_int element_bytes = (model_int)elements * spec_bits(element) / 8;
    const model_int wide_bytes = (model_int)elements * spec_size(wide);
    /* spans[0] is written, spans[1] (the scales) written by quantize, spans[2] read */
    const block_span_t spans[3] = {{"out", (uintptr_t)out, quantize ? element_bytes : wide_bytes},
                                   {"scales", (uintptr_t)scales, scale_rows * scale_cols},
                                   {quantize ? "x" : "q", (uintptr_t)x, quantize ? wide_bytes : element_bytes}};
    int known = 1;
    for (int i = 0; i < 3; ++i)
        if (spans[i].address == 0 || (model_int)spans[i].address + spans[i].bytes > (model_int)UINTPTR_MAX) {
            model_refuse(&v, spans[i].name);
            known = 0;
        }
    const block_span_t *wide_span = &spans[quantize ? 2 : 0];
    if (wide_span->address % spec_size(wide) != 0)
        model_refuse(&v, wide_span->name);
    for (int i = 0; known && i < 3; ++i)
        for (int j = i + 1; j < 3; ++j)
            if ((i == 0 || (quantize && i == 1)) && spans_meet(&spans[i], &spans[j])) {
                model_refuse(&v, spans[i].name);
                model_refuse(&v, spans[j].name);
            }
    const block_span_t global = {"global_scale", (uintptr_t)g, 4};
    for (int i = 0; known && g != NULL && i < (quantize ? 2 : 1); ++i)
        if (spans_meet(&global, &spans[i]))
            model_refuse(&v, "global_scale");
    if (!v.valid) {
        expect_blocks_refusal(what, &v, status);
        return;
    }
    CHECK(status == EW_ERROR_CUDA && strncmp(message, "cudaGetDevice failed", 20) == 0,
          "%s: valid, so stopped at the device check, but %s (\"%s\")", what, ew_status_string(status), message);
    ++judged_valid[current_action];
}

/* ---- user-defined kernels: slots, the set of live kernels, and their calls ---- */

enum { KERNEL_SLOTS = FUZZ_SLOTS };

/* A live kernel and what its launches check: its handle (which may be destroyed, or destroyed and
 * made again at the same address, while the kernel lives) and its spec. A kernel of one output
 * (KERNEL_MAKE; n_outputs 0) has the one array out_dtype, named "out"; a kernel of outputs
 * (KERNEL_MAKE_OUTPUTS) its array outputs in order, each named "outputs[k]" by its index k among all
 * its outputs, and at most one reduction. */
typedef struct {
    ew_kernel_t kernel;
    ew_handle_t handle;
    int out_dtype, n_inputs, n_params;
    int in_dtypes[EW_KERNEL_MAX_INPUTS];
    int n_outputs;                      /* 0: a kernel of one output */
    int n_arrays;                       /* its array outputs, 1 to EW_KERNEL_MAX_OUTPUTS */
    int arrays[EW_KERNEL_MAX_OUTPUTS];  /* their dtypes */
    const char *array_names[EW_KERNEL_MAX_OUTPUTS];
    int reduction;                      /* the reduction's index among the outputs, or -1 */
    size_t reduction_size;              /* its scalar's bytes */
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
#define SOURCE_ENTRY(name, text) text,
    static const char *const sources[] = {FUZZ_SOURCES(SOURCE_ENTRY)};
#undef SOURCE_ENTRY
    return sources[take8(in) % (sizeof sources / sizeof sources[0])];
}

/* A fuzzed spec for ew_kernel_create and ewi_user_kernel_make. dtypes always has EW_KERNEL_MAX_INPUTS
 * entries, so whatever n_inputs the library accepts, it reads inside the array. */
static void take_spec(input_t *in, ewi_kernel_spec_t *spec, ew_dtype_t dtypes[EW_KERNEL_MAX_INPUTS])
{
    *spec = (ewi_kernel_spec_t){0}; /* a kernel of one output, its flat program */
    spec->source = take_source(in);
    spec->out_dtype = (ew_dtype_t)take_enum_value(in);
    spec->n_inputs = take_count(in, EW_KERNEL_MAX_INPUTS);
    const int dtypes_null = take8(in) < 32;
    for (int i = 0; i < EW_KERNEL_MAX_INPUTS; ++i)
        dtypes[i] = (ew_dtype_t)take_enum_value(in);
    spec->in_dtypes = dtypes_null ? NULL : dtypes;
    spec->n_params = take_count(in, EW_KERNEL_MAX_PARAMS);
}

/* The spec checks of ew_kernel_create and ewi_user_kernel_make, in their order: source, n_inputs,
 * in_dtypes, n_params (EW_ERROR_INVALID_VALUE), then out_dtype and in_dtypes[0 .. n_inputs-1]
 * (EW_ERROR_NOT_SUPPORTED). */
static ew_status_t spec_model(const ewi_kernel_spec_t *spec)
{
    if (spec->source == NULL || spec->n_inputs < 1 || spec->n_inputs > EW_KERNEL_MAX_INPUTS ||
        spec->in_dtypes == NULL || spec->n_params < 0 || spec->n_params > EW_KERNEL_MAX_PARAMS)
        return EW_ERROR_INVALID_VALUE;
    if (!op_dtype_valid((int)spec->out_dtype))
        return EW_ERROR_NOT_SUPPORTED;
    for (int i = 0; i < spec->n_inputs; ++i)
        if (!op_dtype_valid((int)spec->in_dtypes[i]))
            return EW_ERROR_NOT_SUPPORTED;
    return EW_SUCCESS;
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
    check_status("ew_kernel_create", status);
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

/* Fuzzed outputs of ew_kernel_create_outputs: a count around [0, EW_KERNEL_MAX_OUTPUTS], the array
 * sometimes NULL, each output's dtype and reduction from the enum window (so that both run past their
 * enums). outputs always has EW_KERNEL_MAX_OUTPUTS entries. */
static int take_outputs(input_t *in, ew_kernel_output_t outputs[EW_KERNEL_MAX_OUTPUTS],
                        const ew_kernel_output_t **given)
{
    const int n = take_count(in, EW_KERNEL_MAX_OUTPUTS);
    const int null = take8(in) < 32;
    for (int k = 0; k < EW_KERNEL_MAX_OUTPUTS; ++k) {
        outputs[k].dtype = (ew_dtype_t)take_enum_value(in);
        outputs[k].reduce = (ew_reduce_op_t)take_enum_value(in);
    }
    *given = null ? NULL : outputs;
    return n;
}

/* The checks of ew_kernel_create_outputs' outputs, before any other: the count and the array, each
 * reduction inside its enum (EW_ERROR_INVALID_VALUE), then at least one array and at most one reduction
 * (EW_ERROR_NOT_SUPPORTED). */
static ew_status_t outputs_model(int n, const ew_kernel_output_t *outputs)
{
    if (n < 1 || n > EW_KERNEL_MAX_OUTPUTS || outputs == NULL)
        return EW_ERROR_INVALID_VALUE;
    int arrays = 0, reductions = 0;
    for (int k = 0; k < n; ++k) {
        if ((int)outputs[k].reduce < EW_REDUCE_NONE || (int)outputs[k].reduce > FUZZ_LAST_REDUCE_OP)
            return EW_ERROR_INVALID_VALUE;
        if (outputs[k].reduce == EW_REDUCE_NONE)
            ++arrays;
        else
            ++reductions;
    }
    return arrays >= 1 && reductions <= 1 ? EW_SUCCESS : EW_ERROR_NOT_SUPPORTED;
}

/* spec_model for a kernel of outputs (outputs_model passed): every array of an op's dtype, and a
 * reduction's scalar EW_F32 or EW_F64 (EW_ERROR_NOT_SUPPORTED). */
static ew_status_t outputs_spec_model(const ewi_kernel_spec_t *spec, int n, const ew_kernel_output_t *outputs)
{
    ewi_kernel_spec_t first = *spec;
    first.out_dtype = EW_F32; /* spec_model's out_dtype check stands for the arrays' below */
    const ew_status_t status = spec_model(&first);
    if (status != EW_SUCCESS)
        return status;
    for (int k = 0; k < n; ++k)
        if (outputs[k].reduce == EW_REDUCE_NONE ? !op_dtype_valid((int)outputs[k].dtype)
                                                : outputs[k].dtype != EW_F32 && outputs[k].dtype != EW_F64)
            return EW_ERROR_NOT_SUPPORTED;
    return EW_SUCCESS;
}

/* ew_kernel_create_outputs: the output pointer, the outputs, the handle, the spec, then the device, which is
 * missing here, so no call succeeds; the output is NULL after every failure. */
static void action_kernel_create_outputs(input_t *in)
{
    ew_handle_t h = take_handle(in);
    ewi_kernel_spec_t spec;
    ew_dtype_t dtypes[EW_KERNEL_MAX_INPUTS];
    take_spec(in, &spec, dtypes);
    ew_kernel_output_t outputs[EW_KERNEL_MAX_OUTPUTS];
    const ew_kernel_output_t *given;
    const int n_outputs = take_outputs(in, outputs, &given);
    const int output_null = take8(in) < 32;
    ew_kernel_t k = (ew_kernel_t)(uintptr_t)0x5A5A; /* must be overwritten with NULL */
    ew_status_t status = ew_kernel_create_outputs(h, spec.source, n_outputs, given, spec.n_inputs,
                                                  spec.in_dtypes, spec.n_params, output_null ? NULL : &k);
    check_status("ew_kernel_create_outputs", status);
    ew_status_t expected;
    if (output_null)
        expected = EW_ERROR_INVALID_VALUE;
    else if ((expected = outputs_model(n_outputs, given)) != EW_SUCCESS)
        ;
    else if (find_live(h) == NULL)
        expected = EW_ERROR_INVALID_HANDLE;
    else if ((expected = outputs_spec_model(&spec, n_outputs, given)) == EW_SUCCESS)
        expected = EW_ERROR_CUDA; /* the device check */
    CHECK(status == expected,
          "ew_kernel_create_outputs(%p, source %s, n_outputs %d, outputs %s, n_inputs %d, in_dtypes %s, "
          "n_params %d, "
          "output %s): %s, not %s (\"%s\")",
          (void *)h, spec.source ? "set" : "NULL", n_outputs, given ? "set" : "NULL", spec.n_inputs,
          spec.in_dtypes ? "set" : "NULL", spec.n_params, output_null ? "NULL" : "set",
          ew_status_string(status), ew_status_string(expected), ew_get_last_error_message());
    if (!output_null)
        CHECK(k == NULL, "ew_kernel_create_outputs failed but left the output %p", (void *)k);
}

/* ew_kernel_cache_fill (outputs_form: ew_kernel_cache_fill_outputs): the spec (and the outputs) checked as by
 * ew_kernel_create (ew_kernel_create_outputs), then the architecture's name; a call that passes both finds
 * the disk cache off (LLVMFuzzerInitialize) and compiles nothing. */
static void action_kernel_cache_fill(input_t *in, int outputs_form)
{
#define ARCH_TEXT(name, text, valid) text,
#define ARCH_VALID(name, text, valid) valid,
    static const char *const archs[] = {FUZZ_ARCHS(ARCH_TEXT)};
    static const int valid[] = {FUZZ_ARCHS(ARCH_VALID)};
#undef ARCH_TEXT
#undef ARCH_VALID
    ewi_kernel_spec_t spec;
    ew_dtype_t dtypes[EW_KERNEL_MAX_INPUTS];
    take_spec(in, &spec, dtypes);
    ew_kernel_output_t outputs[EW_KERNEL_MAX_OUTPUTS];
    const ew_kernel_output_t *given = NULL;
    const int n_outputs = outputs_form ? take_outputs(in, outputs, &given) : 0;
    const unsigned a = take8(in) % (sizeof archs / sizeof archs[0]);
    const char *what = outputs_form ? "ew_kernel_cache_fill_outputs" : "ew_kernel_cache_fill";
    ew_status_t status = outputs_form
                             ? ew_kernel_cache_fill_outputs(spec.source, n_outputs, given, spec.n_inputs,
                                                            spec.in_dtypes, spec.n_params, archs[a])
                             : ew_kernel_cache_fill(spec.source, spec.out_dtype, spec.n_inputs,
                                                    spec.in_dtypes, spec.n_params, archs[a]);
    check_status(what, status);
    /* the outputs (ew_kernel_create_outputs' checks), the spec, the architecture's name, the cache */
    ew_status_t spec_status = outputs_form ? outputs_model(n_outputs, given) : EW_SUCCESS;
    if (spec_status == EW_SUCCESS)
        spec_status = outputs_form ? outputs_spec_model(&spec, n_outputs, given) : spec_model(&spec);
    const ew_status_t expected =
        spec_status != EW_SUCCESS ? spec_status : valid[a] ? EW_ERROR_NOT_SUPPORTED : EW_ERROR_INVALID_VALUE;
    CHECK(status == expected,
          "%s(source %s, out %d, n_outputs %d, n_inputs %d, in_dtypes %s, n_params %d, arch \"%s\"): %s, not "
          "%s "
          "(\"%s\")",
          what, spec.source ? "set" : "NULL", (int)spec.out_dtype, n_outputs, spec.n_inputs,
          spec.in_dtypes ? "set" : "NULL", spec.n_params, archs[a] ? archs[a] : "NULL",
          ew_status_string(status), ew_status_string(expected), ew_get_last_error_message());
    if (spec_status == EW_SUCCESS && valid[a] && status == expected) /* refused by the cache alone */
        CHECK(strstr(ew_get_last_error_message(), "EW_KERNEL_CACHE=0") != NULL,
              "%s with the cache off: \"%s\"", what, ew_get_last_error_message());
}

/* A kernel ewi_user_kernel_make made of spec on h, into live_kernels and the slot. */
static void record_kernel(unsigned slot, ew_kernel_t k, ew_handle_t h, const ewi_kernel_spec_t *spec)
{
    static const char *const output_names[] = {"outputs[0]", "outputs[1]", "outputs[2]", "outputs[3]"};
    _Static_assert(sizeof output_names / sizeof output_names[0] == EW_KERNEL_MAX_OUTPUTS, "a name per output");
    live_kernel_t *l = &live_kernels[live_kernel_count++];
    *l = (live_kernel_t){.kernel = k,
                         .handle = h,
                         .out_dtype = (int)spec->out_dtype,
                         .n_inputs = spec->n_inputs,
                         .n_params = spec->n_params,
                         .n_outputs = spec->n_outputs,
                         .reduction = -1};
    for (int i = 0; i < spec->n_inputs; ++i)
        l->in_dtypes[i] = (int)spec->in_dtypes[i];
    if (spec->n_outputs == 0) {
        l->n_arrays = 1;
        l->arrays[0] = (int)spec->out_dtype;
        l->array_names[0] = "out";
    }
    for (int o = 0; o < spec->n_outputs; ++o)
        if (spec->outputs[o].reduce == EW_REDUCE_NONE) {
            l->arrays[l->n_arrays] = (int)spec->outputs[o].dtype;
            l->array_names[l->n_arrays++] = output_names[o];
        } else {
            l->reduction = o;
            l->reduction_size = spec_size((int)spec->outputs[o].dtype);
        }
    kernel_slots[slot] = k;
}

/* ewi_user_kernel_make into a slot: the handle and the spec are checked as by ew_kernel_create; otherwise a
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
    ew_status_t status = ewi_user_kernel_make(h, &spec, &k);
    check_status("ewi_user_kernel_make", status);
    ew_status_t expected = find_live(h) == NULL ? EW_ERROR_INVALID_HANDLE : spec_model(&spec);
    CHECK(status == expected,
          "ewi_user_kernel_make(%p, source %s, out %d, n_inputs %d, in_dtypes %s, n_params %d): "
          "%s, not %s (\"%s\")",
          (void *)h, spec.source ? "set" : "NULL", (int)spec.out_dtype, spec.n_inputs,
          spec.in_dtypes ? "set" : "NULL", spec.n_params, ew_status_string(status),
          ew_status_string(expected), ew_get_last_error_message());
    if (status != EW_SUCCESS) {
        CHECK(k == NULL, "ewi_user_kernel_make failed but returned a kernel %p", (void *)k);
        return;
    }
    record_kernel(slot, k, h, &spec);
}

/* The checks of ewi_user_kernel_make for a spec of n_outputs outputs (ewi_kernel_check's order): a
 * spec of none is one of one output (spec_model); else the spec's own INVALID_VALUE rules, then the
 * outputs' (outputs_model: INVALID_VALUE, then NOT_SUPPORTED), then the dtypes (outputs_spec_model). */
static ew_status_t make_outputs_model(const ewi_kernel_spec_t *spec)
{
    if (spec->n_outputs == 0)
        return spec_model(spec);
    ewi_kernel_spec_t first = *spec;
    first.out_dtype = EW_F32; /* not read for a kernel of outputs */
    if (spec_model(&first) == EW_ERROR_INVALID_VALUE)
        return EW_ERROR_INVALID_VALUE;
    const ew_status_t status = outputs_model(spec->n_outputs, spec->outputs);
    return status != EW_SUCCESS ? status : outputs_spec_model(spec, spec->n_outputs, spec->outputs);
}

/* ewi_user_kernel_make of a kernel of outputs into a slot: the spec as take_spec reads it, its outputs as
 * take_outputs reads them (the spec holds them in place, so the byte that would make the array NULL is
 * read and not used; a count of 0 makes a kernel of one output, out_dtype's). The handle, then the spec
 * (make_outputs_model); otherwise a live kernel without code, recorded with its arrays and reduction. */
static void action_kernel_make_outputs(input_t *in)
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
    const ew_kernel_output_t *unused;
    spec.n_outputs = take_outputs(in, spec.outputs, &unused);
    ew_kernel_t k = NULL;
    ew_status_t status = ewi_user_kernel_make(h, &spec, &k);
    check_status("ewi_user_kernel_make", status);
    ew_status_t expected = find_live(h) == NULL ? EW_ERROR_INVALID_HANDLE : make_outputs_model(&spec);
    CHECK(status == expected,
          "ewi_user_kernel_make(%p, source %s, n_outputs %d, n_inputs %d, in_dtypes %s, n_params %d): "
          "%s, not %s (\"%s\")",
          (void *)h, spec.source ? "set" : "NULL", spec.n_outputs, spec.n_inputs,
          spec.in_dtypes ? "set" : "NULL", spec.n_params, ew_status_string(status), ew_status_string(expected),
          ew_get_last_error_message());
    if (status != EW_SUCCESS) {
        CHECK(k == NULL, "ewi_user_kernel_make failed but returned a kernel %p", (void *)k);
        return;
    }
    CHECK(k != NULL && find_live_kernel(k) == NULL, "ewi_user_kernel_make returned %p, NULL or still live",
          (void *)k);
    record_kernel(slot, k, h, &spec);
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

/* Whether l is a kernel of one output, which ew_kernel_launch and ew_kernel_launch_strided take; else
 * checks that the launch refused the kernel of outputs (EW_ERROR_INVALID_VALUE, about "kernel"). */
static int one_output(const live_kernel_t *l, const char *what, ew_status_t status)
{
    if (l->n_outputs == 0)
        return 1;
    expect_refusal(what, "kernel", status);
    return 0;
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
    check_status("ew_kernel_launch_strided", status);
    const live_kernel_t *l = launchable(k, "ew_kernel_launch_strided", status);
    if (l == NULL || !one_output(l, "ew_kernel_launch_strided", status))
        return;
    /* A NULL inputs array reads as NULL pointers, named "inputs"; a NULL in_strides as all contiguous. */
    static const char *const names[] = {"out", "inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]"};
    static const char *const strides_names[] = {"out_strides", "in_strides[0]", "in_strides[1]", "in_strides[2]",
                                                "in_strides[3]"};
    model_operand_t operands[MAX_OPERANDS] = {{names[0], strides_names[0], (uintptr_t)out, v.s[0],
                                               spec_size(l->out_dtype)}};
    for (int i = 0; i < l->n_inputs; ++i)
        operands[1 + i] = (model_operand_t){inputs_null ? "inputs" : names[1 + i], strides_names[1 + i],
                                            inputs_null ? 0 : (uintptr_t)inputs[i], in_strides_null ? NULL : v.s[1 + i],
                                            spec_size(l->in_dtypes[i])};
    judge_views("ew_kernel_launch_strided", &v, 1 + l->n_inputs, operands, params_null && l->n_params > 0, status);
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
    check_status("ew_kernel_launch", status);

    const live_kernel_t *l = launchable(k, "ew_kernel_launch", status);
    if (l == NULL || !one_output(l, "ew_kernel_launch", status))
        return;
    /* n, then (n > 0) the inputs array, params, the operands, the device */
    if (n < 0) {
        expect_refusal("ew_kernel_launch", "n", status);
        return;
    }
    if (n > 0 && (inputs_null || (params_null && l->n_params > 0))) {
        expect_refusal("ew_kernel_launch", inputs_null ? "inputs" : "params", status);
        return;
    }
    static const char *const names[] = {"out", "inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]"};
    const void *pointers[MAX_OPERANDS] = {out};
    size_t sizes[MAX_OPERANDS] = {spec_size(l->out_dtype)};
    for (int i = 0; i < l->n_inputs; ++i) {
        pointers[1 + i] = inputs[i];
        sizes[1 + i] = spec_size(l->in_dtypes[i]);
    }
    const model_verdict_t verdict = flat_verdict(n, 1 + l->n_inputs, names, pointers, sizes);
    expect_verdict("ew_kernel_launch", &verdict, n == 0, status);
}

/* A kernel's pointers in a launch: its array outputs, then its inputs. */
enum { KERNEL_POINTERS = EW_KERNEL_MAX_OUTPUTS + EW_KERNEL_MAX_INPUTS };

/* The flat rules for a call of `outputs` outputs (the first of the count operands), as model_flat
 * (tests/plan/layout_model.h) gives them for one: n == 0 valid with any pointers; else each pointer
 * non-NULL, aligned, its n elements inside the address space; each output apart from every other output,
 * and meeting an input only exactly in place (the same address and element size). An overlap is
 * refused about the first output of the pair, which the message names. */
static model_verdict_t flat_outputs_verdict(int64_t n, int outputs, int count, const char *const names[],
                                            const void *const pointers[], const size_t sizes[])
{
    model_verdict_t v = {.valid = 1, .n = n};
    if (n == 0)
        return v;
    model_int begin[KERNEL_POINTERS], end[KERNEL_POINTERS];
    int ranges_known = 1;
    for (int k = 0; k < count; ++k) {
        begin[k] = (uintptr_t)pointers[k];
        end[k] = begin[k] + (model_int)n * (model_int)sizes[k];
        if (pointers[k] == NULL || (uintptr_t)pointers[k] % sizes[k] != 0 || end[k] > (model_int)UINTPTR_MAX) {
            model_refuse(&v, names[k]);
            ranges_known = 0;
        }
    }
    for (int o = 0; o < outputs && ranges_known; ++o)
        for (int k = o + 1; k < count; ++k) {
            if (k >= outputs && begin[o] == begin[k] && sizes[o] == sizes[k])
                continue; /* an input exactly in place */
            if (begin[o] < end[k] && begin[k] < end[o])
                model_refuse(&v, names[o]);
        }
    return v;
}

/* ew_kernel_launch_batched over a fuzzed list: count (as action_batched takes it), then the arrays: which
 * one is NULL (n, outputs, inputs, or one column of outputs or inputs), then the params (NULL or the
 * launch's) and entry_params (NULL, an array, misaligned, near the top of the address space, anything),
 * then per entry its n and EW_KERNEL_MAX_OUTPUTS + EW_KERNEL_MAX_INPUTS pointers, the outputs' columns
 * (one per output of the kernel, in its order: arrays and the reduction's scalars) then the inputs', then
 * the stream and the mode. A pointer's in-place reference (take_pointer) is outputs[0]'s for the outputs,
 * and for inputs[i] the kernel's output i modulo its arrays (a kernel that is not live: one array).
 *
 * The model, in the library's order: the kernel and its handle; the mode; params and entry_params both
 * given; with count > 0, outputs or inputs NULL, then both params NULL for a kernel that takes some, then
 * entry_params misaligned to a double or its count x n_params doubles past the address space; then the
 * list (count, n, the columns the kernel reads, the scalars' column, entry by entry the flat rules of its
 * arrays and inputs, then its scalar's: NULL, misaligned or inside its entry's spans is refused about the
 * reduction's output, an empty entry's too: judge_entries). count == 0 succeeds past the first checks;
 * an overwritten reduction over entries without elements still stops at the device (the resets). */
static void action_kernel_launch_batched(input_t *in)
{
    enum { MAX_ENTRIES = 6, COLUMNS = KERNEL_POINTERS };
    static const double entry_values[MAX_ENTRIES * EW_KERNEL_MAX_PARAMS]; /* never read: no launch runs */
    const char *what = "ew_kernel_launch_batched";
    ew_kernel_t k = take_kernel(in);
    const live_kernel_t *l = find_live_kernel(k);
    const int arrays = l != NULL ? l->n_arrays : 1;
    const uint8_t c = take8(in);
    const int64_t count = c < 16 ? -(int64_t)c : c % (MAX_ENTRIES + 1);
    /* 0 n, 1 outputs, 2 inputs, 3 + j outputs[j], 3 + EW_KERNEL_MAX_OUTPUTS + i inputs[i] */
    const uint8_t array_byte = take8(in);
    const int null_array = array_byte >= 224 ? (array_byte - 224) % (3 + COLUMNS) : -1;
    const uint8_t params_byte = take8(in);
    const int params_given = params_byte & 1;
    const double *entry_params;
    switch ((params_byte >> 1) % 6) {
    case 0:
    case 1: entry_params = NULL; break;
    case 2: entry_params = entry_values; break;
    case 3: entry_params = (const double *)((uintptr_t)entry_values + 1 + take8(in) % 7); break;
    case 4: /* aligned, take8 doubles below the last aligned one */
        entry_params = (const double *)((UINTPTR_MAX & ~(uintptr_t)7) - 8 * (uintptr_t)take8(in));
        break;
    default: entry_params = (const double *)(uintptr_t)take64(in);
    }
    int64_t n[MAX_ENTRIES];
    const void *column[COLUMNS][MAX_ENTRIES];
    for (int i = 0; i < MAX_ENTRIES; ++i) {
        uint8_t b = take8(in);
        n[i] = b < 64 ? 0 : b < 200 ? b % 100 : take_n(in);
        for (int j = 0; j < COLUMNS; ++j) {
            const int reference = j < EW_KERNEL_MAX_OUTPUTS ? 0 : (j - EW_KERNEL_MAX_OUTPUTS) % arrays;
            column[j][i] = take_pointer(in, j == 0 ? NULL : column[reference][i]);
        }
    }
    ew_stream_t stream = take_stream(in);
    const int mode = take_mode(in);
    void *const *out_columns[EW_KERNEL_MAX_OUTPUTS];
    const void *const *in_columns[EW_KERNEL_MAX_INPUTS];
    for (int j = 0; j < EW_KERNEL_MAX_OUTPUTS; ++j)
        out_columns[j] = null_array == 3 + j ? NULL : (void *const *)column[j];
    for (int i = 0; i < EW_KERNEL_MAX_INPUTS; ++i)
        in_columns[i] = null_array == 3 + EW_KERNEL_MAX_OUTPUTS + i ? NULL : column[EW_KERNEL_MAX_OUTPUTS + i];
    const int64_t *ns = null_array == 0 ? NULL : n;
    void *const *const *outputs = null_array == 1 ? NULL : out_columns;
    const void *const *const *inputs = null_array == 2 ? NULL : in_columns;
    const double *params = params_given ? kernel_params : NULL;
    ew_status_t status = ew_kernel_launch_batched(k, count, ns, outputs, (ew_reduce_mode_t)mode, inputs,
                                                  params, entry_params, stream);
    check_status(what, status);

    if ((l = launchable(k, what, status)) == NULL)
        return;
    if (mode != EW_REDUCE_OVERWRITE && mode != EW_REDUCE_ACCUMULATE) {
        expect_refusal(what, "mode", status);
        return;
    }
    if (params != NULL && entry_params != NULL) {
        expect_refusal(what, "params", status);
        return;
    }
    if (count > 0 && (outputs == NULL || inputs == NULL)) {
        expect_refusal(what, outputs == NULL ? "outputs" : "inputs", status);
        return;
    }
    if (count > 0 && l->n_params > 0 && params == NULL && entry_params == NULL) {
        expect_refusal(what, "params", status);
        return;
    }
    if (count > 0 && entry_params != NULL &&
        ((uintptr_t)entry_params % sizeof(double) != 0 ||
         (model_int)(uintptr_t)entry_params + (model_int)count * l->n_params * (model_int)sizeof(double) >
             (model_int)UINTPTR_MAX)) {
        expect_refusal(what, "entry_params", status);
        return;
    }
    /* the list: count, then (count > 0) n and the columns the kernel reads, then entry by entry */
    if (count < 0) {
        expect_refusal(what, "count", status);
        return;
    }
    const char *names[KERNEL_POINTERS];
    size_t sizes[KERNEL_POINTERS];
    const void *const *columns[KERNEL_POINTERS];
    static const char *const input_names[] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]"};
    static const char *const output_names[] = {"outputs[0]", "outputs[1]", "outputs[2]", "outputs[3]"};
    const int pointers = l->n_arrays + l->n_inputs;
    for (int j = 0, k_out = 0; j < pointers; ++j, ++k_out) {
        const int output = j < l->n_arrays, i = j - l->n_arrays;
        k_out += output && k_out == l->reduction; /* the array's index among the outputs */
        names[j] = output ? l->array_names[j] : input_names[i];
        sizes[j] = spec_size(output ? l->arrays[j] : l->in_dtypes[i]);
        columns[j] = output ? (const void *const *)out_columns[k_out] : in_columns[i];
    }
    const void *const *scalars = l->reduction >= 0 ? (const void *const *)out_columns[l->reduction] : NULL;
    if (count > 0 && ns == NULL) {
        expect_refusal(what, "n", status);
        return;
    }
    for (int j = 0; j < pointers && count > 0; ++j)
        if (columns[j] == NULL) {
            expect_refusal(what, names[j], status);
            return;
        }
    if (count > 0 && l->reduction >= 0 && scalars == NULL) {
        expect_refusal(what, output_names[l->reduction], status);
        return;
    }
    model_verdict_t entries[MAX_ENTRIES];
    for (int64_t i = 0; i < count; ++i) {
        if (n[i] < 0) {
            entries[i] = (model_verdict_t){.valid = 1};
            model_refuse(&entries[i], "n");
            continue;
        }
        const void *entry_pointers[KERNEL_POINTERS];
        for (int j = 0; j < pointers; ++j)
            entry_pointers[j] = columns[j][i];
        entries[i] = flat_outputs_verdict(n[i], l->n_arrays, pointers, names, entry_pointers, sizes);
        if (!entries[i].valid || l->reduction < 0)
            continue;
        /* the scalar: set, aligned, inside none of its entry's spans (valid ones: no wrap) */
        const uintptr_t at = (uintptr_t)scalars[i], end = at + l->reduction_size;
        int refused = at == 0 || at % l->reduction_size != 0;
        for (int j = 0; j < pointers && n[i] > 0 && !refused; ++j) {
            const uintptr_t low = (uintptr_t)entry_pointers[j], high = low + (uintptr_t)n[i] * sizes[j];
            refused = at < high && low < end;
        }
        if (refused)
            model_refuse(&entries[i], output_names[l->reduction]);
    }
    judge_entries(what, count, n, entries, l->reduction >= 0 && mode == EW_REDUCE_OVERWRITE, status);
}

/* ew_kernel_launch_outputs (the form byte's bit 0 clear: n elements) or ew_kernel_launch_outputs_strided
 * (set: fuzzed views, out_strides by output index, columns 0-3, in_strides columns 4-7), over pointers of
 * which any may be NULL, in place or overlapping; the outputs array, inputs array, strides and params
 * NULL at times. The model, in the library's order: the kernel and its handle, one of one output refused
 * (about "kernel"), outputs NULL, the mode; flat: n, the reduction's scalar, nothing to do, the inputs
 * array, params, the operands (flat_outputs_verdict); on views: the views, the first array as out and
 * the others after the inputs (model_views with their mask), params, then the scalar. The scalar: NULL,
 * misaligned, or inside an operand's span is refused about its output. A valid call stops at the device
 * check; one without elements succeeds, but an overwritten scalar's reset stops there too. */
static void action_kernel_launch_outputs(input_t *in)
{
    ew_kernel_t k = take_kernel(in);
    const uint8_t form = take8(in);
    const int strided = form & 1, outputs_null = (form >> 1 & 15) == 0, inputs_null = (form >> 5) == 0;
    const uint8_t nulls = take8(in);
    const int out_strides_null = nulls % 4 == 0, in_strides_null = nulls / 4 % 4 == 0, params_null = nulls >= 192;
    views_t v;
    int64_t n = 0;
    if (strided)
        take_views(in, MAX_OPERANDS, &v);
    else
        n = take_n(in);
    const int mode = take_mode(in);
    void *outputs[EW_KERNEL_MAX_OUTPUTS];
    const void *inputs[EW_KERNEL_MAX_INPUTS];
    for (int j = 0; j < EW_KERNEL_MAX_OUTPUTS; ++j)
        outputs[j] = (void *)take_pointer(in, j == 0 ? NULL : outputs[0]);
    for (int i = 0; i < EW_KERNEL_MAX_INPUTS; ++i)
        inputs[i] = take_pointer(in, outputs[i]);
    ew_stream_t stream = take_stream(in);
    const char *what = strided ? "ew_kernel_launch_outputs_strided" : "ew_kernel_launch_outputs";
    void *const *given = outputs_null ? NULL : outputs;
    const void *const *ins = inputs_null ? NULL : inputs;
    const double *params = params_null ? NULL : kernel_params;
    const ew_status_t status =
        strided ? ew_kernel_launch_outputs_strided(k, v.ndim, v.shape_null ? NULL : v.shape, given,
                                                   out_strides_null ? NULL : v.s, (ew_reduce_mode_t)mode, ins,
                                                   in_strides_null ? NULL : v.s + EW_KERNEL_MAX_OUTPUTS, params,
                                                   stream)
                : ew_kernel_launch_outputs(k, n, given, (ew_reduce_mode_t)mode, ins, params, stream);
    check_status(what, status);

    const live_kernel_t *l = launchable(k, what, status);
    if (l == NULL)
        return;
    if (l->n_outputs == 0 || outputs_null || (mode != EW_REDUCE_OVERWRITE && mode != EW_REDUCE_ACCUMULATE)) {
        expect_refusal(what, l->n_outputs == 0 ? "kernel" : outputs_null ? "outputs" : "mode", status);
        return;
    }
    /* The operands in the layout's order: the first array, the inputs, the other arrays. */
    static const char *const input_names[] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]"};
    static const char *const input_strides[] = {"in_strides[0]", "in_strides[1]", "in_strides[2]",
                                                "in_strides[3]"};
    static const char *const output_strides[] = {"out_strides[0]", "out_strides[1]", "out_strides[2]",
                                                 "out_strides[3]"};
    model_operand_t operands[MAX_OPERANDS];
    const int count = l->n_arrays + l->n_inputs;
    unsigned mask = 1u;
    for (int j = 0, a = 0; j < l->n_outputs; ++j) {
        if (j == l->reduction)
            continue;
        const int at = a == 0 ? 0 : l->n_inputs + a;
        operands[at] = (model_operand_t){l->array_names[a], output_strides[j], (uintptr_t)outputs[j],
                                         strided && !out_strides_null ? v.s[j] : NULL, spec_size(l->arrays[a])};
        mask |= 1u << at;
        ++a;
    }
    for (int i = 0; i < l->n_inputs; ++i)
        operands[1 + i] = (model_operand_t){inputs_null ? "inputs" : input_names[i], input_strides[i],
                                            inputs_null ? 0 : (uintptr_t)inputs[i],
                                            strided && !in_strides_null ? v.s[EW_KERNEL_MAX_OUTPUTS + i] : NULL,
                                            spec_size(l->in_dtypes[i])};
    const int params_missing = params_null && l->n_params > 0;
    model_verdict_t verdict = {.valid = 1, .n = n};
    if (strided) {
        verdict = views_verdict(&v, count, mask, operands, params_missing);
        if (!verdict.valid) {
            expect_verdict(what, &verdict, 0, status);
            return;
        }
        n = verdict.n;
    } else if (n < 0) {
        expect_refusal(what, "n", status);
        return;
    }
    /* the scalar, against every operand's span (the arrays' alone where the flat call has no inputs) */
    if (l->reduction >= 0) {
        static const char *const names[] = {"outputs[0]", "outputs[1]", "outputs[2]", "outputs[3]"};
        const uintptr_t at = (uintptr_t)outputs[l->reduction];
        int refused = at == 0 || at % l->reduction_size != 0;
        for (int o = 0; o < count && n > 0 && !refused; ++o) {
            if (!(mask >> o & 1u) && inputs_null)
                continue;
            /* in the library's address arithmetic, which wraps: a flat operand running past the end of
             * the address space has an empty span here (the operand check refuses it later) */
            model_int lo, hi;
            span_of(strided ? &v : NULL, &operands[o], n, &lo, &hi);
            const uintptr_t low = (uintptr_t)lo, high = (uintptr_t)hi, end = at + l->reduction_size;
            refused = low < high && at < high && low < end;
        }
        if (refused) {
            expect_refusal(what, names[l->reduction], status);
            return;
        }
    }
    if (n == 0) {
        if (l->reduction >= 0 && mode == EW_REDUCE_OVERWRITE) {
            CHECK(status == EW_ERROR_CUDA, "%s: nothing to run but the scalar's reset, which stops at the GPU: %s "
                  "(\"%s\")", what, ew_status_string(status), ew_get_last_error_message());
            ++judged_valid[current_action];
        } else {
            expect_verdict(what, &verdict, 1, status);
        }
        return;
    }
    if (!strided) {
        if (inputs_null || params_missing) {
            expect_refusal(what, inputs_null ? "inputs" : "params", status);
            return;
        }
        const char *names[MAX_OPERANDS];
        const void *pointers[MAX_OPERANDS];
        size_t sizes[MAX_OPERANDS];
        for (int a = 0; a < count; ++a) { /* flat: the arrays, then the inputs */
            const int at = a < l->n_arrays ? (a == 0 ? 0 : l->n_inputs + a) : 1 + (a - l->n_arrays);
            names[a] = operands[at].name;
            pointers[a] = (const void *)operands[at].address;
            sizes[a] = operands[at].size;
        }
        verdict = flat_outputs_verdict(n, l->n_arrays, count, names, pointers, sizes);
    }
    expect_verdict(what, &verdict, 0, status);
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
    CHECK(ew_dtype_bits((ew_dtype_t)out) == spec_bits(out), "ew_dtype_bits(%d) = %zu", out,
          ew_dtype_bits((ew_dtype_t)out));
    /* without a GPU no program is ever looked up: every counter reads 0 */
    uint64_t count = UINT64_MAX;
    const ew_status_t counted = ew_kernel_cache_get_count((ew_kernel_cache_counter_t)op, &count);
    CHECK(op >= 0 && op < EW_KERNEL_CACHE_COUNTERS ? counted == EW_SUCCESS && count == 0
                                                   : counted == EW_ERROR_INVALID_VALUE && count == UINT64_MAX,
          "ew_kernel_cache_get_count(%d) = %d, count %llu", op, (int)counted, (unsigned long long)count);
    const char *status_name = ew_status_string((ew_status_t)op);
    CHECK(status_name != NULL && status_name[0] != '\0', "ew_status_string(%d)", op);
    CHECK(ew_get_version() == EW_VERSION, "ew_get_version");
    CHECK(ew_get_last_error_message() != NULL, "ew_get_last_error_message");
}

/* At exit: each action's executions, and for the judged ones the calls judged valid and refused. With
 * EW_FUZZ_EVERY_ACTION=1, an action that never ran, or a judged one that never saw both verdicts,
 * fails the run. */
static void report(void)
{
    int missing = 0;
    fprintf(stderr, "fuzz_api: executions per action (calls the models judged valid / refused):\n");
    for (int a = 0; a < ACTIONS; ++a) {
        const int judged = judged_actions >> a & 1u;
        fprintf(stderr, "fuzz_api:   %-22s %12llu", action_names[a], runs[a]);
        if (judged)
            fprintf(stderr, "  valid %10llu  refused %10llu", judged_valid[a], judged_refused[a]);
        fprintf(stderr, "\n");
        missing += runs[a] == 0 || (judged && (judged_valid[a] == 0 || judged_refused[a] == 0));
    }
    const char *required = getenv("EW_FUZZ_EVERY_ACTION");
    if (missing > 0 && required != NULL && strcmp(required, "1") == 0) {
        fprintf(stderr, "fuzz_api: FAIL: %d action(s) never ran, or never had a valid or a refused call "
                        "(EW_FUZZ_EVERY_ACTION=1): the seeds (fuzz/make_seeds.py) must reach every action\n",
                missing);
        fflush(stderr);
        _Exit(1);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    atexit(report);
    setenv("EW_KERNEL_CACHE", "0", 1); /* ew_kernel_cache_fill stops at the cache, never compiling */
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
        current_action = action;
        ++runs[action];
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
        case ACTION_QUANTIZE: action_quantize(&in, 0); break;
        case ACTION_QUANTIZE_STRIDED: action_quantize(&in, 1); break;
        case ACTION_DEQUANTIZE: action_dequantize(&in, 0); break;
        case ACTION_DEQUANTIZE_STRIDED: action_dequantize(&in, 1); break;
        case ACTION_AMAX: action_amax(&in); break;
        case ACTION_SCALED_BATCHED: action_scaled_batched(&in); break;
        case ACTION_BLOCK_SCALES_SHAPE: action_block_scales_shape(&in); break;
        case ACTION_QUANTIZE_BLOCKS: action_blocks(&in, 1); break;
        case ACTION_DEQUANTIZE_BLOCKS: action_blocks(&in, 0); break;
        case ACTION_KERNEL_CACHE_FILL: action_kernel_cache_fill(&in, 0); break;
        case ACTION_KERNEL_CREATE_OUTPUTS: action_kernel_create_outputs(&in); break;
        case ACTION_KERNEL_CACHE_FILL_OUTPUTS: action_kernel_cache_fill(&in, 1); break;
        case ACTION_KERNEL_LAUNCH_BATCHED: action_kernel_launch_batched(&in); break;
        case ACTION_KERNEL_MAKE_OUTPUTS: action_kernel_make_outputs(&in); break;
        case ACTION_KERNEL_LAUNCH_OUTPUTS: action_kernel_launch_outputs(&in); break;
        case ACTION_UNARY:
        case ACTION_BINARY:
        case ACTION_CAST:
        case ACTION_SCALE_ADD: action_operation(&in, action); break;
        default: CHECK(0, "action %s has no case", action_names[action]);
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
