/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CMocka tests of the independent CPU reference (tests/ref/ref.c).
 *
 * The expectations here are derived without the reference's code: float values come from the
 * textbook formula (-1)^s * 2^(e-bias) * (1 + m/2^k), roundings from searching a table of every code
 * of the target format (nearest value, ties to the even code), conversions to f32/f64 from the host's
 * hardware, integer results from plain modular arithmetic, NaN patterns from the table of
 * docs/semantics.md §6, and the hand-checked rows of docs/semantics.md §9 and §10. Each test names the
 * section of docs/semantics.md it checks. The block-scaled casts (§11): e2m1 against a scan of its
 * eight values and against a transliteration of torchao's bit arithmetic, the e8m0 scale rules and
 * whole MX and NVFP4 blocks by hand, and the swizzled layout against a transliteration of torchao's
 * to_blocked.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ref.h"

/* ======================================================================================== */
/* Small helpers                                                                              */
/* ======================================================================================== */

#define DTYPE_COUNT 13
static const ew_dtype_t ALL_DTYPES[DTYPE_COUNT] = {EW_BOOL, EW_I8,  EW_U8,  EW_I16,    EW_I32,    EW_I64,   EW_F16,
                                                   EW_BF16, EW_F32, EW_F64, EW_F8E4M3, EW_F8E5M2, EW_F8E8M0};

static const char *dtype_name(ew_dtype_t t)
{
    static const char *const names[] = {"?", "bool", "i8", "u8", "i16", "i32", "i64",
                                        "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2", "f8e8m0"};
    return (int)t >= 1 && (int)t <= DTYPE_COUNT ? names[t] : "?";
}

static size_t dtype_size(ew_dtype_t t)
{
    static const size_t sizes[] = {0, 1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 1, 1, 1};
    return sizes[t];
}

static bool is_integer_dtype(ew_dtype_t t)
{
    return t == EW_I8 || t == EW_U8 || t == EW_I16 || t == EW_I32 || t == EW_I64;
}

/* Raw bits of element i, zero-extended (little-endian host, as the GPU tests assume). */
static uint64_t element_bits(ew_dtype_t t, const void *base, size_t i)
{
    uint64_t bits = 0;
    memcpy(&bits, (const unsigned char *)base + i * dtype_size(t), dtype_size(t));
    return bits;
}

static void set_element_bits(ew_dtype_t t, void *base, size_t i, uint64_t bits)
{
    memcpy((unsigned char *)base + i * dtype_size(t), &bits, dtype_size(t));
}

/* splitmix64: deterministic, so a failure reproduces */
static uint64_t rng_state = UINT64_C(0x0123456789ABCDEF);
static uint64_t next_random(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void *checked_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    return p;
}

/* Mismatch bookkeeping: report the first few with context, then fail once with the count. */
typedef struct {
    const char *test;
    long mismatches;
} mismatch_log;

static void expect_bits(mismatch_log *log, uint64_t got, uint64_t expected, const char *context,
                        uint64_t input)
{
    if (got == expected)
        return;
    if (log->mismatches < 8)
        print_error("%s: %s, input 0x%llx: got 0x%llx, expected 0x%llx\n", log->test, context,
                    (unsigned long long)input, (unsigned long long)got, (unsigned long long)expected);
    log->mismatches++;
}

static void finish(const mismatch_log *log)
{
    if (log->mismatches)
        print_error("%s: %ld mismatches\n", log->test, log->mismatches);
    assert_int_equal(log->mismatches, 0);
}

/* ======================================================================================== */
/* Float formats from their textbook definition (not from ref.c)                             */
/* ======================================================================================== */

typedef struct {
    ew_dtype_t dtype;
    int exponent_bits, mantissa_bits, bias;
    bool finite_only;       /* e4m3 "fn": no infinity; only S.1111.111 is NaN */
    uint32_t overflow_code; /* the magnitude code right after the largest finite value: inf, or e4m3's NaN */
    uint32_t sign_bit;
} format_spec;

static const format_spec SPEC_F16 = {EW_F16, 5, 10, 15, false, 0x7C00, 0x8000};
static const format_spec SPEC_BF16 = {EW_BF16, 8, 7, 127, false, 0x7F80, 0x8000};
static const format_spec SPEC_E4M3 = {EW_F8E4M3, 4, 3, 7, true, 0x7F, 0x80};
static const format_spec SPEC_E5M2 = {EW_F8E5M2, 5, 2, 15, false, 0x7C, 0x80};

/* (-1)^s * 2^(e-bias) * (1 + m/2^k), or 2^(1-bias) * m/2^k when e == 0; specials flagged. */
static double formula_value(const format_spec *f, uint32_t code, bool *is_nan)
{
    uint32_t mantissa_mask = (1u << f->mantissa_bits) - 1;
    uint32_t exponent_max = (1u << f->exponent_bits) - 1;
    bool negative = (code & f->sign_bit) != 0;
    uint32_t magnitude = code & (f->sign_bit - 1);
    uint32_t e = magnitude >> f->mantissa_bits, m = magnitude & mantissa_mask;
    double fraction = (double)m / (double)(1u << f->mantissa_bits);
    double value;
    *is_nan = false;
    if (!f->finite_only && e == exponent_max) {
        *is_nan = m != 0;
        value = INFINITY;
    } else if (f->finite_only && magnitude == f->overflow_code) {
        *is_nan = true;
        value = NAN;
    } else if (e == 0) {
        value = ldexp(fraction, 1 - f->bias);
    } else {
        value = ldexp(1.0 + fraction, (int)e - f->bias);
    }
    return negative ? -value : value;
}

/* values[c] for every magnitude code c up to overflow_code; the last entry is the value the overflow
 * code would have by the formula (65536 for f16, 480 for e4m3): the "one past the largest" value. */
typedef struct {
    const format_spec *spec;
    double *values;
    uint32_t count;
} code_table;

static code_table TABLE_F16, TABLE_BF16, TABLE_E4M3, TABLE_E5M2;

static void build_table(code_table *t, const format_spec *f)
{
    t->spec = f;
    t->count = f->overflow_code + 1;
    t->values = checked_malloc(t->count * sizeof *t->values);
    for (uint32_t c = 0; c < t->count; c++) {
        uint32_t e = c >> f->mantissa_bits, m = c & ((1u << f->mantissa_bits) - 1);
        int scale = (e == 0 ? 1 : (int)e) - f->bias - f->mantissa_bits;
        t->values[c] = ldexp((double)(e == 0 ? m : m + (1u << f->mantissa_bits)), scale);
    }
}

static int setup_tables(void **state)
{
    (void)state;
    build_table(&TABLE_F16, &SPEC_F16);
    build_table(&TABLE_BF16, &SPEC_BF16);
    build_table(&TABLE_E4M3, &SPEC_E4M3);
    build_table(&TABLE_E5M2, &SPEC_E5M2);
    return 0;
}

static int teardown_tables(void **state)
{
    (void)state;
    free(TABLE_F16.values);
    free(TABLE_BF16.values);
    free(TABLE_E4M3.values);
    free(TABLE_E5M2.values);
    return 0;
}

static const code_table *table_for(ew_dtype_t t)
{
    switch (t) {
    case EW_F16: return &TABLE_F16;
    case EW_BF16: return &TABLE_BF16;
    case EW_F8E4M3: return &TABLE_E4M3;
    case EW_F8E5M2: return &TABLE_E5M2;
    default: fail_msg("no code table for %s", dtype_name(t));
    }
    return NULL;
}

/* Nearest code to a non-NaN x, ties to the even code, by literally scanning every code. A result of
 * overflow_code means "beyond the largest finite": that code is +-inf, or NaN for e4m3. */
static uint32_t nearest_code_by_scan(const code_table *t, double x)
{
    uint32_t sign = signbit(x) ? t->spec->sign_bit : 0;
    double ax = fabs(x);
    uint32_t best = t->count - 1;
    if (ax >= t->values[t->count - 1])
        return sign | best;
    double best_distance = INFINITY;
    for (uint32_t c = 0; c < t->count; c++) {
        double d = fabs(ax - t->values[c]);
        if (d < best_distance || (d == best_distance && c % 2 == 0)) {
            best = c;
            best_distance = d;
        }
    }
    return sign | best;
}

/* The same by binary search, for bulk use; test nearest_search_equals_scan ties the two together. */
static uint32_t nearest_code(const code_table *t, double x)
{
    uint32_t sign = signbit(x) ? t->spec->sign_bit : 0;
    double ax = fabs(x);
    uint32_t lo = 0, hi = t->count - 1; /* values[lo] <= ax < values[hi] */
    if (ax >= t->values[hi])
        return sign | hi;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->values[mid] <= ax)
            lo = mid;
        else
            hi = mid;
    }
    double below = ax - t->values[lo], above = t->values[hi] - ax; /* exact (Sterbenz) */
    uint32_t c = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
    return sign | c;
}

/* ======================================================================================== */
/* NaN patterns, as docs/semantics.md §6 lists them                                          */
/* ======================================================================================== */

static uint32_t doc_nan_to_f32(ew_dtype_t from, uint32_t code)
{
    switch (from) {
    case EW_F16: return 0x7FFFFFFF;
    case EW_BF16: return code << 16;
    case EW_F8E4M3: return code & 0x80 ? 0xFFF00000 : 0x7FF00000;
    case EW_F8E5M2: return (code & 0x80 ? 0x80000000u : 0) | 0x7FFFFFFFu; /* canonical, sign OR-ed back */
    case EW_F8E8M0: return 0x7F800001; /* c10's, for the one NaN code 0xFF */
    default: fail_msg("no NaN widening for %s", dtype_name(from));
    }
    return 0;
}

static uint64_t doc_nan_f32_to_f64(uint32_t b)
{
    return ((uint64_t)(b >> 31) << 63) | UINT64_C(0x7FF8000000000000) | ((uint64_t)(b & 0x7FFFFF) << 29);
}

static uint32_t doc_nan_f64_to_f32(uint64_t b)
{
    return (uint32_t)(b >> 63) << 31 | 0x7FC00000u | (uint32_t)((b >> 29) & 0x7FFFFF);
}

#define ARITHMETIC_NAN_F32 UINT32_C(0x7FFFFFFF)
#define ROUNDED_NAN_16 UINT64_C(0x7FFF)
#define F64_QUIET_BIT UINT64_C(0x0008000000000000)
#define F64_DEFAULT_NAN UINT64_C(0xFFF8000000000000)

/* An f64 add, mul or fma whose result is NaN: the first NaN among the operands in the order given
 * (add a, b; mul b, a; scale_add b, a, alpha), with the quiet bit set; none NaN (an invalid
 * operation): the default NaN. */
static uint64_t doc_f64_arithmetic_nan(const uint64_t *operands, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (isnan(ref_f64_from_bits(operands[i])))
            return operands[i] | F64_QUIET_BIT;
    return F64_DEFAULT_NAN;
}

/* ======================================================================================== */
/* Expected casts (docs/semantics.md §5), from an exactly known source value                 */
/* ======================================================================================== */

typedef enum { SOURCE_INTEGER, SOURCE_F32_EXACT, SOURCE_F64 } source_kind;

typedef struct {
    source_kind kind;
    int64_t integer;  /* SOURCE_INTEGER (bool already 0/1) */
    double value;     /* float sources that are not NaN, exactly */
    bool is_nan;
    uint32_t nan_f32; /* SOURCE_F32_EXACT NaN: its f32 widening (§6) */
    uint64_t nan_f64; /* SOURCE_F64 NaN: its bits */
} source_value;

/* v modulo 2^bits, by arithmetic rather than by a conversion */
static uint64_t low_bits(int64_t v, int bits)
{
    if (bits == 64)
        return (uint64_t)v;
    int64_t modulus = (int64_t)1 << bits;
    int64_t r = v % modulus;
    return (uint64_t)(r < 0 ? r + modulus : r);
}

/* Truncate toward zero and saturate into a signed `bits`-bit range (§5.4) */
static int64_t truncate_and_saturate(double v, int bits)
{
    double t = trunc(v);
    if (bits == 64) {
        if (t >= 0x1p63)
            return INT64_MAX;
        if (t < -0x1p63)
            return INT64_MIN;
        return (int64_t)t;
    }
    double max = ldexp(1.0, bits - 1) - 1, min = -ldexp(1.0, bits - 1);
    return (int64_t)(t > max ? max : t < min ? min : t);
}

/* e8m0 (§5.7) by magnitude, the sign dropped: from a normal f32 value x in [2^k, 2^(k+1)), 2^k below
 * 1.5 · 2^k and 2^(k+1) from there on (codes k + 127, k + 128; 0xFF past 2^127); below 2^-126, 2^-126
 * strictly above 2^-127, else 2^-127 (code 0); inf and NaN 0xFF. */
static uint64_t expected_e8m0(double x, bool nan)
{
    const double magnitude = fabs(x);
    if (nan || isinf(magnitude))
        return 0xFF;
    if (magnitude < 0x1p-126)
        return magnitude > 0x1p-127 ? 1 : 0;
    int e;
    frexp(magnitude, &e); /* 2^(e-1) <= magnitude < 2^e */
    const int k = e - 1, code = k + 127 + (magnitude >= 1.5 * ldexp(1.0, k));
    return code > 0xFF ? 0xFF : (uint64_t)code;
}

static uint64_t narrow_float_from_f32_value(ew_dtype_t out, double value_exact_in_f32, bool nan,
                                            uint32_t nan32)
{
    if (out == EW_F8E8M0)
        return expected_e8m0(value_exact_in_f32, nan);
    if (nan) {
        if (out == EW_F16 || out == EW_BF16)
            return ROUNDED_NAN_16;
        return nan32 >> 31 ? 0xFF : 0x7F; /* fp8 */
    }
    return nearest_code(table_for(out), value_exact_in_f32);
}

static uint64_t expected_cast(ew_dtype_t out, source_value s)
{
    int bits_of[] = {0, 1, 8, 8, 16, 32, 64};
    if (s.kind == SOURCE_INTEGER) {
        switch (out) {
        case EW_BOOL: return s.integer != 0;
        case EW_F32: return ref_f32_bits((float)s.integer); /* host conversion: RNE */
        case EW_F64: return ref_f64_bits((double)s.integer);
        case EW_F16: case EW_BF16: case EW_F8E4M3: case EW_F8E5M2: case EW_F8E8M0: /* through f32 (§5.3) */
            return narrow_float_from_f32_value(out, (double)(float)s.integer, false, 0);
        default: return low_bits(s.integer, bits_of[out]);
        }
    }
    bool from_f64 = s.kind == SOURCE_F64;
    /* an f64 source first becomes f32 for the narrower floats (§5.5, §5.6) */
    uint32_t nan32 = from_f64 ? doc_nan_f64_to_f32(s.nan_f64) : s.nan_f32;
    double as_f32 = from_f64 ? (double)(float)s.value : s.value;
    switch (out) {
    case EW_BOOL: return s.is_nan || s.value != 0;
    case EW_I8: case EW_I16: case EW_I32: {
        int64_t i32 = s.is_nan ? (from_f64 ? INT32_MIN : 0) : truncate_and_saturate(s.value, 32);
        return low_bits(i32, bits_of[out]);
    }
    case EW_U8: case EW_I64: {
        int64_t i64 = s.is_nan ? INT64_MIN : truncate_and_saturate(s.value, 64);
        return low_bits(i64, bits_of[out]);
    }
    case EW_F32: return s.is_nan ? nan32 : ref_f32_bits((float)s.value);
    case EW_F64:
        if (from_f64)
            return s.is_nan ? s.nan_f64 : ref_f64_bits(s.value);
        return s.is_nan ? doc_nan_f32_to_f64(s.nan_f32) : ref_f64_bits(s.value);
    default: return narrow_float_from_f32_value(out, as_f32, s.is_nan, nan32);
    }
}

/* The source value of element bits of dtype t, found independently of ref.c. */
static source_value source_of(ew_dtype_t t, uint64_t bits)
{
    source_value s = {SOURCE_INTEGER, 0, 0.0, false, 0, 0};
    switch (t) {
    case EW_BOOL: s.integer = bits != 0; break;
    case EW_U8: s.integer = (int64_t)bits; break;
    case EW_I8: s.integer = bits >= 0x80 ? (int64_t)bits - 0x100 : (int64_t)bits; break;
    case EW_I16: s.integer = bits >= 0x8000 ? (int64_t)bits - 0x10000 : (int64_t)bits; break;
    case EW_I32: s.integer = bits >= 0x80000000u ? (int64_t)bits - 0x100000000 : (int64_t)bits; break;
    case EW_I64: memcpy(&s.integer, &bits, sizeof s.integer); break;
    case EW_F32:
        s.kind = SOURCE_F32_EXACT;
        s.value = (double)ref_f32_from_bits((uint32_t)bits);
        s.is_nan = isnan(s.value);
        s.nan_f32 = (uint32_t)bits;
        break;
    case EW_F64:
        s.kind = SOURCE_F64;
        s.value = ref_f64_from_bits(bits);
        s.is_nan = isnan(s.value);
        s.nan_f64 = bits;
        break;
    case EW_F8E8M0: /* 2^(code - 127), code 0 included; 0xFF NaN */
        s.kind = SOURCE_F32_EXACT;
        s.is_nan = bits == 0xFF;
        s.value = s.is_nan ? 0.0 : ldexp(1.0, (int)bits - 127);
        s.nan_f32 = s.is_nan ? doc_nan_to_f32(t, (uint32_t)bits) : 0;
        break;
    default: {
        const format_spec *f = table_for(t)->spec;
        s.kind = SOURCE_F32_EXACT;
        s.value = formula_value(f, (uint32_t)bits, &s.is_nan);
        if (s.is_nan)
            s.nan_f32 = doc_nan_to_f32(t, (uint32_t)bits);
        break;
    }
    }
    return s;
}

/* Casts an array of inputs to every dtype with ref_cast and compares each element (§5). */
static void check_casts_to_every_dtype(mismatch_log *log, ew_dtype_t in, const void *inputs, size_t n)
{
    for (int k = 0; k < DTYPE_COUNT; k++) {
        ew_dtype_t out = ALL_DTYPES[k];
        void *results = checked_malloc(n * dtype_size(out));
        ref_cast(out, in, (int64_t)n, results, inputs);
        char context[64];
        snprintf(context, sizeof context, "cast %s <- %s", dtype_name(out), dtype_name(in));
        for (size_t i = 0; i < n; i++) {
            uint64_t x = element_bits(in, inputs, i);
            uint64_t expected = out == in && out != EW_BOOL ? x : expected_cast(out, source_of(in, x));
            expect_bits(log, element_bits(out, results, i), expected, context, x);
        }
        free(results);
    }
}

/* Every bit pattern of a 1- or 2-byte dtype, in order */
static void *all_patterns(ew_dtype_t t, size_t *n)
{
    *n = (size_t)1 << (8 * dtype_size(t));
    void *p = checked_malloc(*n * dtype_size(t));
    for (size_t i = 0; i < *n; i++)
        set_element_bits(t, p, i, i);
    return p;
}

/* ======================================================================================== */
/* Interesting inputs for the wide types                                                       */
/* ======================================================================================== */

static const uint32_t EDGE_F32[] = {
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
    0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF,
    0x7FA00123, 0x3F000000, 0xBF000000, 0x3F800000, 0xBF800000, 0x3F7FFFFF, 0xBF7FFFFF, 0x3FC00000,
    0xBFC00000, 0x42FF0000, 0x43000000, 0x43010000, 0xC3000000, 0xC3008000, 0xC3010000, 0x437F0000,
    0x437F8000, 0x43800000, 0xBF800001, 0x46FFFE00, 0x47000000, 0xC7000000, 0xC7000100, 0x477FFF00,
    0x4EFFFFFF, 0x4F000000, 0xCF000000, 0xCF000001, 0x5EFFFFFF, 0x5F000000, 0xDF000000, 0xDF000001,
    0x5F800000, 0x477FE000, 0x477FF000, 0x477FEFFF, 0x43E00000, 0x43E80000, 0x43E80001, 0x43F00000,
    0x47600000, 0x47700000, 0x476FFFFF, 0x33000000, 0x33000001, 0x387FE000, 0x3A800000, 0x37800000,
    /* e8m0's ties: 2^-127 and beside it, 0.75, 1.5 and beside it, 3, 1.5 * 2^127 and below it */
    0x00400000, 0x003FFFFF, 0x00400001, 0x00600000, 0x3F400000, 0x3FBFFFFF, 0x3FC00001, 0x40400000,
    0xC0400000, 0x7F400000, 0x7F3FFFFF,
};

static const uint64_t EDGE_F64[] = {
    0x0000000000000000, 0x8000000000000000, 0x0000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000,
    0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
    0xFFF8000000000000, 0x7FF0000000000001, 0xFFF0000020000000, 0x7FFFFFFFFFFFFFFF, 0x3FF0000000000000,
    0xBFF8000000000000, 0x41DFFFFFFFC00000, 0x41DFFFFFFFE00000, 0x41E0000000000000, 0xC1E0000000000000,
    0xC1E0000000200000, 0xC1E0000000100000, 0x43E0000000000000, 0xC3E0000000000000, 0x43DFFFFFFFFFFFFF,
    0xC3E0000000000001, 0x47EFFFFFF0000000, 0x47EFFFFFEFFFFFFF, 0x47EFFFFFE0000000, 0x36A0000000000000,
    0x3690000000000000, 0x3690000000000001, 0x3FF0020000001000, 0x3FF0020000000000, 0x406FE00000000000,
    0x4070000000000000, 0xC060000000000000, 0xC060100000000000, 0x40EFFFE000000000, 0x40EFFE0000000000,
};

