/* SPDX-License-Identifier: Apache-2.0 */
/* What the C ABI's call families (flat, strided, batched, user kernels) share: finding the entry,
 * checking operands, scale_add's alpha, and the flat call's plan and launch. Defined in src/abi/api.c, but
 * the operand check. */
#ifndef EW_API_INTERNAL_H
#define EW_API_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "catalogue/dispatch.h"
#include "launch/launch.h"
#include "elementwise.h"
#include "abi/error.h"
#include "abi/handle.h"
#include "plan/layout.h"
#include "catalogue/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One pointer of a call, named for error messages ("out", "a", ...). */
typedef struct {
    const char *name;
    const void *address;
    size_t elem_size;
} ewi_operand_t;

/* Finds the handle's object (*h) and op on (out_dtype, in_dtype) in the dispatch table. call: how the
 * entry point takes its op (EW_CALL_*); entry: its name, for messages. *set is never NULL on
 * success. */
ew_status_t ewi_find(ew_handle_t handle, const char *entry, int call, ew_op_t op, ew_dtype_t out_dtype,
                     ew_dtype_t in_dtype, ewi_handle_t **h, const ew_kernel_set_t **set);

/* Flat operands of n > 0 elements (the outputs first): non-NULL, aligned to their element size, inside
 * the address space, an output overlapping an input only exactly in place with equal element sizes and
 * no other output at all (any other overlap is refused). Inline: the tensor lists check every entry with
 * it. */
static inline ew_status_t ewi_check_operands(int64_t n, const ewi_operand_t *operands, int outputs, int count)
{
    uintptr_t end[EW_PLAN_MAX_CALL_POINTERS];
    for (int i = 0; i < count; ++i) {
        const ewi_operand_t *p = &operands[i];
        uintptr_t address = (uintptr_t)p->address;
        if (p->address == NULL)
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s is NULL with n = %lld", p->name, (long long)n);
        if ((address & (p->elem_size - 1)) != 0) /* element sizes are powers of two */
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s = %p is not aligned to its element size %zu", p->name,
                            p->address, p->elem_size);
        uintptr_t bytes;
        if (__builtin_mul_overflow((uintptr_t)n, (uintptr_t)p->elem_size, &bytes) ||
            bytes > UINTPTR_MAX - address)
            return ewi_fail(EW_ERROR_INVALID_VALUE,
                            "%s: n = %lld elements run past the end of the address space", p->name, (long long)n);
        end[i] = address + bytes;
    }
    for (int o = 0; o < outputs; ++o)
        for (int i = o + 1; i < count; ++i) {
            uintptr_t out = (uintptr_t)operands[o].address, other = (uintptr_t)operands[i].address;
            if (i >= outputs && out == other && operands[o].elem_size == operands[i].elem_size)
                continue;
            if (out < end[i] && other < end[o])
                return ewi_fail(EW_ERROR_INVALID_VALUE,
                                i < outputs ? "%s [%p, +%lld elements) overlaps %s; outputs are apart"
                                            : "%s [%p, +%lld elements) overlaps %s; only exact in-place with "
                                              "equal element sizes is allowed",
                                operands[o].name, operands[o].address, (long long)n, operands[i].name);
        }
    return EW_SUCCESS;
}

/* scale_add's parameters from alpha: integer dtypes take it as an exact integer in their range. */
ew_status_t ewi_scale_add_params(ew_dtype_t dtype, double alpha, ew_op_params_t *params);

/* ewi_find for scale_add on dtype, then its parameters from alpha (checked even where nothing runs, as
 * the flat call checks them at n == 0). */
ew_status_t ewi_find_scale_add(ew_handle_t handle, const char *entry, ew_dtype_t dtype, double alpha,
                               ewi_handle_t **h, const ew_kernel_set_t **set, ew_op_params_t *params);

/* A flat call of n > 0 elements: the operands (ewi_check_operands), the device and, where the handle
 * checks pointers, each pointer against the device's memory. */
ew_status_t ewi_check_flat(ewi_handle_t *handle, int64_t n, const ewi_operand_t *operands, int outputs,
                           int count);

/* A checked flat call's plan on set's kernels, and in *call what it plans (ew_launch_flat's call). */
ew_plan_t ewi_plan_flat(const ewi_handle_t *handle, const ew_kernel_set_t *set, int64_t n,
                        const ewi_operand_t *operands, int outputs, int count, ew_call_t *call);

/* A checked flat call planned and launched on set's kernels. */
ew_status_t ewi_launch_flat(const ewi_handle_t *handle, const ew_kernel_set_t *set, int64_t n,
                            const ewi_operand_t *operands, int outputs, int count,
                            const ew_functor_t *functor, const ew_launch_t *how);

/* A catalogue call: ewi_check_flat, then ewi_launch_flat with the functor built from params. */
ew_status_t ewi_run(ewi_handle_t *handle, const ew_kernel_set_t *set, int64_t n, const ewi_operand_t *operands,
                    int count, const ew_op_params_t *params, const ew_launch_t *how);

/* The scaled calls' device scalars (params->scale, params->reduction) against the operands' byte
 * spans [lo, hi), out first (names: theirs, for messages): neither scalar inside out, the reduction's inside no input and not on
 * the scale. Nothing to check for the other ops (both NULL). */
ew_status_t ewi_check_scalars(const ew_op_params_t *params, int count, const char *const names[],
                              const uintptr_t lo[], const uintptr_t hi[]);

/* Whether the byte spans [a, a_end) and [b, b_end) meet. */
static inline int ewi_overlaps(uintptr_t a, uintptr_t a_end, uintptr_t b, uintptr_t b_end)
{
    return a < b_end && b < a_end;
}

