/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor lists without a GPU: every entry-level error of the four calls gives its status and a message
 * naming the entry's index, before anything reaches the device; EW_CHECK_POINTERS's sort finds an
 * output overlapping another entry; and the packing of lists into launches (src/plan/batched.h), checked by
 * walking every block of every launch as the kernel finds its row and chunk, over counts 0, 1, the
 * blocks' capacities and mixes of sizes.
 *
 * The handle comes from ewi_handle_make (no device query), as in test_api: a valid call stops at the
 * device check (EW_ERROR_CUDA without a GPU, EW_ERROR_DEVICE_MISMATCH with one), nothing is launched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "plan/batched.h"
#include "elementwise.h"
#include "abi/handle.h"

#define ADDR(x) ((void *)(uintptr_t)(x))
#define COUNT(array) (sizeof(array) / sizeof((array)[0]))
enum { ENTRIES = 24 };

static ew_handle_t h, h_checked; /* h_checked: EW_CHECK_POINTERS's overlap sort on */
static int gpu_present;

static int group_setup(void **state)
{
    (void)state;
    int count = 0;
    gpu_present = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    cudaGetLastError();
    const int device = gpu_present ? count + 7 : 0; /* a device that does not exist */
    ewi_handle_t *checked;
    if (ewi_handle_make(device, 132, 2048, &h) != EW_SUCCESS ||
        ewi_handle_make(device, 132, 2048, &h_checked) != EW_SUCCESS ||
        ewi_handle_find(h_checked, &checked) != EW_SUCCESS)
        return -1;
    checked->check_pointers = 1;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return ew_handle_destroy(h) == EW_SUCCESS && ew_handle_destroy(h_checked) == EW_SUCCESS ? 0 : -1;
}

/* A list of ENTRIES valid, disjoint entries: entry i at its own 1 GiB-spaced addresses, n[i] = 100 + i. */
typedef struct {
    int64_t n[ENTRIES];
    void *out[ENTRIES];
    const void *a[ENTRIES], *b[ENTRIES];
} list_t;

static void list_make(list_t *l)
{
    for (int i = 0; i < ENTRIES; ++i) {
        l->n[i] = 100 + i;
        l->out[i] = ADDR(0x100000000000ull + ((uint64_t)i << 30));
        l->a[i] = ADDR(0x200000000000ull + ((uint64_t)i << 30));
        l->b[i] = ADDR(0x300000000000ull + ((uint64_t)i << 30));
    }
}

/* Each call of the family on the list, f32 (cast: f16 -> f32). */
typedef enum { UNARY, BINARY, CAST, SCALE_ADD, CALLS } call_kind_t;
static const char *const call_names[CALLS] = {"ew_unary_batched", "ew_binary_batched", "ew_cast_batched",
                                              "ew_scale_add_batched"};

static ew_status_t call_list(ew_handle_t handle, call_kind_t kind, int64_t count, const list_t *l)
{
    const int64_t *n = l ? l->n : NULL;
    void *const *out = l ? l->out : NULL;
    const void *const *a = l ? l->a : NULL, *const *b = l ? l->b : NULL;
    switch (kind) {
    case UNARY: return ew_unary_batched(handle, EW_OP_RELU, EW_F32, count, n, out, a, NULL);
    case BINARY: return ew_binary_batched(handle, EW_OP_ADD, EW_F32, count, n, out, a, b, NULL);
    case CAST: return ew_cast_batched(handle, EW_F32, EW_F16, count, n, out, a, NULL);
    case SCALE_ADD: return ew_scale_add_batched(handle, EW_F32, 0.5, count, n, out, a, b, NULL);
    default: return EW_ERROR_NOT_SUPPORTED;
    }
}