#define EDGE_INTEGER_COUNT 41
static const int64_t EDGE_INTEGERS[EDGE_INTEGER_COUNT] = {
    0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65535, 65536,
    16777216, 16777217, 16777219, -16777217, 33685505, 2147483647, -2147483647 - 1, 2147483583,
    2147483584, 9007199254740993, -9007199254740993, INT64_MAX, INT64_MIN, INT64_MAX - 1023,
    INT64_MAX - 1024, INT64_MIN + 1, 65504, 65519, 65520, 448, 464, 465, 57344, 61439, 61440,
};

/* A random f32: uniform bits, or a value in the range of the small formats (where rounding is dense). */
static uint32_t random_f32_bits(void)
{
    uint64_t r = next_random();
    if (r & 1)
        return (uint32_t)(r >> 32);
    uint32_t sign = (uint32_t)(r >> 1 & 1) << 31;
    uint32_t exponent = 127 - 30 + (uint32_t)((r >> 2) % 52); /* 2^-30 .. 2^21 */
    return sign | exponent << 23 | (uint32_t)(r >> 40 & 0x7FFFFF);
}

static uint64_t random_f64_bits(void)
{
    uint64_t r = next_random();
    switch (r & 3) {
    case 0: return next_random();
    case 1: /* near an f32 value */
        return ref_f64_bits((double)ref_f32_from_bits(random_f32_bits())) ^ (next_random() & 0x1FFFFFFF);
    case 2: return ref_f64_bits((double)ref_f32_from_bits(random_f32_bits())); /* exactly an f32 value */
    default: { /* an exact f32 midpoint: the hard case of f64 -> f32 */
        uint64_t b = ref_f64_bits((double)ref_f32_from_bits(random_f32_bits()));
        return (b & ~UINT64_C(0x1FFFFFFF)) | UINT64_C(0x10000000);
    }
    }
}

/* A random value of a signed `bits`-bit integer, its magnitude spread evenly over the bit lengths */
static int64_t random_integer(int bits)
{
    int magnitude_bits = (int)(next_random() % (uint64_t)bits); /* 0 .. bits-1 */
    int64_t magnitude = (int64_t)(next_random() & ((UINT64_C(1) << magnitude_bits) - 1));
    return next_random() & 1 ? -magnitude - 1 : magnitude; /* [-2^(bits-1), 2^(bits-1) - 1] */
}

/* ======================================================================================== */
/* Tests                                                                                      */
/* ======================================================================================== */

/* The brute-force helpers themselves: tables ascend, and search agrees with the literal scan. */
static void test_nearest_search_equals_scan(void **state)
{
    (void)state;
    mismatch_log log = {"nearest_search_equals_scan", 0};
    const code_table *tables[] = {&TABLE_F16, &TABLE_BF16, &TABLE_E4M3, &TABLE_E5M2};
    for (int k = 0; k < 4; k++) {
        const code_table *t = tables[k];
        for (uint32_t c = 1; c < t->count; c++)
            expect_bits(&log, t->values[c] > t->values[c - 1], 1, "table ascending", c);
        int samples = t->count > 256 ? 400 : 20000;
        for (int i = 0; i < samples; i++) {
            double x = (double)ref_f32_from_bits(random_f32_bits());
            if (isnan(x))
                continue;
            expect_bits(&log, nearest_code(t, x), nearest_code_by_scan(t, x), dtype_name(t->spec->dtype),
                        ref_f32_bits((float)x));
        }
        /* every midpoint of the format, where ties decide */
        for (uint32_t c = 0; c + 1 < t->count; c += t->count > 256 ? 97 : 1) {
            double mid = (t->values[c] + t->values[c + 1]) / 2;
            expect_bits(&log, nearest_code(t, mid), nearest_code_by_scan(t, mid), "midpoint", c);
            expect_bits(&log, nearest_code(t, mid) & 1, 0, "midpoint goes to the even code", c);
        }
    }
    finish(&log);
}

/* §1, §5.5, §6: every f16 and bf16 pattern widens to its formula value; NaNs per §6. */
static void test_16bit_widening_all_patterns(void **state)
{
    (void)state;
    mismatch_log log = {"16bit_widening_all_patterns", 0};
    for (uint32_t code = 0; code <= 0xFFFF; code++) {
        bool nan;
        double v = formula_value(&SPEC_F16, code, &nan);
        uint32_t expected = nan ? doc_nan_to_f32(EW_F16, code) : ref_f32_bits((float)v);
        expect_bits(&log, ref_f32_bits(ref_f16_to_f32((uint16_t)code)), expected, "ref_f16_to_f32", code);
        v = formula_value(&SPEC_BF16, code, &nan);
        expected = nan ? doc_nan_to_f32(EW_BF16, code) : ref_f32_bits((float)v);
        expect_bits(&log, ref_f32_bits(ref_bf16_to_f32((uint16_t)code)), expected, "ref_bf16_to_f32", code);
    }
    finish(&log);
}

/* §5.5, §6: f16 -> f32 -> f16 and bf16 -> f32 -> bf16 give every non-NaN pattern back; NaN -> 0x7FFF. */
static void test_16bit_round_trip_all_patterns(void **state)
{
    (void)state;
    mismatch_log log = {"16bit_round_trip_all_patterns", 0};
    for (uint32_t code = 0; code <= 0xFFFF; code++) {
        bool nan;
        (void)formula_value(&SPEC_F16, code, &nan);
        expect_bits(&log, ref_f32_to_f16(ref_f16_to_f32((uint16_t)code)), nan ? ROUNDED_NAN_16 : code,
                    "f16 round trip", code);
        (void)formula_value(&SPEC_BF16, code, &nan);
        expect_bits(&log, ref_f32_to_bf16(ref_bf16_to_f32((uint16_t)code)), nan ? ROUNDED_NAN_16 : code,
                    "bf16 round trip", code);
    }
    finish(&log);
}

/* §1, §5.6, §6: every fp8 pattern widens to its formula value and round-trips. */
static void test_fp8_widening_and_round_trip_all_patterns(void **state)
{
    (void)state;
    mismatch_log log = {"fp8_widening_and_round_trip_all_patterns", 0};
    for (uint32_t code = 0; code <= 0xFF; code++) {
        bool nan;
        double v = formula_value(&SPEC_E4M3, code, &nan);
        uint32_t expected = nan ? doc_nan_to_f32(EW_F8E4M3, code) : ref_f32_bits((float)v);
        expect_bits(&log, ref_f32_bits(ref_e4m3_to_f32((uint8_t)code)), expected, "ref_e4m3_to_f32", code);
        expect_bits(&log, ref_f32_to_e4m3(ref_e4m3_to_f32((uint8_t)code)), code, "e4m3 round trip", code);
        v = formula_value(&SPEC_E5M2, code, &nan);
        expected = nan ? doc_nan_to_f32(EW_F8E5M2, code) : ref_f32_bits((float)v);
        expect_bits(&log, ref_f32_bits(ref_e5m2_to_f32((uint8_t)code)), expected, "ref_e5m2_to_f32", code);
        /* e5m2 NaNs come back as 0x7F/0xFF by sign; every other code as itself */
        uint32_t back = nan ? (code & 0x80) | 0x7F : code;
        expect_bits(&log, ref_f32_to_e5m2(ref_e5m2_to_f32((uint8_t)code)), back, "e5m2 round trip", code);
    }
    /* the formula itself: a few values checked by hand */
    bool nan;
    assert_true(formula_value(&SPEC_E4M3, 0x7E, &nan) == 448.0 && !nan);
    assert_true(formula_value(&SPEC_E4M3, 0x01, &nan) == 0x1p-9 && !nan);
    assert_true(isnan(formula_value(&SPEC_E4M3, 0xFF, &nan)) && nan);
    assert_true(formula_value(&SPEC_E5M2, 0x7B, &nan) == 57344.0 && !nan);
    assert_true(formula_value(&SPEC_E5M2, 0xFC, &nan) == -INFINITY && !nan);
    assert_true(formula_value(&SPEC_F16, 0x7BFF, &nan) == 65504.0 && !nan);
    assert_true(formula_value(&SPEC_BF16, 0x0001, &nan) == 0x1p-133 && !nan);
    finish(&log);
}

/* §5.5, §5.6: f32 -> f16, bf16, e4m3, e5m2 rounding against the brute force, on every midpoint of each
 * format and its f32 neighbours, on edge values and on random floats. */
static void test_f32_narrowing_matches_brute_force(void **state)
{
    (void)state;
    mismatch_log log = {"f32_narrowing_matches_brute_force", 0};
    const ew_dtype_t targets[] = {EW_F16, EW_BF16, EW_F8E4M3, EW_F8E5M2};
    enum { RANDOM_COUNT = 300000, EDGE_COUNT = sizeof EDGE_F32 / sizeof EDGE_F32[0] };
    size_t midpoint_inputs =
        4 * (size_t)(TABLE_F16.count + TABLE_BF16.count + TABLE_E4M3.count + TABLE_E5M2.count);
    uint32_t *inputs = checked_malloc((RANDOM_COUNT + EDGE_COUNT + midpoint_inputs) * sizeof *inputs);
    size_t n = 0;
    for (size_t i = 0; i < EDGE_COUNT; i++)
        inputs[n++] = EDGE_F32[i];
    for (int i = 0; i < RANDOM_COUNT; i++)
        inputs[n++] = random_f32_bits();
    for (int k = 0; k < 4; k++) {
        const code_table *t = table_for(targets[k]);
        size_t start = n;
        for (uint32_t c = 0; c + 1 < t->count; c++) {
            float mid = (float)((t->values[c] + t->values[c + 1]) / 2); /* exact in f32 */
            float cases[] = {mid, nextafterf(mid, 0.0f), nextafterf(mid, INFINITY), (float)t->values[c]};
            for (int j = 0; j < 4; j++)
                inputs[n++] = ref_f32_bits(cases[j]) ^ (c & 1 ? 0x80000000u : 0); /* both signs */
        }
        /* ref_cast on the whole array, and the scalar primitive on the midpoint block */
        for (size_t i = start; i < n; i++) {
            uint32_t x = inputs[i];
            uint64_t expected = expected_cast(targets[k], source_of(EW_F32, x));
            uint64_t got = targets[k] == EW_F16      ? ref_f32_to_f16(ref_f32_from_bits(x))
                           : targets[k] == EW_BF16   ? ref_f32_to_bf16(ref_f32_from_bits(x))
                           : targets[k] == EW_F8E4M3 ? ref_f32_to_e4m3(ref_f32_from_bits(x))
                                                     : ref_f32_to_e5m2(ref_f32_from_bits(x));
            expect_bits(&log, got, expected, dtype_name(targets[k]), x);
        }
    }
    for (int k = 0; k < 4; k++) {
        void *out = checked_malloc(n * 2);
        ref_cast(targets[k], EW_F32, (int64_t)n, out, inputs);
        for (size_t i = 0; i < n; i++)
            expect_bits(&log, element_bits(targets[k], out, i),
                        expected_cast(targets[k], source_of(EW_F32, inputs[i])), dtype_name(targets[k]),
                        inputs[i]);
        free(out);
    }
    free(inputs);
    finish(&log);
}

/* §5 (every family), §6: every pattern of the 1-byte dtypes and of i16, f16, bf16 cast to all 13 dtypes. */
static void test_casts_from_small_dtypes_all_patterns(void **state)
{
    (void)state;
    mismatch_log log = {"casts_from_small_dtypes_all_patterns", 0};
    const ew_dtype_t sources[] = {EW_BOOL,   EW_I8,  EW_U8,  EW_F8E4M3, EW_F8E5M2,
                                  EW_F8E8M0, EW_I16, EW_F16, EW_BF16};
    for (size_t k = 0; k < sizeof sources / sizeof sources[0]; k++) {
        size_t n;
        void *inputs = all_patterns(sources[k], &n);
        check_casts_to_every_dtype(&log, sources[k], inputs, n);
        free(inputs);
    }
    finish(&log);
}

/* §5.3-§5.7, §6: f32, f64, i32, i64 sources (edge and random values) cast to all 13 dtypes. */
static void test_casts_from_wide_dtypes(void **state)
{
    (void)state;
    mismatch_log log = {"casts_from_wide_dtypes", 0};
    enum { RANDOM_COUNT = 40000 };
    size_t edge_f32 = sizeof EDGE_F32 / sizeof EDGE_F32[0], edge_f64 = sizeof EDGE_F64 / sizeof EDGE_F64[0];
    size_t edge_int = EDGE_INTEGER_COUNT;

    uint32_t *f32 = checked_malloc((edge_f32 + RANDOM_COUNT) * sizeof *f32);
    memcpy(f32, EDGE_F32, sizeof EDGE_F32);
    for (size_t i = edge_f32; i < edge_f32 + RANDOM_COUNT; i++)
        f32[i] = random_f32_bits();
    check_casts_to_every_dtype(&log, EW_F32, f32, edge_f32 + RANDOM_COUNT);
    free(f32);

    uint64_t *f64 = checked_malloc((edge_f64 + RANDOM_COUNT) * sizeof *f64);
    memcpy(f64, EDGE_F64, sizeof EDGE_F64);
    for (size_t i = edge_f64; i < edge_f64 + RANDOM_COUNT; i++)
        f64[i] = random_f64_bits();
    check_casts_to_every_dtype(&log, EW_F64, f64, edge_f64 + RANDOM_COUNT);
    free(f64);

    int64_t *i64 = checked_malloc((edge_int + RANDOM_COUNT) * sizeof *i64);
    int32_t *i32 = checked_malloc((edge_int + RANDOM_COUNT) * sizeof *i32);
    for (size_t i = 0; i < edge_int + RANDOM_COUNT; i++) {
        i64[i] = i < edge_int ? EDGE_INTEGERS[i] : random_integer(64);
        int64_t v32 = i < edge_int ? (int64_t)low_bits(EDGE_INTEGERS[i], 32) : random_integer(32);
        uint32_t u32 = (uint32_t)low_bits(v32, 32);
        memcpy(&i32[i], &u32, sizeof u32);
    }
    check_casts_to_every_dtype(&log, EW_I64, i64, edge_int + RANDOM_COUNT);
    check_casts_to_every_dtype(&log, EW_I32, i32, edge_int + RANDOM_COUNT);
    free(i64);
    free(i32);
    finish(&log);
}

/* §3: relu on every f16 and bf16 pattern, and every i8, u8, i16 pattern. */
static void test_relu_all_16bit_and_8bit_patterns(void **state)
{
    (void)state;
    mismatch_log log = {"relu_all_16bit_and_8bit_patterns", 0};
    const ew_dtype_t dtypes[] = {EW_F16, EW_BF16, EW_I8, EW_U8, EW_I16};
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        ew_dtype_t t = dtypes[k];
        size_t n;
        void *x = all_patterns(t, &n);
        void *y = checked_malloc(n * dtype_size(t));
        ref_unary(EW_OP_RELU, t, (int64_t)n, y, x);
        for (size_t i = 0; i < n; i++) {
            uint64_t expected;
            if (is_integer_dtype(t)) {
                int64_t v = source_of(t, i).integer;
                expected = v > 0 ? i : 0;
            } else {
                bool nan;
                double v = formula_value(table_for(t)->spec, (uint32_t)i, &nan);
                expected = nan || v > 0 ? i : 0; /* NaN bits unchanged; -0 and negatives -> +0 */
            }
            expect_bits(&log, element_bits(t, y, i), expected, dtype_name(t), i);
        }
        free(x);
        free(y);
    }
    finish(&log);
}

/* §3: relu on f32, f64, i32, i64 edge and random values. */
static void test_relu_wide_dtypes(void **state)
{
    (void)state;
    mismatch_log log = {"relu_wide_dtypes", 0};
    enum { N = 20000 };
    static uint64_t x[N], y[N];
    const ew_dtype_t dtypes[] = {EW_F32, EW_F64, EW_I32, EW_I64};
    for (int k = 0; k < 4; k++) {
        ew_dtype_t t = dtypes[k];
        for (size_t i = 0; i < N; i++) {
            uint64_t bits = t == EW_F32   ? (i < sizeof EDGE_F32 / 4 ? EDGE_F32[i] : random_f32_bits())
                            : t == EW_F64 ? (i < sizeof EDGE_F64 / 8 ? EDGE_F64[i] : random_f64_bits())
                                          : (uint64_t)random_integer(t == EW_I32 ? 32 : 64);
            set_element_bits(t, x, i, bits);
        }
        ref_unary(EW_OP_RELU, t, N, y, x);
        for (size_t i = 0; i < N; i++) {
            uint64_t in = element_bits(t, x, i);
            source_value s = source_of(t, in);
            bool keep = s.kind == SOURCE_INTEGER ? s.integer > 0 : (s.is_nan || s.value > 0);
            expect_bits(&log, element_bits(t, y, i), keep ? in : 0, dtype_name(t), in);
        }
    }
    finish(&log);
}

/* §2: add and mul on every pair of i8, u8 and bool patterns. */
static void test_add_mul_all_8bit_pairs(void **state)
{
    (void)state;
    mismatch_log log = {"add_mul_all_8bit_pairs", 0};
    enum { N = 256 * 256 };
    static uint8_t a[N], b[N], sum[N], product[N];
    for (size_t i = 0; i < N; i++) {
        a[i] = (uint8_t)(i >> 8);
        b[i] = (uint8_t)i;
    }
    const ew_dtype_t dtypes[] = {EW_I8, EW_U8, EW_BOOL};
    for (int k = 0; k < 3; k++) {
        ew_dtype_t t = dtypes[k];
        ref_binary(EW_OP_ADD, t, N, sum, a, b);
        ref_binary(EW_OP_MUL, t, N, product, a, b);
        for (size_t i = 0; i < N; i++) {
            int64_t x = source_of(t, a[i]).integer, y = source_of(t, b[i]).integer;
            uint64_t expected_sum = t == EW_BOOL ? (x || y) : low_bits(x + y, 8);
            uint64_t expected_product = t == EW_BOOL ? (x && y) : low_bits(x * y, 8);
            expect_bits(&log, sum[i], expected_sum, t == EW_BOOL ? "bool add" : "add", i);
            expect_bits(&log, product[i], expected_product, t == EW_BOOL ? "bool mul" : "mul", i);
        }
    }
    finish(&log);
}

/* a * b mod 2^64 by 32-bit halves, so the check does not reuse the reference's single multiply */
static uint64_t product_mod_2_64(uint64_t a, uint64_t b)
{
    uint64_t a_lo = a & 0xFFFFFFFF, a_hi = a >> 32, b_lo = b & 0xFFFFFFFF, b_hi = b >> 32;
    return a_lo * b_lo + ((a_hi * b_lo + a_lo * b_hi) << 32);
}

/* §2: add and mul on random i16, i32, i64 pairs, edges included. */
static void test_add_mul_wide_integers(void **state)
{
    (void)state;
    mismatch_log log = {"add_mul_wide_integers", 0};
    enum { N = 50000 };
    static int64_t a[N], b[N], sum[N], product[N];
    const ew_dtype_t dtypes[] = {EW_I16, EW_I32, EW_I64};
    const int bits[] = {16, 32, 64};
    for (int k = 0; k < 3; k++) {
        ew_dtype_t t = dtypes[k];
        for (size_t i = 0; i < N; i++) {
            bool edge = i < EDGE_INTEGER_COUNT * EDGE_INTEGER_COUNT; /* every pair of edge values first */
            int64_t x = edge ? EDGE_INTEGERS[i / EDGE_INTEGER_COUNT] : random_integer(bits[k]);
            int64_t y = edge ? EDGE_INTEGERS[i % EDGE_INTEGER_COUNT] : random_integer(bits[k]);
            set_element_bits(t, a, i, low_bits(x, bits[k]));
            set_element_bits(t, b, i, low_bits(y, bits[k]));
        }
        ref_binary(EW_OP_ADD, t, N, sum, a, b);
        ref_binary(EW_OP_MUL, t, N, product, a, b);
        for (size_t i = 0; i < N; i++) {
            int64_t x = source_of(t, element_bits(t, a, i)).integer;
            int64_t y = source_of(t, element_bits(t, b, i)).integer;
            uint64_t expected_sum, expected_product;
            if (t == EW_I64) {
                expected_sum = (uint64_t)x + (uint64_t)y;
                expected_product = product_mod_2_64((uint64_t)x, (uint64_t)y);
            } else { /* exact in int64, then reduced */
                expected_sum = low_bits(x + y, bits[k]);
                expected_product = low_bits(x * y, bits[k]);
            }
            uint64_t input = element_bits(t, a, i);
            expect_bits(&log, element_bits(t, sum, i), expected_sum, dtype_name(t), input);
            expect_bits(&log, element_bits(t, product, i), expected_product, dtype_name(t), input);
        }
    }
    finish(&log);
}

/* §2, §6: f16 and bf16 add/mul equal the correctly rounded exact result (the double sum and product
 * of two such values round like the exact ones); NaN results are 0x7FFF. */
static void test_add_mul_16bit_floats(void **state)
{
    (void)state;
    mismatch_log log = {"add_mul_16bit_floats", 0};
    enum { N = 200000 };
    static uint16_t a[N], b[N], sum[N], product[N];
    const ew_dtype_t dtypes[] = {EW_F16, EW_BF16};
    for (int k = 0; k < 2; k++) {
        ew_dtype_t t = dtypes[k];
        const format_spec *f = table_for(t)->spec;
        for (size_t i = 0; i < N; i++) {
            uint64_t r = next_random();
            a[i] = (uint16_t)r;
            /* half the pairs close in magnitude, where cancellation and ties are common */
            b[i] = r >> 63 ? (uint16_t)(r >> 16) : (uint16_t)((a[i] & 0xFF00) ^ (r >> 16 & 0x80FF));
        }
        ref_binary(EW_OP_ADD, t, N, sum, a, b);
        ref_binary(EW_OP_MUL, t, N, product, a, b);
        for (size_t i = 0; i < N; i++) {
            bool nan_a, nan_b;
            double x = formula_value(f, a[i], &nan_a), y = formula_value(f, b[i], &nan_b);
            double s = x + y, p = x * y;
            bool nan_input = nan_a || nan_b;
            uint64_t expected_sum = nan_input || isnan(s) ? ROUNDED_NAN_16 : nearest_code(table_for(t), s);
            uint64_t expected_product =
                nan_input || isnan(p) ? ROUNDED_NAN_16 : nearest_code(table_for(t), p);
            uint64_t inputs = (uint64_t)a[i] << 16 | b[i];
            expect_bits(&log, sum[i], expected_sum, t == EW_F16 ? "f16 add" : "bf16 add", inputs);
            expect_bits(&log, product[i], expected_product, t == EW_F16 ? "f16 mul" : "bf16 mul", inputs);
        }
    }
    finish(&log);
}

