/* SPDX-License-Identifier: Apache-2.0 */
/* User-defined kernels on the GPU: chains of the catalogue's device functions against the same chain
 * of catalogue calls, bit for bit, over every dtype pair the chain takes; kernels against the CPU
 * reference at every offset of out and the inputs and across every pack width's edges, one to four
 * inputs; strided launches over the layouts of each strided kernel; a user expression; launch errors;
 * graph capture; a launch from a new thread; the caches. */
#define _GNU_SOURCE /* setenv, mkdtemp */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <spawn.h>
#include <sys/wait.h>

#include "cache_env.h"
#include "rtc/kernel_cache.h"

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
        [EW_F64] = "double",      [EW_F8E4M3] = "__nv_fp8_e4m3", [EW_F8E5M2] = "__nv_fp8_e5m2",
        [EW_F8E8M0] = "__nv_fp8_e8m0"};
    return names[dtype];
}

static ew_kernel_t create(const char *source, ew_dtype_t out, int n_inputs, const ew_dtype_t *in, int n_params)
{
    ew_kernel_t kernel = NULL;
    ew_status_t status = ew_kernel_create(gu_handle(), source, out, n_inputs, in, n_params, &kernel);
    if (gu_status_means_no_nvrtc(status))
        gu_skip(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
    if (status != EW_SUCCESS)
        GU_FAIL("ew_kernel_create(\"%s\"): %s: %s", source, ew_status_string(status), ew_get_last_error_message());
    return kernel;
}

/* ---- chains of catalogue functions, against the same chain in the CPU reference ---- */

/* out = cast<y>(relu(scale_add(alpha, a, b))) over n elements of x, as the reference computes it. */
static void reference_chain(ew_dtype_t y, ew_dtype_t x, double alpha, int64_t n, void *out, const void *a,
                            const void *b)
{
    void *t = malloc(n * ew_dtype_size(x));
    if (t == NULL)
        GU_FAIL("out of host memory");
    ref_scale_add(x, alpha, n, t, a, b);
    ref_unary(EW_OP_RELU, x, n, t, t);
    ref_cast(y, x, n, out, t);
    free(t);
}

/* out = cast<Y>(relu(scale_add(alpha, a, b))) for every X that scale_add and relu take and every Y:
 * one kernel against the reference's scale_add, relu and cast (tests/ref, which shares nothing with
 * the device functions the kernel calls). */
static void chain_matches_reference(void **state)
{
    (void)state;
    gu_rng_t rng = gu_rng(gu_seed() ^ 0xC4A1);
    const int64_t n = gu_small_scale() ? 4099 : (1 << 20) + 7;
    for (int x = EW_BOOL; x <= EW_F8E8M0; ++x) {
        if (!ew_is_supported(EW_OP_SCALE_ADD, x, x) || !ew_is_supported(EW_OP_RELU, x, x))
            continue;
        const size_t xs = ew_dtype_size(x);
        /* integer dtypes take integral alphas, bool 0 or 1 */
        const double alpha = x == EW_BOOL ? 1.0 : x >= EW_F16 ? 1.5 : 3.0;
        gu_buffer_t *a = gu_buffer_new(x, n), *b = gu_buffer_new(x, n);
        void *ha = gu_host_alloc(n * xs), *hb = gu_host_alloc(n * xs);
        gu_fill_random(x, n, ha, &rng);
        gu_fill_random(x, n, hb, &rng);
        gu_buffer_load(a, ha, n);
        gu_buffer_load(b, hb, n);
        const gu_inputs_t inputs_for_messages = {2, {x, x}, {ha, hb}};
        void *relu = gu_host_alloc(n * xs), *expected = gu_host_alloc(n * sizeof(double));
        ref_scale_add(x, alpha, n, relu, ha, hb);
        ref_unary(EW_OP_RELU, x, n, relu, relu);
        for (int y = EW_BOOL; y <= EW_F8E8M0; ++y) {
            if (gu_small_scale() && y != x && y != EW_F16 && y != EW_F8E4M3 && y != EW_F8E8M0 && y != EW_BOOL)
                continue;
            gu_buffer_t *out = gu_buffer_new(y, n);
            ref_cast(y, x, n, expected, relu);
            char source[160];
            snprintf(source, sizeof source, "return ew::cast<%s>(ew::relu(ew::scale_add(p0, in0, in1)));",
                     device_type(y));
            const ew_dtype_t in[] = {x, x};
            ew_kernel_t kernel = create(source, y, 2, in, 1);
            const void *inputs[] = {gu_at(a, 0), gu_at(b, 0)};
            char what[96];
            snprintf(what, sizeof what, "chain %s -> %s", ew_dtype_name(x), ew_dtype_name(y));
            const uint8_t poisons[] = {GU_POISON, GU_POISON_ALT};
            for (size_t p = 0; p < COUNT(poisons); ++p) {
                gu_buffer_poison(out, poisons[p]);
                GU_EW(ew_kernel_launch(kernel, n, gu_at(out, 0), inputs, &alpha, NULL));
                GU_CUDA(cudaDeviceSynchronize());
                if (GU_CHECK_OUTPUT(out, 0, n, expected, &inputs_for_messages, what) == 0)
                    break; /* every element written: none could pass as the poison */
            }
            GU_CHECK_UNCHANGED(a, what);
            GU_CHECK_UNCHANGED(b, what);
            GU_EW(ew_kernel_destroy(kernel));
            gu_buffer_free(out);
        }
        gu_buffer_free(a);
        gu_buffer_free(b);
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
        {"return ew::cast<__nv_fp8_e8m0>(in0);", EW_F8E8M0, 1, {EW_F32}},
        {"return ew::cast<double>(in0);", EW_F64, 1, {EW_F8E8M0}}, /* in0 an e8m0 of the user's */
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

/* ---- one kernel's flat and strided launches against the reference: captures and the caches ---- */

/* The chain kernel over f32 into f16, a comment naming it (so that each tag is a program of its own,
 * which no cache has seen) after the body. */
static const char kChain[] = "return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));";

static ew_kernel_t create_chain(const char *tag)
{
    char source[256];
    snprintf(source, sizeof source, "%s // %s", kChain, tag);
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    return create(source, EW_F16, 2, in, 1);
}

/* A tag no process has used: the seed, the process and a count. */
static const char *new_tag(const char *what)
{
    static char tag[128];
    static int count;
    snprintf(tag, sizeof tag, "%s %llx.%ld.%d", what, (unsigned long long)gu_seed(), (long)getpid(), ++count);
    return tag;
}

enum { CHAIN_N = 70001, CHAIN_ROWS = 67, CHAIN_COLS = 45 };

/* The chain's operands: flat, out+1 = chain(a+2, b) over CHAIN_N (out and a at other phases than b);
 * strided, grid[r][c] = chain(t[c][r], row[c]), t a transposed input, row a broadcast one (the tiled
 * kernel). Inputs random with every special value; the expected results the reference's. */
typedef struct {
    gu_buffer_t *a, *b, *out, *t, *row, *grid;
    float *ha, *hb, *ht, *hrow;
    uint16_t *want, *want_grid;
    double alpha;
} chain_case_t;

/* New inputs, uploaded, and their expected results. */
static void chain_case_fill(chain_case_t *c, gu_rng_t *rng)
{
    enum { R = CHAIN_ROWS, C = CHAIN_COLS };
    gu_fill_random(EW_F32, gu_buffer_region_elems(c->a), c->ha, rng);
    gu_fill_random(EW_F32, gu_buffer_region_elems(c->b), c->hb, rng);
    gu_fill_random(EW_F32, R * C, c->ht, rng);
    gu_fill_random(EW_F32, C, c->hrow, rng);
    gu_buffer_load(c->a, c->ha, gu_buffer_region_elems(c->a));
    gu_buffer_load(c->b, c->hb, gu_buffer_region_elems(c->b));
    gu_buffer_load(c->t, c->ht, R * C);
    gu_buffer_load(c->row, c->hrow, C);
    reference_chain(EW_F16, EW_F32, c->alpha, CHAIN_N, c->want, c->ha + 2, c->hb);
    float *dense_t = gu_host_alloc(R * C * sizeof(float)), *dense_row = gu_host_alloc(R * C * sizeof(float));
    for (int r = 0; r < R; ++r)
        for (int k = 0; k < C; ++k) {
            dense_t[r * C + k] = c->ht[k * R + r];
            dense_row[r * C + k] = c->hrow[k];
        }
    reference_chain(EW_F16, EW_F32, c->alpha, R * C, c->want_grid, dense_t, dense_row);
}

static chain_case_t *chain_case_new(gu_rng_t *rng)
{
    chain_case_t *c = gu_host_alloc(sizeof *c);
    *c = (chain_case_t){.a = gu_buffer_new(EW_F32, CHAIN_N),
                        .b = gu_buffer_new(EW_F32, CHAIN_N),
                        .out = gu_buffer_new(EW_F16, CHAIN_N),
                        .t = gu_buffer_new(EW_F32, CHAIN_ROWS * CHAIN_COLS),
                        .row = gu_buffer_new(EW_F32, CHAIN_COLS),
                        .grid = gu_buffer_new(EW_F16, CHAIN_ROWS * CHAIN_COLS),
                        .want = gu_host_alloc(CHAIN_N * 2),
                        .want_grid = gu_host_alloc(CHAIN_ROWS * CHAIN_COLS * 2),
                        .alpha = -0.75};
    c->ha = gu_host_alloc(gu_buffer_region_elems(c->a) * sizeof(float));
    c->hb = gu_host_alloc(gu_buffer_region_elems(c->b) * sizeof(float));
    c->ht = gu_host_alloc(CHAIN_ROWS * CHAIN_COLS * sizeof(float));
    c->hrow = gu_host_alloc(CHAIN_COLS * sizeof(float));
    chain_case_fill(c, rng);
    return c;
}

/* The flat launch, then (strided) the strided one, on stream; the first failure's status. */
static ew_status_t chain_case_launch(ew_kernel_t kernel, const chain_case_t *c, int strided, cudaStream_t stream)
{
    const void *flat[] = {gu_at(c->a, 2), gu_at(c->b, 0)};
    ew_status_t status = ew_kernel_launch(kernel, CHAIN_N, gu_at(c->out, 1), flat, &c->alpha, stream);
    if (status != EW_SUCCESS || !strided)
        return status;
    const int64_t shape[] = {CHAIN_ROWS, CHAIN_COLS}, t_strides[] = {1, CHAIN_ROWS}, row_strides[] = {0, 1};
    const int64_t *in_strides[] = {t_strides, row_strides};
    const void *inputs[] = {gu_at(c->t, 0), gu_at(c->row, 0)};
    return ew_kernel_launch_strided(kernel, 2, shape, gu_at(c->grid, 0), NULL, inputs, in_strides, &c->alpha, stream);
}

/* The outputs (strided: both) against the reference, guards and inputs intact; how many elements were
 * expected to equal the poison (0: every element was written). */
static int64_t chain_case_check(const chain_case_t *c, int strided, const char *what)
{
    const gu_inputs_t inputs = {2, {EW_F32, EW_F32}, {c->ha + 2, c->hb}};
    int64_t ambiguous = GU_CHECK_OUTPUT(c->out, 1, CHAIN_N, c->want, &inputs, what);
    if (strided)
        ambiguous += GU_CHECK_OUTPUT(c->grid, 0, CHAIN_ROWS * CHAIN_COLS, c->want_grid, NULL, what);
    GU_CHECK_UNCHANGED(c->a, what);
    GU_CHECK_UNCHANGED(c->b, what);
    GU_CHECK_UNCHANGED(c->t, what);
    GU_CHECK_UNCHANGED(c->row, what);
    return ambiguous;
}

static void chain_case_poison(const chain_case_t *c, uint8_t poison)
{
    gu_buffer_poison(c->out, poison);
    gu_buffer_poison(c->grid, poison);
}

/* The launches run and checked, under a second poison where the first could hide a missing write. */
static void chain_case_run(ew_kernel_t kernel, const chain_case_t *c, int strided, const char *what)
{
    const uint8_t poisons[] = {GU_POISON, GU_POISON_ALT};
    for (size_t p = 0; p < COUNT(poisons); ++p) {
        chain_case_poison(c, poisons[p]);
        GU_EW(chain_case_launch(kernel, c, strided, NULL));
        GU_CUDA(cudaDeviceSynchronize());
        if (chain_case_check(c, strided, what) == 0)
            break;
    }
}

/* ---- graph capture ---- */

static void remove_tree(const char *dir)
{
    char command[PATH_MAX + 32];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0)
        printf("could not remove %s\n", dir);
}

/* A fresh directory under /tmp for a test's cache, in dir (PATH_MAX bytes): root/cache, absent yet. */
static void new_cache_dir(char *root, char *dir)
{
    snprintf(root, PATH_MAX, "/tmp/ew-kernel-cache-XXXXXX");
    if (mkdtemp(root) == NULL)
        GU_FAIL("mkdtemp failed");
    snprintf(dir, PATH_MAX, "%.4000s/cache", root);
}

/* Cache files (*.ewk) in dir. */
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

/* The device's compute capability's major. */
static int cc_major(void)
{
    int device = 0, major = 0;
    GU_CUDA(cudaGetDevice(&device));
    GU_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major;
}

/* EW_BULK_COPY as the policy reads it (src/plan/policy.c): "always" forces the bulk kernel on every flat
 * launch of a cc >= 9.0 GPU, "0" turns it off. */
static int bulk_forced(void)
{
    const char *mode = getenv("EW_BULK_COPY");
    return mode != NULL && strcmp(mode, "always") == 0 && cc_major() >= 9;
}
static int bulk_off(void)
{
    const char *mode = getenv("EW_BULK_COPY");
    return cc_major() < 9 || (mode != NULL && strcmp(mode, "0") == 0);
}

/* The programs the chain's launches load: the flat and the strided one, and for its pointers at other
 * phases the shifted one, or the bulk kernel's where EW_BULK_COPY=always forces it (its 70,001
 * elements are too few for it otherwise). */
enum { CHAIN_PROGRAMS = 3 };

/* A kernel created, launched flat and launched strided for the first time inside a global-mode
 * capture, so its programs are compiled (NVRTC) and loaded (the driver) while capturing, as a
 * framework capturing its first step does; nothing runs until the graph does, and each replay, on new
 * inputs, equals the reference. Holds however a kernel's programs or variants come to be compiled. */
static void first_launches_in_a_capture(void **state)
{
    (void)state;
    char root[PATH_MAX], dir[PATH_MAX];
    new_cache_dir(root, dir);
    setenv("EW_KERNEL_CACHE_DIR", dir, 1); /* a new program in an empty cache: compiled, never loaded */
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x6A);
    chain_case_t *c = chain_case_new(&rng);
    chain_case_poison(c, GU_POISON);
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    ew_kernel_t kernel = create_chain(new_tag("captured"));
    GU_EW(chain_case_launch(kernel, c, 1, stream));
    cudaGraph_t graph;
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    unsetenv("EW_KERNEL_CACHE_DIR");
    if (cache_files(dir) != CHAIN_PROGRAMS)
        GU_FAIL("%s holds %d cache files after the capture; expected %d (the flat, the strided, the shifted "
                "or the bulk program)",
                dir, cache_files(dir), CHAIN_PROGRAMS);
    GU_CUDA(cudaDeviceSynchronize());
    GU_CHECK_UNCHANGED(c->out, "out after the capture (nothing may run before the graph)");
    GU_CHECK_UNCHANGED(c->grid, "the strided out after the capture (nothing may run before the graph)");
    cudaGraphExec_t exec;
    GU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    gu_track_graph_exec(exec);
    for (int replay = 0; replay < 3; ++replay) {
        if (replay > 0)
            chain_case_fill(c, &rng);
        chain_case_poison(c, replay % 2 ? GU_POISON_ALT : GU_POISON);
        GU_CUDA(cudaDeviceSynchronize()); /* the legacy stream's uploads before the non-blocking stream's */
        GU_CUDA(cudaGraphLaunch(exec, stream));
        GU_CUDA(cudaStreamSynchronize(stream));
        char what[64];
        snprintf(what, sizeof what, "graph replay %d", replay);
        chain_case_check(c, 1, what);
    }
    GU_EW(ew_kernel_destroy(kernel));
    remove_tree(root);
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

/* The caches' counters now (ew_kernel_cache_get_count), in counter order. */
typedef struct {
    uint64_t count[EW_KERNEL_CACHE_COUNTERS];
} cache_counts_t;

static cache_counts_t cache_counts(void)
{
    cache_counts_t c;
    for (int k = 0; k < EW_KERNEL_CACHE_COUNTERS; ++k)
        GU_EW(ew_kernel_cache_get_count((ew_kernel_cache_counter_t)k, &c.count[k]));
    return c;
}

/* Fails unless each counter grew from before by what wanted gives (memory hits, disk hits, compiles,
 * store failures). */
static void expect_counts(const char *what, const cache_counts_t *before, const uint64_t wanted[])
{
    static const char *const names[] = {"memory hits", "disk hits", "compiles", "store failures"};
    const cache_counts_t now = cache_counts();
    for (int k = 0; k < EW_KERNEL_CACHE_COUNTERS; ++k)
        if (now.count[k] - before->count[k] != wanted[k])
            GU_FAIL("%s: %s grew by %llu, expected %llu", what, names[k],
                    (unsigned long long)(now.count[k] - before->count[k]), (unsigned long long)wanted[k]);
}

/* A new source compiles and lands on disk; the same source again comes from memory; the counters say
 * so, and refuse what is not a counter. */
static void caches(void **state)
{
    (void)state;
    uint64_t unused;
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_cache_get_count(EW_KERNEL_CACHE_COUNTERS, &unused));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_cache_get_count((ew_kernel_cache_counter_t)-1, &unused));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_cache_get_count(EW_KERNEL_CACHE_COMPILES, NULL));
    char root[PATH_MAX], path[PATH_MAX];
    new_cache_dir(root, path);
    setenv("EW_KERNEL_CACHE_DIR", path, 1);
    const cache_counts_t before = cache_counts();
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
    expect_counts("a compile, then the same source", &before, (const uint64_t[]){1, 0, 1, 0});
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
    remove_tree(root);
}

