/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Handle lifecycle on the CPU (issue 4): create/destroy in loops through ewi_handle_make (no GPU
 * needed), double destroy refused, a destroyed handle refused by every call before anything reaches
 * CUDA, and handles made and destroyed from many threads at once. Run under LeakSanitizer by
 * scripts/ci/asan.sh: every handle made here is destroyed, so any leak is the library's.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elementwise.h"
#include "handle.h"

enum { LOOP = 100000, LIVE_AT_ONCE = 1000, THREADS = 8, PER_THREAD = 20000 };

static ew_handle_t make(int device, int sm_count, int threads)
{
    ew_handle_t handle = NULL;
    assert_int_equal(ewi_handle_make(device, sm_count, threads, &handle), EW_SUCCESS);
    assert_non_null(handle);
    return handle;
}

static void assert_figures(ew_handle_t handle, int device, int sm_count, int threads)
{
    int value = -1;
    assert_int_equal(ew_handle_get_device(handle, &value), EW_SUCCESS);
    assert_int_equal(value, device);
    assert_int_equal(ew_handle_get_sm_count(handle, &value), EW_SUCCESS);
    assert_int_equal(value, sm_count);
    assert_int_equal(ew_handle_get_max_threads_per_sm(handle, &value), EW_SUCCESS);
    assert_int_equal(value, threads);
}

static void assert_refused_handle(ew_status_t status, const char *call)
{
    if (status != EW_ERROR_INVALID_HANDLE)
        fail_msg("%s on a destroyed handle: %s, expected EW_ERROR_INVALID_HANDLE", call,
                 ew_status_string(status));
    if (ew_get_last_error_message()[0] == '\0')
        fail_msg("%s on a destroyed handle: no message", call);
}

static void create_destroy_loop(void **state)
{
    (void)state;
    for (int i = 0; i < LOOP; ++i) {
        int device = i % 7, sm_count = 1 + i % 200, threads = 32 * (1 + i % 64);
        ew_handle_t handle = make(device, sm_count, threads);
        if (i % 1000 == 0)
            assert_figures(handle, device, sm_count, threads);
        assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
    }
}

/* Many handles live at once are distinct and keep their own figures; destroying them all and making
 * as many again works (destroyed handles are recycled, never freed). */
static void many_live_handles(void **state)
{
    (void)state;
    static ew_handle_t handles[LIVE_AT_ONCE];
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < LIVE_AT_ONCE; ++i)
            handles[i] = make(i, 100 + round, 2048 - i);
        for (int i = 0; i < LIVE_AT_ONCE; ++i) {
            assert_figures(handles[i], i, 100 + round, 2048 - i);
            for (int j = 0; j < i; j += 97)
                assert_ptr_not_equal(handles[i], handles[j]);
        }
        for (int i = LIVE_AT_ONCE - 1; i >= 0; --i)
            assert_int_equal(ew_handle_destroy(handles[i]), EW_SUCCESS);
    }
}

static void destroy_null_is_a_no_op(void **state)
{
    (void)state;
    for (int i = 0; i < 3; ++i)
        assert_int_equal(ew_handle_destroy(NULL), EW_SUCCESS);
}

static void double_destroy_is_refused(void **state)
{
    (void)state;
    ew_handle_t handle = make(0, 132, 2048);
    assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
    assert_refused_handle(ew_handle_destroy(handle), "a second ew_handle_destroy");
    assert_refused_handle(ew_handle_destroy(handle), "a third ew_handle_destroy");
}

/* Every call taking a handle refuses a destroyed one, with otherwise valid arguments: the handle is
 * checked before anything else, so nothing reaches CUDA (none is here). */
