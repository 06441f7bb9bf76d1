/* SPDX-License-Identifier: Apache-2.0 */
#include "abi/pointer_check.h"

#include "launch/driver.h"
#include "abi/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

int ewi_pointer_checks_requested(void)
{
    const char *setting = getenv("EW_CHECK_POINTERS");
    return setting != NULL && strcmp(setting, "1") == 0;
}

int ewi_pointer_ok(int device, const void *address, size_t bytes, char *why, size_t why_size)
{
    struct cudaPointerAttributes attributes;
    cudaError_t error = cudaPointerGetAttributes(&attributes, address);
    if (error != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, why_size, "cudaPointerGetAttributes failed: %s", cudaGetErrorName(error));
        return 0;
    }
    if (attributes.type == cudaMemoryTypeHost) {
        snprintf(why, why_size, "is pinned host memory, not device memory");
        return 0;
    }
    if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
        snprintf(why, why_size, "is not memory CUDA knows (a plain host pointer?)");
        return 0;
    }
    if (attributes.type == cudaMemoryTypeDevice && attributes.device != device) {
        snprintf(why, why_size, "is memory of device %d, not of the handle's device %d", attributes.device,
                 device);
        return 0;
    }
    const ewi_driver_t *driver = ewi_driver();
    if (driver->address_range != NULL) {
        CUdeviceptr base = 0;
        size_t size = 0;
        if (driver->address_range(&base, &size, (CUdeviceptr)(uintptr_t)address) != CUDA_SUCCESS) {
            snprintf(why, why_size, "lies in no allocation the driver knows");
            return 0;
        }
        unsigned long long start = (unsigned long long)(uintptr_t)address;
        if (start - base + bytes > size) {
            snprintf(why, why_size,
                     "needs %zu bytes but its allocation [%#llx, +%zu) ends %llu bytes after it", bytes,
                     (unsigned long long)base, size, (unsigned long long)base + size - start);
            return 0;
        }
    }
    return 1;
}

ew_status_t ewi_check_pointer(int device, const char *name, const void *address, size_t bytes)
{
    char why[256];
    return ewi_pointer_ok(device, address, bytes, why, sizeof why)
               ? EW_SUCCESS
               : ewi_fail(EW_ERROR_INVALID_VALUE, "%s = %p %s", name, address, why);
}