/* §2, §6: f32 and f64 add/mul are the IEEE results; an f32 NaN result is canonical, an f64 one is the
 * first NaN operand quieted, or the default NaN. Every pair of edge values comes first. */
static void test_add_mul_wide_floats(void **state)
{
    (void)state;
    mismatch_log log = {"add_mul_wide_floats", 0};
    enum { N = 50000 };
    static uint32_t a32[N], b32[N], s32[N], p32[N];
    static uint64_t a64[N], b64[N], s64[N], p64[N];
    size_t edges = sizeof EDGE_F32 / sizeof EDGE_F32[0], edges64 = sizeof EDGE_F64 / sizeof EDGE_F64[0];
    for (size_t i = 0; i < N; i++) {
        a32[i] = i < edges * edges ? EDGE_F32[i / edges] : random_f32_bits();
        b32[i] = i < edges * edges ? EDGE_F32[i % edges] : random_f32_bits();
        a64[i] = random_f64_bits();
        b64[i] = i % 7 ? random_f64_bits() : a64[i] ^ UINT64_C(0x8000000000000000);
        if (i < edges64 * edges64) {
            a64[i] = EDGE_F64[i / edges64];
            b64[i] = EDGE_F64[i % edges64];
        }
    }
    ref_binary(EW_OP_ADD, EW_F32, N, s32, a32, b32);
    ref_binary(EW_OP_MUL, EW_F32, N, p32, a32, b32);
    ref_binary(EW_OP_ADD, EW_F64, N, s64, a64, b64);
    ref_binary(EW_OP_MUL, EW_F64, N, p64, a64, b64);
    for (size_t i = 0; i < N; i++) {
        float s = ref_f32_from_bits(a32[i]) + ref_f32_from_bits(b32[i]),
              p = ref_f32_from_bits(a32[i]) * ref_f32_from_bits(b32[i]);
        expect_bits(&log, s32[i], isnan(s) ? ARITHMETIC_NAN_F32 : ref_f32_bits(s), "f32 add", a32[i]);
        expect_bits(&log, p32[i], isnan(p) ? ARITHMETIC_NAN_F32 : ref_f32_bits(p), "f32 mul", a32[i]);
        double sd = ref_f64_from_bits(a64[i]) + ref_f64_from_bits(b64[i]),
               pd = ref_f64_from_bits(a64[i]) * ref_f64_from_bits(b64[i]);
        uint64_t add_order[2] = {a64[i], b64[i]}, mul_order[2] = {b64[i], a64[i]};
        expect_bits(&log, s64[i], isnan(sd) ? doc_f64_arithmetic_nan(add_order, 2) : ref_f64_bits(sd),
                    "f64 add", a64[i]);
        expect_bits(&log, p64[i], isnan(pd) ? doc_f64_arithmetic_nan(mul_order, 2) : ref_f64_bits(pd),
                    "f64 mul", a64[i]);
    }
    finish(&log);
}

/* §4: integer scale_add wraps (every i8/u8 pair for several alphas; random wider values), and bool
 * is b OR (alpha AND a) for every byte pair. */
static void test_scale_add_integers_and_bool(void **state)
{
    (void)state;
    mismatch_log log = {"scale_add_integers_and_bool", 0};
    enum { N = 256 * 256 };
    static uint8_t a[N], b[N], out[N];
    for (size_t i = 0; i < N; i++) {
        a[i] = (uint8_t)(i >> 8);
        b[i] = (uint8_t)i;
    }
    const double alphas_i8[] = {-128, -1, 0, 1, 2, 127}, alphas_u8[] = {-255, -2, -1, 0, 1, 2, 255};
    for (int k = 0; k < 6; k++) {
        ref_scale_add(EW_I8, alphas_i8[k], N, out, a, b);
        for (size_t i = 0; i < N; i++) {
            int64_t x = source_of(EW_I8, a[i]).integer, y = source_of(EW_I8, b[i]).integer;
            expect_bits(&log, out[i], low_bits((int64_t)alphas_i8[k] * x + y, 8), "i8 scale_add", i);
        }
    }
    for (int k = 0; k < 7; k++) {
        ref_scale_add(EW_U8, alphas_u8[k], N, out, a, b);
        for (size_t i = 0; i < N; i++)
            expect_bits(&log, out[i], low_bits((int64_t)alphas_u8[k] * a[i] + b[i], 8), "u8 scale_add", i);
    }
    for (int alpha = 0; alpha <= 1; alpha++) {
        ref_scale_add(EW_BOOL, alpha, N, out, a, b);
        for (size_t i = 0; i < N; i++)
            expect_bits(&log, out[i], (b[i] != 0) || (alpha && a[i] != 0), "bool scale_add", i);
    }

    enum { M = 20000 };
    static int64_t wa[M], wb[M], wout[M];
    const ew_dtype_t dtypes[] = {EW_I16, EW_I32, EW_I64};
    const int bits[] = {16, 32, 64};
    for (int k = 0; k < 3; k++) {
        ew_dtype_t t = dtypes[k];
        for (int rep = 0; rep < 8; rep++) {
            /* the most negative alpha first; then random ones (exact in double for i64) */
            int64_t alpha = random_integer(bits[k] < 64 ? bits[k] : 53);
            if (rep == 0)
                alpha = bits[k] == 64 ? INT64_MIN : -((int64_t)1 << (bits[k] - 1));
            for (size_t i = 0; i < M; i++) {
                set_element_bits(t, wa, i, (uint64_t)random_integer(bits[k]));
                set_element_bits(t, wb, i, (uint64_t)random_integer(bits[k]));
            }
            ref_scale_add(t, (double)alpha, M, wout, wa, wb);
            for (size_t i = 0; i < M; i++) {
                int64_t x = source_of(t, element_bits(t, wa, i)).integer;
                int64_t y = source_of(t, element_bits(t, wb, i)).integer;
                uint64_t expected = t == EW_I64
                                        ? product_mod_2_64((uint64_t)alpha, (uint64_t)x) + (uint64_t)y
                                        : low_bits((int64_t)low_bits(alpha * x, bits[k]) + y, bits[k]);
                expect_bits(&log, element_bits(t, wout, i), expected, dtype_name(t), element_bits(t, wa, i));
            }
        }
    }
    finish(&log);
}

/* §4, §6: float scale_add is one fma in f32 (f64 for f64), then one rounding to f16/bf16. For f64 the
 * first inputs are every pair of edge values, and a NaN result follows the order a, b, alpha. */
static void test_scale_add_floats(void **state)
{
    (void)state;
    mismatch_log log = {"scale_add_floats", 0};
    enum { N = 40000 };
    static uint16_t a16[N], b16[N], out16[N];
    static uint32_t a32[N], b32[N], out32[N];
    static uint64_t a64[N], b64[N], out64[N];
    double alphas[] = {1.0, -1.0, 0.0, 0.1, 1.0 / 3.0, -2.5, 1e30, 1e-40, 0x1.001p+0, NAN, INFINITY,
                       -INFINITY, 0.0 /* below */};
    /* a negative signalling NaN with a payload: its quieted bits differ from every other NaN's */
    alphas[sizeof alphas / sizeof alphas[0] - 1] = ref_f64_from_bits(UINT64_C(0xFFF0000000000123));
    size_t edges64 = sizeof EDGE_F64 / sizeof EDGE_F64[0];
    for (size_t k = 0; k < sizeof alphas / sizeof alphas[0]; k++) {
        double alpha = alphas[k];
        float alpha32 = (float)alpha;
        for (size_t i = 0; i < N; i++) {
            uint64_t r = next_random();
            a16[i] = (uint16_t)r;
            b16[i] = (uint16_t)(r >> 16);
            a32[i] = random_f32_bits();
            b32[i] = random_f32_bits();
            a64[i] = random_f64_bits();
            b64[i] = random_f64_bits();
            if (i < edges64 * edges64) {
                a64[i] = EDGE_F64[i / edges64];
                b64[i] = EDGE_F64[i % edges64];
            }
        }
        const ew_dtype_t sixteen[] = {EW_F16, EW_BF16};
        for (int s = 0; s < 2; s++) {
            ew_dtype_t t = sixteen[s];
            ref_scale_add(t, alpha, N, out16, a16, b16);
            for (size_t i = 0; i < N; i++) {
                bool nan_a, nan_b;
                double x = formula_value(table_for(t)->spec, a16[i], &nan_a);
                double y = formula_value(table_for(t)->spec, b16[i], &nan_b);
                float r = fmaf(alpha32, (float)x, (float)y);
                uint64_t expected =
                    nan_a || nan_b || isnan(r) ? ROUNDED_NAN_16 : nearest_code(table_for(t), r);
                expect_bits(&log, out16[i], expected, dtype_name(t), (uint64_t)a16[i] << 16 | b16[i]);
            }
        }
        ref_scale_add(EW_F32, alpha, N, out32, a32, b32);
        ref_scale_add(EW_F64, alpha, N, out64, a64, b64);
        for (size_t i = 0; i < N; i++) {
            float r = fmaf(alpha32, ref_f32_from_bits(a32[i]), ref_f32_from_bits(b32[i]));
            expect_bits(&log, out32[i], isnan(r) ? ARITHMETIC_NAN_F32 : ref_f32_bits(r), "f32", a32[i]);
            double d = fma(alpha, ref_f64_from_bits(a64[i]), ref_f64_from_bits(b64[i]));
            uint64_t operands[3] = {b64[i], a64[i], ref_f64_bits(alpha)};
            expect_bits(&log, out64[i], isnan(d) ? doc_f64_arithmetic_nan(operands, 3) : ref_f64_bits(d),
                        "f64", a64[i]);
        }
    }
    finish(&log);
}

/* §6: the f64 NaN rule case by case: add a then b, mul b then a, scale_add b, a, then alpha,
 * each with its quiet bit set and its sign and payload kept; with no NaN operand an invalid operation
 * gives the negative default NaN. Each expectation is written from the case, not from a helper. */
static void test_f64_nan_operand_order(void **state)
{
    (void)state;
    mismatch_log log = {"f64_nan_operand_order", 0};
    /* quiet and signalling, both signs, with and without payload */
    static const uint64_t nans[] = {0x7FF0000000000001, 0xFFF0000000000001, 0x7FF8000000000000,
                                    0xFFF8000000000000, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF,
                                    0x7FF4000000000123, 0xFFF0000020000000, 0x7FF8000000000002};
    static const uint64_t numbers[] = {0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000,
                                       0xC004000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
                                       0x7FEFFFFFFFFFFFFF, 0x0000000000000001};
    enum { NAN_COUNT = sizeof nans / sizeof nans[0], NUMBER_COUNT = sizeof numbers / sizeof numbers[0] };
    const ew_op_t binary_ops[] = {EW_OP_ADD, EW_OP_MUL};
    for (int k = 0; k < 2; k++) {
        const char *name = binary_ops[k] == EW_OP_ADD ? "add" : "mul";
        for (size_t i = 0; i < NAN_COUNT; i++) {
            for (size_t j = 0; j < NUMBER_COUNT; j++) {
                uint64_t x = nans[i], y = numbers[j], out = 0;
                ref_binary(binary_ops[k], EW_F64, 1, &out, &x, &y);
                expect_bits(&log, out, nans[i] | F64_QUIET_BIT, name, x); /* NaN a, number b */
                ref_binary(binary_ops[k], EW_F64, 1, &out, &y, &x);
                expect_bits(&log, out, nans[i] | F64_QUIET_BIT, name, x); /* number a, NaN b */
            }
            for (size_t j = 0; j < NAN_COUNT; j++) {
                uint64_t x = nans[i], y = nans[j], out = 0;
                ref_binary(binary_ops[k], EW_F64, 1, &out, &x, &y);
                uint64_t winner = binary_ops[k] == EW_OP_ADD ? x : y; /* both NaN: add a, mul b (torch's order) */
                expect_bits(&log, out, winner | F64_QUIET_BIT, name, x);
            }
        }
    }
    for (size_t i = 0; i < NAN_COUNT; i++) {
        uint64_t quiet = nans[i] | F64_QUIET_BIT, one = 0x3FF0000000000000, out = 0;
        ref_scale_add(EW_F64, 1.0, 1, &out, &nans[i], &one);
        expect_bits(&log, out, quiet, "scale_add NaN a", nans[i]);
        ref_scale_add(EW_F64, 1.0, 1, &out, &one, &nans[i]);
        expect_bits(&log, out, quiet, "scale_add NaN b", nans[i]);
        ref_scale_add(EW_F64, ref_f64_from_bits(nans[i]), 1, &out, &one, &one);
        expect_bits(&log, out, quiet, "scale_add NaN alpha", nans[i]);
        for (size_t j = 0; j < NAN_COUNT; j++) {
            uint64_t other = nans[j];
            ref_scale_add(EW_F64, ref_f64_from_bits(other), 1, &out, &nans[i], &other);
            expect_bits(&log, out, other | F64_QUIET_BIT, "scale_add NaN a, b, alpha: b wins", nans[i]);
            ref_scale_add(EW_F64, ref_f64_from_bits(other), 1, &out, &nans[i], &one);
            expect_bits(&log, out, quiet, "scale_add NaN a and alpha: a wins", nans[i]);
            ref_scale_add(EW_F64, ref_f64_from_bits(other), 1, &out, &one, &nans[i]);
            expect_bits(&log, out, quiet, "scale_add NaN b and alpha: b wins", nans[i]);
        }
    }
    /* invalid operations on numbers only: the default NaN, negative whatever the operands' signs */
    const uint64_t inf = 0x7FF0000000000000, minus_inf = 0xFFF0000000000000, one = 0x3FF0000000000000;
    const uint64_t zero = 0, minus_zero = 0x8000000000000000;
    const uint64_t invalid_pairs[][2] = {{inf, minus_inf}, {minus_inf, inf}, {inf, zero}, {zero, minus_inf},
                                         {minus_zero, inf}};
    for (size_t i = 0; i < sizeof invalid_pairs / sizeof invalid_pairs[0]; i++) {
        uint64_t out = 0;
        ew_op_t op = i < 2 ? EW_OP_ADD : EW_OP_MUL;
        ref_binary(op, EW_F64, 1, &out, &invalid_pairs[i][0], &invalid_pairs[i][1]);
        expect_bits(&log, out, F64_DEFAULT_NAN, i < 2 ? "inf + -inf" : "inf * 0", i);
    }
    struct {
        double alpha;
        uint64_t a, b;
    } invalid_fma[] = {{INFINITY, zero, one}, {0.0, inf, one}, {1.0, inf, minus_inf}, {-1.0, inf, inf},
                       {-INFINITY, minus_zero, zero}};
    for (size_t i = 0; i < sizeof invalid_fma / sizeof invalid_fma[0]; i++) {
        uint64_t out = 0;
        ref_scale_add(EW_F64, invalid_fma[i].alpha, 1, &out, &invalid_fma[i].a, &invalid_fma[i].b);
        expect_bits(&log, out, F64_DEFAULT_NAN, "scale_add invalid", i);
    }
    /* f32 keeps the canonical NaN for the same kinds of input (§6), and so f16/bf16 keep 0x7FFF */
    uint32_t nan32 = 0xFFC00123, one32 = 0x3F800000, out32 = 0;
    ref_binary(EW_OP_ADD, EW_F32, 1, &out32, &nan32, &one32);
    expect_bits(&log, out32, ARITHMETIC_NAN_F32, "f32 add NaN a", nan32);
    ref_scale_add(EW_F32, ref_f64_from_bits(0xFFF0000000000123), 1, &out32, &one32, &one32);
    expect_bits(&log, out32, ARITHMETIC_NAN_F32, "f32 scale_add NaN alpha", nan32);
    finish(&log);
}

/* §7: n == 0 (and n < 0) touches nothing, so NULL pointers are fine; n > 0 writes exactly n elements. */
static void test_n_zero_and_exact_extent(void **state)
{
    (void)state;
    ref_unary(EW_OP_RELU, EW_F32, 0, NULL, NULL);
    ref_binary(EW_OP_ADD, EW_I64, 0, NULL, NULL, NULL);
    ref_cast(EW_F16, EW_F64, 0, NULL, NULL);
    ref_scale_add(EW_BF16, 2.0, 0, NULL, NULL, NULL);
    ref_cast(EW_F16, EW_F64, -1, NULL, NULL);

    for (int k = 0; k < DTYPE_COUNT; k++) {
        ew_dtype_t out = ALL_DTYPES[k];
        unsigned char dst[5 * 8], src[3 * 8] = {0};
        memset(dst, 0xA5, sizeof dst);
        ref_cast(out, EW_I8, 3, dst, src);
        for (size_t i = 3 * dtype_size(out); i < sizeof dst; i++)
            assert_int_equal(dst[i], 0xA5); /* nothing past element n-1 */
        for (size_t i = 0; i < 3 * dtype_size(out); i++)
            assert_int_equal(dst[i], 0x00); /* 0 is all-zero bits in every dtype (e8m0: 2^-127 from 0) */
    }
}

