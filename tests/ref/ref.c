/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Independent CPU reference of the libelementwise catalogue. The rules are docs/semantics.md; the
 * section names quoted in comments below are that document's.
 *
 * Design: every value is handled as raw bits. Conversions between float formats decode a value into
 * an exact (sign, integer significand, power of two) triple and round that triple into the target
 * format with one generic round-to-nearest-even routine, so f16, bf16, fp8, f32 and f64 all share one
 * rounding path that the tests check against brute force. Host float arithmetic is used only for
 * the arithmetic itself (add, mul, fma), which IEEE 754 defines exactly.
 */
#include "ref.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* add/mul in f16/bf16/f32 must be evaluated in float, not in a wider x87 register. */
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the reference needs FLT_EVAL_METHOD == 0 (SSE or similar float arithmetic)"
#endif

/* ======================================================================================== */
/* GPU NaN model ("NaN bit patterns" in docs/semantics.md). Every NaN bit pattern the       */
/* reference produces is decided in this section and nowhere else, so whatever the H200     */
/* shows can be adopted by editing one place. The fp8 -> f32, f32 <-> f64 and f32/f64       */
/* arithmetic rules below are as measured on an H200 with PyTorch 2.11 on 2026-11-29 (torch */
/* and the library gave the same bits).                                                     */
/* ======================================================================================== */

static bool f32_bits_are_nan(uint32_t bits)
{
    return (bits & UINT32_C(0x7FFFFFFF)) > UINT32_C(0x7F800000);
}

static bool f64_bits_are_nan(uint64_t bits)
{
    return (bits & UINT64_C(0x7FFFFFFFFFFFFFFF)) > UINT64_C(0x7FF0000000000000);
}

/* f32 add, mul, fma that give NaN produce the canonical NaN 0x7FFFFFFF, whatever the inputs. */
#define ARITHMETIC_NAN_F32 UINT32_C(0x7FFFFFFF)

/* Any NaN rounded to f16 or bf16 (from an arithmetic result or a cast) becomes 0x7FFF. */
#define ROUNDED_NAN_F16 UINT16_C(0x7FFF)
#define ROUNDED_NAN_BF16 UINT16_C(0x7FFF)

#define F32_QUIET_BIT UINT32_C(0x00400000)
#define F64_QUIET_BIT UINT64_C(0x0008000000000000)

/* What an f64 invalid operation (inf - inf, inf * 0) gives when no operand is NaN: the GPU's default
 * NaN, which is negative. */
#define DEFAULT_NAN_F64 UINT64_C(0xFFF8000000000000)

/* f64 add, mul, fma that give NaN: the first NaN operand in the order given, quiet bit set, sign and
 * payload kept; with no NaN operand, the default NaN. The orders are PyTorch's on the H200 (which NaN
 * of two wins follows the operand order of its kernels), enforced by the library: add a then b; mul
 * b then a; scale_add (b + alpha * a) b, then a, then alpha. */
static uint64_t nan_f64_arithmetic(const uint64_t *operands, int count)
{
    for (int i = 0; i < count; i++)
        if (f64_bits_are_nan(operands[i]))
            return operands[i] | F64_QUIET_BIT;
    return DEFAULT_NAN_F64;
}

/* f16 -> f32: the hardware conversion returns the canonical NaN, sign and payload dropped. */
static uint32_t nan_f16_to_f32(uint16_t h)
{
    (void)h;
    return UINT32_C(0x7FFFFFFF);
}

/* bf16 -> f32 is a 16-bit shift: every bit is kept, a signalling NaN stays signalling. */
static uint32_t nan_bf16_to_f32(uint16_t h)
{
    return (uint32_t)h << 16;
}

/* e4m3 -> f32 (its NaN codes are 0x7F and 0xFF): sign, all-ones exponent, the mantissa 111 at the top
 * of the f32 mantissa, quiet bit: 0x7F -> 0x7FF00000, 0xFF -> 0xFFF00000. */
static uint32_t nan_e4m3_to_f32(uint8_t v)
{
    uint32_t sign = (uint32_t)(v >> 7) << 31;
    return sign | UINT32_C(0x7F800000) | UINT32_C(0x7) << 20 | F32_QUIET_BIT;
}

/* e5m2 -> f32: PyTorch widens through an f32 multiply, which returns the canonical NaN, and ORs the
 * sign back afterwards: 0x7D, 0x7E, 0x7F -> 0x7FFFFFFF; 0xFD, 0xFE, 0xFF -> 0xFFFFFFFF. */
static uint32_t nan_e5m2_to_f32(uint8_t v)
{
    uint32_t sign = (uint32_t)(v >> 7) << 31;
    return sign | UINT32_C(0x7FFFFFFF);
}

/* f32 -> f64: sign kept, mantissa moved to the top of the f64 mantissa, quiet bit set. */
static uint64_t nan_f32_to_f64(uint32_t f)
{
    uint64_t sign = (uint64_t)(f >> 31) << 63;
    uint64_t mantissa = (uint64_t)(f & UINT32_C(0x007FFFFF)) << 29;
    return sign | UINT64_C(0x7FF0000000000000) | mantissa | F64_QUIET_BIT;
}

/* f64 -> f32: sign kept, top 23 mantissa bits kept, quiet bit set. */
static uint32_t nan_f64_to_f32(uint64_t d)
{
    uint32_t sign = (uint32_t)(d >> 63) << 31;
    uint32_t mantissa = (uint32_t)((d & UINT64_C(0x000FFFFFFFFFFFFF)) >> 29);
    return sign | UINT32_C(0x7F800000) | mantissa | F32_QUIET_BIT;
}

/* f32 -> e4m3 / e5m2: 0x7F with the NaN's sign. */
static uint8_t nan_f32_to_fp8(bool negative)
{
    return (uint8_t)(0x7F | (negative ? 0x80 : 0));
}

/* e8m0 -> f32: the NaN code 0xFF widens to c10's 0x7F800001 (a signalling pattern, moved as bits, so
 * kept); f32 -> e8m0: every NaN, and infinity of either sign, is 0xFF. */
#define NAN_E8M0_TO_F32 UINT32_C(0x7F800001)
#define NAN_E8M0        UINT8_C(0xFF)

/* ======================================================================================== */
/* Float formats and the one rounding routine                                                */
/* ======================================================================================== */

typedef struct {
    int exponent_bits;
    int mantissa_bits; /* stored fraction bits, without the implicit leading 1 */
    int bias;
    bool has_infinity; /* false for e4m3 "fn": all-ones is NaN, the rest of that binade finite */
} float_format;

