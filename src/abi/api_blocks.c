/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI's block-scaled casts: ew_block_scales_shape, ew_quantize_blocks, ew_dequantize_blocks. Their
 * kernels are their own (src/device/blocks.cuh: a block's elements share a scale, so they are not an
 * elementwise functor); what is checked here is the format and dtypes, the shape, the options, the
 * global scale and the three buffers' spans, before the device. Padded swizzled scales are zeroed on
 * the stream before the kernel (ew_launch_t's reset). */
#include <stdint.h>

#include "abi/api.h"
#include "abi/error.h"
#include "abi/handle.h"
#include "abi/pointer_check.h"
#include "catalogue/dispatch.h"
#include "plan/blocks.h"

enum { EW_BLOCKS_OPTIONS = EW_BLOCKS_ROUND_UP | EW_BLOCKS_SWIZZLED };

/* The shape and the options of any block call (entry: its name, for messages). */
static ew_status_t check_shape(const char *entry, ew_block_format_t format, int64_t rows, int64_t cols,
                               unsigned options)
{
    const int block = EW_BLOCKS_BLOCK(format);
    if (block == 0)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "%s: format %d is not an ew_block_format_t", entry, (int)format);
    if ((options & ~(unsigned)EW_BLOCKS_OPTIONS) != 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: options 0x%x has bits that are not EW_BLOCKS_* options", entry,
                        options);
    if (rows < 0 || cols < 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: rows = %lld, cols = %lld: a size is negative", entry,
                        (long long)rows, (long long)cols);
    if (cols % block != 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: cols = %lld is not a multiple of the format's block of %d",
                        entry, (long long)cols, block);
    /* the element count and the scales' rows fit */
    int64_t elements, padded_rows;
    if (__builtin_mul_overflow(rows, cols, &elements) ||
        ((options & EW_BLOCKS_SWIZZLED) != 0 && __builtin_add_overflow(rows, 127, &padded_rows)))
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: rows x cols = %lld x %lld is too large", entry,
                        (long long)rows, (long long)cols);
    return EW_SUCCESS;
}

ew_status_t ew_block_scales_shape(ew_block_format_t format, int64_t rows, int64_t cols, unsigned options,
                                  int64_t *scale_rows, int64_t *scale_cols)
{
    ew_status_t status = check_shape("ew_block_scales_shape", format, rows, cols, options);
    if (status != EW_SUCCESS)
        return status;
    if (scale_rows == NULL || scale_cols == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "ew_block_scales_shape: %s is NULL",
                        scale_rows == NULL ? "scale_rows" : "scale_cols");
    ew_blocks_scales_shape(rows, cols / EW_BLOCKS_BLOCK(format), (options & EW_BLOCKS_SWIZZLED) != 0, scale_rows,
                           scale_cols);
    return EW_SUCCESS;
}

/* One buffer of a call: its name and byte span. */
typedef struct {
    const char *name;
    uintptr_t address;
    uintptr_t bytes;
} span_t;

/* Whether two spans meet (each inside the address space). */
static int spans_overlap(const span_t *a, const span_t *b)
{
    return ewi_overlaps(a->address, a->address + a->bytes, b->address, b->address + b->bytes);
}

/* Everything of a call of either direction: elem is the quantized side's dtype, other the f16, bf16 or
 * f32 side's; spans[0] the written buffer (out), spans[1] the scales, spans[2] the read one. */
