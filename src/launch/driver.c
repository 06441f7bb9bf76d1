/* SPDX-License-Identifier: Apache-2.0 */
#include "launch/driver.h"

#include <pthread.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

#include "abi/error.h"

/* The driver's function `name`, or NULL if the driver lacks it. */
static void *find(const char *name)
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

static ewi_driver_t driver;
static int found; /* set (released) once driver is filled: the calls' path reads it without pthread_once */
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void find_all(void)
{
    driver.context_current = (CUresult(*)(CUcontext *))find("cuCtxGetCurrent");
    driver.device_get = (CUresult(*)(CUdevice *, int))find("cuDeviceGet");
    driver.primary_retain = (CUresult(*)(CUcontext *, CUdevice))find("cuDevicePrimaryCtxRetain");
    driver.primary_release = (CUresult(*)(CUdevice))find("cuDevicePrimaryCtxRelease");
    driver.module_load = (CUresult(*)(CUmodule *, const void *))find("cuModuleLoadData");
    driver.module_unload = (CUresult(*)(CUmodule))find("cuModuleUnload");
    driver.module_function = (CUresult(*)(CUfunction *, CUmodule, const char *))find("cuModuleGetFunction");
    driver.launch = (CUresult(*)(const CUlaunchConfig *, CUfunction, void **, void **))find("cuLaunchKernelEx");
    driver.memset32 = (CUresult(*)(CUdeviceptr, unsigned, size_t, CUstream))find("cuMemsetD32Async");
    driver.memset8 = (CUresult(*)(CUdeviceptr, unsigned char, size_t, CUstream))find("cuMemsetD8Async");
    driver.occupancy =
        (CUresult(*)(int *, CUfunction, int, size_t))find("cuOccupancyMaxActiveBlocksPerMultiprocessor");
    driver.address_range = (CUresult(*)(CUdeviceptr *, size_t *, CUdeviceptr))find("cuMemGetAddressRange");
    driver.error_name = (CUresult(*)(CUresult, const char **))find("cuGetErrorName");
    __atomic_store_n(&found, 1, __ATOMIC_RELEASE);
}

const ewi_driver_t *ewi_driver(void)
{
    if (!__atomic_load_n(&found, __ATOMIC_ACQUIRE))
        pthread_once(&driver_once, find_all);
    return &driver;
}

ew_status_t ewi_fail_driver(CUresult result, const char *call)
{
    const char *name = NULL;
    const ewi_driver_t *d = ewi_driver();
    if (d->error_name == NULL || d->error_name(result, &name) != CUDA_SUCCESS || name == NULL)
        name = "an unknown error";
    return ewi_fail(EW_ERROR_CUDA, "%s failed: %s (%d)", call, name, (int)result);
}

void *ewi_current_context(void)
{
    CUcontext context = NULL;
    const ewi_driver_t *d = ewi_driver();
    if (d->context_current == NULL || d->context_current(&context) != CUDA_SUCCESS)
        return NULL;
    return context;
}

void *ewi_retain_current_primary_context(int ordinal)
{
    const ewi_driver_t *d = ewi_driver();
    CUcontext current = NULL, primary = NULL;
    CUdevice device = 0;
    if (!d->context_current || !d->device_get || !d->primary_retain || !d->primary_release ||
        d->context_current(&current) != CUDA_SUCCESS || current == NULL ||
        d->device_get(&device, ordinal) != CUDA_SUCCESS || d->primary_retain(&primary, device) != CUDA_SUCCESS)
        return NULL;
    if (primary == current)
        return primary;
    d->primary_release(device);
    return NULL;
}

void ewi_release_primary_context(int ordinal)
{
    const ewi_driver_t *d = ewi_driver();
    CUdevice device = 0;
    if (d->device_get && d->primary_release && d->device_get(&device, ordinal) == CUDA_SUCCESS)
        d->primary_release(device);
}