static const float_format FORMAT_F64 = {11, 52, 1023, true};
static const float_format FORMAT_F32 = {8, 23, 127, true};
static const float_format FORMAT_F16 = {5, 10, 15, true};
static const float_format FORMAT_BF16 = {8, 7, 127, true};
static const float_format FORMAT_E4M3 = {4, 3, 7, false};
static const float_format FORMAT_E5M2 = {5, 2, 15, true};

static uint64_t low_bits_mask(int bits)
{
    return bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
}

static uint64_t sign_bit(const float_format *f)
{
    return UINT64_C(1) << (f->exponent_bits + f->mantissa_bits);
}

static uint64_t magnitude_mask(const float_format *f)
{
    return low_bits_mask(f->exponent_bits + f->mantissa_bits);
}

/* What a magnitude beyond the largest finite value becomes: infinity, or NaN for e4m3 (no infinity). */
static uint64_t overflow_code(const float_format *f)
{
    return f->has_infinity ? low_bits_mask(f->exponent_bits) << f->mantissa_bits : magnitude_mask(f);
}

/* Magnitude codes of one sign are ordered like their values, and the largest finite one sits
 * right below the overflow code in both kinds of format. */
static uint64_t max_finite_code(const float_format *f)
{
    return overflow_code(f) - 1;
}

typedef enum { CLASS_ZERO, CLASS_FINITE, CLASS_INFINITE, CLASS_NAN } float_class;

/* A float as an exact value: (-1)^negative * significand * 2^exponent for CLASS_FINITE. */
typedef struct {
    float_class cls;
    bool negative;
    uint64_t significand;
    int exponent;
} decoded_float;

static decoded_float decode_float(const float_format *f, uint64_t bits)
{
    decoded_float d = {CLASS_ZERO, (bits & sign_bit(f)) != 0, 0, 0};
    uint64_t mantissa = bits & low_bits_mask(f->mantissa_bits);
    uint64_t biased_exponent = (bits >> f->mantissa_bits) & low_bits_mask(f->exponent_bits);
    bool top_binade = biased_exponent == low_bits_mask(f->exponent_bits);
    if (top_binade && f->has_infinity) {
        d.cls = mantissa == 0 ? CLASS_INFINITE : CLASS_NAN;
    } else if (top_binade && mantissa == low_bits_mask(f->mantissa_bits)) {
        d.cls = CLASS_NAN; /* e4m3: only S.1111.111 is NaN */
    } else if (biased_exponent == 0) {
        d.cls = mantissa == 0 ? CLASS_ZERO : CLASS_FINITE;
        d.significand = mantissa;
        d.exponent = 1 - f->bias - f->mantissa_bits;
    } else {
        d.cls = CLASS_FINITE;
        d.significand = mantissa | (UINT64_C(1) << f->mantissa_bits);
        d.exponent = (int)biased_exponent - f->bias - f->mantissa_bits;
    }
    return d;
}

/* value / 2^shift rounded to the nearest integer, ties to even. */
static uint64_t shift_right_round_half_even(uint64_t value, int shift)
{
    if (shift <= 0)
        return value;
    if (shift > 64)
        return 0; /* value < 2^64 is below half of 2^shift */
    if (shift == 64)
        return value > (UINT64_C(1) << 63) ? 1 : 0; /* exactly half is a tie, and 0 is even */
    uint64_t kept = value >> shift;
    uint64_t dropped = value & low_bits_mask(shift);
    uint64_t half = UINT64_C(1) << (shift - 1);
    if (dropped > half || (dropped == half && (kept & 1)))
        kept++;
    return kept;
}

/* floor(log2 v) for v != 0, by halving the search range: six steps instead of a 64-step loop */
static int highest_set_bit(uint64_t v)
{
    int index = 0;
    for (int step = 32; step > 0; step /= 2) {
        if (v >> step) {
            v >>= step;
            index += step;
        }
    }
    return index;
}

/* The exact value (-1)^negative * significand * 2^exponent rounded to nearest-even in format f,
 * keeping subnormals and zero signs; magnitudes past the largest finite value give overflow_code. */
static uint64_t round_to_format(const float_format *f, bool negative, uint64_t significand, int exponent)
{
    uint64_t sign = negative ? sign_bit(f) : 0;
    if (significand == 0)
        return sign;
    int mantissa_bits = f->mantissa_bits;
    int min_normal_exponent = 1 - f->bias;
    int max_exponent = (int)(max_finite_code(f) >> mantissa_bits) - f->bias; /* of the largest finite value */
    int value_exponent = highest_set_bit(significand) + exponent; /* floor(log2 |value|) */
    if (value_exponent > max_exponent + 1)
        return sign | overflow_code(f);
    bool subnormal = value_exponent < min_normal_exponent;
    int quantum_exponent = (subnormal ? min_normal_exponent : value_exponent) - mantissa_bits;
    /* steps = |value| / 2^quantum_exponent rounded; exact when the shift is to the left */
    uint64_t steps = exponent >= quantum_exponent
                         ? significand << (exponent - quantum_exponent)
                         : shift_right_round_half_even(significand, quantum_exponent - exponent);
    /* A normal value's steps lie in [2^m, 2^(m+1)] and include the implicit bit, which carries into
     * the exponent field: adding it to (biased exponent - 1) << m needs no special case when rounding
     * reaches the next binade, nor when a subnormal rounds up to the smallest normal. */
    uint64_t code = subnormal ? steps : ((uint64_t)(value_exponent + f->bias - 1) << mantissa_bits) + steps;
    if (code > max_finite_code(f))
        return sign | overflow_code(f);
    return sign | code;
}

/* Narrowing or re-encoding of a non-NaN value; the caller handles NaN with the NaN model. */
static uint64_t round_decoded(const float_format *to, decoded_float d)
{
    switch (d.cls) {
    case CLASS_ZERO:
        return d.negative ? sign_bit(to) : 0;
    case CLASS_INFINITE:
        return (d.negative ? sign_bit(to) : 0) | overflow_code(to); /* e4m3: +-inf -> NaN with sign */
    case CLASS_FINITE:
    case CLASS_NAN:
        break;
    }
    return round_to_format(to, d.negative, d.significand, d.exponent);
}

/* ======================================================================================== */
/* Scalar conversions on raw bits                                                            */
/* ======================================================================================== */

/* Exact widening of a 16-bit or 8-bit float to f32 ("cast: float to float"). */
static uint32_t widen_to_f32(const float_format *from, uint64_t bits, uint32_t nan_result)
{
    decoded_float d = decode_float(from, bits);
    if (d.cls == CLASS_NAN)
        return nan_result;
    return (uint32_t)round_decoded(&FORMAT_F32, d); /* exact: f32 holds every such value */
}