/* §8: out may be the very input buffer when element sizes are equal. */
static void test_in_place(void **state)
{
    (void)state;
    float x[4] = {1.5f, -2.0f, -0.0f, 3.0f}, y[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    ref_binary(EW_OP_ADD, EW_F32, 4, x, x, y);
    assert_true(x[0] == 1.75f && x[1] == -1.75f && x[2] == 0.25f && x[3] == 3.25f);
    ref_unary(EW_OP_RELU, EW_F32, 4, x, x);
    assert_true(x[0] == 1.75f && x[1] == 0.0f && !signbit(x[1]) && x[3] == 3.25f);
    ref_scale_add(EW_F32, 2.0, 4, y, x, y); /* out = b */
    assert_true(y[0] == 3.75f && y[1] == 0.25f);
    ref_binary(EW_OP_MUL, EW_F32, 4, x, x, x); /* a and b the same buffer too */
    assert_true(x[0] == 1.75f * 1.75f);

    int32_t ints[3] = {16777217, -3, 7}; /* i32 -> f32 in place */
    ref_cast(EW_F32, EW_I32, 3, ints, ints);
    assert_int_equal((uint32_t)ints[0], 0x4B800000);
    assert_int_equal((uint32_t)ints[1], 0xC0400000);
    uint16_t halves[2] = {0x3C01, 0xFC00}; /* f16 -> bf16 in place */
    ref_cast(EW_BF16, EW_F16, 2, halves, halves);
    assert_int_equal(halves[0], 0x3F80); /* 1 + 2^-10 rounds to 1 in bf16 */
    assert_int_equal(halves[1], 0xFF80);
}

/* ======================================================================================== */
/* §9: the hand-checked edge values. These rows are the same, in the same order, as the table */
/* between the edge-table markers of docs/semantics.md; edge_table_matches_doc enforces it.    */
/* ======================================================================================== */

typedef struct {
    ew_op_t op;
    ew_dtype_t out, in;
    uint64_t a, b;
    double alpha;
    uint64_t expected;
    const char *why;
} edge_row;

#define CAST(out, in, a, expected, why) \
    {EW_OP_CAST, EW_##out, EW_##in, UINT64_C(a), 0, 0, UINT64_C(expected), why}
#define ADD(t, a, b, expected, why) \
    {EW_OP_ADD, EW_##t, EW_##t, UINT64_C(a), UINT64_C(b), 0, UINT64_C(expected), why}
#define MUL(t, a, b, expected, why) \
    {EW_OP_MUL, EW_##t, EW_##t, UINT64_C(a), UINT64_C(b), 0, UINT64_C(expected), why}
#define RELU(t, a, expected, why) {EW_OP_RELU, EW_##t, EW_##t, UINT64_C(a), 0, 0, UINT64_C(expected), why}
#define SCALE_ADD(t, alpha, a, b, expected, why) \
    {EW_OP_SCALE_ADD, EW_##t, EW_##t, UINT64_C(a), UINT64_C(b), alpha, UINT64_C(expected), why}

static const edge_row EDGE_TABLE[] = {
    CAST(I8, F32, 0x4396599A, 0x2C, "300.7 -> i32 300 -> low 8 bits 44"),
    CAST(I8, F32, 0x7F800000, 0xFF, "+inf -> INT32_MAX -> low 8 bits -1"),
    CAST(I8, F32, 0x43000000, 0x80, "128 -> -128"),
    CAST(I8, F64, 0x7FF8000000000000, 0x00, "f64 NaN -> INT32_MIN -> low bits 0"),
    CAST(I16, F32, 0x4788B840, 0x1170, "70000.5 -> 70000 -> 4464"),
    CAST(I16, F32, 0xFF800000, 0x0000, "-inf -> INT32_MIN -> low bits 0"),
    CAST(U8, F32, 0xBFC00000, 0xFF, "-1.5 -> i64 -1 -> 255"),
    CAST(U8, F32, 0x7FC00000, 0x00, "NaN -> INT64_MIN -> 0"),
    CAST(U8, F32, 0x7F800000, 0xFF, "+inf -> INT64_MAX -> 255"),
    CAST(U8, F32, 0x43800000, 0x00, "256 -> 0"),
    CAST(I32, F32, 0xC039999A, 0xFFFFFFFE, "-2.9 -> -2 (toward zero)"),
    CAST(I32, F32, 0x4F32D05E, 0x7FFFFFFF, "3e9 saturates"),
    CAST(I32, F32, 0xCF32D05E, 0x80000000, "-3e9 saturates"),
    CAST(I32, F32, 0x7FC00000, 0x00000000, "f32 NaN -> 0"),
    CAST(I32, F16, 0xFE00, 0x00000000, "f16 NaN -> 0"),
    CAST(I32, F64, 0x7FF8000000000000, 0x80000000, "f64 NaN -> INT32_MIN"),
    CAST(I32, F64, 0x41F0000000000000, 0x7FFFFFFF, "2^32 saturates"),
    CAST(I64, F32, 0x7FC00000, 0x8000000000000000, "NaN -> INT64_MIN"),
    CAST(I64, F32, 0x7F800000, 0x7FFFFFFFFFFFFFFF, "+inf saturates"),
    CAST(I64, F64, 0xC3E158E460913D00, 0x8000000000000000, "-1e19 saturates"),
    CAST(I64, F16, 0xFC00, 0x8000000000000000, "-inf saturates"),
    CAST(BOOL, F32, 0x7FC00000, 0x01, "NaN is true"),
    CAST(BOOL, F32, 0x80000000, 0x00, "-0.0 is false"),
    CAST(BOOL, F32, 0x00000001, 0x01, "smallest subnormal is true"),
    CAST(BOOL, F16, 0x8000, 0x00, "f16 -0.0 is false"),
    CAST(BOOL, BOOL, 0x02, 0x01, "bool -> bool normalises"),
    CAST(I32, BOOL, 0xFF, 0x00000001, "nonzero byte is 1"),
    CAST(F16, BOOL, 0x07, 0x3C00, "true -> 1.0"),
    CAST(I8, I32, 0x000000C8, 0xC8, "200 -> -56"),
    CAST(U8, I8, 0xFF, 0xFF, "-1 -> 255"),
    CAST(I64, U8, 0xFF, 0x00000000000000FF, "u8 zero-extends"),
    CAST(I64, I8, 0x80, 0xFFFFFFFFFFFFFF80, "i8 sign-extends"),
    CAST(F32, I32, 0x01000001, 0x4B800000, "2^24+1 tie -> 2^24"),
    CAST(F32, I32, 0x01000003, 0x4B800002, "2^24+3 tie -> 2^24+4"),
    CAST(F32, I64, 0x7FFFFFFFFFFFFFFF, 0x5F000000, "INT64_MAX -> 2^63"),
    CAST(F64, I64, 0x0020000000000001, 0x4340000000000000, "2^53+1 tie -> 2^53"),
    CAST(BF16, I32, 0x02020001, 0x4C00,
              "2^25+2^17+1 -> f32 2^25+2^17 -> tie -> 2^25 (direct RNE would give 0x4C01)"),
    CAST(F16, I32, 0x0000FFF0, 0x7C00, "65520 -> +inf"),
    CAST(F8E4M3, I32, 0x000003E8, 0x7F, "1000 -> NaN"),
    CAST(F16, F32, 0x477FE000, 0x7BFF, "65504, the largest f16"),
    CAST(F16, F32, 0x477FEFFF, 0x7BFF, "65519.996, below the midpoint"),
    CAST(F16, F32, 0x477FF000, 0x7C00, "65520 midpoint -> even -> +inf"),
    CAST(F16, F32, 0xC77FF000, 0xFC00, "-65520 -> -inf"),
    CAST(F16, F32, 0x33000000, 0x0000, "2^-25, half the smallest subnormal -> 0"),
    CAST(F16, F32, 0x33000001, 0x0001, "just above -> smallest subnormal"),
    CAST(F16, F32, 0xB3C00000, 0x8002, "-1.5*2^-24 tie -> even -2*2^-24"),
    CAST(F16, F32, 0x387FE000, 0x0400, "1023.5*2^-24 tie -> smallest normal"),
    CAST(F16, F32, 0xFFC00001, 0x7FFF, "any NaN -> 0x7FFF"),
    CAST(BF16, F32, 0x3F808000, 0x3F80, "1+2^-8 tie -> 1"),
    CAST(BF16, F32, 0x3F818000, 0x3F82, "1+3*2^-8 tie -> even 1+2^-6"),
    CAST(BF16, F32, 0x7F7FFFFF, 0x7F80, "FLT_MAX rounds to +inf"),
    CAST(BF16, F32, 0x7F800001, 0x7FFF, "signalling NaN -> 0x7FFF"),
    CAST(BF16, F32, 0x00010000, 0x0001, "2^-133, the smallest bf16 subnormal, kept"),
    CAST(F8E4M3, F32, 0x43E00000, 0x7E, "448, the largest e4m3"),
    CAST(F8E4M3, F32, 0x43E80000, 0x7E, "464 tie -> even 448"),
    CAST(F8E4M3, F32, 0x43E88000, 0x7F, "465 -> NaN"),
    CAST(F8E4M3, F32, 0xC3E88000, 0xFF, "-465 -> NaN with sign"),
    CAST(F8E4M3, F32, 0x7F800000, 0x7F, "+inf -> NaN"),
    CAST(F8E4M3, F32, 0xFF800000, 0xFF, "-inf -> NaN with sign"),
    CAST(F8E4M3, F32, 0xFFC00000, 0xFF, "-NaN -> 0xFF"),
    CAST(F8E4M3, F32, 0x3A800000, 0x00, "2^-10, half the smallest subnormal -> 0"),
    CAST(F8E4M3, F32, 0x3AC00000, 0x01, "0.75*2^-9 -> 2^-9"),
    CAST(F8E4M3, F32, 0xBA800000, 0x80, "-2^-10 -> -0"),
    CAST(F8E5M2, F32, 0x47600000, 0x7B, "57344, the largest e5m2"),
    CAST(F8E5M2, F32, 0x476FFFFF, 0x7B, "61439.996, below the midpoint"),
    CAST(F8E5M2, F32, 0x47700000, 0x7C, "61440 midpoint -> even -> +inf"),
    CAST(F8E5M2, F32, 0x7F800000, 0x7C, "+inf"),
    CAST(F8E5M2, F32, 0x7FC00000, 0x7F, "NaN -> 0x7F"),
    CAST(F8E5M2, F32, 0xFFC00000, 0xFF, "-NaN -> 0xFF"),
    CAST(F8E5M2, F8E4M3, 0x7E, 0x5F, "448 exact"),
    CAST(F8E4M3, F8E5M2, 0x7C, 0x7F, "+inf -> NaN"),
    CAST(F8E4M3, F8E5M2, 0x7B, 0x7F, "57344 -> NaN"),
    CAST(F8E4M3, F8E5M2, 0xFD, 0xFF, "-NaN -> 0xFF"),
    CAST(F16, BF16, 0x3F81, 0x3C08, "1+2^-7 exact"),
    CAST(F16, F8E5M2, 0xFE, 0x7FFF, "NaN -> 0x7FFF"),
    CAST(F16, F64, 0x3FF0020000001000, 0x3C00,
              "1+2^-11+2^-40 -> f32 1+2^-11 -> tie -> 1 (direct RNE would give 0x3C01)"),
    CAST(F32, F16, 0xFE00, 0x7FFFFFFF, "f16 NaN -> canonical"),
    CAST(F32, F16, 0x0001, 0x33800000, "2^-24 exact"),
    CAST(F32, BF16, 0xFF81, 0xFF810000, "bf16 NaN bits kept"),
    CAST(F32, F8E4M3, 0xFF, 0xFFF00000, "e4m3 -NaN widened"),
    CAST(F32, F8E4M3, 0x01, 0x3B000000, "2^-9 exact"),
    CAST(F32, F8E5M2, 0x7D, 0x7FFFFFFF, "e5m2 NaN -> canonical f32 NaN (widened through an f32 multiply)"),
    CAST(F32, F8E5M2, 0xFE, 0xFFFFFFFF, "e5m2 -NaN -> canonical NaN, sign OR-ed back"),
    CAST(F32, F64, 0xFFF0000000000001, 0xFFC00000, "signalling -NaN -> quiet, sign kept"),
    CAST(F32, F64, 0x7FF0000020000000, 0x7FC00001, "top mantissa bits kept"),
    CAST(F32, F64, 0x36A0000000000000, 0x00000001, "2^-149 exact"),
    CAST(F32, F64, 0x3690000000000000, 0x00000000, "2^-150 tie -> 0"),
    CAST(F32, F64, 0x47EFFFFFF0000000, 0x7F800000, "midpoint above FLT_MAX -> +inf"),
    CAST(F64, F32, 0x7F800001, 0x7FF8000020000000, "signalling NaN -> quiet, mantissa moved up"),
    CAST(F64, F16, 0x7C01, 0x7FFFFFFFE0000000, "through f32 0x7FFFFFFF"),
    CAST(F64, F8E4M3, 0xFF, 0xFFFE000000000000, "through f32 0xFFF00000"),
    CAST(F64, F8E5M2, 0xFD, 0xFFFFFFFFE0000000, "through f32 0xFFFFFFFF"),
    CAST(F32, F8E8M0, 0x00, 0x00400000, "2^-127, an f32 subnormal"),
    CAST(F32, F8E8M0, 0x7F, 0x3F800000, "1"),
    CAST(F32, F8E8M0, 0xFE, 0x7F000000, "2^127, the largest"),
    CAST(F32, F8E8M0, 0xFF, 0x7F800001, "NaN -> c10's 0x7F800001"),
    CAST(F64, F8E8M0, 0xFF, 0x7FF8000020000000, "through f32 0x7F800001, quieted"),
    CAST(F64, F8E8M0, 0x00, 0x3800000000000000, "2^-127 exact"),
    CAST(F16, F8E8M0, 0x00, 0x0000, "2^-127 -> 0"),
    CAST(F16, F8E8M0, 0x8F, 0x7C00, "65536 -> +inf"),
    CAST(F16, F8E8M0, 0xFF, 0x7FFF, "NaN -> 0x7FFF"),
    CAST(BOOL, F8E8M0, 0x00, 0x01, "2^-127 is true: e8m0 has no zero"),
    CAST(BOOL, F8E8M0, 0xFF, 0x01, "NaN is true"),
    CAST(I32, F8E8M0, 0xFF, 0x00000000, "NaN -> 0"),
    CAST(I32, F8E8M0, 0xFE, 0x7FFFFFFF, "2^127 saturates"),
    CAST(I64, F8E8M0, 0xFF, 0x8000000000000000, "NaN -> INT64_MIN"),
    CAST(U8, F8E8M0, 0x86, 0x80, "128"),
    CAST(F8E4M3, F8E8M0, 0x7F, 0x38, "1 exact"),
    CAST(F8E4M3, F8E8M0, 0xFF, 0x7F, "NaN -> NaN"),
    CAST(F8E8M0, F32, 0x00000000, 0x00, "0 -> 2^-127"),
    CAST(F8E8M0, F32, 0x80000000, 0x00, "-0 -> 2^-127"),
    CAST(F8E8M0, F32, 0x00000001, 0x00, "2^-149 -> 2^-127"),
    CAST(F8E8M0, F32, 0x00400000, 0x00, "2^-127 exact: a subnormal's tie stays"),
    CAST(F8E8M0, F32, 0x00400001, 0x01, "just above 2^-127 -> 2^-126"),
    CAST(F8E8M0, F32, 0x00600000, 0x01, "1.5*2^-127 -> 2^-126"),
    CAST(F8E8M0, F32, 0x00800000, 0x01, "2^-126 exact"),
    CAST(F8E8M0, F32, 0x3F800000, 0x7F, "1 exact"),
    CAST(F8E8M0, F32, 0x3FBFFFFF, 0x7F, "just below 1.5 -> 1"),
    CAST(F8E8M0, F32, 0x3FC00000, 0x80, "1.5 tie -> 2 (up, not to even)"),
    CAST(F8E8M0, F32, 0x3FC00001, 0x80, "just above 1.5 -> 2"),
    CAST(F8E8M0, F32, 0x3F400000, 0x7F, "0.75 tie -> 1"),
    CAST(F8E8M0, F32, 0x40400000, 0x81, "3 tie -> 4"),
    CAST(F8E8M0, F32, 0xC0400000, 0x81, "-3 -> 4: the sign is dropped"),
    CAST(F8E8M0, F32, 0xBF800000, 0x7F, "-1 -> 1"),
    CAST(F8E8M0, F32, 0x7F000000, 0xFE, "2^127 exact"),
    CAST(F8E8M0, F32, 0x7F3FFFFF, 0xFE, "just below 1.5*2^127 -> 2^127"),
    CAST(F8E8M0, F32, 0x7F400000, 0xFF, "1.5*2^127 -> NaN"),
    CAST(F8E8M0, F32, 0x7F7FFFFF, 0xFF, "FLT_MAX -> NaN"),
    CAST(F8E8M0, F32, 0x7F800000, 0xFF, "+inf -> NaN"),
    CAST(F8E8M0, F32, 0xFF800000, 0xFF, "-inf -> NaN"),
    CAST(F8E8M0, F32, 0xFFC00000, 0xFF, "-NaN -> 0xFF"),
    CAST(F8E8M0, F64, 0x3FF7FFFFFFFFFFFF, 0x80, "1.5-2^-52 -> f32 1.5 -> 2: rounds twice"),
    CAST(F8E8M0, I32, 0x00000003, 0x81, "3 -> 4"),
    CAST(F8E8M0, I64, 0xFFFFFFFFFFFFFFFF, 0x7F, "-1 -> 1"),
    CAST(F8E8M0, BOOL, 0x00, 0x00, "false -> 0 -> 2^-127"),
    CAST(F8E8M0, BOOL, 0x05, 0x7F, "true -> 1"),
    CAST(F8E8M0, F8E4M3, 0x7F, 0xFF, "e4m3 NaN -> NaN"),
    CAST(F8E8M0, F8E5M2, 0x01, 0x6F, "2^-16 exact"),
    CAST(F16, F16, 0x7C01, 0x7C01, "identity keeps a signalling NaN"),
    CAST(F32, F32, 0xFF800001, 0xFF800001, "identity keeps a signalling NaN"),
    CAST(F64, F64, 0x7FF0000000000001, 0x7FF0000000000001, "identity keeps a signalling NaN"),
    CAST(F8E8M0, F8E8M0, 0xFF, 0xFF, "identity"),
    ADD(I8, 0x7F, 0x01, 0x80, "127 + 1 wraps"),
    MUL(I8, 0x10, 0x10, 0x00, "256 wraps to 0"),
    MUL(U8, 0xFF, 0xFF, 0x01, "65025 mod 256"),
    ADD(U8, 0xFF, 0x01, 0x00, "256 wraps to 0"),
    ADD(I16, 0x7FFF, 0x0001, 0x8000, "wraps"),
    ADD(I32, 0x7FFFFFFF, 0x00000001, 0x80000000, "wraps"),
    MUL(I64, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0x8000000000000000, "INT64_MIN * -1 wraps"),
    ADD(BOOL, 0x01, 0x01, 0x01, "OR, not 2"),
    ADD(BOOL, 0x00, 0x02, 0x01, "nonzero byte is true"),
    MUL(BOOL, 0x02, 0x04, 0x01, "AND of two trues"),
    MUL(BOOL, 0x01, 0x00, 0x00, "AND"),
    ADD(F16, 0x7BFF, 0x7BFF, 0x7C00, "65504 + 65504 -> +inf"),
    ADD(F16, 0x7C00, 0xFC00, 0x7FFF, "inf - inf -> NaN 0x7FFF"),
    ADD(F16, 0x3C00, 0x1000, 0x3C00, "1 + 2^-11 tie -> 1"),
    ADD(F16, 0x3C01, 0x1000, 0x3C02, "1+2^-10 + 2^-11 tie -> even, up"),
    MUL(F16, 0x0001, 0x3800, 0x0000, "2^-24 * 0.5 tie -> 0"),
    MUL(BF16, 0x7F80, 0x0000, 0x7FFF, "inf * 0 -> NaN 0x7FFF"),
    ADD(BF16, 0x3F80, 0x3B80, 0x3F80, "1 + 2^-8 tie -> 1"),
    ADD(F32, 0x7F800000, 0xFF800000, 0x7FFFFFFF, "inf - inf -> canonical NaN"),
    ADD(F32, 0xFFC00123, 0x3F800000, 0x7FFFFFFF, "NaN payload not propagated"),
    ADD(F32, 0x80000000, 0x80000000, 0x80000000, "-0 + -0 = -0"),
    ADD(F32, 0x80000000, 0x00000000, 0x00000000, "-0 + +0 = +0"),
    ADD(F64, 0x7FF0000000000001, 0x3FF0000000000000, 0x7FF8000000000001,
        "signalling NaN a: quiet bit set, payload kept"),
    ADD(F64, 0xFFFFFFFFFFFFFFFF, 0x3FF0000000000000, 0xFFFFFFFFFFFFFFFF, "NaN a kept, sign included"),
    ADD(F64, 0xFFFFFFFFFFFFFFFF, 0xFFF8000000000000, 0xFFFFFFFFFFFFFFFF, "NaN a wins over NaN b"),
    ADD(F64, 0x3FF0000000000000, 0x7FF0000000000002, 0x7FF8000000000002, "NaN b when a is a number, quieted"),
    MUL(F64, 0xFFF8000000000001, 0x4000000000000000, 0xFFF8000000000001, "sign and payload kept"),
    MUL(F64, 0x7FF0000000000003, 0xFFF4000000000000, 0xFFFC000000000000, "NaN b wins over NaN a"),
    ADD(F64, 0x7FF0000000000000, 0xFFF0000000000000, 0xFFF8000000000000, "inf + -inf -> default NaN"),
    MUL(F64, 0x7FF0000000000000, 0x0000000000000000, 0xFFF8000000000000, "inf * 0 -> default NaN"),
    RELU(F32, 0x80000000, 0x00000000, "relu(-0.0) = +0.0"),
    RELU(F16, 0x8000, 0x0000, "relu(-0.0) = +0.0"),
    RELU(F32, 0xFFC00123, 0xFFC00123, "NaN bits unchanged"),
    RELU(F16, 0xFE01, 0xFE01, "NaN bits unchanged"),
    RELU(BF16, 0xFF81, 0xFF81, "NaN bits unchanged"),
    RELU(F64, 0xFFF0000000000001, 0xFFF0000000000001, "NaN bits unchanged"),
    RELU(F32, 0xFF800000, 0x00000000, "-inf -> +0"),
    RELU(F32, 0x7F800000, 0x7F800000, "+inf kept"),
    RELU(F32, 0x00000001, 0x00000001, "subnormal kept"),
    RELU(BF16, 0x8001, 0x0000, "negative subnormal -> +0"),
    RELU(I8, 0x80, 0x00, "-128 -> 0"),
    RELU(U8, 0xFF, 0xFF, "u8 identity"),
    RELU(I64, 0xFFFFFFFFFFFFFFFF, 0x0000000000000000, "-1 -> 0"),
    SCALE_ADD(F32, 0x1.001p+0, 0x3F800800, 0xBF800000, 0x3A000400,
              "(1+2^-12)^2 - 1 fused = 2^-11+2^-24; unfused would give 0x3A000000"),
    SCALE_ADD(F64, 0x1.0000002p+0, 0x3FF0000002000000, 0xBFF0000000000000, 0x3E50000001000000,
              "(1+2^-27)^2 - 1 fused = 2^-26+2^-54"),
    SCALE_ADD(F16, 0.1, 0x3C00, 0x0000, 0x2E66, "(float)0.1 * 1 + 0 -> f16"),
    SCALE_ADD(F32, 0, 0x7F800000, 0x3F800000, 0x7FFFFFFF, "0 * inf -> canonical NaN"),
    SCALE_ADD(F64, 0, 0x7FF0000000000000, 0x3FF0000000000000, 0xFFF8000000000000,
              "0 * inf + 1 -> default NaN"),
    SCALE_ADD(F64, NAN, 0x3FF0000000000000, 0x3FF0000000000000, 0x7FF8000000000000,
              "NaN alpha when a and b are numbers"),
    SCALE_ADD(F64, NAN, 0x3FF0000000000000, 0xFFF0000000000002, 0xFFF8000000000002,
              "NaN b wins over NaN alpha"),
    SCALE_ADD(F64, NAN, 0xFFF0000000000001, 0x7FF0000000000002, 0x7FF8000000000002,
              "NaN b wins over NaN a and NaN alpha"),
    SCALE_ADD(I8, -1, 0x80, 0x00, 0x80, "-1 * -128 wraps"),
    SCALE_ADD(I8, 2, 0x64, 0x64, 0x2C, "2*100 + 100 = 300 -> 44"),
    SCALE_ADD(U8, 255, 0x02, 0x03, 0x01, "513 mod 256"),
    SCALE_ADD(U8, -2, 0x03, 0x10, 0x0A, "alpha -2 is 254 modulo 2^8: 762 + 16 mod 256"),
    SCALE_ADD(I32, 2, 0x7FFFFFFF, 0x00000001, 0xFFFFFFFF, "2^32 - 1 wraps to -1"),
    SCALE_ADD(I64, -1, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF,
              "INT64_MIN * -1 - 1 wraps"),
    SCALE_ADD(BOOL, 1, 0x02, 0x00, 0x01, "b OR (alpha AND a)"),
    SCALE_ADD(BOOL, 0, 0x01, 0x00, 0x00, "alpha 0 drops a"),
    SCALE_ADD(BOOL, 0, 0x00, 0x05, 0x01, "b alone"),
};

#undef CAST
#undef ADD
#undef MUL
#undef RELU
#undef SCALE_ADD

#define EDGE_ROW_COUNT (sizeof EDGE_TABLE / sizeof EDGE_TABLE[0])

static uint64_t run_edge_row(const edge_row *row)
{
    uint64_t a = row->a, b = row->b, out = 0;
    switch (row->op) {
    case EW_OP_CAST: ref_cast(row->out, row->in, 1, &out, &a); break;
    case EW_OP_RELU: ref_unary(row->op, row->out, 1, &out, &a); break;
    case EW_OP_ADD: case EW_OP_MUL: ref_binary(row->op, row->out, 1, &out, &a, &b); break;
    case EW_OP_SCALE_ADD: ref_scale_add(row->out, row->alpha, 1, &out, &a, &b); break;
    default: break; /* the scaled casts: tests/device/test_scaled_gpu.c */
    }
    return out; /* little-endian: the element's bits, zero-extended */
}

static void test_edge_table(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < EDGE_ROW_COUNT; i++) {
        const edge_row *row = &EDGE_TABLE[i];
        uint64_t got = run_edge_row(row);
        if (got != row->expected) {
            print_error("docs/semantics.md §9 row %zu: %s %s <- %s a=0x%llx b=0x%llx alpha=%g: got 0x%llx, "
                        "expected 0x%llx (%s)\n",
                        i + 1, ref_op_name(row->op), dtype_name(row->out), dtype_name(row->in),
                        (unsigned long long)row->a, (unsigned long long)row->b, row->alpha,
                        (unsigned long long)got, (unsigned long long)row->expected, row->why);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

/* Splits a markdown table row into at most max_cells trimmed cells (modifies line). */
static int split_cells(char *line, char **cells, int max_cells)
{
    int count = 0;
    char *p = strchr(line, '|');
    while (p && count < max_cells) {
        char *start = p + 1, *end = strchr(start, '|');
        if (!end)
            break;
        *end = '\0';
        while (*start == ' ')
            start++;
        for (char *t = end - 1; t >= start && (*t == ' ' || *t == '\t'); t--)
            *t = '\0';
        cells[count++] = start;
        p = end;
    }
    return count;
}

static bool dtype_from_name(const char *name, ew_dtype_t *t)
{
    for (int k = 0; k < DTYPE_COUNT; k++)
        if (strcmp(name, dtype_name(ALL_DTYPES[k])) == 0) {
            *t = ALL_DTYPES[k];
            return true;
        }
    return false;
}

static uint64_t parse_bits(const char *cell)
{
    return strcmp(cell, "-") == 0 ? 0 : strtoull(cell, NULL, 16);
}

/* Where docs/semantics.md is: EW_SEMANTICS_MD when the build defines it (the CMake fragment does),
 * else found from this file's own path, .../tests/ref/test_reference.c -> .../docs/semantics.md. */
/* docs/semantics.md, as the build names it (tests/gpu.cmake, tests/ref.cmake). */
#ifndef EW_SEMANTICS_MD
#error "EW_SEMANTICS_MD names docs/semantics.md"
#endif
static void semantics_md_path(char *path, size_t size) { snprintf(path, size, "%s", EW_SEMANTICS_MD); }

/* A row of a docs/semantics.md table: its cells, its index among the table's rows, the caller's context. */
typedef void doc_row_fn(char **cells, size_t index, void *context);

/* Hands each row of the docs/semantics.md table between the markers "<!-- NAME-table-begin" and
 * "<!-- NAME-table-end" to row, in order, split into `count` cells; the header (first cell `header`),
 * the separator and lines of another cell count are skipped. Returns the rows handed; *found says
 * whether the begin marker was there. Fails the test when the file cannot be opened. */
static size_t for_each_doc_row(const char *name, const char *header, int count, doc_row_fn *row, void *context,
                               bool *found)
{
    char path[4096], begin[64], end[64];
    semantics_md_path(path, sizeof path);
    snprintf(begin, sizeof begin, "<!-- %s-table-begin", name);
    snprintf(end, sizeof end, "<!-- %s-table-end", name);
    FILE *doc = fopen(path, "r");
    if (!doc)
        fail_msg("cannot open %s (define EW_SEMANTICS_MD as its path)", path);
    char line[1024], *cells[8];
    size_t rows = 0;
    *found = false;
    while (count <= 8 && fgets(line, sizeof line, doc)) {
        if (strstr(line, begin)) {
            *found = true;
            continue;
        }
        if (strstr(line, end))
            break;
        if (!*found || line[0] != '|')
            continue;
        if (split_cells(line, cells, count) != count || strcmp(cells[0], header) == 0 || cells[0][0] == '-')
            continue; /* header and separator */
        row(cells, rows++, context);
    }
    fclose(doc);
    return rows;
}

/* The docs/semantics.md table `name` holds the same rows as the test's table `what` of `expected` rows,
 * in the same order: row compares each with the test's row of its index, counting the differences in
 * its context (an int). */
static void expect_doc_table(const char *name, const char *header, int count, doc_row_fn *row, const char *what,
                             size_t expected)
{
    int differences = 0;
    bool found;
    const size_t rows = for_each_doc_row(name, header, count, row, &differences, &found);
    if (rows != expected)
        print_error("docs/semantics.md's %s table has %zu rows, %s %zu\n", name, rows, what, expected);
    assert_int_equal(differences, 0);
    assert_int_equal(rows, expected);
}

/* One row of §9 against EDGE_TABLE's row of the same index; context: the count of differences. */
static void edge_doc_row(char **cells, size_t row_index, void *context)
{
    double alpha = strcmp(cells[5], "-") == 0 ? 0.0 : strtod(cells[5], NULL);
    edge_row doc_row = {0, 0, 0, parse_bits(cells[3]), parse_bits(cells[4]), alpha, parse_bits(cells[6]), ""};
    bool known = dtype_from_name(cells[1], &doc_row.out) && dtype_from_name(cells[2], &doc_row.in);
    for (int op = EW_OP_ADD; op <= EW_OP_SCALE_ADD; op++)
        if (strcmp(cells[0], ref_op_name((ew_op_t)op)) == 0)
            doc_row.op = (ew_op_t)op;
    const edge_row *test_row = row_index < EDGE_ROW_COUNT ? &EDGE_TABLE[row_index] : NULL;
    if (!known || !test_row || doc_row.op != test_row->op || doc_row.out != test_row->out ||
        doc_row.in != test_row->in || doc_row.a != test_row->a || doc_row.b != test_row->b ||
        ref_f64_bits(doc_row.alpha) != ref_f64_bits(test_row->alpha) || doc_row.expected != test_row->expected) {
        print_error("docs/semantics.md §9 row %zu differs from EDGE_TABLE in tests/ref/test_reference.c\n",
                    row_index + 1);
        ++*(int *)context;
    }
}

/* docs/semantics.md §9 and EDGE_TABLE must hold the same rows in the same order. */
static void test_edge_table_matches_doc(void **state)
{
    (void)state;
    expect_doc_table("edge", "op", 8, edge_doc_row, "EDGE_TABLE", EDGE_ROW_COUNT);
}

/* ======================================================================================== */
/* §10: the scaled casts. Expectations from the test's own formula tables and host f32       */
/* arithmetic (the rules of §10 written out again), and the hand-checked rows of the table   */
/* between the scaled-table markers of docs/semantics.md.                                    */
/* ======================================================================================== */

/* The largest finite value of each fp8 format: quantize's clamp. */
static float fp8_max(ew_dtype_t t) { return t == EW_F8E4M3 ? 448.0f : 57344.0f; }

/* A quantize or amax input as the float it becomes (§10): f16, bf16 and f32 exactly, f64 rounded by
 * the host's conversion (RNE, overflow to infinity, subnormals kept); *nan for NaN inputs. */
static float scaled_input(ew_dtype_t t, uint64_t bits, bool *nan)
{
    const source_value s = source_of(t, bits);
    *nan = s.is_nan;
    return s.is_nan ? 0.0f : (float)s.value;
}

/* saturate(v * scale) as §10 defines it, from v's float value. */
static uint64_t expected_quantize(ew_dtype_t out, float v, bool v_nan, float scale)
{
    const float product = v * scale; /* one f32 rounding: FLT_EVAL_METHOD is 0 (ref.c checks it) */
    if (v_nan || isnan(product))
        return 0x7F; /* the canonical NaN 0x7FFFFFFF is positive */
    const float max = fp8_max(out);
    return nearest_code(table_for(out), product > max ? max : product < -max ? -max : product);
}

/* out of a dequantize from the product's float value (§10): NaN is the canonical 0x7FFFFFFF. */
static uint64_t expected_from_product(ew_dtype_t out, float product)
{
    switch (out) {
    case EW_F32: return isnan(product) ? ARITHMETIC_NAN_F32 : ref_f32_bits(product);
    case EW_F64:
        return isnan(product) ? doc_nan_f32_to_f64(ARITHMETIC_NAN_F32) : ref_f64_bits((double)product);
    default: return isnan(product) ? ROUNDED_NAN_16 : nearest_code(table_for(out), product);
    }
}

/* max |float(x[i])| over n elements (§10): 0 for none, 0x7FC00000 where any is NaN, -0 as +0. */
static uint32_t expected_amax(ew_dtype_t t, const void *x, size_t n)
{
    double max = 0.0;
    bool any_nan = false;
    for (size_t i = 0; i < n; i++) {
        bool nan;
        const double magnitude = fabs((double)scaled_input(t, element_bits(t, x, i), &nan));
        any_nan |= nan;
        max = magnitude > max ? magnitude : max;
    }
    return any_nan ? 0x7FC00000u : ref_f32_bits((float)max);
}

/* Scales that reach every rule: exact, rounding, saturating, subnormal products, zeros, infinities,
 * NaN. */
static const uint32_t SCALE_BITS[] = {
    0x3F800000, /* 1 */
    0x3F000000, /* 0.5 */
    0x40400000, /* 3 */
    0x3DCCCCCD, /* 0.1f */
    0x3BE01C04, /* 448 / 65504, rounded */
    0x4B800000, /* 2^24: saturates most values */
    0x0DA24260, /* 1e-30: subnormal products */
    0x00800000, /* 2^-126 */
    0x00000001, /* 2^-149, a subnormal scale */
    0x7149F2CA, /* 1e30 */
    0x00000000, 0x80000000, 0xBF800000, 0xC0F00000 /* -7.5 */, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
};
#define SCALE_COUNT (sizeof SCALE_BITS / sizeof SCALE_BITS[0])

/* ref_quantize against §10 for every f16 and bf16 pattern, the f32 and f64 edge values and random
 * values of both, at every scale of SCALE_BITS, to both fp8 formats; and its amax against
 * expected_amax over the same arrays. */
static void test_quantize_matches_formula(void **state)
{
    (void)state;
    mismatch_log log = {"quantize_matches_formula", 0};
    enum { RANDOM = 20000 };
    static uint32_t x32[RANDOM + sizeof EDGE_F32 / sizeof EDGE_F32[0]];
    static uint64_t x64[RANDOM + sizeof EDGE_F64 / sizeof EDGE_F64[0]];
    const size_t n32 = sizeof x32 / sizeof x32[0], n64 = sizeof x64 / sizeof x64[0];
    for (size_t i = 0; i < n32; i++)
        x32[i] = i < RANDOM ? random_f32_bits() : EDGE_F32[i - RANDOM];
    for (size_t i = 0; i < n64; i++)
        x64[i] = i < RANDOM ? random_f64_bits() : EDGE_F64[i - RANDOM];
    size_t n16;
    void *x16 = all_patterns(EW_F16, &n16); /* bf16 reads the same patterns */
    const struct {
        ew_dtype_t dtype;
        const void *x;
        size_t n;
    } inputs[] = {{EW_F16, x16, n16}, {EW_BF16, x16, n16}, {EW_F32, x32, n32}, {EW_F64, x64, n64}};
    uint8_t *out = checked_malloc(n16);
    for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
        const ew_dtype_t in = inputs[k].dtype;
        const uint32_t amax = expected_amax(in, inputs[k].x, inputs[k].n);
        for (int f = 0; f < 2; f++) {
            const ew_dtype_t fp8 = f == 0 ? EW_F8E4M3 : EW_F8E5M2;
            for (size_t s = 0; s < SCALE_COUNT; s++) {
                const float scale = ref_f32_from_bits(SCALE_BITS[s]);
                float got_amax = -1.0f;
                ref_quantize(fp8, in, (int64_t)inputs[k].n, out, inputs[k].x, scale, &got_amax);
                char context[64];
                snprintf(context, sizeof context, "quantize %s <- %s, scale 0x%08X", dtype_name(fp8),
                         dtype_name(in), (unsigned)SCALE_BITS[s]);
                for (size_t i = 0; i < inputs[k].n; i++) {
                    const uint64_t x = element_bits(in, inputs[k].x, i);
                    bool nan;
                    const float v = scaled_input(in, x, &nan);
                    expect_bits(&log, out[i], expected_quantize(fp8, v, nan, scale), context, x);
                }
                expect_bits(&log, ref_f32_bits(got_amax), amax, "quantize's amax", k);
            }
        }
        expect_bits(&log, ref_f32_bits(ref_amax(in, (int64_t)inputs[k].n, inputs[k].x)), amax, "ref_amax", k);
    }
    free(out);
    free(x16);
    finish(&log);
}

/* ref_dequantize against §10 for every fp8 code, at every scale of SCALE_BITS, to every output. */
static void test_dequantize_all_codes(void **state)
{
    (void)state;
    mismatch_log log = {"dequantize_all_codes", 0};
    uint8_t q[256];
    for (int c = 0; c < 256; c++)
        q[c] = (uint8_t)c;
    static const ew_dtype_t outs[] = {EW_F16, EW_BF16, EW_F32, EW_F64};
    uint64_t out[256];
    for (int f = 0; f < 2; f++) {
        const ew_dtype_t fp8 = f == 0 ? EW_F8E4M3 : EW_F8E5M2;
        for (size_t k = 0; k < sizeof outs / sizeof outs[0]; k++) {
            for (size_t s = 0; s < SCALE_COUNT; s++) {
                const float scale_inv = ref_f32_from_bits(SCALE_BITS[s]);
                ref_dequantize(outs[k], fp8, 256, out, q, scale_inv);
                char context[64];
                snprintf(context, sizeof context, "dequantize %s <- %s, scale_inv 0x%08X",
                         dtype_name(outs[k]), dtype_name(fp8), (unsigned)SCALE_BITS[s]);
                for (int c = 0; c < 256; c++) {
                    bool nan;
                    const double w = formula_value(table_for(fp8)->spec, (uint32_t)c, &nan);
                    const float product = nan ? NAN : (float)w * scale_inv; /* w is exact in f32 */
                    expect_bits(&log, element_bits(outs[k], out, (size_t)c),
                                expected_from_product(outs[k], product), context, (uint64_t)c);
                }
            }
        }
    }
    finish(&log);
}

/* §10's amax over several elements, by hand: the largest magnitude wins whatever its sign and
 * position, NaN anywhere wins over infinity, zeros of either sign give +0, n <= 0 gives 0; quantize
 * computes the same amax of x (not of the products) and writes none where amax is NULL. */
static void test_amax_by_hand(void **state)
{
    (void)state;
    const uint32_t mixed[] = {0x3F800000, 0xC0400000, 0x40000000, 0x80000000}; /* 1, -3, 2, -0 */
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 4, mixed)), 0x40400000);
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 1, mixed)), 0x3F800000); /* only the first element */
    const uint32_t zeros[] = {0x80000000, 0x80000000, 0x00000000};
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 3, zeros)), 0x00000000);
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 2, zeros)), 0x00000000); /* -0 alone: +0 */
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 0, NULL)), 0x00000000);
    assert_int_equal(ref_f32_bits(ref_amax(EW_F64, -5, NULL)), 0x00000000);
    const uint32_t infinite[] = {0x3F800000, 0xFF800000, 0x7F7FFFFF};
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 3, infinite)), 0x7F800000);
    const uint32_t nan_last[] = {0x7F800000, 0x3F800000, 0xFFC00123};  /* NaN after infinity */
    const uint32_t nan_first[] = {0x7F800001, 0xFF800000, 0x00000000}; /* a signalling NaN first */
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 3, nan_last)), 0x7FC00000);
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 3, nan_first)), 0x7FC00000);
    assert_int_equal(ref_f32_bits(ref_amax(EW_F32, 2, nan_last)), 0x7F800000); /* the NaN not counted */
    const uint16_t halves[] = {0x3C00, 0xFBFF, 0x7BFE};                        /* f16 1, -65504, 65472 */
    assert_int_equal(ref_f32_bits(ref_amax(EW_F16, 3, halves)), 0x477FE000);
    const uint16_t brains[] = {0x0001, 0x8002}; /* bf16 subnormals 2^-133, -2^-132 */
    assert_int_equal(ref_f32_bits(ref_amax(EW_BF16, 2, brains)), 0x00020000);
    /* f64: each element rounds to f32 first, so 1 + 2^-24 (a tie, to 1) loses to 1 + 2^-23 */
    const uint64_t doubles[] = {0x3FF0000010000000, 0xBFF0000020000000, 0x3FF000000FFFFFFF};
    assert_int_equal(ref_f32_bits(ref_amax(EW_F64, 3, doubles)), 0x3F800001);
    assert_int_equal(ref_f32_bits(ref_amax(EW_F64, 1, doubles)), 0x3F800000);

    /* quantize's amax is of x, not of the products: scale 0 leaves it */
    uint8_t out[4];
    memset(out, 0xA5, sizeof out);
    float amax = -1.0f;
    ref_quantize(EW_F8E4M3, EW_F32, 4, out, mixed, 0.0f, &amax);
    assert_int_equal(ref_f32_bits(amax), 0x40400000);
    assert_int_equal(out[0], 0x00);
    assert_int_equal(out[1], 0x80); /* -3 * 0 = -0 */
    assert_int_equal(out[3], 0x80); /* -0 * 0 = -0 */
    ref_quantize(EW_F8E5M2, EW_F32, 3, out, nan_last, 1.0f, &amax);
    assert_int_equal(ref_f32_bits(amax), 0x7FC00000);
    assert_int_equal(out[0], 0x7B); /* +inf saturates */
    assert_int_equal(out[2], 0x7F);
    assert_int_equal(out[3], 0x80); /* past n: untouched */
    /* n <= 0: no element touched, amax 0; amax NULL: nothing written */
    amax = -1.0f;
    ref_quantize(EW_F8E4M3, EW_F16, 0, NULL, NULL, 1.0f, &amax);
    assert_int_equal(ref_f32_bits(amax), 0x00000000);
    amax = -1.0f;
    ref_quantize(EW_F8E4M3, EW_BF16, -1, NULL, NULL, 1.0f, &amax);
    assert_int_equal(ref_f32_bits(amax), 0x00000000);
    ref_quantize(EW_F8E4M3, EW_F32, 2, out, mixed, 1.0f, NULL);
    assert_int_equal(out[0], 0x38);
    assert_int_equal(out[1], 0xC4); /* -3 */
    ref_dequantize(EW_F32, EW_F8E4M3, 0, NULL, NULL, 1.0f);
}

