/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reliability on the GPU (issue 4): huge n, one handle shared by many threads, CUDA graph replay,
 * two GPUs, sticky context errors, the pointer-check mode, no hidden costs per call, and destroyed
 * handles and kernels refused after their slots are taken again.
 *
 * Each part is its own CMocka test. `test_reliability_gpu NAME` runs only test NAME (ctest registers
 * one entry per part); a part that cannot run here then prints "SKIP: <reason>" and exits 77, which
 * ctest counts as skipped. With no argument every part runs, and the run exits 77 if any part
 * skipped (and none failed). A part skips only for what a machine with a GPU may lack: a second GPU,
 * free device memory, or (for the parts a CUDA tool would disturb) a tool in the process; with
 * EW_REQUIRE_GPU set only the first, and the others fail (gu_skip_allowed, tests/gpu_util.h). Without
 * a GPU the rule of tests/gpu_util.h applies (skip only where there really is none, and not with
 * EW_REQUIRE_GPU set).
 * EW_TEST_SCALE=small cuts the repetition counts about 10x (for compute-sanitizer runs).
 *
 * Expected values come from the independent CPU reference in tests/ref (docs/semantics.md); the
 * whole-output checksums of the huge-n parts come from tests/checksum.cu, which shares no code with
 * the library's kernels.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "checksum.h"
#include "elementwise.h"
#include "gpu_util.h" /* only its header-only rule for a machine without a GPU: gpu_util.c is not linked */
#include "ref/ref.h"
#include "abi/registry.h" /* ewi_registry_slot: which slot a value names (header-only) */

/* ---- host allocation counter: malloc and friends interposed for the whole process ---- */

/* Sanitizer runtimes own malloc; interposing it there would fight them, so counting is off. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EWT_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define EWT_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef EWT_COUNT_ALLOCATIONS
#define EWT_COUNT_ALLOCATIONS 1
#endif

#if EWT_COUNT_ALLOCATIONS
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
void *memalign(size_t alignment, size_t size);

/* Only the calling thread counts: the driver's own threads may allocate at any time. */
static _Thread_local int allocation_counting;
static atomic_long allocation_count;

static void note_allocation(void)
{
    if (allocation_counting)
        atomic_fetch_add_explicit(&allocation_count, 1, memory_order_relaxed);
}

/* The executable's definitions come first in symbol lookup, so the library, cudart and the driver
 * all allocate through these. glibc's free() releases what __libc_* returned. */
void *malloc(size_t size)
{
    note_allocation();
    return __libc_malloc(size);
}
void *calloc(size_t count, size_t size)
{
    note_allocation();
    return __libc_calloc(count, size);
}
void *realloc(void *p, size_t size)
{
    note_allocation();
    return __libc_realloc(p, size);
}
void *memalign(size_t alignment, size_t size)
{
    note_allocation();
    return __libc_memalign(alignment, size);
}
void *aligned_alloc(size_t alignment, size_t size)
{
    note_allocation();
    return __libc_memalign(alignment, size);
}
int posix_memalign(void **result, size_t alignment, size_t size)
{
    note_allocation();
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0)
        return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (p == NULL)
        return ENOMEM;
    *result = p;
    return 0;
}
#endif

/* ---- common helpers ---- */

#define STICKY_CHILD_FLAG "--sticky-errors-child"
enum { POISON = 0xA5 };

static int device_count;
static int running_one_test; /* a skip then exits 77, so ctest shows the part as skipped */
static int skipped_parts;    /* parts that skipped in a run of them all */
static int small_scale;      /* EW_TEST_SCALE=small */

/* Ends the running part as skipped where gu_skip_allowed(kind, <reason>) allows it, else fails it. */
static void skip_part(gu_skip_kind_t kind, const char *format, ...)
{
    char reason[512];
    va_list args;
    va_start(args, format);
    vsnprintf(reason, sizeof reason, format, args);
    va_end(args);
    if (!gu_skip_allowed(kind, reason))
        fail();
    if (running_one_test)
        exit(77);
    skipped_parts++;
    skip();
}

#define CUDA_OK(call)                                                                                        \
    do {                                                                                                     \
        cudaError_t cuda_ok_error_ = (call);                                                                 \
        if (cuda_ok_error_ != cudaSuccess)                                                                   \
            fail_msg("%s: %s (%s)", #call, cudaGetErrorName(cuda_ok_error_),                                 \
                     cudaGetErrorString(cuda_ok_error_));                                                    \
    } while (0)

#define EW_OK(call)                                                                                          \
    do {                                                                                                     \
        ew_status_t ew_ok_status_ = (call);                                                                  \
        if (ew_ok_status_ != EW_SUCCESS)                                                                     \
            fail_msg("%s: %s: %s", #call, ew_status_string(ew_ok_status_), ew_get_last_error_message());     \
    } while (0)

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t next_random(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int64_t random_in(uint64_t *state, int64_t low, int64_t high) /* inclusive */
{
    return low + (int64_t)(next_random(state) % (uint64_t)(high - low + 1));
}

static void *device_alloc(size_t bytes)
{
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, bytes));
    return p;
}

static void *host_alloc(size_t bytes)
{
    void *p = malloc(bytes);
    if (p == NULL)
        fail_msg("out of host memory (%zu bytes)", bytes);
    return p;
}

/* Device copy of n elements of dtype made from the integers values[] by the reference's exact cast. */
static void *device_from_ints(ew_dtype_t dtype, const int32_t *values, size_t n)
{
    size_t bytes = n * ew_dtype_size(dtype);
    void *host = host_alloc(bytes);
    ref_cast(dtype, EW_I32, (int64_t)n, host, values);
    void *device = device_alloc(bytes);
    CUDA_OK(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
    free(host);
    return device;
}

static void *copy_to_host(const void *device, size_t bytes)
{
    void *host = host_alloc(bytes);
    CUDA_OK(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
    return host;
}

static void assert_bytes_equal(const void *got, const void *expected, size_t bytes, size_t element_size,
                               const char *what)
{
    const uint8_t *g = got, *e = expected;
    for (size_t i = 0; i < bytes; ++i)
        if (g[i] != e[i])
            fail_msg("%s: element %zu differs (byte %zu: got 0x%02x, expected 0x%02x)", what,
                     i / element_size, i, g[i], e[i]);
}

static void assert_all_bytes(const void *p, size_t bytes, uint8_t value, const char *what)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < bytes; ++i)
        if (b[i] != value)
            fail_msg("%s: byte %zu is 0x%02x, expected the poison 0x%02x (written where nothing may be)",
                     what, i, b[i], value);
}

/* compute-sanitizer and profilers load themselves into the process. Their own device memory and host
 * allocations are not the library's, and they would report the sticky-error part's deliberate fault,
 * so those parts skip under them (scripts/gpu-check may also exclude them by name). */
static const char *cuda_tool_in_process(void)
{
    const char *injection = getenv("CUDA_INJECTION64_PATH");
    if (injection != NULL && injection[0] != '\0')
        return injection;
    const char *preload = getenv("LD_PRELOAD");
    if (preload != NULL && (strstr(preload, "sanitizer") != NULL || strstr(preload, "TreeLauncher") != NULL))
        return preload;
    return NULL;
}

static ew_handle_t create_handle(int device)
{
    ew_handle_t handle = NULL;
    EW_OK(ew_handle_create(device, &handle));
    return handle;
}

static void require_free_device_memory(uint64_t bytes)
{
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (free_bytes < bytes)
        skip_part(GU_SKIP, "needs %.1f GiB of free device memory, %.1f GiB free", bytes / 1073741824.0,
                  free_bytes / 1073741824.0);
}

/* ---- huge n ---- */

enum { HUGE_GUARD_BYTES = 4096, HUGE_RANDOM_POSITIONS = 4096 };
static const uint64_t SEED_A = 0xA11CE, SEED_B = 0xB0B, SEED_X = 0xCA57;

typedef enum { HUGE_ADD_U8, HUGE_CAST_I8_F16 } huge_kind_t;

/* The reference result of element i of the huge call, from the same hash inputs the device filled. */
static uint16_t huge_expected(huge_kind_t kind, uint64_t i)
{
    if (kind == HUGE_ADD_U8) {
        uint8_t a = ewt_hash_byte(SEED_A, i), b = ewt_hash_byte(SEED_B, i), out;
        ref_binary(EW_OP_ADD, EW_U8, 1, &out, &a, &b);
        return out;
    }
    uint8_t x = ewt_hash_byte(SEED_X, i);
    uint16_t out;
    ref_cast(EW_F16, EW_I8, 1, &out, &x);
    return out;
}

typedef struct {
    huge_kind_t kind;
    uint64_t begin, end, sum;
} checksum_job_t;

/* The reference over every possible input: all 65,536 u8 pairs for add, all 256 i8 values for the
 * cast, so the billions of elements of the whole-output checksum cost a table lookup each. */
static uint8_t reference_add_u8[256 * 256];
static uint16_t reference_cast_i8_f16[256];

static void build_reference_tables(void)
{
    uint8_t a[256 * 256], b[256 * 256];
    for (int i = 0; i < 256 * 256; ++i) {
        a[i] = (uint8_t)(i >> 8);
        b[i] = (uint8_t)i;
    }
    ref_binary(EW_OP_ADD, EW_U8, 256 * 256, reference_add_u8, a, b);
    ref_cast(EW_F16, EW_I8, 256, reference_cast_i8_f16, b);
}

/* The whole-output checksum of the reference results over [begin, end). */
static void *host_checksum_worker(void *argument)
{
    checksum_job_t *job = argument;
    uint64_t sum = 0;
    if (job->kind == HUGE_ADD_U8)
        for (uint64_t i = job->begin; i < job->end; ++i) {
            unsigned pair = (unsigned)ewt_hash_byte(SEED_A, i) << 8 | ewt_hash_byte(SEED_B, i);
            sum += reference_add_u8[pair] * ewt_checksum_weight(i);
        }
    else
        for (uint64_t i = job->begin; i < job->end; ++i)
            sum += reference_cast_i8_f16[ewt_hash_byte(SEED_X, i)] * ewt_checksum_weight(i);
    job->sum = sum;
    return NULL;
}

static uint64_t host_checksum(huge_kind_t kind, uint64_t n)
{
    enum { MAX_WORKERS = 64 };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int workers = cpus < 1 ? 1 : cpus > MAX_WORKERS ? MAX_WORKERS : (int)cpus;
    pthread_t threads[MAX_WORKERS];
    checksum_job_t jobs[MAX_WORKERS];
    uint64_t share = (n + (uint64_t)workers - 1) / (uint64_t)workers;
    build_reference_tables();
    for (int w = 0; w < workers; ++w) {
        uint64_t begin = share * (uint64_t)w, end = begin + share;
        jobs[w] = (checksum_job_t){kind, begin < n ? begin : n, end < n ? end : n, 0};
        assert_int_equal(pthread_create(&threads[w], NULL, host_checksum_worker, &jobs[w]), 0);
    }
    uint64_t sum = 0;
    for (int w = 0; w < workers; ++w) {
        pthread_join(threads[w], NULL);
        sum += jobs[w].sum;
    }
    return sum;
}

/* Checks the first and last elements, both sides of 2^31 and 2^32 (where a 32-bit index would
 * wrap), thousands of random positions, the guard zones, and the checksum of the whole output. */