/* A kernel's bulk-copy kernel is compiled at the first flat launch whose plan picks it, not at create:
 * a launch of a few thousand elements leaves it out (unless EW_BULK_COPY=always forces it there), the
 * first launch of 2^22 + 3 f32 elements, inside a global-mode capture, compiles and loads it there
 * (where the policy plans bulk copies), and each replay of the graph equals the reference bit for bit
 * under two poisons; a second kernel of the same program finds it in memory. */
static void bulk_program_at_its_first_launch(void **state)
{
    (void)state;
    enum { SMALL = 4099, LARGE = (1 << 22) + 3 };
    char root[PATH_MAX], dir[PATH_MAX], source[160];
    new_cache_dir(root, dir);
    setenv("EW_KERNEL_CACHE_DIR", dir, 1);
    snprintf(source, sizeof source, "return ew::add(in0, in1); // %s", new_tag("bulk"));
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    const cache_counts_t before = cache_counts();
    ew_kernel_t kernel = create(source, EW_F32, 2, in, 0);
    expect_counts("create", &before, (const uint64_t[]){0, 0, 1, 0});

    gu_rng_t rng = gu_rng(gu_seed() ^ 0xB01C);
    gu_buffer_t *a = gu_buffer_new(EW_F32, LARGE), *b = gu_buffer_new(EW_F32, LARGE),
                *out = gu_buffer_new(EW_F32, LARGE);
    const int64_t region = gu_buffer_region_elems(a);
    float *ha = gu_host_alloc((size_t)region * sizeof(float)),
          *hb = gu_host_alloc((size_t)region * sizeof(float)),
          *want = gu_host_alloc((size_t)LARGE * sizeof(float));
    gu_fill_random(EW_F32, region, ha, &rng);
    gu_fill_random(EW_F32, region, hb, &rng);
    gu_buffer_load(a, ha, region);
    gu_buffer_load(b, hb, region);
    ref_binary(EW_OP_ADD, EW_F32, LARGE, want, ha, hb);
    const gu_inputs_t inputs = {2, {EW_F32, EW_F32}, {ha, hb}};
    const void *operands[] = {gu_at(a, 0), gu_at(b, 0)};

    gu_buffer_poison(out, GU_POISON);
    GU_EW(ew_kernel_launch(kernel, SMALL, gu_at(out, 0), operands, NULL, NULL));
    GU_CUDA(cudaDeviceSynchronize());
    const int forced = bulk_forced(), planned = !bulk_off();
    expect_counts("a small launch", &before, (const uint64_t[]){0, 0, 1 + (uint64_t)forced, 0});
    GU_CHECK_OUTPUT(out, 0, SMALL, want, &inputs, "the small launch");

    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    gu_buffer_poison(out, GU_POISON);
    GU_CUDA(cudaDeviceSynchronize());
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    GU_EW(ew_kernel_launch(kernel, LARGE, gu_at(out, 0), operands, NULL, stream));
    cudaGraph_t graph;
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    expect_counts("the first large launch", &before, (const uint64_t[]){0, 0, 1 + (uint64_t)planned, 0});
    if (cache_files(dir) != 1 + planned)
        GU_FAIL("%s holds %d cache files; expected %d", dir, cache_files(dir), 1 + planned);
    GU_CHECK_UNCHANGED(out, "out after the capture (nothing may run before the graph)");
    cudaGraphExec_t exec;
    GU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    gu_track_graph_exec(exec);
    const uint8_t poisons[] = {GU_POISON_ALT, GU_POISON};
    for (size_t p = 0; p < COUNT(poisons); ++p) {
        gu_buffer_poison(out, poisons[p]);
        GU_CUDA(cudaDeviceSynchronize());
        GU_CUDA(cudaGraphLaunch(exec, stream));
        GU_CUDA(cudaStreamSynchronize(stream));
        GU_CHECK_OUTPUT(out, 0, LARGE, want, &inputs, "the captured large launch");
    }
    ew_kernel_t again = create(source, EW_F32, 2, in, 0);
    GU_EW(ew_kernel_launch(again, LARGE, gu_at(out, 0), operands, NULL, NULL));
    GU_CUDA(cudaDeviceSynchronize());
    expect_counts("a second kernel of the program", &before,
                  (const uint64_t[]){1 + (uint64_t)planned, 0, 1 + (uint64_t)planned, 0});
    GU_EW(ew_kernel_destroy(again));
    GU_EW(ew_kernel_destroy(kernel));
    unsetenv("EW_KERNEL_CACHE_DIR");
    remove_tree(root);
}