/* The rows of docs/semantics.md §10's table. op: quantize (out an fp8 dtype, x one element of in,
 * scale the f32 bits of the scale), dequantize (x one fp8 code, scale the bits of scale_inv) or amax
 * (out f32: the expected amax bits of the one element x). */
typedef struct {
    ew_op_t op;
    ew_dtype_t out, in;
    uint64_t x;
    uint32_t scale;
    uint64_t expected;
    const char *why;
} scaled_row;

#define QUANTIZE(out, in, x, scale, expected, why)                                               \
    {                                                                                            \
        EW_OP_QUANTIZE, EW_##out, EW_##in, UINT64_C(x), UINT32_C(scale), UINT64_C(expected), why \
    }
#define DEQUANTIZE(out, in, q, scale_inv, expected, why)                                               \
    {                                                                                                  \
        EW_OP_DEQUANTIZE, EW_##out, EW_##in, UINT64_C(q), UINT32_C(scale_inv), UINT64_C(expected), why \
    }
#define AMAX(in, x, expected, why)                                           \
    {                                                                        \
        EW_OP_AMAX, EW_F32, EW_##in, UINT64_C(x), 0, UINT64_C(expected), why \
    }

static const scaled_row SCALED_TABLE[] = {
    QUANTIZE(F8E4M3, F32, 0x3F800000, 0x40000000, 0x40, "1 * 2 = 2"),
    QUANTIZE(F8E4M3, F32, 0x43E00000, 0x3F800000, 0x7E, "448, the largest e4m3"),
    QUANTIZE(F8E4M3, F32, 0x43E80000, 0x3F800000, 0x7E, "464 clamps to 448"),
    QUANTIZE(F8E4M3, F32, 0x447A0000, 0x3F800000, 0x7E, "1000 saturates (ew_cast gives NaN 0x7F)"),
    QUANTIZE(F8E4M3, F32, 0xC47A0000, 0x3F800000, 0xFE, "-1000 saturates to -448"),
    QUANTIZE(F8E4M3, F32, 0x43600000, 0x40800000, 0x7E, "224 * 4 = 896 saturates"),
    QUANTIZE(F8E4M3, F32, 0x7F800000, 0x3F800000, 0x7E, "+inf saturates"),
    QUANTIZE(F8E4M3, F32, 0xFF800000, 0x3F800000, 0xFE, "-inf saturates"),
    QUANTIZE(F8E4M3, F32, 0x3F800000, 0x7F800000, 0x7E, "1 * +inf saturates"),
    QUANTIZE(F8E4M3, F32, 0xBF800000, 0x7F800000, 0xFE, "-1 * +inf saturates"),
    QUANTIZE(F8E4M3, F32, 0x7F800000, 0x00000000, 0x7F, "inf * 0 = NaN"),
    QUANTIZE(F8E4M3, F32, 0x00000000, 0x7F800000, 0x7F, "0 * inf = NaN"),
    QUANTIZE(F8E4M3, F32, 0x7FC00000, 0x3F800000, 0x7F, "NaN"),
    QUANTIZE(F8E4M3, F32, 0xFFC00000, 0x3F800000, 0x7F, "-NaN: the product is the positive canonical NaN"),
    QUANTIZE(F8E4M3, F32, 0x3F800000, 0x7FC00000, 0x7F, "scale NaN"),
    QUANTIZE(F8E4M3, F32, 0xBF800000, 0xFFC00000, 0x7F, "-1 * -NaN"),
    QUANTIZE(F8E4M3, F32, 0x80000000, 0x3F800000, 0x80, "-0 * 1 = -0"),
    QUANTIZE(F8E4M3, F32, 0x00000000, 0xBF800000, 0x80, "0 * -1 = -0"),
    QUANTIZE(F8E4M3, F32, 0x80000000, 0xBF800000, 0x00, "-0 * -1 = +0"),
    QUANTIZE(F8E4M3, F32, 0x3F880000, 0x3F800000, 0x38, "1.0625 tie -> even 1"),
    QUANTIZE(F8E4M3, F32, 0x3F980000, 0x3F800000, 0x3A, "1.1875 tie -> even 1.25"),
    QUANTIZE(F8E4M3, F32, 0x3F800001, 0x3F87FFFF, 0x38, "product rounds to f32 1.0625, then the tie -> 1"),
    QUANTIZE(F8E4M3, F32, 0x3A800000, 0x3F800000, 0x00, "2^-10, half the smallest subnormal -> 0"),
    QUANTIZE(F8E4M3, F32, 0x3B400000, 0x3F800000, 0x02, "3 * 2^-10 tie -> even 2 * 2^-9"),
    QUANTIZE(F8E4M3, F32, 0x00080000, 0x7C000000, 0x01, "subnormal 2^-130 * 2^121 = 2^-9"),
    QUANTIZE(F8E4M3, F32, 0x0D800000, 0xAB800000, 0x80, "2^-100 * -2^-40, an f32 subnormal, -> -0"),
    QUANTIZE(F8E5M2, F32, 0x47600000, 0x3F800000, 0x7B, "57344, the largest e5m2"),
    QUANTIZE(F8E5M2, F32, 0x47700000, 0x3F800000, 0x7B, "61440 saturates (ew_cast gives +inf 0x7C)"),
    QUANTIZE(F8E5M2, F32, 0x7F800000, 0x3F800000, 0x7B, "+inf saturates"),
    QUANTIZE(F8E5M2, F32, 0xFF800000, 0x3F800000, 0xFB, "-inf saturates"),
    QUANTIZE(F8E5M2, F32, 0x7FC00000, 0x3F800000, 0x7F, "NaN"),
    QUANTIZE(F8E5M2, F32, 0x7F800000, 0x00000000, 0x7F, "inf * 0 = NaN"),
    QUANTIZE(F8E5M2, F32, 0x37C00000, 0x3F800000, 0x02, "3 * 2^-17 tie -> even 2 * 2^-16"),
    QUANTIZE(F8E5M2, F32, 0x3F800000, 0x3F700000, 0x3C, "0.9375 tie -> even 1"),
    QUANTIZE(F8E5M2, F32, 0x80000000, 0x3F800000, 0x80, "-0"),
    QUANTIZE(F8E4M3, F16, 0x7C00, 0x3F800000, 0x7E, "f16 +inf saturates"),
    QUANTIZE(F8E4M3, F16, 0xFE00, 0x3F800000, 0x7F, "f16 NaN"),
    QUANTIZE(F8E5M2, F16, 0x7BFF, 0x3F800000, 0x7B, "f16 65504 saturates to 57344"),
    QUANTIZE(F8E4M3, F16, 0x0001, 0x47000000, 0x01, "f16 subnormal 2^-24 * 2^15 = 2^-9"),
    QUANTIZE(F8E4M3, BF16, 0xFF80, 0x3F000000, 0xFE, "bf16 -inf * 0.5 saturates"),
    QUANTIZE(F8E5M2, BF16, 0x7F81, 0x3F800000, 0x7F, "bf16 signalling NaN"),
    QUANTIZE(F8E4M3, BF16, 0x4380, 0x40000000, 0x7E, "bf16 256 * 2 = 512 saturates"),
    QUANTIZE(F8E4M3, F64, 0x3FF1000000000001, 0x3F800000, 0x38,
             "1.0625 + 2^-52 rounds to f32 1.0625, then the tie -> 1"),
    QUANTIZE(F8E4M3, F64, 0x7E37E43C8800759C, 0x00000000, 0x7F, "1e300 becomes f32 +inf, and inf * 0 = NaN"),
    QUANTIZE(F8E5M2, F64, 0xFFF0000000000001, 0x3F800000, 0x7F, "f64 signalling -NaN"),
    QUANTIZE(F8E4M3, F64, 0xC07C000000000000, 0x3F800000, 0xFE, "-448"),
    DEQUANTIZE(F32, F8E4M3, 0x38, 0x40000000, 0x40000000, "1 * 2"),
    DEQUANTIZE(F16, F8E4M3, 0x7E, 0x3F800000, 0x5F00, "448"),
    DEQUANTIZE(F32, F8E4M3, 0x7E, 0x7B800000, 0x7F800000, "448 * 2^120 overflows f32 -> +inf"),
    DEQUANTIZE(F16, F8E4M3, 0x7E, 0x43800000, 0x7C00, "448 * 256 overflows f16 -> +inf"),
    DEQUANTIZE(F16, F8E5M2, 0x7B, 0x3F800000, 0x7B00, "57344"),
    DEQUANTIZE(F32, F8E4M3, 0x7F, 0x3F800000, 0x7FFFFFFF, "NaN -> the canonical NaN"),
    DEQUANTIZE(F32, F8E4M3, 0xFF, 0x3F800000, 0x7FFFFFFF,
               "-NaN -> the positive canonical NaN (ew_cast gives 0xFFF00000)"),
    DEQUANTIZE(F64, F8E4M3, 0x7F, 0x3F800000, 0x7FFFFFFFE0000000, "NaN, widened"),
    DEQUANTIZE(BF16, F8E5M2, 0x7E, 0x3F800000, 0x7FFF, "e5m2 NaN"),
    DEQUANTIZE(F32, F8E5M2, 0x7C, 0x00000000, 0x7FFFFFFF, "inf * 0 = NaN"),
    DEQUANTIZE(F32, F8E5M2, 0x7C, 0xBF800000, 0xFF800000, "inf * -1"),
    DEQUANTIZE(F16, F8E5M2, 0xFC, 0x40000000, 0xFC00, "-inf * 2"),
    DEQUANTIZE(F32, F8E4M3, 0x38, 0x7FC00000, 0x7FFFFFFF, "scale_inv NaN"),
    DEQUANTIZE(F64, F8E4M3, 0x38, 0xFFC00001, 0x7FFFFFFFE0000000, "scale_inv -NaN -> canonical NaN, widened"),
    DEQUANTIZE(F32, F8E4M3, 0x38, 0x7F800000, 0x7F800000, "1 * inf"),
    DEQUANTIZE(F32, F8E4M3, 0x00, 0x7F800000, 0x7FFFFFFF, "0 * inf = NaN"),
    DEQUANTIZE(F32, F8E4M3, 0x80, 0x3F800000, 0x80000000, "-0"),
    DEQUANTIZE(BF16, F8E4M3, 0x00, 0xBF800000, 0x8000, "0 * -1 = -0"),
    DEQUANTIZE(F32, F8E4M3, 0x01, 0x03800000, 0x00100000, "2^-9 * 2^-120 = 2^-129, a subnormal, kept"),
    DEQUANTIZE(F64, F8E4M3, 0x01, 0x03800000, 0x37E0000000000000, "the same, widened exactly"),
    DEQUANTIZE(F32, F8E5M2, 0x01, 0x00010000, 0x00000001, "2^-16 * 2^-133 (a subnormal scale_inv) = 2^-149"),
    DEQUANTIZE(F16, F8E4M3, 0x38, 0x3F801000, 0x3C00, "1 + 2^-11 tie -> 1"),
    DEQUANTIZE(BF16, F8E4M3, 0x38, 0x3F808000, 0x3F80, "1 + 2^-8 tie -> 1"),
    DEQUANTIZE(F64, F8E4M3, 0x39, 0x3F800001, 0x3FF2000020000000, "1.125 * (1 + 2^-23) rounded to f32 first"),
    AMAX(F32, 0xC0400000, 0x40400000, "|-3| = 3"),
    AMAX(F32, 0x80000000, 0x00000000, "-0 -> +0"),
    AMAX(F32, 0xFF800000, 0x7F800000, "-inf -> +inf"),
    AMAX(F32, 0xFFC00123, 0x7FC00000, "any NaN -> 0x7FC00000"),
    AMAX(F32, 0x7F800001, 0x7FC00000, "signalling NaN"),
    AMAX(F32, 0x80000001, 0x00000001, "subnormal kept"),
    AMAX(F16, 0xFBFF, 0x477FE000, "f16 -65504"),
    AMAX(F16, 0xFE01, 0x7FC00000, "f16 NaN"),
    AMAX(BF16, 0x8001, 0x00010000, "bf16 -2^-133"),
    AMAX(F64, 0x3FF0000010000000, 0x3F800000, "1 + 2^-24 rounds (a tie) to f32 1"),
    AMAX(F64, 0xFE37E43C8800759C, 0x7F800000, "-1e300 becomes f32 -inf"),
    AMAX(F64, 0x0000000000000001, 0x00000000, "2^-1074 rounds to f32 0"),
    AMAX(F64, 0xFFF0000000000001, 0x7FC00000, "f64 NaN"),
};