static void verify_huge(huge_kind_t kind, const uint8_t *out_allocation, uint64_t n, size_t out_size)
{
    const uint8_t *out = out_allocation + HUGE_GUARD_BYTES;
    uint8_t guard[HUGE_GUARD_BYTES];
    CUDA_OK(cudaMemcpy(guard, out_allocation, sizeof guard, cudaMemcpyDeviceToHost));
    assert_all_bytes(guard, sizeof guard, POISON, "guard before out");
    CUDA_OK(cudaMemcpy(guard, out + n * out_size, sizeof guard, cudaMemcpyDeviceToHost));
    assert_all_bytes(guard, sizeof guard, POISON, "guard after out");

    uint64_t positions[256 + HUGE_RANDOM_POSITIONS];
    int count = 0;
    const uint64_t edges[] = {0, n - 64, (1ull << 31) - 32, (1ull << 32) - 32};
    for (int e = 0; e < 4; ++e)
        for (uint64_t i = edges[e]; i < edges[e] + 64; ++i)
            if (i < n)
                positions[count++] = i;
    uint64_t random_state = n;
    for (int r = 0; r < HUGE_RANDOM_POSITIONS; ++r)
        positions[count++] = next_random(&random_state) % n;
    for (int p = 0; p < count; ++p) {
        uint16_t got = 0;
        CUDA_OK(cudaMemcpy(&got, out + positions[p] * out_size, out_size, cudaMemcpyDeviceToHost));
        uint16_t expected = huge_expected(kind, positions[p]);
        if (got != expected)
            fail_msg("element %llu of %llu: got 0x%x, expected 0x%x", (unsigned long long)positions[p],
                     (unsigned long long)n, got, expected);
    }

    double t0 = now_seconds();
    uint64_t device_sum = 0;
    CUDA_OK(ewt_checksum(out, n, (int)out_size, &device_sum, NULL));
    double t1 = now_seconds();
    uint64_t host_sum = host_checksum(kind, n);
    double t2 = now_seconds();
    printf("n = %llu: %d positions match the reference; whole-output checksum device 0x%016llx (%.2f s), "
           "reference 0x%016llx (%.2f s)\n",
           (unsigned long long)n, count, (unsigned long long)device_sum, t1 - t0,
           (unsigned long long)host_sum, t2 - t1);
    if (device_sum != host_sum)
        fail_msg(
            "whole-output checksum differs from the reference: some element outside the sampled positions "
            "is wrong");
}

