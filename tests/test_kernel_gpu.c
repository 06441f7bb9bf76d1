/* SPDX-License-Identifier: Apache-2.0 */
/* User-defined kernels on the GPU: chains of the catalogue's device functions against the same chain
 * of catalogue calls, bit for bit, over every dtype pair the chain takes; kernels against the CPU
 * reference at every offset of out and the inputs and across every pack width's edges, one to four
 * inputs; strided launches over the layouts of each strided kernel; a user expression; launch errors;
 * graph capture; a launch from a new thread; the caches. */
#define _GNU_SOURCE /* setenv, mkdtemp */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "gpu_util.h"
#include "ref.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The device type a kernel's source names each dtype by. */
static const char *device_type(ew_dtype_t dtype)
{
    static const char *const names[] = {
        [EW_BOOL] = "bool",       [EW_I8] = "int8_t",        [EW_U8] = "uint8_t",
        [EW_I16] = "int16_t",     [EW_I32] = "int32_t",      [EW_I64] = "int64_t",
        [EW_F16] = "__half",      [EW_BF16] = "__nv_bfloat16", [EW_F32] = "float",
        [EW_F64] = "double",      [EW_F8E4M3] = "__nv_fp8_e4m3", [EW_F8E5M2] = "__nv_fp8_e5m2"};
    return names[dtype];
}

static ew_kernel_t create(const char *source, ew_dtype_t out, int n_inputs, const ew_dtype_t *in, int n_params)
{
    ew_kernel_t kernel = NULL;
    ew_status_t status = ew_kernel_create(gu_handle(), source, out, n_inputs, in, n_params, &kernel);
    if (status == EW_ERROR_NOT_SUPPORTED && strstr(ew_get_last_error_message(), "NVRTC") != NULL)
        gu_skip(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
    if (status != EW_SUCCESS)
        GU_FAIL("ew_kernel_create(\"%s\"): %s: %s", source, ew_status_string(status), ew_get_last_error_message());
    return kernel;
}

/* ---- chains of catalogue functions, against the same chain of catalogue calls ---- */

/* out = cast<Y>(relu(scale_add(alpha, a, b))) for every X that scale_add and relu take and every Y:
 * one kernel against ew_scale_add, ew_unary(RELU), ew_cast through temporaries. */
static void chain_matches_catalogue_calls(void **state)
{
    (void)state;
    gu_rng_t rng = gu_rng(gu_seed() ^ 0xC4A1);
    const int64_t n = gu_small_scale() ? 4099 : (1 << 20) + 7;
    for (int x = EW_BOOL; x <= EW_F8E5M2; ++x) {
        if (!ew_is_supported(EW_OP_SCALE_ADD, x, x) || !ew_is_supported(EW_OP_RELU, x, x))
            continue;
        const size_t xs = ew_dtype_size(x);
        const double alpha = x >= EW_F16 ? 1.5 : 3.0; /* integer dtypes take integral alphas */
        gu_buffer_t *a = gu_buffer_new(x, n), *b = gu_buffer_new(x, n), *t = gu_buffer_new(x, n),
                    *r = gu_buffer_new(x, n);
        void *ha = gu_host_alloc(n * xs), *hb = gu_host_alloc(n * xs);
        gu_fill_random(x, n, ha, &rng);
        gu_fill_random(x, n, hb, &rng);
        gu_buffer_load(a, ha, n);
        gu_buffer_load(b, hb, n);
        GU_EW(ew_scale_add(gu_handle(), x, alpha, n, gu_at(t, 0), gu_at(a, 0), gu_at(b, 0), NULL));
        GU_EW(ew_unary(gu_handle(), EW_OP_RELU, x, n, gu_at(r, 0), gu_at(t, 0), NULL));
        for (int y = EW_BOOL; y <= EW_F8E5M2; ++y) {
            if (gu_small_scale() && y != x && y != EW_F16 && y != EW_F8E4M3 && y != EW_BOOL)
                continue;
            const size_t ys = ew_dtype_size(y);
            gu_buffer_t *want = gu_buffer_new(y, n), *got = gu_buffer_new(y, n);
            GU_EW(ew_cast(gu_handle(), y, x, n, gu_at(want, 0), gu_at(r, 0), NULL));
            char source[160];
            snprintf(source, sizeof source, "return ew::cast<%s>(ew::relu(ew::scale_add(p0, in0, in1)));",
                     device_type(y));
            const ew_dtype_t in[] = {x, x};
            ew_kernel_t kernel = create(source, y, 2, in, 1);
            const void *inputs[] = {gu_at(a, 0), gu_at(b, 0)};
            GU_EW(ew_kernel_launch(kernel, n, gu_at(got, 0), inputs, &alpha, NULL));
            GU_CUDA(cudaDeviceSynchronize());
            void *expected = gu_host_alloc(n * ys), *result = gu_host_alloc(n * ys);
            GU_CUDA(cudaMemcpy(expected, gu_at(want, 0), n * ys, cudaMemcpyDeviceToHost));
            GU_CUDA(cudaMemcpy(result, gu_at(got, 0), n * ys, cudaMemcpyDeviceToHost));
            char what[96];
            snprintf(what, sizeof what, "chain %s -> %s", ew_dtype_name(x), ew_dtype_name(y));
            const gu_inputs_t inputs_for_messages = {2, {x, x}, {ha, hb}};
            if (gu_compare(y, n, expected, result, &inputs_for_messages, what) != 0)
                GU_FAIL("%s differs from the catalogue calls", what);
            GU_EW(ew_kernel_destroy(kernel));
            gu_buffer_free(want);
            gu_buffer_free(got);
        }
        gu_buffer_free(a);
        gu_buffer_free(b);
        gu_buffer_free(t);
        gu_buffer_free(r);
    }
}

/* ---- every offset and pack width, against the CPU reference ---- */

typedef struct {
    const char *source;
    ew_dtype_t out;
    int n_inputs;
    ew_dtype_t in[4];
} kernel_case_t;

/* The CPU reference of the cases below, element by element through the catalogue's references. */
static void reference(const kernel_case_t *c, int64_t n, void *out, const void *const *in)
{
    if (c->n_inputs == 1) { /* cast */
        ref_cast(c->out, c->in[0], n, out, in[0]);
    } else if (c->n_inputs == 2) { /* add */
        ref_binary(EW_OP_ADD, c->out, n, out, in[0], in[1]);
    } else if (c->n_inputs == 3) { /* add(mul(in0, in1), in2) */
        ref_binary(EW_OP_MUL, c->out, n, out, in[0], in[1]);
        ref_binary(EW_OP_ADD, c->out, n, out, out, in[2]);
    } else { /* add(add(in0, in1), add(in2, in3)) */
        void *t = gu_host_alloc(n * ew_dtype_size(c->out));
        ref_binary(EW_OP_ADD, c->out, n, out, in[0], in[1]);
        ref_binary(EW_OP_ADD, c->out, n, t, in[2], in[3]);
        ref_binary(EW_OP_ADD, c->out, n, out, out, t);
    }
}

/* Sizes across the head, every pack width's tail and a few grid strides. */
static const int64_t kSizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 127, 129, 255, 257, 1000, 4099, 65537};