static uint32_t f16_to_f32_bits(uint16_t h)
{
    return widen_to_f32(&FORMAT_F16, h, nan_f16_to_f32(h));
}

static uint32_t bf16_to_f32_bits(uint16_t h)
{
    return widen_to_f32(&FORMAT_BF16, h, nan_bf16_to_f32(h));
}

static uint32_t e4m3_to_f32_bits(uint8_t v)
{
    return widen_to_f32(&FORMAT_E4M3, v, nan_e4m3_to_f32(v));
}

static uint32_t e5m2_to_f32_bits(uint8_t v)
{
    return widen_to_f32(&FORMAT_E5M2, v, nan_e5m2_to_f32(v));
}

/* e8m0 holds an exponent alone, which the rounding routine's formats do not describe: c10's rules
 * directly. Code 0 is 2^-127, an f32 subnormal; the others 2^(code - 127). */
static uint32_t e8m0_to_f32_bits(uint8_t v)
{
    if (v == NAN_E8M0)
        return NAN_E8M0_TO_F32;
    return v == 0 ? UINT32_C(1) << 22 : (uint32_t)v << 23;
}

/* The sign dropped, the f32 exponent field kept and rounded up by the 23-bit mantissa: above half
 * (1.5 · 2^e) always, at exactly half only for a normal f32 (c10 takes the implied bit as the lsb, so
 * 1.5 · 2^e goes up and a subnormal's tie 2^-127 stays at code 0). 2^127 · 1.5 and up give 0xFF. */
static uint8_t f32_bits_to_e8m0(uint32_t bits)
{
    uint32_t exponent = (bits >> 23) & 0xFF, mantissa = bits & UINT32_C(0x7FFFFF);
    if (exponent == 0xFF)
        return NAN_E8M0;
    const uint32_t half = UINT32_C(1) << 22;
    bool up = mantissa > half || (mantissa == half && exponent != 0);
    return (uint8_t)(exponent + up);
}

static uint16_t f32_bits_to_f16(uint32_t bits)
{
    if (f32_bits_are_nan(bits))
        return ROUNDED_NAN_F16;
    return (uint16_t)round_decoded(&FORMAT_F16, decode_float(&FORMAT_F32, bits));
}

static uint16_t f32_bits_to_bf16(uint32_t bits)
{
    if (f32_bits_are_nan(bits))
        return ROUNDED_NAN_BF16;
    return (uint16_t)round_decoded(&FORMAT_BF16, decode_float(&FORMAT_F32, bits));
}

static uint8_t f32_bits_to_e4m3(uint32_t bits)
{
    if (f32_bits_are_nan(bits))
        return nan_f32_to_fp8(bits >> 31);
    return (uint8_t)round_decoded(&FORMAT_E4M3, decode_float(&FORMAT_F32, bits));
}

static uint8_t f32_bits_to_e5m2(uint32_t bits)
{
    if (f32_bits_are_nan(bits))
        return nan_f32_to_fp8(bits >> 31);
    return (uint8_t)round_decoded(&FORMAT_E5M2, decode_float(&FORMAT_F32, bits));
}

static uint64_t f32_bits_to_f64(uint32_t bits)
{
    if (f32_bits_are_nan(bits))
        return nan_f32_to_f64(bits);
    return round_decoded(&FORMAT_F64, decode_float(&FORMAT_F32, bits)); /* exact */
}

static uint32_t f64_bits_to_f32(uint64_t bits)
{
    if (f64_bits_are_nan(bits))
        return nan_f64_to_f32(bits);
    return (uint32_t)round_decoded(&FORMAT_F32, decode_float(&FORMAT_F64, bits));
}

/* Integer to f32 / f64, round to nearest-even ("cast: integer to float"). */
static uint64_t int64_to_float_bits(const float_format *to, int64_t v)
{
    bool negative = v < 0;
    uint64_t magnitude = negative ? 0 - (uint64_t)v : (uint64_t)v; /* INT64_MIN included, no overflow */
    return round_to_format(to, negative, magnitude, 0);
}

static uint32_t int64_to_f32_bits(int64_t v)
{
    return (uint32_t)int64_to_float_bits(&FORMAT_F32, v);
}

static uint64_t int64_to_f64_bits(int64_t v)
{
    return int64_to_float_bits(&FORMAT_F64, v);
}

/* Float to a signed integer of `bits` bits: truncate toward zero, saturate, NaN -> nan_value
 * ("cast: float to integer"). Every f32 and f64 value is exact in double. */
static int64_t truncate_saturating(double x, int bits, int64_t nan_value)
{
    if (isnan(x))
        return nan_value;
    double limit = ldexp(1.0, bits - 1); /* 2^(bits-1), exact */
    int64_t max = (int64_t)(low_bits_mask(bits - 1));
    if (x >= limit)
        return max;
    if (x <= -limit)
        return -max - 1;
    return (int64_t)x; /* |x| < 2^(bits-1): C's conversion truncates and is defined */
}

static int64_t f32_to_i32(uint32_t bits)
{
    return truncate_saturating((double)ref_f32_from_bits(bits), 32, 0);
}

static int64_t f32_to_i64(uint32_t bits)
{
    return truncate_saturating((double)ref_f32_from_bits(bits), 64, INT64_MIN);
}

static int64_t f64_to_i32(uint64_t bits)
{
    return truncate_saturating(ref_f64_from_bits(bits), 32, INT32_MIN);
}

static int64_t f64_to_i64(uint64_t bits)
{
    return truncate_saturating(ref_f64_from_bits(bits), 64, INT64_MIN);
}

/* Arithmetic results: a NaN is replaced by the NaN model's pick. f32: the canonical NaN. f64: from
 * the operands' bits, in the order a, b (, alpha). */
static uint32_t f32_arithmetic_result(float r) { return isnan(r) ? ARITHMETIC_NAN_F32 : ref_f32_bits(r); }

static uint64_t f64_arithmetic_result(double r, const uint64_t *operands, int count)
{
    return isnan(r) ? nan_f64_arithmetic(operands, count) : ref_f64_bits(r);
}

/* ======================================================================================== */
/* Public scalar primitives                                                                   */
/* ======================================================================================== */

