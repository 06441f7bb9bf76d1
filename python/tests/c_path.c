/* SPDX-License-Identifier: Apache-2.0 */
/* The library's C path, for the Python tests to compare the binding against: the same call made
 * from C on the same input bytes. One job per line on stdin:
 *     OP OUT_DTYPE IN_DTYPE ALPHA N IN1_FILE IN2_FILE|- OUT_FILE
 * OP and the dtypes are the enums' numeric values, ALPHA a C double (hex floats allowed). Each input
 * file holds N elements; OUT_FILE receives N elements of OUT_DTYPE. Prints "ok" per job; the first
 * failure prints the library's status and message and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "elementwise.h"

static void die(const char *what, const char *detail)
{
    printf("error: %s: %s\n", what, detail);
    exit(1);
}

static void check_cuda(cudaError_t error, const char *call)
{
    if (error != cudaSuccess)
        die(call, cudaGetErrorName(error));
}

static void *read_to_device(const char *path, size_t bytes)
{
    void *host = malloc(bytes ? bytes : 1), *device = NULL;
    FILE *file = fopen(path, "rb");
    if (host == NULL || file == NULL || fread(host, 1, bytes, file) != bytes)
        die("cannot read", path);
    fclose(file);
    check_cuda(cudaMalloc(&device, bytes ? bytes : 1), "cudaMalloc");
    check_cuda(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    free(host);
    return device;
}

int main(void)
{
    ew_handle_t handle;
    if (ew_handle_create(0, &handle) != EW_SUCCESS)
        die("ew_handle_create", ew_get_last_error_message());
    cudaStream_t stream;
    check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");

    char line[4096], in1_path[1024], in2_path[1024], out_path[1024];
    int op, out_dtype, in_dtype;
    double alpha;
    long long n;
    while (fgets(line, sizeof line, stdin) != NULL) {
        if (sscanf(line, "%d %d %d %lf %lld %1023s %1023s %1023s", &op, &out_dtype, &in_dtype, &alpha, &n,
                   in1_path, in2_path, out_path) != 8)
            die("bad job line", line);
        size_t in_bytes = (size_t)n * ew_dtype_size((ew_dtype_t)in_dtype);
        size_t out_bytes = (size_t)n * ew_dtype_size((ew_dtype_t)out_dtype);
        void *in1 = read_to_device(in1_path, in_bytes);
        void *in2 = strcmp(in2_path, "-") != 0 ? read_to_device(in2_path, in_bytes) : NULL;
        void *out = NULL;
        check_cuda(cudaMalloc(&out, out_bytes ? out_bytes : 1), "cudaMalloc");
        check_cuda(cudaMemset(out, 0xA5, out_bytes), "cudaMemset"); /* poison */

        ew_status_t status;
        switch (op) {
        case EW_OP_CAST:
            status = ew_cast(handle, (ew_dtype_t)out_dtype, (ew_dtype_t)in_dtype, n, out, in1, stream);
            break;
        case EW_OP_SCALE_ADD:
            status = ew_scale_add(handle, (ew_dtype_t)out_dtype, alpha, n, out, in1, in2, stream);
            break;
        case EW_OP_RELU:
            status = ew_unary(handle, (ew_op_t)op, (ew_dtype_t)out_dtype, n, out, in1, stream);
            break;
        default:
            status = ew_binary(handle, (ew_op_t)op, (ew_dtype_t)out_dtype, n, out, in1, in2, stream);
            break;
        }
        if (status != EW_SUCCESS)
            die(ew_status_string(status), ew_get_last_error_message());
        check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

        void *host = malloc(out_bytes ? out_bytes : 1);
        check_cuda(cudaMemcpy(host, out, out_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
        FILE *file = fopen(out_path, "wb");
        if (host == NULL || file == NULL || fwrite(host, 1, out_bytes, file) != out_bytes)
            die("cannot write", out_path);
        if (fclose(file) != 0)
            die("cannot write", out_path);
        free(host);
        cudaFree(in1), cudaFree(in2), cudaFree(out);
        printf("ok\n");
    }
    cudaStreamDestroy(stream);
    ew_handle_destroy(handle);
    return 0;
}
