/* SPDX-License-Identifier: Apache-2.0 */
/* The C ABI's argument checking, run without a GPU (issue 2, "Bad input"): every bad input gives its
 * status and a message naming the argument, before anything reaches the device; n == 0 is a no-op;
 * a fully valid call gets as far as the device check. Also the name/size/status tables, the version,
 * the handle getters and ew_handle_create, the thread-locality of the error message, the scaled
 * casts' device scalars (scale, scale_inv, amax and its mode), and the block-scaled casts'
 * ew_block_scales_shape and refusals (format, dtypes, sizes, options, global_scale, the three buffers'
 * spans and overlaps).
 *
 * The handle comes from ewi_handle_make (no device query). When this machine has a GPU the handle
 * names a device ordinal that does not exist, so a call that passes validation stops at the device
 * check with EW_ERROR_DEVICE_MISMATCH instead of launching on the fake addresses used here. */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "elementwise.h"
#include "abi/api.h" /* ewi_check_scalars */
#include "abi/handle.h"

/* Fake device addresses: never dereferenced, far apart, 256-byte aligned. */
#define ADDR(x) ((void *)(uintptr_t)(x))
#define OUT ADDR(0x100000000000ull)
#define IN_A ADDR(0x200000000000ull)
#define IN_B ADDR(0x300000000000ull)
#define N 1000

static const ew_dtype_t all_dtypes[] = {EW_BOOL, EW_I8,   EW_U8,  EW_I16, EW_I32,    EW_I64,    EW_F16,
                                        EW_BF16, EW_F32, EW_F64, EW_F8E4M3, EW_F8E5M2, EW_F8E8M0};
#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* Element sizes as the issue fixes them, written here independently of the library. */
static size_t size_of(ew_dtype_t dtype)
{
    switch (dtype) {
    case EW_I16:
    case EW_F16:
    case EW_BF16:
        return 2;
    case EW_I32:
    case EW_F32:
        return 4;
    case EW_I64:
    case EW_F64:
        return 8;
    default:
        return 1;
    }
}
static int is_fp8(ew_dtype_t d)
{
    return d == EW_F8E4M3 || d == EW_F8E5M2;
}
/* The dtypes no op but the cast takes: the fp8 formats and e8m0. */
static int cast_only(ew_dtype_t d)
{
    return is_fp8(d) || d == EW_F8E8M0;
}

static int gpu_present;
static int fake_device;          /* 0 without a GPU; an ordinal that does not exist with one */
static const char *no_gpu_error; /* the CUDA error name cudaGetDevice gives here without a GPU */
static ew_handle_t h;            /* ewi_handle_make(fake_device, 132, 2048) */
static char sentinel[512];       /* a message no check expects: proves each failure writes its own */

static void prime(void)
{
    /* Set this thread's message to the sentinel: a negative n on a catalogue entry. */
    ew_status_t status = ew_unary(h, EW_OP_RELU, EW_F32, -424242, OUT, IN_A, NULL);
    (void)status;
}

static int group_setup(void **state)
{
    (void)state;
    int count = 0;
    gpu_present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    int current = -1;
    cudaError_t error = cudaGetDevice(&current);
    no_gpu_error = error == cudaSuccess ? NULL : cudaGetErrorName(error);
    cudaGetLastError();
    fake_device = gpu_present ? count + 7 : 0;
    if (ewi_handle_make(fake_device, 132, 2048, &h) != EW_SUCCESS)
        return -1;
    prime();
    snprintf(sentinel, sizeof sentinel, "%s", ew_get_last_error_message());
    printf("# %s; fake handle for device %d\n", gpu_present ? "GPU present" : "no GPU", fake_device);
    return sentinel[0] == '\0' || strstr(sentinel, "424242") == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return ew_handle_destroy(h) == EW_SUCCESS ? 0 : -1;
}

/* ---- message checks ---- */

static int is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* `word` appears in `text` as a whole word (not inside a longer identifier); case-insensitive. */
static int has_word(const char *text, const char *word)
{
    size_t length = strlen(word);
    for (const char *p = text; *p; ++p) {
        if (strncasecmp(p, word, length) != 0)
            continue;
        int starts = p == text || !is_word_char(p[-1]);
        int ends = !is_word_char(p[length]);
        if (starts && ends)
            return 1;
    }
    return 0;
}

static int contains_nocase(const char *text, const char *part)
{
    size_t length = strlen(part);
    for (const char *p = text; *p; ++p)
        if (strncasecmp(p, part, length) == 0)
            return 1;
    return 0;
}

/* A CUDA API name such as cudaGetDevice or cudaLaunchKernel (not an error name cudaError...). */
static int names_cuda_call(const char *text)
{
    for (const char *p = strstr(text, "cuda"); p; p = strstr(p + 1, "cuda"))
        if (isupper((unsigned char)p[4]) && strncmp(p, "cudaError", 9) != 0)
            return 1;
    return 0;
}

/* Fails the test at file:line unless `got` is `expected` and the message was freshly set and
 * names every word in `words` (NULL-terminated; a leading '~' means a substring instead). */
static void check_failure(const char *file, int line, const char *call, ew_status_t expected, ew_status_t got,
                          const char *const *words)
{
    const char *message = ew_get_last_error_message();
    if (got != expected) {
        int fresh = strcmp(message, sentinel) != 0;
        print_error("%s:%d: %s\n    returned %s, expected %s (message: \"%s\")\n", file, line, call,
                    ew_status_string(got), ew_status_string(expected),
                    fresh ? message : "none set by this call");
        _fail(file, line);
    }
    if (message == NULL || message[0] == '\0' || strcmp(message, sentinel) == 0) {
        print_error("%s:%d: %s\n    returned %s but did not set its own message\n", file, line, call,
                    ew_status_string(got));
        _fail(file, line);
    }
    for (; *words; ++words) {
        int found = (*words)[0] == '~' ? contains_nocase(message, *words + 1) : has_word(message, *words);
        if (!found) {
            print_error("%s:%d: %s\n    message \"%s\" does not name \"%s\"\n", file, line, call, message,
                        *words);
            _fail(file, line);
        }
    }
}

#define EXPECT_FAIL(expected, call, ...)                                                                     \
    check_failure(__FILE__, __LINE__, #call, expected, (prime(), (call)),                                    \
                  (const char *const[]){__VA_ARGS__, NULL})

/* A valid call on the fake handle passes validation and stops at the device: EW_ERROR_CUDA naming the
 * CUDA call and its error without a GPU; EW_ERROR_DEVICE_MISMATCH with one (the handle's device does
 * not exist). Either way nothing is launched. */
static void check_reaches_device(const char *file, int line, const char *call, ew_status_t got)
{
    const char *message = ew_get_last_error_message();
    if (gpu_present) {
        check_failure(file, line, call, EW_ERROR_DEVICE_MISMATCH, got, (const char *const[]){"device", NULL});
        return;
    }
    if (got != EW_ERROR_CUDA && got != EW_ERROR_DEVICE_MISMATCH) {
        print_error(
            "%s:%d: %s\n    returned %s; a valid call without a GPU must stop at the device check with "
            "EW_ERROR_CUDA (message: \"%s\")\n",
            file, line, call, ew_status_string(got), message);
        _fail(file, line);
    }
    if (got == EW_ERROR_DEVICE_MISMATCH) {
        check_failure(file, line, call, EW_ERROR_DEVICE_MISMATCH, got, (const char *const[]){"device", NULL});
        return;
    }
    check_failure(file, line, call, EW_ERROR_CUDA, got, (const char *const[]){NULL});
    if (!names_cuda_call(message) || no_gpu_error == NULL || strstr(message, no_gpu_error) == NULL) {
        print_error("%s:%d: %s\n    message \"%s\" does not name the failing CUDA call and its error %s\n",
                    file, line, call, message, no_gpu_error ? no_gpu_error : "(none)");
        _fail(file, line);
    }
}

#define EXPECT_DEVICE(call) check_reaches_device(__FILE__, __LINE__, #call, (prime(), (call)))

/* ---- version, names, sizes ---- */

static void test_version(void **state)
{
    (void)state;
    assert_int_equal(EW_VERSION, EW_VERSION_MAJOR * 10000 + EW_VERSION_MINOR * 100 + EW_VERSION_PATCH);
    assert_int_equal(EW_VERSION_MAJOR, 1); /* the SONAME libelementwise.so.1 is the ABI contract */
    assert_int_equal(ew_get_version(), EW_VERSION);
}

static void test_status_strings(void **state)
{
    (void)state;
    static const char *const names[] = {"EW_SUCCESS",
                                        "EW_ERROR_INVALID_VALUE",
                                        "EW_ERROR_INVALID_HANDLE",
                                        "EW_ERROR_NOT_SUPPORTED",
                                        "EW_ERROR_DEVICE_MISMATCH",
                                        "EW_ERROR_NO_DEVICE",
                                        "EW_ERROR_CUDA",
                                        "EW_ERROR_OUT_OF_MEMORY"};
    static const ew_status_t values[] = {EW_SUCCESS,
                                         EW_ERROR_INVALID_VALUE,
                                         EW_ERROR_INVALID_HANDLE,
                                         EW_ERROR_NOT_SUPPORTED,
                                         EW_ERROR_DEVICE_MISMATCH,
                                         EW_ERROR_NO_DEVICE,
                                         EW_ERROR_CUDA,
                                         EW_ERROR_OUT_OF_MEMORY};
    for (size_t i = 0; i < COUNT(values); ++i) {
        assert_int_equal(values[i], (int)i); /* the ABI values of the issue */
        const char *text = ew_status_string(values[i]);
        assert_non_null(text);
        assert_string_equal(text, names[i]);
    }
    static const int wild[] = {-1, 8, 9, 100, 1000, INT_MAX, INT_MIN};
    for (size_t i = 0; i < COUNT(wild); ++i) {
        const char *text = ew_status_string((ew_status_t)wild[i]);
        assert_non_null(text);
        assert_true(text[0] != '\0');
        for (size_t k = 0; k < COUNT(names); ++k)
            assert_string_not_equal(text, names[k]);
    }
}

static void test_dtype_names_and_sizes(void **state)
{
    (void)state;
    static const struct {
        ew_dtype_t dtype;
        int value;
        const char *name;
        size_t size;
    } table[] = {
        {EW_BOOL, 1, "bool", 1}, {EW_I8, 2, "i8", 1},        {EW_U8, 3, "u8", 1},
        {EW_I16, 4, "i16", 2},   {EW_I32, 5, "i32", 4},      {EW_I64, 6, "i64", 8},
        {EW_F16, 7, "f16", 2},   {EW_BF16, 8, "bf16", 2},    {EW_F32, 9, "f32", 4},
        {EW_F64, 10, "f64", 8},  {EW_F8E4M3, 11, "e4m3", 1}, {EW_F8E5M2, 12, "e5m2", 1},
        {EW_F8E8M0, 13, "f8e8m0", 1}, {EW_F4E2M1, 14, "f4e2m1", 0}, /* since 1.2 */
    };
    for (size_t i = 0; i < COUNT(table); ++i) {
        assert_int_equal(table[i].dtype, table[i].value);
        const char *name = ew_dtype_name(table[i].dtype);
        assert_non_null(name);
        if (is_fp8(table[i].dtype))
            assert_non_null(strstr(name, table[i].name)); /* the issue leaves the fp8 spelling open */
        else
            assert_string_equal(name, table[i].name);
        assert_int_equal(ew_dtype_size(table[i].dtype), table[i].size);
        /* bits: 8 a byte of size, but e2m1's 4 (its size is 0: narrower than a byte) */
        assert_int_equal(ew_dtype_bits(table[i].dtype), table[i].dtype == EW_F4E2M1 ? 4 : 8 * table[i].size);
        for (size_t k = 0; k < i; ++k)
            assert_string_not_equal(name, ew_dtype_name(table[k].dtype));
    }
    static const int wild[] = {0, 15, 16, -1, 255, 256, 1000, INT_MAX, INT_MIN};
    for (size_t i = 0; i < COUNT(wild); ++i) {
        const char *name = ew_dtype_name((ew_dtype_t)wild[i]);
        assert_non_null(name);
        assert_string_equal(name, "invalid"); /* documented in the header */
        assert_int_equal(ew_dtype_size((ew_dtype_t)wild[i]), 0);
        assert_int_equal(ew_dtype_bits((ew_dtype_t)wild[i]), 0);
    }
}

/* ---- handles ---- */

