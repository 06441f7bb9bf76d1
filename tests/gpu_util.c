/* SPDX-License-Identifier: Apache-2.0 */
#include "gpu_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"

/* ======================================================================================== */
/* Setup                                                                                     */
/* ======================================================================================== */

static ew_handle_t shared_handle;

int gu_require_gpu(const char *program)
{
    int count = gu_device_count_or_exit(program);
    ew_status_t status = ew_handle_create(0, &shared_handle);
    if (status != EW_SUCCESS) {
        printf("FAIL: %s: cudaGetDeviceCount found %d device(s), but ew_handle_create(0) returned %s: %s\n",
               program, count, ew_status_string(status), ew_get_last_error_message());
        fflush(stdout);
        exit(1);
    }
    struct cudaDeviceProp prop;
    cudaError_t error = cudaGetDeviceProperties(&prop, 0);
    if (error != cudaSuccess) {
        printf("FAIL: %s: cudaGetDeviceProperties(0) returned %s (%s)\n", program, cudaGetErrorName(error),
               cudaGetErrorString(error));
        fflush(stdout);
        exit(1);
    }
    printf("GPU 0: %s (sm_%d%d), %d device(s)\n", prop.name, prop.major, prop.minor, count);
    return count;
}

ew_handle_t gu_handle(void) { return shared_handle; }

int gu_small_scale(void)
{
    static int scale = -1;
    if (scale < 0) {
        const char *value = getenv("EW_TEST_SCALE");
        if (value == NULL || strcmp(value, "") == 0 || strcmp(value, "full") == 0) {
            scale = 0;
        } else if (strcmp(value, "small") == 0) {
            scale = 1;
        } else {
            fprintf(stderr, "EW_TEST_SCALE=%s: expected \"small\" or \"full\"\n", value);
            exit(1);
        }
    }
    return scale;
}

uint64_t gu_seed(void)
{
    const char *value = getenv("EW_TEST_SEED");
    return value != NULL && *value != '\0' ? strtoull(value, NULL, 0) : UINT64_C(0x5EEDE1E3E17A15E);
}

/* ======================================================================================== */
/* Running the tests                                                                         */
/* ======================================================================================== */

static int skipped_tests; /* gu_skip calls since gu_run_tests began */

void gu_skip(gu_skip_kind_t kind, const char *format, ...)
{
    char reason[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(reason, sizeof reason, format, args);
    va_end(args);
    if (!gu_skip_allowed(kind, reason))
        fail(); /* does not return */
    skipped_tests++;
    skip();
    abort(); /* skip() does not return; this keeps the compiler sure of it */
}

int gu_run_tests(const char *group, const struct CMUnitTest *tests, size_t count, size_t named_only, int argc,
                 char **argv)
{
    const struct CMUnitTest *selected = tests;
    if (named_only > count) {
        fprintf(stderr, "%s: %zu tests named only, of %zu\n", group, named_only, count);
        return 2;
    }
    size_t selected_count = count - named_only;
    if (argc > 2) {
        fprintf(stderr, "usage: %s [TEST]\n", argv[0]);
        return 2;
    }
    if (argc == 2) {
        selected = NULL;
        for (size_t k = 0; k < count; ++k)
            if (strcmp(argv[1], tests[k].name) == 0)
                selected = &tests[k];
        if (selected == NULL) {
            fprintf(stderr, "%s: no test named \"%s\"; the tests are:\n", argv[0], argv[1]);
            for (size_t k = 0; k < count; ++k)
                fprintf(stderr, "    %s\n", tests[k].name);
            return 2;
        }
        selected_count = 1;
    }
    skipped_tests = 0;
    int failed = _cmocka_run_group_tests(group, selected, selected_count, NULL, NULL);
    return gu_exit_status(group, failed, skipped_tests, selected_count);
}

/* ======================================================================================== */
/* Checks                                                                                    */
/* ======================================================================================== */

void gu_fail_at(const char *file, int line, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vprint_error(format, args);
    va_end(args);
    print_error("\n");
    _fail(file, line);
    abort(); /* _fail does not return; this keeps the compiler sure of it */
}

void gu_check_cuda(cudaError_t error, const char *call, const char *file, int line)
{
    if (error != cudaSuccess)
        gu_fail_at(file, line, "%s:%d: %s failed: %s (%s)", file, line, call, cudaGetErrorName(error),
                   cudaGetErrorString(error));
}

void gu_check_ew(ew_status_t got, ew_status_t expected, const char *call, const char *file, int line)
{
    if (got != expected)
        gu_fail_at(file, line, "%s:%d: %s returned %s, expected %s; last error message: \"%s\"", file, line,
                   call, ew_status_string(got), ew_status_string(expected), ew_get_last_error_message());
}

/* ======================================================================================== */
/* Tracked resources                                                                         */
/* ======================================================================================== */

typedef enum { RES_HOST, RES_PINNED, RES_BUFFER, RES_STREAM, RES_GRAPH, RES_GRAPH_EXEC } resource_kind;

typedef struct {
    resource_kind kind;
    void *pointer;
} resource_t;

static resource_t *resources;
static size_t resource_count, resource_capacity;

static void track(resource_kind kind, void *pointer)
{
    if (resource_count == resource_capacity) {
        size_t capacity = resource_capacity ? 2 * resource_capacity : 64;
        resource_t *grown = realloc(resources, capacity * sizeof *grown);
        if (grown == NULL) {
            fprintf(stderr, "out of host memory\n");
            abort();
        }
        resources = grown;
        resource_capacity = capacity;
    }
    resources[resource_count++] = (resource_t){kind, pointer};
}

static void untrack(void *pointer)
{
    for (size_t i = resource_count; i-- > 0;)
        if (resources[i].pointer == pointer) {
            resources[i] = resources[--resource_count];
            return;
        }
}

void *gu_host_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        GU_FAIL("malloc(%zu) failed", bytes);
    track(RES_HOST, p);
    return p;
}