float ref_f16_to_f32(uint16_t h) { return ref_f32_from_bits(f16_to_f32_bits(h)); }
uint16_t ref_f32_to_f16(float f) { return f32_bits_to_f16(ref_f32_bits(f)); }
float ref_bf16_to_f32(uint16_t h) { return ref_f32_from_bits(bf16_to_f32_bits(h)); }
uint16_t ref_f32_to_bf16(float f) { return f32_bits_to_bf16(ref_f32_bits(f)); }
float ref_e4m3_to_f32(uint8_t v) { return ref_f32_from_bits(e4m3_to_f32_bits(v)); }
uint8_t ref_f32_to_e4m3(float f) { return f32_bits_to_e4m3(ref_f32_bits(f)); }
float ref_e5m2_to_f32(uint8_t v) { return ref_f32_from_bits(e5m2_to_f32_bits(v)); }
uint8_t ref_f32_to_e5m2(float f) { return f32_bits_to_e5m2(ref_f32_bits(f)); }
float ref_e8m0_to_f32(uint8_t v) { return ref_f32_from_bits(e8m0_to_f32_bits(v)); }
uint8_t ref_f32_to_e8m0(float f) { return f32_bits_to_e8m0(ref_f32_bits(f)); }

/* ======================================================================================== */
/* Element access. Everything goes through memcpy: arrays need no alignment, and signed      */
/* values are never produced by an out-of-range conversion.                                  */
/* ======================================================================================== */

static _Noreturn void unsupported(const char *what, int op, int out_dtype, int in_dtype)
{
    fprintf(stderr, "ref: %s: op %d, out dtype %d, in dtype %d is outside the catalogue\n", what, op,
            out_dtype, in_dtype);
    abort();
}

static size_t element_size(ew_dtype_t t)
{
    switch (t) {
    case EW_BOOL: case EW_I8: case EW_U8: case EW_F8E4M3: case EW_F8E5M2: case EW_F8E8M0: return 1;
    case EW_I16: case EW_F16: case EW_BF16: return 2;
    case EW_I32: case EW_F32: return 4;
    case EW_I64: case EW_F64: return 8;
    case EW_F4E2M1: break; /* the block dtype: no elementwise op takes it */
    }
    unsupported("element_size", 0, (int)t, (int)t);
}

/* How a cast source is read: as an integer, as a value exact in f32, or as f64. */
typedef enum { FAMILY_INTEGER, FAMILY_F32_EXACT, FAMILY_F64 } source_family;

static source_family family_of(ew_dtype_t t)
{
    switch (t) {
    case EW_BOOL: case EW_I8: case EW_U8: case EW_I16: case EW_I32: case EW_I64: return FAMILY_INTEGER;
    case EW_F16: case EW_BF16: case EW_F32: case EW_F8E4M3: case EW_F8E5M2: case EW_F8E8M0:
        return FAMILY_F32_EXACT;
    case EW_F64: return FAMILY_F64;
    case EW_F4E2M1: break;
    }
    unsupported("family_of", 0, (int)t, (int)t);
}

static uint8_t load_u8(const unsigned char *p) { return *p; }
static uint16_t load_u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, sizeof v); return v; }
static uint32_t load_u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, sizeof v); return v; }
static uint64_t load_u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, sizeof v); return v; }
static void store_u8(unsigned char *p, uint8_t v) { *p = v; }
static void store_u16(unsigned char *p, uint16_t v) { memcpy(p, &v, sizeof v); }
static void store_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, sizeof v); }
static void store_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, sizeof v); }

/* bool and integer elements as int64: bool reads any nonzero byte as 1, u8 zero-extends. */
static int64_t load_integer(ew_dtype_t t, const unsigned char *p)
{
    switch (t) {
    case EW_BOOL: return *p != 0;
    case EW_U8: return *p;
    case EW_I8: { int8_t v; memcpy(&v, p, sizeof v); return v; }
    case EW_I16: { int16_t v; memcpy(&v, p, sizeof v); return v; }
    case EW_I32: { int32_t v; memcpy(&v, p, sizeof v); return v; }
    case EW_I64: { int64_t v; memcpy(&v, p, sizeof v); return v; }
    default: unsupported("load_integer", 0, 0, (int)t);
    }
}

/* Keep the low bits of a two's complement value: integer targets wrap modulo 2^N; bool is 0 or 1. */
static void store_integer_bits(ew_dtype_t t, unsigned char *p, uint64_t v)
{
    switch (t) {
    case EW_BOOL: store_u8(p, v != 0); break;
    case EW_I8: case EW_U8: store_u8(p, (uint8_t)v); break;
    case EW_I16: store_u16(p, (uint16_t)v); break;
    case EW_I32: store_u32(p, (uint32_t)v); break;
    case EW_I64: store_u64(p, v); break;
    default: unsupported("store_integer_bits", 0, (int)t, 0);
    }
}

/* f16, bf16, f32, e4m3, e5m2, e8m0 elements widened exactly to f32 bits. */
static uint32_t load_as_f32_bits(ew_dtype_t t, const unsigned char *p)
{
    switch (t) {
    case EW_F16: return f16_to_f32_bits(load_u16(p));
    case EW_BF16: return bf16_to_f32_bits(load_u16(p));
    case EW_F32: return load_u32(p);
    case EW_F8E4M3: return e4m3_to_f32_bits(load_u8(p));
    case EW_F8E5M2: return e5m2_to_f32_bits(load_u8(p));
    case EW_F8E8M0: return e8m0_to_f32_bits(load_u8(p));
    default: unsupported("load_as_f32_bits", 0, 0, (int)t);
    }
}

/* Store a value that is exact in f32 (any source but integers and f64) into any dtype. */
static void store_from_f32_bits(ew_dtype_t t, unsigned char *p, uint32_t bits)
{
    switch (t) {
    case EW_BOOL: store_u8(p, (bits & UINT32_C(0x7FFFFFFF)) != 0); break; /* NaN true, -0 false */
    case EW_I8: case EW_I16: case EW_I32: store_integer_bits(t, p, (uint64_t)f32_to_i32(bits)); break;
    case EW_U8: case EW_I64: store_integer_bits(t, p, (uint64_t)f32_to_i64(bits)); break;
    case EW_F16: store_u16(p, f32_bits_to_f16(bits)); break;
    case EW_BF16: store_u16(p, f32_bits_to_bf16(bits)); break;
    case EW_F32: store_u32(p, bits); break;
    case EW_F64: store_u64(p, f32_bits_to_f64(bits)); break;
    case EW_F8E4M3: store_u8(p, f32_bits_to_e4m3(bits)); break;
    case EW_F8E5M2: store_u8(p, f32_bits_to_e5m2(bits)); break;
    case EW_F8E8M0: store_u8(p, f32_bits_to_e8m0(bits)); break;
    case EW_F4E2M1: unsupported("store_from_f32_bits", 0, (int)t, 0);
    }
}

