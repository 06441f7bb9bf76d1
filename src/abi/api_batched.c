/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI's tensor-list calls: every entry validated with the flat call's rules before anything is
 * launched (messages name the entry), then the list packed into launches (src/plan/batched.h) and each
 * launched through its kernel set's list slots. O(count) but for EW_CHECK_POINTERS, which also asks
 * the driver about every pointer and sorts the ranges to find an output overlapping another entry. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "abi/api.h"
#include "plan/batched.h"
#include "catalogue/catalogue.h"
#include "catalogue/dispatch.h"
#include "elementwise.h"
#include "abi/error.h"
#include "abi/handle.h"
#include "abi/pointer_check.h"

typedef ewi_list_call_t list_call_t;

/* The failure just set, prefixed with the entry's index. */
static ew_status_t fail_entry(ew_status_t status, int64_t entry)
{
    char text[512];
    snprintf(text, sizeof text, "%s", ew_get_last_error_message());
    return ewi_fail(status, "entry %lld: %s", (long long)entry, text);
}

/* Entry i's own parameters: [*lo, *hi), empty where the call has none. */
static void params_span(const list_call_t *call, int64_t i, uintptr_t *lo, uintptr_t *hi)
{
    *lo = *hi = 0;
    if (call->params_column && call->params != NULL) {
        *lo = (uintptr_t)call->params + (uintptr_t)i * call->params_stride;
        *hi = *lo + call->params_stride;
    }
}

/* Entry i's own parameters lie inside none of its outputs (of n elements): a block would read them
 * while another writes there. */
static ew_status_t check_params(const list_call_t *call, int64_t i, int64_t n, const ewi_operand_t *operands)
{
    uintptr_t lo, hi;
    params_span(call, i, &lo, &hi);
    for (int j = 0; j < call->outputs && lo < hi; ++j) {
        const uintptr_t at = (uintptr_t)operands[j].address;
        if (ewi_overlaps(lo, hi, at, at + (uintptr_t)n * operands[j].elem_size))
            return ewi_fail(EW_ERROR_INVALID_VALUE, "entry %lld: %s[%lld] lies inside %s", (long long)i,
                            call->params_name, (long long)i, operands[j].name);
    }
    return EW_SUCCESS;
}

/* Entry i's reduction scalar against its own operands (of n elements; none where n is 0) and its own
 * parameters. */
static ew_status_t check_scalar(const list_call_t *call, int64_t i, int64_t n, const ewi_operand_t *operands,
                                int pointers)
{
    const char *names[EW_PLAN_MAX_CALL_POINTERS + 1];
    uintptr_t lo[EW_PLAN_MAX_CALL_POINTERS + 1], hi[EW_PLAN_MAX_CALL_POINTERS + 1];
    const int spans = n > 0 ? pointers : 0; /* ewi_check_operands has bounded each span */
    ewi_operand_spans(n, operands, spans, names, lo, hi);
    names[spans] = call->params_name;
    params_span(call, i, &lo[spans], &hi[spans]);
    const ew_status_t status = ewi_check_reduction_scalar(call->scalar_name, call->scalar[i],
                                                          call->scalar_size, spans + 1, names, lo, hi);
    return status == EW_SUCCESS ? EW_SUCCESS : fail_entry(status, i);
}

/* Every entry of a list of `pointers` pointers by the flat call's rules; *rows: the rows they make
 * (src/plan/batched.h). Inlined for each count, so that the check's loops over the pointers unroll: about
 * half the time of calling it per entry. */
