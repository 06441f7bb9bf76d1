/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI's strided operations: the views checked and coalesced (src/plan/layout.c), a layout contiguous
 * alike in every operand handed to the flat call, any other planned and launched on the rows, the
 * gather or the tiled kernel. */
#include <stdint.h>

#include "abi/api.h"
#include "catalogue/catalogue.h"
#include "abi/error.h"
#include "abi/handle.h"
#include "plan/layout.h"
#include "abi/pointer_check.h"

ew_status_t ewi_check_strided(ewi_handle_t *handle, const ew_layout_t *layout, const ew_view_t *views,
                              int count)
{
    ew_status_t status = ewi_handle_check_device(handle);
    for (int k = 0; status == EW_SUCCESS && handle->check_pointers && k < count; ++k) {
        uintptr_t lo, hi;
        ew_layout_span(layout, k, &lo, &hi);
        status = ewi_check_pointer(handle->device, views[k].name, (const void *)lo, hi - lo);
    }
    return status;
}

ew_status_t ewi_run_strided(ewi_handle_t *handle, const ew_kernel_set_t *set, int ndim, const int64_t *shape,
                            const ew_view_t *views, int count, const ew_op_params_t *params,
                            const ew_launch_t *how)
{
    ew_layout_t layout;
    ew_status_t status = ew_layout_make(ndim, shape, count, 1u, views, &layout);
    if (status != EW_SUCCESS)
        return status;
    if (layout.n == 0) /* nothing runs, but an overwritten reduction is still set to zero */
        return how->reset == NULL || (status = ewi_handle_check_device(handle)) != EW_SUCCESS ? status
                                                                                             : ew_launch_reset(how);
    if (ew_layout_is_flat(&layout)) {
        ewi_operand_t operands[EW_LAYOUT_MAX_OPERANDS];
        for (int k = 0; k < count; ++k)
            operands[k] = (ewi_operand_t){views[k].name, (const void *)layout.base[k], views[k].elem_size};
        return ewi_run(handle, set, layout.n, operands, count, params, how);
    }
    if (params->scale != NULL || params->reduction != NULL) {
        uintptr_t lo[EW_LAYOUT_MAX_OPERANDS], hi[EW_LAYOUT_MAX_OPERANDS];
        const char *names[EW_LAYOUT_MAX_OPERANDS];
        ewi_view_spans(&layout, views, count, names, lo, hi);
        if ((status = ewi_check_scalars(params, count, names, lo, hi)) != EW_SUCCESS)
            return status;
    }
    if ((status = ewi_check_strided(handle, &layout, views, count)) != EW_SUCCESS)
        return status;
    const ew_strided_plan_t plan = ew_strided_plan_make(&layout, &handle->policy);
    void *const out[EW_PLAN_MAX_OUTPUTS] = {(void *)layout.base[0]};
    const void *in[EW_PLAN_MAX_INPUTS] = {NULL};
    for (int k = 1; k < count; ++k)
        in[k - 1] = (const void *)layout.base[k];
    ew_functor_t functor;
    set->make_functor(params, &functor);
    return ew_launch_strided(set, &plan, out, in, &functor, how);
}

ew_status_t ew_unary_strided(ew_handle_t handle, ew_op_t op, ew_dtype_t dtype, int ndim, const int64_t *shape,
                             void *out, const int64_t *out_strides, const void *x, const int64_t *x_strides,
                             ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status = ewi_find(handle, "ew_unary_strided", EW_CALL_UNARY, op, dtype, dtype, &h, &set);
    if (status != EW_SUCCESS)
        return status;
    const size_t size = ew_dtype_size(dtype);
    const ew_view_t views[] = {{"out", "out_strides", out, out_strides, size}, {"x", "x_strides", x, x_strides, size}};
    const ew_op_params_t params = {0};
    const ew_launch_t how = ewi_launch_of(h, stream);
    return ewi_run_strided(h, set, ndim, shape, views, 2, &params, &how);
}

ew_status_t ew_binary_strided(ew_handle_t handle, ew_op_t op, ew_dtype_t dtype, int ndim, const int64_t *shape,
                              void *out, const int64_t *out_strides, const void *a, const int64_t *a_strides,
                              const void *b, const int64_t *b_strides, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status =
        ewi_find(handle, "ew_binary_strided", EW_CALL_BINARY, op, dtype, dtype, &h, &set);
    if (status != EW_SUCCESS)
        return status;
    const size_t size = ew_dtype_size(dtype);
    const ew_view_t views[] = {{"out", "out_strides", out, out_strides, size},
                               {"a", "a_strides", a, a_strides, size},
                               {"b", "b_strides", b, b_strides, size}};
    const ew_op_params_t params = {0};
    const ew_launch_t how = ewi_launch_of(h, stream);
    return ewi_run_strided(h, set, ndim, shape, views, 3, &params, &how);
}

ew_status_t ew_cast_strided(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int ndim,
                            const int64_t *shape, void *out, const int64_t *out_strides, const void *x,
                            const int64_t *x_strides, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status =
        ewi_find(handle, "ew_cast_strided", EW_CALL_CAST, EW_OP_CAST, out_dtype, in_dtype, &h, &set);
    if (status != EW_SUCCESS)
        return status;
    const ew_view_t views[] = {{"out", "out_strides", out, out_strides, ew_dtype_size(out_dtype)},
                               {"x", "x_strides", x, x_strides, ew_dtype_size(in_dtype)}};
    const ew_op_params_t params = {0};
    const ew_launch_t how = ewi_launch_of(h, stream);
    return ewi_run_strided(h, set, ndim, shape, views, 2, &params, &how);
}

ew_status_t ew_scale_add_strided(ew_handle_t handle, ew_dtype_t dtype, double alpha, int ndim,
                                 const int64_t *shape, void *out, const int64_t *out_strides, const void *a,
                                 const int64_t *a_strides, const void *b, const int64_t *b_strides,
                                 ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_op_params_t params;
    ew_status_t status =
        ewi_find_scale_add(handle, "ew_scale_add_strided", dtype, alpha, &h, &set, &params);
    if (status != EW_SUCCESS)
        return status;
    const size_t size = ew_dtype_size(dtype);
    const ew_view_t views[] = {{"out", "out_strides", out, out_strides, size},
                               {"a", "a_strides", a, a_strides, size},
                               {"b", "b_strides", b, b_strides, size}};
    const ew_launch_t how = ewi_launch_of(h, stream);
    return ewi_run_strided(h, set, ndim, shape, views, 3, &params, &how);
}
