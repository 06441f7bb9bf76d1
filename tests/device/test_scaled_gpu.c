/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scaled casts on the GPU against the CPU reference (tests/ref), bit for bit: every quantize and
 * dequantize pair and every amax dtype at sizes from 1 to past 2^20, at element offsets within 16
 * bytes, with scales that round, saturate, underflow to subnormals and are 0, -0, NaN or infinite;
 * the amax in both modes (overwritten: set to zero first; accumulated: combined with an old value,
 * NaN and negative ones included) and alone (n == 0 too); strided views (a transposed input, a
 * broadcast one); a call captured in a CUDA graph, replayed after the scale in device memory
 * changed; and the list forms, each entry with its own scale and amax, or one amax for the list. Inputs are
 * the random special values of gu_fill_random; outputs start poisoned, with a second poison where an expected
 * element equals the first; inputs must stay unchanged. EW_TEST_SCALE=small leaves out the sizes past 2^16
 * (for compute-sanitizer).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ref/ref.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static const ew_dtype_t floats[] = {EW_F16, EW_BF16, EW_F32, EW_F64};
static const ew_dtype_t fp8s[] = {EW_F8E4M3, EW_F8E5M2};

/* Modes of a case's amax: none (NULL), overwritten, accumulated onto `old`. */
enum { AMAX_NONE = -1 };

typedef struct {
    ew_op_t op; /* EW_OP_QUANTIZE or EW_OP_DEQUANTIZE */
    ew_dtype_t out, in;
    char name[64];
} pair_t;

static pair_t pairs[COUNT(floats) * COUNT(fp8s) * 2];
static size_t pair_count;

static int64_t max_n(void) { return gu_small_scale() ? 65536 + 5 : (1 << 20) + 3; }

/* Device scalars: one float each, in their own allocations. */
static float *scale_on_device(void) { return gu_at(gu_buffer_new(EW_F32, 1), 0); }

static void put_float(float *device, float value) { GU_CUDA(cudaMemcpy(device, &value, sizeof value, cudaMemcpyHostToDevice)); }

static uint32_t get_bits(const float *device)
{
    uint32_t bits;
    GU_CUDA(cudaMemcpy(&bits, device, sizeof bits, cudaMemcpyDeviceToHost));
    return bits;
}

/* What the amax scalar must hold after a call of n elements whose own result is `result`: an empty
 * call leaves an accumulated scalar as it was. */
static uint32_t expected_amax(int mode, float old, float result, int64_t n)
{
    const uint32_t old_bits = ref_f32_bits(old), result_bits = ref_f32_bits(result);
    if (mode == EW_REDUCE_OVERWRITE)
        return result_bits;
    if (n == 0)
        return old_bits;
    return (int32_t)old_bits > (int32_t)result_bits ? old_bits : result_bits;
}

static void check_amax(const float *device, int mode, float old, float result, int64_t n, const char *what)
{
    const uint32_t got = get_bits(device), expected = expected_amax(mode, old, result, n);
    if (got != expected)
        GU_FAIL("%s: amax is 0x%08" PRIx32 ", expected 0x%08" PRIx32 " (mode %d, old 0x%08" PRIx32 ")", what, got,
                expected, mode, ref_f32_bits(old));
}

/* One flat call of a pair at n elements and these offsets, checked against the reference; amax_mode
 * AMAX_NONE passes NULL (quantize) and is the only mode of dequantize. */