static inline __attribute__((always_inline)) ew_status_t check_each(const list_call_t *call, int pointers,
                                                                    int64_t *rows)
{
    ewi_operand_t operands[EW_PLAN_MAX_CALL_POINTERS];
    for (int j = 0; j < pointers; ++j) {
        operands[j].name = call->name[j];
        operands[j].elem_size = call->elem_size[j];
    }
    const int scalars = call->scalar_column && call->scalar != NULL;
    for (int64_t i = 0; i < call->count; ++i) {
        const int64_t n = call->n[i];
        ew_status_t status;
        if (n <= 0) {
            if (n < 0)
                return ewi_fail(EW_ERROR_INVALID_VALUE, "entry %lld: n = %lld is negative", (long long)i,
                                (long long)n);
            if (scalars && (status = check_scalar(call, i, 0, operands, pointers)) != EW_SUCCESS)
                return status;
            continue;
        }
        for (int j = 0; j < pointers; ++j)
            operands[j].address = call->address[j][i];
        status = ewi_check_operands(n, operands, call->outputs, pointers);
        if (status != EW_SUCCESS)
            return fail_entry(status, i);
        if (call->params_column && (status = check_params(call, i, n, operands)) != EW_SUCCESS)
            return status;
        if (scalars && (status = check_scalar(call, i, n, operands, pointers)) != EW_SUCCESS)
            return status;
        *rows += n / EW_BATCHED_MAX_ROW + (n % EW_BATCHED_MAX_ROW != 0); /* n + MAX_ROW may leave int64 */
    }
    return EW_SUCCESS;
}

/* The entries' own parameters, count * params_stride bytes at params: aligned to their elements (a
 * double's 8 bytes, or a float's 4) and inside the address space; given where none are read (a kernel
 * of no parameters), aligned still. */
static ew_status_t check_params_column(const list_call_t *call)
{
    if (call->params == NULL)
        return EW_SUCCESS;
    const size_t align = call->params_stride % 8 == 0 ? 8 : 4;
    uintptr_t bytes;
    if ((uintptr_t)call->params % align != 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s = %p is not aligned to its %zu-byte elements",
                        call->params_name, call->params, align);
    if (__builtin_mul_overflow((uintptr_t)call->count, (uintptr_t)call->params_stride, &bytes) ||
        bytes > UINTPTR_MAX - (uintptr_t)call->params)
        return ewi_fail(EW_ERROR_INVALID_VALUE,
                        "%s: %lld entries of %zu bytes run past the end of the address space",
                        call->params_name, (long long)call->count, call->params_stride);
    return EW_SUCCESS;
}

/* The arrays, then every entry; *rows: the rows they make. */
static ew_status_t check_entries(const list_call_t *call, int64_t *rows)
{
    *rows = 0;
    if (call->count < 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "count = %lld is negative", (long long)call->count);
    if (call->count == 0)
        return EW_SUCCESS;
    if (call->n == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "n is NULL with count = %lld", (long long)call->count);
    for (int j = 0; j < call->pointers; ++j)
        if (call->address[j] == NULL)
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s is NULL with count = %lld", call->name[j],
                            (long long)call->count);
    if (call->scalar_column && call->scalar == NULL && !call->scalar_optional)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s is NULL with count = %lld", call->scalar_name,
                        (long long)call->count);
    ew_status_t status = check_params_column(call);
    if (status != EW_SUCCESS)
        return status;
    return call->pointers == 3 && call->outputs == 1   ? check_each(call, 3, rows)
           : call->pointers == 2 && call->outputs == 1 ? check_each(call, 2, rows)
                                                       : check_each(call, call->pointers, rows);
}

/* ---- EW_CHECK_POINTERS: the driver's view of every pointer, and overlaps between entries ---- */

typedef struct {
    uintptr_t begin, end;
    int64_t entry;
    int role; /* index of the pointer in the call: the outputs' first; call->pointers: the scalar;
               * call->pointers + 1: the entries' own parameters, the whole column (read by all) */
} range_t;