static void store_from_f64_bits(ew_dtype_t t, unsigned char *p, uint64_t bits)
{
    switch (t) {
    case EW_BOOL: store_u8(p, (bits & UINT64_C(0x7FFFFFFFFFFFFFFF)) != 0); break;
    case EW_I8: case EW_I16: case EW_I32: store_integer_bits(t, p, (uint64_t)f64_to_i32(bits)); break;
    case EW_U8: case EW_I64: store_integer_bits(t, p, (uint64_t)f64_to_i64(bits)); break;
    case EW_F64: store_u64(p, bits); break;
    default: store_from_f32_bits(t, p, f64_bits_to_f32(bits)); break; /* narrower floats: through f32 */
    }
}

static void store_from_integer(ew_dtype_t t, unsigned char *p, int64_t v)
{
    switch (t) {
    case EW_F32: store_u32(p, int64_to_f32_bits(v)); break;
    case EW_F64: store_u64(p, int64_to_f64_bits(v)); break;
    case EW_F16: case EW_BF16: case EW_F8E4M3: case EW_F8E5M2: case EW_F8E8M0:
        store_from_f32_bits(t, p, int64_to_f32_bits(v)); /* through f32: may round twice */
        break;
    default: store_integer_bits(t, p, (uint64_t)v); break;
    }
}

/* ======================================================================================== */
/* The catalogue                                                                              */
/* ======================================================================================== */

void ref_cast(ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out, const void *x)
{
    size_t out_size = element_size(out_dtype), in_size = element_size(in_dtype);
    source_family family = family_of(in_dtype);
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *src = (const unsigned char *)x + (size_t)i * in_size;
        unsigned char *dst = (unsigned char *)out + (size_t)i * out_size;
        if (out_dtype == in_dtype && out_dtype != EW_BOOL) {
            memmove(dst, src, in_size); /* identity keeps every bit, NaN payloads included */
            continue;
        }
        switch (family) {
        case FAMILY_INTEGER: store_from_integer(out_dtype, dst, load_integer(in_dtype, src)); break;
        case FAMILY_F32_EXACT: store_from_f32_bits(out_dtype, dst, load_as_f32_bits(in_dtype, src)); break;
        case FAMILY_F64: store_from_f64_bits(out_dtype, dst, load_u64(src)); break;
        }
    }
}

/* The 1-byte floats, which no op but the cast takes. */
static bool cast_only(ew_dtype_t t) { return t == EW_F8E4M3 || t == EW_F8E5M2 || t == EW_F8E8M0; }

void ref_unary(ew_op_t op, ew_dtype_t dtype, int64_t n, void *out, const void *x)
{
    if (op != EW_OP_RELU || dtype == EW_BOOL || cast_only(dtype))
        unsupported("ref_unary", (int)op, (int)dtype, (int)dtype);
    size_t size = element_size(dtype);
    source_family family = family_of(dtype);
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *src = (const unsigned char *)x + (size_t)i * size;
        unsigned char *dst = (unsigned char *)out + (size_t)i * size;
        bool keep_input; /* relu either copies x bit for bit or writes +0 */
        switch (family) {
        case FAMILY_INTEGER: keep_input = load_integer(dtype, src) > 0; break; /* u8 is never < 0 */
        case FAMILY_F32_EXACT: {
            uint32_t bits = load_as_f32_bits(dtype, src);
            keep_input = f32_bits_are_nan(bits) || ref_f32_from_bits(bits) > 0.0f;
            break;
        }
        default: {
            uint64_t bits = load_u64(src);
            keep_input = f64_bits_are_nan(bits) || ref_f64_from_bits(bits) > 0.0;
            break;
        }
        }
        if (keep_input)
            memmove(dst, src, size);
        else
            memset(dst, 0, size); /* +0 (also integer 0), never -0 */
    }
}

void ref_binary(ew_op_t op, ew_dtype_t dtype, int64_t n, void *out, const void *a, const void *b)
{
    if ((op != EW_OP_ADD && op != EW_OP_MUL) || cast_only(dtype))
        unsupported("ref_binary", (int)op, (int)dtype, (int)dtype);
    bool add = op == EW_OP_ADD;
    size_t size = element_size(dtype);
    source_family family = family_of(dtype);
    for (int64_t i = 0; i < n; i++) {
        size_t offset = (size_t)i * size;
        const unsigned char *pa = (const unsigned char *)a + offset, *pb = (const unsigned char *)b + offset;
        unsigned char *dst = (unsigned char *)out + offset;
        if (dtype == EW_BOOL) {
            bool x = *pa != 0, y = *pb != 0;
            store_u8(dst, add ? (x || y) : (x && y));
        } else if (family == FAMILY_INTEGER) {
            /* unsigned 64-bit arithmetic wraps by definition; the low N bits are the N-bit result */
            uint64_t x = (uint64_t)load_integer(dtype, pa), y = (uint64_t)load_integer(dtype, pb);
            store_integer_bits(dtype, dst, add ? x + y : x * y);
        } else if (family == FAMILY_F32_EXACT) {
            float x = ref_f32_from_bits(load_as_f32_bits(dtype, pa));
            float y = ref_f32_from_bits(load_as_f32_bits(dtype, pb));
            store_from_f32_bits(dtype, dst, f32_arithmetic_result(add ? x + y : x * y)); /* one rounding */
        } else {
            uint64_t a_bits = load_u64(pa), b_bits = load_u64(pb);
            uint64_t operands[2] = {add ? a_bits : b_bits, add ? b_bits : a_bits}; /* NaN order */
            double x = ref_f64_from_bits(a_bits), y = ref_f64_from_bits(b_bits);
            store_u64(dst, f64_arithmetic_result(add ? x + y : x * y, operands, 2));
        }
    }
}

/* Integral alpha of an integer scale_add as int64. Callers pass only representable values; the
 * clamps just keep a caller's mistake from being undefined behaviour. */
static int64_t integral_alpha(double alpha)
{
    if (!(alpha > -9223372036854775808.0))
        return INT64_MIN; /* also NaN */
    if (alpha >= 9223372036854775808.0)
        return INT64_MAX;
    return (int64_t)alpha;
}