static void check_flat(const pair_t *p, gu_buffer_t *out, gu_buffer_t *in, const unsigned char *in_host, int64_t n,
                       int out_offset, int in_offset, float *d_scale, float scale, float *d_amax, int amax_mode,
                       float old)
{
    put_float(d_scale, scale);
    const size_t in_size = ew_dtype_size(p->in), out_size = ew_dtype_size(p->out);
    const unsigned char *x = in_host + (size_t)in_offset * in_size;
    unsigned char *expected = gu_host_alloc((size_t)n * out_size);
    float ref_amax_value = 0;
    if (p->op == EW_OP_QUANTIZE)
        ref_quantize(p->out, p->in, n, expected, x, scale, &ref_amax_value);
    else
        ref_dequantize(p->out, p->in, n, expected, x, scale);
    char what[160];
    snprintf(what, sizeof what, "%s, n = %" PRId64 ", offsets %d/%d, scale %a, amax mode %d", p->name, n,
             out_offset, in_offset, (double)scale, amax_mode);
    const gu_inputs_t inputs = {1, {p->in}, {x}};
    for (int round = 0; round < 2; ++round) {
        if (amax_mode != AMAX_NONE)
            put_float(d_amax, old);
        if (p->op == EW_OP_QUANTIZE)
            GU_EW(ew_quantize(gu_handle(), p->out, p->in, n, gu_at(out, out_offset), gu_at(in, in_offset), d_scale,
                              amax_mode == AMAX_NONE ? NULL : d_amax,
                              amax_mode == AMAX_NONE ? EW_REDUCE_OVERWRITE : (ew_reduce_mode_t)amax_mode, NULL));
        else
            GU_EW(ew_dequantize(gu_handle(), p->out, p->in, n, gu_at(out, out_offset), gu_at(in, in_offset), d_scale,
                                NULL));
        GU_CUDA(cudaDeviceSynchronize());
        if (amax_mode != AMAX_NONE)
            check_amax(d_amax, amax_mode, old, ref_amax_value, n, what);
        if (GU_CHECK_OUTPUT(out, out_offset, n, expected, &inputs, what) == 0)
            break;
        gu_buffer_poison(out, GU_POISON_ALT); /* some results equal the poison: again on the other one */
    }
    gu_buffer_poison(out, GU_POISON);
    GU_CHECK_UNCHANGED(in, "the input");
}

/* Every pair: sizes, offsets, scales and amax modes in turn. */
static void test_pair(void **state)
{
    const pair_t *p = *state;
    static const float scales[] = {1.0f, 0.3125f, 37.5f, 1e-3f, 1e6f, 0x1p-12f, 3.0e-41f};
    static const float olds[] = {5.0f, -2.0f, 1e30f};
    const int64_t sizes[] = {1, 3, 31, 1000, 4099, 65536 + 5, (1 << 20) + 3};
    const int64_t capacity = max_n();
    gu_buffer_t *in = gu_buffer_new(p->in, capacity), *out = gu_buffer_new(p->out, capacity);
    const int64_t region = gu_buffer_region_elems(in);
    unsigned char *in_host = gu_host_alloc((size_t)region * ew_dtype_size(p->in));
    gu_rng_t rng = gu_rng(gu_seed() ^ ((uint64_t)p->op << 16 | (uint64_t)p->out << 8 | (uint64_t)p->in));
    gu_fill_random(p->in, region, in_host, &rng);
    gu_buffer_load(in, in_host, region);
    const int out_offsets = gu_offset_count(p->out), in_offsets = gu_offset_count(p->in);
    float *d_scale = scale_on_device(), *d_amax = scale_on_device();
    int k = 0;
    for (size_t s = 0; s < COUNT(sizes); ++s) {
        if (sizes[s] > capacity)
            continue;
        for (int o = 0; o < 3; ++o, ++k) {
            /* aligned alike, out off, the input off */
            const int out_offset = o == 1 ? (k % (out_offsets - 1)) + 1 : 0;
            const int in_offset = o == 2 ? (k % (in_offsets - 1)) + 1 : o == 1 ? k % in_offsets : 0;
            const int mode = p->op == EW_OP_DEQUANTIZE ? AMAX_NONE : k % 3 - 1;
            check_flat(p, out, in, in_host, sizes[s], out_offset, in_offset, d_scale, scales[k % COUNT(scales)],
                       d_amax, mode, olds[k % COUNT(olds)]);
        }
    }
    /* scales that are themselves special */
    static const float special[] = {0.0f, -0.0f, -1.5f, INFINITY, -INFINITY, NAN};
    for (size_t s = 0; s < COUNT(special); ++s)
        check_flat(p, out, in, in_host, 4099, 0, 0, d_scale, special[s], d_amax,
                   p->op == EW_OP_DEQUANTIZE ? AMAX_NONE : EW_REDUCE_OVERWRITE, 0.0f);
    /* an accumulated amax onto a NaN stays NaN */
    if (p->op == EW_OP_QUANTIZE)
        check_flat(p, out, in, in_host, 1000, 0, 0, d_scale, 1.0f, d_amax, EW_REDUCE_ACCUMULATE, NAN);
}