/* ---- the cache's settings, through ew_kernel_create ---- */

static char *saved_env[CACHE_ENV_COUNT];
static char saved_cwd[PATH_MAX];

/* Teardown: the environment and the directory as they were, then gu_teardown. */
static int restore_cache_env(void **state)
{
    cache_env_restore(saved_env);
    if (saved_cwd[0] != '\0' && chdir(saved_cwd) != 0)
        printf("could not return to %s\n", saved_cwd);
    return gu_teardown(state);
}

static int written_files; /* files nftw found */
static int count_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    written_files += type == FTW_F && strstr(path, ".ewk") != NULL;
    return 0;
}

/* The cache off, no HOME nor XDG_CACHE_HOME, and directories it cannot use (a path through a regular
 * file, one others can write to, a read-only one): each kernel, a program of its own, is created and
 * its launch equals the reference; nothing is written under the test's directory, which is also the
 * working directory (where a relative path would land). Only a GPU reaches the cache: ew_kernel_create
 * needs the device before it compiles; test_kernel_cache checks the directory's rules on the CPU. */
static void cache_settings(void **state)
{
    (void)state;
    cache_env_save(saved_env);
    if (getcwd(saved_cwd, sizeof saved_cwd) == NULL)
        GU_FAIL("getcwd: %s", strerror(errno));
    char root[PATH_MAX], unused[PATH_MAX];
    new_cache_dir(root, unused);
    if (chdir(root) != 0)
        GU_FAIL("chdir %s: %s", root, strerror(errno));
    FILE *f = fopen("file", "w"); /* a regular file where a directory would be */
    if (f == NULL || fputs("x", f) < 0 || fclose(f) != 0)
        GU_FAIL("could not write %s/file", root);
    if (mkdir("open", 0700) != 0 || chmod("open", 0777) != 0 || mkdir("read-only", 0500) != 0)
        GU_FAIL("could not make the directories under %s", root);
    const struct {
        const char *name, *cache, *dir, *xdg, *home;
    } settings[] = {
        {"EW_KERNEL_CACHE=0", "0", "off", NULL, "home"},
        {"no HOME, no XDG_CACHE_HOME", NULL, NULL, NULL, NULL},
        {"XDG_CACHE_HOME relative, no HOME", NULL, NULL, "relative", NULL},
        {"a path through a regular file", NULL, "file/cache", NULL, NULL},
        {"a directory others can write to", NULL, "open", NULL, NULL},
        {"a read-only directory", NULL, "read-only", NULL, NULL},
    };
    gu_rng_t rng = gu_rng(gu_seed() ^ 0xE7);
    chain_case_t *c = chain_case_new(&rng);
    for (size_t k = 0; k < COUNT(settings); ++k) {
        if (k == 5 && geteuid() == 0) {
            printf("cache_settings: as root a 0500 directory is writable; %s left out\n", settings[k].name);
            continue;
        }
        const char *given[] = {settings[k].cache, settings[k].dir, settings[k].xdg, settings[k].home};
        const char *values[CACHE_ENV_COUNT];
        char paths[CACHE_ENV_COUNT][PATH_MAX];
        for (size_t i = 0; i < CACHE_ENV_COUNT; ++i) {
            /* absolute paths under root, but the cache switch and the relative XDG value (which must be
             * ignored) as given */
            snprintf(paths[i], PATH_MAX, "%.4000s/%.60s", root, given[i] != NULL ? given[i] : "");
            values[i] = given[i] == NULL || i == 0 || i == 2 ? given[i] : paths[i];
        }
        cache_env_set(values);
        ew_kernel_t kernel = create_chain(new_tag(settings[k].name));
        chain_case_run(kernel, c, 0, settings[k].name);
        GU_EW(ew_kernel_destroy(kernel));
        written_files = 0;
        nftw(root, count_file, 16, FTW_PHYS);
        struct stat st;
        if (written_files != 0 || stat("off", &st) == 0)
            GU_FAIL("%s: the cache wrote under %s (%d files)", settings[k].name, root, written_files);
    }
    if (chdir(saved_cwd) != 0)
        GU_FAIL("chdir %s: %s", saved_cwd, strerror(errno));
    remove_tree(root);
}

/* ---- the disk cache, from processes of their own ---- */

extern char **environ;

/* Run in a process of its own by the tests below (named only, never in the default run): the chain
 * kernel tagged $EW_TEST_KERNEL_TAG, from the caches under $EW_KERNEL_CACHE_DIR, flat and strided,
 * against the reference; its programs' disk hits and compiles as $EW_TEST_CACHE_COUNTS gives them
 * ("HITS COMPILES"). Where EW_NVRTC_LIBRARY names no library, a program no cache holds is then refused. */
static void cache_child(void **state)
{
    (void)state;
    const char *tag = getenv("EW_TEST_KERNEL_TAG"), *counts = getenv("EW_TEST_CACHE_COUNTS");
    unsigned long long hits, compiles;
    if (tag == NULL || getenv("EW_KERNEL_CACHE_DIR") == NULL || counts == NULL ||
        sscanf(counts, "%llu %llu", &hits, &compiles) != 2)
        GU_FAIL("cache_child is run by the disk cache tests, with EW_TEST_KERNEL_TAG, EW_KERNEL_CACHE_DIR and "
                "EW_TEST_CACHE_COUNTS set");
    const cache_counts_t before = cache_counts();
    gu_rng_t rng = gu_rng(gu_seed() ^ 0xD15C);
    chain_case_t *c = chain_case_new(&rng);
    ew_kernel_t kernel = create_chain(tag);
    chain_case_run(kernel, c, 1, tag);
    GU_EW(ew_kernel_destroy(kernel));
    expect_counts(tag, &before, (const uint64_t[]){0, hits, compiles, 0});
    if (getenv("EW_NVRTC_LIBRARY") != NULL) {
        char source[256];
        snprintf(source, sizeof source, "%s // %s, unseen", kChain, tag);
        const ew_dtype_t in[] = {EW_F32, EW_F32};
        GU_EW_EXPECT(EW_ERROR_NOT_SUPPORTED, ew_kernel_create(gu_handle(), source, EW_F16, 2, in, 1, &kernel));
        if (kernel != NULL || strstr(ew_get_last_error_message(), "EW_NVRTC_LIBRARY") == NULL)
            GU_FAIL("a program no cache holds, without NVRTC: kernel %p, message: %s", (void *)kernel,
                    ew_get_last_error_message());
    }
}

/* cache_child of tag in a new process of this program, with dir as its cache, expecting its disk hits
 * and compiles (its EW_TEST_CACHE_COUNTS), NVRTC unreachable where no_nvrtc is set; fails unless it
 * passes. */
static void run_child(const char *dir, const char *tag, int hits, int compiles, int no_nvrtc)
{
    char counts[32];
    snprintf(counts, sizeof counts, "%d %d", hits, compiles);
    setenv("EW_KERNEL_CACHE_DIR", dir, 1);
    setenv("EW_TEST_KERNEL_TAG", tag, 1);
    setenv("EW_TEST_CACHE_COUNTS", counts, 1);
    if (no_nvrtc)
        setenv("EW_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.99", 1);
    char name[] = "test_user_kernel_gpu", test[] = "cache_child";
    char *argv[] = {name, test, NULL};
    fflush(stdout);
    fflush(stderr);
    pid_t pid;
    const int error = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    unsetenv("EW_KERNEL_CACHE_DIR");
    unsetenv("EW_TEST_KERNEL_TAG");
    unsetenv("EW_TEST_CACHE_COUNTS");
    unsetenv("EW_NVRTC_LIBRARY");
    if (error != 0)
        GU_FAIL("posix_spawn: %s", strerror(error));
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        GU_FAIL("the process running \"%s\" from the cache %s failed (wait status 0x%x)", tag, dir, status);
}

/* The cache files of dir: names, inodes, times of change and sizes. A store renames a new file over the
 * name, so a process that stores anything changes its entry. */
typedef struct {
    int count;
    struct {
        char name[64];
        ino_t inode;
        struct timespec changed;
        off_t size;
    } file[5];
} files_t;

static int by_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

static void list_files(const char *dir, files_t *files)
{
    memset(files, 0, sizeof *files);
    DIR *d = opendir(dir);
    if (d == NULL)
        GU_FAIL("%s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strstr(e->d_name, ".ewk") == NULL)
            continue;
        if (files->count == 5 || strlen(e->d_name) >= sizeof files->file[0].name)
            GU_FAIL("%s: more cache files than expected (%s)", dir, e->d_name);
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%.4000s/%.63s", dir, e->d_name);
        if (stat(path, &st) != 0)
            GU_FAIL("%s: %s", path, strerror(errno));
        strcpy(files->file[files->count].name, e->d_name);
        files->file[files->count].inode = st.st_ino;
        files->file[files->count].changed = st.st_ctim;
        files->file[files->count].size = st.st_size;
        files->count++;
    }
    closedir(d);
    qsort(files->file, (size_t)files->count, sizeof files->file[0], by_name);
}

static int same_files(const files_t *a, const files_t *b)
{
    if (a->count != b->count)
        return 0;
    for (int i = 0; i < a->count; ++i)
        if (strcmp(a->file[i].name, b->file[i].name) != 0 || a->file[i].inode != b->file[i].inode ||
            a->file[i].size != b->file[i].size || a->file[i].changed.tv_sec != b->file[i].changed.tv_sec ||
            a->file[i].changed.tv_nsec != b->file[i].changed.tv_nsec)
            return 0;
    return 1;
}

/* A process compiles the kernel's programs into an empty cache; a new process loads them from
 * disk (it stores nothing: every compile stores) and its launches equal the reference; so does one
 * that cannot open NVRTC, as a machine the cache was copied to without it, and so from a cache that
 * ew_kernel_cache_fill filled. */
static void disk_cache_in_new_processes(void **state)
{
    (void)state;
    char root[PATH_MAX], dir[PATH_MAX];
    new_cache_dir(root, dir);
    const char *tag = new_tag("from disk");
    const int programs = CHAIN_PROGRAMS;
    run_child(dir, tag, 0, programs, 0);
    files_t compiled, loaded;
    list_files(dir, &compiled);
    if (compiled.count != programs)
        GU_FAIL("%s holds %d cache files; expected the chain's %d programs", dir, compiled.count, programs);
    run_child(dir, tag, programs, 0, 0);
    list_files(dir, &loaded);
    if (!same_files(&compiled, &loaded))
        GU_FAIL("the second process stored its programs again: it compiled them rather than load them");
    run_child(dir, tag, programs, 0, 1);
    list_files(dir, &loaded);
    if (!same_files(&compiled, &loaded))
        GU_FAIL("the process without NVRTC changed the cache");
    remove_tree(root);

    /* A cache filled ahead of time for this GPU's architecture (ew_kernel_cache_fill, no launch)
     * serves a process without NVRTC alike. */
    new_cache_dir(root, dir);
    setenv("EW_KERNEL_CACHE_DIR", dir, 1);
    const char *filled = new_tag("filled");
    char source[256], arch[16];
    snprintf(source, sizeof source, "%s // %s", kChain, filled);
    int minor = 0, device = 0;
    GU_CUDA(cudaGetDevice(&device));
    GU_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    snprintf(arch, sizeof arch, "sm_%d%d", cc_major(), minor);
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    GU_EW(ew_kernel_cache_fill(source, EW_F16, 2, in, 1, arch));
    unsetenv("EW_KERNEL_CACHE_DIR");
    list_files(dir, &compiled);
    if (compiled.count != 5)
        GU_FAIL("the fill left %d cache files in %s; expected the flat, shifted, bulk, strided and lists' "
                "programs",
                compiled.count, dir);
    run_child(dir, filled, programs, 0, 1);
    list_files(dir, &loaded);
    if (!same_files(&compiled, &loaded))
        GU_FAIL("the process without NVRTC changed the filled cache");
    remove_tree(root);
}