#undef QUANTIZE
#undef DEQUANTIZE
#undef AMAX

#define SCALED_ROW_COUNT (sizeof SCALED_TABLE / sizeof SCALED_TABLE[0])

/* A row's result bits; a quantize row also checks that its amax is ref_amax of the element. */
static uint64_t run_scaled_row(const scaled_row *row)
{
    uint64_t x = row->x, out = 0;
    const float scale = ref_f32_from_bits(row->scale);
    switch (row->op) {
    case EW_OP_QUANTIZE: {
        float amax = -1.0f;
        ref_quantize(row->out, row->in, 1, &out, &x, scale, &amax);
        assert_int_equal(ref_f32_bits(amax), ref_f32_bits(ref_amax(row->in, 1, &x)));
        break;
    }
    case EW_OP_DEQUANTIZE: ref_dequantize(row->out, row->in, 1, &out, &x, scale); break;
    default: out = ref_f32_bits(ref_amax(row->in, 1, &x)); break;
    }
    return out; /* little-endian: the element's bits, zero-extended */
}

static void test_scaled_table(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < SCALED_ROW_COUNT; i++) {
        const scaled_row *row = &SCALED_TABLE[i];
        const uint64_t got = run_scaled_row(row);
        if (got != row->expected) {
            print_error("docs/semantics.md §10 row %zu: %s %s <- %s x=0x%llx scale=0x%08x: got 0x%llx, "
                        "expected 0x%llx (%s)\n",
                        i + 1, ref_op_name(row->op), dtype_name(row->out), dtype_name(row->in),
                        (unsigned long long)row->x, (unsigned)row->scale, (unsigned long long)got,
                        (unsigned long long)row->expected, row->why);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
}

/* One row of §10 against SCALED_TABLE's row of the same index; context: the count of differences. */
static void scaled_doc_row(char **cells, size_t row_index, void *context)
{
    scaled_row doc_row = {0, 0, 0, parse_bits(cells[3]), (uint32_t)parse_bits(cells[4]), parse_bits(cells[5]), ""};
    bool known = dtype_from_name(cells[1], &doc_row.out) && dtype_from_name(cells[2], &doc_row.in);
    for (int op = EW_OP_QUANTIZE; op <= EW_OP_AMAX; op++)
        if (strcmp(cells[0], ref_op_name((ew_op_t)op)) == 0)
            doc_row.op = (ew_op_t)op;
    const scaled_row *test_row = row_index < SCALED_ROW_COUNT ? &SCALED_TABLE[row_index] : NULL;
    if (!known || !test_row || doc_row.op != test_row->op || doc_row.out != test_row->out ||
        doc_row.in != test_row->in || doc_row.x != test_row->x || doc_row.scale != test_row->scale ||
        doc_row.expected != test_row->expected) {
        print_error("docs/semantics.md §10 row %zu differs from SCALED_TABLE in tests/ref/test_reference.c\n",
                    row_index + 1);
        ++*(int *)context;
    }
}

/* docs/semantics.md §10's table and SCALED_TABLE must hold the same rows in the same order. */
static void test_scaled_table_matches_doc(void **state)
{
    (void)state;
    expect_doc_table("scaled", "op", 7, scaled_doc_row, "SCALED_TABLE", SCALED_ROW_COUNT);
}

/* ======================================================================================== */
/* The block-scaled casts (docs/semantics.md §11): hand-checked rows                          */
/* ======================================================================================== */

/* f32 bits as a float, for the tables below. */
static float F(uint32_t bits) { return ref_f32_from_bits(bits); }

/* e2m1 by its textbook definition: 1 sign, 2 exponent (bias 1), 1 mantissa bit; no inf or NaN. */
static double e2m1_formula(unsigned code)
{
    const unsigned e = (code >> 1) & 3, m = code & 1;
    const double magnitude = e == 0 ? 0.5 * m : ldexp(1.0 + 0.5 * m, (int)e - 1);
    return code & 8 ? -magnitude : magnitude;
}

/* The nearest e2m1 code by scanning the eight magnitudes: ties to the even code, 6 and beyond
 * (infinity included) saturating to 6, the sign from the sign bit, NaN 0x4 (§11.1). */
static uint8_t e2m1_by_scan(float f)
{
    if (isnan(f))
        return 0x4;
    const uint8_t sign = signbit(f) ? 0x8 : 0;
    const double a = fabs((double)f);
    if (a >= 6.0)
        return sign | 7;
    unsigned best = 0;
    for (unsigned c = 1; c < 8; c++) {
        const double d = fabs(e2m1_formula(c) - a), b = fabs(e2m1_formula(best) - a);
        if (d < b || (d == b && c % 2 == 0))
            best = c;
    }
    return sign | (uint8_t)best;
}

/* torchao 0.18's _f32_to_floatx_unpacked(x, ebits=2, mbits=1) (custom_fp_utils.py), transliterated
 * operation by operation: the saturate / denormal (x + 2^22, an f32 add) / normal (magic adder)
 * branches on the int32 bits, each branch cast to uint8 (wrapping), the sign shifted in. */
static uint8_t torchao_f32_to_e2m1(uint32_t bits)
{
    const int32_t x_all = (int32_t)bits;
    const int32_t sign = (int32_t)(bits & UINT32_C(0x80000000));
    const uint32_t x = (uint32_t)(x_all ^ sign);
    const float xf = F(x);
    const bool saturate = xf >= 6.0f;                   /* max_normal = 2^(3-1) * 3/2 */
    const bool denormal = !saturate && xf < 1.0f;      /* min_normal = 2^(1-1) */
    uint8_t result;
    if (saturate) {
        result = 7; /* max_int */
    } else if (denormal) {
        const uint32_t denorm_mask_int = UINT32_C(149) << 23; /* (127-1) + (23-1) + 1 */
        const float denormal_x = xf + F(denorm_mask_int);      /* + 2^22 */
        result = (uint8_t)(ref_f32_bits(denormal_x) - denorm_mask_int);
    } else {
        int64_t normal_x = (int64_t)x;
        const int64_t mant_odd = (normal_x >> 22) & 1;
        normal_x += -((int64_t)126 << 23) + ((1 << 21) - 1); /* exp bias change + magic adder */
        normal_x += mant_odd;
        result = (uint8_t)(normal_x >> 22);
    }
    const uint8_t sign_lp = (uint8_t)((uint32_t)(sign >> 28)) & 0x8; /* int32 arithmetic shift, & sign_mask */
    return result | sign_lp;
}

/* The counts of a block table's rows by rule (e2m1, floor, round-up) and of its differences. */
typedef struct {
    int rows[3], differences;
} block_rows_t;

/* One row of §11.6 against the reference: its rule's function of the input for its element dtype. */
static void block_doc_row(char **cells, size_t index, void *context)
{
    (void)index;
    block_rows_t *counts = context;
    static const struct {
        const char *name;
        ew_dtype_t dtype;
    } elements[] = {{"f8e4m3", EW_F8E4M3}, {"f8e5m2", EW_F8E5M2}, {"f4e2m1", EW_F4E2M1}};
    ew_dtype_t element = (ew_dtype_t)0;
    for (size_t k = 0; k < sizeof elements / sizeof elements[0]; k++)
        if (strcmp(cells[1], elements[k].name) == 0)
            element = elements[k].dtype;
    const float input = ref_f32_from_bits((uint32_t)parse_bits(cells[2]));
    const unsigned expected = (unsigned)parse_bits(cells[3]);
    const int rule = strcmp(cells[0], "e2m1") == 0    ? 0
                     : strcmp(cells[0], "floor") == 0 ? 1
                     : strcmp(cells[0], "round-up") == 0 ? 2
                                                          : -1;
    if (rule < 0 || element == 0 || (rule == 0 && element != EW_F4E2M1)) {
        print_error("docs/semantics.md block table: unreadable row: %s | %s\n", cells[0], cells[1]);
        counts->differences++;
        return;
    }
    const unsigned got = rule == 0   ? ref_f32_to_e2m1(input)
                         : rule == 1 ? ref_e8m0_scale_floor(input, element)
                                     : ref_e8m0_scale_round_up(input, element);
    counts->rows[rule]++;
    if (got != expected) {
        print_error("docs/semantics.md block table: %s %s 0x%08X: the reference gives 0x%02X, the row 0x%02X\n",
                    cells[0], cells[1], ref_f32_bits(input), got, expected);
        counts->differences++;
    }
}

/* docs/semantics.md's table of hand-checked block rules (11.6): each row against the reference. Fails on a
 * row that disagrees, a row it cannot read, or a table of fewer rows than the rules need. */
static void test_block_table_matches_doc(void **state)
{
    (void)state;
    block_rows_t counts = {{0}, 0};
    bool found;
    for_each_doc_row("block", "rule", 5, block_doc_row, &counts, &found);
    if (!found)
        fail_msg("docs/semantics.md has no block-table-begin marker");
    assert_int_equal(counts.differences, 0);
    assert_true(counts.rows[0] >= 10 && counts.rows[1] >= 8 && counts.rows[2] >= 8);
}

/* §11.1 by hand: the ties of each binade, saturation, signs, NaN. */
static void test_e2m1_by_hand(void **state)
{
    (void)state;
    static const struct {
        uint32_t f;
        uint8_t code;
    } rows[] = {
        {0x00000000, 0x0}, {0x80000000, 0x8}, /* +-0 */
        {0x3E800000, 0x0},                    /* 0.25: tie 0 / 0.5 -> 0 (even) */
        {0x3E800001, 0x1},                    /* just above: 0.5 */
        {0x3F3FFFFF, 0x1},                    /* just below 0.75 */
        {0x3F400000, 0x2},                    /* 0.75: tie 0.5 / 1 -> 1 (code 2) */
        {0x3FA00000, 0x2},                    /* 1.25: tie 1 / 1.5 -> 1 */
        {0x3FE00000, 0x4},                    /* 1.75: tie 1.5 / 2 -> 2 (code 4) */
        {0x40200000, 0x4},                    /* 2.5: tie 2 / 3 -> 2 */
        {0x40600000, 0x6},                    /* 3.5: tie 3 / 4 -> 4 */
        {0x40A00000, 0x6},                    /* 5: tie 4 / 6 -> 4 */
        {0x40A00001, 0x7},                    /* just above 5: 6 */
        {0x40C00000, 0x7}, {0x40E00000, 0x7}, {0x7F7FFFFF, 0x7}, /* 6, 7, FLT_MAX: saturate */
        {0x7F800000, 0x7}, {0xFF800000, 0xF}, /* +-inf */
        {0xC0200000, 0xC},                    /* -2.5 -> -2 */
        {0xBF400000, 0xA},                    /* -0.75 -> -1 */
        {0x00000001, 0x0}, {0x80000001, 0x8}, /* subnormals: +-0 */
        {0x3F000000, 0x1}, {0x40400000, 0x5}, {0x40800000, 0x6}, /* 0.5, 3, 4: exact */
        {0x7FFFFFFF, 0x4}, {0xFFFFFFFF, 0x4}, {0x7FC00000, 0x4}, {0xFF800001, 0x4}, /* NaN: 0x4 */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (ref_f32_to_e2m1(F(rows[i].f)) != rows[i].code)
            fail_msg("e2m1 of 0x%08X: got 0x%X, expected 0x%X", (unsigned)rows[i].f,
                     (unsigned)ref_f32_to_e2m1(F(rows[i].f)), (unsigned)rows[i].code);
    }
    /* to f32: every code by the formula, exactly; 0x8 is -0 */
    for (unsigned c = 0; c < 16; c++) {
        const float got = ref_e2m1_to_f32((uint8_t)c);
        assert_true((double)got == e2m1_formula(c));
        assert_int_equal(signbit(got) != 0, (c & 8) != 0);
        assert_int_equal(ref_f32_to_e2m1(got), c); /* round trip */
    }
}

/* ref_f32_to_e2m1 against the scan over every bf16 pattern and a million random f32 ones, and against
 * the transliteration of torchao's bit arithmetic: equal on every non-NaN input, and on the GPU's
 * canonical NaN 0x7FFFFFFF (the only NaN an f32 product or quotient there gives) it is code 0x4. */
static void test_e2m1_matches_scan_and_torchao(void **state)
{
    (void)state;
    mismatch_log log = {"e2m1_matches_scan_and_torchao", 0};
    for (uint64_t k = 0; k < 65536 + 1000000; k++) {
        const uint32_t bits = k < 65536 ? (uint32_t)k << 16 : (uint32_t)next_random();
        const float f = F(bits);
        const uint8_t got = ref_f32_to_e2m1(f);
        expect_bits(&log, got, e2m1_by_scan(f), "e2m1 vs scan", bits);
        if (!isnan(f))
            expect_bits(&log, got, torchao_f32_to_e2m1(bits), "e2m1 vs torchao", bits);
    }
    expect_bits(&log, torchao_f32_to_e2m1(0x7FFFFFFF), 0x4, "torchao's e2m1 of the canonical NaN", 0x7FFFFFFF);
    finish(&log);
}

/* §11.2's OCP floor by hand: s = clamp(E - 127 - emax, -127, 128) + 127, 255 for NaN. */
static void test_e8m0_floor_by_hand(void **state)
{
    (void)state;
    static const struct {
        uint32_t amax;
        ew_dtype_t element;
        uint8_t s;
    } rows[] = {
        {0x00000000, EW_F8E4M3, 0},    /* zero: E = 0, -135 clamps to -127 */
        {0x00000000, EW_F4E2M1, 0},
        {0x00000001, EW_F8E5M2, 0},    /* subnormal amax: E = 0 */
        {0x007FFFFF, EW_F8E4M3, 0},
        {0x3F800000, EW_F8E4M3, 119},  /* 1: 0 - 8 */
        {0x3F800000, EW_F8E5M2, 112},  /* 1: 0 - 15 */
        {0x3F800000, EW_F4E2M1, 125},  /* 1: 0 - 2 */
        {0x43E00000, EW_F8E4M3, 127},  /* 448 = max: 2^0 */
        {0x43E08000, EW_F8E4M3, 127},  /* 449: floor, saturates */
        {0x43FFFFFF, EW_F8E4M3, 127},  /* just below 512 */
        {0x44000000, EW_F8E4M3, 128},  /* 512 */
        {0x40C00000, EW_F4E2M1, 127},  /* 6 = max */
        {0x41000000, EW_F4E2M1, 128},  /* 8 */
        {0x47600000, EW_F8E5M2, 127},  /* 57344 = max */
        {0x48E00000, EW_F8E4M3, 137},  /* 448 * 2^10 */
        {0x45600000, EW_F8E5M2, 123},  /* 57344 * 2^-4 */
        {0x3F400000, EW_F4E2M1, 124},  /* 6 * 2^-3 */
        {0x04000000, EW_F8E4M3, 0},    /* 2^-119: -127, the lowest that is not clamped */
        {0x03800000, EW_F8E4M3, 0},    /* 2^-120: -128 clamps */
        {0x04800000, EW_F8E4M3, 1},    /* 2^-118 */
        {0x7F7FFFFF, EW_F8E4M3, 246},  /* FLT_MAX: 127 - 8 */
        {0x7F800000, EW_F8E4M3, 247},  /* inf: E = 255, 128 - 8 */
        {0x7F800000, EW_F8E5M2, 240},
        {0x7F800000, EW_F4E2M1, 253},
        {0x7FC00000, EW_F8E4M3, 255},  /* NaN */
        {0x7FFFFFFF, EW_F4E2M1, 255},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const uint8_t got = ref_e8m0_scale_floor(F(rows[i].amax), rows[i].element);
        if (got != rows[i].s)
            fail_msg("floor scale of amax 0x%08X for %s: got %u, expected %u", (unsigned)rows[i].amax,
                     rows[i].element == EW_F4E2M1 ? "e2m1" : dtype_name(rows[i].element), (unsigned)got,
                     (unsigned)rows[i].s);
    }
}

/* §11.2's EW_BLOCKS_ROUND_UP by hand: d = amax * f32(1/max); the smallest power of two >= d. The
 * products: 448 * f32(1/448) = 1 + 3 * 2^-26 and 6 * f32(1/6) = 1 + 2^-25 exactly, both rounding to 1. */
static void test_e8m0_round_up_by_hand(void **state)
{
    (void)state;
    static const struct {
        uint32_t amax;
        ew_dtype_t element;
        uint8_t s;
    } rows[] = {
        {0x00000000, EW_F8E4M3, 0},    /* d = 0 */
        {0x00000001, EW_F8E4M3, 0},    /* d = 0 after rounding */
        {0x43E00000, EW_F8E4M3, 127},  /* 448: d = 1 */
        {0x43E08000, EW_F8E4M3, 128},  /* 449: d > 1 */
        {0x43600000, EW_F8E4M3, 126},  /* 224: d = 1/2 */
        {0x47600000, EW_F8E5M2, 127},  /* 57344: d = 1 */
        {0x40C00000, EW_F4E2M1, 127},  /* 6: d = 1 */
        {0x41400000, EW_F4E2M1, 128},  /* 12: d = 2 */
        {0x40400000, EW_F4E2M1, 126},  /* 3: d = 1/2 */
        {0x3F400000, EW_F4E2M1, 124},  /* 0.75 = 6 * 2^-3 */
        {0x48E00000, EW_F8E4M3, 137},  /* 448 * 2^10 */
        {0x40400000, EW_F8E4M3, 120},  /* 3: d = 0.0067 in (2^-8, 2^-7] */
        {0x04800000, EW_F8E4M3, 1},    /* 2^-118: d = 1.14 * 2^-127, subnormal, rounds up to 2^-126 */
        {0x04000000, EW_F8E4M3, 0},    /* 2^-119: d = 1.14 * 2^-128 -> 2^-127 */
        {0x04600000, EW_F8E4M3, 0},    /* 1.75 * 2^-119 = 448 * 2^-127: d = 2^-127 exactly -> 0 */
        {0x7F7FFFFF, EW_F8E4M3, 247},  /* FLT_MAX / 448 = 1.14 * 2^119 -> 2^120 */
        {0x7F7FFFFF, EW_F4E2M1, 253},  /* FLT_MAX / 6 = 1.33 * 2^125 -> 2^126 */
        {0x7F800000, EW_F8E4M3, 254},  /* inf */
        {0x7F800000, EW_F4E2M1, 254},
        {0x7FC00000, EW_F8E5M2, 255},  /* NaN */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const uint8_t got = ref_e8m0_scale_round_up(F(rows[i].amax), rows[i].element);
        if (got != rows[i].s)
            fail_msg("round-up scale of amax 0x%08X for %s: got %u, expected %u", (unsigned)rows[i].amax,
                     rows[i].element == EW_F4E2M1 ? "e2m1" : dtype_name(rows[i].element), (unsigned)got,
                     (unsigned)rows[i].s);
    }
    /* the products the comments above rely on, on this host's IEEE f32 */
    assert_int_equal(ref_f32_bits(448.0f * (1.0f / 448.0f)), 0x3F800000);
    assert_int_equal(ref_f32_bits(6.0f * (1.0f / 6.0f)), 0x3F800000);
    assert_int_equal(ref_f32_bits(57344.0f * (1.0f / 57344.0f)), 0x3F800000);
}

/* One block of f32 values (the first `count` given, the rest +0) quantized alone: its element codes
 * (e2m1 unpacked) and its scale. */
typedef struct {
    uint8_t codes[32];
    uint8_t scale;
} block_result;

static block_result quantize_block(ew_block_format_t format, ew_dtype_t out_dtype, const uint32_t *values,
                                   int count, const float *g, unsigned options)
{
    const int block = ref_block_size(format);
    uint32_t x[32] = {0};
    memcpy(x, values, (size_t)count * sizeof x[0]);
    uint8_t packed[32];
    memset(packed, 0xA5, sizeof packed);
    block_result r;
    r.scale = 0xA5;
    ref_quantize_blocks(format, out_dtype, EW_F32, 1, block, packed, &r.scale, x, g, options);
    for (int i = 0; i < block; i++)
        r.codes[i] = out_dtype == EW_F4E2M1 ? (uint8_t)(i % 2 ? packed[i / 2] >> 4 : packed[i / 2] & 0xF) : packed[i];
    return r;
}

static void expect_block(const char *what, block_result got, uint8_t scale, const uint8_t *codes, int count)
{
    if (got.scale != scale)
        fail_msg("%s: scale 0x%02X, expected 0x%02X", what, got.scale, scale);
    for (int i = 0; i < 32; i++) {
        const uint8_t want = i < count ? codes[i] : 0;
        if (i < count && got.codes[i] != want)
            fail_msg("%s: element %d is 0x%02X, expected 0x%02X", what, i, got.codes[i], want);
    }
}

#define CODES(...) (const uint8_t[]){__VA_ARGS__}, (int)sizeof((const uint8_t[]){__VA_ARGS__})
#define VALUES(...) (const uint32_t[]){__VA_ARGS__}, (int)(sizeof((const uint32_t[]){__VA_ARGS__}) / 4)

/* §11.2: MX blocks by hand, both scale rules. */
static void test_mx_blocks_by_hand(void **state)
{
    (void)state;
    const unsigned UP = EW_BLOCKS_ROUND_UP;
    /* amax 3 (E = 128): s = 120, S = 2^-7 both ways; 1 -> 128, -2.5 -> -320, 3 -> 384, 0.01 -> 1.28 -> 1.25 */
    static const uint32_t three[] = {0x3F800000, 0xC0200000, 0x40400000, 0x3C23D70A};
    expect_block("e4m3 floor, amax 3", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, three, 4, NULL, 0), 120,
                 CODES(0x70, 0xFA, 0x7C, 0x3A, 0x00));
    expect_block("e4m3 round-up, amax 3", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, three, 4, NULL, UP), 120,
                 CODES(0x70, 0xFA, 0x7C, 0x3A, 0x00));
    /* amax 449: floor keeps 2^0 and saturates it to 448; round-up takes 2^1: 224.5 -> 224, 1 -> 0.5 */
    static const uint32_t past_max[] = {0x43E08000, 0x3F800000};
    expect_block("e4m3 floor, amax 449", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, past_max, 2, NULL, 0), 127,
                 CODES(0x7E, 0x38));
    expect_block("e4m3 round-up, amax 449", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, past_max, 2, NULL, UP), 128,
                 CODES(0x76, 0x30));
    /* a NaN: s = 255. Floor divides by +inf: finite -> +-0, NaN and inf -> NaN; round-up multiplies by NaN */
    static const uint32_t with_nan[] = {0x3F800000, 0x7FC00000, 0x7F800000, 0xC0400000};
    expect_block("e4m3 floor, NaN", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, with_nan, 4, NULL, 0), 255,
                 CODES(0x00, 0x7F, 0x7F, 0x80, 0x00));
    expect_block("e4m3 round-up, NaN", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, with_nan, 4, NULL, UP), 255,
                 CODES(0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F));
    expect_block("e2m1 floor, NaN", quantize_block(EW_BLOCKS_MX, EW_F4E2M1, with_nan, 4, NULL, 0), 255,
                 CODES(0x0, 0x4, 0x4, 0x8, 0x0));
    expect_block("e2m1 round-up, NaN", quantize_block(EW_BLOCKS_MX, EW_F4E2M1, with_nan, 4, NULL, UP), 255,
                 CODES(0x4, 0x4, 0x4, 0x4, 0x4));
    /* an infinity, no NaN: floor s = 247 (S = 2^120), round-up 254 (r = 2^-127); +-inf saturate */
    static const uint32_t with_inf[] = {0x7F800000, 0x3F800000, 0xFF800000};
    expect_block("e4m3 floor, inf", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, with_inf, 3, NULL, 0), 247,
                 CODES(0x7E, 0x00, 0xFE));
    expect_block("e4m3 round-up, inf", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, with_inf, 3, NULL, UP), 254,
                 CODES(0x7E, 0x00, 0xFE));
    expect_block("e5m2 floor, inf", quantize_block(EW_BLOCKS_MX, EW_F8E5M2, with_inf, 3, NULL, 0), 240,
                 CODES(0x7B, 0x00, 0xFB));
    /* zeros: s = 0 both ways, -0 kept */
    static const uint32_t zeros[] = {0x00000000, 0x80000000};
    expect_block("e4m3 floor, zeros", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, zeros, 2, NULL, 0), 0,
                 CODES(0x00, 0x80, 0x00));
    expect_block("e4m3 round-up, zeros", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, zeros, 2, NULL, UP), 0,
                 CODES(0x00, 0x80, 0x00));
    expect_block("e2m1 round-up, zeros", quantize_block(EW_BLOCKS_MX, EW_F4E2M1, zeros, 2, NULL, UP), 0,
                 CODES(0x0, 0x8, 0x0));
    /* f32 subnormals: floor s = 0 scales by 2^126 (the clamped 2^-126): 1 - 2^-23 -> 1, 2^-23 -> 0,
     * -2^-127 -> -0.5; round-up s = 0 multiplies by 1: all +-0 */
    static const uint32_t subnormal[] = {0x007FFFFF, 0x00000001, 0x80400000};
    expect_block("e4m3 floor, subnormals", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, subnormal, 3, NULL, 0), 0,
                 CODES(0x38, 0x00, 0xB0));
    expect_block("e4m3 round-up, subnormals", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, subnormal, 3, NULL, UP), 0,
                 CODES(0x00, 0x00, 0x80));
    /* 448 * 2^-119 is d = 2^-127 exactly: s = 0, r = 1 (not 2^127): 448 * 2^-119 -> 0 */
    static const uint32_t smallest[] = {0x04600000};
    expect_block("e4m3 round-up, d = 2^-127", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, smallest, 1, NULL, UP), 0,
                 CODES(0x00));
    /* max * 2^k: scale 2^k exactly, the element max */
    static const uint32_t e4m3_max[] = {0x48E00000}, e5m2_max[] = {0x45600000}, e2m1_max[] = {0x3F400000};
    expect_block("e4m3 floor, 448 * 2^10", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, e4m3_max, 1, NULL, 0), 137,
                 CODES(0x7E));
    expect_block("e4m3 round-up, 448 * 2^10", quantize_block(EW_BLOCKS_MX, EW_F8E4M3, e4m3_max, 1, NULL, UP),
                 137, CODES(0x7E));
    expect_block("e5m2 floor, 57344 * 2^-4", quantize_block(EW_BLOCKS_MX, EW_F8E5M2, e5m2_max, 1, NULL, 0), 123,
                 CODES(0x7B));
    expect_block("e2m1 floor, 6 * 2^-3", quantize_block(EW_BLOCKS_MX, EW_F4E2M1, e2m1_max, 1, NULL, 0), 124,
                 CODES(0x7));
    expect_block("e2m1 round-up, 6 * 2^-3", quantize_block(EW_BLOCKS_MX, EW_F4E2M1, e2m1_max, 1, NULL, UP), 124,
                 CODES(0x7));
    /* e2m1: floor S = 1 for amax 7.5 (which saturates); round-up halves (d = 1.25 -> 2^1) */
    static const uint32_t e2m1_values[] = {0x40C00000, 0xC0A00000, 0x3E800000, 0x3F400000, 0x40200000,
                                           0x3FE00000, 0x40600000, 0x40B00000, 0x40F00000};
    expect_block("e2m1 floor", quantize_block(EW_BLOCKS_MX, EW_F4E2M1, e2m1_values, 9, NULL, 0), 127,
                 CODES(0x7, 0xE, 0x0, 0x2, 0x4, 0x4, 0x6, 0x7, 0x7, 0x0));
    expect_block("e2m1 round-up", quantize_block(EW_BLOCKS_MX, EW_F4E2M1, e2m1_values, 9, NULL, UP), 128,
                 CODES(0x5, 0xC, 0x0, 0x1, 0x2, 0x2, 0x4, 0x5, 0x6, 0x0));
    /* and packed: element 2i in the low nibble */
    uint32_t x[32] = {0};
    memcpy(x, e2m1_values, sizeof e2m1_values);
    uint8_t packed[16], s;
    ref_quantize_blocks(EW_BLOCKS_MX, EW_F4E2M1, EW_F32, 1, 32, packed, &s, x, NULL, 0);
    static const uint8_t expected_packed[16] = {0xE7, 0x20, 0x44, 0x76, 0x07};
    assert_memory_equal(packed, expected_packed, 16);
    /* bf16 and f16 inputs are widened exactly: bf16 2^-127 (0x0040) with floor s = 0 -> 0.5; f16 2^-24
     * (0x0001): s = 95, 2^-24 / 2^-32 = 256 */
    uint16_t h[32] = {0x0040};
    uint8_t q[32];
    ref_quantize_blocks(EW_BLOCKS_MX, EW_F8E4M3, EW_BF16, 1, 32, q, &s, h, NULL, 0);
    assert_int_equal(s, 0);
    assert_int_equal(q[0], 0x30);
    h[0] = 0x0001;
    ref_quantize_blocks(EW_BLOCKS_MX, EW_F8E4M3, EW_F16, 1, 32, q, &s, h, NULL, 0);
    assert_int_equal(s, 95);
    assert_int_equal(q[0], 0x78);
}