/* A user kernel's reduction scalar (name: its output's, "outputs[k]") of size bytes against the
 * launch's operands' byte spans [lo[k], hi[k]) (names: theirs): set, aligned to its size, inside no
 * operand. The flat, strided and list launches' one rule; the list checks each entry's scalar
 * against its own entry's spans. */
ew_status_t ewi_check_reduction_scalar(const char *name, const void *address, size_t size, int count,
                                       const char *const names[], const uintptr_t lo[], const uintptr_t hi[]);

/* The byte spans [lo[k], hi[k]) and names (unless names is NULL: the caller has them) of count operands
 * of n elements each, which a scalar is checked against (ewi_check_scalars, ewi_check_reduction_scalar).
 * Inline: a list's check calls it per entry. */
static inline void ewi_operand_spans(int64_t n, const ewi_operand_t *operands, int count, const char *names[],
                                     uintptr_t lo[], uintptr_t hi[])
{
    for (int k = 0; k < count; ++k) {
        if (names != NULL)
            names[k] = operands[k].name;
        lo[k] = (uintptr_t)operands[k].address;
        hi[k] = lo[k] + (uintptr_t)n * operands[k].elem_size;
    }
}

/* The same of a layout's count operands (views: their names). */
void ewi_view_spans(const ew_layout_t *layout, const ew_view_t *views, int count, const char *names[],
                    uintptr_t lo[], uintptr_t hi[]);

/* The end of a device float at address, at the top of the address space the last address. */
static inline uintptr_t ewi_float_end(uintptr_t address)
{
    return address <= UINTPTR_MAX - 4 ? address + 4 : UINTPTR_MAX;
}

/* One device float (a scale, an amax): non-NULL unless optional, aligned to 4 bytes, and with
 * EW_CHECK_POINTERS memory of the handle's device. */
ew_status_t ewi_check_scalar(ewi_handle_t *h, const char *name, const void *address, int optional);

/* How the handle's calls launch on stream (no reduction scalar to reset). */
static inline ew_launch_t ewi_launch_of(const ewi_handle_t *handle, ew_stream_t stream)
{
    return (ew_launch_t){.stream = (cudaStream_t)stream, .dependent = handle->policy.dependent_launch};
}

/* A strided catalogue call (views[0] is out): the views checked and coalesced, then the flat call where
 * the layout is flat, else the strided plan's kernel. Defined in src/abi/api_strided.c. */
ew_status_t ewi_run_strided(ewi_handle_t *handle, const ew_kernel_set_t *set, int ndim, const int64_t *shape,
                            const ew_view_t *views, int count, const ew_op_params_t *params,
                            const ew_launch_t *how);

/* Before a strided launch of a layout that is not flat (views[0] is out): the device check and, where
 * the handle checks pointers, each operand's span against the device's memory. Defined in
 * src/abi/api_strided.c. */
ew_status_t ewi_check_strided(ewi_handle_t *handle, const ew_layout_t *layout, const ew_view_t *views,
                              int count);

/* One tensor-list call: count entries of n[i] elements, its pointer arrays (the outputs' first) with
 * their names and element sizes; for a user kernel of parameters or a scaled cast's scales, the entries'
 * own parameters' column (src/plan/batched.h: params_column, each entry's params_stride bytes at
 * params + i * params_stride, named params_name; NULL for the launch's); for a functor that reduces,
 * its scalars' column (scalar_column: entry i's at scalar[i], of scalar_size bytes, named scalar_name;
 * scalar NULL only where scalar_optional: no entry has one), each first set to reset_value's bits where
 * reset (EW_REDUCE_OVERWRITE), an empty entry's too. */
typedef struct {
    int64_t count;
    const int64_t *n;
    int outputs; /* arrays written, the first pointers */
    int pointers;
    const char *name[EW_PLAN_MAX_CALL_POINTERS];
    const void *const *address[EW_PLAN_MAX_CALL_POINTERS];
    size_t elem_size[EW_PLAN_MAX_CALL_POINTERS];
    int params_column;
    const void *params;
    size_t params_stride;
    const char *params_name;
    int scalar_column;
    const void *const *scalar;
    int scalar_optional;
    const char *scalar_name;
    size_t scalar_size;
    int reset;
    unsigned long long reset_value;
} ewi_list_call_t;

/* A list call's checks: every entry with the flat call's rules (messages name the entry), its scalar
 * with ewi_check_reduction_scalar's, the device where anything runs, with EW_CHECK_POINTERS every
 * pointer and the entries' overlaps. *rows: the rows its entries make (0 and no reset: nothing to
 * launch). Defined in src/abi/api_batched.c. */
ew_status_t ewi_check_list(ewi_handle_t *handle, const ewi_list_call_t *call, int64_t *rows);

/* A checked list call of `rows` rows packed into launches of set's list slots, each with functor; where
 * its scalars are reset, the reset kernel's launches first (rows may then be 0). */
ew_status_t ewi_launch_list(const ewi_handle_t *handle, const ew_kernel_set_t *set,
                            const ewi_list_call_t *call, int64_t rows, const ew_functor_t *functor,
                            ew_stream_t stream);

/* A catalogue list call: ewi_check_list, then ewi_launch_list with its functor from params (the entries'
 * own parameters and scalars come from their columns). */
ew_status_t ewi_run_list(ewi_handle_t *handle, const ew_kernel_set_t *set, const ewi_list_call_t *call,
                         const ew_op_params_t *params, ew_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif
