/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Handle lifecycle on the CPU (issue 4): create/destroy in loops through ewi_handle_make (no GPU
 * needed), double destroy refused, a destroyed handle refused by every call before anything reaches
 * CUDA, a destroyed handle or kernel refused after another takes its slot, and handles made and
 * destroyed from many threads at once. Run under LeakSanitizer by
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
#include "abi/handle.h"
#include "abi/user_kernel.h"
#include "abi/registry.h"

enum { LOOP = 100000, LIVE_AT_ONCE = 1000, THREADS = 8, PER_THREAD = 20000 };

static ew_handle_t make(int device, int sm_count, int threads)
{
    ew_handle_t handle = NULL;
    assert_int_equal(ewi_handle_make(device, sm_count, threads, &handle), EW_SUCCESS);
    assert_non_null(handle);
    return handle;
}

/* make's handle with EW_CHECK_POINTERS' checks on, as ew_handle_create gives them where it is set. */
static ew_handle_t make_checked(int device, int sm_count, int threads)
{
    ew_handle_t handle = make(device, sm_count, threads);
    ewi_handle_t *object;
    assert_int_equal(ewi_handle_find(handle, &object), EW_SUCCESS);
    object->check_pointers = 1;
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

/* Each handle takes the slot the one before it left: memory stays that of one handle. */
static void create_destroy_loop(void **state)
{
    (void)state;
    uint32_t slot = 0;
    for (int i = 0; i < LOOP; ++i) {
        int device = i % 7, sm_count = 1 + i % 200, threads = 32 * (1 + i % 64);
        ew_handle_t handle = make(device, sm_count, threads);
        if (i % 1000 == 0)
            assert_figures(handle, device, sm_count, threads);
        if (i == 0)
            slot = ewi_registry_slot(handle);
        assert_int_equal(ewi_registry_slot(handle), slot);
        assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
    }
}

/* The registry behind handles and kernels (src/abi/registry.h), on a registry of its own whose slots have
 * 3 lives: a value is refused once its object is destroyed, through every later life of its slot and
 * after the slot retires; values no add made are refused; slots past the first chunks work. */
static void registry_generations(void **state)
{
    (void)state;
    static ewi_registry_t registry = EWI_REGISTRY_INITIALIZER(uint64_t);
    registry.lives = 3;
    enum { MANY = 1000 }; /* across the chunks of 16, 32, ... 512 slots */
    static void *values[MANY];
    for (int i = 0; i < MANY; ++i) {
        uint64_t *object = ewi_registry_add(&registry, &values[i]);
        assert_non_null(object);
        assert_non_null(values[i]);
        assert_int_equal(*object, 0); /* zeroed */
        *object = 1000u + (uint64_t)i;
        assert_int_equal(ewi_registry_slot(values[i]), i);
    }
    for (int i = 0; i < MANY; ++i) {
        const uint64_t *object = ewi_registry_find(&registry, values[i]);
        assert_non_null(object);
        assert_int_equal(*object, 1000u + (uint64_t)i);
    }
    /* Values no add made: NULL, an address-like value, slot 0 of an even (free) generation, a slot
     * never used, a slot beyond every chunk. */
    const uintptr_t forged[] = {0,
                                0x5A5A0,
                                (uintptr_t)2 << 32 | 1,
                                (uintptr_t)1 << 32 | (MANY + 1),
                                (uintptr_t)1 << 32 | 0xFFFFFFFFu,
                                (uintptr_t)1 << 32};
    for (size_t k = 0; k < sizeof forged / sizeof forged[0]; ++k) {
        assert_null(ewi_registry_find(&registry, (void *)forged[k]));
        assert_int_equal(ewi_registry_remove(&registry, (void *)forged[k], NULL), 0);
    }
    for (int i = 1; i < MANY; ++i)
        assert_int_equal(ewi_registry_remove(&registry, values[i], NULL), 1);

    /* Slot 0's three lives, each value refused after its destroy, in every life that follows. */
    void *lives[3] = {values[0]};
    for (int life = 0; life < 3; ++life) {
        if (life > 0) {
            assert_non_null(ewi_registry_add(&registry, &lives[life]));
            assert_int_equal(ewi_registry_slot(lives[life]), 0); /* the slot just freed */
        }
        for (int earlier = 0; earlier < life; ++earlier) {
            assert_null(ewi_registry_find(&registry, lives[earlier]));
            assert_int_equal(ewi_registry_remove(&registry, lives[earlier], NULL), 0);
        }
        assert_non_null(ewi_registry_find(&registry, lives[life]));
        assert_int_equal(ewi_registry_remove(&registry, lives[life], NULL), 1);
        assert_int_equal(ewi_registry_remove(&registry, lives[life], NULL), 0);
    }
    /* Retired: the next add takes another slot, and no value of slot 0 is found again. */
    void *next;
    assert_non_null(ewi_registry_add(&registry, &next));
    assert_int_not_equal(ewi_registry_slot(next), 0);
    for (int life = 0; life < 3; ++life)
        assert_null(ewi_registry_find(&registry, lives[life]));
    assert_int_equal(ewi_registry_remove(&registry, next, NULL), 1);
}

/* Many handles live at once are distinct and keep their own figures; destroying them all and making
 * as many again works (destroyed handles' slots are taken again, never freed). */
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
    _Alignas(16) static float scalars[2]; /* a scale and an amax */
    const int64_t shape[2] = {10, 100};
    assert_refused_handle(ew_quantize(handle, EW_F8E4M3, EW_F32, 1000, out, a, &scalars[0], &scalars[1],
                                      EW_REDUCE_OVERWRITE, NULL),
                          "ew_quantize");
    assert_refused_handle(ew_quantize_strided(handle, EW_F8E5M2, EW_BF16, 2, shape, out, NULL, a, NULL,
                                              &scalars[0], NULL, EW_REDUCE_ACCUMULATE, NULL),
                          "ew_quantize_strided");
    assert_refused_handle(ew_dequantize(handle, EW_F16, EW_F8E4M3, 1000, out, a, &scalars[0], NULL),
                          "ew_dequantize");
    assert_refused_handle(
        ew_dequantize_strided(handle, EW_F32, EW_F8E5M2, 2, shape, out, NULL, a, NULL, &scalars[0], NULL),
        "ew_dequantize_strided");
    assert_refused_handle(ew_amax(handle, EW_F32, 1000, a, &scalars[1], EW_REDUCE_OVERWRITE, NULL),
                          "ew_amax");
    /* Even n = 0, which needs nothing else, must not accept a dead handle: nor may an overwritten amax be
     * reset for it. */
    assert_refused_handle(ew_binary(handle, EW_OP_ADD, EW_F32, 0, NULL, NULL, NULL, NULL),
                          "ew_binary with n = 0");
    assert_refused_handle(ew_amax(handle, EW_F32, 0, NULL, &scalars[1], EW_REDUCE_OVERWRITE, NULL),
                          "ew_amax with n = 0");
    assert_refused_handle(ew_quantize(handle, EW_F8E4M3, EW_F32, 0, NULL, NULL, &scalars[0], &scalars[1],
                                      EW_REDUCE_OVERWRITE, NULL),
                          "ew_quantize with n = 0");
    for (size_t i = 0; i < sizeof out; ++i)
        assert_int_equal(out[i], 0);
}

