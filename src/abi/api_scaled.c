/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI's scaled casts: quantize, dequantize and amax. They are catalogue ops whose functors read a
 * scale from device memory and fold an amax (src/catalogue/functors.cuh), so they run on the flat and
 * strided paths of the other ops; what is theirs is the device scalars' checks and the amax's mode (an
 * overwriting amax is zeroed on the stream before the kernel: ew_launch_t's reset). */
#include <stdint.h>

#include "abi/api.h"
#include "abi/error.h"
#include "abi/handle.h"
#include "abi/pointer_check.h"
#include "catalogue/catalogue.h"

/* The entry, its scalars and the launch: the scale and the amax (either may be absent) into params,
 * how's reset from the amax's mode. */
static ew_status_t prepare(ew_handle_t handle, const char *entry, int call, ew_op_t op, ew_dtype_t out_dtype,
                          ew_dtype_t in_dtype, const float *scale, float *amax, ew_reduce_mode_t mode,
                          ewi_handle_t **h, const ew_kernel_set_t **set, ew_op_params_t *params,
                          ew_launch_t *how, ew_stream_t stream)
{
    ew_status_t status = ewi_find(handle, entry, call, op, out_dtype, in_dtype, h, set);
    if (status != EW_SUCCESS)
        return status;
    if (amax != NULL && mode != EW_REDUCE_OVERWRITE && mode != EW_REDUCE_ACCUMULATE)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "amax_mode = %d is not an ew_reduce_mode_t", (int)mode);
    const char *scale_name = call == EW_CALL_DEQUANTIZE ? "scale_inv" : "scale";
    if (call != EW_CALL_AMAX && (status = ewi_check_scalar(*h, scale_name, scale, 0)) != EW_SUCCESS)
        return status;
    if ((status = ewi_check_scalar(*h, "amax", amax, call != EW_CALL_AMAX)) != EW_SUCCESS)
        return status;
    *params = (ew_op_params_t){.scale = scale, .reduction = amax};
    *how = ewi_launch_of(*h, stream);
    how->reset = amax != NULL && mode == EW_REDUCE_OVERWRITE ? amax : NULL;
    how->reset_bytes = sizeof(float);
    return EW_SUCCESS;
}

/* A flat scaled call of n elements on its two operands, out first. */
static ew_status_t run_flat(ewi_handle_t *h, const ew_kernel_set_t *set, int64_t n, const ewi_operand_t operands[2],
                            const ew_op_params_t *params, const ew_launch_t *how)
{
    if (n < 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "n = %lld is negative", (long long)n);
    if (n == 0) { /* nothing runs, but an overwritten amax is still set to zero */
        ew_status_t status = how->reset != NULL ? ewi_handle_check_device(h) : EW_SUCCESS;
        return status != EW_SUCCESS ? status : ew_launch_reset(how);
    }
    return ewi_run(h, set, n, operands, 2, params, how);
}

ew_status_t ew_quantize(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out,
                        const void *x, const float *scale, float *amax, ew_reduce_mode_t amax_mode,
                        ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_op_params_t params;
    ew_launch_t how;
    ew_status_t status = prepare(handle, "ew_quantize", EW_CALL_QUANTIZE, EW_OP_QUANTIZE, out_dtype, in_dtype,
                                 scale, amax, amax_mode, &h, &set, &params, &how, stream);
    if (status != EW_SUCCESS)
        return status;
    const ewi_operand_t operands[] = {{"out", out, ew_dtype_size(out_dtype)}, {"x", x, ew_dtype_size(in_dtype)}};
    return run_flat(h, set, n, operands, &params, &how);
}

ew_status_t ew_quantize_strided(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int ndim,
                                const int64_t *shape, void *out, const int64_t *out_strides, const void *x,
                                const int64_t *x_strides, const float *scale, float *amax,
                                ew_reduce_mode_t amax_mode, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_op_params_t params;
    ew_launch_t how;
    ew_status_t status = prepare(handle, "ew_quantize_strided", EW_CALL_QUANTIZE, EW_OP_QUANTIZE, out_dtype,
                                 in_dtype, scale, amax, amax_mode, &h, &set, &params, &how, stream);
    if (status != EW_SUCCESS)
        return status;
    const ew_view_t views[] = {{"out", "out_strides", out, out_strides, ew_dtype_size(out_dtype)},
                               {"x", "x_strides", x, x_strides, ew_dtype_size(in_dtype)}};
    return ewi_run_strided(h, set, ndim, shape, views, 2, &params, &how);
}

ew_status_t ew_dequantize(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out,
                          const void *q, const float *scale_inv, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_op_params_t params;
    ew_launch_t how;
    ew_status_t status = prepare(handle, "ew_dequantize", EW_CALL_DEQUANTIZE, EW_OP_DEQUANTIZE, out_dtype,
                                 in_dtype, scale_inv, NULL, EW_REDUCE_OVERWRITE, &h, &set, &params, &how, stream);
    if (status != EW_SUCCESS)
        return status;
    const ewi_operand_t operands[] = {{"out", out, ew_dtype_size(out_dtype)}, {"q", q, ew_dtype_size(in_dtype)}};
    return run_flat(h, set, n, operands, &params, &how);
}