void ref_scale_add(ew_dtype_t dtype, double alpha, int64_t n, void *out, const void *a, const void *b)
{
    if (cast_only(dtype))
        unsupported("ref_scale_add", EW_OP_SCALE_ADD, (int)dtype, (int)dtype);
    size_t size = element_size(dtype);
    source_family family = family_of(dtype);
    /* (float)alpha as the library converts it: round to nearest-even */
    float alpha_f32 = ref_f32_from_bits(f64_bits_to_f32(ref_f64_bits(alpha)));
    uint64_t alpha_integer = (uint64_t)integral_alpha(alpha);
    for (int64_t i = 0; i < n; i++) {
        size_t offset = (size_t)i * size;
        const unsigned char *pa = (const unsigned char *)a + offset, *pb = (const unsigned char *)b + offset;
        unsigned char *dst = (unsigned char *)out + offset;
        if (dtype == EW_BOOL) {
            store_u8(dst, *pb != 0 || (alpha != 0.0 && *pa != 0));
        } else if (family == FAMILY_INTEGER) {
            uint64_t x = (uint64_t)load_integer(dtype, pa), y = (uint64_t)load_integer(dtype, pb);
            store_integer_bits(dtype, dst, alpha_integer * x + y);
        } else if (family == FAMILY_F32_EXACT) {
            float x = ref_f32_from_bits(load_as_f32_bits(dtype, pa));
            float y = ref_f32_from_bits(load_as_f32_bits(dtype, pb));
            /* one fused rounding to f32, then one rounding to the dtype */
            store_from_f32_bits(dtype, dst, f32_arithmetic_result(fmaf(alpha_f32, x, y)));
        } else {
            uint64_t operands[3] = {load_u64(pb), load_u64(pa), ref_f64_bits(alpha)}; /* NaN order */
            double x = ref_f64_from_bits(operands[1]), y = ref_f64_from_bits(operands[0]);
            store_u64(dst, f64_arithmetic_result(fma(alpha, x, y), operands, 3));
        }
    }
}

const char *ref_op_name(ew_op_t op)
{
    switch (op) {
    case EW_OP_ADD: return "add";
    case EW_OP_MUL: return "mul";
    case EW_OP_RELU: return "relu";
    case EW_OP_CAST: return "cast";
    case EW_OP_SCALE_ADD: return "scale_add";
    case EW_OP_QUANTIZE: return "quantize";
    case EW_OP_DEQUANTIZE: return "dequantize";
    case EW_OP_AMAX: return "amax";
    }
    return "?";
}

/* ======================================================================================== */
/* The scaled casts (docs/semantics.md, "Scaled casts")                                      */
/* ======================================================================================== */

static bool is_scaled_float(ew_dtype_t t) { return t == EW_F16 || t == EW_BF16 || t == EW_F32 || t == EW_F64; }
static bool is_fp8(ew_dtype_t t) { return t == EW_F8E4M3 || t == EW_F8E5M2; }

/* A quantize or amax input as f32 bits: f64 rounded as the cast rounds it, the others exactly. */
static uint32_t scaled_input_bits(ew_dtype_t t, const unsigned char *p)
{
    return t == EW_F64 ? f64_bits_to_f32(load_u64(p)) : load_as_f32_bits(t, p);
}

/* |v| as the order of its bits (NaN above infinity); folded by max, NaN written as 0x7FC00000. */
static uint32_t amax_key(uint32_t bits) { return bits & UINT32_C(0x7FFFFFFF); }
static float amax_of_key(uint32_t key)
{
    return ref_f32_from_bits(key > UINT32_C(0x7F800000) ? UINT32_C(0x7FC00000) : key);
}

void ref_quantize(ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out, const void *x, float scale,
                  float *amax)
{
    if (!is_fp8(out_dtype) || !is_scaled_float(in_dtype))
        unsupported("ref_quantize", EW_OP_QUANTIZE, (int)out_dtype, (int)in_dtype);
    const float max = out_dtype == EW_F8E4M3 ? 448.0f : 57344.0f;
    const size_t in_size = element_size(in_dtype);
    uint32_t key = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t v = scaled_input_bits(in_dtype, (const unsigned char *)x + (size_t)i * in_size);
        key = amax_key(v) > key ? amax_key(v) : key;
        uint32_t product = f32_arithmetic_result(ref_f32_from_bits(v) * scale);
        const float p = ref_f32_from_bits(product);
        if (p > max) /* NaN compares false: it stays */
            product = ref_f32_bits(max);
        else if (p < -max)
            product = ref_f32_bits(-max);
        store_from_f32_bits(out_dtype, (unsigned char *)out + i, product);
    }
    if (amax != NULL)
        *amax = amax_of_key(key);
}

void ref_dequantize(ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out, const void *q, float scale_inv)
{
    if (!is_scaled_float(out_dtype) || !is_fp8(in_dtype))
        unsupported("ref_dequantize", EW_OP_DEQUANTIZE, (int)out_dtype, (int)in_dtype);
    const size_t out_size = element_size(out_dtype);
    for (int64_t i = 0; i < n; i++) {
        const float w = ref_f32_from_bits(load_as_f32_bits(in_dtype, (const unsigned char *)q + i));
        store_from_f32_bits(out_dtype, (unsigned char *)out + (size_t)i * out_size,
                            f32_arithmetic_result(w * scale_inv));
    }
}

float ref_amax(ew_dtype_t dtype, int64_t n, const void *x)
{
    if (!is_scaled_float(dtype))
        unsupported("ref_amax", EW_OP_AMAX, (int)dtype, (int)dtype);
    const size_t size = element_size(dtype);
    uint32_t key = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t k = amax_key(scaled_input_bits(dtype, (const unsigned char *)x + (size_t)i * size));
        key = k > key ? k : key;
    }
    return amax_of_key(key);
}

/* ======================================================================================== */
/* The block-scaled casts (docs/semantics.md, "Block-scaled casts"). Every f32 product and   */
/* quotient is one host float operation (IEEE, nearest-even, subnormals kept: FLT_EVAL_METHOD */
/* is 0, see the top); a NaN result is the GPU's canonical NaN (f32_arithmetic_result). No    */
/* sums, so nothing can be contracted into an fma.                                            */
/* ======================================================================================== */

int ref_block_size(ew_block_format_t format)
{
    switch (format) {
    case EW_BLOCKS_MX: return 32;
    case EW_BLOCKS_NVFP4: return 16;
    }
    unsupported("ref_block_size", 0, (int)format, 0);
}

void ref_block_scales_shape(ew_block_format_t format, int64_t rows, int64_t cols, unsigned options,
                            int64_t *scale_rows, int64_t *scale_cols)
{
    const int64_t block = ref_block_size(format);
    if (rows < 0 || cols < 0 || cols % block != 0)
        unsupported("ref_block_scales_shape: a shape", 0, (int)rows, (int)cols);
    const int64_t row_blocks = cols / block;
    if (options & EW_BLOCKS_SWIZZLED) {
        *scale_rows = (rows + 127) / 128 * 128;
        *scale_cols = (row_blocks + 3) / 4 * 4;
    } else {
        *scale_rows = rows;
        *scale_cols = row_blocks;
    }
}

int64_t ref_block_scale_index(int64_t r, int64_t k, int64_t row_blocks, unsigned options)
{
    if (!(options & EW_BLOCKS_SWIZZLED))
        return r * row_blocks + k;
    const int64_t tile_cols = (row_blocks + 3) / 4;
    const int64_t tile = (r / 128) * tile_cols + k / 4;
    return tile * 512 + (r % 32) * 16 + (r % 128) / 32 * 4 + k % 4;
}

