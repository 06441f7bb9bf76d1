#include "driver.h"

#include <stddef.h>

#include <cuda_runtime_api.h>

void *ewi_driver_function(const char *name)
{
    void *function = NULL;
    enum cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return function;
}