/* What a call on a destroyed object must say: EW_ERROR_INVALID_HANDLE and a message naming the
 * argument (`name`). */
static void assert_refused_named(ew_status_t status, const char *call, const char *name)
{
    assert_refused_handle(status, call);
    if (strstr(ew_get_last_error_message(), name) == NULL)
        fail_msg("%s: the message \"%s\" does not name %s", call, ew_get_last_error_message(), name);
}

/* The slot of a live handle or kernel value: the storage the next object of its kind takes once it
 * is destroyed (the free slots are a stack). */
#define SLOT_OF(value) ewi_registry_slot((const void *)(value))

/* Destroy h1, make h2 in its slot: h1 stays refused by every call, and refusing it leaves h2 alone. */
static void destroyed_handle_is_refused_after_its_slot_is_reused(void **state)
{
    (void)state;
    ew_handle_t h1 = make(0, 132, 2048);
    const uint32_t slot = SLOT_OF(h1);
    assert_int_equal(ew_handle_destroy(h1), EW_SUCCESS);
    ew_handle_t h2 = make(0, 46, 1536);
    assert_int_equal(SLOT_OF(h2), slot); /* the case this test is for: the same storage */
    assert_ptr_not_equal(h1, h2);

    _Alignas(16) static uint8_t out[4096], a[4096], b[4096];
    memset(out, 0x5A, sizeof out);
    int value = 12345;
    assert_refused_named(ew_handle_get_sm_count(h1, &value), "ew_handle_get_sm_count", "handle");
    assert_int_equal(value, 12345);
    assert_refused_named(ew_unary(h1, EW_OP_RELU, EW_F32, 1000, out, a, NULL), "ew_unary", "handle");
    assert_refused_named(ew_binary(h1, EW_OP_ADD, EW_F32, 1000, out, a, b, NULL), "ew_binary", "handle");
    assert_refused_named(ew_binary(h1, EW_OP_ADD, EW_F32, 0, NULL, NULL, NULL, NULL), "ew_binary n = 0",
                         "handle");
    assert_refused_named(ew_cast(h1, EW_BF16, EW_F32, 1000, out, a, NULL), "ew_cast", "handle");
    assert_refused_named(ew_scale_add(h1, EW_F32, 2.0, 1000, out, a, b, NULL), "ew_scale_add", "handle");
    _Alignas(16) static float scalars[2]; /* a scale and an amax */
    assert_refused_named(
        ew_quantize(h1, EW_F8E4M3, EW_F32, 1000, out, a, &scalars[0], &scalars[1], EW_REDUCE_OVERWRITE, NULL),
        "ew_quantize", "handle");
    assert_refused_named(ew_dequantize(h1, EW_F32, EW_F8E4M3, 1000, out, a, &scalars[0], NULL),
                         "ew_dequantize", "handle");
    assert_refused_named(ew_amax(h1, EW_F32, 0, NULL, &scalars[1], EW_REDUCE_OVERWRITE, NULL),
                         "ew_amax n = 0", "handle");
    const int64_t shape[1] = {1000}, strides[1] = {1};
    assert_refused_named(
        ew_binary_strided(h1, EW_OP_ADD, EW_F32, 1, shape, out, strides, a, strides, b, strides, NULL),
        "ew_binary_strided", "handle");
    assert_refused_named(ew_quantize_strided(h1, EW_F8E5M2, EW_F16, 1, shape, out, strides, a, strides,
                                             &scalars[0], &scalars[1], EW_REDUCE_ACCUMULATE, NULL),
                         "ew_quantize_strided", "handle");
    assert_refused_named(
        ew_dequantize_strided(h1, EW_BF16, EW_F8E4M3, 1, shape, out, strides, a, strides, &scalars[0], NULL),
        "ew_dequantize_strided", "handle");
    const int64_t n[1] = {1000};
    void *outs[1] = {out};
    const void *as[1] = {a}, *bs[1] = {b};
    assert_refused_named(ew_binary_batched(h1, EW_OP_ADD, EW_F32, 1, n, outs, as, bs, NULL),
                         "ew_binary_batched", "handle");
    const ew_dtype_t f32 = EW_F32;
    const ewi_kernel_spec_t spec = {
        .source = "return in0;", .out_dtype = EW_F32, .n_inputs = 1, .in_dtypes = &f32};
    ew_kernel_t kernel = (ew_kernel_t)(uintptr_t)0x5A5A;
    assert_refused_named(ewi_user_kernel_make(h1, &spec, &kernel), "ewi_user_kernel_make", "handle");
    assert_null(kernel);
    assert_refused_named(ew_handle_destroy(h1), "ew_handle_destroy of the old value", "handle");
    for (size_t i = 0; i < sizeof out; ++i)
        assert_int_equal(out[i], 0x5A);

    assert_figures(h2, 0, 46, 1536); /* the refusals left the new handle alone */
    assert_int_equal(ew_handle_destroy(h2), EW_SUCCESS);
    assert_refused_named(ew_handle_destroy(h2), "a second ew_handle_destroy", "handle");
}