static void test_null_handle(void **state)
{
    (void)state;
    int value = 0;
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_unary(NULL, EW_OP_RELU, EW_F32, N, OUT, IN_A, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_binary(NULL, EW_OP_ADD, EW_F32, N, OUT, IN_A, IN_B, NULL),
                "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_cast(NULL, EW_F16, EW_F32, N, OUT, IN_A, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_scale_add(NULL, EW_F32, 2.0, N, OUT, IN_A, IN_B, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_handle_get_device(NULL, &value), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_handle_get_sm_count(NULL, &value), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_handle_get_max_threads_per_sm(NULL, &value), "handle");
    /* n == 0 does not excuse a missing handle, nor does a NULL output pointer hide it */
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_unary(NULL, EW_OP_RELU, EW_F32, 0, NULL, NULL, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_binary(NULL, EW_OP_MUL, EW_I8, 0, NULL, NULL, NULL, NULL),
                "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_cast(NULL, EW_BOOL, EW_F64, 0, NULL, NULL, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_scale_add(NULL, EW_I32, 1.0, 0, NULL, NULL, NULL, NULL),
                "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_handle_get_device(NULL, NULL), "handle");
    assert_int_equal(ew_handle_destroy(NULL), EW_SUCCESS);
}

static void test_destroyed_handle(void **state)
{
    (void)state;
    ew_handle_t dead = NULL;
    assert_int_equal(ewi_handle_make(fake_device, 132, 2048, &dead), EW_SUCCESS);
    assert_non_null(dead);
    assert_int_equal(ew_handle_destroy(dead), EW_SUCCESS);
    /* refused as well once another handle takes its slot: test_lifecycle */
    int value = -5;
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_unary(dead, EW_OP_RELU, EW_F32, N, OUT, IN_A, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_binary(dead, EW_OP_ADD, EW_F32, N, OUT, IN_A, IN_B, NULL),
                "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_cast(dead, EW_F16, EW_F32, N, OUT, IN_A, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_scale_add(dead, EW_F32, 2.0, N, OUT, IN_A, IN_B, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_unary(dead, EW_OP_RELU, EW_F32, 0, NULL, NULL, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_handle_get_device(dead, &value), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_handle_get_sm_count(dead, &value), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_handle_get_max_threads_per_sm(dead, &value), "handle");
    assert_int_equal(value, -5);
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_handle_destroy(dead), "handle");
}

static void test_handle_getters(void **state)
{
    (void)state;
    ew_handle_t other = NULL;
    assert_int_equal(ewi_handle_make(3, 46, 1536, &other), EW_SUCCESS);
    int value = -1;
    assert_int_equal(ew_handle_get_device(other, &value), EW_SUCCESS);
    assert_int_equal(value, 3);
    assert_int_equal(ew_handle_get_sm_count(other, &value), EW_SUCCESS);
    assert_int_equal(value, 46);
    assert_int_equal(ew_handle_get_max_threads_per_sm(other, &value), EW_SUCCESS);
    assert_int_equal(value, 1536);
    assert_int_equal(ew_handle_get_sm_count(h, &value), EW_SUCCESS);
    assert_int_equal(value, 132);
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_handle_get_device(other, NULL), "device");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_handle_get_sm_count(other, NULL), "count");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_handle_get_max_threads_per_sm(other, NULL), "threads");
    assert_int_equal(ew_handle_destroy(other), EW_SUCCESS);
}

static void test_handle_create(void **state)
{
    (void)state;
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_handle_create(0, NULL), "handle");
    /* On failure *handle is NULL, so a cleanup path that destroys it is always safe. */
    ew_handle_t failed = (ew_handle_t)ADDR(0xABCD00);
    if (!gpu_present) {
        const int devices[] = {0, 1, -1};
        for (size_t i = 0; i < COUNT(devices); ++i) {
            failed = (ew_handle_t)ADDR(0xABCD00);
            EXPECT_FAIL(EW_ERROR_NO_DEVICE, ew_handle_create(devices[i], &failed), "~device");
            assert_null(failed);
            assert_int_equal(ew_handle_destroy(failed), EW_SUCCESS);
        }
        return;
    }
    int count = 0;
    assert_int_equal(cudaGetDeviceCount(&count), cudaSuccess);
    ew_handle_t real = NULL;
    assert_int_equal(ew_handle_create(0, &real), EW_SUCCESS);
    assert_non_null(real);
    int sm = 0, threads = 0, device = -1, expected_sm = 0, expected_threads = 0;
    assert_int_equal(cudaDeviceGetAttribute(&expected_sm, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
    assert_int_equal(cudaDeviceGetAttribute(&expected_threads, cudaDevAttrMaxThreadsPerMultiProcessor, 0),
                     cudaSuccess);
    assert_int_equal(ew_handle_get_device(real, &device), EW_SUCCESS);
    assert_int_equal(ew_handle_get_sm_count(real, &sm), EW_SUCCESS);
    assert_int_equal(ew_handle_get_max_threads_per_sm(real, &threads), EW_SUCCESS);
    assert_int_equal(device, 0);
    assert_int_equal(sm, expected_sm);
    assert_int_equal(threads, expected_threads);
    assert_int_equal(ew_handle_destroy(real), EW_SUCCESS);
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_handle_create(count, &failed), "device");
    assert_null(failed);
    failed = (ew_handle_t)ADDR(0xABCD00);
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_handle_create(-1, &failed), "device");
    assert_null(failed);
    assert_int_equal(ew_handle_destroy(failed), EW_SUCCESS);
}

/* ---- NOT_SUPPORTED: values outside the enums, pairs outside the catalogue ---- */

static const int wild_values[] = {0, 15, -1, 1000}; /* outside ew_op_t and ew_dtype_t (14: the block dtype) */

static void test_values_outside_enums(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(wild_values); ++i) {
        ew_op_t op = (ew_op_t)wild_values[i];
        ew_dtype_t dt = (ew_dtype_t)wild_values[i];
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, op, EW_F32, N, OUT, IN_A, NULL), "op");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, op, EW_F32, N, OUT, IN_A, IN_B, NULL), "op");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, EW_OP_RELU, dt, N, OUT, IN_A, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_ADD, dt, N, OUT, IN_A, IN_B, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_MUL, dt, N, OUT, IN_A, IN_B, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_cast(h, dt, EW_F32, N, OUT, IN_A, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_cast(h, EW_F32, dt, N, OUT, IN_A, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_cast(h, dt, dt, N, OUT, IN_A, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_scale_add(h, dt, 1.0, N, OUT, IN_A, IN_B, NULL), "dtype");
        /* checked even when there is nothing to do */
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, op, EW_F32, 0, NULL, NULL, NULL), "op");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_cast(h, EW_F32, dt, 0, NULL, NULL, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_scale_add(h, dt, 1.0, 0, NULL, NULL, NULL, NULL), "dtype");
    }
}

static void test_pairs_outside_catalogue(void **state)
{
    (void)state;
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_ADD, EW_F8E4M3, N, OUT, IN_A, IN_B, NULL),
                "~e4m3");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_ADD, EW_F8E5M2, N, OUT, IN_A, IN_B, NULL),
                "~e5m2");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_MUL, EW_F8E4M3, N, OUT, IN_A, IN_B, NULL),
                "~e4m3");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, EW_OP_RELU, EW_BOOL, N, OUT, IN_A, NULL), "bool");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, EW_OP_RELU, EW_F8E5M2, N, OUT, IN_A, NULL), "~e5m2");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_scale_add(h, EW_F8E4M3, 1.0, N, OUT, IN_A, IN_B, NULL), "~e4m3");
    /* ops through the wrong entry point */
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, EW_OP_ADD, EW_F32, N, OUT, IN_A, NULL), "op");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, EW_OP_MUL, EW_F32, N, OUT, IN_A, NULL), "op");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, EW_OP_CAST, EW_F32, N, OUT, IN_A, NULL), "op");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, EW_OP_SCALE_ADD, EW_F32, N, OUT, IN_A, NULL), "op");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_RELU, EW_F32, N, OUT, IN_A, IN_B, NULL), "op");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_CAST, EW_F32, N, OUT, IN_A, IN_B, NULL), "op");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_SCALE_ADD, EW_F32, N, OUT, IN_A, IN_B, NULL),
                "op");
    /* the same with n == 0: the catalogue is checked first */
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_ADD, EW_F8E4M3, 0, NULL, NULL, NULL, NULL),
                "~e4m3");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_RELU, EW_F32, 0, NULL, NULL, NULL, NULL), "op");
}

/* ---- INVALID_VALUE ---- */

static void test_negative_n(void **state)
{
    (void)state;
    static const int64_t bad[] = {-1, -2, -1000, INT32_MIN, INT64_MIN};
    for (size_t i = 0; i < COUNT(bad); ++i) {
        int64_t n = bad[i];
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, EW_F32, n, OUT, IN_A, NULL), "n");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_ADD, EW_I64, n, OUT, IN_A, IN_B, NULL), "n");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_F16, EW_F64, n, OUT, IN_A, NULL), "n");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, EW_BF16, 2.0, n, OUT, IN_A, IN_B, NULL), "n");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, EW_I8, n, NULL, NULL, NULL), "n");
    }
    char text[32];
    snprintf(text, sizeof text, "~%lld", (long long)INT64_MIN); /* the bad value is quoted */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_I8, EW_U8, INT64_MIN, OUT, IN_A, NULL), "n", text);
}

static void test_null_pointers(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(all_dtypes); ++i) {
        ew_dtype_t dt = all_dtypes[i];
        if (!cast_only(dt) && dt != EW_BOOL) {
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, dt, N, NULL, IN_A, NULL), "out",
                        "~null", "n");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, dt, N, OUT, NULL, NULL), "x",
                        "~null");
        }
        if (!cast_only(dt)) {
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_ADD, dt, N, NULL, IN_A, IN_B, NULL), "out",
                        "~null");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_MUL, dt, N, OUT, NULL, IN_B, NULL), "a",
                        "~null");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_ADD, dt, 1, OUT, IN_A, NULL, NULL), "b",
                        "~null", "n");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, dt, 1.0, N, NULL, IN_A, IN_B, NULL), "out",
                        "~null");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, dt, 1.0, N, OUT, NULL, IN_B, NULL), "a",
                        "~null");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, dt, 1.0, N, OUT, IN_A, NULL, NULL), "b",
                        "~null");
        }
        for (size_t k = 0; k < COUNT(all_dtypes); ++k) {
            ew_dtype_t in = all_dtypes[k];
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, dt, in, N, NULL, IN_A, NULL), "out", "~null", "n");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, dt, in, N, OUT, NULL, NULL), "x", "~null");
        }
    }
}

/* Every pointer misaligned to its element size, for every dtype wider than a byte. */
static void test_misaligned_pointers(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(all_dtypes); ++i) {
        ew_dtype_t dt = all_dtypes[i];
        size_t size = size_of(dt);
        for (size_t shift = 1; shift < size; ++shift) {
            char *out = (char *)OUT + shift, *a = (char *)IN_A + shift, *b = (char *)IN_B + shift;
            if (dt != EW_BOOL && !cast_only(dt)) {
                EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, dt, N, out, IN_A, NULL), "out",
                            "~align");
                EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, dt, N, OUT, a, NULL), "x",
                            "~align");
            }
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_ADD, dt, N, out, IN_A, IN_B, NULL), "out",
                        "~align");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_ADD, dt, N, OUT, a, IN_B, NULL), "a",
                        "~align");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_MUL, dt, N, OUT, IN_A, b, NULL), "b",
                        "~align");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, dt, 1.0, N, out, IN_A, IN_B, NULL), "out",
                        "~align");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, dt, 1.0, N, OUT, a, IN_B, NULL), "a",
                        "~align");
            EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, dt, 1.0, N, OUT, IN_A, b, NULL), "b",
                        "~align");
            /* casts: each side is checked against its own element size */
            for (size_t k = 0; k < COUNT(all_dtypes); ++k) {
                ew_dtype_t other = all_dtypes[k];
                EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, dt, other, N, out, IN_A, NULL), "out",
                            "~align");
                EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, other, dt, N, OUT, a, NULL), "x", "~align");
            }
        }
    }
    /* aligned to the element but not to a vector: valid (the library picks a narrower pack) */
    EXPECT_DEVICE(
        ew_binary(h, EW_OP_ADD, EW_F32, N, (char *)OUT + 4, (char *)IN_A + 8, (char *)IN_B + 12, NULL));
    EXPECT_DEVICE(ew_unary(h, EW_OP_RELU, EW_F16, N, (char *)OUT + 2, (char *)IN_A + 6, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_F64, EW_I8, N, (char *)OUT + 8, (char *)IN_A + 3, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_I16, EW_F32, N, (char *)OUT + 2, (char *)IN_A + 4, NULL));
    EXPECT_DEVICE(
        ew_scale_add(h, EW_I64, 3.0, N, (char *)OUT + 8, (char *)IN_A + 24, (char *)IN_B + 40, NULL));
}