/* ew_amax alone: every float dtype, sizes up to past 2^20 (2^24 at full scale), both modes, n == 0. */
static void test_amax(void **state)
{
    const ew_dtype_t dtype = *(const ew_dtype_t *)*state;
    const int64_t capacity = gu_small_scale() ? 65536 + 5 : (1 << 24) + 5;
    gu_buffer_t *x = gu_buffer_new(dtype, capacity);
    const int64_t region = gu_buffer_region_elems(x);
    unsigned char *host = gu_host_alloc((size_t)region * ew_dtype_size(dtype));
    gu_rng_t rng = gu_rng(gu_seed() ^ 0xA3A3u ^ (uint64_t)dtype);
    gu_fill_random(dtype, region, host, &rng);
    gu_buffer_load(x, host, region);
    float *d_amax = scale_on_device();
    const int64_t sizes[] = {0, 1, 2, 33, 1000, 4099, 65536 + 5, (1 << 20) + 3, (1 << 24) + 5};
    int k = 0;
    for (size_t s = 0; s < COUNT(sizes); ++s) {
        if (sizes[s] > capacity)
            continue;
        for (int offset = 0; offset < gu_offset_count(dtype); offset += 1 + (int)(sizes[s] > 4099), ++k) {
            const int mode = k % 2 ? EW_REDUCE_ACCUMULATE : EW_REDUCE_OVERWRITE;
            const float old = k % 4 == 1 ? -7.0f : 3.25f;
            const unsigned char *first = host + (size_t)offset * ew_dtype_size(dtype);
            char what[96];
            snprintf(what, sizeof what, "amax %s, n = %" PRId64 ", offset %d", ew_dtype_name(dtype), sizes[s],
                     offset);
            put_float(d_amax, old);
            GU_EW(ew_amax(gu_handle(), dtype, sizes[s], gu_at(x, offset), d_amax, (ew_reduce_mode_t)mode, NULL));
            GU_CUDA(cudaDeviceSynchronize());
            check_amax(d_amax, mode, old, ref_amax(dtype, sizes[s], first), sizes[s], what);
        }
    }
    GU_CHECK_UNCHANGED(x, "x");
}