void *gu_pinned_alloc(size_t bytes)
{
    void *p = NULL;
    GU_CUDA(cudaMallocHost(&p, bytes));
    track(RES_PINNED, p);
    return p;
}

cudaStream_t gu_stream_new(unsigned flags)
{
    cudaStream_t stream = NULL;
    GU_CUDA(cudaStreamCreateWithFlags(&stream, flags));
    track(RES_STREAM, stream);
    return stream;
}

void gu_track_graph(cudaGraph_t graph) { track(RES_GRAPH, graph); }
void gu_track_graph_exec(cudaGraphExec_t exec) { track(RES_GRAPH_EXEC, exec); }

static void buffer_release(gu_buffer_t *buffer)
{
    cudaFree(buffer->base);
    free(buffer->image);
    free(buffer);
}

int gu_teardown(void **state)
{
    (void)state;
    int result = 0;
    /* A test that failed mid-capture leaves its stream capturing: end that first. */
    for (size_t i = 0; i < resource_count; ++i) {
        if (resources[i].kind != RES_STREAM)
            continue;
        cudaStream_t stream = resources[i].pointer;
        enum cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(stream, &capturing) == cudaSuccess &&
            capturing != cudaStreamCaptureStatusNone) {
            cudaGraph_t graph = NULL;
            cudaStreamEndCapture(stream, &graph);
            if (graph != NULL)
                cudaGraphDestroy(graph);
        }
    }
    for (size_t i = 0; i < resource_count; ++i) {
        if (resources[i].kind == RES_GRAPH_EXEC)
            cudaGraphExecDestroy(resources[i].pointer);
    }
    for (size_t i = 0; i < resource_count; ++i) {
        if (resources[i].kind == RES_GRAPH)
            cudaGraphDestroy(resources[i].pointer);
    }
    cudaError_t error = cudaDeviceSynchronize();
    if (error != cudaSuccess) {
        print_error("teardown: cudaDeviceSynchronize: %s (%s)\n", cudaGetErrorName(error),
                    cudaGetErrorString(error));
        result = -1;
    }
    for (size_t i = 0; i < resource_count; ++i) {
        switch (resources[i].kind) {
        case RES_HOST: free(resources[i].pointer); break;
        case RES_PINNED: cudaFreeHost(resources[i].pointer); break;
        case RES_BUFFER: buffer_release(resources[i].pointer); break;
        case RES_STREAM: cudaStreamDestroy(resources[i].pointer); break;
        case RES_GRAPH:
        case RES_GRAPH_EXEC: break;
        }
    }
    resource_count = 0;
    error = cudaGetLastError();
    if (error != cudaSuccess && result == 0) {
        print_error("teardown: a CUDA error was left behind: %s\n", cudaGetErrorName(error));
        result = -1;
    }
    return result;
}