/* Cache entries whose value the driver refuses (the file intact by its checksum, its CUBIN not one):
 * the next process compiles its programs afresh, its launches equal the reference, and the entries
 * are repaired, so that a third process loads them. Named only (ctest's test_user_kernel_gpu.rejected_cubin,
 * label faults): compute-sanitizer reports the refused cuModuleLoadData. */
static void rejected_cubin_recompiled(void **state)
{
    (void)state;
    static const char rejected[] = "not a CUBIN: text the driver takes for PTX and refuses";
    char root[PATH_MAX], dir[PATH_MAX];
    new_cache_dir(root, dir);
    const char *tag = new_tag("rejected");
    const int programs = CHAIN_PROGRAMS;
    run_child(dir, tag, 0, programs, 0);
    files_t files;
    list_files(dir, &files);
    if (files.count != programs)
        GU_FAIL("%s holds %d cache files; expected the chain's %d programs", dir, files.count, programs);
    unsigned char *keys[4];
    size_t key_sizes[4];
    for (int i = 0; i < programs; ++i) {
        /* the key from the file (src/rtc/kernel_cache.c: its size at byte 16, itself from byte 40) */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%.4000s/%.63s", dir, files.file[i].name);
        FILE *f = fopen(path, "rb");
        unsigned char header[40];
        if (f == NULL || fread(header, 1, sizeof header, f) != sizeof header)
            GU_FAIL("%s: unreadable", path);
        key_sizes[i] = 0;
        for (int b = 7; b >= 0; --b)
            key_sizes[i] = key_sizes[i] << 8 | header[16 + b];
        keys[i] = gu_host_alloc(key_sizes[i]);
        if (fread(keys[i], 1, key_sizes[i], f) != key_sizes[i])
            GU_FAIL("%s: its key is cut short", path);
        fclose(f);
        if (ewi_cache_store(dir, keys[i], key_sizes[i], rejected, sizeof rejected) != 0)
            GU_FAIL("could not store the refused value under %s", path);
    }
    run_child(dir, tag, 0, programs, 0);
    for (int i = 0; i < programs; ++i) {
        void *value = NULL;
        size_t size = 0;
        if (ewi_cache_load(dir, keys[i], key_sizes[i], &value, &size) != 0)
            GU_FAIL("entry %s is gone after the recompile", files.file[i].name);
        const int repaired = size >= 4 && memcmp(value, "\177ELF", 4) == 0;
        free(value);
        if (!repaired)
            GU_FAIL("entry %s still holds no CUBIN after the recompile", files.file[i].name);
    }
    files_t repaired, loaded;
    list_files(dir, &repaired);
    run_child(dir, tag, programs, 0, 0);
    list_files(dir, &loaded);
    if (!same_files(&repaired, &loaded))
        GU_FAIL("the third process stored its programs again: the repaired entries were not loaded");
    remove_tree(root);
}

/* ---- reduction outputs (ew_kernel_create_outputs) ---- */

/* The reduction of op over v[0 .. n-1] as the library defines it (docs/semantics.md): exact for abs
 * max, max and min (NaN as their quiet NaN, positive but for min's), in double for the sum; over
 * nothing, the identity. */
static double reduce_reference(ew_reduce_op_t op, const double *v, int64_t n, int *nan)
{
    double r = op == EW_REDUCE_MAX ? -INFINITY : op == EW_REDUCE_MIN ? INFINITY : 0.0;
    *nan = 0;
    for (int64_t i = 0; i < n; ++i) {
        *nan |= isnan(v[i]);
        r = op == EW_REDUCE_ABS_MAX ? fmax(r, fabs(v[i]))
            : op == EW_REDUCE_MAX   ? fmax(r, v[i])
            : op == EW_REDUCE_MIN   ? fmin(r, v[i])
                                    : r + v[i];
    }
    return r;
}

/* The scalar's bits against the reference: the same bits for abs max, max and min (the NaN of the
 * op), the sum within the rounding its order allows. */
static void check_reduction(const char *what, ew_reduce_op_t op, ew_dtype_t dtype, const void *got, double want,
                            int nan, double magnitude, int64_t n)
{
    const int f64 = dtype == EW_F64;
    uint64_t bits = 0;
    memcpy(&bits, got, f64 ? 8 : 4);
    const double value = f64 ? ref_f64_from_bits(bits) : (double)ref_f32_from_bits((uint32_t)bits);
    if (op == EW_REDUCE_SUM) {
        const double eps = f64 ? 0x1p-52 : 0x1p-23;
        if (nan ? !isnan(value) : fabs(value - want) > 2.0 * (double)n * eps * magnitude)
            GU_FAIL("%s: sum %.17g, expected %.17g (within %g)", what, value, want, 2.0 * (double)n * eps * magnitude);
        return;
    }
    uint64_t expected;
    if (nan) {
        const uint64_t quiet = f64 ? 0x7FF8000000000000ull : 0x7FC00000ull;
        expected = op == EW_REDUCE_MIN ? quiet | (f64 ? 0x8000000000000000ull : 0x80000000ull) : quiet;
    } else if (f64) {
        memcpy(&expected, &want, 8);
    } else {
        const float w = (float)want;
        uint32_t b;
        memcpy(&b, &w, 4);
        expected = b;
    }
    if (bits != expected)
        GU_FAIL("%s: bits 0x%llx (%.9g), expected 0x%llx", what, (unsigned long long)bits, value,
                (unsigned long long)expected);
}

/* A bf16 cast to f32 that also reduces its input, for each reduction into f32 and f64, the reduction
 * the second output or the first: the array against the exact conversion, the scalar (overwritten)
 * against the reference; with NaNs among the inputs; accumulated onto a value already there; over
 * nothing; a body that reduces over the positive inputs alone; and the refusals. */
static void reduction_outputs(void **state)
{
    (void)state;
    enum { N = 100003 };
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x5EDu);
    uint16_t *host = gu_host_alloc(N * sizeof *host);
    float *out_host = gu_host_alloc(N * sizeof *out_host);
    double *values = gu_host_alloc(N * sizeof *values), *positive = gu_host_alloc(N * sizeof *positive);
    uint16_t *x;
    float *out;
    double *scalar; /* room for a double; a float uses its first 4 bytes */
    GU_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
    GU_CUDA(cudaMalloc((void **)&out, N * sizeof *out));
    GU_CUDA(cudaMalloc((void **)&scalar, 2 * sizeof *scalar));
    static const ew_reduce_op_t ops[] = {EW_REDUCE_ABS_MAX, EW_REDUCE_MAX, EW_REDUCE_MIN, EW_REDUCE_SUM};
    const ew_dtype_t in[] = {EW_BF16};
    for (int with_nan = 0; with_nan <= 1; ++with_nan) {
        int64_t positives = 0;
        double magnitude = 0;
        for (int64_t i = 0; i < N; ++i) {
            /* bf16 of both signs, exponents 2^-27 to 2^27 (no sum overflows); a NaN in the middle where asked */
            const uint64_t r = gu_rng_next(&rng);
            host[i] = (uint16_t)((r & 0x8000u) | (100u + (unsigned)(r >> 24) % 55u) << 7 | ((r >> 16) & 0x7Fu));
            if (with_nan && i == N / 2)
                host[i] = 0xFFC1u;
            values[i] = ref_bf16_to_f32(host[i]);
            if (values[i] > 0)
                positive[positives++] = values[i];
            magnitude += isnan(values[i]) ? 0 : fabs(values[i]);
        }
        GU_CUDA(cudaMemcpy(x, host, N * sizeof *x, cudaMemcpyHostToDevice));
        for (size_t o = 0; o < COUNT(ops); ++o)
            for (int f64 = 0; f64 <= 1; ++f64)
                for (int first = 0; first <= 1; ++first) {
                    const ew_dtype_t dtype = f64 ? EW_F64 : EW_F32;
                    const ew_kernel_output_t array = {EW_F32, EW_REDUCE_NONE}, reduction = {dtype, ops[o]};
                    const ew_kernel_output_t outputs[2] = {first ? reduction : array, first ? array : reduction};
                    char source[128], what[256];
                    snprintf(source, sizeof source, "out%d = in0; out%d = in0;", first ? 1 : 0, first ? 0 : 1);
                    ew_kernel_t kernel = NULL;
                    ew_status_t status = ew_kernel_create_outputs(gu_handle(), source, 2, outputs, 1, in, 0, &kernel);
                    if (gu_status_means_no_nvrtc(status))
                        gu_skip(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
                    GU_EW(status);
                    void *pointers[2] = {first ? (void *)scalar : (void *)out, first ? (void *)out : (void *)scalar};
                    const void *inputs[] = {x};
                    double got[2];
                    int nan;
                    GU_CUDA(cudaMemset(scalar, GU_POISON, 2 * sizeof *scalar));
                    GU_CUDA(cudaMemset(out, GU_POISON, N * sizeof *out));
                    GU_EW(ew_kernel_launch_outputs(kernel, N, pointers, EW_REDUCE_OVERWRITE, inputs, NULL, NULL));
                    GU_CUDA(cudaMemcpy(got, scalar, sizeof got, cudaMemcpyDeviceToHost));
                    GU_CUDA(cudaMemcpy(out_host, out, N * sizeof *out, cudaMemcpyDeviceToHost));
                    for (int64_t i = 0; i < N; ++i)
                        if (memcmp(&out_host[i], &(float){ref_bf16_to_f32(host[i])}, 4) != 0)
                            GU_FAIL("%s: out[%lld] differs from the conversion", source, (long long)i);
                    snprintf(what, sizeof what, "op %d into %s, %s, %s", (int)ops[o], ew_dtype_name(dtype), source,
                             with_nan ? "a NaN among the inputs" : "finite inputs");
                    const double want = reduce_reference(ops[o], values, N, &nan);
                    check_reduction(what, ops[o], dtype, got, want, nan, magnitude, N);
                    if (!with_nan && ops[o] != EW_REDUCE_SUM) {
                        /* accumulated onto the result itself: unchanged; over nothing, overwritten: the identity */
                        GU_EW(ew_kernel_launch_outputs(kernel, N, pointers, EW_REDUCE_ACCUMULATE, inputs, NULL, NULL));
                        GU_CUDA(cudaMemcpy(got, scalar, sizeof got, cudaMemcpyDeviceToHost));
                        check_reduction(what, ops[o], dtype, got, want, 0, magnitude, N);
                        GU_EW(ew_kernel_launch_outputs(kernel, 0, pointers, EW_REDUCE_OVERWRITE, NULL, NULL, NULL));
                        GU_CUDA(cudaMemcpy(got, scalar, sizeof got, cudaMemcpyDeviceToHost));
                        check_reduction("over nothing", ops[o], dtype, got, reduce_reference(ops[o], values, 0, &nan),
                                        0, 0, 0);
                    }
                    if (!first && !with_nan && ops[o] == EW_REDUCE_SUM && !f64) {
                        /* the refusals: the plain launch, a scalar misaligned or inside out */
                        GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_launch(kernel, N, out, inputs, NULL, NULL));
                        void *misaligned[2] = {out, (char *)scalar + 2};
                        GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_launch_outputs(kernel, N, misaligned,
                                                                                     EW_REDUCE_OVERWRITE, inputs,
                                                                                     NULL, NULL));
                        void *inside[2] = {out, out + 7};
                        GU_EW_EXPECT(EW_ERROR_INVALID_VALUE, ew_kernel_launch_outputs(kernel, N, inside,
                                                                                     EW_REDUCE_OVERWRITE, inputs,
                                                                                     NULL, NULL));
                    }
                    GU_EW(ew_kernel_destroy(kernel));
                }
        /* the minimum of the positive inputs alone: an element that leaves out1 unassigned adds nothing */
        const ew_kernel_output_t outputs[2] = {{EW_F32, EW_REDUCE_NONE}, {EW_F32, EW_REDUCE_MIN}};
        ew_kernel_t kernel;
        GU_EW(ew_kernel_create_outputs(gu_handle(), "out0 = in0; if (in0 > 0.f) out1 = in0;", 2, outputs, 1, in, 0,
                                       &kernel));
        void *pointers[2] = {out, scalar};
        const void *inputs[] = {x};
        double got[2];
        int nan;
        GU_EW(ew_kernel_launch_outputs(kernel, N, pointers, EW_REDUCE_OVERWRITE, inputs, NULL, NULL));
        GU_CUDA(cudaMemcpy(got, scalar, sizeof got, cudaMemcpyDeviceToHost));
        check_reduction("min over the positive inputs", EW_REDUCE_MIN, EW_F32, got,
                        reduce_reference(EW_REDUCE_MIN, positive, positives, &nan), 0, 0, positives);
        GU_EW(ew_kernel_destroy(kernel));
    }
    /* what this release refuses: two reductions, a reduction into f16 */
    const ew_kernel_output_t two_sums[2] = {{EW_F32, EW_REDUCE_SUM}, {EW_F32, EW_REDUCE_SUM}};
    const ew_kernel_output_t f16_sum[2] = {{EW_F32, EW_REDUCE_NONE}, {EW_F16, EW_REDUCE_SUM}};
    ew_kernel_t kernel;
    GU_EW_EXPECT(EW_ERROR_NOT_SUPPORTED, ew_kernel_create_outputs(gu_handle(), "out0 = in0; out1 = in0;", 2,
                                                                  two_sums, 1, in, 0, &kernel));
    GU_EW_EXPECT(EW_ERROR_NOT_SUPPORTED,
                 ew_kernel_create_outputs(gu_handle(), "out0 = in0; out1 = in0;", 2, f16_sum, 1, in, 0, &kernel));
    GU_EW_EXPECT(EW_ERROR_INVALID_VALUE,
                 ew_kernel_create_outputs(gu_handle(), "out0 = in0;", 0, f16_sum, 1, in, 0, &kernel));
    cudaFree(x);
    cudaFree(out);
    cudaFree(scalar);
}