ew_status_t ew_dequantize_strided(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int ndim,
                                  const int64_t *shape, void *out, const int64_t *out_strides, const void *q,
                                  const int64_t *q_strides, const float *scale_inv, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_op_params_t params;
    ew_launch_t how;
    ew_status_t status = prepare(handle, "ew_dequantize_strided", EW_CALL_DEQUANTIZE, EW_OP_DEQUANTIZE, out_dtype,
                                 in_dtype, scale_inv, NULL, EW_REDUCE_OVERWRITE, &h, &set, &params, &how, stream);
    if (status != EW_SUCCESS)
        return status;
    const ew_view_t views[] = {{"out", "out_strides", out, out_strides, ew_dtype_size(out_dtype)},
                               {"q", "q_strides", q, q_strides, ew_dtype_size(in_dtype)}};
    return ewi_run_strided(h, set, ndim, shape, views, 2, &params, &how);
}

ew_status_t ew_amax(ew_handle_t handle, ew_dtype_t dtype, int64_t n, const void *x, float *amax,
                    ew_reduce_mode_t mode, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_op_params_t params;
    ew_launch_t how;
    ew_status_t status = prepare(handle, "ew_amax", EW_CALL_AMAX, EW_OP_AMAX, dtype, dtype, NULL, amax, mode, &h,
                                 &set, &params, &how, stream);
    if (status != EW_SUCCESS)
        return status;
    /* The kernel writes no out: x stands in its place, so the plan sees one phase. */
    const ewi_operand_t operands[] = {{"x", x, ew_dtype_size(dtype)}, {"x", x, ew_dtype_size(dtype)}};
    return run_flat(h, set, n, operands, &params, &how);
}

/* A scaled cast over a list (ew_quantize_batched, ew_dequantize_batched, ew_amax_batched): the entries'
 * scales a column of their own parameters (scale[i], count floats in device memory), their amax scalars
 * the reductions' column (amax[i]; for quantize NULL: none), reset first where overwritten. The amax
 * writes no out: x stands in its place, as in ew_amax. */
static ew_status_t run_batched(ew_handle_t handle, const char *entry, int call_kind, ew_op_t op,
                               ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t count, const int64_t *n,
                               void *const *out, const void *const *x, const float *scale, float *const *amax,
                               ew_reduce_mode_t mode, ew_stream_t stream)
{
    ewi_handle_t *h;
    const ew_kernel_set_t *set;
    ew_status_t status = ewi_find(handle, entry, call_kind, op, out_dtype, in_dtype, &h, &set);
    if (status != EW_SUCCESS)
        return status;
    const int amax_alone = call_kind == EW_CALL_AMAX, scaled = !amax_alone;
    const char *scale_name = call_kind == EW_CALL_DEQUANTIZE ? "scale_inv" : "scale";
    if (call_kind != EW_CALL_DEQUANTIZE && (amax != NULL || amax_alone) && mode != EW_REDUCE_OVERWRITE &&
        mode != EW_REDUCE_ACCUMULATE)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s = %d is not an ew_reduce_mode_t",
                        amax_alone ? "mode" : "amax_mode", (int)mode);
    if (scaled && count > 0 && scale == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s is NULL with count = %lld", scale_name, (long long)count);
    const ewi_list_call_t call = {.count = count,
                                  .n = n,
                                  .outputs = scaled,
                                  .pointers = 2,
                                  .name = {scaled ? "out" : "x", call_kind == EW_CALL_DEQUANTIZE ? "q" : "x"},
                                  .address = {scaled ? (const void *const *)out : x, x},
                                  .elem_size = {ew_dtype_size(out_dtype), ew_dtype_size(in_dtype)},
                                  .params_column = scaled,
                                  .params = scale,
                                  .params_stride = sizeof(float),
                                  .params_name = scale_name,
                                  .scalar_column = call_kind != EW_CALL_DEQUANTIZE,
                                  .scalar = (const void *const *)amax,
                                  .scalar_optional = scaled,
                                  .scalar_name = "amax",
                                  .scalar_size = sizeof(float),
                                  .reset = amax != NULL && mode == EW_REDUCE_OVERWRITE && count > 0};
    const ew_op_params_t params = {0};
    return ewi_run_list(h, set, &call, &params, stream);
}

ew_status_t ew_quantize_batched(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t count,
                                const int64_t *n, void *const *out, const void *const *x, const float *scale,
                                float *const *amax, ew_reduce_mode_t amax_mode, ew_stream_t stream)
{
    return run_batched(handle, "ew_quantize_batched", EW_CALL_QUANTIZE, EW_OP_QUANTIZE, out_dtype, in_dtype,
                       count, n, out, x, scale, amax, amax_mode, stream);
}

ew_status_t ew_dequantize_batched(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype,
                                  int64_t count, const int64_t *n, void *const *out, const void *const *q,
                                  const float *scale_inv, ew_stream_t stream)
{
    return run_batched(handle, "ew_dequantize_batched", EW_CALL_DEQUANTIZE, EW_OP_DEQUANTIZE, out_dtype,
                       in_dtype, count, n, out, q, scale_inv, NULL, EW_REDUCE_OVERWRITE, stream);
}

ew_status_t ew_amax_batched(ew_handle_t handle, ew_dtype_t dtype, int64_t count, const int64_t *n,
                            const void *const *x, float *const *amax, ew_reduce_mode_t mode,
                            ew_stream_t stream)
{
    return run_batched(handle, "ew_amax_batched", EW_CALL_AMAX, EW_OP_AMAX, dtype, dtype, count, n, NULL, x,
                       NULL, amax, mode, stream);
}