static void huge_add_u8(void **state)
{
    (void)state;
    const uint64_t n = (1ull << 32) + 5;
    require_free_device_memory(3 * (n + 2 * HUGE_GUARD_BYTES) + (256ull << 20));
    ew_handle_t handle = create_handle(0);
    uint8_t *a = device_alloc(n), *b = device_alloc(n),
            *out_allocation = device_alloc(n + 2 * HUGE_GUARD_BYTES);
    CUDA_OK(ewt_fill_hash_bytes(a, n, SEED_A, NULL));
    CUDA_OK(ewt_fill_hash_bytes(b, n, SEED_B, NULL));
    CUDA_OK(cudaMemset(out_allocation, POISON, n + 2 * HUGE_GUARD_BYTES));

    double t0 = now_seconds();
    EW_OK(ew_binary(handle, EW_OP_ADD, EW_U8, (int64_t)n, out_allocation + HUGE_GUARD_BYTES, a, b, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    printf("u8 add, n = 2^32 + 5: %.1f ms\n", 1e3 * (now_seconds() - t0));
    verify_huge(HUGE_ADD_U8, out_allocation, n, 1);

    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    CUDA_OK(cudaFree(out_allocation));
    EW_OK(ew_handle_destroy(handle));
}

static void huge_cast_i8_f16(void **state)
{
    (void)state;
    const uint64_t n = (1ull << 31) + 7;
    require_free_device_memory(n + 2 * n + 2 * HUGE_GUARD_BYTES + (256ull << 20));
    ew_handle_t handle = create_handle(0);
    uint8_t *x = device_alloc(n), *out_allocation = device_alloc(2 * n + 2 * HUGE_GUARD_BYTES);
    CUDA_OK(ewt_fill_hash_bytes(x, n, SEED_X, NULL));
    CUDA_OK(cudaMemset(out_allocation, POISON, 2 * n + 2 * HUGE_GUARD_BYTES));

    double t0 = now_seconds();
    EW_OK(ew_cast(handle, EW_F16, EW_I8, (int64_t)n, out_allocation + HUGE_GUARD_BYTES, x, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    printf("i8 -> f16 cast, n = 2^31 + 7: %.1f ms\n", 1e3 * (now_seconds() - t0));
    verify_huge(HUGE_CAST_I8_F16, out_allocation, n, 2);

    CUDA_OK(cudaFree(x));
    CUDA_OK(cudaFree(out_allocation));
    EW_OK(ew_handle_destroy(handle));
}

/* ---- the 14 operation entry points, one adapter each over the same buffers ---- */

/* The buffers every adapter takes: f32 inputs a and b, n = rows * cols elements each; out of
 * out_dtype. The strided forms view them as rows x cols with a read transposed (a[j * rows + i]),
 * so the layout is not flat; the batched forms take one list entry per row. */
enum { ENTRY_POINTS = 14, ENTRY_MAX_ROWS = 64 };
static const double ENTRY_ALPHA = 0.75;
static const char *const ENTRY_KERNEL_SOURCE = "return ew::scale_add(p0, in0, in1);"; /* f32, one param */

typedef struct {
    ew_handle_t handle;
    ew_kernel_t kernel; /* ENTRY_KERNEL_SOURCE on handle */
    int rows, cols;     /* rows <= ENTRY_MAX_ROWS */
    void *out;
    const float *a, *b;
    cudaStream_t stream;
} entry_args_t;

typedef enum { FORM_FLAT, FORM_STRIDED, FORM_BATCHED } entry_form_t;

typedef struct {
    const char *name;
    ew_op_t op; /* EW_OP_SCALE_ADD for the kernel's entries, whose source computes it */
    entry_form_t form;
    ew_dtype_t out_dtype;
    ew_status_t (*call)(const entry_args_t *e);
} entry_t;

typedef struct {
    int64_t shape[2], dense[2], transposed[2];
} entry_views_t;

static entry_views_t entry_views(const entry_args_t *e)
{
    return (entry_views_t){{e->rows, e->cols}, {e->cols, 1}, {1, e->rows}};
}

typedef struct {
    int64_t n[ENTRY_MAX_ROWS];
    void *out[ENTRY_MAX_ROWS];
    const void *a[ENTRY_MAX_ROWS], *b[ENTRY_MAX_ROWS];
} entry_lists_t;

/* On the stack: the batched adapters allocate nothing (no_hidden_costs counts). */
static void entry_lists(const entry_args_t *e, size_t out_size, entry_lists_t *l)
{
    for (int i = 0; i < e->rows; ++i) {
        l->n[i] = e->cols;
        l->out[i] = (uint8_t *)e->out + (size_t)i * e->cols * out_size;
        l->a[i] = e->a + (size_t)i * e->cols;
        l->b[i] = e->b + (size_t)i * e->cols;
    }
}

static int64_t entry_n(const entry_args_t *e) { return (int64_t)e->rows * e->cols; }

static ew_status_t unary_flat(const entry_args_t *e)
{
    return ew_unary(e->handle, EW_OP_RELU, EW_F32, entry_n(e), e->out, e->a, e->stream);
}
static ew_status_t binary_flat(const entry_args_t *e)
{
    return ew_binary(e->handle, EW_OP_ADD, EW_F32, entry_n(e), e->out, e->a, e->b, e->stream);
}
static ew_status_t cast_flat(const entry_args_t *e)
{
    return ew_cast(e->handle, EW_F16, EW_F32, entry_n(e), e->out, e->a, e->stream);
}
static ew_status_t scale_add_flat(const entry_args_t *e)
{
    return ew_scale_add(e->handle, EW_F32, ENTRY_ALPHA, entry_n(e), e->out, e->a, e->b, e->stream);
}
static ew_status_t unary_strided(const entry_args_t *e)
{
    const entry_views_t v = entry_views(e);
    return ew_unary_strided(e->handle, EW_OP_RELU, EW_F32, 2, v.shape, e->out, v.dense, e->a, v.transposed,
                            e->stream);
}
static ew_status_t binary_strided(const entry_args_t *e)
{
    const entry_views_t v = entry_views(e);
    return ew_binary_strided(e->handle, EW_OP_ADD, EW_F32, 2, v.shape, e->out, v.dense, e->a, v.transposed,
                             e->b, v.dense, e->stream);
}
static ew_status_t cast_strided(const entry_args_t *e)
{
    const entry_views_t v = entry_views(e);
    return ew_cast_strided(e->handle, EW_F16, EW_F32, 2, v.shape, e->out, v.dense, e->a, v.transposed,
                           e->stream);
}
static ew_status_t scale_add_strided(const entry_args_t *e)
{
    const entry_views_t v = entry_views(e);
    return ew_scale_add_strided(e->handle, EW_F32, ENTRY_ALPHA, 2, v.shape, e->out, v.dense, e->a,
                                v.transposed, e->b, v.dense, e->stream);
}
static ew_status_t unary_batched(const entry_args_t *e)
{
    entry_lists_t l;
    entry_lists(e, 4, &l);
    return ew_unary_batched(e->handle, EW_OP_RELU, EW_F32, e->rows, l.n, l.out, l.a, e->stream);
}
static ew_status_t binary_batched(const entry_args_t *e)
{
    entry_lists_t l;
    entry_lists(e, 4, &l);
    return ew_binary_batched(e->handle, EW_OP_ADD, EW_F32, e->rows, l.n, l.out, l.a, l.b, e->stream);
}
static ew_status_t cast_batched(const entry_args_t *e)
{
    entry_lists_t l;
    entry_lists(e, 2, &l);
    return ew_cast_batched(e->handle, EW_F16, EW_F32, e->rows, l.n, l.out, l.a, e->stream);
}
static ew_status_t scale_add_batched(const entry_args_t *e)
{
    entry_lists_t l;
    entry_lists(e, 4, &l);
    return ew_scale_add_batched(e->handle, EW_F32, ENTRY_ALPHA, e->rows, l.n, l.out, l.a, l.b, e->stream);
}
static ew_status_t kernel_flat(const entry_args_t *e)
{
    const void *inputs[2] = {e->a, e->b};
    return ew_kernel_launch(e->kernel, entry_n(e), e->out, inputs, &ENTRY_ALPHA, e->stream);
}
static ew_status_t kernel_strided(const entry_args_t *e)
{
    const entry_views_t v = entry_views(e);
    const void *inputs[2] = {e->a, e->b};
    const int64_t *in_strides[2] = {v.transposed, v.dense};
    return ew_kernel_launch_strided(e->kernel, 2, v.shape, e->out, v.dense, inputs, in_strides, &ENTRY_ALPHA,
                                    e->stream);
}

static const entry_t entries[ENTRY_POINTS] = {
    {"ew_unary(relu f32)", EW_OP_RELU, FORM_FLAT, EW_F32, unary_flat},
    {"ew_binary(add f32)", EW_OP_ADD, FORM_FLAT, EW_F32, binary_flat},
    {"ew_cast(f16 <- f32)", EW_OP_CAST, FORM_FLAT, EW_F16, cast_flat},
    {"ew_scale_add(f32)", EW_OP_SCALE_ADD, FORM_FLAT, EW_F32, scale_add_flat},
    {"ew_unary_strided(relu f32)", EW_OP_RELU, FORM_STRIDED, EW_F32, unary_strided},
    {"ew_binary_strided(add f32)", EW_OP_ADD, FORM_STRIDED, EW_F32, binary_strided},
    {"ew_cast_strided(f16 <- f32)", EW_OP_CAST, FORM_STRIDED, EW_F16, cast_strided},
    {"ew_scale_add_strided(f32)", EW_OP_SCALE_ADD, FORM_STRIDED, EW_F32, scale_add_strided},
    {"ew_unary_batched(relu f32)", EW_OP_RELU, FORM_BATCHED, EW_F32, unary_batched},
    {"ew_binary_batched(add f32)", EW_OP_ADD, FORM_BATCHED, EW_F32, binary_batched},
    {"ew_cast_batched(f16 <- f32)", EW_OP_CAST, FORM_BATCHED, EW_F16, cast_batched},
    {"ew_scale_add_batched(f32)", EW_OP_SCALE_ADD, FORM_BATCHED, EW_F32, scale_add_batched},
    {"ew_kernel_launch(scale_add f32)", EW_OP_SCALE_ADD, FORM_FLAT, EW_F32, kernel_flat},
    {"ew_kernel_launch_strided(scale_add f32)", EW_OP_SCALE_ADD, FORM_STRIDED, EW_F32, kernel_strided},
};

/* The reference of entry k on host copies of a and b (n = rows * cols), from tests/ref: the strided
 * forms' a gathered as they read it first. */
static void entry_reference(int k, int rows, int cols, const float *a, const float *b, void *expected)
{
    const int64_t n = (int64_t)rows * cols;
    float *gathered = NULL;
    const float *x = a;
    if (entries[k].form == FORM_STRIDED) {
        gathered = host_alloc((size_t)n * 4);
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j)
                gathered[(size_t)i * cols + j] = a[(size_t)j * rows + i];
        x = gathered;
    }
    switch (entries[k].op) {
    case EW_OP_RELU: ref_unary(EW_OP_RELU, EW_F32, n, expected, x); break;
    case EW_OP_ADD: ref_binary(EW_OP_ADD, EW_F32, n, expected, x, b); break;
    case EW_OP_CAST: ref_cast(EW_F16, EW_F32, n, expected, x); break;
    default: ref_scale_add(EW_F32, ENTRY_ALPHA, n, expected, x, b);
    }
    free(gathered);
}

/* What entry k wrote to args->out, against the reference, and the guard row after it untouched. */
static void check_entry_output(int k, const entry_args_t *args, const float *host_a, const float *host_b)
{
    const size_t size = ew_dtype_size(entries[k].out_dtype), bytes = (size_t)entry_n(args) * size;
    const size_t guard = (size_t)args->cols * size;
    uint8_t *got = copy_to_host(args->out, bytes + guard), *expected = host_alloc(bytes);
    entry_reference(k, args->rows, args->cols, host_a, host_b, expected);
    assert_bytes_equal(got, expected, bytes, size, entries[k].name);
    assert_all_bytes(got + bytes, guard, POISON, entries[k].name);
    free(got);
    free(expected);
}

/* Entry k on args (args->out has room for one more row of its out dtype, a guard), against the
 * reference on host_a and host_b, the host copies of args->a and args->b: out poisoned first, then
 * compared bit for bit, the guard still poisoned. */
static void verify_entry(int k, const entry_args_t *args, const float *host_a, const float *host_b)
{
    const size_t size = ew_dtype_size(entries[k].out_dtype);
    CUDA_OK(cudaMemsetAsync(args->out, POISON, (size_t)(entry_n(args) + args->cols) * size, args->stream));
    ew_status_t status = entries[k].call(args);
    if (status != EW_SUCCESS)
        fail_msg("%s: %s: %s", entries[k].name, ew_status_string(status), ew_get_last_error_message());
    CUDA_OK(cudaStreamSynchronize(args->stream));
    check_entry_output(k, args, host_a, host_b);
}

/* A kernel of two f32 inputs into f32 on handle (its device current); a GPU machine without NVRTC
 * skips, or fails with EW_REQUIRE_GPU set. */
static ew_kernel_t create_kernel(ew_handle_t handle, const char *source, int n_params)
{
    const ew_dtype_t in_dtypes[2] = {EW_F32, EW_F32};
    ew_kernel_t kernel = NULL;
    ew_status_t status = ew_kernel_create(handle, source, EW_F32, 2, in_dtypes, n_params, &kernel);
    if (gu_status_means_no_nvrtc(status))
        skip_part(GU_SKIP, "no NVRTC: %s", ew_get_last_error_message());
    EW_OK(status);
    return kernel;
}

/* The kernel of the kernel entries on handle. */
static ew_kernel_t create_entry_kernel(ew_handle_t handle)
{
    return create_kernel(handle, ENTRY_KERNEL_SOURCE, 1);
}

/* ---- concurrency: one handle, 8 threads, each on its own stream ---- */

enum {
    WORKERS = 8,
    CALLS_PER_WORKER = 10000,
    SLOTS = 64,      /* calls issued between two verifications */
    MAX_N = 4096,    /* elements per call */
    MAX_OFFSET = 16, /* element offsets of each pointer, so alignments vary */
    INPUT_ELEMENTS = MAX_N + MAX_OFFSET,
    SLOT_BYTES = (MAX_N + 2 * MAX_OFFSET + 16) * 8,
    SLOT_GUARD_BYTES = 16
};

/* Read-only inputs shared by all workers: per dtype, two arrays built from small integers. */
static struct {
    void *host[2][EW_F8E5M2 + 1];
    void *device[2][EW_F8E5M2 + 1];
} shared_inputs;

typedef struct {
    int entry; /* one of the 14 entry points on f32 inputs (rows x cols); -1: the flat call below */
    int rows, cols;
    ew_op_t op;
    ew_dtype_t out_dtype, in_dtype;
    double alpha;
    int64_t n;
    int offset_out, offset_a, offset_b;
} call_spec_t;

static ew_kernel_t concurrency_kernel; /* the kernel entries' kernel, on the shared handle */

typedef struct {
    ew_handle_t handle;
    int index;
    int calls;
    long verified;
    int failed;
    char failure[768];
} worker_t;

#define WORKER_CHECK(worker, condition, ...)                                                                 \
    do {                                                                                                     \
        if (!(condition)) {                                                                                  \
            snprintf((worker)->failure, sizeof(worker)->failure, __VA_ARGS__);                               \
            (worker)->failed = 1;                                                                            \
            goto done;                                                                                       \
        }                                                                                                    \
    } while (0)

static ew_dtype_t random_dtype(uint64_t *state) { return (ew_dtype_t)random_in(state, EW_BOOL, EW_F8E5M2); }

static int is_float(ew_dtype_t d) { return d >= EW_F16; }

static call_spec_t random_call(uint64_t *state)
{
    call_spec_t c = {.entry = -1};
    c.offset_out = (int)random_in(state, 0, MAX_OFFSET - 1);
    c.offset_a = (int)random_in(state, 0, MAX_OFFSET - 1);
    c.offset_b = (int)random_in(state, 0, MAX_OFFSET - 1);
    if (random_in(state, 0, 2) == 0) { /* a third of the calls: the 14 entry points, in turn at random */
        c.entry = (int)random_in(state, 0, ENTRY_POINTS - 1);
        c.rows = (int)random_in(state, 1, 16);
        c.cols = (int)random_in(state, 1, MAX_N / c.rows);
        c.n = (int64_t)c.rows * c.cols;
        c.out_dtype = entries[c.entry].out_dtype;
        c.in_dtype = EW_F32;
        return c;
    }
    do {
        static const ew_op_t ops[] = {EW_OP_ADD, EW_OP_MUL, EW_OP_RELU, EW_OP_CAST, EW_OP_SCALE_ADD};
        c.op = ops[random_in(state, 0, 4)];
        c.out_dtype = random_dtype(state);
        c.in_dtype = c.op == EW_OP_CAST ? random_dtype(state) : c.out_dtype;
    } while (!ew_is_supported(c.op, c.out_dtype, c.in_dtype));
    if (c.op == EW_OP_SCALE_ADD) {
        static const double float_alphas[] = {1.5, -0.75, 3.0, 0.1, -2.0};
        if (is_float(c.out_dtype))
            c.alpha = float_alphas[random_in(state, 0, 4)];
        else if (c.out_dtype == EW_BOOL)
            c.alpha = (double)random_in(state, 0, 1);
        else if (c.out_dtype == EW_U8)
            c.alpha = (double)random_in(state, 0, 5);
        else
            c.alpha = (double)random_in(state, -3, 3);
    }
    c.n = random_in(state, 1, MAX_N);
    return c;
}

static const void *input_at(int which, int device_side, ew_dtype_t dtype, int offset)
{
    const uint8_t *base = device_side ? shared_inputs.device[which][dtype] : shared_inputs.host[which][dtype];
    return base + (size_t)offset * ew_dtype_size(dtype);
}

static ew_status_t issue_call(ew_handle_t handle, const call_spec_t *c, void *out, cudaStream_t stream)
{
    const void *a = input_at(0, 1, c->in_dtype, c->offset_a), *b = input_at(1, 1, c->in_dtype, c->offset_b);
    if (c->entry >= 0) {
        const entry_args_t args = {handle, concurrency_kernel, c->rows, c->cols, out, a, b, stream};
        return entries[c->entry].call(&args);
    }
    switch (c->op) {
    case EW_OP_ADD:
    case EW_OP_MUL: return ew_binary(handle, c->op, c->out_dtype, c->n, out, a, b, stream);
    case EW_OP_RELU: return ew_unary(handle, c->op, c->out_dtype, c->n, out, a, stream);
    case EW_OP_CAST: return ew_cast(handle, c->out_dtype, c->in_dtype, c->n, out, a, stream);
    default: return ew_scale_add(handle, c->out_dtype, c->alpha, c->n, out, a, b, stream);
    }
}

static void reference_call(const call_spec_t *c, void *out)
{
    const void *a = input_at(0, 0, c->in_dtype, c->offset_a), *b = input_at(1, 0, c->in_dtype, c->offset_b);
    if (c->entry >= 0) {
        entry_reference(c->entry, c->rows, c->cols, a, b, out);
        return;
    }
    switch (c->op) {
    case EW_OP_ADD:
    case EW_OP_MUL: ref_binary(c->op, c->out_dtype, c->n, out, a, b); break;
    case EW_OP_RELU: ref_unary(c->op, c->out_dtype, c->n, out, a); break;
    case EW_OP_CAST: ref_cast(c->out_dtype, c->in_dtype, c->n, out, a); break;
    default: ref_scale_add(c->out_dtype, c->alpha, c->n, out, a, b);
    }
}

static void *concurrency_worker(void *argument)
{
    worker_t *w = argument;
    cudaStream_t stream = NULL;
    uint8_t *device_slots = NULL, *host_slots = NULL, *expected = NULL;
    char *own_message = NULL;
    call_spec_t specs[SLOTS];
    uint64_t random_state = 0x5EED0000u + (uint64_t)w->index;
    /* A call only this thread makes: its message must come back unchanged whatever others do. */
    const int64_t own_bad_n = -(int64_t)(w->index + 1) * 1000003;

    cudaError_t error = cudaSetDevice(0);
    if (error == cudaSuccess)
        error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (error == cudaSuccess)
        error = cudaMalloc((void **)&device_slots, (size_t)SLOTS * SLOT_BYTES);
    WORKER_CHECK(w, error == cudaSuccess, "worker %d setup: %s", w->index, cudaGetErrorName(error));
    host_slots = malloc((size_t)SLOTS * SLOT_BYTES);
    expected = malloc(SLOT_BYTES);
    WORKER_CHECK(w, host_slots != NULL && expected != NULL, "worker %d: out of host memory", w->index);

    for (int done_calls = 0; done_calls < w->calls;) {
        int batch = w->calls - done_calls < SLOTS ? w->calls - done_calls : SLOTS;
        error = cudaMemsetAsync(device_slots, POISON, (size_t)SLOTS * SLOT_BYTES, stream);
        WORKER_CHECK(w, error == cudaSuccess, "worker %d: cudaMemsetAsync: %s", w->index,
                     cudaGetErrorName(error));
        for (int k = 0; k < batch; ++k) {
            specs[k] = random_call(&random_state);
            uint8_t *out = device_slots + (size_t)k * SLOT_BYTES + SLOT_GUARD_BYTES +
                           (size_t)specs[k].offset_out * ew_dtype_size(specs[k].out_dtype);
            ew_status_t status = issue_call(w->handle, &specs[k], out, stream);
            WORKER_CHECK(w, status == EW_SUCCESS, "worker %d call %d (%s, op %d, %s <- %s, n %lld): %s: %s",
                         w->index, done_calls + k,
                         specs[k].entry >= 0 ? entries[specs[k].entry].name : "a flat call", specs[k].op,
                         ew_dtype_name(specs[k].out_dtype), ew_dtype_name(specs[k].in_dtype),
                         (long long)specs[k].n, ew_status_string(status), ew_get_last_error_message());
            if ((done_calls + k) % 97 == 0) {
                status = ew_binary(w->handle, EW_OP_ADD, EW_F32, own_bad_n, out, out, out, stream);
                WORKER_CHECK(w, status == EW_ERROR_INVALID_VALUE, "worker %d: n = %lld gave %s", w->index,
                             (long long)own_bad_n, ew_status_string(status));
                const char *message = ew_get_last_error_message();
                if (own_message == NULL)
                    own_message = strdup(message);
                WORKER_CHECK(
                    w, own_message != NULL && own_message[0] != '\0' && strcmp(message, own_message) == 0,
                    "worker %d: its last-error message changed from \"%s\" to \"%s\" (not thread-local?)",
                    w->index, own_message ? own_message : "", message);
            }
        }
        error = cudaMemcpyAsync(host_slots, device_slots, (size_t)SLOTS * SLOT_BYTES, cudaMemcpyDeviceToHost,
                                stream);
        if (error == cudaSuccess)
            error = cudaStreamSynchronize(stream);
        WORKER_CHECK(w, error == cudaSuccess, "worker %d: results: %s", w->index, cudaGetErrorName(error));
        for (int k = 0; k < batch; ++k) {
            const call_spec_t *c = &specs[k];
            size_t size = ew_dtype_size(c->out_dtype),
                   start = SLOT_GUARD_BYTES + (size_t)c->offset_out * size;
            size_t end = start + (size_t)c->n * size;
            const uint8_t *slot = host_slots + (size_t)k * SLOT_BYTES;
            reference_call(c, expected);
            for (size_t i = 0; i < start; ++i)
                WORKER_CHECK(w, slot[i] == POISON, "worker %d call %d: byte %zu before out was written",
                             w->index, done_calls + k, start - i);
            for (size_t i = end; i < end + SLOT_GUARD_BYTES; ++i)
                WORKER_CHECK(w, slot[i] == POISON, "worker %d call %d: byte %zu after out was written",
                             w->index, done_calls + k, i - end);
            int differs = memcmp(slot + start, expected, end - start);
            WORKER_CHECK(
                w, differs == 0,
                "worker %d call %d (%s, rows %d, op %d, %s <- %s, n %lld, alpha %g, offsets %d/%d/%d): "
                "result differs from the reference",
                w->index, done_calls + k, c->entry >= 0 ? entries[c->entry].name : "a flat call", c->rows,
                c->op, ew_dtype_name(c->out_dtype), ew_dtype_name(c->in_dtype), (long long)c->n, c->alpha,
                c->offset_out, c->offset_a, c->offset_b);
            w->verified++;
        }
        done_calls += batch;
    }
done:
    if (stream != NULL)
        cudaStreamDestroy(stream);
    cudaFree(device_slots);
    free(host_slots);
    free(expected);
    free(own_message);
    return NULL;
}

static void make_shared_inputs(void)
{
    uint64_t state = 0xC0FFEE;
    int32_t values[INPUT_ELEMENTS];
    for (int which = 0; which < 2; ++which) {
        for (int i = 0; i < INPUT_ELEMENTS; ++i)
            values[i] = (int32_t)random_in(&state, -300, 300);
        for (int d = EW_BOOL; d <= EW_F8E5M2; ++d) {
            size_t bytes = (size_t)INPUT_ELEMENTS * ew_dtype_size((ew_dtype_t)d);
            shared_inputs.host[which][d] = host_alloc(bytes);
            ref_cast((ew_dtype_t)d, EW_I32, INPUT_ELEMENTS, shared_inputs.host[which][d], values);
            shared_inputs.device[which][d] = device_alloc(bytes);
            CUDA_OK(cudaMemcpy(shared_inputs.device[which][d], shared_inputs.host[which][d], bytes,
                               cudaMemcpyHostToDevice));
        }
    }
}

static void free_shared_inputs(void)
{
    for (int which = 0; which < 2; ++which)
        for (int d = EW_BOOL; d <= EW_F8E5M2; ++d) {
            free(shared_inputs.host[which][d]);
            CUDA_OK(cudaFree(shared_inputs.device[which][d]));
        }
}

static void concurrency(void **state)
{
    (void)state;
    ew_handle_t handle = create_handle(0);
    make_shared_inputs();
    concurrency_kernel = create_entry_kernel(handle);
    /* Each entry point once, checked: the kernel's first strided launch compiles its strided program
     * here, not in the race. */
    float *scratch = device_alloc((size_t)(MAX_N + 64) * 4);
    const entry_args_t warm = {handle,
                               concurrency_kernel,
                               8,
                               64,
                               scratch,
                               shared_inputs.device[0][EW_F32],
                               shared_inputs.device[1][EW_F32],
                               NULL};
    for (int k = 0; k < ENTRY_POINTS; ++k)
        verify_entry(k, &warm, shared_inputs.host[0][EW_F32], shared_inputs.host[1][EW_F32]);
    CUDA_OK(cudaFree(scratch));
    worker_t workers[WORKERS];
    pthread_t threads[WORKERS];
    int calls = small_scale ? CALLS_PER_WORKER / 10 : CALLS_PER_WORKER;
    double t0 = now_seconds();
    for (int t = 0; t < WORKERS; ++t) {
        workers[t] = (worker_t){.handle = handle, .index = t, .calls = calls};
        assert_int_equal(pthread_create(&threads[t], NULL, concurrency_worker, &workers[t]), 0);
    }
    long verified = 0;
    for (int t = 0; t < WORKERS; ++t)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < WORKERS; ++t) {
        if (workers[t].failed)
            fail_msg("%s", workers[t].failure);
        verified += workers[t].verified;
    }
    printf("concurrency: %d threads x %d calls on one handle, %ld results verified (%.2f s)\n", WORKERS,
           calls, verified, now_seconds() - t0);
    assert_int_equal(verified, (long)WORKERS * calls);
    free_shared_inputs();
    EW_OK(ew_kernel_destroy(concurrency_kernel));
    EW_OK(ew_handle_destroy(handle));
}

/* ---- CUDA graph: a chain of calls captured once, replayed 1,000 times ---- */

enum { GRAPH_N = 100003, GRAPH_CALLS = 5 };
static const double GRAPH_ALPHA = -0.5;

/* The chain: acc += inc (in place); accf = (f32)acc; out = alpha * accf + base; half = (f16)out;
 * relu = relu(half). Each run adds inc once more, so the results name the exact number of runs. */
typedef struct {
    int32_t *acc0, *inc, *acc;
    float *base, *accf, *out;
    uint16_t *half, *relu;
} graph_host_t;

typedef struct {
    int32_t *acc, *inc;
    float *base, *accf, *out;
    uint16_t *half, *relu;
} graph_device_t;

static void graph_enqueue(ew_handle_t handle, const graph_device_t *d, cudaStream_t stream,
                          ew_status_t status[GRAPH_CALLS])
{
    /* Separate statements: the calls must be issued in this order. */
    status[0] = ew_binary(handle, EW_OP_ADD, EW_I32, GRAPH_N, d->acc, d->acc, d->inc, stream);
    status[1] = ew_cast(handle, EW_F32, EW_I32, GRAPH_N, d->accf, d->acc, stream);
    status[2] = ew_scale_add(handle, EW_F32, GRAPH_ALPHA, GRAPH_N, d->out, d->accf, d->base, stream);
    status[3] = ew_cast(handle, EW_F16, EW_F32, GRAPH_N, d->half, d->out, stream);
    status[4] = ew_unary(handle, EW_OP_RELU, EW_F16, GRAPH_N, d->relu, d->half, stream);
}

static void graph_check_status(const ew_status_t status[GRAPH_CALLS], const char *when)
{
    for (int k = 0; k < GRAPH_CALLS; ++k)
        if (status[k] != EW_SUCCESS)
            fail_msg("call %d of the chain %s: %s", k, when, ew_status_string(status[k]));
}

/* Start state: acc = acc0, every output poisoned. */
static void graph_reset(const graph_host_t *h, const graph_device_t *d)
{
    CUDA_OK(cudaMemcpy(d->acc, h->acc0, GRAPH_N * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d->accf, POISON, GRAPH_N * 4));
    CUDA_OK(cudaMemset(d->out, POISON, GRAPH_N * 4));
    CUDA_OK(cudaMemset(d->half, POISON, GRAPH_N * 2));
    CUDA_OK(cudaMemset(d->relu, POISON, GRAPH_N * 2));
    /* done before the non-blocking streams' work starts: they do not wait for the legacy stream */
    CUDA_OK(cudaDeviceSynchronize());
}

/* Every buffer of the chain after `runs` runs, against the reference. */
static void graph_verify(int runs, const graph_host_t *h, const graph_device_t *d, const char *how)
{
    for (int i = 0; i < GRAPH_N; ++i)
        h->acc[i] = (int32_t)((uint32_t)h->acc0[i] + (uint32_t)runs * (uint32_t)h->inc[i]);
    ref_cast(EW_F32, EW_I32, GRAPH_N, h->accf, h->acc);
    ref_scale_add(EW_F32, GRAPH_ALPHA, GRAPH_N, h->out, h->accf, h->base);
    ref_cast(EW_F16, EW_F32, GRAPH_N, h->half, h->out);
    ref_unary(EW_OP_RELU, EW_F16, GRAPH_N, h->relu, h->half);
    const struct {
        const void *device, *expected;
        size_t size;
        const char *name;
    } results[] = {{d->acc, h->acc, 4, "acc"},
                   {d->accf, h->accf, 4, "accf"},
                   {d->out, h->out, 4, "out"},
                   {d->half, h->half, 2, "half"},
                   {d->relu, h->relu, 2, "relu"}};
    for (int k = 0; k < 5; ++k) {
        void *got = copy_to_host(results[k].device, GRAPH_N * results[k].size);
        char what[96];
        snprintf(what, sizeof what, "%s after %d %s", results[k].name, runs, how);
        assert_bytes_equal(got, results[k].expected, GRAPH_N * results[k].size, results[k].size, what);
        free(got);
    }
}

/* The 14 entry points captured in global mode into one graph, each into its own output (checked
 * poisoned after the capture), replayed three times and checked against the reference. */
static void graph_entries(ew_handle_t handle)
{
    enum { ROWS = 37, COLS = 211, N = ROWS * COLS, OUT_BYTES = (N + COLS) * 4, REPLAYS = 3 };
    int32_t *values = host_alloc(2 * N * 4);
    uint64_t random_state = 0x6E47;
    for (int i = 0; i < 2 * N; ++i)
        values[i] = (int32_t)random_in(&random_state, -3000, 3000);
    float *a = device_from_ints(EW_F32, values, N), *b = device_from_ints(EW_F32, values + N, N);
    float *host_a = host_alloc(N * 4), *host_b = host_alloc(N * 4);
    ref_cast(EW_F32, EW_I32, N, host_a, values);
    ref_cast(EW_F32, EW_I32, N, host_b, values + N);
    ew_kernel_t kernel = create_entry_kernel(handle);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    void *outs[ENTRY_POINTS];
    entry_args_t args[ENTRY_POINTS];
    for (int k = 0; k < ENTRY_POINTS; ++k) { /* run once first, as one warms up before capturing */
        outs[k] = device_alloc(OUT_BYTES);
        args[k] = (entry_args_t){handle, kernel, ROWS, COLS, outs[k], a, b, stream};
        verify_entry(k, &args[k], host_a, host_b);
        CUDA_OK(cudaMemset(outs[k], POISON, OUT_BYTES));
    }
    CUDA_OK(cudaDeviceSynchronize());

    ew_status_t status[ENTRY_POINTS];
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < ENTRY_POINTS; ++k)
        status[k] = entries[k].call(&args[k]);
    cudaGraph_t graph = NULL;
    cudaError_t end_capture = cudaStreamEndCapture(stream, &graph);
    for (int k = 0; k < ENTRY_POINTS; ++k)
        if (status[k] != EW_SUCCESS)
            fail_msg("%s during capture: %s", entries[k].name, ew_status_string(status[k]));
    CUDA_OK(end_capture);
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int k = 0; k < ENTRY_POINTS; ++k) {
        void *got = copy_to_host(outs[k], OUT_BYTES);
        assert_all_bytes(got, OUT_BYTES, POISON, entries[k].name); /* capturing runs nothing */
        free(got);
    }
    for (int r = 0; r < REPLAYS; ++r)
        CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    for (int k = 0; k < ENTRY_POINTS; ++k)
        check_entry_output(k, &args[k], host_a, host_b);
    printf("graph: the %d entry points captured, replayed %d times, verified\n", ENTRY_POINTS, REPLAYS);

    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaStreamDestroy(stream));
    for (int k = 0; k < ENTRY_POINTS; ++k)
        CUDA_OK(cudaFree(outs[k]));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    EW_OK(ew_kernel_destroy(kernel));
    free(values);
    free(host_a);
    free(host_b);
}