static int by_begin(const void *x, const void *y)
{
    const range_t *a = x, *b = y;
    return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/* The farthest-reaching ranges seen so far from two different entries. */
typedef struct {
    range_t best, second;
} reach_t;

static void reach_add(reach_t *reach, const range_t *r)
{
    if (r->entry == reach->best.entry) {
        if (r->end > reach->best.end)
            reach->best = *r;
    } else if (r->end > reach->best.end) {
        reach->second = reach->best;
        reach->best = *r;
    } else if (r->end > reach->second.end) {
        reach->second = *r;
    }
}

/* A range seen so far, of another entry than r's, that reaches past r's start; NULL if none. */
static const range_t *reach_overlap(const reach_t *reach, const range_t *r)
{
    const range_t *other = reach->best.entry != r->entry ? &reach->best : &reach->second;
    return other->entry >= 0 && other->end > r->begin ? other : NULL;
}

/* A range's name in messages: its pointer's, the scalar's or the parameters'. */
static const char *range_name(const list_call_t *call, const range_t *r)
{
    return r->role < call->pointers ? call->name[r->role] : r->role == call->pointers ? call->scalar_name
                                                                                      : call->params_name;
}

/* Outputs overlapping another entry's operand: the ranges sorted by their starts; in that order an out
 * overlaps an earlier range of another entry, or an input an earlier out, exactly when the
 * farthest-reaching such range passes its start. A reduction's scalar is written as an out is but may
 * be another entry's scalar too (entries may share one): it meets no array or input of another entry
 * (of its own: check_scalar). The entries' own parameters are one input of an entry of their own,
 * count: every entry reads the column, so no output or scalar meets any of it. Needs no device. */
static ew_status_t check_overlaps(const list_call_t *call)
{
    const int has_scalars = call->scalar_column && call->scalar != NULL;
    const int has_params = call->params_column && call->params != NULL;
    int64_t ranges = has_params;
    for (int64_t i = 0; i < call->count; ++i)
        ranges += (call->n[i] > 0 ? call->pointers : 0) + has_scalars;
    range_t *range = malloc((size_t)(ranges > 0 ? ranges : 1) * sizeof *range);
    if (range == NULL)
        return ewi_fail(EW_ERROR_OUT_OF_MEMORY, "no host memory to sort the %lld ranges of EW_CHECK_POINTERS",
                        (long long)ranges);
    int64_t k = 0;
    for (int64_t i = 0; i < call->count; ++i)
        for (int j = 0; call->n[i] > 0 && j < call->pointers; ++j) {
            uintptr_t begin = (uintptr_t)call->address[j][i];
            range[k++] = (range_t){begin, begin + (uintptr_t)call->n[i] * call->elem_size[j], i, j};
        }
    for (int64_t i = 0; has_scalars && i < call->count; ++i) {
        uintptr_t begin = (uintptr_t)call->scalar[i];
        range[k++] = (range_t){begin, begin + call->scalar_size, i, call->pointers};
    }
    if (has_params) { /* inside the address space: check_params_column */
        uintptr_t begin = (uintptr_t)call->params;
        range[k++] = (range_t){begin, begin + (uintptr_t)call->count * call->params_stride, call->count,
                               call->pointers + 1};
    }
    qsort(range, (size_t)ranges, sizeof *range, by_begin);
    const range_t none = {0, 0, -1, 0};
    reach_t outs = {none, none}, all = {none, none}, scalars = {none, none}; /* all: arrays and inputs */
    ew_status_t status = EW_SUCCESS;
    for (int64_t r = 0; r < ranges && status == EW_SUCCESS; ++r) {
        const range_t *at = &range[r];
        const int scalar = at->role == call->pointers, written = scalar || at->role < call->outputs;
        const range_t *other = reach_overlap(written ? &all : &outs, at);
        if (other == NULL && !scalar)
            other = reach_overlap(&scalars, at);
        if (other != NULL) {
            const int other_written = other->role < call->outputs || other->role == call->pointers;
            const range_t *out = other_written ? other : at, *operand = other_written ? at : other;
            char whose[96] = ", which every entry reads"; /* the parameters' column */
            if (operand->entry != call->count)
                snprintf(whose, sizeof whose, " of entry %lld; no entry may overlap another entry's output",
                         (long long)operand->entry);
            status = ewi_fail(EW_ERROR_INVALID_VALUE, "entry %lld: %s [%p, +%lld bytes) overlaps %s%s",
                              (long long)out->entry, range_name(call, out), (void *)out->begin,
                              (long long)(out->end - out->begin), range_name(call, operand), whose);
        }
        if (scalar) {
            reach_add(&scalars, at);
            continue;
        }
        if (written)
            reach_add(&outs, at);
        reach_add(&all, at);
    }
    free(range);
    return status;
}

/* Every pointer is device memory of the handle's device, its whole range inside one allocation. */
static ew_status_t check_with_driver(const ewi_handle_t *handle, const list_call_t *call)
{
    for (int64_t i = 0; i < call->count; ++i)
        for (int j = 0; call->n[i] > 0 && j < call->pointers; ++j) {
            char name[64];
            snprintf(name, sizeof name, "entry %lld: %s", (long long)i, call->name[j]);
            ew_status_t status = ewi_check_pointer(handle->device, name, call->address[j][i],
                                                   (size_t)call->n[i] * call->elem_size[j]);
            if (status != EW_SUCCESS)
                return status;
        }
    if (call->params_column && call->params != NULL) {
        ew_status_t status = ewi_check_pointer(handle->device, call->params_name, call->params,
                                               (size_t)call->count * call->params_stride);
        if (status != EW_SUCCESS)
            return status;
    }
    for (int64_t i = 0; call->scalar_column && call->scalar != NULL && i < call->count; ++i) {
        if (i > 0 && call->scalar[i] == call->scalar[i - 1]) /* a shared scalar: asked once */
            continue;
        char name[64];
        snprintf(name, sizeof name, "entry %lld: %s", (long long)i, call->scalar_name);
        ew_status_t status = ewi_check_pointer(handle->device, name, call->scalar[i], call->scalar_size);
        if (status != EW_SUCCESS)
            return status;
    }
    return EW_SUCCESS;
}

/* ---- launching ---- */

/* Whether launches may take 32 KiB of parameters: the runtime built against and the driver are CUDA
 * 12.1 or later (every supported GPU is cc >= 7.0). EW_BATCHED_PARAMS=4096 (tests) keeps them at 4 KiB.
 * Found once per process. */
static int large_params_allowed(void)
{
    static atomic_int answer; /* 0: not yet; 1: no; 2: yes */
    int known = atomic_load_explicit(&answer, memory_order_relaxed);
    if (known != 0)
        return known == 2;
    int driver = 0;
    int yes = CUDART_VERSION >= 12010 && cudaDriverGetVersion(&driver) == cudaSuccess && driver >= 12010;
    cudaGetLastError();
    const char *forced = getenv("EW_BATCHED_PARAMS");
    if (forced != NULL && strcmp(forced, "4096") == 0)
        yes = 0;
    atomic_store_explicit(&answer, yes ? 2 : 1, memory_order_relaxed);
    return yes;
}

ew_status_t ewi_check_list(ewi_handle_t *handle, const list_call_t *call, int64_t *rows)
{
    ew_status_t status = check_entries(call, rows);
    if (status != EW_SUCCESS || (*rows == 0 && !call->reset)) /* empty entries' scalars are still reset */
        return status;
    if (handle->check_pointers && (status = check_overlaps(call)) != EW_SUCCESS)
        return status;
    if ((status = ewi_handle_check_device(handle)) != EW_SUCCESS)
        return status;
    return handle->check_pointers ? check_with_driver(handle, call) : EW_SUCCESS;
}

ew_status_t ewi_launch_list(const ewi_handle_t *handle, const ew_kernel_set_t *set, const list_call_t *call,
                            int64_t rows, const ew_functor_t *functor, ew_stream_t stream)
{
    /* The 32 KiB kernel only where one 4 KiB block would not hold the list: the driver copies every
     * parameter byte at each launch. */
    const int large = large_params_allowed() &&
                      rows > EW_BATCHED_CAPACITY(EW_BATCHED_SMALL_BLOCK,
                                                 call->pointers + call->params_column + call->scalar_column);
    ew_batched_list_t list = {.count = call->count,
                              .n = call->n,
                              .pointers = call->pointers,
                              .params_column = call->params_column,
                              .params = call->params,
                              .params_stride = call->params_stride,
                              .scalar_column = call->scalar_column,
                              .scalar = call->scalar,
                              .block_bytes = large ? EW_BATCHED_LARGE_BLOCK : EW_BATCHED_SMALL_BLOCK,
                              .target_blocks = (int64_t)handle->figures.sm_count *
                                               handle->figures.max_threads_per_sm / EW_PLAN_BLOCK_THREADS};
    for (int j = 0; j < call->pointers; ++j) {
        list.address[j] = call->address[j];
        list.elem_size[j] = call->elem_size[j];
    }
    const ew_launch_t how = ewi_launch_of(handle, stream);
    ew_status_t status;
    if (call->reset) { /* every reset before the first fold: entries of any blocks may share a scalar */
        ew_batched_reset_t reset;
        reset.bytes = (uint32_t)call->scalar_size;
        reset.value = call->reset_value;
        for (int64_t entry = 0; ew_batched_next_reset(&list, &entry, &reset);)
            if ((status = ew_launch_batched_reset(ew_dispatch_reset_kernel(), &reset, &how)) != EW_SUCCESS)
                return status;
    }
    ew_batched_desc_t desc;
    ew_batched_cursor_t cursor = {0, 0};
    while (ew_batched_next(&list, &cursor, &desc))
        if ((status = ew_launch_batched(set, &desc, large, functor, &how)) != EW_SUCCESS)
            return status;
    return EW_SUCCESS;
}

/* A catalogue list call of one dtype: out and x (pointers 2), or out, a and b (3). */
static list_call_t list_of_one_dtype(int64_t count, const int64_t *n, int pointers, void *const *out,
                                     const void *const *a, const void *const *b, size_t size)
{
    list_call_t call = {.count = count,
                        .n = n,
                        .outputs = 1,
                        .pointers = pointers,
                        .name = {"out", pointers == 3 ? "a" : "x", "b"},
                        .address = {(const void *const *)out, a, b},
                        .elem_size = {size, size, size}};
    return call;
}

ew_status_t ewi_run_list(ewi_handle_t *handle, const ew_kernel_set_t *set, const list_call_t *call,
                         const ew_op_params_t *params, ew_stream_t stream)
{
    int64_t rows;
    ew_status_t status = ewi_check_list(handle, call, &rows);
    if (status != EW_SUCCESS || (rows == 0 && !call->reset))
        return status;
    ew_functor_t functor;
    set->make_functor(params, &functor);
    return ewi_launch_list(handle, set, call, rows, &functor, stream);
}

ew_status_t ew_unary_batched(ew_handle_t handle, ew_op_t op, ew_dtype_t dtype, int64_t count, const int64_t *n,
                             void *const *out, const void *const *x, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status = ewi_find(handle, "ew_unary_batched", EW_CALL_UNARY, op, dtype, dtype, &h, &set);
    if (status != EW_SUCCESS)
        return status;
    const list_call_t call = list_of_one_dtype(count, n, 2, out, x, NULL, ew_dtype_size(dtype));
    const ew_op_params_t params = {0};
    return ewi_run_list(h, set, &call, &params, stream);
}

ew_status_t ew_binary_batched(ew_handle_t handle, ew_op_t op, ew_dtype_t dtype, int64_t count, const int64_t *n,
                              void *const *out, const void *const *a, const void *const *b, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status =
        ewi_find(handle, "ew_binary_batched", EW_CALL_BINARY, op, dtype, dtype, &h, &set);
    if (status != EW_SUCCESS)
        return status;
    const list_call_t call = list_of_one_dtype(count, n, 3, out, a, b, ew_dtype_size(dtype));
    const ew_op_params_t params = {0};
    return ewi_run_list(h, set, &call, &params, stream);
}

ew_status_t ew_cast_batched(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t count,
                            const int64_t *n, void *const *out, const void *const *x, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status =
        ewi_find(handle, "ew_cast_batched", EW_CALL_CAST, EW_OP_CAST, out_dtype, in_dtype, &h, &set);
    if (status != EW_SUCCESS)
        return status;
    const list_call_t call = {.count = count,
                              .n = n,
                              .outputs = 1,
                              .pointers = 2,
                              .name = {"out", "x"},
                              .address = {(const void *const *)out, x},
                              .elem_size = {ew_dtype_size(out_dtype), ew_dtype_size(in_dtype)}};
    const ew_op_params_t params = {0};
    return ewi_run_list(h, set, &call, &params, stream);
}

ew_status_t ew_scale_add_batched(ew_handle_t handle, ew_dtype_t dtype, double alpha, int64_t count,
                                 const int64_t *n, void *const *out, const void *const *a, const void *const *b,
                                 ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_op_params_t params;
    ew_status_t status =
        ewi_find_scale_add(handle, "ew_scale_add_batched", dtype, alpha, &h, &set, &params);
    if (status != EW_SUCCESS)
        return status;
    const list_call_t call = list_of_one_dtype(count, n, 3, out, a, b, ew_dtype_size(dtype));
    return ewi_run_list(h, set, &call, &params, stream);
}