/* ---- several array outputs, against the CPU reference ---- */

/* A kernel of several outputs over two inputs; the reference of output k is ref[k] (arrays only). */
typedef struct {
    const char *source;
    int n_outputs;
    ew_kernel_output_t outputs[EW_KERNEL_MAX_OUTPUTS];
    ew_dtype_t in[2];
} outputs_case_t;

/* Two arrays of one dtype; three of several widths and an abs max; two, one wider and one narrower
 * than the inputs. */
static const outputs_case_t outputs_cases[] = {
    {"out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);",
     2,
     {{EW_F32, EW_REDUCE_NONE}, {EW_F32, EW_REDUCE_NONE}},
     {EW_F32, EW_F32}},
    {"out0 = in0; out1 = in0; out2 = ew::add(in0, in1); out3 = in1;",
     4,
     {{EW_F16, EW_REDUCE_NONE},
      {EW_F32, EW_REDUCE_ABS_MAX},
      {EW_F32, EW_REDUCE_NONE},
      {EW_BF16, EW_REDUCE_NONE}},
     {EW_F32, EW_F32}},
    {"out0 = in0; out1 = ew::add(in0, in1);",
     2,
     {{EW_F64, EW_REDUCE_NONE}, {EW_U8, EW_REDUCE_NONE}},
     {EW_U8, EW_U8}},
};

/* Output k of the cases below on the host, element by element through the catalogue's references. */
static void outputs_reference(size_t c, int k, int64_t n, void *out, const void *const *in)
{
    switch (c * 4 + (size_t)k) {
    case 0: ref_binary(EW_OP_ADD, EW_F32, n, out, in[0], in[1]); break;
    case 1: ref_binary(EW_OP_MUL, EW_F32, n, out, in[0], in[1]); break;
    case 4: ref_cast(EW_F16, EW_F32, n, out, in[0]); break;
    case 6: ref_binary(EW_OP_ADD, EW_F32, n, out, in[0], in[1]); break;
    case 7: ref_cast(EW_BF16, EW_F32, n, out, in[1]); break;
    case 8: ref_cast(EW_F64, EW_U8, n, out, in[0]); break;
    case 9: ref_binary(EW_OP_ADD, EW_U8, n, out, in[0], in[1]); break;
    default: fail_msg("no reference for case %zu output %d", c, k);
    }
}

/* Kernels of two to four outputs (arrays of one dtype, of several widths, with an abs max among them),
 * at sizes across the head and the tails and with every output and input at offsets that walk through
 * the phases against each other (outputs at other phases narrow the pack; inputs are read shifted),
 * each array against the reference bit for bit with its guards intact, the inputs unchanged; then the
 * refusals of outputs that overlap and of the plain launch. */
static void several_outputs(void **state)
{
    (void)state;
    const outputs_case_t *const cases = outputs_cases;
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x0075u);
    const int64_t capacity = kSizes[COUNT(kSizes) - 1];
    float *scalar;
    GU_CUDA(cudaMalloc((void **)&scalar, sizeof *scalar));
    for (size_t c = 0; c < COUNT(outputs_cases); ++c) {
        const outputs_case_t *k = &cases[c];
        ew_kernel_t kernel = NULL;
        ew_status_t status =
            ew_kernel_create_outputs(gu_handle(), k->source, k->n_outputs, k->outputs, 2, k->in, 0, &kernel);
        if (gu_status_means_no_nvrtc(status))
            gu_skip(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
        GU_EW(status);
        gu_buffer_t *in[2], *out[EW_KERNEL_MAX_OUTPUTS] = {NULL};
        void *host[2], *at_host[2], *expected[EW_KERNEL_MAX_OUTPUTS] = {NULL};
        for (int i = 0; i < 2; ++i) {
            in[i] = gu_buffer_new(k->in[i], capacity);
            host[i] = gu_host_alloc(gu_buffer_region_elems(in[i]) * ew_dtype_size(k->in[i]));
            gu_fill_random(k->in[i], gu_buffer_region_elems(in[i]), host[i], &rng);
            gu_buffer_load(in[i], host[i], gu_buffer_region_elems(in[i]));
        }
        for (int o = 0; o < k->n_outputs; ++o)
            if (k->outputs[o].reduce == EW_REDUCE_NONE) {
                out[o] = gu_buffer_new(k->outputs[o].dtype, capacity);
                expected[o] = gu_host_alloc(capacity * ew_dtype_size(k->outputs[o].dtype));
            }
        for (size_t s = 0; s < COUNT(kSizes); ++s) {
            const int64_t n = kSizes[s];
            if (gu_small_scale() && n > 4099)
                continue;
            for (int phase = 0; phase < 16; ++phase) {
                void *pointers[EW_KERNEL_MAX_OUTPUTS];
                int offset[EW_KERNEL_MAX_OUTPUTS + 2];
                const void *inputs[2];
                for (int i = 0; i < 2; ++i) {
                    offset[EW_KERNEL_MAX_OUTPUTS + i] =
                        (phase * (i + 2) + (int)s) % gu_offset_count(k->in[i]);
                    inputs[i] = gu_at(in[i], offset[EW_KERNEL_MAX_OUTPUTS + i]);
                    at_host[i] = (unsigned char *)host[i] +
                                 offset[EW_KERNEL_MAX_OUTPUTS + i] * ew_dtype_size(k->in[i]);
                }
                for (int o = 0; o < k->n_outputs; ++o) {
                    if (out[o] == NULL) {
                        pointers[o] = scalar;
                        continue;
                    }
                    /* phases 0 to 7: every output at that offset (modulo its count); then apart */
                    offset[o] =
                        (phase < 8 ? phase : phase * (o + 1) + o) % gu_offset_count(k->outputs[o].dtype);
                    pointers[o] = gu_at(out[o], offset[o]);
                    gu_buffer_poison(out[o], GU_POISON);
                    outputs_reference(c, o, n, expected[o], (const void *const *)at_host);
                }
                GU_EW(ew_kernel_launch_outputs(kernel, n, pointers, EW_REDUCE_OVERWRITE, inputs, NULL, NULL));
                GU_CUDA(cudaDeviceSynchronize());
                for (int o = 0; o < k->n_outputs; ++o) {
                    char what[200];
                    snprintf(what, sizeof what, "%s: out%d (%s) n=%lld phase %d", k->source, o,
                             ew_dtype_name(k->outputs[o].dtype), (long long)n, phase);
                    if (out[o] == NULL) { /* the abs max of in0, exact */
                        float got, want = 0;
                        GU_CUDA(cudaMemcpy(&got, scalar, sizeof got, cudaMemcpyDeviceToHost));
                        for (int64_t i = 0; i < n; ++i) {
                            const float v = fabsf(((const float *)at_host[0])[i]);
                            want = isnan(v) || isnan(want) ? NAN : v > want ? v : want;
                        }
                        if (memcmp(&got, &want, sizeof got) != 0 && !(isnan(got) && isnan(want)))
                            GU_FAIL("%s: %.9g, expected %.9g", what, got, want);
                        continue;
                    }
                    const gu_inputs_t inputs_for_messages = {
                        2, {k->in[0], k->in[1]}, {at_host[0], at_host[1]}};
                    if (GU_CHECK_OUTPUT(out[o], offset[o], n, expected[o], &inputs_for_messages, what) > 0) {
                        gu_buffer_poison(out[o], 0x5A); /* elements equal to the poison: again with another */
                        GU_EW(ew_kernel_launch_outputs(kernel, n, pointers, EW_REDUCE_OVERWRITE, inputs, NULL,
                                                       NULL));
                        GU_CUDA(cudaDeviceSynchronize());
                        GU_CHECK_OUTPUT(out[o], offset[o], n, expected[o], &inputs_for_messages, what);
                    }
                }
                for (int i = 0; i < 2; ++i)
                    GU_CHECK_UNCHANGED(in[i], k->source);
            }
        }
        if (c == 0) { /* the refusals */
            const void *inputs[2] = {gu_at(in[0], 0), gu_at(in[1], 0)};
            void *same[2] = {gu_at(out[0], 0), gu_at(out[0], 0)},
                 *overlapping[2] = {gu_at(out[0], 0), gu_at(out[0], 1)};
            GU_EW_EXPECT(
                EW_ERROR_INVALID_VALUE,
                ew_kernel_launch_outputs(kernel, 100, same, EW_REDUCE_OVERWRITE, inputs, NULL, NULL));
            GU_EW_EXPECT(
                EW_ERROR_INVALID_VALUE,
                ew_kernel_launch_outputs(kernel, 100, overlapping, EW_REDUCE_OVERWRITE, inputs, NULL, NULL));
            GU_EW_EXPECT(EW_ERROR_INVALID_VALUE,
                         ew_kernel_launch(kernel, 100, gu_at(out[0], 0), inputs, NULL, NULL));
            /* in place: an output on an input of its size, exactly, is allowed */
            void *in_place[2] = {gu_at(in[0], 0), gu_at(out[1], 0)};
            GU_EW(ew_kernel_launch_outputs(kernel, 100, in_place, EW_REDUCE_OVERWRITE, inputs, NULL, NULL));
            GU_CUDA(cudaDeviceSynchronize());
        }
        for (int i = 0; i < 2; ++i)
            gu_buffer_free(in[i]);
        for (int o = 0; o < k->n_outputs; ++o)
            if (out[o] != NULL)
                gu_buffer_free(out[o]);
        GU_EW(ew_kernel_destroy(kernel));
    }
    cudaFree(scalar);
}