static void graph_replay(void **state)
{
    (void)state;
    ew_handle_t handle = create_handle(0);
    graph_host_t h = {host_alloc(GRAPH_N * 4), host_alloc(GRAPH_N * 4), host_alloc(GRAPH_N * 4),
                      host_alloc(GRAPH_N * 4), host_alloc(GRAPH_N * 4), host_alloc(GRAPH_N * 4),
                      host_alloc(GRAPH_N * 2), host_alloc(GRAPH_N * 2)};
    uint64_t random_state = 0x9A4F;
    for (int i = 0; i < GRAPH_N; ++i) {
        /* Some accumulators start just below INT32_MAX, so the replays make them wrap. */
        h.acc0[i] = i % 97 == 0 ? INT32_MAX - (int32_t)(i % 3001)
                                : (int32_t)random_in(&random_state, -(1 << 24), 1 << 24);
        h.inc[i] = (int32_t)random_in(&random_state, 1, 7);
        h.base[i] = (float)random_in(&random_state, -4000, 4000) / 8.0f;
    }
    graph_device_t d = {device_alloc(GRAPH_N * 4), device_alloc(GRAPH_N * 4), device_alloc(GRAPH_N * 4),
                        device_alloc(GRAPH_N * 4), device_alloc(GRAPH_N * 4), device_alloc(GRAPH_N * 2),
                        device_alloc(GRAPH_N * 2)};
    CUDA_OK(cudaMemcpy(d.inc, h.inc, GRAPH_N * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d.base, h.base, GRAPH_N * 4, cudaMemcpyHostToDevice));
    cudaStream_t capture_stream, replay_stream;
    CUDA_OK(cudaStreamCreateWithFlags(&capture_stream, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamCreateWithFlags(&replay_stream, cudaStreamNonBlocking));
    ew_status_t status[GRAPH_CALLS];

    /* The chain once without a graph, as one warms up before capturing (kernels get loaded). */
    graph_reset(&h, &d);
    graph_enqueue(handle, &d, capture_stream, status);
    graph_check_status(status, "run directly");
    CUDA_OK(cudaStreamSynchronize(capture_stream));
    graph_verify(1, &h, &d, "direct run");
    graph_reset(&h, &d);

    /* Global mode: any synchronizing or otherwise capture-unsafe CUDA call in the library breaks it. */
    CUDA_OK(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeGlobal));
    graph_enqueue(handle, &d, capture_stream, status);
    cudaGraph_t graph = NULL;
    cudaError_t end_capture = cudaStreamEndCapture(capture_stream, &graph);
    graph_check_status(status, "during capture");
    CUDA_OK(end_capture);
    size_t nodes = 0;
    CUDA_OK(cudaGraphGetNodes(graph, NULL, &nodes));
    if (nodes < GRAPH_CALLS)
        fail_msg("the graph holds %zu nodes for %d calls", nodes, GRAPH_CALLS);
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    /* Capturing runs nothing: acc is still acc0 and every output still poisoned. */
    void *got = copy_to_host(d.acc, GRAPH_N * 4);
    assert_bytes_equal(got, h.acc0, GRAPH_N * 4, 4, "acc after capture");
    free(got);
    const void *outputs[] = {d.accf, d.out, d.half, d.relu};
    const size_t output_bytes[] = {GRAPH_N * 4, GRAPH_N * 4, GRAPH_N * 2, GRAPH_N * 2};
    for (int k = 0; k < 4; ++k) {
        got = copy_to_host(outputs[k], output_bytes[k]);
        assert_all_bytes(got, output_bytes[k], POISON, "an output after capture");
        free(got);
    }

    int replays = small_scale ? 100 : 1000;
    const int checkpoints[] = {1, 2, replays / 2, replays};
    int next_checkpoint = 0;
    double t0 = now_seconds();
    for (int r = 1; r <= replays; ++r) {
        CUDA_OK(cudaGraphLaunch(exec, replay_stream));
        if (r == checkpoints[next_checkpoint]) {
            ++next_checkpoint;
            CUDA_OK(cudaStreamSynchronize(replay_stream));
            graph_verify(r, &h, &d, "replays");
        }
    }
    printf("graph: %zu nodes from %d calls, %d replays, verified after 1, 2, %d and %d (%.2f s)\n", nodes,
           GRAPH_CALLS, replays, replays / 2, replays, now_seconds() - t0);

    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaStreamDestroy(capture_stream));
    CUDA_OK(cudaStreamDestroy(replay_stream));
    void *device_buffers[] = {d.acc, d.inc, d.base, d.accf, d.out, d.half, d.relu};
    for (int k = 0; k < 7; ++k)
        CUDA_OK(cudaFree(device_buffers[k]));
    void *host_buffers[] = {h.acc0, h.inc, h.acc, h.base, h.accf, h.out, h.half, h.relu};
    for (int k = 0; k < 8; ++k)
        free(host_buffers[k]);
    graph_entries(handle);
    EW_OK(ew_handle_destroy(handle));
}