static void offsets_and_packs(void **state)
{
    (void)state;
    static const kernel_case_t cases[] = {
        {"return ew::add(in0, in1);", EW_F32, 2, {EW_F32, EW_F32}},
        {"return ew::add(in0, in1);", EW_F16, 2, {EW_F16, EW_F16}},
        {"return ew::add(in0, in1);", EW_I8, 2, {EW_I8, EW_I8}},
        {"return ew::add(in0, in1);", EW_F64, 2, {EW_F64, EW_F64}},
        {"return ew::add(in0, in1);", EW_BOOL, 2, {EW_BOOL, EW_BOOL}},
        {"return ew::cast<__nv_fp8_e4m3>(in0);", EW_F8E4M3, 1, {EW_F32}}, /* out stored element by element */
        {"return ew::cast<__half>(in0);", EW_F16, 1, {EW_F32}},
        {"return ew::cast<float>(in0);", EW_F32, 1, {EW_U8}},
        {"return ew::add(ew::mul(in0, in1), in2);", EW_F16, 3, {EW_F16, EW_F16, EW_F16}},
        {"return ew::add(ew::mul(in0, in1), in2);", EW_I32, 3, {EW_I32, EW_I32, EW_I32}},
        {"return ew::add(ew::add(in0, in1), ew::add(in2, in3));", EW_BF16, 4, {EW_BF16, EW_BF16, EW_BF16, EW_BF16}},
        {"return ew::add(ew::add(in0, in1), ew::add(in2, in3));", EW_U8, 4, {EW_U8, EW_U8, EW_U8, EW_U8}},
    };
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x0FF5);
    const int64_t capacity = kSizes[COUNT(kSizes) - 1];
    for (size_t k = 0; k < COUNT(cases); ++k) {
        const kernel_case_t *c = &cases[k];
        ew_kernel_t kernel = create(c->source, c->out, c->n_inputs, c->in, 0);
        gu_buffer_t *out = gu_buffer_new(c->out, capacity), *in[4] = {NULL};
        void *host[4], *at_host[4];
        for (int i = 0; i < c->n_inputs; ++i) {
            in[i] = gu_buffer_new(c->in[i], capacity);
            host[i] = gu_host_alloc(gu_buffer_region_elems(in[i]) * ew_dtype_size(c->in[i]));
            gu_fill_random(c->in[i], gu_buffer_region_elems(in[i]), host[i], &rng);
            gu_buffer_load(in[i], host[i], gu_buffer_region_elems(in[i]));
        }
        void *expected = gu_host_alloc(capacity * ew_dtype_size(c->out));
        const int out_offsets = gu_offset_count(c->out);
        for (size_t s = 0; s < COUNT(kSizes); ++s) {
            const int64_t n = kSizes[s];
            if (gu_small_scale() && n > 4099)
                continue;
            /* every offset of out; the inputs at offsets that walk through all phases against it */
            for (int o = 0; o < out_offsets; ++o) {
                const void *inputs[4];
                int offset[4];
                for (int i = 0; i < c->n_inputs; ++i) {
                    offset[i] = (o * (i + 1) + (int)s + i) % gu_offset_count(c->in[i]);
                    inputs[i] = gu_at(in[i], offset[i]);
                    at_host[i] = (unsigned char *)host[i] + offset[i] * ew_dtype_size(c->in[i]);
                }
                reference(c, n, expected, (const void *const *)at_host);
                gu_buffer_poison(out, GU_POISON);
                GU_EW(ew_kernel_launch(kernel, n, gu_at(out, o), inputs, NULL, NULL));
                GU_CUDA(cudaDeviceSynchronize());
                char what[160];
                snprintf(what, sizeof what, "%s (%s) n=%lld out+%d in+%d,%d,%d,%d", c->source, ew_dtype_name(c->out),
                         (long long)n, o, offset[0], c->n_inputs > 1 ? offset[1] : 0,
                         c->n_inputs > 2 ? offset[2] : 0, c->n_inputs > 3 ? offset[3] : 0);
                const gu_inputs_t inputs_for_messages = {c->n_inputs > 1 ? 2 : 1, {c->in[0], c->in[1]},
                                                         {at_host[0], c->n_inputs > 1 ? at_host[1] : NULL}};
                if (GU_CHECK_OUTPUT(out, o, n, expected, &inputs_for_messages, what) > 0) {
                    /* elements that equal the poison: again with another poison */
                    gu_buffer_poison(out, 0x5A);
                    GU_EW(ew_kernel_launch(kernel, n, gu_at(out, o), inputs, NULL, NULL));
                    GU_CUDA(cudaDeviceSynchronize());
                    GU_CHECK_OUTPUT(out, o, n, expected, &inputs_for_messages, what);
                }
                for (int i = 0; i < c->n_inputs; ++i)
                    GU_CHECK_UNCHANGED(in[i], what);
            }
        }
        for (int i = 0; i < c->n_inputs; ++i)
            gu_buffer_free(in[i]);
        gu_buffer_free(out);
        GU_EW(ew_kernel_destroy(kernel));
    }
}