/* Views: quantize of a transposed [67, 129] input with its amax, dequantize of a row broadcast over 5 rows. */
static void test_strided(void **state)
{
    (void)state;
    enum { R = 67, C = 129, B = 5, L = 1000 };
    float *d_scale = scale_on_device(), *d_amax = scale_on_device();
    for (size_t f = 0; f < COUNT(floats); ++f)
        for (size_t e = 0; e < COUNT(fp8s); ++e) {
            const ew_dtype_t in_dtype = floats[f], out_dtype = fp8s[e];
            const size_t in_size = ew_dtype_size(in_dtype), out_size = ew_dtype_size(out_dtype);
            char what[96];
            /* x holds its [R, C] elements column by column: element (i, j) at j * R + i */
            gu_buffer_t *x = gu_buffer_new(in_dtype, R * C), *q = gu_buffer_new(out_dtype, R * C);
            unsigned char *x_host = gu_host_alloc((size_t)gu_buffer_region_elems(x) * in_size);
            unsigned char *gathered = gu_host_alloc((size_t)R * C * in_size);
            unsigned char *expected = gu_host_alloc((size_t)R * C * out_size);
            gu_rng_t rng = gu_rng(gu_seed() ^ 0x57u ^ (uint64_t)(f * 8 + e));
            gu_fill_random(in_dtype, gu_buffer_region_elems(x), x_host, &rng);
            gu_buffer_load(x, x_host, gu_buffer_region_elems(x));
            for (int i = 0; i < R; ++i)
                for (int j = 0; j < C; ++j)
                    memcpy(gathered + ((size_t)i * C + j) * in_size, x_host + ((size_t)j * R + i) * in_size, in_size);
            float amax = 0;
            ref_quantize(out_dtype, in_dtype, R * C, expected, gathered, 0.625f, &amax);
            put_float(d_scale, 0.625f);
            put_float(d_amax, -1.0f);
            const int64_t shape[] = {R, C}, x_strides[] = {1, R};
            GU_EW(ew_quantize_strided(gu_handle(), out_dtype, in_dtype, 2, shape, gu_at(q, 0), NULL, gu_at(x, 0),
                                      x_strides, d_scale, d_amax, EW_REDUCE_OVERWRITE, NULL));
            GU_CUDA(cudaDeviceSynchronize());
            snprintf(what, sizeof what, "quantize_strided %s <- %s, transposed", ew_dtype_name(out_dtype),
                     ew_dtype_name(in_dtype));
            const gu_inputs_t quantize_inputs = {1, {in_dtype}, {gathered}};
            GU_CHECK_OUTPUT(q, 0, R * C, expected, &quantize_inputs, what);
            check_amax(d_amax, EW_REDUCE_OVERWRITE, -1.0f, amax, R * C, what);
            GU_CHECK_UNCHANGED(x, "x");

            /* dequantize a row of L codes broadcast over B rows */
            gu_buffer_t *row = gu_buffer_new(out_dtype, L), *y = gu_buffer_new(in_dtype, B * L);
            unsigned char *row_host = gu_host_alloc((size_t)gu_buffer_region_elems(row) * out_size);
            unsigned char *y_expected = gu_host_alloc((size_t)B * L * in_size);
            gu_fill_random(out_dtype, gu_buffer_region_elems(row), row_host, &rng);
            gu_buffer_load(row, row_host, gu_buffer_region_elems(row));
            for (int b = 0; b < B; ++b)
                ref_dequantize(in_dtype, out_dtype, L, y_expected + (size_t)b * L * in_size, row_host, 3.5f);
            put_float(d_scale, 3.5f);
            const int64_t y_shape[] = {B, L}, row_strides[] = {0, 1};
            GU_EW(ew_dequantize_strided(gu_handle(), in_dtype, out_dtype, 2, y_shape, gu_at(y, 0), NULL, gu_at(row, 0),
                                        row_strides, d_scale, NULL));
            GU_CUDA(cudaDeviceSynchronize());
            snprintf(what, sizeof what, "dequantize_strided %s <- %s, broadcast", ew_dtype_name(in_dtype),
                     ew_dtype_name(out_dtype));
            const gu_inputs_t dequantize_inputs = {0, {in_dtype}, {NULL}};
            GU_CHECK_OUTPUT(y, 0, (int64_t)B * L, y_expected, &dequantize_inputs, what);
            gu_buffer_free(x);
            gu_buffer_free(q);
            gu_buffer_free(row);
            gu_buffer_free(y);
        }
}

/* A quantize with an overwritten amax captured in a CUDA graph: each replay reads the scale then in
 * device memory and sets the amax afresh. */
static void test_graph(void **state)
{
    (void)state;
    const int64_t n = 100003;
    gu_buffer_t *x = gu_buffer_new(EW_BF16, n), *q = gu_buffer_new(EW_F8E4M3, n);
    unsigned char *host = gu_host_alloc((size_t)gu_buffer_region_elems(x) * 2);
    unsigned char *expected = gu_host_alloc((size_t)n);
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x6A6Au);
    gu_fill_random(EW_BF16, gu_buffer_region_elems(x), host, &rng);
    gu_buffer_load(x, host, gu_buffer_region_elems(x));
    float *d_scale = scale_on_device(), *d_amax = scale_on_device();
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    GU_EW(ew_quantize(gu_handle(), EW_F8E4M3, EW_BF16, n, gu_at(q, 1), gu_at(x, 3), d_scale, d_amax,
                      EW_REDUCE_OVERWRITE, (ew_stream_t)stream));
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    GU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    gu_track_graph_exec(exec);
    static const float scales[] = {1.0f, 0.25f, 300.0f};
    for (size_t s = 0; s < COUNT(scales); ++s) {
        put_float(d_scale, scales[s]);
        put_float(d_amax, 1e30f);
        GU_CUDA(cudaGraphLaunch(exec, stream));
        GU_CUDA(cudaStreamSynchronize(stream));
        float amax = 0;
        ref_quantize(EW_F8E4M3, EW_BF16, n, expected, host + 3 * 2, scales[s], &amax);
        char what[64];
        snprintf(what, sizeof what, "graph replay %zu, scale %g", s, (double)scales[s]);
        const gu_inputs_t inputs = {1, {EW_BF16}, {host + 3 * 2}};
        GU_CHECK_OUTPUT(q, 1, n, expected, &inputs, what);
        check_amax(d_amax, EW_REDUCE_OVERWRITE, 1e30f, amax, n, what);
    }
}