static void test_overlaps(void **state)
{
    (void)state;
    char *base = (char *)OUT;
    const int64_t n = 100;
    /* partial overlap, either side, for each input */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, EW_F32, n, base, base + 4, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, EW_F32, n, base + 4, base, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, EW_F32, n, base, base + 4 * n - 4, NULL),
                "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_ADD, EW_I16, n, base, base + 2, IN_B, NULL), "out",
                "a");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_ADD, EW_I16, n, base, IN_A, base + 198, NULL),
                "out", "b");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, EW_F64, 2.0, n, base + 8, base, IN_B, NULL), "out",
                "a");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, EW_F64, 2.0, n, base, IN_A, base + 8, NULL), "out",
                "b");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_I32, EW_F32, n, base, base + 4, NULL), "out", "x");
    /* in place on a, partial on b */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_binary(h, EW_OP_MUL, EW_F32, n, base, base, base + 4, NULL), "out",
                "b");
    /* out inside the input, the input inside out */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_F32, EW_F64, n, base + 80, base, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_F64, EW_F16, n, base, base + 16, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_I8, EW_I64, n, base + 1, base, NULL), "out", "x");
    /* in place with different element sizes: refused in both directions */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_F16, EW_F32, n, base, base, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_F32, EW_F16, n, base, base, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_I8, EW_F64, n, base, base, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_BOOL, EW_BF16, 1, base, base, NULL), "out", "x");
    /* overlapping by a single element at the end of one buffer */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_F16, EW_F32, n, base, base + 2 * n - 4, NULL), "out",
                "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_cast(h, EW_F32, EW_F16, n, base + 4 * n - 4, base + 4 * n - 2 * n, NULL), "out", "x");
    /* exact in place with equal element sizes: allowed up to the device check */
    EXPECT_DEVICE(ew_unary(h, EW_OP_RELU, EW_F32, n, base, base, NULL));
    EXPECT_DEVICE(ew_binary(h, EW_OP_ADD, EW_F16, n, base, base, IN_B, NULL));
    EXPECT_DEVICE(ew_binary(h, EW_OP_ADD, EW_F16, n, base, IN_A, base, NULL));
    EXPECT_DEVICE(ew_binary(h, EW_OP_MUL, EW_I64, n, base, base, base, NULL));
    EXPECT_DEVICE(ew_scale_add(h, EW_U8, 3.0, n, base, base, IN_B, NULL));
    EXPECT_DEVICE(ew_scale_add(h, EW_F32, 0.5, n, base, IN_A, base, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_I32, EW_F32, n, base, base, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_BF16, EW_F16, n, base, base, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_U8, EW_I8, n, base, base, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_F8E4M3, EW_BOOL, n, base, base, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_F64, EW_I64, n, base, base, NULL));
    /* adjacent buffers do not overlap */
    EXPECT_DEVICE(ew_unary(h, EW_OP_RELU, EW_F32, n, base, base + 4 * n, NULL));
    EXPECT_DEVICE(ew_unary(h, EW_OP_RELU, EW_F32, n, base + 4 * n, base, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_F16, EW_F32, n, base, base + 2 * n, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_F32, EW_F16, n, base + 2 * n, base, NULL));
    /* the inputs may overlap each other: only out is written */
    EXPECT_DEVICE(ew_binary(h, EW_OP_ADD, EW_F32, n, OUT, IN_A, (char *)IN_A + 4, NULL));
    EXPECT_DEVICE(ew_scale_add(h, EW_I32, -2.0, n, OUT, IN_A, IN_A, NULL));
}

static void expect_alpha(ew_dtype_t dtype, double alpha, int valid, int line)
{
    char call[128];
    snprintf(call, sizeof call, "ew_scale_add(h, %s, alpha = %.17g, ...)", ew_dtype_name(dtype), alpha);
    prime();
    ew_status_t status = ew_scale_add(h, dtype, alpha, N, OUT, IN_A, IN_B, NULL);
    if (valid)
        check_reaches_device(__FILE__, line, call, status);
    else
        check_failure(__FILE__, line, call, EW_ERROR_INVALID_VALUE, status,
                      (const char *const[]){"alpha", NULL});
}
#define ALPHA_OK(dtype, alpha) expect_alpha(dtype, alpha, 1, __LINE__)
#define ALPHA_BAD(dtype, alpha) expect_alpha(dtype, alpha, 0, __LINE__)

static void test_alpha(void **state)
{
    (void)state;
    const double two63 = 9223372036854775808.0;
    ALPHA_OK(EW_I8, 127);
    ALPHA_BAD(EW_I8, 128);
    ALPHA_OK(EW_I8, -128);
    ALPHA_BAD(EW_I8, -129);
    ALPHA_BAD(EW_I8, 0.5);
    ALPHA_BAD(EW_I8, -0.5);
    ALPHA_BAD(EW_I8, 127.5);
    ALPHA_BAD(EW_I8, NAN);
    ALPHA_BAD(EW_I8, INFINITY);
    ALPHA_BAD(EW_I8, -INFINITY);
    ALPHA_OK(EW_I8, -0.0);
    ALPHA_OK(EW_U8, 255);
    ALPHA_OK(EW_U8, 0);
    ALPHA_BAD(EW_U8, 256);
    /* unsigned: [-max, max], taken modulo 2^8 (as PyTorch takes it) */
    ALPHA_OK(EW_U8, -1);
    ALPHA_OK(EW_U8, -2);
    ALPHA_OK(EW_U8, -255);
    ALPHA_BAD(EW_U8, -256);
    ALPHA_BAD(EW_U8, -2.5);
    ALPHA_BAD(EW_U8, 1e-300);
    ALPHA_OK(EW_I16, 32767);
    ALPHA_OK(EW_I16, -32768);
    ALPHA_BAD(EW_I16, 32768);
    ALPHA_BAD(EW_I16, -32769);
    ALPHA_OK(EW_I32, 2147483647.0);
    ALPHA_OK(EW_I32, -2147483648.0);
    ALPHA_BAD(EW_I32, 2147483648.0);
    ALPHA_BAD(EW_I32, -2147483649.0);
    ALPHA_BAD(EW_I32, 1e300);
    ALPHA_BAD(EW_I64, two63);
    ALPHA_OK(EW_I64, -two63);
    ALPHA_OK(EW_I64, nextafter(two63, 0)); /* 2^63 - 1024, the largest double below 2^63 */
    ALPHA_BAD(EW_I64, nextafter(-two63, -INFINITY));
    ALPHA_BAD(EW_I64, NAN);
    ALPHA_BAD(EW_I64, 2.5);
    ALPHA_OK(EW_BOOL, 0);
    ALPHA_OK(EW_BOOL, 1);
    ALPHA_BAD(EW_BOOL, 2);
    ALPHA_BAD(EW_BOOL, -1);
    ALPHA_BAD(EW_BOOL, 0.5);
    ALPHA_BAD(EW_BOOL, NAN);
    /* floating dtypes take any double, non-finite included */
    static const ew_dtype_t floats[] = {EW_F16, EW_BF16, EW_F32, EW_F64};
    static const double any[] = {0.5, -3.25, 1e300, -1e-300, NAN, INFINITY, -INFINITY, -0.0};
    for (size_t i = 0; i < COUNT(floats); ++i)
        for (size_t k = 0; k < COUNT(any); ++k)
            ALPHA_OK(floats[i], any[k]);
}

/* An alpha that does not fit is bad input whatever n is, as an unknown dtype is (and as in PyTorch,
 * whose add(alpha=0.5) on integer tensors raises for empty tensors too). */
static void test_alpha_checked_when_n_is_zero(void **state)
{
    (void)state;
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, EW_I8, 0.5, 0, NULL, NULL, NULL, NULL), "alpha");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, EW_BOOL, 2.0, 0, NULL, NULL, NULL, NULL), "alpha");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_scale_add(h, EW_I64, NAN, 0, OUT, IN_A, IN_B, NULL), "alpha");
}

/* n == 0: success with NULL pointers, and nothing reaches the device (no GPU needed). */
static void test_n_zero(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(all_dtypes); ++i) {
        ew_dtype_t dt = all_dtypes[i];
        if (dt != EW_BOOL && !cast_only(dt))
            assert_int_equal(ew_unary(h, EW_OP_RELU, dt, 0, NULL, NULL, NULL), EW_SUCCESS);
        if (!cast_only(dt)) {
            assert_int_equal(ew_binary(h, EW_OP_ADD, dt, 0, NULL, NULL, NULL, NULL), EW_SUCCESS);
            assert_int_equal(ew_binary(h, EW_OP_MUL, dt, 0, NULL, NULL, NULL, NULL), EW_SUCCESS);
            assert_int_equal(ew_scale_add(h, dt, 1.0, 0, NULL, NULL, NULL, NULL), EW_SUCCESS);
            assert_int_equal(ew_binary(h, EW_OP_ADD, dt, 0, OUT, IN_A, IN_B, NULL), EW_SUCCESS);
        }
        for (size_t k = 0; k < COUNT(all_dtypes); ++k)
            assert_int_equal(ew_cast(h, dt, all_dtypes[k], 0, NULL, NULL, NULL), EW_SUCCESS);
    }
    /* a stream value is not looked at either */
    assert_int_equal(ew_unary(h, EW_OP_RELU, EW_F32, 0, NULL, NULL, (ew_stream_t)ADDR(0x1234)), EW_SUCCESS);
}

/* Valid calls of every entry point get to the device check; large n included. */
static void test_valid_calls_reach_device(void **state)
{
    (void)state;
    EXPECT_DEVICE(ew_unary(h, EW_OP_RELU, EW_F32, N, OUT, IN_A, NULL));
    EXPECT_DEVICE(ew_unary(h, EW_OP_RELU, EW_U8, 1, OUT, IN_A, NULL));
    EXPECT_DEVICE(ew_binary(h, EW_OP_ADD, EW_BF16, N, OUT, IN_A, IN_B, NULL));
    EXPECT_DEVICE(ew_binary(h, EW_OP_MUL, EW_BOOL, 7, OUT, IN_A, IN_B, (ew_stream_t)ADDR(0x1234)));
    EXPECT_DEVICE(ew_cast(h, EW_F8E5M2, EW_F64, N, OUT, IN_A, NULL));
    EXPECT_DEVICE(ew_scale_add(h, EW_F64, 0.25, N, OUT, IN_A, IN_B, NULL));
    const int64_t big = (int64_t)1 << 40; /* 8 TiB of f64 per pointer: still inside the address space */
    EXPECT_DEVICE(ew_binary(h, EW_OP_ADD, EW_F64, big, OUT, IN_A, IN_B, NULL));
    EXPECT_DEVICE(ew_cast(h, EW_I64, EW_I8, big, OUT, IN_A, NULL));
    /* n so large the buffers would wrap around the address space */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_unary(h, EW_OP_RELU, EW_F32, INT64_MAX, OUT, IN_A, NULL), "n");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_cast(h, EW_I64, EW_I8, INT64_MAX / 4, OUT, IN_A, NULL), "n");
}

/* ---- the message is per thread ---- */

struct thread_report {
    char initial[512];
    char after[512];
    ew_status_t status;
};

static void *other_thread(void *argument)
{
    struct thread_report *report = argument;
    snprintf(report->initial, sizeof report->initial, "%s", ew_get_last_error_message());
    report->status = ew_cast(h, EW_F32, EW_F16, -77, OUT, IN_A, NULL);
    snprintf(report->after, sizeof report->after, "%s", ew_get_last_error_message());
    return NULL;
}

static void test_message_is_thread_local(void **state)
{
    (void)state;
    assert_int_equal(ew_handle_get_device(NULL, NULL), EW_ERROR_INVALID_HANDLE);
    char mine[512];
    snprintf(mine, sizeof mine, "%s", ew_get_last_error_message());
    assert_true(mine[0] != '\0');

    struct thread_report report;
    memset(&report, 0, sizeof report);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, other_thread, &report), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);

    assert_string_equal(report.initial, ""); /* a new thread has failed nothing yet */
    assert_int_equal(report.status, EW_ERROR_INVALID_VALUE);
    assert_non_null(strstr(report.after, "-77"));
    assert_string_equal(ew_get_last_error_message(), mine); /* untouched by the other thread */
}

/* ---- the strided calls: the same checks, then the layout's ---- */

static void test_strided_calls(void **state)
{
    (void)state;
    const int64_t shape[] = {10, 100}, row[] = {0, 1}, twice[] = {100, 0}, empty[] = {10, 0};
    /* the handle and the op, as the flat calls check them */
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                ew_binary_strided(NULL, EW_OP_ADD, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, IN_B, row, NULL),
                "handle");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_unary_strided(h, EW_OP_ADD, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, NULL), "~add",
                "ew_unary_strided");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_binary_strided(h, EW_OP_ADD, EW_F8E4M3, 2, shape, OUT, NULL, IN_A, NULL, IN_B, row, NULL),
                "~catalogue");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_cast_strided(h, EW_F32, (ew_dtype_t)99, 2, shape, OUT, NULL, IN_A, NULL, NULL), "~catalogue");
    /* alpha is part of the op: checked even on an empty shape */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_scale_add_strided(h, EW_I8, 300, 2, empty, NULL, NULL, NULL, NULL, NULL, NULL, NULL), "alpha");
    assert_int_equal(ew_scale_add_strided(h, EW_I8, 3, 2, empty, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                     EW_SUCCESS);
    /* the layout's checks name the operand and the dimension */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_binary_strided(h, EW_OP_ADD, EW_F32, 2, shape, OUT, twice, IN_A, NULL, IN_B, row, NULL),
                "out", "~out_strides[1] = 0");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_binary_strided(h, EW_OP_ADD, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, NULL, row, NULL), "b",
                "NULL");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_unary_strided(h, EW_OP_RELU, EW_F32, EW_MAX_DIMS + 1, shape, OUT, NULL, IN_A, NULL, NULL),
                "ndim");
    /* valid layouts, flat or not, stop at the device like the flat calls */
    EXPECT_DEVICE(ew_binary_strided(h, EW_OP_ADD, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, IN_B, row, NULL));
    EXPECT_DEVICE(ew_binary_strided(h, EW_OP_MUL, EW_F16, 2, shape, OUT, NULL, IN_A, NULL, IN_B, NULL, NULL));
    EXPECT_DEVICE(ew_cast_strided(h, EW_F16, EW_F32, 2, shape, OUT, NULL, IN_A, (const int64_t[]){1, 10}, NULL));
    EXPECT_DEVICE(ew_scale_add_strided(h, EW_F64, 0.5, 0, NULL, OUT, NULL, IN_A, NULL, IN_B, NULL, NULL));
}

/* ---- the scaled casts: ew_quantize, ew_dequantize, ew_amax and their strided forms ---- */

