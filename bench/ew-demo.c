/* SPDX-License-Identifier: Apache-2.0 */
/* ew-demo: one add of 2^26 random f32 on the GPU through libelementwise. Prints the time per call
 * (CUDA events, after a warm-up) and GB/s counting bytes read + written, and checks a few elements on
 * the host. With no GPU it says so and exits 0. The full benchmark is ew-bench-catalogue. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "elementwise.h"

enum { LOG2_N = 26, CHUNK = 1 << 20, WARMUP_CALLS = 3, TIMED_CALLS = 20, CHECKS = 16 };

static int cuda_failed(cudaError_t error, const char *what)
{
    if (error == cudaSuccess)
        return 0;
    fprintf(stderr, "ew-demo: %s failed: %s (%s)\n", what, cudaGetErrorName(error),
            cudaGetErrorString(error));
    return 1;
}

static int ew_failed(ew_status_t status, const char *what)
{
    if (status == EW_SUCCESS)
        return 0;
    fprintf(stderr, "ew-demo: %s failed: %s: %s\n", what, ew_status_string(status),
            ew_get_last_error_message());
    return 1;
}

/* Why there is no GPU, in words: cudart's text for a missing driver talks of versions. */
static const char *no_gpu_reason(cudaError_t error)
{
    if (error == cudaSuccess)
        return "the driver reports 0 devices";
    if (error == cudaErrorInsufficientDriver)
        return "cudaErrorInsufficientDriver: no NVIDIA driver, or one older than the CUDA runtime";
    return cudaGetErrorName(error);
}

static uint64_t next_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* A random float in +-[1, 100): never zero. */
static float random_nonzero(uint64_t *state)
{
    uint64_t bits = next_random(state);
    float magnitude = 1.0f + 99.0f * (float)(bits >> 40) * 0x1p-24f;
    return bits & 1 ? -magnitude : magnitude;
}

int main(void)
{
    const int64_t n = (int64_t)1 << LOG2_N;
    int devices = 0;
    cudaError_t error = cudaGetDeviceCount(&devices);
    if (error != cudaSuccess || devices == 0) {
        printf("no CUDA GPU found (%s): nothing to run\n", no_gpu_reason(error));
        return 0;
    }
    ew_handle_t handle;
    ew_status_t status = ew_handle_create(0, &handle);
    if (status == EW_ERROR_NO_DEVICE) {
        printf("no CUDA GPU found (%s): nothing to run\n", ew_get_last_error_message());
        return 0;
    }
    if (ew_failed(status, "ew_handle_create"))
        return 1;

    /* Elements checked on the host: both ends (head and tail paths), the middle, and a random spread. */
    int64_t check_index[CHECKS] = {0, 1, 2, n / 2, n - 3, n - 2, n - 1};
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (int i = 7; i < CHECKS; ++i)
        check_index[i] = (int64_t)(next_random(&state) % (uint64_t)n);
    float check_a[CHECKS], check_b[CHECKS], got[CHECKS];

    float *out = NULL, *a = NULL, *b = NULL, *chunk = malloc(CHUNK * sizeof *chunk);
    cudaStream_t stream = NULL;
    cudaEvent_t start = NULL, stop = NULL;
    int failed = chunk == NULL || cuda_failed(cudaMalloc((void **)&out, n * sizeof *out), "cudaMalloc") ||
                 cuda_failed(cudaMalloc((void **)&a, n * sizeof *a), "cudaMalloc") ||
                 cuda_failed(cudaMalloc((void **)&b, n * sizeof *b), "cudaMalloc") ||
                 cuda_failed(cudaStreamCreate(&stream), "cudaStreamCreate") ||
                 cuda_failed(cudaEventCreate(&start), "cudaEventCreate") ||
                 cuda_failed(cudaEventCreate(&stop), "cudaEventCreate");
    for (int input = 0; input < 2 && !failed; ++input) {
        float *device = input == 0 ? a : b, *check = input == 0 ? check_a : check_b;
        for (int64_t first = 0; first < n && !failed; first += CHUNK) {
            for (int i = 0; i < CHUNK; ++i)
                chunk[i] = random_nonzero(&state);
            for (int i = 0; i < CHECKS; ++i)
                if (check_index[i] >= first && check_index[i] < first + CHUNK)
                    check[i] = chunk[check_index[i] - first];
            failed =
                cuda_failed(cudaMemcpy(device + first, chunk, CHUNK * sizeof *chunk, cudaMemcpyHostToDevice),
                            "cudaMemcpy");
        }
    }
    /* Poison the output (all-ones bits: a NaN no add of these inputs gives). */
    failed = failed || cuda_failed(cudaMemset(out, 0xFF, n * sizeof *out), "cudaMemset");

    for (int i = 0; i < WARMUP_CALLS && !failed; ++i)
        failed = ew_failed(ew_binary(handle, EW_OP_ADD, EW_F32, n, out, a, b, stream), "ew_binary");
    failed = failed || cuda_failed(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    /* 768 MiB per call against a 50 MiB L2: the same buffers each call do not let L2 help. */
    failed = failed || cuda_failed(cudaEventRecord(start, stream), "cudaEventRecord");
    for (int i = 0; i < TIMED_CALLS && !failed; ++i)
        failed = ew_failed(ew_binary(handle, EW_OP_ADD, EW_F32, n, out, a, b, stream), "ew_binary");
    float ms = 0;
    failed = failed || cuda_failed(cudaEventRecord(stop, stream), "cudaEventRecord") ||
             cuda_failed(cudaEventSynchronize(stop), "cudaEventSynchronize") ||
             cuda_failed(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    for (int i = 0; i < CHECKS && !failed; ++i)
        failed = cuda_failed(cudaMemcpy(&got[i], out + check_index[i], sizeof got[i], cudaMemcpyDeviceToHost),
                             "cudaMemcpy");

    int mismatches = 0;
    if (!failed) {
        struct cudaDeviceProp prop;
        const double bytes = 3.0 * sizeof(float) * (double)n, us = ms * 1000.0 / TIMED_CALLS;
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
            printf("libelementwise %u on %s (%d SMs)\n", ew_get_version(), prop.name,
                   prop.multiProcessorCount);
        printf("add f32, n = 2^%d: %.1f us per call, %.1f GB/s (%.0f bytes read + written; mean of %d calls "
               "after "
               "a warm-up)\n",
               LOG2_N, us, bytes / us / 1e3, bytes, TIMED_CALLS);
        for (int i = 0; i < CHECKS; ++i) {
            float want = check_a[i] + check_b[i];
            if (memcmp(&want, &got[i], sizeof want) != 0) {
                fprintf(stderr, "ew-demo: out[%lld] = %a, expected %a + %a = %a\n", (long long)check_index[i],
                        got[i], check_a[i], check_b[i], want);
                mismatches++;
            }
        }
        printf("checked %d elements on the host: %s\n", CHECKS, mismatches ? "MISMATCH" : "all equal");
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
    cudaFree(out);
    cudaFree(a);
    cudaFree(b);
    free(chunk);
    ew_handle_destroy(handle);
    return failed || mismatches ? 1 : 0;
}