/* ---- two GPUs: a handle per device, used at once; the wrong current device is refused ---- */

enum { TWO_GPU_N = (1 << 20) + 3, TWO_GPU_CALLS = 2000 };

typedef struct {
    ew_handle_t handle;
    int device, calls, failed;
    char failure[512];
} device_worker_t;

/* acc += inc in place, calls times, then half = (f16)acc: exact in f32, so the result is a formula. */
static void *device_worker(void *argument)
{
    device_worker_t *w = argument;
    float *host_acc = NULL, *host_inc = NULL, *got = NULL, *d_acc = NULL, *d_inc = NULL;
    uint16_t *d_half = NULL, *got_half = NULL, *expected_half = NULL;
    cudaStream_t stream = NULL;
    size_t bytes = (size_t)TWO_GPU_N * 4;
    cudaError_t error = cudaSetDevice(w->device);
    if (error == cudaSuccess)
        error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (error == cudaSuccess)
        error = cudaMalloc((void **)&d_acc, bytes);
    if (error == cudaSuccess)
        error = cudaMalloc((void **)&d_inc, bytes);
    if (error == cudaSuccess)
        error = cudaMalloc((void **)&d_half, bytes / 2);
    WORKER_CHECK(w, error == cudaSuccess, "device %d setup: %s", w->device, cudaGetErrorName(error));
    host_acc = malloc(bytes), host_inc = malloc(bytes), got = malloc(bytes);
    got_half = malloc(bytes / 2), expected_half = malloc(bytes / 2);
    WORKER_CHECK(w, host_acc && host_inc && got && got_half && expected_half, "out of host memory");
    uint64_t random_state = 0xD0 + (uint64_t)w->device;
    for (int i = 0; i < TWO_GPU_N; ++i) {
        host_acc[i] = (float)random_in(&random_state, -(1 << 20), 1 << 20);
        host_inc[i] = (float)random_in(&random_state, 1, 7);
    }
    error = cudaMemcpy(d_acc, host_acc, bytes, cudaMemcpyHostToDevice);
    if (error == cudaSuccess)
        error = cudaMemcpy(d_inc, host_inc, bytes, cudaMemcpyHostToDevice);
    if (error == cudaSuccess)
        error = cudaMemset(d_half, POISON, bytes / 2);
    if (error == cudaSuccess) /* the non-blocking stream does not wait for the legacy stream's poison */
        error = cudaDeviceSynchronize();
    WORKER_CHECK(w, error == cudaSuccess, "device %d upload: %s", w->device, cudaGetErrorName(error));
    for (int k = 0; k < w->calls; ++k) {
        ew_status_t status = ew_binary(w->handle, EW_OP_ADD, EW_F32, TWO_GPU_N, d_acc, d_acc, d_inc, stream);
        WORKER_CHECK(w, status == EW_SUCCESS, "device %d call %d: %s: %s", w->device, k,
                     ew_status_string(status), ew_get_last_error_message());
    }
    ew_status_t status = ew_cast(w->handle, EW_F16, EW_F32, TWO_GPU_N, d_half, d_acc, stream);
    WORKER_CHECK(w, status == EW_SUCCESS, "device %d cast: %s", w->device, ew_status_string(status));
    error = cudaMemcpyAsync(got, d_acc, bytes, cudaMemcpyDeviceToHost, stream);
    if (error == cudaSuccess)
        error = cudaMemcpyAsync(got_half, d_half, bytes / 2, cudaMemcpyDeviceToHost, stream);
    if (error == cudaSuccess)
        error = cudaStreamSynchronize(stream);
    WORKER_CHECK(w, error == cudaSuccess, "device %d results: %s", w->device, cudaGetErrorName(error));
    for (int i = 0; i < TWO_GPU_N; ++i) {
        float expected = host_acc[i] + (float)w->calls * host_inc[i]; /* all integers below 2^24: exact */
        WORKER_CHECK(w, got[i] == expected, "device %d element %d: got %.1f, expected %.1f", w->device, i,
                     got[i], expected);
    }
    ref_cast(EW_F16, EW_F32, TWO_GPU_N, expected_half, got);
    WORKER_CHECK(w, memcmp(got_half, expected_half, bytes / 2) == 0, "device %d: the f16 cast differs",
                 w->device);
done:
    if (stream != NULL)
        cudaStreamDestroy(stream);
    cudaFree(d_acc);
    cudaFree(d_inc);
    cudaFree(d_half);
    free(host_acc);
    free(host_inc);
    free(got);
    free(got_half);
    free(expected_half);
    return NULL;
}

/* With device `other` current, every call on the handle of `device` must be refused, change no
 * current device, and write nothing to device `device`'s buffers. */
static void check_device_mismatch(ew_handle_t handle, int device, int other)
{
    enum { N = 4099 };
    CUDA_OK(cudaSetDevice(device));
    float *in = device_alloc(N * 4), *out = device_alloc(N * 8);
    CUDA_OK(cudaMemset(in, 0x3C, N * 4));
    CUDA_OK(cudaMemset(out, POISON, N * 8));
    CUDA_OK(cudaDeviceSynchronize());
    ew_kernel_t kernel = create_entry_kernel(handle);
    CUDA_OK(cudaSetDevice(other));
    const char *message = "";
    const entry_args_t args = {handle, kernel, 17, 241, out, in, in, NULL}; /* 4097 elements */
    for (int k = 0; k < ENTRY_POINTS; ++k) {
        ew_status_t status = entries[k].call(&args);
        message = ew_get_last_error_message();
        if (status != EW_ERROR_DEVICE_MISMATCH)
            fail_msg("%s on the handle of device %d with device %d current: %s (\"%s\"), expected "
                     "EW_ERROR_DEVICE_MISMATCH",
                     entries[k].name, device, other, ew_status_string(status), message);
    }
    printf("device mismatch (handle %d, current %d): \"%s\"\n", device, other, message);
    assert_true(message[0] != '\0');
    int current = -1;
    CUDA_OK(cudaGetDevice(&current));
    assert_int_equal(current, other);
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaSetDevice(device));
    CUDA_OK(cudaDeviceSynchronize());
    void *after = copy_to_host(out, N * 8);
    assert_all_bytes(after, N * 8, POISON, "out after refused calls (nothing may be launched)");
    free(after);
    CUDA_OK(cudaFree(in));
    CUDA_OK(cudaFree(out));
    EW_OK(ew_kernel_destroy(kernel));
}

static void two_gpus(void **state)
{
    (void)state;
    if (device_count < 2)
        skip_part(GU_SKIP_ONE_GPU, "two_gpus needs 2 GPUs, %d visible", device_count);
    ew_handle_t handles[2] = {create_handle(0), create_handle(1)};
    device_worker_t workers[2];
    pthread_t threads[2];
    int calls = small_scale ? TWO_GPU_CALLS / 10 : TWO_GPU_CALLS;
    for (int d = 0; d < 2; ++d) {
        workers[d] = (device_worker_t){.handle = handles[d], .device = d, .calls = calls};
        assert_int_equal(pthread_create(&threads[d], NULL, device_worker, &workers[d]), 0);
    }
    for (int d = 0; d < 2; ++d)
        pthread_join(threads[d], NULL);
    for (int d = 0; d < 2; ++d)
        if (workers[d].failed)
            fail_msg("%s", workers[d].failure);
    printf("two GPUs: %d calls per device from two threads at once, verified\n", calls);
    check_device_mismatch(handles[1], 1, 0);
    check_device_mismatch(handles[0], 0, 1);
    CUDA_OK(cudaSetDevice(0));
    EW_OK(ew_handle_destroy(handles[0]));
    EW_OK(ew_handle_destroy(handles[1]));
}

/* ---- sticky errors: the caller's own kernel faults the context (in a child process) ---- */

static int sticky_failures;