/* ---- strided launches, against the CPU reference ---- */

enum { STRIDED_DIMS = 3 };

/* A layout: out's shape and every operand's strides in elements (out first), as given to the call. */
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[STRIDED_DIMS];
    int64_t strides[5][STRIDED_DIMS];
} strided_case_t;

/* The element offset of index i (flat, C order over shape) in an operand of these strides. */
static int64_t strided_offset(const strided_case_t *l, const int64_t *strides, int64_t i)
{
    int64_t offset = 0;
    for (int d = l->ndim - 1; d >= 0; --d) {
        offset += i % l->shape[d] * strides[d];
        i /= l->shape[d];
    }
    return offset;
}

/* The lowest and the highest offset an operand of these strides reaches. */
static void strided_span(const strided_case_t *l, const int64_t *strides, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int d = 0; d < l->ndim; ++d)
        *(strides[d] < 0 ? lo : hi) += (l->shape[d] - 1) * strides[d];
}

/* Every layout against each kernel: the whole of out's buffer read back, its elements at out's offsets
 * equal to the reference and the rest still poison, under two poisons; inputs unchanged. */
static void strided_layouts(void **state)
{
    (void)state;
    enum { R = 67, C = 45 };
    static const strided_case_t layouts[] = {
        {"contiguous (the flat launch)", 2, {R, C}, {{C, 1}, {C, 1}, {C, 1}, {C, 1}, {C, 1}}},
        {"row and column broadcasts (rows)", 2, {R, C}, {{C, 1}, {C, 1}, {0, 1}, {1, 0}, {0, 0}}},
        {"a transposed input (tiled)", 2, {R, C}, {{C, 1}, {1, R}, {C, 1}, {0, 1}, {1, 0}}},
        {"a transposed input, whole vector runs (tiled)", 2, {136, 72}, {{72, 1}, {1, 136}, {72, 1}, {0, 1}, {1, 0}}},
        {"negative strides (rows)", 2, {R, C}, {{C, 1}, {-C, 1}, {C, -1}, {-1, 0}, {0, -1}}},
        {"out strided (gather, out indexed)", 2, {R, C}, {{2 * C + 3, 2}, {C, 1}, {0, 1}, {1, 0}, {C, 1}}},
        {"3-d, permuted and broadcast (gather)", 3, {5, 7, 33}, {{231, 33, 1}, {33, 165, 1}, {0, 33, 1}, {1, 5, 0}, {231, 33, 1}}},
        {"out transposed (tiled)", 2, {R, C}, {{1, R}, {C, 1}, {0, 1}, {C, 1}, {1, 0}}},
    };
    static const kernel_case_t kernels[] = {
        {"return ew::add(in0, in1);", EW_F32, 2, {EW_F32, EW_F32}},
        {"return ew::add(in0, in1);", EW_I8, 2, {EW_I8, EW_I8}},
        {"return ew::cast<__half>(in0);", EW_F16, 1, {EW_F32}},
        {"return ew::add(ew::mul(in0, in1), in2);", EW_F16, 3, {EW_F16, EW_F16, EW_F16}},
        {"return ew::add(ew::add(in0, in1), ew::add(in2, in3));", EW_F64, 4, {EW_F64, EW_F64, EW_F64, EW_F64}},
        {"return ew::add(ew::add(in0, in1), ew::add(in2, in3));", EW_U8, 4, {EW_U8, EW_U8, EW_U8, EW_U8}},
    };
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x57D);
    for (size_t k = 0; k < COUNT(kernels); ++k) {
        const kernel_case_t *c = &kernels[k];
        ew_kernel_t kernel = create(c->source, c->out, c->n_inputs, c->in, 0);
        for (size_t l = 0; l < COUNT(layouts); ++l) {
            const strided_case_t *layout = &layouts[l];
            int64_t n = 1, lo[5], hi[5];
            for (int d = 0; d < layout->ndim; ++d)
                n *= layout->shape[d];
            gu_buffer_t *buffer[5];
            void *host[5], *dense[4], *at[5];
            for (int o = 0; o <= c->n_inputs; ++o) {
                const ew_dtype_t dtype = o == 0 ? c->out : c->in[o - 1];
                const size_t size = ew_dtype_size(dtype);
                strided_span(layout, layout->strides[o], &lo[o], &hi[o]);
                buffer[o] = gu_buffer_new(dtype, hi[o] - lo[o] + 1);
                at[o] = (unsigned char *)gu_at(buffer[o], 0) - lo[o] * (int64_t)size;
                if (o == 0)
                    continue;
                /* the input's region, and its elements gathered in out's order for the reference */
                host[o] = gu_host_alloc(gu_buffer_region_elems(buffer[o]) * size);
                gu_fill_random(dtype, gu_buffer_region_elems(buffer[o]), host[o], &rng);
                gu_buffer_load(buffer[o], host[o], gu_buffer_region_elems(buffer[o]));
                dense[o - 1] = gu_host_alloc(n * size);
                for (int64_t i = 0; i < n; ++i)
                    memcpy((unsigned char *)dense[o - 1] + i * size,
                           (unsigned char *)host[o] + (strided_offset(layout, layout->strides[o], i) - lo[o]) * size,
                           size);
            }
            const size_t out_size = ew_dtype_size(c->out);
            void *expected = gu_host_alloc(n * out_size);
            reference(c, n, expected, (const void *const *)dense);
            const int64_t region = buffer[0]->capacity; /* the elements between out's lowest and highest */
            void *want = gu_host_alloc(region * out_size);
            const int64_t *in_strides[4];
            const void *inputs[4];
            for (int i = 0; i < c->n_inputs; ++i) {
                in_strides[i] = layout->strides[1 + i];
                inputs[i] = at[1 + i];
            }
            char what[200];
            snprintf(what, sizeof what, "%s (%s) strided: %s", c->source, ew_dtype_name(c->out), layout->name);
            const uint8_t poisons[] = {GU_POISON, GU_POISON_ALT};
            for (size_t p = 0; p < COUNT(poisons); ++p) {
                gu_buffer_poison(buffer[0], poisons[p]);
                memset(want, poisons[p], region * out_size);
                for (int64_t i = 0; i < n; ++i)
                    memcpy((unsigned char *)want + (strided_offset(layout, layout->strides[0], i) - lo[0]) * out_size,
                           (unsigned char *)expected + i * out_size, out_size);
                GU_EW(ew_kernel_launch_strided(kernel, layout->ndim, layout->shape, at[0], layout->strides[0], inputs,
                                               in_strides, NULL, NULL));
                GU_CUDA(cudaDeviceSynchronize());
                GU_CHECK_OUTPUT(buffer[0], 0, region, want, NULL, what);
            }
            for (int o = 0; o <= c->n_inputs; ++o) {
                if (o > 0)
                    GU_CHECK_UNCHANGED(buffer[o], what);
                gu_buffer_free(buffer[o]);
            }
        }
        GU_EW(ew_kernel_destroy(kernel));
    }
}