/* The same for kernels: destroy k1, make k2 in its slot, and k1 is refused; and a kernel whose handle
 * was destroyed is refused though another handle took the handle's slot. */
static void destroyed_kernel_is_refused_after_its_slot_is_reused(void **state)
{
    (void)state;
    ew_handle_t handle = make(0, 132, 2048);
    const ew_dtype_t in_dtypes[2] = {EW_F32, EW_F32};
    const ewi_kernel_spec_t spec = {
        .source = "return in0 + in1;", .out_dtype = EW_F32, .n_inputs = 2, .in_dtypes = in_dtypes};
    ew_kernel_t k1 = NULL, k2 = NULL;
    assert_int_equal(ewi_user_kernel_make(handle, &spec, &k1), EW_SUCCESS);
    const uint32_t slot = SLOT_OF(k1);
    assert_int_equal(ew_kernel_destroy(k1), EW_SUCCESS);
    assert_int_equal(ewi_user_kernel_make(handle, &spec, &k2), EW_SUCCESS);
    assert_int_equal(SLOT_OF(k2), slot);
    assert_ptr_not_equal(k1, k2);

    _Alignas(16) static uint8_t out[4096], a[4096], b[4096];
    memset(out, 0x5A, sizeof out);
    const void *inputs[2] = {a, b};
    const int64_t shape[2] = {10, 100}, strides[2] = {100, 1};
    const int64_t *in_strides[2] = {strides, strides};
    assert_refused_named(ew_kernel_launch(k1, 1000, out, inputs, NULL, NULL), "ew_kernel_launch", "kernel");
    assert_refused_named(ew_kernel_launch(k1, 0, NULL, NULL, NULL, NULL), "ew_kernel_launch n = 0", "kernel");
    assert_refused_named(ew_kernel_launch_strided(k1, 2, shape, out, strides, inputs, in_strides, NULL, NULL),
                         "ew_kernel_launch_strided", "kernel");
    assert_refused_named(ew_kernel_destroy(k1), "ew_kernel_destroy of the old value", "kernel");
    /* k2 lives: its launch passes the kernel checks and stops only at the device (none here, or a
     * device the fake handle does not name) or, on the fake handle's device, at its code (objects of
     * ewi_user_kernel_make have none). */
    ew_status_t status = ew_kernel_launch(k2, 1000, out, inputs, NULL, NULL);
    assert_true(status == EW_ERROR_CUDA || status == EW_ERROR_DEVICE_MISMATCH || status == EW_ERROR_NOT_SUPPORTED);

    /* The kernel's handle destroyed and its slot taken by another: k2 is refused, naming the handle. */
    const uint32_t handle_slot = SLOT_OF(handle);
    assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
    ew_handle_t other = make(0, 132, 2048);
    assert_int_equal(SLOT_OF(other), handle_slot);
    assert_refused_named(ew_kernel_launch(k2, 1000, out, inputs, NULL, NULL),
                         "ew_kernel_launch on a dead handle", "handle");
    assert_refused_named(ew_kernel_launch_strided(k2, 2, shape, out, strides, inputs, in_strides, NULL, NULL),
                         "ew_kernel_launch_strided on a dead handle", "handle");
    for (size_t i = 0; i < sizeof out; ++i)
        assert_int_equal(out[i], 0x5A);
    assert_int_equal(ew_kernel_destroy(k2), EW_SUCCESS);
    assert_refused_named(ew_kernel_destroy(k2), "a second ew_kernel_destroy", "kernel");
    assert_int_equal(ew_handle_destroy(other), EW_SUCCESS);
}

/* A refusal's status and a word of its message. */
static void assert_refused_as(ew_status_t status, ew_status_t expected, const char *call, const char *word)
{
    if (status != expected || strstr(ew_get_last_error_message(), word) == NULL)
        fail_msg("%s: %s (\"%s\"), expected %s naming %s", call, ew_status_string(status),
                 ew_get_last_error_message(), ew_status_string(expected), word);
}