static void sticky_expect(int ok, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, ok ? "sticky child: ok: " : "sticky child: FAILED: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    sticky_failures += !ok;
}

/* Runs in a fresh process (exec'd by sticky_errors): exit 0 when every check holds, anything else when
 * not (77 if it saw no GPU, which the parent, having seen one, counts as a failure). */
static int sticky_errors_child(void)
{
    enum { N = 4096 };
    gu_device_count_or_exit("sticky-error child");
    ew_handle_t handle = NULL;
    ew_status_t status = ew_handle_create(0, &handle);
    if (status != EW_SUCCESS) {
        fprintf(stderr, "sticky child: ew_handle_create: %s\n", ew_status_string(status));
        return 2;
    }
    cudaStream_t stream = NULL;
    float *a = NULL, *b = NULL, *out = NULL;
    if (cudaStreamCreate(&stream) != cudaSuccess || cudaMalloc((void **)&a, N * 4) != cudaSuccess ||
        cudaMalloc((void **)&b, N * 4) != cudaSuccess || cudaMalloc((void **)&out, N * 8) != cudaSuccess ||
        cudaMemset(a, 0x3C, N * 4) != cudaSuccess || cudaMemset(b, 0x41, N * 4) != cudaSuccess) {
        fprintf(stderr, "sticky child: setup failed\n");
        return 3;
    }
    /* Every entry point once while healthy: the kernel's strided program is loaded before the fault. */
    const ew_dtype_t in_dtypes[2] = {EW_F32, EW_F32};
    ew_kernel_t kernel = NULL;
    status = ew_kernel_create(handle, ENTRY_KERNEL_SOURCE, EW_F32, 2, in_dtypes, 1, &kernel);
    if (status != EW_SUCCESS) {
        fprintf(stderr, "sticky child: ew_kernel_create: %s: %s\n", ew_status_string(status),
                ew_get_last_error_message());
        return 4;
    }
    entry_args_t args = {handle, kernel, 16, 256, out, a, b, stream}; /* N elements */
    for (int k = 0; k < ENTRY_POINTS; ++k)
        if ((status = entries[k].call(&args)) != EW_SUCCESS) {
            fprintf(stderr, "sticky child: the healthy %s failed: %s: %s\n", entries[k].name,
                    ew_status_string(status), ew_get_last_error_message());
            return 4;
        }
    cudaError_t error = cudaStreamSynchronize(stream);
    if (error != cudaSuccess) {
        fprintf(stderr, "sticky child: the healthy calls failed: %s\n", cudaGetErrorName(error));
        return 4;
    }

    /* The caller's own kernel faults; the context is now unusable for everyone. */
    error = ewt_launch_faulting_kernel(stream);
    cudaError_t fault = cudaDeviceSynchronize();
    sticky_expect(error == cudaSuccess && fault != cudaSuccess, "the faulting kernel: launch %s, then %s",
                  cudaGetErrorName(error), cudaGetErrorName(fault));
    if (fault == cudaSuccess)
        return 5;
    const char *fault_name = cudaGetErrorName(fault);
    /* The kernel entries report the driver's error (cuLaunchKernelEx): its name, with the same code. */
    char fault_code[32];
    snprintf(fault_code, sizeof fault_code, "(%d)", (int)fault);

    cudaStream_t streams[2] = {stream, NULL};
    for (int s = 0; s < 2; ++s)
        for (int k = 0; k < ENTRY_POINTS; ++k) {
            args.stream = streams[s];
            status = entries[k].call(&args);
            const char *message = ew_get_last_error_message();
            sticky_expect(status == EW_ERROR_CUDA &&
                              (strstr(message, fault_name) != NULL || strstr(message, fault_code) != NULL),
                          "%s on the %s stream: %s, \"%s\" (expected EW_ERROR_CUDA naming %s %s)",
                          entries[k].name, s == 0 ? "caller's" : "default", ew_status_string(status), message,
                          fault_name, fault_code);
        }

    /* A new handle: either refused with the CUDA error, or made, and then its calls are refused. */
    ew_handle_t second = NULL;
    status = ew_handle_create(0, &second);
    if (status == EW_SUCCESS) {
        status = ew_binary(second, EW_OP_ADD, EW_F32, N, out, a, b, stream);
        sticky_expect(status == EW_ERROR_CUDA && strstr(ew_get_last_error_message(), fault_name) != NULL,
                      "a handle made after the fault: ew_binary: %s, \"%s\"", ew_status_string(status),
                      ew_get_last_error_message());
        sticky_expect(ew_handle_destroy(second) == EW_SUCCESS, "destroying the handle made after the fault");
    } else {
        sticky_expect(status == EW_ERROR_CUDA && strstr(ew_get_last_error_message(), fault_name) != NULL,
                      "ew_handle_create after the fault: %s, \"%s\"", ew_status_string(status),
                      ew_get_last_error_message());
    }

    /* Entry points that need no CUDA keep answering. */
    int value = -1;
    sticky_expect(ew_handle_get_device(handle, &value) == EW_SUCCESS && value == 0, "ew_handle_get_device");
    sticky_expect(ew_handle_get_sm_count(handle, &value) == EW_SUCCESS && value > 0,
                  "ew_handle_get_sm_count");
    sticky_expect(ew_handle_get_max_threads_per_sm(handle, &value) == EW_SUCCESS && value > 0,
                  "ew_handle_get_max_threads_per_sm");
    sticky_expect(ew_get_version() == EW_VERSION, "ew_get_version");
    sticky_expect(ew_is_supported(EW_OP_ADD, EW_F32, EW_F32) == 1, "ew_is_supported");
    sticky_expect(strcmp(ew_status_string(EW_ERROR_CUDA), "EW_ERROR_CUDA") == 0, "ew_status_string");
    sticky_expect(ew_dtype_size(EW_F16) == 2 && ew_dtype_name(EW_F16)[0] != '\0',
                  "ew_dtype_size, ew_dtype_name");
    sticky_expect(ew_binary(handle, EW_OP_ADD, EW_F32, 0, NULL, NULL, NULL, stream) == EW_SUCCESS,
                  "n = 0 launches nothing and succeeds");
    sticky_expect(ew_kernel_destroy(kernel) == EW_SUCCESS, "ew_kernel_destroy");
    sticky_expect(ew_handle_destroy(handle) == EW_SUCCESS, "ew_handle_destroy");
    fprintf(stderr, "sticky child: %d failed checks (fault: %s)\n", sticky_failures, fault_name);
    return sticky_failures == 0 ? 0 : 1;
}

static void sticky_errors(void **state)
{
    (void)state;
    if (cuda_tool_in_process() != NULL)
        skip_part(GU_SKIP,
                  "sticky_errors faults the context on purpose, which a CUDA tool in the process (%s) would "
                  "report",
                  cuda_tool_in_process());
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        /* A fresh image: CUDA cannot be used in a plain fork of a process that already initialised it. */
        execl("/proc/self/exe", "test_reliability_gpu", STICKY_CHILD_FLAG, (char *)NULL);
        _exit(126);
    }
    int wait_status = 0;
    while (waitpid(child, &wait_status, 0) < 0)
        if (errno != EINTR)
            fail_msg("waitpid: %s", strerror(errno));
    if (WIFSIGNALED(wait_status))
        fail_msg("the sticky-error child crashed: signal %d (%s)", WTERMSIG(wait_status),
                 strsignal(WTERMSIG(wait_status)));
    assert_true(WIFEXITED(wait_status));
    if (WEXITSTATUS(wait_status) == 77)
        fail_msg("the sticky-error child saw no GPU, though this process has %d", device_count);
    if (WEXITSTATUS(wait_status) != 0)
        fail_msg("the sticky-error child exited with %d; its lines above say which check failed",
                 WEXITSTATUS(wait_status));
    printf("sticky errors: the child's checks all held after the context fault\n");
}

/* ---- pointer-check mode: EW_CHECK_POINTERS=1 at ew_handle_create ---- */

enum { CHECK_N = 1 << 20 /* 4 MiB of f32: a whole number of allocation pages */, CHECK_TAIL = 100 };

static void expect_refused(ew_status_t status, const char *what)
{
    const char *message = ew_get_last_error_message();
    if (status != EW_ERROR_INVALID_VALUE)
        fail_msg("pointer check, %s: %s (\"%s\"), expected EW_ERROR_INVALID_VALUE", what,
                 ew_status_string(status), message);
    if (message[0] == '\0')
        fail_msg("pointer check, %s: refused without a message", what);
    printf("pointer check refuses %s: \"%s\"\n", what, message);
}

/* The 14 entry points on the checked handle: a valid call computes (against the reference); host
 * memory as out or a, and out or a running one element past the end of its allocation, are refused
 * with nothing written anywhere. */
static void pointer_check_entries(ew_handle_t checked)
{
    enum { ROWS = 32, COLS = 128, N = ROWS * COLS };
    int32_t *values = host_alloc(N * 4);
    uint64_t random_state = 0x9C14;
    for (int i = 0; i < N; ++i)
        values[i] = (int32_t)random_in(&random_state, -5000, 5000);
    float *a = device_from_ints(EW_F32, values, N), *b = device_from_ints(EW_F32, values, N);
    float *host_a = host_alloc(N * 4), *host_out = host_alloc((N + COLS) * 4);
    ref_cast(EW_F32, EW_I32, N, host_a, values);
    float *out = device_alloc((N + COLS) * 4), *small_out = device_alloc(N * 4),
          *small_in = device_alloc(N * 4);
    ew_kernel_t kernel = create_entry_kernel(checked);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int k = 0; k < ENTRY_POINTS; ++k) {
        const entry_args_t valid = {checked, kernel, ROWS, COLS, out, a, b, stream};
        verify_entry(k, &valid, host_a, host_a);

        const size_t size = ew_dtype_size(entries[k].out_dtype);
        CUDA_OK(cudaMemset(small_out, POISON, N * 4));
        CUDA_OK(cudaMemset(out, POISON, (N + COLS) * 4));
        memset(host_out, POISON, (N + COLS) * 4);
        CUDA_OK(cudaDeviceSynchronize());
        const struct {
            void *out;
            const float *a;
            const char *what;
        } bad[] = {
            {host_out, a, "a host out (malloc)"},
            {out, host_a, "a host a (malloc)"},
            {(uint8_t *)small_out + N * 4 - (size_t)(N - 1) * size, a, "out one element past its allocation"},
            {out, small_in + 1, "a one element past its allocation"},
        };
        for (size_t c = 0; c < sizeof bad / sizeof bad[0]; ++c) {
            const entry_args_t args = {checked, kernel, ROWS, COLS, bad[c].out, bad[c].a, b, stream};
            char what[160];
            snprintf(what, sizeof what, "%s: %s", entries[k].name, bad[c].what);
            expect_refused(entries[k].call(&args), what);
        }
        CUDA_OK(cudaDeviceSynchronize()); /* nothing faulted */
        void *got = copy_to_host(small_out, N * 4);
        assert_all_bytes(got, N * 4, POISON, entries[k].name);
        free(got);
        got = copy_to_host(out, (N + COLS) * 4);
        assert_all_bytes(got, (N + COLS) * 4, POISON, entries[k].name);
        free(got);
        assert_all_bytes(host_out, (N + COLS) * 4, POISON, entries[k].name);
    }
    CUDA_OK(cudaStreamDestroy(stream));
    EW_OK(ew_kernel_destroy(kernel));
    void *device_buffers[] = {a, b, out, small_out, small_in};
    for (int k = 0; k < 5; ++k)
        CUDA_OK(cudaFree(device_buffers[k]));
    free(values);
    free(host_a);
    free(host_out);
}

