/* SPDX-License-Identifier: Apache-2.0 */
/* ew_handle_create on a driver older than the CUDA runtime the library carries: EW_ERROR_NO_DEVICE,
 * and a message with the runtime's version, the version the driver supports and the driver series
 * the runtime needs. No GPU needed.
 *
 * The driver is this file built with EW_STUB_DRIVER: a libcuda.so.1 whose cuDriverGetVersion answers
 * EW_STUB_DRIVER_VERSION. The static runtime loads the driver with dlopen("libcuda.so.1"), so ctest
 * puts the stub's directory first on LD_LIBRARY_PATH, ahead of any real driver; the test checks that
 * the runtime did load it. The version it answers is the previous major release's (CUDA 12.2, the
 * 535 series, for a 13.x runtime; 11.2 for a 12.x one), which the runtime refuses. */
#ifdef EW_STUB_DRIVER

#include <stdlib.h>

__attribute__((visibility("default"))) int cuDriverGetVersion(int *version)
{
    const char *answer = getenv("EW_STUB_DRIVER_VERSION");
    *version = answer != NULL ? atoi(answer) : 0;
    return 0; /* CUDA_SUCCESS */
}

#else

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "elementwise.h"

/* The previous major release's x.2, in CUDART_VERSION's form. */
enum { STUB_VERSION = (CUDART_VERSION / 1000 - 1) * 1000 + 20 };

static void expect_in_message(const char *message, const char *format, ...)
{
    char expected[128];
    va_list args;
    va_start(args, format);
    vsnprintf(expected, sizeof expected, format, args);
    va_end(args);
    if (strstr(message, expected) == NULL)
        fail_msg("the message lacks \"%s\": %s", expected, message);
}

static void old_driver_is_named(void **state)
{
    (void)state;
    ew_handle_t handle = (ew_handle_t)&handle; /* must come back NULL */
    assert_int_equal(ew_handle_create(0, &handle), EW_ERROR_NO_DEVICE);
    assert_null(handle);
    const char *message = ew_get_last_error_message();
    print_message("ew_handle_create: %s\n", message);

    /* The runtime read the stub, not a real driver (nor none). */
    int driver = -1;
    assert_int_equal(cudaDriverGetVersion(&driver), cudaSuccess);
    if (driver != STUB_VERSION)
        fail_msg("the runtime saw driver version %d, not the stub's %d: is the stub first on LD_LIBRARY_PATH?",
                 driver, (int)STUB_VERSION);

    /* The driver series each runtime needs, as NVIDIA's compatibility tables give them: any 12.x runtime
     * runs on drivers of 12.0 on (525, minor-version compatibility), 13.x on 580 and newer. */
    const int series = CUDART_VERSION / 1000 == 12 ? 525 : 580;
    expect_in_message(message, "supports CUDA %d.2,", CUDART_VERSION / 1000 - 1);
    expect_in_message(message, "carries the CUDA %d.%d runtime", CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
    expect_in_message(message, "a driver of the %d series or newer", series);
    expect_in_message(message, "cudaErrorInsufficientDriver");
}

int main(void)
{
    /* Before the first CUDA call: the runtime loads the driver then. */
    char version[16];
    snprintf(version, sizeof version, "%d", (int)STUB_VERSION);
    setenv("EW_STUB_DRIVER_VERSION", version, 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(old_driver_is_named)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