/* Fails unless status is expected and the message holds every fragment (NULL-terminated). */
static void expect(const char *what, ew_status_t status, ew_status_t expected, ...)
{
    const char *message = ew_get_last_error_message();
    if (status != expected) {
        print_error("%s: returned %s, expected %s (message: \"%s\")\n", what, ew_status_string(status),
                    ew_status_string(expected), message);
        fail();
    }
    va_list fragments;
    va_start(fragments, expected);
    for (const char *f; (f = va_arg(fragments, const char *)) != NULL;)
        if (strstr(message, f) == NULL) {
            print_error("%s: message \"%s\" lacks \"%s\"\n", what, message, f);
            fail();
        }
    va_end(fragments);
}

/* A valid call stops at the device check. */
static void expect_device(const char *what, ew_status_t status)
{
    if (status != EW_ERROR_CUDA && status != EW_ERROR_DEVICE_MISMATCH) {
        print_error("%s: returned %s, expected to stop at the device check (message: \"%s\")\n", what,
                    ew_status_string(status), ew_get_last_error_message());
        fail();
    }
    if (gpu_present)
        assert_int_equal(status, EW_ERROR_DEVICE_MISMATCH);
}

static void test_valid_and_empty(void **state)
{
    (void)state;
    list_t l;
    list_make(&l);
    for (call_kind_t k = 0; k < CALLS; ++k) {
        expect_device(call_names[k], call_list(h, k, ENTRIES, &l));
        expect_device(call_names[k], call_list(h_checked, k, ENTRIES, &l));
        /* count 0 with NULL arrays, and entries all of n = 0 with NULL pointers: nothing to do */
        expect(call_names[k], call_list(h, k, 0, NULL), EW_SUCCESS, NULL);
        list_t empty;
        memset(&empty, 0, sizeof empty);
        expect(call_names[k], call_list(h, k, ENTRIES, &empty), EW_SUCCESS, NULL);
        /* one entry of n > 0 among empty ones */
        empty.n[7] = 5;
        empty.out[7] = l.out[7], empty.a[7] = l.a[7], empty.b[7] = l.b[7];
        expect_device(call_names[k], call_list(h, k, ENTRIES, &empty));
        /* in place (out == a; cast only between equal sizes: f16 -> f32 is refused below) */
        if (k != CAST) {
            list_t in_place = l;
            in_place.a[3] = in_place.out[3];
            expect_device(call_names[k], call_list(h_checked, k, ENTRIES, &in_place));
        }
        /* entries sharing an input */
        list_t shared = l;
        shared.a[9] = shared.a[2];
        expect_device(call_names[k], call_list(h_checked, k, ENTRIES, &shared));
    }
}