/* ======================================================================================== */
/* Guarded buffers                                                                           */
/* ======================================================================================== */

int gu_offset_count(ew_dtype_t dtype) { return (int)(GU_MAX_OFFSET_BYTES / ew_dtype_size(dtype)); }

gu_buffer_t *gu_buffer_new(ew_dtype_t dtype, int64_t capacity)
{
    size_t size = ew_dtype_size(dtype);
    if (size == 0 || capacity < 1)
        GU_FAIL("gu_buffer_new: bad dtype %d or capacity %" PRId64, (int)dtype, capacity);
    gu_buffer_t *buffer = calloc(1, sizeof *buffer);
    if (buffer == NULL)
        GU_FAIL("out of host memory");
    buffer->dtype = dtype;
    buffer->elem_size = size;
    buffer->capacity = capacity;
    buffer->bytes = 2 * GU_GUARD_BYTES + (size_t)capacity * size + GU_MAX_OFFSET_BYTES;
    buffer->image = malloc(buffer->bytes);
    cudaError_t error = cudaMalloc((void **)&buffer->base, buffer->bytes);
    if (buffer->image == NULL || error != cudaSuccess) {
        free(buffer->image);
        free(buffer);
        GU_FAIL("allocating a %zu-byte buffer: %s", (size_t)(2 * GU_GUARD_BYTES + (size_t)capacity * size),
                cudaGetErrorName(error));
    }
    track(RES_BUFFER, buffer);
    gu_buffer_poison(buffer, GU_POISON);
    return buffer;
}

void gu_buffer_free(gu_buffer_t *buffer)
{
    untrack(buffer);
    buffer_release(buffer);
}

int64_t gu_buffer_region_elems(const gu_buffer_t *buffer)
{
    return buffer->capacity + (int64_t)(GU_MAX_OFFSET_BYTES / buffer->elem_size);
}

static size_t region_offset(const gu_buffer_t *buffer, int offset)
{
    if (offset < 0 || (size_t)offset * buffer->elem_size >= GU_MAX_OFFSET_BYTES)
        GU_FAIL("element offset %d of %s is not within 16 bytes", offset, ew_dtype_name(buffer->dtype));
    return GU_GUARD_BYTES + (size_t)offset * buffer->elem_size;
}

void *gu_at(const gu_buffer_t *buffer, int offset) { return buffer->base + region_offset(buffer, offset); }

unsigned char *gu_image_at(const gu_buffer_t *buffer, int offset)
{
    return buffer->image + region_offset(buffer, offset);
}

void gu_buffer_load(gu_buffer_t *buffer, const void *host, int64_t count)
{
    if (count < 0 || count > gu_buffer_region_elems(buffer))
        GU_FAIL("gu_buffer_load: %" PRId64 " elements do not fit", count);
    memset(buffer->image, GU_POISON, buffer->bytes);
    memcpy(buffer->image + GU_GUARD_BYTES, host, (size_t)count * buffer->elem_size);
    GU_CUDA(cudaMemcpy(buffer->base, buffer->image, buffer->bytes, cudaMemcpyHostToDevice));
    GU_CUDA(cudaDeviceSynchronize()); /* a pageable copy may still be in flight: order it before any stream */
}

void gu_buffer_poison(gu_buffer_t *buffer, uint8_t byte)
{
    memset(buffer->image, byte, buffer->bytes);
    GU_CUDA(cudaMemset(buffer->base, byte, buffer->bytes));
    GU_CUDA(cudaDeviceSynchronize()); /* ordered before a call on any stream */
}

void gu_buffer_poison_async(gu_buffer_t *buffer, uint8_t byte, cudaStream_t stream)
{
    memset(buffer->image, byte, buffer->bytes);
    GU_CUDA(cudaMemsetAsync(buffer->base, byte, buffer->bytes, stream));
}