/* 2^e as an f32 for -149 <= e <= 127, built from its bits. */
static float power_of_two(int e)
{
    if (e < -149 || e > 127)
        unsupported("power_of_two", 0, e, 0);
    return ref_f32_from_bits(e >= -126 ? (uint32_t)(e + 127) << 23 : UINT32_C(1) << (e + 149));
}

/* e2m1 (§11.1): codes 0-7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 the sign. */
float ref_e2m1_to_f32(uint8_t code)
{
    static const uint32_t magnitude_bits[8] = {0x00000000, 0x3F000000, 0x3F800000, 0x3FC00000,
                                               0x40000000, 0x40400000, 0x40800000, 0x40C00000};
    return ref_f32_from_bits(magnitude_bits[code & 7] | (code & 8 ? UINT32_C(0x80000000) : 0));
}

/* |t| >= 6 saturates to 6; otherwise round to nearest, ties to even, at the quantum of t's binade
 * (0.5 below 2, 1 in [2, 4), 2 in [4, 6)); the sign from t's sign bit; NaN gives 0x4. */
uint8_t ref_f32_to_e2m1(float f)
{
    const uint32_t bits = ref_f32_bits(f);
    if (f32_bits_are_nan(bits))
        return 0x4;
    const uint8_t sign = bits >> 31 ? 0x8 : 0;
    const decoded_float d = decode_float(&FORMAT_F32, bits);
    if (d.cls == CLASS_ZERO)
        return sign;
    if (d.cls == CLASS_INFINITE || fabsf(f) >= 6.0f)
        return sign | 0x7;
    /* value = significand * 2^exponent < 6; quantum 2^q */
    const int value_exponent = highest_set_bit(d.significand) + d.exponent; /* floor(log2 |t|) */
    const int q = value_exponent < 1 ? -1 : value_exponent - 1;
    const uint64_t steps = d.exponent >= q ? d.significand << (d.exponent - q)
                                           : shift_right_round_half_even(d.significand, q - d.exponent);
    /* binade [2^(q+1), 2^(q+2)) starts at code 2q + 4 with steps 2^(q+1) / 2^q = 2; below 1 the codes
     * are the steps themselves (q = -1) */
    return sign | (uint8_t)(2 * q + 2 + (int)steps);
}

/* The element formats of MX: max and emax (the exponent of the largest power of two <= max). */
static float element_max(ew_dtype_t t)
{
    switch (t) {
    case EW_F8E4M3: return 448.0f;
    case EW_F8E5M2: return 57344.0f;
    case EW_F4E2M1: return 6.0f;
    default: unsupported("element_max", 0, (int)t, 0);
    }
}

static int element_emax(ew_dtype_t t)
{
    switch (t) {
    case EW_F8E4M3: return 8;
    case EW_F8E5M2: return 15;
    case EW_F4E2M1: return 2;
    default: unsupported("element_emax", 0, (int)t, 0);
    }
}

static float clamp_f32(float v, float lo, float hi)
{
    if (v < lo) /* NaN compares false: it stays */
        return lo;
    if (v > hi)
        return hi;
    return v;
}

/* amax of a block's elements as f32 bits, |v| by the order of its bits, NaN (0x7FC00000) where any is. */
static uint32_t block_amax_bits(ew_dtype_t in_dtype, const unsigned char *x, int block)
{
    const size_t size = element_size(in_dtype);
    uint32_t key = 0;
    for (int i = 0; i < block; i++) {
        const uint32_t k = amax_key(load_as_f32_bits(in_dtype, x + (size_t)i * size));
        key = k > key ? k : key;
    }
    return ref_f32_bits(amax_of_key(key));
}

uint8_t ref_e8m0_scale_floor(float amax, ew_dtype_t element)
{
    const uint32_t bits = ref_f32_bits(amax);
    if (f32_bits_are_nan(bits))
        return 0xFF;
    int unbiased = (int)(bits >> 23 & 0xFF) - 127 - element_emax(element);
    unbiased = unbiased < -127 ? -127 : unbiased > 128 ? 128 : unbiased;
    return (uint8_t)(unbiased + 127);
}

uint8_t ref_e8m0_scale_round_up(float amax, ew_dtype_t element)
{
    const float reciprocal = 1.0f / element_max(element); /* f32(1 / max), one rounding */
    const uint32_t d = f32_arithmetic_result(amax * reciprocal);
    if (f32_bits_are_nan(d))
        return 0xFF;
    if ((d & UINT32_C(0x7FFFFFFF)) == UINT32_C(0x7F800000))
        return 0xFE;
    if ((d & UINT32_C(0x7FFFFFFF)) == 0)
        return 0x00;
    if (d >> 31)
        unsupported("ref_e8m0_scale_round_up: a negative amax", 0, 0, 0);
    const int biased = (int)(d >> 23);
    const uint32_t mantissa = d & UINT32_C(0x7FFFFF);
    /* the exponent of the smallest power of two >= d: a normal d's own exponent, one more where its
     * mantissa is not 0; a subnormal d = mantissa * 2^-149 that of 2^-149 * the power of two >= mantissa */
    int exponent;
    if (biased != 0)
        exponent = biased - 127 + (mantissa != 0);
    else
        exponent = -149 + highest_set_bit(mantissa) + ((mantissa & (mantissa - 1)) != 0);
    exponent = exponent < -127 ? -127 : exponent > 127 ? 127 : exponent;
    return (uint8_t)(exponent + 127);
}

/* MX quantize's element factor (§11.2). FLOOR: the divisor S; ROUND_UP: the multiplier r. */
static float mx_floor_divisor(uint8_t s)
{
    if (s == 0xFF)
        return ref_f32_from_bits(UINT32_C(0x7F800000)); /* 255 << 23 */
    return power_of_two(s == 0 ? -126 : (int)s - 127);  /* the reference clamps 2^-127 to 2^-126 */
}

static float mx_round_up_multiplier(uint8_t s)
{
    if (s == 0xFF)
        return ref_f32_from_bits(ARITHMETIC_NAN_F32);
    if (s == 0xFE)
        return power_of_two(-127);
    if (s == 0)
        return 1.0f;
    return power_of_two(127 - (int)s);
}

/* MX dequantize's factor: 2^(s-127), 2^-127 for s = 0, NaN for 255. */
static float e8m0_value(uint8_t s)
{
    return s == 0xFF ? ref_f32_from_bits(ARITHMETIC_NAN_F32) : power_of_two((int)s - 127);
}

