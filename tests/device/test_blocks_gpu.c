/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The block-scaled casts on the GPU against the CPU reference (tests/ref), bit for bit, elements and
 * scales (the swizzled layout's zero padding included): ew_quantize_blocks for every format, element
 * dtype and input dtype, both MX scale rules, both scale layouts; ew_dequantize_blocks for every
 * format, element dtype and output dtype, of the quantized data (the round trip) and of arbitrary
 * codes and scales (NaN codes, scales 0, 254, 255, negative and NaN e4m3 scales). Shapes from empty
 * (rows or cols 0) to 300 x 4096; x, out, q and the scales at element offsets within 16 bytes (so
 * the kernels' vector and element paths both run); NVFP4 with the global scale NULL and in device
 * memory (1, a full-range amax / (448 * 6), others; 0, -1, NaN, infinities); and an NVFP4 quantize and
 * dequantize captured in a CUDA graph, replayed after the global scale changed in device memory.
 *
 * Inputs: blocks of random values at a random magnitude each, and blocks that are all zeros, hold a NaN
 * or an infinity, are subnormals of the input dtype, hold max * 2^k (the element format's max at a
 * power of two, with exact ties of the element grid around it), are tiny, or are gu_fill_random's
 * special values. Outputs and scales start poisoned (again with a second poison where an expected
 * byte equals the first), with guard bytes on both sides; inputs must stay unchanged.
 * EW_TEST_SCALE=small leaves out 300 rows and 4096 columns (for compute-sanitizer).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ref/ref.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static const ew_dtype_t wides[] = {EW_F16, EW_BF16, EW_F32}; /* x of quantize, out of dequantize */

/* One test: a format, its element dtype (q's) and the f16/bf16/f32 side, one direction. */
typedef struct {
    ew_block_format_t format;
    ew_dtype_t element, wide;
    int quantize;
    char name[80];
} case_t;

static case_t cases[2 * (3 + 1) * COUNT(wides)];
static size_t case_count;

static const char *element_name(ew_dtype_t t) { return t == EW_F4E2M1 ? "f4e2m1" : ew_dtype_name(t); }
static const char *format_name(ew_block_format_t f) { return f == EW_BLOCKS_MX ? "MX" : "NVFP4"; }

/* Bytes of n elements of q. */
static int64_t element_bytes(ew_dtype_t element, int64_t n) { return element == EW_F4E2M1 ? n / 2 : n; }
/* The dtypes of the device buffers: e2m1 bytes as u8; scales e8m0 (MX) or e4m3 (NVFP4). */
static ew_dtype_t q_buffer_dtype(ew_dtype_t element) { return element == EW_F4E2M1 ? EW_U8 : element; }
static ew_dtype_t scale_dtype(ew_block_format_t f) { return f == EW_BLOCKS_MX ? EW_F8E8M0 : EW_F8E4M3; }

static float element_max(ew_dtype_t element)
{
    return element == EW_F8E4M3 ? 448.0f : element == EW_F8E5M2 ? 57344.0f : 6.0f;
}

/* ---- shapes ---- */

static const int64_t all_rows[] = {0, 1, 129, 300};
static const int64_t mx_cols[] = {0, 32, 64, 96, 4096};
static const int64_t nvfp4_cols[] = {0, 16, 48, 64, 96, 4096};

static int shape_used(int64_t rows, int64_t cols) { return !gu_small_scale() || (rows < 300 && cols < 4096); }
static int64_t max_rows(void) { return gu_small_scale() ? 129 : 300; }
static int64_t max_cols(void) { return gu_small_scale() ? 96 : 4096; }

static void shape_list(ew_block_format_t format, const int64_t **cols, size_t *count)
{
    *cols = format == EW_BLOCKS_MX ? mx_cols : nvfp4_cols;
    *count = format == EW_BLOCKS_MX ? COUNT(mx_cols) : COUNT(nvfp4_cols);
}

/* The library's scale shape, which must be the reference's. */
static int64_t scale_bytes(ew_block_format_t format, int64_t rows, int64_t cols, unsigned options)
{
    int64_t r = -1, c = -1, ref_r, ref_c;
    GU_EW(ew_block_scales_shape(format, rows, cols, options, &r, &c));
    ref_block_scales_shape(format, rows, cols, options, &ref_r, &ref_c);
    if (r != ref_r || c != ref_c)
        GU_FAIL("ew_block_scales_shape(%s, %" PRId64 ", %" PRId64 ", 0x%x) = %" PRId64 " x %" PRId64
                ", expected %" PRId64 " x %" PRId64,
                format_name(format), rows, cols, options, r, c, ref_r, ref_c);
    return r * c;
}

/* ---- inputs ---- */

static double uniform(gu_rng_t *rng) { return (double)(gu_rng_next(rng) >> 11) * 0x1p-53; }

/* About normal: the sum of four uniforms, centred, with a random sign. */
static double about_normal(gu_rng_t *rng)
{
    return (uniform(rng) + uniform(rng) + uniform(rng) + uniform(rng) - 2.0) * 1.7;
}

static void store(ew_dtype_t dtype, unsigned char *p, double value) { ref_cast(dtype, EW_F64, 1, p, &value); }

static void store_bits(ew_dtype_t dtype, unsigned char *p, uint32_t bits)
{
    if (dtype == EW_F32)
        memcpy(p, &bits, 4);
    else {
        const uint16_t half = (uint16_t)bits;
        memcpy(p, &half, 2);
    }
}

/* A subnormal of dtype with a random sign (f16 and bf16 raw bits, f32 raw bits). */
static uint32_t subnormal_bits(ew_dtype_t dtype, gu_rng_t *rng)
{
    const uint64_t r = gu_rng_next(rng);
    switch (dtype) {
    case EW_F16: return (uint32_t)(1 + r % 0x3FF) | (r >> 40 & 1 ? 0x8000u : 0);
    case EW_BF16: return (uint32_t)(1 + r % 0x7F) | (r >> 40 & 1 ? 0x8000u : 0);
    default: return (uint32_t)(1 + r % 0x7FFFFF) | (r >> 40 & 1 ? 0x80000000u : 0);
    }
}

enum { KIND_ZEROS, KIND_NAN, KIND_INF, KIND_SUBNORMAL, KIND_MAX_POW2, KIND_SPECIALS, KIND_TINY };

/* rows x cols elements of dtype, block by block: one kind a block (mostly random values at a random
 * magnitude), for the element format `element` (its max for the max * 2^k blocks). */
static void fill_blocks(ew_dtype_t dtype, int block, ew_dtype_t element, int64_t n, unsigned char *host,
                        gu_rng_t *rng)
{
    const size_t size = ew_dtype_size(dtype);
    const int narrow = dtype == EW_F16; /* f16: exponents -24 .. 15 */
    const int lo = narrow ? -20 : -60, hi = narrow ? 12 : 60;
    for (int64_t first = 0; first < n; first += block) {
        unsigned char *b = host + (size_t)first * size;
        const uint64_t pick = gu_rng_next(rng);
        const unsigned kind = (unsigned)(pick % 16);
        const int at = (int)((pick >> 8) % (uint64_t)block);
        const int e = lo + (int)((pick >> 20) % (uint64_t)(hi - lo + 1));
        for (int i = 0; i < block; ++i)
            store(dtype, b + (size_t)i * size, about_normal(rng) * ldexp(1.0, e));
        switch (kind) {
        case KIND_ZEROS:
            for (int i = 0; i < block; ++i)
                store(dtype, b + (size_t)i * size, gu_rng_next(rng) & 1 ? -0.0 : 0.0);
            break;
        case KIND_NAN:
            store(dtype, b + (size_t)at * size, (pick >> 40) & 1 ? -NAN : NAN);
            break;
        case KIND_INF:
            store(dtype, b + (size_t)at * size, (pick >> 40) & 1 ? -INFINITY : INFINITY);
            if ((pick >> 41) & 1) /* the other infinity too */
                store(dtype, b + (size_t)((at + 1) % block) * size, (pick >> 40) & 1 ? INFINITY : -INFINITY);
            break;
        case KIND_SUBNORMAL:
            for (int i = 0; i < block; ++i)
                store_bits(dtype, b + (size_t)i * size, subnormal_bits(dtype, rng));
            break;
        case KIND_MAX_POW2: {
            /* max * 2^k at `at`, the rest multiples of max * 2^k / 64: exact ties of the element grid */
            const int k = narrow ? -(int)((pick >> 20) % 11) : (int)((pick >> 20) % 61) - 30;
            const double top = (double)element_max(element) * ldexp(1.0, k);
            for (int i = 0; i < block; ++i)
                store(dtype, b + (size_t)i * size, top * (double)((int)(gu_rng_next(rng) % 129) - 64) / 64.0);
            store(dtype, b + (size_t)at * size, (pick >> 40) & 1 ? -top : top);
            break;
        }
        case KIND_SPECIALS:
            gu_fill_random(dtype, block, b, rng);
            break;
        case KIND_TINY: /* near the smallest normals: subnormal products and quotients */
            for (int i = 0; i < block; ++i)
                store(dtype, b + (size_t)i * size, about_normal(rng) * ldexp(1.0, narrow ? -14 : -125));
            break;
        default: break; /* random values at magnitude 2^e */
        }
    }
}

/* Random q codes and scales for the dequantize tests: every byte; MX scales also 0, 1, 127, 254, 255
 * and NVFP4 scales NaN, 0, negative at the front. */
static void fill_codes(int64_t bytes, unsigned char *host, gu_rng_t *rng)
{
    for (int64_t i = 0; i < bytes; ++i)
        host[i] = (unsigned char)gu_rng_next(rng);
}

static void fill_scales(ew_block_format_t format, int64_t bytes, unsigned char *host, gu_rng_t *rng)
{
    static const unsigned char mx_front[] = {0, 255, 254, 1, 127, 128, 200, 50};
    static const unsigned char nvfp4_front[] = {0x7F, 0x00, 0xFF, 0x38, 0xB8, 0x7E, 0x08, 0x01};
    const unsigned char *front = format == EW_BLOCKS_MX ? mx_front : nvfp4_front;
    for (int64_t i = 0; i < bytes; ++i) {
        const uint64_t r = gu_rng_next(rng);
        if (format == EW_BLOCKS_MX)
            host[i] = r % 4 == 0 ? (unsigned char)(r >> 8) : (unsigned char)(100 + (r >> 8) % 55); /* mostly moderate */
        else
            host[i] = (unsigned char)(r >> 8);
    }
    for (int64_t i = 0; i < bytes && i < 8; ++i)
        host[i] = front[i];
}

/* ---- buffers of a test ---- */

typedef struct {
    gu_buffer_t *x;      /* quantize's input (wide) */
    gu_buffer_t *q;      /* quantize's output, dequantize's input */
    gu_buffer_t *scales;
    gu_buffer_t *y;      /* dequantize's output (wide) */
    float *g;            /* the global scale in device memory */
    /* host scratch, reused by every call of a test: an image to load, the expected q, scales and y */
    unsigned char *image, *q_expected, *s_expected, *y_expected;
} buffers_t;

/* Buffers for up to `elements` elements (x and y: 4 bytes each at most) and `scales` scale bytes. */
static buffers_t buffers_sized(const case_t *c, int64_t elements, int64_t scales)
{
    buffers_t b = {gu_buffer_new(c->wide, elements),
                   gu_buffer_new(q_buffer_dtype(c->element), element_bytes(c->element, elements)),
                   gu_buffer_new(scale_dtype(c->format), scales),
                   NULL,
                   gu_at(gu_buffer_new(EW_F32, 1), 0),
                   gu_host_alloc((size_t)elements * 4 + 2 * GU_MAX_OFFSET_BYTES),
                   gu_host_alloc((size_t)elements),
                   gu_host_alloc((size_t)scales),
                   gu_host_alloc((size_t)elements * 4)};
    return b;
}

static buffers_t buffers_new(const case_t *c)
{
    int64_t scales = 0;
    for (unsigned options = 0; options <= EW_BLOCKS_SWIZZLED; options += EW_BLOCKS_SWIZZLED) {
        const int64_t bytes = scale_bytes(c->format, max_rows(), max_cols(), options);
        scales = bytes > scales ? bytes : scales;
    }
    return buffers_sized(c, max_rows() * max_cols(), scales);
}

/* Element offsets: x and y within 16 bytes of their dtype, q and the scales a few bytes; k picks. */
static int offset_of(const gu_buffer_t *buffer, int k)
{
    const int count = gu_offset_count(buffer->dtype);
    return count > 4 ? k % 5 : k % count;
}

static const gu_inputs_t no_inputs = {0, {EW_F32}, {NULL}};

/* Loads `count` elements of host data so that the call's element 0 is at element offset `offset`
 * (image: scratch of the buffer's region). */
static void load_at(gu_buffer_t *buffer, unsigned char *image, int offset, const unsigned char *data, int64_t count)
{
    const int64_t region = gu_buffer_region_elems(buffer);
    memset(image, GU_POISON, (size_t)region * buffer->elem_size);
    memcpy(image + (size_t)offset * buffer->elem_size, data, (size_t)count * buffer->elem_size);
    gu_buffer_load(buffer, image, region);
}

/* A buffer's image where a checked call wrote `expected` at `offset`, so that later calls can check the
 * buffer unchanged. */
static void adopt(gu_buffer_t *buffer, int offset, const void *expected, int64_t count)
{
    memcpy(gu_image_at(buffer, offset), expected, (size_t)count * buffer->elem_size);
}

/* The global scale of a call: NULL or the device float set to `value`. */
typedef struct {
    int given;
    float value;
} global_t;

static const float *global_pointer(const buffers_t *b, global_t g)
{
    if (!g.given)
        return NULL;
    GU_CUDA(cudaMemcpy(b->g, &g.value, sizeof g.value, cudaMemcpyHostToDevice));
    return b->g;
}

/* ---- one dequantize call, checked ---- */

/* Dequantizes q (already on the device at q_offset, scales at s_offset, both equal to the host arrays)
 * to out_dtype at y_offset and compares with the reference; q and the scales must stay as they are. */
static void check_dequantize(const case_t *c, buffers_t *b, ew_dtype_t out_dtype, int64_t rows, int64_t cols,
                             unsigned options, global_t g, int q_offset, int s_offset, int y_offset,
                             const unsigned char *q_host, const unsigned char *s_host, const char *context)
{
    const int64_t n = rows * cols;
    const float *gp = global_pointer(b, g);
    unsigned char *expected = b->y_expected;
    ref_dequantize_blocks(c->format, out_dtype, c->element, rows, cols, expected, q_host, s_host,
                          g.given ? &g.value : NULL, options);
    char what[256];
    snprintf(what, sizeof what, "%s; dequantize to %s at offset %d (q %d, scales %d)", context,
             ew_dtype_name(out_dtype), y_offset, q_offset, s_offset);
    for (int round = 0; round < 2; ++round) {
        GU_EW(ew_dequantize_blocks(gu_handle(), c->format, out_dtype, c->element, rows, cols, gu_at(b->y, y_offset),
                                   gu_at(b->q, q_offset), gu_at(b->scales, s_offset), gp, options, NULL));
        GU_CUDA(cudaDeviceSynchronize());
        if (GU_CHECK_OUTPUT(b->y, y_offset, n, expected, &no_inputs, what) == 0)
            break;
        gu_buffer_poison(b->y, GU_POISON_ALT);
    }
    gu_buffer_poison(b->y, GU_POISON);
    GU_CHECK_UNCHANGED(b->q, "q");
    GU_CHECK_UNCHANGED(b->scales, "scales");
}

/* ---- quantize tests ---- */

/* One quantize call, checked (elements and every scale byte), then its round trip through
 * ew_dequantize_blocks to out_dtype. x_host: the call's elements. */
static void check_quantize(const case_t *c, buffers_t *b, int64_t rows, int64_t cols, unsigned options,
                           global_t g, int x_offset, int q_offset, int s_offset, const unsigned char *x_host,
                           ew_dtype_t round_trip, int y_offset)
{
    const int64_t n = rows * cols, qn = element_bytes(c->element, n);
    const int64_t sn = scale_bytes(c->format, rows, cols, options);
    const float *gp = global_pointer(b, g);
    load_at(b->x, b->image, x_offset, x_host, n);
    unsigned char *q_expected = b->q_expected, *s_expected = b->s_expected;
    ref_quantize_blocks(c->format, c->element, c->wide, rows, cols, q_expected, s_expected, x_host,
                        g.given ? &g.value : NULL, options);
    char what[256];
    snprintf(what, sizeof what, "%s, %" PRId64 " x %" PRId64 ", %s%s, global scale %s%a, offsets x %d q %d scales %d",
             c->name, rows, cols, options & EW_BLOCKS_ROUND_UP ? "round-up" : "floor",
             options & EW_BLOCKS_SWIZZLED ? ", swizzled" : "", g.given ? "" : "NULL ", g.given ? (double)g.value : 0.0,
             x_offset, q_offset, s_offset);
    char what_scales[300];
    snprintf(what_scales, sizeof what_scales, "%s: scales", what);
    for (int round = 0; round < 2; ++round) {
        GU_EW(ew_quantize_blocks(gu_handle(), c->format, c->element, c->wide, rows, cols, gu_at(b->q, q_offset),
                                 gu_at(b->scales, s_offset), gu_at(b->x, x_offset), gp, options, NULL));
        GU_CUDA(cudaDeviceSynchronize());
        const int64_t ambiguous = GU_CHECK_OUTPUT(b->q, q_offset, qn, q_expected, &no_inputs, what) +
                                  GU_CHECK_OUTPUT(b->scales, s_offset, sn, s_expected, &no_inputs, what_scales);
        /* no byte equals both poisons, so two rounds saw every one written; poisoning after the last
         * round would leave the round trip below only poison to read */
        if (ambiguous == 0 || round == 1)
            break;
        gu_buffer_poison(b->q, GU_POISON_ALT); /* some bytes equal the poison: again on the other one */
        gu_buffer_poison(b->scales, GU_POISON_ALT);
    }
    GU_CHECK_UNCHANGED(b->x, "x");
    /* the round trip: the device's q and scales (equal to the reference's) dequantized, with the layout
     * alone of the options (EW_BLOCKS_ROUND_UP is quantize's, which dequantize refuses) */
    adopt(b->q, q_offset, q_expected, qn);
    adopt(b->scales, s_offset, s_expected, sn);
    check_dequantize(c, b, round_trip, rows, cols, options & EW_BLOCKS_SWIZZLED, g, q_offset, s_offset, y_offset,
                     q_expected, s_expected, what);
    gu_buffer_poison(b->q, GU_POISON);
    gu_buffer_poison(b->scales, GU_POISON);
}

/* max |x| over the finite elements (the blocks hold NaNs and infinities), 1 where there are none. */
static float finite_amax(ew_dtype_t dtype, int64_t n, const unsigned char *x)
{
    float amax = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float a = ref_amax(dtype, 1, x + (size_t)i * ew_dtype_size(dtype));
        if (isfinite(a) && a > amax)
            amax = a;
    }
    return amax > 0.0f ? amax : 1.0f;
}

/* The global scales an NVFP4 call takes in turn: NULL, 1, the full range of the tensor (its amax over
 * 448 * 6, as the header suggests), and a few others. */
static global_t nvfp4_global(int k, float full_range)
{
    static const float others[] = {0.37f, 0x1p-20f, 1.0f, 3.0e4f};
    switch (k % 4) {
    case 0: return (global_t){0, 1.0f};
    case 1: return (global_t){1, 1.0f};
    case 2: return (global_t){1, full_range};
    default: return (global_t){1, others[(k / 4) % COUNT(others)]};
    }
}

static void test_quantize(void **state)
{
    const case_t *c = *state;
    buffers_t b = buffers_new(c);
    b.y = gu_buffer_new(EW_F32, max_rows() * max_cols());
    gu_buffer_t *y_by_dtype[3] = {gu_buffer_new(EW_F16, max_rows() * max_cols()),
                                  gu_buffer_new(EW_BF16, max_rows() * max_cols()), b.y};
    const int block = ref_block_size(c->format);
    gu_rng_t rng = gu_rng(gu_seed() ^ ((uint64_t)c->format << 24 | (uint64_t)c->element << 8 | (uint64_t)c->wide));
    const size_t size = ew_dtype_size(c->wide);
    unsigned char *x = gu_host_alloc((size_t)(max_rows() * max_cols()) * size);
    const int64_t *cols;
    size_t col_count;
    shape_list(c->format, &cols, &col_count);
    const unsigned rules = c->format == EW_BLOCKS_MX ? 2 : 1; /* floor, round-up */
    int k = 0;
    for (size_t ri = 0; ri < COUNT(all_rows); ++ri)
        for (size_t ci = 0; ci < col_count; ++ci) {
            const int64_t rows = all_rows[ri], n = rows * cols[ci];
            if (!shape_used(rows, cols[ci]))
                continue;
            fill_blocks(c->wide, block, c->element, n, x, &rng);
            const float amax = finite_amax(c->wide, n, x);
            for (unsigned rule = 0; rule < rules; ++rule)
                for (unsigned layout = 0; layout < 2; ++layout, ++k) {
                    const unsigned options = (rule ? EW_BLOCKS_ROUND_UP : 0) | (layout ? EW_BLOCKS_SWIZZLED : 0);
                    const global_t g = c->format == EW_BLOCKS_NVFP4
                                           ? nvfp4_global(k + k / 4 + k / 16, amax / (448.0f * 6.0f))
                                           : (global_t){0, 1.0f};
                    /* aligned alike, then x, q and the scales off in turn; the turn shifts from shape to
                     * shape, so that each rule and layout meets each */
                    const int turn = (k + k / 4) % 4;
                    const int x_offset = turn == 1 ? offset_of(b.x, k / 4 + 1) : 0;
                    const int q_offset = turn == 2 ? offset_of(b.q, k / 4 + 1) : turn == 3 ? 1 : 0;
                    const int s_offset = turn == 3 ? offset_of(b.scales, k / 4 + 1) : 0;
                    b.y = y_by_dtype[k % 3];
                    check_quantize(c, &b, rows, cols[ci], options, g, x_offset, q_offset, s_offset, x, wides[k % 3],
                                   offset_of(b.y, k / 3));
                }
        }
    /* NVFP4's special global scales: 0, negative, NaN, infinities, the smallest normal */
    if (c->format == EW_BLOCKS_NVFP4) {
        static const float specials[] = {0.0f, -1.0f, NAN, INFINITY, -INFINITY, 0x1p-126f, 1e30f};
        const int64_t rows = 129, n = rows * 64;
        fill_blocks(c->wide, block, c->element, n, x, &rng);
        for (size_t s = 0; s < COUNT(specials); ++s) {
            b.y = y_by_dtype[s % 3];
            check_quantize(c, &b, rows, 64, s % 2 ? EW_BLOCKS_SWIZZLED : 0, (global_t){1, specials[s]}, 0, 0, 0, x,
                           wides[s % 3], 0);
        }
    }
    /* nothing to do: NULL pointers are fine */
    GU_EW(ew_quantize_blocks(gu_handle(), c->format, c->element, c->wide, 0, block, NULL, NULL, NULL, NULL, 0, NULL));
    GU_EW(ew_quantize_blocks(gu_handle(), c->format, c->element, c->wide, 5, 0, NULL, NULL, NULL, NULL,
                             EW_BLOCKS_SWIZZLED, NULL));
    GU_CUDA(cudaDeviceSynchronize());
}

/* ---- dequantize tests: arbitrary codes and scales ---- */

static void test_dequantize(void **state)
{
    const case_t *c = *state;
    buffers_t b = buffers_new(c);
    b.y = gu_buffer_new(c->wide, max_rows() * max_cols());
    gu_rng_t rng = gu_rng(gu_seed() ^ 0xDE0u ^ ((uint64_t)c->format << 24 | (uint64_t)c->element << 8 | (uint64_t)c->wide));
    const int64_t *cols;
    size_t col_count;
    shape_list(c->format, &cols, &col_count);
    unsigned char *q = gu_host_alloc((size_t)element_bytes(c->element, max_rows() * max_cols()));
    unsigned char *s = gu_host_alloc((size_t)scale_bytes(c->format, max_rows(), max_cols(), EW_BLOCKS_SWIZZLED) + 8);
    static const float globals[] = {1.0f, 0.37f, 0x1p-20f, 3.0e4f, 0.0f, INFINITY, NAN, -2.0f};
    int k = 0;
    for (size_t ri = 0; ri < COUNT(all_rows); ++ri)
        for (size_t ci = 0; ci < col_count; ++ci)
            for (unsigned layout = 0; layout < 2; ++layout, ++k) {
                const int64_t rows = all_rows[ri], n = rows * cols[ci];
                if (!shape_used(rows, cols[ci]))
                    continue;
                const unsigned options = layout ? EW_BLOCKS_SWIZZLED : 0;
                const int64_t qn = element_bytes(c->element, n), sn = scale_bytes(c->format, rows, cols[ci], options);
                fill_codes(qn, q, &rng);
                fill_scales(c->format, sn, s, &rng);
                const int q_offset = k % 3 == 1 ? offset_of(b.q, k) : 0, s_offset = k % 3 == 2 ? offset_of(b.scales, k) : 0;
                const int y_offset = (k / 2) % 2 ? offset_of(b.y, k / 4 + 1) : 0; /* not tied to the layout */
                load_at(b.q, b.image, q_offset, q, qn);
                load_at(b.scales, b.image, s_offset, s, sn);
                const global_t g = c->format == EW_BLOCKS_NVFP4 && k % 3 != 0
                                       ? (global_t){1, globals[(k / 3) % COUNT(globals)]}
                                       : (global_t){0, 1.0f};
                char context[128];
                snprintf(context, sizeof context, "%s, %" PRId64 " x %" PRId64 "%s, global scale %s%a", c->name, rows,
                         cols[ci], layout ? ", swizzled" : "", g.given ? "" : "NULL ", g.given ? (double)g.value : 0.0);
                check_dequantize(c, &b, c->wide, rows, cols[ci], options, g, q_offset, s_offset, y_offset, q, s,
                                 context);
            }
    GU_EW(ew_dequantize_blocks(gu_handle(), c->format, c->wide, c->element, 0, 0, NULL, NULL, NULL, NULL, 0, NULL));
    GU_CUDA(cudaDeviceSynchronize());
}

/* ---- a CUDA graph ---- */

/* NVFP4 quantize and dequantize with a device global scale captured in a graph: each replay reads the
 * global scale then in device memory. */
static void test_graph(void **state)
{
    (void)state;
    const case_t c = {EW_BLOCKS_NVFP4, EW_F4E2M1, EW_BF16, 1, "graph: NVFP4 f4e2m1 <- bf16"};
    enum { ROWS = 257, COLS = 1024 };
    const int64_t n = ROWS * COLS;
    const int64_t sn = scale_bytes(c.format, ROWS, COLS, EW_BLOCKS_SWIZZLED);
    buffers_t b = buffers_sized(&c, n, sn);
    b.y = gu_buffer_new(EW_BF16, n);
    unsigned char *x = gu_host_alloc((size_t)n * 2);
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x6B6Bu);
    fill_blocks(EW_BF16, 16, EW_F4E2M1, n, x, &rng);
    load_at(b.x, b.image, 1, x, n);
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    GU_EW(ew_quantize_blocks(gu_handle(), c.format, EW_F4E2M1, EW_BF16, ROWS, COLS, gu_at(b.q, 3), gu_at(b.scales, 0),
                             gu_at(b.x, 1), b.g, EW_BLOCKS_SWIZZLED, (ew_stream_t)stream));
    GU_EW(ew_dequantize_blocks(gu_handle(), c.format, EW_BF16, EW_F4E2M1, ROWS, COLS, gu_at(b.y, 2), gu_at(b.q, 3),
                               gu_at(b.scales, 0), b.g, EW_BLOCKS_SWIZZLED, (ew_stream_t)stream));
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    GU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    gu_track_graph_exec(exec);
    unsigned char *q = b.q_expected, *s = b.s_expected, *y = b.y_expected;
    const float amax = finite_amax(EW_BF16, n, x);
    const float globals[] = {1.0f, amax / (448.0f * 6.0f), 0.25f, 3.7f};
    for (size_t i = 0; i < COUNT(globals); ++i) {
        GU_CUDA(cudaMemcpy(b.g, &globals[i], sizeof(float), cudaMemcpyHostToDevice));
        ref_quantize_blocks(c.format, EW_F4E2M1, EW_BF16, ROWS, COLS, q, s, x, &globals[i], EW_BLOCKS_SWIZZLED);
        ref_dequantize_blocks(c.format, EW_BF16, EW_F4E2M1, ROWS, COLS, y, q, s, &globals[i], EW_BLOCKS_SWIZZLED);
        char what[96];
        snprintf(what, sizeof what, "graph replay %zu, global scale %a", i, (double)globals[i]);
        for (int round = 0; round < 2; ++round) { /* again on the other poison where a result equals one */
            const uint8_t poison = round ? GU_POISON_ALT : GU_POISON;
            gu_buffer_poison(b.q, poison);
            gu_buffer_poison(b.scales, poison); /* the padding too: the replay zeroes it */
            gu_buffer_poison(b.y, poison);
            GU_CUDA(cudaGraphLaunch(exec, stream));
            GU_CUDA(cudaStreamSynchronize(stream));
            const int64_t ambiguous = GU_CHECK_OUTPUT(b.q, 3, n / 2, q, &no_inputs, what) +
                                      GU_CHECK_OUTPUT(b.scales, 0, sn, s, &no_inputs, what) +
                                      GU_CHECK_OUTPUT(b.y, 2, n, y, &no_inputs, what);
            GU_CHECK_UNCHANGED(b.x, "x");
            if (ambiguous == 0)
                break;
        }
    }
}

