/* SPDX-License-Identifier: Apache-2.0 */
#include "driver.h"

#include <pthread.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

void *ewi_driver_function(const char *name)
{
    void *function = NULL;
    enum cudaDriverEntryPointQueryResult found;
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found) != cudaSuccess ||
#else /* CUDA 12.4: the functions as of the runtime's version, which for these are 12.0's */
    if (cudaGetDriverEntryPoint(name, &function, cudaEnableDefault, &found) != cudaSuccess ||
#endif
        found != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return function;
}

/* The context functions, found once; all NULL if any is absent. */
static struct {
    int (*context_current)(void **context);
    int (*device_get)(int *device, int ordinal);
    int (*primary_retain)(void **context, int device);
    int (*primary_release)(int device);
} driver;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void find_context_functions(void)
{
    driver.context_current = (int (*)(void **))ewi_driver_function("cuCtxGetCurrent");
    driver.device_get = (int (*)(int *, int))ewi_driver_function("cuDeviceGet");
    driver.primary_retain = (int (*)(void **, int))ewi_driver_function("cuDevicePrimaryCtxRetain");
    driver.primary_release = (int (*)(int))ewi_driver_function("cuDevicePrimaryCtxRelease");
    if (!driver.context_current || !driver.device_get || !driver.primary_retain || !driver.primary_release)
        driver.context_current = NULL;
}

static int have_context_functions(void)
{
    pthread_once(&driver_once, find_context_functions);
    return driver.context_current != NULL;
}

/* On every call's path: no pthread_once there. Callers hold a context that
 * ewi_retain_current_primary_context returned, so the functions were found. */
void *ewi_current_context(void)
{
    void *context = NULL;
    if (driver.context_current == NULL || driver.context_current(&context) != 0)
        return NULL;
    return context;
}

void *ewi_retain_current_primary_context(int ordinal)
{
    void *current = NULL, *primary = NULL;
    int device = 0;
    if (!have_context_functions() || driver.context_current(&current) != 0 || current == NULL ||
        driver.device_get(&device, ordinal) != 0 || driver.primary_retain(&primary, device) != 0)
        return NULL;
    if (primary == current)
        return primary;
    driver.primary_release(device);
    return NULL;
}

void ewi_release_primary_context(int ordinal)
{
    int device = 0;
    if (have_context_functions() && driver.device_get(&device, ordinal) == 0)
        driver.primary_release(device);
}