/* §11.3: NVFP4 blocks by hand. */
static void test_nvfp4_blocks_by_hand(void **state)
{
    (void)state;
    static const uint32_t values[] = {0x40C00000, 0xC0A00000, 0x3E800000, 0x3F400000,
                                      0x40200000, 0x3FE00000, 0x40600000, 0x40B00000};
    const uint8_t *expected_codes = (const uint8_t[]){0x7, 0xE, 0x0, 0x2, 0x4, 0x4, 0x6, 0x7, 0x0};
    /* amax 6: b = 6 * f32(1/6) = 1, scale 1.0 (0x38), r = 1: the values themselves */
    const float one = 1.0f, two = 2.0f, half = 0.5f, three = 3.0f, zero = 0.0f, minus_one = -1.0f;
    const float nan = F(0x7FC00000);
    expect_block("g NULL", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, values, 8, NULL, 0), 0x38, expected_codes, 9);
    expect_block("g 1", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, values, 8, &one, 0), 0x38, expected_codes, 9);
    expect_block("g 2", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, values, 8, &two, 0), 0x30, expected_codes, 9);
    expect_block("g 0.5", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, values, 8, &half, 0), 0x40, expected_codes,
                 9);
    /* g 3: c = f32(1/3) -> e4m3 1.375 * 2^-2 (0x2B); r = f32(1/3) / 0.34375 = 0.9697 */
    expect_block("g 3", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, values, 8, &three, 0), 0x2B,
                 CODES(0x7, 0xE, 0x0, 0x1, 0x4, 0x3, 0x5, 0x7, 0x0));
    /* b is a product by f32(1/6) = (1/6)(1 + 2^-25), not a quotient: amax 7.125 - 2^-21 gives
     * b = 1.1875 (the e4m3 tie of 1.125 and 1.25, to even: 1.25, 0x3A) where amax / 6 would round to
     * 1.1875 - 2^-23 (1.125, 0x39); r = 1 / 1.25, 5.7 -> 6 */
    static const uint32_t tie[] = {0x40E3FFFF};
    expect_block("b by the reciprocal", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, tie, 1, NULL, 0), 0x3A,
                 CODES(0x7, 0x0));
    /* amax 0 and tiny amax: c clamped up to 2^-6 (0x08), r = 64 */
    static const uint32_t zeros[] = {0x00000000, 0x80000000}, tiny[] = {0x3C23D70A};
    expect_block("zeros", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, zeros, 2, NULL, 0), 0x08, CODES(0x0, 0x8, 0x0));
    expect_block("amax 0.01", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, tiny, 1, NULL, 0), 0x08, CODES(0x1, 0x0));
    /* amax 10752: c = 1792 clamped to 448 (0x7E); 10752 / 448 = 24 saturates, 1 / 448 -> 0 */
    static const uint32_t big[] = {0x46280000, 0x3F800000};
    expect_block("c clamped to 448", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, big, 2, NULL, 0), 0x7E,
                 CODES(0x7, 0x0, 0x0));
    /* g 0: c = inf -> 448, r = inf: 6 -> inf -> 6, 0 * inf = NaN -> 0x4, -1 -> -6 */
    static const uint32_t g0_values[] = {0x40C00000, 0x00000000, 0xBF800000};
    expect_block("g 0", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, g0_values, 3, &zero, 0), 0x7E,
                 CODES(0x7, 0x4, 0xF, 0x4));
    /* g 0 on zeros: c = 0 / 0 = NaN (0x7F); g NaN: NaN; a NaN in the block: NaN; every element 0x4 */
    expect_block("g 0, zeros", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, zeros, 2, &zero, 0), 0x7F,
                 CODES(0x4, 0x4, 0x4));
    expect_block("g NaN", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, values, 8, &nan, 0), 0x7F,
                 CODES(0x4, 0x4, 0x4, 0x4, 0x4, 0x4, 0x4, 0x4, 0x4));
    static const uint32_t with_nan[] = {0x3F800000, 0xFFC00000};
    expect_block("a NaN", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, with_nan, 2, NULL, 0), 0x7F,
                 CODES(0x4, 0x4, 0x4));
    /* an infinity: c = inf -> 448, r = f32(1/448): inf -> 6, 1 -> 0, -inf -> -6 */
    static const uint32_t with_inf[] = {0x7F800000, 0x3F800000, 0xFF800000};
    expect_block("an infinity", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, with_inf, 3, NULL, 0), 0x7E,
                 CODES(0x7, 0x0, 0xF, 0x0));
    /* g -1: c = -1 clamped up to 2^-6; r = -1 / 2^-6 = -64: 6 -> -6, 0.01 -> -0.64 -> -0.5 */
    static const uint32_t negative_g[] = {0x40C00000, 0x3C23D70A};
    expect_block("g -1", quantize_block(EW_BLOCKS_NVFP4, EW_F4E2M1, negative_g, 2, &minus_one, 0), 0x08,
                 CODES(0xF, 0x9, 0x8));
}