static ew_status_t run(ew_handle_t handle, const char *entry, int quantize, ew_block_format_t format,
                       ew_dtype_t elem, ew_dtype_t other, int64_t rows, int64_t cols, span_t spans[3],
                       const float *global_scale, unsigned options, ew_stream_t stream)
{
    ewi_handle_t *h;
    ew_status_t status = ewi_handle_find(handle, &h);
    if (status != EW_SUCCESS || (status = check_shape(entry, format, rows, cols, options)) != EW_SUCCESS)
        return status;
    const ew_kernel_set_t *set = ew_dispatch_find_blocks(quantize, format, elem, other);
    if (set == NULL)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "%s: the %s format has no %s from dtype %d (%s) to dtype %d (%s)",
                        entry, format == EW_BLOCKS_MX ? "MX" : "NVFP4", quantize ? "quantize" : "dequantize",
                        (int)(quantize ? other : elem), ew_dtype_name(quantize ? other : elem),
                        (int)(quantize ? elem : other), ew_dtype_name(quantize ? elem : other));
    if ((options & EW_BLOCKS_ROUND_UP) != 0 && (format != EW_BLOCKS_MX || !quantize))
        return ewi_fail(EW_ERROR_INVALID_VALUE,
                        "%s: options has EW_BLOCKS_ROUND_UP, an option of EW_BLOCKS_MX's quantize alone", entry);
    if (format == EW_BLOCKS_MX && global_scale != NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: global_scale is for EW_BLOCKS_NVFP4; it must be NULL with "
                        "EW_BLOCKS_MX", entry);
    if ((status = ewi_check_scalar(h, "global_scale", global_scale, 1)) != EW_SUCCESS)
        return status;
    const int swizzled = (options & EW_BLOCKS_SWIZZLED) != 0;
    const int block = EW_BLOCKS_BLOCK(format);
    int64_t scale_rows, scale_cols;
    ew_blocks_scales_shape(rows, cols / block, swizzled, &scale_rows, &scale_cols);
    const uintptr_t elements = (uintptr_t)rows * (uintptr_t)cols;
    /* a span whose bytes overflow runs past the end of the address space, and is named as the one that does
     */
    int overflows[3] = {0};
    overflows[1] = __builtin_mul_overflow((uintptr_t)scale_rows, (uintptr_t)scale_cols, &spans[1].bytes);
    overflows[quantize ? 2 : 0] =
        __builtin_mul_overflow(elements, (uintptr_t)ew_dtype_size(other), &spans[quantize ? 2 : 0].bytes);
    spans[quantize ? 0 : 2].bytes = elements / 8 * ew_dtype_bits(elem); /* cols is a multiple of 16 */
    if (elements == 0)
        return EW_SUCCESS;
    for (int i = 0; i < 3; ++i) {
        if (spans[i].address == 0)
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: %s is NULL with rows x cols = %lld x %lld", entry,
                            spans[i].name, (long long)rows, (long long)cols);
        if (overflows[i] || spans[i].bytes > UINTPTR_MAX - spans[i].address)
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: %s runs past the end of the address space", entry,
                            spans[i].name);
    }
    const size_t other_size = ew_dtype_size(other);
    const span_t *wide = &spans[quantize ? 2 : 0];
    if (wide->address % other_size != 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: %s = %p is not aligned to its element size %zu", entry,
                        wide->name, (const void *)wide->address, other_size);
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j)
            if ((i == 0 || (quantize && i == 1)) && spans_overlap(&spans[i], &spans[j]))
                return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: %s [%p, +%zu bytes) overlaps %s", entry, spans[i].name,
                                (const void *)spans[i].address, (size_t)spans[i].bytes, spans[j].name);
    const uintptr_t g = (uintptr_t)global_scale;
    for (int i = 0; g != 0 && i < (quantize ? 2 : 1); ++i)
        if (ewi_overlaps(g, ewi_float_end(g), spans[i].address, spans[i].address + spans[i].bytes))
            return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: global_scale %p lies inside %s", entry,
                            (const void *)global_scale, spans[i].name);
    if ((status = ewi_handle_check_device(h)) != EW_SUCCESS)
        return status;
    for (int i = 0; h->check_pointers && i < 3; ++i)
        if ((status = ewi_check_pointer(h->device, spans[i].name, (const void *)spans[i].address,
                                        (size_t)spans[i].bytes)) != EW_SUCCESS)
            return status;

    /* one access a thread where every pointer allows: 16 bytes of the wide side, the vector's codes */
    const int vector = EW_BLOCKS_VECTOR((int)other_size, block);
    const uintptr_t code_bytes = (uintptr_t)vector * ew_dtype_bits(elem) / 8;
    const span_t *narrow = &spans[quantize ? 0 : 2];
    const int aligned = wide->address % (vector * other_size) == 0 && narrow->address % code_bytes == 0;
    const ew_blocks_plan_t plan =
        ew_blocks_plan_make(&h->policy, &h->figures, rows, cols, block, (int)other_size, swizzled, aligned);
    const ew_op_params_t params = {.scale = global_scale, .options = options};
    ew_functor_t functor;
    set->make_functor(&params, &functor);
    ew_launch_t how = ewi_launch_of(h, stream);
    if (quantize && (scale_rows != rows || scale_cols != cols / block)) { /* the padding reads as zero scales */
        how.reset = (void *)spans[1].address;
        how.reset_bytes = (size_t)spans[1].bytes;
    }
    return ew_launch_blocks(set, &plan, (void *)spans[0].address, (const void *)spans[1].address,
                            (const void *)spans[2].address, &functor, &how);
}

ew_status_t ew_quantize_blocks(ew_handle_t handle, ew_block_format_t format, ew_dtype_t out_dtype,
                               ew_dtype_t in_dtype, int64_t rows, int64_t cols, void *out, void *scales,
                               const void *x, const float *global_scale, unsigned options, ew_stream_t stream)
{
    span_t spans[3] = {{"out", (uintptr_t)out, 0}, {"scales", (uintptr_t)scales, 0}, {"x", (uintptr_t)x, 0}};
    return run(handle, "ew_quantize_blocks", 1, format, out_dtype, in_dtype, rows, cols, spans, global_scale, options,
               stream);
}

ew_status_t ew_dequantize_blocks(ew_handle_t handle, ew_block_format_t format, ew_dtype_t out_dtype,
                                 ew_dtype_t in_dtype, int64_t rows, int64_t cols, void *out, const void *q,
                                 const void *scales, const float *global_scale, unsigned options,
                                 ew_stream_t stream)
{
    span_t spans[3] = {{"out", (uintptr_t)out, 0}, {"scales", (uintptr_t)scales, 0}, {"q", (uintptr_t)q, 0}};
    return run(handle, "ew_dequantize_blocks", 0, format, in_dtype, out_dtype, rows, cols, spans, global_scale,
               options, stream);
}
