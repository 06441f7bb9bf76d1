/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI's flat operations: argument validation, the dispatch table's entry, the plan, the launch,
 * and the checks every call family shares (src/abi/api.h). The handle is in src/abi/handle.c, the catalogue's
 * names and sizes in src/catalogue/catalogue.c, error text in src/abi/error.c; the strided and batched calls in
 * src/abi/api_strided.c and src/abi/api_batched.c. */
#include <math.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "abi/api.h"
#include "catalogue/catalogue.h"
#include "catalogue/dispatch.h"
#include "launch/launch.h"
#include "elementwise.h"
#include "abi/error.h"
#include "abi/handle.h"
#include "plan/plan.h"
#include "abi/pointer_check.h"

unsigned ew_get_version(void) { return EW_VERSION; }

int ew_is_supported(ew_op_t op, ew_dtype_t out_dtype, ew_dtype_t in_dtype)
{
    return ew_dispatch_find(op, out_dtype, in_dtype) != NULL;
}

ew_status_t ewi_find(ew_handle_t handle, const char *entry, int call, ew_op_t op, ew_dtype_t out_dtype,
                     ew_dtype_t in_dtype, ewi_handle_t **h, const ew_kernel_set_t **set)
{
    *set = NULL;
    ew_status_t status = ewi_handle_find(handle, h);
    if (status != EW_SUCCESS)
        return status;
    if (ewi_op_call(op) != call)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "op %d (%s) is not an op of %s", (int)op, ewi_op_name(op), entry);
    if ((*set = ew_dispatch_find(op, out_dtype, in_dtype)) == NULL) {
        if (EW_CALL_IS_PAIR(call))
            return ewi_fail(EW_ERROR_NOT_SUPPORTED, "%s from dtype %d (%s) to dtype %d (%s) is not in the catalogue",
                            ewi_op_name(op), (int)in_dtype, ew_dtype_name(in_dtype), (int)out_dtype,
                            ew_dtype_name(out_dtype));
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "op %d (%s) on dtype %d (%s) is not in the catalogue", (int)op,
                        ewi_op_name(op), (int)out_dtype, ew_dtype_name(out_dtype));
    }
    return EW_SUCCESS;
}

/* ewi_find, then n: *set is NULL when n == 0. */
static ew_status_t prepare(ew_handle_t handle, const char *entry, int call, ew_op_t op, ew_dtype_t out_dtype,
                           ew_dtype_t in_dtype, int64_t n, ewi_handle_t **h, const ew_kernel_set_t **set)
{
    ew_status_t status = ewi_find(handle, entry, call, op, out_dtype, in_dtype, h, set);
    if (status != EW_SUCCESS)
        return status;
    if (n < 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "n = %lld is negative", (long long)n);
    if (n == 0)
        *set = NULL;
    return EW_SUCCESS;
}

ew_status_t ewi_check_flat(ewi_handle_t *handle, int64_t n, const ewi_operand_t *operands, int outputs,
                           int count)
{
    ew_status_t status = ewi_check_operands(n, operands, outputs, count);
    if (status == EW_SUCCESS)
        status = ewi_handle_check_device(handle);
    for (int i = 0; status == EW_SUCCESS && handle->check_pointers && i < count; ++i)
        status = ewi_check_pointer(handle->device, operands[i].name, operands[i].address,
                                   (size_t)n * operands[i].elem_size);
    return status;
}

ew_plan_t ewi_plan_flat(const ewi_handle_t *handle, const ew_kernel_set_t *set, int64_t n,
                        const ewi_operand_t *operands, int outputs, int count, ew_call_t *call)
{
    /* a user kernel's bulk_blocks_per_sm is set once, by the launch that loads its bulk kernel */
    *call = (ew_call_t){.n = n,
                        .count = count,
                        .outputs = outputs,
                        .block_table = set->block_table,
                        .bulk_blocks_per_sm = __atomic_load_n(&set->bulk_blocks_per_sm, __ATOMIC_RELAXED)};
    for (int i = 0; i < count; ++i) {
        call->address[i] = (uintptr_t)operands[i].address;
        call->elem_size[i] = operands[i].elem_size;
    }
    return ew_plan_choose(&handle->policy, &handle->figures, call);
}

ew_status_t ewi_launch_flat(const ewi_handle_t *handle, const ew_kernel_set_t *set, int64_t n,
                            const ewi_operand_t *operands, int outputs, int count,
                            const ew_functor_t *functor, const ew_launch_t *how)
{
    ew_call_t call;
    const ew_plan_t plan = ewi_plan_flat(handle, set, n, operands, outputs, count, &call);
    return ew_launch_flat(set, &call, &plan, functor, how);
}

