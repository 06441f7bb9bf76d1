/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the GPU tests: skip only where there is no GPU, CUDA and ew_* checks that fail the CMocka
 * test at the caller's file:line, a runner whose exit status shows skips to ctest, device buffers with
 * poisoned guard zones, random inputs full of special values, and bitwise comparison that prints the
 * first mismatches.
 *
 * Every device buffer is one cudaMalloc laid out as
 *     [64-byte front guard][region: capacity * size + 16 bytes][64-byte back guard]
 * A call's pointer is region + k elements (k * size < 16), so the allocation's 256-byte alignment
 * makes the pointer's alignment exactly that of k, and the 16 spare bytes let every k fit.
 * The host keeps an image of what the whole allocation must hold; anything the library writes
 * outside its output range shows up as a difference from the image.
 */
#ifndef EW_TESTS_GPU_UTIL_H
#define EW_TESTS_GPU_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "elementwise.h"

enum {
    GU_GUARD_BYTES = 64,
    GU_MAX_OFFSET_BYTES = 16, /* element offsets k with k * size < 16 */
    GU_POISON = 0xA5,         /* outputs and guards start as this byte, never as zeros */
    GU_POISON_ALT = 0x5A      /* a second poison, for elements whose expected value is the first */
};

/* ---- when a GPU test may skip ----
 * Header-only, so that test_reliability_gpu, which does not link gpu_util.c, keeps the same rule.
 * A test skips (prints "SKIP: <reason>", exits 77, which ctest counts as skipped) only where the machine
 * really has no GPU: cudaGetDeviceCount finds 0 devices or answers cudaErrorNoDevice, or there is no
 * usable driver (cudaErrorInsufficientDriver, or cudaErrorStubLibrary: only the toolkit's stub
 * libcuda). Any other CUDA error means a GPU or driver that is there but broken: a failure (exit 1).
 * EW_REQUIRE_GPU set to anything but "" or "0" (the GPU script sets it) makes a missing GPU a failure
 * too, so that on the GPU machine nothing passes as "skipped". */

static inline int gu_gpu_required(void)
{
    const char *require = getenv("EW_REQUIRE_GPU");
    return require != NULL && strcmp(require, "") != 0 && strcmp(require, "0") != 0;
}

/* The errors of cudaGetDeviceCount that mean "no GPU here" rather than "a GPU that fails". */
static inline int gu_error_means_no_gpu(cudaError_t error)
{
    return error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
           error == cudaErrorStubLibrary;
}

/* Whether ew_kernel_create's failure means "no NVRTC on this machine" (a skip under gu_skip_allowed's
 * rule below) rather than a failing compile. */
static inline int gu_status_means_no_nvrtc(ew_status_t status)
{
    return status == EW_ERROR_NOT_SUPPORTED && strstr(ew_get_last_error_message(), "NVRTC") != NULL;
}

/* The number of CUDA devices (at least 1); else never returns: exits 77 with "SKIP: <why>" where the
 * rule above allows a skip, 1 with "FAIL: <why>" otherwise. `program` prefixes the line. */
static inline int gu_device_count_or_exit(const char *program)
{
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    const char *name = cudaGetErrorName(error), *text = cudaGetErrorString(error);
    if (error == cudaSuccess && count > 0)
        return count;
    int broken = error != cudaSuccess && !gu_error_means_no_gpu(error);
    if (broken)
        printf("FAIL: %s: cudaGetDeviceCount returned %s (%s): a GPU or driver that is present but does not "
               "work is a failure, not a skip\n",
               program, name, text);
    else if (gu_gpu_required())
        printf("FAIL: %s: no GPU (cudaGetDeviceCount: %s, %d devices) and EW_REQUIRE_GPU is set\n", program,
               error != cudaSuccess ? name : "cudaSuccess", count);
    else
        printf("SKIP: %s: no GPU on this machine (cudaGetDeviceCount: %s, %d devices)\n", program,
               error != cudaSuccess ? name : "cudaSuccess", count);
    fflush(stdout);
    exit(broken || gu_gpu_required() ? 1 : 77);
}

/* ---- when a test on a machine with a GPU may skip ----
 * EW_REQUIRE_GPU's allow-list: GU_SKIP_ONE_GPU, a test that needs two GPUs on a machine with one
 * (test_stream_graph_gpu's test_device_mismatch, test_reliability_gpu's two_gpus), which the GPU
 * machine may be without anything being wrong. Every other skip (GU_SKIP: device memory short, no
 * NVRTC, a CUDA tool in the process) fails with EW_REQUIRE_GPU set. Prints "SKIP: <reason>" (with
 * "(allowed with EW_REQUIRE_GPU)" for the allow-list) and returns 1 where the skip may go ahead, else
 * prints "FAIL: <reason>: ..." and returns 0: the caller then fails the test. */