/* Fake device floats: 4-byte aligned, apart from each other and from OUT, IN_A and IN_B. */
#define SCALE      ((const float *)ADDR(0x400000000000ull))
#define AMAX       ((float *)ADDR(0x400000000100ull))
#define OVERWRITE  EW_REDUCE_OVERWRITE
#define ACCUMULATE EW_REDUCE_ACCUMULATE

static int is_float(ew_dtype_t d) { return d == EW_F16 || d == EW_BF16 || d == EW_F32 || d == EW_F64; }

static void test_scaled_handles(void **state)
{
    (void)state;
    const int64_t shape[] = {10, 100};
    ew_handle_t dead = NULL;
    assert_int_equal(ewi_handle_make(fake_device, 132, 2048, &dead), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(dead), EW_SUCCESS);
    const ew_handle_t refused[] = {NULL, dead};
    for (size_t i = 0; i < COUNT(refused); ++i) {
        ew_handle_t r = refused[i];
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_quantize(r, EW_F8E4M3, EW_F32, N, OUT, IN_A, SCALE, AMAX, OVERWRITE, NULL), "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_quantize_strided(r, EW_F8E4M3, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, SCALE, AMAX,
                                        OVERWRITE, NULL),
                    "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_dequantize(r, EW_F32, EW_F8E4M3, N, OUT, IN_A, SCALE, NULL),
                    "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_dequantize_strided(r, EW_F32, EW_F8E4M3, 2, shape, OUT, NULL, IN_A, NULL, SCALE, NULL),
                    "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_amax(r, EW_F32, N, IN_A, AMAX, OVERWRITE, NULL), "handle");
        /* nothing to do and nothing else given does not excuse the handle */
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_quantize(r, EW_F8E4M3, EW_F32, 0, NULL, NULL, NULL, NULL, ACCUMULATE, NULL), "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_dequantize(r, EW_F32, EW_F8E4M3, 0, NULL, NULL, NULL, NULL),
                    "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_amax(r, EW_F32, 0, NULL, NULL, ACCUMULATE, NULL), "handle");
    }
}

/* Every pair outside the lists (and values outside the enum) is NOT_SUPPORTED, whatever else is wrong:
 * quantize to a float8 from f16, bf16, f32 or f64; dequantize the other way; amax on those four. The
 * pair the catalogue has also answers ew_is_supported. */
static void test_scaled_dtypes(void **state)
{
    (void)state;
    const int64_t shape[] = {10, 100};
    ew_dtype_t dtypes[COUNT(all_dtypes) + COUNT(wild_values)];
    size_t count = 0;
    for (size_t i = 0; i < COUNT(all_dtypes); ++i)
        dtypes[count++] = all_dtypes[i];
    for (size_t i = 0; i < COUNT(wild_values); ++i)
        dtypes[count++] = (ew_dtype_t)wild_values[i];
    for (size_t i = 0; i < count; ++i) {
        const ew_dtype_t out = dtypes[i];
        for (size_t k = 0; k < count; ++k) {
            const ew_dtype_t in = dtypes[k];
            const int quantizes = is_fp8(out) && is_float(in), dequantizes = is_float(out) && is_fp8(in);
            assert_int_equal(ew_is_supported(EW_OP_QUANTIZE, out, in), quantizes);
            assert_int_equal(ew_is_supported(EW_OP_DEQUANTIZE, out, in), dequantizes);
            assert_int_equal(ew_is_supported(EW_OP_AMAX, out, in), out == in && is_float(out));
            if (quantizes)
                EXPECT_DEVICE(ew_quantize(h, out, in, N, OUT, IN_A, SCALE, AMAX, OVERWRITE, NULL));
            else
                EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                            ew_quantize(h, out, in, N, OUT, IN_A, SCALE, AMAX, OVERWRITE, NULL), "~quantize",
                            "dtype");
            if (dequantizes)
                EXPECT_DEVICE(ew_dequantize(h, out, in, N, OUT, IN_A, SCALE, NULL));
            else
                EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_dequantize(h, out, in, N, OUT, IN_A, SCALE, NULL),
                            "~dequantize", "dtype");
            if (quantizes || dequantizes)
                continue;
            /* checked first: before the NULL scalars, a negative n or an empty view */
            EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                        ew_quantize(h, out, in, -1, NULL, NULL, NULL, NULL, (ew_reduce_mode_t)7, NULL),
                        "dtype");
            EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                        ew_quantize_strided(h, out, in, 2, (const int64_t[]){0, 3}, NULL, NULL, NULL, NULL,
                                            NULL, NULL, OVERWRITE, NULL),
                        "dtype");
            EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_dequantize(h, out, in, 0, NULL, NULL, NULL, NULL),
                        "dtype");
            EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                        ew_dequantize_strided(h, out, in, 2, shape, OUT, NULL, IN_A, NULL, SCALE, NULL),
                        "dtype");
        }
        if (is_float(out)) {
            EXPECT_DEVICE(ew_amax(h, out, N, IN_A, AMAX, OVERWRITE, NULL));
        } else {
            EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_amax(h, out, N, IN_A, AMAX, OVERWRITE, NULL), "~amax",
                        "dtype");
            EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_amax(h, out, -5, NULL, NULL, ACCUMULATE, NULL), "dtype");
        }
    }
    /* the brief's examples, by name */
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_quantize(h, EW_F16, EW_F32, N, OUT, IN_A, SCALE, NULL, OVERWRITE, NULL), "~quantize",
                "~f16");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_dequantize(h, EW_F8E4M3, EW_F32, N, OUT, IN_A, SCALE, NULL),
                "~dequantize", "~e4m3");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_amax(h, EW_I32, N, IN_A, AMAX, OVERWRITE, NULL), "~amax", "i32");
    /* the scaled ops through the other calls, and the others' ops never reach these: an op value in the
     * wrong call is refused by name */
    static const ew_op_t scaled_ops[] = {EW_OP_QUANTIZE, EW_OP_DEQUANTIZE, EW_OP_AMAX};
    for (size_t i = 0; i < COUNT(scaled_ops); ++i) {
        const ew_op_t op = scaled_ops[i];
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, op, EW_F32, N, OUT, IN_A, NULL), "op", "ew_unary");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, op, EW_F32, N, OUT, IN_A, IN_B, NULL), "op",
                    "ew_binary");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, op, EW_F32, 0, NULL, NULL, NULL), "op");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                    ew_unary_strided(h, op, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, NULL), "op");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                    ew_binary_batched(h, op, EW_F32, 1, (const int64_t[]){N}, (void *const[]){OUT},
                                      (const void *const[]){IN_A}, (const void *const[]){IN_B}, NULL),
                    "op");
        assert_int_equal(ew_is_supported(op, EW_BOOL, EW_BOOL), 0);
    }
    assert_int_equal(ew_is_supported((ew_op_t)(EW_OP_AMAX + 1), EW_F32, EW_F32), 0);
}

/* n: negative refused by name (after the scalars, which are fine here), 0 does nothing with NULL
 * operands, but for an overwritten amax, which is set to 0 on the stream: GPU work. */
static void test_scaled_n(void **state)
{
    (void)state;
    static const int64_t bad[] = {-1, -1000, INT64_MIN};
    for (size_t i = 0; i < COUNT(bad); ++i) {
        const int64_t n = bad[i];
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize(h, EW_F8E4M3, EW_F16, n, OUT, IN_A, SCALE, AMAX, OVERWRITE, NULL), "n");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize(h, EW_F8E5M2, EW_F64, n, OUT, IN_A, SCALE, NULL, ACCUMULATE, NULL), "n");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize(h, EW_BF16, EW_F8E5M2, n, OUT, IN_A, SCALE, NULL),
                    "n");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F64, n, IN_A, AMAX, ACCUMULATE, NULL), "n");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F32, n, NULL, AMAX, OVERWRITE, NULL), "n");
    }
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F16, INT64_MIN, IN_A, AMAX, OVERWRITE, NULL), "n",
                "~-9223372036854775808");
    for (size_t i = 0; i < COUNT(all_dtypes); ++i) {
        const ew_dtype_t f = all_dtypes[i];
        if (!is_float(f))
            continue;
        assert_int_equal(ew_quantize(h, EW_F8E4M3, f, 0, NULL, NULL, SCALE, NULL, OVERWRITE, NULL),
                         EW_SUCCESS);
        assert_int_equal(ew_quantize(h, EW_F8E5M2, f, 0, NULL, NULL, SCALE, AMAX, ACCUMULATE, NULL),
                         EW_SUCCESS);
        assert_int_equal(ew_dequantize(h, f, EW_F8E4M3, 0, NULL, NULL, SCALE, NULL), EW_SUCCESS);
        assert_int_equal(ew_amax(h, f, 0, NULL, AMAX, ACCUMULATE, NULL), EW_SUCCESS);
        assert_int_equal(ew_quantize_strided(h, EW_F8E4M3, f, 2, (const int64_t[]){4, 0}, NULL, NULL, NULL,
                                             NULL, SCALE, AMAX, ACCUMULATE, NULL),
                         EW_SUCCESS);
        assert_int_equal(ew_dequantize_strided(h, f, EW_F8E5M2, 1, (const int64_t[]){0}, NULL, NULL, NULL,
                                               NULL, SCALE, NULL),
                         EW_SUCCESS);
    }
    /* An overwritten amax is reset even where nothing else runs. Without a GPU that stops at CUDA. With
     * one, the fake handle's device does not exist and AMAX is no device memory, so it is not called. */
    if (!gpu_present) {
        prime();
        assert_int_equal(ew_amax(h, EW_F32, 0, NULL, AMAX, OVERWRITE, NULL), EW_ERROR_CUDA);
        assert_string_not_equal(ew_get_last_error_message(), sentinel);
        prime();
        assert_int_equal(ew_quantize(h, EW_F8E4M3, EW_BF16, 0, NULL, NULL, SCALE, AMAX, OVERWRITE, NULL),
                         EW_ERROR_CUDA);
        assert_string_not_equal(ew_get_last_error_message(), sentinel);
        prime();
        assert_int_equal(ew_quantize_strided(h, EW_F8E5M2, EW_F32, 1, (const int64_t[]){0}, NULL, NULL, NULL,
                                             NULL, SCALE, AMAX, OVERWRITE, NULL),
                         EW_ERROR_CUDA);
        assert_string_not_equal(ew_get_last_error_message(), sentinel);
    }
}

/* The device scalars: non-NULL (the amax of quantize may be NULL), aligned to 4 bytes, checked even when
 * nothing runs; amax_mode one of ew_reduce_mode_t's where an amax is given. */
static void test_scaled_scalars(void **state)
{
    (void)state;
    const int64_t shape[] = {10, 100};
    /* NULL */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize(h, EW_F8E4M3, EW_F32, N, OUT, IN_A, NULL, AMAX, OVERWRITE, NULL), "scale",
                "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize(h, EW_F8E4M3, EW_F32, 0, NULL, NULL, NULL, NULL, OVERWRITE, NULL), "scale",
                "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, NULL, NULL,
                                    OVERWRITE, NULL),
                "scale", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, (const int64_t[]){0, 100}, NULL, NULL, NULL,
                                    NULL, NULL, NULL, OVERWRITE, NULL),
                "scale", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize(h, EW_F16, EW_F8E4M3, N, OUT, IN_A, NULL, NULL),
                "scale_inv", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize(h, EW_F16, EW_F8E4M3, 0, NULL, NULL, NULL, NULL),
                "scale_inv", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_strided(h, EW_F64, EW_F8E5M2, 2, shape, OUT, NULL, IN_A, NULL, NULL, NULL),
                "scale_inv", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F32, N, IN_A, NULL, OVERWRITE, NULL), "amax", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_BF16, 0, NULL, NULL, ACCUMULATE, NULL), "amax",
                "~null");
    /* the amax of quantize is optional: NULL is valid, and its mode is then not read */
    EXPECT_DEVICE(ew_quantize(h, EW_F8E4M3, EW_F32, N, OUT, IN_A, SCALE, NULL, OVERWRITE, NULL));
    EXPECT_DEVICE(ew_quantize(h, EW_F8E5M2, EW_F16, N, OUT, IN_A, SCALE, NULL, (ew_reduce_mode_t)7, NULL));
    EXPECT_DEVICE(ew_quantize_strided(h, EW_F8E4M3, EW_BF16, 2, shape, OUT, NULL, IN_A, NULL, SCALE, NULL,
                                      (ew_reduce_mode_t)-1, NULL));
    /* misaligned: each scalar at every offset within 4 bytes, also where nothing runs */
    for (uintptr_t shift = 1; shift < 4; ++shift) {
        const float *scale = (const float *)((uintptr_t)SCALE + shift);
        float *amax = (float *)((uintptr_t)AMAX + shift);
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize(h, EW_F8E4M3, EW_F32, N, OUT, IN_A, scale, AMAX, OVERWRITE, NULL), "scale",
                    "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize(h, EW_F8E4M3, EW_F32, N, OUT, IN_A, SCALE, amax, ACCUMULATE, NULL), "amax",
                    "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize(h, EW_F8E4M3, EW_F32, 0, NULL, NULL, SCALE, amax, ACCUMULATE, NULL), "amax",
                    "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_strided(h, EW_F8E5M2, EW_F64, 2, shape, OUT, NULL, IN_A, NULL, SCALE, amax,
                                        OVERWRITE, NULL),
                    "amax", "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize(h, EW_F32, EW_F8E5M2, N, OUT, IN_A, scale, NULL),
                    "scale_inv", "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize(h, EW_F32, EW_F8E5M2, 0, NULL, NULL, scale, NULL),
                    "scale_inv", "~align");
        EXPECT_FAIL(
            EW_ERROR_INVALID_VALUE,
            ew_dequantize_strided(h, EW_BF16, EW_F8E4M3, 2, shape, OUT, NULL, IN_A, NULL, scale, NULL),
            "scale_inv", "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F16, N, IN_A, amax, OVERWRITE, NULL), "amax",
                    "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F16, 0, NULL, amax, ACCUMULATE, NULL), "amax",
                    "~align");
    }
    /* the scalars are floats whatever the dtypes: 4-byte alignment suffices for f64 too */
    EXPECT_DEVICE(ew_quantize(h, EW_F8E4M3, EW_F64, N, OUT, IN_A, (const float *)((uintptr_t)SCALE + 4),
                              (float *)((uintptr_t)AMAX + 12), OVERWRITE, NULL));
    EXPECT_DEVICE(
        ew_dequantize(h, EW_F64, EW_F8E4M3, N, OUT, IN_A, (const float *)((uintptr_t)SCALE + 4), NULL));
    /* amax_mode: only its two values, where an amax is given */
    static const int bad_modes[] = {2, 7, -1, 1000};
    for (size_t i = 0; i < COUNT(bad_modes); ++i) {
        const ew_reduce_mode_t mode = (ew_reduce_mode_t)bad_modes[i];
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize(h, EW_F8E4M3, EW_F32, N, OUT, IN_A, SCALE, AMAX, mode, NULL), "amax_mode");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize(h, EW_F8E4M3, EW_F32, 0, NULL, NULL, SCALE, AMAX, mode, NULL), "amax_mode");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, SCALE, AMAX,
                                        mode, NULL),
                    "amax_mode");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F32, N, IN_A, AMAX, mode, NULL), "amax_mode");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F32, 0, NULL, AMAX, mode, NULL), "amax_mode");
    }
    char text[16];
    snprintf(text, sizeof text, "~%d", 7); /* the bad value is quoted */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F32, N, IN_A, AMAX, (ew_reduce_mode_t)7, NULL),
                "amax_mode", text);
}