/* Strided launches refuse what the catalogue's strided calls refuse, and take NULL strides as
 * C-contiguous: a broadcast row added with in_strides NULL for the other input. */
static void strided_arguments(void **state)
{
    (void)state;
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    ew_kernel_t kernel = create("return ew::add(in0, in1);", EW_F32, 2, in, 0);
    enum { R = 300, C = 257 };
    gu_buffer_t *out = gu_buffer_new(EW_F32, R * C), *a = gu_buffer_new(EW_F32, R * C), *b = gu_buffer_new(EW_F32, C);
    float *ha = gu_host_alloc(R * C * 4), *hb = gu_host_alloc(C * 4), *want = gu_host_alloc(R * C * 4);
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x57E);
    gu_fill_random(EW_F32, R * C, ha, &rng);
    gu_fill_random(EW_F32, C, hb, &rng);
    gu_buffer_load(a, ha, R * C);
    gu_buffer_load(b, hb, C);
    const int64_t shape[] = {R, C}, row[] = {0, 1}, zero[] = {0, 0};
    const int64_t *strides[] = {NULL, row};
    const void *inputs[] = {gu_at(a, 0), gu_at(b, 0)};
    GU_EW(ew_kernel_launch_strided(kernel, 2, shape, gu_at(out, 0), NULL, inputs, strides, NULL, NULL));
    GU_CUDA(cudaDeviceSynchronize());
    for (int r = 0; r < R; ++r)
        ref_binary(EW_OP_ADD, EW_F32, C, want + r * C, ha + r * C, hb);
    GU_CHECK_OUTPUT(out, 0, R * C, want, NULL, "broadcast row, NULL strides");

    /* out broadcast, out overlapping an input, a NULL shape, too many dimensions, a NULL kernel */
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE,
                 ew_kernel_launch_strided(kernel, 2, shape, gu_at(out, 0), zero, inputs, NULL, NULL, NULL));
    const void *overlapping[] = {gu_at(out, 1), gu_at(b, 0)};
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE,
                 ew_kernel_launch_strided(kernel, 2, shape, gu_at(out, 0), NULL, overlapping, strides, NULL, NULL));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE,
                 ew_kernel_launch_strided(kernel, 2, NULL, gu_at(out, 0), NULL, inputs, NULL, NULL, NULL));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE,
                 ew_kernel_launch_strided(kernel, EW_MAX_DIMS + 1, shape, gu_at(out, 0), NULL, inputs, NULL, NULL, NULL));
    GU_EW_EXPECT(EW_ERROR_INVALID_HANDLE,
                 ew_kernel_launch_strided(NULL, 2, shape, gu_at(out, 0), NULL, inputs, NULL, NULL, NULL));
    const int64_t empty[] = {R, 0};
    GU_EW(ew_kernel_launch_strided(kernel, 2, empty, NULL, NULL, NULL, NULL, NULL, NULL));
    GU_CHECK_UNCHANGED(a, "strided errors");
    GU_CHECK_UNCHANGED(b, "strided errors");
    GU_EW(ew_kernel_destroy(kernel));
}