static unsigned char *download(const gu_buffer_t *buffer)
{
    unsigned char *got = malloc(buffer->bytes);
    if (got == NULL)
        GU_FAIL("out of host memory");
    cudaError_t error = cudaMemcpy(got, buffer->base, buffer->bytes, cudaMemcpyDeviceToHost);
    if (error != cudaSuccess) {
        free(got);
        GU_FAIL("cudaMemcpy(device to host) of a %zu-byte buffer failed: %s (%s); an earlier kernel may have "
                "faulted",
                buffer->bytes, cudaGetErrorName(error), cudaGetErrorString(error));
    }
    return got;
}

/* Where byte `at` of the allocation lies, for messages. */
static void describe_byte(const gu_buffer_t *buffer, size_t at, char *text, size_t size)
{
    size_t region_end = buffer->bytes - GU_GUARD_BYTES;
    if (at < GU_GUARD_BYTES)
        snprintf(text, size, "front guard byte %zu", at);
    else if (at >= region_end)
        snprintf(text, size, "back guard byte %zu", at - region_end);
    else
        snprintf(text, size, "region byte %zu", at - GU_GUARD_BYTES);
}

/* Bytes of got outside [begin, end) that differ from the image; prints the first few. */
static size_t check_bytes_outside(const gu_buffer_t *buffer, const unsigned char *got, size_t begin,
                                  size_t end, const char *what)
{
    size_t bad = 0;
    for (size_t at = 0; at < buffer->bytes; ++at) {
        if ((at >= begin && at < end) || got[at] == buffer->image[at])
            continue;
        if (bad++ < 8) {
            char where[64];
            describe_byte(buffer, at, where, sizeof where);
            print_error("%s: %s (outside the call's elements) is 0x%02x, was 0x%02x\n", what, where, got[at],
                        buffer->image[at]);
        }
    }
    if (bad > 8)
        print_error("%s: ... %zu bytes outside the call's elements changed in all\n", what, bad);
    return bad;
}

void gu_check_unchanged(const gu_buffer_t *buffer, const char *what, const char *file, int line)
{
    unsigned char *got = download(buffer);
    size_t bad = check_bytes_outside(buffer, got, 0, 0, what);
    free(got);
    if (bad)
        gu_fail_at(file, line, "%s: %zu bytes of a buffer the call must not write were written", what, bad);
}

void gu_check_poisoned(const void *device, size_t bytes, const char *what, const char *file, int line)
{
    unsigned char *got = malloc(bytes ? bytes : 1);
    if (got == NULL)
        gu_fail_at(file, line, "%s: out of host memory", what);
    cudaError_t error = cudaMemcpy(got, device, bytes, cudaMemcpyDeviceToHost);
    size_t at = 0;
    while (error == cudaSuccess && at < bytes && got[at] == GU_POISON)
        ++at;
    const unsigned byte = at < bytes ? got[at] : 0;
    free(got);
    if (error != cudaSuccess)
        gu_fail_at(file, line, "%s: cudaMemcpy(device to host) of %zu guard bytes failed: %s (%s)", what,
                   bytes, cudaGetErrorName(error), cudaGetErrorString(error));
    if (at < bytes)
        gu_fail_at(file, line, "%s: guard byte %zu of %zu is 0x%02x, not the poison 0x%02x: written", what,
                   at, bytes, byte, GU_POISON);
}

uint64_t gu_bits(ew_dtype_t dtype, const void *host, int64_t i)
{
    size_t size = ew_dtype_size(dtype);
    const unsigned char *p = (const unsigned char *)host + (size_t)i * size;
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (size) {
    case 1: memcpy(&v8, p, 1); return v8;
    case 2: memcpy(&v16, p, 2); return v16;
    case 4: memcpy(&v32, p, 4); return v32;
    default: memcpy(&v64, p, 8); return v64;
    }
}

static int hex_digits(ew_dtype_t dtype) { return (int)(2 * ew_dtype_size(dtype)); }

