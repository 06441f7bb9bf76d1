/* SPDX-License-Identifier: Apache-2.0 */
/* libelementwise from C: a user-defined kernel, out = f16(relu(p0·a + b)) in one pass, checked bit for
 * bit against the same chain of three catalogue calls (scale-add, relu, cast f32 -> f16); then the
 * same body with a reduction output, max |out| into a device float in the same pass, checked against
 * ew_amax of the output; a kernel of two arrays, the f16 result and the f32 value before its cast,
 * checked against the chain's cast and relu outputs; the first kernel over a list (three slices of
 * the arrays as three tensors), its parameter each entry's own from device memory; and the kernel of
 * a reduction over the same list, each tensor's max |out| into its own scalar, checked against ew_amax.
 *
 * Build: make            (flags from `pkg-config --cflags --libs elementwise`, see Makefile)
 * Run:   ./kernel_example
 *        ./kernel_example --fill sm_90   compiles both kernels into the disk cache for that architecture,
 *                                        no GPU needed: copy the cache to machines without NVRTC
 * Without a GPU, or without NVRTC (needed to compile the kernel; the catalogue never needs it), it
 * says so and exits 0. The CUDA runtime is only needed here for cudaMalloc and the copies;
 * libelementwise itself carries its own. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <elementwise.h>

/* An odd size, so the last elements fall outside whole vector packs. */
enum { N = 1000003, SPECIAL = 8 };

/* The kernel's body: in0 and in1 are floats (the inputs' dtypes), p0 the double parameter. ew::scale_add,
 * ew::relu and ew::cast are the catalogue's own functions, so the result has the bits of the three calls. */
static const char SOURCE[] = "return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));";

/* The same result as out0, and as out1 the value the reduction folds in: max |y| over the launch. */
static const char AMAX_SOURCE[] =
    "const __half y = ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));\n"
    "out0 = y;\n"
    "out1 = y;";
static const ew_kernel_output_t AMAX_OUTPUTS[2] = {{EW_F16, EW_REDUCE_NONE}, {EW_F32, EW_REDUCE_ABS_MAX}};

/* Two arrays in one pass: the f16 result and the f32 value it is cast from. */
static const char PAIR_SOURCE[] = "const float r = ew::relu(ew::scale_add(p0, in0, in1));\n"
                                  "out0 = ew::cast<__half>(r);\n"
                                  "out1 = r;";
static const ew_kernel_output_t PAIR_OUTPUTS[2] = {{EW_F16, EW_REDUCE_NONE}, {EW_F32, EW_REDUCE_NONE}};