/* In place: out is the first input (a at offset 1, b at offset 3: shifted windows). */
static void in_place(void **state)
{
    (void)state;
    const int64_t n = 100003;
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    ew_kernel_t kernel = create("return ew::mul(in0, in1);", EW_F32, 2, in, 0);
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x1A);
    gu_buffer_t *a = gu_buffer_new(EW_F32, n), *b = gu_buffer_new(EW_F32, n);
    float *ha = gu_host_alloc(gu_buffer_region_elems(a) * 4), *hb = gu_host_alloc(gu_buffer_region_elems(b) * 4);
    float *want = gu_host_alloc(n * 4), *got = gu_host_alloc(n * 4);
    gu_fill_random(EW_F32, gu_buffer_region_elems(a), ha, &rng);
    gu_fill_random(EW_F32, gu_buffer_region_elems(b), hb, &rng);
    gu_buffer_load(a, ha, gu_buffer_region_elems(a));
    gu_buffer_load(b, hb, gu_buffer_region_elems(b));
    ref_binary(EW_OP_MUL, EW_F32, n, want, ha + 1, hb + 3);
    const void *inputs[] = {gu_at(a, 1), gu_at(b, 3)};
    GU_EW(ew_kernel_launch(kernel, n, gu_at(a, 1), inputs, NULL, NULL));
    GU_CUDA(cudaDeviceSynchronize());
    GU_CUDA(cudaMemcpy(got, gu_at(a, 1), n * 4, cudaMemcpyDeviceToHost));
    const gu_inputs_t inputs_for_messages = {2, {EW_F32, EW_F32}, {ha + 1, hb + 3}};
    if (gu_compare(EW_F32, n, want, got, &inputs_for_messages, "in place") != 0)
        GU_FAIL("in place differs");
    GU_CHECK_UNCHANGED(b, "in place");
    GU_EW(ew_kernel_destroy(kernel));
}