static void print_mismatch(ew_dtype_t dtype, int64_t i, const void *expected, const void *got,
                           const gu_inputs_t *inputs, const char *note)
{
    char in_text[96] = "";
    static const char *const one[] = {"x"}, *const two[] = {"a", "b"};
    int count = inputs != NULL ? inputs->count : 0;
    size_t used = 0;
    for (int k = 0; k < count; ++k)
        used += (size_t)snprintf(in_text + used, sizeof in_text - used, "%s=0x%0*" PRIx64 " ",
                                 count == 1 ? one[0] : two[k], hex_digits(inputs->dtype[k]),
                                 gu_bits(inputs->dtype[k], inputs->host[k], i));
    print_error("    [%" PRId64 "] %sexpected=0x%0*" PRIx64 " got=0x%0*" PRIx64 "%s\n", i, in_text,
                hex_digits(dtype), gu_bits(dtype, expected, i), hex_digits(dtype), gu_bits(dtype, got, i),
                note);
}

int64_t gu_compare(ew_dtype_t dtype, int64_t n, const void *expected, const void *got,
                   const gu_inputs_t *inputs, const char *what)
{
    size_t size = ew_dtype_size(dtype);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (memcmp((const unsigned char *)expected + (size_t)i * size,
                   (const unsigned char *)got + (size_t)i * size, size) == 0)
            continue;
        if (bad == 0)
            print_error("%s: elements differ from the reference (dtype %s; first 8 shown):\n", what,
                        ew_dtype_name(dtype));
        if (bad++ < 8)
            print_mismatch(dtype, i, expected, got, inputs, "");
    }
    if (bad)
        print_error("%s: %" PRId64 " of %" PRId64 " elements differ\n", what, bad, n);
    return bad;
}

int64_t gu_check_output(const gu_buffer_t *buffer, int offset, int64_t n, const void *expected,
                        const gu_inputs_t *inputs, const char *what, const char *file, int line)
{
    size_t size = buffer->elem_size;
    size_t begin = region_offset(buffer, offset);
    if (n < 0 || n > buffer->capacity)
        gu_fail_at(file, line, "%s: n = %" PRId64 " does not fit the buffer", what, n);
    size_t end = begin + (size_t)n * size;
    unsigned char *got = download(buffer);

    size_t guards_bad = check_bytes_outside(buffer, got, begin, end, what);
    int64_t bad = 0, ambiguous = 0;
    for (int64_t i = 0; i < n; ++i) {
        const unsigned char *want = (const unsigned char *)expected + (size_t)i * size;
        const unsigned char *have = got + begin + (size_t)i * size;
        const unsigned char *before = buffer->image + begin + (size_t)i * size;
        if (memcmp(want, before, size) == 0)
            ambiguous++;
        if (memcmp(want, have, size) == 0)
            continue;
        if (bad == 0)
            print_error("%s: elements differ from the reference (out dtype %s; first 8 shown):\n", what,
                        ew_dtype_name(buffer->dtype));
        if (bad++ < 8)
            print_mismatch(buffer->dtype, i, expected, got + begin, inputs,
                           memcmp(have, before, size) == 0 ? " (never written: still what was there before)"
                                                           : "");
    }
    free(got);
    if (bad)
        print_error("%s: %" PRId64 " of %" PRId64 " elements differ\n", what, bad, n);
    if (bad || guards_bad)
        gu_fail_at(file, line, "%s: %" PRId64 " wrong elements, %zu bytes written outside the output", what,
                   bad, guards_bad);
    return ambiguous;
}

/* ======================================================================================== */
/* Random inputs                                                                             */
/* ======================================================================================== */

gu_rng_t gu_rng(uint64_t seed) { return (gu_rng_t){seed}; }

