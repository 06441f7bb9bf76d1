/* SPDX-License-Identifier: Apache-2.0 */
/* libelementwise from C: add, relu, scale-add and a cast on the GPU, checked on the host.
 *
 * Build: make            (flags from `pkg-config --cflags --libs elementwise`, see Makefile)
 * Run:   ./elementwise_example
 * Without a GPU it says so and exits 0. The CUDA runtime is only needed here for cudaMalloc and
 * the copies; libelementwise itself carries its own. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <elementwise.h>

/* An odd size, so the last elements fall outside whole vector packs. */
enum { N = 1000003, SHOWN = 3 };

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

/* Random non-zero floats in ±[0.25, 4): a small xorshift so every run checks the same numbers. */
static float random_value(uint32_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    float magnitude = 0.25f + (float)(*state >> 8) * (3.75f / 16777216.0f);
    return (*state & 1u) ? -magnitude : magnitude;
}

/* IEEE binary16 bits -> float, exactly (the values here are normal numbers). */
static float half_to_float(uint16_t bits)
{
    int exponent = (bits >> 10) & 0x1F;
    float value = ldexpf((float)(0x400 | (bits & 0x3FF)), exponent - 25);
    return (bits & 0x8000) ? -value : value;
}

/* Rounding to binary16 moves a value in [0.25, 4) by at most half an ulp: 2^-11 of 2^floor(log2|x|). */
static int half_is_nearest(float x, uint16_t bits)
{
    int exponent;
    frexpf(x, &exponent);
    return fabsf(half_to_float(bits) - x) <= ldexpf(1.0f, exponent - 1 - 11);
}

int main(void)
{
    printf("libelementwise %u (header %d)\n", ew_get_version(), EW_VERSION);

    ew_handle_t handle;
    ew_status_t status = ew_handle_create(0, &handle);
    if (status == EW_ERROR_NO_DEVICE) {
        printf("no GPU: %s; nothing to run.\n", ew_get_last_error_message());
        return 0;
    }
    CHECK_EW(status);

    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    float *sum = malloc(N * sizeof *sum), *relu = malloc(N * sizeof *relu), *axpb = malloc(N * sizeof *axpb);
    uint16_t *half = malloc(N * sizeof *half);
    if (!a || !b || !sum || !relu || !axpb || !half) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    uint32_t state = 2463534242u;
    for (int i = 0; i < N; ++i) {
        a[i] = random_value(&state);
        b[i] = random_value(&state);
    }

    float *d_a, *d_b, *d_sum, *d_relu, *d_axpb;
    uint16_t *d_half;
    CHECK_CUDA(cudaMalloc((void **)&d_a, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_b, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_sum, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_relu, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_axpb, N * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_half, N * sizeof(uint16_t)));
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    CHECK_CUDA(cudaMemcpyAsync(d_a, a, N * sizeof(float), cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaMemcpyAsync(d_b, b, N * sizeof(float), cudaMemcpyHostToDevice, stream));

    /* Four calls queued on one stream; none of them waits. */
    const double alpha = 0.5;
    CHECK_EW(ew_binary(handle, EW_OP_ADD, EW_F32, N, d_sum, d_a, d_b, stream));
    CHECK_EW(ew_unary(handle, EW_OP_RELU, EW_F32, N, d_relu, d_a, stream));
    CHECK_EW(ew_scale_add(handle, EW_F32, alpha, N, d_axpb, d_a, d_b, stream));
    CHECK_EW(ew_cast(handle, EW_F16, EW_F32, N, d_half, d_a, stream));

    CHECK_CUDA(cudaMemcpyAsync(sum, d_sum, N * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(relu, d_relu, N * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(axpb, d_axpb, N * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(half, d_half, N * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));

    /* Every element against the host: add, relu and the fused scale-add are exact IEEE operations,
     * so the bits must match; the f16 cast must be the nearest binary16 value. */
    long wrong = 0;
    for (int i = 0; i < N; ++i) {
        float want_sum = a[i] + b[i], want_relu = a[i] > 0.0f ? a[i] : 0.0f;
        float want_axpb = fmaf((float)alpha, a[i], b[i]);
        int ok = memcmp(&sum[i], &want_sum, sizeof(float)) == 0 &&
                 memcmp(&relu[i], &want_relu, sizeof(float)) == 0 &&
                 memcmp(&axpb[i], &want_axpb, sizeof(float)) == 0 && half_is_nearest(a[i], half[i]);
        if (!ok && wrong++ < 5)
            fprintf(stderr, "mismatch at %d: a=%g b=%g add=%g relu=%g scale_add=%g f16=%g\n", i, a[i], b[i],
                    sum[i], relu[i], axpb[i], half_to_float(half[i]));
        if (i < SHOWN || i == N - 1)
            printf("[%7d] a=%+.6f b=%+.6f  add=%+.6f relu=%.6f 0.5*a+b=%+.6f f16(a)=%+.6f (0x%04x)\n", i,
                   a[i], b[i], sum[i], relu[i], axpb[i], half_to_float(half[i]), half[i]);
    }

    CHECK_CUDA(cudaStreamDestroy(stream));
    cudaFree(d_a), cudaFree(d_b), cudaFree(d_sum), cudaFree(d_relu), cudaFree(d_axpb), cudaFree(d_half);
    free(a), free(b), free(sum), free(relu), free(axpb), free(half);
    CHECK_EW(ew_handle_destroy(handle));

    if (wrong) {
        printf("FAILED: %ld of %d elements differ from the host\n", wrong, N);
        return 1;
    }
    printf("all %d elements of add, relu, scale_add and cast f32->f16 match the host\n", N);
    return 0;
}