/* An element code of out_dtype from the f32 bits t (already clamped to [-max, max]). */
static uint8_t element_code(ew_dtype_t out_dtype, uint32_t t)
{
    switch (out_dtype) {
    case EW_F8E4M3: return f32_bits_to_e4m3(t);
    case EW_F8E5M2: return f32_bits_to_e5m2(t);
    case EW_F4E2M1: return ref_f32_to_e2m1(ref_f32_from_bits(t));
    default: unsupported("element_code", 0, (int)out_dtype, 0);
    }
}

static void store_element(ew_dtype_t dtype, unsigned char *base, int64_t i, uint8_t code)
{
    if (dtype != EW_F4E2M1) {
        base[i] = code;
        return;
    }
    unsigned char *byte = base + i / 2;
    *byte = (unsigned char)(i % 2 ? (*byte & 0x0F) | (code << 4) : (*byte & 0xF0) | (code & 0x0F));
}

static float load_element(ew_dtype_t dtype, const unsigned char *base, int64_t i)
{
    if (dtype == EW_F4E2M1)
        return ref_e2m1_to_f32((uint8_t)(i % 2 ? base[i / 2] >> 4 : base[i / 2] & 0x0F));
    return ref_f32_from_bits(load_as_f32_bits(dtype, base + i));
}

static bool is_block_input(ew_dtype_t t) { return t == EW_F16 || t == EW_BF16 || t == EW_F32; }

static void check_block_call(const char *what, ew_block_format_t format, ew_dtype_t element, ew_dtype_t wide,
                             int64_t rows, int64_t cols, unsigned options, const float *global_scale)
{
    const bool element_ok = format == EW_BLOCKS_MX ? (is_fp8(element) || element == EW_F4E2M1)
                                                   : element == EW_F4E2M1;
    const bool options_ok = (options & ~(unsigned)(EW_BLOCKS_ROUND_UP | EW_BLOCKS_SWIZZLED)) == 0 &&
                            (format == EW_BLOCKS_MX || !(options & EW_BLOCKS_ROUND_UP));
    /* a global scale is NVFP4's */
    if (!element_ok || !is_block_input(wide) || !options_ok || rows < 0 || cols < 0 ||
        cols % ref_block_size(format) != 0 || (format == EW_BLOCKS_MX && global_scale != NULL))
        unsupported(what, (int)format, (int)element, (int)wide);
}

void ref_quantize_blocks(ew_block_format_t format, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t rows,
                         int64_t cols, void *out, void *scales, const void *x, const float *global_scale,
                         unsigned options)
{
    check_block_call("ref_quantize_blocks", format, out_dtype, in_dtype, rows, cols, options, global_scale);
    const int block = ref_block_size(format);
    const int64_t row_blocks = cols / block;
    int64_t scale_rows, scale_cols;
    ref_block_scales_shape(format, rows, cols, options, &scale_rows, &scale_cols);
    memset(scales, 0, (size_t)(scale_rows * scale_cols)); /* the swizzled layout's padding */
    const size_t in_size = element_size(in_dtype);
    const float g = global_scale != NULL ? *global_scale : 1.0f;
    /* NVFP4's factors of g: one rounding each, as the reference computes them */
    const float inverse_g = ref_f32_from_bits(f32_arithmetic_result(1.0f / g));
    const float sixth = 1.0f / 6.0f;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t k = 0; k < row_blocks; k++) {
            const int64_t first = r * cols + k * block;
            const unsigned char *xb = (const unsigned char *)x + (size_t)first * in_size;
            const float amax = ref_f32_from_bits(block_amax_bits(in_dtype, xb, block));
            uint8_t s;
            int divide;    /* MX floor: t = v / factor; otherwise t = v * factor */
            float factor;
            float max;
            if (format == EW_BLOCKS_MX) {
                max = element_max(out_dtype);
                if (options & EW_BLOCKS_ROUND_UP) {
                    s = ref_e8m0_scale_round_up(amax, out_dtype);
                    factor = mx_round_up_multiplier(s);
                    divide = 0;
                } else {
                    s = ref_e8m0_scale_floor(amax, out_dtype);
                    factor = mx_floor_divisor(s);
                    divide = 1;
                }
            } else {
                max = 6.0f;
                const float b = ref_f32_from_bits(f32_arithmetic_result(amax * sixth));
                const float c = ref_f32_from_bits(f32_arithmetic_result(b / g));
                s = f32_bits_to_e4m3(ref_f32_bits(clamp_f32(c, 0x1p-6f, 448.0f)));
                const float scale_value = ref_f32_from_bits(e4m3_to_f32_bits(s));
                factor = ref_f32_from_bits(f32_arithmetic_result(inverse_g / scale_value));
                divide = 0;
            }
            ((unsigned char *)scales)[ref_block_scale_index(r, k, row_blocks, options)] = s;
            for (int i = 0; i < block; i++) {
                const float v = ref_f32_from_bits(load_as_f32_bits(in_dtype, xb + (size_t)i * in_size));
                const float t = ref_f32_from_bits(f32_arithmetic_result(divide ? v / factor : v * factor));
                const uint32_t clamped = f32_bits_are_nan(ref_f32_bits(t)) ? ref_f32_bits(t)
                                                                            : ref_f32_bits(clamp_f32(t, -max, max));
                store_element(out_dtype, out, first + i, element_code(out_dtype, clamped));
            }
        }
    }
}

void ref_dequantize_blocks(ew_block_format_t format, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t rows,
                           int64_t cols, void *out, const void *q, const void *scales, const float *global_scale,
                           unsigned options)
{
    check_block_call("ref_dequantize_blocks", format, in_dtype, out_dtype, rows, cols, options, global_scale);
    const int block = ref_block_size(format);
    const int64_t row_blocks = cols / block;
    const size_t out_size = element_size(out_dtype);
    const float g = global_scale != NULL ? *global_scale : 1.0f;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t k = 0; k < row_blocks; k++) {
            const uint8_t s = ((const unsigned char *)scales)[ref_block_scale_index(r, k, row_blocks, options)];
            float factor;
            if (format == EW_BLOCKS_MX)
                factor = e8m0_value(s);
            else /* g * float(scale), the product first */
                factor = ref_f32_from_bits(f32_arithmetic_result(g * ref_f32_from_bits(e4m3_to_f32_bits(s))));
            for (int i = 0; i < block; i++) {
                const int64_t at = r * cols + k * block + i;
                const float w = load_element(in_dtype, q, at);
                store_from_f32_bits(out_dtype, (unsigned char *)out + (size_t)at * out_size,
                                    f32_arithmetic_result(w * factor));
            }
        }
    }
}