int main(int argc, char **argv)
{
    gu_require_gpu("test_blocks_gpu");
    printf("test_blocks_gpu: EW_TEST_SCALE=%s, EW_TEST_SEED=0x%" PRIx64 "\n", gu_small_scale() ? "small" : "full",
           gu_seed());
    static const struct {
        ew_block_format_t format;
        ew_dtype_t element;
    } formats[] = {{EW_BLOCKS_MX, EW_F8E4M3}, {EW_BLOCKS_MX, EW_F8E5M2}, {EW_BLOCKS_MX, EW_F4E2M1},
                   {EW_BLOCKS_NVFP4, EW_F4E2M1}};
    for (int quantize = 1; quantize >= 0; --quantize)
        for (size_t f = 0; f < COUNT(formats); ++f)
            for (size_t w = 0; w < COUNT(wides); ++w) {
                case_t *c = &cases[case_count++];
                *c = (case_t){formats[f].format, formats[f].element, wides[w], quantize, ""};
                snprintf(c->name, sizeof c->name, "%s %s %s %s %s", quantize ? "quantize" : "dequantize",
                         format_name(c->format), quantize ? element_name(c->element) : ew_dtype_name(c->wide),
                         "<-", quantize ? ew_dtype_name(c->wide) : element_name(c->element));
            }
    struct CMUnitTest tests[COUNT(cases) + 1];
    size_t count = 0;
    for (size_t k = 0; k < case_count; ++k)
        tests[count++] = (struct CMUnitTest){.name = cases[k].name,
                                             .test_func = cases[k].quantize ? test_quantize : test_dequantize,
                                             .teardown_func = gu_teardown,
                                             .initial_state = &cases[k]};
    tests[count++] = (struct CMUnitTest){.name = "graph replay", .test_func = test_graph, .teardown_func = gu_teardown};
    const int status = gu_run_tests("blocks_gpu", tests, count, 0, argc, argv);
    ew_handle_destroy(gu_handle());
    return status;
}