static void test_list_arguments(void **state)
{
    (void)state;
    list_t l;
    list_make(&l);
    for (call_kind_t k = 0; k < CALLS; ++k) {
        const char *what = call_names[k];
        expect(what, call_list(h, k, -1, &l), EW_ERROR_INVALID_VALUE, "count = -1", NULL);
        expect(what, call_list(NULL, k, ENTRIES, &l), EW_ERROR_INVALID_HANDLE, NULL);
        switch (k) {
        case UNARY: expect(what, ew_unary_batched(h, EW_OP_RELU, EW_F32, 3, NULL, l.out, l.a, NULL), EW_ERROR_INVALID_VALUE, "n is NULL with count = 3", NULL);
            expect(what, ew_unary_batched(h, EW_OP_RELU, EW_F32, 3, l.n, NULL, l.a, NULL), EW_ERROR_INVALID_VALUE, "out is NULL with count = 3", NULL);
            expect(what, ew_unary_batched(h, EW_OP_RELU, EW_F32, 3, l.n, l.out, NULL, NULL), EW_ERROR_INVALID_VALUE, "x is NULL with count = 3", NULL);
            expect(what, ew_unary_batched(h, EW_OP_ADD, EW_F32, 3, l.n, l.out, l.a, NULL), EW_ERROR_NOT_SUPPORTED, "ew_unary_batched", NULL);
            expect(what, ew_unary_batched(h, EW_OP_RELU, EW_BOOL, 3, l.n, l.out, l.a, NULL), EW_ERROR_NOT_SUPPORTED, "bool", NULL);
            break;
        case BINARY: expect(what, ew_binary_batched(h, EW_OP_ADD, EW_F32, 3, l.n, l.out, l.a, NULL, NULL), EW_ERROR_INVALID_VALUE, "b is NULL with count = 3", NULL);
            expect(what, ew_binary_batched(h, EW_OP_RELU, EW_F32, 3, l.n, l.out, l.a, l.b, NULL), EW_ERROR_NOT_SUPPORTED, "ew_binary_batched", NULL);
            expect(what, ew_binary_batched(h, EW_OP_ADD, EW_F8E4M3, 3, l.n, l.out, l.a, l.b, NULL), EW_ERROR_NOT_SUPPORTED, "f8e4m3", NULL);
            break;
        case CAST: expect(what, ew_cast_batched(h, EW_F32, (ew_dtype_t)99, 3, l.n, l.out, l.a, NULL), EW_ERROR_NOT_SUPPORTED, "99", NULL);
            break;
        case SCALE_ADD: expect(what, ew_scale_add_batched(h, EW_I8, 0.5, 3, l.n, l.out, l.a, l.b, NULL), EW_ERROR_INVALID_VALUE, "alpha", NULL);
            /* alpha is checked on an empty list too, as the flat call does at n == 0 */
            expect(what, ew_scale_add_batched(h, EW_I8, 1000, 0, NULL, NULL, NULL, NULL, NULL), EW_ERROR_INVALID_VALUE, "alpha", NULL);
            expect(what, ew_scale_add_batched(h, EW_I8, 3, 0, NULL, NULL, NULL, NULL, NULL), EW_SUCCESS, NULL);
            break;
        default: break;
        }
    }
}

/* Every entry-level error, at several indices, names the index. */
static void test_entry_errors(void **state)
{
    (void)state;
    const int indices[] = {0, 1, 17, ENTRIES - 1};
    for (call_kind_t k = 0; k < CALLS; ++k)
        for (size_t t = 0; t < COUNT(indices); ++t) {
            const int i = indices[t];
            const char *what = call_names[k];
            char entry[32];
            snprintf(entry, sizeof entry, "entry %d: ", i);
            list_t l;
            list_make(&l);
            l.n[i] = -4;
            expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "n = -4 is negative", NULL);

            list_make(&l);
            l.n[i] = 5;
            l.out[i] = NULL;
            expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "out is NULL with n = 5", NULL);
            list_make(&l);
            l.n[i] = 5;
            l.a[i] = NULL;
            expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry,
                   k == BINARY || k == SCALE_ADD ? "a is NULL with n = 5" : "x is NULL with n = 5", NULL);
            if (k == BINARY || k == SCALE_ADD) {
                list_make(&l);
                l.b[i] = NULL;
                expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "b is NULL", NULL);
                list_make(&l);
                l.b[i] = (const char *)l.b[i] + 2;
                expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "b = ", "not aligned", NULL);
            }
            /* misaligned out (f32: 4 bytes) and input (f32, or f16 for the cast: 2 bytes) */
            list_make(&l);
            l.out[i] = (char *)l.out[i] + 2;
            expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "out = ", "not aligned", NULL);
            list_make(&l);
            l.a[i] = (const char *)l.a[i] + 1;
            expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "not aligned", NULL);
            /* overlap within the entry: out one element past its input */
            list_make(&l);
            l.out[i] = (char *)l.a[i] + 4;
            expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "overlaps", NULL);
            /* past the end of the address space */
            list_make(&l);
            l.n[i] = INT64_MAX / 2;
            expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "address space", NULL);
            if (k == CAST) { /* in place across element sizes */
                list_make(&l);
                l.out[i] = (void *)l.a[i];
                expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, "overlaps", NULL);
            }
            /* the first bad entry is the one named */
            list_make(&l);
            l.out[i] = NULL;
            if (i + 1 < ENTRIES)
                l.n[i + 1] = -1;
            expect(what, call_list(h, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, entry, NULL);
        }
}