typedef enum { GU_SKIP, GU_SKIP_ONE_GPU } gu_skip_kind_t;

static inline int gu_skip_allowed(gu_skip_kind_t kind, const char *reason)
{
    int allowed = kind == GU_SKIP_ONE_GPU || !gu_gpu_required();
    if (allowed)
        printf("SKIP: %s%s\n", reason,
               kind == GU_SKIP_ONE_GPU ? " (allowed with EW_REQUIRE_GPU: a two-GPU test on a one-GPU machine)"
                                       : "");
    else
        printf("FAIL: %s: a skip, and EW_REQUIRE_GPU is set (only a two-GPU test on a one-GPU machine may "
               "skip)\n",
               reason);
    fflush(stdout);
    return allowed;
}

/* main's exit status after `ran` tests, `failed` of them failed and `skipped` skipped: 1 if any
 * failed, else 77 (ctest: skipped) if any skipped, saying so, so that a partly skipped binary never
 * shows as passed, else 0. Header-only like the rule above: gu_run_tests's, and test_reliability_gpu's
 * own runner's. */
static inline int gu_exit_status(const char *group, int failed, int skipped, size_t ran)
{
    if (failed)
        return 1;
    if (skipped > 0) {
        printf("%s: %d of %zu tests skipped, the rest passed: exit 77 (skipped)\n", group, skipped, ran);
        return 77;
    }
    return 0;
}

/* ---- setup ---- */

/* gu_device_count_or_exit(program), then an ew handle for device 0, which must succeed: on a machine
 * with a GPU any ew_handle_create error (EW_ERROR_NO_DEVICE included) is a failure, exit 1. Returns the
 * number of CUDA devices. */
int gu_require_gpu(const char *program);

/* The handle for device 0 made by gu_require_gpu. */
ew_handle_t gu_handle(void);

/* EW_TEST_SCALE=small (about 10x less work, for compute-sanitizer) -> 1; unset or "full" -> 0.
 * Any other value prints an error and exits 1 rather than silently running something else. */
int gu_small_scale(void);

/* Base seed of every random input: EW_TEST_SEED (any strtoull base-0 number) or a fixed default. */
uint64_t gu_seed(void);

/* ---- running the tests ---- */

/* Ends the running CMocka test as skipped where gu_skip_allowed(kind, <reason>) allows it, else fails
 * it. Never for "no GPU" (gu_require_gpu has seen one). */
void gu_skip(gu_skip_kind_t kind, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;

/* Runs the tests and returns main's exit status. With no argument every test in `tests` runs but the
 * last `named_only` (too big for the default run, or not for this machine: each has a ctest entry of
 * its own that names it); with one, only the test of that name, any of the `count` (ctest gives a
 * test that may skip an entry of its own, so that its skip shows). Exit status: 1 if any test failed,
 * else 77 (ctest: skipped) if any test skipped, so that a partly skipped binary never shows as passed,
 * else 0; 2 on a bad argument. */
int gu_run_tests(const char *group, const struct CMUnitTest *tests, size_t count, size_t named_only, int argc,
                 char **argv);

/* ---- checks: fail the running CMocka test at the caller's file:line ---- */

#define GU_CUDA(call) gu_check_cuda((call), #call, __FILE__, __LINE__)
#define GU_EW(call) gu_check_ew((call), EW_SUCCESS, #call, __FILE__, __LINE__)
#define GU_EW_EXPECT(status, call) gu_check_ew((call), (status), #call, __FILE__, __LINE__)
void gu_check_cuda(cudaError_t error, const char *call, const char *file, int line);
void gu_check_ew(ew_status_t got, ew_status_t expected, const char *call, const char *file, int line);

/* printf-style failure at the caller's location. */
#define GU_FAIL(...) gu_fail_at(__FILE__, __LINE__, __VA_ARGS__)
void gu_fail_at(const char *file, int line, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4), noreturn))
#endif
    ;

/* ---- resources released by gu_teardown (also after a failed test) ---- */

void *gu_host_alloc(size_t bytes);   /* malloc, tracked */
void *gu_pinned_alloc(size_t bytes); /* cudaMallocHost, tracked */
cudaStream_t gu_stream_new(unsigned flags);
void gu_track_graph(cudaGraph_t graph);
void gu_track_graph_exec(cudaGraphExec_t exec);
/* Per-test CMocka teardown: ends any capture left open, destroys tracked graphs and streams, frees all
 * tracked memory, and checks the context holds no error. */
int gu_teardown(void **state);