/* The operands, as the flat and strided calls check them: out and the input named "x" (ew_quantize,
 * ew_amax) or "q" (ew_dequantize). Element sizes differ, so no scaled call works in place. */
static void test_scaled_operands(void **state)
{
    (void)state;
    char *base = (char *)OUT;
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize(h, EW_F8E4M3, EW_F32, N, NULL, IN_A, SCALE, AMAX, OVERWRITE, NULL), "out",
                "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize(h, EW_F8E4M3, EW_F32, N, OUT, NULL, SCALE, AMAX, OVERWRITE, NULL), "x", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize(h, EW_F8E4M3, EW_F32, N, OUT, base + 2, SCALE, NULL, OVERWRITE, NULL), "x",
                "~align");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize(h, EW_F8E4M3, EW_F32, N, base, base, SCALE, NULL, OVERWRITE, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize(h, EW_F8E5M2, EW_F16, N, base + 2 * N - 1, base, SCALE, NULL, OVERWRITE, NULL),
                "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize(h, EW_F32, EW_F8E4M3, N, OUT, NULL, SCALE, NULL), "q",
                "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize(h, EW_F32, EW_F8E4M3, N, base + 2, IN_A, SCALE, NULL),
                "out", "~align");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize(h, EW_F16, EW_F8E4M3, N, base, base + 1, SCALE, NULL),
                "out", "q");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F32, N, NULL, AMAX, OVERWRITE, NULL), "x", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F64, N, base + 4, AMAX, OVERWRITE, NULL), "x",
                "~align");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax(h, EW_F32, INT64_MAX / 2, IN_A, AMAX, OVERWRITE, NULL), "x",
                "n");
    /* adjacent buffers do not overlap */
    EXPECT_DEVICE(ew_quantize(h, EW_F8E4M3, EW_F32, N, base + 4 * N, base, SCALE, AMAX, OVERWRITE, NULL));
    EXPECT_DEVICE(ew_dequantize(h, EW_F16, EW_F8E5M2, N, base, base + 2 * N, SCALE, NULL));
}

/* Where a scalar overlaps an operand (include/elementwise.h: neither scalar inside out, the amax not
 * inside x nor on the scale): refused before the device check, the message naming the scalar and the
 * operand. ewi_check_scalars, the check itself, is tested directly below. */
static void check_overlap(const char *file, int line, const char *call, ew_status_t got, const char *scalar,
                          const char *operand)
{
    check_failure(file, line, call, EW_ERROR_INVALID_VALUE, got, (const char *const[]){scalar, operand, NULL});
}
#define EXPECT_OVERLAP(call, scalar, operand) \
    check_overlap(__FILE__, __LINE__, #call, (prime(), (call)), scalar, operand)

static void test_scaled_overlaps(void **state)
{
    (void)state;
    char *o = (char *)OUT, *x = (char *)IN_A;
    const float *in_out = (const float *)(o + 8), *in_x = (const float *)(x + 16);
    EXPECT_OVERLAP(ew_quantize(h, EW_F8E4M3, EW_F32, N, o, x, in_out, AMAX, OVERWRITE, NULL), "scale", "out");
    EXPECT_OVERLAP(ew_quantize(h, EW_F8E4M3, EW_F32, N, o, x, SCALE, (float *)in_out, OVERWRITE, NULL),
                   "amax", "out");
    EXPECT_OVERLAP(ew_quantize(h, EW_F8E4M3, EW_F32, N, o, x, SCALE, (float *)in_x, ACCUMULATE, NULL), "amax",
                   "x");
    EXPECT_OVERLAP(ew_quantize(h, EW_F8E4M3, EW_F32, N, o, x, SCALE, (float *)SCALE, OVERWRITE, NULL), "amax",
                   "scale");
    EXPECT_OVERLAP(ew_quantize(h, EW_F8E5M2, EW_BF16, N, o, x, SCALE, (float *)(o + N - 4), OVERWRITE, NULL),
                   "amax", "out"); /* its last 4 bytes */
    EXPECT_OVERLAP(ew_dequantize(h, EW_F32, EW_F8E4M3, N, o, x, in_out, NULL), "scale", "out");
    EXPECT_OVERLAP(ew_amax(h, EW_F32, N, x, (float *)in_x, OVERWRITE, NULL), "amax", "x");
    EXPECT_OVERLAP(ew_amax(h, EW_F16, N, x, (float *)(x + 2 * N - 4), ACCUMULATE, NULL), "amax", "x");
    /* strided: the bytes each view spans, padding included: out {4,3} with strides {8,2} spans 29 bytes */
    const int64_t shape[] = {4, 3}, padded[] = {8, 2};
    EXPECT_OVERLAP(ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, o, padded, x, NULL,
                                       (const float *)(o + 28), NULL, OVERWRITE, NULL),
                   "scale", "out");
    EXPECT_OVERLAP(ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, o, NULL, x, (const int64_t[]){0, 1},
                                       SCALE, (float *)(x + 8), OVERWRITE, NULL),
                   "amax", "x");
    EXPECT_OVERLAP(ew_dequantize_strided(h, EW_F16, EW_F8E4M3, 2, shape, o, (const int64_t[]){-3, -1}, x,
                                         NULL, (const float *)(o - 8), NULL),
                   "scale", "out");
    /* what the rule allows: the scale inside x, scalars right next to an operand, scale and amax apart */
    EXPECT_DEVICE(ew_quantize(h, EW_F8E4M3, EW_F32, N, o, x, in_x, AMAX, OVERWRITE, NULL));
    EXPECT_DEVICE(ew_quantize(h, EW_F8E4M3, EW_F32, N, o, x, (const float *)(o + N), (float *)(x + 4 * N),
                              OVERWRITE, NULL));
    EXPECT_DEVICE(
        ew_quantize(h, EW_F8E4M3, EW_F32, N, o + 4, x, (const float *)o, (float *)(x - 4), OVERWRITE, NULL));
    EXPECT_DEVICE(ew_quantize(h, EW_F8E4M3, EW_F32, N, o, x, SCALE, (float *)(SCALE + 1), OVERWRITE, NULL));
    EXPECT_DEVICE(ew_dequantize(h, EW_F32, EW_F8E4M3, N, o, x, (const float *)(x + 4), NULL));
    EXPECT_DEVICE(ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, o, padded, x, NULL,
                                      (const float *)(o + 32), NULL, OVERWRITE, NULL));

    /* ewi_check_scalars, which the calls use: the message names the scalar and the operand */
    const char *const names[] = {"out", "x"};
    const uintptr_t lo[] = {(uintptr_t)o, (uintptr_t)x}, hi[] = {(uintptr_t)o + N, (uintptr_t)x + 4 * N};
    ew_op_params_t params = {.scale = in_out};
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ewi_check_scalars(&params, 2, names, lo, hi), "scale", "out");
    params = (ew_op_params_t){.scale = SCALE, .reduction = (float *)(o + N - 4)};
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ewi_check_scalars(&params, 2, names, lo, hi), "amax", "out");
    params = (ew_op_params_t){.scale = SCALE, .reduction = (float *)(x + 4 * N - 4)};
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ewi_check_scalars(&params, 2, names, lo, hi), "amax", "x");
    params = (ew_op_params_t){.scale = SCALE, .reduction = (float *)SCALE};
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ewi_check_scalars(&params, 2, names, lo, hi), "amax", "scale");
    params = (ew_op_params_t){.reduction = (float *)(x + 8)}; /* ew_amax: x in both places */
    const char *const amax_names[] = {"x", "x"};
    const uintptr_t amax_lo[] = {(uintptr_t)x, (uintptr_t)x}, amax_hi[] = {hi[1], hi[1]};
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ewi_check_scalars(&params, 2, amax_names, amax_lo, amax_hi), "amax",
                "x");
    params = (ew_op_params_t){.scale = (const float *)(o + N), .reduction = (float *)(x - 4)};
    assert_int_equal(ewi_check_scalars(&params, 2, names, lo, hi), EW_SUCCESS);
    params = (ew_op_params_t){.scale = (const float *)(x + 4), .reduction = (float *)(o - 4)};
    assert_int_equal(ewi_check_scalars(&params, 2, names, lo, hi), EW_SUCCESS);
}

/* The strided forms: the layout's refusals name the operand and the dimension, as the other strided
 * calls'; valid views of any layout reach the device. */
static void test_scaled_strided(void **state)
{
    (void)state;
    const int64_t shape[] = {10, 100}, broadcast[] = {0, 1}, transposed[] = {1, 10};
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, OUT, (const int64_t[]){100, 0}, IN_A,
                                    NULL, SCALE, AMAX, OVERWRITE, NULL),
                "out", "~out_strides[1] = 0");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, (const int64_t[]){3, 2}, OUT,
                                    (const int64_t[]){2, 3}, IN_A, NULL, SCALE, AMAX, OVERWRITE, NULL),
                "out");
    EXPECT_FAIL(
        EW_ERROR_INVALID_VALUE,
        ew_dequantize_strided(h, EW_F32, EW_F8E4M3, 2, shape, OUT, broadcast, IN_A, NULL, SCALE, NULL), "out",
        "~out_strides[0] = 0");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_strided(h, EW_F8E4M3, EW_F32, EW_MAX_DIMS + 1, shape, OUT, NULL, IN_A, NULL,
                                    SCALE, AMAX, OVERWRITE, NULL),
                "ndim");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_strided(h, EW_F32, EW_F8E4M3, -1, shape, OUT, NULL, IN_A, NULL, SCALE, NULL),
                "ndim");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, NULL, OUT, NULL, IN_A, NULL, SCALE, NULL,
                                    OVERWRITE, NULL),
                "shape");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_strided(h, EW_F32, EW_F8E4M3, 2, (const int64_t[]){4, -1}, OUT, NULL, IN_A,
                                      NULL, SCALE, NULL),
                "shape");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, OUT, NULL, NULL, broadcast, SCALE, AMAX,
                                    OVERWRITE, NULL),
                "x", "~null");
    EXPECT_FAIL(
        EW_ERROR_INVALID_VALUE,
        ew_dequantize_strided(h, EW_F32, EW_F8E4M3, 2, shape, OUT, NULL, NULL, transposed, SCALE, NULL), "q",
        "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, OUT, NULL, (char *)IN_A + 2, broadcast,
                                    SCALE, NULL, OVERWRITE, NULL),
                "x", "~align");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_strided(h, EW_F16, EW_F8E4M3, 2, shape, OUT, NULL, (char *)OUT + 3, transposed,
                                      SCALE, NULL),
                "out");
    /* valid: flat, broadcast, transposed, one element (ndim 0) */
    EXPECT_DEVICE(ew_quantize_strided(h, EW_F8E4M3, EW_F32, 2, shape, OUT, NULL, IN_A, NULL, SCALE, AMAX,
                                      OVERWRITE, NULL));
    EXPECT_DEVICE(ew_quantize_strided(h, EW_F8E5M2, EW_F16, 2, shape, OUT, NULL, IN_A, broadcast, SCALE, AMAX,
                                      ACCUMULATE, NULL));
    EXPECT_DEVICE(ew_quantize_strided(h, EW_F8E4M3, EW_F64, 0, NULL, OUT, NULL, IN_A, NULL, SCALE, NULL,
                                      OVERWRITE, NULL));
    EXPECT_DEVICE(
        ew_dequantize_strided(h, EW_BF16, EW_F8E4M3, 2, shape, OUT, NULL, IN_A, transposed, SCALE, NULL));
    EXPECT_DEVICE(ew_dequantize_strided(h, EW_F64, EW_F8E5M2, 2, shape, OUT, (const int64_t[]){-100, -1},
                                        IN_A, broadcast, SCALE, NULL));
}