/* EW_CHECK_POINTERS: outputs overlapping another entry's out or input, found wherever they lie in the
 * list; without it the list is not sorted, and reaches the device. */
static void test_cross_entry_overlaps(void **state)
{
    (void)state;
    for (call_kind_t k = 0; k < CALLS; ++k) {
        const char *what = call_names[k];
        list_t l;
        list_make(&l);
        l.out[20] = (char *)l.out[3] + 8; /* two outputs */
        expect(what, call_list(h_checked, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, "entry 3", "entry 20",
               "overlaps out", NULL);
        expect_device(what, call_list(h, k, ENTRIES, &l));

        list_make(&l);
        l.out[5] = (char *)l.a[14] + 64; /* an output inside another entry's input */
        expect(what, call_list(h_checked, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, "entry 5: out", "of entry 14",
               NULL);
        list_make(&l);
        l.a[2] = (char *)l.out[11] - 16; /* an input reaching into another entry's output */
        expect(what, call_list(h_checked, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, "entry 11: out", "of entry 2",
               NULL);
        list_make(&l);
        l.out[0] = (void *)l.a[ENTRIES - 1]; /* exactly another entry's input */
        expect(what, call_list(h_checked, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, "entry 0: out",
               "of entry 23", NULL);
        /* a long range reaching over several others: its overlap with a later start is found */
        list_make(&l);
        l.n[6] = (int64_t)5 << 28; /* out[6] runs over out[7..] */
        expect(what, call_list(h_checked, k, ENTRIES, &l), EW_ERROR_INVALID_VALUE, "entry 6: out", "entry 7",
               NULL);
        /* touching but not overlapping */
        list_make(&l);
        l.out[8] = (char *)l.out[4] + 4 * l.n[4];
        expect_device(what, call_list(h_checked, k, ENTRIES, &l));
        /* an empty entry overlapping anything is nothing */
        list_make(&l);
        l.n[10] = 0;
        l.out[10] = l.out[4];
        expect_device(what, call_list(h_checked, k, ENTRIES, &l));
    }
}

/* ---- packing ---- */

/* Walks every block of every launch as the kernel does (last row whose first block is <= b; chunk
 * c = b - first) and checks that the chunks of each row, under the kernel's two coverings (aligned,
 * with head `head`; element by element), tile each entry exactly once, with the slices' pointers. */
typedef struct {
    int64_t launches, rows, blocks, max_block_elements;
    uint32_t chunk_min, chunk_max;
} pack_summary_t;

static pack_summary_t pack_and_check(const ew_batched_list_t *list)
{
    pack_summary_t s = {0, 0, 0, 0, UINT32_MAX, 0};
    const int capacity = EW_BATCHED_CAPACITY(list->block_bytes, ew_batched_columns(list));
    const uint32_t step = EW_BATCHED_STEP(ew_batched_widest(list));
    static ew_batched_desc_t desc;
    ew_batched_cursor_t cursor = {0, 0};
    int64_t entry = 0, covered = 0; /* the next element expected: entry and element */
    while (ew_batched_next(list, &cursor, &desc)) {
        ++s.launches;
        assert_true(desc.rows >= 1 && (int)desc.rows <= capacity);
        assert_true(desc.chunk % step == 0);
        const uint32_t steps = desc.chunk / step;
        assert_true(steps >= 1 && steps <= EW_BATCHED_MAX_STEPS && (steps & (steps - 1)) == 0);
        assert_true(desc.blocks >= desc.rows && desc.blocks <= INT32_MAX);
        if (desc.chunk < s.chunk_min)
            s.chunk_min = desc.chunk;
        if (desc.chunk > s.chunk_max)
            s.chunk_max = desc.chunk;
        const unsigned char *data = (const unsigned char *)desc.data;
        const uint32_t *first = (const uint32_t *)(data + EW_BATCHED_FIRST_AT(capacity));
        const uint32_t *length = (const uint32_t *)(data + EW_BATCHED_LENGTH_AT(capacity));
        const uint64_t *pointer = (const uint64_t *)(data + EW_BATCHED_POINTER_AT(capacity, 0));
        assert_int_equal(first[0], 0);
        /* rows: in list order, each the next slice of the list */
        for (uint32_t r = 0; r < desc.rows; ++r) {
            while (entry < list->count && covered == list->n[entry])
                ++entry, covered = 0;
            assert_true(entry < list->count);
            assert_true(length[r] >= 1 && length[r] <= EW_BATCHED_MAX_ROW);
            assert_true(covered + length[r] <= list->n[entry]);
            for (int j = 0; j < list->pointers; ++j)
                assert_true(pointer[j * capacity + r] ==
                            (uint64_t)(uintptr_t)list->address[j][entry] + (uint64_t)covered * list->elem_size[j]);
            if (list->params_column) /* the entry's parameters, whatever the slice */
                assert_true(pointer[list->pointers * capacity + r] ==
                            (list->params == NULL ? 0
                                                  : (uint64_t)(uintptr_t)list->params +
                                                        (uint64_t)entry * list->params_stride));
            if (list->scalar_column) /* the entry's scalar, last, whatever the slice */
                assert_true(pointer[(list->pointers + list->params_column) * capacity + r] ==
                            (uint64_t)(uintptr_t)list->scalar[entry]);
            const uint32_t end = r + 1 < desc.rows ? first[r + 1] : desc.blocks;
            assert_true(end > first[r]);
            assert_int_equal(end - first[r], (length[r] + desc.chunk - 1) / desc.chunk);
            covered += length[r];
        }
        /* blocks: each finds its row by the kernel's search; the chunks of a row tile it in order */
        const int64_t n_run = 16;
        int64_t next_plain = 0, next_aligned = 0;
        uint32_t previous_row = 0;
        for (uint32_t b = 0; b < desc.blocks; ++b) {
            uint32_t lo = 0, hi = desc.rows;
            while (hi - lo > 1) {
                uint32_t mid = (lo + hi) / 2;
                if (first[mid] <= b)
                    lo = mid;
                else
                    hi = mid;
            }
            if (lo != previous_row) {
                assert_int_equal(lo, previous_row + 1);
                assert_int_equal(next_plain, length[previous_row]);
                assert_int_equal(next_aligned, length[previous_row]);
                next_plain = next_aligned = 0;
                previous_row = lo;
            }
            const int64_t n = length[lo], chunk = desc.chunk, c = b - first[lo];
            const int64_t begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
            assert_int_equal(begin, next_plain);
            next_plain = end;
            const int64_t head = (lo * 7) % n_run; /* a head per row, below a run's elements */
            int64_t a_begin = c == 0 ? 0 : c * chunk + head, a_end = (c + 1) * chunk + head;
            a_begin = a_begin < n ? a_begin : n, a_end = a_end < n ? a_end : n;
            if (c == 0)
                next_aligned = 0;
            assert_int_equal(a_begin, next_aligned);
            next_aligned = a_end;
            if (end - begin > s.max_block_elements)
                s.max_block_elements = end - begin;
        }
        assert_int_equal(previous_row, desc.rows - 1);
        assert_int_equal(next_plain, length[desc.rows - 1]);
        s.rows += desc.rows;
        s.blocks += desc.blocks;
    }
    while (entry < list->count && covered == list->n[entry])
        ++entry, covered = 0;
    assert_int_equal(entry, list->count); /* every element of every entry covered */
    return s;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

/* A list of count entries with fake addresses (never dereferenced). */
typedef struct {
    int64_t *n;
    void **p[EW_PLAN_MAX_CALL_POINTERS];
    ew_batched_list_t list;
} fake_list_t;

static fake_list_t fake_list(int64_t count, int pointers, size_t size_out, size_t size_in, int block_bytes)
{
    fake_list_t f;
    f.n = calloc((size_t)(count ? count : 1), sizeof *f.n);
    assert_non_null(f.n);
    f.list = (ew_batched_list_t){.count = count, .n = f.n, .pointers = pointers, .block_bytes = block_bytes,
                                 .target_blocks = 132 * 8};
    for (int j = 0; j < pointers; ++j) {
        f.p[j] = calloc((size_t)(count ? count : 1), sizeof(void *));
        assert_non_null(f.p[j]);
        for (int64_t i = 0; i < count; ++i)
            f.p[j][i] = ADDR(((uint64_t)(j + 1) << 44) + ((uint64_t)i << 20) * 64 + 4 * (uint64_t)(i % 5));
        f.list.address[j] = (const void *const *)f.p[j];
        f.list.elem_size[j] = j == 0 ? size_out : size_in;
    }
    return f;
}

static void fake_free(fake_list_t *f)
{
    free(f->n);
    for (int j = 0; j < f->list.pointers; ++j)
        free(f->p[j]);
}

static void test_pack_counts(void **state)
{
    (void)state;
    const int budgets[] = {EW_BATCHED_SMALL_BLOCK, EW_BATCHED_LARGE_BLOCK};
    for (size_t bi = 0; bi < COUNT(budgets); ++bi)
        for (int pointers = 2; pointers <= 3; ++pointers) {
            const int capacity = EW_BATCHED_CAPACITY(budgets[bi], pointers);
            assert_true(capacity >= (budgets[bi] == EW_BATCHED_SMALL_BLOCK ? 120 : 1000));
            const int64_t counts[] = {0, 1, 2, capacity - 1, capacity, capacity + 1, 2 * capacity,
                                      2 * capacity + 1, 5 * capacity + 3};
            for (size_t ci = 0; ci < COUNT(counts); ++ci) {
                const int64_t count = counts[ci];
                fake_list_t f = fake_list(count, pointers, 4, 4, budgets[bi]);
                for (int64_t i = 0; i < count; ++i)
                    f.n[i] = 4096;
                pack_summary_t s = pack_and_check(&f.list);
                assert_int_equal(s.launches, (count + capacity - 1) / capacity);
                assert_int_equal(s.rows, count);
                /* small lists: one-step chunks */
                if (count > 0)
                    assert_int_equal(s.chunk_max, EW_BATCHED_STEP(4));
                fake_free(&f);
            }
            /* empty entries take no row: capacity + 1 entries with one empty fit one launch */
            fake_list_t f = fake_list(capacity + 1, pointers, 2, 2, budgets[bi]);
            for (int64_t i = 0; i <= capacity; ++i)
                f.n[i] = i == capacity / 2 ? 0 : 1 + (int64_t)(rng() % 3000);
            pack_summary_t s = pack_and_check(&f.list);
            assert_int_equal(s.launches, 1);
            assert_int_equal(s.rows, capacity);
            fake_free(&f);
        }
}

/* Mixes of sizes 0 to millions, and entries over a row's limit, split into rows. */
static void test_pack_sizes(void **state)
{
    (void)state;
    const size_t sizes[][2] = {{4, 4}, {4, 2}, {1, 1}, {8, 8}, {1, 4}, {2, 8}};
    for (int trial = 0; trial < 24; ++trial) {
        const int pointers = 2 + trial % 2;
        const size_t *size = sizes[trial % COUNT(sizes)];
        const int64_t count = 1 + (int64_t)(rng() % 3000);
        fake_list_t f = fake_list(count, pointers, size[0], size[1],
                                  trial % 3 == 0 ? EW_BATCHED_SMALL_BLOCK : EW_BATCHED_LARGE_BLOCK);
        int64_t total = 0;
        for (int64_t i = 0; i < count; ++i) {
            const int kind = (int)(rng() % 8);
            f.n[i] = kind == 0 ? 0 : kind <= 2 ? (int64_t)(rng() % 300) : (int64_t)1 << (rng() % 21);
            if (kind == 7)
                f.n[i] += (int64_t)(rng() % 4000000);
            total += f.n[i];
        }
        pack_summary_t s = pack_and_check(&f.list);
        const size_t widest = size[0] > size[1] ? size[0] : size[1];
        assert_true(s.max_block_elements <= (int64_t)s.chunk_max);
        assert_true(s.chunk_min >= EW_BATCHED_STEP(widest));
        /* large lists: chunks grow past one step only while the launch keeps its waves */
        if (total / ((int64_t)EW_BATCHED_STEP(widest) * EW_BATCHED_MAX_STEPS) >= 132 * 8 * EW_BATCHED_WAVES * s.launches)
            assert_true(s.chunk_max > EW_BATCHED_STEP(widest));
        fake_free(&f);
    }
    /* rows over EW_BATCHED_MAX_ROW elements: split, each slice's pointers advanced */
    fake_list_t f = fake_list(3, 3, 8, 8, EW_BATCHED_LARGE_BLOCK);
    f.n[0] = 5;
    f.n[1] = ((int64_t)EW_BATCHED_MAX_ROW * 3) + 7;
    f.n[2] = EW_BATCHED_MAX_ROW;
    pack_summary_t s = pack_and_check(&f.list);
    assert_int_equal(s.rows, 1 + 4 + 1);
    assert_int_equal(s.launches, 1);
    assert_int_equal(s.chunk_max, EW_BATCHED_STEP(8) * EW_BATCHED_MAX_STEPS);
    fake_free(&f);
}

/* Rows of user kernels: up to four outputs and four inputs, the entries' parameters' column, which
 * holds each entry's parameters in every slice of it (NULL: none), and the entries' reduction scalars'
 * column (some shared), likewise. */
static void test_pack_columns(void **state)
{
    (void)state;
    for (int trial = 0; trial < 40; ++trial) {
        const int pointers = 2 + trial % (EW_PLAN_MAX_CALL_POINTERS - 1);
        const int64_t count = 1 + (int64_t)(rng() % 2500);
        fake_list_t f = fake_list(count, pointers, trial % 3 == 0 ? 2 : 4, trial % 4 == 0 ? 8 : 4,
                                  trial % 3 == 1 ? EW_BATCHED_SMALL_BLOCK : EW_BATCHED_LARGE_BLOCK);
        f.list.params_column = trial % 5 != 0;
        f.list.params = trial % 5 == 1 ? NULL : ADDR((uint64_t)7 << 44);
        f.list.params_stride = 8 * (size_t)(1 + trial % 8);
        const void **scalars = calloc((size_t)count, sizeof *scalars);
        assert_non_null(scalars);
        f.list.scalar_column = trial % 3 != 2 && pointers < EW_PLAN_MAX_CALL_POINTERS;
        f.list.scalar = scalars;
        for (int64_t i = 0; i < count; ++i) {
            f.n[i] = rng() % 6 == 0 ? 0 : (int64_t)(rng() % 200000);
            scalars[i] = ADDR(((uint64_t)9 << 44) + 8 * (uint64_t)(trial % 2 == 0 ? i : i / 7));
        }
        if (trial == 0)
            f.n[count / 2] =
                (int64_t)EW_BATCHED_MAX_ROW * 2 + 3; /* slices: one entry, its parameters twice */
        const pack_summary_t s = pack_and_check(&f.list);
        const int capacity =
            EW_BATCHED_CAPACITY(f.list.block_bytes, pointers + f.list.params_column + f.list.scalar_column);
        assert_true(s.launches >= (s.rows + capacity - 1) / capacity);
        fake_free(&f);
        free(scalars);
    }
    /* AdamW's rows: three outputs, four inputs and the parameters; a launch still holds 450 of them */
    assert_true(EW_BATCHED_CAPACITY(EW_BATCHED_LARGE_BLOCK, 8) >= 450);
}

/* An overwrite's resets: every entry's scalar, empty entries' too, in blocks of at most
 * EW_BATCHED_RESET_SCALARS, a scalar equal to the one before it taken once; a list of one shared scalar
 * is one store. The caller's bytes and value stay. */
static void test_pack_resets(void **state)
{
    (void)state;
    static ew_batched_reset_t reset;
    const int64_t counts[] = {0, 1, EW_BATCHED_RESET_SCALARS, EW_BATCHED_RESET_SCALARS + 1, 3000};
    for (size_t ci = 0; ci < COUNT(counts); ++ci)
        for (int shared = 0; shared < 3; ++shared) { /* distinct, runs of 5, one for all */
            const int64_t count = counts[ci];
            const void **scalars = calloc((size_t)(count ? count : 1), sizeof *scalars);
            assert_non_null(scalars);
            for (int64_t i = 0; i < count; ++i)
                scalars[i] = ADDR(0x1000 + 4 * (uint64_t)(shared == 0 ? i : shared == 1 ? i / 5 : 0));
            const ew_batched_list_t list = {.count = count, .scalar_column = 1, .scalar = scalars};
            reset.bytes = 8;
            reset.value = 0xFFF0000000000000ull;
            int64_t cursor = 0, launches = 0, stores = 0;
            uint64_t last = 0;
            while (ew_batched_next_reset(&list, &cursor, &reset)) {
                ++launches;
                assert_true(reset.count >= 1 && reset.count <= EW_BATCHED_RESET_SCALARS);
                assert_int_equal(reset.bytes, 8);
                assert_true(reset.value == 0xFFF0000000000000ull);
                for (uint32_t k = 0; k < reset.count; ++k) { /* in order, each distinct scalar once */
                    assert_true(reset.scalar[k] > last);
                    last = reset.scalar[k];
                }
                stores += reset.count;
            }
            assert_int_equal(cursor, count);
            const int64_t distinct = count == 0 ? 0 : shared == 0 ? count : shared == 1 ? (count + 4) / 5 : 1;
            assert_int_equal(stores, distinct);
            assert_true(launches >= (distinct + EW_BATCHED_RESET_SCALARS - 1) / EW_BATCHED_RESET_SCALARS);
            assert_true(launches <= (count + EW_BATCHED_RESET_SCALARS - 1) / EW_BATCHED_RESET_SCALARS);
            free(scalars);
        }
    assert_true(sizeof(ew_batched_reset_t) <= EW_BATCHED_SMALL_PARAMS);
}

/* The kernel's step: 256 threads, each its bytes in flight, of the widest legal pack. */
static void test_step(void **state)
{
    (void)state;
    assert_int_equal(EW_BATCHED_STEP(1), 256 * 32);
    assert_int_equal(EW_BATCHED_STEP(2), 256 * 16);
    assert_int_equal(EW_BATCHED_STEP(4), 256 * 8);
    assert_int_equal(EW_BATCHED_STEP(8), 256 * 4);
    assert_true(EW_BATCHED_CAPACITY(EW_BATCHED_LARGE_BLOCK, 3) >= 1000); /* the 1,000 tensors */
    assert_true(sizeof(ew_batched_desc_t) == EW_BATCHED_LARGE_BLOCK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_and_empty),
        cmocka_unit_test(test_list_arguments),
        cmocka_unit_test(test_entry_errors),
        cmocka_unit_test(test_cross_entry_overlaps),
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_pack_counts),
        cmocka_unit_test(test_pack_sizes),
        cmocka_unit_test(test_pack_columns),
        cmocka_unit_test(test_pack_resets),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