static void destroyed_handle_is_refused_everywhere(void **state)
{
    (void)state;
    ew_handle_t handle = make(0, 132, 2048);
    assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
    _Alignas(16) static uint8_t out[4096], a[4096], b[4096];
    int value = 12345;
    assert_refused_handle(ew_handle_get_device(handle, &value), "ew_handle_get_device");
    assert_refused_handle(ew_handle_get_sm_count(handle, &value), "ew_handle_get_sm_count");
    assert_refused_handle(ew_handle_get_max_threads_per_sm(handle, &value),
                          "ew_handle_get_max_threads_per_sm");
    assert_int_equal(value, 12345);
    assert_refused_handle(ew_unary(handle, EW_OP_RELU, EW_F32, 1000, out, a, NULL), "ew_unary");
    assert_refused_handle(ew_binary(handle, EW_OP_ADD, EW_F16, 1000, out, a, b, NULL), "ew_binary add");
    assert_refused_handle(ew_binary(handle, EW_OP_MUL, EW_I32, 1000, out, a, b, NULL), "ew_binary mul");
    assert_refused_handle(ew_cast(handle, EW_BF16, EW_F32, 1000, out, a, NULL), "ew_cast");
    assert_refused_handle(ew_scale_add(handle, EW_F32, 2.0, 1000, out, a, b, NULL), "ew_scale_add");
    /* Even n = 0, which needs nothing else, must not accept a dead handle. */
    assert_refused_handle(ew_binary(handle, EW_OP_ADD, EW_F32, 0, NULL, NULL, NULL, NULL),
                          "ew_binary with n = 0");
    for (size_t i = 0; i < sizeof out; ++i)
        assert_int_equal(out[i], 0);
}

typedef struct {
    int index;
    int failures;
    char failure[256];
} worker_t;

/* Each thread makes handles carrying its own index as the device; a handle handed to two threads
 * at once would show another thread's figures. */
static void *lifecycle_worker(void *argument)
{
    worker_t *w = argument;
    for (int i = 0; i < PER_THREAD; ++i) {
        ew_handle_t handles[4] = {NULL};
        for (int k = 0; k < 4; ++k)
            if (ewi_handle_make(w->index, 1000 + k, i, &handles[k]) != EW_SUCCESS)
                goto failed;
        for (int k = 0; k < 4; ++k) {
            int device = -1, sm_count = -1, threads = -1;
            if (ew_handle_get_device(handles[k], &device) != EW_SUCCESS ||
                ew_handle_get_sm_count(handles[k], &sm_count) != EW_SUCCESS ||
                ew_handle_get_max_threads_per_sm(handles[k], &threads) != EW_SUCCESS || device != w->index ||
                sm_count != 1000 + k || threads != i) {
                snprintf(w->failure, sizeof w->failure,
                         "thread %d iteration %d: handle %d reads (%d, %d, %d)", w->index, i, k, device,
                         sm_count, threads);
                w->failures++;
            }
        }
        for (int k = 0; k < 4; ++k)
            if (ew_handle_destroy(handles[k]) != EW_SUCCESS)
                goto failed;
    }
    return NULL;
failed:
    snprintf(w->failure, sizeof w->failure, "thread %d: make or destroy failed: %s", w->index,
             ew_get_last_error_message());
    w->failures++;
    return NULL;
}

static void threads_create_and_destroy(void **state)
{
    (void)state;
    pthread_t threads[THREADS];
    worker_t workers[THREADS];
    for (int t = 0; t < THREADS; ++t) {
        workers[t] = (worker_t){.index = t};
        assert_int_equal(pthread_create(&threads[t], NULL, lifecycle_worker, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; ++t)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < THREADS; ++t)
        if (workers[t].failures)
            fail_msg("%d failures; last: %s", workers[t].failures, workers[t].failure);
}

/* The public create: on a machine without a GPU it reports NO_DEVICE and sets *handle to NULL;
 * with one, its handle goes through the same destroy path. */
static void public_create_and_destroy(void **state)
{
    (void)state;
    assert_int_equal(ew_handle_create(0, NULL), EW_ERROR_INVALID_VALUE);
    for (int i = 0; i < 100; ++i) {
        ew_handle_t handle = (ew_handle_t)(uintptr_t)0x1234;
        ew_status_t status = ew_handle_create(0, &handle);
        if (status == EW_SUCCESS) {
            assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
            assert_int_equal(ew_handle_destroy(handle), EW_ERROR_INVALID_HANDLE);
        } else {
            assert_int_equal(status, EW_ERROR_NO_DEVICE);
            assert_null(handle); /* NULL on failure: destroying it is safe */
            assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
            assert_true(ew_get_last_error_message()[0] != '\0');
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(create_destroy_loop),
        cmocka_unit_test(many_live_handles),
        cmocka_unit_test(destroy_null_is_a_no_op),
        cmocka_unit_test(double_destroy_is_refused),
        cmocka_unit_test(destroyed_handle_is_refused_everywhere),
        cmocka_unit_test(threads_create_and_destroy),
        cmocka_unit_test(public_create_and_destroy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