/* The list forms: entries of sizes 0 to past 2^16, each at its own element offset and with its own
 * scale (a NaN, a zero and a negative one among them), with amax scalars of their own, one scalar
 * shared by every entry (the list's amax) or none, overwritten and accumulated; ew_amax_batched
 * likewise. */
enum { ENTRIES = 7 };
enum { OWN, SHARED, NONE }; /* a list's amax scalars */
typedef struct {
    ew_op_t op; /* EW_OP_QUANTIZE, EW_OP_DEQUANTIZE or EW_OP_AMAX */
    ew_dtype_t out, in;
} list_case_t;

static float fold_bits(float acc, float value)
{
    return (int32_t)ref_f32_bits(acc) > (int32_t)ref_f32_bits(value) ? acc : value;
}

static void check_list(const list_case_t *c, int sharing, int mode, const float *d_scales, float *d_amax)
{
    static const int64_t sizes[ENTRIES] = {1000, 0, 1, 65536 + 5, 31, 4099, 3};
    static const float scales[ENTRIES] = {0.3125f, 37.5f, NAN, 1e6f, 0.0f, 0x1p-12f, -1.5f};
    static const float olds[ENTRIES] = {5.0f, -2.0f, 1e30f, 0.5f, NAN, 3.0f, -0.0f};
    const size_t in_size = ew_dtype_size(c->in), out_size = ew_dtype_size(c->out);
    gu_buffer_t *in[ENTRIES], *out[ENTRIES] = {0};
    unsigned char *host[ENTRIES], *expected[ENTRIES];
    int64_t n[ENTRIES];
    int offset[ENTRIES];
    void *out_ptr[ENTRIES];
    const void *in_ptr[ENTRIES];
    float *amax_ptr[ENTRIES], result[ENTRIES];
    gu_rng_t rng =
        gu_rng(gu_seed() ^ 0x5EEDu ^ ((uint64_t)c->op << 16 | (uint64_t)c->out << 8 | (uint64_t)c->in));
    GU_CUDA(cudaMemcpy((void *)d_scales, scales, sizeof scales, cudaMemcpyHostToDevice));
    for (int e = 0; e < ENTRIES; ++e) {
        n[e] = sizes[e] > max_n() ? max_n() : sizes[e];
        offset[e] = e % gu_offset_count(c->in);
        in[e] = gu_buffer_new(c->in, n[e] > 0 ? n[e] : 1);
        host[e] = gu_host_alloc((size_t)gu_buffer_region_elems(in[e]) * in_size);
        gu_fill_random(c->in, gu_buffer_region_elems(in[e]), host[e], &rng);
        gu_buffer_load(in[e], host[e], gu_buffer_region_elems(in[e]));
        in_ptr[e] = gu_at(in[e], offset[e]);
        const unsigned char *x = host[e] + (size_t)offset[e] * in_size;
        expected[e] = gu_host_alloc((size_t)(n[e] > 0 ? n[e] : 1) * out_size);
        if (c->op == EW_OP_QUANTIZE)
            ref_quantize(c->out, c->in, n[e], expected[e], x, scales[e], &result[e]);
        else if (c->op == EW_OP_DEQUANTIZE)
            ref_dequantize(c->out, c->in, n[e], expected[e], x, scales[e]);
        else
            result[e] = ref_amax(c->in, n[e], x);
        if (c->op != EW_OP_AMAX) {
            out[e] = gu_buffer_new(c->out, n[e] > 0 ? n[e] : 1);
            out_ptr[e] = gu_at(out[e], (e + 1) % gu_offset_count(c->out));
        }
        amax_ptr[e] = sharing == OWN ? d_amax + e : d_amax;
    }
    char what[128];
    snprintf(what, sizeof what, "list of %s %s <- %s, amax %s, mode %d", ref_op_name(c->op),
             ew_dtype_name(c->out), ew_dtype_name(c->in),
             sharing == OWN      ? "per entry"
             : sharing == SHARED ? "shared"
                                 : "none",
             mode);
    float *const *amax = sharing == NONE ? NULL : amax_ptr;
    for (int round = 0; round < 2; ++round) {
        GU_CUDA(cudaMemcpy(d_amax, olds, sizeof olds, cudaMemcpyHostToDevice));
        if (c->op == EW_OP_QUANTIZE)
            GU_EW(ew_quantize_batched(gu_handle(), c->out, c->in, ENTRIES, n, out_ptr, in_ptr, d_scales, amax,
                                      (ew_reduce_mode_t)mode, NULL));
        else if (c->op == EW_OP_DEQUANTIZE)
            GU_EW(ew_dequantize_batched(gu_handle(), c->out, c->in, ENTRIES, n, out_ptr, in_ptr, d_scales,
                                        NULL));
        else
            GU_EW(
                ew_amax_batched(gu_handle(), c->in, ENTRIES, n, in_ptr, amax, (ew_reduce_mode_t)mode, NULL));
        GU_CUDA(cudaDeviceSynchronize());
        float got[ENTRIES];
        GU_CUDA(cudaMemcpy(got, d_amax, sizeof got, cudaMemcpyDeviceToHost));
        if (sharing == OWN) {
            for (int e = 0; e < ENTRIES; ++e)
                if (ref_f32_bits(got[e]) != expected_amax(mode, olds[e], result[e], n[e]))
                    GU_FAIL("%s: entry %d's amax is 0x%08" PRIx32 ", expected 0x%08" PRIx32, what, e,
                            ref_f32_bits(got[e]), expected_amax(mode, olds[e], result[e], n[e]));
        } else if (sharing == SHARED) {
            float list = mode == EW_REDUCE_OVERWRITE ? 0.0f : olds[0];
            for (int e = 0; e < ENTRIES; ++e)
                list = n[e] > 0 ? fold_bits(list, result[e]) : list;
            if (ref_f32_bits(got[0]) != ref_f32_bits(list))
                GU_FAIL("%s: the list's amax is 0x%08" PRIx32 ", expected 0x%08" PRIx32, what,
                        ref_f32_bits(got[0]), ref_f32_bits(list));
        } else if (memcmp(got, olds, sizeof got) != 0) {
            GU_FAIL("%s: an amax scalar was written though none was given", what);
        }
        int64_t again = 0;
        for (int e = 0; e < ENTRIES && c->op != EW_OP_AMAX; ++e) {
            const gu_inputs_t inputs = {1, {c->in}, {host[e] + (size_t)offset[e] * in_size}};
            char entry[160];
            snprintf(entry, sizeof entry, "%s, entry %d (n = %" PRId64 ")", what, e, n[e]);
            again +=
                GU_CHECK_OUTPUT(out[e], (e + 1) % gu_offset_count(c->out), n[e], expected[e], &inputs, entry);
        }
        if (again == 0)
            break;
        for (int e = 0; e < ENTRIES; ++e) /* some results equal the poison: again on the other one */
            gu_buffer_poison(out[e], GU_POISON_ALT);
    }
    for (int e = 0; e < ENTRIES; ++e) {
        GU_CHECK_UNCHANGED(in[e], "an input");
        gu_buffer_free(in[e]);
        if (out[e] != NULL)
            gu_buffer_free(out[e]);
    }
}

