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
 * (bool, fp8: 1 byte; f16, bf16: uint16 bits). Arrays need no alignment. n <= 0 touches nothing.
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

/* The op's name as docs/semantics.md and the tests' messages write it ("add", "scale_add"); "?" for
 * anything else. */
const char *ref_op_name(ew_op_t op);

#ifdef __cplusplus
}
#endif

#endif /* EW_REF_H */