/* splitmix64: tiny, fast, and every seed gives a good stream. */
uint64_t gu_rng_next(gu_rng_t *rng)
{
    uint64_t z = (rng->state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* clang-format off */
/* Edge values as doubles, rounded into the float dtype (with a random sign) by the reference. */
static const double float_value_specials[] = {
    0.0, 1.0, 0.5, 1.5, 2.5, 3.5, 128.0, 129.0, 255.0, 255.5, 256.0, 300.7, 448.0, 449.0, 464.0, 465.0,
    480.0, 57344.0, 61439.0, 61440.0, 65504.0, 65519.0, 65520.0, 65536.0,
    16777215.0, 16777216.0, 16777217.0, 16777219.0, 2147483520.0, 2147483647.0, 2147483648.0, 2147483904.0,
    4294967296.0, 9223372036854775808.0, 18446744073709551616.0, 1e30, 3.4028234663852886e38,
    3.4028235677973366e38 /* half an ulp past FLT_MAX: the f32 overflow tie */, 1e300,
    0x1p-6, 0x1p-7, 0x1p-9, 0x1p-10, 0x3p-10, 0x1p-14, 0x1p-15, 0x1p-16, 0x1p-17, 0x3p-17, 0x1p-24, 0x1p-25,
    0x3p-25, 0x1p-126, 0x1p-127, 0x1p-133, 0x1p-149, 0x1p-150, 0x3p-150, 0x1p-1074,
    0x1.01p0 /* bf16 tie to even (down) */, 0x1.03p0 /* bf16 tie to even (up) */,
    0x1.002p0 /* f16 tie (down) */, 0x1.006p0 /* f16 tie (up) */, 0x1.000001p0 /* f32 tie (down) */,
    0x1.000003p0 /* f32 tie (up) */, 0x1.1p0 /* e4m3 tie (down) */, 0x1.3p0 /* e4m3 tie (up) */,
    0x1.2p0 /* e5m2 tie (down) */, 0x1.6p0 /* e5m2 tie (up) */,
    1.0 / 3.0, 0.1,
};

/* Integer edges as int64; narrower dtypes keep the low bits. */
static const int64_t integer_specials[] = {
    0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 300, -300, 448, 464, 465, -465, 32767, 32768, -32768, -32769,
    65535, 65536, 57344, 61440, 65504, 65520, 16777215, 16777216, 16777217, -16777217, 16777219, 33554433,
    16842753 /* 2^24 + 2^16 + 1: rounds twice through float to bf16 */, -16842753, 2147483647,
    -2147483647 - 1, 2147483520, 2147483584, 4294967295, 9007199254740993, -9007199254740993, INT64_MAX,
    INT64_MIN, INT64_MIN + 1, INT64_C(4611686018427387905), INT64_C(0x7FFFFF8000000000),
    INT64_C(0x7FFFFFBFFFFFFFFF),
};

/* Raw bit patterns per float dtype: NaNs (quiet and signalling, several payloads, both signs), infinities,
 * zeros, smallest and largest subnormals, smallest normal, largest finite and lowest. */
static const uint64_t f64_bit_specials[] = {
    UINT64_C(0x7FF8000000000000), UINT64_C(0xFFF8000000000000), UINT64_C(0x7FF0000000000001),
    UINT64_C(0xFFF0000000000001), UINT64_C(0x7FF4000000000000), UINT64_C(0x7FF80000FFFFFFFF),
    UINT64_C(0x7FF0000020000000), UINT64_C(0xFFFFFFFFFFFFFFFF), UINT64_C(0x7FFFFFFFFFFFFFFF),
    UINT64_C(0x7FF0000000000000), UINT64_C(0xFFF0000000000000), UINT64_C(0x0000000000000000),
    UINT64_C(0x8000000000000000), UINT64_C(0x0000000000000001), UINT64_C(0x8000000000000001),
    UINT64_C(0x000FFFFFFFFFFFFF), UINT64_C(0x0010000000000000), UINT64_C(0x7FEFFFFFFFFFFFFF),
    UINT64_C(0xFFEFFFFFFFFFFFFF),
};
static const uint64_t f32_bit_specials[] = {
    0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA5A5A5, 0xFFB00001, 0xFFFFFFFF, 0x7FFFFFFF,
    0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,
    0x7F7FFFFF, 0xFF7FFFFF,
};
static const uint64_t f16_bit_specials[] = {
    0x7E00, 0xFE00, 0x7C01, 0xFC01, 0x7D55, 0xFFFF, 0x7FFF, 0x7C00, 0xFC00, 0x0000, 0x8000,
    0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF,
};
static const uint64_t bf16_bit_specials[] = {
    0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x7FA5, 0xFFFF, 0x7FFF, 0x7F80, 0xFF80, 0x0000, 0x8000,
    0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F,
};
static const uint64_t e4m3_bit_specials[] = {
    0x7F, 0xFF, 0x7E, 0xFE, 0x00, 0x80, 0x01, 0x81, 0x07, 0x08, 0x78, 0x77,
};
static const uint64_t e5m2_bit_specials[] = {
    0x7C, 0xFC, 0x7D, 0xFD, 0x7E, 0x7F, 0xFF, 0x7B, 0xFB, 0x00, 0x80, 0x01, 0x81, 0x03, 0x04,
};
/* e8m0 has no sign, zero or infinity: NaN, 2^-127, 2^-126, 1, 2, the largest 2^127 */
static const uint64_t e8m0_bit_specials[] = {
    0xFF, 0x00, 0x01, 0x7F, 0x80, 0xFE,
};

/* clang-format on */

static void store_bits(unsigned char *p, size_t size, uint64_t bits)
{
    uint8_t v8 = (uint8_t)bits;
    uint16_t v16 = (uint16_t)bits;
    uint32_t v32 = (uint32_t)bits;
    switch (size) {
    case 1: memcpy(p, &v8, 1); break;
    case 2: memcpy(p, &v16, 2); break;
    case 4: memcpy(p, &v32, 4); break;
    default: memcpy(p, &bits, 8); break;
    }
}

static int is_float(ew_dtype_t dtype)
{
    return dtype == EW_F16 || dtype == EW_BF16 || dtype == EW_F32 || dtype == EW_F64 || dtype == EW_F8E4M3 ||
           dtype == EW_F8E5M2 || dtype == EW_F8E8M0;
}

static void bit_specials(ew_dtype_t dtype, const uint64_t **list, size_t *count)
{
    switch (dtype) {
    case EW_F64:
        *list = f64_bit_specials;
        *count = COUNT(f64_bit_specials);
        break;
    case EW_F32:
        *list = f32_bit_specials;
        *count = COUNT(f32_bit_specials);
        break;
    case EW_F16:
        *list = f16_bit_specials;
        *count = COUNT(f16_bit_specials);
        break;
    case EW_BF16:
        *list = bf16_bit_specials;
        *count = COUNT(bf16_bit_specials);
        break;
    case EW_F8E4M3:
        *list = e4m3_bit_specials;
        *count = COUNT(e4m3_bit_specials);
        break;
    case EW_F8E5M2:
        *list = e5m2_bit_specials;
        *count = COUNT(e5m2_bit_specials);
        break;
    default:
        *list = e8m0_bit_specials;
        *count = COUNT(e8m0_bit_specials);
        break;
    }
}

static void store_double(ew_dtype_t dtype, unsigned char *p, double value)
{
    ref_cast(dtype, EW_F64, 1, p, &value);
}

void gu_fill_random(ew_dtype_t dtype, int64_t n, void *host, gu_rng_t *rng)
{
    size_t size = ew_dtype_size(dtype);
    unsigned char *out = host;
    const uint64_t *bits_list = NULL;
    size_t bits_count = 0;
    if (is_float(dtype))
        bit_specials(dtype, &bits_list, &bits_count);
    for (int64_t i = 0; i < n; ++i) {
        unsigned char *p = out + (size_t)i * size;
        uint64_t r = gu_rng_next(rng);
        unsigned pick = (unsigned)(r % 100);
        uint64_t more = gu_rng_next(rng);
        if (dtype == EW_BOOL) {
            store_bits(p, 1, pick < 40 ? 0 : pick < 70 ? 1 : (more & 0xFF)); /* any nonzero byte is true */
        } else if (!is_float(dtype)) {
            if (pick < 20)
                store_bits(p, size, (uint64_t)integer_specials[more % COUNT(integer_specials)]);
            else if (pick < 50)
                store_bits(p, size, (uint64_t)((int64_t)(more % 601) - 300));
            else
                store_bits(p, size, more);
        } else if (pick < 15) {
            store_bits(p, size, bits_list[more % bits_count]);
        } else if (pick < 35) {
            double value = float_value_specials[more % COUNT(float_value_specials)];
            store_double(dtype, p, (more >> 40) & 1 ? -value : value);
        } else if (pick < 60) {
            /* moderate values with fractions: sums, products and integer casts that stay in range */
            double value = (double)((int64_t)(more % 2000001) - 1000000) / 1000.0;
            if ((more >> 50) % 4 == 0)
                value /= 4096.0;
            store_double(dtype, p, value);
        } else {
            store_bits(p, size, more);
        }
    }
    for (size_t k = 0; k < (size_t)n * size; ++k)
        if (out[k] != 0)
            return;
    if (n > 0)
        store_double(dtype, out, 1.0); /* never all zeros */
}