static void test_lists(void **state)
{
    (void)state;
    static const list_case_t cases[] = {
        {EW_OP_QUANTIZE, EW_F8E4M3, EW_BF16},  {EW_OP_QUANTIZE, EW_F8E5M2, EW_F32},
        {EW_OP_QUANTIZE, EW_F8E4M3, EW_F64},   {EW_OP_QUANTIZE, EW_F8E5M2, EW_F16},
        {EW_OP_DEQUANTIZE, EW_F16, EW_F8E4M3}, {EW_OP_DEQUANTIZE, EW_BF16, EW_F8E5M2},
        {EW_OP_DEQUANTIZE, EW_F64, EW_F8E4M3}, {EW_OP_AMAX, EW_F16, EW_F16},
        {EW_OP_AMAX, EW_BF16, EW_BF16},        {EW_OP_AMAX, EW_F64, EW_F64}};
    float *d_scales = gu_at(gu_buffer_new(EW_F32, ENTRIES), 0),
          *d_amax = gu_at(gu_buffer_new(EW_F32, ENTRIES), 0);
    for (size_t k = 0; k < COUNT(cases); ++k) {
        const int first = cases[k].op == EW_OP_DEQUANTIZE ? NONE : OWN;
        const int last = cases[k].op == EW_OP_AMAX ? SHARED : NONE;
        for (int sharing = first; sharing <= last; ++sharing)
            for (int mode = EW_REDUCE_OVERWRITE; mode <= EW_REDUCE_ACCUMULATE; ++mode)
                check_list(&cases[k], sharing, mode, d_scales, d_amax);
    }
}

