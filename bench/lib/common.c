/* SPDX-License-Identifier: Apache-2.0 */
/* The benches' names, errors, options, device and handles (common.h). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

enum { OP_END = EW_OP_SCALE_ADD + 1 };

static const char *const column_names[EWB_COLUMNS] = {"back-to-back", "isolated"};
static const char *const op_names[OP_END] = {"invalid", "add", "mul", "relu", "cast", "scale_add"};

const char *ewb_column_name(int column)
{
    return column >= 0 && column < EWB_COLUMNS ? column_names[column] : "invalid";
}

int ewb_timed_columns(unsigned mask, int columns[EWB_COLUMNS])
{
    int count = 0;
    for (int k = 0; k < EWB_COLUMNS; ++k)
        if (mask >> k & 1)
            columns[count++] = k;
    return count;
}

const char *ewb_op_name(ew_op_t op) { return (int)op > 0 && (int)op < OP_END ? op_names[op] : "invalid"; }

static int named(const char *want, const char *name, size_t length)
{
    return strlen(want) == length && strncmp(want, name, length) == 0;
}

ew_op_t ewb_op_from_name(const char *name, size_t length)
{
    for (int op = 1; op < OP_END; ++op)
        if (named(op_names[op], name, length))
            return (ew_op_t)op;
    return (ew_op_t)0;
}

/* The library names every dtype from 1 up, without gaps: the first "invalid" ends them. */
ew_dtype_t ewb_dtype_from_name(const char *name, size_t length)
{
    for (int d = 1; ew_dtype_size((ew_dtype_t)d) != 0; ++d)
        if (named(ew_dtype_name((ew_dtype_t)d), name, length))
            return (ew_dtype_t)d;
    return (ew_dtype_t)0;
}

int ewb_arity(ew_op_t op) { return op == EW_OP_RELU || op == EW_OP_CAST ? 1 : 2; }

double ewb_alpha(ew_dtype_t dtype)
{
    switch (dtype) {
    case EW_BOOL: return 1.0;
    case EW_I8:
    case EW_U8:
    case EW_I16:
    case EW_I32:
    case EW_I64: return 3.0;
    default: return 0.75;
    }
}

int ewb_cuda_ok(cudaError_t error, const char *what)
{
    if (error == cudaSuccess)
        return 1;
    fprintf(stderr, "%s failed: %s (%s)\n", what, cudaGetErrorName(error), cudaGetErrorString(error));
    return 0;
}

int ewb_ew_ok(ew_status_t status, const char *what)
{
    if (status == EW_SUCCESS)
        return 1;
    fprintf(stderr, "%s: %s: %s\n", what, ew_status_string(status), ew_get_last_error_message());
    return 0;
}

double ewb_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int compare_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double ewb_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_double);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

void ewb_log2_text(int64_t n, char *text, size_t size)
{
    int k = 0;
    while (((int64_t)1 << k) < n)
        ++k;
    if (((int64_t)1 << k) == n)
        snprintf(text, size, "2^%d", k);
    else
        snprintf(text, size, "%lld", (long long)n);
}

size_t ewb_round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

int ewb_parse_timing_option(const char *a, const char *v, int *batches, double *batch_ms, int *device,
                            unsigned *timing, int *no_check)
{
    static const char *const valued[] = {"--batches", "--batch-ms", "--device", "--timing"};
    char *end = NULL;
    if (strcmp(a, "--no-check") == 0) {
        *no_check = 1;
        return 1;
    }
    int known = 0;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; ++k)
        known |= strcmp(a, valued[k]) == 0;
    if (!known)
        return 0;
    if (v == NULL) {
        fprintf(stderr, "option '%s' needs a value\n", a);
        return -1;
    }
    if (strcmp(a, "--batches") == 0) {
        long b = strtol(v, &end, 10);
        if (end == v || *end || b < 5 || b > 1000)
            return fprintf(stderr, "--batches takes 5-1000\n"), -1;
        *batches = (int)b;
    } else if (strcmp(a, "--batch-ms") == 0) {
        *batch_ms = strtod(v, &end);
        if (end == v || *end || !(*batch_ms > 0 && *batch_ms <= 1000))
            return fprintf(stderr, "--batch-ms takes (0, 1000]\n"), -1;
    } else if (strcmp(a, "--device") == 0) {
        long d = strtol(v, &end, 10);
        if (end == v || *end || d < 0 || d > 1023)
            return fprintf(stderr, "--device takes 0-1023\n"), -1;
        *device = (int)d;
    } else {
        *timing = 0;
        for (const char *p = v; *p;) {
            size_t length = strcspn(p, ",");
            int found = 0;
            for (int k = 0; k < EWB_COLUMNS; ++k)
                if (named(column_names[k], p, length))
                    *timing |= 1u << k, found = 1;
            if (!found)
                return fprintf(stderr, "--timing takes back-to-back,isolated\n"), -1;
            p += length + (p[length] == ',');
        }
        if (*timing == 0)
            return fprintf(stderr, "--timing takes back-to-back,isolated\n"), -1;
    }
    return 2;
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

int ewb_use_device(int device)
{
    int devices = 0;
    cudaError_t error = cudaGetDeviceCount(&devices);
    if (error != cudaSuccess || devices == 0) {
        printf("no CUDA GPU found (%s): nothing to run\n", no_gpu_reason(error));
        return 0;
    }
    if (device >= devices) {
        fprintf(stderr, "--device %d: only %d CUDA devices\n", device, devices);
        return -2;
    }
    if (!ewb_cuda_ok(cudaSetDevice(device), "cudaSetDevice"))
        return -1;
    struct cudaDeviceProp prop;
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess)
        printf("# device %d: %s, %d SMs, %.0f MiB L2, %.1f GiB, cc %d.%d; driver API %d, runtime %d\n",
               device, prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1048576.0,
               (double)prop.totalGlobalMem / (1 << 30), prop.major, prop.minor, driver, runtime);
    return 1;
}

int ewb_create_handles(int device, int isolated, const char *bench, ew_handle_t handles[EWB_COLUMNS])
{
    handles[EWB_BACK_TO_BACK] = handles[EWB_ISOLATED] = NULL;
    const char *setting = getenv("EW_DEPENDENT_LAUNCH");
    char *saved = setting ? strdup(setting) : NULL;
    int ok =
        ewb_ew_ok(ew_handle_create(device, &handles[EWB_BACK_TO_BACK]), "ew_handle_create (back-to-back)");
    if (ok && isolated)
        ok = setenv("EW_DEPENDENT_LAUNCH", "0", 1) == 0 &&
             ewb_ew_ok(ew_handle_create(device, &handles[EWB_ISOLATED]),
                       "ew_handle_create (isolated, EW_DEPENDENT_LAUNCH=0)");
    if (saved ? setenv("EW_DEPENDENT_LAUNCH", saved, 1) : unsetenv("EW_DEPENDENT_LAUNCH"))
        ok = 0;
    printf("# %s: back-to-back column: a handle with EW_DEPENDENT_LAUNCH%s%s%s%s\n", bench,
           saved ? "=" : " unset", saved ? saved : "", saved ? "" : " (dependent launches on cc >= 9.0)",
           isolated ? "; isolated column: a handle with EW_DEPENDENT_LAUNCH=0" : "");
    free(saved);
    return ok ? 0 : -1;
}