/* Host time per call of a small ew_binary, over many calls, in microseconds. */
static double microseconds_per_call(ew_handle_t handle, float *out, const float *a, const float *b,
                                    cudaStream_t stream, int batches)
{
    enum { BATCH = 500, N = 256 };
    double total = 0;
    for (int k = 0; k < batches; ++k) {
        CUDA_OK(cudaStreamSynchronize(stream));
        double t0 = now_seconds();
        for (int i = 0; i < BATCH; ++i)
            if (ew_binary(handle, EW_OP_ADD, EW_F32, N, out, a, b, stream) != EW_SUCCESS)
                fail_msg("timed call: %s", ew_get_last_error_message());
        total += now_seconds() - t0;
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    return 1e6 * total / ((double)batches * BATCH);
}

static void pointer_check(void **state)
{
    (void)state;
    assert_int_equal(setenv("EW_CHECK_POINTERS", "1", 1), 0);
    ew_handle_t checked = create_handle(0);
    assert_int_equal(unsetenv("EW_CHECK_POINTERS"), 0);
    ew_handle_t plain = create_handle(0);

    int32_t *values = host_alloc(CHECK_N * 4);
    uint64_t random_state = 0x9C;
    for (int i = 0; i < CHECK_N; ++i)
        values[i] = (int32_t)random_in(&random_state, -5000, 5000);
    float *a = device_from_ints(EW_F32, values, CHECK_N), *b = device_from_ints(EW_F32, values, CHECK_N);
    float *host_a = host_alloc(CHECK_N * 4), *expected = host_alloc(CHECK_N * 4);
    ref_cast(EW_F32, EW_I32, CHECK_N, host_a, values);
    ref_binary(EW_OP_ADD, EW_F32, CHECK_N, expected, host_a, host_a);
    float *out = device_alloc(CHECK_N * 4), *big_out = device_alloc(2 * CHECK_N * 4);
    float *big_in = device_from_ints(EW_F32, values, CHECK_N); /* same size as a, used whole below */

    /* Valid calls pass the checks and compute: the whole allocation, an interior range, and a range
     * that ends exactly at the end of its allocation. */
    CUDA_OK(cudaMemset(out, POISON, CHECK_N * 4));
    EW_OK(ew_binary(checked, EW_OP_ADD, EW_F32, CHECK_N, out, a, b, NULL));
    EW_OK(ew_binary(checked, EW_OP_ADD, EW_F32, CHECK_N - 1000, out + 1000, a + 1000, b + 1000, NULL));
    EW_OK(ew_binary(checked, EW_OP_ADD, EW_F32, CHECK_TAIL, out + CHECK_N - CHECK_TAIL,
                    a + CHECK_N - CHECK_TAIL, b + CHECK_N - CHECK_TAIL, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    float *got = copy_to_host(out, CHECK_N * 4);
    assert_bytes_equal(got, expected, CHECK_N * 4, 4, "checked handle, valid call");
    free(got);

    /* Host memory passed by mistake, in each position. */
    float *host_out = host_alloc(CHECK_N * 4);
    memset(host_out, POISON, CHECK_N * 4);
    CUDA_OK(cudaMemset(out, POISON, CHECK_N * 4));
    expect_refused(ew_binary(checked, EW_OP_ADD, EW_F32, 1024, host_out, a, b, NULL), "a host out (malloc)");
    expect_refused(ew_binary(checked, EW_OP_ADD, EW_F32, 1024, out, host_a, b, NULL), "a host a (malloc)");
    expect_refused(ew_binary(checked, EW_OP_ADD, EW_F32, 1024, out, a, host_a, NULL), "a host b (malloc)");
    expect_refused(ew_unary(checked, EW_OP_RELU, EW_F32, 1024, out, host_a, NULL), "a host x in ew_unary");
    expect_refused(ew_unary(checked, EW_OP_RELU, EW_F32, 1024, host_out, a, NULL), "a host out in ew_unary");
    expect_refused(ew_cast(checked, EW_F16, EW_F32, 1024, out, host_a, NULL), "a host x in ew_cast");
    expect_refused(ew_scale_add(checked, EW_F32, 2.0, 1024, out, host_a, b, NULL),
                   "a host a in ew_scale_add");

    /* Ranges that run past the end of their allocation by one element, each operand alone. */
    float *tail_a = a + CHECK_N - CHECK_TAIL, *tail_b = b + CHECK_N - CHECK_TAIL;
    expect_refused(ew_binary(checked, EW_OP_ADD, EW_F32, CHECK_TAIL + 1, out + CHECK_N - CHECK_TAIL, big_in,
                             big_in, NULL),
                   "out running one element past its allocation");
    expect_refused(ew_binary(checked, EW_OP_ADD, EW_F32, CHECK_TAIL + 1, big_out, tail_a, big_in, NULL),
                   "a running one element past its allocation");
    expect_refused(ew_binary(checked, EW_OP_ADD, EW_F32, CHECK_TAIL + 1, big_out, big_in, tail_b, NULL),
                   "b running one element past its allocation");
    /* Same element count, wider output: x fits, but n f64 do not fit in the f32-sized allocation. */
    expect_refused(ew_cast(checked, EW_F64, EW_F32, CHECK_N / 2 + 1, out, a, NULL),
                   "a cast whose wider out runs past its allocation");

    CUDA_OK(cudaDeviceSynchronize()); /* the context is healthy: nothing faulted */
    assert_all_bytes(host_out, CHECK_N * 4, POISON, "host out after refused calls");
    got = copy_to_host(out, CHECK_N * 4);
    assert_all_bytes(got, CHECK_N * 4, POISON, "device out after refused calls");
    free(got);

    /* Managed memory is device-accessible: accepted. */
    float *managed_a, *managed_out;
    CUDA_OK(cudaMallocManaged((void **)&managed_a, CHECK_N * 4, cudaMemAttachGlobal));
    CUDA_OK(cudaMallocManaged((void **)&managed_out, CHECK_N * 4, cudaMemAttachGlobal));
    memcpy(managed_a, host_a, CHECK_N * 4);
    memset(managed_out, POISON, CHECK_N * 4);
    EW_OK(ew_binary(checked, EW_OP_ADD, EW_F32, CHECK_N, managed_out, managed_a, b, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    assert_bytes_equal(managed_out, expected, CHECK_N * 4, 4, "checked handle, managed memory");

    /* Memory of another device. */
    if (device_count >= 2) {
        CUDA_OK(cudaSetDevice(1));
        float *other = device_alloc(CHECK_N * 4);
        CUDA_OK(cudaSetDevice(0));
        expect_refused(ew_binary(checked, EW_OP_ADD, EW_F32, 1024, out, other, b, NULL),
                       "an input on device 1");
        expect_refused(ew_binary(checked, EW_OP_ADD, EW_F32, 1024, other, a, b, NULL), "an out on device 1");
        CUDA_OK(cudaDeviceSynchronize());
        CUDA_OK(cudaFree(other));
    } else {
        printf("pointer check: the other-device case needs 2 GPUs (%d visible): not run\n", device_count);
    }

    /* The plain handle still computes the same valid call. */
    CUDA_OK(cudaMemset(out, POISON, CHECK_N * 4));
    EW_OK(ew_binary(plain, EW_OP_ADD, EW_F32, CHECK_N, out, a, b, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    got = copy_to_host(out, CHECK_N * 4);
    assert_bytes_equal(got, expected, CHECK_N * 4, 4, "plain handle, valid call");
    free(got);

    pointer_check_entries(checked);

    /* Cost per call: alternate the two handles so drift hits both alike. */
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int batches = small_scale ? 2 : 20;
    double off = 0, on = 0;
    microseconds_per_call(plain, out, a, b, stream, 2); /* warm-up */
    microseconds_per_call(checked, out, a, b, stream, 2);
    for (int round = 0; round < 5; ++round) {
        off += microseconds_per_call(plain, out, a, b, stream, batches) / 5;
        on += microseconds_per_call(checked, out, a, b, stream, batches) / 5;
    }
    printf("pointer-check cost: %.2f us per call with checks on, %.2f us off: +%.2f us per call "
           "(ew_binary f32, 3 pointers, n = 256, %d calls each)\n",
           on, off, on - off, 5 * batches * 500);
    CUDA_OK(cudaStreamDestroy(stream));

    CUDA_OK(cudaFree(managed_a));
    CUDA_OK(cudaFree(managed_out));
    void *device_buffers[] = {a, b, out, big_out, big_in};
    for (int k = 0; k < 5; ++k)
        CUDA_OK(cudaFree(device_buffers[k]));
    free(values);
    free(host_a);
    free(expected);
    free(host_out);
    EW_OK(ew_handle_destroy(checked));
    EW_OK(ew_handle_destroy(plain));
}

/* ---- no hidden costs: no device memory, no host allocation, no synchronization per call ---- */

enum { COST_N = 65537, COST_CALLS = 1000 };

typedef struct {
    ew_handle_t handle;
    ew_kernel_t kernel;
    cudaStream_t stream;
    float *f32_a, *f32_b, *f32_out;
    uint16_t *f16_a, *f16_out;
    int32_t *i32_a, *i32_out;
} cost_setup_t;

/* A fixed mix of flat calls and the 14 entry points (64 x 1024 elements); returns the number of calls
 * that did not succeed. */
static int run_call_mix(const cost_setup_t *s, int calls)
{
    int failures = 0;
    const entry_args_t args = {s->handle, s->kernel, 64, 1024, s->f32_out, s->f32_a, s->f32_b, s->stream};
    for (int i = 0; i < calls; ++i) {
        ew_status_t status;
        if (i % (5 + ENTRY_POINTS) >= 5) {
            failures += entries[i % (5 + ENTRY_POINTS) - 5].call(&args) != EW_SUCCESS;
            continue;
        }
        switch (i % 5) {
        case 0:
            status =
                ew_binary(s->handle, EW_OP_ADD, EW_F32, COST_N, s->f32_out, s->f32_a, s->f32_b, s->stream);
            break;
        case 1:
            status = ew_unary(s->handle, EW_OP_RELU, EW_F16, COST_N, s->f16_out, s->f16_a, s->stream);
            break;
        case 2: status = ew_cast(s->handle, EW_F16, EW_F32, COST_N, s->f16_out, s->f32_a, s->stream); break;
        case 3:
            status = ew_scale_add(s->handle, EW_F32, 0.5, COST_N, s->f32_out, s->f32_a, s->f32_b, s->stream);
            break;
        default:
            status =
                ew_binary(s->handle, EW_OP_MUL, EW_I32, COST_N, s->i32_out, s->i32_a, s->i32_a, s->stream);
        }
        failures += status != EW_SUCCESS;
    }
    return failures;
}

static void no_hidden_costs(void **state)
{
    (void)state;
    if (cuda_tool_in_process() != NULL)
        skip_part(GU_SKIP,
                  "no_hidden_costs counts memory and allocations, and a CUDA tool in the process (%s) makes "
                  "its own",
                  cuda_tool_in_process());
    int32_t *values = host_alloc(COST_N * 4);
    uint64_t random_state = 0xC057;
    for (int i = 0; i < COST_N; ++i)
        values[i] = (int32_t)random_in(&random_state, -1000, 1000);
    cost_setup_t s = {.handle = create_handle(0)};
    CUDA_OK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    s.f32_a = device_from_ints(EW_F32, values, COST_N);
    s.f32_b = device_from_ints(EW_F32, values, COST_N);
    s.f16_a = device_from_ints(EW_F16, values, COST_N);
    s.i32_a = device_from_ints(EW_I32, values, COST_N);
    s.f32_out = device_alloc(COST_N * 4);
    s.f16_out = device_alloc(COST_N * 2);
    s.i32_out = device_alloc(COST_N * 4);
    s.kernel = create_entry_kernel(s.handle);

    /* Warm-up: the first launch of each kernel may load its module (the user kernel's first strided
     * launch compiles its strided program). */
    assert_int_equal(run_call_mix(&s, COST_CALLS), 0);
    CUDA_OK(cudaStreamSynchronize(s.stream));

    size_t free_before = 0, free_after = 0, total = 0;
    CUDA_OK(cudaMemGetInfo(&free_before, &total));
    assert_int_equal(run_call_mix(&s, COST_CALLS), 0);
    CUDA_OK(cudaStreamSynchronize(s.stream));
    CUDA_OK(cudaMemGetInfo(&free_after, &total));
    printf("device memory free around %d calls: %zu bytes before, %zu after\n", COST_CALLS, free_before,
           free_after);
    assert_int_equal(free_before, free_after);

#if EWT_COUNT_ALLOCATIONS
    long allocations = 0;
    int failures = 0;
    for (int batch = 0; batch < 10; ++batch) {
        /* Synchronize outside the counted window: only the calls themselves are measured. */
        CUDA_OK(cudaStreamSynchronize(s.stream));
        atomic_store(&allocation_count, 0);
        allocation_counting = 1;
        failures += run_call_mix(&s, COST_CALLS / 10);
        allocation_counting = 0;
        allocations += atomic_load(&allocation_count);
    }
    CUDA_OK(cudaStreamSynchronize(s.stream));
    assert_int_equal(failures, 0);
    printf("host allocations (malloc/calloc/realloc/memalign) during %d calls (the 14 entry points among "
           "them): %ld\n",
           COST_CALLS, allocations);
    assert_int_equal(allocations, 0);
    /* The counter itself works: a plain malloc in the window is seen. */
    atomic_store(&allocation_count, 0);
    allocation_counting = 1;
    void *volatile probe = malloc(16);
    allocation_counting = 0;
    free(probe);
    assert_int_equal(atomic_load(&allocation_count), 1);
#else
    printf("host allocation count not run: a sanitizer owns malloc in this build\n");
#endif

    /* No synchronization: a call behind a busy kernel returns while the stream is still busy. */
    CUDA_OK(ewt_launch_spin_kernel(300ull * 1000 * 1000, s.stream));
    double t0 = now_seconds();
    EW_OK(ew_binary(s.handle, EW_OP_ADD, EW_F32, COST_N, s.f32_out, s.f32_a, s.f32_b, s.stream));
    double call_seconds = now_seconds() - t0;
    cudaError_t query = cudaStreamQuery(s.stream);
    CUDA_OK(cudaStreamSynchronize(s.stream));
    printf("a call queued behind a 300 ms kernel returned in %.3f ms; stream then %s\n", 1e3 * call_seconds,
           cudaGetErrorName(query));
    assert_int_equal(query, cudaErrorNotReady);
    assert_true(call_seconds < 0.1);
    (void)cudaGetLastError();

    /* The 14 entry points behind a busy kernel: each returns at once, the stream still busy. */
    const entry_args_t args = {s.handle, s.kernel, 64, 1024, s.f32_out, s.f32_a, s.f32_b, s.stream};
    CUDA_OK(ewt_launch_spin_kernel(300ull * 1000 * 1000, s.stream));
    double slowest = 0;
    for (int k = 0; k < ENTRY_POINTS; ++k) {
        t0 = now_seconds();
        EW_OK(entries[k].call(&args));
        double seconds = now_seconds() - t0;
        if (seconds >= 0.05)
            fail_msg("%s behind a busy kernel took %.3f ms: it waited", entries[k].name, 1e3 * seconds);
        slowest = seconds > slowest ? seconds : slowest;
    }
    query = cudaStreamQuery(s.stream);
    CUDA_OK(cudaStreamSynchronize(s.stream));
    printf("the 14 entry points behind a 300 ms kernel: slowest returned in %.3f ms; stream then %s\n",
           1e3 * slowest, cudaGetErrorName(query));
    assert_int_equal(query, cudaErrorNotReady);
    (void)cudaGetLastError();

    /* And what the mix computed: each entry point against the reference, bit for bit. */
    float *host_a = host_alloc(COST_N * 4), *host_b = host_alloc(COST_N * 4);
    ref_cast(EW_F32, EW_I32, COST_N, host_a, values);
    memcpy(host_b, host_a, COST_N * 4);
    const entry_args_t checked = {s.handle, s.kernel, 63, 1023, s.f32_out, s.f32_a, s.f32_b, s.stream};
    for (int k = 0; k < ENTRY_POINTS; ++k)
        verify_entry(k, &checked, host_a, host_b); /* 63 x 1023 elements and a row of guard: in COST_N */
    free(host_a);
    free(host_b);

    void *buffers[] = {s.f32_a, s.f32_b, s.f16_a, s.i32_a, s.f32_out, s.f16_out, s.i32_out};
    for (int k = 0; k < 7; ++k)
        CUDA_OK(cudaFree(buffers[k]));
    CUDA_OK(cudaStreamDestroy(s.stream));
    free(values);
    EW_OK(ew_kernel_destroy(s.kernel));
    EW_OK(ew_handle_destroy(s.handle));
}

/* ---- recycled values: a destroyed handle or kernel stays refused after its slot is taken again ---- */

/* EW_ERROR_INVALID_HANDLE with a message naming `name`, else the part fails. */
static void expect_dead(ew_status_t status, const char *what, const char *name)
{
    const char *message = ew_get_last_error_message();
    if (status != EW_ERROR_INVALID_HANDLE || strstr(message, name) == NULL)
        fail_msg("%s: %s (\"%s\"), expected EW_ERROR_INVALID_HANDLE naming %s", what,
                 ew_status_string(status), message, name);
}

/* With ew_handle_create and ew_kernel_create on the device: destroy the first object, make a second
 * in its slot (src/abi/registry.h: the last slot freed is taken first), and calls on the first value are
 * refused without launching anything while the second one computes. */
static void recycled_values(void **state)
{
    (void)state;
    enum { N = 4099 };
    int32_t values[N];
    uint64_t random_state = 0x4EC7;
    for (int i = 0; i < N; ++i)
        values[i] = (int32_t)random_in(&random_state, -2000, 2000);
    float *a = device_from_ints(EW_F32, values, N), *b = device_from_ints(EW_F32, values + 1, N - 1);
    float *out = device_alloc(N * 4), *host_a = host_alloc(N * 4), *host_b = host_alloc(N * 4);
    float *expected = host_alloc(N * 4);
    CUDA_OK(cudaMemcpy(host_a, a, N * 4, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(host_b, b, (N - 1) * 4, cudaMemcpyDeviceToHost));

    ew_handle_t h1 = create_handle(0);
    const uint32_t handle_slot = ewi_registry_slot(h1);
    EW_OK(ew_handle_destroy(h1));
    ew_handle_t h2 = create_handle(0);
    if (ewi_registry_slot(h2) != handle_slot || h2 == h1)
        fail_msg("the second handle %p did not take the first's slot %u under a new value (%p)", (void *)h2,
                 handle_slot, (void *)h1);
    CUDA_OK(cudaMemset(out, POISON, N * 4));
    CUDA_OK(cudaDeviceSynchronize());
    expect_dead(ew_binary(h1, EW_OP_ADD, EW_F32, N - 1, out, a, b, NULL), "ew_binary on a destroyed handle",
                "handle");
    expect_dead(ew_handle_destroy(h1), "ew_handle_destroy of a destroyed handle", "handle");
    CUDA_OK(cudaDeviceSynchronize());
    float *got = copy_to_host(out, N * 4);
    assert_all_bytes(got, N * 4, POISON, "out after calls on a destroyed handle");
    free(got);
    EW_OK(ew_binary(h2, EW_OP_ADD, EW_F32, N - 1, out, a, b, NULL)); /* the new handle lives */
    CUDA_OK(cudaDeviceSynchronize());
    got = copy_to_host(out, N * 4);
    ref_binary(EW_OP_ADD, EW_F32, N - 1, expected, host_a, host_b);
    assert_bytes_equal(got, expected, (N - 1) * 4, 4, "ew_binary on the handle in the recycled slot");
    free(got);

    const ew_dtype_t in_dtypes[2] = {EW_F32, EW_F32};
    const char *source = "return ew::add(in0, in1);";
    ew_kernel_t k1 = create_kernel(h2, source, 0), k2 = NULL, k3 = NULL;
    const uint32_t kernel_slot = ewi_registry_slot(k1);
    EW_OK(ew_kernel_destroy(k1));
    EW_OK(ew_kernel_create(h2, source, EW_F32, 2, in_dtypes, 0, &k2));
    if (ewi_registry_slot(k2) != kernel_slot || k2 == k1)
        fail_msg("the second kernel %p did not take the first's slot %u under a new value (%p)", (void *)k2,
                 kernel_slot, (void *)k1);
    const void *inputs[2] = {a, b};
    const int64_t shape[2] = {7, 585}, dense[2] = {585, 1}, transposed[2] = {1, 7}; /* 4095 elements */
    const int64_t *in_strides[2] = {transposed, dense};
    CUDA_OK(cudaMemset(out, POISON, N * 4));
    CUDA_OK(cudaDeviceSynchronize());
    expect_dead(ew_kernel_launch(k1, N - 1, out, inputs, NULL, NULL),
                "ew_kernel_launch of a destroyed kernel", "kernel");
    expect_dead(ew_kernel_launch_strided(k1, 2, shape, out, dense, inputs, in_strides, NULL, NULL),
                "ew_kernel_launch_strided of a destroyed kernel", "kernel");
    expect_dead(ew_kernel_destroy(k1), "ew_kernel_destroy of a destroyed kernel", "kernel");

    /* A kernel whose handle is destroyed and whose handle's slot is taken by a new handle. */
    EW_OK(ew_kernel_create(h2, source, EW_F32, 2, in_dtypes, 0, &k3));
    EW_OK(ew_handle_destroy(h2));
    ew_handle_t h3 = create_handle(0);
    if (ewi_registry_slot(h3) != handle_slot)
        fail_msg("the third handle did not take the slot %u", handle_slot);
    expect_dead(ew_kernel_launch(k3, N - 1, out, inputs, NULL, NULL),
                "ew_kernel_launch on a destroyed handle", "handle");
    expect_dead(ew_kernel_launch_strided(k3, 2, shape, out, dense, inputs, in_strides, NULL, NULL),
                "ew_kernel_launch_strided on a destroyed handle", "handle");
    CUDA_OK(cudaDeviceSynchronize());
    got = copy_to_host(out, N * 4);
    assert_all_bytes(got, N * 4, POISON, "out after launches of destroyed kernels");
    free(got);
    EW_OK(ew_kernel_destroy(k3));

    /* k2 lives on a destroyed handle too: made again on h3, its launches compute. */
    EW_OK(ew_kernel_destroy(k2));
    EW_OK(ew_kernel_create(h3, source, EW_F32, 2, in_dtypes, 0, &k2));
    EW_OK(ew_kernel_launch(k2, N - 1, out, inputs, NULL, NULL));
    CUDA_OK(cudaDeviceSynchronize());
    got = copy_to_host(out, N * 4);
    assert_bytes_equal(got, expected, (N - 1) * 4, 4, "ew_kernel_launch of the kernel in the recycled slot");
    free(got);
    EW_OK(ew_kernel_destroy(k2));
    EW_OK(ew_handle_destroy(h3));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    CUDA_OK(cudaFree(out));
    free(host_a);
    free(host_b);
    free(expected);
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], STICKY_CHILD_FLAG) == 0)
        return sticky_errors_child();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(huge_add_u8),     cmocka_unit_test(huge_cast_i8_f16),
        cmocka_unit_test(concurrency),     cmocka_unit_test(graph_replay),
        cmocka_unit_test(two_gpus),        cmocka_unit_test(sticky_errors),
        cmocka_unit_test(pointer_check),   cmocka_unit_test(no_hidden_costs),
        cmocka_unit_test(recycled_values),
    };
    if (argc > 1) {
        int known = 0;
        for (size_t k = 0; k < sizeof tests / sizeof tests[0]; ++k)
            known |= strcmp(argv[1], tests[k].name) == 0;
        if (!known) {
            fprintf(stderr, "usage: %s [TEST]; TEST is one of:", argv[0]);
            for (size_t k = 0; k < sizeof tests / sizeof tests[0]; ++k)
                fprintf(stderr, " %s", tests[k].name);
            fprintf(stderr, "\n");
            return 2;
        }
        cmocka_set_test_filter(argv[1]);
        running_one_test = 1;
    }
    const char *scale = getenv("EW_TEST_SCALE");
    if (scale != NULL && strcmp(scale, "small") != 0 && strcmp(scale, "full") != 0) {
        fprintf(stderr, "EW_TEST_SCALE=%s: expected small or full\n", scale);
        return 1;
    }
    small_scale = scale != NULL && strcmp(scale, "small") == 0;

    device_count = gu_device_count_or_exit("test_reliability_gpu");
    ew_handle_t probe = NULL;
    ew_status_t status = ew_handle_create(0, &probe);
    if (status != EW_SUCCESS) {
        printf("FAIL: cudaGetDeviceCount found %d device(s), but ew_handle_create(0) returned %s: %s\n",
               device_count, ew_status_string(status), ew_get_last_error_message());
        return 1;
    }
    ew_handle_destroy(probe);
    size_t part_count = sizeof tests / sizeof tests[0];
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* Run one at a time, a part that skipped has exited 77 already. */
    return gu_exit_status("test_reliability_gpu", failed, skipped_parts, part_count);
}