/* ---- a user expression ---- */

static void user_expression(void **state)
{
    (void)state;
    const int64_t n = gu_small_scale() ? 20000 : 1 << 22;
    const ew_dtype_t in[] = {EW_F32};
    ew_kernel_t kernel = create("return in0 > 0.f ? in0 : 0.01f * in0;", EW_F32, 1, in, 0);
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x1E);
    float *x = gu_host_alloc(n * 4), *want = gu_host_alloc(n * 4), *got = gu_host_alloc(n * 4);
    gu_fill_random(EW_F32, n, x, &rng);
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(x[i])) /* the GPU's NaN payload is its own; NaN-ness is covered by the chains */
            x[i] = -2.5f;
        volatile float scaled = 0.01f * x[i]; /* one rounding, as the GPU's multiply */
        want[i] = x[i] > 0.f ? x[i] : scaled;
    }
    float *dx, *dout;
    GU_CUDA(cudaMalloc((void **)&dx, n * 4));
    GU_CUDA(cudaMalloc((void **)&dout, n * 4));
    GU_CUDA(cudaMemcpy(dx, x, n * 4, cudaMemcpyHostToDevice));
    GU_CUDA(cudaMemset(dout, GU_POISON, n * 4));
    const void *inputs[] = {dx};
    GU_EW(ew_kernel_launch(kernel, n, dout, inputs, NULL, NULL));
    GU_CUDA(cudaMemcpy(got, dout, n * 4, cudaMemcpyDeviceToHost));
    if (gu_compare(EW_F32, n, want, got, NULL, "leaky relu") != 0)
        GU_FAIL("leaky relu differs from the CPU");
    cudaFree(dx);
    cudaFree(dout);
    GU_EW(ew_kernel_destroy(kernel));
}

/* ---- errors ---- */

static void errors(void **state)
{
    (void)state;
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    ew_kernel_t kernel = NULL;
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE,
                 ew_kernel_create(gu_handle(), "return in0 +* in1;", EW_F32, 2, in, 0, &kernel));
    if (kernel != NULL || strstr(ew_get_last_error_message(), "source(1)") == NULL)
        GU_FAIL("a compile error: kernel %p, message \"%s\"", (void *)kernel, ew_get_last_error_message());
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_create(gu_handle(), "return in0;", EW_F32, 5, in, 0, &kernel));
    GU_EW_EXPECT(EW_ERROR_NOT_SUPPORTED,
                 ew_kernel_create(gu_handle(), "return in0;", (ew_dtype_t)99, 2, in, 0, &kernel));
    kernel = create("return ew::add(in0, in1);", EW_F32, 2, in, 0);
    float *a;
    GU_CUDA(cudaMalloc((void **)&a, 4096));
    GU_CUDA(cudaMemset(a, 0x3C, 4096)); /* the in-place call below reads it */
    const void *inputs[] = {a, a};
    const void *misaligned[] = {(const char *)a + 2, a};
    GU_EW(ew_kernel_launch(kernel, 0, NULL, NULL, NULL, NULL));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_launch(kernel, -1, a, inputs, NULL, NULL));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_launch(kernel, 16, a, NULL, NULL, NULL));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_launch(kernel, 16, a, misaligned, NULL, NULL));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_launch(kernel, 16, a + 1, inputs, NULL, NULL)); /* overlap */
    GU_EW(ew_kernel_launch(kernel, 16, a, inputs, NULL, NULL));                                   /* in place */
    GU_EW(ew_kernel_destroy(kernel));
    GU_EW_EXPECT(EW_ERROR_INVALID_HANDLE, ew_kernel_launch(kernel, 16, a, inputs, NULL, NULL));
    GU_EW_EXPECT(EW_ERROR_INVALID_HANDLE, ew_kernel_destroy(kernel));
    GU_EW(ew_kernel_destroy(NULL));
    const ew_dtype_t one[] = {EW_F32};
    kernel = create("return in0 * p0 + p1;", EW_F32, 1, one, 2);
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_launch(kernel, 16, a, inputs, NULL, NULL));
    GU_EW(ew_kernel_destroy(kernel));
    GU_CUDA(cudaDeviceSynchronize());
    cudaFree(a);
}