/* The list forms: a dead handle, pairs outside the lists, count and n, the scales' array and the amax
 * scalars (NULL, misaligned, inside an entry's own operands or each other), and valid lists, with each
 * entry's own amax, one shared, or none, reach the device. */
static void test_scaled_lists(void **state)
{
    (void)state;
    const int64_t n[] = {N, 0, 7};
    void *const out[] = {OUT, ADDR(0x100000100000ull), ADDR(0x100000200000ull)};
    const void *const x[] = {IN_A, ADDR(0x200000100000ull), ADDR(0x200000200000ull)};
    float *const own[] = {AMAX, AMAX + 1, AMAX + 2}, *const shared[] = {AMAX, AMAX, AMAX};
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                ew_quantize_batched(NULL, EW_F8E4M3, EW_F32, 3, n, out, x, SCALE, own, OVERWRITE, NULL),
                "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                ew_dequantize_batched(NULL, EW_F32, EW_F8E4M3, 3, n, out, x, SCALE, NULL), "handle");
    EXPECT_FAIL(EW_ERROR_INVALID_HANDLE, ew_amax_batched(NULL, EW_F32, 3, n, x, own, OVERWRITE, NULL),
                "handle");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_quantize_batched(h, EW_F16, EW_F32, 3, n, out, x, SCALE, own, OVERWRITE, NULL),
                "quantize");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_dequantize_batched(h, EW_F8E4M3, EW_F32, 3, n, out, x, SCALE, NULL), "dequantize");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_amax_batched(h, EW_I32, 3, n, x, own, OVERWRITE, NULL), "amax");
    /* count and n */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_batched(h, EW_F8E4M3, EW_F32, -1, n, out, x, SCALE, own, OVERWRITE, NULL),
                "count");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_batched(h, EW_F8E4M3, EW_F32, 3, (const int64_t[]){N, -2, 7}, out, x, SCALE, own,
                                    OVERWRITE, NULL),
                "entry 1", "n = -2");
    assert_int_equal(
        ew_quantize_batched(h, EW_F8E4M3, EW_F32, 0, NULL, NULL, NULL, NULL, NULL, OVERWRITE, NULL),
        EW_SUCCESS);
    assert_int_equal(ew_dequantize_batched(h, EW_F16, EW_F8E5M2, 0, NULL, NULL, NULL, NULL, NULL),
                     EW_SUCCESS);
    assert_int_equal(ew_amax_batched(h, EW_BF16, 0, NULL, NULL, NULL, ACCUMULATE, NULL), EW_SUCCESS);
    /* the scales: count floats in device memory, none inside its entry's out */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_batched(h, EW_F8E4M3, EW_F32, 3, n, out, x, NULL, own, OVERWRITE, NULL), "scale",
                "NULL");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_dequantize_batched(h, EW_F32, EW_F8E4M3, 3, n, out, x, NULL, NULL),
                "scale_inv", "NULL");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_batched(h, EW_F8E4M3, EW_F32, 3, n, out, x,
                                    (const float *)ADDR(0x400000000002ull), own, OVERWRITE, NULL),
                "scale", "aligned");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_batched(h, EW_F8E4M3, EW_F32, 3, n, out, x,
                                    (const float *)ADDR(0x100000200000ull - 8), own, OVERWRITE, NULL),
                "entry 2", "scale[2] lies inside out");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_batched(h, EW_F8E4M3, EW_F32, 3, n, out, x, (const float *)(UINTPTR_MAX - 7), own,
                                    OVERWRITE, NULL),
                "scale", "address space");
    /* the amax scalars: a mode, non-NULL entries, none inside its entry's operands or scale */
    EXPECT_FAIL(
        EW_ERROR_INVALID_VALUE,
        ew_quantize_batched(h, EW_F8E4M3, EW_F32, 3, n, out, x, SCALE, own, (ew_reduce_mode_t)9, NULL),
        "amax_mode");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax_batched(h, EW_F32, 3, n, x, own, (ew_reduce_mode_t)-1, NULL),
                "mode");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_amax_batched(h, EW_F32, 3, n, x, NULL, OVERWRITE, NULL), "amax",
                "NULL");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_batched(h, EW_F8E4M3, EW_F32, 3, n, out, x, SCALE,
                                    (float *const[]){AMAX, NULL, AMAX}, OVERWRITE, NULL),
                "entry 1", "amax", "NULL");
    EXPECT_FAIL(
        EW_ERROR_INVALID_VALUE,
        ew_amax_batched(h, EW_F32, 3, n, x, (float *const[]){AMAX, AMAX, (float *)x[2] + 3}, OVERWRITE, NULL),
        "entry 2", "amax", "lies inside x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_batched(h, EW_F8E4M3, EW_F32, 3, n, out, x, SCALE,
                                    (float *const[]){AMAX, (float *)SCALE + 1, AMAX}, OVERWRITE, NULL),
                "entry 1", "amax", "lies inside scale");
    /* valid lists */
    EXPECT_DEVICE(ew_quantize_batched(h, EW_F8E4M3, EW_BF16, 3, n, out, x, SCALE, own, OVERWRITE, NULL));
    EXPECT_DEVICE(ew_quantize_batched(h, EW_F8E5M2, EW_F64, 3, n, out, x, SCALE, shared, ACCUMULATE, NULL));
    EXPECT_DEVICE(
        ew_quantize_batched(h, EW_F8E4M3, EW_F16, 3, n, out, x, SCALE, NULL, (ew_reduce_mode_t)9, NULL));
    EXPECT_DEVICE(ew_dequantize_batched(h, EW_F32, EW_F8E5M2, 3, n, out, x, SCALE, NULL));
    EXPECT_DEVICE(ew_amax_batched(h, EW_F16, 3, n, x, shared, OVERWRITE, NULL));
}

/* Valid calls of every pair reach the device check, large n included. */
static void test_scaled_valid_calls(void **state)
{
    (void)state;
    static const ew_dtype_t floats[] = {EW_F16, EW_BF16, EW_F32, EW_F64}, fp8[] = {EW_F8E4M3, EW_F8E5M2};
    for (size_t i = 0; i < COUNT(floats); ++i) {
        for (size_t k = 0; k < COUNT(fp8); ++k) {
            EXPECT_DEVICE(ew_quantize(h, fp8[k], floats[i], N, OUT, IN_A, SCALE, AMAX, OVERWRITE, NULL));
            EXPECT_DEVICE(ew_quantize(h, fp8[k], floats[i], 1, OUT, IN_A, SCALE, AMAX, ACCUMULATE, NULL));
            EXPECT_DEVICE(ew_quantize(h, fp8[k], floats[i], N, OUT, IN_A, SCALE, NULL, OVERWRITE, NULL));
            EXPECT_DEVICE(
                ew_dequantize(h, floats[i], fp8[k], N, OUT, IN_A, SCALE, (ew_stream_t)ADDR(0x1234)));
        }
        EXPECT_DEVICE(ew_amax(h, floats[i], N, IN_A, AMAX, OVERWRITE, NULL));
        EXPECT_DEVICE(ew_amax(h, floats[i], 7, IN_A, AMAX, ACCUMULATE, NULL));
    }
    const int64_t big = (int64_t)1 << 40;
    EXPECT_DEVICE(ew_quantize(h, EW_F8E4M3, EW_F64, big, OUT, IN_A, SCALE, AMAX, OVERWRITE, NULL));
    EXPECT_DEVICE(ew_amax(h, EW_F64, big, IN_A, AMAX, OVERWRITE, NULL));
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize(h, EW_F64, EW_F8E4M3, INT64_MAX / 4, OUT, IN_A, SCALE, NULL), "n");
}

/* ---- the block-scaled casts: ew_block_scales_shape, ew_quantize_blocks, ew_dequantize_blocks ---- */

#define SCALES   ADDR(0x500000000000ull)
#define GLOBAL   ((const float *)ADDR(0x600000000000ull))
#define MX       EW_BLOCKS_MX
#define NVFP4    EW_BLOCKS_NVFP4
#define ROUND_UP EW_BLOCKS_ROUND_UP
#define SWIZZLED EW_BLOCKS_SWIZZLED

/* Rows and cols of most calls below: a multiple of both blocks; 4 x 64 elements. */
#define BR 4
#define BC 64

static int is_block_wide(ew_dtype_t d) { return d == EW_F16 || d == EW_BF16 || d == EW_F32; }
static int is_block_element(ew_block_format_t f, ew_dtype_t d)
{
    return f == MX ? (is_fp8(d) || d == EW_F4E2M1) : f == NVFP4 && d == EW_F4E2M1;
}

/* ew_block_scales_shape: every output by hand, then each refusal. */
static void test_blocks_scales_shape(void **state)
{
    (void)state;
    static const struct {
        ew_block_format_t format;
        int64_t rows, cols;
        unsigned options;
        int64_t scale_rows, scale_cols;
    } shapes[] = {
        {MX, 0, 0, 0, 0, 0},
        {MX, 0, 0, SWIZZLED, 0, 0},
        {MX, 7, 0, SWIZZLED, 128, 0},
        {MX, 0, 64, SWIZZLED, 0, 4},
        {MX, 1, 32, 0, 1, 1},
        {MX, 1, 32, SWIZZLED, 128, 4},
        {MX, 129, 96, 0, 129, 3},
        {MX, 129, 96, SWIZZLED, 256, 4},
        {MX, 128, 160, SWIZZLED, 128, 8},
        {MX, 300, 4096, 0, 300, 128},
        {MX, 300, 4096, SWIZZLED, 384, 128},
        {MX, 5, 64, ROUND_UP, 5, 2}, /* only EW_BLOCKS_SWIZZLED changes the shape */
        {MX, 5, 64, ROUND_UP | SWIZZLED, 128, 4},
        {MX, INT64_MAX, 0, 0, INT64_MAX, 0},
        {NVFP4, 1, 16, 0, 1, 1},
        {NVFP4, 1, 16, SWIZZLED, 128, 4},
        {NVFP4, 300, 48, 0, 300, 3},
        {NVFP4, 300, 48, SWIZZLED, 384, 4},
        {NVFP4, 127, 80, SWIZZLED, 128, 8},
        {NVFP4, 256, 4096, SWIZZLED, 256, 256},
    };
    for (size_t i = 0; i < COUNT(shapes); ++i) {
        int64_t r = -7, c = -7;
        prime();
        const ew_status_t status =
            ew_block_scales_shape(shapes[i].format, shapes[i].rows, shapes[i].cols, shapes[i].options, &r, &c);
        if (status != EW_SUCCESS || r != shapes[i].scale_rows || c != shapes[i].scale_cols)
            fail_msg("ew_block_scales_shape(%d, %lld, %lld, 0x%x): %s, %lld x %lld; expected %lld x %lld (\"%s\")",
                     (int)shapes[i].format, (long long)shapes[i].rows, (long long)shapes[i].cols,
                     shapes[i].options, ew_status_string(status), (long long)r, (long long)c,
                     (long long)shapes[i].scale_rows, (long long)shapes[i].scale_cols, ew_get_last_error_message());
    }
    int64_t r, c;
    /* sizes */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, -1, 32, 0, &r, &c), "rows");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(NVFP4, INT64_MIN, 16, SWIZZLED, &r, &c), "rows");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, 4, -32, 0, &r, &c), "cols");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(NVFP4, 4, INT64_MIN, 0, &r, &c), "cols");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, 4, 16, 0, &r, &c), "cols"); /* NVFP4's block */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, 4, 33, SWIZZLED, &r, &c), "cols");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, 0, 48, 0, &r, &c), "cols");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(NVFP4, 4, 8, 0, &r, &c), "cols");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(NVFP4, 4, 40, 0, &r, &c), "cols");
    /* rows x cols past int64, and swizzled rows that round up past it */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, INT64_MAX / 16, 32, 0, &r, &c), "~rows");
    /* options */
    static const unsigned bad_options[] = {4, 8, 0x100, 0x80000000u, ~0u, SWIZZLED | 4};
    for (size_t i = 0; i < COUNT(bad_options); ++i) {
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, 4, 64, bad_options[i], &r, &c), "options");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(NVFP4, 0, 0, bad_options[i], &r, &c), "options");
    }
    /* the outputs */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, 4, 64, 0, NULL, &c), "scale_rows");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(NVFP4, 4, 64, SWIZZLED, &r, NULL), "scale_cols");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, 0, 0, 0, NULL, NULL), "~scale_");
    /* the format: NOT_SUPPORTED */
    static const int bad_formats[] = {0, 3, -1, 1000, INT_MIN};
    for (size_t i = 0; i < COUNT(bad_formats); ++i) {
        const ew_block_format_t f = (ew_block_format_t)bad_formats[i];
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_block_scales_shape(f, 4, 64, 0, &r, &c), "format");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_block_scales_shape(f, 0, 0, SWIZZLED, &r, &c), "format");
    }
    /* swizzled rows that round up past int64: no int64 holds scale_rows */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(MX, INT64_MAX - 5, 0, SWIZZLED, &r, &c), "~rows");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_block_scales_shape(NVFP4, INT64_MAX - 126, 0, SWIZZLED, &r, &c), "~rows");
}

