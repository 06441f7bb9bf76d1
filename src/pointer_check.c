/* SPDX-License-Identifier: Apache-2.0 */
#include "pointer_check.h"

#include "driver.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

int ewi_pointer_checks_requested(ewi_address_range_fn *range_query)
{
    const char *setting = getenv("EW_CHECK_POINTERS");
    *range_query = NULL;
    if (setting == NULL || strcmp(setting, "1") != 0)
        return 0;
    *range_query = (ewi_address_range_fn)ewi_driver_function("cuMemGetAddressRange");
    return 1;
}

int ewi_pointer_ok(int device, ewi_address_range_fn range_query, const void *address, size_t bytes, char *why,
                   size_t why_size)
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
    if (range_query != NULL) {
        unsigned long long base = 0;
        size_t size = 0;
        if (range_query(&base, &size, (unsigned long long)(uintptr_t)address) != 0) {
            snprintf(why, why_size, "lies in no allocation the driver knows");
            return 0;
        }
        unsigned long long start = (unsigned long long)(uintptr_t)address;
        if (start - base + bytes > size) {
            snprintf(why, why_size,
                     "needs %zu bytes but its allocation [%#llx, +%zu) ends %llu bytes after it", bytes, base,
                     size, base + size - start);
            return 0;
        }
    }
    return 1;
}