/* ---- graph capture ---- */

static void graph_capture(void **state)
{
    (void)state;
    const int64_t n = 70001;
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    ew_kernel_t kernel = create("return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));", EW_F16, 2, in, 1);
    float *a, *b, *t;
    uint16_t *out, *want;
    GU_CUDA(cudaMalloc((void **)&a, n * 4));
    GU_CUDA(cudaMalloc((void **)&b, n * 4));
    GU_CUDA(cudaMalloc((void **)&t, n * 4));
    GU_CUDA(cudaMalloc((void **)&out, n * 2));
    GU_CUDA(cudaMalloc((void **)&want, n * 2));
    float *ha = gu_host_alloc(n * 4), *hb = gu_host_alloc(n * 4);
    uint16_t *got = gu_host_alloc(n * 2), *expected = gu_host_alloc(n * 2);
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    const double alpha = -0.75;
    const void *inputs[] = {a, b};
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    GU_EW(ew_kernel_launch(kernel, n, out, inputs, &alpha, stream));
    cudaGraph_t graph;
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    cudaGraphExec_t exec;
    GU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    gu_track_graph_exec(exec);
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x6A);
    for (int replay = 0; replay < 3; ++replay) {
        gu_fill_random(EW_F32, n, ha, &rng);
        gu_fill_random(EW_F32, n, hb, &rng);
        GU_CUDA(cudaMemcpy(a, ha, n * 4, cudaMemcpyHostToDevice));
        GU_CUDA(cudaMemcpy(b, hb, n * 4, cudaMemcpyHostToDevice));
        GU_CUDA(cudaMemset(out, GU_POISON, n * 2));
        GU_EW(ew_scale_add(gu_handle(), EW_F32, alpha, n, t, a, b, NULL));
        GU_EW(ew_unary(gu_handle(), EW_OP_RELU, EW_F32, n, t, t, NULL));
        GU_EW(ew_cast(gu_handle(), EW_F16, EW_F32, n, want, t, NULL));
        GU_CUDA(cudaDeviceSynchronize()); /* the legacy stream's work before the non-blocking stream's */
        GU_CUDA(cudaGraphLaunch(exec, stream));
        GU_CUDA(cudaStreamSynchronize(stream));
        GU_CUDA(cudaMemcpy(got, out, n * 2, cudaMemcpyDeviceToHost));
        GU_CUDA(cudaMemcpy(expected, want, n * 2, cudaMemcpyDeviceToHost));
        if (gu_compare(EW_F16, n, expected, got, NULL, "graph replay") != 0)
            GU_FAIL("replay %d differs", replay);
    }
    GU_EW(ew_kernel_destroy(kernel));
    cudaFree(a);
    cudaFree(b);
    cudaFree(t);
    cudaFree(out);
    cudaFree(want);
}

/* ---- from a new thread ---- */

typedef struct {
    ew_kernel_t kernel;
    int64_t n;
    void *out;
    const void *const *inputs;
    ew_status_t launch;
    cudaError_t sync;
    char message[256];
} thread_launch_t;

/* No cmocka here: its failures jump, which must stay in the test's own thread. */
static void *launch_in_thread(void *argument)
{
    thread_launch_t *t = argument;
    t->launch = ew_kernel_launch(t->kernel, t->n, t->out, t->inputs, NULL, NULL);
    snprintf(t->message, sizeof t->message, "%s", ew_get_last_error_message());
    t->sync = cudaDeviceSynchronize();
    return NULL;
}

/* A kernel made in one thread, launched from a thread whose first CUDA call the launch is: it binds
 * the device's primary context there, as the runtime does for a catalogue call. */