/* A layout of a kernel of outputs over two inputs: the shape and the inputs' strides (view.strides[0]
 * and [1]), each output's strides by its index among the outputs (a reduction's row unread). */
typedef struct {
    strided_case_t view;
    int64_t outputs[EW_KERNEL_MAX_OUTPUTS][STRIDED_DIMS];
} outputs_layout_t;

/* The kernels of several_outputs on views, each array through its own strides (the gather kernel;
 * contiguous ones the flat launch): dense arrays over transposed and broadcast inputs, one array
 * transposed against the others, arrays strided, reversed and dense at once, 3-d permutations. Each
 * array's whole region read back: its elements equal to the reference and the rest still poison, under
 * two poisons; the abs max exact; the inputs unchanged. */
static void several_outputs_strided(void **state)
{
    (void)state;
    enum { R = 67, C = 45 };
    static const outputs_layout_t layouts[] = {
        {{"contiguous (the flat launch)", 2, {R, C}, {{C, 1}, {C, 1}}}, {{C, 1}, {C, 1}, {C, 1}, {C, 1}}},
        {{"dense arrays, a transposed and a broadcast input", 2, {R, C}, {{1, R}, {0, 1}}},
         {{C, 1}, {C, 1}, {C, 1}, {C, 1}}},
        {{"arrays transposed against each other", 2, {R, C}, {{C, 1}, {C, 1}}},
         {{C, 1}, {1, R}, {C, 1}, {1, R}}},
        {{"arrays strided, dense and reversed", 2, {R, C}, {{C, 1}, {1, 0}}},
         {{2 * C + 3, 2}, {C, 1}, {-C, -1}, {C, 1}}},
        {{"3-d, permuted and broadcast", 3, {5, 7, 33}, {{33, 165, 1}, {0, 33, 1}}},
         {{231, 33, 1}, {1, 5, 35}, {231, 33, 1}, {231, 1, 7}}},
    };
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x57E);
    float *scalar;
    GU_CUDA(cudaMalloc((void **)&scalar, sizeof *scalar));
    for (size_t c = 0; c < COUNT(outputs_cases); ++c) {
        const outputs_case_t *k = &outputs_cases[c];
        ew_kernel_t kernel = NULL;
        ew_status_t status =
            ew_kernel_create_outputs(gu_handle(), k->source, k->n_outputs, k->outputs, 2, k->in, 0, &kernel);
        if (gu_status_means_no_nvrtc(status))
            gu_skip(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
        GU_EW(status);
        for (size_t l = 0; l < COUNT(layouts); ++l) {
            const outputs_layout_t *layout = &layouts[l];
            const strided_case_t *view = &layout->view;
            int64_t n = 1, lo, hi;
            for (int d = 0; d < view->ndim; ++d)
                n *= view->shape[d];
            gu_buffer_t *in[2], *out[EW_KERNEL_MAX_OUTPUTS] = {NULL};
            void *host[2], *dense[2], *pointers[EW_KERNEL_MAX_OUTPUTS], *want[EW_KERNEL_MAX_OUTPUTS] = {NULL},
                                                                        *expected = gu_host_alloc(n * 8);
            const void *inputs[2];
            const int64_t *in_strides[2] = {view->strides[0], view->strides[1]},
                          *out_strides[EW_KERNEL_MAX_OUTPUTS];
            for (int i = 0; i < 2; ++i) {
                const size_t size = ew_dtype_size(k->in[i]);
                strided_span(view, view->strides[i], &lo, &hi);
                in[i] = gu_buffer_new(k->in[i], hi - lo + 1);
                inputs[i] = (unsigned char *)gu_at(in[i], 0) - lo * (int64_t)size;
                host[i] = gu_host_alloc(gu_buffer_region_elems(in[i]) * size);
                gu_fill_random(k->in[i], gu_buffer_region_elems(in[i]), host[i], &rng);
                gu_buffer_load(in[i], host[i], gu_buffer_region_elems(in[i]));
                dense[i] = gu_host_alloc(n * size); /* its elements in index order, for the reference */
                for (int64_t e = 0; e < n; ++e)
                    memcpy((unsigned char *)dense[i] + e * size,
                           (unsigned char *)host[i] + (strided_offset(view, view->strides[i], e) - lo) * size,
                           size);
            }
            char what[200];
            const uint8_t poisons[] = {GU_POISON, GU_POISON_ALT};
            for (size_t p = 0; p < COUNT(poisons); ++p) {
                for (int o = 0; o < k->n_outputs; ++o) {
                    out_strides[o] = layout->outputs[o];
                    if (k->outputs[o].reduce != EW_REDUCE_NONE) {
                        pointers[o] = scalar;
                        continue;
                    }
                    const size_t size = ew_dtype_size(k->outputs[o].dtype);
                    strided_span(view, layout->outputs[o], &lo, &hi);
                    if (p == 0) {
                        out[o] = gu_buffer_new(k->outputs[o].dtype, hi - lo + 1);
                        want[o] = gu_host_alloc((hi - lo + 1) * size);
                    }
                    pointers[o] = (unsigned char *)gu_at(out[o], 0) - lo * (int64_t)size;
                    gu_buffer_poison(out[o], poisons[p]);
                    memset(want[o], poisons[p], (hi - lo + 1) * size);
                    outputs_reference(c, o, n, expected, (const void *const *)dense);
                    for (int64_t e = 0; e < n; ++e)
                        memcpy((unsigned char *)want[o] +
                                   (strided_offset(view, layout->outputs[o], e) - lo) * size,
                               (unsigned char *)expected + e * size, size);
                }
                GU_EW(ew_kernel_launch_outputs_strided(kernel, view->ndim, view->shape, pointers, out_strides,
                                                       EW_REDUCE_OVERWRITE, inputs, in_strides, NULL, NULL));
                GU_CUDA(cudaDeviceSynchronize());
                for (int o = 0; o < k->n_outputs; ++o) {
                    snprintf(what, sizeof what, "%s: out%d (%s) on views: %s", k->source, o,
                             ew_dtype_name(k->outputs[o].dtype), view->name);
                    if (out[o] != NULL) {
                        GU_CHECK_OUTPUT(out[o], 0, out[o]->capacity, want[o], NULL, what);
                        continue;
                    }
                    float got, max = 0; /* the abs max of in0, exact */
                    GU_CUDA(cudaMemcpy(&got, scalar, sizeof got, cudaMemcpyDeviceToHost));
                    for (int64_t e = 0; e < n; ++e) {
                        const float v = fabsf(((const float *)dense[0])[e]);
                        max = isnan(v) || isnan(max) ? NAN : v > max ? v : max;
                    }
                    if (memcmp(&got, &max, sizeof got) != 0 && !(isnan(got) && isnan(max)))
                        GU_FAIL("%s: %.9g, expected %.9g", what, got, max);
                }
            }
            for (int i = 0; i < 2; ++i) {
                GU_CHECK_UNCHANGED(in[i], what);
                gu_buffer_free(in[i]);
            }
            for (int o = 0; o < k->n_outputs; ++o)
                if (out[o] != NULL)
                    gu_buffer_free(out[o]);
        }
        GU_EW(ew_kernel_destroy(kernel));
    }
    cudaFree(scalar);
}

/* ---- lists ---- */

/* Kernels over a tensor list of the sizes above (zeros among them) at offsets that walk the phases,
 * each entry in buffers of its own: two arrays (add and mul, each against the reference bit for bit,
 * guards intact), then one array of two parameters, per launch and per entry (a device array each
 * entry reads its own from, written on the stream just before), and a list whose first launch is in
 * a graph capture. */