/* ---- guarded device buffers ---- */

typedef struct {
    ew_dtype_t dtype;
    size_t elem_size;
    int64_t capacity;     /* elements a call may use at any offset */
    size_t bytes;         /* of the allocation */
    unsigned char *base;  /* device allocation */
    unsigned char *image; /* host: what the allocation must hold */
} gu_buffer_t;

/* A buffer for up to `capacity` elements of dtype at any offset; device and image all GU_POISON. */
gu_buffer_t *gu_buffer_new(ew_dtype_t dtype, int64_t capacity);
/* Frees it now rather than at teardown (large sweeps). */
void gu_buffer_free(gu_buffer_t *buffer);

/* Elements the region holds (capacity plus the spare 16 bytes). */
int64_t gu_buffer_region_elems(const gu_buffer_t *buffer);
/* Element offsets usable on this buffer: 16 / size. */
int gu_offset_count(ew_dtype_t dtype);

/* Device pointer to element `offset` of the region; image pointer likewise. */
void *gu_at(const gu_buffer_t *buffer, int offset);
unsigned char *gu_image_at(const gu_buffer_t *buffer, int offset);

/* Image := poison guards + the first `count` elements of host at region offset 0 (rest of the region
 * poison); uploaded whole and waited for. */
void gu_buffer_load(gu_buffer_t *buffer, const void *host, int64_t count);
/* Image and device := `byte` everywhere; waited for. */
void gu_buffer_poison(gu_buffer_t *buffer, uint8_t byte);
/* The same on `stream`, not waited for (the image is updated at once). */
void gu_buffer_poison_async(gu_buffer_t *buffer, uint8_t byte, cudaStream_t stream);

/* Fails unless the whole allocation still equals its image (inputs: nothing written anywhere). */
#define GU_CHECK_UNCHANGED(buffer, what) gu_check_unchanged((buffer), (what), __FILE__, __LINE__)
void gu_check_unchanged(const gu_buffer_t *buffer, const char *what, const char *file, int line);

/* The guards of an allocation too big for a gu_buffer_t's host image (the huge tests make their own):
 * fails unless each of the `bytes` device bytes at `device` still holds GU_POISON, naming the first
 * that does not. */
#define GU_CHECK_POISONED(device, bytes, what)                                                               \
    gu_check_poisoned((device), (bytes), (what), __FILE__, __LINE__)
void gu_check_poisoned(const void *device, size_t bytes, const char *what, const char *file, int line);

/* The inputs of a call, for messages: host arrays whose element 0 is the call's element 0. */
typedef struct {
    int count; /* 0, 1 or 2 */
    ew_dtype_t dtype[2];
    const void *host[2];
} gu_inputs_t;

/* Downloads the allocation and fails unless: every byte outside the n elements at `offset` equals the
 * image (guards intact), and every element equals `expected` bit for bit. Prints the first mismatches
 * as index, input bits, expected bits, got bits. Returns how many elements were expected to equal
 * their image, i.e. could be correct without having been written (rerun those with another poison). */
#define GU_CHECK_OUTPUT(buffer, offset, n, expected, inputs, what)                                           \
    gu_check_output((buffer), (offset), (n), (expected), (inputs), (what), __FILE__, __LINE__)
int64_t gu_check_output(const gu_buffer_t *buffer, int offset, int64_t n, const void *expected,
                        const gu_inputs_t *inputs, const char *what, const char *file, int line);

/* Bitwise comparison of host arrays; prints the first mismatches like gu_check_output and returns
 * their count (0: equal). */
int64_t gu_compare(ew_dtype_t dtype, int64_t n, const void *expected, const void *got,
                   const gu_inputs_t *inputs, const char *what);

/* Raw bits of element i of a host array of dtype. */
uint64_t gu_bits(ew_dtype_t dtype, const void *host, int64_t i);

/* ---- random inputs ---- */

typedef struct {
    uint64_t state;
} gu_rng_t;

gu_rng_t gu_rng(uint64_t seed);
uint64_t gu_rng_next(gu_rng_t *rng);

/* n random elements of dtype: random bit patterns mixed with NaNs (several payloads, both signs,
 * signalling and quiet), +-inf, +-0, subnormals, min/max/lowest, ties of every narrowing, the fp8
 * edges (448, 464, 465, 57344, 61440), 2^24 +- 1 and other integer edges, 300.7, 128, -1.5, and
 * moderate values. bool: any byte, mostly 0 and 1. Never all zeros. */
void gu_fill_random(ew_dtype_t dtype, int64_t n, void *host, gu_rng_t *rng);

#endif /* EW_TESTS_GPU_UTIL_H */