void ewi_view_spans(const ew_layout_t *layout, const ew_view_t *views, int count, const char *names[],
                    uintptr_t lo[], uintptr_t hi[])
{
    for (int k = 0; k < count; ++k) {
        names[k] = views[k].name;
        ew_layout_span(layout, k, &lo[k], &hi[k]);
    }
}

ew_status_t ewi_check_reduction_scalar(const char *name, const void *address, size_t size, int count,
                                       const char *const names[], const uintptr_t lo[], const uintptr_t hi[])
{
    const uintptr_t at = (uintptr_t)address;
    if (address == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s (the reduction's scalar) is NULL", name);
    if (at % size != 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s = %p is not aligned to its %zu bytes", name, address,
                        size);
    for (int k = 0; k < count; ++k)
        if (lo[k] < hi[k] && ewi_overlaps(at, at + size, lo[k], hi[k]))
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s (the reduction's scalar) lies inside %s", name,
                            names[k]);
    return EW_SUCCESS;
}

/* One device float: non-NULL unless optional, aligned to 4 bytes, and with EW_CHECK_POINTERS memory of
 * the handle's device. Checked before n, so that a bad scalar is refused even where nothing runs. */
ew_status_t ewi_check_scalar(ewi_handle_t *h, const char *name, const void *address, int optional)
{
    if (address == NULL)
        return optional ? EW_SUCCESS : ewi_fail(EW_ERROR_INVALID_VALUE, "%s is NULL", name);
    if (((uintptr_t)address & 3u) != 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s = %p is not aligned to 4 bytes", name, address);
    if (!h->check_pointers)
        return EW_SUCCESS;
    ew_status_t status = ewi_handle_check_device(h);
    return status != EW_SUCCESS ? status : ewi_check_pointer(h->device, name, address, sizeof(float));
}

ew_status_t ewi_check_scalars(const ew_op_params_t *params, int count, const char *const names[],
                              const uintptr_t lo[], const uintptr_t hi[])
{
    const uintptr_t scale = (uintptr_t)params->scale, reduction = (uintptr_t)params->reduction;
    if (scale != 0 && ewi_overlaps(scale, ewi_float_end(scale), lo[0], hi[0]))
        return ewi_fail(EW_ERROR_INVALID_VALUE, "scale %p lies inside %s", (const void *)params->scale, names[0]);
    if (reduction == 0)
        return EW_SUCCESS;
    for (int k = 0; k < count; ++k)
        if (ewi_overlaps(reduction, ewi_float_end(reduction), lo[k], hi[k]))
            return ewi_fail(EW_ERROR_INVALID_VALUE, "amax %p lies inside %s", (const void *)params->reduction,
                            names[k]);
    if (scale != 0 && ewi_overlaps(reduction, ewi_float_end(reduction), scale, ewi_float_end(scale)))
        return ewi_fail(EW_ERROR_INVALID_VALUE, "amax %p overlaps the scale", (const void *)params->reduction);
    return EW_SUCCESS;
}

ew_status_t ewi_run(ewi_handle_t *handle, const ew_kernel_set_t *set, int64_t n, const ewi_operand_t *operands,
                    int count, const ew_op_params_t *params, const ew_launch_t *how)
{
    /* the scalars against the operands, before the device: every argument's refusal comes first */
    if (params->scale != NULL || params->reduction != NULL) {
        ew_status_t status = ewi_check_operands(n, operands, 1, count);
        uintptr_t lo[EW_PLAN_MAX_POINTERS], hi[EW_PLAN_MAX_POINTERS];
        const char *names[EW_PLAN_MAX_POINTERS];
        ewi_operand_spans(n, operands, count, names, lo, hi);
        if (status != EW_SUCCESS || (status = ewi_check_scalars(params, count, names, lo, hi)) != EW_SUCCESS)
            return status;
    }
    ew_status_t status = ewi_check_flat(handle, n, operands, 1, count);
    if (status != EW_SUCCESS)
        return status;
    ew_functor_t functor;
    set->make_functor(params, &functor);
    return ewi_launch_flat(handle, set, n, operands, 1, count, &functor, how);
}

ew_status_t ew_unary(ew_handle_t handle, ew_op_t op, ew_dtype_t dtype, int64_t n, void *out, const void *x,
                     ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status = prepare(handle, "ew_unary", EW_CALL_UNARY, op, dtype, dtype, n, &h, &set);
    if (status != EW_SUCCESS || set == NULL)
        return status;
    size_t size = ew_dtype_size(dtype);
    ewi_operand_t operands[] = {{"out", out, size}, {"x", x, size}};
    const ew_op_params_t params = {0};
    const ew_launch_t how = ewi_launch_of(h, stream);
    return ewi_run(h, set, n, operands, 2, &params, &how);
}

ew_status_t ew_binary(ew_handle_t handle, ew_op_t op, ew_dtype_t dtype, int64_t n, void *out, const void *a,
                      const void *b, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status = prepare(handle, "ew_binary", EW_CALL_BINARY, op, dtype, dtype, n, &h, &set);
    if (status != EW_SUCCESS || set == NULL)
        return status;
    size_t size = ew_dtype_size(dtype);
    ewi_operand_t operands[] = {{"out", out, size}, {"a", a, size}, {"b", b, size}};
    const ew_op_params_t params = {0};
    const ew_launch_t how = ewi_launch_of(h, stream);
    return ewi_run(h, set, n, operands, 3, &params, &how);
}

ew_status_t ew_cast(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out,
                    const void *x, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status =
        prepare(handle, "ew_cast", EW_CALL_CAST, EW_OP_CAST, out_dtype, in_dtype, n, &h, &set);
    if (status != EW_SUCCESS || set == NULL)
        return status;
    ewi_operand_t operands[] = {{"out", out, ew_dtype_size(out_dtype)}, {"x", x, ew_dtype_size(in_dtype)}};
    const ew_op_params_t params = {0};
    const ew_launch_t how = ewi_launch_of(h, stream);
    return ewi_run(h, set, n, operands, 2, &params, &how);
}

/* Integer dtypes take alpha as an exact integer, a wrapping multiplier, as PyTorch does: a signed
 * dtype in its own range, an unsigned one in [-max, max] (taken modulo 2^N), bool 0 or 1. */
static ew_status_t integer_alpha(ew_dtype_t dtype, double alpha, uint64_t *alpha_integer)
{
    const int kind = ewi_dtype_kind(dtype);
    const double values = ldexp(1.0, 8 * (int)ew_dtype_size(dtype)); /* 2^N */
    const double min = kind == EW_KIND_BOOL ? 0 : kind == EW_KIND_UINT ? -(values - 1) : -values / 2;
    const double max = kind == EW_KIND_BOOL ? 1 : kind == EW_KIND_UINT ? values - 1 : values / 2 - 1;
    /* max + 1 is exact where max itself may not be a double (i64) */
    if (!(alpha >= min && alpha < max + 1) || alpha != floor(alpha))
        return ewi_fail(EW_ERROR_INVALID_VALUE, "alpha = %.17g is not an integer representable in %s", alpha,
                        ew_dtype_name(dtype));
    *alpha_integer = (uint64_t)(int64_t)alpha;
    return EW_SUCCESS;
}

ew_status_t ewi_scale_add_params(ew_dtype_t dtype, double alpha, ew_op_params_t *params)
{
    *params = (ew_op_params_t){.alpha = alpha}; /* the rest, the scaled casts' pointers included, NULL */
    if ((ewi_dtype_kind(dtype) & (EW_KIND_BOOL | EW_KINDS_INTEGER)) == 0)
        return EW_SUCCESS;
    return integer_alpha(dtype, alpha, &params->alpha_integer);
}

ew_status_t ewi_find_scale_add(ew_handle_t handle, const char *entry, ew_dtype_t dtype, double alpha,
                               ewi_handle_t **h, const ew_kernel_set_t **set, ew_op_params_t *params)
{
    ew_status_t status =
        ewi_find(handle, entry, EW_CALL_SCALE_ADD, EW_OP_SCALE_ADD, dtype, dtype, h, set);
    return status != EW_SUCCESS ? status : ewi_scale_add_params(dtype, alpha, params);
}

ew_status_t ew_scale_add(ew_handle_t handle, ew_dtype_t dtype, double alpha, int64_t n, void *out,
                         const void *a, const void *b, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status =
        prepare(handle, "ew_scale_add", EW_CALL_SCALE_ADD, EW_OP_SCALE_ADD, dtype, dtype, n, &h, &set);
    if (status != EW_SUCCESS)
        return status;
    /* alpha is part of the op, so it is checked even when n == 0 (as PyTorch does on empty tensors) */
    ew_op_params_t params;
    if ((status = ewi_scale_add_params(dtype, alpha, &params)) != EW_SUCCESS)
        return status;
    if (set == NULL)
        return EW_SUCCESS;
    size_t size = ew_dtype_size(dtype);
    ewi_operand_t operands[] = {{"out", out, size}, {"a", a, size}, {"b", b, size}};
    const ew_launch_t how = ewi_launch_of(h, stream);
    return ewi_run(h, set, n, operands, 3, &params, &how);
}
