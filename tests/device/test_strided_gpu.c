/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The strided calls on the GPU against the independent CPU reference (tests/ref), bit for bit: the
 * reference runs the flat op over the elements gathered index by index, and its results are scattered
 * into an image of out's whole allocation, which must then equal the device's byte for byte (every
 * element written, nothing else: gaps between out's elements and the guards keep their poison).
 *   - random layouts: ndim 0-8, extents 0-3 and larger, permuted, flipped and gapped outputs, inputs
 *     permuted, broadcast (stride 0), negative, gapped, in place; each operand at every element offset
 *     within 16 bytes; every catalogue entry at least once, and many layouts for a sample;
 *   - each kernel at its boundaries: row and column broadcasts with rows of 1 to 4099 elements (the
 *     rows kernel's packs, its head and tail), scalar operands, transposed inputs and NCHW -> NHWC
 *     casts with extents around the tile (the tiled kernel); 3-d broadcasts, a permute of heads and
 *     outputs with gaps (the gather kernel's packs along a row);
 *   - one row-broadcast call of more than 2^32 output elements (64-bit offsets);
 *   - a strided call captured in a CUDA graph and replayed.
 * Outputs start poisoned (0xA5; again with 0x5A where an expected element equals the poison).
 * EW_TEST_SCALE=small does about a tenth of the random layouts and leaves the 2^32 call out of the
 * run, saying so (for compute-sanitizer); EW_TEST_SEED changes the inputs and layouts.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "gpu_util.h"
#include "ref/ref.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

enum { DTYPE_FIRST = EW_BOOL, DTYPE_LAST = EW_F8E8M0, MAX_OPERANDS = 3 };

typedef struct {
    ew_op_t op;
    ew_dtype_t out, in;
} entry_t;

static int arity(const entry_t *e) { return e->op == EW_OP_RELU || e->op == EW_OP_CAST ? 1 : 2; }

static double alpha_for(ew_dtype_t dtype)
{
    switch (dtype) {
    case EW_BOOL: return 1;
    case EW_U8: return 3;
    case EW_F16:
    case EW_BF16:
    case EW_F32:
    case EW_F64: return -1.75;
    default: return -3;
    }
}

/* ---- one strided case ---- */

typedef struct {
    entry_t entry;
    int ndim;
    int64_t shape[EW_MAX_DIMS];
    int64_t strides[MAX_OPERANDS][EW_MAX_DIMS];
    int offset[MAX_OPERANDS]; /* element offset of each operand's region */
    int in_place;             /* input 1 (a or x) is out, same strides */
} case_t;

static int64_t elements(const case_t *c)
{
    int64_t n = 1;
    for (int d = 0; d < c->ndim; ++d)
        n *= c->shape[d];
    return n;
}

static ew_dtype_t dtype_of(const case_t *c, int k) { return k == 0 ? c->entry.out : c->entry.in; }

/* Lowest and highest element offset an operand reaches. */
static void span(const case_t *c, int k, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int d = 0; d < c->ndim; ++d) {
        int64_t reach = c->strides[k][d] * (c->shape[d] - 1);
        *(reach < 0 ? lo : hi) += reach;
    }
}

static void describe(char *text, size_t size, const case_t *c)
{
    int used = snprintf(text, size, "%s %s<-%s shape [", ref_op_name(c->entry.op), ew_dtype_name(c->entry.out),
                        ew_dtype_name(c->entry.in));
    for (int d = 0; d < c->ndim; ++d)
        used += snprintf(text + used, size - (size_t)used, "%s%" PRId64, d ? "," : "", c->shape[d]);
    for (int k = 0; k < 1 + arity(&c->entry); ++k) {
        used += snprintf(text + used, size - (size_t)used, "] %s (", k == 0 ? "out" : k == 1 ? "a" : "b");
        for (int d = 0; d < c->ndim; ++d)
            used += snprintf(text + used, size - (size_t)used, "%s%" PRId64, d ? "," : "", c->strides[k][d]);
        used += snprintf(text + used, size - (size_t)used, ")+%d [", c->offset[k]);
    }
    snprintf(text + used, size - (size_t)used, "]%s", c->in_place ? " in place" : "");
}

static ew_status_t call(const case_t *c, void *out, const void *a, const void *b, cudaStream_t stream)
{
    const entry_t *e = &c->entry;
    const int64_t *s0 = c->strides[0], *s1 = c->strides[1], *s2 = c->strides[2];
    switch (e->op) {
    case EW_OP_RELU: return ew_unary_strided(gu_handle(), e->op, e->out, c->ndim, c->shape, out, s0, a, s1, stream);
    case EW_OP_CAST:
        return ew_cast_strided(gu_handle(), e->out, e->in, c->ndim, c->shape, out, s0, a, s1, stream);
    case EW_OP_SCALE_ADD:
        return ew_scale_add_strided(gu_handle(), e->out, alpha_for(e->out), c->ndim, c->shape, out, s0, a, s1, b,
                                    s2, stream);
    default:
        return ew_binary_strided(gu_handle(), e->op, e->out, c->ndim, c->shape, out, s0, a, s1, b, s2, stream);
    }
}

static void reference(const entry_t *e, int64_t n, void *out, const void *a, const void *b)
{
    switch (e->op) {
    case EW_OP_RELU: ref_unary(e->op, e->out, n, out, a); break;
    case EW_OP_CAST: ref_cast(e->out, e->in, n, out, a); break;
    case EW_OP_SCALE_ADD: ref_scale_add(e->out, alpha_for(e->out), n, out, a, b); break;
    default: ref_binary(e->op, e->out, n, out, a, b); break;
    }
}

/* Runs one case and checks out's whole allocation; the inputs must come back unchanged. */
static void run_case(const case_t *c)
{
    char what[512];
    describe(what, sizeof what, c);
    const int operands = 1 + arity(&c->entry);
    const int64_t n = elements(c);
    gu_buffer_t *buffer[MAX_OPERANDS] = {NULL};
    unsigned char *origin[MAX_OPERANDS] = {NULL}; /* device: element at index 0 */
    int64_t first[MAX_OPERANDS] = {0};
    gu_rng_t rng = gu_rng(gu_seed() ^ (uint64_t)n * 0x9E3779B97F4A7C15u);
    for (int k = 0; k < operands; ++k) {
        if (k == 1 && c->in_place) {
            buffer[1] = buffer[0];
            origin[1] = origin[0];
            first[1] = first[0];
            continue;
        }
        int64_t lo, hi;
        span(c, k, &lo, &hi);
        const ew_dtype_t dtype = dtype_of(c, k);
        buffer[k] = gu_buffer_new(dtype, hi - lo + 1);
        first[k] = -lo;
        origin[k] = (unsigned char *)gu_at(buffer[k], c->offset[k]) + (size_t)(-lo) * ew_dtype_size(dtype);
        if (k > 0 || c->in_place) { /* inputs: random over the whole region */
            const int64_t region = gu_buffer_region_elems(buffer[k]);
            void *host = gu_host_alloc((size_t)region * ew_dtype_size(dtype));
            gu_fill_random(dtype, region, host, &rng);
            gu_buffer_load(buffer[k], host, region);
        }
    }
    /* gather the inputs index by index, run the reference flat */
    const size_t out_size = ew_dtype_size(c->entry.out), in_size = ew_dtype_size(c->entry.in);
    void *lin[MAX_OPERANDS];
    for (int k = 0; k < operands; ++k)
        lin[k] = gu_host_alloc((size_t)(n > 0 ? n : 1) * (k == 0 ? out_size : in_size));
    int64_t *out_offsets = gu_host_alloc((size_t)(n > 0 ? n : 1) * sizeof *out_offsets);
    int64_t index[EW_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; ++i) {
        for (int k = 0; k < operands; ++k) {
            int64_t offset = 0;
            for (int d = 0; d < c->ndim; ++d)
                offset += index[d] * c->strides[k][d];
            if (k == 0) {
                out_offsets[i] = offset;
                continue;
            }
            const unsigned char *image = gu_image_at(buffer[k], c->offset[k]) + (size_t)(first[k] + offset) * in_size;
            memcpy((unsigned char *)lin[k] + (size_t)i * in_size, image, in_size);
        }
        for (int d = c->ndim - 1; d >= 0; --d) {
            if (++index[d] < c->shape[d])
                break;
            index[d] = 0;
        }
    }
    reference(&c->entry, n, lin[0], lin[1], operands > 2 ? lin[2] : NULL);

    /* twice where an expected element equals the first poison */
    static const uint8_t poisons[] = {GU_POISON, GU_POISON_ALT};
    for (size_t p = 0; p < COUNT(poisons); ++p) {
        if (!c->in_place) /* in place, out holds the input: one pass */
            gu_buffer_poison(buffer[0], poisons[p]);
        unsigned char *image = gu_image_at(buffer[0], c->offset[0]);
        int64_t collisions = 0;
        for (int64_t i = 0; i < n; ++i) {
            unsigned char *at = image + (size_t)(first[0] + out_offsets[i]) * out_size;
            const unsigned char *want = (const unsigned char *)lin[0] + (size_t)i * out_size;
            int same = 1;
            for (size_t byte = 0; byte < out_size; ++byte)
                same &= at[byte] == poisons[p];
            collisions += same && memcmp(at, want, out_size) == 0;
            memcpy(at, want, out_size);
        }
        ew_status_t status = call(c, origin[0], origin[1], operands > 2 ? origin[2] : NULL, NULL);
        if (status != EW_SUCCESS)
            GU_FAIL("%s: %s (%s)", what, ew_status_string(status), ew_get_last_error_message());
        GU_CUDA(cudaDeviceSynchronize());
        gu_check_unchanged(buffer[0], what, __FILE__, __LINE__);
        for (int k = 1; k < operands; ++k)
            if (buffer[k] != buffer[0])
                gu_check_unchanged(buffer[k], what, __FILE__, __LINE__);
        if (collisions == 0 || c->in_place)
            break;
    }
    for (int k = 0; k < operands; ++k)
        if (k == 0 || buffer[k] != buffer[0])
            gu_buffer_free(buffer[k]);
}

/* ---- layouts ---- */

static gu_rng_t layout_rng;
static int64_t below(int64_t bound) { return (int64_t)(gu_rng_next(&layout_rng) % (uint64_t)bound); }

/* Contiguous in a random order of the dimensions, some flipped, some with gaps: never two elements at
 * one address. */
static void disjoint_strides(int ndim, const int64_t *shape, int64_t *strides, int permute, int gaps, int flips)
{
    int order[EW_MAX_DIMS];
    for (int d = 0; d < ndim; ++d)
        order[d] = d;
    for (int d = ndim - 1; permute && d > 0; --d) {
        int j = (int)below(d + 1), t = order[d];
        order[d] = order[j];
        order[j] = t;
    }
    int64_t step = gaps && below(3) == 0 ? 2 : 1;
    for (int j = ndim - 1; j >= 0; --j) {
        const int d = order[j];
        strides[d] = flips && below(4) == 0 ? -step : step;
        step *= shape[d] > 0 ? shape[d] : 1;
        if (gaps && below(4) == 0)
            step += below(3);
    }
}

static void random_layout(case_t *c, const entry_t *e, int64_t max_extent);

/* A random layout of at most max_n elements, each operand spanning at most 4 max_n. */
static void random_case(case_t *c, const entry_t *e, int64_t max_extent, int64_t max_n)
{
    for (;;) {
        random_layout(c, e, max_extent);
        int fits = elements(c) <= max_n;
        for (int k = 0; k <= arity(e) && fits; ++k) {
            int64_t lo, hi;
            span(c, k, &lo, &hi);
            fits = hi - lo < 4 * max_n;
        }
        if (fits)
            return;
    }
}

static void random_layout(case_t *c, const entry_t *e, int64_t max_extent)
{
    memset(c, 0, sizeof *c);
    c->entry = *e;
    c->ndim = (int)below(EW_MAX_DIMS + 1);
    if (below(2))
        c->ndim = (int)below(4);
    for (int d = 0; d < c->ndim; ++d)
        c->shape[d] = below(12) == 0 ? 0 : 1 + below(below(3) == 0 ? max_extent : 3);
    disjoint_strides(c->ndim, c->shape, c->strides[0], (int)below(2), (int)below(2), (int)below(2));
    for (int k = 1; k <= arity(e); ++k) {
        disjoint_strides(c->ndim, c->shape, c->strides[k], (int)below(2), (int)below(2), (int)below(2));
        for (int d = 0; d < c->ndim; ++d)
            if (below(4) == 0)
                c->strides[k][d] = 0;
    }
    for (int k = 0; k <= arity(e); ++k)
        c->offset[k] = (int)below(gu_offset_count(k == 0 ? e->out : e->in));
    if (ew_dtype_size(e->out) == ew_dtype_size(e->in) && below(8) == 0) {
        c->in_place = 1;
        memcpy(c->strides[1], c->strides[0], sizeof c->strides[1]);
        c->offset[1] = c->offset[0];
    }
}

static entry_t all_entries[5 * 13 * 13];
static size_t entry_count;

static void collect_entries(void)
{
    static const ew_op_t ops[] = {EW_OP_ADD, EW_OP_MUL, EW_OP_RELU, EW_OP_SCALE_ADD};
    for (size_t k = 0; k < COUNT(ops); ++k)
        for (int d = DTYPE_FIRST; d <= DTYPE_LAST; ++d)
            if (ew_is_supported(ops[k], (ew_dtype_t)d, (ew_dtype_t)d))
                all_entries[entry_count++] = (entry_t){ops[k], (ew_dtype_t)d, (ew_dtype_t)d};
    for (int in = DTYPE_FIRST; in <= DTYPE_LAST; ++in)
        for (int out = DTYPE_FIRST; out <= DTYPE_LAST; ++out)
            if (ew_is_supported(EW_OP_CAST, (ew_dtype_t)out, (ew_dtype_t)in))
                all_entries[entry_count++] = (entry_t){EW_OP_CAST, (ew_dtype_t)out, (ew_dtype_t)in};
}

/* Every catalogue entry on random layouts. */
static void test_every_entry(void **state)
{
    (void)state;
    layout_rng = gu_rng(gu_seed() + 1);
    const int layouts = gu_small_scale() ? 2 : 8;
    for (size_t i = 0; i < entry_count; ++i)
        for (int j = 0; j < layouts; ++j) {
            case_t c;
            random_case(&c, &all_entries[i], 9, (int64_t)1 << 14);
            run_case(&c);
        }
}

/* Many random layouts, larger extents, for a sample of entries. */
static void test_random_layouts(void **state)
{
    (void)state;
    layout_rng = gu_rng(gu_seed() + 2);
    static const entry_t sample[] = {{EW_OP_ADD, EW_F32, EW_F32},      {EW_OP_ADD, EW_F16, EW_F16},
                                     {EW_OP_MUL, EW_U8, EW_U8},        {EW_OP_SCALE_ADD, EW_BF16, EW_BF16},
                                     {EW_OP_SCALE_ADD, EW_I64, EW_I64}, {EW_OP_RELU, EW_I8, EW_I8},
                                     {EW_OP_CAST, EW_F16, EW_F32},     {EW_OP_CAST, EW_F8E4M3, EW_F32},
                                     {EW_OP_CAST, EW_F64, EW_F8E5M2},  {EW_OP_ADD, EW_BOOL, EW_BOOL}};
    const int layouts = gu_small_scale() ? 20 : 150;
    for (size_t i = 0; i < COUNT(sample); ++i)
        for (int j = 0; j < layouts; ++j) {
            case_t c;
            random_case(&c, &sample[i], 70, (int64_t)1 << 19);
            run_case(&c);
        }
}

/* [N, C] op [C] and [N, C] op [N, 1], rows around every pack width; a scalar operand. Unary entries
 * broadcast x the same ways (a cast from 1 byte to 2: a 1-byte row in the 16-bit rows kernel). */
static void test_broadcasts(void **state)
{
    (void)state;
    static const entry_t sample[] = {{EW_OP_ADD, EW_F32, EW_F32},   {EW_OP_ADD, EW_F16, EW_F16},
                                     {EW_OP_MUL, EW_BF16, EW_BF16}, {EW_OP_SCALE_ADD, EW_F32, EW_F32},
                                     {EW_OP_ADD, EW_I8, EW_I8},     {EW_OP_MUL, EW_F64, EW_F64},
                                     {EW_OP_CAST, EW_F16, EW_U8},   {EW_OP_RELU, EW_BF16, EW_BF16}};
    static const int64_t rows[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 768, 4099};
    const int64_t n_rows = gu_small_scale() ? 5 : 37;
    for (size_t i = 0; i < COUNT(sample); ++i)
        for (size_t r = 0; r < COUNT(rows); ++r)
            for (int form = 0; form < 3; ++form)
                for (int offset = 0; offset < gu_offset_count(sample[i].out); offset += 5) {
                    case_t c = {.entry = sample[i], .ndim = 2, .shape = {n_rows, rows[r]}};
                    const int last = arity(&sample[i]); /* the operand broadcast: b, or x */
                    for (int k = 0; k < 3; ++k) {
                        c.strides[k][0] = rows[r];
                        c.strides[k][1] = 1;
                        /* at phases of its own: a row at another phase than out's packs */
                        c.offset[k] = k == last ? offset * 3 % gu_offset_count(sample[i].in) : offset;
                    }
                    c.strides[last][0] = form == 0 ? 0 : form == 1 ? 1 : 0; /* row, column, scalar */
                    c.strides[last][1] = form == 0 ? 1 : 0;
                    run_case(&c);
                }
}

/* The gather kernel's packs along a row (operands contiguous along the innermost dimension, indexed
 * over the others), rows of 1 to 100 elements around every pack width, each operand at several element
 * offsets: [N,1,C] op [1,H,C]; x (B,H,S,D) into out (B,S,H,D); out with gaps between its rows, from a
 * contiguous input and from a broadcast row. */
static void test_gather_rows(void **state)
{
    (void)state;
    static const entry_t sample[] = {{EW_OP_ADD, EW_F32, EW_F32},  {EW_OP_ADD, EW_F16, EW_F16},
                                     {EW_OP_MUL, EW_I8, EW_I8},    {EW_OP_SCALE_ADD, EW_F64, EW_F64},
                                     {EW_OP_CAST, EW_F16, EW_F32}, {EW_OP_RELU, EW_BF16, EW_BF16}};
    static const int64_t rows[] = {1, 3, 4, 7, 8, 9, 16, 17, 32, 33, 100};
    for (size_t i = 0; i < COUNT(sample); ++i)
        for (size_t r = 0; r < COUNT(rows); r += gu_small_scale() ? 2 : 1)
            for (int form = 0; form < 4; ++form)
                for (int offset = 0; offset < gu_offset_count(sample[i].out); offset += 3) {
                    const int64_t C = rows[r];
                    case_t c = {.entry = sample[i]};
                    for (int k = 0; k < MAX_OPERANDS; ++k)
                        c.offset[k] = (offset + k) % gu_offset_count(dtype_of(&c, k));
                    if (form == 0) { /* [N,1,C] op [1,H,C]; x [N,1,C] alone for the unary entries */
                        const int64_t N = 5, H = 6, shape[] = {N, H, C}, out[] = {H * C, C, 1}, a[] = {C, 0, 1},
                                      b[] = {0, C, 1};
                        c.ndim = 3;
                        memcpy(c.shape, shape, sizeof shape);
                        memcpy(c.strides[0], out, sizeof out);
                        memcpy(c.strides[1], a, sizeof a);
                        memcpy(c.strides[2], b, sizeof b);
                    } else if (form == 1) { /* (B,H,S,D) -> (B,S,H,D), b contiguous as out */
                        const int64_t B = 2, H = 3, S = 5, D = C, shape[] = {B, S, H, D},
                                      out[] = {S * H * D, H * D, D, 1}, x[] = {H * S * D, D, S * D, 1};
                        c.ndim = 4;
                        memcpy(c.shape, shape, sizeof shape);
                        memcpy(c.strides[0], out, sizeof out);
                        memcpy(c.strides[1], x, sizeof x);
                        memcpy(c.strides[2], out, sizeof out);
                    } else { /* out's rows C + 8 or C + 1 apart; b contiguous, or a row broadcast */
                        const int64_t N = 37, gap = form == 2 ? 8 : 1;
                        c.ndim = 2;
                        c.shape[0] = N;
                        c.shape[1] = C;
                        c.strides[0][0] = C + gap;
                        c.strides[1][0] = C;
                        c.strides[2][0] = form == 2 ? C : 0;
                        for (int k = 0; k < MAX_OPERANDS; ++k)
                            c.strides[k][1] = 1;
                    }
                    run_case(&c);
                }
}

/* out[rows][cols] = a[rows][cols] op b, with b a [cols, rows] array transposed. */
static case_t transposed_b(entry_t entry, int64_t rows, int64_t cols)
{
    case_t c = {.entry = entry, .ndim = 2, .shape = {rows, cols}};
    c.strides[0][0] = c.strides[1][0] = cols;
    c.strides[0][1] = c.strides[1][1] = 1;
    c.strides[2][0] = 1;
    c.strides[2][1] = rows;
    return c;
}

/* A transposed input and NCHW -> NHWC casts, extents around the tile. */
static void test_transposes(void **state)
{
    (void)state;
    static const int64_t extents[] = {8, 9, 31, 32, 33, 65, 129};
    static const entry_t binaries[] = {{EW_OP_ADD, EW_F32, EW_F32}, {EW_OP_ADD, EW_F16, EW_F16},
                                       {EW_OP_MUL, EW_I8, EW_I8}, {EW_OP_SCALE_ADD, EW_F64, EW_F64}};
    for (size_t i = 0; i < COUNT(binaries); ++i)
        for (size_t r = 0; r < COUNT(extents); ++r)
            for (size_t s = 0; s < COUNT(extents); s += gu_small_scale() ? 3 : 1)
                for (int both = 0; both < 2; ++both) {
                    const int64_t rows = extents[r];
                    case_t c = transposed_b(binaries[i], rows, extents[s]);
                    if (both) { /* a transposed and reversed too */
                        c.strides[1][0] = -1;
                        c.strides[1][1] = rows;
                    }
                    c.offset[1] = (int)(r % (size_t)gu_offset_count(c.entry.in));
                    run_case(&c);
                }
    /* larger views: many tiles of whole vector runs, and edge tiles whose runs end part way */
    static const int64_t banded[][2] = {{40, 2148}, {2148, 40}, {33, 1100}};
    for (size_t i = 0; i < 2; ++i)
        for (size_t s = 0; s < COUNT(banded); ++s) {
            case_t c = transposed_b(binaries[i], banded[s][0], banded[s][1]);
            run_case(&c);
        }
    static const entry_t casts[] = {{EW_OP_CAST, EW_F16, EW_F32}, {EW_OP_CAST, EW_F32, EW_U8},
                                    {EW_OP_CAST, EW_BF16, EW_F8E4M3}, {EW_OP_RELU, EW_F32, EW_F32}};
    static const int64_t nchw[][4] = {{2, 40, 9, 7}, {1, 33, 8, 8}, {3, 8, 5, 13}, {2, 256, 4, 16},
                                      {2, 1100, 3, 5}};
    for (size_t i = 0; i < COUNT(casts); ++i)
        for (size_t s = 0; s < COUNT(nchw); ++s) {
            const int64_t N = nchw[s][0], C = nchw[s][1], H = nchw[s][2], W = nchw[s][3];
            case_t c = {.entry = casts[i], .ndim = 4, .shape = {N, H, W, C}};
            const int64_t out_strides[] = {H * W * C, W * C, C, 1}, in_strides[] = {C * H * W, W, 1, H * W};
            memcpy(c.strides[0], out_strides, sizeof out_strides);
            memcpy(c.strides[1], in_strides, sizeof in_strides);
            run_case(&c);
        }
}

/* More than 2^32 output elements: relu i8 of a 128-element row broadcast over 2^25 + 1 rows. */
static void test_huge_broadcast(void **state)
{
    (void)state;
    const int64_t rows = ((int64_t)1 << 25) + 1, cols = 128, n = rows * cols;
    size_t free_bytes = 0, total = 0;
    GU_CUDA(cudaMemGetInfo(&free_bytes, &total));
    if (free_bytes < (size_t)n + ((size_t)1 << 30))
        gu_skip(GU_SKIP, "the 2^32-element call needs %" PRId64 " bytes of device memory", n);
    int8_t row[128];
    for (int j = 0; j < 128; ++j)
        row[j] = (int8_t)(j * 37 - 100);
    int8_t *x, *out;
    GU_CUDA(cudaMalloc((void **)&x, sizeof row));
    GU_CUDA(cudaMalloc((void **)&out, (size_t)n));
    GU_CUDA(cudaMemcpy(x, row, sizeof row, cudaMemcpyHostToDevice));
    GU_CUDA(cudaMemset(out, GU_POISON, (size_t)n));
    const int64_t shape[] = {rows, cols}, x_strides[] = {0, 1};
    GU_EW(ew_unary_strided(gu_handle(), EW_OP_RELU, EW_I8, 2, shape, out, NULL, x, x_strides, NULL));
    GU_CUDA(cudaDeviceSynchronize());
    int8_t *host = malloc((size_t)n);
    GU_CUDA(cudaMemcpy(host, out, (size_t)n, cudaMemcpyDeviceToHost));
    int64_t wrong = 0, first_wrong = -1;
    for (int64_t i = 0; i < n; ++i) {
        const int8_t v = row[i & (cols - 1)], want = v > 0 ? v : 0;
        if (host[i] != want && wrong++ == 0)
            first_wrong = i;
    }
    free(host);
    cudaFree(x);
    cudaFree(out);
    if (wrong)
        GU_FAIL("%" PRId64 " of %" PRId64 " elements differ, the first at %" PRId64, wrong, n, first_wrong);
}

/* [65536, 1] + [1, 32769] in u8: 2^31 + 65536 output elements, past any 32-bit index, through the
 * catalogue and through a user kernel's strided launch. Checked whole by the position-weighted
 * checksum of tests/checksum.h against a closed form (element [r][c] is v(a[r], b[c]), so a row's
 * sum is (2 r C + 1) S0[a[r]] + S1[a[r]], with S0[x] = sum over c of v(x, b[c]) and S1[x] = sum of
 * 2 c v(x, b[c]), v from the reference), and exactly at its start, across 2^31 and at its end; the
 * guards either side keep their poison. Named only (ctest: test_strided_gpu.broadcast_past_2_31,
 * label huge). */
static void test_broadcast_past_2_31(void **state)
{
    (void)state;
    enum { R = 65536, C = 32769, GUARD = 256, WINDOW = 4096 };
    const uint64_t n = (uint64_t)R * C;
    if (ewt_checksum_weight(0) != 1 || ewt_checksum_weight(1000) != 2001)
        GU_FAIL("the closed form below takes ewt_checksum_weight(i) = 2 i + 1");
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x2F31);
    uint8_t *ha = gu_host_alloc(R), *hb = gu_host_alloc(C), *row = gu_host_alloc(C), *v = gu_host_alloc(C);
    for (int i = 0; i < R; ++i)
        ha[i] = (uint8_t)gu_rng_next(&rng);
    for (int j = 0; j < C; ++j)
        hb[j] = (uint8_t)gu_rng_next(&rng);
    uint64_t s0[256], s1[256];
    for (int x = 0; x < 256; ++x) {
        memset(row, x, C);
        ref_binary(EW_OP_ADD, EW_U8, C, v, row, hb);
        s0[x] = s1[x] = 0;
        for (uint64_t j = 0; j < C; ++j) {
            s0[x] += v[j];
            s1[x] += 2 * j * v[j];
        }
    }
    uint64_t expected = 0;
    for (uint64_t r = 0; r < R; ++r)
        expected += (2 * r * C + 1) * s0[ha[r]] + s1[ha[r]];

    uint8_t *a, *b, *allocation;
    GU_CUDA(cudaMalloc((void **)&a, R));
    GU_CUDA(cudaMalloc((void **)&b, C));
    GU_CUDA(cudaMalloc((void **)&allocation, n + 2 * GUARD));
    GU_CUDA(cudaMemcpy(a, ha, R, cudaMemcpyHostToDevice));
    GU_CUDA(cudaMemcpy(b, hb, C, cudaMemcpyHostToDevice));
    uint8_t *out = allocation + GUARD;
    const int64_t shape[] = {R, C}, a_strides[] = {1, 0}, b_strides[] = {0, 1};
    const int64_t *in_strides[] = {a_strides, b_strides};
    const void *inputs[] = {a, b};
    const ew_dtype_t in[] = {EW_U8, EW_U8};
    ew_kernel_t kernel = NULL;
    ew_status_t created = ew_kernel_create(gu_handle(), "return ew::add(in0, in1);", EW_U8, 2, in, 0, &kernel);
    if (created != EW_SUCCESS)
        GU_FAIL("ew_kernel_create: %s: %s", ew_status_string(created), ew_get_last_error_message());
    for (int path = 0; path < 2; ++path) {
        const char *what = path == 0 ? "ew_binary_strided" : "ew_kernel_launch_strided";
        GU_CUDA(cudaMemset(allocation, GU_POISON, n + 2 * GUARD));
        if (path == 0)
            GU_EW(ew_binary_strided(gu_handle(), EW_OP_ADD, EW_U8, 2, shape, out, NULL, a, a_strides, b, b_strides,
                                    NULL));
        else
            GU_EW(ew_kernel_launch_strided(kernel, 2, shape, out, NULL, inputs, in_strides, NULL, NULL));
        GU_CUDA(cudaDeviceSynchronize());
        const uint64_t starts[] = {0, ((uint64_t)1 << 31) - WINDOW / 2, n - WINDOW};
        for (size_t w = 0; w < COUNT(starts); ++w) {
            uint8_t got[WINDOW], want[WINDOW], wa[WINDOW], wb[WINDOW];
            GU_CUDA(cudaMemcpy(got, out + starts[w], WINDOW, cudaMemcpyDeviceToHost));
            for (uint64_t k = 0; k < WINDOW; ++k) {
                wa[k] = ha[(starts[w] + k) / C];
                wb[k] = hb[(starts[w] + k) % C];
            }
            ref_binary(EW_OP_ADD, EW_U8, WINDOW, want, wa, wb);
            const gu_inputs_t inputs_for_messages = {2, {EW_U8, EW_U8}, {wa, wb}};
            if (gu_compare(EW_U8, WINDOW, want, got, &inputs_for_messages, what) != 0)
                GU_FAIL("%s: elements from %" PRIu64 " differ from the reference", what, starts[w]);
        }
        char guard[96];
        snprintf(guard, sizeof guard, "%s: the guard before out", what);
        GU_CHECK_POISONED(allocation, GUARD, guard);
        snprintf(guard, sizeof guard, "%s: the guard after out", what);
        GU_CHECK_POISONED(out + n, GUARD, guard);
        uint64_t sum = 0;
        GU_CUDA(ewt_checksum(out, n, 1, &sum, NULL));
        if (sum != expected)
            GU_FAIL("%s: the whole output's checksum is 0x%016" PRIx64 ", the reference's 0x%016" PRIx64
                    ": some element outside the windows is wrong",
                    what, sum, expected);
    }
    GU_EW(ew_kernel_destroy(kernel));
    cudaFree(a);
    cudaFree(b);
    cudaFree(allocation);
}

/* A strided call captured in a graph and replayed on new inputs. */
static void test_graph_capture(void **state)
{
    (void)state;
    const int64_t rows = 300, cols = 77, n = rows * cols;
    float *a, *b, *out;
    GU_CUDA(cudaMalloc((void **)&a, (size_t)n * sizeof *a));
    GU_CUDA(cudaMalloc((void **)&b, (size_t)cols * sizeof *b));
    GU_CUDA(cudaMalloc((void **)&out, (size_t)n * sizeof *out));
    float *ha = gu_host_alloc((size_t)n * sizeof *ha), *hb = gu_host_alloc((size_t)cols * sizeof *hb);
    float *got = gu_host_alloc((size_t)n * sizeof *got), *want = gu_host_alloc((size_t)n * sizeof *want);
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    const int64_t shape[] = {rows, cols}, b_strides[] = {0, 1};
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    GU_EW(ew_binary_strided(gu_handle(), EW_OP_ADD, EW_F32, 2, shape, out, NULL, a, NULL, b, b_strides, stream));
    cudaGraph_t graph;
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    cudaGraphExec_t exec;
    GU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    gu_track_graph_exec(exec);
    for (int replay = 0; replay < 3; ++replay) {
        for (int64_t i = 0; i < n; ++i)
            ha[i] = (float)(i % 1000) * 0.25f + (float)replay;
        for (int64_t j = 0; j < cols; ++j)
            hb[j] = (float)j * -1.5f;
        GU_CUDA(cudaMemcpy(a, ha, (size_t)n * sizeof *a, cudaMemcpyHostToDevice));
        GU_CUDA(cudaMemcpy(b, hb, (size_t)cols * sizeof *b, cudaMemcpyHostToDevice));
        GU_CUDA(cudaMemset(out, GU_POISON, (size_t)n * sizeof *out));
        /* the uploads and the poison ran on the legacy stream, which a non-blocking one does not wait for */
        GU_CUDA(cudaDeviceSynchronize());
        GU_CUDA(cudaGraphLaunch(exec, stream));
        GU_CUDA(cudaStreamSynchronize(stream));
        GU_CUDA(cudaMemcpy(got, out, (size_t)n * sizeof *out, cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < n; ++i)
            want[i] = ha[i] + hb[i % cols];
        if (gu_compare(EW_F32, n, want, got, NULL, "graph replay") != 0)
            GU_FAIL("replay %d differs", replay);
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(out);
}

int main(int argc, char **argv)
{
    gu_require_gpu("test_strided_gpu");
    printf("test_strided_gpu: EW_TEST_SCALE=%s, EW_TEST_SEED=0x%" PRIx64 "\n", gu_small_scale() ? "small" : "full",
           gu_seed());
    fflush(stdout);
    collect_entries();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_broadcasts, gu_teardown),
        cmocka_unit_test_teardown(test_gather_rows, gu_teardown),
        cmocka_unit_test_teardown(test_transposes, gu_teardown),
        cmocka_unit_test_teardown(test_every_entry, gu_teardown),
        cmocka_unit_test_teardown(test_random_layouts, gu_teardown),
        cmocka_unit_test_teardown(test_graph_capture, gu_teardown),
        cmocka_unit_test_teardown(test_huge_broadcast, gu_teardown), /* before the named: small scale leaves it out */
        /* run only when named: */
        cmocka_unit_test_teardown(test_broadcast_past_2_31, gu_teardown),
    };
    size_t named_only = 1; /* test_broadcast_past_2_31 */
    if (argc == 1 && gu_small_scale()) {
        printf("test_huge_broadcast left out at EW_TEST_SCALE=small: its output is 4 GiB\n");
        named_only++;
    }
    int status = gu_run_tests("strided_gpu", tests, COUNT(tests), named_only, argc, argv);
    ew_handle_destroy(gu_handle());
    return status;
}