/* A NULL or destroyed handle: INVALID_HANDLE, with elements or without. */
static void test_blocks_handles(void **state)
{
    (void)state;
    ew_handle_t dead = NULL;
    assert_int_equal(ewi_handle_make(fake_device, 132, 2048, &dead), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(dead), EW_SUCCESS);
    const ew_handle_t refused[] = {NULL, dead};
    for (size_t i = 0; i < COUNT(refused); ++i) {
        const ew_handle_t r = refused[i];
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_quantize_blocks(r, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, SCALES, IN_A, NULL, 0, NULL), "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_quantize_blocks(r, NVFP4, EW_F4E2M1, EW_BF16, BR, BC, OUT, SCALES, IN_A, GLOBAL, SWIZZLED, NULL),
                    "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_dequantize_blocks(r, MX, EW_F16, EW_F4E2M1, BR, BC, OUT, IN_A, SCALES, NULL, 0, NULL), "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_quantize_blocks(r, MX, EW_F8E4M3, EW_F32, 0, 0, NULL, NULL, NULL, NULL, 0, NULL), "handle");
        EXPECT_FAIL(EW_ERROR_INVALID_HANDLE,
                    ew_dequantize_blocks(r, NVFP4, EW_F32, EW_F4E2M1, 0, 16, NULL, NULL, NULL, NULL, 0, NULL), "handle");
    }
}

/* Formats and dtypes: NOT_SUPPORTED outside the lists of the header, every pair tried; the pairs in
 * them reach the device. */
static void test_blocks_formats_and_dtypes(void **state)
{
    (void)state;
    ew_dtype_t dtypes[COUNT(all_dtypes) + 1 + COUNT(wild_values)];
    size_t count = 0;
    for (size_t i = 0; i < COUNT(all_dtypes); ++i)
        dtypes[count++] = all_dtypes[i];
    dtypes[count++] = EW_F4E2M1;
    for (size_t i = 0; i < COUNT(wild_values); ++i)
        dtypes[count++] = (ew_dtype_t)wild_values[i];
    static const ew_block_format_t formats[] = {MX, NVFP4};
    for (size_t f = 0; f < COUNT(formats); ++f)
        for (size_t i = 0; i < count; ++i)
            for (size_t k = 0; k < count; ++k) {
                const ew_dtype_t element = dtypes[i], wide = dtypes[k];
                if (is_block_element(formats[f], element) && is_block_wide(wide)) {
                    EXPECT_DEVICE(ew_quantize_blocks(h, formats[f], element, wide, BR, BC, OUT, SCALES, IN_A, NULL, 0,
                                                     NULL));
                    EXPECT_DEVICE(ew_dequantize_blocks(h, formats[f], wide, element, BR, BC, OUT, IN_A, SCALES, NULL,
                                                       SWIZZLED, NULL));
                    continue;
                }
                EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                            ew_quantize_blocks(h, formats[f], element, wide, BR, BC, OUT, SCALES, IN_A, NULL, 0, NULL),
                            "dtype");
                EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                            ew_dequantize_blocks(h, formats[f], wide, element, BR, BC, OUT, IN_A, SCALES, NULL, 0,
                                                 NULL),
                            "dtype");
                /* also with nothing to do */
                EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                            ew_quantize_blocks(h, formats[f], element, wide, 0, BC, NULL, NULL, NULL, NULL, 0, NULL),
                            "dtype");
            }
    /* the header's named refusals, their dtypes named */
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_quantize_blocks(h, MX, EW_F8E8M0, EW_F32, BR, BC, OUT, SCALES, IN_A, NULL, 0, NULL), "dtype",
                "~e8m0");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_quantize_blocks(h, NVFP4, EW_F8E4M3, EW_BF16, BR, BC, OUT, SCALES, IN_A, NULL, 0, NULL), "dtype",
                "~e4m3");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F64, BR, BC, OUT, SCALES, IN_A, NULL, 0, NULL), "dtype",
                "~f64");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_dequantize_blocks(h, MX, EW_F64, EW_F8E5M2, BR, BC, OUT, IN_A, SCALES, NULL, 0, NULL), "dtype",
                "~f64");
    EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F8E4M3, BR, BC, OUT, IN_A, SCALES, NULL, 0, NULL), "dtype",
                "~e4m3");
    /* formats outside the enum */
    static const int bad_formats[] = {0, 3, -1, 1000};
    for (size_t i = 0; i < COUNT(bad_formats); ++i) {
        const ew_block_format_t f = (ew_block_format_t)bad_formats[i];
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                    ew_quantize_blocks(h, f, EW_F4E2M1, EW_F32, BR, BC, OUT, SCALES, IN_A, NULL, 0, NULL), "format");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                    ew_dequantize_blocks(h, f, EW_F32, EW_F4E2M1, BR, BC, OUT, IN_A, SCALES, NULL, 0, NULL), "format");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                    ew_quantize_blocks(h, f, EW_F4E2M1, EW_F32, 0, 0, NULL, NULL, NULL, NULL, 0, NULL), "format");
    }
}

/* e8m0 is a block scale and a dtype of the cast (every pair with it, both ways), of no other op;
 * f4e2m1 is the block calls' alone: no op of the catalogue, no scaled cast. */
static void test_block_dtypes_elsewhere(void **state)
{
    (void)state;
    static const ew_dtype_t block_dtypes[] = {EW_F8E8M0, EW_F4E2M1};
    for (size_t i = 0; i < COUNT(block_dtypes); ++i) {
        const ew_dtype_t b = block_dtypes[i];
        const int casts = b == EW_F8E8M0;
        for (int op = EW_OP_ADD; op <= EW_OP_AMAX; ++op)
            for (size_t k = 0; k < COUNT(all_dtypes); ++k) {
                const int expected = casts && op == EW_OP_CAST;
                assert_int_equal(ew_is_supported((ew_op_t)op, b, all_dtypes[k]), expected);
                assert_int_equal(ew_is_supported((ew_op_t)op, all_dtypes[k], b), expected);
                assert_int_equal(ew_is_supported((ew_op_t)op, b, b), expected);
            }
        if (casts) {
            EXPECT_DEVICE(ew_cast(h, b, EW_F32, N, OUT, IN_A, NULL));
            EXPECT_DEVICE(ew_cast(h, EW_BOOL, b, N, OUT, IN_A, NULL));
        } else {
            EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_cast(h, b, EW_F32, N, OUT, IN_A, NULL), "dtype");
            EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_cast(h, EW_F32, b, N, OUT, IN_A, NULL), "dtype");
        }
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_unary(h, EW_OP_RELU, b, N, OUT, IN_A, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_binary(h, EW_OP_ADD, b, N, OUT, IN_A, IN_B, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_scale_add(h, b, 1.0, N, OUT, IN_A, IN_B, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED,
                    ew_quantize(h, b, EW_F32, N, OUT, IN_A, SCALE, NULL, OVERWRITE, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_dequantize(h, EW_F32, b, N, OUT, IN_A, SCALE, NULL), "dtype");
        EXPECT_FAIL(EW_ERROR_NOT_SUPPORTED, ew_amax(h, b, N, IN_A, AMAX, OVERWRITE, NULL), "dtype");
    }
}

/* rows, cols and their product: INVALID_VALUE naming the size. */
static void test_blocks_sizes(void **state)
{
    (void)state;
    static const int64_t negative[] = {-1, -16, -1000, INT64_MIN};
    for (size_t i = 0; i < COUNT(negative); ++i) {
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, negative[i], BC, OUT, SCALES, IN_A, NULL, 0, NULL),
                    "rows");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_dequantize_blocks(h, NVFP4, EW_BF16, EW_F4E2M1, negative[i], BC, OUT, IN_A, SCALES, NULL, 0,
                                         NULL),
                    "rows");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F16, BR, negative[i], OUT, SCALES, IN_A, NULL, 0, NULL),
                    "cols");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_dequantize_blocks(h, MX, EW_F32, EW_F8E5M2, BR, negative[i], OUT, IN_A, SCALES, NULL, 0, NULL),
                    "cols");
    }
    /* cols a multiple of the block: 32 (MX), 16 (NVFP4) */
    static const int64_t mx_bad[] = {1, 16, 33, 48, 4095}, nvfp4_bad[] = {1, 8, 17, 24, 4104 + 1};
    for (size_t i = 0; i < COUNT(mx_bad); ++i) {
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_blocks(h, MX, EW_F4E2M1, EW_F32, BR, mx_bad[i], OUT, SCALES, IN_A, NULL, 0, NULL),
                    "cols");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_dequantize_blocks(h, MX, EW_F16, EW_F8E4M3, BR, mx_bad[i], OUT, IN_A, SCALES, NULL, SWIZZLED,
                                         NULL),
                    "cols");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, nvfp4_bad[i], OUT, SCALES, IN_A, NULL, 0, NULL),
                    "cols");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F4E2M1, 0, nvfp4_bad[i], NULL, NULL, NULL, NULL, 0, NULL),
                    "cols"); /* even with no rows */
    }
    char text[32];
    snprintf(text, sizeof text, "~%d", 33); /* the bad value is quoted */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, 33, OUT, SCALES, IN_A, NULL, 0, NULL), "cols", text);
    /* rows x cols past int64 */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, INT64_MAX / 16, 32, OUT, SCALES, IN_A, NULL, 0, NULL),
                "~rows");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F4E2M1, (int64_t)1 << 40, (int64_t)1 << 30, OUT, IN_A, SCALES,
                                     NULL, 0, NULL),
                "~rows");
    /* spans past the end of the address space */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, SCALES, ADDR(UINTPTR_MAX - 1023), NULL, 0,
                                   NULL),
                "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, ADDR(UINTPTR_MAX - 100), SCALES, IN_A, NULL, 0,
                                   NULL),
                "out");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, MX, EW_F32, EW_F8E4M3, BR, BC, OUT, IN_A, ADDR(UINTPTR_MAX - 4), NULL, 0, NULL),
                "scales");
    /* 2^62 elements: out's e2m1 (2^61 bytes) fits, x's f32 bytes overflow: x is named, not out */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, 1, (int64_t)1 << 62, OUT, SCALES, IN_A, NULL,
                                   0, NULL),
                "x");
}

/* options: only EW_BLOCKS_ROUND_UP (MX) and EW_BLOCKS_SWIZZLED. */
static void test_blocks_options(void **state)
{
    (void)state;
    static const unsigned bad_options[] = {4, 8, 0x100, 0x80000000u, ~0u, SWIZZLED | 4, ROUND_UP | 16};
    for (size_t i = 0; i < COUNT(bad_options); ++i) {
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, SCALES, IN_A, NULL, bad_options[i], NULL),
                    "options");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F16, BR, BC, OUT, SCALES, IN_A, GLOBAL, bad_options[i],
                                       NULL),
                    "options");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_dequantize_blocks(h, MX, EW_BF16, EW_F8E5M2, BR, BC, OUT, IN_A, SCALES, NULL, bad_options[i],
                                         NULL),
                    "options");
    }
    /* EW_BLOCKS_ROUND_UP is MX's */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, OUT, SCALES, IN_A, NULL, ROUND_UP, NULL),
                "~option", "~round_up");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_BF16, BR, BC, OUT, SCALES, IN_A, GLOBAL, ROUND_UP | SWIZZLED,
                                   NULL),
                "~option", "~round_up");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F4E2M1, BR, BC, OUT, IN_A, SCALES, NULL, ROUND_UP, NULL),
                "~option", "~round_up");
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, SCALES, IN_A, NULL, ROUND_UP, NULL));
    EXPECT_DEVICE(
        ew_quantize_blocks(h, MX, EW_F4E2M1, EW_BF16, BR, BC, OUT, SCALES, IN_A, NULL, ROUND_UP | SWIZZLED, NULL));
}

/* global_scale: NVFP4's only, aligned to 4, not inside what the call writes. */
static void test_blocks_global_scale(void **state)
{
    (void)state;
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, SCALES, IN_A, GLOBAL, 0, NULL), "global_scale");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F4E2M1, EW_F16, BR, BC, OUT, SCALES, IN_A, GLOBAL, ROUND_UP, NULL),
                "global_scale");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, MX, EW_F32, EW_F8E5M2, BR, BC, OUT, IN_A, SCALES, GLOBAL, 0, NULL),
                "global_scale");
    for (uintptr_t shift = 1; shift < 4; ++shift) {
        const float *g = (const float *)((uintptr_t)GLOBAL + shift);
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, OUT, SCALES, IN_A, g, 0, NULL),
                    "global_scale", "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_dequantize_blocks(h, NVFP4, EW_BF16, EW_F4E2M1, BR, BC, OUT, IN_A, SCALES, g, SWIZZLED, NULL),
                    "global_scale", "~align");
    }
    /* inside out (quantize: 4 x 64 e2m1 = 128 bytes), inside the scales (4 x 4 bytes, swizzled 512) */
    char *o = (char *)OUT, *s = (char *)SCALES, *x = (char *)IN_A;
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, (const float *)(o + 8), 0, NULL),
                "global_scale", "out");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, (const float *)(o + 124), 0, NULL),
                "global_scale", "out"); /* its last 4 bytes */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, (const float *)(s + 12), 0, NULL),
                "global_scale", "scales");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, (const float *)(s + 256), SWIZZLED,
                                   NULL),
                "global_scale", "scales"); /* inside the padding */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F4E2M1, BR, BC, x, o, s, (const float *)(x + 1020), 0, NULL),
                "global_scale", "out"); /* dequantize's out: 4 x 64 f32 = 1024 bytes */
    /* what the rule allows: next to out and the scales, inside what is only read */
    EXPECT_DEVICE(ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, (const float *)(o + 128), 0, NULL));
    EXPECT_DEVICE(ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, (const float *)(o - 4), 0, NULL));
    EXPECT_DEVICE(ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, (const float *)(s + 256), 0, NULL));
    EXPECT_DEVICE(ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, (const float *)(x + 64), 0, NULL));
    EXPECT_DEVICE(
        ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F4E2M1, BR, BC, x, o, s, (const float *)(o + 8), SWIZZLED, NULL));
    EXPECT_DEVICE(ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F4E2M1, BR, BC, x, o, s, (const float *)(s + 4), 0, NULL));
    EXPECT_DEVICE(ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, BR, BC, o, s, x, NULL, 0, NULL));
    /* at the top of the address space: out's 32 bytes (1 x 64 e2m1) end at the last address, the global
     * scale in its last 4 bytes (its end, 2^64, is not an address) */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F32, 1, BC, ADDR(UINTPTR_MAX - 32), s, x,
                                   (const float *)ADDR(UINTPTR_MAX - 3), 0, NULL),
                "global_scale", "out");
}