static void batched_launches(void **state)
{
    (void)state;
    enum { ENTRIES = COUNT(kSizes) + 2 };
    const ew_dtype_t in_dtypes[2] = {EW_F32, EW_F32};
    const ew_kernel_output_t arrays[2] = {{EW_F32, EW_REDUCE_NONE}, {EW_F32, EW_REDUCE_NONE}};
    ew_kernel_t pair = NULL, scaled = NULL;
    ew_status_t status =
        ew_kernel_create_outputs(gu_handle(), "out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);", 2,
                                 arrays, 2, in_dtypes, 0, &pair);
    if (gu_status_means_no_nvrtc(status))
        gu_skip(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
    GU_EW(status);
    GU_EW(ew_kernel_create(gu_handle(), "return ew::cast<float>(in0 * p1) + ew::cast<float>(p0);", EW_F32, 1,
                           in_dtypes, 2, &scaled));
    gu_rng_t rng = gu_rng(gu_seed() ^ 0xBA7Cu);
    int64_t n[ENTRIES];
    gu_buffer_t *in[2][ENTRIES], *out[2][ENTRIES];
    void *host[2][ENTRIES], *at_host[2][ENTRIES], *expected = gu_host_alloc(kSizes[COUNT(kSizes) - 1] * 4);
    void *out_at[2][ENTRIES];
    const void *in_at[2][ENTRIES];
    int out_offset[2][ENTRIES];
    for (int e = 0; e < ENTRIES; ++e) {
        n[e] = e < (int)COUNT(kSizes) ? kSizes[e] : 0;
        if (gu_small_scale() && n[e] > 4099)
            n[e] = 4099;
        for (int i = 0; i < 2; ++i) {
            in[i][e] = gu_buffer_new(EW_F32, n[e] > 0 ? n[e] : 1);
            host[i][e] = gu_host_alloc(gu_buffer_region_elems(in[i][e]) * 4);
            gu_fill_random(EW_F32, gu_buffer_region_elems(in[i][e]), host[i][e], &rng);
            gu_buffer_load(in[i][e], host[i][e], gu_buffer_region_elems(in[i][e]));
            out[i][e] = gu_buffer_new(EW_F32, n[e] > 0 ? n[e] : 1);
        }
    }
    const int64_t step = 7;
    for (int round = 0; round < 3; ++round) {
        /* round 0: every pointer of an entry at one phase (its runs); then apart (element by element) */
        for (int e = 0; e < ENTRIES; ++e)
            for (int i = 0; i < 2; ++i) {
                const int in_offset = (int)((e + (round ? i * step * round : 0)) % gu_offset_count(EW_F32));
                out_offset[i][e] =
                    (int)((e + (round ? (i + 2) * step * round : 0)) % gu_offset_count(EW_F32));
                in_at[i][e] = gu_at(in[i][e], in_offset);
                at_host[i][e] = (unsigned char *)host[i][e] + in_offset * 4;
                out_at[i][e] = gu_at(out[i][e], out_offset[i][e]);
                gu_buffer_poison(out[i][e], round % 2 ? GU_POISON_ALT : GU_POISON);
            }
        void *const *outputs[2] = {out_at[0], out_at[1]};
        const void *const *inputs[2] = {in_at[0], in_at[1]};
        GU_EW(ew_kernel_launch_batched(pair, ENTRIES, n, outputs, EW_REDUCE_OVERWRITE, inputs, NULL, NULL,
                                       NULL));
        GU_CUDA(cudaDeviceSynchronize());
        for (int e = 0; e < ENTRIES; ++e)
            for (int k = 0; k < 2; ++k) {
                char what[128];
                snprintf(what, sizeof what, "list round %d entry %d (n = %lld) out%d", round, e,
                         (long long)n[e], k);
                const void *const entry_in[2] = {at_host[0][e], at_host[1][e]};
                outputs_reference(0, k, n[e], expected, entry_in);
                const gu_inputs_t for_messages = {2, {EW_F32, EW_F32}, {at_host[0][e], at_host[1][e]}};
                GU_CHECK_OUTPUT(out[k][e], out_offset[k][e], n[e], expected, &for_messages, what);
                GU_CHECK_UNCHANGED(in[k][e], what);
            }
    }

    /* the parameters: (p0, p1) per launch, then each entry's from device memory; in0 finite here (a NaN's
     * payload through the conversions is the catalogue's reference's business, not this test's) */
    for (int e = 0; e < ENTRIES; ++e) {
        float *x = host[0][e];
        for (int64_t i = 0; i < gu_buffer_region_elems(in[0][e]); ++i)
            x[i] = (float)((int64_t)(gu_rng_next(&rng) % 200001) - 100000) / 64.0f;
        gu_buffer_load(in[0][e], host[0][e], gu_buffer_region_elems(in[0][e]));
    }
    double *entry_params;
    GU_CUDA(cudaMalloc((void **)&entry_params, 2 * ENTRIES * sizeof(double)));
    double params[2 * ENTRIES];
    for (int e = 0; e < ENTRIES; ++e) {
        params[2 * e] = 0.25 * e - 1.0;
        params[2 * e + 1] = 1.0 + 1.0 / (e + 3);
    }
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    for (int per_entry = 0; per_entry < 2; ++per_entry) {
        for (int e = 0; e < ENTRIES; ++e)
            gu_buffer_poison(out[0][e], GU_POISON);
        GU_CUDA(cudaDeviceSynchronize());
        void *const *outputs[1] = {out_at[0]};
        const void *const *inputs[1] = {in_at[0]};
        if (per_entry) {
            GU_CUDA(cudaMemcpyAsync(entry_params, params, sizeof params, cudaMemcpyHostToDevice, stream));
            GU_EW(ew_kernel_launch_batched(scaled, ENTRIES, n, outputs, EW_REDUCE_OVERWRITE, inputs, NULL,
                                           entry_params, stream));
        } else {
            GU_EW(ew_kernel_launch_batched(scaled, ENTRIES, n, outputs, EW_REDUCE_OVERWRITE, inputs, params,
                                           NULL, stream));
        }
        GU_CUDA(cudaStreamSynchronize(stream));
        for (int e = 0; e < ENTRIES; ++e) {
            const double *p = per_entry ? &params[2 * e] : params;
            for (int64_t i = 0; i < n[e]; ++i)
                ((float *)expected)[i] =
                    (float)((double)((const float *)at_host[0][e])[i] * p[1]) + (float)p[0];
            char what[128];
            snprintf(what, sizeof what, "list of %s parameters, entry %d (n = %lld)",
                     per_entry ? "per-entry" : "per-launch", e, (long long)n[e]);
            const gu_inputs_t for_messages = {1, {EW_F32}, {at_host[0][e]}};
            GU_CHECK_OUTPUT(out[0][e], out_offset[0][e], n[e], expected, &for_messages, what);
        }
    }

    /* a new kernel's first list launch inside a capture: its program loaded there, run by the graph */
    ew_kernel_t captured = NULL;
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    GU_EW(ew_kernel_create(gu_handle(), "return ew::cast<float>(in0 * p1) + ew::cast<float>(p0); // captured",
                           EW_F32, 1, in_dtypes, 2, &captured));
    void *const *outputs[1] = {out_at[1]};
    const void *const *inputs[1] = {in_at[0]};
    GU_EW(ew_kernel_launch_batched(captured, ENTRIES, n, outputs, EW_REDUCE_OVERWRITE, inputs, params, NULL,
                                   stream));
    cudaGraph_t graph;
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    cudaGraphExec_t exec;
    GU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    gu_track_graph_exec(exec);
    for (int e = 0; e < ENTRIES; ++e)
        gu_buffer_poison(out[1][e], GU_POISON_ALT);
    GU_CUDA(cudaDeviceSynchronize());
    GU_CUDA(cudaGraphLaunch(exec, stream));
    GU_CUDA(cudaStreamSynchronize(stream));
    for (int e = 0; e < ENTRIES; ++e) {
        for (int64_t i = 0; i < n[e]; ++i)
            ((float *)expected)[i] =
                (float)((double)((const float *)at_host[0][e])[i] * params[1]) + (float)params[0];
        const gu_inputs_t for_messages = {1, {EW_F32}, {at_host[0][e]}};
        GU_CHECK_OUTPUT(out[1][e], out_offset[1][e], n[e], expected, &for_messages,
                        "a list launched by a graph");
    }
    GU_EW(ew_kernel_destroy(captured));
    cudaFree(entry_params);
    for (int e = 0; e < ENTRIES; ++e)
        for (int i = 0; i < 2; ++i) {
            gu_buffer_free(in[i][e]);
            gu_buffer_free(out[i][e]);
        }
    GU_EW(ew_kernel_destroy(scaled));
    GU_EW(ew_kernel_destroy(pair));
}

/* A kernel of two arrays around a reduction over lists (ew_kernel_launch_batched), each reduction into
 * f32 and f64: each entry's scalar its own (per-tensor) and one scalar shared by every entry (the whole
 * list's), overwritten then accumulated onto, against the reference; empty entries (their scalars the
 * identity, overwritten), a long entry over many blocks; the arrays checked, the scalars poisoned. */
static void batched_reduction_outputs(void **state)
{
    (void)state;
    enum { ENTRIES = 9 };
    const int64_t sizes[ENTRIES] = {0, 1, 255, 4099, 100003, 0, 70001, 3, (int64_t)1 << 20};
    static const ew_reduce_op_t ops[] = {EW_REDUCE_ABS_MAX, EW_REDUCE_MAX, EW_REDUCE_MIN, EW_REDUCE_SUM};
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x1157u);
    int64_t n[ENTRIES], total = 0;
    float *x[ENTRIES], *out[2][ENTRIES], *host[ENTRIES];
    for (int e = 0; e < ENTRIES; ++e) {
        n[e] = gu_small_scale() && sizes[e] > 4099 ? 4099 : sizes[e];
        total += n[e];
    }
    double *values = gu_host_alloc((size_t)total * sizeof *values), *all = values;
    float *got_array = gu_host_alloc((size_t)(n[ENTRIES - 1] > 100003 ? n[ENTRIES - 1] : 100003) * 4);
    double magnitude[ENTRIES], magnitude_all = 0;
    for (int e = 0; e < ENTRIES; ++e) {
        const size_t bytes = (size_t)(n[e] > 0 ? n[e] : 1) * 4;
        host[e] = gu_host_alloc(bytes);
        magnitude[e] = 0;
        for (int64_t i = 0; i < n[e]; ++i) { /* both signs, exponents 2^-27 to 2^27: no sum overflows */
            const uint64_t r = gu_rng_next(&rng);
            const uint32_t bits = (uint32_t)((r & 0x80000000u) | (100u + (unsigned)(r >> 40) % 55u) << 23 |
                                             ((r >> 8) & 0x7FFFFFu));
            host[e][i] = ref_f32_from_bits(bits);
            values[i] = host[e][i];
            magnitude[e] += fabs(values[i]);
        }
        values += n[e];
        magnitude_all += magnitude[e];
        GU_CUDA(cudaMalloc((void **)&x[e], bytes));
        GU_CUDA(cudaMemcpy(x[e], host[e], bytes, cudaMemcpyHostToDevice));
        for (int k = 0; k < 2; ++k)
            GU_CUDA(cudaMalloc((void **)&out[k][e], bytes));
    }
    double *scalars; /* each entry's, then the shared one; room for doubles, a float uses the first 4 bytes */
    GU_CUDA(cudaMalloc((void **)&scalars, (ENTRIES + 1) * sizeof *scalars));
    const ew_dtype_t in[] = {EW_F32};
    for (size_t o = 0; o < COUNT(ops); ++o)
        for (int f64 = 0; f64 <= 1; ++f64) {
            const ew_dtype_t dtype = f64 ? EW_F64 : EW_F32;
            const ew_kernel_output_t outputs[3] = {
                {EW_F32, EW_REDUCE_NONE}, {dtype, ops[o]}, {EW_F32, EW_REDUCE_NONE}};
            ew_kernel_t kernel = NULL;
            ew_status_t status = ew_kernel_create_outputs(gu_handle(), "out0 = in0; out1 = in0; out2 = -in0;",
                                                          3, outputs, 1, in, 0, &kernel);
            if (gu_status_means_no_nvrtc(status))
                gu_skip(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
            GU_EW(status);
            for (int shared = 0; shared <= 1; ++shared) {
                void *scalar_of[ENTRIES];
                for (int e = 0; e < ENTRIES; ++e)
                    scalar_of[e] = (char *)scalars + (shared ? ENTRIES : e) * sizeof *scalars;
                void *const *list_outputs[3] = {(void *const *)out[0], scalar_of, (void *const *)out[1]};
                const void *const *inputs[1] = {(const void *const *)x};
                for (int accumulate = 0; accumulate <= 1; ++accumulate) {
                    if (!accumulate) {
                        GU_CUDA(cudaMemset(scalars, GU_POISON, (ENTRIES + 1) * sizeof *scalars));
                        for (int e = 0; e < ENTRIES; ++e)
                            for (int k = 0; k < 2; ++k)
                                GU_CUDA(cudaMemset(out[k][e], GU_POISON, (size_t)(n[e] > 0 ? n[e] : 1) * 4));
                    }
                    GU_EW(ew_kernel_launch_batched(kernel, ENTRIES, n, list_outputs,
                                                   accumulate ? EW_REDUCE_ACCUMULATE : EW_REDUCE_OVERWRITE,
                                                   inputs, NULL, NULL, NULL));
                    double got[ENTRIES + 1];
                    GU_CUDA(cudaMemcpy(got, scalars, sizeof got, cudaMemcpyDeviceToHost));
                    /* accumulated onto the result: unchanged but for the sum, which doubles */
                    const double times = accumulate && ops[o] == EW_REDUCE_SUM ? 2.0 : 1.0;
                    char what[256];
                    int nan;
                    if (shared) {
                        snprintf(what, sizeof what, "list op %d into %s, one scalar for all, %s", (int)ops[o],
                                 ew_dtype_name(dtype), accumulate ? "accumulated" : "overwritten");
                        const double want = times * reduce_reference(ops[o], all, total, &nan);
                        check_reduction(what, ops[o], dtype, &got[ENTRIES], want, nan, times * magnitude_all,
                                        2 * total);
                    } else {
                        const double *v = all;
                        for (int e = 0; e < ENTRIES; v += n[e], ++e) {
                            snprintf(what, sizeof what, "list op %d into %s, entry %d (n = %lld), %s",
                                     (int)ops[o], ew_dtype_name(dtype), e, (long long)n[e],
                                     accumulate ? "accumulated" : "overwritten");
                            const double want = times * reduce_reference(ops[o], v, n[e], &nan);
                            check_reduction(what, ops[o], dtype, &got[e], want, nan, times * magnitude[e],
                                            2 * n[e]);
                        }
                    }
                    if (accumulate || o != 0 || f64)
                        continue;
                    for (int e = 0; e < ENTRIES; ++e) /* the arrays: in0 and -in0, exactly */
                        for (int k = 0; k < 2 && n[e] > 0; ++k) {
                            GU_CUDA(
                                cudaMemcpy(got_array, out[k][e], (size_t)n[e] * 4, cudaMemcpyDeviceToHost));
                            for (int64_t i = 0; i < n[e]; ++i)
                                if (got_array[i] != (k ? -host[e][i] : host[e][i]))
                                    GU_FAIL("list entry %d out%d[%lld] = %.9g, expected %.9g", e, 2 * k,
                                            (long long)i, got_array[i], k ? -host[e][i] : host[e][i]);
                        }
                }
            }
            /* every entry empty, overwritten: each scalar the identity, from the resets alone */
            const int64_t zeros[ENTRIES] = {0};
            void *scalar_of[ENTRIES];
            for (int e = 0; e < ENTRIES; ++e)
                scalar_of[e] = (char *)scalars + e * sizeof *scalars;
            void *const *list_outputs[3] = {(void *const *)out[0], scalar_of, (void *const *)out[1]};
            const void *const *inputs[1] = {(const void *const *)x};
            GU_CUDA(cudaMemset(scalars, GU_POISON, (ENTRIES + 1) * sizeof *scalars));
            GU_EW(ew_kernel_launch_batched(kernel, ENTRIES, zeros, list_outputs, EW_REDUCE_OVERWRITE, inputs,
                                           NULL, NULL, NULL));
            double got[ENTRIES + 1];
            GU_CUDA(cudaMemcpy(got, scalars, sizeof got, cudaMemcpyDeviceToHost));
            int nan;
            const double identity = reduce_reference(ops[o], all, 0, &nan);
            for (int e = 0; e < ENTRIES; ++e)
                check_reduction("an empty list, overwritten", ops[o], dtype, &got[e], identity, 0, 0, 0);
            GU_EW(ew_kernel_destroy(kernel));
        }
    for (int e = 0; e < ENTRIES; ++e) {
        cudaFree(x[e]);
        cudaFree(out[0][e]);
        cudaFree(out[1][e]);
    }
    cudaFree(scalars);
}

/* Reduction outputs through strided launches: a transposed input (the tiled kernel) and a row
 * broadcast over rows (a strided kernel that reads it at stride 0, each of its elements counted once a
 * row), each op into f32 and f64, against the reference over the launch's elements; the f64 sum's
 * tolerance would catch an element counted twice. Then an empty shape, which still overwrites. */
static void strided_reduction_outputs(void **state)
{
    (void)state;
    enum { ROWS = 300, COLS = 257, N = ROWS * COLS };
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x57Du);
    uint16_t *host = gu_host_alloc(N * sizeof *host);
    float *out_host = gu_host_alloc(N * sizeof *out_host);
    double *values = gu_host_alloc(N * sizeof *values), *repeated = gu_host_alloc(N * sizeof *repeated);
    double magnitude = 0, row_magnitude = 0;
    for (int64_t i = 0; i < N; ++i) {
        const uint64_t r = gu_rng_next(&rng);
        host[i] = (uint16_t)((r & 0x8000u) | (100u + (unsigned)(r >> 24) % 55u) << 7 | ((r >> 16) & 0x7Fu));
        values[i] = ref_bf16_to_f32(host[i]);
        magnitude += fabs(values[i]);
    }
    for (int64_t i = 0; i < N; ++i) {
        repeated[i] = values[i % COLS];
        row_magnitude += fabs(repeated[i]);
    }
    uint16_t *x;
    float *out;
    double *scalar;
    GU_CUDA(cudaMalloc((void **)&x, N * sizeof *x));
    GU_CUDA(cudaMalloc((void **)&out, N * sizeof *out));
    GU_CUDA(cudaMalloc((void **)&scalar, sizeof *scalar));
    GU_CUDA(cudaMemcpy(x, host, N * sizeof *x, cudaMemcpyHostToDevice));
    static const ew_reduce_op_t ops[] = {EW_REDUCE_ABS_MAX, EW_REDUCE_MAX, EW_REDUCE_MIN, EW_REDUCE_SUM};
    const ew_dtype_t in[] = {EW_BF16};
    for (size_t o = 0; o < COUNT(ops); ++o)
        for (int f64 = 0; f64 <= 1; ++f64) {
            const ew_dtype_t dtype = f64 ? EW_F64 : EW_F32;
            const ew_kernel_output_t outputs[2] = {{EW_F32, EW_REDUCE_NONE}, {dtype, ops[o]}};
            ew_kernel_t kernel = NULL;
            ew_status_t status = ew_kernel_create_outputs(gu_handle(), "out0 = in0; out1 = in0;", 2, outputs,
                                                          1, in, 0, &kernel);
            if (gu_status_means_no_nvrtc(status))
                gu_skip(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
            GU_EW(status);
            void *pointers[2] = {out, scalar};
            const void *inputs[] = {x};
            for (int broadcast = 0; broadcast <= 1; ++broadcast) {
                /* transposed: out [COLS][ROWS] = x^T; broadcast: out [ROWS][COLS] = x's first row on each */
                const int64_t shape[2] = {broadcast ? ROWS : COLS, broadcast ? COLS : ROWS};
                const int64_t x_strides[2] = {broadcast ? 0 : 1, broadcast ? 1 : COLS};
                const int64_t *in_strides[] = {x_strides};
                char what[160];
                snprintf(what, sizeof what, "op %d into %s, %s", (int)ops[o], ew_dtype_name(dtype),
                         broadcast ? "a row broadcast over rows" : "a transposed input");
                GU_CUDA(cudaMemset(scalar, GU_POISON, sizeof *scalar));
                GU_CUDA(cudaMemset(out, GU_POISON, N * sizeof *out));
                GU_EW(ew_kernel_launch_outputs_strided(kernel, 2, shape, pointers, NULL, EW_REDUCE_OVERWRITE,
                                                       inputs, in_strides, NULL, NULL));
                double got;
                GU_CUDA(cudaMemcpy(&got, scalar, sizeof got, cudaMemcpyDeviceToHost));
                GU_CUDA(cudaMemcpy(out_host, out, N * sizeof *out, cudaMemcpyDeviceToHost));
                for (int64_t i = 0; i < N; ++i) {
                    const int64_t row = i / shape[1], col = i % shape[1];
                    const uint16_t want = host[broadcast ? col : col * COLS + row];
                    if (memcmp(&out_host[i], &(float){ref_bf16_to_f32(want)}, 4) != 0)
                        GU_FAIL("%s: out[%lld] differs from the conversion", what, (long long)i);
                }
                int nan;
                const double want = reduce_reference(ops[o], broadcast ? repeated : values, N, &nan);
                check_reduction(what, ops[o], dtype, &got, want, nan, broadcast ? row_magnitude : magnitude,
                                N);
            }
            /* an empty shape: nothing written, the scalar overwritten with the value over nothing */
            const int64_t empty[2] = {0, COLS};
            GU_CUDA(cudaMemset(scalar, GU_POISON, sizeof *scalar));
            GU_EW(ew_kernel_launch_outputs_strided(kernel, 2, empty, pointers, NULL, EW_REDUCE_OVERWRITE,
                                                   inputs, NULL, NULL, NULL));
            double got;
            int nan;
            GU_CUDA(cudaMemcpy(&got, scalar, sizeof got, cudaMemcpyDeviceToHost));
            check_reduction("over an empty shape", ops[o], dtype, &got,
                            reduce_reference(ops[o], values, 0, &nan), 0, 0, 0);
            GU_EW(ew_kernel_destroy(kernel));
        }
    cudaFree(x);
    cudaFree(out);
    cudaFree(scalar);
}

int main(int argc, char **argv)
{
    gu_require_gpu("test_user_kernel_gpu");
    printf("test_user_kernel_gpu: EW_TEST_SCALE=%s, EW_TEST_SEED=0x%llx\n", gu_small_scale() ? "small" : "full",
           (unsigned long long)gu_seed());
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(errors, gu_teardown),
        cmocka_unit_test_teardown(caches, gu_teardown),
        cmocka_unit_test_teardown(reduction_outputs, gu_teardown),
        cmocka_unit_test_teardown(strided_reduction_outputs, gu_teardown),
        cmocka_unit_test_teardown(several_outputs, gu_teardown),
        cmocka_unit_test_teardown(several_outputs_strided, gu_teardown),
        cmocka_unit_test_teardown(batched_launches, gu_teardown),
        cmocka_unit_test_teardown(batched_reduction_outputs, gu_teardown),
        cmocka_unit_test_teardown(user_expression, gu_teardown),
        cmocka_unit_test_teardown(in_place, gu_teardown),
        cmocka_unit_test_teardown(first_launches_in_a_capture, gu_teardown),
        cmocka_unit_test_teardown(bulk_program_at_its_first_launch, gu_teardown),
        cmocka_unit_test_teardown(launch_from_a_new_thread, gu_teardown),
        cmocka_unit_test_teardown(offsets_and_packs, gu_teardown),
        cmocka_unit_test_teardown(strided_layouts, gu_teardown),
        cmocka_unit_test_teardown(strided_arguments, gu_teardown),
        cmocka_unit_test_teardown(chain_matches_reference, gu_teardown),
        cmocka_unit_test_teardown(disk_cache_in_new_processes, gu_teardown),
        cmocka_unit_test_teardown(cache_settings, restore_cache_env),
        /* run only when named: */
        cmocka_unit_test_teardown(rejected_cubin_recompiled, gu_teardown),
        cmocka_unit_test_teardown(cache_child, gu_teardown),
    };
    enum { NAMED_ONLY = 2 };
    return gu_run_tests("user-defined kernels", tests, COUNT(tests), NAMED_ONLY, argc, argv);
}