/* A kernel of a reduction output (without code, on a fake handle): its launches' checks come before
 * any device, so the CPU sees each refusal; the launch that passes them stops at the device. */
static void reduction_output_launches_are_checked(void **state)
{
    (void)state;
    ew_handle_t handle = make(0, 132, 2048);
    const ew_dtype_t in_dtypes[1] = {EW_BF16};
    const ewi_kernel_spec_t spec = {.source = "out0 = in0; out1 = in0;",
                                    .n_inputs = 1,
                                    .in_dtypes = in_dtypes,
                                    .n_outputs = 2,
                                    .outputs = {{EW_F32, EW_REDUCE_NONE}, {EW_F64, EW_REDUCE_MAX}}};
    const ewi_kernel_spec_t plain = {.source = "return in0;", .out_dtype = EW_F32, .n_inputs = 1,
                                     .in_dtypes = in_dtypes};
    ew_kernel_t kernel = NULL, one = NULL;
    assert_int_equal(ewi_user_kernel_make(handle, &spec, &kernel), EW_SUCCESS);
    assert_int_equal(ewi_user_kernel_make(handle, &plain, &one), EW_SUCCESS);
    _Alignas(16) static uint8_t out[4096], x[2048], scalar[16];
    const void *inputs[1] = {x};
    void *outputs[2] = {out, scalar};
    assert_refused_as(ew_kernel_launch(kernel, 100, out, inputs, NULL, NULL), EW_ERROR_INVALID_VALUE,
                      "ew_kernel_launch of a kernel of outputs", "ew_kernel_launch_outputs");
    assert_refused_as(ew_kernel_launch_outputs(one, 100, outputs, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "ew_kernel_launch_outputs of a kernel of one output",
                      "ew_kernel_launch");
    assert_refused_as(ew_kernel_launch_outputs(kernel, 100, NULL, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "NULL outputs", "outputs");
    assert_refused_as(ew_kernel_launch_outputs(kernel, 100, outputs, (ew_reduce_mode_t)2, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a mode outside the enum", "mode");
    void *null_scalar[2] = {out, NULL}, *misaligned[2] = {out, scalar + 4}, *inside_out[2] = {out, out + 64},
         *inside_x[2] = {out, x + 8};
    assert_refused_as(ew_kernel_launch_outputs(kernel, 100, null_scalar, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a NULL scalar", "outputs[1]");
    assert_refused_as(ew_kernel_launch_outputs(kernel, 100, misaligned, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "an f64 scalar at 4 bytes", "aligned");
    assert_refused_as(ew_kernel_launch_outputs(kernel, 100, inside_out, EW_REDUCE_ACCUMULATE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a scalar inside out", "inside out");
    assert_refused_as(ew_kernel_launch_outputs(kernel, 100, inside_x, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a scalar inside an input", "inside inputs[0]");
    assert_refused_as(ew_kernel_launch_outputs(kernel, -1, outputs, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "n < 0", "negative");
    /* the same scalar just past out's n elements is not inside it; an accumulated n == 0 queues nothing */
    void *after_out[2] = {out, out + 400};
    assert_int_equal(ew_kernel_launch_outputs(kernel, 0, after_out, EW_REDUCE_ACCUMULATE, NULL, NULL, NULL),
                     EW_SUCCESS);
    /* checks passed, the launch reaches the device: none here, or one the fake handle does not name */
    const ew_status_t status = ew_kernel_launch_outputs(kernel, 100, after_out, EW_REDUCE_OVERWRITE, inputs, NULL,
                                                        NULL);
    assert_true(status == EW_ERROR_CUDA || status == EW_ERROR_DEVICE_MISMATCH || status == EW_ERROR_NOT_SUPPORTED);
    /* the strided form: the same refusals, then the views' (the scalar against each view's span) */
    const int64_t shape[2] = {10, 10}, column[2] = {1, 0}, x_strides[2] = {10, 1}, empty[2] = {0, 10};
    const int64_t *in_strides[1] = {x_strides}, *broadcast[1] = {column};
    assert_refused_as(ew_kernel_launch_strided(kernel, 2, shape, out, NULL, inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "ew_kernel_launch_strided of a kernel of outputs",
                      "ew_kernel_launch_outputs");
    assert_refused_as(ew_kernel_launch_outputs_strided(one, 2, shape, outputs, NULL, EW_REDUCE_OVERWRITE,
                                                       inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "the strided outputs launch of a kernel of one output",
                      "ew_kernel_launch");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, NULL, NULL, EW_REDUCE_OVERWRITE,
                                                       inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "NULL outputs, strided", "outputs");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, outputs, NULL, (ew_reduce_mode_t)-1,
                                                       inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a mode outside the enum, strided", "mode");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, null_scalar, NULL,
                                                       EW_REDUCE_OVERWRITE, inputs, broadcast, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a NULL scalar, strided", "outputs[1]");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, inside_out, NULL,
                                                       EW_REDUCE_OVERWRITE, inputs, broadcast, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a scalar inside out's view", "inside out");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, inside_x, NULL, EW_REDUCE_OVERWRITE,
                                                       inputs, broadcast, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a scalar inside an input's view", "inside inputs[0]");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, misaligned, NULL,
                                                       EW_REDUCE_ACCUMULATE, inputs, in_strides, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "an f64 scalar at 4 bytes, a flat layout", "aligned");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, -1, shape, outputs, NULL, EW_REDUCE_OVERWRITE,
                                                       inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "ndim < 0", "ndim");
    /* an accumulated empty shape queues nothing; an overwritten one reaches the device for its memset */
    assert_int_equal(ew_kernel_launch_outputs_strided(kernel, 2, empty, after_out, NULL, EW_REDUCE_ACCUMULATE,
                                                      inputs, NULL, NULL, NULL),
                     EW_SUCCESS);
    ew_status_t reached = ew_kernel_launch_outputs_strided(kernel, 2, empty, after_out, NULL,
                                                           EW_REDUCE_OVERWRITE, inputs, NULL, NULL, NULL);
    assert_true(reached == EW_ERROR_CUDA || reached == EW_ERROR_DEVICE_MISMATCH);
    reached = ew_kernel_launch_outputs_strided(kernel, 2, shape, after_out, NULL, EW_REDUCE_OVERWRITE, inputs,
                                               broadcast, NULL, NULL);
    assert_true(reached == EW_ERROR_CUDA || reached == EW_ERROR_DEVICE_MISMATCH ||
                reached == EW_ERROR_NOT_SUPPORTED);
    for (size_t i = 0; i < sizeof out; ++i)
        assert_int_equal(out[i], 0);
    assert_int_equal(ew_kernel_destroy(kernel), EW_SUCCESS);
    assert_int_equal(ew_kernel_destroy(one), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
}

/* A kernel of three arrays and a reduction: its outputs in their order, each array named in messages,
 * arrays that overlap (exactly or in part) refused, an array exactly on an input of its size allowed,
 * the scalar inside none; flat and on views. */
static void several_array_launches_are_checked(void **state)
{
    (void)state;
    ew_handle_t handle = make(0, 132, 2048);
    const ew_dtype_t in_dtypes[2] = {EW_F32, EW_F16};
    const ewi_kernel_spec_t spec = {.source = "out0 = in0; out1 = in1; out2 = in0; out3 = in0;",
                                    .n_inputs = 2,
                                    .in_dtypes = in_dtypes,
                                    .n_outputs = 4,
                                    .outputs = {{EW_F32, EW_REDUCE_NONE},
                                                {EW_F16, EW_REDUCE_NONE},
                                                {EW_F32, EW_REDUCE_SUM},
                                                {EW_U8, EW_REDUCE_NONE}}};
    ew_kernel_t kernel = NULL;
    assert_int_equal(ewi_user_kernel_make(handle, &spec, &kernel), EW_SUCCESS);
    _Alignas(16) static uint8_t a[4096], b[4096], c[4096], x[4096], y[4096], scalar[16];
    const void *inputs[2] = {x, y};
    void *same[4] = {a, a, scalar, c}, *overlapping[4] = {a, b, scalar, a + 399},
         *null_array[4] = {a, b, scalar, NULL}, *misaligned[4] = {a, b + 1, scalar, c},
         *inside[4] = {a, b, c + 4, c};
    assert_refused_as(ew_kernel_launch_outputs(kernel, 100, same, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "two outputs on one array", "outputs[0]");
    assert_refused_as(
        ew_kernel_launch_outputs(kernel, 100, overlapping, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
        EW_ERROR_INVALID_VALUE, "outputs that overlap", "overlaps outputs[3]");
    assert_refused_as(
        ew_kernel_launch_outputs(kernel, 100, null_array, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
        EW_ERROR_INVALID_VALUE, "a NULL array", "outputs[3]");
    assert_refused_as(
        ew_kernel_launch_outputs(kernel, 100, misaligned, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
        EW_ERROR_INVALID_VALUE, "an f16 array at an odd address", "outputs[1]");
    assert_refused_as(ew_kernel_launch_outputs(kernel, 100, inside, EW_REDUCE_OVERWRITE, inputs, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "the scalar inside an array", "inside outputs[3]");
    /* on views: each array checked as out is, by its own strides */
    const int64_t shape[2] = {10, 10}, transposed[2] = {1, 10}, shared[2] = {10, 0}, backwards[2] = {-10, -1};
    const int64_t *const one_transposed[4] = {NULL, transposed, NULL, NULL},
                         *const one_shared[4] = {NULL, NULL, NULL, shared},
                         *const one_backwards[4] = {backwards, NULL, NULL, NULL},
                         *const in_transposed[2] = {NULL, transposed};
    /* outputs[0] reversed from a + 396 spans [a, a + 400): outputs[1] at a + 100 lies inside */
    void *apart[4] = {a, b, scalar, c}, *behind[4] = {a + 396, a + 100, scalar, c};
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, overlapping, NULL,
                                                       EW_REDUCE_OVERWRITE, inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "views of outputs that overlap",
                      "outputs[0] overlaps outputs[3]: outputs must not share memory");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, apart, one_shared,
                                                       EW_REDUCE_OVERWRITE, inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "an array whose elements share an address",
                      "outputs[3]: out_strides[3][1] = 0");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, behind, one_backwards,
                                                       EW_REDUCE_OVERWRITE, inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "a reversed array reaching back over another",
                      "outputs[0] overlaps outputs[1]");
    assert_refused_as(ew_kernel_launch_outputs_strided(kernel, 2, shape, inside, NULL, EW_REDUCE_OVERWRITE,
                                                       inputs, NULL, NULL, NULL),
                      EW_ERROR_INVALID_VALUE, "the scalar inside an array on views", "inside outputs[3]");
    /* in place on the inputs, then apart, flat and on views (an array and an input transposed alike):
     * the checks pass and the launch reaches the device */
    void *in_place[4] = {x, y, scalar, c};
    for (int k = 0; k < 4; ++k) {
        void *const *arrays = k % 2 == 0 ? in_place : apart;
        const ew_status_t status =
            k < 2 ? ew_kernel_launch_outputs(kernel, 100, arrays, EW_REDUCE_ACCUMULATE, inputs, NULL, NULL)
                  : ew_kernel_launch_outputs_strided(kernel, 2, shape, arrays, one_transposed,
                                                     EW_REDUCE_ACCUMULATE, inputs, in_transposed, NULL, NULL);
        assert_true(status == EW_ERROR_CUDA || status == EW_ERROR_DEVICE_MISMATCH ||
                    status == EW_ERROR_NOT_SUPPORTED);
    }
    assert_int_equal(ew_kernel_destroy(kernel), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
}

/* A list launch of a kernel of two arrays (without code, on a fake handle): each entry checked as its
 * flat launch, its messages naming the entry and the operand; the parameters from one place; the
 * launch that passes every check reaches the device. */
static void batched_launches_are_checked(void **state)
{
    (void)state;
    ew_handle_t handle = make(0, 132, 2048);
    const ew_dtype_t in_dtypes[2] = {EW_F32, EW_F16};
    const ewi_kernel_spec_t spec = {.source = "out0 = in0 * p0; out1 = in1;",
                                    .n_inputs = 2,
                                    .in_dtypes = in_dtypes,
                                    .n_params = 1,
                                    .n_outputs = 2,
                                    .outputs = {{EW_F32, EW_REDUCE_NONE}, {EW_F16, EW_REDUCE_NONE}}};
    ew_kernel_t kernel = NULL;
    assert_int_equal(ewi_user_kernel_make(handle, &spec, &kernel), EW_SUCCESS);
    _Alignas(16) static uint8_t a[2][4096], b[2][4096], x[2][4096], y[2][4096];
    _Alignas(16) static double params[4];
    const int64_t n[2] = {100, 50}, negative[2] = {100, -1};
    void *const out0[2] = {a[0], a[1]}, *const out1[2] = {b[0], b[1]}, *const odd[2] = {b[0], b[1] + 1};
    void *const on_other[2] = {a[0], a[0] + 200}; /* entry 1's out0 on entry 0's */
    const void *const in0[2] = {x[0], x[1]}, *const in1[2] = {y[0], y[1]}, *const null_in[2] = {x[0], NULL};
    void *const *outputs[2] = {out0, out1}, *const * misaligned[2] = {out0, odd},
                *const * overlapping[2] = {on_other, out1};
    const void *const *inputs[2] = {in0, in1}, *const * null_inputs[2] = {null_in, in1};
    const double p = 2.0;

    /* each refused call: its arguments but the mode (an overwrite) and the stream, what it shows, and the
     * word its message names */
    const struct {
        int64_t count;
        const int64_t *n;
        void *const *const *outputs;
        const void *const *const *inputs;
        const double *params, *entry_params;
        const char *what, *word;
    } refused[] = {
        {2, n, outputs, inputs, &p, params, "params and entry_params", "both"},
        {2, n, outputs, inputs, NULL, NULL, "no parameters", "takes 1"},
        {2, n, NULL, inputs, &p, NULL, "outputs NULL", "outputs"},
        {2, n, outputs, NULL, &p, NULL, "inputs NULL", "inputs"},
        {-1, n, outputs, inputs, &p, NULL, "a negative count", "count"},
        {2, NULL, outputs, inputs, &p, NULL, "n NULL", "n is NULL"},
        {2, negative, outputs, inputs, &p, NULL, "a negative n", "entry 1: n = -1"},
        {2, n, misaligned, inputs, &p, NULL, "an f16 array at an odd address", "entry 1: outputs[1]"},
        {2, n, outputs, null_inputs, &p, NULL, "a NULL input", "entry 1: inputs[0]"},
        {2, n, outputs, inputs, NULL, (const double *)(a[0] + 4), "misaligned entry_params", "entry_params"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; ++k)
        assert_refused_as(ew_kernel_launch_batched(kernel, refused[k].count, refused[k].n, refused[k].outputs,
                                                   EW_REDUCE_OVERWRITE, refused[k].inputs, refused[k].params,
                                                   refused[k].entry_params, NULL),
                          EW_ERROR_INVALID_VALUE, refused[k].what, refused[k].word);
    /* nothing to run: no check of the device */
    assert_int_equal(
        ew_kernel_launch_batched(kernel, 0, NULL, NULL, EW_REDUCE_OVERWRITE, NULL, NULL, NULL, NULL),
        EW_SUCCESS);
    const int64_t zeros[2] = {0, 0};
    assert_int_equal(
        ew_kernel_launch_batched(kernel, 2, zeros, outputs, EW_REDUCE_OVERWRITE, inputs, &p, NULL, NULL),
        EW_SUCCESS);
    /* overlaps between entries are EW_CHECK_POINTERS' (not on here): the checks pass, as do the good calls */
    for (int k = 0; k < 3; ++k) {
        const ew_status_t status =
            ew_kernel_launch_batched(kernel, 2, n, k == 2 ? overlapping : outputs, EW_REDUCE_OVERWRITE,
                                     inputs, k != 1 ? &p : NULL, k == 1 ? params : NULL, NULL);
        assert_true(status == EW_ERROR_CUDA || status == EW_ERROR_DEVICE_MISMATCH ||
                    status == EW_ERROR_NOT_SUPPORTED);
    }
    assert_int_equal(ew_kernel_destroy(kernel), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
}

/* A list launch of a kernel of a reduction between two arrays (without code, on fake handles):
 * outputs[1] is the scalars' array, outputs[0] and outputs[2] the arrays'; each entry's scalar checked
 * as the flat launch's (set, aligned, inside none of its entry's operands; an empty entry's too, its
 * scalar reset all the same), with EW_CHECK_POINTERS inside no other entry's; entries may share one. */
static void batched_reduction_launches_are_checked(void **state)
{
    (void)state;
    /* device 1, never the current device: a launch that passes its checks stops at the device check
     * (DEVICE_MISMATCH; CUDA without a GPU), so the host arrays below never reach a kernel, not even
     * an overwrite's resets, which a GPU of HMM would run on them */
    ew_handle_t handle = make(1, 132, 2048), checked = make_checked(1, 132, 2048);
    const ew_dtype_t in_dtypes[1] = {EW_F32};
    const ewi_kernel_spec_t spec = {
        .source = "out0 = in0; out1 = in0; out2 = in0;",
        .n_inputs = 1,
        .in_dtypes = in_dtypes,
        .n_outputs = 3,
        .outputs = {{EW_F32, EW_REDUCE_NONE}, {EW_F64, EW_REDUCE_MAX}, {EW_F16, EW_REDUCE_NONE}}};
    ew_kernel_t kernel = NULL;
    assert_int_equal(ewi_user_kernel_make(handle, &spec, &kernel), EW_SUCCESS);
    ew_kernel_t on_checked = NULL;
    assert_int_equal(ewi_user_kernel_make(checked, &spec, &on_checked), EW_SUCCESS);
    _Alignas(16) static uint8_t a[2][4096], b[2][4096], x[2][4096];
    _Alignas(16) static double sums[2];
    const int64_t n[2] = {100, 50}, empty_last[2] = {100, 0}, zeros[2] = {0, 0};
    void *const out0[2] = {a[0], a[1]}, *const out2[2] = {b[0], b[1]};
    void *const apart[2] = {&sums[0], &sums[1]}, *const shared[2] = {&sums[0], &sums[0]};
    void *const null_one[2] = {&sums[0], NULL}, *const odd[2] = {(uint8_t *)&sums[0] + 4, &sums[1]};
    void *const in_input[2] = {&sums[0], x[1] + 8}, *const in_array[2] = {&sums[0], b[1] + 16};
    void *const in_other[2] = {x[1] + 8, &sums[1]}; /* entry 0's scalar in entry 1's input */
    const void *const in0[2] = {x[0], x[1]};
    const void *const *inputs[1] = {in0};
#define OUTPUTS(scalars) ((void *const *const[3]){out0, scalars, out2})
    /* another entry's array over a scalar, the other way round */
    _Alignas(16) static uint8_t pool[4096];
    void *const on_scalar[2] = {a[0], pool}, *const under[2] = {pool + 8, &sums[1]};
    /* each refused call: its kernel, n, outputs and mode, what it shows, and the word its message names */
    const struct {
        ew_kernel_t kernel;
        const int64_t *n;
        void *const *const *outputs;
        ew_reduce_mode_t mode;
        const char *what, *word;
    } refused[] = {
        {kernel, n, OUTPUTS(apart), (ew_reduce_mode_t)7, "a mode outside the enum", "mode"},
        {kernel, n, OUTPUTS(NULL), EW_REDUCE_OVERWRITE, "the scalars NULL", "outputs[1] is NULL"},
        {kernel, n, OUTPUTS(null_one), EW_REDUCE_OVERWRITE, "a NULL scalar",
         "entry 1: outputs[1] (the reduction's scalar) is NULL"},
        {kernel, empty_last, OUTPUTS(null_one), EW_REDUCE_ACCUMULATE, "an empty entry's NULL scalar",
         "entry 1: outputs[1]"},
        {kernel, n, OUTPUTS(odd), EW_REDUCE_OVERWRITE, "a double scalar at 4 bytes", "entry 0: outputs[1]"},
        {kernel, n, OUTPUTS(in_input), EW_REDUCE_OVERWRITE, "a scalar inside its input",
         "entry 1: outputs[1] (the reduction's scalar) lies inside inputs[0]"},
        {kernel, n, OUTPUTS(in_array), EW_REDUCE_OVERWRITE, "a scalar inside its f16 array",
         "lies inside outputs[2]"},
        {on_checked, n, OUTPUTS(in_other), EW_REDUCE_OVERWRITE,
         "a scalar inside another entry's input (EW_CHECK_POINTERS)", "entry 0: outputs[1]"},
        {on_checked, n, ((void *const *const[3]){on_scalar, under, out2}), EW_REDUCE_OVERWRITE,
         "an array over another entry's scalar (EW_CHECK_POINTERS)", "overlaps outputs[1] of entry 0"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; ++k)
        assert_refused_as(ew_kernel_launch_batched(refused[k].kernel, 2, refused[k].n, refused[k].outputs,
                                                   refused[k].mode, inputs, NULL, NULL, NULL),
                          EW_ERROR_INVALID_VALUE, refused[k].what, refused[k].word);
    /* nothing to fold and nothing to reset: no check of the device */
    assert_int_equal(
        ew_kernel_launch_batched(kernel, 0, NULL, NULL, EW_REDUCE_OVERWRITE, NULL, NULL, NULL, NULL),
        EW_SUCCESS);
    assert_int_equal(ew_kernel_launch_batched(kernel, 2, zeros, OUTPUTS(apart), EW_REDUCE_ACCUMULATE, inputs,
                                              NULL, NULL, NULL),
                     EW_SUCCESS);
    /* what passes reaches the device: empty entries overwritten (their resets alone), a shared scalar,
     * with and without EW_CHECK_POINTERS (whose sort lets entries share a scalar) */
    for (int k = 0; k < 4; ++k) {
        const ew_status_t status = ew_kernel_launch_batched(
            k == 3 ? on_checked : kernel, 2, k == 0 ? zeros : n, OUTPUTS(k == 1 ? apart : shared),
            k == 2 ? EW_REDUCE_ACCUMULATE : EW_REDUCE_OVERWRITE, inputs, NULL, NULL, NULL);
        if (status != EW_ERROR_CUDA && status != EW_ERROR_DEVICE_MISMATCH && status != EW_ERROR_NOT_SUPPORTED)
            fail_msg("case %d: %s (\"%s\")", k, ew_status_string(status), ew_get_last_error_message());
    }
#undef OUTPUTS
    assert_int_equal(ew_kernel_destroy(on_checked), EW_SUCCESS);
    assert_int_equal(ew_kernel_destroy(kernel), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(checked), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
}

/* A list's own parameters in device memory (entry_params), which every entry reads: with
 * EW_CHECK_POINTERS no entry's output meets any of them, its own entry's slot or another's; without it,
 * only an entry's own slot is checked (the list's rule). */
static void batched_entry_params_are_checked(void **state)
{
    (void)state;
    ew_handle_t handle = make(1, 132, 2048), checked = make_checked(1, 132, 2048);
    const ew_dtype_t in_dtypes[1] = {EW_F32};
    const ewi_kernel_spec_t spec = {
        .source = "return in0 * p0;", .out_dtype = EW_F32, .n_inputs = 1, .in_dtypes = in_dtypes, .n_params = 1};
    ew_kernel_t kernel = NULL, on_checked = NULL;
    assert_int_equal(ewi_user_kernel_make(handle, &spec, &kernel), EW_SUCCESS);
    assert_int_equal(ewi_user_kernel_make(checked, &spec, &on_checked), EW_SUCCESS);
    _Alignas(16) static uint8_t out[2][4096], x[2][4096];
    const int64_t n[2] = {100, 100}; /* 400 bytes an entry */
    void *const outs[2] = {out[0], out[1]};
    const void *const in0[2] = {x[0], x[1]};
    void *const *outputs[1] = {outs};
    const void *const *inputs[1] = {in0};
    /* entry 0's slot in entry 1's output, entry 1's just past it */
    const double *across = (const double *)(out[1] + 392);
    assert_refused_as(ew_kernel_launch_batched(on_checked, 2, n, outputs, EW_REDUCE_OVERWRITE, inputs, NULL,
                                               across, NULL),
                      EW_ERROR_INVALID_VALUE, "entry_params in another entry's output (EW_CHECK_POINTERS)",
                      "entry 1: out [");
    assert_true(strstr(ew_get_last_error_message(), "overlaps entry_params, which every entry reads") != NULL);
    /* an entry's own slot inside its output: refused either way */
    const double *own = (const double *)(out[1] + 384);
    assert_refused_as(ew_kernel_launch_batched(kernel, 2, n, outputs, EW_REDUCE_OVERWRITE, inputs, NULL, own,
                                               NULL),
                      EW_ERROR_INVALID_VALUE, "entry_params in its own entry's output", "entry 1");
    /* without EW_CHECK_POINTERS the list across entries passes to the device check; apart, both do */
    _Alignas(16) static double apart[2];
    for (int k = 0; k < 3; ++k) {
        const ew_status_t status = ew_kernel_launch_batched(k == 2 ? on_checked : kernel, 2, n, outputs,
                                                            EW_REDUCE_OVERWRITE, inputs, NULL,
                                                            k == 0 ? across : apart, NULL);
        if (status != EW_ERROR_CUDA && status != EW_ERROR_DEVICE_MISMATCH && status != EW_ERROR_NOT_SUPPORTED)
            fail_msg("case %d: %s (\"%s\")", k, ew_status_string(status), ew_get_last_error_message());
    }
    assert_int_equal(ew_kernel_destroy(on_checked), EW_SUCCESS);
    assert_int_equal(ew_kernel_destroy(kernel), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(checked), EW_SUCCESS);
    assert_int_equal(ew_handle_destroy(handle), EW_SUCCESS);
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
        cmocka_unit_test(registry_generations),
        cmocka_unit_test(many_live_handles),
        cmocka_unit_test(destroy_null_is_a_no_op),
        cmocka_unit_test(double_destroy_is_refused),
        cmocka_unit_test(destroyed_handle_is_refused_everywhere),
        cmocka_unit_test(destroyed_handle_is_refused_after_its_slot_is_reused),
        cmocka_unit_test(destroyed_kernel_is_refused_after_its_slot_is_reused),
        cmocka_unit_test(reduction_output_launches_are_checked),
        cmocka_unit_test(several_array_launches_are_checked),
        cmocka_unit_test(batched_launches_are_checked),
        cmocka_unit_test(batched_reduction_launches_are_checked),
        cmocka_unit_test(batched_entry_params_are_checked),
        cmocka_unit_test(threads_create_and_destroy),
        cmocka_unit_test(public_create_and_destroy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