/* g NULL and g = 1 give the same bits, quantize and dequantize, on random blocks. */
static void test_nvfp4_null_global_scale_is_one(void **state)
{
    (void)state;
    enum { ROWS = 37, COLS = 64 };
    static uint32_t x[ROWS * COLS];
    for (size_t i = 0; i < ROWS * COLS; i++) {
        const uint64_t r = next_random();
        x[i] = r % 8 == 0 ? (uint32_t)(r >> 32) /* any bits, NaN and inf included */
                          : ref_f32_bits(ldexpf((float)(int32_t)(r >> 32) / 2147483648.0f, (int)(r % 40) - 20));
    }
    static uint8_t q_null[ROWS * COLS / 2], q_one[ROWS * COLS / 2], s_null[256 * 4], s_one[256 * 4];
    const float one = 1.0f;
    for (unsigned options = 0; options <= EW_BLOCKS_SWIZZLED; options += EW_BLOCKS_SWIZZLED) {
        ref_quantize_blocks(EW_BLOCKS_NVFP4, EW_F4E2M1, EW_F32, ROWS, COLS, q_null, s_null, x, NULL, options);
        ref_quantize_blocks(EW_BLOCKS_NVFP4, EW_F4E2M1, EW_F32, ROWS, COLS, q_one, s_one, x, &one, options);
        assert_memory_equal(q_null, q_one, sizeof q_null);
        assert_memory_equal(s_null, s_one, options ? 256 * 4 : ROWS * COLS / 16);
        static uint32_t y_null[ROWS * COLS], y_one[ROWS * COLS];
        ref_dequantize_blocks(EW_BLOCKS_NVFP4, EW_F32, EW_F4E2M1, ROWS, COLS, y_null, q_null, s_null, NULL, options);
        ref_dequantize_blocks(EW_BLOCKS_NVFP4, EW_F32, EW_F4E2M1, ROWS, COLS, y_one, q_null, s_null, &one, options);
        assert_memory_equal(y_null, y_one, sizeof y_null);
    }
}

/* §11.4 by hand: one element of a block, dequantized to each output. */
static void test_dequantize_blocks_by_hand(void **state)
{
    (void)state;
    static const struct {
        ew_block_format_t format;
        ew_dtype_t in;
        uint8_t q, scale;
        uint32_t g; /* 0xFFFFFFFF: NULL (never an f32 the rows use) */
        uint32_t f32;
        uint16_t bf16, f16;
    } rows[] = {
        {EW_BLOCKS_MX, EW_F8E4M3, 0x38, 127, ~0u, 0x3F800000, 0x3F80, 0x3C00},  /* 1 * 2^0 */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x38, 0, ~0u, 0x00400000, 0x0040, 0x0000},    /* s = 0: 2^-127 */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x38, 255, ~0u, 0x7FFFFFFF, 0x7FFF, 0x7FFF},  /* s = 255: NaN */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x00, 255, ~0u, 0x7FFFFFFF, 0x7FFF, 0x7FFF},  /* 0 * NaN */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x7E, 254, ~0u, 0x7F800000, 0x7F80, 0x7C00},  /* 448 * 2^127 overflows */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x7F, 127, ~0u, 0x7FFFFFFF, 0x7FFF, 0x7FFF},  /* e4m3 NaN */
        {EW_BLOCKS_MX, EW_F8E4M3, 0xFF, 127, ~0u, 0x7FFFFFFF, 0x7FFF, 0x7FFF},
        {EW_BLOCKS_MX, EW_F8E4M3, 0x01, 143, ~0u, 0x43000000, 0x4300, 0x5800},  /* 2^-9 * 2^16 = 128 */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x80, 143, ~0u, 0x80000000, 0x8000, 0x8000},  /* -0 */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x39, 103, ~0u, 0x33900000, 0x3390, 0x0001},  /* 1.125 * 2^-24: f16 rounds */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x01, 0, ~0u, 0x00002000, 0x0000, 0x0000},    /* 2^-136: bf16 rounds to 0 */
        {EW_BLOCKS_MX, EW_F8E4M3, 0x05, 0, ~0u, 0x0000A000, 0x0001, 0x0000},    /* 5 * 2^-136: up to 2^-133 */
        {EW_BLOCKS_MX, EW_F8E5M2, 0x7C, 127, ~0u, 0x7F800000, 0x7F80, 0x7C00},  /* inf */
        {EW_BLOCKS_MX, EW_F8E5M2, 0xFC, 0, ~0u, 0xFF800000, 0xFF80, 0xFC00},    /* -inf * 2^-127 */
        {EW_BLOCKS_MX, EW_F8E5M2, 0x7D, 127, ~0u, 0x7FFFFFFF, 0x7FFF, 0x7FFF},  /* e5m2 NaN */
        {EW_BLOCKS_MX, EW_F8E5M2, 0x7C, 255, ~0u, 0x7FFFFFFF, 0x7FFF, 0x7FFF},  /* inf * NaN */
        {EW_BLOCKS_MX, EW_F4E2M1, 0x72, 128, ~0u, 0x40000000, 0x4000, 0x4000},  /* code 2 (1) * 2 */
        {EW_BLOCKS_MX, EW_F4E2M1, 0xF8, 127, ~0u, 0x80000000, 0x8000, 0x8000},  /* code 8: -0 */
        {EW_BLOCKS_NVFP4, EW_F4E2M1, 0x72, 0x38, ~0u, 0x3F800000, 0x3F80, 0x3C00},       /* 1 * 1 */
        {EW_BLOCKS_NVFP4, EW_F4E2M1, 0x72, 0x38, 0x40400000, 0x40400000, 0x4040, 0x4200}, /* g 3 */
        {EW_BLOCKS_NVFP4, EW_F4E2M1, 0x77, 0x7F, ~0u, 0x7FFFFFFF, 0x7FFF, 0x7FFF},       /* scale NaN */
        {EW_BLOCKS_NVFP4, EW_F4E2M1, 0x77, 0x08, 0x03800000, 0x01C00000, 0x01C0, 0x0000}, /* 6 * (2^-120 * 2^-6) */
        {EW_BLOCKS_NVFP4, EW_F4E2M1, 0x72, 0x00, 0x7F800000, 0x7FFFFFFF, 0x7FFF, 0x7FFF}, /* inf * 0 first: NaN */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const int block = ref_block_size(rows[i].format);
        uint8_t q[32] = {0};
        q[0] = rows[i].q;
        const float g = F(rows[i].g);
        const float *gp = rows[i].g == ~0u ? NULL : &g;
        uint32_t out32[32];
        uint16_t out16[32];
        ref_dequantize_blocks(rows[i].format, EW_F32, rows[i].in, 1, block, out32, q, &rows[i].scale, gp, 0);
        if (out32[0] != rows[i].f32)
            fail_msg("row %zu: f32 0x%08X, expected 0x%08X", i, (unsigned)out32[0], (unsigned)rows[i].f32);
        ref_dequantize_blocks(rows[i].format, EW_BF16, rows[i].in, 1, block, out16, q, &rows[i].scale, gp, 0);
        if (out16[0] != rows[i].bf16)
            fail_msg("row %zu: bf16 0x%04X, expected 0x%04X", i, (unsigned)out16[0], (unsigned)rows[i].bf16);
        ref_dequantize_blocks(rows[i].format, EW_F16, rows[i].in, 1, block, out16, q, &rows[i].scale, gp, 0);
        if (out16[0] != rows[i].f16)
            fail_msg("row %zu: f16 0x%04X, expected 0x%04X", i, (unsigned)out16[0], (unsigned)rows[i].f16);
    }
    /* e2m1's second element, the high nibble: 0x72 holds 1 then 6; 0xF8 holds -0 then -6 */
    uint8_t q[16] = {0x72, 0xF8};
    uint32_t out[32];
    const uint8_t s = 128;
    ref_dequantize_blocks(EW_BLOCKS_MX, EW_F32, EW_F4E2M1, 1, 32, out, q, &s, NULL, 0);
    assert_int_equal(out[0], 0x40000000);
    assert_int_equal(out[1], 0x41400000); /* 12 */
    assert_int_equal(out[2], 0x80000000);
    assert_int_equal(out[3], 0xC1400000); /* -12 */
    assert_int_equal(out[4], 0x00000000);
}

/* ew_block_scales_shape's rule by hand (§11.5). */
static void test_block_scales_shape_by_hand(void **state)
{
    (void)state;
    static const struct {
        ew_block_format_t format;
        int64_t rows, cols, row_major_cols, swizzled_rows, swizzled_cols;
    } rows[] = {
        {EW_BLOCKS_MX, 0, 0, 0, 0, 0},          {EW_BLOCKS_MX, 5, 0, 0, 128, 0},
        {EW_BLOCKS_MX, 0, 64, 2, 0, 4},         {EW_BLOCKS_MX, 1, 32, 1, 128, 4},
        {EW_BLOCKS_MX, 129, 96, 3, 256, 4},     {EW_BLOCKS_MX, 300, 160, 5, 384, 8},
        {EW_BLOCKS_MX, 128, 4096, 128, 128, 128}, {EW_BLOCKS_NVFP4, 1, 16, 1, 128, 4},
        {EW_BLOCKS_NVFP4, 300, 48, 3, 384, 4},  {EW_BLOCKS_NVFP4, 127, 80, 5, 128, 8},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int64_t r, c;
        ref_block_scales_shape(rows[i].format, rows[i].rows, rows[i].cols, 0, &r, &c);
        assert_int_equal(r, rows[i].rows);
        assert_int_equal(c, rows[i].row_major_cols);
        ref_block_scales_shape(rows[i].format, rows[i].rows, rows[i].cols, EW_BLOCKS_SWIZZLED, &r, &c);
        assert_int_equal(r, rows[i].swizzled_rows);
        assert_int_equal(c, rows[i].swizzled_cols);
        ref_block_scales_shape(rows[i].format, rows[i].rows, rows[i].cols, EW_BLOCKS_ROUND_UP, &r, &c);
        assert_int_equal(c, rows[i].row_major_cols); /* only EW_BLOCKS_SWIZZLED changes the shape */
    }
}

/* torchao 0.18's to_blocked (mx_formats/utils.py), transliterated: pad to (ceil(R/128)*128,
 * ceil(C/4)*4) with zeros, view (n_row_blocks, 128, n_col_blocks, 4), permute(0, 2, 1, 3), reshape
 * (-1, 4, 32, 4), transpose(1, 2), reshape (-1, 32, 16), flatten. order[i] receives the padded
 * matrix's (row * padded_cols + col) of flat element i. */
static void torchao_to_blocked_order(int64_t rows, int64_t cols, int64_t *order)
{
    const int64_t n_row_blocks = (rows + 127) / 128, n_col_blocks = (cols + 3) / 4, padded_cols = n_col_blocks * 4;
    int64_t i = 0;
    /* after the permute the dims are (row block a, col block b, row in tile 128, col in tile 4); the
     * reshape splits the 128 rows as (4 groups p, 32 rows q) with row = 32 p + q; the transpose swaps
     * p and q; the flatten walks (a, b), q, p, c */
    for (int64_t a = 0; a < n_row_blocks; a++)
        for (int64_t b = 0; b < n_col_blocks; b++)
            for (int64_t q = 0; q < 32; q++)
                for (int64_t p = 0; p < 4; p++)
                    for (int64_t c = 0; c < 4; c++)
                        order[i++] = (a * 128 + p * 32 + q) * padded_cols + (b * 4 + c);
}

/* §11.5: ref_block_scale_index against the transliteration, for every scale and padding position. */
static void test_swizzle_matches_torchao(void **state)
{
    (void)state;
    static const int64_t row_counts[] = {1, 2, 31, 32, 33, 127, 128, 129, 255, 256, 300};
    static const int64_t block_counts[] = {1, 2, 3, 4, 5, 7, 8, 9};
    for (size_t ri = 0; ri < sizeof row_counts / sizeof row_counts[0]; ri++)
        for (size_t ci = 0; ci < sizeof block_counts / sizeof block_counts[0]; ci++) {
            const int64_t rows = row_counts[ri], row_blocks = block_counts[ci];
            int64_t scale_rows, scale_cols;
            ref_block_scales_shape(EW_BLOCKS_MX, rows, row_blocks * 32, EW_BLOCKS_SWIZZLED, &scale_rows,
                                   &scale_cols);
            const int64_t total = scale_rows * scale_cols;
            int64_t *order = checked_malloc((size_t)total * sizeof *order);
            int64_t *position = checked_malloc((size_t)total * sizeof *position);
            torchao_to_blocked_order(rows, row_blocks, order);
            for (int64_t i = 0; i < total; i++)
                position[order[i]] = i; /* where padded element (r, k) lands */
            for (int64_t r = 0; r < scale_rows; r++)
                for (int64_t k = 0; k < scale_cols; k++) {
                    const int64_t want = position[r * scale_cols + k];
                    const int64_t got = ref_block_scale_index(r, k, row_blocks, EW_BLOCKS_SWIZZLED);
                    if (got != want)
                        fail_msg("rows %lld, %lld blocks: scale (%lld, %lld) at %lld, to_blocked puts it at %lld",
                                 (long long)rows, (long long)row_blocks, (long long)r, (long long)k,
                                 (long long)got, (long long)want);
                }
            free(order);
            free(position);
        }
    /* row-major: r * row_blocks + k */
    assert_int_equal(ref_block_scale_index(3, 2, 5, 0), 17);
    assert_int_equal(ref_block_scale_index(3, 2, 5, EW_BLOCKS_ROUND_UP), 17);
    /* by hand: rows 300, 5 blocks (2 tiles across): (0, 0) 0; (1, 0) 16; (32, 0) 4; (0, 3) 3; (0, 4) 512;
     * (128, 0) 1024; (299, 4) = tile (2, 1) 2560 + (299 % 32 = 11) * 16 + (43 / 32 = 1) * 4 + 0 = 2740 */
    assert_int_equal(ref_block_scale_index(0, 0, 5, EW_BLOCKS_SWIZZLED), 0);
    assert_int_equal(ref_block_scale_index(1, 0, 5, EW_BLOCKS_SWIZZLED), 16);
    assert_int_equal(ref_block_scale_index(32, 0, 5, EW_BLOCKS_SWIZZLED), 4);
    assert_int_equal(ref_block_scale_index(0, 3, 5, EW_BLOCKS_SWIZZLED), 3);
    assert_int_equal(ref_block_scale_index(0, 4, 5, EW_BLOCKS_SWIZZLED), 512);
    assert_int_equal(ref_block_scale_index(128, 0, 5, EW_BLOCKS_SWIZZLED), 1024);
    assert_int_equal(ref_block_scale_index(299, 4, 5, EW_BLOCKS_SWIZZLED), 2740);
}

/* Swizzled quantize: the same scales as row-major, moved; every padding byte written 0; elements equal. */
static void test_swizzled_quantize_pads_with_zero(void **state)
{
    (void)state;
    static const int64_t shapes[][2] = {{1, 32}, {127, 96}, {129, 96}, {300, 160}, {5, 4096}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int64_t rows = shapes[i][0], cols = shapes[i][1], row_blocks = cols / 32;
        float *x = checked_malloc((size_t)(rows * cols) * sizeof *x);
        for (int64_t k = 0; k < rows * cols; k++)
            x[k] = ldexpf((float)(int32_t)(next_random() >> 32) / 2147483648.0f, (int)(k / 32 % 50) - 25);
        int64_t scale_rows, scale_cols;
        ref_block_scales_shape(EW_BLOCKS_MX, rows, cols, EW_BLOCKS_SWIZZLED, &scale_rows, &scale_cols);
        uint8_t *plain = checked_malloc((size_t)(rows * row_blocks));
        uint8_t *swizzled = checked_malloc((size_t)(scale_rows * scale_cols));
        uint8_t *q_plain = checked_malloc((size_t)(rows * cols)), *q_swizzled = checked_malloc((size_t)(rows * cols));
        memset(swizzled, 0xA5, (size_t)(scale_rows * scale_cols));
        ref_quantize_blocks(EW_BLOCKS_MX, EW_F8E4M3, EW_F32, rows, cols, q_plain, plain, x, NULL, 0);
        ref_quantize_blocks(EW_BLOCKS_MX, EW_F8E4M3, EW_F32, rows, cols, q_swizzled, swizzled, x, NULL,
                            EW_BLOCKS_SWIZZLED);
        assert_memory_equal(q_plain, q_swizzled, (size_t)(rows * cols));
        bool *used = calloc((size_t)(scale_rows * scale_cols), sizeof *used);
        assert_non_null(used);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < row_blocks; k++) {
                const int64_t at = ref_block_scale_index(r, k, row_blocks, EW_BLOCKS_SWIZZLED);
                assert_false(used[at]);
                used[at] = true;
                assert_int_equal(swizzled[at], plain[r * row_blocks + k]);
            }
        for (int64_t at = 0; at < scale_rows * scale_cols; at++)
            if (!used[at])
                assert_int_equal(swizzled[at], 0);
        free(used);
        free(x);
        free(plain);
        free(swizzled);
        free(q_plain);
        free(q_swizzled);
    }
}


/* §11.2's note: from bf16 and f16 data, d = amax * f32(1/max) is a power of two or lies far above one
 * (more than 64 f32 ulps of log2's integer part), so a log2f that is correct to a few ulps, ceiled,
 * gives the exact rule's exponent; every positive finite amax of the two, for each element format.
 * (For f32 data it can come within an ulp: 0x1.c00002p-53 for e4m3, d = 2^-61 (1 + 2^-23), whose
 * log2f is -61 where the rule's exponent is -60.) */
static void test_round_up_exponent_far_from_log2_rounding(void **state)
{
    (void)state;
    static const ew_dtype_t elements[] = {EW_F8E4M3, EW_F8E5M2, EW_F4E2M1};
    static const float maxima[] = {448.0f, 57344.0f, 6.0f};
    mismatch_log log = {"round_up_exponent_far_from_log2_rounding", 0};
    for (int wide = 0; wide < 2; wide++)
        for (uint32_t bits = 1; bits < 0x7C00u + (wide == 0 ? 0x7F80u - 0x7C00u : 0); bits++) {
            const float amax = wide == 0 ? F(bits << 16) : ref_f16_to_f32((uint16_t)bits);
            for (size_t e = 0; e < 3; e++) {
                const float d = amax * (1.0f / maxima[e]);
                if (d == 0.0f)
                    continue;
                const double l = log2((double)d), k = floor(l);
                const int exponent = (int)ref_e8m0_scale_round_up(amax, elements[e]) - 127;
                if (l == k) {
                    expect_bits(&log, (uint64_t)(int64_t)exponent, (uint64_t)(int64_t)(k < -127 ? -127 : k),
                                "a power of two", bits);
                    continue;
                }
                const double ulp = fabs(k) >= 1.0 ? ldexp(1.0, ilogb(fabs(k)) - 23) : 0x1p-149;
                if (l - k <= 64 * ulp)
                    expect_bits(&log, bits, 0, "d too close above a power of two", (uint64_t)e);
                const double c = k + 1 < -127 ? -127 : k + 1;
                expect_bits(&log, (uint64_t)(int64_t)exponent, (uint64_t)(int64_t)c, "the exponent", bits);
            }
        }
    /* the f32 case of the comment */
    assert_int_equal(ref_e8m0_scale_round_up(F(0x3FE00001) * 0x1p-53f, EW_F8E4M3), 127 - 60);
    assert_true(log2f(F(0x3FE00001) * 0x1p-53f * (1.0f / 448.0f)) == -61.0f);
    finish(&log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nearest_search_equals_scan),
        cmocka_unit_test(test_16bit_widening_all_patterns),
        cmocka_unit_test(test_16bit_round_trip_all_patterns),
        cmocka_unit_test(test_fp8_widening_and_round_trip_all_patterns),
        cmocka_unit_test(test_f32_narrowing_matches_brute_force),
        cmocka_unit_test(test_casts_from_small_dtypes_all_patterns),
        cmocka_unit_test(test_casts_from_wide_dtypes),
        cmocka_unit_test(test_relu_all_16bit_and_8bit_patterns),
        cmocka_unit_test(test_relu_wide_dtypes),
        cmocka_unit_test(test_add_mul_all_8bit_pairs),
        cmocka_unit_test(test_add_mul_wide_integers),
        cmocka_unit_test(test_add_mul_16bit_floats),
        cmocka_unit_test(test_add_mul_wide_floats),
        cmocka_unit_test(test_scale_add_integers_and_bool),
        cmocka_unit_test(test_scale_add_floats),
        cmocka_unit_test(test_f64_nan_operand_order),
        cmocka_unit_test(test_n_zero_and_exact_extent),
        cmocka_unit_test(test_in_place),
        cmocka_unit_test(test_edge_table),
        cmocka_unit_test(test_edge_table_matches_doc),
        cmocka_unit_test(test_quantize_matches_formula),
        cmocka_unit_test(test_dequantize_all_codes),
        cmocka_unit_test(test_amax_by_hand),
        cmocka_unit_test(test_scaled_table),
        cmocka_unit_test(test_scaled_table_matches_doc),
        cmocka_unit_test(test_block_table_matches_doc),
        cmocka_unit_test(test_e2m1_by_hand),
        cmocka_unit_test(test_e2m1_matches_scan_and_torchao),
        cmocka_unit_test(test_e8m0_floor_by_hand),
        cmocka_unit_test(test_e8m0_round_up_by_hand),
        cmocka_unit_test(test_round_up_exponent_far_from_log2_rounding),
        cmocka_unit_test(test_mx_blocks_by_hand),
        cmocka_unit_test(test_nvfp4_blocks_by_hand),
        cmocka_unit_test(test_nvfp4_null_global_scale_is_one),
        cmocka_unit_test(test_dequantize_blocks_by_hand),
        cmocka_unit_test(test_block_scales_shape_by_hand),
        cmocka_unit_test(test_swizzle_matches_torchao),
        cmocka_unit_test(test_swizzled_quantize_pads_with_zero),
    };
    return cmocka_run_group_tests_name("reference", tests, setup_tables, teardown_tables);
}