int main(int argc, char **argv)
{
    gu_require_gpu("test_scaled_gpu");
    printf("test_scaled_gpu: EW_TEST_SCALE=%s, EW_TEST_SEED=0x%" PRIx64 "\n", gu_small_scale() ? "small" : "full",
           gu_seed());
    struct CMUnitTest tests[COUNT(pairs) + COUNT(floats) + 3];
    size_t count = 0;
    for (size_t f = 0; f < COUNT(floats); ++f)
        for (size_t e = 0; e < COUNT(fp8s); ++e) {
            pairs[pair_count] = (pair_t){EW_OP_QUANTIZE, fp8s[e], floats[f], ""};
            snprintf(pairs[pair_count].name, sizeof pairs[pair_count].name, "quantize %s <- %s",
                     ew_dtype_name(fp8s[e]), ew_dtype_name(floats[f]));
            ++pair_count;
            pairs[pair_count] = (pair_t){EW_OP_DEQUANTIZE, floats[f], fp8s[e], ""};
            snprintf(pairs[pair_count].name, sizeof pairs[pair_count].name, "dequantize %s <- %s",
                     ew_dtype_name(floats[f]), ew_dtype_name(fp8s[e]));
            ++pair_count;
        }
    for (size_t k = 0; k < pair_count; ++k)
        tests[count++] = (struct CMUnitTest){.name = pairs[k].name,
                                             .test_func = test_pair,
                                             .teardown_func = gu_teardown,
                                             .initial_state = &pairs[k]};
    static char amax_names[COUNT(floats)][32];
    for (size_t f = 0; f < COUNT(floats); ++f) {
        snprintf(amax_names[f], sizeof amax_names[f], "amax %s", ew_dtype_name(floats[f]));
        tests[count++] = (struct CMUnitTest){.name = amax_names[f],
                                             .test_func = test_amax,
                                             .teardown_func = gu_teardown,
                                             .initial_state = (void *)&floats[f]};
    }
    tests[count++] = (struct CMUnitTest){.name = "strided views", .test_func = test_strided, .teardown_func = gu_teardown};
    tests[count++] = (struct CMUnitTest){.name = "graph replay", .test_func = test_graph, .teardown_func = gu_teardown};
    tests[count++] =
        (struct CMUnitTest){.name = "lists", .test_func = test_lists, .teardown_func = gu_teardown};
    const int status = gu_run_tests("scaled_gpu", tests, count, 0, argc, argv);
    ew_handle_destroy(gu_handle());
    return status;
}