/* out, x, q and the scales: non-NULL where there are elements, x and dequantize's out aligned to their
 * element; q, quantize's out and the scales are bytes, any address. */
static void test_blocks_pointers(void **state)
{
    (void)state;
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, NULL, SCALES, IN_A, NULL, 0, NULL), "out", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, NULL, IN_A, NULL, 0, NULL), "scales", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F16, BR, BC, OUT, SCALES, NULL, GLOBAL, 0, NULL), "x",
                "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, MX, EW_F32, EW_F8E4M3, BR, BC, NULL, IN_A, SCALES, NULL, 0, NULL), "out",
                "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, MX, EW_F32, EW_F8E4M3, BR, BC, OUT, NULL, SCALES, NULL, 0, NULL), "q", "~null");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, NVFP4, EW_BF16, EW_F4E2M1, BR, BC, OUT, IN_A, NULL, NULL, SWIZZLED, NULL),
                "scales", "~null");
    /* nothing to do: NULL pointers are fine, in either layout */
    assert_int_equal(ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, 0, BC, NULL, NULL, NULL, NULL, 0, NULL), EW_SUCCESS);
    assert_int_equal(ew_quantize_blocks(h, MX, EW_F4E2M1, EW_BF16, BR, 0, NULL, NULL, NULL, NULL, SWIZZLED | ROUND_UP,
                                        NULL),
                     EW_SUCCESS);
    assert_int_equal(ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_F16, 0, 0, NULL, NULL, NULL, GLOBAL, 0, NULL),
                     EW_SUCCESS);
    assert_int_equal(ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F4E2M1, 0, 16, NULL, NULL, NULL, NULL, SWIZZLED, NULL),
                     EW_SUCCESS);
    assert_int_equal(ew_dequantize_blocks(h, MX, EW_F16, EW_F8E5M2, 7, 0, NULL, NULL, NULL, NULL, 0, NULL), EW_SUCCESS);
    /* x and dequantize's out misaligned to their element */
    for (uintptr_t shift = 1; shift < 4; ++shift) {
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, SCALES, (char *)IN_A + shift, NULL, 0,
                                       NULL),
                    "x", "~align");
        EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                    ew_dequantize_blocks(h, MX, EW_F32, EW_F4E2M1, BR, BC, (char *)OUT + shift, IN_A, SCALES, NULL, 0,
                                         NULL),
                    "out", "~align");
    }
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, NVFP4, EW_F4E2M1, EW_BF16, BR, BC, OUT, SCALES, (char *)IN_A + 1, NULL, 0, NULL),
                "x", "~align");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, MX, EW_F16, EW_F8E5M2, BR, BC, (char *)OUT + 3, IN_A, SCALES, NULL, 0, NULL),
                "out", "~align");
    /* valid: element-aligned but not vector-aligned wide sides, any byte for the codes and the scales */
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, (char *)OUT + 1, (char *)SCALES + 3,
                                     (char *)IN_A + 4, NULL, 0, NULL));
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F4E2M1, EW_F16, BR, BC, (char *)OUT + 3, (char *)SCALES + 1,
                                     (char *)IN_A + 2, NULL, SWIZZLED, NULL));
    EXPECT_DEVICE(ew_dequantize_blocks(h, NVFP4, EW_BF16, EW_F4E2M1, BR, BC, (char *)OUT + 6, (char *)IN_A + 1,
                                       (char *)SCALES + 5, GLOBAL, 0, NULL));
    EXPECT_DEVICE(ew_dequantize_blocks(h, MX, EW_F32, EW_F8E5M2, BR, BC, (char *)OUT + 12, (char *)IN_A + 7,
                                       (char *)SCALES + 2, NULL, SWIZZLED, NULL));
}

/* Overlaps: what a call writes (out; quantize's scales) meets nothing else of the call; what it only
 * reads (x or q, dequantize's scales) may meet each other. Spans: 4 x 64 elements, scales 4 x 2 (MX)
 * row-major, 128 x 4 swizzled. */
static void test_blocks_overlaps(void **state)
{
    (void)state;
    char *base = (char *)OUT;
    /* quantize MX e4m3 <- f32: out 256 bytes, x 1024, scales 8 or 512 */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, base, SCALES, base, NULL, 0, NULL), "out", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, base, SCALES, base + 252, NULL, 0, NULL), "out",
                "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, base + 1023, SCALES, base, NULL, 0, NULL), "out",
                "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, base, base + 100, IN_A, NULL, 0, NULL), "out",
                "scales");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, base + 8, base, IN_A, NULL, SWIZZLED, NULL), "out",
                "scales"); /* the padded span of the scales */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, (char *)IN_A + 512, IN_A, NULL, 0, NULL),
                "scales", "x");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, (char *)IN_A + 1020, IN_A, NULL, 0, NULL),
                "scales", "x");
    /* the swizzled scales span their padding: x right after the row-major scales meets them swizzled */
    char *s = (char *)SCALES;
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, s, s + 8, NULL, 0, NULL));
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, s, s + 8, NULL, SWIZZLED, NULL), "scales",
                "x");
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, OUT, s, s + 512, NULL, SWIZZLED, NULL));
    /* adjacent buffers do not overlap; e2m1's out is half a byte an element */
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, base, base + 256, base + 264, NULL, 0, NULL));
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, BR, BC, base + 1024, base + 1280, base, NULL, 0, NULL));
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F4E2M1, EW_F16, BR, BC, base, SCALES, base + 128, NULL, 0, NULL));
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_quantize_blocks(h, MX, EW_F4E2M1, EW_F16, BR, BC, base, SCALES, base + 126, NULL, 0, NULL), "out",
                "x");
    /* dequantize MX f32 <- e4m3: out 1024 bytes, q 256 */
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, MX, EW_F32, EW_F8E4M3, BR, BC, base, base + 1020, SCALES, NULL, 0, NULL), "out",
                "q");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, MX, EW_F32, EW_F8E4M3, BR, BC, base + 4, base, SCALES, NULL, 0, NULL), "out",
                "q");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, MX, EW_F32, EW_F8E4M3, BR, BC, base, IN_A, base + 1000, NULL, 0, NULL), "out",
                "scales");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE,
                ew_dequantize_blocks(h, NVFP4, EW_F16, EW_F4E2M1, BR, BC, base + 256, IN_A, base, NULL, SWIZZLED, NULL),
                "out", "scales"); /* the padded span of the scales: 512 bytes */
    /* q and the scales are both read: they may overlap, even coincide */
    EXPECT_DEVICE(ew_dequantize_blocks(h, MX, EW_F32, EW_F8E4M3, BR, BC, OUT, IN_A, (char *)IN_A + 4, NULL, 0, NULL));
    EXPECT_DEVICE(ew_dequantize_blocks(h, NVFP4, EW_F32, EW_F4E2M1, BR, BC, OUT, IN_A, IN_A, NULL, SWIZZLED, NULL));
    EXPECT_DEVICE(ew_dequantize_blocks(h, MX, EW_F32, EW_F8E4M3, BR, BC, base, base + 1024, base + 1280, NULL, 0, NULL));
}

/* Every supported call reaches the device check: formats, dtypes, both rules, both layouts, a global
 * scale or none, a large tensor, a stream that is never used without a device. */
/* The kernel caches' counters: each is read without a GPU (none counts before a kernel is created);
 * a NULL count or a value outside the enum is refused. */
static void test_kernel_cache_counts(void **state)
{
    (void)state;
    for (int k = 0; k < EW_KERNEL_CACHE_COUNTERS; ++k) {
        uint64_t count = 99;
        assert_int_equal(ew_kernel_cache_get_count((ew_kernel_cache_counter_t)k, &count), EW_SUCCESS);
        if (!gpu_present)
            assert_int_equal(count, 0);
    }
    uint64_t count = 7;
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_kernel_cache_get_count(EW_KERNEL_CACHE_COMPILES, NULL), "count", "NULL");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_kernel_cache_get_count(EW_KERNEL_CACHE_COUNTERS, &count), "counter", "4");
    EXPECT_FAIL(EW_ERROR_INVALID_VALUE, ew_kernel_cache_get_count((ew_kernel_cache_counter_t)-1, &count), "counter");
    assert_int_equal(count, 7);
}

static void test_blocks_valid_calls(void **state)
{
    (void)state;
    static const ew_dtype_t wides[] = {EW_F16, EW_BF16, EW_F32};
    static const struct {
        ew_block_format_t format;
        ew_dtype_t element;
    } formats[] = {{MX, EW_F8E4M3}, {MX, EW_F8E5M2}, {MX, EW_F4E2M1}, {NVFP4, EW_F4E2M1}};
    for (size_t f = 0; f < COUNT(formats); ++f)
        for (size_t w = 0; w < COUNT(wides); ++w)
            for (unsigned options = 0; options <= (ROUND_UP | SWIZZLED); ++options) {
                const ew_block_format_t format = formats[f].format;
                if (format == NVFP4 && (options & ROUND_UP))
                    continue;
                const float *g = format == NVFP4 && options ? GLOBAL : NULL;
                EXPECT_DEVICE(ew_quantize_blocks(h, format, formats[f].element, wides[w], BR, BC, OUT, SCALES, IN_A,
                                                 g, options, NULL));
                EXPECT_DEVICE(ew_quantize_blocks(h, format, formats[f].element, wides[w], 1, 32, OUT, SCALES, IN_A, g,
                                                 options, (ew_stream_t)ADDR(0x1234)));
                if (!(options & ROUND_UP))
                    EXPECT_DEVICE(ew_dequantize_blocks(h, format, wides[w], formats[f].element, BR, BC, OUT, IN_A,
                                                       SCALES, g, options, NULL));
            }
    /* 2^40 elements: the spans are far apart still */
    EXPECT_DEVICE(ew_quantize_blocks(h, MX, EW_F8E4M3, EW_F32, (int64_t)1 << 30, 1024, OUT, SCALES, IN_A, NULL,
                                     SWIZZLED, NULL));
    EXPECT_DEVICE(ew_dequantize_blocks(h, NVFP4, EW_BF16, EW_F4E2M1, (int64_t)1 << 20, (int64_t)1 << 20, OUT, IN_A,
                                       SCALES, GLOBAL, 0, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_dtype_names_and_sizes),
        cmocka_unit_test(test_null_handle),
        cmocka_unit_test(test_destroyed_handle),
        cmocka_unit_test(test_handle_getters),
        cmocka_unit_test(test_handle_create),
        cmocka_unit_test(test_values_outside_enums),
        cmocka_unit_test(test_pairs_outside_catalogue),
        cmocka_unit_test(test_negative_n),
        cmocka_unit_test(test_null_pointers),
        cmocka_unit_test(test_misaligned_pointers),
        cmocka_unit_test(test_overlaps),
        cmocka_unit_test(test_alpha),
        cmocka_unit_test(test_alpha_checked_when_n_is_zero),
        cmocka_unit_test(test_n_zero),
        cmocka_unit_test(test_valid_calls_reach_device),
        cmocka_unit_test(test_message_is_thread_local),
        cmocka_unit_test(test_strided_calls),
        cmocka_unit_test(test_scaled_handles),
        cmocka_unit_test(test_scaled_dtypes),
        cmocka_unit_test(test_scaled_n),
        cmocka_unit_test(test_scaled_scalars),
        cmocka_unit_test(test_scaled_operands),
        cmocka_unit_test(test_scaled_overlaps),
        cmocka_unit_test(test_scaled_strided),
        cmocka_unit_test(test_scaled_valid_calls),
        cmocka_unit_test(test_scaled_lists),
        cmocka_unit_test(test_blocks_scales_shape),
        cmocka_unit_test(test_blocks_handles),
        cmocka_unit_test(test_blocks_formats_and_dtypes),
        cmocka_unit_test(test_block_dtypes_elsewhere),
        cmocka_unit_test(test_blocks_sizes),
        cmocka_unit_test(test_blocks_options),
        cmocka_unit_test(test_blocks_global_scale),
        cmocka_unit_test(test_blocks_pointers),
        cmocka_unit_test(test_blocks_overlaps),
        cmocka_unit_test(test_blocks_valid_calls),
        cmocka_unit_test(test_kernel_cache_counts),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