#define CHECK_EW(call)                                                                                   \
    do {                                                                                                 \
        ew_status_t status_ = (call);                                                                    \
        if (status_ != EW_SUCCESS) {                                                                     \
            fprintf(stderr, "%s failed: %s: %s\n", #call, ew_status_string(status_),                      \
                    ew_get_last_error_message());                                                        \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

#define CHECK_CUDA(call)                                                                                 \
    do {                                                                                                 \
        cudaError_t error_ = (call);                                                                     \
        if (error_ != cudaSuccess) {                                                                     \
            fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorName(error_));                         \
            exit(1);                                                                                     \
        }                                                                                                \
    } while (0)

/* Random floats in ±[0.25, 4): a small xorshift so every run checks the same numbers. */
static float random_value(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    float magnitude = 0.25f + (float)(*state >> 8) * (3.75f / 16777216.0f);
    return (*state & 1u) ? -magnitude : magnitude;
}

/* IEEE binary16 bits -> float, exactly, for printing. */
static float half_to_float(uint16_t bits)
{
    int exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
    float value;
    if (exponent == 0x1F)
        value = mantissa ? NAN : INFINITY;
    else if (exponent == 0)
        value = ldexpf((float)mantissa, -24);
    else
        value = ldexpf((float)(0x400 | mantissa), exponent - 25);
    return (bits & 0x8000) ? -value : value;
}

int main(int argc, char **argv)
{
    printf("libelementwise %u (header %d)\n", ew_get_version(), EW_VERSION);
    const ew_dtype_t in_dtypes[2] = {EW_F32, EW_F32};
    if (argc == 3 && strcmp(argv[1], "--fill") == 0) {
        /* The same arguments as ew_kernel_create's below, so that its lookup finds what this stores. */
        CHECK_EW(ew_kernel_cache_fill(SOURCE, EW_F16, 2, in_dtypes, 1, argv[2]));
        CHECK_EW(ew_kernel_cache_fill_outputs(AMAX_SOURCE, 2, AMAX_OUTPUTS, 2, in_dtypes, 1, argv[2]));
        CHECK_EW(ew_kernel_cache_fill_outputs(PAIR_SOURCE, 2, PAIR_OUTPUTS, 2, in_dtypes, 1, argv[2]));
        printf("the kernels are in the disk cache for %s\n", argv[2]);
        return 0;
    }

    ew_handle_t handle;
    ew_status_t status = ew_handle_create(0, &handle);
    if (status == EW_ERROR_NO_DEVICE) {
        printf("no GPU: %s; nothing to run.\n", ew_get_last_error_message());
        return 0;
    }
    CHECK_EW(status);

    /* Compile the kernel for the handle's GPU, or find it in the caches: f32, f32 -> f16, one parameter.
     * A source that does not compile returns EW_ERROR_INVALID_VALUE with the compiler's first lines in
     * the message; no NVRTC returns EW_ERROR_NOT_SUPPORTED, saying where it looked. */
    ew_kernel_t kernel;
    status = ew_kernel_create(handle, SOURCE, EW_F16, 2, in_dtypes, 1, &kernel);
    if (status == EW_ERROR_NOT_SUPPORTED) {
        printf("no NVRTC, so no user-defined kernels here: %s\n", ew_get_last_error_message());
        CHECK_EW(ew_handle_destroy(handle));
        return 0;
    }
    if (status != EW_SUCCESS) {
        fprintf(stderr, "ew_kernel_create failed: %s: %s\n", ew_status_string(status), ew_get_last_error_message());
        ew_handle_destroy(handle);
        return 1;
    }

    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint16_t *fused = malloc(N * sizeof *fused), *chain = malloc(N * sizeof *chain);
    if (!a || !b || !fused || !chain) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    uint32_t state = 2463534242u;
    for (int i = 0; i < N; ++i) {
        a[i] = random_value(&state);
        b[i] = random_value(&state);
    }
    /* A few values whose bits are easy to get wrong: signed zeros, infinities, NaN, an overflow to
     * f16 infinity and a result in f16's subnormal range. */
    const float special_a[SPECIAL] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 40000.0f, 1e-6f, 1.0f};
    const float special_b[SPECIAL] = {-0.0f, -0.0f, 1.0f, 1.0f, 1.0f, 10000.0f, 0.0f, -1.5f};
    memcpy(a, special_a, sizeof special_a);
    memcpy(b, special_b, sizeof special_b);

    float *d_a, *d_b, *d_scaled, *d_relu;
    uint16_t *d_fused, *d_chain;
    CHECK_CUDA(cudaMalloc((void **)&d_a, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_b, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_scaled, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_relu, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_fused, N * sizeof(uint16_t)));
    CHECK_CUDA(cudaMalloc((void **)&d_chain, N * sizeof(uint16_t)));
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    CHECK_CUDA(cudaMemcpyAsync(d_a, a, N * sizeof(float), cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemcpyAsync(d_b, b, N * sizeof(float), cudaMemcpyHostToDevice, stream));

    /* The kernel: reads a and b once and writes the f16 output once. */
    const double alpha = 1.5;
    const double params[1] = {alpha};
    const void *const inputs[2] = {d_a, d_b};
    CHECK_EW(ew_kernel_launch(kernel, N, d_fused, inputs, params, stream));

    /* The same chain as three catalogue calls, through two f32 temporaries. */
    CHECK_EW(ew_scale_add(handle, EW_F32, alpha, N, d_scaled, d_a, d_b, stream));
    CHECK_EW(ew_unary(handle, EW_OP_RELU, EW_F32, N, d_relu, d_scaled, stream));
    CHECK_EW(ew_cast(handle, EW_F16, EW_F32, N, d_chain, d_relu, stream));

    CHECK_CUDA(cudaMemcpyAsync(fused, d_fused, N * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(chain, d_chain, N * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));

    /* A kernel with a reduction output: the output again, into d_fused, and max |out| into d_amax[0] in
     * the same pass (EW_REDUCE_OVERWRITE: the scalar is first set to 0 on the stream); ew_amax of the
     * catalogue's output into d_amax[1] must give the same bits. */
    ew_kernel_t amax_kernel;
    float *d_amax, amax[2];
    CHECK_EW(ew_kernel_create_outputs(handle, AMAX_SOURCE, 2, AMAX_OUTPUTS, 2, in_dtypes, 1, &amax_kernel));
    CHECK_CUDA(cudaMalloc((void **)&d_amax, 2 * sizeof(float)));
    void *const outputs[2] = {d_fused, d_amax};
    CHECK_EW(ew_kernel_launch_outputs(amax_kernel, N, outputs, EW_REDUCE_OVERWRITE, inputs, params, stream));
    CHECK_EW(ew_amax(handle, EW_F16, N, d_chain, d_amax + 1, EW_REDUCE_OVERWRITE, stream));
    uint16_t *again = malloc(N * sizeof *again);
    if (!again) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    CHECK_CUDA(cudaMemcpyAsync(again, d_fused, N * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(amax, d_amax, sizeof amax, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const int amax_differs =
        memcmp(&amax[0], &amax[1], sizeof(float)) != 0 || memcmp(again, fused, N * sizeof *again) != 0;
    printf("max |out| from the kernel's reduction output: %g; from ew_amax: %g (NaN: an input is NaN)\n", amax[0],
           amax[1]);
    cudaFree(d_amax);

    /* A kernel of two arrays: the f16 result into d_fused and the f32 value before the cast into
     * d_scaled, in one pass; they must equal the chain's cast (d_chain) and relu (d_relu) outputs. */
    ew_kernel_t pair_kernel;
    float *relu = malloc(N * sizeof *relu), *pre_cast = malloc(N * sizeof *pre_cast);
    if (!relu || !pre_cast) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    CHECK_EW(ew_kernel_create_outputs(handle, PAIR_SOURCE, 2, PAIR_OUTPUTS, 2, in_dtypes, 1, &pair_kernel));
    void *const pair[2] = {d_fused, d_scaled};
    CHECK_EW(ew_kernel_launch_outputs(pair_kernel, N, pair, EW_REDUCE_OVERWRITE, inputs, params, stream));
    CHECK_CUDA(cudaMemcpyAsync(again, d_fused, N * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(pre_cast, d_scaled, N * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(relu, d_relu, N * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const int pair_differs =
        memcmp(again, chain, N * sizeof *again) != 0 || memcmp(pre_cast, relu, N * sizeof *relu) != 0;
    printf("two arrays in one pass: %s the cast and relu calls' outputs\n", pair_differs ? "differ from" : "equal");
    CHECK_EW(ew_kernel_destroy(pair_kernel));

    /* The first kernel over a list: the arrays cut into three tensors, each entry's alpha read from
     * device memory (entry_params: one double an entry), in one launch; the same bits as the chain. */
    enum { ENTRIES = 3 };
    const int64_t n[ENTRIES] = {N / 3, N / 3, N - 2 * (N / 3)};
    void *out_entries[ENTRIES];
    const void *a_entries[ENTRIES], *b_entries[ENTRIES];
    for (int e = 0, at = 0; e < ENTRIES; at += (int)n[e], ++e) {
        out_entries[e] = (uint16_t *)d_fused + at;
        a_entries[e] = d_a + at;
        b_entries[e] = d_b + at;
    }
    const double alphas[ENTRIES] = {alpha, alpha, alpha};
    double *d_alphas;
    CHECK_CUDA(cudaMalloc((void **)&d_alphas, sizeof alphas));
    CHECK_CUDA(cudaMemcpyAsync(d_alphas, alphas, sizeof alphas, cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemsetAsync(d_fused, 0xFF, N * sizeof(uint16_t), stream));
    void *const *list_outputs[1] = {out_entries};
    const void *const *list_inputs[2] = {a_entries, b_entries};
    CHECK_EW(ew_kernel_launch_batched(kernel, ENTRIES, n, list_outputs, EW_REDUCE_OVERWRITE, list_inputs,
                                      NULL, d_alphas, stream));
    CHECK_CUDA(cudaMemcpyAsync(again, d_fused, N * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const int list_differs = memcmp(again, chain, N * sizeof *again) != 0;
    printf("the kernel over a list of %d tensors: %s the chain's output\n", ENTRIES, list_differs ? "differs from" : "equals");
    cudaFree(d_alphas);

    /* The kernel with a reduction output over the same list: each entry's max |out| into a scalar of its
     * own (a per-tensor amax), as ew_amax gives it of that entry's part of the chain's output. */
    float *d_entry_amax, entry_amax[2 * ENTRIES];
    CHECK_CUDA(cudaMalloc((void **)&d_entry_amax, sizeof entry_amax));
    void *amax_entries[ENTRIES];
    for (int e = 0; e < ENTRIES; ++e)
        amax_entries[e] = d_entry_amax + e;
    void *const *amax_outputs[2] = {out_entries, amax_entries};
    CHECK_EW(ew_kernel_launch_batched(amax_kernel, ENTRIES, n, amax_outputs, EW_REDUCE_OVERWRITE, list_inputs,
                                      params, NULL, stream));
    for (int e = 0, at = 0; e < ENTRIES; at += (int)n[e], ++e)
        CHECK_EW(ew_amax(handle, EW_F16, n[e], (uint16_t *)d_chain + at, d_entry_amax + ENTRIES + e,
                         EW_REDUCE_OVERWRITE, stream));
    CHECK_CUDA(cudaMemcpyAsync(entry_amax, d_entry_amax, sizeof entry_amax, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const int list_amax_differs = memcmp(entry_amax, entry_amax + ENTRIES, ENTRIES * sizeof(float)) != 0;
    printf("each tensor's max |out| over the list: %s ew_amax's\n", list_amax_differs ? "differs from" : "equals");
    CHECK_EW(ew_kernel_destroy(amax_kernel));
    cudaFree(d_entry_amax);
    free(again), free(relu), free(pre_cast);

    /* Every element, bit for bit. */
    long wrong = 0;
    for (int i = 0; i < N; ++i) {
        if (fused[i] != chain[i] && wrong++ < 5)
            fprintf(stderr, "mismatch at %d: a=%g b=%g kernel=0x%04x catalogue=0x%04x\n", i, a[i], b[i], fused[i],
                    chain[i]);
        if (i < SPECIAL || i == N - 1)
            printf("[%7d] a=%+g b=%+g  f16(relu(%.1f*a+b))=%+g (0x%04x)\n", i, a[i], b[i], alpha,
                   half_to_float(fused[i]), fused[i]);
    }

    CHECK_CUDA(cudaStreamDestroy(stream));
    cudaFree(d_a), cudaFree(d_b), cudaFree(d_scaled), cudaFree(d_relu), cudaFree(d_fused), cudaFree(d_chain);
    free(a), free(b), free(fused), free(chain);
    CHECK_EW(ew_kernel_destroy(kernel)); /* before its handle */
    CHECK_EW(ew_handle_destroy(handle));

    /* Where the kernel came from: compiled by NVRTC, or loaded from the disk cache (a second run). */
    uint64_t compiles = 0, disk_hits = 0;
    CHECK_EW(ew_kernel_cache_get_count(EW_KERNEL_CACHE_COMPILES, &compiles));
    CHECK_EW(ew_kernel_cache_get_count(EW_KERNEL_CACHE_DISK_HITS, &disk_hits));
    printf("kernel programs: %llu compiled, %llu loaded from the disk cache\n", (unsigned long long)compiles,
           (unsigned long long)disk_hits);

    if (wrong) {
        printf("FAILED: %ld of %d elements of the kernel differ from the catalogue calls\n", wrong, N);
        return 1;
    }
    if (amax_differs) {
        printf("FAILED: the kernel with a reduction output differs from the kernel or from ew_amax\n");
        return 1;
    }
    if (pair_differs) {
        printf("FAILED: the kernel of two arrays differs from the relu and cast calls\n");
        return 1;
    }
    if (list_differs) {
        printf("FAILED: the kernel over a list differs from the catalogue calls\n");
        return 1;
    }
    if (list_amax_differs) {
        printf("FAILED: the per-tensor reduction over a list differs from ew_amax\n");
        return 1;
    }
    printf("all %d elements of the kernel match scale_add, relu and cast f32->f16 bit for bit\n", N);
    return 0;
}