static void launch_from_a_new_thread(void **state)
{
    (void)state;
    const int64_t n = 65537;
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    ew_kernel_t kernel = create("return ew::add(in0, in1);", EW_F32, 2, in, 0);
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x7E);
    float *ha = gu_host_alloc(n * 4), *hb = gu_host_alloc(n * 4), *want = gu_host_alloc(n * 4),
          *got = gu_host_alloc(n * 4);
    gu_fill_random(EW_F32, n, ha, &rng);
    gu_fill_random(EW_F32, n, hb, &rng);
    ref_binary(EW_OP_ADD, EW_F32, n, want, ha, hb);
    float *a, *b, *out;
    GU_CUDA(cudaMalloc((void **)&a, n * 4));
    GU_CUDA(cudaMalloc((void **)&b, n * 4));
    GU_CUDA(cudaMalloc((void **)&out, n * 4));
    GU_CUDA(cudaMemcpy(a, ha, n * 4, cudaMemcpyHostToDevice));
    GU_CUDA(cudaMemcpy(b, hb, n * 4, cudaMemcpyHostToDevice));
    GU_CUDA(cudaMemset(out, GU_POISON, n * 4));
    const void *inputs[] = {a, b};
    thread_launch_t t = {.kernel = kernel, .n = n, .out = out, .inputs = inputs};
    pthread_t thread;
    if (pthread_create(&thread, NULL, launch_in_thread, &t) != 0)
        GU_FAIL("pthread_create failed");
    pthread_join(thread, NULL);
    if (t.launch != EW_SUCCESS)
        GU_FAIL("the launch from a new thread: %s: %s", ew_status_string(t.launch), t.message);
    GU_CUDA(t.sync);
    GU_CUDA(cudaMemcpy(got, out, n * 4, cudaMemcpyDeviceToHost));
    const gu_inputs_t inputs_for_messages = {2, {EW_F32, EW_F32}, {ha, hb}};
    if (gu_compare(EW_F32, n, want, got, &inputs_for_messages, "new thread") != 0)
        GU_FAIL("the launch from a new thread differs from the CPU");
    GU_EW(ew_kernel_destroy(kernel));
    cudaFree(a);
    cudaFree(b);
    cudaFree(out);
}

/* ---- the caches ---- */

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cache_files(const char *dir)
{
    DIR *d = opendir(dir);
    int files = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        files += strstr(e->d_name, ".ewk") != NULL;
    if (d != NULL)
        closedir(d);
    return files;
}

/* A new source compiles and lands on disk; the same source again comes from memory. */
static void caches(void **state)
{
    (void)state;
    char dir[] = "/tmp/ew-kernel-cache-XXXXXX";
    if (mkdtemp(dir) == NULL)
        GU_FAIL("mkdtemp failed");
    char path[64];
    snprintf(path, sizeof path, "%s/cache", dir);
    setenv("EW_KERNEL_CACHE_DIR", path, 1);
    char source[96];
    snprintf(source, sizeof source, "return in0 * 3; // %llu", (unsigned long long)gu_seed() ^ (unsigned long long)getpid());
    const ew_dtype_t in[] = {EW_I32};
    double start = now_us();
    ew_kernel_t first = create(source, EW_I32, 1, in, 0);
    double compiled = now_us() - start;
    struct stat st;
    if (cache_files(path) != 1 || stat(path, &st) != 0 || (st.st_mode & 0777) != 0700)
        GU_FAIL("after a compile, %s holds %d cache files (mode %o)", path, cache_files(path), st.st_mode & 0777);
    start = now_us();
    ew_kernel_t second = create(source, EW_I32, 1, in, 0);
    double from_memory = now_us() - start;
    if (cache_files(path) != 1)
        GU_FAIL("a second create wrote again");
    printf("kernel creation: compiled %.1f ms, from memory %.1f us\n", compiled / 1e3, from_memory);
    int32_t *x;
    GU_CUDA(cudaMalloc((void **)&x, 64 * 4));
    int32_t host[64], got[64];
    for (int i = 0; i < 64; ++i)
        host[i] = i - 20;
    GU_CUDA(cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice));
    const void *inputs[] = {x};
    GU_EW(ew_kernel_launch(second, 64, x, inputs, NULL, NULL));
    GU_EW(ew_kernel_launch(first, 64, x, inputs, NULL, NULL));
    GU_CUDA(cudaMemcpy(got, x, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i)
        if (got[i] != host[i] * 9)
            GU_FAIL("element %d: %d, expected %d", i, got[i], host[i] * 9);
    GU_EW(ew_kernel_destroy(first));
    GU_EW(ew_kernel_destroy(second));
    cudaFree(x);
    unsetenv("EW_KERNEL_CACHE_DIR");
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0)
        printf("could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    gu_require_gpu("test_kernel_gpu");
    printf("test_kernel_gpu: EW_TEST_SCALE=%s, EW_TEST_SEED=0x%llx\n", gu_small_scale() ? "small" : "full",
           (unsigned long long)gu_seed());
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(errors, gu_teardown),
        cmocka_unit_test_teardown(caches, gu_teardown),
        cmocka_unit_test_teardown(user_expression, gu_teardown),
        cmocka_unit_test_teardown(in_place, gu_teardown),
        cmocka_unit_test_teardown(graph_capture, gu_teardown),
        cmocka_unit_test_teardown(launch_from_a_new_thread, gu_teardown),
        cmocka_unit_test_teardown(offsets_and_packs, gu_teardown),
        cmocka_unit_test_teardown(strided_layouts, gu_teardown),
        cmocka_unit_test_teardown(strided_arguments, gu_teardown),
        cmocka_unit_test_teardown(chain_matches_catalogue_calls, gu_teardown),
    };
    return gu_run_tests("user-defined kernels", tests, COUNT(tests), argc, argv);
}
