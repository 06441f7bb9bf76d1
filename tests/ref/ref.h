/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Independent CPU reference of the libelementwise catalogue, for tests only.
 *
 * Plain C11 without CUDA headers and without any code shared with src/: every conversion between
 * float formats is integer bit arithmetic with an explicit round-to-nearest-even, so a bug in the
 * kernels cannot hide behind the same bug here. The rules it implements are docs/semantics.md.
 */
#ifndef EW_REF_H
#define EW_REF_H

#include <stdint.h>
#include <string.h>

#include "elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Each computes n results elementwise on host arrays holding the raw storage of the dtypes
 * (bool, fp8, e8m0: 1 byte; f16, bf16: uint16 bits). Arrays need no alignment. n <= 0 touches nothing.
 * out may equal an input when their element sizes are equal (in place).
 * Only supported combinations may be passed (see ew_is_supported); anything else aborts with a
 * message, because it can only be a bug in the calling test. */
void ref_unary(ew_op_t op, ew_dtype_t dtype, int64_t n, void *out, const void *x);
void ref_binary(ew_op_t op, ew_dtype_t dtype, int64_t n, void *out, const void *a, const void *b);
void ref_cast(ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out, const void *x);
/* For integer dtypes alpha must be integral and fit the dtype; for bool it must be 0 or 1. */
void ref_scale_add(ew_dtype_t dtype, double alpha, int64_t n, void *out, const void *a, const void *b);

/* The scaled casts. ref_quantize: out[i] = saturate(float(x[i]) * scale) to f8e4m3 or f8e5m2 from f16,
 * bf16, f32 or f64, and *amax (when not NULL) = max |float(x[i])|: 0 for n <= 0, 0x7FC00000 where
 * any is NaN. ref_dequantize: out[i] = float(q[i]) * scale_inv, converted to f16, bf16, f32 or f64.
 * ref_amax: that amax alone. The f32 products round to nearest even, subnormals kept, a NaN product
 * being the canonical NaN of f32 arithmetic. */
void ref_quantize(ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out, const void *x, float scale,
                  float *amax);
void ref_dequantize(ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out, const void *q, float scale_inv);
float ref_amax(ew_dtype_t dtype, int64_t n, const void *x);

/* The block-scaled casts (docs/semantics.md §11) of a rows x cols row-major tensor, cols a multiple of
 * the format's block (ref_block_size: 32 MX, 16 NVFP4). ref_quantize_blocks: out gets rows * cols
 * elements of out_dtype (EW_F8E4M3, EW_F8E5M2 or EW_F4E2M1 for MX; EW_F4E2M1 for NVFP4; e2m1 packed
 * two to a byte, element 2i in the low four bits), scales the whole ref_block_scales_shape buffer
 * (one byte a scale, at ref_block_scale_index; the swizzled layout's padding written 0), from x of
 * in_dtype (EW_F16, EW_BF16, EW_F32). global_scale: NVFP4's g, a host float, or NULL for 1; NULL for
 * MX. options: EW_BLOCKS_ROUND_UP (MX only), EW_BLOCKS_SWIZZLED. ref_dequantize_blocks: out (EW_F16,
 * EW_BF16, EW_F32) from q and its scales in the layout options name. Anything outside those lists
 * aborts (a bug in the calling test). Arrays need no alignment. */
int ref_block_size(ew_block_format_t format);
void ref_block_scales_shape(ew_block_format_t format, int64_t rows, int64_t cols, unsigned options,
                            int64_t *scale_rows, int64_t *scale_cols);
/* The byte of scale (r, k) (row r, block k of row_blocks = cols / block) in the layout options names. */
int64_t ref_block_scale_index(int64_t r, int64_t k, int64_t row_blocks, unsigned options);
void ref_quantize_blocks(ew_block_format_t format, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t rows,
                         int64_t cols, void *out, void *scales, const void *x, const float *global_scale,
                         unsigned options);
void ref_dequantize_blocks(ew_block_format_t format, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t rows,
                           int64_t cols, void *out, const void *q, const void *scales, const float *global_scale,
                           unsigned options);
/* Their scalar steps: e2m1 from and to f32 (§11.1; a 4-bit code, NaN -> 0x4), and an MX block's e8m0
 * scale from its amax for an element dtype by the OCP floor and by EW_BLOCKS_ROUND_UP (§11.2). */
uint8_t ref_f32_to_e2m1(float f);
float ref_e2m1_to_f32(uint8_t code);
uint8_t ref_e8m0_scale_floor(float amax, ew_dtype_t element);
uint8_t ref_e8m0_scale_round_up(float amax, ew_dtype_t element);

/* The bits of a float or double, and back. */
static inline uint32_t ref_f32_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}
static inline float ref_f32_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
static inline uint64_t ref_f64_bits(double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return bits;
}
static inline double ref_f64_from_bits(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Scalar primitives, also used by tests. Widening is exact; narrowing rounds to nearest-even.
 * NaN bit patterns follow the "NaN bit patterns" section of docs/semantics.md. */
float ref_f16_to_f32(uint16_t h);
uint16_t ref_f32_to_f16(float f);
float ref_bf16_to_f32(uint16_t h);
uint16_t ref_f32_to_bf16(float f);
float ref_e4m3_to_f32(uint8_t v);
uint8_t ref_f32_to_e4m3(float f);
float ref_e5m2_to_f32(uint8_t v);
uint8_t ref_f32_to_e5m2(float f);
/* e8m0 by c10's Float8_e8m0fnu rules instead (§5): byte 0 -> 2^-127, 0xFF -> the NaN bits 0x7F800001;
 * from f32 the exponent field, one up when the mantissa is above half or, in a normal f32, exactly
 * half; the sign dropped; inf and NaN -> 0xFF. */
float ref_e8m0_to_f32(uint8_t v);
uint8_t ref_f32_to_e8m0(float f);

/* The op's name as docs/semantics.md and the tests' messages write it ("add", "scale_add"); "?" for
 * anything else. */
const char *ref_op_name(ew_op_t op);

#ifdef __cplusplus
}
#endif

#endif /* EW_REF_H */
